//! Reading and writing the scene document in each format.
//!
//! Component values are not decoded here: the text formats keep each
//! value's source span (decoded later with its type, so errors point into
//! the file), and the binary form keeps each value's own bytes.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use ron::extensions::Extensions;
use serde::de::{MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::{Location, SceneError, Where};
use super::value::{json_offset, Format, SceneValue, Source, ValueWriter};
use super::{Prefab, Scene, SceneComponent, SceneEntity};
use crate::dynamic::{ComponentSchema, FieldType};

/// The first bytes of a binary scene (name and format version).
const MAGIC: &[u8] = b"mosaic-scene\x01";

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
    #[serde(default)]
    schemas: Ordered<String, Ordered<String, String>>,
    #[serde(default)]
    resources: Ordered<String, R>,
    #[serde(default)]
    prefabs: Ordered<String, PrefabDoc<R>>,
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
const RON_RAW_VALUE: &str = "$ron::private::RawValue";

/// A schema from its name and `(field, type name)` pairs, as files write it.
fn schema_of(name: String, fields: Vec<(String, String)>) -> Result<ComponentSchema, SceneError> {
    let mut schema = ComponentSchema::new(name);
    for (field, ty) in fields {
        let ty: FieldType = ty.parse().map_err(|error| SceneError::Schema {
            component: schema.name().to_owned(),
            error,
        })?;
        schema = schema.field(field, ty);
    }
    Ok(schema)
}

/// RON options for scenes: `Some` may be left out (`prefab: "Tree"`).
pub(crate) fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// Turns a parsed document into a scene, given how to locate a raw value.
fn build<R>(
    doc: Doc<R>,
    value: impl Fn(&R) -> SceneValue,
    format: &'static str,
) -> Result<Scene, SceneError> {
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
    for (name, fields) in doc.schemas.0 {
        schemas.push((schema_of(name, fields.0)?, Where::Unknown));
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
        prefabs: doc
            .prefabs
            .0
            .into_iter()
            .map(|(name, p)| Prefab {
                name,
                extends: p.extends,
                components: components(p.components),
                at: Where::Unknown,
            })
            .collect(),
        entities,
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
                at: Where::Text(Location {
                    line: e.span.start.line,
                    column: e.span.start.col,
                }),
            })?;
    let source2 = Arc::clone(&source);
    build(
        doc,
        move |raw| SceneValue::Text {
            format: Format::Ron,
            source: Arc::clone(&source2),
            span: source2.span_of(raw.0),
        },
        "RON",
    )
}

pub(crate) fn parse_json(text: &str) -> Result<Scene, SceneError> {
    let text = without_bom(text);
    let source = Source::new(text, Extensions::empty());
    let doc: Doc<&serde_json::value::RawValue> =
        serde_json::from_str(&source.text).map_err(|e| SceneError::Syntax {
            format: "JSON",
            message: {
                let m = e.to_string();
                m.rfind(" at line ")
                    .map_or(m.clone(), |i| m[..i].to_owned())
            },
            at: Where::Text(source.location(json_offset(&source.text, e.line(), e.column()))),
        })?;
    let source2 = Arc::clone(&source);
    build(
        doc,
        move |raw| SceneValue::Text {
            format: Format::Json,
            source: Arc::clone(&source2),
            span: source2.span_of(raw.get()),
        },
        "JSON",
    )
}

/// `(name, postcard bytes)` of each value of one entity or prefab.
type BinValues = Vec<(String, Vec<u8>)>;

/// The binary document: names and structure, each value as its own bytes.
#[derive(Serialize, Deserialize)]
struct BinDoc {
    schemas: Vec<(String, Vec<(String, String)>)>,
    resources: Vec<(String, Vec<u8>)>,
    prefabs: Vec<(String, Option<String>, BinValues)>,
    entities: Vec<(u64, Option<String>, BinValues)>,
}

pub(crate) fn parse_binary(bytes: &[u8]) -> Result<Scene, SceneError> {
    let syntax = |message: String| SceneError::Syntax {
        format: "binary",
        message,
        at: Where::Unknown,
    };
    let body = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| syntax("not a mosaic binary scene (wrong header)".to_owned()))?;
    let (doc, rest): (BinDoc, &[u8]) =
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
    let mut schemas = Vec::new();
    for (name, fields) in doc.schemas {
        let at = Where::Binary(format!("schema `{name}`"));
        schemas.push((schema_of(name, fields)?, at));
    }
    Ok(Scene {
        schemas,
        resources: components(doc.resources),
        prefabs: doc
            .prefabs
            .into_iter()
            .map(|(name, extends, list)| Prefab {
                at: Where::Binary(format!("prefab `{name}`")),
                name,
                extends,
                components: components(list),
            })
            .collect(),
        entities: doc
            .entities
            .into_iter()
            .map(|(id, prefab, list)| SceneEntity {
                id,
                prefab,
                components: components(list),
                at: Where::Binary(format!("entity {id}")),
            })
            .collect(),
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

struct DocOut<'a> {
    schemas: Vec<(&'a str, Vec<(&'a str, &'static str)>)>,
    resources: Vec<(&'a str, ValueWriter<'a>)>,
    prefabs: Vec<(&'a str, PrefabOut<'a>)>,
    entities: Vec<EntityOut<'a>>,
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
        .map(|c| Ok((c.name.as_str(), c.value.writer(&c.name, format)?)))
        .collect()
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
        entities: scene
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
    /// use mosaic::scene::Scene;
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
    /// # Example
    /// ```
    /// use mosaic::scene::Scene;
    /// let scene = Scene::from_json_str(r#"{"entities": [{"id": 3}]}"#).unwrap();
    /// let text = scene.to_json_string().unwrap();
    /// assert_eq!(Scene::from_json_str(&text).unwrap().len(), 1);
    /// ```
    pub fn to_json_string(&self) -> Result<String, SceneError> {
        let doc = doc_out(self, Format::Json)?;
        serde_json::to_string_pretty(&doc).map_err(encode_error)
    }

    /// The scene in the compact binary form (postcard; each value stored as
    /// its own bytes, so a reader can skip a component it does not know).
    ///
    /// # Example
    /// ```
    /// use mosaic::scene::Scene;
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
            entities: self
                .entities
                .iter()
                .map(|e| Ok((e.id, e.prefab.clone(), bytes_of(&e.components)?)))
                .collect::<Result<_, SceneError>>()?,
        };
        postcard::to_extend(&doc, MAGIC.to_vec()).map_err(encode_error)
    }
}
