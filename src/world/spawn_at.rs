//! Rebuilding a world with the same ids: [`World::spawn_at`] and the
//! allocator's [`EntitiesSnapshot`].

use thiserror::Error;

use super::{DynamicBundle, World, location};
use crate::archetype::ArchetypeId;
use crate::entity::Entity;
use crate::error::EntityError;

/// The state of a world's entity allocator: every slot's generation and
/// whether it holds a live entity, and the order of the free list (which
/// decides the ids the next spawns get). Saved with
/// [`World::entities_snapshot`], put back with [`World::restore_entities`]
/// once the live entities are back (through [`World::spawn_at`]): from
/// then on the world hands out the same ids as the original did, which is
/// what replays, lockstep networking and save games need.
///
/// Holds plain numbers ([`slots`](Self::slots), [`free_list`](Self::free_list),
/// [`from_parts`](Self::from_parts)), to store in any format.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Clone)] struct Hp(u32);
/// let mut original = World::new();
/// let es: Vec<Entity> = (0..4).map(|i| original.spawn(Hp(i))).collect();
/// original.despawn(es[1]).unwrap();
/// original.despawn(es[2]).unwrap();
/// let saved = original.entities_snapshot();
/// let next = original.spawn(Hp(9));
///
/// let mut copy = World::new();
/// for e in [es[0], es[3]] {
///     copy.spawn_at(e, Hp(0));
/// }
/// copy.restore_entities(&saved).unwrap();
/// assert_eq!(copy.spawn(Hp(9)), next);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntitiesSnapshot {
    slots: Vec<(u32, bool)>,
    free: Vec<u32>,
}

impl EntitiesSnapshot {
    /// Per slot (entity index): its generation (a live entity's, or the
    /// one the slot hands out next) and whether it held a live entity.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert_eq!(world.entities_snapshot().slots(), &[(e.generation(), true)]);
    /// ```
    pub fn slots(&self) -> &[(u32, bool)] {
        &self.slots
    }

    /// The free list: the indices the next spawns reuse, the last first.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// world.despawn(e).unwrap();
    /// assert_eq!(world.entities_snapshot().free_list(), &[e.index()]);
    /// ```
    pub fn free_list(&self) -> &[u32] {
        &self.free
    }

    /// A snapshot from stored parts (as [`slots`](Self::slots) and
    /// [`free_list`](Self::free_list) gave them). Checked when restored.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.spawn(());
    /// let saved = world.entities_snapshot();
    /// let again = mosaic::EntitiesSnapshot::from_parts(saved.slots().to_vec(), saved.free_list().to_vec());
    /// assert_eq!(again, saved);
    /// ```
    pub fn from_parts(slots: Vec<(u32, bool)>, free: Vec<u32>) -> Self {
        EntitiesSnapshot { slots, free }
    }
}

/// Why [`World::restore_entities`] refused a snapshot (changing nothing).
///
/// # Example
/// ```
/// use mosaic::{EntitiesSnapshot, RestoreEntitiesError, World};
/// let mut world = World::new();
/// let snapshot = EntitiesSnapshot::from_parts(vec![(1, true)], vec![]);
/// assert_eq!(
///     world.restore_entities(&snapshot),
///     Err(RestoreEntitiesError::LiveMismatch { index: 0 })
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RestoreEntitiesError {
    /// Slot `index` is live in one of the world and the snapshot and not
    /// in the other, or live in both with different generations: spawn the
    /// snapshot's live entities with [`World::spawn_at`] first.
    #[error(
        "entity slot {index} is not live in the world as in the snapshot (spawn the snapshot's live entities with `spawn_at` first)"
    )]
    LiveMismatch {
        /// The entity index.
        index: u32,
    },
    /// The world has used more entity slots than the snapshot knows.
    #[error("the world has {world} entity slots, more than the snapshot's {snapshot}")]
    TooManySlots {
        /// Slots the world has.
        world: usize,
        /// Slots the snapshot has.
        snapshot: usize,
    },
    /// The free list names a slot out of range, a live slot, or one slot
    /// twice; or a generation is 0.
    #[error("the snapshot is malformed: {0}")]
    Malformed(String),
}

