//! Walking a query's matched tables.
//!
//! A walk is a sequence of *runs*: rows `row..end` of one table (or, for a
//! query of sparse components alone, positions of one sparse set's arrays),
//! with the fetches pointed at that table's columns. A `for` loop's step
//! (`next`) touches only the current run: one compare, the fetch, and,
//! where the query has one, its filter. A query that writes a component
//! tracked for `Changed` stamps its rows one at a time off that path (see
//! `refill`), so the query that tracks nothing pays no test per row for
//! it. The plain walk of tables finds its next table inline, in a few
//! instructions (what a fragmented world's many small tables pay);
//! everything else a new run can need (the next entity of a walk over a
//! sparse set's entities, the next run between disabled rows) is found by
//! one out-of-line call that takes the small `Cursor`'s fields by value and
//! gives back the ones it moved, so the iterator is never pinned in memory
//! and the compiler keeps the run in registers across the loop body.
//! `fold` (and so `for_each`, `sum`, `count`, ...) walks each run
//! with its own counted loop, which the compiler can unroll and vectorise.
//! A `for` loop over one run gets the same counted loop (see `one_run`),
//! but not the same code: `fold` hands each item to the closure as its
//! arguments, whose `&`/`&mut` references the compiler may assume do not
//! overlap, so it can pair a row's loads and stores of neighbouring fields
//! (SLP) and then unroll the smaller loop. A `for` loop's body uses the
//! references where `next` made them, from column pointers the compiler
//! cannot prove apart, so it keeps every load and store in source order.
//! Nothing the iterator can do reaches the body's accesses: `for_each`
//! stays the fastest form for bodies that vectorise. One kind of loop is
//! kept from the vectoriser on purpose, in both forms: a query borrowing
//! both odd-sized values (a 12-byte `[f32; 3]`) and power-of-two-sized
//! ones, which LLVM vectorises into a loop slower than the scalar one (see
//! `scalar_rows`).

use std::fmt;
use std::ops::Range;

use super::state::{Driver, MatchedArchetype};
use super::{QueryData, QueryFilter, QueryState, TickRange};
use crate::archetype::{Archetype, ArchetypeId};
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::storage::DisabledRows;
use crate::world::World;

/// Iterator over a query's items, from [`QueryState::iter`] and
/// [`QueryState::iter_mut`](crate::QueryState::iter_mut).
///
/// Visits matched archetypes in creation order and their rows in order, or,
/// when the query walks a sparse set (see [`Query::iter`](crate::Query::iter)),
/// that set's entities in the set's order. A `for` loop costs one compare
/// per row beside the fetch; `for_each` (and
/// every consuming adaptor built on `fold`) runs a counted loop per table,
/// or one over the walked set, which the compiler can also vectorise.
///
/// `&mut T` items count as changes (for `Changed<T>`) as they are yielded:
/// a loop that stops early marks only what it saw. `fold` of a query that
/// skips no row marks each table's rows before walking them, so if its
/// closure panics the rows it never reached count as changed too.
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
    // The run being walked: rows `row..end` of `entities`, with the fetches
    // pointed at them. The row step touches only these.
    entities: &'w [Entity],
    row: usize,
    end: usize,
    /// Where the row step stops and calls `refill`: `end`, unless the walk
    /// stamps change ticks row by row (a tracked query that skips no row),
    /// where it is the row after the last one stamped, so stamping costs
    /// the walk that tracks nothing no test per row.
    bound: usize,
    /// True when the current run is the walk's last: the row step then
    /// ends the walk without looking for another run. Set when the walk is
    /// made and never changed, so the compiler can split a `for` loop on
    /// it, and the one-run copy of the loop is a plain counted loop (one
    /// induction variable, one exit at `bound`). It is still not `fold`'s
    /// code: the body's accesses carry no aliasing facts (see the module
    /// docs), so the compiler neither pairs nor unrolls them. Never set for
    /// a walk that stamps its rows one by one (see `refill`).
    one_run: bool,
    /// True when nothing the query writes tracks change ticks: the row
    /// step then runs to `end` (see `bound`). Set when the walk is made.
    untracked: bool,
    /// True when the walk is driven by a sparse set, or is walking a
    /// table in runs between its disabled rows: the next run is then found
    /// out of line. Otherwise the next table is found inline when it has
    /// rows and none of them is disabled (see `advance`).
    slow: bool,
    data: Q::Fetch<'w>,
    filter: F::Fetch<'w>,
    /// Where the next runs come from.
    cursor: Cursor<'w, 's, Q, F>,
}

