//! mosaic: archetype tables (default) plus opt-in sparse sets, cached
//! `QueryState`.
//!
//! Four columns of the report come from this file:
//!
//! - `mosaic`, the headline row of every workload, written the way a user
//!   writes it from the README: `spawn_batch` for bulk spawning, a
//!   `QueryState` built once and kept, plain `for` loops over
//!   `QueryState::iter_mut(&mut world)` (and over `Query::iter_mut()` inside
//!   systems), every component in the default table storage,
//!   `insert_one` / `remove_one` for add_remove, `World::get` / `get_mut` for
//!   random_get, `World::despawn` for despawn, and
//!   `world.query_filtered::<_, Without<Frozen>>()` for join_filter.
//! - `mosaic_for_each` (simple_iter, fragmented_iter, join_filter,
//!   schedule): the same worlds and table storage, iterated with
//!   `.for_each(|..| ..)` closures instead of `for` loops (internal
//!   iteration, which lets the chunk loop be compiled as one nested loop).
//! - `mosaic_query` (random_get): the lookups by id through a kept
//!   `QueryState` (`q.get_mut(&mut world, e)`), the README's form for many
//!   lookups in a row; the headline row stays `World::get` / `get_mut`.
//! - `mosaic_sparse` (fragmented_iter, add_remove): the tuned storage
//!   choices the README documents. fragmented_iter declares its shared
//!   `Data` `#[component(storage = "sparse")]` (a query of sparse
//!   components alone walks the set as one array, not 26 tables) and
//!   iterates it with a plain `for` loop;
//!   add_remove declares B sparse and toggles it with `World::insert_one` /
//!   `World::remove_one`, as issue #40 and the independent harness write it
//!   (the set is found per call; no entity changes archetype).
//!
//! heavy_compute runs one system whose `Query::par_iter_mut` spreads the
//! entities over rayon's pool (parallel for every library); schedule runs
//! three named systems in a `Schedule` with the default (parallel,
//! adaptive) executor.
//!
//! Rows present: every workload. serialize_* use the scenes API
//! (`Scene::from_world` / `spawn_into`).

use std::hint::black_box;

use ::mosaic::{Component, Entity, Query, QueryState, Schedule as MosaicSchedule, Without, World};
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
        // `spawn_batch`: the README's bulk spawn (it returns the handles).
        let mut world = World::new();
        let entities = world.spawn_batch((0..self.0).map(|_| simple_bundle()));
        black_box((&world, &entities));
    }
}

type SimpleQuery = QueryState<(&'static Velocity, &'static mut Position)>;

fn simple_world(n: usize) -> (World, SimpleQuery) {
    let mut world = World::new();
    world.spawn_batch((0..n).map(|_| simple_bundle()));
    let query = world.query::<(&Velocity, &mut Position)>();
    (world, query)
}

/// position += velocity over 10k entities, `for` loop.
pub struct SimpleIter {
    world: World,
    query: SimpleQuery,
}

impl SimpleIter {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let (world, query) = simple_world(n);
        Self { world, query }
    }

    pub fn run(&mut self) {
        for (velocity, position) in self.query.iter_mut(&mut self.world) {
            integrate(&mut position.0, &velocity.0);
        }
    }
}

/// simple_iter with `.for_each` (row `mosaic_for_each`).
pub struct SimpleIterForEach {
    world: World,
    query: SimpleQuery,
}

impl SimpleIterForEach {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let (world, query) = simple_world(n);
        Self { world, query }
    }

    pub fn run(&mut self) {
        self.query
            .iter_mut(&mut self.world)
            .for_each(|(velocity, position)| integrate(&mut position.0, &velocity.0));
    }
}

/// fragmented_iter's shared component, default (table) storage: 26 tables
/// of 20 rows.
#[derive(Component)]
struct Data(f32);

/// The same declared sparse (row `mosaic_sparse`): it is the one component
/// every one of the 26 archetypes has, and the only one the query reads,
/// which is where mosaic's README recommends sparse storage.
#[derive(Component)]
#[component(storage = "sparse")]
struct SparseData(f32);

