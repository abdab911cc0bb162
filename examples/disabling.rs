//! Disabling: pause entities without despawning them.
//!
//! Shows: the `Disabled` marker, queries that skip disabled entities unless
//! they name the marker, direct access by id that still sees them, and
//! that disabling moves no data and makes no archetype.
//!
//! ```text
//! cargo run --example disabling [FRAMES]    # default 4 frames
//! ```

use mosaic::prelude::*;

#[derive(Component)]
struct Position(f32);
#[derive(Component)]
struct Velocity(f32);

fn movement(mut q: Query<(&mut Position, &Velocity)>) {
    for (p, v) in &mut q {
        p.0 += v.0;
    }
}

fn main() {
    let frames: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4);
    let mut world = World::new();
    let ships: Vec<Entity> = (0..4)
        .map(|i| world.spawn((Position(0.0), Velocity(1.0 + i as f32))))
        .collect();
    let mut schedule = Schedule::new();
    schedule.add_systems(movement);

    let tables = world.archetype_count();
    world.insert_one(ships[1], Disabled).unwrap(); // "pause this ship"
    assert_eq!(world.archetype_count(), tables); // no table made or moved to

    for _ in 0..frames {
        schedule.run(&mut world);
    }
    let mut positions = world.query::<(Entity, &Position)>();
    println!("queries skip the paused ship:");
    for (e, p) in positions.iter(&world) {
        println!("  {e:?} at {}", p.0);
    }
    println!(
        "but access by id sees it: {:?} at {}",
        ships[1],
        world.get::<Position>(ships[1]).unwrap().0
    );

    let mut paused = world.query_filtered::<Entity, With<Disabled>>();
    println!(
        "a query naming Disabled finds {:?}",
        paused.iter(&world).collect::<Vec<_>>()
    );

    world.remove_one::<Disabled>(ships[1]).unwrap(); // resume
    schedule.run(&mut world);
    assert_eq!(positions.iter(&world).count(), 4);
    assert_eq!(world.get::<Position>(ships[1]).unwrap().0, 2.0);
    println!("resumed: it moved once more, from where it stopped");
}
