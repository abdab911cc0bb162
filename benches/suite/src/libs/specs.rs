//! specs: per-component storages (bitset-joined), shred systems and dispatcher.
//!
//! Written as the specs book suggests: components pick their storage
//! (`VecStorage` for components (almost) every entity has, the default
//! `DenseVecStorage` otherwise, `NullStorage` for the `Frozen` marker),
//! entities are built with
//! `Entities::build_entity` against storages fetched once (specs' batch
//! path; `World::create_entity` refetches every storage per entity),
//! iteration is a `System` joining storages in `for` loops (`join`; `!&frozen`
//! excludes the marker in join_filter; `par_join` for heavy_compute) run with
//! `RunNow`, random_get is `ReadStorage::get` / `WriteStorage::get_mut` in a
//! `System`, despawn is `WorldExt::delete_entity`, schedule is a `Dispatcher` (systems run on rayon in parallel
//! where their storages allow), and the serialization rows use
//! `saveload::{SerializeComponents, DeserializeComponents}` with
//! `SimpleMarker`s (the `serde` feature).

use std::convert::Infallible;
use std::hint::black_box;

use ::specs::prelude::*;
use ::specs::saveload::{
    DeserializeComponents, MarkedBuilder, SerializeComponents, SimpleMarker, SimpleMarkerAllocator,
};
use ::specs::Component;
use cgmath::{Matrix4, Vector3};

use crate::data::*;

#[derive(Component, Clone, Copy)]
#[storage(VecStorage)]
struct Transform(#[allow(dead_code)] Matrix4<f32>);
#[derive(Component, Clone, Copy)]
#[storage(VecStorage)]
struct Position(Vector3<f32>);
#[derive(Component, Clone, Copy)]
#[storage(VecStorage)]
struct Rotation(#[allow(dead_code)] Vector3<f32>);
#[derive(Component, Clone, Copy)]
#[storage(VecStorage)]
struct Velocity(Vector3<f32>);
#[derive(Component, Clone, Copy)]
#[storage(VecStorage)]
struct Affine(Matrix4<f32>);

fn simple_world(n: usize) -> World {
    let mut world = World::new();
    world.register::<Transform>();
    world.register::<Position>();
    world.register::<Rotation>();
    world.register::<Velocity>();
    {
        let (entities, mut transforms, mut positions, mut rotations, mut velocities) = world
            .system_data::<(
                Entities,
                WriteStorage<Transform>,
                WriteStorage<Position>,
                WriteStorage<Rotation>,
                WriteStorage<Velocity>,
            )>();
        for _ in 0..n {
            entities
                .build_entity()
                .with(Transform(transform()), &mut transforms)
                .with(Position(unit()), &mut positions)
                .with(Rotation(unit()), &mut rotations)
                .with(Velocity(unit()), &mut velocities)
                .build();
        }
    }
    world
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
        let world = simple_world(self.0);
        black_box(&world);
    }
}

struct IntegrateSystem;

impl<'a> System<'a> for IntegrateSystem {
    type SystemData = (ReadStorage<'a, Velocity>, WriteStorage<'a, Position>);

    fn run(&mut self, (velocities, mut positions): Self::SystemData) {
        for (velocity, position) in (&velocities, &mut positions).join() {
            integrate(&mut position.0, &velocity.0);
        }
    }
}

/// position += velocity over 10k entities.
pub struct SimpleIter {
    world: World,
    system: IntegrateSystem,
}

impl SimpleIter {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        Self {
            world: simple_world(n),
            system: IntegrateSystem,
        }
    }

    pub fn run(&mut self) {
        self.system.run_now(&self.world);
    }
}

#[derive(Component)]
#[storage(VecStorage)]
struct Data(f32);

struct DoubleSystem;

impl<'a> System<'a> for DoubleSystem {
    type SystemData = WriteStorage<'a, Data>;

