//! Benchmarks of the schedule executors: `ExecutorKind::Parallel` against
//! `ExecutorKind::SingleThreaded` on the very same systems and world, side by
//! side in one criterion group per workload. The library promises that the
//! parallel executor is never more than 5% slower than the single-threaded
//! one on any schedule, and faster when the systems are heavy.
//!
//! Groups (each with a `parallel` and a `single_threaded` bench, except the
//! last):
//!
//! * `executor_tiny`: 100 systems with no parameters and empty bodies: the
//!   executor's own per-run overhead.
//! * `executor_1000`, `executor_6000`: 1,000 and 6,000 such empty systems
//!   (issue #21's sizes for the per-system overhead).
//! * `executor_small`: 10 systems, each updating its own component on 100
//!   entities (about a microsecond each).
//! * `executor_medium`: 4 systems on different components, each a few float
//!   operations on 2,000 entities (about 10-20 µs each).
//! * `executor_heavy`: 4 systems on different components, each inverting a
//!   4x4 matrix several times on 1,000 entities (about 0.5-1 ms each).
//! * `executor_mixed_conflicts`: three pairs of medium systems where both
//!   systems of a pair write the same component (so they must run one after
//!   the other, in the order added), plus two heavy independent systems.
//! * `schedule`: ecs_bench_suite's `schedule` workload: 10,000 entities each
//!   of (A,B), (A,B,C), (A,B,C,D) and (A,B,C,E); systems `ab`, `cd` and `ce`
//!   swap the values of the two components they name.
//! * `build`: not a run but the schedule's construction: adding n systems
//!   and `build`ing (n = 2,500, 5,000, 10,000), for copies of one
//!   parameterless function (`same_fn`, named `f`, `f#2`, ...), a chain of
//!   named parameterless systems each `after` the previous (`chain`), and
//!   systems that all write one resource (`one_resource`): each conflicts
//!   with every other, but the planner compares a system only with the
//!   earlier ones its waits do not already order, so this stays linear.
//! * `heavy_compute`: ecs_bench_suite's `heavy_compute` workload: 1,000
//!   entities whose matrix is inverted 100 times, then used to transform the
//!   position; `par_iter_mut` (the suite's form) against `iter_mut`
//!   (sequential), each as the only system of a schedule.
//!
//! The parallel executor is adaptive: it measures how long each block takes
//! (a light block only every 16 runs), runs a block on the worker threads
//! only when it is heavy enough and parallel runs have beaten serial ones,
//! and every 64 runs tries the mode it does not prefer. Every schedule is
//! therefore warmed up with [`WARMUP_RUNS`] runs before criterion measures
//! it, so the numbers show the executor's steady state rather than its first
//! decisions. After the warm-up the parallel and
//! single-threaded worlds are compared (they ran the same number of times and
//! must hold bit-identical values); a mismatch is printed as `MISMATCH`.
//! The single-threaded schedule's per-system mean cost is printed too
//! (`calibration:` lines), to check each workload has the intended weight.
//!
//! Run with:
//!
//! ```text
//! cargo bench --bench schedule
//! cargo bench --bench schedule -- executor_heavy     # one group only
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use mosaic::prelude::*;

/// Runs of every schedule before measuring: enough for the adaptive parallel
/// executor to take its samples (every 16 runs for a light block), try
/// parallel, and probe the other mode (every 64 runs) a few times, so it has
/// settled on its steady-state choice.
const WARMUP_RUNS: usize = 200;
/// Timed runs of the single-threaded schedule for the `calibration:` line.
const CALIBRATION_RUNS: usize = 32;

/// The two executors every `executor_*` and `schedule` group compares.
const EXECUTORS: [(&str, ExecutorKind); 2] = [
    ("parallel", ExecutorKind::Parallel),
    ("single_threaded", ExecutorKind::SingleThreaded),
];

/// executor_tiny: systems in the schedule.
const TINY_SYSTEMS: usize = 100;
/// executor_small: entities each small system updates.
const SMALL_ENTITIES: usize = 100;
/// executor_medium / executor_mixed_conflicts: entities per medium system.
const MEDIUM_ENTITIES: usize = 2_000;
/// Dependent square-root steps per entity in a medium system.
const MEDIUM_ROUNDS: usize = 4;
/// executor_heavy / executor_mixed_conflicts: entities per heavy system.
const HEAVY_SYSTEM_ENTITIES: usize = 1_000;
/// Matrix inversions per entity per run in a heavy system.
const HEAVY_SYSTEM_INVERSIONS: usize = 25;
/// schedule: entities in each of the four archetypes.
const SCHEDULE_ENTITIES: usize = 10_000;
/// heavy_compute: entities whose matrix gets inverted.
const HEAVY_COMPUTE_ENTITIES: usize = 1_000;
/// heavy_compute: matrix inversions per entity per run (the suite's 100).
const HEAVY_COMPUTE_INVERSIONS: usize = 100;

