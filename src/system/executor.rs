//! Running a planned schedule: one thread, or many where access allows.
//!
//! A plan is a list of steps: blocks of non-exclusive systems, and
//! exclusive systems between them. Within a block a system waits for the
//! systems ordered before it and for every earlier system it conflicts with;
//! that order is the same on every executor, so results do not depend on
//! which one runs. After each block, its systems' commands apply in order.
//!
//! The parallel executor is adaptive. Waking worker threads costs more than
//! a block of tiny systems takes, so it measures: a block runs on worker
//! threads only when its systems take long enough
//! ([`PARALLEL_MIN_NANOS`]) and its last parallel runs beat its serial cost.
//! It re-tries parallel now and then ([`PROBE_EVERY`] runs) so a block that
//! grows heavier moves back to the threads. Costs are sampled (every
//! [`SAMPLE_EVERY`] serial runs), so a light schedule pays for almost no
//! clock reads.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::schedule::SystemSlot;
use super::{name_panic, run_named, System};
use crate::world::World;

/// A block whose systems take less than this in all runs serially.
const PARALLEL_MIN_NANOS: f64 = 40_000.0;
/// A parallel block must beat this fraction of its serial cost to stay
/// parallel.
const PARALLEL_GAIN: f64 = 0.95;
/// Serial runs measure system costs once every this many runs.
const SAMPLE_EVERY: u64 = 16;
/// A block that runs serially although heavy retries parallel this often.
const PROBE_EVERY: u64 = 64;

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
    #[default]
    Parallel,
    /// Every system on the calling thread, in the planned order.
    SingleThreaded,
}

/// Per-system measurements: the cost estimate the executor decides with,
/// and the timing table's totals.
#[derive(Debug, Default)]
pub(crate) struct SlotStats {
    cost_nanos: AtomicU64,
    runs: AtomicU64,
    total_nanos: AtomicU64,
}

impl SlotStats {
    fn record(&self, elapsed: Duration, timing: bool) {
        let nanos = elapsed.as_nanos().min(u64::MAX as u128) as u64;
        let old = self.cost_nanos.load(Ordering::Relaxed);
        let cost = if old == 0 {
            nanos
        } else {
            (old * 3 + nanos) / 4
        };
        self.cost_nanos.store(cost.max(1), Ordering::Relaxed);
        if timing {
            self.runs.fetch_add(1, Ordering::Relaxed);
            self.total_nanos.fetch_add(nanos, Ordering::Relaxed);
        }
    }

    fn cost(&self) -> Option<f64> {
        match self.cost_nanos.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n as f64),
        }
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
    /// Smoothed wall time of parallel runs, if any.
    parallel_nanos: Option<f64>,
    /// The run at which parallel was last tried.
    last_probe: u64,
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
            parallel_nanos: None,
            last_probe: 0,
        }
    }
}

fn lock(slot: &SystemSlot) -> MutexGuard<'_, Box<dyn System<Out = ()>>> {
    slot.system.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `plan` once.
pub(crate) fn run(
    slots: &[SystemSlot],
    plan: &mut Plan,
    kind: ExecutorKind,
    timing: bool,
    run: u64,
    world: &mut World,
) {
    for step in &mut plan.steps {
        match step {
            Step::Block(block) => {
                run_block(slots, block, kind, timing, run, world);
                for &i in &block.systems {
                    if slots[i].enabled {
                        let mut system = lock(&slots[i]);
                        run_named(&slots[i].name, || system.apply_deferred(world));
                    }
                }
            }
            Step::Exclusive(i) => {
                let slot = &slots[*i];
                if slot.enabled {
                    let mut system = lock(slot);
                    let start = timing.then(Instant::now);
                    run_named(&slot.name, || system.run(world));
                    if let Some(start) = start {
                        slot.stats.record(start.elapsed(), timing);
                    }
                }
            }
        }
    }
}

fn run_block(
    slots: &[SystemSlot],
    block: &mut Block,
    kind: ExecutorKind,
    timing: bool,
    run: u64,
    world: &World,
) {
    let serial_cost: Option<f64> = block
        .systems
        .iter()
        .filter(|&&i| slots[i].enabled)
        .map(|&i| slots[i].stats.cost())
        .sum();
    let heavy = serial_cost.is_some_and(|c| c >= PARALLEL_MIN_NANOS);
    let parallel = kind == ExecutorKind::Parallel
        && block.has_parallelism
        && heavy
        && match block.parallel_nanos {
            None => true,
            Some(p) => {
                p < serial_cost.unwrap_or(0.0) * PARALLEL_GAIN
                    || run.saturating_sub(block.last_probe) >= PROBE_EVERY
            }
        };
    if parallel {
        block.last_probe = run;
        let start = Instant::now();
        run_parallel(slots, block, timing, world);
        let wall = start.elapsed().as_nanos() as f64;
        block.parallel_nanos = Some(
            block
                .parallel_nanos
                .map_or(wall, |p| (p * 3.0 + wall) / 4.0),
        );
    } else {
        let measure = timing || run % SAMPLE_EVERY == 0 || serial_cost.is_none();
        run_serial(slots, block, timing, measure, world);
    }
}

fn run_serial(slots: &[SystemSlot], block: &Block, timing: bool, measure: bool, world: &World) {
    for &i in &block.systems {
        let slot = &slots[i];
        if !slot.enabled {
            continue;
        }
        let mut system = lock(slot);
        let start = measure.then(Instant::now);
        // SAFETY: one system at a time on this thread, and the caller holds
        // the world exclusively for the block; the schedule initialized every
        // system for this world when it was built, and blocks hold no
        // exclusive system.
        run_named(&slot.name, || unsafe { system.run_unsafe(world) });
        if let Some(start) = start {
            slot.stats.record(start.elapsed(), timing);
        }
    }
}

/// State shared by the tasks of one parallel block run.
struct ParallelRun<'a> {
    slots: &'a [SystemSlot],
    block: &'a Block,
    world: &'a World,
    waits: Vec<AtomicU32>,
    timing: bool,
    failed: AtomicBool,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

fn run_parallel(slots: &[SystemSlot], block: &Block, timing: bool, world: &World) {
    let run = ParallelRun {
        slots,
        block,
        world,
        waits: block.waits.iter().map(|&w| AtomicU32::new(w)).collect(),
        timing,
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
        let slot = &self.slots[self.block.systems[local]];
        if !slot.enabled || self.failed.load(Ordering::Relaxed) {
            return;
        }
        let mut system = lock(slot);
        let start = Instant::now();
        // SAFETY: a system starts only once every system it conflicts with
        // and that comes earlier in the block has finished, and later ones
        // wait for it: no two conflicting systems overlap. Blocks hold no
        // exclusive system, and the schedule initialized every system for
        // this world.
        let result = catch_unwind(AssertUnwindSafe(|| unsafe {
            system.run_unsafe(self.world)
        }));
        slot.stats.record(start.elapsed(), self.timing);
        if let Err(payload) = result {
            self.failed.store(true, Ordering::Relaxed);
            let mut first = self.panic.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert(name_panic(&slot.name, payload));
        }
    }
}
