//! Integration tests for change detection: what `Added<T>` and `Changed<T>`
//! report, measured against the previous run (`iter`/`iter_mut`, not `get`)
//! of the same `QueryState`; which operations count as an addition or a
//! change (spawn, insert, replacing insert, `&mut T` through a query,
//! `World::get_mut`) and which do not (reads, moves between archetypes);
//! independent states; and the wrapping rule of the 32-bit change tick
//! (`World::advance_change_tick` across `u32::MAX`, values unchanged for
//! billions of ticks).
//!
//! Every check is generic over the storage of the components involved and
//! runs for table and sparse components and for mixes of both (see
//! `storage_combos!`).

use mosaic::prelude::*;

// ----- test components ---------------------------------------------------------

#[macro_use]
mod common;
use common::{SA, SB, SC, TA, TB, TC, Val};

/// A table marker: inserting or removing it always moves the entity to
/// another archetype, whatever the storage of the watched component.
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Mover;

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// The entities a `Changed<A>` state reports in one run, sorted.
fn changed<A: Val>(state: &mut QueryState<Entity, Changed<A>>, world: &World) -> Vec<Entity> {
    sorted(state.iter(world).collect())
}

/// The entities an `Added<A>` state reports in one run, sorted.
fn added<A: Val>(state: &mut QueryState<Entity, Added<A>>, world: &World) -> Vec<Entity> {
    sorted(state.iter(world).collect())
}

fn none() -> Vec<Entity> {
    Vec::new()
}

#[test]
fn test_components_have_the_intended_storage() {
    assert_eq!(<TA as Component>::STORAGE, StorageType::Table);
    assert_eq!(<TB as Component>::STORAGE, StorageType::Table);
    assert_eq!(<TC as Component>::STORAGE, StorageType::Table);
    assert_eq!(<SA as Component>::STORAGE, StorageType::SparseSet);
    assert_eq!(<SB as Component>::STORAGE, StorageType::SparseSet);
    assert_eq!(<SC as Component>::STORAGE, StorageType::SparseSet);
    assert_eq!(<Mover as Component>::STORAGE, StorageType::Table);
}

// ----- first run, later runs -----------------------------------------------------

fn check_first_run_sees_everything<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let e3 = world.spawn(B::new(3));
    world.get_mut::<B>(e3).unwrap().set(4);
    let e4 = world.spawn((C::new(4), A::new(4), Mover));

    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world), sorted(vec![e1, e2, e4]));
    assert_eq!(added(&mut a, &world), none(), "second run: nothing new");

    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world), sorted(vec![e1, e2, e4]));
    assert_eq!(changed(&mut c, &world), none(), "second run: nothing new");

    // Through iter_mut and with data, too.
    let mut am = world.query_filtered::<(Entity, &mut A), Added<A>>();
    let got = sorted(am.iter_mut(&mut world).map(|(e, a)| (e, a.v())).collect());
    assert_eq!(got, sorted(vec![(e1, 1), (e2, 2), (e4, 4)]));
    assert_eq!(am.iter_mut(&mut world).count(), 0);

    // A state built for a component nobody has yet.
    let mut c_of_c = world.query_filtered::<Entity, Changed<C>>();
    assert_eq!(c_of_c.iter(&world).collect::<Vec<_>>(), [e4]);
    assert_eq!(c_of_c.iter(&world).count(), 0);
}

fn check_first_run_after_other_states_ran<A: Val, B: Val, C: Val>() {
    // "The first run of a state sees every T as added/changed" must not
    // depend on what other states did between this state's build and its
    // first run.
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let mut c1 = world.query_filtered::<Entity, Changed<A>>();
    let mut c2 = world.query_filtered::<Entity, Changed<A>>();
    let mut a2 = world.query_filtered::<Entity, Added<A>>();
    let mut other = world.query::<&C>();
    assert_eq!(changed(&mut c1, &world), sorted(vec![e1, e2]));
    let _ = other.iter(&world).count();
    assert_eq!(
        changed(&mut c2, &world),
        sorted(vec![e1, e2]),
        "first run of a state built before another state ran"
    );
    assert_eq!(
        added(&mut a2, &world),
        sorted(vec![e1, e2]),
        "first run of a state built before other states ran"
    );
}

