//! Integration tests for queries: the cached `QueryState` built by
//! `World::query` / `World::query_filtered` and run with `iter`, `iter_mut`,
//! `get` and `get_mut`; every kind of query data (`Entity`, `&T`, `&mut T`,
//! `Option<&T>`, `Option<&mut T>`, `Has<T>`, nested tuples) and of filter
//! (`With`, `Without`, `Or`, `Added`, `Changed`, tuples), each on table and
//! sparse-set components and on mixes of both; archetype caching as the
//! world grows; entities moving between archetypes between two runs; the
//! aliasing check; the `next` path against the `for_each`/`fold` path;
//! `size_hint`; and deterministic iteration order.
//!
//! Most checks are generic over three component types `A`, `B`, `C` and run
//! four times (see `storage_combos!`): all table, all sparse, and the two
//! mixes (`A` table with `B`/`C` sparse, and the reverse).

use std::collections::HashMap;

use mosaic::QueryFilter;
use mosaic::prelude::*;

// ----- test components ---------------------------------------------------------

#[macro_use]
mod common;
use common::{SA, SB, SC, TA, TB, TC, Val};

/// Table markers used to force entities into new archetypes whatever the
/// storage of `A`, `B`, `C`.
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct M1;
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct M2;

/// Components for the aliasing tests (their names appear in the panics).
#[derive(Component, Debug)]
struct A(u32);
#[derive(Component, Debug)]
#[component(storage = "sparse")]
struct SparseA(u32);

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn assert_no_duplicates(entities: &[Entity]) {
    let mut unique = entities.to_vec();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        entities.len(),
        "an entity was visited twice: {entities:?}"
    );
}

#[track_caller]
fn assert_no_match<T>(result: Result<T, QueryEntityError>, expected: Entity) {
    match result {
        Err(QueryEntityError::QueryDoesNotMatch { entity, query }) => {
            assert_eq!(entity, expected);
            assert!(!query.is_empty(), "the error names the query");
        }
        Err(other) => panic!("expected QueryDoesNotMatch for {expected:?}, got {other:?}"),
        Ok(_) => panic!("expected QueryDoesNotMatch for {expected:?}, got an item"),
    }
}

#[track_caller]
fn assert_no_such_entity<T>(result: Result<T, QueryEntityError>, expected: Entity) {
    match result {
        Err(err) => assert_eq!(err, QueryEntityError::NoSuchEntity(expected)),
        Ok(_) => panic!("expected NoSuchEntity for {expected:?}, got an item"),
    }
}

#[test]
fn test_components_have_the_intended_storage() {
    assert_eq!(<TA as Component>::STORAGE, StorageType::Table);
    assert_eq!(<TB as Component>::STORAGE, StorageType::Table);
    assert_eq!(<TC as Component>::STORAGE, StorageType::Table);
    assert_eq!(<SA as Component>::STORAGE, StorageType::SparseSet);
    assert_eq!(<SB as Component>::STORAGE, StorageType::SparseSet);
    assert_eq!(<SC as Component>::STORAGE, StorageType::SparseSet);
    assert_eq!(<A as Component>::STORAGE, StorageType::Table);
    assert_eq!(<SparseA as Component>::STORAGE, StorageType::SparseSet);
}

// ----- Entity -------------------------------------------------------------------

#[test]
fn entity_item_yields_every_live_entity_in_archetype_then_row_order() {
    let mut world = World::new();
    let e0 = world.spawn(());
    let e1 = world.spawn(TA(1));
    let e2 = world.spawn(SA(2)); // sparse only: stays in the empty archetype
    let e3 = world.spawn((TA(3), SB(3)));
    let gone = world.spawn(TB(9));
    world.despawn(gone).unwrap();
    let mut q = world.query::<Entity>();
    // Archetypes in creation order (empty, {TA}, {TB}), rows in order.
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [e0, e2, e1, e3]);
    assert_eq!(q.iter(&world).count(), world.len());
}

// ----- &T -------------------------------------------------------------------------

fn check_ref<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(20)));
    let e3 = world.spawn(B::new(30));
    let e4 = world.spawn((C::new(40), A::new(4)));
    world.spawn(());

    let mut q = world.query::<(Entity, &A)>();
    let got = sorted(q.iter(&world).map(|(e, a)| (e, a.v())).collect());
    assert_eq!(got, sorted(vec![(e1, 1), (e2, 2), (e4, 4)]));

    let mut only_a = world.query::<&A>();
    assert_eq!(sorted(only_a.iter(&world).map(A::v).collect()), [1, 2, 4]);

    let mut ab = world.query::<(Entity, &A, &B)>();
    let got: Vec<_> = ab.iter(&world).map(|(e, a, b)| (e, a.v(), b.v())).collect();
    assert_eq!(got, [(e2, 2, 20)]);

    let mut ba = world.query::<(&B, &A)>();
    let got: Vec<_> = ba.iter(&world).map(|(b, a)| (b.v(), a.v())).collect();
    assert_eq!(got, [(20, 2)]);

    let mut cba = world.query::<(&C, &B)>();
    assert_eq!(cba.iter(&world).count(), 0, "no entity has both B and C");

    // Reading the same component twice is allowed and yields the same value.
    let mut twice = world.query::<(&A, &A)>();
    let got = sorted(
        twice
            .iter(&world)
            .map(|(x, y)| {
                assert!(std::ptr::eq(x, y));
                x.v()
            })
            .collect(),
    );
    assert_eq!(got, [1, 2, 4]);
    let _ = e3;
}

// ----- &mut T ---------------------------------------------------------------------

fn check_mut<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(20)));
    let e3 = world.spawn(B::new(30));
    let e4 = world.spawn((A::new(4), C::new(40)));

    let mut q = world.query::<&mut A>();
    for a in q.iter_mut(&mut world) {
        a.set(a.v() * 10);
    }
    assert_eq!(world.get::<A>(e1).unwrap().v(), 10);
    assert_eq!(world.get::<A>(e2).unwrap().v(), 20);
    assert_eq!(world.get::<A>(e4).unwrap().v(), 40);
    assert_eq!(world.get::<B>(e3).unwrap().v(), 30);

    // Mixed: write one component, read another.
    let mut add = world.query::<(&mut A, &B)>();
    let mut visited = 0;
    for (a, b) in add.iter_mut(&mut world) {
        a.set(a.v() + b.v());
        visited += 1;
    }
    assert_eq!(visited, 1);
    assert_eq!(world.get::<A>(e1).unwrap().v(), 10);
    assert_eq!(world.get::<A>(e2).unwrap().v(), 40);
    assert_eq!(world.get::<B>(e2).unwrap().v(), 20);

    // Mixed the other way round, with Entity.
    let mut add_back = world.query::<(Entity, &mut B, &A)>();
    let got: Vec<_> = add_back
        .iter_mut(&mut world)
        .map(|(e, b, a)| {
            b.set(b.v() + a.v());
            e
        })
        .collect();
    assert_eq!(got, [e2]);
    assert_eq!(world.get::<B>(e2).unwrap().v(), 60);

    // Two different components, both written.
    let mut swap = world.query::<(&mut A, &mut C)>();
    for (a, c) in swap.iter_mut(&mut world) {
        let t = a.v();
        a.set(c.v());
        c.set(t);
    }
    assert_eq!(world.get::<A>(e4).unwrap().v(), 40);
    assert_eq!(world.get::<C>(e4).unwrap().v(), 40);
    world.get_mut::<C>(e4).unwrap().set(7);
    for (a, c) in swap.iter_mut(&mut world) {
        let t = a.v();
        a.set(c.v());
        c.set(t);
    }
    assert_eq!(world.get::<A>(e4).unwrap().v(), 7);
    assert_eq!(world.get::<C>(e4).unwrap().v(), 40);

    // A read-only query may also run through iter_mut.
    let mut read = world.query::<&A>();
    assert_eq!(read.iter_mut(&mut world).count(), 3);
}

// ----- Option<&T> / Option<&mut T> --------------------------------------------------

