//! A fast decoder for the plain subset of RON that scenes are saved in.
//!
//! Loading a RON scene decodes every component value with its type. ron's
//! deserializer is general (extensions, raw identifiers, every number
//! syntax, comments), and most of a load's time went into it. This one reads
//! only the plain forms `Scene::to_ron_string` writes — structs, tuples,
//! lists, maps, enums, options, decimal numbers, strings and chars without
//! escapes, whitespace — and refuses everything else. A value it refuses
//! (or that does not fit its type) is decoded again by ron, which decodes it
//! or reports the error with its path and location, so what a value means
//! and what errors say are ron's; this only decides faster when it can.
//!
//! Numbers are read as ron reads them (the same token, parsed by the
//! standard library's `FromStr` for the target type), and the forms accepted
//! are ones ron reads the same way with the scene options (`IMPLICIT_SOME`
//! on, no other extension).

use std::fmt;
use std::str::FromStr;

use serde::de::{
    self, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, VariantAccess,
    Visitor,
};

/// "Not decoded here": the caller asks ron.
#[derive(Debug)]
pub(crate) struct Refused;

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to ron")
    }
}

impl std::error::Error for Refused {}

impl de::Error for Refused {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Refused
    }
}

type Result<T> = std::result::Result<T, Refused>;

/// Decodes `text` (one whole value) with `seed`, or `None` if ron must.
pub(crate) fn decode<'de, S: DeserializeSeed<'de>>(text: &'de str, seed: S) -> Option<S::Value> {
    let mut de = Plain {
        b: text.as_bytes(),
        i: 0,
    };
    let value = seed.deserialize(&mut de).ok()?;
    de.ws();
    (de.i == de.b.len()).then_some(value)
}

struct Plain<'de> {
    b: &'de [u8],
    i: usize,
}

fn is_ident_byte(c: u8) -> bool {
    c == b'_' || c.is_ascii_alphanumeric()
}

