//! Relations seen through queries, systems and commands, as a user meets
//! them after the basics: query states kept across edits (the archetype
//! walk and the sparse-set walk), `Option`/`Or`/`Added`/`Changed` on the
//! edge components, the scheduler's view of relation reads, parent-first
//! caches across every kind of edit, and relation commands that fail or
//! panic. Every edit is followed by `check_invariants`.

use std::sync::{Arc, Mutex};

use mosaic::prelude::*;
use mosaic::{CommandError, OnRelate, OnRemove, OnUnrelate, Ref, RelationError};

#[derive(Relation, Debug, PartialEq, Clone)]
struct Likes;

#[derive(Relation, Debug, PartialEq, Clone)]
#[relation(one)]
struct Aims(u32);

#[derive(Relation, Debug, PartialEq, Clone)]
#[relation(acyclic)]
struct Before;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Pos(i32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Tag;

fn spawn_n(world: &mut World, n: usize) -> Vec<Entity> {
    (0..n).map(|_| world.spawn(Pos(0))).collect()
}

fn sorted(mut v: Vec<Entity>) -> Vec<Entity> {
    v.sort();
    v
}

// ----- query states kept across edits ------------------------------------------------

/// One query state, built before any edge exists, asked again after each
/// kind of edit: it must answer what a fresh state answers.
#[test]
fn a_kept_query_state_agrees_with_a_fresh_one_after_every_edit() {
    let mut world = World::new();
    let mut kept = world.query::<(Entity, Relation<Likes>)>();
    let mut kept_pos = world.query::<(Entity, &Pos, Relation<Likes>)>();
    let mut kept_kids = world.query::<(Entity, &Children)>();
    let mut kept_without = world.query_filtered::<Entity, Without<Relation<ChildOf>>>();
    let check =
        |world: &mut World,
         kept: &mut QueryState<(Entity, Relation<Likes>)>,
         kept_pos: &mut QueryState<(Entity, &Pos, Relation<Likes>)>,
         kept_kids: &mut QueryState<(Entity, &Children)>,
         kept_without: &mut QueryState<Entity, Without<Relation<ChildOf>>>| {
            world.check_invariants();
            let got: Vec<(Entity, Vec<Entity>)> = kept
                .iter(world)
                .map(|(e, r)| (e, r.targets().to_vec()))
                .collect();
            let fresh: Vec<(Entity, Vec<Entity>)> = world
                .query::<(Entity, Relation<Likes>)>()
                .iter(world)
                .map(|(e, r)| (e, r.targets().to_vec()))
                .collect();
            assert_eq!(got, fresh);
            let expect: Vec<Entity> = sorted(
                world
                    .iter()
                    .map(|r| r.id())
                    .filter(|&e| !world.targets::<Likes>(e).is_empty())
                    .collect(),
            );
            assert_eq!(sorted(got.iter().map(|x| x.0).collect()), expect);
            let with_pos: Vec<Entity> = expect
                .iter()
                .copied()
                .filter(|&e| world.has::<Pos>(e))
                .collect();
            assert_eq!(
                sorted(kept_pos.iter(world).map(|x| x.0).collect()),
                with_pos
            );
            let parents: Vec<Entity> = sorted(
                world
                    .iter()
                    .map(|r| r.id())
                    .filter(|&e| !world.children(e).is_empty())
                    .collect(),
            );
            assert_eq!(
                sorted(kept_kids.iter(world).map(|x| x.0).collect()),
                parents
            );
            for (e, kids) in kept_kids.iter(world) {
                assert_eq!(kids.as_slice(), world.children(e));
            }
            let roots: Vec<Entity> = sorted(
                world
                    .iter()
                    .map(|r| r.id())
                    .filter(|&e| world.parent(e).is_none())
                    .collect(),
            );
            assert_eq!(sorted(kept_without.iter(world).collect()), roots);
        };
    macro_rules! check {
        () => {
            check(
                &mut world,
                &mut kept,
                &mut kept_pos,
                &mut kept_kids,
                &mut kept_without,
            )
        };
    }
    check!();
    let e = spawn_n(&mut world, 6);
    let bare = world.spawn(()); // another archetype
    check!();
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(bare, e[1], Likes).unwrap();
    world.add_child(e[0], e[2]).unwrap();
    check!();
    world.relate(e[0], e[2], Likes).unwrap();
    world.unrelate::<Likes>(e[0], e[1]).unwrap();
    check!();
    world.set_parent(e[2], e[3]).unwrap();
    world.add_child(e[2], e[4]).unwrap();
    check!();
    world.insert(e[0], Tag).unwrap(); // moves archetype, keeps its edges
    world.remove_one::<Pos>(e[4]).unwrap();
    check!();
    world.despawn(e[2]).unwrap();
    check!();
    world.relate(e[5], e[0], Likes).unwrap();
    world.despawn_recursive(e[3]).unwrap();
    check!();
    world.clear();
    check!();
    let f = spawn_n(&mut world, 3);
    world.relate(f[0], f[1], Likes).unwrap();
    world.add_child(f[1], f[2]).unwrap();
    check!();
}

/// `Option<Relation<R>>` must not restrict the query to sources: every
/// entity is a row, `Some` for the sources.
#[test]
fn option_of_relation_yields_every_entity() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 5);
    world.relate(e[0], e[1], Likes).unwrap();
    let mut q = world.query::<(Entity, Option<Relation<Likes>>)>();
    let rows: Vec<(Entity, bool)> = q.iter(&world).map(|(e, r)| (e, r.is_some())).collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(
        rows.iter().filter(|x| x.1).map(|x| x.0).collect::<Vec<_>>(),
        [e[0]]
    );
    let mut q = world.query::<(Entity, Option<&Children>, Option<Relation<ChildOf>>)>();
    assert_eq!(q.iter(&world).count(), 5);
    world.add_child(e[2], e[3]).unwrap();
    let with_kids: Vec<Entity> = q
        .iter(&world)
        .filter(|(_, k, _)| k.is_some())
        .map(|x| x.0)
        .collect();
    assert_eq!(with_kids, [e[2]]);
    assert_eq!(q.iter(&world).count(), 5);
}

