//! An archetype's table: one column per table component, one row per entity.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Column, DeferredPanic};
use crate::change::Tick;
use crate::component::{ComponentId, Components};
use crate::entity::Entity;

/// Rows of entities that share one set of table components.
///
/// Invariants:
/// - `ids` is sorted and unique; `columns[i]` stores component `ids[i]`;
/// - every column has exactly `entities.len()` values (outside a structural
///   change in progress);
/// - the entity list and every column (its values and, if tracked, its
///   ticks) have room for at least `capacity` rows.
pub(crate) struct Table {
    /// This table's own number, never another's (see [`Table::uid`]).
    uid: u64,
    ids: Box<[ComponentId]>,
    /// `slots[id.index()]` is the position of component `id`'s column, or
    /// [`NO_SLOT`]: [`Table::column_index`] in one load rather than a scan
    /// (random access by entity does it on every call). Covers ids up to
    /// the table's largest when that is below [`SLOT_IDS`] (so an id past
    /// the end is not here); a table with larger ids keeps it empty and
    /// scans `ids` instead.
    slots: Box<[u16]>,
    /// Made once by [`Table::new`] and never pushed to, popped or
    /// reallocated after: a column keeps its address for as long as the
    /// table lives, which column hints rest on (see
    /// [`ColumnHints`](super::ColumnHints); a `Vec`, not a boxed slice, so
    /// that [`Table::column_ptr`] takes the buffer's own pointer, which
    /// later `&mut` borrows of the columns do not invalidate).
    columns: Vec<Column>,
    entities: Vec<Entity>,
    /// Rows every column and the entity list have room for (a lower
    /// bound, exact after [`Table::reserve`] grows): a one-row
    /// [`Table::reserve`] is then one compare, not one per column. Only
    /// two things can lower a column's room, [`Table::track_ticks`] and
    /// [`Table::reorder`], and they set it again.
    capacity: usize,
    /// Which rows hold a disabled entity (see [`DisabledRows`]).
    disabled: DisabledRows,
}

/// The rows of one table whose entity has the
/// [`Disabled`](crate::Disabled) marker: a bit per row and their count.
///
/// The marker itself lives in its sparse set; this mirror lets a query
/// skip a table's disabled rows without a lookup per row, and with a count
/// of zero (every table, while nothing is disabled) costs it one compare
/// per table. The table keeps the mirror through its own row moves (swap
/// removals, moves to another table, reorders); the world sets and clears
/// bits when the marker comes and goes.
///
/// Invariant: no bit is set at or past the table's length, and `count` is
/// the number of set bits.
#[derive(Default)]
pub(crate) struct DisabledRows {
    bits: Vec<u64>,
    count: u32,
}

impl DisabledRows {
    /// Number of disabled rows.
    #[inline(always)]
    pub fn count(&self) -> u32 {
        self.count
    }

    /// True if `row` is disabled.
    #[inline]
    pub fn contains(&self, row: usize) -> bool {
        self.bits
            .get(row / 64)
            .is_some_and(|w| w & (1 << (row % 64)) != 0)
    }

    /// Marks `row` disabled (`on`) or not; true if that changed it.
    pub fn set(&mut self, row: usize, on: bool) -> bool {
        if self.contains(row) == on {
            return false;
        }
        let word = row / 64;
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] ^= 1 << (row % 64);
        if on {
            self.count += 1;
        } else {
            self.count -= 1;
        }
        true
    }

    /// The first disabled row in `from..end`, or `end`.
    #[inline]
    pub fn next_disabled(&self, mut from: usize, end: usize) -> usize {
        while from < end {
            let word = from / 64;
            let Some(&w) = self.bits.get(word) else {
                return end;
            };
            let shut = w >> (from % 64);
            if shut != 0 {
                return (from + shut.trailing_zeros() as usize).min(end);
            }
            from = (word + 1) * 64;
        }
        end
    }

    /// The next run of enabled rows in `from..end`: its range, empty (at
    /// `end`) when none is left.
    ///
    /// One search for the next disabled row per run: a walk that goes on
    /// from the disabled row that ended its last run passes the row after
    /// it, so a run between two lone disabled rows costs one search, not
    /// one for its start and one for its end.
    #[inline]
    pub fn next_run(&self, mut from: usize, end: usize) -> std::ops::Range<usize> {
        while from < end {
            let stop = self.next_disabled(from, end);
            if from < stop {
                return from..stop;
            }
            from = stop + 1;
        }
        end..end
    }

    /// Mirrors a swap removal of `row` from a table of `len` rows (the
    /// last row moves into `row`). Returns whether `row` was disabled.
    ///
    /// Inlined down to one compare while the table has no disabled row
    /// (every table, in a world that disables nothing): every despawn and
    /// every archetype move passes here.
    #[inline(always)]
    fn swap_remove(&mut self, row: usize, len: usize) -> bool {
        if self.count == 0 {
            return false;
        }
        self.swap_remove_disabled(row, len)
    }

    /// [`DisabledRows::swap_remove`] in a table with disabled rows.
    #[inline(never)]
    fn swap_remove_disabled(&mut self, row: usize, len: usize) -> bool {
        let was = self.contains(row);
        let last = len - 1;
        let moved = self.contains(last);
        self.set(last, false);
        if row != last {
            self.set(row, moved);
        }
        was
    }

    /// Mirrors a reorder: row `i` takes what row `order[i]` held.
    fn reorder(&mut self, order: &[u32]) {
        if self.count == 0 {
            return;
        }
        let old = std::mem::take(self);
        for (i, &from) in order.iter().enumerate() {
            if old.contains(from as usize) {
                self.set(i, true);
            }
        }
    }
}

