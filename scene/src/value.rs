//! One component value of a scene, in whichever form it was read or saved,
//! and the serde forms of [`Entity`] and [`DynamicComponent`].
//!
//! Decoding a value on its own ([`SceneValue::decode`]) has two phases:
//! first the format's deserializer runs bare; only if that fails is the
//! value decoded again with the field-path tracker (`decode_tracked`, one
//! step per form: `tracked_ron`, `tracked_json`, `tracked_binary`), to
//! say which field is wrong and where. Why: tracking costs about a third
//! of a successful decode, and almost every value decodes; the error path
//! can afford to read a value twice.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_content::Value as Content;

use super::ColumnBytes;
use super::doc::Place;
use super::error::{Location, SceneError, Where};
use mosaic::Entity;
use mosaic::{ComponentSchema, DynamicComponent, FieldType, FieldValue};

/// Where a text scene's source lives, with its line table (for locations).
pub(crate) struct Source {
    pub text: String,
    /// RON or JSON.
    pub format: Format,
    /// Where each line starts: found on the first error's location (a
    /// file that loads never needs it).
    line_starts: std::sync::OnceLock<Vec<usize>>,
    /// The extensions a RON file enables with `#![enable(...)]` (beyond the
    /// scene defaults): each value is decoded on its own, with them.
    pub ron_extensions: ron::extensions::Extensions,
}

/// Short: a scene holds one `Arc<Source>` per value, and printing the
/// whole file for each would make a scene's `Debug` quadratic in its size.
impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Source({} bytes)", self.text.len())
    }
}

impl Source {
    pub fn new(
        text: &str,
        format: Format,
        ron_extensions: ron::extensions::Extensions,
    ) -> Arc<Source> {
        Arc::new(Source {
            text: text.to_owned(),
            format,
            line_starts: std::sync::OnceLock::new(),
            ron_extensions,
        })
    }

    /// The 1-based line and column of byte `offset`.
    pub fn location(&self, offset: usize) -> Location {
        let line_starts = self.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(self.text.match_indices('\n').map(|(i, _)| i + 1))
                .collect()
        });
        let line = line_starts.partition_point(|&s| s <= offset) - 1;
        let start = line_starts[line];
        let column = self
            .text
            .get(start..offset)
            .map_or(1, |s| s.chars().count() + 1);
        Location {
            line: line + 1,
            column,
        }
    }

    /// The location of a ron error at `p` in `text`, a part of this source
    /// starting at byte `base`: the offending token's, past the whitespace
    /// and comments before it (where ron's position can be).
    pub fn ron_error_at(&self, base: usize, text: &str, p: ron::error::Position) -> Location {
        let offset = skip_blank(text, offset_of(text, p.line, p.col));
        self.location(base + offset)
    }
}

/// Where a part of a scene is, for errors: known, or a place in a text
/// file (found when an error needs it).
#[derive(Clone, Debug)]
pub(crate) enum Spot {
    Known(Where),
    Text { source: Arc<Source>, place: Place },
}

impl Spot {
    pub fn at(&self) -> Where {
        match self {
            Spot::Known(at) => at.clone(),
            Spot::Text { source, place } => text_at(source, *place),
        }
    }

    /// Where `place`, another part of the same body, is (a text file), or
    /// where this spot is (a binary one: it names the entity or prefab).
    pub fn at_part(&self, place: Place) -> Where {
        match self {
            Spot::Known(at) => at.clone(),
            Spot::Text { source, .. } => text_at(source, place),
        }
    }
}

/// Where `place` starts in `source` (walking the file to find it).
pub(crate) fn text_at(source: &Source, place: Place) -> Where {
    super::doc::locate(source, place).map_or(Where::Unknown, |offset| {
        Where::Text(source.location(offset))
    })
}

/// The formats a scene is read from and written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Ron,
    Json,
    Binary,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Ron => "RON",
            Format::Json => "JSON",
            Format::Binary => "binary",
        }
    }
}