fn check_first_run_after_time_passed<A: Val, B: Val, C: Val>() {
    // A state built, then the clock moves on before its first run.
    let mut world = World::new();
    let e1 = world.spawn((A::new(1), B::new(1)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    let mut a = world.query_filtered::<Entity, Added<A>>();
    world.advance_change_tick(10);
    let e2 = world.spawn((A::new(2), C::new(2)));
    assert_eq!(changed(&mut c, &world), sorted(vec![e1, e2]));
    assert_eq!(added(&mut a, &world), sorted(vec![e1, e2]));
}

// ----- what counts as a run ---------------------------------------------------------

fn check_iter_and_iter_mut_are_runs<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let e3 = world.spawn((A::new(3), C::new(3)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(c.iter(&world).count(), 3);

    world.get_mut::<A>(e1).unwrap();
    assert_eq!(c.iter(&world).collect::<Vec<_>>(), [e1]);
    assert_eq!(c.iter(&world).count(), 0);

    world.get_mut::<A>(e2).unwrap();
    assert_eq!(c.iter_mut(&mut world).collect::<Vec<_>>(), [e2]);
    assert_eq!(c.iter_mut(&mut world).count(), 0);

    // A run that stops early still is a run: what it skipped is not
    // reported again.
    world.get_mut::<A>(e1).unwrap();
    world.get_mut::<A>(e3).unwrap();
    assert_eq!(c.iter(&world).take(1).count(), 1);
    assert_eq!(c.iter(&world).count(), 0);
}

fn check_get_is_not_a_run<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let e3 = world.spawn(C::new(3));
    // (Each state runs right after it is built.)
    let mut c = world.query_filtered::<&A, Changed<A>>();
    assert_eq!(c.iter(&world).count(), 2);
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(a.iter(&world).count(), 2);

    world.get_mut::<A>(e1).unwrap().set(10);
    assert_eq!(c.get(&world, e1).unwrap().v(), 10);
    assert!(matches!(
        c.get(&world, e2),
        Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == e2
    ));
    assert!(matches!(
        c.get(&world, e3),
        Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == e3
    ));
    // get did not consume the change: still there for get and for iter.
    assert_eq!(c.get(&world, e1).unwrap().v(), 10);
    assert_eq!(c.iter(&world).map(A::v).collect::<Vec<_>>(), [10]);
    assert!(matches!(
        c.get(&world, e1),
        Err(QueryEntityError::QueryDoesNotMatch { .. })
    ));

    // Same for Added and for get_mut.
    world.insert_one(e3, A::new(3)).unwrap();
    assert_eq!(a.get(&world, e3).unwrap(), e3);
    assert!(a.get(&world, e1).is_err());
    let mut am = world.query_filtered::<(Entity, &mut A), Added<A>>();
    assert_eq!(am.iter_mut(&mut world).count(), 3);
    world.insert_one(e2, C::new(2)).unwrap();
    world.remove_one::<A>(e2).unwrap();
    world.insert_one(e2, A::new(20)).unwrap();
    assert_eq!(am.get_mut(&mut world, e2).unwrap().1.v(), 20);
    assert_eq!(am.get_mut(&mut world, e2).unwrap().1.v(), 20);
    assert_eq!(
        am.iter_mut(&mut world).map(|(e, _)| e).collect::<Vec<_>>(),
        [e2]
    );
    assert!(am.get_mut(&mut world, e2).is_err());
    assert_eq!(sorted(a.iter(&world).collect()), sorted(vec![e2, e3]));
}

// ----- what counts as a change -------------------------------------------------------

fn check_mut_access_through_query_is_a_change<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let e3 = world.spawn((A::new(3), B::new(3), C::new(3)));
    let e4 = world.spawn((A::new(4), C::new(4)));
    // Built before any Changed<A> filter exists.
    let mut touch_b = world.query_filtered::<&mut A, With<B>>();
    let mut touch_opt = world.query::<(&C, Option<&mut A>)>();
    let mut read = world.query::<&A>();

    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world), sorted(vec![e1, e2, e3, e4]));
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world), sorted(vec![e1, e2, e3, e4]));

    // Reading is not a change.
    assert_eq!(read.iter(&world).count(), 4);
    assert_eq!(read.iter_mut(&mut world).count(), 4);
    assert_eq!(changed(&mut c, &world), none());

    // Mutable access without a write is a change, for the visited only.
    assert_eq!(touch_b.iter_mut(&mut world).count(), 2);
    assert_eq!(changed(&mut c, &world), sorted(vec![e2, e3]));
    assert_eq!(added(&mut a, &world), none(), "a change is not an addition");

    // With a write, through for_each.
    touch_b.iter_mut(&mut world).for_each(|a| a.set(a.v() + 1));
    assert_eq!(changed(&mut c, &world), sorted(vec![e2, e3]));

    // Option<&mut A> marks the entities that have A.
    assert_eq!(touch_opt.iter_mut(&mut world).count(), 2);
    assert_eq!(changed(&mut c, &world), sorted(vec![e3, e4]));

    // A query's get_mut is mutable access too.
    touch_b.get_mut(&mut world, e2).unwrap();
    assert_eq!(changed(&mut c, &world), vec![e2]);
    assert_eq!(changed(&mut c, &world), none());
}

