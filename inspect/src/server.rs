//! The network side: threads that read HTTP requests, decode them and
//! queue the calls for the game thread, then write the answers. Nothing
//! here touches the world.

use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::rpc::{self, Body, Call, RpcError, codes};

/// The page, embedded in the binary.
const PAGE: &str = include_str!("page.html");

/// How long a request waits for the game thread before it is answered
/// with an error (a paused debugger, a long loading screen).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send its whole request (head and body):
/// one deadline, not a timeout per read, so a byte a second does not keep
/// a connection alive.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// How long writing an answer may block on a client that does not read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Most connections still sending their request. When full, a new
/// connection evicts the oldest one of the peer holding the most, so idle
/// or slow clients cannot lock others out: a real client sends its request
/// at once and is past this stage within a millisecond.
const MAX_READING: usize = 32;

/// Most requests read and waiting for (or receiving) their answer.
const MAX_ANSWERING: usize = 64;

/// Most watch streams open at once (counted apart from requests).
const MAX_WATCHES: usize = 16;

/// The methods a watch may repeat and a request without the same-origin
/// proof may call: none of them changes the world. Every other method
/// (unknown ones included) is treated as a write.
pub(crate) const READ_METHODS: &[&str] = &[
    "world.query",
    "world.get_components",
    "world.list_components",
    "world.get_resources",
    "world.list_resources",
    "world.overview",
    "world.entity_info",
    "world.find",
    "world.hierarchy",
    "schedule.graph",
    "schedule.list",
    "registry.schema",
    "rpc.discover",
];

/// True if `method` only reads.
pub(crate) fn is_read(method: &str) -> bool {
    READ_METHODS.contains(&method)
}

/// Largest request head (request line and headers).
const MAX_HEAD: usize = 16 * 1024;

/// A result as the game thread hands it over: a value, or JSON text
/// already written (`world.query`'s rows, written on the game thread
/// without a `Value` tree and spliced into the response here, on the
/// server's thread).
pub(crate) enum Output {
    Json(Value),
    /// Valid JSON text.
    Text(String),
}