/// One serialised value (a component's or a resource's).
#[derive(Clone, Debug)]
pub(crate) enum SceneValue {
    /// A value of a RON or JSON file, by its place in the document: the
    /// file is walked once when the scene is loaded, each value decoded
    /// with its type as the walk meets it (see `doc`).
    Text { source: Arc<Source>, place: Place },
    /// The postcard bytes of the value (binary scenes).
    Binary(Vec<u8>),
    /// A value of a RON or JSON file decoded as the file was read
    /// (`Scene::from_ron_str_with`), kept as its postcard bytes, and its
    /// place in the file (for errors, and writing the file back).
    Read {
        /// Its range of the buffer that holds every value of the file.
        bytes: ColumnBytes,
        source: Arc<Source>,
        place: Place,
    },
    /// The value in the serde data model (saved from a world, or resolved).
    Content(Content<'static>),
}

/// Decodes the RON value at byte `start` of `source` (the rest of the
/// file after it is not read), with the file's extensions; an error is
/// placed at the offending token, in the whole file.
fn tracked_ron<S, V>(seed: S, source: &Source, start: usize) -> Result<V, DecodeError>
where
    S: for<'de> DeserializeSeed<'de, Value = V>,
{
    let mut track = serde_path_to_error::Track::new();
    let text = &source.text[start..];
    let spanned =
        |e: ron::error::SpannedError| Where::Text(source.ron_error_at(start, text, e.span.start));
    let options = super::text::ron_options().with_default_extension(source.ron_extensions);
    let mut de =
        ron::Deserializer::from_str_with_options(text, &options).map_err(|e| DecodeError {
            message: e.code.to_string(),
            path: String::new(),
            at: spanned(e),
        })?;
    seed.deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track))
        .map_err(|e| {
            let e = de.span_error(e);
            DecodeError {
                message: e.code.to_string(),
                path: field_path(track),
                at: spanned(e),
            }
        })
}

/// Decodes the JSON value at byte `start` of `source`; a value `whole`
/// (on its own, as reflection's JSON) must end with the text, one in a
/// scene file is followed by the rest of the file.
fn tracked_json<S, V>(seed: S, source: &Source, start: usize, whole: bool) -> Result<V, DecodeError>
where
    S: for<'de> DeserializeSeed<'de, Value = V>,
{
    let mut track = serde_path_to_error::Track::new();
    let text = &source.text[start..];
    let mut de = serde_json::Deserializer::from_str(text);
    let result = seed.deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track));
    let result = result.and_then(|v| if whole { de.end().map(|()| v) } else { Ok(v) });
    result.map_err(|e| DecodeError {
        message: strip_json_position(&e),
        path: field_path(track),
        at: Where::Text(source.location(start + json_offset(text, e.line(), e.column()))),
    })
}

/// Decodes a value's postcard bytes, which it must fill exactly (bytes
/// left over mean the type read is not the type written).
fn tracked_binary<S, V>(seed: S, bytes: &[u8]) -> Result<V, DecodeError>
where
    S: for<'de> DeserializeSeed<'de, Value = V>,
{
    let mut track = serde_path_to_error::Track::new();
    let mut de = super::depth::deserializer(bytes);
    let value = seed
        .deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track))
        .map_err(|e| DecodeError {
            message: super::depth::message(&e),
            path: field_path(track),
            at: Where::Unknown,
        })?;
    let message = match de.finalize() {
        Ok([]) => return Ok(value),
        Ok(rest) => format!("{} bytes left over after the value", rest.len()),
        Err(e) => e.to_string(),
    };
    Err(DecodeError {
        message,
        path: String::new(),
        at: Where::Unknown,
    })
}

/// The field path `track` recorded: `"x"`, `"inner.y"`, or empty for the
/// value as a whole (which serde_path_to_error writes as `"."`).
fn field_path(track: serde_path_to_error::Track) -> String {
    let path = track.path().to_string();
    if path == "." { String::new() } else { path }
}

/// A value failed to decode: the serde message, the field path and the
/// location inside the value's own text.
pub(crate) struct DecodeError {
    pub message: String,
    pub path: String,
    pub at: Where,
}

