//! Issue #38 tried again as a new user would (second round): black-box
//! tests through the public API only, on what tests/rollback_trial.rs (the
//! first round) and tests/rollback.rs (the implementation's own tests) do
//! not cover: the `SnapshotRing` names a bevy_ggrs user reaches for,
//! hierarchies and relations with data, `Disabled`, sparse and archetype
//! changes, resources and events, hooks and observers, `Added`/`Changed`
//! through a `Schedule` for each kind of change, the next ids after every
//! way of making entities, the checksum's promises (a property test), big
//! worlds, and a `Clone` that panics.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;
use mosaic::{
    CommandBuffer, DeferredWorld, Disabled, RemovedComponents, RollbackError, Snapshot,
    SnapshotRing,
};
use proptest::prelude::*;

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Hp(i32);

#[derive(Component, Clone, Debug, PartialEq, Eq, Hash)]
struct Name(String);

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[component(storage = "sparse")]
struct Buff(u8);

/// Never registered.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Scratch(u32);

/// Registered through its derive; its `Clone` panics while `CLONE_FAILS`
/// is set on the thread that clones (each test runs on its own thread).
#[derive(Component, Debug, PartialEq, Eq, Hash)]
#[component(rollback)]
struct Fragile(u32);

thread_local! {
    static CLONE_FAILS: Cell<bool> = const { Cell::new(false) };
}

impl Clone for Fragile {
    fn clone(&self) -> Self {
        if CLONE_FAILS.get() {
            panic!("Fragile::clone fails");
        }
        Fragile(self.0)
    }
}

/// A relation with data, many targets per source.
#[derive(Relation, Clone, Debug, PartialEq, Eq, Hash)]
struct Owes(u32);

/// A relation without data, many to many.
#[derive(Relation, Clone, Debug, PartialEq, Eq, Hash)]
struct Likes;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
struct Score(u32);

fn world() -> World {
    let mut world = World::new();
    world.register_rollback::<Hp>();
    world.register_rollback::<Name>();
    world.register_rollback::<Buff>();
    world
}

/// Everything the registered state holds that a user can read, entity by
/// entity: to compare a restored world with the one saved.
fn dump(world: &World) -> Vec<String> {
    let mut out: Vec<String> = world
        .iter_entities()
        .map(|e| e.id())
        .map(|e| {
            format!(
                "{e:?} hp={:?} name={:?} buff={:?} disabled={} parent={:?} children={:?} \
                 owes={:?} owed_by={:?} likes={:?} liked_by={:?}",
                world.get::<Hp>(e).ok(),
                world.get::<Name>(e).ok(),
                world.get::<Buff>(e).ok(),
                world.is_disabled(e),
                world.parent(e),
                world.children(e),
                world
                    .get::<Relation<Owes>>(e)
                    .ok()
                    .map(|r| r.iter().map(|(t, d)| (t, d.0)).collect::<Vec<_>>()),
                world.sources::<Owes>(e),
                world.targets::<Likes>(e),
                world.sources::<Likes>(e),
            )
        })
        .collect();
    out.sort();
    out
}

// ----- SnapshotRing: the names a bevy_ggrs / GGRS user tries ---------------

#[test]
fn ring_len_is_empty_get_and_frames_held() {
    let mut world = world();
    let e = world.spawn(Hp(0));
    let mut ring = SnapshotRing::new(3);
    assert!(ring.is_empty());
    assert_eq!(ring.len(), 0);
    assert_eq!(ring.capacity(), 3);
    for frame in 10..15u64 {
        ring.save(frame, &world);
        world.get_mut::<Hp>(e).unwrap().0 += 1;
    }
    assert!(!ring.is_empty());
    assert_eq!(ring.len(), 3);
    assert_eq!(
        (ring.oldest_frame(), ring.newest_frame()),
        (Some(12), Some(14))
    );
    for frame in 10..12 {
        assert!(ring.get(frame).is_none(), "frame {frame} fell out");
    }
    for frame in 12..15 {
        let snapshot: &Snapshot = ring.get(frame).expect("held");
        assert_eq!(snapshot.entity_count(), 1);
    }
    // A snapshot got from the ring restores as any other.
    let frame_13 = ring.get(13).unwrap().clone();
    world.restore(&frame_13).unwrap();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(3)));
}

#[test]
fn ring_rollback_to_a_frame_older_than_the_ring_changes_nothing() {
    let mut world = world();
    let e = world.spawn(Hp(0));
    let mut ring = SnapshotRing::new(4);
    for frame in 0..10u64 {
        ring.save(frame, &world);
        world.get_mut::<Hp>(e).unwrap().0 += 1;
    }
    let before = dump(&world);
    let sum = world.checksum();
    // Frame 2 fell out of the ring long ago; frame 99 never was.
    assert!(ring.rollback_to(2, &mut world).is_none());
    assert!(ring.rollback_to(99, &mut world).is_none());
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    // Nothing was dropped from the ring either.
    assert_eq!(ring.len(), 4);
    assert_eq!(
        (ring.oldest_frame(), ring.newest_frame()),
        (Some(6), Some(9))
    );
    ring.rollback_to(6, &mut world).unwrap().unwrap();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(6)));
}

#[test]
fn ring_rollback_then_resimulate_saves_the_new_future() {
    // GGRS's loop: load frame F, then save F+1, F+2 ... again as the
    // corrected frames are simulated; the ring holds the new snapshots.
    let mut world = world();
    let e = world.spawn(Hp(0));
    let mut ring = SnapshotRing::new(8);
    for frame in 0..6u64 {
        ring.save(frame, &world);
        world.get_mut::<Hp>(e).unwrap().0 += 1; // predicted input: +1
    }
    ring.rollback_to(3, &mut world).unwrap().unwrap();
    assert_eq!(ring.newest_frame(), Some(3));
    for frame in 3..6u64 {
        if frame > 3 {
            ring.save(frame, &world);
        }
        world.get_mut::<Hp>(e).unwrap().0 += 10; // the real input: +10
    }
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(33)));
    assert_eq!(ring.len(), 6);
    ring.rollback_to(5, &mut world).unwrap().unwrap();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(23)));
    ring.rollback_to(1, &mut world).unwrap().unwrap();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(1)));
}

#[test]
fn ring_saving_the_same_frame_twice_keeps_the_later_state() {
    let mut world = world();
    let e = world.spawn(Hp(0));
    let mut ring = SnapshotRing::new(4);
    ring.save(0, &world);
    world.get_mut::<Hp>(e).unwrap().0 = 1;
    ring.save(1, &world);
    world.get_mut::<Hp>(e).unwrap().0 = 2;
    ring.save(1, &world); // frame 1 simulated again
    assert_eq!(ring.len(), 2);
    world.get_mut::<Hp>(e).unwrap().0 = 3;
    ring.rollback_to(1, &mut world).unwrap().unwrap();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(2)));
}

#[test]
fn ring_clear_forgets_every_frame_and_saves_again() {
    let mut world = world();
    let e = world.spawn(Hp(0));
    let mut ring = SnapshotRing::new(3);
    for frame in 0..5u64 {
        ring.save(frame, &world);
        world.get_mut::<Hp>(e).unwrap().0 += 1;
    }
    ring.clear();
    assert!(ring.is_empty());
    assert_eq!((ring.oldest_frame(), ring.newest_frame()), (None, None));
    assert!(ring.rollback_to(4, &mut world).is_none());
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(5)), "clear changes no world");
    // A new match: frame numbers start again, in the buffers kept.
    for frame in 0..4u64 {
        ring.save(frame, &world);
        world.get_mut::<Hp>(e).unwrap().0 += 1;
    }
    assert_eq!((ring.oldest_frame(), ring.len()), (Some(1), 3));
    ring.rollback_to(1, &mut world).unwrap().unwrap();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(6)));
}

// ----- Hierarchy, relations, Disabled ---------------------------------------

#[test]
fn despawn_recursive_of_a_three_level_tree_comes_back_whole() {
    let mut world = world();
    let root = world.spawn(Hp(0));
    let kids: Vec<Entity> = (1..4)
        .map(|i| world.spawn_child(root, Hp(i)).unwrap())
        .collect();
    let grandkids: Vec<Entity> = (10..13)
        .map(|i| world.spawn_child(kids[1], (Hp(i), Buff(i as u8))).unwrap())
        .collect();
    world.insert_one(kids[2], Disabled).unwrap();
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    world.despawn_recursive(root).unwrap();
    assert!(world.is_empty());
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.respawned, 7);
    assert_eq!(world.children(root), kids);
    assert_eq!(world.children(kids[1]), grandkids);
    assert!(world.is_disabled(kids[2]));
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    world.check_invariants();
}

