//! A live inspector for the mosaic ECS: look inside a running world from a
//! browser, or from any JSON-RPC client.
//!
//! [`Inspector::serve`] starts a small HTTP server on its own threads. The
//! network threads only read and decode requests and queue them; the game
//! thread answers them when it calls [`Inspector::update`] once a frame (a
//! sync point, between two runs of the schedule), within a time budget per
//! frame ([`InspectorBuilder::budget`]), so the game never waits on the
//! network. With no client connected, `update` costs one empty-queue check.
//!
//! - `GET /` is the inspector page (embedded in the binary): the world's
//!   entity count, archetypes and sparse sets, an entity browser with
//!   component filters, an entity view that edits values, the resources,
//!   the schedule with per-system timings and enable/disable toggles, and
//!   pause/step.
//! - `POST /` takes JSON-RPC 2.0 calls (single or batch), with the method
//!   names and shapes of the Bevy Remote Protocol where the concepts match:
//!   `world.query`, `world.get_components`, `world.insert_components`,
//!   `world.remove_components`, `world.mutate_components`,
//!   `world.list_components`, `world.spawn_entity`, `world.despawn_entity`
//!   (with its `ChildOf` descendants), `world.reparent_entities`,
//!   `world.list_resources`, `world.get_resources`,
//!   `world.insert_resources`, `world.mutate_resources`,
//!   `world.remove_resources`, `registry.schema`, `schedule.list`,
//!   `schedule.graph` (the world's `FixedUpdate` systems, then the frame
//!   schedule's), `rpc.discover`; and mosaic's own `world.overview`,
//!   `world.entity_info`, `world.hierarchy`, `world.find`,
//!   `schedule.set_enabled`, `schedule.pause`, `schedule.step`. Components
//!   and resources are named by registered name or full type path. Other
//!   methods (`world.trigger_event`) answer `method not supported: <name>`.
//!   A method name ending in `+watch` (BRP's form), or
//!   `GET /watch?request=<call as JSON>`, streams server-sent events: for
//!   `world.get_components` the components that changed and the names of
//!   those removed, for `world.list_components` the names added and
//!   removed, for other methods the whole result each time it changes.
//!
//! Component values are read and written through the scene crate's
//! [`TypeRegistry`] (their JSON is their serde form); components whose types are not registered show their name,
//! storage and size. Entities are numbers ([`Entity::to_bits`](mosaic::Entity::to_bits)).
//! Bad JSON, unknown methods, stale entities, values of the wrong shape and
//! oversized bodies get JSON-RPC errors and change nothing.
//!
//! The server binds to `127.0.0.1` unless told otherwise; any other address
//! needs [`InspectorBuilder::allow_remote`] with a token, which every
//! request must then carry (`Authorization: Bearer <token>`, or
//! `?token=<token>`). Requests from other web origins, and, on loopback,
//! with a `Host` other than the loopback address, are refused.
//!
//! A call that may change the world (any method not on the read list:
//! `world.query`, `world.get_components`, `world.list_components`,
//! `world.get_resources`, `world.list_resources`, `world.overview`,
//! `world.entity_info`, `schedule.graph`, `rpc.discover`, …) must come in
//! a `POST` carrying `X-Mosaic-Inspector: 1` or `Content-Type:
//! application/json` (`curl -H 'Content-Type: application/json' -d …`, or
//! any JSON-RPC library); watches (`GET /watch`, `+watch`) serve read
//! methods only.
//!
//! # Threat model
//! Who can reach the port: every process of the machine (loopback); the
//! user's browser, running pages of any origin, which can send requests
//! without reading answers (`<img>`, `<script>`, `<iframe>`, forms,
//! no-cors `fetch`, `EventSource`); pages whose DNS name is rebound to
//! 127.0.0.1; and, bound elsewhere with [`InspectorBuilder::allow_remote`],
//! the network. Local processes are trusted (they can read the game's
//! memory anyway). What each check stops:
//! - `Host` must name the loopback address (on loopback): DNS rebinding.
//! - `Origin`, when sent, must be the server's own, and `Sec-Fetch-Site`,
//!   when sent, `same-origin` or `none`: cross-site requests of browsers.
//! - The same-origin proof for anything that may change the world (a
//!   `POST` with `X-Mosaic-Inspector` or a JSON content type, which no
//!   cross-origin page can send without a CORS preflight, and the server
//!   answers no preflight): writes by foreign pages that send no `Origin`.
//!   Watches serve read methods only, so no `GET` changes anything.
//! - The token: other users of the network when bound elsewhere.
//! - Body, batch and nesting limits: memory and stack exhaustion.
//! - A deadline for the whole request, separate bounded pools for
//!   requests being read (oldest evicted first when full), requests being
//!   answered and watch streams: slow or idle clients starving others.
//! - The per-frame budget ([`InspectorBuilder::budget`]), with
//!   `world.query` built in slices across frames and cut at a default
//!   limit: a client stalling the game.
//! - The page is never framed (`frame-ancestors 'none'`): clickjacking.
//!
//! # Example
//! ```
//! use mosaic::prelude::*;
//! use mosaic::scene::TypeRegistry;
//! use mosaic_inspect::Inspector;
//! use std::time::Duration;
//!
//! #[derive(Component, serde::Serialize, serde::Deserialize)]
//! struct Position { x: f32, y: f32 }
//!
//! let mut registry = TypeRegistry::new();
//! registry.register::<Position>();
//! let mut world = World::new();
//! world.spawn(Position { x: 1.0, y: 2.0 });
//! let mut schedule = Schedule::new();
//!
//! // Port 0: any free port; `url()` says which.
//! let mut inspector = Inspector::builder().registry(registry).serve("127.0.0.1:0").unwrap();
//! println!("inspector at {}", inspector.url());
//! for _ in 0..3 {
//!     // `run_frame` skips the schedule while the page has it paused.
//!     inspector.run_frame(&mut world, &mut schedule, Duration::from_millis(16));
//! }
//! ```