    fn run(&mut self, mut data: Self::SystemData) {
        for data in (&mut data).join() {
            double(&mut data.0);
        }
    }
}

macro_rules! frag_types {
    ($world:ident; $($name:ident),*) => {
        $(
            #[derive(Component)]
            struct $name(#[allow(dead_code)] f32);
            $world.register::<$name>();
            {
                let (entities, mut markers, mut data) =
                    $world.system_data::<(Entities, WriteStorage<$name>, WriteStorage<Data>)>();
                for _ in 0..FRAG_ENTITIES_PER_TYPE {
                    entities
                        .build_entity()
                        .with($name(0.0), &mut markers)
                        .with(Data(1.0), &mut data)
                        .build();
                }
            }
        )*
    };
}

/// Double `Data` across 26 "archetypes" of 20 entities (one storage here).
pub struct FragIter {
    world: World,
    system: DoubleSystem,
}

impl FragIter {
    pub fn new() -> Self {
        let mut world = World::new();
        world.register::<Data>();
        frag_types!(world; A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
        Self {
            world,
            system: DoubleSystem,
        }
    }

    pub fn run(&mut self) {
        self.system.run_now(&self.world);
    }
}

#[derive(Component, Clone, Copy)]
#[storage(VecStorage)]
struct Mass(f32);
#[derive(Component, Default)]
#[storage(NullStorage)]
struct Frozen;

struct JoinFilterSystem;

impl<'a> System<'a> for JoinFilterSystem {
    type SystemData = (
        WriteStorage<'a, Position>,
        ReadStorage<'a, Velocity>,
        ReadStorage<'a, Mass>,
        ReadStorage<'a, Frozen>,
    );

    fn run(&mut self, (mut positions, velocities, masses, frozen): Self::SystemData) {
        for (position, velocity, mass, ()) in
            (&mut positions, &velocities, &masses, !&frozen).join()
        {
            integrate_mass(&mut position.0, &velocity.0, mass.0);
        }
    }
}

/// position += velocity × mass over the 5k of 10k entities without `Frozen`.
pub struct JoinFilter {
    world: World,
    system: JoinFilterSystem,
}

impl JoinFilter {
    pub fn new() -> Self {
        let mut world = World::new();
        world.register::<Position>();
        world.register::<Velocity>();
        world.register::<Mass>();
        world.register::<Frozen>();
        {
            let (entities, mut positions, mut velocities, mut masses, mut frozens) = world
                .system_data::<(
                    Entities,
                    WriteStorage<Position>,
                    WriteStorage<Velocity>,
                    WriteStorage<Mass>,
                    WriteStorage<Frozen>,
                )>();
            for i in 0..JOIN_ENTITIES {
                let builder = entities
                    .build_entity()
                    .with(Position(unit()), &mut positions)
                    .with(Velocity(unit()), &mut velocities)
                    .with(Mass(mass()), &mut masses);
                if frozen(i) {
                    builder.with(Frozen, &mut frozens).build();
                } else {
                    builder.build();
                }
            }
        }
        Self {
            world,
            system: JoinFilterSystem,
        }
    }

    pub fn run(&mut self) {
        self.system.run_now(&self.world);
    }
}

/// Registers (Position, Velocity) and builds `n` entities with them.
fn two_component_entities(world: &mut World, n: usize) -> Vec<Entity> {
    let (entities, mut positions, mut velocities) =
        world.system_data::<(Entities, WriteStorage<Position>, WriteStorage<Velocity>)>();
    (0..n)
        .map(|_| {
            entities
                .build_entity()
                .with(Position(unit()), &mut positions)
                .with(Velocity(unit()), &mut velocities)
                .build()
        })
        .collect()
}

struct RandomGetSystem {
    order: Vec<Entity>,
}

impl<'a> System<'a> for RandomGetSystem {
    type SystemData = (ReadStorage<'a, Velocity>, WriteStorage<'a, Position>);

    fn run(&mut self, (velocities, mut positions): Self::SystemData) {
        for &entity in &self.order {
            let velocity = velocities.get(entity).unwrap().0;
            positions.get_mut(entity).unwrap().0 += velocity;
        }
    }
}

/// For each of 10k entities, in a fixed shuffled order: read `Velocity`
/// with `ReadStorage::get`, add it to `Position` through `WriteStorage::get_mut`.
pub struct RandomGet {
    world: World,
    system: RandomGetSystem,
}

impl RandomGet {
    pub fn new() -> Self {
        let mut world = World::new();
        world.register::<Position>();
        world.register::<Velocity>();
        let mut order = two_component_entities(&mut world, RANDOM_GET_ENTITIES);
        shuffle(&mut order);
        Self {
            world,
            system: RandomGetSystem { order },
        }
    }

    pub fn run(&mut self) {
        self.system.run_now(&self.world);
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
        let mut world = World::new();
        world.register::<Position>();
        world.register::<Velocity>();
        Self {
            world,
            entities: Vec::new(),
        }
    }

    pub fn prepare(&mut self) {
        self.entities = two_component_entities(&mut self.world, DESPAWN_ENTITIES);
        // `build_entity` allocates atomically; `maintain` merges the new
        // entities into the allocator, as it would between two frames.
        self.world.maintain();
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world.delete_entity(entity).unwrap();
        }
    }
}

struct HeavySystem;

impl<'a> System<'a> for HeavySystem {
    type SystemData = (WriteStorage<'a, Position>, WriteStorage<'a, Affine>);

    fn run(&mut self, (mut positions, mut affines): Self::SystemData) {
        use ::specs::rayon::iter::ParallelIterator;
        (&mut positions, &mut affines)
            .par_join()
            .for_each(|(position, affine)| heavy_kernel(&mut affine.0, &mut position.0));
    }
}

/// Parallel: invert a matrix 100 times per entity over 1000 entities.
pub struct HeavyCompute {
    world: World,
    system: HeavySystem,
}

impl HeavyCompute {
    pub fn new() -> Self {
        let mut world = World::new();
        world.register::<Affine>();
        world.register::<Position>();
        world.register::<Rotation>();
        world.register::<Velocity>();
        {
            let (entities, mut affines, mut positions, mut rotations, mut velocities) = world
                .system_data::<(
                    Entities,
                    WriteStorage<Affine>,
                    WriteStorage<Position>,
                    WriteStorage<Rotation>,
                    WriteStorage<Velocity>,
                )>();
            for _ in 0..HEAVY_ENTITIES {
                entities
                    .build_entity()
                    .with(Affine(heavy_matrix()), &mut affines)
                    .with(Position(unit()), &mut positions)
                    .with(Rotation(unit()), &mut rotations)
                    .with(Velocity(unit()), &mut velocities)
                    .build();
            }
        }
        Self {
            world,
            system: HeavySystem,
        }
    }

    pub fn run(&mut self) {
        self.system.run_now(&self.world);
    }
}

mod sched {
    use super::*;

    #[derive(Component)]
    #[storage(VecStorage)]
    pub struct A(pub f32);
    #[derive(Component)]
    #[storage(VecStorage)]
    pub struct B(pub f32);
    #[derive(Component)]
    #[storage(VecStorage)]
    pub struct C(pub f32);
    #[derive(Component)]
    #[storage(VecStorage)]
    pub struct D(pub f32);
    #[derive(Component)]
    #[storage(VecStorage)]
    pub struct E(pub f32);

    pub struct AbSystem;
    impl<'a> System<'a> for AbSystem {
        type SystemData = (WriteStorage<'a, A>, WriteStorage<'a, B>);
        fn run(&mut self, (mut a, mut b): Self::SystemData) {
            for (a, b) in (&mut a, &mut b).join() {
                std::mem::swap(&mut a.0, &mut b.0);
            }
        }
    }

    pub struct CdSystem;
    impl<'a> System<'a> for CdSystem {
        type SystemData = (WriteStorage<'a, C>, WriteStorage<'a, D>);
        fn run(&mut self, (mut c, mut d): Self::SystemData) {
            for (c, d) in (&mut c, &mut d).join() {
                std::mem::swap(&mut c.0, &mut d.0);
            }
        }
    }

    pub struct CeSystem;
    impl<'a> System<'a> for CeSystem {
        type SystemData = (WriteStorage<'a, C>, WriteStorage<'a, E>);
        fn run(&mut self, (mut c, mut e): Self::SystemData) {
            for (c, e) in (&mut c, &mut e).join() {
                std::mem::swap(&mut c.0, &mut e.0);
            }
        }
    }
}

/// Three systems (ab, cd, ce) over 40k entities in four groups.
pub struct Schedule {
    world: World,
    dispatcher: Dispatcher<'static, 'static>,
}

impl Schedule {
    pub fn new() -> Self {
        use sched::*;
        let n = SCHEDULE_ENTITIES;
        let mut world = World::new();
        let mut dispatcher = DispatcherBuilder::new()
            .with(AbSystem, "ab", &[])
            .with(CdSystem, "cd", &[])
            .with(CeSystem, "ce", &[])
            .build();
        // Registers every storage the systems name.
        dispatcher.setup(&mut world);
        {
            let (entities, mut a, mut b, mut c, mut d, mut e) = world.system_data::<(
                Entities,
                WriteStorage<A>,
                WriteStorage<B>,
                WriteStorage<C>,
                WriteStorage<D>,
                WriteStorage<E>,
            )>();
            for _ in 0..n {
                entities
                    .build_entity()
                    .with(A(0.0), &mut a)
                    .with(B(0.0), &mut b)
                    .build();
            }
            for _ in 0..n {
                entities
                    .build_entity()
                    .with(A(0.0), &mut a)
                    .with(B(0.0), &mut b)
                    .with(C(0.0), &mut c)
                    .build();
            }
            for _ in 0..n {
                entities
                    .build_entity()
                    .with(A(0.0), &mut a)
                    .with(B(0.0), &mut b)
                    .with(C(0.0), &mut c)
                    .with(D(0.0), &mut d)
                    .build();
            }
            for _ in 0..n {
                entities
                    .build_entity()
                    .with(A(0.0), &mut a)
                    .with(B(0.0), &mut b)
                    .with(C(0.0), &mut c)
                    .with(E(0.0), &mut e)
                    .build();
            }
        }
        Self { world, dispatcher }
    }

    pub fn run(&mut self) {
        self.dispatcher.dispatch(&self.world);
    }
}

#[derive(Component)]
#[storage(VecStorage)]
struct AddRemoveA(#[allow(dead_code)] f32);
#[derive(Component)]
#[storage(VecStorage)]
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
        world.register::<AddRemoveA>();
        world.register::<AddRemoveB>();
        let entities = {
            let (entities, mut a) = world.system_data::<(Entities, WriteStorage<AddRemoveA>)>();
            (0..n)
                .map(|_| {
                    entities
                        .build_entity()
                        .with(AddRemoveA(0.0), &mut a)
                        .build()
                })
                .collect()
        };
        Self { world, entities }
    }

    pub fn run(&mut self) {
        let mut bs = self.world.write_storage::<AddRemoveB>();
        for &entity in &self.entities {
            bs.insert(entity, AddRemoveB(0.0)).unwrap();
        }
        for &entity in &self.entities {
            black_box(bs.remove(entity));
        }
    }
}

