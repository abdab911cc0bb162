//! Fixed-size chunks of a query for parallel work whose result must not
//! depend on the number of threads.
//!
//! [`QueryParIter`](super::QueryParIter) sizes its batches by the thread
//! count, so which items share a batch changes from machine to machine.
//! Chunks do not: chunk `k` always holds rows `k * len .. (k + 1) * len` of
//! the query's iteration order, whatever the pool. Per-chunk results
//! combined in chunk order (a sum of floats, the order of output written
//! per chunk, a counting sort) come out bit for bit the same on one thread
//! or sixteen (or none: where threads cannot start, as on `wasm32`, the
//! chunks run one after another on the calling thread).

use std::fmt;

use super::state::{Driver, MatchedArchetype};
use super::{QueryData, QueryFilter, QueryIter, QueryState, TickRange};
use crate::component::short_type_name;
use crate::world::World;

/// Below this many rows in all, chunks run one after another on the calling
/// thread: spawning tasks would cost more than it saves.
const MIN_PARALLEL_ROWS: usize = 64;

/// A query cut into chunks of a fixed number of rows, to run in parallel;
/// from [`Query::par_chunks`](crate::Query::par_chunks) and
/// [`Query::par_chunks_mut`](crate::Query::par_chunks_mut).
///
/// Chunk `k` covers positions `k * chunk_len .. (k + 1) * chunk_len` of the
/// sequence [`Query::iter`](crate::Query::iter) walks: the matched tables'
/// rows, across table boundaries, or the entities of the sparse set the
/// query walks instead (see the guide's rule on sparse components,
/// `docs/guide/src/performance.md`). The cut depends on the world and
/// `chunk_len` only, never on the thread count. A position whose entity fails a per-entity test
/// ([`Added`](crate::Added), [`Changed`](crate::Changed), a sparse
/// component, or a table the walked set's entity does not match) yields no
/// item, so a chunk may hold fewer items than positions.
///
/// # Example
/// A sum of floats that is the same on any number of threads: one partial
/// sum per chunk, added up in chunk order.
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Mass(f32);
/// let mut world = World::new();
/// world.spawn_batch((0..10_000).map(|i| Mass(1.0 / (1.0 + i as f32))));
/// let total = |world: &mut World| {
///     world.run_system_once(|q: Query<&Mass>| {
///         let partial = q.par_chunks(1024).map(|chunk| chunk.map(|m| m.0).sum::<f32>());
///         partial.iter().sum::<f32>()
///     })
/// };
/// let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let four_threads = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
/// let a = one_thread.install(|| total(&mut world));
/// let b = four_threads.install(|| total(&mut world));
/// assert_eq!(a.to_bits(), b.to_bits());
/// ```
pub struct QueryParChunks<'a, 's, Q: QueryData, F: QueryFilter> {
    world: &'a World,
    state: &'s QueryState<Q, F>,
    ticks: TickRange,
    chunk_len: usize,
    /// The sparse set's entities the run walks instead of tables, if any
    /// (see `QueryState::driver`).
    driver: Option<Driver<'a>>,
}

impl<Q: QueryData, F: QueryFilter> fmt::Debug for QueryParChunks<'_, '_, Q, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryParChunks")
            .field("query", &short_type_name::<Q>())
            .field("chunk_len", &self.chunk_len)
            .field("chunks", &self.len())
            .finish()
    }
}

impl<'a, 's, Q: QueryData, F: QueryFilter> QueryParChunks<'a, 's, Q, F> {
    /// # Safety
    /// The caller's access covers iterating `state` on `world` for `'a`:
    /// `Q` is read-only, or the caller holds the query mutably; `state` is
    /// prepared for `world`.
    pub(crate) unsafe fn new(
        world: &'a World,
        state: &'s QueryState<Q, F>,
        ticks: TickRange,
        chunk_len: usize,
    ) -> Self {
        QueryParChunks {
            world,
            state,
            ticks,
            chunk_len: chunk_len.max(1),
            driver: state.driver(world),
        }
    }

    /// Rows per chunk (the last chunk may have fewer). A `chunk_len` of 0
    /// was taken as 1.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let len = world.run_system_once(|q: Query<&A>| q.par_chunks(0).chunk_len());
    /// assert_eq!(len, 1);
    /// ```
    pub fn chunk_len(&self) -> usize {
        self.chunk_len
    }

    /// How many chunks there are: the matched rows divided by
    /// [`chunk_len`](Self::chunk_len), rounded up. Size per-chunk buffers
    /// with it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// world.spawn_batch((0..10).map(|_| A));
    /// let n = world.run_system_once(|q: Query<&A>| q.par_chunks(4).len());
    /// assert_eq!(n, 3); // 4 + 4 + 2 rows
    /// ```
    pub fn len(&self) -> usize {
        self.rows().div_ceil(self.chunk_len)
    }

