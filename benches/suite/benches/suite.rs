//! The ecs_bench_suite workloads, one criterion group per workload and one
//! bench per library, so peers print side by side:
//!
//! ```text
//! cd benches/suite
//! cargo bench --bench suite                    # everything
//! cargo bench --bench suite -- simple_iter     # one workload
//! cargo bench --bench suite -- /mosaic         # one library
//! cargo bench --bench suite --no-default-features   # peers only
//! ```
//!
//! Each row builds its workload struct once (setup is not timed) and times
//! `run()`. Sizes live in `src/data.rs`; library code in `src/libs/`.
//! To add a row: give the library a struct for the workload and add one
//! `row!` line below.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use criterion::measurement::WallTime;
use mosaic_bench_suite::libs;

/// One bench: set the workload up once, then time `run()`.
macro_rules! row {
    ($group:expr, $name:literal, $workload:path) => {
        $group.bench_function($name, |b| {
            let mut bench = <$workload>::new();
            b.iter(|| bench.run());
        });
    };
}

fn simple_insert(c: &mut Criterion) {
    let mut g: BenchmarkGroup<WallTime> = c.benchmark_group("simple_insert");
    #[cfg(feature = "mosaic")]
    row!(g, "mosaic", libs::mosaic::SimpleInsert);
    row!(g, "bevy", libs::bevy::SimpleInsert);
    row!(g, "hecs", libs::hecs::SimpleInsert);
    row!(g, "legion", libs::legion::SimpleInsert);
    row!(g, "shipyard", libs::shipyard::SimpleInsert);
    row!(g, "specs", libs::specs::SimpleInsert);
    row!(g, "flecs", libs::flecs::SimpleInsert);
    row!(g, "plain_vec", libs::plain::SimpleInsert);
    g.finish();
}

fn simple_iter(c: &mut Criterion) {
    let mut g = c.benchmark_group("simple_iter");
    #[cfg(feature = "mosaic")]
    row!(g, "mosaic", libs::mosaic::SimpleIter);
    row!(g, "bevy", libs::bevy::SimpleIter);
    row!(g, "hecs", libs::hecs::SimpleIter);
    row!(g, "legion", libs::legion::SimpleIter);
    row!(g, "shipyard", libs::shipyard::SimpleIter);
    row!(g, "specs", libs::specs::SimpleIter);
    row!(g, "flecs", libs::flecs::SimpleIter);
    row!(g, "plain_vec", libs::plain::SimpleIter);
    g.finish();
}

fn fragmented_iter(c: &mut Criterion) {
    let mut g = c.benchmark_group("fragmented_iter");
    #[cfg(feature = "mosaic")]
    row!(g, "mosaic", libs::mosaic::FragIter);
    row!(g, "bevy", libs::bevy::FragIter);
    row!(g, "hecs", libs::hecs::FragIter);
    row!(g, "legion", libs::legion::FragIter);
    row!(g, "shipyard", libs::shipyard::FragIter);
    row!(g, "specs", libs::specs::FragIter);
    row!(g, "flecs", libs::flecs::FragIter);
    row!(g, "plain_vec", libs::plain::FragIter);
    g.finish();
}

fn heavy_compute(c: &mut Criterion) {
    let mut g = c.benchmark_group("heavy_compute");
    row!(g, "mosaic", libs::mosaic::HeavyCompute);
    row!(g, "bevy", libs::bevy::HeavyCompute);
    row!(g, "hecs", libs::hecs::HeavyCompute);
    row!(g, "legion", libs::legion::HeavyCompute);
    row!(g, "shipyard", libs::shipyard::HeavyCompute);
    row!(g, "specs", libs::specs::HeavyCompute);
    row!(g, "flecs", libs::flecs::HeavyCompute);
    g.finish();
}

fn schedule(c: &mut Criterion) {
    let mut g = c.benchmark_group("schedule");
    row!(g, "mosaic", libs::mosaic::Schedule);
    row!(g, "bevy", libs::bevy::Schedule);
    row!(g, "legion", libs::legion::Schedule);
    row!(g, "shipyard", libs::shipyard::Schedule);
    row!(g, "specs", libs::specs::Schedule);
    row!(g, "flecs", libs::flecs::Schedule);
    g.finish();
}

fn add_remove(c: &mut Criterion) {
    let mut g = c.benchmark_group("add_remove");
    #[cfg(feature = "mosaic")]
    row!(g, "mosaic", libs::mosaic::AddRemove);
    #[cfg(feature = "mosaic")]
    row!(g, "mosaic_table", libs::mosaic::AddRemoveTable);
    row!(g, "bevy", libs::bevy::AddRemove);
    row!(g, "hecs", libs::hecs::AddRemove);
    row!(g, "legion", libs::legion::AddRemove);
    row!(g, "shipyard", libs::shipyard::AddRemove);
    row!(g, "specs", libs::specs::AddRemove);
    row!(g, "flecs", libs::flecs::AddRemove);
    g.finish();
}

fn serialize_text(c: &mut Criterion) {
    let mut g = c.benchmark_group("serialize_text");
    row!(g, "hecs", libs::hecs::SerializeText);
    row!(g, "legion", libs::legion::SerializeText);
    row!(g, "specs", libs::specs::SerializeText);
    g.finish();
}

fn serialize_binary(c: &mut Criterion) {
    let mut g = c.benchmark_group("serialize_binary");
    row!(g, "hecs", libs::hecs::SerializeBinary);
    row!(g, "legion", libs::legion::SerializeBinary);
    row!(g, "specs", libs::specs::SerializeBinary);
    g.finish();
}

/// Modest defaults (the command line's `--warm-up-time` / `--measurement-time`
/// override them).
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
        .configure_from_args()
}

criterion_group! {
    name = benches;
    config = config();
    targets = simple_insert, simple_iter, fragmented_iter, heavy_compute, schedule,
        add_remove, serialize_text, serialize_binary
}
criterion_main!(benches);