/// How many entity references this thread has decoded (to catch types
/// that hold entities but were registered without `map_entities`): the
/// core's count of entities deserialised.
pub(crate) fn entity_refs_decoded() -> u64 {
    Entity::deserialized_on_this_thread()
}

/// The entity a scene id stands for until it is mapped (see
/// [`Entity::from_scene_id`]).
pub(crate) fn scene_key(id: u64) -> Entity {
    Entity::from_scene_id(id)
}

/// The scene id a placeholder or real handle came from.
pub(crate) fn scene_id(key: Entity) -> u64 {
    key.scene_id()
}

impl SceneValue {
    /// Where the value starts in its file (found by walking the file:
    /// for errors only).
    pub fn at(&self) -> Where {
        match self {
            SceneValue::Text { source, place } | SceneValue::Read { source, place, .. } => {
                text_at(source, *place)
            }
            _ => Where::Unknown,
        }
    }

    /// Decodes the value with `seed`. The first try runs the format's
    /// deserializer bare; only a value that fails is decoded again with the
    /// field-path tracker, which costs a third of a successful decode.
    pub fn decode<S, V>(&self, seed: S) -> Result<V, DecodeError>
    where
        S: Clone + for<'de> DeserializeSeed<'de, Value = V>,
    {
        let fast = match self {
            // A value on its own (reflection's JSON).
            SceneValue::Text {
                source,
                place: Place::Whole,
            } => {
                let mut de = serde_json::Deserializer::from_str(&source.text);
                seed.clone()
                    .deserialize(&mut de)
                    .ok()
                    .filter(|_| de.end().is_ok())
            }
            // Only a value of a scene that failed in the loader's walk is
            // decoded on its own, to say where and why.
            SceneValue::Text { .. } => None,
            SceneValue::Binary(_) | SceneValue::Read { .. } => {
                let mut de = super::depth::deserializer(self.postcard().unwrap_or_default());
                seed.clone()
                    .deserialize(&mut de)
                    .ok()
                    .filter(|_| matches!(de.finalize(), Ok([])))
            }
            SceneValue::Content(content) => seed
                .clone()
                .deserialize(serde_content::Deserializer::new(content.clone()))
                .ok(),
        };
        match fast {
            Some(value) => Ok(value),
            None => self.decode_tracked(seed),
        }
    }

    /// Decodes the value with `seed`, tracking the field path for errors:
    /// each form has its own step, as each has its own deserializer and its
    /// own way to say where an error is.
    fn decode_tracked<S, V>(&self, seed: S) -> Result<V, DecodeError>
    where
        S: for<'de> DeserializeSeed<'de, Value = V>,
    {
        match self {
            SceneValue::Text { source, place } => {
                let Some(start) = super::doc::locate(source, *place) else {
                    return Err(DecodeError {
                        message: "the value is not in the file".to_owned(),
                        path: String::new(),
                        at: Where::Unknown,
                    });
                };
                if source.format == Format::Ron {
                    tracked_ron(seed, source, start)
                } else {
                    tracked_json(seed, source, start, *place == Place::Whole)
                }
            }
            SceneValue::Binary(_) | SceneValue::Read { .. } => {
                tracked_binary(seed, self.postcard().unwrap_or_default())
            }
            SceneValue::Content(content) => {
                let mut track = serde_path_to_error::Track::new();
                let de = serde_content::Deserializer::new(content.clone());
                seed.deserialize(serde_path_to_error::Deserializer::new(de, &mut track))
                    .map_err(|e| DecodeError {
                        message: e.to_string(),
                        path: field_path(track),
                        at: Where::Unknown,
                    })
            }
        }
    }

    /// The format the value was read from (`None` for a value in the serde
    /// data model: saved from a world, or resolved).
    pub fn format(&self) -> Option<Format> {
        match self {
            SceneValue::Text { source, .. } | SceneValue::Read { source, .. } => {
                Some(source.format)
            }
            SceneValue::Binary(_) => Some(Format::Binary),
            SceneValue::Content(_) => None,
        }
    }

