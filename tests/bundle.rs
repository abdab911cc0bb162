//! Integration tests for bundles: groups of components spawned, inserted and
//! removed together — tuples (up to 16 elements, nested freely),
//! `#[derive(Bundle)]` structs (named, tuple and generic), bundles mixing
//! table and sparse storage, and the refusal of bundles that name one
//! component type twice.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mosaic::prelude::*;

macro_rules! components {
    ($($name:ident),* $(,)?) => {
        $(
            #[derive(Component, Debug, PartialEq, Clone, Copy)]
            struct $name(u32);
        )*
    };
}

components!(
    C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15
);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S0(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S1(u32);

#[derive(Component, Debug, PartialEq, Clone)]
#[component(storage = "sparse")]
struct SName(String);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Marker;

type Sixteen = (
    C0,
    C1,
    C2,
    C3,
    C4,
    C5,
    C6,
    C7,
    C8,
    C9,
    C10,
    C11,
    C12,
    C13,
    C14,
    C15,
);

fn sixteen(base: u32) -> Sixteen {
    (
        C0(base),
        C1(base + 1),
        C2(base + 2),
        C3(base + 3),
        C4(base + 4),
        C5(base + 5),
        C6(base + 6),
        C7(base + 7),
        C8(base + 8),
        C9(base + 9),
        C10(base + 10),
        C11(base + 11),
        C12(base + 12),
        C13(base + 13),
        C14(base + 14),
        C15(base + 15),
    )
}

fn values(t: &Sixteen) -> [u32; 16] {
    [
        t.0.0, t.1.0, t.2.0, t.3.0, t.4.0, t.5.0, t.6.0, t.7.0, t.8.0, t.9.0, t.10.0, t.11.0,
        t.12.0, t.13.0, t.14.0, t.15.0,
    ]
}

// ----- tuples -----------------------------------------------------------------------

#[test]
fn empty_tuple_spawns_an_entity_with_no_components() {
    let mut world = World::new();
    let e = world.spawn(());
    assert!(world.contains(e));
    assert!(!world.has::<C0>(e));
    assert_eq!(world.remove::<()>(e), Ok(()));
    world.insert(e, ()).unwrap();
    assert!(world.contains(e));
    assert_eq!(world.archetype_count(), 1);
}

#[test]
fn sixteen_tuple_spawns_and_removes() {
    let mut world = World::new();
    let e = world.spawn(sixteen(100));
    let other = world.spawn(sixteen(200));
    assert_eq!(*world.get::<C0>(e).unwrap(), C0(100));
    assert_eq!(*world.get::<C7>(e).unwrap(), C7(107));
    assert_eq!(*world.get::<C15>(e).unwrap(), C15(115));

    let mut q = world.query::<(&C0, &C3, &C8, &C15)>();
    let items: Vec<_> = q
        .iter(&world)
        .map(|(a, b, c, d)| (a.0, b.0, c.0, d.0))
        .collect();
    assert_eq!(items, [(100, 103, 108, 115), (200, 203, 208, 215)]);

    let removed: Sixteen = world.remove::<Sixteen>(e).unwrap();
    assert_eq!(values(&removed), values(&sixteen(100)));
    assert_eq!(values(&removed), std::array::from_fn(|i| 100 + i as u32));
    assert!(world.contains(e));
    assert!(!world.has::<C0>(e) && !world.has::<C15>(e));
    assert_eq!(world.get::<C9>(other).copied(), Ok(C9(209)));
    world.check_invariants();
}

#[test]
fn every_tuple_arity_up_to_sixteen_spawns_and_removes() {
    let mut world = World::new();
    macro_rules! check_arity {
        ($($c:ident),+) => {{
            let e = world.spawn(($($c(7),)+));
            $(assert_eq!(*world.get::<$c>(e).unwrap(), $c(7));)+
            let back = world.remove::<($($c,)+)>(e).unwrap();
            // (Tuples past 12 have no PartialEq: match the values instead.)
            assert!(matches!(back, ($($c(7),)+)));
            $(assert!(!world.has::<$c>(e));)+
            // Insert the same tuple back in one go, then remove one by one.
            world.insert(e, ($($c(8),)+)).unwrap();
            $(assert_eq!(world.remove_one::<$c>(e), Ok($c(8)));)+
            world.despawn(e).unwrap();
        }};
    }
    check_arity!(C0);
    check_arity!(C0, C1);
    check_arity!(C0, C1, C2);
    check_arity!(C0, C1, C2, C3);
    check_arity!(C0, C1, C2, C3, C4);
    check_arity!(C0, C1, C2, C3, C4, C5);
    check_arity!(C0, C1, C2, C3, C4, C5, C6);
    check_arity!(C0, C1, C2, C3, C4, C5, C6, C7);
    check_arity!(C0, C1, C2, C3, C4, C5, C6, C7, C8);
    check_arity!(C0, C1, C2, C3, C4, C5, C6, C7, C8, C9);
    check_arity!(C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10);
    check_arity!(C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11);
    check_arity!(C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12);
    check_arity!(C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13);
    check_arity!(
        C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14
    );
    check_arity!(
        C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15
    );
    assert!(world.is_empty());
    world.check_invariants();
}

#[test]
fn tuple_order_does_not_matter() {
    let mut world = World::new();
    let a = world.spawn((C0(1), C1(2), C2(3)));
    let count = world.archetype_count();
    let b = world.spawn((C2(6), C0(4), C1(5)));
    assert_eq!(world.archetype_count(), count, "same set, same archetype");
    assert_eq!(world.remove::<(C1, C2, C0)>(a), Ok((C1(2), C2(3), C0(1))));
    assert_eq!(world.remove::<(C0, C1, C2)>(b), Ok((C0(4), C1(5), C2(6))));
}

#[test]
fn nested_tuples_spawn_and_remove() {
    let mut world = World::new();
    let e = world.spawn(((C0(1), C1(2)), (C2(3), (C3(4),))));
    for (has, what) in [
        (world.has::<C0>(e), "C0"),
        (world.has::<C1>(e), "C1"),
        (world.has::<C2>(e), "C2"),
        (world.has::<C3>(e), "C3"),
    ] {
        assert!(has, "missing {what}");
    }
    assert_eq!(*world.get::<C3>(e).unwrap(), C3(4));

    let removed = world.remove::<((C0, C1), (C2, (C3,)))>(e).unwrap();
    assert_eq!(removed, ((C0(1), C1(2)), (C2(3), (C3(4),))));
    assert!(!world.has::<C0>(e) && !world.has::<C3>(e));

    // A nested bundle may be removed with a differently shaped one.
    world.insert(e, ((C0(5), (C1(6),)), C2(7))).unwrap();
    assert_eq!(world.remove::<(C2, C1, C0)>(e), Ok((C2(7), C1(6), C0(5))));

    // Deep nesting with empty tuples inside.
    let deep = world.spawn(((((C0(9),),),), (), ((), C1(10))));
    assert_eq!(*world.get::<C0>(deep).unwrap(), C0(9));
    assert_eq!(*world.get::<C1>(deep).unwrap(), C1(10));
    assert_eq!(
        world.remove::<((C1,), ((), C0))>(deep),
        Ok(((C1(10),), ((), C0(9))))
    );
    world.check_invariants();
}

#[test]
fn nested_tuples_exceeding_sixteen_components() {
    let mut world = World::new();
    let e = world.spawn((sixteen(0), (S0(16), S1(17), Marker)));
    assert_eq!(*world.get::<C15>(e).unwrap(), C15(15));
    assert_eq!(*world.get::<S1>(e).unwrap(), S1(17));
    let (big, (s0, s1, m)) = world.remove::<(Sixteen, (S0, S1, Marker))>(e).unwrap();
    assert_eq!(values(&big), std::array::from_fn(|i| i as u32));
    assert_eq!((s0, s1, m), (S0(16), S1(17), Marker));
    world.check_invariants();
}

// ----- derived bundles ----------------------------------------------------------------

#[derive(Bundle, Debug, PartialEq)]
struct Body {
    pos: C0,
    vel: C1,
    tag: S0,
}

#[derive(Bundle, Debug, PartialEq)]
struct Pair(C2, C3);

#[derive(Bundle, Debug, PartialEq)]
struct Unit;

#[derive(Bundle, Debug, PartialEq)]
struct Nested {
    body: Body,
    pair: Pair,
    extra: (C4, (SName,)),
}

#[derive(Bundle, Debug, PartialEq)]
struct Generic<T: Component> {
    value: T,
    marker: Marker,
}

#[test]
fn derived_named_struct_spawns_and_removes() {
    let mut world = World::new();
    let e = world.spawn(Body {
        pos: C0(1),
        vel: C1(2),
        tag: S0(3),
    });
    assert_eq!(*world.get::<C0>(e).unwrap(), C0(1));
    assert_eq!(*world.get::<C1>(e).unwrap(), C1(2));
    assert_eq!(*world.get::<S0>(e).unwrap(), S0(3));
    let body: Body = world.remove::<Body>(e).unwrap();
    assert_eq!(
        body,
        Body {
            pos: C0(1),
            vel: C1(2),
            tag: S0(3)
        }
    );
    assert!(!world.has::<C0>(e) && !world.has::<S0>(e));
    // Removing a derived bundle the entity only partly has changes nothing.
    world.insert(e, (C0(5), S0(6))).unwrap();
    assert!(matches!(
        world.remove::<Body>(e),
        Err(ComponentError::MissingComponent { ref component, .. }) if component == "C1"
    ));
    assert_eq!(*world.get::<C0>(e).unwrap(), C0(5));
    assert_eq!(*world.get::<S0>(e).unwrap(), S0(6));
    world.check_invariants();
}

#[test]
fn derived_tuple_struct_spawns_and_removes() {
    let mut world = World::new();
    let e = world.spawn(Pair(C2(1), C3(2)));
    assert_eq!(*world.get::<C2>(e).unwrap(), C2(1));
    assert_eq!(*world.get::<C3>(e).unwrap(), C3(2));
    assert_eq!(world.remove::<Pair>(e), Ok(Pair(C2(1), C3(2))));
    world.insert(e, Pair(C2(3), C3(4))).unwrap();
    assert_eq!(world.remove::<(C3, C2)>(e), Ok((C3(4), C2(3))));
}

#[test]
fn derived_unit_struct_is_an_empty_bundle() {
    let mut world = World::new();
    let e = world.spawn(Unit);
    assert!(world.contains(e));
    assert_eq!(world.archetype_count(), 1);
    assert_eq!(world.remove::<Unit>(e), Ok(Unit));
}

#[test]
fn derived_bundles_nest() {
    let mut world = World::new();
    let make = |i: u32| Nested {
        body: Body {
            pos: C0(i),
            vel: C1(i + 1),
            tag: S0(i + 2),
        },
        pair: Pair(C2(i + 3), C3(i + 4)),
        extra: (C4(i + 5), (SName(format!("n{i}")),)),
    };
    let es = world.spawn_batch((0..10).map(|i| make(i * 10)));
    let e = es[3];
    assert_eq!(*world.get::<C4>(e).unwrap(), C4(35));
    assert_eq!(world.get::<SName>(e).unwrap().0, "n30");
    assert_eq!(world.remove::<Nested>(e), Ok(make(30)));
    // Just the inner derived bundle.
    assert_eq!(
        world.remove::<Pair>(es[4]),
        Ok(Pair(C2(43), C3(44))),
        "a field bundle removes on its own"
    );
    assert!(world.has::<C0>(es[4]) && world.has::<SName>(es[4]));
    for (i, &x) in es.iter().enumerate() {
        if i != 3 {
            assert_eq!(*world.get::<S0>(x).unwrap(), S0(i as u32 * 10 + 2));
        }
    }
    world.check_invariants();
}

#[test]
fn derived_generic_bundle() {
    let mut world = World::new();
    let a = world.spawn(Generic {
        value: C5(1),
        marker: Marker,
    });
    let b = world.spawn(Generic {
        value: S1(2),
        marker: Marker,
    });
    assert_eq!(*world.get::<C5>(a).unwrap(), C5(1));
    assert_eq!(*world.get::<S1>(b).unwrap(), S1(2));
    assert!(world.has::<Marker>(a) && world.has::<Marker>(b));
    assert_eq!(
        world.remove::<Generic<S1>>(b),
        Ok(Generic {
            value: S1(2),
            marker: Marker
        })
    );
    assert!(world.remove::<Generic<C5>>(b).is_err());
    assert_eq!(
        world.remove::<Generic<C5>>(a),
        Ok(Generic {
            value: C5(1),
            marker: Marker
        })
    );
}

// ----- mixed storage ---------------------------------------------------------------

#[test]
fn mixed_table_and_sparse_bundles() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..20)
        .map(|i| world.spawn((S0(i), C0(i), SName(format!("e{i}")), C1(i * 2), S1(i * 3))))
        .collect();
    // Only table components decide the archetype.
    let archetypes = world.archetype_count();
    assert_eq!(archetypes, 2);

    // Removing only sparse components keeps the archetype.
    for (i, &e) in es.iter().enumerate().step_by(2) {
        let i = i as u32;
        assert_eq!(
            world.remove::<(S1, SName)>(e),
            Ok((S1(i * 3), SName(format!("e{i}"))))
        );
    }
    assert_eq!(world.archetype_count(), archetypes);
    // Removing a mix moves the entity.
    for (i, &e) in es.iter().enumerate().skip(1).step_by(2) {
        let i = i as u32;
        assert_eq!(world.remove::<(C1, S0)>(e), Ok((C1(i * 2), S0(i))));
    }
    assert_eq!(world.archetype_count(), archetypes + 1);

    for (i, &e) in es.iter().enumerate() {
        let i = i as u32;
        assert_eq!(*world.get::<C0>(e).unwrap(), C0(i));
        if i % 2 == 0 {
            assert_eq!(*world.get::<S0>(e).unwrap(), S0(i));
            assert_eq!(*world.get::<C1>(e).unwrap(), C1(i * 2));
            assert!(!world.has::<S1>(e) && !world.has::<SName>(e));
        } else {
            assert!(!world.has::<S0>(e) && !world.has::<C1>(e));
            assert_eq!(*world.get::<S1>(e).unwrap(), S1(i * 3));
            assert_eq!(world.get::<SName>(e).unwrap().0, format!("e{i}"));
        }
    }

    let mut q = world.query::<(Entity, &C0, &S1)>();
    let mut odd: Vec<u32> = q
        .iter(&world)
        .map(|(_, c, s)| {
            assert_eq!(s.0, c.0 * 3);
            c.0
        })
        .collect();
    odd.sort_unstable();
    assert_eq!(odd, (1..20).step_by(2).collect::<Vec<u32>>());

    // Insert a mixed bundle that replaces some and adds others.
    world
        .insert(es[0], (S1(100), C1(101), S0(102), C2(103)))
        .unwrap();
    assert_eq!(*world.get::<S1>(es[0]).unwrap(), S1(100));
    assert_eq!(*world.get::<C1>(es[0]).unwrap(), C1(101));
    assert_eq!(*world.get::<S0>(es[0]).unwrap(), S0(102));
    assert_eq!(*world.get::<C2>(es[0]).unwrap(), C2(103));
    world.check_invariants();
}

