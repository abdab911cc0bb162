//! The interpreter behind the `world_ops` fuzz target, shared with the
//! regression replay in `tests/fuzz_regress.rs` (which includes this file
//! with `#[path]`).
//!
//! [`run_bytes`] decodes a byte string into a sequence of [`Op`]s with
//! `arbitrary` and runs each one both on a [`World`] and on a plain model: a
//! map from entity to one optional value per component type, plus the ids
//! reserved but not yet flushed, the commands recorded but not yet applied,
//! and a log of add/change events for `Added`/`Changed` filters.
//!
//! After every operation the world must agree with the model: `len`,
//! `is_empty`, the number of live values of the drop-counted types
//! (constructions minus drops, counted per thread), and `contains`, `get`
//! and `has` of every component (error variants and alignment included) of
//! each entity the operation picked or whose model state changed. Every
//! [`FULL_CHECK_EVERY`] operations, `check_invariants()` and a rotating
//! sample of the handles ever seen; after the last operation (and after an
//! injected panic), the full check: `check_invariants()` and every handle
//! ever seen (stale ones included, plus one that never existed). At the end
//! the world is dropped and, per type, drops must equal constructions.
//!
//! The model, its components, queries, operations and checks are
//! `src/world_model.rs`, shared with the proptest model test
//! (`tests/model.rs`); this file holds what is the fuzz target's own: the
//! operations as `arbitrary` decodes them, the checking schedule above, and
//! the injected panics below. Handles come from the live set, from every
//! handle ever seen (stale and reserved ones), or are forged from raw bits.

#[path = "world_model.rs"]
mod world_model;

use std::cell::Cell;
use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
use mosaic::prelude::*;

use world_model::*;
// The model's lifecycle log entry, not the prelude's `Event` trait.
use world_model::Event;
pub use world_model::{CmdOp, Who};

/// Longest operation sequence run from one input.
pub const MAX_OPS: usize = 160;
/// Most commands one `Op::Sys` records.
const MAX_SYS_COMMANDS: usize = 16;
/// Most entities one `spawn_batch` spawns.
const MAX_BATCH: u8 = 9;
/// Largest single `advance_change_tick` step.
const MAX_ADVANCE: u32 = 1 << 31;
/// Bundle kinds a byte decodes to as `kind % FUZZ_KINDS`: the model's
/// first 15, the ones the committed corpus was found with.
const FUZZ_KINDS: u8 = 15;
/// Component slots a byte decodes to as `comp % FUZZ_COMPS`: the model's
/// first six, for the same reason.
const FUZZ_COMPS: u8 = 6;

/// The first of the bytes that reach the model's kinds and slots past
/// [`FUZZ_KINDS`] and [`FUZZ_COMPS`]: `EXTRA_BYTES + i` is the `i`-th of them.
/// Every other byte decodes as it always did, so the committed corpus
/// keeps its meaning: no input in it holds a kind byte in
/// `EXTRA_BYTES..EXTRA_BYTES + 7` or a slot byte in `EXTRA_BYTES..EXTRA_BYTES + 2` (checked when
/// this was added; the top bytes, 255 above all, are common there).
const EXTRA_BYTES: u8 = 224;

/// The bundle kind byte `kind` stands for (see [`EXTRA_BYTES`]).
fn fuzz_kind(kind: u8) -> u8 {
    match kind.wrapping_sub(EXTRA_BYTES) {
        k if k < KINDS as u8 - FUZZ_KINDS => FUZZ_KINDS + k,
        _ => kind % FUZZ_KINDS,
    }
}

/// The component slot byte `comp` stands for (see [`EXTRA_BYTES`]): 224 is
/// `Pod`, 225 `ZPod`.
fn fuzz_comp(comp: u8) -> u8 {
    match comp.wrapping_sub(EXTRA_BYTES) {
        k if k < N as u8 - FUZZ_COMPS => FUZZ_COMPS + k,
        _ => comp % FUZZ_COMPS,
    }
}

// ----- injected panics -------------------------------------------------------------------
//
// Three more component types, outside the model's slots: `Hk` (table, its
// hooks and an `OnAdd` observer may panic, requires `Df`), `Df` (its
// `Default`, used for the requirement, may panic) and `Bm` (sparse, its
// `Drop` may panic). `Op::Arm` picks one site and a countdown; the site's
// next hits count it down and the one at zero panics, once. After a step
// an injected panic interrupted, the harness checks what every panic must
// leave true (`check_invariants`, no value dropped twice, none leaked:
// constructions minus drops equal the values the world holds, for the nine
// counted types) and then takes the world's state as the model's.

