//! Running a planned schedule: one thread, or many where access allows.
//!
//! A plan is a list of steps: blocks of non-exclusive systems, and
//! exclusive systems between them. Within a block a system waits for the
//! systems ordered before it and for every earlier system it conflicts with;
//! that order is the same on every executor, so results do not depend on
//! which one runs. After each block, its systems' commands apply in order.
//!
//! The parallel executor is adaptive. Waking worker threads costs more than
//! a block of tiny systems takes, and a busy machine may not give the
//! threads a second core, so it measures each block's wall time, run
//! serially and run in parallel, and uses whichever has been faster: a
//! block goes to the worker threads only when it takes long enough serially
//! ([`PARALLEL_MIN_NANOS`]) and its parallel runs took less than
//! [`PARALLEL_GAIN`] of its serial ones. Now and then it probes the other
//! mode with a short burst of [`PROBE_RUNS`] runs (every [`PROBE_EVERY`]
//! runs, backing off to [`PROBE_MAX`] while the choice keeps being
//! confirmed), so both figures stay current as the workload and the machine
//! change. A light block reads the clock only every [`SAMPLE_EVERY`] runs.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::config::BoxedSystem;
use super::schedule::{SetSlot, SystemSlot};
use super::{ErrorContext, ErrorHandler, SystemResult, SystemSkip, name_panic, run_named};
use crate::platform;
use crate::world::World;

/// Below this serial wall time (ns) a block never goes parallel.
const PARALLEL_MIN_NANOS: f64 = 40_000.0;
/// Parallel runs must take less than this fraction of the serial wall
/// time for parallel to be preferred. A clear margin: parallel wall times
/// have a heavy tail (a worker asleep, a preempted thread), so a marginal
/// win on average is often a loss, and the executor must never be
/// noticeably slower than running serially.
const PARALLEL_GAIN: f64 = 0.8;
/// A light block's serial wall time is measured once every this many runs.
const SAMPLE_EVERY: u64 = 16;
/// Every this many runs (at first), a heavy block tries the mode it does not
/// prefer. Each probe that confirms the preference doubles the interval, up
/// to [`PROBE_MAX`], so a clear choice costs almost nothing to keep checking;
/// a probe that wins resets it.
const PROBE_EVERY: u64 = 64;
/// The longest interval between probes.
const PROBE_MAX: u64 = 4096;
/// Runs in one probe (the first one warms up and is not counted).
const PROBE_RUNS: u32 = 4;

/// Which executor a [`Schedule`](crate::Schedule) uses.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut schedule = Schedule::new();
/// schedule.set_executor(ExecutorKind::SingleThreaded); // deterministic replay
/// assert_ne!(schedule.executor(), ExecutorKind::Parallel);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ExecutorKind {
    /// Systems whose access does not conflict run at the same time on the
    /// thread pool (rayon), when that is faster. The default.
    ///
    /// Under Miri (`cfg(miri)`) this executor plans and orders exactly as
    /// always but runs every block on the calling thread, unless the
    /// environment variable `MOSAIC_MIRI_THREADS` is set (forwarded with
    /// `-Zmiri-env-forward=MOSAIC_MIRI_THREADS`): rayon's thread pool
    /// (crossbeam-epoch) casts integers to pointers, which Miri's strict
    /// provenance refuses, so the default keeps every schedule test
    /// checkable under strict provenance. The threading tests set the
    /// variable and run under Tree Borrows instead (see `.ci/run`).
    ///
    /// Where threads cannot start (WebAssembly without the `atomics`
    /// feature, e.g. `wasm32-unknown-unknown`) it runs every block on the
    /// calling thread too, reading no clock: the single-threaded executor,
    /// chosen automatically.
    #[default]
    Parallel,
    /// Every system on the calling thread, in the planned order.
    SingleThreaded,
}

/// Whether the parallel executor may use the thread pool: wherever threads
/// can start, except under Miri without `MOSAIC_MIRI_THREADS` (see
/// [`ExecutorKind::Parallel`]).
#[inline]
pub(crate) fn pool_enabled() -> bool {
    #[cfg(miri)]
    {
        std::env::var_os("MOSAIC_MIRI_THREADS").is_some()
    }
    #[cfg(not(miri))]
    {
        platform::THREADS
    }
}

/// Per-system totals for the timing table (recorded only while timing is
/// on).
#[derive(Debug, Default)]
pub(crate) struct SlotStats {
    runs: AtomicU64,
    total_nanos: AtomicU64,
}

