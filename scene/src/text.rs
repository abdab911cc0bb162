//! Reading and writing the scene document in each format.
//!
//! Component values are not decoded here: the text formats keep each
//! value's source span (decoded later with its type, so errors point into
//! the file), and the binary form keeps each value's own bytes.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use ron::extensions::Extensions;
use serde::de::{MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::columns::{write_postcard, Codec};
use super::error::{SceneError, Where};
use super::value::{json_offset, Format, SceneValue, Source, ValueWriter};
use super::{ColumnBytes, Prefab, Scene, SceneComponent, SceneEntity, SceneTable, TableColumn};
use mosaic::{ComponentSchema, FieldType};

/// The first bytes of a binary scene (name and format version). Version 2
/// stores entities a component column at a time (version 1, one value at a
/// time, is refused with a message naming its version).
const MAGIC: &[u8] = b"mosaic-scene\x02";

/// A map read as its entries in file order (duplicates kept, for the loader
/// to report).
pub(crate) struct Ordered<K, V>(pub Vec<(K, V)>);

impl<K, V> Default for Ordered<K, V> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Deserialize<'de> for Ordered<K, V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V2<K, V>(PhantomData<(K, V)>);
        impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for V2<K, V> {
            type Value = Ordered<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V2(PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "R: Deserialize<'de>"))]
struct Doc<R> {
    /// Each schema's body, read on its own (so errors can say where it is).
    #[serde(default)]
    schemas: Ordered<String, R>,
    #[serde(default)]
    resources: Ordered<String, R>,
    /// Each prefab's body, read on its own as a [`PrefabDoc`] (so errors
    /// can say where the prefab is).
    #[serde(default)]
    prefabs: Ordered<String, R>,
    #[serde(default)]
    entities: Vec<EntityDoc<R>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "R: Deserialize<'de>"))]
struct PrefabDoc<R> {
    #[serde(default)]
    extends: Option<String>,
    #[serde(default)]
    components: Ordered<String, R>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "R: Deserialize<'de>"))]
struct EntityDoc<R> {
    id: R,
    #[serde(default)]
    prefab: Option<String>,
    #[serde(default)]
    components: Ordered<String, R>,
}

/// The source text of one RON value, borrowed from the file.
///
/// This is what `ron::value::RawValue` captures, without RawValue's second
/// pass that re-parses every value to validate it (the value was just
/// parsed to find its end, and is decoded with its type later): that pass
/// cost a third of loading a RON scene. It speaks ron's raw-value protocol
/// (the newtype name below, answered with the value's borrowed text);
/// `tests/scene.rs` loads RON scenes, so a ron release that changed the
/// protocol would fail there, not silently.
pub(crate) struct RonSpan<'a>(pub &'a str);

impl<'de> Deserialize<'de> for RonSpan<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SpanVisitor;
        impl<'de> Visitor<'de> for SpanVisitor {
            type Value = RonSpan<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a RON value")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                v: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(RonSpan(v))
            }
        }
        d.deserialize_newtype_struct(RON_RAW_VALUE, SpanVisitor)
    }
}

/// The newtype name by which ron recognises a raw-value request (ron 0.12,
/// `ron::value::raw`).
pub(crate) const RON_RAW_VALUE: &str = "$ron::private::RawValue";

/// A schema from its name and `(field, type name)` pairs, as files write
/// it; `at` is where it is, for errors.
fn schema_of(
    name: String,
    fields: Vec<(String, String)>,
    at: &Where,
) -> Result<ComponentSchema, SceneError> {
    let mut schema = ComponentSchema::new(name);
    for (field, ty) in fields {
        let ty: FieldType = ty.parse().map_err(|error| SceneError::Schema {
            component: schema.name().to_owned(),
            error,
            at: at.clone(),
        })?;
        schema = schema.field(field, ty);
    }
    Ok(schema)
}

/// RON options for scenes: `Some` may be left out (`prefab: "Tree"`).
pub(crate) fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// How a format reads what the document left raw: each value (kept as its
/// span), and the bodies of prefabs and schemas (parsed on their own).
trait Bodies<R> {
    fn value(&self, raw: &R) -> SceneValue;
    fn prefab(&self, raw: &R) -> Result<PrefabDoc<R>, SceneError>;
    fn schema(&self, raw: &R) -> Result<Ordered<String, String>, SceneError>;
}