#[test]
fn sparse_only_bundle() {
    let mut world = World::new();
    let e = world.spawn((S0(1), S1(2)));
    assert_eq!(world.archetype_count(), 1, "only the empty archetype");
    assert_eq!(world.remove::<(S1, S0)>(e), Ok((S1(2), S0(1))));
    assert!(world.contains(e));
}

// ----- duplicates ----------------------------------------------------------------

#[test]
#[should_panic(expected = "more than once")]
fn duplicate_in_spawn_panics() {
    let mut world = World::new();
    world.spawn((C0(1), C0(2)));
}

#[test]
#[should_panic(expected = "contains component `C1` more than once")]
fn duplicate_names_the_component() {
    let mut world = World::new();
    world.spawn((C0(1), C1(2), C2(3), C1(4)));
}

#[test]
#[should_panic(expected = "more than once")]
fn duplicate_in_nested_tuple_panics() {
    let mut world = World::new();
    world.spawn(((C0(1), C1(2)), (C2(3), (C0(4),))));
}

#[test]
#[should_panic(expected = "contains component `S0` more than once")]
fn duplicate_sparse_panics() {
    let mut world = World::new();
    world.spawn((S0(1), C0(2), S0(3)));
}

#[derive(Bundle)]
struct Twice {
    a: C0,
    b: C0,
}

