//! Query data: what a query yields per entity.

use std::marker::PhantomData;
use std::ops::Range;
use std::ptr::NonNull;

use super::tuples::all_query_tuples;
use super::{Access, TickRange};
use crate::archetype::Archetype;
use crate::change::{ComponentTicks, Tick};
use crate::component::{Component, ComponentId, StorageType};
use crate::entity::Entity;
use crate::storage::{BlockTick, Column, SparseSet, block_of};
use crate::world::World;

/// Something a query can yield per entity: `Entity`, `&T`, `&mut T`,
/// `Option<Q>`, [`Has<T>`], [`Ref<T>`](crate::Ref), or a tuple of those
/// (up to 16, nested freely).
///
/// The methods are the query engine's plumbing, hidden from the docs; use the
/// implementations this crate provides, or
/// [`#[derive(QueryData)]`](derive@crate::QueryData) for a struct with named
/// fields (it implements this trait as the tuple of its fields).
///
/// # Safety
/// An implementation must:
/// - report in `update_access` every component its items borrow, `&mut`
///   ones as writes;
/// - match in `match_archetype` only archetypes `set_archetype` can read,
///   and return there only archetype states `set_archetype` may trust;
/// - yield from `fetch` only references into the row it is given;
/// - declare `DENSE` only if every archetype matches and `fetch` works
///   without `set_archetype` (see there).
///
/// (`FALLIBLE`, `WRITES_ON_FETCH` and `can_fetch` are not safety matters:
/// set wrongly, they can only let a skipped entity's change tick be
/// written.)
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Component)] struct Velocity(f32);
/// let mut world = World::new();
/// world.spawn((Position(0.0), Velocity(1.0)));
/// world.spawn(Position(5.0));
/// let mut q = world.query::<(Entity, &mut Position, Option<&Velocity>)>();
/// for (_e, p, v) in q.iter_mut(&mut world) {
///     p.0 += v.map_or(0.0, |v| v.0);
/// }
/// ```
pub unsafe trait QueryData {
    /// What one entity yields.
    type Item<'w>;
    #[doc(hidden)]
    type Fetch<'w>;
    #[doc(hidden)]
    type State: Send + Sync + 'static;
    /// What `set_archetype` needs to know about one matched archetype (a
    /// column index, say), worked out once when a query state matches it, so
    /// moving to the next table costs no lookups.
    #[doc(hidden)]
    type ArchetypeState: Copy + Send + Sync + 'static;

    #[doc(hidden)]
    fn init_state(world: &mut World) -> Self::State;

    #[doc(hidden)]
    fn update_access(state: &Self::State, access: &mut Access);

    /// The archetype state for `archetype` if the query matches it, else
    /// `None`.
    #[doc(hidden)]
    fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::ArchetypeState>;

