//! Saving a world (or some of its entities) as a scene, and resolving a
//! scene's values into the serde data model.
//!
//! Saving (`save`, behind [`Scene::from_world`] and
//! [`Scene::from_entities`]) goes in phases:
//!
//! 1. **Checked** (`check_names_free`): no runtime-defined component takes
//!    a registered type's name, before anything is encoded.
//! 2. **Entities** (`save_entities`): grouped into runs of consecutive
//!    entities with one archetype and the same sparse components; each
//!    run, when it ends, becomes a table (`save_run`) of one byte string
//!    per component, encoded straight from the world's column
//!    (`typed_column`) or value by value for runtime-defined ones
//!    (`dynamic_column`). A whole world with no sparse-set component
//!    (`save_world`) is one run per archetype, its whole table, with no
//!    entity looked up.
//! 3. **Resources and schemas** (`save_resources`), in the data model.
//!
//! Why: a column is encoded in one call with no value decoded or boxed,
//! which is what makes saving (and a binary file, which writes these bytes
//! as they are) cheap; and the file is the same whatever the order of the
//! world's component ids, as each table's columns are sorted by name.
//!
//! Resolving ([`Scene::resolve`]) decodes a text scene's values in one
//! walk over its file (`walk_contents`), each other value on its own
//! (`resolve_value`), and checks each table's columns decode
//! (`check_column`), keeping them as bytes.

use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::de::DeserializeSeed;
use serde_content::Value as Content;

use super::columns::{Codec, left_over, write_postcard};
use super::doc::{self, Place, Section, Stop, Walk};
use super::error::{SceneError, Where, suggest};
use super::registry::{Kind, TypeRegistry};
use super::value::{DynamicSeed, SceneValue, SerDynamic, Spot, scene_id, to_content};
use super::{ColumnBytes, Scene, SceneComponent, SceneTable, TableColumn};
use mosaic::{
    ArchetypeId, ComponentId, ComponentInfo, ComponentSchema, Entity, RelationSide, SchemaError,
    StorageType, World,
};

/// Consecutive entities of one archetype with the same sparse components:
/// saved as one [`SceneTable`].
struct Run<'w> {
    archetype: ArchetypeId,
    sparse: Vec<ComponentId>,
    /// The entities' rows in the archetype's table; `None` for the whole
    /// table in row order (then `entities` are the table's own).
    rows: Option<Vec<usize>>,
    entities: Cow<'w, [Entity]>,
}

fn encode_error(component: &str, message: String) -> SceneError {
    SceneError::Encode {
        component: component.to_owned(),
        message,
    }
}

/// Saves `entities` (skipping stale handles, and repeats if `dedup`),
/// straight from the world's columns: each run of consecutive entities with
/// the same components becomes a table, each component one byte string.
/// Then the resources the registry names and the world holds, and the
/// schemas of runtime-defined components.
fn save(
    world: &World,
    registry: &TypeRegistry,
    save_entities: impl FnOnce(&mut Scene) -> Result<(), SceneError>,
) -> Result<Scene, SceneError> {
    check_names_free(world, registry)?;
    let mut scene = Scene::new();
    save_entities(&mut scene)?;
    save_resources(world, registry, &mut scene)?;
    scene.schemas = world
        .dynamic_schemas()
        .map(|s| (s.clone(), Spot::Known(Where::Unknown)))
        .collect();
    scene.registry = Some(registry.clone());
    Ok(scene)
}

/// Refuses a runtime-defined component whose name the registry gives a
/// Rust type: one name, one component in the file too, or it would hold
/// two components with one name, which no load could tell apart.
fn check_names_free(world: &World, registry: &TypeRegistry) -> Result<(), SceneError> {
    for schema in world.dynamic_schemas() {
        if let Some(entry) = registry.get(schema.name(), Kind::Component) {
            return Err(SceneError::Schema {
                component: schema.name().to_owned(),
                error: SchemaError::TakenByRustType {
                    name: schema.name().to_owned(),
                    rust_type: entry.type_name.to_owned(),
                },
                at: Where::Unknown,
            });
        }
    }
    Ok(())
}

