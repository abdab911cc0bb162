//! Integration tests for the `Ref<T>` query item: per item, `is_added` and
//! `is_changed` agree with what the `Added<T>` and `Changed<T>` filters
//! select, for table and sparse storage, through `iter`, `get` and a
//! system's `Query`; `Ref<T>` counts as a read in access checks.

use mosaic::Ref;
use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct A(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Other;

/// Entities `Ref<C>` reports as (added, changed) in one run of `q`, sorted.
fn flags<C: Component>(
    q: &mut QueryState<(Entity, Ref<'static, C>)>,
    world: &World,
) -> (Vec<Entity>, Vec<Entity>) {
    let (mut added, mut changed) = (Vec::new(), Vec::new());
    for (e, r) in q.iter(world) {
        if r.is_added() {
            added.push(e);
        }
        if r.is_changed() {
            changed.push(e);
        }
    }
    added.sort();
    changed.sort();
    (added, changed)
}

fn sorted(mut v: Vec<Entity>) -> Vec<Entity> {
    v.sort();
    v
}

/// Runs the same steps against `Ref<C>` and the `Added`/`Changed` filters
/// and checks every run agrees.
fn agrees_with_filters<C: Component + Copy>(make: fn(u32) -> C, bump: fn(&mut C)) {
    let mut world = World::new();
    let first: Vec<Entity> = (0..4).map(|i| world.spawn((make(i), Other))).collect();
    let mut refs = world.query::<(Entity, Ref<C>)>();
    let mut added = world.query_filtered::<Entity, Added<C>>();
    let mut changed = world.query_filtered::<Entity, Changed<C>>();
    let mut check = |world: &World, expect_added: &[Entity], expect_changed: &[Entity]| {
        let (a, c) = flags(&mut refs, world);
        assert_eq!(a, sorted(added.iter(world).collect()));
        assert_eq!(c, sorted(changed.iter(world).collect()));
        assert_eq!(a, sorted(expect_added.to_vec()));
        assert_eq!(c, sorted(expect_changed.to_vec()));
    };
    check(&world, &first, &first); // first run: everything is new
    check(&world, &[], &[]);
    let fresh = world.spawn(make(9));
    bump(&mut *world.get_mut::<C>(first[1]).unwrap());
    world.insert(first[2], make(7)).unwrap(); // replacing counts as a change
    check(&world, &[fresh], &[fresh, first[1], first[2]]);
    world.remove::<C>(first[3]).unwrap();
    world.insert(first[3], make(3)).unwrap(); // re-added
    check(&world, &[first[3]], &[first[3]]);
    check(&world, &[], &[]);
}

#[test]
fn ref_agrees_with_added_and_changed_filters_table() {
    agrees_with_filters(A, |a| a.0 += 1);
}

#[test]
fn ref_agrees_with_added_and_changed_filters_sparse() {
    agrees_with_filters(S, |s| s.0 += 1);
}

#[test]
fn ref_reads_the_value() {
    let mut world = World::new();
    let e = world.spawn((A(3), S(4)));
    let bare = world.spawn(A(1));
    let mut q = world.query::<(Ref<A>, Ref<S>)>();
    let (a, s) = q.get(&world, e).unwrap();
    assert_eq!((a.0, s.0), (3, 4));
    assert_eq!(*a, A(3));
    assert_eq!(a.as_ref(), &A(3));
    assert!(format!("{a:?}").contains("A(3)"));
    // A sparse Ref requires the component, like `&S`.
    assert!(matches!(
        q.get(&world, bare),
        Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == bare
    ));
    assert_eq!(q.iter(&world).count(), 1);
    let mut opt = world.query::<Option<Ref<S>>>();
    assert_eq!(opt.iter(&world).filter(|s| s.is_some()).count(), 1);
}

#[test]
fn ref_get_does_not_start_a_run() {
    let mut world = World::new();
    let e = world.spawn(A(1));
    let mut q = world.query::<Ref<A>>();
    assert_eq!(q.iter(&world).count(), 1);
    world.get_mut::<A>(e).unwrap().0 = 2;
    // `get` compares against the last run and does not become one.
    assert!(q.get(&world, e).unwrap().is_changed());
    assert!(q.get(&world, e).unwrap().is_changed());
    assert!(q.iter(&world).all(|r| r.is_changed()));
    assert!(!q.get(&world, e).unwrap().is_changed());
}

#[test]
fn ref_in_a_system_sees_changes_since_its_last_run() {
    #[derive(Default)]
    struct Seen(Vec<(u32, bool, bool)>);
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let e = world.spawn(A(1));
    let mut schedule = Schedule::new();
    schedule.add_system("watch", |q: Query<Ref<A>>, mut seen: ResMut<Seen>| {
        for a in q.iter() {
            seen.0.push((a.0, a.is_added(), a.is_changed()));
        }
    });
    schedule.run(&mut world);
    schedule.run(&mut world);
    world.get_mut::<A>(e).unwrap().0 = 2;
    schedule.run(&mut world);
    assert_eq!(
        world.resource::<Seen>().0,
        [(1, true, true), (1, false, false), (2, false, true)]
    );
}

#[test]
#[should_panic(expected = "borrows component `A` mutably")]
fn ref_and_mut_of_the_same_component_alias() {
    let mut world = World::new();
    let _ = world.query::<(&mut A, Ref<A>)>();
}
