//! `#[derive(QueryData)]` and `#[derive(QueryFilter)]`: named-field
//! queries and filters. Each derived struct is checked against the tuple
//! it stands for (same items, same entities, same access), in every place a
//! query runs: `iter`, `iter_mut`, `get`, `get_mut`, `get_many_mut`,
//! systems, change detection, disabled entities, sparse components (the
//! dense walk), and the aliasing check.

use mosaic::prelude::*;
use mosaic::{ReadOnlyQueryData, Ref};

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Position(f32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Velocity(f32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Frozen;
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Health(u32);
#[derive(Component, Debug, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[component(storage = "sparse")]
struct Tag(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Score(u32);

// ----- derived data -------------------------------------------------------------

#[derive(QueryData)]
struct Mover<'w> {
    pos: &'w mut Position,
    vel: &'w Velocity,
}

#[derive(QueryData, Debug, PartialEq)]
struct Status<'w> {
    entity: Entity,
    pos: &'w Position,
    vel: Option<&'w Velocity>,
    frozen: Has<Frozen>,
}

/// A tuple struct.
#[derive(QueryData, Debug, PartialEq)]
struct PosVel<'w>(&'w Position, &'w mut Velocity);

/// No references, so no lifetime.
#[derive(QueryData, Debug, PartialEq)]
struct Flags {
    entity: Entity,
    frozen: Has<Frozen>,
    tagged: Has<Tag>,
}

/// A unit struct matches everything and yields itself.
#[derive(QueryData, Debug, PartialEq)]
struct Anything;

/// Nested tuples and a nested derived struct.
#[derive(QueryData)]
struct Nested<'w> {
    entity: Entity,
    pair: (&'w Health, (Option<&'w Tag>, Entity)),
    mover: Mover<'w>,
}

/// `Has<T>` inside a tuple and an `Option`, and read-only derived structs
/// nested.
#[derive(QueryData, Debug, PartialEq)]
struct Wrapped<'w> {
    marks: (Entity, Has<Frozen>, (Has<Tag>,)),
    maybe: Option<(&'w Velocity, Has<Frozen>)>,
    flags: Flags,
    status: Option<Status<'w>>,
}

/// Generic over the component it writes.
#[derive(QueryData)]
struct Writes<'w, T: Component> {
    entity: Entity,
    value: &'w mut T,
}

/// Change ticks through `Ref`.
#[derive(QueryData)]
struct Watched<'w> {
    entity: Entity,
    health: Ref<'w, Health>,
}

/// Sparse components only: a dense query (walks the smallest set).
#[derive(QueryData, Debug, PartialEq)]
struct Sparse<'w> {
    entity: Entity,
    tag: &'w mut Tag,
    score: &'w Score,
}

// ----- derived filters -----------------------------------------------------------

#[derive(QueryFilter)]
struct Movable {
    _moves: With<Velocity>,
    _not_frozen: Without<Frozen>,
}

#[derive(QueryFilter)]
struct HealthyOrTagged(Or<(With<Health>, With<Tag>)>);

/// A filter made of another derived filter and a change filter.
#[derive(QueryFilter)]
struct MovedMovable {
    _movable: Movable,
    _changed: Changed<Position>,
}

