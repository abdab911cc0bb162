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
//! The rows come from `src/registry.rs` (shared with the `report` command,
//! `cargo run --release -- report`). Each row builds its workload once, on
//! first use (setup is not timed), and criterion times batches of `run()`.
//! Sizes live in `src/data.rs`; library code in `src/libs/`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use mosaic_bench_suite::registry::{rows, WORKLOADS};

fn suite(c: &mut Criterion) {
    let rows = rows();
    for workload in WORKLOADS {
        let mut group = c.benchmark_group(workload);
        for row in rows.iter().filter(|row| row.workload == workload) {
            // Built lazily, so a command-line filter skips the setup too.
            let mut batch = None;
            group.bench_function(row.library, |b| {
                let batch = batch.get_or_insert_with(row.setup);
                b.iter_custom(batch);
            });
        }
        group.finish();
    }
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
    targets = suite
}
criterion_main!(benches);
