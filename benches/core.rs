//! Side-by-side micro-benchmarks of mosaic against hecs (and, where it makes
//! sense, a plain `Vec` baseline) on the public `ecs_bench_suite` workloads:
//! `simple_insert`, `simple_iter`, `fragmented_iter` and `add_remove` (plus
//! `add_remove_sparse`, add_remove with `B` in mosaic's sparse-set storage).
//!
//! Each workload is one criterion group, so the peers are reported next to
//! each other (`simple_iter/mosaic`, `simple_iter/hecs`, `simple_iter/plain_vec`).
//! The workloads mirror `benches/suite` (sizes from `benches/suite/src/data.rs`,
//! hecs calls from `benches/suite/src/libs/hecs.rs`); both libraries store the
//! very same component types.
//!
//! Run with:
//!
//! ```text
//! cargo bench --bench core
//! cargo bench --bench core -- simple_iter        # one workload only
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use mosaic::prelude::*;

/// simple_insert / simple_iter: entities with (Transform, Position, Rotation, Velocity).
const SIMPLE_ENTITIES: usize = 10_000;
/// fragmented_iter: entities per archetype (26 archetypes, A..Z each paired with Data).
const FRAG_ENTITIES_PER_TYPE: usize = 20;
/// add_remove: entities that get B added and then removed.
const ADD_REMOVE_ENTITIES: usize = 10_000;

/// A 4x4 matrix (the suite's `cgmath::Matrix4<f32>`), never read by the workloads.
#[derive(Component, Clone, Copy)]
struct Transform(#[allow(dead_code)] [[f32; 4]; 4]);

/// A 3-vector position, integrated by simple_iter.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Position {
    x: f32,
    y: f32,
    z: f32,
}

/// A 3-vector rotation, carried along but never read.
#[derive(Component, Clone, Copy)]
#[allow(dead_code)]
struct Rotation {
    x: f32,
    y: f32,
    z: f32,
}

/// A 3-vector velocity, read by simple_iter.
#[derive(Component, Clone, Copy)]
struct Velocity {
    x: f32,
    y: f32,
    z: f32,
}

/// The identity matrix (`Matrix4::from_scale(1.0)` in the suite).
fn identity() -> [[f32; 4]; 4] {
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ]
}

/// The four-component bundle of simple_insert / simple_iter, initialised like
/// the suite (`Vector3::unit_x()` for the vectors).
fn simple_bundle() -> (Transform, Position, Rotation, Velocity) {
    (
        Transform(identity()),
        Position {
            x: 1.0,
            y: 0.0,
            z: 0.0,
        },
        Rotation {
            x: 1.0,
            y: 0.0,
            z: 0.0,
        },
        Velocity {
            x: 1.0,
            y: 0.0,
            z: 0.0,
        },
    )
}

/// simple_iter's per-entity work: `position += velocity`.
#[inline(always)]
fn integrate(position: &mut Position, velocity: &Velocity) {
    position.x += velocity.x;
    position.y += velocity.y;
    position.z += velocity.z;
}

/// Criterion settings shared by every group: short enough that the whole
/// bench finishes well under two minutes.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

/// simple_insert: batch-spawn 10,000 four-component entities into a fresh
/// world. Measures archetype creation, column growth and entity allocation;
/// world construction and drop are inside the timing for both libraries, as in
/// the suite.
fn simple_insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_insert");
    group.bench_function("mosaic", |b| {
        b.iter(|| {
            let mut world = World::new();
            let entities = world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
            black_box(&entities);
            world
        })
    });
    group.bench_function("hecs", |b| {
        b.iter(|| {
            let mut world = hecs::World::new();
            // Dropping the batch iterator spawns every remaining entity (the suite's form).
            world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
            world
        })
    });
    group.finish();
}

/// simple_iter: `position += velocity` over 10,000 entities prepared once.
/// Measures dense iteration of two columns of one archetype; `plain_vec` is
/// the same loop over two `Vec`s, the floor any ECS can approach.
fn simple_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_iter");
    group.bench_function("mosaic", |b| {
        let mut world = World::new();
        world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
        let mut q = world.query::<(&Velocity, &mut Position)>();
        b.iter(|| {
            q.iter_mut(&mut world).for_each(|(v, p)| integrate(p, v));
        })
    });
    group.bench_function("hecs", |b| {
        let mut world = hecs::World::new();
        world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
        b.iter(|| {
            world
                .query_mut::<(&Velocity, &mut Position)>()
                .into_iter()
                .for_each(|(v, p)| integrate(p, v));
        })
    });
    group.bench_function("plain_vec", |b| {
        let (_, p, _, v) = simple_bundle();
        let mut positions = vec![p; SIMPLE_ENTITIES];
        let velocities = vec![v; SIMPLE_ENTITIES];
        b.iter(|| {
            black_box(&mut positions)
                .iter_mut()
                .zip(black_box(&velocities))
                .for_each(|(p, v)| integrate(p, v));
        })
    });
    group.finish();
}

/// fragmented_iter's shared component: doubled for every entity.
#[derive(Component, Clone, Copy)]
struct Data(f32);

