//! [`Ref<T>`]: a query item that reads `T` and says whether it was added or
//! changed since the query state last ran.
//!
//! It answers per item what the [`Added`](crate::Added) and
//! [`Changed`](crate::Changed) filters answer per query, by the same rule
//! (see [`Tick::is_newer_than`]), so one query can visit every entity and
//! still treat new or changed values apart. Like those filters, asking for
//! `Ref<T>` switches change ticks on for `T` (a cost only for writers of
//! `T`, see `change.rs`).

use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;

use super::fetch::{column_at, match_storage, present, sparse_ptr, sparse_set};
use super::{Access, QueryData, ReadOnlyQueryData, TickRange};
use crate::archetype::Archetype;
use crate::change::{ComponentTicks, Tick};
use crate::component::{Component, ComponentId, StorageType, short_type_name};
use crate::entity::Entity;
use crate::storage::SparseSet;
use crate::world::World;

/// A shared reference to a component, with its change ticks: query
/// `Ref<T>` instead of `&T` to ask [`is_added`](Ref::is_added) and
/// [`is_changed`](Ref::is_changed) per item (Bevy's name and methods).
/// It dereferences to `T`.
///
/// "Since the last run" means since the query state's previous run, as for
/// the [`Changed`](crate::Changed) filter: the first run sees every value
/// as added and changed; `get` compares against the last run without
/// starting a new one.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::Ref;
/// #[derive(Component, Debug)] struct Health(u32);
/// let mut world = World::new();
/// let old = world.spawn(Health(1));
/// let mut q = world.query::<(Entity, Ref<Health>)>();
/// assert_eq!(q.iter(&world).filter(|(_, h)| h.is_added()).count(), 1);
///
/// let new = world.spawn(Health(2));
/// world.get_mut::<Health>(old).unwrap().0 = 5;
/// for (e, health) in q.iter(&world) {
///     assert_eq!(health.is_added(), e == new);
///     assert!(health.is_changed()); // `new` was added, `old` written
///     assert!(health.0 > 1);
/// }
/// assert!(q.iter(&world).all(|(_, h)| !h.is_changed()));
/// ```
pub struct Ref<'w, T> {
    value: &'w T,
    ticks: ComponentTicks,
    range: TickRange,
}

impl<T> Clone for Ref<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Ref<'_, T> {}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ref")
            .field("value", self.value)
            .field("added", &self.is_added())
            .field("changed", &self.is_changed())
            .finish()
    }
}

impl<'w, T> Ref<'w, T> {
    /// True if the value was added to its entity since the query state
    /// last ran.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::Ref;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(1));
    /// let mut q = world.query::<Ref<Health>>();
    /// assert!(q.get(&world, e).unwrap().is_added()); // never ran: all new
    /// q.iter(&world).count(); // a run
    /// assert!(!q.get(&world, e).unwrap().is_added());
    /// ```
    pub fn is_added(&self) -> bool {
        self.ticks
            .added
            .is_newer_than(self.range.last_run, self.range.this_run)
    }

    /// True if the value was added or mutably accessed since the query
    /// state last ran (the [`Changed`](crate::Changed) rule).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::Ref;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(1));
    /// let mut q = world.query::<Ref<Health>>();
    /// q.iter(&world).count();
    /// world.get_mut::<Health>(e).unwrap().0 = 2;
    /// let health = q.get(&world, e).unwrap();
    /// assert!(health.is_changed() && !health.is_added());
    /// ```
    pub fn is_changed(&self) -> bool {
        self.ticks
            .changed
            .is_newer_than(self.range.last_run, self.range.this_run)
    }

    /// The tick at which the value was last changed (or added).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::Ref;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let mut q = world.query::<Ref<Health>>();
    /// let e = world.spawn(Health(1));
    /// let spawned_at = world.change_tick();
    /// assert_eq!(q.get(&world, e).unwrap().last_changed(), spawned_at);
    /// ```
    pub fn last_changed(&self) -> Tick {
        self.ticks.changed
    }

    /// The plain reference, for as long as the world is borrowed.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::Ref;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(3));
    /// let mut q = world.query::<Ref<Health>>();
    /// let health: &Health = q.get(&world, e).unwrap().into_inner();
    /// assert_eq!(health.0, 3);
    /// ```
    pub fn into_inner(self) -> &'w T {
        self.value
    }
}

