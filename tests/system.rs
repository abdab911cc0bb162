//! Integration tests for function systems: every parameter kind (`Query`
//! with and without a filter, `Res`, `ResMut`, `Option<Res>`,
//! `Option<ResMut>`, `Commands`, `Local`, `&World`) and exclusive
//! `fn(&mut World)` systems; systems of 16 parameters and nested parameter
//! tuples; `World::run_system_once` (fresh state, output, panics named after
//! the system); parameter conflicts inside one system (reported by
//! `Schedule::build` as `ScheduleError::ParamConflict`, accepted when
//! filters make queries disjoint, and a panic from `run_system_once`); the
//! `System` trait used directly; and the `Query` parameter's methods (`iter`,
//! `iter_mut`, `for` loops over `&q` and `&mut q`, `get`, `get_mut`, `contains`, `single`, `get_single`,
//! `single_mut`, `par_iter`, `par_iter_mut`, `par_chunks`, `par_chunks_mut`,
//! `iter_combinations`,
//! `iter_combinations_mut`) and its `Added`/`Changed` filters, which compare
//! against the system's previous run.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mosaic::prelude::*;
use mosaic::{IntoSystem, System};

mod common;
use common::panics::expect_panic;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct A(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct B(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct C(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Pos(f32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Vel(f32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Player;
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Id(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy, Default)]
struct Counter(u32);

#[derive(Debug, Default, PartialEq)]
struct Score(u32);
#[derive(Debug, Default, PartialEq)]
struct Log(Vec<u32>);
struct Missing;

// ----- parameter kinds -------------------------------------------------------------

#[test]
fn query_param_without_filter() {
    let mut world = World::new();
    world.spawn_batch((1..=4).map(A));
    world.spawn((A(10), B(1)));
    world.spawn(B(2));
    // `F` defaults to `()`.
    fn sum(q: Query<&A>) -> u32 {
        q.iter().map(|a| a.0).sum()
    }
    assert_eq!(world.run_system_once(sum), 20);
    let n = world.run_system_once(|q: Query<(Entity, &A, Option<&B>)>| {
        q.iter().filter(|(_, _, b)| b.is_some()).count()
    });
    assert_eq!(n, 1);
}

#[test]
fn query_param_with_filters() {
    let mut world = World::new();
    world.spawn((A(1), B(1)));
    world.spawn((A(2), C(2)));
    world.spawn((A(3), B(3), C(3)));
    world.spawn(A(4));
    let with_b = world.run_system_once(|q: Query<&A, With<B>>| {
        let mut v: Vec<u32> = q.iter().map(|a| a.0).collect();
        v.sort();
        v
    });
    assert_eq!(with_b, [1, 3]);
    let neither = world.run_system_once(|q: Query<&A, (Without<B>, Without<C>)>| {
        q.iter().map(|a| a.0).collect::<Vec<_>>()
    });
    assert_eq!(neither, [4]);
    type WithBOrC = Or<(With<B>, With<C>)>;
    let either = world.run_system_once(|q: Query<&A, WithBOrC>| q.iter().count());
    assert_eq!(either, 3);
}

#[test]
fn res_and_res_mut_params() {
    let mut world = World::new();
    world.insert_resource(Score(2));
    world.insert_resource(Log::default());
    fn double(score: Res<Score>, mut log: ResMut<Log>) {
        log.0.push(score.0 * 2);
    }
    world.run_system_once(double);
    world.run_system_once(double);
    assert_eq!(world.resource::<Log>().0, [4, 4]);
    world.run_system_once(|mut s: ResMut<Score>| s.0 = 7);
    assert_eq!(world.resource::<Score>().0, 7);
}

#[test]
fn optional_res_params_with_and_without_the_resource() {
    let mut world = World::new();
    let read = |s: Option<Res<Score>>| s.map(|s| s.0);
    let write = |s: Option<ResMut<Score>>| match s {
        Some(mut s) => {
            s.0 += 1;
            true
        }
        None => false,
    };
    assert_eq!(world.run_system_once(read), None);
    assert!(!world.run_system_once(write));
    assert!(
        !world.contains_resource::<Score>(),
        "Option<ResMut> inserts nothing"
    );
    world.insert_resource(Score(5));
    assert_eq!(world.run_system_once(read), Some(5));
    assert!(world.run_system_once(write));
    assert_eq!(world.resource::<Score>().0, 6);
    world.remove_resource::<Score>();
    assert_eq!(world.run_system_once(read), None);
}

#[test]
fn optional_res_in_a_schedule_follows_the_resource() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_system("log", |s: Option<Res<Score>>, mut log: ResMut<Log>| {
        log.0.push(s.map_or(0, |s| s.0));
    });
    schedule.add_system("bump", |s: Option<ResMut<Score>>| {
        if let Some(mut s) = s {
            s.0 += 10;
        }
    });
    schedule.run(&mut world);
    world.insert_resource(Score(1));
    schedule.run(&mut world);
    schedule.run(&mut world);
    world.remove_resource::<Score>();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, [0, 1, 11, 0]);
}

#[test]
#[should_panic(expected = "resource `Missing` does not exist in this world")]
fn res_of_a_missing_resource_panics_naming_it() {
    let mut world = World::new();
    world.run_system_once(|_m: Res<Missing>| {});
}

#[test]
fn res_of_a_missing_resource_panics_naming_the_system() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("needs_missing", |_m: ResMut<Missing>| {});
    let msg = expect_panic(|| schedule.run(&mut world));
    assert!(msg.contains("needs_missing"), "{msg}");
    assert!(msg.contains("resource `Missing` does not exist"), "{msg}");
}

#[test]
fn commands_param() {
    let mut world = World::new();
    let e = world.spawn(A(1));
    let spawned = world.run_system_once(move |mut commands: Commands, q: Query<&A>| {
        let a = q.get(e).unwrap().0;
        commands.insert(e, B(a + 1));
        commands.spawn(A(a + 2))
    });
    assert_eq!(world.get::<B>(e), Ok(&B(2)));
    assert_eq!(world.get::<A>(spawned), Ok(&A(3)));
}

#[test]
fn local_keeps_state_across_schedule_runs() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    fn count(mut n: Local<u32>, mut log: ResMut<Log>) {
        *n += 1;
        log.0.push(*n);
    }
    fn count_by_ten(mut n: Local<u32>, mut log: ResMut<Log>) {
        *n += 10;
        log.0.push(*n);
    }
    let mut schedule = Schedule::new();
    schedule.add_system("count", count);
    schedule.add_system("tens", count_by_ten).after("count");
    // The same function twice: two independent Locals.
    schedule.add_system("count_again", count).after("tens");
    for _ in 0..3 {
        schedule.run(&mut world);
    }
    assert_eq!(world.resource::<Log>().0, [1, 10, 1, 2, 20, 2, 3, 30, 3]);
}

