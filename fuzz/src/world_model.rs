//! The model of the world that both world-checking harnesses run against:
//! the `world_ops` fuzz target (`fuzz/src/world_ops.rs`, replayed by
//! `tests/fuzz_regress.rs`) and the proptest model test (`tests/model.rs`).
//! Each includes this file with `#[path]` and keeps its own parts: how
//! operations are generated (`arbitrary` in the fuzz target, proptest
//! strategies in the model test), how often the world is checked, and the
//! fuzz target's injected panics.
//!
//! Here: the component types the model knows (`Tab` table, heap payload;
//! `Spa` sparse, heap payload; `ZTab` zero-sized, table; `ZSpa` zero-sized,
//! sparse; `Big` `align(64)`, table, heap payload with a check word;
//! `BigSpa` `align(64)`, sparse; `Pod` `align(64)` and `ZPod` zero-sized,
//! both table, both without drop glue) and the bundle kinds built from
//! them; the
//! model itself (a map from entity to one optional value per component type,
//! plus the ids reserved but not yet flushed, the commands recorded but not
//! yet applied, a log of add/change events for `Added`/`Changed` filters and
//! the relation edges made); the cached query states and the code that runs
//! each on the world and the model; the operations, each done on both and
//! checked; and the checks of the whole world against the model.
//!
//! Counting: every value of the counted types (`COUNTED`) counts its
//! construction and its drop, per type and per thread (tests run cases on
//! several threads at once; nothing here moves a value to another thread).
//! After every check, constructions minus drops must equal the values the
//! world and the pending commands hold, and no type may be dropped more
//! often than made; [`finish`] drops everything and wants them equal.

// Each harness uses its own subset of these (the fuzz target the late
// tick states and `Commands`, the model test `insert_one` through `insert`).
#![allow(dead_code)]

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use arbitrary::Arbitrary;
use mosaic::CommandError;
use mosaic::prelude::*;

// ----- components ------------------------------------------------------------------------

pub const N: usize = 8;
pub const NAMES: [&str; N] = ["Tab", "Spa", "ZTab", "ZSpa", "Big", "BigSpa", "Pod", "ZPod"];
/// Which component types count their constructions and drops.
pub const COUNTED: [bool; N] = [true, true, true, false, true, false, false, false];

#[derive(Clone, Copy, Default)]
pub struct Counts {
    pub made: [u64; N],
    pub dropped: [u64; N],
}

thread_local! {
    // Per thread: the regression test runs inputs on several test threads
    // at once, and the interpreter never moves a value to another thread.
    static COUNTS: Cell<Counts> = Cell::new(Counts::default());
}

pub fn count(i: usize, made: bool) {
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

pub fn counts() -> Counts {
    COUNTS.with(Cell::get)
}

/// Live values of the counted types: constructions minus drops.
pub fn live_counted() -> u64 {
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
pub struct Tab {
    val: Box<u32>,
}

#[derive(Component)]
#[component(storage = "sparse")]
pub struct Spa {
    val: Box<u32>,
}

#[derive(Component)]
pub struct ZTab;

#[derive(Component)]
#[component(storage = "sparse")]
pub struct ZSpa;

#[derive(Component)]
#[repr(align(64))]
pub struct Big {
    val: u64,
    /// Always `!val`: a value read from freed or moved-from memory shows.
    check: Box<u64>,
}

#[derive(Component)]
#[repr(align(64))]
#[component(storage = "sparse")]
pub struct BigSpa(u64);

/// `align(64)`, table, and no drop glue: its column takes the paths of a
/// type with nothing to drop (no drop function), as `Big` takes the others.
#[derive(Component)]
#[repr(align(64))]
pub struct Pod(u64);

/// Zero-sized, table, no drop glue (`ZTab`, counted, has a `Drop`).
#[derive(Component)]
pub struct ZPod;

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

// `Clone` (so `clone_entity` copies them, each copy counted as made):
// `Tab`, `Spa`, `ZSpa`, `Big`. The others have no `Clone` and are skipped.
impl Clone for Tab {
    fn clone(&self) -> Self {
        count(0, true);
        Tab {
            val: self.val.clone(),
        }
    }
}

impl Clone for Spa {
    fn clone(&self) -> Self {
        count(1, true);
        Spa {
            val: self.val.clone(),
        }
    }
}

impl Clone for ZSpa {
    fn clone(&self) -> Self {
        ZSpa
    }
}

impl Clone for Big {
    fn clone(&self) -> Self {
        count(4, true);
        Big {
            val: self.val,
            check: self.check.clone(),
        }
    }
}

/// Which slots `clone_entity` copies (their types are `Clone`).
pub const CLONED: [bool; N] = [true, true, false, true, true, false, false, false];

/// A component type the model knows: its slot, and how values map to `u64`.
pub trait Comp: Component + Sized {
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

impl Comp for Pod {
    const IDX: usize = 6;
    fn make(v: u32) -> Self {
        Pod(u64::from(v) * 5 + 2)
    }
    fn expected(v: u32) -> u64 {
        u64::from(v) * 5 + 2
    }
    fn value(&self) -> u64 {
        self.0
    }
    fn mutate(&mut self) {
        self.0 = self.0.wrapping_add(11);
    }
    fn mutated(old: u64) -> u64 {
        old.wrapping_add(11)
    }
}

impl Comp for ZPod {
    const IDX: usize = 7;
    fn make(_: u32) -> Self {
        ZPod
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

/// Runs `visit::<C>()` for component slot `comp`.
pub trait CompVisitor {
    type Out;
    fn visit<C: Comp>(self) -> Self::Out;
}

pub fn with_comp<V: CompVisitor>(comp: u8, v: V) -> V::Out {
    match usize::from(comp) % N {
        0 => v.visit::<Tab>(),
        1 => v.visit::<Spa>(),
        2 => v.visit::<ZTab>(),
        3 => v.visit::<ZSpa>(),
        4 => v.visit::<Big>(),
        5 => v.visit::<BigSpa>(),
        6 => v.visit::<Pod>(),
        _ => v.visit::<ZPod>(),
    }
}

// ----- bundles ---------------------------------------------------------------------------

/// A bundle the model knows: how to build it, which slots it fills, and the
/// model values of a built one.
pub trait ModelBundle: Bundle + Send + 'static {
    fn make(v: u32) -> Self;
    fn idxs(out: &mut Vec<usize>);
    fn expected(v: u32, out: &mut Vec<(usize, u64)>);
    fn values(&self, out: &mut Vec<(usize, u64)>);
    /// `world.insert`; a single component takes `insert_one` instead if
    /// `one` (its sparse path is its own).
    fn insert_into(self, world: &mut World, e: Entity, one: bool) -> Result<(), EntityError>
    where
        Self: Sized,
    {
        let _ = one;
        world.insert(e, self)
    }
    /// `world.remove`; a single component takes `remove_one` instead if
    /// `one`.
    fn remove_from(world: &mut World, e: Entity, one: bool) -> Result<Self, ComponentError>
    where
        Self: Sized,
    {
        let _ = one;
        world.remove::<Self>(e)
    }
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
            fn insert_into(self, world: &mut World, e: Entity, one: bool) -> Result<(), EntityError> {
                if one {
                    world.insert_one(e, self)
                } else {
                    world.insert(e, self)
                }
            }
            fn remove_from(world: &mut World, e: Entity, one: bool) -> Result<Self, ComponentError> {
                if one {
                    world.remove_one::<$t>(e)
                } else {
                    world.remove::<$t>(e)
                }
            }
        }
    )*};
}
component_bundle!(Tab, Spa, ZTab, ZSpa, Big, BigSpa, Pod, ZPod);

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
tuple_bundle!((A, a), (B, b), (C, c), (D, d));
tuple_bundle!((A, a), (B, b), (C, c), (D, d), (E, e));
tuple_bundle!((A, a), (B, b), (C, c), (D, d), (E, e), (F, f));

/// Runs `visit::<B>()` for bundle kind `kind`.
pub trait KindVisitor {
    type Out;
    fn visit<B: ModelBundle>(self) -> Self::Out;
}

/// Bundle kinds. The fuzz target decodes most bytes as one of the first
/// 15, so its committed corpus keeps the meaning it was found with, and a
/// few reserved bytes as the rest (the shapes with types that have no drop
/// glue; see `fuzz_kind` in `world_ops.rs`).
pub const KINDS: usize = 22;

pub fn with_kind<V: KindVisitor>(kind: u8, v: V) -> V::Out {
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
        15 => v.visit::<(Spa, ZSpa)>(),
        16 => v.visit::<Pod>(),
        17 => v.visit::<ZPod>(),
        18 => v.visit::<(Tab, ZPod, Pod)>(),
        19 => v.visit::<(Pod, ZSpa, Tab)>(),
        20 => v.visit::<(Tab, Spa, ZPod, ZSpa, Pod)>(),
        21 => v.visit::<(ZPod, (Spa, Pod))>(),
        _ => unreachable!(),
    }
}

