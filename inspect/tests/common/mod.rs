//! A tiny blocking HTTP client and a loop that keeps the world answering
//! while a client thread talks to the inspector.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use mosaic::{Schedule, World};
use mosaic_inspect::Inspector;
use serde_json::{Value, json};

/// One HTTP request; returns (status, headers, body).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {}\r\n",
        addr.port(),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = response[split + 4..].to_vec();
    (status, head, body)
}

/// Posts a raw body; returns the decoded JSON answer.
pub fn post_raw(addr: SocketAddr, body: &[u8]) -> Value {
    let (_, _, body) = http(
        addr,
        "POST",
        "/",
        &[("Content-Type", "application/json")],
        body,
    );
    serde_json::from_slice(&body).expect("a JSON answer")
}

/// Calls `method`; returns the whole response object.
pub fn call(addr: SocketAddr, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    post_raw(addr, body.to_string().as_bytes())
}

/// Calls `method` and returns its result, panicking on an error.
pub fn ok(addr: SocketAddr, method: &str, params: Value) -> Value {
    let answer = call(addr, method, params);
    assert!(answer.get("error").is_none(), "{method} failed: {answer}");
    answer["result"].clone()
}

/// The error code of a failed call.
pub fn err(addr: SocketAddr, method: &str, params: Value) -> i64 {
    let answer = call(addr, method, params);
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("{method} should fail: {answer}"))
}

/// Runs `client` on a thread of its own while this thread updates the
/// inspector (one frame every millisecond) until the client is done.
pub fn drive<T: Send + 'static>(
    inspector: &mut Inspector,
    world: &mut World,
    schedule: &mut Schedule,
    client: impl FnOnce(SocketAddr) -> T + Send + 'static,
) -> T {
    let addr = inspector.local_addr();
    let handle = std::thread::spawn(move || client(addr));
    while !handle.is_finished() {
        inspector.run_frame(world, schedule, Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(1));
    }
    match handle.join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