#[test]
fn local_of_a_non_copy_type_and_run_system_once_resets() {
    let mut world = World::new();
    fn remember(mut seen: Local<Vec<u32>>, q: Query<&A>) -> usize {
        seen.extend(q.iter().map(|a| a.0));
        seen.len()
    }
    world.spawn(A(1));
    // run_system_once builds a fresh system: its Local starts over.
    assert_eq!(world.run_system_once(remember), 1);
    assert_eq!(world.run_system_once(remember), 1);
    // A system kept across runs keeps it.
    let mut system = remember.into_system();
    assert_eq!(system.run(&mut world), 1);
    assert_eq!(system.run(&mut world), 2);
    world.spawn(A(2));
    assert_eq!(system.run(&mut world), 4);
    assert_eq!(
        world.run_system_once(|l: Local<u8>| format!("{l:?}")),
        "Local(0)"
    );
}

#[test]
fn world_ref_param() {
    let mut world = World::new();
    world.spawn_batch((0..7).map(A));
    world.insert_resource(Score(3));
    let (len, score, has) = world.run_system_once(|w: &World, q: Query<&A>| {
        (
            w.len(),
            w.resource::<Score>().0,
            q.iter().count() == w.len(),
        )
    });
    assert_eq!((len, score, has), (7, 3, true));
    // &World with readers of resources is fine.
    let ok = world.run_system_once(|w: &World, s: Res<Score>| w.resource::<Score>().0 == s.0);
    assert!(ok);
}

#[test]
fn world_ref_in_a_schedule() {
    let seen = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    world.spawn_batch((0..3).map(A));
    let mut schedule = Schedule::new();
    let s = seen.clone();
    schedule.add_system("inspect", move |w: &World| {
        s.store(w.len(), Ordering::SeqCst);
    });
    schedule.add_system("spawn", |mut commands: Commands| {
        commands.spawn(A(9));
    });
    schedule.run(&mut world);
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    schedule.run(&mut world);
    assert_eq!(seen.load(Ordering::SeqCst), 4);
}

#[test]
fn exclusive_system() {
    let mut world = World::new();
    world.spawn(A(1));
    fn exclusive(world: &mut World) -> usize {
        world.spawn(A(2));
        world.insert_resource(Score(1));
        world.len()
    }
    assert_eq!(world.run_system_once(exclusive), 2);
    assert_eq!(world.resource::<Score>().0, 1);

    let mut schedule = Schedule::new();
    schedule.add_system("grow", |world: &mut World| {
        world.resource_mut::<Score>().0 += 1;
        world.spawn(A(3));
    });
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Score>().0, 3);
    assert_eq!(world.len(), 4);
    let mut system = exclusive.into_system();
    system.initialize(&mut world).unwrap();
    assert!(system.access().is_exclusive());
}

#[test]
fn system_output_is_returned() {
    let mut world = World::new();
    world.spawn_batch((0..3).map(A));
    let v: Vec<u32> = world.run_system_once(|q: Query<&A>| q.iter().map(|a| a.0).collect());
    assert_eq!(v, [0, 1, 2]);
    #[allow(clippy::let_unit_value)]
    let unit: () = world.run_system_once(|| {});
    assert_eq!(unit, ());
    assert_eq!(world.run_system_once(|| 5u8), 5);
}

#[allow(clippy::too_many_arguments)]
fn sixteen(
    q1: Query<&A>,
    q2: Query<&B>,
    r1: Res<u8>,
    r2: Res<u16>,
    r3: Res<u32>,
    mut r4: ResMut<u64>,
    o1: Option<Res<i8>>,
    o2: Option<ResMut<i16>>,
    mut commands: Commands,
    mut l1: Local<u32>,
    mut l2: Local<String>,
    q3: Query<Entity, With<A>>,
    mut q4: Query<&mut C>,
    r5: Res<i32>,
    w: Option<Res<f32>>,
    q5: Query<(), Without<A>>,
) {
    *l1 += 1;
    l2.push('x');
    let mut total = u64::from(*r1) + u64::from(*r2) + u64::from(*r3) + *r5 as u64;
    total += q1.iter().map(|a| u64::from(a.0)).sum::<u64>();
    total += q2.iter().map(|b| u64::from(b.0)).sum::<u64>();
    total += q3.iter().count() as u64 + q5.iter().count() as u64;
    total += o1.map_or(1000, |v| *v as u64);
    total += o2.map_or(2000, |v| *v as u64);
    total += w.map_or(0, |v| *v as u64);
    for c in q4.iter_mut() {
        c.0 += 1;
    }
    *r4 = total * 100 + u64::from(*l1) * 10 + l2.len() as u64;
    commands.insert_resource(*l1);
}

#[test]
fn a_system_of_sixteen_params() {
    let mut world = World::new();
    world.insert_resource(1u8);
    world.insert_resource(2u16);
    world.insert_resource(3u32);
    world.insert_resource(0u64);
    world.insert_resource(4i32);
    world.spawn((A(10), C(0)));
    world.spawn(B(20));
    let mut schedule = Schedule::new();
    schedule.add_system("sixteen", sixteen);
    schedule.run(&mut world);
    // 1+2+3+4 + 10 + 20 + 1 (q3) + 1 (q5) + 1000 + 2000 + 0 = 3042
    assert_eq!(*world.resource::<u64>(), 3042 * 100 + 10 + 1);
    assert_eq!(*world.resource::<u32>(), 1, "commands applied");
    schedule.run(&mut world);
    // r3 is now 1 (written by the command): 3040; Locals at 2.
    assert_eq!(*world.resource::<u64>(), 3040 * 100 + 20 + 2);
    let c = world.run_system_once(|q: Query<&C>| q.single().0);
    assert_eq!(c, 2);
}

