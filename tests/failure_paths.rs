//! Failure paths a new user's suite would hit, and the combinations the
//! other suites leave out: a relation's edge data whose `Drop` panics, an
//! observer of a relation's own components that panics, observers of
//! relation events that panic mid-despawn, and the like. Every case
//! catches the panic, then checks `check_invariants`, the exact world state
//! and that a second identical operation behaves as documented.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;
use mosaic::{ComponentError, EntityError, OnRelate, OnUnrelate, QueryEntityError, RelationError};

/// Runs `f`, which must panic; returns the panic's message.
fn expect_panic<R>(f: impl FnOnce() -> R) -> String {
    let payload = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic"),
        Err(payload) => payload,
    };
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic>".to_owned()
    }
}

// ----- edge data whose drop panics ---------------------------------------------------

/// Edge data that panics when dropped if `armed`, counting its drops.
#[derive(Relation)]
struct Grudge {
    armed: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Grudge {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.armed && !std::thread::panicking() {
            panic!("grudge drop");
        }
    }
}

/// A `one` relation with the same data.
#[derive(Relation)]
#[relation(one)]
struct Sworn {
    armed: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Sworn {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.armed && !std::thread::panicking() {
            panic!("sworn drop");
        }
    }
}

fn grudge(armed: bool, drops: &Arc<AtomicUsize>) -> Grudge {
    Grudge {
        armed,
        drops: drops.clone(),
    }
}

fn sworn(armed: bool, drops: &Arc<AtomicUsize>) -> Sworn {
    Sworn {
        armed,
        drops: drops.clone(),
    }
}

#[test]
fn despawning_a_target_whose_incoming_edge_data_panics_on_drop_finishes() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let target = world.spawn(());
    let sources: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    for (i, &s) in sources.iter().enumerate() {
        world.relate(s, target, grudge(i == 1, &drops)).unwrap();
    }
    // The second source also targets another entity, which must keep it.
    let other = world.spawn(());
    world
        .relate(sources[1], other, grudge(false, &drops))
        .unwrap();

    assert_eq!(expect_panic(|| world.despawn(target)), "grudge drop");
    world.check_invariants();
    // The despawn finished: the target is gone, no edge names it, each
    // edge's data was dropped once, and the unrelated edge is kept.
    assert!(!world.contains(target));
    assert_eq!(world.len(), 4);
    for &s in &sources {
        assert!(!world.has_relation::<Grudge>(s, target));
    }
    assert_eq!(world.targets::<Grudge>(sources[1]), [other]);
    assert_eq!(world.sources::<Grudge>(other), [sources[1]]);
    assert!(!world.has::<Relation<Grudge>>(sources[0]));
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    // A second despawn of the same handle is refused cleanly.
    assert_eq!(
        world.despawn(target),
        Err(EntityError::NoSuchEntity(target))
    );
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
}

#[test]
fn despawning_a_source_whose_outgoing_edge_data_panics_on_drop_finishes() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let source = world.spawn(());
    let targets: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    for (i, &t) in targets.iter().enumerate() {
        world.relate(source, t, grudge(i == 0, &drops)).unwrap();
    }
    assert_eq!(expect_panic(|| world.despawn(source)), "grudge drop");
    world.check_invariants();
    assert!(!world.contains(source));
    for &t in &targets {
        assert!(world.sources::<Grudge>(t).is_empty());
        assert!(!world.has::<Sources<Grudge>>(t));
    }
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

#[test]
fn despawning_the_target_of_a_one_relation_whose_data_panics_on_drop_finishes() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let target = world.spawn(());
    let sources: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    for (i, &s) in sources.iter().enumerate() {
        world.relate(s, target, sworn(i == 0, &drops)).unwrap();
    }
    assert_eq!(expect_panic(|| world.despawn(target)), "sworn drop");
    world.check_invariants();
    assert!(!world.contains(target));
    for &s in &sources {
        assert!(world.contains(s));
        assert!(world.targets::<Sworn>(s).is_empty());
        assert!(!world.has::<Relation<Sworn>>(s));
    }
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

#[test]
fn reparenting_a_one_relation_whose_old_data_panics_on_drop_still_reparents() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let (s, old, new) = (world.spawn(()), world.spawn(()), world.spawn(()));
    world.relate(s, old, sworn(true, &drops)).unwrap();
    let msg = expect_panic(|| world.relate(s, new, sworn(false, &drops)));
    assert_eq!(msg, "sworn drop");
    world.check_invariants();
    // "Relating again replaces the edge": the replacement is whole, the
    // old edge's drop panicking or not.
    assert_eq!(world.targets::<Sworn>(s), [new]);
    assert_eq!(world.sources::<Sworn>(new), [s]);
    assert!(world.sources::<Sworn>(old).is_empty());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // The same call again replaces nothing new: the edge exists.
    world.relate(s, new, sworn(false, &drops)).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    assert_eq!(world.targets::<Sworn>(s), [new]);
}

