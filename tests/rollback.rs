//! Rollback: `World::snapshot` / `World::restore` give back the same ids,
//! values, row order, relations and disabled set; change detection after a
//! restore reports only what really changed; `World::checksum` is equal
//! for equal states and differs for different ones.

use std::collections::BTreeSet;

use mosaic::prelude::*;
use mosaic::{Disabled, RemovedComponents, RollbackError, SnapshotRing};
use proptest::prelude::*;

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Pos(i32, i32);

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Vel(i32, i32);

#[derive(Component, Clone, Debug, PartialEq, Eq, Hash)]
struct Label(String);

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[component(storage = "sparse")]
struct Buff(u8);

/// Not registered for rollback.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Scratch(u32);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Score(u64);

fn registered() -> World {
    let mut world = World::new();
    world.register_rollback::<Pos>();
    world.register_rollback::<Vel>();
    world.register_rollback::<Label>();
    world.register_rollback::<Buff>();
    world.register_rollback_resource::<Score>();
    world.register_rollback_relation::<ChildOf>();
    world
}

/// One entity's registered components, as `dump` lists them.
type Row = (
    Entity,
    Option<Pos>,
    Option<Vel>,
    Option<Label>,
    Option<Buff>,
);

/// Every registered component of every entity, in iteration order.
fn dump(world: &mut World) -> Vec<Row> {
    world.check_invariants();
    let mut q = world.query::<(
        Entity,
        Option<&Pos>,
        Option<&Vel>,
        Option<&Label>,
        Option<&Buff>,
    )>();
    q.iter(world)
        .map(|(e, p, v, l, b)| (e, p.copied(), v.copied(), l.cloned(), b.copied()))
        .collect()
}

fn populated(n: i32) -> (World, Vec<Entity>) {
    let mut world = registered();
    let es: Vec<Entity> = (0..n)
        .map(|i| world.spawn((Pos(i, 0), Vel(1, i), Label(format!("e{i}")))))
        .collect();
    for &e in es.iter().step_by(3) {
        world.insert_one(e, Buff(7)).unwrap();
    }
    world.insert_resource(Score(10));
    (world, es)
}

#[test]
fn values_come_back_and_only_written_rows_are_copied() {
    let (mut world, es) = populated(20);
    let before = dump(&mut world);
    let sum = world.checksum();
    let saved = world.snapshot();
    world.get_mut::<Pos>(es[3]).unwrap().0 = 99;
    world.get_mut::<Label>(es[4]).unwrap().0.push('!');
    *world.get_mut::<Buff>(es[6]).unwrap() = Buff(1);
    world.resource_mut::<Score>().0 = 3;
    assert_ne!(world.checksum(), sum);
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.rows_restored, 3);
    assert_eq!(report.resources_restored, 1);
    assert_eq!((report.despawned, report.respawned), (0, 0));
    assert_eq!(dump(&mut world), before);
    assert_eq!(world.resource::<Score>(), &Score(10));
    assert_eq!(world.checksum(), sum);
}

#[test]
fn ids_rows_and_allocator_come_back() {
    let (mut world, es) = populated(12);
    world.despawn(es[5]).unwrap(); // a free slot before the snapshot
    let before = dump(&mut world);
    let saved = world.snapshot();
    // What the first time spawned after the snapshot.
    let first: Vec<Entity> = (0..4).map(|i| world.spawn(Pos(i, i))).collect();
    // A different future: despawns, spawns, moves between tables.
    world.despawn(es[0]).unwrap();
    world.despawn(es[7]).unwrap();
    world.remove_one::<Vel>(es[2]).unwrap();
    world.insert_one(es[8], Buff(2)).unwrap();
    world.remove_one::<Label>(es[9]).unwrap();
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.despawned, 4);
    assert_eq!(report.components_changed, 3);
    assert_eq!(report.respawned, 2);
    assert_eq!(dump(&mut world), before, "values and iteration order");
    assert!(!world.contains(es[5]));
    let again: Vec<Entity> = (0..4).map(|i| world.spawn(Pos(i, i))).collect();
    assert_eq!(again, first, "the next spawns get the same ids");
}

/// A frame whose only trace is in the allocator (an entity spawned and
/// despawned again, a generation bumped): the restore must still put the
/// allocator back, although every table and column looks untouched; and a
/// frame that leaves the allocator as it was keeps giving the same ids.
#[test]
fn allocator_only_changes_come_back() {
    let (mut world, es) = populated(6);
    world.despawn(es[3]).unwrap();
    let saved = world.snapshot();
    let first = world.spawn(Pos(9, 9));
    world.despawn(first).unwrap();
    world.restore(&saved).unwrap();
    assert!(!world.contains(first));
    assert_eq!(
        world.spawn(Pos(9, 9)),
        first,
        "slot and generation put back"
    );
    world.restore(&saved).unwrap();
    // Nothing structural since: the allocator is the saved one already.
    world.get_mut::<Pos>(es[0]).unwrap().0 += 1;
    world.restore(&saved).unwrap();
    assert_eq!(
        world.spawn(Pos(9, 9)),
        first,
        "unchanged allocator, same ids"
    );
}