#[test]
#[allow(clippy::type_complexity)]
fn nested_param_tuples_go_beyond_sixteen() {
    let mut world = World::new();
    world.insert_resource(1u8);
    world.insert_resource(2u16);
    world.insert_resource(3u32);
    world.insert_resource(4u64);
    world.spawn(A(5));
    #[allow(clippy::too_many_arguments)]
    fn wide(
        (a, b): (Res<u8>, Res<u16>),
        (c, (d, q)): (Res<u32>, (Res<u64>, Query<&A>)),
        _p3: Local<u8>,
        _p4: Local<u16>,
        _p5: Local<u32>,
        _p6: Local<u64>,
        _p7: Local<i8>,
        _p8: Local<i16>,
        _p9: Local<i32>,
        _p10: Local<i64>,
        _p11: Local<u128>,
        _p12: Local<i128>,
        _p13: Local<bool>,
        _p14: Local<char>,
        _p15: Local<String>,
        mut out: Local<Vec<u64>>,
    ) -> u64 {
        let sum = u64::from(*a)
            + u64::from(*b)
            + u64::from(*c)
            + *d
            + q.iter().map(|a| u64::from(a.0)).sum::<u64>();
        out.push(sum);
        sum
    }
    assert_eq!(world.run_system_once(wide), 15);
}

// ----- parameter conflicts -----------------------------------------------------------

fn build_error<M>(system: impl IntoSystem<M, System: System<Out = ()>>) -> ScheduleError {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("culprit", system);
    schedule.build(&mut world).expect_err("conflict expected")
}

#[test]
fn conflicting_queries_are_a_build_error() {
    let err = build_error(|_w: Query<&mut A>, _r: Query<&A>| {});
    let ScheduleError::ParamConflict { system, detail } = &err else {
        panic!("expected ParamConflict, got {err:?}");
    };
    assert_eq!(system, "culprit");
    assert!(detail.contains("component `A`"), "{detail}");
    assert!(
        detail.contains("Query<&mut A>") && detail.contains("Query<&A>"),
        "{detail}"
    );
    let text = err.to_string();
    assert!(
        text.contains("system `culprit` has conflicting parameters"),
        "{text}"
    );
    assert!(text.contains("`A`"), "{text}");

    // Two writers, too; and a filter reading what another query writes.
    assert!(matches!(
        build_error(|_w: Query<&mut A>, _r: Query<(&B, &mut A)>| {}),
        ScheduleError::ParamConflict { .. }
    ));
    assert!(matches!(
        build_error(|_w: Query<&mut A>, _r: Query<Entity, Changed<A>>| {}),
        ScheduleError::ParamConflict { .. }
    ));
}

#[test]
fn disjoint_filters_make_queries_compatible() {
    let mut world = World::new();
    let with_b = world.spawn((A(1), B(0)));
    let without_b = world.spawn(A(2));
    let mut schedule = Schedule::new();
    schedule.add_system(
        "copy",
        |mut w: Query<&mut A, With<B>>, r: Query<&A, Without<B>>| {
            let total: u32 = r.iter().map(|a| a.0).sum();
            for a in w.iter_mut() {
                a.0 += total * 100;
            }
        },
    );
    schedule
        .build(&mut world)
        .expect("disjoint queries are accepted");
    schedule.run(&mut world);
    assert_eq!(world.get::<A>(with_b), Ok(&A(201)));
    assert_eq!(world.get::<A>(without_b), Ok(&A(2)));
    // Two readers never conflict.
    let mut ok = Schedule::new();
    ok.add_system(
        "readers",
        |_a: Query<&A>, _b: Query<(&A, &B)>, _c: Res<Score>, _d: Res<Score>| {},
    );
    ok.build(&mut world).unwrap();
}

#[test]
fn res_mut_twice_is_a_build_error_naming_the_resource() {
    let err = build_error(|_a: ResMut<Score>, _b: ResMut<Score>| {});
    let ScheduleError::ParamConflict { system, detail } = &err else {
        panic!("expected ParamConflict, got {err:?}");
    };
    assert_eq!(system, "culprit");
    assert!(detail.contains("Score"), "{detail}");
    // Reader and writer of one resource.
    let err = build_error(|_a: Res<Score>, _b: ResMut<Score>| {});
    assert!(
        matches!(&err, ScheduleError::ParamConflict { detail, .. } if detail.contains("Score"))
    );
    let err = build_error(|_a: ResMut<Score>, _b: Option<Res<Score>>| {});
    assert!(
        matches!(&err, ScheduleError::ParamConflict { detail, .. } if detail.contains("Score"))
    );
}

#[test]
fn world_ref_and_writers_conflict() {
    for err in [
        build_error(|_w: &World, _r: ResMut<Score>| {}),
        build_error(|_r: ResMut<Score>, _w: &World| {}),
        build_error(|_w: &World, _q: Query<&mut A>| {}),
        build_error(|_q: Query<&mut A>, _w: &World| {}),
    ] {
        assert!(
            matches!(&err, ScheduleError::ParamConflict { system, .. } if system == "culprit"),
            "{err:?}"
        );
        assert!(err.to_string().contains("&World"), "{err}");
    }
}

#[test]
fn run_system_once_with_conflicting_params_panics_with_the_conflict() {
    let mut world = World::new();
    let msg = expect_panic(|| world.run_system_once(|_w: Query<&mut A>, _r: Query<&A>| {}));
    assert!(msg.contains("cannot run"), "{msg}");
    assert!(msg.contains("component `A`"), "{msg}");
    let msg = expect_panic(|| world.run_system_once(|_a: ResMut<Score>, _b: ResMut<Score>| {}));
    assert!(msg.contains("Score"), "{msg}");
}

#[test]
#[should_panic(expected = "both access component `A`")]
fn run_system_once_conflict_should_panic() {
    World::new().run_system_once(|_w: Query<&mut A>, _r: Query<&A>| {});
}

#[test]
fn a_self_aliasing_query_is_refused() {
    let mut world = World::new();
    let msg = expect_panic(|| world.run_system_once(|_q: Query<(&mut A, &A)>| {}));
    assert!(msg.contains("`A`"), "{msg}");
}

// ----- run_system_once and the System trait -------------------------------------------

#[test]
fn run_system_once_names_the_system_in_a_panic() {
    let mut world = World::new();
    fn explode(_q: Query<&A>) {
        panic!("kaboom");
    }
    let msg = expect_panic(|| world.run_system_once(explode));
    assert!(msg.contains("explode"), "{msg}");
    assert!(msg.contains("kaboom"), "{msg}");
}