    /// # Safety
    /// - `state` was built by `init_state` on `world`;
    /// - if `Self` writes, the caller has exclusive access to the components
    ///   it writes for `'w`.
    #[doc(hidden)]
    unsafe fn init_fetch<'w>(
        world: &'w World,
        state: &Self::State,
        ticks: TickRange,
    ) -> Self::Fetch<'w>;

    /// # Safety
    /// - `match_archetype(state, archetype)` returned `Some(arch)`;
    /// - `archetype` belongs to the world `fetch` was made from.
    #[doc(hidden)]
    unsafe fn set_archetype<'w>(
        fetch: &mut Self::Fetch<'w>,
        state: &Self::State,
        arch: Self::ArchetypeState,
        archetype: &'w Archetype,
    );

    /// True when items need no archetype: every archetype matches, and
    /// `fetch` finds each value from the entity alone (a sparse set lookup)
    /// or, after [`set_driver`](Self::set_driver), from the entity's dense
    /// index in the driving set. `Entity`, and `&T` / `&mut T` of sparse
    /// components, and tuples of those, are. A query of such data with no
    /// filter walks its smallest sparse set without looking anything up.
    #[doc(hidden)]
    const DENSE: bool = false;

    /// True when `fetch` may yield `None` for an entity of a matched
    /// archetype (a sparse component the entity lacks).
    #[doc(hidden)]
    const FALLIBLE: bool = false;

    /// True when `fetch` writes something (a change tick) as it yields.
    #[doc(hidden)]
    const WRITES_ON_FETCH: bool = false;

    /// True when an item borrows a value whose size is not a power of two
    /// (a 12-byte `[f32; 3]`). With [`POW2_SIZED`](Self::POW2_SIZED) too,
    /// the iterator's row loops stay scalar (see `scalar_rows` in
    /// `query/iter.rs` for why).
    #[doc(hidden)]
    const ODD_SIZED: bool = false;

    /// True when an item borrows a value whose size is a power of two (a
    /// `f32`), not zero.
    #[doc(hidden)]
    const POW2_SIZED: bool = false;

    /// Whether `fetch` would yield an item for `entity`, without writing
    /// anything: a tuple asks this of its fallible elements first when
    /// another element writes as it fetches, so a change tick is never
    /// stamped on an entity the query then skips.
    ///
    /// # Safety
    /// - as `fetch`, except that nothing is yielded.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn can_fetch(_fetch: &Self::Fetch<'_>, _entity: Entity) -> bool {
        true
    }

    /// Tells a fetch of a [`DENSE`](Self::DENSE) query that the run walks
    /// the sparse set of component `driver` in order, and that `fetch` will
    /// get each entity's dense index in that set as its `row`. A fetch of
    /// `driver` itself then reads the set's arrays at that index.
    ///
    /// # Safety
    /// - `Self::DENSE`; `fetch` was made by `init_fetch` with `state`;
    /// - every later `fetch` call passes as `row` the entity's index in the
    ///   entity list of `driver`'s sparse set of the same world.
    #[doc(hidden)]
    #[inline]
    unsafe fn set_driver(_fetch: &mut Self::Fetch<'_>, _state: &Self::State, _driver: ComponentId) {
    }

    /// Yields the item for `row`, or `None` if a sparse component it needs
    /// is missing.
    ///
    /// # Safety
    /// - `row` is a row of the archetype last set and `entity` is its entity
    ///   (or, after `set_driver`, `row` is `entity`'s dense index in the
    ///   driving set: see there);
    /// - if `Self` writes, no item fetched from the same row is still alive.
    #[doc(hidden)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>>;

    /// Like [`fetch`](Self::fetch), but leaves out the change ticks that
    /// [`stamp_rows`](Self::stamp_rows) can write later for a whole run of
    /// rows (those of table columns and of a driving set). Iterators of
    /// queries that skip no row use it, so a `for` loop's row step holds no
    /// tick code, and stamp the rows they yielded when the run ends.
    ///
    /// # Safety
    /// - as [`fetch`](Self::fetch); the caller stamps the row later (with
    ///   `stamp_rows`, before the fetch is pointed at another archetype).
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn fetch_unstamped<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        // SAFETY: forwarded contract.
        unsafe { Self::fetch(fetch, entity, row) }
    }

    /// Writes the change ticks that [`fetch_unstamped`](Self::fetch_unstamped)
    /// left out for `rows` of the archetype (or driving set) last set.
    ///
    /// # Safety
    /// - `rows` lie within the archetype last set (or, after `set_driver`,
    ///   within the driving set), and the caller has the access `fetch`
    ///   needs to them.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn stamp_rows(_fetch: &mut Self::Fetch<'_>, _rows: Range<usize>) {}

    /// False when no component this fetch could write tracks change ticks,
    /// whichever archetype it is set to: then
    /// [`fetch_unstamped`](Self::fetch_unstamped) is `fetch`.
    #[doc(hidden)]
    #[inline(always)]
    fn tracks(_fetch: &Self::Fetch<'_>) -> bool {
        false
    }

    /// True if fetching writes change ticks in the current table. Iteration
    /// runs a separate loop when this is false, so the untracked case pays
    /// no per-row check.
    #[doc(hidden)]
    #[inline(always)]
    fn writes_ticks(_fetch: &Self::Fetch<'_>) -> bool {
        false
    }
}

/// Query data that only reads: `iter` and `get` with a shared world accept
/// only these.
///
/// # Safety
/// - `update_access` of the implementation records no write.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::ReadOnlyQueryData;
/// #[derive(Component)] struct A;
/// fn count<Q: ReadOnlyQueryData>(world: &mut World) -> usize {
///     let mut q = world.query::<Q>();
///     q.iter(world).count()
/// }
/// let mut world = World::new();
/// world.spawn(A);
/// assert_eq!(count::<&A>(&mut world), 1);
/// ```
pub unsafe trait ReadOnlyQueryData: QueryData {}

// ----- Entity ----------------------------------------------------------------

// SAFETY: borrows nothing; yields the row's entity.
unsafe impl QueryData for Entity {
    type Item<'w> = Entity;
    type Fetch<'w> = ();
    type State = ();
    type ArchetypeState = ();
    const DENSE: bool = true;

    fn init_state(_world: &mut World) {}

    fn update_access(_state: &(), _access: &mut Access) {}

    fn match_archetype(_state: &(), _archetype: &Archetype) -> Option<()> {
        Some(())
    }

    #[inline]
    unsafe fn init_fetch(_world: &World, _state: &(), _ticks: TickRange) {}