/// Where a [`QueryIter`]'s runs come from: the state's matched archetypes,
/// each one run of all its rows, or a sparse set's entities, each looked up
/// where it lives and walked as a run of one row.
///
/// Small and `Copy` on purpose: the out-of-line step takes its fields by
/// value (see [`QueryIter::advance`] and [`Moved`]), and while a `for` loop runs
/// it only has to be kept somewhere, so the less of it the better.
struct Cursor<'w, 's, Q: QueryData, F: QueryFilter> {
    world: &'w World,
    state: &'s QueryState<Q, F>,
    /// The next index into the state's matched list, or, for a driven
    /// walk, the next position in the driving set's entity list.
    next: usize,
    /// Where `next` stops.
    end: usize,
    /// For a driven walk: the driving component.
    driven: Option<ComponentId>,
    /// For a driven walk: the archetype the fetches were last set to, with
    /// whether the state matched it.
    current: Option<(ArchetypeId, bool)>,
    /// True when the walk skips [`Disabled`](crate::Disabled) rows (the
    /// query does not name the marker and some entity is disabled). Set
    /// when the walk is made.
    skip: bool,
    /// While the current table's rows are walked in runs between its
    /// disabled rows: those rows, and where the walk of the table stops.
    split: Option<(&'w DisabledRows, usize)>,
}

/// What [`QueryIter::step`] gives back: the cursor's moved parts, each a
/// plain word, and the run found.
///
/// Not the whole cursor, and the step takes the cursor's fields as
/// separate arguments rather than the struct: a struct copied to and from
/// the step as a block is written in one width and read in another, which
/// the processor cannot forward from its store buffer, a stall of a dozen
/// cycles or more per run (fragmented_iter's `for` loop spent more time
/// there than in its rows).
struct Moved<'w, 's, Q: QueryData, F: QueryFilter> {
    next: usize,
    current: Option<(ArchetypeId, bool)>,
    step: Step<'w, 's, Q, F>,
}

impl<Q: QueryData, F: QueryFilter> Clone for Cursor<'_, '_, Q, F> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<Q: QueryData, F: QueryFilter> Copy for Cursor<'_, '_, Q, F> {}

/// What the iterator does when its run ends: see [`QueryIter::advance`].
enum Step<'w, 's, Q: QueryData, F: QueryFilter> {
    /// Point the fetches at this matched archetype and walk `rows` of it.
    Table(&'s MatchedArchetype<Q, F>, &'w Archetype, Range<usize>),
    /// Walk `rows` of the table the fetches point at.
    Rows(Range<usize>),
    /// Nothing is left.
    Done,
}

impl<Q: QueryData, F: QueryFilter> fmt::Debug for QueryIter<'_, '_, Q, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left = self.cursor.end - self.cursor.next;
        let (tables_left, walk_left) = match self.cursor.driven {
            None => (left, 0),
            Some(_) => (0, left),
        };
        f.debug_struct("QueryIter")
            .field("archetypes_left", &tables_left)
            .field("rows_left", &(self.end - self.row))
            .field("walk_left", &walk_left)
            .finish()
    }
}

impl<'w, 's, Q: QueryData, F: QueryFilter> QueryIter<'w, 's, Q, F> {
    /// An iterator over `state`'s matched archetypes.
    ///
    /// # Safety
    /// - `state` was built on `world` and is prepared for it (its matched
    ///   list holds archetypes of `world`, each with the archetype states
    ///   `match_archetype` returned for it);
    /// - if `Q` writes, the caller has exclusive access to what it writes for
    ///   `'w`, and the query does not alias.
    pub(crate) unsafe fn new(
        world: &'w World,
        state: &'s QueryState<Q, F>,
        ticks: TickRange,
    ) -> Self {
        // SAFETY: forwarded contract.
        let mut iter = unsafe { Self::unstarted(world, state, ticks) };
        iter.advance();
        // A walk whose first run is its only one says so (see `one_run`).
        // The search for a second stops at the first table with rows.
        let c = iter.cursor;
        let matched = &state.matched()[c.next..c.end];
        if matched.iter().all(|m| world.archetype(m.id).is_empty()) {
            iter.cursor.next = c.end;
            iter.one_run = c.split.is_none() && !iter.stamps_rows();
        }
        iter
    }

