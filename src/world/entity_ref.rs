//! Entity handles: [`World::entity`] and [`World::entity_mut`].
//!
//! A handle pairs one live entity with a borrow of its world, so a run of
//! reads or changes to the same entity does not repeat the id. The names
//! are Bevy's (`EntityRef`, `EntityWorldMut`); hecs users know `EntityRef`.
//! Every method delegates to the [`World`] method of the same name, so a
//! handle behaves exactly as the world does: same checks, same change
//! ticks, same hooks and observers.
//!
//! Unlike Bevy's, `get` returns a `Result` (as [`World::get`] does) and
//! `insert` returns `Result<&mut Self, _>` instead of panicking: an
//! observer may despawn the entity in the middle of a chain of calls, and
//! the next call then reports it instead of panicking.

use std::fmt;

use super::World;
use crate::bundle::Bundle;
use crate::component::{Component, ComponentId};
use crate::entity::{Entity, EntityLocation};
use crate::error::{ComponentError, EntityError};

/// A shared handle to one live entity; from [`World::entity`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
/// #[derive(Component)] struct Player;
/// let mut world = World::new();
/// let e = world.spawn((Health(3), Player));
/// let entity = world.entity(e).unwrap();
/// assert_eq!(entity.get::<Health>().unwrap().0, 3);
/// assert!(entity.contains::<Player>());
/// assert_eq!(entity.component_names(), ["Health", "Player"]);
/// ```
#[derive(Clone, Copy)]
pub struct EntityRef<'w> {
    world: &'w World,
    entity: Entity,
    /// Where the entity lives, found once when the handle is made: the
    /// world is borrowed shared for the handle's life, so it cannot move.
    location: EntityLocation,
}

impl fmt::Debug for EntityRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntityRef")
            .field("entity", &self.entity)
            .field("components", &self.component_names())
            .finish()
    }
}

impl<'w> EntityRef<'w> {
    /// The entity's id.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert_eq!(world.entity(e).unwrap().id(), e);
    /// ```
    pub fn id(&self) -> Entity {
        self.entity
    }

    /// The world the entity lives in.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert_eq!(world.entity(e).unwrap().world().len(), 1);
    /// ```
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// The entity's `T`, for as long as the world is borrowed; as
    /// [`World::get`] (Bevy's returns an `Option` instead).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug)] struct Health(u32);
    /// #[derive(Component, Debug)] struct Armor;
    /// let mut world = World::new();
    /// let e = world.spawn(Health(7));
    /// let entity = world.entity(e).unwrap();
    /// assert_eq!(entity.get::<Health>().unwrap().0, 7);
    /// assert_eq!(
    ///     entity.get::<Armor>().unwrap_err().to_string(),
    ///     "entity 0v1 has no component `Armor`"
    /// );
    /// ```
    #[inline]
    pub fn get<T: Component>(&self) -> Result<&'w T, ComponentError> {
        // The location the handle found: no second lookup of the entity.
        self.world.get_at::<T>(self.entity, self.location)
    }

    /// True if the entity has a `T` (Bevy's name; [`EntityRef::has`] is
    /// the same, with the name [`World::has`] and hecs use).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(Player);
    /// assert!(world.entity(e).unwrap().contains::<Player>());
    /// ```
    pub fn contains<T: Component>(&self) -> bool {
        self.world.has::<T>(self.entity)
    }

    /// True if the entity has a `T`; the same as [`EntityRef::contains`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert!(!world.entity(e).unwrap().has::<Player>());
    /// ```
    pub fn has<T: Component>(&self) -> bool {
        self.contains::<T>()
    }

    /// True if the entity has the component with id `id` (for components
    /// known only at run time, such as dynamic ones).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(Player);
    /// let id = world.component_id::<Player>().unwrap();
    /// assert!(world.entity(e).unwrap().contains_id(id));
    /// ```
    pub fn contains_id(&self, id: ComponentId) -> bool {
        self.world.contains_component_id(self.entity, id)
    }

    /// Which components the entity has: table components in id order,
    /// then sparse ones.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(Player);
    /// let id = world.component_id::<Player>().unwrap();
    /// assert_eq!(world.entity(e).unwrap().component_ids(), [id]);
    /// ```
    pub fn component_ids(&self) -> Vec<ComponentId> {
        self.world.component_ids_of(self.entity)
    }

    /// The short names of the entity's components, in
    /// [`EntityRef::component_ids`] order: for debugging and editors.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Position(f32);
    /// #[derive(Component)] #[component(storage = "sparse")] struct Burning;
    /// let mut world = World::new();
    /// let e = world.spawn((Burning, Position(0.0)));
    /// assert_eq!(world.entity(e).unwrap().component_names(), ["Position", "Burning"]);
    /// ```
    pub fn component_names(&self) -> Vec<&'w str> {
        let world = self.world;
        self.component_ids()
            .into_iter()
            .map(|id| world.components.name(id))
            .collect()
    }
}