/// The message of every injected panic (kept by the wrappers that re-raise
/// a panic with context, such as a system's name).
pub const INJECTED: &str = "injected panic (world_ops)";

/// Where an armed panic strikes.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// `Hk`'s `on_add` hook.
    OnAdd,
    /// `Hk`'s `on_insert` hook.
    OnInsert,
    /// `Hk`'s `on_remove` hook.
    OnRemove,
    /// The `OnAdd<Hk>` observer.
    Observer,
    /// `Df::default()`, run for the requirement `Hk -> Df`.
    Default,
    /// `Bm`'s `Drop`.
    Drop,
    /// `Hk`'s `Clone` (`clone_entity`).
    Clone,
}

thread_local! {
    static ARMED: Cell<Option<(Site, u8)>> = const { Cell::new(None) };
    /// The `OnUnrelate<ChildOf>` observer's armed panic: calls left.
    static ARMED_UNRELATE: Cell<Option<u8>> = const { Cell::new(None) };
    /// True once that panic struck in the current step.
    static UNRELATE_FIRED: Cell<bool> = const { Cell::new(false) };
    /// The site that panicked during the current step.
    static FIRED: Cell<Option<Site>> = const { Cell::new(None) };
    /// Constructions and drops of `Hk`, `Df`, `Bm`.
    static EXTRA: Cell<([u64; 3], [u64; 3])> = const { Cell::new(([0; 3], [0; 3])) };
    /// Set while a step spawns `Hk` with `Bm`: `Hk`'s `on_add` checks
    /// that it sees `Bm` too.
    static EXPECT_BM: Cell<bool> = const { Cell::new(false) };
    /// Every site that panicked in the last case run, in order.
    static FIRED_LOG: std::cell::RefCell<Vec<Site>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The sites whose armed panic struck in the last case run, in order.
#[allow(dead_code)] // used by tests/fuzz_regress.rs, not the fuzz target
pub fn sites_fired() -> Vec<Site> {
    FIRED_LOG.with(|l| l.borrow().clone())
}

fn maybe_panic(site: Site) {
    let Some((armed, left)) = ARMED.with(Cell::get) else {
        return;
    };
    if armed != site {
        return;
    }
    if left > 0 {
        ARMED.with(|a| a.set(Some((armed, left - 1))));
        return;
    }
    ARMED.with(|a| a.set(None));
    FIRED.with(|f| f.set(Some(site)));
    FIRED_LOG.with(|l| l.borrow_mut().push(site));
    panic!("{INJECTED}: {site:?}");
}

/// The `OnUnrelate<ChildOf>` observer's panic, when armed (reported as an
/// observer's, `Site::Observer`: `Site` keeps its variants, so the corpus's
/// `Arm` ops keep their meaning).
fn maybe_panic_unrelate() {
    let Some(left) = ARMED_UNRELATE.with(Cell::get) else {
        return;
    };
    if left > 0 {
        ARMED_UNRELATE.with(|a| a.set(Some(left - 1)));
        return;
    }
    ARMED_UNRELATE.with(|a| a.set(None));
    UNRELATE_FIRED.with(|f| f.set(true));
    FIRED.with(|f| f.set(Some(Site::Observer)));
    FIRED_LOG.with(|l| l.borrow_mut().push(Site::Observer));
    panic!("{INJECTED}: OnUnrelate<ChildOf> observer");
}

/// Runs a despawn step (`f` updates the model before the world's call).
/// If only the `OnUnrelate<ChildOf>` observer panicked, the sweep must
/// have finished anyway: every entity the model has dead is dead in the
/// world and every one it has alive is alive, and both ends of every edge
/// agree; then the panic goes on (and the run resyncs as after any).
fn sweep_checked(c: &mut Case<Extras>, f: impl FnOnce(&mut Case<Extras>)) {
    UNRELATE_FIRED.with(|u| u.set(false));
    let fired_before = FIRED_LOG.with(|l| l.borrow().len());
    let known: Vec<Entity> = c.model.live.keys().copied().collect();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(c)));
    let Err(payload) = result else { return };
    // A value's `Drop` panicking does not keep its entity either; a hook
    // (`on_remove`) does, so then nothing is checked here.
    let benign = FIRED_LOG.with(|l| {
        l.borrow()[fired_before..]
            .iter()
            .all(|s| matches!(s, Site::Observer | Site::Drop))
    });
    if UNRELATE_FIRED.with(Cell::get) && benign && payload_message(&*payload).contains(INJECTED) {
        c.world.check_invariants();
        for e in known {
            assert_eq!(
                c.world.contains(e),
                c.model.live.contains_key(&e),
                "after a panicking OnUnrelate observer, the sweep left {e:?} wrong"
            );
        }
    }
    std::panic::resume_unwind(payload);
}

