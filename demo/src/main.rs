//! The mosaic showcase. Until the full showcase lands (scenes, systems,
//! pictures), it plays a short tour of the core: spawning, querying, a
//! power-up added and removed at run time, despawning, and change detection.

use mosaic::prelude::*;

/// Where an entity is.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

/// How fast it moves, per frame.
#[derive(Component, Clone, Copy, Debug)]
struct Velocity {
    x: f32,
    y: f32,
}

/// Hit points; monsters and the player have them.
#[derive(Component, Debug)]
struct Health(u32);

/// Marks the monsters.
#[derive(Component)]
struct Monster;

/// A power-up that lasts a few frames. Sparse: added and removed often,
/// and adding it moves no other data.
#[derive(Component)]
#[component(storage = "sparse")]
struct Ghost {
    frames_left: u32,
}

fn main() {
    let mut world = World::new();
    let player = world.spawn((
        Position { x: 0.0, y: 0.0 },
        Velocity { x: 1.0, y: 0.5 },
        Health(10),
    ));
    let monsters = world.spawn_batch((0..5).map(|i| {
        let x = 10.0 + i as f32;
        (
            Position { x, y: 0.0 },
            Velocity { x: -0.5, y: 0.0 },
            Health(3),
            Monster,
        )
    }));
    world.spawn_batch((0..3).map(|i| Position {
        x: i as f32 * 4.0,
        y: 8.0,
    })); // trees
    println!(
        "mosaic tour: {} entities in {} archetypes",
        world.len(),
        world.archetype_count()
    );

    let mut movement = world.query::<(&mut Position, &Velocity)>();
    let mut ghosts = world.query::<(Entity, &mut Ghost)>();
    let mut moved = world.query_filtered::<Entity, Changed<Position>>();
    moved.iter(&world).for_each(drop); // first run sees everything; start fresh

    for frame in 1..=6 {
        movement.iter_mut(&mut world).for_each(|(p, v)| {
            p.x += v.x;
            p.y += v.y;
        });
        if frame == 2 {
            world
                .insert_one(player, Ghost { frames_left: 3 })
                .expect("player lives");
            println!("frame {frame}: the player picks up a ghost power-up");
        }
        let mut expired = Vec::new();
        for (e, ghost) in ghosts.iter_mut(&mut world) {
            ghost.frames_left -= 1;
            if ghost.frames_left == 0 {
                expired.push(e);
            }
        }
        for e in expired {
            world.remove_one::<Ghost>(e).expect("it had a ghost");
            println!("frame {frame}: the ghost power-up wears off");
        }
        if frame == 4 {
            world.despawn(monsters[0]).expect("monster lives");
            println!("frame {frame}: a monster is destroyed");
        }
        println!(
            "frame {frame}: {} entities moved",
            moved.iter(&world).count()
        );
    }
    let p = world.get::<Position>(player).expect("player lives");
    println!("the player ends at ({:.1}, {:.1})", p.x, p.y);
    let mut monsters_left = world.query_filtered::<&Health, With<Monster>>();
    let hp: u32 = monsters_left.iter(&world).map(|h| h.0).sum();
    println!(
        "{} monsters remain, with {hp} hit points in all",
        monsters_left.iter(&world).count()
    );
    let stale = world.get::<Position>(monsters[0]);
    println!("a stale handle is refused: {}", stale.unwrap_err());
}
