//! flecs (flecs_ecs, the Rust binding of the C library): archetype tables,
//! cached queries, a pipeline of systems run by `World::progress`.
//!
//! Written as the flecs_ecs docs suggest: `World::entity_bulk` (flecs'
//! `ecs_bulk_init`) with one slice per component for bulk spawning, cached
//! queries (`query().set_cached().build()`, "the fastest way to iterate")
//! kept and run with `each` (flecs' idiomatic iteration; `.without(..)` for
//! join_filter), `EntityView::get` for random_get, `EntityView::destruct`
//! for despawn, multi-threaded systems (`par_each` +
//! `World::set_threads`) run by `World::progress_time(1.0)` for the parallel
//! rows, and `EntityView::set` / `remove` for add_remove. Default crate
//! features (the `flecs_safety_locks` runtime aliasing checks stay on).
//!
//! No serialization rows: flecs' world serializer is JSON through its own
//! reflection (`flecs_meta` / `flecs_json`), not serde, and it has no binary
//! format, so it would not measure the same thing as the RON/bincode rows.

use std::hint::black_box;

use cgmath::{Matrix4, Vector3};
use flecs_ecs::prelude::*;

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

/// Worker threads for the multi-threaded systems (one per core, like rayon).
fn threads() -> i32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as i32)
}

fn spawn_simple(world: &World, n: usize) {
    let transforms = vec![Transform(transform()); n];
    let positions = vec![Position(unit()); n];
    let rotations = vec![Rotation(unit()); n];
    let velocities = vec![Velocity(unit()); n];
    let entities = world
        .entity_bulk(n as u32)
        .set(&transforms)
        .set(&positions)
        .set(&rotations)
        .set(&velocities)
        .build();
    black_box(&entities);
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
        let world = World::new();
        spawn_simple(&world, self.0);
        black_box(&world);
    }
}

/// position += velocity over 10k entities.
pub struct SimpleIter {
    // Declared before `world`: a query is destroyed before its world.
    query: Query<(&'static Velocity, &'static mut Position)>,
    #[allow(dead_code)]
    world: World,
}

impl SimpleIter {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let world = World::new();
        spawn_simple(&world, n);
        let query = world
            .query::<(&Velocity, &mut Position)>()
            .set_cached()
            .build();
        Self { query, world }
    }

    pub fn run(&mut self) {
        self.query
            .each(|(velocity, position)| integrate(&mut position.0, &velocity.0));
    }
}

#[derive(Component, Clone, Copy)]
struct Data(f32);

