//! `IntoSystem::pipe` and `In<T>` (Bevy's names): the output of one system
//! handed to the next, in schedules, one-shot runs and nested pipes.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mosaic::System;
use mosaic::prelude::*;

#[derive(Component)]
struct Hp(i32);

#[derive(Default)]
struct Log(Vec<String>);

fn count(q: Query<&Hp>) -> usize {
    q.iter().count()
}

fn log_count(In(n): In<usize>, mut log: ResMut<Log>) {
    log.0.push(format!("{n}"));
}

#[test]
fn a_pipe_in_a_schedule_hands_over_each_run_s_output() {
    let mut world = World::new();
    world.init_resource::<Log>();
    world.spawn(Hp(1));
    let mut schedule = Schedule::new();
    schedule.add_systems(count.pipe(log_count));
    schedule.run(&mut world);
    world.spawn(Hp(2));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, ["1", "2"]);
}

#[test]
fn pipes_nest_and_the_output_of_the_last_half_is_the_pipe_s() {
    fn double(In(n): In<usize>) -> usize {
        n * 2
    }
    fn describe(In(n): In<usize>) -> String {
        format!("{n} doubled")
    }
    let mut world = World::new();
    world.spawn_batch([Hp(1), Hp(2), Hp(3)]);
    let out = world.run_system_once(count.pipe(double).pipe(describe));
    assert_eq!(out, "6 doubled");
    let out = world.run_system_once(count.pipe(double.pipe(describe)));
    assert_eq!(out, "6 doubled");
}

#[test]
fn the_first_half_s_commands_are_seen_by_the_second_when_run_once() {
    fn spawn_one(mut commands: Commands) -> u32 {
        commands.spawn(Hp(7));
        7
    }
    fn check(In(expected): In<u32>, q: Query<&Hp>) -> bool {
        q.iter().any(|hp| hp.0 as u32 == expected)
    }
    let mut world = World::new();
    assert!(world.run_system_once(spawn_one.pipe(check)));
}

#[test]
fn an_exclusive_first_half_pipes_too() {
    fn total(world: &mut World) -> i32 {
        let mut q = world.query::<&Hp>();
        q.iter(world).map(|hp| hp.0).sum()
    }
    fn store(In(sum): In<i32>, mut log: ResMut<Log>) {
        log.0.push(sum.to_string());
    }
    let mut world = World::new();
    world.init_resource::<Log>();
    world.spawn_batch([Hp(4), Hp(5)]);
    let mut schedule = Schedule::new();
    schedule.add_systems(total.pipe(store));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, ["9"]);
}

#[test]
fn a_pipe_s_access_is_both_halves() {
    let mut world = World::new();
    world.init_resource::<Log>();
    let mut piped = count.pipe(log_count);
    piped.initialize(&mut world).unwrap();
    let hp = world.component_id::<Hp>().unwrap();
    assert!(piped.access().queries().any(|(_, a)| a.reads(hp)));
    let log = world.resource_id::<Log>().unwrap();
    assert!(piped.access().writes_resource(log));
}

#[test]
fn in_outside_a_pipe_panics_with_a_message_naming_pipe() {
    let mut world = World::new();
    world.init_resource::<Log>();
    let err = catch_unwind(AssertUnwindSafe(|| world.run_system_once(log_count))).unwrap_err();
    let text = err.downcast_ref::<String>().unwrap();
    assert!(text.contains("pipe"), "{text}");
    assert!(text.contains("In<usize>"), "{text}");
}

#[test]
fn a_skipped_second_half_drops_the_value_and_later_pipes_still_match() {
    #[derive(Component)]
    struct Player;
    fn seven() -> u32 {
        7
    }
    fn needs_player(_p: Single<&Player>, In(n): In<u32>, mut log: ResMut<Log>) {
        log.0.push(n.to_string());
    }
    fn eight() -> u32 {
        8
    }
    let mut world = World::new();
    world.init_resource::<Log>();
    let mut schedule = Schedule::new();
    schedule.add_systems((seven.pipe(needs_player), eight.pipe(needs_player)).chain());
    schedule.run(&mut world); // no player: both skip
    // Neither skipped half took its value, and none is left over for a
    // system run outside a pipe to find.
    let stray = catch_unwind(AssertUnwindSafe(|| {
        World::new().run_system_once(|In(n): In<u32>| n)
    }));
    assert!(stray.is_err(), "a skipped half's value was left behind");
    world.spawn(Player);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, ["7", "8"]);
}

#[test]
fn pipes_under_the_parallel_executor_each_get_their_own_value() {
    fn one() -> u64 {
        1
    }
    fn two() -> u64 {
        2
    }
    #[derive(Default)]
    struct A(u64);
    #[derive(Default)]
    struct B(u64);
    fn add_a(In(n): In<u64>, mut a: ResMut<A>) {
        a.0 += n;
    }
    fn add_b(In(n): In<u64>, mut b: ResMut<B>) {
        b.0 += n;
    }
    let mut world = World::new();
    world.init_resource::<A>();
    world.init_resource::<B>();
    let mut schedule = Schedule::new();
    schedule.set_executor(ExecutorKind::Parallel);
    schedule.add_systems((one.pipe(add_a), two.pipe(add_b)));
    let runs = if cfg!(miri) { 3 } else { 200 };
    for _ in 0..runs {
        schedule.run(&mut world);
    }
    assert_eq!(world.resource::<A>().0, runs);
    assert_eq!(world.resource::<B>().0, 2 * runs);
}
