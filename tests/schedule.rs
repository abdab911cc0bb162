//! Integration tests for the schedule: unique names, `before`/`after`
//! ordering (single-threaded, and under the parallel executor over many runs
//! of systems heavy enough that it really goes parallel), sets with
//! `in_set`/`configure_set`, build errors (`DuplicateName`, `UnknownTarget`,
//! `Cycle`, `UnknownSystem`) and the panic of `run` on an invalid schedule,
//! enabling, disabling and removing systems between runs, `contains` and
//! `system_names`, panics inside systems re-raised with the system's name
//! (both executors), proof that systems writing different components overlap
//! in time under the parallel executor while systems writing the same one
//! never do, long runs of conflicting systems keeping their order under the
//! parallel executor, identical results from both executors on a
//! deterministic workload, the frame runner (`run_frame`/`run_frames` and
//! `Time`), the timing table, and a schedule of 100 empty systems.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use mosaic::prelude::*;

mod common;
use common::executors::{EXECUTORS, schedule_on};
use common::panics::expect_panic;

/// A family of distinct component types: `W<0>`, `W<1>`, ...
#[derive(Component, Debug, PartialEq, Clone, Copy, Default)]
struct W<const N: usize>(u64);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Pos(f32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Vel(f32);

/// Names pushed by systems, in the order they ran.
#[derive(Debug, Default)]
struct Trace(Vec<&'static str>);

fn tracer(name: &'static str) -> impl FnMut(ResMut<Trace>) + Send + 'static {
    move |mut t: ResMut<Trace>| t.0.push(name)
}

fn trace_world() -> World {
    let mut world = World::new();
    world.insert_resource(Trace::default());
    world
}

fn busy(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

// ----- names and ordering ----------------------------------------------------------

#[test]
fn default_executor_is_parallel() {
    let mut schedule = Schedule::new();
    assert_eq!(schedule.executor(), ExecutorKind::Parallel);
    assert_eq!(Schedule::default().executor(), ExecutorKind::Parallel);
    schedule.set_executor(ExecutorKind::SingleThreaded);
    assert_eq!(schedule.executor(), ExecutorKind::SingleThreaded);
}

#[test]
fn duplicate_names_are_a_build_error() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("physics", || {});
    schedule.add_system("render", || {});
    schedule.add_system("physics", || {});
    let err = schedule.build(&mut world).unwrap_err();
    assert_eq!(err, ScheduleError::DuplicateName("physics".into()));
    assert!(err.to_string().contains("`physics`"), "{err}");
}

#[test]
#[should_panic(expected = "two systems are named `dup`")]
fn run_panics_on_a_duplicate_name() {
    let mut schedule = Schedule::new();
    schedule.add_system("dup", || {});
    schedule.add_system("dup", || {});
    schedule.run(&mut World::new());
}

#[test]
fn before_and_after_order_single_threaded() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    schedule.set_executor(ExecutorKind::SingleThreaded);
    // Added in an order the constraints must override.
    schedule
        .add_system("render", tracer("render"))
        .after("physics");
    schedule
        .add_system("physics", tracer("physics"))
        .after("input");
    schedule
        .add_system("audio", tracer("audio"))
        .after("render");
    schedule
        .add_system("input", tracer("input"))
        .before("physics");
    schedule.add_system("ui", tracer("ui")).before("input");
    let expected = ["ui", "input", "physics", "render", "audio"];
    assert_eq!(schedule.system_names(), expected);
    for _ in 0..3 {
        schedule.run(&mut world);
    }
    let trace = &world.resource::<Trace>().0;
    assert_eq!(trace.len(), 15);
    for chunk in trace.chunks(5) {
        assert_eq!(chunk, expected);
    }
}

#[test]
fn unordered_systems_keep_insertion_order() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    for name in ["c", "a", "d", "b"] {
        schedule.add_system(name, tracer(name));
    }
    assert_eq!(schedule.system_names(), ["c", "a", "d", "b"]);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Trace>().0, ["c", "a", "d", "b"]);
}

/// One event of the parallel ordering test.
#[derive(Clone, Copy, Debug)]
struct Event {
    run: usize,
    name: &'static str,
    start: bool,
}

#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
    threads: Arc<Mutex<HashSet<ThreadId>>>,
    run: Arc<AtomicUsize>,
}

impl Recorder {
    fn record(&self, name: &'static str, start: bool) {
        let run = self.run.load(Ordering::SeqCst);
        self.events.lock().unwrap().push(Event { run, name, start });
        if start {
            self.threads.lock().unwrap().insert(thread::current().id());
        }
    }
}

/// A heavy-ish system writing `W<N>`: ~100 µs of work between its start and
/// end events.
fn heavy<const N: usize>(
    name: &'static str,
    rec: &Recorder,
) -> impl FnMut(Query<&mut W<N>>) + Send + 'static + use<N> {
    let rec = rec.clone();
    move |mut q: Query<&mut W<N>>| {
        rec.record(name, true);
        for w in q.iter_mut() {
            w.0 += 1;
        }
        busy(Duration::from_micros(100));
        rec.record(name, false);
    }
}

fn check_order(events: &[Event], runs: usize, before: &str, after: &str) {
    for run in 0..runs {
        let end_before = events
            .iter()
            .position(|e| e.run == run && e.name == before && !e.start)
            .unwrap_or_else(|| panic!("{before} did not end in run {run}"));
        let start_after = events
            .iter()
            .position(|e| e.run == run && e.name == after && e.start)
            .unwrap_or_else(|| panic!("{after} did not start in run {run}"));
        assert!(
            end_before < start_after,
            "run {run}: `{after}` started before `{before}` ended"
        );
    }
}

fn ordering_schedule(rec: &Recorder) -> Schedule {
    let mut schedule = Schedule::new();
    // Each writes its own component: only the explicit orderings (and the
    // set orderings) constrain them.
    schedule
        .add_system("late", heavy::<0>("late", rec))
        .in_set("output");
    schedule.add_system("c", heavy::<1>("c", rec)).after("b");
    schedule.add_system("b", heavy::<2>("b", rec)).after("a");
    schedule.add_system("a", heavy::<3>("a", rec));
    schedule.add_system("free1", heavy::<4>("free1", rec));
    schedule.add_system("free2", heavy::<5>("free2", rec));
    schedule
        .add_system("pre", heavy::<6>("pre", rec))
        .before("a")
        .before("free2");
    schedule.configure_set("output").after("c").after("free1");
    schedule
}