impl Output {
    /// The result as a value (parsed, for a watch comparing answers).
    pub(crate) fn into_value(self) -> Value {
        match self {
            Output::Json(value) => value,
            Output::Text(text) => serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }
}

/// An answer: the result, and members added to the response object
/// (`truncated` and `next` when `world.query` cut at its default limit).
pub(crate) type Reply = (
    Result<Output, RpcError>,
    Option<serde_json::Map<String, Value>>,
);

/// A call waiting for the game thread, and where its answer goes.
pub(crate) struct Job {
    pub call: Call,
    pub reply: Sender<Reply>,
}

impl Job {
    /// A job whose answer goes nowhere (for calls answered in place).
    pub(crate) fn detached(call: Call) -> (Job, Receiver<Reply>) {
        let (reply, answer) = mpsc::channel();
        (Job { call, reply }, answer)
    }
}

/// The response object's text for `reply`.
pub(crate) fn response(id: Value, reply: Reply) -> String {
    let (result, extra) = reply;
    let text = match result {
        Ok(Output::Text(text)) => {
            // `{"jsonrpc":"2.0","id":…,"result":<text>,…extra}`, the
            // rows' text copied once.
            let mut out = String::with_capacity(text.len() + 64);
            out.push_str(r#"{"jsonrpc":"2.0","id":"#);
            out.push_str(&id.to_string());
            out.push_str(r#","result":"#);
            out.push_str(&text);
            for (key, value) in extra.iter().flatten() {
                out.push(',');
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                out.push_str(&value.to_string());
            }
            out.push('}');
            return out;
        }
        Ok(Output::Json(value)) => rpc::response(id, Ok(value)),
        Err(error) => rpc::response(id, Err(error)),
    };
    let mut response = text;
    if let (Some(extra), Some(object)) = (extra, response.as_object_mut()) {
        object.extend(extra);
    }
    response.to_string()
}

/// A connection still sending its request: evicted by shutting it down.
struct Reading {
    id: u64,
    peer: IpAddr,
    since: Instant,
    stream: TcpStream,
}

/// What the network threads share.
pub(crate) struct Shared {
    pub jobs: Sender<Job>,
    pub shutdown: AtomicBool,
    /// Requests read and being answered.
    pub in_flight: AtomicUsize,
    /// Open watch streams.
    pub watches: AtomicUsize,
    /// Connections still sending their request.
    reading: Mutex<Vec<Reading>>,
    pub token: Option<String>,
    pub max_body: usize,
    pub watch_interval: Duration,
    pub loopback: bool,
}

impl Shared {
    /// What the network threads share, with no connection yet.
    pub(crate) fn new(
        jobs: Sender<Job>,
        token: Option<String>,
        max_body: usize,
        watch_interval: Duration,
        loopback: bool,
    ) -> Shared {
        Shared {
            jobs,
            shutdown: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            watches: AtomicUsize::new(0),
            reading: Mutex::new(Vec::new()),
            token,
            max_body,
            watch_interval,
            loopback,
        }
    }

    /// Registers a connection as reading its request, evicting the oldest
    /// one of the busiest peer if the pool is full.
    fn start_reading(&self, id: u64, peer: IpAddr, stream: &TcpStream) {
        let Ok(clone) = stream.try_clone() else {
            return;
        };
        let mut reading = self.reading.lock().unwrap_or_else(PoisonError::into_inner);
        if reading.len() >= MAX_READING {
            let busiest = reading
                .iter()
                .map(|r| r.peer)
                .max_by_key(|&p| reading.iter().filter(|r| r.peer == p).count());
            let victim = reading
                .iter()
                .enumerate()
                .filter(|(_, r)| Some(r.peer) == busiest)
                .min_by_key(|(_, r)| r.since)
                .map(|(i, _)| i);
            if let Some(victim) = victim {
                let evicted = reading.swap_remove(victim);
                let _ = evicted.stream.shutdown(Shutdown::Both);
            }
        }
        reading.push(Reading {
            id,
            peer,
            since: Instant::now(),
            stream: clone,
        });
    }

    /// The connection `id` has sent its request (or gave up).
    fn done_reading(&self, id: u64) {
        let mut reading = self.reading.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = reading.iter().position(|r| r.id == id) {
            reading.swap_remove(at);
        }
    }
}

/// A slot in a bounded pool, given back when dropped.
struct Slot<'a>(&'a AtomicUsize);

impl<'a> Slot<'a> {
    fn take(count: &'a AtomicUsize, max: usize) -> Option<Slot<'a>> {
        if count.fetch_add(1, Ordering::AcqRel) >= max {
            count.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot(count))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Starts the accepting thread. Each connection carries one request
/// (`Connection: close`) and is served on a thread of its own. Its stages
/// have pools of their own: reading the request (bounded, oldest evicted
/// when full, one deadline for the whole request), waiting for the answer
/// (bounded, 503 when full) and watch streams (bounded, 503 when full), so
/// slow or idle clients, or many watches, hold up no new request.
pub(crate) fn start(listener: TcpListener, shared: Arc<Shared>) -> io::Result<JoinHandle<()>> {
    thread::Builder::new()
        .name("mosaic-inspect".into())
        .spawn(move || {
            let mut next_id = 0u64;
            for stream in listener.incoming() {
                if shared.shutdown.load(Ordering::Acquire) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let Ok(peer) = stream.peer_addr() else {
                    continue;
                };
                next_id += 1;
                let id = next_id;
                shared.start_reading(id, peer.ip(), &stream);
                let shared2 = Arc::clone(&shared);
                let spawned = thread::Builder::new()
                    .name("mosaic-inspect-request".into())
                    .spawn(move || serve_connection(id, stream, &shared2));
                if spawned.is_err() {
                    shared.done_reading(id);
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

/// Reads into `chunk` before `deadline` (an error once it has passed).
fn read_until(stream: &mut TcpStream, chunk: &mut [u8], deadline: Instant) -> io::Result<usize> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    stream.set_read_timeout(Some(left))?;
    stream.read(chunk)
}

/// Reads the request head before `deadline`; returns it and the body
/// bytes read with it.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<(Request, Vec<u8>), u16> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = read_until(stream, &mut chunk, deadline).map_err(|_| 408u16)?;
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
                // Two different lengths: which one ends the body is
                // ambiguous (request smuggling); RFC 9112 §6.3 says reject.
                let mut length: Option<usize> = None;
                for (_, v) in headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
                {
                    let v: usize = v.parse().map_err(|_| 400u16)?;
                    if length.is_some_and(|l| l != v) {
                        return Err(400);
                    }
                    length = Some(v);
                }
                let length = length.unwrap_or(0);
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
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nContent-Security-Policy: frame-ancestors 'none'\r\nConnection: close\r\n\r\n",
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

fn respond_text(stream: &mut TcpStream, status: u16, body: &str) {
    let _ = respond(stream, status, "application/json", body.as_bytes());
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

/// The host part of a `Host` header: `name`, `name:port`, `[v6]` or
/// `[v6]:port`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) if host[end + 1..].is_empty() || host[end + 1..].starts_with(':') => {
                &host[..=end]
            }
            _ => host,
        };
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// Refuses what must not reach the world: a wrong `Host` on a loopback
/// server (DNS rebinding), a browser's cross-origin or cross-site request,
/// a missing or wrong token.
fn refuse(request: &Request, shared: &Shared) -> Option<(u16, &'static str)> {
    let host = request.header("Host").unwrap_or("");
    if shared.loopback && !matches!(host_name(host), "127.0.0.1" | "localhost" | "[::1]") {
        return Some((403, "the Host header must name the loopback address"));
    }
    if let Some(origin) = request.header("Origin") {
        let own = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if own != Some(host) {
            return Some((403, "cross-origin requests are refused"));
        }
    }
    // Sent by current browsers on every request, `<img>` and `<iframe>`
    // included (which send no `Origin`); `same-site` is another port of
    // the same host, a foreign origin too.
    if let Some(site) = request.header("Sec-Fetch-Site") {
        if !matches!(site, "same-origin" | "none") {
            return Some((403, "cross-site requests are refused"));
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

/// True if the request carries a proof that no cross-origin page can send
/// without a CORS preflight (which this server never answers): the header
/// `X-Mosaic-Inspector`, or a JSON content type (what JSON-RPC libraries
/// send; a form or a no-cors `fetch` can only send `text/plain`,
/// `application/x-www-form-urlencoded` or `multipart/form-data`).
fn same_origin_proof(request: &Request) -> bool {
    if request.header("X-Mosaic-Inspector").is_some() {
        return true;
    }
    request.header("Content-Type").is_some_and(|t| {
        t.split(';')
            .next()
            .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
    })
}

/// The error for a call that may change the world without the proof.
fn write_refused(method: &str) -> RpcError {
    RpcError::new(
        codes::INVALID_REQUEST,
        format!(
            "`{method}` may change the world: send it in a POST with the header `X-Mosaic-Inspector: 1` or `Content-Type: application/json` (a cross-site page cannot)"
        ),
    )
}

/// The error for a watch of a method that may change the world.
fn watch_refused(method: &str) -> RpcError {
    RpcError::new(
        codes::INVALID_REQUEST,
        format!("a watch repeats read methods only; `{method}` may change the world"),
    )
}

fn serve_connection(id: u64, mut stream: TcpStream, shared: &Shared) {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let head = read_head(&mut stream, deadline);
    let (request, mut body) = match head {
        Ok(head) => head,
        Err(status) => {
            shared.done_reading(id);
            let _ = respond(&mut stream, status, "text/plain", reason(status).as_bytes());
            return;
        }
    };
    let path = request.url.split('?').next().unwrap_or("").to_owned();
    if request.method == "GET" && (path == "/" || path == "/index.html") {
        shared.done_reading(id);
        let _ = respond(
            &mut stream,
            200,
            "text/html; charset=utf-8",
            PAGE.as_bytes(),
        );
        return;
    }
    if let Some((status, message)) = refuse(&request, shared) {
        shared.done_reading(id);
        let error = RpcError::new(codes::INVALID_REQUEST, message);
        respond_json(&mut stream, status, &rpc::response(Value::Null, Err(error)));
        return;
    }
    match (request.method.as_str(), path.as_str()) {
        ("POST", "/" | "/jsonrpc") => {
            let read = read_body(&mut stream, &request, &mut body, shared.max_body, deadline);
            shared.done_reading(id);
            if let Err((status, error)) = read {
                respond_json(&mut stream, status, &rpc::response(Value::Null, Err(error)));
                return;
            }
            post(stream, &body, same_origin_proof(&request), shared);
        }
        ("GET", "/watch") => {
            shared.done_reading(id);
            let body = query_param(&request.url, "request").unwrap_or_default();
            match rpc::decode(body.as_bytes(), shared.max_body) {
                Ok(Body::Single(call)) if !is_read(&call.method) => {
                    let error = watch_refused(&call.method);
                    respond_json(
                        &mut stream,
                        400,
                        &rpc::response(call.id.unwrap_or(Value::Null), Err(error)),
                    );
                }
                Ok(Body::Single(call)) => watch(stream, call, shared),
                Ok(Body::Batch(_)) => {
                    let error = RpcError::new(codes::INVALID_REQUEST, "a watch takes one call");
                    respond_json(&mut stream, 400, &rpc::response(Value::Null, Err(error)));
                }
                Err((id, error)) => respond_json(&mut stream, 400, &rpc::response(id, Err(error))),
            }
        }
        _ => {
            shared.done_reading(id);
            let _ = respond(&mut stream, 404, "text/plain", b"not found");
        }
    }
}

/// Reads the rest of the body before `deadline`, refusing one over `max`
/// bytes without reading it.
fn read_body(
    stream: &mut TcpStream,
    request: &Request,
    body: &mut Vec<u8>,
    max: usize,
    deadline: Instant,
) -> Result<(), (u16, RpcError)> {
    if request.length > max || body.len() > max {
        return Err((
            413,
            RpcError::new(
                codes::INVALID_REQUEST,
                format!("request body exceeds the limit of {max} bytes"),
            ),
        ));
    }
    let start = body.len().min(request.length);
    body.resize(request.length, 0);
    let mut at = start;
    while at < request.length {
        match read_until(stream, &mut body[at..], deadline) {
            Ok(0) => {
                return Err((
                    400,
                    RpcError::new(codes::INVALID_REQUEST, "the body ended early"),
                ));
            }
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                return Err((
                    408,
                    RpcError::new(codes::INVALID_REQUEST, "the request was not sent in time"),
                ));
            }
        }
    }
    Ok(())
}

/// Queues a call and waits for the game thread's answer.
fn ask(shared: &Shared, call: Call) -> Reply {
    let (reply, answer) = mpsc::channel();
    if shared.jobs.send(Job { call, reply }).is_err() {
        return (
            Err(RpcError::new(
                codes::INTERNAL_ERROR,
                "the inspector has stopped",
            )),
            None,
        );
    }
    wait(&answer)
}

fn wait(answer: &Receiver<Reply>) -> Reply {
    answer.recv_timeout(ANSWER_TIMEOUT).unwrap_or_else(|_| {
        (
            Err(RpcError::new(
                codes::INTERNAL_ERROR,
                "the program did not answer in time (is it calling Inspector::update each frame?)",
            )),
            None,
        )
    })
}

fn busy(mut stream: TcpStream, what: &str) {
    let error = RpcError::new(
        codes::INTERNAL_ERROR,
        format!("too many {what}; try again later"),
    );
    respond_json(&mut stream, 503, &rpc::response(Value::Null, Err(error)));
}

fn post(mut stream: TcpStream, body: &[u8], proof: bool, shared: &Shared) {
    let decoded = rpc::decode(body, shared.max_body);
    // Writes need the same-origin proof; a batch with one write, too.
    let write = match &decoded {
        Ok(Body::Single(call)) => (!is_read(&call.method)).then_some(call.method.as_str()),
        Ok(Body::Batch(calls)) => calls
            .iter()
            .flatten()
            .find(|call| !is_read(&call.method))
            .map(|call| call.method.as_str()),
        Err(_) => None,
    };
    let watched = matches!(&decoded, Ok(Body::Single(call)) if call.method.ends_with("+watch"));
    if let (Some(method), false, false) = (write, proof, watched) {
        let id = match &decoded {
            Ok(Body::Single(call)) => call.id.clone().unwrap_or(Value::Null),
            _ => Value::Null,
        };
        respond_json(
            &mut stream,
            403,
            &rpc::response(id, Err(write_refused(method))),
        );
        return;
    }
    if watched {
        let Ok(Body::Single(call)) = decoded else {
            return;
        };
        let method = call.method.trim_end_matches("+watch").to_owned();
        if !is_read(&method) {
            let id = call.id.unwrap_or(Value::Null);
            respond_json(
                &mut stream,
                200,
                &rpc::response(id, Err(watch_refused(&method))),
            );
            return;
        }
        watch(stream, Call { method, ..call }, shared);
        return;
    }
    let Some(_slot) = Slot::take(&shared.in_flight, MAX_ANSWERING) else {
        return busy(stream, "requests");
    };
    match decoded {
        Err((id, error)) => respond_json(&mut stream, 200, &rpc::response(id, Err(error))),
        Ok(Body::Single(call)) => {
            let id = call.id.clone();
            let reply = ask(shared, call);
            match id {
                Some(id) => respond_text(&mut stream, 200, &response(id, reply)),
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
            let answers: Vec<String> = pending
                .into_iter()
                .filter_map(|(id, pending)| {
                    let reply = match pending {
                        Ok((true, answer)) => wait(&answer),
                        Ok((false, _)) => (
                            Err(RpcError::new(
                                codes::INTERNAL_ERROR,
                                "the inspector has stopped",
                            )),
                            None,
                        ),
                        Err(error) => (Err(error), None),
                    };
                    id.map(|id| response(id, reply))
                })
                .collect();
            if answers.is_empty() {
                let _ = respond(&mut stream, 204, "text/plain", b"");
            } else {
                respond_text(&mut stream, 200, &format!("[{}]", answers.join(",")));
            }
        }
    }
}

/// Answers `call` (a read method) again every watch interval and streams
/// each new result as a server-sent event, until the client goes away.
fn watch(mut writer: TcpStream, call: Call, shared: &Shared) {
    debug_assert!(is_read(&call.method));
    let Some(_slot) = Slot::take(&shared.watches, MAX_WATCHES) else {
        return busy(writer, "watches");
    };
    let id = call.id.clone().unwrap_or(Value::Null);
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n";
    if writer
        .write_all(head.as_bytes())
        .and_then(|()| writer.flush())
        .is_err()
    {
        return;
    }
    let mut last: Option<Value> = None;
    while !shared.shutdown.load(Ordering::Acquire) {
        let (result, extra) = ask(shared, call.clone());
        let failed = result.is_err();
        // What changed since the last answer (methods::watch_delta), or
        // the error.
        let message = match result {
            Ok(now) => {
                let now = now.into_value();
                let delta = crate::methods::watch_delta(&call.method, last.as_ref(), &now);
                last = Some(now);
                delta.map(|d| response(id.clone(), (Ok(Output::Json(d)), extra)))
            }
            Err(e) => Some(rpc::response(id.clone(), Err(e)).to_string()),
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
