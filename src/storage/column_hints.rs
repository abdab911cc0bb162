//! Column hints: per component type, the column a lookup by entity last
//! landed in, as a pointer, so that the next lookup in that archetype
//! reaches the value in two dependent loads after the hint (the entity's
//! location, then the column) with no search and no indexing of the
//! archetype list or the table's columns (issue #40).

use std::ptr;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicPtr, Ordering};

use super::Column;
use crate::component::TYPE_CACHE_SLOTS;

/// What every hint names until a lookup remembers a real column: empty, of
/// no component type and in no archetype, so that every check of a hit
/// fails on it. (Lazy: `TypeId::of` is not `const` at the crate's minimum
/// Rust version; a hint keeps the pointer, so lookups never touch the
/// lock.)
static NO_COLUMN: LazyLock<Column> = LazyLock::new(Column::vacant);

/// One hint per slot of the components' type cache (a type's slot is
/// `component::type_slot`, a constant for a type known at compile time):
/// a pointer to the column the last lookup of that slot's type found, or
/// to [`NO_COLUMN`].
///
/// The slot may be shared by several types (the cache is direct-mapped), so
/// a hint is a guess: a hit is sound because the column's own `TypeId` is
/// compared with the asked-for type's and the row with the column's length
/// (`Column::get`, `Column::get_mut_exclusive`); the column's archetype
/// (`Column::archetype`) compared with the entity's makes it the right
/// entity's value. A guess that fails any of these is a miss, which the
/// caller answers by a search.
///
/// Invariant (what makes reading a hint's column sound): every pointer here
/// is [`NO_COLUMN`]'s or one [`ColumnHints::remember`] was given, and its
/// holder keeps every column it gives alive and in place for as long as it
/// keeps these hints. `Archetypes` holds the hints of one world's tables:
/// it never drops a table, and a table's column array is made once and
/// never moves (see `Table::column_ptr`).
///
/// Updated by shared lookups (`World::get` through `&World`, from several
/// threads), hence atomics; one pointer is one atomic, so a reader never
/// sees half of one update and half of another.
pub(crate) struct ColumnHints([AtomicPtr<Column>; TYPE_CACHE_SLOTS]);

impl ColumnHints {
    fn no_column() -> *mut Column {
        // A `'static` shared borrow: nothing ever borrows it mutably.
        ptr::from_ref::<Column>(&NO_COLUMN).cast_mut()
    }

    pub fn new() -> Self {
        ColumnHints(std::array::from_fn(|_| AtomicPtr::new(Self::no_column())))
    }

    /// Remembers `column` as slot `slot`'s hint (a store only when that
    /// changes it: readers of one table on several threads keep the line
    /// shared).
    ///
    /// # Safety
    /// `column` points to a column that stays alive, in place, for as long
    /// as these hints are read (the type's invariant).
    #[inline]
    pub unsafe fn remember(&self, slot: usize, column: *const Column) {
        let hint = &self.0[slot % TYPE_CACHE_SLOTS];
        if hint.load(Ordering::Relaxed).cast_const() != column {
            hint.store(column.cast_mut(), Ordering::Relaxed);
        }
    }

    /// The column slot `slot`'s hint names (perhaps [`NO_COLUMN`]), for a
    /// reader that checks it before using it (its archetype, then
    /// `Column::get`).
    ///
    /// # Safety
    /// The hints' holder keeps every remembered column alive and unmoved for
    /// `'a`, and nothing borrows one mutably during `'a` (the holder's
    /// shared borrow for `'a`).
    #[inline(always)]
    pub unsafe fn column<'a>(&self, slot: usize) -> &'a Column {
        let column = self.0[slot % TYPE_CACHE_SLOTS].load(Ordering::Relaxed);
        // SAFETY: `column` is `NO_COLUMN` (a static) or was remembered, so
        // it is alive and in place for `'a` (the type's invariant and the
        // caller's contract), with no `&mut` to it during `'a`. Its pointer
        // is the column array's own (`Table::column_ptr`), not one derived
        // from a borrow that later `&mut` borrows of the table end.
        unsafe { &*column }
    }

    /// [`ColumnHints::column`] through an exclusive borrow: a plain load,
    /// which (unlike an atomic one) the compiler may share with the loads
    /// around it. The column is for `Column::get_mut_exclusive`.
    ///
    /// # Safety
    /// As for [`ColumnHints::column`].
    #[inline(always)]
    pub unsafe fn column_exclusive<'a>(&mut self, slot: usize) -> &'a Column {
        let column = *self.0[slot % TYPE_CACHE_SLOTS].get_mut();
        // SAFETY: `column` is `NO_COLUMN` (a static) or was remembered, so
        // it is alive and in place for `'a` (the type's invariant and the
        // caller's contract); `&mut self` and the caller's exclusive borrow
        // of the holder rule out any other borrow of it during `'a`.
        unsafe { &*column }
    }

    /// Test hook: forgets every hint (each names [`NO_COLUMN`] again).
    #[cfg(test)]
    pub fn forget(&mut self) {
        for hint in self.0.iter_mut() {
            *hint.get_mut() = Self::no_column();
        }
    }
}

impl Default for ColumnHints {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ColumnHints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self
            .0
            .iter()
            .filter(|h| h.load(Ordering::Relaxed) != Self::no_column())
            .count();
        write!(f, "ColumnHints({set}/{TYPE_CACHE_SLOTS} set)")
    }
}