#[test]
fn kill_every_entity_with_health_and_ai() {
    #[derive(Component)]
    #[allow(dead_code)]
    struct Health(u32);
    #[derive(Component)]
    struct Ai;
    fn smite(mut commands: Commands, q: Query<Entity, (With<Health>, With<Ai>)>) {
        for e in q.iter() {
            commands.despawn(e);
        }
    }
    let mut world = World::new();
    let both: Vec<Entity> = (0..5).map(|i| world.spawn((Health(i), Ai))).collect();
    let both_more: Vec<Entity> = (0..3).map(|i| world.spawn((Health(i), Ai, A(i)))).collect();
    let health_only: Vec<Entity> = (0..4).map(|i| world.spawn(Health(i))).collect();
    let ai_only: Vec<Entity> = (0..2).map(|_| world.spawn(Ai)).collect();
    let other = world.spawn(A(1));
    world.run_system_once(smite);
    for e in both.iter().chain(&both_more) {
        assert!(!world.contains(*e));
    }
    for e in health_only.iter().chain(&ai_only).chain([&other]) {
        assert!(world.contains(*e));
    }
    assert_eq!(world.len(), 7);
    // Again: nothing left to smite.
    world.run_system_once(smite);
    assert_eq!(world.len(), 7);
    world.check_invariants();
}

#[test]
fn system_trait_direct_use() {
    let mut world = World::new();
    world.insert_resource(Score(0));
    let mut system = (|mut s: ResMut<Score>| s.0 += 1).into_system();
    assert!(!system.name().is_empty());
    system.initialize(&mut world).unwrap();
    system.initialize(&mut world).unwrap(); // idempotent
    assert!(!system.access().is_exclusive());
    system.run(&mut world);
    system.run(&mut world);
    assert_eq!(world.resource::<Score>().0, 2);

    fn named_function() {}
    assert!(
        named_function
            .into_system()
            .name()
            .ends_with("named_function")
    );

    let mut conflicting = (|_a: ResMut<Score>, _b: Res<Score>| {}).into_system();
    let err = conflicting.initialize(&mut world).unwrap_err();
    assert!(err.contains("Score"), "{err}");
}

#[test]
fn access_conflicts_between_systems() {
    let mut world = World::new();
    let mut sys = |s: &mut dyn System<Out = ()>| {
        s.initialize(&mut world).unwrap();
    };
    let mut read_a = (|_q: Query<&A>| {}).into_system();
    let mut read_a2 = (|_q: Query<(&A, &B)>| {}).into_system();
    let mut write_a = (|_q: Query<&mut A>| {}).into_system();
    let mut write_b = (|_q: Query<&mut B>| {}).into_system();
    let mut write_a_with_c = (|_q: Query<&mut A, With<C>>| {}).into_system();
    let mut read_a_without_c = (|_q: Query<&A, Without<C>>| {}).into_system();
    let mut res = (|_r: ResMut<Score>| {}).into_system();
    let mut res_read = (|_r: Res<Score>| {}).into_system();
    let mut world_ref = (|_w: &World| {}).into_system();
    let mut exclusive = (|_w: &mut World| {}).into_system();
    sys(&mut read_a);
    sys(&mut read_a2);
    sys(&mut write_a);
    sys(&mut write_b);
    sys(&mut write_a_with_c);
    sys(&mut read_a_without_c);
    sys(&mut res);
    sys(&mut res_read);
    sys(&mut world_ref);
    sys(&mut exclusive);
    let c =
        |x: &dyn System<Out = ()>, y: &dyn System<Out = ()>| x.access().conflicts_with(y.access());
    assert!(!c(&read_a, &read_a2));
    assert!(c(&read_a, &write_a));
    assert!(c(&write_a, &read_a2));
    assert!(!c(&write_a, &write_b));
    assert!(c(&write_b, &read_a2));
    assert!(!c(&write_a_with_c, &read_a_without_c));
    assert!(c(&write_a_with_c, &read_a));
    assert!(c(&res, &res_read));
    assert!(!c(&res_read, &res_read));
    assert!(!c(&res, &write_a));
    assert!(c(&world_ref, &write_a));
    assert!(c(&world_ref, &res));
    assert!(!c(&world_ref, &read_a));
    assert!(!c(&world_ref, &res_read));
    assert!(c(&exclusive, &read_a));
    assert!(c(&read_a, &exclusive));
}

#[test]
#[should_panic(expected = "cannot run on world")]
fn a_system_is_bound_to_its_world() {
    let mut w1 = World::new();
    let mut w2 = World::new();
    let mut system = (|_q: Query<&A>| {}).into_system();
    system.run(&mut w1);
    system.run(&mut w2);
}

// ----- Query methods ---------------------------------------------------------------

#[test]
fn query_iter_and_iter_mut() {
    let mut world = World::new();
    world.spawn_batch((0..10).map(|i| (A(i), B(0))));
    world.spawn_batch((0..5).map(|i| (A(i), C(0))));
    world.run_system_once(|mut q: Query<(&A, &mut B)>| {
        for (a, b) in q.iter_mut() {
            b.0 = a.0 * 3;
        }
    });
    let ok = world.run_system_once(|q: Query<(&A, &B)>| {
        q.iter().count() == 10 && q.iter().all(|(a, b)| b.0 == a.0 * 3)
    });
    assert!(ok);
    world.run_system_once(|mut q: Query<&mut C>| q.iter_mut().for_each(|c| c.0 = 7));
    let cs = world.run_system_once(|q: Query<&C>| q.iter().map(|c| c.0).collect::<Vec<_>>());
    assert_eq!(cs, [7; 5]);
}

/// `for x in &q` and `for x in &mut q` walk what `iter` and `iter_mut` walk,
/// in the same order, inside systems a schedule runs (on both executors).
#[test]
fn for_loops_over_query_references_match_iter_and_iter_mut() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        type Pairs = Vec<(u32, u32)>;
        // What the reader saw: by `for (a, b) in &q`, and by `q.iter()`.
        let seen: Arc<Mutex<Vec<(Pairs, Pairs)>>> = Arc::default();
        let mut world = World::new();
        world.spawn_batch((0..6).map(|i| (A(i), B(0))));
        world.spawn_batch((10..13).map(|i| (A(i), B(0), C(i))));
        world.spawn(A(99)); // no B: matched by neither query
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("write", |mut q: Query<(&A, &mut B)>| {
            for (a, b) in &mut q {
                b.0 = a.0 * 2;
            }
        });
        let out = seen.clone();
        schedule
            .add_system("read", move |q: Query<(&A, &B)>| {
                let mut by_ref = Vec::new();
                for (a, b) in &q {
                    by_ref.push((a.0, b.0));
                }
                let by_iter = q.iter().map(|(a, b)| (a.0, b.0)).collect();
                out.lock().unwrap().push((by_ref, by_iter));
            })
            .after("write");
        schedule.run(&mut world);
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        assert_eq!(seen.len(), 1, "{kind:?}: the reader ran once");
        let (by_ref, by_iter) = &seen[0];
        assert_eq!(by_ref, by_iter, "{kind:?}: same items, same order");
        let mut sorted = by_ref.clone();
        sorted.sort();
        let expected: Vec<(u32, u32)> = (0..6).chain(10..13).map(|i| (i, i * 2)).collect();
        assert_eq!(sorted, expected, "{kind:?}: `&mut q` wrote every match");
    }
}