impl Component for ser::Transform {
    type Storage = VecStorage<Self>;
}
impl Component for ser::Position {
    type Storage = VecStorage<Self>;
}
impl Component for ser::Rotation {
    type Storage = VecStorage<Self>;
}
impl Component for ser::Velocity {
    type Storage = VecStorage<Self>;
}

/// Marker type naming the id space of serialized entities.
struct SerializeMarker;
type Marker = SimpleMarker<SerializeMarker>;

/// A world with the serialized components and the marker storage registered.
fn serialize_registry() -> World {
    let mut world = World::new();
    world.register::<ser::Transform>();
    world.register::<ser::Position>();
    world.register::<ser::Rotation>();
    world.register::<ser::Velocity>();
    world.register::<Marker>();
    world.insert(SimpleMarkerAllocator::<SerializeMarker>::new());
    world
}

fn serialize_world() -> World {
    let mut world = serialize_registry();
    for _ in 0..SERIALIZE_ENTITIES {
        world
            .create_entity()
            .with(ser::Transform::default())
            .with(ser::Position::default())
            .with(ser::Rotation::default())
            .with(ser::Velocity::default())
            .marked::<Marker>()
            .build();
    }
    world
}

type SerStorages<'a> = (
    ReadStorage<'a, ser::Transform>,
    ReadStorage<'a, ser::Position>,
    ReadStorage<'a, ser::Rotation>,
    ReadStorage<'a, ser::Velocity>,
);

