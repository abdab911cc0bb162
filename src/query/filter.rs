//! Query filters: which entities a query visits, without borrowing data.

use std::marker::PhantomData;

use super::fetch::column_at;
use super::tuples::all_query_tuples;
use super::{Access, TickRange};
use crate::archetype::Archetype;
use crate::change::ComponentTicks;
use crate::component::{Component, ComponentId, StorageType, short_type_name};
use crate::entity::Entity;
use crate::storage::SparseSet;
use crate::world::World;

/// Narrows a query: [`With`], [`Without`], [`Or`], [`Added`], [`Changed`],
/// or a tuple of filters (all must hold). `()` lets everything through.
///
/// The methods are the query engine's plumbing, hidden from the docs;
/// [`#[derive(QueryFilter)]`](derive@crate::QueryFilter) implements the
/// trait for a struct of filters (as the tuple of its fields).
///
/// # Safety
/// An implementation must match in `match_archetype` only archetypes that
/// `set_archetype` can read, return there only archetype states
/// `set_archetype` may trust, and read in `filter` only the given row. It
/// may declare `ALWAYS_TRUE` only if it matches every archetype and passes
/// every entity, and `IS_ARCHETYPAL` only if `filter` passes every row of
/// every archetype it matches.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Enemy;
/// #[derive(Component)] struct Boss;
/// #[derive(Component)] struct Health(u32);
/// let mut world = World::new();
/// world.spawn((Health(1), Enemy));
/// world.spawn((Health(9), Enemy, Boss));
/// let mut minions = world.query_filtered::<&Health, (With<Enemy>, Without<Boss>)>();
/// assert_eq!(minions.iter(&world).map(|h| h.0).collect::<Vec<_>>(), [1]);
/// ```
pub unsafe trait QueryFilter {
    #[doc(hidden)]
    type Fetch<'w>;
    #[doc(hidden)]
    type State: Send + Sync + 'static;
    /// What `set_archetype` needs about one matched archetype, worked out
    /// once when a query state matches it (see
    /// [`QueryData::ArchetypeState`](super::QueryData)).
    #[doc(hidden)]
    type ArchetypeState: Copy + Send + Sync + 'static;

    #[doc(hidden)]
    fn init_state(world: &mut World) -> Self::State;

    #[doc(hidden)]
    fn update_access(state: &Self::State, access: &mut Access);

    /// The archetype state for `archetype` if the filter can pass entities
    /// of it, else `None`.
    #[doc(hidden)]
    fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::ArchetypeState>;

    /// True when the filter matches every archetype and passes every
    /// entity (the empty filter `()`), so a run may skip it entirely.
    #[doc(hidden)]
    const ALWAYS_TRUE: bool = false;

    /// True when the filter decides by archetype alone: it passes every row
    /// of every archetype it matches ([`With`] and [`Without`] of a table
    /// component, and tuples of such). A walk then skips no row, so it can
    /// skip the per-row `filter` call and stamp a run's change ticks once
    /// rather than row by row (issue #40: `Without<Frozen>` cost join_filter
    /// a tick test per row).
    #[doc(hidden)]
    const IS_ARCHETYPAL: bool = Self::ALWAYS_TRUE;

    /// # Safety
    /// - `state` was built by `init_state` on `world`.
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