/// `&mut q` on a read-only query iterates too, and a filtered `&mut q`
/// writes only what the filter lets through; its writes count as changes,
/// as `iter_mut`'s do.
#[test]
fn for_loop_over_mut_query_ref_respects_filters_and_marks_changes() {
    let counts: Counts = Arc::default();
    let mut world = World::new();
    let players = world.spawn_batch((0..3).map(|i| (Pos(i as f32), Player)));
    let others = world.spawn_batch((0..4).map(|i| Pos(i as f32)));
    let mut schedule = Schedule::new();
    schedule.add_system("watch", changed_counter(&counts));
    schedule
        .add_system("move_players", |mut q: Query<&mut Pos, With<Player>>| {
            for p in &mut q {
                p.0 += 100.0;
            }
        })
        .after("watch");
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [7], "first run: everything is new");
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [3], "the players moved by `&mut q`");
    for (i, &e) in players.iter().enumerate() {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32 + 200.0)));
    }
    for (i, &e) in others.iter().enumerate() {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32)));
    }
    let n = world.run_system_once(|mut q: Query<&Pos, Without<Player>>| {
        let mut n = 0;
        for _ in &mut q {
            n += 1;
        }
        n
    });
    assert_eq!(n, 4);
}

#[test]
fn query_get_and_get_mut() {
    let mut world = World::new();
    let a = world.spawn((A(1), B(2)));
    let only_b = world.spawn(B(3));
    let gone = world.spawn(A(0));
    world.despawn(gone).unwrap();
    let (got, missing, dead, contains) = world.run_system_once(move |q: Query<(&A, &B)>| {
        (
            q.get(a).map(|(x, y)| (x.0, y.0)),
            q.get(only_b).map(|_| ()),
            q.get(gone).map(|_| ()),
            (q.contains(a), q.contains(only_b), q.contains(gone)),
        )
    });
    assert_eq!(got, Ok((1, 2)));
    assert!(
        matches!(missing, Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == only_b)
    );
    assert_eq!(dead, Err(QueryEntityError::NoSuchEntity(gone)));
    assert_eq!(contains, (true, false, false));

    world.run_system_once(move |mut q: Query<&mut B>| {
        q.get_mut(a).unwrap().0 = 20;
        q.get_mut(only_b).unwrap().0 = 30;
        assert!(q.get_mut(gone).is_err());
    });
    assert_eq!(world.get::<B>(a), Ok(&B(20)));
    assert_eq!(world.get::<B>(only_b), Ok(&B(30)));
}

#[test]
fn query_single_and_get_single() {
    let mut world = World::new();
    let none = world.run_system_once(|q: Query<&A, With<Player>>| q.get_single().map(|a| a.0));
    assert!(matches!(none, Err(QuerySingleError::NoEntities(ref name)) if name.contains('A')));
    let p = world.spawn((A(5), Player));
    assert_eq!(
        world.run_system_once(|q: Query<&A, With<Player>>| q.single().0),
        5
    );
    assert_eq!(
        world.run_system_once(|q: Query<&A, With<Player>>| q.get_single().map(|a| a.0)),
        Ok(5)
    );
    world.run_system_once(|mut q: Query<&mut A, With<Player>>| q.single_mut().0 = 6);
    assert_eq!(world.get::<A>(p), Ok(&A(6)));
    world.run_system_once(|mut q: Query<&mut A, With<Player>>| q.get_single_mut().unwrap().0 = 7);
    assert_eq!(world.get::<A>(p), Ok(&A(7)));
    world.spawn((A(1), Player));
    let many = world.run_system_once(|q: Query<&A, With<Player>>| q.get_single().map(|a| a.0));
    assert!(matches!(many, Err(QuerySingleError::MultipleEntities(_))));
    let many_mut =
        world.run_system_once(|mut q: Query<&mut A, With<Player>>| q.get_single_mut().is_err());
    assert!(many_mut);
    let text = many.unwrap_err().to_string();
    assert!(
        text.contains("more than one entity matches query"),
        "{text}"
    );
}

#[test]
#[should_panic(expected = "no entity matches query")]
fn query_single_panics_on_zero() {
    World::new().run_system_once(|q: Query<&A>| q.single().0);
}

#[test]
#[should_panic(expected = "more than one entity matches query")]
fn query_single_panics_on_two() {
    let mut world = World::new();
    world.spawn(A(1));
    world.spawn(A(2));
    world.run_system_once(|q: Query<&A>| q.single().0);
}

#[test]
#[should_panic(expected = "no entity matches query")]
fn query_single_mut_panics_on_zero() {
    World::new().run_system_once(|mut q: Query<&mut A>| q.single_mut().0 = 1);
}

#[test]
#[should_panic(expected = "more than one entity matches query")]
fn query_single_mut_panics_on_two() {
    let mut world = World::new();
    world.spawn(A(1));
    world.spawn((A(2), B(0)));
    world.run_system_once(|mut q: Query<&mut A>| q.single_mut().0 = 1);
}

#[test]
fn single_panic_in_a_schedule_names_the_system() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("find_player", |q: Query<&A, With<Player>>| {
        let _ = q.single();
    });
    let msg = expect_panic(|| schedule.run(&mut world));
    assert!(msg.contains("find_player"), "{msg}");
    assert!(msg.contains("no entity matches query"), "{msg}");
}

