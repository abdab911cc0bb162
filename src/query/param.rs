//! `Query`: a query as a system parameter.

use std::fmt;

use rayon::prelude::*;
use thiserror::Error;

use super::{
    QueryData, QueryFilter, QueryIter, QueryParChunks, QueryState, ReadOnlyQueryData, TickRange,
};
use crate::component::short_type_name;
use crate::entity::Entity;
use crate::error::QueryEntityError;
use crate::system::{SystemMeta, SystemParam, SystemSkip};
use crate::world::World;

/// The entities matching `Q` and `F`, as a system sees them for one run.
///
/// `Added`/`Changed` filters compare against the system's previous run.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Component)] struct Velocity(f32);
///
/// fn movement(mut q: Query<(&mut Position, &Velocity)>) {
///     for (p, v) in q.iter_mut() {
///         p.0 += v.0;
///     }
/// }
/// let mut world = World::new();
/// let e = world.spawn((Position(0.0), Velocity(2.0)));
/// world.run_system_once(movement);
/// assert_eq!(world.get::<Position>(e).unwrap().0, 2.0);
/// ```
pub struct Query<'w, 's, Q: QueryData, F: QueryFilter = ()> {
    pub(super) world: &'w World,
    pub(super) state: &'s QueryState<Q, F>,
    pub(super) ticks: TickRange,
}

impl<Q: QueryData, F: QueryFilter> fmt::Debug for Query<'_, '_, Q, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Query")
            .field("query", &short_type_name::<Q>())
            .field("filter", &short_type_name::<F>())
            .finish()
    }
}

/// `single`/`get_single` found no matching entity, or more than one.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Player;
/// let mut world = World::new();
/// let err = world.run_system_once(|q: Query<Entity, With<Player>>| q.get_single().unwrap_err());
/// assert!(matches!(err, QuerySingleError::NoEntities(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QuerySingleError {
    /// No entity matches the query (named).
    #[error("no entity matches query `{0}`, but exactly one was expected")]
    NoEntities(String),
    /// More than one entity matches the query (named).
    #[error("more than one entity matches query `{0}`, but exactly one was expected")]
    MultipleEntities(String),
}

