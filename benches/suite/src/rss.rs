//! Peak resident memory of simple_insert, one fresh child process per
//! library and entity count (`report-rss <library> <entities>`, this same
//! binary), so no library inherits another's heap.
//!
//! The child reads its own high-water mark (`VmHWM` in
//! `/proc/self/status`) before and after one simple_insert run (spawn the
//! entities into a new world, drop the world) and prints both; the table
//! shows the peak and the growth over the child's starting point.

use std::process::{Command, ExitCode};

use mosaic_bench_suite::registry::{self, LIBRARIES};

/// Entity counts of the RSS table.
pub const SIZES: [usize; 2] = [10_000, 1_000_000];

/// One library's peaks, in KiB: (entities, baseline, peak) per size.
pub struct Rss {
    pub library: &'static str,
    pub points: Vec<(usize, u64, u64)>,
}

/// Runs every library's child at every size.
pub fn measure_all() -> Vec<Rss> {
    let exe = std::env::current_exe().expect("path of the running binary");
    let mut table = Vec::new();
    for &(library, _) in &LIBRARIES {
        if registry::find_scaled("simple_insert", library).is_none() {
            continue;
        }
        let mut points = Vec::new();
        for n in SIZES {
            let output = Command::new(&exe)
                .args(["report-rss", library, &n.to_string()])
                .output()
                .expect("run the report-rss child");
            let text = String::from_utf8_lossy(&output.stdout);
            let mut fields = text.split_whitespace().map(str::parse::<u64>);
            match (fields.next(), fields.next()) {
                (Some(Ok(base)), Some(Ok(peak))) if output.status.success() => {
                    points.push((n, base, peak))
                }
                _ => eprintln!(
                    "rss {library} {n}: child failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                ),
            }
        }
        eprintln!(
            "rss {library}: {}",
            points
                .iter()
                .map(|(n, base, peak)| format!("{n}: peak {peak} KiB (+{} KiB)", peak - base))
                .collect::<Vec<_>>()
                .join(", ")
        );
        table.push(Rss { library, points });
    }
    table
}

/// The child: `report-rss <library> <entities>`; prints `baseline peak` in KiB.
pub fn child(args: &[String]) -> ExitCode {
    let (Some(library), Some(Ok(n))) = (args.first(), args.get(1).map(|s| s.parse::<usize>()))
    else {
        eprintln!("usage: report-rss <library> <entities>");
        return ExitCode::FAILURE;
    };
    let Some(row) = registry::find_scaled("simple_insert", library) else {
        eprintln!("no simple_insert row for {library}");
        return ExitCode::FAILURE;
    };
    let Some(baseline) = high_water_kib() else {
        eprintln!("no VmHWM in /proc/self/status");
        return ExitCode::FAILURE;
    };
    let mut batch = (row.setup)(n);
    batch(1);
    let peak = high_water_kib().unwrap_or(0);
    println!("{baseline} {peak}");
    ExitCode::SUCCESS
}

/// `VmHWM` (peak resident set) of this process, in KiB.
fn high_water_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