fn check_world_get_mut_is_a_change<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let e3 = world.spawn((A::new(3), C::new(3)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world).len(), 3);
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world).len(), 3);

    world.get_mut::<A>(e2).unwrap(); // no write
    assert_eq!(changed(&mut c, &world), vec![e2]);
    world.get_mut::<A>(e1).unwrap().set(11);
    world.get_mut::<A>(e3).unwrap().set(33);
    assert_eq!(changed(&mut c, &world), sorted(vec![e1, e3]));
    assert_eq!(added(&mut a, &world), none());
    // world.get is a read.
    assert_eq!(world.get::<A>(e1).unwrap().v(), 11);
    assert_eq!(changed(&mut c, &world), none());
    // Changing another component does not change A.
    world.get_mut::<B>(e2).unwrap().set(22);
    assert_eq!(changed(&mut c, &world), none());
}

fn check_replacing_insert_is_changed_not_added<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn(A::new(2));
    let e3 = world.spawn(B::new(3));
    let e4 = world.spawn((A::new(4), B::new(4)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world).len(), 3);
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world).len(), 3);
    let mut cb = world.query_filtered::<Entity, Changed<B>>();
    assert_eq!(cb.iter(&world).count(), 2);

    // Replace only (same archetype).
    world.insert_one(e1, A::new(10)).unwrap();
    assert_eq!(changed(&mut c, &world), vec![e1]);
    assert_eq!(added(&mut a, &world), none());
    assert_eq!(world.get::<A>(e1).unwrap().v(), 10);

    // Replace A while adding C (an archetype move when C is a table
    // component) and while adding the Mover (always a move).
    world.insert(e2, (A::new(20), C::new(2))).unwrap();
    world.insert(e4, (Mover, A::new(40))).unwrap();
    assert_eq!(changed(&mut c, &world), sorted(vec![e2, e4]));
    assert_eq!(added(&mut a, &world), none());
    assert_eq!(cb.iter(&world).count(), 0, "B was moved, not changed");

    // A fresh insert is an addition, and an addition is a change.
    world.insert_one(e3, A::new(3)).unwrap();
    assert_eq!(changed(&mut c, &world), vec![e3]);
    assert_eq!(added(&mut a, &world), vec![e3]);
    assert_eq!(cb.iter(&world).count(), 0);
}

fn check_addition_counts_as_change<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e0 = world.spawn(B::new(0));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world), none());
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world), none());
    let mut both = world.query_filtered::<Entity, (Added<A>, Changed<A>)>();
    assert_eq!(both.iter(&world).count(), 0);

    let e1 = world.spawn(A::new(1));
    let batch = world.spawn_batch((0..3).map(|i| (A::new(i), C::new(i))));
    world.insert_one(e0, A::new(0)).unwrap();
    let mut expected = vec![e0, e1];
    expected.extend(&batch);
    let expected = sorted(expected);
    assert_eq!(changed(&mut c, &world), expected);
    assert_eq!(added(&mut a, &world), expected);
    assert_eq!(sorted(both.iter(&world).collect()), expected);

    // Removed and added again: a new addition.
    world.remove_one::<A>(e1).unwrap();
    assert_eq!(changed(&mut c, &world), none());
    world.insert_one(e1, A::new(1)).unwrap();
    assert_eq!(changed(&mut c, &world), vec![e1]);
    assert_eq!(added(&mut a, &world), vec![e1]);

    // Despawned entities are not reported; a new entity in the same slot is.
    world.get_mut::<A>(e1).unwrap();
    world.despawn(e1).unwrap();
    assert_eq!(changed(&mut c, &world), none());
    let e5 = world.spawn(A::new(5));
    assert_eq!(e5.index(), e1.index());
    assert_eq!(changed(&mut c, &world), vec![e5]);
    assert_eq!(added(&mut a, &world), vec![e5]);
}