/// Groups `entities` into runs (same archetype, same sparse components)
/// and saves each run as a table as soon as it ends, so only one run's
/// rows are held at a time.
fn save_entities(
    world: &World,
    registry: &TypeRegistry,
    scene: &mut Scene,
    entities: impl IntoIterator<Item = Entity>,
    dedup: bool,
) -> Result<(), SceneError> {
    let sparse = sparse_sets(world);
    let mut seen = FxHashSet::default();
    let mut run: Option<Run> = None;
    for entity in entities {
        if dedup && !seen.insert(entity) {
            continue;
        }
        let Some(loc) = world.location(entity) else {
            continue;
        };
        let has: Vec<ComponentId> = sparse
            .iter()
            .copied()
            .filter(|&id| world.contains_id(entity, id))
            .collect();
        match &mut run {
            Some(Run {
                archetype,
                sparse,
                rows: Some(rows),
                entities: Cow::Owned(entities),
            }) if *archetype == loc.archetype && *sparse == has => {
                rows.push(loc.row as usize);
                entities.push(entity);
            }
            _ => {
                if let Some(done) = run.take() {
                    save_run(world, registry, scene, done)?;
                }
                run = Some(Run {
                    archetype: loc.archetype,
                    sparse: has,
                    rows: Some(vec![loc.row as usize]),
                    entities: Cow::Owned(vec![entity]),
                });
            }
        }
    }
    match run {
        Some(done) => save_run(world, registry, scene, done),
        None => Ok(()),
    }
}

/// Saves every entity of `world`, archetype by archetype in row order.
/// With no sparse-set component in the world, each archetype's entities
/// are one run, its whole table: saved with no entity looked up and each
/// column encoded as it lies (the common case, and the bulk of a save).
fn save_world(world: &World, registry: &TypeRegistry, scene: &mut Scene) -> Result<(), SceneError> {
    if !sparse_sets(world).is_empty() {
        let entities = world
            .archetypes()
            .flat_map(|a| a.entities().iter().copied());
        return save_entities(world, registry, scene, entities, false);
    }
    for archetype in world.archetypes().filter(|a| !a.is_empty()) {
        let run = Run {
            archetype: archetype.id(),
            sparse: Vec::new(),
            rows: None,
            entities: Cow::Borrowed(archetype.entities()),
        };
        save_run(world, registry, scene, run)?;
    }
    Ok(())
}

/// The world's sparse-set components: an entity's sparse components are
/// the ones among these that contain it (they are not in its archetype, so
/// a run must match them too).
fn sparse_sets(world: &World) -> Vec<ComponentId> {
    world
        .component_infos()
        .filter(|info| info.storage() == StorageType::SparseSet)
        .map(|info| info.id())
        .collect()
}

/// The registered resources the world holds, each in the serde data model
/// (few and small: kept decoded, written to any format as they are).
fn save_resources(
    world: &World,
    registry: &TypeRegistry,
    scene: &mut Scene,
) -> Result<(), SceneError> {
    for entry in registry.entries(Kind::Resource) {
        if let Some(value) = entry.encode(world, None) {
            scene.resources.push(SceneComponent {
                name: entry.name.clone(),
                value: SceneValue::Content(value.map_err(|m| encode_error(&entry.name, m))?),
            });
        }
    }
    Ok(())
}

/// Saves one run as a table: a column per component, by name. A relation's
/// target side is left out (saved with its sources' edges); components of
/// unregistered types are counted in [`Scene::skipped`], an unregistered
/// relation once, by its name, on its sources.
fn save_run(
    world: &World,
    registry: &TypeRegistry,
    scene: &mut Scene,
    run: Run<'_>,
) -> Result<(), SceneError> {
    let ids = world
        .get_archetype(run.archetype)
        .map(|a| a.components().to_vec())
        .unwrap_or_default();
    let mut columns = Vec::with_capacity(ids.len() + run.sparse.len());
    for &id in ids.iter().chain(&run.sparse) {
        let Some(info) = world.component_info(id) else {
            continue;
        };
        if info.schema().is_some() {
            columns.push(dynamic_column(world, &run, info)?);
        } else if let Some(column) = typed_column(world, registry, &run, info)? {
            // (A relation's order of sources only where a load would not
            // give it back.)
            columns.extend(column);
        } else {
            // An unregistered relation is one thing left out, not two
            // components: reported by its name, counting its sources (the
            // entities whose edges are lost); its targets' side is only the
            // mirror of those edges.
            let name = match world.relation_side(id) {
                Some((_, RelationSide::Sources)) => continue,
                Some((relation, RelationSide::Edges)) => relation,
                None => info.name(),
            };
            *scene.skipped.entry(name.to_owned()).or_default() += run.entities.len();
        }
    }
    // By name: the order of component ids differs between a world and its
    // copy; the file should not.
    columns.sort_by(|a, b| a.name.cmp(&b.name));
    scene.tables.push(SceneTable {
        ids: run.entities.iter().map(|&e| scene_id(e)).collect(),
        prefab: None,
        columns,
    });
    Ok(())
}

