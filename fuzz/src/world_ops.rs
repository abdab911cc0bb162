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
//! Components: `Tab` (table, heap payload, drop-counted), `Spa` (sparse,
//! heap payload, drop-counted), `ZTab` (zero-sized, table, drop-counted),
//! `ZSpa` (zero-sized, sparse), `Big` (`align(64)`, table, heap payload,
//! drop-counted) and `BigSpa` (`align(64)`, sparse). Handles come from the
//! live set, from every handle ever seen (stale and reserved ones), or are
//! forged from raw bits.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use arbitrary::{Arbitrary, Unstructured};
use mosaic::CommandError;
use mosaic::prelude::*;

/// Longest operation sequence run from one input.
pub const MAX_OPS: usize = 160;
/// Most commands one `Op::Sys` records.
const MAX_SYS_COMMANDS: usize = 16;
/// Most entities one `spawn_batch` spawns.
const MAX_BATCH: u8 = 9;
/// Largest single `advance_change_tick` step.
const MAX_ADVANCE: u32 = 1 << 31;
/// A tick-filtered state is run before it would go this many ticks unused
/// (the documented limit is `Tick::MAX_AGE`, about 3.2 billion).
const MAX_IDLE: u64 = 3_000_000_000;

// ----- components ------------------------------------------------------------------------

const N: usize = 6;
const NAMES: [&str; N] = ["Tab", "Spa", "ZTab", "ZSpa", "Big", "BigSpa"];
/// Which component types count their constructions and drops.
const COUNTED: [bool; N] = [true, true, true, false, true, false];

#[derive(Clone, Copy, Default)]
struct Counts {
    made: [u64; N],
    dropped: [u64; N],
}

thread_local! {
    // Per thread: the regression test runs inputs on several test threads
    // at once, and the interpreter never moves a value to another thread.
    static COUNTS: Cell<Counts> = Cell::new(Counts::default());
}

fn count(i: usize, made: bool) {
    COUNTS.with(|c| {
        let mut counts = c.get();
        if made {
            counts.made[i] += 1;
        } else {
            counts.dropped[i] += 1;
        }
        c.set(counts);
    });
}

fn counts() -> Counts {
    COUNTS.with(Cell::get)
}

/// Live values of the counted types: constructions minus drops.
fn live_counted() -> u64 {
    let c = counts();
    (0..N)
        .map(|i| {
            assert!(
                c.dropped[i] <= c.made[i],
                "{} dropped more often ({}) than made ({})",
                NAMES[i],
                c.dropped[i],
                c.made[i]
            );
            c.made[i] - c.dropped[i]
        })
        .sum()
}

#[derive(Component)]
struct Tab {
    val: Box<u32>,
}

#[derive(Component)]
#[component(storage = "sparse")]
struct Spa {
    val: Box<u32>,
}

#[derive(Component)]
struct ZTab;

#[derive(Component)]
#[component(storage = "sparse")]
struct ZSpa;

#[derive(Component)]
#[repr(align(64))]
struct Big {
    val: u64,
    /// Always `!val`: a value read from freed or moved-from memory shows.
    check: Box<u64>,
}

#[derive(Component)]
#[repr(align(64))]
#[component(storage = "sparse")]
struct BigSpa(u64);

impl Drop for Tab {
    fn drop(&mut self) {
        count(0, false);
    }
}

impl Drop for Spa {
    fn drop(&mut self) {
        count(1, false);
    }
}

impl Drop for ZTab {
    fn drop(&mut self) {
        count(2, false);
    }
}

impl Drop for Big {
    fn drop(&mut self) {
        count(4, false);
    }
}

/// A component type the model knows: its slot, and how values map to `u64`.
trait Comp: Component + Sized {
    const IDX: usize;
    fn make(v: u32) -> Self;
    /// The model value of `make(v)`.
    fn expected(v: u32) -> u64;
    fn value(&self) -> u64;
    /// Changes the value in place; the model value becomes `mutated(old)`.
    fn mutate(&mut self);
    fn mutated(old: u64) -> u64;
}

impl Comp for Tab {
    const IDX: usize = 0;
    fn make(v: u32) -> Self {
        count(0, true);
        Tab { val: Box::new(v) }
    }
    fn expected(v: u32) -> u64 {
        u64::from(v)
    }
    fn value(&self) -> u64 {
        u64::from(*self.val)
    }
    fn mutate(&mut self) {
        *self.val = self.val.wrapping_add(1000);
    }
    fn mutated(old: u64) -> u64 {
        u64::from((old as u32).wrapping_add(1000))
    }
}

impl Comp for Spa {
    const IDX: usize = 1;
    fn make(v: u32) -> Self {
        count(1, true);
        Spa {
            val: Box::new(v ^ 0x5555),
        }
    }
    fn expected(v: u32) -> u64 {
        u64::from(v ^ 0x5555)
    }
    fn value(&self) -> u64 {
        u64::from(*self.val)
    }
    fn mutate(&mut self) {
        *self.val ^= 1;
    }
    fn mutated(old: u64) -> u64 {
        old ^ 1
    }
}

impl Comp for ZTab {
    const IDX: usize = 2;
    fn make(_: u32) -> Self {
        count(2, true);
        ZTab
    }
    fn expected(_: u32) -> u64 {
        0
    }
    fn value(&self) -> u64 {
        0
    }
    fn mutate(&mut self) {}
    fn mutated(old: u64) -> u64 {
        old
    }
}

impl Comp for ZSpa {
    const IDX: usize = 3;
    fn make(_: u32) -> Self {
        ZSpa
    }
    fn expected(_: u32) -> u64 {
        0
    }
    fn value(&self) -> u64 {
        0
    }
    fn mutate(&mut self) {}
    fn mutated(old: u64) -> u64 {
        old
    }
}

impl Comp for Big {
    const IDX: usize = 4;
    fn make(v: u32) -> Self {
        count(4, true);
        let val = u64::from(v) * 3 + 1;
        Big {
            val,
            check: Box::new(!val),
        }
    }
    fn expected(v: u32) -> u64 {
        u64::from(v) * 3 + 1
    }
    fn value(&self) -> u64 {
        assert_eq!(*self.check, !self.val, "Big's check word is corrupt");
        self.val
    }
    fn mutate(&mut self) {
        self.val = self.val.wrapping_add(7);
        *self.check = !self.val;
    }
    fn mutated(old: u64) -> u64 {
        old.wrapping_add(7)
    }
}

impl Comp for BigSpa {
    const IDX: usize = 5;
    fn make(v: u32) -> Self {
        BigSpa(u64::from(v) << 20 | 9)
    }
    fn expected(v: u32) -> u64 {
        u64::from(v) << 20 | 9
    }
    fn value(&self) -> u64 {
        self.0
    }
    fn mutate(&mut self) {
        self.0 = self.0.rotate_left(1);
    }
    fn mutated(old: u64) -> u64 {
        old.rotate_left(1)
    }
}

/// Runs `visit::<C>()` for component slot `comp`.
trait CompVisitor {
    type Out;
    fn visit<C: Comp>(self) -> Self::Out;
}

fn with_comp<V: CompVisitor>(comp: u8, v: V) -> V::Out {
    match usize::from(comp) % N {
        0 => v.visit::<Tab>(),
        1 => v.visit::<Spa>(),
        2 => v.visit::<ZTab>(),
        3 => v.visit::<ZSpa>(),
        4 => v.visit::<Big>(),
        _ => v.visit::<BigSpa>(),
    }
}

// ----- injected panics -------------------------------------------------------------------
//
// Three more component types, outside the six-slot model: `Hk` (table, its
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
}