impl<T> Deref for Ref<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> AsRef<T> for Ref<'_, T> {
    fn as_ref(&self) -> &T {
        self.value
    }
}

/// Fetch state of `Ref<T>`: the current table's column and its ticks, or
/// `T`'s sparse set.
#[doc(hidden)]
pub struct RefFetch<'w, T> {
    /// Dangling until a table is set.
    column: NonNull<T>,
    ticks: *const ComponentTicks,
    sparse: Option<&'w SparseSet>,
    range: TickRange,
}

// SAFETY: reports a read of T; reads only the given row of T's column and
// its ticks, or the entity's value and ticks in T's sparse set.
unsafe impl<T: Component> QueryData for Ref<'_, T> {
    type Item<'w> = Ref<'w, T>;
    type Fetch<'w> = RefFetch<'w, T>;
    type State = ComponentId;
    type ArchetypeState = u32;
    const FALLIBLE: bool = matches!(T::STORAGE, StorageType::SparseSet);
    const ODD_SIZED: bool = super::fetch::odd_sized::<T>();
    const POW2_SIZED: bool = super::fetch::pow2_sized::<T>();

    #[inline(always)]
    unsafe fn can_fetch(fetch: &RefFetch<'_, T>, entity: Entity) -> bool {
        present::<T>(false, fetch.sparse, entity)
    }

    fn init_state(world: &mut World) -> ComponentId {
        let id = world.register_component::<T>();
        world.track_ticks(id);
        id
    }

    fn update_access(&id: &ComponentId, access: &mut Access) {
        access.add_read(id);
        access.add_required(id);
    }

    fn match_archetype(&id: &ComponentId, archetype: &Archetype) -> Option<u32> {
        match_storage::<T>(id, archetype)
    }

    #[inline]
    unsafe fn init_fetch<'w>(
        world: &'w World,
        &id: &ComponentId,
        range: TickRange,
    ) -> RefFetch<'w, T> {
        let sparse = sparse_set::<T>(world, id);
        assert!(
            sparse.is_none_or(|s| s.column().is_tracked()),
            "Ref<{}> on an untracked sparse set",
            short_type_name::<T>()
        );
        RefFetch {
            column: NonNull::dangling(),
            ticks: std::ptr::null(),
            sparse,
            range,
        }
    }

    #[inline]
    unsafe fn set_archetype<'w>(
        fetch: &mut RefFetch<'w, T>,
        _id: &ComponentId,
        column: u32,
        archetype: &'w Archetype,
    ) {
        if T::STORAGE == StorageType::Table {
            // SAFETY: `column` is the index `match_archetype` found here.
            let column = unsafe { column_at(archetype, column) };
            assert!(
                column.is_tracked(),
                "Ref<{}> on an untracked column",
                short_type_name::<T>()
            );
            fetch.column = column.base_ptr().cast::<T>();
            fetch.ticks = column.ticks_ptr();
        }
    }

    #[inline(always)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        let (value, ticks) = match T::STORAGE {
            // SAFETY: `row` is in bounds of the table whose `T` column and
            // ticks `set_archetype` stored (contract); the value is
            // initialised; no writer of T runs while this query runs (its
            // access is a read).
            StorageType::Table => unsafe {
                (fetch.column.add(row).as_ref(), *fetch.ticks.add(row))
            },
            StorageType::SparseSet => {
                let (dense, ptr) = sparse_ptr::<T>(fetch.sparse, entity)?;
                let set = fetch.sparse?;
                // SAFETY: `ptr` is the entity's initialised value, `dense`
                // its index (< len) in the set's tracked tick array.
                unsafe { (&*ptr, *set.column().ticks_ptr().add(dense)) }
            }
        };
        Some(Ref {
            value,
            ticks,
            range: fetch.range,
        })
    }
}

// SAFETY: reports only a read.
unsafe impl<T: Component> ReadOnlyQueryData for Ref<'_, T> {}

impl<T> crate::DetectChanges for Ref<'_, T> {
    fn is_added(&self) -> bool {
        Ref::is_added(self)
    }

    fn is_changed(&self) -> bool {
        Ref::is_changed(self)
    }
}
