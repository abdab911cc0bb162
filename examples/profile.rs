//! A fixed-work driver for instruction-count profiling (callgrind), where
//! criterion's adaptive loop and this machine's noise get in the way.
//!
//! Each workload builds its world once, then runs the measured operation
//! `N` times inside one `#[inline(never)]` function named `measured_*`, so
//! callgrind can count just that part:
//!
//! ```text
//! cargo build --release --example profile
//! valgrind --tool=callgrind --toggle-collect='profile::measured_*' \
//!     target/release/examples/profile frag-mosaic 1000
//! ```
//!
//! Instructions per run = total collected / N. Workloads (each `*-for-*` is
//! the same work written as a plain `for` loop, the guide's form):
//! `simple-for-mosaic`, `simple-for-hecs`, `simple-derive-for-mosaic` (the
//! same query as a `#[derive(QueryData)]` struct; `simple-derive-mosaic` is
//! its `for_each` form), `frag-for-mosaic`,
//! `frag-sparse-for-mosaic`, `frag-for-hecs`, `schedule-for-mosaic` (the
//! suite's three swapping systems with `for` loops, in a single-threaded
//! `Schedule` so every system is counted); and the `for_each` forms `frag-mosaic`,
//! `frag-sparse-mosaic` (the same with `Data` sparse, as the suite's mosaic
//! row declares it), `frag-hecs`, `simple-mosaic`, `simple-hecs`, `insert-mosaic` (a fresh
//! world and `extend` of 10,000 entities with four components, as in
//! simple_insert), `spawn-loop-mosaic` (the same four-component entities
//! made by a loop of `World::spawn`, as a user writes it; `spawn-one-mosaic`
//! the same with one component; `spawn-loop-hecs` and `spawn-one-hecs`
//! are hecs's loops: about 490 and 244 instructions a spawn for mosaic,
//! 834 and 292 for hecs, of which the columns' growth is a large part:
//! realloc's copy, which callgrind counts a byte at a time),
//! `addrem-sparse-mosaic`,
//! `addrem-table-mosaic`, `addrem-hecs` (add_remove's `N` counts whole
//! insert-all-then-remove-all passes over 10,000 entities), and
//! `executor-{1000,6000}-{single,parallel}` (benches/schedule.rs's
//! executor_1000/6000: that many empty systems, run by either executor; the
//! parallel executor's adaptive bookkeeping is the difference), and
//! `random-get-mosaic` (random_get: `get` then `get_mut` of each of 10,000
//! entities in a scattered order; about 28 instructions a call: the
//! type's column hint, a pointer to the column its last lookup found; the
//! entity's slot; the column's archetype, `TypeId` and length checked; the
//! value). Disabling's cost (issue #20):
//! `simple-for-mosaic` and `frag-for-mosaic` (and the `for_each` forms
//! `simple-mosaic`, `frag-mosaic`) with a suffix `-disabled-none` run in a
//! world where [`Disabled`] is registered and was used, but no entity is
//! disabled now; with `-disabled-1pct`, every 100th entity is disabled.
//! `addrem-table-mosaic` and `addrem-sparse-mosaic` take the same suffixes:
//! the insert/remove path's cost once disabling is in use (a bundle without
//! the marker pays one branch for it).
//! `despawn-mosaic` is the suite's despawn row: `N` rounds of despawning
//! 10,000 `(Position, Velocity)` entities one by one with
//! `World::despawn`; each round's `spawn_batch` into the same kept world
//! (so ids are recycled, as in the suite) is outside the count;
//! `despawn-hecs` is the same with hecs.

use std::hint::black_box;

use mosaic::prelude::*;

#[derive(Component, Clone, Copy)]
struct Data(f32);

/// fragmented_iter's `Data` declared sparse, as the suite's mosaic row does.
#[derive(Component, Clone, Copy)]
#[component(storage = "sparse")]
struct SparseData(f32);

#[derive(Component, Clone, Copy)]
struct Position(f32, f32, f32);