impl<'w, 's, Q: QueryData, F: QueryFilter> Query<'w, 's, Q, F> {
    /// Iterates the matching entities (read-only queries).
    ///
    /// Order: matched tables in creation order, rows in order. A query
    /// that requires a sparse component (`&T`, `&mut T` or `With<T>` of a
    /// sparse `T`) instead walks the smallest such component's set, in the
    /// set's order, when that set holds fewer entities than the matched
    /// tables have rows: a query for a rare marker then costs what the
    /// marker's set holds, not what the world holds. A query of sparse
    /// components alone (`&T`, `&mut T`, plus `Entity`) with no filter
    /// always walks its smallest set, reading that set's values by
    /// position like one array, and looks the others up per entity.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// #[derive(Component)] #[component(storage = "sparse")] struct Stunned;
    /// let mut world = World::new();
    /// let all = world.spawn_batch((1..=1000).map(Health));
    /// world.insert_one(all[500], Stunned).unwrap();
    /// let total = world.run_system_once(|q: Query<&Health>| q.iter().map(|h| h.0).sum::<u32>());
    /// assert_eq!(total, 500_500);
    /// // Visits Stunned's one entity, not a thousand rows.
    /// let stunned = world.run_system_once(|q: Query<&Health, With<Stunned>>| {
    ///     q.iter().map(|h| h.0).collect::<Vec<_>>()
    /// });
    /// assert_eq!(stunned, [501]);
    /// ```
    pub fn iter(&self) -> QueryIter<'_, 's, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: read-only; the state was prepared when the param was made.
        unsafe { self.state.iter_prepared(self.world, self.ticks) }
    }

    /// Iterates the matching entities with mutable access.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(1));
    /// world.run_system_once(|mut q: Query<&mut Health>| q.iter_mut().for_each(|h| h.0 = 9));
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 9);
    /// ```
    pub fn iter_mut(&mut self) -> QueryIter<'_, 's, Q, F> {
        // SAFETY: the scheduler gives this system exclusive access to what Q
        // writes; `&mut self` allows one live iterator at a time.
        unsafe { self.state.iter_prepared(self.world, self.ticks) }
    }

    /// The item for `entity` (read-only queries).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(4));
    /// let hp = world.run_system_once(move |q: Query<&Health>| q.get(e).unwrap().0);
    /// assert_eq!(hp, 4);
    /// ```
    pub fn get(&self, entity: Entity) -> Result<Q::Item<'_>, QueryEntityError>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: read-only; prepared when the param was made.
        unsafe { self.state.get_prepared(self.world, entity, self.ticks) }
    }

    /// The item for `entity`, with mutable access.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(4));
    /// world.run_system_once(move |mut q: Query<&mut Health>| q.get_mut(e).unwrap().0 = 1);
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 1);
    /// ```
    pub fn get_mut(&mut self, entity: Entity) -> Result<Q::Item<'_>, QueryEntityError> {
        // SAFETY: exclusive access to what Q writes (scheduler); `&mut self`
        // allows one live item at a time.
        unsafe { self.state.get_prepared(self.world, entity, self.ticks) }
    }

    /// True if `entity` matches the query.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let p = world.spawn(Player);
    /// assert!(world.run_system_once(move |q: Query<(), With<Player>>| q.contains(p)));
    /// ```
    pub fn contains(&self, entity: Entity) -> bool
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: `Q` is read-only, so no write access is needed; the state
        // was prepared for `self.world` when this param was made, and the
        // world cannot change structurally while it is borrowed. The item
        // is dropped at once. (Not `get`: a miss would build the error's
        // query name only to drop it.)
        unsafe { self.state.fetch_prepared(self.world, entity, self.ticks) }.is_ok()
    }

    /// The only matching item (read-only queries). Panics, naming the query,
    /// unless exactly one entity matches: use [`Query::get_single`] to
    /// handle that case.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player(u32);
    /// let mut world = World::new();
    /// world.spawn(Player(7));
    /// assert_eq!(world.run_system_once(|q: Query<&Player>| q.single().0), 7);
    /// ```
    #[track_caller]
    pub fn single(&self) -> Q::Item<'_>
    where
        Q: ReadOnlyQueryData,
    {
        self.get_single().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The only matching item, or an error if none or several match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player(u32);
    /// let mut world = World::new();
    /// world.spawn(Player(1));
    /// world.spawn(Player(2));
    /// let err = world.run_system_once(|q: Query<&Player>| q.get_single().map(|p| p.0));
    /// assert!(matches!(err, Err(QuerySingleError::MultipleEntities(_))));
    /// ```
    pub fn get_single(&self) -> Result<Q::Item<'_>, QuerySingleError>
    where
        Q: ReadOnlyQueryData,
    {
        single_of(self.iter())
    }

    /// The only matching item, mutably. Panics unless exactly one matches.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Player(1));
    /// world.run_system_once(|mut q: Query<&mut Player>| q.single_mut().0 = 5);
    /// assert_eq!(world.get::<Player>(e).unwrap().0, 5);
    /// ```
    #[track_caller]
    pub fn single_mut(&mut self) -> Q::Item<'_> {
        self.get_single_mut().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The only matching item mutably, or an error if none or several
    /// match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player(u32);
    /// let mut world = World::new();
    /// let none = world.run_system_once(|mut q: Query<&mut Player>| q.get_single_mut().is_err());
    /// assert!(none);
    /// ```
    pub fn get_single_mut(&mut self) -> Result<Q::Item<'_>, QuerySingleError> {
        // SAFETY: the state was prepared for `self.world` when this param
        // was made; exclusive access to what `Q` writes (scheduler), and
        // `&mut self` allows one live item at a time.
        unsafe { single_quietly(self.state, self.world, self.ticks) }
    }

    /// Runs `f` on every matching item, spread over the thread pool. Each
    /// item is visited once, by one thread.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Mass(f64);
    /// let mut world = World::new();
    /// world.spawn_batch((0..1000).map(|i| Mass(i as f64)));
    /// world.run_system_once(|mut q: Query<&mut Mass>| q.par_iter_mut().for_each(|m| m.0 *= 2.0));
    /// let total: f64 = world.run_system_once(|q: Query<&Mass>| q.iter().map(|m| m.0).sum());
    /// assert_eq!(total, 999_000.0);
    /// ```
    pub fn par_iter_mut(&mut self) -> QueryParIter<'_, 's, Q, F> {
        QueryParIter {
            world: self.world,
            state: self.state,
            ticks: self.ticks,
        }
    }

    /// Runs `f` on every matching item in parallel (read-only queries).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// #[derive(Component)] struct Mass(u64);
    /// let mut world = World::new();
    /// world.spawn_batch((1..=100).map(Mass));
    /// let total = world.run_system_once(|q: Query<&Mass>| {
    ///     let sum = AtomicU64::new(0);
    ///     q.par_iter().for_each(|m| { sum.fetch_add(m.0, Ordering::Relaxed); });
    ///     sum.into_inner()
    /// });
    /// assert_eq!(total, 5050);
    /// ```
    pub fn par_iter(&self) -> QueryParIter<'_, 's, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        QueryParIter {
            world: self.world,
            state: self.state,
            ticks: self.ticks,
        }
    }

    /// The items cut into chunks of `chunk_len` rows, for parallel work
    /// whose result must not depend on the thread count (read-only
    /// queries). See [`QueryParChunks`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Mass(u64);
    /// let mut world = World::new();
    /// world.spawn_batch((1..=100).map(Mass));
    /// let sums = world.run_system_once(|q: Query<&Mass>| {
    ///     q.par_chunks(50).map(|chunk| chunk.map(|m| m.0).sum::<u64>())
    /// });
    /// assert_eq!(sums, [1275, 3775]);
    /// ```
    pub fn par_chunks(&self, chunk_len: usize) -> QueryParChunks<'_, 's, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: Q only reads, and this query's access covers it.
        unsafe { QueryParChunks::new(self.world, self.state, self.ticks, chunk_len) }
    }

    /// The items cut into chunks of `chunk_len` rows, mutably, for parallel
    /// work whose result must not depend on the thread count. See
    /// [`QueryParChunks`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Slot(usize);
    /// let mut world = World::new();
    /// world.spawn_batch((0..10).map(|_| Slot(0)));
    /// world.run_system_once(|mut q: Query<&mut Slot>| {
    ///     q.par_chunks_mut(4).for_each(|chunk| {
    ///         let k = chunk.index();
    ///         chunk.for_each(|slot| slot.0 = k);
    ///     })
    /// });
    /// let slots = world.run_system_once(|q: Query<&Slot>| q.iter().map(|s| s.0).collect::<Vec<_>>());
    /// assert_eq!(slots, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]);
    /// ```
    pub fn par_chunks_mut(&mut self, chunk_len: usize) -> QueryParChunks<'_, 's, Q, F> {
        // SAFETY: `&mut self` holds this query's access exclusively for the
        // borrow, and the access covers the query.
        unsafe { QueryParChunks::new(self.world, self.state, self.ticks, chunk_len) }
    }

    /// Every unordered set of `K` distinct matching items (read-only): for
    /// `K = 2`, each pair once. Order: by position in iteration order.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Id(u32);
    /// let mut world = World::new();
    /// world.spawn_batch((0..4).map(Id));
    /// let pairs = world.run_system_once(|q: Query<&Id>| {
    ///     q.iter_combinations::<2>().map(|[a, b]| (a.0, b.0)).collect::<Vec<_>>()
    /// });
    /// assert_eq!(pairs, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
    /// ```
    pub fn iter_combinations<const K: usize>(&self) -> QueryCombinations<'_, 's, Q, F, K>
    where
        Q: ReadOnlyQueryData,
    {
        QueryCombinations::new(self.world, self.state, self.ticks, self.entities())
    }

    /// Every unordered set of `K` distinct matching items, mutably: call
    /// [`QueryCombinations::fetch_next`] in a `while let` loop (the items
    /// of one set must be dropped before the next is fetched, so this is not
    /// an `Iterator`). Every item visited counts as mutably accessed.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Pos(f32);
    /// #[derive(Component, Default)] struct Contacts(u32);
    /// let mut world = World::new();
    /// world.spawn_batch([(Pos(0.0), Contacts(0)), (Pos(0.5), Contacts(0)), (Pos(9.0), Contacts(0))]);
    /// world.run_system_once(|mut q: Query<(&Pos, &mut Contacts)>| {
    ///     let mut pairs = q.iter_combinations_mut::<2>();
    ///     while let Some([(pa, ca), (pb, cb)]) = pairs.fetch_next() {
    ///         if (pa.0 - pb.0).abs() < 1.0 {
    ///             ca.0 += 1;
    ///             cb.0 += 1;
    ///         }
    ///     }
    /// });
    /// let hits = world.run_system_once(|q: Query<&Contacts>| q.iter().map(|c| c.0).collect::<Vec<_>>());
    /// assert_eq!(hits, [1, 1, 0]);
    /// ```
    pub fn iter_combinations_mut<const K: usize>(&mut self) -> QueryCombinations<'_, 's, Q, F, K> {
        let entities = self.entities();
        QueryCombinations::new(self.world, self.state, self.ticks, entities)
    }

    /// The entities this query yields, in iteration order, found without
    /// fetching (a `&mut T` item stamps `Changed`; only the combinations
    /// handed out should).
    fn entities(&self) -> Vec<Entity> {
        // SAFETY: the state was prepared for `self.world` when this param
        // was made, and the world cannot change structurally meanwhile.
        unsafe {
            self.state
                .matching_entities(self.world, self.ticks, usize::MAX)
        }
    }
}