impl SlotStats {
    fn record(&self, elapsed: Duration) {
        let nanos = elapsed.as_nanos().min(u64::MAX as u128) as u64;
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.total_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// (runs, total time) while timing was on.
    pub(crate) fn timing(&self) -> (u64, Duration) {
        (
            self.runs.load(Ordering::Relaxed),
            Duration::from_nanos(self.total_nanos.load(Ordering::Relaxed)),
        )
    }
}

/// A planned schedule.
pub(crate) struct Plan {
    /// Every system, in run order.
    pub order: Vec<usize>,
    pub steps: Vec<Step>,
}

pub(crate) enum Step {
    Block(Block),
    Exclusive(usize),
}

/// Systems that may overlap, with the waits between them.
pub(crate) struct Block {
    /// Schedule indices, in run order.
    systems: Vec<usize>,
    /// Per system (block-local index): the systems waiting for it.
    dependents: Vec<Vec<usize>>,
    /// Per system: how many it waits for.
    waits: Vec<u32>,
    /// True if some two systems may overlap at all.
    has_parallelism: bool,
    /// Smoothed wall time of the block run serially / in parallel. The two
    /// are compared as measured, whole block against whole block, so
    /// neither side's estimate is skewed by the other's conditions.
    serial_nanos: Option<f64>,
    parallel_nanos: Option<f64>,
    /// The run at which the next probe may start.
    next_probe: u64,
    /// Runs between probes (see [`PROBE_EVERY`]).
    probe_interval: u64,
    /// The mode the last decision preferred.
    prefers_parallel: bool,
    /// A probe under way: a short burst of runs in the mode not preferred.
    probe: Option<Probe>,
}

/// A burst of [`PROBE_RUNS`] runs in one mode. Its first run is not counted
/// (threads waking, caches cold); the mean of the rest replaces that mode's
/// estimate, so one probe gives a fresh, representative figure.
#[derive(Clone, Copy)]
struct Probe {
    parallel: bool,
    runs_left: u32,
    total_nanos: f64,
    counted: u32,
}

impl Block {
    pub fn new(systems: Vec<usize>, mut dependents: Vec<Vec<usize>>) -> Self {
        for d in &mut dependents {
            d.sort_unstable();
            d.dedup();
        }
        let mut waits = vec![0u32; systems.len()];
        for d in &dependents {
            for &j in d {
                waits[j] += 1;
            }
        }
        // Some two systems may overlap unless the waits chain them all.
        let has_parallelism =
            systems.len() > 1 && (0..systems.len() - 1).any(|i| !dependents[i].contains(&(i + 1)));
        Block {
            systems,
            dependents,
            waits,
            has_parallelism,
            serial_nanos: None,
            parallel_nanos: None,
            next_probe: 0,
            probe_interval: PROBE_EVERY,
            prefers_parallel: false,
            probe: None,
        }
    }

    /// The block's systems (schedule indices), in run order.
    #[cfg(test)]
    pub fn systems(&self) -> &[usize] {
        &self.systems
    }

    /// The systems (block-local indices) waiting for system `local`.
    #[cfg(test)]
    pub fn dependents(&self, local: usize) -> &[usize] {
        &self.dependents[local]
    }

    /// True to run in parallel this time: when the block is heavy enough to
    /// be worth trying and parallel runs have measured faster than serial
    /// ones; every [`PROBE_EVERY`] runs the other mode is tried, so both
    /// measurements stay current.
    fn choose_parallel(&mut self, run: u64) -> bool {
        if let Some(probe) = self.probe {
            return probe.parallel;
        }
        let Some(serial) = self.serial_nanos else {
            return false; // measure serially first
        };
        if serial < PARALLEL_MIN_NANOS {
            return false;
        }
        let Some(parallel) = self.parallel_nanos else {
            return self.start_probe(true, run);
        };
        let preferred = parallel < serial * PARALLEL_GAIN;
        if preferred != self.prefers_parallel {
            // The last probe changed the preference: look again soon.
            self.prefers_parallel = preferred;
            self.probe_interval = PROBE_EVERY;
        }
        if run >= self.next_probe {
            self.probe_interval = (self.probe_interval * 2).min(PROBE_MAX);
            return self.start_probe(!preferred, run);
        }
        preferred
    }

    fn start_probe(&mut self, parallel: bool, run: u64) -> bool {
        self.probe = Some(Probe {
            parallel,
            runs_left: PROBE_RUNS,
            total_nanos: 0.0,
            counted: 0,
        });
        self.next_probe = run + self.probe_interval;
        parallel
    }

