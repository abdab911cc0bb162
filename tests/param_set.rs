//! Integration tests for `ParamSet` (issue #37): conflicting queries in one
//! set both writing, on both executors, through `run_system_once`, a
//! registered system and an observer; a set beside a conflicting direct
//! parameter refused with the same error as two direct parameters (either
//! order, components and resources, and a member conflicting with itself);
//! the set's whole access seen by the schedule (`conflicts_with`, and a
//! writer through a set never overlapping a reader under the parallel
//! executor); `Res`, `ResMut`, `Commands`, `Local` and `EventReader` inside a
//! set; change detection through `p0()`; skipping (a `Single` with no match)
//! and a missing resource; an 8-member set; and a set in a derived
//! `SystemParam` struct.

// A set's type spells out its members, as a user's system signature does.
#![allow(clippy::type_complexity)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mosaic::prelude::*;
use mosaic::{IntoSystem, System};

mod common;
use common::executors::{EXECUTORS, schedule_on};
use common::panics::expect_panic;

#[derive(Component, Debug, PartialEq)]
struct A(u32);
#[derive(Component, Debug, PartialEq)]
struct B(u32);
#[derive(Component)]
struct Player;
#[derive(Component)]
struct Enemy;

/// Both queries write `A`; an entity that is a player and an enemy is in
/// both, which is why they could not be two direct parameters.
fn move_both(
    mut set: ParamSet<(
        Query<&'static mut A, With<Player>>,
        Query<&'static mut A, With<Enemy>>,
    )>,
) {
    for a in set.p0().iter_mut() {
        a.0 += 1;
    }
    for a in set.p1().iter_mut() {
        a.0 += 10;
    }
}

fn spawn_three(world: &mut World) -> [Entity; 3] {
    [
        world.spawn((A(0), Player)),
        world.spawn((A(0), Enemy)),
        world.spawn((A(0), Player, Enemy)),
    ]
}

fn values(world: &World, entities: [Entity; 3]) -> [u32; 3] {
    entities.map(|e| world.get::<A>(e).unwrap().0)
}

#[test]
fn two_conflicting_queries_in_a_set_both_write() {
    let mut world = World::new();
    let es = spawn_three(&mut world);
    world.run_system_once(move_both);
    assert_eq!(values(&world, es), [1, 10, 11]);

    for kind in EXECUTORS {
        let mut world = World::new();
        let es = spawn_three(&mut world);
        let mut schedule = schedule_on(kind);
        schedule.add_systems(move_both);
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(values(&world, es), [2, 20, 22], "{kind:?}");
    }
}

#[test]
fn a_registered_system_and_an_observer_take_a_set() {
    let mut world = World::new();
    let es = spawn_three(&mut world);
    let id = world.register_system(move_both);
    world.run_system(id).unwrap();
    assert_eq!(values(&world, es), [1, 10, 11]);

    struct Hit(u32);
    world.add_observer(
        |t: Trigger<Hit>,
         mut set: ParamSet<(Query<&'static mut A, With<Player>>, Query<&'static mut A>)>| {
            for a in set.p0().iter_mut() {
                a.0 += t.event().0;
            }
            for a in set.p1().iter_mut() {
                a.0 *= 2;
            }
        },
    );
    world.trigger(Hit(100));
    assert_eq!(values(&world, es), [202, 20, 222]);
}

// ----- conflicts with the system's other parameters -------------------------------

fn build_error<M>(system: impl IntoSystem<M, System: System<Out = ()>>) -> String {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("culprit", system);
    match schedule.build(&mut world) {
        Err(ScheduleError::ParamConflict { system, detail }) => {
            assert_eq!(system, "culprit");
            detail
        }
        other => panic!("expected ParamConflict, got {other:?}"),
    }
}

