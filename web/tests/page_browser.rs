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

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory removed when the test ends, however it ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One HTTP/1.1 request with `Connection: close`; returns status and body.
fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        addr.port(),
        body.len()
    )
    .unwrap();
    // Read the head, then exactly the body its Content-Length (or chunked
    // encoding) announces: a server may keep the connection open.
    let mut response = Vec::new();
    let mut buf = [0u8; 8192];
    let (split, head) = loop {
        if let Some(split) = response.windows(4).position(|w| w == b"\r\n\r\n") {
            break (
                split,
                String::from_utf8_lossy(&response[..split]).to_ascii_lowercase(),
            );
        }
        let n = stream.read(&mut buf).expect("a response");
        assert!(n > 0, "connection closed before the response head");
        response.extend_from_slice(&buf[..n]);
    };
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length = head.lines().find_map(|l| {
        l.strip_prefix("content-length:")
            .and_then(|v| v.trim().parse::<usize>().ok())
    });
    let chunked = head.contains("transfer-encoding: chunked");
    loop {
        let body = &response[split + 4..];
        let done = match length {
            Some(length) => body.len() >= length,
            None if chunked => body.ends_with(b"0\r\n\r\n"),
            None => false,
        };
        if done {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
        }
    }
    let mut data = response[split + 4..].to_vec();
    if chunked {
        data = dechunk(&data);
    }
    (status, data)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&data[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || data.len() < end + 2 + size {
            break;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[(end + 4 + size).min(data.len())..];
    }
    out
}

/// Polls `f` until it gives `Some`, for at most 90 s (the story needs
/// about 2 s of play; a busy CI machine may draw slowly).
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A WebDriver session.
struct Browser {
    driver: SocketAddr,
    session: String,
}

/// Ends the session, which makes chromedriver close Chromium (killing
/// chromedriver alone would leave the browser running). Runs also when the
/// test fails, so it must not panic.
impl Drop for Browser {
    fn drop(&mut self) {
        let Ok(mut stream) = TcpStream::connect(self.driver) else {
            return;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let request = format!(
            "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            self.session,
            self.driver.port()
        );
        if stream.write_all(request.as_bytes()).is_ok() {
            let mut answer = [0u8; 1024];
            let _ = stream.read(&mut answer);
        }
    }
}

impl Browser {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let (status, data) = http(self.driver, method, &path, body.as_ref());
        let value: Value = serde_json::from_slice(&data).expect("WebDriver JSON");
        assert_eq!(status, 200, "{method} {path}: {value}");
        value["value"].clone()
    }

    /// Runs `js` (a function body) in the page; what it returns.
    fn script(&self, js: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": js, "args": [] })),
        )
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in text.bytes().filter_map(value) {
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
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

    let port = free_port();
    let profile = TempDir(std::env::temp_dir().join(format!("mosaic-web-{}", std::process::id())));
    let driver = Killed(
        Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver"),
    );
    let driver_addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    wait_for("chromedriver", || {
        TcpStream::connect(driver_addr).ok()?;
        let (_, body) = http(driver_addr, "GET", "/status", None);
        let status: Value = serde_json::from_slice(&body).ok()?;
        status["value"]["ready"].as_bool()?.then_some(())
    });
    let capabilities = json!({ "capabilities": { "alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--disable-dev-shm-usage", "--window-size=1400,640",
                format!("--user-data-dir={}", profile.0.display()),
            ],
        },
    } } });
    let (status, body) = http(driver_addr, "POST", "/session", Some(&capabilities));
    let created: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 200, "new session: {created}");
    let browser = Browser {
        driver: driver_addr,
        session: created["value"]["sessionId"].as_str().unwrap().to_owned(),
    };

    browser.call(
        "POST",
        "/url",
        Some(json!({ "url": format!("http://{site}/") })),
    );
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
    let shot = browser.call("GET", "/screenshot", None);
    let png = base64_decode(shot.as_str().expect("base64 PNG"));
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
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
    drop(driver);
    drop(profile);
    eprintln!(
        "web page test: {:.1} s; wasm {size} bytes; {:.1} fps at frame {}; {} entities\n{timings}",
        started.elapsed().as_secs_f64(),
        s["fps"].as_f64().unwrap(),
        s["frame"],
        s["entities"],
    );
}
