//! What lifecycle machinery (observers, hooks, required components) costs a
//! component type that nobody observes.
//!
//! The requirement: "overhead when nobody observes a component type:
//! insert/remove speed within 5% of before". The code from before the
//! feature no longer exists, so the comparison is made side by side in one
//! run, on the `add_remove` workload of `benches/core.rs` (insert `B` into
//! each of 10,000 `(A,)` entities one at a time, then remove it again):
//!
//! - `add_remove/plain`: a world with no observers and no hooks at all, so
//!   every structural change skips the lifecycle work at the cost of one
//!   branch: this is "before";
//! - `add_remove/unrelated_observer`: the same, in a world where an observer
//!   and a hook exist on an *unrelated* component type `C`: the lifecycle
//!   machinery is active, but `B` is unobserved. The ratio of this to
//!   `plain` is the number that should stay within 1.05;
//! - `add_remove/observed`: an observer on `B` itself (`OnAdd` and
//!   `OnRemove`), for information: what observing really costs.
//!
//! After the criterion groups, a short interleaved run (plain, unrelated,
//! observed, plain, unrelated, ... one batch each) prints the ratios again:
//! interleaving cancels slow drifts of the machine (frequency, other load)
//! that can bias groups measured one after the other.
//!
//! Required components: `required_spawn/diamonds` spawns `D0`, whose
//! requirements form 18 stacked diamonds (`Dk` requires `Lk` and `Rk`, both
//! require `Dk+1`: 55 components, 2^18 paths), and `required_spawn/by_hand`
//! spawns the same 55 components as one bundle. The ratio should stay
//! within 1.5 (requirements are resolved once per bundle type and written
//! in the same move).
//!
//! Run-time bundles: `built_spawn/builder` spawns `(A, B, C)` through an
//! `EntityBuilder`, `built_spawn/static` the same as a static bundle; the
//! ratio should stay within 1.2 (the world keeps a write plan per list of
//! types: one comparison finds it, then one copy per value).
//!
//! For instruction counts (stable on a noisy machine), one pass of one
//! variant: `LIFECYCLE_ONE_PASS=plain|unrelated_observer|observed|diamonds|by_hand|static|builder`, e.g.
//!
//! ```text
//! cargo bench --bench lifecycle
//! LIFECYCLE_ONE_PASS=plain valgrind --tool=callgrind \
//!     --toggle-collect='*add_remove_pass*' target/release/deps/lifecycle-<hash>
//! LIFECYCLE_ONE_PASS=diamonds valgrind --tool=callgrind \
//!     --toggle-collect='*spawn_diamonds*' target/release/deps/lifecycle-<hash>
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group};
use mosaic::prelude::*;

/// Entities that get `B` added and then removed.
const ENTITIES: usize = 10_000;
/// Batches (of one add_remove pass each) per variant in the interleaved run.
const INTERLEAVED_ROUNDS: usize = 200;