impl<'de> Plain<'de> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(Refused)
        }
    }

    /// An identifier, if one comes next (not consumed).
    fn peek_ident(&mut self) -> Option<&'de str> {
        self.ws();
        let start = self.i;
        let first = *self.b.get(start)?;
        if !(first == b'_' || first.is_ascii_alphabetic()) {
            return None;
        }
        let len = self.b[start..]
            .iter()
            .position(|&c| !is_ident_byte(c))
            .unwrap_or(self.b.len() - start);
        // A raw identifier (`r#name`) or raw string is ron's.
        if self.b.get(start + len) == Some(&b'#') || self.b.get(start + len) == Some(&b'"') {
            return None;
        }
        std::str::from_utf8(&self.b[start..start + len]).ok()
    }

    fn ident(&mut self) -> Result<&'de str> {
        let word = self.peek_ident().ok_or(Refused)?;
        self.i += word.len();
        Ok(word)
    }

    /// Consumes identifier `word` if it comes next.
    fn eat_ident(&mut self, word: &str) -> bool {
        if self.peek_ident() == Some(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    /// A decimal number: `-?digits(.digits)?([eE][+-]?digits)?`, not
    /// followed by an identifier character; `float` allows the fraction
    /// and exponent.
    fn number<T: FromStr>(&mut self, float: bool) -> Result<T> {
        self.ws();
        let start = self.i;
        let b = self.b;
        let mut i = start;
        let digits = |i: &mut usize| {
            let s = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > s
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        if !digits(&mut i) {
            return Err(Refused);
        }
        if float {
            if b.get(i) == Some(&b'.') {
                i += 1;
                if !digits(&mut i) {
                    return Err(Refused);
                }
            }
            if matches!(b.get(i), Some(b'e' | b'E')) {
                i += 1;
                if matches!(b.get(i), Some(b'+' | b'-')) {
                    i += 1;
                }
                if !digits(&mut i) {
                    return Err(Refused);
                }
            }
        }
        if b.get(i).is_some_and(|&c| is_ident_byte(c) || c == b'.') {
            return Err(Refused);
        }
        let text = std::str::from_utf8(&b[start..i]).map_err(|_| Refused)?;
        let value = text.parse().map_err(|_| Refused)?;
        self.i = i;
        Ok(value)
    }

    /// A string with no escapes.
    fn string(&mut self) -> Result<&'de str> {
        self.expect(b'"')?;
        let start = self.i;
        let len = self.b[start..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\')
            .ok_or(Refused)?;
        if self.b[start + len] != b'"' {
            return Err(Refused);
        }
        self.i = start + len + 1;
        std::str::from_utf8(&self.b[start..start + len]).map_err(|_| Refused)
    }

    /// An optional struct name (which must be `name`), then `(`.
    fn open_struct(&mut self, name: &str) -> Result<()> {
        if let Some(word) = self.peek_ident() {
            if word != name {
                return Err(Refused);
            }
            self.i += word.len();
        }
        self.expect(b'(')
    }
}

macro_rules! numbers {
    ($($method:ident $visit:ident $ty:ty, $float:expr;)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                visitor.$visit(self.number::<$ty>($float)?)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for &mut Plain<'de> {
    type Error = Refused;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Refused)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.eat_ident("true") {
            visitor.visit_bool(true)
        } else if self.eat_ident("false") {
            visitor.visit_bool(false)
        } else {
            Err(Refused)
        }
    }

    numbers! {
        deserialize_i8 visit_i8 i8, false;
        deserialize_i16 visit_i16 i16, false;
        deserialize_i32 visit_i32 i32, false;
        deserialize_i64 visit_i64 i64, false;
        deserialize_u8 visit_u8 u8, false;
        deserialize_u16 visit_u16 u16, false;
        deserialize_u32 visit_u32 u32, false;
        deserialize_u64 visit_u64 u64, false;
        deserialize_f32 visit_f32 f32, true;
        deserialize_f64 visit_f64 f64, true;
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.expect(b'\'')?;
        let rest = std::str::from_utf8(&self.b[self.i..]).map_err(|_| Refused)?;
        let c = rest.chars().next().ok_or(Refused)?;
        if c == '\\' || c == '\'' {
            return Err(Refused);
        }
        self.i += c.len_utf8();
        if self.b.get(self.i) != Some(&b'\'') {
            return Err(Refused);
        }
        self.i += 1;
        visitor.visit_char(c)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_borrowed_str(self.string()?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Refused)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Refused)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.eat_ident("None") {
            return visitor.visit_none();
        }
        if self.peek_ident() == Some("Some") {
            self.i += 4;
            self.expect(b'(')?;
            let value = visitor.visit_some(&mut *self)?;
            self.eat(b',');
            self.expect(b')')?;
            return Ok(value);
        }
        // IMPLICIT_SOME: a bare value is `Some(value)`.
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.expect(b'(')?;
        self.expect(b')')?;
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if self.eat_ident(name) {
            return visitor.visit_unit();
        }
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.open_struct(name)?;
        let value = visitor.visit_newtype_struct(&mut *self)?;
        self.eat(b',');
        self.expect(b')')?;
        Ok(value)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.expect(b'[')?;
        let value = visitor.visit_seq(Elements {
            de: self,
            end: b']',
        })?;
        self.expect(b']')?;
        Ok(value)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        self.expect(b'(')?;
        let value = visitor.visit_seq(Elements {
            de: self,
            end: b')',
        })?;
        self.expect(b')')?;
        Ok(value)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.open_struct(name)?;
        let value = visitor.visit_seq(Elements {
            de: self,
            end: b')',
        })?;
        self.expect(b')')?;
        Ok(value)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.expect(b'{')?;
        let value = visitor.visit_map(Entries {
            de: self,
            end: b'}',
        })?;
        self.expect(b'}')?;
        Ok(value)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.open_struct(name)?;
        let value = visitor.visit_map(Entries {
            de: self,
            end: b')',
        })?;
        self.expect(b')')?;
        Ok(value)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_enum(self)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_borrowed_str(self.ident()?)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Refused)
    }
}

/// The elements of a list or tuple, up to `end`.
struct Elements<'a, 'de> {
    de: &'a mut Plain<'de>,
    end: u8,
}

impl<'de> SeqAccess<'de> for Elements<'_, 'de> {
    type Error = Refused;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.de.peek() == Some(self.end) {
            return Ok(None);
        }
        let value = seed.deserialize(&mut *self.de)?;
        if !self.de.eat(b',') && self.de.peek() != Some(self.end) {
            return Err(Refused);
        }
        Ok(Some(value))
    }
}

/// The entries of a map (`end` is `}`) or the fields of a struct (`)`).
struct Entries<'a, 'de> {
    de: &'a mut Plain<'de>,
    end: u8,
}

impl<'de> MapAccess<'de> for Entries<'_, 'de> {
    type Error = Refused;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.de.peek() == Some(self.end) {
            return Ok(None);
        }
        let key = seed.deserialize(&mut *self.de)?;
        self.de.expect(b':')?;
        Ok(Some(key))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let value = seed.deserialize(&mut *self.de)?;
        if !self.de.eat(b',') && self.de.peek() != Some(self.end) {
            return Err(Refused);
        }
        Ok(value)
    }
}