    /// True if the entity in `row` passes.
    ///
    /// # Safety
    /// - `row` is a row of the archetype last set and `entity` is its entity.
    #[doc(hidden)]
    unsafe fn filter(fetch: &mut Self::Fetch<'_>, entity: Entity, row: usize) -> bool;
}

fn sparse_set<T: Component>(world: &World, id: ComponentId) -> Option<&SparseSet> {
    match T::STORAGE {
        StorageType::Table => None,
        StorageType::SparseSet => world.sparse_sets().get(id),
    }
}

// ----- With / Without ---------------------------------------------------------------

/// Only entities that have a `T` (not borrowed).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Player;
/// #[derive(Component)] struct Health(u32);
/// let mut world = World::new();
/// world.spawn(Health(3));
/// world.spawn((Health(5), Player));
/// let mut q = world.query_filtered::<&Health, With<Player>>();
/// assert_eq!(q.iter(&world).map(|h| h.0).collect::<Vec<_>>(), [5]);
/// ```
pub struct With<T>(PhantomData<fn() -> T>);

/// Only entities that do not have a `T`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Player;
/// #[derive(Component)] struct Health(u32);
/// let mut world = World::new();
/// world.spawn(Health(3));
/// world.spawn((Health(5), Player));
/// let mut q = world.query_filtered::<&Health, Without<Player>>();
/// assert_eq!(q.iter(&world).map(|h| h.0).collect::<Vec<_>>(), [3]);
/// ```
pub struct Without<T>(PhantomData<fn() -> T>);

/// Fetch state of `With<T>` / `Without<T>`: `T`'s sparse set, if `T` is
/// sparse (table components are decided per archetype).
#[doc(hidden)]
pub struct PresenceFetch<'w> {
    sparse: Option<&'w SparseSet>,
}

macro_rules! presence_filter {
    ($name:ident, $want:literal) => {
        impl<T> std::fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}<{}>", stringify!($name), short_type_name::<T>())
            }
        }

        // SAFETY: reads no component value; a table component decides per
        // archetype, a sparse one per entity through its set.
        unsafe impl<T: Component> QueryFilter for $name<T> {
            type Fetch<'w> = PresenceFetch<'w>;
            type State = ComponentId;
            type ArchetypeState = ();
            // A table component is decided by `match_archetype`; a sparse
            // one by `filter`, per entity.
            const IS_ARCHETYPAL: bool = matches!(T::STORAGE, StorageType::Table);

            fn init_state(world: &mut World) -> ComponentId {
                world.register_component::<T>()
            }

            fn update_access(&id: &ComponentId, access: &mut Access) {
                if $want {
                    access.add_required(id);
                } else {
                    access.add_excluded(id);
                }
            }

            fn match_archetype(&id: &ComponentId, archetype: &Archetype) -> Option<()> {
                match T::STORAGE {
                    StorageType::Table => (archetype.contains(id) == $want).then_some(()),
                    StorageType::SparseSet => Some(()),
                }
            }

            #[inline]
            unsafe fn init_fetch<'w>(
                world: &'w World,
                &id: &ComponentId,
                _ticks: TickRange,
            ) -> Self::Fetch<'w> {
                PresenceFetch {
                    sparse: sparse_set::<T>(world, id),
                }
            }

            #[inline]
            unsafe fn set_archetype<'w>(
                _fetch: &mut Self::Fetch<'w>,
                _state: &ComponentId,
                _arch: (),
                _archetype: &'w Archetype,
            ) {
            }

            #[inline(always)]
            unsafe fn filter(fetch: &mut Self::Fetch<'_>, entity: Entity, _row: usize) -> bool {
                match T::STORAGE {
                    StorageType::Table => true,
                    StorageType::SparseSet => {
                        fetch.sparse.is_some_and(|s| s.contains(entity)) == $want
                    }
                }
            }
        }
    };
}

presence_filter!(With, true);
presence_filter!(Without, false);

// ----- Added / Changed --------------------------------------------------------------

/// Only entities whose `T` was added since the query state last ran. The
/// first run of a state sees every `T` as added.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
/// let mut world = World::new();
/// world.spawn(Health(1));
/// let mut fresh = world.query_filtered::<&Health, Added<Health>>();
/// assert_eq!(fresh.iter(&world).count(), 1);
/// assert_eq!(fresh.iter(&world).count(), 0); // nothing new since
/// world.spawn(Health(2));
/// assert_eq!(fresh.iter(&world).count(), 1);
/// ```
pub struct Added<T>(PhantomData<fn() -> T>);