/// An exclusive handle to one live entity, to read, insert, remove and
/// despawn without repeating its id; from [`World::entity_mut`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
/// #[derive(Component)] struct Poisoned;
/// let mut world = World::new();
/// let e = world.spawn(Health(10));
/// let mut entity = world.entity_mut(e).unwrap();
/// entity.get_mut::<Health>().unwrap().0 -= 3;
/// entity.insert(Poisoned).unwrap();
/// assert!(entity.contains::<Poisoned>());
/// entity.remove::<Poisoned>().unwrap();
/// assert_eq!(entity.get::<Health>().unwrap().0, 7);
/// entity.despawn().unwrap();
/// assert!(!world.contains(e));
/// ```
pub struct EntityWorldMut<'w> {
    world: &'w mut World,
    entity: Entity,
}

impl fmt::Debug for EntityWorldMut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntityWorldMut")
            .field("entity", &self.entity)
            .field("alive", &self.world.contains(self.entity))
            .field("components", &self.component_names())
            .finish()
    }
}

impl<'w> EntityWorldMut<'w> {
    /// The entity's id.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert_eq!(world.entity_mut(e).unwrap().id(), e);
    /// ```
    pub fn id(&self) -> Entity {
        self.entity
    }

    /// The world, shared, for as long as the handle is borrowed.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert_eq!(world.entity_mut(e).unwrap().world().len(), 1);
    /// ```
    pub fn world(&self) -> &World {
        self.world
    }

    /// A shared handle to the same entity. Fails if the entity was
    /// despawned meanwhile (by an observer or hook, say).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// let mut entity = world.entity_mut(e).unwrap();
    /// entity.insert(Player).unwrap();
    /// assert!(entity.as_readonly().unwrap().contains::<Player>());
    /// ```
    pub fn as_readonly(&self) -> Result<EntityRef<'_>, EntityError> {
        self.world.entity(self.entity)
    }

    /// The entity's `T`; as [`World::get`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(7));
    /// assert_eq!(world.entity_mut(e).unwrap().get::<Health>().unwrap().0, 7);
    /// ```
    #[inline]
    pub fn get<T: Component>(&self) -> Result<&T, ComponentError> {
        self.world.get::<T>(self.entity)
    }

    /// The entity's `T`, mutably; counts as a change, as
    /// [`World::get_mut`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(7));
    /// world.entity_mut(e).unwrap().get_mut::<Health>().unwrap().0 = 1;
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 1);
    /// ```
    #[inline]
    pub fn get_mut<T: Component>(&mut self) -> Result<&mut T, ComponentError> {
        self.world.get_mut::<T>(self.entity)
    }

    /// True if the entity is alive and has a `T` (Bevy's name).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(Player);
    /// assert!(world.entity_mut(e).unwrap().contains::<Player>());
    /// ```
    pub fn contains<T: Component>(&self) -> bool {
        self.world.has::<T>(self.entity)
    }

    /// True if the entity is alive and has a `T`; the same as
    /// [`EntityWorldMut::contains`], with [`World::has`]'s name.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert!(!world.entity_mut(e).unwrap().has::<Player>());
    /// ```
    pub fn has<T: Component>(&self) -> bool {
        self.contains::<T>()
    }

    /// Which components the entity has (empty once it is despawned); as
    /// [`EntityRef::component_ids`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(Player);
    /// let id = world.component_id::<Player>().unwrap();
    /// assert_eq!(world.entity_mut(e).unwrap().component_ids(), [id]);
    /// ```
    pub fn component_ids(&self) -> Vec<ComponentId> {
        self.world.component_ids_of(self.entity)
    }

    /// The short names of the entity's components; as
    /// [`EntityRef::component_names`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let e = world.spawn(Player);
    /// assert_eq!(world.entity_mut(e).unwrap().component_names(), ["Player"]);
    /// ```
    pub fn component_names(&self) -> Vec<&str> {
        self.component_ids()
            .into_iter()
            .map(|id| self.world.components.name(id))
            .collect()
    }

    /// Adds (or replaces) the components of `bundle`; as
    /// [`World::insert`]. Returns the handle again, to chain calls.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// #[derive(Component)] struct B;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.entity_mut(e).unwrap().insert(A).unwrap().insert(B).unwrap();
    /// assert!(world.has::<A>(e) && world.has::<B>(e));
    /// ```
    #[inline]
    pub fn insert<B: Bundle>(&mut self, bundle: B) -> Result<&mut Self, EntityError> {
        self.world.insert(self.entity, bundle)?;
        Ok(self)
    }

    /// Removes the components of bundle `B` and returns them; as
    /// [`World::remove`] (Bevy calls this `take`). Fails, changing nothing,
    /// if any is missing.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct A(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(A(4));
    /// let mut entity = world.entity_mut(e).unwrap();
    /// assert_eq!(entity.remove::<A>(), Ok(A(4)));
    /// assert!(entity.remove::<A>().is_err());
    /// ```
    #[inline]
    pub fn remove<B: Bundle>(&mut self) -> Result<B, ComponentError> {
        self.world.remove::<B>(self.entity)
    }

    /// Despawns the entity, dropping its components; as
    /// [`World::despawn`]. Fails if it was despawned already (by an
    /// observer, say).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// world.entity_mut(e).unwrap().despawn().unwrap();
    /// assert!(world.is_empty());
    /// ```
    #[inline]
    pub fn despawn(self) -> Result<(), EntityError> {
        self.world.despawn(self.entity)
    }

    /// Gives back the world borrow, ending the handle.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// let world_again = world.entity_mut(e).unwrap().into_world_mut();
    /// world_again.spawn(());
    /// assert_eq!(world.len(), 2);
    /// ```
    pub fn into_world_mut(self) -> &'w mut World {
        self.world
    }

    /// The world, mutably, for this crate's methods on the handle (the
    /// handle names its entity by id, so it stays valid whatever they do).
    pub(crate) fn world_mut_internal(&mut self) -> &mut World {
        self.world
    }
}

