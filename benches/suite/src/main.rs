//! The suite's command line.
//!
//! ```text
//! cd benches/suite
//! cargo run --release -- report            # full run, ~5-10 minutes
//! cargo run --release -- report --quick    # under 3 minutes
//! ```
//!
//! `report` runs every workload of `src/registry.rs` for every library in
//! this one process, interleaving the samples (each round times one batch
//! per library, in a rotating order), and prints markdown tables of the
//! medians, of mosaic against the best peer, of peak RSS (one child process
//! per library) and of per-entity cost at 1e3..1e6 entities (simple_iter
//! and add_remove). The `mosaic` column is mosaic's idiomatic form (`for`
//! loops, table storage); `mosaic_for_each`, `mosaic_sparse` and
//! `mosaic_query` are its
//! tuned forms, listed as extra lines under each workload of the "mosaic
//! against the best peer" table. It writes the
//! markdown to `<repo>/docs/benchmarks.md` and a grouped bar chart to
//! `<repo>/docs/benchmarks.svg`.
//!
//! Options: `--quick`, `--out <dir>` (instead of `<repo>/docs`),
//! `--workloads a,b` (a subset, for trying things out; with it nothing is
//! written unless `--out` is given), `--no-rss`, `--no-scaling`.

mod chart;
mod env_info;
mod markdown;
mod measure;
mod rss;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use mosaic_bench_suite::registry::WORKLOADS;

/// Parsed `report` options.
pub struct Options {
    pub quick: bool,
    pub out: Option<PathBuf>,
    pub workloads: Vec<&'static str>,
    pub rss: bool,
    pub scaling: bool,
}

const USAGE: &str = "usage: cargo run --release -- report [--quick] [--out <dir>] \
[--workloads a,b,..] [--no-rss] [--no-scaling]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("report") => match parse_report(&args[1..]) {
            Ok(options) => {
                report(options);
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!("{message}\n{USAGE}");
                ExitCode::FAILURE
            }
        },
        // Hidden: the child process of the RSS table.
        Some("report-rss") => rss::child(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::FAILURE
        }
    }
}

fn parse_report(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        quick: false,
        out: None,
        workloads: WORKLOADS.to_vec(),
        rss: true,
        scaling: true,
    };
    let mut subset = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--no-rss" => options.rss = false,
            "--no-scaling" => options.scaling = false,
            "--out" => {
                let dir = args.next().ok_or("--out needs a directory")?;
                options.out = Some(PathBuf::from(dir));
            }
            "--workloads" => {
                let list = args.next().ok_or("--workloads needs a list")?;
                let mut chosen = Vec::new();
                for name in list.split(',') {
                    let workload = WORKLOADS
                        .iter()
                        .find(|w| **w == name)
                        .ok_or_else(|| format!("unknown workload {name:?}"))?;
                    chosen.push(*workload);
                }
                options.workloads = chosen;
                subset = true;
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if options.out.is_none() && !subset {
        options.out = Some(env_info::repo_root().join("docs"));
    }
    Ok(options)
}

fn report(options: Options) {
    let started = Instant::now();
    let config = measure::Config::new(options.quick);
    let env = env_info::collect();
    let load_start = env_info::loadavg();
    eprintln!(
        "report ({} mode) on {}; ~{} s of interleaved rounds per workload",
        config.mode,
        env.cpu_summary,
        config.budget.as_secs_f64()
    );

    let results = measure::run_workloads(&options.workloads, &config);
    let rss = if options.rss {
        rss::measure_all()
    } else {
        Vec::new()
    };
    let scaling = if options.scaling {
        measure::run_scaling(&results, &config)
    } else {
        Vec::new()
    };

    let elapsed = started.elapsed();
    let load_end = env_info::loadavg();
    let doc = markdown::render(&markdown::Input {
        env: &env,
        config: &config,
        results: &results,
        rss: &rss,
        scaling: &scaling,
        elapsed,
        load: (load_start, load_end),
    });
    println!("{doc}");

    if let Some(dir) = &options.out {
        std::fs::create_dir_all(dir).expect("create the output directory");
        let md = dir.join("benchmarks.md");
        let svg = dir.join("benchmarks.svg");
        std::fs::write(&md, &doc).expect("write benchmarks.md");
        chart::draw(&svg, &results, &env, &config).expect("draw benchmarks.svg");
        eprintln!("wrote {} and {}", md.display(), svg.display());
    }
    eprintln!("report took {:.1} s", elapsed.as_secs_f64());
}