fn check_option<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn((A::new(1), B::new(10)));
    let e2 = world.spawn(B::new(20));
    let e3 = world.spawn(A::new(3));
    let e4 = world.spawn((B::new(40), C::new(4)));

    let mut q = world.query::<(Entity, &B, Option<&A>)>();
    let got = sorted(
        q.iter(&world)
            .map(|(e, b, a)| (e, b.v(), a.map(A::v)))
            .collect(),
    );
    assert_eq!(
        got,
        sorted(vec![(e1, 10, Some(1)), (e2, 20, None), (e4, 40, None)])
    );

    // Option alone matches every entity.
    let mut all = world.query::<(Entity, Option<&A>)>();
    let got = sorted(all.iter(&world).map(|(e, a)| (e, a.map(A::v))).collect());
    assert_eq!(
        got,
        sorted(vec![(e1, Some(1)), (e2, None), (e3, Some(3)), (e4, None)])
    );

    // Option of a tuple is Some only when the whole tuple is there.
    let mut pair = world.query::<(Entity, Option<(&B, &C)>)>();
    let got = sorted(
        pair.iter(&world)
            .map(|(e, bc)| (e, bc.map(|(b, c)| (b.v(), c.v()))))
            .collect(),
    );
    assert_eq!(
        got,
        sorted(vec![
            (e1, None),
            (e2, None),
            (e3, None),
            (e4, Some((40, 4)))
        ])
    );

    // Option<&mut T>: writes where present, None elsewhere.
    let mut qm = world.query::<(&B, Option<&mut A>)>();
    let (mut some, mut none) = (0, 0);
    for (b, a) in qm.iter_mut(&mut world) {
        match a {
            Some(a) => {
                a.set(a.v() + b.v());
                some += 1;
            }
            None => none += 1,
        }
    }
    assert_eq!((some, none), (1, 2));
    assert_eq!(world.get::<A>(e1).unwrap().v(), 11);
    assert_eq!(
        world.get::<A>(e3).unwrap().v(),
        3,
        "e3 has no B: not visited"
    );

    // Option<&mut T> next to a read of another component, every entity.
    let mut qm2 = world.query::<(Entity, Option<&mut A>, Option<&C>)>();
    let mut seen = Vec::new();
    for (e, a, c) in qm2.iter_mut(&mut world) {
        seen.push(e);
        if let (Some(a), None) = (a, c) {
            a.set(a.v() * 2);
        }
    }
    assert_eq!(sorted(seen), sorted(vec![e1, e2, e3, e4]));
    assert_eq!(world.get::<A>(e1).unwrap().v(), 22);
    assert_eq!(world.get::<A>(e3).unwrap().v(), 6);
}

// ----- Has<T> ------------------------------------------------------------------------

fn check_has<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn((A::new(2), B::new(2)));
    let e3 = world.spawn(B::new(3));
    let e4 = world.spawn(());

    let mut q = world.query::<(Entity, Has<A>, Has<B>)>();
    let got = sorted(q.iter(&world).collect());
    assert_eq!(
        got,
        sorted(vec![
            (e1, true, false),
            (e2, true, true),
            (e3, false, true),
            (e4, false, false),
        ])
    );

    // Has<A> borrows nothing, so it sits next to &mut A.
    let mut with_mut = world.query::<(&mut A, Has<A>, Has<C>)>();
    let mut n = 0;
    for (a, has_a, has_c) in with_mut.iter_mut(&mut world) {
        assert!(has_a);
        assert!(!has_c);
        a.set(a.v() + 100);
        n += 1;
    }
    assert_eq!(n, 2);
    assert_eq!(world.get::<A>(e2).unwrap().v(), 102);

    // The same state follows structural changes.
    world.remove_one::<A>(e2).unwrap();
    world.insert_one(e3, A::new(3)).unwrap();
    world.insert_one(e4, C::new(4)).unwrap();
    let mut q2 = world.query::<(Entity, Has<A>, Has<C>)>();
    let got = sorted(q.iter(&world).collect());
    assert_eq!(
        got,
        sorted(vec![
            (e1, true, false),
            (e2, false, true),
            (e3, true, true),
            (e4, false, false),
        ])
    );
    let got = sorted(q2.iter(&world).collect());
    assert_eq!(
        got,
        sorted(vec![
            (e1, true, false),
            (e2, false, false),
            (e3, true, false),
            (e4, false, true),
        ])
    );
}

// ----- tuples, nested ---------------------------------------------------------------

fn check_nested_tuples<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn((A::new(1), B::new(10), C::new(100)));
    let e2 = world.spawn((A::new(2), B::new(20)));
    let e3 = world.spawn(A::new(3));
    let e4 = world.spawn(C::new(4));

    let mut q = world.query::<(Entity, (&A, (Option<&B>, Has<C>)))>();
    let got = sorted(
        q.iter(&world)
            .map(|(e, (a, (b, c)))| (e, a.v(), b.map(B::v), c))
            .collect(),
    );
    assert_eq!(
        got,
        sorted(vec![
            (e1, 1, Some(10), true),
            (e2, 2, Some(20), false),
            (e3, 3, None, false),
        ])
    );

    // Deep nesting of a single element.
    let mut deep = world.query::<((((&C,),),), Entity)>();
    let got = sorted(
        deep.iter(&world)
            .map(|((((c,),),), e)| (e, c.v()))
            .collect(),
    );
    assert_eq!(got, sorted(vec![(e1, 100), (e4, 4)]));

    // Nested tuples with writes in different branches.
    let mut qm = world.query::<((&mut A, Option<&B>), (Entity, (Option<&mut C>,)))>();
    for ((a, b), (_e, (c,))) in qm.iter_mut(&mut world) {
        a.set(a.v() + b.map_or(0, B::v));
        if let Some(c) = c {
            c.set(c.v() + 1);
        }
    }
    assert_eq!(world.get::<A>(e1).unwrap().v(), 11);
    assert_eq!(world.get::<A>(e2).unwrap().v(), 22);
    assert_eq!(world.get::<A>(e3).unwrap().v(), 3);
    assert_eq!(world.get::<C>(e1).unwrap().v(), 101);
    assert_eq!(
        world.get::<C>(e4).unwrap().v(),
        4,
        "e4 has no A: not visited"
    );

    // The empty tuple matches every entity.
    let mut unit = world.query::<()>();
    assert_eq!(unit.iter(&world).count(), 4);
}

// ----- get / get_mut ----------------------------------------------------------------

fn check_get<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn((A::new(1), B::new(10)));
    let e2 = world.spawn(A::new(2));
    let e3 = world.spawn(B::new(3));
    let e4 = world.spawn(());
    let dead = world.spawn((A::new(9), B::new(9)));
    world.despawn(dead).unwrap();

    let mut q = world.query::<(&A, &B)>();
    let (a, b) = q.get(&world, e1).unwrap();
    assert_eq!((a.v(), b.v()), (1, 10));
    assert_no_match(q.get(&world, e2), e2);
    assert_no_match(q.get(&world, e3), e3);
    assert_no_match(q.get(&world, e4), e4);
    assert_no_such_entity(q.get(&world, dead), dead);

    // A single-component read.
    let mut qa = world.query::<&A>();
    assert_eq!(qa.get(&world, e2).unwrap().v(), 2);
    assert_no_match(qa.get(&world, e3), e3);
    assert_no_such_entity(qa.get(&world, dead), dead);

    // get_mut writes through, with the same errors.
    let mut qm = world.query::<(&mut A, &B)>();
    {
        let (a, b) = qm.get_mut(&mut world, e1).unwrap();
        a.set(a.v() + b.v());
    }
    assert_eq!(world.get::<A>(e1).unwrap().v(), 11);
    assert_no_match(qm.get_mut(&mut world, e2), e2);
    assert_no_match(qm.get_mut(&mut world, e3), e3);
    assert_no_such_entity(qm.get_mut(&mut world, dead), dead);

    let mut qb = world.query::<&mut B>();
    qb.get_mut(&mut world, e3).unwrap().set(33);
    assert_eq!(world.get::<B>(e3).unwrap().v(), 33);
    assert_no_match(qb.get_mut(&mut world, e2), e2);

    // Optional data and Has never fail on a live entity.
    let mut opt = world.query::<(Option<&A>, Has<B>)>();
    let (a, has_b) = opt.get(&world, e4).unwrap();
    assert!(a.is_none() && !has_b);
    assert_no_such_entity(opt.get(&world, dead), dead);

    // Filters are applied by get too.
    let mut without_b = world.query_filtered::<&A, Without<B>>();
    assert_eq!(without_b.get(&world, e2).unwrap().v(), 2);
    assert_no_match(without_b.get(&world, e1), e1);
    let mut with_b = world.query_filtered::<Entity, With<B>>();
    assert_eq!(with_b.get(&world, e3).unwrap(), e3);
    assert_no_match(with_b.get(&world, e2), e2);

    // Entities in archetypes created after the state was built.
    let e5 = world.spawn((A::new(5), B::new(50), C::new(500), M1));
    let (a, b) = q.get(&world, e5).unwrap();
    assert_eq!((a.v(), b.v()), (5, 50));
    let (a, _) = qm.get_mut(&mut world, e5).unwrap();
    a.set(55);
    assert_eq!(world.get::<A>(e5).unwrap().v(), 55);

    // `dead`'s slot was reused by e5: the stale handle is still refused.
    assert_eq!(e5.index(), dead.index());
    assert_ne!(e5, dead);
    assert_no_such_entity(q.get(&world, dead), dead);
    assert_no_such_entity(qm.get_mut(&mut world, dead), dead);

    // An id reserved and not yet made live (nothing flushed it): no such
    // entity, not a mismatch, also for a query every archetype matches.
    let reserved = world.reserve_entity();
    assert_no_such_entity(q.get(&world, reserved), reserved);
    assert_no_such_entity(opt.get(&world, reserved), reserved);
    let mut every = world.query::<Entity>();
    assert_no_such_entity(every.get(&world, reserved), reserved);
}

// ----- With / Without / Or / tuples of filters ---------------------------------------

/// Five entities: A; A+B; A+C; A+B+C; B. Returns them in that order.
fn filter_world<A: Val, B: Val, C: Val>(world: &mut World) -> [Entity; 5] {
    [
        world.spawn(A::new(1)),
        world.spawn((A::new(2), B::new(2))),
        world.spawn((A::new(3), C::new(3))),
        world.spawn((A::new(4), B::new(4), C::new(4))),
        world.spawn(B::new(5)),
    ]
}