fn count_extra(i: usize, made: bool) {
    EXTRA.with(|c| {
        let (mut m, mut d) = c.get();
        if made {
            m[i] += 1;
        } else {
            d[i] += 1;
        }
        c.set((m, d));
    });
}

/// Live `Hk`, `Df`, `Bm` values: constructions minus drops.
fn extra_live() -> [u64; 3] {
    let (m, d) = EXTRA.with(Cell::get);
    std::array::from_fn(|i| {
        assert!(d[i] <= m[i], "extra type {i} dropped more often than made");
        m[i] - d[i]
    })
}

#[derive(Component)]
#[component(on_add = hk_on_add, on_insert = hk_on_insert, on_remove = hk_on_remove)]
struct Hk(#[allow(dead_code)] Box<u32>);

impl Hk {
    fn new(v: u32) -> Hk {
        count_extra(0, true);
        Hk(Box::new(v))
    }
}

impl Drop for Hk {
    fn drop(&mut self) {
        count_extra(0, false);
    }
}

impl Clone for Hk {
    fn clone(&self) -> Hk {
        maybe_panic(Site::Clone);
        Hk::new(*self.0)
    }
}

fn hk_on_add(w: DeferredWorld, e: Entity) {
    // Requirements arrive in the same change as the component needing
    // them, before any hook runs (#17).
    assert!(
        w.get::<Df>(e).is_ok(),
        "on_add of Hk ran before its required Df was added"
    );
    // The whole spawn is there before any hook runs (#39).
    if EXPECT_BM.with(Cell::get) {
        assert!(
            w.get::<Bm>(e).is_ok(),
            "on_add of Hk saw the entity without its Bm"
        );
    }
    maybe_panic(Site::OnAdd);
}

fn hk_on_insert(_: DeferredWorld, _: Entity) {
    maybe_panic(Site::OnInsert);
}

fn hk_on_remove(w: DeferredWorld, e: Entity) {
    assert!(w.get::<Hk>(e).is_ok(), "Hk is readable in its on_remove");
    maybe_panic(Site::OnRemove);
}

#[derive(Component)]
struct Df(#[allow(dead_code)] Box<u8>);

impl Default for Df {
    fn default() -> Df {
        maybe_panic(Site::Default);
        count_extra(1, true);
        Df(Box::new(7))
    }
}

impl Drop for Df {
    fn drop(&mut self) {
        count_extra(1, false);
    }
}

#[derive(Component)]
#[component(storage = "sparse")]
struct Bm(#[allow(dead_code)] Box<u16>);

impl Bm {
    fn new() -> Bm {
        count_extra(2, true);
        Bm(Box::new(3))
    }
}

impl Drop for Bm {
    fn drop(&mut self) {
        // Counted first: the value is gone even if its `Drop` panics.
        count_extra(2, false);
        maybe_panic(Site::Drop);
    }
}

/// Installs (once per process) a panic hook that keeps injected panics
/// quiet and hands every other panic to the hook before it (libFuzzer's,
/// which aborts: a real failure stays a crash).
fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !message.contains(INJECTED) {
                previous(info);
            }
        }));
    });
}

/// The panic payload's message, if it is a string.
fn payload_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("")
}