/// The always-present component.
#[derive(Component, Clone, Copy)]
struct A(#[allow(dead_code)] f32);

/// The component inserted and removed again.
#[derive(Component, Clone, Copy)]
struct B(#[allow(dead_code)] f32);

/// The unrelated component that has an observer and a hook.
#[derive(Component, Clone, Copy)]
struct C(#[allow(dead_code)] f32);

/// Counts observer calls, so the observers do (minimal) real work.
#[derive(Default)]
struct Calls(u64);

/// The three worlds being compared.
#[derive(Clone, Copy, Debug)]
enum Variant {
    /// No observers or hooks anywhere.
    Plain,
    /// An observer and a hook on `C`; `B` unobserved.
    UnrelatedObserver,
    /// Observers on `B` itself.
    Observed,
}

impl Variant {
    const ALL: [Variant; 3] = [
        Variant::Plain,
        Variant::UnrelatedObserver,
        Variant::Observed,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::Plain => "plain",
            Variant::UnrelatedObserver => "unrelated_observer",
            Variant::Observed => "observed",
        }
    }
}

/// A world of `ENTITIES` `(A,)` entities, set up as `variant` says.
fn setup(variant: Variant) -> (World, Vec<Entity>) {
    let mut world = World::new();
    world.insert_resource(Calls::default());
    match variant {
        Variant::Plain => {}
        Variant::UnrelatedObserver => {
            world.observe(|_: Trigger<OnAdd<C>>, mut w: DeferredWorld| {
                w.resource_mut::<Calls>().0 += 1
            });
            world
                .register_component_hooks::<C>()
                .on_insert(|mut w, _| w.resource_mut::<Calls>().0 += 1);
            // The type is in use, too.
            world.spawn((A(0.0), C(0.0)));
        }
        Variant::Observed => {
            world.observe(|_: Trigger<OnAdd<B>>, mut w: DeferredWorld| {
                w.resource_mut::<Calls>().0 += 1
            });
            world.observe(|_: Trigger<OnRemove<B>>, mut w: DeferredWorld| {
                w.resource_mut::<Calls>().0 += 1
            });
        }
    }
    let entities = world.spawn_batch((0..ENTITIES).map(|_| (A(0.0),)));
    (world, entities)
}

/// One add_remove pass.
fn add_remove_pass(world: &mut World, entities: &[Entity]) {
    for &e in entities {
        world.insert_one(e, B(0.0)).unwrap();
    }
    for &e in entities {
        black_box(world.remove_one::<B>(e).unwrap());
    }
}

fn add_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_remove");
    for variant in Variant::ALL {
        group.bench_function(variant.name(), |b| {
            let (mut world, entities) = setup(variant);
            b.iter(|| add_remove_pass(&mut world, &entities));
        });
    }
    group.finish();
}

// 18 stacked diamonds: `Dk` requires `Lk` and `Rk`, both require `Dk+1`.
macro_rules! diamonds {
    ($(($d:ident, $l:ident, $r:ident, $next:ident)),* $(,)?) => {
        $(
            #[derive(Component, Default)]
            #[require($l, $r)]
            struct $d(#[allow(dead_code)] u32);
            #[derive(Component, Default)]
            #[require($next)]
            struct $l(#[allow(dead_code)] u32);
            #[derive(Component, Default)]
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
#[derive(Component, Default)]
struct D18(#[allow(dead_code)] u32);

/// A tuple of `Default` values of these types (std's `Default` for tuples
/// stops at 12).
macro_rules! defaults {
    ($($t:ident),*) => { ($($t::default(),)*) };
}

/// The 55 components `D0` resolves to, as one bundle.
fn resolved() -> impl Bundle {
    (
        defaults!(
            D0, L0, R0, D1, L1, R1, D2, L2, R2, D3, L3, R3, D4, L4, R4, D5
        ),
        defaults!(
            L5, R5, D6, L6, R6, D7, L7, R7, D8, L8, R8, D9, L9, R9, D10, L10
        ),
        defaults!(
            R10, D11, L11, R11, D12, L12, R12, D13, L13, R13, D14, L14, R14, D15, L15, R15
        ),
        defaults!(D16, L16, R16, D17, L17, R17, D18),
    )
}

/// Entities spawned per measured batch.
const SPAWNS: usize = 1_000;

/// A world where both variants' archetype already exists.
fn diamond_world() -> World {
    let mut world = World::new();
    let e = world.spawn(D0(0));
    world.despawn(e).unwrap();
    let e = world.spawn(resolved());
    world.despawn(e).unwrap();
    world
}

/// `SPAWNS` spawns of `D0`, which brings the other 54 as requirements.
#[inline(never)]
fn spawn_diamonds(world: &mut World) {
    for _ in 0..SPAWNS {
        black_box(world.spawn(D0(1)));
    }
}

/// `SPAWNS` spawns of the 55 components as one bundle.
#[inline(never)]
fn spawn_by_hand(world: &mut World) {
    for _ in 0..SPAWNS {
        black_box(world.spawn(resolved()));
    }
}

fn required_spawn(c: &mut Criterion) {
    let mut group = c.benchmark_group("required_spawn");
    group.bench_function("diamonds", |b| {
        b.iter_batched_ref(diamond_world, spawn_diamonds, BatchSize::LargeInput)
    });
    group.bench_function("by_hand", |b| {
        b.iter_batched_ref(diamond_world, spawn_by_hand, BatchSize::LargeInput)
    });
    group.finish();
}

/// Entities per batch of `built_spawn`.
const BUILT_SPAWNS: usize = 1_000;

/// `built_spawn/static`: 1,000 spawns of the static bundle `(A, B, C)`.
#[inline(never)]
fn spawn_static(world: &mut World) {
    for i in 0..BUILT_SPAWNS {
        let x = i as f32;
        black_box(world.spawn((A(x), B(x), C(x))));
    }
}

/// `built_spawn/builder`: the same three components through one reused
/// `EntityBuilder` (issue #39: within 1.2x of the static bundle, and the
/// same archetypes).
#[inline(never)]
fn spawn_built(world: &mut World) {
    let mut builder = EntityBuilder::new();
    for i in 0..BUILT_SPAWNS {
        let x = i as f32;
        builder.add(A(x)).add(B(x)).add(C(x));
        black_box(world.spawn(builder.build()));
    }
}

fn built_spawn(c: &mut Criterion) {
    let mut group = c.benchmark_group("built_spawn");
    group.bench_function("static", |b| {
        b.iter_batched_ref(World::new, spawn_static, BatchSize::LargeInput)
    });
    group.bench_function("builder", |b| {
        b.iter_batched_ref(World::new, spawn_built, BatchSize::LargeInput)
    });
    group.finish();
}

/// One add_remove pass of the variant `name` (or one batch of
/// `required_spawn`: `diamonds`, `by_hand`), for instruction counting.
fn one_pass(name: &str) {
    match name {
        "diamonds" => return spawn_diamonds(&mut diamond_world()),
        "by_hand" => return spawn_by_hand(&mut diamond_world()),
        "static" => return spawn_static(&mut World::new()),
        "builder" => return spawn_built(&mut World::new()),
        _ => {}
    }
    let variant = Variant::ALL
        .into_iter()
        .find(|v| v.name() == name)
        .expect("LIFECYCLE_ONE_PASS: plain, unrelated_observer or observed");
    let (mut world, entities) = setup(variant);
    add_remove_pass(&mut world, &entities);
}

/// Times the three variants interleaved and prints the median and the
/// fastest pass time of each, with their ratios to `plain` (the fastest pass
/// is the least disturbed by other load on the machine).
fn interleaved_summary() {
    let mut worlds: Vec<(World, Vec<Entity>)> = Variant::ALL.iter().map(|&v| setup(v)).collect();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); worlds.len()];
    for (world, entities) in &mut worlds {
        add_remove_pass(world, entities); // warm up
    }
    for _ in 0..INTERLEAVED_ROUNDS {
        for (i, (world, entities)) in worlds.iter_mut().enumerate() {
            let start = Instant::now();
            add_remove_pass(world, entities);
            times[i].push(start.elapsed());
        }
    }
    for t in &mut times {
        t.sort();
    }
    let median = |i: usize| times[i][times[i].len() / 2].as_secs_f64();
    let fastest = |i: usize| times[i][0].as_secs_f64();
    println!("\ninterleaved add_remove ({INTERLEAVED_ROUNDS} passes each):");
    println!(
        "  {:<20} {:>10} {:>8} {:>10} {:>8}",
        "variant", "median", "ratio", "fastest", "ratio"
    );
    for (i, variant) in Variant::ALL.iter().enumerate() {
        println!(
            "  {:<20} {:>8.1}us {:>7.3}x {:>8.1}us {:>7.3}x",
            variant.name(),
            median(i) * 1e6,
            median(i) / median(0),
            fastest(i) * 1e6,
            fastest(i) / fastest(0),
        );
    }
}

/// Short warm-up and measurement: enough for a stable median here.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(50)
}

/// The criterion group runner, kept in a private module so the `pub fn` that
/// `criterion_group!` generates needs no doc comment of its own.
mod runner {
    use super::*;

    criterion_group! {
        name = benches;
        config = config();
        targets = add_remove, required_spawn, built_spawn
    }
}

fn main() {
    if let Ok(name) = std::env::var("LIFECYCLE_ONE_PASS") {
        one_pass(&name);
        return;
    }
    runner::benches();
    // Only under `cargo bench` (not when `cargo test` runs benches once).
    if std::env::args().any(|a| a == "--bench") {
        interleaved_summary();
    }
    Criterion::default().configure_from_args().final_summary();
}
