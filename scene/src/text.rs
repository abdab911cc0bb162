//! Reading and writing the scene document in each format.
//!
//! Component values are not decoded here: reading a text file checks the
//! document's shape with every value skipped, and the scene keeps the file
//! (loading walks it once, decoding each value with its type, see `doc`);
//! the binary form keeps each value's own bytes.
//!
//! Reading a text file (`parse_ron`, `parse_json`) goes in three phases:
//!
//! 1. **Framed**: a byte-order mark dropped, RON's `#![enable(...)]`
//!    attributes kept, a JSON file nested too deep refused
//!    (`json_too_deep`) before serde_json could recurse into it.
//! 2. **Shaped**: the document read as a [`Doc`], every value skipped
//!    (`IgnoredAny`): names, ids, prefabs' `extends` and schemas checked.
//! 3. **Built** (`build`): each value becomes its place in the file.
//!
//! Reading a binary file (`parse_binary`): the header (`bin_body`), the
//! document borrowing from the input (`read_bin_doc`), each column's bytes
//! as a range (`column_ranges`), then the scene, whose columns all share
//! the input buffer (`shared_tables`).
//!
//! Why: a syntax error is found when the file is read, but a value's type
//! is only known when it is loaded with a registry; decoding each value
//! once, then, and never copying a binary column, keeps reading cheap.
//!
//! Writing text (`to_ron_string`, `to_json_string`) first builds a
//! [`DocOut`] of writers over the scene's values (`doc_out`), so a value
//! the format cannot take fails before any output, then lets the format's
//! serializer walk it; a table's values are decoded one at a time from its
//! columns as they are written. Writing binary (`to_binary`) gathers
//! entities kept one by one into runs (`listed_runs`), sizes the document
//! exactly and writes it once into one allocation (`framed`): its head
//! with postcard, its tables by hand (`write_tables`, the bytes postcard
//! writes, with each table's ids and column bytes copied as they are).

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use ron::extensions::Extensions;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::columns::{Codec, write_postcard};
use super::doc::Place;
use super::error::{SceneError, Where};
use super::value::{Format, SceneValue, Source, Spot, ValueWriter, json_offset};
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

/// The document with every value skipped: what reading a file checks and
/// keeps (names, ids, prefabs' `extends`, schemas). Values are decoded
/// when the scene is loaded, in one walk over the file (see `doc`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    #[serde(default)]
    schemas: Ordered<String, Ordered<String, String>>,
    #[serde(default)]
    resources: Ordered<String, IgnoredAny>,
    #[serde(default)]
    prefabs: Ordered<String, MapOnly<PrefabDoc>>,
    #[serde(default)]
    entities: Vec<MapOnly<EntityDoc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PrefabDoc {
    #[serde(default)]
    extends: Option<String>,
    #[serde(default)]
    components: Ordered<String, IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntityDoc {
    id: Id,
    #[serde(default)]
    prefab: Option<String>,
    #[serde(default)]
    components: Ordered<String, IgnoredAny>,
}

/// The names of the document's structs, as RON errors give them and as a
/// file under `#![enable(explicit_struct_names)]` writes them:
/// `Scene(entities: [Entity(id: 1)], prefabs: {"Tree": Prefab()})`. Both
/// readers (this shape check and the loader's walk, `doc`) use them.
pub(crate) const SCENE_STRUCT: &str = "Scene";
/// See [`SCENE_STRUCT`].
pub(crate) const PREFAB_STRUCT: &str = "Prefab";
/// See [`SCENE_STRUCT`].
pub(crate) const ENTITY_STRUCT: &str = "Entity";

/// A struct of the document ([`Doc`], [`PrefabDoc`], [`EntityDoc`]) read
/// only as a map (JSON) or struct (RON): serde's derive also reads a
/// struct from a sequence of its fields, which would take the JSON `[]`
/// for a scene, or `[1]` for an entity, unlike the walk that loads it.
pub(crate) struct MapOnly<T>(pub T);

/// The name and fields serde's derive gives a struct of the document.
trait DocStruct {
    const NAME: &'static str;
    const FIELDS: &'static [&'static str];
}

