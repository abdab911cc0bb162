//! Walking a query's matched tables.

use std::fmt;

use super::state::{Driver, MatchedArchetype};
use super::{QueryData, QueryFilter, QueryState, TickRange};
use crate::archetype::{Archetype, ArchetypeId};
use crate::entity::Entity;
use crate::world::World;

/// Iterator over a query's items, from [`QueryState::iter`] and
/// [`QueryState::iter_mut`](crate::QueryState::iter_mut).
///
/// Visits matched archetypes in creation order and their rows in order, or,
/// when the query walks a sparse set (see [`Query::iter`](crate::Query::iter)),
/// that set's entities in the set's order. `for_each` (and every consuming
/// adaptor built on `fold`) runs a tight loop per table, or one over the
/// walked set.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
/// let mut world = World::new();
/// world.spawn_batch((0..4).map(Health));
/// let mut q = world.query::<&Health>();
/// let mut iter = q.iter(&world);
/// assert_eq!(iter.next().map(|h| h.0), Some(0));
/// assert_eq!(iter.count(), 3);
/// ```
///
/// [`QueryState::iter`]: crate::QueryState::iter
pub struct QueryIter<'w, 's, Q: QueryData, F: QueryFilter> {
    /// Every archetype of the world, indexed by id.
    archetypes: &'w [Archetype],
    /// The matched archetypes still to visit.
    matched: std::slice::Iter<'s, MatchedArchetype<Q, F>>,
    data_state: &'s Q::State,
    filter_state: &'s F::State,
    data: Q::Fetch<'w>,
    filter: F::Fetch<'w>,
    entities: &'w [Entity],
    row: usize,
    /// Set when the run walks a sparse set's entities instead of tables
    /// (see `QueryState::driver`).
    driven: Option<Driven<'w, 's, Q, F>>,
}

/// A run over a sparse set's entities: each is looked up where it lives,
/// or, for a dense query, read straight from the set by position.
struct Driven<'w, 's, Q: QueryData, F: QueryFilter> {
    world: &'w World,
    state: &'s QueryState<Q, F>,
    /// The driving set's whole entity list; position `i` is dense index `i`.
    entities: &'w [Entity],
    /// The next position to visit, and the end of the run.
    next: usize,
    end: usize,
    /// True for a dense query: no archetype to look up, and the fetches
    /// were told the driver (`QueryData::set_driver`).
    dense: bool,
    /// The archetype the fetches were last set to, and whether the state
    /// matched it.
    current: Option<(ArchetypeId, bool)>,
}

impl<Q: QueryData, F: QueryFilter> fmt::Debug for QueryIter<'_, '_, Q, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryIter")
            .field("archetypes_left", &self.matched.len())
            .field("rows_left", &(self.entities.len() - self.row))
            .finish()
    }
}

impl<'w, 's, Q: QueryData, F: QueryFilter> QueryIter<'w, 's, Q, F> {
    /// # Safety
    /// - `matched` lists archetypes of `world` that match the states, which
    ///   were built on `world`, each with the archetype states
    ///   `match_archetype` returned for it;
    /// - if `Q` writes, the caller has exclusive access to what it writes for
    ///   `'w`, and the query does not alias.
    pub(crate) unsafe fn new(
        world: &'w World,
        matched: &'s [MatchedArchetype<Q, F>],
        data_state: &'s Q::State,
        filter_state: &'s F::State,
        ticks: TickRange,
    ) -> Self {
        QueryIter {
            archetypes: world.archetype_slice(),
            matched: matched.iter(),
            data_state,
            filter_state,
            // SAFETY: forwarded contract.
            data: unsafe { Q::init_fetch(world, data_state, ticks) },
            // SAFETY: forwarded contract.
            filter: unsafe { F::init_fetch(world, filter_state, ticks) },
            entities: &[],
            row: 0,
            driven: None,
        }
    }