/// A [`Table::slots`] entry for a component the table has no column for.
const NO_SLOT: u16 = u16::MAX;

/// Tables whose component ids are all below this keep [`Table::slots`]
/// (at most 2 KiB a table).
const SLOT_IDS: usize = 1024;

/// A [`ColumnMap`] entry for a column the target table lacks.
const GONE: u32 = u32::MAX;

/// Where each column of one table is in another: made once per archetype
/// edge by [`Table::column_map`], so that a row move copies each value
/// straight to its column rather than matching the two tables' component
/// lists on every move.
///
/// Invariant: `to` has one entry per column of the table whose
/// [uid](Table::uid) is `src`, in column order: the position of the same
/// component's column in the table whose uid is `dst`, or `GONE` if that
/// table lacks it. A table's columns never change after it is made, so a
/// map stays true for as long as both tables live.
#[derive(Clone, Debug)]
pub(crate) struct ColumnMap {
    src: u64,
    dst: u64,
    to: Box<[u32]>,
}

impl ColumnMap {
    /// True if this map leads from `table`.
    #[inline(always)]
    pub fn is_from(&self, table: &Table) -> bool {
        self.src == table.uid
    }
}

impl Table {
    pub fn new(ids: &[ComponentId], components: &Components) -> Self {
        Self::with_slot_limit(ids, components, SLOT_IDS)
    }

    /// [`Table::new`], keeping `slots` only if every id is below `limit`
    /// (tests use a small one to reach the scan).
    fn with_slot_limit(ids: &[ComponentId], components: &Components, limit: usize) -> Self {
        debug_assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let end = ids.last().map_or(0, |id| id.index() + 1);
        let slots = if end <= limit {
            let mut slots = vec![NO_SLOT; end];
            for (i, id) in ids.iter().enumerate() {
                slots[id.index()] = i as u16;
            }
            slots.into_boxed_slice()
        } else {
            Box::default()
        };
        static NEXT_UID: AtomicU64 = AtomicU64::new(0);
        Table {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            ids: ids.into(),
            slots,
            columns: ids
                .iter()
                .map(|&id| Column::new(components.info(id)))
                .collect(),
            entities: Vec::new(),
            capacity: 0,
            disabled: DisabledRows::default(),
        }
    }

    /// Numbers every column as archetype `archetype`'s (see
    /// [`Column::archetype`]): for the archetype that owns this table, once
    /// it has its index.
    pub fn set_archetype(&mut self, archetype: u32) {
        for column in &mut self.columns {
            column.set_archetype(archetype);
        }
    }

    /// A pointer to the column at `index` (a position in
    /// [`Table::component_ids`]) that stays valid for as long as this table
    /// lives (the column array never moves: see the field's doc), taken
    /// from the array's own pointer rather than through a borrow of it: for
    /// [`ColumnHints`](super::ColumnHints). `None` past the end.
    #[inline]
    pub fn column_ptr(&self, index: usize) -> Option<*const Column> {
        (index < self.columns.len()).then(|| self.columns.as_ptr().wrapping_add(index))
    }

