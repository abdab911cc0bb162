//! Model-based property test of the world.
//!
//! Proptest generates random sequences of operations (spawn, spawn_batch,
//! despawn, insert, remove, get_mut, cached queries with every filter kind,
//! clear, `reserve_entity`, a `CommandBuffer` whose commands are applied
//! later, and relations: `relate`/`unrelate` of a many-to-many relation,
//! `add_child` and `despawn_recursive`) and runs each one both on a [`World`] and on a plain model: a
//! `BTreeMap<Entity, [Option<u64>; 5]>` (one slot per component type) plus
//! the ids reserved but not yet flushed, the commands not yet applied, and a
//! log of add/change events for `Added`/`Changed` filters, and the relation
//! edges made (an edge with a dead end counts as gone: every despawn must
//! remove it, which `targets`/`parent` of every handle then check).
//!
//! After *every* operation the world must agree with the model: `len`,
//! `contains`, and `get` of every component of every handle ever seen (stale
//! ones included, plus one that never existed), the error variants, the
//! alignment of every reference, `check_invariants()`, and the number of live
//! component values (each counted value holds an `Arc<AtomicIsize>` that it
//! increments on construction, `Clone` included, and decrements on `Drop`).
//! At the end the world is dropped and the count must be exactly zero.
//!
//! Components: `Tab` (table, counted), `Spa` (sparse, counted), `ZTab` and
//! `ZSpa` (zero-sized, table and sparse), `Big` (`#[repr(align(64))]`).
//!
//! Case count: `MOSAIC_MODEL_CASES` (default 256; 4 under Miri); sequence
//! length: up to `MOSAIC_MODEL_OPS` operations (default 64; 12 under Miri).
//! The default run takes about a second in debug. Long mode:
//!
//! ```text
//! MOSAIC_MODEL_CASES=100000 cargo test --release --test model
//! MOSAIC_MODEL_CASES=20000 MOSAIC_MODEL_OPS=500 cargo test --release --test model
//! ```
//!
//! A failing case is shrunk and saved by proptest in
//! `tests/model.proptest-regressions` (replayed first on later runs; commit
//! it to keep the regression).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use mosaic::prelude::*;
use mosaic::{CommandError, CommandErrors, DeferredWorld};
use proptest::prelude::*;

// ----- components --------------------------------------------------------------------

/// Live-instance counter shared by every counted value of one test case.
type Live = Arc<AtomicIsize>;

const N_COMPONENTS: usize = 5;
const NAMES: [&str; N_COMPONENTS] = ["Tab", "Spa", "ZTab", "ZSpa", "Big"];
/// Which component slots hold counted values.
const COUNTED: [bool; N_COMPONENTS] = [true, true, false, false, false];

#[derive(Component)]
struct Tab {
    val: u32,
    live: Live,
}

#[derive(Component)]
#[component(storage = "sparse")]
struct Spa {
    val: u32,
    live: Live,
}

macro_rules! counted {
    ($($t:ident),*) => {$(
        impl $t {
            fn new(val: u32, live: &Live) -> Self {
                live.fetch_add(1, Ordering::SeqCst);
                $t { val, live: Arc::clone(live) }
            }
        }
        impl Clone for $t {
            fn clone(&self) -> Self {
                $t::new(self.val, &self.live)
            }
        }
        impl Drop for $t {
            fn drop(&mut self) {
                self.live.fetch_sub(1, Ordering::SeqCst);
            }
        }
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($t), self.val)
            }
        }
    )*};
}
counted!(Tab, Spa);

#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct ZTab;

#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[component(storage = "sparse")]
struct ZSpa;

#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[repr(align(64))]
struct Big(u64);

/// A component type the model knows: its slot, and how values map to `u64`.
trait Comp: Component + Sized {
    const IDX: usize;
    fn make(v: u32, live: &Live) -> Self;
    /// The model value of `make(v, _)`.
    fn expected(v: u32) -> u64;
    fn value(&self) -> u64;
    /// Changes the value in place; the model value becomes `mutated(old)`.
    fn mutate(&mut self);
    fn mutated(old: u64) -> u64;
}

impl Comp for Tab {
    const IDX: usize = 0;
    fn make(v: u32, live: &Live) -> Self {
        Tab::new(v, live)
    }
    fn expected(v: u32) -> u64 {
        u64::from(v)
    }
    fn value(&self) -> u64 {
        u64::from(self.val)
    }
    fn mutate(&mut self) {
        self.val = self.val.wrapping_add(1000);
    }
    fn mutated(old: u64) -> u64 {
        u64::from((old as u32).wrapping_add(1000))
    }
}

impl Comp for Spa {
    const IDX: usize = 1;
    fn make(v: u32, live: &Live) -> Self {
        Spa::new(v ^ 0x5555, live)
    }
    fn expected(v: u32) -> u64 {
        u64::from(v ^ 0x5555)
    }
    fn value(&self) -> u64 {
        u64::from(self.val)
    }
    fn mutate(&mut self) {
        self.val ^= 1;
    }
    fn mutated(old: u64) -> u64 {
        old ^ 1
    }
}