#[test]
fn a_set_beside_a_conflicting_direct_param_is_refused_like_two_direct_params() {
    // The set first, then the direct parameter.
    let plain = build_error(|_w: Query<&mut A>, _r: Query<&A>| {});
    let set = build_error(|_s: ParamSet<(Query<&'static mut A>,)>, _r: Query<&'static A>| {});
    assert_eq!(set, plain);
    assert!(set.contains("`Query<&A>` and `Query<&mut A>` both access component `A`"));

    // The direct parameter first, then the set (its second member clashes).
    let plain = build_error(|_r: Query<&A>, _w: Query<&mut A>| {});
    let set = build_error(
        |_r: Query<&'static A>, _s: ParamSet<(Query<&'static B>, Query<&'static mut A>)>| {},
    );
    assert_eq!(set, plain);
    assert!(set.contains("`Query<&mut A>` and `Query<&A>` both access component `A`"));

    // Resources.
    let plain = build_error(|_w: ResMut<u32>, _r: Res<u32>| {});
    let set = build_error(|_s: ParamSet<(Res<u8>, ResMut<u32>)>, _r: Res<u32>| {});
    assert_eq!(set, plain);
    assert!(set.contains("resource `u32` is borrowed both mutably and immutably"));

    // `&World` beside a set that writes.
    let detail =
        build_error(|_s: ParamSet<(Query<&'static A>, Query<&'static mut B>)>, _w: &World| {});
    assert!(detail.contains("`&World` reads everything"), "{detail}");

    // The same refusal from `run_system_once`, naming the conflict.
    let text = expect_panic(|| {
        World::new()
            .run_system_once(|_s: ParamSet<(Query<&'static mut A>,)>, _r: Query<&'static A>| {})
    });
    assert!(text.contains("both access component `A`"), "{text}");
}

#[test]
fn a_member_conflicting_with_itself_is_still_refused() {
    let detail = build_error(
        |_s: ParamSet<(
            Query<&'static B>,
            (Query<&'static mut A>, Query<&'static A>),
        )>| {},
    );
    assert!(detail.contains("both access component `A`"), "{detail}");
}

#[test]
fn members_may_conflict_with_each_other_but_not_with_a_disjoint_direct_param() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system(
        "fine",
        |_s: ParamSet<(
            Query<&'static mut A>,
            Query<&'static A>,
            ResMut<u32>,
            Res<u32>,
        )>,
         _b: Query<&'static mut B>| {},
    );
    schedule.build(&mut world).unwrap();
}

// ----- the schedule sees the set's whole access ----------------------------------

fn initialized<M>(system: impl IntoSystem<M>, world: &mut World) -> impl System {
    let mut system = system.into_system();
    system.initialize(world).unwrap();
    system
}

#[test]
fn the_sets_access_is_the_union_of_its_members() {
    let mut world = World::new();
    world.insert_resource(0u32);
    let set = initialized(
        |_s: ParamSet<(
            Query<&'static A, With<Player>>,
            Query<&'static mut A>,
            Res<u32>,
        )>| {},
        &mut world,
    );
    let reader_a = initialized(|_q: Query<&A>| {}, &mut world);
    let reader_b = initialized(|_q: Query<&B>| {}, &mut world);
    let writer_u32 = initialized(|_r: ResMut<u32>| {}, &mut world);
    let reader_u32 = initialized(|_r: Res<u32>| {}, &mut world);
    // The second member writes `A`: a reader of `A` conflicts.
    assert!(set.access().conflicts_with(reader_a.access()));
    assert!(reader_a.access().conflicts_with(set.access()));
    // The third reads the resource: a writer conflicts, a reader does not.
    assert!(set.access().conflicts_with(writer_u32.access()));
    assert!(!set.access().conflicts_with(reader_u32.access()));
    // Nothing of `B`.
    assert!(!set.access().conflicts_with(reader_b.access()));
    let a = world.component_id::<A>().unwrap();
    assert!(set.access().queries().any(|(_, access)| access.writes(a)));
    assert!(
        set.access()
            .reads_resource(world.resource_id::<u32>().unwrap())
    );
}

fn busy(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn a_writer_through_a_set_never_overlaps_a_reader_under_the_parallel_executor() {
    let inside = Arc::new(AtomicBool::new(false));
    let violated = Arc::new(AtomicBool::new(false));
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut world = World::new();
    world.spawn_batch((0..10).map(|i| (A(0), B(i))));
    let mut schedule = schedule_on(ExecutorKind::Parallel);
    let (ins, ord) = (inside.clone(), order.clone());
    schedule.add_system(
        "writer",
        move |mut set: ParamSet<(Query<&'static B>, Query<&'static mut A>)>| {
            ins.store(true, Ordering::SeqCst);
            ord.lock().unwrap().push("writer");
            let _ = set.p0().iter().count();
            for a in set.p1().iter_mut() {
                a.0 += 1;
            }
            busy(Duration::from_micros(200));
            ins.store(false, Ordering::SeqCst);
        },
    );
    // Free to overlap the writer: the block has parallelism.
    schedule.add_system("other", |q: Query<&B>| {
        let _ = q.iter().count();
        busy(Duration::from_micros(200));
    });
    let (ins, vio, ord) = (inside.clone(), violated.clone(), order.clone());
    schedule.add_system("reader", move |q: Query<&A>| {
        if ins.load(Ordering::SeqCst) {
            vio.store(true, Ordering::SeqCst);
        }
        ord.lock().unwrap().push("reader");
        let _ = q.iter().count();
        busy(Duration::from_micros(100));
        if ins.load(Ordering::SeqCst) {
            vio.store(true, Ordering::SeqCst);
        }
    });
    const RUNS: usize = if cfg!(miri) { 10 } else { 100 };
    for _ in 0..RUNS {
        schedule.run(&mut world);
    }
    assert!(
        !violated.load(Ordering::SeqCst),
        "a reader of A overlapped a writer of A through a ParamSet"
    );
    // Conflicting systems keep the order they were added in.
    let order = order.lock().unwrap();
    assert_eq!(order.len(), 2 * RUNS);
    assert!(order.chunks(2).all(|pair| pair == ["writer", "reader"]));
    assert!(world.query::<&A>().iter(&world).all(|a| a.0 == RUNS as u32));
}

// ----- members of every kind ---------------------------------------------------------

#[derive(Component)]
struct Spawned;

#[test]
fn res_resmut_and_commands_inside_a_set() {
    let system = |mut set: ParamSet<(Res<u32>, ResMut<u32>, Commands, Option<Res<u8>>)>| {
        let seen = *set.p0();
        *set.p1() += 1;
        set.p2().spawn(Spawned);
        assert!(set.p3().is_none());
        seen
    };
    let mut world = World::new();
    world.insert_resource(5u32);
    assert_eq!(world.run_system_once(system), 5);
    assert_eq!(*world.resource::<u32>(), 6);
    assert_eq!(world.query::<&Spawned>().iter(&world).count(), 1);

    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(5u32);
        let mut schedule = schedule_on(kind);
        schedule.add_systems(
            move |set: ParamSet<(Res<u32>, ResMut<u32>, Commands, Option<Res<u8>>)>| {
                system(set);
            },
        );
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(*world.resource::<u32>(), 7, "{kind:?}");
        assert_eq!(
            world.query::<&Spawned>().iter(&world).count(),
            2,
            "{kind:?}"
        );
    }

    // An observer's commands join the observers' queue.
    let mut world = World::new();
    world.insert_resource(0u32);
    struct Go;
    world.add_observer(
        |_t: Trigger<Go>, mut set: ParamSet<(ResMut<u32>, Commands)>| {
            *set.p0() += 1;
            set.p1().spawn(Spawned);
        },
    );
    world.trigger(Go);
    assert_eq!(*world.resource::<u32>(), 1);
    assert_eq!(world.query::<&Spawned>().iter(&world).count(), 1);
}

#[test]
fn member_state_is_made_once_and_kept_between_runs() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = seen.clone();
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(
        move |mut set: ParamSet<(Local<u32>, Local<u32>, EventReader<u8>)>| {
            *set.p0() += 1;
            *set.p1() += 10;
            let events: Vec<u8> = set.p2().read().copied().collect();
            let (a, b) = (*set.p0(), *set.p1());
            out.lock().unwrap().push((a, b, events));
        },
    );
    schedule.run(&mut world);
    world.send_event(7u8);
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(
        *seen.lock().unwrap(),
        [(1, 10, vec![]), (2, 20, vec![7]), (3, 30, vec![])]
    );
}

