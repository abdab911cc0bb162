//! Scenes: a world made of data, run, saved in three formats and reloaded.
//!
//! Loads `assets/village.ron` (prefabs that extend each other, entities
//! that refer to each other, a runtime-defined `Mana` component and a
//! resource), runs a few frames of a two-system schedule, saves the world as
//! RON, JSON and binary, loads each back into a fresh world and checks that
//! the copy equals the original: same components, same values, and the same
//! references between entities. Then it spawns one more troll from the
//! `BigMonster` prefab at run time.
//!
//! ```text
//! cargo run --example scene            # add `-- --print` to see the saved RON
//! ```

use mosaic::prelude::*;
use mosaic::scene::{Scene, SceneError, SceneSpawn, TypeRegistry};
use serde::{Deserialize, Serialize};

const FRAMES: u32 = 5;
const DT: f32 = 0.1;

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Velocity {
    x: f32,
    y: f32,
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Health(u32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Appearance {
    name: String,
}

/// Who a monster chases: an entity reference, remapped when a scene loads.
#[derive(Component, MapEntities, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
#[component(storage = "sparse")]
struct Target(#[entities] Entity);

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Gravity(f32);

/// Every type scene files may name.
fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Velocity>();
    registry.register::<Health>();
    registry.register::<Appearance>();
    registry.register::<Target>().map_entities();
    registry.register_resource::<Gravity>();
    registry
}

/// Falling things fall, moving things move.
fn physics(gravity: Res<Gravity>, mut bodies: Query<(&mut Position, &mut Velocity)>) {
    for (pos, vel) in bodies.iter_mut() {
        vel.y += gravity.0 * DT;
        pos.x += vel.x * DT;
        pos.y = (pos.y + vel.y * DT).max(0.0);
    }
}

/// Monsters steer toward their target (an entity reference, followed with
/// a second query).
fn chase(mut monsters: Query<(&Target, &Position, &mut Velocity)>, positions: Query<&Position>) {
    for (target, pos, vel) in monsters.iter_mut() {
        if let Ok(goal) = positions.get(target.0) {
            vel.x = (goal.x - pos.x).clamp(-2.0, 2.0);
        }
    }
}

/// One line per entity: its components, with targets shown by name.
fn describe(world: &mut World) -> Vec<String> {
    let mut query = world.query::<(
        Entity,
        &Appearance,
        Option<&Position>,
        Option<&Health>,
        Option<&Target>,
    )>();
    let mut lines: Vec<String> = query
        .iter(world)
        .map(|(e, look, pos, hp, target)| {
            let mut line = format!("{:<7}", look.name);
            if let Some(p) = pos {
                line += &format!(" at ({:>6.2}, {:>6.2})", p.x, p.y);
            }
            if let Some(h) = hp {
                line += &format!(" hp {:>2}", h.0);
            }
            if let Some(t) = target {
                let name = world
                    .get::<Appearance>(t.0)
                    .map_or("?".into(), |a| a.name.clone());
                line += &format!(" chasing {name}");
            }
            if let Ok(mana) = world.get_dynamic(e, "Mana") {
                let get = |f| mana.get(f).and_then(|v| v.as_int()).unwrap_or(0);
                line += &format!(" mana {}/{}", get("current"), get("max"));
            }
            line
        })
        .collect();
    lines.sort();
    lines
}

fn main() -> Result<(), SceneError> {
    let registry = registry();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/village.ron");
    let scene = Scene::from_path(path)?;
    println!(
        "loaded {path}: {} entities, prefabs {:?}",
        scene.len(),
        scene.prefab_names().collect::<Vec<_>>()
    );

    let mut world = World::new();
    scene.spawn_into(&mut world, &registry)?;
    let mut schedule = Schedule::new();
    schedule.add_system("chase", chase);
    schedule.add_system("physics", physics).after("chase");
    for _ in 0..FRAMES {
        schedule.run(&mut world);
    }
    println!("\nafter {FRAMES} frames:");
    let original = describe(&mut world);
    for line in &original {
        println!("  {line}");
    }

    let saved = Scene::from_world(&world, &registry)?;
    let ron = saved.to_ron_string()?;
    let json = saved.to_json_string()?;
    let binary = saved.to_binary()?;
    println!(
        "\nsaved: RON {} bytes, JSON {} bytes, binary {} bytes; skipped: {:?}",
        ron.len(),
        json.len(),
        binary.len(),
        saved.skipped()
    );

    if std::env::args().any(|a| a == "--print") {
        println!("{ron}");
    }

    for (format, reloaded) in [
        // The registry is at hand: each text is parsed once.
        ("RON", Scene::from_ron_str_with(&ron, &registry)?),
        ("JSON", Scene::from_json_str_with(&json, &registry)?),
        ("binary", Scene::from_binary(&binary)?),
    ] {
        let mut copy = World::new();
        let spawned: SceneSpawn = reloaded.spawn_into(&mut copy, &registry)?;
        let same = describe(&mut copy) == original && spawned.len() == world.len();
        println!(
            "reloaded from {format:<6}: {} entities, equal to the original: {same}",
            copy.len()
        );
        assert!(same, "{format} round trip changed the world");
        assert_eq!(
            copy.get_resource::<Gravity>(),
            world.get_resource::<Gravity>()
        );
    }

    let troll = world
        .spawn_prefab("BigMonster", Position { x: 1.0, y: 1.0 })
        .map_err(|e| {
            eprintln!("{e}");
            e
        })?;
    println!(
        "\nspawned from prefab `BigMonster` at run time: {} with {} hp",
        world
            .get::<Appearance>(troll)
            .map_or("?".into(), |a| a.name.clone()),
        world.get::<Health>(troll).map_or(0, |h| h.0)
    );
    match world.spawn_prefab("BigMonstr", ()) {
        Err(e) => println!("a typo is an error, not a panic: {e}"),
        Ok(_) => unreachable!("no such prefab"),
    }
    Ok(())
}
