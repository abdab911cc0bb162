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

use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

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
        text,
        b: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let value = seed.deserialize(&mut de).ok()?;
    de.ws();
    (de.i == de.b.len()).then_some(value)
}

struct Plain<'de> {
    text: &'de str,
    b: &'de [u8],
    i: usize,
    /// Nesting so far (see [`MAX_DEPTH`]).
    depth: usize,
}

/// How deep values nest here. ron refuses more than 128 nested calls (its
/// default recursion limit), and makes at most 3 for each level counted
/// here (an enum's struct or tuple variant), so nothing ron would refuse
/// for depth is decoded here, and the stack stays small.
const MAX_DEPTH: usize = 32;

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

    /// An optional struct name (which must be `name`), then `(`; a tuple
    /// struct's `(` must follow its name directly, as ron requires.
    fn open_struct(&mut self, name: &str, tuple: bool) -> Result<()> {
        if let Some(word) = self.peek_ident() {
            if word != name {
                return Err(Refused);
            }
            self.i += word.len();
            if tuple && self.b.get(self.i) != Some(&b'(') {
                return Err(Refused);
            }
        }
        self.expect(b'(')
    }

    /// Runs `f` one level deeper, or refuses past [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth == MAX_DEPTH {
            return Err(Refused);
        }
        self.depth += 1;
        let value = f(self)?;
        self.depth -= 1;
        Ok(value)
    }
}