/// One step of a fuzz case.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    Spawn {
        kind: u8,
        v: u32,
    },
    SpawnBatch {
        kind: u8,
        v: u32,
        n: u8,
    },
    Despawn(Who),
    /// `World::insert`: adds new components, replaces present ones.
    Insert {
        who: Who,
        kind: u8,
        v: u32,
    },
    InsertOne {
        who: Who,
        comp: u8,
        v: u32,
    },
    Remove {
        who: Who,
        kind: u8,
    },
    RemoveOne {
        who: Who,
        comp: u8,
    },
    Get {
        who: Who,
        comp: u8,
    },
    /// `World::get_mut` and a write through the reference.
    GetMut {
        who: Who,
        comp: u8,
    },
    Has {
        who: Who,
        comp: u8,
    },
    Contains(Who),
    /// Runs one of the cached query states.
    Query(u8),
    /// Builds a new query state and runs it once.
    FreshQuery(u8),
    /// `QueryState::get` on the cached states.
    QueryGet(Who),
    /// `QueryState::get_mut` and a write.
    QueryGetMut(Who),
    /// Runs every tick-filtered state.
    QueryTicks,
    /// Builds a tick-filtered state late (switching tracking on then).
    LateTrack(u8),
    AdvanceTicks(u32),
    Clear,
    Reserve,
    /// Records into the long-lived `CommandBuffer`.
    Buf(CmdOp),
    BufApply,
    /// Runs a system that records these through `Commands`; applied at once.
    Sys(Vec<CmdOp>),
    /// Arms a panic at `site`, striking at its `countdown % 4`-th next hit.
    Arm {
        site: Site,
        countdown: u8,
    },
    /// Spawns an entity with `Hk` (so `Df`), and `Bm` if `boom`.
    SpawnHooked {
        v: u32,
        boom: bool,
    },
    /// Inserts `Hk` (replacing one: `on_insert` again) into an entity.
    InsertHooked {
        who: Who,
        v: u32,
    },
    /// Inserts `Bm` (replacing one drops it) into an entity.
    InsertBoom(Who),
    /// Removes `Hk` (`on_remove`) from an entity.
    RemoveHooked(Who),
    /// Removes `Bm` from an entity (dropping it).
    RemoveBoom(Who),
    /// `World::relate` with relation `Lk` (many targets per source).
    Relate {
        src: Who,
        dst: Who,
    },
    /// `World::unrelate` of an `Lk` edge.
    Unrelate {
        src: Who,
        dst: Who,
    },
    /// `World::add_child` (reparents a child that had a parent).
    Parent {
        child: Who,
        parent: Who,
    },
    /// `World::despawn_recursive` through `ChildOf`.
    DespawnRecursive(Who),
    // New variants go last, so the committed corpus keeps its meaning.
    /// `World::despawn_descendants`: one sweep of the children.
    DespawnDescendants(Who),
    /// `World::relate` with `Ow` (`one`, the source despawned with its
    /// target: cascades).
    Own {
        src: Who,
        dst: Who,
    },
    /// `World::relate` with `Pn` (the target refuses to be despawned).
    Pin {
        src: Who,
        dst: Who,
    },
    /// `World::unrelate` of a `Pn` edge.
    Unpin {
        src: Who,
        dst: Who,
    },
    /// Arms a panic in the `OnUnrelate<ChildOf>` observer, striking at its
    /// `countdown % 4`-th next call: during a sweep, the sweep must finish
    /// (every doomed entity gone) before the panic goes on.
    ArmUnrelate(u8),
    // Issue #39: run-time bundles, clones, `spawn_at`, disabling. (New
    // variants go last; `arbitrary` still maps tags by variant count, so
    // older corpus inputs decode to other, equally valid, sequences.)
    /// `World::spawn` of an `EntityBuilder`'s build.
    SpawnBuilt {
        kind: u8,
        v: u32,
    },
    /// `World::insert` of an `EntityBuilder`'s build.
    InsertBuilt {
        who: Who,
        kind: u8,
        v: u32,
    },
    /// `World::clone_entity` (`Hk`'s `Clone` may panic).
    Clone(Who),
    /// `World::spawn_at` of a live entity's handle (even `fresh`) or a new
    /// index; a static bundle, or a build if `parts`.
    SpawnAt {
        who: Who,
        fresh: u8,
        kind: u8,
        v: u32,
        parts: bool,
    },
    /// `SpawnHooked` through an `EntityBuilder`, or through `spawn_at` of a
    /// new index if `at` is some.
    SpawnBuiltHooked {
        v: u32,
        boom: bool,
        at: Option<u8>,
    },
    /// Disables an entity, checks direct access and a query, enables it.
    DisableRoundTrip(Who),
}