#[test]
fn restore_twice_and_from_older_snapshots() {
    let (mut world, es) = populated(6);
    let s0 = world.snapshot();
    let d0 = dump(&mut world);
    world.get_mut::<Pos>(es[1]).unwrap().1 = 5;
    let extra = world.spawn(Pos(7, 7));
    let s1 = world.snapshot();
    let d1 = dump(&mut world);
    world.despawn(es[2]).unwrap();
    world.restore(&s1).unwrap();
    assert_eq!(dump(&mut world), d1);
    world.restore(&s0).unwrap();
    assert_eq!(dump(&mut world), d0);
    assert!(!world.contains(extra));
    world.restore(&s0).unwrap();
    assert_eq!(dump(&mut world), d0);
    world.restore(&s1).unwrap();
    assert_eq!(dump(&mut world), d1);
    assert!(world.contains(extra));
}

#[test]
fn changed_reports_only_rows_written_since_the_snapshot() {
    let (mut world, es) = populated(10);
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    assert_eq!(changed.iter(&world).count(), 10); // first run: everything
    let saved = world.snapshot();
    world.get_mut::<Pos>(es[2]).unwrap().0 += 1;
    world.get_mut::<Pos>(es[5]).unwrap().0 += 1;
    assert_eq!(changed.iter(&world).count(), 2);
    world.restore(&saved).unwrap();
    let after: BTreeSet<Entity> = changed.iter(&world).collect();
    assert_eq!(after, BTreeSet::from([es[2], es[5]]));
    // Nothing written since the snapshot: a restore marks nothing.
    world.restore(&saved).unwrap();
    assert_eq!(changed.iter(&world).count(), 0);
}

/// A frame that wrote a few rows scattered over large tables, through
/// each way of writing (`World::get_mut`, a `Mut<T>` item written
/// through or only read, `Query::get_mut` of `&mut T`, a sparse
/// component): the restore, which skips the blocks of rows nobody wrote,
/// puts back exactly the saved values and restores exactly the written
/// rows, `Changed` then reports exactly those, and the frames after it
/// come back as exactly.
#[test]
fn a_partly_written_frame_comes_back_exactly() {
    // Over 512 rows (more than 64 blocks of 8) outside Miri, where it is slow.
    let n = if cfg!(miri) { 300 } else { 1000 };
    let (mut world, es) = populated(n);
    let mut changed_pos = world.query_filtered::<Entity, Changed<Pos>>();
    let mut changed_vel = world.query_filtered::<Entity, Changed<Vel>>();
    let mut changed_label = world.query_filtered::<Entity, Changed<Label>>();
    let mut changed_buff = world.query_filtered::<Entity, Changed<Buff>>();
    changed_pos.iter(&world).count();
    changed_vel.iter(&world).count();
    changed_label.iter(&world).count();
    changed_buff.iter(&world).count();
    let before = dump(&mut world);
    let saved = world.snapshot();
    for round in 0..3 {
        let mut pos = BTreeSet::new();
        for &e in es.iter().skip(round).step_by(97) {
            world.get_mut::<Pos>(e).unwrap().0 += 1000;
            pos.insert(e);
        }
        let mut vel = BTreeSet::new();
        let mut q = world.query::<(Entity, Mut<Vel>)>();
        let mut read = 0;
        for (e, mut v) in q.iter_mut(&mut world) {
            if v.1 % 131 == round as i32 {
                v.0 = -1;
                vel.insert(e);
            } else {
                read += v.0; // read only: not a write
            }
        }
        assert_eq!(read, n - vel.len() as i32);
        let mut label = BTreeSet::new();
        let mut q = world.query::<&mut Label>();
        for &e in es.iter().skip(n as usize / 2 + round).step_by(61) {
            q.get_mut(&mut world, e).unwrap().0.push('!');
            label.insert(e);
        }
        let mut buff = BTreeSet::new();
        for &e in es.iter().step_by(3).skip(round).step_by(40) {
            world.get_mut::<Buff>(e).unwrap().0 = 0;
            buff.insert(e);
        }
        let report = world.restore(&saved).unwrap();
        assert_eq!(
            report.rows_restored,
            pos.len() + vel.len() + label.len() + buff.len(),
            "round {round}: exactly the written rows"
        );
        assert_eq!(dump(&mut world), before, "round {round}");
        let set = |q: &mut QueryState<Entity, Changed<Pos>>, w: &World| -> BTreeSet<Entity> {
            q.iter(w).collect()
        };
        assert_eq!(set(&mut changed_pos, &world), pos);
        assert_eq!(changed_vel.iter(&world).collect::<BTreeSet<_>>(), vel);
        assert_eq!(changed_label.iter(&world).collect::<BTreeSet<_>>(), label);
        assert_eq!(changed_buff.iter(&world).collect::<BTreeSet<_>>(), buff);
    }
}

/// Frames that moved rows (despawns, whose last rows fill the holes;
/// spawns; moves between tables), undone by restores that reorder the
/// rows: the rows written afterwards, wherever they went and came back
/// from, are still found and put back exactly.
#[test]
fn written_rows_come_back_after_frames_that_moved_rows() {
    let (mut world, es) = populated(100);
    let before = dump(&mut world);
    let saved = world.snapshot();
    world.get_mut::<Pos>(es[90]).unwrap().0 = -5;
    world.get_mut::<Vel>(es[99]).unwrap().1 = -9; // before it moves
    world.despawn(es[1]).unwrap();
    world.check_invariants();
    world.despawn(es[40]).unwrap();
    world.remove_one::<Label>(es[7]).unwrap();
    world.spawn(Pos(0, 0));
    world.get_mut::<Pos>(es[99]).unwrap().0 = -6; // moved to row 1
    world.restore(&saved).unwrap();
    assert_eq!(dump(&mut world), before);
    for (k, &e) in [es[99], es[98], es[1], es[7], es[40], es[2]]
        .iter()
        .enumerate()
    {
        world.get_mut::<Vel>(e).unwrap().0 = -(k as i32);
        world.get_mut::<Label>(e).unwrap().0.clear();
        let report = world.restore(&saved).unwrap();
        assert_eq!(report.rows_restored, 2);
        assert_eq!(dump(&mut world), before);
    }
    // And a frame that moves rows again, after those write-only frames.
    world.get_mut::<Pos>(es[50]).unwrap().1 = 1;
    world.despawn(es[0]).unwrap();
    world.get_mut::<Pos>(es[99]).unwrap().1 = 2; // moved to row 0
    world.restore(&saved).unwrap();
    assert_eq!(dump(&mut world), before);
    world.get_mut::<Pos>(es[0]).unwrap().1 = 3;
    assert_eq!(world.restore(&saved).unwrap().rows_restored, 1);
    assert_eq!(dump(&mut world), before);
}

