//! A fast reader for the common shape of a RON scene: the document's
//! outline (entities, their ids, prefabs and component names, resources)
//! read by hand, each component value found by matching brackets.
//!
//! Reading the outline with ron finds each value's end by parsing it whole
//! (ron's raw-value capture parses every number to skip it), and the loader
//! parses each value again with its type: two full parses. This scanner
//! only matches brackets, strings and comments inside a value, so a value
//! is parsed once, when loaded.
//!
//! It reads a subset: no attributes (`#![enable(..)]`), no `schemas` or
//! `prefabs` section, no escapes in names, plain decimal ids, no comments
//! right around a value (ron's span of a value keeps them). On anything
//! else, and on any syntax error, it gives up (`None`) and the caller reads
//! the file with ron, which gives the same scene or the error with its
//! location. A value's own syntax is checked when it is decoded, with its
//! location in the file, as for a value read through ron.

use std::ops::Range;
use std::sync::Arc;

use super::error::Where;
use super::value::{Format, SceneValue, Source};
use super::{Scene, SceneComponent, SceneEntity};

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skips whitespace (without comments).
    fn blank(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Skips whitespace and comments.
    fn ws(&mut self) -> Option<()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.i += 1,
                Some(b'/') => self.comment()?,
                _ => return Some(()),
            }
        }
    }

    /// Skips a comment starting at `/`; `None` if it is not one or is not
    /// closed.
    fn comment(&mut self) -> Option<()> {
        match self.b.get(self.i + 1) {
            Some(b'/') => {
                while let Some(c) = self.peek() {
                    self.i += 1;
                    if c == b'\n' {
                        return Some(());
                    }
                }
                // A line comment must end with a newline (ron refuses one
                // that runs to the end of the file).
                None
            }
            Some(b'*') => {
                self.i += 2;
                let mut depth = 1;
                while depth > 0 {
                    match (self.peek()?, self.b.get(self.i + 1)) {
                        (b'*', Some(b'/')) => {
                            depth -= 1;
                            self.i += 2;
                        }
                        (b'/', Some(b'*')) => {
                            depth += 1;
                            self.i += 2;
                        }
                        _ => self.i += 1,
                    }
                }
                Some(())
            }
            _ => None,
        }
    }

    /// Skips whitespace, then consumes `c` if it comes next.
    fn eat(&mut self, c: u8) -> Option<bool> {
        self.ws()?;
        if self.peek() == Some(c) {
            self.i += 1;
            Some(true)
        } else {
            Some(false)
        }
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        self.eat(c)?.then_some(())
    }

    fn ident(&mut self) -> Option<&'a str> {
        self.ws()?;
        let start = self.i;
        while matches!(self.peek(), Some(c) if c == b'_' || c.is_ascii_alphanumeric()) {
            self.i += 1;
        }
        let word = &self.b[start..self.i];
        if word.is_empty() || word[0].is_ascii_digit() {
            return None;
        }
        std::str::from_utf8(word).ok()
    }

    /// A string with no escapes.
    fn string(&mut self) -> Option<&'a str> {
        self.ws()?;
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i + 1;
        let len = self.b[start..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\')?;
        if self.b[start + len] != b'"' {
            return None;
        }
        self.i = start + len + 1;
        std::str::from_utf8(&self.b[start..start + len]).ok()
    }

    /// A plain decimal `u64`, and where it starts (after whitespace only:
    /// ron's span of a value starts at a comment before it).
    fn id(&mut self) -> Option<(u64, usize)> {
        self.blank();
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if self.i == start
            || matches!(self.peek(), Some(c) if c == b'_' || c == b'.' || c.is_ascii_alphanumeric())
        {
            return None;
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        Some((text.parse().ok()?, start))
    }

    /// The span of one value (brackets matched, strings and comments
    /// skipped), ending before the `,` or closing bracket after it. ron's
    /// span of a value keeps a comment before or after it and trims other
    /// whitespace than these four, so those are left to ron, as are
    /// control characters.
    fn value(&mut self) -> Option<Range<usize>> {
        self.blank();
        let start = self.i;
        let mut end = start;
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    self.i += 1;
                }
                b')' | b']' | b'}' => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                    self.i += 1;
                }
                b',' if depth == 0 => break,
                b'"' => {
                    // Raw strings (`r"…"`, `r#"…"#`) are left to ron.
                    if self.i > 0 && matches!(self.b[self.i - 1], b'r' | b'#') {
                        return None;
                    }
                    self.i += 1;
                    loop {
                        match self.peek()? {
                            b'\\' => self.i += 2,
                            b'"' => break,
                            _ => self.i += 1,
                        }
                    }
                    self.i += 1;
                }
                b'\'' => {
                    // A char: skip its first byte (or escape pair), then
                    // find the closing quote within the longest escape.
                    self.i += 1;
                    self.i += if self.peek()? == b'\\' { 2 } else { 1 };
                    let rest = self.b.get(self.i..)?;
                    self.i += rest.iter().take(10).position(|&c| c == b'\'')? + 1;
                }
                b'/' if depth > 0 => {
                    self.comment()?;
                    continue;
                }
                b' ' | b'\t' | b'\n' | b'\r' => {
                    self.i += 1;
                    continue;
                }
                b'#' | b'/' => return None,
                c if !(0x20..0x7f).contains(&c) => return None,
                _ => self.i += 1,
            }
            end = self.i;
        }
        // ron's span of a value that ends in an identifier (a unit struct
        // or variant) runs on over the whitespace after it: left to ron.
        let word = self.b[start..end]
            .iter()
            .rev()
            .take_while(|&&c| c == b'_' || c.is_ascii_alphanumeric())
            .count();
        if end < self.i && word > 0 && !self.b[end - word].is_ascii_digit() {
            return None;
        }
        (end > start && self.i <= self.b.len()).then_some(start..end)
    }

    /// `{ "Name": value, ... }`: each name and value span.
    fn values(&mut self) -> Option<Vec<(&'a str, Range<usize>)>> {
        self.expect(b'{')?;
        let mut out = Vec::new();
        loop {
            if self.eat(b'}')? {
                return Some(out);
            }
            let name = self.string()?;
            self.expect(b':')?;
            out.push((name, self.value()?));
            if !self.eat(b',')? {
                self.expect(b'}')?;
                return Some(out);
            }
        }
    }
}