    /// Records one run's wall time in `parallel` or serial mode.
    fn record(&mut self, parallel: bool, elapsed: Duration) {
        let nanos = elapsed.as_nanos() as f64;
        if let Some(probe) = &mut self.probe {
            probe.runs_left -= 1;
            if probe.runs_left + 1 < PROBE_RUNS {
                probe.total_nanos += nanos;
                probe.counted += 1;
            }
            if probe.runs_left == 0 {
                let mean = probe.total_nanos / f64::from(probe.counted.max(1));
                let estimate = if parallel {
                    &mut self.parallel_nanos
                } else {
                    &mut self.serial_nanos
                };
                *estimate = Some(mean);
                self.probe = None;
            }
            return;
        }
        let estimate = if parallel {
            &mut self.parallel_nanos
        } else {
            &mut self.serial_nanos
        };
        *estimate = Some(estimate.map_or(nanos, |old| (old * 7.0 + nanos) / 8.0));
    }

    /// True if a serial run should be timed: always while the block is
    /// heavy (a clock read is nothing next to it, and the comparison needs
    /// it), otherwise every [`SAMPLE_EVERY`] runs.
    fn wants_serial_sample(&self, run: u64) -> bool {
        match self.serial_nanos {
            None => true,
            Some(serial) => serial >= PARALLEL_MIN_NANOS || run % SAMPLE_EVERY == 0,
        }
    }
}

fn lock(slot: &SystemSlot) -> MutexGuard<'_, BoxedSystem> {
    slot.system.lock().unwrap_or_else(|p| p.into_inner())
}

/// What every system run of one schedule run shares.
pub(crate) struct RunContext<'a> {
    pub slots: &'a [SystemSlot],
    pub sets: &'a [SetSlot],
    pub timing: bool,
    /// The schedule's run counter (conditions remember which run they
    /// were evaluated in).
    pub run: u64,
    pub on_error: ErrorHandler,
}

impl RunContext<'_> {
    /// True if system `slot` runs this time: it is enabled and, if it has
    /// run conditions (its own or its sets'), they all hold. One branch for
    /// a system with none.
    ///
    /// # Safety
    /// The schedule initialized the conditions for `world`, and nothing that
    /// conflicts with the system's planned access (which includes its
    /// conditions') runs at the same time.
    #[inline]
    unsafe fn should_run(&self, slot: &SystemSlot, world: &World) -> bool {
        if !slot.enabled {
            return false;
        }
        if !slot.guarded {
            return true;
        }
        // SAFETY: forwarded contract.
        unsafe { self.conditions_hold(slot, world) }
    }

    /// Evaluates every condition guarding `slot` (none is skipped, so each
    /// sees every run), sets' first.
    ///
    /// # Safety
    /// As [`RunContext::should_run`].
    #[inline(never)]
    unsafe fn conditions_hold(&self, slot: &SystemSlot, world: &World) -> bool {
        let mut all = true;
        let sets = self.sets;
        let set_conditions = slot.guard_sets.iter().flat_map(|&s| &sets[s].conditions);
        for condition in set_conditions.chain(&slot.conditions) {
            // SAFETY: forwarded contract: the planned access includes the
            // condition's.
            all &= unsafe { condition.evaluate(self.run, world) };
        }
        all
    }

    /// Hands a failed run's error to the handler, with the system's name.
    #[inline]
    fn check(&self, slot: &SystemSlot, result: SystemResult) {
        if let Err(error) = result {
            (self.on_error)(error, ErrorContext { system: &slot.name });
        }
    }

    /// Runs non-exclusive system `slot` if it should run; true if it ran.
    ///
    /// # Safety
    /// The schedule initialized the system and its conditions for `world`;
    /// it is not exclusive; nothing conflicting with its planned access runs
    /// at the same time.
    #[inline]
    unsafe fn run_system(
        &self,
        slot: &SystemSlot,
        system: &mut BoxedSystem,
        world: &World,
    ) -> bool {
        // SAFETY: forwarded contract.
        if !unsafe { self.should_run(slot, world) } {
            return false;
        }
        // SAFETY: forwarded contract.
        match unsafe { system.try_run_unsafe(world) } {
            Ok(result) => {
                self.check(slot, result);
                true
            }
            Err(skip) => {
                skipped(slot, &skip);
                false
            }
        }
    }
}

/// Reports a system a parameter declined to run.
#[cold]
fn skipped(slot: &SystemSlot, skip: &SystemSkip) {
    if skip.warns() {
        log::warn!("system `{}` skipped: {skip}", slot.name);
    } else {
        log::debug!("system `{}` skipped: {skip}", slot.name);
    }
}