/// A 4x4 `f32` matrix, column-major like cgmath's `Matrix4` (`m[col][row]`).
type Mat4 = [[f32; 4]; 4];

/// The inverse of `m` by cofactors (2x2 sub-determinants); `m` must be
/// invertible (every matrix here is a rotation). Works in either storage
/// order, since inverting commutes with transposing.
#[inline]
fn invert(m: &Mat4) -> Mat4 {
    let [
        [a00, a01, a02, a03],
        [a10, a11, a12, a13],
        [a20, a21, a22, a23],
        [a30, a31, a32, a33],
    ] = *m;
    let s0 = a00 * a11 - a10 * a01;
    let s1 = a00 * a12 - a10 * a02;
    let s2 = a00 * a13 - a10 * a03;
    let s3 = a01 * a12 - a11 * a02;
    let s4 = a01 * a13 - a11 * a03;
    let s5 = a02 * a13 - a12 * a03;
    let c5 = a22 * a33 - a32 * a23;
    let c4 = a21 * a33 - a31 * a23;
    let c3 = a21 * a32 - a31 * a22;
    let c2 = a20 * a33 - a30 * a23;
    let c1 = a20 * a32 - a30 * a22;
    let c0 = a20 * a31 - a30 * a21;
    let det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
    let inv = 1.0 / det;
    [
        [
            (a11 * c5 - a12 * c4 + a13 * c3) * inv,
            (-a01 * c5 + a02 * c4 - a03 * c3) * inv,
            (a31 * s5 - a32 * s4 + a33 * s3) * inv,
            (-a21 * s5 + a22 * s4 - a23 * s3) * inv,
        ],
        [
            (-a10 * c5 + a12 * c2 - a13 * c1) * inv,
            (a00 * c5 - a02 * c2 + a03 * c1) * inv,
            (-a30 * s5 + a32 * s2 - a33 * s1) * inv,
            (a20 * s5 - a22 * s2 + a23 * s1) * inv,
        ],
        [
            (a10 * c4 - a11 * c2 + a13 * c0) * inv,
            (-a00 * c4 + a01 * c2 - a03 * c0) * inv,
            (a30 * s4 - a31 * s2 + a33 * s0) * inv,
            (-a20 * s4 + a21 * s2 - a23 * s0) * inv,
        ],
        [
            (-a10 * c3 + a11 * c1 - a12 * c0) * inv,
            (a00 * c3 - a01 * c1 + a02 * c0) * inv,
            (-a30 * s3 + a31 * s1 - a32 * s0) * inv,
            (a20 * s3 - a21 * s1 + a22 * s0) * inv,
        ],
    ]
}

/// The product `a * b` (for checking [`invert`]).
fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut out = [[0.0; 4]; 4];
    for (col, out_col) in out.iter_mut().enumerate() {
        for (row, value) in out_col.iter_mut().enumerate() {
            *value = (0..4).map(|k| a[k][row] * b[col][k]).sum();
        }
    }
    out
}

/// A rotation by `angle` radians about the x axis (cgmath's
/// `Matrix4::from_angle_x`; the suite starts from `from_angle_x(Rad(1.2))`).
fn rotation_x(angle: f32) -> Mat4 {
    let (s, c) = angle.sin_cos();
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, c, s, 0.0],
        [0.0, -s, c, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ]
}

/// `m` applied to the direction `v` (w = 0), as cgmath's `transform_vector`.
#[inline]
fn transform_vector(m: &Mat4, v: [f32; 3]) -> [f32; 3] {
    let mut out = [0.0; 3];
    for (row, value) in out.iter_mut().enumerate() {
        *value = m[0][row] * v[0] + m[1][row] * v[1] + m[2][row] * v[2];
    }
    out
}