    #[inline]
    unsafe fn set_archetype(_fetch: &mut (), _state: &(), _arch: (), _archetype: &Archetype) {}

    #[inline(always)]
    unsafe fn fetch<'w>(
        _fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        _row: usize,
    ) -> Option<Self::Item<'w>> {
        Some(entity)
    }
}

// SAFETY: writes nothing.
unsafe impl ReadOnlyQueryData for Entity {}

// ----- &T ----------------------------------------------------------------------

/// Fetch state of `&T`: the current table's column, or `T`'s sparse set.
#[doc(hidden)]
pub struct ReadFetch<'w, T> {
    /// Dangling until a table is set (never null, which spares the loop a
    /// null check).
    column: NonNull<T>,
    sparse: Option<&'w SparseSet>,
    /// The set's values, when a run walks `T`'s own set (see
    /// `QueryData::set_driver`): the item of dense index `row` is there.
    driver: Option<NonNull<T>>,
}

pub(super) fn sparse_set<T: Component>(world: &World, id: ComponentId) -> Option<&SparseSet> {
    match T::STORAGE {
        StorageType::Table => None,
        StorageType::SparseSet => world.sparse_sets().get(id),
    }
}

/// `T`'s column index in `archetype` (the archetype state of `&T` and
/// `&mut T`), or `None` if a table `T` is missing. Sparse components match
/// every archetype; their index is unused.
#[inline]
pub(super) fn match_storage<T: Component>(id: ComponentId, archetype: &Archetype) -> Option<u32> {
    match T::STORAGE {
        StorageType::Table => archetype.column_index(id).map(|i| i as u32),
        StorageType::SparseSet => Some(0),
    }
}

/// The column at `index` in `archetype`'s table.
///
/// # Safety
/// - `index` came from [`match_storage`] (or another `column_index`) on this
///   archetype.
#[inline(always)]
pub(super) unsafe fn column_at(archetype: &Archetype, index: u32) -> &Column {
    // SAFETY: the index was found in this table (contract), whose columns
    // never change.
    unsafe { archetype.table.column_unchecked(index as usize) }
}

/// Whether a fetch of `T` finds `entity`'s value: always for a table `T`
/// (the archetype matched) or when the run walks `T`'s own set; otherwise
/// if `T`'s set holds the entity.
#[inline(always)]
pub(super) fn present<T: Component>(
    driving: bool,
    set: Option<&SparseSet>,
    entity: Entity,
) -> bool {
    match T::STORAGE {
        StorageType::Table => true,
        StorageType::SparseSet => driving || set.is_some_and(|s| s.contains(entity)),
    }
}

/// Whether a `T` is sized other than a power of two (and not zero-sized):
/// a column of them is read as an interleaved group (see
/// [`QueryData::ODD_SIZED`]).
pub(super) const fn odd_sized<T>() -> bool {
    let size = std::mem::size_of::<T>();
    size != 0 && !size.is_power_of_two()
}

/// Whether a `T`'s size is a power of two (see [`QueryData::POW2_SIZED`]).
pub(super) const fn pow2_sized<T>() -> bool {
    std::mem::size_of::<T>().is_power_of_two()
}

/// Pointer to `entity`'s value in `set`, if it has one.
#[inline]
pub(super) fn sparse_ptr<T>(set: Option<&SparseSet>, entity: Entity) -> Option<(usize, *mut T)> {
    let set = set?;
    let dense = set.dense_index(entity)?;
    // SAFETY: `dense_index` returned an index < len.
    Some((dense, unsafe { set.column().ptr_at(dense) }.cast::<T>()))
}

// SAFETY: reports a read of T; reads only the given row of T's column, or
// the entity's value in T's sparse set.
unsafe impl<T: Component> QueryData for &T {
    type Item<'w> = &'w T;
    type Fetch<'w> = ReadFetch<'w, T>;
    type State = ComponentId;
    type ArchetypeState = u32;
    const DENSE: bool = matches!(T::STORAGE, StorageType::SparseSet);
    const FALLIBLE: bool = matches!(T::STORAGE, StorageType::SparseSet);
    const ODD_SIZED: bool = odd_sized::<T>();
    const POW2_SIZED: bool = pow2_sized::<T>();

    #[inline(always)]
    unsafe fn can_fetch(fetch: &ReadFetch<'_, T>, entity: Entity) -> bool {
        present::<T>(fetch.driver.is_some(), fetch.sparse, entity)
    }

