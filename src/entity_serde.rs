//! `Serialize` and `Deserialize` for [`Entity`] (the optional `serde`
//! feature, which `mosaic-ecs` turns on with its own `serde` feature).
//!
//! They live here, not in the scene crate, because only the crate that
//! defines `Entity` may implement a foreign trait for it, and a user's
//! component that holds an `Entity` derives its serde impls through these.
//!
//! An entity is written as its scene id, a `u64`: its
//! [`to_bits`](Entity::to_bits), except that a handle of generation
//! `u32::MAX` is written as its index alone, which reads back as the same
//! handle. Any `u64` reads back: bits no live handle can have (generation
//! 0, such as the small ids of a hand-written scene) become placeholder
//! handles of generation `u32::MAX`, which only a scene's id map resolves.
//! So small hand-written ids write back as written.

use std::cell::Cell;
use std::num::NonZeroU32;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::entity::Entity;

thread_local! {
    /// Entities deserialised on this thread so far.
    static DESERIALIZED: Cell<u64> = const { Cell::new(0) };
}

impl Entity {
    /// The first scene id that is reserved: `0xFFFF_FFFF_0000_0000`. Ids
    /// from here up are the bits of generation `u32::MAX`, which
    /// [`Entity::from_scene_id`] also gives the small ids (below 2^32), so
    /// they cannot be told apart from those; no save writes them (a handle
    /// of that generation is written as its index alone), and reading one
    /// as an entity is an error.
    ///
    /// # Example
    /// ```
    /// use mosaic::Entity;
    /// # #[derive(serde::Deserialize)] struct Target(Entity);
    /// let big = Entity::RESERVED_SCENE_IDS + 7;
    /// assert!(serde_json::from_str::<Target>(&big.to_string()).is_err());
    /// assert!(serde_json::from_str::<Target>("7").is_ok());
    /// ```
    pub const RESERVED_SCENE_IDS: u64 = (u32::MAX as u64) << 32;

    /// The handle a scene id stands for until a scene's id map resolves it:
    /// the handle with those bits ([`Entity::from_bits`]), or, for bits of
    /// generation 0, a placeholder of generation `u32::MAX` and the id's
    /// low 32 bits as index. [`Entity::scene_id`] reverses it.
    ///
    /// # Example
    /// ```
    /// use mosaic::Entity;
    /// let placeholder = Entity::from_scene_id(7);
    /// assert_eq!((placeholder.index(), placeholder.generation()), (7, u32::MAX));
    /// assert_eq!(placeholder.scene_id(), 7);
    /// let real = Entity::from_bits((2 << 32) | 5).unwrap();
    /// assert_eq!(Entity::from_scene_id(real.to_bits()), real);
    /// ```
    pub fn from_scene_id(id: u64) -> Entity {
        Entity::from_bits(id).unwrap_or_else(|| Entity::new(id as u32, NonZeroU32::MAX))
    }

    /// The id this handle is written as in a scene: [`Entity::to_bits`],
    /// or the index alone for a handle of generation `u32::MAX` (see
    /// [`Entity::from_scene_id`]).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert_eq!(e.scene_id(), e.to_bits());
    /// ```
    pub fn scene_id(self) -> u64 {
        if self.generation() == u32::MAX {
            u64::from(self.index())
        } else {
            self.to_bits()
        }
    }

    /// How many entities this thread has deserialised so far (a wrapping
    /// count). A loader compares it before and after decoding a value to
    /// learn whether the value held entity references, and so needs its
    /// references remapped.
    ///
    /// # Example
    /// ```
    /// use mosaic::Entity;
    /// # #[derive(serde::Deserialize)] struct Target(Entity);
    /// let before = Entity::deserialized_on_this_thread();
    /// let _: Target = serde_json::from_str("12").unwrap();
    /// assert_eq!(Entity::deserialized_on_this_thread(), before + 1);
    /// ```
    pub fn deserialized_on_this_thread() -> u64 {
        DESERIALIZED.with(Cell::get)
    }
}

/// Written as its [`scene_id`](Entity::scene_id).
impl Serialize for Entity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.scene_id())
    }
}

/// Read from any `u64` below [`Entity::RESERVED_SCENE_IDS`], as
/// [`Entity::from_scene_id`]; a reserved id is an error (it would read as
/// the same handle as its low 32 bits, so a reference to it would silently
/// become a reference to another entity).
impl<'de> Deserialize<'de> for Entity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Entity, D::Error> {
        let id = u64::deserialize(deserializer)?;
        if id >= Entity::RESERVED_SCENE_IDS {
            return Err(serde::de::Error::custom(format_args!(
                "entity id {id} is reserved (scene ids must be below {})",
                Entity::RESERVED_SCENE_IDS
            )));
        }
        DESERIALIZED.with(|c| c.set(c.get().wrapping_add(1)));
        Ok(Entity::from_scene_id(id))
    }
}

/// Written as a unit struct, so scenes can save the hierarchy (the scene
/// crate's `TypeRegistry::register_relation::<ChildOf>()`).
impl Serialize for crate::ChildOf {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_unit_struct("ChildOf")
    }
}

/// Read from a unit (`()` in RON, `null` in JSON, nothing in postcard).
impl<'de> Deserialize<'de> for crate::ChildOf {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<crate::ChildOf, D::Error> {
        struct Unit;
        impl serde::de::Visitor<'_> for Unit {
            type Value = crate::ChildOf;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the unit struct ChildOf")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<crate::ChildOf, E> {
                Ok(crate::ChildOf(Entity::PLACEHOLDER))
            }
        }
        deserializer.deserialize_unit_struct("ChildOf", Unit)
    }
}