impl World {
    /// Spawns an entity with `bundle` and returns a handle to it, for
    /// building on: `world.spawn_entity(..).with_children(..)`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Tank;
    /// #[derive(Component)] struct Turret;
    /// let mut world = World::new();
    /// let tank = world
    ///     .spawn_entity(Tank)
    ///     .with_children(|t| { t.spawn(Turret); })
    ///     .id();
    /// assert_eq!(world.children(tank).len(), 1);
    /// ```
    pub fn spawn_entity<B: crate::bundle::Bundle>(&mut self, bundle: B) -> EntityWorldMut<'_> {
        let entity = self.spawn(bundle);
        EntityWorldMut {
            world: self,
            entity,
        }
    }

    /// A shared handle to `entity`, to read several of its components and
    /// list what it has. Fails if the handle is stale.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(1));
    /// assert_eq!(world.entity(e).unwrap().get::<Health>().unwrap().0, 1);
    /// world.despawn(e).unwrap();
    /// assert_eq!(world.entity(e).unwrap_err(), EntityError::NoSuchEntity(e));
    /// ```
    #[inline]
    pub fn entity(&self, entity: Entity) -> Result<EntityRef<'_>, EntityError> {
        let Some(location) = self.entities.get(entity) else {
            return Err(EntityError::NoSuchEntity(entity));
        };
        Ok(EntityRef {
            world: self,
            entity,
            location,
        })
    }

    /// An exclusive handle to `entity`, to read, insert, remove and despawn
    /// through. Fails if the handle is stale. [Flushes](World::flush)
    /// first, so an id from [`World::reserve_entity`] is accepted.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.entity_mut(e).unwrap().insert(Health(5)).unwrap();
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 5);
    /// world.despawn(e).unwrap();
    /// assert!(world.entity_mut(e).is_err());
    /// ```
    #[inline]
    pub fn entity_mut(&mut self, entity: Entity) -> Result<EntityWorldMut<'_>, EntityError> {
        self.flush();
        if !self.contains(entity) {
            return Err(EntityError::NoSuchEntity(entity));
        }
        Ok(EntityWorldMut {
            world: self,
            entity,
        })
    }

    /// Every live entity, as an [`EntityRef`], in iteration order
    /// (archetypes in creation order, rows in order; see the
    /// [module docs](crate::World)). hecs names this `iter` too; Bevy's is
    /// `iter_entities`. Ids reserved with [`World::reserve_entity`] appear
    /// once they are made live ([`World::flush`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let a = world.spawn(Health(1));
    /// let b = world.spawn(());
    /// let ids: Vec<Entity> = world.iter().map(|e| e.id()).collect();
    /// assert_eq!(ids, [b, a]); // the empty archetype comes first
    /// assert_eq!(world.iter().filter(|e| e.contains::<Health>()).count(), 1);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = EntityRef<'_>> + '_ {
        self.archetypes.iter().flat_map(move |archetype| {
            archetype
                .entities()
                .iter()
                .enumerate()
                .map(move |(row, &entity)| EntityRef {
                    world: self,
                    entity,
                    location: EntityLocation {
                        archetype: archetype.id(),
                        row: row as u32,
                    },
                })
        })
    }

    /// Every component of `entity` (none if it is not alive).
    fn component_ids_of(&self, entity: Entity) -> Vec<ComponentId> {
        match self.location(entity) {
            Some(loc) => self.components_of(entity, loc),
            None => Vec::new(),
        }
    }

    /// True if `entity` is alive and has component `id`.
    fn contains_component_id(&self, entity: Entity, id: ComponentId) -> bool {
        let known = self.components.get_info(id).is_some();
        match self.location(entity) {
            Some(loc) if known => self.has_id(entity, loc, id),
            _ => false,
        }
    }
}