/// Only entities whose `T` was added or mutably accessed (through a query's
/// `&mut T`, [`World::get_mut`] or a replacing insert) since the query state
/// last ran. The first run of a state sees every `T` as changed.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
/// let mut world = World::new();
/// let e = world.spawn(Health(1));
/// world.spawn(Health(5));
/// let mut changed = world.query_filtered::<Entity, Changed<Health>>();
/// assert_eq!(changed.iter(&world).count(), 2);
/// world.get_mut::<Health>(e).unwrap().0 += 1;
/// assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [e]);
/// ```
pub struct Changed<T>(PhantomData<fn() -> T>);

/// Fetch state of `Added<T>` / `Changed<T>`: the current column's ticks, or
/// `T`'s sparse set.
#[doc(hidden)]
pub struct TickFetch<'w> {
    ticks: *const ComponentTicks,
    sparse: Option<&'w SparseSet>,
    range: TickRange,
}

macro_rules! tick_filter {
    ($name:ident, $ticks:ident) => {
        impl<T> std::fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}<{}>", stringify!($name), short_type_name::<T>())
            }
        }

        // SAFETY: reads only the tick of the given row (or the entity's tick
        // in the sparse set), recorded as a filter read.
        unsafe impl<T: Component> QueryFilter for $name<T> {
            type Fetch<'w> = TickFetch<'w>;
            type State = ComponentId;
            /// `T`'s column index (unused for a sparse `T`).
            type ArchetypeState = u32;

            fn init_state(world: &mut World) -> ComponentId {
                let id = world.register_component::<T>();
                world.track_ticks(id);
                id
            }

            fn update_access(&id: &ComponentId, access: &mut Access) {
                access.add_filter_read(id);
            }

            fn match_archetype(&id: &ComponentId, archetype: &Archetype) -> Option<u32> {
                match T::STORAGE {
                    StorageType::Table => archetype.column_index(id).map(|i| i as u32),
                    StorageType::SparseSet => Some(0),
                }
            }

            #[inline]
            unsafe fn init_fetch<'w>(
                world: &'w World,
                &id: &ComponentId,
                range: TickRange,
            ) -> TickFetch<'w> {
                let sparse = sparse_set::<T>(world, id);
                assert!(
                    sparse.is_none_or(|s| s.column().is_tracked()),
                    "change filter on an untracked sparse set"
                );
                TickFetch {
                    ticks: std::ptr::null(),
                    sparse,
                    range,
                }
            }

            #[inline]
            unsafe fn set_archetype<'w>(
                fetch: &mut TickFetch<'w>,
                _id: &ComponentId,
                column: u32,
                archetype: &'w Archetype,
            ) {
                if T::STORAGE == StorageType::Table {
                    // SAFETY: `column` is the index `match_archetype` found
                    // in this archetype.
                    let column = unsafe { column_at(archetype, column) };
                    assert!(column.is_tracked(), "change filter on an untracked column");
                    fetch.ticks = column.ticks_ptr();
                }
            }

            #[inline(always)]
            unsafe fn filter(fetch: &mut TickFetch<'_>, entity: Entity, row: usize) -> bool {
                let tick = match T::STORAGE {
                    // SAFETY: `row` is in bounds of the current column's
                    // ticks (contract); writers of T's ticks never run while
                    // this query runs, or are this query's own row-by-row
                    // fetch (which touches this row only after the filter).
                    StorageType::Table => unsafe { (*fetch.ticks.add(row)).$ticks },
                    StorageType::SparseSet => {
                        let Some(set) = fetch.sparse else {
                            return false;
                        };
                        let Some(dense) = set.dense_index(entity) else {
                            return false;
                        };
                        // SAFETY: `dense` < len; as above.
                        unsafe { (*set.column().ticks_ptr().add(dense)).$ticks }
                    }
                };
                tick.is_newer_than(fetch.range.last_run, fetch.range.this_run)
            }
        }
    };
}

tick_filter!(Added, added);
tick_filter!(Changed, changed);

// ----- Or ------------------------------------------------------------------------------

/// Entities that pass at least one of the filters in the tuple.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct A;
/// #[derive(Component)] struct B;
/// let mut world = World::new();
/// world.spawn(A);
/// world.spawn(B);
/// world.spawn(());
/// let mut q = world.query_filtered::<Entity, Or<(With<A>, With<B>)>>();
/// assert_eq!(q.iter(&world).count(), 2);
/// ```
pub struct Or<T>(PhantomData<fn() -> T>);

