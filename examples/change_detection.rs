//! Change detection: what was added or changed since a system last ran.
//!
//! Shows: `Added<T>` and `Changed<T>` filters, `Ref<T>` per item, `Mut<T>`
//! with `set_if_neq` (a write only when the value differs), `Res::is_changed`,
//! and `RemovedComponents<T>`.
//!
//! ```text
//! cargo run --example change_detection [FRAMES]    # default 4 frames
//! ```

use mosaic::prelude::*;
use mosaic::{Mut, Ref};

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Health(u32);
#[derive(Component)]
struct Poison;

fn poison(mut q: Query<Mut<Health>, With<Poison>>) {
    for mut h in &mut q {
        let next = Health(h.0.saturating_sub(10).max(1)); // poison never kills
        h.set_if_neq(next); // unchanged at 1 hp: not marked
    }
}

fn new_arrivals(q: Query<Entity, Added<Health>>) {
    for e in &q {
        println!("  new: {e:?}");
    }
}

fn health_bars(q: Query<(Entity, Ref<Health>)>) {
    for (e, h) in &q {
        if h.is_changed() && !h.is_added() {
            println!("  redraw {e:?}'s bar: {} hp", h.0);
        }
    }
}

fn obituaries(mut removed: RemovedComponents<Health>) {
    for e in removed.read() {
        println!("  {e:?} lost its Health");
    }
}

fn main() {
    let frames: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4);
    let mut world = World::new();
    let a = world.spawn((Health(25), Poison));
    let b = world.spawn(Health(100));

    let mut schedule = Schedule::new();
    schedule.add_systems((poison, new_arrivals, health_bars, obituaries).chain());
    let mut changed = world.query_filtered::<Entity, Changed<Health>>();
    changed.iter(&world).count(); // first run: sees everything

    for frame in 1..=frames {
        println!("frame {frame}:");
        if frame == 2 {
            world.spawn(Health(7));
        }
        if frame == 3 {
            world.remove_one::<Health>(b).unwrap();
        }
        schedule.run(&mut world);
        let now: Vec<Entity> = changed.iter(&world).collect();
        println!("  changed since the last look: {now:?}");
    }
    assert_eq!(world.get::<Health>(a), Ok(&Health(1)));
}