/// Collects `&A` values of `query_filtered::<&A, F>`, sorted.
fn values<A: Val, F: QueryFilter>(world: &mut World) -> Vec<u32> {
    let mut q = world.query_filtered::<&A, F>();
    sorted(q.iter(world).map(A::v).collect())
}

fn check_with_without<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let [_, _, _, _, e5] = filter_world::<A, B, C>(&mut world);
    assert_eq!(values::<A, With<B>>(&mut world), [2, 4]);
    assert_eq!(values::<A, Without<B>>(&mut world), [1, 3]);
    assert_eq!(values::<A, With<C>>(&mut world), [3, 4]);
    assert_eq!(values::<A, Without<C>>(&mut world), [1, 2]);
    assert_eq!(values::<A, (With<B>, Without<C>)>(&mut world), [2]);
    assert_eq!(values::<A, (Without<B>, Without<C>)>(&mut world), [1]);
    assert_eq!(values::<A, (With<B>, With<C>)>(&mut world), [4]);
    assert_eq!(values::<A, With<A>>(&mut world), [1, 2, 3, 4]);
    assert_eq!(values::<A, Without<A>>(&mut world), Vec::<u32>::new());

    // Filters without data about the filtered component.
    let mut q = world.query_filtered::<(Entity, &B), Without<A>>();
    let got: Vec<_> = q.iter(&world).map(|(e, b)| (e, b.v())).collect();
    assert_eq!(got, [(e5, 5)]);
    let mut q = world.query_filtered::<Entity, With<B>>();
    assert_eq!(q.iter(&world).count(), 3);

    // Filters combined with a write.
    let mut q = world.query_filtered::<&mut A, (With<B>, Without<C>)>();
    for a in q.iter_mut(&mut world) {
        a.set(a.v() + 1000);
    }
    assert_eq!(values::<A, ()>(&mut world), [1, 3, 4, 1002]);

    // The same state follows a component being added and removed.
    let mut with_c = world.query_filtered::<Entity, With<C>>();
    let mut without_c = world.query_filtered::<Entity, Without<C>>();
    assert_eq!(with_c.iter(&world).count(), 2);
    world.insert_one(e5, C::new(5)).unwrap();
    assert_eq!(with_c.iter(&world).count(), 3);
    assert!(!without_c.iter(&world).any(|e| e == e5));
    world.remove_one::<C>(e5).unwrap();
    assert_eq!(with_c.iter(&world).count(), 2);
    assert!(without_c.iter(&world).any(|e| e == e5));
}

fn check_or<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let [e1, e2, e3, e4, e5] = filter_world::<A, B, C>(&mut world);
    assert_eq!(values::<A, Or<(With<B>, With<C>)>>(&mut world), [2, 3, 4]);
    assert_eq!(
        values::<A, Or<(Without<B>, With<C>)>>(&mut world),
        [1, 3, 4]
    );
    assert_eq!(
        values::<A, Or<(Without<B>, Without<C>)>>(&mut world),
        [1, 2, 3]
    );
    assert_eq!(values::<A, Or<(With<B>,)>>(&mut world), [2, 4]);
    assert_eq!(
        values::<A, (Or<(With<B>, With<C>)>, Without<C>)>(&mut world),
        [2]
    );
    assert_eq!(
        values::<A, Or<((With<B>, With<C>), (Without<B>, Without<C>))>>(&mut world),
        [1, 4]
    );

    let mut q = world.query_filtered::<Entity, Or<(With<B>, With<C>)>>();
    assert_eq!(
        sorted(q.iter(&world).collect()),
        sorted(vec![e2, e3, e4, e5])
    );

    // Or over change filters: after a first run, only the new ones pass.
    let mut fresh = world.query_filtered::<Entity, Or<(Added<B>, Added<C>)>>();
    assert_eq!(
        sorted(fresh.iter(&world).collect()),
        sorted(vec![e2, e3, e4, e5])
    );
    assert_eq!(fresh.iter(&world).count(), 0);
    world.insert_one(e1, B::new(1)).unwrap();
    world.insert_one(e3, B::new(3)).unwrap();
    assert_eq!(sorted(fresh.iter(&world).collect()), sorted(vec![e1, e3]));

    let mut touched = world.query_filtered::<Entity, Or<(Changed<A>, Changed<C>)>>();
    assert_eq!(touched.iter(&world).count(), 4, "every entity with A or C");
    world.get_mut::<A>(e1).unwrap();
    world.get_mut::<C>(e4).unwrap();
    assert_eq!(sorted(touched.iter(&world).collect()), sorted(vec![e1, e4]));
    assert_eq!(touched.iter(&world).count(), 0);
}

fn check_added_changed_filters<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let e1 = world.spawn((A::new(1), B::new(1)));
    let e2 = world.spawn(A::new(2));
    world.spawn(B::new(0));

    let mut added = world.query_filtered::<(Entity, &A), Added<A>>();
    let got = sorted(added.iter(&world).map(|(e, a)| (e, a.v())).collect());
    assert_eq!(got, sorted(vec![(e1, 1), (e2, 2)]), "first run: all added");
    assert_eq!(added.iter(&world).count(), 0);

    let mut changed = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(sorted(changed.iter(&world).collect()), sorted(vec![e1, e2]));
    assert_eq!(changed.iter(&world).count(), 0);

    let mut changed_with_b = world.query_filtered::<Entity, (Changed<A>, With<B>)>();
    assert_eq!(changed_with_b.iter(&world).collect::<Vec<_>>(), [e1]);

    world.get_mut::<A>(e2).unwrap().set(20);
    assert_eq!(added.iter(&world).count(), 0);
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [e2]);
    assert_eq!(changed_with_b.iter(&world).count(), 0, "e2 has no B");

    world.get_mut::<A>(e1).unwrap().set(10);
    assert_eq!(changed_with_b.iter(&world).collect::<Vec<_>>(), [e1]);

    let e3 = world.spawn((A::new(3), C::new(3)));
    let got: Vec<_> = added.iter(&world).map(|(e, a)| (e, a.v())).collect();
    assert_eq!(got, [(e3, 3)]);
    assert_eq!(sorted(changed.iter(&world).collect()), sorted(vec![e1, e3]));

    // Changed<A> with `&mut A` data: the filter is read before the item.
    let mut bump = world.query_filtered::<&mut A, Changed<A>>();
    assert_eq!(bump.iter_mut(&mut world).count(), 3);
    world.get_mut::<A>(e2).unwrap();
    let mut n = 0;
    for a in bump.iter_mut(&mut world) {
        a.set(a.v() + 1);
        n += 1;
    }
    assert_eq!(n, 1);
    assert_eq!(world.get::<A>(e2).unwrap().v(), 21);

    // Tuple of change filters on two components: both must hold.
    let mut both = world.query_filtered::<Entity, (Changed<A>, Added<C>)>();
    assert_eq!(both.iter(&world).collect::<Vec<_>>(), [e3]);
    world.insert_one(e2, C::new(2)).unwrap();
    assert_eq!(both.iter(&world).count(), 0, "e2's A did not change");
    world.insert_one(e1, C::new(1)).unwrap();
    world.get_mut::<A>(e1).unwrap();
    assert_eq!(both.iter(&world).collect::<Vec<_>>(), [e1]);
}

// ----- archetype caching -----------------------------------------------------------

fn check_state_picks_up_new_archetypes<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let mut q = world.query::<(Entity, &A, &B)>();
    let mut qf = world.query_filtered::<Entity, (With<A>, Without<C>)>();
    let before = q.matched_archetype_count();
    assert_eq!(q.iter(&world).count(), 0);
    assert_eq!(qf.iter(&world).count(), 0);

    // The markers put these in archetypes that did not exist when the
    // states were built, whatever the storage of A/B/C.
    let e1 = world.spawn((A::new(1), B::new(1), M1));
    let e2 = world.spawn((A::new(2), B::new(2), M2));
    let e3 = world.spawn((A::new(3), M1, M2));
    let e4 = world.spawn((A::new(4), B::new(4), C::new(4), M1, M2));

    let got = sorted(q.iter(&world).map(|(e, a, b)| (e, a.v(), b.v())).collect());
    assert_eq!(got, sorted(vec![(e1, 1, 1), (e2, 2, 2), (e4, 4, 4)]));
    let middle = q.matched_archetype_count();
    assert!(
        middle >= before + 2,
        "matched {before} archetypes before, {middle} after"
    );
    assert_eq!(sorted(qf.iter(&world).collect()), sorted(vec![e1, e2, e3]));

    // And again after the first iteration: more new archetypes.
    #[derive(Component)]
    struct M3;
    let e5 = world.spawn((M3, B::new(5), A::new(5)));
    let got = sorted(q.iter(&world).map(|(e, a, _)| (e, a.v())).collect());
    assert_eq!(got, sorted(vec![(e1, 1), (e2, 2), (e4, 4), (e5, 5)]));
    assert!(q.matched_archetype_count() > middle);
    // A move into a brand-new archetype is seen by get as well.
    world.insert_one(e3, M3).unwrap();
    world.insert_one(e3, B::new(3)).unwrap();
    let (_, a, b) = q.get(&world, e3).unwrap();
    assert_eq!((a.v(), b.v()), (3, 3));
    assert_eq!(q.iter(&world).count(), 5);
}