/// `Or` of sparse filters with a table component: each branch counts.
#[test]
fn or_of_relation_filters_and_table_filters() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    let tagged = world.spawn(Tag);
    world.relate(e[0], e[1], Likes).unwrap();
    world.add_child(e[1], e[2]).unwrap();
    type F = Or<(With<Relation<Likes>>, With<Children>, With<Tag>)>;
    let mut q = world.query_filtered::<Entity, F>();
    assert_eq!(
        sorted(q.iter(&world).collect()),
        sorted(vec![e[0], e[1], tagged])
    );
    type G = Or<(With<Relation<Likes>>, Without<Pos>)>;
    let mut q = world.query_filtered::<Entity, G>();
    assert_eq!(sorted(q.iter(&world).collect()), sorted(vec![e[0], tagged]));
    // Sparse data with an `Or` filter.
    let mut q =
        world.query_filtered::<Entity, (With<Relation<Likes>>, Or<(With<Tag>, With<Pos>)>)>();
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [e[0]]);
}

// ----- change detection --------------------------------------------------------------

#[derive(Default)]
struct Seen(Vec<(&'static str, Entity)>);

fn take(world: &mut World) -> Vec<(&'static str, Entity)> {
    let mut v = std::mem::take(&mut world.resource_mut::<Seen>().0);
    v.sort();
    v
}

type NewChildOrNewKids = Or<(Added<Relation<ChildOf>>, Changed<Children>)>;

/// A named edit, and what the watcher must see after it.
type Step = (
    &'static str,
    Box<dyn Fn(&mut World)>,
    Vec<(&'static str, Entity)>,
);

fn watcher() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_system(
        "watch",
        |added: Query<Entity, Added<Relation<Likes>>>,
         changed: Query<Entity, Changed<Relation<Likes>>>,
         kids: Query<Entity, Changed<Children>>,
         either: Query<Entity, NewChildOrNewKids>,
         mut seen: ResMut<Seen>| {
            seen.0.extend(added.iter().map(|e| ("added", e)));
            seen.0.extend(changed.iter().map(|e| ("changed", e)));
            seen.0.extend(kids.iter().map(|e| ("kids", e)));
            seen.0.extend(either.iter().map(|e| ("either", e)));
        },
    );
    schedule
}

/// Unrelate then relate again between two runs: the component went and
/// came back, so it is added (as a removed-then-inserted component is).
#[test]
fn unrelate_then_relate_in_one_tick_is_added_again() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let mut schedule = watcher();
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[1], Likes).unwrap();
    schedule.run(&mut world);
    take(&mut world);
    schedule.run(&mut world);
    assert!(take(&mut world).is_empty());

    world.unrelate::<Likes>(e[0], e[1]).unwrap();
    world.relate(e[0], e[1], Likes).unwrap();
    schedule.run(&mut world);
    assert_eq!(take(&mut world), [("added", e[0]), ("changed", e[0])]);

    // With a second edge left in place the component stays: changed only.
    world.relate(e[0], e[2], Likes).unwrap();
    schedule.run(&mut world);
    take(&mut world);
    world.unrelate::<Likes>(e[0], e[1]).unwrap();
    world.relate(e[0], e[1], Likes).unwrap();
    schedule.run(&mut world);
    assert_eq!(take(&mut world), [("changed", e[0])]);
    schedule.run(&mut world);
    assert!(take(&mut world).is_empty());
}

/// A parent whose children list changes in any way is `Changed<Children>`,
/// whichever way the child came or went (while the list is not empty).
#[test]
fn changed_children_for_every_way_a_child_comes_or_goes() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let mut schedule = watcher();
    let p = world.spawn(Pos(0));
    let q = world.spawn(Pos(0));
    let kids: Vec<Entity> = (0..4)
        .map(|_| world.spawn_child(p, Pos(1)).unwrap())
        .collect();
    let k = [kids[0], kids[1], kids[2], kids[3]];
    schedule.run(&mut world);
    take(&mut world);
    schedule.run(&mut world);
    assert!(take(&mut world).is_empty());

    let steps: Vec<Step> = vec![
        (
            "despawn a child",
            Box::new(move |w: &mut World| w.despawn(k[0]).unwrap()),
            vec![("either", p), ("kids", p)],
        ),
        (
            "despawn_recursive a child",
            Box::new(move |w: &mut World| w.despawn_recursive(k[1]).unwrap()),
            vec![("either", p), ("kids", p)],
        ),
        (
            "reparent a child away",
            Box::new(move |w: &mut World| w.set_parent(k[2], q).unwrap()),
            vec![
                ("either", p),
                ("either", q),
                ("either", kids[2]),
                ("kids", p),
                ("kids", q),
            ],
        ),
        (
            "a command spawns a child",
            Box::new(move |w: &mut World| {
                let mut c = CommandBuffer::new(w);
                c.add_child(p, k[2]);
                c.apply(w).unwrap();
            }),
            vec![("either", p), ("either", kids[2]), ("kids", p)],
        ),
    ];
    for (what, step, want) in steps {
        step(&mut world);
        world.check_invariants();
        schedule.run(&mut world);
        let mut want = want;
        want.sort();
        assert_eq!(take(&mut world), want, "{what}");
        schedule.run(&mut world);
        assert!(take(&mut world).is_empty(), "{what}: seen once");
    }
}

