//! A query's cached state: its matched archetypes and its last run.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{
    Access, QueryData, QueryFilter, QueryIter, QueryParIter, ReadOnlyQueryData, TickRange,
};
use crate::archetype::ArchetypeId;
use crate::change::Tick;
use crate::component::{ComponentId, StorageType, short_type_name};
use crate::entity::Entity;
use crate::error::QueryEntityError;
use crate::world::{World, WorldId};

/// Why [`QueryState::fetch_prepared`] found no item: a
/// [`QueryEntityError`] without its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// The handle is stale or was never spawned.
    NoSuchEntity,
    /// The entity lives but the query does not match it.
    NoMatch,
}

/// A cached query: which archetypes match `Q` and `F`, updated incrementally
/// as the world grows, and when it last ran (for [`Added`](crate::Added) and
/// [`Changed`](crate::Changed)). Build it once with
/// [`World::query`]/[`World::query_filtered`] and keep it.
///
/// A state belongs to the world that built it: using it with another world
/// panics.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Component)] struct Velocity(f32);
/// let mut world = World::new();
/// let mut movement = world.query::<(&mut Position, &Velocity)>();
/// let e = world.spawn((Position(0.0), Velocity(1.0))); // spawned after: still seen
/// for _ in 0..3 {
///     movement.iter_mut(&mut world).for_each(|(p, v)| p.0 += v.0);
/// }
/// assert_eq!(world.get::<Position>(e).unwrap().0, 3.0);
/// ```
pub struct QueryState<Q: QueryData, F: QueryFilter = ()> {
    world_id: WorldId,
    data_state: Q::State,
    filter_state: F::State,
    access: Access,
    /// The matched archetypes in creation order, each with what the fetches
    /// need there (column indices), so iteration looks nothing up per table.
    matched: Vec<MatchedArchetype<Q, F>>,
    /// Per archetype index: its position in `matched` plus one, or 0 if it
    /// does not match (or was created after the last update).
    matched_index: Vec<u32>,
    /// The position in `matched` of the archetype the last lookup by entity
    /// (`get`, `get_mut`) landed in, or `u32::MAX`: the next lookup tries
    /// it first, checked by its archetype id, so that a run of lookups
    /// among entities of one archetype finds its columns from this alone,
    /// without waiting for the entity's location to look its archetype up
    /// (the load chain the CPU would otherwise wait on for every lookup).
    /// An atomic because lookups through a shared borrow update it; a
    /// reader sees one whole position or another, each checked.
    last_get: AtomicU32,
    archetypes_seen: usize,
    /// The sparse components every match has (`&T`, `&mut T`, `With<T>`
    /// of a sparse `T`): a run may walk the smallest of their sets instead
    /// of every matched row (see [`QueryState::driver`]).
    sparse_required: Vec<ComponentId>,
    /// The tick of the previous run; `None` before the first.
    last_run: Option<Tick>,
    /// True when the query names [`Disabled`](crate::Disabled): it then
    /// sees disabled entities; every other query skips them.
    sees_disabled: bool,
}

/// The sparse set a run walks instead of the matched tables (see
/// [`QueryState::driver`]): its component and its entity list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Driver<'w> {
    pub id: ComponentId,
    pub entities: &'w [Entity],
}

/// One archetype a query state matched, with the archetype states of its
/// data and filter (see [`QueryData::ArchetypeState`]).
pub(crate) struct MatchedArchetype<Q: QueryData, F: QueryFilter> {
    pub id: ArchetypeId,
    pub data: Q::ArchetypeState,
    pub filter: F::ArchetypeState,
}

impl<Q: QueryData, F: QueryFilter> fmt::Debug for QueryState<Q, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryState")
            .field("query", &short_type_name::<Q>())
            .field("filter", &short_type_name::<F>())
            .field("world", &self.world_id)
            .field("matched_archetypes", &self.matched.len())
            .finish()
    }
}

impl<Q: QueryData, F: QueryFilter> QueryState<Q, F> {
    /// Builds the state on `world` (registering the components it names).
    ///
    /// Panics if `Q` aliases a component, naming it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let q = QueryState::<&A>::new(&mut world);
    /// assert_eq!(q.matched_archetype_count(), 0);
    /// ```
    pub fn new(world: &mut World) -> Self {
        let (state, alias) = Self::new_reporting_alias(world);
        if let Some(message) = alias {
            panic!("{message}");
        }
        state
    }