thread_local! {
    static ARMED: Cell<Option<(Site, u8)>> = const { Cell::new(None) };
    /// The site that panicked during the current step.
    static FIRED: Cell<Option<Site>> = const { Cell::new(None) };
    /// Constructions and drops of `Hk`, `Df`, `Bm`.
    static EXTRA: Cell<([u64; 3], [u64; 3])> = const { Cell::new(([0; 3], [0; 3])) };
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

fn hk_on_add(w: DeferredWorld, e: Entity) {
    // Requirements arrive in the same change as the component needing
    // them, before any hook runs (#17).
    assert!(
        w.get::<Df>(e).is_ok(),
        "on_add of Hk ran before its required Df was added"
    );
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

// ----- bundles ---------------------------------------------------------------------------

/// A bundle the model knows: how to build it, which slots it fills, and the
/// model values of a built one.
trait ModelBundle: Bundle + Send + 'static {
    fn make(v: u32) -> Self;
    fn idxs(out: &mut Vec<usize>);
    fn expected(v: u32, out: &mut Vec<(usize, u64)>);
    fn values(&self, out: &mut Vec<(usize, u64)>);
}

macro_rules! component_bundle {
    ($($t:ident),*) => {$(
        impl ModelBundle for $t {
            fn make(v: u32) -> Self {
                <$t as Comp>::make(v)
            }
            fn idxs(out: &mut Vec<usize>) {
                out.push(<$t as Comp>::IDX);
            }
            fn expected(v: u32, out: &mut Vec<(usize, u64)>) {
                out.push((<$t as Comp>::IDX, <$t as Comp>::expected(v)));
            }
            fn values(&self, out: &mut Vec<(usize, u64)>) {
                out.push((<$t as Comp>::IDX, Comp::value(self)));
            }
        }
    )*};
}
component_bundle!(Tab, Spa, ZTab, ZSpa, Big, BigSpa);

macro_rules! tuple_bundle {
    ($(($b:ident, $x:ident)),*) => {
        impl<$($b: ModelBundle),*> ModelBundle for ($($b,)*) {
            #[allow(unused_variables, clippy::unused_unit)]
            fn make(v: u32) -> Self {
                ($($b::make(v),)*)
            }
            #[allow(unused_variables)]
            fn idxs(out: &mut Vec<usize>) {
                $($b::idxs(out);)*
            }
            #[allow(unused_variables)]
            fn expected(v: u32, out: &mut Vec<(usize, u64)>) {
                $($b::expected(v, out);)*
            }
            #[allow(unused_variables, non_snake_case)]
            fn values(&self, out: &mut Vec<(usize, u64)>) {
                let ($($x,)*) = self;
                $($x.values(out);)*
            }
        }
    };
}
tuple_bundle!();
tuple_bundle!((A, a));
tuple_bundle!((A, a), (B, b));
tuple_bundle!((A, a), (B, b), (C, c));
tuple_bundle!((A, a), (B, b), (C, c), (D, d), (E, e), (F, f));

/// Runs `visit::<B>()` for bundle kind `kind`.
trait KindVisitor {
    type Out;
    fn visit<B: ModelBundle>(self) -> Self::Out;
}

const KINDS: usize = 15;

fn with_kind<V: KindVisitor>(kind: u8, v: V) -> V::Out {
    match usize::from(kind) % KINDS {
        0 => v.visit::<()>(),
        1 => v.visit::<Tab>(),
        2 => v.visit::<Spa>(),
        3 => v.visit::<ZTab>(),
        4 => v.visit::<ZSpa>(),
        5 => v.visit::<Big>(),
        6 => v.visit::<BigSpa>(),
        7 => v.visit::<(Tab, Spa)>(),
        8 => v.visit::<(Tab, ZTab, Big)>(),
        9 => v.visit::<(Spa, ZSpa, BigSpa)>(),
        10 => v.visit::<(Big, ZSpa, Tab)>(),
        11 => v.visit::<(Tab, Spa, ZTab, ZSpa, Big, BigSpa)>(),
        12 => v.visit::<(ZTab, (Spa, Big))>(),
        13 => v.visit::<(BigSpa, (ZTab,))>(),
        14 => v.visit::<(Spa,)>(),
        _ => unreachable!(),
    }
}

fn kind_idxs(kind: u8) -> Vec<usize> {
    struct V;
    impl KindVisitor for V {
        type Out = Vec<usize>;
        fn visit<B: ModelBundle>(self) -> Vec<usize> {
            let mut out = Vec::new();
            B::idxs(&mut out);
            out
        }
    }
    with_kind(kind, V)
}

fn kind_expected(kind: u8, v: u32) -> Vec<(usize, u64)> {
    struct V(u32);
    impl KindVisitor for V {
        type Out = Vec<(usize, u64)>;
        fn visit<B: ModelBundle>(self) -> Self::Out {
            let mut out = Vec::new();
            B::expected(self.0, &mut out);
            out
        }
    }
    with_kind(kind, V(v))
}

fn counted_in(kind: u8) -> u64 {
    kind_idxs(kind).iter().filter(|&&i| COUNTED[i]).count() as u64
}

// ----- operations ------------------------------------------------------------------------

/// Picks an entity handle.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Who {
    /// A live entity (any handle ever seen if none lives).
    Live(u16),
    /// Any handle ever seen: live, stale, reserved, or never spawned.
    Any(u16),
    /// A handle forged from bits: index `index % 24`, generation
    /// `generation % 3 + 1`. It may name a live entity, or nothing.
    Forged { index: u8, generation: u8 },
}

/// A command recorded through a `CommandBuffer` or a system's `Commands`.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum CmdOp {
    Spawn {
        kind: u8,
        v: u32,
    },
    Insert {
        who: Who,
        kind: u8,
        v: u32,
    },
    /// Insert into the `back`-th latest entity spawned by the same buffer
    /// (skipped if there is none).
    InsertSpawned {
        back: u8,
        kind: u8,
        v: u32,
    },
    Remove {
        who: Who,
        kind: u8,
    },
    Despawn(Who),
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
}

/// The fuzzed many-to-many relation.
#[derive(Relation)]
struct Lk;

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

// ----- the model -------------------------------------------------------------------------

type Slots = [Option<u64>; N];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Added,
    Changed,
}

/// A command recorded, not yet applied.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Insert { e: Entity, kind: u8, v: u32 },
    Remove { e: Entity, kind: u8 },
    Despawn(Entity),
}

#[derive(Default)]
struct Model {
    live: BTreeMap<Entity, Slots>,
    /// Every handle ever seen (stale ones stay), in first-seen order.
    known: Vec<Entity>,
    known_set: BTreeSet<Entity>,
    /// Ids reserved (`reserve_entity`, a buffer's or `Commands`' `spawn`)
    /// that become live, empty, at the world's next structural change.
    reserved: Vec<Entity>,
    /// The long-lived buffer's commands, and the ids it spawned.
    commands: Vec<Pending>,
    buffer_spawned: Vec<Entity>,
    /// (entity, component slot, event), in order.
    events: Vec<(Entity, usize, Event)>,
    /// Handles the current step picked (checked after it even if the model
    /// says nothing about them changed).
    picked: std::cell::RefCell<Vec<Entity>>,
    /// `Lk` edges ever made and not unrelated; an edge with a dead end is
    /// gone (every despawn removes an entity's edges), so readers filter.
    likes: BTreeSet<(Entity, Entity)>,
    /// `ChildOf` edges, child to parent, filtered the same way.
    parents: BTreeMap<Entity, Entity>,
}

impl Model {
    /// The live `Lk` targets of `e`, sorted.
    fn live_likes(&self, e: Entity) -> Vec<Entity> {
        if !self.live.contains_key(&e) {
            return Vec::new();
        }
        self.likes
            .iter()
            .filter(|&&(s, _)| s == e)
            .map(|&(_, t)| t)
            .filter(|t| self.live.contains_key(t))
            .collect()
    }