    /// [`new`](Self::new) without its first run: the row step finds it.
    ///
    /// # Safety
    /// - as [`QueryIter::new`].
    pub(crate) unsafe fn unstarted(
        world: &'w World,
        state: &'s QueryState<Q, F>,
        ticks: TickRange,
    ) -> Self {
        let (data_state, filter_state) = state.states();
        // SAFETY: forwarded contract.
        let data = unsafe { Q::init_fetch(world, data_state, ticks) };
        let skip = state.skips_disabled(world);
        QueryIter {
            entities: &[],
            row: 0,
            end: 0,
            bound: 0,
            one_run: false,
            untracked: !Q::tracks(&data),
            slow: false,
            data,
            // SAFETY: forwarded contract.
            filter: unsafe { F::init_fetch(world, filter_state, ticks) },
            cursor: Cursor {
                world,
                state,
                next: 0,
                end: state.matched().len(),
                driven: None,
                current: None,
                skip,
                split: None,
            },
        }
    }

    /// An iterator over positions `run` of `driver`'s entity list (all, or
    /// a run of, the entities of a sparse set every match has), looking
    /// each up where it lives, or, for a [dense](QueryState::is_dense)
    /// state, reading the set's values by position: then the whole run is
    /// one run of rows, walked like a table.
    ///
    /// # Safety
    /// - as [`QueryIter::new`];
    /// - `driver` is the entity list of component `driver.id`'s sparse set
    ///   in `world` (as [`QueryState::driver`] returns it), and
    ///   `run.end <= driver.entities.len()`. A set's list holds each entity
    ///   once, so no two items share a row.
    pub(crate) unsafe fn new_driven(
        world: &'w World,
        state: &'s QueryState<Q, F>,
        ticks: TickRange,
        driver: Driver<'w>,
        run: Range<usize>,
    ) -> Self {
        assert!(run.start <= run.end && run.end <= driver.entities.len());
        // SAFETY: forwarded contract.
        let mut iter = unsafe { QueryIter::unstarted(world, state, ticks) };
        // A dense walk reads the set by position and sees no table, so
        // while disabled rows are to be skipped the set is walked entity
        // by entity instead.
        if state.is_dense() && !iter.cursor.skip {
            // SAFETY: a dense state's data is `DENSE`; the fetch came from
            // `init_fetch` with this state; every fetch of this run passes
            // the entity's position in `driver`'s list as its row, since
            // the run's rows are positions of that list.
            unsafe { Q::set_driver(&mut iter.data, state.states().0, driver.id) };
            iter.cursor.next = iter.cursor.end;
            iter.entities = driver.entities;
            iter.one_run = !iter.stamps_rows();
            iter.begin(run);
        } else {
            iter.cursor.next = run.start;
            iter.cursor.end = run.end;
            iter.cursor.driven = Some(driver.id);
            iter.slow = true;
        }
        iter
    }

    /// Restricts the iterator to `rows` of one matched archetype.
    ///
    /// # Safety
    /// - `matched` is a matched archetype of the world `self` was made for,
    ///   with its archetype states (as in `new`).
    pub(crate) unsafe fn with_rows(
        mut self,
        matched: &MatchedArchetype<Q, F>,
        rows: Range<usize>,
    ) -> Self {
        let archetype = self.cursor.world.archetype(matched.id);
        assert!(rows.start <= rows.end && rows.end <= archetype.len());
        // SAFETY: a matched archetype of this world with its states
        // (contract).
        unsafe { self.set_tables(matched, archetype) };
        self.cursor.next = self.cursor.end;
        self.entities = archetype.entities();
        let disabled = archetype.table.disabled();
        if self.cursor.skip && disabled.count() > 0 {
            // Runs between the disabled rows; the first may be empty, and
            // the row step then finds the next.
            self.cursor.split = Some((disabled, rows.end));
            self.slow = true;
            self.begin(disabled.next_run(rows.start, rows.end));
        } else {
            self.one_run = !self.stamps_rows();
            self.begin(rows);
        }
        self
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
        let (data_state, filter_state) = self.cursor.state.states();
        // SAFETY: forwarded contract.
        unsafe {
            Q::set_archetype(&mut self.data, data_state, matched.data, archetype);
            F::set_archetype(&mut self.filter, filter_state, matched.filter, archetype);
        }
    }