#[test]
fn a_parent_despawned_alone_comes_back_with_its_children() {
    // `despawn` (not recursive) of a parent: whatever the hierarchy does
    // to its children, the restore puts the tree back.
    let mut world = world();
    let root = world.spawn(Hp(0));
    let parent = world.spawn_child(root, Hp(1)).unwrap();
    let kids: Vec<Entity> = (2..5)
        .map(|i| world.spawn_child(parent, Hp(i)).unwrap())
        .collect();
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    world.despawn(parent).unwrap();
    assert!(!world.contains(parent));
    world.restore(&saved).unwrap();
    assert_eq!(world.children(parent), kids);
    assert_eq!(world.parent(parent), Some(root));
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    world.check_invariants();
}

/// A relation whose sources die with their target.
#[derive(Relation, Clone, Debug, PartialEq, Eq, Hash)]
#[relation(one, on_target_despawn = "despawn")]
struct MountedOn;

#[test]
fn a_despawn_cascade_through_a_registered_relation_comes_back() {
    let mut world = world();
    world.register_rollback_relation::<MountedOn>();
    let tank = world.spawn(Hp(100));
    let turrets: Vec<Entity> = (0..3).map(|i| world.spawn((Hp(i), Buff(1)))).collect();
    for &t in &turrets {
        world.relate(t, tank, MountedOn).unwrap();
    }
    let gun = world.spawn(Hp(7));
    world.relate(gun, turrets[1], MountedOn).unwrap();
    let sum = world.checksum();
    let saved = world.snapshot();
    world.despawn(tank).unwrap();
    assert!(!world.contains(gun), "the cascade reached the gun");
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.respawned, 5);
    assert_eq!(world.sources::<MountedOn>(tank), turrets);
    assert_eq!(world.targets::<MountedOn>(gun), [turrets[1]]);
    assert_eq!(world.checksum(), sum);
    world.check_invariants();
}

#[test]
fn children_order_comes_back_after_a_child_moved_away_and_back() {
    let mut world = world();
    let (a, b) = (world.spawn(Hp(0)), world.spawn(Hp(1)));
    let kids: Vec<Entity> = (0..4)
        .map(|i| world.spawn_child(a, Hp(10 + i)).unwrap())
        .collect();
    let saved = world.snapshot();
    // kids[1] goes to b, then back to a: now last in a's list.
    world.set_parent(kids[1], b).unwrap();
    world.set_parent(kids[1], a).unwrap();
    assert_eq!(world.children(a).last(), Some(&kids[1]));
    assert_ne!(world.children(a), kids);
    let report = world.restore(&saved).unwrap();
    assert_eq!(world.children(a), kids);
    assert!(world.children(b).is_empty());
    assert_eq!(report.rows_restored, 0, "no value was written");
    world.check_invariants();
}

#[test]
fn reparenting_comes_back_and_no_entity_is_respawned() {
    let mut world = world();
    let (a, b) = (world.spawn(Hp(0)), world.spawn(Hp(1)));
    let c = world.spawn_child(a, Hp(2)).unwrap();
    let d = world.spawn(Hp(3));
    let before = dump(&world);
    let saved = world.snapshot();
    world.set_parent(c, b).unwrap();
    world.set_parent(d, c).unwrap();
    world.set_parent(a, d).unwrap();
    let report = world.restore(&saved).unwrap();
    assert_eq!((report.respawned, report.despawned), (0, 0));
    assert_eq!(world.parent(c), Some(a));
    assert_eq!(world.parent(d), None);
    assert_eq!(world.parent(a), None);
    assert_eq!(dump(&world), before);
    world.check_invariants();
}

#[test]
fn relations_with_data_and_many_to_many_come_back() {
    let mut world = world();
    world.register_rollback_relation::<Owes>();
    world.register_rollback_relation::<Likes>();
    let es: Vec<Entity> = (0..4).map(|i| world.spawn(Hp(i))).collect();
    world.relate(es[0], es[1], Owes(5)).unwrap();
    world.relate(es[0], es[2], Owes(7)).unwrap();
    world.relate(es[3], es[1], Owes(1)).unwrap();
    for &s in &es[..3] {
        for &t in &es[1..] {
            if s != t {
                world.relate(s, t, Likes).unwrap();
            }
        }
    }
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    // Data changed, edges dropped and added, orders changed.
    world.relate(es[0], es[1], Owes(50)).unwrap();
    world.unrelate::<Owes>(es[0], es[2]).unwrap();
    world.relate(es[2], es[3], Owes(9)).unwrap();
    world.unrelate::<Likes>(es[0], es[1]).unwrap();
    world.relate(es[0], es[1], Likes).unwrap();
    world.relate(es[3], es[0], Likes).unwrap();
    assert_ne!(world.checksum(), sum);
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.relations_rebuilt, 2);
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    world.check_invariants();
}

#[test]
fn relation_data_written_in_place_comes_back() {
    let mut world = world();
    world.register_rollback_relation::<Owes>();
    let (a, b) = (world.spawn(Hp(0)), world.spawn(Hp(1)));
    world.relate(a, b, Owes(3)).unwrap();
    let sum = world.checksum();
    let saved = world.snapshot();
    // Only the edge's data changes (relate again replaces it).
    world.relate(a, b, Owes(4)).unwrap();
    assert_ne!(world.checksum(), sum);
    world.restore(&saved).unwrap();
    let owes: Vec<(Entity, u32)> = world
        .get::<Relation<Owes>>(a)
        .unwrap()
        .iter()
        .map(|(t, d)| (t, d.0))
        .collect();
    assert_eq!(owes, [(b, 3)]);
    assert_eq!(world.checksum(), sum);
}

#[test]
fn a_relation_to_an_entity_despawned_since_comes_back() {
    let mut world = world();
    world.register_rollback_relation::<Owes>();
    let (a, b, c) = (world.spawn(Hp(0)), world.spawn(Hp(1)), world.spawn(Hp(2)));
    world.relate(a, b, Owes(1)).unwrap();
    world.relate(c, b, Owes(2)).unwrap();
    let before = dump(&world);
    let saved = world.snapshot();
    world.despawn(b).unwrap();
    assert!(
        world.get::<Relation<Owes>>(a).is_err(),
        "the edge died with b"
    );
    // Its slot is reused by an entity that relates to a.
    let newcomer = world.spawn(Hp(9));
    assert_eq!(newcomer.index(), b.index());
    world.relate(newcomer, a, Owes(3)).unwrap();
    world.restore(&saved).unwrap();
    assert!(!world.contains(newcomer));
    assert_eq!(world.sources::<Owes>(b), [a, c]);
    assert_eq!(dump(&world), before);
    world.check_invariants();
}

#[test]
fn disabled_toggled_back_and_forth_and_despawned_comes_back() {
    let mut world = world();
    let es: Vec<Entity> = (0..4).map(|i| world.spawn(Hp(i))).collect();
    world.insert_one(es[0], Disabled).unwrap();
    world.insert_one(es[2], Disabled).unwrap();
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    for _ in 0..3 {
        world.remove_one::<Disabled>(es[0]).unwrap();
        world.insert_one(es[0], Disabled).unwrap();
    }
    world.insert_one(es[1], Disabled).unwrap();
    world.despawn(es[2]).unwrap();
    world.get_mut::<Hp>(es[0]).unwrap().0 = 40;
    world.restore(&saved).unwrap();
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    let mut q = world.query::<Entity>();
    let visible: BTreeSet<Entity> = q.iter(&world).collect();
    assert_eq!(visible, BTreeSet::from([es[1], es[3]]));
    assert_eq!(world.disabled_count(), 2);
    world.check_invariants();
}

// ----- Sparse, archetypes, resources, events --------------------------------

#[test]
fn sparse_components_inserted_and_removed_many_times_come_back() {
    let mut world = world();
    let es: Vec<Entity> = (0..8).map(|i| world.spawn(Hp(i))).collect();
    for (i, &e) in es.iter().enumerate().step_by(2) {
        world.insert_one(e, Buff(i as u8)).unwrap();
    }
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    for round in 0..3u8 {
        for (i, &e) in es.iter().enumerate() {
            if (i + round as usize) % 3 == 0 {
                let _ = world.remove_one::<Buff>(e);
            } else {
                world.insert_one(e, Buff(round * 10 + i as u8)).unwrap();
            }
        }
    }
    world.restore(&saved).unwrap();
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    // The set's order is the saved one: queries visit it as they did.
    let mut q = world.query::<(Entity, &Buff)>();
    let order: Vec<Entity> = q.iter(&world).map(|(e, _)| e).collect();
    assert_eq!(order, [es[0], es[2], es[4], es[6]]);
    world.check_invariants();
}

