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

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mosaic::prelude::*;
use mosaic::{LifecycleEvent, LifecycleKind, RequiredCycleError};

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

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else {
        "(non-string payload)".to_owned()
    }
}

#[test]
fn derived_cycles_panic_with_their_path_whichever_type_comes_first() {
    /// The expected panic message, and the first use of the cyclic type.
    type Case = (&'static str, fn(&mut World));
    let cases: [Case; 4] = [
        ("component `Cyc2` requires itself through its #[require(..)] declarations: Cyc2 -> Cyc3 -> Cyc1 -> Cyc2", |w| {
            w.spawn(Cyc2);
        }),
        ("component `CycB` requires itself through its #[require(..)] declarations: CycB -> CycA -> CycB", |w| {
            let e = w.spawn(());
            let _ = w.insert_one(e, CycB);
        }),
        ("component `Narcissus` requires itself through its #[require(..)] declarations: Narcissus -> Narcissus", |w| {
            w.register_component::<Narcissus>();
        }),
        ("component `Cyc1` requires itself through its #[require(..)] declarations: Cyc1 -> Cyc2 -> Cyc3 -> Cyc1", |w| {
            let mut commands = CommandBuffer::new(w);
            commands.spawn(Cyc1);
            let _ = commands.apply(w);
        }),
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
        self.0 .0.fetch_add(1, Ordering::SeqCst);
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

#[test]
fn a_panicking_default_leaves_the_world_consistent_without_double_drops() {
    let drops = Drops::default();
    let mut world = World::new();
    world.register_component::<Armed>();
    // spawn
    expect_bomb(&mut world, |w| {
        w.spawn((Armed(Counted(drops.clone())), Cargo(Counted(drops.clone()))));
    });
    // insert
    let e = world.spawn((Cargo(Counted(drops.clone())), Name("e")));
    expect_bomb(&mut world, |w| {
        w.insert_one(e, Armed(Counted(drops.clone()))).unwrap()
    });
    // commands
    let mut commands = CommandBuffer::new(&world);
    commands.spawn(Armed(Counted(drops.clone())));
    let after = commands.spawn(Name("after"));
    expect_bomb(&mut world, |w| drop(commands.apply(w)));
    assert!(world.has::<Name>(after), "the later command still applied");
    // spawn_batch
    expect_bomb(&mut world, |w| {
        w.spawn_batch((0..3).map(|_| (Armed(Counted(drops.clone())), Name("batch"))));
    });
    assert_eq!(drops.get(), 0, "nothing dropped yet");
    // Whatever is there is whole: no entity has a Bomb, each value is
    // reachable exactly once.
    let mut q = world.query::<(Entity, &Armed, Option<&Bomb>)>();
    let armed: Vec<(Entity, bool)> = q.iter(&world).map(|(e, _, b)| (e, b.is_some())).collect();
    assert_eq!(armed.len(), 1 + 1 + 1 + 3);
    assert!(armed.iter().all(|&(_, bomb)| !bomb));
    let cargo = world.query::<&Cargo>().iter(&world).count();
    assert_eq!(cargo, 2);
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
    assert_eq!(world.len(), 1);
    assert_eq!(drops.get(), 0);
    drop(world);
    assert_eq!(drops.get(), 1);
}

// ----- order of events ----------------------------------------------------------------------

#[test]
fn required_insertions_are_announced_after_the_requiring_component() {
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
    assert_eq!(
        got,
        [
            (Spawn, None),
            (Add, Some(physics)),
            (Insert, Some(physics)),
            (Add, Some(pos)),
            (Insert, Some(pos)),
            (Add, Some(dir)),
            (Insert, Some(dir)),
        ]
    );
    assert!(world.read_events(&mut cursor).all(|ev| ev.entity == e));
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
