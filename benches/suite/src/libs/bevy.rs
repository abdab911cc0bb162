//! bevy_ecs: archetypal tables (default) plus opt-in sparse-set storage,
//! cached `QueryState`, multi-threaded schedule executor.
//!
//! Written as the bevy docs suggest: `World::spawn_batch`, a `QueryState` built
//! once and reused and iterated with `for` loops (`world.query_filtered` with
//! `Without<Frozen>` for join_filter), `World::get` / `get_mut` for
//! random_get, `World::despawn`, `par_iter_mut` on the `ComputeTaskPool`,
//! systems added to a `Schedule` (multi-threaded executor with the
//! `multi_threaded` feature), and `EntityWorldMut::insert` / `remove` for
//! add_remove. Every component uses the default table storage (the headline
//! rows are each library's default form; bevy's opt-in `SparseSet` storage,
//! like mosaic's, is a tuning choice).
//! No serialization rows: bevy's route is reflection + `bevy_scene`, which pulls
//! in the asset stack; the upstream suite left those rows out as well.

use std::hint::black_box;

use bevy_ecs::component::Component;
use bevy_ecs::entity::Entity;
use bevy_ecs::query::{QueryState, Without};
use bevy_ecs::schedule::Schedule as BevySchedule;
use bevy_ecs::system::Query;
use bevy_ecs::world::World;
use bevy_tasks::{ComputeTaskPool, TaskPool};
use cgmath::{Matrix4, Vector3};

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
        world.spawn_batch((0..self.0).map(|_| simple_bundle()));
        black_box(&world);
    }
}

/// position += velocity over 10k entities.
pub struct SimpleIter {
    world: World,
    query: QueryState<(&'static Velocity, &'static mut Position)>,
}

impl SimpleIter {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let mut world = World::new();
        world.spawn_batch((0..n).map(|_| simple_bundle()));
        let query = world.query::<(&Velocity, &mut Position)>();
        Self { world, query }
    }

    pub fn run(&mut self) {
        for (velocity, mut position) in self.query.iter_mut(&mut self.world) {
            integrate(&mut position.0, &velocity.0);
        }
    }
}

#[derive(Component)]
struct Data(f32);

macro_rules! frag_types {
    ($world:ident; $($name:ident),*) => {
        $(
            #[derive(Component)]
            struct $name(#[allow(dead_code)] f32);
            $world.spawn_batch((0..FRAG_ENTITIES_PER_TYPE).map(|_| ($name(0.0), Data(1.0))));
        )*
    };
}

/// Double `Data` across 26 archetypes of 20 entities.
pub struct FragIter {
    world: World,
    query: QueryState<&'static mut Data>,
}

impl FragIter {
    pub fn new() -> Self {
        let mut world = World::new();
        frag_types!(world; A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
        let query = world.query::<&mut Data>();
        Self { world, query }
    }

    pub fn run(&mut self) {
        for mut data in self.query.iter_mut(&mut self.world) {
            double(&mut data.0);
        }
    }
}

#[derive(Component, Clone, Copy)]
struct Mass(f32);
#[derive(Component)]
struct Frozen;

type JoinQuery =
    QueryState<(&'static mut Position, &'static Velocity, &'static Mass), Without<Frozen>>;

/// position += velocity × mass over the 5k of 10k entities without `Frozen`.
pub struct JoinFilter {
    world: World,
    query: JoinQuery,
}

impl JoinFilter {
    pub fn new() -> Self {
        let mut world = World::new();
        let entities: Vec<Entity> = world
            .spawn_batch(
                (0..JOIN_ENTITIES).map(|_| (Position(unit()), Velocity(unit()), Mass(mass()))),
            )
            .collect();
        for (i, &entity) in entities.iter().enumerate() {
            if frozen(i) {
                world.entity_mut(entity).insert(Frozen);
            }
        }
        let query = world.query_filtered::<(&mut Position, &Velocity, &Mass), Without<Frozen>>();
        Self { world, query }
    }

    pub fn run(&mut self) {
        for (mut position, velocity, mass) in self.query.iter_mut(&mut self.world) {
            integrate_mass(&mut position.0, &velocity.0, mass.0);
        }
    }
}

/// For each of 10k entities, in a fixed shuffled order: read `Velocity`
/// with `World::get`, add it to `Position` through `World::get_mut`.
pub struct RandomGet {
    world: World,
    order: Vec<Entity>,
}

impl RandomGet {
    pub fn new() -> Self {
        let mut world = World::new();
        let mut order: Vec<Entity> = world
            .spawn_batch((0..RANDOM_GET_ENTITIES).map(|_| (Position(unit()), Velocity(unit()))))
            .collect();
        shuffle(&mut order);
        Self { world, order }
    }

    pub fn run(&mut self) {
        for &entity in &self.order {
            let velocity = self.world.get::<Velocity>(entity).unwrap().0;
            self.world.get_mut::<Position>(entity).unwrap().0 += velocity;
        }
    }
}

/// Despawn 10k entities with (Position, Velocity); `prepare` (untimed)
/// spawns them into the kept world.
pub struct Despawn {
    world: World,
    entities: Vec<Entity>,
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
            self.world
                .spawn_batch((0..DESPAWN_ENTITIES).map(|_| (Position(unit()), Velocity(unit())))),
        );
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            assert!(self.world.despawn(entity));
        }
    }
}