// ----- moves between archetypes keep ticks -----------------------------------------

fn check_moves_keep_ticks<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..6).map(|i| world.spawn(A::new(i))).collect();
    let with_b = world.spawn((A::new(6), B::new(6)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world).len(), 7);
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world).len(), 7);

    // Moves alone: nothing added, nothing changed (also not the entities
    // whose rows were shuffled by the moves).
    world.insert_one(es[0], Mover).unwrap();
    world.insert_one(es[1], B::new(1)).unwrap();
    world.insert_one(es[2], C::new(2)).unwrap();
    world.remove_one::<B>(with_b).unwrap();
    assert_eq!(changed(&mut c, &world), none());
    assert_eq!(added(&mut a, &world), none());

    // A change made before a move is still reported after it, once.
    world.get_mut::<A>(es[3]).unwrap().set(30);
    world.get_mut::<A>(es[1]).unwrap().set(10);
    world.insert_one(es[3], Mover).unwrap();
    world.insert_one(es[3], B::new(3)).unwrap();
    world.remove_one::<B>(es[1]).unwrap();
    world.insert_one(es[1], Mover).unwrap();
    world.remove_one::<Mover>(es[0]).unwrap();
    assert_eq!(changed(&mut c, &world), sorted(vec![es[1], es[3]]));
    assert_eq!(added(&mut a, &world), none());
    assert_eq!(world.get::<A>(es[3]).unwrap().v(), 30);

    // An addition made before a move is still an addition after it.
    let late = world.spawn(A::new(100));
    world.insert_one(es[4], A::new(40)).unwrap(); // replace
    world.insert_one(late, Mover).unwrap();
    world.insert_one(es[4], Mover).unwrap();
    world.insert_one(late, C::new(0)).unwrap();
    assert_eq!(added(&mut a, &world), vec![late]);
    assert_eq!(changed(&mut c, &world), sorted(vec![es[4], late]));

    // Moves back and forth after the last run: still nothing.
    for &e in &es {
        if world.has::<Mover>(e) {
            world.remove_one::<Mover>(e).unwrap();
        } else {
            world.insert_one(e, Mover).unwrap();
        }
    }
    world.despawn(es[5]).unwrap();
    assert_eq!(changed(&mut c, &world), none());
    assert_eq!(added(&mut a, &world), none());
    world.check_invariants();
}

// ----- independent states -------------------------------------------------------------

fn check_states_are_independent<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let e3 = world.spawn((A::new(3), C::new(3)));
    // Each state is run right after it is built.
    let mut c1 = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c1, &world).len(), 3);
    let mut c2 = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c2, &world).len(), 3);
    let mut a1 = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a1, &world).len(), 3);
    let mut a2 = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a2, &world).len(), 3);

    world.get_mut::<A>(e1).unwrap();
    assert_eq!(changed(&mut c1, &world), vec![e1]);
    world.get_mut::<A>(e2).unwrap();
    let e4 = world.spawn(A::new(4));
    assert_eq!(changed(&mut c1, &world), sorted(vec![e2, e4]));
    assert_eq!(added(&mut a1, &world), vec![e4]);
    assert_eq!(changed(&mut c2, &world), sorted(vec![e1, e2, e4]));
    assert_eq!(changed(&mut c1, &world), none());
    assert_eq!(changed(&mut c2, &world), none());

    world.get_mut::<A>(e3).unwrap();
    let e5 = world.spawn(A::new(5));
    assert_eq!(changed(&mut c2, &world), sorted(vec![e3, e5]));
    assert_eq!(changed(&mut c1, &world), sorted(vec![e3, e5]));
    assert_eq!(added(&mut a2, &world), sorted(vec![e4, e5]));
    assert_eq!(added(&mut a1, &world), vec![e5]);
    for state in [&mut c1, &mut c2] {
        assert_eq!(changed(state, &world), none());
    }
    for state in [&mut a1, &mut a2] {
        assert_eq!(added(state, &world), none());
    }
}