/// Panics unless [`invert`] really inverts (so the heavy workloads compute
/// what they claim).
fn check_invert() {
    let m = mul(
        &rotation_x(1.2),
        &[
            [2.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.5, 0.0],
            [0.0, 0.0, 3.0, 0.0],
            [1.0, 2.0, 3.0, 1.0],
        ],
    );
    let product = mul(&m, &invert(&m));
    for (col, column) in product.iter().enumerate() {
        for (row, &value) in column.iter().enumerate() {
            let expected = if col == row { 1.0 } else { 0.0 };
            assert!(
                (value - expected).abs() < 1e-5,
                "invert is wrong: m * invert(m) = {product:?}"
            );
        }
    }
}

/// A medium system's per-entity work: a short chain of dependent float
/// operations that stays bounded.
#[inline]
fn medium_kernel(x: f32) -> f32 {
    let mut y = x;
    // `black_box` keeps the loop count opaque, so the cost scales with it
    // instead of depending on how the optimizer unrolls a constant loop.
    for _ in 0..black_box(MEDIUM_ROUNDS) {
        y = (y * y + 1.0).sqrt() * 0.5;
    }
    y
}

/// A heavy system's per-entity work: invert the matrix
/// [`HEAVY_SYSTEM_INVERSIONS`] times.
#[inline]
fn heavy_kernel(m: &mut Mat4) {
    // Opaque loop count: see `medium_kernel`.
    for _ in 0..black_box(HEAVY_SYSTEM_INVERSIONS) {
        *m = invert(m);
    }
}

/// Folds the state of a component into a digest, bit for bit.
trait Digest {
    /// Mixes every float of `self` into `hash`.
    fn mix(&self, hash: &mut u64);
}

/// Mixes one float into `hash` (FNV-1a style, on the float's bits).
fn mix_f32(hash: &mut u64, x: f32) {
    *hash = (*hash ^ u64::from(x.to_bits())).wrapping_mul(0x0000_0100_0000_01b3);
}

/// Mixes every `T` in `world` into `hash`, in query order.
fn digest_of<T: Component + Digest>(world: &mut World, hash: &mut u64) {
    let mut query = world.query::<&T>();
    for value in query.iter(world) {
        value.mix(hash);
    }
}

/// Declares single-`f32` components with a [`Digest`] impl.
macro_rules! scalar_components {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            #[derive(Component, Clone, Copy)]
            struct $name(f32);

            impl Digest for $name {
                fn mix(&self, hash: &mut u64) {
                    mix_f32(hash, self.0);
                }
            }
        )*
    };
}

/// Declares single-matrix components with a [`Digest`] impl.
macro_rules! matrix_components {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            #[derive(Component, Clone, Copy)]
            struct $name(Mat4);

            impl Digest for $name {
                fn mix(&self, hash: &mut u64) {
                    self.0.iter().flatten().for_each(|&x| mix_f32(hash, x));
                }
            }
        )*
    };
}

scalar_components!(
    /// executor_small: the component of small system 0.
    S0,
    /// executor_small: the component of small system 1.
    S1,
    /// executor_small: the component of small system 2.
    S2,
    /// executor_small: the component of small system 3.
    S3,
    /// executor_small: the component of small system 4.
    S4,
    /// executor_small: the component of small system 5.
    S5,
    /// executor_small: the component of small system 6.
    S6,
    /// executor_small: the component of small system 7.
    S7,
    /// executor_small: the component of small system 8.
    S8,
    /// executor_small: the component of small system 9.
    S9,
    /// executor_medium: the component of medium system 0.
    M0,
    /// executor_medium: the component of medium system 1.
    M1,
    /// executor_medium: the component of medium system 2.
    M2,
    /// executor_medium: the component of medium system 3.
    M3,
    /// schedule: component A (every entity).
    A,
    /// schedule: component B (every entity).
    B,
    /// schedule: component C.
    C,
    /// schedule: component D.
    D,
    /// schedule: component E.
    E,
);

matrix_components!(
    /// executor_heavy: the matrix of heavy system 0.
    H0,
    /// executor_heavy: the matrix of heavy system 1.
    H1,
    /// executor_heavy: the matrix of heavy system 2.
    H2,
    /// executor_heavy: the matrix of heavy system 3.
    H3,
    /// executor_mixed_conflicts: the matrix of heavy system 0.
    X0,
    /// executor_mixed_conflicts: the matrix of heavy system 1.
    X1,
    /// heavy_compute: the matrix inverted 100 times per entity.
    Transform,
);