/// Turns a parsed document into a scene.
fn build<R>(
    doc: Doc<R>,
    bodies: &impl Bodies<R>,
    format: &'static str,
) -> Result<Scene, SceneError> {
    let value = |raw: &R| bodies.value(raw);
    let components = |list: Ordered<String, R>| -> Vec<SceneComponent> {
        list.0
            .into_iter()
            .map(|(name, raw)| SceneComponent {
                name,
                value: value(&raw),
            })
            .collect()
    };
    let mut schemas = Vec::new();
    for (name, raw) in doc.schemas.0 {
        let at = value(&raw).at();
        let fields = bodies.schema(&raw)?;
        schemas.push((schema_of(name, fields.0, &at)?, at));
    }
    let mut prefabs = Vec::with_capacity(doc.prefabs.0.len());
    for (name, raw) in doc.prefabs.0 {
        let at = value(&raw).at();
        let p = bodies.prefab(&raw)?;
        prefabs.push(Prefab {
            name,
            extends: p.extends,
            components: components(p.components),
            at,
        });
    }
    let mut entities = Vec::with_capacity(doc.entities.len());
    for e in doc.entities {
        let id_value = value(&e.id);
        let at = id_value.at();
        let id: u64 = id_value
            .decode(PhantomData::<u64>)
            .map_err(|err| SceneError::Syntax {
                format,
                message: format!("entity id: {}", err.message),
                at: err.at,
            })?;
        entities.push(SceneEntity {
            id,
            prefab: e.prefab,
            components: components(e.components),
            at,
        });
    }
    Ok(Scene {
        schemas,
        resources: components(doc.resources),
        prefabs,
        entities,
        tables: Vec::new(),
        registry: None,
        skipped: Default::default(),
    })
}

/// `text` without a leading byte-order mark (some editors write one; it is
/// not part of the document, and locations are counted without it).
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

pub(crate) fn parse_ron(text: &str) -> Result<Scene, SceneError> {
    let text = without_bom(text);
    // The common shape, read without parsing each value twice.
    let plain = Source::new(text, Extensions::empty());
    if let Some(scene) = super::ron_scan::scan(&plain) {
        #[cfg(debug_assertions)]
        check_scan(&scene, parse_ron_with_ron(text));
        return Ok(scene);
    }
    parse_ron_with_ron(text)
}

/// Debug builds check that the scanner read what ron reads (every test
/// that reads a RON scene checks it).
#[cfg(debug_assertions)]
fn check_scan(scanned: &Scene, parsed: Result<Scene, SceneError>) {
    type Values = Vec<(String, Option<std::ops::Range<usize>>)>;
    type Outline = (Vec<(u64, Where, Option<String>, Values)>, Values);
    fn outline(scene: &Scene) -> Outline {
        let values = |list: &[SceneComponent]| {
            list.iter()
                .map(|c| (c.name.clone(), c.value.span()))
                .collect::<Vec<_>>()
        };
        (
            scene
                .entities
                .iter()
                .map(|e| (e.id, e.at.clone(), e.prefab.clone(), values(&e.components)))
                .collect(),
            values(&scene.resources),
        )
    }
    // A value ron refuses is the loader's to report (with its location),
    // as the scanner leaves values to it.
    let Ok(parsed) = parsed else { return };
    assert_eq!(
        outline(scanned),
        outline(&parsed),
        "RON scanner and ron disagree"
    );
    assert!(parsed.schemas.is_empty() && parsed.prefabs.is_empty());
}

pub(super) fn parse_ron_with_ron(text: &str) -> Result<Scene, SceneError> {
    // The attributes at the top of the file (read when a deserializer is
    // made; a bad one is reported by the full parse below).
    let extensions = ron::Deserializer::from_str_with_options(text, &ron_options())
        .map_or(Extensions::empty(), |de| de.extensions())
        - ron_options().default_extensions;
    let source = Source::new(text, extensions);
    let doc: Doc<RonSpan<'_>> =
        ron_options()
            .from_str(&source.text)
            .map_err(|e| SceneError::Syntax {
                format: "RON",
                message: e.code.to_string(),
                at: Where::Text(source.ron_error_at(0, &source.text, e.span.start)),
            })?;
    build(doc, &RonBodies(&source), "RON")
}