#[derive(Component, Clone, Copy)]
struct Velocity(f32, f32, f32);

macro_rules! frag_types {
    ($($name:ident),*) => {
        $(
            #[derive(Component, Clone, Copy)]
            struct $name(#[allow(dead_code)] f32);
        )*

        fn frag_world_mosaic() -> World {
            let mut world = World::new();
            $(world.spawn_batch((0..20).map(|_| ($name(0.0), Data(1.0))));)*
            world
        }

        fn frag_world_sparse_mosaic() -> World {
            let mut world = World::new();
            $(world.spawn_batch((0..20).map(|_| ($name(0.0), SparseData(1.0))));)*
            world
        }

        fn frag_world_hecs() -> hecs::World {
            let mut world = hecs::World::new();
            $(world.spawn_batch((0..20).map(|_| ($name(0.0), Data(1.0))));)*
            world
        }
    };
}

frag_types!(
    A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
);

#[derive(Component, Clone, Copy)]
struct AddRemoveA(#[allow(dead_code)] f32);

#[derive(Component, Clone, Copy)]
#[component(storage = "sparse")]
struct SparseB(#[allow(dead_code)] f32);

#[derive(Component, Clone, Copy)]
struct TableB(#[allow(dead_code)] f32);

#[inline(never)]
fn measured_frag_mosaic(world: &mut World, q: &mut QueryState<&mut Data>, n: usize) {
    for _ in 0..n {
        q.iter_mut(black_box(&mut *world)).for_each(|d| d.0 *= 2.0);
    }
}

#[inline(never)]
fn measured_frag_sparse_mosaic(world: &mut World, q: &mut QueryState<&mut SparseData>, n: usize) {
    for _ in 0..n {
        q.iter_mut(black_box(&mut *world)).for_each(|d| d.0 *= 2.0);
    }
}

#[inline(never)]
fn measured_frag_hecs(world: &mut hecs::World, n: usize) {
    for _ in 0..n {
        black_box(&mut *world)
            .query_mut::<&mut Data>()
            .into_iter()
            .for_each(|d| d.0 *= 2.0);
    }
}

#[inline(never)]
fn measured_simple_mosaic(
    world: &mut World,
    q: &mut QueryState<(&Velocity, &mut Position)>,
    n: usize,
) {
    for _ in 0..n {
        q.iter_mut(black_box(&mut *world)).for_each(|(v, p)| {
            p.0 += v.0;
            p.1 += v.1;
            p.2 += v.2;
        });
    }
}

#[inline(never)]
fn measured_simple_hecs(world: &mut hecs::World, n: usize) {
    for _ in 0..n {
        black_box(&mut *world)
            .query_mut::<(&Velocity, &mut Position)>()
            .into_iter()
            .for_each(|(v, p)| {
                p.0 += v.0;
                p.1 += v.1;
                p.2 += v.2;
            });
    }
}

/// The `for`-loop forms: what a user writes after reading the guide.
#[inline(never)]
fn measured_simple_for_mosaic(
    world: &mut World,
    q: &mut QueryState<(&Velocity, &mut Position)>,
    n: usize,
) {
    for _ in 0..n {
        for (v, p) in q.iter_mut(black_box(&mut *world)) {
            p.0 += v.0;
            p.1 += v.1;
            p.2 += v.2;
        }
    }
}

/// simple_iter's query as a `#[derive(QueryData)]` struct: the same fields
/// as the tuple, so the same instructions are expected.
#[derive(QueryData)]
struct Mover<'w> {
    vel: &'w Velocity,
    pos: &'w mut Position,
}

#[inline(never)]
fn measured_simple_derive_mosaic(world: &mut World, q: &mut QueryState<Mover>, n: usize) {
    for _ in 0..n {
        q.iter_mut(black_box(&mut *world)).for_each(|m| {
            m.pos.0 += m.vel.0;
            m.pos.1 += m.vel.1;
            m.pos.2 += m.vel.2;
        });
    }
}

#[inline(never)]
fn measured_simple_derive_for_mosaic(world: &mut World, q: &mut QueryState<Mover>, n: usize) {
    for _ in 0..n {
        for m in q.iter_mut(black_box(&mut *world)) {
            m.pos.0 += m.vel.0;
            m.pos.1 += m.vel.1;
            m.pos.2 += m.vel.2;
        }
    }
}

#[inline(never)]
fn measured_simple_for_hecs(world: &mut hecs::World, n: usize) {
    for _ in 0..n {
        for (v, p) in black_box(&mut *world).query_mut::<(&Velocity, &mut Position)>() {
            p.0 += v.0;
            p.1 += v.1;
            p.2 += v.2;
        }
    }
}

#[inline(never)]
fn measured_frag_for_mosaic<T: Component + Doubled>(
    world: &mut World,
    q: &mut QueryState<&mut T>,
    n: usize,
) {
    for _ in 0..n {
        for d in q.iter_mut(black_box(&mut *world)) {
            d.double();
        }
    }
}

#[inline(never)]
fn measured_frag_for_hecs(world: &mut hecs::World, n: usize) {
    for _ in 0..n {
        for d in black_box(&mut *world).query_mut::<&mut Data>() {
            d.0 *= 2.0;
        }
    }
}

/// fragmented_iter's one operation, for both `Data` storages.
trait Doubled {
    fn double(&mut self);
}

impl Doubled for Data {
    fn double(&mut self) {
        self.0 *= 2.0;
    }
}

impl Doubled for SparseData {
    fn double(&mut self) {
        self.0 *= 2.0;
    }
}

/// The schedule workload's systems, written with `for` loops.
mod sched {
    use mosaic::prelude::*;

    #[derive(Component)]
    pub struct A(pub f32);
    #[derive(Component)]
    pub struct B(pub f32);
    #[derive(Component)]
    pub struct C(pub f32);
    #[derive(Component)]
    pub struct D(pub f32);
    #[derive(Component)]
    pub struct E(pub f32);

    pub fn ab(mut query: Query<(&mut A, &mut B)>) {
        for (a, b) in query.iter_mut() {
            std::mem::swap(&mut a.0, &mut b.0);
        }
    }

    pub fn cd(mut query: Query<(&mut C, &mut D)>) {
        for (c, d) in query.iter_mut() {
            std::mem::swap(&mut c.0, &mut d.0);
        }
    }

    pub fn ce(mut query: Query<(&mut C, &mut E)>) {
        for (c, e) in query.iter_mut() {
            std::mem::swap(&mut c.0, &mut e.0);
        }
    }

    pub fn world() -> (World, Schedule) {
        let mut world = World::new();
        let n = 10_000;
        world.spawn_batch((0..n).map(|_| (A(0.0), B(0.0))));
        world.spawn_batch((0..n).map(|_| (A(0.0), B(0.0), C(0.0))));
        world.spawn_batch((0..n).map(|_| (A(0.0), B(0.0), C(0.0), D(0.0))));
        world.spawn_batch((0..n).map(|_| (A(0.0), B(0.0), C(0.0), E(0.0))));
        let mut schedule = Schedule::new();
        // One thread, so callgrind's count covers every system.
        schedule.set_executor(ExecutorKind::SingleThreaded);
        schedule.add_system("ab", ab);
        schedule.add_system("cd", cd);
        schedule.add_system("ce", ce);
        (world, schedule)
    }
}

#[inline(never)]
fn measured_schedule_for_mosaic(world: &mut World, schedule: &mut Schedule, n: usize) {
    for _ in 0..n {
        schedule.run(black_box(&mut *world));
    }
}

#[derive(Component, Clone, Copy)]
struct Transform(#[allow(dead_code)] [f32; 16]);

#[derive(Component, Clone, Copy)]
#[allow(dead_code)]
struct Rotation(f32, f32, f32);

#[inline(never)]
fn measured_insert_mosaic(n: usize) {
    for _ in 0..n {
        let mut world = World::new();
        world.extend((0..10_000).map(|_| {
            (
                Transform([1.0; 16]),
                Position(1.0, 0.0, 0.0),
                Rotation(1.0, 0.0, 0.0),
                Velocity(1.0, 0.0, 0.0),
            )
        }));
        black_box(&world);
    }
}

/// `insert-mosaic`'s work written as a user's loop of `World::spawn`.
#[inline(never)]
fn measured_spawn_loop_mosaic(n: usize) {
    for _ in 0..n {
        let mut world = World::new();
        for _ in 0..10_000 {
            black_box(world.spawn((
                Transform([1.0; 16]),
                Position(1.0, 0.0, 0.0),
                Rotation(1.0, 0.0, 0.0),
                Velocity(1.0, 0.0, 0.0),
            )));
        }
        black_box(&world);
    }
}

/// A loop of one-component `World::spawn`s.
#[inline(never)]
fn measured_spawn_one_mosaic(n: usize) {
    for _ in 0..n {
        let mut world = World::new();
        for _ in 0..10_000 {
            black_box(world.spawn(Position(1.0, 0.0, 0.0)));
        }
        black_box(&world);
    }
}

/// `spawn-loop-mosaic` with hecs: the same loop of `World::spawn`.
#[inline(never)]
fn measured_spawn_loop_hecs(n: usize) {
    for _ in 0..n {
        let mut world = hecs::World::new();
        for _ in 0..10_000 {
            black_box(world.spawn((
                Transform([1.0; 16]),
                Position(1.0, 0.0, 0.0),
                Rotation(1.0, 0.0, 0.0),
                Velocity(1.0, 0.0, 0.0),
            )));
        }
        black_box(&world);
    }
}

/// `spawn-one-mosaic` with hecs (a one-element tuple: hecs's bundles are
/// tuples).
#[inline(never)]
fn measured_spawn_one_hecs(n: usize) {
    for _ in 0..n {
        let mut world = hecs::World::new();
        for _ in 0..10_000 {
            black_box(world.spawn((Position(1.0, 0.0, 0.0),)));
        }
        black_box(&world);
    }
}

#[inline(never)]
fn measured_addrem_mosaic<C: Component + Copy>(
    world: &mut World,
    entities: &[Entity],
    value: C,
    n: usize,
) {
    for _ in 0..n {
        for &e in entities {
            world.insert_one(e, value).unwrap();
        }
        for &e in entities {
            world.remove_one::<C>(e).unwrap();
        }
    }
}

#[inline(never)]
fn measured_addrem_hecs(world: &mut hecs::World, entities: &[hecs::Entity], n: usize) {
    for _ in 0..n {
        for &e in entities {
            world.insert_one(e, TableB(0.0)).unwrap();
        }
        for &e in entities {
            world.remove_one::<TableB>(e).unwrap();
        }
    }
}

/// random_get: `get` then `get_mut` by entity, in a shuffled order.
#[inline(never)]
fn measured_random_get_mosaic(world: &mut World, order: &[Entity], n: usize) {
    for _ in 0..n {
        for &e in order {
            let v = black_box(&*world).get::<Velocity>(e).unwrap().0;
            world.get_mut::<Position>(e).unwrap().0 += v;
        }
    }
}

/// despawn: `World::despawn` of each entity, in spawn order.
#[inline(never)]
fn measured_despawn_mosaic(world: &mut World, entities: &[Entity]) {
    for &e in entities {
        black_box(&mut *world).despawn(e).unwrap();
    }
}

#[inline(never)]
fn measured_despawn_hecs(world: &mut hecs::World, entities: &[hecs::Entity]) {
    for &e in entities {
        black_box(&mut *world).despawn(e).unwrap();
    }
}

/// Prepares `world` for a `-disabled-*` workload: `Disabled` registered
/// and used, then either every 100th entity disabled (`one_percent`) or
/// none.
fn disable_for(world: &mut World, workload: &str) {
    let entities: Vec<Entity> = world.query::<Entity>().iter(world).collect();
    let one_percent = workload.ends_with("-disabled-1pct");
    for (i, &e) in entities.iter().enumerate() {
        if i % 100 == 50 {
            world.insert_one(e, Disabled).unwrap();
            if !one_percent {
                world.remove_one::<Disabled>(e).unwrap();
            }
        }
    }
    let expected = if one_percent {
        (entities.len() + 49) / 100
    } else {
        0
    };
    assert_eq!(world.disabled_count(), expected);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| "frag-mosaic".into());
    let n: usize = args.next().map_or(1000, |s| s.parse().expect("N"));
    let started = std::time::Instant::now();
    run(&workload, n);
    // Wall time too, for a quick look outside callgrind (noisy: use the
    // suite's report for figures).
    eprintln!(
        "{workload}: {:.3} us per run",
        started.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}

fn run(workload: &str, n: usize) {
    // The `-disabled-*` forms: the same workload after `disable_for`.
    if let Some(base) = workload
        .strip_suffix("-disabled-none")
        .or_else(|| workload.strip_suffix("-disabled-1pct"))
    {
        return match base {
            "frag-for-mosaic" | "frag-mosaic" => {
                let mut world = frag_world_mosaic();
                disable_for(&mut world, workload);
                let mut q = world.query::<&mut Data>();
                if base == "frag-mosaic" {
                    measured_frag_mosaic(&mut world, &mut q, n);
                } else {
                    measured_frag_for_mosaic(&mut world, &mut q, n);
                }
            }
            "simple-for-mosaic" | "simple-mosaic" => {
                let mut world = World::new();
                world.spawn_batch(
                    (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
                );
                disable_for(&mut world, workload);
                let mut q = world.query::<(&Velocity, &mut Position)>();
                if base == "simple-mosaic" {
                    measured_simple_mosaic(&mut world, &mut q, n);
                } else {
                    measured_simple_for_mosaic(&mut world, &mut q, n);
                }
            }
            "addrem-table-mosaic" | "addrem-sparse-mosaic" => {
                let mut world = World::new();
                let entities = world.spawn_batch((0..10_000).map(|_| (AddRemoveA(0.0),)));
                disable_for(&mut world, workload);
                if base == "addrem-sparse-mosaic" {
                    measured_addrem_mosaic(&mut world, &entities, SparseB(0.0), n);
                } else {
                    measured_addrem_mosaic(&mut world, &entities, TableB(0.0), n);
                }
            }
            other => panic!("no -disabled form of {other}"),
        };
    }
    match workload {
        "frag-mosaic" => {
            let mut world = frag_world_mosaic();
            let mut q = world.query::<&mut Data>();
            measured_frag_mosaic(&mut world, &mut q, n);
        }
        "frag-sparse-mosaic" => {
            let mut world = frag_world_sparse_mosaic();
            let mut q = world.query::<&mut SparseData>();
            measured_frag_sparse_mosaic(&mut world, &mut q, n);
        }
        "frag-hecs" => measured_frag_hecs(&mut frag_world_hecs(), n),
        "simple-mosaic" => {
            let mut world = World::new();
            world.spawn_batch(
                (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
            );
            let mut q = world.query::<(&Velocity, &mut Position)>();
            measured_simple_mosaic(&mut world, &mut q, n);
        }
        "simple-hecs" => {
            let mut world = hecs::World::new();
            world.spawn_batch(
                (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
            );
            measured_simple_hecs(&mut world, n);
        }
        "random-get-mosaic" => {
            let mut world = World::new();
            let mut order = world.spawn_batch(
                (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
            );
            // A fixed stride visits every entity once, out of order.
            order = (0..order.len())
                .map(|i| order[i * 7919 % order.len()])
                .collect();
            measured_random_get_mosaic(&mut world, &order, n);
        }
        "simple-for-mosaic" => {
            let mut world = World::new();
            world.spawn_batch(
                (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
            );
            let mut q = world.query::<(&Velocity, &mut Position)>();
            measured_simple_for_mosaic(&mut world, &mut q, n);
        }
        "simple-derive-mosaic" | "simple-derive-for-mosaic" => {
            let mut world = World::new();
            world.spawn_batch(
                (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
            );
            let mut q = world.query::<Mover>();
            if workload == "simple-derive-mosaic" {
                measured_simple_derive_mosaic(&mut world, &mut q, n);
            } else {
                measured_simple_derive_for_mosaic(&mut world, &mut q, n);
            }
        }
        "simple-for-hecs" => {
            let mut world = hecs::World::new();
            world.spawn_batch(
                (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
            );
            measured_simple_for_hecs(&mut world, n);
        }
        "frag-for-mosaic" => {
            let mut world = frag_world_mosaic();
            let mut q = world.query::<&mut Data>();
            measured_frag_for_mosaic(&mut world, &mut q, n);
        }
        "frag-sparse-for-mosaic" => {
            let mut world = frag_world_sparse_mosaic();
            let mut q = world.query::<&mut SparseData>();
            measured_frag_for_mosaic(&mut world, &mut q, n);
        }
        "frag-for-hecs" => measured_frag_for_hecs(&mut frag_world_hecs(), n),
        "schedule-for-mosaic" => {
            let (mut world, mut schedule) = sched::world();
            measured_schedule_for_mosaic(&mut world, &mut schedule, n);
        }
        "executor-1000-single"
        | "executor-1000-parallel"
        | "executor-6000-single"
        | "executor-6000-parallel" => {
            let systems = if workload.contains("1000") {
                1_000
            } else {
                6_000
            };
            let mut world = World::new();
            let mut schedule = Schedule::new();
            schedule.set_executor(if workload.ends_with("parallel") {
                ExecutorKind::Parallel
            } else {
                ExecutorKind::SingleThreaded
            });
            for i in 0..systems {
                schedule.add_system(format!("empty_{i}"), || {});
            }
            schedule.run(&mut world); // plans it
            measured_schedule_for_mosaic(&mut world, &mut schedule, n);
        }
        "insert-mosaic" => measured_insert_mosaic(n),
        "spawn-loop-mosaic" => measured_spawn_loop_mosaic(n),
        "spawn-one-mosaic" => measured_spawn_one_mosaic(n),
        "spawn-loop-hecs" => measured_spawn_loop_hecs(n),
        "spawn-one-hecs" => measured_spawn_one_hecs(n),
        "addrem-sparse-mosaic" | "addrem-table-mosaic" => {
            let mut world = World::new();
            let entities = world.spawn_batch((0..10_000).map(|_| (AddRemoveA(0.0),)));
            if workload == "addrem-sparse-mosaic" {
                measured_addrem_mosaic(&mut world, &entities, SparseB(0.0), n);
            } else {
                measured_addrem_mosaic(&mut world, &entities, TableB(0.0), n);
            }
        }
        "despawn-mosaic" => {
            let mut world = World::new();
            for _ in 0..n {
                let entities = world.spawn_batch(
                    (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
                );
                measured_despawn_mosaic(&mut world, &entities);
            }
        }
        "despawn-hecs" => {
            let mut world = hecs::World::new();
            for _ in 0..n {
                let entities: Vec<_> = world
                    .spawn_batch(
                        (0..10_000).map(|_| (Position(1.0, 0.0, 0.0), Velocity(1.0, 0.0, 0.0))),
                    )
                    .collect();
                measured_despawn_hecs(&mut world, &entities);
            }
        }
        "addrem-hecs" => {
            let mut world = hecs::World::new();
            let entities: Vec<_> = world
                .spawn_batch((0..10_000).map(|_| (AddRemoveA(0.0),)))
                .collect();
            measured_addrem_hecs(&mut world, &entities, n);
        }
        other => panic!("unknown workload {other}"),
    }
}