/// `for item in &query`: the same walk as [`Query::iter`], for read-only
/// queries (a `&Query<&mut T>` is not iterable; use `&mut query`).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
///
/// fn total(q: Query<&Health>) -> u32 {
///     let mut sum = 0;
///     for h in &q {
///         sum += h.0;
///     }
///     sum
/// }
/// let mut world = World::new();
/// world.spawn_batch((1..=3).map(Health));
/// assert_eq!(world.run_system_once(total), 6);
/// ```
impl<'a, 's, Q: ReadOnlyQueryData, F: QueryFilter> IntoIterator for &'a Query<'_, 's, Q, F> {
    type Item = Q::Item<'a>;
    type IntoIter = QueryIter<'a, 's, Q, F>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// `for item in &mut query`: the same walk as [`Query::iter_mut`], with
/// mutable access.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Component)] struct Velocity(f32);
///
/// fn movement(mut q: Query<(&mut Position, &Velocity)>) {
///     for (p, v) in &mut q {
///         p.0 += v.0;
///     }
/// }
/// let mut world = World::new();
/// let e = world.spawn((Position(1.0), Velocity(2.0)));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(movement);
/// schedule.run(&mut world);
/// assert_eq!(world.get::<Position>(e).unwrap().0, 3.0);
/// ```
impl<'a, 's, Q: QueryData, F: QueryFilter> IntoIterator for &'a mut Query<'_, 's, Q, F> {
    type Item = Q::Item<'a>;
    type IntoIter = QueryIter<'a, 's, Q, F>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