/// Reads `source` as a RON scene if it has the common shape; `None` to
/// read it with ron instead.
pub(crate) fn scan(source: &Arc<Source>) -> Option<Scene> {
    let text = Arc::clone(source);
    let mut s = Scanner {
        b: source.text.as_bytes(),
        i: 0,
    };
    let value = |span: Range<usize>| SceneValue::Text {
        format: Format::Ron,
        source: Arc::clone(&text),
        span,
    };
    let components = |list: Vec<(&str, Range<usize>)>| -> Vec<SceneComponent> {
        list.into_iter()
            .map(|(name, span)| SceneComponent {
                name: name.to_owned(),
                value: value(span),
            })
            .collect()
    };
    let mut scene = Scene::new();
    let (mut seen_entities, mut seen_resources) = (false, false);
    s.expect(b'(')?;
    loop {
        if s.eat(b')')? {
            break;
        }
        match s.ident()? {
            "entities" if !seen_entities => {
                seen_entities = true;
                s.expect(b':')?;
                s.expect(b'[')?;
                loop {
                    if s.eat(b']')? {
                        break;
                    }
                    scene.entities.push(entity(&mut s, source, &components)?);
                    if !s.eat(b',')? {
                        s.expect(b']')?;
                        break;
                    }
                }
            }
            "resources" if !seen_resources => {
                seen_resources = true;
                s.expect(b':')?;
                scene.resources = components(s.values()?);
            }
            _ => return None,
        }
        if !s.eat(b',')? {
            s.expect(b')')?;
            break;
        }
    }
    s.ws()?;
    (s.i == s.b.len()).then_some(scene)
}