fn mix(x: u64) -> u64 {
    let mut h = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for _ in 0..8 {
        h ^= h >> 29;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    h
}

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Val(u64);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct SVal(u64);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Visits(u32);

fn spawn_vals(world: &mut World, n: u64) -> Vec<Entity> {
    // Three archetypes, so batches cross archetype boundaries.
    (0..n)
        .map(|i| match i % 3 {
            0 => world.spawn((Val(i), Visits(0))),
            1 => world.spawn((Val(i), Visits(0), A(0))),
            _ => world.spawn((Val(i), Visits(0), B(0), SVal(i))),
        })
        .collect()
}

#[test]
fn par_iter_mut_matches_sequential() {
    // Under Miri still above the parallel split threshold (64 rows).
    const N: u64 = if cfg!(miri) { 200 } else { 10_000 };
    let mut par_world = World::new();
    let mut seq_world = World::new();
    let par_es = spawn_vals(&mut par_world, N);
    let seq_es = spawn_vals(&mut seq_world, N);
    par_world.run_system_once(|mut q: Query<(&mut Val, &mut Visits)>| {
        q.par_iter_mut().for_each(|(v, n)| {
            v.0 = mix(v.0);
            n.0 += 1;
        })
    });
    seq_world.run_system_once(|mut q: Query<(&mut Val, &mut Visits)>| {
        q.iter_mut().for_each(|(v, n)| {
            v.0 = mix(v.0);
            n.0 += 1;
        })
    });
    for (i, (&p, &s)) in par_es.iter().zip(&seq_es).enumerate() {
        assert_eq!(
            par_world.get::<Val>(p),
            seq_world.get::<Val>(s),
            "entity {i}"
        );
        assert_eq!(par_world.get::<Val>(p), Ok(&Val(mix(i as u64))));
        assert_eq!(par_world.get::<Visits>(p), Ok(&Visits(1)), "each item once");
    }
    // With a filter and a sparse component.
    par_world.run_system_once(|mut q: Query<(&mut SVal, &Val), With<B>>| {
        q.par_iter_mut().for_each(|(s, v)| s.0 = v.0 ^ 1)
    });
    for &e in &par_es {
        if let Ok(s) = par_world.get::<SVal>(e) {
            assert_eq!(s.0, par_world.get::<Val>(e).unwrap().0 ^ 1);
        }
    }
}

#[test]
fn par_iter_reads_every_item_once() {
    // Under Miri still above the parallel split threshold (64 rows).
    const N: u64 = if cfg!(miri) { 200 } else { 10_000 };
    let mut world = World::new();
    spawn_vals(&mut world, N);
    let (sum, count, seq_sum) = world.run_system_once(|q: Query<&Val>| {
        let sum = AtomicU64::new(0);
        let count = AtomicU64::new(0);
        q.par_iter().for_each(|v| {
            sum.fetch_add(v.0, Ordering::Relaxed);
            count.fetch_add(1, Ordering::Relaxed);
        });
        (
            sum.into_inner(),
            count.into_inner(),
            q.iter().map(|v| v.0).sum::<u64>(),
        )
    });
    assert_eq!(count, N);
    assert_eq!(sum, N * (N - 1) / 2);
    assert_eq!(sum, seq_sum);
    let (distinct, twice) = world.run_system_once(|q: Query<(Entity, &Val)>| {
        let seen = Mutex::new(HashSet::new());
        let twice = AtomicU64::new(0);
        q.par_iter().for_each(|(e, _)| {
            if !seen.lock().unwrap().insert(e) {
                twice.fetch_add(1, Ordering::Relaxed);
            }
        });
        (seen.into_inner().unwrap().len(), twice.into_inner())
    });
    assert_eq!((distinct, twice), (N as usize, 0), "every entity once");
    // Small queries (below the split threshold) and empty ones.
    let mut small = World::new();
    small.spawn_batch((0..5).map(Val));
    let s = small.run_system_once(|q: Query<&Val>| {
        let sum = AtomicU64::new(0);
        q.par_iter().for_each(|v| {
            sum.fetch_add(v.0, Ordering::Relaxed);
        });
        sum.into_inner()
    });
    assert_eq!(s, 10);
    let n = World::new().run_system_once(|q: Query<&Val>| {
        let n = AtomicU64::new(0);
        q.par_iter().for_each(|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        n.into_inner()
    });
    assert_eq!(n, 0);
}

#[test]
fn par_iter_mut_inside_a_parallel_schedule() {
    let mut world = World::new();
    let n = if cfg!(miri) { 100 } else { 3_000 };
    spawn_vals(&mut world, n);
    world.spawn_batch((0..n).map(|i| (Pos(i as f32), Vel(1.0))));
    let mut schedule = Schedule::new();
    schedule.add_system("vals", |mut q: Query<&mut Visits>| {
        q.par_iter_mut().for_each(|v| v.0 += 1)
    });
    schedule.add_system("move", |mut q: Query<(&mut Pos, &Vel)>| {
        q.par_iter_mut().for_each(|(p, v)| p.0 += v.0)
    });
    let runs = if cfg!(miri) { 3 } else { 20 };
    for _ in 0..runs {
        schedule.run(&mut world);
    }
    let ok = world.run_system_once(move |q: Query<&Visits>, p: Query<(&Pos, &Vel)>| {
        q.iter().all(|v| v.0 == runs)
            && p.iter()
                .enumerate()
                .all(|(i, (p, _))| p.0 == i as f32 + runs as f32)
    });
    assert!(ok);
}

/// The chunks of `par_chunks`/`par_chunks_mut`: what each holds, per chunk.
fn chunk_contents(world: &mut World, chunk_len: usize) -> Vec<(usize, Vec<u64>)> {
    world.run_system_once(move |q: Query<&Val>| {
        q.par_chunks(chunk_len)
            .map(|chunk| (chunk.index(), chunk.map(|v| v.0).collect::<Vec<_>>()))
    })
}

#[test]
fn par_chunks_cut_iteration_order_into_fixed_runs_across_tables() {
    let mut world = World::new();
    let es = spawn_vals(&mut world, 1_000);
    // An empty matched table in the middle: spawn one, then despawn it.
    let lone = world.spawn((Val(9_999), Visits(0), Player));
    world.despawn(lone).unwrap();
    world.spawn_batch((1_000..1_100).map(|i| (Val(i), Visits(0), Id(0))));
    let order: Vec<u64> = world.run_system_once(|q: Query<&Val>| q.iter().map(|v| v.0).collect());
    assert_eq!(order.len(), 1_100);
    for chunk_len in [1, 7, 64, 333, 334, 1_100, 5_000] {
        let chunks = chunk_contents(&mut world, chunk_len);
        let expected: Vec<(usize, Vec<u64>)> = order
            .chunks(chunk_len)
            .map(<[u64]>::to_vec)
            .enumerate()
            .collect();
        assert_eq!(chunks, expected, "chunk_len {chunk_len}");
        let n = world.run_system_once(move |q: Query<&Val>| q.par_chunks(chunk_len).len());
        assert_eq!(n, 1_100usize.div_ceil(chunk_len));
    }
    // Mutably: every item once, and each chunk sees its own index.
    world.run_system_once(|mut q: Query<(&mut Visits, &mut Val)>| {
        q.par_chunks_mut(100).for_each(|chunk| {
            let k = chunk.index() as u64;
            for (visits, val) in chunk {
                visits.0 += 1;
                val.0 = k;
            }
        })
    });
    let got: Vec<(u32, u64)> = world
        .run_system_once(|q: Query<(&Visits, &Val)>| q.iter().map(|(n, v)| (n.0, v.0)).collect());
    let want: Vec<(u32, u64)> = (0..1_100).map(|i| (1, i / 100)).collect();
    assert_eq!(got, want);
    assert_eq!(world.get::<Visits>(es[0]), Ok(&Visits(1)));
}

#[test]
fn par_chunks_give_the_same_result_on_any_thread_count() {
    #[derive(Component)]
    struct Mass(f32);
    let mut world = World::new();
    // 25 chunks either way; a hundredth of the rows under Miri, where the
    // full set ran for minutes.
    let (big, small, chunk) = if cfg!(miri) {
        (200, 50, 10)
    } else {
        (20_000, 5_000, 1_000)
    };
    world.spawn_batch((0..big).map(|i| Mass(1.0 / (1.0 + i as f32))));
    world.spawn_batch((0..small).map(|i| (Mass(0.1 * i as f32), A(0))));
    let sum = |world: &mut World| {
        world.run_system_once(move |q: Query<&Mass>| {
            let parts = q.par_chunks(chunk).map(|c| c.fold(0.0f32, |s, m| s + m.0));
            assert_eq!(parts.len(), 25);
            parts.iter().sum::<f32>()
        })
    };
    let sums: Vec<u32> = [1, 2, 3, 8]
        .into_iter()
        .map(|threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| sum(&mut world)).to_bits()
        })
        .collect();
    assert!(sums.iter().all(|&s| s == sums[0]), "{sums:?}");
}