impl DocStruct for Doc {
    const NAME: &'static str = SCENE_STRUCT;
    const FIELDS: &'static [&'static str] = &["schemas", "resources", "prefabs", "entities"];
}

impl DocStruct for PrefabDoc {
    const NAME: &'static str = PREFAB_STRUCT;
    const FIELDS: &'static [&'static str] = &["extends", "components"];
}

impl DocStruct for EntityDoc {
    const NAME: &'static str = ENTITY_STRUCT;
    const FIELDS: &'static [&'static str] = &["id", "prefab", "components"];
}

impl<'de, T: Deserialize<'de> + DocStruct> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + DocStruct> Visitor<'de> for MapVisitor<T> {
            type Value = MapOnly<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "struct {}", T::NAME)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(MapOnly)
            }
        }
        d.deserialize_struct(T::NAME, T::FIELDS, MapVisitor(PhantomData))
    }
}

/// An entity id: any `u64`, exactly.
pub(crate) struct Id(pub u64);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an entity id (a whole number from 0 to 2^64 - 1)")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Id, E> {
                u64::try_from(v)
                    .map(Id)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Id, E> {
                u64::try_from(v)
                    .map(Id)
                    .map_err(|_| E::custom(format_args!("entity id {v} is larger than 2^64 - 1")))
            }
            fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Id, E> {
                u64::try_from(v)
                    .map(Id)
                    .map_err(|_| E::custom(format_args!("entity id {v} is not from 0 to 2^64 - 1")))
            }
        }
        d.deserialize_any(IdVisitor)
    }
}

/// A schema from its name and `(field, type name)` pairs, as files write
/// it; `at` says where it is, for errors.
fn schema_of(
    name: String,
    fields: Vec<(String, String)>,
    at: impl Fn() -> Where,
) -> Result<ComponentSchema, SceneError> {
    let mut schema = ComponentSchema::new(name);
    for (field, ty) in fields {
        let ty: FieldType = ty.parse().map_err(|error| SceneError::Schema {
            component: schema.name().to_owned(),
            error,
            at: at(),
        })?;
        schema = schema.field(field, ty);
    }
    Ok(schema)
}

/// RON options for scenes: `Some` may be left out (`prefab: "Tree"`).
pub(crate) fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// Turns a checked document into a scene: each value is its place in
/// `source` (decoded only when loaded, in one walk over the file), each
/// part its place too (located only when an error needs it).
fn build(doc: Doc, source: &Arc<Source>) -> Result<Scene, SceneError> {
    let spot = |place| Spot::Text {
        source: Arc::clone(source),
        place,
    };
    let schemas = text_schemas(doc.schemas, spot)?;
    let prefabs = doc
        .prefabs
        .0
        .into_iter()
        .enumerate()
        .map(|(i, (name, MapOnly(p)))| Prefab {
            name,
            extends: p.extends,
            components: text_components(p.components, source, |j| Place::PrefabValue(i, j)),
            at: spot(Place::PrefabBody(i)),
        })
        .collect();
    let entities = doc
        .entities
        .into_iter()
        .enumerate()
        .map(|(i, MapOnly(e))| SceneEntity {
            id: e.id.0,
            prefab: e.prefab,
            components: text_components(e.components, source, |j| Place::EntityValue(i, j)),
            at: spot(Place::EntityId(i)),
        })
        .collect();
    Ok(Scene {
        schemas,
        resources: text_components(doc.resources, source, Place::Resource),
        prefabs,
        entities,
        tables: Vec::new(),
        text: Some(Arc::clone(source)),
        registry: None,
        skipped: Default::default(),
    })
}

/// The schemas of a text document, each parsed (a bad field type is an
/// error at the schema's place in the file).
fn text_schemas(
    schemas: Ordered<String, Ordered<String, String>>,
    spot: impl Fn(Place) -> Spot,
) -> Result<Vec<(ComponentSchema, Spot)>, SceneError> {
    let mut out = Vec::with_capacity(schemas.0.len());
    for (i, (name, fields)) in schemas.0.into_iter().enumerate() {
        let at = spot(Place::SchemaBody(i));
        out.push((schema_of(name, fields.0, || at.at())?, at));
    }
    Ok(out)
}