/// executor_mixed_conflicts: a component both systems of one pair write.
/// `v` is updated in an order-dependent way (so running a pair out of order
/// changes the result), `w` carries the medium busy work.
#[derive(Component, Clone, Copy)]
struct Pair<const N: usize> {
    v: f32,
    w: f32,
}

impl<const N: usize> Digest for Pair<N> {
    fn mix(&self, hash: &mut u64) {
        mix_f32(hash, self.v);
        mix_f32(hash, self.w);
    }
}

/// The first system of a pair: `v = v / 2 + 1` (then busy work into `w`).
fn pair_first<const N: usize>(mut q: Query<&mut Pair<N>>) {
    q.iter_mut().for_each(|p| {
        p.v = p.v * 0.5 + 1.0;
        p.w = medium_kernel(p.w + p.v);
    });
}

/// The second system of a pair: `v = v / 2` (then busy work into `w`).
/// After the first, `v` settles at 2/3; before it, at 4/3.
fn pair_second<const N: usize>(mut q: Query<&mut Pair<N>>) {
    q.iter_mut().for_each(|p| {
        p.v *= 0.5;
        p.w = medium_kernel(p.w - p.v);
    });
}

/// heavy_compute: a 3-vector position, transformed by the matrix.
#[derive(Component, Clone, Copy)]
struct Position([f32; 3]);