/// Decodes `data` into operations (at most [`MAX_OPS`]).
pub fn decode(data: &[u8]) -> Vec<Op> {
    let mut u = Unstructured::new(data);
    let mut ops = Vec::new();
    while ops.len() < MAX_OPS && !u.is_empty() {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    ops
}

/// Decodes `data` and runs it: the fuzz target's body.
pub fn run_bytes(data: &[u8]) {
    run(&decode(data));
}

/// Every this many steps, [`check_invariants`](World::check_invariants) and
/// the next [`SAMPLE`] handles ever seen (in turn, so every stale handle is
/// checked again now and then); the full check runs after the last step.
/// Checking every handle after every step cost most of the fuzzer's time
/// (`perf`: 64% in `check_world`, mostly building the `MissingComponent`
/// errors of absent components), for what a check of the entities a step
/// touched finds as well.
const FULL_CHECK_EVERY: usize = 16;
/// Handles the periodic check looks at.
const SAMPLE: usize = 12;

/// The periodic check: invariants, counts, and `SAMPLE` known handles from
/// `*next` on (wrapping).
fn check_sample(world: &World, m: &Model, next: &mut usize) {
    world.check_invariants();
    check_counts(world, m);
    for _ in 0..SAMPLE.min(m.known.len()) {
        *next %= m.known.len();
        check_entity(world, m, m.known[*next]);
        *next += 1;
    }
}

/// The check after one step: counts, and every entity the step picked or
/// whose model state changed (live set or values, against `before`).
fn check_step(world: &World, m: &Model, before: &BTreeMap<Entity, Slots>) {
    check_counts(world, m);
    for e in m.picked.borrow_mut().drain(..) {
        check_entity(world, m, e);
    }
    let mut old = before.iter().peekable();
    let mut new = m.live.iter().peekable();
    loop {
        let e = match (old.peek(), new.peek()) {
            (None, None) => break,
            (Some(&(&a, sa)), Some(&(&b, sb))) if a == b => {
                old.next();
                new.next();
                if sa == sb {
                    continue;
                }
                a
            }
            (Some(&(&a, _)), Some(&(&b, _))) if a < b => {
                old.next();
                a
            }
            (Some(&(&a, _)), None) => {
                old.next();
                a
            }
            (_, Some(&(&b, _))) => {
                new.next();
                b
            }
        };
        check_entity(world, m, e);
    }
}

/// The fuzz target's own state in a [`Case`]: query states over the three
/// types of the injected panics.
struct Extras {
    hk: QueryState<Entity, With<Hk>>,
    df: QueryState<Entity, With<Df>>,
    bm: QueryState<Entity, With<Bm>>,
}

impl Extras {
    fn new(world: &mut World) -> Self {
        Extras {
            hk: world.query_filtered(),
            df: world.query_filtered(),
            bm: world.query_filtered(),
        }
    }
}

fn step(c: &mut Case<Extras>, op: &Op) {
    match *op {
        Op::Spawn { kind, v } => do_spawn(c, fuzz_kind(kind), v),
        Op::SpawnBatch { kind, v, n } => {
            // `n`'s high bit picks `World::extend` over `spawn_batch`; the
            // rest (mod `MAX_BATCH`) is the count.
            let extend = n & 0x80 != 0;
            let n = (n & 0x7f) % MAX_BATCH;
            do_spawn_batch(c, fuzz_kind(kind), v, usize::from(n), extend);
        }
        Op::Despawn(who) => {
            let e = c.model.pick(who);
            sweep_checked(c, |c| do_despawn(c, e));
        }
        Op::Insert { who, kind, v } => {
            let e = c.model.pick(who);
            do_insert(c, e, fuzz_kind(kind), v, false);
        }
        Op::Relate { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_relate(c, s, t);
        }
        Op::Unrelate { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_unrelate(c, s, t);
        }
        Op::Parent { child, parent } => {
            let (ch, p) = (c.model.pick(child), c.model.pick(parent));
            do_parent(c, ch, p);
        }
        Op::DespawnRecursive(who) => {
            let e = c.model.pick(who);
            sweep_checked(c, |c| do_despawn_recursive(c, e));
        }
        Op::DespawnDescendants(who) => {
            let e = c.model.pick(who);
            sweep_checked(c, |c| do_despawn_descendants(c, e));
        }
        Op::Own { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_own(c, s, t);
        }
        Op::Pin { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_pin(c, s, t);
        }
        Op::Unpin { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_unpin(c, s, t);
        }
        Op::ArmUnrelate(countdown) => ARMED_UNRELATE.with(|a| a.set(Some(countdown % 4))),
        Op::InsertOne { who, comp, v } => {
            let e = c.model.pick(who);
            do_insert_one(c, e, fuzz_comp(comp), v);
        }
        Op::Remove { who, kind } => {
            let e = c.model.pick(who);
            do_remove(c, e, fuzz_kind(kind), false);
        }
        Op::RemoveOne { who, comp } => {
            let e = c.model.pick(who);
            do_remove_one(c, e, fuzz_comp(comp));
        }
        Op::Get { who, comp } | Op::Has { who, comp } => {
            let e = c.model.pick(who);
            do_get(c, e, fuzz_comp(comp));
        }
        Op::GetMut { who, comp } => {
            let e = c.model.pick(who);
            do_get_mut(c, e, fuzz_comp(comp));
        }
        Op::Contains(who) => {
            let e = c.model.pick(who);
            check_entity(&c.world, &c.model, e);
        }
        Op::Query(q) => do_query(c, usize::from(q)),
        Op::FreshQuery(q) => do_fresh_query(c, usize::from(q)),
        Op::QueryGet(who) => {
            let e = c.model.pick(who);
            do_query_get(c, e);
        }
        Op::QueryGetMut(who) => {
            let e = c.model.pick(who);
            do_query_get_mut(c, e);
        }
        Op::QueryTicks => do_query_ticks(c),
        Op::LateTrack(which) => do_late_track(c, which),
        Op::AdvanceTicks(ticks) => do_advance(c, ticks % MAX_ADVANCE),
        Op::Clear => do_clear(c),
        Op::Reserve => do_reserve(c),
        Op::Buf(op) => do_buffer_record(c, fuzz_cmd(op)),
        Op::BufApply => do_buffer_apply(c),
        Op::Sys(ref ops) => {
            let ops: Vec<CmdOp> = ops
                .iter()
                .take(MAX_SYS_COMMANDS)
                .map(|&op| fuzz_cmd(op))
                .collect();
            do_system_commands(c, &ops);
        }
        Op::Arm { site, countdown } => ARMED.with(|a| a.set(Some((site, countdown % 4)))),
        Op::SpawnHooked { v, boom } => {
            c.model.flush();
            EXPECT_BM.with(|x| x.set(boom));
            let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if boom {
                    c.world.spawn((Hk::new(v), Bm::new()))
                } else {
                    c.world.spawn(Hk::new(v))
                }
            }));
            EXPECT_BM.with(|x| x.set(false));
            let e = spawned.unwrap_or_else(|payload| std::panic::resume_unwind(payload));
            c.model.fresh(e);
            c.model.spawn(e, &[]);
            assert!(
                c.world.has::<Hk>(e) && c.world.has::<Df>(e),
                "spawned with its requirement"
            );
        }
        Op::InsertHooked { who, v } => {
            let e = c.model.pick(who);
            let had = c.world.has::<Hk>(e);
            c.model.flush();
            let result = c.world.insert_one(e, Hk::new(v));
            check_extra_result(&c.model, e, result.map_err(ComponentError::from));
            // (Replacing an `Hk` adds no requirement.)
            if c.model.live.contains_key(&e) && !had {
                assert!(c.world.has::<Df>(e), "Hk inserted with its requirement");
            }
        }
        Op::InsertBoom(who) => {
            let e = c.model.pick(who);
            c.model.flush();
            let result = c.world.insert_one(e, Bm::new());
            check_extra_result(&c.model, e, result.map_err(ComponentError::from));
        }
        Op::RemoveHooked(who) => {
            let e = c.model.pick(who);
            let had = c.world.has::<Hk>(e);
            c.model.flush();
            let result = c.world.remove::<Hk>(e).map(drop);
            if had {
                assert!(result.is_ok(), "remove::<Hk>({e:?}): {result:?}");
            } else {
                assert!(result.is_err(), "remove::<Hk>({e:?}) of none");
            }
        }
        Op::SpawnBuilt { kind, v } => do_spawn_built(c, fuzz_kind(kind), v),
        Op::InsertBuilt { who, kind, v } => {
            let e = c.model.pick(who);
            do_insert_built(c, e, fuzz_kind(kind), v);
        }
        Op::Clone(who) => {
            let e = c.model.pick(who);
            do_clone(c, e);
        }
        Op::SpawnAt {
            who,
            fresh,
            kind,
            v,
            parts,
        } => {
            if let Some(e) = spawn_at_target(&c.model, who, fresh) {
                do_spawn_at(c, e, fuzz_kind(kind), v, parts);
            }
        }
        Op::SpawnBuiltHooked { v, boom, at } => spawn_built_hooked(c, v, boom, at),
        Op::DisableRoundTrip(who) => {
            let e = c.model.pick(who);
            do_disable_round_trip(c, e);
        }
        Op::RemoveBoom(who) => {
            let e = c.model.pick(who);
            let had = c.world.has::<Bm>(e);
            c.model.flush();
            let result = c.world.remove::<Bm>(e).map(drop);
            assert_eq!(result.is_ok(), had, "remove::<Bm>({e:?}): {result:?}");
        }
    }
}

