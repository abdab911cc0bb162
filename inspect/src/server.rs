//! The network side: threads that read HTTP requests, decode them and
//! queue the calls for the game thread, then write the answers. Nothing
//! here touches the world.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::Value;

use crate::rpc::{self, Body, Call, RpcError, codes};

/// The page, embedded in the binary.
const PAGE: &str = include_str!("page.html");

/// How long a request waits for the game thread before it is answered
/// with an error (a paused debugger, a long loading screen).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Most connections handled at once (each on a thread of its own).
const MAX_IN_FLIGHT: usize = 32;

/// Largest request head (request line and headers).
const MAX_HEAD: usize = 16 * 1024;

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

/// Starts the accepting thread. Each connection carries one request
/// (`Connection: close`) and is served on a thread of its own, so a slow
/// or idle client (a browser's spare connection) holds up no other.
pub(crate) fn start(listener: TcpListener, shared: Arc<Shared>) -> io::Result<JoinHandle<()>> {
    thread::Builder::new()
        .name("mosaic-inspect".into())
        .spawn(move || {
            for stream in listener.incoming() {
                if shared.shutdown.load(Ordering::Acquire) {
                    break;
                }
                let Ok(mut stream) = stream else { continue };
                if shared.in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
                    shared.in_flight.fetch_sub(1, Ordering::AcqRel);
                    let _ = respond(&mut stream, 503, "text/plain", b"busy");
                    continue;
                }
                let shared2 = Arc::clone(&shared);
                let spawned = thread::Builder::new()
                    .name("mosaic-inspect-request".into())
                    .spawn(move || {
                        serve_connection(stream, &shared2);
                        shared2.in_flight.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    shared.in_flight.fetch_sub(1, Ordering::AcqRel);
                }
            }
        })
}

/// One parsed HTTP request.
pub(crate) struct Request {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    /// The body's announced length.
    length: usize,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the request head; returns it and the body bytes read with it.
fn read_head(stream: &mut TcpStream) -> Result<(Request, Vec<u8>), u16> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).map_err(|_| 408u16)?;
        if n == 0 {
            return Err(400);
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 48];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let headers: Vec<(String, String)> = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_owned(),
                            String::from_utf8_lossy(h.value).trim().to_owned(),
                        )
                    })
                    .collect();
                let length = match headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
                {
                    Some((_, v)) => v.parse().map_err(|_| 400u16)?,
                    None => 0,
                };
                if headers
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case("Transfer-Encoding"))
                {
                    return Err(411);
                }
                let request = Request {
                    method: parsed.method.unwrap_or("").to_owned(),
                    url: parsed.path.unwrap_or("/").to_owned(),
                    headers,
                    length,
                };
                return Ok((request, buf[head_len..].to_vec()));
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            _ => return Err(400),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// Writes a whole response and closes the connection.
fn respond(stream: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    let _ = stream.shutdown(Shutdown::Write);
    Ok(())
}

