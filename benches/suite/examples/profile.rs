//! Runs one (workload, library) row of the report a given number of times,
//! for a profiler: callgrind's instruction counts are stable on a shared
//! machine where times are not.
//!
//! ```text
//! cd benches/suite
//! cargo build --release --example profile
//! valgrind --tool=callgrind --toggle-collect='profile::measured' \
//!     target/release/examples/profile serialize_text mosaic 10
//! ```
//!
//! The row is set up and run once outside `measured`, so the count covers
//! only the `N` runs (divide by `N` for one run).

use std::process::ExitCode;

use mosaic_bench_suite::registry;

/// The runs the profiler counts.
#[inline(never)]
fn measured(batch: &mut dyn FnMut(u64) -> std::time::Duration, runs: u64) {
    std::hint::black_box(batch(runs));
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workload, library, rest @ ..] = args.as_slice() else {
        eprintln!("usage: profile <workload> <library> [runs, default 10]");
        return ExitCode::FAILURE;
    };
    let runs = match rest.first().map(|r| r.parse::<u64>()) {
        None => 10,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("runs: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(row) = registry::find(workload, library) else {
        eprintln!("no row for workload {workload:?} and library {library:?}");
        return ExitCode::FAILURE;
    };
    let mut batch = (row.setup)();
    batch(1);
    measured(&mut batch, runs);
    ExitCode::SUCCESS
}