    /// Starts the next run; false when none is left.
    ///
    /// The plain walk's next table is found inline (one matched entry and
    /// its length). Any other search for the run ([`step`](Self::step),
    /// [`step_skipping`](Self::step_skipping)) is out of line and
    /// takes the cursor's fields by value and gives back the moved ones
    /// (see [`Moved`]): were `&mut self` (or a field of it) passed to a
    /// call, the whole iterator would have to live in memory, and a `for`
    /// loop's body, which writes through the items, would make every row
    /// reload the row counter and the column pointers. By value, the
    /// iterator stays in registers across the loop. Always inline, for the
    /// same reason: out of line, `&mut self` would pin the iterator in
    /// memory (the compiler declined to inline it in the peer suite's
    /// binary, and the sparse `for` loop there took 25 times as long).
    #[inline(always)]
    fn advance(&mut self) -> bool {
        // A table walked in runs between its disabled rows: its next run
        // comes from a small call, three words in and two back; when none
        // is left, the walk goes on to the next table as any other.
        if self.slow {
            if let Some((disabled, limit)) = self.cursor.split {
                // The run ended at a disabled row (or at `limit`).
                let run = Self::split_run(disabled, self.end + 1, limit);
                if !run.is_empty() {
                    return self.start(Step::Rows(run));
                }
                self.cursor.split = None;
                self.slow = self.cursor.driven.is_some();
            }
        }
        // The plain walk of tables, inline: a walk that is neither driven
        // nor splitting a table (one test of a flag) finds its next table
        // here, with no call and no copy of the cursor, so a table costs a
        // handful of instructions and the iterator stays in registers
        // across the loop.
        let step = if let Some(step) = self.next_plain_table() {
            step
        } else if self.cursor.skip {
            // A walk that skips disabled rows takes its own search for a
            // table with disabled rows, and for the runs between them.
            let (cursor, step) = Self::step_skipping(self.cursor, self.end);
            self.cursor = cursor;
            self.slow = cursor.driven.is_some() || cursor.split.is_some();
            step
        } else {
            let c = self.cursor;
            let moved = Self::step(c.world, c.state, c.next, c.end, c.driven, c.current);
            self.cursor.next = moved.next;
            self.cursor.current = moved.current;
            moved.step
        };
        // One `start` for every path, so the loop holds one copy of it.
        self.start(step)
    }

    /// For a walk of tables: the next matched table as a run of all its
    /// rows, or, for a walk that skips disabled rows and a table holding
    /// some, its first run between them. `None` when the table has no rows
    /// (or no enabled one), when none is left, or when the walk is driven
    /// or splitting a table; `step` or `step_skipping` then looks further,
    /// out of line.
    #[inline(always)]
    fn next_plain_table(&mut self) -> Option<Step<'w, 's, Q, F>> {
        if self.slow || self.cursor.next >= self.cursor.end {
            return None;
        }
        debug_assert!(self.cursor.driven.is_none() && self.cursor.split.is_none());
        let matched = self.cursor.state.matched();
        let archetypes = self.cursor.world.archetype_slice();
        debug_assert!(self.cursor.end <= matched.len());
        // SAFETY: `next < end <= matched.len()` (`end` is the matched
        // list's length for a table walk and never grows).
        let entry = unsafe { matched.get_unchecked(self.cursor.next) };
        debug_assert!(entry.id.index() < archetypes.len());
        // SAFETY: the matched list holds archetypes of this world
        // (contract of `new`), and a world never drops an archetype.
        let archetype = unsafe { archetypes.get_unchecked(entry.id.index()) };
        let len = archetype.len();
        if len == 0 {
            return None;
        }
        let disabled = archetype.table.disabled();
        let rows = if self.cursor.skip && disabled.count() > 0 {
            // Walked in runs between its disabled rows: the first run from
            // the small call, the rest from `advance`. Runs are never
            // empty (see `refill`): a table whose rows are all disabled
            // is left to `step_skipping`, which passes it.
            let run = Self::split_run(disabled, 0, len);
            if run.is_empty() {
                return None;
            }
            self.cursor.split = Some((disabled, len));
            self.slow = true;
            run
        } else {
            0..len
        };
        self.cursor.next += 1;
        Some(Step::Table(entry, archetype, rows))
    }

    /// The next run of enabled rows in `from..limit` of a table walked
    /// between its disabled rows. Out of line and by value (see
    /// `advance`).
    #[inline(never)]
    fn split_run(disabled: &DisabledRows, from: usize, limit: usize) -> Range<usize> {
        disabled.next_run(from, limit)
    }

    /// [`step`](Self::step) for a walk that skips disabled rows: the next
    /// run of enabled rows of the table being split (the current run ended
    /// at `end`), else the next table's first (or, for a driven walk, the
    /// next enabled entity). By value, as `step`; the whole cursor goes in
    /// and out, which a walk that skips rows can afford.
    #[inline(never)]
    fn step_skipping(
        mut cursor: Cursor<'w, 's, Q, F>,
        end: usize,
    ) -> (Cursor<'w, 's, Q, F>, Step<'w, 's, Q, F>) {
        if let Some((disabled, limit)) = cursor.split {
            // The run ended at a disabled row (or at `limit`).
            let run = disabled.next_run(end + 1, limit);
            if !run.is_empty() {
                return (cursor, Step::Rows(run));
            }
            cursor.split = None;
        }
        let step = match cursor.driven {
            None => cursor.next_table(),
            Some(_) => cursor.next_driven(),
        };
        (cursor, step)
    }

