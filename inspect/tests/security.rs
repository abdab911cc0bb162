//! Issue #35's security and budget items over real HTTP: no world change
//! without the same-origin proof, watches of reads only, slow clients that
//! starve no one, `Host`/`Content-Length` edge cases, and `world.query`
//! bounded per frame.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{drive, http};
use mosaic::prelude::*;
use mosaic::scene::TypeRegistry;
use mosaic_inspect::Inspector;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

fn setup(entities: usize) -> (World, Schedule, Inspector) {
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    let mut world = World::new();
    world.spawn_batch((0..entities).map(|i| Position {
        x: i as f32,
        y: 0.0,
    }));
    let inspector = Inspector::builder()
        .registry(registry)
        .serve("127.0.0.1:0")
        .unwrap();
    (world, Schedule::new(), inspector)
}

fn rpc_body(method: &str, params: Value) -> Vec<u8> {
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
        .to_string()
        .into_bytes()
}

fn spawn_body() -> Vec<u8> {
    rpc_body(
        "world.spawn_entity",
        json!({ "components": { "Position": { "x": 9.0, "y": 9.0 } } }),
    )
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The first line of a server-sent event stream's events (or the body of
/// a refusal).
fn first_event(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut all = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return all;
        }
        all.push_str(&line);
        if line.starts_with("data: ") {
            return all;
        }
    }
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn nothing_changes_the_world_without_the_same_origin_proof() {
    let (mut world, mut schedule, mut inspector) = setup(3);
    let statuses = drive(&mut inspector, &mut world, &mut schedule, |addr| {
        let spawn = spawn_body();
        let plain = [("Content-Type", "text/plain")];
        let form = [("Content-Type", "application/x-www-form-urlencoded")];
        let sneaky = [("Content-Type", "text/plain; application/json")];
        let mut s = vec![
            // What a form or a no-cors fetch of a foreign page can send.
            http(addr, "POST", "/", &plain, &spawn).0,
            http(addr, "POST", "/", &form, &spawn).0,
            http(addr, "POST", "/", &sneaky, &spawn).0,
            http(addr, "POST", "/", &[], &spawn).0,
            // A batch hiding one write among reads.
            http(
                addr,
                "POST",
                "/",
                &plain,
                format!(
                    "[{},{}]",
                    String::from_utf8(rpc_body("world.overview", json!({}))).unwrap(),
                    String::from_utf8(spawn.clone()).unwrap()
                )
                .as_bytes(),
            )
            .0,
            // Cross-site by the browser's own word, even with the proof.
            http(
                addr,
                "POST",
                "/",
                &[("X-Mosaic-Inspector", "1"), ("Sec-Fetch-Site", "same-site")],
                &spawn,
            )
            .0,
            http(
                addr,
                "POST",
                "/",
                &[("X-Mosaic-Inspector", "1"), ("Origin", "null")],
                &spawn,
            )
            .0,
        ];
        // Reads need no proof (a browser lets no foreign page read them).
        s.push(
            http(
                addr,
                "POST",
                "/",
                &plain,
                &rpc_body("world.overview", json!({})),
            )
            .0,
        );
        // A program with the header, or with JSON's content type, may write.
        s.push(http(addr, "POST", "/", &[("X-Mosaic-Inspector", "1")], &spawn).0);
        s.push(
            http(
                addr,
                "POST",
                "/",
                &[("Content-Type", "application/json; charset=utf-8")],
                &spawn,
            )
            .0,
        );
        s
    });
    assert_eq!(statuses, [403, 403, 403, 403, 403, 403, 403, 200, 200, 200]);
    // Three at the start, two written with the proof: none of the refused.
    assert_eq!(world.len(), 5);
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn watches_repeat_read_methods_only() {
    let (mut world, mut schedule, mut inspector) = setup(3);
    let answers = drive(&mut inspector, &mut world, &mut schedule, |addr| {
        let spawn = String::from_utf8(spawn_body()).unwrap();
        let port = addr.port();
        // What an <img>, <script> or <iframe> would send: no Origin.
        let get = first_event(
            addr,
            &format!(
                "GET /watch?request={} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n",
                percent(&spawn)
            ),
        );
        let watched = spawn.replace("world.spawn_entity", "world.spawn_entity+watch");
        let post = first_event(
            addr,
            &format!(
                "POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Mosaic-Inspector: 1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{watched}",
                watched.len()
            ),
        );
        let pause =
            String::from_utf8(rpc_body("schedule.pause", json!({ "paused": true }))).unwrap();
        let pause = first_event(
            addr,
            &format!(
                "GET /watch?request={} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n",
                percent(&pause)
            ),
        );
        // A cross-site read watch (an <img> in Chromium) is refused too.
        let overview = String::from_utf8(rpc_body("world.overview", json!({}))).unwrap();
        let cross = first_event(
            addr,
            &format!(
                "GET /watch?request={} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nSec-Fetch-Site: cross-site\r\n\r\n",
                percent(&overview)
            ),
        );
        let read = first_event(
            addr,
            &format!(
                "GET /watch?request={} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n",
                percent(&overview)
            ),
        );
        (get, post, pause, cross, read)
    });
    assert!(answers.0.starts_with("HTTP/1.1 400"), "{}", answers.0);
    assert!(answers.0.contains("read methods only"), "{}", answers.0);
    assert!(answers.1.contains("read methods only"), "{}", answers.1);
    assert!(answers.2.starts_with("HTTP/1.1 400"), "{}", answers.2);
    assert!(answers.3.starts_with("HTTP/1.1 403"), "{}", answers.3);
    assert!(answers.4.contains("\"entities\":3"), "{}", answers.4);
    assert_eq!(world.len(), 3);
    assert!(!inspector.is_paused());
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn ipv6_host_without_port_and_conflicting_lengths() {
    let (mut world, mut schedule, mut inspector) = setup(1);
    let statuses = drive(&mut inspector, &mut world, &mut schedule, |addr| {
        let body = rpc_body("world.overview", json!({}));
        let raw = |head: &str| {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            stream.write_all(head.as_bytes()).unwrap();
            let _ = stream.write_all(&body);
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            answer[9..12].to_owned()
        };
        let n = body.len();
        vec![
            raw(&format!(
                "POST / HTTP/1.1\r\nHost: [::1]\r\nContent-Length: {n}\r\n\r\n"
            )),
            raw(&format!(
                "POST / HTTP/1.1\r\nHost: [::1]:80\r\nContent-Length: {n}\r\n\r\n"
            )),
            raw(&format!(
                "POST / HTTP/1.1\r\nHost: [::2]\r\nContent-Length: {n}\r\n\r\n"
            )),
            raw(&format!(
                "POST / HTTP/1.1\r\nHost: [::1]evil\r\nContent-Length: {n}\r\n\r\n"
            )),
            raw(&format!(
                "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: {n}\r\nContent-Length: 2\r\n\r\n"
            )),
            raw(&format!(
                "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: {n}\r\nContent-Length: {n}\r\n\r\n"
            )),
        ]
    });
    assert_eq!(statuses, ["200", "200", "403", "403", "400", "200"]);
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn sixty_four_slow_clients_starve_no_one() {
    let (mut world, mut schedule, mut inspector) = setup(10);
    let (statuses, waits) = drive(&mut inspector, &mut world, &mut schedule, |addr| {
        // 64 connections, each sending a byte a second (and watches open
        // on top), for four seconds.
        let slow: Vec<_> = (0..64)
            .map(|_| {
                std::thread::spawn(move || {
                    let Ok(mut stream) = TcpStream::connect(addr) else {
                        return;
                    };
                    for byte in b"POST / HTTP/1.1\r\n".iter().take(4) {
                        if stream.write_all(&[*byte]).is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_secs(1));
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        let mut statuses = Vec::new();
        let mut waits = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            // The page's request, then a new client's.
            statuses.push(http(addr, "GET", "/", &[], b"").0);
            statuses.push(
                http(
                    addr,
                    "POST",
                    "/",
                    &[("Content-Type", "application/json")],
                    &rpc_body("world.overview", json!({})),
                )
                .0,
            );
            waits.push(started.elapsed());
            std::thread::sleep(Duration::from_millis(300));
        }
        for s in slow {
            let _ = s.join();
        }
        (statuses, waits)
    });
    eprintln!("answered under 64 slow clients in {waits:?}");
    assert_eq!(statuses, [200; 10]);
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn a_request_has_one_deadline_not_one_per_read() {
    let (mut world, mut schedule, mut inspector) = setup(1);
    let (closed_after, answer) = drive(&mut inspector, &mut world, &mut schedule, |addr| {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(10)))
            .unwrap();
        let started = Instant::now();
        let head = b"POST / HTTP/1.1\r\nHost: localhost\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let mut answer = Vec::new();
        // A byte every 200 ms: never idle for a read timeout, but past
        // the deadline after a few seconds. Give up at 20 s.
        for &byte in head.iter().cycle() {
            if started.elapsed() > Duration::from_secs(20) {
                break;
            }
            if stream.write_all(&[byte]).is_err() {
                break;
            }
            let mut buf = [0u8; 256];
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        (
            started.elapsed(),
            String::from_utf8_lossy(&answer).into_owned(),
        )
    });
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(closed_after < Duration::from_secs(20), "{closed_after:?}");
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn query_defaults_to_a_limit_and_says_when_it_cut() {
    let (mut world, mut schedule, mut inspector) = setup(2500);
    let (first, last, limited) = drive(&mut inspector, &mut world, &mut schedule, |addr| {
        let query = |params: Value| {
            let (_, _, body) = http(
                addr,
                "POST",
                "/",
                &[("Content-Type", "application/json")],
                &rpc_body("world.query", params),
            );
            serde_json::from_slice::<Value>(&body).unwrap()
        };
        let first = query(json!({ "data": { "components": ["Position"] } }));
        let last = query(json!({ "data": { "components": ["Position"] }, "offset": 2000 }));
        let limited = query(json!({ "data": { "components": ["Position"] }, "limit": 2500 }));
        (first, last, limited)
    });
    assert_eq!(first["result"].as_array().unwrap().len(), 1000);
    assert_eq!(first["truncated"], true);
    assert_eq!(first["next"]["offset"], 1000);
    assert_eq!(last["result"].as_array().unwrap().len(), 500);
    assert!(last.get("truncated").is_none(), "{}", last["next"]);
    assert_eq!(limited["result"].as_array().unwrap().len(), 2500);
    assert!(limited.get("truncated").is_none());
}

/// With 100,000 entities, unbounded queries (a limit of everything) are
/// built in slices across frames: the time `update` takes stays near the
/// budget, and every answer is whole and free of repeats.
#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn unbounded_queries_on_100k_entities_stay_within_the_frame_budget() {
    const N: usize = 100_000;
    let (mut world, mut schedule, mut inspector) = setup(N);
    let addr = inspector.local_addr();
    let client = std::thread::spawn(move || {
        let mut sizes = Vec::new();
        for _ in 0..2 {
            let (_, _, body) = http(
                addr,
                "POST",
                "/",
                &[("Content-Type", "application/json")],
                &rpc_body(
                    "world.query",
                    json!({ "data": { "components": ["Position"] }, "limit": N }),
                ),
            );
            let answer: Value = serde_json::from_slice(&body).unwrap();
            let rows = answer["result"].as_array().expect("rows").clone();
            let mut ids: Vec<u64> = rows.iter().map(|r| r["entity"].as_u64().unwrap()).collect();
            ids.sort_unstable();
            ids.dedup();
            sizes.push((rows.len(), ids.len()));
        }
        sizes
    });
    let mut costs = Vec::new();
    while !client.is_finished() {
        let started = Instant::now();
        inspector.update(&mut world, &mut schedule);
        let cost = started.elapsed();
        if cost > Duration::from_micros(200) {
            costs.push(cost);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let sizes = client.join().unwrap();
    assert_eq!(sizes, [(N, N), (N, N)]);
    costs.sort_unstable();
    let median = costs[costs.len() / 2];
    eprintln!(
        "{} working frames; median {median:?}, max {:?} (budget 2 ms)",
        costs.len(),
        costs.last().unwrap()
    );
    // Sliced: many frames did the work, and a typical one stayed near the
    // budget (the old code did each query in one frame of 0.6 s or more).
    assert!(costs.len() > 20, "{} frames", costs.len());
    assert!(median < Duration::from_millis(8), "median {median:?}");
}