fn single_of<I: Iterator + IterName>(mut iter: I) -> Result<I::Item, QuerySingleError> {
    let name = iter.query_name();
    let first = iter
        .next()
        .ok_or_else(|| QuerySingleError::NoEntities(name.clone()))?;
    if iter.next().is_some() {
        return Err(QuerySingleError::MultipleEntities(name));
    }
    Ok(first)
}

/// The query's type name, for messages.
trait IterName {
    fn query_name(&self) -> String;
}

impl<Q: QueryData, F: QueryFilter> IterName for QueryIter<'_, '_, Q, F> {
    fn query_name(&self) -> String {
        short_type_name::<Q>()
    }
}

/// Parallel iteration over a query; see [`Query::par_iter_mut`]. Where
/// threads cannot start (WebAssembly without `atomics`) it iterates on the
/// calling thread.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Heat(f32);
/// let mut world = World::new();
/// world.spawn_batch((0..64).map(|_| Heat(1.0)));
/// world.run_system_once(|mut q: Query<&mut Heat>| q.par_iter_mut().for_each(|h| h.0 *= 0.5));
/// ```
pub struct QueryParIter<'a, 's, Q: QueryData, F: QueryFilter> {
    world: &'a World,
    state: &'s QueryState<Q, F>,
    ticks: TickRange,
}

impl<Q: QueryData, F: QueryFilter> fmt::Debug for QueryParIter<'_, '_, Q, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryParIter")
            .field("query", &short_type_name::<Q>())
            .finish()
    }
}

/// Below this many rows in all, parallel iteration runs on the calling
/// thread: splitting costs more than it saves.
const MIN_PARALLEL_ROWS: usize = 64;

/// How many batches `par_iter` cuts the rows into, per thread.
const BATCHES_PER_THREAD: usize = 64;

impl<'a, 's, Q: QueryData, F: QueryFilter> QueryParIter<'a, 's, Q, F> {
    /// # Safety
    /// - `state` is prepared for `world`;
    /// - the caller has, for `'a`, the access `Q` and `F` declare (shared
    ///   access for a read-only query).
    pub(crate) unsafe fn new(
        world: &'a World,
        state: &'s QueryState<Q, F>,
        ticks: TickRange,
    ) -> Self {
        QueryParIter {
            world,
            state,
            ticks,
        }
    }
}

