//! mosaic: archetype tables (default) plus opt-in sparse sets, cached
//! `QueryState`.
//!
//! Written as mosaic's docs suggest: `World::extend` for bulk spawning whose
//! handles are not used (`spawn_batch` where they are),
//! a `QueryState` built once and kept (`iter_mut(&mut world).for_each`), and
//! `#[component(storage = "sparse")]` for the component that add_remove
//! toggles (the storage mosaic documents for frequently added/removed
//! components), toggled through `World::sparse_mut` (its set resolved once
//! per pass, like specs' storage and shipyard's view); `AddRemoveTable` is
//! the same workload with table storage and `insert_one`/`remove_one`, for
//! comparison with the archetype-moving peers. fragmented_iter declares
//! its shared `Data` sparse (a query of sparse components alone walks the
//! set as one array); `FragIterTable` (row `mosaic_table`) keeps it in the
//! 26 tables.
//!
//! heavy_compute runs one system whose `Query::par_iter_mut` spreads the
//! entities over rayon's pool; schedule runs three named systems in a
//! `Schedule` with the default (parallel, adaptive) executor.
//!
//! Rows present: simple_insert, simple_iter, fragmented_iter, heavy_compute,
//! schedule, add_remove. serialize_* need the scenes API.

use std::hint::black_box;

use ::mosaic::{Component, Entity, Query, QueryState, Schedule as MosaicSchedule, World};
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
        // `extend`: the README's bulk spawn when the handles are not needed
        // (as here and in the upstream suite), which skips `spawn_batch`'s
        // returned `Vec`.
        let mut world = World::new();
        world.extend((0..self.0).map(|_| simple_bundle()));
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

/// fragmented_iter's shared component, declared sparse: it is the one
/// component every one of the 26 archetypes has, and the only one the
/// query reads, which is where mosaic's README recommends sparse storage
/// (a query of sparse components alone walks the set as one array).
#[derive(Component)]
#[component(storage = "sparse")]
struct Data(f32);

/// The same with table storage (row `mosaic_table`): 26 tables of 20 rows.
#[derive(Component)]
struct TableData(f32);

