//! Prefabs: entity templates written as data, extended and spawned at run
//! time with overrides.
//!
//! Shows: a scene whose `prefabs` section defines `Monster`, a `Troll` that
//! `extends` it and a `Camp` entity, `world.spawn_prefab(name, overrides)`
//! (the overrides replace the prefab's values), a wave of spawns in a loop,
//! and the error a misspelt prefab name gets (with a did-you-mean).
//!
//! ```text
//! cargo run -p mosaic-ecs --example prefabs [WAVES]    # default 3 waves
//! ```

use mosaic::prelude::*;
use mosaic::scene::{Scene, TypeRegistry};
use serde::{Deserialize, Serialize};

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Serialize, Deserialize, Debug, PartialEq)]
struct Health(u32);

#[derive(Component, Serialize, Deserialize, Debug, PartialEq)]
struct Kind(String);

const PREFABS: &str = r#"(
    prefabs: {
        "Monster": (components: { "Health": (10), "Kind": ("monster"), "Position": (x: 0.0, y: 0.0) }),
        "Troll": (extends: "Monster", components: { "Health": (30), "Kind": ("troll") }),
        "Goblin": (extends: "Monster", components: { "Kind": ("goblin") }),
    },
    entities: [
        (id: 1, prefab: "Troll", components: { "Position": (x: 10.0, y: 0.0) }),
    ],
)"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let waves: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Health>();
    registry.register::<Kind>();

    // Loading the scene spawns its entities and keeps its prefabs for later.
    let mut world = World::new();
    let spawned = Scene::from_ron_str(PREFABS)?.spawn_into(&mut world, &registry)?;
    let boss = spawned[1];
    println!(
        "the scene's troll: {:?}, {:?}",
        world.get::<Health>(boss)?,
        world.get::<Position>(boss)?
    );

    // Waves of spawns at run time, each placed by an override.
    for wave in 1..=waves {
        for i in 0..wave {
            let at = Position {
                x: i as f32 * 2.0,
                y: wave as f32,
            };
            let name = if i % 2 == 0 { "Goblin" } else { "Troll" };
            world.spawn_prefab(name, at)?;
        }
    }
    let mut q = world.query::<(&Kind, &Health, &Position)>();
    for (kind, hp, pos) in q.iter(&world) {
        println!(
            "{:>7} with {:>2} hp at ({}, {})",
            kind.0, hp.0, pos.x, pos.y
        );
    }
    assert_eq!(world.len() as u32, 1 + waves * (waves + 1) / 2);

    // Overrides replace any of the prefab's values, several at once.
    let elite = world.spawn_prefab("Troll", (Health(99), Kind("elite troll".into())))?;
    println!("elite: {:?}", world.get::<Kind>(elite)?);

    // A misspelt name is an error that suggests the right one; nothing spawns.
    let before = world.len();
    let err = world.spawn_prefab("Trol", ()).unwrap_err();
    println!("spawn_prefab(\"Trol\"): {err}");
    assert!(err.to_string().contains("Troll"));
    assert_eq!(world.len(), before);
    Ok(())
}