fn run_ordering(kind: ExecutorKind, runs: usize) -> Recorder {
    let rec = Recorder::default();
    let mut world = World::new();
    world.spawn((W::<0>(0), W::<1>(0), W::<2>(0), W::<3>(0)));
    world.spawn((W::<4>(0), W::<5>(0), W::<6>(0)));
    let mut schedule = ordering_schedule(&rec);
    schedule.set_executor(kind);
    for run in 0..runs {
        rec.run.store(run, Ordering::SeqCst);
        schedule.run(&mut world);
    }
    let events = rec.events.lock().unwrap();
    assert_eq!(events.len(), runs * 7 * 2);
    for (before, after) in [
        ("a", "b"),
        ("b", "c"),
        ("pre", "a"),
        ("pre", "free2"),
        ("c", "late"),
        ("free1", "late"),
        ("pre", "c"),
    ] {
        check_order(&events, runs, before, after);
    }
    drop(events);
    let totals = world.run_system_once(|q: Query<&W<3>>| q.single().0);
    assert_eq!(totals, runs as u64);
    rec
}

#[test]
fn before_and_after_hold_under_the_single_threaded_executor() {
    let rec = run_ordering(
        ExecutorKind::SingleThreaded,
        if cfg!(miri) { 6 } else { 50 },
    );
    let threads = rec.threads.lock().unwrap();
    assert_eq!(
        *threads,
        HashSet::from([thread::current().id()]),
        "single-threaded: every system on the calling thread"
    );
}

#[test]
fn before_and_after_hold_under_the_parallel_executor() {
    let rec = run_ordering(ExecutorKind::Parallel, if cfg!(miri) { 12 } else { 200 });
    let threads = rec.threads.lock().unwrap();
    assert!(
        threads.iter().any(|&t| t != thread::current().id()),
        "the parallel executor never ran a system on the thread pool"
    );
}

#[test]
fn sets_order_their_members() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    schedule.add_system("draw", tracer("draw")).in_set("render");
    schedule
        .add_system("present", tracer("present"))
        .in_set("render")
        .after("draw");
    schedule
        .add_system("integrate", tracer("integrate"))
        .in_set("physics");
    schedule
        .add_system("collide", tracer("collide"))
        .in_set("physics");
    schedule
        .add_system("read_keys", tracer("read_keys"))
        .in_set("input");
    schedule.add_system("log", tracer("log")).after("render");
    schedule
        .configure_set("physics")
        .before("render")
        .after("input");
    let expected = [
        "read_keys",
        "integrate",
        "collide",
        "draw",
        "present",
        "log",
    ];
    assert_eq!(schedule.system_names(), expected);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Trace>().0, expected);
}

#[test]
fn a_system_may_join_several_sets() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    schedule.add_system("z", tracer("z")).in_set("late");
    schedule
        .add_system("both", tracer("both"))
        .in_set("early")
        .in_set("middle");
    schedule.add_system("m", tracer("m")).in_set("middle");
    schedule.add_system("e", tracer("e")).in_set("early");
    schedule.configure_set("early").before("middle");
    schedule.configure_set("middle").before("late");
    // `both` is in early and middle, so it must run before itself: a cycle.
    let err = schedule.build(&mut world).unwrap_err();
    assert_eq!(err, ScheduleError::Cycle(vec!["both".into()]));

    let mut schedule = Schedule::new();
    schedule.add_system("z", tracer("z")).in_set("late");
    schedule.add_system("m", tracer("m")).in_set("middle");
    schedule
        .add_system("both", tracer("both"))
        .in_set("early")
        .in_set("middle");
    schedule.add_system("e", tracer("e")).in_set("early");
    schedule.configure_set("middle").before("late");
    schedule.configure_set("early").after("z2");
    schedule.add_system("z2", tracer("z2"));
    schedule.run(&mut world);
    let trace = &world.resource::<Trace>().0;
    let pos = |n: &str| trace.iter().position(|t| *t == n).unwrap();
    assert!(pos("z2") < pos("both") && pos("z2") < pos("e"));
    assert!(pos("both") < pos("z") && pos("m") < pos("z"));
}

#[test]
fn an_empty_set_is_a_valid_target() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    schedule.configure_set("nobody");
    schedule.add_system("a", tracer("a")).after("nobody");
    schedule.add_system("b", tracer("b")).before("nobody");
    schedule.build(&mut world).unwrap();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Trace>().0, ["a", "b"]);
}

// ----- build errors ------------------------------------------------------------------

#[test]
fn unknown_targets_name_both_sides() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("a", || {});
    schedule.add_system("b", || {}).before("a").after("nowhere");
    let err = schedule.build(&mut world).unwrap_err();
    assert_eq!(
        err,
        ScheduleError::UnknownTarget {
            from: "b".into(),
            target: "nowhere".into(),
            suggestion: None,
        }
    );
    let text = err.to_string();
    assert!(text.contains("`b`") && text.contains("`nowhere`"), "{text}");

    let mut schedule = Schedule::new();
    schedule.add_system("a", || {}).before("ghost");
    assert_eq!(
        schedule.build(&mut world).unwrap_err(),
        ScheduleError::UnknownTarget {
            from: "a".into(),
            target: "ghost".into(),
            suggestion: None,
        }
    );

    let mut schedule = Schedule::new();
    schedule.add_system("a", || {}).in_set("s");
    schedule.configure_set("s").after("phantom");
    assert_eq!(
        schedule.build(&mut world).unwrap_err(),
        ScheduleError::UnknownTarget {
            from: "s".into(),
            target: "phantom".into(),
            suggestion: None,
        }
    );
}

fn cycle_of(schedule: &mut Schedule) -> Vec<String> {
    match schedule.build(&mut World::new()) {
        Err(ScheduleError::Cycle(names)) => names,
        other => panic!("expected a cycle, got {other:?}"),
    }
}

#[test]
fn a_two_system_cycle_is_named() {
    let mut schedule = Schedule::new();
    schedule.add_system("bystander", || {});
    schedule.add_system("a", || {}).before("b");
    schedule.add_system("b", || {}).before("a");
    schedule.add_system("after_all", || {}).after("a");
    let cycle = cycle_of(&mut schedule);
    let text = ScheduleError::Cycle(cycle.clone()).to_string();
    let mut sorted = cycle;
    sorted.sort();
    assert_eq!(sorted, ["a", "b"]);
    assert!(text.contains("`a`") && text.contains("`b`"), "{text}");
    assert!(
        !text.contains("bystander") && !text.contains("after_all"),
        "{text}"
    );
}