#[test]
fn matched_archetype_count_counts_table_archetypes() {
    let mut world = World::new();
    let mut q = world.query::<&TA>();
    let mut qf = world.query_filtered::<&TA, Without<TB>>();
    assert_eq!(q.matched_archetype_count(), 0);
    world.spawn(TA(1));
    world.spawn((TA(2), TB(2)));
    world.spawn(TB(3));
    world.spawn((TA(4), SB(4))); // sparse: same archetype as TA alone
    assert_eq!(
        q.matched_archetype_count(),
        0,
        "updated lazily, on the next run"
    );
    assert_eq!(sorted(q.iter(&world).map(|a| a.0).collect()), [1, 2, 4]);
    assert_eq!(q.matched_archetype_count(), 2);
    assert_eq!(sorted(qf.iter(&world).map(|a| a.0).collect()), [1, 4]);
    assert_eq!(qf.matched_archetype_count(), 1);
    world.spawn((TA(5), TC(5)));
    assert_eq!(q.iter(&world).count(), 4);
    assert_eq!(q.matched_archetype_count(), 3);
    assert_eq!(qf.iter(&world).count(), 3);
    assert_eq!(qf.matched_archetype_count(), 2);
    // A fresh state matches the same archetypes right away.
    assert_eq!(world.query::<&TA>().matched_archetype_count(), 3);
    // A sparse component matches every archetype (presence is per entity).
    let sparse = world.query::<&SA>();
    assert_eq!(sparse.matched_archetype_count(), world.archetype_count());
}

// ----- entities moving between archetypes between runs -------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Model {
    a: Option<u32>,
    b: Option<u32>,
    c: bool,
}

fn check_moves_between_runs<A: Val, B: Val, C: Val>() {
    let mut world = World::new();
    let mut model: HashMap<Entity, Model> = HashMap::new();
    for i in 0..24 {
        let e = if i % 2 == 0 {
            world.spawn((A::new(i), B::new(i)))
        } else {
            world.spawn(A::new(i))
        };
        model.insert(
            e,
            Model {
                a: Some(i),
                b: (i % 2 == 0).then_some(i),
                c: false,
            },
        );
    }
    let mut bump = world.query::<(Entity, &mut A)>();
    let mut read = world.query::<(Entity, Option<&A>, Option<&B>, Has<C>)>();
    let mut with_b = world.query_filtered::<(Entity, &A), With<B>>();

    for round in 0..6u32 {
        // One run of the write query: every entity with A exactly once.
        let mut seen = Vec::new();
        for (e, a) in bump.iter_mut(&mut world) {
            seen.push(e);
            a.set(a.v() + 1000);
        }
        assert_no_duplicates(&seen);
        let expected = sorted(
            model
                .iter()
                .filter(|(_, m)| m.a.is_some())
                .map(|(&e, _)| e)
                .collect(),
        );
        assert_eq!(sorted(seen), expected, "round {round}");
        for m in model.values_mut() {
            if let Some(a) = &mut m.a {
                *a += 1000;
            }
        }

        // Structural changes between runs of the same states.
        let mut entities = sorted(model.keys().copied().collect::<Vec<_>>());
        entities.rotate_left(round as usize);
        for (i, &e) in entities.iter().enumerate() {
            let m = model.get_mut(&e).unwrap();
            match (i as u32 + round) % 7 {
                0 => {
                    world.insert_one(e, C::new(0)).unwrap();
                    m.c = true;
                }
                1 if m.c => {
                    world.remove_one::<C>(e).unwrap();
                    m.c = false;
                }
                2 => {
                    if m.b.is_some() {
                        world.remove_one::<B>(e).unwrap();
                        m.b = None;
                    } else {
                        world.insert_one(e, B::new(i as u32)).unwrap();
                        m.b = Some(i as u32);
                    }
                }
                3 => {
                    // A table marker: moves the entity whatever A/B/C are.
                    if world.has::<M1>(e) {
                        world.remove_one::<M1>(e).unwrap();
                    } else {
                        world.insert_one(e, M1).unwrap();
                    }
                }
                4 if m.a.is_some() => {
                    // A replacing insert together with a new component.
                    world.insert(e, (A::new(7 + i as u32), M2)).unwrap();
                    m.a = Some(7 + i as u32);
                }
                5 => {
                    if m.a.is_some() {
                        world.remove_one::<A>(e).unwrap();
                        m.a = None;
                    } else {
                        world.insert_one(e, A::new(i as u32)).unwrap();
                        m.a = Some(i as u32);
                    }
                }
                _ => {}
            }
        }
        // One despawn and one spawn per round.
        let victim = entities[round as usize % entities.len()];
        world.despawn(victim).unwrap();
        model.remove(&victim);
        let newcomer = world.spawn((A::new(500 + round), C::new(round), M2));
        model.insert(
            newcomer,
            Model {
                a: Some(500 + round),
                b: None,
                c: true,
            },
        );
        world.check_invariants();

        // The read state sees every entity once, with the right values.
        let items: Vec<_> = read
            .iter(&world)
            .map(|(e, a, b, c)| {
                (
                    e,
                    Model {
                        a: a.map(A::v),
                        b: b.map(B::v),
                        c,
                    },
                )
            })
            .collect();
        let entities_seen: Vec<_> = items.iter().map(|&(e, _)| e).collect();
        assert_no_duplicates(&entities_seen);
        let expected = sorted(model.iter().map(|(&e, &m)| (e, m)).collect());
        assert_eq!(sorted(items), expected, "round {round}");

        let got = sorted(with_b.iter(&world).map(|(e, a)| (e, a.v())).collect());
        let expected = sorted(
            model
                .iter()
                .filter_map(|(&e, m)| Some((e, m.a?)).filter(|_| m.b.is_some()))
                .collect(),
        );
        assert_eq!(got, expected, "round {round}");
    }
}

// ----- aliasing is refused when the state is built ----------------------------------

#[test]
#[should_panic(expected = "query `(&mut A, &A)` borrows component `A` mutably")]
fn aliasing_mut_and_ref_panics() {
    let mut world = World::new();
    let _ = world.query::<(&mut A, &A)>();
}

#[test]
#[should_panic(expected = "query `(&A, &mut A)` borrows component `A` mutably")]
fn aliasing_ref_then_mut_panics() {
    let mut world = World::new();
    let _ = world.query::<(&A, &mut A)>();
}

#[test]
#[should_panic(expected = "query `(&mut A, &mut A)` borrows component `A` mutably")]
fn aliasing_mut_and_mut_panics() {
    let mut world = World::new();
    let _ = world.query::<(&mut A, &mut A)>();
}

#[test]
#[should_panic(expected = "query `(&A, Option<&mut A>)` borrows component `A` mutably")]
fn aliasing_ref_and_option_mut_panics() {
    let mut world = World::new();
    let _ = world.query::<(&A, Option<&mut A>)>();
}

#[test]
#[should_panic(expected = "borrows component `A` mutably")]
fn aliasing_inside_nested_tuples_panics() {
    let mut world = World::new();
    world.spawn((A(1), TB(1)));
    let _ = world.query_filtered::<((Entity, &mut A), (&TB, (Option<&A>,))), With<TB>>();
}

#[test]
#[should_panic(expected = "query `(&mut SparseA, &SparseA)` borrows component `SparseA` mutably")]
fn aliasing_sparse_mut_and_ref_panics() {
    let mut world = World::new();
    let _ = world.query::<(&mut SparseA, &SparseA)>();
}

#[test]
#[should_panic(
    expected = "query `(&mut SparseA, &mut SparseA)` borrows component `SparseA` mutably"
)]
fn aliasing_sparse_mut_and_mut_panics() {
    let mut world = World::new();
    let _ = world.query::<(&mut SparseA, &mut SparseA)>();
}

#[test]
#[should_panic(
    expected = "query `(&SparseA, Option<&mut SparseA>)` borrows component `SparseA` mutably"
)]
fn aliasing_sparse_ref_and_option_mut_panics() {
    let mut world = World::new();
    let _ = world.query::<(&SparseA, Option<&mut SparseA>)>();
}

#[test]
fn non_aliasing_combinations_are_allowed() {
    let mut world = World::new();
    let e = world.spawn((A(1), SparseA(2)));
    let mut reads = world.query::<(&A, &A, Option<&A>, &SparseA, &SparseA)>();
    let (a1, a2, a3, s1, s2) = reads.get(&world, e).unwrap();
    assert_eq!((a1.0, a2.0, a3.unwrap().0, s1.0, s2.0), (1, 1, 1, 2, 2));

    // Has<T> and filters on T borrow no value, so they sit next to &mut T.
    let mut writes = world
        .query_filtered::<(&mut A, Has<A>, &mut SparseA, Has<SparseA>), (With<A>, Changed<A>, Added<SparseA>)>();
    for (a, has_a, s, has_s) in writes.iter_mut(&mut world) {
        assert!(has_a && has_s);
        a.0 += 10;
        s.0 += 10;
    }
    assert_eq!(world.get::<A>(e).unwrap().0, 11);
    assert_eq!(world.get::<SparseA>(e).unwrap().0, 12);
}