/// A runtime-defined component's column: each entity's value read by name
/// and written as postcard, one after another (no typed column to copy).
fn dynamic_column(
    world: &World,
    run: &Run<'_>,
    info: &ComponentInfo,
) -> Result<TableColumn, SceneError> {
    let mut bytes = Vec::new();
    for &entity in run.entities.iter() {
        let value = world
            .get_dynamic(entity, info.name())
            .map_err(|e| encode_error(info.name(), e.to_string()))?;
        write_postcard(&SerDynamic(value), &mut bytes).map_err(|m| encode_error(info.name(), m))?;
    }
    Ok(TableColumn {
        name: info.name().to_owned(),
        bytes: ColumnBytes::owned(bytes),
    })
}

/// A registered type's column, encoded straight from the archetype's
/// column by the type's own encoder; `None` if the type is not registered
/// (or has no column encoder), for the caller to count as skipped;
/// `Some(None)` for an [optional](crate::registry::ColumnFns::optional)
/// column of empty values only, left out.
fn typed_column(
    world: &World,
    registry: &TypeRegistry,
    run: &Run<'_>,
    info: &ComponentInfo,
) -> Result<Option<Option<TableColumn>>, SceneError> {
    let entry = info
        .type_id()
        .and_then(|t| registry.by_type(t, Kind::Component));
    let Some((entry, fns)) = entry.and_then(|e| Some((e, e.column?))) else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    (fns.encode)(
        world,
        run.archetype,
        run.rows.as_deref(),
        &run.entities,
        &mut bytes,
    )
    .map_err(|m| encode_error(&entry.name, m))?;
    // Each empty value is one byte; a list that is not empty, more.
    if fns.optional && bytes.len() == run.entities.len() {
        return Ok(Some(None));
    }
    Ok(Some(Some(TableColumn {
        name: entry.name.clone(),
        bytes: ColumnBytes::owned(bytes),
    })))
}

impl Scene {
    /// Saves every entity of `world` with its registered components and
    /// runtime-defined ones, the registered resources the world holds, and
    /// the schemas of its runtime-defined components. Entities are listed in
    /// slot order and each one's components by name, so saving, loading and
    /// saving again gives the same file. Each entity's scene id
    /// is its [`Entity::to_bits`], so entity references inside components
    /// stay right. Components of unregistered types are left out and counted
    /// in [`Scene::skipped`]. Prefabs are not saved: entities made from
    /// prefabs are saved whole, and [`SpawnPrefab::spawn_prefab`](crate::SpawnPrefab::spawn_prefab) after a reload
    /// needs the prefab scene loaded again.
    ///
    /// A runtime-defined component whose name the registry gives a Rust
    /// type is refused ([`SceneError::Schema`] with
    /// [`SchemaError::TakenByRustType`]):
    /// the file would hold two components under one name and could not be
    /// loaded.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, TypeRegistry};
    /// #[derive(Component, serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// struct Health(u32);
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// let mut world = World::new();
    /// world.spawn(Health(3));
    ///
    /// let json = Scene::from_world(&world, &registry).unwrap().to_json_string().unwrap();
    /// let mut copy = World::new();
    /// let spawned = Scene::from_json_str(&json).unwrap().spawn_into(&mut copy, &registry).unwrap();
    /// assert_eq!(copy.get::<Health>(spawned.entities().next().unwrap()), Ok(&Health(3)));
    /// ```
    pub fn from_world(world: &World, registry: &TypeRegistry) -> Result<Scene, SceneError> {
        // The world's own order (archetype by archetype, as `World::iter`
        // and queries visit them): a load into an empty world makes the
        // archetypes in the order their entities first appear and fills
        // them in file order, so the copy iterates in this order too, and
        // saving the copy writes its entities in the same order.
        save(world, registry, |scene| save_world(world, registry, scene))
    }