    /// True if `ancestor` is `e` or one of its live ancestors.
    fn is_ancestor_or_self(&self, ancestor: Entity, mut e: Entity) -> bool {
        for _ in 0..=self.live.len() {
            if e == ancestor {
                return true;
            }
            match self.live_parent(e) {
                Some(p) => e = p,
                None => return false,
            }
        }
        panic!("the model's hierarchy has a cycle");
    }

    /// `e`'s live parent.
    fn live_parent(&self, e: Entity) -> Option<Entity> {
        if !self.live.contains_key(&e) {
            return None;
        }
        self.parents
            .get(&e)
            .copied()
            .filter(|p| self.live.contains_key(p))
    }

    /// `root` and its live descendants (each once, cycles included).
    fn subtree(&self, root: Entity) -> Vec<Entity> {
        let mut out = vec![root];
        let mut seen: BTreeSet<Entity> = out.iter().copied().collect();
        let mut i = 0;
        while i < out.len() {
            let p = out[i];
            for &c in self.live.keys() {
                if self.live_parent(c) == Some(p) && seen.insert(c) {
                    out.push(c);
                }
            }
            i += 1;
        }
        out
    }

    fn learn(&mut self, e: Entity) {
        if self.known_set.insert(e) {
            self.known.push(e);
        }
    }

    /// Records a handle the world just created: it must never have been
    /// seen before (a stale handle never aliases a new entity).
    fn fresh(&mut self, e: Entity) {
        assert!(
            !self.known_set.contains(&e),
            "handle {e:?} handed out twice"
        );
        self.learn(e);
    }

    fn pick(&self, who: Who) -> Entity {
        let e = self.pick_inner(who);
        self.picked.borrow_mut().push(e);
        e
    }

    fn pick_inner(&self, who: Who) -> Entity {
        match who {
            Who::Live(i) if !self.live.is_empty() => *self
                .live
                .keys()
                .nth(usize::from(i) % self.live.len())
                .unwrap(),
            Who::Live(i) | Who::Any(i) => self.known[usize::from(i) % self.known.len()],
            Who::Forged { index, generation } => {
                Entity::from_bits((u64::from(generation % 3 + 1) << 32) | u64::from(index % 24))
                    .expect("nonzero generation")
            }
        }
    }

    /// What every structural change does first.
    fn flush(&mut self) {
        for e in std::mem::take(&mut self.reserved) {
            assert!(self.live.insert(e, [None; N]).is_none());
        }
    }

    fn spawn(&mut self, e: Entity, values: &[(usize, u64)]) {
        let mut slots = [None; N];
        for &(i, val) in values {
            slots[i] = Some(val);
            self.events.push((e, i, Event::Added));
        }
        assert!(self.live.insert(e, slots).is_none());
    }

    /// Insert into a live entity.
    fn insert(&mut self, e: Entity, values: &[(usize, u64)]) {
        let slots = self.live.get_mut(&e).expect("live");
        for &(i, val) in values {
            let event = if slots[i].is_some() {
                Event::Changed
            } else {
                Event::Added
            };
            slots[i] = Some(val);
            self.events.push((e, i, event));
        }
    }

    /// The first slot of `kind` that `e` lacks (`e` live).
    fn first_missing(&self, e: Entity, kind: u8) -> Option<usize> {
        let slots = &self.live[&e];
        kind_idxs(kind).into_iter().find(|&i| slots[i].is_none())
    }

    fn changed(&mut self, e: Entity, i: usize) {
        self.events.push((e, i, Event::Changed));
    }

    /// Applies `commands` in order; returns the errors the world must report.
    fn apply(&mut self, commands: Vec<Pending>) -> Vec<(usize, CommandError)> {
        if !commands.is_empty() {
            self.flush();
        }
        let mut errors = Vec::new();
        for (index, command) in commands.into_iter().enumerate() {
            match command {
                Pending::Insert { e, kind, v } => {
                    if self.live.contains_key(&e) {
                        self.insert(e, &kind_expected(kind, v));
                    } else {
                        errors.push((index, EntityError::NoSuchEntity(e).into()));
                    }
                }
                Pending::Remove { e, kind } => {
                    if !self.live.contains_key(&e) {
                        errors.push((index, ComponentError::NoSuchEntity(e).into()));
                    } else if let Some(i) = self.first_missing(e, kind) {
                        let err = ComponentError::MissingComponent {
                            entity: e,
                            component: NAMES[i].to_owned(),
                        };
                        errors.push((index, err.into()));
                    } else {
                        let slots = self.live.get_mut(&e).unwrap();
                        for i in kind_idxs(kind) {
                            slots[i] = None;
                        }
                    }
                }
                Pending::Despawn(e) => {
                    if self.live.remove(&e).is_none() {
                        errors.push((index, EntityError::NoSuchEntity(e).into()));
                    }
                }
            }
        }
        errors
    }

    /// Counted values in the world.
    fn counted_in_world(&self) -> u64 {
        self.live
            .values()
            .map(|s| (0..N).filter(|&i| COUNTED[i] && s[i].is_some()).count() as u64)
            .sum()
    }

    /// Counted values that should exist right now: in the world and in the
    /// long-lived buffer.
    fn expected_live(&self) -> u64 {
        let in_buffer: u64 = self
            .commands
            .iter()
            .map(|c| match *c {
                Pending::Insert { kind, .. } => counted_in(kind),
                _ => 0,
            })
            .sum();
        self.counted_in_world() + in_buffer
    }

    /// Live entities having slot `i` with an event `want` (an add counts as
    /// a change) since event position `since`.
    fn ticked_since(&self, since: usize, i: usize, want: Event) -> BTreeSet<Entity> {
        self.events[since..]
            .iter()
            .filter(|&&(_, j, ev)| j == i && (want == Event::Changed || ev == Event::Added))
            .map(|&(e, _, _)| e)
            .filter(|e| self.live.get(e).is_some_and(|s| s[i].is_some()))
            .collect()
    }

    fn matching(&self, f: impl Fn(&Slots) -> bool) -> BTreeSet<Entity> {
        self.live
            .iter()
            .filter(|(_, s)| f(s))
            .map(|(&e, _)| e)
            .collect()
    }
}

// ----- the cached queries ----------------------------------------------------------------