#[test]
fn an_archetype_made_after_the_snapshot_is_left_empty_by_the_restore() {
    // Mid-frame, entities move to tables that did not exist at the
    // snapshot (a registered type added, and an unregistered one).
    let mut world = world();
    let es: Vec<Entity> = (0..5).map(|i| world.spawn(Hp(i))).collect();
    let before = dump(&world);
    let saved = world.snapshot();
    world.insert_one(es[1], Name("new".into())).unwrap();
    world.insert_one(es[2], Scratch(1)).unwrap();
    world.insert(es[3], (Name("x".into()), Scratch(2))).unwrap();
    world.get_mut::<Hp>(es[3]).unwrap().0 = 33;
    let report = world.restore(&saved).unwrap();
    assert_eq!(dump(&world), before);
    // Unregistered: left as they are, and reported.
    assert_eq!(world.get::<Scratch>(es[2]), Ok(&Scratch(1)));
    assert_eq!(world.get::<Scratch>(es[3]), Ok(&Scratch(2)));
    assert_eq!(report.unregistered.len(), 1, "{report:?}");
    assert!(report.unregistered[0].contains("Scratch"));
    // Queries visit the registered rows in the saved order.
    let mut q = world.query::<(Entity, &Hp)>();
    let seen: Vec<(Entity, i32)> = q.iter(&world).map(|(e, h)| (e, h.0)).collect();
    assert_eq!(seen.len(), 5);
    assert!(
        seen.iter()
            .all(|&(e, hp)| world.get::<Hp>(e) == Ok(&Hp(hp)))
    );
    world.check_invariants();
}

#[test]
fn resources_inserted_and_removed_since_come_back_and_unregistered_stay() {
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Seed(u64);
    #[derive(Debug, PartialEq)]
    struct Settings(u8);
    let mut world = world();
    world.register_rollback_resource::<Score>();
    world.register_rollback_resource::<Seed>();
    world.insert_resource(Seed(7));
    world.insert_resource(Settings(1));
    let sum = world.checksum();
    let saved = world.snapshot();
    world.insert_resource(Score(5)); // absent at the snapshot
    world.remove_resource::<Seed>(); // present at the snapshot
    world.insert_resource(Settings(2)); // not registered
    assert_ne!(world.checksum(), sum);
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.resources_restored, 2);
    assert!(!world.contains_resource::<Score>());
    assert_eq!(world.resource::<Seed>(), &Seed(7));
    assert_eq!(world.resource::<Settings>(), &Settings(2));
    assert_eq!(world.checksum(), sum);
}

#[test]
fn a_resource_is_changed_after_a_restore_only_if_written_since() {
    #[derive(Default)]
    struct Flags(Vec<(bool, bool)>);
    let mut world = world();
    world.register_rollback_resource::<Score>();
    world.insert_resource(Score(1));
    world.insert_resource(Flags::default());
    let mut schedule = Schedule::new();
    schedule.add_systems(|score: Res<Score>, mut flags: ResMut<Flags>| {
        flags.0.push((score.is_added(), score.is_changed()));
    });
    schedule.run(&mut world);
    let saved = world.snapshot();
    world.restore(&saved).unwrap(); // nothing written
    schedule.run(&mut world);
    world.resource_mut::<Score>().0 = 2;
    schedule.run(&mut world); // sees the write
    world.restore(&saved).unwrap(); // puts it back
    schedule.run(&mut world);
    assert_eq!(world.resource::<Score>(), &Score(1));
    assert_eq!(
        world.resource::<Flags>().0,
        [(true, true), (false, false), (false, true), (false, true)]
    );
}

#[test]
fn a_resource_or_relation_registered_after_the_snapshot_is_left_as_it_is() {
    // As for components (`mosaic::rollback`, "What is saved"): a snapshot
    // holds only what was registered when it was taken.
    let mut world = world();
    let (a, b) = (world.spawn(Hp(0)), world.spawn(Hp(1)));
    let saved = world.snapshot();
    world.register_rollback_resource::<Score>();
    world.register_rollback_relation::<Owes>();
    world.insert_resource(Score(4));
    world.relate(a, b, Owes(2)).unwrap();
    world.get_mut::<Hp>(a).unwrap().0 = 9;
    let report = world.restore(&saved).unwrap();
    assert_eq!(world.get::<Hp>(a), Ok(&Hp(0)));
    assert_eq!(world.resource::<Score>(), &Score(4));
    assert_eq!(world.targets::<Owes>(a), [b]);
    assert_eq!(
        (report.resources_restored, report.relations_rebuilt),
        (0, 0)
    );
    // A snapshot taken now holds them.
    let saved = world.snapshot();
    world.insert_resource(Score(5));
    world.unrelate::<Owes>(a, b).unwrap();
    world.restore(&saved).unwrap();
    assert_eq!(world.resource::<Score>(), &Score(4));
    assert_eq!(world.targets::<Owes>(a), [b]);
    world.check_invariants();
}

#[test]
fn events_are_not_part_of_the_state() {
    // Documented in `mosaic::rollback` ("What is saved"): `Events<E>` is
    // an unregistered resource; a restore leaves it as it is.
    #[derive(Debug, PartialEq)]
    struct Hit(u32);
    let mut world = world();
    world.add_event::<Hit>();
    let mut cursor = world.event_cursor::<Hit>();
    world.send_event(Hit(1));
    let saved = world.snapshot();
    world.send_event(Hit(2));
    world.restore(&saved).unwrap();
    let seen: Vec<&Hit> = world.read_events(&mut cursor).collect();
    assert_eq!(seen, [&Hit(1), &Hit(2)]);
}

// ----- Hooks and observers --------------------------------------------------

static HOOK_ADDS: AtomicUsize = AtomicUsize::new(0);
static HOOK_REMOVES: AtomicUsize = AtomicUsize::new(0);
static HOOK_INSERTS: AtomicUsize = AtomicUsize::new(0);

fn count_add(_: DeferredWorld, _: Entity) {
    HOOK_ADDS.fetch_add(1, Ordering::SeqCst);
}
fn count_remove(_: DeferredWorld, _: Entity) {
    HOOK_REMOVES.fetch_add(1, Ordering::SeqCst);
}
fn count_insert(_: DeferredWorld, _: Entity) {
    HOOK_INSERTS.fetch_add(1, Ordering::SeqCst);
}

/// Used by one test only (its hooks count into statics).
#[derive(Component, Clone, Debug, PartialEq, Eq, Hash)]
#[component(rollback, on_add = count_add, on_insert = count_insert, on_remove = count_remove)]
struct Hooked(u32);

#[test]
fn hooks_fire_for_what_a_restore_adds_and_removes_and_not_for_values() {
    let counts = || {
        (
            HOOK_ADDS.load(Ordering::SeqCst),
            HOOK_INSERTS.load(Ordering::SeqCst),
            HOOK_REMOVES.load(Ordering::SeqCst),
        )
    };
    let mut world = World::new();
    let a = world.spawn(Hooked(1));
    let b = world.spawn(Hooked(2));
    let c = world.spawn(Hooked(3));
    let saved = world.snapshot();
    world.get_mut::<Hooked>(a).unwrap().0 = 10; // a value
    world.remove_one::<Hooked>(b).unwrap(); // a removal
    world.despawn(c).unwrap(); // a despawn
    let late = world.spawn(Hooked(4)); // a spawn
    let start = counts();
    world.restore(&saved).unwrap();
    let (adds, inserts, removes) = counts();
    // b's Hooked and c's come back: added (and inserted); late's goes.
    assert_eq!(adds - start.0, 2);
    assert_eq!(inserts - start.1, 2);
    assert_eq!(removes - start.2, 1);
    assert_eq!(world.get::<Hooked>(a), Ok(&Hooked(1)));
    assert!(!world.contains(late));
}