    /// The value's postcard bytes, if it is kept as them.
    fn postcard(&self) -> Option<&[u8]> {
        match self {
            SceneValue::Binary(bytes) => Some(bytes),
            SceneValue::Read { bytes, .. } => Some(bytes.as_slice()),
            _ => None,
        }
    }

    /// A serialisable view of the value for writing it as `format`.
    pub fn writer<'a>(
        &'a self,
        component: &'a str,
        format: Format,
    ) -> Result<ValueWriter<'a>, SceneError> {
        match (self, format) {
            (SceneValue::Content(c), _) => Ok(ValueWriter::Content(c)),
            (SceneValue::Binary(_) | SceneValue::Read { .. }, Format::Binary) => {
                Ok(ValueWriter::Bytes(self.postcard().unwrap_or_default()))
            }
            (value, to) => Err(SceneError::Unresolved {
                component: component.to_owned(),
                from: value.format().map_or("memory", Format::name),
                to: to.name(),
            }),
        }
    }
}

/// A value ready to write in one format.
pub(crate) enum ValueWriter<'a> {
    Content(&'a Content<'static>),
    Bytes(&'a [u8]),
}

impl ValueWriter<'_> {
    /// The value's postcard bytes (binary scenes store each value as its
    /// own byte string, so an unknown component can be skipped).
    pub fn to_bytes(&self, component: &str) -> Result<Vec<u8>, SceneError> {
        match self {
            ValueWriter::Content(c) => postcard::to_allocvec(c).map_err(|e| SceneError::Encode {
                component: component.to_owned(),
                message: e.to_string(),
            }),
            ValueWriter::Bytes(b) => Ok(b.to_vec()),
        }
    }
}

impl Serialize for ValueWriter<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ValueWriter::Content(c) => c.serialize(serializer),
            ValueWriter::Bytes(b) => serializer.serialize_bytes(b),
        }
    }
}

/// The byte offset in `text` of 1-based `line` and 1-based `column` (in
/// characters), clamped to the text.
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start = match line {
        0 | 1 => 0,
        n => text
            .match_indices('\n')
            .nth(n - 2)
            .map_or(text.len(), |(i, _)| i + 1),
    };
    let rest = &text[line_start..];
    line_start
        + rest
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i)
}

/// `offset` moved past whitespace and comments (`//` to the end of the
/// line, `/* */`), to the next token of `text`.
pub(crate) fn skip_blank(text: &str, mut offset: usize) -> usize {
    let b = text.as_bytes();
    loop {
        while b.get(offset).is_some_and(u8::is_ascii_whitespace) {
            offset += 1;
        }
        let rest = &b[offset..];
        if rest.starts_with(b"//") {
            offset += rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        } else if rest.starts_with(b"/*") {
            match text[offset + 2..].find("*/") {
                Some(end) => offset += 2 + end + 2,
                None => return offset,
            }
        } else {
            return offset;
        }
    }
}

/// The byte offset in `text` of serde_json's error position: 1-based line,
/// and 1-based column counted in bytes (0 before the line's first byte).
pub(crate) fn json_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start = match line {
        0 | 1 => 0,
        n => text
            .match_indices('\n')
            .nth(n - 2)
            .map_or(text.len(), |(i, _)| i + 1),
    };
    let mut offset = (line_start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// serde_json's message without its own " at line L column C" suffix (the
/// scene error gives the position in the whole file instead).
pub(crate) fn strip_json_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    }
}

/// Serialises `value` into the serde data model.
pub(crate) fn to_content<T: Serialize + ?Sized>(value: &T) -> Result<Content<'static>, String> {
    serde_content::Serializer::new()
        .serialize(value)
        .map(Content::into_owned)
        .map_err(|e| e.to_string())
}

// ----- Entity ---------------------------------------------------------------

// `Entity`'s `Serialize` and `Deserialize` are the core's (its `serde`
// feature): an entity is written as its scene id, and any `u64` reads back.

// ----- DynamicComponent -------------------------------------------------------

/// A runtime-defined component, serialised as a map from field name to
/// value (the core's `DynamicComponent` knows nothing of serde).
#[derive(Clone, Copy)]
pub(crate) struct SerDynamic<'a>(pub &'a DynamicComponent);