#[test]
fn par_chunks_with_row_filters_and_no_rows() {
    let mut world = World::new();
    let es = spawn_vals(&mut world, 300);
    world.run_system_once(|q: Query<&Val, Changed<Val>>| q.iter().count());
    for &e in es.iter().step_by(10) {
        world.get_mut::<Val>(e).unwrap().0 += 1;
    }
    // Chunks cut rows, so a filter leaves them short; the items are the
    // filtered iteration's, in order.
    let mut system = (|q: Query<Entity, Changed<Val>>| {
        let (seq, chunked): (Vec<Entity>, Vec<Vec<Entity>>) =
            (q.iter().collect(), q.par_chunks(64).map(|c| c.collect()));
        assert_eq!(chunked.len(), 5);
        (seq, chunked.concat())
    })
    .into_system();
    system.initialize(&mut world).unwrap();
    system.run(&mut world);
    for &e in es.iter().step_by(10) {
        world.get_mut::<Val>(e).unwrap().0 += 1;
    }
    let (seq, chunked) = system.run(&mut world);
    assert_eq!(seq.len(), 30);
    assert_eq!(seq, chunked);
    // Nothing matched: no chunk, no call.
    let (len, calls, mapped) = World::new().run_system_once(|q: Query<&Val>| {
        let calls = AtomicUsize::new(0);
        q.par_chunks(8).for_each(|_| {
            calls.fetch_add(1, Ordering::Relaxed);
        });
        (
            q.par_chunks(8).len(),
            calls.into_inner(),
            q.par_chunks(8).map(|c| c.count()),
        )
    });
    assert_eq!((len, calls, mapped), (0, 0, vec![]));
}

#[test]
fn iter_combinations_yields_each_unordered_pair_once() {
    let mut world = World::new();
    world.spawn_batch((0..10).map(Id));
    let pairs = world.run_system_once(|q: Query<&Id>| {
        q.iter_combinations::<2>()
            .map(|[a, b]| (a.0, b.0))
            .collect::<Vec<_>>()
    });
    assert_eq!(pairs.len(), 10 * 9 / 2);
    let unordered: HashSet<(u32, u32)> = pairs.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
    assert_eq!(unordered.len(), 45, "no pair twice");
    assert!(pairs.iter().all(|(a, b)| a != b), "distinct items");
    for a in 0..10 {
        for b in a + 1..10 {
            assert!(unordered.contains(&(a, b)));
        }
    }
    // Triples, and K larger than the count.
    let triples = world.run_system_once(|q: Query<&Id>| q.iter_combinations::<3>().count());
    assert_eq!(triples, 120);
    let too_many = world.run_system_once(|q: Query<&Id>| q.iter_combinations::<11>().count());
    assert_eq!(too_many, 0);
    let one = world.run_system_once(|q: Query<&Id>| q.iter_combinations::<10>().count());
    assert_eq!(one, 1);
}

#[test]
fn iter_combinations_across_archetypes_and_filters() {
    let mut world = World::new();
    world.spawn_batch((0..4).map(Id));
    world.spawn_batch((4..7).map(|i| (Id(i), A(0))));
    world.spawn_batch((7..9).map(|i| (Id(i), C(0))));
    world.spawn_batch((100..103).map(|i| (Id(i), Player)));
    let pairs = world.run_system_once(|q: Query<&Id, Without<Player>>| {
        q.iter_combinations::<2>()
            .map(|[a, b]| (a.0.min(b.0), a.0.max(b.0)))
            .collect::<HashSet<_>>()
    });
    assert_eq!(pairs.len(), 36);
    assert!(pairs.iter().all(|&(_, b)| b < 100));
}

#[test]
fn iter_combinations_mut_modifies_both_items() {
    let mut world = World::new();
    let es = world.spawn_batch((0..10).map(|i| (Id(i), Counter(0))));
    let fetched = world.run_system_once(|mut q: Query<(&Id, &mut Counter)>| {
        let mut pairs = q.iter_combinations_mut::<2>();
        let mut fetched = 0;
        while let Some([(ia, ca), (ib, cb)]) = pairs.fetch_next() {
            assert_ne!(ia.0, ib.0);
            ca.0 += 1;
            cb.0 += 100;
            fetched += 1;
        }
        fetched
    });
    assert_eq!(fetched, 45);
    // Item i is first in (9 - i) pairs and second in i pairs.
    for (i, &e) in es.iter().enumerate() {
        let c = world.get::<Counter>(e).unwrap().0;
        assert_eq!(c, (9 - i as u32) + 100 * i as u32, "entity {i}");
    }
}

// ----- change detection in systems -------------------------------------------------

type Counts = Arc<Mutex<Vec<usize>>>;

fn changed_counter(
    counts: &Counts,
) -> impl FnMut(Query<Entity, Changed<Pos>>) + Send + 'static + use<> {
    let counts = counts.clone();
    move |q: Query<Entity, Changed<Pos>>| counts.lock().unwrap().push(q.iter().count())
}

