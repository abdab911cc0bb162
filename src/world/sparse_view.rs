//! `World::sparse_mut`: one sparse component's set, resolved once, for many
//! inserts and removes in a row.

use std::fmt;

use thiserror::Error;

use super::{World, missing};
use crate::change::Tick;
use crate::component::{Component, StorageType, short_type_name};
use crate::entity::{Entities, Entity};
use crate::error::{ComponentError, EntityError};
use crate::storage::sparse_set::TypedSet;

/// Why [`World::sparse_mut`] cannot hand out a component's set.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::SparseMutError;
/// #[derive(Component)] struct Position(f32);
/// let mut world = World::new();
/// assert!(matches!(world.sparse_mut::<Position>(), Err(SparseMutError::NotSparse(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SparseMutError {
    /// The component is stored in tables: adding or removing it moves the
    /// entity between archetypes, which needs the whole world.
    #[error(
        "component `{0}` is stored in tables, not in a sparse set; use `World::insert_one` and `World::remove_one`"
    )]
    NotSparse(String),
    /// Hooks, observers or required components run when the component is
    /// added or removed, and they need the whole world.
    #[error(
        "component `{0}` has hooks, observers or required components; use `World::insert_one` and `World::remove_one`, which run them"
    )]
    Announced(String),
    /// The component is [`Disabled`](crate::Disabled): queries skip
    /// disabled entities through a mirror the world keeps, which a
    /// view of the set alone cannot update.
    #[error(
        "component `{0}` hides entities from queries; use `World::insert_one` and `World::remove_one`"
    )]
    Disabling(String),
    /// The component is one end of a relation's edges (`Relation<R>` or
    /// `Sources<R>`), which only the relation methods may change.
    #[error(
        "component `{0}` is one end of a relation's edges; use `World::relate`, `World::unrelate` and `World::unrelate_all`"
    )]
    Edges(String),
}

/// One sparse component's set, borrowed from the world for many inserts
/// and removes in a row; from [`World::sparse_mut`].
///
/// Each call does what [`World::insert_one`]/[`World::remove_one`] do for
/// the component (refuse a stale handle, stamp change ticks) without
/// finding the set again: the set, the world's tick and the entity table
/// are looked up once, when the view is made.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
/// #[derive(Component, Debug, PartialEq)] #[component(storage = "sparse")] struct Burning(u32);
/// let mut world = World::new();
/// let all = world.spawn_batch((0..100).map(Health));
/// let mut burning = world.sparse_mut::<Burning>().unwrap();
/// for &e in &all[..10] {
///     burning.insert(e, Burning(3)).unwrap();
/// }
/// assert_eq!(burning.remove(all[0]), Ok(Burning(3)));
/// assert_eq!(burning.len(), 9);
/// assert_eq!(world.query::<&Burning>().iter(&world).count(), 9);
/// ```
pub struct SparseMut<'w, C: Component> {
    entities: &'w Entities,
    set: TypedSet<'w, C>,
    tick: Tick,
}

impl<C: Component> fmt::Debug for SparseMut<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SparseMut")
            .field("component", &short_type_name::<C>())
            .field("len", &self.set.len())
            .finish()
    }
}

impl World {
    /// The set of sparse component `C`, for many inserts and removes in a
    /// row without finding the set each time: the way to toggle one sparse
    /// component on many entities (a status effect on a crowd, say).
    ///
    /// Fails if `C` is stored in tables, or if adding or removing `C` runs
    /// hooks, observers or required components: those need the whole
    /// world, so use [`World::insert_one`] and [`World::remove_one`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] #[component(storage = "sparse")] struct Selected;
    /// let mut world = World::new();
    /// let all = world.spawn_batch((0..4).map(|_| ()));
    /// let mut selected = world.sparse_mut::<Selected>()?;
    /// for &e in &all {
    ///     selected.insert(e, Selected)?;
    /// }
    /// assert_eq!(selected.len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sparse_mut<C: Component>(&mut self) -> Result<SparseMut<'_, C>, SparseMutError> {
        if C::STORAGE != StorageType::SparseSet {
            return Err(SparseMutError::NotSparse(short_type_name::<C>()));
        }
        self.flush();
        // Registers `C` first, as `insert` does: a first registration may
        // switch its lifecycle on.
        let id = self.components.register::<C>();
        if self.components.lifecycle_active() && self.components.announces(id) {
            return Err(SparseMutError::Announced(short_type_name::<C>()));
        }
        if self.components.disabled_id() == Some(id) {
            return Err(SparseMutError::Disabling(short_type_name::<C>()));
        }
        if self.relations.is_edge_component(id) {
            return Err(SparseMutError::Edges(short_type_name::<C>()));
        }
        self.sparse.remember::<C>(id, &self.components, true);
        let tick = self.change_tick();
        let Some((_, set)) = self.sparse.typed::<C>() else {
            unreachable!("remembered just above")
        };
        Ok(SparseMut {
            entities: &self.entities,
            set,
            tick,
        })
    }
}

impl<C: Component> SparseMut<'_, C> {
    /// Gives `entity` the component, returning the value it replaces, if
    /// any. Fails, changing nothing, for a stale handle.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] #[component(storage = "sparse")] struct Mark(u8);
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// let gone = world.spawn(());
    /// world.despawn(gone)?;
    /// let mut marks = world.sparse_mut::<Mark>()?;
    /// assert_eq!(marks.insert(e, Mark(1))?, None);
    /// assert_eq!(marks.insert(e, Mark(2))?, Some(Mark(1)));
    /// assert!(marks.insert(gone, Mark(3)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert(&mut self, entity: Entity, value: C) -> Result<Option<C>, EntityError> {
        if self.entities.get(entity).is_none() {
            return Err(EntityError::NoSuchEntity(entity));
        }
        Ok(self.set.insert(entity, value, self.tick))
    }

    /// Takes the component from `entity`. Fails, changing nothing, for a
    /// stale handle or an entity without it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] #[component(storage = "sparse")] struct Mark(u8);
    /// let mut world = World::new();
    /// let e = world.spawn(Mark(7));
    /// let mut marks = world.sparse_mut::<Mark>()?;
    /// assert_eq!(marks.remove(e)?, Mark(7));
    /// assert!(marks.remove(e).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn remove(&mut self, entity: Entity) -> Result<C, ComponentError> {
        if self.entities.get(entity).is_none() {
            return Err(ComponentError::NoSuchEntity(entity));
        }
        self.set.remove(entity).ok_or_else(|| missing::<C>(entity))
    }

    /// How many entities have the component.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] #[component(storage = "sparse")] struct Mark;
    /// let mut world = World::new();
    /// world.spawn_batch((0..3).map(|_| Mark));
    /// assert_eq!(world.sparse_mut::<Mark>().unwrap().len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// True if no entity has the component.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] #[component(storage = "sparse")] struct Mark;
    /// let mut world = World::new();
    /// assert!(world.sparse_mut::<Mark>().unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.set.len() == 0
    }
}
