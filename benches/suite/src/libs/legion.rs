//! legion: archetypal chunks, `#[system]` codegen and its own schedule.
//!
//! Written as the legion docs suggest: `World::extend` with struct-of-arrays
//! input (`into_soa`, its fastest bulk insert), queries built once with
//! `IntoQuery::query()` (`.filter(!component::<Frozen>())` for join_filter)
//! and iterated with `for .. in query.iter_mut(&mut world)` (and
//! `par_for_each_mut` for heavy_compute), `#[system(for_each)]` systems in a
//! `Schedule` (the README's system form), `World::entry` for random_get and
//! add_remove (`Entry::add_component` / `remove_component`),
//! `World::remove` for despawn, and `Registry` + `Canon` for serde.

use std::hint::black_box;

use ::legion::query::{ComponentFilter, DefaultFilter, EntityFilterTuple, Passthrough, Query};
use ::legion::serialize::Canon;
use ::legion::{
    system, Entity, IntoQuery, IntoSoa, Read, Registry, Resources, Schedule as LegionSchedule,
    World, Write,
};
use cgmath::{Matrix4, Vector3};
use serde::de::DeserializeSeed;

use crate::data::*;

#[derive(Clone, Copy)]
struct Transform(#[allow(dead_code)] Matrix4<f32>);
#[derive(Clone, Copy)]
struct Position(Vector3<f32>);
#[derive(Clone, Copy)]
struct Rotation(#[allow(dead_code)] Vector3<f32>);
#[derive(Clone, Copy)]
struct Velocity(Vector3<f32>);
#[derive(Clone, Copy)]
struct Affine(Matrix4<f32>);

type QueryOf<V> = Query<V, <V as DefaultFilter>::Filter>;

fn simple_columns(n: usize) -> (Vec<Transform>, Vec<Position>, Vec<Rotation>, Vec<Velocity>) {
    (
        vec![Transform(transform()); n],
        vec![Position(unit()); n],
        vec![Rotation(unit()); n],
        vec![Velocity(unit()); n],
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
        let mut world = World::default();
        world.extend(simple_columns(self.0).into_soa());
        black_box(&world);
    }
}

type SimpleView = (Read<Velocity>, Write<Position>);

/// position += velocity over 10k entities.
pub struct SimpleIter {
    world: World,
    query: QueryOf<SimpleView>,
}

impl SimpleIter {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let mut world = World::default();
        world.extend(simple_columns(n).into_soa());
        let query = SimpleView::query();
        Self { world, query }
    }

    pub fn run(&mut self) {
        for (velocity, position) in self.query.iter_mut(&mut self.world) {
            integrate(&mut position.0, &velocity.0);
        }
    }
}

struct Data(f32);

macro_rules! frag_types {
    ($world:ident; $($name:ident),*) => {
        $(
            struct $name(#[allow(dead_code)] f32);
            $world.extend((0..FRAG_ENTITIES_PER_TYPE).map(|_| ($name(0.0), Data(1.0))));
        )*
    };
}

/// Double `Data` across 26 archetypes of 20 entities.
pub struct FragIter {
    world: World,
    query: QueryOf<Write<Data>>,
}

impl FragIter {
    pub fn new() -> Self {
        let mut world = World::default();
        frag_types!(world; A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
        let query = Write::<Data>::query();
        Self { world, query }
    }

    pub fn run(&mut self) {
        for data in self.query.iter_mut(&mut self.world) {
            double(&mut data.0);
        }
    }
}

#[derive(Clone, Copy)]
struct Mass(f32);
struct Frozen;

type JoinView = (Write<Position>, Read<Velocity>, Read<Mass>);
/// The type of `!component::<Frozen>()`.
type NotFrozen = <EntityFilterTuple<ComponentFilter<Frozen>, Passthrough> as std::ops::Not>::Output;
/// The query's own filter (all three components) and `!component::<Frozen>()`.
type JoinFilterOf = <<JoinView as DefaultFilter>::Filter as std::ops::BitAnd<NotFrozen>>::Output;

/// position += velocity × mass over the 5k of 10k entities without `Frozen`.
pub struct JoinFilter {
    world: World,
    query: Query<JoinView, JoinFilterOf>,
}

impl JoinFilter {
    pub fn new() -> Self {
        let n = JOIN_ENTITIES;
        let mut world = World::default();
        let entities = world
            .extend(
                (
                    vec![Position(unit()); n],
                    vec![Velocity(unit()); n],
                    vec![Mass(mass()); n],
                )
                    .into_soa(),
            )
            .to_vec();
        for (i, &entity) in entities.iter().enumerate() {
            if frozen(i) {
                world.entry(entity).unwrap().add_component(Frozen);
            }
        }
        let query = JoinView::query().filter(!::legion::component::<Frozen>());
        Self { world, query }
    }

    pub fn run(&mut self) {
        for (position, velocity, mass) in self.query.iter_mut(&mut self.world) {
            integrate_mass(&mut position.0, &velocity.0, mass.0);
        }
    }
}

/// For each of 10k entities, in a fixed shuffled order: read `Velocity`
/// and add it to `Position` through the entity's `Entry`.
pub struct RandomGet {
    world: World,
    order: Vec<Entity>,
}

impl RandomGet {
    pub fn new() -> Self {
        let n = RANDOM_GET_ENTITIES;
        let mut world = World::default();
        let mut order = world
            .extend((vec![Position(unit()); n], vec![Velocity(unit()); n]).into_soa())
            .to_vec();
        shuffle(&mut order);
        Self { world, order }
    }

    pub fn run(&mut self) {
        for &entity in &self.order {
            let mut entry = self.world.entry(entity).unwrap();
            let velocity = entry.get_component::<Velocity>().unwrap().0;
            entry.get_component_mut::<Position>().unwrap().0 += velocity;
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
            world: World::default(),
            entities: Vec::new(),
        }
    }

    pub fn prepare(&mut self) {
        let n = DESPAWN_ENTITIES;
        self.entities.clear();
        self.entities.extend_from_slice(
            self.world
                .extend((vec![Position(unit()); n], vec![Velocity(unit()); n]).into_soa()),
        );
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            assert!(self.world.remove(entity));
        }
    }
}

type HeavyView = (Write<Position>, Write<Affine>);

/// Parallel: invert a matrix 100 times per entity over 1000 entities.
pub struct HeavyCompute {
    world: World,
    query: QueryOf<HeavyView>,
}

impl HeavyCompute {
    pub fn new() -> Self {
        let mut world = World::default();
        world.extend(
            (
                vec![Affine(heavy_matrix()); HEAVY_ENTITIES],
                vec![Position(unit()); HEAVY_ENTITIES],
                vec![Rotation(unit()); HEAVY_ENTITIES],
                vec![Velocity(unit()); HEAVY_ENTITIES],
            )
                .into_soa(),
        );
        let query = HeavyView::query();
        Self { world, query }
    }

    pub fn run(&mut self) {
        self.query
            .par_for_each_mut(&mut self.world, |(position, affine)| {
                heavy_kernel(&mut affine.0, &mut position.0)
            });
    }
}

mod sched {
    use super::system;

    pub struct A(pub f32);
    pub struct B(pub f32);
    pub struct C(pub f32);
    pub struct D(pub f32);
    pub struct E(pub f32);

    #[system(for_each)]
    pub fn ab(a: &mut A, b: &mut B) {
        std::mem::swap(&mut a.0, &mut b.0);
    }

    #[system(for_each)]
    pub fn cd(c: &mut C, d: &mut D) {
        std::mem::swap(&mut c.0, &mut d.0);
    }

    #[system(for_each)]
    pub fn ce(c: &mut C, e: &mut E) {
        std::mem::swap(&mut c.0, &mut e.0);
    }
}

/// Three systems (ab, cd, ce) over 40k entities in four archetypes.
pub struct Schedule {
    world: World,
    resources: Resources,
    schedule: LegionSchedule,
}

impl Schedule {
    pub fn new() -> Self {
        use sched::*;
        let n = SCHEDULE_ENTITIES;
        let mut world = World::default();
        world.extend((0..n).map(|_| (A(0.0), B(0.0))));
        world.extend((0..n).map(|_| (A(0.0), B(0.0), C(0.0))));
        world.extend((0..n).map(|_| (A(0.0), B(0.0), C(0.0), D(0.0))));
        world.extend((0..n).map(|_| (A(0.0), B(0.0), C(0.0), E(0.0))));
        let schedule = LegionSchedule::builder()
            .add_system(ab_system())
            .add_system(cd_system())
            .add_system(ce_system())
            .build();
        Self {
            world,
            resources: Resources::default(),
            schedule,
        }
    }

    pub fn run(&mut self) {
        self.schedule.execute(&mut self.world, &mut self.resources);
    }
}

struct AddRemoveA(#[allow(dead_code)] f32);
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
        let mut world = World::default();
        let entities = world.extend((0..n).map(|_| (AddRemoveA(0.0),))).to_vec();
        Self { world, entities }
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world
                .entry(entity)
                .unwrap()
                .add_component(AddRemoveB(0.0));
        }
        for &entity in &self.entities {
            self.world
                .entry(entity)
                .unwrap()
                .remove_component::<AddRemoveB>();
        }
    }
}

