//! hecs: archetypal storage, no scheduler.
//!
//! Written as the hecs docs suggest: `spawn_batch` for bulk spawning,
//! `for .. in world.query_mut::<..>()` for exclusive iteration (no runtime
//! borrow tracking; `.without::<&Frozen>()` for join_filter), `World::get`
//! for random_get, `World::despawn`, and `into_iter_batched` + rayon
//! `par_bridge` for parallel iteration. The serialization rows use hecs' own
//! `row` (RON) and `column` (bincode) modules.

use std::hint::black_box;

use ::hecs::{Entity, World};
use cgmath::{Matrix4, Vector3};
use rayon::iter::{ParallelBridge, ParallelIterator};

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
pub struct SimpleIter(World);

impl SimpleIter {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let mut world = World::new();
        world.spawn_batch((0..n).map(|_| simple_bundle()));
        Self(world)
    }

    pub fn run(&mut self) {
        for (velocity, position) in self.0.query_mut::<(&Velocity, &mut Position)>() {
            integrate(&mut position.0, &velocity.0);
        }
    }
}

/// Double `Data` across 26 archetypes of 20 entities.
pub struct FragIter(World);

struct Data(f32);

macro_rules! frag_types {
    ($world:ident; $($name:ident),*) => {
        $(
            struct $name(#[allow(dead_code)] f32);
            $world.spawn_batch((0..FRAG_ENTITIES_PER_TYPE).map(|_| ($name(0.0), Data(1.0))));
        )*
    };
}

impl FragIter {
    pub fn new() -> Self {
        let mut world = World::new();
        frag_types!(world; A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);
        Self(world)
    }

    pub fn run(&mut self) {
        for data in self.0.query_mut::<&mut Data>() {
            double(&mut data.0);
        }
    }
}

#[derive(Clone, Copy)]
struct Mass(f32);
struct Frozen;

/// position += velocity × mass over the 5k of 10k entities without `Frozen`.
pub struct JoinFilter(World);

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
                world.insert_one(entity, Frozen).unwrap();
            }
        }
        Self(world)
    }

    pub fn run(&mut self) {
        for (position, velocity, mass) in self
            .0
            .query_mut::<(&mut Position, &Velocity, &Mass)>()
            .without::<&Frozen>()
        {
            integrate_mass(&mut position.0, &velocity.0, mass.0);
        }
    }
}

/// For each of 10k entities, in a fixed shuffled order: read `Velocity`
/// with `World::get`, add it to `Position` through `get::<&mut _>`.
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
            let velocity = self.world.get::<&Velocity>(entity).unwrap().0;
            self.world.get::<&mut Position>(entity).unwrap().0 += velocity;
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
            self.world.despawn(entity).unwrap();
        }
    }
}

/// Parallel: invert a matrix 100 times per entity over 1000 entities.
pub struct HeavyCompute(World);

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
        Self(world)
    }

    pub fn run(&mut self) {
        self.0
            .query_mut::<(&mut Position, &mut Affine)>()
            .into_iter_batched(64)
            .par_bridge()
            .for_each(|batch| {
                for (position, affine) in batch {
                    heavy_kernel(&mut affine.0, &mut position.0);
                }
            });
    }
}

/// Add B to 10k entities, then remove it again.
pub struct AddRemove {
    world: World,
    entities: Vec<Entity>,
}

