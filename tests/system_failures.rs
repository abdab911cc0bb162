//! What the systems layer does after a failure, as a new user meets it:
//! a system, condition, exclusive or one-shot system that panics (on both
//! executors) and the run after it; commands that fail or panic; missing
//! and replaced resources; event readers after the event buffer is
//! replaced; state transitions asked for twice; schedule building with bad
//! or many names; the frame clock fed hostile durations.

use std::time::Duration;

use mosaic::Events;
use mosaic::prelude::*;

mod common;
use common::executors::{EXECUTORS, schedule_on};
use common::panics::expect_panic;

/// Makes the next run of a system that reads it panic (once).
#[derive(Default)]
struct Armed(bool);

/// Panics with "kaboom" while [`Armed`], disarming it: the run it is in
/// fails, the next one passes.
fn boom(mut armed: ResMut<Armed>) {
    if std::mem::take(&mut armed.0) {
        panic!("kaboom");
    }
}

#[derive(Default, Debug)]
struct Count(u32);

#[derive(Default, Debug)]
struct Flag(bool);

#[derive(Component, Debug, PartialEq)]
struct Hp(u32);

// ----- panicking systems and the run after ----------------------------------------

#[test]
fn a_panicking_system_is_named_and_the_next_run_runs_everything() {
    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(Armed(true));
        world.insert_resource(Count::default());
        let mut schedule = schedule_on(kind);
        schedule.add_system("boom", boom);
        schedule
            .add_system("count", |mut c: ResMut<Count>| c.0 += 1)
            .after("boom");
        let message = expect_panic(|| schedule.run(&mut world));
        assert!(
            message.contains("`boom`") && message.contains("kaboom"),
            "{message}"
        );
        assert_eq!(world.resource::<Count>().0, 0, "{kind:?}: the run stopped");
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(world.resource::<Count>().0, 2, "{kind:?}");
        world.check_invariants();
    }
}

/// A condition's answer belongs to one run: after a run that panicked, the
/// next run evaluates it again rather than reusing the failed run's answer.
#[test]
fn conditions_are_evaluated_afresh_after_a_panicked_run() {
    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(Armed(true));
        world.insert_resource(Flag(true));
        world.insert_resource(Count::default());
        let mut schedule = schedule_on(kind);
        schedule
            .add_system("guarded", |mut c: ResMut<Count>| c.0 += 1)
            .run_if(|f: Res<Flag>| f.0);
        schedule.add_system("boom", boom).after("guarded");
        expect_panic(|| schedule.run(&mut world));
        assert_eq!(world.resource::<Count>().0, 1, "{kind:?}");
        world.resource_mut::<Flag>().0 = false;
        schedule.run(&mut world);
        assert_eq!(
            world.resource::<Count>().0,
            1,
            "{kind:?}: the condition is false now; the guarded system must not run"
        );
    }
}

#[test]
fn a_panicking_condition_is_named_and_evaluated_again_next_run() {
    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(Armed(true));
        world.insert_resource(Count::default());
        let mut schedule = schedule_on(kind);
        schedule
            .add_system("guarded", |mut c: ResMut<Count>| c.0 += 1)
            .run_if(|armed: Res<Armed>| {
                assert!(!armed.0, "condition exploded");
                true
            });
        let message = expect_panic(|| schedule.run(&mut world));
        assert!(message.contains("condition exploded"), "{message}");
        assert!(message.contains("`guarded`"), "{message}");
        world.resource_mut::<Armed>().0 = false;
        schedule.run(&mut world);
        assert_eq!(world.resource::<Count>().0, 1, "{kind:?}");
    }
}

#[derive(Component)]
struct Player(bool);