#[test]
fn observers_see_a_respawn_as_a_spawn_and_a_despawn_as_a_despawn() {
    #[derive(Default)]
    struct Log(Vec<(&'static str, Entity)>);
    let mut world = world();
    world.insert_resource(Log::default());
    world.observe(|t: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        w.resource_mut::<Log>().0.push(("add", t.target()));
    });
    world.observe(|t: Trigger<OnRemove, Hp>, mut w: DeferredWorld| {
        w.resource_mut::<Log>().0.push(("remove", t.target()));
    });
    let a = world.spawn(Hp(1));
    let saved = world.snapshot();
    world.despawn(a).unwrap();
    let b = world.spawn(Hp(2));
    world.resource_mut::<Log>().0.clear();
    world.restore(&saved).unwrap();
    let mut log = world.resource::<Log>().0.clone();
    log.sort();
    assert_eq!(log, [("add", a), ("remove", b)]);
}

#[test]
fn an_observer_that_spawns_during_a_restore_gets_the_documented_error() {
    // `RollbackError::Entities`: a hook or observer run by the restore
    // spawned entities, so the allocator could not be put back. No panic,
    // a consistent world, and the values are back.
    #[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
    struct Spark;
    let mut world = world();
    world.observe(|_: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        w.commands().spawn(Spark);
    });
    let a = world.spawn(Hp(1));
    let b = world.spawn(Hp(2));
    let saved = world.snapshot();
    world.get_mut::<Hp>(a).unwrap().0 = 10;
    world.despawn(b).unwrap();
    match world.restore(&saved) {
        Err(RollbackError::Entities(_)) => {}
        other => panic!("expected RollbackError::Entities, got {other:?}"),
    }
    world.check_invariants();
    assert_eq!(world.get::<Hp>(a), Ok(&Hp(1)));
    assert_eq!(world.get::<Hp>(b), Ok(&Hp(2)));
}

// ----- Added / Changed through a Schedule -----------------------------------

#[derive(Default, Debug)]
struct Seen {
    added: BTreeSet<Entity>,
    changed: BTreeSet<Entity>,
    removed: BTreeSet<Entity>,
}

fn watcher() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems(
        |added: Query<Entity, Added<Hp>>,
         changed: Query<Entity, Changed<Hp>>,
         mut removed: RemovedComponents<Hp>,
         mut seen: ResMut<Seen>| {
            *seen = Seen::default();
            seen.added.extend(added.iter());
            seen.changed.extend(changed.iter());
            seen.removed.extend(removed.read());
        },
    );
    schedule
}

#[test]
fn added_and_changed_in_a_system_for_each_kind_of_change() {
    let mut world = world();
    world.insert_resource(Seen::default());
    let es: Vec<Entity> = (0..6).map(|i| world.spawn(Hp(i))).collect();
    let mut schedule = watcher();
    schedule.run(&mut world); // catch up
    let saved = world.snapshot();
    world.get_mut::<Hp>(es[0]).unwrap().0 = 100; // value written
    world.remove_one::<Hp>(es[1]).unwrap(); // removed since
    world.despawn(es[2]).unwrap(); // despawned since
    let spawned = world.spawn(Hp(7)); // spawned since
    world.insert_one(es[3], Name("n".into())).unwrap(); // moved, no Hp write
    world.restore(&saved).unwrap();
    schedule.run(&mut world);
    let seen = world.resource::<Seen>();
    // es[1]'s Hp and es[2] came back: added (and so changed).
    assert_eq!(seen.added, BTreeSet::from([es[1], es[2]]));
    assert_eq!(seen.changed, BTreeSet::from([es[0], es[1], es[2]]));
    // The entity spawned since is gone: its Hp removed. The frame's own
    // removals were announced when they happened and stay announced (as
    // documented: announcements are not part of the state), so a system
    // that did not run during the frame reads them too.
    assert_eq!(seen.removed, BTreeSet::from([es[1], es[2], spawned]));
    // And the next run reports nothing.
    schedule.run(&mut world);
    let seen = world.resource::<Seen>();
    assert!(seen.added.is_empty() && seen.changed.is_empty() && seen.removed.is_empty());
}

#[test]
fn a_system_that_ran_between_snapshot_and_restore_sees_the_restore() {
    let mut world = world();
    world.insert_resource(Seen::default());
    let es: Vec<Entity> = (0..4).map(|i| world.spawn(Hp(i))).collect();
    let mut schedule = watcher();
    schedule.run(&mut world);
    let saved = world.snapshot();
    // The predicted frame, seen by the system.
    world.get_mut::<Hp>(es[0]).unwrap().0 = 50;
    world.remove_one::<Hp>(es[1]).unwrap();
    let spawned = world.spawn(Hp(9));
    schedule.run(&mut world);
    {
        let seen = world.resource::<Seen>();
        assert_eq!(seen.changed, BTreeSet::from([es[0], spawned]));
        assert_eq!(seen.removed, BTreeSet::from([es[1]]));
    }
    // The rollback: each undo is newer than the system's last run.
    world.restore(&saved).unwrap();
    schedule.run(&mut world);
    let seen = world.resource::<Seen>();
    assert_eq!(seen.added, BTreeSet::from([es[1]]));
    assert_eq!(seen.changed, BTreeSet::from([es[0], es[1]]));
    assert_eq!(seen.removed, BTreeSet::from([spawned]));
}

#[test]
fn a_component_removed_and_inserted_again_since_is_added_since_the_snapshot() {
    // The *frame* removed and re-inserted `Hp`. As documented (the
    // `mosaic::rollback` module, "What a restore announces"), a restore
    // puts values back, not the ticks of additions: to a system that last
    // ran before the frame, `Hp` was added (and written) since, as it was
    // before the restore. The restore itself adds nothing: a system that
    // ran after the frame sees no `Added`.
    let mut world = world();
    world.insert_resource(Seen::default());
    let e = world.spawn(Hp(1));
    let other = world.spawn(Hp(2));
    let mut schedule = watcher();
    schedule.run(&mut world);
    let saved = world.snapshot();
    world.remove_one::<Hp>(e).unwrap();
    world.insert_one(e, Hp(5)).unwrap();
    let mut late_watcher = watcher();
    late_watcher.run(&mut world); // runs after the frame
    world.restore(&saved).unwrap();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(1)));
    schedule.run(&mut world);
    let seen = world.resource::<Seen>();
    assert_eq!(seen.added, BTreeSet::from([e]), "{seen:?}");
    assert_eq!(seen.changed, BTreeSet::from([e]));
    assert!(!seen.changed.contains(&other));
    assert!(seen.removed.contains(&e), "the frame's removal");
    late_watcher.run(&mut world);
    let seen = world.resource::<Seen>();
    assert!(seen.added.is_empty(), "{seen:?}");
    assert_eq!(seen.changed, BTreeSet::from([e]), "its value was put back");
    assert!(seen.removed.is_empty(), "{seen:?}");
}

#[test]
fn snapshot_and_restore_from_exclusive_systems_inside_a_schedule() {
    // A rollback driven from the schedule itself: an exclusive system
    // restores, and the systems after it in the same run see exactly what
    // the restore changed.
    #[derive(Default)]
    struct Saved(Option<Snapshot>);
    let mut world = world();
    world.insert_resource(Seen::default());
    world.insert_resource(Saved::default());
    let es: Vec<Entity> = (0..5).map(|i| world.spawn(Hp(i))).collect();
    let mut schedule = Schedule::new();
    schedule.set_executor(ExecutorKind::SingleThreaded);
    schedule.add_system("rollback", |world: &mut World| {
        let saved = world.resource_mut::<Saved>().0.take();
        match saved {
            None => {
                let snapshot = world.snapshot();
                world.resource_mut::<Saved>().0 = Some(snapshot);
            }
            Some(snapshot) => {
                world.restore(&snapshot).unwrap();
            }
        }
    });
    schedule
        .add_system(
            "watch",
            |added: Query<Entity, Added<Hp>>,
             changed: Query<Entity, Changed<Hp>>,
             mut removed: RemovedComponents<Hp>,
             mut seen: ResMut<Seen>| {
                *seen = Seen::default();
                seen.added.extend(added.iter());
                seen.changed.extend(changed.iter());
                seen.removed.extend(removed.read());
            },
        )
        .after("rollback");
    schedule.run(&mut world); // snapshot, and the watcher catches up
    assert_eq!(world.resource::<Seen>().added.len(), 5);
    world.get_mut::<Hp>(es[3]).unwrap().0 = 30;
    let late = world.spawn(Hp(9));
    schedule.run(&mut world); // restore
    let seen = world.resource::<Seen>();
    assert!(seen.added.is_empty(), "{seen:?}");
    assert_eq!(seen.changed, BTreeSet::from([es[3]]));
    assert_eq!(seen.removed, BTreeSet::from([late]));
    assert_eq!(world.get::<Hp>(es[3]), Ok(&Hp(3)));
}