fn check_own_writes<A: Val, B: Val, C: Val>() {
    // A state that writes A sees other writers' changes, not its own.
    let mut world = World::new();
    let e1 = world.spawn((A::new(1), B::new(1)));
    let e2 = world.spawn(A::new(2));
    let mut writer = world.query_filtered::<(Entity, &mut A), Changed<A>>();
    let first: Vec<_> = writer
        .iter_mut(&mut world)
        .map(|(e, a)| {
            a.set(a.v() + 1);
            e
        })
        .collect();
    assert_eq!(sorted(first), sorted(vec![e1, e2]));
    let mut watcher = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut watcher, &world).len(), 2);

    for _ in 0..3 {
        assert_eq!(
            writer.iter_mut(&mut world).map(|(_, a)| a.set(0)).count(),
            0,
            "its own writes are not new to it"
        );
    }
    world.get_mut::<A>(e2).unwrap();
    let mut other_writer = world.query_filtered::<&mut A, With<B>>();
    other_writer.iter_mut(&mut world).for_each(|a| a.set(7));
    let got = sorted(
        writer
            .iter_mut(&mut world)
            .map(|(e, a)| {
                a.set(a.v() + 1);
                e
            })
            .collect(),
    );
    assert_eq!(got, sorted(vec![e1, e2]));
    // The watcher sees both writers' changes, once.
    assert_eq!(changed(&mut watcher, &world), sorted(vec![e1, e2]));
    assert_eq!(changed(&mut watcher, &world), none());
    let _ = C::new(0);
}

fn check_filter_combinations<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn((A::new(1), B::new(1)));
    let e2 = world.spawn(A::new(2));
    let e3 = world.spawn(B::new(3));
    let mut either = world.query_filtered::<Entity, Or<(Added<A>, Changed<B>)>>();
    assert_eq!(
        sorted(either.iter(&world).collect()),
        sorted(vec![e1, e2, e3])
    );
    let mut all = world.query_filtered::<Entity, (Changed<A>, Changed<B>)>();
    assert_eq!(all.iter(&world).collect::<Vec<_>>(), [e1]);
    let mut changed_a_without_c = world.query_filtered::<Entity, (Changed<A>, Without<C>)>();
    assert_eq!(changed_a_without_c.iter(&world).count(), 2);

    world.get_mut::<B>(e3).unwrap();
    world.get_mut::<A>(e1).unwrap();
    world.insert_one(e2, C::new(2)).unwrap();
    world.get_mut::<A>(e2).unwrap();
    assert_eq!(either.iter(&world).collect::<Vec<_>>(), [e3]);
    assert_eq!(all.iter(&world).count(), 0, "e1's B did not change");
    assert_eq!(changed_a_without_c.iter(&world).collect::<Vec<_>>(), [e1]);

    world.get_mut::<B>(e1).unwrap();
    world.get_mut::<A>(e1).unwrap();
    world.insert_one(e3, A::new(3)).unwrap();
    assert_eq!(sorted(either.iter(&world).collect()), sorted(vec![e1, e3]));
    assert_eq!(all.iter(&world).collect::<Vec<_>>(), [e1]);
    assert_eq!(
        sorted(changed_a_without_c.iter(&world).collect()),
        sorted(vec![e1, e3])
    );
}

// ----- tick wrapping --------------------------------------------------------------------

fn check_changes_across_the_wrap<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn(A::new(2));
    let e3 = world.spawn((A::new(3), B::new(3)));
    let e4 = world.spawn(A::new(4));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world), sorted(vec![e1, e2, e3, e4]));
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world), sorted(vec![e1, e2, e3, e4]));
    let mut writer = world.query_filtered::<&mut A, With<B>>();

    // Close to the wrap; nothing happened meanwhile.
    world.advance_change_tick(u32::MAX - 10);
    assert!(world.change_tick().get() > u32::MAX - 20);
    assert_eq!(changed(&mut c, &world), none());
    assert_eq!(added(&mut a, &world), none());

    // Changes just before the wrap.
    world.get_mut::<A>(e1).unwrap().set(10);
    let e5 = world.spawn(A::new(5));
    assert_eq!(changed(&mut c, &world), sorted(vec![e1, e5]));
    assert_eq!(added(&mut a, &world), vec![e5]);

    // Changes before the wrap, seen only after it.
    world.get_mut::<A>(e2).unwrap();
    world.insert_one(e4, A::new(40)).unwrap();
    let e6 = world.spawn((A::new(6), C::new(6)));
    let before = world.change_tick().get();
    world.advance_change_tick(100);
    let after = world.change_tick().get();
    assert!(after < before, "the tick wrapped ({before} -> {after})");
    assert!(after < 200);

    // Changes after the wrap, and moves that are no changes.
    world.insert_one(e3, C::new(3)).unwrap();
    world.insert_one(e1, Mover).unwrap();
    let e7 = world.spawn(A::new(7));
    assert_eq!(changed(&mut c, &world), sorted(vec![e2, e4, e6, e7]));
    assert_eq!(added(&mut a, &world), sorted(vec![e6, e7]));
    assert_eq!(changed(&mut c, &world), none());
    assert_eq!(added(&mut a, &world), none());

    assert_eq!(writer.iter_mut(&mut world).count(), 1);
    world.get_mut::<A>(e7).unwrap();
    assert_eq!(changed(&mut c, &world), sorted(vec![e3, e7]));
    assert_eq!(changed(&mut c, &world), none());
}

