//! The clock mosaic reads (`mosaic::set_clock`): only for per-system timing
//! and the parallel executor's measurements, never on a run that needs
//! neither. `wasm32-unknown-unknown` has no std clock, and a read there
//! used to panic on every `Schedule::run` (web/examples/smoke.rs checks
//! that target itself; this checks the reads natively).
//!
//! One test in this file: the clock is process-wide, and installed once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mosaic::prelude::*;

static READS: AtomicU64 = AtomicU64::new(0);

/// Each read advances the clock by 1 ms.
fn counting() -> Duration {
    Duration::from_millis(READS.fetch_add(1, Ordering::Relaxed))
}

#[derive(Component)]
struct A(u32);
#[derive(Component)]
struct B(u32);

fn reads() -> u64 {
    READS.load(Ordering::Relaxed)
}

#[test]
fn the_clock_is_read_only_when_a_run_needs_it() {
    mosaic::set_clock(counting).unwrap();
    assert_eq!(mosaic::set_clock(counting), Err(mosaic::SetClockError));

    let mut world = World::new();
    world.spawn((A(0), B(0)));
    let a = |mut q: Query<&mut A>| q.iter_mut().for_each(|a| a.0 += 1);
    let b = |mut q: Query<&mut B>| q.iter_mut().for_each(|b| b.0 += 1);

    // Single-threaded, timing off: two systems that could overlap (one
    // block with parallelism), never a read.
    let mut single = Schedule::new();
    single.set_executor(ExecutorKind::SingleThreaded);
    single.add_system("a", a);
    single.add_system("b", b);
    for _ in 0..40 {
        single.run(&mut world);
    }
    assert_eq!(
        reads(),
        0,
        "a single-threaded run without timing read the clock"
    );

    // The parallel executor with nothing to overlap (one system): nothing
    // to choose, never a read.
    let mut lone = Schedule::new();
    lone.add_system("a", a);
    for _ in 0..40 {
        lone.run(&mut world);
    }
    assert_eq!(reads(), 0, "a block that cannot go parallel read the clock");

    // Timing on: two reads a system run, so each run measures exactly 1 ms.
    single.set_timing(true);
    single.run_frames(&mut world, 3, Duration::from_millis(16));
    assert_eq!(reads(), 12);
    for row in single.timings().rows() {
        assert_eq!(
            (row.runs, row.total),
            (3, Duration::from_millis(3)),
            "{}",
            row.name
        );
    }
    assert_eq!(world.query::<&A>().iter(&world).next().unwrap().0, 83);
}