/// `Single` skips a system without exactly one match; in a condition it
/// made every run panic instead (a title screen without a player).
#[test]
fn a_condition_whose_single_declines_counts_as_false() {
    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(Count::default());
        let mut schedule = schedule_on(kind);
        schedule
            .add_system("alive", |mut c: ResMut<Count>| c.0 += 1)
            .run_if(|p: Single<&Player>| p.0);
        schedule
            .add_system("dead", |mut c: ResMut<Count>| c.0 += 10)
            .run_if(not(|p: Single<&Player>| p.0));
        schedule
            .add_system("either", |mut c: ResMut<Count>| c.0 += 100)
            .run_if((|p: Single<&Player>| p.0).or(|| true));
        schedule.run(&mut world);
        assert_eq!(
            world.resource::<Count>().0,
            0,
            "{kind:?}: no player, nothing runs"
        );
        world.spawn(Player(true));
        schedule.run(&mut world);
        assert_eq!(world.resource::<Count>().0, 101, "{kind:?}");
    }
}

#[test]
fn a_panicking_exclusive_system_leaves_the_block_before_it_applied() {
    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(Armed(true));
        let mut schedule = schedule_on(kind);
        schedule.add_system("spawn", |mut commands: Commands| {
            commands.spawn(Hp(1));
        });
        schedule
            .add_system("exclusive", |world: &mut World| {
                if std::mem::take(&mut world.resource_mut::<Armed>().0) {
                    panic!("exclusive failed");
                }
            })
            .after("spawn");
        let message = expect_panic(|| schedule.run(&mut world));
        assert!(message.contains("`exclusive`"), "{message}");
        assert_eq!(
            world.len(),
            1,
            "{kind:?}: commands applied before the exclusive system"
        );
        schedule.run(&mut world);
        assert_eq!(world.len(), 2, "{kind:?}");
        world.check_invariants();
    }
}

/// As documented: a panic stops the run; commands issued earlier in that
/// block stay queued and apply at the next run's sync point.
#[test]
fn commands_of_a_panicked_block_apply_at_the_next_sync_point() {
    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(Armed(true));
        let mut schedule = schedule_on(kind);
        schedule.add_system("spawn", |mut commands: Commands| {
            commands.spawn(Hp(7));
        });
        // In the same block as `spawn` (no sync point in between).
        schedule
            .add_system("boom", boom)
            .after_ignore_deferred("spawn");
        expect_panic(|| schedule.run(&mut world));
        assert_eq!(world.len(), 0, "{kind:?}");
        schedule.run(&mut world);
        assert_eq!(world.len(), 2, "{kind:?}: the queued spawn and this run's");
        world.check_invariants();
    }
}

#[test]
fn a_panicking_one_shot_system_keeps_its_state_and_runs_again() {
    let mut world = World::new();
    world.insert_resource(Armed(true));
    let id = world.register_system(
        |mut runs: Local<u32>, mut armed: ResMut<Armed>, mut commands: Commands| {
            *runs += 1;
            commands.spawn(Hp(*runs));
            if std::mem::take(&mut armed.0) {
                panic!("one-shot failed");
            }
        },
    );
    let message = expect_panic(|| world.run_system(id));
    assert!(message.contains("one-shot failed"), "{message}");
    world.run_system(id).unwrap();
    let mut hps: Vec<u32> = world.query::<&Hp>().iter(&world).map(|h| h.0).collect();
    hps.sort_unstable();
    assert_eq!(
        hps,
        [1, 2],
        "Local kept; the first run's spawn applied with the second's"
    );
    world.check_invariants();
}

// ----- resources --------------------------------------------------------------------

struct Missing;

#[test]
fn a_missing_resource_is_named_with_the_system() {
    for kind in EXECUTORS {
        let mut world = World::new();
        let mut schedule = schedule_on(kind);
        schedule.add_system("needs", |_m: Res<Missing>| {});
        let message = expect_panic(|| schedule.run(&mut world));
        assert!(message.contains("`needs`"), "{message}");
        assert!(message.contains("Missing"), "{message}");
        assert!(message.contains("insert_resource"), "{message}");
        world.insert_resource(Missing);
        schedule.run(&mut world);
    }
}