#[test]
fn added_fires_only_for_components_the_restore_had_to_add() {
    let (mut world, es) = populated(6);
    let mut added = world.query_filtered::<Entity, Added<Vel>>();
    let mut added_buff = world.query_filtered::<Entity, Added<Buff>>();
    assert_eq!(added.iter(&world).count(), 6);
    added_buff.iter(&world).count();
    let saved = world.snapshot();
    world.remove_one::<Vel>(es[1]).unwrap();
    world.remove_one::<Buff>(es[3]).unwrap();
    world.get_mut::<Vel>(es[2]).unwrap().0 = 5; // a write, not an add
    assert_eq!(added.iter(&world).count(), 0);
    world.restore(&saved).unwrap();
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), [es[1]]);
    assert_eq!(added_buff.iter(&world).collect::<Vec<_>>(), [es[3]]);
    assert_eq!(world.get::<Vel>(es[2]), Ok(&Vel(1, 2)));
}

#[test]
fn removals_are_announced_as_removals() {
    let (mut world, es) = populated(4);
    let mut schedule = Schedule::new();
    #[derive(Default)]
    struct Gone(Vec<Entity>);
    #[derive(Default)]
    struct Unbuffed(Vec<Entity>);
    world.insert_resource(Gone::default());
    world.insert_resource(Unbuffed::default());
    schedule.add_system(
        "watch",
        |mut removed: RemovedComponents<Pos>, mut gone: ResMut<Gone>| {
            gone.0.extend(removed.read());
        },
    );
    schedule.add_system(
        "watch buffs",
        |mut removed: RemovedComponents<Buff>, mut gone: ResMut<Unbuffed>| {
            gone.0.extend(removed.read());
        },
    );
    schedule.run(&mut world);
    let saved = world.snapshot();
    let late = world.spawn(Pos(1, 1));
    world.insert_one(es[1], Buff(1)).unwrap();
    world.insert_one(es[1], Label("x".into())).unwrap();
    world.restore(&saved).unwrap();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Gone>().0, [late]);
    assert_eq!(world.resource::<Unbuffed>().0, [es[1]]);
    assert!(!world.has::<Buff>(es[1]));
    assert_eq!(world.get::<Label>(es[1]), Ok(&Label("e1".into())));
}

#[test]
fn relations_and_children_order_come_back() {
    let mut world = registered();
    let parent = world.spawn(Pos(0, 0));
    let kids: Vec<Entity> = (1..6).map(|i| world.spawn(Pos(i, 0))).collect();
    for &k in &kids {
        world.relate(k, parent, ChildOf(parent)).unwrap();
    }
    // A custom order, part of the state.
    world
        .sort_sources_by_key::<ChildOf, _>(parent, |e| std::cmp::Reverse(e.index()))
        .unwrap();
    let order = world.sources::<ChildOf>(parent).to_vec();
    let sum = world.checksum();
    let saved = world.snapshot();
    world.despawn(kids[1]).unwrap();
    world.unrelate::<ChildOf>(kids[3], parent).unwrap();
    let newcomer = world.spawn(Pos(9, 9));
    world.relate(newcomer, parent, ChildOf(parent)).unwrap();
    world.relate(kids[4], kids[0], ChildOf(kids[0])).unwrap(); // reparented
    assert_ne!(world.checksum(), sum);
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.relations_rebuilt, 1);
    assert_eq!(world.sources::<ChildOf>(parent), order);
    assert!(world.sources::<ChildOf>(kids[0]).is_empty());
    for &k in &kids {
        assert_eq!(world.targets::<ChildOf>(k), [parent]);
    }
    assert!(!world.contains(newcomer));
    assert_eq!(world.checksum(), sum);
}

#[test]
fn disabled_entities_come_back() {
    let (mut world, es) = populated(6);
    world.insert_one(es[1], Disabled).unwrap();
    let saved = world.snapshot();
    let sum = world.checksum();
    world.remove_one::<Disabled>(es[1]).unwrap();
    world.insert_one(es[2], Disabled).unwrap();
    assert_ne!(world.checksum(), sum);
    world.restore(&saved).unwrap();
    assert!(world.is_disabled(es[1]));
    assert!(!world.is_disabled(es[2]));
    let mut q = world.query::<&Pos>();
    assert_eq!(
        q.iter(&world).count(),
        5,
        "queries skip exactly the disabled one"
    );
    assert_eq!(world.checksum(), sum);
}

