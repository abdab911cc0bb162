//! The hierarchy: parents and children through the built-in `ChildOf`.
//!
//! Shows: `with_children` on a spawn and on `commands.entity(e)`,
//! `ChildOf(parent)` in a spawn bundle and `Query<&ChildOf>` (Bevy's
//! spelling), `spawn_child`, `add_child`/`set_parent`, `parent`, `children`,
//! `ancestors`, `descendants`, a parent-first pass for global positions
//! (`ParentFirst`), a refused cycle, and `despawn_recursive` against
//! `despawn`.
//!
//! ```text
//! cargo run --example hierarchy
//! ```

use mosaic::prelude::*;

#[derive(Component)]
struct Local(f32);
#[derive(Component, Debug, PartialEq)]
struct Global(f32);

fn main() {
    let mut world = World::new();
    let tank = world
        .spawn_entity((Name::new("tank"), Local(10.0), Global(0.0)))
        .with_children(|t| {
            t.spawn((Name::new("turret"), Local(1.0), Global(0.0)));
        })
        .id();
    let turret = world.children(tank)[0];
    let barrel = world
        .spawn_child(turret, (Name::new("barrel"), Local(0.5), Global(0.0)))
        .unwrap();

    // From a system: `commands.entity(e).with_children(..)`, or Bevy's
    // `ChildOf(parent)` in the bundle.
    world.run_system_once(move |mut commands: Commands| {
        commands.entity(tank).with_children(|t| {
            t.spawn((Name::new("antenna"), Local(-1.0), Global(0.0)));
        });
        commands.spawn((Name::new("flag"), Local(-2.0), Global(0.0), ChildOf(tank)));
    });
    let parents = world.run_system_once(|q: Query<(&Name, &ChildOf)>| {
        q.iter()
            .map(|(name, child_of)| (name.as_str().to_owned(), child_of.parent()))
            .collect::<Vec<_>>()
    });
    println!("children and their parents: {parents:?}");
    assert_eq!(parents.len(), 4);

    // Parent-first order: each entity after its parent.
    let mut order = ParentFirst::<ChildOf>::new();
    for &e in order.get(&world) {
        let base = world
            .parent(e)
            .map_or(0.0, |p| world.get::<Global>(p).unwrap().0);
        let local = world.get::<Local>(e).unwrap().0;
        world.get_mut::<Global>(e).unwrap().0 = base + local;
    }
    let mut q = world.query::<(&Name, &Global)>();
    for (name, g) in q.iter(&world) {
        println!("{:>8} at {}", name.as_str(), g.0);
    }
    assert_eq!(world.get::<Global>(barrel), Ok(&Global(11.5)));

    let up: Vec<Entity> = world.ancestors(barrel).collect();
    println!(
        "barrel's ancestors: {up:?}; tank's descendants: {}",
        world.descendants(tank).count()
    );

    // A cycle is refused and changes nothing.
    println!(
        "tank under its own barrel: {:?}",
        world.add_child(barrel, tank)
    );
    assert!(world.parent(tank).is_none());

    // `despawn` unparents the children; `despawn_recursive` takes them along.
    world.despawn(turret).unwrap();
    println!(
        "after despawning the turret, the barrel's parent is {:?}",
        world.parent(barrel)
    );
    world.set_parent(barrel, tank).unwrap();
    world.despawn_recursive(tank).unwrap();
    println!("after despawn_recursive: {} entities", world.len());
    assert!(world.is_empty());
}