fn entity<'a>(
    s: &mut Scanner<'a>,
    source: &Source,
    components: &dyn Fn(Vec<(&'a str, Range<usize>)>) -> Vec<SceneComponent>,
) -> Option<SceneEntity> {
    s.expect(b'(')?;
    let (mut id, mut prefab, mut list) = (None, None, None);
    loop {
        if s.eat(b')')? {
            break;
        }
        match s.ident()? {
            "id" if id.is_none() => {
                s.expect(b':')?;
                id = Some(s.id()?);
            }
            "prefab" if prefab.is_none() => {
                s.expect(b':')?;
                prefab = Some(s.string()?.to_owned());
            }
            "components" if list.is_none() => {
                s.expect(b':')?;
                list = Some(components(s.values()?));
            }
            _ => return None,
        }
        if !s.eat(b',')? {
            s.expect(b')')?;
            break;
        }
    }
    let (id, at) = id?;
    Some(SceneEntity {
        id,
        prefab,
        components: list.unwrap_or_default(),
        at: Where::Text(source.location(at)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ron::extensions::Extensions;
    use serde::Deserialize;

    /// What a scene's outline is: entities (id, where, prefab, component
    /// names and value spans) and resources.
    type Outline = (
        Vec<(u64, Where, Option<String>, Vec<(String, Range<usize>)>)>,
        Vec<(String, Range<usize>)>,
    );

    fn outline(scene: &Scene) -> Outline {
        let values = |list: &[SceneComponent]| {
            list.iter()
                .map(|c| match &c.value {
                    SceneValue::Text { span, .. } => (c.name.clone(), span.clone()),
                    _ => unreachable!("read from text"),
                })
                .collect::<Vec<_>>()
        };
        let entities = scene.entities.iter().map(|e| {
            let values = values(&e.components);
            (e.id, e.at.clone(), e.prefab.clone(), values)
        });
        (entities.collect(), values(&scene.resources))
    }

    /// Whether ron reads `text` as one value.
    fn ron_reads(text: &str) -> bool {
        ron::Deserializer::from_str(text).is_ok_and(|mut de| {
            serde::de::IgnoredAny::deserialize(&mut de).is_ok() && de.end().is_ok()
        })
    }

    /// The scanner either refuses `text` or reads the outline ron reads;
    /// where ron refuses the document, one of the values scanned must be
    /// one ron refuses (the loader reports it when decoding). Returns
    /// whether the scanner read it.
    fn agrees(text: &str) -> bool {
        let Some(scanned) = scan(&Source::new(text, Extensions::empty())) else {
            return false;
        };
        let mine = outline(&scanned);
        match super::super::text::parse_ron_with_ron(text) {
            Ok(parsed) => {
                assert!(parsed.schemas.is_empty() && parsed.prefabs.is_empty());
                assert_eq!(mine, outline(&parsed), "{text:?}");
            }
            Err(e) => {
                let values = mine.0.iter().flat_map(|e| &e.3).chain(&mine.1);
                assert!(
                    values
                        .clone()
                        .any(|(_, span)| !ron_reads(&text[span.clone()])),
                    "scanned {text:?}, which ron refuses ({e}), and every value: {:?}",
                    values
                        .map(|(_, span)| &text[span.clone()])
                        .collect::<Vec<_>>()
                );
            }
        }
        true
    }

    use crate::test_rng::Rng;

    /// Pieces spliced into documents.
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
        "// c",
        "/*",
        "*/",
        "/* c */",
        "/* ) */",
        "/* /* */ */",
        ",",
        ",,",
        "(",
        ")",
        "()",
        "[",
        "]",
        "{",
        "}",
        ":",
        "\"",
        "'",
        "\\",
        "\\\"",
        "r",
        "r#",
        "#",
        "r\"",
        "r#\"",
        "\"#",
        "b",
        "b'",
        "b\"",
        "br",
        "Some",
        "None",
        "Some(",
        "0",
        "1",
        "00",
        "0x",
        "_",
        "+",
        "-",
        ".",
        "e",
        "u64",
        "é",
        "x",
        "id",
        "id: 3",
        "prefab",
        "components",
        "entities",
        "resources",
        "prefabs",
        "schemas",
        "#![enable(implicit_some)]",
        "Scene",
        "\"A\"",
        "\"A\": 1",
        "'('",
        "'\\''",
        "\u{0}",
        "\x7f",
    ];

    fn mutate(rng: &mut Rng, text: &str) -> String {
        let mut s: Vec<char> = text.chars().collect();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(s.len() + 1);
            let piece = PIECES[rng.below(PIECES.len())];
            match rng.below(3) {
                0 => drop(s.splice(at..at, piece.chars())),
                1 if at < s.len() => drop(s.remove(at)),
                _ if at < s.len() => drop(s.splice(at..at + 1, piece.chars())),
                _ => {}
            }
        }
        s.into_iter().collect()
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe parsing code, thousands of generated cases: hours under Miri"
    )]
    fn mutated_scenes_read_as_ron_reads_them() {
        let docs = [
            "(entities: [(id: 1, components: {\"A\": (x: 1.0, y: -2), \"B\": [1, 2]})])",
            "(resources: {\"R\": Some(\"a)\"), \"S\": '(',}, entities: [(id: 7, prefab: \"P\")])",
            "// a scene\n(\n  entities: [\n    (id: 2, components: {\n      \"A\": (1, \"x\"), // c\n      \"B\": { 1: [()] }, /* d */\n    }),\n    (components: {}, id: 3,),\n  ],\n)\n",
            "(entities: [(id: 10, components: {\"A\": Rect(w: 1, h: 2), \"B\": \"s\\\"t\", \"C\": 'x'})], resources: {})",
            "(resources: {\"R\": 1,}, entities: [(prefab: \"P\", id: 007,), (id: 18446744073709551615)],)",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut scanned = 0;
        for doc in docs {
            assert!(agrees(doc), "{doc}");
            for _ in 0..ROUNDS {
                let text = mutate(&mut rng, doc);
                scanned += agrees(&text) as usize;
                scanned += agrees(&mutate(&mut rng, &text)) as usize;
            }
        }
        // Not vacuous: many of the mutated documents are scanned.
        assert!(scanned > 300, "{scanned}");
    }

    /// Valid documents with random layout: the scanner must read most of
    /// them, and read each as ron does.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe parsing code, thousands of generated cases: hours under Miri"
    )]
    fn generated_scenes_read_as_ron_reads_them() {
        const GAPS: &[&str] = &[
            "",
            " ",
            "\n",
            "\t",
            "\r\n",
            "/* c */",
            "// c\n",
            " /* ( \" */ ",
            "/*/**/*/",
        ];
        const VALUES: &[&str] = &[
            "1",
            "-2.5e3",
            "0x1F",
            "1_000",
            "inf",
            "()",
            "Unit",
            "(x: 1.0, y: -2)",
            "[1, 2,]",
            "{\"a\": [()], }",
            "Some((1, \"x\"))",
            "\"s)]}\"",
            "\"q\\\"(\"",
            "'('",
            "'\\''",
            "'\"'",
            "'é'",
            "\"é💥\"",
            "Rect(w: 1, h: [2 /* ] */, 3])",
            "[1, // ]\n 2]",
            "b\"(\"",
            "b'('",
            "(\n  a: 1,\n)",
            "E(\"}\")",
            "r\"raw\"",
            "r#type",
        ];
        let mut rng = Rng(0x5851_f42d_4c95_7f2d);
        let mut scanned = 0;
        for _ in 0..2000 {
            let gap = |rng: &mut Rng| GAPS[rng.below(GAPS.len())];
            let mut doc = String::new();
            let values = |rng: &mut Rng, doc: &mut String| {
                *doc += "{";
                for _ in 0..rng.below(4) {
                    let name = ["A", "B", "C"][rng.below(3)];
                    let value = VALUES[rng.below(VALUES.len())];
                    let (g1, g2, g3) = (gap(rng), gap(rng), gap(rng));
                    *doc += &format!("{g1}\"{name}\"{g2}:{g3}{value}{}", gap(rng));
                    *doc += [",", ", "][rng.below(2)];
                }
                *doc += gap(rng);
                *doc += "}";
            };
            doc += gap(&mut rng);
            doc += "(";
            if rng.below(2) == 0 {
                doc += &format!(
                    "{}resources{}:{}",
                    gap(&mut rng),
                    gap(&mut rng),
                    gap(&mut rng)
                );
                values(&mut rng, &mut doc);
                doc += ",";
            }
            doc += &format!(
                "{}entities{}:{}[",
                gap(&mut rng),
                gap(&mut rng),
                gap(&mut rng)
            );
            for _ in 0..rng.below(4) {
                let mut fields = vec![format!(
                    "id{}:{}{}{}",
                    gap(&mut rng),
                    gap(&mut rng),
                    ["1", "007", "18446744073709551615", "42"][rng.below(4)],
                    gap(&mut rng)
                )];
                if rng.below(2) == 0 {
                    fields.push(format!("prefab:{}\"P\"", gap(&mut rng)));
                }
                if rng.below(3) != 0 {
                    let mut list = String::new();
                    values(&mut rng, &mut list);
                    fields.push(format!(
                        "components{}:{}{list}",
                        gap(&mut rng),
                        gap(&mut rng)
                    ));
                }
                if rng.below(2) == 0 {
                    fields.reverse();
                }
                doc += &format!("{}({}){},", gap(&mut rng), fields.join(","), gap(&mut rng));
            }
            doc += &format!("{}]{}){}\n", gap(&mut rng), gap(&mut rng), gap(&mut rng));
            scanned += agrees(&doc) as usize;
        }
        // Most are scanned (comments right around a value are ron's).
        assert!(scanned > 200, "{scanned}");
    }

    /// Mutations tried per document.
    const ROUNDS: usize = 1500;

    type Spans = Vec<(u64, Vec<(String, String)>)>;

    fn spans(text: &str) -> Option<Spans> {
        let source = Source::new(text, Extensions::empty());
        let scene = scan(&source)?;
        Some(
            scene
                .entities
                .iter()
                .map(|e| {
                    let values = e.components.iter().map(|c| {
                        let SceneValue::Text { span, .. } = &c.value else {
                            unreachable!()
                        };
                        (c.name.clone(), source.text[span.clone()].to_owned())
                    });
                    (e.id, values.collect())
                })
                .collect(),
        )
    }

    #[test]
    fn reads_the_common_shape() {
        let text = r#"// a scene
(
    entities: [
        (id: 1, components: { "A": (x: 1.0, s: "a)],\"}"), "B": ['(', '\'', '}'], /* c) */ }),
        (components: {"C": Some((1, /* ) */ 2)), // end
        }, prefab: "P", id: 2,),
    ],
    resources: { "R": 5 },
)
"#;
        assert_eq!(
            spans(text).unwrap(),
            [
                (
                    1,
                    vec![
                        ("A".into(), r#"(x: 1.0, s: "a)],\"}")"#.into()),
                        ("B".into(), r"['(', '\'', '}']".into()),
                    ]
                ),
                (2, vec![("C".into(), "Some((1, /* ) */ 2))".into())]),
            ]
        );
    }

    #[test]
    fn leaves_everything_else_to_ron() {
        for text in [
            "#![enable(implicit_some)] (entities: [])",
            "(prefabs: {})",
            "(schemas: {})",
            "Scene(entities: [])",
            "(entities: [(id: 0x10)])",
            "(entities: [(id: 1, components: {\"A\\u{41}\": 1})])",
            "(entities: [(id: 1, components: {\"A\": r\"x\"})])",
            "(entities: [(id: 1, components: {\"A\": (1}])",
            "(entities: [(id: 1)]) trailing",
            "(entities: [(id: 1)], entities: [])",
            "(entities: [(id: 1, nope: 2)])",
            "(entities: [(id: 1)]) // no newline",
            // ron's span of a value keeps comments around it, and its
            // location of an id starts at a comment before it.
            "(entities: [(id: 1, components: {\"A\": /* c */ 1})])",
            "(entities: [(id: 1, components: {\"A\": 1 /* c */})])",
            "(entities: [(id: 1, components: {\"A\": 1 // c\n})])",
            "(entities: [(id: /* c */ 1)])",
            // ron's span of a unit struct or variant runs over the
            // whitespace after it.
            "(entities: [(id: 1, components: {\"A\": Unit })])",
            // ron trims more whitespace than the scanner knows.
            "(entities: [(id: 1, components: {\"A\": \x0b1})])",
            "(entities: [(id: 1, components: {\"A\": 1\u{2028}})])",
        ] {
            assert!(spans(text).is_none(), "{text}");
        }
    }
}