fn drain(counts: &Counts) -> Vec<usize> {
    std::mem::take(&mut *counts.lock().unwrap())
}

#[test]
fn changed_compares_against_the_systems_previous_run() {
    let counts: Counts = Arc::default();
    let mut world = World::new();
    let es = world.spawn_batch((0..5).map(|i| Pos(i as f32)));
    let mut schedule = Schedule::new();
    schedule.add_system("watch", changed_counter(&counts));
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [5], "first run: everything is new");
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [0], "nothing changed since");
    world.get_mut::<Pos>(es[1]).unwrap().0 = 10.0;
    world.get_mut::<Pos>(es[3]).unwrap().0 = 10.0;
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [2], "changes made between runs");
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [0]);
    world.spawn(Pos(0.0));
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [1], "a new value counts as changed");
}

#[test]
fn changed_sees_other_systems_writes_since_its_last_run() {
    let counts: Counts = Arc::default();
    let mut world = World::new();
    world.spawn_batch((0..4).map(|i| (Pos(i as f32), Player)));
    world.spawn_batch((0..6).map(|i| Pos(i as f32)));
    let mut schedule = Schedule::new();
    // Writer ordered after the watcher: the watcher sees its writes on its
    // next run.
    schedule.add_system("watch", changed_counter(&counts));
    schedule
        .add_system("move_players", |mut q: Query<&mut Pos, With<Player>>| {
            for p in q.iter_mut() {
                p.0 += 1.0;
            }
        })
        .after("watch");
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [10]);
    schedule.run(&mut world);
    assert_eq!(
        drain(&counts),
        [4],
        "the other system's writes of the last run"
    );
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [4]);
    schedule.set_enabled("move_players", false).unwrap();
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [4], "written in the previous run");
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [0], "no writer any more");
}

#[test]
fn changed_sees_writes_of_earlier_systems_in_the_same_run() {
    let counts: Counts = Arc::default();
    let mut world = World::new();
    world.spawn_batch((0..4).map(|i| (Pos(i as f32), Player)));
    world.spawn_batch((0..6).map(|i| Pos(i as f32)));
    let mut schedule = Schedule::new();
    schedule
        .add_system("watch", changed_counter(&counts))
        .after("move_players");
    schedule.add_system("move_players", |mut q: Query<&mut Pos, With<Player>>| {
        for p in q.iter_mut() {
            p.0 += 1.0;
        }
    });
    for expected in [10, 4, 4, 4] {
        schedule.run(&mut world);
        assert_eq!(drain(&counts), [expected]);
    }
}

#[test]
fn a_systems_own_writes_are_not_changes_on_its_next_run() {
    let counts: Counts = Arc::default();
    let mut world = World::new();
    let es = world.spawn_batch((0..5).map(|i| Pos(i as f32)));
    let c = counts.clone();
    let mut schedule = Schedule::new();
    schedule.add_system(
        "bump_changed",
        move |mut q: Query<&mut Pos, Changed<Pos>>| {
            let mut n = 0;
            for p in q.iter_mut() {
                p.0 += 1.0;
                n += 1;
            }
            c.lock().unwrap().push(n);
        },
    );
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [5]);
    schedule.run(&mut world);
    assert_eq!(
        drain(&counts),
        [0],
        "its own writes of the last run are not new to it"
    );
    world.get_mut::<Pos>(es[2]).unwrap();
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [1]);
    schedule.run(&mut world);
    assert_eq!(drain(&counts), [0]);
    // The writes were real.
    assert_eq!(world.get::<Pos>(es[2]), Ok(&Pos(4.0)));
    assert_eq!(world.get::<Pos>(es[0]), Ok(&Pos(1.0)));
}

#[test]
fn added_in_a_system() {
    let counts: Counts = Arc::default();
    let mut world = World::new();
    world.spawn(Pos(0.0));
    let c = counts.clone();
    let mut schedule = Schedule::new();
    schedule.add_system("added", move |q: Query<Entity, Added<Pos>>| {
        c.lock().unwrap().push(q.iter().count());
    });
    schedule.add_system(
        "spawn_two",
        |mut commands: Commands, mut runs: Local<u32>| {
            *runs += 1;
            if *runs == 2 {
                commands.spawn(Pos(1.0));
                commands.spawn(Pos(2.0));
            }
        },
    );
    for _ in 0..4 {
        schedule.run(&mut world);
    }
    // Spawned (by commands) at the end of run 2: seen in run 3 only.
    assert_eq!(drain(&counts), [1, 0, 2, 0]);
}

#[test]
fn run_system_once_change_filters_see_everything() {
    let mut world = World::new();
    world.spawn_batch((0..3).map(|i| Pos(i as f32)));
    for _ in 0..3 {
        let n = world.run_system_once(|q: Query<Entity, Changed<Pos>>| q.iter().count());
        assert_eq!(n, 3, "a fresh system: every value is new");
    }
}

#[test]
fn changed_accumulates_while_the_reader_does_not_run() {
    let counts: Counts = Arc::default();
    let mut world = World::new();
    let es = world.spawn_batch((0..6).map(|i| Pos(i as f32)));
    let mut schedule = Schedule::new();
    schedule.add_system("watch", changed_counter(&counts));
    let targets = es.clone();
    schedule.add_system(
        "poke",
        move |mut q: Query<&mut Pos>, mut n: Local<usize>| {
            // Run k (from 0) changes entity k only.
            if let Ok(p) = q.get_mut(targets[*n % targets.len()]) {
                p.0 += 1.0;
            }
            *n += 1;
        },
    );
    schedule.run(&mut world); // watch: 6 (first run); poke changes es[0]
    schedule.set_enabled("watch", false).unwrap();
    schedule.run(&mut world); // poke changes es[1]
    schedule.run(&mut world); // poke changes es[2]
    schedule.set_enabled("watch", true).unwrap();
    schedule.set_enabled("poke", false).unwrap();
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(
        drain(&counts),
        [6, 3, 0],
        "every change since its own last run"
    );
}

#[test]
fn a_query_aliasing_a_component_is_a_build_error_not_a_panic() {
    #[derive(Component)]
    struct Aliased(#[allow(dead_code)] u32);
    let mut schedule = Schedule::new();
    schedule.add_system("aliasing", |_q: Query<(&mut Aliased, &Aliased)>| {});
    match schedule.build(&mut World::new()) {
        Err(ScheduleError::ParamConflict { system, detail }) => {
            assert_eq!(system, "aliasing");
            assert!(detail.contains("Aliased"), "{detail}");
        }
        other => panic!("expected ParamConflict, got {other:?}"),
    }
}