#[test]
fn a_respawned_entity_is_added_even_if_its_id_was_reused_in_between() {
    let mut world = world();
    world.insert_resource(Seen::default());
    let a = world.spawn(Hp(1));
    let mut schedule = watcher();
    schedule.run(&mut world);
    let saved = world.snapshot();
    world.despawn(a).unwrap();
    let reuse = world.spawn(Hp(2)); // a's slot, next generation
    assert_eq!(reuse.index(), a.index());
    schedule.run(&mut world);
    world.restore(&saved).unwrap();
    schedule.run(&mut world);
    let seen = world.resource::<Seen>();
    assert_eq!(seen.added, BTreeSet::from([a]));
    assert_eq!(seen.removed, BTreeSet::from([reuse]));
    assert_eq!(world.get::<Hp>(a), Ok(&Hp(1)));
}

#[test]
fn a_value_replaced_by_insert_since_is_changed_not_added() {
    // `insert_one` over a component the entity has replaces its value: a
    // write, so after the restore it is changed, never added.
    let mut world = world();
    world.insert_resource(Seen::default());
    let e = world.spawn(Hp(1));
    let mut schedule = watcher();
    schedule.run(&mut world);
    let saved = world.snapshot();
    world.insert_one(e, Hp(5)).unwrap();
    world.restore(&saved).unwrap();
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(1)));
    schedule.run(&mut world);
    let seen = world.resource::<Seen>();
    assert!(seen.added.is_empty(), "{seen:?}");
    assert_eq!(seen.changed, BTreeSet::from([e]));
    assert!(seen.removed.is_empty(), "{seen:?}");
}

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
struct Armor(u8);

/// Never registered.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Banner;

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[require(Armor, Banner)]
struct Knight(u8);

#[test]
fn a_restore_makes_no_registered_requirement_the_snapshot_did_not_hold() {
    // The snapshot says which registered components an entity had: a
    // Knight whose Armor was removed before it comes back without one,
    // whatever `#[require(Armor)]` makes on an ordinary insert (else the
    // restored state differs from the saved one: a desync). Banner, not
    // registered, is made as on any insert.
    #[derive(Default)]
    struct ArmorAdds(Vec<Entity>);
    let mut world = world();
    world.register_rollback::<Armor>();
    world.register_rollback::<Knight>();
    world.insert_resource(ArmorAdds::default());
    world.observe(|t: Trigger<OnAdd, Armor>, mut w: DeferredWorld| {
        w.resource_mut::<ArmorAdds>().0.push(t.target());
    });
    let ks: Vec<Entity> = (0..4).map(|i| world.spawn(Knight(i))).collect();
    for &k in &ks[..3] {
        world.remove_one::<Armor>(k).unwrap();
    }
    world.get_mut::<Armor>(ks[3]).unwrap().0 = 7;
    let before = dump_knights(&world, &ks);
    let sum = world.checksum();
    let saved = world.snapshot();
    world.despawn(ks[0]).unwrap(); // respawned by the restore
    world.remove_one::<Knight>(ks[1]).unwrap(); // inserted back
    world.insert_one(ks[2], Armor(5)).unwrap(); // removed again
    world.despawn(ks[3]).unwrap(); // respawned, with its Armor(7)
    world.resource_mut::<ArmorAdds>().0.clear();
    world.restore(&saved).unwrap();
    assert_eq!(dump_knights(&world, &ks), before);
    assert_eq!(world.checksum(), sum);
    assert_eq!(world.resource::<ArmorAdds>().0, [ks[3]]);
    assert!(
        world.has::<Banner>(ks[0]),
        "an unregistered requirement is made"
    );
    world.check_invariants();
}

#[test]
fn a_restore_makes_no_registered_requirement_with_nobody_observing() {
    // The same as above in a world with no observer or hook: the
    // requirement alone makes the insert go the announced way.
    let mut world = world();
    world.register_rollback::<Armor>();
    world.register_rollback::<Knight>();
    let ks: Vec<Entity> = (0..2).map(|i| world.spawn(Knight(i))).collect();
    for &k in &ks {
        world.remove_one::<Armor>(k).unwrap();
    }
    let sum = world.checksum();
    let saved = world.snapshot();
    world.despawn(ks[0]).unwrap();
    world.remove_one::<Knight>(ks[1]).unwrap();
    world.restore(&saved).unwrap();
    assert_eq!(world.checksum(), sum);
    assert!(!world.has::<Armor>(ks[0]) && !world.has::<Armor>(ks[1]));
}

fn dump_knights(world: &World, ks: &[Entity]) -> Vec<(Option<Knight>, Option<Armor>)> {
    ks.iter()
        .map(|&k| {
            (
                world.get::<Knight>(k).ok().copied(),
                world.get::<Armor>(k).ok().copied(),
            )
        })
        .collect()
}

// ----- The next ids ---------------------------------------------------------

#[test]
fn next_ids_after_reserve_and_commands_spawns() {
    let mut world = world();
    world.spawn(Hp(0));
    let saved = world.snapshot();
    // A frame that makes entities three ways.
    let frame = |world: &mut World| -> Vec<Entity> {
        let reserved = world.reserve_entity();
        let mut commands = CommandBuffer::new(world);
        let queued = commands.spawn(Hp(2));
        commands.apply(world).unwrap();
        let mut schedule = Schedule::new();
        schedule.add_systems(|mut commands: Commands| {
            commands.spawn(Hp(3));
        });
        schedule.run(world);
        let spawned = world.spawn(Hp(4));
        let mut all: Vec<Entity> = world.iter_entities().map(|e| e.id()).collect();
        all.sort();
        assert!([reserved, queued, spawned].iter().all(|e| all.contains(e)));
        assert_eq!(all.len(), 5);
        all
    };
    let first = frame(&mut world);
    let sum = world.checksum();
    world.restore(&saved).unwrap();
    assert_eq!(world.len(), 1);
    let again = frame(&mut world);
    assert_eq!(first, again);
    assert_eq!(world.checksum(), sum);
}

#[test]
fn a_command_buffer_holding_reserved_ids_is_a_documented_error() {
    let mut world = world();
    world.spawn(Hp(0));
    let saved = world.snapshot();
    let mut commands = CommandBuffer::new(&world);
    let pending = commands.spawn(Hp(1));
    match world.restore(&saved) {
        Err(RollbackError::Entities(_)) => {}
        other => panic!("expected RollbackError::Entities, got {other:?}"),
    }
    // Once the buffer is applied (or dropped), the same snapshot restores.
    commands.apply(&mut world).unwrap();
    assert!(world.contains(pending));
    world.restore(&saved).unwrap();
    assert!(!world.contains(pending));
    assert_eq!(world.len(), 1);
    world.check_invariants();
}

#[test]
fn next_ids_after_spawn_at_far_beyond_the_end() {
    let mut world = world();
    let a = world.spawn(Hp(0));
    let saved = world.snapshot();
    let next = world.spawn(Hp(1));
    world.despawn(next).unwrap();
    // A server-assigned id far past every slot the world has.
    let far = Entity::from_bits((3u64 << 32) | 500).unwrap();
    world.spawn_at(far, Hp(2));
    assert!(world.contains(far));
    world.restore(&saved).unwrap();
    assert!(!world.contains(far));
    assert_eq!(world.len(), 1);
    assert!(world.contains(a));
    assert_eq!(world.spawn(Hp(1)), next, "the same id as the first time");
    world.check_invariants();
}

#[test]
fn next_ids_after_clear() {
    let mut world = world();
    world.register_rollback_relation::<Owes>();
    let es: Vec<Entity> = (0..5).map(|i| world.spawn(Hp(i))).collect();
    world.despawn(es[2]).unwrap();
    world.add_child(es[0], es[1]).unwrap();
    world.add_child(es[0], es[4]).unwrap();
    world.relate(es[3], es[0], Owes(2)).unwrap();
    world.insert(es[4], (Disabled, Buff(3))).unwrap();
    let before = dump(&world);
    let saved = world.snapshot();
    let sum = world.checksum();
    let first = world.spawn(Hp(9));
    world.despawn(first).unwrap();
    world.clear();
    assert!(world.is_empty());
    world.restore(&saved).unwrap();
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    assert_eq!(world.children(es[0]), [es[1], es[4]]);
    assert_eq!(world.spawn(Hp(9)), first);
    world.check_invariants();
}