#[test]
fn a_longer_cycle_lists_its_systems_in_order() {
    let mut schedule = Schedule::new();
    schedule.add_system("x", || {}).before("y");
    schedule.add_system("y", || {}).before("z");
    schedule.add_system("z", || {}).before("x");
    schedule.add_system("w", || {}).after("x");
    let cycle = cycle_of(&mut schedule);
    assert_eq!(cycle.len(), 3, "{cycle:?}");
    // The names follow the edges: each runs before the next (cyclically).
    let next = |n: &str| match n {
        "x" => "y",
        "y" => "z",
        "z" => "x",
        other => panic!("`{other}` is not in the cycle"),
    };
    for i in 0..3 {
        assert_eq!(cycle[(i + 1) % 3], next(&cycle[i]), "{cycle:?}");
    }
}

#[test]
fn a_self_ordering_is_a_cycle() {
    let mut schedule = Schedule::new();
    schedule.add_system("ouroboros", || {}).after("ouroboros");
    assert_eq!(cycle_of(&mut schedule), ["ouroboros"]);
}

#[test]
fn a_cycle_through_sets_is_named() {
    let mut schedule = Schedule::new();
    schedule.add_system("a", || {}).in_set("physics");
    schedule.add_system("b", || {}).before("physics");
    schedule.add_system("c", || {});
    schedule.configure_set("physics").before("b");
    let mut cycle = cycle_of(&mut schedule);
    cycle.sort();
    assert_eq!(cycle, ["a", "b"]);

    // Two sets ordered both ways.
    let mut schedule = Schedule::new();
    schedule.add_system("p", || {}).in_set("s1");
    schedule.add_system("q", || {}).in_set("s2");
    schedule.configure_set("s1").before("s2");
    schedule.configure_set("s2").before("s1");
    let mut cycle = cycle_of(&mut schedule);
    cycle.sort();
    assert_eq!(cycle, ["p", "q"]);
}

#[test]
#[should_panic(expected = "the orderings form a cycle")]
fn run_panics_on_a_cycle() {
    let mut schedule = Schedule::new();
    schedule.add_system("a", || {}).after("b");
    schedule.add_system("b", || {}).after("a");
    schedule.run(&mut World::new());
}

#[test]
#[should_panic(expected = "which is neither a system nor a set")]
fn run_panics_on_an_unknown_target() {
    let mut schedule = Schedule::new();
    schedule.add_system("a", || {}).after("b");
    schedule.run(&mut World::new());
}

#[test]
fn an_invalid_schedule_runs_nothing() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    schedule.add_system("ok", tracer("ok"));
    schedule.add_system("bad", tracer("bad")).after("missing");
    let msg = expect_panic(|| schedule.run(&mut world));
    assert!(msg.contains("`bad`") && msg.contains("`missing`"), "{msg}");
    assert!(world.resource::<Trace>().0.is_empty());
    // Fixing it makes it runnable.
    schedule.remove_system("bad").unwrap();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Trace>().0, ["ok"]);
}

#[test]
fn system_names_fall_back_to_insertion_order_when_invalid() {
    let mut schedule = Schedule::new();
    schedule.add_system("b", || {}).after("a");
    schedule.add_system("a", || {}).after("b");
    assert_eq!(schedule.system_names(), ["b", "a"]);
}

// ----- enable, disable, remove -------------------------------------------------------

#[test]
fn disabled_systems_are_skipped_and_reenabled_ones_run() {
    for kind in EXECUTORS {
        let mut world = trace_world();
        let mut schedule = schedule_on(kind);
        schedule.add_system("a", tracer("a"));
        schedule.add_system("b", tracer("b")).after("a");
        schedule.add_system("c", tracer("c")).after("b");
        assert!(schedule.is_enabled("b"));
        schedule.run(&mut world);
        schedule.set_enabled("b", false).unwrap();
        assert!(!schedule.is_enabled("b"));
        assert!(schedule.contains("b"), "disabled, not removed");
        schedule.run(&mut world);
        schedule.run(&mut world);
        schedule.set_enabled("b", true).unwrap();
        schedule.run(&mut world);
        assert_eq!(
            world.resource::<Trace>().0,
            ["a", "b", "c", "a", "c", "a", "c", "a", "b", "c"],
            "{kind:?}"
        );
    }
}

#[test]
fn disabling_keeps_the_order_around_the_system() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    schedule.add_system("last", tracer("last")).after("mid");
    schedule.add_system("mid", tracer("mid")).after("first");
    schedule.add_system("first", tracer("first"));
    schedule.set_enabled("mid", false).unwrap();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Trace>().0, ["first", "last"]);
}

#[test]
fn disabled_exclusive_system_and_its_commands() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    schedule.add_system("excl", |w: &mut World| {
        w.resource_mut::<Trace>().0.push("excl")
    });
    schedule.add_system("cmd", |mut c: Commands| {
        c.run(|w| w.resource_mut::<Trace>().0.push("cmd"));
    });
    schedule.set_enabled("excl", false).unwrap();
    schedule.set_enabled("cmd", false).unwrap();
    schedule.run(&mut world);
    assert!(world.resource::<Trace>().0.is_empty());
    schedule.set_enabled("excl", true).unwrap();
    schedule.set_enabled("cmd", true).unwrap();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Trace>().0, ["excl", "cmd"]);
}

#[test]
fn remove_system_between_runs() {
    for kind in EXECUTORS {
        let mut world = trace_world();
        let mut schedule = schedule_on(kind);
        schedule.add_system("input", tracer("input"));
        schedule.add_system("ai", tracer("ai")).after("input");
        schedule
            .add_system("physics", tracer("physics"))
            .after("ai");
        schedule
            .add_system("render", tracer("render"))
            .after("physics");
        schedule.run(&mut world);
        schedule.remove_system("ai").unwrap();
        assert!(!schedule.contains("ai"));
        assert_eq!(schedule.system_names(), ["input", "physics", "render"]);
        schedule.run(&mut world);
        schedule.remove_system("input").unwrap();
        schedule.run(&mut world);
        assert_eq!(
            world.resource::<Trace>().0,
            [
                "input", "ai", "physics", "render", // run 1
                "input", "physics", "render", // run 2
                "physics", "render", // run 3
            ],
            "{kind:?}"
        );
        // A new system under the removed name.
        schedule.add_system("ai", tracer("ai2")).before("physics");
        world.resource_mut::<Trace>().0.clear();
        schedule.run(&mut world);
        assert_eq!(world.resource::<Trace>().0, ["ai2", "physics", "render"]);
    }
}