pub fn kind_idxs(kind: u8) -> Vec<usize> {
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

pub fn kind_expected(kind: u8, v: u32) -> Vec<(usize, u64)> {
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

pub fn counted_in(kind: u8) -> u64 {
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

/// The model's many-to-many relation.
#[derive(Relation)]
pub struct Lk;

/// The model's ownership: a `one` relation whose source is despawned with
/// its target (`OnTargetDespawn::Despawn`).
#[derive(Relation)]
#[relation(one, on_target_despawn = "despawn")]
pub struct Ow;

/// The model's pin: a many-to-many relation whose target refuses to be
/// despawned while it has sources (`OnTargetDespawn::Refuse`).
#[derive(Relation)]
#[relation(on_target_despawn = "refuse")]
pub struct Pn;

// ----- the model -------------------------------------------------------------------------

/// A tick-filtered state is run before it would go this many ticks unused
/// (the documented limit is `Tick::MAX_AGE`, about 3.2 billion).
pub const MAX_IDLE: u64 = 3_000_000_000;

pub type Slots = [Option<u64>; N];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Added,
    Changed,
}

/// A command recorded, not yet applied.
#[derive(Clone, Copy, Debug)]
pub enum Pending {
    /// A spawn command: its id is held (not live, not even empty) until
    /// it applies, then the entity comes to life whole (issue #39).
    Spawn {
        e: Entity,
        kind: u8,
        v: u32,
    },
    Insert {
        e: Entity,
        kind: u8,
        v: u32,
    },
    Remove {
        e: Entity,
        kind: u8,
    },
    Despawn(Entity),
}

#[derive(Default)]
pub struct Model {
    pub live: BTreeMap<Entity, Slots>,
    /// Every handle ever seen (stale ones stay), in first-seen order.
    pub known: Vec<Entity>,
    pub known_set: BTreeSet<Entity>,
    /// Ids reserved with `reserve_entity`, that become live, empty, at the
    /// world's next structural change. (A spawn command's id does not: it
    /// is held until the command applies, see [`Pending::Spawn`].)
    pub reserved: Vec<Entity>,
    /// The long-lived buffer's commands, and the ids it spawned.
    pub commands: Vec<Pending>,
    pub buffer_spawned: Vec<Entity>,
    /// (entity, component slot, event), in order.
    pub events: Vec<(Entity, usize, Event)>,
    /// Handles the current step picked (checked after it even if the model
    /// says nothing about them changed).
    pub picked: std::cell::RefCell<Vec<Entity>>,
    /// `Lk` edges ever made and not unrelated; an edge with a dead end is
    /// gone (every despawn removes an entity's edges), so readers filter.
    pub likes: BTreeSet<(Entity, Entity)>,
    /// `ChildOf` edges, child to parent, filtered the same way.
    pub parents: BTreeMap<Entity, Entity>,
    /// `Ow` edges, owned to owner, filtered the same way.
    pub owners: BTreeMap<Entity, Entity>,
    /// `Pn` edges (source pins target), filtered the same way.
    pub pins: BTreeSet<(Entity, Entity)>,
}

impl Model {
    /// The live `Lk` targets of `e`, sorted.
    pub fn live_likes(&self, e: Entity) -> Vec<Entity> {
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

    /// The live `Pn` targets of `e`, sorted.
    pub fn live_pins(&self, e: Entity) -> Vec<Entity> {
        if !self.live.contains_key(&e) {
            return Vec::new();
        }
        self.pins
            .iter()
            .filter(|&&(s, _)| s == e)
            .map(|&(_, t)| t)
            .filter(|t| self.live.contains_key(t))
            .collect()
    }

    /// The live entities pinning `e` (its `Pn` sources).
    pub fn live_pinners(&self, e: Entity) -> Vec<Entity> {
        self.pins
            .iter()
            .filter(|&&(s, t)| t == e && self.live.contains_key(&s))
            .map(|&(s, _)| s)
            .collect()
    }

    /// `e`'s live owner.
    pub fn live_owner(&self, e: Entity) -> Option<Entity> {
        if !self.live.contains_key(&e) {
            return None;
        }
        self.owners
            .get(&e)
            .copied()
            .filter(|o| self.live.contains_key(o))
    }

    /// The live entities `e` owns (its `Ow` sources).
    pub fn live_owned(&self, e: Entity) -> Vec<Entity> {
        self.owners
            .iter()
            .filter(|&(&s, &o)| o == e && self.live.contains_key(&s))
            .map(|(&s, _)| s)
            .collect()
    }

    /// The cascade after `dead` went (they are no longer live): the
    /// entities they owned and, in turn, what those own, except an entity
    /// pinned by a live entity outside the doomed set (and what only it
    /// would doom): [`Model::decide`] with these seeds. Removes them from
    /// the live set.
    pub fn cascade(&mut self, dead: &[Entity]) {
        let seeds: Vec<Entity> = self
            .owners
            .iter()
            .filter(|&(s, o)| dead.contains(o) && self.live.contains_key(s))
            .map(|(&s, _)| s)
            .collect();
        let doomed = self.decide(&[], &seeds).expect("no entity named");
        for e in doomed {
            self.live.remove(&e);
        }
    }

    /// The one refuse rule of every despawn (issue 39): `named` go, all or
    /// none, with `seeds` (live entities whose owner went) and, in turn,
    /// what they own, except an owned entity or seed pinned by a live
    /// entity outside the doomed set (and what only it would doom): the
    /// largest such set, by a fixpoint. Then a named entity pinned from
    /// outside that set refuses the whole (`Err` with the first such, in
    /// `named` order); else the other entities that go with them.
    pub fn decide(&self, named: &[Entity], seeds: &[Entity]) -> Result<Vec<Entity>, Entity> {
        let mut kept: BTreeSet<Entity> = BTreeSet::new();
        loop {
            let mut doomed: BTreeSet<Entity> = named.iter().copied().collect();
            let mut order: Vec<Entity> = named.to_vec();
            for &s in seeds {
                if !kept.contains(&s) && doomed.insert(s) {
                    order.push(s);
                }
            }
            let mut i = 0;
            while i < order.len() {
                for s in self.live_owned(order[i]) {
                    if !kept.contains(&s) && doomed.insert(s) {
                        order.push(s);
                    }
                }
                i += 1;
            }
            let pinned = |e: Entity| self.live_pinners(e).iter().any(|p| !doomed.contains(p));
            let before = kept.len();
            for &e in &order[named.len()..] {
                if pinned(e) {
                    kept.insert(e);
                }
            }
            if kept.len() == before {
                if let Some(&e) = named.iter().find(|&&e| pinned(e)) {
                    return Err(e);
                }
                return Ok(order.split_off(named.len()));
            }
        }
    }

    /// `World::despawn(e)` in the model: refused if a survivor pins `e`
    /// (see [`Model::decide`]); else `e` goes, then its cascade.
    pub fn despawn_plain(&mut self, e: Entity) -> Result<(), EntityError> {
        if !self.live.contains_key(&e) {
            return Err(EntityError::NoSuchEntity(e));
        }
        if self.decide(&[e], &[]).is_err() {
            return Err(EntityError::DespawnRefused {
                entity: e,
                relation: "Pn",
            });
        }
        self.live.remove(&e);
        self.cascade(&[e]);
        Ok(())
    }

    /// One sweep in the model (`despawn_recursive` of each root, as
    /// `despawn_descendants` runs it): refused, changing nothing, if any
    /// entity of the subtrees is pinned by a survivor (see
    /// [`Model::decide`]: a pin from an entity the sweep or its cascade
    /// takes keeps nothing, issue 39); else the subtrees go, then their
    /// cascade. Returns whether it went.
    pub fn sweep(&mut self, roots: &[Entity]) -> bool {
        let mut doomed = Vec::new();
        for &r in roots {
            for e in self.subtree(r) {
                if !doomed.contains(&e) {
                    doomed.push(e);
                }
            }
        }
        if self.decide(&doomed, &[]).is_err() {
            return false;
        }
        for e in &doomed {
            self.live.remove(e);
        }
        self.cascade(&doomed);
        true
    }

    /// The live children of `p`.
    pub fn live_children(&self, p: Entity) -> Vec<Entity> {
        self.live
            .keys()
            .copied()
            .filter(|&c| self.live_parent(c) == Some(p))
            .collect()
    }

    /// True if `ancestor` is `e` or one of its live ancestors.
    pub fn is_ancestor_or_self(&self, ancestor: Entity, mut e: Entity) -> bool {
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
    pub fn live_parent(&self, e: Entity) -> Option<Entity> {
        if !self.live.contains_key(&e) {
            return None;
        }
        self.parents
            .get(&e)
            .copied()
            .filter(|p| self.live.contains_key(p))
    }

    /// `root` and its live descendants (each once, cycles included).
    pub fn subtree(&self, root: Entity) -> Vec<Entity> {
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

    pub fn learn(&mut self, e: Entity) {
        if self.known_set.insert(e) {
            self.known.push(e);
        }
    }

    /// Records a handle the world just created: it must never have been
    /// seen before (a stale handle never aliases a new entity).
    pub fn fresh(&mut self, e: Entity) {
        assert!(
            !self.known_set.contains(&e),
            "handle {e:?} handed out twice"
        );
        self.learn(e);
    }

    pub fn pick(&self, who: Who) -> Entity {
        let e = self.pick_inner(who);
        self.picked.borrow_mut().push(e);
        e
    }

    pub fn pick_inner(&self, who: Who) -> Entity {
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
    pub fn flush(&mut self) {
        for e in std::mem::take(&mut self.reserved) {
            assert!(self.live.insert(e, [None; N]).is_none());
        }
    }

    pub fn spawn(&mut self, e: Entity, values: &[(usize, u64)]) {
        let mut slots = [None; N];
        for &(i, val) in values {
            slots[i] = Some(val);
            self.events.push((e, i, Event::Added));
        }
        assert!(self.live.insert(e, slots).is_none());
    }

    /// Insert into a live entity.
    pub fn insert(&mut self, e: Entity, values: &[(usize, u64)]) {
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
    pub fn first_missing(&self, e: Entity, kind: u8) -> Option<usize> {
        let slots = &self.live[&e];
        kind_idxs(kind).into_iter().find(|&i| slots[i].is_none())
    }

    pub fn changed(&mut self, e: Entity, i: usize) {
        self.events.push((e, i, Event::Changed));
    }

    /// Applies `commands` in order; returns the errors the world must report.
    pub fn apply(&mut self, commands: Vec<Pending>) -> Vec<(usize, CommandError)> {
        if !commands.is_empty() {
            self.flush();
        }
        let mut errors = Vec::new();
        for (index, command) in commands.into_iter().enumerate() {
            match command {
                Pending::Spawn { e, kind, v } => self.spawn(e, &kind_expected(kind, v)),
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
                    if let Err(err) = self.despawn_plain(e) {
                        errors.push((index, err.into()));
                    }
                }
            }
        }
        errors
    }

    /// Counted values in the world.
    pub fn counted_in_world(&self) -> u64 {
        self.live
            .values()
            .map(|s| (0..N).filter(|&i| COUNTED[i] && s[i].is_some()).count() as u64)
            .sum()
    }

    /// Counted values that should exist right now: in the world and in the
    /// long-lived buffer.
    pub fn expected_live(&self) -> u64 {
        let in_buffer: u64 = self
            .commands
            .iter()
            .map(|c| match *c {
                Pending::Insert { kind, .. } | Pending::Spawn { kind, .. } => counted_in(kind),
                _ => 0,
            })
            .sum();
        self.counted_in_world() + in_buffer
    }

    /// Live entities having slot `i` with an event `want` (an add counts as
    /// a change) since event position `since`.
    pub fn ticked_since(&self, since: usize, i: usize, want: Event) -> BTreeSet<Entity> {
        self.events[since..]
            .iter()
            .filter(|&&(_, j, ev)| j == i && (want == Event::Changed || ev == Event::Added))
            .map(|&(e, _, _)| e)
            .filter(|e| self.live.get(e).is_some_and(|s| s[i].is_some()))
            .collect()
    }

    pub fn matching(&self, f: impl Fn(&Slots) -> bool) -> BTreeSet<Entity> {
        self.live
            .iter()
            .filter(|(_, s)| f(s))
            .map(|(&e, _)| e)
            .collect()
    }
}

// ----- the cached queries ----------------------------------------------------------------

pub type DataItem = (
    Entity,
    Option<&'static Tab>,
    Option<&'static Spa>,
    Has<ZTab>,
    Has<ZSpa>,
    Option<&'static Big>,
    Option<&'static BigSpa>,
    Option<&'static Pod>,
    Has<ZPod>,
);
pub type RequiredItem = (Entity, &'static Spa, &'static Big);
pub type MutSpaItem = (Entity, &'static mut Spa, Option<&'static mut Big>);
pub type ZstItem = (Entity, &'static ZTab, Option<&'static mut BigSpa>);
/// Sparse components alone, no filter: a dense walk of the smallest set.
pub type DenseItem = (Entity, &'static mut BigSpa, &'static ZSpa, &'static Spa);
pub type OrZst = Or<(With<ZTab>, With<ZSpa>)>;
pub type OrTicks = Or<(Changed<Big>, Added<ZSpa>)>;

/// Tick-filtered states: the five built at the start, then the two late
/// ones.
pub const TICK_STATES: usize = 7;
/// Query numbers: plain `0..TICK_BASE`, tick-filtered `TICK_BASE..QUERIES`.
pub const TICK_BASE: usize = 10;
pub const QUERIES: usize = TICK_BASE + 5;

pub struct States {
    pub with_tab: QueryState<Entity, With<Tab>>,
    pub without_spa: QueryState<Entity, Without<Spa>>,
    pub or_zst: QueryState<Entity, OrZst>,
    pub with_without: QueryState<Entity, (With<Big>, Without<ZTab>)>,
    pub data: QueryState<DataItem>,
    pub required: QueryState<RequiredItem>,
    pub mut_tab: QueryState<(Entity, &'static mut Tab), With<Big>>,
    pub mut_spa: QueryState<MutSpaItem>,
    pub zst: QueryState<ZstItem, Without<Tab>>,
    pub dense: QueryState<DenseItem>,
    /// The same walk driven by `Spa` alone.
    pub dense_spa: QueryState<(Entity, &'static mut Spa, &'static ZSpa)>,
    pub added_tab: QueryState<Entity, Added<Tab>>,
    pub changed_tab: QueryState<Entity, Changed<Tab>>,
    pub added_spa: QueryState<Entity, Added<Spa>>,
    pub changed_spa: QueryState<Entity, Changed<Spa>>,
    pub or_ticks: QueryState<Entity, OrTicks>,
    /// Built on demand (`Op::LateTrack`), switching tracking on late.
    pub late_big_spa: Option<QueryState<Entity, Changed<BigSpa>>>,
    pub late_ztab: Option<QueryState<Entity, Added<ZTab>>>,
    /// Per tick-filtered state: event-log position of its last run.
    pub seen: [usize; TICK_STATES],
    /// Per tick-filtered state: ticks advanced (by `AdvanceTicks`) since its
    /// last run.
    pub idle: [u64; TICK_STATES],
}

impl States {
    pub fn new(world: &mut World) -> Self {
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
            dense_spa: world.query(),
            added_tab: world.query_filtered(),
            changed_tab: world.query_filtered(),
            added_spa: world.query_filtered(),
            changed_spa: world.query_filtered(),
            or_ticks: world.query_filtered(),
            late_big_spa: None,
            late_ztab: None,
            seen: [0; TICK_STATES],
            idle: [0; TICK_STATES],
        }
    }
}

/// Collects entities, checking none repeats.
pub fn entity_set(iter: impl Iterator<Item = Entity>, what: &str) -> BTreeSet<Entity> {
    let all: Vec<Entity> = iter.collect();
    let set: BTreeSet<Entity> = all.iter().copied().collect();
    assert_eq!(all.len(), set.len(), "{what}: an entity was yielded twice");
    set
}

pub fn check_aligned<T>(r: &T) {
    assert_eq!(
        (r as *const T as usize) % std::mem::align_of::<T>(),
        0,
        "misaligned {}",
        std::any::type_name::<T>()
    );
}

/// An item of the data query ([`DataItem`]) as it is handed out.
pub type DataRef<'a> = (
    Entity,
    Option<&'a Tab>,
    Option<&'a Spa>,
    bool,
    bool,
    Option<&'a Big>,
    Option<&'a BigSpa>,
    Option<&'a Pod>,
    bool,
);

/// The model slots of a data query item (references checked aligned).
pub fn slots_of(item: DataRef) -> Slots {
    let (_, tab, spa, ztab, zspa, big, big_spa, pod, zpod) = item;
    if let Some(b) = big {
        check_aligned(b);
    }
    if let Some(b) = big_spa {
        check_aligned(b);
    }
    if let Some(b) = pod {
        check_aligned(b);
    }
    [
        tab.map(Comp::value),
        spa.map(Comp::value),
        ztab.then_some(0),
        zspa.then_some(0),
        big.map(Comp::value),
        big_spa.map(Comp::value),
        pod.map(Comp::value),
        zpod.then_some(0),
    ]
}

pub fn run_query(q: usize, world: &mut World, st: &mut States, m: &mut Model) {
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
            for item in st.data.iter(world) {
                let e = item.0;
                let slots = slots_of(item);
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
            // Two sparse components: the walk is driven by the smaller set.
            let mut got = BTreeMap::new();
            for (e, spa, zspa) in st.dense_spa.iter_mut(world) {
                check_aligned(zspa);
                let before = spa.value();
                spa.mutate();
                assert!(
                    got.insert(e, before).is_none(),
                    "(&mut Spa, &ZSpa): {e:?} twice"
                );
            }
            let want: BTreeMap<Entity, u64> = m
                .live
                .iter()
                .filter_map(|(&e, s)| {
                    s[3]?;
                    Some((e, s[1]?))
                })
                .collect();
            assert_eq!(got, want, "(&mut Spa, &ZSpa)");
            for e in got.into_keys() {
                let slot = &mut m.live.get_mut(&e).unwrap()[1];
                *slot = slot.map(Spa::mutated);
                m.changed(e, 1);
            }
        }
        TICK_BASE..QUERIES => run_tick_query(q - TICK_BASE, world, st, m),
        _ => unreachable!(),
    }
}

/// Runs tick-filtered state `k` (0..5 the fixed ones, 5 and 6 the late
/// ones, if built) and checks it against the event log.
pub fn run_tick_query(k: usize, world: &World, st: &mut States, m: &Model) {
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

pub fn check_get<C: Comp>(world: &World, e: Entity, slots: Option<&Slots>) {
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

pub fn check_entity(world: &World, m: &Model, e: Entity) {
    let mut likes = world.targets::<Lk>(e).to_vec();
    likes.sort();
    assert_eq!(likes, m.live_likes(e), "targets::<Lk>({e:?})");
    assert_eq!(world.parent(e), m.live_parent(e), "parent({e:?})");
    let owner = world.targets::<Ow>(e).first().copied();
    assert_eq!(owner, m.live_owner(e), "targets::<Ow>({e:?})");
    let mut pins = world.targets::<Pn>(e).to_vec();
    pins.sort();
    assert_eq!(pins, m.live_pins(e), "targets::<Pn>({e:?})");
    let slots = m.live.get(&e);
    assert_eq!(world.contains(e), slots.is_some(), "contains({e:?})");
    check_get::<Tab>(world, e, slots);
    check_get::<Spa>(world, e, slots);
    check_get::<ZTab>(world, e, slots);
    check_get::<ZSpa>(world, e, slots);
    check_get::<Big>(world, e, slots);
    check_get::<BigSpa>(world, e, slots);
    check_get::<Pod>(world, e, slots);
    check_get::<ZPod>(world, e, slots);
}

/// The full check: the world's invariants and every handle ever seen.
pub fn check_world(world: &World, m: &Model) {
    world.check_invariants();
    check_counts(world, m);
    for &e in &m.known {
        check_entity(world, m, e);
    }
}

pub fn check_counts(world: &World, m: &Model) {
    assert_eq!(world.len(), m.live.len(), "len");
    assert_eq!(world.is_empty(), m.live.is_empty(), "is_empty");
    assert_eq!(
        live_counted(),
        m.expected_live(),
        "live counted values (constructions - drops)"
    );
}

// ----- recording commands ----------------------------------------------------------------

/// A [`CmdOp`] with its handles picked.
#[derive(Clone, Copy, Debug)]
pub enum Resolved {
    Spawn { kind: u8, v: u32 },
    Insert { e: Entity, kind: u8, v: u32 },
    InsertSpawned { back: u8, kind: u8, v: u32 },
    Remove { e: Entity, kind: u8 },
    Despawn(Entity),
}

pub fn resolve(m: &Model, op: CmdOp) -> Resolved {
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
pub trait Recorder {
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
pub fn record<R: Recorder>(rec: &mut R, op: Resolved, spawned: &[Entity]) -> Option<Entity> {
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
pub fn model_record(
    m: &mut Model,
    op: Resolved,
    spawned: &[Entity],
    new: Option<Entity>,
) -> Option<Pending> {
    match op {
        Resolved::Spawn { kind, v } => {
            let e = new.expect("a spawn returns its id");
            m.fresh(e);
            Some(Pending::Spawn { e, kind, v })
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

/// One run: the world, its cached query states and long-lived command
/// buffer, the model, and the harness's own extra state `X`.
pub struct Case<X = ()> {
    pub world: World,
    pub states: States,
    pub buffer: CommandBuffer,
    pub model: Model,
    pub extra: X,
}

impl<X> Case<X> {
    /// A case on `world` (set up as the harness wants: hooks, observers,
    /// requirements) with this thread's counters reset. The model's query
    /// states are built first (their tick filters switch change tracking
    /// on), then the harness's own, `extra(&mut world)`.
    pub fn new(mut world: World, extra: impl FnOnce(&mut World) -> X) -> Self {
        COUNTS.with(|c| c.set(Counts::default()));
        let states = States::new(&mut world);
        let extra = extra(&mut world);
        let buffer = CommandBuffer::new(&world);
        let mut model = Model::default();
        model.learn(never_spawned());
        Case {
            world,
            states,
            buffer,
            model,
            extra,
        }
    }
}

/// The end of a run: drops the query states and the buffer (whose pending
/// values must go with it), then the world, and checks that every counted
/// value was dropped exactly once, per type.
pub fn finish<X>(case: Case<X>) {
    let Case {
        world,
        states,
        buffer,
        model,
        extra,
    } = case;
    drop(states);
    drop(extra);
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
}

pub fn do_spawn<X>(c: &mut Case<X>, kind: u8, v: u32) {
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

/// `n` entities of bundle kind `kind` by `World::extend` (if `extend`) or
/// `spawn_batch`.
pub fn do_spawn_batch<X>(c: &mut Case<X>, kind: u8, v: u32, n: usize, extend: bool) {
    struct V<'a>(&'a mut World, u32, usize, bool);
    impl KindVisitor for V<'_> {
        type Out = Vec<Entity>;
        fn visit<B: ModelBundle>(self) -> Vec<Entity> {
            let v = self.1;
            let bundles = (0..self.2 as u32).map(|i| B::make(v.wrapping_add(i)));
            if self.3 {
                self.0.extend(bundles);
                Vec::new()
            } else {
                self.0.spawn_batch(bundles)
            }
        }
    }
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
    assert_eq!(es.len(), n, "spawn_batch / extend count");
    for (i, e) in es.into_iter().enumerate() {
        c.model.fresh(e);
        c.model
            .spawn(e, &kind_expected(kind, v.wrapping_add(i as u32)));
    }
}

/// `World::insert` of bundle kind `kind`; a single component by
/// `insert_one` if `one`.
pub fn do_insert<X>(c: &mut Case<X>, e: Entity, kind: u8, v: u32, one: bool) {
    struct V<'a>(&'a mut World, Entity, u32, bool);
    impl KindVisitor for V<'_> {
        type Out = Result<(), EntityError>;
        fn visit<B: ModelBundle>(self) -> Self::Out {
            B::make(self.2).insert_into(self.0, self.1, self.3)
        }
    }
    c.model.flush();
    let result = with_kind(kind, V(&mut c.world, e, v, one));
    check_insert(&mut c.model, e, result, &kind_expected(kind, v));
}

pub fn check_insert(
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

pub fn do_insert_one<X>(c: &mut Case<X>, e: Entity, comp: u8, v: u32) {
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
pub fn check_remove(
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

/// `World::remove` of bundle kind `kind`; a single component by
/// `remove_one` if `one`.
pub fn do_remove<X>(c: &mut Case<X>, e: Entity, kind: u8, one: bool) {
    struct V<'a>(&'a mut World, Entity, bool);
    impl KindVisitor for V<'_> {
        type Out = Result<Vec<(usize, u64)>, ComponentError>;
        fn visit<B: ModelBundle>(self) -> Self::Out {
            let bundle = B::remove_from(self.0, self.1, self.2)?;
            let mut values = Vec::new();
            bundle.values(&mut values);
            Ok(values)
        }
    }
    c.model.flush();
    let result = with_kind(kind, V(&mut c.world, e, one));
    check_remove(&mut c.model, e, &kind_idxs(kind), result);
}

pub fn do_remove_one<X>(c: &mut Case<X>, e: Entity, comp: u8) {
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

pub fn do_get<X>(c: &Case<X>, e: Entity, comp: u8) {
    struct V<'a>(&'a World, Entity, Option<&'a Slots>);
    impl CompVisitor for V<'_> {
        type Out = ();
        fn visit<C: Comp>(self) {
            check_get::<C>(self.0, self.1, self.2);
        }
    }
    with_comp(comp, V(&c.world, e, c.model.live.get(&e)));
}

pub fn do_get_mut<X>(c: &mut Case<X>, e: Entity, comp: u8) {
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

pub fn do_query_get<X>(c: &mut Case<X>, e: Entity) {
    let got = c.states.data.get(&c.world, e).map(|item| {
        assert_eq!(item.0, e);
        slots_of(item)
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

pub fn do_query_get_mut<X>(c: &mut Case<X>, e: Entity) {
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

pub fn do_late_track<X>(c: &mut Case<X>, which: u8) {
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

/// `World::advance_change_tick(ticks)`.
pub fn do_advance<X>(c: &mut Case<X>, ticks: u32) {
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

pub fn do_buffer_apply<X>(c: &mut Case<X>) {
    let commands = std::mem::take(&mut c.model.commands);
    c.model.buffer_spawned.clear();
    let result = c.buffer.apply(&mut c.world);
    assert!(c.buffer.is_empty(), "apply leaves the buffer empty");
    let want = c.model.apply(commands);
    let got: Vec<(usize, CommandError)> = match result {
        Ok(()) => Vec::new(),
        Err(errors) => {
            let errors: mosaic::CommandErrors = errors;
            assert_eq!(errors.len(), errors.iter().count());
            errors.iter().cloned().collect()
        }
    };
    assert_eq!(got, want, "CommandBuffer::apply errors");
}

pub fn do_buffer_record<X>(c: &mut Case<X>, op: CmdOp) {
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

pub fn do_system_commands<X>(c: &mut Case<X>, ops: &[CmdOp]) {
    let plan: Vec<Resolved> = ops.iter().map(|&op| resolve(&c.model, op)).collect();
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

/// A handle no world here ever hands out.
pub fn never_spawned() -> Entity {
    Entity::from_bits((1u64 << 32) | u64::from(u32::MAX - 1)).unwrap()
}

// ----- the operations both harnesses run as they are -------------------------------------

pub fn do_despawn<X>(c: &mut Case<X>, e: Entity) {
    c.model.flush();
    // The model first: a panic of the world's call leaves it as the
    // finished despawn must leave the world (see the fuzz target's sweeps).
    let expected = c.model.despawn_plain(e);
    let result = c.world.despawn(e);
    assert_eq!(result, expected, "despawn({e:?})");
}

/// `World::relate(s, t, Lk)`.
pub fn do_relate<X>(c: &mut Case<X>, s: Entity, t: Entity) {
    c.model.flush();
    let result = c.world.relate(s, t, Lk);
    let alive = c.model.live.contains_key(&s) && c.model.live.contains_key(&t);
    assert_eq!(result.is_ok(), alive, "relate({s:?}, {t:?})");
    if alive {
        c.model.likes.insert((s, t));
    }
}

/// `World::unrelate::<Lk>(s, t)`.
pub fn do_unrelate<X>(c: &mut Case<X>, s: Entity, t: Entity) {
    c.model.flush();
    let had = c.model.live_likes(s).contains(&t);
    let result = c.world.unrelate::<Lk>(s, t);
    assert_eq!(result.is_ok(), had, "unrelate({s:?}, {t:?})");
    c.model.likes.remove(&(s, t));
}

/// `World::add_child(p, ch)`.
pub fn do_parent<X>(c: &mut Case<X>, ch: Entity, p: Entity) {
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

pub fn do_despawn_recursive<X>(c: &mut Case<X>, e: Entity) {
    c.model.flush();
    let alive = c.model.live.contains_key(&e);
    let went = alive && c.model.sweep(&[e]);
    let result = c.world.despawn_recursive(e);
    match result {
        Ok(()) => assert!(went, "despawn_recursive({e:?}) went, the model refuses"),
        Err(EntityError::NoSuchEntity(x)) => assert!(!alive && x == e),
        Err(EntityError::DespawnRefused { .. }) => {
            assert!(alive && !went, "despawn_recursive({e:?}) refused")
        }
        Err(err @ EntityError::Relation(_)) => panic!("despawn_recursive({e:?}): {err}"),
    }
}

/// `World::despawn_descendants(e)`: one sweep of `e`'s children.
pub fn do_despawn_descendants<X>(c: &mut Case<X>, e: Entity) {
    c.model.flush();
    let alive = c.model.live.contains_key(&e);
    let children = c.model.live_children(e);
    let went = alive && c.model.sweep(&children);
    let result = c.world.despawn_descendants(e);
    match result {
        Ok(()) => assert!(went, "despawn_descendants({e:?}) went, the model refuses"),
        Err(EntityError::NoSuchEntity(x)) => assert!(!alive && x == e),
        Err(EntityError::DespawnRefused { .. }) => {
            assert!(alive && !went, "despawn_descendants({e:?}) refused")
        }
        Err(err @ EntityError::Relation(_)) => panic!("despawn_descendants({e:?}): {err}"),
    }
    if went {
        assert!(
            c.world.children(e).is_empty(),
            "despawn_descendants({e:?}) left children"
        );
    }
}

/// `World::relate(s, t, Ow)`: `s` owned by `t` (replacing its owner).
pub fn do_own<X>(c: &mut Case<X>, s: Entity, t: Entity) {
    c.model.flush();
    let result = c.world.relate(s, t, Ow);
    let alive = c.model.live.contains_key(&s) && c.model.live.contains_key(&t);
    assert_eq!(result.is_ok(), alive, "relate({s:?}, {t:?}, Ow)");
    if alive {
        c.model.owners.insert(s, t);
    }
}

/// `World::relate(s, t, Pn)`: `s` pins `t`.
pub fn do_pin<X>(c: &mut Case<X>, s: Entity, t: Entity) {
    c.model.flush();
    let result = c.world.relate(s, t, Pn);
    let alive = c.model.live.contains_key(&s) && c.model.live.contains_key(&t);
    assert_eq!(result.is_ok(), alive, "relate({s:?}, {t:?}, Pn)");
    if alive {
        c.model.pins.insert((s, t));
    }
}

/// `World::unrelate::<Pn>(s, t)`.
pub fn do_unpin<X>(c: &mut Case<X>, s: Entity, t: Entity) {
    c.model.flush();
    let had = c.model.live_pins(s).contains(&t);
    let result = c.world.unrelate::<Pn>(s, t);
    assert_eq!(result.is_ok(), had, "unrelate::<Pn>({s:?}, {t:?})");
    c.model.pins.remove(&(s, t));
}

pub fn do_clear<X>(c: &mut Case<X>) {
    c.model.flush();
    c.world.clear();
    c.model.live.clear();
}

pub fn do_reserve<X>(c: &mut Case<X>) {
    let e = c.world.reserve_entity();
    assert!(!c.world.contains(e), "a reserved id is not live yet");
    c.model.fresh(e);
    c.model.reserved.push(e);
}

/// Runs cached query state `q` (mod [`QUERIES`]).
pub fn do_query<X>(c: &mut Case<X>, q: usize) {
    run_query(q % QUERIES, &mut c.world, &mut c.states, &mut c.model);
}

/// Builds new query states and runs number `q` (mod [`QUERIES`]) once.
pub fn do_fresh_query<X>(c: &mut Case<X>, q: usize) {
    let mut fresh = States::new(&mut c.world);
    run_query(q % QUERIES, &mut c.world, &mut fresh, &mut c.model);
}

/// Runs every tick-filtered state.
pub fn do_query_ticks<X>(c: &mut Case<X>) {
    for k in 0..TICK_STATES {
        run_tick_query(k, &c.world, &mut c.states, &c.model);
    }
}

// ----- run-time bundles, clones, spawn_at (issue #39) ------------------------------------

/// Bundle kind `kind`, made with value `v`, as an `EntityBuilder`'s build.
pub fn built(kind: u8, v: u32) -> mosaic::BuiltEntity {
    struct V(u32);
    impl KindVisitor for V {
        type Out = mosaic::BuiltEntity;
        fn visit<B: ModelBundle>(self) -> Self::Out {
            let mut builder = mosaic::EntityBuilder::new();
            builder.add_bundle(B::make(self.0));
            builder.build()
        }
    }
    with_kind(kind, V(v))
}

/// `World::spawn` of an `EntityBuilder`'s build of kind `kind`: the model
/// of a static spawn, and at most one archetype made on the way (the
/// parts move once, to their final archetype).
pub fn do_spawn_built<X>(c: &mut Case<X>, kind: u8, v: u32) {
    c.model.flush();
    let parts = built(kind, v);
    let archetypes = c.world.archetype_count();
    let e = c.world.spawn(parts);
    assert!(
        c.world.archetype_count() <= archetypes + 1,
        "a built entity made an archetype on the way"
    );
    c.model.fresh(e);
    c.model.spawn(e, &kind_expected(kind, v));
}

/// `World::insert` of an `EntityBuilder`'s build of kind `kind`.
pub fn do_insert_built<X>(c: &mut Case<X>, e: Entity, kind: u8, v: u32) {
    c.model.flush();
    let parts = built(kind, v);
    let archetypes = c.world.archetype_count();
    let result = c.world.insert(e, parts);
    assert!(
        c.world.archetype_count() <= archetypes + 1,
        "insert of parts: one move"
    );
    check_insert(&mut c.model, e, result, &kind_expected(kind, v));
}

/// `World::clone_entity(e)`: the copy has `e`'s [`CLONED`] slots and its
/// parent (`ChildOf` is `Clone`; `Lk` is not, so no `Lk` edge).
pub fn do_clone<X>(c: &mut Case<X>, e: Entity) {
    c.model.flush();
    let result = c.world.clone_entity(e);
    let Some(slots) = c.model.live.get(&e).copied() else {
        assert_eq!(
            result,
            Err(EntityError::NoSuchEntity(e)),
            "clone of dead {e:?}"
        );
        return;
    };
    let copy = result.expect("clone of a live entity");
    let values: Vec<(usize, u64)> = (0..N)
        .filter(|&i| CLONED[i])
        .filter_map(|i| Some((i, slots[i]?)))
        .collect();
    c.model.fresh(copy);
    c.model.spawn(copy, &values);
    if let Some(p) = c.model.live_parent(e) {
        c.model.parents.insert(copy, p);
    }
}

/// The handle `World::spawn_at` gets: a live entity's own (replaced in
/// place, keeping its id) or, for odd `fresh`, an index past the others,
/// generation 1, if never seen (a handle seen before, now dead, would
/// bring back a generation the allocator already handed out: skipped).
pub fn spawn_at_target(m: &Model, who: Who, fresh: u8) -> Option<Entity> {
    if fresh & 1 == 0 {
        // Only a live handle: a stale or forged one could bring back an
        // old generation, or name an index far past every slot.
        let e = m.pick(who);
        // A pinned occupant refuses the despawn `spawn_at` starts with.
        return (m.live.contains_key(&e) && m.live_pinners(e).is_empty()).then_some(e);
    }
    let e = Entity::from_bits((1u64 << 32) | u64::from(1000 + u32::from(fresh % 16))).unwrap();
    let free = !m.known_set.contains(&e) || m.live.contains_key(&e);
    (free && m.live_pinners(e).is_empty()).then_some(e)
}

/// `World::spawn_at(e, ..)` of kind `kind`, as a static bundle or (if
/// `parts`) an `EntityBuilder`'s build: whatever lived at `e`'s index goes
/// (its edges from both ends), and `e` lives with exactly the kind's values.
pub fn do_spawn_at<X>(c: &mut Case<X>, e: Entity, kind: u8, v: u32, parts: bool) {
    struct V<'a>(&'a mut World, Entity, u32);
    impl KindVisitor for V<'_> {
        type Out = ();
        fn visit<B: ModelBundle>(self) {
            self.0.spawn_at(self.1, B::make(self.2));
        }
    }
    c.model.flush();
    if parts {
        c.world.spawn_at(e, built(kind, v));
    } else {
        with_kind(kind, V(&mut c.world, e, v));
    }
    c.model.evict_index(e);
    c.model.learn(e);
    c.model.spawn(e, &kind_expected(kind, v));
}

impl Model {
    /// What `spawn_at(e, ..)` does first: the entity living at `e`'s
    /// index, if any, is despawned (its edges with it, for good: its handle
    /// may live again).
    pub fn evict_index(&mut self, e: Entity) {
        let occupant: Vec<Entity> = self
            .live
            .keys()
            .copied()
            .filter(|o| o.index() == e.index())
            .collect();
        for o in occupant {
            // A plain despawn, cascade included (`spawn_at_target` never
            // picks a pinned occupant).
            self.despawn_plain(o)
                .expect("the occupant is live and unpinned");
            self.likes.retain(|&(s, t)| s != o && t != o);
            self.parents.retain(|&ch, &mut p| ch != o && p != o);
            self.owners.retain(|&s, &mut t| s != o && t != o);
            self.pins.retain(|&(s, t)| s != o && t != o);
        }
    }
}

/// Disables `e` (`Disabled`), checks the rule of direct access against a
/// default query, then enables it again: direct access by id
/// (`get`/`has`, `get_many_mut`, `clone_entity`'s copy) sees it, the data
/// query skips it; the model's state is unchanged after.
pub fn do_disable_round_trip<X>(c: &mut Case<X>, e: Entity) {
    c.model.flush();
    let live = c.model.live.contains_key(&e);
    assert_eq!(
        c.world.insert_one(e, mosaic::Disabled).is_ok(),
        live,
        "disable {e:?}"
    );
    if !live {
        return;
    }
    check_entity(&c.world, &c.model, e);
    assert!(
        c.states.data.iter(&c.world).all(|item| item.0 != e),
        "a default query skips disabled {e:?}"
    );
    if c.model.live[&e][0].is_some() {
        let [tab] = c
            .world
            .get_many_mut::<Tab, 1>([e])
            .expect("direct access sees it");
        check_aligned(tab);
        // Handed out mutably: marked changed.
        c.model.changed(e, 0);
    }
    assert_eq!(
        c.world.remove_one::<mosaic::Disabled>(e),
        Ok(mosaic::Disabled)
    );
    check_entity(&c.world, &c.model, e);
}