// ----- next() against the for_each / fold path -----------------------------------------

/// A world with a mix of archetypes, despawns and moves; the same every call.
fn populate<A: Val, B: Val, C: Val>() -> (World, Vec<Entity>) {
    let mut world = World::new();
    let mut entities = Vec::new();
    // Under Miri, 18: each of the worlds `next_vs_for_each` builds took
    // over a second, and its all_table and all_sparse cases run in .ci/run's
    // every-run strict step (109 s of Miri time at 24, 95 s at 18). 18 is three of
    // each `i % 6` shape; the `i % 9` edits all occur (3, 5, 7, 8 and again
    // 12 to 17, the `remove_one` on an entity with `A` at 8), `touch` meets
    // every residue of its own, and the first check's `> 10` items still
    // holds (the whole file passes natively with 18 too).
    let n: u32 = if cfg!(miri) { 18 } else { 40 };
    for i in 0..n {
        let e = match i % 6 {
            0 => world.spawn(A::new(i)),
            1 => world.spawn((A::new(i), B::new(i))),
            2 => world.spawn((A::new(i), C::new(i), M1)),
            3 => world.spawn((B::new(i), C::new(i))),
            4 => world.spawn((A::new(i), B::new(i), C::new(i), M2)),
            _ => world.spawn(M1),
        };
        entities.push(e);
    }
    for (i, &e) in entities.iter().enumerate() {
        match i % 9 {
            3 => world.despawn(e).unwrap(),
            5 => world.insert_one(e, M2).unwrap(),
            7 => world.insert_one(e, B::new(i as u32 + 100)).unwrap(),
            8 if world.has::<A>(e) => drop(world.remove_one::<A>(e).unwrap()),
            _ => {}
        }
    }
    entities.retain(|&e| world.contains(e));
    (world, entities)
}

/// Changes some values and components after a first run.
fn touch<A: Val, B: Val, C: Val>(world: &mut World, entities: &[Entity]) {
    for (i, &e) in entities.iter().enumerate() {
        if !world.contains(e) {
            continue;
        }
        if i % 4 == 1 {
            if let Ok(a) = world.get_mut::<A>(e) {
                a.set(a.v() + 1);
            }
        }
        if i % 5 == 2 {
            world.insert_one(e, C::new(i as u32)).unwrap();
        }
        if i % 7 == 3 {
            world.insert_one(e, M1).unwrap();
        }
    }
    world.spawn((A::new(900), C::new(900)));
    world.spawn((B::new(901), M2));
}

/// Runs query `$Q` filtered by `$F` with method `$run` (`iter` or
/// `iter_mut`) on four identical worlds (each after one baseline run and
/// `touch`), through a `for` loop (`next`), `for_each`, `fold`, and two
/// `next` calls followed by `for_each`; asserts the four agree, in order,
/// and returns the items.
macro_rules! all_paths_agree {
    ($run:ident, $Q:ty, $F:ty, $map:expr) => {{
        let build = || {
            let (mut world, entities) = populate::<A, B, C>();
            let mut state = world.query_filtered::<$Q, $F>();
            let _ = state.$run(&mut world).count();
            touch::<A, B, C>(&mut world, &entities);
            (world, state)
        };
        let map = $map;

        let (mut w, mut s) = build();
        let mut via_next = Vec::new();
        for item in s.$run(&mut w) {
            via_next.push(map(item));
        }

        let (mut w, mut s) = build();
        let mut via_for_each = Vec::new();
        s.$run(&mut w).for_each(|item| via_for_each.push(map(item)));

        let (mut w, mut s) = build();
        let via_fold = s.$run(&mut w).fold(Vec::new(), |mut acc, item| {
            acc.push(map(item));
            acc
        });

        let (mut w, mut s) = build();
        let mut mixed = Vec::new();
        {
            let mut it = s.$run(&mut w);
            for _ in 0..2 {
                if let Some(item) = it.next() {
                    mixed.push(map(item));
                }
            }
            it.for_each(|item| mixed.push(map(item)));
        }

        let (mut w, mut s) = build();
        let counted = s.$run(&mut w).count();

        assert_eq!(via_next, via_for_each, "{}", stringify!($Q, $F));
        assert_eq!(via_next, via_fold, "{}", stringify!($Q, $F));
        assert_eq!(via_next, mixed, "{}", stringify!($Q, $F));
        assert_eq!(via_next.len(), counted, "{}", stringify!($Q, $F));
        via_next
    }};
}

fn check_next_and_for_each_agree<A: Val, B: Val, C: Val>() {
    let items = all_paths_agree!(iter, (Entity, &A), (), |(e, a): (Entity, &A)| (e, a.v()));
    assert!(items.len() > 10);

    let items = all_paths_agree!(
        iter,
        (Entity, &A, Option<&B>, Has<C>),
        With<B>,
        |(e, a, b, c): (Entity, &A, Option<&B>, bool)| (e, a.v(), b.map(B::v), c)
    );
    assert!(!items.is_empty());
    assert!(items.iter().all(|&(_, _, b, _)| b.is_some()));

    let items = all_paths_agree!(iter, (Entity, &A), (Without<B>, Without<M2>), |(e, a): (
        Entity,
        &A
    )| (
        e,
        a.v()
    ));
    assert!(!items.is_empty());

    let items = all_paths_agree!(
        iter,
        (Entity, Option<&A>),
        Or<(With<B>, With<C>)>,
        |(e, a): (Entity, Option<&A>)| (e, a.map(A::v))
    );
    assert!(items.iter().any(|&(_, a)| a.is_none()));
    assert!(items.iter().any(|&(_, a)| a.is_some()));

    let items = all_paths_agree!(iter, Entity, Changed<A>, |e: Entity| e);
    assert!(!items.is_empty(), "touch changed some A");

    let items = all_paths_agree!(iter, (Entity, &C), Added<C>, |(e, c): (Entity, &C)| (
        e,
        c.v()
    ));
    assert!(!items.is_empty(), "touch added some C");

    let items = all_paths_agree!(
        iter_mut,
        (Entity, &mut A, Option<&mut B>),
        Without<C>,
        |(e, a, b): (Entity, &mut A, Option<&mut B>)| {
            a.set(a.v() + 1);
            if let Some(b) = b {
                b.set(b.v() + 1);
            }
            (e, a.v())
        }
    );
    assert!(!items.is_empty());

    let items = all_paths_agree!(
        iter_mut,
        (Entity, &mut C),
        Or<(Changed<A>, Added<C>)>,
        |(e, c): (Entity, &mut C)| (e, c.v())
    );
    assert!(!items.is_empty());
}

// ----- size_hint ---------------------------------------------------------------------------

fn check_size_hint_bounds<A: Val, B: Val, C: Val>() {
    fn check_steps<I: Iterator>(mut it: I, total: usize, what: &str) {
        let mut left = total;
        loop {
            let (lo, hi) = it.size_hint();
            assert!(lo <= left, "{what}: lower bound {lo} > {left} left");
            let hi = hi.expect("the query iterator gives an upper bound");
            assert!(hi >= left, "{what}: upper bound {hi} < {left} left");
            if it.next().is_none() {
                break;
            }
            left -= 1;
        }
        assert_eq!(left, 0, "{what}: fewer items than counted");
    }

    let (mut world, entities) = populate::<A, B, C>();
    macro_rules! check {
        ($Q:ty, $F:ty) => {{
            let mut state = world.query_filtered::<$Q, $F>();
            let total = state.iter(&world).count();
            check_steps(state.iter(&world), total, stringify!($Q, $F));
            total
        }};
    }
    assert!(check!(Entity, ()) > 0);
    assert!(check!(&A, ()) > 0);
    assert!(check!((&A, &B), ()) > 0);
    assert!(check!(&B, Without<A>) > 0);
    assert!(check!(&C, (With<A>, Without<M1>)) > 0);
    check!(Entity, Or<(With<A>, With<C>)>);

    // Change filters: bound and count from the same run.
    let mut changed = world.query_filtered::<(Entity, &A), Changed<A>>();
    let _ = changed.iter(&world).count();
    touch::<A, B, C>(&mut world, &entities);
    let it = changed.iter(&world);
    let (_, hi) = it.size_hint();
    let n = it.count();
    assert!(n > 0);
    assert!(hi.unwrap() >= n, "upper bound {hi:?} < {n}");
}

// ----- deterministic order ------------------------------------------------------------------

fn check_order_is_deterministic<A: Val, B: Val, C: Val>() {
    fn snapshot<A: Val, B: Val, C: Val>() -> Vec<Vec<(Entity, u32)>> {
        let (mut world, entities) = populate::<A, B, C>();
        let mut all = world.query::<(Entity, Option<&A>)>();
        let mut ab = world.query::<(Entity, &A, &B)>();
        let mut c_no_a = world.query_filtered::<(Entity, &C), Without<A>>();
        let mut out = Vec::new();
        for round in 0..3 {
            touch::<A, B, C>(&mut world, &entities);
            for (i, &e) in entities.iter().enumerate() {
                if (i + round) % 11 == 0 && world.contains(e) {
                    world.despawn(e).unwrap();
                }
            }
            out.push(
                all.iter(&world)
                    .map(|(e, a)| (e, a.map_or(0, A::v)))
                    .collect(),
            );
            out.push(
                ab.iter(&world)
                    .map(|(e, a, b)| (e, a.v() + b.v()))
                    .collect(),
            );
            let mut v = Vec::new();
            c_no_a.iter(&world).for_each(|(e, c)| v.push((e, c.v())));
            out.push(v);
        }
        out
    }
    let first = snapshot::<A, B, C>();
    let second = snapshot::<A, B, C>();
    assert!(first.iter().all(|v| !v.is_empty()));
    assert_eq!(first, second);
}