type DataItem = (
    Entity,
    Option<&'static Tab>,
    Option<&'static Spa>,
    Has<ZTab>,
    Has<ZSpa>,
    Option<&'static Big>,
    Option<&'static BigSpa>,
);
type RequiredItem = (Entity, &'static Spa, &'static Big);
type MutSpaItem = (Entity, &'static mut Spa, Option<&'static mut Big>);
type ZstItem = (Entity, &'static ZTab, Option<&'static mut BigSpa>);
/// Sparse components alone, no filter: a dense walk of the smallest set.
type DenseItem = (Entity, &'static mut BigSpa, &'static ZSpa, &'static Spa);
type OrZst = Or<(With<ZTab>, With<ZSpa>)>;
type OrTicks = Or<(Changed<Big>, Added<ZSpa>)>;

/// Tick-filtered states: the five built at the start, then the two late
/// ones.
const TICK_STATES: usize = 7;
/// Query numbers: plain `0..TICK_BASE`, tick-filtered `TICK_BASE..QUERIES`.
const TICK_BASE: usize = 10;
const QUERIES: usize = TICK_BASE + 5;

struct States {
    with_tab: QueryState<Entity, With<Tab>>,
    without_spa: QueryState<Entity, Without<Spa>>,
    or_zst: QueryState<Entity, OrZst>,
    with_without: QueryState<Entity, (With<Big>, Without<ZTab>)>,
    data: QueryState<DataItem>,
    required: QueryState<RequiredItem>,
    mut_tab: QueryState<(Entity, &'static mut Tab), With<Big>>,
    mut_spa: QueryState<MutSpaItem>,
    zst: QueryState<ZstItem, Without<Tab>>,
    dense: QueryState<DenseItem>,
    added_tab: QueryState<Entity, Added<Tab>>,
    changed_tab: QueryState<Entity, Changed<Tab>>,
    added_spa: QueryState<Entity, Added<Spa>>,
    changed_spa: QueryState<Entity, Changed<Spa>>,
    or_ticks: QueryState<Entity, OrTicks>,
    /// Built on demand (`Op::LateTrack`), switching tracking on late.
    late_big_spa: Option<QueryState<Entity, Changed<BigSpa>>>,
    late_ztab: Option<QueryState<Entity, Added<ZTab>>>,
    extra_hk: QueryState<Entity, With<Hk>>,
    extra_df: QueryState<Entity, With<Df>>,
    extra_bm: QueryState<Entity, With<Bm>>,
    /// Per tick-filtered state: event-log position of its last run.
    seen: [usize; TICK_STATES],
    /// Per tick-filtered state: ticks advanced (by `AdvanceTicks`) since its
    /// last run.
    idle: [u64; TICK_STATES],
}

impl States {
    fn new(world: &mut World) -> Self {
        States {
            with_tab: world.query_filtered(),
            without_spa: world.query_filtered(),
            or_zst: world.query_filtered(),
            with_without: world.query_filtered(),
            data: world.query(),
            required: world.query(),
            mut_tab: world.query_filtered(),
            mut_spa: world.query(),
            zst: world.query_filtered(),
            dense: world.query(),
            added_tab: world.query_filtered(),
            changed_tab: world.query_filtered(),
            added_spa: world.query_filtered(),
            changed_spa: world.query_filtered(),
            or_ticks: world.query_filtered(),
            late_big_spa: None,
            late_ztab: None,
            extra_hk: world.query_filtered(),
            extra_df: world.query_filtered(),
            extra_bm: world.query_filtered(),
            seen: [0; TICK_STATES],
            idle: [0; TICK_STATES],
        }
    }
}

/// Collects entities, checking none repeats.
fn entity_set(iter: impl Iterator<Item = Entity>, what: &str) -> BTreeSet<Entity> {
    let all: Vec<Entity> = iter.collect();
    let set: BTreeSet<Entity> = all.iter().copied().collect();
    assert_eq!(all.len(), set.len(), "{what}: an entity was yielded twice");
    set
}

fn check_aligned<T>(r: &T) {
    assert_eq!(
        (r as *const T as usize) % std::mem::align_of::<T>(),
        0,
        "misaligned {}",
        std::any::type_name::<T>()
    );
}

fn slots_of(
    tab: Option<&Tab>,
    spa: Option<&Spa>,
    ztab: bool,
    zspa: bool,
    big: Option<&Big>,
    big_spa: Option<&BigSpa>,
) -> Slots {
    if let Some(b) = big {
        check_aligned(b);
    }
    if let Some(b) = big_spa {
        check_aligned(b);
    }
    [
        tab.map(Comp::value),
        spa.map(Comp::value),
        ztab.then_some(0),
        zspa.then_some(0),
        big.map(Comp::value),
        big_spa.map(Comp::value),
    ]
}

fn run_query(q: usize, world: &mut World, st: &mut States, m: &mut Model) {
    let has = |i: usize| move |s: &Slots| s[i].is_some();
    match q {
        0 => {
            let got = entity_set(st.with_tab.iter(world), "With<Tab>");
            assert_eq!(got, m.matching(has(0)), "With<Tab>");
        }
        1 => {
            let got = entity_set(st.without_spa.iter(world), "Without<Spa>");
            assert_eq!(got, m.matching(|s| s[1].is_none()), "Without<Spa>");
        }
        2 => {
            let got = entity_set(st.or_zst.iter(world), "Or<With, With>");
            let want = m.matching(|s| s[2].is_some() || s[3].is_some());
            assert_eq!(got, want, "Or<(With<ZTab>, With<ZSpa>)>");
        }
        3 => {
            let got = entity_set(st.with_without.iter(world), "(With, Without)");
            let want = m.matching(|s| s[4].is_some() && s[2].is_none());
            assert_eq!(got, want, "(With<Big>, Without<ZTab>)");
        }
        4 => {
            let mut got = BTreeMap::new();
            for (e, tab, spa, ztab, zspa, big, big_spa) in st.data.iter(world) {
                let slots = slots_of(tab, spa, ztab, zspa, big, big_spa);
                assert!(got.insert(e, slots).is_none(), "data query: {e:?} twice");
            }
            assert_eq!(got, m.live, "data query items");
        }
        5 => {
            let mut got = BTreeMap::new();
            for (e, spa, big) in st.required.iter(world) {
                check_aligned(big);
                assert!(got.insert(e, (spa.value(), big.value())).is_none());
            }
            let want: BTreeMap<Entity, (u64, u64)> = m
                .live
                .iter()
                .filter_map(|(&e, s)| Some((e, (s[1]?, s[4]?))))
                .collect();
            assert_eq!(got, want, "(&Spa, &Big)");
        }
        6 => {
            let mut got = BTreeSet::new();
            for (e, tab) in st.mut_tab.iter_mut(world) {
                tab.mutate();
                assert!(got.insert(e), "(&mut Tab) With<Big>: {e:?} twice");
            }
            assert_eq!(got, m.matching(|s| s[0].is_some() && s[4].is_some()));
            for e in got {
                let slot = &mut m.live.get_mut(&e).unwrap()[0];
                *slot = slot.map(Tab::mutated);
                m.changed(e, 0);
            }
        }
        7 => {
            let mut got = BTreeMap::new();
            for (e, spa, big) in st.mut_spa.iter_mut(world) {
                spa.mutate();
                let had_big = big.is_some();
                if let Some(big) = big {
                    check_aligned(&*big);
                    big.mutate();
                }
                assert!(got.insert(e, had_big).is_none(), "(&mut Spa): {e:?} twice");
            }
            let want: BTreeMap<Entity, bool> = m
                .live
                .iter()
                .filter(|(_, s)| s[1].is_some())
                .map(|(&e, s)| (e, s[4].is_some()))
                .collect();
            assert_eq!(got, want, "(&mut Spa, Option<&mut Big>)");
            for (e, had_big) in got {
                let slots = m.live.get_mut(&e).unwrap();
                slots[1] = slots[1].map(Spa::mutated);
                if had_big {
                    slots[4] = slots[4].map(Big::mutated);
                }
                m.changed(e, 1);
                if had_big {
                    m.changed(e, 4);
                }
            }
        }
        8 => {
            let mut got = BTreeMap::new();
            for (e, ztab, big_spa) in st.zst.iter_mut(world) {
                check_aligned(ztab);
                let had = big_spa.is_some();
                if let Some(b) = big_spa {
                    check_aligned(&*b);
                    b.mutate();
                }
                assert!(got.insert(e, had).is_none(), "(&ZTab, ..): {e:?} twice");
            }
            let want: BTreeMap<Entity, bool> = m
                .live
                .iter()
                .filter(|(_, s)| s[2].is_some() && s[0].is_none())
                .map(|(&e, s)| (e, s[5].is_some()))
                .collect();
            assert_eq!(got, want, "(&ZTab, Option<&mut BigSpa>) Without<Tab>");
            for (e, had) in got {
                if had {
                    let slot = &mut m.live.get_mut(&e).unwrap()[5];
                    *slot = slot.map(BigSpa::mutated);
                    m.changed(e, 5);
                }
            }
        }
        9 => {
            let mut got = BTreeMap::new();
            for (e, big_spa, zspa, spa) in st.dense.iter_mut(world) {
                check_aligned(&*big_spa);
                check_aligned(zspa);
                let before = (big_spa.value(), spa.value());
                big_spa.mutate();
                assert!(got.insert(e, before).is_none(), "dense query: {e:?} twice");
            }
            let want: BTreeMap<Entity, (u64, u64)> = m
                .live
                .iter()
                .filter_map(|(&e, s)| {
                    s[3]?;
                    Some((e, (s[5]?, s[1]?)))
                })
                .collect();
            assert_eq!(got, want, "(&mut BigSpa, &ZSpa, &Spa)");
            for e in got.into_keys() {
                let slot = &mut m.live.get_mut(&e).unwrap()[5];
                *slot = slot.map(BigSpa::mutated);
                m.changed(e, 5);
            }
        }
        TICK_BASE..QUERIES => run_tick_query(q - TICK_BASE, world, st, m),
        _ => unreachable!(),
    }
}

/// Runs tick-filtered state `k` (0..5 the fixed ones, 5 and 6 the late
/// ones, if built) and checks it against the event log.
fn run_tick_query(k: usize, world: &World, st: &mut States, m: &Model) {
    let since = st.seen[k];
    let (got, want, name) = match k {
        0 => (
            entity_set(st.added_tab.iter(world), "Added<Tab>"),
            m.ticked_since(since, 0, Event::Added),
            "Added<Tab>",
        ),
        1 => (
            entity_set(st.changed_tab.iter(world), "Changed<Tab>"),
            m.ticked_since(since, 0, Event::Changed),
            "Changed<Tab>",
        ),
        2 => (
            entity_set(st.added_spa.iter(world), "Added<Spa>"),
            m.ticked_since(since, 1, Event::Added),
            "Added<Spa>",
        ),
        3 => (
            entity_set(st.changed_spa.iter(world), "Changed<Spa>"),
            m.ticked_since(since, 1, Event::Changed),
            "Changed<Spa>",
        ),
        4 => (
            entity_set(st.or_ticks.iter(world), "Or<Changed, Added>"),
            &m.ticked_since(since, 4, Event::Changed) | &m.ticked_since(since, 3, Event::Added),
            "Or<(Changed<Big>, Added<ZSpa>)>",
        ),
        5 => match &mut st.late_big_spa {
            None => return,
            Some(s) => (
                entity_set(s.iter(world), "Changed<BigSpa>"),
                m.ticked_since(since, 5, Event::Changed),
                "Changed<BigSpa> (late)",
            ),
        },
        _ => match &mut st.late_ztab {
            None => return,
            Some(s) => (
                entity_set(s.iter(world), "Added<ZTab>"),
                m.ticked_since(since, 2, Event::Added),
                "Added<ZTab> (late)",
            ),
        },
    };
    assert_eq!(got, want, "{name} (events since position {since})");
    st.seen[k] = m.events.len();
    st.idle[k] = 0;
}

// ----- checking the world against the model ----------------------------------------------

fn check_get<C: Comp>(world: &World, e: Entity, slots: Option<&Slots>) {
    let name = NAMES[C::IDX];
    match (world.get::<C>(e), slots) {
        (Ok(c), Some(s)) => {
            check_aligned(c);
            assert_eq!(Some(c.value()), s[C::IDX], "get::<{name}>({e:?})");
        }
        (Err(ComponentError::NoSuchEntity(x)), None) => assert_eq!(x, e),
        (Err(ComponentError::MissingComponent { entity, component }), Some(s)) => {
            assert_eq!(entity, e);
            assert_eq!(component, name);
            assert_eq!(s[C::IDX], None, "get::<{name}>({e:?}) says missing");
        }
        (got, want) => panic!(
            "get::<{name}>({e:?}): world {:?}, model {want:?}",
            got.map(|c| c.value())
        ),
    }
    assert_eq!(
        world.has::<C>(e),
        slots.is_some_and(|s| s[C::IDX].is_some()),
        "has::<{name}>({e:?})"
    );
}

fn check_entity(world: &World, m: &Model, e: Entity) {
    let mut likes = world.targets::<Lk>(e).to_vec();
    likes.sort();
    assert_eq!(likes, m.live_likes(e), "targets::<Lk>({e:?})");
    assert_eq!(world.parent(e), m.live_parent(e), "parent({e:?})");
    let slots = m.live.get(&e);
    assert_eq!(world.contains(e), slots.is_some(), "contains({e:?})");
    check_get::<Tab>(world, e, slots);
    check_get::<Spa>(world, e, slots);
    check_get::<ZTab>(world, e, slots);
    check_get::<ZSpa>(world, e, slots);
    check_get::<Big>(world, e, slots);
    check_get::<BigSpa>(world, e, slots);
}

/// The full check: the world's invariants and every handle ever seen.
fn check_world(world: &World, m: &Model) {
    world.check_invariants();
    check_counts(world, m);
    for &e in &m.known {
        check_entity(world, m, e);
    }
}

fn check_counts(world: &World, m: &Model) {
    assert_eq!(world.len(), m.live.len(), "len");
    assert_eq!(world.is_empty(), m.live.is_empty(), "is_empty");
    assert_eq!(
        live_counted(),
        m.expected_live(),
        "live counted values (constructions - drops)"
    );
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

// ----- recording commands ----------------------------------------------------------------

/// A [`CmdOp`] with its handles picked.
#[derive(Clone, Copy, Debug)]
enum Resolved {
    Spawn { kind: u8, v: u32 },
    Insert { e: Entity, kind: u8, v: u32 },
    InsertSpawned { back: u8, kind: u8, v: u32 },
    Remove { e: Entity, kind: u8 },
    Despawn(Entity),
}

fn resolve(m: &Model, op: CmdOp) -> Resolved {
    match op {
        CmdOp::Spawn { kind, v } => Resolved::Spawn { kind, v },
        CmdOp::Insert { who, kind, v } => Resolved::Insert {
            e: m.pick(who),
            kind,
            v,
        },
        CmdOp::InsertSpawned { back, kind, v } => Resolved::InsertSpawned { back, kind, v },
        CmdOp::Remove { who, kind } => Resolved::Remove {
            e: m.pick(who),
            kind,
        },
        CmdOp::Despawn(who) => Resolved::Despawn(m.pick(who)),
    }
}

/// What both `CommandBuffer` and `Commands` record.
trait Recorder {
    fn spawn_bundle<B: Bundle>(&mut self, bundle: B) -> Entity;
    fn insert_bundle<B: Bundle>(&mut self, e: Entity, bundle: B);
    fn remove_bundle<B: Bundle>(&mut self, e: Entity);
    fn despawn_entity(&mut self, e: Entity);
}

impl Recorder for CommandBuffer {
    fn spawn_bundle<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.spawn(bundle)
    }
    fn insert_bundle<B: Bundle>(&mut self, e: Entity, bundle: B) {
        self.insert(e, bundle);
    }
    fn remove_bundle<B: Bundle>(&mut self, e: Entity) {
        self.remove::<B>(e);
    }
    fn despawn_entity(&mut self, e: Entity) {
        self.despawn(e);
    }
}

impl Recorder for Commands<'_, '_> {
    fn spawn_bundle<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.spawn(bundle)
    }
    fn insert_bundle<B: Bundle>(&mut self, e: Entity, bundle: B) {
        self.insert(e, bundle);
    }
    fn remove_bundle<B: Bundle>(&mut self, e: Entity) {
        self.remove::<B>(e);
    }
    fn despawn_entity(&mut self, e: Entity) {
        self.despawn(e);
    }
}

/// Records `op` into `rec`; `spawned` is the ids this recorder spawned so
/// far, in order. Returns the entity a spawn produced.
fn record<R: Recorder>(rec: &mut R, op: Resolved, spawned: &[Entity]) -> Option<Entity> {
    struct Spawn<'a, R>(&'a mut R, u32);
    impl<R: Recorder> KindVisitor for Spawn<'_, R> {
        type Out = Entity;
        fn visit<B: ModelBundle>(self) -> Entity {
            self.0.spawn_bundle(B::make(self.1))
        }
    }
    struct Insert<'a, R>(&'a mut R, Entity, u32);
    impl<R: Recorder> KindVisitor for Insert<'_, R> {
        type Out = ();
        fn visit<B: ModelBundle>(self) {
            self.0.insert_bundle(self.1, B::make(self.2));
        }
    }
    struct Remove<'a, R>(&'a mut R, Entity);
    impl<R: Recorder> KindVisitor for Remove<'_, R> {
        type Out = ();
        fn visit<B: ModelBundle>(self) {
            self.0.remove_bundle::<B>(self.1);
        }
    }
    match op {
        Resolved::Spawn { kind, v } => return Some(with_kind(kind, Spawn(rec, v))),
        Resolved::Insert { e, kind, v } => with_kind(kind, Insert(rec, e, v)),
        Resolved::InsertSpawned { back, kind, v } => {
            if let Some(&e) = spawned.iter().rev().nth(usize::from(back)) {
                with_kind(kind, Insert(rec, e, v));
            }
        }
        Resolved::Remove { e, kind } => with_kind(kind, Remove(rec, e)),
        Resolved::Despawn(e) => rec.despawn_entity(e),
    }
    None
}

