//! Data-driven worlds for the mosaic ECS: scene files, prefabs, save and
//! load.
//!
//! This crate (`mosaic-scene`) is built on the core's public API alone (it
//! holds no `unsafe`): a load decodes each component's values into a typed
//! column and spawns them with the core's columnar spawn
//! ([`World::spawn_column_batches`](mosaic::World::spawn_column_batches));
//! a save reads whole columns through
//! [`Archetype::column`](mosaic::Archetype::column). Programs reach it as
//! `mosaic::scene` through `mosaic-ecs` (its default `serde` feature), whose
//! prelude brings [`SpawnPrefab`]; used directly, it is `mosaic_scene`
//! beside the core.
//!
//! A scene is a list of entities, each a map from component name to value,
//! plus named prefabs (templates that entities instantiate, with overrides,
//! and that may extend other prefabs), resources, and the schemas of
//! runtime-defined components. Scenes are read from and written to RON,
//! JSON and a compact binary form (postcard), and round-trip between a world
//! and each of them.
//!
//! ```ron
//! (
//!     schemas: { "Mana": { "current": "int", "max": "int" } },
//!     prefabs: {
//!         "Tree": (components: { "Position": (x: 0.0, y: 0.0), "Appearance": (name: "tree") }),
//!         "OldTree": (extends: "Tree", components: { "Appearance": (name: "old tree") }),
//!     },
//!     entities: [
//!         (id: 1, prefab: "Tree", components: { "Position": (x: 3.0, y: 4.0) }),
//!         (id: 2, components: { "Position": (x: 1.0, y: 1.0), "Target": (1), "Mana": { "current": 10, "max": 50 } }),
//!     ],
//! )
//! ```
//!
//! - Component names are the names given to the [`TypeRegistry`] (by
//!   default the type's short name) or the names of runtime-defined
//!   components declared under `schemas` (field types: `bool`, `int`,
//!   `float`, `string`, `entity`).
//! - Values are the serde form of the Rust type in the file's format.
//! - `id`s are scene-local: any distinct numbers. A component refers to
//!   another entity by its id; types holding entities implement
//!   [`MapEntities`](mosaic::MapEntities) and are registered with
//!   [`Registration::map_entities`], and loading remaps them to the
//!   entities spawned.
//! - Relation edges (of types registered with
//!   [`TypeRegistry::register_relation`]) are a component of their source
//!   named after the relation: a list of `(target id, data)` pairs, as
//!   `"ChildOf": [(1, ())]`; loading relates them, remapped, once every
//!   entity exists (sources in ascending id). A target whose sources were
//!   in another order (its `Children` as laid out, say) also has
//!   `"ChildOf.order": [4, 6, 5]`, the ids of its sources in their order,
//!   which loading restores: every relation's lists come back as saved.
//! - Every top-level section is optional.
//! - RON extensions (`#![enable(..)]`) apply to the whole file. Under
//!   `explicit_struct_names` the document's own structs are named too:
//!   `Scene(entities: [Entity(id: 1)], prefabs: {"Tree": Prefab()})`
//!   (these names may also be written without the extension; RON's errors
//!   use them).
//!
//! Loading ([`Scene::spawn_into`]) is all-or-nothing: every name, id,
//! prefab and value is checked and decoded before the world changes, and on
//! any error the world is unchanged. Saving ([`Scene::from_world`]) skips
//! components whose types are not registered and lists them in
//! [`Scene::skipped`].

mod columns;
mod depth;
mod doc;
mod error;
mod load;
mod read;
mod reflect;
mod registry;
mod save;
mod text;
mod value;

use std::collections::BTreeMap;
use std::path::Path;

pub use error::{Location, SceneError, Where};
pub use load::{SceneSpawn, SpawnPrefab};
pub use reflect::ValueError;
pub use registry::{AsComponent, AsResource, Registration, TypeRegistry};

use mosaic::ComponentSchema;
use value::{SceneValue, Spot};