/// `Hk` (so `Df`) and, if `boom`, `Bm`, spawned through an
/// `EntityBuilder`, at a new index by `spawn_at` if `at` is some: one
/// change, whose hooks see every part (`EXPECT_BM`).
fn spawn_built_hooked(c: &mut Case<Extras>, v: u32, boom: bool, at: Option<u8>) {
    let mut builder = EntityBuilder::new();
    builder.add(Hk::new(v));
    if boom {
        builder.add(Bm::new());
    }
    let parts = builder.build();
    let target = at.and_then(|fresh| spawn_at_target(&c.model, Who::Any(0), fresh | 1));
    c.model.flush();
    EXPECT_BM.with(|x| x.set(boom));
    let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match target {
        Some(e) => {
            c.world.spawn_at(e, parts);
            e
        }
        None => c.world.spawn(parts),
    }));
    EXPECT_BM.with(|x| x.set(false));
    let e = spawned.unwrap_or_else(|payload| std::panic::resume_unwind(payload));
    if target.is_some() {
        c.model.evict_index(e);
        c.model.learn(e);
    } else {
        c.model.fresh(e);
    }
    c.model.spawn(e, &[]);
    assert!(
        c.world.has::<Hk>(e) && c.world.has::<Df>(e) && c.world.has::<Bm>(e) == boom,
        "built with its requirement"
    );
}