    fn init_state(world: &mut World) -> ComponentId {
        world.register_component::<T>()
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
        _ticks: TickRange,
    ) -> ReadFetch<'w, T> {
        ReadFetch {
            column: NonNull::dangling(),
            sparse: sparse_set::<T>(world, id),
            driver: None,
        }
    }

    #[inline]
    unsafe fn set_driver(fetch: &mut ReadFetch<'_, T>, &id: &ComponentId, driver: ComponentId) {
        if id == driver {
            fetch.driver = fetch.sparse.map(|set| set.column().base_ptr().cast::<T>());
        }
    }

    #[inline]
    unsafe fn set_archetype<'w>(
        fetch: &mut ReadFetch<'w, T>,
        _id: &ComponentId,
        column: u32,
        archetype: &'w Archetype,
    ) {
        if T::STORAGE == StorageType::Table {
            // SAFETY: `column` is the index `match_archetype` found here.
            fetch.column = unsafe { column_at(archetype, column) }
                .base_ptr()
                .cast::<T>();
        }
    }

    #[inline(always)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        match T::STORAGE {
            // SAFETY: `row` is in bounds of the table whose `T` column
            // `set_archetype` stored (contract); the value is initialised.
            StorageType::Table => Some(unsafe { fetch.column.add(row).as_ref() }),
            StorageType::SparseSet => {
                if let Some(values) = fetch.driver {
                    // SAFETY: after `set_driver`, `row` is `entity`'s dense
                    // index in this set (contract), so < len: an
                    // initialised value.
                    return Some(unsafe { values.add(row).as_ref() });
                }
                let (_, ptr) = sparse_ptr::<T>(fetch.sparse, entity)?;
                // SAFETY: the pointer is to the entity's initialised value.
                Some(unsafe { &*ptr })
            }
        }
    }
}

// SAFETY: reports only a read.
unsafe impl<T: Component> ReadOnlyQueryData for &T {}

// ----- &mut T --------------------------------------------------------------------

/// Fetch state of `&mut T`: the current column, its change ticks (null when
/// nobody watches `Changed<T>`), or `T`'s sparse set.
#[doc(hidden)]
pub struct WriteFetch<'w, T> {
    /// Dangling until a table is set.
    column: NonNull<T>,
    changed: *mut ComponentTicks,
    /// The column's block ticks, beside `changed` (see `BlockTick`).
    blocks: *const BlockTick,
    sparse: Option<&'w SparseSet>,
    track: bool,
    tick: Tick,
    /// The set's values, when a run walks `T`'s own set (see
    /// `QueryData::set_driver`), and its tick array (null unless tracked).
    driver: Option<NonNull<T>>,
    driver_ticks: *mut ComponentTicks,
    driver_blocks: *const BlockTick,
}

// SAFETY: reports a write of T; writes only the given row of T's column (and
// its tick), or the entity's value in T's sparse set.
unsafe impl<T: Component> QueryData for &mut T {
    type Item<'w> = &'w mut T;
    type Fetch<'w> = WriteFetch<'w, T>;
    type State = ComponentId;
    type ArchetypeState = u32;
    const DENSE: bool = matches!(T::STORAGE, StorageType::SparseSet);
    const FALLIBLE: bool = matches!(T::STORAGE, StorageType::SparseSet);
    const WRITES_ON_FETCH: bool = true;
    const ODD_SIZED: bool = odd_sized::<T>();
    const POW2_SIZED: bool = pow2_sized::<T>();

    #[inline(always)]
    unsafe fn can_fetch(fetch: &WriteFetch<'_, T>, entity: Entity) -> bool {
        present::<T>(fetch.driver.is_some(), fetch.sparse, entity)
    }