/// Runs `plan` once.
pub(crate) fn run(ctx: &RunContext<'_>, plan: &mut Plan, kind: ExecutorKind, world: &mut World) {
    let slots = ctx.slots;
    for step in &mut plan.steps {
        match step {
            Step::Block(block) => {
                run_block(ctx, block, kind, world);
                for &i in &block.systems {
                    if slots[i].enabled {
                        let mut system = lock(&slots[i]);
                        run_named(&slots[i].name, || system.apply_deferred(world));
                    }
                }
            }
            Step::Exclusive(i) => {
                let slot = &slots[*i];
                // SAFETY: the caller holds the world exclusively; the
                // schedule initialized the conditions for it.
                let runs = run_named(&slot.name, || unsafe { ctx.should_run(slot, world) });
                if runs {
                    let mut system = lock(slot);
                    let start = ctx.timing.then(platform::now);
                    let result = run_named(&slot.name, || system.run(world));
                    if let Some(start) = start {
                        slot.stats.record(start.elapsed());
                    }
                    run_named(&slot.name, || ctx.check(slot, result));
                }
            }
        }
    }
}

fn run_block(ctx: &RunContext<'_>, block: &mut Block, kind: ExecutorKind, world: &World) {
    let parallel = kind == ExecutorKind::Parallel
        && block.has_parallelism
        && pool_enabled()
        && block.choose_parallel(ctx.run);
    if parallel {
        let start = platform::now();
        run_parallel(ctx, block, world);
        block.record(true, start.elapsed());
    } else if kind == ExecutorKind::Parallel && block.has_parallelism && pool_enabled() {
        // Serial samples feed only the choice of mode: no clock read where
        // the block could never go parallel.
        let measure = ctx.timing || block.probe.is_some() || block.wants_serial_sample(ctx.run);
        let start = measure.then(platform::now);
        run_serial(ctx, block, world);
        if let Some(start) = start {
            block.record(false, start.elapsed());
        }
    } else {
        run_serial(ctx, block, world);
    }
}

fn run_serial(ctx: &RunContext<'_>, block: &Block, world: &World) {
    for &i in &block.systems {
        let slot = &ctx.slots[i];
        if !slot.enabled {
            continue;
        }
        let mut system = lock(slot);
        let start = ctx.timing.then(platform::now);
        // SAFETY: one system (or condition) at a time on this thread, and
        // the caller holds the world exclusively for the block; the schedule
        // initialized every system and condition for this world when it was
        // built, and blocks hold no exclusive system.
        let ran = run_named(&slot.name, || unsafe {
            ctx.run_system(slot, &mut system, world)
        });
        if let (Some(start), true) = (start, ran) {
            slot.stats.record(start.elapsed());
        }
    }
}

/// State shared by the tasks of one parallel block run.
struct ParallelRun<'a> {
    ctx: &'a RunContext<'a>,
    block: &'a Block,
    world: &'a World,
    waits: Vec<AtomicU32>,
    failed: AtomicBool,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

fn run_parallel(ctx: &RunContext<'_>, block: &Block, world: &World) {
    let run = ParallelRun {
        ctx,
        block,
        world,
        waits: block.waits.iter().map(|&w| AtomicU32::new(w)).collect(),
        failed: AtomicBool::new(false),
        panic: Mutex::new(None),
    };
    rayon::in_place_scope(|scope| {
        for i in 0..block.systems.len() {
            if block.waits[i] == 0 {
                spawn(scope, &run, i);
            }
        }
    });
    if let Some(payload) = run.panic.into_inner().unwrap_or_else(|p| p.into_inner()) {
        std::panic::resume_unwind(payload);
    }
}

fn spawn<'s>(scope: &rayon::Scope<'s>, run: &'s ParallelRun<'s>, local: usize) {
    scope.spawn(move |scope| {
        run.run_one(local);
        for &next in &run.block.dependents[local] {
            // AcqRel: a dependent starts only after everything this system
            // wrote is visible.
            if run.waits[next].fetch_sub(1, Ordering::AcqRel) == 1 {
                spawn(scope, run, next);
            }
        }
    });
}

impl ParallelRun<'_> {
    fn run_one(&self, local: usize) {
        let slot = &self.ctx.slots[self.block.systems[local]];
        if !slot.enabled || self.failed.load(Ordering::Relaxed) {
            return;
        }
        let mut system = lock(slot);
        let start = self.ctx.timing.then(platform::now);
        // SAFETY: a system starts only once every system it conflicts with
        // (its conditions' access included) and that comes earlier in the
        // block has finished, and later ones wait for it: no two conflicting
        // systems overlap. Blocks hold no exclusive system, and the schedule
        // initialized every system and condition for this world.
        let result = catch_unwind(AssertUnwindSafe(|| unsafe {
            self.ctx.run_system(slot, &mut system, self.world)
        }));
        if let (Some(start), Ok(true)) = (start, &result) {
            slot.stats.record(start.elapsed());
        }
        if let Err(payload) = result {
            self.failed.store(true, Ordering::Relaxed);
            let mut first = self.panic.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert(name_panic(&slot.name, payload));
        }
    }
}
