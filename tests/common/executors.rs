//! Running one schedule test on each executor.

use mosaic::prelude::*;

/// Both executors: a test that loops over these checks that a behaviour
/// holds on either (under Miri the parallel one stays on the calling
/// thread unless `MOSAIC_MIRI_THREADS` is set; see `ExecutorKind::Parallel`).
pub const EXECUTORS: [ExecutorKind; 2] = [ExecutorKind::SingleThreaded, ExecutorKind::Parallel];

/// An empty schedule that runs on `kind`.
pub fn schedule_on(kind: ExecutorKind) -> Schedule {
    let mut schedule = Schedule::new();
    schedule.set_executor(kind);
    schedule
}