/// [`Bodies`] of a RON file.
struct RonBodies<'s>(&'s Arc<Source>);

impl<'s> RonBodies<'s> {
    /// Parses `raw` (a span of the file) as a `T`, with the file's options.
    fn parse<'a, T: Deserialize<'a>>(&self, raw: &'a str) -> Result<T, SceneError> {
        let source = self.0;
        let options = ron_options().with_default_extension(source.ron_extensions);
        options.from_str(raw).map_err(|e| SceneError::Syntax {
            format: "RON",
            message: e.code.to_string(),
            at: Where::Text(source.ron_error_at(source.span_of(raw).start, raw, e.span.start)),
        })
    }
}

impl<'a> Bodies<RonSpan<'a>> for RonBodies<'_> {
    fn value(&self, raw: &RonSpan<'a>) -> SceneValue {
        SceneValue::Text {
            format: Format::Ron,
            source: Arc::clone(self.0),
            span: self.0.span_of(raw.0),
        }
    }

    fn prefab(&self, raw: &RonSpan<'a>) -> Result<PrefabDoc<RonSpan<'a>>, SceneError> {
        self.parse(raw.0)
    }

    fn schema(&self, raw: &RonSpan<'a>) -> Result<Ordered<String, String>, SceneError> {
        self.parse(raw.0)
    }
}

/// How deep a JSON scene may nest arrays and objects: serde_json's own
/// limit when it decodes a value (it does not apply it when it only finds
/// a value's end, as reading the document does).
const JSON_MAX_DEPTH: usize = 128;

/// The byte offset of the first `[` or `{` of `text` nested deeper than
/// [`JSON_MAX_DEPTH`], if any (outside strings). serde_json finds the end
/// of each raw value recursively, without a limit: a document nested
/// 100,000 deep would overflow the stack before any limit applied.
fn json_too_deep(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > JSON_MAX_DEPTH {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

pub(crate) fn parse_json(text: &str) -> Result<Scene, SceneError> {
    let text = without_bom(text);
    let source = Source::new(text, Extensions::empty());
    if let Some(offset) = json_too_deep(&source.text) {
        return Err(SceneError::Syntax {
            format: "JSON",
            message: format!("nested more than {JSON_MAX_DEPTH} levels deep"),
            at: Where::Text(source.location(offset)),
        });
    }
    let doc: Doc<&serde_json::value::RawValue> =
        serde_json::from_str(&source.text).map_err(|e| SceneError::Syntax {
            format: "JSON",
            message: strip_position(&e),
            at: Where::Text(source.location(json_offset(&source.text, e.line(), e.column()))),
        })?;
    build(doc, &JsonBodies(&source), "JSON")
}

/// [`Bodies`] of a JSON file.
struct JsonBodies<'s>(&'s Arc<Source>);

impl JsonBodies<'_> {
    /// Parses `raw` (a span of the file) as a `T`.
    fn parse<'a, T: Deserialize<'a>>(&self, raw: &'a str) -> Result<T, SceneError> {
        let source = self.0;
        serde_json::from_str(raw).map_err(|e| SceneError::Syntax {
            format: "JSON",
            message: strip_position(&e),
            at: Where::Text(
                source.location(source.span_of(raw).start + json_offset(raw, e.line(), e.column())),
            ),
        })
    }
}

impl<'a> Bodies<&'a serde_json::value::RawValue> for JsonBodies<'_> {
    fn value(&self, raw: &&'a serde_json::value::RawValue) -> SceneValue {
        SceneValue::Text {
            format: Format::Json,
            source: Arc::clone(self.0),
            span: self.0.span_of(raw.get()),
        }
    }

    fn prefab(
        &self,
        raw: &&'a serde_json::value::RawValue,
    ) -> Result<PrefabDoc<&'a serde_json::value::RawValue>, SceneError> {
        self.parse(raw.get())
    }

    fn schema(
        &self,
        raw: &&'a serde_json::value::RawValue,
    ) -> Result<Ordered<String, String>, SceneError> {
        self.parse(raw.get())
    }
}