/// A map of values as components, the `j`th at `place(j)` in `source`.
fn text_components(
    list: Ordered<String, IgnoredAny>,
    source: &Arc<Source>,
    place: impl Fn(usize) -> Place,
) -> Vec<SceneComponent> {
    list.0
        .into_iter()
        .enumerate()
        .map(|(j, (name, _))| SceneComponent {
            name,
            value: SceneValue::Text {
                source: Arc::clone(source),
                place: place(j),
            },
        })
        .collect()
}

/// `text` without a leading byte-order mark (some editors write one; it is
/// not part of the document, and locations are counted without it).
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// The source of a RON scene: its text (without a byte-order mark) and
/// the extensions its attributes enable.
pub(crate) fn ron_source(text: &str) -> Arc<Source> {
    let text = without_bom(text);
    // The attributes at the top of the file (read when a deserializer is
    // made; a bad one is reported by the parse that follows).
    let extensions = ron::Deserializer::from_str_with_options(text, &ron_options())
        .map_or(Extensions::empty(), |de| de.extensions())
        - ron_options().default_extensions;
    Source::new(text, Format::Ron, extensions)
}

pub(crate) fn parse_ron(text: &str) -> Result<Scene, SceneError> {
    let source = ron_source(text);
    let MapOnly(doc): MapOnly<Doc> =
        ron_options()
            .from_str(&source.text)
            .map_err(|e| SceneError::Syntax {
                format: "RON",
                message: e.code.to_string(),
                at: Where::Text(source.ron_error_at(0, &source.text, e.span.start)),
            })?;
    build(doc, &source)
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

/// The source of a JSON scene: its text (without a byte-order mark),
/// refused if nested too deep to read safely.
pub(crate) fn json_source(text: &str) -> Result<Arc<Source>, SceneError> {
    let source = Source::new(without_bom(text), Format::Json, Extensions::empty());
    if let Some(offset) = json_too_deep(&source.text) {
        return Err(SceneError::Syntax {
            format: "JSON",
            message: format!("nested more than {JSON_MAX_DEPTH} levels deep"),
            at: Where::Text(source.location(offset)),
        });
    }
    Ok(source)
}

pub(crate) fn parse_json(text: &str) -> Result<Scene, SceneError> {
    let source = json_source(text)?;
    let MapOnly(doc): MapOnly<Doc> =
        serde_json::from_str(&source.text).map_err(|e| SceneError::Syntax {
            format: "JSON",
            message: strip_position(&e),
            at: Where::Text(source.location(json_offset(&source.text, e.line(), e.column()))),
        })?;
    build(doc, &source)
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
/// strings alike; this reads it in one piece).
struct Bytes<'a>(&'a [u8]);

/// For the test that `write_tables` writes what postcard would.
#[cfg(test)]
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
/// every entity's value, back to back. (Written by `write_tables`.)
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct BinTable<'a> {
    /// Owned when read (varints cannot be borrowed).
    ids: Cow<'a, [u64]>,
    prefab: Option<String>,
    #[serde(borrow)]
    columns: Vec<(String, Bytes<'a>)>,
}

/// Consecutive entities of a scene's list written as one table: ids,
/// prefab, and each component's name and bytes.
type ListedRun<'a> = (Vec<u64>, Option<&'a str>, Vec<(&'a str, Vec<u8>)>);

/// The binary document: names and structure; prefab and resource values
/// each as its own bytes, entities as tables. Written as a [`BinHead`]
/// then its tables (`write_tables`).
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct BinDoc<'a> {
    schemas: Vec<(String, Vec<(String, String)>)>,
    resources: Vec<(String, Vec<u8>)>,
    prefabs: Vec<(String, Option<String>, BinValues)>,
    #[serde(borrow)]
    tables: Vec<BinTable<'a>>,
}

/// A [`BinDoc`] without its tables: postcard writes a struct as its
/// fields back to back, so these bytes followed by the tables' are the
/// document's.
#[derive(Serialize)]
struct BinHead {
    schemas: Vec<(String, Vec<(String, String)>)>,
    resources: Vec<(String, Vec<u8>)>,
    prefabs: Vec<(String, Option<String>, BinValues)>,
}

/// A table of a binary scene being read: ids, prefab, and per component
/// its name and the range of its bytes in the input.
type ReadTable = (Vec<u64>, Option<String>, Vec<(String, Range<usize>)>);

/// Reads a binary scene in four steps: the header (name and version), the
/// document (postcard, borrowing from `buffer`), the ranges of `buffer`
/// each column's bytes fill, then the scene, whose columns all share
/// `buffer` so that no value's bytes are copied.
pub(crate) fn parse_binary(buffer: Vec<u8>) -> Result<Scene, SceneError> {
    let bytes = buffer.as_slice();
    let doc = read_bin_doc(bin_body(bytes)?)?;
    let tables = column_ranges(doc.tables, bytes);
    let schemas = bin_schemas_in(doc.schemas)?;
    let resources = bin_components(doc.resources);
    let prefabs = bin_prefabs(doc.prefabs);
    // Nothing borrows `buffer` any more: the columns share it.
    let buffer = Arc::new(buffer);
    Ok(Scene {
        schemas,
        resources,
        prefabs,
        entities: Vec::new(),
        tables: shared_tables(tables, &buffer),
        text: None,
        registry: None,
        skipped: Default::default(),
    })
}

/// A binary scene's syntax error (binary files have no line to point at).
fn bin_syntax(message: String) -> SceneError {
    SceneError::Syntax {
        format: "binary",
        message,
        at: Where::Unknown,
    }
}

/// The bytes after the header, or an error naming what the header is
/// instead: another version of the format (said, so the user knows to
/// upgrade) or not a scene at all.
fn bin_body(bytes: &[u8]) -> Result<&[u8], SceneError> {
    bytes.strip_prefix(MAGIC).ok_or_else(|| {
        let name = &MAGIC[..MAGIC.len() - 1];
        match bytes.strip_prefix(name).and_then(|rest| rest.first()) {
            Some(version) => bin_syntax(format!(
                "binary scene format version {version} (this version of mosaic reads version {})",
                MAGIC[MAGIC.len() - 1]
            )),
            None => bin_syntax("not a mosaic binary scene (wrong header)".to_owned()),
        }
    })
}

/// The document of `body`, which it must fill exactly: bytes left over
/// mean a damaged or concatenated file, refused rather than ignored.
fn read_bin_doc(body: &[u8]) -> Result<BinDoc<'_>, SceneError> {
    let (doc, rest): (BinDoc<'_>, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| bin_syntax(e.to_string()))?;
    if !rest.is_empty() {
        return Err(bin_syntax(format!(
            "{} bytes left over after the scene",
            rest.len()
        )));
    }
    Ok(doc)
}

/// Each table with its columns' bytes as ranges of `bytes`, found from
/// where each borrowed slice starts: ranges outlive the borrow, so the
/// buffer can then be moved into the `Arc` the columns share.
fn column_ranges(tables: Vec<BinTable<'_>>, bytes: &[u8]) -> Vec<ReadTable> {
    tables
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
        .collect()
}

/// The schemas of a binary scene, each parsed (a bad field type is an
/// error naming the schema, as in a text file).
fn bin_schemas_in(
    schemas: Vec<(String, Vec<(String, String)>)>,
) -> Result<Vec<(ComponentSchema, Spot)>, SceneError> {
    let mut out = Vec::new();
    for (name, fields) in schemas {
        let at = Where::Binary(format!("schema `{name}`"));
        out.push((schema_of(name, fields, || at.clone())?, Spot::Known(at)));
    }
    Ok(out)
}

/// Values kept one by one (resources', prefabs'), each its own bytes:
/// decoded only when loaded, with the type the name resolves to then.
fn bin_components(list: BinValues) -> Vec<SceneComponent> {
    list.into_iter()
        .map(|(name, bytes)| SceneComponent {
            name,
            value: SceneValue::Binary(bytes),
        })
        .collect()
}

/// The prefabs of a binary scene, each named in errors by its name (a
/// binary file has no position to give).
fn bin_prefabs(prefabs: Vec<(String, Option<String>, BinValues)>) -> Vec<Prefab> {
    prefabs
        .into_iter()
        .map(|(name, extends, list)| Prefab {
            at: Spot::Known(Where::Binary(format!("prefab `{name}`"))),
            name,
            extends,
            components: bin_components(list),
        })
        .collect()
}

/// The scene's tables, every column a range of the one shared `buffer`
/// (reading a binary scene copies no value's bytes).
fn shared_tables(tables: Vec<ReadTable>, buffer: &Arc<Vec<u8>>) -> Vec<SceneTable> {
    tables
        .into_iter()
        .map(|(ids, prefab, columns)| SceneTable {
            ids,
            prefab,
            columns: columns
                .into_iter()
                .map(|(name, range)| TableColumn {
                    name,
                    bytes: ColumnBytes {
                        buffer: Arc::clone(buffer),
                        range,
                    },
                })
                .collect(),
        })
        .collect()
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
    format!(
        "{f} cannot be written as JSON (JSON has no NaN or infinity; RON and binary scenes keep them)"
    )
}

/// The scene as a serialisable document for `format`, every value a
/// writer over what the scene holds (nothing decoded or copied up front).
/// Built before anything is written, so a value the format cannot take
/// (unresolved, or a non-finite float in JSON) fails before any output.
fn doc_out(scene: &Scene, format: Format) -> Result<DocOut<'_>, SceneError> {
    Ok(DocOut {
        schemas: schemas_out(&scene.schemas),
        resources: writers(&scene.resources, format)?,
        prefabs: scene
            .prefabs
            .iter()
            .map(|p| {
                let components = writers(&p.components, format)?;
                Ok((
                    p.name.as_str(),
                    PrefabOut {
                        extends: p.extends.as_deref(),
                        components,
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
                .map(|t| table_out(scene, t, format))
                .collect::<Result<_, SceneError>>()?,
        },
    })
}

/// The schemas as `(name, [(field, type name)])`, as text files write them.
fn schemas_out(schemas: &[(ComponentSchema, Spot)]) -> Vec<(&str, Vec<(&str, &'static str)>)> {
    schemas
        .iter()
        .map(|(s, _)| {
            let fields = s.fields().iter().map(|(n, t)| (n.as_str(), t.name()));
            (s.name(), fields.collect())
        })
        .collect()
}

/// A table written entity by entity: each column gets the codec that
/// decodes its bytes (its type's, or its schema's) and a cursor at its
/// first value. A column whose name resolves to neither cannot be written
/// as text, and is an error naming it.
fn table_out<'a>(
    scene: &'a Scene,
    table: &'a SceneTable,
    format: Format,
) -> Result<TableOut<'a>, SceneError> {
    let columns = table.columns.iter().map(|c| {
        let codec = Codec::find(
            &c.name,
            scene.registry.as_ref(),
            scene.schemas.iter().map(|(s, _)| s),
        )
        .ok_or_else(|| SceneError::Unresolved {
            component: c.name.clone(),
            from: Format::Binary.name(),
            to: format.name(),
        })?;
        Ok((c.name.as_str(), codec, Cell::new(c.bytes.as_slice())))
    });
    Ok(TableOut {
        json: format == Format::Json,
        refused: Default::default(),
        ids: &table.ids,
        prefab: table.prefab.as_deref(),
        columns: columns.collect::<Result<_, SceneError>>()?,
    })
}

fn encode_error(e: impl fmt::Display) -> SceneError {
    SceneError::Encode {
        component: "scene".to_owned(),
        message: e.to_string(),
    }
}

impl Scene {
    /// The scene as RON, one line per entity (and per prefab, resource and
    /// schema) under each section: readable, and a change to one entity is
    /// a change to one line of a diff. A scene read from a RON file and not
    /// [resolved](Scene::resolve) is written as the file was (its values
    /// are decoded only when loaded).
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
    ///
    /// // Saved from a world: each entity on a line of its own.
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Position { x: f32, y: f32 }
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Position>();
    /// let mut world = World::new();
    /// world.spawn(Position { x: 1.0, y: 2.0 });
    /// world.spawn(Position { x: 3.0, y: 4.0 });
    /// let text = Scene::from_world(&world, &registry).unwrap().to_ron_string().unwrap();
    /// let lines: Vec<&str> = text.lines().filter(|l| l.contains("Position")).collect();
    /// assert_eq!(lines.len(), 2);
    /// assert!(lines[1].contains(r#""Position": (x: 3.0, y: 4.0)"#));
    /// ```
    pub fn to_ron_string(&self) -> Result<String, SceneError> {
        if let Some(text) = self.as_read(Format::Ron) {
            return Ok(text.to_owned());
        }
        let doc = doc_out(self, Format::Ron)?;
        // Depth 1 is the document, depth 2 its sections' lists: anything
        // deeper (an entity, a prefab) is written on one line. Besides
        // diffs, it saves reading time: about 8% of a 1,000-entity round
        // trip was ron skipping the indentation of one line per field.
        let config = ron::ser::PrettyConfig::new()
            .struct_names(false)
            .depth_limit(2);
        ron::ser::to_string_pretty(&doc, config).map_err(encode_error)
    }

    /// The text of the file the scene was read from, if it was read from
    /// `format` and holds values not [resolved](Scene::resolve): values
    /// still in the file (decoded only when loaded), or decoded from it as
    /// it was read ([`Scene::from_ron_str_with`]). The file is what they
    /// are.
    fn as_read(&self, format: Format) -> Option<&str> {
        let source = self.text.as_ref()?;
        let unresolved = self
            .values()
            .any(|c| matches!(c.value, SceneValue::Text { .. } | SceneValue::Read { .. }));
        (unresolved && source.format == format).then_some(source.text.as_str())
    }

    /// The scene as pretty JSON (a scene read from a JSON file and not
    /// [resolved](Scene::resolve): as the file was).
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
        if let Some(text) = self.as_read(Format::Json) {
            return Ok(text.to_owned());
        }
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
        // Entities kept one by one (read from text, resolved) become tables
        // too, so a binary file has one shape for entities.
        let listed = listed_runs(&self.entities)?;
        let head = BinHead {
            schemas: bin_schemas_out(&self.schemas),
            resources: value_bytes(&self.resources)?,
            prefabs: self
                .prefabs
                .iter()
                .map(|p| {
                    Ok((
                        p.name.clone(),
                        p.extends.clone(),
                        value_bytes(&p.components)?,
                    ))
                })
                .collect::<Result<_, SceneError>>()?,
        };
        framed(&head, &listed, &self.tables)
    }
}

/// Each value's postcard bytes, by name (resources' and prefabs', which
/// are kept one by one in a binary file).
fn value_bytes(list: &[SceneComponent]) -> Result<BinValues, SceneError> {
    list.iter()
        .map(|c| {
            let w = c.value.writer(&c.name, Format::Binary)?;
            Ok((c.name.clone(), w.to_bytes(&c.name)?))
        })
        .collect()
}

/// `entities` as runs of consecutive entities with the same prefab and
/// component names, each component's values back to back: the table form
/// a binary file stores, built in one pass with one buffer per column.
fn listed_runs(entities: &[SceneEntity]) -> Result<Vec<ListedRun<'_>>, SceneError> {
    let mut listed: Vec<ListedRun<'_>> = Vec::new();
    for e in entities {
        if !listed.last().is_some_and(|run| same_run(run, e)) {
            let columns = e.components.iter().map(|c| (c.name.as_str(), Vec::new()));
            listed.push((Vec::new(), e.prefab.as_deref(), columns.collect()));
        }
        let (ids, _, columns) = listed.last_mut().expect("pushed above");
        ids.push(e.id);
        for ((_, bytes), c) in columns.iter_mut().zip(&e.components) {
            append_value(c, bytes)?;
        }
    }
    Ok(listed)
}

/// Whether `e` continues `run`: same prefab, same component names in the
/// same order (so its values append to the run's columns in step).
fn same_run((_, prefab, columns): &ListedRun<'_>, e: &SceneEntity) -> bool {
    *prefab == e.prefab.as_deref()
        && columns.len() == e.components.len()
        && columns
            .iter()
            .zip(&e.components)
            .all(|((n, _), c)| *n == c.name)
}

/// Appends `c`'s postcard bytes to its column's `bytes` (encoded from the
/// data model, or copied when the value already is postcard bytes).
fn append_value(c: &SceneComponent, bytes: &mut Vec<u8>) -> Result<(), SceneError> {
    match c.value.writer(&c.name, Format::Binary)? {
        ValueWriter::Content(content) => {
            write_postcard(content, bytes).map_err(|message| SceneError::Encode {
                component: c.name.clone(),
                message,
            })
        }
        ValueWriter::Bytes(b) => {
            bytes.extend_from_slice(b);
            Ok(())
        }
    }
}

/// Where [`write_tables`] puts the tables' bytes: counted (for the exact
/// size) or appended.
trait BinOut {
    fn byte(&mut self, byte: u8);
    fn bytes(&mut self, bytes: &[u8]);
    /// An unsigned LEB128 varint, as postcard writes integers and lengths.
    fn varint(&mut self, value: u64);
}

/// Counts the bytes it is given.
struct Count(usize);

impl BinOut for Count {
    #[inline]
    fn byte(&mut self, _: u8) {
        self.0 += 1;
    }

    #[inline]
    fn bytes(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }

    #[inline]
    fn varint(&mut self, value: u64) {
        // 7 bits a byte, and one byte for 0.
        self.0 += (u64::BITS - (value | 1).leading_zeros()).div_ceil(7) as usize;
    }
}

impl BinOut for Vec<u8> {
    #[inline]
    fn byte(&mut self, byte: u8) {
        self.push(byte);
    }

    #[inline]
    fn bytes(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    #[inline(always)]
    fn varint(&mut self, mut value: u64) {
        // Encoded in a local buffer, then appended with a copy of fixed
        // length: pushing byte by byte reloads the `Vec` after every store
        // (a `u8` may alias it), and a copy of unknown length calls
        // `memcpy`, each several times the cost of the encoding.
        fn put<const N: usize>(out: &mut Vec<u8>, buf: &[u8; 10]) {
            out.extend_from_slice(&buf[..N]);
        }
        let mut buf = [0u8; 10];
        let mut n = 0;
        while value >= 0x80 {
            buf[n] = value as u8 | 0x80;
            value >>= 7;
            n += 1;
        }
        buf[n] = value as u8;
        match n + 1 {
            1 => put::<1>(self, &buf),
            2 => put::<2>(self, &buf),
            3 => put::<3>(self, &buf),
            4 => put::<4>(self, &buf),
            5 => put::<5>(self, &buf),
            6 => put::<6>(self, &buf),
            7 => put::<7>(self, &buf),
            8 => put::<8>(self, &buf),
            9 => put::<9>(self, &buf),
            _ => put::<10>(self, &buf),
        }
    }
}

/// The tables of a binary document, as postcard writes a
/// `Vec<BinTable>` (see the test below), by hand: the runs of listed
/// entities, then the scene's own tables, whose column bytes go in as they
/// are, one copy each, with no serde call per id or per column.
fn write_tables(out: &mut impl BinOut, listed: &[ListedRun<'_>], tables: &[SceneTable]) {
    out.varint((listed.len() + tables.len()) as u64);
    for (ids, prefab, columns) in listed {
        let columns = columns.iter().map(|(n, b)| (*n, b.as_slice()));
        write_table(out, ids, *prefab, columns);
    }
    for t in tables {
        let columns = t
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.bytes.as_slice()));
        write_table(out, &t.ids, t.prefab.as_deref(), columns);
    }
}

/// One [`BinTable`]: its ids (a sequence of varints), its prefab (an
/// option of a string) and its columns (a sequence of name and bytes).
fn write_table<'a>(
    out: &mut impl BinOut,
    ids: &[u64],
    prefab: Option<&str>,
    columns: impl ExactSizeIterator<Item = (&'a str, &'a [u8])>,
) {
    out.varint(ids.len() as u64);
    for &id in ids {
        out.varint(id);
    }
    match prefab {
        None => out.byte(0),
        Some(name) => {
            out.byte(1);
            out.varint(name.len() as u64);
            out.bytes(name.as_bytes());
        }
    }
    out.varint(columns.len() as u64);
    for (name, bytes) in columns {
        out.varint(name.len() as u64);
        out.bytes(name.as_bytes());
        out.varint(bytes.len() as u64);
        out.bytes(bytes);
    }
}