mod methods;
mod rpc;
mod server;

use std::collections::VecDeque;
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mosaic::scene::TypeRegistry;
use mosaic::{Schedule, World};

pub use rpc::codes;

/// The guide's inspector chapter (`docs/guide/src/inspector.md`), compiled
/// here (it needs this crate) so that `cargo test` runs its code blocks.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/src/inspector.md")]
pub struct GuideInspector;

/// Why the inspector could not start.
///
/// # Example
/// ```
/// use mosaic_inspect::{InspectError, Inspector};
/// let err = Inspector::serve("0.0.0.0:0").unwrap_err();
/// assert!(matches!(err, InspectError::RemoteNotAllowed(_)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// The address could not be parsed or resolved.
    #[error("cannot use address `{0}`: {1}")]
    Address(String, String),
    /// A non-loopback address was given without
    /// [`InspectorBuilder::allow_remote`].
    #[error(
        "refusing to listen on non-loopback address {0}: call allow_remote(token) to expose the world to the network"
    )]
    RemoteNotAllowed(SocketAddr),
    /// `allow_remote` was given an empty token.
    #[error("the token for a non-loopback inspector must not be empty")]
    EmptyToken,
    /// The server could not bind or start.
    #[error("cannot start the inspector on {0}: {1}")]
    Bind(String, String),
}

/// Options of an [`Inspector`], ending with [`InspectorBuilder::serve`].
///
/// # Example
/// ```
/// use mosaic_inspect::Inspector;
/// use std::time::Duration;
/// let inspector = Inspector::builder()
///     .budget(Duration::from_millis(1))
///     .max_body(64 * 1024)
///     .serve("127.0.0.1:0")
///     .unwrap();
/// assert!(inspector.url().starts_with("http://127.0.0.1:"));
/// ```
#[derive(Clone, Debug)]
pub struct InspectorBuilder {
    registry: TypeRegistry,
    token: Option<String>,
    remote: bool,
    budget: Duration,
    max_body: usize,
    watch_interval: Duration,
}

impl Default for InspectorBuilder {
    fn default() -> Self {
        InspectorBuilder {
            registry: TypeRegistry::new(),
            token: None,
            remote: false,
            budget: Duration::from_millis(2),
            max_body: 1 << 20,
            watch_interval: Duration::from_millis(100),
        }
    }
}