macro_rules! frag_world {
    ($data:ident) => {{
        let mut world = World::new();
        frag_world!(world, $data; A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
        let query = world.query::<&mut $data>();
        (world, query)
    }};
    ($world:ident, $data:ident; $($name:ident),*) => {
        $(
            #[derive(Component)]
            struct $name(#[allow(dead_code)] f32);
            $world.spawn_batch((0..FRAG_ENTITIES_PER_TYPE).map(|_| ($name(0.0), $data(1.0))));
        )*
    };
}

/// Double `Data` (table storage) across 26 archetypes of 20 entities, `for` loop.
pub struct FragIter {
    world: World,
    query: QueryState<&'static mut Data>,
}

impl FragIter {
    pub fn new() -> Self {
        let (world, query) = frag_world!(Data);
        Self { world, query }
    }

    pub fn run(&mut self) {
        for data in self.query.iter_mut(&mut self.world) {
            double(&mut data.0);
        }
    }
}

/// fragmented_iter with `.for_each` (row `mosaic_for_each`).
pub struct FragIterForEach {
    world: World,
    query: QueryState<&'static mut Data>,
}

impl FragIterForEach {
    pub fn new() -> Self {
        let (world, query) = frag_world!(Data);
        Self { world, query }
    }

    pub fn run(&mut self) {
        self.query
            .iter_mut(&mut self.world)
            .for_each(|data| double(&mut data.0));
    }
}

/// fragmented_iter with `Data` declared sparse, iterated with a plain `for`
/// loop as the README shows (row `mosaic_sparse`: the storage choice is the
/// tuning, the loop is what users write).
pub struct FragIterSparse {
    world: World,
    query: QueryState<&'static mut SparseData>,
}

impl FragIterSparse {
    pub fn new() -> Self {
        let (world, query) = frag_world!(SparseData);
        Self { world, query }
    }

    pub fn run(&mut self) {
        for data in self.query.iter_mut(&mut self.world) {
            double(&mut data.0);
        }
    }
}

#[derive(Component, Clone, Copy)]
struct Mass(f32);
/// join_filter's marker (a zero-sized component, table storage).
#[derive(Component)]
struct Frozen;

type JoinQuery =
    QueryState<(&'static mut Position, &'static Velocity, &'static Mass), Without<Frozen>>;

fn join_world() -> (World, JoinQuery) {
    let mut world = World::new();
    let entities = world.spawn_batch(
        (0..JOIN_ENTITIES).map(|_| (Position(unit()), Velocity(unit()), Mass(mass()))),
    );
    for (i, &entity) in entities.iter().enumerate() {
        if frozen(i) {
            world.insert_one(entity, Frozen).unwrap();
        }
    }
    let query = world.query_filtered::<(&mut Position, &Velocity, &Mass), Without<Frozen>>();
    (world, query)
}

/// position += velocity × mass over the 5k of 10k entities without `Frozen`.
pub struct JoinFilter {
    world: World,
    query: JoinQuery,
}

impl JoinFilter {
    pub fn new() -> Self {
        let (world, query) = join_world();
        Self { world, query }
    }

    pub fn run(&mut self) {
        for (position, velocity, mass) in self.query.iter_mut(&mut self.world) {
            integrate_mass(&mut position.0, &velocity.0, mass.0);
        }
    }
}

/// join_filter with `.for_each` (row `mosaic_for_each`).
pub struct JoinFilterForEach {
    world: World,
    query: JoinQuery,
}

impl JoinFilterForEach {
    pub fn new() -> Self {
        let (world, query) = join_world();
        Self { world, query }
    }

    pub fn run(&mut self) {
        self.query
            .iter_mut(&mut self.world)
            .for_each(|(position, velocity, mass)| {
                integrate_mass(&mut position.0, &velocity.0, mass.0)
            });
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
        let mut order = world
            .spawn_batch((0..RANDOM_GET_ENTITIES).map(|_| (Position(unit()), Velocity(unit()))));
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

/// random_get through a `QueryState` kept across runs (row
/// `mosaic_query`): `q.get_mut(&mut world, e)` of
/// `(&Velocity, &mut Position)` per entity, the README's form for many
/// lookups by id in a row.
pub struct RandomGetQuery {
    world: World,
    query: QueryState<(&'static Velocity, &'static mut Position)>,
    order: Vec<Entity>,
}

impl RandomGetQuery {
    pub fn new() -> Self {
        let RandomGet { mut world, order } = RandomGet::new();
        let query = world.query::<(&Velocity, &mut Position)>();
        Self {
            world,
            query,
            order,
        }
    }

    pub fn run(&mut self) {
        for &entity in &self.order {
            let (velocity, position) = self.query.get_mut(&mut self.world, entity).unwrap();
            position.0 += velocity.0;
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
        self.entities = self
            .world
            .spawn_batch((0..DESPAWN_ENTITIES).map(|_| (Position(unit()), Velocity(unit()))));
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world.despawn(entity).unwrap();
        }
    }
}

#[derive(Component)]
struct AddRemoveA(#[allow(dead_code)] f32);
#[derive(Component)]
struct AddRemoveB(#[allow(dead_code)] f32);
#[derive(Component)]
#[component(storage = "sparse")]
struct SparseAddRemoveB(#[allow(dead_code)] f32);

fn add_remove_world(n: usize) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let entities = world.spawn_batch((0..n).map(|_| (AddRemoveA(0.0),)));
    (world, entities)
}

/// Add B (table storage: two archetype moves per entity) to 10k entities
/// with `insert_one`, then `remove_one` it again.
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

/// add_remove with B declared sparse (row `mosaic_sparse`), toggled with
/// `insert_one`/`remove_one` as issue #40's done-when and the independent
/// harness write it.
pub struct AddRemoveSparse {
    world: World,
    entities: Vec<Entity>,
}

impl AddRemoveSparse {
    pub fn new() -> Self {
        Self::with_entities(ADD_REMOVE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let (world, entities) = add_remove_world(n);
        Self { world, entities }
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world
                .insert_one(entity, SparseAddRemoveB(0.0))
                .unwrap();
        }
        for &entity in &self.entities {
            black_box(self.world.remove_one::<SparseAddRemoveB>(entity).unwrap());
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

    /// The same three systems with `.for_each` (row `mosaic_for_each`).
    pub fn ab_for_each(mut query: Query<(&mut A, &mut B)>) {
        query
            .iter_mut()
            .for_each(|(a, b)| std::mem::swap(&mut a.0, &mut b.0));
    }

    pub fn cd_for_each(mut query: Query<(&mut C, &mut D)>) {
        query
            .iter_mut()
            .for_each(|(c, d)| std::mem::swap(&mut c.0, &mut d.0));
    }

    pub fn ce_for_each(mut query: Query<(&mut C, &mut E)>) {
        query
            .iter_mut()
            .for_each(|(c, e)| std::mem::swap(&mut c.0, &mut e.0));
    }

    pub fn world() -> World {
        let mut world = World::new();
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0), D(0.0))));
        world.spawn_batch((0..SCHEDULE_ENTITIES).map(|_| (A(0.0), B(0.0), C(0.0), E(0.0))));
        world
    }
}

/// Three systems (ab, cd, ce; `for` loops) over 40k entities in four archetypes.
pub struct Schedule {
    world: World,
    schedule: MosaicSchedule,
}

impl Schedule {
    pub fn new() -> Self {
        let mut schedule = MosaicSchedule::new();
        schedule.add_system("ab", sched::ab);
        schedule.add_system("cd", sched::cd);
        schedule.add_system("ce", sched::ce);
        Self {
            world: sched::world(),
            schedule,
        }
    }

    pub fn run(&mut self) {
        self.schedule.run(&mut self.world);
    }
}

/// schedule with `.for_each` in the systems (row `mosaic_for_each`).
pub struct ScheduleForEach {
    world: World,
    schedule: MosaicSchedule,
}

impl ScheduleForEach {
    pub fn new() -> Self {
        let mut schedule = MosaicSchedule::new();
        schedule.add_system("ab", sched::ab_for_each);
        schedule.add_system("cd", sched::cd_for_each);
        schedule.add_system("ce", sched::ce_for_each);
        Self {
            world: sched::world(),
            schedule,
        }
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

/// Save 1000 entities as a RON scene (as `to_ron_string` writes it, one
/// entity a line) and load it into a new world.
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
        // The registry is at hand: read and decode in one pass, as the
        // README shows.
        let scene = Scene::from_ron_str_with(&text, &self.1).unwrap();
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