struct AddRemoveA(#[allow(dead_code)] f32);
struct AddRemoveB(#[allow(dead_code)] f32);

impl AddRemove {
    pub fn new() -> Self {
        Self::with_entities(ADD_REMOVE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        let mut world = World::new();
        let entities = world
            .spawn_batch((0..n).map(|_| (AddRemoveA(0.0),)))
            .collect();
        Self { world, entities }
    }

    pub fn run(&mut self) {
        for &entity in &self.entities {
            self.world.insert_one(entity, AddRemoveB(0.0)).unwrap();
        }
        for &entity in &self.entities {
            self.world.remove_one::<AddRemoveB>(entity).unwrap();
        }
    }
}

fn serialize_world() -> World {
    let mut world = World::new();
    world.spawn_batch((0..SERIALIZE_ENTITIES).map(|_| {
        (
            ser::Transform::default(),
            ser::Position::default(),
            ser::Rotation::default(),
            ser::Velocity::default(),
        )
    }));
    world
}

/// Component keys written into the serialized stream.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy)]
enum Key {
    Transform,
    Position,
    Rotation,
    Velocity,
}

mod row {
    use super::{ser, Key};
    use ::hecs::serialize::row::{try_serialize, DeserializeContext, SerializeContext};
    use ::hecs::{EntityBuilder, EntityRef};
    use serde::de::MapAccess;
    use serde::ser::SerializeMap;

    pub struct Ctx;

    impl SerializeContext for Ctx {
        fn serialize_entity<S: SerializeMap>(
            &mut self,
            entity: EntityRef<'_>,
            mut map: S,
        ) -> Result<S::Ok, S::Error> {
            try_serialize::<ser::Transform, _, _>(&entity, &Key::Transform, &mut map)?;
            try_serialize::<ser::Position, _, _>(&entity, &Key::Position, &mut map)?;
            try_serialize::<ser::Rotation, _, _>(&entity, &Key::Rotation, &mut map)?;
            try_serialize::<ser::Velocity, _, _>(&entity, &Key::Velocity, &mut map)?;
            map.end()
        }
    }

    impl DeserializeContext for Ctx {
        fn deserialize_entity<'de, M: MapAccess<'de>>(
            &mut self,
            mut map: M,
            entity: &mut EntityBuilder,
        ) -> Result<(), M::Error> {
            while let Some(key) = map.next_key::<Key>()? {
                match key {
                    Key::Transform => entity.add(map.next_value::<ser::Transform>()?),
                    Key::Position => entity.add(map.next_value::<ser::Position>()?),
                    Key::Rotation => entity.add(map.next_value::<ser::Rotation>()?),
                    Key::Velocity => entity.add(map.next_value::<ser::Velocity>()?),
                };
            }
            Ok(())
        }
    }
}

mod column {
    use super::{ser, Key};
    use ::hecs::serialize::column::{
        deserialize_column, try_serialize, try_serialize_id, DeserializeContext, SerializeContext,
    };
    use ::hecs::{Archetype, ColumnBatchBuilder, ColumnBatchType};
    use serde::de::SeqAccess;
    use serde::ser::SerializeTuple;

    #[derive(Default)]
    pub struct Ctx(Vec<Key>);

    impl SerializeContext for Ctx {
        fn component_count(&self, archetype: &Archetype) -> usize {
            usize::from(archetype.has::<ser::Transform>())
                + usize::from(archetype.has::<ser::Position>())
                + usize::from(archetype.has::<ser::Rotation>())
                + usize::from(archetype.has::<ser::Velocity>())
        }

        fn serialize_component_ids<S: SerializeTuple>(
            &mut self,
            archetype: &Archetype,
            mut out: S,
        ) -> Result<S::Ok, S::Error> {
            try_serialize_id::<ser::Transform, _, _>(archetype, &Key::Transform, &mut out)?;
            try_serialize_id::<ser::Position, _, _>(archetype, &Key::Position, &mut out)?;
            try_serialize_id::<ser::Rotation, _, _>(archetype, &Key::Rotation, &mut out)?;
            try_serialize_id::<ser::Velocity, _, _>(archetype, &Key::Velocity, &mut out)?;
            out.end()
        }

        fn serialize_components<S: SerializeTuple>(
            &mut self,
            archetype: &Archetype,
            mut out: S,
        ) -> Result<S::Ok, S::Error> {
            try_serialize::<ser::Transform, _>(archetype, &mut out)?;
            try_serialize::<ser::Position, _>(archetype, &mut out)?;
            try_serialize::<ser::Rotation, _>(archetype, &mut out)?;
            try_serialize::<ser::Velocity, _>(archetype, &mut out)?;
            out.end()
        }
    }

    impl DeserializeContext for Ctx {
        fn deserialize_component_ids<'de, A: SeqAccess<'de>>(
            &mut self,
            mut seq: A,
        ) -> Result<ColumnBatchType, A::Error> {
            self.0.clear();
            let mut batch = ColumnBatchType::new();
            while let Some(key) = seq.next_element::<Key>()? {
                match key {
                    Key::Transform => batch.add::<ser::Transform>(),
                    Key::Position => batch.add::<ser::Position>(),
                    Key::Rotation => batch.add::<ser::Rotation>(),
                    Key::Velocity => batch.add::<ser::Velocity>(),
                };
                self.0.push(key);
            }
            Ok(batch)
        }

        fn deserialize_components<'de, A: SeqAccess<'de>>(
            &mut self,
            entity_count: u32,
            mut seq: A,
            batch: &mut ColumnBatchBuilder,
        ) -> Result<(), A::Error> {
            for key in &self.0 {
                match key {
                    Key::Transform => {
                        deserialize_column::<ser::Transform, _>(entity_count, &mut seq, batch)?
                    }
                    Key::Position => {
                        deserialize_column::<ser::Position, _>(entity_count, &mut seq, batch)?
                    }
                    Key::Rotation => {
                        deserialize_column::<ser::Rotation, _>(entity_count, &mut seq, batch)?
                    }
                    Key::Velocity => {
                        deserialize_column::<ser::Velocity, _>(entity_count, &mut seq, batch)?
                    }
                }
            }
            Ok(())
        }
    }
}

/// Serialize 1000 entities to RON (row format) and deserialize into a new world.
pub struct SerializeText(World);

impl SerializeText {
    pub fn new() -> Self {
        Self(serialize_world())
    }

    pub fn run(&mut self) {
        let mut text = String::new();
        let mut serializer = ron::Serializer::new(&mut text, None).unwrap();
        ::hecs::serialize::row::serialize(&self.0, &mut row::Ctx, &mut serializer).unwrap();
        let mut deserializer = ron::Deserializer::from_str(&text).unwrap();
        let world = ::hecs::serialize::row::deserialize(&mut row::Ctx, &mut deserializer).unwrap();
        assert_eq!(world.len() as usize, SERIALIZE_ENTITIES);
        black_box(world);
    }
}

/// Serialize 1000 entities to bincode (column format) and deserialize into a new world.
pub struct SerializeBinary(World);

impl SerializeBinary {
    pub fn new() -> Self {
        Self(serialize_world())
    }

    pub fn run(&mut self) {
        let options = ser::bincode_options();
        let mut bytes = Vec::new();
        let mut serializer = bincode::Serializer::new(&mut bytes, options);
        ::hecs::serialize::column::serialize(&self.0, &mut column::Ctx::default(), &mut serializer)
            .unwrap();
        let mut deserializer = bincode::Deserializer::from_slice(&bytes, options);
        let world =
            ::hecs::serialize::column::deserialize(&mut column::Ctx::default(), &mut deserializer)
                .unwrap();
        assert_eq!(world.len() as usize, SERIALIZE_ENTITIES);
        black_box(world);
    }
}