#[test]
fn removing_keeps_other_systems_state() {
    let mut world = World::new();
    world.insert_resource(Vec::<u32>::new());
    let mut schedule = Schedule::new();
    schedule.add_system("doomed", || {});
    schedule.add_system("count", |mut n: Local<u32>, mut out: ResMut<Vec<u32>>| {
        *n += 1;
        out.push(*n);
    });
    schedule.run(&mut world);
    schedule.run(&mut world);
    schedule.remove_system("doomed").unwrap();
    schedule.add_system("newcomer", || {});
    schedule.run(&mut world);
    assert_eq!(*world.resource::<Vec<u32>>(), [1, 2, 3]);
}

#[test]
fn unknown_system_errors() {
    let mut schedule = Schedule::new();
    schedule.add_system("real", || {});
    assert_eq!(
        schedule.remove_system("fake"),
        Err(ScheduleError::UnknownSystem("fake".into()))
    );
    assert_eq!(
        schedule.set_enabled("fake", false),
        Err(ScheduleError::UnknownSystem("fake".into()))
    );
    let text = schedule.remove_system("fake").unwrap_err().to_string();
    assert!(text.contains("`fake`"), "{text}");
    assert!(!schedule.is_enabled("fake"));
    assert!(schedule.contains("real"));
    schedule.remove_system("real").unwrap();
    assert_eq!(
        schedule.remove_system("real"),
        Err(ScheduleError::UnknownSystem("real".into()))
    );
}

#[test]
fn contains_and_system_names() {
    let mut schedule = Schedule::new();
    assert!(schedule.system_names().is_empty());
    assert!(!schedule.contains("a"));
    schedule.add_system("c", || {}).after("b");
    schedule.add_system("b", || {}).after("a");
    schedule.add_system("a", || {});
    schedule.add_system("d", || {});
    assert!(schedule.contains("a") && schedule.contains("d"));
    assert!(!schedule.contains("e"));
    assert_eq!(schedule.system_names(), ["a", "b", "c", "d"]);
    let debug = format!("{schedule:?}");
    assert!(debug.contains("Schedule"), "{debug}");
}

// ----- panics in systems -------------------------------------------------------------

#[test]
fn a_panic_in_a_system_names_it_single_threaded() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.set_executor(ExecutorKind::SingleThreaded);
    schedule.add_system("calm", || {});
    // A closure that only panics has no return type to infer (a system may
    // return `()` or a `Result`): say `()`.
    schedule.add_system("volcano", |_q: Query<&Pos>| -> () {
        panic!("eruption {}", 42);
    });
    let payload = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    let msg = payload.downcast::<String>().expect("a String payload");
    assert!(msg.contains("volcano"), "{msg}");
    assert!(msg.contains("eruption 42"), "{msg}");

    let mut exclusive = Schedule::new();
    exclusive.set_executor(ExecutorKind::SingleThreaded);
    exclusive.add_system("big_bang", |_w: &mut World| -> () { panic!("static str") });
    let payload = catch_unwind(AssertUnwindSafe(|| exclusive.run(&mut world))).unwrap_err();
    let msg = payload.downcast::<String>().expect("a String payload");
    assert!(
        msg.contains("big_bang") && msg.contains("static str"),
        "{msg}"
    );
}

#[test]
fn a_panic_in_a_system_names_it_parallel() {
    // The panicking system panics only when it runs on the thread pool, so
    // the panic surely comes through the parallel path.
    let mut world = World::new();
    world.spawn((W::<0>(0), W::<1>(0)));
    let armed = Arc::new(AtomicBool::new(false));
    let test_thread = thread::current().id();
    let mut schedule = Schedule::new();
    schedule.add_system("steady", |mut q: Query<&mut W<0>>| {
        q.single_mut().0 += 1;
        busy(Duration::from_millis(1));
    });
    let a = armed.clone();
    schedule.add_system("volcano", move |mut q: Query<&mut W<1>>| {
        q.single_mut().0 += 1;
        busy(Duration::from_millis(1));
        if a.load(Ordering::SeqCst) && thread::current().id() != test_thread {
            panic!("eruption on the pool");
        }
    });
    // The first run is serial (costs unknown yet, on this thread); the
    // executor goes to the pool once it has measured the systems.
    let mut payload = None;
    for _ in 0..200 {
        armed.store(true, Ordering::SeqCst);
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))) {
            payload = Some(p);
            break;
        }
    }
    let payload = payload.expect("the parallel executor never ran `volcano` on the pool");
    let msg = payload.downcast::<String>().expect("a String payload");
    assert!(msg.contains("volcano"), "{msg}");
    assert!(msg.contains("eruption on the pool"), "{msg}");

    // The schedule survives and runs again.
    armed.store(false, Ordering::SeqCst);
    schedule.run(&mut world);
}

#[test]
fn a_panic_in_a_parallel_schedule_first_run_names_it() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("calm", |_q: Query<&mut W<0>>| {});
    schedule.add_system("volcano", |_q: Query<&mut W<1>>| -> () {
        std::panic::panic_any(7u32);
    });
    let payload = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    let msg = payload.downcast::<String>().expect("a String payload");
    assert!(msg.contains("volcano"), "{msg}");
}

// ----- parallelism ------------------------------------------------------------------

