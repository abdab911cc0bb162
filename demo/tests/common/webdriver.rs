//! What the browser tests share: headless Chromium driven through
//! chromedriver's W3C WebDriver API over plain HTTP/1.1, the processes and
//! folders they start cleaned up however a test ends.
//!
//! Included by `demo/tests/inspector_browser.rs`,
//! `demo/tests/inspector_cross_site.rs` (`mod common;`) and
//! `web/tests/page_browser.rs` (`#[path = …] mod webdriver;`); each uses
//! part of it.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs
//! them). [`browser_or_skip`] makes a test pass with a note without them,
//! except under CI (`CI` set), where it fails.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The W3C name of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// True if Chromium and chromedriver are installed. Without them: under
/// CI (`CI` set) a panic, since CI must run every browser test; elsewhere
/// a note on stderr and `false`, so the caller returns (the test passes).
pub fn browser_or_skip(test: &str) -> bool {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: CI must install chromium and chromium-driver (.ci/run does)"
    );
    eprintln!(
        "SKIPPED {test}: {CHROMIUM} or {CHROMEDRIVER} is missing; \
         `apt-get install -y chromium chromium-driver` to run it"
    );
    false
}

/// A child process killed when the test ends, however it ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory removed when the test ends, however it ends.
pub struct TempDir(pub PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One HTTP/1.1 request with `Connection: close`, a JSON body type and the
/// inspector's same-origin proof header (which chromedriver ignores);
/// returns status and body.
///
/// Reads exactly the body that `Content-Length` (or the chunked encoding)
/// announces rather than waiting for the server to close: chromedriver
/// keeps connections open, and reading to the end would wait for the
/// read timeout (30 s) on every call.
pub fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Type: application/json\r\nX-Mosaic-Inspector: 1\r\nContent-Length: {}\r\n\r\n{body}",
        addr.port(),
        body.len()
    )
    .unwrap();
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

/// Polls `f` every 50 ms until it gives `Some`, for at most `limit`.
pub fn wait_within<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// [`wait_within`] 15 s.
pub fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_within(Duration::from_secs(15), what, f)
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn base64_decode(text: &str) -> Vec<u8> {
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

/// A headless Chromium session, with the chromedriver and the profile
/// folder it runs on. Dropping it ends the session (which makes
/// chromedriver close Chromium; killing chromedriver alone would leave the
/// browser running), then chromedriver, then removes the profile.
pub struct Browser {
    driver: SocketAddr,
    session: String,
    _process: Killed,
    _profile: TempDir,
}

impl Drop for Browser {
    /// Runs also when the test fails, so it must not panic.
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
    /// Starts chromedriver on a free port and a headless Chromium with a
    /// fresh profile (named after `name` and the process id), passing it
    /// `args` besides the usual headless ones (a window size, say).
    pub fn start(name: &str, args: &[&str]) -> Browser {
        let port = free_port();
        let profile =
            TempDir(std::env::temp_dir().join(format!("mosaic-{name}-{}", std::process::id())));
        let process = Killed(
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start chromedriver"),
        );
        let driver: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        wait_for("chromedriver", || {
            TcpStream::connect(driver).ok()?;
            let (_, body) = http(driver, "GET", "/status", None);
            let status: Value = serde_json::from_slice(&body).ok()?;
            status["value"]["ready"].as_bool()?.then_some(())
        });
        let mut chrome_args: Vec<String> = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ]
        .iter()
        .chain(args)
        .map(|a| a.to_string())
        .collect();
        chrome_args.push(format!("--user-data-dir={}", profile.0.display()));
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": chrome_args },
        } } });
        let (status, body) = http(driver, "POST", "/session", Some(&capabilities));
        let created: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 200, "new session: {created}");
        Browser {
            driver,
            session: created["value"]["sessionId"].as_str().unwrap().to_owned(),
            _process: process,
            _profile: profile,
        }
    }

    /// A WebDriver command of this session; its `value`. Panics unless
    /// the answer is 200.
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let (status, data) = http(self.driver, method, &path, body.as_ref());
        let value: Value = serde_json::from_slice(&data).expect("WebDriver JSON");
        assert_eq!(status, 200, "{method} {path}: {value}");
        value["value"].clone()
    }

    /// A command; `None` if it failed (an element went stale as the page
    /// re-rendered, say).
    pub fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        let path = format!("/session/{}{path}", self.session);
        let (status, data) = http(self.driver, method, &path, body.as_ref());
        let value: Value = serde_json::from_slice(&data).ok()?;
        (status == 200).then(|| value["value"].clone())
    }

    /// Loads `url` (waiting for its `load` event, as WebDriver does).
    pub fn open(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// Runs `js` (a function body) in the page; what it returns.
    pub fn script(&self, js: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": js, "args": [] })),
        )
    }

    /// The page as a PNG.
    pub fn screenshot(&self) -> Vec<u8> {
        let shot = self.call("GET", "/screenshot", None);
        let png = base64_decode(shot.as_str().expect("base64 PNG"));
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        png
    }

    /// The first element matching `css`, if any.
    pub fn find(&self, css: &str) -> Option<String> {
        let body = json!({ "using": "css selector", "value": css });
        let value = self.try_call("POST", "/element", Some(body))?;
        value[ELEMENT].as_str().map(str::to_owned)
    }

    /// Waits for an element matching `css`.
    pub fn wait(&self, css: &str) -> String {
        wait_for(css, || self.find(css))
    }

    pub fn text(&self, element: &str) -> Option<String> {
        let v = self.try_call("GET", &format!("/element/{element}/text"), None)?;
        v.as_str().map(str::to_owned)
    }

    pub fn property(&self, element: &str, name: &str) -> Option<Value> {
        self.try_call("GET", &format!("/element/{element}/property/{name}"), None)
    }

    pub fn attribute(&self, element: &str, name: &str) -> Option<String> {
        let v = self.try_call("GET", &format!("/element/{element}/attribute/{name}"), None)?;
        v.as_str().map(str::to_owned)
    }

    pub fn click(&self, element: &str) -> Option<()> {
        self.try_call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .map(drop)
    }

    pub fn clear(&self, element: &str) -> Option<()> {
        self.try_call(
            "POST",
            &format!("/element/{element}/clear"),
            Some(json!({})),
        )
        .map(drop)
    }

    pub fn type_text(&self, element: &str, text: &str) -> Option<()> {
        self.try_call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        )
        .map(drop)
    }

    /// Clicks the element `css`, finding it again if it went stale.
    pub fn click_css(&self, css: &str) {
        wait_for(css, || self.click(&self.find(css)?));
    }

    /// The text of the element `css` once it satisfies `ok`.
    pub fn wait_text(&self, css: &str, ok: impl Fn(&str) -> bool) -> String {
        wait_for(css, || {
            let text = self.text(&self.find(css)?)?;
            ok(&text).then_some(text)
        })
    }
}