#[test]
fn relating_again_with_data_whose_old_value_panics_on_drop_keeps_the_new_data() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let (s, t) = (world.spawn(()), world.spawn(()));
    world.relate(s, t, grudge(true, &drops)).unwrap();
    let version = world.relation_version::<Grudge>();
    let msg = expect_panic(|| world.relate(s, t, grudge(false, &drops)));
    assert_eq!(msg, "grudge drop");
    world.check_invariants();
    assert!(!world.relation::<Grudge>(s, t).unwrap().armed);
    assert_eq!(world.targets::<Grudge>(s), [t]);
    assert_ne!(world.relation_version::<Grudge>(), version, "data replaced");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn unrelate_all_with_data_that_panics_on_drop_outside_the_world() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let s = world.spawn(());
    let targets: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    for (i, &t) in targets.iter().enumerate() {
        world.relate(s, t, grudge(i == 1, &drops)).unwrap();
    }
    let msg = expect_panic(|| world.unrelate_all::<Grudge>(s));
    assert_eq!(msg, "grudge drop");
    world.check_invariants();
    // Every edge went, each data dropped once: one panicking drop does
    // not leave the rest for a second call.
    assert!(world.targets::<Grudge>(s).is_empty());
    for &t in &targets {
        assert!(world.sources::<Grudge>(t).is_empty());
    }
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(world.unrelate_all::<Grudge>(s), 0);
}

#[test]
fn clearing_and_dropping_a_world_with_panicking_edge_data() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let (a, b, c) = (world.spawn(()), world.spawn(()), world.spawn(()));
    world.relate(a, b, grudge(true, &drops)).unwrap();
    world.relate(c, b, grudge(false, &drops)).unwrap();
    assert_eq!(expect_panic(|| world.clear()), "grudge drop");
    world.check_invariants();
    assert!(world.is_empty());
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.relate(a, b, grudge(true, &drops)).unwrap();
    assert_eq!(world.sources::<Grudge>(b), [a]);
    assert_eq!(expect_panic(move || drop(world)), "grudge drop");
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

// ----- observers of relation events and of relation components -----------------------

#[derive(Relation, Debug, PartialEq)]
struct Likes;

#[derive(Relation, Debug, PartialEq)]
#[relation(one)]
struct Follows;

#[test]
fn an_unrelate_observer_panicking_mid_despawn_leaves_no_dangling_edge() {
    let mut world = World::new();
    let target = world.spawn(());
    let sources: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    for &s in &sources {
        world.relate(s, target, Likes).unwrap();
    }
    let boom_on = sources[1];
    world.observe(move |t: Trigger<OnUnrelate<Likes>>, _: DeferredWorld| {
        if t.entity() == Some(boom_on) {
            panic!("unrelate observer");
        }
    });
    let msg = expect_panic(|| world.despawn(target));
    assert_eq!(msg, "unrelate observer");
    world.check_invariants();
    // The edges' cleanup is part of the despawn, which completes (as it
    // does when a value's drop panics): never an edge naming a dead entity
    // or a half-emptied list.
    assert!(!world.contains(target));
    assert_eq!(world.len(), 3);
    for &s in &sources {
        assert!(world.targets::<Likes>(s).is_empty());
        assert!(!world.has::<Relation<Likes>>(s));
    }
}

#[test]
fn an_add_observer_of_a_relation_component_that_panics_leaves_both_sides_agreeing() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.observe(|_: Trigger<OnAdd<Relation<Likes>>>, _: DeferredWorld| {
        panic!("relation add observer");
    });
    let msg = expect_panic(|| world.relate(a, b, Likes));
    assert_eq!(msg, "relation add observer");
    world.check_invariants();
    assert_eq!(world.targets::<Likes>(a), [b]);
    assert_eq!(world.sources::<Likes>(b), [a]);
}

#[test]
fn an_add_observer_of_a_sources_component_that_panics_leaves_both_sides_agreeing() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.observe(|_: Trigger<OnAdd<Sources<Likes>>>, _: DeferredWorld| {
        panic!("sources add observer");
    });
    let msg = expect_panic(|| world.relate(a, b, Likes));
    assert_eq!(msg, "sources add observer");
    world.check_invariants();
    // The edge is made whole before the observer's panic goes on.
    assert_eq!(world.targets::<Likes>(a), [b]);
    assert_eq!(world.sources::<Likes>(b), [a]);
}