// ----- the scheduler -----------------------------------------------------------------

#[derive(Default)]
struct SourceCount(usize);

#[derive(Default)]
struct ChildCount(usize);

#[test]
fn relation_readers_run_together_and_see_the_commands_of_earlier_systems() {
    for executor in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = World::new();
        world.insert_resource(SourceCount::default());
        world.insert_resource(ChildCount::default());
        let root = world.spawn(Pos(0));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_system(
            "grow",
            move |mut commands: Commands, q: Query<Relation<ChildOf>>| {
                // One more child per run.
                let _ = q.iter().count();
                commands.spawn_child(root, Pos(1));
            },
        );
        schedule
            .add_system(
                "count_sources",
                |q: Query<Relation<ChildOf>>, mut c: ResMut<SourceCount>| {
                    c.0 = q.iter().count();
                },
            )
            .after("grow");
        schedule
            .add_system(
                "count_parents",
                |q: Query<&Children>, mut c: ResMut<ChildCount>| {
                    c.0 = q.iter().map(|k| k.len()).sum();
                },
            )
            .after("grow");
        schedule
            .add_system("exclusive", move |world: &mut World| {
                let kids = world.children(root).to_vec();
                if kids.len() >= 2 {
                    world.add_child(kids[0], kids[1]).unwrap();
                }
            })
            .after("count_sources")
            .after("count_parents");
        schedule.build(&mut world).unwrap();
        let a = schedule.system_access("count_sources").unwrap();
        let b = schedule.system_access("count_parents").unwrap();
        let g = schedule.system_access("grow").unwrap();
        assert!(!a.conflicts_with(&b));
        assert!(!a.conflicts_with(&g));
        assert!(a.conflicts_with(&schedule.system_access("exclusive").unwrap()));
        let rel = world.component_id::<Relation<ChildOf>>().unwrap();
        let kids = world.component_id::<Children>().unwrap();
        assert!(a.queries().any(|(_, q)| q.reads(rel)));
        assert!(b.queries().any(|(_, q)| q.reads(kids)));
        for run in 1..=4 {
            schedule.run(&mut world);
            world.check_invariants();
            // The readers come after `grow`, which has commands: a sync
            // point in between, so they see this run's child too.
            assert_eq!(world.resource::<SourceCount>().0, run, "{executor:?}");
            assert_eq!(world.resource::<ChildCount>().0, run, "{executor:?}");
            assert_eq!(world.query::<Relation<ChildOf>>().iter(&world).count(), run);
        }
    }
}

/// Two queries in one system, `With` and `Without` the same relation, may
/// both write a table component: they never meet an entity twice.
#[test]
fn with_and_without_a_relation_make_two_mutable_queries_disjoint() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    world.add_child(e[0], e[1]).unwrap();
    world.add_child(e[1], e[2]).unwrap();
    world.run_system_once(
        |mut kids: Query<&mut Pos, With<Relation<ChildOf>>>,
         mut roots: Query<&mut Pos, Without<Relation<ChildOf>>>| {
            for p in kids.iter_mut() {
                p.0 += 10;
            }
            for p in roots.iter_mut() {
                p.0 += 1;
            }
        },
    );
    let got: Vec<i32> = e.iter().map(|&x| world.get::<Pos>(x).unwrap().0).collect();
    assert_eq!(got, [1, 10, 10, 1]);
    // Not disjoint: reported, not run.
    let mut schedule = Schedule::new();
    schedule.add_system(
        "bad",
        |_a: Query<&mut Pos, With<Children>>, _b: Query<&mut Pos, Without<Relation<ChildOf>>>| {},
    );
    assert!(schedule.build(&mut world).is_err());
}

// ----- parent-first caches -----------------------------------------------------------

fn assert_parent_first(order: &mut ParentFirst<ChildOf>, world: &World) {
    let got = order.get(world).to_vec();
    let fresh = world.parent_first::<ChildOf>();
    assert_eq!(sorted(got.clone()), sorted(fresh), "same entities");
    for (i, &e) in got.iter().enumerate() {
        assert!(world.contains(e), "{e:?} in the order is alive");
        if let Some(p) = world.parent(e) {
            assert!(got[..i].contains(&p), "{p:?} before {e:?}");
        }
    }
}