impl InspectorBuilder {
    /// The types whose values the inspector reads and writes.
    ///
    /// # Example
    /// ```
    /// use mosaic::scene::TypeRegistry;
    /// let builder = mosaic_inspect::Inspector::builder().registry(TypeRegistry::new());
    /// ```
    pub fn registry(mut self, registry: TypeRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// Lets the server listen on a non-loopback address; every request
    /// must then carry `token` (`Authorization: Bearer <token>` or
    /// `?token=<token>`). Anyone who can reach the address and knows the
    /// token can change the world; the traffic is not encrypted.
    ///
    /// # Example
    /// ```
    /// use mosaic_inspect::Inspector;
    /// let inspector = Inspector::builder()
    ///     .allow_remote("s3cret-t0ken")
    ///     .serve("0.0.0.0:0")
    ///     .unwrap();
    /// assert!(inspector.url().ends_with("?token=s3cret-t0ken"));
    /// ```
    pub fn allow_remote(mut self, token: impl Into<String>) -> Self {
        self.remote = true;
        self.token = Some(token.into());
        self
    }

    /// Requires `token` on every request, also on loopback.
    ///
    /// # Example
    /// ```
    /// let inspector = mosaic_inspect::Inspector::builder().token("t").serve("127.0.0.1:0").unwrap();
    /// assert!(inspector.url().ends_with("?token=t"));
    /// ```
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The most time [`Inspector::update`] spends answering requests in one
    /// frame (default 2 ms); what is left waits for the next frame. At
    /// least one request is answered per frame.
    ///
    /// # Example
    /// ```
    /// let builder = mosaic_inspect::Inspector::builder().budget(std::time::Duration::from_micros(500));
    /// ```
    pub fn budget(mut self, budget: Duration) -> Self {
        self.budget = budget;
        self
    }

    /// The largest request body accepted, in bytes (default 1 MiB).
    ///
    /// # Example
    /// ```
    /// let builder = mosaic_inspect::Inspector::builder().max_body(4096);
    /// ```
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// How often a watch re-reads its value (default 100 ms).
    ///
    /// # Example
    /// ```
    /// let builder = mosaic_inspect::Inspector::builder()
    ///     .watch_interval(std::time::Duration::from_millis(250));
    /// ```
    pub fn watch_interval(mut self, interval: Duration) -> Self {
        self.watch_interval = interval;
        self
    }

    /// Starts the server on `addr` (e.g. `"127.0.0.1:15702"`, BRP's port,
    /// or `("127.0.0.1", 0)`; port 0 picks a free one).
    ///
    /// # Example
    /// ```
    /// let inspector = mosaic_inspect::Inspector::builder().serve(("127.0.0.1", 0)).unwrap();
    /// assert_ne!(inspector.local_addr().port(), 0);
    /// let err = mosaic_inspect::Inspector::serve("not an address").unwrap_err();
    /// assert!(matches!(err, mosaic_inspect::InspectError::Address(..)));
    /// ```
    pub fn serve(self, addr: impl ToSocketAddrs + fmt::Debug) -> Result<Inspector, InspectError> {
        let shown = format!("{addr:?}").trim_matches('"').to_owned();
        let addr = addr
            .to_socket_addrs()
            .map_err(|e| InspectError::Address(shown.clone(), e.to_string()))?
            .next()
            .ok_or_else(|| InspectError::Address(shown.clone(), "no address".into()))?;
        let shown = addr.to_string();
        let loopback = addr.ip().is_loopback();
        if !loopback {
            if !self.remote {
                return Err(InspectError::RemoteNotAllowed(addr));
            }
            if self.token.as_deref().is_none_or(str::is_empty) {
                return Err(InspectError::EmptyToken);
            }
        }
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| InspectError::Bind(shown.clone(), e.to_string()))?;
        let local = listener
            .local_addr()
            .map_err(|e| InspectError::Bind(shown.clone(), e.to_string()))?;
        let (jobs, queue) = mpsc::channel();
        let shared = Arc::new(server::Shared::new(
            jobs,
            self.token.clone(),
            self.max_body,
            self.watch_interval,
            loopback,
        ));
        let thread = server::start(listener, Arc::clone(&shared))
            .map_err(|e| InspectError::Bind(shown, e.to_string()))?;
        Ok(Inspector {
            url: server::url(local, self.token.as_deref()),
            addr: local,
            shared,
            thread: Some(thread),
            queue,
            state: State {
                registry: self.registry,
                paused: false,
                steps: 0,
                frame: 0,
                timing_ours: false,
                last_request: None,
            },
            budget: self.budget,
            slicing: VecDeque::new(),
        })
    }
}

