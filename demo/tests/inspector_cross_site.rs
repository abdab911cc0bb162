//! Issue 35, item 1, in a real browser: a page of another origin (another
//! loopback port, served by this test) fires every request headless
//! Chromium sends without a CORS preflight — `<img>`, `<script>`,
//! `<iframe>`, `<form>` POSTs (text/plain and urlencoded), no-cors
//! `fetch` GET and POST, `EventSource` — at `/watch?request=…` and at the
//! RPC endpoint, each asking to spawn an entity or to resume the paused game. A
//! same-origin call (with the proof header) then checks that the entity
//! count did not change, the game did not resume (it is paused first, so the world holds still), and the inspector's own
//! page still loads and answers.
//!
//! Needs Debian's `chromium` and `chromium-driver`; without them the test
//! says so and passes, except under CI (`CI` set), where it fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One request with `Connection: close` and a JSON content type (the
/// inspector's same-origin proof); returns status and body.
fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, Vec<u8>) {
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
    let _ = stream.read_to_end(&mut response);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut data = response[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
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

fn rpc(addr: SocketAddr, method: &str, params: Value) -> Value {
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let (_, body) = http(addr, "POST", "/", Some(&call));
    let answer: Value = serde_json::from_slice(&body).expect("JSON");
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Browser {
    driver: SocketAddr,
    session: String,
}

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

    fn script(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": [] })),
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

/// `%`-encodes everything but unreserved characters.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The attacker's page: every preflight-free request, at both routes, for
/// each world-changing call. Sets `document.title` to "fired" when all
/// have been sent.
fn attack_page(target: SocketAddr, calls: &[Value]) -> String {
    let base = format!("http://{target}");
    let mut html = String::from("<!doctype html><html><body>\n");
    let mut js = String::from("const sent = [];\n");
    for (i, call) in calls.iter().enumerate() {
        let text = call.to_string();
        let method = call["method"].as_str().unwrap();
        for path in [
            format!("/watch?request={}", url_encode(&text)),
            format!("/watch?request={}", url_encode(&format!("{text}+watch"))),
            format!(
                "/watch?request={}",
                url_encode(&text.replace(method, &format!("{method}+watch")))
            ),
            format!("/?request={}", url_encode(&text)),
        ] {
            let url = format!("{base}{path}");
            html.push_str(&format!("<img src=\"{url}\">\n<script src=\"{url}\"></script>\n<iframe src=\"{url}\"></iframe>\n"));
            js.push_str(&format!(
                "sent.push(fetch({url:?}, {{mode: 'no-cors'}}).catch(() => 0));\n\
                 {{ const es = new EventSource({url:?}); setTimeout(() => es.close(), 2500); }}\n"
            ));
        }
        for route in ["/", "/watch"] {
            let url = format!("{base}{route}");
            // text/plain: the body is `name=value`, made to read as JSON.
            let (name, value) = text.split_at(text.len() - 1);
            let name = format!("{name}, \"pad\": \"");
            let value = format!("\"{value}");
            for (enctype, field, val) in [
                ("text/plain", name.as_str(), value.as_str()),
                (
                    "application/x-www-form-urlencoded",
                    "request",
                    text.as_str(),
                ),
                ("multipart/form-data", "request", text.as_str()),
            ] {
                let frame = format!("sink{i}{}{}", route.len(), enctype.len());
                html.push_str(&format!(
                    "<iframe name=\"{frame}\"></iframe><form class=\"attack\" method=\"POST\" action=\"{url}\" enctype=\"{enctype}\" target=\"{frame}\"><input type=\"hidden\" name='{}' value='{}'></form>\n",
                    field.replace('\'', "&#39;"),
                    val.replace('\'', "&#39;"),
                ));
            }
            for content_type in [
                "text/plain",
                "application/x-www-form-urlencoded",
                "multipart/form-data",
            ] {
                js.push_str(&format!(
                    "sent.push(fetch({url:?}, {{mode: 'no-cors', method: 'POST', headers: {{'Content-Type': {content_type:?}}}, body: {text:?}}}).catch(() => 0));\n"
                ));
            }
        }
    }
    js.push_str(
        "for (const f of document.querySelectorAll('form.attack')) f.submit();\n\
         Promise.all(sent).then(() => { document.title = 'fired'; });\n",
    );
    html.push_str(&format!("<script>\n{js}</script>\n</body></html>\n"));
    html
}

/// Serves `page` to every request on `listener`, forever (a detached
/// thread; the test process ends it).
fn serve(listener: TcpListener, page: String) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
}

#[cfg_attr(miri, ignore = "starts processes and a browser")]
#[test]
fn a_page_of_another_origin_cannot_change_the_world() {
    if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install chromium and chromium-driver (.ci/run does)"
        );
        eprintln!("SKIPPED: {CHROMIUM} or {CHROMEDRIVER} is missing");
        return;
    }

    let mut demo = Command::new(env!("CARGO_BIN_EXE_mosaic-demo"))
        .args(["--inspect", "127.0.0.1:0", "--no-render"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the showcase");
    let stdout = demo.stdout.take().expect("piped stdout");
    let demo = Killed(demo);
    let url = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.split_once("Inspector: open ")
                .map(|(_, rest)| rest.split(' ').next().unwrap().to_owned())
        })
        .expect("the showcase prints the inspector's URL");
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("a loopback address");

    // Paused through the proper channel, so the world holds still (the
    // showcase's particles come and go): the attacker tries to spawn and
    // to resume.
    rpc(addr, "schedule.pause", json!({ "paused": true }));
    let overview = rpc(addr, "world.overview", json!({}));
    let entities = overview["entities"].as_u64().unwrap();
    assert_eq!(overview["paused"], json!(true));

    // The attacker: another origin (another port of the loopback host).
    let calls = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "world.spawn_entity", "params": { "components": {} } }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "schedule.pause", "params": { "paused": false } }),
    ];
    let attacker = TcpListener::bind("127.0.0.1:0").unwrap();
    let attacker_url = format!("http://{}/", attacker.local_addr().unwrap());
    serve(attacker, attack_page(addr, &calls));

    let port = free_port();
    let profile =
        TempDir(std::env::temp_dir().join(format!("mosaic-xsite-{}", std::process::id())));
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
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage",
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
        "/timeouts",
        Some(json!({ "pageLoad": 10_000, "script": 10_000 })),
    );

    // Fire everything, then give the requests (and any watch stream) a
    // bounded time to act.
    browser.call("POST", "/url", Some(json!({ "url": attacker_url })));
    wait_for("the attack to be sent", || {
        (browser.script("return document.title") == json!("fired")).then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));

    let overview = rpc(addr, "world.overview", json!({}));
    assert_eq!(
        overview["paused"],
        json!(true),
        "a foreign page resumed the game"
    );
    assert_eq!(
        overview["entities"].as_u64().unwrap(),
        entities,
        "a foreign page changed the entity count"
    );

    // The inspector's own page still loads and answers.
    browser.call("POST", "/url", Some(json!({ "url": url })));
    wait_for("the inspector's page to get ready", || {
        let ready =
            browser.script("return document.body && document.body.hasAttribute('data-ready')");
        (ready == json!(true)).then_some(())
    });
    wait_for("the page to show the entity count", || {
        let shown = browser.script("return document.getElementById('entity-count').textContent");
        (shown == json!(entities.to_string())).then_some(())
    });

    drop(browser);
    drop(driver);
    drop(demo);
    drop(profile);
}