/// The component-key type of a serialization registry.
trait RegistryKey: ::legion::serialize::TypeKey {
    fn keys() -> [Self; 4];
}

/// RON rows: string keys, as in legion's own serialization docs. (ron >= 0.9
/// reads a map whose visitor "expects" a `struct ...` as a flattened struct
/// and then only accepts string keys; legion's per-entity component map is
/// such a visitor, so integer keys fail to deserialize with
/// `ExpectedIdentifier`.)
impl RegistryKey for String {
    fn keys() -> [Self; 4] {
        ["transform", "position", "rotation", "velocity"].map(String::from)
    }
}

/// bincode rows: compact integer keys.
impl RegistryKey for u8 {
    fn keys() -> [Self; 4] {
        [0, 1, 2, 3]
    }
}

struct SerializeState<K: RegistryKey> {
    world: World,
    registry: Registry<K>,
    canon: Canon,
}

impl<K: RegistryKey> SerializeState<K> {
    fn new() -> Self {
        let n = SERIALIZE_ENTITIES;
        let mut world = World::default();
        world.extend(
            (
                vec![ser::Transform::default(); n],
                vec![ser::Position::default(); n],
                vec![ser::Rotation::default(); n],
                vec![ser::Velocity::default(); n],
            )
                .into_soa(),
        );
        let mut registry = Registry::<K>::default();
        let [transform, position, rotation, velocity] = K::keys();
        registry.register::<ser::Transform>(transform);
        registry.register::<ser::Position>(position);
        registry.register::<ser::Rotation>(rotation);
        registry.register::<ser::Velocity>(velocity);
        Self {
            world,
            registry,
            canon: Canon::default(),
        }
    }
}

