//! shipyard: sparse-set storage, views borrowed by systems, rayon workloads.
//!
//! Written as the shipyard docs suggest: `World::bulk_add_entity`, `for`
//! loops over `View`/`ViewMut` iterators inside `World::run` (`!&frozen`
//! excludes the marker in join_filter), `Get` on the views for random_get,
//! `World::delete_entity` for despawn, `par_iter` for parallel work, a
//! `Workload` (systems batched onto rayon) for schedule, and
//! `EntitiesView::add_component` / `ViewMut` `Remove` inside one `run` for
//! add_remove. No serialization rows (shipyard's `serde1` feature serializes
//! single views, not a world round trip).

use std::hint::black_box;

use ::shipyard::{
    Component, EntitiesView, EntityId, Get, IntoIter, Remove, View, ViewMut, Workload, World,
};
use cgmath::{Matrix4, Vector3};
use rayon::iter::ParallelIterator;

use crate::data::*;

#[derive(Component, Clone, Copy)]
struct Transform(#[allow(dead_code)] Matrix4<f32>);
#[derive(Component, Clone, Copy)]
struct Position(Vector3<f32>);
#[derive(Component, Clone, Copy)]
struct Rotation(#[allow(dead_code)] Vector3<f32>);
#[derive(Component, Clone, Copy)]
struct Velocity(Vector3<f32>);
#[derive(Component, Clone, Copy)]
struct Affine(Matrix4<f32>);

fn simple_bundle() -> (Transform, Position, Rotation, Velocity) {
    (
        Transform(transform()),
        Position(unit()),
        Rotation(unit()),
        Velocity(unit()),
    )
}

/// Spawn 10k entities with four components into a fresh world.
pub struct SimpleInsert(usize);

impl SimpleInsert {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    /// Spawn `n` entities per run instead of 10k (the report's RSS table).
    pub fn with_entities(n: usize) -> Self {
        Self(n)
    }

    pub fn run(&mut self) {
        let mut world = World::new();
        world.bulk_add_entity((0..self.0).map(|_| simple_bundle()));
        black_box(&world);
    }
}

/// position += velocity over 10k entities.
pub struct SimpleIter(World);

impl SimpleIter {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let mut world = World::new();
        world.bulk_add_entity((0..n).map(|_| simple_bundle()));
        Self(world)
    }

    pub fn run(&mut self) {
        self.0.run(
            |velocities: View<Velocity>, mut positions: ViewMut<Position>| {
                for (velocity, position) in (&velocities, &mut positions).iter() {
                    integrate(&mut position.0, &velocity.0);
                }
            },
        );
    }
}

#[derive(Component)]
struct Data(f32);

macro_rules! frag_types {
    ($world:ident; $($name:ident),*) => {
        $(
            #[derive(Component)]
            struct $name(#[allow(dead_code)] f32);
            $world.bulk_add_entity((0..FRAG_ENTITIES_PER_TYPE).map(|_| ($name(0.0), Data(1.0))));
        )*
    };
}

/// Double `Data` across 26 "archetypes" of 20 entities (one sparse set here).
pub struct FragIter(World);

impl FragIter {
    pub fn new() -> Self {
        let mut world = World::new();
        frag_types!(world; A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
        Self(world)
    }

    pub fn run(&mut self) {
        self.0.run(|mut data: ViewMut<Data>| {
            for data in (&mut data).iter() {
                double(&mut data.0);
            }
        });
    }
}

#[derive(Component, Clone, Copy)]
struct Mass(f32);
#[derive(Component)]
struct Frozen;

/// position += velocity × mass over the 5k of 10k entities without `Frozen`.
pub struct JoinFilter(World);

impl JoinFilter {
    pub fn new() -> Self {
        let mut world = World::new();
        let entities: Vec<EntityId> = world
            .bulk_add_entity(
                (0..JOIN_ENTITIES).map(|_| (Position(unit()), Velocity(unit()), Mass(mass()))),
            )
            .collect();
        for (i, &entity) in entities.iter().enumerate() {
            if frozen(i) {
                world.add_component(entity, Frozen);
            }
        }
        Self(world)
    }

    pub fn run(&mut self) {
        self.0.run(
            |mut positions: ViewMut<Position>,
             velocities: View<Velocity>,
             masses: View<Mass>,
             frozen: View<Frozen>| {
                for (position, velocity, mass, ()) in
                    (&mut positions, &velocities, &masses, !&frozen).iter()
                {
                    integrate_mass(&mut position.0, &velocity.0, mass.0);
                }
            },
        );
    }
}

/// For each of 10k entities, in a fixed shuffled order: read `Velocity`
/// with `Get` on a `View`, add it to `Position` through `Get` on a `ViewMut`.
pub struct RandomGet {
    world: World,
    order: Vec<EntityId>,
}

impl RandomGet {
    pub fn new() -> Self {
        let mut world = World::new();
        let mut order: Vec<EntityId> = world
            .bulk_add_entity((0..RANDOM_GET_ENTITIES).map(|_| (Position(unit()), Velocity(unit()))))
            .collect();
        shuffle(&mut order);
        Self { world, order }
    }

    pub fn run(&mut self) {
        let order = &self.order;
        self.world.run(
            |velocities: View<Velocity>, mut positions: ViewMut<Position>| {
                for &entity in order {
                    let velocity = velocities.get(entity).unwrap().0;
                    (&mut positions).get(entity).unwrap().0 += velocity;
                }
            },
        );
    }
}

/// Despawn 10k entities with (Position, Velocity); `prepare` (untimed)
/// spawns them into the kept world.
pub struct Despawn {
    world: World,
    entities: Vec<EntityId>,
}

impl Despawn {
    pub fn new() -> Self {
        Self {
            world: World::new(),
            entities: Vec::new(),
        }
    }

    pub fn prepare(&mut self) {
        self.entities.clear();
        self.entities.extend(
            self.world.bulk_add_entity(
                (0..DESPAWN_ENTITIES).map(|_| (Position(unit()), Velocity(unit()))),
            ),
        );
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            assert!(self.world.delete_entity(entity));
        }
    }
}

/// Parallel: invert a matrix 100 times per entity over 1000 entities.
pub struct HeavyCompute(World);

impl HeavyCompute {
    pub fn new() -> Self {
        let mut world = World::new();
        world.bulk_add_entity((0..HEAVY_ENTITIES).map(|_| {
            (
                Affine(heavy_matrix()),
                Position(unit()),
                Rotation(unit()),
                Velocity(unit()),
            )
        }));
        Self(world)
    }

    pub fn run(&mut self) {
        self.0.run(
            |mut positions: ViewMut<Position>, mut affines: ViewMut<Affine>| {
                (&mut positions, &mut affines)
                    .par_iter()
                    .for_each(|(position, affine)| heavy_kernel(&mut affine.0, &mut position.0));
            },
        );
    }
}

mod sched {
    use super::*;

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

    pub fn ab(mut a: ViewMut<A>, mut b: ViewMut<B>) {
        for (a, b) in (&mut a, &mut b).iter() {
            std::mem::swap(&mut a.0, &mut b.0);
        }
    }

    pub fn cd(mut c: ViewMut<C>, mut d: ViewMut<D>) {
        for (c, d) in (&mut c, &mut d).iter() {
            std::mem::swap(&mut c.0, &mut d.0);
        }
    }

    pub fn ce(mut c: ViewMut<C>, mut e: ViewMut<E>) {
        for (c, e) in (&mut c, &mut e).iter() {
            std::mem::swap(&mut c.0, &mut e.0);
        }
    }
}

/// Three systems (ab, cd, ce) over 40k entities in four groups.
pub struct Schedule(World);

impl Schedule {
    pub fn new() -> Self {
        use sched::*;
        let n = SCHEDULE_ENTITIES;
        let mut world = World::new();
        world.bulk_add_entity((0..n).map(|_| (A(0.0), B(0.0))));
        world.bulk_add_entity((0..n).map(|_| (A(0.0), B(0.0), C(0.0))));
        world.bulk_add_entity((0..n).map(|_| (A(0.0), B(0.0), C(0.0), D(0.0))));
        world.bulk_add_entity((0..n).map(|_| (A(0.0), B(0.0), C(0.0), E(0.0))));
        Workload::new("schedule")
            .with_system(ab)
            .with_system(cd)
            .with_system(ce)
            .add_to_world(&world)
            .unwrap();
        Self(world)
    }

    pub fn run(&mut self) {
        self.0.run_workload("schedule").unwrap();
    }
}

#[derive(Component)]
struct AddRemoveA(#[allow(dead_code)] f32);
#[derive(Component)]
struct AddRemoveB(#[allow(dead_code)] f32);

/// Add B to 10k entities, then remove it again.
pub struct AddRemove {
    world: World,
    entities: Vec<EntityId>,
}

impl AddRemove {
    pub fn new() -> Self {
        Self::with_entities(ADD_REMOVE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let mut world = World::new();
        let entities = world
            .bulk_add_entity((0..n).map(|_| (AddRemoveA(0.0),)))
            .collect();
        Self { world, entities }
    }

    pub fn run(&mut self) {
        let entities = &self.entities;
        self.world
            .run(|all: EntitiesView, mut bs: ViewMut<AddRemoveB>| {
                for &entity in entities {
                    all.add_component(entity, &mut bs, AddRemoveB(0.0));
                }
                for &entity in entities {
                    black_box(bs.remove(entity));
                }
            });
    }
}
