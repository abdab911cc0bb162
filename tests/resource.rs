//! Integration tests for resources: the `World` API (`insert_resource`,
//! `resource`, `resource_mut`, `get_resource`, `get_resource_mut`,
//! `remove_resource`, `contains_resource`, `resource_or_default`,
//! `resource_id`), replacement and drop behaviour, the panic message of
//! `resource::<R>()` / `resource_mut::<R>()` for a missing `R`, and the rule
//! that any `Send + Sync + 'static` type is a resource without a derive.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;

#[derive(Debug, PartialEq, Default)]
struct Score(u32);

#[derive(Debug, PartialEq)]
struct Gravity(f32);

struct Missing;

/// Counts how many times a value was dropped.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn insert_then_read() {
    let mut world = World::new();
    world.insert_resource(Score(3));
    world.insert_resource(Gravity(9.8));
    assert_eq!(world.resource::<Score>(), &Score(3));
    assert_eq!(world.resource::<Gravity>(), &Gravity(9.8));
    assert_eq!(world.get_resource::<Score>(), Some(&Score(3)));
    assert!(world.contains_resource::<Score>());
    assert!(world.contains_resource::<Gravity>());
    assert!(!world.contains_resource::<Missing>());
}

#[test]
fn resource_mut_writes_through() {
    let mut world = World::new();
    world.insert_resource(Score(1));
    world.resource_mut::<Score>().0 += 41;
    assert_eq!(world.resource::<Score>().0, 42);
    if let Some(score) = world.get_resource_mut::<Score>() {
        score.0 *= 2;
    }
    assert_eq!(world.resource::<Score>().0, 84);
}

#[test]
fn get_resource_on_missing_is_none() {
    let mut world = World::new();
    assert!(world.get_resource::<Score>().is_none());
    assert!(world.get_resource_mut::<Score>().is_none());
    assert!(world.remove_resource::<Score>().is_none());
    assert!(!world.contains_resource::<Score>());
}

#[test]
fn insert_replaces_and_drops_the_old_value() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    world.insert_resource(DropCounter(drops.clone()));
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    world.insert_resource(DropCounter(drops.clone()));
    assert_eq!(drops.load(Ordering::SeqCst), 1, "old value dropped");
    assert!(world.contains_resource::<DropCounter>());
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 2, "world drops its resources");

    let mut world = World::new();
    world.insert_resource(Score(1));
    world.insert_resource(Score(2));
    assert_eq!(world.resource::<Score>().0, 2);
}

#[test]
fn remove_resource_returns_the_value() {
    let mut world = World::new();
    world.insert_resource(Score(7));
    assert_eq!(world.remove_resource::<Score>(), Some(Score(7)));
    assert!(!world.contains_resource::<Score>());
    assert!(world.get_resource::<Score>().is_none());
    assert_eq!(world.remove_resource::<Score>(), None);
    // And it can come back.
    world.insert_resource(Score(8));
    assert_eq!(world.resource::<Score>().0, 8);
}

#[test]
fn removed_value_is_not_dropped_by_the_world() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    world.insert_resource(DropCounter(drops.clone()));
    let taken = world.remove_resource::<DropCounter>().unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(taken);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn resource_or_default_inserts_once() {
    let mut world = World::new();
    assert!(!world.contains_resource::<Score>());
    *world.resource_or_default::<Score>() = Score(5);
    assert!(world.contains_resource::<Score>());
    // Present: returns the existing value, does not reset it.
    world.resource_or_default::<Score>().0 += 1;
    assert_eq!(world.resource::<Score>().0, 6);
    assert_eq!(*world.resource_or_default::<Vec<u8>>(), Vec::<u8>::new());
}

#[test]
#[should_panic(expected = "resource `Missing` does not exist in this world")]
fn resource_on_missing_panics_naming_the_type() {
    let world = World::new();
    let _ = world.resource::<Missing>();
}

#[test]
#[should_panic(expected = "resource `Score` does not exist in this world")]
fn resource_mut_on_missing_panics_naming_the_type() {
    let mut world = World::new();
    world.resource_mut::<Score>().0 = 1;
}

#[test]
#[should_panic(expected = "resource `Score` does not exist in this world")]
fn resource_after_remove_panics() {
    let mut world = World::new();
    world.insert_resource(Score(1));
    world.remove_resource::<Score>();
    let _ = world.resource::<Score>();
}

#[test]
fn any_send_sync_type_is_a_resource() {
    // No derive: standard types, tuples, closures' outputs, Arcs.
    let mut world = World::new();
    world.insert_resource(42u32);
    world.insert_resource(String::from("level 1"));
    world.insert_resource(vec![1u8, 2, 3]);
    world.insert_resource((1i64, 'x'));
    world.insert_resource(Arc::new(AtomicUsize::new(9)));
    world.insert_resource(Some(1.5f64));
    assert_eq!(*world.resource::<u32>(), 42);
    assert_eq!(world.resource::<String>(), "level 1");
    assert_eq!(world.resource::<Vec<u8>>(), &[1, 2, 3]);
    assert_eq!(world.resource::<(i64, char)>(), &(1, 'x'));
    assert_eq!(
        world.resource::<Arc<AtomicUsize>>().load(Ordering::SeqCst),
        9
    );
    assert_eq!(world.resource::<Option<f64>>(), &Some(1.5));
    // Distinct types are distinct resources, even if they look alike.
    world.insert_resource(42u64);
    *world.resource_mut::<u64>() += 1;
    assert_eq!(*world.resource::<u32>(), 42);
    assert_eq!(*world.resource::<u64>(), 43);
}

#[test]
fn resource_ids_are_dense_and_stable() {
    let mut world = World::new();
    assert!(world.resource_id::<u8>().is_none());
    world.insert_resource(1u8);
    world.insert_resource(2u16);
    let a = world.resource_id::<u8>().unwrap();
    let b = world.resource_id::<u16>().unwrap();
    assert_eq!((a.index(), b.index()), (0, 1));
    // Removing keeps the id; re-inserting reuses it.
    world.remove_resource::<u8>();
    assert_eq!(world.resource_id::<u8>(), Some(a));
    world.insert_resource(3u8);
    assert_eq!(world.resource_id::<u8>(), Some(a));
}

#[test]
fn worlds_have_separate_resources() {
    let mut a = World::new();
    let mut b = World::new();
    a.insert_resource(Score(1));
    assert!(!b.contains_resource::<Score>());
    b.insert_resource(Score(2));
    assert_eq!(a.resource::<Score>().0, 1);
    assert_eq!(b.resource::<Score>().0, 2);
}

#[test]
fn resources_and_entities_are_independent() {
    let mut world = World::new();
    world.insert_resource(Score(1));
    assert!(world.is_empty(), "a resource is not an entity");
    world.spawn(());
    world.clear();
    assert_eq!(
        world.resource::<Score>().0,
        1,
        "clear keeps resources (it despawns entities)"
    );
}

#[test]
fn res_and_res_mut_in_run_system_once() {
    let mut world = World::new();
    world.insert_resource(Gravity(2.0));
    world.insert_resource(Score(0));
    world.run_system_once(|g: Res<Gravity>, mut s: ResMut<Score>| {
        s.0 += (g.0 * 10.0) as u32;
    });
    assert_eq!(world.resource::<Score>().0, 20);
    let dbg = world.run_system_once(|g: Res<Gravity>| format!("{g:?}"));
    assert_eq!(dbg, "Res(Gravity(2.0))");
    let dbg = world.run_system_once(|s: ResMut<Score>| format!("{s:?}"));
    assert_eq!(dbg, "ResMut(Score(20))");
}