impl<Q: QueryData, F: QueryFilter> QueryParIter<'_, '_, Q, F> {
    /// Calls `f` on every item, on the thread pool. Rows are split into
    /// batches (64 per thread, shared out by rayon's work stealing); each
    /// batch is walked like a normal iteration.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Heat(f32);
    /// let mut world = World::new();
    /// let e = world.spawn(Heat(1.0));
    /// world.run_system_once(|mut q: Query<&mut Heat>| q.par_iter_mut().for_each(|h| h.0 = 0.0));
    /// assert_eq!(world.get::<Heat>(e).unwrap().0, 0.0);
    /// ```
    pub fn for_each(self, f: impl Fn(Q::Item<'_>) + Send + Sync) {
        let (world, state, ticks) = (self.world, self.state, self.ticks);
        let driver = state.driver(world);
        let total = state.run_len(world, driver);
        // No thread pool where threads cannot start (wasm32): serial.
        let threads = if crate::platform::THREADS {
            rayon::current_num_threads()
        } else {
            1
        };
        if threads <= 1 || total < MIN_PARALLEL_ROWS {
            // SAFETY: the caller's access (a `&mut Query` or a read-only one)
            // covers this iteration.
            unsafe { state.iter_prepared(world, ticks) }.for_each(f);
            return;
        }
        // Many small batches: rayon's work stealing evens out uneven items,
        // and the last batch to finish leaves the other threads idle for
        // less time. The batches are split by rayon's `join` (no allocation
        // per batch), each batch a leaf.
        let batch = total.div_ceil(threads * BATCHES_PER_THREAD).max(1);
        let f = &f;
        if let Some(driver) = driver {
            let len = driver.entities.len();
            (0..len.div_ceil(batch))
                .into_par_iter()
                .with_max_len(1)
                .for_each(|b| {
                    let run = b * batch..((b + 1) * batch).min(len);
                    // SAFETY: runs of a sparse set's list hold distinct
                    // entities, so no two threads make items for one
                    // entity; the caller's access covers the query.
                    unsafe { QueryIter::new_driven(world, state, ticks, driver, run) }.for_each(f);
                });
            return;
        }
        state.matched().par_iter().for_each(|matched| {
            let len = world.archetype(matched.id).len();
            (0..len.div_ceil(batch))
                .into_par_iter()
                .with_max_len(1)
                .for_each(|b| {
                    let rows = b * batch..((b + 1) * batch).min(len);
                    // SAFETY: batches cover disjoint rows, so no two threads
                    // make items for one entity; the caller's access covers
                    // the query.
                    unsafe { state.iter_rows_prepared(world, ticks, matched, rows) }.for_each(f);
                });
        });
    }
}

/// Sets of `K` distinct items of a query; see [`Query::iter_combinations`]
/// and [`Query::iter_combinations_mut`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Id(u32);
/// let mut world = World::new();
/// world.spawn_batch((0..3).map(Id));
/// let n = world.run_system_once(|q: Query<&Id>| q.iter_combinations::<3>().count());
/// assert_eq!(n, 1);
/// ```
pub struct QueryCombinations<'a, 's, Q: QueryData, F: QueryFilter, const K: usize> {
    world: &'a World,
    state: &'s QueryState<Q, F>,
    ticks: TickRange,
    entities: Vec<Entity>,
    /// Positions into `entities` of the next set; `None` when done.
    next: Option<[usize; K]>,
}

impl<Q: QueryData, F: QueryFilter, const K: usize> fmt::Debug
    for QueryCombinations<'_, '_, Q, F, K>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryCombinations")
            .field("k", &K)
            .field("entities", &self.entities.len())
            .finish()
    }
}

impl<'a, 's, Q: QueryData, F: QueryFilter, const K: usize> QueryCombinations<'a, 's, Q, F, K> {
    fn new(
        world: &'a World,
        state: &'s QueryState<Q, F>,
        ticks: TickRange,
        entities: Vec<Entity>,
    ) -> Self {
        let next = (K > 0 && K <= entities.len()).then(|| std::array::from_fn(|i| i));
        QueryCombinations {
            world,
            state,
            ticks,
            entities,
            next,
        }
    }

    /// Moves `next` to the following set of positions, in lexicographic
    /// order; `None` after the last.
    fn advance(&mut self) -> Option<[usize; K]> {
        let current = self.next?;
        let n = self.entities.len();
        let mut following = current;
        self.next = (0..K).rev().find(|&i| following[i] < n - K + i).map(|i| {
            following[i] += 1;
            for j in i + 1..K {
                following[j] = following[j - 1] + 1;
            }
            following
        });
        Some(current)
    }

    /// The next set of `K` items, borrowed until the next call.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Id(u32);
    /// let mut world = World::new();
    /// world.spawn_batch((0..3).map(Id));
    /// let sums = world.run_system_once(|mut q: Query<&mut Id>| {
    ///     let mut sums = Vec::new();
    ///     let mut pairs = q.iter_combinations_mut::<2>();
    ///     while let Some([a, b]) = pairs.fetch_next() {
    ///         sums.push(a.0 + b.0);
    ///     }
    ///     sums
    /// });
    /// assert_eq!(sums, [1, 2, 3]);
    /// ```
    pub fn fetch_next(&mut self) -> Option<[Q::Item<'_>; K]> {
        let positions = self.advance()?;
        // SAFETY: the positions are distinct, so the K items are of distinct
        // entities (distinct rows, distinct sparse slots); they borrow
        // `self` mutably, so no earlier set is still alive; the query's
        // access covers them.
        Some(positions.map(|p| unsafe { self.fetch(p) }))
    }

    /// # Safety
    /// - no other live item is for the entity at `position`.
    unsafe fn fetch<'i>(&self, position: usize) -> Q::Item<'i>
    where
        'a: 'i,
    {
        let entity = self.entities[position];
        // SAFETY: forwarded; the entity matched when listed and the world
        // cannot change structurally while it is borrowed.
        unsafe { self.state.get_prepared(self.world, entity, self.ticks) }
            .expect("listed entities match")
    }
}