impl<T> std::fmt::Debug for Or<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Or<{}>", short_type_name::<T>())
    }
}

macro_rules! or_filter {
    () => {};
    ($(($q:ident, $f:ident, $s:ident, $a:ident)),+) => {
        // SAFETY: the union of the elements' access; an element is set and
        // asked only on archetypes it matches.
        #[allow(non_snake_case)]
        unsafe impl<$($q: QueryFilter),*> QueryFilter for Or<($($q,)*)> {
            type Fetch<'w> = ($(($q::Fetch<'w>, bool),)*);
            type State = ($($q::State,)*);
            type ArchetypeState = ($(Option<$q::ArchetypeState>,)*);

            fn init_state(world: &mut World) -> Self::State {
                ($($q::init_state(world),)*)
            }

            fn update_access(state: &Self::State, access: &mut Access) {
                // Any one branch may hold, so no branch's requirements do.
                let ($($s,)*) = state;
                $(
                    let mut branch = Access::default();
                    $q::update_access($s, &mut branch);
                    access.add_optional(&branch);
                )*
            }

            fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::ArchetypeState> {
                let ($($s,)*) = state;
                let ($($a,)*) = ($($q::match_archetype($s, archetype),)*);
                (false $(|| $a.is_some())*).then_some(($($a,)*))
            }

            #[inline]
            unsafe fn init_fetch<'w>(world: &'w World, state: &Self::State, ticks: TickRange) -> Self::Fetch<'w> {
                let ($($s,)*) = state;
                // SAFETY: forwarded contract.
                ($((unsafe { $q::init_fetch(world, $s, ticks) }, false),)*)
            }

            #[inline]
            unsafe fn set_archetype<'w>(fetch: &mut Self::Fetch<'w>, state: &Self::State, arch: Self::ArchetypeState, archetype: &'w Archetype) {
                let ($($f,)*) = fetch;
                let ($($s,)*) = state;
                let ($($a,)*) = arch;
                $(
                    $f.1 = $a.is_some();
                    if let Some($a) = $a {
                        // SAFETY: this element matched, with this state.
                        unsafe { $q::set_archetype(&mut $f.0, $s, $a, archetype) };
                    }
                )*
            }

            #[inline(always)]
            unsafe fn filter(fetch: &mut Self::Fetch<'_>, entity: Entity, row: usize) -> bool {
                let ($($f,)*) = fetch;
                // SAFETY: forwarded contract, only for elements that were set.
                false $(|| ($f.1 && unsafe { $q::filter(&mut $f.0, entity, row) }))*
            }
        }
    };
}

all_query_tuples!(or_filter);

// ----- tuples (all must hold) -----------------------------------------------------------

macro_rules! tuple_filter {
    ($(($q:ident, $f:ident, $s:ident, $a:ident)),*) => {
        // SAFETY: the union of the elements' access; the tuple matches only
        // where every element does.
        #[allow(non_snake_case, unused_variables, clippy::unused_unit)]
        unsafe impl<$($q: QueryFilter),*> QueryFilter for ($($q,)*) {
            type Fetch<'w> = ($($q::Fetch<'w>,)*);
            type State = ($($q::State,)*);
            type ArchetypeState = ($($q::ArchetypeState,)*);
            const ALWAYS_TRUE: bool = true $(&& $q::ALWAYS_TRUE)*;
            const IS_ARCHETYPAL: bool = true $(&& $q::IS_ARCHETYPAL)*;

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

            #[inline(always)]
            unsafe fn filter(fetch: &mut Self::Fetch<'_>, entity: Entity, row: usize) -> bool {
                let ($($f,)*) = fetch;
                // SAFETY: forwarded contract.
                true $(&& unsafe { $q::filter($f, entity, row) })*
            }
        }
    };
}

all_query_tuples!(tuple_filter);