fn check_tick_by_tick_across_the_wrap<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world).len(), 2);
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world).len(), 2);
    let start = world.change_tick().get();
    // Land 15 ticks before the wrap, then walk across it a few ticks per step.
    world.advance_change_tick(u32::MAX - 15 - start + 1);
    assert_eq!(world.change_tick().get(), u32::MAX - 15 + 1);
    let mut crossed = false;
    for step in 0..20u32 {
        let t = world.change_tick().get();
        let even = step % 2 == 0;
        let target = if even { e1 } else { e2 };
        world.get_mut::<A>(target).unwrap();
        let extra = world.spawn((A::new(step), C::new(step)));
        assert_eq!(
            changed(&mut c, &world),
            sorted(vec![target, extra]),
            "step {step}, tick {t}"
        );
        assert_eq!(added(&mut a, &world), vec![extra], "step {step}, tick {t}");
        world.despawn(extra).unwrap();
        crossed |= world.change_tick().get() < t;
    }
    assert!(crossed, "the loop crossed u32::MAX");
    assert_eq!(changed(&mut c, &world), none());
}

fn check_long_unchanged_is_not_new<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let old = world.spawn(A::new(1));
    let old_b = world.spawn((A::new(2), B::new(2)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world).len(), 2);
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world).len(), 2);
    let mut cm = world.query_filtered::<(Entity, &A), Changed<A>>();
    assert_eq!(cm.iter_mut(&mut world).count(), 2);

    // About 3.5 billion ticks in steps: longer than Tick::MAX_AGE, shorter
    // than a full turn of the counter.
    for _ in 0..7 {
        world.advance_change_tick(500_000_000);
    }
    assert_eq!(changed(&mut c, &world), none(), "unchanged for 3.5e9 ticks");
    assert_eq!(added(&mut a, &world), none());
    assert_eq!(cm.iter_mut(&mut world).count(), 0);

    // A change in the middle of a long wait is reported, the rest is not.
    for _ in 0..4 {
        world.advance_change_tick(500_000_000);
    }
    world.get_mut::<A>(old_b).unwrap();
    for _ in 0..3 {
        world.advance_change_tick(500_000_000);
    }
    assert_eq!(changed(&mut c, &world), vec![old_b]);
    assert_eq!(added(&mut a, &world), none());
    assert_eq!(
        cm.iter_mut(&mut world).map(|(e, _)| e).collect::<Vec<_>>(),
        [old_b]
    );

    // One big step (the world steps internally).
    world.advance_change_tick(3_500_000_000);
    assert_eq!(changed(&mut c, &world), none());
    assert_eq!(added(&mut a, &world), none());
    assert_eq!(cm.iter_mut(&mut world).count(), 0);

    // And normal service afterwards.
    world.get_mut::<A>(old).unwrap();
    assert_eq!(changed(&mut c, &world), vec![old]);
    let _ = C::new(0);
}

fn check_state_idle_for_a_full_turn<A: Val, B: Val, C: Val>() {
    // "A query state left unused for more than 2^32 ticks may report stale
    // results once": once, and only once.
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world).len(), 2);
    world.advance_change_tick(u32::MAX);
    world.advance_change_tick(1_000_000);
    let _ = changed(&mut c, &world);
    assert_eq!(changed(&mut c, &world), none());
    world.get_mut::<A>(e2).unwrap();
    assert_eq!(changed(&mut c, &world), vec![e2]);
    let _ = (e1, C::new(0));
}

fn check_new_state_after_a_long_time<A: Val, B: Val, C: Val>() {
    // A state built long after the values were written still sees all of
    // them as added and changed on its first run.
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    world.advance_change_tick(3_500_000_000);
    let e3 = world.spawn((A::new(3), C::new(3)));
    let mut c = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed(&mut c, &world), sorted(vec![e1, e2, e3]));
    let mut a = world.query_filtered::<Entity, Added<A>>();
    assert_eq!(added(&mut a, &world), sorted(vec![e1, e2, e3]));
    assert_eq!(changed(&mut c, &world), none());
    assert_eq!(added(&mut a, &world), none());
}