/// The model's side of [`record`]: the pending command `op` became, given
/// the ids spawned so far and the one this op spawned (if any).
fn model_record(
    m: &mut Model,
    op: Resolved,
    spawned: &[Entity],
    new: Option<Entity>,
) -> Option<Pending> {
    match op {
        Resolved::Spawn { kind, v } => {
            let e = new.expect("a spawn returns its id");
            m.fresh(e);
            m.reserved.push(e);
            Some(Pending::Insert { e, kind, v })
        }
        Resolved::Insert { e, kind, v } => Some(Pending::Insert { e, kind, v }),
        Resolved::InsertSpawned { back, kind, v } => spawned
            .iter()
            .rev()
            .nth(usize::from(back))
            .map(|&e| Pending::Insert { e, kind, v }),
        Resolved::Remove { e, kind } => Some(Pending::Remove { e, kind }),
        Resolved::Despawn(e) => Some(Pending::Despawn(e)),
    }
}

// ----- running one operation -------------------------------------------------------------

struct Case {
    world: World,
    states: States,
    buffer: CommandBuffer,
    model: Model,
}

fn do_spawn(c: &mut Case, kind: u8, v: u32) {
    struct V<'a>(&'a mut World, u32);
    impl KindVisitor for V<'_> {
        type Out = Entity;
        fn visit<B: ModelBundle>(self) -> Entity {
            self.0.spawn(B::make(self.1))
        }
    }
    c.model.flush();
    let e = with_kind(kind, V(&mut c.world, v));
    c.model.fresh(e);
    c.model.spawn(e, &kind_expected(kind, v));
}