/// serde_json's message without its " at line L column C" suffix (errors
/// give the position in the whole file instead).
fn strip_position(e: &serde_json::Error) -> String {
    let m = e.to_string();
    m.rfind(" at line ")
        .map_or(m.clone(), |i| m[..i].to_owned())
}

/// `(name, postcard bytes)` of each value of one prefab.
type BinValues = Vec<(String, Vec<u8>)>;

/// A byte string, borrowed when read (postcard writes `[u8]` and byte
/// strings alike; this reads and writes it in one piece).
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Bytes<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a [u8]>::deserialize(d).map(Bytes)
    }
}

/// A run of entities with the same components, a column at a time: their
/// ids, their prefab, and per component its name and the postcard bytes of
/// every entity's value, back to back.
#[derive(Serialize, Deserialize)]
struct BinTable<'a> {
    /// Borrowed when written, owned when read (varints cannot be borrowed).
    ids: Cow<'a, [u64]>,
    prefab: Option<String>,
    #[serde(borrow)]
    columns: Vec<(String, Bytes<'a>)>,
}

/// Consecutive entities of a scene's list written as one table: ids,
/// prefab, and each component's name and bytes.
type ListedRun<'a> = (Vec<u64>, Option<&'a str>, Vec<(&'a str, Vec<u8>)>);

/// The binary document: names and structure; prefab and resource values
/// each as its own bytes, entities as tables.
#[derive(Serialize, Deserialize)]
struct BinDoc<'a> {
    schemas: Vec<(String, Vec<(String, String)>)>,
    resources: Vec<(String, Vec<u8>)>,
    prefabs: Vec<(String, Option<String>, BinValues)>,
    #[serde(borrow)]
    tables: Vec<BinTable<'a>>,
}

/// A table of a binary scene being read: ids, prefab, and per component
/// its name and the range of its bytes in the input.
type ReadTable = (Vec<u64>, Option<String>, Vec<(String, Range<usize>)>);

pub(crate) fn parse_binary(buffer: Vec<u8>) -> Result<Scene, SceneError> {
    let bytes = buffer.as_slice();
    let syntax = |message: String| SceneError::Syntax {
        format: "binary",
        message,
        at: Where::Unknown,
    };
    let body = bytes.strip_prefix(MAGIC).ok_or_else(|| {
        let name = &MAGIC[..MAGIC.len() - 1];
        match bytes.strip_prefix(name).and_then(|rest| rest.first()) {
            Some(version) => syntax(format!(
                "binary scene format version {version} (this version of mosaic reads version {})",
                MAGIC[MAGIC.len() - 1]
            )),
            None => syntax("not a mosaic binary scene (wrong header)".to_owned()),
        }
    })?;
    let (doc, rest): (BinDoc<'_>, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| syntax(e.to_string()))?;
    if !rest.is_empty() {
        return Err(syntax(format!(
            "{} bytes left over after the scene",
            rest.len()
        )));
    }
    let components = |list: Vec<(String, Vec<u8>)>| -> Vec<SceneComponent> {
        list.into_iter()
            .map(|(name, bytes)| SceneComponent {
                name,
                value: SceneValue::Binary(bytes),
            })
            .collect()
    };
    // Each column's bytes are a range of `buffer`, found from where its
    // slice starts (the slices borrow from `buffer`).
    let tables: Vec<ReadTable> = doc
        .tables
        .into_iter()
        .map(|t| {
            let columns = t
                .columns
                .into_iter()
                .map(|(name, column)| {
                    let start = (column.0.as_ptr().addr())
                        .checked_sub(bytes.as_ptr().addr())
                        .expect("postcard borrows from its input");
                    (name, start..start + column.0.len())
                })
                .collect();
            (t.ids.into_owned(), t.prefab, columns)
        })
        .collect();
    let mut schemas = Vec::new();
    for (name, fields) in doc.schemas {
        let at = Where::Binary(format!("schema `{name}`"));
        schemas.push((schema_of(name, fields, &at)?, at));
    }
    let resources = components(doc.resources);
    let prefabs = doc
        .prefabs
        .into_iter()
        .map(|(name, extends, list)| Prefab {
            at: Where::Binary(format!("prefab `{name}`")),
            name,
            extends,
            components: components(list),
        })
        .collect();
    // Nothing borrows `buffer` any more: the columns share it.
    let buffer = Arc::new(buffer);
    Ok(Scene {
        schemas,
        resources,
        prefabs,
        entities: Vec::new(),
        tables: tables
            .into_iter()
            .map(|(ids, prefab, columns)| SceneTable {
                ids,
                prefab,
                columns: columns
                    .into_iter()
                    .map(|(name, range)| TableColumn {
                        name,
                        bytes: ColumnBytes {
                            buffer: Arc::clone(&buffer),
                            range,
                        },
                    })
                    .collect(),
            })
            .collect(),
        registry: None,
        skipped: Default::default(),
    })
}

// ----- writing ---------------------------------------------------------------

/// `(name, value)` pairs written as a map.
struct MapOf<'a, V>(&'a [(&'a str, V)]);

impl<V: Serialize> Serialize for MapOf<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

struct PrefabOut<'a> {
    extends: Option<&'a str>,
    components: Vec<(&'a str, ValueWriter<'a>)>,
}

impl Serialize for PrefabOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Prefab", 2)?;
        if let Some(extends) = self.extends {
            s.serialize_field("extends", extends)?;
        }
        s.serialize_field("components", &MapOf(&self.components))?;
        s.end()
    }
}