impl<'a, Q: ReadOnlyQueryData, F: QueryFilter, const K: usize> Iterator
    for QueryCombinations<'a, '_, Q, F, K>
{
    type Item = [Q::Item<'a>; K];

    fn next(&mut self) -> Option<Self::Item> {
        let positions = self.advance()?;
        // SAFETY: read-only items may alias freely.
        Some(positions.map(|p| unsafe { self.fetch(p) }))
    }
}

// SAFETY: the access is the query state's, recorded in `init_state`; the
// state is prepared (checked against the world, archetypes updated) before
// each run.
unsafe impl<Q: QueryData + 'static, F: QueryFilter + 'static> SystemParam for Query<'_, '_, Q, F> {
    type State = QueryState<Q, F>;
    type Item<'w, 's> = Query<'w, 's, Q, F>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> QueryState<Q, F> {
        // An aliasing query becomes a conflict of the system (reported by
        // `Schedule::build`, or a panic from `run_system_once`), so it never
        // runs.
        let (state, alias) = QueryState::new_reporting_alias(world);
        if let Some(message) = alias {
            meta.access.record_conflict(message);
        }
        let name = format!(
            "Query<{}, {}>",
            short_type_name::<Q>(),
            short_type_name::<F>()
        );
        meta.access
            .add_query(name.replace(", ()>", ">"), state.access().clone(), world);
        state
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut QueryState<Q, F>,
        _meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Query<'w, 's, Q, F> {
        state.prepare(world);
        Query {
            world,
            state,
            ticks,
        }
    }
}

// ----- Single, Populated ----------------------------------------------------------

// Signatures below mirror the trait's, lifetimes included, for readability.

/// The one entity matching `D` and `F`, as a system parameter: the system
/// runs only when exactly one entity matches, and is skipped with a warning
/// (naming the query) when none or several do. `Option<Single<..>>` never
/// skips: it is `None` unless exactly one matches.
///
/// Telling one match from several fetches no item: a `Single<&mut T>`
/// skipped because several entities match marks none of them changed.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Player;
/// #[derive(Component)] struct Health(u32);
/// fn heal(mut player: Single<&mut Health, With<Player>>) {
///     player.0 += 1;
/// }
/// let mut world = World::new();
/// let p = world.spawn((Player, Health(1)));
/// let mut schedule = Schedule::new();
/// schedule.add_system("heal", heal);
/// schedule.run(&mut world);
/// assert_eq!(world.get::<Health>(p).unwrap().0, 2);
/// world.spawn((Player, Health(5)));
/// schedule.run(&mut world); // two players: skipped, with a warning
/// assert_eq!(world.get::<Health>(p).unwrap().0, 2);
/// ```
pub struct Single<'w, D: QueryData, F: QueryFilter = ()> {
    item: D::Item<'w>,
    marker: std::marker::PhantomData<F>,
}

impl<'w, D: QueryData, F: QueryFilter> Single<'w, D, F> {
    /// The item itself.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Score(u32);
    /// let mut world = World::new();
    /// world.spawn(Score(3));
    /// let n = world.run_system_once(|s: Single<&Score>| s.into_inner().0);
    /// assert_eq!(n, 3);
    /// ```
    pub fn into_inner(self) -> D::Item<'w> {
        self.item
    }
}

impl<'w, D: QueryData, F: QueryFilter> std::ops::Deref for Single<'w, D, F> {
    type Target = D::Item<'w>;
    fn deref(&self) -> &Self::Target {
        &self.item
    }
}

impl<D: QueryData, F: QueryFilter> std::ops::DerefMut for Single<'_, D, F> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.item
    }
}

impl<D: QueryData, F: QueryFilter> fmt::Debug for Single<'_, D, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Single")
            .field("query", &short_type_name::<D>())
            .field("filter", &short_type_name::<F>())
            .finish()
    }
}

/// The single item, or why there is not exactly one.
///
/// # Safety
/// As `SystemParam::get_param` for a query of `state`.
unsafe fn single_item<'w, D: QueryData + 'static, F: QueryFilter + 'static>(
    state: &mut QueryState<D, F>,
    world: &'w World,
    ticks: TickRange,
) -> Result<D::Item<'w>, QuerySingleError> {
    state.prepare(world);
    // SAFETY: prepared just above; the scheduler gives this system the
    // access `D` records.
    unsafe { single_quietly(state, world, ticks) }
}

/// The single item of a prepared state, or why there is not exactly one.
/// The matches are counted without fetching: when none or several match,
/// no item is made, so a `&mut T` query marks nothing changed.
///
/// # Safety
/// - `state.prepare(world)` ran since the world last changed structurally;
/// - if `D` writes, the caller has exclusive access to the components it
///   writes for `'w`, and no other item of this state is alive.
unsafe fn single_quietly<'w, D: QueryData, F: QueryFilter>(
    state: &QueryState<D, F>,
    world: &'w World,
    ticks: TickRange,
) -> Result<D::Item<'w>, QuerySingleError> {
    // SAFETY: forwarded contract (prepared).
    let found = unsafe { state.matching_entities(world, ticks, 2) };
    match found[..] {
        [] => Err(QuerySingleError::NoEntities(short_type_name::<D>())),
        [entity] => {
            // SAFETY: forwarded contract; the one item made.
            unsafe { state.get_prepared(world, entity, ticks) }
                .map_err(|_| QuerySingleError::NoEntities(short_type_name::<D>()))
        }
        _ => Err(QuerySingleError::MultipleEntities(short_type_name::<D>())),
    }
}

