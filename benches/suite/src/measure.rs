//! Interleaved sampling: every library of a workload is set up first, then
//! each round times one batch per library (the starting library rotates
//! from round to round), so slow drifts of a shared machine (frequency,
//! neighbours, the allocator's heap) spread over all libraries alike
//! instead of landing on whichever ran last.

use std::thread;
use std::time::{Duration, Instant};

use mosaic_bench_suite::registry::{self, kind, Batch, Kind, LIBRARIES};

/// How long and how often to sample.
///
/// Batches are short (≈2 ms) and preceded by a short sleep: on a shared
/// machine a task that just woke up usually runs a few milliseconds before
/// the scheduler preempts it, so most batches run undisturbed and the
/// median of many short batches is far steadier than that of a few long
/// ones.
pub struct Config {
    pub mode: &'static str,
    /// Warm-up per library before the rounds (also sizes the batches).
    pub warmup: Duration,
    /// Wall time one batch aims at (at least one run).
    pub batch: Duration,
    /// Time the rounds of one workload aim to fill (all libraries together);
    /// the round count follows from it, within `min_rounds..=MAX_ROUNDS`.
    pub budget: Duration,
    pub min_rounds: usize,
    /// Pause before each batch, so the thread pools of the library that
    /// ran before have gone idle.
    pub gap: Duration,
    /// The scaling table's entity counts and, per count, its sampling.
    pub scale: Vec<ScaleStep>,
}

/// Upper bound on rounds (samples per cell).
const MAX_ROUNDS: usize = 2_000;

/// Sampling of one entity count of the scaling table.
pub struct ScaleStep {
    pub entities: usize,
    pub warmup: Duration,
    pub batch: Duration,
    pub budget: Duration,
    pub min_rounds: usize,
}

impl Config {
    pub fn new(quick: bool) -> Self {
        let ms = Duration::from_millis;
        let secs = Duration::from_secs;
        let step = |entities, warmup, batch, budget, min_rounds| ScaleStep {
            entities,
            warmup,
            batch,
            budget,
            min_rounds,
        };
        if quick {
            Config {
                mode: "quick",
                warmup: ms(100),
                batch: ms(2),
                budget: ms(3_500),
                min_rounds: 11,
                gap: Duration::from_micros(200),
                scale: vec![
                    step(1_000, ms(30), ms(2), secs(1), 7),
                    step(10_000, ms(30), ms(2), secs(1), 7),
                    step(100_000, ms(30), ms(2), secs(1), 7),
                    // One run per batch, five samples: indicative only.
                    step(1_000_000, Duration::ZERO, Duration::ZERO, Duration::ZERO, 5),
                ],
            }
        } else {
            Config {
                mode: "full",
                warmup: ms(300),
                batch: ms(2),
                budget: secs(25),
                min_rounds: 31,
                gap: Duration::from_micros(200),
                scale: vec![
                    step(1_000, ms(100), ms(2), secs(4), 21),
                    step(10_000, ms(100), ms(2), secs(4), 21),
                    step(100_000, ms(100), ms(2), secs(4), 21),
                    step(1_000_000, ms(100), ms(2), secs(8), 11),
                ],
            }
        }
    }
}

/// Per-iteration times of one (workload, library) cell, in nanoseconds.
#[derive(Clone)]
pub struct Stats {
    pub median: f64,
    pub q1: f64,
    pub q3: f64,
    pub samples: usize,
    pub iters_per_batch: u64,
}

impl Stats {
    fn of(mut samples: Vec<f64>, iters_per_batch: u64) -> Self {
        samples.sort_by(f64::total_cmp);
        Stats {
            median: quantile(&samples, 0.5),
            q1: quantile(&samples, 0.25),
            q3: quantile(&samples, 0.75),
            samples: samples.len(),
            iters_per_batch,
        }
    }

