//! Several items of one query at once: [`QueryState::get_many`] and
//! [`QueryState::get_many_mut`], and [`World::get_many_mut`] on top.
//!
//! Mutable items for distinct entities never overlap: each lives in its own
//! table row or sparse-set entry (change ticks included). So the one rule
//! that makes `get_many_mut` sound is that the entities are pairwise
//! distinct, and it is checked before any item is made: a repeated entity
//! returns [`QueryEntityError::AliasedMutability`] and no reference at all.

use super::{Query, QueryData, QueryFilter, QueryState, ReadOnlyQueryData, TickRange};
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
        // SAFETY: prepared for `world` just above; access forwarded.
        unsafe { self.get_many_prepared(world, entities, ticks) }
    }

    /// [`QueryState::get_many_unchecked`] for a state already prepared.
    ///
    /// # Safety
    /// - `self.prepare(world)` ran since the world last changed structurally;
    /// - if `Q` writes, the caller has exclusive access to the components it
    ///   writes for `'w`, and `entities` are pairwise distinct.
    pub(crate) unsafe fn get_many_prepared<'w, const N: usize>(
        &self,
        world: &'w World,
        entities: [Entity; N],
        ticks: TickRange,
    ) -> Result<[Q::Item<'w>; N], QueryEntityError> {
        // Check every entity before making any item, so a failure hands out
        // nothing (and a writing query stamps no change tick).
        for &entity in &entities {
            // SAFETY: prepared (the caller's contract); nothing is fetched.
            unsafe { self.matches_prepared(world, entity, ticks) }?;
        }
        let mut items = Vec::with_capacity(N);
        for entity in entities {
            // SAFETY: prepared; access forwarded from the caller, and each
            // entity comes once, so no two items alias.
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
        let loc = world
            .location(entity)
            .ok_or(QueryEntityError::NoSuchEntity(entity))?;
        // SAFETY: forwarded contract; `loc` is `entity`'s location.
        let found = unsafe { self.matches_at(world, entity, loc, ticks) };
        found
            .then_some(())
            .ok_or_else(|| QueryEntityError::QueryDoesNotMatch {
                entity,
                query: short_type_name::<Q>(),
            })
    }

    /// True if `entity`, at `loc`, would yield an item: found without
    /// fetching (so without stamping a tick) and without allocating.
    ///
    /// # Safety
    /// - `self.prepare(world)` ran since the world last changed structurally;
    /// - `loc` is `entity`'s current location in `world`.
    unsafe fn matches_at(
        &self,
        world: &World,
        entity: Entity,
        loc: crate::entity::EntityLocation,
        ticks: TickRange,
    ) -> bool {
        let Some(matched) = self.matched_entry(loc.archetype) else {
            return false;
        };
        let archetype = world.archetype(loc.archetype);
        let row = loc.row as usize;
        if archetype.table.disabled().count() > 0
            && self.skips_disabled(world)
            && archetype.table.disabled().contains(row)
        {
            return false;
        }
        let (data_state, filter_state) = self.states();
        // SAFETY: the state belongs to `world` (prepared); the archetype
        // matched, with its archetype states cached; `row` holds `entity`
        // (the caller's contract); the fetch only answers `can_fetch`,
        // which writes and yields nothing, and the filter only reads.
        unsafe {
            let mut data = Q::init_fetch(world, data_state, ticks);
            let mut filter = F::init_fetch(world, filter_state, ticks);
            Q::set_archetype(&mut data, data_state, matched.data, archetype);
            F::set_archetype(&mut filter, filter_state, matched.filter, archetype);
            F::filter(&mut filter, entity, row) && Q::can_fetch(&data, entity)
        }
    }

    /// True if `entity` is alive in `world` and matches (as
    /// [`Query::contains`]). Fetches nothing, so a writing query marks
    /// nothing changed.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let a = world.spawn(Health(1));
    /// let b = world.spawn(());
    /// let mut q = world.query::<&mut Health>();
    /// assert!(q.contains(&world, a));
    /// assert!(!q.contains(&world, b));
    /// ```
    pub fn contains(&mut self, world: &World, entity: Entity) -> bool {
        self.prepare(world);
        let ticks = self.get_ticks(world);
        world.location(entity).is_some_and(|loc| {
            // SAFETY: prepared just above; `loc` is `entity`'s location,
            // just read; nothing is fetched.
            unsafe { self.matches_at(world, entity, loc, ticks) }
        })
    }

    /// True if no entity of `world` would yield an item. Fetches nothing,
    /// so a writing query marks nothing changed.
    ///
    /// # Safety
    /// - `self.prepare(world)` ran since the world last changed structurally.
    pub(crate) unsafe fn is_empty_prepared(&self, world: &World, ticks: TickRange) -> bool {
        let check = |entities: &[Entity]| {
            entities.iter().any(|&entity| {
                world.location(entity).is_some_and(|loc| {
                    // SAFETY: prepared (the caller's contract); `loc` is
                    // `entity`'s location, just read.
                    unsafe { self.matches_at(world, entity, loc, ticks) }
                })
            })
        };
        if let Some(driver) = self.driver(world) {
            return !check(driver.entities);
        }
        !self
            .matched()
            .iter()
            .any(|m| check(world.archetype(m.id).entities()))
    }
}