#[test]
fn a_retired_slot_comes_back_alive_and_stays_retired_after() {
    // A slot whose generation is at the limit is retired when its entity
    // dies (never reused): a restore brings the entity back, and after
    // it dies again the slot is still never handed out.
    let mut world = world();
    let first = world.spawn(Hp(0));
    world.despawn(first).unwrap();
    world.debug_set_next_generation(first.index(), std::num::NonZeroU32::new(u32::MAX).unwrap());
    let old = world.spawn(Hp(1));
    assert_eq!((old.index(), old.generation()), (first.index(), u32::MAX));
    let saved = world.snapshot();
    world.despawn(old).unwrap();
    let next = world.spawn(Hp(2));
    assert_ne!(next.index(), old.index(), "a retired slot is not reused");
    world.restore(&saved).unwrap();
    assert_eq!(world.get::<Hp>(old), Ok(&Hp(1)));
    assert!(!world.contains(next));
    world.despawn(old).unwrap();
    assert_eq!(world.spawn(Hp(2)), next, "the same id as the first time");
    world.check_invariants();
}

// ----- Checksum -------------------------------------------------------------

#[test]
fn checksum_ignores_unregistered_components_and_resources() {
    let mut world = world();
    let es: Vec<Entity> = (0..4).map(|i| world.spawn(Hp(i))).collect();
    let sum = world.checksum();
    world.insert_one(es[1], Scratch(1)).unwrap();
    world.insert_resource(7u64);
    assert_eq!(world.checksum(), sum);
    world.get_mut::<Scratch>(es[1]).unwrap().0 = 2;
    assert_eq!(world.checksum(), sum);
    world.remove_one::<Scratch>(es[1]).unwrap();
    assert_eq!(world.checksum(), sum);
}

#[test]
fn checksum_equal_when_spawn_at_reaches_the_same_ids_in_another_order() {
    // One peer spawns in order; the other places the same ids (sent by a
    // server, say) in reverse, and one with a batch: the same state.
    let mut a = world();
    let ids: Vec<Entity> = (0..4).map(|i| a.spawn((Hp(i), Buff(i as u8)))).collect();
    let mut b = world();
    for (i, &e) in ids.iter().enumerate().rev() {
        b.spawn_at(e, (Buff(i as u8), Hp(i as i32)));
    }
    assert_eq!(dump(&a), dump(&b));
    assert_eq!(a.checksum(), b.checksum());
    let mut c = world();
    let batch: Vec<Entity> = c.spawn_batch((0..4).map(|i| (Hp(i), Buff(i as u8))));
    assert_eq!(batch, ids);
    assert_eq!(a.checksum(), c.checksum());
    // And they go on alike.
    let next = [a.spawn(Hp(9)), b.spawn(Hp(9)), c.spawn(Hp(9))];
    assert!(next.iter().all(|&e| e == next[0]));
    assert_eq!(a.checksum(), b.checksum());
}

#[test]
fn checksum_does_not_depend_on_registration_order() {
    let build = |flip: bool| {
        let mut world = World::new();
        if flip {
            world.register_rollback_resource::<Score>();
            world.register_rollback::<Buff>();
            world.register_rollback::<Name>();
            world.register_rollback::<Hp>();
        } else {
            world.register_rollback::<Hp>();
            world.register_rollback::<Name>();
            world.register_rollback::<Buff>();
            world.register_rollback_resource::<Score>();
        }
        world.insert_resource(Score(3));
        world.spawn((Hp(1), Name("a".into()), Buff(2)));
        world.spawn((Buff(4), Hp(3)));
        world.checksum()
    };
    assert_eq!(build(false), build(true));
}

/// `World::checksum` promises the same value in any process, on any
/// platform (a fixed encoding: integers as little-endian 64-bit words):
/// peers on different machines compare it. This value was computed once
/// on x86_64 Linux; a different one on another target, or after a change
/// to the encoding, is a desync between peers.
#[test]
fn checksum_of_a_fixed_world_is_a_fixed_value() {
    let mut world = World::new();
    world.register_rollback::<Hp>();
    world.register_rollback_resource::<Score>();
    world.insert_resource(Score(3));
    let a = world.spawn(Hp(1));
    world.spawn(Hp(-2));
    world.despawn(a).unwrap();
    world.spawn(Hp(3));
    assert_eq!(world.checksum(), EXPECTED_FIXED_CHECKSUM);
}

const EXPECTED_FIXED_CHECKSUM: u64 = 182_169_077_278_855_524;

#[derive(Clone, Debug)]
enum Op {
    Spawn(i32),
    Despawn(usize),
    SetHp(usize, i32),
    RemoveHp(usize),
    SetName(usize, u8),
    AddBuff(usize, u8),
    RemoveBuff(usize),
    Disable(usize),
    Enable(usize),
    Parent(usize, usize),
    Owes(usize, usize, u32),
    Score(u32),
    Scratch(usize, u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4i32).prop_map(Op::Spawn),
        any::<usize>().prop_map(Op::Despawn),
        (any::<usize>(), 0..4i32).prop_map(|(e, v)| Op::SetHp(e, v)),
        any::<usize>().prop_map(Op::RemoveHp),
        (any::<usize>(), 0..3u8).prop_map(|(e, v)| Op::SetName(e, v)),
        (any::<usize>(), 0..3u8).prop_map(|(e, v)| Op::AddBuff(e, v)),
        any::<usize>().prop_map(Op::RemoveBuff),
        any::<usize>().prop_map(Op::Disable),
        any::<usize>().prop_map(Op::Enable),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Parent(a, b)),
        (any::<usize>(), any::<usize>(), 0..3u32).prop_map(|(a, b, v)| Op::Owes(a, b, v)),
        (0..3u32).prop_map(Op::Score),
        (any::<usize>(), 0..3u32).prop_map(|(e, v)| Op::Scratch(e, v)),
    ]
}

fn apply(world: &mut World, op: &Op) {
    let live: Vec<Entity> = world.iter_entities().map(|e| e.id()).collect();
    let pick = |i: usize| (!live.is_empty()).then(|| live[i % live.len()]);
    match *op {
        Op::Spawn(v) => {
            world.spawn(Hp(v));
        }
        Op::Despawn(i) => {
            if let Some(e) = pick(i) {
                world.despawn(e).unwrap();
            }
        }
        Op::SetHp(i, v) => {
            if let Some(e) = pick(i) {
                world.insert_one(e, Hp(v)).unwrap();
            }
        }
        Op::RemoveHp(i) => {
            if let Some(e) = pick(i) {
                let _ = world.remove_one::<Hp>(e);
            }
        }
        Op::SetName(i, v) => {
            if let Some(e) = pick(i) {
                world.insert_one(e, Name(format!("n{v}"))).unwrap();
            }
        }
        Op::AddBuff(i, v) => {
            if let Some(e) = pick(i) {
                world.insert_one(e, Buff(v)).unwrap();
            }
        }
        Op::RemoveBuff(i) => {
            if let Some(e) = pick(i) {
                let _ = world.remove_one::<Buff>(e);
            }
        }
        Op::Disable(i) => {
            if let Some(e) = pick(i) {
                world.insert_one(e, Disabled).unwrap();
            }
        }
        Op::Enable(i) => {
            if let Some(e) = pick(i) {
                let _ = world.remove_one::<Disabled>(e);
            }
        }
        Op::Parent(a, b) => {
            if let (Some(c), Some(p)) = (pick(a), pick(b)) {
                // Refused for a cycle or a self-edge: fine, nothing changes.
                let _ = world.set_parent(c, p);
            }
        }
        Op::Owes(a, b, v) => {
            if let (Some(s), Some(t)) = (pick(a), pick(b)) {
                let _ = world.relate(s, t, Owes(v));
            }
        }
        Op::Score(v) => world.insert_resource(Score(v)),
        Op::Scratch(i, v) => {
            if let Some(e) = pick(i) {
                world.insert_one(e, Scratch(v)).unwrap();
            }
        }
    }
}

fn prop_world() -> World {
    let mut world = world();
    world.register_rollback_relation::<Owes>();
    world.register_rollback_resource::<Score>();
    world
}