#[test]
fn a_resource_removed_by_commands_is_missing_for_a_later_block_only() {
    let mut world = World::new();
    world.insert_resource(Count(5));
    let mut schedule = Schedule::new();
    schedule.add_system("remove", |mut commands: Commands| {
        commands.remove_resource::<Count>();
    });
    schedule
        .add_system("reads", |c: Res<Count>| assert_eq!(c.0, 5))
        .after_ignore_deferred("remove");
    // Commands apply at the end of the block (no sync point asked for
    // between the two): `reads` still sees it.
    schedule.run(&mut world);
    assert!(!world.contains_resource::<Count>());
    let message = expect_panic(|| schedule.run(&mut world));
    assert!(
        message.contains("`reads`") && message.contains("Count"),
        "{message}"
    );
    world.insert_resource(Count(5));
    schedule.run(&mut world);
}

#[test]
fn resource_or_default_twice_keeps_the_first_value() {
    let mut world = World::new();
    world.resource_or_default::<Count>().0 = 3;
    assert_eq!(world.resource_or_default::<Count>().0, 3);
}

// ----- commands ---------------------------------------------------------------------

#[test]
fn applying_a_buffer_twice_applies_it_once() {
    let mut world = World::new();
    let mut buffer = CommandBuffer::new(&world);
    let e = buffer.spawn(Hp(1));
    buffer.insert(e, Hp(2));
    buffer.apply(&mut world).unwrap();
    buffer.apply(&mut world).unwrap();
    assert_eq!(world.len(), 1);
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(2)));
}

#[test]
fn a_hundred_thousand_commands_apply_in_order() {
    let mut world = World::new();
    let mut buffer = CommandBuffer::new(&world);
    let n = if cfg!(miri) { 200 } else { 100_000 };
    let mut last = None;
    for i in 0..n {
        let e = buffer.spawn(Hp(i));
        if let Some(prev) = last {
            buffer.despawn(prev);
        }
        last = Some(e);
    }
    buffer.apply(&mut world).unwrap();
    assert_eq!(world.len(), 1);
    assert_eq!(world.get::<Hp>(last.unwrap()), Ok(&Hp(n - 1)));
    world.check_invariants();
}

#[test]
fn a_panicking_command_in_a_system_still_applies_the_rest_and_the_next_run_works() {
    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(Armed(true));
        let mut schedule = schedule_on(kind);
        schedule.add_system("issue", |armed: Res<Armed>, mut commands: Commands| {
            commands.spawn(Hp(1));
            if armed.0 {
                commands.run(|world| {
                    world.resource_mut::<Armed>().0 = false;
                    panic!("command exploded");
                });
            }
            commands.spawn(Hp(2));
        });
        let message = expect_panic(|| schedule.run(&mut world));
        assert!(
            message.contains("`issue`") && message.contains("command exploded"),
            "{message}"
        );
        assert_eq!(
            world.len(),
            2,
            "{kind:?}: the commands around the panicking one applied"
        );
        schedule.run(&mut world);
        assert_eq!(world.len(), 4, "{kind:?}");
        world.check_invariants();
    }
}

// ----- events -----------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
struct Ping(u32);

/// Replacing the `Events<E>` resource is how a user clears it (there is no
/// other way); readers must still see what is sent afterwards.
#[test]
fn a_reader_sees_events_sent_after_the_events_resource_was_replaced() {
    let mut world = World::new();
    world.insert_resource(Vec::<u32>::new());
    let mut schedule = Schedule::new();
    schedule.add_system(
        "read",
        |mut r: EventReader<Ping>, mut seen: ResMut<Vec<u32>>| {
            seen.extend(r.read().map(|p| p.0));
        },
    );
    for i in 0..10 {
        world.send_event(Ping(i));
        schedule.run(&mut world);
    }
    assert_eq!(world.resource::<Vec<u32>>().len(), 10);
    // Clear by replacing the buffer, or by removing it.
    world.insert_resource(Events::<Ping>::default());
    world.send_event(Ping(100));
    schedule.run(&mut world);
    assert_eq!(
        world.resource::<Vec<u32>>().last(),
        Some(&100),
        "after insert"
    );
    world.remove_resource::<Events<Ping>>();
    world.send_event(Ping(200));
    schedule.run(&mut world);
    assert_eq!(
        world.resource::<Vec<u32>>().last(),
        Some(&200),
        "after remove"
    );
    assert_eq!(world.resource::<Vec<u32>>().len(), 12);
}