/// A `world.query` answered in slices across frames, each within the
/// frame's budget, resumed from the next match. The world may change
/// between slices (the schedule runs), so a sliced answer is not a
/// snapshot: an entity that changes archetype meanwhile may be missed or
/// listed twice.
struct Slicing {
    job: server::Job,
    /// The answer's JSON text so far: `[` and the rows built.
    rows: String,
    /// The next match to build.
    offset: usize,
    /// Rows still wanted.
    left: usize,
}

impl Slicing {
    /// The query `job` asks, or its parameters' error.
    fn new(job: server::Job) -> Result<Slicing, Box<(server::Job, rpc::RpcError)>> {
        match methods::query_window(&job.call.params) {
            Ok((offset, left)) => Ok(Slicing {
                job,
                rows: String::from("["),
                offset,
                left,
            }),
            Err(error) => Err(Box::new((job, error))),
        }
    }

    /// Builds rows until `deadline` (at least one); the answer once done.
    fn step(
        &mut self,
        world: &mut World,
        registry: &TypeRegistry,
        deadline: Option<Instant>,
    ) -> Option<server::Reply> {
        world.flush();
        let params = &self.job.call.params;
        let slice = methods::query(
            world,
            registry,
            params,
            self.offset,
            self.left,
            deadline,
            &mut self.rows,
        );
        match slice {
            Err(error) => Some((Err(error), None)),
            Ok(slice) => {
                self.offset += slice.rows;
                self.left -= slice.rows;
                if slice.more && self.left > 0 {
                    return None;
                }
                let mut rows = std::mem::take(&mut self.rows);
                rows.push(']');
                let rows = server::Output::Text(rows);
                // Cut by the limit with matches left: say where to go on.
                let extra = slice.more.then(|| {
                    let mut extra = serde_json::Map::new();
                    extra.insert("truncated".into(), true.into());
                    extra.insert("next".into(), serde_json::json!({ "offset": self.offset }));
                    extra
                });
                Some((Ok(rows), extra))
            }
        }
    }
}

/// What the game thread keeps between frames.
pub(crate) struct State {
    pub registry: TypeRegistry,
    pub paused: bool,
    /// Frames to run while paused.
    pub steps: u64,
    /// Frames run through [`Inspector::run_frame`].
    pub frame: u64,
    /// True if the inspector switched the schedule's timing on (and so
    /// switches it off again when clients leave).
    pub timing_ours: bool,
    pub last_request: Option<Instant>,
}

/// How long after the last request timing stays on.
const CLIENT_IDLE: Duration = Duration::from_secs(5);

/// A live inspector: an HTTP server on its own threads, answered by the
/// game thread through [`Inspector::update`]. Dropping it stops the server.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic_inspect::Inspector;
/// let mut world = World::new();
/// let mut schedule = Schedule::new();
/// let mut inspector = Inspector::serve("127.0.0.1:0").unwrap();
/// // Once a frame, after the schedule ran:
/// schedule.run(&mut world);
/// inspector.update(&mut world, &mut schedule);
/// ```
pub struct Inspector {
    url: String,
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    thread: Option<JoinHandle<()>>,
    queue: Receiver<server::Job>,
    state: State,
    budget: Duration,
    /// Queries being answered across frames, oldest first.
    slicing: VecDeque<Slicing>,
}

