//! Table and sparse storage: choose per component type.
//!
//! Shows: `#[component(storage = "sparse")]` for a component that comes
//! and goes (no row moves, no new archetype), a query driven by a small
//! sparse set, `sparse_mut` for many toggles, `sort_by_key` to put data
//! used together side by side, and `memory_report`.
//!
//! ```text
//! cargo run --example storage [ENTITIES]    # default 10000
//! ```

use mosaic::prelude::*;

#[derive(Component)]
struct Position(f32);

/// Comes and goes every few frames: sparse.
#[derive(Component)]
#[component(storage = "sparse")]
struct Burning(u8);

/// Swept every frame with Position: the default, a table.
#[derive(Component)]
struct Cell(u32);

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let mut world = World::new();
    let all = world.spawn_batch((0..n).map(|i| (Position(i as f32), Cell((i * 7919 % 64) as u32))));
    let tables = world.archetype_count();

    // Set a few on fire: the entities stay in their table.
    for &e in all.iter().step_by(50) {
        world.insert_one(e, Burning(3)).unwrap();
    }
    println!(
        "{} burning; archetypes before {tables}, after {}",
        n.div_ceil(50),
        world.archetype_count()
    );
    assert_eq!(world.archetype_count(), tables);

    // This query walks the Burning set (n / 50 entities), not every table row.
    let mut burning = world.query::<(&Position, &mut Burning)>();
    let mut hottest = 0.0f32;
    for (p, b) in burning.iter_mut(&mut world) {
        b.0 -= 1;
        hottest = hottest.max(p.0);
    }
    println!("furthest burning entity at {hottest}");

    // Put out every fire: resolve the set once, then remove many.
    let mut set = world.sparse_mut::<Burning>().unwrap();
    for &e in all.iter().step_by(50) {
        set.remove(e).unwrap();
    }
    assert_eq!(burning.iter_mut(&mut world).count(), 0);

    // Rows in grid-cell order: neighbours in space are neighbours in memory.
    world.sort_by_key::<Cell, _>(|c| c.0);
    let mut cells = world.query::<&Cell>();
    let sorted: Vec<u32> = cells.iter(&world).map(|c| c.0).collect();
    assert!(sorted.windows(2).all(|w| w[0] <= w[1]));

    let report = world.memory_report();
    println!("{report}");
    println!(
        "{} bytes in all, {:.1} per entity",
        report.total_bytes(),
        report.total_bytes() as f64 / n as f64
    );
}
