//! Integration tests for `Schedule::add_systems`: tuples (nested), names
//! taken from the functions (with `#2` for a repeat), `.chain()` adding real
//! orderings (shown by the cycle it makes with a contrary ordering, and by
//! the run order), a nested tuple's elements left unordered, and group-wide
//! `run_if`, `in_set`, `before` and `after`.

use std::sync::atomic::{AtomicU32, Ordering};

use mosaic::prelude::*;

#[derive(Default)]
struct Log(Vec<&'static str>);

fn a(mut l: ResMut<Log>) {
    l.0.push("a");
}
fn b(mut l: ResMut<Log>) {
    l.0.push("b");
}
fn c(mut l: ResMut<Log>) {
    l.0.push("c");
}
fn d(mut l: ResMut<Log>) {
    l.0.push("d");
}
fn idle() {}

fn world() -> World {
    let mut world = World::new();
    world.insert_resource(Log::default());
    world
}

#[test]
fn systems_are_named_after_their_functions() {
    let mut schedule = Schedule::new();
    schedule.add_systems((a, idle, idle, (b, idle)));
    assert_eq!(
        schedule.system_names(),
        ["a", "idle", "idle#2", "b", "idle#3"]
    );
    schedule.add_systems(|| {});
    assert!(
        schedule
            .system_names()
            .iter()
            .any(|n| n.ends_with("::{{closure}}"))
    );
    schedule.build(&mut World::new()).unwrap();
}

#[test]
fn chain_runs_the_elements_in_the_order_written() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = world();
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        // The second group runs first (`after("b")`), each in chain order.
        schedule.add_systems((d, c).chain().after("b"));
        schedule.add_systems((a, b).chain());
        schedule.run(&mut world);
        assert_eq!(world.resource::<Log>().0, ["a", "b", "d", "c"], "{kind:?}");
    }
}

#[test]
fn chain_orders_systems_that_do_not_conflict() {
    let mut schedule = Schedule::new();
    schedule.add_systems((idle, (idle, idle), idle).chain());
    // idle#2 and idle#3 form one element: unordered between themselves, so
    // this ordering is allowed...
    schedule
        .add_system("between", || {})
        .after("idle#3")
        .before("idle#2");
    schedule.build(&mut World::new()).unwrap();
    // ...but the chain puts idle (first) before idle#4 (last).
    schedule
        .add_system("contrary", || {})
        .after("idle#4")
        .before("idle");
    let err = schedule.build(&mut World::new()).unwrap_err();
    assert!(matches!(err, ScheduleError::Cycle(_)), "{err}");
}

#[test]
fn a_group_condition_is_evaluated_once_for_the_group() {
    #[derive(Default)]
    struct Evaluations(AtomicU32);
    struct Paused;
    let mut world = world();
    world.insert_resource(Evaluations::default());
    let mut schedule = Schedule::new();
    schedule.add_systems(
        (a, b, c).run_if(|e: Res<Evaluations>, p: Option<Res<Paused>>| {
            e.0.fetch_add(1, Ordering::Relaxed);
            p.is_none()
        }),
    );
    schedule.add_systems(d);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, ["a", "b", "c", "d"]);
    world.insert_resource(Paused);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, ["a", "b", "c", "d", "d"]);
    let evaluations = world.resource::<Evaluations>().0.load(Ordering::Relaxed);
    assert_eq!(evaluations, 2);
}

#[test]
fn group_in_set_before_and_after() {
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule.add_systems((c, d).in_set("late"));
    schedule.add_systems(b.before("late").after("a"));
    schedule.add_systems(a);
    schedule.configure_set("late").after("a");
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, ["a", "b", "c", "d"]);
}