#[test]
fn unregistered_components_are_left_and_listed() {
    let (mut world, es) = populated(3);
    world.insert_one(es[0], Scratch(1)).unwrap();
    let saved = world.snapshot();
    world.get_mut::<Scratch>(es[0]).unwrap().0 = 2;
    world.get_mut::<Pos>(es[0]).unwrap().0 = 50;
    let report = world.restore(&saved).unwrap();
    assert_eq!(report.unregistered, ["Scratch"]);
    assert_eq!(
        world.get::<Scratch>(es[0]),
        Ok(&Scratch(2)),
        "not rolled back"
    );
    assert_eq!(world.get::<Pos>(es[0]), Ok(&Pos(0, 0)));
    // An unregistered component added since the snapshot moves the entity
    // to another table: its registered values still come back.
    world.insert_one(es[1], Scratch(3)).unwrap();
    world.get_mut::<Vel>(es[1]).unwrap().0 = 40;
    world.restore(&saved).unwrap();
    assert_eq!(world.get::<Vel>(es[1]), Ok(&Vel(1, 1)));
    assert_eq!(world.get::<Scratch>(es[1]), Ok(&Scratch(3)));
}

#[test]
fn a_snapshot_of_another_world_is_refused() {
    let (a, _) = populated(2);
    let (mut b, _) = populated(2);
    let saved = a.snapshot();
    let before = dump(&mut b);
    assert_eq!(b.restore(&saved), Err(RollbackError::WrongWorld));
    assert_eq!(dump(&mut b), before);
}

#[test]
fn resources_inserted_or_removed_since_come_back() {
    let (mut world, _) = populated(1);
    let saved = world.snapshot();
    world.remove_resource::<Score>();
    world.restore(&saved).unwrap();
    assert_eq!(world.resource::<Score>(), &Score(10));
    world.remove_resource::<Score>();
    let empty = world.snapshot();
    world.insert_resource(Score(4));
    world.restore(&empty).unwrap();
    assert!(!world.contains_resource::<Score>());
}

#[test]
fn ring_shares_unwritten_columns() {
    let (mut world, es) = populated(8);
    let mut ring = SnapshotRing::new(4);
    ring.save(0, &world);
    world.get_mut::<Pos>(es[0]).unwrap().0 = 1;
    ring.save(1, &world);
    let (a, b) = (ring.get(0).unwrap(), ring.get(1).unwrap());
    // Vel and Label (one table) and Buff (sparse) are shared; Pos is not.
    assert_eq!(b.shared_columns(a), 3);
    let d1 = dump(&mut world);
    world.get_mut::<Vel>(es[0]).unwrap().0 = 1;
    ring.save(2, &world);
    ring.rollback_to(1, &mut world).unwrap().unwrap();
    assert_eq!(dump(&mut world), d1);
    assert_eq!(ring.newest_frame(), Some(1));
}

/// A deterministic simulation step over the registered state.
fn step(world: &mut World, input: i32) {
    let mut q = world.query::<(&mut Pos, &Vel)>();
    for (p, v) in q.iter_mut(world) {
        p.0 += v.0 + input;
        p.1 += v.1;
    }
    if input % 3 == 0 {
        world.spawn((Pos(input, 0), Vel(input, 1)));
    }
    let doomed: Vec<Entity> = {
        let mut q = world.query::<(Entity, &Pos)>();
        q.iter(world)
            .filter(|(_, p)| p.0 > 40)
            .map(|(e, _)| e)
            .collect()
    };
    for e in doomed {
        world.despawn(e).unwrap();
    }
    world.resource_mut::<Score>().0 += input as u64;
}

/// `World::snapshot_into` (which keeps the columns nobody wrote and copies
/// the others into the old snapshot's buffers) saves what
/// `World::snapshot` saves: restoring either gives the same values, row
/// order, checksum and next id; and a clone of the old snapshot, which
/// shares its buffers, is not overwritten.
#[test]
fn a_reused_snapshot_restores_like_a_fresh_one() {
    let (mut world, es) = populated(12);
    let mut reused = world.snapshot();
    let kept = reused.clone();
    let kept_state = (dump(&mut world), world.checksum());
    for input in 0..12 {
        step(&mut world, input);
        if input % 4 == 1 {
            // A sparse change (the entity may be gone: then nothing).
            let _ = world.insert_one(es[input as usize], Buff(input as u8));
        }
        if input % 3 == 2 {
            // A table with as many rows as before, not the same ones.
            let mut q = world.query_filtered::<Entity, With<Label>>();
            let gone = q.iter(&world).next().unwrap();
            world.despawn(gone).unwrap();
            world.spawn((Pos(input, 1), Vel(0, 1), Label(format!("n{input}"))));
        }
        world.snapshot_into(&mut reused);
        let fresh = world.snapshot();
        let state = (dump(&mut world), world.checksum());
        step(&mut world, 4);
        step(&mut world, 3);
        world.restore(&reused).unwrap();
        assert_eq!(
            (dump(&mut world), world.checksum()),
            state,
            "reused, {input}"
        );
        let next = world.spawn(());
        step(&mut world, 3);
        world.restore(&fresh).unwrap();
        assert_eq!(
            (dump(&mut world), world.checksum()),
            state,
            "fresh, {input}"
        );
        assert_eq!(world.spawn(()), next);
        world.restore(&fresh).unwrap();
    }
    world.restore(&kept).unwrap();
    assert_eq!((dump(&mut world), world.checksum()), kept_state);
}

