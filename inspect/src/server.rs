//! The network side: threads that read HTTP requests, decode them and
//! queue the calls for the game thread, then write the answers. Nothing
//! here touches the world.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use serde_json::Value;
use tiny_http::{Header, Method, Request, Response, Server, StatusCode};

use crate::rpc::{self, codes, Body, Call, RpcError};

/// The page, embedded in the binary.
const PAGE: &str = include_str!("page.html");

/// How long a request waits for the game thread before it is answered
/// with an error (a paused debugger, a long loading screen).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Most requests handled at once (each on a thread of its own).
const MAX_IN_FLIGHT: usize = 32;

/// A call waiting for the game thread, and where its answer goes.
pub(crate) struct Job {
    pub call: Call,
    pub reply: Sender<Result<Value, RpcError>>,
}

/// What the network threads share.
pub(crate) struct Shared {
    pub jobs: Sender<Job>,
    pub shutdown: AtomicBool,
    pub in_flight: AtomicUsize,
    pub token: Option<String>,
    pub max_body: usize,
    pub watch_interval: Duration,
    pub loopback: bool,
}

/// Starts the accepting thread.
pub(crate) fn start(
    server: Arc<Server>,
    shared: Arc<Shared>,
) -> std::io::Result<thread::JoinHandle<()>> {
    thread::Builder::new()
        .name("mosaic-inspect".into())
        .spawn(move || {
            for request in server.incoming_requests() {
                if shared.shutdown.load(Ordering::Acquire) {
                    break;
                }
                if shared.in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
                    shared.in_flight.fetch_sub(1, Ordering::AcqRel);
                    let _ = request
                        .respond(Response::from_string("busy").with_status_code(StatusCode(503)));
                    continue;
                }
                let shared2 = Arc::clone(&shared);
                let spawned = thread::Builder::new()
                    .name("mosaic-inspect-request".into())
                    .spawn(move || {
                        handle(request, &shared2);
                        shared2.in_flight.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    shared.in_flight.fetch_sub(1, Ordering::AcqRel);
                }
            }
        })
}

fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

fn content_type(value: &str) -> Header {
    Header::from_bytes(&b"Content-Type"[..], value.as_bytes()).expect("a valid header")
}

fn json_response(status: u16, body: &Value) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_data(serde_json::to_vec(body).unwrap_or_default())
        .with_status_code(StatusCode(status))
        .with_header(content_type("application/json"))
}

/// The query parameter `name` of a URL, percent-decoded.
pub(crate) fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| percent_decode(value))
    })
}

