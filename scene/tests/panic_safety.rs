//! Panic safety of scene loading: user code (a hook, a required
//! component's constructor) that panics while `Scene::spawn_into` puts a
//! scene into a world. The world stays consistent and usable, every decoded
//! value is dropped exactly once, and no requiring component is left
//! without its requirements (issue #17, item 2, for scenes). Moved here
//! from the core's tests/panic_safety.rs and tests/required.rs with the
//! scene code.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use mosaic::DeferredWorld;
use mosaic::prelude::*;
use mosaic_scene::{Scene, TypeRegistry};
use serde::{Deserialize, Serialize};

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

#[derive(Component, Debug, PartialEq, Clone, Copy, Default)]
struct Position(f32, f32);

// ----- a hook panics during a load ----------------------------------------------------

static MADE: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);
static PANIC_ON_ADD: AtomicBool = AtomicBool::new(false);
static ADDS: AtomicUsize = AtomicUsize::new(0);

/// A component counted on construction (every decode) and on drop.
#[derive(Component, Serialize, Deserialize)]
#[serde(from = "u32", into = "u32")]
struct Counted(u32);

impl From<u32> for Counted {
    fn from(v: u32) -> Counted {
        MADE.fetch_add(1, Ordering::SeqCst);
        Counted(v)
    }
}
impl From<Counted> for u32 {
    fn from(c: Counted) -> u32 {
        c.0
    }
}
impl Clone for Counted {
    fn clone(&self) -> Counted {
        Counted::from(self.0)
    }
}
impl Drop for Counted {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// A component whose `on_add` hook panics on its second use when armed.
#[derive(Component, Serialize, Deserialize)]
#[component(on_add = panicking_add)]
struct Hooked;

fn panicking_add(_: DeferredWorld, _: Entity) {
    if ADDS.fetch_add(1, Ordering::SeqCst) == 1 && PANIC_ON_ADD.load(Ordering::SeqCst) {
        panic!("intentional panic in an on_add hook during scene load");
    }
}

/// A hook panics while a scene is being loaded (after the checks, while
/// components go in). The panic reaches the caller; the world stays
/// consistent and usable; every decoded value is dropped exactly once
/// (the ones not yet inserted with the unwinding loader, the others with
/// the world). Entities already spawned stay (the documented policy: a
/// change is kept when a hook panics).
#[test]
fn hook_panics_during_scene_load() {
    let mut registry = TypeRegistry::new();
    registry.register::<Counted>();
    registry.register::<Hooked>();
    let scene = Scene::from_ron_str(
        "(entities: [
            (id: 1, components: {\"Counted\": 1, \"Hooked\": ()}),
            (id: 2, components: {\"Counted\": 2, \"Hooked\": ()}),
            (id: 3, components: {\"Counted\": 3, \"Hooked\": ()}),
        ])",
    )
    .unwrap();
    let mut world = World::new();
    PANIC_ON_ADD.store(true, Ordering::SeqCst);
    let message = expect_panic(|| scene.spawn_into(&mut world, &registry));
    PANIC_ON_ADD.store(false, Ordering::SeqCst);
    assert!(
        message.contains("on_add hook during scene load"),
        "{message}"
    );
    world.check_invariants();
    assert_eq!(world.len(), 3, "the entities were spawned before the panic");
    // The world still works, and loads the same scene cleanly now.
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    assert_eq!(spawned.len(), 3);
    world.check_invariants();
    drop(world);
    assert_eq!(
        MADE.load(Ordering::SeqCst),
        DROPPED.load(Ordering::SeqCst),
        "every decoded value is dropped exactly once"
    );
}

// ----- requirements, and hooks that see them --------------------------------------------

static FAIL: AtomicBool = AtomicBool::new(false);
static HOOK_FAILS: AtomicBool = AtomicBool::new(false);

#[derive(Component, Debug)]
struct Shaky;
impl Default for Shaky {
    fn default() -> Self {
        if FAIL.load(Ordering::SeqCst) {
            panic!("Shaky::default failed");
        }
        Shaky
    }
}

#[derive(Component, Serialize, Deserialize, Debug, Clone)]
#[require(Shaky)]
struct NeedsShaky(u32);

#[derive(Component, Serialize, Deserialize, Debug, Clone)]
#[component(on_add = first_one_panics)]
#[require(Position)]
struct Touchy(u32);

fn first_one_panics(w: DeferredWorld, e: Entity) {
    assert!(
        w.get::<Position>(e).is_ok(),
        "the hook sees its requirement"
    );
    if HOOK_FAILS.load(Ordering::SeqCst) && w.get::<Touchy>(e).unwrap().0 == 0 {
        panic!("hook failed");
    }
}

fn scene_of<C: Component + Clone + Serialize + for<'de> Deserialize<'de>>(
    values: &[C],
) -> (Scene, TypeRegistry) {
    let mut registry = TypeRegistry::new();
    registry.register::<C>();
    let mut source = World::new();
    let es: Vec<Entity> = values.iter().map(|v| source.spawn(v.clone())).collect();
    (
        Scene::from_entities(&source, &registry, es).unwrap(),
        registry,
    )
}

#[test]
fn a_scene_whose_requirement_constructor_panics_leaves_no_requiring_component_alone() {
    let (scene, registry) = scene_of(&[NeedsShaky(1), NeedsShaky(2)]);
    let mut world = World::new();
    FAIL.store(true, Ordering::SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| scene.spawn_into(&mut world, &registry)));
    FAIL.store(false, Ordering::SeqCst);
    assert!(result.is_err());
    world.check_invariants();
    let mut q = world.query::<(Entity, &NeedsShaky)>();
    for (e, _) in q.iter(&world) {
        assert!(world.has::<Shaky>(e), "{e:?} has NeedsShaky without Shaky");
    }
    // The world works on.
    let e = world.spawn(NeedsShaky(3));
    assert!(world.has::<Shaky>(e));
}

#[test]
fn a_scene_whose_hook_panics_leaves_no_requiring_component_alone() {
    let (scene, registry) = scene_of(&[Touchy(0), Touchy(1), Touchy(2)]);
    let mut world = World::new();
    HOOK_FAILS.store(true, Ordering::SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| scene.spawn_into(&mut world, &registry)));
    HOOK_FAILS.store(false, Ordering::SeqCst);
    assert!(result.is_err());
    world.check_invariants();
    let mut q = world.query::<(Entity, &Touchy)>();
    assert_eq!(q.iter(&world).count(), 3, "the spawn itself is complete");
    for (e, _) in q.iter(&world) {
        assert!(
            world.has::<Position>(e),
            "{e:?} has Touchy without Position"
        );
    }
}

/// Issue 39: scene rows whose components require others land in their
/// final archetype in one move, requirements included: loading creates
/// only the archetype a `World::spawn` of the same components creates
/// (the core's column spawn used to write the rows' archetype first, then
/// move each entity again to add the requirements).
#[test]
fn a_scene_s_requirements_come_in_the_same_move() {
    #[derive(Component, Debug, Default)]
    struct Ballast;
    #[derive(Component, Serialize, Deserialize, Debug, Clone)]
    #[require(Ballast)]
    struct Hull(u32);

    let mut reference = World::new();
    let before = reference.archetype_count();
    reference.spawn(Hull(0));
    let static_made = reference.archetype_count() - before;

    let (scene, registry) = scene_of(&[Hull(1), Hull(2), Hull(3)]);
    let mut world = World::new();
    let before = world.archetype_count();
    scene.spawn_into(&mut world, &registry).unwrap();
    assert_eq!(world.archetype_count() - before, static_made);
    let mut q = world.query::<(&Hull, &Ballast)>();
    assert_eq!(q.iter(&world).count(), 3);
    world.check_invariants();
}