    /// Points the iterator at the run `step` names.
    #[inline(always)]
    fn start(&mut self, step: Step<'w, 's, Q, F>) -> bool {
        let rows = match step {
            Step::Done => return false,
            Step::Rows(rows) => rows,
            Step::Table(matched, archetype, rows) => {
                // SAFETY: `step` names a matched archetype of this world
                // with its entry (contract of `new` / `new_driven`).
                unsafe { self.set_tables(matched, archetype) };
                self.entities = archetype.entities();
                rows
            }
        };
        self.begin(rows);
        true
    }

    /// Makes `rows` of the run the fetches point at the current run.
    #[inline(always)]
    fn begin(&mut self, rows: Range<usize>) {
        debug_assert!(rows.start <= rows.end && rows.end <= self.entities.len());
        self.row = rows.start;
        self.end = rows.end;
        // A walk that stamps its rows one by one (see `refill`) stops the
        // row step at each; any other runs straight to the end.
        self.bound = if self.stamps_rows() {
            rows.start
        } else {
            rows.end
        };
    }

    /// True when the row step stamps change ticks row by row, in
    /// `refill`: a query that skips no row and writes a tracked component.
    #[inline(always)]
    fn stamps_rows(&self) -> bool {
        Self::STAMPS_RUNS && !self.untracked
    }

    /// What the row step calls when it reaches `bound`: stamps the next
    /// row of a walk that stamps row by row, else starts the next run.
    /// False when the walk is over.
    #[inline(always)]
    fn refill(&mut self) -> bool {
        // A walk that stamps row by row is never `one_run`, so the walk
        // that stamps nothing sees the same test as the row step's.
        if self.one_run {
            return false;
        }
        // Only a walk that stamps row by row stops short of `end`.
        if (!Self::STAMPS_RUNS || self.row >= self.end) && !self.advance() {
            return false;
        }
        // Runs are never empty here: `row < end`.
        if Self::STAMPS_RUNS && self.bound <= self.row {
            // A tracked walk: the next row's change ticks are written as
            // it is yielded, so a loop that stops early marks only what
            // it saw.
            // SAFETY: `row` is in the current run, under the iterator's
            // access.
            unsafe { Q::stamp_rows(&mut self.data, self.row..self.row + 1) };
            self.bound = self.row + 1;
        }
        true
    }

    /// Finds the next run of `cursor`: see [`advance`](Self::advance).
    #[inline(never)]
    fn step(
        world: &'w World,
        state: &'s QueryState<Q, F>,
        next: usize,
        end: usize,
        driven: Option<ComponentId>,
        current: Option<(ArchetypeId, bool)>,
    ) -> Moved<'w, 's, Q, F> {
        // Walks that skip disabled rows take `step_skipping`.
        let mut cursor = Cursor {
            world,
            state,
            next,
            end,
            driven,
            current,
            skip: false,
            split: None,
        };
        let step = match cursor.driven {
            None => cursor.next_table(),
            Some(_) => cursor.next_driven(),
        };
        Moved {
            next: cursor.next,
            current: cursor.current,
            step,
        }
    }

    /// Whether `fold` stamps a run's change ticks before walking it rather
    /// than row by row: when the query skips no row, a run's rows are
    /// exactly those it yields.
    const STAMPS_RUNS: bool = !Q::FALLIBLE && F::IS_ARCHETYPAL;