/// Bevy's and hecs's names for the entity access above: the name a user
/// coming from them types first.
impl World {
    /// Bevy's name for [`World::entity`]: a shared handle to `entity`, or
    /// an error if the handle is stale.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert_eq!(world.get_entity(e).unwrap().id(), e);
    /// world.despawn(e).unwrap();
    /// assert!(world.get_entity(e).is_err());
    /// ```
    #[inline]
    pub fn get_entity(&self, entity: Entity) -> Result<EntityRef<'_>, EntityError> {
        self.entity(entity)
    }

    /// Bevy's name for [`World::entity_mut`]: an exclusive handle to
    /// `entity`, or an error if the handle is stale.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Armor(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// if let Ok(mut handle) = world.get_entity_mut(e) {
    ///     handle.insert(Armor(2)).unwrap();
    /// }
    /// assert_eq!(world.get::<Armor>(e).unwrap().0, 2);
    /// ```
    #[inline]
    pub fn get_entity_mut(&mut self, entity: Entity) -> Result<EntityWorldMut<'_>, EntityError> {
        self.entity_mut(entity)
    }

    /// Spawns an entity with no components; returns a handle to build on.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Crate;
    /// let mut world = World::new();
    /// let e = world.spawn_empty().id();
    /// world.insert_one(e, Crate).unwrap();
    /// assert!(world.has::<Crate>(e));
    /// ```
    pub fn spawn_empty(&mut self) -> EntityWorldMut<'_> {
        self.spawn_entity(())
    }

    /// Bevy's name for [`World::iter`]: every live entity, as an
    /// [`EntityRef`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.spawn(());
    /// world.spawn(());
    /// assert_eq!(world.iter_entities().count(), 2);
    /// ```
    pub fn iter_entities(&self) -> impl Iterator<Item = EntityRef<'_>> + '_ {
        self.iter()
    }

    /// Bevy's name for [`World::despawn`], which already returns a
    /// `Result` (and never panics on a stale handle).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert!(world.try_despawn(e).is_ok());
    /// assert_eq!(world.try_despawn(e), Err(EntityError::NoSuchEntity(e)));
    /// ```
    pub fn try_despawn(&mut self, entity: Entity) -> Result<(), EntityError> {
        self.despawn(entity)
    }

    /// hecs's name: `count` ids reserved at once (see
    /// [`World::reserve_entity`]); each comes to life, empty, at the next
    /// structural change or [`World::flush`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Slot;
    /// let mut world = World::new();
    /// let ids: Vec<Entity> = world.reserve_entities(3).collect();
    /// world.flush();
    /// for &e in &ids {
    ///     world.insert_one(e, Slot).unwrap();
    /// }
    /// assert_eq!(world.len(), 3);
    /// ```
    pub fn reserve_entities(&self, count: u32) -> impl Iterator<Item = Entity> + '_ {
        (0..count).map(move |_| self.reserve_entity())
    }

    /// hecs's name: the item of query `Q` for one entity, with mutable
    /// access (a one-off [`QueryState::get_mut`](crate::QueryState::get_mut);
    /// keep a `QueryState` in a hot loop).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Pos(f32);
    /// #[derive(Component)] struct Vel(f32);
    /// let mut world = World::new();
    /// let e = world.spawn((Pos(0.0), Vel(2.0)));
    /// let (p, v) = world.query_one_mut::<(&mut Pos, &Vel)>(e).unwrap();
    /// p.0 += v.0;
    /// assert_eq!(world.get::<Pos>(e).unwrap().0, 2.0);
    /// let still = world.spawn(());
    /// assert!(world.query_one_mut::<&Vel>(still).is_err());
    /// ```
    pub fn query_one_mut<Q: crate::QueryData>(
        &mut self,
        entity: Entity,
    ) -> Result<Q::Item<'_>, crate::QueryEntityError> {
        let mut state = self.query::<Q>();
        state.get_mut(self, entity)
    }

    /// hecs's name: true if `entity` is alive and matches query `Q` (has
    /// what `Q` asks for). Fetches nothing.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Pos(f32);
    /// #[derive(Component)] struct Vel(f32);
    /// let mut world = World::new();
    /// let e = world.spawn(Pos(0.0));
    /// assert!(world.satisfies::<&Pos>(e));
    /// assert!(!world.satisfies::<(&Pos, &Vel)>(e));
    /// ```
    pub fn satisfies<Q: crate::QueryData>(&mut self, entity: Entity) -> bool {
        let mut state = self.query::<Q>();
        state.contains(self, entity)
    }
}