#[test]
fn parent_first_after_commands_and_after_a_failed_edit() {
    let mut world = World::new();
    let mut order = ParentFirst::<ChildOf>::new();
    let root = world.spawn(());
    let a = world.spawn_child(root, ()).unwrap();
    assert_parent_first(&mut order, &world);
    let b = world.run_system_once(move |mut c: Commands| c.spawn_child(a, ()));
    assert_parent_first(&mut order, &world);
    world.run_system_once(move |mut c: Commands| {
        c.add_child(b, root); // a cycle: refused
        c.despawn_descendants(a);
    });
    world.check_invariants();
    assert_parent_first(&mut order, &world);
    assert_eq!(order.get(&world), [root, a]);
    let rebuilds = order.rebuilds();
    // A refused edit changes nothing: no rebuild.
    assert!(world.add_child(a, root).is_err());
    assert_parent_first(&mut order, &world);
    assert_eq!(order.rebuilds(), rebuilds);
}

/// A cache kept in a resource, asked by an exclusive system each frame,
/// while other systems edit the hierarchy by commands.
#[test]
fn parent_first_kept_in_a_resource_across_schedule_runs() {
    #[derive(Default)]
    struct Order(ParentFirst<ChildOf>);
    let mut world = World::new();
    world.insert_resource(Order::default());
    let root = world.spawn(Pos(1));
    let mut schedule = Schedule::new();
    schedule.add_system(
        "edit",
        move |mut c: Commands, q: Query<Entity, With<Pos>>| {
            let n = q.iter().count();
            if n < 4 {
                c.spawn_child(root, Pos(1));
            } else {
                c.despawn_descendants(root);
            }
        },
    );
    schedule
        .add_system("propagate", |world: &mut World| {
            let mut order = world.remove_resource::<Order>().unwrap();
            assert_parent_first(&mut order.0, world);
            world.insert_resource(order);
        })
        .after("edit");
    for _ in 0..8 {
        schedule.run(&mut world);
    }
}

// ----- commands ----------------------------------------------------------------------

#[test]
fn relation_commands_report_each_refusal_and_apply_the_rest() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 4);
    world.relate(e[1], e[0], Before).unwrap();
    let mut c = CommandBuffer::new(&world);
    c.relate(e[0], e[0], Before); // self edge of an acyclic relation
    c.relate(e[0], e[1], Before); // closes a cycle
    c.relate(e[2], e[3], Aims(1));
    c.relate(e[2], e[1], Aims(2)); // a `one` relation: replaces
    c.add_child(e[3], e[3]); // a child of itself
    c.relate(e[2], e[2], Likes); // fine: Likes is not acyclic
    let errors = c.apply(&mut world).unwrap_err();
    world.check_invariants();
    let errors: Vec<(usize, CommandError)> = errors.iter().cloned().collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(matches!(
        errors[0],
        (0, CommandError::Relation(RelationError::Cycle { .. }))
    ));
    assert!(matches!(
        errors[1],
        (1, CommandError::Relation(RelationError::Cycle { .. }))
    ));
    assert!(matches!(
        errors[2],
        (4, CommandError::Relation(RelationError::Cycle { .. }))
    ));
    assert_eq!(world.targets::<Aims>(e[2]), [e[1]]);
    assert_eq!(world.relation::<Aims>(e[2], e[1]), Some(&Aims(2)));
    assert!(world.sources::<Aims>(e[3]).is_empty());
    assert!(world.has_relation::<Likes>(e[2], e[2]));
}

/// An `OnRelate` observer that panics while commands apply: the edge is
/// in, the world is whole, and the panic reaches the caller.
#[test]
fn a_panicking_relate_observer_under_commands_leaves_a_whole_world() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnRelate<Likes>>, _w: DeferredWorld| {
        if t.event().source == t.event().target {
            panic!("no self love");
        }
    });
    let e = spawn_n(&mut world, 3);
    let mut c = CommandBuffer::new(&world);
    c.relate(e[0], e[1], Likes);
    c.relate(e[2], e[2], Likes);
    c.add_child(e[0], e[1]);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.apply(&mut world)));
    assert!(result.is_err());
    world.check_invariants();
    assert!(world.has_relation::<Likes>(e[0], e[1]));
    assert!(world.has_relation::<Likes>(e[2], e[2]));
    // The world still works.
    world.add_child(e[0], e[2]).unwrap();
    world.despawn_recursive(e[0]).unwrap();
    world.check_invariants();
}

/// An `OnUnrelate` observer that panics during a command's recursive
/// despawn inside a system: the subtree is gone all the same.
#[test]
fn a_panicking_unrelate_observer_during_a_commanded_recursive_despawn() {
    let mut world = World::new();
    let heard = Arc::new(Mutex::new(0usize));
    let h = heard.clone();
    world.observe(move |_t: Trigger<OnUnrelate<ChildOf>>, _w: DeferredWorld| {
        *h.lock().unwrap() += 1;
        panic!("grief");
    });
    let root = world.spawn(());
    let a = world.spawn_child(root, ()).unwrap();
    let b = world.spawn_child(a, ()).unwrap();
    let keep = world.spawn(());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.run_system_once(move |mut c: Commands| c.despawn_recursive(root))
    }));
    assert!(result.is_err());
    world.check_invariants();
    assert!(!world.contains(root) && !world.contains(a) && !world.contains(b));
    assert!(world.contains(keep));
    assert_eq!(*heard.lock().unwrap(), 2);
}

// ----- more query shapes -------------------------------------------------------------