    /// The item for `row` of the current run, if it passes, its change
    /// ticks written.
    ///
    /// # Safety
    /// - `row < self.entities.len()`, `row` is in the current run, and
    ///   each row is fetched once.
    #[inline(always)]
    unsafe fn fetch_row(&mut self, row: usize) -> Option<Q::Item<'w>> {
        // SAFETY: row < entities.len() (contract).
        let entity = unsafe { *self.entities.get_unchecked(row) };
        // SAFETY: `row` belongs to the run last set; each row is visited
        // once, so no two live items share a row.
        unsafe {
            if !F::filter(&mut self.filter, entity, row) {
                return None;
            }
            Q::fetch(&mut self.data, entity, row)
        }
    }

    /// `fetch_row` for the row step: a query that skips no row fetches
    /// without tick code, its rows stamped by `refill` when it tracks any.
    ///
    /// # Safety
    /// - as [`fetch_row`](Self::fetch_row); for a query that skips no row,
    ///   `row` was stamped if the query tracks changes (`refill`).
    #[inline(always)]
    unsafe fn fetch_next(&mut self, row: usize) -> Option<Q::Item<'w>> {
        if Self::STAMPS_RUNS {
            // SAFETY: row < entities.len() (contract).
            let entity = unsafe { *self.entities.get_unchecked(row) };
            // SAFETY: as in `fetch_row`; the filter passes every row, and
            // its ticks were written by `refill` (contract).
            return unsafe { Q::fetch_unstamped(&mut self.data, entity, row) };
        }
        // SAFETY: forwarded contract.
        unsafe { self.fetch_row(row) }
    }

    /// Folds the rest of the current run.
    ///
    /// A query that skips no row stamps the run's change ticks first and
    /// then fetches without them, so the loop holds no tick code; if `g`
    /// panics, rows it never saw count as changed, never the other way
    /// round.
    #[inline(always)]
    fn fold_run<B, G>(&mut self, acc: B, g: &mut G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        self.fold_run_as::<true, B, G>(acc, g)
    }

    /// [`fold_run`](Self::fold_run) for a caller that has tested
    /// [`QueryData::writes_ticks`] once for the whole walk: with `TICKS`
    /// false the run's loop holds no tick code and no test for it.
    #[inline(always)]
    fn fold_run_as<const TICKS: bool, B, G>(&mut self, mut acc: B, g: &mut G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        let rows = self.row..self.end;
        self.row = self.end;
        if Self::STAMPS_RUNS {
            if TICKS && !rows.is_empty() {
                // SAFETY: rows of the current run, under the iterator's
                // access.
                unsafe { Q::stamp_rows(&mut self.data, rows.clone()) };
            }
            for row in rows {
                // SAFETY: rows of the current run, and `self.row` moved
                // past them, so each is fetched once.
                let entity = unsafe { *self.entities.get_unchecked(row) };
                // SAFETY: as above; the row was stamped above.
                if let Some(item) = unsafe { Q::fetch_unstamped(&mut self.data, entity, row) } {
                    scalar_rows::<Q>();
                    acc = g(acc, item);
                }
            }
            return acc;
        }
        // Two copies of the loop: with no change ticks to write, the
        // compiler drops the per-row tick check from the second one.
        if TICKS && Q::writes_ticks(&self.data) {
            for row in rows {
                // SAFETY: rows of the current run, and `self.row` moved
                // past them, so each is fetched once.
                if let Some(item) = unsafe { self.fetch_row(row) } {
                    scalar_rows::<Q>();
                    acc = g(acc, item);
                }
            }
        } else {
            for row in rows {
                // SAFETY: as above.
                if let Some(item) = unsafe { self.fetch_row(row) } {
                    scalar_rows::<Q>();
                    acc = g(acc, item);
                }
            }
        }
        acc
    }

    /// `fold` for a walk of tables that skips disabled rows. Out of line
    /// and by value, as [`fold_runs`](Self::fold_runs). Whether the walk
    /// writes change ticks is tested once, here, and each answer gets its
    /// own copy of the table loop: a loop that tests it per table is too
    /// big for the compiler to split on its own, as it splits `fold`'s.
    #[inline(never)]
    fn fold_skipping<B, G>(self, init: B, g: G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        if Q::writes_ticks(&self.data) {
            self.fold_skipping_as::<true, B, G>(init, g)
        } else {
            self.fold_skipping_as::<false, B, G>(init, g)
        }
    }

    /// The body of [`fold_skipping`](Self::fold_skipping) for one answer
    /// to whether the walk writes change ticks. A table with no disabled
    /// row takes the steps `fold`'s loop takes, plus one compare; one that
    /// holds some is folded run by run between them, each run found by
    /// one search for the next disabled row.
    #[inline(always)]
    fn fold_skipping_as<const TICKS: bool, B, G>(mut self, init: B, mut g: G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        let mut acc = self.fold_run_as::<TICKS, B, G>(init, &mut g);
        if let Some((disabled, limit)) = self.cursor.split.take() {
            acc = self.fold_between::<TICKS, B, G>(disabled, self.end, limit, acc, &mut g);
        }
        let cursor = self.cursor;
        let matched = &cursor.state.matched()[cursor.next..cursor.end];
        let archetypes = cursor.world.archetype_slice();
        for entry in matched {
            debug_assert!(entry.id.index() < archetypes.len());
            // SAFETY: the matched list holds archetypes of this world
            // (contract of `new`), and a world never drops an archetype.
            let archetype = unsafe { archetypes.get_unchecked(entry.id.index()) };
            let len = archetype.len();
            self.start(Step::Table(entry, archetype, 0..len));
            let disabled = archetype.table.disabled();
            if disabled.count() == 0 {
                acc = self.fold_run_as::<TICKS, B, G>(acc, &mut g);
            } else {
                acc = self.fold_between::<TICKS, B, G>(disabled, 0, len, acc, &mut g);
            }
        }
        acc
    }

    /// Folds the enabled rows in `from..limit` of the table the fetches
    /// point at, a run between two disabled rows at a time.
    #[inline(always)]
    fn fold_between<const TICKS: bool, B, G>(
        &mut self,
        disabled: &DisabledRows,
        mut from: usize,
        limit: usize,
        mut acc: B,
        g: &mut G,
    ) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        while from < limit {
            let stop = disabled.next_disabled(from, limit);
            if from < stop {
                self.begin(from..stop);
                acc = self.fold_run_as::<TICKS, B, G>(acc, g);
            }
            from = stop + 1;
        }
        acc
    }

    /// `fold` for a driven walk: run by
    /// run, each found by [`advance`](Self::advance). Out of line, and
    /// taking the iterator by value: the search is long, and inlined into
    /// `fold` it would slow the table loop there.
    #[inline(never)]
    fn fold_runs<B, G>(mut self, mut acc: B, mut g: G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        loop {
            acc = self.fold_run(acc, &mut g);
            if !self.advance() {
                return acc;
            }
        }
    }
}