/// A ring takes each frame's snapshot into the buffers of the one it drops
/// (the oldest once full, or those a rollback dropped): after wrapping
/// around, and after re-simulating from a rollback, every frame held
/// restores the state it saved.
#[test]
fn a_ring_reuses_dropped_snapshots_after_wrapping() {
    for capacity in [1, 3] {
        let (mut world, _) = populated(10);
        let mut ring = SnapshotRing::new(capacity);
        let mut states = Vec::new();
        for frame in 0..10u64 {
            ring.save(frame, &world);
            states.push((dump(&mut world), world.checksum()));
            step(&mut world, frame as i32 % 5);
        }
        let oldest = 10 - capacity as u64;
        assert_eq!(ring.oldest_frame(), Some(oldest));
        for frame in (oldest..10).rev() {
            ring.rollback_to(frame, &mut world).unwrap().unwrap();
            assert_eq!(
                (dump(&mut world), world.checksum()),
                states[frame as usize],
                "capacity {capacity}, frame {frame}"
            );
        }
        // Re-simulate from the oldest frame, saving into the dropped ones'
        // buffers, past the frames saved the first time.
        for frame in oldest + 1..14 {
            step(&mut world, (frame - 1) as i32 % 5);
            ring.save(frame, &world);
            let state = (dump(&mut world), world.checksum());
            match states.get(frame as usize) {
                Some(first) => assert_eq!(&state, first, "capacity {capacity}, frame {frame}"),
                None => states.push(state),
            }
        }
        step(&mut world, 2);
        for frame in (14 - capacity as u64..14).rev() {
            ring.rollback_to(frame, &mut world).unwrap().unwrap();
            assert_eq!(
                (dump(&mut world), world.checksum()),
                states[frame as usize],
                "capacity {capacity}, again, frame {frame}"
            );
        }
    }
}

#[test]
fn resimulating_after_a_restore_reproduces_the_same_states() {
    let (mut world, _) = populated(10);
    let inputs: Vec<i32> = (0..30).map(|i| (i * 7) % 5).collect();
    let mut sums = Vec::new();
    let mut saved = Vec::new();
    for &i in &inputs {
        saved.push(world.snapshot());
        step(&mut world, i);
        sums.push(world.checksum());
    }
    for back in [1, 5, 8, 29] {
        let from = inputs.len() - back;
        world.restore(&saved[from]).unwrap();
        // A wrong prediction first, then the real inputs.
        step(&mut world, 4);
        world.restore(&saved[from]).unwrap();
        for f in from..inputs.len() {
            step(&mut world, inputs[f]);
            assert_eq!(
                world.checksum(),
                sums[f],
                "frame {f} after going back {back}"
            );
        }
    }
}

#[test]
fn checksum_equal_by_different_paths() {
    // Spawn order, batch vs one by one, insert later vs at spawn.
    let mut a = registered();
    let ea: Vec<Entity> = (0..5).map(|i| a.spawn((Pos(i, 0), Vel(0, i)))).collect();
    a.insert_one(ea[2], Buff(3)).unwrap();
    let mut b = registered();
    let eb = b.spawn_batch((0..5).map(|i| Pos(i, 0)));
    for (i, &e) in eb.iter().enumerate().rev() {
        b.insert(e, Vel(0, i as i32)).unwrap();
    }
    b.insert_one(eb[2], Buff(3)).unwrap();
    assert_eq!(ea, eb);
    assert_eq!(a.checksum(), b.checksum());
    // Registration order does not matter either.
    let mut c = World::new();
    c.register_rollback_relation::<ChildOf>();
    c.register_rollback_resource::<Score>();
    c.register_rollback::<Buff>();
    c.register_rollback::<Label>();
    c.register_rollback::<Vel>();
    c.register_rollback::<Pos>();
    for i in 0..5 {
        let e = c.spawn(Vel(0, i));
        c.insert(e, Pos(i, 0)).unwrap();
    }
    c.insert_one(ea[2], Buff(3)).unwrap();
    assert_eq!(a.checksum(), c.checksum());
    b.get_mut::<Vel>(eb[4]).unwrap().1 += 1;
    assert_ne!(a.checksum(), b.checksum());
}

#[test]
fn checksum_equal_under_both_executors() {
    let run = |kind: ExecutorKind| {
        let (mut world, _) = populated(50);
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("move", |mut q: Query<(&mut Pos, &Vel)>| {
            for (p, v) in q.iter_mut() {
                p.0 += v.0;
            }
        });
        schedule.add_system("buff", |mut q: Query<&mut Buff>| {
            for b in q.iter_mut() {
                b.0 = b.0.wrapping_mul(3);
            }
        });
        schedule.add_system("score", |mut s: ResMut<Score>| s.0 += 1);
        for _ in 0..5 {
            schedule.run(&mut world);
        }
        world.checksum()
    };
    assert_eq!(
        run(ExecutorKind::SingleThreaded),
        run(ExecutorKind::Parallel)
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 64 },
        // Miri runs with isolation: no regression files.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    /// Equal states built in any spawn order hash equal; changing any one
    /// registered value changes the hash.
    #[test]
    fn checksum_follows_the_state(
        values in proptest::collection::vec((any::<i32>(), any::<i32>(), any::<bool>()), 1..12),
        pick in any::<prop::sample::Index>(),
        delta in 1i32..,
    ) {
        let build = |reverse: bool| {
            let mut world = registered();
            let es: Vec<Entity> = values.iter().map(|_| world.spawn(())).collect();
            let mut order: Vec<usize> = (0..values.len()).collect();
            if reverse {
                order.reverse();
            }
            for i in order {
                let (x, y, buff) = values[i];
                world.insert(es[i], Pos(x, y)).unwrap();
                if buff {
                    world.insert_one(es[i], Buff(x as u8)).unwrap();
                }
            }
            (world, es)
        };
        let (a, es) = build(false);
        let (mut b, _) = build(true);
        prop_assert_eq!(a.checksum(), b.checksum());
        let e = es[pick.index(es.len())];
        let p = b.get_mut::<Pos>(e).unwrap();
        p.1 = p.1.wrapping_add(delta);
        prop_assert_ne!(a.checksum(), b.checksum());
    }
}

