//! End to end: the showcase's web page (web/, built by `bash web/build.sh`)
//! in headless Chromium through chromedriver's W3C WebDriver API. Serves
//! the built folder from a small static file server of its own, loads the
//! page, waits for frames, checks that the world advanced (the frame count
//! grows, the entities are there) and that the story reached the ghost
//! power-up, then saves a screenshot to `target/web.png` (the showcase
//! README's picture, `docs/web.png`, is a copy of it) and prints the wasm size, the
//! frame rate and the page's timing table.
//!
//! Ignored by a plain `cargo test`: it needs the page built for wasm32.
//! `.ci/wasm` builds it and runs this test:
//! `cargo test -p mosaic-web --test page_browser -- --ignored`
//! (the folder is `target/web-page`, or `MOSAIC_WEB_PAGE`). Needs Debian's
//! `chromium` and `chromium-driver` (`.ci/run` installs them).

#[path = "../../demo/tests/common/webdriver.rs"]
mod webdriver;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use webdriver::{Browser, CHROMEDRIVER, CHROMIUM, wait_within};

/// Polls `f` until it gives `Some`, for at most 90 s (the story needs
/// about 2 s of play; a busy CI machine may draw slowly).
fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_within(Duration::from_secs(90), what, f)
}

/// Serves the files of `root` on a free loopback port, one thread per
/// connection, until the process ends. GET only; no directory listing.
fn serve(root: PathBuf) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let root = root.clone();
            std::thread::spawn(move || answer(stream, &root));
        }
    });
    addr
}

fn answer(mut stream: TcpStream, root: &Path) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&request);
    let path = head.split(' ').nth(1).unwrap_or("/");
    let name = match path.trim_start_matches('/') {
        "" => "index.html",
        other => other,
    };
    let file = (!name.contains(".."))
        .then(|| std::fs::read(root.join(name)).ok())
        .flatten();
    let (status, body, kind) = match file {
        Some(body) => {
            let kind = match name.rsplit('.').next() {
                Some("html") => "text/html; charset=utf-8",
                Some("js") => "text/javascript",
                Some("wasm") => "application/wasm",
                _ => "application/octet-stream",
            };
            ("200 OK", body, kind)
        }
        None => ("404 Not Found", b"not found".to_vec(), "text/plain"),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(&body);
}

#[test]
#[ignore = "needs the page built for wasm32 (`bash web/build.sh`); .ci/wasm runs it"]
fn the_showcase_plays_in_a_browser_page() {
    let root = std::env::var_os("MOSAIC_WEB_PAGE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/web-page"));
    let wasm = root.join("mosaic_web.wasm");
    let size = std::fs::metadata(&wasm)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; build the page with `bash web/build.sh`",
                wasm.display()
            )
        })
        .len();
    assert!(
        Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists(),
        "needs {CHROMIUM} and {CHROMEDRIVER}: `apt-get install -y chromium chromium-driver`"
    );
    let started = Instant::now();
    let site = serve(root);

    let browser = Browser::start("web", &["--window-size=1400,640"]);

    browser.open(&format!("http://{site}/"));
    let state = || browser.script("return window.mosaic || null;");
    // Frames are drawn and the world advances.
    let first = wait_for("the first frames", || {
        let s = state();
        (s["frame"].as_u64()? >= 10).then_some(s)
    });
    assert!(
        first["entities"].as_u64().unwrap() > 500,
        "the scene and 500 particles: {first}"
    );
    wait_for("the world to advance", || {
        (state()["frame"].as_u64()? > first["frame"].as_u64()?).then_some(())
    });
    // The story reaches the ghost power-up (the scripted keys walk the
    // player to it), and the page shows it.
    let story = wait_for("the ghost power-up in the story", || {
        let story = state()["story"].as_str()?.to_owned();
        story
            .contains("picks up the ghost power-up")
            .then_some(story)
    });
    assert!(story.contains("the level begins"), "{story}");
    let shown = browser.script("return document.getElementById('story').textContent;");
    assert!(shown.as_str().unwrap().contains("ghost power-up"));
    // The scene as the ghost walks through the monsters.
    let png = browser.screenshot();
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("web.png"), &png).unwrap();
    // Five seconds of frames (performance.now() has a coarse resolution
    // here, so the timing table needs many runs) for the frame rate and
    // the timing table.
    let s = wait_for("five seconds of frames", || {
        let s = state();
        (s["frame"].as_u64()? >= 300 && s["fps"].as_f64()? > 0.0).then_some(s)
    });
    let timings = wait_for("the timing table", || {
        let t = browser.script("return document.getElementById('timings').textContent;");
        let t = t.as_str()?.to_owned();
        (t.contains("movement") && t.contains("glow")).then_some(t)
    });
    let status = browser.script("return document.getElementById('status').textContent;");
    assert!(
        status.as_str().unwrap().starts_with("frame "),
        "status: {status}"
    );

    drop(browser);
    eprintln!(
        "web page test: {:.1} s; wasm {size} bytes; {:.1} fps at frame {}; {} entities\n{timings}",
        started.elapsed().as_secs_f64(),
        s["fps"].as_f64().unwrap(),
        s["frame"],
        s["entities"],
    );
}
