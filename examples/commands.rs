//! Commands: structural changes recorded by systems, applied at sync points.
//!
//! Shows: `Commands::spawn` (the id is known at once), `commands.entity(e)`
//! with `insert`, `remove` and `despawn`, `spawn_batch`, `queue` for any
//! closure on the world, the automatic sync point between chained systems,
//! and a standalone `CommandBuffer` outside systems.
//!
//! ```text
//! cargo run --example commands [FRAMES]    # default 4 frames
//! ```

use mosaic::prelude::*;

#[derive(Component, Debug)]
struct Health(u32);
#[derive(Component)]
struct Dead;
#[derive(Component, Debug)]
struct Loot(u32);
#[derive(Resource, Default)]
struct Graveyard(u32);

fn hurt(mut q: Query<&mut Health>) {
    for h in &mut q {
        h.0 = h.0.saturating_sub(4);
    }
}

fn mark_dead(mut commands: Commands, q: Query<(Entity, &Health), Without<Dead>>) {
    for (e, h) in &q {
        if h.0 == 0 {
            commands.entity(e).insert(Dead).remove::<Health>();
            let loot = commands.spawn(Loot(e.index()));
            println!("  {e:?} died; its loot will be {loot:?}");
        }
    }
}

// Chained after `mark_dead`: a sync point in between, so `Dead` is there.
fn bury(mut commands: Commands, dead: Query<Entity, With<Dead>>) {
    for e in &dead {
        commands.entity(e).despawn();
        commands.queue(|world: &mut World| world.resource_mut::<Graveyard>().0 += 1);
    }
}

fn main() {
    let frames: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4);
    let mut world = World::new();
    world.init_resource::<Graveyard>();
    world.run_system_once(|mut commands: Commands| {
        commands.spawn_batch([Health(4), Health(8), Health(12)]);
    });

    let mut schedule = Schedule::new();
    schedule.add_systems((hurt, mark_dead, bury).chain());
    for frame in 1..=frames {
        println!("frame {frame}:");
        schedule.run(&mut world);
    }
    let loot: Vec<u32> = world.query::<&Loot>().iter(&world).map(|l| l.0).collect();
    println!("buried {}, loot {loot:?}", world.resource::<Graveyard>().0);

    // Outside systems: record while a query borrows the world, apply after.
    let mut buffer = CommandBuffer::new(&world);
    let mut all_loot = world.query::<(Entity, &Loot)>();
    for (e, l) in all_loot.iter(&world) {
        if l.0 > 0 {
            buffer.despawn(e);
        }
    }
    buffer.apply(&mut world).expect("every command applies");
    println!("{} entities left", world.len());
    assert_eq!(world.resource::<Graveyard>().0, frames.min(3));
}