// ----- change detection ---------------------------------------------------------------

#[test]
fn a_write_through_p0_is_seen_by_changed_in_a_later_system() {
    for kind in EXECUTORS {
        let mut world = World::new();
        let target = world.spawn((A(0), Player));
        world.spawn(A(0));
        world.insert_resource(false); // write this run?
        let changed = Arc::new(Mutex::new(Vec::new()));
        let out = changed.clone();
        let mut schedule = schedule_on(kind);
        schedule.add_system(
            "writer",
            |write: Res<bool>, mut set: ParamSet<(Query<&'static mut A, With<Player>>, Query<&'static A>)>| {
                if *write {
                    for a in set.p0().iter_mut() {
                        a.0 += 1;
                    }
                } else {
                    // Fetched, not iterated: marks nothing.
                    let _ = set.p0();
                }
                let _ = set.p1().iter().count();
            },
        );
        schedule
            .add_system("watcher", move |q: Query<Entity, Changed<A>>| {
                out.lock().unwrap().push(q.iter().collect::<Vec<_>>());
            })
            .after("writer");
        schedule.run(&mut world); // everything is new to the watcher
        schedule.run(&mut world); // nothing written
        *world.resource_mut::<bool>() = true;
        schedule.run(&mut world); // the player written
        schedule.run(&mut world); // and again
        let changed = changed.lock().unwrap();
        assert_eq!(changed[0].len(), 2, "{kind:?}");
        assert_eq!(changed[1], [], "{kind:?}");
        assert_eq!(changed[2], [target], "{kind:?}");
        assert_eq!(changed[3], [target], "{kind:?}");
    }
}