    /// Saves the chosen entities (for example those a query returned), as
    /// [`Scene::from_world`] does. Stale handles and repeats are skipped. A
    /// component referring to an entity left out makes the scene fail to
    /// load ([`SceneError::DanglingReference`]): save the whole group.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, TypeRegistry};
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Player;
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Player>();
    /// let mut world = World::new();
    /// world.spawn(());
    /// let player = world.spawn(Player);
    /// let players: Vec<Entity> = world.query_filtered::<Entity, With<Player>>().iter(&world).collect();
    /// let scene = Scene::from_entities(&world, &registry, players).unwrap();
    /// assert_eq!(scene.ids().collect::<Vec<_>>(), [player.to_bits()]);
    /// ```
    pub fn from_entities(
        world: &World,
        registry: &TypeRegistry,
        entities: impl IntoIterator<Item = Entity>,
    ) -> Result<Scene, SceneError> {
        save(world, registry, |scene| {
            save_entities(world, registry, scene, entities, true)
        })
    }

    /// Decodes every value with its type and keeps it in the serde data
    /// model, so the scene can be written in any format (a value read from
    /// RON can only be written as RON until resolved). Every value must
    /// decode; names resolve against the registry and the scene's own
    /// schemas (not a world's). Loading checks more (ids, references,
    /// prefabs). On an error, values before the failing one stay resolved.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, TypeRegistry};
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Health(u32);
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// let mut scene = Scene::from_ron_str("(entities: [(id: 1, components: {\"Health\": (3)})])").unwrap();
    /// assert!(scene.to_json_string().is_err());
    /// scene.resolve(&registry).unwrap();
    /// assert!(scene.to_json_string().unwrap().contains("\"Health\": 3"));
    /// ```
    pub fn resolve(&mut self, registry: &TypeRegistry) -> Result<(), SceneError> {
        let schemas: Vec<_> = self.schemas.iter().map(|(s, _)| s.clone()).collect();
        let mut walked = self.walk_contents(registry, &schemas)?;
        let mut resolve_one = |c: &mut SceneComponent, kind: Kind| -> Result<(), SceneError> {
            if let SceneValue::Text { place, .. } = c.value {
                if let Some(content) = walked.remove(&place) {
                    c.value = SceneValue::Content(content);
                    return Ok(());
                }
            }
            resolve_value(c, kind, registry, &schemas)
        };
        for e in &mut self.entities {
            for c in &mut e.components {
                resolve_one(c, Kind::Component)?;
            }
        }
        for p in &mut self.prefabs {
            for c in &mut p.components {
                resolve_one(c, Kind::Component)?;
            }
        }
        for r in &mut self.resources {
            resolve_one(r, Kind::Resource)?;
        }
        for table in &self.tables {
            for column in &table.columns {
                check_column(table, column, registry, &schemas)?;
            }
        }
        self.registry = Some(registry.clone());
        Ok(())
    }

    /// The values of a text scene in the serde data model, each decoded
    /// with its type in one walk over the file (none for other scenes).
    fn walk_contents(
        &self,
        registry: &TypeRegistry,
        schemas: &[ComponentSchema],
    ) -> Result<FxHashMap<Place, Content<'static>>, SceneError> {
        let Some(source) = self.walked() else {
            return Ok(FxHashMap::default());
        };
        let mut walk = ContentWalk {
            registry,
            schemas,
            out: FxHashMap::default(),
            failed: None,
        };
        let Err(e) = doc::run(source, &mut walk) else {
            return Ok(walk.out);
        };
        // The failed value on its own, for its error.
        if let Some((c, kind)) = walk.failed.and_then(|place| self.component_at(place)) {
            let mut one = c.clone();
            resolve_value(&mut one, kind, registry, schemas)?;
        }
        Err(SceneError::Syntax {
            format: source.format.name(),
            message: e.message,
            at: Where::Text(source.location(e.offset)),
        })
    }
}