/// Whether `visitor` expects a struct. ron reads a map for such a visitor
/// (a flattened struct) with string keys only; it is left to ron.
fn expects_struct<'de, V: Visitor<'de>>(visitor: &V) -> bool {
    struct Expecting<'a, V>(&'a V);
    impl<'de, V: Visitor<'de>> fmt::Display for Expecting<'_, V> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.expecting(f)
        }
    }
    /// How many bytes of `PREFIX` were written; stops writing at a
    /// mismatch or once all matched.
    struct Prefix(usize);
    const PREFIX: &[u8] = b"struct ";
    impl fmt::Write for Prefix {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let n = (PREFIX.len() - self.0).min(s.len());
            if s.as_bytes()[..n] != PREFIX[self.0..self.0 + n] {
                return Err(fmt::Error);
            }
            self.0 += n;
            if self.0 == PREFIX.len() {
                return Err(fmt::Error);
            }
            Ok(())
        }
    }
    let mut prefix = Prefix(0);
    // The result is in `prefix`; an early stop is reported as an error.
    let _ = fmt::write(&mut prefix, format_args!("{}", Expecting(visitor)));
    prefix.0 == PREFIX.len()
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
        let c = self.text[self.i..].chars().next().ok_or(Refused)?;
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
        self.nested(|de| {
            if de.peek_ident() == Some("Some") {
                de.i += 4;
                de.expect(b'(')?;
                let value = visitor.visit_some(&mut *de)?;
                de.eat(b',');
                de.expect(b')')?;
                return Ok(value);
            }
            // IMPLICIT_SOME: a bare value is `Some(value)`.
            visitor.visit_some(de)
        })
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // Exactly `()`: ron does not read `( )` as unit.
        if self.peek() != Some(b'(') || self.b.get(self.i + 1) != Some(&b')') {
            return Err(Refused);
        }
        self.i += 2;
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
        // ron answers its raw-value name with the value's source text.
        if name == super::text::RON_RAW_VALUE {
            return Err(Refused);
        }
        self.nested(|de| {
            de.open_struct(name, false)?;
            let value = visitor.visit_newtype_struct(&mut *de)?;
            de.eat(b',');
            de.expect(b')')?;
            Ok(value)
        })
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.nested(|de| {
            de.expect(b'[')?;
            let value = visitor.visit_seq(Elements { de, end: b']' })?;
            de.expect(b']')?;
            Ok(value)
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        self.nested(|de| {
            de.expect(b'(')?;
            let value = visitor.visit_seq(Elements { de, end: b')' })?;
            de.expect(b')')?;
            Ok(value)
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.nested(|de| {
            de.open_struct(name, true)?;
            let value = visitor.visit_seq(Elements { de, end: b')' })?;
            de.expect(b')')?;
            Ok(value)
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if expects_struct(&visitor) {
            return Err(Refused);
        }
        self.nested(|de| {
            de.expect(b'{')?;
            let value = visitor.visit_map(Entries { de, end: b'}' })?;
            de.expect(b'}')?;
            Ok(value)
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.nested(|de| {
            de.open_struct(name, false)?;
            let value = visitor.visit_map(Entries { de, end: b')' })?;
            de.expect(b')')?;
            Ok(value)
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.nested(|de| visitor.visit_enum(de))
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

/// The entries of a map (`end` is `}`) or the fields of a struct (`)`,
/// named by identifiers).
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
        let key = if self.end == b')' {
            seed.deserialize(FieldName(&mut *self.de))?
        } else {
            seed.deserialize(&mut *self.de)?
        };
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

/// A struct's field name, read as ron reads one (`ron::de::id`): an
/// identifier, whatever type is asked for; other requests are ron's.
struct FieldName<'a, 'de>(&'a mut Plain<'de>);

impl<'de> de::Deserializer<'de> for FieldName<'_, 'de> {
    type Error = Refused;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Refused)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_borrowed_str(self.0.ident()?)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_identifier(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_identifier(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct
        enum ignored_any
    }
}

impl<'de> EnumAccess<'de> for &mut Plain<'de> {
    type Error = Refused;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        // Read with this deserializer, as ron does (an identifier for a
        // derived enum).
        let value = seed.deserialize(&mut *self)?;
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
    use std::collections::{BTreeMap, HashMap};
    use std::fmt::Debug;
    use std::marker::PhantomData;

    use serde::de::DeserializeOwned;
    use serde::Deserialize;

    use super::decode;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Unit;
    #[derive(Deserialize, Debug, PartialEq)]
    struct Newtype(i32);
    #[derive(Deserialize, Debug, PartialEq)]
    struct Pair(u8, i16);
    #[derive(Deserialize, Debug, PartialEq)]
    struct Empty();
    #[derive(Deserialize, Debug, PartialEq)]
    enum Shape {
        Dot,
        Circle(f32),
        Rect(u8, u8),
        Named { w: i64, h: f64 },
        Wrap(Option<Box<Shape>>),
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
    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename = "Position")]
    struct Pos {
        x: f32,
        #[serde(default)]
        y: Option<f64>,
    }
    #[derive(Deserialize, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Dir {
        Up,
        Down,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    enum Tree {
        Leaf,
        Node(Vec<Tree>),
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Raw {
        r: Box<ron::value::RawValue>,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Flat {
        #[serde(flatten)]
        inner: Pos,
    }

    /// A `HashMap` shown sorted (for comparing through `Debug`).
    #[derive(Deserialize)]
    #[serde(transparent)]
    struct HMap<K: std::hash::Hash + Eq, V>(HashMap<K, V>);
    impl<K: std::hash::Hash + Ord + Debug, V: Debug> Debug for HMap<K, V> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let mut entries: Vec<_> = self.0.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            f.debug_map().entries(entries).finish()
        }
    }

    /// A struct whose field names are read as strings (not identifiers).
    #[derive(Debug, PartialEq)]
    struct StrKeys(Vec<(String, u8)>);
    impl<'de> Deserialize<'de> for StrKeys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = StrKeys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("struct StrKeys")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<StrKeys, A::Error> {
                    let mut out = Vec::new();
                    while let Some(entry) = map.next_entry()? {
                        out.push(entry);
                    }
                    Ok(StrKeys(out))
                }
            }
            d.deserialize_struct("StrKeys", &["a"], V)
        }
    }

    /// The same visitor (it calls itself a struct) read as a map.
    #[derive(Debug, PartialEq)]
    struct MapAsStruct(Vec<(u8, u8)>);
    impl<'de> Deserialize<'de> for MapAsStruct {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = MapAsStruct;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("struct MapAsStruct")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<MapAsStruct, A::Error> {
                    let mut out = Vec::new();
                    while let Some(entry) = map.next_entry()? {
                        out.push(entry);
                    }
                    Ok(MapAsStruct(out))
                }
            }
            d.deserialize_map(V)
        }
    }

    /// An enum whose variant is read with `deserialize_any`.
    #[derive(Debug, PartialEq)]
    struct AnyVariant(String);
    impl<'de> Deserialize<'de> for AnyVariant {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            use serde::de::{EnumAccess, VariantAccess};
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = AnyVariant;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an enum")
                }
                fn visit_enum<A: EnumAccess<'de>>(self, e: A) -> Result<AnyVariant, A::Error> {
                    let (name, v): (String, _) = e.variant()?;
                    v.unit_variant()?;
                    Ok(AnyVariant(name))
                }
            }
            d.deserialize_enum("AnyVariant", &["A"], V)
        }
    }

    /// What ron makes of `text` with the scene options.
    fn ron<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, ron::error::SpannedError> {
        super::super::text::ron_options().from_str(text)
    }

    /// The fast path either refuses `text` or decodes it as ron does
    /// (compared through `Debug`, which tells `-0.0` from `0.0`); returns
    /// whether it decoded it.
    fn agrees<T: DeserializeOwned + Debug>(text: &str) -> bool {
        let Some(fast) = decode(text, PhantomData::<T>) else {
            return false;
        };
        match ron::<T>(text) {
            Ok(slow) => assert_eq!(
                format!("{fast:?}"),
                format!("{slow:?}"),
                "{} from {text:?}",
                std::any::type_name::<T>()
            ),
            Err(e) => panic!(
                "{} from {text:?}: fast path read {fast:?}, ron says {e}",
                std::any::type_name::<T>()
            ),
        }
        true
    }

    use crate::test_rng::Rng;

    /// Pieces spliced into values: every syntax the fast path must refuse
    /// or read as ron does.
    const PIECES: &[&str] = &[
        " ",
        "\t",
        "\r",
        "\n",
        "\r\n",
        "\x0b",
        "\x0c",
        "\u{85}",
        "\u{a0}",
        "\u{feff}",
        "\u{2028}",
        "//",
        "// c\n",
        "/*",
        "*/",
        "/* c */",
        "/* /* */ */",
        ",",
        ",,",
        "(",
        ")",
        "()",
        "( )",
        "[",
        "]",
        "{",
        "}",
        ":",
        "\"",
        "'",
        "\\",
        "\\n",
        "\\u{41}",
        "\\\"",
        "r",
        "r#",
        "#",
        "r\"",
        "b",
        "b'",
        "b\"",
        "br",
        "Some",
        "Some(",
        "None",
        "true",
        "false",
        "inf",
        "-inf",
        "NaN",
        "+",
        "-",
        ".",
        "..",
        "..=",
        "_",
        "0",
        "1",
        "9",
        "00",
        "0x",
        "0b",
        "0o",
        "e",
        "E",
        "e-",
        "f32",
        "f64",
        "u8",
        "i64",
        "é",
        "ä",
        "x",
        "Unit",
        "Newtype",
        "Pair",
        "Position",
        "Dot",
        "Circle",
        "Rect",
        "Named",
        "Wrap",
        "Leaf",
        "Node",
        "w",
        "h",
        "a",
        "A",
        "\u{0}",
        "\x7f",
        "💥",
    ];

    /// `text` with a few random edits: pieces inserted, bytes removed,
    /// pieces replacing characters.
    fn mutate(rng: &mut Rng, text: &str) -> String {
        let mut s: Vec<char> = text.chars().collect();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(s.len() + 1);
            match rng.below(3) {
                0 => {
                    let piece = rng.pick(PIECES);
                    s.splice(at..at, piece.chars());
                }
                1 if at < s.len() => {
                    s.remove(at);
                }
                _ if at < s.len() => {
                    let piece = rng.pick(PIECES);
                    s.splice(at..at + 1, piece.chars());
                }
                _ => {}
            }
        }
        s.into_iter().collect()
    }

    /// Mutations tried per seed text.
    const ROUNDS: usize = 300;

    /// Checks `T` on `seeds` and on many mutations of them; returns how
    /// many texts the fast path decoded.
    fn differential<T: DeserializeOwned + Debug>(rng: &mut Rng, seeds: &[&str]) -> usize {
        let mut decoded = 0;
        for seed in seeds {
            decoded += agrees::<T>(seed) as usize;
            for _ in 0..ROUNDS {
                let text = mutate(rng, seed);
                decoded += agrees::<T>(&text) as usize;
                decoded += agrees::<T>(&mutate(rng, &text)) as usize;
            }
        }
        decoded
    }

    /// Numbers in many spellings, for every integer and float type.
    fn numbers(rng: &mut Rng) -> Vec<String> {
        let mut out: Vec<String> = [
            "0",
            "-0",
            "+0",
            "00",
            "007",
            "-007",
            "1_000",
            "0x1F",
            "0b101",
            "0o17",
            "+5",
            ".5",
            "5.",
            "-.5",
            "1e3",
            "1E3",
            "1e+3",
            "1e-3",
            "1.5e3",
            "1.5E-3",
            "1e",
            "1e+",
            "1.",
            "-",
            "inf",
            "-inf",
            "+inf",
            "NaN",
            "-NaN",
            "inff32",
            "NaNf64",
            "1f32",
            "1f64",
            "1u8",
            "1i64",
            "b'a'",
            "127",
            "128",
            "-128",
            "-129",
            "255",
            "256",
            "32767",
            "-32768",
            "65535",
            "65536",
            "2147483647",
            "-2147483648",
            "4294967295",
            "4294967296",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "-18446744073709551615",
            "3.4028235e38",
            "3.4028236e38",
            "3.5e38",
            "1e39",
            "1e308",
            "1e309",
            "-1e309",
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "5e-324",
            "2e-324",
            "1e-400",
            "1.40129846e-45",
            "7e-46",
            "16777217",
            "16777217.0",
            "0.1",
            "0.30000000000000004",
            "1.00000005960464477539062499",
            "1.000000059604644775390625",
            "1.00000005960464477539062501",
            "123456789012345678901234567890",
            "0.000000000000000000000000000000000000000000001",
            "1.5 ",
            " 1.5",
            "1 .5",
            "- 1",
            "1__0",
            "1_",
            "_1",
            "1.0_0",
            "1e1_0",
            "1..2",
            "1..=2",
            "0x",
            "0xg",
            "1.5.2",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..300 {
            let digits = |rng: &mut Rng, n: usize| -> String {
                (0..n)
                    .map(|_| char::from(b'0' + rng.below(10) as u8))
                    .collect()
            };
            let mut s = String::new();
            if rng.below(3) == 0 {
                s.push('-');
            }
            let n = 1 + rng.below(25);
            s += &digits(rng, n);
            if rng.below(2) == 0 {
                s.push('.');
                let n = 1 + rng.below(25);
                s += &digits(rng, n);
            }
            if rng.below(3) == 0 {
                s.push(['e', 'E'][rng.below(2)]);
                s += ["", "+", "-"][rng.below(3)];
                let n = 1 + rng.below(3);
                s += &digits(rng, n);
            }
            out.push(s);
            out.push(format!("{:?}", f64::from_bits(rng.next())));
            out.push(format!("{:?}", f32::from_bits(rng.next() as u32)));
            out.push(format!("{}", rng.next() as i64 >> rng.below(64)));
        }
        out
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe parsing code, thousands of generated cases: hours under Miri"
    )]
    fn numbers_decode_as_ron_decodes_them() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut decoded = 0;
        for text in numbers(&mut rng) {
            for text in [text.clone(), format!("[{text}]"), format!("({text},)")] {
                decoded += agrees::<i8>(&text) as usize;
                decoded += agrees::<i16>(&text) as usize;
                decoded += agrees::<i32>(&text) as usize;
                decoded += agrees::<i64>(&text) as usize;
                decoded += agrees::<u8>(&text) as usize;
                decoded += agrees::<u16>(&text) as usize;
                decoded += agrees::<u32>(&text) as usize;
                decoded += agrees::<u64>(&text) as usize;
                decoded += agrees::<f32>(&text) as usize;
                decoded += agrees::<f64>(&text) as usize;
                decoded += agrees::<Vec<f32>>(&text) as usize;
                decoded += agrees::<(u64,)>(&text) as usize;
                decoded += agrees::<Option<f64>>(&text) as usize;
            }
        }
        // The generator is not vacuous: most plain numbers are decoded.
        assert!(decoded > 3000, "{decoded}");
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe parsing code, thousands of generated cases: hours under Miri"
    )]
    fn mutated_values_decode_as_ron_decodes_them() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let d = &mut rng;
        let mut decoded = 0;
        decoded += differential::<bool>(d, &["true", "false", " true "]);
        decoded += differential::<char>(d, &["'a'", "'é'", "'💥'", "' '", "'\"'"]);
        decoded += differential::<String>(d, &["\"abc\"", "\"a b\\\"\"", "\"é\"", "\"\""]);
        decoded += differential::<()>(d, &["()"]);
        decoded += differential::<Unit>(d, &["Unit", "()"]);
        decoded += differential::<Newtype>(d, &["Newtype(5)", "(-5,)"]);
        decoded += differential::<Pair>(d, &["Pair(1, -2)", "(1,2,)"]);
        decoded += differential::<Empty>(d, &["Empty()", "()"]);
        decoded += differential::<Option<u8>>(d, &["None", "Some(5)", "5", "Some(5,)"]);
        decoded += differential::<Option<Option<i32>>>(d, &["Some(None)", "Some(Some(-1))", "3"]);
        decoded += differential::<Option<()>>(d, &["()", "Some(())", "None"]);
        decoded += differential::<Option<Unit>>(d, &["Unit", "Some(Unit)", "None", "()"]);
        decoded += differential::<Vec<i16>>(d, &["[]", "[1, -2, 3]", "[1,2,]"]);
        decoded += differential::<(u8, f32)>(d, &["(1, 2.5)", "(1,2,)"]);
        decoded += differential::<[f32; 3]>(d, &["(1.0, 2, 0.1)"]);
        decoded += differential::<Shape>(
            d,
            &[
                "Dot",
                "Circle(2.5)",
                "Rect(1, 2)",
                "Named(w: -3, h: 1e300)",
                "Wrap(Dot)",
            ],
        );
        decoded += differential::<Vec<Shape>>(d, &["[Dot, Circle(1), Wrap(Some(Wrap(None)))]"]);
        decoded += differential::<Pos>(d, &["Position(x: 1.0)", "(x: 1, y: 2.5)", "(y: 1, x: 2,)"]);
        decoded += differential::<HMap<u8, String>>(d, &["{1: \"a\", 2: \"b\",}", "{}"]);
        decoded += differential::<BTreeMap<String, Shape>>(d, &["{\"a\": Dot, \"b\": Circle(1)}"]);
        decoded += differential::<HMap<(u8, bool), Option<char>>>(d, &["{(1, true): 'x'}"]);
        decoded += differential::<BTreeMap<Dir, u8>>(d, &["{Up: 1, Down: 2}"]);
        decoded += differential::<Tree>(d, &["Node([Leaf, Node([])])"]);
        decoded += differential::<Raw>(d, &["(r: (\"x\"))", "(r: 5)"]);
        decoded += differential::<Flat>(d, &["{}", "{\"x\": 1}", "(x: 1)"]);
        decoded += differential::<StrKeys>(d, &["(a: 1)", "(\"a\": 1)"]);
        decoded += differential::<MapAsStruct>(d, &["{1: 2}", "{\"a\": 1}"]);
        decoded += differential::<AnyVariant>(d, &["A", "\"A\""]);
        decoded += differential::<std::ops::Range<i32>>(d, &["(start: 1, end: 2)", "1..2"]);
        decoded += differential::<Option<Pos>>(d, &["Position(x: 1)", "Some((x: 2))", "None"]);
        decoded += differential::<Vec<Option<Shape>>>(d, &["[Dot, Some(Rect(1, 2)), None]"]);
        decoded += differential::<(u8,)>(d, &["(1,)", "(1)"]);
        decoded += differential::<Option<(u8, char)>>(d, &["(1, 'a')", "Some((1, 'a'))"]);
        decoded += differential::<Vec<mosaic::Entity>>(d, &["[1, 4294967296, 0]"]);
        decoded += differential::<All>(
            d,
            &[
                r#"(b: true, i: -128, u: 18446744073709551615, f: -1.5e-7, c: 'é', s: "a (b) [c]",
                o: Some(None), unit: (), n: (7), arr: (1.0, 2, 0.1), list: [Dot, Circle(2.5),
                Rect(1, 2), Named(w: -3, h: 1e300)], map: {"x": (1, false), "y": (2, true),},)"#,
            ],
        );
        // Not vacuous: many of the mutated values are decoded.
        assert!(decoded > 1000, "{decoded}");
    }

    /// `text` with random whitespace (half the time also comments and
    /// `\x0b`, which are ron's) next to its punctuation.
    fn relayout(rng: &mut Rng, text: &str) -> String {
        const GAPS: &[&str] = &[" ", "\n", "\t", "\r\n", "  ", "/* c */", "// c\n", "\x0b"];
        let kinds = [5, GAPS.len()][rng.below(2)];
        let punct = |c: Option<char>| c.is_some_and(|c| "()[]{},:".contains(c));
        let mut out = String::new();
        let mut prev = None;
        for c in text.chars() {
            if (punct(prev) || punct(Some(c))) && rng.below(3) == 0 {
                out += GAPS[rng.below(kinds)];
            }
            out.push(c);
            prev = Some(c);
        }
        out
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe parsing code, thousands of generated cases: hours under Miri"
    )]
    fn relaid_values_decode_as_ron_decodes_them() {
        let mut rng = Rng(0x5851_f42d_4c95_7f2d);
        let mut decoded = 0;
        for _ in 0..200 {
            let d = &mut rng;
            decoded += agrees::<All>(&relayout(
                d,
                r#"All(b: true, i: -1, u: 2, f: 1.5, c: 'x',
                s: "s", o: Some(Some(3)), unit: Unit, n: Newtype(4), arr: (1, 2, 3),
                list: [Dot, Circle(1), Rect(1, 2,), Named(w: 1, h: 2), Wrap(Some(Dot))],
                map: {"a": (1, true),},)"#,
            )) as usize;
            decoded += agrees::<Vec<Pair>>(&relayout(d, "[Pair(1, 2), (3, 4,)]")) as usize;
            decoded += agrees::<Vec<Empty>>(&relayout(d, "[Empty(), ()]")) as usize;
            decoded += agrees::<Vec<Option<()>>>(&relayout(d, "[(), Some(()), None]")) as usize;
            decoded += agrees::<Vec<Pos>>(&relayout(d, "[Position(x: 1), (y: 2, x: 3)]")) as usize;
            decoded += agrees::<BTreeMap<Dir, Option<u8>>>(&relayout(d, "{Up: Some(1), Down: 2}"))
                as usize;
        }
        // Not vacuous: about half are decoded.
        assert!(decoded > 300, "{decoded}");
    }

    #[test]
    fn known_divergences_are_left_to_ron() {
        // Each of these was once decoded differently from ron (or decoded
        // where ron reports an error).
        assert!(!agrees::<()>("( )"));
        assert!(!agrees::<Unit>("(\n)"));
        assert!(!agrees::<Pair>("Pair (1, 2)"));
        assert!(!agrees::<Empty>("Empty ()"));
        assert!(agrees::<Pair>("(1, 2)") && agrees::<Newtype>("Newtype (1)"));
        assert!(!agrees::<Raw>("(r: (\"x\"))"));
        assert!(!agrees::<StrKeys>("(\"a\": 1)"));
        assert!(!agrees::<MapAsStruct>("{1: 2}"));
        assert!(!agrees::<AnyVariant>("A"));
        let deep = |n: usize| "Node([".repeat(n) + &"])".repeat(n);
        assert!(agrees::<Tree>(&deep(10)));
        assert!(!agrees::<Tree>(&deep(200)));
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
            assert!(agrees::<All>(text), "refused {text}");
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
