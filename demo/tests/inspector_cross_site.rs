//! Issue 35, item 1, in a real browser: a page of another origin (another
//! loopback port, served by this test) fires every request headless
//! Chromium sends without a CORS preflight — `<img>`, `<script>`,
//! `<iframe>`, `<form>` POSTs (text/plain, urlencoded and multipart),
//! no-cors `fetch` GET and POST, `EventSource` — at `/watch?request=…` and
//! at the RPC endpoint, each asking to spawn an entity or to resume the
//! paused game, as itself and as its `+watch`. A same-origin call (with
//! the proof header) then checks that the entity count did not change, the
//! game did not resume (it is paused first, so the world holds still), and
//! the inspector's own page still loads and answers.
//!
//! The attack is added by a script after the attacker's page has loaded,
//! and each request counts itself settled when the browser has its answer
//! (`load` or `error`; an iframe's `load`; a stream's first event or
//! error), so the test waits for the answers, not for a timeout. A server
//! that let one through fails the test at once (the world changed) or
//! within 20 s (a stream that never ends, say, never settles).
//!
//! Needs Debian's `chromium` and `chromium-driver`; without them the test
//! says so and passes, except under CI (`CI` set), where it fails.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::webdriver::{Browser, browser_or_skip, wait_for, wait_within};
use common::{rpc, showcase};

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

/// The attack, as a script to run in the attacker's loaded page: every
/// preflight-free request, at both routes, for each world-changing call
/// and its `+watch`. Each request calls `settle()` once the browser has
/// its answer; `window.attack` counts them (`sent`, `settled`) and lists
/// the streams that opened (`opened`: a watch the server accepted).
fn attack_script(target: SocketAddr, calls: &[Value]) -> String {
    let base = format!("http://{target}");
    let mut js = String::from(
        "window.attack = { sent: 0, settled: 0, opened: [] };\n\
         const once = () => { let done = false; window.attack.sent++;\n\
           return () => { if (!done) { done = true; window.attack.settled++; } }; };\n\
         const add = (tag, props) => { const e = document.createElement(tag);\n\
           Object.assign(e, props); document.body.appendChild(e); return e; };\n",
    );
    for call in calls {
        let method = call["method"].as_str().unwrap();
        let watched = call.to_string().replace(method, &format!("{method}+watch"));
        for text in [call.to_string(), watched] {
            for path in [
                format!("/watch?request={}", url_encode(&text)),
                format!("/?request={}", url_encode(&text)),
            ] {
                let url = format!("{base}{path}");
                js.push_str(&format!(
                    "{{ const s = once(); add('img', {{ onload: s, onerror: s, src: {url:?} }}); }}\n\
                     {{ const s = once(); add('script', {{ onload: s, onerror: s, src: {url:?} }}); }}\n\
                     {{ const s = once(); add('iframe', {{ onload: s, src: {url:?} }}); }}\n\
                     {{ const s = once(); fetch({url:?}, {{ mode: 'no-cors' }}).then(s, s); }}\n\
                     {{ const s = once(); const es = new EventSource({url:?});\n\
                        es.onopen = () => {{ window.attack.opened.push({url:?}); es.close(); s(); }};\n\
                        es.onerror = () => {{ es.close(); s(); }}; }}\n"
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
                    // The form's answer loads in an iframe: its first load
                    // is the empty page, the second the answer.
                    js.push_str(&format!(
                        "{{ const s = once(); const name = 'f' + window.attack.sent;\n\
                           const form = add('form', {{ method: 'POST', action: {url:?}, enctype: {enctype:?}, target: name }});\n\
                           const input = document.createElement('input');\n\
                           Object.assign(input, {{ type: 'hidden', name: {field:?}, value: {val:?} }});\n\
                           form.appendChild(input);\n\
                           let loads = 0;\n\
                           add('iframe', {{ name, src: '/empty', onload: () => {{ if (++loads == 1) form.submit(); else s(); }} }}); }}\n"
                    ));
                }
                for content_type in [
                    "text/plain",
                    "application/x-www-form-urlencoded",
                    "multipart/form-data",
                ] {
                    js.push_str(&format!(
                        "{{ const s = once(); fetch({url:?}, {{ mode: 'no-cors', method: 'POST', headers: {{ 'Content-Type': {content_type:?} }}, body: {text:?} }}).then(s, s); }}\n"
                    ));
                }
            }
        }
    }
    js.push_str("return window.attack.sent;\n");
    js
}

/// Serves an empty page to every request on `listener`, forever (a
/// detached thread; the test process ends it).
fn serve(listener: TcpListener) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let page = "<!doctype html><html><body></body></html>";
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
    if !browser_or_skip("the inspector's cross-site test") {
        return;
    }
    let started = Instant::now();
    let (demo, url, addr) = showcase();

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
    serve(attacker);

    let browser = Browser::start("xsite", &[]);
    browser.call(
        "POST",
        "/timeouts",
        Some(json!({ "pageLoad": 10_000, "script": 10_000 })),
    );
    browser.open(&attacker_url);
    let sent = browser.script(&attack_script(addr, &calls));
    let sent = sent.as_u64().expect("the number of requests sent");
    // Per call and its +watch: 2 URLs x 5 elements, 2 routes x (3 forms +
    // 3 fetches).
    assert_eq!(sent, (calls.len() * 2 * (2 * 5 + 2 * 6)) as u64);

    // Until every request has its answer, or the world changed.
    let changed = |overview: &Value| {
        overview["paused"] != json!(true) || overview["entities"].as_u64() != Some(entities)
    };
    let attack = wait_within(Duration::from_secs(20), "the attack's answers", || {
        let attack = browser.script("return window.attack");
        let settled = attack["settled"].as_u64() == Some(sent);
        (settled || changed(&rpc(addr, "world.overview", json!({})))).then_some(attack)
    });
    // A last look, for a write answered just now.
    std::thread::sleep(Duration::from_millis(300));
    let overview = rpc(addr, "world.overview", json!({}));
    assert_eq!(
        overview["paused"],
        json!(true),
        "a foreign page resumed the game ({attack})"
    );
    assert_eq!(
        overview["entities"].as_u64().unwrap(),
        entities,
        "a foreign page changed the entity count ({attack})"
    );
    assert_eq!(
        attack["opened"],
        json!([]),
        "the server opened watches for a foreign page"
    );
    assert_eq!(attack["settled"], json!(sent), "every request answered");

    // The inspector's own page still loads and answers.
    browser.open(&url);
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
    drop(demo);
    eprintln!(
        "cross-site test: {sent} requests refused in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