    /// Builds the state, returning (not panicking with) the message for a
    /// query that aliases a component. A state that aliases must not run.
    pub(crate) fn new_reporting_alias(world: &mut World) -> (Self, Option<String>) {
        let data_state = Q::init_state(world);
        let filter_state = F::init_state(world);
        let mut access = Access::default();
        Q::update_access(&data_state, &mut access);
        let alias = access.conflict().map(|id| {
            format!(
                "query `{}` borrows component `{}` mutably while also borrowing it elsewhere in the same query; \
                 a component may appear once if any appearance is `&mut`",
                short_type_name::<Q>(),
                world.components().name(id)
            )
        });
        F::update_access(&filter_state, &mut access);
        let sees_disabled = world
            .components()
            .disabled_id()
            .is_some_and(|id| access.mentions(id));
        let sparse_required = access
            .required()
            .filter(|&id| world.components().info(id).storage() == StorageType::SparseSet)
            .collect();
        let mut state = QueryState {
            world_id: world.id(),
            data_state,
            filter_state,
            access,
            matched: Vec::new(),
            matched_index: Vec::new(),
            last_get: AtomicU32::new(u32::MAX),
            archetypes_seen: 0,
            sparse_required,
            last_run: None,
            sees_disabled,
        };
        state.update_archetypes(world);
        (state, alias)
    }

    /// The components this query reads and writes.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// assert!(world.query::<&A>().access().is_read_only());
    /// ```
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// How many archetypes this state has matched so far.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// #[derive(Component)] struct B;
    /// let mut world = World::new();
    /// world.spawn(A);
    /// world.spawn((A, B));
    /// assert_eq!(world.query::<&A>().matched_archetype_count(), 2);
    /// ```
    pub fn matched_archetype_count(&self) -> usize {
        self.matched.len()
    }

