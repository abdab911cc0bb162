//! Several items of one query at once: [`QueryState::get_many`] and
//! [`QueryState::get_many_mut`], and [`World::get_many_mut`] on top.
//!
//! Mutable items for distinct entities never overlap: each lives in its own
//! table row or sparse-set entry (change ticks included). So the one rule
//! that makes `get_many_mut` sound is that the entities are pairwise
//! distinct, and it is checked before any item is made: a repeated entity
//! returns [`QueryEntityError::AliasedMutability`] and no reference at all.

use super::state::Miss;
use super::{QueryData, QueryFilter, QueryState, ReadOnlyQueryData, TickRange};
use crate::component::Component;
use crate::component::short_type_name;
use crate::entity::Entity;
use crate::error::QueryEntityError;
use crate::query::Has;
use crate::world::{Disabled, World};

impl<Q: QueryData, F: QueryFilter> QueryState<Q, F> {
    /// The read-only items for `N` entities at once (the same entity may
    /// appear more than once). Fails on the first entity that is gone or
    /// does not match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let a = world.spawn(Health(1));
    /// let b = world.spawn(Health(2));
    /// let mut q = world.query::<&Health>();
    /// let [x, y, z] = q.get_many(&world, [a, b, a]).unwrap();
    /// assert_eq!(x.0 + y.0 + z.0, 4);
    /// ```
    pub fn get_many<'w, const N: usize>(
        &mut self,
        world: &'w World,
        entities: [Entity; N],
    ) -> Result<[Q::Item<'w>; N], QueryEntityError>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: a read-only query under a shared borrow of the world;
        // shared items may overlap.
        unsafe { self.get_many_unchecked(world, entities) }
    }

    /// The items for `N` distinct entities at once, with mutable access:
    /// to swap or compare the components of two entities, say.
    ///
    /// Fails, handing out nothing, if an entity appears twice
    /// ([`QueryEntityError::AliasedMutability`]: two `&mut` to one value
    /// are never made), or if one is gone or does not match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug)] struct Health(u32);
    /// let mut world = World::new();
    /// let a = world.spawn(Health(10));
    /// let b = world.spawn(Health(0));
    /// let mut q = world.query::<&mut Health>();
    /// let [from, to] = q.get_many_mut(&mut world, [a, b]).unwrap();
    /// std::mem::swap(from, to);
    /// assert_eq!(world.get::<Health>(b).unwrap().0, 10);
    /// assert_eq!(
    ///     q.get_many_mut(&mut world, [a, a]).unwrap_err(),
    ///     QueryEntityError::AliasedMutability(a)
    /// );
    /// ```
    pub fn get_many_mut<'w, const N: usize>(
        &mut self,
        world: &'w mut World,
        entities: [Entity; N],
    ) -> Result<[Q::Item<'w>; N], QueryEntityError> {
        check_distinct(&entities)?;
        // SAFETY: exclusive borrow of the world, and the entities are
        // pairwise distinct (checked above), so the items, which each
        // point into their own entity's row or sparse entry, are disjoint.
        unsafe { self.get_many_unchecked(world, entities) }
    }

    /// # Safety
    /// - if `Q` writes, the caller has exclusive access to the components it
    ///   writes for `'w`, and `entities` are pairwise distinct.
    unsafe fn get_many_unchecked<'w, const N: usize>(
        &mut self,
        world: &'w World,
        entities: [Entity; N],
    ) -> Result<[Q::Item<'w>; N], QueryEntityError> {
        self.prepare(world);
        let ticks = self.get_ticks(world);
        // Check every entity before making any item, so a failure hands out
        // nothing (and a writing query stamps no change tick).
        for &entity in &entities {
            // SAFETY: prepared for `world` just above; nothing is fetched.
            unsafe { self.matches_prepared(world, entity, ticks) }?;
        }
        let mut items = Vec::with_capacity(N);
        for entity in entities {
            // SAFETY: prepared above; access forwarded from the caller, and
            // each entity comes once, so no two items alias.
            items.push(unsafe { self.get_prepared(world, entity, ticks) }?);
        }
        Ok(items
            .try_into()
            .unwrap_or_else(|_| unreachable!("one item per entity")))
    }

    /// `Ok` if [`QueryState::get_prepared`] would yield an item for
    /// `entity`, found without fetching (so without stamping a tick).
    ///
    /// # Safety
    /// - `self.prepare(world)` ran since the world last changed structurally.
    unsafe fn matches_prepared(
        &self,
        world: &World,
        entity: Entity,
        ticks: TickRange,
    ) -> Result<(), QueryEntityError> {
        // SAFETY: forwarded contract. (The probe also skips a disabled
        // row, as the fetch does: no entity passes here and fails there.)
        unsafe { self.probe_prepared(world, entity, ticks) }.map_err(|miss| match miss {
            Miss::NoSuchEntity => QueryEntityError::NoSuchEntity(entity),
            Miss::NoMatch => QueryEntityError::QueryDoesNotMatch {
                entity,
                query: short_type_name::<Q>(),
            },
        })
    }
}

/// `Err(AliasedMutability(e))` for the first entity `e` that appears twice.
fn check_distinct(entities: &[Entity]) -> Result<(), QueryEntityError> {
    for (i, &entity) in entities.iter().enumerate() {
        if entities[..i].contains(&entity) {
            return Err(QueryEntityError::AliasedMutability(entity));
        }
    }
    Ok(())
}

impl World {
    /// `N` distinct entities' `T`, all mutable at once (Bevy's
    /// `get_many_mut`; hecs users write `query_many_mut`). Fails, handing
    /// out nothing, if an entity appears twice
    /// ([`QueryEntityError::AliasedMutability`]), is gone, or lacks a `T`.
    ///
    /// Like [`World::get_mut`], and unlike a query, it reaches
    /// [`Disabled`] entities: direct access by id sees them.
    ///
    /// Each call builds a one-off query; in a hot loop keep a
    /// [`QueryState`] and call [`QueryState::get_many_mut`] instead.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug)] struct Gold(u32);
    /// let mut world = World::new();
    /// let alice = world.spawn(Gold(30));
    /// let bob = world.spawn(Gold(5));
    /// let [from, to] = world.get_many_mut::<Gold, 2>([alice, bob]).unwrap();
    /// from.0 -= 10;
    /// to.0 += 10;
    /// assert_eq!(world.get::<Gold>(bob).unwrap().0, 15);
    /// assert!(world.get_many_mut::<Gold, 2>([bob, bob]).is_err());
    /// ```
    pub fn get_many_mut<T: Component, const N: usize>(
        &mut self,
        entities: [Entity; N],
    ) -> Result<[&mut T; N], QueryEntityError> {
        crate::component::require_mutable::<T>();
        check_distinct(&entities)?;
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<Disabled>() {
            // Naming the marker already sees disabled entities.
            let mut state = self.query::<&mut T>();
            return state.get_many_mut(self, entities);
        }
        // Direct access by id sees disabled entities (as `World::get_mut`
        // does): a query that names the marker skips no entity.
        let mut state = self.query::<(&mut T, Has<Disabled>)>();
        match state.get_many_mut(self, entities) {
            Ok(items) => Ok(items.map(|(value, _)| value)),
            Err(QueryEntityError::QueryDoesNotMatch { entity, .. }) => {
                Err(QueryEntityError::QueryDoesNotMatch {
                    entity,
                    query: short_type_name::<&mut T>(),
                })
            }
            Err(other) => Err(other),
        }
    }
}