impl Comp for ZTab {
    const IDX: usize = 2;
    fn make(_: u32, _: &Live) -> Self {
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
    fn make(_: u32, _: &Live) -> Self {
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
    fn make(v: u32, _: &Live) -> Self {
        Big(u64::from(v) * 3 + 1)
    }
    fn expected(v: u32) -> u64 {
        u64::from(v) * 3 + 1
    }
    fn value(&self) -> u64 {
        self.0
    }
    fn mutate(&mut self) {
        self.0 = self.0.wrapping_add(7);
    }
    fn mutated(old: u64) -> u64 {
        old.wrapping_add(7)
    }
}

// ----- bundles -------------------------------------------------------------------------

/// A bundle the model knows: how to build it, which slots it fills, and the
/// model values of a built one.
trait ModelBundle: Bundle + Send + 'static {
    fn make(v: u32, live: &Live) -> Self;
    fn idxs(out: &mut Vec<usize>);
    fn expected(v: u32, out: &mut Vec<(usize, u64)>);
    fn values(&self, out: &mut Vec<(usize, u64)>);
    /// `world.insert`; a single component also takes `insert_one` (on odd
    /// `v`), whose sparse path is its own.
    fn insert_into(self, world: &mut World, e: Entity, v: u32) -> Result<(), EntityError>
    where
        Self: Sized,
    {
        let _ = v;
        world.insert(e, self)
    }
    /// `world.remove`; a single component also takes `remove_one` (for odd
    /// entity indices).
    fn remove_from(world: &mut World, e: Entity) -> Result<Self, ComponentError>
    where
        Self: Sized,
    {
        world.remove::<Self>(e)
    }
}

macro_rules! component_bundle {
    ($($t:ident),*) => {$(
        impl ModelBundle for $t {
            fn make(v: u32, live: &Live) -> Self {
                <$t as Comp>::make(v, live)
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
            fn insert_into(self, world: &mut World, e: Entity, v: u32) -> Result<(), EntityError> {
                if v % 2 == 1 {
                    world.insert_one(e, self)
                } else {
                    world.insert(e, self)
                }
            }
            fn remove_from(world: &mut World, e: Entity) -> Result<Self, ComponentError> {
                if e.index() % 2 == 1 {
                    world.remove_one::<$t>(e)
                } else {
                    world.remove::<$t>(e)
                }
            }
        }
    )*};
}
component_bundle!(Tab, Spa, ZTab, ZSpa, Big);

macro_rules! tuple_bundle {
    ($(($b:ident, $x:ident)),*) => {
        impl<$($b: ModelBundle),*> ModelBundle for ($($b,)*) {
            #[allow(unused_variables, clippy::unused_unit)]
            fn make(v: u32, live: &Live) -> Self {
                ($($b::make(v, live),)*)
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

/// Runs `visit::<B>()` for bundle kind `kind`.
trait KindVisitor {
    type Out;
    fn visit<B: ModelBundle>(self) -> Self::Out;
}

const KINDS: usize = 13;

fn with_kind<V: KindVisitor>(kind: usize, v: V) -> V::Out {
    match kind % KINDS {
        0 => v.visit::<()>(),
        1 => v.visit::<Tab>(),
        2 => v.visit::<Spa>(),
        3 => v.visit::<ZTab>(),
        4 => v.visit::<ZSpa>(),
        5 => v.visit::<Big>(),
        6 => v.visit::<(Tab, Spa)>(),
        7 => v.visit::<(Tab, ZTab, Big)>(),
        8 => v.visit::<(Spa, ZSpa)>(),
        9 => v.visit::<(Big, ZSpa, Tab)>(),
        10 => v.visit::<(Tab, Spa, ZTab, ZSpa, Big)>(),
        11 => v.visit::<(ZTab, (Spa, Big))>(),
        12 => v.visit::<(Spa,)>(),
        _ => unreachable!(),
    }
}

fn kind_idxs(kind: usize) -> Vec<usize> {
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

fn kind_expected(kind: usize, v: u32) -> Vec<(usize, u64)> {
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

fn counted_in(kind: usize) -> isize {
    kind_idxs(kind).iter().filter(|&&i| COUNTED[i]).count() as isize
}

// ----- operations ----------------------------------------------------------------------

/// Picks an entity handle: a live one (if any), or any handle ever seen.
#[derive(Clone, Copy, Debug)]
struct Who {
    live: bool,
    index: usize,
}

#[derive(Clone, Debug)]
enum Op {
    Spawn {
        kind: usize,
        v: u32,
    },
    SpawnBatch {
        kind: usize,
        v: u32,
        n: usize,
        /// `spawn_batch` (true) or `World::extend` (false).
        collect: bool,
    },
    Despawn(Who),
    Insert {
        who: Who,
        kind: usize,
        v: u32,
    },
    Remove {
        who: Who,
        kind: usize,
    },
    GetMut {
        who: Who,
        comp: usize,
    },
    QueryGet(Who),
    Query(usize),
    /// Runs every tick-filtered query.
    QueryTicks,
    Clear,
    Reserve,
    CmdSpawn {
        kind: usize,
        v: u32,
    },
    CmdInsert {
        who: Who,
        kind: usize,
        v: u32,
    },
    CmdRemove {
        who: Who,
        kind: usize,
    },
    CmdDespawn(Who),
    CmdApply,
    /// `World::relate` with the many-to-many relation `Lk`.
    Relate {
        src: Who,
        dst: Who,
    },
    /// `World::unrelate` of an `Lk` edge.
    Unrelate {
        src: Who,
        dst: Who,
    },
    /// `World::add_child`.
    Parent {
        child: Who,
        parent: Who,
    },
    /// `World::despawn_recursive`.
    DespawnRecursive(Who),
}

/// The model's many-to-many relation.
#[derive(Relation)]
struct Lk;

const QUERIES: usize = 14;
/// The tick-filtered queries among them (`Op::QueryTicks` runs these).
const TICK_QUERIES: std::ops::Range<usize> = 8..13;

fn who() -> impl Strategy<Value = Who> {
    (prop::bool::weighted(0.8), any::<usize>()).prop_map(|(live, index)| Who { live, index })
}

fn op() -> impl Strategy<Value = Op> {
    let kind = 0..KINDS;
    let v = any::<u32>();
    prop_oneof![
        6 => (kind.clone(), v).prop_map(|(kind, v)| Op::Spawn { kind, v }),
        2 => (kind.clone(), v, 0..6usize, any::<bool>())
            .prop_map(|(kind, v, n, collect)| Op::SpawnBatch { kind, v, n, collect }),
        3 => who().prop_map(Op::Despawn),
        5 => (who(), kind.clone(), v).prop_map(|(who, kind, v)| Op::Insert { who, kind, v }),
        4 => (who(), kind.clone()).prop_map(|(who, kind)| Op::Remove { who, kind }),
        3 => (who(), 0..N_COMPONENTS).prop_map(|(who, comp)| Op::GetMut { who, comp }),
        1 => who().prop_map(Op::QueryGet),
        8 => (0..QUERIES).prop_map(Op::Query),
        3 => Just(Op::QueryTicks),
        1 => Just(Op::Clear),
        1 => Just(Op::Reserve),
        2 => (kind.clone(), v).prop_map(|(kind, v)| Op::CmdSpawn { kind, v }),
        2 => (who(), kind.clone(), v).prop_map(|(who, kind, v)| Op::CmdInsert { who, kind, v }),
        2 => (who(), kind).prop_map(|(who, kind)| Op::CmdRemove { who, kind }),
        1 => who().prop_map(Op::CmdDespawn),
        2 => Just(Op::CmdApply),
        3 => (who(), who()).prop_map(|(src, dst)| Op::Relate { src, dst }),
        1 => (who(), who()).prop_map(|(src, dst)| Op::Unrelate { src, dst }),
        3 => (who(), who()).prop_map(|(child, parent)| Op::Parent { child, parent }),
        1 => who().prop_map(Op::DespawnRecursive),
    ]
}

// ----- the model -------------------------------------------------------------------------

type Slots = [Option<u64>; N_COMPONENTS];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Added,
    Changed,
}

/// A command recorded in the buffer, not yet applied.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Insert { e: Entity, kind: usize, v: u32 },
    Remove { e: Entity, kind: usize },
    Despawn(Entity),
}

#[derive(Default)]
struct Model {
    live: BTreeMap<Entity, Slots>,
    /// Every handle ever seen (stale ones stay), in first-seen order.
    known: Vec<Entity>,
    known_set: BTreeSet<Entity>,
    /// Ids reserved (by `reserve_entity` or a buffer's `spawn`) that become
    /// live, empty, at the world's next structural change.
    reserved: Vec<Entity>,
    commands: Vec<Pending>,
    /// (entity, component slot, event), in order.
    events: Vec<(Entity, usize, Event)>,
    /// `Lk` edges made and not unrelated; an edge with a dead end is gone
    /// (every despawn removes an entity's edges), so readers filter.
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
            .filter(|&&(s, t)| s == e && self.live.contains_key(&t))
            .map(|&(_, t)| t)
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

    /// `root` and its live descendants, each once.
    fn subtree(&self, root: Entity) -> Vec<Entity> {
        let mut out = vec![root];
        let mut seen = BTreeSet::from([root]);
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
        if who.live && !self.live.is_empty() {
            *self.live.keys().nth(who.index % self.live.len()).unwrap()
        } else {
            self.known[who.index % self.known.len()]
        }
    }

    /// What every structural change does first.
    fn flush(&mut self) {
        for e in std::mem::take(&mut self.reserved) {
            assert!(self.live.insert(e, [None; N_COMPONENTS]).is_none());
        }
    }

    fn spawn(&mut self, e: Entity, values: &[(usize, u64)]) {
        let mut slots = [None; N_COMPONENTS];
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
    fn first_missing(&self, e: Entity, kind: usize) -> Option<usize> {
        let slots = &self.live[&e];
        kind_idxs(kind).into_iter().find(|&i| slots[i].is_none())
    }

    fn changed(&mut self, e: Entity, i: usize) {
        self.events.push((e, i, Event::Changed));
    }

    /// Counted values the world should hold right now.
    fn expected_live(&self) -> isize {
        let in_world: isize = self
            .live
            .values()
            .map(|s| {
                (0..N_COMPONENTS)
                    .filter(|&i| COUNTED[i] && s[i].is_some())
                    .count() as isize
            })
            .sum();
        let in_buffer: isize = self
            .commands
            .iter()
            .map(|c| match *c {
                Pending::Insert { kind, .. } => counted_in(kind),
                _ => 0,
            })
            .sum();
        in_world + in_buffer
    }

    /// Entities currently having slot `i` with an event `want` (an add
    /// counts as a change) since event position `since`.
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

// ----- the cached queries ------------------------------------------------------------------

type DataItem = (
    Entity,
    Option<&'static Tab>,
    Option<&'static Spa>,
    Has<ZTab>,
    Has<ZSpa>,
    Option<&'static Big>,
);

type RequiredItem = (Entity, &'static Spa, &'static Big);
type OrZst = Or<(With<ZTab>, With<ZSpa>)>;
type OrTicks = Or<(Changed<Big>, Added<ZSpa>)>;
type MutSpaItem = (Entity, &'static mut Spa, Option<&'static mut Big>);
/// Sparse components alone, no filter: a dense walk of the smaller set.
type DenseItem = (Entity, &'static mut Spa, &'static ZSpa);

struct States {
    with_tab: QueryState<Entity, With<Tab>>,
    without_spa: QueryState<Entity, Without<Spa>>,
    or_zst: QueryState<Entity, OrZst>,
    with_without: QueryState<Entity, (With<Big>, Without<ZTab>)>,
    data: QueryState<DataItem>,
    required: QueryState<RequiredItem>,
    mut_tab: QueryState<(Entity, &'static mut Tab), With<Big>>,
    mut_spa: QueryState<MutSpaItem>,
    added_tab: QueryState<Entity, Added<Tab>>,
    changed_tab: QueryState<Entity, Changed<Tab>>,
    added_spa: QueryState<Entity, Added<Spa>>,
    changed_spa: QueryState<Entity, Changed<Spa>>,
    or_ticks: QueryState<Entity, OrTicks>,
    dense: QueryState<DenseItem>,
    /// Event-log position of each tick-filtered state's last run.
    seen: [usize; 5],
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
            added_tab: world.query_filtered(),
            changed_tab: world.query_filtered(),
            added_spa: world.query_filtered(),
            changed_spa: world.query_filtered(),
            or_ticks: world.query_filtered(),
            dense: world.query(),
            seen: [0; 5],
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
) -> Slots {
    if let Some(b) = big {
        check_aligned(b);
    }
    [
        tab.map(Comp::value),
        spa.map(Comp::value),
        ztab.then_some(0),
        zspa.then_some(0),
        big.map(Comp::value),
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
            for (e, tab, spa, ztab, zspa, big) in st.data.iter(world) {
                let slots = slots_of(tab, spa, ztab, zspa, big);
                assert!(got.insert(e, slots).is_none(), "data query: {e:?} twice");
            }
            assert_eq!(got, m.live, "data query items");
        }
        5 => {
            let mut got = BTreeMap::new();
            for (e, spa, big) in st.required.iter(world) {
                check_aligned(big);
                assert!(got.insert(e, (spa.value(), big.0)).is_none());
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
        8..=12 => {
            let k = q - 8;
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
                _ => (
                    entity_set(st.or_ticks.iter(world), "Or<Changed, Added>"),
                    &m.ticked_since(since, 4, Event::Changed)
                        | &m.ticked_since(since, 3, Event::Added),
                    "Or<(Changed<Big>, Added<ZSpa>)>",
                ),
            };
            assert_eq!(got, want, "{name} (events since position {since})");
            st.seen[k] = m.events.len();
        }
        13 => {
            let mut got = BTreeMap::new();
            for (e, spa, _) in st.dense.iter_mut(world) {
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
        _ => unreachable!(),
    }
}

// ----- checking the world against the model ----------------------------------------------

fn check_get<C: Comp>(world: &World, e: Entity, slots: Option<&Slots>) {
    match (world.get::<C>(e), slots) {
        (Ok(c), Some(s)) => {
            check_aligned(c);
            assert_eq!(
                Some(c.value()),
                s[C::IDX],
                "get::<{}>({e:?})",
                NAMES[C::IDX]
            );
        }
        (Err(ComponentError::NoSuchEntity(x)), None) => assert_eq!(x, e),
        (Err(ComponentError::MissingComponent { entity, component }), Some(s)) => {
            assert_eq!(entity, e);
            assert_eq!(component, NAMES[C::IDX]);
            assert_eq!(
                s[C::IDX],
                None,
                "get::<{}>({e:?}) says missing",
                NAMES[C::IDX]
            );
        }
        (got, want) => panic!(
            "get::<{}>({e:?}): world {:?}, model {want:?}",
            NAMES[C::IDX],
            got.map(|c| c.value())
        ),
    }
    assert_eq!(
        world.has::<C>(e),
        slots.is_some_and(|s| s[C::IDX].is_some())
    );
}

fn check_world(world: &World, m: &Model, live: &Live) {
    world.check_invariants();
    assert_eq!(world.len(), m.live.len(), "len");
    assert_eq!(world.is_empty(), m.live.is_empty());
    for &e in &m.known {
        let slots = m.live.get(&e);
        assert_eq!(world.contains(e), slots.is_some(), "contains({e:?})");
        check_get::<Tab>(world, e, slots);
        check_get::<Spa>(world, e, slots);
        check_get::<ZTab>(world, e, slots);
        check_get::<ZSpa>(world, e, slots);
        check_get::<Big>(world, e, slots);
        let mut likes = world.targets::<Lk>(e).to_vec();
        likes.sort();
        assert_eq!(likes, m.live_likes(e), "targets::<Lk>({e:?})");
        assert_eq!(world.parent(e), m.live_parent(e), "parent({e:?})");
    }
    assert_eq!(
        live.load(Ordering::SeqCst),
        m.expected_live(),
        "live counted values (constructions - drops)"
    );
}

// ----- running one operation -----------------------------------------------------------------

struct Case {
    world: World,
    states: States,
    buffer: CommandBuffer,
    model: Model,
    live: Live,
}

fn do_spawn(c: &mut Case, kind: usize, v: u32) {
    struct V<'a>(&'a mut World, u32, &'a Live);
    impl KindVisitor for V<'_> {
        type Out = Entity;
        fn visit<B: ModelBundle>(self) -> Entity {
            self.0.spawn(B::make(self.1, self.2))
        }
    }
    c.model.flush();
    let e = with_kind(kind, V(&mut c.world, v, &c.live));
    c.model.fresh(e);
    c.model.spawn(e, &kind_expected(kind, v));
}

/// Every entity of the world, in archetype order and each table's row
/// order.
fn all_entities(world: &World) -> Vec<Entity> {
    world
        .archetypes()
        .flat_map(|a| a.entities().iter().copied())
        .collect()
}

fn do_spawn_batch(c: &mut Case, kind: usize, v: u32, n: usize, collect: bool) {
    struct V<'a>(&'a mut World, u32, usize, &'a Live, bool);
    impl KindVisitor for V<'_> {
        type Out = Vec<Entity>;
        fn visit<B: ModelBundle>(self) -> Vec<Entity> {
            let (v, live) = (self.1, self.3);
            let bundles = (0..self.2 as u32).map(|i| B::make(v.wrapping_add(i), live));
            if self.4 {
                self.0.spawn_batch(bundles)
            } else {
                self.0.extend(bundles);
                Vec::new()
            }
        }
    }
    c.model.flush();
    let es = with_kind(kind, V(&mut c.world, v, n, &c.live, collect));
    let es = if collect {
        es
    } else {
        // `extend` returns nothing: the new entities are those the model
        // does not know (reserved ones were flushed above), appended in
        // order to one table.
        let mut new = all_entities(&c.world);
        new.retain(|e| !c.model.live.contains_key(e));
        new
    };
    assert_eq!(es.len(), n, "spawn_batch / extend count");
    for (i, e) in es.into_iter().enumerate() {
        c.model.fresh(e);
        c.model
            .spawn(e, &kind_expected(kind, v.wrapping_add(i as u32)));
    }
}

fn do_insert(c: &mut Case, e: Entity, kind: usize, v: u32) {
    struct V<'a>(&'a mut World, Entity, u32, &'a Live);
    impl KindVisitor for V<'_> {
        type Out = Result<(), EntityError>;
        fn visit<B: ModelBundle>(self) -> Self::Out {
            B::make(self.2, self.3).insert_into(self.0, self.1, self.2)
        }
    }
    c.model.flush();
    let result = with_kind(kind, V(&mut c.world, e, v, &c.live));
    if c.model.live.contains_key(&e) {
        assert_eq!(result, Ok(()), "insert into live {e:?}");
        c.model.insert(e, &kind_expected(kind, v));
    } else {
        assert_eq!(
            result,
            Err(EntityError::NoSuchEntity(e)),
            "insert into dead"
        );
    }
}

fn do_remove(c: &mut Case, e: Entity, kind: usize) {
    struct V<'a>(&'a mut World, Entity);
    impl KindVisitor for V<'_> {
        type Out = Result<Vec<(usize, u64)>, ComponentError>;
        fn visit<B: ModelBundle>(self) -> Self::Out {
            let bundle = B::remove_from(self.0, self.1)?;
            let mut values = Vec::new();
            bundle.values(&mut values);
            Ok(values)
        }
    }
    c.model.flush();
    let result = with_kind(kind, V(&mut c.world, e));
    if !c.model.live.contains_key(&e) {
        assert_eq!(
            result,
            Err(ComponentError::NoSuchEntity(e)),
            "remove from dead"
        );
        return;
    }
    match c.model.first_missing(e, kind) {
        Some(i) => assert_eq!(
            result,
            Err(ComponentError::MissingComponent {
                entity: e,
                component: NAMES[i].to_owned()
            }),
            "remove of a missing component must fail naming the first missing one"
        ),
        None => {
            let slots = c.model.live.get_mut(&e).unwrap();
            let want: Vec<(usize, u64)> = kind_idxs(kind)
                .into_iter()
                .map(|i| (i, slots[i].take().unwrap()))
                .collect();
            assert_eq!(result, Ok(want), "removed values");
        }
    }
}

fn do_get_mut(c: &mut Case, e: Entity, comp: usize) {
    fn one<C: Comp>(world: &mut World, m: &mut Model, e: Entity) {
        let result = world.get_mut::<C>(e).map(|c| {
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
    let (w, m) = (&mut c.world, &mut c.model);
    match comp {
        0 => one::<Tab>(w, m, e),
        1 => one::<Spa>(w, m, e),
        2 => one::<ZTab>(w, m, e),
        3 => one::<ZSpa>(w, m, e),
        _ => one::<Big>(w, m, e),
    }
}

fn do_query_get(c: &mut Case, e: Entity) {
    let got = c
        .states
        .data
        .get(&c.world, e)
        .map(|(x, tab, spa, ztab, zspa, big)| {
            assert_eq!(x, e);
            slots_of(tab, spa, ztab, zspa, big)
        });
    match c.model.live.get(&e) {
        None => assert_eq!(got, Err(QueryEntityError::NoSuchEntity(e))),
        Some(slots) => assert_eq!(got, Ok(*slots), "QueryState::get({e:?})"),
    }
    let got = c
        .states
        .required
        .get(&c.world, e)
        .map(|(_, spa, big)| (spa.value(), big.0));
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

fn do_apply(c: &mut Case) {
    let commands = std::mem::take(&mut c.model.commands);
    let result = c.buffer.apply(&mut c.world);
    assert!(c.buffer.is_empty(), "apply leaves the buffer empty");
    let m = &mut c.model;
    if !commands.is_empty() {
        m.flush();
    }
    let mut want: Vec<(usize, CommandError)> = Vec::new();
    for (index, command) in commands.into_iter().enumerate() {
        match command {
            Pending::Insert { e, kind, v } => {
                if m.live.contains_key(&e) {
                    m.insert(e, &kind_expected(kind, v));
                } else {
                    want.push((index, EntityError::NoSuchEntity(e).into()));
                }
            }
            Pending::Remove { e, kind } => {
                if !m.live.contains_key(&e) {
                    want.push((index, ComponentError::NoSuchEntity(e).into()));
                } else if let Some(i) = m.first_missing(e, kind) {
                    let err = ComponentError::MissingComponent {
                        entity: e,
                        component: NAMES[i].to_owned(),
                    };
                    want.push((index, err.into()));
                } else {
                    let slots = m.live.get_mut(&e).unwrap();
                    for i in kind_idxs(kind) {
                        slots[i] = None;
                    }
                }
            }
            Pending::Despawn(e) => {
                if m.live.remove(&e).is_none() {
                    want.push((index, EntityError::NoSuchEntity(e).into()));
                }
            }
        }
    }
    let got: Vec<(usize, CommandError)> = match result {
        Ok(()) => Vec::new(),
        Err(errors) => {
            let errors: CommandErrors = errors;
            assert_eq!(errors.len(), errors.iter().count());
            errors.iter().cloned().collect()
        }
    };
    assert_eq!(got, want, "CommandBuffer::apply errors");
}

fn record_insert(c: &mut Case, e: Entity, kind: usize, v: u32) {
    struct V<'a>(&'a mut CommandBuffer, Entity, u32, &'a Live);
    impl KindVisitor for V<'_> {
        type Out = ();
        fn visit<B: ModelBundle>(self) {
            self.0.insert(self.1, B::make(self.2, self.3));
        }
    }
    with_kind(kind, V(&mut c.buffer, e, v, &c.live));
    c.model.commands.push(Pending::Insert { e, kind, v });
}

fn record_remove(c: &mut Case, e: Entity, kind: usize) {
    struct V<'a>(&'a mut CommandBuffer, Entity);
    impl KindVisitor for V<'_> {
        type Out = ();
        fn visit<B: ModelBundle>(self) {
            self.0.remove::<B>(self.1);
        }
    }
    with_kind(kind, V(&mut c.buffer, e));
    c.model.commands.push(Pending::Remove { e, kind });
}

fn record_spawn(c: &mut Case, kind: usize, v: u32) {
    struct V<'a>(&'a mut CommandBuffer, u32, &'a Live);
    impl KindVisitor for V<'_> {
        type Out = Entity;
        fn visit<B: ModelBundle>(self) -> Entity {
            self.0.spawn(B::make(self.1, self.2))
        }
    }
    let e = with_kind(kind, V(&mut c.buffer, v, &c.live));
    assert!(!c.world.contains(e), "a buffer's new id is not live yet");
    c.model.fresh(e);
    c.model.reserved.push(e);
    c.model.commands.push(Pending::Insert { e, kind, v });
}

fn step(c: &mut Case, op: &Op) {
    match *op {
        Op::Spawn { kind, v } => do_spawn(c, kind, v),
        Op::SpawnBatch {
            kind,
            v,
            n,
            collect,
        } => do_spawn_batch(c, kind, v, n, collect),
        Op::Despawn(who) => {
            let e = c.model.pick(who);
            c.model.flush();
            let result = c.world.despawn(e);
            if c.model.live.remove(&e).is_some() {
                assert_eq!(result, Ok(()), "despawn live {e:?}");
            } else {
                assert_eq!(result, Err(EntityError::NoSuchEntity(e)), "despawn dead");
            }
        }
        Op::Insert { who, kind, v } => {
            let e = c.model.pick(who);
            do_insert(c, e, kind, v);
        }
        Op::Relate { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            c.model.flush();
            let alive = c.model.live.contains_key(&s) && c.model.live.contains_key(&t);
            assert_eq!(c.world.relate(s, t, Lk).is_ok(), alive, "relate");
            if alive {
                c.model.likes.insert((s, t));
            }
        }
        Op::Unrelate { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            c.model.flush();
            let had = c.model.live_likes(s).contains(&t);
            assert_eq!(c.world.unrelate::<Lk>(s, t).is_ok(), had, "unrelate");
            c.model.likes.remove(&(s, t));
        }
        Op::Parent { child, parent } => {
            let (ch, p) = (c.model.pick(child), c.model.pick(parent));
            c.model.flush();
            let alive = c.model.live.contains_key(&ch) && c.model.live.contains_key(&p);
            // `ChildOf` is acyclic: a child under itself or a descendant is
            // refused, changing nothing.
            let ok = alive && !c.model.is_ancestor_or_self(ch, p);
            assert_eq!(c.world.add_child(p, ch).is_ok(), ok, "add_child");
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
            assert_eq!(
                c.world.despawn_recursive(e).is_ok(),
                alive,
                "despawn_recursive"
            );
            for d in doomed {
                c.model.live.remove(&d);
            }
        }
        Op::Remove { who, kind } => {
            let e = c.model.pick(who);
            do_remove(c, e, kind);
        }
        Op::GetMut { who, comp } => {
            let e = c.model.pick(who);
            do_get_mut(c, e, comp);
        }
        Op::QueryGet(who) => {
            let e = c.model.pick(who);
            do_query_get(c, e);
        }
        Op::Query(q) => run_query(q, &mut c.world, &mut c.states, &mut c.model),
        Op::QueryTicks => {
            for q in TICK_QUERIES {
                run_query(q, &mut c.world, &mut c.states, &mut c.model);
            }
        }
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
        Op::CmdSpawn { kind, v } => record_spawn(c, kind, v),
        Op::CmdInsert { who, kind, v } => {
            let e = c.model.pick(who);
            record_insert(c, e, kind, v);
        }
        Op::CmdRemove { who, kind } => {
            let e = c.model.pick(who);
            record_remove(c, e, kind);
        }
        Op::CmdDespawn(who) => {
            let e = c.model.pick(who);
            c.buffer.despawn(e);
            c.model.commands.push(Pending::Despawn(e));
        }
        Op::CmdApply => do_apply(c),
    }
}

/// A handle no world here ever hands out.
fn never_spawned() -> Entity {
    Entity::from_bits((1u64 << 32) | u64::from(u32::MAX - 1)).unwrap()
}

fn run(ops: &[Op], apply_at_end: bool) {
    let live: Live = Arc::default();
    let mut world = World::new();
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
        live: Arc::clone(&live),
    };
    check_world(&case.world, &case.model, &live);
    for (i, op) in ops.iter().enumerate() {
        step(&mut case, op);
        let c = &case;
        let check = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_world(&c.world, &c.model, &live)
        }));
        if let Err(payload) = check {
            eprintln!("world and model disagree after op #{i}: {op:?}");
            std::panic::resume_unwind(payload);
        }
    }
    if apply_at_end {
        do_apply(&mut case);
        check_world(&case.world, &case.model, &live);
    }
    let Case {
        world,
        states,
        buffer,
        model,
        live: _,
    } = case;
    drop(states);
    drop(buffer);
    assert_eq!(
        live.load(Ordering::SeqCst),
        model
            .live
            .values()
            .map(|s| s
                .iter()
                .enumerate()
                .filter(|(i, v)| COUNTED[*i] && v.is_some())
                .count() as isize)
            .sum::<isize>(),
        "dropping the command buffer drops exactly its pending values"
    );
    drop(world);
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "constructions != drops after dropping the world"
    );
}

// ----- configuration -------------------------------------------------------------------

fn config() -> ProptestConfig {
    let cases = if cfg!(miri) {
        4
    } else {
        std::env::var("MOSAIC_MODEL_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(256)
    };
    ProptestConfig {
        cases,
        // Miri runs with isolation: no regression files.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    }
}

/// Longest operation sequence: `MOSAIC_MODEL_OPS` (default 64; 12 under
/// Miri).
fn max_ops() -> usize {
    if cfg!(miri) {
        12
    } else {
        std::env::var("MOSAIC_MODEL_OPS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(64)
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn world_matches_model(
        ops in prop::collection::vec(op(), 0..max_ops()),
        apply_at_end in any::<bool>(),
    ) {
        run(&ops, apply_at_end);
    }
}

/// A fixed sequence touching every operation, so a plain `cargo test` run
/// covers them all even if the random cases happen not to.
#[test]
fn every_operation_once() {
    let live = |index: usize| Who { live: true, index };
    let any = |index: usize| Who { live: false, index };
    let mut ops = Vec::new();
    for kind in 0..KINDS {
        ops.push(Op::Spawn {
            kind,
            v: kind as u32,
        });
    }
    ops.push(Op::SpawnBatch {
        kind: 10,
        v: 100,
        n: 5,
        collect: true,
    });
    ops.push(Op::SpawnBatch {
        kind: 10,
        v: 200,
        n: 4,
        collect: false,
    });
    for q in 0..QUERIES {
        ops.push(Op::Query(q));
    }
    ops.extend([
        Op::Insert {
            who: live(1),
            kind: 10,
            v: 7,
        },
        Op::Remove {
            who: live(2),
            kind: 6,
        },
        Op::Remove {
            who: live(3),
            kind: 10,
        },
        Op::GetMut {
            who: live(4),
            comp: 0,
        },
        Op::GetMut {
            who: live(4),
            comp: 1,
        },
        Op::GetMut {
            who: live(4),
            comp: 4,
        },
        Op::QueryGet(live(5)),
        Op::QueryGet(any(0)),
        Op::Despawn(live(0)),
        Op::Despawn(any(0)),
        Op::Reserve,
        Op::CmdSpawn { kind: 9, v: 9 },
        Op::CmdInsert {
            who: live(6),
            kind: 11,
            v: 11,
        },
        Op::CmdRemove {
            who: live(7),
            kind: 2,
        },
        Op::CmdDespawn(any(3)),
        Op::Spawn { kind: 1, v: 1 },
        Op::Relate {
            src: live(1),
            dst: live(2),
        },
        Op::Relate {
            src: live(3),
            dst: live(2),
        },
        Op::Relate {
            src: live(1),
            dst: any(0),
        },
        Op::Unrelate {
            src: live(3),
            dst: live(2),
        },
        Op::Parent {
            child: live(4),
            parent: live(5),
        },
        Op::Parent {
            child: live(6),
            parent: live(4),
        },
        Op::Despawn(live(2)),
        Op::DespawnRecursive(live(5)),
        Op::DespawnRecursive(any(0)),
    ]);
    for q in 0..QUERIES {
        ops.push(Op::Query(q));
    }
    ops.extend([
        Op::CmdApply,
        Op::Clear,
        Op::CmdSpawn { kind: 1, v: 3 },
        Op::CmdApply,
    ]);
    for q in 0..QUERIES {
        ops.push(Op::Query(q));
    }
    run(&ops, true);
}

/// An id reserved through `&World` while a despawn (or clear) is under way —
/// here from an observer, via `DeferredWorld::world().reserve_entity()` — must
/// never be handed out again by a later spawn.
#[test]
fn id_reserved_inside_a_despawn_observer_is_not_handed_out_twice() {
    use std::sync::Mutex;
    let mut world = World::new();
    let x = world.spawn(());
    let c = world.spawn(());
    world.despawn(x).unwrap(); // x's index is on the free list
    let reserved = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reserved);
    world.observe(move |_: Trigger<OnDespawn>, w: DeferredWorld| {
        sink.lock().unwrap().push(w.world().reserve_entity());
    });
    world.despawn(c).unwrap();
    let r = reserved.lock().unwrap()[0];
    let d1 = world.spawn(ZTab);
    let d2 = world.spawn(ZTab);
    world.check_invariants();
    assert!(
        r != d1 && r != d2,
        "reserved id {r:?} handed out again by spawn ({d1:?}, {d2:?})"
    );
}

/// The same through `World::clear`.
#[test]
fn id_reserved_inside_a_clear_observer_is_not_handed_out_twice() {
    use std::sync::Mutex;
    let mut world = World::new();
    let x = world.spawn(());
    world.spawn(());
    world.despawn(x).unwrap();
    let reserved = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reserved);
    world.observe(move |_: Trigger<OnDespawn>, w: DeferredWorld| {
        sink.lock().unwrap().push(w.world().reserve_entity());
    });
    world.clear();
    let r = reserved.lock().unwrap()[0];
    let spawned: Vec<Entity> = (0..3).map(|_| world.spawn(ZTab)).collect();
    world.check_invariants();
    assert!(
        !spawned.contains(&r),
        "reserved id {r:?} handed out again by spawn ({spawned:?})"
    );
}