/// The registered state in full, as a user reads it (allocator included:
/// the next spawn's id).
fn full_state(world: &mut World) -> (Vec<String>, Option<Score>, Entity) {
    let rows = dump(world);
    let score = world.get_resource::<Score>().cloned();
    let saved = world.snapshot();
    let next = world.spawn(());
    world.restore(&saved).unwrap();
    (rows, score, next)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 96 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any registered change moves the checksum, an unregistered one
    /// does not, and a restore brings it (and the state) back.
    #[test]
    fn checksum_tracks_every_registered_change(
        setup in prop::collection::vec(op(), 0..12),
        frame in prop::collection::vec(op(), 1..8),
    ) {
        let mut world = prop_world();
        for o in &setup {
            apply(&mut world, o);
        }
        let state = full_state(&mut world);
        let sum = world.checksum();
        let saved = world.snapshot();
        for o in &frame {
            let before = full_state(&mut world);
            let before_sum = world.checksum();
            apply(&mut world, o);
            let after = full_state(&mut world);
            if after == before {
                prop_assert_eq!(world.checksum(), before_sum, "{:?} changed nothing", o);
            } else {
                prop_assert_ne!(world.checksum(), before_sum, "{:?} changed the state", o);
            }
        }
        world.restore(&saved).unwrap();
        prop_assert_eq!(full_state(&mut world), state.clone());
        prop_assert_eq!(world.checksum(), sum);
        world.check_invariants();
        // The same state reached by another path (no snapshot, no frame,
        // no restore): the same checksum.
        let mut direct = prop_world();
        for o in &setup {
            apply(&mut direct, o);
        }
        prop_assert_eq!(full_state(&mut direct), state);
        prop_assert_eq!(direct.checksum(), sum);
    }
}

#[test]
fn snapshots_restore_in_any_order_back_and_forth() {
    // Not only back in time: restoring an older snapshot and then a newer
    // one ("redo") gives the newer state exactly, structure and values.
    let mut world = world();
    world.register_rollback_relation::<Owes>();
    let mut states = Vec::new();
    let mut snapshots = Vec::new();
    let mut es: Vec<Entity> = (0..6).map(|i| world.spawn(Hp(i))).collect();
    for step in 0..4i32 {
        states.push((dump(&world), world.checksum()));
        snapshots.push(world.snapshot());
        let i = step as usize;
        world.get_mut::<Hp>(es[i]).unwrap().0 += 10;
        world.insert_one(es[i + 1], Buff(step as u8)).unwrap();
        world.despawn(es[i + 2]).unwrap();
        es[i + 2] = world.spawn((Hp(step), Name(format!("{step}"))));
        world.set_parent(es[i + 1], es[0]).ok();
        world.relate(es[i], es[i + 1], Owes(step as u32)).unwrap();
    }
    for &k in &[0usize, 3, 1, 2, 0, 3, 2] {
        world.restore(&snapshots[k]).unwrap();
        assert_eq!((dump(&world), world.checksum()), states[k], "snapshot {k}");
        world.check_invariants();
    }
}

thread_local! {
    static LIVE_COUNTED: Cell<isize> = const { Cell::new(0) };
}

/// Counts its live values (on this test's thread): every clone a snapshot
/// or a restore makes is dropped exactly once.
#[derive(Component, Debug, PartialEq, Eq, Hash)]
#[component(rollback)]
struct Counted(String);

impl Counted {
    fn new(s: &str) -> Self {
        LIVE_COUNTED.set(LIVE_COUNTED.get() + 1);
        Counted(s.to_string())
    }
}

impl Clone for Counted {
    fn clone(&self) -> Self {
        Counted::new(&self.0)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        LIVE_COUNTED.set(LIVE_COUNTED.get() - 1);
    }
}

#[test]
fn every_value_a_snapshot_or_restore_clones_is_dropped_once() {
    {
        let mut world = world();
        let es: Vec<Entity> = (0..10)
            .map(|i| world.spawn((Hp(i), Counted::new(&format!("{i}")))))
            .collect();
        assert_eq!(LIVE_COUNTED.get(), 10);
        let saved = world.snapshot();
        assert_eq!(LIVE_COUNTED.get(), 20, "the snapshot holds a copy");
        let mut ring = SnapshotRing::new(3);
        for frame in 0..6u64 {
            ring.save(frame, &world);
            if let Ok(c) = world.get_mut::<Counted>(es[frame as usize]) {
                c.0.push('!');
            }
            world.despawn(es[9 - frame as usize]).unwrap();
            world.spawn(Counted::new("new"));
            world.remove_one::<Counted>(es[3]).ok();
        }
        ring.rollback_to(3, &mut world).unwrap().unwrap();
        world.restore(&saved).unwrap();
        let mut kept = world.snapshot();
        world.get_mut::<Counted>(es[0]).unwrap().0.push('?');
        world.snapshot_into(&mut kept);
        world.restore(&kept).unwrap();
        world.check_invariants();
        // The world's ten, and what the snapshots hold.
        assert!(LIVE_COUNTED.get() >= 10);
        drop(ring);
        drop(kept);
        drop(saved);
        assert_eq!(LIVE_COUNTED.get(), 10, "only the world's values are left");
    }
    assert_eq!(LIVE_COUNTED.get(), 0, "every value dropped, once");
}

// ----- Big worlds, other worlds, panics -------------------------------------

#[test]
fn restore_after_the_world_grew_a_lot_and_shrank() {
    let n: i32 = if cfg!(miri) { 300 } else { 10_000 };
    let mut world = world();
    let keep: Vec<Entity> = (0..50).map(|i| world.spawn((Hp(i), Buff(1)))).collect();
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    let grown: Vec<Entity> = (0..n)
        .map(|i| world.spawn((Hp(i), Name(format!("{i}")))))
        .collect();
    for &e in grown.iter().step_by(3).chain(&keep[..10]) {
        world.despawn(e).unwrap();
    }
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.despawned, grown.len() - grown.len().div_ceil(3));
    assert_eq!(report.respawned, 10);
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    assert_eq!(world.spawn(Hp(0)), grown[0]);
    world.check_invariants();
}

#[test]
fn a_restore_into_another_world_even_one_built_alike_is_refused() {
    let build = || {
        let mut world = world();
        world.spawn(Hp(1));
        world
    };
    let a = build();
    let mut b = build();
    let saved_a = a.snapshot();
    let first = b.iter_entities().next().unwrap().id();
    b.get_mut::<Hp>(first).unwrap().0 = 2;
    let before = dump(&b);
    assert_eq!(b.restore(&saved_a).unwrap_err(), RollbackError::WrongWorld);
    assert_eq!(dump(&b), before);
    // Into a ring: `save` on one world, `rollback_to` on another.
    let mut ring = SnapshotRing::new(2);
    ring.save(0, &a);
    assert_eq!(
        ring.rollback_to(0, &mut b).unwrap().unwrap_err(),
        RollbackError::WrongWorld
    );
    assert_eq!(dump(&b), before);
}

fn fragile_world() -> (World, Vec<Entity>) {
    let mut world = world();
    let es: Vec<Entity> = (0..20)
        .map(|i| world.spawn((Hp(i), Fragile(i as u32))))
        .collect();
    (world, es)
}

/// Runs `f` with `Fragile::clone` failing, and returns whether it panicked.
fn with_failing_clone(f: impl FnOnce()) -> bool {
    CLONE_FAILS.set(true);
    let result = catch_unwind(AssertUnwindSafe(f));
    CLONE_FAILS.set(false);
    result.is_err()
}

#[test]
fn a_panicking_clone_during_snapshot_changes_nothing() {
    let (mut world, es) = fragile_world();
    let before = dump(&world);
    let sum = world.checksum();
    let good = world.snapshot();
    assert!(with_failing_clone(|| drop(world.snapshot())));
    world.check_invariants();
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    // The snapshot kept by hand is untouched by a failed `snapshot_into`.
    let mut kept = good.clone();
    world.get_mut::<Fragile>(es[0]).unwrap().0 = 99;
    let changed = dump(&world);
    let changed_sum = world.checksum();
    assert!(with_failing_clone(|| world.snapshot_into(&mut kept)));
    // Its buffers were being overwritten: it holds no state now, and
    // restoring it is refused (not an empty world), changing nothing.
    assert_eq!(world.restore(&kept).unwrap_err(), RollbackError::Incomplete);
    assert_eq!(dump(&world), changed);
    assert_eq!(world.checksum(), changed_sum);
    assert_eq!(world.get::<Fragile>(es[0]), Ok(&Fragile(99)));
    // Taken again, it is a snapshot as any other.
    world.snapshot_into(&mut kept);
    world.restore(&good).unwrap();
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    world.restore(&kept).unwrap();
    assert_eq!(world.get::<Fragile>(es[0]), Ok(&Fragile(99)));
    world.check_invariants();
}