fn check_documented_order<A: Val, B: Val, C: Val>() {
    // Archetypes in creation order, rows in order, and a removal moves the
    // table's last row into the hole.
    let mut world = World::new();
    let e0 = world.spawn(A::new(0));
    let e1 = world.spawn(A::new(1));
    let e2 = world.spawn(A::new(2));
    let e3 = world.spawn(A::new(3));
    let mut q = world.query::<(Entity, &A)>();
    let order = |q: &mut QueryState<(Entity, &A)>, world: &World| -> Vec<Entity> {
        q.iter(world).map(|(e, _)| e).collect()
    };
    assert_eq!(order(&mut q, &world), [e0, e1, e2, e3]);
    world.despawn(e1).unwrap();
    assert_eq!(order(&mut q, &world), [e0, e3, e2]);
    let e4 = world.spawn(A::new(4));
    assert_eq!(order(&mut q, &world), [e0, e3, e2, e4]);
    // Moving e0 to a new (later) archetype: e4 fills its row. A sparse `A`
    // is walked in its set's order, which a table move does not touch.
    world.insert_one(e0, M1).unwrap();
    if A::STORAGE == StorageType::SparseSet {
        assert_eq!(order(&mut q, &world), [e0, e3, e2, e4]);
    } else {
        assert_eq!(order(&mut q, &world), [e4, e3, e2, e0]);
    }
    let _ = (B::new(0), C::new(0));
}

storage_combos! {
    ref_item => check_ref;
    mut_item => check_mut;
    option_items => check_option;
    has_item => check_has;
    nested_tuples => check_nested_tuples;
    get_and_get_mut => check_get;
    with_without => check_with_without;
    or_filter => check_or;
    added_changed => check_added_changed_filters;
    new_archetypes => check_state_picks_up_new_archetypes;
    moves_between_runs => check_moves_between_runs;
    next_vs_for_each => check_next_and_for_each_agree;
    size_hint => check_size_hint_bounds;
    deterministic_order => check_order_is_deterministic;
    documented_order => check_documented_order;
}

// ----- misc -------------------------------------------------------------------------------

#[test]
#[should_panic(expected = "cannot be used with world")]
fn state_refuses_another_world() {
    let mut w1 = World::new();
    let w2 = World::new();
    let mut q = w1.query::<Entity>();
    let _ = q.iter(&w2).count();
}

#[test]
fn empty_archetypes_are_skipped_and_reused() {
    let mut world = World::new();
    let mut q = world.query::<(&TA, Option<&SA>)>();
    let e = world.spawn((TA(1), SA(1)));
    world.despawn(e).unwrap();
    assert_eq!(q.iter(&world).count(), 0);
    let it = q.iter(&world);
    assert_eq!(it.size_hint().1, Some(0));
    let e = world.spawn(TA(2));
    let got: Vec<_> = q.iter(&world).map(|(a, s)| (a.0, s.map(|s| s.0))).collect();
    assert_eq!(got, [(2, None)]);
    world.insert_one(e, SA(3)).unwrap();
    let got: Vec<_> = q.iter(&world).map(|(a, s)| (a.0, s.map(|s| s.0))).collect();
    assert_eq!(got, [(2, Some(3))]);
}

// ----- queries walked through a sparse set ---------------------------------------------------

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Pos(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Frozen;
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Ghost(u32);

/// A world of `n` table entities in two archetypes, a few with the sparse
/// `Ghost`, one `Ghost` on an entity without `Pos`, one `Frozen` ghost.
fn ghost_world(n: u32) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let mut all = world.spawn_batch((0..n).map(Pos));
    all.extend(world.spawn_batch((n..2 * n).map(|i| (Pos(i), M1))));
    let lone = world.spawn(Ghost(99));
    let mut ghosts = Vec::new();
    for (k, i) in [2 * n - 1, 3, n + 5, 7].into_iter().enumerate() {
        let e = all[i as usize];
        world.insert_one(e, Ghost(k as u32)).unwrap();
        ghosts.push(e);
    }
    world.insert_one(all[7], Frozen).unwrap();
    let _ = lone;
    (world, ghosts)
}

#[test]
fn sparse_driven_query_visits_the_sets_entities_in_set_order() {
    let (mut world, ghosts) = ghost_world(if cfg!(miri) { 20 } else { 2_000 });
    // Few ghosts among many rows: the run walks Ghost's set, in its order
    // (insertion order here), skipping the ghost without `Pos`.
    let mut q = world.query::<(Entity, &mut Ghost, &Pos)>();
    let got: Vec<(Entity, u32)> = q
        .iter_mut(&mut world)
        .map(|(e, g, _)| {
            g.0 += 10;
            (e, g.0)
        })
        .collect();
    assert_eq!(
        got,
        [
            (ghosts[0], 10),
            (ghosts[1], 11),
            (ghosts[2], 12),
            (ghosts[3], 13)
        ]
    );
    // The same through `fold`, with a table filter, and with `With<Ghost>`.
    let mut q = world.query_filtered::<(Entity, &Ghost), (With<Pos>, Without<Frozen>)>();
    let mut folded = Vec::new();
    q.iter(&world).for_each(|(e, g)| folded.push((e, g.0)));
    assert_eq!(folded, [(ghosts[0], 10), (ghosts[1], 11), (ghosts[2], 12)]);
    let mut q = world.query_filtered::<Entity, (With<Ghost>, With<M1>)>();
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [ghosts[0], ghosts[2]]);
    assert_eq!(q.iter(&world).size_hint(), (0, Some(5)));
    // A removal swaps the set's last entity into the hole: the order
    // follows.
    world.remove_one::<Ghost>(ghosts[0]).unwrap();
    let mut q = world.query::<(Entity, &Ghost, &Pos)>();
    let order: Vec<Entity> = q.iter(&world).map(|(e, ..)| e).collect();
    assert_eq!(order, [ghosts[3], ghosts[1], ghosts[2]]);
    // Changed<Ghost> on a walked run.
    let mut changed = world.query_filtered::<Entity, (With<Pos>, Changed<Ghost>)>();
    assert_eq!(changed.iter(&world).count(), 3);
    assert_eq!(changed.iter(&world).count(), 0);
    world.get_mut::<Ghost>(ghosts[2]).unwrap().0 = 0;
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [ghosts[2]]);
}

#[test]
fn sparse_driven_query_in_systems_parallel_and_chunked() {
    let (mut world, mut ghosts) = ghost_world(if cfg!(miri) { 40 } else { 5_000 });
    // Enough ghosts for the parallel paths to split them.
    let extra: Vec<Entity> = world.spawn_batch((0..300).map(|i| (Pos(i), M2)));
    for &e in &extra {
        world.insert_one(e, Ghost(0)).unwrap();
    }
    ghosts.extend(&extra);
    let seq: Vec<Entity> =
        world.run_system_once(|q: Query<Entity, (With<Ghost>, With<Pos>)>| q.iter().collect());
    assert_eq!(seq, ghosts, "set order");
    world.run_system_once(|mut q: Query<(&mut Ghost, &Pos)>| {
        q.par_iter_mut().for_each(|(g, p)| g.0 = p.0 + 1)
    });
    let chunked: Vec<Vec<u32>> = world.run_system_once(|q: Query<(&Ghost, &Pos)>| {
        q.par_chunks(64).map(|c| c.map(|(g, _)| g.0).collect())
    });
    let flat: Vec<u32> = chunked.concat();
    let expected: Vec<u32> = ghosts
        .iter()
        .map(|&e| world.get::<Pos>(e).unwrap().0 + 1)
        .collect();
    assert_eq!(flat, expected);
    assert_eq!(chunked.len(), ghosts.len().div_ceil(64));
    let pairs =
        world.run_system_once(|q: Query<&Ghost, With<Frozen>>| q.iter_combinations::<2>().count());
    assert_eq!(pairs, 0);
    let pairs = world.run_system_once(|q: Query<Entity, (With<Ghost>, With<M1>)>| {
        q.iter_combinations::<2>().count()
    });
    assert_eq!(pairs, 1);
}

#[test]
fn a_query_walks_tables_when_they_hold_fewer_rows_than_the_set() {
    // Ghost on many entities, the other required component on few: the
    // run walks the (smaller) matched tables, in table order.
    let mut world = World::new();
    let many = world.spawn_batch((0..200).map(Ghost));
    let few: Vec<Entity> = many.iter().rev().take(3).copied().collect();
    for &e in &few {
        world.insert_one(e, Pos(e.index())).unwrap();
    }
    let mut q = world.query::<(Entity, &Ghost, &Pos)>();
    let got: Vec<Entity> = q.iter(&world).map(|(e, ..)| e).collect();
    assert_eq!(got, few, "table order (the order Pos was added)");
}