    /// True if there is no chunk (no matched row).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// assert!(world.run_system_once(|q: Query<&A>| q.par_chunks(8).is_empty()));
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rows() == 0
    }

    fn rows(&self) -> usize {
        self.state.run_len(self.world, self.driver)
    }

    /// Calls `f` once per chunk, on the thread pool; each item is in
    /// exactly one chunk. [`QueryChunk::index`] tells `f` which chunk it
    /// has.
    ///
    /// # Example
    /// Each chunk writes its own slot: no locks, no shared counter.
    /// ```
    /// use mosaic::prelude::*;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// #[derive(Component)] struct Hp(u32);
    /// let mut world = World::new();
    /// world.spawn_batch((0..100).map(Hp));
    /// world.run_system_once(|mut q: Query<&mut Hp>| {
    ///     let chunks = q.par_chunks_mut(32);
    ///     let counts: Vec<AtomicU32> = (0..chunks.len()).map(|_| AtomicU32::new(0)).collect();
    ///     chunks.for_each(|chunk| {
    ///         let k = chunk.index();
    ///         for hp in chunk {
    ///             hp.0 += 1;
    ///             counts[k].fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     });
    ///     let counts: Vec<u32> = counts.into_iter().map(AtomicU32::into_inner).collect();
    ///     assert_eq!(counts, [32, 32, 32, 4]);
    /// });
    /// ```
    pub fn for_each(self, f: impl Fn(QueryChunk<'_, 's, Q, F>) + Send + Sync) {
        let this = &self;
        if !self.worth_spreading() {
            self.cut(|index, matched, offset| f(this.chunk(index, matched, offset)));
            return;
        }
        let f = &f;
        rayon::scope(|scope| {
            self.cut(|index, matched, offset| {
                scope.spawn(move |_| f(this.chunk(index, matched, offset)));
            });
        });
    }

    /// Calls `f` once per chunk, on the thread pool, and returns what each
    /// call returned, in chunk order (`result[k]` is chunk `k`'s).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Id(u32);
    /// let mut world = World::new();
    /// world.spawn_batch((0..10).map(Id));
    /// let firsts = world.run_system_once(|q: Query<&Id>| {
    ///     q.par_chunks(4).map(|mut chunk| chunk.next().map(|id| id.0))
    /// });
    /// assert_eq!(firsts, [Some(0), Some(4), Some(8)]);
    /// ```
    pub fn map<R: Send>(self, f: impl Fn(QueryChunk<'_, 's, Q, F>) -> R + Send + Sync) -> Vec<R> {
        let mut slots: Vec<Option<R>> = Vec::new();
        slots.resize_with(self.len(), || None);
        let this = &self;
        if !self.worth_spreading() {
            let mut free = slots.iter_mut();
            self.cut(|index, matched, offset| {
                if let Some(slot) = free.next() {
                    *slot = Some(f(this.chunk(index, matched, offset)));
                }
            });
        } else {
            let f = &f;
            let mut free = slots.iter_mut();
            rayon::scope(|scope| {
                self.cut(|index, matched, offset| {
                    if let Some(slot) = free.next() {
                        scope.spawn(move |_| *slot = Some(f(this.chunk(index, matched, offset))));
                    }
                });
            });
        }
        slots
            .into_iter()
            .map(|slot| slot.expect("`cut` visits every chunk counted by `len`"))
            .collect()
    }

    fn worth_spreading(&self) -> bool {
        crate::platform::THREADS
            && self.rows() >= MIN_PARALLEL_ROWS
            && rayon::current_num_threads() > 1
    }

    /// Visits each chunk's start in order: its index, the position in
    /// `matched` of the table it starts in, and its first row there.
    fn cut(&self, mut visit: impl FnMut(usize, usize, usize)) {
        if let Some(driver) = self.driver {
            // Positions in the set's list; the table position is unused.
            for (index, offset) in (0..driver.entities.len())
                .step_by(self.chunk_len)
                .enumerate()
            {
                visit(index, 0, offset);
            }
            return;
        }
        let mut index = 0;
        // Where the next chunk starts in the next table.
        let mut next = 0;
        for (position, matched) in self.state.matched().iter().enumerate() {
            let len = self.world.archetype(matched.id).len();
            let mut offset = next;
            while offset < len {
                visit(index, position, offset);
                index += 1;
                offset += self.chunk_len;
            }
            next = offset - len;
        }
    }

    /// Chunk `index`, which starts at row `offset` of `matched()[position]`.
    fn chunk(&self, index: usize, position: usize, offset: usize) -> QueryChunk<'a, 's, Q, F> {
        if let Some(driver) = self.driver {
            let run = offset..driver.entities.len().min(offset + self.chunk_len);
            return QueryChunk {
                index,
                world: self.world,
                state: self.state,
                ticks: self.ticks,
                rest: &[],
                left: 0,
                // SAFETY: the constructor's caller holds the access for
                // `'a`; runs of a sparse set's list hold distinct entities,
                // and chunks are disjoint runs.
                current: Some(unsafe {
                    QueryIter::new_driven(self.world, self.state, self.ticks, driver, run)
                }),
            };
        }
        let mut chunk = QueryChunk {
            index,
            world: self.world,
            state: self.state,
            ticks: self.ticks,
            rest: &self.state.matched()[position..],
            left: self.chunk_len,
            current: None,
        };
        chunk.advance(offset);
        chunk
    }
}

