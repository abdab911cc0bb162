//! Entities and components: spawn, read, change, insert, remove, despawn,
//! and what a stale handle gets back. Written with the names hecs and Bevy
//! users type first.
//!
//! Shows: `#[derive(Component)]` and `#[derive(Bundle)]`, `World::spawn`
//! with a tuple or a bundle struct, `get`/`get_mut`, `insert_one`,
//! `remove_one`, `entity_mut` handles, `take` into another world,
//! `clone_entity`, and the errors a despawned id gets.
//!
//! ```text
//! cargo run --example entities
//! ```

use mosaic::prelude::*;

#[derive(Component, Clone, Debug, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Clone, Debug, PartialEq)]
struct Health(u32);

#[derive(Component, Debug)]
struct Poisoned;

/// A bundle: a struct of components spawned together.
#[derive(Bundle)]
struct Monster {
    position: Position,
    health: Health,
}

fn main() {
    let mut world = World::new();

    // Spawn from a tuple or a bundle struct; each returns the new id.
    let hero = world.spawn((Position { x: 0.0, y: 0.0 }, Health(10)));
    let orc = world.spawn(Monster {
        position: Position { x: 5.0, y: 1.0 },
        health: Health(30),
    });
    println!(
        "spawned hero {hero:?} and orc {orc:?}; {} entities",
        world.len()
    );

    // Read and write one component.
    world.get_mut::<Position>(hero).unwrap().x += 2.0;
    println!("hero at {:?}", world.get::<Position>(hero).unwrap());

    // Add and remove components at run time.
    world.insert_one(orc, Poisoned).unwrap();
    println!("orc poisoned: {}", world.has::<Poisoned>(orc));
    let cured: Poisoned = world.remove_one::<Poisoned>(orc).unwrap();
    println!(
        "removed {cured:?}; poisoned now: {}",
        world.has::<Poisoned>(orc)
    );

    // A handle for several calls on one entity.
    let mut handle = world.entity_mut(orc).unwrap();
    handle.get_mut::<Health>().unwrap().0 -= 12;
    println!("orc has {:?}", handle.component_names());
    assert_eq!(handle.get::<Health>(), Ok(&Health(18)));

    // Clone an entity (its `Clone` components), or move it to another world.
    let twin = world.clone_entity(orc).unwrap();
    let mut next_level = World::new();
    let moved = next_level.spawn(world.take(orc).unwrap());
    println!(
        "twin {twin:?} has {:?}; the orc moved to the next level as {moved:?} with {:?}",
        world.get::<Health>(twin).unwrap(),
        next_level.get::<Health>(moved).unwrap()
    );

    // A despawned (or taken) id is stale: every call says so, none panics.
    world.despawn(hero).unwrap();
    for stale in [hero, orc] {
        match world.get::<Position>(stale) {
            Err(ComponentError::NoSuchEntity(e)) => println!("{e:?} is gone, as expected"),
            other => panic!("a stale handle must be refused, got {other:?}"),
        }
    }
    assert_eq!(world.len(), 1);
    println!("{} entity left: the twin", world.len());
}