#[test]
fn a_remove_observer_of_a_relation_component_that_panics_leaves_both_sides_agreeing() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.relate(a, b, Likes).unwrap();
    world.observe(|_: Trigger<OnRemove<Relation<Likes>>>, _: DeferredWorld| {
        panic!("relation remove observer");
    });
    let msg = expect_panic(|| world.unrelate::<Likes>(a, b));
    assert_eq!(msg, "relation remove observer");
    world.check_invariants();
    // The edge is gone from both sides; a second unrelate finds nothing.
    assert!(world.targets::<Likes>(a).is_empty());
    assert!(world.sources::<Likes>(b).is_empty());
    assert!(!world.has::<Relation<Likes>>(a) && !world.has::<Sources<Likes>>(b));
    assert_eq!(
        world.unrelate::<Likes>(a, b),
        Err(RelationError::NotRelated {
            entity: a,
            target: b,
            relation: "Likes"
        })
    );
}

#[test]
fn a_remove_observer_of_a_sources_component_that_panics_leaves_both_sides_agreeing() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.relate(a, b, Follows).unwrap();
    world.observe(|_: Trigger<OnRemove<Sources<Follows>>>, _: DeferredWorld| {
        panic!("sources remove observer");
    });
    let c = world.spawn(());
    let msg = expect_panic(|| world.relate(a, c, Follows));
    assert_eq!(msg, "sources remove observer");
    world.check_invariants();
    // The reparenting is whole: `a` follows `c`, and `b` lost its list.
    assert_eq!(world.targets::<Follows>(a), [c]);
    assert_eq!(world.sources::<Follows>(c), [a]);
    assert!(!world.has::<Sources<Follows>>(b));
}

#[test]
fn a_relate_observer_that_panics_leaves_the_edge_whole() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.observe(|_: Trigger<OnRelate<Likes>>, _: DeferredWorld| panic!("relate observer"));
    assert_eq!(
        expect_panic(|| world.relate(a, b, Likes)),
        "relate observer"
    );
    world.check_invariants();
    assert_eq!(world.targets::<Likes>(a), [b]);
    assert_eq!(world.sources::<Likes>(b), [a]);
    // The same call again finds the edge and replaces its data: no event.
    assert_eq!(world.relate(a, b, Likes), Ok(()));
    assert_eq!(world.sources::<Likes>(b), [a]);
}

#[test]
fn self_edges_survive_despawn_and_policies() {
    let mut world = World::new();
    let a = world.spawn(());
    let b = world.spawn(());
    world.relate(a, a, Likes).unwrap();
    world.relate(a, b, Likes).unwrap();
    world.relate(b, a, Likes).unwrap();
    world.relate(b, b, Follows).unwrap();
    world.check_invariants();
    world.relate(b, a, Follows).unwrap();
    world.check_invariants();
    world.despawn(a).unwrap();
    world.check_invariants();
    assert_eq!(world.targets::<Likes>(b), [] as [Entity; 0]);
    assert!(world.targets::<Follows>(b).is_empty());
    world.relate(b, b, Follows).unwrap();
    world.despawn(b).unwrap();
    world.check_invariants();
    assert!(world.is_empty());
    assert_eq!(
        world.relate(a, b, Likes),
        Err(RelationError::NoSuchEntity(a))
    );
}

// ----- a relation's own components are not values to move by hand -------------------

/// Removing `Relation<R>` or `Sources<R>` by hand (the generic component
/// API sees them as components) would leave the other end of each edge
/// naming an entity with no edge. The rule (`is_edge_component`: only
/// relate/unrelate and despawn change them) is enforced with a panic that
/// names the right method, before anything changes.
#[test]
fn removing_a_relation_component_by_hand_is_refused_and_changes_nothing() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.relate(a, b, Likes).unwrap();
    world.relate(a, b, Follows).unwrap();
    let unchanged = |world: &World| {
        world.check_invariants();
        assert_eq!(world.targets::<Likes>(a), [b]);
        assert_eq!(world.sources::<Likes>(b), [a]);
        assert_eq!(world.targets::<Follows>(a), [b]);
    };
    let msg = expect_panic(|| world.remove_one::<Relation<Likes>>(a));
    assert!(msg.contains("unrelate"), "{msg}");
    unchanged(&world);
    let msg = expect_panic(|| world.remove_one::<Sources<Likes>>(b));
    assert!(msg.contains("unrelate"), "{msg}");
    unchanged(&world);
    let msg = expect_panic(|| world.remove::<(Relation<Follows>, Sources<Likes>)>(a));
    assert!(msg.contains("unrelate"), "{msg}");
    unchanged(&world);
    #[derive(Component)]
    struct Marker;
    world.insert_one(a, Marker).unwrap();
    let msg = expect_panic(|| world.remove::<(Marker, Relation<Likes>)>(a));
    assert!(msg.contains("unrelate"), "{msg}");
    assert!(world.has::<Marker>(a));
    unchanged(&world);
    let msg = expect_panic(|| world.exchange::<Relation<Likes>, _>(a, Marker));
    assert!(msg.contains("unrelate"), "{msg}");
    unchanged(&world);
    assert_eq!(
        world.sparse_mut::<Relation<Likes>>().err(),
        Some(mosaic::SparseMutError::Edges("Relation<Likes>".into()))
    );
    assert_eq!(
        world.sparse_mut::<Sources<Follows>>().err(),
        Some(mosaic::SparseMutError::Edges("Sources<Follows>".into()))
    );
    unchanged(&world);
    // The managed way still works, and a despawn after all of the above
    // finds both ends agreeing.
    assert_eq!(world.unrelate::<Likes>(a, b), Ok(Likes));
    world.despawn(b).unwrap();
    world.check_invariants();
    assert!(world.targets::<Follows>(a).is_empty());
}