/// Parallel: invert a matrix 100 times per entity over 1000 entities.
pub struct HeavyCompute {
    world: World,
    query: QueryState<(&'static mut Position, &'static mut Affine)>,
}

impl HeavyCompute {
    pub fn new() -> Self {
        ComputeTaskPool::get_or_init(TaskPool::default);
        let mut world = World::new();
        world.spawn_batch((0..HEAVY_ENTITIES).map(|_| {
            (
                Affine(heavy_matrix()),
                Position(unit()),
                Rotation(unit()),
                Velocity(unit()),
            )
        }));
        let query = world.query::<(&mut Position, &mut Affine)>();
        Self { world, query }
    }

    pub fn run(&mut self) {
        self.query
            .par_iter_mut(&mut self.world)
            .for_each(|(mut position, mut affine)| heavy_kernel(&mut affine.0, &mut position.0));
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

    pub fn ab(mut query: Query<(&mut A, &mut B)>) {
        for (mut a, mut b) in query.iter_mut() {
            std::mem::swap(&mut a.0, &mut b.0);
        }
    }

    pub fn cd(mut query: Query<(&mut C, &mut D)>) {
        for (mut c, mut d) in query.iter_mut() {
            std::mem::swap(&mut c.0, &mut d.0);
        }
    }

    pub fn ce(mut query: Query<(&mut C, &mut E)>) {
        for (mut c, mut e) in query.iter_mut() {
            std::mem::swap(&mut c.0, &mut e.0);
        }
    }
}

/// Three systems (ab, cd, ce) over 40k entities in four archetypes.
pub struct Schedule {
    world: World,
    schedule: BevySchedule,
}

impl Schedule {
    pub fn new() -> Self {
        use sched::*;
        let mut world = World::new();
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0), D(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0), E(0.0))));
        let mut schedule = BevySchedule::default();
        schedule.add_systems((ab, cd, ce));
        Self { world, schedule }
    }

    pub fn run(&mut self) {
        self.schedule.run(&mut self.world);
    }
}

#[derive(Component)]
struct AddRemoveA(#[allow(dead_code)] f32);
#[derive(Component)]
struct AddRemoveB(#[allow(dead_code)] f32);

/// Add B to 10k entities, then remove it again.
pub struct AddRemove {
    world: World,
    entities: Vec<Entity>,
}

impl AddRemove {
    pub fn new() -> Self {
        Self::with_entities(ADD_REMOVE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..n).map(|_| AddRemoveA(0.0))).collect();
        Self { world, entities }
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world.entity_mut(entity).insert(AddRemoveB(0.0));
        }
        for &entity in &self.entities {
            self.world.entity_mut(entity).remove::<AddRemoveB>();
        }
    }
}