/// `op` with its bundle kind decoded by [`fuzz_kind`].
fn fuzz_cmd(op: CmdOp) -> CmdOp {
    let k = fuzz_kind;
    match op {
        CmdOp::Spawn { kind, v } => CmdOp::Spawn { kind: k(kind), v },
        CmdOp::Insert { who, kind, v } => CmdOp::Insert {
            who,
            kind: k(kind),
            v,
        },
        CmdOp::InsertSpawned { back, kind, v } => CmdOp::InsertSpawned {
            back,
            kind: k(kind),
            v,
        },
        CmdOp::Remove { who, kind } => CmdOp::Remove { who, kind: k(kind) },
        CmdOp::Despawn(who) => CmdOp::Despawn(who),
    }
}

/// An insert of an extra type into `e`: fine iff the model has `e` live.
fn check_extra_result(m: &Model, e: Entity, result: Result<(), ComponentError>) {
    if m.live.contains_key(&e) {
        assert_eq!(result, Ok(()), "insert into live {e:?}");
    } else {
        assert_eq!(
            result,
            Err(ComponentError::NoSuchEntity(e)),
            "insert into dead {e:?}"
        );
    }
}

/// Constructions minus drops of `Hk`, `Df`, `Bm` equal the values the world
/// holds (no value leaked or dropped twice), and every `Hk` has its `Df`
/// unless the panic that just struck was `Df::default`'s.
fn check_extras(c: &mut Case<Extras>, fired: Option<Site>) {
    let hk: Vec<Entity> = c.extra.hk.iter(&c.world).collect();
    let df = c.extra.df.iter(&c.world).count() as u64;
    let bm = c.extra.bm.iter(&c.world).count() as u64;
    assert_eq!(
        extra_live(),
        [hk.len() as u64, df, bm],
        "live Hk, Df, Bm values (constructions - drops) against the world"
    );
    // A panic anywhere (a hook, an observer, the requirement's `Default`)
    // never leaves `Hk` without the `Df` it requires (#17).
    let unmet: Vec<Entity> = hk.into_iter().filter(|&e| !c.world.has::<Df>(e)).collect();
    assert!(
        unmet.is_empty(),
        "{unmet:?} have Hk without the Df it requires (after {fired:?})"
    );
}