/// `n`'s high bit picks `World::extend` over `spawn_batch`; the rest (mod
/// [`MAX_BATCH`]) is the count.
fn do_spawn_batch(c: &mut Case, kind: u8, v: u32, n: u8) {
    struct V<'a>(&'a mut World, u32, u8, bool);
    impl KindVisitor for V<'_> {
        type Out = Vec<Entity>;
        fn visit<B: ModelBundle>(self) -> Vec<Entity> {
            let v = self.1;
            let bundles = (0..u32::from(self.2)).map(|i| B::make(v.wrapping_add(i)));
            if self.3 {
                self.0.extend(bundles);
                Vec::new()
            } else {
                self.0.spawn_batch(bundles)
            }
        }
    }
    let extend = n & 0x80 != 0;
    let n = (n & 0x7f) % MAX_BATCH;
    c.model.flush();
    let es = with_kind(kind, V(&mut c.world, v, n, extend));
    let es = if extend {
        // The new entities: those the model does not know (reserved ones
        // were flushed above), appended in order to one table.
        let mut new: Vec<Entity> = c
            .world
            .archetypes()
            .flat_map(|a| a.entities().iter().copied())
            .collect();
        new.retain(|e| !c.model.live.contains_key(e));
        new
    } else {
        es
    };
    assert_eq!(es.len(), usize::from(n), "spawn_batch / extend count");
    for (i, e) in es.into_iter().enumerate() {
        c.model.fresh(e);
        c.model
            .spawn(e, &kind_expected(kind, v.wrapping_add(i as u32)));
    }
}

fn do_insert(c: &mut Case, e: Entity, kind: u8, v: u32) {
    struct V<'a>(&'a mut World, Entity, u32);
    impl KindVisitor for V<'_> {
        type Out = Result<(), EntityError>;
        fn visit<B: ModelBundle>(self) -> Self::Out {
            self.0.insert(self.1, B::make(self.2))
        }
    }
    c.model.flush();
    let result = with_kind(kind, V(&mut c.world, e, v));
    check_insert(&mut c.model, e, result, &kind_expected(kind, v));
}

fn check_insert(
    m: &mut Model,
    e: Entity,
    result: Result<(), EntityError>,
    values: &[(usize, u64)],
) {
    if m.live.contains_key(&e) {
        assert_eq!(result, Ok(()), "insert into live {e:?}");
        m.insert(e, values);
    } else {
        assert_eq!(
            result,
            Err(EntityError::NoSuchEntity(e)),
            "insert into dead {e:?}"
        );
    }
}

fn do_insert_one(c: &mut Case, e: Entity, comp: u8, v: u32) {
    struct V<'a>(&'a mut World, Entity, u32);
    impl CompVisitor for V<'_> {
        type Out = (Result<(), EntityError>, (usize, u64));
        fn visit<C: Comp>(self) -> Self::Out {
            let result = self.0.insert_one(self.1, C::make(self.2));
            (result, (C::IDX, C::expected(self.2)))
        }
    }
    c.model.flush();
    let (result, value) = with_comp(comp, V(&mut c.world, e, v));
    check_insert(&mut c.model, e, result, &[value]);
}

/// Checks a remove's result (`Ok` with the removed values) and applies it.
fn check_remove(
    m: &mut Model,
    e: Entity,
    idxs: &[usize],
    result: Result<Vec<(usize, u64)>, ComponentError>,
) {
    if !m.live.contains_key(&e) {
        assert_eq!(
            result,
            Err(ComponentError::NoSuchEntity(e)),
            "remove from dead {e:?}"
        );
        return;
    }
    let missing = idxs.iter().copied().find(|&i| m.live[&e][i].is_none());
    match missing {
        Some(i) => assert_eq!(
            result,
            Err(ComponentError::MissingComponent {
                entity: e,
                component: NAMES[i].to_owned()
            }),
            "remove of a missing component must fail naming the first missing one"
        ),
        None => {
            let slots = m.live.get_mut(&e).unwrap();
            let want: Vec<(usize, u64)> = idxs
                .iter()
                .map(|&i| (i, slots[i].take().unwrap()))
                .collect();
            assert_eq!(result, Ok(want), "removed values of {e:?}");
        }
    }
}

fn do_remove(c: &mut Case, e: Entity, kind: u8) {
    struct V<'a>(&'a mut World, Entity);
    impl KindVisitor for V<'_> {
        type Out = Result<Vec<(usize, u64)>, ComponentError>;
        fn visit<B: ModelBundle>(self) -> Self::Out {
            let bundle = self.0.remove::<B>(self.1)?;
            let mut values = Vec::new();
            bundle.values(&mut values);
            Ok(values)
        }
    }
    c.model.flush();
    let result = with_kind(kind, V(&mut c.world, e));
    check_remove(&mut c.model, e, &kind_idxs(kind), result);
}