/// Disabled entities are skipped by relation queries as by any other,
/// whether the run walks the relation's set or the tables.
#[test]
fn disabled_sources_and_parents_are_skipped_by_relation_queries() {
    let mut world = World::new();
    let root = world.spawn(Pos(0));
    let kids: Vec<Entity> = (0..3)
        .map(|i| world.spawn_child(root, Pos(i)).unwrap())
        .collect();
    let other = world.spawn(Pos(9));
    world.relate(kids[0], other, Likes).unwrap();
    world.relate(kids[1], other, Likes).unwrap();
    world.insert(kids[1], Disabled).unwrap();
    let mut sparse_only = world.query::<(Entity, Relation<ChildOf>)>();
    let mut with_table = world.query::<(Entity, &Pos, Relation<ChildOf>)>();
    let mut filtered = world.query_filtered::<Entity, With<Relation<Likes>>>();
    let mut has = world.query::<(Entity, Has<Relation<Likes>>)>();
    let want = sorted(vec![kids[0], kids[2]]);
    assert_eq!(
        sorted(sparse_only.iter(&world).map(|x| x.0).collect()),
        want
    );
    assert_eq!(sorted(with_table.iter(&world).map(|x| x.0).collect()), want);
    assert_eq!(filtered.iter(&world).collect::<Vec<_>>(), [kids[0]]);
    let has: Vec<(Entity, bool)> = has.iter(&world).collect();
    assert_eq!(has.len(), 4);
    assert!(has.contains(&(kids[0], true)) && has.contains(&(kids[2], false)));
    world.insert(root, Disabled).unwrap();
    assert_eq!(world.query::<&Children>().iter(&world).count(), 0);
    assert_eq!(
        world
            .query_filtered::<&Children, With<Disabled>>()
            .iter(&world)
            .count(),
        1
    );
    // Hierarchy operations ignore `Disabled`.
    world.despawn_recursive(root).unwrap();
    world.check_invariants();
    assert_eq!(world.len(), 1);
    assert!(world.sources::<Likes>(other).is_empty());
}

/// `par_iter` over a relation query (walking the relation's set) visits
/// each source once, skipping disabled ones.
#[test]
fn par_iter_over_relation_sources_visits_each_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // rayon's pool (crossbeam-epoch) needs Miri's threading flags
    // (.ci/miri-shard runs `par_` tests with them and this variable set);
    // under plain Miri it would report crossbeam's integer-to-pointer casts.
    if cfg!(miri) && std::env::var_os("MOSAIC_MIRI_THREADS").is_none() {
        return;
    }
    let n = if cfg!(miri) { 70 } else { 300 };
    let mut world = World::new();
    let root = world.spawn(Pos(0));
    let kids: Vec<Entity> = (0..n)
        .map(|i| world.spawn_child(root, Pos(i as i32)).unwrap())
        .collect();
    world.spawn_batch((0..n).map(|_| Pos(0))); // rows the walk must not see
    world.insert(kids[3], Disabled).unwrap();
    let sum = AtomicUsize::new(0);
    let count = AtomicUsize::new(0);
    let mut q = world.query::<(&Pos, Relation<ChildOf>)>();
    q.par_iter(&world).for_each(|(p, r)| {
        assert_eq!(r.target(), root);
        sum.fetch_add(p.0 as usize, Ordering::Relaxed);
        count.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(count.into_inner(), n - 1);
    assert_eq!(sum.into_inner(), n * (n - 1) / 2 - 3);
}

/// `Ref<Relation<R>>` reports what `Added`/`Changed` filters report.
#[test]
fn ref_of_relation_sees_added_and_changed() {
    let mut world = World::new();
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[1], Likes).unwrap();
    let mut q = world.query::<(Entity, Ref<Relation<Likes>>)>();
    let first: Vec<(Entity, bool, bool)> = q
        .iter(&world)
        .map(|(e, r)| (e, r.is_added(), r.is_changed()))
        .collect();
    assert_eq!(first, [(e[0], true, true)]);
    assert!(q.iter(&world).all(|(_, r)| !r.is_changed()));
    world.relate(e[0], e[2], Likes).unwrap();
    world.relate(e[1], e[2], Likes).unwrap();
    let mut now: Vec<(Entity, bool, bool)> = q
        .iter(&world)
        .map(|(e, r)| (e, r.is_added(), r.is_changed()))
        .collect();
    now.sort();
    assert_eq!(now, [(e[0], false, true), (e[1], true, true)]);
}

/// Reading relatives through a second query: `get`/`get_many` on the
/// entities a `Relation` or `Children` names.
#[test]
fn following_edges_with_a_second_query() {
    let mut world = World::new();
    let root = world.spawn(Pos(100));
    let a = world.spawn_child(root, Pos(10)).unwrap();
    let b = world.spawn_child(a, Pos(1)).unwrap();
    let total = world.run_system_once(
        move |kids: Query<(Entity, Relation<ChildOf>)>,
              pos: Query<&Pos>,
              parents: Query<&Children>| {
            let mut total = 0;
            for (e, r) in kids.iter() {
                total += pos.get(e).unwrap().0 + pos.get(r.target()).unwrap().0;
            }
            let (pa, pb) = (pos.get(a).unwrap(), pos.get(b).unwrap());
            total += pa.0 + pb.0;
            assert!(parents.get(b).is_err());
            assert_eq!(parents.get(root).unwrap().as_slice(), [a]);
            total
        },
    );
    assert_eq!(total, (10 + 100) + (1 + 10) + 11);
}

// ----- components required by the edge components ------------------------------------