fn respond_json(stream: &mut TcpStream, status: u16, body: &Value) {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let _ = respond(stream, status, "application/json", &bytes);
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
    let host = request.header("Host").unwrap_or("");
    if shared.loopback {
        let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
        if !matches!(name, "127.0.0.1" | "localhost" | "[::1]") {
            return Some((403, "the Host header must name the loopback address"));
        }
    }
    if let Some(origin) = request.header("Origin") {
        let own = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if own != Some(host) {
            return Some((403, "cross-origin requests are refused"));
        }
    }
    if let Some(token) = &shared.token {
        let given = request
            .header("Authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::to_owned)
            .or_else(|| query_param(&request.url, "token"));
        if !given.is_some_and(|given| same_secret(&given, token)) {
            return Some((401, "a valid token is required"));
        }
    }
    None
}

fn serve_connection(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let (request, mut body) = match read_head(&mut stream) {
        Ok(head) => head,
        Err(status) => {
            let _ = respond(&mut stream, status, "text/plain", reason(status).as_bytes());
            return;
        }
    };
    let path = request.url.split('?').next().unwrap_or("").to_owned();
    if request.method == "GET" && (path == "/" || path == "/index.html") {
        let _ = respond(
            &mut stream,
            200,
            "text/html; charset=utf-8",
            PAGE.as_bytes(),
        );
        return;
    }
    if let Some((status, message)) = refuse(&request, shared) {
        let error = RpcError::new(codes::INVALID_REQUEST, message);
        respond_json(&mut stream, status, &rpc::response(Value::Null, Err(error)));
        return;
    }
    match (request.method.as_str(), path.as_str()) {
        ("POST", "/" | "/jsonrpc") => {
            if let Err(error) = read_body(&mut stream, &request, &mut body, shared.max_body) {
                respond_json(&mut stream, 413, &rpc::response(Value::Null, Err(error)));
                return;
            }
            post(stream, &body, shared);
        }
        ("GET", "/watch") => {
            let body = query_param(&request.url, "request").unwrap_or_default();
            match rpc::decode(body.as_bytes(), shared.max_body) {
                Ok(Body::Single(call)) => watch(stream, call, shared),
                Ok(Body::Batch(_)) => {
                    let error = RpcError::new(codes::INVALID_REQUEST, "a watch takes one call");
                    respond_json(&mut stream, 400, &rpc::response(Value::Null, Err(error)));
                }
                Err((id, error)) => respond_json(&mut stream, 400, &rpc::response(id, Err(error))),
            }
        }
        _ => {
            let _ = respond(&mut stream, 404, "text/plain", b"not found");
        }
    }
}

/// Reads the rest of the body, refusing one over `max` bytes without
/// reading it.
fn read_body(
    stream: &mut TcpStream,
    request: &Request,
    body: &mut Vec<u8>,
    max: usize,
) -> Result<(), RpcError> {
    if request.length > max || body.len() > max {
        return Err(RpcError::new(
            codes::INVALID_REQUEST,
            format!("request body exceeds the limit of {max} bytes"),
        ));
    }
    if body.len() < request.length {
        let missing = request.length - body.len();
        let start = body.len();
        body.resize(request.length, 0);
        stream
            .read_exact(&mut body[start..start + missing])
            .map_err(|e| {
                RpcError::new(codes::INVALID_REQUEST, format!("cannot read the body: {e}"))
            })?;
    }
    body.truncate(request.length);
    Ok(())
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

fn post(mut stream: TcpStream, body: &[u8], shared: &Shared) {
    match rpc::decode(body, shared.max_body) {
        Err((id, error)) => respond_json(&mut stream, 200, &rpc::response(id, Err(error))),
        Ok(Body::Single(call)) if call.method.ends_with("+watch") => {
            let method = call.method.trim_end_matches("+watch").to_owned();
            watch(stream, Call { method, ..call }, shared);
        }
        Ok(Body::Single(call)) => {
            let id = call.id.clone();
            let result = ask(shared, call);
            match id {
                Some(id) => respond_json(&mut stream, 200, &rpc::response(id, result)),
                None => {
                    let _ = respond(&mut stream, 204, "text/plain", b"");
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
                let _ = respond(&mut stream, 204, "text/plain", b"");
            } else {
                respond_json(&mut stream, 200, &Value::Array(answers));
            }
        }
    }
}

/// Answers `call` again every watch interval and streams each new result
/// as a server-sent event, until the client goes away.
fn watch(mut writer: TcpStream, call: Call, shared: &Shared) {
    let id = call.id.clone().unwrap_or(Value::Null);
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
        // What changed since the last answer (methods::watch_delta), or
        // the error.
        let message = match result {
            Ok(now) => {
                let delta = crate::methods::watch_delta(&call.method, last.as_ref(), &now);
                last = Some(now);
                delta.map(|d| rpc::response(id.clone(), Ok(d)))
            }
            Err(e) => Some(rpc::response(id.clone(), Err(e))),
        };
        if let Some(message) = message {
            let line = format!("data: {message}\n\n");
            if writer
                .write_all(line.as_bytes())
                .and_then(|()| writer.flush())
                .is_err()
            {
                return;
            }
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
