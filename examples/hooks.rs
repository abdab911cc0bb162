//! Component hooks: functions a component type runs on its own lifecycle.
//!
//! Shows: `#[component(on_add, on_insert, on_replace, on_remove,
//! on_despawn)]`, hooks taking `Entity` or Bevy's `HookContext`, and a hook
//! keeping an index (a name -> entity map) exact, with an immutable
//! component so it can only change by `insert`.
//!
//! ```text
//! cargo run --example hooks
//! ```

use mosaic::HookContext;
use mosaic::prelude::*;
use std::collections::HashMap;

/// A unique tag, indexed by hooks. Immutable: no `get_mut`, only `insert`,
/// which runs the hooks, so the index cannot go stale.
#[derive(Component, Debug)]
#[component(immutable, on_insert = index_tag, on_replace = unindex_tag)]
struct Tag(&'static str);

#[derive(Resource, Default)]
struct TagIndex(HashMap<&'static str, Entity>);

fn index_tag(mut world: DeferredWorld, e: Entity) {
    let tag = world.get::<Tag>(e).unwrap().0;
    world.resource_mut::<TagIndex>().0.insert(tag, e);
}

// `on_replace` runs before a value is overwritten or removed: the old one.
fn unindex_tag(mut world: DeferredWorld, context: HookContext) {
    let tag = world.get::<Tag>(context.entity).unwrap().0;
    world.resource_mut::<TagIndex>().0.remove(tag);
}

#[derive(Component)]
#[component(on_add = hello, on_remove = bye, on_despawn = gone)]
struct Noisy;

fn hello(_: DeferredWorld, e: Entity) {
    println!("  on_add: {e:?} got Noisy");
}
fn bye(_: DeferredWorld, e: Entity) {
    println!("  on_remove: {e:?} loses Noisy");
}
fn gone(_: DeferredWorld, e: Entity) {
    println!("  on_despawn: {e:?} is despawned");
}

fn main() {
    let mut world = World::new();
    world.init_resource::<TagIndex>();

    let a = world.spawn((Tag("gate"), Noisy));
    let b = world.spawn(Tag("lever"));
    world.insert(b, Tag("switch")).unwrap(); // replace: unindex "lever", index "switch"
    world.remove_one::<Noisy>(a).unwrap();
    world.insert_one(a, Noisy).unwrap();
    world.despawn(a).unwrap(); // on_despawn, then on_replace and on_remove of each

    let index = &world.resource::<TagIndex>().0;
    let mut names: Vec<_> = index.keys().collect();
    names.sort();
    println!("index: {names:?}");
    assert_eq!(index.get("switch"), Some(&b));
    assert_eq!(index.len(), 1);
}