#[derive(Component, Debug, PartialEq, Clone, Copy, Default)]
struct Dirty;

/// A component required by `Children` (or by `Relation<R>`) comes with the
/// first edge, as with any insert.
#[test]
fn components_required_by_the_edge_components_come_with_the_first_edge() {
    let mut world = World::new();
    world.register_required::<Children, Dirty>().unwrap();
    let e = spawn_n(&mut world, 3);
    world.add_child(e[0], e[1]).unwrap();
    world.check_invariants();
    assert!(world.has::<Dirty>(e[0]));
    assert!(!world.has::<Dirty>(e[1]));
}

/// A required component's constructor that panics stops the insert of an
/// edge's first component before anything changes: the edge must not be
/// left half made (one end listing an entity that does not list it back,
/// which later panicked in `unrelate` and `despawn`).
#[test]
fn a_panicking_required_constructor_of_an_edge_component_leaves_no_half_edge() {
    fn attempt(world: &mut World, edit: impl FnOnce(&mut World)) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| edit(world)));
        assert!(result.is_err(), "the panic goes on");
        world.check_invariants();
    }
    for side in ["sources", "relation"] {
        let mut world = World::new();
        let e = spawn_n(&mut world, 4);
        // A first edge of each kind before the constructor panics, so that
        // `e[0]` has both components (and their requirement).
        world.relate(e[0], e[1], Likes).unwrap();
        world.relate(e[2], e[0], Likes).unwrap();
        world.add_child(e[3], e[2]).unwrap();
        if side == "sources" {
            world
                .register_required_with::<Children, Dirty>(|| panic!("no dirt"))
                .unwrap();
            world
                .register_required_with::<Sources<Likes>, Dirty>(|| panic!("no dirt"))
                .unwrap();
        } else {
            world
                .register_required_with::<Relation<ChildOf>, Dirty>(|| panic!("no dirt"))
                .unwrap();
            world
                .register_required_with::<Relation<Likes>, Dirty>(|| panic!("no dirt"))
                .unwrap();
        }
        attempt(&mut world, |w| w.add_child(e[0], e[1]).map(drop).unwrap());
        assert_eq!(world.parent(e[1]), None, "{side}");
        assert!(world.children(e[0]).is_empty(), "{side}");
        // A many relation: the source's or the target's first edge.
        attempt(&mut world, |w| w.relate(e[1], e[3], Likes).unwrap());
        assert!(!world.has_relation::<Likes>(e[1], e[3]), "{side}");
        assert!(world.sources::<Likes>(e[3]).is_empty(), "{side}");
        // Reparenting: the old edge goes, the new one is not made.
        attempt(&mut world, |w| w.set_parent(e[2], e[1]).unwrap());
        assert_eq!(world.parent(e[2]), None, "{side}");
        assert!(world.children(e[3]).is_empty() && world.children(e[1]).is_empty());
        // Edges whose ends have their components already are made as usual.
        world.relate(e[2], e[1], Likes).unwrap();
        assert_eq!(world.targets::<Likes>(e[2]), [e[0], e[1]]);
        // Whatever happened, the world still works.
        world.despawn(e[1]).unwrap();
        world.clear();
        world.check_invariants();
    }
}

// ----- what unrelate observers see ---------------------------------------------------

type UnrelateLog = Arc<Mutex<Vec<(Entity, Entity, bool)>>>;

/// Installs `OnUnrelate` observers of `Aims` (`one`), `Likes` (many) and
/// `ChildOf` that check, for each announced edge, that both ends agree on
/// it and that every edge component they can read is whole (a `Relation`
/// has at least one target, and data for each; the world's invariants
/// hold). Logs each edge with whether it was still there.
fn watch_unrelates(world: &mut World) -> UnrelateLog {
    fn seen<R: mosaic::Relationship>(w: &World, s: Entity, t: Entity) -> bool {
        let there = w.has_relation::<R>(s, t);
        assert_eq!(w.targets::<R>(s).contains(&t), there, "{s:?} -> {t:?}");
        assert_eq!(w.sources::<R>(t).contains(&s), there, "{t:?} <- {s:?}");
        for e in [s, t] {
            if let Ok(r) = w.get::<Relation<R>>(e) {
                assert!(!r.is_empty(), "an empty Relation on {e:?}");
                assert_eq!(r.len(), r.data().len(), "data for each target of {e:?}");
            }
            if let Ok(src) = w.get::<Sources<R>>(e) {
                assert!(!src.is_empty(), "an empty Sources on {e:?}");
            }
        }
        w.check_invariants();
        there
    }
    let log: UnrelateLog = Arc::default();
    let l = log.clone();
    world.observe(move |t: Trigger<OnUnrelate<Aims>>, w: DeferredWorld| {
        let (s, tg) = (t.event().source, t.event().target);
        l.lock()
            .unwrap()
            .push((s, tg, seen::<Aims>(w.world(), s, tg)));
    });
    let l = log.clone();
    world.observe(move |t: Trigger<OnUnrelate<Likes>>, w: DeferredWorld| {
        let (s, tg) = (t.event().source, t.event().target);
        l.lock()
            .unwrap()
            .push((s, tg, seen::<Likes>(w.world(), s, tg)));
    });
    let l = log.clone();
    world.observe(move |t: Trigger<OnUnrelate<ChildOf>>, w: DeferredWorld| {
        let (s, tg) = (t.event().source, t.event().target);
        l.lock()
            .unwrap()
            .push((s, tg, seen::<ChildOf>(w.world(), s, tg)));
    });
    log
}