type DeStorages<'a> = (
    WriteStorage<'a, ser::Transform>,
    WriteStorage<'a, ser::Position>,
    WriteStorage<'a, ser::Rotation>,
    WriteStorage<'a, ser::Velocity>,
);

/// Serializes every marked entity of `world` with `serializer`.
fn save<S: serde::Serializer>(world: &World, serializer: S) -> Result<S::Ok, S::Error> {
    let (entities, markers, (t, p, r, v)) =
        world.system_data::<(Entities, ReadStorage<Marker>, SerStorages)>();
    SerializeComponents::<Infallible, Marker>::serialize(
        &(&t, &p, &r, &v),
        &entities,
        &markers,
        serializer,
    )
}

/// Deserializes entities from `deserializer` into a fresh world.
fn load<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<World, D::Error> {
    let world = serialize_registry();
    {
        let (entities, mut markers, mut allocator, mut storages) = world.system_data::<(
            Entities,
            WriteStorage<Marker>,
            Write<SimpleMarkerAllocator<SerializeMarker>>,
            DeStorages,
        )>();
        DeserializeComponents::<Infallible, Marker>::deserialize(
            &mut storages,
            &entities,
            &mut markers,
            &mut allocator,
            deserializer,
        )?;
    }
    Ok(world)
}

