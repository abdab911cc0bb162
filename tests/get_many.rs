//! Integration tests for several items at once: `World::get_many_mut`,
//! `QueryState::get_many_mut` and `QueryState::get_many`. Distinct entities
//! give disjoint `&mut` (table rows in one or several archetypes, sparse
//! entries); a repeated entity is refused with `AliasedMutability` before
//! any reference is made; a failure for any entity hands out nothing and
//! stamps no change tick. Run under Miri (see the guide's Soundness
//! chapter) to check the references never alias.

use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct A(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct B(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S(u32);

#[test]
fn world_get_many_mut_gives_disjoint_references() {
    let mut world = World::new();
    let a = world.spawn(A(1));
    let b = world.spawn((A(2), B(0))); // another archetype
    let c = world.spawn(A(3));
    let [x, y, z] = world.get_many_mut::<A, 3>([c, a, b]).unwrap();
    std::mem::swap(x, y);
    z.0 += x.0 + y.0;
    assert_eq!(world.get::<A>(a), Ok(&A(3)));
    assert_eq!(world.get::<A>(c), Ok(&A(1)));
    assert_eq!(world.get::<A>(b), Ok(&A(6)));
    let [] = world.get_many_mut::<A, 0>([]).unwrap();
    world.check_invariants();
}

#[test]
fn world_get_many_mut_refuses_duplicates() {
    let mut world = World::new();
    let a = world.spawn(A(1));
    let b = world.spawn(A(2));
    assert_eq!(
        world.get_many_mut::<A, 2>([a, a]).unwrap_err(),
        QueryEntityError::AliasedMutability(a)
    );
    let err = world.get_many_mut::<A, 3>([a, b, b]).unwrap_err();
    assert_eq!(err, QueryEntityError::AliasedMutability(b));
    assert_eq!(
        err.to_string(),
        "entity 1v1 was named more than once; mutable items must be for distinct entities"
    );
    assert_eq!(world.get::<A>(a), Ok(&A(1)));
}

#[test]
fn world_get_many_mut_reports_stale_and_missing() {
    let mut world = World::new();
    let a = world.spawn(A(1));
    let gone = world.spawn(A(2));
    let bare = world.spawn(B(0));
    world.despawn(gone).unwrap();
    assert_eq!(
        world.get_many_mut::<A, 2>([a, gone]).unwrap_err(),
        QueryEntityError::NoSuchEntity(gone)
    );
    assert!(matches!(
        world.get_many_mut::<A, 2>([a, bare]),
        Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == bare
    ));
    // A type the world never saw: no entity matches.
    assert!(world.get_many_mut::<S, 1>([a]).is_err());
}

#[test]
fn sparse_components_many_mut() {
    let mut world = World::new();
    let ents: Vec<Entity> = (0..4).map(|i| world.spawn((A(i), S(i * 10)))).collect();
    let without = world.spawn(A(9));
    let mut q = world.query::<(&A, &mut S)>();
    let [(a0, s0), (a3, s3)] = q.get_many_mut(&mut world, [ents[0], ents[3]]).unwrap();
    s0.0 += a3.0;
    s3.0 += a0.0;
    assert!(matches!(
        q.get_many_mut(&mut world, [ents[1], without]),
        Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == without
    ));
    assert_eq!(
        q.get_many_mut(&mut world, [ents[2], ents[2]]).err(),
        Some(QueryEntityError::AliasedMutability(ents[2]))
    );
    assert_eq!(world.get::<S>(ents[0]), Ok(&S(3)));
    assert_eq!(world.get::<S>(ents[3]), Ok(&S(30)));
    assert_eq!(world.get::<S>(ents[1]), Ok(&S(10)));
}

#[test]
fn failed_get_many_mut_stamps_no_change() {
    let mut world = World::new();
    let a = world.spawn(A(1));
    let b = world.spawn(A(2));
    let no_a = world.spawn(B(0));
    let mut changed = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed.iter(&world).count(), 2); // first run sees all
    let mut q = world.query::<&mut A>();
    assert!(q.get_many_mut(&mut world, [a, b, no_a]).is_err());
    assert!(q.get_many_mut(&mut world, [b, a, b]).is_err());
    assert_eq!(changed.iter(&world).count(), 0, "nothing was handed out");
    let [x] = q.get_many_mut(&mut world, [b]).unwrap();
    x.0 = 7;
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [b]);
}

/// A disabled entity fails the check made before any item is handed out
/// (it used to pass it and fail only at its fetch, after the entities
/// before it had been fetched and marked changed).
#[test]
fn get_many_mut_with_a_disabled_entity_stamps_no_change() {
    let mut world = World::new();
    let a = world.spawn(A(1));
    let b = world.spawn(A(2));
    world.insert_one(b, Disabled).unwrap();
    let mut changed = world.query_filtered::<Entity, Changed<A>>();
    changed.iter(&world).count();
    let mut q = world.query::<&mut A>();
    assert!(matches!(
        q.get_many_mut(&mut world, [a, b]),
        Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == b
    ));
    assert_eq!(changed.iter(&world).count(), 0, "nothing was handed out");
}

#[test]
fn filtered_get_many_mut_honours_filter() {
    let mut world = World::new();
    let plain = world.spawn(A(1));
    let tagged = world.spawn((A(2), B(0)));
    let other = world.spawn((A(3), B(0)));
    let mut q = world.query_filtered::<&mut A, With<B>>();
    assert!(matches!(
        q.get_many_mut(&mut world, [tagged, plain]),
        Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == plain
    ));
    let [x, y] = q.get_many_mut(&mut world, [other, tagged]).unwrap();
    std::mem::swap(&mut x.0, &mut y.0);
    assert_eq!(world.get::<A>(tagged), Ok(&A(3)));
}

#[test]
fn read_only_get_many_allows_repeats() {
    let mut world = World::new();
    let a = world.spawn((A(1), S(5)));
    let b = world.spawn(A(2));
    let mut q = world.query::<(Entity, &A, Option<&S>)>();
    let [x, y, z] = q.get_many(&world, [a, b, a]).unwrap();
    assert_eq!((x.0, x.1.0, x.2), (a, 1, Some(&S(5))));
    assert_eq!((y.1.0, y.2), (2, None));
    assert_eq!(x.1 as *const A, z.1 as *const A);
    world.despawn(b).unwrap();
    assert_eq!(
        q.get_many(&world, [a, b]).unwrap_err(),
        QueryEntityError::NoSuchEntity(b)
    );
}