    /// Iterates the matching entities of `world` (read-only queries).
    ///
    /// Panics if `world` is not the world that built this state.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// world.spawn_batch((1..=3).map(Health));
    /// let mut q = world.query::<&Health>();
    /// assert_eq!(q.iter(&world).map(|h| h.0).sum::<u32>(), 6);
    /// ```
    #[inline]
    pub fn iter<'w, 's>(&'s mut self, world: &'w World) -> QueryIter<'w, 's, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        let ticks = self.begin_run(world);
        // SAFETY: Q only reads (ReadOnlyQueryData) and `&World` keeps writers
        // out for 'w; the state was checked against `world`.
        unsafe { self.iter_prepared(world, ticks) }
    }

    /// Iterates the matching entities of `world` with mutable access.
    ///
    /// Panics if `world` is not the world that built this state.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(1));
    /// let mut q = world.query::<&mut Health>();
    /// q.iter_mut(&mut world).for_each(|h| h.0 *= 10);
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 10);
    /// ```
    #[inline]
    pub fn iter_mut<'w, 's>(&'s mut self, world: &'w mut World) -> QueryIter<'w, 's, Q, F> {
        world.check_change_ticks();
        let ticks = self.begin_run_mut(world);
        // SAFETY: `&mut World` gives exclusive access for 'w; the query does
        // not alias (checked in `new`); the state was checked against `world`.
        unsafe { self.iter_prepared(world, ticks) }
    }

    /// Iterates the matching entities of `world` in parallel, on rayon's
    /// thread pool, like [`Query::par_iter`](crate::Query::par_iter) but
    /// without a schedule (read-only queries). Counts as a run of the
    /// state, like [`iter`](Self::iter).
    ///
    /// Panics if `world` is not the world that built this state.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// #[derive(Component)] struct Mass(u64);
    /// let mut world = World::new();
    /// world.spawn_batch((1..=100).map(Mass));
    /// let mut q = world.query::<&Mass>();
    /// let total = AtomicU64::new(0);
    /// q.par_iter(&world).for_each(|m| { total.fetch_add(m.0, Ordering::Relaxed); });
    /// assert_eq!(total.into_inner(), 5050);
    /// ```
    pub fn par_iter<'w, 's>(&'s mut self, world: &'w World) -> QueryParIter<'w, 's, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        let ticks = self.begin_run(world);
        // SAFETY: Q only reads and `&World` keeps writers out for 'w; the
        // state was prepared for `world` by `begin_run`.
        unsafe { QueryParIter::new(world, self, ticks) }
    }

    /// Iterates the matching entities of `world` in parallel with mutable
    /// access, like [`Query::par_iter_mut`](crate::Query::par_iter_mut) but
    /// without a schedule. Each item is visited once, by one thread.
    ///
    /// Panics if `world` is not the world that built this state.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Heat(f32);
    /// let mut world = World::new();
    /// world.spawn_batch((0..1000).map(|_| Heat(1.0)));
    /// let mut q = world.query::<&mut Heat>();
    /// q.par_iter_mut(&mut world).for_each(|h| h.0 *= 0.5);
    /// assert!(q.iter_mut(&mut world).all(|h| h.0 == 0.5));
    /// ```
    pub fn par_iter_mut<'w, 's>(&'s mut self, world: &'w mut World) -> QueryParIter<'w, 's, Q, F> {
        world.check_change_ticks();
        let ticks = self.begin_run_mut(world);
        // SAFETY: `&mut World` gives exclusive access for 'w; the query does
        // not alias (checked in `new`); the state was prepared for `world`.
        unsafe { QueryParIter::new(world, self, ticks) }
    }

    /// The item for one entity (read-only queries). Does not count as a run:
    /// `Added`/`Changed` compare against the last `iter`.
    ///
    /// Fails if the entity is gone or does not match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(4));
    /// let mut q = world.query::<&Health>();
    /// assert_eq!(q.get(&world, e).unwrap().0, 4);
    /// ```
    #[inline]
    pub fn get<'w>(
        &mut self,
        world: &'w World,
        entity: Entity,
    ) -> Result<Q::Item<'w>, QueryEntityError>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: read-only query under a shared borrow of the world.
        unsafe { self.get_unchecked(world, entity) }
    }

    /// The item for one entity, with mutable access.
    ///
    /// Fails if the entity is gone or does not match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(4));
    /// let mut q = world.query::<&mut Health>();
    /// q.get_mut(&mut world, e).unwrap().0 = 9;
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 9);
    /// ```
    #[inline]
    pub fn get_mut<'w>(
        &mut self,
        world: &'w mut World,
        entity: Entity,
    ) -> Result<Q::Item<'w>, QueryEntityError> {
        // SAFETY: exclusive borrow of the world; one item only.
        unsafe { self.get_unchecked(world, entity) }
    }

    /// # Safety
    /// - if `Q` writes, the caller has exclusive access to the components it
    ///   writes for `'w`.
    #[inline]
    unsafe fn get_unchecked<'w>(
        &mut self,
        world: &'w World,
        entity: Entity,
    ) -> Result<Q::Item<'w>, QueryEntityError> {
        self.prepare(world);
        let ticks = TickRange::since(self.last_run, world.change_tick());
        // SAFETY: prepared for `world` just above; access forwarded.
        unsafe { self.get_prepared(world, entity, ticks) }
    }

    /// The item for `entity`, for a state already [prepared](Self::prepare)
    /// for `world`.
    ///
    /// # Safety
    /// - `self.prepare(world)` ran since the world last changed structurally;
    /// - if `Q` writes, the caller has exclusive access to the components it
    ///   writes for `'w`, and no other item for `entity` is alive.
    #[inline]
    pub(crate) unsafe fn get_prepared<'w>(
        &self,
        world: &'w World,
        entity: Entity,
        ticks: TickRange,
    ) -> Result<Q::Item<'w>, QueryEntityError> {
        // SAFETY: `fetch_prepared` has this function's contract, which the
        // caller upholds: `self` prepared for `world` since its last
        // structural change, and access to what `Q` writes for `'w`.
        unsafe { self.fetch_prepared(world, entity, ticks) }.map_err(|miss| match miss {
            Miss::NoSuchEntity => QueryEntityError::NoSuchEntity(entity),
            Miss::NoMatch => QueryEntityError::QueryDoesNotMatch {
                entity,
                query: short_type_name::<Q>(),
            },
        })
    }

    /// [`QueryState::get_prepared`] without building the error (whose
    /// query name is an allocated string): for callers that only ask
    /// whether there is an item (`Query::contains`).
    ///
    /// # Safety
    /// - as [`QueryState::get_prepared`].
    #[inline]
    pub(crate) unsafe fn fetch_prepared<'w>(
        &self,
        world: &'w World,
        entity: Entity,
        ticks: TickRange,
    ) -> Result<Q::Item<'w>, Miss> {
        // The entry the last lookup landed in, and its archetype, found
        // before the entity's location (as `World::get` reads its column
        // hint first): on a hit, the archetype's columns do not wait on the
        // entity's slot, and the compiler cannot take the archetype from
        // the location instead (the two are only known equal after).
        let last = self
            .matched
            .get(self.last_get.load(Ordering::Relaxed) as usize)
            .and_then(|entry| Some((entry, world.archetype_slice().get(entry.id.index())?)));
        // The slot's location unverified: an invalid one (an id reserved
        // but not flushed) has archetype `ArchetypeId::INVALID`, which no
        // state matched (no archetype has that index), so it is told from
        // a mismatch only on a miss, off the hit path.
        let loc = world
            .location_unverified(entity)
            .ok_or(Miss::NoSuchEntity)?;
        let (matched, archetype) = match last {
            Some((entry, archetype)) if entry.id == loc.archetype => (entry, archetype),
            _ => match self.matched_for_get_searched(loc.archetype) {
                Some(entry) => (entry, world.archetype(entry.id)),
                None => {
                    return Err(if loc.is_valid() {
                        Miss::NoMatch
                    } else {
                        Miss::NoSuchEntity
                    });
                }
            },
        };
        let row = loc.row as usize;
        if archetype.table.disabled().count() > 0
            && self.skips_disabled(world)
            && archetype.table.disabled().contains(row)
        {
            return Err(Miss::NoMatch);
        }
        // SAFETY: the state belongs to `world` (prepared); the archetype
        // matched, with the archetype states cached for it; `row` holds
        // `entity`; access forwarded from the caller.
        unsafe {
            let mut data = Q::init_fetch(world, &self.data_state, ticks);
            let mut filter = F::init_fetch(world, &self.filter_state, ticks);
            Q::set_archetype(&mut data, &self.data_state, matched.data, archetype);
            F::set_archetype(&mut filter, &self.filter_state, matched.filter, archetype);
            if !F::filter(&mut filter, entity, row) {
                return Err(Miss::NoMatch);
            }
            Q::fetch(&mut data, entity, row).ok_or(Miss::NoMatch)
        }
    }

    /// Whether [`QueryState::fetch_prepared`] would yield an item for
    /// `entity`, found without fetching it: a writing query stamps no
    /// change tick (change detection marks only what user code could have
    /// written).
    ///
    /// # Safety
    /// - `self.prepare(world)` ran since the world last changed structurally.
    pub(crate) unsafe fn probe_prepared(
        &self,
        world: &World,
        entity: Entity,
        ticks: TickRange,
    ) -> Result<(), Miss> {
        let loc = world.location(entity).ok_or(Miss::NoSuchEntity)?;
        let Some(matched) = self.matched_entry(loc.archetype) else {
            return Err(Miss::NoMatch);
        };
        let archetype = world.archetype(loc.archetype);
        let row = loc.row as usize;
        if archetype.table.disabled().count() > 0
            && self.skips_disabled(world)
            && archetype.table.disabled().contains(row)
        {
            return Err(Miss::NoMatch);
        }
        // SAFETY: the state belongs to `world` (prepared); the archetype
        // matched, with the archetype states cached for it; `row` holds
        // `entity`. The data fetch only answers `can_fetch`, which writes
        // and yields nothing, and the filter only reads.
        let found = unsafe {
            let mut data = Q::init_fetch(world, &self.data_state, ticks);
            let mut filter = F::init_fetch(world, &self.filter_state, ticks);
            Q::set_archetype(&mut data, &self.data_state, matched.data, archetype);
            F::set_archetype(&mut filter, &self.filter_state, matched.filter, archetype);
            F::filter(&mut filter, entity, row) && Q::can_fetch(&data, entity)
        };
        if found { Ok(()) } else { Err(Miss::NoMatch) }
    }

    /// Up to `limit` of the entities this query yields, in iteration
    /// order, found by [`QueryState::probe_prepared`] (no item is fetched,
    /// so no tick is stamped).
    ///
    /// # Safety
    /// - `self.prepare(world)` ran since the world last changed structurally.
    pub(crate) unsafe fn matching_entities(
        &self,
        world: &World,
        ticks: TickRange,
        limit: usize,
    ) -> Vec<Entity> {
        let mut out = Vec::new();
        let mut probe = |entity: Entity| {
            // SAFETY: forwarded contract.
            if unsafe { self.probe_prepared(world, entity, ticks) }.is_ok() {
                out.push(entity);
            }
            out.len() < limit
        };
        match self.driver(world) {
            Some(driver) => {
                for &entity in driver.entities {
                    if !probe(entity) {
                        break;
                    }
                }
            }
            None => {
                'walk: for matched in self.matched() {
                    for &entity in world.archetype(matched.id).entities() {
                        if !probe(entity) {
                            break 'walk;
                        }
                    }
                }
            }
        }
        out
    }

    /// An iterator for a state already [prepared](Self::prepare) for
    /// `world`, with the given ticks.
    ///
    /// # Safety
    /// - `self.prepare(world)` ran since the world last changed structurally;
    /// - if `Q` writes, the caller has exclusive access to the components it
    ///   writes for `'w`.
    #[inline]
    pub(crate) unsafe fn iter_prepared<'w, 's>(
        &'s self,
        world: &'w World,
        ticks: TickRange,
    ) -> QueryIter<'w, 's, Q, F> {
        if let Some(driver) = self.driver(world) {
            // SAFETY: forwarded contract; the driver is a set of `world`,
            // and the range is its whole list.
            return unsafe {
                QueryIter::new_driven(world, self, ticks, driver, 0..driver.entities.len())
            };
        }
        // SAFETY: forwarded contract; `matched` lists archetypes of `world`.
        unsafe { QueryIter::new(world, self, ticks) }
    }

    /// An iterator over rows `rows` of one matched archetype only, for a
    /// state already [prepared](Self::prepare) for `world`.
    ///
    /// # Safety
    /// - as [`QueryState::iter_prepared`]; `matched` is an entry of
    ///   `self.matched()`.
    pub(crate) unsafe fn iter_rows_prepared<'w, 's>(
        &'s self,
        world: &'w World,
        ticks: TickRange,
        matched: &MatchedArchetype<Q, F>,
        rows: std::ops::Range<usize>,
    ) -> QueryIter<'w, 's, Q, F> {
        debug_assert!(self.matched_entry(matched.id).is_some());
        // SAFETY: forwarded contract.
        unsafe { QueryIter::unstarted(world, self, ticks).with_rows(matched, rows) }
    }

    /// The ticks a `get` on a prepared state compares against (it does not
    /// advance the world's tick, as a `get` never does).
    pub(crate) fn get_ticks(&self, world: &World) -> TickRange {
        TickRange::since(self.last_run, world.change_tick())
    }

    /// True when a run on `world` must skip disabled rows: the query does
    /// not name [`Disabled`](crate::Disabled) and some entity of `world`
    /// is disabled. One check per run, so a world with nothing disabled
    /// pays no more.
    #[inline(always)]
    pub(crate) fn skips_disabled(&self, world: &World) -> bool {
        !self.sees_disabled && world.any_disabled()
    }

    /// The data and filter states.
    pub(crate) fn states(&self) -> (&Q::State, &F::State) {
        (&self.data_state, &self.filter_state)
    }

    /// The archetypes this state matched, in creation order.
    pub(crate) fn matched(&self) -> &[MatchedArchetype<Q, F>] {
        &self.matched
    }

    /// The set a run walks instead of the matched tables, if it walks one:
    /// the smallest set among the sparse components every match has, when
    /// it holds fewer entities than the matched tables have rows. A query
    /// for a rare sparse component (a status effect, a marker) then costs
    /// what that component's set holds, not what the world holds. A
    /// [dense](Self::is_dense) query always walks it. Either way the order
    /// is a pure function of the world. For a state
    /// [prepared](Self::prepare) for `world`.
    #[inline]
    pub(crate) fn driver<'w>(&self, world: &'w World) -> Option<Driver<'w>> {
        if self.sparse_required.is_empty() {
            return None;
        }
        self.smallest_set(world)
    }

    /// True when runs need no archetype: the data is all sparse
    /// components (and `Entity`) and there is no filter. Such a run visits
    /// the driving set in order and reads its values by position, like a
    /// plain array; other sparse components are looked up per entity.
    #[inline]
    pub(crate) fn is_dense(&self) -> bool {
        // A walk of a sparse set's positions reads no table, so it cannot
        // skip disabled rows: while some entity is disabled, a query that
        // skips them walks the set entity by entity instead (see
        // `QueryIter::new_driven`).
        Q::DENSE && F::ALWAYS_TRUE && !self.sparse_required.is_empty()
    }

    /// How many entities a run visits at most: the driving set's (as
    /// [`driver`](Self::driver) returned it for `world`), or the matched
    /// tables' rows.
    pub(crate) fn run_len(&self, world: &World, driver: Option<Driver<'_>>) -> usize {
        match driver {
            Some(driver) => driver.entities.len(),
            None => self.matched_rows(world),
        }
    }

    /// The rows of every matched table in `world`.
    fn matched_rows(&self, world: &World) -> usize {
        self.matched
            .iter()
            .map(|m| world.archetype(m.id).len())
            .sum()
    }

    #[inline(never)]
    fn smallest_set<'w>(&self, world: &'w World) -> Option<Driver<'w>> {
        let mut best: Option<Driver<'w>> = None;
        for &id in &self.sparse_required {
            let entities = world
                .sparse_sets()
                .get(id)
                .map_or(&[][..], |set| set.entities());
            if best.is_none_or(|b| entities.len() < b.entities.len()) {
                best = Some(Driver { id, entities });
            }
        }
        let best = best?;
        if self.is_dense() {
            return Some(best);
        }
        (best.entities.len() < self.matched_rows(world)).then_some(best)
    }

    /// The entry of archetype `id`, if this state matched it.
    #[inline]
    pub(crate) fn matched_entry(&self, id: ArchetypeId) -> Option<&MatchedArchetype<Q, F>> {
        // `matched_index` holds a match's position + 1, or 0: the 0 wraps
        // to `usize::MAX`, so one bounds check of `matched` answers both
        // "not matched" and the position's range (random access by entity
        // takes this on every call).
        let i = *self.matched_index.get(id.index())? as usize;
        self.matched.get(i.wrapping_sub(1))
    }

    /// The entry of archetype `id` for a lookup by entity whose archetype is
    /// not the last lookup's (see `last_get`): found by its index, and
    /// remembered.
    #[inline(never)]
    fn matched_for_get_searched(&self, id: ArchetypeId) -> Option<&MatchedArchetype<Q, F>> {
        let i = (*self.matched_index.get(id.index())?).wrapping_sub(1);
        let entry = self.matched.get(i as usize)?;
        // A store only when it changes: readers on several threads keep
        // the line shared.
        if self.last_get.load(Ordering::Relaxed) != i {
            self.last_get.store(i, Ordering::Relaxed);
        }
        Some(entry)
    }

    /// Checks `world` is this state's and catches up on new archetypes.
    /// Panics for another world.
    #[inline]
    pub(crate) fn prepare(&mut self, world: &World) {
        self.validate_world(world);
        self.update_archetypes(world);
    }

    /// Checks the world, catches up on new archetypes, and opens a run.
    #[inline]
    fn begin_run(&mut self, world: &World) -> TickRange {
        self.prepare(world);
        let this_run = world.increment_change_tick();
        self.open_run(this_run)
    }

    /// `begin_run` with exclusive access: the tick moves on without an
    /// atomic read-modify-write.
    #[inline]
    fn begin_run_mut(&mut self, world: &mut World) -> TickRange {
        self.prepare(world);
        let this_run = world.increment_change_tick_mut();
        self.open_run(this_run)
    }

    #[inline]
    fn open_run(&mut self, this_run: Tick) -> TickRange {
        let ticks = TickRange::since(self.last_run, this_run);
        self.last_run = Some(this_run);
        ticks
    }

    #[inline]
    fn validate_world(&self, world: &World) {
        if self.world_id != world.id() {
            self.wrong_world(world);
        }
    }

    #[cold]
    #[inline(never)]
    fn wrong_world(&self, world: &World) -> ! {
        panic!(
            "query state `{}` was built for world {:?} and cannot be used with world {:?}",
            short_type_name::<Q>(),
            self.world_id,
            world.id()
        );
    }

    /// Matches the archetypes created since the last update.
    #[inline]
    fn update_archetypes(&mut self, world: &World) {
        if self.archetypes_seen != world.archetype_count() {
            self.match_new_archetypes(world);
        }
    }

    #[cold]
    #[inline(never)]
    fn match_new_archetypes(&mut self, world: &World) {
        let count = world.archetype_count();
        self.matched_index.resize(count, 0);
        for archetype in world.archetypes().skip(self.archetypes_seen) {
            let Some(data) = Q::match_archetype(&self.data_state, archetype) else {
                continue;
            };
            let Some(filter) = F::match_archetype(&self.filter_state, archetype) else {
                continue;
            };
            self.matched.push(MatchedArchetype {
                id: archetype.id(),
                data,
                filter,
            });
            self.matched_index[archetype.id().index()] =
                u32::try_from(self.matched.len()).expect("too many archetypes");
        }
        self.archetypes_seen = count;
    }
}