// ----- observers' commands during an edge change -------------------------------------

#[test]
fn an_observer_command_despawning_the_source_mid_relate_runs_after_the_edge_is_whole() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.observe(|t: Trigger<OnAdd<Sources<Likes>>>, mut w: DeferredWorld| {
        let target = t.entity().unwrap();
        let source = w.world().sources::<Likes>(target).first().copied();
        if let Some(source) = source {
            w.commands().despawn(source);
        }
    });
    assert_eq!(world.relate(a, b, Likes), Ok(()));
    world.check_invariants();
    // The edge was made, then the command despawned its source.
    assert!(!world.contains(a));
    assert!(world.sources::<Likes>(b).is_empty());
    assert!(!world.has::<Sources<Likes>>(b));
    assert_eq!(world.len(), 1);
}

#[test]
fn an_unrelate_observer_relating_the_dying_target_again_leaves_no_edge_to_it() {
    let mut world = World::new();
    let target = world.spawn(());
    let sources: Vec<Entity> = (0..2).map(|_| world.spawn(())).collect();
    for &s in &sources {
        world.relate(s, target, Likes).unwrap();
    }
    world.observe(|t: Trigger<OnUnrelate<Likes>>, mut w: DeferredWorld| {
        let ev = t.event();
        w.commands().relate(ev.source, ev.target, Likes);
    });
    world.despawn(target).unwrap();
    world.check_invariants();
    assert!(!world.contains(target));
    for &s in &sources {
        assert!(
            world.targets::<Likes>(s).is_empty(),
            "no edge to a dead entity"
        );
    }
    assert_eq!(world.len(), 2);
}

// ----- stale handles through the APIs the entity suites leave out --------------------

#[derive(Component, Debug, PartialEq, Clone)]
struct Hp(u32);

#[derive(Component, Debug, PartialEq, Clone)]
#[component(storage = "sparse")]
struct Mark(u8);

