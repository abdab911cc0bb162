//! Integration tests for required components: `#[require(A, B)]` on the
//! derive, `world.register_required` and `register_required_with` at run
//! time. Missing required components are inserted (with `Default` or the
//! given constructor) whenever the requiring component is *added* — by
//! `spawn`, `spawn_batch`, `insert`, a `CommandBuffer` or system `Commands` —
//! and never when it is only replaced; what the bundle provides or the
//! entity already has is kept. Requirements are transitive. Cycles are
//! refused at registration with a `RequiredCycleError` naming the path, and
//! a cycle declared with the derive panics at first use with a message. A
//! required component whose constructor panics leaves the world consistent
//! with nothing dropped twice. Lifecycle events and observer commands around
//! required insertions come in order.
//!
//! Issue #17: requirements arrive in the same change as the requiring
//! component, before any hook or observer runs; a panicking constructor
//! changes nothing; a derived cycle is refused at every use; the derive
//! takes `T = expr`; shared requirements (diamonds) are resolved once.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;
use mosaic::{LifecycleEvent, LifecycleKind, RequiredCycleError};

mod common;
use common::panics::panic_text;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Position(f32, f32);
impl Default for Position {
    fn default() -> Self {
        Position(1.0, 2.0)
    }
}

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Direction(f32);
impl Default for Direction {
    fn default() -> Self {
        Direction(90.0)
    }
}

#[derive(Component, Debug, PartialEq, Clone, Copy, Default)]
#[require(Position, Direction)]
struct Physics;

/// Unrelated data, to check nothing else changes.
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Name(&'static str);

fn position(world: &World, e: Entity) -> Option<Position> {
    world.get::<Position>(e).ok().copied()
}
fn direction(world: &World, e: Entity) -> Option<Direction> {
    world.get::<Direction>(e).ok().copied()
}

/// A world in which `Physics` is already registered (so these tests do not
/// depend on how the type is first met; see
/// `requirements_apply_when_the_first_use_is_an_insert`).
fn world() -> World {
    let mut world = World::new();
    world.register_component::<Physics>();
    world
}

// ----- derive ------------------------------------------------------------------

#[test]
fn spawn_adds_missing_required_components_with_default() {
    let mut world = World::new();
    let e = world.spawn(Physics);
    assert_eq!(position(&world, e), Some(Position(1.0, 2.0)));
    assert_eq!(direction(&world, e), Some(Direction(90.0)));
    let f = world.spawn((Name("f"), Physics));
    assert_eq!(position(&world, f), Some(Position::default()));
    assert_eq!(direction(&world, f), Some(Direction::default()));
    assert_eq!(world.get::<Name>(f), Ok(&Name("f")));
    world.check_invariants();
}

#[test]
fn components_the_bundle_provides_are_kept() {
    let mut world = World::new();
    let e = world.spawn((Physics, Position(5.0, 5.0)));
    assert_eq!(position(&world, e), Some(Position(5.0, 5.0)));
    assert_eq!(direction(&world, e), Some(Direction(90.0)));
    let f = world.spawn((Direction(3.0), Physics, Position(4.0, 4.0)));
    assert_eq!(position(&world, f), Some(Position(4.0, 4.0)));
    assert_eq!(direction(&world, f), Some(Direction(3.0)));
    world.check_invariants();
}

#[test]
fn insert_adds_missing_ones_and_keeps_what_the_entity_has() {
    let mut world = world();
    let e = world.spawn(Position(9.0, 9.0));
    world.insert_one(e, Physics).unwrap();
    assert_eq!(
        position(&world, e),
        Some(Position(9.0, 9.0)),
        "not overwritten"
    );
    assert_eq!(direction(&world, e), Some(Direction(90.0)));
    // In a bundle with the required one: the bundle's value wins.
    let f = world.spawn(Name("f"));
    world.insert(f, (Physics, Direction(1.0))).unwrap();
    assert_eq!(direction(&world, f), Some(Direction(1.0)));
    assert_eq!(position(&world, f), Some(Position::default()));
    world.check_invariants();
}

#[test]
fn replacing_the_requiring_component_adds_nothing() {
    let mut world = World::new();
    let e = world.spawn(Physics);
    world.remove_one::<Direction>(e).unwrap();
    world.insert_one(e, Position(7.0, 7.0)).unwrap();
    world.insert_one(e, Physics).unwrap(); // a replace, not an add
    assert_eq!(direction(&world, e), None);
    assert_eq!(position(&world, e), Some(Position(7.0, 7.0)));
    // Removing and adding it again does add.
    world.remove_one::<Physics>(e).unwrap();
    world.insert_one(e, Physics).unwrap();
    assert_eq!(direction(&world, e), Some(Direction(90.0)));
    assert_eq!(position(&world, e), Some(Position(7.0, 7.0)));
}

#[test]
fn spawn_batch_adds_required_components_to_every_entity() {
    let mut world = World::new();
    let es = world
        .spawn_batch((0..50).map(|i| (Physics, Name(if i % 2 == 0 { "even" } else { "odd" }))));
    for &e in &es {
        assert_eq!(position(&world, e), Some(Position::default()));
        assert_eq!(direction(&world, e), Some(Direction::default()));
    }
    let ps = world.spawn_batch((0..3).map(|i| (Physics, Position(i as f32, 0.0))));
    for (i, &e) in ps.iter().enumerate() {
        assert_eq!(position(&world, e), Some(Position(i as f32, 0.0)));
    }
    world.check_invariants();
}

#[test]
fn command_buffers_add_required_components() {
    let mut world = world();
    let existing = world.spawn(Position(3.0, 3.0));
    let mut commands = CommandBuffer::new(&world);
    let e = commands.spawn(Physics);
    let f = commands.spawn((Physics, Direction(-1.0)));
    commands.insert(existing, Physics);
    commands.apply(&mut world).unwrap();
    assert_eq!(
        (position(&world, e), direction(&world, e)),
        (Some(Position::default()), Some(Direction::default()))
    );
    assert_eq!(direction(&world, f), Some(Direction(-1.0)));
    assert_eq!(position(&world, existing), Some(Position(3.0, 3.0)));
    assert_eq!(direction(&world, existing), Some(Direction::default()));
    world.check_invariants();
}

#[test]
fn system_commands_add_required_components() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = world();
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("spawn", |mut commands: Commands, mut done: Local<bool>| {
            if !*done {
                *done = true;
                commands.spawn((Physics, Name("by command")));
            }
        });
        schedule.run(&mut world);
        let mut q = world.query::<(&Name, &Position, &Direction)>();
        let got: Vec<_> = q.iter(&world).map(|(n, p, d)| (*n, *p, *d)).collect();
        assert_eq!(
            got,
            [(
                Name("by command"),
                Position::default(),
                Direction::default()
            )],
            "{kind:?}"
        );
    }
}