    /// A number no other table of the process has: a plan checked against
    /// this table's columns (their types never change) knows it by it.
    #[inline]
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// Bytes held on the heap: per column, then the entity list and the
    /// disabled-row mirror together.
    pub fn heap_bytes(&self) -> (Vec<usize>, usize) {
        let columns = self.columns.iter().map(Column::heap_bytes).collect();
        let own = self.entities.capacity() * std::mem::size_of::<Entity>()
            + self.disabled.bits.capacity() * 8;
        (columns, own)
    }

    /// The rows holding disabled entities.
    #[inline(always)]
    pub fn disabled(&self) -> &DisabledRows {
        &self.disabled
    }

    /// Marks `row` as holding a disabled entity (`on`) or not; true if
    /// that changed it.
    pub fn set_disabled(&mut self, row: usize, on: bool) -> bool {
        assert!(row < self.len(), "row out of bounds");
        self.disabled.set(row, on)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    #[inline]
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    #[inline]
    pub fn component_ids(&self) -> &[ComponentId] {
        &self.ids
    }

    /// Index of `id`'s column, if this table has one.
    #[inline]
    pub fn column_index(&self, id: ComponentId) -> Option<usize> {
        if let Some(&slot) = self.slots.get(id.index()) {
            return (slot != NO_SLOT).then_some(slot as usize);
        }
        if self
            .ids
            .last()
            .is_none_or(|last| last.index() < self.slots.len())
        {
            // `slots` covers every id up to the largest here.
            return None;
        }
        // Most tables have a handful of columns: a linear scan is cheaper
        // than a binary search there, and its branch predicts well.
        if self.ids.len() <= 8 {
            self.ids.iter().position(|&c| c == id)
        } else {
            self.ids.binary_search(&id).ok()
        }
    }

    #[inline]
    pub fn column(&self, id: ComponentId) -> Option<&Column> {
        let i = self.column_index(id)?;
        debug_assert!(i < self.columns.len());
        // SAFETY: `column_index` answers only positions of `ids`, and
        // `columns` has one column per id (invariant; neither changes after
        // `new`), so `i < columns.len()`: no bounds check on the `get` path.
        Some(unsafe { self.columns.get_unchecked(i) })
    }

    #[inline]
    pub fn column_mut(&mut self, id: ComponentId) -> Option<&mut Column> {
        let i = self.column_index(id)?;
        debug_assert!(i < self.columns.len());
        // SAFETY: as in `column`: `i < columns.len()`.
        Some(unsafe { self.columns.get_unchecked_mut(i) })
    }

    /// The column at `index`, unchecked: for callers that cached an index
    /// from [`Table::column_index`] of this very table.
    ///
    /// # Safety
    /// - `index` was returned by `self.column_index` (a table's columns never
    ///   change after it is made, so such an index stays valid).
    #[inline]
    pub unsafe fn column_unchecked(&self, index: usize) -> &Column {
        debug_assert!(index < self.columns.len());
        // SAFETY: index < columns.len() (contract: it came from
        // `column_index`, and `columns` never changes length).
        unsafe { self.columns.get_unchecked(index) }
    }

    /// The column at `index` (a position in [`Table::component_ids`]),
    /// without a bounds check.
    ///
    /// # Safety
    /// - `index < component_ids().len()`.
    #[inline(always)]
    pub unsafe fn column_at_unchecked_mut(&mut self, index: usize) -> &mut Column {
        debug_assert!(index < self.columns.len());
        // SAFETY: index < columns.len() (contract).
        unsafe { self.columns.get_unchecked_mut(index) }
    }

    /// Writes `entity` as the entity of row `row`, past the length, without
    /// counting it: [`Table::set_len`] does that later.
    ///
    /// # Safety
    /// - `len() <= row < len() + spare_rows()`.
    #[inline(always)]
    pub unsafe fn write_spare_entity(&mut self, row: usize, entity: Entity) {
        debug_assert!(self.entities.len() <= row && row < self.entities.capacity());
        // SAFETY: row < capacity (contract), past the length.
        unsafe { self.entities.as_mut_ptr().add(row).write(entity) };
    }

    /// Appends `entity` as the last row, whose values the caller already
    /// wrote and counted in every column ([`Column::write_spare`] and
    /// [`Column::set_len`]), without a room check. Returns the row.
    ///
    /// # Safety
    /// - `spare_rows() >= 1` before the row's values were appended (so the
    ///   entity list has room);
    /// - every column holds exactly one value more than the table has rows.
    #[inline(always)]
    pub unsafe fn push_entity_unchecked(&mut self, entity: Entity) -> usize {
        let row = self.entities.len();
        debug_assert!(self.columns.iter().all(|c| c.len() == row + 1));
        // SAFETY: the list has room for one more (contract); the slot is
        // written, then counted.
        unsafe {
            self.write_spare_entity(row, entity);
            self.entities.set_len(row + 1);
        }
        row
    }

    /// The entity list's base pointer, for writing rows past its length
    /// within its capacity (as [`Table::write_spare_entity`] does) until
    /// the table next grows.
    #[inline]
    pub fn entity_list_ptr(&mut self) -> *mut Entity {
        self.entities.as_mut_ptr()
    }

    /// Counts the rows up to `len`, written with [`Column::write_spare`]
    /// and [`Table::write_spare_entity`].
    ///
    /// # Safety
    /// - every column's slots and every entity from `len()` to `len` were
    ///   written.
    pub unsafe fn set_len(&mut self, len: usize) {
        for c in self.columns.iter_mut() {
            // SAFETY: forwarded contract.
            unsafe { c.set_len(len) };
        }
        // SAFETY: forwarded contract.
        unsafe { self.entities.set_len(len) };
    }

    /// The column at `index` (a position in [`Table::component_ids`]).
    #[inline]
    pub fn column_at(&self, index: usize) -> &Column {
        &self.columns[index]
    }

    /// How many rows can be added before some column (or the entity list)
    /// must grow.
    pub fn spare_rows(&self) -> usize {
        self.columns
            .iter()
            .map(Column::spare)
            .fold(self.entities.capacity() - self.entities.len(), usize::min)
    }

    #[inline]
    pub fn column_at_mut(&mut self, index: usize) -> &mut Column {
        &mut self.columns[index]
    }

    /// Makes room for `additional` more rows in every column and the
    /// entity list. One compare when the table has room (a spawn loop's
    /// every row but the few that grow it).
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if additional > self.capacity.saturating_sub(self.len()) {
            self.grow(additional);
        }
    }