#[test]
fn a_cursor_kept_across_a_replaced_events_resource_sees_new_events() {
    let mut world = World::new();
    let mut cursor = world.event_cursor::<Ping>();
    for i in 0..5 {
        world.send_event(Ping(i));
    }
    assert_eq!(world.read_events(&mut cursor).count(), 5);
    world.insert_resource(Events::<Ping>::default());
    world.send_event(Ping(9));
    let seen: Vec<Ping> = world.read_events(&mut cursor).copied().collect();
    assert_eq!(seen, [Ping(9)]);
}

#[test]
fn a_reader_created_after_many_updates_sees_only_the_stored_events() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    let n = if cfg!(miri) { 50 } else { 1000 };
    for i in 0..n {
        world.send_event(Ping(i));
        schedule.run(&mut world);
    }
    world.send_event(Ping(n));
    let seen =
        world.run_system_once(|mut r: EventReader<Ping>| r.read().map(|p| p.0).collect::<Vec<_>>());
    assert_eq!(seen, [n - 1, n]);
}

#[test]
fn a_huge_burst_of_events_is_read_once_in_order() {
    let mut world = World::new();
    let n = if cfg!(miri) { 300 } else { 200_000 };
    world.run_system_once(move |mut w: EventWriter<Ping>| {
        for i in 0..n {
            w.send(Ping(i));
        }
    });
    let id = world.register_system(move |mut r: EventReader<Ping>, mut c: Local<u32>| {
        for p in r.read() {
            assert_eq!(p.0, *c);
            *c += 1;
        }
        assert_eq!(*c, n);
    });
    world.run_system(id).unwrap();
    world.run_system(id).unwrap();
}

// ----- states -----------------------------------------------------------------------

#[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
enum Mode {
    #[default]
    A,
    B,
    C,
}

#[test]
fn a_transition_asked_for_twice_in_a_frame_goes_to_the_last() {
    let mut world = World::new();
    world.init_state::<Mode>();
    world.insert_resource(Vec::<&'static str>::new());
    world.add_systems(OnEnter(Mode::B), |mut l: ResMut<Vec<&'static str>>| {
        l.push("enter B")
    });
    world.add_systems(OnEnter(Mode::C), |mut l: ResMut<Vec<&'static str>>| {
        l.push("enter C")
    });
    world.apply_state_transitions();
    world.resource_mut::<NextState<Mode>>().set(Mode::B);
    world.resource_mut::<NextState<Mode>>().set(Mode::C);
    world.apply_state_transitions();
    assert_eq!(*world.resource::<State<Mode>>().get(), Mode::C);
    assert_eq!(*world.resource::<Vec<&'static str>>(), ["enter C"]);
}