    fn init_state(world: &mut World) -> ComponentId {
        crate::component::require_mutable::<T>();
        world.register_component::<T>()
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
        ticks: TickRange,
    ) -> WriteFetch<'w, T> {
        WriteFetch {
            column: NonNull::dangling(),
            changed: std::ptr::null_mut(),
            blocks: std::ptr::null(),
            sparse: sparse_set::<T>(world, id),
            track: world.components().info(id).tracks_changes(),
            tick: ticks.this_run,
            driver: None,
            driver_ticks: std::ptr::null_mut(),
            driver_blocks: std::ptr::null(),
        }
    }

    #[inline]
    unsafe fn set_driver(fetch: &mut WriteFetch<'_, T>, &id: &ComponentId, driver: ComponentId) {
        if id != driver {
            return;
        }
        if let Some(set) = fetch.sparse {
            fetch.driver = Some(set.column().base_ptr().cast::<T>());
            if fetch.track {
                fetch.driver_ticks = set.column().ticks_ptr();
                fetch.driver_blocks = set.column().blocks_ptr();
            }
        }
    }

    #[inline]
    unsafe fn set_archetype<'w>(
        fetch: &mut WriteFetch<'w, T>,
        _id: &ComponentId,
        column: u32,
        archetype: &'w Archetype,
    ) {
        if T::STORAGE == StorageType::Table {
            // SAFETY: `column` is the index `match_archetype` found here.
            let column = unsafe { column_at(archetype, column) };
            fetch.column = column.base_ptr().cast::<T>();
            if fetch.track {
                fetch.changed = column.ticks_ptr();
                fetch.blocks = column.blocks_ptr();
            }
        }
    }

    #[inline(always)]
    fn tracks(fetch: &Self::Fetch<'_>) -> bool {
        fetch.track
    }

    #[inline(always)]
    fn writes_ticks(fetch: &Self::Fetch<'_>) -> bool {
        fetch.track
    }

    #[inline(always)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        // SAFETY: forwarded contract.
        unsafe { fetch.item::<true>(entity, row) }
    }

    #[inline(always)]
    unsafe fn fetch_unstamped<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        // SAFETY: forwarded contract.
        unsafe { fetch.item::<false>(entity, row) }
    }

    #[inline(always)]
    unsafe fn stamp_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>) {
        if !fetch.track {
            return;
        }
        let (ticks, blocks) = match T::STORAGE {
            StorageType::Table => (fetch.changed, fetch.blocks),
            StorageType::SparseSet if fetch.driver.is_some() => {
                (fetch.driver_ticks, fetch.driver_blocks)
            }
            // Looked-up values were stamped as they were fetched.
            StorageType::SparseSet => return,
        };
        // SAFETY: `rows` lie within the table (or driving set) whose tick
        // array `ticks` and block ticks `blocks` are, and the caller has
        // exclusive access to T, ticks included (contract).
        unsafe { stamp_changed(ticks, blocks, rows, fetch.tick) };
    }
}

/// Sets the `changed` tick of `rows` of the tick array at `ticks`, and
/// marks their blocks in the block ticks at `blocks` (once a block).
///
/// # Safety
/// - `rows` lie within the tick array at `ticks` (and so their blocks
///   within `blocks`, its column's), and the caller has exclusive access
///   to it.
#[inline(always)]
unsafe fn stamp_changed(
    ticks: *mut ComponentTicks,
    blocks: *const BlockTick,
    rows: Range<usize>,
    tick: Tick,
) {
    if rows.is_empty() {
        return;
    }
    for b in block_of(rows.start)..=block_of(rows.end - 1) {
        // SAFETY: a block of a row in bounds (contract): the column keeps
        // a bound per block of its rows. Marking is an atomic store.
        unsafe { (*blocks.add(b)).mark(tick) };
    }
    for row in rows {
        // SAFETY: in bounds, exclusive access (contract).
        unsafe { (*ticks.add(row)).changed = tick };
    }
}

impl<'w, T: Component> WriteFetch<'w, T> {
    /// The item for `row` (or `entity`); with `STAMP`, its change tick is
    /// written too, else it is left to `stamp_rows` (values looked up in a
    /// sparse set are stamped either way).
    ///
    /// # Safety
    /// - as [`QueryData::fetch`].
    #[inline(always)]
    unsafe fn item<const STAMP: bool>(&mut self, entity: Entity, row: usize) -> Option<&'w mut T> {
        match T::STORAGE {
            StorageType::Table => {
                if STAMP && self.track {
                    // SAFETY: `row` is in bounds of the tick array of the
                    // column (same length as the values), its block of the
                    // column's block ticks; the caller has exclusive
                    // access to T (contract), ticks included.
                    unsafe {
                        (*self.changed.add(row)).changed = self.tick;
                        (*self.blocks.add(block_of(row))).mark(self.tick);
                    }
                }
                // SAFETY: `row` is in bounds; exclusive access to T and no
                // other live item for this row (contract).
                Some(unsafe { self.column.add(row).as_mut() })
            }
            StorageType::SparseSet => {
                if let Some(values) = self.driver {
                    if STAMP && self.track {
                        // SAFETY: after `set_driver`, `row` is `entity`'s
                        // dense index in this set (contract), in bounds of
                        // its ticks; exclusive access to T's ticks.
                        unsafe {
                            (*self.driver_ticks.add(row)).changed = self.tick;
                            (*self.driver_blocks.add(block_of(row))).mark(self.tick);
                        }
                    }
                    // SAFETY: `row` < len as above: the entity's
                    // initialised value; exclusive access, one item per row.
                    return Some(unsafe { values.add(row).as_mut() });
                }
                let set = self.sparse?;
                let (dense, ptr) = sparse_ptr::<T>(Some(set), entity)?;
                if self.track {
                    // SAFETY: `dense` < len; exclusive access to T's ticks.
                    unsafe { (*set.column().ticks_ptr().add(dense)).changed = self.tick };
                    set.column().mark_block(dense, self.tick);
                }
                // SAFETY: the entity's initialised value; exclusive access.
                Some(unsafe { &mut *ptr })
            }
        }
    }
}