storage_combos! {
    first_run => check_first_run_sees_everything;
    first_run_after_other_states_ran => check_first_run_after_other_states_ran;
    first_run_after_time_passed => check_first_run_after_time_passed;
    iter_and_iter_mut_are_runs => check_iter_and_iter_mut_are_runs;
    get_is_not_a_run => check_get_is_not_a_run;
    mut_access_is_a_change => check_mut_access_through_query_is_a_change;
    world_get_mut_is_a_change => check_world_get_mut_is_a_change;
    replacing_insert => check_replacing_insert_is_changed_not_added;
    addition_is_a_change => check_addition_counts_as_change;
    moves_keep_ticks => check_moves_keep_ticks;
    independent_states => check_states_are_independent;
    own_writes => check_own_writes;
    filter_combinations => check_filter_combinations;
    across_the_wrap => check_changes_across_the_wrap;
    tick_by_tick_across_the_wrap => check_tick_by_tick_across_the_wrap;
    long_unchanged_is_not_new => check_long_unchanged_is_not_new;
    idle_for_a_full_turn => check_state_idle_for_a_full_turn;
    new_state_after_a_long_time => check_new_state_after_a_long_time;
}

#[test]
fn change_tracking_switches_on_when_a_changed_filter_is_built() {
    let mut world = World::new();
    let e = world.spawn((TA(1), SA(1)));
    let ta = world.component_id::<TA>().unwrap();
    let sa = world.component_id::<SA>().unwrap();
    assert!(!world.component_info(ta).unwrap().tracks_changes());
    // Writes before anyone watches.
    let mut w = world.query::<(&mut TA, &mut SA)>();
    w.iter_mut(&mut world).for_each(|(a, s)| {
        a.0 += 1;
        s.0 += 1;
    });
    let mut c = world.query_filtered::<Entity, Or<(Changed<TA>, Changed<SA>)>>();
    assert!(world.component_info(ta).unwrap().tracks_changes());
    assert!(world.component_info(sa).unwrap().tracks_changes());
    assert_eq!(c.iter(&world).collect::<Vec<_>>(), [e]);
    assert_eq!(c.iter(&world).count(), 0);
    // The state built before tracking was on records now.
    w.iter_mut(&mut world).for_each(|_| {});
    assert_eq!(c.iter(&world).collect::<Vec<_>>(), [e]);
}

/// Found by the `world_ops` fuzz target (corpus file
/// `crash-advance-change-tick-wrap`): ticks taken by query runs since the
/// last clamp plus a full advance step let an old value's age wrap to "new".
#[test]
fn advance_change_tick_never_makes_old_values_new() {
    #[derive(Component)]
    struct Tab;
    let mut world = World::new();
    let mut added = world.query_filtered::<Entity, Added<Tab>>();
    let e = world.spawn(Tab);
    world.advance_change_tick((1 << 31) - 1);
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), [e]); // first run: all
    world.advance_change_tick((1 << 31) - 1);
    for _ in 0..3 {
        assert_eq!(added.iter(&world).count(), 0);
    }
    world.advance_change_tick((1 << 31) - 1);
    assert_eq!(
        added.iter(&world).collect::<Vec<_>>(),
        [],
        "a value added ~6.4 billion ticks ago is reported as added since the last run"
    );
}