    /// [`Table::reserve`] past the known room: grows what lacks room
    /// (each column's growth is geometric) and learns the new room.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        self.entities.reserve(additional);
        for c in self.columns.iter_mut() {
            c.reserve(additional);
        }
        self.capacity = self.len() + self.spare_rows();
    }

    /// Makes room for `additional` rows appended a column at a time
    /// ([`Column::reserve_for_append`]): a columnar spawn reserves first,
    /// so that a failure to grow comes before any column has its values.
    pub fn reserve_for_append(&mut self, additional: usize) {
        self.entities.reserve(additional);
        for c in self.columns.iter_mut() {
            c.reserve_for_append(additional);
        }
        self.capacity = self.len() + self.spare_rows();
    }

    /// Starts recording change ticks in the column of `id`, if this table
    /// has one (see [`Column::track_ticks`]).
    pub fn track_ticks(&mut self, id: ComponentId, now: Tick) {
        if let Some(column) = self.column_mut(id) {
            column.track_ticks(now);
            // The new ticks have room for the rows there are, perhaps no
            // more: the known room is what every column has now.
            self.capacity = self.len() + self.spare_rows();
        }
    }

    /// Appends `entity` to a table with no columns (the empty archetype's).
    pub fn push_empty(&mut self, entity: Entity) -> usize {
        assert!(
            self.columns.is_empty(),
            "push_empty on a table with columns"
        );
        // SAFETY: with no columns, the row has no values to push.
        unsafe { self.push_entity(entity) }
    }

    /// Appends `entity` as the last row, whose values the caller has already
    /// pushed to every column ([`Column::push_value`]). Returns the row.
    ///
    /// # Safety
    /// - every column holds exactly one value more than the table has rows.
    #[inline]
    pub unsafe fn push_entity(&mut self, entity: Entity) -> usize {
        debug_assert!(
            self.columns
                .iter()
                .all(|c| c.len() == self.entities.len() + 1)
        );
        self.entities.push(entity);
        self.entities.len() - 1
    }

    /// Appends `entities` as the last rows, whose values the caller has
    /// already pushed to every column (one per entity, in order). Returns
    /// the first new row.
    ///
    /// # Safety
    /// - every column holds exactly `entities.len()` values more than the
    ///   table has rows.
    pub unsafe fn push_entities(&mut self, entities: &[Entity]) -> usize {
        debug_assert!(
            self.columns
                .iter()
                .all(|c| c.len() == self.entities.len() + entities.len())
        );
        let first = self.entities.len();
        self.entities.extend_from_slice(entities);
        first
    }

    /// Where each of this table's columns is in `dst`: the map a row move
    /// from here to `dst` follows ([`Table::move_row`]). Made once per
    /// archetype edge.
    pub fn column_map(&self, dst: &Table) -> ColumnMap {
        let to = self
            .ids
            .iter()
            .map(|&id| dst.column_index(id).map_or(GONE, |j| j as u32))
            .collect();
        ColumnMap {
            src: self.uid,
            dst: dst.uid,
            to,
        }
    }

    /// The positions of the columns of `ids` (in that order) here, or
    /// `None` if this table lacks any of them: where a removal reads the
    /// values it takes out (kept on the archetype edge with the move's
    /// [`ColumnMap`]).
    pub fn column_positions(&self, ids: &[ComponentId]) -> Option<Box<[u32]>> {
        ids.iter()
            .map(|&id| self.column_index(id).map(|i| i as u32))
            .collect()
    }

    /// Moves row `row` to `dst` along `map` (made by
    /// [`Table::column_map`] from this table to `dst`; checked): each value
    /// `dst` has a column for is copied there, and the last row fills the
    /// hole. Values `dst` lacks were moved out by the caller (they are
    /// forgotten here). Columns `dst` has and `self` lacks are left one
    /// value short: the caller pushes those values.
    /// Returns the new row in `dst` and the entity that took `row`'s place
    /// here, if any.
    ///
    /// # Safety
    /// - values of `row` in columns `dst` lacks are already moved out;
    /// - the caller pushes one value to each column of `dst` that `self`
    ///   lacks before `dst` is read.
    ///
    /// Always inlined: whether LLVM inlined it into `remove`'s path was
    /// left to its cost model, which flipped on an unrelated change to
    /// `Column` (the suite's add_remove then ran about 38 instructions a
    /// removal more, the out-of-line copy being less specialised).
    #[inline(always)]
    pub unsafe fn move_row(
        &mut self,
        row: usize,
        dst: &mut Table,
        map: &ColumnMap,
    ) -> (usize, Option<Entity>) {
        assert!(
            map.src == self.uid && map.dst == dst.uid,
            "move_row: the column map is not for these tables"
        );
        let entity = self.entities[row];
        let dst_row = dst.entities.len();
        dst.entities.push(entity);
        if self.disabled.swap_remove(row, self.entities.len()) {
            dst.disabled.set(dst_row, true);
        }
        debug_assert_eq!(map.to.len(), self.columns.len());
        for (i, &to) in map.to.iter().enumerate() {
            // SAFETY: the map was made from this table (its uid, checked
            // above; a table's columns never change), so it has one entry
            // per column: i < columns.len().
            let column = unsafe { self.columns.get_unchecked_mut(i) };
            if to == GONE {
                // SAFETY: row < len (the entity read above); the caller
                // moved the value out (contract).
                unsafe { column.swap_remove_forget(row) };
            } else {
                debug_assert!((to as usize) < dst.columns.len());
                // SAFETY: the map was made to `dst` (uid checked), so `to`
                // is a column of `dst` holding the same component, hence
                // the same type; row < len.
                unsafe { column.move_row_to(row, dst.columns.get_unchecked_mut(to as usize)) };
            }
        }
        self.entities.swap_remove(row);
        (dst_row, self.entities.get(row).copied())
    }

    /// Removes row `row`, whose values the caller moved out (they are
    /// forgotten here), and appends its entity to `empty`, a table with no
    /// columns. Returns the new row in `empty` and the entity that took
    /// `row`'s place here, if any.
    ///
    /// # Safety
    /// - every value of `row` is already moved out.
    pub unsafe fn move_row_to_empty(
        &mut self,
        row: usize,
        empty: &mut Table,
    ) -> (usize, Option<Entity>) {
        assert!(
            empty.columns.is_empty(),
            "move_row_to_empty: the target table has columns"
        );
        let entity = self.entities[row];
        let dst_row = empty.entities.len();
        empty.entities.push(entity);
        if self.disabled.swap_remove(row, self.entities.len()) {
            empty.disabled.set(dst_row, true);
        }
        for column in self.columns.iter_mut() {
            // SAFETY: row < len (the entity read above); the value was
            // moved out (contract).
            unsafe { column.swap_remove_forget(row) };
        }
        self.entities.swap_remove(row);
        (dst_row, self.entities.get(row).copied())
    }

    /// Drops row `row`'s values and removes it. Returns the entity that took
    /// its place, if any.
    ///
    /// # Safety
    /// - `row < len`.
    #[inline(always)]
    pub unsafe fn swap_remove_drop(
        &mut self,
        row: usize,
        panics: &mut DeferredPanic,
    ) -> Option<Entity> {
        for c in self.columns.iter_mut() {
            // SAFETY: row < len.
            unsafe { c.swap_remove_drop(row, panics) };
        }
        self.disabled.swap_remove(row, self.entities.len());
        self.entities.swap_remove(row);
        self.entities.get(row).copied()
    }

    /// Drops every row.
    pub fn clear(&mut self, panics: &mut DeferredPanic) {
        self.entities.clear();
        self.disabled = DisabledRows::default();
        for c in self.columns.iter_mut() {
            c.clear(panics);
        }
    }

    pub fn clamp_ticks(&mut self, now: Tick) {
        for c in self.columns.iter_mut() {
            c.clamp_ticks(now);
        }
    }

    /// Reorders the rows: afterwards row `i` holds what row `order[i]`
    /// held, in every column and in the entity list. The caller updates
    /// the entities' locations.
    ///
    /// Panics, before changing anything, if `order` is not a permutation of
    /// `0..len`.
    pub fn reorder(&mut self, order: &[u32]) {
        assert!(
            is_permutation(order, self.len()),
            "a table reorder needs each of the {} rows exactly once",
            self.len()
        );
        for column in self.columns.iter_mut() {
            // SAFETY: `order` is a permutation of `0..len` (checked above),
            // and every column has `len` values (table invariant).
            unsafe { column.permute(order) };
        }
        self.disabled.reorder(order);
        self.entities = order
            .iter()
            .map(|&from| self.entities[from as usize])
            .collect();
        // The entity list (and tracked columns' ticks) were rebuilt with
        // room for the rows there are only.
        self.capacity = self.len() + self.spare_rows();
    }

    /// Checks the invariants documented on the type; panics on violation.
    pub fn check_invariants(&self) {
        assert!(self.ids.windows(2).all(|w| w[0] < w[1]), "ids not sorted");
        for c in self.columns.iter() {
            assert_eq!(c.len(), self.entities.len(), "column length mismatch");
        }
        assert!(
            self.len() + self.spare_rows() >= self.capacity,
            "a column or the entity list has less room than the table's capacity"
        );
        let set = (0..self.len())
            .filter(|&r| self.disabled.contains(r))
            .count();
        assert_eq!(set, self.disabled.count as usize, "disabled count mismatch");
        assert_eq!(
            self.disabled
                .next_disabled(self.len(), self.disabled.bits.len() * 64),
            self.disabled.bits.len() * 64,
            "a disabled bit past the table's length"
        );
    }
}