#[test]
#[should_panic(expected = "more than once")]
fn duplicate_in_derived_bundle_panics() {
    let mut world = World::new();
    world.spawn(Twice { a: C0(1), b: C0(2) });
}

#[test]
#[should_panic(expected = "more than once")]
fn duplicate_in_insert_panics() {
    let mut world = World::new();
    let e = world.spawn(C0(0));
    let _ = world.insert(e, (C1(1), C1(2)));
}

#[test]
#[should_panic(expected = "more than once")]
fn duplicate_in_remove_panics() {
    let mut world = World::new();
    let e = world.spawn(C0(0));
    let _ = world.remove::<(C0, C0)>(e);
}

#[test]
#[should_panic(expected = "more than once")]
fn duplicate_in_spawn_batch_panics() {
    let mut world = World::new();
    world.spawn_batch((0..3).map(|i| (C0(i), (C0(i),))));
}

#[test]
fn duplicate_is_refused_every_time() {
    let mut world = World::new();
    for _ in 0..3 {
        let result = catch_unwind(AssertUnwindSafe(|| world.spawn((C0(2), C0(3)))));
        assert!(
            result.is_err(),
            "a duplicate bundle must panic on every use"
        );
    }
    let e = world.spawn(C0(9));
    for _ in 0..2 {
        let result = catch_unwind(AssertUnwindSafe(|| world.insert(e, (S0(4), S0(5)))));
        assert!(
            result.is_err(),
            "a duplicate bundle must panic on every use"
        );
    }
}