fn entity_count(world: &World) -> usize {
    (&world.entities(), &world.read_storage::<Marker>())
        .join()
        .count()
}

/// Serialize 1000 entities to RON and deserialize into a new world.
pub struct SerializeText(World);

impl SerializeText {
    pub fn new() -> Self {
        Self(serialize_world())
    }

    pub fn run(&mut self) {
        let mut text = String::new();
        let mut serializer = ron::Serializer::new(&mut text, None).unwrap();
        save(&self.0, &mut serializer).unwrap();
        let mut deserializer = ron::Deserializer::from_str(&text).unwrap();
        let world = load(&mut deserializer).unwrap();
        assert_eq!(entity_count(&world), SERIALIZE_ENTITIES);
        black_box(world);
    }
}

/// Serialize 1000 entities to bincode and deserialize into a new world.
pub struct SerializeBinary(World);

impl SerializeBinary {
    pub fn new() -> Self {
        Self(serialize_world())
    }

    pub fn run(&mut self) {
        let options = ser::bincode_options();
        let mut bytes = Vec::new();
        let mut serializer = bincode::Serializer::new(&mut bytes, options);
        save(&self.0, &mut serializer).unwrap();
        let mut deserializer = bincode::Deserializer::from_slice(&bytes, options);
        let world = load(&mut deserializer).unwrap();
        assert_eq!(entity_count(&world), SERIALIZE_ENTITIES);
        black_box(world);
    }
}