// ----- Option<Q> -------------------------------------------------------------------

/// Fetch state of `Option<Q>`: `Q`'s, plus whether the current archetype
/// matches `Q`.
#[doc(hidden)]
pub struct OptionFetch<F> {
    inner: F,
    matched: bool,
}

// SAFETY: same access as Q; fetches through Q only where Q matches.
unsafe impl<Q: QueryData> QueryData for Option<Q> {
    type Item<'w> = Option<Q::Item<'w>>;
    type Fetch<'w> = OptionFetch<Q::Fetch<'w>>;
    type State = Q::State;
    type ArchetypeState = Option<Q::ArchetypeState>;
    const WRITES_ON_FETCH: bool = Q::WRITES_ON_FETCH;
    const ODD_SIZED: bool = Q::ODD_SIZED;
    const POW2_SIZED: bool = Q::POW2_SIZED;

    fn init_state(world: &mut World) -> Q::State {
        Q::init_state(world)
    }

    fn update_access(state: &Q::State, access: &mut Access) {
        let mut inner = Access::default();
        Q::update_access(state, &mut inner);
        access.add_optional(&inner);
    }

    fn match_archetype(
        state: &Q::State,
        archetype: &Archetype,
    ) -> Option<Option<Q::ArchetypeState>> {
        Some(Q::match_archetype(state, archetype))
    }

    #[inline]
    unsafe fn init_fetch<'w>(
        world: &'w World,
        state: &Q::State,
        ticks: TickRange,
    ) -> Self::Fetch<'w> {
        OptionFetch {
            // SAFETY: forwarded contract.
            inner: unsafe { Q::init_fetch(world, state, ticks) },
            matched: false,
        }
    }

    #[inline]
    unsafe fn set_archetype<'w>(
        fetch: &mut Self::Fetch<'w>,
        state: &Q::State,
        arch: Option<Q::ArchetypeState>,
        archetype: &'w Archetype,
    ) {
        fetch.matched = arch.is_some();
        if let Some(arch) = arch {
            // SAFETY: Q matched this archetype with this state (contract).
            unsafe { Q::set_archetype(&mut fetch.inner, state, arch, archetype) };
        }
    }

    #[inline(always)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        if fetch.matched {
            // SAFETY: forwarded contract; Q's archetype was set.
            Some(unsafe { Q::fetch(&mut fetch.inner, entity, row) })
        } else {
            Some(None)
        }
    }

    #[inline(always)]
    unsafe fn fetch_unstamped<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        if fetch.matched {
            // SAFETY: forwarded contract; Q's archetype was set.
            Some(unsafe { Q::fetch_unstamped(&mut fetch.inner, entity, row) })
        } else {
            Some(None)
        }
    }

    #[inline(always)]
    unsafe fn stamp_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>) {
        if fetch.matched {
            // SAFETY: forwarded contract; Q's archetype was set.
            unsafe { Q::stamp_rows(&mut fetch.inner, rows) };
        }
    }

    #[inline(always)]
    fn tracks(fetch: &Self::Fetch<'_>) -> bool {
        Q::tracks(&fetch.inner)
    }

    #[inline(always)]
    fn writes_ticks(fetch: &Self::Fetch<'_>) -> bool {
        fetch.matched && Q::writes_ticks(&fetch.inner)
    }
}

// SAFETY: Q writes nothing.
unsafe impl<Q: ReadOnlyQueryData> ReadOnlyQueryData for Option<Q> {}

// ----- Has<T> ------------------------------------------------------------------------

/// Yields whether the entity has a `T`, without borrowing it (so it never
/// conflicts with other access to `T`).
///
/// In a tuple query the item is a plain `bool`. As a field of a
/// [`#[derive(QueryData)]`](derive@crate::QueryData) struct, whose items are
/// the struct itself, the field holds a `Has<T>` that carries the answer:
/// read it with [`get`](Has::get) or `*field` (it dereferences to `bool`),
/// or compare it with a `bool`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Frozen;
/// let mut world = World::new();
/// let a = world.spawn(Frozen);
/// let b = world.spawn(());
/// let mut q = world.query::<(Entity, Has<Frozen>)>();
/// let mut seen: Vec<_> = q.iter(&world).collect();
/// seen.sort();
/// assert_eq!(seen, [(a, true), (b, false)]);
/// ```
pub struct Has<T> {
    present: bool,
    marker: PhantomData<fn() -> T>,
}