    /// An iterator over positions `run` of `driver`'s entity list (all, or
    /// a run of, the entities of a sparse set every match has), looking
    /// each up where it lives, or, for a [dense](QueryState::is_dense)
    /// state, reading the set's values by position.
    ///
    /// # Safety
    /// - as [`QueryIter::new`], for `state`'s matched archetypes; `state` is
    ///   prepared for `world`;
    /// - `driver` is the entity list of component `driver.id`'s sparse set
    ///   in `world` (as [`QueryState::driver`] returns it), and
    ///   `run.end <= driver.entities.len()`. A set's list holds each entity
    ///   once, so no two items share a row.
    pub(crate) unsafe fn new_driven(
        world: &'w World,
        state: &'s QueryState<Q, F>,
        ticks: TickRange,
        driver: Driver<'w>,
        run: std::ops::Range<usize>,
    ) -> Self {
        assert!(run.start <= run.end && run.end <= driver.entities.len());
        let (data_state, filter_state) = state.states();
        // SAFETY: forwarded contract; no matched archetype is listed, so
        // only `next_driven` produces items.
        let mut iter = unsafe { QueryIter::new(world, &[], data_state, filter_state, ticks) };
        let dense = state.is_dense();
        if dense {
            // SAFETY: a dense state's data is `DENSE`; the fetch came from
            // `init_fetch` with this state; every fetch of a dense run
            // passes the entity's position in `driver`'s list (below).
            unsafe { Q::set_driver(&mut iter.data, data_state, driver.id) };
        }
        iter.driven = Some(Driven {
            world,
            state,
            entities: driver.entities,
            next: run.start,
            end: run.end,
            dense,
            current: None,
        });
        iter
    }

    /// The next item of a driven run: the next entity of the set that lives
    /// in a matched archetype and passes the filter.
    #[inline]
    fn next_driven(&mut self) -> Option<Q::Item<'w>> {
        loop {
            let driven = self.driven.as_mut()?;
            if driven.next >= driven.end {
                return None;
            }
            let position = driven.next;
            driven.next += 1;
            let entity = driven.entities[position];
            if driven.dense {
                // SAFETY: `position` is `entity`'s index in the driving
                // set's list, as `set_driver` was promised; each position
                // comes once, so no row is fetched twice. A dense query
                // matches every archetype and has no filter.
                if let Some(item) = unsafe { Q::fetch(&mut self.data, entity, position) } {
                    return Some(item);
                }
                continue;
            }
            // A set only holds live entities; a miss would be skipped.
            let Some(loc) = driven.world.location(entity) else {
                continue;
            };
            let matches = match driven.current {
                Some((id, matches)) if id == loc.archetype => matches,
                _ => {
                    let matched = driven.state.matched_entry(loc.archetype);
                    driven.current = Some((loc.archetype, matched.is_some()));
                    if let Some(matched) = matched {
                        let archetype = &self.archetypes[loc.archetype.index()];
                        // SAFETY: an archetype of this world, and its entry
                        // in the state's matched list (contract of
                        // `new_driven`).
                        unsafe { self.set_tables(matched, archetype) };
                    }
                    matched.is_some()
                }
            };
            if !matches {
                continue;
            }
            let row = loc.row as usize;
            // SAFETY: `row` is `entity`'s row in the archetype last set;
            // each entity of the list comes once, so no row is fetched
            // twice (contract of `new_driven`).
            unsafe {
                if !F::filter(&mut self.filter, entity, row) {
                    continue;
                }
                if let Some(item) = Q::fetch(&mut self.data, entity, row) {
                    return Some(item);
                }
            }
        }
    }

    /// Points the data and filter fetches at `archetype`.
    ///
    /// # Safety
    /// - `archetype` belongs to the world `self` was made for, and
    ///   `matched` is its entry in the matched list of the state `self` was
    ///   made from (so its archetype states are the ones `match_archetype`
    ///   returned for it).
    #[inline(always)]
    unsafe fn set_tables(&mut self, matched: &MatchedArchetype<Q, F>, archetype: &'w Archetype) {
        // SAFETY: forwarded contract.
        unsafe {
            Q::set_archetype(&mut self.data, self.data_state, matched.data, archetype);
            F::set_archetype(
                &mut self.filter,
                self.filter_state,
                matched.filter,
                archetype,
            );
        }
    }

    /// Restricts the iterator to `rows` of one matched archetype (the
    /// caller's matched archetype list must be empty).
    ///
    /// # Safety
    /// - `matched` is a matched archetype of the world `self` was made for,
    ///   with its archetype states (as in `new`).
    pub(crate) unsafe fn with_rows(
        mut self,
        matched: &MatchedArchetype<Q, F>,
        rows: std::ops::Range<usize>,
    ) -> Self {
        let archetype = &self.archetypes[matched.id.index()];
        let entities = &archetype.entities()[..rows.end];
        // SAFETY: a matched archetype of this world with its states
        // (contract).
        unsafe { self.set_tables(matched, archetype) };
        self.entities = entities;
        self.row = rows.start;
        self
    }

    /// Moves to the next matched archetype; false when none is left. Empty
    /// tables are not skipped here: their row loop is empty anyway, and a
    /// separate check would cost every non-empty table a branch.
    #[inline]
    fn next_table(&mut self) -> bool {
        let Some(matched) = self.matched.next() else {
            return false;
        };
        debug_assert!(matched.id.index() < self.archetypes.len());
        // SAFETY: `matched` lists archetypes of this world (contract of
        // `new`), and a world never drops an archetype, so the id is in
        // bounds of the slice taken in `new`.
        let archetype = unsafe { self.archetypes.get_unchecked(matched.id.index()) };
        // SAFETY: a matched archetype of this world, with the states
        // `match_archetype` returned for it (contract of `new`).
        unsafe { self.set_tables(matched, archetype) };
        self.entities = archetype.entities();
        self.row = 0;
        true
    }

    /// The item for `row` of the current table, if it passes.
    ///
    /// # Safety
    /// - `row < self.entities.len()`, and each row is fetched once.
    #[inline(always)]
    unsafe fn fetch_row(&mut self, row: usize) -> Option<Q::Item<'w>> {
        // SAFETY: row < entities.len() (contract).
        let entity = unsafe { *self.entities.get_unchecked(row) };
        // SAFETY: `row` belongs to the table last set; each row is visited
        // once, so no two live items share a row.
        unsafe {
            if !F::filter(&mut self.filter, entity, row) {
                return None;
            }
            Q::fetch(&mut self.data, entity, row)
        }
    }
}

