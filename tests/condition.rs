//! Integration tests for run conditions: on systems and on sets (a set's
//! condition skips every member and is evaluated once per run, under both
//! executors), the built-in conditions (`resource_exists`,
//! `resource_changed`, `resource_added`, `on_event`), the combinators
//! (`not`, `and`, `or`, with short-circuiting), a writing condition refused
//! at build, a disabled system's conditions left unevaluated, and a
//! condition's read of a resource ordering it after an earlier writer.

use std::sync::atomic::{AtomicU32, Ordering};

use mosaic::prelude::*;

/// How many times conditions were evaluated (interior mutability, so that a
/// condition may count while only reading).
#[derive(Default)]
struct Evaluations(AtomicU32);

/// Which systems ran, in order.
#[derive(Default)]
struct Ran(Vec<&'static str>);

struct Paused;

fn counting_condition(e: Res<Evaluations>, paused: Option<Res<Paused>>) -> bool {
    e.0.fetch_add(1, Ordering::Relaxed);
    paused.is_none()
}

fn mark(name: &'static str) -> impl FnMut(ResMut<Ran>) + Send + 'static {
    move |mut r: ResMut<Ran>| r.0.push(name)
}

fn world() -> World {
    let mut world = World::new();
    world.insert_resource(Evaluations::default());
    world.insert_resource(Ran::default());
    world
}

fn take_ran(world: &mut World) -> Vec<&'static str> {
    std::mem::take(&mut world.resource_mut::<Ran>().0)
}

fn evaluations(world: &World) -> u32 {
    world.resource::<Evaluations>().0.load(Ordering::Relaxed)
}

fn set_condition_skips_every_member(kind: ExecutorKind) {
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule.set_executor(kind);
    schedule.add_system("a", mark("a")).in_set("play");
    schedule.add_system("outside", mark("outside"));
    schedule.add_system("b", mark("b")).in_set("play");
    schedule.add_system("c", mark("c")).in_set("play");
    schedule.configure_set("play").run_if(counting_condition);
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["a", "outside", "b", "c"]);
    assert_eq!(evaluations(&world), 1, "one evaluation for three members");
    world.insert_resource(Paused);
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["outside"]);
    assert_eq!(evaluations(&world), 2);
    world.remove_resource::<Paused>();
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["a", "outside", "b", "c"]);
    assert_eq!(evaluations(&world), 3);
}

#[test]
fn a_condition_on_a_set_skips_every_member_single_threaded() {
    set_condition_skips_every_member(ExecutorKind::SingleThreaded);
}

#[test]
fn a_condition_on_a_set_skips_every_member_parallel() {
    set_condition_skips_every_member(ExecutorKind::Parallel);
}

#[test]
fn a_condition_on_a_system_skips_only_that_system() {
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule
        .add_system("a", mark("a"))
        .run_if(counting_condition);
    schedule.add_system("b", mark("b"));
    world.insert_resource(Paused);
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["b"]);
    assert_eq!(evaluations(&world), 1);
}

#[test]
fn every_condition_is_evaluated_even_after_a_false_one() {
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule
        .add_system("a", mark("a"))
        .run_if(|| false)
        .run_if(counting_condition);
    schedule.run(&mut world);
    assert!(take_ran(&mut world).is_empty());
    assert_eq!(evaluations(&world), 1);
}

#[test]
fn a_disabled_system_evaluates_no_condition() {
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule
        .add_system("a", mark("a"))
        .run_if(counting_condition);
    schedule.set_enabled("a", false).unwrap();
    schedule.run(&mut world);
    assert_eq!(evaluations(&world), 0);
}

#[test]
fn resource_changed_sees_writes_by_systems_and_by_the_world() {
    struct Score(u32);
    let mut world = world();
    world.insert_resource(Score(0));
    world.insert_resource(0u8); // the writer's switch
    let mut schedule = Schedule::new();
    schedule.add_system("writer", |s: Res<u8>, mut score: ResMut<Score>| {
        if *s == 1 {
            score.0 += 1;
        }
    });
    schedule
        .add_system("react", mark("react"))
        .run_if(resource_changed::<Score>);
    schedule.run(&mut world); // first evaluation: Score is new
    assert_eq!(take_ran(&mut world), ["react"]);
    schedule.run(&mut world);
    assert!(take_ran(&mut world).is_empty());
    *world.resource_mut::<u8>() = 1;
    schedule.run(&mut world); // the writer changed it this run
    assert_eq!(take_ran(&mut world), ["react"]);
    *world.resource_mut::<u8>() = 0;
    schedule.run(&mut world);
    assert!(take_ran(&mut world).is_empty());
    world.resource_mut::<Score>().0 = 7;
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["react"]);
}

#[test]
fn resource_added_and_exists() {
    struct Level;
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule
        .add_system("added", mark("added"))
        .run_if(resource_added::<Level>);
    schedule
        .add_system("exists", mark("exists"))
        .run_if(resource_exists::<Level>);
    schedule.run(&mut world);
    assert!(take_ran(&mut world).is_empty());
    world.insert_resource(Level);
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["added", "exists"]);
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["exists"]);
}

#[test]
fn on_event_is_true_once_per_batch_of_events() {
    struct Jump;
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule
        .add_system("jump", mark("jump"))
        .run_if(on_event::<Jump>);
    schedule.run(&mut world);
    world.send_event(Jump);
    world.send_event(Jump);
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["jump"]);
}

#[test]
fn combinators_combine_and_short_circuit() {
    struct A;
    struct B;
    let mut world = world();
    world.insert_resource(A);
    let mut schedule = Schedule::new();
    schedule
        .add_system("a_and_b", mark("a_and_b"))
        .run_if(resource_exists::<A>.and(resource_exists::<B>));
    schedule
        .add_system("a_or_b", mark("a_or_b"))
        .run_if(resource_exists::<B>.or(resource_exists::<A>));
    schedule
        .add_system("not_b", mark("not_b"))
        .run_if(not(resource_exists::<B>));
    // `or` does not evaluate its right side when the left is true.
    schedule
        .add_system("short", mark("short"))
        .run_if(resource_exists::<A>.or(counting_condition));
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["a_or_b", "not_b", "short"]);
    assert_eq!(evaluations(&world), 0);
    world.insert_resource(B);
    schedule.run(&mut world);
    assert_eq!(take_ran(&mut world), ["a_and_b", "a_or_b", "short"]);
}

#[test]
fn a_writing_condition_is_refused_at_build() {
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule
        .add_system("a", mark("a"))
        .run_if(|mut n: ResMut<Ran>| {
            n.0.clear();
            true
        });
    let err = schedule.build(&mut world).unwrap_err();
    assert!(matches!(err, ScheduleError::InvalidCondition { ref guards, .. } if guards == "a"));
    assert!(err.to_string().contains("may only read"), "{err}");
}

#[test]
fn a_condition_reading_what_an_earlier_system_writes_sees_its_write() {
    // The condition reads Open; `opener` (added first) writes it. The
    // condition's read is part of `guarded`'s planned access, so `guarded`
    // waits for `opener` under both executors and sees the door open in the
    // same run (the plan's edge itself is checked by a unit test in
    // `system/schedule.rs`).
    #[derive(Default)]
    struct Open(bool);
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = world();
        world.insert_resource(Open::default());
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("opener", |mut o: ResMut<Open>| o.0 = true);
        schedule
            .add_system("guarded", mark("guarded"))
            .run_if(|o: Res<Open>| o.0);
        schedule.run(&mut world);
        assert_eq!(take_ran(&mut world), ["guarded"], "{kind:?}");
    }
}
