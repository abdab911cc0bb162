//! `assets/default.ron` and `spawn_default_scene` describe the same scene.
//!
//! Two checks: the file read on its own terms (prefabs, `extends`,
//! per-entity overrides, each value parsed as the Rust type its name stands
//! for, so the file is in the types' serde form) against the Rust-built
//! world; and the world `mosaic::scene` loads from the file against the
//! Rust-built one. Both go entity by entity, component by component, value
//! by value.

use std::collections::BTreeMap;

use mosaic::prelude::*;
use mosaic_demo::*;
use ron::value::RawValue;
use serde::Deserialize;
use serde::de::DeserializeOwned;

#[derive(Deserialize)]
struct SceneFile {
    prefabs: BTreeMap<String, Prefab>,
    entities: Vec<EntityDef>,
}

#[derive(Deserialize)]
struct Prefab {
    #[serde(default)]
    extends: Option<String>,
    components: BTreeMap<String, Box<RawValue>>,
}

#[derive(Deserialize)]
struct EntityDef {
    id: u64,
    #[serde(default)]
    prefab: Option<String>,
    #[serde(default)]
    components: BTreeMap<String, Box<RawValue>>,
}

/// A prefab's components, `extends` chain applied.
fn resolve(scene: &SceneFile, name: &str, depth: usize) -> BTreeMap<String, String> {
    assert!(depth < 16, "prefab `{name}` extends itself");
    let prefab = scene
        .prefabs
        .get(name)
        .unwrap_or_else(|| panic!("unknown prefab `{name}`"));
    let mut components = match &prefab.extends {
        Some(parent) => resolve(scene, parent, depth + 1),
        None => BTreeMap::new(),
    };
    for (k, v) in &prefab.components {
        components.insert(k.clone(), v.get_ron().to_owned());
    }
    components
}

/// Parses `ron` as `T` and compares it with `e`'s `T`.
fn check<T>(world: &World, e: Entity, id: u64, name: &str, ron: &str)
where
    T: Component + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let expected: T = ron::from_str(ron)
        .unwrap_or_else(|err| panic!("entity {id}: `{name}: {ron}` is not a {name}: {err}"));
    let got = world
        .get::<T>(e)
        .unwrap_or_else(|err| panic!("entity {id}: the Rust scene lacks {name}: {err}"));
    assert_eq!(*got, expected, "entity {id}: {name}");
}

#[test]
fn rust_scene_mirrors_the_ron_file() {
    // `prefab: "Tree"` rather than `prefab: Some("Tree")`, as the scene
    // format writes it.
    let scene: SceneFile = ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .from_str(DEFAULT_SCENE)
        .expect("default.ron parses");
    let mut world = World::new();
    let spawned = spawn_default_scene(&mut world);
    assert_eq!(spawned.len(), scene.entities.len(), "entity count");

    let mut ids = Vec::new();
    for (def, &e) in scene.entities.iter().zip(&spawned) {
        ids.push(def.id);
        let mut components = match &def.prefab {
            Some(prefab) => resolve(&scene, prefab, 0),
            None => BTreeMap::new(),
        };
        for (k, v) in &def.components {
            components.insert(k.clone(), v.get_ron().to_owned());
        }
        for (name, ron) in &components {
            let id = def.id;
            match name.as_str() {
                "Position" => check::<Position>(&world, e, id, name, ron),
                "Velocity" => check::<Velocity>(&world, e, id, name, ron),
                "Appearance" => check::<Appearance>(&world, e, id, name, ron),
                "Light" => check::<Light>(&world, e, id, name, ron),
                "Health" => check::<Health>(&world, e, id, name, ron),
                "Sprite" => check::<Sprite>(&world, e, id, name, ron),
                "AI" => check::<AI>(&world, e, id, name, ron),
                "Player" => check::<Player>(&world, e, id, name, ron),
                "Gravity" => check::<Gravity>(&world, e, id, name, ron),
                "Collider" => check::<Collider>(&world, e, id, name, ron),
                "PowerUp" => check::<PowerUp>(&world, e, id, name, ron),
                "Ghost" => check::<Ghost>(&world, e, id, name, ron),
                other => panic!("entity {id}: unknown component `{other}`"),
            }
        }
        // Nothing more than the file says.
        let archetype = world
            .archetypes()
            .find(|a| a.entities().contains(&e))
            .expect("a spawned entity lives in some archetype");
        assert_eq!(
            archetype.components().len(),
            components.len(),
            "entity {}: {:?}",
            def.id,
            components.keys().collect::<Vec<_>>()
        );
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "scene ids are unique");
}

/// The components of `a` in `wa` equal those of `b` in `wb`.
fn same_entity(wa: &World, a: Entity, wb: &World, b: Entity, id: u64) {
    macro_rules! compare {
        ($($t:ty),*) => {$(
            assert_eq!(
                wa.get::<$t>(a).ok(),
                wb.get::<$t>(b).ok(),
                "entity {id}: {}",
                stringify!($t)
            );
        )*};
    }
    compare!(
        Position, Velocity, Appearance, Light, Health, Sprite, AI, Player, Gravity, Collider,
        PowerUp, Ghost
    );
    let width = |w: &World, e: Entity| {
        w.archetypes()
            .find(|arch| arch.entities().contains(&e))
            .map(|arch| arch.components().len())
    };
    assert_eq!(width(wa, a), width(wb, b), "entity {id}: component count");
}

#[test]
fn the_scene_loader_builds_the_rust_scene() {
    let scene = mosaic::scene::Scene::from_ron_str(DEFAULT_SCENE).expect("default.ron parses");
    let mut loaded = World::new();
    let spawn = scene
        .spawn_into(&mut loaded, &scene_registry())
        .expect("default.ron loads");
    let mut built = World::new();
    let spawned = spawn_default_scene(&mut built);
    assert_eq!(spawn.len(), spawned.len());
    assert_eq!(loaded.len(), built.len());
    for (i, &b) in spawned.iter().enumerate() {
        let id = i as u64 + 1;
        let a = spawn.get(id).expect("ids run from 1");
        same_entity(&loaded, a, &built, b, id);
    }
}

#[test]
fn the_built_in_scene_goes_through_load_scene_text() {
    let mut world = World::new();
    let n = load_scene_text(&mut world, DEFAULT_SCENE).expect("the default scene loads");
    assert_eq!(n, world.len());
    assert_eq!(n, 20);
}

#[test]
fn bad_scene_text_is_an_error_that_changes_nothing() {
    let mut world = World::new();
    for (text, says) in [
        ("(", "syntax"),
        ("not a scene", "syntax"),
        ("(entities: [(id: 1, prefab: \"Nope\")])", "Nope"),
        (
            "(entities: [(id: 1, components: { \"Mana\": (3) })])",
            "Mana",
        ),
        (
            "(entities: [(id: 1, components: { \"Position\": (x: 1.0) })])",
            "Position",
        ),
    ] {
        let err = load_scene_text(&mut world, text).expect_err(text);
        assert!(err.contains(says), "`{says}` in: {err}");
        assert!(world.is_empty(), "{text}: the world is unchanged");
    }
}