fn do_remove_one(c: &mut Case, e: Entity, comp: u8) {
    struct V<'a>(&'a mut World, Entity);
    impl CompVisitor for V<'_> {
        type Out = (usize, Result<Vec<(usize, u64)>, ComponentError>);
        fn visit<C: Comp>(self) -> Self::Out {
            let result = self
                .0
                .remove_one::<C>(self.1)
                .map(|c| vec![(C::IDX, c.value())]);
            (C::IDX, result)
        }
    }
    c.model.flush();
    let (idx, result) = with_comp(comp, V(&mut c.world, e));
    check_remove(&mut c.model, e, &[idx], result);
}

fn do_get(c: &Case, e: Entity, comp: u8) {
    struct V<'a>(&'a World, Entity, Option<&'a Slots>);
    impl CompVisitor for V<'_> {
        type Out = ();
        fn visit<C: Comp>(self) {
            check_get::<C>(self.0, self.1, self.2);
        }
    }
    with_comp(comp, V(&c.world, e, c.model.live.get(&e)));
}

fn do_get_mut(c: &mut Case, e: Entity, comp: u8) {
    struct V<'a>(&'a mut World, &'a mut Model, Entity);
    impl CompVisitor for V<'_> {
        type Out = ();
        fn visit<C: Comp>(self) {
            let V(world, m, e) = self;
            let result = world.get_mut::<C>(e).map(|c| {
                check_aligned(&*c);
                c.mutate();
            });
            match m.live.get_mut(&e) {
                None => assert_eq!(result, Err(ComponentError::NoSuchEntity(e))),
                Some(slots) => match slots[C::IDX] {
                    None => assert_eq!(
                        result,
                        Err(ComponentError::MissingComponent {
                            entity: e,
                            component: NAMES[C::IDX].to_owned()
                        })
                    ),
                    Some(old) => {
                        assert_eq!(result, Ok(()));
                        slots[C::IDX] = Some(C::mutated(old));
                        m.changed(e, C::IDX);
                    }
                },
            }
        }
    }
    with_comp(comp, V(&mut c.world, &mut c.model, e));
}

fn do_query_get(c: &mut Case, e: Entity) {
    let got = c
        .states
        .data
        .get(&c.world, e)
        .map(|(x, tab, spa, ztab, zspa, big, big_spa)| {
            assert_eq!(x, e);
            slots_of(tab, spa, ztab, zspa, big, big_spa)
        });
    match c.model.live.get(&e) {
        None => assert_eq!(got, Err(QueryEntityError::NoSuchEntity(e))),
        Some(slots) => assert_eq!(got, Ok(*slots), "QueryState::get({e:?})"),
    }
    let got = c
        .states
        .required
        .get(&c.world, e)
        .map(|(_, spa, big)| (spa.value(), big.value()));
    match c.model.live.get(&e) {
        None => assert_eq!(got, Err(QueryEntityError::NoSuchEntity(e))),
        Some(s) => match (s[1], s[4]) {
            (Some(spa), Some(big)) => assert_eq!(got, Ok((spa, big))),
            _ => assert!(
                matches!(got, Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == e),
                "(&Spa, &Big) on {e:?} lacking one: {got:?}"
            ),
        },
    }
}

fn do_query_get_mut(c: &mut Case, e: Entity) {
    let got = c
        .states
        .mut_spa
        .get_mut(&mut c.world, e)
        .map(|(x, spa, big)| {
            assert_eq!(x, e);
            spa.mutate();
            let had_big = big.is_some();
            if let Some(big) = big {
                check_aligned(&*big);
                big.mutate();
            }
            had_big
        });
    let m = &mut c.model;
    match m.live.get_mut(&e) {
        None => assert_eq!(got, Err(QueryEntityError::NoSuchEntity(e))),
        Some(slots) => match slots[1] {
            None => assert!(
                matches!(got, Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) if entity == e),
                "(&mut Spa, ..) on {e:?} lacking Spa: {got:?}"
            ),
            Some(spa) => {
                let had_big = slots[4].is_some();
                assert_eq!(got, Ok(had_big), "QueryState::get_mut({e:?})");
                slots[1] = Some(Spa::mutated(spa));
                slots[4] = slots[4].map(Big::mutated);
                m.changed(e, 1);
                if had_big {
                    m.changed(e, 4);
                }
            }
        },
    }
}

fn do_late_track(c: &mut Case, which: u8) {
    let st = &mut c.states;
    // A new state's first run reports everything: event position 0.
    if which & 1 == 0 {
        if st.late_big_spa.is_none() {
            st.late_big_spa = Some(c.world.query_filtered());
            st.seen[5] = 0;
            st.idle[5] = 0;
        }
    } else if st.late_ztab.is_none() {
        st.late_ztab = Some(c.world.query_filtered());
        st.seen[6] = 0;
        st.idle[6] = 0;
    }
}

fn do_advance(c: &mut Case, ticks: u32) {
    let ticks = ticks % MAX_ADVANCE;
    // Keep every tick-filtered state within its documented idle limit: run
    // (and check) it first if this advance would take it past.
    for k in 0..TICK_STATES {
        if c.states.idle[k] + u64::from(ticks) > MAX_IDLE {
            run_tick_query(k, &c.world, &mut c.states, &c.model);
        }
    }
    c.world.advance_change_tick(ticks);
    for idle in &mut c.states.idle {
        *idle += u64::from(ticks);
    }
}

fn do_buffer_apply(c: &mut Case) {
    let commands = std::mem::take(&mut c.model.commands);
    c.model.buffer_spawned.clear();
    let result = c.buffer.apply(&mut c.world);
    assert!(c.buffer.is_empty(), "apply leaves the buffer empty");
    let want = c.model.apply(commands);
    let got: Vec<(usize, CommandError)> = match result {
        Ok(()) => Vec::new(),
        Err(errors) => {
            assert_eq!(errors.len(), errors.iter().count());
            errors.iter().cloned().collect()
        }
    };
    assert_eq!(got, want, "CommandBuffer::apply errors");
}

fn do_buffer_record(c: &mut Case, op: CmdOp) {
    let op = resolve(&c.model, op);
    let new = record(&mut c.buffer, op, &c.model.buffer_spawned);
    if let Some(e) = new {
        assert!(!c.world.contains(e), "a buffer's new id is not live yet");
    }
    let spawned = std::mem::take(&mut c.model.buffer_spawned);
    let pending = model_record(&mut c.model, op, &spawned, new);
    c.model.buffer_spawned = spawned;
    c.model.buffer_spawned.extend(new);
    c.model.commands.extend(pending);
}

fn do_system_commands(c: &mut Case, ops: &[CmdOp]) {
    let plan: Vec<Resolved> = ops
        .iter()
        .take(MAX_SYS_COMMANDS)
        .map(|&op| resolve(&c.model, op))
        .collect();
    let in_system = plan.clone();
    // The system records every command through `Commands`; running it once
    // applies them (failures are logged, not returned).
    let spawned: Vec<Entity> = c.world.run_system_once(move |mut commands: Commands| {
        let mut spawned = Vec::new();
        for &op in &in_system {
            if let Some(e) = record(&mut commands, op, &spawned) {
                spawned.push(e);
            }
        }
        spawned
    });
    let m = &mut c.model;
    let mut so_far = Vec::new();
    let mut pending = Vec::new();
    let mut ids = spawned.into_iter();
    for op in plan {
        let new = match op {
            Resolved::Spawn { .. } => Some(ids.next().expect("one id per spawn")),
            _ => None,
        };
        pending.extend(model_record(m, op, &so_far, new));
        so_far.extend(new);
    }
    assert!(ids.next().is_none(), "more ids than spawns");
    m.apply(pending);
}