impl<Q: QueryData, F: QueryFilter> QueryState<Q, F> {
    /// The only matching item, read-only, as [`Query::single`] in a
    /// system: Bevy's `QueryState::single`. Panics, naming the query,
    /// unless exactly one entity matches ([`QueryState::get_single`]
    /// returns the error instead).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player(u32);
    /// let mut world = World::new();
    /// world.spawn(Player(7));
    /// let mut q = world.query::<&Player>();
    /// assert_eq!(q.single(&world).0, 7);
    /// ```
    #[track_caller]
    pub fn single<'w>(&mut self, world: &'w World) -> Q::Item<'w>
    where
        Q: ReadOnlyQueryData,
    {
        self.get_single(world).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The only matching item, read-only, or an error if none or several
    /// match.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player(u32);
    /// let mut world = World::new();
    /// let mut q = world.query::<&Player>();
    /// assert!(matches!(q.get_single(&world), Err(QuerySingleError::NoEntities(_))));
    /// world.spawn_batch([Player(1), Player(2)]);
    /// assert!(matches!(q.get_single(&world), Err(QuerySingleError::MultipleEntities(_))));
    /// ```
    pub fn get_single<'w>(&mut self, world: &'w World) -> Result<Q::Item<'w>, QuerySingleError>
    where
        Q: ReadOnlyQueryData,
    {
        self.prepare(world);
        let ticks = self.get_ticks(world);
        // SAFETY: prepared just above; a read-only query under a shared
        // borrow of the world.
        unsafe { single_quietly(self, world, ticks) }
    }

    /// The only matching item, mutably. Panics, naming the query, unless
    /// exactly one entity matches.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Player(1));
    /// let mut q = world.query::<&mut Player>();
    /// q.single_mut(&mut world).0 = 5;
    /// assert_eq!(world.get::<Player>(e).unwrap().0, 5);
    /// ```
    #[track_caller]
    pub fn single_mut<'w>(&mut self, world: &'w mut World) -> Q::Item<'w> {
        self.get_single_mut(world).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The only matching item mutably, or an error if none or several
    /// match. Marks nothing changed when it fails.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Player(u32);
    /// let mut world = World::new();
    /// world.spawn_batch([Player(1), Player(2)]);
    /// let mut q = world.query::<&mut Player>();
    /// assert!(q.get_single_mut(&mut world).is_err());
    /// ```
    pub fn get_single_mut<'w>(
        &mut self,
        world: &'w mut World,
    ) -> Result<Q::Item<'w>, QuerySingleError> {
        self.prepare(world);
        let ticks = self.get_ticks(world);
        // SAFETY: prepared just above; the exclusive borrow of the world
        // covers what `Q` writes, and one item is made.
        unsafe { single_quietly(self, world, ticks) }
    }
}

// SAFETY: the access of `Query<D, F>` (recorded by its `init_state`); hands
// out one item of that query.
#[allow(clippy::needless_lifetimes)]
unsafe impl<'a, D: QueryData + 'static, F: QueryFilter + 'static> SystemParam for Single<'a, D, F> {
    type State = QueryState<D, F>;
    type Item<'w, 's> = Single<'w, D, F>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> QueryState<D, F> {
        Query::<D, F>::init_state(world, meta)
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut QueryState<D, F>,
        meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Single<'w, D, F> {
        // SAFETY: forwarded contract.
        match unsafe { Self::try_get_param(state, meta, world, ticks) } {
            Ok(single) => single,
            Err(skip) => panic!("{skip}"),
        }
    }

    unsafe fn try_get_param<'w, 's>(
        state: &'s mut QueryState<D, F>,
        _meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Result<Single<'w, D, F>, SystemSkip> {
        // SAFETY: forwarded contract.
        match unsafe { single_item(state, world, ticks) } {
            Ok(item) => Ok(Single {
                item,
                marker: std::marker::PhantomData,
            }),
            Err(error) => Err(SystemSkip::warn(error.to_string())),
        }
    }
}

// SAFETY: as `Single<D, F>`.
#[allow(clippy::needless_lifetimes)]
unsafe impl<'a, D: QueryData + 'static, F: QueryFilter + 'static> SystemParam
    for Option<Single<'a, D, F>>
{
    type State = QueryState<D, F>;
    type Item<'w, 's> = Option<Single<'w, D, F>>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> QueryState<D, F> {
        Query::<D, F>::init_state(world, meta)
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut QueryState<D, F>,
        _meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Option<Single<'w, D, F>> {
        // SAFETY: forwarded contract.
        let item = unsafe { single_item(state, world, ticks) }.ok()?;
        Some(Single {
            item,
            marker: std::marker::PhantomData,
        })
    }
}