#[test]
fn sparse_driven_query_visits_dense_sets_by_position() {
    // Queries of only sparse components (and `Entity`) with no filter walk
    // their smallest set and read its values by position: every entity of
    // that set is visited once, in set order, whatever table it lives in.
    let n: u32 = if cfg!(miri) { 12 } else { 600 };
    let mut world = World::new();
    let mut all = Vec::new();
    for i in 0..n {
        let e = match i % 4 {
            0 => world.spawn((TA(i), SA(i))),
            1 => world.spawn((TB(i), SA(i))),
            2 => world.spawn((TA(i), TC(i), SA(i))),
            _ => world.spawn(SA(i)),
        };
        all.push(e);
    }
    // SB on every third entity, inserted in reverse: its set is the smaller.
    let with_b: Vec<Entity> = all.iter().rev().step_by(3).copied().collect();
    for &e in &with_b {
        world.insert_one(e, SB(1000 + e.index())).unwrap();
    }
    // No entity ever had SC: its set does not exist.
    let none = world.query::<&SC>().iter(&world).count();
    assert_eq!(none, 0);

    // One component: every value, in set order (spawn order), once.
    assert_eq!(
        world.query::<&SA>().iter(&world).size_hint(),
        (0, Some(n as usize))
    );
    let mut q = world.query::<(Entity, &mut SA)>();
    let mut seen = Vec::new();
    q.iter_mut(&mut world).for_each(|(e, a)| {
        a.0 += 1;
        seen.push(e);
    });
    assert_eq!(seen, all);
    // `next` agrees with `fold`.
    let values: Vec<u32> = q.iter_mut(&mut world).map(|(_, a)| a.0).collect();
    assert_eq!(values, (1..=n).collect::<Vec<_>>());

    // Two components: the run walks SB's set (smaller) in its order, reads
    // SB by position and looks SA up.
    let mut q = world.query::<(&SA, &mut SB, Entity)>();
    let got: Vec<(Entity, u32, u32)> = q
        .iter_mut(&mut world)
        .map(|(a, b, e)| {
            b.0 += 1;
            (e, a.0, b.0)
        })
        .collect();
    let expected: Vec<(Entity, u32, u32)> = with_b
        .iter()
        .map(|&e| {
            let i = all.iter().position(|&x| x == e).unwrap() as u32;
            (e, i + 1, 1001 + e.index())
        })
        .collect();
    assert_eq!(got, expected);

    // An entity losing SA is skipped by the lookup; one losing SB leaves
    // the walk.
    world.remove_one::<SA>(with_b[0]).unwrap();
    world.remove_one::<SB>(with_b[1]).unwrap();
    let mut q = world.query::<(Entity, &SB, &SA)>();
    let got: Vec<Entity> = q.iter(&world).map(|(e, ..)| e).collect();
    assert_eq!(got.len(), with_b.len() - 2);
    assert!(!got.contains(&with_b[0]) && !got.contains(&with_b[1]));

    // A despawn swaps the set's last entity into the hole: positions follow.
    world.despawn(all[0]).unwrap();
    let mut q = world.query::<(Entity, &SA)>();
    for (e, a) in q.iter(&world) {
        assert_eq!(world.get::<SA>(e).unwrap().0, a.0);
    }
    assert_eq!(q.iter(&world).count(), n as usize - 2);
}

#[test]
fn sparse_driven_query_visits_dense_sets_with_change_ticks() {
    // A dense `&mut` run marks each value it hands out as changed, at its
    // own position, and nothing else.
    let mut world = World::new();
    let ids: Vec<Entity> = (0..40)
        .map(|i| {
            if i % 2 == 0 {
                world.spawn((TA(i), SA(i)))
            } else {
                world.spawn(SA(i))
            }
        })
        .collect();
    let mut changed = world.query_filtered::<Entity, Changed<SA>>();
    assert_eq!(changed.iter(&world).count(), 40);
    assert_eq!(changed.iter(&world).count(), 0);
    let mut q = world.query::<(Entity, &mut SA)>();
    // Touch only every fifth value through `next`.
    for (e, a) in q.iter_mut(&mut world) {
        if e.index() % 5 == 0 {
            a.0 += 1;
        }
    }
    // `&mut` marks every item handed out, like table columns do.
    assert_eq!(changed.iter(&world).count(), 40);
    let mut q = world.query::<(Entity, &SA)>();
    let touched: Vec<Entity> = q
        .iter(&world)
        .filter(|(e, a)| a.0 != e.index())
        .map(|(e, _)| e)
        .collect();
    let expected: Vec<Entity> = ids.iter().copied().filter(|e| e.index() % 5 == 0).collect();
    assert_eq!(touched, expected);
    // A dense run through `get_mut` elsewhere still marks only that one.
    world.get_mut::<SA>(ids[7]).unwrap().0 = 0;
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [ids[7]]);
}

#[test]
fn sparse_driven_dense_runs_in_parallel_and_chunks() {
    // Split runs start mid-set: each reads the values at its own positions.
    let n: u32 = if cfg!(miri) { 40 } else { 20_000 };
    let mut world = World::new();
    for i in 0..n {
        if i % 3 == 0 {
            world.spawn((TB(i), SA(i)));
        } else {
            world.spawn(SA(i));
        }
    }
    world.run_system_once(|mut q: Query<&mut SA>| q.par_iter_mut().for_each(|a| a.0 *= 2));
    let values: Vec<u32> = world.run_system_once(|q: Query<&SA>| q.iter().map(|a| a.0).collect());
    assert_eq!(values, (0..n).map(|i| i * 2).collect::<Vec<_>>());
    let chunked: Vec<u32> = world.run_system_once(|q: Query<(Entity, &SA)>| {
        q.par_chunks(97).map(|c| c.map(|(_, a)| a.0).sum::<u32>())
    });
    assert_eq!(chunked.len(), (n as usize).div_ceil(97));
    assert_eq!(
        chunked.iter().sum::<u32>(),
        (0..n).map(|i| i * 2).sum::<u32>()
    );
    let first: u32 = (0..97.min(n)).map(|i| i * 2).sum();
    assert_eq!(chunked[0], first);
}

// ----- the row step: for loops, mixed with fold, change ticks, par_iter ---------------------

/// A world with empty and non-empty tables of `TA` (some with `TB`, some
/// with `SB`), so a walk crosses table boundaries, skips empty tables and
/// meets a sparse component on some rows only.
fn tables_world() -> (World, Vec<Entity>) {
    let mut world = World::new();
    let mut all = world.spawn_batch((0..5).map(|i| (TA(i),)));
    all.extend(world.spawn_batch((5..9).map(|i| (TA(i), TB(i)))));
    all.extend(world.spawn_batch((9..12).map(|i| (TA(i), M1))));
    // An archetype that exists but is empty when the queries run.
    let gone = world.spawn((TA(99), M2));
    world.despawn(gone).unwrap();
    all.extend(world.spawn_batch((12..20).map(|i| (TA(i), TB(i), M1))));
    for &e in all.iter().step_by(3) {
        world.insert_one(e, SB(1000)).unwrap();
    }
    (world, all)
}

#[test]
fn a_for_loop_mixed_with_next_and_fold_visits_each_item_once() {
    let (mut world, all) = tables_world();
    let mut q = world.query::<(Entity, &mut TA)>();
    for split in 0..=all.len() {
        let mut seen = Vec::new();
        let mut it = q.iter_mut(&mut world);
        for _ in 0..split {
            let (e, a) = it.next().expect("fewer items than entities");
            a.0 += 1;
            seen.push(e);
        }
        it.for_each(|(e, a)| {
            a.0 += 1;
            seen.push(e);
        });
        assert_eq!(sorted(seen), sorted(all.clone()), "split at {split}");
    }
    // Every entity was bumped once per split.
    let n = all.len() as u32 + 1;
    for (i, &e) in all.iter().enumerate() {
        assert_eq!(world.get::<TA>(e).unwrap().0, i as u32 + n);
    }
}

#[test]
fn for_loops_agree_with_for_each_on_every_query_shape() {
    let (mut world, _) = tables_world();
    macro_rules! same {
        ($Q:ty, $F:ty, $map:expr) => {{
            let mut q = world.query_filtered::<$Q, $F>();
            let mut by_loop = Vec::new();
            for item in q.iter(&world) {
                by_loop.push($map(item));
            }
            let mut by_fold = Vec::new();
            q.iter(&world).for_each(|item| by_fold.push($map(item)));
            assert_eq!(by_loop, by_fold, "{}", stringify!($Q, $F));
            assert!(!by_loop.is_empty(), "{}", stringify!($Q, $F));
        }};
    }
    same!((Entity, &TA), (), |(e, _): (Entity, &TA)| e);
    same!(&TA, With<TB>, |a: &TA| a.0);
    same!(&TA, Without<M1>, |a: &TA| a.0);
    same!((&TA, Option<&TB>), (), |(a, b): (&TA, Option<&TB>)| (
        a.0,
        b.map(|b| b.0)
    ));
    same!((&TA, Has<M1>), (), |(a, m): (&TA, bool)| (a.0, m));
    // A sparse component on some rows: the walk skips the others.
    same!((&TA, &SB), (), |(a, _): (&TA, &SB)| a.0);
    same!(&SB, (), |b: &SB| b.0);
    same!(Entity, Or<(With<TB>, With<SB>)>, |e: Entity| e);
}