impl<'de> EnumAccess<'de> for &mut Plain<'de> {
    type Error = Refused;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        let name = self.ident()?;
        let value = seed.deserialize(name.into_deserializer())?;
        Ok((value, self))
    }
}

impl<'de> VariantAccess<'de> for &mut Plain<'de> {
    type Error = Refused;

    fn unit_variant(self) -> Result<()> {
        // `Variant()` and other spellings are ron's.
        if self.peek() == Some(b'(') {
            return Err(Refused);
        }
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        self.expect(b'(')?;
        let value = seed.deserialize(&mut *self)?;
        self.eat(b',');
        self.expect(b')')?;
        Ok(value)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        self.expect(b'(')?;
        let value = visitor.visit_seq(Elements {
            de: self,
            end: b')',
        })?;
        self.expect(b')')?;
        Ok(value)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.expect(b'(')?;
        let value = visitor.visit_map(Entries {
            de: self,
            end: b')',
        })?;
        self.expect(b')')?;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::marker::PhantomData;

    use serde::Deserialize;

    use super::decode;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Unit;
    #[derive(Deserialize, Debug, PartialEq)]
    struct Newtype(i32);
    #[derive(Deserialize, Debug, PartialEq)]
    enum Shape {
        Dot,
        Circle(f32),
        Rect(u8, u8),
        Named { w: i64, h: f64 },
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct All {
        b: bool,
        i: i8,
        u: u64,
        f: f32,
        c: char,
        s: String,
        o: Option<Option<u16>>,
        unit: Unit,
        n: Newtype,
        arr: [f32; 3],
        list: Vec<Shape>,
        map: BTreeMap<String, (u8, bool)>,
    }

    /// What ron makes of `text` with the scene options.
    fn ron<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, ron::error::SpannedError> {
        super::super::text::ron_options().from_str(text)
    }

    #[test]
    fn plain_values_decode_as_ron_decodes_them() {
        let texts = [
            r#"(b: true, i: -128, u: 18446744073709551615, f: -1.5e-7, c: 'é', s: "a (b) [c]",
                o: Some(None), unit: (), n: (7), arr: (1.0, 2, 0.1), list: [Dot, Circle(2.5),
                Rect(1, 2), Named(w: -3, h: 1e300)], map: {"x": (1, false), "y": (2, true),},)"#,
            r#"All(b: false, i: 0, u: 0, f: 3.4028235e38, c: 'x', s: "", o: 5, unit: Unit,
                n: Newtype(-1), arr: (0.0, -0.0, 16777217.0), list: [], map: {})"#,
            "(b:true,i:1,u:2,f:3,c:'z',s:\"q\",o:None,unit:(),n:(0),arr:(1,2,3),list:[Dot,],map:{})",
        ];
        for text in texts {
            let fast: All = decode(text, PhantomData).unwrap_or_else(|| panic!("refused {text}"));
            assert_eq!(fast, ron::<All>(text).unwrap(), "{text}");
        }
    }

    #[test]
    fn everything_else_is_left_to_ron() {
        let base = |field: &str| {
            format!(
                "(b: true, i: 1, u: 2, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), \
                 arr: (1.0, 2.0, 3.0), list: [], map: {{}}, {field})"
            )
        };
        let refused = [
            "(b: true, i: 1, u: 2, f: 3.0, c: 'a', s: \"s\\n\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {})".to_owned(),
            "(b: true, i: 0x1, u: 2, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {})".to_owned(),
            "(b: true, i: 1, u: 2, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {}) // c".to_owned(),
            "(b: true, i: 1, u: 1_000, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {})".to_owned(),
            "(b: true, i: 1, u: 2, f: inf, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {})".to_owned(),
            "(b: true, i: 1, u: 2, f: 1., c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {})".to_owned(),
            "(b: true, i: 200, u: 2, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {})".to_owned(),
            "Other(b: true, i: 1, u: 2, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {})".to_owned(),
            base("extra: 1"),
            "(b: true, i: 1, u: 2, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0), list: [], map: {})".to_owned(),
            "(b: true, i: 1, u: 2, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [Dot()], map: {})".to_owned(),
            "(b: true, i: 1, u: 2, f: 3.0, c: 'a', s: \"s\", o: None, unit: (), n: (1), arr: (1.0, 2.0, 3.0), list: [], map: {}) x".to_owned(),
        ];
        for text in &refused {
            assert!(decode(text, PhantomData::<All>).is_none(), "{text}");
        }
    }
}