/// True if `order` holds each of `0..len` exactly once.
pub(crate) fn is_permutation(order: &[u32], len: usize) -> bool {
    if order.len() != len {
        return false;
    }
    let mut seen = vec![false; len];
    order.iter().all(|&i| {
        let slot = seen.get_mut(i as usize);
        match slot {
            Some(seen) if !*seen => {
                *seen = true;
                true
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::component::Component;

    struct A;
    impl Component for A {}
    struct B;
    impl Component for B {}
    struct C;
    impl Component for C {}

    /// The one-load lookup and the scan a table with large ids falls back
    /// to answer alike, for ids in the table, between, and past its last.
    #[test]
    fn column_index_with_and_without_slots() {
        let mut components = Components::default();
        let a = components.register::<A>();
        let b = components.register::<B>();
        let c = components.register::<C>();
        let ids = [a, c];
        let with = Table::new(&ids, &components);
        let without = Table::with_slot_limit(&ids, &components, 0);
        assert!(!with.slots.is_empty());
        assert!(without.slots.is_empty());
        for table in [&with, &without] {
            assert_eq!(table.column_index(a), Some(0));
            assert_eq!(table.column_index(b), None);
            assert_eq!(table.column_index(c), Some(1));
            assert_eq!(table.column_index(ComponentId::new(c.index() + 1)), None);
            assert_eq!(table.column_index(ComponentId::new(5000)), None);
        }
        let empty = Table::new(&[], &components);
        assert_eq!(empty.column_index(a), None);
    }
}