#[test]
fn a_stale_handle_is_refused_by_relation_hierarchy_take_clone_and_handle_apis() {
    let mut world = World::new();
    let live = world.spawn((Hp(1), Mark(1)));
    let child = world.spawn_child(live, Hp(2)).unwrap();
    world.relate(live, child, Likes).unwrap();
    let stale = world.spawn(Hp(9));
    world.despawn(stale).unwrap();
    let snapshot = |world: &World| {
        (
            world.len(),
            world.children(live).to_vec(),
            world.targets::<Likes>(live).to_vec(),
            world.get::<Hp>(live).cloned(),
            world.get::<Mark>(live).cloned(),
        )
    };
    let before = snapshot(&world);

    assert_eq!(
        world.entity(stale).err(),
        Some(EntityError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.entity_mut(stale).err(),
        Some(EntityError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.take(stale).err(),
        Some(EntityError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.clone_entity(stale),
        Err(EntityError::NoSuchEntity(stale))
    );
    let mut other = World::new();
    assert_eq!(
        world.clone_entity_to(stale, &mut other),
        Err(EntityError::NoSuchEntity(stale))
    );
    assert!(other.is_empty());
    assert_eq!(
        world.exchange::<Hp, _>(stale, Mark(3)),
        Err(ComponentError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.despawn_recursive(stale),
        Err(EntityError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.add_child(live, stale),
        Err(RelationError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.add_child(stale, live),
        Err(RelationError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.set_parent(child, stale),
        Err(RelationError::NoSuchEntity(stale))
    );
    assert!(world.remove_parent(stale).is_err());
    assert!(world.spawn_child(stale, Hp(5)).is_err());
    assert!(matches!(
        world.unrelate::<Likes>(stale, live),
        Err(RelationError::NotRelated { .. })
    ));
    assert_eq!(world.unrelate_all::<Likes>(stale), 0);
    assert!(world.relation_mut::<Likes>(stale, child).is_none());
    assert!(!world.has_relation::<Likes>(stale, child));
    assert!(world.parent(stale).is_none());
    assert!(world.children(stale).is_empty());
    assert_eq!(
        world.get_many_mut::<Hp, 2>([live, stale]).err(),
        Some(QueryEntityError::NoSuchEntity(stale))
    );
    let mut q = world.query::<&Hp>();
    assert_eq!(
        q.get_many(&world, [stale, live]).err(),
        Some(QueryEntityError::NoSuchEntity(stale))
    );
    let mut qm = world.query::<&mut Hp>();
    assert_eq!(
        qm.get_many_mut(&mut world, [live, stale]).err(),
        Some(QueryEntityError::NoSuchEntity(stale))
    );
    // Nothing changed, and no spawn was left half-made on the way.
    assert_eq!(snapshot(&world), before);
    world.check_invariants();

    // Commands on the stale handle each report their error; the rest apply.
    let mut commands = CommandBuffer::new(&world);
    commands.insert(stale, Hp(3));
    commands.relate(stale, live, Likes);
    commands.add_child(live, stale);
    commands.despawn_recursive(stale);
    commands.insert(live, Hp(7));
    let errors = commands.apply(&mut world).unwrap_err();
    let positions: Vec<usize> = errors.iter().map(|(i, _)| *i).collect();
    assert_eq!(positions, [0, 1, 2, 3]);
    assert_eq!(world.get::<Hp>(live), Ok(&Hp(7)));
    assert_eq!(world.len(), before.0);
    world.check_invariants();
}

// ----- spawn_at onto an occupant that refuses to go ----------------------------------

#[derive(Relation)]
#[relation(on_target_despawn = "refuse")]
struct Anchors;

#[test]
fn spawn_at_an_index_whose_occupant_refuses_despawn_does_not_hang() {
    let mut world = World::new();
    let occupant = world.spawn(Hp(1));
    let holder = world.spawn(());
    world.relate(holder, occupant, Anchors).unwrap();
    // The same index, a newer generation (as a saved game would hold).
    let wanted = Entity::from_bits(
        (u64::from(occupant.generation() + 1) << 32) | u64::from(occupant.index()),
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let outcome = catch_unwind(AssertUnwindSafe(|| world.spawn_at(wanted, Hp(2))));
        let _ = tx.send(());
        (world, outcome.is_ok())
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok(),
        "spawn_at never returned"
    );
    let (mut world, returned) = worker.join().unwrap();
    world.check_invariants();
    // spawn_at returns nothing, so it refuses with a panic (documented),
    // changing nothing; never a loop.
    assert!(!returned);
    assert!(world.contains(occupant) && !world.contains(wanted));
    assert_eq!(world.get::<Hp>(occupant), Ok(&Hp(1)));
    assert_eq!(world.sources::<Anchors>(occupant), [holder]);
    assert_eq!(world.len(), 2);
    // Once unrelated, the same call replaces the occupant.
    world.unrelate::<Anchors>(holder, occupant).unwrap();
    world.spawn_at(wanted, Hp(2));
    assert_eq!(world.get::<Hp>(wanted), Ok(&Hp(2)));
    assert!(!world.contains(occupant));
    world.check_invariants();
}

// ----- clone_entity whose edge data's clone panics -----------------------------------

#[derive(Relation)]
struct Pact(u32);

impl Clone for Pact {
    fn clone(&self) -> Self {
        if self.0 == 13 {
            panic!("pact clone");
        }
        Pact(self.0)
    }
}

#[test]
fn clone_entity_whose_edge_data_clone_panics_leaves_no_copy() {
    let mut world = World::new();
    let (a, b, c) = (world.spawn(Hp(1)), world.spawn(()), world.spawn(()));
    world.relate(a, b, Pact(1)).unwrap();
    world.relate(a, c, Pact(13)).unwrap();
    let before = world.len();
    assert_eq!(expect_panic(|| world.clone_entity(a)), "pact clone");
    world.check_invariants();
    // Nothing spawned: no half-copied entity the caller never got a
    // handle to (as a panicking component clone leaves none).
    assert_eq!(world.len(), before);
    assert_eq!(world.sources::<Pact>(b), [a]);
    let mut hp = world.query::<&Hp>();
    assert_eq!(hp.iter(&world).count(), 1);
}

#[test]
fn clone_entity_whose_component_clone_panics_leaves_no_copy() {
    #[derive(Component)]
    struct Fragile;
    impl Clone for Fragile {
        fn clone(&self) -> Self {
            panic!("fragile clone")
        }
    }
    let mut world = World::new();
    world.set_clone_behavior::<Fragile>(mosaic::CloneBehavior::Clone(|f: &Fragile| f.clone()));
    let a = world.spawn((Hp(1), Fragile));
    assert_eq!(expect_panic(|| world.clone_entity(a)), "fragile clone");
    world.check_invariants();
    assert_eq!(world.len(), 1);
}

// ----- lifecycle panics in operations of several components --------------------------

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[repr(align(64))]
struct Wide([u8; 64]);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Flag;

/// A sparse component that counts its drops.
#[derive(Component, Debug)]
#[component(storage = "sparse")]
struct Tally(u32, Arc<AtomicUsize>);

impl Drop for Tally {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn take_whose_remove_observer_panics_on_a_later_component_loses_nothing() {
    let mut world = World::new();
    let other = world.spawn((Hp(1), Wide([1; 64]), Flag));
    let e = world.spawn((Hp(3), Wide([7; 64]), Mark(1), Flag));
    let id = world.observe(|_: Trigger<OnRemove<Mark>>, _: DeferredWorld| panic!("mark remove"));
    assert_eq!(expect_panic(|| world.take(e).map(|_| ())), "mark remove");
    world.check_invariants();
    // The take did not happen: every component is still on the entity
    // (none was taken out and then dropped by the unwind).
    assert!(world.contains(e));
    assert_eq!(world.len(), 2);
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(3)));
    assert_eq!(world.get::<Wide>(e), Ok(&Wide([7; 64])));
    assert_eq!(world.get::<Mark>(e), Ok(&Mark(1)));
    assert!(world.has::<Flag>(e));
    assert_eq!(world.get::<Wide>(other), Ok(&Wide([1; 64])));
    // Without the observer, the same take takes everything.
    assert!(world.remove_observer(id));
    let mut taken = world.take(e).unwrap();
    world.check_invariants();
    assert!(!world.contains(e));
    assert_eq!(world.len(), 1);
    assert_eq!(taken.len(), 4);
    assert_eq!(taken.remove::<Hp>(), Some(Hp(3)));
    assert_eq!(taken.remove::<Wide>(), Some(Wide([7; 64])));
    assert_eq!(taken.remove::<Mark>(), Some(Mark(1)));
    assert_eq!(taken.remove::<Flag>(), Some(Flag));
    assert_eq!(world.get::<Hp>(other), Ok(&Hp(1)));
    assert_eq!(world.get::<Wide>(other), Ok(&Wide([1; 64])));
}

#[test]
fn take_whose_remove_hook_panics_loses_nothing() {
    #[derive(Component, Debug, PartialEq)]
    #[component(storage = "sparse")]
    struct Seal(u8);
    let drops = Arc::new(AtomicUsize::new(0));
    let announced = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    world
        .register_component_hooks::<Seal>()
        .on_remove(|_, _| panic!("seal hook"));
    let seen = announced.clone();
    world.observe(move |_: Trigger<OnRemove<Hp>>, _: DeferredWorld| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    let (parent, friend) = (world.spawn(()), world.spawn(()));
    let e = world
        .spawn_child(
            parent,
            (Hp(3), Wide([7; 64]), Tally(5, drops.clone()), Seal(2)),
        )
        .unwrap();
    world.relate(e, friend, Likes).unwrap();
    assert_eq!(expect_panic(|| world.take(e).map(|_| ())), "seal hook");
    world.check_invariants();
    // `Hp`'s removal was announced, then `Seal`'s hook panicked before
    // anything was taken: the entity is whole, edges included.
    assert_eq!(announced.load(Ordering::SeqCst), 1);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert_eq!(world.len(), 3);
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(3)));
    assert_eq!(world.get::<Wide>(e), Ok(&Wide([7; 64])));
    assert_eq!(world.get::<Tally>(e).map(|t| t.0), Ok(5));
    assert_eq!(world.get::<Seal>(e), Ok(&Seal(2)));
    assert_eq!(world.parent(e), Some(parent));
    assert_eq!(world.targets::<Likes>(e), [friend]);
    // Without the hook's panic, the take goes through: the values come
    // back (none dropped), the edges go from both ends.
    world
        .register_component_hooks::<Seal>()
        .on_remove(|_, _| {});
    let mut taken = world.take(e).unwrap();
    world.check_invariants();
    assert_eq!(announced.load(Ordering::SeqCst), 2);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert_eq!(world.len(), 2);
    assert!(world.children(parent).is_empty());
    assert!(world.sources::<Likes>(friend).is_empty());
    assert_eq!(taken.remove::<Hp>(), Some(Hp(3)));
    assert_eq!(taken.remove::<Wide>(), Some(Wide([7; 64])));
    assert_eq!(taken.remove::<Seal>(), Some(Seal(2)));
    assert_eq!(taken.get::<Tally>().map(|t| t.0), Some(5));
    assert_eq!(
        taken.len(),
        1,
        "no edge taken: {:?}",
        taken.component_names()
    );
    drop(taken);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn take_of_sparse_components_whose_remove_observer_panics_loses_nothing() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    // Only sparse components (the entity stays in the empty archetype),
    // and sparse ones beside table ones.
    let only = world.spawn((Tally(1, drops.clone()), Mark(1)));
    let mixed = world.spawn((Hp(2), Tally(2, drops.clone()), Mark(2), Flag));
    let neighbour = world.spawn((Tally(3, drops.clone()), Mark(3)));
    let id = world.observe(|_: Trigger<OnRemove<Mark>>, _: DeferredWorld| panic!("mark remove"));
    for e in [only, mixed] {
        assert_eq!(expect_panic(|| world.take(e).map(|_| ())), "mark remove");
        world.check_invariants();
        assert!(world.contains(e));
    }
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert_eq!(world.len(), 3);
    let tally = world.component_id::<Tally>().unwrap();
    let mark = world.component_id::<Mark>().unwrap();
    assert_eq!(world.sparse_set_len(tally), 3);
    assert_eq!(world.sparse_set_len(mark), 3);
    assert_eq!(world.get::<Tally>(only).map(|t| t.0), Ok(1));
    assert_eq!(world.get::<Mark>(only), Ok(&Mark(1)));
    assert_eq!(world.get::<Hp>(mixed), Ok(&Hp(2)));
    assert_eq!(world.get::<Tally>(mixed).map(|t| t.0), Ok(2));
    assert_eq!(world.get::<Mark>(mixed), Ok(&Mark(2)));
    assert!(world.has::<Flag>(mixed));
    assert!(world.remove_observer(id));
    // The takes go through once the observer is gone; the neighbour's
    // values (moved within the sets) stay its own.
    let mut there = World::new();
    for (e, n) in [(only, 1), (mixed, 2)] {
        let mut taken = world.take(e).unwrap();
        world.check_invariants();
        assert!(!world.contains(e));
        assert_eq!(taken.get::<Tally>().map(|t| t.0), Some(n));
        assert_eq!(taken.remove::<Mark>(), Some(Mark(n as u8)));
        let moved = there.spawn(taken);
        assert_eq!(there.get::<Tally>(moved).map(|t| t.0), Ok(n));
    }
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert_eq!(world.len(), 1);
    assert_eq!(world.sparse_set_len(tally), 1);
    assert_eq!(world.get::<Tally>(neighbour).map(|t| t.0), Ok(3));
    assert_eq!(world.get::<Mark>(neighbour), Ok(&Mark(3)));
    drop(there);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn take_of_a_target_a_relation_keeps_alive_is_refused_changing_nothing() {
    let mut world = World::new();
    let target = world.spawn((Hp(1), Mark(1)));
    let holder = world.spawn(());
    world.relate(holder, target, Anchors).unwrap();
    assert_eq!(
        world.take(target).unwrap_err(),
        EntityError::DespawnRefused {
            entity: target,
            relation: "Anchors"
        }
    );
    world.check_invariants();
    // As `despawn` refuses: the entity keeps every component.
    assert_eq!(world.get::<Hp>(target), Ok(&Hp(1)));
    assert_eq!(world.get::<Mark>(target), Ok(&Mark(1)));
    assert_eq!(world.sources::<Anchors>(target), [holder]);
    world.unrelate::<Anchors>(holder, target).unwrap();
    let taken = world.take(target).unwrap();
    assert_eq!(taken.len(), 2);
    assert!(!world.contains(target));
}

#[test]
fn remove_of_a_bundle_whose_second_remove_observer_panics_changes_nothing() {
    let mut world = World::new();
    let e = world.spawn((Hp(3), Wide([1; 64]), Mark(1)));
    world.observe(|_: Trigger<OnRemove<Mark>>, _: DeferredWorld| panic!("mark remove"));
    let msg = expect_panic(|| world.remove::<(Hp, Mark, Wide)>(e));
    assert_eq!(msg, "mark remove");
    world.check_invariants();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(3)));
    assert_eq!(world.get::<Mark>(e), Ok(&Mark(1)));
    assert_eq!(world.get::<Wide>(e), Ok(&Wide([1; 64])));
    let msg = expect_panic(|| world.exchange::<(Hp, Mark), _>(e, Flag));
    assert_eq!(msg, "mark remove");
    assert!(!world.has::<Flag>(e));
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(3)));
}

#[test]
fn insert_of_new_and_replaced_components_whose_add_observer_panics_is_whole() {
    let mut world = World::new();
    let e = world.spawn((Hp(1), Mark(1)));
    let mut changed = world.query_filtered::<Entity, Changed<Hp>>();
    let mut added = world.query_filtered::<Entity, Added<Wide>>();
    assert_eq!(changed.iter(&world).count(), 1);
    assert_eq!(added.iter(&world).count(), 0);
    world.observe(|_: Trigger<OnAdd<Wide>>, _: DeferredWorld| panic!("wide add"));
    let msg = expect_panic(|| world.insert(e, (Hp(2), Wide([9; 64]), Mark(2), Flag)));
    assert_eq!(msg, "wide add");
    world.check_invariants();
    // The change is made before it is announced: new and replaced values
    // are all in, stamped as added and changed.
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(2)));
    assert_eq!(world.get::<Mark>(e), Ok(&Mark(2)));
    assert_eq!(world.get::<Wide>(e), Ok(&Wide([9; 64])));
    assert!(world.has::<Flag>(e));
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [e]);
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), [e]);
    // A second identical insert replaces only: no OnAdd, no panic.
    world
        .insert(e, (Hp(3), Wide([8; 64]), Mark(3), Flag))
        .unwrap();
    assert_eq!(world.get::<Wide>(e), Ok(&Wide([8; 64])));
    assert_eq!(added.iter(&world).count(), 0);
}