/// After a step an injected panic interrupted: checks what must hold after
/// any panic, then makes the world's state the model's (which values a
/// half-finished operation left is the panic policy's business, tested in
/// `tests/panic_safety.rs`).
fn resync(c: &mut Case<Extras>, fired: Site) {
    ARMED.with(|a| a.set(None));
    ARMED_UNRELATE.with(|a| a.set(None));
    c.world.check_invariants();
    // Pending commands: drop the buffer (its values with it) and start a
    // new one; a spawn then despawn makes every reserved id live.
    c.buffer = CommandBuffer::new(&c.world);
    c.model.commands.clear();
    c.model.buffer_spawned.clear();
    let probe = c.world.spawn(());
    c.world.despawn(probe).expect("just spawned");
    c.model.fresh(probe);
    c.model.reserved.clear();
    let mut live = BTreeMap::new();
    for item in c.states.data.iter(&c.world) {
        live.insert(item.0, slots_of(item));
    }
    for &e in live.keys() {
        c.model.learn(e);
    }
    // Relations: read back from the world (an injected panic may have
    // stopped a recursive despawn part way).
    c.model.likes = live
        .keys()
        .flat_map(|&e| c.world.targets::<Lk>(e).iter().map(move |&t| (e, t)))
        .collect();
    c.model.parents = live
        .keys()
        .filter_map(|&e| c.world.parent(e).map(|p| (e, p)))
        .collect();
    c.model.owners = live
        .keys()
        .filter_map(|&e| c.world.targets::<Ow>(e).first().map(|&o| (e, o)))
        .collect();
    c.model.pins = live
        .keys()
        .flat_map(|&e| c.world.targets::<Pn>(e).iter().map(move |&t| (e, t)))
        .collect();
    // A component the interrupted step added is in the world but not in
    // the model's event log: log it as added, so a tick-filtered state
    // made later, which reports every component added since the world
    // began, is checked against it. (The states already made consume the
    // step's changes unchecked below.)
    for (&e, slots) in &live {
        let before = c.model.live.get(&e).copied().unwrap_or([None; N]);
        for i in 0..N {
            if slots[i].is_some() && before[i].is_none() {
                c.model.events.push((e, i, Event::Added));
            }
        }
    }
    c.model.live = live;
    // Tick-filtered states: consume what they would report, unchecked.
    let st = &mut c.states;
    st.added_tab.iter(&c.world).for_each(drop);
    st.changed_tab.iter(&c.world).for_each(drop);
    st.added_spa.iter(&c.world).for_each(drop);
    st.changed_spa.iter(&c.world).for_each(drop);
    st.or_ticks.iter(&c.world).for_each(drop);
    if let Some(q) = &mut st.late_big_spa {
        q.iter(&c.world).for_each(drop);
    }
    if let Some(q) = &mut st.late_ztab {
        q.iter(&c.world).for_each(drop);
    }
    st.seen = [c.model.events.len(); TICK_STATES];
    st.idle = [0; TICK_STATES];
    check_extras(c, Some(fired));
    check_world(&c.world, &c.model);
}

/// Runs `ops` on a new world and on the model, checking them against each
/// other after every step; then drops everything and checks that every
/// counted value was dropped exactly once.
pub fn run(ops: &[Op]) {
    EXTRA.with(|c| c.set(([0; 3], [0; 3])));
    FIRED_LOG.with(|l| l.borrow_mut().clear());
    ARMED.with(|a| a.set(None));
    ARMED_UNRELATE.with(|a| a.set(None));
    quiet_injected_panics();
    let mut world = World::new();
    world
        .register_required::<Hk, Df>()
        .expect("no requirement cycle");
    world.observe(|_: Trigger<OnAdd<Hk>>, _: DeferredWorld| maybe_panic(Site::Observer));
    world.observe(|_: Trigger<OnUnrelate<ChildOf>>, _: DeferredWorld| maybe_panic_unrelate());
    let mut case = Case::new(world, Extras::new);
    check_world(&case.world, &case.model);
    let mut before = case.model.live.clone();
    let mut next_sample = 0;
    for (i, op) in ops.iter().enumerate() {
        FIRED.with(|f| f.set(None));
        let stepped =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step(&mut case, op)));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match (stepped, FIRED.with(Cell::get)) {
                (Ok(()), None) => {}
                (Err(payload), None) => std::panic::resume_unwind(payload),
                (Err(payload), Some(site)) => {
                    let message = payload_message(&*payload);
                    assert!(
                        message.contains(INJECTED),
                        "after an injected panic at {site:?}, the step panicked with: {message}"
                    );
                    case.model.picked.borrow_mut().clear();
                    resync(&mut case, site);
                    return;
                }
                (Ok(()), Some(site)) => {
                    // Swallowed: logged by a schedule, say. Still resync.
                    case.model.picked.borrow_mut().clear();
                    resync(&mut case, site);
                    return;
                }
            }
            check_extras(&mut case, None);
            if i + 1 == ops.len() {
                case.model.picked.borrow_mut().clear();
                check_world(&case.world, &case.model);
                return;
            }
            check_step(&case.world, &case.model, &before);
            if (i + 1) % FULL_CHECK_EVERY == 0 {
                check_sample(&case.world, &case.model, &mut next_sample);
            }
        }));
        if let Err(payload) = result {
            eprintln!("world and model disagree at op #{i}: {op:?}");
            std::panic::resume_unwind(payload);
        }
        before.clone_from(&case.model.live);
    }
    ARMED.with(|a| a.set(None));
    finish(case);
    assert_eq!(
        extra_live(),
        [0; 3],
        "Hk, Df, Bm left after dropping the world"
    );
}