struct EntityOut<'a> {
    id: u64,
    prefab: Option<&'a str>,
    components: Vec<(&'a str, ValueWriter<'a>)>,
}

impl Serialize for EntityOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Entity", 3)?;
        s.serialize_field("id", &self.id)?;
        if let Some(prefab) = self.prefab {
            s.serialize_field("prefab", prefab)?;
        }
        s.serialize_field("components", &MapOf(&self.components))?;
        s.end()
    }
}

/// The entities of a table, written one by one: each column is read from
/// its cursor, which each value written advances.
struct TableOut<'a> {
    ids: &'a [u64],
    prefab: Option<&'a str>,
    columns: Vec<(&'a str, Codec<'a>, Cell<&'a [u8]>)>,
    /// Written as JSON: non-finite floats are refused (JSON has none).
    json: bool,
    /// The first value refused: its component and why.
    refused: std::cell::RefCell<Option<(String, String)>>,
}

/// One entity of a [`TableOut`] (the next row of each column).
struct RowOut<'t, 'a> {
    table: &'t TableOut<'a>,
    id: u64,
}

impl Serialize for RowOut<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Entity", 3)?;
        s.serialize_field("id", &self.id)?;
        if let Some(prefab) = self.table.prefab {
            s.serialize_field("prefab", prefab)?;
        }
        s.serialize_field("components", &RowValues(self.table))?;
        s.end()
    }
}

struct RowValues<'t, 'a>(&'t TableOut<'a>);

impl Serialize for RowValues<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.columns.len()))?;
        for (name, codec, cursor) in &self.0.columns {
            map.serialize_entry(
                name,
                &CellValue {
                    name,
                    codec,
                    cursor,
                    table: self.0,
                },
            )?;
        }
        map.end()
    }
}

/// The next value of a column.
struct CellValue<'c, 'a> {
    name: &'a str,
    codec: &'c Codec<'a>,
    cursor: &'c Cell<&'a [u8]>,
    table: &'c TableOut<'a>,
}

impl Serialize for CellValue<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut bytes = self.cursor.get();
        let mut serializer = Some(serializer);
        let mut result = None;
        self.codec
            .write(&mut bytes, &mut |value| {
                if self.table.json {
                    if let Err(message) = finite(value) {
                        *self.table.refused.borrow_mut() = Some((self.name.to_owned(), message));
                        return;
                    }
                }
                if let Some(serializer) = serializer.take() {
                    result = Some(erased_serde::serialize(value, serializer));
                }
            })
            .map_err(serde::ser::Error::custom)?;
        self.cursor.set(bytes);
        result.unwrap_or_else(|| Err(serde::ser::Error::custom("a value was not written")))
    }
}