fn take_log(log: &UnrelateLog) -> Vec<(Entity, Entity, bool)> {
    let mut v = std::mem::take(&mut *log.lock().unwrap());
    v.sort();
    v
}

fn all(there: bool, mut v: Vec<(Entity, Entity)>) -> Vec<(Entity, Entity, bool)> {
    v.sort();
    v.into_iter().map(|(s, t)| (s, t, there)).collect()
}

/// `OnUnrelate` observers of `unrelate` and of a replacement find the edge
/// gone; those of a despawn (of either end) find the world whole, every
/// edge of the dying entity still there (as `World::clear`'s do). A
/// despawn's observers used to find it half gone: a dying `one` source
/// still naming its target, which no longer listed it; a dying source's
/// `Relation` emptied of targets but not of data (documented impossible:
/// `len` is at least one); a dying target's `Sources` emptied while its
/// sources still named it.
#[test]
fn unrelate_observers_find_both_ends_agreeing_whichever_end_is_despawned() {
    let mut world = World::new();
    let log = watch_unrelates(&mut world);
    let e = spawn_n(&mut world, 5);
    world.relate(e[0], e[1], Aims(1)).unwrap();
    world.relate(e[0], e[2], Aims(2)).unwrap();
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[0], e[2], Likes).unwrap();
    world.unrelate::<Likes>(e[0], e[1]).unwrap();
    assert_eq!(take_log(&log), all(false, vec![(e[0], e[1]), (e[0], e[1])]));
    // A despawned source: a `one` edge, several many edges, a self edge;
    // and a despawned target with several sources.
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[0], e[3], Likes).unwrap();
    world.relate(e[0], e[0], Likes).unwrap();
    world.relate(e[4], e[0], Likes).unwrap();
    world.relate(e[4], e[1], Likes).unwrap();
    world.relate(e[3], e[0], Aims(3)).unwrap();
    world.relate(e[2], e[0], Aims(4)).unwrap();
    world.add_child(e[1], e[0]).unwrap();
    world.add_child(e[0], e[3]).unwrap();
    take_log(&log);
    world.despawn(e[0]).unwrap();
    world.check_invariants();
    let want = vec![
        (e[0], e[2]), // Aims
        (e[0], e[1]), // Likes
        (e[0], e[2]),
        (e[0], e[3]),
        (e[0], e[0]),
        (e[4], e[0]),
        (e[3], e[0]), // Aims
        (e[2], e[0]),
        (e[0], e[1]), // ChildOf
        (e[3], e[0]),
    ];
    assert_eq!(take_log(&log), all(true, want));
    // A recursive despawn.
    world.relate(e[3], e[1], Likes).unwrap();
    world.relate(e[2], e[1], Aims(5)).unwrap();
    world.add_child(e[1], e[2]).unwrap();
    world.add_child(e[2], e[3]).unwrap();
    take_log(&log);
    world.despawn_recursive(e[1]).unwrap();
    world.check_invariants();
    assert_eq!(world.len(), 1);
    let want = vec![
        (e[4], e[1]),
        (e[3], e[1]),
        (e[2], e[1]),
        (e[2], e[1]),
        (e[3], e[2]),
    ];
    assert_eq!(take_log(&log), all(true, want));
}

/// A despawned entity's own edge components are announced removed once,
/// by its despawn, also when a self edge makes it its own source.
#[test]
fn a_despawn_announces_each_edge_component_removed_once() {
    let mut world = World::new();
    let removed = Arc::new(Mutex::new(Vec::new()));
    let r = removed.clone();
    world.observe(
        move |t: Trigger<OnRemove<Sources<Likes>>>, _w: DeferredWorld| {
            r.lock().unwrap().push(("sources", t.entity().unwrap()));
        },
    );
    let r = removed.clone();
    world.observe(
        move |t: Trigger<OnRemove<Relation<Likes>>>, _w: DeferredWorld| {
            r.lock().unwrap().push(("relation", t.entity().unwrap()));
        },
    );
    let r = removed.clone();
    world.observe(
        move |t: Trigger<OnRemove<Sources<Aims>>>, _w: DeferredWorld| {
            r.lock()
                .unwrap()
                .push(("aims sources", t.entity().unwrap()));
        },
    );
    let e = spawn_n(&mut world, 3);
    world.relate(e[0], e[0], Likes).unwrap();
    world.relate(e[0], e[0], Aims(0)).unwrap();
    world.relate(e[1], e[0], Likes).unwrap();
    world.relate(e[0], e[2], Likes).unwrap();
    world.despawn(e[0]).unwrap();
    world.check_invariants();
    let mut got = std::mem::take(&mut *removed.lock().unwrap());
    got.sort();
    let mut want = vec![
        ("aims sources", e[0]),
        ("relation", e[0]),
        ("relation", e[1]),
        ("sources", e[0]),
        ("sources", e[2]),
    ];
    want.sort();
    assert_eq!(got, want);
}

