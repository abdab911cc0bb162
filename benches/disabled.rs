//! What the `Disabled` marker costs the queries that skip it.
//!
//! The requirement (#20): "simple_iter and fragmented_iter unchanged
//! (≤ 2%) with `Disabled` registered and no entity disabled, and ≤ 1.3×
//! with 1% of entities disabled". Both workloads are measured side by side
//! in one run, each in the two forms users write (a `for` loop and
//! `for_each`), on three worlds:
//!
//! - `plain`: `Disabled` never used: "before";
//! - `none`: `Disabled` registered and used once (inserted on every 100th
//!   entity and removed again), so no entity is disabled now;
//! - `1pct`: every 100th entity disabled.
//!
//! simple_iter is `pos += vel` over 10,000 `(Position, Velocity)` entities;
//! fragmented_iter is `data *= 2` over 26 tables of 20 rows (`Data` plus
//! one of 26 marker components each), as in `benches/core.rs`.
//!
//! After the criterion groups, an interleaved run (every variant one batch
//! in turn, repeated) prints each variant's ratio to `plain`: interleaving
//! cancels slow drifts of a shared machine that bias groups measured one
//! after the other.
//!
//! ```text
//! cargo bench --bench disabled
//! ```
//!
//! For instruction counts, `examples/profile.rs` has the same worlds
//! (`simple-mosaic-disabled-1pct`, `frag-for-mosaic-disabled-none`, ...).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use mosaic::Disabled;
use mosaic::prelude::*;

/// simple_iter's position, advanced by its velocity.
#[derive(Component, Clone, Copy)]
struct Position(f32, f32, f32);

/// simple_iter's velocity.
#[derive(Component, Clone, Copy)]
struct Velocity(f32, f32, f32);

/// fragmented_iter's shared component: doubled for every entity.
#[derive(Component, Clone, Copy)]
struct Data(f32);

/// Declares fragmented_iter's 26 marker components and its world.
macro_rules! frag_types {
    ($($name:ident),*) => {
        $(
            /// One of fragmented_iter's 26 table-splitting components.
            #[derive(Component, Clone, Copy)]
            struct $name(#[allow(dead_code)] f32);
        )*

        /// 20 `(X(0.0), Data(1.0))` entities for each type X in A..Z.
        fn frag_world() -> World {
            let mut world = World::new();
            $(
                world.spawn_batch((0..20).map(|_| ($name(0.0), Data(1.0))));
            )*
            world
        }
    };
}

frag_types!(
    A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
);

/// The three worlds each workload is measured on.
#[derive(Clone, Copy)]
enum Marker {
    Plain,
    None,
    OnePercent,
}

impl Marker {
    const ALL: [Marker; 3] = [Marker::Plain, Marker::None, Marker::OnePercent];

    fn name(self) -> &'static str {
        match self {
            Marker::Plain => "plain",
            Marker::None => "none",
            Marker::OnePercent => "1pct",
        }
    }

    /// Applies this variant to `world`: every 100th entity disabled, or
    /// disabled and enabled again, or left alone.
    fn apply(self, world: &mut World) {
        if let Marker::Plain = self {
            return;
        }
        let entities: Vec<Entity> = world.query::<Entity>().iter(world).collect();
        let marked: Vec<Entity> = entities.iter().copied().skip(50).step_by(100).collect();
        for &e in &marked {
            world.insert_one(e, Disabled).unwrap();
            if let Marker::None = self {
                world.remove_one::<Disabled>(e).unwrap();
            }
        }
        let expected = match self {
            Marker::OnePercent => marked.len(),
            _ => 0,
        };
        assert_eq!(world.disabled_count(), expected);
    }
}

/// One workload in one form on one world, ready to run: the world and a
/// pass over it, which owns its query state (made once, as a system's).
struct Case {
    world: World,
    run: Box<dyn FnMut(&mut World)>,
}

impl Case {
    fn pass(&mut self) {
        (self.run)(&mut self.world);
    }
}

fn simple_world() -> World {
    let mut world = World::new();
    world.spawn_batch((0..10_000).map(|_| (Position(0.0, 0.0, 0.0), Velocity(1.0, 1.0, 1.0))));
    world
}