macro_rules! frag_types {
    ($world:ident, $data:ident; $($name:ident),*) => {
        $(
            #[derive(Component)]
            struct $name(#[allow(dead_code)] f32);
            $world.spawn_batch((0..FRAG_ENTITIES_PER_TYPE).map(|_| ($name(0.0), $data(1.0))));
        )*
    };
}

macro_rules! frag_iter {
    ($(#[$doc:meta])* $bench:ident, $data:ident) => {
        $(#[$doc])*
        pub struct $bench {
            world: World,
            query: QueryState<&'static mut $data>,
        }

        impl $bench {
            pub fn new() -> Self {
                let mut world = World::new();
                frag_types!(world, $data; A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
                let query = world.query::<&mut $data>();
                Self { world, query }
            }

            pub fn run(&mut self) {
                self.query
                    .iter_mut(&mut self.world)
                    .for_each(|data| double(&mut data.0));
            }
        }
    };
}

frag_iter!(
    /// Double `Data` (sparse) on 26 archetypes of 20 entities.
    FragIter,
    Data
);
frag_iter!(
    /// Double `TableData` across 26 archetypes of 20 entities.
    FragIterTable,
    TableData
);

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
        // The set, resolved once for the whole pass, as the README
        // recommends for toggling one sparse component on many entities
        // (specs' `WriteStorage`, shipyard's `ViewMut`).
        let mut b = self.world.sparse_mut::<AddRemoveB>().unwrap();
        for &entity in &self.entities {
            b.insert(entity, AddRemoveB(0.0)).unwrap();
        }
        for &entity in &self.entities {
            black_box(b.remove(entity).unwrap());
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

/// heavy_compute's matrix (the suite's `Affine`).
#[derive(Component, Clone, Copy)]
struct Affine(Matrix4<f32>);

fn heavy_system(mut query: Query<(&mut Position, &mut Affine)>) {
    query
        .par_iter_mut()
        .for_each(|(position, affine)| heavy_kernel(&mut affine.0, &mut position.0));
}

/// Parallel: invert a matrix 100 times per entity over 1000 entities, in a
/// system (as a mosaic program would).
pub struct HeavyCompute {
    world: World,
    schedule: MosaicSchedule,
}

impl HeavyCompute {
    pub fn new() -> Self {
        let mut world = World::new();
        world.spawn_batch((0..HEAVY_ENTITIES).map(|_| {
            (
                Affine(heavy_matrix()),
                Position(unit()),
                Rotation(unit()),
                Velocity(unit()),
            )
        }));
        let mut schedule = MosaicSchedule::new();
        schedule.add_system("heavy", heavy_system);
        Self { world, schedule }
    }

    pub fn run(&mut self) {
        self.schedule.run(&mut self.world);
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
        query
            .iter_mut()
            .for_each(|(a, b)| std::mem::swap(&mut a.0, &mut b.0));
    }

    pub fn cd(mut query: Query<(&mut C, &mut D)>) {
        query
            .iter_mut()
            .for_each(|(c, d)| std::mem::swap(&mut c.0, &mut d.0));
    }

    pub fn ce(mut query: Query<(&mut C, &mut E)>) {
        query
            .iter_mut()
            .for_each(|(c, e)| std::mem::swap(&mut c.0, &mut e.0));
    }
}

/// Three systems (ab, cd, ce) over 40k entities in four archetypes.
pub struct Schedule {
    world: World,
    schedule: MosaicSchedule,
}

impl Schedule {
    pub fn new() -> Self {
        use sched::*;
        let mut world = World::new();
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0), D(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0), E(0.0))));
        let mut schedule = MosaicSchedule::new();
        schedule.add_system("ab", ab);
        schedule.add_system("cd", cd);
        schedule.add_system("ce", ce);
        Self { world, schedule }
    }

    pub fn run(&mut self) {
        self.schedule.run(&mut self.world);
    }
}

/// serialize_text / serialize_binary components: mosaic components need the
/// derive, so these wrap the suite's shapes (same fields, same serde form).
mod scene_data {
    use ::mosaic::Component;
    use serde::{Deserialize, Serialize};

    #[derive(Component, Default, Clone, Copy, Serialize, Deserialize)]
    pub struct Transform(pub [f32; 16]);
    #[derive(Component, Default, Clone, Copy, Serialize, Deserialize)]
    pub struct Position {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
    #[derive(Component, Default, Clone, Copy, Serialize, Deserialize)]
    pub struct Rotation {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
    #[derive(Component, Default, Clone, Copy, Serialize, Deserialize)]
    pub struct Velocity {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
}

/// The serialize workloads' world and registry, the way the README shows:
/// register the types, then `Scene::from_world` / `spawn_into`.
fn scene_world() -> (World, ::mosaic::scene::TypeRegistry) {
    use scene_data::*;
    let mut registry = ::mosaic::scene::TypeRegistry::new();
    registry.register::<Transform>();
    registry.register::<Position>();
    registry.register::<Rotation>();
    registry.register::<Velocity>();
    let mut world = World::new();
    world.spawn_batch((0..SERIALIZE_ENTITIES).map(|_| {
        (
            Transform::default(),
            Position::default(),
            Rotation::default(),
            Velocity::default(),
        )
    }));
    (world, registry)
}

/// Save 1000 entities as a RON scene (pretty, as `to_ron_string` writes
/// it) and load it into a new world.
pub struct SerializeText(World, ::mosaic::scene::TypeRegistry);

impl SerializeText {
    pub fn new() -> Self {
        let (world, registry) = scene_world();
        Self(world, registry)
    }

    pub fn run(&mut self) {
        use ::mosaic::scene::Scene;
        let text = Scene::from_world(&self.0, &self.1)
            .and_then(|s| s.to_ron_string())
            .unwrap();
        let mut world = World::new();
        let scene = Scene::from_ron_str(&text).unwrap();
        scene.spawn_into(&mut world, &self.1).unwrap();
        assert_eq!(world.len(), SERIALIZE_ENTITIES);
        black_box(world);
    }
}

/// Save 1000 entities as a binary (postcard) scene and load it into a new
/// world.
pub struct SerializeBinary(World, ::mosaic::scene::TypeRegistry);

impl SerializeBinary {
    pub fn new() -> Self {
        let (world, registry) = scene_world();
        Self(world, registry)
    }

    pub fn run(&mut self) {
        use ::mosaic::scene::Scene;
        let bytes = Scene::from_world(&self.0, &self.1)
            .and_then(|s| s.to_binary())
            .unwrap();
        let mut world = World::new();
        // The README's read of bytes the scene may keep: no copy.
        let scene = Scene::from_binary_vec(bytes).unwrap();
        scene.spawn_into(&mut world, &self.1).unwrap();
        assert_eq!(world.len(), SERIALIZE_ENTITIES);
        black_box(world);
    }
}