/// A scene: entities, prefabs, resources and runtime-defined component
/// schemas, read from a file or saved from a world.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic_scene::{Scene, TypeRegistry};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Component, Serialize, Deserialize, Debug, PartialEq)]
/// struct Position { x: f32, y: f32 }
///
/// let mut registry = TypeRegistry::new();
/// registry.register::<Position>();
///
/// let scene = Scene::from_ron_str(r#"(
///     prefabs: { "Tree": (components: { "Position": (x: 0.0, y: 0.0) }) },
///     entities: [
///         (id: 1, prefab: "Tree"),
///         (id: 2, prefab: "Tree", components: { "Position": (x: 5.0, y: 1.0) }),
///     ],
/// )"#).unwrap();
/// let mut world = World::new();
/// let spawned = scene.spawn_into(&mut world, &registry).unwrap();
/// assert_eq!(world.get::<Position>(spawned[2]).unwrap(), &Position { x: 5.0, y: 1.0 });
///
/// // Save it again, in any format.
/// let saved = Scene::from_world(&world, &registry).unwrap();
/// assert!(saved.to_ron_string().unwrap().contains("Position"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Scene {
    schemas: Vec<(ComponentSchema, Spot)>,
    resources: Vec<SceneComponent>,
    prefabs: Vec<Prefab>,
    entities: Vec<SceneEntity>,
    /// Entities stored a component column at a time (saved from a world,
    /// or read from a binary scene); they come after `entities`.
    tables: Vec<SceneTable>,
    /// The file a text scene was read from: its values are decoded from it
    /// when loaded (and it is written back as it was, until resolved).
    text: Option<std::sync::Arc<value::Source>>,
    /// The registry a saved scene was made with: it writes the values of
    /// `tables` in the text formats.
    registry: Option<TypeRegistry>,
    skipped: BTreeMap<String, usize>,
}

/// A run of consecutive entities with the same components (and prefab),
/// stored a column at a time.
#[derive(Clone, Debug)]
pub(crate) struct SceneTable {
    ids: Vec<u64>,
    prefab: Option<String>,
    columns: Vec<TableColumn>,
}

impl SceneTable {
    /// The first entity's id, to say where an error is.
    fn first_id(&self) -> u64 {
        self.ids.first().copied().unwrap_or_default()
    }
}

/// One component's values for every entity of a [`SceneTable`]: their
/// postcard bytes, back to back.
#[derive(Clone)]
pub(crate) struct TableColumn {
    name: String,
    bytes: ColumnBytes,
}

/// The bytes of a [`TableColumn`]: a buffer of its own (saved from a
/// world), or its range of the binary scene it was read from, whose one
/// buffer every column of that scene shares (so reading copies nothing).
#[derive(Clone)]
pub(crate) struct ColumnBytes {
    buffer: std::sync::Arc<Vec<u8>>,
    range: std::ops::Range<usize>,
}

impl ColumnBytes {
    /// A buffer of its own.
    fn owned(bytes: Vec<u8>) -> ColumnBytes {
        ColumnBytes {
            range: 0..bytes.len(),
            buffer: std::sync::Arc::new(bytes),
        }
    }

    fn as_slice(&self) -> &[u8] {
        &self.buffer[self.range.clone()]
    }
}

/// Short: the bytes are not worth printing.
impl std::fmt::Debug for ColumnBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes", self.range.len())
    }
}

/// Short: the bytes of a column are not worth printing.
impl std::fmt::Debug for TableColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TableColumn({:?}, {} bytes)",
            self.name,
            self.bytes.as_slice().len()
        )
    }
}

/// One named value: a component or a resource.
#[derive(Clone, Debug)]
pub(crate) struct SceneComponent {
    name: String,
    value: SceneValue,
}

/// A named template.
#[derive(Clone, Debug)]
pub(crate) struct Prefab {
    name: String,
    extends: Option<String>,
    components: Vec<SceneComponent>,
    at: Spot,
}

/// One entity of the scene.
#[derive(Clone, Debug)]
pub(crate) struct SceneEntity {
    id: u64,
    prefab: Option<String>,
    components: Vec<SceneComponent>,
    at: Spot,
}

impl Scene {
    /// An empty scene.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic_scene::Scene::new().is_empty());
    /// ```
    pub fn new() -> Scene {
        Scene::default()
    }