/// Declares the 26 single-field marker components A..Z of fragmented_iter.
macro_rules! frag_types {
    ($($name:ident),*) => {
        $(
            /// One of fragmented_iter's 26 archetype-splitting components.
            #[derive(Component, Clone, Copy)]
            struct $name(#[allow(dead_code)] f32);
        )*

        /// A mosaic world with 20 `(X(0.0), Data(1.0))` entities for each type X in A..Z.
        fn frag_world_mosaic() -> World {
            let mut world = World::new();
            $(
                world.spawn_batch((0..FRAG_ENTITIES_PER_TYPE).map(|_| ($name(0.0), Data(1.0))));
            )*
            world
        }

        /// A hecs world with 20 `(X(0.0), Data(1.0))` entities for each type X in A..Z.
        fn frag_world_hecs() -> hecs::World {
            let mut world = hecs::World::new();
            $(
                world.spawn_batch((0..FRAG_ENTITIES_PER_TYPE).map(|_| ($name(0.0), Data(1.0))));
            )*
            world
        }
    };
}

frag_types!(
    A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
);

/// fragmented_iter: `data *= 2.0` over 26 archetypes of 20 entities each.
/// Measures per-archetype overhead of a query (matching, column lookup, loop
/// setup) rather than raw throughput.
fn fragmented_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("fragmented_iter");
    group.bench_function("mosaic", |b| {
        let mut world = frag_world_mosaic();
        let mut q = world.query::<&mut Data>();
        b.iter(|| {
            q.iter_mut(&mut world).for_each(|data| data.0 *= 2.0);
        })
    });
    group.bench_function("hecs", |b| {
        let mut world = frag_world_hecs();
        b.iter(|| {
            world
                .query_mut::<&mut Data>()
                .into_iter()
                .for_each(|data| data.0 *= 2.0);
        })
    });
    group.finish();
}

/// add_remove's always-present component.
#[derive(Component, Clone, Copy)]
struct AddRemoveA(#[allow(dead_code)] f32);

/// add_remove's component that is inserted and then removed again.
#[derive(Component, Clone, Copy)]
struct AddRemoveB(#[allow(dead_code)] f32);

/// add_remove: insert `B` into each of 10,000 `(A,)` entities one at a time,
/// then remove it from each again. Measures single-entity archetype moves
/// (both directions) including the entity-location lookup.
fn add_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_remove");
    group.bench_function("mosaic", |b| {
        let mut world = World::new();
        let entities: Vec<Entity> =
            world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (AddRemoveA(0.0),)));
        b.iter(|| {
            for &e in &entities {
                world.insert_one(e, AddRemoveB(0.0)).unwrap();
            }
            for &e in &entities {
                world.remove_one::<AddRemoveB>(e).unwrap();
            }
        })
    });
    group.bench_function("hecs", |b| {
        let mut world = hecs::World::new();
        let entities: Vec<hecs::Entity> = world
            .spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (AddRemoveA(0.0),)))
            .collect();
        b.iter(|| {
            for &e in &entities {
                world.insert_one(e, AddRemoveB(0.0)).unwrap();
            }
            for &e in &entities {
                world.remove_one::<AddRemoveB>(e).unwrap();
            }
        })
    });
    group.finish();
}

/// add_remove_sparse's toggled component, in sparse-set storage (what mosaic
/// documents for components that come and go; the suite's mosaic row uses it).
#[derive(Component, Clone, Copy)]
#[component(storage = "sparse")]
struct AddRemoveSparseB(#[allow(dead_code)] f32);

/// add_remove_sparse: add_remove with `B` stored in a sparse set in mosaic.
/// Inserting or removing it moves no table row, so this measures the
/// per-operation overhead of `insert_one`/`remove_one` itself. hecs (which
/// has only archetype storage) runs its add_remove beside it for scale.
fn add_remove_sparse(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_remove_sparse");
    group.bench_function("mosaic", |b| {
        let mut world = World::new();
        let entities: Vec<Entity> =
            world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (AddRemoveA(0.0),)));
        b.iter(|| {
            for &e in &entities {
                world.insert_one(e, AddRemoveSparseB(0.0)).unwrap();
            }
            for &e in &entities {
                black_box(world.remove_one::<AddRemoveSparseB>(e).unwrap());
            }
        })
    });
    group.bench_function("hecs", |b| {
        let mut world = hecs::World::new();
        let entities: Vec<hecs::Entity> = world
            .spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (AddRemoveA(0.0),)))
            .collect();
        b.iter(|| {
            for &e in &entities {
                world.insert_one(e, AddRemoveB(0.0)).unwrap();
            }
            for &e in &entities {
                black_box(world.remove_one::<AddRemoveB>(e).unwrap());
            }
        })
    });
    group.finish();
}

/// The criterion group runner, kept in a private module so the `pub fn` that
/// `criterion_group!` generates needs no doc comment of its own.
mod runner {
    use super::*;

    criterion_group! {
        name = benches;
        config = config();
        targets = simple_insert, simple_iter, fragmented_iter, add_remove, add_remove_sparse
    }
}

criterion_main!(runner::benches);
