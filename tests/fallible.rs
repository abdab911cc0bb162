//! Integration tests for fallible systems: an error reaches the schedule's
//! handler with the system's name (both executors, and for an exclusive
//! system), `?` converts std errors, the other systems still run, the
//! default handler logs and carries on, and `panic_on_error` raises a panic
//! naming the system.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use mosaic::prelude::*;

/// (system, message) of every error the recording handler saw. Each test
/// uses its own handler so that tests running in parallel do not mix.
static SEEN_A: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
static SEEN_B: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn record_a(error: SystemError, context: ErrorContext) {
    SEEN_A
        .lock()
        .unwrap()
        .push((context.system.to_owned(), error.to_string()));
}

fn record_b(error: SystemError, context: ErrorContext) {
    SEEN_B
        .lock()
        .unwrap()
        .push((context.system.to_owned(), error.to_string()));
}

struct Text(String);

fn parse(text: Res<Text>, mut out: ResMut<u32>) -> Result<(), std::num::ParseIntError> {
    *out = text.0.parse()?;
    Ok(())
}

#[test]
fn a_fallible_system_s_error_names_the_system() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        SEEN_A.lock().unwrap().clear();
        let mut world = World::new();
        world.insert_resource(Text("twelve".into()));
        world.insert_resource(0u32);
        world.insert_resource(0u8);
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.set_error_handler(record_a);
        schedule.add_system("parse_score", parse);
        schedule.add_system("after", |mut n: ResMut<u8>| *n += 1);
        schedule.run(&mut world);
        let seen = SEEN_A.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "{kind:?}");
        assert_eq!(seen[0].0, "parse_score");
        assert!(seen[0].1.contains("invalid digit"), "{}", seen[0].1);
        assert_eq!(*world.resource::<u8>(), 1, "the other system still ran");
        world.resource_mut::<Text>().0 = "12".into();
        schedule.run(&mut world);
        assert_eq!(*world.resource::<u32>(), 12);
        assert_eq!(SEEN_A.lock().unwrap().len(), 1, "no new error");
    }
}

#[test]
fn an_exclusive_system_may_fail_too() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.set_error_handler(record_b);
    schedule.add_system("save", |_: &mut World| -> SystemResult {
        Err("disk full".into())
    });
    schedule.run(&mut world);
    let seen = SEEN_B.lock().unwrap().clone();
    assert_eq!(seen, [("save".to_owned(), "disk full".to_owned())]);
}

#[test]
fn the_default_handler_logs_and_carries_on() {
    let mut world = World::new();
    world.insert_resource(0u8);
    let mut schedule = Schedule::new();
    schedule.add_system("fails", || -> SystemResult { Err("oops".into()) });
    schedule.add_system("counts", |mut n: ResMut<u8>| *n += 1);
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(*world.resource::<u8>(), 2);
}

#[test]
fn panic_on_error_raises_a_panic_naming_the_system() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = World::new();
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.set_error_handler(panic_on_error);
        schedule.add_system("load_level", || -> Result<(), String> {
            Err("level 3 is missing".into())
        });
        let payload = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
        let message = payload.downcast::<String>().unwrap();
        assert!(
            message.contains("`load_level`") && message.contains("level 3 is missing"),
            "{message}"
        );
    }
}