    /// Every named value of the scene: resources, prefabs' components,
    /// entities' own components (not the columns of `tables`).
    fn values(&self) -> impl Iterator<Item = &SceneComponent> {
        self.resources
            .iter()
            .chain(self.prefabs.iter().flat_map(|p| &p.components))
            .chain(self.entities.iter().flat_map(|e| &e.components))
    }

    /// Reads a RON scene. Only the document's shape is checked here; names
    /// and values are checked against a registry when it is loaded.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::{Scene, SceneError};
    /// let scene = Scene::from_ron_str("(entities: [(id: 1), (id: 2)])").unwrap();
    /// assert_eq!(scene.len(), 2);
    /// let err = Scene::from_ron_str("(entities: [(id: 1,)").unwrap_err();
    /// assert!(matches!(err, SceneError::Syntax { format: "RON", .. }));
    /// ```
    pub fn from_ron_str(text: &str) -> Result<Scene, SceneError> {
        text::parse_ron(text)
    }

    /// Reads a JSON scene (the same shape as RON: `{"entities": [{"id": 1,
    /// "components": {"Position": {"x": 1.0, "y": 2.0}}}]}`).
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::Scene;
    /// let scene = Scene::from_json_str(r#"{"entities": [{"id": 7}]}"#).unwrap();
    /// assert_eq!(scene.len(), 1);
    /// ```
    pub fn from_json_str(text: &str) -> Result<Scene, SceneError> {
        text::parse_json(text)
    }

    /// Reads a RON scene whose types `registry` knows, decoding every
    /// value as it reads: the file is parsed once on its way to the world
    /// (with [`Scene::from_ron_str`], reading checks the document and
    /// loading parses each value again). Use it when the registry is at
    /// hand; loading the scene is then the cheaper half.
    ///
    /// It accepts the files [`Scene::from_ron_str`] accepts and fails on
    /// the same ones with the same errors, at the same places: a file it
    /// cannot read in one pass (runtime schemas, a name the registry does
    /// not know, a value that does not decode) is read as `from_ron_str`
    /// reads it, and its errors come from [`Scene::spawn_into`] as they
    /// would. The scene writes back as the file was.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, TypeRegistry};
    ///
    /// #[derive(Component, serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// struct Health(u32);
    ///
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// let text = r#"(entities: [(id: 1, components: {"Health": (3)})])"#;
    /// let scene = Scene::from_ron_str_with(text, &registry).unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    /// assert_eq!(world.get::<Health>(spawned[1]).unwrap(), &Health(3));
    /// assert_eq!(scene.to_ron_string().unwrap(), text);
    /// ```
    pub fn from_ron_str_with(text: &str, registry: &TypeRegistry) -> Result<Scene, SceneError> {
        read::read_with(text, value::Format::Ron, registry)
    }

    /// Reads a JSON scene whose types `registry` knows, decoding every
    /// value as it reads: [`Scene::from_ron_str_with`] for JSON (the same
    /// files as [`Scene::from_json_str`], and the same errors).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, TypeRegistry};
    ///
    /// #[derive(Component, serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// struct Health(u32);
    ///
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// let text = r#"{"entities": [{"id": 1, "components": {"Health": 3}}]}"#;
    /// let scene = Scene::from_json_str_with(text, &registry).unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    /// assert_eq!(world.get::<Health>(spawned[1]).unwrap(), &Health(3));
    /// ```
    pub fn from_json_str_with(text: &str, registry: &TypeRegistry) -> Result<Scene, SceneError> {
        read::read_with(text, value::Format::Json, registry)
    }

    /// Reads a binary scene (as written by [`Scene::to_binary`]). The
    /// scene keeps a copy of `bytes`; [`Scene::from_binary_vec`] keeps the
    /// `Vec` itself instead.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::Scene;
    /// let bytes = Scene::new().to_binary().unwrap();
    /// assert!(Scene::from_binary(&bytes).unwrap().is_empty());
    /// assert!(Scene::from_binary(b"not a scene").is_err());
    /// ```
    pub fn from_binary(bytes: &[u8]) -> Result<Scene, SceneError> {
        text::parse_binary(bytes.to_vec())
    }