#[test]
fn systems_writing_different_components_overlap() {
    // Per run, each system counts itself in on entry. When the executor runs
    // them on the thread pool, the first to arrive waits (still inside) for
    // the second to arrive: seeing it proves the second started before the
    // first finished. Run one after the other, the first would give up
    // instead. The wait is a bounded number of yields, not a clock: the
    // signal is the other system's arrival, whatever the machine's speed
    // (under Miri's virtual clock too). On the calling thread (a serial run
    // of the adaptive executor) nothing waits.
    let arrived = Arc::new(AtomicUsize::new(0));
    let proofs = Arc::new(AtomicUsize::new(0));
    let pool_runs = Arc::new(AtomicUsize::new(0));
    let test_thread = thread::current().id();
    let make = || {
        let (arrived, proofs, pool_runs) = (arrived.clone(), proofs.clone(), pool_runs.clone());
        move || {
            let rank = arrived.fetch_add(1, Ordering::SeqCst) + 1;
            // Heavy enough that the executor finds parallel worth it.
            busy(Duration::from_micros(if cfg!(miri) { 100 } else { 3_000 }));
            if rank == 1 && thread::current().id() != test_thread {
                pool_runs.fetch_add(1, Ordering::SeqCst);
                for _ in 0..if cfg!(miri) { 1_000 } else { 2_000_000 } {
                    if arrived.load(Ordering::SeqCst) >= 2 {
                        proofs.fetch_add(1, Ordering::SeqCst);
                        break;
                    }
                    thread::yield_now();
                }
            }
        }
    };
    let (left, right) = (make(), make());
    let mut world = World::new();
    let e = world.spawn((W::<0>(0), W::<1>(0)));
    let mut schedule = Schedule::new();
    schedule.add_system("left", move |mut q: Query<&mut W<0>>| {
        q.single_mut().0 += 1;
        left();
    });
    schedule.add_system("right", move |mut q: Query<&mut W<1>>| {
        q.single_mut().0 += 1;
        right();
    });
    // The adaptive executor measures first, then tries the pool, and (if a
    // parallel run was not faster) probes it again every few dozen runs.
    let mut runs = 0u64;
    while runs < 400 && proofs.load(Ordering::SeqCst) == 0 {
        arrived.store(0, Ordering::SeqCst);
        schedule.run(&mut world);
        runs += 1;
    }
    assert!(
        pool_runs.load(Ordering::SeqCst) > 0,
        "the parallel executor never ran a system on the thread pool in {runs} runs"
    );
    assert!(
        proofs.load(Ordering::SeqCst) > 0,
        "the two systems never ran at the same time ({} runs on the pool)",
        pool_runs.load(Ordering::SeqCst)
    );
    assert_eq!(world.get::<W<0>>(e), Ok(&W(runs)));
    assert_eq!(world.get::<W<1>>(e), Ok(&W(runs)));
}

#[test]
fn systems_writing_the_same_component_never_overlap() {
    let inside = Arc::new(AtomicBool::new(false));
    let violated = Arc::new(AtomicBool::new(false));
    let order = Arc::new(Mutex::new(Vec::new()));
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let writer = |name: &'static str| {
        let (inside, violated, order, threads) = (
            inside.clone(),
            violated.clone(),
            order.clone(),
            threads.clone(),
        );
        move |mut q: Query<&mut W<0>>| {
            if inside.swap(true, Ordering::SeqCst) {
                violated.store(true, Ordering::SeqCst);
            }
            threads.lock().unwrap().insert(thread::current().id());
            order.lock().unwrap().push(name);
            for w in q.iter_mut() {
                w.0 += 1;
            }
            busy(Duration::from_micros(200));
            inside.store(false, Ordering::SeqCst);
        }
    };
    let mut world = World::new();
    world.spawn_batch((0..10).map(|_| (W::<0>(0), W::<1>(0))));
    let mut schedule = Schedule::new();
    schedule.add_system("w1", writer("w1"));
    schedule.add_system("w2", writer("w2"));
    let th = threads.clone();
    // A third system, free to overlap either writer: the block has
    // parallelism, so the executor does go parallel.
    schedule.add_system("other", move |mut q: Query<&mut W<1>>| {
        th.lock().unwrap().insert(thread::current().id());
        for w in q.iter_mut() {
            w.0 += 1;
        }
        busy(Duration::from_micros(200));
    });
    // A reader of W<0> conflicts with both writers too.
    let (ins, vio) = (inside.clone(), violated.clone());
    schedule.add_system("reader", move |q: Query<&W<0>>| {
        if ins.load(Ordering::SeqCst) {
            vio.store(true, Ordering::SeqCst);
        }
        let _ = q.iter().count();
        busy(Duration::from_micros(100));
        if ins.load(Ordering::SeqCst) {
            vio.store(true, Ordering::SeqCst);
        }
    });
    const RUNS: usize = if cfg!(miri) { 30 } else { 150 };
    for _ in 0..RUNS {
        schedule.run(&mut world);
    }
    assert!(
        !violated.load(Ordering::SeqCst),
        "two writers of W<0> overlapped"
    );
    // Conflicting systems run in the order they were added, every run.
    let order = order.lock().unwrap();
    assert_eq!(order.len(), 2 * RUNS);
    for pair in order.chunks(2) {
        assert_eq!(pair, ["w1", "w2"]);
    }
    assert!(
        threads
            .lock()
            .unwrap()
            .iter()
            .any(|&t| t != thread::current().id()),
        "the parallel executor never ran a system on the thread pool"
    );
    let ok = world.run_system_once(|q: Query<(&W<0>, &W<1>)>| {
        q.iter()
            .all(|(a, b)| a.0 == 2 * RUNS as u64 && b.0 == RUNS as u64)
    });
    assert!(ok);
}

/// What the writers of `Log<K>` pushed this run, in the order they ran.
#[derive(Debug, Default)]
struct Log<const K: usize>(Vec<usize>);

/// How many systems below `i` write `Log<k>`, in
/// `long_runs_of_conflicting_systems_keep_their_order`: every third
/// system writes, alternately `Log<0>` and `Log<1>`.
fn writers_before(k: usize, i: usize) -> usize {
    let writers = i.div_ceil(3);
    if k == 0 {
        writers.div_ceil(2)
    } else {
        writers / 2
    }
}

/// Two resources, each written by a long run of systems with readers
/// between them, and no ordering given: the plan keeps only the
/// waits that imply the rest (a reader waits for the last writer before
/// it, not for every one). Under the parallel executor, busy enough that
/// it tries the thread pool, every reader still sees exactly the writes
/// added before it and the writers of a resource run in the order they
/// were added.
#[test]
fn long_runs_of_conflicting_systems_keep_their_order() {
    let n = if cfg!(miri) { 30 } else { 600 };
    let runs = if cfg!(miri) { 3 } else { 20 };
    let work = if cfg!(miri) {
        Duration::ZERO
    } else {
        Duration::from_micros(5)
    };
    let violations = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    world.insert_resource(Log::<0>::default());
    world.insert_resource(Log::<1>::default());
    let mut schedule = Schedule::new();
    schedule.add_system("clear", |world: &mut World| {
        world.resource_mut::<Log<0>>().0.clear();
        world.resource_mut::<Log<1>>().0.clear();
    });
    fn check(violations: &AtomicUsize, ok: bool) {
        if !ok {
            violations.fetch_add(1, Ordering::SeqCst);
        }
    }
    for i in 0..n {
        let v = violations.clone();
        let name = format!("s{i}");
        match (i % 3, (i / 3) % 2) {
            (0, 0) => schedule.add_system(name, move |mut log: ResMut<Log<0>>| {
                busy(work);
                check(&v, log.0.len() == writers_before(0, i));
                log.0.push(i);
            }),
            (0, _) => schedule.add_system(name, move |mut log: ResMut<Log<1>>| {
                busy(work);
                check(&v, log.0.len() == writers_before(1, i));
                log.0.push(i);
            }),
            (1, _) => schedule.add_system(name, move |log: Res<Log<0>>| {
                busy(work);
                check(&v, log.0.len() == writers_before(0, i));
            }),
            _ => schedule.add_system(name, move |log: Res<Log<1>>| {
                busy(work);
                check(&v, log.0.len() == writers_before(1, i));
            }),
        };
    }
    for _ in 0..runs {
        schedule.run(&mut world);
    }
    assert_eq!(violations.load(Ordering::SeqCst), 0);
    let expected =
        |k: usize| -> Vec<usize> { (0..n).filter(|&i| i % 3 == 0 && (i / 3) % 2 == k).collect() };
    assert_eq!(world.resource::<Log<0>>().0, expected(0));
    assert_eq!(world.resource::<Log<1>>().0, expected(1));
}