/// heavy_compute: a 3-vector rotation, carried along but never read.
#[derive(Component, Clone, Copy)]
struct Rotation(#[allow(dead_code)] [f32; 3]);

/// heavy_compute: a 3-vector velocity, carried along but never read.
#[derive(Component, Clone, Copy)]
struct Velocity(#[allow(dead_code)] [f32; 3]);

impl Digest for Position {
    fn mix(&self, hash: &mut u64) {
        self.0.iter().for_each(|&x| mix_f32(hash, x));
    }
}

/// One workload of an executor comparison: how to make its world and its
/// systems, and how to fingerprint the world's state.
struct Workload {
    /// The criterion group name.
    name: &'static str,
    /// A fresh world with the workload's entities.
    world: fn() -> World,
    /// Adds the workload's systems to an empty schedule.
    systems: fn(&mut Schedule),
    /// A bit-exact fingerprint of everything the systems write.
    digest: fn(&mut World) -> u64,
    /// True for workloads whose runs take milliseconds: fewer, flat samples.
    heavy: bool,
}

/// A world and a built schedule for it.
struct Fixture {
    /// The world the schedule runs on.
    world: World,
    /// The schedule under test.
    schedule: Schedule,
}

impl Fixture {
    /// Builds `workload`'s world and schedule with `executor`, then warms it
    /// up with [`WARMUP_RUNS`] runs (see the module docs for why).
    fn warmed_up(world: fn() -> World, systems: fn(&mut Schedule), executor: ExecutorKind) -> Self {
        let mut world = world();
        let mut schedule = Schedule::new();
        systems(&mut schedule);
        schedule.set_executor(executor);
        schedule
            .build(&mut world)
            .expect("the bench schedule is valid");
        for _ in 0..WARMUP_RUNS {
            schedule.run(&mut world);
        }
        Fixture { world, schedule }
    }

    /// One schedule run: what criterion measures.
    #[inline]
    fn run(&mut self) {
        self.schedule.run(&mut self.world);
    }

    /// Prints the mean cost of each system over [`CALIBRATION_RUNS`] timed
    /// runs (timing is switched off again afterwards).
    fn print_calibration(&mut self, label: &str) {
        self.schedule.set_timing(true);
        for _ in 0..CALIBRATION_RUNS {
            self.run();
        }
        self.schedule.set_timing(false);
        let timings = self.schedule.timings();
        let total: Duration = timings.rows().iter().map(|r| r.mean()).sum();
        let mut line = format!(
            "calibration: {label}: {} systems, sum of means {total:.1?}",
            timings.rows().len()
        );
        if timings.rows().len() <= 10 {
            for row in timings.rows() {
                line += &format!(", {} {:.1?}", row.name, row.mean());
            }
        }
        eprintln!("{line}");
    }
}

/// Prints a `MISMATCH` line if the two digests differ.
fn check_same(what: &str, left: (&str, u64), right: (&str, u64)) {
    if left.1 == right.1 {
        eprintln!(
            "check: {what}: {} and {} agree (digest {:#018x})",
            left.0, right.0, left.1
        );
    } else {
        eprintln!(
            "MISMATCH: {what}: {} digest {:#018x} != {} digest {:#018x} after the same runs",
            left.0, left.1, right.0, right.1
        );
    }
}

/// Criterion settings shared by every group: short enough that the whole
/// bench finishes in about two minutes.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

/// One criterion group comparing the two executors on `workload`: both
/// fixtures are warmed up and checked against each other first, then each is
/// measured (`schedule.run` per iteration).
fn compare_executors(c: &mut Criterion, workload: &Workload) {
    let mut fixtures: Vec<(&str, Fixture)> = EXECUTORS
        .iter()
        .map(|&(label, kind)| {
            (
                label,
                Fixture::warmed_up(workload.world, workload.systems, kind),
            )
        })
        .collect();
    let digests: Vec<u64> = fixtures
        .iter_mut()
        .map(|(_, f)| (workload.digest)(&mut f.world))
        .collect();
    check_same(
        workload.name,
        (fixtures[0].0, digests[0]),
        (fixtures[1].0, digests[1]),
    );
    fixtures[1]
        .1
        .print_calibration(&format!("{} (single_threaded)", workload.name));

    let mut group = c.benchmark_group(workload.name);
    if workload.heavy {
        group.sample_size(30).sampling_mode(SamplingMode::Flat);
    }
    for (label, fixture) in &mut fixtures {
        group.bench_function(*label, |b| b.iter(|| fixture.run()));
    }
    group.finish();
}

/// executor_tiny: 100 empty systems with no parameters; nothing to do but
/// the executor's bookkeeping.
fn executor_tiny(c: &mut Criterion) {
    compare_executors(
        c,
        &Workload {
            name: "executor_tiny",
            world: World::new,
            systems: |schedule| {
                for i in 0..TINY_SYSTEMS {
                    schedule.add_system(format!("empty_{i}"), || {});
                }
            },
            digest: |_| 0,
            heavy: false,
        },
    );
}

/// executor_1000 / executor_6000: `n` trivial systems (no parameters, empty
/// bodies): the per-system overhead at the sizes issue #21 names.
///
/// Before criterion's figures, prints a `paired:` line: the two executors
/// timed in alternating batches, so that load from other programs, which
/// drifts over seconds, weighs on both alike; the ratio is of the median
/// batch times.
fn trivial_systems(c: &mut Criterion, name: &'static str, systems: fn(&mut Schedule)) {
    print_paired(name, systems);
    compare_executors(
        c,
        &Workload {
            name,
            world: World::new,
            systems,
            digest: |_| 0,
            heavy: false,
        },
    );
}

/// Times both executors on `systems` in alternating batches and prints the
/// median batch time of each and their ratio.
fn print_paired(name: &str, systems: fn(&mut Schedule)) {
    const ROUNDS: usize = 41;
    const BATCH: u32 = 50;
    let mut fixtures = EXECUTORS.map(|(_, kind)| Fixture::warmed_up(World::new, systems, kind));
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..ROUNDS {
        for (fixture, times) in fixtures.iter_mut().zip(&mut times) {
            let start = std::time::Instant::now();
            for _ in 0..BATCH {
                fixture.run();
            }
            times.push(start.elapsed() / BATCH);
        }
    }
    let [parallel, single] = times.map(|mut t| {
        t.sort();
        t[ROUNDS / 2]
    });
    eprintln!(
        "paired: {name}: parallel {parallel:.2?}, single_threaded {single:.2?} per run, \
         ratio {:.3}",
        parallel.as_secs_f64() / single.as_secs_f64()
    );
}

/// executor_1000: 1,000 trivial systems.
fn executor_1000(c: &mut Criterion) {
    trivial_systems(c, "executor_1000", |schedule| {
        for i in 0..1_000 {
            schedule.add_system(format!("empty_{i}"), || {});
        }
    });
}

/// executor_6000: 6,000 trivial systems.
fn executor_6000(c: &mut Criterion) {
    trivial_systems(c, "executor_6000", |schedule| {
        for i in 0..6_000 {
            schedule.add_system(format!("empty_{i}"), || {});
        }
    });
}

/// Adds one system per listed component that applies `$kernel` to its value.
macro_rules! add_scalar_systems {
    ($schedule:expr, $kernel:expr; $($t:ident),*) => {
        $(
            $schedule.add_system(
                concat!("update_", stringify!($t)),
                |mut q: Query<&mut $t>| q.iter_mut().for_each(|c| c.0 = $kernel(c.0)),
            );
        )*
    };
}

/// executor_small: 10 systems, each [`medium_kernel`] on its own component
/// of 100 entities (about a microsecond each).
fn executor_small(c: &mut Criterion) {
    compare_executors(
        c,
        &Workload {
            name: "executor_small",
            world: || {
                let mut world = World::new();
                world.spawn_batch((0..SMALL_ENTITIES).map(|i| {
                    let x = i as f32;
                    (
                        S0(x),
                        S1(x),
                        S2(x),
                        S3(x),
                        S4(x),
                        S5(x),
                        S6(x),
                        S7(x),
                        S8(x),
                        S9(x),
                    )
                }));
                world
            },
            systems: |schedule| {
                add_scalar_systems!(
                    schedule, medium_kernel;
                    S0, S1, S2, S3, S4, S5, S6, S7, S8, S9
                );
            },
            digest: |world| {
                let mut hash = 0;
                digest_of::<S0>(world, &mut hash);
                digest_of::<S1>(world, &mut hash);
                digest_of::<S2>(world, &mut hash);
                digest_of::<S3>(world, &mut hash);
                digest_of::<S4>(world, &mut hash);
                digest_of::<S5>(world, &mut hash);
                digest_of::<S6>(world, &mut hash);
                digest_of::<S7>(world, &mut hash);
                digest_of::<S8>(world, &mut hash);
                digest_of::<S9>(world, &mut hash);
                hash
            },
            heavy: false,
        },
    );
}

/// executor_medium: 4 systems on different components, each
/// [`medium_kernel`] on 2,000 entities (about 10-20 µs each).
fn executor_medium(c: &mut Criterion) {
    compare_executors(
        c,
        &Workload {
            name: "executor_medium",
            world: || {
                let mut world = World::new();
                world.spawn_batch((0..MEDIUM_ENTITIES).map(|i| {
                    let x = i as f32 * 0.01;
                    (M0(x), M1(x), M2(x), M3(x))
                }));
                world
            },
            systems: |schedule| {
                add_scalar_systems!(schedule, medium_kernel; M0, M1, M2, M3);
            },
            digest: |world| {
                let mut hash = 0;
                digest_of::<M0>(world, &mut hash);
                digest_of::<M1>(world, &mut hash);
                digest_of::<M2>(world, &mut hash);
                digest_of::<M3>(world, &mut hash);
                hash
            },
            heavy: false,
        },
    );
}

/// Adds one system per listed matrix component that applies
/// [`heavy_kernel`] to every matrix.
macro_rules! add_heavy_systems {
    ($schedule:expr; $($t:ident),*) => {
        $(
            $schedule.add_system(
                concat!("invert_", stringify!($t)),
                |mut q: Query<&mut $t>| q.iter_mut().for_each(|m| heavy_kernel(&mut m.0)),
            );
        )*
    };
}

/// executor_heavy: 4 systems on different components, each inverting 1,000
/// matrices [`HEAVY_SYSTEM_INVERSIONS`] times (about 0.5-1 ms each).
fn executor_heavy(c: &mut Criterion) {
    compare_executors(
        c,
        &Workload {
            name: "executor_heavy",
            world: || {
                let mut world = World::new();
                world.spawn_batch((0..HEAVY_SYSTEM_ENTITIES).map(|i| {
                    let m = rotation_x(1.2 + i as f32 * 1e-3);
                    (H0(m), H1(m), H2(m), H3(m))
                }));
                world
            },
            systems: |schedule| {
                add_heavy_systems!(schedule; H0, H1, H2, H3);
            },
            digest: |world| {
                let mut hash = 0;
                digest_of::<H0>(world, &mut hash);
                digest_of::<H1>(world, &mut hash);
                digest_of::<H2>(world, &mut hash);
                digest_of::<H3>(world, &mut hash);
                hash
            },
            heavy: true,
        },
    );
}

/// executor_mixed_conflicts: three pairs of medium systems, both of a pair
/// writing the same [`Pair`] component (so the pair must run in the order
/// added: first, then second), plus two heavy systems on their own matrices
/// that conflict with nothing.
fn executor_mixed_conflicts(c: &mut Criterion) {
    compare_executors(
        c,
        &Workload {
            name: "executor_mixed_conflicts",
            world: || {
                let mut world = World::new();
                world.spawn_batch((0..MEDIUM_ENTITIES).map(|i| {
                    let p = i as f32 * 0.01;
                    (
                        Pair::<0> { v: p, w: p },
                        Pair::<1> { v: p, w: p },
                        Pair::<2> { v: p, w: p },
                    )
                }));
                world.spawn_batch((0..HEAVY_SYSTEM_ENTITIES).map(|i| {
                    let m = rotation_x(1.2 + i as f32 * 1e-3);
                    (X0(m), X1(m))
                }));
                world
            },
            systems: |schedule| {
                schedule.add_system("pair0_first", pair_first::<0>);
                schedule.add_system("pair0_second", pair_second::<0>);
                add_heavy_systems!(schedule; X0);
                schedule.add_system("pair1_first", pair_first::<1>);
                schedule.add_system("pair1_second", pair_second::<1>);
                add_heavy_systems!(schedule; X1);
                schedule.add_system("pair2_first", pair_first::<2>);
                schedule.add_system("pair2_second", pair_second::<2>);
            },
            digest: |world| {
                let mut hash = 0;
                digest_of::<Pair<0>>(world, &mut hash);
                digest_of::<Pair<1>>(world, &mut hash);
                digest_of::<Pair<2>>(world, &mut hash);
                digest_of::<X0>(world, &mut hash);
                digest_of::<X1>(world, &mut hash);
                // Each pair must have run first-then-second: `v` settles at 2/3.
                for (n, vs) in [
                    pair_values::<0>(world),
                    pair_values::<1>(world),
                    pair_values::<2>(world),
                ]
                .into_iter()
                .enumerate()
                {
                    if let Some(v) = vs.iter().find(|v| (**v - 2.0 / 3.0).abs() > 1e-4) {
                        eprintln!(
                            "MISMATCH: executor_mixed_conflicts: pair{n} ran out of order \
                             (v = {v}, expected 2/3)"
                        );
                    }
                }
                hash
            },
            heavy: true,
        },
    );
}

/// The `v` of every `Pair<N>`.
fn pair_values<const N: usize>(world: &mut World) -> Vec<f32> {
    let mut query = world.query::<&Pair<N>>();
    query.iter(world).map(|p| p.v).collect()
}

/// schedule system `ab`: swap A and B.
fn ab(mut q: Query<(&mut A, &mut B)>) {
    q.iter_mut()
        .for_each(|(a, b)| std::mem::swap(&mut a.0, &mut b.0));
}

/// schedule system `cd`: swap C and D.
fn cd(mut q: Query<(&mut C, &mut D)>) {
    q.iter_mut()
        .for_each(|(c, d)| std::mem::swap(&mut c.0, &mut d.0));
}

/// schedule system `ce`: swap C and E.
fn ce(mut q: Query<(&mut C, &mut E)>) {
    q.iter_mut()
        .for_each(|(c, e)| std::mem::swap(&mut c.0, &mut e.0));
}

/// schedule: ecs_bench_suite's `schedule` workload. `ab` conflicts with
/// neither `cd` nor `ce`; `cd` and `ce` both write C. (The suite starts every
/// value at 0.0; distinct starting values here let the check see the swaps.)
fn schedule(c: &mut Criterion) {
    compare_executors(
        c,
        &Workload {
            name: "schedule",
            world: || {
                let mut world = World::new();
                world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(1.0), B(2.0))));
                world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(1.0), B(2.0), C(3.0))));
                world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(1.0), B(2.0), C(3.0), D(4.0))));
                world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(1.0), B(2.0), C(3.0), E(5.0))));
                world
            },
            systems: |schedule| {
                schedule.add_system("ab", ab);
                schedule.add_system("cd", cd);
                schedule.add_system("ce", ce);
            },
            digest: |world| {
                let mut hash = 0;
                digest_of::<A>(world, &mut hash);
                digest_of::<B>(world, &mut hash);
                digest_of::<C>(world, &mut hash);
                digest_of::<D>(world, &mut hash);
                digest_of::<E>(world, &mut hash);
                hash
            },
            heavy: false,
        },
    );
}