impl<'w, 's, Q: QueryData, F: QueryFilter> Query<'w, 's, Q, F> {
    /// The read-only items of `N` entities at once (an entity may appear
    /// more than once). Fails on the first entity that is gone or does not
    /// match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let a = world.spawn(Health(1));
    /// let b = world.spawn(Health(2));
    /// let sum = world.run_system_once(move |q: Query<&Health>| {
    ///     let [x, y] = q.get_many([a, b]).unwrap();
    ///     x.0 + y.0
    /// });
    /// assert_eq!(sum, 3);
    /// ```
    pub fn get_many<const N: usize>(
        &self,
        entities: [Entity; N],
    ) -> Result<[Q::Item<'_>; N], QueryEntityError>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: read-only; the state was prepared when the param was made.
        unsafe {
            self.state
                .get_many_prepared(self.world, entities, self.ticks)
        }
    }

    /// The items of `N` distinct entities at once, with mutable access (to
    /// move a value from one entity to another, say). Fails, handing out
    /// nothing, if an entity appears twice
    /// ([`QueryEntityError::AliasedMutability`]), is gone, or does not
    /// match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Gold(u32);
    /// let mut world = World::new();
    /// let a = world.spawn(Gold(10));
    /// let b = world.spawn(Gold(0));
    /// world.run_system_once(move |mut q: Query<&mut Gold>| {
    ///     let [from, to] = q.get_many_mut([a, b]).unwrap();
    ///     from.0 -= 4;
    ///     to.0 += 4;
    ///     assert!(q.get_many_mut([a, a]).is_err());
    /// });
    /// assert_eq!(world.get::<Gold>(b).unwrap().0, 4);
    /// ```
    pub fn get_many_mut<const N: usize>(
        &mut self,
        entities: [Entity; N],
    ) -> Result<[Q::Item<'_>; N], QueryEntityError> {
        check_distinct(&entities)?;
        // SAFETY: the scheduler gives this system exclusive access to what
        // Q writes; `&mut self` allows one live set of items; the entities
        // are pairwise distinct (checked above).
        unsafe {
            self.state
                .get_many_prepared(self.world, entities, self.ticks)
        }
    }

    /// The read-only items of the given entities, in their order, skipping
    /// those that are gone or do not match (a list of targets kept in a
    /// component, say).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let a = world.spawn(Health(1));
    /// let nobody = world.spawn(());
    /// let b = world.spawn(Health(2));
    /// let hp = world.run_system_once(move |q: Query<&Health>| {
    ///     q.iter_many([b, nobody, a]).map(|h| h.0).collect::<Vec<_>>()
    /// });
    /// assert_eq!(hp, [2, 1]);
    /// ```
    pub fn iter_many<E: std::borrow::Borrow<Entity>>(
        &self,
        entities: impl IntoIterator<Item = E>,
    ) -> impl Iterator<Item = Q::Item<'_>>
    where
        Q: ReadOnlyQueryData,
    {
        let (world, state, ticks) = (self.world, self.state, self.ticks);
        entities.into_iter().filter_map(move |entity| {
            // SAFETY: read-only; the state was prepared when the param was
            // made. A miss builds no error text.
            unsafe { state.fetch_prepared(world, *entity.borrow(), ticks) }.ok()
        })
    }

    /// True if no entity matches. Fetches nothing: a `&mut T` query's
    /// components are not marked changed by asking.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Enemy;
    /// let mut world = World::new();
    /// assert!(world.run_system_once(|q: Query<&Enemy>| q.is_empty()));
    /// world.spawn(Enemy);
    /// assert!(!world.run_system_once(|q: Query<&Enemy>| q.is_empty()));
    /// ```
    pub fn is_empty(&self) -> bool {
        // SAFETY: prepared when the param was made; nothing is fetched.
        unsafe { self.state.is_empty_prepared(self.world, self.ticks) }
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