#[test]
fn despawn_of_an_entity_with_table_sparse_and_edges_whose_remove_observer_panics_changes_nothing() {
    let mut world = World::new();
    let parent = world.spawn(());
    let e = world
        .spawn_child(parent, (Hp(1), Wide([2; 64]), Mark(1)))
        .unwrap();
    let kid = world.spawn_child(e, Hp(5)).unwrap();
    let friend = world.spawn(());
    world.relate(e, friend, Likes).unwrap();
    world.relate(friend, e, Likes).unwrap();
    let id = world.observe(|_: Trigger<OnRemove<Mark>>, _: DeferredWorld| panic!("mark remove"));
    assert_eq!(expect_panic(|| world.despawn(e)), "mark remove");
    world.check_invariants();
    assert!(world.contains(e));
    assert_eq!(world.len(), 4);
    assert_eq!(world.parent(e), Some(parent));
    assert_eq!(world.children(e), [kid]);
    assert_eq!(world.targets::<Likes>(e), [friend]);
    assert_eq!(world.sources::<Likes>(e), [friend]);
    assert_eq!(world.get::<Mark>(e), Ok(&Mark(1)));
    // Same for the recursive despawn: the kid goes, `e` stays a root.
    assert_eq!(expect_panic(|| world.despawn_recursive(e)), "mark remove");
    world.check_invariants();
    assert!(world.contains(e) && !world.contains(kid));
    assert!(world.remove_observer(id));
    world.despawn(e).unwrap();
    world.check_invariants();
    assert_eq!(world.len(), 2);
    assert!(world.targets::<Likes>(friend).is_empty());
    assert!(world.children(parent).is_empty());
}