#[derive(QueryFilter)]
struct Having<T: Component> {
    _has: With<T>,
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn ids<T, Q: ReadOnlyQueryData, F: QueryFilter>(
    world: &mut World,
    f: impl Fn(Q::Item<'_>) -> T,
) -> Vec<T>
where
    T: Ord,
{
    let mut q = world.query_filtered::<Q, F>();
    sorted(q.iter(world).map(f).collect())
}

fn world() -> (World, [Entity; 4]) {
    let mut world = World::new();
    let a = world.spawn((Position(0.0), Velocity(1.0)));
    let b = world.spawn((Position(10.0), Velocity(2.0), Frozen));
    let c = world.spawn(Position(20.0));
    let d = world.spawn((Position(30.0), Velocity(3.0), Health(7), Tag(1)));
    (world, [a, b, c, d])
}

// ----- tests -----------------------------------------------------------------------

#[test]
fn the_issue_example_moves() {
    let (mut world, [a, b, c, d]) = world();
    let mut q = world.query::<Mover>();
    for m in q.iter_mut(&mut world) {
        m.pos.0 += m.vel.0;
    }
    let pos = |world: &World, e| world.get::<Position>(e).unwrap().0;
    assert_eq!(
        [
            pos(&world, a),
            pos(&world, b),
            pos(&world, c),
            pos(&world, d)
        ],
        [1.0, 12.0, 20.0, 33.0]
    );
}

#[test]
fn read_only_struct_iterates_with_a_shared_world() {
    let (mut world, [a, b, c, d]) = world();
    let mut q = world.query::<Status>();
    let mut t = world.query::<(Entity, &Position, Option<&Velocity>, Has<Frozen>)>();
    let mut seen: Vec<_> = q.iter(&world).collect();
    seen.sort_by_key(|s| s.entity);
    assert_eq!(
        seen,
        [
            Status {
                entity: a,
                pos: &Position(0.0),
                vel: Some(&Velocity(1.0)),
                frozen: false.into(),
            },
            Status {
                entity: b,
                pos: &Position(10.0),
                vel: Some(&Velocity(2.0)),
                frozen: true.into(),
            },
            Status {
                entity: c,
                pos: &Position(20.0),
                vel: None,
                frozen: false.into(),
            },
            Status {
                entity: d,
                pos: &Position(30.0),
                vel: Some(&Velocity(3.0)),
                frozen: false.into(),
            },
        ]
    );
    // The same entities and values as the tuple it stands for.
    let mut tuple: Vec<_> = t.iter(&world).collect();
    tuple.sort_by_key(|t| t.0);
    let seen: Vec<_> = seen
        .iter()
        .map(|s| (s.entity, s.pos, s.vel, s.frozen.get()))
        .collect();
    assert_eq!(seen, tuple);
    // `get` on a shared world.
    let s = q.get(&world, b).unwrap();
    assert!(*s.frozen && s.frozen == true);
    assert_eq!(format!("{:?}", s.frozen), "Has<Frozen>(true)");
}

#[test]
fn get_and_get_mut_yield_the_struct() {
    let (mut world, [a, _, c, _]) = world();
    let mut q = world.query::<PosVel>();
    assert_eq!(
        q.get_mut(&mut world, a).unwrap(),
        PosVel(&Position(0.0), &mut Velocity(1.0))
    );
    q.get_mut(&mut world, a).unwrap().1.0 = 9.0;
    assert_eq!(world.get::<Velocity>(a), Ok(&Velocity(9.0)));
    // `c` has no Velocity: the same error as the tuple gives.
    let err = q.get_mut(&mut world, c).map(|_| ()).unwrap_err();
    assert_eq!(
        err,
        QueryEntityError::QueryDoesNotMatch {
            entity: c,
            query: "PosVel<'_>".to_string()
        }
    );
}

#[test]
fn struct_without_lifetime_and_unit_struct() {
    let (mut world, [a, b, c, d]) = world();
    let flags = ids::<_, Flags, ()>(&mut world, |f| (f.entity, f.frozen.get(), *f.tagged));
    assert_eq!(
        flags,
        [
            (a, false, false),
            (b, true, false),
            (c, false, false),
            (d, false, true)
        ]
    );
    let mut q = world.query::<Anything>();
    assert_eq!(q.iter(&world).count(), 4);
    assert_eq!(q.get(&world, a), Ok(Anything));
}

#[test]
fn nested_tuples_and_structs() {
    let (mut world, [.., d]) = world();
    let e = world.spawn((Position(1.0), Velocity(1.0), Health(3)));
    let mut q = world.query::<Nested>();
    let mut seen = Vec::new();
    for n in q.iter_mut(&mut world) {
        let (health, (tag, again)) = n.pair;
        assert_eq!(again, n.entity);
        n.mover.pos.0 += n.mover.vel.0 * health.0 as f32;
        seen.push((n.entity, tag.copied()));
    }
    assert_eq!(sorted(seen), sorted(vec![(d, Some(Tag(1))), (e, None)]));
    assert_eq!(world.get::<Position>(d), Ok(&Position(51.0)));
    assert_eq!(world.get::<Position>(e), Ok(&Position(4.0)));
}

#[test]
fn has_in_tuples_and_options_and_nested_read_only_structs() {
    let (mut world, [a, b, c, d]) = world();
    let mut q = world.query::<Wrapped>();
    let mut seen: Vec<_> = q.iter(&world).collect();
    seen.sort_by_key(|w| w.marks.0);
    let marks: Vec<_> = seen
        .iter()
        .map(|w| (w.marks.0, *w.marks.1, *w.marks.2.0))
        .collect();
    assert_eq!(
        marks,
        [
            (a, false, false),
            (b, true, false),
            (c, false, false),
            (d, false, true)
        ]
    );
    let maybe: Vec<_> = seen
        .iter()
        .map(|w| w.maybe.map(|(v, f)| (v.0, f.get())))
        .collect();
    assert_eq!(
        maybe,
        [
            Some((1.0, false)),
            Some((2.0, true)),
            None,
            Some((3.0, false))
        ]
    );
    assert!(seen.iter().all(|w| w.flags.entity == w.marks.0));
    assert_eq!(seen[1].flags.frozen, true);
    let status = seen[3].status.as_ref().unwrap();
    assert_eq!((status.entity, status.pos), (d, &Position(30.0)));
}

#[test]
fn generic_struct() {
    let (mut world, [.., d]) = world();
    let mut q = world.query::<Writes<Health>>();
    for w in q.iter_mut(&mut world) {
        assert_eq!(w.entity, d);
        w.value.0 += 1;
    }
    assert_eq!(world.get::<Health>(d), Ok(&Health(8)));
    let mut tags = world.query::<Writes<Tag>>();
    tags.get_mut(&mut world, d).unwrap().value.0 = 5;
    assert_eq!(world.get::<Tag>(d), Ok(&Tag(5)));
}

#[test]
fn ref_fields_see_changes_and_mut_fields_mark_them() {
    let (mut world, [a, b, _, d]) = world();
    let h = world.spawn(Health(1));
    let mut watched = world.query::<Watched>();
    assert!(watched.iter(&world).all(|w| w.health.is_added()));
    assert!(watched.iter(&world).all(|w| !w.health.is_changed()));

    // A derived `&mut` field marks what it yields as changed, as `&mut T`
    // does, and only that.
    let mut writes = world.query::<Writes<Health>>();
    writes.get_mut(&mut world, h).unwrap().value.0 = 2;
    let changed: Vec<_> = watched
        .iter(&world)
        .filter(|w| w.health.is_changed())
        .map(|w| w.entity)
        .collect();
    assert_eq!(changed, [h]);

    // A derived filter with `Changed<Position>`: the first run sees all.
    let mut moved = world.query_filtered::<Entity, MovedMovable>();
    assert_eq!(sorted(moved.iter(&world).collect()), [a, d]);
    assert_eq!(moved.iter(&world).count(), 0);
    let mut movers = world.query::<Mover>();
    movers.get_mut(&mut world, a).unwrap().pos.0 = 5.0;
    // `b` is frozen, so it never passes, though it was not written either.
    movers.get_mut(&mut world, b).unwrap().pos.0 = 5.0;
    assert_eq!(moved.iter(&world).collect::<Vec<_>>(), [a]);
}

#[test]
fn derived_filters_match_their_tuples() {
    let (mut world, [a, b, c, d]) = world();
    let e = world.spawn(Tag(2));
    let movable = ids::<_, Entity, Movable>(&mut world, |e| e);
    assert_eq!(movable, [a, d]);
    assert_eq!(
        movable,
        ids::<_, Entity, (With<Velocity>, Without<Frozen>)>(&mut world, |e| e)
    );
    assert_eq!(
        ids::<_, Entity, HealthyOrTagged>(&mut world, |e| e),
        sorted(vec![d, e])
    );
    assert_eq!(ids::<_, Entity, Having<Frozen>>(&mut world, |e| e), [b]);
    // A derived filter inside a tuple filter, and with derived data.
    assert_eq!(
        ids::<_, Entity, (Movable, Without<Health>)>(&mut world, |e| e),
        [a]
    );
    let mut q = world.query_filtered::<Mover, Movable>();
    for m in q.iter_mut(&mut world) {
        m.pos.0 = -1.0;
    }
    let moved: Vec<_> = [a, b, c, d]
        .map(|e| world.get::<Position>(e).unwrap().0)
        .to_vec();
    assert_eq!(moved, [-1.0, 10.0, 20.0, -1.0]);
}

#[test]
fn in_systems() {
    #[derive(Default)]
    struct Seen(Vec<(Entity, bool)>);

    fn movement(mut q: Query<Mover, Movable>) {
        for m in q.iter_mut() {
            m.pos.0 += m.vel.0;
        }
    }
    fn status(q: Query<Status>, mut seen: ResMut<Seen>) {
        for s in q.iter() {
            seen.0.push((s.entity, *s.frozen));
        }
    }
    fn generic<T: Component>(mut q: Query<Writes<'_, T>>) {
        for w in q.iter_mut() {
            let _ = w.entity;
        }
    }

    let (mut world, [a, b, c, d]) = world();
    world.insert_resource(Seen::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((movement, status, generic::<Health>));
    schedule.run(&mut world);
    assert_eq!(world.get::<Position>(a), Ok(&Position(1.0)));
    assert_eq!(world.get::<Position>(b), Ok(&Position(10.0)));
    assert_eq!(world.get::<Position>(d), Ok(&Position(33.0)));
    let mut seen = std::mem::take(&mut world.resource_mut::<Seen>().0);
    seen.sort();
    assert_eq!(seen, [(a, false), (b, true), (c, false), (d, false)]);
}

#[test]
fn sparse_struct_takes_the_dense_walk() {
    let mut world = World::new();
    let mut expected = Vec::new();
    for i in 0..20u32 {
        let e = world.spawn(Tag(i));
        if i % 3 == 0 {
            world.insert(e, Score(i * 10)).unwrap();
            expected.push((e, i + 1, i * 10));
        }
    }
    let mut q = world.query::<Sparse>();
    // The constants that pick the fast paths are the tuple's.
    const {
        assert!(<Sparse as QueryData>::DENSE);
        assert!(<(Entity, &mut Tag, &Score) as QueryData>::DENSE);
    }
    let mut seen = Vec::new();
    for s in q.iter_mut(&mut world) {
        s.tag.0 += 1;
        seen.push((s.entity, s.tag.0, s.score.0));
    }
    assert_eq!(sorted(seen), expected);
}

#[test]
fn disabled_entities_are_skipped_unless_named() {
    #[derive(QueryData)]
    struct WithDisabled {
        entity: Entity,
        disabled: Has<Disabled>,
    }
    let (mut world, [a, b, c, d]) = world();
    world.insert_one(b, Disabled).unwrap();
    let mut status = world.query::<Status>();
    assert_eq!(
        sorted(status.iter(&world).map(|s| s.entity).collect()),
        [a, c, d]
    );
    assert!(status.get(&world, b).is_err());
    let all = ids::<_, WithDisabled, ()>(&mut world, |w| (w.entity, *w.disabled));
    assert_eq!(all, [(a, false), (b, true), (c, false), (d, false)]);
}

#[test]
fn get_many_mut_with_a_derived_struct() {
    let (mut world, [a, _, _, d]) = world();
    let mut q = world.query::<Mover>();
    let [x, y] = q.get_many_mut(&mut world, [a, d]).unwrap();
    std::mem::swap(&mut x.pos.0, &mut y.pos.0);
    assert_eq!(world.get::<Position>(a), Ok(&Position(30.0)));
    assert!(q.get_many_mut(&mut world, [a, a]).is_err());
}

#[test]
#[should_panic(expected = "borrows component")]
fn conflicting_fields_are_refused_as_in_a_tuple() {
    #[derive(QueryData)]
    struct Twice<'w> {
        _a: &'w mut Position,
        _b: &'w Position,
    }
    let (mut world, _) = world();
    let _ = world.query::<Twice>();
}

#[test]
#[should_panic(expected = "borrows component")]
fn a_struct_and_a_tuple_element_conflict_too() {
    let (mut world, _) = world();
    let _ = world.query::<(Mover, &Position)>();
}

#[test]
fn access_is_the_tuples() {
    let mut world = World::new();
    let derived = world.query::<Nested>();
    let tuple = world.query::<(
        Entity,
        (&Health, (Option<&Tag>, Entity)),
        (&mut Position, &Velocity),
    )>();
    let filter = world.query_filtered::<Entity, Movable>();
    let filter_tuple = world.query_filtered::<Entity, (With<Velocity>, Without<Frozen>)>();
    let ids = [
        world.component_id::<Position>().unwrap(),
        world.component_id::<Velocity>().unwrap(),
        world.component_id::<Health>().unwrap(),
        world.component_id::<Tag>().unwrap(),
        world.component_id::<Frozen>().unwrap(),
    ];
    let summary = |access: &mosaic::Access| {
        ids.map(|id| (access.reads(id), access.writes(id), access.mentions(id)))
    };
    assert_eq!(summary(derived.access()), summary(tuple.access()));
    assert_eq!(
        summary(derived.access()),
        [
            (false, true, true),
            (true, false, true),
            (true, false, true),
            (true, false, true),
            (false, false, false),
        ]
    );
    assert!(!derived.access().is_read_only());
    assert!(world.query::<Status>().access().is_read_only());
    assert_eq!(summary(filter.access()), summary(filter_tuple.access()));
    assert!(filter.access().mentions(ids[4]));
}

/// More fields than the core's largest tuple (16): grouped into nested
/// tuples by the derive.
#[test]
fn more_than_sixteen_fields() {
    #[derive(QueryData)]
    struct Wide<'w> {
        f0: &'w Position,
        f1: Entity,
        f2: Entity,
        f3: Entity,
        f4: Entity,
        f5: Entity,
        f6: Entity,
        f7: Entity,
        f8: Entity,
        f9: Entity,
        f10: Entity,
        f11: Entity,
        f12: Entity,
        f13: Entity,
        f14: Entity,
        f15: Entity,
        f16: Entity,
        f17: &'w mut Velocity,
    }
    let (mut world, [a, ..]) = world();
    let mut q = world.query::<Wide>();
    let w = q.get_mut(&mut world, a).unwrap();
    let all = [
        w.f1, w.f2, w.f3, w.f4, w.f5, w.f6, w.f7, w.f8, w.f9, w.f10, w.f11, w.f12, w.f13, w.f14,
        w.f15, w.f16,
    ];
    assert!(all.iter().all(|&e| e == a));
    assert_eq!(w.f0, &Position(0.0));
    w.f17.0 = 4.0;
    assert_eq!(world.get::<Velocity>(a), Ok(&Velocity(4.0)));
}

#[test]
fn single_populated_and_combinations() {
    let (mut world, [_, _, _, d]) = world();
    // `Single` of a derived query with a derived filter: only `d` has a
    // Health and is movable.
    let moved = world.run_system_once(|mut m: Single<Mover, (Movable, With<Health>)>| {
        m.pos.0 += 1.0;
        m.pos.0
    });
    assert_eq!(moved, 31.0);
    assert_eq!(world.get::<Position>(d), Ok(&Position(31.0)));
    let count = world.run_system_once(|q: Populated<Status, Movable>| q.iter().count());
    assert_eq!(count, 2);
    // Pairs of read-only derived items.
    let mut q = world.query::<Status>();
    let pairs = world.run_system_once(|q: Query<Status>| q.iter_combinations::<2>().count());
    assert_eq!(pairs, 6);
    assert_eq!(q.iter(&world).count(), 4);
}

#[test]
// Rayon's pool, which this file's strict-provenance Miri run cannot enter
// (crossbeam-epoch's integer-to-pointer casts); `par_iter`'s own unsafe is
// checked under Miri by query.rs's threading tests, and a derived struct
// only forwards to its tuple.
#[cfg_attr(miri, ignore)]
fn par_iter_mut_with_a_derived_struct() {
    let mut world = World::new();
    world.spawn_batch((0..1000).map(|i| (Position(i as f32), Velocity(1.0))));
    let mut q = world.query::<Mover>();
    q.par_iter_mut(&mut world).for_each(|m| m.pos.0 += m.vel.0);
    let mut read = world.query::<&Position>();
    let mut all: Vec<f32> = read.iter(&world).map(|p| p.0).collect();
    all.sort_by(f32::total_cmp);
    assert_eq!(all, (1..=1000).map(|i| i as f32).collect::<Vec<_>>());
}