fn step(c: &mut Case, op: &Op) {
    match *op {
        Op::Spawn { kind, v } => do_spawn(c, kind, v),
        Op::SpawnBatch { kind, v, n } => do_spawn_batch(c, kind, v, n),
        Op::Despawn(who) => {
            let e = c.model.pick(who);
            c.model.flush();
            let result = c.world.despawn(e);
            if c.model.live.remove(&e).is_some() {
                assert_eq!(result, Ok(()), "despawn live {e:?}");
            } else {
                assert_eq!(
                    result,
                    Err(EntityError::NoSuchEntity(e)),
                    "despawn dead {e:?}"
                );
            }
        }
        Op::Insert { who, kind, v } => {
            let e = c.model.pick(who);
            do_insert(c, e, kind, v);
        }
        Op::Relate { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            c.model.flush();
            let result = c.world.relate(s, t, Lk);
            let alive = c.model.live.contains_key(&s) && c.model.live.contains_key(&t);
            assert_eq!(result.is_ok(), alive, "relate({s:?}, {t:?})");
            if alive {
                c.model.likes.insert((s, t));
            }
        }
        Op::Unrelate { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            c.model.flush();
            let had = c.model.live_likes(s).contains(&t);
            let result = c.world.unrelate::<Lk>(s, t);
            assert_eq!(result.is_ok(), had, "unrelate({s:?}, {t:?})");
            c.model.likes.remove(&(s, t));
        }
        Op::Parent { child, parent } => {
            let (ch, p) = (c.model.pick(child), c.model.pick(parent));
            c.model.flush();
            let result = c.world.add_child(p, ch);
            let alive = c.model.live.contains_key(&ch) && c.model.live.contains_key(&p);
            // `ChildOf` is acyclic: a child under itself or a descendant is
            // refused, changing nothing.
            let ok = alive && !c.model.is_ancestor_or_self(ch, p);
            assert_eq!(result.is_ok(), ok, "add_child({p:?}, {ch:?}): {result:?}");
            if ok {
                c.model.parents.insert(ch, p);
            }
        }
        Op::DespawnRecursive(who) => {
            let e = c.model.pick(who);
            c.model.flush();
            let alive = c.model.live.contains_key(&e);
            let doomed = if alive {
                c.model.subtree(e)
            } else {
                Vec::new()
            };
            let result = c.world.despawn_recursive(e);
            assert_eq!(result.is_ok(), alive, "despawn_recursive({e:?})");
            for d in doomed {
                c.model.live.remove(&d);
            }
        }
        Op::InsertOne { who, comp, v } => {
            let e = c.model.pick(who);
            do_insert_one(c, e, comp, v);
        }
        Op::Remove { who, kind } => {
            let e = c.model.pick(who);
            do_remove(c, e, kind);
        }
        Op::RemoveOne { who, comp } => {
            let e = c.model.pick(who);
            do_remove_one(c, e, comp);
        }
        Op::Get { who, comp } | Op::Has { who, comp } => {
            let e = c.model.pick(who);
            do_get(c, e, comp);
        }
        Op::GetMut { who, comp } => {
            let e = c.model.pick(who);
            do_get_mut(c, e, comp);
        }
        Op::Contains(who) => {
            let e = c.model.pick(who);
            check_entity(&c.world, &c.model, e);
        }
        Op::Query(q) => {
            let q = usize::from(q) % QUERIES;
            run_query(q, &mut c.world, &mut c.states, &mut c.model);
        }
        Op::FreshQuery(q) => {
            let q = usize::from(q) % QUERIES;
            let mut fresh = States::new(&mut c.world);
            run_query(q, &mut c.world, &mut fresh, &mut c.model);
        }
        Op::QueryGet(who) => {
            let e = c.model.pick(who);
            do_query_get(c, e);
        }
        Op::QueryGetMut(who) => {
            let e = c.model.pick(who);
            do_query_get_mut(c, e);
        }
        Op::QueryTicks => {
            for k in 0..TICK_STATES {
                run_tick_query(k, &c.world, &mut c.states, &c.model);
            }
        }
        Op::LateTrack(which) => do_late_track(c, which),
        Op::AdvanceTicks(ticks) => do_advance(c, ticks),
        Op::Clear => {
            c.model.flush();
            c.world.clear();
            c.model.live.clear();
        }
        Op::Reserve => {
            let e = c.world.reserve_entity();
            assert!(!c.world.contains(e), "a reserved id is not live yet");
            c.model.fresh(e);
            c.model.reserved.push(e);
        }
        Op::Buf(op) => do_buffer_record(c, op),
        Op::BufApply => do_buffer_apply(c),
        Op::Sys(ref ops) => do_system_commands(c, ops),
        Op::Arm { site, countdown } => ARMED.with(|a| a.set(Some((site, countdown % 4)))),
        Op::SpawnHooked { v, boom } => {
            c.model.flush();
            let e = if boom {
                c.world.spawn((Hk::new(v), Bm::new()))
            } else {
                c.world.spawn(Hk::new(v))
            };
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
        Op::RemoveBoom(who) => {
            let e = c.model.pick(who);
            let had = c.world.has::<Bm>(e);
            c.model.flush();
            let result = c.world.remove::<Bm>(e).map(drop);
            assert_eq!(result.is_ok(), had, "remove::<Bm>({e:?}): {result:?}");
        }
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
fn check_extras(c: &mut Case, fired: Option<Site>) {
    let hk: Vec<Entity> = c.states.extra_hk.iter(&c.world).collect();
    let df = c.states.extra_df.iter(&c.world).count() as u64;
    let bm = c.states.extra_bm.iter(&c.world).count() as u64;
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
fn resync(c: &mut Case, fired: Site) {
    ARMED.with(|a| a.set(None));
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
    for (e, tab, spa, ztab, zspa, big, big_spa) in c.states.data.iter(&c.world) {
        live.insert(e, slots_of(tab, spa, ztab, zspa, big, big_spa));
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

/// A handle no world here ever hands out.
fn never_spawned() -> Entity {
    Entity::from_bits((1u64 << 32) | u64::from(u32::MAX - 1)).unwrap()
}

/// Runs `ops` on a new world and on the model, checking them against each
/// other after every step; then drops everything and checks that every
/// counted value was dropped exactly once.
pub fn run(ops: &[Op]) {
    COUNTS.with(|c| c.set(Counts::default()));
    EXTRA.with(|c| c.set(([0; 3], [0; 3])));
    FIRED_LOG.with(|l| l.borrow_mut().clear());
    ARMED.with(|a| a.set(None));
    quiet_injected_panics();
    let mut world = World::new();
    world
        .register_required::<Hk, Df>()
        .expect("no requirement cycle");
    world.observe(|_: Trigger<OnAdd<Hk>>, _: DeferredWorld| maybe_panic(Site::Observer));
    // Tick-filtered states first: they switch change tracking on.
    let states = States::new(&mut world);
    let buffer = CommandBuffer::new(&world);
    let mut model = Model::default();
    model.learn(never_spawned());
    let mut case = Case {
        world,
        states,
        buffer,
        model,
    };
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
    let Case {
        world,
        states,
        buffer,
        model,
        ..
    } = case;
    drop(states);
    drop(buffer);
    assert_eq!(
        live_counted(),
        model.counted_in_world(),
        "dropping the command buffer drops exactly its pending values"
    );
    drop(world);
    let c = counts();
    assert_eq!(
        c.made, c.dropped,
        "per type ({NAMES:?}): constructions != drops after dropping the world"
    );
    assert_eq!(
        extra_live(),
        [0; 3],
        "Hk, Df, Bm left after dropping the world"
    );
}
