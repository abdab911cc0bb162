//! One-shot systems: logic run on demand, not every frame.
//!
//! Shows: `register_system` and `run_system` (state such as a `Local`
//! kept between runs), a table of spells as `SystemId`s, running one from
//! a system with `commands.run_system`, and `run_system_once` as the
//! throw-away form that returns a value.
//!
//! ```text
//! cargo run --example one_shot
//! ```

use mosaic::prelude::*;
use std::collections::HashMap;

#[derive(Component)]
struct Monster(u32);
#[derive(Resource, Default)]
struct Spellbook(HashMap<&'static str, SystemId>);
#[derive(Resource, Default)]
struct Cast(Vec<&'static str>);

fn fireball(mut q: Query<&mut Monster>, mut casts: Local<u32>) {
    *casts += 1;
    for m in &mut q {
        m.0 = m.0.saturating_sub(5);
    }
    println!("  fireball #{}", *casts);
}

fn smite(mut commands: Commands, q: Query<(Entity, &Monster)>) {
    let weak = q
        .iter()
        .filter(|(_, m)| m.0 < 10)
        .map(|(e, _)| e)
        .collect::<Vec<_>>();
    println!("  smite: {} weak monsters destroyed", weak.len());
    for e in weak {
        commands.despawn(e);
    }
}

/// A system that decides which spell to cast and casts it by id.
fn caster(book: Res<Spellbook>, cast: Res<Cast>, mut commands: Commands) {
    for name in &cast.0 {
        commands.run_system(book.0[name]);
    }
}

fn main() {
    let mut world = World::new();
    world.spawn_batch([Monster(8), Monster(12), Monster(30)]);

    let mut book = Spellbook::default();
    book.0.insert("fireball", world.register_system(fireball));
    book.0.insert("smite", world.register_system(smite));
    let fire = book.0["fireball"];
    world.insert_resource(book);

    println!("by hand:");
    world.run_system(fire).unwrap();
    world.run_system(fire).unwrap(); // its Local counts on

    println!("from a system:");
    world.insert_resource(Cast(vec!["fireball", "smite"]));
    world.run_system_once(caster);

    let left =
        world.run_system_once(|q: Query<&Monster>| q.iter().map(|m| m.0).collect::<Vec<_>>());
    println!("monsters left: {left:?}");
    assert_eq!(left, [15]);
}
