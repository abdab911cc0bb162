//! Integration tests for entity handles (`World::entity`, `World::entity_mut`):
//! reads, inserts, removes and despawns through the handle behave as the
//! world's own methods, stale handles are refused with `NoSuchEntity`, the
//! component listing covers table and sparse storage, every value is
//! dropped exactly once, and an observer that despawns the entity in the
//! middle of a chain makes the next call report it instead of panicking.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct A(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct B(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S(u32);

#[derive(Component)]
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn entity_ref_reads_components() {
    let mut world = World::new();
    let e = world.spawn((A(1), S(3)));
    let entity = world.entity(e).unwrap();
    assert_eq!(entity.id(), e);
    assert_eq!(entity.get::<A>(), Ok(&A(1)));
    assert_eq!(entity.get::<S>(), Ok(&S(3)));
    assert!(entity.contains::<A>() && entity.has::<S>());
    assert!(!entity.contains::<B>());
    assert_eq!(
        entity.get::<B>(),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "B".into()
        })
    );
    // The handle is Copy and lends references for the world's lifetime.
    let copy = entity;
    let a: &A = copy.get::<A>().unwrap();
    assert_eq!(a.0 + entity.get::<S>().unwrap().0, 4);
}

#[test]
fn entity_ref_lists_table_then_sparse_components() {
    let mut world = World::new();
    let e = world.spawn((S(0), B(0), A(0)));
    let ids = [
        world.component_id::<A>().unwrap(),
        world.component_id::<B>().unwrap(),
        world.component_id::<S>().unwrap(),
    ];
    let entity = world.entity(e).unwrap();
    let mut listed = entity.component_ids();
    assert_eq!(listed.len(), 3);
    assert_eq!(*listed.last().unwrap(), ids[2], "sparse ones come last");
    listed.sort();
    let mut expected = ids.to_vec();
    expected.sort();
    assert_eq!(listed, expected);
    let mut names = entity.component_names();
    assert_eq!(names.pop(), Some("S"));
    names.sort_unstable();
    assert_eq!(names, ["A", "B"]);
    for id in ids {
        assert!(entity.contains_id(id));
    }
    let empty = world.spawn(());
    assert!(world.entity(empty).unwrap().component_ids().is_empty());
    assert!(!world.entity(empty).unwrap().contains_id(ids[0]));
}

#[test]
fn stale_handles_are_refused() {
    let mut world = World::new();
    let e = world.spawn(A(1));
    world.despawn(e).unwrap();
    assert_eq!(world.entity(e).unwrap_err(), EntityError::NoSuchEntity(e));
    assert_eq!(
        world.entity_mut(e).unwrap_err().to_string(),
        "entity 0v1 does not exist (despawned, or never spawned in this world)"
    );
    // The slot is reused with a new generation; the old id stays refused.
    let again = world.spawn(A(2));
    assert_eq!(again.index(), e.index());
    assert!(world.entity(e).is_err());
    assert_eq!(world.entity(again).unwrap().get::<A>(), Ok(&A(2)));
}

#[test]
fn entity_world_mut_inserts_removes_and_despawns() {
    let mut world = World::new();
    let other = world.spawn(A(100));
    let e = world.spawn(A(1));
    let mut entity = world.entity_mut(e).unwrap();
    entity.insert((B(2), S(3))).unwrap().insert(A(10)).unwrap();
    assert_eq!(entity.get::<A>(), Ok(&A(10)));
    entity.get_mut::<B>().unwrap().0 += 5;
    assert_eq!(entity.remove::<(B, S)>(), Ok((B(7), S(3))));
    assert!(entity.remove::<S>().is_err());
    assert!(!entity.has::<B>() && entity.contains::<A>());
    assert_eq!(entity.component_names(), ["A"]);
    assert_eq!(entity.as_readonly().unwrap().get::<A>(), Ok(&A(10)));
    entity.despawn().unwrap();
    assert!(!world.contains(e));
    assert_eq!(world.get::<A>(other), Ok(&A(100)), "other entity untouched");
    world.check_invariants();
}