macro_rules! frag_types {
    ($world:ident; $($name:ident),*) => {
        $(
            #[derive(Component, Clone, Copy)]
            struct $name(#[allow(dead_code)] f32);
            {
                let markers = vec![$name(0.0); FRAG_ENTITIES_PER_TYPE];
                let data = vec![Data(1.0); FRAG_ENTITIES_PER_TYPE];
                $world
                    .entity_bulk(FRAG_ENTITIES_PER_TYPE as u32)
                    .set(&markers)
                    .set(&data)
                    .build();
            }
        )*
    };
}

/// Double `Data` across 26 archetypes of 20 entities.
pub struct FragIter {
    query: Query<&'static mut Data>,
    #[allow(dead_code)]
    world: World,
}

impl FragIter {
    pub fn new() -> Self {
        let world = World::new();
        frag_types!(world; A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
        let query = world.query::<&mut Data>().set_cached().build();
        Self { query, world }
    }

    pub fn run(&mut self) {
        self.query.each(|data| double(&mut data.0));
    }
}

#[derive(Component, Clone, Copy)]
struct Mass(f32);
#[derive(Component)]
struct Frozen;

/// position += velocity × mass over the 5k of 10k entities without `Frozen`.
pub struct JoinFilter {
    query: Query<(&'static mut Position, &'static Velocity, &'static Mass)>,
    #[allow(dead_code)]
    world: World,
}

impl JoinFilter {
    pub fn new() -> Self {
        let world = World::new();
        let n = JOIN_ENTITIES;
        let positions = vec![Position(unit()); n];
        let velocities = vec![Velocity(unit()); n];
        let masses = vec![Mass(mass()); n];
        let entities = world
            .entity_bulk(n as u32)
            .set(&positions)
            .set(&velocities)
            .set(&masses)
            .build();
        for (i, &entity) in entities.iter().enumerate() {
            if frozen(i) {
                world.entity_from_id(entity).add(Frozen::id());
            }
        }
        let query = world
            .query::<(&mut Position, &Velocity, &Mass)>()
            .without(Frozen::id())
            .set_cached()
            .build();
        Self { query, world }
    }

    pub fn run(&mut self) {
        self.query.each(|(position, velocity, mass)| {
            integrate_mass(&mut position.0, &velocity.0, mass.0)
        });
    }
}

/// For each of 10k entities, in a fixed shuffled order: read `Velocity`
/// with `EntityView::get`, add it to `Position` through `get::<&mut _>`.
pub struct RandomGet {
    world: World,
    order: Vec<Entity>,
}

impl RandomGet {
    pub fn new() -> Self {
        let world = World::new();
        let n = RANDOM_GET_ENTITIES;
        let positions = vec![Position(unit()); n];
        let velocities = vec![Velocity(unit()); n];
        let mut order = world
            .entity_bulk(n as u32)
            .set(&positions)
            .set(&velocities)
            .build();
        shuffle(&mut order);
        Self { world, order }
    }

    pub fn run(&mut self) {
        for &entity in &self.order {
            let entity = self.world.entity_from_id(entity);
            let velocity = entity.get::<&Velocity>(|velocity| velocity.0);
            entity.get::<&mut Position>(|position| position.0 += velocity);
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
        let n = DESPAWN_ENTITIES;
        let positions = vec![Position(unit()); n];
        let velocities = vec![Velocity(unit()); n];
        self.entities = self
            .world
            .entity_bulk(n as u32)
            .set(&positions)
            .set(&velocities)
            .build();
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world.entity_from_id(entity).destruct();
        }
    }
}

/// Parallel: invert a matrix 100 times per entity over 1000 entities.
pub struct HeavyCompute(World);

impl HeavyCompute {
    pub fn new() -> Self {
        let world = World::new();
        let n = HEAVY_ENTITIES;
        let affines = vec![Affine(heavy_matrix()); n];
        let positions = vec![Position(unit()); n];
        let rotations = vec![Rotation(unit()); n];
        let velocities = vec![Velocity(unit()); n];
        world
            .entity_bulk(n as u32)
            .set(&affines)
            .set(&positions)
            .set(&rotations)
            .set(&velocities)
            .build();
        world
            .system::<(&mut Position, &mut Affine)>()
            .par_each(|(position, affine)| heavy_kernel(&mut affine.0, &mut position.0));
        world.set_threads(threads());
        Self(world)
    }

    pub fn run(&mut self) {
        self.0.progress_time(1.0);
    }
}

mod sched {
    use super::*;

    #[derive(Component, Clone, Copy)]
    pub struct A(pub f32);
    #[derive(Component, Clone, Copy)]
    pub struct B(pub f32);
    #[derive(Component, Clone, Copy)]
    pub struct C(pub f32);
    #[derive(Component, Clone, Copy)]
    pub struct D(pub f32);
    #[derive(Component, Clone, Copy)]
    pub struct E(pub f32);
}

/// Three multi-threaded systems (ab, cd, ce) over 40k entities in four archetypes.
pub struct Schedule(World);

impl Schedule {
    pub fn new() -> Self {
        use sched::*;
        let n = SCHEDULE_ENTITIES;
        let world = World::new();
        let a = vec![A(0.0); n];
        let b = vec![B(0.0); n];
        let c = vec![C(0.0); n];
        let d = vec![D(0.0); n];
        let e = vec![E(0.0); n];
        world.entity_bulk(n as u32).set(&a).set(&b).build();
        world.entity_bulk(n as u32).set(&a).set(&b).set(&c).build();
        world
            .entity_bulk(n as u32)
            .set(&a)
            .set(&b)
            .set(&c)
            .set(&d)
            .build();
        world
            .entity_bulk(n as u32)
            .set(&a)
            .set(&b)
            .set(&c)
            .set(&e)
            .build();
        world
            .system::<(&mut A, &mut B)>()
            .par_each(|(a, b)| std::mem::swap(&mut a.0, &mut b.0));
        world
            .system::<(&mut C, &mut D)>()
            .par_each(|(c, d)| std::mem::swap(&mut c.0, &mut d.0));
        world
            .system::<(&mut C, &mut E)>()
            .par_each(|(c, e)| std::mem::swap(&mut c.0, &mut e.0));
        world.set_threads(threads());
        Self(world)
    }

    pub fn run(&mut self) {
        self.0.progress_time(1.0);
    }
}

#[derive(Component, Clone, Copy)]
struct AddRemoveA(#[allow(dead_code)] f32);
#[derive(Component, Clone, Copy)]
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
        let world = World::new();
        let a = vec![AddRemoveA(0.0); n];
        let entities = world.entity_bulk(n as u32).set(&a).build();
        Self { world, entities }
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world.entity_from_id(entity).set(AddRemoveB(0.0));
        }
        for &entity in &self.entities {
            self.world.entity_from_id(entity).remove(AddRemoveB::id());
        }
    }
}
