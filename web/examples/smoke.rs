//! The core on `wasm32-unknown-unknown`, end to end: CI builds this as a
//! `.wasm` module and `node web/smoke.mjs` runs its exported `run`.
//!
//! It spawns entities, runs a schedule of systems on the default
//! (parallel) executor, which must fall back to one thread there, with
//! events, an observer, states, a fixed step, relations, `par_iter` and
//! `par_chunks`, per-system timing with no clock and then with the host's,
//! and a scene saved and reloaded in RON, JSON and binary. Every check is
//! an `assert!`: a failure, or any panic (as `Instant::now` used to raise
//! on every `Schedule::run`), aborts, which traps the module and makes
//! `node` exit non-zero. `run` returns how many checks passed; the script
//! compares it with `CHECKS`.
//!
//! Natively it builds as a library and is never run: `cargo test` skips
//! it (the same checks hold natively in the core's own tests).
//! It imports `now_ms` (`performance.now()`) and `print` (a panic's
//! message) from the module `mosaic`.

#![allow(missing_docs, reason = "an example; its one export is documented")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use mosaic::prelude::*;
use mosaic::scene::{Scene, TypeRegistry};
use serde::{Deserialize, Serialize};

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Position(f32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Velocity(f32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Health(i32);

#[derive(Clone, Copy, Debug)]
struct Hit(Entity);

#[derive(States, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
enum Phase {
    #[default]
    Loading,
    Playing,
}

#[derive(Default, Debug)]
struct Counters {
    hits: u32,
    deaths: u32,
    fixed_steps: u32,
    entered: u32,
}

static CHECKS: AtomicU32 = AtomicU32::new(0);

fn check(ok: bool, what: &str) {
    assert!(ok, "smoke check failed: {what}");
    CHECKS.fetch_add(1, Ordering::Relaxed);
}

fn movement(mut q: Query<(&mut Position, &Velocity)>) {
    q.par_iter_mut().for_each(|(p, v)| p.0 += v.0);
}

fn collide(q: Query<(Entity, &Position)>, mut hits: EventWriter<Hit>) {
    for (e, p) in q.iter() {
        if p.0 > 10.0 {
            hits.send(Hit(e));
        }
    }
}

fn damage(
    mut hits: EventReader<Hit>,
    mut health: Query<&mut Health>,
    mut counters: ResMut<Counters>,
) {
    for hit in hits.read() {
        if let Ok(h) = health.get_mut(hit.0) {
            h.0 -= 1;
            counters.hits += 1;
        }
    }
}

fn reap(q: Query<(Entity, &Health)>, mut commands: Commands) {
    for (e, h) in q.iter() {
        if h.0 <= 0 {
            commands.despawn(e);
        }
    }
}

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Velocity>();
    registry.register::<Health>();
    registry
}

fn scene_round_trip(world: &World) {
    let registry = registry();
    let saved = Scene::from_world(world, &registry).expect("save");
    let ron = saved.to_ron_string().expect("RON");
    let json = saved.to_json_string().expect("JSON");
    let binary = saved.to_binary().expect("binary");
    let mut sums = Vec::new();
    for reloaded in [
        Scene::from_ron_str_with(&ron, &registry).expect("RON back"),
        Scene::from_json_str_with(&json, &registry).expect("JSON back"),
        Scene::from_binary(&binary).expect("binary back"),
    ] {
        let mut copy = World::new();
        reloaded.spawn_into(&mut copy, &registry).expect("spawn");
        check(
            copy.len() == world.len(),
            "a reloaded scene has every entity",
        );
        let sum: f32 = copy.query::<&Position>().iter(&copy).map(|p| p.0).sum();
        sums.push(sum);
    }
    check(
        sums.iter().all(|&s| s == sums[0]),
        "RON, JSON and binary load the same positions",
    );
}

fn run_checks() {
    let mut world = World::new();
    world.insert_resource(Counters::default());
    world.add_event::<Hit>();
    world.init_state::<Phase>();
    world.insert_resource(FixedTime::new(Duration::from_millis(10)));

    // An observer: counts deaths, whoever despawns.
    world.observe(|_: Trigger<OnDespawn>, mut w: DeferredWorld| {
        w.resource_mut::<Counters>().deaths += 1;
    });

    // States: entering `Playing` runs its schedule once.
    world.add_systems(OnEnter(Phase::Playing), |mut c: ResMut<Counters>| {
        c.entered += 1;
    });
    world.resource_mut::<NextState<Phase>>().set(Phase::Playing);

    // The fixed step: 10 ms steps, 20 ms frames: two steps a frame.
    world
        .schedule_mut(FixedUpdate)
        .add_system("count_steps", |mut c: ResMut<Counters>| c.fixed_steps += 1);

    // Entities: movers with health, some with children (relations).
    let movers: Vec<Entity> = (0..200)
        .map(|i| world.spawn((Position(i as f32 * 0.05), Velocity(1.0), Health(3))))
        .collect();
    for &parent in movers.iter().take(10) {
        world
            .spawn_child(parent, Position(0.0))
            .expect("parent alive");
    }
    check(world.children(movers[0]).len() == 1, "a child is listed");

    // The schedule, on the default executor (parallel, which must run on
    // this one thread here), with timing on and no clock installed.
    let mut schedule = Schedule::new();
    check(
        schedule.executor() == ExecutorKind::Parallel,
        "the default executor is kept",
    );
    schedule.add_system("movement", movement);
    schedule.add_system("collide", collide).after("movement");
    schedule.add_system("damage", damage).after("collide");
    schedule.add_system("reap", reap).after("damage");
    schedule.set_timing(true);
    schedule.run_frames(&mut world, 5, Duration::from_millis(20));
    check(
        schedule.timings().rows().iter().all(|r| r.runs == 5),
        "every system timed (zero durations without a clock)",
    );

    // Now with the host's clock (performance.now()).
    let _ = mosaic::set_clock(host_now);
    schedule.run_frames(&mut world, 25, Duration::from_millis(20));
    let c = world.resource::<Counters>();
    check(c.entered == 1, "OnEnter ran once");
    check(c.fixed_steps == 60, "two fixed steps a frame for 30 frames");
    check(c.hits > 0, "events reached their reader");
    check(c.deaths > 0, "the observer saw despawns");
    check(
        *world.resource::<State<Phase>>().get() == Phase::Playing,
        "the state changed",
    );
    // Movers that reached x > 10 were hit 3 times and despawned, their
    // children with them (the children despawn with the parent).
    let alive = movers.iter().filter(|&&e| world.contains(e)).count();
    check(alive < movers.len(), "some movers died");

    // par_chunks: fixed chunks, in order, on one thread.
    let firsts = world.run_system_once(|q: Query<&Velocity>| q.par_chunks(16).map(|c| c.count()));
    check(
        firsts.iter().sum::<usize>() == alive,
        "par_chunks visits every row once",
    );

    // Relations survive a despawn of the parent: the children go too.
    let parent = world.spawn(Position(0.0));
    let child = world
        .spawn_child(parent, Position(1.0))
        .expect("parent alive");
    world.despawn_recursive(parent).expect("alive");
    check(!world.contains(child), "despawn_recursive took the child");

    scene_round_trip(&world);
}

#[cfg(target_family = "wasm")]
#[allow(unsafe_code, reason = "the one function the host provides")]
#[link(wasm_import_module = "mosaic")]
unsafe extern "C" {
    fn now_ms() -> f64;
    fn print(ptr: *const u8, len: usize);
}

/// Prints a panic's message through the host before the module traps
/// (wasm32 aborts on panic, and the message would be lost).
fn report_panics() {
    #[cfg(target_family = "wasm")]
    std::panic::set_hook(Box::new(|info| {
        let text = format!("panic: {info}");
        // SAFETY: the host reads `len` bytes at `ptr` of this module's
        // memory during the call (web/smoke.mjs).
        #[allow(unsafe_code, reason = "the host's console")]
        unsafe {
            print(text.as_ptr(), text.len())
        };
    }));
}

fn host_now() -> Duration {
    #[cfg(target_family = "wasm")]
    {
        // SAFETY: `performance.now()` behind it (web/smoke.mjs); no
        // arguments.
        #[allow(unsafe_code, reason = "the one function the host provides")]
        let ms = unsafe { now_ms() };
        Duration::from_secs_f64(ms.max(0.0) / 1000.0)
    }
    #[cfg(not(target_family = "wasm"))]
    {
        Duration::ZERO
    }
}

/// Runs every check; returns how many passed (all, or it traps).
#[allow(unsafe_code, reason = "an exported symbol: #[unsafe(no_mangle)]")]
#[unsafe(no_mangle)]
pub extern "C" fn run() -> u32 {
    report_panics();
    run_checks();
    CHECKS.load(Ordering::Relaxed)
}
