//! The scene-loader harness: arbitrary bytes through every scene reader,
//! then everything a user does with a scene that parsed. Shared by the
//! `scene_load` fuzz target and `scene/tests/scene_fuzz_regress.rs`.
//!
//! The property: no input makes any of it panic (or overflow the stack),
//! and a load that fails leaves the world exactly as it was (entity count,
//! archetype count and declared schemas compared). The registered types
//! include recursive ones (`Tree`, `Chain`) and a deeply nested one
//! (`Nested`), so deep inputs reach the decoders' recursion, and relations
//! (`ChildOf`, `Likes`), so edges reach the loader's checks.

use mosaic::prelude::*;
use mosaic_scene::{Scene, SpawnPrefab, TypeRegistry};
use serde::{Deserialize, Serialize};

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Position {
    pub x: f32,
    pub y: f32,
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[component(storage = "sparse")]
pub struct Health(pub u32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub enum Kind {
    Tree,
    Monster { level: u8 },
    Named(String),
}

#[derive(Component, MapEntities, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Links {
    #[entities]
    pub target: Entity,
    #[entities]
    pub others: Vec<Option<Entity>>,
}

/// Recursive through a `Vec`: a tree of any depth.
#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub enum Tree {
    Leaf(u8),
    Node(Vec<Tree>),
}

/// Recursive through `Option<Box<_>>`, sparse: one byte or two per level
/// in a binary scene, so a short input nests deep.
#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[component(storage = "sparse")]
pub struct Chain {
    pub v: u8,
    pub next: Option<Box<Chain>>,
}

/// The innermost layers of [`Nested`].
pub type Layer = Vec<Option<(u8, Vec<Option<Box<[u16; 2]>>>)>>;

/// Deeply nested, not recursive: containers of every kind inside each
/// other, with an entity at the bottom.
#[derive(Component, MapEntities, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Nested {
    pub layers: Vec<Layer>,
    pub table: std::collections::BTreeMap<String, Vec<Option<Kind>>>,
    #[entities]
    pub deep: Option<Vec<Option<Entity>>>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Gravity(pub f64);

/// A many-target relation with data (`ChildOf` is registered too): edges
/// decoded, remapped, checked for cycles and related.
#[derive(Relation, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[relation(acyclic)]
pub struct Likes(pub u8);

pub fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Health>();
    registry.register::<Kind>();
    registry.register::<Links>().map_entities();
    registry.register::<Tree>();
    registry.register::<Chain>();
    registry.register::<Nested>().map_entities();
    registry.register_resource::<Gravity>();
    registry.register_relation::<ChildOf>();
    registry.register_relation::<Likes>();
    registry
}

/// A world with something in it, so "unchanged" means something.
fn world() -> World {
    let mut world = World::new();
    world.spawn((Position { x: 1.0, y: 2.0 }, Health(3)));
    world.insert_resource(Gravity(-9.8));
    world
}

fn fingerprint(world: &World) -> (usize, usize, Vec<String>) {
    (
        world.len(),
        world.archetype_count(),
        world.dynamic_schemas().map(|s| format!("{s:?}")).collect(),
    )
}

/// Loads one parsed scene and uses it every way a user would.
fn exercise(scene: Scene, registry: &TypeRegistry) {
    let mut world = world();
    let before = fingerprint(&world);
    match scene.spawn_into(&mut world, registry) {
        Err(_) => assert_eq!(
            fingerprint(&world),
            before,
            "a failed load changed the world"
        ),
        Ok(spawned) => {
            assert_eq!(world.len(), before.0 + spawned.len());
            for name in scene.prefab_names() {
                let _ = world.spawn_prefab(name, ());
            }
            let saved = Scene::from_world(&world, registry).expect("a loaded world saves");
            saved.to_ron_string().expect("a saved world writes as RON");
            // JSON refuses only a non-finite float (it has none).
            if let Err(e) = saved.to_json_string() {
                assert!(
                    e.to_string().contains("cannot be written as JSON"),
                    "a saved world writes as JSON: {e}"
                );
            }
            let bytes = saved.to_binary().expect("a saved world writes as binary");
            let mut copy = World::new();
            Scene::from_binary(&bytes)
                .expect("a written scene reads back")
                .spawn_into(&mut copy, registry)
                .expect("a saved world loads back");
            assert_eq!(copy.len(), world.len());
        }
    }
    let mut scene = scene;
    if scene.resolve(registry).is_ok() {
        let _ = scene.to_ron_string();
        let _ = scene.to_json_string();
        let _ = scene.to_binary();
    }
}

/// Reading `text` with the registry (`from_*_str_with`, one pass) accepts
/// and refuses what reading it first and loading it after does, with the
/// same errors, and loads the same number of entities.
fn same_with_the_registry(text: &str, registry: &TypeRegistry) {
    let pairs = [
        (
            Scene::from_ron_str(text),
            Scene::from_ron_str_with(text, registry),
        ),
        (
            Scene::from_json_str(text),
            Scene::from_json_str_with(text, registry),
        ),
    ];
    for (plain, with) in pairs {
        let load = |scene: Result<Scene, _>| {
            let scene = scene.map_err(|e: mosaic_scene::SceneError| format!("reading: {e}"))?;
            let mut world = World::new();
            let spawned = scene
                .spawn_into(&mut world, registry)
                .map_err(|e| format!("loading: {e}"))?;
            Ok::<_, String>((spawned.len(), world.len()))
        };
        assert_eq!(load(with), load(plain), "read with the registry: {text}");
    }
}

/// Feeds `data` to every reader: as RON and JSON text (if it is UTF-8) and
/// as a binary scene.
pub fn run_bytes(data: &[u8]) {
    let registry = registry();
    if let Ok(text) = std::str::from_utf8(data) {
        same_with_the_registry(text, &registry);
        if let Ok(scene) = Scene::from_ron_str(text) {
            exercise(scene, &registry);
        }
        if let Ok(scene) = Scene::from_json_str(text) {
            exercise(scene, &registry);
        }
    }
    if let Ok(scene) = Scene::from_binary(data) {
        exercise(scene, &registry);
    }
}
