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

/// Read from any `u64`, as [`Entity::from_scene_id`].
impl<'de> Deserialize<'de> for Entity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Entity, D::Error> {
        let id = u64::deserialize(deserializer)?;
        DESERIALIZED.with(|c| c.set(c.get().wrapping_add(1)));
        Ok(Entity::from_scene_id(id))
    }
}