/// Keeps a loop over rows of `Q` scalar when `Q` borrows both a value
/// sized other than a power of two and one sized a power of two
/// ([`QueryData::ODD_SIZED`], [`QueryData::POW2_SIZED`]); compiles to
/// nothing otherwise.
///
/// LLVM's loop vectoriser reads a column of odd-sized values (12-byte
/// `[f32; 3]`s) as an interleaved group, and for x86-64's baseline (SSE2)
/// lowers it with one scalar load per float and a shuffle to place it.
/// Over odd-sized columns alone its cost model sees that, and keeps the
/// scalar loop (unrolled by two). Beside a column it can load whole (an
/// `f32` mass) it vectorises anyway: a row of `p += v * m` over
/// `(&mut [f32; 3], &[f32; 3], &f32)` then costs six loads and about five
/// shuffles, against two paired loads per vector and one shuffle in the
/// scalar loop the SLP pass makes of the same body. The vector loop was
/// 1.6× slower than the scalar one on an Intel Xeon and 1.2× on an AMD
/// EPYC (Zen 5): the peer suite's join_filter, where bevy's loop, scalar,
/// beat the plain `Vec` loop LLVM vectorised.
///
/// The empty `asm!` is an instruction the loop vectoriser cannot widen, so
/// it leaves the loop alone (and does not unroll it: the vectoriser is
/// what unrolls these loops); it has no operand, touches no memory, stack
/// or flags, and emits nothing. The SLP pass still pairs a row's floats.
///
/// With it, join_filter's `for` loop (its one-run copy) and its `fold`
/// compile to the same 15 instructions. Their times still differ from one
/// build to the next on Zen 5, by where the loop lands: starting on a
/// 64-byte boundary, 13 of its 14 ops share one 64-byte window, which the
/// front end then decodes instead of reading from its op cache (1.5×
/// slower; `benches/suite/examples/loop_placement.rs` shows it, bevy's
/// loop alike). That is code placement, not something the iterator does.
#[inline(always)]
fn scalar_rows<Q: QueryData>() {
    #[cfg(all(not(miri), any(target_arch = "x86", target_arch = "x86_64")))]
    if Q::ODD_SIZED && Q::POW2_SIZED {
        // SAFETY: an empty template with no operands: no instruction is
        // emitted, and the options promise no memory, stack or flag use,
        // which holds for nothing.
        unsafe { std::arch::asm!("", options(nomem, nostack, preserves_flags)) };
    }
}

impl<'w, 's, Q: QueryData, F: QueryFilter> Cursor<'w, 's, Q, F> {
    /// The next matched archetype with rows, as a run of all its rows.
    #[inline(always)]
    fn next_table(&mut self) -> Step<'w, 's, Q, F> {
        let matched = self.state.matched();
        let archetypes = self.world.archetype_slice();
        while self.next < self.end {
            let entry = &matched[self.next];
            self.next += 1;
            debug_assert!(entry.id.index() < archetypes.len());
            // SAFETY: the matched list holds archetypes of this world
            // (contract of `QueryIter::new`), and a world never drops an
            // archetype.
            let archetype = unsafe { archetypes.get_unchecked(entry.id.index()) };
            if !archetype.is_empty() {
                let disabled = archetype.table.disabled();
                if self.skip && disabled.count() > 0 {
                    // Walked in runs between its disabled rows.
                    let run = disabled.next_run(0, archetype.len());
                    if run.is_empty() {
                        continue;
                    }
                    self.split = Some((disabled, archetype.len()));
                    return Step::Table(entry, archetype, run);
                }
                return Step::Table(entry, archetype, 0..archetype.len());
            }
        }
        Step::Done
    }

