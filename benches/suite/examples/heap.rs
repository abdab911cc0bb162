//! Heap traffic of one run of each (workload, library) row: allocations,
//! bytes asked for, the peak of live bytes above the run's start, and the
//! page faults a run costs on the system allocator.
//!
//! ```text
//! cd benches/suite
//! cargo run --release --example heap                      # every row
//! cargo run --release --example heap -- serialize_binary  # some workloads
//! ```
//!
//! Timings are not taken here: a counting allocator slows every
//! allocation, so it lives in this separate binary, never in the report's.
//! Each row runs in a fresh child process (`--row <workload> <library>`,
//! this binary), so no library inherits another's heap. The child runs the
//! workload once to warm up, then counts one run, then times nothing but
//! counts the minor page faults (`/proc/self/stat`) over 200 more runs.
//!
//! Why it exists: a run that frees more than glibc's trim threshold (128
//! KiB until a freed mmapped chunk raises it) gives that memory back to the
//! OS and faults it in again on the next run, which can cost more than the
//! ECS work itself (serialize_binary and simple_insert both showed it).
//! Faults per run near 0 mean the heap is reused; tens or hundreds mean it
//! is not.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use mosaic_bench_suite::registry::{self, LIBRARIES, WORKLOADS};

/// The system allocator, counting what passes through it.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static CALLS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

fn grew(size: usize) {
    let live = LIVE.fetch_add(size, Relaxed) + size;
    PEAK.fetch_max(live, Relaxed);
    CALLS.fetch_add(1, Relaxed);
    BYTES.fetch_add(size, Relaxed);
}

// SAFETY: every call forwards to `System` with the caller's arguments, so
// `System`'s guarantees hold; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_sub(layout.size(), Relaxed);
        grew(new_size);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs after the counted one, for the page-fault average.
const FAULT_RUNS: u64 = 200;

/// Minor page faults of this process so far (field 10 of
/// `/proc/self/stat`), if readable.
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split_whitespace().nth(7)?.parse().ok()
}

/// The child: one row, printed as `calls bytes peak faults_per_run`.
fn child(workload: &str, library: &str) -> ExitCode {
    let Some(row) = registry::find(workload, library) else {
        eprintln!("no row for {workload} / {library}");
        return ExitCode::FAILURE;
    };
    let mut batch = (row.setup)();
    batch(1);
    let (live, calls, bytes) = (LIVE.load(Relaxed), CALLS.load(Relaxed), BYTES.load(Relaxed));
    PEAK.store(live, Relaxed);
    batch(1);
    let counted = (
        CALLS.load(Relaxed) - calls,
        BYTES.load(Relaxed) - bytes,
        PEAK.load(Relaxed) - live,
    );
    let faults = match (minor_faults(), batch(FAULT_RUNS), minor_faults()) {
        (Some(before), _, Some(after)) => {
            format!("{:.1}", (after - before) as f64 / FAULT_RUNS as f64)
        }
        _ => "?".to_owned(),
    };
    println!("{} {} {} {faults}", counted.0, counted.1, counted.2);
    ExitCode::SUCCESS
}

/// `12345` as `12.1 KiB`-style text.
fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / (1 << 10) as f64),
        b => format!("{b} B"),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, workload, library] = args.as_slice() {
        if flag == "--row" {
            return child(workload, library);
        }
    }
    let chosen: Vec<&str> = WORKLOADS
        .iter()
        .copied()
        .filter(|w| args.is_empty() || args.iter().any(|a| a == w))
        .collect();
    if chosen.is_empty() {
        eprintln!("unknown workload; choose from {}", WORKLOADS.join(", "));
        return ExitCode::FAILURE;
    }
    let exe = std::env::current_exe().expect("path of the running binary");
    println!("| workload | library | allocations a run | bytes a run | peak live a run | page faults a run |");
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    for workload in chosen {
        for &(library, _) in &LIBRARIES {
            if registry::find(workload, library).is_none() {
                continue;
            }
            let output = Command::new(&exe)
                .args(["--row", workload, library])
                .output()
                .expect("run the --row child");
            let text = String::from_utf8_lossy(&output.stdout);
            let fields: Vec<&str> = text.split_whitespace().collect();
            match fields.as_slice() {
                [calls, bytes, peak, faults] if output.status.success() => {
                    let number = |s: &str| s.parse::<usize>().unwrap_or(0);
                    println!(
                        "| {workload} | {library} | {calls} | {} | {} | {faults} |",
                        size(number(bytes)),
                        size(number(peak)),
                    );
                }
                _ => eprintln!(
                    "{workload} / {library}: child failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                ),
            }
        }
    }
    ExitCode::SUCCESS
}
