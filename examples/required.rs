//! Required components: adding one component brings the ones it needs.
//!
//! Shows: `#[require(A, B = expr)]`, defaults and given values, a given
//! value winning over the requirement, chains of requirements, and a hook
//! that already sees the required components.
//!
//! ```text
//! cargo run --example required
//! ```

use mosaic::prelude::*;

#[derive(Component, Default, Debug, PartialEq)]
struct Position(f32, f32);
#[derive(Component, Debug, PartialEq)]
struct Mass(f32);

#[derive(Component, Default)]
#[require(Position, Mass = Mass(1.0))]
#[component(on_add = check)]
struct RigidBody;

// Player requires RigidBody, which requires Position and Mass: a chain.
#[derive(Component)]
#[require(RigidBody)]
struct Player;

fn check(world: DeferredWorld, e: Entity) {
    // The whole change is in before any hook runs.
    println!(
        "  RigidBody on {e:?}: mass {:?}",
        world.get::<Mass>(e).unwrap()
    );
}

fn main() {
    let mut world = World::new();
    let plain = world.spawn(RigidBody);
    let heavy = world.spawn((RigidBody, Mass(80.0), Position(2.0, 3.0)));
    let player = world.spawn(Player);

    assert_eq!(world.get::<Position>(plain), Ok(&Position(0.0, 0.0)));
    assert_eq!(world.get::<Mass>(plain), Ok(&Mass(1.0)));
    assert_eq!(world.get::<Mass>(heavy), Ok(&Mass(80.0)));
    assert!(world.has::<RigidBody>(player) && world.has::<Mass>(player));
    println!(
        "player has {:?}",
        world.entity(player).unwrap().component_names()
    );

    // Inserting later brings them too; removing leaves them.
    let late = world.spawn(Position(9.0, 9.0));
    world.insert_one(late, RigidBody).unwrap();
    assert_eq!(world.get::<Position>(late), Ok(&Position(9.0, 9.0)));
    world.remove_one::<RigidBody>(late).unwrap();
    println!(
        "after removing RigidBody: {:?}",
        world.entity(late).unwrap().component_names()
    );
}