/// Checks that every value of a table's column decodes with the codec its
/// name resolves to, and that they fill its bytes exactly. Tables stay
/// postcard bytes (every format can be written from them through the
/// codec); this only proves they can be.
fn check_column(
    table: &SceneTable,
    column: &TableColumn,
    registry: &TypeRegistry,
    schemas: &[ComponentSchema],
) -> Result<(), SceneError> {
    let codec = Codec::find(&column.name, Some(registry), schemas).ok_or_else(|| {
        SceneError::UnknownComponent {
            kind: "component",
            name: column.name.clone(),
            suggestion: suggest(
                &column.name,
                registry
                    .names_of(Kind::Component)
                    .chain(schemas.iter().map(|s| s.name())),
            ),
            at: Where::Unknown,
        }
    })?;
    let mut bytes = column.bytes.as_slice();
    for &id in &table.ids {
        codec
            .write(&mut bytes, &mut |_| {})
            .map_err(|message| SceneError::WrongShape {
                component: column.name.clone(),
                path: String::new(),
                message,
                at: Where::Binary(format!("entity {id}")),
            })?;
    }
    if !bytes.is_empty() {
        return Err(left_over(&column.name, bytes.len()));
    }
    Ok(())
}

/// Decodes one value with its type (or schema) into the serde data model.
fn resolve_value(
    c: &mut SceneComponent,
    kind: Kind,
    registry: &TypeRegistry,
    schemas: &[ComponentSchema],
) -> Result<(), SceneError> {
    if matches!(c.value, SceneValue::Content(_)) {
        return Ok(());
    }
    let wrong = |e: super::value::DecodeError| SceneError::WrongShape {
        component: c.name.clone(),
        path: e.path,
        message: e.message,
        at: e.at,
    };
    let content = if let Some(entry) = registry.get(&c.name, kind) {
        entry.to_content(&c.value).map_err(wrong)?
    } else if let Some(schema) = schemas
        .iter()
        .find(|s| kind == Kind::Component && s.name() == c.name)
    {
        let value = c.value.decode(DynamicSeed(schema)).map_err(wrong)?;
        to_content(&SerDynamic(&value)).map_err(|message| SceneError::Encode {
            component: c.name.clone(),
            message,
        })?
    } else {
        return Err(SceneError::UnknownComponent {
            kind: if kind == Kind::Component {
                "component"
            } else {
                "resource"
            },
            name: c.name.clone(),
            suggestion: suggest(
                &c.name,
                registry.names_of(kind).chain(
                    schemas
                        .iter()
                        .filter(|_| kind == Kind::Component)
                        .map(|s| s.name()),
                ),
            ),
            at: c.value.at(),
        });
    };
    c.value = SceneValue::Content(content);
    Ok(())
}

/// Decodes each value of a text scene's walk into the serde data model.
struct ContentWalk<'a> {
    registry: &'a TypeRegistry,
    schemas: &'a [ComponentSchema],
    out: FxHashMap<Place, Content<'static>>,
    failed: Option<Place>,
}

impl Walk for ContentWalk<'_> {
    fn wants(&self, section: Section) -> bool {
        section != Section::Schemas
    }

    fn value<'de>(
        &mut self,
        place: Place,
        name: &str,
        de: &mut dyn erased_serde::Deserializer<'de>,
    ) -> Result<(), Stop> {
        let kind = place.kind();
        let content = if let Some(entry) = self.registry.get(name, kind) {
            (entry.transcode_erased)(de).ok()
        } else if let Some(schema) = self
            .schemas
            .iter()
            .find(|s| kind == Kind::Component && s.name() == name)
        {
            DynamicSeed(schema)
                .deserialize(de)
                .ok()
                .and_then(|v| to_content(&SerDynamic(&v)).ok())
        } else {
            None
        };
        match content {
            Some(content) => {
                self.out.insert(place, content);
                Ok(())
            }
            None => {
                self.failed = Some(place);
                Err(Stop)
            }
        }
    }
}