impl fmt::Debug for Inspector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inspector")
            .field("addr", &self.addr)
            .field("paused", &self.state.paused)
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl Inspector {
    /// Starts an inspector on `addr` with default options and no
    /// registered types (see [`Inspector::builder`]). A non-loopback
    /// address is refused.
    ///
    /// # Example
    /// ```
    /// let inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// println!("open {}", inspector.url());
    /// ```
    pub fn serve(addr: impl ToSocketAddrs + fmt::Debug) -> Result<Inspector, InspectError> {
        InspectorBuilder::default().serve(addr)
    }

    /// Options: registry, token, time budget, body limit.
    ///
    /// # Example
    /// ```
    /// let inspector = mosaic_inspect::Inspector::builder().serve("127.0.0.1:0").unwrap();
    /// ```
    pub fn builder() -> InspectorBuilder {
        InspectorBuilder::default()
    }

    /// The page's address (with the token, if one is required).
    ///
    /// # Example
    /// ```
    /// let inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// assert!(inspector.url().starts_with("http://127.0.0.1:"));
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address the server listens on (the real port if 0 was asked).
    ///
    /// # Example
    /// ```
    /// let inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// assert!(inspector.local_addr().ip().is_loopback());
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the registry the inspector reads values through.
    ///
    /// # Example
    /// ```
    /// let mut inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// inspector.set_registry(mosaic::scene::TypeRegistry::new());
    /// ```
    pub fn set_registry(&mut self, registry: TypeRegistry) {
        self.state.registry = registry;
    }

    /// True while a client has the game paused (`schedule.pause`).
    ///
    /// # Example
    /// ```
    /// let inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// assert!(!inspector.is_paused());
    /// ```
    pub fn is_paused(&self) -> bool {
        self.state.paused
    }

    /// Pauses or resumes, as the page's pause button does.
    ///
    /// # Example
    /// ```
    /// let mut inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// inspector.set_paused(true);
    /// assert!(!inspector.should_run_frame());
    /// ```
    pub fn set_paused(&mut self, paused: bool) {
        self.state.paused = paused;
        if !paused {
            self.state.steps = 0;
        }
    }

    /// True if the game should run a frame now: not paused, or paused with
    /// a step requested (`schedule.step`, which this consumes). A loop that
    /// runs its schedule itself asks this first.
    ///
    /// # Example
    /// ```
    /// let mut inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// assert!(inspector.should_run_frame());
    /// ```
    pub fn should_run_frame(&mut self) -> bool {
        if !self.state.paused {
            return true;
        }
        if self.state.steps > 0 {
            self.state.steps -= 1;
            return true;
        }
        false
    }

    /// One frame of a game loop with the inspector: runs the schedule
    /// ([`Schedule::run_frame`]) unless paused, then answers requests
    /// ([`Inspector::update`]). Returns true if the schedule ran.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let (mut world, mut schedule) = (World::new(), Schedule::new());
    /// let mut inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// assert!(inspector.run_frame(&mut world, &mut schedule, Duration::from_millis(16)));
    /// assert_eq!(world.resource::<Time>().frame(), 1);
    /// ```
    pub fn run_frame(
        &mut self,
        world: &mut World,
        schedule: &mut Schedule,
        delta: Duration,
    ) -> bool {
        let ran = self.should_run_frame();
        if ran {
            schedule.run_frame(world, delta);
            self.state.frame += 1;
        }
        self.update(world, schedule);
        ran
    }

    /// Answers the queued requests, within the frame's time budget: call it
    /// once a frame, at a point where no system runs (after
    /// [`Schedule::run`]). With nothing queued it returns at once.
    ///
    /// While clients are connected the schedule's per-system timing is
    /// switched on (and off again a few seconds after the last request, if
    /// the inspector switched it on).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let (mut world, mut schedule) = (World::new(), Schedule::new());
    /// let mut inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// inspector.update(&mut world, &mut schedule);
    /// ```
    pub fn update(&mut self, world: &mut World, schedule: &mut Schedule) {
        self.answer(world, Some(schedule));
    }

    /// [`Inspector::update`] for a program without a [`Schedule`]: the
    /// schedule methods answer with an error.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let mut inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// inspector.update_world(&mut world);
    /// ```
    pub fn update_world(&mut self, world: &mut World) {
        self.answer(world, None);
    }

    /// Answers a JSON-RPC request body (one call or a batch) here and now,
    /// without the network: what a request to the server would get. For
    /// tests, scripts, or another transport. Notifications get no answer
    /// (an empty string if nothing is left to answer).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.spawn(());
    /// let mut inspector = mosaic_inspect::Inspector::serve("127.0.0.1:0").unwrap();
    /// let answer = inspector.answer_json(
    ///     &mut world,
    ///     None,
    ///     r#"{"jsonrpc": "2.0", "id": 1, "method": "world.overview"}"#,
    /// );
    /// assert!(answer.contains(r#""entities":1"#));
    /// ```
    pub fn answer_json(
        &mut self,
        world: &mut World,
        mut schedule: Option<&mut Schedule>,
        request: &str,
    ) -> String {
        let url = &self.url;
        let state = &mut self.state;
        let mut one = |call: &rpc::Call, schedule: Option<&mut Schedule>| {
            let reply = if call.method == "world.query" {
                let (job, _) = server::Job::detached(call.clone());
                match Slicing::new(job) {
                    Ok(mut slicing) => slicing
                        .step(world, &state.registry, None)
                        .unwrap_or((Ok(server::Output::Json(serde_json::Value::Null)), None)),
                    Err(refused) => (Err(refused.1), None),
                }
            } else {
                (
                    methods::call(call, world, schedule, state, url).map(server::Output::Json),
                    None,
                )
            };
            call.id.clone().map(|id| server::response(id, reply))
        };
        let answer = match rpc::decode(request.as_bytes(), self.shared.max_body) {
            Err((id, error)) => Some(rpc::response(id, Err(error)).to_string()),
            Ok(rpc::Body::Single(call)) => one(&call, schedule),
            Ok(rpc::Body::Batch(calls)) => {
                let answers: Vec<String> = calls
                    .iter()
                    .filter_map(|call| match call {
                        Ok(call) => one(call, schedule.as_deref_mut()),
                        Err((id, error)) => {
                            Some(rpc::response(id.clone(), Err(error.clone())).to_string())
                        }
                    })
                    .collect();
                (!answers.is_empty()).then(|| format!("[{}]", answers.join(",")))
            }
        };
        answer.unwrap_or_default()
    }

    #[inline]
    fn answer(&mut self, world: &mut World, mut schedule: Option<&mut Schedule>) {
        let first = if self.slicing.is_empty() {
            match self.queue.try_recv() {
                Ok(job) => Some(job),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => {
                    if self.state.timing_ours {
                        self.idle_check(world, schedule);
                    }
                    return;
                }
            }
        } else {
            None
        };
        let started = Instant::now();
        let deadline = started + self.budget;
        self.state.last_request = Some(started);
        if let Some(schedule) = schedule.as_deref_mut() {
            if !schedule.is_timing() {
                schedule.set_timing(true);
                set_fixed_timing(world, true);
                self.state.timing_ours = true;
            }
        }
        // Queries under way first, with half the budget while calls wait,
        // so neither starves the other; then the queued calls (at least
        // one a frame); then the queries again with what is left.
        if first.is_none() {
            let half = started + self.budget / 2;
            self.slice(world, half, true);
        }
        let mut next = first;
        loop {
            let job = match next.take() {
                Some(job) => job,
                None if Instant::now() >= deadline => break,
                None => match self.queue.try_recv() {
                    Ok(job) => job,
                    Err(_) => break,
                },
            };
            if job.call.method == "world.query" {
                match Slicing::new(job) {
                    Ok(slicing) => self.slicing.push_back(slicing),
                    Err(refused) => {
                        let (job, error) = *refused;
                        let _ = job.reply.send((Err(error), None));
                    }
                }
                continue;
            }
            let result = methods::call(
                &job.call,
                world,
                schedule.as_deref_mut(),
                &mut self.state,
                &self.url,
            );
            let _ = job.reply.send((result.map(server::Output::Json), None));
        }
        self.slice(world, deadline, false);
    }

    /// Steps the queries under way until `deadline`, round robin; with
    /// `at_least_one`, one slice even if the deadline has passed.
    fn slice(&mut self, world: &mut World, deadline: Instant, mut at_least_one: bool) {
        while let Some(mut slicing) = self.slicing.pop_front() {
            if !at_least_one && Instant::now() >= deadline {
                self.slicing.push_front(slicing);
                return;
            }
            at_least_one = false;
            match slicing.step(world, &self.state.registry, Some(deadline)) {
                Some(reply) => {
                    let _ = slicing.job.reply.send(reply);
                }
                None => self.slicing.push_back(slicing),
            }
        }
    }

    #[cold]
    fn idle_check(&mut self, world: &mut World, schedule: Option<&mut Schedule>) {
        let idle = self
            .state
            .last_request
            .is_none_or(|at| at.elapsed() > CLIENT_IDLE);
        if let (true, Some(schedule)) = (idle, schedule) {
            schedule.set_timing(false);
            set_fixed_timing(world, false);
            self.state.timing_ours = false;
        }
    }
}

/// Timing of the world's fixed-step schedule, if it has one, follows the
/// frame schedule's (never making one).
fn set_fixed_timing(world: &mut World, on: bool) {
    if world.get_schedule(mosaic::FixedUpdate).is_some() {
        world.schedule_mut(mosaic::FixedUpdate).set_timing(on);
    }
}

impl Drop for Inspector {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        // Wake the accepting thread, which then sees the flag.
        let wake = match self.addr {
            SocketAddr::V4(a) if a.ip().is_unspecified() => {
                SocketAddr::from(([127, 0, 0, 1], a.port()))
            }
            SocketAddr::V6(a) if a.ip().is_unspecified() => {
                SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, a.port()))
            }
            other => other,
        };
        let _ = std::net::TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
