//! [`Mut<T>`]: a query item with write access to `T` that marks the value
//! changed only when it is written, not when it is fetched.
//!
//! A `&mut T` item is marked changed as it is fetched (the cheapest rule:
//! one store per row, batched per table), so a system that looks and
//! decides not to write still sets off `Changed<T>`. Query `Mut<T>` instead
//! where that matters: writing through it (`DerefMut`) marks the value, and
//! [`DetectChangesMut::set_if_neq`] writes only a different value. It
//! switches change ticks on for `T`, as `Ref<T>` and `Changed<T>` do.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use super::fetch::{column_at, match_storage, present, sparse_ptr, sparse_set};
use super::{Access, QueryData, TickRange};
use crate::archetype::Archetype;
use crate::change::{ComponentTicks, DetectChanges, DetectChangesMut, Tick};
use crate::component::{Component, ComponentId, StorageType, short_type_name};
use crate::entity::Entity;
use crate::storage::{BlockTick, SparseSet, block_of};
use crate::world::World;

/// A mutable reference to a component that marks it changed when written
/// through, not when fetched: query `Mut<T>` (Bevy's name) to use
/// [`set_if_neq`](DetectChangesMut::set_if_neq) or to read before deciding
/// to write. It dereferences to `T`; [`DetectChanges`] tells whether the
/// value was added or changed since the query state's previous run.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, PartialEq, Debug)] struct Health(u32);
/// let mut world = World::new();
/// let a = world.spawn(Health(5));
/// let b = world.spawn(Health(0));
/// let mut changed = world.query_filtered::<Entity, Changed<Health>>();
/// changed.iter(&world).count(); // a first run: everything is new
///
/// // Clamp every health to at most 3: only `a` really changes.
/// let mut q = world.query::<Mut<Health>>();
/// for mut h in q.iter_mut(&mut world) {
///     let clamped = Health(h.0.min(3));
///     h.set_if_neq(clamped);
/// }
/// assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [a]);
/// # let _ = b;
/// ```
pub struct Mut<'w, T> {
    value: &'w mut T,
    changed: &'w mut Tick,
    /// The bound of the value's block of rows, marked with `changed`.
    block: &'w BlockTick,
    added: Tick,
    range: TickRange,
}

impl<T: fmt::Debug> fmt::Debug for Mut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Mut").field(&*self.value).finish()
    }
}

impl<'w, T> Mut<'w, T> {
    /// The plain reference, marking the value changed (it may be written
    /// through).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(1));
    /// let mut q = world.query::<Mut<Health>>();
    /// let health: &mut Health = q.get_mut(&mut world, e).unwrap().into_inner();
    /// health.0 = 4;
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 4);
    /// ```
    pub fn into_inner(self) -> &'w mut T {
        *self.changed = self.range.this_run;
        self.block.mark(self.range.this_run);
        self.value
    }
}

impl<T> Deref for Mut<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> DerefMut for Mut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        *self.changed = self.range.this_run;
        self.block.mark(self.range.this_run);
        self.value
    }
}

impl<T> AsRef<T> for Mut<'_, T> {
    fn as_ref(&self) -> &T {
        self.value
    }
}

impl<T> DetectChanges for Mut<'_, T> {
    fn is_added(&self) -> bool {
        self.added
            .is_newer_than(self.range.last_run, self.range.this_run)
    }

    fn is_changed(&self) -> bool {
        self.changed
            .is_newer_than(self.range.last_run, self.range.this_run)
    }
}

impl<T> DetectChangesMut for Mut<'_, T> {
    type Inner = T;

    fn set_changed(&mut self) {
        *self.changed = self.range.this_run;
        self.block.mark(self.range.this_run);
    }

    fn bypass_change_detection(&mut self) -> &mut T {
        self.value
    }
}

/// Fetch state of `Mut<T>`: the current table's column and its ticks, or
/// `T`'s sparse set.
#[doc(hidden)]
pub struct MutFetch<'w, T> {
    /// Dangling until a table is set.
    column: NonNull<T>,
    ticks: *mut ComponentTicks,
    blocks: *const BlockTick,
    sparse: Option<&'w SparseSet>,
    range: TickRange,
}