/// The entity list: entities first, then each table's rows.
struct EntitiesOut<'a> {
    list: Vec<EntityOut<'a>>,
    tables: Vec<TableOut<'a>>,
}

impl Serialize for EntitiesOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = self.list.len() + self.tables.iter().map(|t| t.ids.len()).sum::<usize>();
        let mut seq = serializer.serialize_seq(Some(len))?;
        for e in &self.list {
            seq.serialize_element(e)?;
        }
        for table in &self.tables {
            for &id in table.ids {
                seq.serialize_element(&RowOut { table, id })?;
            }
        }
        seq.end()
    }
}

struct DocOut<'a> {
    schemas: Vec<(&'a str, Vec<(&'a str, &'static str)>)>,
    resources: Vec<(&'a str, ValueWriter<'a>)>,
    prefabs: Vec<(&'a str, PrefabOut<'a>)>,
    entities: EntitiesOut<'a>,
}

impl Serialize for DocOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let schemas: Vec<(&str, MapOf<'_, &str>)> =
            self.schemas.iter().map(|(n, f)| (*n, MapOf(f))).collect();
        let mut s = serializer.serialize_struct("Scene", 4)?;
        if !schemas.is_empty() {
            s.serialize_field("schemas", &MapOf(&schemas))?;
        }
        if !self.resources.is_empty() {
            s.serialize_field("resources", &MapOf(&self.resources))?;
        }
        if !self.prefabs.is_empty() {
            s.serialize_field("prefabs", &MapOf(&self.prefabs))?;
        }
        s.serialize_field("entities", &self.entities)?;
        s.end()
    }
}

fn writers<'a>(
    list: &'a [SceneComponent],
    format: Format,
) -> Result<Vec<(&'a str, ValueWriter<'a>)>, SceneError> {
    list.iter()
        .map(|c| {
            let writer = c.value.writer(&c.name, format)?;
            if let (Format::Json, ValueWriter::Content(content)) = (format, &writer) {
                finite_content(content).map_err(|message| SceneError::Encode {
                    component: c.name.clone(),
                    message,
                })?;
            }
            Ok((c.name.as_str(), writer))
        })
        .collect()
}

/// Refuses a value holding a NaN or infinite float: JSON has no way to
/// write one (serde_json writes `null`, which then fails to load).
fn finite(value: &dyn erased_serde::Serialize) -> Result<(), String> {
    finite_content(&super::value::to_content(value)?)
}

/// [`finite`] for a value in the serde data model.
fn finite_content(value: &serde_content::Value<'_>) -> Result<(), String> {
    use serde_content::{Data, Number, Value};
    let data = |d: &Data<'_>| -> Result<(), String> {
        match d {
            Data::Unit => Ok(()),
            Data::NewType { value } => finite_content(value),
            Data::Tuple { values } => values.iter().try_for_each(finite_content),
            Data::Struct { fields } => fields.iter().try_for_each(|(_, v)| finite_content(v)),
        }
    };
    match value {
        Value::Number(Number::F32(f)) if !f.is_finite() => Err(non_finite(f64::from(*f))),
        Value::Number(Number::F64(f)) if !f.is_finite() => Err(non_finite(*f)),
        Value::Seq(items) | Value::Tuple(items) => items.iter().try_for_each(finite_content),
        Value::Map(entries) => entries
            .iter()
            .try_for_each(|(k, v)| finite_content(k).and_then(|()| finite_content(v))),
        Value::Option(Some(inner)) => finite_content(inner),
        Value::Struct(s) => data(&s.data),
        Value::Enum(e) => data(&e.data),
        _ => Ok(()),
    }
}

fn non_finite(f: f64) -> String {
    format!("{f} cannot be written as JSON (JSON has no NaN or infinity; RON and binary scenes keep them)")
}