impl Serialize for SerDynamic<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.fields().len()))?;
        for (name, value) in self.0.fields() {
            match value {
                FieldValue::Bool(v) => map.serialize_entry(name, v)?,
                FieldValue::Int(v) => map.serialize_entry(name, v)?,
                FieldValue::Float(v) => map.serialize_entry(name, v)?,
                FieldValue::Str(v) => map.serialize_entry(name, v)?,
                FieldValue::Entity(v) => map.serialize_entry(name, v)?,
            }
        }
        map.end()
    }
}

/// Reads a [`DynamicComponent`] of one schema: a map of its fields.
#[derive(Clone, Copy)]
pub(crate) struct DynamicSeed<'a>(pub &'a ComponentSchema);

impl<'de> DeserializeSeed<'de> for DynamicSeed<'_> {
    type Value = DynamicComponent;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<DynamicComponent, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DynamicSeed<'_> {
    type Value = DynamicComponent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a map of the fields of `{}`", self.0.name())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DynamicComponent, A::Error> {
        let schema = self.0;
        let mut values: Vec<(String, FieldValue)> = Vec::new();
        // Many fields (a hostile schema may have tens of thousands): each
        // key found by hash rather than by a scan of the fields.
        let index: Option<rustc_hash::FxHashMap<&str, FieldType>> = (schema.fields().len() > 16)
            .then(|| {
                let mut index = rustc_hash::FxHashMap::default();
                for (n, ty) in schema.fields() {
                    index.entry(n.as_str()).or_insert(*ty);
                }
                index
            });
        while let Some(name) = map.next_key::<String>()? {
            let ty = match &index {
                Some(index) => index.get(name.as_str()).copied(),
                None => schema.field_type(&name),
            };
            let Some(ty) = ty else {
                let expected: Vec<&str> = schema.fields().iter().map(|(n, _)| n.as_str()).collect();
                return Err(de::Error::custom(format_args!(
                    "unknown field `{name}`, expected one of: {}",
                    expected.join(", ")
                )));
            };
            let value = map.next_value_seed(FieldSeed(ty))?;
            values.push((name, value));
        }
        schema
            .instantiate(values.iter().map(|(n, v)| (n.as_str(), v.clone())))
            .map_err(de::Error::custom)
    }
}

/// Reads one field value of a known type.
struct FieldSeed(FieldType);

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = FieldValue;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FieldValue, D::Error> {
        Ok(match self.0 {
            FieldType::Bool => FieldValue::Bool(bool::deserialize(d)?),
            FieldType::Int => FieldValue::Int(i64::deserialize(d)?),
            FieldType::Float => FieldValue::Float(f64::deserialize(d)?),
            FieldType::Str => FieldValue::Str(String::deserialize(d)?),
            FieldType::Entity => FieldValue::Entity(Entity::deserialize(d)?),
        })
    }
}

/// Decodes one value from the front of `bytes` (postcard) with `seed`;
/// returns it and the bytes after it. As [`SceneValue::decode`], only a
/// value that fails is decoded again with the field-path tracker.
pub(crate) fn take_postcard<'b, S, V>(
    bytes: &'b [u8],
    seed: S,
) -> Result<(V, &'b [u8]), DecodeError>
where
    S: Clone + for<'de> DeserializeSeed<'de, Value = V>,
{
    let mut de = super::depth::deserializer(bytes);
    if let Ok(value) = seed.clone().deserialize(&mut de) {
        if let Ok(rest) = de.finalize() {
            return Ok((value, rest));
        }
    }
    let mut track = serde_path_to_error::Track::new();
    let mut de = super::depth::deserializer(bytes);
    let result = seed.deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track));
    let fail = |message: String, path: String| DecodeError {
        message,
        path,
        at: Where::Unknown,
    };
    match result {
        Ok(value) => de
            .finalize()
            .map(|rest| (value, rest))
            .map_err(|e| fail(super::depth::message(&e), String::new())),
        Err(e) => Err(fail(super::depth::message(&e), field_path(track))),
    }
}