/// The first time `Physics` is met is an `insert` into an existing entity,
/// in a world with no other hooks, observers or requirements.
#[test]
fn requirements_apply_when_the_first_use_is_an_insert() {
    let mut world = World::new();
    let e = world.spawn(Name("e"));
    world.insert_one(e, Physics).unwrap();
    assert_eq!(position(&world, e), Some(Position::default()));
    assert_eq!(direction(&world, e), Some(Direction::default()));
}

// ----- run-time registration ----------------------------------------------------

#[derive(Component, Debug, Default)]
struct Collider;
#[derive(Component, Debug)]
struct Enemy;
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Health(u32);

#[test]
fn register_required_and_register_required_with() {
    let mut world = World::new();
    world.register_required::<Collider, Position>().unwrap();
    world
        .register_required_with::<Enemy, Health>(|| Health(30))
        .unwrap();
    world
        .register_required_with::<Enemy, Name>(|| Name("grunt"))
        .unwrap();
    let a = world.spawn(Collider);
    assert_eq!(position(&world, a), Some(Position::default()));
    let b = world.spawn((Collider, Position(8.0, 8.0)));
    assert_eq!(position(&world, b), Some(Position(8.0, 8.0)));
    let e = world.spawn(Enemy);
    assert_eq!(world.get::<Health>(e), Ok(&Health(30)));
    assert_eq!(world.get::<Name>(e), Ok(&Name("grunt")));
    let boss = world.spawn(Health(500));
    world.insert_one(boss, Enemy).unwrap();
    assert_eq!(world.get::<Health>(boss), Ok(&Health(500)), "kept");
    assert_eq!(world.get::<Name>(boss), Ok(&Name("grunt")));
    // Through commands too.
    let mut commands = CommandBuffer::new(&world);
    let c = commands.spawn(Enemy);
    commands.apply(&mut world).unwrap();
    assert_eq!(world.get::<Health>(c), Ok(&Health(30)));
    world.check_invariants();
}

#[test]
fn run_time_requirements_add_to_derived_ones() {
    let mut world = World::new();
    world
        .register_required_with::<Physics, Health>(|| Health(1))
        .unwrap();
    let e = world.spawn(Physics);
    assert!(world.has::<Position>(e) && world.has::<Direction>(e));
    assert_eq!(world.get::<Health>(e), Ok(&Health(1)));
}