fn doc_out(scene: &Scene, format: Format) -> Result<DocOut<'_>, SceneError> {
    Ok(DocOut {
        schemas: scene
            .schemas
            .iter()
            .map(|(s, _)| {
                (
                    s.name(),
                    s.fields()
                        .iter()
                        .map(|(n, t)| (n.as_str(), t.name()))
                        .collect(),
                )
            })
            .collect(),
        resources: writers(&scene.resources, format)?,
        prefabs: scene
            .prefabs
            .iter()
            .map(|p| {
                Ok((
                    p.name.as_str(),
                    PrefabOut {
                        extends: p.extends.as_deref(),
                        components: writers(&p.components, format)?,
                    },
                ))
            })
            .collect::<Result<_, SceneError>>()?,
        entities: EntitiesOut {
            list: scene
                .entities
                .iter()
                .map(|e| {
                    Ok(EntityOut {
                        id: e.id,
                        prefab: e.prefab.as_deref(),
                        components: writers(&e.components, format)?,
                    })
                })
                .collect::<Result<_, SceneError>>()?,
            tables: scene
                .tables
                .iter()
                .map(|t| {
                    Ok(TableOut {
                        json: format == Format::Json,
                        refused: Default::default(),
                        ids: &t.ids,
                        prefab: t.prefab.as_deref(),
                        columns: t
                            .columns
                            .iter()
                            .map(|c| {
                                let codec = Codec::find(
                                    &c.name,
                                    scene.registry.as_ref(),
                                    scene.schemas.iter().map(|(s, _)| s),
                                )
                                .ok_or_else(|| {
                                    SceneError::Unresolved {
                                        component: c.name.clone(),
                                        from: Format::Binary.name(),
                                        to: format.name(),
                                    }
                                })?;
                                Ok((c.name.as_str(), codec, Cell::new(c.bytes.as_slice())))
                            })
                            .collect::<Result<_, SceneError>>()?,
                    })
                })
                .collect::<Result<_, SceneError>>()?,
        },
    })
}

fn encode_error(e: impl fmt::Display) -> SceneError {
    SceneError::Encode {
        component: "scene".to_owned(),
        message: e.to_string(),
    }
}

impl Scene {
    /// The scene as pretty RON.
    ///
    /// Fails if a value was read from another format and not
    /// [resolved](Scene::resolve), or a value cannot be written as RON.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::Scene;
    /// let scene = Scene::from_ron_str("(entities: [(id: 3)])").unwrap();
    /// let text = scene.to_ron_string().unwrap();
    /// assert_eq!(Scene::from_ron_str(&text).unwrap().ids().collect::<Vec<_>>(), [3]);
    /// ```
    pub fn to_ron_string(&self) -> Result<String, SceneError> {
        let doc = doc_out(self, Format::Ron)?;
        // Values read from a RON file that enables extensions are written
        // as they were, so the file written enables them too.
        let extensions = self
            .resources
            .iter()
            .chain(self.prefabs.iter().flat_map(|p| &p.components))
            .chain(self.entities.iter().flat_map(|e| &e.components))
            .fold(Extensions::empty(), |all, c| all | c.value.ron_extensions());
        let config = ron::ser::PrettyConfig::new()
            .struct_names(false)
            .extensions(extensions);
        ron::ser::to_string_pretty(&doc, config).map_err(encode_error)
    }

    /// The scene as pretty JSON.
    ///
    /// Fails (with [`SceneError::Encode`] naming the component) on a NaN or
    /// infinite float, which JSON cannot hold; RON and binary scenes keep
    /// them exactly.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::Scene;
    /// let scene = Scene::from_json_str(r#"{"entities": [{"id": 3}]}"#).unwrap();
    /// let text = scene.to_json_string().unwrap();
    /// assert_eq!(Scene::from_json_str(&text).unwrap().len(), 1);
    /// ```
    pub fn to_json_string(&self) -> Result<String, SceneError> {
        let doc = doc_out(self, Format::Json)?;
        let written = serde_json::to_string_pretty(&doc);
        for table in &doc.entities.tables {
            if let Some((component, message)) = table.refused.take() {
                return Err(SceneError::Encode { component, message });
            }
        }
        written.map_err(encode_error)
    }

