//! Panic safety: user code that panics in the middle of a world operation.
//!
//! The policy under test (from `src/storage/mod.rs`, "Panics while
//! dropping"): a component's `Drop` may panic. Storage never drops a value
//! twice and never leaves an uninitialised value readable: it finishes the
//! structural change it is in (catching the panic), then re-raises the first
//! panic. Values not yet dropped when a *second* panic strikes may leak
//! (leaking is allowed on panic; a double drop never is). `CommandBuffer::apply`
//! runs every command even if one panics and re-raises the first panic at
//! the end, leaving the buffer empty and reusable.
//!
//! Every test here injects one kind of panic — a `Drop`, a `Clone`, a
//! `Default` used by a required component, a hook, an observer, a command
//! closure, an iterator fed to `spawn_batch` — catches it with
//! `catch_unwind`, then checks:
//! - `world.check_invariants()`;
//! - the entity concerned is fully there or fully gone (with exactly the
//!   components the operation promised, or exactly those it had before);
//! - no value was dropped twice or dropped without being built (every value
//!   carries a [`Token`] registered in a per-test [`Tracker`]);
//! - further operations on the same world (and buffer) work;
//! - with a single panic, nothing leaks: once the world is dropped, every
//!   value built was dropped exactly once.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mosaic::DeferredWorld;
use mosaic::prelude::*;

// ----- drop tracking -----------------------------------------------------------------

/// Which values of one test are alive, and any drop that should not happen.
#[derive(Default)]
struct Tracker {
    next: AtomicU64,
    created: AtomicUsize,
    dropped: AtomicUsize,
    alive: Mutex<BTreeSet<u64>>,
    bad_drops: Mutex<Vec<u64>>,
}

impl Tracker {
    fn new() -> Arc<Tracker> {
        Arc::default()
    }

    fn alive(&self) -> usize {
        self.alive.lock().unwrap().len()
    }

    /// No value was dropped twice (or dropped without being made).
    fn assert_no_bad_drop(&self) {
        let bad = self.bad_drops.lock().unwrap();
        assert!(bad.is_empty(), "values dropped twice: {bad:?}");
    }

    /// Every value made was dropped exactly once.
    fn assert_all_dropped_once(&self) {
        self.assert_no_bad_drop();
        let alive = self.alive.lock().unwrap();
        assert!(alive.is_empty(), "values leaked: {alive:?}");
        assert_eq!(
            self.created.load(Ordering::SeqCst),
            self.dropped.load(Ordering::SeqCst),
            "constructions != drops"
        );
    }
}

/// One value's identity: registered on construction (`Clone` included),
/// checked off on drop.
struct Token {
    id: u64,
    tracker: Arc<Tracker>,
}

impl Token {
    fn new(tracker: &Arc<Tracker>) -> Token {
        let id = tracker.next.fetch_add(1, Ordering::SeqCst);
        tracker.created.fetch_add(1, Ordering::SeqCst);
        tracker.alive.lock().unwrap().insert(id);
        Token {
            id,
            tracker: Arc::clone(tracker),
        }
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        self.tracker.dropped.fetch_add(1, Ordering::SeqCst);
        if !self.tracker.alive.lock().unwrap().remove(&self.id) {
            self.tracker.bad_drops.lock().unwrap().push(self.id);
        }
    }
}

const BOOM: &str = "intentional panic in Drop";

/// A table component whose `Drop` panics if asked to (after its token is
/// checked off: fields are dropped even when `drop` panics).
#[derive(Component)]
struct Boom {
    _token: Token,
    panics: bool,
}

impl Drop for Boom {
    fn drop(&mut self) {
        if self.panics {
            panic!("{BOOM}");
        }
    }
}

/// The sparse-set twin of [`Boom`].
#[derive(Component)]
#[component(storage = "sparse")]
struct SparseBoom {
    _token: Token,
    panics: bool,
}

impl Drop for SparseBoom {
    fn drop(&mut self) {
        if self.panics {
            panic!("{BOOM}");
        }
    }
}