// ----- skipping and missing resources --------------------------------------------------

#[test]
fn a_member_that_declines_skips_the_whole_system_before_it_starts() {
    let mut world = World::new();
    let e = world.spawn(A(0));
    let mut system = (|mut set: ParamSet<(Query<&'static mut A>, Single<&'static B>)>| {
        for a in set.p0().iter_mut() {
            a.0 += 1;
        }
        let _ = set.p1();
    })
    .into_system();
    let skip = system.try_run(&mut world).unwrap_err();
    assert!(skip.warns());
    // The direct parameter's reason, word for word.
    let mut direct = (|_b: Single<&B>| {}).into_system();
    assert_eq!(skip, direct.try_run(&mut world).unwrap_err());
    assert_eq!(world.get::<A>(e), Ok(&A(0)), "nothing ran");

    world.spawn(B(0));
    system.try_run(&mut world).unwrap();
    assert_eq!(world.get::<A>(e), Ok(&A(1)));
}

#[test]
fn a_missing_resource_in_a_set_panics_as_a_direct_one_does() {
    let direct = expect_panic(|| World::new().run_system_once(|_r: Res<u64>| {}));
    let in_set = expect_panic(|| {
        World::new().run_system_once(|mut set: ParamSet<(Query<&'static A>, Res<u64>)>| {
            let _ = set.p0().iter().count();
        })
    });
    assert!(in_set.contains("resource `u64` does not exist"), "{in_set}");
    // Same words, after each names its own system.
    let tail = |s: &str| s.split_once("panicked: ").map(|(_, t)| t.to_owned());
    assert_eq!(tail(&in_set), tail(&direct));
    assert!(tail(&direct).is_some(), "{direct}");
}

// ----- eight members --------------------------------------------------------------------

#[test]
fn a_set_of_eight_hands_out_each() {
    type Q<'w, 's> = Query<'w, 's, &'static mut A>;
    let mut world = World::new();
    let e = world.spawn(A(0));
    world.run_system_once(|mut set: ParamSet<(Q, Q, Q, Q, Q, Q, Q, Q)>| {
        set.p0().single_mut().0 += 1;
        set.p1().single_mut().0 += 2;
        set.p2().single_mut().0 += 3;
        set.p3().single_mut().0 += 4;
        set.p4().single_mut().0 += 5;
        set.p5().single_mut().0 += 6;
        set.p6().single_mut().0 += 7;
        set.p7().single_mut().0 += 8;
    });
    assert_eq!(world.get::<A>(e), Ok(&A(36)));
}

#[test]
fn a_set_debug_names_its_members() {
    let mut world = World::new();
    world.insert_resource(0u32);
    let text =
        world.run_system_once(|set: ParamSet<(Query<&'static A>, Res<u32>)>| format!("{set:?}"));
    assert!(text.starts_with("ParamSet"), "{text}");
    assert!(text.contains("Query"), "{text}");
}

// ----- in a derived parameter ---------------------------------------------------------

// The members' own lifetimes are `'static` (only the set's are the
// struct's): the set hands them out with its own borrow's lifetimes.
#[derive(SystemParam)]
struct Movers<'w, 's> {
    set: ParamSet<
        'w,
        's,
        (
            Query<'static, 'static, &'static mut A, With<Player>>,
            Query<'static, 'static, &'static mut A, With<Enemy>>,
        ),
    >,
    runs: Local<'s, u32>,
}

#[test]
fn a_set_inside_a_derived_system_param() {
    let mut world = World::new();
    let es = spawn_three(&mut world);
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut m: Movers| {
        *m.runs += 1;
        let runs = *m.runs;
        for a in m.set.p0().iter_mut() {
            a.0 += runs;
        }
        for a in m.set.p1().iter_mut() {
            a.0 += 10 * runs;
        }
    });
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(values(&world, es), [3, 30, 33]);
}