    /// The scene in the compact binary form (postcard). Entities are stored
    /// in runs with the same components, one byte string per component of
    /// a run, so a reader can skip a component it does not know; a scene
    /// saved from a world is written with no decoding at all.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::Scene;
    /// let bytes = Scene::new().to_binary().unwrap();
    /// assert!(bytes.starts_with(b"mosaic-scene"));
    /// ```
    pub fn to_binary(&self) -> Result<Vec<u8>, SceneError> {
        let bytes_of = |list: &[SceneComponent]| -> Result<Vec<(String, Vec<u8>)>, SceneError> {
            list.iter()
                .map(|c| {
                    let w = c.value.writer(&c.name, Format::Binary)?;
                    Ok((c.name.clone(), w.to_bytes(&c.name)?))
                })
                .collect()
        };
        // Entities kept one by one (read from text, resolved) become tables
        // too: one per run of entities with the same prefab and names.
        let mut listed: Vec<ListedRun<'_>> = Vec::new();
        for e in &self.entities {
            let same = listed.last().is_some_and(|(_, prefab, columns)| {
                *prefab == e.prefab.as_deref()
                    && columns.len() == e.components.len()
                    && columns
                        .iter()
                        .zip(&e.components)
                        .all(|((n, _), c)| *n == c.name)
            });
            if !same {
                let columns = e.components.iter().map(|c| (c.name.as_str(), Vec::new()));
                listed.push((Vec::new(), e.prefab.as_deref(), columns.collect()));
            }
            let (ids, _, columns) = listed.last_mut().expect("pushed above");
            ids.push(e.id);
            for ((_, bytes), c) in columns.iter_mut().zip(&e.components) {
                match c.value.writer(&c.name, Format::Binary)? {
                    ValueWriter::Content(content) => {
                        write_postcard(content, bytes).map_err(|message| SceneError::Encode {
                            component: c.name.clone(),
                            message,
                        })?
                    }
                    ValueWriter::Bytes(b) => bytes.extend_from_slice(b),
                    ValueWriter::Ron(_) | ValueWriter::Json(_) => {
                        unreachable!("checked by `writer`")
                    }
                }
            }
        }
        let mut tables: Vec<BinTable<'_>> = listed
            .iter()
            .map(|(ids, prefab, columns)| BinTable {
                ids: Cow::Borrowed(ids),
                prefab: prefab.map(str::to_owned),
                columns: columns
                    .iter()
                    .map(|(n, b)| ((*n).to_owned(), Bytes(b)))
                    .collect(),
            })
            .collect();
        tables.extend(self.tables.iter().map(|t| {
            BinTable {
                ids: Cow::Borrowed(&t.ids),
                prefab: t.prefab.clone(),
                columns: t
                    .columns
                    .iter()
                    .map(|c| (c.name.clone(), Bytes(c.bytes.as_slice())))
                    .collect(),
            }
        }));
        let doc = BinDoc {
            schemas: self
                .schemas
                .iter()
                .map(|(s, _)| {
                    (
                        s.name().to_owned(),
                        s.fields()
                            .iter()
                            .map(|(n, t)| (n.clone(), t.name().to_owned()))
                            .collect(),
                    )
                })
                .collect(),
            resources: bytes_of(&self.resources)?,
            prefabs: self
                .prefabs
                .iter()
                .map(|p| Ok((p.name.clone(), p.extends.clone(), bytes_of(&p.components)?)))
                .collect::<Result<_, SceneError>>()?,
            tables,
        };
        // The exact size first (a pass that copies nothing), so the bytes
        // are written once into one allocation of the right size: a
        // guess that falls short doubles the largest buffer of a save.
        let size = postcard::serialize_with_flavor(&doc, postcard::ser_flavors::Size::default())
            .map_err(encode_error)?;
        let mut out = Vec::with_capacity(MAGIC.len() + size);
        out.extend_from_slice(MAGIC);
        write_postcard(&doc, &mut out).map_err(encode_error)?;
        Ok(out)
    }
}
