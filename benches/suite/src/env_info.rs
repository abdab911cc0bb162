//! What the report says about where and with what it ran: the machine, the
//! toolchain, the crate versions (from this suite's `Cargo.lock`, compiled
//! in) and mosaic's commit.

use std::path::PathBuf;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The mosaic repository (two levels above this crate).
pub fn repo_root() -> PathBuf {
    let suite = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = suite.join("../..");
    root.canonicalize().unwrap_or(root)
}

pub struct Env {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// e.g. `AMD EPYC, 2 CPUs (KVM)`.
    pub cpu_summary: String,
    /// `nproc` and the first lines of `lscpu` worth quoting.
    pub machine: Vec<String>,
    pub rustc: String,
    /// (crate, version) of mosaic and every peer.
    pub versions: Vec<(&'static str, String)>,
    /// `git rev-parse --short HEAD` of the repo, with a note if mosaic's
    /// sources had uncommitted changes when the report ran.
    pub mosaic_commit: String,
}

/// Crates named in the report, as spelled in `Cargo.lock`.
const CRATES: [&str; 8] = [
    "mosaic-ecs",
    "bevy_ecs",
    "hecs",
    "legion",
    "shipyard",
    "specs",
    "flecs_ecs",
    "criterion",
];

pub fn collect() -> Env {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let lscpu = run("lscpu", &[]).unwrap_or_default();
    let field = |name: &str| {
        lscpu
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let model = field("Model name").unwrap_or_else(|| "unknown CPU".into());
    let hypervisor = field("Hypervisor vendor");
    let mut machine = vec![format!("nproc: {nproc}")];
    for name in [
        "Model name",
        "CPU(s)",
        "Thread(s) per core",
        "Hypervisor vendor",
        "L2 cache",
        "L3 cache",
    ] {
        if let Some(value) = field(name) {
            machine.push(format!("{name}: {value}"));
        }
    }
    if let Some(mem) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .map(|l| l.split_whitespace().nth(1).map(String::from))
        })
        .flatten()
        .and_then(|kib| kib.parse::<f64>().ok())
    {
        machine.push(format!("Memory: {:.1} GiB", mem / (1024.0 * 1024.0)));
    }
    let cpu_summary = match hypervisor {
        Some(h) => format!("{model}, {nproc} CPUs ({h} VM)"),
        None => format!("{model}, {nproc} CPUs"),
    };

    let lock = include_str!("../Cargo.lock");
    let versions = CRATES
        .iter()
        .map(|&name| {
            (
                name,
                locked_version(lock, name).unwrap_or_else(|| "?".into()),
            )
        })
        .collect();

    let root = repo_root();
    let root = root.to_string_lossy();
    let commit = run("git", &["-C", &root, "rev-parse", "--short", "HEAD"])
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = run(
        "git",
        &[
            "-C",
            &root,
            "status",
            "--porcelain",
            "--",
            "src",
            "macros",
            "Cargo.toml",
        ],
    )
    .is_some_and(|s| !s.trim().is_empty());
    let mosaic_commit = if dirty {
        format!("{commit} (plus uncommitted changes in src/)")
    } else {
        commit
    };

    Env {
        date: today(),
        cpu_summary,
        machine,
        rustc: run("rustc", &["-V"])
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "rustc (unknown version)".into()),
        versions,
        mosaic_commit,
    }
}

fn run(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The version of `name` in a `Cargo.lock` (the first, if several).
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let needle = format!("name = \"{name}\"\n");
    let at = lock.find(&needle)? + needle.len();
    let line = lock[at..].lines().next()?;
    let version = line.strip_prefix("version = \"")?.strip_suffix('"')?;
    Some(version.to_string())
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`).
pub fn loadavg() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    (fields.len() == 3).then(|| fields.join(" "))
}

/// Today's UTC date (days-to-civil, Howard Hinnant's algorithm).
fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