#[test]
fn an_observer_despawning_each_spawned_entity_mid_batch_leaves_the_rest() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnAdd<Mark>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        if w.get::<Mark>(e).unwrap().0 % 2 == 0 {
            w.commands().despawn(e);
        }
    });
    let spawned = world.spawn_batch((0..6).map(|i| (Hp(i), Mark(i as u8))));
    world.check_invariants();
    assert_eq!(world.len(), 3);
    let alive: Vec<bool> = spawned.iter().map(|&e| world.contains(e)).collect();
    assert_eq!(alive, [false, true, false, true, false, true]);
    assert!(
        world
            .spawn_batch(std::iter::empty::<(Hp, Mark)>())
            .is_empty()
    );
    world.extend(std::iter::empty::<Hp>());
    assert_eq!(world.len(), 3);
}

// ----- queries -----------------------------------------------------------------------

#[test]
fn aliasing_queries_are_refused_with_a_message_and_the_world_stays_usable() {
    let mut world = World::new();
    let e = world.spawn((Hp(1), Mark(1)));
    let msg = expect_panic(|| {
        world
            .query::<(&mut Hp, Option<&Hp>)>()
            .iter_mut(&mut world)
            .count()
    });
    assert!(msg.contains("Hp"), "{msg}");
    let msg = expect_panic(|| {
        world
            .query::<(mosaic::Ref<Hp>, &mut Hp)>()
            .iter_mut(&mut world)
            .count()
    });
    assert!(msg.contains("Hp"), "{msg}");
    let msg = expect_panic(|| {
        world
            .query::<(&mut Mark, (Entity, &Mark))>()
            .iter_mut(&mut world)
            .count()
    });
    assert!(msg.contains("Mark"), "{msg}");
    let msg = expect_panic(|| {
        world
            .query::<(&mut Hp, &mut Hp)>()
            .iter_mut(&mut world)
            .count()
    });
    assert!(msg.contains("Hp"), "{msg}");
    // Not aliasing: `Has` and filters read no value.
    let mut ok = world.query_filtered::<(&mut Hp, Has<Hp>), Changed<Hp>>();
    assert_eq!(ok.iter_mut(&mut world).count(), 1);
    world.check_invariants();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(1)));
}

#[test]
fn get_many_with_a_repeat_and_a_query_from_another_world() {
    let mut world = World::new();
    let (a, b) = (world.spawn(Hp(1)), world.spawn(Hp(2)));
    let mut q = world.query::<&mut Hp>();
    assert_eq!(
        q.get_many_mut(&mut world, [a, b, a]).err(),
        Some(QueryEntityError::AliasedMutability(a))
    );
    let mut read = world.query::<&Hp>();
    let [x, y] = read.get_many(&world, [a, a]).unwrap();
    assert_eq!((x, y), (&Hp(1), &Hp(1)));
    let mut other = World::new();
    other.spawn(Hp(9));
    let msg = expect_panic(|| read.iter(&other).count());
    assert!(msg.to_lowercase().contains("world"), "{msg}");
    // The state still works with its own world.
    assert_eq!(read.iter(&world).count(), 2);
}