#[test]
fn a_panicking_on_exit_system_then_the_next_frame() {
    let mut world = World::new();
    world.init_state::<Mode>();
    world.insert_resource(Armed(true));
    world.add_systems(OnExit(Mode::A), |mut armed: ResMut<Armed>| {
        if std::mem::take(&mut armed.0) {
            panic!("exit failed");
        }
    });
    world.insert_resource(Vec::<&'static str>::new());
    world.add_systems(OnEnter(Mode::B), |mut l: ResMut<Vec<&'static str>>| {
        l.push("enter B")
    });
    world.apply_state_transitions();
    world.resource_mut::<NextState<Mode>>().set(Mode::B);
    let message = expect_panic(|| world.apply_state_transitions());
    assert!(message.contains("exit failed"), "{message}");
    // The change was made all the same (see `States`): the state is B, B
    // was entered once, and nothing is pending.
    assert_eq!(*world.resource::<State<Mode>>().get(), Mode::B);
    assert_eq!(*world.resource::<Vec<&'static str>>(), ["enter B"]);
    world.apply_state_transitions();
    assert_eq!(world.resource::<NextState<Mode>>().pending(), None);
    assert_eq!(*world.resource::<Vec<&'static str>>(), ["enter B"]);
    // Changes go on as before.
    world.resource_mut::<NextState<Mode>>().set(Mode::A);
    world.apply_state_transitions();
    world.resource_mut::<NextState<Mode>>().set(Mode::B);
    world.apply_state_transitions();
    assert_eq!(*world.resource::<State<Mode>>().get(), Mode::B);
    assert_eq!(
        *world.resource::<Vec<&'static str>>(),
        ["enter B", "enter B"]
    );
}

/// A system of a state schedule that adds systems to that same schedule:
/// they must not be lost.
#[test]
fn systems_added_to_a_running_state_schedule_are_kept() {
    let mut world = World::new();
    world.init_state::<Mode>();
    world.insert_resource(Count::default());
    world.add_systems(OnEnter(Mode::B), |world: &mut World| {
        world.add_systems(OnEnter(Mode::B), |mut c: ResMut<Count>| c.0 += 1);
    });
    world.apply_state_transitions();
    world.resource_mut::<NextState<Mode>>().set(Mode::B);
    world.apply_state_transitions();
    let names = world
        .get_schedule(OnEnter(Mode::B))
        .unwrap()
        .system_names()
        .len();
    assert_eq!(names, 2, "the system added while the schedule ran is kept");
    world.resource_mut::<NextState<Mode>>().set(Mode::A);
    world.apply_state_transitions();
    world.resource_mut::<NextState<Mode>>().set(Mode::B);
    world.apply_state_transitions();
    assert_eq!(world.resource::<Count>().0, 1, "and runs at the next enter");
}

fn first(mut log: ResMut<Vec<&'static str>>) {
    log.push("first");
}

fn second(mut log: ResMut<Vec<&'static str>>) {
    log.push("second");
}

/// The same for the fixed-step schedule, whose exclusive system adds a
/// chain of two systems (default names, one already taken) to it.
#[test]
fn systems_added_to_the_running_fixed_schedule_are_kept_with_their_order() {
    let mut world = World::new();
    world.insert_resource(Vec::<&'static str>::new());
    world.insert_resource(Armed(true));
    world.add_systems(FixedUpdate, first);
    world.add_systems(FixedUpdate, |world: &mut World| {
        if std::mem::take(&mut world.resource_mut::<Armed>().0) {
            world.add_systems(FixedUpdate, (second, first).chain());
        }
    });
    let step = world.resource::<FixedTime>().timestep();
    let mut frame = Schedule::new();
    frame.run_frame(&mut world, step);
    let names: Vec<String> = world
        .get_schedule(FixedUpdate)
        .unwrap()
        .system_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.contains(&"first#2".to_owned()), "{names:?}");
    world.resource_mut::<Vec<&'static str>>().clear();
    frame.run_frame(&mut world, step);
    let log = world.resource::<Vec<&'static str>>();
    assert_eq!(log.len(), 3, "{log:?}");
    let second_at = log.iter().position(|&s| s == "second").unwrap();
    assert_eq!(
        log[second_at + 1],
        "first",
        "the chain kept its order: {log:?}"
    );
}

// ----- schedule building ------------------------------------------------------------

#[test]
fn set_enabled_and_remove_of_a_missing_name_are_errors_that_change_nothing() {
    let mut world = World::new();
    world.insert_resource(Count::default());
    let mut schedule = Schedule::new();
    schedule.add_system("count", |mut c: ResMut<Count>| c.0 += 1);
    assert_eq!(
        schedule.set_enabled("nope", false),
        Err(ScheduleError::UnknownSystem("nope".into()))
    );
    assert!(schedule.remove_system("nope").is_err());
    schedule.run(&mut world);
    assert_eq!(world.resource::<Count>().0, 1);
}

#[test]
fn a_build_error_then_a_fix_then_a_run() {
    let mut world = World::new();
    world.insert_resource(Count::default());
    let mut schedule = Schedule::new();
    schedule
        .add_system("count", |mut c: ResMut<Count>| c.0 += 1)
        .after("nowhere");
    let message = expect_panic(|| schedule.run(&mut world));
    assert!(message.contains("nowhere"), "{message}");
    schedule.add_system("nowhere", || {});
    schedule.run(&mut world);
    assert_eq!(world.resource::<Count>().0, 1);
}

fn tick(mut c: ResMut<Count>) {
    c.0 += 1;
}

static TICKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Touches no world data, so ten thousand copies plan without conflicts.
fn tick_static() {
    TICKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Ten thousand copies of one function, each named after it:
/// `tick_static`, `tick_static#2`, ..., `tick_static#10000`. (Naming them
/// used to try every taken suffix against every system: cubic.)
#[test]
fn ten_thousand_systems_of_one_function() {
    let n = if cfg!(miri) { 50 } else { 10_000 };
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.set_executor(ExecutorKind::SingleThreaded);
    for _ in 0..n {
        schedule.add_systems(tick_static);
    }
    let names = schedule.system_names();
    assert_eq!(names.len(), n);
    assert_eq!(names[0], "tick_static");
    assert_eq!(names[n - 1], format!("tick_static#{n}"));
    schedule.run(&mut world);
    assert_eq!(TICKS.load(std::sync::atomic::Ordering::Relaxed), n);
}

/// A removed name is free again: the next copy takes the first free
/// suffix, as before names were indexed.
#[test]
fn a_removed_default_name_is_reused() {
    let mut schedule = Schedule::new();
    for _ in 0..4 {
        schedule.add_systems(tick);
    }
    schedule.remove_system("tick#2").unwrap();
    schedule.add_systems(tick);
    schedule.add_systems(tick);
    assert_eq!(
        schedule.system_names(),
        ["tick", "tick#3", "tick#4", "tick#2", "tick#5"]
    );
    // A name given by hand takes part too.
    schedule.add_system("tick#6", || {});
    schedule.add_systems(tick);
    assert!(schedule.contains("tick#7"));
    let mut world = World::new();
    world.insert_resource(Count::default());
    schedule.run(&mut world);
}

/// (Every system writes one resource as well: planning skips the pairs the
/// chain already orders; see benches/schedule.rs, `build`.)
#[test]
fn a_chain_of_two_thousand_systems_runs_in_order() {
    let n = if cfg!(miri) { 50 } else { 2_000 };
    let mut world = World::new();
    world.insert_resource(Vec::<usize>::new());
    let mut schedule = Schedule::new();
    for i in 0..n {
        let system =
            schedule.add_system(format!("s{i}"), move |mut v: ResMut<Vec<usize>>| v.push(i));
        if i > 0 {
            system.after(format!("s{}", i - 1));
        }
    }
    schedule.run(&mut world);
    let v = world.resource::<Vec<usize>>();
    assert_eq!(v.len(), n);
    assert!(v.windows(2).all(|w| w[0] < w[1]));
}

// ----- time ---------------------------------------------------------------------------

#[test]
fn a_huge_frame_leaves_less_than_one_step_of_overstep() {
    let mut fixed = FixedTime::new(Duration::from_nanos(1));
    let steps = fixed.accumulate(Duration::from_secs(10));
    assert_eq!(steps, fixed.max_steps_per_frame());
    assert!(
        fixed.overstep() < fixed.timestep(),
        "overstep {:?} must be less than one step",
        fixed.overstep()
    );
    assert!(fixed.overstep_fraction() < 1.0);
    assert_eq!(
        fixed.dropped(),
        Duration::from_secs(10) - Duration::from_nanos(u64::from(steps))
    );
}

#[test]
fn duration_max_frames_do_not_panic() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    world.add_systems(FixedUpdate, || {});
    schedule.run_frame(&mut world, Duration::MAX);
    schedule.run_frame(&mut world, Duration::MAX);
    assert_eq!(world.resource::<Time>().frame(), 2);
    let fixed = world.resource::<FixedTime>();
    assert!(fixed.overstep() < fixed.timestep());
}
