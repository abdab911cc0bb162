//! What the target offers: threads, and a clock.
//!
//! mosaic reads the time only for per-system timing
//! ([`Schedule::set_timing`](crate::Schedule::set_timing)) and for the
//! parallel executor's choice between running a block serially or on the
//! thread pool; nothing else asks for it. On `wasm32-unknown-unknown` std
//! has neither: `std::time::Instant::now` panics and threads cannot start.
//! There the parallel executor runs every block on the calling thread
//! (exactly as [`ExecutorKind::SingleThreaded`](crate::ExecutorKind)),
//! `par_iter` and `par_chunks` iterate serially, and the clock is the one
//! the application installs with [`set_clock`] (in a browser,
//! `performance.now()` passed in through an import).

use std::sync::OnceLock;
use std::time::Duration;

/// True where threads can start: everywhere but WebAssembly without the
/// `atomics` target feature (`wasm32-unknown-unknown`, `wasm32-wasip1`).
pub(crate) const THREADS: bool =
    !cfg!(all(target_family = "wasm", not(target_feature = "atomics")));

/// The clock installed by [`set_clock`].
static CLOCK: OnceLock<fn() -> Duration> = OnceLock::new();

/// [`set_clock`] was called a second time; the first clock stays.
///
/// # Example
/// ```standalone_crate
/// use std::time::Duration;
/// fn zero() -> Duration { Duration::ZERO }
/// let _ = mosaic::set_clock(zero);
/// let err = mosaic::set_clock(zero).unwrap_err();
/// assert_eq!(err.to_string(), "a clock is already installed; mosaic keeps the first one");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a clock is already installed; mosaic keeps the first one")]
pub struct SetClockError;

/// Installs the clock mosaic reads for per-system timing and the parallel
/// executor's measurements: `now` returns the time elapsed since any fixed
/// origin (it must not go backwards). Once per process; a second call
/// fails with [`SetClockError`] and changes nothing.
///
/// Without one, mosaic reads `std::time::Instant`, except on targets where
/// std has no clock (`wasm32-unknown-unknown`): there timing records each
/// run with a zero duration until a clock is installed (and says so once
/// in the log). A browser page passes `performance.now()` in, e.g. through
/// an imported function:
///
/// ```ignore
/// unsafe extern "C" {
///     fn now_ms() -> f64; // JS: `now_ms: () => performance.now()`
/// }
/// fn now() -> Duration {
///     Duration::from_secs_f64(unsafe { now_ms() } / 1000.0)
/// }
/// mosaic::set_clock(now).unwrap();
/// ```
///
/// # Example
/// A simulated clock makes timings exact (here: each read advances 1 ms).
/// ```standalone_crate
/// use mosaic::prelude::*;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// static READS: AtomicU64 = AtomicU64::new(0);
/// fn ticking() -> Duration {
///     Duration::from_millis(READS.fetch_add(1, Ordering::Relaxed))
/// }
/// mosaic::set_clock(ticking).unwrap();
///
/// let mut world = World::new();
/// let mut schedule = Schedule::new();
/// schedule.set_executor(ExecutorKind::SingleThreaded);
/// schedule.add_system("idle", || {});
/// schedule.set_timing(true);
/// schedule.run(&mut world);
/// assert_eq!(schedule.timings().rows()[0].total, Duration::from_millis(1));
/// ```
pub fn set_clock(now: fn() -> Duration) -> Result<(), SetClockError> {
    CLOCK.set(now).map_err(|_| SetClockError)
}

/// A point in time, read by [`now`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stamp {
    /// From the installed clock.
    Installed(Duration),
    /// From std's clock.
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    Std(std::time::Instant),
    /// No clock on this target.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    Missing,
}

/// The time now, from the installed clock or std's.
#[inline]
pub(crate) fn now() -> Stamp {
    if let Some(now) = CLOCK.get() {
        return Stamp::Installed(now());
    }
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    {
        Stamp::Std(std::time::Instant::now())
    }
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    {
        static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            log::warn!(
                "mosaic: no clock on this target; timings read zero until one is installed with `mosaic::set_clock`"
            );
        }
        Stamp::Missing
    }
}

impl Stamp {
    /// Time since this stamp (zero if the clock went backwards or there is
    /// none).
    #[inline]
    pub(crate) fn elapsed(self) -> Duration {
        match self {
            Stamp::Installed(then) => CLOCK
                .get()
                .map_or(Duration::ZERO, |now| now().saturating_sub(then)),
            #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
            Stamp::Std(then) => then.elapsed(),
            #[cfg(all(target_family = "wasm", target_os = "unknown"))]
            Stamp::Missing => Duration::ZERO,
        }
    }
}
