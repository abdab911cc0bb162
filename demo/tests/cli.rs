//! The command line: a short run prints the report and writes the
//! pictures; mistakes get one clear message and a non-zero exit, never a
//! panic.

use std::path::PathBuf;
use std::process::{Command, Output};

fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic-demo"))
        .args(args)
        .output()
        .expect("the demo binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh directory under the system's temporary one.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mosaic-demo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Fails cleanly: non-zero, a message on stderr, no panic.
fn assert_clean_failure(out: &Output, expected: &str) {
    let err = text(&out.stderr);
    assert!(!out.status.success(), "should fail: {err}");
    assert!(err.contains(expected), "expected `{expected}` in: {err}");
    assert!(!err.contains("panicked"), "no panic: {err}");
    assert!(!err.contains("RUST_BACKTRACE"), "no panic: {err}");
}

#[test]
fn short_run_prints_the_report() {
    let out = demo(&["--frames", "60", "--no-render", "--entities", "50"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for part in [
        "The scene",
        "6 trees",
        "50 particles",
        "7 monsters",
        "The story:",
        "picks up the ghost",
        "Systems",
        "collision",
        "frames/s",
        "median frame",
        "Archetypes at the end",
        "Position + Velocity + Collider + Light",
    ] {
        assert!(stdout.contains(part), "`{part}` in:\n{stdout}");
    }
    assert!(!stdout.contains("Pictures"), "--no-render draws nothing");
}

#[test]
fn pictures_are_written_where_it_says() {
    let dir = scratch("pictures");
    let out = demo(&[
        "--frames",
        "9",
        "--entities",
        "20",
        "--out",
        dir.to_str().expect("utf-8 temp dir"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let png = dir.join("last_frame.png");
    let gif = dir.join("run.gif");
    assert!(stdout.contains(&png.display().to_string()), "{stdout}");
    assert!(stdout.contains(&gif.display().to_string()), "{stdout}");
    let png = std::fs::read(png).expect("png written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let gif = std::fs::read(gif).expect("gif written");
    assert_eq!(&gif[..6], b"GIF89a");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_reader_that_stops_early_costs_no_pictures() {
    let dir = scratch("closed-pipe");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mosaic-demo"))
        .args(["--frames", "9", "--entities", "20", "--out"])
        .arg(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the demo binary runs");
    drop(child.stdout.take()); // like `| head -0`
    let out = child.wait_with_output().expect("it finishes");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"));
    let png = std::fs::read(dir.join("last_frame.png")).expect("png written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let gif = std::fs::read(dir.join("run.gif")).expect("gif written");
    assert_eq!(gif.last(), Some(&0x3b), "the GIF is finished (trailer)");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_options_fail_cleanly() {
    assert_clean_failure(&demo(&["--frames", "many"]), "invalid value");
    assert_clean_failure(&demo(&["--frames", "0"]), "--frames");
    assert_clean_failure(&demo(&["--entities=-3"]), "--entities");
    assert_clean_failure(&demo(&["--entities", "999999999999"]), "--entities");
    assert_clean_failure(&demo(&["--warp-speed"]), "--warp-speed");
}

#[test]
fn bad_scene_files_fail_cleanly() {
    assert_clean_failure(
        &demo(&["--scene", "/no/such/scene.ron"]),
        "error: cannot read scene file /no/such/scene.ron",
    );
    let dir = scratch("scene");
    let bad = dir.join("bad.ron");
    std::fs::write(&bad, "(prefabs: {, oops").expect("write");
    let bad = bad.to_str().expect("utf-8 temp dir");
    assert_clean_failure(
        &demo(&["--scene", bad, "--no-render"]),
        &format!("error: cannot load scene {bad}"),
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_scene_file_is_played() {
    let dir = scratch("custom-scene");
    let path = dir.join("small.ron");
    std::fs::write(
        &path,
        r#"(
    prefabs: { "Tree": (components: { "Position": (x: 0.0, y: 16.0), "Appearance": (name: "tree") }) },
    entities: [
        (id: 1, prefab: "Tree", components: { "Position": (x: 40.0, y: 16.0) }),
        (id: 2, prefab: "Tree", components: { "Position": (x: 90.0, y: 16.0) }),
        (id: 3, components: {
            "Position": (x: 20.0, y: 22.0), "Velocity": (x: 0.0, y: 0.0), "Health": (hp: 100),
            "Sprite": (color: (60, 120, 255), size: 12.0), "Player": (),
            "Collider": (radius: 6.0), "Gravity": (scale: 1.0),
        }),
    ],
)"#,
    )
    .expect("write");
    let path = path.to_str().expect("utf-8 temp dir");
    let out = demo(&[
        "--scene",
        path,
        "--frames",
        "20",
        "--no-render",
        "--entities",
        "0",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains(&format!("The scene ({path})")), "{stdout}");
    assert!(stdout.contains("2 trees"), "{stdout}");
    assert!(stdout.contains("0 monsters"), "{stdout}");
    // The three from the file, and the player's lantern (a child).
    assert!(stdout.contains("1 carried light"), "{stdout}");
    assert!(stdout.contains("= 4 entities"), "{stdout}");

    let bad = dir.join("mana.ron");
    std::fs::write(
        &bad,
        "(entities: [\n  (id: 1, components: { \"Mana\": (3) }),\n])",
    )
    .expect("write");
    let bad = bad.to_str().expect("utf-8 temp dir");
    assert_clean_failure(&demo(&["--scene", bad]), "unknown component `Mana`");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unwritable_output_fails_cleanly() {
    let dir = scratch("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").expect("write");
    let out = demo(&[
        "--frames",
        "2",
        "--out",
        file.to_str().expect("utf-8 temp dir"),
    ]);
    assert_clean_failure(&out, "error: cannot create");
    let _ = std::fs::remove_dir_all(dir);
}