    /// Interquartile range relative to the median.
    pub fn spread(&self) -> f64 {
        (self.q3 - self.q1) / self.median
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// One measured cell.
pub struct Cell {
    pub workload: &'static str,
    pub library: &'static str,
    pub stats: Stats,
}

/// All cells of the main table.
pub struct Results {
    pub cells: Vec<Cell>,
    pub workloads: Vec<&'static str>,
}

impl Results {
    pub fn get(&self, workload: &str, library: &str) -> Option<&Stats> {
        self.cells
            .iter()
            .find(|c| c.workload == workload && c.library == library)
            .map(|c| &c.stats)
    }

    /// The libraries that have at least one cell, in registry order.
    pub fn libraries(&self) -> Vec<&'static str> {
        LIBRARIES
            .iter()
            .map(|&(name, _)| name)
            .filter(|name| self.cells.iter().any(|c| c.library == *name))
            .collect()
    }

    /// The fastest library of `workload` among those `filter` accepts.
    pub fn fastest(&self, workload: &str, filter: impl Fn(Kind) -> bool) -> Option<&Cell> {
        self.cells
            .iter()
            .filter(|c| c.workload == workload && filter(kind(c.library)))
            .min_by(|a, b| a.stats.median.total_cmp(&b.stats.median))
    }

    /// The row leader: the fastest ECS (mosaic or peer; not the plain floor).
    pub fn leader(&self, workload: &str) -> Option<&Cell> {
        self.fastest(workload, |k| k != Kind::Baseline)
    }

    /// The fastest peer (neither mosaic nor the plain floor).
    pub fn best_peer(&self, workload: &str) -> Option<&Cell> {
        self.fastest(workload, |k| k == Kind::Peer)
    }
}

/// How to sample one workload's libraries.
struct Plan {
    warmup: Duration,
    batch: Duration,
    budget: Duration,
    min_rounds: usize,
    gap: Duration,
}

/// Times `batches` interleaved and returns one [`Stats`] per batch, in order.
fn sample(batches: &mut [(&'static str, Batch)], plan: &Plan) -> Vec<Stats> {
    // Warm up each library and size its batch from the last warm-up batch.
    let sized: Vec<(u64, f64)> = batches
        .iter_mut()
        .map(|(_, batch)| {
            let mut iters = 1u64;
            let mut spent = Duration::ZERO;
            loop {
                let t = batch(iters);
                spent += t;
                let per_iter = (t.as_secs_f64() / iters as f64).max(1e-12);
                if spent >= plan.warmup {
                    let n = (plan.batch.as_secs_f64() / per_iter).round();
                    break ((n as u64).max(1), per_iter);
                }
                let left = (plan.warmup - spent).as_secs_f64() / per_iter;
                iters = (iters * 2).min(left.ceil() as u64).max(1);
            }
        })
        .collect();
    let round_secs: f64 = sized
        .iter()
        .map(|&(iters, per_iter)| iters as f64 * per_iter + plan.gap.as_secs_f64())
        .sum();
    let rounds = ((plan.budget.as_secs_f64() / round_secs) as usize)
        .clamp(plan.min_rounds, MAX_ROUNDS.max(plan.min_rounds));

    let n = batches.len();
    let mut samples = vec![Vec::with_capacity(rounds); n];
    for round in 0..rounds {
        for k in 0..n {
            let i = (round + k) % n;
            let iters = sized[i].0;
            thread::sleep(plan.gap);
            let t = (batches[i].1)(iters);
            samples[i].push(t.as_secs_f64() * 1e9 / iters as f64);
        }
    }
    samples
        .into_iter()
        .zip(sized)
        .map(|(s, (iters, _))| Stats::of(s, iters))
        .collect()
}

/// The main table: every registered library for each of `workloads`.
pub fn run_workloads(workloads: &[&'static str], config: &Config) -> Results {
    let rows = registry::rows();
    let mut cells = Vec::new();
    for &workload in workloads {
        let started = Instant::now();
        let mut batches: Vec<(&'static str, Batch)> = rows
            .iter()
            .filter(|row| row.workload == workload)
            .map(|row| (row.library, (row.setup)()))
            .collect();
        let stats = sample(
            &mut batches,
            &Plan {
                warmup: config.warmup,
                batch: config.batch,
                budget: config.budget,
                min_rounds: config.min_rounds,
                gap: config.gap,
            },
        );
        drop(batches);
        let line: Vec<String> = rows
            .iter()
            .filter(|row| row.workload == workload)
            .zip(&stats)
            .map(|(row, s)| format!("{} {}", row.library, fmt_time(s.median)))
            .collect();
        eprintln!(
            "{workload} ({:.1} s, {} rounds): {}",
            started.elapsed().as_secs_f64(),
            stats.first().map_or(0, |s| s.samples),
            line.join(", ")
        );
        for (row, stats) in rows
            .iter()
            .filter(|row| row.workload == workload)
            .zip(stats)
        {
            cells.push(Cell {
                workload,
                library: row.library,
                stats,
            });
        }
    }
    Results {
        cells,
        workloads: workloads.to_vec(),
    }
}

/// One line of the scaling table: a workload and library at every size.
pub struct ScaleLine {
    pub workload: &'static str,
    pub library: &'static str,
    /// (entities, ns per entity, samples), one per configured size.
    pub points: Vec<(usize, f64, usize)>,
}

/// The libraries each scaling workload always includes: mosaic's headline
/// row and its tuned variant, the peers that lead it in the ecs_bench_suite
/// runs, plus the plain floor. The 10k leader among the peers joins them if
/// it is not one of these.
const SCALING: [(&str, &[&str]); 2] = [
    (
        "simple_iter",
        &["mosaic", "mosaic_for_each", "legion", "flecs", "plain_vec"],
    ),
    (
        "add_remove",
        &["mosaic", "mosaic_sparse", "shipyard", "specs"],
    ),
];

/// The scaling table: ns per entity at each configured size.
pub fn run_scaling(results: &Results, config: &Config) -> Vec<ScaleLine> {
    let mut lines = Vec::new();
    for (workload, libraries) in SCALING {
        let mut libraries: Vec<&str> = libraries.to_vec();
        if let Some(best) = results.best_peer(workload) {
            if !libraries.contains(&best.library) {
                libraries.insert(1, best.library);
            }
        }
        let rows: Vec<_> = libraries
            .iter()
            .filter_map(|lib| registry::find_scaled(workload, lib))
            .collect();
        let mut points = vec![Vec::new(); rows.len()];
        for step in &config.scale {
            let started = Instant::now();
            let mut batches: Vec<(&'static str, Batch)> = rows
                .iter()
                .map(|row| (row.library, (row.setup)(step.entities)))
                .collect();
            let stats = sample(
                &mut batches,
                &Plan {
                    warmup: step.warmup,
                    batch: step.batch,
                    budget: step.budget,
                    min_rounds: step.min_rounds,
                    gap: config.gap,
                },
            );
            drop(batches);
            for (p, s) in points.iter_mut().zip(&stats) {
                p.push((step.entities, s.median / step.entities as f64, s.samples));
            }
            eprintln!(
                "scaling {workload} {} ({:.1} s, {} rounds): {}",
                step.entities,
                started.elapsed().as_secs_f64(),
                stats.first().map_or(0, |s| s.samples),
                rows.iter()
                    .zip(&stats)
                    .map(|(r, s)| format!(
                        "{} {:.2} ns/entity",
                        r.library,
                        s.median / step.entities as f64
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for (row, points) in rows.iter().zip(points) {
            lines.push(ScaleLine {
                workload,
                library: row.library,
                points,
            });
        }
    }
    lines
}

/// `1.23 µs`-style, three significant digits.
pub fn fmt_time(ns: f64) -> String {
    // Thresholds just under the next unit, so 999.7 µs prints as 1.00 ms.
    let (value, unit) = if ns < 999.5 {
        (ns, "ns")
    } else if ns < 999.5e3 {
        (ns / 1e3, "µs")
    } else if ns < 999.5e6 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if value < 9.995 {
        2
    } else if value < 99.95 {
        1
    } else {
        0
    };
    format!("{value:.digits$} {unit}")
}