#[test]
fn refused_duplicate_spawn_leaves_the_world_consistent() {
    let mut world = World::new();
    let keep = world.spawn((C0(1), S0(1)));
    let result = catch_unwind(AssertUnwindSafe(|| world.spawn((C0(2), C0(3)))));
    assert!(result.is_err());
    assert_eq!(world.len(), 1, "the refused spawn created no entity");
    world.check_invariants();
    // The next spawn gets the next unused index: nothing was leaked.
    let e = world.spawn(C0(9));
    assert_eq!(e.index(), keep.index() + 1);
    assert_eq!(*world.get::<C0>(e).unwrap(), C0(9));
    assert_eq!(*world.get::<C0>(keep).unwrap(), C0(1));
    assert_eq!(world.len(), 2);
    world.check_invariants();
}

#[test]
fn refused_duplicate_insert_remove_and_batch_leave_the_world_consistent() {
    let mut world = World::new();
    let keep = world.spawn((C0(1), S0(1)));
    let archetypes = world.archetype_count();
    let r = catch_unwind(AssertUnwindSafe(|| {
        world.insert(keep, (S0(4), C1(0), S0(5)))
    }));
    assert!(r.is_err());
    let r = catch_unwind(AssertUnwindSafe(|| world.insert(keep, (C0(4), C0(5)))));
    assert!(r.is_err());
    let r = catch_unwind(AssertUnwindSafe(|| world.remove::<(C0, S0, C0)>(keep)));
    assert!(r.is_err());
    let r = catch_unwind(AssertUnwindSafe(|| {
        world.spawn_batch((0..5).map(|i| (C2(i), C2(i))))
    }));
    assert!(r.is_err());
    assert_eq!(world.len(), 1);
    assert_eq!(world.archetype_count(), archetypes);
    assert_eq!(*world.get::<C0>(keep).unwrap(), C0(1));
    assert_eq!(*world.get::<S0>(keep).unwrap(), S0(1));
    assert!(!world.has::<C1>(keep));
    world.check_invariants();
}

