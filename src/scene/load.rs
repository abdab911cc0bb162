//! Loading a scene into a world (all-or-nothing), and prefabs at run time.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::error::{suggest, SceneError, Where};
use super::registry::{Kind, Pending, TypeRegistry};
use super::value::{entity_refs_decoded, scene_id, scene_key, DecodeError, DynamicSeed};
use super::{Prefab, Scene, SceneComponent};
use crate::bundle::Bundle;
use crate::dynamic::{ComponentSchema, DynamicComponent, SchemaError};
use crate::entity::Entity;
use crate::map_entities::{EntityMapper, MapEntities};
use crate::world::{DynamicInsertError, DynamicQueryError, World};

/// The entities a scene spawned, by scene id.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::scene::{Scene, TypeRegistry};
/// let scene = Scene::from_ron_str("(entities: [(id: 10), (id: 20)])").unwrap();
/// let mut world = World::new();
/// let spawned = scene.spawn_into(&mut world, &TypeRegistry::new()).unwrap();
/// assert_eq!(spawned.len(), 2);
/// assert!(world.contains(spawned[20]));
/// assert_eq!(spawned.get(30), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SceneSpawn {
    order: Vec<(u64, Entity)>,
    by_id: FxHashMap<u64, Entity>,
}

impl SceneSpawn {
    /// The entity spawned for scene id `id`.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # use mosaic::scene::{Scene, TypeRegistry};
    /// let scene = Scene::from_ron_str("(entities: [(id: 1)])").unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &TypeRegistry::new()).unwrap();
    /// assert!(spawned.get(1).is_some());
    /// ```
    pub fn get(&self, id: u64) -> Option<Entity> {
        self.by_id.get(&id).copied()
    }

    /// `(scene id, entity)` pairs, in scene order.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # use mosaic::scene::{Scene, TypeRegistry};
    /// let scene = Scene::from_ron_str("(entities: [(id: 5), (id: 6)])").unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &TypeRegistry::new()).unwrap();
    /// assert_eq!(spawned.iter().map(|(id, _)| id).collect::<Vec<_>>(), [5, 6]);
    /// ```
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u64, Entity)> + '_ {
        self.order.iter().copied()
    }

    /// The spawned entities, in scene order.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # use mosaic::scene::{Scene, TypeRegistry};
    /// let scene = Scene::from_ron_str("(entities: [(id: 5)])").unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &TypeRegistry::new()).unwrap();
    /// assert!(spawned.entities().all(|e| world.contains(e)));
    /// ```
    pub fn entities(&self) -> impl ExactSizeIterator<Item = Entity> + '_ {
        self.order.iter().map(|&(_, e)| e)
    }

    /// Number of entities spawned.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::scene::SceneSpawn::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True if nothing was spawned.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::scene::SceneSpawn::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

impl std::ops::Index<u64> for SceneSpawn {
    type Output = Entity;

    /// Panics if no entity had scene id `id`.
    fn index(&self, id: u64) -> &Entity {
        self.by_id
            .get(&id)
            .unwrap_or_else(|| panic!("no entity had scene id {id}"))
    }
}

/// A decoded value, with the scene entry it came from and the number of
/// entity references decoding read (mapping must visit them all).
type Decoded<'c> = (&'c SceneComponent, Box<dyn Pending>, u64);

/// Decoded components of one entity or prefab.
type PendingList<'c> = Vec<Decoded<'c>>;

/// A runtime-defined component value waiting for its entity.
struct PendingDynamic(DynamicComponent);

impl Pending for PendingDynamic {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        self.0.map_entities(mapper);
    }

    fn put(self: Box<Self>, world: &mut World, entity: Option<Entity>) {
        // The loader declared the schema and spawned `entity` just before;
        // only a hook or observer can have despawned it since. (Runtime-
        // defined components are never resources: `entity` is always set.)
        let Some(entity) = entity else { return };
        match world.insert_dynamic(entity, self.0) {
            Ok(()) | Err(DynamicInsertError::Entity(_)) => {}
            Err(e) => unreachable!("scene value checked against its schema: {e}"),
        }
    }
}

/// What decoding needs besides the value: the registry and the schemas of
/// runtime-defined components (the scene's and the world's).
struct Decoder<'a> {
    registry: &'a TypeRegistry,
    schemas: FxHashMap<&'a str, &'a ComponentSchema>,
}