/// A [`Query`] that has at least one match: the system is skipped (quietly)
/// while none does. Derefs to the query.
///
/// Telling empty from not fetches no item: a `Populated<&mut T>` marks an
/// entity changed only if the system reaches it mutably.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Enemy;
/// #[derive(Default)] struct Waves(u32);
/// fn fight(enemies: Populated<Entity, With<Enemy>>, mut waves: ResMut<Waves>) {
///     waves.0 += enemies.iter().count() as u32;
/// }
/// let mut world = World::new();
/// world.insert_resource(Waves::default());
/// let mut schedule = Schedule::new();
/// schedule.add_system("fight", fight);
/// schedule.run(&mut world); // no enemy: skipped
/// world.spawn(Enemy);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Waves>().0, 1);
/// ```
pub struct Populated<'w, 's, D: QueryData, F: QueryFilter = ()>(Query<'w, 's, D, F>);

impl<'w, 's, D: QueryData, F: QueryFilter> Populated<'w, 's, D, F> {
    /// The query itself.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Enemy;
    /// let mut world = World::new();
    /// world.spawn(Enemy);
    /// let n = world.run_system_once(|p: Populated<&Enemy>| p.into_inner().iter().count());
    /// assert_eq!(n, 1);
    /// ```
    pub fn into_inner(self) -> Query<'w, 's, D, F> {
        self.0
    }
}

impl<'w, 's, D: QueryData, F: QueryFilter> std::ops::Deref for Populated<'w, 's, D, F> {
    type Target = Query<'w, 's, D, F>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<D: QueryData, F: QueryFilter> std::ops::DerefMut for Populated<'_, '_, D, F> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// `for item in &populated`: [`Query::iter`] of the query inside, for
/// read-only queries (`&mut populated` for [`Query::iter_mut`]).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Enemy(u32);
/// fn strongest(enemies: Populated<&Enemy>) -> u32 {
///     let mut best = 0;
///     for e in &enemies {
///         best = best.max(e.0);
///     }
///     best
/// }
/// let mut world = World::new();
/// world.spawn_batch([Enemy(3), Enemy(8), Enemy(5)]);
/// assert_eq!(world.run_system_once(strongest), 8);
/// ```
impl<'a, 's, D: ReadOnlyQueryData, F: QueryFilter> IntoIterator for &'a Populated<'_, 's, D, F> {
    type Item = D::Item<'a>;
    type IntoIter = QueryIter<'a, 's, D, F>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// `for item in &mut populated`: [`Query::iter_mut`] of the query inside.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Enemy(u32);
/// fn weaken(mut enemies: Populated<&mut Enemy>) {
///     for e in &mut enemies {
///         e.0 /= 2;
///     }
/// }
/// let mut world = World::new();
/// let e = world.spawn(Enemy(8));
/// world.run_system_once(weaken);
/// assert_eq!(world.get::<Enemy>(e).unwrap().0, 4);
/// ```
impl<'a, 's, D: QueryData, F: QueryFilter> IntoIterator for &'a mut Populated<'_, 's, D, F> {
    type Item = D::Item<'a>;
    type IntoIter = QueryIter<'a, 's, D, F>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl<D: QueryData, F: QueryFilter> fmt::Debug for Populated<'_, '_, D, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Populated").field(&self.0).finish()
    }
}

// SAFETY: exactly `Query<D, F>`'s access and borrows.
#[allow(clippy::needless_lifetimes)]
unsafe impl<'a, 'b, D: QueryData + 'static, F: QueryFilter + 'static> SystemParam
    for Populated<'a, 'b, D, F>
{
    type State = QueryState<D, F>;
    type Item<'w, 's> = Populated<'w, 's, D, F>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> QueryState<D, F> {
        Query::<D, F>::init_state(world, meta)
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut QueryState<D, F>,
        meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Populated<'w, 's, D, F> {
        // SAFETY: forwarded contract.
        Populated(unsafe { Query::get_param(state, meta, world, ticks) })
    }

    unsafe fn try_get_param<'w, 's>(
        state: &'s mut QueryState<D, F>,
        meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Result<Populated<'w, 's, D, F>, SystemSkip> {
        state.prepare(world);
        // SAFETY: prepared just above. The probe fetches no item, so a
        // `&mut T` query marks nothing changed by being checked.
        let empty = unsafe { state.matching_entities(world, ticks, 1) }.is_empty();
        if empty {
            return Err(SystemSkip::quiet(format!(
                "no entity matches query `{}`",
                short_type_name::<D>()
            )));
        }
        // SAFETY: forwarded contract.
        Ok(Populated(unsafe {
            Query::get_param(state, meta, world, ticks)
        }))
    }
}