// ----- a deterministic workload on both executors ----------------------------------

#[derive(Component, Debug, PartialEq, Eq, Clone, Copy, Hash, PartialOrd, Ord)]
struct IPos(i64);
#[derive(Component, Debug, PartialEq, Eq, Clone, Copy, Hash, PartialOrd, Ord)]
struct IVel(i64);
#[derive(Component, Debug, PartialEq, Eq, Clone, Copy, Hash, PartialOrd, Ord)]
struct Health(i64);
#[derive(Component, Debug, PartialEq, Eq, Clone, Copy, Hash, PartialOrd, Ord)]
#[component(storage = "sparse")]
struct Poisoned(i64);

#[derive(Debug, Default, PartialEq, Eq, Clone)]
struct Stats {
    kills: u64,
    spawned: u64,
    census: Vec<usize>,
    momentum: Vec<i64>,
}

/// Each workload system's busy time, so the parallel executor natively has
/// something to overlap; none under Miri, where the executor runs them on
/// the calling thread and the spin only costs interpretation.
const WORK: Duration = if cfg!(miri) {
    Duration::ZERO
} else {
    Duration::from_micros(100)
};

/// Every entity with its components, sorted by entity.
type Rows = Vec<(Entity, IPos, IVel, Health, Option<Poisoned>)>;

/// The workload's size: smaller under Miri, where the full one takes
/// minutes (three workloads per test).
const WORKLOAD_ENTITIES: i64 = if cfg!(miri) { 24 } else { 200 };
const WORKLOAD_RUNS: usize = if cfg!(miri) { 16 } else { 60 };

fn workload(kind: ExecutorKind) -> (Rows, Stats) {
    let mut world = World::new();
    world.insert_resource(Stats::default());
    for i in 0..WORKLOAD_ENTITIES {
        world.spawn((IPos(i), IVel(i % 7 - 3), Health(50 + i % 13)));
    }
    let mut schedule = schedule_on(kind);
    schedule.add_system(
        "spawner",
        |mut commands: Commands, mut n: Local<i64>, mut stats: ResMut<Stats>| {
            for _ in 0..3 {
                *n += 1;
                commands.spawn((IPos(*n * 5), IVel(*n % 5 - 2), Health(30 + *n % 11)));
                stats.spawned += 1;
            }
            busy(WORK);
        },
    );
    schedule.add_system("movement", |mut q: Query<(&mut IPos, &IVel)>| {
        for (p, v) in q.iter_mut() {
            p.0 += v.0;
        }
        busy(WORK);
    });
    schedule
        .add_system(
            "poison",
            |mut commands: Commands, q: Query<(Entity, &IPos), Without<Poisoned>>| {
                for (e, p) in q.iter() {
                    if p.0.rem_euclid(17) == 0 {
                        commands.insert(e, Poisoned(2));
                    }
                }
                busy(WORK);
            },
        )
        .after("movement");
    schedule.add_system(
        "damage",
        |mut q: Query<(&IPos, &mut Health, Option<&Poisoned>)>| {
            for (p, h, poison) in q.iter_mut() {
                h.0 -= p.0.rem_euclid(5) + poison.map_or(0, |p| p.0);
            }
            busy(WORK);
        },
    );
    schedule
        .add_system(
            "reaper",
            |mut commands: Commands, q: Query<(Entity, &Health)>, mut stats: ResMut<Stats>| {
                for (e, h) in q.iter() {
                    if h.0 <= 0 {
                        commands.despawn(e);
                        stats.kills += 1;
                    }
                }
                busy(WORK);
            },
        )
        .after("damage");
    schedule.add_system("drag", |mut q: Query<&mut IVel, With<Health>>| {
        for v in q.iter_mut() {
            v.0 -= v.0.signum() * (v.0.abs() > 2) as i64;
        }
        busy(WORK);
    });
    schedule
        .add_system("momentum", |q: Query<&IVel>, mut stats: ResMut<Stats>| {
            let m = q.iter().map(|v| v.0).sum();
            stats.momentum.push(m);
            busy(WORK);
        })
        .before("drag");
    schedule
        .add_system("census", |world: &mut World| {
            let n = world.len();
            world.resource_mut::<Stats>().census.push(n);
        })
        .after("reaper");
    schedule.add_system("late_cure", |mut q: Query<&mut Poisoned>| {
        for p in q.iter_mut() {
            p.0 = (p.0 - 1).max(0);
        }
        busy(WORK);
    });
    for _ in 0..WORKLOAD_RUNS {
        schedule.run(&mut world);
    }
    let mut rows = world.run_system_once(
        |q: Query<(Entity, &IPos, &IVel, &Health, Option<&Poisoned>)>| {
            q.iter()
                .map(|(e, p, v, h, x)| (e, *p, *v, *h, x.copied()))
                .collect::<Vec<_>>()
        },
    );
    rows.sort_by_key(|r| r.0);
    let stats = world.resource::<Stats>().clone();
    world.check_invariants();
    (rows, stats)
}

#[test]
fn both_executors_give_identical_results() {
    let single = workload(ExecutorKind::SingleThreaded);
    let parallel = workload(ExecutorKind::Parallel);
    assert!(single.1.kills > 0, "the workload kills something");
    assert!(
        single.0.iter().any(|r| r.4.is_some()),
        "and poisons something"
    );
    assert_eq!(single.1.spawned, 3 * WORKLOAD_RUNS as u64);
    assert_eq!(single.1, parallel.1);
    assert_eq!(single.0, parallel.0);
    // Run-to-run, too.
    assert_eq!(parallel, workload(ExecutorKind::Parallel));
}