/// The schemas as `(name, [(field, type name)])`, as a binary file holds
/// them.
fn bin_schemas_out(schemas: &[(ComponentSchema, Spot)]) -> Vec<(String, Vec<(String, String)>)> {
    schemas
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
        .collect()
}

/// The header and the document's bytes: `head` (postcard), then the
/// tables. The exact size first (a pass that copies nothing), so the bytes
/// are written once into one allocation of the right size: a guess that
/// falls short doubles the largest buffer of a save.
fn framed(
    head: &BinHead,
    listed: &[ListedRun<'_>],
    tables: &[SceneTable],
) -> Result<Vec<u8>, SceneError> {
    let head_size = postcard::serialize_with_flavor(head, postcard::ser_flavors::Size::default())
        .map_err(encode_error)?;
    let mut tables_size = Count(0);
    write_tables(&mut tables_size, listed, tables);
    let size = MAGIC.len() + head_size + tables_size.0;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(MAGIC);
    write_postcard(head, &mut out).map_err(encode_error)?;
    write_tables(&mut out, listed, tables);
    debug_assert_eq!(out.len(), size, "the size pass counts what is written");
    Ok(out)
}

#[cfg(test)]
mod bin_tests {
    use super::*;

    /// `framed` writes, byte for byte, what postcard writes of the whole
    /// `BinDoc` (the format files have always had), and counts it exactly.
    #[test]
    fn hand_written_tables_are_postcards() {
        let ids = [0, 1, 127, 128, 300, 1 << 32, (7 << 32) | 5, u64::MAX];
        let column = vec![7u8; 200];
        let listed: Vec<ListedRun<'_>> = vec![
            (
                vec![3, 1 << 40],
                Some("Tree"),
                vec![("A", vec![1, 2]), ("B", vec![])],
            ),
            (vec![], None, vec![]),
        ];
        let table = |ids: &[u64], prefab: Option<&str>, columns: &[(&str, &[u8])]| SceneTable {
            ids: ids.to_vec(),
            prefab: prefab.map(str::to_owned),
            columns: columns
                .iter()
                .map(|&(name, bytes)| TableColumn {
                    name: name.to_owned(),
                    bytes: ColumnBytes::owned(bytes.to_vec()),
                })
                .collect(),
        };
        let long_name = "N".repeat(130);
        let tables = vec![
            table(&ids, None, &[("Position", &column), (&long_name, &[9])]),
            table(&[42], Some(&long_name), &[]),
        ];
        let head = BinHead {
            schemas: vec![("Mana".into(), vec![("max".into(), "int".into())])],
            resources: vec![("Score".into(), vec![1, 2, 3])],
            prefabs: vec![("Tree".into(), None, vec![("A".into(), vec![4])])],
        };
        let doc = BinDoc {
            schemas: head.schemas.clone(),
            resources: head.resources.clone(),
            prefabs: head.prefabs.clone(),
            tables: listed
                .iter()
                .map(|(ids, prefab, columns)| BinTable {
                    ids: Cow::Borrowed(ids),
                    prefab: prefab.map(str::to_owned),
                    columns: columns
                        .iter()
                        .map(|(n, b)| ((*n).to_owned(), Bytes(b)))
                        .collect(),
                })
                .chain(tables.iter().map(|t| {
                    BinTable {
                        ids: Cow::Borrowed(&t.ids),
                        prefab: t.prefab.clone(),
                        columns: t
                            .columns
                            .iter()
                            .map(|c| (c.name.clone(), Bytes(c.bytes.as_slice())))
                            .collect(),
                    }
                }))
                .collect(),
        };
        let mut expected = MAGIC.to_vec();
        expected.extend(postcard::to_allocvec(&doc).unwrap());
        let written = framed(&head, &listed, &tables).unwrap();
        assert_eq!(written, expected);
    }
}