impl<'w, Q: QueryData, F: QueryFilter> QueryIter<'w, '_, Q, F> {
    /// Folds `rows` of the current table (the caller has moved `self.row`
    /// past them, so each row is fetched once).
    #[inline(always)]
    fn fold_rows<B, G>(&mut self, rows: std::ops::Range<usize>, mut acc: B, g: &mut G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        for row in rows {
            // SAFETY: rows lie within the current table, and the caller moved
            // `self.row` past them, so each is fetched once.
            if let Some(item) = unsafe { self.fetch_row(row) } {
                acc = g(acc, item);
            }
        }
        acc
    }
}

impl<'w, Q: QueryData, F: QueryFilter> QueryIter<'w, '_, Q, F> {
    /// `fold` for a driven run. Out of line, and taking the iterator by
    /// value: a `&mut self` call inside `fold` would pin the whole iterator
    /// in memory there and slow the table loop (callgrind: +15% instructions
    /// on fragmented_iter).
    #[inline(never)]
    fn fold_driven<B, G>(mut self, mut acc: B, mut g: G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        if let Some(driven) = self.driven.as_mut().filter(|d| d.dense) {
            // A dense run: one loop over the set's list, like a plain array.
            let run = driven.next..driven.end;
            driven.next = driven.end;
            let entities = &driven.entities[run.clone()];
            for (position, &entity) in run.zip(entities) {
                // SAFETY: `position` is `entity`'s index in the driving
                // set's list, as `set_driver` was promised; the run was
                // marked visited above, so each is fetched once.
                if let Some(item) = unsafe { Q::fetch(&mut self.data, entity, position) } {
                    acc = g(acc, item);
                }
            }
            return acc;
        }
        while let Some(item) = self.next_driven() {
            acc = g(acc, item);
        }
        acc
    }
}

impl<'w, Q: QueryData, F: QueryFilter> Iterator for QueryIter<'w, '_, Q, F> {
    type Item = Q::Item<'w>;

    #[inline]
    fn next(&mut self) -> Option<Q::Item<'w>> {
        if self.driven.is_some() {
            return self.next_driven();
        }
        loop {
            while self.row < self.entities.len() {
                let row = self.row;
                self.row += 1;
                // SAFETY: row < len, and `self.row` moved past it.
                if let Some(item) = unsafe { self.fetch_row(row) } {
                    return Some(item);
                }
            }
            if !self.next_table() {
                return None;
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if let Some(driven) = &self.driven {
            return (0, Some(driven.end - driven.next));
        }
        let here = self.entities.len() - self.row;
        let rest: usize = self
            .matched
            .clone()
            .map(|m| self.archetypes[m.id.index()].len())
            .sum();
        (0, Some(here + rest))
    }

    #[inline]
    fn fold<B, G>(mut self, init: B, mut g: G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        let mut acc = init;
        if self.driven.is_some() {
            return self.fold_driven(acc, g);
        }
        loop {
            let rows = self.row..self.entities.len();
            self.row = rows.end;
            // Two copies of the loop: with no change ticks to write, the
            // compiler drops the per-row tick check from the second one.
            #[allow(clippy::if_same_then_else)]
            if Q::writes_ticks(&self.data) {
                acc = self.fold_rows(rows, acc, &mut g);
            } else {
                acc = self.fold_rows(rows, acc, &mut g);
            }
            if !self.next_table() {
                return acc;
            }
        }
    }
}

impl<Q: QueryData, F: QueryFilter> std::iter::FusedIterator for QueryIter<'_, '_, Q, F> {}