impl World {
    /// How many entity slots one [`World::spawn_at`] may add to the
    /// allocator: an index at most this far past the slots the world has
    /// used (16,777,216; each slot costs 16 bytes, so 256 MB at most per
    /// call). A farther index, which only a corrupt or hostile id names
    /// (`Entity::from_bits` of any number), is refused with a panic
    /// before anything changes, rather than growing the allocator to it
    /// and aborting out of memory. Ids rebuilt in ascending index order
    /// never meet the limit unless two of them are that far apart.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let far = Entity::from_bits((1 << 32) | 3_000_000_000).unwrap();
    /// let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
    ///     world.spawn_at(far, ());
    /// }));
    /// assert!(refused.is_err());
    /// assert!(world.is_empty());
    /// let near = Entity::from_bits((1 << 32) | 1000).unwrap();
    /// world.spawn_at(near, ());
    /// assert!(world.contains(near));
    /// assert!(1000 < World::SPAWN_AT_MAX_GROWTH);
    /// ```
    pub const SPAWN_AT_MAX_GROWTH: u32 = 1 << 24;

    /// Spawns an entity with exactly the id `entity` (index and
    /// generation), as hecs's `spawn_at`: for rebuilding a world with the
    /// ids of another (a save game, a replay, a network peer). An entity
    /// living at that index already, of any generation, is despawned
    /// first. Indices skipped on the way become free.
    ///
    /// # Panics
    /// If that occupant refuses despawn (the target of a relation with
    /// `on_target_despawn = "refuse"` that has sources), naming it, before
    /// anything changes: unrelate its sources first. If `entity` has index
    /// `u32::MAX`, [`Entity::PLACEHOLDER`]'s, which no world hands out. If
    /// its index lies more than [`World::SPAWN_AT_MAX_GROWTH`] slots past
    /// those this world has used (growing the allocator that far would
    /// cost gigabytes), before anything changes.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut elsewhere = World::new();
    /// for _ in 0..5 { elsewhere.spawn(()); }
    /// let id = elsewhere.spawn(Hp(3));
    ///
    /// let mut world = World::new();
    /// world.spawn_at(id, Hp(3));
    /// assert_eq!(world.get::<Hp>(id), Ok(&Hp(3)));
    /// world.spawn_at(id, Hp(4)); // replaces it
    /// assert_eq!(world.get::<Hp>(id), Ok(&Hp(4)));
    /// assert_eq!(world.len(), 1);
    /// ```
    pub fn spawn_at(&mut self, entity: Entity, components: impl DynamicBundle) {
        assert!(
            entity.index() != u32::MAX,
            "spawn_at({entity:?}): index u32::MAX is Entity::PLACEHOLDER's, never a real entity's"
        );
        self.flush();
        let used = self.entities.slot_count() as u64;
        let index = u64::from(entity.index());
        assert!(
            index < used + u64::from(Self::SPAWN_AT_MAX_GROWTH),
            "spawn_at({entity:?}): index {index} lies {} slots past the {used} this world has used; \
             one spawn_at adds at most World::SPAWN_AT_MAX_GROWTH ({}) slots (16 bytes each): \
             is the id corrupt? (rebuilding a world, spawn its ids in ascending index order)",
            index + 1 - used,
            Self::SPAWN_AT_MAX_GROWTH,
        );
        while let Err(occupant) = self.entities.claim(entity) {
            // Its despawn may run observers, which may spawn: claim again.
            if let Err(EntityError::DespawnRefused { relation, .. }) = self.despawn(occupant) {
                panic!(
                    "spawn_at({entity:?}): the entity living at that index, {occupant:?}, \
                     refuses despawn while it is a `{relation}` target; unrelate its sources first"
                );
            }
            self.flush();
        }
        let row = self
            .archetypes
            .table_mut(ArchetypeId::EMPTY)
            .push_empty(entity);
        self.entities
            .place(entity, location(ArchetypeId::EMPTY, row));
        // One move to the final archetype, then the spawn is announced
        // with every component in place.
        components.spawn_placed(self, entity);
    }

    /// Reserves an id for a spawn command ([`Commands::spawn`](crate::Commands::spawn)):
    /// unlike [`World::reserve_entity`], the id never comes to life empty
    /// at a flush; it stays reserved until [`World::spawn_held`] places
    /// the entity whole (or the command is dropped and the id given up).
    pub(crate) fn reserve_held_entity(&self) -> Entity {
        self.entities.reserve_held()
    }