/// A table component that never panics.
#[derive(Component)]
struct Plain(u32, #[allow(dead_code)] Token);

/// A sparse component that never panics.
#[derive(Component)]
#[component(storage = "sparse")]
struct SparsePlain(u32, #[allow(dead_code)] Token);

/// A zero-sized table component.
#[derive(Component, Clone, Copy)]
struct Marker;

fn boom(t: &Arc<Tracker>, panics: bool) -> Boom {
    Boom {
        _token: Token::new(t),
        panics,
    }
}

fn sparse_boom(t: &Arc<Tracker>, panics: bool) -> SparseBoom {
    SparseBoom {
        _token: Token::new(t),
        panics,
    }
}

fn plain(t: &Arc<Tracker>, v: u32) -> Plain {
    Plain(v, Token::new(t))
}

fn sparse_plain(t: &Arc<Tracker>, v: u32) -> SparsePlain {
    SparsePlain(v, Token::new(t))
}

/// Runs `f`, which must panic; returns the panic message.
fn expect_panic<R>(f: impl FnOnce() -> R) -> String {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic"),
        Err(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    }
}

fn check(world: &World, t: &Tracker) {
    world.check_invariants();
    t.assert_no_bad_drop();
}

/// Drops the world (which must not panic now) and checks nothing leaked.
fn finish(world: World, t: &Tracker) {
    check(&world, t);
    drop(world);
    t.assert_all_dropped_once();
}

/// Further operations still work: spawn, insert, query, remove, despawn.
fn still_works(world: &mut World, t: &Arc<Tracker>) {
    let before = world.len();
    let e = world.spawn((plain(t, 77), sparse_plain(t, 78)));
    world.insert(e, (Marker, boom(t, false))).unwrap();
    assert_eq!(world.get::<Plain>(e).unwrap().0, 77);
    let mut q = world.query::<(&Plain, &SparsePlain, &Marker)>();
    assert!(q.iter(world).any(|(p, s, _)| p.0 == 77 && s.0 == 78));
    let Plain(v, _) = world.remove::<Plain>(e).unwrap();
    assert_eq!(v, 77);
    world.despawn(e).unwrap();
    assert_eq!(world.len(), before);
    world.check_invariants();
}

// ----- Drop panics inside structural changes ---------------------------------------

#[test]
fn insert_replacing_a_table_value_whose_drop_panics() {
    let t = Tracker::new();
    let mut world = World::new();
    let other = world.spawn((boom(&t, false), plain(&t, 1)));
    let e = world.spawn((boom(&t, true), plain(&t, 2)));
    let msg = expect_panic(|| world.insert(e, boom(&t, false)));
    assert_eq!(msg, BOOM);
    check(&world, &t);
    // The replace finished: the new value is in, the old one dropped once.
    assert!(!world.get::<Boom>(e).unwrap().panics);
    assert_eq!(world.get::<Plain>(e).unwrap().0, 2);
    assert_eq!(world.get::<Plain>(other).unwrap().0, 1);
    assert_eq!(t.alive(), 4);
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn insert_replacing_a_sparse_value_whose_drop_panics() {
    let t = Tracker::new();
    let mut world = World::new();
    let e = world.spawn((sparse_boom(&t, true), plain(&t, 2)));
    let msg = expect_panic(|| world.insert(e, sparse_boom(&t, false)));
    assert_eq!(msg, BOOM);
    check(&world, &t);
    assert!(!world.get::<SparseBoom>(e).unwrap().panics);
    assert_eq!(world.get::<Plain>(e).unwrap().0, 2);
    assert_eq!(t.alive(), 2);
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn insert_moving_archetype_while_a_replaced_value_panics() {
    let t = Tracker::new();
    let mut world = World::new();
    // Neighbours in the same table, so the move swaps rows around.
    let before = world.spawn((boom(&t, false), sparse_boom(&t, false), plain(&t, 10)));
    let e = world.spawn((boom(&t, true), sparse_boom(&t, true), plain(&t, 11)));
    let after = world.spawn((boom(&t, false), sparse_boom(&t, false), plain(&t, 12)));

    // Replaces Boom and SparseBoom (both old values panic) and adds Marker
    // (a new table column: the entity moves to another archetype).
    let msg = expect_panic(|| world.insert(e, (boom(&t, false), Marker, sparse_boom(&t, false))));
    assert_eq!(msg, BOOM);
    check(&world, &t);
    assert!(world.has::<Marker>(e), "the move finished");
    assert!(!world.get::<Boom>(e).unwrap().panics);
    assert!(!world.get::<SparseBoom>(e).unwrap().panics);
    assert_eq!(world.get::<Plain>(e).unwrap().0, 11);
    assert_eq!(world.get::<Plain>(before).unwrap().0, 10);
    assert_eq!(world.get::<Plain>(after).unwrap().0, 12);
    assert!(!world.has::<Marker>(before) && !world.has::<Marker>(after));
    // Both panicking old values were dropped (once): 9 made, 2 replaced.
    assert_eq!(t.alive(), 9);
    let mut q = world.query_filtered::<Entity, With<Marker>>();
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [e]);
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn removed_value_whose_drop_panics_outside_the_world() {
    let t = Tracker::new();
    let mut world = World::new();
    let e = world.spawn((boom(&t, true), plain(&t, 1)));
    let removed = world.remove::<Boom>(e).unwrap();
    check(&world, &t);
    assert!(!world.has::<Boom>(e));
    assert_eq!(expect_panic(move || drop(removed)), BOOM);
    check(&world, &t);
    assert_eq!(world.get::<Plain>(e).unwrap().0, 1);
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn despawn_with_panicking_drops() {
    let t = Tracker::new();
    let mut world = World::new();
    let first = world.spawn((boom(&t, false), plain(&t, 1), sparse_plain(&t, 1)));
    // Two panicking values (a table one and a sparse one): the first panic is
    // re-raised, the second is caught and discarded, both are dropped.
    let e = world.spawn((boom(&t, true), plain(&t, 2), sparse_boom(&t, true)));
    let last = world.spawn((boom(&t, false), plain(&t, 3), sparse_plain(&t, 3)));
    let msg = expect_panic(|| world.despawn(e));
    assert_eq!(msg, BOOM);
    check(&world, &t);
    assert!(!world.contains(e), "the despawn finished");
    assert_eq!(world.despawn(e), Err(EntityError::NoSuchEntity(e)));
    assert!(world.get::<SparseBoom>(e).is_err());
    // `last` took the freed row: its values and location are intact.
    assert_eq!(world.get::<Plain>(last).unwrap().0, 3);
    assert_eq!(world.get::<SparsePlain>(last).unwrap().0, 3);
    assert_eq!(world.get::<Plain>(first).unwrap().0, 1);
    assert_eq!(world.len(), 2);
    assert_eq!(t.alive(), 6);
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn clear_with_panicking_drops() {
    let t = Tracker::new();
    let mut world = World::new();
    let mut all = Vec::new();
    for i in 0..20u32 {
        let panics = i % 7 == 3;
        all.push(world.spawn((boom(&t, panics), plain(&t, i))));
        all.push(world.spawn((sparse_boom(&t, panics), plain(&t, i), Marker)));
    }
    let msg = expect_panic(|| world.clear());
    assert_eq!(msg, BOOM);
    check(&world, &t);
    assert!(world.is_empty());
    assert!(all.iter().all(|&e| !world.contains(e)));
    let mut q = world.query::<Entity>();
    assert_eq!(q.iter(&world).count(), 0);
    assert_eq!(t.alive(), 0, "every value dropped, panicking ones included");
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn dropping_the_world_with_panicking_drops() {
    let t = Tracker::new();
    let mut world = World::new();
    for i in 0..10u32 {
        world.spawn((boom(&t, i == 4), plain(&t, i)));
        world.spawn((sparse_boom(&t, i == 6), sparse_plain(&t, i)));
    }
    world.check_invariants();
    let msg = expect_panic(move || drop(world));
    assert_eq!(msg, BOOM);
    // Two panicking values in different columns: one panic re-raised, the
    // other swallowed while unwinding; every value dropped exactly once.
    t.assert_all_dropped_once();
}

// ----- panics while building values ---------------------------------------------------

#[test]
fn spawn_batch_iterator_panics_midway() {
    let t = Tracker::new();
    let mut world = World::new();
    let existing = world.spawn((plain(&t, 100), sparse_plain(&t, 100)));
    let tt = Arc::clone(&t);
    let msg = expect_panic(|| {
        world.spawn_batch((0..10u32).map(move |i| {
            assert!(i != 6, "intentional panic in the iterator");
            (plain(&tt, i), sparse_plain(&tt, i), Marker)
        }))
    });
    assert_eq!(msg, "intentional panic in the iterator");
    check(&world, &t);
    // Each bundle taken before the panic became one complete entity.
    let mut q = world.query::<(Entity, &Plain, Option<&SparsePlain>, Option<&Marker>)>();
    let mut spawned: Vec<u32> = Vec::new();
    for (e, p, s, m) in q.iter(&world) {
        if e == existing {
            continue;
        }
        assert_eq!(s.map(|s| s.0), Some(p.0), "half-written entity");
        assert!(m.is_some(), "half-written entity");
        spawned.push(p.0);
    }
    spawned.sort_unstable();
    assert_eq!(spawned, [0, 1, 2, 3, 4, 5]);
    assert_eq!(world.len(), 7);
    assert_eq!(t.alive(), 14);
    // A later batch into the same table works.
    let more =
        world.spawn_batch((0..3u32).map(|i| (plain(&t, 50 + i), sparse_plain(&t, 0), Marker)));
    assert_eq!(more.len(), 3);
    check(&world, &t);
    still_works(&mut world, &t);
    finish(world, &t);
}

/// A component whose `Clone` panics once its budget is spent.
#[derive(Component)]
struct Fussy {
    _token: Token,
    clones_left: Arc<AtomicUsize>,
}

impl Clone for Fussy {
    fn clone(&self) -> Self {
        let left = self.clones_left.load(Ordering::SeqCst);
        assert!(left > 0, "intentional panic in Clone");
        self.clones_left.store(left - 1, Ordering::SeqCst);
        Fussy {
            _token: Token::new(&self._token.tracker),
            clones_left: Arc::clone(&self.clones_left),
        }
    }
}

#[test]
fn spawn_batch_of_clones_panics_midway() {
    let t = Tracker::new();
    let mut world = World::new();
    let proto = Fussy {
        _token: Token::new(&t),
        clones_left: Arc::new(AtomicUsize::new(4)),
    };
    let msg = expect_panic(|| world.spawn_batch(std::iter::repeat_n(&proto, 10).cloned()));
    assert_eq!(msg, "intentional panic in Clone");
    check(&world, &t);
    assert_eq!(world.len(), 4);
    let mut q = world.query::<&Fussy>();
    assert_eq!(q.iter(&world).count(), 4);
    assert_eq!(t.alive(), 5, "the prototype and four clones");
    drop(proto);
    still_works(&mut world, &t);
    finish(world, &t);
}

/// A component whose `Default` panics, required by [`NeedsFragile`].
#[derive(Component)]
struct Fragile;

impl Default for Fragile {
    fn default() -> Self {
        panic!("intentional panic in Default");
    }
}

#[derive(Component)]
struct NeedsFragile(#[allow(dead_code)] Token);

/// Entities that have `NeedsFragile` but not the `Fragile` it requires.
fn unmet_requirements(world: &mut World) -> Vec<Entity> {
    let mut q = world.query_filtered::<Entity, (With<NeedsFragile>, Without<Fragile>)>();
    q.iter(world).collect()
}

/// The documented policy for lifecycle panics (`mosaic::observer` docs,
/// "Panics: the policy"): required components are made before the world
/// changes, so a spawn whose required component's `Default` panics changes
/// nothing: no entity, the bundle dropped once, no requiring component
/// without its requirement.
#[test]
fn required_component_default_panics_on_spawn() {
    let t = Tracker::new();
    let mut world = World::new();
    world.register_required::<NeedsFragile, Fragile>().unwrap();
    let msg = expect_panic(|| world.spawn((NeedsFragile(Token::new(&t)), plain(&t, 1))));
    assert_eq!(msg, "intentional panic in Default");
    check(&world, &t);
    assert!(unmet_requirements(&mut world).is_empty());
    assert_eq!(world.len(), 0, "nothing spawned");
    still_works(&mut world, &t);
    finish(world, &t);
}

/// As above, for an insert: the entity keeps exactly what it had; the
/// inserted bundle is dropped once.
#[test]
fn required_component_default_panics_on_insert() {
    let t = Tracker::new();
    let mut world = World::new();
    world.register_required::<NeedsFragile, Fragile>().unwrap();
    let e = world.spawn(plain(&t, 1));
    let msg = expect_panic(|| world.insert(e, NeedsFragile(Token::new(&t))));
    assert_eq!(msg, "intentional panic in Default");
    check(&world, &t);
    assert!(world.contains(e));
    assert_eq!(world.get::<Plain>(e).unwrap().0, 1);
    assert!(!world.has::<NeedsFragile>(e));
    assert!(unmet_requirements(&mut world).is_empty());
    still_works(&mut world, &t);
    finish(world, &t);
}

// ----- every panic point, with requirements, hooks and observers present -----------------

thread_local! {
    /// Where the lifecycle matrix injects its panic.
    static PANIC_AT: std::cell::Cell<Point> = const { std::cell::Cell::new(Point::Nowhere) };
    /// `Needed` values made and dropped on this thread.
    static NEEDED: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    Nowhere,
    Default,
    OnAdd,
    OnInsert,
    OnRemove,
    Observer,
    NeededDrop,
}

fn maybe_panic(here: Point) {
    if PANIC_AT.get() == here {
        panic!("intentional panic at {here:?}");
    }
}

/// Required by [`Needer`]; counts its makes and drops, and panics where
/// told.
#[derive(Component)]
#[component(storage = "sparse")]
struct Needed;

impl Default for Needed {
    fn default() -> Self {
        maybe_panic(Point::Default);
        let (made, dropped) = NEEDED.get();
        NEEDED.set((made + 1, dropped));
        Needed
    }
}

impl Drop for Needed {
    fn drop(&mut self) {
        let (made, dropped) = NEEDED.get();
        NEEDED.set((made, dropped + 1));
        maybe_panic(Point::NeededDrop);
    }
}

/// Requires [`Needed`] (and, through it, nothing else); its hooks panic
/// where told.
#[derive(Component)]
#[component(on_add = needer_add, on_insert = needer_insert, on_remove = needer_remove)]
#[require(Needed, Marker)]
struct Needer(#[allow(dead_code)] Token);

fn needer_add(w: DeferredWorld, e: Entity) {
    assert!(
        w.get::<Needed>(e).is_ok(),
        "requirements arrive with the requirer"
    );
    maybe_panic(Point::OnAdd);
}
fn needer_insert(_: DeferredWorld, _: Entity) {
    maybe_panic(Point::OnInsert);
}
fn needer_remove(_: DeferredWorld, _: Entity) {
    maybe_panic(Point::OnRemove);
}

impl Default for Marker {
    fn default() -> Self {
        Marker
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Spawn,
    Insert,
    Remove,
    Despawn,
    Clear,
    Commands,
}

/// Runs `op` with a panic injected at `point`, in a world where `Needer`
/// requires `Needed`, has hooks, and an observer of `OnAdd<Needed>` queues
/// a command (which must be dropped if the operation fails).
fn lifecycle_case(op: Op, point: Point) -> bool {
    let t = Tracker::new();
    let mut world = World::new();
    NEEDED.set((0, 0));
    PANIC_AT.set(Point::Nowhere);
    world.observe(|t: Trigger<OnAdd<Needed>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        w.commands().run(move |world| {
            // A follow-up command: applies only after a successful operation.
            if let Some(loc) = world.get::<Plain>(e).ok().map(|p| p.0) {
                assert!(loc < 1000);
            }
        });
        maybe_panic(Point::Observer);
    });
    let existing = world.spawn((Needer(Token::new(&t)), plain(&t, 1)));
    let bare = world.spawn(plain(&t, 2));
    PANIC_AT.set(point);
    let result = catch_unwind(AssertUnwindSafe(|| match op {
        Op::Spawn => drop(world.spawn((Needer(Token::new(&t)), plain(&t, 3)))),
        Op::Insert => world.insert(bare, Needer(Token::new(&t))).unwrap(),
        Op::Remove => drop(world.remove::<(Needer, Needed)>(existing).unwrap()),
        Op::Despawn => world.despawn(existing).unwrap(),
        Op::Clear => world.clear(),
        Op::Commands => {
            let mut commands = CommandBuffer::new(&world);
            commands.spawn((Needer(Token::new(&t)), plain(&t, 4)));
            commands.insert(bare, Needer(Token::new(&t)));
            commands.despawn(existing);
            drop(commands.apply(&mut world));
        }
    }));
    PANIC_AT.set(Point::Nowhere);
    let case = format!("{op:?} with a panic at {point:?}");
    let panicked = result.is_err();
    if let Err(payload) = result {
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(text.starts_with("intentional panic"), "{case}: {text}");
    }
    check(&world, &t);
    // No requiring component without its requirements.
    let mut unmet = world.query_filtered::<Entity, (With<Needer>, Without<Needed>)>();
    assert_eq!(unmet.iter(&world).count(), 0, "{case}");
    // Every `Needed` made is in the world or was dropped once.
    let mut alive = world.query::<&Needed>();
    let alive = alive.iter(&world).count();
    let (made, dropped) = NEEDED.get();
    assert_eq!(made, alive + dropped, "{case}");
    // The next operation starts clean and works.
    world.trigger(0u8);
    still_works(&mut world, &t);
    finish(world, &t);
    let (made, dropped) = NEEDED.get();
    assert_eq!(made, dropped, "{case}: every Needed dropped once");
    panicked
}

#[test]
fn every_panic_point_with_requirements_hooks_and_observers() {
    let ops = [
        Op::Spawn,
        Op::Insert,
        Op::Remove,
        Op::Despawn,
        Op::Clear,
        Op::Commands,
    ];
    let points = [
        Point::Nowhere,
        Point::Default,
        Point::OnAdd,
        Point::OnInsert,
        Point::OnRemove,
        Point::Observer,
        Point::NeededDrop,
    ];
    let mut panicked = Vec::new();
    for op in ops {
        for point in points {
            if lifecycle_case(op, point) {
                panicked.push(format!("{op:?}/{point:?}"));
            }
        }
    }
    // The injected panics do strike (a sample of the expected ones).
    for expected in [
        "Spawn/Default",
        "Insert/OnAdd",
        "Remove/OnRemove",
        "Despawn/NeededDrop",
        "Clear/OnRemove",
        "Commands/Observer",
    ] {
        assert!(
            panicked.iter().any(|p| p == expected),
            "{expected} in {panicked:?}"
        );
    }
    assert!(!panicked.iter().any(|p| p.ends_with("/Nowhere")));
}

// ----- hooks --------------------------------------------------------------------------

/// Which hooks of [`Hooked`] panic, and what the non-panicking ones counted.
#[derive(Default)]
struct HookState {
    panic_add: bool,
    panic_insert: bool,
    panic_remove: bool,
    /// Entities whose `on_add` ran and whose `on_remove` has not (an "index"
    /// a hook would maintain).
    index: BTreeSet<Entity>,
}

#[derive(Component)]
#[component(on_add = hooked_add, on_insert = hooked_insert, on_remove = hooked_remove)]
struct Hooked(u32);

fn hooked_add(mut w: DeferredWorld, e: Entity) {
    let s = w.resource_mut::<HookState>();
    assert!(!s.panic_add, "intentional panic in on_add");
    s.index.insert(e);
}

fn hooked_insert(w: DeferredWorld, _e: Entity) {
    assert!(
        !w.resource::<HookState>().panic_insert,
        "intentional panic in on_insert"
    );
}

fn hooked_remove(mut w: DeferredWorld, e: Entity) {
    // The value is still readable while the hook runs.
    assert!(w.get::<Hooked>(e).is_ok());
    let s = w.resource_mut::<HookState>();
    assert!(!s.panic_remove, "intentional panic in on_remove");
    s.index.remove(&e);
}

fn hooks(world: &mut World) -> &mut HookState {
    world.resource_mut::<HookState>()
}

fn hooked_world() -> World {
    let mut world = World::new();
    world.insert_resource(HookState::default());
    world
}

#[test]
fn on_add_hook_panics_during_spawn() {
    let t = Tracker::new();
    let mut world = hooked_world();
    hooks(&mut world).panic_add = true;
    let msg = expect_panic(|| world.spawn((Hooked(1), plain(&t, 1))));
    assert_eq!(msg, "intentional panic in on_add");
    check(&world, &t);
    // The hook runs after the structural change: the entity is complete.
    let mut q = world.query::<(&Hooked, &Plain)>();
    assert_eq!(
        q.iter(&world).map(|(h, p)| (h.0, p.0)).collect::<Vec<_>>(),
        [(1, 1)]
    );
    hooks(&mut world).panic_add = false;
    let e = world.spawn(Hooked(2));
    assert!(hooks(&mut world).index.contains(&e));
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn on_insert_hook_panics_during_replace() {
    let t = Tracker::new();
    let mut world = hooked_world();
    let e = world.spawn((Hooked(1), boom(&t, false)));
    hooks(&mut world).panic_insert = true;
    let msg = expect_panic(|| world.insert(e, (Hooked(2), boom(&t, false))));
    assert_eq!(msg, "intentional panic in on_insert");
    check(&world, &t);
    assert_eq!(world.get::<Hooked>(e).unwrap().0, 2, "the replace finished");
    assert_eq!(t.alive(), 1, "the replaced Boom was dropped");
    hooks(&mut world).panic_insert = false;
    world.insert(e, Hooked(3)).unwrap();
    assert_eq!(world.get::<Hooked>(e).unwrap().0, 3);
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn on_remove_hook_panics_during_remove_despawn_and_clear() {
    let t = Tracker::new();
    let mut world = hooked_world();
    let a = world.spawn((Hooked(1), plain(&t, 1)));
    let b = world.spawn((Hooked(2), sparse_plain(&t, 2)));
    hooks(&mut world).panic_remove = true;

    // The hook runs before the removal: a panic leaves the entity whole.
    let msg = expect_panic(|| world.remove::<Hooked>(a));
    assert_eq!(msg, "intentional panic in on_remove");
    check(&world, &t);
    assert_eq!(world.get::<Hooked>(a).unwrap().0, 1);
    assert_eq!(world.get::<Plain>(a).unwrap().0, 1);

    let msg = expect_panic(|| world.despawn(b));
    assert_eq!(msg, "intentional panic in on_remove");
    check(&world, &t);
    assert!(world.contains(b));
    assert_eq!(world.get::<SparsePlain>(b).unwrap().0, 2);

    let msg = expect_panic(|| world.clear());
    assert_eq!(msg, "intentional panic in on_remove");
    check(&world, &t);
    assert_eq!(world.len(), 2);

    hooks(&mut world).panic_remove = false;
    assert_eq!(world.remove::<Hooked>(a).unwrap().0, 1);
    world.despawn(b).unwrap();
    assert!(hooks(&mut world).index.is_empty());
    still_works(&mut world, &t);
    finish(world, &t);
}

/// Components whose on_add hook maintains an index, with a requirement.
#[derive(Component, Default)]
struct Required;

fn hooks_index_matches(world: &mut World) -> (BTreeSet<Entity>, BTreeSet<Entity>) {
    let mut with_hooked = world.query_filtered::<Entity, With<Hooked>>();
    let live: BTreeSet<Entity> = with_hooked.iter(world).collect();
    (hooks(world).index.clone(), live)
}

/// A batch interrupted by its iterator keeps the entities already spawned
/// (see `spawn_batch_iterator_panics_midway`); those must have had their
/// lifecycle run like any other spawn: hooks (which keep indexes) and
/// required components. Otherwise the world holds entities that break the
/// contracts their components declare.
#[test]
fn lifecycle_runs_for_entities_a_panicking_batch_kept() {
    let t = Tracker::new();
    let mut world = hooked_world();
    world.register_required::<Hooked, Required>().unwrap();
    let tt = Arc::clone(&t);
    let _ = expect_panic(|| {
        world.spawn_batch((0..5u32).map(move |i| {
            assert!(i != 3, "intentional panic in the iterator");
            (Hooked(i), plain(&tt, i))
        }))
    });
    check(&world, &t);
    assert_eq!(
        world.len(),
        3,
        "three entities were spawned before the panic"
    );
    let mut missing = world.query_filtered::<Entity, (With<Hooked>, Without<Required>)>();
    let missing: Vec<Entity> = missing.iter(&world).collect();
    let (index, live) = hooks_index_matches(&mut world);
    assert!(
        index == live && missing.is_empty(),
        "spawn_batch interrupted by its iterator: entities spawned before the \
         panic have `Hooked`, but on_add ran for {index:?} (expected {live:?}) \
         and {missing:?} lack the `Required` component `Hooked` requires"
    );
    finish(world, &t);
}

/// The same through `World::extend`, which returns no handles: the rows it
/// kept get their lifecycle all the same.
#[test]
fn lifecycle_runs_for_entities_a_panicking_extend_kept() {
    let t = Tracker::new();
    let mut world = hooked_world();
    world.register_required::<Hooked, Required>().unwrap();
    world.spawn((Hooked(100), plain(&t, 100)));
    let tt = Arc::clone(&t);
    let msg = expect_panic(|| {
        world.extend((0..5u32).map(move |i| {
            assert!(i != 3, "intentional panic in the iterator");
            (Hooked(i), plain(&tt, i))
        }))
    });
    assert!(msg.contains("intentional panic"), "{msg}");
    check(&world, &t);
    assert_eq!(world.len(), 4, "one before, three spawned before the panic");
    let mut missing = world.query_filtered::<Entity, (With<Hooked>, Without<Required>)>();
    assert_eq!(missing.iter(&world).count(), 0, "required components added");
    let (index, live) = hooks_index_matches(&mut world);
    assert_eq!(index, live, "on_add ran for every kept entity");
    finish(world, &t);
}

/// An insert whose replaced value panics on drop finishes the structural
/// change (see `insert_moving_archetype_while_a_replaced_value_panics`);
/// the components it added must get their hooks run too.
#[test]
fn hooks_run_when_a_replaced_value_panics_on_drop() {
    let t = Tracker::new();
    let mut world = hooked_world();
    let e = world.spawn((boom(&t, true), plain(&t, 9)));
    let msg = expect_panic(|| world.insert(e, (boom(&t, false), Hooked(9))));
    assert_eq!(msg, BOOM);
    check(&world, &t);
    assert!(world.has::<Hooked>(e), "the insert finished");
    let (index, live) = hooks_index_matches(&mut world);
    assert_eq!(
        index, live,
        "insert whose replaced value panicked on drop: `Hooked` was added but \
         its on_add hook never ran"
    );
    finish(world, &t);
}

// ----- observers -------------------------------------------------------------------------

/// Spawning one makes an observer queue a command.
#[derive(Component)]
struct Spark;

#[derive(Default)]
struct ObserverSwitch {
    panic: bool,
    runs: u32,
}

#[test]
fn observer_panics_during_spawn_and_despawn() {
    let t = Tracker::new();
    let mut world = World::new();
    world.insert_resource(ObserverSwitch::default());
    world.observe(|_: Trigger<OnAdd<Plain>>, mut w: DeferredWorld| {
        let s = w.resource_mut::<ObserverSwitch>();
        s.runs += 1;
        assert!(!s.panic, "intentional panic in an OnAdd observer");
    });
    world.observe(|_: Trigger<OnDespawn>, mut w: DeferredWorld| {
        let s = w.resource_mut::<ObserverSwitch>();
        assert!(!s.panic, "intentional panic in an OnDespawn observer");
    });
    world.resource_mut::<ObserverSwitch>().panic = true;

    let msg = expect_panic(|| world.spawn((plain(&t, 1), sparse_plain(&t, 1))));
    assert_eq!(msg, "intentional panic in an OnAdd observer");
    check(&world, &t);
    let mut q = world.query::<(Entity, &Plain, &SparsePlain)>();
    let spawned: Vec<Entity> = q.iter(&world).map(|(e, _, _)| e).collect();
    assert_eq!(spawned.len(), 1, "the spawn finished before observers ran");
    let e = spawned[0];

    let msg = expect_panic(|| world.despawn(e));
    assert_eq!(msg, "intentional panic in an OnDespawn observer");
    check(&world, &t);
    assert!(world.contains(e), "observers run before the despawn");
    assert_eq!(world.get::<SparsePlain>(e).unwrap().0, 1);

    // The observers are still registered and run normally.
    world.resource_mut::<ObserverSwitch>().panic = false;
    let runs = world.resource::<ObserverSwitch>().runs;
    world.spawn(plain(&t, 2));
    assert_eq!(world.resource::<ObserverSwitch>().runs, runs + 1);
    world.despawn(e).unwrap();
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn observer_commands_still_apply_after_a_panicking_round() {
    let t = Tracker::new();
    let mut world = World::new();
    world.insert_resource(ObserverSwitch::default());
    // OnAdd<Spark> queues a command that inserts a `Plain`; OnAdd<Plain>
    // panics when switched on: the panic happens inside the flush of
    // observer commands.
    let tt = Arc::clone(&t);
    world.observe(
        move |trigger: Trigger<OnAdd<Spark>>, mut w: DeferredWorld| {
            let e = trigger.entity().unwrap();
            let token = Token::new(&tt);
            w.commands().insert(e, Plain(5, token));
        },
    );
    world.observe(|_: Trigger<OnAdd<Plain>>, mut w: DeferredWorld| {
        let s = w.resource_mut::<ObserverSwitch>();
        s.runs += 1;
        assert!(!s.panic, "intentional panic in a nested observer");
    });
    world.resource_mut::<ObserverSwitch>().panic = true;
    let msg = expect_panic(|| world.spawn(Spark));
    assert_eq!(msg, "intentional panic in a nested observer");
    check(&world, &t);
    let mut q = world.query::<(&Spark, &Plain)>();
    assert_eq!(q.iter(&world).count(), 1, "the queued insert applied");

    // The flush is not stuck: observer commands keep applying.
    world.resource_mut::<ObserverSwitch>().panic = false;
    let e = world.spawn(Spark);
    assert_eq!(world.get::<Plain>(e).unwrap().0, 5);
    still_works(&mut world, &t);
    finish(world, &t);
}

// ----- commands ---------------------------------------------------------------------------

#[test]
fn command_buffer_apply_with_a_panicking_command() {
    let t = Tracker::new();
    let mut world = World::new();
    let doomed = world.spawn(plain(&t, 1));
    let target = world.spawn(plain(&t, 2));
    let mut buffer = CommandBuffer::new(&world);
    let a = buffer.spawn(plain(&t, 10));
    buffer.run(|_| panic!("intentional panic in a command"));
    buffer.despawn(doomed);
    buffer.insert(target, sparse_plain(&t, 20));
    buffer.run(|_| panic!("second intentional panic in a command"));
    let b = buffer.spawn(sparse_plain(&t, 30));

    let msg = expect_panic(|| buffer.apply(&mut world));
    assert_eq!(
        msg, "intentional panic in a command",
        "the first panic wins"
    );
    check(&world, &t);
    assert!(buffer.is_empty(), "apply drained the buffer");
    // Every other command applied, in order.
    assert_eq!(world.get::<Plain>(a).unwrap().0, 10);
    assert!(!world.contains(doomed));
    assert_eq!(world.get::<SparsePlain>(target).unwrap().0, 20);
    assert_eq!(world.get::<SparsePlain>(b).unwrap().0, 30);

    // The buffer is reusable.
    let c = buffer.spawn((plain(&t, 40), Marker));
    buffer.despawn(a);
    buffer.apply(&mut world).unwrap();
    assert_eq!(world.get::<Plain>(c).unwrap().0, 40);
    assert!(!world.contains(a));
    still_works(&mut world, &t);
    drop(buffer);
    finish(world, &t);
}

#[test]
fn command_buffer_apply_with_panicking_drops() {
    let t = Tracker::new();
    let mut world = World::new();
    let e = world.spawn((boom(&t, true), plain(&t, 1)));
    let gone = world.spawn(());
    world.despawn(gone).unwrap();
    let mut buffer = CommandBuffer::new(&world);
    // Replaces a value whose drop panics.
    buffer.insert(e, boom(&t, false));
    // Removes (and drops) a value whose drop panics.
    buffer.insert(e, sparse_boom(&t, true));
    buffer.remove::<SparseBoom>(e);
    // Inserts into a dead entity: the bundle is dropped, and its drop panics.
    buffer.insert(gone, boom(&t, true));
    let kept = buffer.spawn(plain(&t, 2));

    let msg = expect_panic(|| buffer.apply(&mut world));
    assert_eq!(msg, BOOM);
    check(&world, &t);
    assert!(buffer.is_empty());
    assert!(!world.get::<Boom>(e).unwrap().panics);
    assert!(!world.has::<SparseBoom>(e));
    assert_eq!(world.get::<Plain>(kept).unwrap().0, 2);
    assert!(!world.contains(gone));
    assert_eq!(t.alive(), 3, "Boom, Plain(1), Plain(2)");

    buffer.insert(kept, Marker);
    buffer.apply(&mut world).unwrap();
    assert!(world.has::<Marker>(kept));
    still_works(&mut world, &t);
    finish(world, &t);
}

#[test]
fn dropping_a_buffer_holding_a_panicking_value() {
    let t = Tracker::new();
    let mut world = World::new();
    let e = world.spawn(plain(&t, 1));
    let mut buffer = CommandBuffer::new(&world);
    buffer.insert(e, boom(&t, true));
    buffer.insert(e, sparse_plain(&t, 2));
    let msg = expect_panic(move || drop(buffer));
    assert_eq!(msg, BOOM);
    check(&world, &t);
    assert_eq!(t.alive(), 1, "every recorded value was dropped");
    assert!(!world.has::<SparsePlain>(e));
    still_works(&mut world, &t);
    finish(world, &t);
}

// ----- user code panicking mid-iteration ---------------------------------------------------

#[test]
fn panic_inside_a_mutable_query_loop() {
    let t = Tracker::new();
    let mut world = World::new();
    for i in 0..8u32 {
        world.spawn((plain(&t, i), sparse_plain(&t, i)));
    }
    let mut q = world.query::<(&mut Plain, &mut SparsePlain)>();
    let msg = expect_panic(|| {
        q.iter_mut(&mut world).for_each(|(p, s)| {
            assert!(p.0 != 5, "intentional panic in a query loop");
            p.0 += 100;
            s.0 += 100;
        })
    });
    assert_eq!(msg, "intentional panic in a query loop");
    check(&world, &t);
    let mut values: Vec<u32> = q.iter_mut(&mut world).map(|(p, _)| p.0).collect();
    values.sort_unstable();
    assert_eq!(values.len(), 8);
    assert_eq!(values.iter().filter(|&&v| v >= 100).count(), 5);
    still_works(&mut world, &t);
    finish(world, &t);
}

// ----- Drop panics and the commands observers queued -------------------------------

#[derive(Component)]
struct Queued;

/// Issue #17, item 2: a despawn or clear whose `Drop` panics still
/// finishes; the commands its observers queued must not wait for some
/// later, unrelated operation (they run with the despawn, as with an
/// insert whose replaced value panics, before the panic goes on).
#[test]
fn despawn_with_a_panicking_drop_leaves_no_observer_commands_for_later() {
    for clear in [false, true] {
        let t = Tracker::new();
        let mut world = World::new();
        world.observe(|_: Trigger<OnRemove<Boom>>, mut w: DeferredWorld| {
            w.commands().spawn(Queued);
        });
        let e = world.spawn(boom(&t, true));
        let msg = expect_panic(|| {
            if clear {
                world.clear();
            } else {
                world.despawn(e).unwrap();
            }
        });
        assert_eq!(msg, BOOM);
        check(&world, &t);
        let mut q = world.query::<&Queued>();
        let after_panic = q.iter(&world).count();
        assert_eq!(
            after_panic, 1,
            "clear: {clear}: the despawn's commands ran with it"
        );
        // An unrelated operation runs nothing left over.
        world.spawn(());
        assert_eq!(q.iter(&world).count(), after_panic, "clear: {clear}");
        finish(world, &t);
    }
}

// ----- spawn commands that never happen leave no entity ------------------------------

/// Counts lifecycle announcements, to check a failed spawn command's entity
/// is seen to come and go in pairs.
#[derive(Default)]
struct Lifecycle {
    spawned: Vec<Entity>,
    despawned: Vec<Entity>,
}

fn count_lifecycle(world: &mut World) {
    world.insert_resource(Lifecycle::default());
    world.observe(|t: Trigger<mosaic::OnSpawn>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        w.resource_mut::<Lifecycle>().spawned.push(e);
    });
    world.observe(|t: Trigger<mosaic::OnDespawn>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        w.resource_mut::<Lifecycle>().despawned.push(e);
    });
}

/// A spawn *command* whose required component's `Default` panics leaves no
/// entity, as `World::spawn` leaves none: its id (reserved when the command
/// was recorded, held, not live, until the command applies) is given up,
/// so the handle is stale and the slot comes back under a newer
/// generation; nothing saw it come to life or go; the bundle is dropped
/// once; the buffer stays usable.
#[test]
fn a_spawn_command_whose_requirement_panics_leaves_no_entity() {
    for announced in [false, true] {
        let t = Tracker::new();
        let mut world = World::new();
        if announced {
            count_lifecycle(&mut world);
        }
        world.register_required::<NeedsFragile, Fragile>().unwrap();
        let mut commands = CommandBuffer::new(&world);
        let before = commands.spawn(plain(&t, 1));
        let e = commands.spawn(NeedsFragile(Token::new(&t)));
        let after = commands.spawn(plain(&t, 2));
        let msg = expect_panic(|| commands.apply(&mut world));
        assert_eq!(msg, "intentional panic in Default");
        check(&world, &t);
        assert!(!world.contains(e), "as with World::spawn, nothing spawned");
        assert_eq!(world.len(), 2, "only the spawns that worked");
        assert_eq!(world.get::<Plain>(before).unwrap().0, 1);
        assert_eq!(world.get::<Plain>(after).unwrap().0, 2);
        assert!(unmet_requirements(&mut world).is_empty());
        assert_eq!(t.alive(), 2, "the failed bundle was dropped");
        if announced {
            let log = world.resource::<Lifecycle>();
            // Issue 39: spawn commands place their entities whole, so the
            // failed one was never announced (it used to come to life,
            // empty, at the flush, then go again).
            assert_eq!(log.spawned, [before, after], "only the whole spawns");
            assert!(log.despawned.is_empty(), "nothing seen to go");
        }
        // The slot is reused, never under the stale handle.
        let again = world.spawn(());
        assert_eq!(again.index(), e.index());
        assert_ne!(again, e);
        assert!(!world.contains(e));
        // The buffer is reusable.
        let next = commands.spawn(plain(&t, 3));
        commands.apply(&mut world).unwrap();
        assert_eq!(world.get::<Plain>(next).unwrap().0, 3);
        still_works(&mut world, &t);
        finish(world, &t);
    }
}

/// The same through a system's `Commands`, whose ids reuse freed indices.
#[test]
fn a_commands_spawn_whose_requirement_panics_leaves_no_entity() {
    let t = Tracker::new();
    let mut world = World::new();
    world.register_required::<NeedsFragile, Fragile>().unwrap();
    let gone = world.spawn(());
    world.despawn(gone).unwrap();
    let tt = Arc::clone(&t);
    let spawned = Arc::new(Mutex::new(None));
    let sink = Arc::clone(&spawned);
    expect_panic(|| {
        world.run_system_once(move |mut commands: Commands| {
            let e = commands.spawn(NeedsFragile(Token::new(&tt)));
            *sink.lock().unwrap() = Some(e);
        })
    });
    check(&world, &t);
    let e = spawned.lock().unwrap().expect("the system ran");
    assert_eq!(e.index(), gone.index(), "a freed index, reused");
    assert!(!world.contains(e) && !world.contains(gone));
    assert_eq!(world.len(), 0);
    let again = world.spawn(());
    assert_eq!(again.index(), e.index());
    assert!(
        again.generation() > e.generation(),
        "never the stale handle"
    );
    still_works(&mut world, &t);
    finish(world, &t);
}

/// An `OnSpawn` observer that panics when a spawn command's entity comes to
/// life: it comes to life whole (issue 39), so, as with `World::spawn`, the
/// panic leaves the entity whole and goes on. (It used to come to life
/// empty at the flush, and was despawned for it.)
#[test]
fn a_spawn_command_whose_on_spawn_observer_panics_leaves_the_entity_whole() {
    let t = Tracker::new();
    let mut world = World::new();
    let kept = world.spawn(plain(&t, 0));
    world.observe(|_: Trigger<mosaic::OnSpawn>, _: DeferredWorld| panic!("OnSpawn failed"));
    let mut commands = CommandBuffer::new(&world);
    let e = commands.spawn(plain(&t, 1));
    assert_eq!(
        expect_panic(|| commands.apply(&mut world)),
        "OnSpawn failed"
    );
    check(&world, &t);
    assert_eq!(world.get::<Plain>(e).unwrap().0, 1, "whole");
    assert_eq!(world.len(), 2);
    assert!(world.contains(kept));
    assert_eq!(t.alive(), 2, "the command's bundle is in the world");
    finish(world, &t);
}

/// The spawn commands an observer queued before it panicked are dropped,
/// as documented (`mosaic::observer`, "Panics: the policy"), and their
/// reserved ids never come to life: no empty entity at the next structural
/// change, the handle stays stale, the bundle is dropped once.
#[test]
fn dropped_observer_spawn_commands_leave_no_empty_entities() {
    let t = Tracker::new();
    let mut world = World::new();
    let queued = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&queued);
    let tt = Arc::clone(&t);
    world.observe(move |_: Trigger<OnAdd<Marker>>, mut w: DeferredWorld| {
        let a = w.commands().spawn(());
        let b = w.commands().spawn(plain(&tt, 9));
        sink.lock().unwrap().extend([a, b]);
        panic!("observer failed");
    });
    let m = expect_panic(|| world.spawn(Marker));
    assert_eq!(m, "observer failed");
    check(&world, &t);
    let queued = queued.lock().unwrap().clone();
    assert_eq!(queued.len(), 2);
    assert_eq!(t.alive(), 0, "the dropped command's bundle was dropped");
    let len = world.len();
    assert_eq!(len, 1, "the Marker entity: its spawn was complete");
    let fresh = world.spawn(());
    assert_eq!(world.len(), len + 1, "only the new entity");
    for &e in &queued {
        assert!(!world.contains(e), "{e:?} never came to life");
        assert_ne!(fresh, e);
    }
    check(&world, &t);
    // Their slots come back under newer generations, never as the old ids.
    let more: Vec<Entity> = (0..4).map(|_| world.spawn(())).collect();
    for &e in &queued {
        assert!(!more.contains(&e) && !world.contains(e));
        let reused = more.iter().chain([&fresh]).find(|m| m.index() == e.index());
        if let Some(r) = reused {
            assert!(r.generation() > e.generation());
        }
    }
    assert_eq!(world.len(), len + 5);
    finish(world, &t);
}

/// A dropped observer spawn command, with structural changes between its
/// recording and the panic: its id is held, never live (issue 39; it used
/// to come to life empty at the flush, and the discard despawned it), so
/// nothing is left behind and nothing saw it come or go.
#[test]
fn dropped_observer_spawn_never_comes_to_life_across_a_flush() {
    #[derive(Component)]
    struct Go;
    #[derive(Component)]
    struct Spawns;
    let t = Tracker::new();
    let mut world = World::new();
    count_lifecycle(&mut world);
    let queued = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&queued);
    let tt = Arc::clone(&t);
    // Round 1 (queued by Go's observer): an insert whose observer queues a
    // spawn for round 2, a structural change (the flush used to make that
    // id live, empty), then a panicking command.
    world.observe(move |t: Trigger<OnAdd<Go>>, mut w: DeferredWorld| {
        let target = t.entity().unwrap();
        w.commands().insert(target, Spawns);
        w.commands().spawn(());
        w.commands().run(|_| panic!("round 1 failed"));
    });
    world.observe(move |_: Trigger<OnAdd<Spawns>>, mut w: DeferredWorld| {
        let e = w.commands().spawn(plain(&tt, 5));
        sink.lock().unwrap().push(e);
    });
    let x = world.spawn(());
    assert_eq!(expect_panic(|| world.insert(x, Go)), "round 1 failed");
    check(&world, &t);
    let queued = queued.lock().unwrap().clone();
    assert_eq!(queued.len(), 1);
    let e = queued[0];
    assert!(!world.contains(e), "given up when its command was dropped");
    assert_eq!(t.alive(), 0);
    let log = world.resource::<Lifecycle>();
    assert!(!log.spawned.contains(&e), "it never came to life");
    assert!(log.despawned.is_empty());
    // x and round 1's spawn.
    assert_eq!(world.len(), 2);
    world.spawn(());
    assert_eq!(world.len(), 3);
    finish(world, &t);
}

// ----- panics inside a recursive despawn -------------------------------------------

/// A tree `root -> (a -> (a1, a2), b)` of `Plain`s, with `boom_at` holding
/// a `Boom` whose drop panics.
fn boom_tree(world: &mut World, t: &Arc<Tracker>, boom_at: &str) -> BTreeMap<&'static str, Entity> {
    let mut at = BTreeMap::new();
    for (name, parent) in [
        ("root", None),
        ("a", Some("root")),
        ("a1", Some("a")),
        ("a2", Some("a")),
        ("b", Some("root")),
    ] {
        let e = world.spawn(plain(t, 0));
        if name == boom_at {
            world.insert_one(e, boom(t, true)).unwrap();
        }
        if let Some(p) = parent {
            world.add_child(at[p], e).unwrap();
        }
        at.insert(name, e);
    }
    at
}

#[test]
fn despawn_recursive_finishes_when_a_drop_panics() {
    for boom_at in ["a1", "a", "b", "root"] {
        let t = Tracker::new();
        let mut world = World::new();
        let keep = world.spawn(plain(&t, 9));
        let at = boom_tree(&mut world, &t, boom_at);
        world.add_child(keep, at["root"]).unwrap();
        let msg = expect_panic(|| world.despawn_recursive(at["root"]));
        assert_eq!(msg, BOOM, "{boom_at}");
        // The whole subtree went, as a drop's panic never stops a despawn;
        // no edge names a dead entity (check_invariants looks).
        check(&world, &t);
        for (name, &e) in &at {
            assert!(!world.contains(e), "{name} despawned ({boom_at} panicked)");
        }
        assert!(world.children(keep).is_empty(), "{boom_at}");
        assert_eq!(world.len(), 1);
        still_works(&mut world, &t);
        finish(world, &t);
    }
}

/// With no hook or observer, a recursive despawn sweeps each sparse set
/// once (the subtree a large share of it) or looks each entity up (a small
/// share): a sparse value's panicking drop stops neither. Every value of
/// the subtree is dropped once, the survivors keep theirs, and the panic
/// goes on at the end.
#[test]
fn despawn_recursive_sweeps_past_a_sparse_drop_that_panics() {
    // 0 outsiders: both sparse sets are swept; 20: `SparseBoom`'s set is
    // mostly theirs, and the subtree's values are looked up.
    for outsiders in [0u32, 20] {
        for boom_at in ["a1", "a", "root"] {
            let t = Tracker::new();
            let mut world = World::new();
            let keep = world.spawn(sparse_plain(&t, 1000));
            let others: Vec<Entity> = (0..outsiders)
                .map(|i| world.spawn((sparse_boom(&t, false), sparse_plain(&t, 2000 + i))))
                .collect();
            let mut at = BTreeMap::new();
            for (i, (name, parent)) in [
                ("root", None),
                ("a", Some("root")),
                ("a1", Some("a")),
                ("a2", Some("a")),
                ("b", Some("root")),
            ]
            .into_iter()
            .enumerate()
            {
                let e = world.spawn(sparse_plain(&t, i as u32));
                if name == boom_at {
                    world.insert_one(e, sparse_boom(&t, true)).unwrap();
                }
                if let Some(p) = parent {
                    world.add_child(at[p], e).unwrap();
                }
                at.insert(name, e);
            }
            world.add_child(keep, at["root"]).unwrap();
            let msg = expect_panic(|| world.despawn_recursive(at["root"]));
            assert_eq!(msg, BOOM, "{boom_at}, {outsiders} outsiders");
            check(&world, &t);
            assert!(at.values().all(|&e| !world.contains(e)), "{boom_at}");
            assert!(world.children(keep).is_empty());
            assert_eq!(world.get::<SparsePlain>(keep).unwrap().0, 1000);
            for (i, &o) in others.iter().enumerate() {
                assert_eq!(world.get::<SparsePlain>(o).unwrap().0, 2000 + i as u32);
                assert!(world.get::<SparseBoom>(o).is_ok());
            }
            assert_eq!(world.len(), 1 + outsiders as usize);
            still_works(&mut world, &t);
            finish(world, &t);
        }
    }
}

#[test]
fn despawn_recursive_keeps_an_entity_whose_remove_hook_panics_as_a_root() {
    #[derive(Component)]
    #[component(on_remove = refuse_removal)]
    struct Stubborn;
    fn refuse_removal(_: DeferredWorld, _: Entity) {
        panic!("on_remove refused");
    }
    let t = Tracker::new();
    let mut world = World::new();
    let at = boom_tree(&mut world, &t, "none");
    world.insert_one(at["a"], Stubborn).unwrap();
    let msg = expect_panic(|| world.despawn_recursive(at["root"]));
    assert_eq!(msg, "on_remove refused");
    check(&world, &t);
    // The hook's panic stopped `a`'s own despawn before it changed
    // anything, as it does for `World::despawn`; the rest went, and `a`,
    // whose parent and children are gone, is left a root with no children.
    assert!(world.contains(at["a"]));
    assert_eq!(world.parent(at["a"]), None);
    assert!(world.children(at["a"]).is_empty());
    for name in ["root", "a1", "a2", "b"] {
        assert!(!world.contains(at[name]), "{name} despawned");
    }
    assert_eq!(world.len(), 1);
}

/// Each rider despawns with the horse it rides.
#[derive(Relation)]
#[relation(one, on_target_despawn = "despawn")]
struct Rides;

#[test]
fn sources_a_despawn_dooms_all_go_when_one_of_their_drops_panics() {
    // 0..3: a rider's value panics; 3: the horse's own.
    for boom_at in 0..4 {
        let t = Tracker::new();
        let mut world = World::new();
        let horse = world.spawn(plain(&t, 0));
        if boom_at == 3 {
            world.insert_one(horse, boom(&t, true)).unwrap();
        }
        let riders: Vec<Entity> = (0..3)
            .map(|i| {
                let rider = world.spawn(plain(&t, i));
                if i == boom_at {
                    world.insert_one(rider, boom(&t, true)).unwrap();
                }
                world.relate(rider, horse, Rides).unwrap();
                rider
            })
            .collect();
        assert_eq!(expect_panic(|| world.despawn(horse)), BOOM);
        check(&world, &t);
        // Every rider went with the horse, the panicking one's too: none
        // is left waiting for some later despawn to finish the job.
        for (i, &r) in riders.iter().enumerate() {
            assert!(!world.contains(r), "rider {i} (boom at {boom_at})");
        }
        assert!(world.is_empty());
        still_works(&mut world, &t);
        finish(world, &t);
    }
}

// ----- A batch spawn is one change: every entity announced (#39 leftovers) -------

#[derive(Resource, Default)]
struct Announced(Vec<u32>);

/// Its `on_add` hook records the value and panics on 2.
#[derive(Component)]
#[component(on_add = fuse_added)]
struct Fuse(u32);

fn fuse_added(mut world: DeferredWorld, e: Entity) {
    let v = world.world().get::<Fuse>(e).unwrap().0;
    world.resource_mut::<Announced>().0.push(v);
    assert!(v != 2, "fuse 2 blows");
}

#[derive(Component, Default)]
struct Shell;

/// `spawn_batch` and `extend` spawn every entity, then announce each; a
/// hook panicking on one of them does not stop the others' announcements
/// (their hooks and observers would never have seen them): every entity
/// is announced, then the first panic goes on, as a sweep does. The same
/// with required components (each entity spawned on its own): the entities
/// after the panicking one are spawned too. (Before, the entities after
/// the panic were spawned and never announced, or not spawned at all.)
#[test]
fn a_batch_spawn_announces_every_entity_when_a_hook_panics() {
    type Spawn = fn(&mut World);
    let paths: [(&str, Spawn); 4] = [
        ("spawn_batch", |w| {
            w.spawn_batch((0..5).map(Fuse));
        }),
        ("extend", |w| w.extend((0..5).map(Fuse))),
        ("spawn_batch with a parent", |w| {
            let p = w.spawn(());
            w.spawn_batch((0..5).map(|i| (Fuse(i), ChildOf(p))));
        }),
        ("extend with a parent", |w| {
            let p = w.spawn(());
            w.extend((0..5).map(|i| (Fuse(i), ChildOf(p))));
        }),
    ];
    for (name, spawn) in paths {
        for required in [false, true] {
            let mut world = World::new();
            world.init_resource::<Announced>();
            if required {
                world.register_required::<Fuse, Shell>().unwrap();
            }
            let message = expect_panic(|| spawn(&mut world));
            assert!(message.contains("fuse 2 blows"), "{name}: {message}");
            assert_eq!(
                world.resource::<Announced>().0,
                [0, 1, 2, 3, 4],
                "{name}, required {required}"
            );
            assert_eq!(world.query::<&Fuse>().iter(&world).count(), 5, "{name}");
            world.check_invariants();
        }
    }
}