/// A sparse component whose set did not exist at the snapshot, created and
/// emptied since: the restore finds the set as empty as it was saved.
#[test]
fn a_sparse_set_created_and_emptied_since_the_snapshot() {
    let mut world = registered();
    let e = world.spawn(Pos(1, 2));
    let saved = world.snapshot();
    world.insert_one(e, Buff(3)).unwrap();
    world.remove_one::<Buff>(e).unwrap();
    world.restore(&saved).unwrap();
    assert_eq!(
        dump(&mut world),
        vec![(e, Some(Pos(1, 2)), None, None, None)]
    );
}

/// `snapshot_into` a snapshot of another world (whose registrations differ)
/// just overwrites it: it becomes a snapshot of this world.
#[test]
fn snapshot_into_a_snapshot_of_another_world() {
    let mut other = World::new();
    other.register_rollback::<Buff>();
    other.register_rollback::<Vel>();
    other.register_rollback::<Pos>();
    other.spawn((Pos(5, 5), Vel(5, 5), Buff(5)));
    other.spawn(Vel(6, 6));
    let mut saved = other.snapshot();
    let (mut world, es) = populated(4);
    world.remove_one::<Buff>(es[0]).unwrap();
    let state = (dump(&mut world), world.checksum());
    world.snapshot_into(&mut saved);
    step(&mut world, 3);
    world.insert_one(es[0], Buff(1)).unwrap();
    world.restore(&saved).unwrap();
    assert_eq!((dump(&mut world), world.checksum()), state);
    assert!(matches!(
        other.restore(&saved),
        Err(RollbackError::WrongWorld)
    ));
}

/// Restore puts back written rows block by block (blocks of 8 rows): a
/// block written whole joins a run copied at once, a block written in part
/// has its written rows put back one by one, and the last block of a
/// column may be short. Every shape, and runs broken by clean blocks, come
/// back exactly, with `rows_restored` and `Changed` naming exactly the
/// written rows.
#[test]
fn written_rows_come_back_in_every_block_shape() {
    // 61 rows: seven whole blocks and a short one of 5.
    let (mut world, es) = populated(61);
    let before = dump(&mut world);
    let saved = world.snapshot();
    let patterns: Vec<Vec<usize>> = vec![
        (0..61).collect(),                        // everything: one run
        (0..8).chain(16..24).collect(),           // two whole blocks, a clean one between
        (56..61).collect(),                       // the short last block, whole
        vec![0, 7, 8, 60],                        // block edges, in part
        (8..16).chain([17, 23]).collect(),        // a whole block, then one in part
        (1..8).chain(8..16).collect(),            // a block missing its first row, then a whole one
        (0..61).filter(|i| i % 9 != 4).collect(), // almost everything
    ];
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    for (k, rows) in patterns.iter().enumerate() {
        for &r in rows {
            world.get_mut::<Pos>(es[r]).unwrap().1 = 1000 + k as i32;
        }
        // The writes are seen before the restore: the rows the restore
        // puts back must be reported again (putting a value back is a
        // write).
        assert_eq!(changed.iter(&world).count(), rows.len(), "pattern {k}");
        let report = world.restore(&saved).unwrap();
        assert_eq!(report.rows_restored, rows.len(), "pattern {k}");
        assert_eq!(dump(&mut world), before, "pattern {k}");
        let seen: BTreeSet<Entity> = changed.iter(&world).collect();
        let want: BTreeSet<Entity> = rows.iter().map(|&r| es[r]).collect();
        assert_eq!(seen, want, "pattern {k}");
    }
}

/// Registered, `Clone` but not `Copy`, and without drop glue: restored
/// like a `Copy` type (whole spans over mostly written groups of blocks).
#[derive(Component, Clone, Debug, PartialEq, Eq, Hash)]
struct Hp(u32);