impl Decoder<'_> {
    /// Decodes one value, counting the entity references it holds (so a
    /// type that maps none or only some of its entity fields is caught when
    /// mapped).
    fn decode<'c>(&self, c: &'c SceneComponent, kind: Kind) -> Result<Decoded<'c>, SceneError> {
        let before = entity_refs_decoded();
        let pending = self.decode_inner(c, kind)?;
        Ok((c, pending, entity_refs_decoded() - before))
    }

    fn decode_inner(&self, c: &SceneComponent, kind: Kind) -> Result<Box<dyn Pending>, SceneError> {
        let wrong = |e: DecodeError| SceneError::WrongShape {
            component: c.name.clone(),
            path: e.path,
            message: e.message,
            at: e.at,
        };
        if let Some(entry) = self.registry.get(&c.name, kind) {
            return entry.decode(&c.value).map_err(wrong);
        }
        if kind == Kind::Component {
            if let Some(schema) = self.schemas.get(c.name.as_str()) {
                let value = c.value.decode(DynamicSeed(schema)).map_err(wrong)?;
                return Ok(Box::new(PendingDynamic(value)));
            }
        }
        let known: Vec<&str> = match kind {
            Kind::Component => self
                .registry
                .names_of(kind)
                .chain(self.schemas.keys().copied())
                .collect(),
            Kind::Resource => self.registry.names_of(kind).collect(),
        };
        Err(SceneError::UnknownComponent {
            kind: match kind {
                Kind::Component => "component",
                Kind::Resource => "resource",
            },
            name: c.name.clone(),
            suggestion: suggest(&c.name, known),
            at: c.value.at(),
        })
    }

    /// Decodes a list of components (later ones replace earlier ones of the
    /// same name, as overrides do).
    fn decode_all<'c>(
        &self,
        list: impl IntoIterator<Item = &'c SceneComponent>,
    ) -> Result<PendingList<'c>, SceneError> {
        let mut out: PendingList<'_> = Vec::new();
        for c in list {
            let decoded = self.decode(c, Kind::Component)?;
            match out.iter_mut().find(|(o, _, _)| o.name == c.name) {
                Some(slot) => *slot = decoded,
                None => out.push(decoded),
            }
        }
        Ok(out)
    }
}

/// Refuses a list that names one component twice.
fn check_unique(list: &[SceneComponent], what: &'static str) -> Result<(), SceneError> {
    for (i, c) in list.iter().enumerate() {
        if list[..i].iter().any(|o| o.name == c.name) {
            return Err(SceneError::Duplicate {
                what,
                name: c.name.clone(),
                at: c.value.at(),
            });
        }
    }
    Ok(())
}

/// Maps scene keys to entities; remembers the first key it could not map
/// and counts the references it was asked to map.
struct KeyMapper<'a> {
    map: &'a FxHashMap<Entity, Entity>,
    missing: Option<Entity>,
    calls: u64,
}

impl EntityMapper for KeyMapper<'_> {
    fn map(&mut self, key: Entity) -> Entity {
        self.calls += 1;
        match self.map.get(&key) {
            Some(&e) => e,
            None => {
                self.missing.get_or_insert(key);
                key
            }
        }
    }
}

