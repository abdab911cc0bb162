//! The README's picture (`docs/showcase.png`) and its excerpt of the
//! showcase's report (the scene and the story) are what the showcase draws
//! and prints today: this runs the showcase as `cargo run --release` does
//! (the defaults: seed 7, 400 frames, 500 particles; the run is
//! deterministic, so a debug build gives the same frames) and compares.
//! When the showcase changes on purpose, refresh both with the commands in
//! the failure message.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The report's lines from `The scene` up to the timing tables, blank
/// lines left out (the part that does not depend on the machine).
fn excerpt(report: &str) -> Vec<&str> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("The scene"))
        .take_while(|l| !l.starts_with("Systems ("))
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// The README's copy: the text block that holds the scene and the story.
fn readme_excerpt(readme: &str) -> Vec<&str> {
    let block = readme
        .split("```text\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or_default())
        .find(|b| b.starts_with("The scene"))
        .expect("the README has a ```text block starting with `The scene`");
    excerpt(block)
}

#[test]
fn readme_picture_and_story_are_what_the_showcase_makes() {
    let out_dir = std::env::temp_dir().join(format!("mosaic-readme-check-{}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_mosaic-demo"))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("the showcase runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = String::from_utf8(run.stdout).expect("utf-8 report");

    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let printed = excerpt(&report);
    assert!(
        printed.iter().any(|l| l.starts_with("The story")),
        "{report}"
    );
    assert_eq!(
        readme_excerpt(&readme),
        printed,
        "README.md's showcase excerpt is stale: replace the lines of its ```text block \
         before `Systems (` with these:\n{}",
        printed.join("\n")
    );

    let drawn = std::fs::read(out_dir.join("last_frame.png")).expect("last_frame.png written");
    let committed = std::fs::read(repo().join("docs/showcase.png")).expect("docs/showcase.png");
    let same = drawn == committed;
    if same {
        let _ = std::fs::remove_dir_all(&out_dir);
    }
    assert!(
        same,
        "docs/showcase.png is not the showcase's last frame: `cp {} docs/showcase.png`",
        out_dir.join("last_frame.png").display()
    );
}