/// One chunk of a [`QueryParChunks`]: an iterator over its items, in
/// iteration order, that knows its [`index`](Self::index).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Id(u32);
/// let mut world = World::new();
/// world.spawn_batch((0..6).map(Id));
/// let chunks = world.run_system_once(|q: Query<&Id>| {
///     q.par_chunks(4).map(|chunk| (chunk.index(), chunk.map(|id| id.0).collect::<Vec<_>>()))
/// });
/// assert_eq!(chunks, [(0, vec![0, 1, 2, 3]), (1, vec![4, 5])]);
/// ```
pub struct QueryChunk<'w, 's, Q: QueryData, F: QueryFilter> {
    index: usize,
    world: &'w World,
    state: &'s QueryState<Q, F>,
    ticks: TickRange,
    /// The matched tables from the next one to open on.
    rest: &'s [MatchedArchetype<Q, F>],
    /// Rows of the chunk not yet handed to `current`.
    left: usize,
    current: Option<QueryIter<'w, 's, Q, F>>,
}

impl<Q: QueryData, F: QueryFilter> fmt::Debug for QueryChunk<'_, '_, Q, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryChunk")
            .field("query", &short_type_name::<Q>())
            .field("index", &self.index)
            .finish()
    }
}

impl<'w, 's, Q: QueryData, F: QueryFilter> QueryChunk<'w, 's, Q, F> {
    /// Which chunk this is: 0 for the first rows of the query.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// world.spawn_batch((0..5).map(|_| A));
    /// let ids = world.run_system_once(|q: Query<&A>| q.par_chunks(2).map(|c| c.index()));
    /// assert_eq!(ids, [0, 1, 2]);
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// Opens the next non-empty table, starting at row `offset`, on at most
    /// `left` rows. False when the chunk has no rows left.
    fn advance(&mut self, mut offset: usize) -> bool {
        while self.left > 0 {
            let Some((matched, rest)) = self.rest.split_first() else {
                break;
            };
            self.rest = rest;
            let len = self.world.archetype(matched.id).len();
            if offset >= len {
                offset = 0;
                continue;
            }
            let end = len.min(offset + self.left);
            self.left -= end - offset;
            // SAFETY: the chunk was made by `QueryParChunks`, whose
            // constructor's caller holds the access for `'w`; `matched` is
            // an entry of the state's matched list; chunks cover disjoint
            // rows, so no two chunks make items for one entity.
            self.current = Some(unsafe {
                self.state
                    .iter_rows_prepared(self.world, self.ticks, matched, offset..end)
            });
            return true;
        }
        self.current = None;
        false
    }
}

impl<'w, Q: QueryData, F: QueryFilter> Iterator for QueryChunk<'w, '_, Q, F> {
    type Item = Q::Item<'w>;

    #[inline]
    fn next(&mut self) -> Option<Q::Item<'w>> {
        loop {
            if let Some(item) = self.current.as_mut()?.next() {
                return Some(item);
            }
            if !self.advance(0) {
                return None;
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let here = self
            .current
            .as_ref()
            .map_or(0, |c| c.size_hint().1.unwrap_or(0));
        (0, Some(here.saturating_add(self.left)))
    }

    #[inline]
    fn fold<B, G>(mut self, init: B, mut g: G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        let mut acc = init;
        while let Some(current) = self.current.take() {
            acc = current.fold(acc, &mut g);
            self.advance(0);
        }
        acc
    }
}

impl<Q: QueryData, F: QueryFilter> std::iter::FusedIterator for QueryChunk<'_, '_, Q, F> {}