fn simple_for(world: &mut World) -> Box<dyn FnMut(&mut World)> {
    let mut q = world.query::<(&Velocity, &mut Position)>();
    Box::new(move |world| {
        for (v, p) in q.iter_mut(black_box(world)) {
            p.0 += v.0;
            p.1 += v.1;
            p.2 += v.2;
        }
    })
}

fn simple_for_each(world: &mut World) -> Box<dyn FnMut(&mut World)> {
    let mut q = world.query::<(&Velocity, &mut Position)>();
    Box::new(move |world| {
        q.iter_mut(black_box(world)).for_each(|(v, p)| {
            p.0 += v.0;
            p.1 += v.1;
            p.2 += v.2;
        })
    })
}

fn frag_for(world: &mut World) -> Box<dyn FnMut(&mut World)> {
    let mut q = world.query::<&mut Data>();
    Box::new(move |world| {
        for d in q.iter_mut(black_box(world)) {
            d.0 *= 2.0;
        }
    })
}

fn frag_for_each(world: &mut World) -> Box<dyn FnMut(&mut World)> {
    let mut q = world.query::<&mut Data>();
    Box::new(move |world| q.iter_mut(black_box(world)).for_each(|d| d.0 *= 2.0))
}

/// Makes a pass of one workload over a world, with its query state.
type Runner = fn(&mut World) -> Box<dyn FnMut(&mut World)>;

/// A workload's group, form, pass maker and world maker.
type Workload = (&'static str, &'static str, Runner, fn() -> World);

/// Every workload measured.
const WORKLOADS: [Workload; 4] = [
    ("simple_iter", "for", simple_for, simple_world),
    ("simple_iter", "for_each", simple_for_each, simple_world),
    ("fragmented_iter", "for", frag_for, frag_world),
    ("fragmented_iter", "for_each", frag_for_each, frag_world),
];

fn case(make: fn() -> World, runner: Runner, marker: Marker) -> Case {
    let mut world = make();
    marker.apply(&mut world);
    let run = runner(&mut world);
    Case { world, run }
}

fn criterion_groups(c: &mut Criterion) {
    for (group, form, runner, make) in WORKLOADS {
        let mut g = c.benchmark_group(format!("disabled_{group}_{form}"));
        for marker in Marker::ALL {
            let mut case = case(make, runner, marker);
            g.bench_function(marker.name(), |b| b.iter(|| case.pass()));
        }
        g.finish();
    }
}

/// Rounds of the interleaved run, and passes per batch.
const ROUNDS: usize = 30;
const PASSES: usize = 50;

/// The interleaved run: per workload and form, each variant's median batch
/// time and its ratio to `plain`.
fn interleaved() {
    println!(
        "\ninterleaved ({ROUNDS} rounds of {PASSES} passes; median per pass, ratio to plain):"
    );
    for (group, form, runner, make) in WORKLOADS {
        let mut cases: Vec<Case> = Marker::ALL.iter().map(|&m| case(make, runner, m)).collect();
        let mut samples = vec![Vec::with_capacity(ROUNDS); cases.len()];
        for _ in 0..ROUNDS {
            for (case, samples) in cases.iter_mut().zip(&mut samples) {
                let start = Instant::now();
                for _ in 0..PASSES {
                    case.pass();
                }
                samples.push(start.elapsed() / PASSES as u32);
            }
        }
        let medians: Vec<Duration> = samples
            .iter_mut()
            .map(|s| {
                s.sort_unstable();
                s[s.len() / 2]
            })
            .collect();
        let line: Vec<String> = Marker::ALL
            .iter()
            .zip(&medians)
            .map(|(m, d)| {
                let ratio = d.as_secs_f64() / medians[0].as_secs_f64();
                format!("{} {:?} ({ratio:.2}x)", m.name(), d)
            })
            .collect();
        println!("  {group:<16} {form:<9} {}", line.join(", "));
    }
}

/// The criterion group runner, in a private module so the `pub fn` that
/// `criterion_group!` generates needs no doc comment of its own.
mod runner {
    use super::*;

    fn config() -> Criterion {
        Criterion::default()
            .sample_size(30)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
    }

    criterion_group! {
        name = benches;
        config = config();
        targets = criterion_groups
    }
}

fn main() {
    runner::benches();
    interleaved();
    Criterion::default().configure_from_args().final_summary();
}