/// A restore takes a group of 64 blocks (512 rows) in which at least half
/// the blocks were written as one span (one copy of the values, one pass
/// over the ticks) for types without drop glue (`Pos`, `Copy`; `Hp`, only
/// `Clone`), and block by block otherwise (`Label`, a `String`, and
/// groups with few written blocks). Frames mixing dense, sparse and clean
/// groups, spans that start or end in a partly written block, and runs
/// that cross groups come back exactly, with `rows_restored` and `Changed`
/// naming exactly the written rows of each type.
#[test]
fn dense_sparse_and_clean_groups_come_back_exactly() {
    // Three groups (the last short) outside Miri, two under it.
    let n = if cfg!(miri) { 600 } else { 1400 };
    let mut world = World::new();
    world.register_rollback::<Pos>();
    world.register_rollback::<Label>();
    world.register_rollback::<Hp>();
    let es: Vec<Entity> =
        world.spawn_batch((0..n).map(|i| (Pos(i as i32, 0), Label(format!("e{i}")), Hp(i))));
    let dump = |world: &mut World| -> Vec<(Entity, Pos, Label, Hp)> {
        world.check_invariants();
        let mut q = world.query::<(Entity, &Pos, &Label, &Hp)>();
        q.iter(world)
            .map(|(e, p, l, h)| (e, *p, l.clone(), h.clone()))
            .collect()
    };
    let mut changed_pos = world.query_filtered::<Entity, Changed<Pos>>();
    let mut changed_label = world.query_filtered::<Entity, Changed<Label>>();
    let mut changed_hp = world.query_filtered::<Entity, Changed<Hp>>();
    changed_pos.iter(&world).count();
    changed_label.iter(&world).count();
    changed_hp.iter(&world).count();
    let before = dump(&mut world);
    let saved = world.snapshot();
    let n = n as usize;
    let patterns: Vec<(&str, Vec<usize>)> = vec![
        ("everything", (0..n).collect()),
        (
            // Group 0: three blocks in four written, in part (the first
            // block clean, the span's first and last blocks partly
            // written); group 1: a few rows; the rest clean.
            "dense, sparse, clean",
            (8..512)
                .filter(|r| (r / 8) % 4 != 3 && r % 3 != 1)
                .chain([520, 700, 1000].into_iter().filter(|&r| r < n))
                .collect(),
        ),
        (
            // Whole blocks to the end of group 0, then a dense group 1 from
            // its first block: one run across the groups.
            "a run across groups",
            (448..512)
                .chain((512..n.min(1024)).filter(|r| r % 5 != 0))
                .collect(),
        ),
        (
            // Exactly half the blocks of group 0 (every other one, whole),
            // and the last block of the column in part.
            "half the blocks",
            (0..512)
                .filter(|r| (r / 8) % 2 == 0)
                .chain([n - 1, n - 3])
                .collect(),
        ),
        (
            // One block in two, minus one: block by block.
            "under half",
            (0..512).filter(|r| (r / 8) % 2 == 0 && *r >= 8).collect(),
        ),
    ];
    for (name, rows) in &patterns {
        for &r in rows {
            world.get_mut::<Pos>(es[r]).unwrap().1 = -1;
            world.get_mut::<Label>(es[r]).unwrap().0.push('!');
            world.get_mut::<Hp>(es[r]).unwrap().0 += 1000;
        }
        // The writes are seen before the restore: the rows it puts back
        // must be reported again.
        assert_eq!(changed_pos.iter(&world).count(), rows.len(), "{name}");
        assert_eq!(changed_label.iter(&world).count(), rows.len(), "{name}");
        assert_eq!(changed_hp.iter(&world).count(), rows.len(), "{name}");
        let report = world.restore(&saved).unwrap();
        assert_eq!(report.rows_restored, 3 * rows.len(), "{name}");
        assert_eq!(dump(&mut world), before, "{name}");
        let want: BTreeSet<Entity> = rows.iter().map(|&r| es[r]).collect();
        assert_eq!(
            changed_pos.iter(&world).collect::<BTreeSet<_>>(),
            want,
            "{name}"
        );
        assert_eq!(
            changed_label.iter(&world).collect::<BTreeSet<_>>(),
            want,
            "{name}"
        );
        assert_eq!(
            changed_hp.iter(&world).collect::<BTreeSet<_>>(),
            want,
            "{name}"
        );
        // Nothing written since: nothing to put back, nothing reported.
        assert_eq!(world.restore(&saved).unwrap().rows_restored, 0, "{name}");
        assert_eq!(changed_pos.iter(&world).count(), 0, "{name}");
    }
}

/// A ring shares the allocator state (slots, free list) and the tables'
/// entity lists of the frame before when no entity was spawned, despawned
/// or moved in between, and saves them anew when one was: every frame
/// comes back with its own allocator (the checksum covers it).
#[test]
fn a_ring_shares_the_allocator_only_between_unmoved_frames() {
    let (mut world, es) = populated(20);
    let mut ring = SnapshotRing::new(8);
    let mut states = Vec::new();
    // What each frame does: writes only (the next snapshot shares), or a
    // spawn, despawn or move (it does not).
    let frames = 7;
    let simulate = |world: &mut World, frame: usize| match frame {
        0 => world.get_mut::<Pos>(es[0]).unwrap().0 += 1,
        1 => drop(world.spawn((Pos(1, 1), Vel(0, 0)))),
        2 => world.get_mut::<Vel>(es[1]).unwrap().0 += 1,
        3 => world.despawn(es[2]).unwrap(),
        4 => {}
        5 => drop(world.remove_one::<Label>(es[3]).unwrap()),
        _ => world.get_mut::<Pos>(es[4]).unwrap().1 += 1,
    };
    for frame in 0..frames {
        ring.save(frame as u64, &world);
        states.push((dump(&mut world), world.checksum()));
        simulate(&mut world, frame);
    }
    for frame in (0..frames).rev() {
        ring.rollback_to(frame as u64, &mut world).unwrap().unwrap();
        let (rows, sum) = &states[frame];
        assert_eq!(&dump(&mut world), rows, "frame {frame}");
        // The checksum covers the allocator: slots, generations, free list.
        assert_eq!(world.checksum(), *sum, "frame {frame}");
    }
}