#[test]
fn the_constructor_runs_once_per_added_component() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let c = calls.clone();
    world
        .register_required_with::<Enemy, Health>(move || {
            c.fetch_add(1, Ordering::SeqCst);
            Health(1)
        })
        .unwrap();
    world.spawn(Enemy);
    world.spawn((Enemy, Health(2))); // provided: not called
    let e = world.spawn(Enemy);
    world.insert_one(e, Enemy).unwrap(); // a replace: not called
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

// ----- transitive ------------------------------------------------------------------

#[derive(Component, Debug, Default)]
#[require(Mid)]
struct Top;
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[require(Bottom)]
struct Mid(u32);
impl Default for Mid {
    fn default() -> Self {
        Mid(1)
    }
}
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Bottom(u32);
impl Default for Bottom {
    fn default() -> Self {
        Bottom(2)
    }
}

#[test]
fn requirements_are_transitive() {
    let mut world = World::new();
    let e = world.spawn(Top);
    assert_eq!(world.get::<Mid>(e), Ok(&Mid(1)));
    assert_eq!(world.get::<Bottom>(e), Ok(&Bottom(2)));
    // The bundle brings the middle one: its own requirement still applies.
    let f = world.spawn((Top, Mid(10)));
    assert_eq!(world.get::<Mid>(f), Ok(&Mid(10)));
    assert_eq!(world.get::<Bottom>(f), Ok(&Bottom(2)));
    // The bundle brings the last one: kept.
    let g = world.spawn((Bottom(20), Top));
    assert_eq!(world.get::<Mid>(g), Ok(&Mid(1)));
    assert_eq!(world.get::<Bottom>(g), Ok(&Bottom(20)));
    // The entity has the last one: kept.
    let h = world.spawn(Bottom(30));
    world.insert_one(h, Top).unwrap();
    assert_eq!(world.get::<Mid>(h), Ok(&Mid(1)));
    assert_eq!(world.get::<Bottom>(h), Ok(&Bottom(30)));
    world.check_invariants();
}

/// `Top` requires `Mid` requires `Bottom`, so adding `Top` to an entity
/// that lacks `Bottom` adds it, even if the entity already has `Mid`.
#[test]
fn transitive_requirements_apply_when_the_middle_one_is_present() {
    let mut world = World::new();
    let e = world.spawn(Mid(5));
    world.remove_one::<Bottom>(e).unwrap();
    world.insert_one(e, Top).unwrap();
    assert_eq!(world.get::<Mid>(e), Ok(&Mid(5)));
    assert_eq!(
        world.get::<Bottom>(e),
        Ok(&Bottom(2)),
        "Top requires Bottom through Mid"
    );
}

#[derive(Component, Debug, Default)]
struct X;
#[derive(Component, Debug, Default)]
struct Y;
#[derive(Component, Debug, Default)]
struct Z;

#[test]
fn run_time_requirements_are_transitive() {
    let mut world = World::new();
    world.register_required::<X, Y>().unwrap();
    world.register_required::<Y, Z>().unwrap();
    let e = world.spawn(X);
    assert!(world.has::<Y>(e) && world.has::<Z>(e));
    // Registered in the other order, too.
    let mut world = World::new();
    world.register_required::<Y, Z>().unwrap();
    world.register_required::<X, Y>().unwrap();
    let e = world.spawn(X);
    assert!(world.has::<Y>(e) && world.has::<Z>(e));
}

// ----- cycles -------------------------------------------------------------------------

#[test]
fn a_cycle_is_refused_at_registration_naming_the_path() {
    let mut world = World::new();
    world.register_required::<X, Y>().unwrap();
    world.register_required::<Y, Z>().unwrap();
    let err = world.register_required::<Z, X>().unwrap_err();
    assert_eq!(
        err,
        RequiredCycleError {
            component: "Z".into(),
            required: "X".into(),
            path: "X -> Y -> Z".into(),
        }
    );
    let text = err.to_string();
    assert!(
        text.contains("cycle") && text.contains("X -> Y -> Z"),
        "{text}"
    );
    // Nothing was registered: Z does not require X.
    let z = world.spawn(Z);
    assert!(!world.has::<X>(z));
    // A two-step cycle and a self-requirement.
    let err = world.register_required::<Y, X>().unwrap_err();
    assert_eq!(err.path, "X -> Y");
    let err = world.register_required::<X, X>().unwrap_err();
    assert_eq!(
        (
            err.component.as_str(),
            err.required.as_str(),
            err.path.as_str()
        ),
        ("X", "X", "X")
    );
    // The world is unharmed.
    let e = world.spawn(X);
    assert!(world.has::<Y>(e) && world.has::<Z>(e));
    world.check_invariants();
}

