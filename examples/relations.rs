//! Relations: typed edges between entities, with data per edge.
//!
//! Shows: `#[derive(Relation)]`, `#[relation(one)]` (one target per
//! source), an `on_target_despawn` policy, `relate`/`unrelate`,
//! `targets`/`sources`, edge data with `relation`/`relation_mut`, queries
//! over `Relation<R>`, and that edges never change archetypes.
//!
//! ```text
//! cargo run --example relations
//! ```

use mosaic::prelude::*;

/// Who attacks whom, with a priority per edge (many-to-many).
#[derive(Relation, Debug, PartialEq)]
struct Targets {
    priority: u8,
}

/// Each follower follows one leader; when the leader goes, so do they.
#[derive(Relation, Debug)]
#[relation(one, on_target_despawn = "despawn")]
struct Follows;

fn main() {
    let mut world = World::new();
    let [knight, archer, dragon, goblin] =
        ["knight", "archer", "dragon", "goblin"].map(|n| world.spawn(Name::new(n)));
    let archetypes = world.archetype_count();

    world
        .relate(knight, dragon, Targets { priority: 2 })
        .unwrap();
    world
        .relate(archer, dragon, Targets { priority: 1 })
        .unwrap();
    world
        .relate(archer, goblin, Targets { priority: 5 })
        .unwrap();
    assert_eq!(world.archetype_count(), archetypes); // edges move no data

    let name = |w: &World, e: Entity| w.get::<Name>(e).unwrap().as_str().to_owned();
    for target in [dragon, goblin] {
        let attackers: Vec<String> = world
            .sources::<Targets>(target)
            .iter()
            .map(|&e| name(&world, e))
            .collect();
        println!("{} is attacked by {attackers:?}", name(&world, target));
    }
    world
        .relation_mut::<Targets>(archer, dragon)
        .unwrap()
        .priority = 9;
    println!(
        "archer -> dragon: {:?}",
        world.relation::<Targets>(archer, dragon)
    );

    // Queries see relations as the components they are.
    let mut busy = world.query::<(&Name, &Relation<Targets>)>();
    for (n, r) in busy.iter(&world) {
        println!("{} has {} target(s)", n.as_str(), r.len());
    }

    world.unrelate::<Targets>(archer, goblin).unwrap();
    assert_eq!(world.targets::<Targets>(archer), [dragon]);

    // A `one` relation with a cascade: the goblin's minions follow it out.
    let minions: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    for &m in &minions {
        world.relate(m, goblin, Follows).unwrap();
    }
    world.despawn(goblin).unwrap();
    println!(
        "minions left after the goblin: {}",
        minions.iter().filter(|&&m| world.contains(m)).count()
    );
    assert!(minions.iter().all(|&m| !world.contains(m)));

    // Despawning a target removes every edge that named it.
    world.despawn(dragon).unwrap();
    assert!(world.targets::<Targets>(knight).is_empty());
    println!("the dragon is gone, and so are the edges to it");
}