/// `RemovedComponents` of the edge components hears each time an entity
/// loses its last edge of a kind, however it lost it.
#[test]
fn removed_components_of_the_edge_components() {
    use mosaic::RemovedComponents;
    #[derive(Default)]
    struct Lost(Vec<(&'static str, Entity)>);
    let mut world = World::new();
    world.insert_resource(Lost::default());
    let mut schedule = Schedule::new();
    schedule.add_system(
        "watch",
        |mut kids: RemovedComponents<Children>,
         mut parents: RemovedComponents<Relation<ChildOf>>,
         mut lost: ResMut<Lost>| {
            lost.0.extend(kids.read().map(|e| ("children", e)));
            lost.0.extend(parents.read().map(|e| ("parent", e)));
        },
    );
    schedule.run(&mut world);
    let mut step = |world: &mut World, edit: &dyn Fn(&mut World)| {
        edit(world);
        world.check_invariants();
        schedule.run(world);
        let mut v = std::mem::take(&mut world.resource_mut::<Lost>().0);
        v.sort();
        v
    };
    let e = spawn_n(&mut world, 5);
    world.add_child(e[0], e[1]).unwrap();
    world.add_child(e[1], e[2]).unwrap();
    world.add_child(e[1], e[3]).unwrap();
    assert!(step(&mut world, &|_| {}).is_empty());
    // Reparent: the old parent keeps a child; the child's edge is new.
    assert_eq!(
        step(&mut world, &|w| w.set_parent(e[3], e[4]).unwrap()),
        [("parent", e[3])]
    );
    // The last child goes: the parent loses `Children`.
    assert_eq!(
        step(&mut world, &|w| assert_eq!(w.remove_parent(e[3]), Ok(e[4]))),
        [("children", e[4]), ("parent", e[3])]
    );
    // A parent despawned: its children lose their parent, and its own
    // parent (of whom it was the only child) its children.
    let mut want = vec![
        ("children", e[0]),
        ("children", e[1]),
        ("parent", e[1]),
        ("parent", e[2]),
    ];
    want.sort();
    assert_eq!(step(&mut world, &|w| w.despawn(e[1]).unwrap()), want);
    // A recursive despawn: every edge component of the subtree.
    world.add_child(e[0], e[2]).unwrap();
    world.add_child(e[2], e[3]).unwrap();
    step(&mut world, &|_| {});
    let mut want = vec![
        ("children", e[0]),
        ("children", e[2]),
        ("parent", e[2]),
        ("parent", e[3]),
    ];
    want.sort();
    assert_eq!(
        step(&mut world, &|w| w.despawn_recursive(e[2]).unwrap()),
        want
    );
}

/// An edge that goes changes the lists it was in: the source's targets,
/// the target's sources, and nothing else. A sibling whose place in a list
/// moved (the last entry takes the removed one's place) keeps its own
/// edges: it is not `Changed`, though the world fixes up where its edge
/// sits in the other list. It used to be: a parent's child unparented
/// marked the last sibling `Changed<Relation<ChildOf>>`, as if reparented.
#[test]
fn a_removed_edge_marks_changed_only_the_lists_it_was_in() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let mut schedule = Schedule::new();
    schedule.add_system(
        "watch",
        |likes: Query<Entity, Changed<Relation<Likes>>>,
         fans: Query<Entity, Changed<Sources<Likes>>>,
         reparented: Query<Entity, Changed<Relation<ChildOf>>>,
         kids: Query<Entity, Changed<Children>>,
         mut seen: ResMut<Seen>| {
            seen.0.extend(likes.iter().map(|e| ("likes", e)));
            seen.0.extend(fans.iter().map(|e| ("fans", e)));
            seen.0.extend(reparented.iter().map(|e| ("reparented", e)));
            seen.0.extend(kids.iter().map(|e| ("kids", e)));
        },
    );
    let e = spawn_n(&mut world, 5);
    let p = world.spawn(Pos(0));
    let c: Vec<Entity> = (0..3)
        .map(|_| world.spawn_child(p, Pos(1)).unwrap())
        .collect();
    world.relate(e[0], e[1], Likes).unwrap();
    world.relate(e[0], e[2], Likes).unwrap();
    world.relate(e[3], e[2], Likes).unwrap();
    world.relate(e[4], e[2], Likes).unwrap();
    schedule.run(&mut world);
    take(&mut world);
    let mut step = |world: &mut World, edit: &dyn Fn(&mut World)| {
        edit(world);
        world.check_invariants();
        schedule.run(world);
        take(world)
    };
    // e0's first target goes: e2 moves up in e0's list, e2's own list of
    // sources is as it was.
    assert_eq!(
        step(&mut world, &|w| w.despawn(e[1]).unwrap()),
        [("likes", e[0])]
    );
    // e2's first source goes: e4 moves up in e2's list; e4's targets are
    // as they were.
    assert_eq!(
        step(&mut world, &|w| assert_eq!(
            w.unrelate::<Likes>(e[0], e[2]),
            Ok(Likes)
        )),
        [("fans", e[2])]
    );
    assert_eq!(
        step(&mut world, &|w| w.despawn(e[3]).unwrap()),
        [("fans", e[2])]
    );
    // A child unparented, then one despawned: the last sibling moves up
    // in the parent's list, and is not reparented.
    assert_eq!(
        step(&mut world, &|w| assert_eq!(w.remove_parent(c[0]), Ok(p))),
        [("kids", p)]
    );
    assert_eq!(
        step(&mut world, &|w| w.despawn(c[2]).unwrap()),
        [("kids", p)]
    );
    assert!(step(&mut world, &|_| {}).is_empty());
}