// ----- run_system_once ------------------------------------------------------------

#[test]
fn kill_every_entity_with_health_and_ai_on_demand() {
    #[derive(Component)]
    #[allow(dead_code)]
    struct Hp(u32);
    #[derive(Component)]
    struct Ai;
    fn smite(mut commands: Commands, q: Query<Entity, (With<Hp>, With<Ai>)>) {
        for e in q.iter() {
            commands.despawn(e);
        }
    }
    let mut world = World::new();
    let doomed: Vec<Entity> = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                world.spawn((Hp(i), Ai))
            } else {
                world.spawn((Hp(i), Ai, Pos(0.0)))
            }
        })
        .collect();
    let hp_only: Vec<Entity> = (0..5).map(|i| world.spawn(Hp(i))).collect();
    let ai_only: Vec<Entity> = (0..5).map(|_| world.spawn((Ai, Pos(1.0)))).collect();
    // A schedule running alongside is not involved.
    let mut schedule = Schedule::new();
    schedule.add_system("idle", |_q: Query<&Hp>| {});
    schedule.run(&mut world);
    world.run_system_once(smite);
    assert!(doomed.iter().all(|&e| !world.contains(e)));
    assert!(hp_only.iter().chain(&ai_only).all(|&e| world.contains(e)));
    assert_eq!(world.len(), 10);
    schedule.run(&mut world);
    world.check_invariants();
}

// ----- the frame runner ---------------------------------------------------------------

#[test]
fn run_frames_advances_time() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    schedule.add_system("clock", move |t: Res<Time>| {
        s.lock().unwrap().push((t.frame(), t.delta(), t.elapsed()));
    });
    assert!(!world.contains_resource::<Time>());
    schedule.run_frames(&mut world, 4, Duration::from_millis(250));
    let time = world.resource::<Time>();
    assert_eq!(time.frame(), 4);
    assert_eq!(time.delta(), Duration::from_millis(250));
    assert_eq!(time.elapsed(), Duration::from_secs(1));
    assert_eq!(time.delta_seconds(), 0.25);
    assert_eq!(time.elapsed_seconds(), 1.0);
    let ms = Duration::from_millis;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (1, ms(250), ms(250)),
            (2, ms(250), ms(500)),
            (3, ms(250), ms(750)),
            (4, ms(250), ms(1000)),
        ],
        "each run sees its frame's time"
    );
    schedule.run_frame(&mut world, ms(500));
    let time = world.resource::<Time>();
    assert_eq!(
        (time.frame(), time.delta(), time.elapsed()),
        (5, ms(500), ms(1500))
    );
    // `run` alone does not advance time.
    schedule.run(&mut world);
    assert_eq!(world.resource::<Time>().frame(), 5);
}

#[test]
fn movement_integrates_with_time() {
    fn movement(time: Res<Time>, mut q: Query<(&mut Pos, &Vel)>) {
        for (p, v) in q.iter_mut() {
            p.0 += v.0 * time.delta_seconds();
        }
    }
    for kind in EXECUTORS {
        let mut world = World::new();
        let a = world.spawn((Pos(0.0), Vel(2.0)));
        let b = world.spawn((Pos(10.0), Vel(-4.0)));
        let still = world.spawn(Pos(3.0));
        let mut schedule = schedule_on(kind);
        schedule.add_system("movement", movement);
        schedule.run_frames(&mut world, 8, Duration::from_millis(125));
        assert_eq!(world.get::<Pos>(a), Ok(&Pos(2.0)), "{kind:?}");
        assert_eq!(world.get::<Pos>(b), Ok(&Pos(6.0)), "{kind:?}");
        assert_eq!(world.get::<Pos>(still), Ok(&Pos(3.0)));
        // Uneven frames: the integral is the sum of the steps.
        schedule.run_frame(&mut world, Duration::from_millis(500));
        schedule.run_frame(&mut world, Duration::from_millis(250));
        assert_eq!(world.get::<Pos>(a), Ok(&Pos(3.5)));
        assert_eq!(world.resource::<Time>().frame(), 10);
    }
}

#[test]
fn run_frame_keeps_an_existing_time() {
    let mut world = World::new();
    let mut time = Time::default();
    time.advance(Duration::from_secs(10));
    world.insert_resource(time);
    let mut schedule = Schedule::new();
    schedule.run_frame(&mut world, Duration::from_secs(1));
    let time = world.resource::<Time>();
    assert_eq!((time.frame(), time.elapsed()), (2, Duration::from_secs(11)));
}

// ----- timing ---------------------------------------------------------------------

#[test]
fn timing_table_counts_runs_and_time() {
    for kind in EXECUTORS {
        let mut world = World::new();
        let mut schedule = schedule_on(kind);
        schedule.add_system("slow_system", |_q: Query<&mut W<0>>| {
            busy(Duration::from_millis(2))
        });
        schedule
            .add_system("quick", |_q: Query<&mut W<1>>| {})
            .after("slow_system");
        schedule.add_system("exclusive", |_w: &mut World| {
            busy(Duration::from_micros(500))
        });
        schedule.add_system("asleep", || {});
        schedule.set_enabled("asleep", false).unwrap();
        // Off by default: nothing counted.
        schedule.run(&mut world);
        assert!(
            schedule.timings().rows().iter().all(|r| r.runs == 0),
            "{kind:?}"
        );
        schedule.set_timing(true);
        for _ in 0..5 {
            schedule.run(&mut world);
        }
        let timings = schedule.timings();
        let names: Vec<&str> = timings.rows().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, schedule.system_names(), "rows in run order");
        let row = |n: &str| timings.rows().iter().find(|r| r.name == n).unwrap().clone();
        assert_eq!(row("slow_system").runs, 5, "{kind:?}");
        assert_eq!(row("quick").runs, 5);
        assert_eq!(row("exclusive").runs, 5);
        assert_eq!(row("asleep").runs, 0);
        assert!(
            row("slow_system").total >= Duration::from_millis(10),
            "{:?}",
            row("slow_system")
        );
        assert!(row("slow_system").mean() >= Duration::from_millis(2));
        assert!(row("exclusive").total >= Duration::from_micros(2500));
        assert_eq!(row("asleep").total, Duration::ZERO);
        let table = timings.to_string();
        for name in [
            "system",
            "runs",
            "total",
            "mean",
            "slow_system",
            "quick",
            "exclusive",
            "asleep",
        ] {
            assert!(table.contains(name), "{name} missing from\n{table}");
        }
        assert_eq!(
            table.lines().count(),
            5,
            "a header and a line per system:\n{table}"
        );
        // Switching off stops counting.
        schedule.set_timing(false);
        schedule.run(&mut world);
        assert_eq!(
            schedule
                .timings()
                .rows()
                .iter()
                .find(|r| r.name == "quick")
                .unwrap()
                .runs,
            5
        );
    }
}