/// Serialize 1000 entities to RON and deserialize into a new world.
pub struct SerializeText(SerializeState<String>);

impl SerializeText {
    pub fn new() -> Self {
        Self(SerializeState::new())
    }

    pub fn run(&mut self) {
        let SerializeState {
            world,
            registry,
            canon,
        } = &self.0;
        let serializable = world.as_serializable(::legion::any(), registry, canon);
        let text = ron::ser::to_string(&serializable).unwrap();
        let mut deserializer = ron::Deserializer::from_str(&text).unwrap();
        let world: World = registry
            .as_deserialize(canon)
            .deserialize(&mut deserializer)
            .unwrap();
        assert_eq!(world.len(), SERIALIZE_ENTITIES);
        black_box(world);
    }
}

/// Serialize 1000 entities to bincode and deserialize into a new world.
pub struct SerializeBinary(SerializeState<u8>);

impl SerializeBinary {
    pub fn new() -> Self {
        Self(SerializeState::new())
    }

    pub fn run(&mut self) {
        use bincode::Options;
        let SerializeState {
            world,
            registry,
            canon,
        } = &self.0;
        let options = ser::bincode_options();
        let serializable = world.as_serializable(::legion::any(), registry, canon);
        let bytes = options.serialize(&serializable).unwrap();
        let mut deserializer = bincode::Deserializer::from_slice(&bytes, options);
        let world: World = registry
            .as_deserialize(canon)
            .deserialize(&mut deserializer)
            .unwrap();
        assert_eq!(world.len(), SERIALIZE_ENTITIES);
        black_box(world);
    }
}