fn percent_decode(text: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push(hi << 4 | lo);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Compares without an early exit (the token is a secret).
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Refuses what must not reach the world: a wrong `Host` on a loopback
/// server (DNS rebinding), a cross-origin browser request, a missing or
/// wrong token.
fn refuse(request: &Request, shared: &Shared) -> Option<(u16, &'static str)> {
    let host = header(request, "Host").unwrap_or("");
    if shared.loopback {
        let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
        if !matches!(name, "127.0.0.1" | "localhost" | "[::1]") {
            return Some((403, "the Host header must name the loopback address"));
        }
    }
    if let Some(origin) = header(request, "Origin") {
        let own = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if own != Some(host) {
            return Some((403, "cross-origin requests are refused"));
        }
    }
    if let Some(token) = &shared.token {
        let given = header(request, "Authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::to_owned)
            .or_else(|| query_param(request.url(), "token"));
        if !given.is_some_and(|given| same_secret(&given, token)) {
            return Some((401, "a valid token is required"));
        }
    }
    None
}

fn handle(mut request: Request, shared: &Shared) {
    let path = request.url().split('?').next().unwrap_or("").to_owned();
    let method = request.method().clone();
    if method == Method::Get && (path == "/" || path == "/index.html") {
        let _ = request.respond(
            Response::from_string(PAGE).with_header(content_type("text/html; charset=utf-8")),
        );
        return;
    }
    if let Some((status, message)) = refuse(&request, shared) {
        let error = RpcError::new(codes::INVALID_REQUEST, message);
        let _ = request.respond(json_response(
            status,
            &rpc::response(Value::Null, Err(error)),
        ));
        return;
    }
    match (method, path.as_str()) {
        (Method::Post, "/" | "/jsonrpc") => {
            let body = match read_body(&mut request, shared.max_body) {
                Ok(body) => body,
                Err(error) => {
                    let _ = request
                        .respond(json_response(413, &rpc::response(Value::Null, Err(error))));
                    return;
                }
            };
            post(request, &body, shared);
        }
        (Method::Get, "/watch") => {
            let body = query_param(request.url(), "request").unwrap_or_default();
            match rpc::decode(body.as_bytes(), shared.max_body) {
                Ok(Body::Single(call)) => watch(request, call, shared),
                Ok(Body::Batch(_)) => {
                    let error = RpcError::new(codes::INVALID_REQUEST, "a watch takes one call");
                    let _ = request
                        .respond(json_response(400, &rpc::response(Value::Null, Err(error))));
                }
                Err((id, error)) => {
                    let _ = request.respond(json_response(400, &rpc::response(id, Err(error))));
                }
            }
        }
        _ => {
            let _ = request.respond(Response::from_string("not found").with_status_code(404));
        }
    }
}

/// Reads the body, refusing one over `max` bytes without reading it all.
fn read_body(request: &mut Request, max: usize) -> Result<Vec<u8>, RpcError> {
    let too_large = || {
        RpcError::new(
            codes::INVALID_REQUEST,
            format!("request body exceeds the limit of {max} bytes"),
        )
    };
    if request.body_length().is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    request
        .as_reader()
        .take(max as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| RpcError::new(codes::INVALID_REQUEST, format!("cannot read the body: {e}")))?;
    if body.len() > max {
        return Err(too_large());
    }
    Ok(body)
}

/// Queues a call and waits for the game thread's answer.
fn ask(shared: &Shared, call: Call) -> Result<Value, RpcError> {
    let (reply, answer) = mpsc::channel();
    if shared.jobs.send(Job { call, reply }).is_err() {
        return Err(RpcError::new(
            codes::INTERNAL_ERROR,
            "the inspector has stopped",
        ));
    }
    wait(&answer)
}

fn wait(answer: &Receiver<Result<Value, RpcError>>) -> Result<Value, RpcError> {
    answer.recv_timeout(ANSWER_TIMEOUT).unwrap_or_else(|_| {
        Err(RpcError::new(
            codes::INTERNAL_ERROR,
            "the program did not answer in time (is it calling Inspector::update each frame?)",
        ))
    })
}

fn post(request: Request, body: &[u8], shared: &Shared) {
    match rpc::decode(body, shared.max_body) {
        Err((id, error)) => {
            let _ = request.respond(json_response(200, &rpc::response(id, Err(error))));
        }
        Ok(Body::Single(call)) if call.method.ends_with("+watch") => {
            let method = call.method.trim_end_matches("+watch").to_owned();
            watch(request, Call { method, ..call }, shared);
        }
        Ok(Body::Single(call)) => {
            let id = call.id.clone();
            let result = ask(shared, call);
            match id {
                Some(id) => {
                    let _ = request.respond(json_response(200, &rpc::response(id, result)));
                }
                None => {
                    let _ = request.respond(Response::empty(204));
                }
            }
        }
        Ok(Body::Batch(calls)) => {
            // Queue every call first, so the game thread may answer them
            // all in one frame.
            let pending: Vec<_> = calls
                .into_iter()
                .map(|call| match call {
                    Ok(call) => {
                        let id = call.id.clone();
                        let (reply, answer) = mpsc::channel();
                        let queued = shared.jobs.send(Job { call, reply }).is_ok();
                        (id, Ok((queued, answer)))
                    }
                    Err((id, error)) => (Some(id), Err(error)),
                })
                .collect();
            let answers: Vec<Value> = pending
                .into_iter()
                .filter_map(|(id, pending)| {
                    let result = match pending {
                        Ok((true, answer)) => wait(&answer),
                        Ok((false, _)) => Err(RpcError::new(
                            codes::INTERNAL_ERROR,
                            "the inspector has stopped",
                        )),
                        Err(error) => Err(error),
                    };
                    id.map(|id| rpc::response(id, result))
                })
                .collect();
            if answers.is_empty() {
                let _ = request.respond(Response::empty(204));
            } else {
                let _ = request.respond(json_response(200, &Value::Array(answers)));
            }
        }
    }
}

/// Answers `call` again every watch interval and streams each new result
/// as a server-sent event, until the client goes away.
fn watch(request: Request, call: Call, shared: &Shared) {
    let id = call.id.clone().unwrap_or(Value::Null);
    let mut writer = request.into_writer();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    if writer
        .write_all(head.as_bytes())
        .and_then(|()| writer.flush())
        .is_err()
    {
        return;
    }
    let mut last: Option<Value> = None;
    while !shared.shutdown.load(Ordering::Acquire) {
        let result = ask(shared, call.clone());
        let failed = result.is_err();
        let message = rpc::response(id.clone(), result);
        if last.as_ref() != Some(&message) {
            let line = format!("data: {message}\n\n");
            if writer
                .write_all(line.as_bytes())
                .and_then(|()| writer.flush())
                .is_err()
            {
                return;
            }
            last = Some(message);
        } else if writer
            .write_all(b": keep-alive\n\n")
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
        if failed {
            return;
        }
        thread::sleep(shared.watch_interval);
    }
}

/// The address the inspector listens on, as a URL.
pub(crate) fn url(addr: SocketAddr, token: Option<&str>) -> String {
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        match addr {
            SocketAddr::V4(a) => a.ip().to_string(),
            SocketAddr::V6(a) => format!("[{}]", a.ip()),
        }
    };
    match token {
        Some(token) => format!("http://{host}:{}/?token={token}", addr.port()),
        None => format!("http://{host}:{}/", addr.port()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_params_decode() {
        assert_eq!(
            query_param("/watch?request=%7B%22a%22%7D&x=1", "request").unwrap(),
            "{\"a\"}"
        );
        assert_eq!(query_param("/?token=abc", "token").unwrap(), "abc");
        assert_eq!(query_param("/?token=abc", "nope"), None);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("a", "ab"));
    }
}