// SAFETY: reports a write of T; writes only the given row of T's column and
// its ticks, or the entity's value and ticks in T's sparse set, and only
// through the item it yields for that row.
unsafe impl<T: Component> QueryData for Mut<'_, T> {
    type Item<'w> = Mut<'w, T>;
    type Fetch<'w> = MutFetch<'w, T>;
    type State = ComponentId;
    type ArchetypeState = u32;
    const FALLIBLE: bool = matches!(T::STORAGE, StorageType::SparseSet);
    const ODD_SIZED: bool = super::fetch::odd_sized::<T>();
    const POW2_SIZED: bool = super::fetch::pow2_sized::<T>();

    #[inline(always)]
    unsafe fn can_fetch(fetch: &MutFetch<'_, T>, entity: Entity) -> bool {
        present::<T>(false, fetch.sparse, entity)
    }

    fn init_state(world: &mut World) -> ComponentId {
        crate::component::require_mutable::<T>();
        let id = world.register_component::<T>();
        world.track_ticks(id);
        id
    }

    fn update_access(&id: &ComponentId, access: &mut Access) {
        access.add_write(id);
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
    ) -> MutFetch<'w, T> {
        let sparse = sparse_set::<T>(world, id);
        assert!(
            sparse.is_none_or(|s| s.column().is_tracked()),
            "Mut<{}> on an untracked sparse set",
            short_type_name::<T>()
        );
        MutFetch {
            column: NonNull::dangling(),
            ticks: std::ptr::null_mut(),
            blocks: std::ptr::null(),
            sparse,
            range,
        }
    }

    #[inline]
    unsafe fn set_archetype<'w>(
        fetch: &mut MutFetch<'w, T>,
        _id: &ComponentId,
        column: u32,
        archetype: &'w Archetype,
    ) {
        if T::STORAGE == StorageType::Table {
            // SAFETY: `column` is the index `match_archetype` found here.
            let column = unsafe { column_at(archetype, column) };
            assert!(
                column.is_tracked(),
                "Mut<{}> on an untracked column",
                short_type_name::<T>()
            );
            fetch.column = column.base_ptr().cast::<T>();
            fetch.ticks = column.ticks_ptr();
            fetch.blocks = column.blocks_ptr();
        }
    }

    #[inline(always)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        type Slots<'w, T> = (&'w mut T, *mut ComponentTicks, &'w BlockTick);
        let (value, ticks, block): Slots<'w, T> = match T::STORAGE {
            // SAFETY: `row` is in bounds of the table whose `T` column,
            // tick array and block ticks `set_archetype` stored (contract;
            // the column keeps a block tick per block of its rows); the
            // value is initialised; the caller has exclusive access to T
            // (ticks included) and no other item of this row is alive
            // (contract). Block ticks are atomics: shared references.
            StorageType::Table => unsafe {
                (
                    fetch.column.add(row).as_mut(),
                    fetch.ticks.add(row),
                    &*fetch.blocks.add(block_of(row)),
                )
            },
            StorageType::SparseSet => {
                let (dense, ptr) = sparse_ptr::<T>(fetch.sparse, entity)?;
                let set: &'w SparseSet = fetch.sparse?;
                let column = set.column();
                // SAFETY: `ptr` is the entity's initialised value and
                // `dense` its index (< len) in the set's tracked tick
                // array, its block in the block ticks; exclusive access
                // to T, one item per entity.
                unsafe {
                    (
                        &mut *ptr,
                        column.ticks_ptr().add(dense),
                        &*column.blocks_ptr().add(block_of(dense)),
                    )
                }
            }
        };
        // SAFETY: `ticks` points to this row's (or entry's) ticks, in
        // bounds and initialised (the column is tracked, asserted above),
        // under the same exclusive access as the value; the reference to
        // `changed` is the only one made for this row while the item lives.
        let (added, changed) = unsafe { ((*ticks).added, &mut (*ticks).changed) };
        Some(Mut {
            value,
            changed,
            block,
            added,
            range: fetch.range,
        })
    }
}