#[test]
fn a_skipped_entity_is_not_marked_changed() {
    // `&mut A` next to a sparse component the entity lacks: the query
    // skips the entity, so its `A` must not be stamped as changed. Table
    // sweep (`TA` with sparse `SB`) and dense walk (`SA` with `SB`).
    let mut world = World::new();
    let both = world.spawn((TA(1), SA(1), SB(1)));
    let lacks = world.spawn((TA(2), SA(2)));
    // More `SB` elsewhere, so neither query walks `SB`'s set (which would
    // never reach `lacks`).
    world.spawn_batch((0..3).map(SB));
    let mut changed_ta = world.query_filtered::<Entity, Changed<TA>>();
    let mut changed_sa = world.query_filtered::<Entity, Changed<SA>>();
    assert_eq!(changed_ta.iter(&world).count(), 2);
    assert_eq!(changed_sa.iter(&world).count(), 2);

    let mut table = world.query::<(&mut TA, &SB)>();
    assert_eq!(table.iter_mut(&mut world).count(), 1);
    assert_eq!(changed_ta.iter(&world).collect::<Vec<_>>(), [both]);

    // Two writers, the second one sparse: every element is asked first.
    let mut two = world.query::<(&mut TA, &mut SB)>();
    assert_eq!(two.iter_mut(&mut world).count(), 1);
    assert_eq!(changed_ta.iter(&world).collect::<Vec<_>>(), [both]);

    let mut dense = world.query::<(Entity, &mut SA, &SB)>();
    assert_eq!(dense.iter_mut(&mut world).count(), 1);
    assert_eq!(changed_sa.iter(&world).collect::<Vec<_>>(), [both]);
    // The same with the optional form, which yields `lacks` too and
    // stamps both.
    let mut optional = world.query::<(&mut SA, Option<&SB>)>();
    assert_eq!(optional.iter_mut(&mut world).count(), 2);
    assert_eq!(changed_sa.iter(&world).count(), 2);
    let _ = lacks;
}

/// A `Without<table marker>` walk skips no row of the tables it matches, so
/// it stamps change ticks per run, not per row (issue #40): a `for` loop
/// that stops early still marks only the rows it saw, a full walk marks
/// every row it yields, and the excluded table is never marked. A sparse
/// marker is still decided per entity.
#[test]
fn archetypal_filter_walks_stamp_exactly_the_rows_they_yield() {
    #[derive(Component)]
    struct Frozen;
    #[derive(Component)]
    #[component(storage = "sparse")]
    struct SparseFrozen;
    let mut world = World::new();
    let free: Vec<Entity> = (0..4).map(|i| world.spawn(TA(i))).collect();
    let frozen = world.spawn((TA(10), Frozen));
    let sparse_frozen = world.spawn((TA(20), SparseFrozen));
    let mut watch = world.query_filtered::<Entity, Changed<TA>>();
    assert_eq!(watch.iter(&world).count(), 6, "first run sees the spawns");
    assert_eq!(changed(&mut watch, &world), none());

    let mut walk = world.query_filtered::<&mut TA, Without<Frozen>>();
    if let Some(a) = walk.iter_mut(&mut world).next() {
        a.0 += 1;
    }
    assert_eq!(changed(&mut watch, &world), vec![free[0]]);

    for a in walk.iter_mut(&mut world) {
        a.0 += 1;
    }
    let mut want = free.clone();
    want.push(sparse_frozen);
    assert_eq!(changed(&mut watch, &world), sorted(want));
    assert_eq!(world.get::<TA>(frozen).unwrap().0, 10);

    let mut sparse_walk = world.query_filtered::<&mut TA, Without<SparseFrozen>>();
    let seen = sparse_walk.iter_mut(&mut world).count();
    assert_eq!(seen, 5, "the sparse marker's entity is left out");
    assert_eq!(
        changed(&mut watch, &world),
        sorted(vec![free[0], free[1], free[2], free[3], frozen])
    );
}

// ----- room for ticks after tracking starts ------------------------------------

/// A table that grew before its column began tracking changes (the first
/// `Changed` query) has tick arrays made for the rows there are, no more:
/// the spawns after it (one row each, and past the room every column had)
/// and the spawns after a sort (which rebuilds the ticks and the entity
/// list) each get their ticks, and a watcher sees exactly them.
#[test]
fn spawns_after_tracking_starts_and_after_a_sort_get_their_ticks() {
    let mut world = World::new();
    // Five rows: the columns have room for eight.
    for i in 0..5 {
        world.spawn((TA(i), TB(i)));
    }
    let mut watch = world.query_filtered::<Entity, Changed<TA>>();
    assert_eq!(watch.iter(&world).count(), 5, "first run sees the spawns");

    let later: Vec<Entity> = (0..20).map(|i| world.spawn((TA(i), TB(i)))).collect();
    world.check_invariants();
    assert_eq!(changed(&mut watch, &world), sorted(later));

    world.sort_by_key::<TA, _>(|a| std::cmp::Reverse(a.0));
    let after_sort: Vec<Entity> = (0..3).map(|i| world.spawn((TA(i), TB(i)))).collect();
    world.check_invariants();
    assert_eq!(changed(&mut watch, &world), sorted(after_sort));
    assert_eq!(world.query::<&TA>().iter(&world).count(), 28);
}
