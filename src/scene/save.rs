//! Saving a world (or some of its entities) as a scene, and resolving a
//! scene's values into the serde data model.

use super::error::{suggest, SceneError};
use super::registry::{Kind, TypeRegistry};
use super::value::{scene_id, to_content, DynamicSeed, SceneValue};
use super::{Scene, SceneComponent, SceneEntity};
use crate::entity::Entity;
use crate::world::World;

impl Scene {
    /// Saves every entity of `world` with its registered components and
    /// runtime-defined ones, the registered resources the world holds, and
    /// the schemas of its runtime-defined components. Entities are listed in
    /// slot order and each one's components by name, so saving, loading and
    /// saving again gives the same file. Each entity's scene id
    /// is its [`Entity::to_bits`], so entity references inside components
    /// stay right. Components of unregistered types are left out and counted
    /// in [`Scene::skipped`]. Prefabs are not saved: entities made from
    /// prefabs are saved whole, and [`World::spawn_prefab`] after a reload
    /// needs the prefab scene loaded again.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::scene::{Scene, TypeRegistry};
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
        let mut entities: Vec<Entity> = world
            .archetypes()
            .flat_map(|a| a.entities().iter().copied())
            .collect();
        // Slot order, not archetype order: a loaded scene spawns its
        // entities in file order, so saving the copy gives the same file.
        entities.sort_unstable_by_key(|e| e.index());
        Scene::from_entities(world, registry, entities)
    }

    /// Saves the chosen entities (for example those a query returned), as
    /// [`Scene::from_world`] does. Stale handles and repeats are skipped. A
    /// component referring to an entity left out makes the scene fail to
    /// load ([`SceneError::DanglingReference`]): save the whole group.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::scene::{Scene, TypeRegistry};
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
        let mut scene = Scene::new();
        let encode_error = |component: &str, message: String| SceneError::Encode {
            component: component.to_owned(),
            message,
        };
        let mut seen = rustc_hash::FxHashSet::default();
        for entity in entities {
            if !seen.insert(entity) {
                continue;
            }
            let Some(ids) = world.entity_component_ids(entity) else {
                continue;
            };
            let mut components = Vec::with_capacity(ids.len());
            for id in ids {
                let Some(info) = world.component_info(id) else {
                    continue;
                };
                if info.schema().is_some() {
                    let value = world
                        .get_dynamic(entity, info.name())
                        .map_err(|e| encode_error(info.name(), e.to_string()))?;
                    components.push(SceneComponent {
                        name: info.name().to_owned(),
                        value: SceneValue::Content(
                            to_content(value).map_err(|m| encode_error(info.name(), m))?,
                        ),
                    });
                    continue;
                }
                let entry = info
                    .type_id()
                    .and_then(|t| registry.by_type(t, Kind::Component));
                match entry.and_then(|e| Some((e, e.encode(world, Some(entity))?))) {
                    Some((entry, value)) => components.push(SceneComponent {
                        name: entry.name.clone(),
                        value: SceneValue::Content(
                            value.map_err(|m| encode_error(&entry.name, m))?,
                        ),
                    }),
                    None => *scene.skipped.entry(info.name().to_owned()).or_default() += 1,
                }
            }
            // By name: the order of component ids differs between a world
            // and its copy; the file should not.
            components.sort_by(|a, b| a.name.cmp(&b.name));
            scene.entities.push(SceneEntity {
                id: scene_id(entity),
                prefab: None,
                components,
                at: Default::default(),
            });
        }
        for entry in registry.entries(Kind::Resource) {
            if let Some(value) = entry.encode(world, None) {
                scene.resources.push(SceneComponent {
                    name: entry.name.clone(),
                    value: SceneValue::Content(value.map_err(|m| encode_error(&entry.name, m))?),
                });
            }
        }
        scene.schemas = world
            .dynamic_schemas()
            .map(|s| (s.clone(), Default::default()))
            .collect();
        Ok(scene)
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
    /// use mosaic::scene::{Scene, TypeRegistry};
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
        let resolve_one = |c: &mut SceneComponent, kind: Kind| -> Result<(), SceneError> {
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
                to_content(&value).map_err(|message| SceneError::Encode {
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
        Ok(())
    }
}
