//! mosaic: archetype tables (default) plus opt-in sparse sets, cached
//! `QueryState`.
//!
//! Written as mosaic's docs suggest: `World::spawn_batch` for bulk spawning,
//! a `QueryState` built once and kept (`iter_mut(&mut world).for_each`), and
//! `#[component(storage = "sparse")]` for the component that add_remove
//! toggles (the storage mosaic documents for frequently added/removed
//! components; `AddRemoveTable` is the same workload with table storage, for
//! comparison with the archetype-moving peers).
//!
//! Rows present: simple_insert, simple_iter, fragmented_iter, add_remove.
//! heavy_compute, schedule and serialize_* need the systems/scheduler and
//! serialization APIs; add a struct per workload here and register it in
//! `benches/suite.rs` when they exist.

use std::hint::black_box;

use ::mosaic::{Component, Entity, QueryState, World};
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

fn simple_bundle() -> (Transform, Position, Rotation, Velocity) {
    (
        Transform(transform()),
        Position(unit()),
        Rotation(unit()),
        Velocity(unit()),
    )
}

/// Spawn 10k entities with four components into a fresh world.
pub struct SimpleInsert;

impl SimpleInsert {
    pub fn new() -> Self {
        Self
    }

    pub fn run(&mut self) {
        let mut world = World::new();
        let entities = world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
        black_box(&entities);
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
        self.query
            .iter_mut(&mut self.world)
            .for_each(|(velocity, position)| integrate(&mut position.0, &velocity.0));
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
        self.query
            .iter_mut(&mut self.world)
            .for_each(|data| double(&mut data.0));
    }
}

#[derive(Component)]
struct AddRemoveA(#[allow(dead_code)] f32);
#[derive(Component)]
#[component(storage = "sparse")]
struct AddRemoveB(#[allow(dead_code)] f32);
#[derive(Component)]
struct AddRemoveTableB(#[allow(dead_code)] f32);

fn add_remove_world(n: usize) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let entities = world.spawn_batch((0..n).map(|_| (AddRemoveA(0.0),)));
    (world, entities)
}

/// Add B (sparse-set storage) to 10k entities, then remove it again.
pub struct AddRemove {
    world: World,
    entities: Vec<Entity>,
}

impl AddRemove {
    pub fn new() -> Self {
        Self::with_entities(ADD_REMOVE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let (world, entities) = add_remove_world(n);
        Self { world, entities }
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world.insert_one(entity, AddRemoveB(0.0)).unwrap();
        }
        for &entity in &self.entities {
            black_box(self.world.remove_one::<AddRemoveB>(entity).unwrap());
        }
    }
}

/// add_remove with B in table storage (two archetype moves per entity).
pub struct AddRemoveTable {
    world: World,
    entities: Vec<Entity>,
}

impl AddRemoveTable {
    pub fn new() -> Self {
        Self::with_entities(ADD_REMOVE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let (world, entities) = add_remove_world(n);
        Self { world, entities }
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world.insert_one(entity, AddRemoveTableB(0.0)).unwrap();
        }
        for &entity in &self.entities {
            black_box(self.world.remove_one::<AddRemoveTableB>(entity).unwrap());
        }
    }
}