#[test]
fn a_run_time_requirement_that_closes_a_derived_cycle_is_refused() {
    let mut world = World::new();
    // Top -> Mid -> Bottom by derive; Bottom -> Top would loop.
    let err = world.register_required::<Bottom, Top>().unwrap_err();
    assert_eq!(err.path, "Top -> Mid -> Bottom");
    let e = world.spawn(Bottom(0));
    assert!(!world.has::<Top>(e));
}

#[derive(Component, Debug, Default)]
#[require(CycB)]
struct CycA;
#[derive(Component, Debug, Default)]
#[require(CycA)]
struct CycB;

#[test]
#[should_panic(
    expected = "component `CycA` requires itself through its #[require(..)] declarations: CycA -> CycB -> CycA"
)]
fn a_derived_cycle_panics_at_first_use() {
    let mut world = World::new();
    world.spawn(CycA);
}

#[derive(Component, Debug, Default)]
#[require(Cyc2)]
struct Cyc1;
#[derive(Component, Debug, Default)]
#[require(Cyc3)]
struct Cyc2;
#[derive(Component, Debug, Default)]
#[require(Cyc1)]
struct Cyc3;

#[derive(Component, Debug, Default)]
#[require(Narcissus)]
struct Narcissus;

#[test]
fn derived_cycles_panic_with_their_path_whichever_type_comes_first() {
    /// The expected panic message, and the first use of the cyclic type.
    type Case = (&'static str, fn(&mut World));
    let cases: [Case; 4] = [
        (
            "component `Cyc2` requires itself through its #[require(..)] declarations: Cyc2 -> Cyc3 -> Cyc1 -> Cyc2",
            |w| {
                w.spawn(Cyc2);
            },
        ),
        (
            "component `CycB` requires itself through its #[require(..)] declarations: CycB -> CycA -> CycB",
            |w| {
                let e = w.spawn(());
                let _ = w.insert_one(e, CycB);
            },
        ),
        (
            "component `Narcissus` requires itself through its #[require(..)] declarations: Narcissus -> Narcissus",
            |w| {
                w.register_component::<Narcissus>();
            },
        ),
        (
            "component `Cyc1` requires itself through its #[require(..)] declarations: Cyc1 -> Cyc2 -> Cyc3 -> Cyc1",
            |w| {
                let mut commands = CommandBuffer::new(w);
                commands.spawn(Cyc1);
                let _ = commands.apply(w);
            },
        ),
    ];
    for (expected, op) in cases {
        let mut world = World::new();
        let err = catch_unwind(AssertUnwindSafe(|| op(&mut world))).expect_err(expected);
        assert_eq!(panic_text(&*err), expected);
        world.check_invariants();
    }
}

// ----- panicking constructors ------------------------------------------------------------

/// Counts drops of values sharing the counter.
#[derive(Debug, Clone, Default)]
struct Drops(Arc<AtomicUsize>);
impl Drops {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}
#[derive(Debug)]
struct Counted(Drops);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Its `Default` panics.
#[derive(Component, Debug)]
struct Bomb(#[allow(dead_code)] u32);
impl Default for Bomb {
    fn default() -> Self {
        panic!("Bomb::default failed")
    }
}

/// Requires `Position` (fine) and `Bomb` (panics).
#[derive(Component, Debug)]
#[require(Position, Bomb)]
struct Armed(#[allow(dead_code)] Counted);

#[derive(Component, Debug)]
#[component(storage = "sparse")]
struct Cargo(#[allow(dead_code)] Counted);

fn expect_bomb(world: &mut World, op: impl FnOnce(&mut World)) {
    let err =
        catch_unwind(AssertUnwindSafe(|| op(world))).expect_err("the constructor should panic");
    assert!(
        panic_text(&*err).contains("Bomb::default failed"),
        "{}",
        panic_text(&*err)
    );
    world.check_invariants();
}

/// Issue #17, item 2: requirements are made before the world changes, so a
/// panicking `Default` changes nothing (the bundle is dropped, once), in
/// every path that adds a requiring component.
#[test]
fn a_panicking_default_leaves_the_world_consistent_without_double_drops() {
    let drops = Drops::default();
    let mut world = World::new();
    world.register_component::<Armed>();
    // spawn: nothing spawned, the bundle dropped.
    expect_bomb(&mut world, |w| {
        w.spawn((Armed(Counted(drops.clone())), Cargo(Counted(drops.clone()))));
    });
    assert_eq!(world.len(), 0);
    assert_eq!(drops.get(), 2);
    // insert: the entity unchanged, the bundle dropped.
    let e = world.spawn((Cargo(Counted(drops.clone())), Name("e")));
    expect_bomb(&mut world, |w| {
        w.insert_one(e, Armed(Counted(drops.clone()))).unwrap()
    });
    assert!(!world.has::<Armed>(e) && !world.has::<Position>(e));
    assert_eq!(drops.get(), 3);
    // commands: the failed command changes nothing (its reserved entity
    // comes to life empty, as every reserved id does); later ones apply.
    let mut commands = CommandBuffer::new(&world);
    let failed = commands.spawn(Armed(Counted(drops.clone())));
    let after = commands.spawn(Name("after"));
    expect_bomb(&mut world, |w| drop(commands.apply(w)));
    assert!(world.has::<Name>(after), "the later command still applied");
    assert!(!world.has::<Armed>(failed));
    assert_eq!(drops.get(), 4);
    // spawn_batch: one change, every bundle tried (each refused whole and
    // dropped once), then the first panic goes on.
    expect_bomb(&mut world, |w| {
        w.spawn_batch((0..3).map(|_| (Armed(Counted(drops.clone())), Name("batch"))));
    });
    assert_eq!(drops.get(), 7);
    // No entity has an `Armed` without its requirements: none has one.
    assert_eq!(world.query::<&Armed>().iter(&world).count(), 0);
    assert_eq!(world.query::<&Position>().iter(&world).count(), 0);
    assert_eq!(world.query::<&Cargo>().iter(&world).count(), 1);
    world.clear();
    assert_eq!(drops.get(), 8);
    drop(world);
    assert_eq!(drops.get(), 8, "every value dropped exactly once");
}

#[test]
fn a_panicking_constructor_registered_at_run_time() {
    let drops = Drops::default();
    let mut world = World::new();
    world
        .register_required_with::<Cargo, Health>(|| panic!("Bomb::default failed (closure)"))
        .unwrap();
    expect_bomb(&mut world, |w| {
        w.spawn(Cargo(Counted(drops.clone())));
    });
    assert_eq!(world.len(), 0, "nothing spawned");
    assert_eq!(drops.get(), 1, "the bundle dropped once");
    drop(world);
    assert_eq!(drops.get(), 1);
}

/// Its `on_add` hook panics; requires `Position` and `Direction`.
#[derive(Component, Debug)]
#[component(on_add = fail_on_add)]
#[require(Position, Direction)]
struct Fragile(#[allow(dead_code)] Counted);

fn fail_on_add(_: DeferredWorld, _: Entity) {
    panic!("Bomb::default failed (hook)");
}

/// Issue #17, item 2: a panicking `on_add` hook of the requiring component
/// runs after the whole change, so the entity keeps its requirements.
#[test]
fn a_panicking_hook_never_leaves_a_requiring_component_without_its_requirements() {
    let drops = Drops::default();
    let mut world = World::new();
    expect_bomb(&mut world, |w| {
        w.spawn(Fragile(Counted(drops.clone())));
    });
    let e = world.spawn(Name("e"));
    expect_bomb(&mut world, |w| {
        w.insert_one(e, Fragile(Counted(drops.clone()))).unwrap();
    });
    let mut q = world.query::<(&Fragile, Option<&Position>, Option<&Direction>)>();
    let all: Vec<(bool, bool)> = q
        .iter(&world)
        .map(|(_, p, d)| (p.is_some(), d.is_some()))
        .collect();
    assert_eq!(all, [(true, true), (true, true)]);
    assert_eq!(drops.get(), 0);
    drop(world);
    assert_eq!(drops.get(), 2, "each value dropped exactly once");
}

/// Issue #17, item 1: hooks and observers of the requiring component run
/// after its requirements are in (spawn and insert).
#[derive(Component, Debug, Default)]
#[component(on_add = physics_hook)]
#[require(Position, Direction)]
struct Body;

#[derive(Default, Debug)]
struct SeenRequired(Vec<(&'static str, bool, bool)>);

fn note(w: &mut DeferredWorld, who: &'static str, e: Entity) {
    let seen = (
        who,
        w.get::<Position>(e).is_ok(),
        w.get::<Direction>(e).is_ok(),
    );
    w.resource_mut::<SeenRequired>().0.push(seen);
}

fn physics_hook(mut w: DeferredWorld, e: Entity) {
    note(&mut w, "hook", e);
}

#[test]
fn hooks_and_observers_of_the_requiring_component_see_its_requirements() {
    let mut world = World::new();
    world.insert_resource(SeenRequired::default());
    world.observe(|t: Trigger<OnAdd<Body>>, mut w: DeferredWorld| {
        note(&mut w, "add", t.entity().unwrap())
    });
    world.observe(|t: Trigger<OnInsert<Body>>, mut w: DeferredWorld| {
        note(&mut w, "insert", t.entity().unwrap())
    });
    let e = world.spawn(Body);
    let f = world.spawn(Name("f"));
    world.insert_one(f, Body).unwrap();
    assert_eq!(
        world.resource::<SeenRequired>().0,
        [
            ("hook", true, true),
            ("add", true, true),
            ("insert", true, true),
            ("hook", true, true),
            ("add", true, true),
            ("insert", true, true),
        ]
    );
    assert!(world.has::<Position>(e) && world.has::<Direction>(f));
}

/// Issue #17, item 3: a cycle found by the derive is an error at every
/// use, not only the first.
#[test]
fn a_derived_cycle_panics_at_every_use() {
    let mut world = World::new();
    for attempt in 0..3 {
        let err = catch_unwind(AssertUnwindSafe(|| {
            world.spawn(Cyc2);
        }))
        .expect_err("a cycle is refused every time");
        assert!(
            panic_text(&*err).contains("Cyc2 -> Cyc3 -> Cyc1 -> Cyc2"),
            "attempt {attempt}"
        );
    }
    let e = world.spawn(());
    for _ in 0..2 {
        let err = catch_unwind(AssertUnwindSafe(|| {
            let _ = world.insert_one(e, Cyc1);
        }))
        .expect_err("also through insert");
        assert!(panic_text(&*err).contains("requires itself"));
    }
    assert_eq!(world.len(), 1);
    world.check_invariants();
}

/// Issue #17, item 4: `#[require(T = expr)]` gives a constructor.
#[derive(Component, Debug, PartialEq)]
struct Mana(u32);
#[derive(Component, Debug, PartialEq)]
struct Stamina(u32);
fn new_stamina() -> Stamina {
    Stamina(7)
}
#[derive(Component, Debug)]
#[require(Mana = Mana(50), Stamina = new_stamina(), Position)]
struct Wizard;

#[test]
fn the_derive_takes_a_constructor_expression() {
    let mut world = World::new();
    let e = world.spawn(Wizard);
    assert_eq!(world.get::<Mana>(e), Ok(&Mana(50)));
    assert_eq!(world.get::<Stamina>(e), Ok(&Stamina(7)));
    assert_eq!(world.get::<Position>(e), Ok(&Position(1.0, 2.0)));
    let f = world.spawn((Wizard, Mana(3)));
    assert_eq!(
        world.get::<Mana>(f),
        Ok(&Mana(3)),
        "the bundle's own value is kept"
    );
}

// Issue #17, item 5: 18 stacked diamonds (`Dk` requires `Lk` and `Rk`,
// both require `Dk+1`): 55 components, 2^18 paths.
macro_rules! diamonds {
    ($(($d:ident, $l:ident, $r:ident, $next:ident)),* $(,)?) => {
        $(
            #[derive(Component, Debug, Default)]
            #[require($l, $r)]
            struct $d(#[allow(dead_code)] u32);
            #[derive(Component, Debug, Default)]
            #[require($next)]
            struct $l(#[allow(dead_code)] u32);
            #[derive(Component, Debug, Default)]
            #[require($next)]
            struct $r(#[allow(dead_code)] u32);
        )*
    };
}
diamonds!(
    (D0, L0, R0, D1),
    (D1, L1, R1, D2),
    (D2, L2, R2, D3),
    (D3, L3, R3, D4),
    (D4, L4, R4, D5),
    (D5, L5, R5, D6),
    (D6, L6, R6, D7),
    (D7, L7, R7, D8),
    (D8, L8, R8, D9),
    (D9, L9, R9, D10),
    (D10, L10, R10, D11),
    (D11, L11, R11, D12),
    (D12, L12, R12, D13),
    (D13, L13, R13, D14),
    (D14, L14, R14, D15),
    (D15, L15, R15, D16),
    (D16, L16, R16, D17),
    (D17, L17, R17, D18),
);
#[derive(Component, Debug, Default)]
struct D18(#[allow(dead_code)] u32);

#[test]
fn shared_requirements_are_resolved_once_not_per_path() {
    let mut world = World::new();
    let n = if cfg!(miri) { 2 } else { 20 };
    let start = std::time::Instant::now();
    let es: Vec<Entity> = (0..n).map(|_| world.spawn(D0(1))).collect();
    // Walking every path (2^18 per spawn) takes seconds here; resolving
    // each type once takes microseconds. Six orders of magnitude apart, so
    // the bound cannot flake on a loaded machine; not under Miri, whose
    // interpreter is slow by design (the figure is in benches/lifecycle).
    if !cfg!(miri) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }
    for e in es {
        assert!(world.has::<D18>(e) && world.has::<L17>(e) && world.has::<R0>(e));
    }
    let archetype = world.archetypes().find(|a| a.len() == n).unwrap();
    assert_eq!(archetype.components().len(), 55);
    world.check_invariants();
}

// ----- order of events ----------------------------------------------------------------------

/// The whole change first, then the announcements: `OnSpawn`, an `OnAdd`
/// per component (the bundle's, then the requirements, nearest first),
/// then an `OnInsert` per component in the same order.
#[test]
fn required_insertions_are_announced_with_the_requiring_component() {
    let mut world = World::new();
    let physics = world.register_component::<Physics>();
    let pos = world.register_component::<Position>();
    let dir = world.register_component::<Direction>();
    let mut cursor = world.event_cursor::<LifecycleEvent>();
    let e = world.spawn(Physics);
    use LifecycleKind::*;
    let got: Vec<(LifecycleKind, Option<mosaic::ComponentId>)> = world
        .read_events(&mut cursor)
        .map(|ev| (ev.kind, ev.component))
        .collect();
    let expected = [
        (Spawn, None),
        (Add, Some(physics)),
        (Add, Some(pos)),
        (Add, Some(dir)),
        (Insert, Some(physics)),
        (Insert, Some(pos)),
        (Insert, Some(dir)),
    ];
    assert_eq!(got, expected);
    assert!(world.read_events(&mut cursor).all(|ev| ev.entity == e));
    // Same order for an insert (no `Spawn`).
    let f = world.spawn(Name("f"));
    let _ = world.read_events(&mut cursor).count();
    world.insert_one(f, Physics).unwrap();
    let got: Vec<_> = world
        .read_events(&mut cursor)
        .map(|ev| (ev.kind, ev.component))
        .collect();
    assert_eq!(got, expected[1..]);
}

#[test]
fn observers_of_required_components_fire() {
    #[derive(Default)]
    struct Added(Vec<(Entity, Direction)>);
    let mut world = World::new();
    world.insert_resource(Added::default());
    world.observe(|t: Trigger<OnAdd<Direction>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let d = *w.get::<Direction>(e).unwrap();
        w.resource_mut::<Added>().0.push((e, d));
    });
    let e = world.spawn(Physics);
    let f = world.spawn((Physics, Direction(0.0))); // provided by the bundle: also an add
    assert_eq!(
        world.resource::<Added>().0,
        [(e, Direction(90.0)), (f, Direction(0.0))]
    );
}

/// Commands issued by an observer of the requiring component apply after
/// the whole operation, required components included ("applied right after
/// the operation that triggered the observer finishes"), whether or not the
/// required components are themselves observed or hooked.
#[test]
fn observer_commands_run_after_the_required_components_are_in() {
    #[derive(Default, Debug)]
    struct Seen(Vec<(bool, bool)>);
    for observe_position in [false, true] {
        let mut world = World::new();
        world.insert_resource(Seen::default());
        world.observe(|t: Trigger<OnAdd<Physics>>, mut w: DeferredWorld| {
            let e = t.entity().unwrap();
            w.commands().run(move |world| {
                let seen = (world.has::<Position>(e), world.has::<Direction>(e));
                world.resource_mut::<Seen>().0.push(seen);
            });
        });
        if observe_position {
            world.observe(|_: Trigger<OnAdd<Position>>, _: DeferredWorld| {});
        }
        world.spawn(Physics);
        let e = world.spawn(Name("later"));
        world.insert_one(e, Physics).unwrap();
        assert_eq!(
            world.resource::<Seen>().0,
            [(true, true), (true, true)],
            "Position observed: {observe_position}"
        );
    }
}

/// Issue #17, item 1: the entity moves once, straight to the archetype of
/// the bundle plus every missing requirement: no intermediate archetype
/// (bundle without its requirements) is ever made.
#[test]
fn spawn_and_insert_move_the_entity_once() {
    #[derive(Component, Default)]
    #[require(Mid)]
    struct Lone;
    let mut world = World::new();
    let e = world.spawn(Lone);
    let f = world.spawn(Name("f"));
    world.insert_one(f, Lone).unwrap();
    let mut sets: Vec<Vec<&str>> = world
        .archetypes()
        .map(|a| {
            let mut names: Vec<&str> = a
                .components()
                .iter()
                .map(|&id| world.component_info(id).unwrap().name())
                .collect();
            names.sort();
            names
        })
        .collect();
    sets.sort();
    assert_eq!(
        sets,
        [
            vec![],
            vec!["Bottom", "Lone", "Mid"],
            vec!["Bottom", "Lone", "Mid", "Name"],
            vec!["Name"],
        ]
    );
    assert!(world.has::<Bottom>(e) && world.has::<Bottom>(f));
    world.check_invariants();
}

/// The cached resolution follows requirements added at run time, after
/// spawns have used (and cached) the old set.
#[test]
fn a_requirement_added_later_applies_to_later_spawns_and_inserts() {
    #[derive(Component, Default, Debug, PartialEq)]
    struct Late(u8);
    let mut world = World::new();
    let before = world.spawn(Physics);
    assert!(!world.has::<Late>(before));
    world
        .register_required_with::<Position, Late>(|| Late(3))
        .unwrap();
    let after = world.spawn(Physics);
    assert_eq!(world.get::<Late>(after), Ok(&Late(3)), "through Position");
    let f = world.spawn(Name("f"));
    world.insert_one(f, Physics).unwrap();
    assert_eq!(world.get::<Late>(f), Ok(&Late(3)));
    world.check_invariants();
}

/// Issue #17, item 3: a type that is not on a loop but requires a type
/// that is: its first use panics (the loop is met while registering it),
/// and so must every later use — it must not stay registered as a type
/// with no requirements.
#[derive(Component, Default)]
#[require(OnLoop1)]
struct AboveLoop;
#[derive(Component, Default)]
#[require(OnLoop2)]
struct OnLoop1;
#[derive(Component, Default)]
#[require(OnLoop1)]
struct OnLoop2;

#[test]
fn a_type_requiring_a_cycle_panics_at_every_use() {
    let mut world = World::new();
    for attempt in 0..3 {
        let err = catch_unwind(AssertUnwindSafe(|| {
            world.spawn(AboveLoop);
        }))
        .expect_err("requiring a loop is refused every time");
        assert!(
            panic_text(&*err).contains("OnLoop1 -> OnLoop2 -> OnLoop1"),
            "attempt {attempt}: {}",
            panic_text(&*err)
        );
    }
    let e = world.spawn(());
    let err = catch_unwind(AssertUnwindSafe(|| {
        let _ = world.insert_one(e, AboveLoop);
    }))
    .expect_err("also through insert");
    assert!(panic_text(&*err).contains("requires itself"));
    assert_eq!(world.len(), 1);
    assert!(!world.has::<AboveLoop>(e));
    world.check_invariants();
}

// Issue #17, item 5, at registration: 28 stacked diamonds (2^28 paths).
// The cycle check that runs when each type is registered must not walk
// every path either.
diamonds!(
    (E0, EL0, ER0, E1),
    (E1, EL1, ER1, E2),
    (E2, EL2, ER2, E3),
    (E3, EL3, ER3, E4),
    (E4, EL4, ER4, E5),
    (E5, EL5, ER5, E6),
    (E6, EL6, ER6, E7),
    (E7, EL7, ER7, E8),
    (E8, EL8, ER8, E9),
    (E9, EL9, ER9, E10),
    (E10, EL10, ER10, E11),
    (E11, EL11, ER11, E12),
    (E12, EL12, ER12, E13),
    (E13, EL13, ER13, E14),
    (E14, EL14, ER14, E15),
    (E15, EL15, ER15, E16),
    (E16, EL16, ER16, E17),
    (E17, EL17, ER17, E18),
    (E18, EL18, ER18, E19),
    (E19, EL19, ER19, E20),
    (E20, EL20, ER20, E21),
    (E21, EL21, ER21, E22),
    (E22, EL22, ER22, E23),
    (E23, EL23, ER23, E24),
    (E24, EL24, ER24, E25),
    (E25, EL25, ER25, E26),
    (E26, EL26, ER26, E27),
    (E27, EL27, ER27, E28),
);
#[derive(Component, Debug, Default)]
struct E28(#[allow(dead_code)] u32);

#[test]
fn the_cycle_check_does_not_walk_every_path() {
    let mut world = World::new();
    let start = std::time::Instant::now();
    world.register_component::<E0>();
    world.register_required::<E28, Position>().unwrap();
    let e = world.spawn(E0(1));
    // Every path of 28 stacked diamonds is 2^28 walks (minutes); once per
    // component is microseconds. Not timed under Miri (see above).
    if !cfg!(miri) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }
    assert!(world.has::<E28>(e) && world.has::<Position>(e));
    let path = world.register_required::<E28, E0>().unwrap_err().path;
    assert!(
        path.starts_with("E0 -> ") && path.ends_with(" -> E28"),
        "{path}"
    );
    assert_eq!(path.split(" -> ").count(), 57, "{path}");
}