#[test]
fn a_for_loop_that_stops_early_marks_only_what_it_yielded() {
    let (mut world, _) = tables_world();
    let mut changed = world.query_filtered::<Entity, Changed<TA>>();
    let _ = changed.iter(&world).count(); // the first run sees everything
    let mut q = world.query::<(Entity, &mut TA)>();
    let mut yielded = Vec::new();
    for (e, _) in q.iter_mut(&mut world) {
        yielded.push(e);
        if yielded.len() == 7 {
            break;
        }
    }
    assert_eq!(sorted(changed.iter(&world).collect()), sorted(yielded));
}

/// A tracked `for` loop stamps its rows one by one: through whole tables,
/// runs between disabled rows, and walks of a sparse set (dense, or driven
/// while something is disabled), a loop that stops early marks exactly
/// what it yielded.
#[test]
fn a_tracked_for_loop_marks_exactly_what_it_yielded_in_every_walk() {
    for disable in [false, true] {
        for stop in [1, 2, 4, 7, 13, 100] {
            let (mut world, all) = tables_world();
            if disable {
                for &e in all.iter().skip(1).step_by(4) {
                    world.insert_one(e, Disabled).unwrap();
                }
            }
            let mut changed_a = world.query_filtered::<Entity, Changed<TA>>();
            let mut changed_b = world.query_filtered::<Entity, Changed<SB>>();
            let _ = changed_a.iter(&world).count(); // the first run sees everything
            let _ = changed_b.iter(&world).count();

            let mut q = world.query::<(Entity, &mut TA)>();
            let mut yielded = Vec::new();
            for (e, _) in q.iter_mut(&mut world) {
                yielded.push(e);
                if yielded.len() == stop {
                    break;
                }
            }
            assert!(yielded.len() == stop || stop == 100);
            assert_eq!(sorted(changed_a.iter(&world).collect()), sorted(yielded));

            let mut q = world.query::<(Entity, &mut SB)>();
            let mut yielded = Vec::new();
            for (e, _) in q.iter_mut(&mut world) {
                yielded.push(e);
                if yielded.len() == stop {
                    break;
                }
            }
            assert_eq!(sorted(changed_b.iter(&world).collect()), sorted(yielded));
        }
    }
}

#[test]
fn next_marks_each_item_changed_as_it_yields_it() {
    let (mut world, all) = tables_world();
    let mut changed = world.query_filtered::<Entity, Changed<TA>>();
    let _ = changed.iter(&world).count();
    let mut q = world.query::<&mut TA>();
    assert!(q.iter_mut(&mut world).next().is_some());
    assert_eq!(changed.iter(&world).count(), 1);
    // A whole walk, half by `next` and half by `fold`, marks everything.
    let mut it = q.iter_mut(&mut world);
    for _ in 0..all.len() / 2 {
        it.next();
    }
    it.for_each(drop);
    assert_eq!(changed.iter(&world).count(), all.len());
}

#[test]
fn size_hint_is_exact_for_a_query_that_skips_no_row() {
    let (world, all) = tables_world();
    let mut world = world;
    let mut q = world.query::<(Entity, &TA)>();
    let mut it = q.iter(&world);
    for left in (0..=all.len()).rev() {
        assert_eq!(it.size_hint(), (left, Some(left)));
        it.next();
    }
    // `collect` can then allocate once.
    assert_eq!(q.iter(&world).collect::<Vec<_>>().capacity(), all.len());
}

#[test]
fn query_state_par_iter_mut_visits_every_item_once() {
    // Above `par_iter`'s threshold for running on the calling thread, in
    // two tables; smaller under Miri.
    let (n, m) = if cfg!(miri) { (200, 50) } else { (3000, 500) };
    let mut world = World::new();
    let all = world.spawn_batch((0..n).map(|i| (TA(i),)));
    world.spawn_batch((0..m).map(|i| (TA(i), TB(i))));
    let mut q = world.query::<&mut TA>();
    q.par_iter_mut(&mut world).for_each(|a| a.0 += 1);
    assert_eq!(world.get::<TA>(all[10]).unwrap().0, 11);
    let mut read = world.query::<&TA>();
    let total = std::sync::atomic::AtomicU64::new(0);
    read.par_iter(&world).for_each(|a| {
        total.fetch_add(a.0 as u64, std::sync::atomic::Ordering::Relaxed);
    });
    let expected: u64 = (1..=n as u64).sum::<u64>() + (1..=m as u64).sum::<u64>();
    assert_eq!(total.into_inner(), expected);
}

// ----- rows of odd-sized values (kept scalar) ---------------------------------

/// A 12-byte value: a row loop over it beside a power-of-two-sized value is
/// kept out of the loop vectoriser (see `QueryData::ODD_SIZED`).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Vec3([f32; 3]);
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Weight(f32);
#[derive(Component)]
struct Pinned;
#[derive(Component)]
struct Tagged;

#[test]
fn query_data_says_whether_it_borrows_odd_and_power_of_two_sizes() {
    use mosaic::QueryData;
    fn sizes<Q: QueryData>() -> (bool, bool) {
        (Q::ODD_SIZED, Q::POW2_SIZED)
    }
    assert_eq!(sizes::<&Vec3>(), (true, false));
    assert_eq!(sizes::<(&mut Vec3, &Vec3)>(), (true, false));
    assert_eq!(sizes::<(&mut Vec3, &Vec3, &Weight)>(), (true, true));
    assert_eq!(
        sizes::<(Entity, Option<&mut Vec3>, &Weight)>(),
        (true, true)
    );
    assert_eq!(
        sizes::<(mosaic::Mut<Vec3>, mosaic::Ref<Weight>)>(),
        (true, true)
    );
    assert_eq!(sizes::<(&mut Weight, Entity, Has<Vec3>)>(), (false, true));
    // A zero-sized marker is neither.
    assert_eq!(sizes::<&Pinned>(), (false, false));
}

/// The scalar-kept loops compute what the others do: a join of an odd-sized
/// column over two matched tables and an excluded one, by `for` and by
/// `for_each`.
#[test]
fn odd_sized_join_iterates_every_matched_row_once() {
    let mut world = World::new();
    let mut expected = Vec::new();
    for i in 0..40u16 {
        let f = f32::from(i);
        let e = match i % 3 {
            0 => world.spawn((Vec3([f, 0.0, 1.0]), Weight(2.0))),
            1 => world.spawn((Vec3([f, 0.0, 1.0]), Weight(2.0), Pinned)),
            _ => world.spawn((Vec3([f, 0.0, 1.0]), Weight(2.0), Tagged)),
        };
        let moved = i % 3 != 1;
        expected.push((
            e,
            if moved {
                [f + 4.0, 4.0, 5.0]
            } else {
                [f, 0.0, 1.0]
            },
        ));
    }
    let mut q = world.query_filtered::<(&mut Vec3, &Weight), Without<Pinned>>();
    for (p, w) in q.iter_mut(&mut world) {
        for x in &mut p.0 {
            *x += w.0;
        }
    }
    q.iter_mut(&mut world).for_each(|(p, w)| {
        for x in &mut p.0 {
            *x += w.0;
        }
    });
    for (e, want) in expected {
        assert_eq!(world.get::<Vec3>(e).unwrap().0, want, "{e:?}");
    }
}

/// `QueryState::get` first tries the archetype its last lookup landed in
/// (checked by id): lookups that alternate between archetypes, in which the
/// same components sit at different column positions, and entities of an
/// archetype made after the state, each read their own values.
#[test]
fn get_alternating_archetypes_reads_each_entitys_own_values() {
    #[derive(Component)]
    struct Lead;
    #[derive(Component)]
    struct Value(u32);
    #[derive(Component)]
    struct Other(u32);
    let mut world = World::new();
    let plain = world.spawn(Value(1));
    let led = world.spawn((Lead, Value(2), Other(200)));
    let mut q = world.query::<&Value>();
    let mut qm = world.query::<(&mut Value, Option<&Other>)>();
    for round in 0..3 {
        assert_eq!(q.get(&world, plain).unwrap().0, 1 + round);
        assert_eq!(q.get(&world, led).unwrap().0, 2 + round);
        assert_eq!(q.get(&world, plain).unwrap().0, 1 + round);
        for e in [plain, led, led, plain] {
            let (value, other) = qm.get_mut(&mut world, e).unwrap();
            assert_eq!(other.map(|o| o.0), (e == led).then_some(200));
            assert_eq!(value.0, if e == led { 2 + round } else { 1 + round });
        }
        for e in [plain, led] {
            qm.get_mut(&mut world, e).unwrap().0.0 += 1;
        }
    }
    let late = world.spawn((Other(300), Value(9)));
    assert_eq!(q.get(&world, late).unwrap().0, 9);
    assert_eq!(q.get(&world, plain).unwrap().0, 4);
    assert_eq!(
        qm.get_mut(&mut world, late).unwrap().1.map(|o| o.0),
        Some(300)
    );
    assert_no_match(world.query::<&Lead>().get(&world, plain), plain);
}