/// Maps every pending value through `map`; fails on the first reference to
/// a key `map` lacks, and on a value whose type left some of the entity
/// references it holds unmapped (a `#[entities]` forgotten on a field).
fn map_pending(
    pending: &mut [Decoded<'_>],
    map: &FxHashMap<Entity, Entity>,
) -> Result<(), SceneError> {
    for (c, p, refs) in pending {
        let mut mapper = KeyMapper {
            map,
            missing: None,
            calls: 0,
        };
        p.map_entities(&mut mapper);
        if mapper.calls < *refs {
            return Err(SceneError::UnmappedEntities {
                component: c.name.clone(),
                at: c.value.at(),
            });
        }
        if let Some(key) = mapper.missing {
            return Err(SceneError::DanglingReference {
                component: c.name.clone(),
                id: scene_id(key),
                at: c.value.at(),
            });
        }
    }
    Ok(())
}

/// The prefabs of one scene, resolved (each with its whole `extends`
/// chain), as a world keeps them for [`World::spawn_prefab`].
#[derive(Debug)]
struct PrefabSource {
    prefabs: Vec<(String, Vec<SceneComponent>)>,
    schemas: Vec<ComponentSchema>,
    registry: TypeRegistry,
    /// Scene keys of the scene that defined them → the entities it spawned.
    ids: FxHashMap<Entity, Entity>,
}

/// The prefabs a world knows, by name (a world resource).
#[derive(Debug, Default)]
pub(crate) struct PrefabLibrary {
    by_name: FxHashMap<String, (Arc<PrefabSource>, usize)>,
}

/// Each prefab's components, its `extends` chain applied (base first,
/// overrides after), or the first unknown prefab / cycle.
fn resolve_prefabs(prefabs: &[Prefab]) -> Result<Vec<Vec<SceneComponent>>, SceneError> {
    let mut by_name: FxHashMap<&str, usize> = FxHashMap::default();
    for (i, p) in prefabs.iter().enumerate() {
        if by_name.insert(&p.name, i).is_some() {
            return Err(SceneError::Duplicate {
                what: "prefab",
                name: p.name.clone(),
                at: p.at.clone(),
            });
        }
        check_unique(&p.components, "component")?;
    }
    let mut out = Vec::with_capacity(prefabs.len());
    for p in prefabs {
        let mut chain = vec![p];
        let mut next = p.extends.as_deref();
        while let Some(name) = next {
            let Some(&i) = by_name.get(name) else {
                return Err(SceneError::UnknownPrefab {
                    name: name.to_owned(),
                    suggestion: suggest(name, by_name.keys().copied()),
                    at: chain.last().map_or(Where::Unknown, |p| p.at.clone()),
                });
            };
            let base = &prefabs[i];
            if chain.iter().any(|c| c.name == base.name) {
                let mut names: Vec<String> = chain.iter().map(|c| c.name.clone()).collect();
                names.push(base.name.clone());
                let start = names.iter().position(|n| *n == base.name).unwrap_or(0);
                return Err(SceneError::PrefabCycle {
                    chain: names[start..].to_vec(),
                });
            }
            chain.push(base);
            next = base.extends.as_deref();
        }
        let mut components: Vec<SceneComponent> = Vec::new();
        for p in chain.iter().rev() {
            for c in &p.components {
                match components.iter_mut().find(|o| o.name == c.name) {
                    Some(slot) => *slot = c.clone(),
                    None => components.push(c.clone()),
                }
            }
        }
        out.push(components);
    }
    Ok(out)
}

impl Scene {
    /// Spawns the scene's entities into `world`, with their components
    /// (prefab ones first, then the entity's own, which override), inserts
    /// its resources, declares its runtime-defined components and keeps its
    /// prefabs for [`World::spawn_prefab`]. Returns the entity spawned for
    /// each scene id. Hooks and observers run as the components go in; if
    /// one despawns a scene entity, its remaining components are dropped and
    /// its handle here is stale.
    ///
    /// All-or-nothing: every name, id, prefab, reference and value is
    /// checked and decoded before anything changes; on any error the world
    /// is exactly as it was.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::scene::{Scene, SceneError, TypeRegistry};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Component, MapEntities, Serialize, Deserialize)]
    /// struct Target(#[entities] Entity);
    ///
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Target>().map_entities();
    /// let scene = Scene::from_ron_str(
    ///     "(entities: [(id: 1), (id: 2, components: {\"Target\": (1)})])",
    /// ).unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    /// assert_eq!(world.get::<Target>(spawned[2]).unwrap().0, spawned[1]);
    ///
    /// // A reference to an id the scene lacks: an error, and no change.
    /// let bad = Scene::from_ron_str("(entities: [(id: 2, components: {\"Target\": (9)})])").unwrap();
    /// let before = world.len();
    /// assert!(matches!(bad.spawn_into(&mut world, &registry), Err(SceneError::DanglingReference { id: 9, .. })));
    /// assert_eq!(world.len(), before);
    /// ```
    pub fn spawn_into(
        &self,
        world: &mut World,
        registry: &TypeRegistry,
    ) -> Result<SceneSpawn, SceneError> {
        // 1. Schemas: valid, and consistent with the world and registry.
        let mut new_schemas = Vec::new();
        let world_schemas: Vec<ComponentSchema> = world.dynamic_schemas().cloned().collect();
        let mut decoder = Decoder {
            registry,
            schemas: world_schemas.iter().map(|s| (s.name(), s)).collect(),
        };
        for (i, (schema, _)) in self.schemas.iter().enumerate() {
            let fail = |error| SceneError::Schema {
                component: schema.name().to_owned(),
                error,
            };
            schema.validate().map_err(fail)?;
            if self.schemas[..i]
                .iter()
                .any(|(s, _)| s.name() == schema.name())
            {
                return Err(SceneError::Duplicate {
                    what: "schema",
                    name: schema.name().to_owned(),
                    at: Where::Unknown,
                });
            }
            match decoder.schemas.get(schema.name()) {
                Some(&existing) if existing == schema => {}
                Some(_) => {
                    return Err(fail(SchemaError::Conflict {
                        name: schema.name().to_owned(),
                    }))
                }
                None => {
                    // A name several Rust types share is taken too (the
                    // lookup calls it ambiguous rather than unknown).
                    let rust_type = registry.get(schema.name(), Kind::Component).is_some()
                        || !matches!(
                            world.component_named(schema.name()),
                            Err(DynamicQueryError::Unknown(_))
                        );
                    if rust_type {
                        return Err(fail(SchemaError::TakenByRustType {
                            name: schema.name().to_owned(),
                        }));
                    }
                    new_schemas.push(schema.clone());
                }
            }
        }
        for (schema, _) in &self.schemas {
            decoder.schemas.insert(schema.name(), schema);
        }

        // 2. Prefabs: unique, known, acyclic, and their values decode.
        let resolved = resolve_prefabs(&self.prefabs)?;
        let prefab_index: FxHashMap<&str, usize> = self
            .prefabs
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect();

        // 3. Entities: unique ids.
        let mut keys: FxHashMap<Entity, Entity> = FxHashMap::default();
        for e in &self.entities {
            let key = scene_key(e.id);
            if keys.insert(key, key).is_some() {
                return Err(SceneError::DuplicateId {
                    id: e.id,
                    at: e.at.clone(),
                });
            }
        }
        for list in &resolved {
            let mut pending = decoder.decode_all(list)?;
            map_pending(&mut pending, &keys)?;
        }

        // 4. Every entity's components decode, and refer only to the scene.
        let mut entities = Vec::with_capacity(self.entities.len());
        for e in &self.entities {
            check_unique(&e.components, "component")?;
            let base: &[SceneComponent] = match &e.prefab {
                None => &[],
                Some(name) => match prefab_index.get(name.as_str()) {
                    Some(&i) => &resolved[i],
                    None => {
                        return Err(SceneError::UnknownPrefab {
                            name: name.clone(),
                            suggestion: suggest(name, prefab_index.keys().copied()),
                            at: e.at.clone(),
                        })
                    }
                },
            };
            let mut pending = decoder.decode_all(base.iter().chain(&e.components))?;
            map_pending(&mut pending, &keys)?;
            entities.push((scene_key(e.id), pending));
        }

        // 5. Resources.
        check_unique(&self.resources, "resource")?;
        let mut resources = Vec::with_capacity(self.resources.len());
        for r in &self.resources {
            let mut pending = vec![decoder.decode(r, Kind::Resource)?];
            map_pending(&mut pending, &keys)?;
            resources.extend(pending);
        }

        let all_schemas: Vec<ComponentSchema> =
            decoder.schemas.values().map(|&s| s.clone()).collect();

        // Everything checked: now change the world.
        for schema in &new_schemas {
            if let Err(e) = world.register_dynamic_component(schema.clone()) {
                unreachable!("schema checked above: {e}");
            }
        }
        let spawned = world.spawn_batch((0..entities.len()).map(|_| ()));
        let map: FxHashMap<Entity, Entity> = entities
            .iter()
            .zip(&spawned)
            .map(|((key, _), &e)| (*key, e))
            .collect();
        for ((_, pending), &entity) in entities.into_iter().zip(&spawned) {
            for (_, mut p, _) in pending {
                p.map_entities(&mut KeyMapper {
                    map: &map,
                    missing: None,
                    calls: 0,
                });
                p.put(world, Some(entity));
            }
        }
        for (_, mut p, _) in resources {
            p.map_entities(&mut KeyMapper {
                map: &map,
                missing: None,
                calls: 0,
            });
            p.put(world, None);
        }
        if !self.prefabs.is_empty() {
            let source = Arc::new(PrefabSource {
                prefabs: self
                    .prefabs
                    .iter()
                    .zip(resolved)
                    .map(|(p, list)| (p.name.clone(), list))
                    .collect(),
                schemas: all_schemas,
                registry: registry.clone(),
                ids: map,
            });
            let library = world.resource_or_default::<PrefabLibrary>();
            for (i, (name, _)) in source.prefabs.iter().enumerate() {
                library
                    .by_name
                    .insert(name.clone(), (Arc::clone(&source), i));
            }
        }
        Ok(SceneSpawn {
            by_id: self
                .entities
                .iter()
                .map(|e| e.id)
                .zip(spawned.iter().copied())
                .collect(),
            order: self.entities.iter().map(|e| e.id).zip(spawned).collect(),
        })
    }
}

impl World {
    /// Spawns an entity from a prefab of a scene loaded earlier
    /// ([`Scene::spawn_into`] keeps each scene's prefabs; a later prefab of
    /// the same name replaces an earlier one), then inserts `overrides`
    /// (a bundle: its components replace the prefab's). Entity references
    /// in the prefab resolve against the scene that defined it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::scene::{Scene, SceneError, TypeRegistry};
    /// use serde::{Deserialize, Serialize};
    /// #[derive(Component, Serialize, Deserialize, Debug, PartialEq)]
    /// struct Position { x: f32, y: f32 }
    /// #[derive(Component, Serialize, Deserialize, Debug, PartialEq)]
    /// struct Appearance { name: String }
    ///
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Position>();
    /// registry.register::<Appearance>();
    /// let scene = Scene::from_ron_str(r#"(prefabs: { "Tree": (components: {
    ///     "Position": (x: 0.0, y: 0.0), "Appearance": (name: "tree") }) })"#).unwrap();
    /// let mut world = World::new();
    /// scene.spawn_into(&mut world, &registry).unwrap();
    ///
    /// let tree = world.spawn_prefab("Tree", Position { x: 4.0, y: 2.0 }).unwrap();
    /// assert_eq!(world.get::<Position>(tree).unwrap(), &Position { x: 4.0, y: 2.0 });
    /// assert_eq!(world.get::<Appearance>(tree).unwrap().name, "tree");
    /// assert!(matches!(world.spawn_prefab("Tre", ()), Err(SceneError::UnknownPrefab { .. })));
    /// ```
    pub fn spawn_prefab<B: Bundle>(
        &mut self,
        name: &str,
        overrides: B,
    ) -> Result<Entity, SceneError> {
        let found = self
            .get_resource::<PrefabLibrary>()
            .and_then(|l| l.by_name.get(name).cloned());
        let Some((source, index)) = found else {
            let known: Vec<String> = self
                .get_resource::<PrefabLibrary>()
                .map(|l| l.by_name.keys().cloned().collect())
                .unwrap_or_default();
            return Err(SceneError::UnknownPrefab {
                name: name.to_owned(),
                suggestion: suggest(name, known.iter().map(String::as_str)),
                at: Where::Unknown,
            });
        };
        let decoder = Decoder {
            registry: &source.registry,
            schemas: source.schemas.iter().map(|s| (s.name(), s)).collect(),
        };
        let mut pending = decoder.decode_all(&source.prefabs[index].1)?;
        map_pending(&mut pending, &source.ids)?;
        for schema in &source.schemas {
            if self
                .dynamic_schema(schema.name())
                .is_some_and(|s| s != schema)
            {
                return Err(SceneError::Schema {
                    component: schema.name().to_owned(),
                    error: SchemaError::Conflict {
                        name: schema.name().to_owned(),
                    },
                });
            }
        }
        for schema in &source.schemas {
            // Checked just above: new, or the same schema again.
            let _ = self.register_dynamic_component(schema.clone());
        }
        let entity = self.spawn(());
        for (_, p, _) in pending {
            p.put(self, Some(entity));
        }
        // Fails only if a hook or observer despawned the entity meanwhile
        // (the handle returned is then stale, as `spawn`'s would be).
        let _ = self.insert(entity, overrides);
        Ok(entity)
    }
}