/// A restore after a frame that wrote a few scattered rows puts back each
/// of them however it sits in its block of 8 rows (the first row, the
/// last, a few, all but one, the whole block; in the column's short last
/// block too), for a `Copy` type and a `String`, in groups of 64 blocks
/// written sparsely and densely: the values, `rows_restored`, `Changed`
/// (exactly the written rows) and the block bounds (`check_invariants`)
/// come out exact, frame after frame.
#[test]
fn scattered_rows_come_back_wherever_they_sit_in_their_block() {
    // 70 whole blocks and a short one of 5: more than a group of 64 (20
    // blocks under Miri, where it is slow).
    let n = if cfg!(miri) { 8 * 20 + 5 } else { 8 * 70 + 5 };
    let mut world = World::new();
    world.register_rollback::<Pos>();
    world.register_rollback::<Label>();
    let es: Vec<Entity> =
        world.spawn_batch((0..n as i32).map(|i| (Pos(i, 0), Label(format!("e{i}")))));
    let dump = |world: &mut World| -> Vec<(Entity, Pos, Label)> {
        world.check_invariants();
        let mut q = world.query::<(Entity, &Pos, &Label)>();
        q.iter(world).map(|(e, p, l)| (e, *p, l.clone())).collect()
    };
    let mut changed_pos = world.query_filtered::<Entity, Changed<Pos>>();
    let mut changed_label = world.query_filtered::<Entity, Changed<Label>>();
    changed_pos.iter(&world).count();
    changed_label.iter(&world).count();
    let before = dump(&mut world);
    let saved = world.snapshot();
    // Pseudo-random rows, about one in `every`.
    let mut seed = 0x2545_f491_u32;
    let mut random = |every: u32| -> Vec<usize> {
        (0..n)
            .filter(|_| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (seed >> 8) % every == 0
            })
            .collect()
    };
    let mut patterns: Vec<(String, Vec<usize>)> = vec![
        (
            "the first row of every third block".into(),
            (0..n).step_by(24).collect(),
        ),
        (
            "the last row of every third block".into(),
            (7..n).step_by(24).collect(),
        ),
        (
            "the first row of every block".into(),
            (0..n).step_by(8).collect(),
        ),
        (
            "the last row of every block and of the column".into(),
            (7..n).step_by(8).chain([n - 1]).collect(),
        ),
        ("one row of the short last block".into(), vec![n - 3]),
        ("the column's last row".into(), vec![n - 1]),
        ("the short last block whole".into(), (n - 5..n).collect()),
        (
            "all but one row of the short last block".into(),
            (n - 5..n - 1).collect(),
        ),
        (
            // Block 1 whole, block 2 all but its first row, block 3 its
            // first and last rows, block 5 whole: runs broken by blocks
            // written in part and by a clean block.
            "whole and partial blocks side by side".into(),
            (8..16)
                .chain(17..24)
                .chain([24, 31])
                .chain(40..48)
                .collect(),
        ),
        (
            "one row in a block, the next block whole".into(),
            [3].into_iter().chain(8..16).collect(),
        ),
    ];
    for k in 0..if cfg!(miri) { 4 } else { 8 } {
        patterns.push((format!("random rows {k}"), random([50, 100, 9, 3][k % 4])));
    }
    for (name, rows) in &patterns {
        for &r in rows {
            world.get_mut::<Pos>(es[r]).unwrap().1 = -1;
            world.get_mut::<Label>(es[r]).unwrap().0.push('!');
        }
        assert_eq!(changed_pos.iter(&world).count(), rows.len(), "{name}");
        let report = world.restore(&saved).unwrap();
        assert_eq!(report.rows_restored, 2 * rows.len(), "{name}");
        assert_eq!(dump(&mut world), before, "{name}");
        let want: BTreeSet<Entity> = rows.iter().map(|&r| es[r]).collect();
        assert_eq!(
            changed_pos.iter(&world).collect::<BTreeSet<_>>(),
            want,
            "{name}"
        );
        assert_eq!(
            changed_label.iter(&world).collect::<BTreeSet<_>>(),
            want,
            "{name}"
        );
        // Nothing written since: nothing to put back.
        assert_eq!(world.restore(&saved).unwrap().rows_restored, 0, "{name}");
        assert_eq!(changed_pos.iter(&world).count(), 0, "{name}");
    }
}

/// Snapshots through `&World` while another thread reserves ids for a
/// command buffer's spawns, and this one reserves empty entities: each
/// snapshot sees a reservation whole or not at all, so each restores
/// (after the buffer was applied) to a consistent world, whose saved
/// entities are back as they were.
#[test]
fn snapshots_taken_while_another_thread_reserves_restore_consistently() {
    let (mut world, es) = populated(12);
    for &e in es.iter().skip(1).step_by(2) {
        world.despawn(e).unwrap();
    }
    let mut buffer = CommandBuffer::new(&world);
    let spawns = if cfg!(miri) { 20 } else { 400 };
    let (snapshots, reserved) = std::thread::scope(|s| {
        let spawner = s.spawn(|| {
            for i in 0..spawns {
                buffer.spawn(Pos(i, i));
            }
        });
        let mut snapshots = Vec::new();
        let mut reserved = Vec::new();
        while (!spawner.is_finished() || snapshots.len() < 4) && snapshots.len() < 50 {
            reserved.push(world.reserve_entity());
            snapshots.push(world.snapshot());
        }
        spawner.join().unwrap();
        (snapshots, reserved)
    });
    buffer.apply(&mut world).unwrap();
    for saved in snapshots.iter().rev() {
        world.restore(saved).unwrap();
        world.check_invariants();
        assert_eq!(world.len(), saved.entity_count());
        for &e in es.iter().step_by(2) {
            assert_eq!(
                world.get::<Pos>(e).unwrap().0,
                es.iter().position(|&x| x == e).unwrap() as i32
            );
        }
    }
    // The first snapshot saw the first reserved entity (live, empty).
    assert!(world.contains(reserved[0]));
    assert!(reserved[1..].iter().all(|&e| !world.contains(e)));
}