impl<T> Has<T> {
    /// Whether the entity has a `T`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Frozen;
    /// #[derive(QueryData)]
    /// struct Status {
    ///     entity: Entity,
    ///     frozen: Has<Frozen>,
    /// }
    /// let mut world = World::new();
    /// let e = world.spawn(Frozen);
    /// let mut q = world.query::<Status>();
    /// let status = q.get(&world, e).unwrap();
    /// assert!(status.frozen.get());
    /// assert!(*status.frozen && status.frozen == true);
    /// ```
    #[inline]
    pub fn get(&self) -> bool {
        self.present
    }
}

impl<T> From<bool> for Has<T> {
    /// The answer `present`.
    ///
    /// # Example
    /// ```
    /// use mosaic::Has;
    /// struct Frozen;
    /// assert!(Has::<Frozen>::from(true).get());
    /// ```
    #[inline]
    fn from(present: bool) -> Self {
        Has {
            present,
            marker: PhantomData,
        }
    }
}

impl<T> std::ops::Deref for Has<T> {
    type Target = bool;

    #[inline]
    fn deref(&self) -> &bool {
        &self.present
    }
}

impl<T> Clone for Has<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Has<T> {}

impl<T> PartialEq for Has<T> {
    fn eq(&self, other: &Self) -> bool {
        self.present == other.present
    }
}

impl<T> Eq for Has<T> {}

impl<T> PartialEq<bool> for Has<T> {
    fn eq(&self, other: &bool) -> bool {
        self.present == *other
    }
}

impl<T> std::fmt::Debug for Has<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Has<{}>({})",
            crate::component::short_type_name::<T>(),
            self.present
        )
    }
}

/// Fetch state of `Has<T>`.
#[doc(hidden)]
pub struct HasFetch<'w> {
    in_table: bool,
    sparse: Option<&'w SparseSet>,
}

// SAFETY: borrows no component value.
unsafe impl<T: Component> QueryData for Has<T> {
    type Item<'w> = bool;
    type Fetch<'w> = HasFetch<'w>;
    type State = ComponentId;
    /// Whether the archetype has a table `T`.
    type ArchetypeState = bool;

    fn init_state(world: &mut World) -> ComponentId {
        world.register_component::<T>()
    }

    fn update_access(&id: &ComponentId, access: &mut Access) {
        access.add_mentioned(id);
    }

    fn match_archetype(&id: &ComponentId, archetype: &Archetype) -> Option<bool> {
        Some(archetype.contains(id))
    }

    #[inline]
    unsafe fn init_fetch<'w>(
        world: &'w World,
        &id: &ComponentId,
        _ticks: TickRange,
    ) -> HasFetch<'w> {
        HasFetch {
            in_table: false,
            sparse: sparse_set::<T>(world, id),
        }
    }

    #[inline]
    unsafe fn set_archetype<'w>(
        fetch: &mut HasFetch<'w>,
        _id: &ComponentId,
        in_table: bool,
        _archetype: &'w Archetype,
    ) {
        fetch.in_table = in_table;
    }

    #[inline(always)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        _row: usize,
    ) -> Option<Self::Item<'w>> {
        Some(match T::STORAGE {
            StorageType::Table => fetch.in_table,
            StorageType::SparseSet => fetch.sparse.is_some_and(|s| s.contains(entity)),
        })
    }
}

// SAFETY: writes nothing.
unsafe impl<T: Component> ReadOnlyQueryData for Has<T> {}

// ----- tuples --------------------------------------------------------------------------

/// The body of a tuple's `fetch` (or `fetch_unstamped`: `$method`), in an
/// unsafe context whose contract is `fetch`'s.
///
/// An element that writes as it fetches (a change tick) must not run for an
/// entity another element then rejects. The elements that write nothing go
/// first, so one that fails skips the entity before any write; only when a
/// second writer could still fail after the first has written is every
/// element asked beforehand. All constants: the compiler keeps one straight
/// sequence of fetches.
macro_rules! tuple_fetch {
    ($method:ident, $fetch:ident, $entity:ident, $row:ident; $(($q:ident, $f:ident, $a:ident)),*) => {{
        let writers = 0 $(+ $q::WRITES_ON_FETCH as usize)*;
        let fallible_writers = 0 $(+ ($q::WRITES_ON_FETCH && $q::FALLIBLE) as usize)*;
        if writers >= 2 && fallible_writers >= 1 && !Self::can_fetch($fetch, $entity) {
            return None;
        }
        let ($($f,)*) = $fetch;
        $(
            let $a = if $q::WRITES_ON_FETCH {
                None
            } else {
                Some($q::$method($f, $entity, $row)?)
            };
        )*
        $(
            let $a = match $a {
                Some(item) => item,
                // Each element is fetched once, in one of the two passes.
                None => $q::$method($f, $entity, $row)?,
            };
        )*
        Some(($($a,)*))
    }};
}