/// heavy_compute's per-entity work: invert the matrix 100 times, then move
/// the position with it.
#[inline]
fn heavy_compute_kernel(position: &mut Position, transform: &mut Transform) {
    for _ in 0..HEAVY_COMPUTE_INVERSIONS {
        transform.0 = invert(&transform.0);
    }
    position.0 = transform_vector(&transform.0, position.0);
}

/// heavy_compute's system, as in the suite: `par_iter_mut`.
fn heavy_compute_par(mut q: Query<(&mut Position, &mut Transform)>) {
    q.par_iter_mut()
        .for_each(|(position, transform)| heavy_compute_kernel(position, transform));
}

/// heavy_compute's system, sequential: `iter_mut`.
fn heavy_compute_seq(mut q: Query<(&mut Position, &mut Transform)>) {
    q.iter_mut()
        .for_each(|(position, transform)| heavy_compute_kernel(position, transform));
}

/// heavy_compute: ecs_bench_suite's workload, 1,000 entities of
/// (Transform, Position, Rotation, Velocity); one system (the schedule's
/// default parallel executor) inverting every matrix 100 times, with
/// `par_iter_mut` against `iter_mut`.
fn heavy_compute(c: &mut Criterion) {
    check_invert();
    let world = || {
        let mut world = World::new();
        world.spawn_batch((0..HEAVY_COMPUTE_ENTITIES).map(|_| {
            (
                Transform(rotation_x(1.2)),
                Position([1.0, 0.0, 0.0]),
                Rotation([1.0, 0.0, 0.0]),
                Velocity([1.0, 0.0, 0.0]),
            )
        }));
        world
    };
    let digest = |world: &mut World| {
        let mut hash = 0;
        digest_of::<Transform>(world, &mut hash);
        digest_of::<Position>(world, &mut hash);
        hash
    };
    let mut par = Fixture::warmed_up(
        world,
        |s| {
            s.add_system("heavy_compute_par", heavy_compute_par);
        },
        ExecutorKind::Parallel,
    );
    let mut seq = Fixture::warmed_up(
        world,
        |s| {
            s.add_system("heavy_compute_seq", heavy_compute_seq);
        },
        ExecutorKind::Parallel,
    );
    check_same(
        "heavy_compute",
        ("par_iter_mut", digest(&mut par.world)),
        ("iter_mut", digest(&mut seq.world)),
    );
    seq.print_calibration("heavy_compute (iter_mut)");

    let mut group = c.benchmark_group("heavy_compute");
    group.sample_size(30).sampling_mode(SamplingMode::Flat);
    group.bench_function("par_iter_mut", |b| b.iter(|| par.run()));
    group.bench_function("iter_mut", |b| b.iter(|| seq.run()));
    group.finish();
}