#[test]
fn entity_world_mut_drops_each_value_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let e = world.spawn(Counted(drops.clone()));
    let mut entity = world.entity_mut(e).unwrap();
    // Replacing drops the old value; removing hands the value back.
    entity.insert(Counted(drops.clone())).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let taken = entity.remove::<Counted>().unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(taken);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    entity.insert(Counted(drops.clone())).unwrap();
    entity.despawn().unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

#[test]
fn entity_despawned_by_observer_reports_on_next_call() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnAdd<B>>, mut w: DeferredWorld| {
        w.commands().despawn(t.entity().unwrap());
    });
    let e = world.spawn(A(1));
    let mut entity = world.entity_mut(e).unwrap();
    entity.insert(B(2)).unwrap();
    // The observer's despawn has run by now: every call says so.
    assert!(!entity.world().contains(e));
    assert_eq!(entity.get::<A>(), Err(ComponentError::NoSuchEntity(e)));
    assert_eq!(
        entity.insert(A(3)).err(),
        Some(EntityError::NoSuchEntity(e))
    );
    assert!(entity.as_readonly().is_err());
    assert!(entity.component_ids().is_empty());
    assert!(!entity.contains::<A>());
    assert_eq!(entity.despawn(), Err(EntityError::NoSuchEntity(e)));
}

#[test]
fn entity_mut_handle_debug_names_components() {
    let mut world = World::new();
    let e = world.spawn((A(1), S(2)));
    let text = format!("{:?}", world.entity_mut(e).unwrap());
    assert!(
        text.contains("EntityWorldMut") && text.contains("\"A\", \"S\""),
        "{text}"
    );
    let text = format!("{:?}", world.entity(e).unwrap());
    assert!(text.starts_with("EntityRef"), "{text}");
}

#[test]
fn world_iter_visits_every_live_entity_once() {
    let mut world = World::new();
    let mut spawned: Vec<Entity> = (0..5).map(|i| world.spawn(A(i))).collect();
    spawned.extend((0..3).map(|i| world.spawn((A(i), S(i)))));
    spawned.push(world.spawn(()));
    world.despawn(spawned.remove(2)).unwrap();
    let seen: Vec<Entity> = world.iter().map(|e| e.id()).collect();
    assert_eq!(seen.len(), world.len());
    let mut sorted = seen.clone();
    sorted.sort();
    spawned.sort();
    assert_eq!(sorted, spawned, "each live entity exactly once");
    // Order: archetypes in creation order (empty first), rows in order.
    let by_archetype: Vec<Entity> = world
        .archetypes()
        .flat_map(|a| a.entities().to_vec())
        .collect();
    assert_eq!(seen, by_archetype);
    let with_s = world.iter().filter(|e| e.contains::<S>()).count();
    assert_eq!(with_s, 3);
    assert_eq!(World::new().iter().count(), 0);
}

#[test]
fn flush_makes_reserved_entities_live() {
    let mut world = World::new();
    let spawned = world.spawn(A(1));
    let reserved = world.reserve_entity();
    assert!(!world.contains(reserved));
    assert!(world.entity(reserved).is_err(), "not live before a flush");
    assert_eq!(world.iter().count(), 1);
    world.flush();
    assert!(world.contains(reserved));
    assert!(world.entity(reserved).unwrap().component_ids().is_empty());
    let ids: Vec<Entity> = world.iter().map(|e| e.id()).collect();
    assert_eq!(ids, [reserved, spawned]);
    world.flush(); // nothing reserved: a no-op
    assert_eq!(world.len(), 2);
    world.check_invariants();
}

#[test]
fn entity_mut_accepts_reserved_ids() {
    let mut world = World::new();
    let reserved = world.reserve_entity();
    world.entity_mut(reserved).unwrap().insert(A(4)).unwrap();
    assert_eq!(world.get::<A>(reserved), Ok(&A(4)));
}