macro_rules! tuple_query_data {
    ($(($q:ident, $f:ident, $s:ident, $a:ident)),*) => {
        // SAFETY: the union of the elements' access; each element fetches
        // from the same row.
        #[allow(non_snake_case, unused_variables, clippy::unused_unit)]
        unsafe impl<$($q: QueryData),*> QueryData for ($($q,)*) {
            type Item<'w> = ($($q::Item<'w>,)*);
            type Fetch<'w> = ($($q::Fetch<'w>,)*);
            type State = ($($q::State,)*);
            type ArchetypeState = ($($q::ArchetypeState,)*);
            const DENSE: bool = true $(&& $q::DENSE)*;
            const FALLIBLE: bool = false $(|| $q::FALLIBLE)*;
            const WRITES_ON_FETCH: bool = false $(|| $q::WRITES_ON_FETCH)*;
            const ODD_SIZED: bool = false $(|| $q::ODD_SIZED)*;
            const POW2_SIZED: bool = false $(|| $q::POW2_SIZED)*;

            #[inline(always)]
            unsafe fn can_fetch(fetch: &Self::Fetch<'_>, entity: Entity) -> bool {
                let ($($f,)*) = fetch;
                // SAFETY: forwarded contract.
                true $(&& unsafe { $q::can_fetch($f, entity) })*
            }

            fn init_state(world: &mut World) -> Self::State {
                ($($q::init_state(world),)*)
            }

            fn update_access(state: &Self::State, access: &mut Access) {
                let ($($s,)*) = state;
                $($q::update_access($s, access);)*
            }

            fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::ArchetypeState> {
                let ($($s,)*) = state;
                Some(($($q::match_archetype($s, archetype)?,)*))
            }

            #[inline]
            unsafe fn init_fetch<'w>(world: &'w World, state: &Self::State, ticks: TickRange) -> Self::Fetch<'w> {
                let ($($s,)*) = state;
                // SAFETY: forwarded contract.
                ($(unsafe { $q::init_fetch(world, $s, ticks) },)*)
            }

            #[inline]
            unsafe fn set_archetype<'w>(fetch: &mut Self::Fetch<'w>, state: &Self::State, arch: Self::ArchetypeState, archetype: &'w Archetype) {
                let ($($f,)*) = fetch;
                let ($($s,)*) = state;
                let ($($a,)*) = arch;
                // SAFETY: the tuple matched, so every element did, with the
                // state it holds.
                $(unsafe { $q::set_archetype($f, $s, $a, archetype) };)*
            }

            #[inline]
            unsafe fn set_driver(fetch: &mut Self::Fetch<'_>, state: &Self::State, driver: ComponentId) {
                let ($($f,)*) = fetch;
                let ($($s,)*) = state;
                // SAFETY: the tuple is DENSE only if every element is;
                // forwarded contract.
                $(unsafe { $q::set_driver($f, $s, driver) };)*
            }

            #[inline(always)]
            unsafe fn fetch<'w>(fetch: &mut Self::Fetch<'w>, entity: Entity, row: usize) -> Option<Self::Item<'w>> {
                // SAFETY: forwarded contract.
                unsafe { tuple_fetch!(fetch, fetch, entity, row; $(($q, $f, $a)),*) }
            }

            #[inline(always)]
            unsafe fn fetch_unstamped<'w>(fetch: &mut Self::Fetch<'w>, entity: Entity, row: usize) -> Option<Self::Item<'w>> {
                // SAFETY: forwarded contract.
                unsafe { tuple_fetch!(fetch_unstamped, fetch, entity, row; $(($q, $f, $a)),*) }
            }

            #[inline(always)]
            unsafe fn stamp_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>) {
                let ($($f,)*) = fetch;
                // SAFETY: forwarded contract.
                $(unsafe { $q::stamp_rows($f, rows.clone()) };)*
            }

            #[inline(always)]
            fn tracks(fetch: &Self::Fetch<'_>) -> bool {
                let ($($f,)*) = fetch;
                false $(|| $q::tracks($f))*
            }

            #[inline(always)]
            fn writes_ticks(fetch: &Self::Fetch<'_>) -> bool {
                let ($($f,)*) = fetch;
                false $(|| $q::writes_ticks($f))*
            }
        }

        // SAFETY: no element writes.
        unsafe impl<$($q: ReadOnlyQueryData),*> ReadOnlyQueryData for ($($q,)*) {}
    };
}

all_query_tuples!(tuple_query_data);
