//! Queries and filters: visit the entities that have what you name.
//!
//! Shows: a `QueryState` built once and run every frame, `&T`/`&mut T`,
//! `Option`, `Has`, `With`/`Without`/`Or` filters, `get` of one entity,
//! `iter_combinations` for pairs, the standard `Name` component, and a named-field query
//! (`#[derive(QueryData)]`).
//!
//! ```text
//! cargo run --example queries
//! ```

use mosaic::prelude::*;

#[derive(Component, Debug)]
struct Position(f32);
#[derive(Component)]
struct Velocity(f32);
#[derive(Component)]
struct Frozen;
#[derive(Component)]
struct Player;

/// A query with named parts instead of a tuple.
#[derive(QueryData)]
struct Mover<'w> {
    pos: &'w mut Position,
    vel: &'w Velocity,
}

fn main() {
    let mut world = World::new();
    world.spawn((Position(0.0), Velocity(1.0), Player, Name::new("hero")));
    world.spawn((Position(3.0), Velocity(-1.0), Name::new("slime")));
    world.spawn((Position(8.0), Velocity(2.0), Frozen, Name::new("ice golem")));
    let tree = world.spawn((Position(5.0), Name::new("tree")));

    // Build once, run each frame: the state caches the matching tables.
    let mut movers = world.query_filtered::<Mover, Without<Frozen>>();
    for frame in 1..=3 {
        for m in movers.iter_mut(&mut world) {
            m.pos.0 += m.vel.0;
        }
        let mut all = world.query::<(&Name, &Position)>();
        let line: Vec<String> = all
            .iter(&world)
            .map(|(n, p)| format!("{} {:.0}", n.as_str(), p.0))
            .collect();
        println!("frame {frame}: {}", line.join(", "));
    }

    // Optional data and `Has`: one query over different shapes.
    let mut shapes = world.query::<(&Name, Option<&Velocity>, Has<Frozen>)>();
    for (name, vel, frozen) in shapes.iter(&world) {
        println!(
            "{:>10}: moves {:>5}, frozen {frozen}",
            name.as_str(),
            vel.is_some()
        );
    }

    // Filters combine: players or frozen things.
    let mut special = world.query_filtered::<&Name, Or<(With<Player>, With<Frozen>)>>();
    let names: Vec<&str> = special.iter(&world).map(|n| n.as_str()).collect();
    println!("special: {names:?}");
    assert_eq!(names.len(), 2);

    // One entity by id.
    let mut positions = world.query::<&Position>();
    println!(
        "the tree stands at {:?}",
        positions.get(&world, tree).unwrap()
    );

    // Every pair, in a system (here run once).
    let close = world.run_system_once(|q: Query<(&Name, &Position)>| {
        let mut pairs = Vec::new();
        for [(a, pa), (b, pb)] in q.iter_combinations::<2>() {
            if (pa.0 - pb.0).abs() <= 2.0 {
                pairs.push(format!("{} & {}", a.as_str(), b.as_str()));
            }
        }
        pairs
    });
    println!("within 2 of each other: {close:?}");
}