fn build_nothing() {}

fn build_write(mut n: ResMut<u64>) {
    *n += 1;
}

/// `build`: adding n systems and building the schedule (see the module
/// docs); each iteration starts from an empty schedule.
fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    for n in [2_500usize, 5_000, 10_000] {
        group.bench_function(format!("same_fn/{n}"), |b| {
            b.iter(|| {
                let mut world = World::new();
                let mut schedule = Schedule::new();
                for _ in 0..n {
                    schedule.add_systems(build_nothing);
                }
                schedule.build(&mut world).unwrap();
                black_box(schedule)
            })
        });
        group.bench_function(format!("chain/{n}"), |b| {
            b.iter(|| {
                let mut world = World::new();
                let mut schedule = Schedule::new();
                for i in 0..n {
                    let system = schedule.add_system(format!("s{i}"), build_nothing);
                    if i > 0 {
                        system.after(format!("s{}", i - 1));
                    }
                }
                schedule.build(&mut world).unwrap();
                black_box(schedule)
            })
        });
        group.bench_function(format!("one_resource/{n}"), |b| {
            b.iter(|| {
                let mut world = World::new();
                world.insert_resource(0u64);
                let mut schedule = Schedule::new();
                for _ in 0..n {
                    schedule.add_systems(build_write);
                }
                schedule.build(&mut world).unwrap();
                black_box(schedule)
            })
        });
    }
    group.finish();
}

/// The criterion group runner, kept in a private module so the `pub fn` that
/// `criterion_group!` generates needs no doc comment of its own.
mod runner {
    use super::*;

    criterion_group! {
        name = benches;
        config = config();
        targets = executor_tiny, executor_1000, executor_6000, executor_small, executor_medium, executor_heavy,
            executor_mixed_conflicts, schedule, build, heavy_compute
    }
}

criterion_main!(runner::benches);