/// `world.insert(e, B)`, `world.insert(e, (B,))`, `remove::<B>` and
/// `remove::<(B,)>` of one component take `insert_one`/`remove_one`'s
/// path (#40: the bundle path cost a sparse toggle 3×): the same results
/// and errors as the bundle path gave, for sparse and table storage.
#[test]
fn one_component_insert_and_remove_in_every_form_agree() {
    fn check<B: Component + PartialEq + std::fmt::Debug + Clone>(
        make: impl Fn(u32) -> B,
        name: &str,
    ) {
        let mut world = World::new();
        let e = world.spawn(C0(1));
        // Insert (adds), insert again (replaces), in each form.
        world.insert(e, make(1)).unwrap();
        assert_eq!(world.get::<B>(e).unwrap(), &make(1));
        world.insert(e, (make(2),)).unwrap();
        assert_eq!(world.get::<B>(e).unwrap(), &make(2));
        world.entity_mut(e).unwrap().insert(make(3)).unwrap();
        assert_eq!(world.get::<B>(e).unwrap(), &make(3));
        assert_eq!(world.get::<C0>(e), Ok(&C0(1)), "the rest is kept");
        // Remove in each form: the value comes back, then the error names B.
        assert_eq!(world.remove::<B>(e), Ok(make(3)));
        let missing = world.remove::<B>(e).unwrap_err();
        assert_eq!(
            missing.to_string(),
            format!("entity {e:?} has no component `{name}`")
        );
        assert_eq!(world.remove::<(B,)>(e), Err(missing.clone()));
        assert_eq!(world.remove_one::<B>(e), Err(missing));
        world.insert(e, (make(4),)).unwrap();
        assert_eq!(world.remove::<(B,)>(e), Ok((make(4),)));
        world.insert(e, make(5)).unwrap();
        assert_eq!(world.entity_mut(e).unwrap().remove::<B>(), Ok(make(5)));
        assert!(!world.has::<B>(e));
        // A stale handle: refused, nothing changes, the value is dropped.
        world.despawn(e).unwrap();
        assert_eq!(world.insert(e, make(6)), Err(EntityError::NoSuchEntity(e)));
        assert_eq!(
            world.insert(e, (make(6),)),
            Err(EntityError::NoSuchEntity(e))
        );
        assert_eq!(world.remove::<B>(e), Err(ComponentError::NoSuchEntity(e)));
        assert_eq!(
            world.remove::<(B,)>(e),
            Err(ComponentError::NoSuchEntity(e))
        );
        assert!(world.is_empty());
        world.check_invariants();
    }
    check(S0, "S0");
    check(C1, "C1");
}