    /// The spawn command's step: makes `entity`, reserved with
    /// [`World::reserve_held_entity`] (or a buffer's fresh index held the
    /// same way), a live entity holding `bundle`, on the path of
    /// [`World::spawn_at`]: placed with nothing and unannounced, moved
    /// once to its final archetype, then announced whole. Until here,
    /// nothing (queries, `contains`, observers) saw it. Fails, dropping
    /// the bundle, if the id is not held any more (taken by a
    /// [`World::spawn_at`] of its index), or if the bundle's
    /// [`ChildOf`](crate::ChildOf) names a parent it cannot have (gone, or
    /// a cycle): then the id is given up, never announced.
    pub(crate) fn spawn_held<B: crate::bundle::Bundle>(
        &mut self,
        entity: Entity,
        bundle: B,
    ) -> Result<(), EntityError> {
        self.flush();
        if !self.entities.take_held(entity) {
            return Err(EntityError::NoSuchEntity(entity));
        }
        let row = self
            .archetypes
            .table_mut(ArchetypeId::EMPTY)
            .push_empty(entity);
        self.entities
            .place(entity, location(ArchetypeId::EMPTY, row));
        // A refused bundle leaves no entity: the placed one goes again,
        // unannounced (the slot freed under a newer generation).
        Ok(self.try_spawn_bundle_placed(entity, bundle)?)
    }

    /// The state of this world's entity allocator, to restore with
    /// [`World::restore_entities`] (see [`EntitiesSnapshot`]).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.spawn(());
    /// assert_eq!(world.entities_snapshot().slots().len(), 1);
    /// ```
    pub fn entities_snapshot(&mut self) -> EntitiesSnapshot {
        self.flush();
        let (slots, free) = self.entities.snapshot();
        EntitiesSnapshot { slots, free }
    }

    /// Puts back a saved allocator state: the generations of free slots
    /// and the order of the free list, so the next spawns get the ids they
    /// got after the snapshot was taken. The world's live entities must be
    /// the snapshot's (same indices and generations; bring them back with
    /// [`World::spawn_at`]).
    ///
    /// Fails, changing nothing, if they are not, if this world has used
    /// more entity slots than the snapshot has, or if the snapshot is
    /// malformed.
    ///
    /// # Example
    /// ```
    /// use mosaic::World;
    /// let mut a = World::new();
    /// let gone = a.spawn(());
    /// a.despawn(gone).unwrap();
    /// let saved = a.entities_snapshot();
    /// let mut b = World::new();
    /// b.restore_entities(&saved).unwrap();
    /// assert_eq!(b.spawn(()), a.spawn(()));
    /// ```
    pub fn restore_entities(
        &mut self,
        snapshot: &EntitiesSnapshot,
    ) -> Result<(), RestoreEntitiesError> {
        self.flush();
        let slots = &snapshot.slots;
        if self.entities.slot_count() > slots.len() {
            return Err(RestoreEntitiesError::TooManySlots {
                world: self.entities.slot_count(),
                snapshot: slots.len(),
            });
        }
        if u32::try_from(slots.len()).is_err() {
            return Err(RestoreEntitiesError::Malformed("too many slots".into()));
        }
        for (index, &(generation, live)) in slots.iter().enumerate() {
            if generation == 0 {
                return Err(RestoreEntitiesError::Malformed(format!(
                    "slot {index} has generation 0"
                )));
            }
            let here = self.entities.slot(index);
            let matches = match here {
                Some((g, true)) => live && g == generation,
                Some((_, false)) | None => !live,
            };
            if !matches {
                return Err(RestoreEntitiesError::LiveMismatch {
                    index: index as u32,
                });
            }
        }
        let mut seen = vec![false; slots.len()];
        for &index in &snapshot.free {
            let i = index as usize;
            match slots.get(i) {
                None => {
                    return Err(RestoreEntitiesError::Malformed(format!(
                        "free slot {index} is out of range"
                    )));
                }
                Some(&(_, true)) => {
                    return Err(RestoreEntitiesError::Malformed(format!(
                        "free slot {index} is live"
                    )));
                }
                Some(_) if seen[i] => {
                    return Err(RestoreEntitiesError::Malformed(format!(
                        "free slot {index} is listed twice"
                    )));
                }
                Some(_) => seen[i] = true,
            }
        }
        self.entities.restore(slots, &snapshot.free);
        Ok(())
    }
}