// ----- many systems ----------------------------------------------------------------

#[test]
fn a_schedule_of_100_empty_systems_runs() {
    for kind in EXECUTORS {
        let mut world = World::new();
        let mut schedule = schedule_on(kind);
        let count = Arc::new(AtomicUsize::new(0));
        for i in 0..100 {
            let c = count.clone();
            schedule.add_system(format!("empty_{i}"), move || {
                c.fetch_add(1, Ordering::Relaxed);
            });
        }
        assert_eq!(schedule.system_names().len(), 100);
        for _ in 0..50 {
            schedule.run(&mut world);
        }
        assert_eq!(count.load(Ordering::Relaxed), 5000, "{kind:?}");
    }
}

#[test]
fn a_schedule_of_100_systems_without_params_or_state() {
    fn nothing() {}
    let mut world = World::new();
    let mut schedule = Schedule::new();
    for i in 0..100 {
        schedule.add_system(format!("nothing_{i}"), nothing);
    }
    schedule.build(&mut world).unwrap();
    for _ in 0..10 {
        schedule.run(&mut world);
    }
    assert_eq!(schedule.system_names()[99], "nothing_99");
}

// ----- blocks and exclusive systems ------------------------------------------------

#[test]
fn exclusive_systems_split_the_schedule() {
    for kind in EXECUTORS {
        let mut world = trace_world();
        let mut schedule = schedule_on(kind);
        schedule.add_system("a", tracer("a"));
        schedule
            .add_system("x", |w: &mut World| w.resource_mut::<Trace>().0.push("x"))
            .after("a");
        schedule.add_system("b", tracer("b")).after("x");
        schedule
            .add_system("y", |w: &mut World| w.resource_mut::<Trace>().0.push("y"))
            .after("b");
        schedule.add_system("c", tracer("c")).after("y");
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(
            world.resource::<Trace>().0,
            ["a", "x", "b", "y", "c", "a", "x", "b", "y", "c"],
            "{kind:?}"
        );
    }
}

#[test]
fn a_schedule_is_built_for_one_world() {
    let mut w1 = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("q", |_q: Query<&Pos>| {});
    schedule.run(&mut w1);
    let mut w2 = World::new();
    let msg = expect_panic(|| schedule.run(&mut w2));
    assert!(msg.contains("cannot run on world"), "{msg}");
}

#[test]
fn adding_a_system_after_runs_rebuilds() {
    let mut world = trace_world();
    let mut schedule = Schedule::new();
    schedule.add_system("first", tracer("first"));
    schedule.run(&mut world);
    schedule
        .add_system("zeroth", tracer("zeroth"))
        .before("first");
    schedule.run(&mut world);
    assert_eq!(world.resource::<Trace>().0, ["first", "zeroth", "first"]);
}

/// Issue #39, item 16: a chained system sees what the one before it
/// spawned with `Commands`, in the same run (an automatic sync point), on
/// both executors; `chain_ignore_deferred` opts out.
#[test]
fn a_chained_system_sees_the_commands_of_the_one_before() {
    #[derive(Component)]
    struct Spawned;
    fn spawner(mut commands: Commands) {
        commands.spawn(Spawned);
    }
    fn counter(q: Query<&Spawned>, mut seen: ResMut<Vec<usize>>) {
        seen.push(q.iter().count());
    }
    for kind in EXECUTORS {
        let mut world = World::new();
        world.insert_resource(Vec::<usize>::new());
        let mut schedule = schedule_on(kind);
        schedule.add_systems((spawner, counter).chain());
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(*world.resource::<Vec<usize>>(), [1, 2], "{kind:?}");
    }
    // The same through `before`/`after`, and without sync points when
    // asked: then the count lags one run behind.
    type Setup = fn(&mut Schedule);
    let setups: [(Setup, [usize; 2]); 4] = [
        (
            |s| {
                s.add_system("count", counter);
                s.add_system("spawn", spawner).before("count");
            },
            [1, 2],
        ),
        (
            |s| {
                s.add_system("count", counter).after("spawn");
                s.add_system("spawn", spawner);
            },
            [1, 2],
        ),
        (
            |s| {
                s.add_systems((spawner, counter).chain_ignore_deferred());
            },
            [0, 1],
        ),
        (
            |s| {
                s.add_system("count", counter)
                    .after_ignore_deferred("spawn");
                s.add_system("spawn", spawner);
            },
            [0, 1],
        ),
    ];
    for kind in EXECUTORS {
        for (i, (setup, expected)) in setups.iter().enumerate() {
            let mut world = World::new();
            world.insert_resource(Vec::<usize>::new());
            let mut schedule = schedule_on(kind);
            setup(&mut schedule);
            schedule.run(&mut world);
            schedule.run(&mut world);
            assert_eq!(
                *world.resource::<Vec<usize>>(),
                *expected,
                "{kind:?}, case {i}"
            );
        }
    }
}

/// Systems with `Commands` and no ordering between them: their commands
/// apply, and their spawns get ids, in the order the systems were added,
/// on both executors.
#[test]
fn unordered_systems_with_commands_apply_in_the_order_added() {
    #[derive(Component, Debug, PartialEq)]
    struct Tag(u8);
    for kind in EXECUTORS {
        let mut world = World::new();
        let mut schedule = schedule_on(kind);
        for t in 0..4u8 {
            schedule.add_systems(move |mut c: Commands| {
                c.spawn(Tag(t));
            });
        }
        schedule.run(&mut world);
        let tags = world.run_system_once(|q: Query<(Entity, &Tag)>| {
            let mut v: Vec<(Entity, u8)> = q.iter().map(|(e, t)| (e, t.0)).collect();
            v.sort();
            v.into_iter().map(|(_, t)| t).collect::<Vec<u8>>()
        });
        assert_eq!(tags, [0, 1, 2, 3], "{kind:?}");
    }
}