    /// The next entity of a driven walk that lives in a matched archetype,
    /// as a run of its one row.
    #[inline(always)]
    fn next_driven(&mut self) -> Step<'w, 's, Q, F> {
        let Some(driver) = self.driven else {
            return Step::Done;
        };
        let current = &mut self.current;
        let entities = self
            .world
            .sparse_sets()
            .get(driver)
            .map_or(&[][..], |set| set.entities());
        while self.next < self.end {
            let entity = entities[self.next];
            self.next += 1;
            // A set only holds live entities; a miss would be skipped.
            let Some(loc) = self.world.location(entity) else {
                continue;
            };
            let row = loc.row as usize;
            if self.skip
                && self
                    .world
                    .archetype(loc.archetype)
                    .table
                    .disabled()
                    .contains(row)
            {
                continue;
            }
            match *current {
                Some((id, true)) if id == loc.archetype => return Step::Rows(row..row + 1),
                Some((id, false)) if id == loc.archetype => continue,
                _ => {}
            }
            let matched = self.state.matched_entry(loc.archetype);
            *current = Some((loc.archetype, matched.is_some()));
            if let Some(matched) = matched {
                let archetype = self.world.archetype(loc.archetype);
                return Step::Table(matched, archetype, row..row + 1);
            }
        }
        Step::Done
    }
}

impl<'w, Q: QueryData, F: QueryFilter> Iterator for QueryIter<'w, '_, Q, F> {
    type Item = Q::Item<'w>;

    // The row step: one compare, the fetch, and the filter where there is
    // one. Everything a new run needs, and a tracked walk's row stamp, is
    // behind `refill`, which only starts runs with rows, so the fetch
    // follows it without a second compare.
    #[inline(always)]
    fn next(&mut self) -> Option<Q::Item<'w>> {
        loop {
            if self.row >= self.bound && !self.refill() {
                return None;
            }
            let row = self.row;
            self.row += 1;
            // SAFETY: `row` is in the current run (`end` never exceeds
            // the run's entity list), and `self.row` moved past it.
            if let Some(item) = unsafe { self.fetch_next(row) } {
                scalar_rows::<Q>();
                return Some(item);
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // The current table's runs still to come, when it is walked in
        // runs between disabled rows.
        let split = self.cursor.split.map_or(0, |(_, limit)| limit - self.end);
        let here = self.end - self.row + split;
        let (rest, exact) = match self.cursor.driven {
            None => {
                let matched = &self.cursor.state.matched()[self.cursor.next..self.cursor.end];
                let rest = matched
                    .iter()
                    .map(|m| self.cursor.world.archetype(m.id).len())
                    .sum::<usize>();
                (rest, !Q::FALLIBLE && F::ALWAYS_TRUE && !self.cursor.skip)
            }
            Some(_) => (self.cursor.end - self.cursor.next, false),
        };
        let upper = here + rest;
        (if exact { upper } else { 0 }, Some(upper))
    }

    #[inline]
    fn fold<B, G>(mut self, init: B, mut g: G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        // A driven walk, and one that skips disabled rows, go run by run
        // through `advance`; the loop below is for the rest, and stays as
        // lean as it was before disabling existed.
        if self.cursor.driven.is_some() {
            return self.fold_runs(init, g);
        }
        if self.cursor.skip {
            return self.fold_skipping(init, g);
        }
        let mut acc = self.fold_run(init, &mut g);
        let cursor = self.cursor;
        self.cursor.next = cursor.end;
        let matched = &cursor.state.matched()[cursor.next..cursor.end];
        let archetypes = cursor.world.archetype_slice();
        for entry in matched {
            debug_assert!(entry.id.index() < archetypes.len());
            // SAFETY: the matched list holds archetypes of this world
            // (contract of `new`), and a world never drops an archetype.
            let archetype = unsafe { archetypes.get_unchecked(entry.id.index()) };
            // Empty tables are not skipped: their row loop is empty anyway,
            // and a separate check would cost every other table a branch.
            self.start(Step::Table(entry, archetype, 0..archetype.len()));
            acc = self.fold_run(acc, &mut g);
        }
        acc
    }
}

impl<Q: QueryData, F: QueryFilter> std::iter::FusedIterator for QueryIter<'_, '_, Q, F> {}