    /// Reads a binary scene from bytes the scene may keep: its component
    /// values stay where they are in `bytes` until they are loaded, with no
    /// copy (for a large scene, half the memory of [`Scene::from_binary`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, TypeRegistry};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Component, Serialize, Deserialize, Debug, PartialEq)]
    /// struct Hp(u32);
    ///
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Hp>();
    /// let mut world = World::new();
    /// world.extend((0..100).map(Hp));
    /// let bytes = Scene::from_world(&world, &registry).unwrap().to_binary().unwrap();
    ///
    /// let scene = Scene::from_binary_vec(bytes).unwrap();
    /// let mut copy = World::new();
    /// scene.spawn_into(&mut copy, &registry).unwrap();
    /// assert_eq!(copy.len(), 100);
    /// ```
    pub fn from_binary_vec(bytes: Vec<u8>) -> Result<Scene, SceneError> {
        text::parse_binary(bytes)
    }

    /// Reads a scene file: `.ron`, `.json` (any case), or anything else as
    /// binary.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::{Scene, SceneError};
    /// let err = Scene::from_path("no/such/file.ron").unwrap_err();
    /// assert!(matches!(err, SceneError::Io { .. }));
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Result<Scene, SceneError> {
        let path = path.as_ref();
        let io = |e: std::io::Error| SceneError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext.eq_ignore_ascii_case("ron") {
            Scene::from_ron_str(&std::fs::read_to_string(path).map_err(io)?)
        } else if ext.eq_ignore_ascii_case("json") {
            Scene::from_json_str(&std::fs::read_to_string(path).map_err(io)?)
        } else {
            Scene::from_binary_vec(std::fs::read(path).map_err(io)?)
        }
    }

    /// Number of entities.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic_scene::Scene::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.entities.len() + self.tables.iter().map(|t| t.ids.len()).sum::<usize>()
    }

    /// True if the scene has no entities.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic_scene::Scene::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The scene ids of the entities, in order.
    ///
    /// # Example
    /// ```
    /// let scene = mosaic_scene::Scene::from_ron_str("(entities: [(id: 4), (id: 2)])").unwrap();
    /// assert_eq!(scene.ids().collect::<Vec<_>>(), [4, 2]);
    /// ```
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.entities
            .iter()
            .map(|e| e.id)
            .chain(self.tables.iter().flat_map(|t| t.ids.iter().copied()))
    }

    /// The prefab names, in order.
    ///
    /// # Example
    /// ```
    /// let scene = mosaic_scene::Scene::from_ron_str("(prefabs: {\"Tree\": ()})").unwrap();
    /// assert_eq!(scene.prefab_names().collect::<Vec<_>>(), ["Tree"]);
    /// ```
    pub fn prefab_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.prefabs.iter().map(|p| p.name.as_str())
    }

    /// The schemas of the runtime-defined components the scene declares.
    ///
    /// # Example
    /// ```
    /// let scene = mosaic_scene::Scene::from_ron_str(
    ///     "(schemas: {\"Mana\": {\"max\": \"int\"}})").unwrap();
    /// assert_eq!(scene.schemas().next().unwrap().name(), "Mana");
    /// ```
    pub fn schemas(&self) -> impl Iterator<Item = &ComponentSchema> + '_ {
        self.schemas.iter().map(|(s, _)| s)
    }

    /// The report of a save: components left out because their types are
    /// not registered, with how many values of each were skipped. A
    /// relation left out is one row, under the relation's name, counting
    /// the entities whose edges were skipped (its sources). Empty for a
    /// scene read from a file.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, TypeRegistry};
    /// #[derive(Component)] struct Secret;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(Secret), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// world.relate(b, a, Likes).unwrap();
    /// let scene = Scene::from_world(&world, &TypeRegistry::new()).unwrap();
    /// assert_eq!(scene.skipped().get("Secret"), Some(&1));
    /// assert_eq!(scene.skipped().get("Likes"), Some(&2));
    /// assert_eq!(scene.skipped().len(), 2);
    /// ```
    pub fn skipped(&self) -> &BTreeMap<String, usize> {
        &self.skipped
    }
}