#[test]
fn a_panicking_clone_during_ring_save_keeps_the_frames_held() {
    let (mut world, es) = fragile_world();
    let mut ring = SnapshotRing::new(2);
    ring.save(0, &world);
    world.get_mut::<Fragile>(es[0]).unwrap().0 = 1;
    ring.save(1, &world);
    world.get_mut::<Fragile>(es[0]).unwrap().0 = 2;
    assert!(with_failing_clone(|| ring.save(2, &world)));
    world.check_invariants();
    // Frame 0 was being dropped for frame 2; frame 1 is held, and restores.
    assert_eq!(ring.newest_frame(), Some(1));
    ring.rollback_to(1, &mut world).unwrap().unwrap();
    assert_eq!(world.get::<Fragile>(es[0]), Ok(&Fragile(1)));
    world.get_mut::<Fragile>(es[0]).unwrap().0 = 2;
    ring.save(2, &world);
    world.get_mut::<Fragile>(es[0]).unwrap().0 = 3;
    ring.rollback_to(2, &mut world).unwrap().unwrap();
    assert_eq!(world.get::<Fragile>(es[0]), Ok(&Fragile(2)));
    world.check_invariants();
}

#[test]
fn a_panicking_clone_during_restore_is_no_ub_and_a_retry_completes_it() {
    let (mut world, es) = fragile_world();
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    // Values written, an entity despawned, one spawned, one removed from.
    for &e in &es[..12] {
        world.get_mut::<Fragile>(e).unwrap().0 += 100;
    }
    world.despawn(es[15]).unwrap();
    world.remove_one::<Fragile>(es[16]).unwrap();
    let late = world.spawn((Hp(0), Fragile(0)));
    assert!(with_failing_clone(|| drop(world.restore(&saved))));
    world.check_invariants();
    // Whatever state the failed restore left, restoring again completes it.
    world.restore(&saved).unwrap();
    world.check_invariants();
    assert!(!world.contains(late));
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(world.get::<Fragile>(e), Ok(&Fragile(i as u32)));
    }
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
}

#[test]
fn a_panicking_clone_while_values_are_put_back_leaves_a_whole_world() {
    // Only values written (most rows: the bulk copy path), no structure:
    // the clone fails while the columns are written back.
    let (mut world, es) = fragile_world();
    world.insert_resource(Seen::default());
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    for &e in &es[..16] {
        world.get_mut::<Fragile>(e).unwrap().0 += 100;
    }
    world.get_mut::<Hp>(es[3]).unwrap().0 = -3;
    assert!(with_failing_clone(|| drop(world.restore(&saved))));
    world.check_invariants();
    world.restore(&saved).unwrap();
    world.check_invariants();
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(world.get::<Fragile>(e), Ok(&Fragile(i as u32)));
    }
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    // Restored once more, nothing is written again.
    assert_eq!(world.restore(&saved).unwrap().rows_restored, 0);
}

/// Never registered: a target cannot be despawned while a source lives.
#[derive(Relation, Clone, Debug, PartialEq, Eq, Hash)]
#[relation(on_target_despawn = "refuse")]
struct Anchored;

#[test]
fn an_anchor_and_what_is_anchored_to_it_both_spawned_since_go_in_any_order() {
    // Both ends of a refusing relation were spawned after the snapshot,
    // the target first: a pin between two entities that both go keeps
    // nothing (the rule of every despawn of many), so the restore
    // despawns both.
    for observed in [false, true] {
        let mut world = world();
        if observed {
            world.observe(|_: Trigger<OnRemove, Hp>, _: DeferredWorld| {});
        }
        let old = world.spawn(Hp(0));
        let sum = world.checksum();
        let saved = world.snapshot();
        let anchor = world.spawn(Hp(1));
        let boat = world.spawn(Hp(2));
        world.relate(boat, anchor, Anchored).unwrap();
        // A pin both ways, too.
        world.relate(anchor, boat, Anchored).unwrap();
        let report = world.restore(&saved).unwrap();
        assert_eq!(report.despawned, 2);
        assert!(!world.contains(anchor) && !world.contains(boat));
        assert_eq!(world.len(), 1);
        assert!(world.contains(old));
        assert_eq!(world.checksum(), sum);
        assert_eq!(world.spawn(Hp(1)), anchor, "observed: {observed}");
        world.check_invariants();
    }
}

#[test]
fn a_new_entity_pinned_by_an_old_one_is_refused_and_the_rest_restored() {
    // `RollbackError::DespawnRefused`: an entity of the snapshot holds a
    // spawned-since one through an unregistered refusing relation. The
    // restore does the rest (values, other entities, resources) and says
    // which entity stayed; once unrelated, restoring again completes it.
    let mut world = world();
    world.register_rollback_resource::<Score>();
    world.insert_resource(Score(1));
    let old = world.spawn(Hp(0));
    let gone = world.spawn(Hp(5));
    let before = dump(&world);
    let sum = world.checksum();
    let saved = world.snapshot();
    let anchor = world.spawn(Hp(1));
    let other = world.spawn(Hp(2));
    world.relate(old, anchor, Anchored).unwrap();
    world.get_mut::<Hp>(old).unwrap().0 = 50;
    world.despawn(gone).unwrap();
    world.resource_mut::<Score>().0 = 9;
    assert_eq!(
        world.restore(&saved).unwrap_err(),
        RollbackError::DespawnRefused(anchor)
    );
    world.check_invariants();
    assert!(world.contains(anchor), "the pinned entity stays");
    assert!(!world.contains(other), "the others went");
    assert_eq!(world.get::<Hp>(old), Ok(&Hp(0)));
    assert_eq!(world.get::<Hp>(gone), Ok(&Hp(5)));
    assert_eq!(world.resource::<Score>(), &Score(1));
    world.unrelate::<Anchored>(old, anchor).unwrap();
    world.restore(&saved).unwrap();
    assert_eq!(dump(&world), before);
    assert_eq!(world.checksum(), sum);
    assert_eq!(world.spawn(Hp(1)), anchor);
    world.check_invariants();
}

/// Never registered; sources die with their target.
#[derive(Relation, Clone, Debug, PartialEq, Eq, Hash)]
#[relation(on_target_despawn = "despawn")]
struct Riding;

#[test]
fn an_old_entity_riding_a_new_one_through_an_unregistered_relation_stays() {
    // The restore despawns the horse (spawned since); `Riding`'s policy
    // would take its rider along, but the rider is an entity of the
    // snapshot: a restore never despawns one. It loses the edge (not part
    // of the state: unregistered), as under `Unrelate`.
    for observed in [false, true] {
        let mut world = world();
        if observed {
            world.observe(|_: Trigger<OnRemove, Hp>, _: DeferredWorld| {});
        }
        let rider = world.spawn(Hp(0));
        let passenger = world.spawn(Hp(1));
        let before = dump(&world);
        let sum = world.checksum();
        let saved = world.snapshot();
        let horse = world.spawn(Hp(2));
        let foal = world.spawn(Hp(3));
        world.relate(rider, horse, Riding).unwrap();
        world.relate(passenger, rider, Riding).unwrap(); // rides the rider
        world.relate(foal, horse, Riding).unwrap(); // new: goes anyway
        world.get_mut::<Hp>(rider).unwrap().0 = 10;
        let report = world.restore(&saved).unwrap();
        assert_eq!(report.despawned, 2);
        assert!(!world.contains(horse) && !world.contains(foal));
        assert_eq!(world.get::<Hp>(rider), Ok(&Hp(0)));
        assert!(world.targets::<Riding>(rider).is_empty());
        assert_eq!(
            world.targets::<Riding>(passenger),
            [rider],
            "unregistered: left"
        );
        assert_eq!(dump(&world), before);
        assert_eq!(world.checksum(), sum);
        assert_eq!(world.spawn(Hp(2)), horse);
        world.check_invariants();
        // A despawn outside a restore cascades as before.
        let horse = world.spawn(Hp(2));
        world.relate(rider, horse, Riding).unwrap();
        world.despawn(horse).unwrap();
        assert!(!world.contains(rider) && !world.contains(passenger));
    }
}