/// The single-component forms still announce: hooks and observers see
/// `world.insert(e, B)` / `remove::<(B,)>` of a sparse or table component
/// as they saw the bundle path's.
#[test]
fn one_component_insert_and_remove_forms_are_observed() {
    fn check<B: Component>(make: impl Fn(u32) -> B) {
        #[derive(Resource, Default)]
        struct Seen(Vec<&'static str>);
        let mut world = World::new();
        world.init_resource::<Seen>();
        world.observe(|_: Trigger<OnAdd<B>>, mut w: DeferredWorld| {
            w.resource_mut::<Seen>().0.push("add")
        });
        world.observe(|_: Trigger<OnInsert<B>>, mut w: DeferredWorld| {
            w.resource_mut::<Seen>().0.push("insert")
        });
        world.observe(|_: Trigger<OnRemove<B>>, mut w: DeferredWorld| {
            w.resource_mut::<Seen>().0.push("remove")
        });
        let e = world.spawn(C0(0));
        world.insert(e, make(1)).unwrap();
        world.insert(e, (make(2),)).unwrap();
        world.remove::<(B,)>(e).unwrap();
        world.insert(e, make(3)).unwrap();
        world.remove::<B>(e).unwrap();
        assert_eq!(
            world.resource::<Seen>().0,
            [
                "add", "insert", "insert", "remove", "add", "insert", "remove"
            ]
        );
    }
    check(S0);
    check(C1);
}

/// `Disabled` and `ChildOf` through the single-component forms: the marker
/// hides and shows the entity, and a one-element tuple holding `ChildOf`
/// still makes (and, removed, unmakes) the edge.
#[test]
fn one_component_forms_of_disabled_and_child_of() {
    let mut world = World::new();
    let e = world.spawn(C0(0));
    let mut q = world.query::<&C0>();
    world.insert(e, (Disabled,)).unwrap();
    assert_eq!(q.iter(&world).count(), 0);
    assert!(world.is_disabled(e));
    world.remove::<Disabled>(e).unwrap();
    assert_eq!(q.iter(&world).count(), 1);
    world.insert(e, Disabled).unwrap();
    world.remove::<(Disabled,)>(e).unwrap();
    assert!(!world.is_disabled(e));
    assert_eq!(world.disabled_count(), 0);

    let parent = world.spawn(());
    world.insert(e, (ChildOf(parent),)).unwrap();
    assert_eq!(world.children(parent), [e]);
    world.remove::<(ChildOf,)>(e).unwrap();
    assert!(world.children(parent).is_empty());
    assert_eq!(world.parent(e), None);
    world.check_invariants();
}

/// Two sparse components toggled in turn (two status effects): each
/// insert and remove finds its own set (the one remembered before the last
/// is swapped back in), and nothing is mixed up between them.
#[test]
fn two_sparse_components_toggled_in_turn_keep_their_values() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..10).map(|i| world.spawn(C0(i))).collect();
    for round in 0..3u32 {
        for (i, &e) in es.iter().enumerate() {
            world.insert_one(e, S0(round * 100 + i as u32)).unwrap();
            world.insert(e, S1(round * 1000 + i as u32)).unwrap();
        }
        for (i, &e) in es.iter().enumerate() {
            assert_eq!(world.remove_one::<S0>(e), Ok(S0(round * 100 + i as u32)));
            assert_eq!(world.remove::<S1>(e), Ok(S1(round * 1000 + i as u32)));
            assert!(world.remove_one::<S0>(e).is_err());
        }
    }
    assert_eq!(world.sparse_set_len(world.component_id::<S0>().unwrap()), 0);
    world.check_invariants();
}
