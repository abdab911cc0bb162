//! Moving whole bundles in and out of storage.
//!
//! Each operation here is complete: when it returns, every slot it created
//! holds a value, so the safe functions below never expose an unwritten slot.
//! They rely on one crate invariant: an insert plan (an archetype
//! [`InsertEdge`]) was computed for this bundle and these tables, so it names
//! one target column per table component of the bundle, and — for a new row —
//! the bundle covers every column of the target table.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::NonNull;

use super::{AbortOnUnwind, DeferredPanic, SparseSets, Table, TakenSlot};
use crate::archetype::{InsertEdge, RemoveEdge};
use crate::bundle::{Bundle, BundleInfo, ComponentReader, ComponentWriter};
use crate::change::Tick;
use crate::component::{Component, ComponentId, Components, StorageType};
use crate::entity::Entity;

/// Writes a bundle into an existing row (replacing) or the row being
/// moved (pushing fresh columns); also the writer of the extras of
/// [`move_and_write_with`] and [`overwrite_row_with`].
pub(crate) struct Writer<'a> {
    entity: Entity,
    row: usize,
    tick: Tick,
    table: &'a mut Table,
    slots: &'a [(u32, bool)],
    components: &'a [(ComponentId, StorageType)],
    registry: &'a Components,
    sparse: &'a mut SparseSets,
    panics: &'a mut DeferredPanic,
    next_component: usize,
    next_slot: usize,
}

impl ComponentWriter for Writer<'_> {
    // Always inlined: out of line, its call and spills cost a one-component
    // table insert ~40 instructions.
    #[inline(always)]
    fn write<C: Component>(&mut self, value: C) {
        match C::STORAGE {
            StorageType::Table => {
                let (col, replace) = self.slots[self.next_slot];
                self.next_slot += 1;
                let column = self.table.column_at_mut(col as usize);
                if replace {
                    assert!(self.row < column.len(), "replaced row out of bounds");
                    column.set_changed(self.row, self.tick);
                    // SAFETY: the plan maps this bundle position to a column
                    // of `C`s (module invariant); a replaced slot is in
                    // bounds (asserted) and holds an initialised `C`.
                    let old = unsafe { column.ptr_at(self.row).cast::<C>().replace(value) };
                    if std::mem::needs_drop::<C>() {
                        self.panics.run(|| drop(old));
                    }
                } else {
                    // SAFETY: the plan maps this bundle position to a column
                    // of `C`s (module invariant).
                    unsafe { column.push_value(value, self.tick) };
                }
            }
            StorageType::SparseSet => {
                let id = self.components[self.next_component].0;
                write_sparse_value(
                    self.sparse,
                    self.registry,
                    id,
                    self.entity,
                    value,
                    self.tick,
                    self.panics,
                );
            }
        }
        self.next_component += 1;
    }
}

/// Stores `value` as `entity`'s sparse component `id` (which is `C`'s id).
#[inline(always)]
fn write_sparse_value<C: Component>(
    sparse: &mut SparseSets,
    registry: &Components,
    id: ComponentId,
    entity: Entity,
    value: C,
    tick: Tick,
    panics: &mut DeferredPanic,
) {
    let set = sparse.get_or_create(id, registry);
    // SAFETY: `id` is the id the bundle reported for this position, which is
    // `C`'s (Bundle contract), so the set holds `C`s.
    unsafe { set.insert_value(entity, value, tick, panics) };
}

/// Writes the components of a bundle made only of sparse components.
pub(crate) struct SparseWriter<'a> {
    entity: Entity,
    tick: Tick,
    components: &'a [(ComponentId, StorageType)],
    registry: &'a Components,
    sparse: &'a mut SparseSets,
    panics: &'a mut DeferredPanic,
    next: usize,
}

impl ComponentWriter for SparseWriter<'_> {
    #[inline(always)]
    fn write<C: Component>(&mut self, value: C) {
        assert!(
            C::STORAGE == StorageType::SparseSet,
            "sparse bundle holds a table component"
        );
        let id = self.components[self.next].0;
        self.next += 1;
        write_sparse_value(
            self.sparse,
            self.registry,
            id,
            self.entity,
            value,
            self.tick,
            self.panics,
        );
    }
}

/// Inserts (or replaces) the components of `bundle`, whose components are
/// all sparse (`info.table_ids` is empty), for `entity`. The entity's table
/// row is untouched: sparse components are not part of its archetype.
#[inline(always)]
pub(crate) fn write_sparse<B: Bundle>(
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    ctx: &mut WriteCtx<'_>,
) {
    write_sparse_with(entity, bundle, info, ctx, |_| {});
}

/// [`write_sparse`], then the components `extras` writes (the rest of
/// `info`, in its order). `extras` must not panic.
#[inline(always)]
pub(crate) fn write_sparse_with<B: Bundle>(
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    ctx: &mut WriteCtx<'_>,
    extras: impl FnOnce(&mut SparseWriter<'_>),
) {
    assert!(info.table_ids.is_empty(), "not a sparse-only bundle");
    let mut writer = SparseWriter {
        entity,
        tick: ctx.tick,
        components: &info.components,
        registry: ctx.components,
        sparse: ctx.sparse,
        panics: ctx.panics,
        next: 0,
    };
    bundle.write_components(&mut writer);
    extras(&mut writer);
    assert_eq!(
        writer.next,
        info.components.len(),
        "the extras did not complete the bundle"
    );
}

/// Writes `bundle` into `row` of `table`, the target of `edge`: replaced
/// components are overwritten in place, fresh ones pushed to their columns
/// (which the caller left one value short for this row).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn write_row<B: Bundle>(
    table: &mut Table,
    row: usize,
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    edge: &InsertEdge,
    ctx: &mut WriteCtx<'_>,
    extras: impl FnOnce(&mut Writer<'_>),
) -> bool {
    let mut writer = Writer {
        entity,
        row,
        tick: ctx.tick,
        table,
        slots: &edge.slots,
        components: &info.components,
        registry: ctx.components,
        sparse: ctx.sparse,
        panics: ctx.panics,
        next_component: 0,
        next_slot: 0,
    };
    bundle.write_components(&mut writer);
    extras(&mut writer);
    debug_assert_eq!(writer.next_slot, edge.slots.len());
    // Every slot written: the extras (dynamic, unlike a bundle type) are
    // checked by the callers that take them.
    writer.next_slot == edge.slots.len() && writer.next_component == info.components.len()
}

/// What every write needs besides the tables.
pub(crate) struct WriteCtx<'a> {
    pub components: &'a Components,
    pub sparse: &'a mut SparseSets,
    pub panics: &'a mut DeferredPanic,
    pub tick: Tick,
}

/// Appends new rows to one table, all for one bundle type: the plan is
/// checked once, then each [`NewRows::push`] writes one row.
///
/// Rows are written past the table's length and counted in bulk (when room
/// runs out, at [`NewRows::finish`], or on drop if a panic unwinds), so the
/// loop over rows stores no lengths.
///
/// Invariants: rows `table.len() .. table.len() + written` are complete
/// (every column and the entity written); every column and the entity list
/// have room for `room` rows past those.
pub(crate) struct NewRows<'t, 'c, B> {
    table: &'t mut Table,
    info: &'t BundleInfo,
    edge: &'t InsertEdge,
    ctx: WriteCtx<'c>,
    written: usize,
    room: usize,
    /// See [`direct_columns`]; refreshed whenever the table grows.
    direct: Option<DirectColumns>,
    bundle: std::marker::PhantomData<fn(B)>,
}

/// How many table components a bundle may have for [`NewRows`] to write
/// them through [`DirectColumns`].
const DIRECT_COLUMNS: usize = 16;

/// Per table component of a bundle, in bundle order: the base pointer of
/// its column's values.
type DirectColumns = [NonNull<u8>; DIRECT_COLUMNS];

/// The value arrays of the columns `slots` name, in bundle order, if no
/// column tracks ticks (whose arrays would need writing too) and there are
/// at most [`DIRECT_COLUMNS`]. Valid until a column grows.
fn direct_columns(table: &Table, slots: &[(u32, bool)]) -> Option<DirectColumns> {
    if slots.len() > DIRECT_COLUMNS {
        return None;
    }
    let mut out = [NonNull::dangling(); DIRECT_COLUMNS];
    for (ptr, &(col, _)) in out.iter_mut().zip(slots) {
        let column = table.column_at(col as usize);
        if column.is_tracked() {
            return None;
        }
        *ptr = column.base_ptr();
    }
    Some(out)
}

/// Checks that `edge` writes exactly `table`'s columns and that it is the
/// plan of the bundle `info` describes. Two compares, inlined (a spawn
/// loop pays them per entity); the failure is out of line.
#[inline(always)]
fn check_plan(table: &Table, info: &BundleInfo, edge: &InsertEdge) {
    let slots = edge.slots.len();
    if slots != table.component_ids().len() || slots != info.table_ids.len() {
        plan_mismatch(table, info, edge);
    }
}

#[cold]
#[inline(never)]
fn plan_mismatch(table: &Table, info: &BundleInfo, edge: &InsertEdge) -> ! {
    assert_eq!(
        edge.slots.len(),
        table.component_ids().len(),
        "insert plan does not cover the table"
    );
    panic!(
        "insert plan is not this bundle's: {} slots for {} table components",
        edge.slots.len(),
        info.table_ids.len()
    );
}

impl<'t, 'c, B: Bundle> NewRows<'t, 'c, B> {
    /// `edge` must lead from the empty archetype to `table`'s archetype for
    /// `B`, which `info` describes.
    pub fn new(
        table: &'t mut Table,
        info: &'t BundleInfo,
        edge: &'t InsertEdge,
        ctx: WriteCtx<'c>,
    ) -> Self {
        check_plan(table, info, edge);
        assert!(
            edge.slots.iter().all(|&(_, replace)| !replace),
            "a new row replaces nothing"
        );
        let room = table.spare_rows();
        let direct = direct_columns(table, &edge.slots);
        NewRows {
            table,
            info,
            edge,
            ctx,
            written: 0,
            room,
            direct,
            bundle: std::marker::PhantomData,
        }
    }

    /// The row the next [`NewRows::push`] writes.
    #[inline]
    pub fn next_row(&self) -> usize {
        self.table.len() + self.written
    }

    /// Appends a row for `entity` holding `bundle`; returns the row.
    #[inline]
    pub fn push(&mut self, entity: Entity, bundle: B) -> usize {
        if self.room == 0 {
            self.grow();
        }
        let row = self.table.len() + self.written;
        if let Some(columns) = &self.direct {
            write_direct(
                bundle,
                entity,
                row,
                columns,
                self.info,
                &mut self.ctx,
                self.edge,
            );
            return self.end_row(row, entity);
        }
        let mut writer = NewRowWriter::<false> {
            entity,
            row,
            tick: self.ctx.tick,
            table: &mut *self.table,
            slots: &self.edge.slots,
            components: &self.info.components,
            registry: self.ctx.components,
            sparse: &mut *self.ctx.sparse,
            panics: &mut *self.ctx.panics,
            next_component: 0,
            next_slot: 0,
        };
        bundle.write_components(&mut writer);
        debug_assert_eq!(writer.next_slot, self.edge.slots.len());
        self.end_row(row, entity)
    }

    /// [`NewRows::push`]es a row per bundle, for the entity `entity_for`
    /// returns given the row (called just before the row is written).
    ///
    /// Through [`DirectColumns`], rows are written in runs as long as the
    /// room: the row counter, the column pointers and the entity list's
    /// pointer are locals for a run, so the loop keeps them in registers
    /// (stores through raw column pointers would otherwise make the
    /// compiler reload `self` after every value).
    #[inline]
    pub fn push_all(
        &mut self,
        mut bundles: impl Iterator<Item = B>,
        mut entity_for: impl FnMut(usize) -> Entity,
    ) {
        /// Counts a run's rows into `written`/`room` when the run ends,
        /// also when user code (the iterator) unwinds out of it.
        struct Run<'a> {
            written: &'a mut usize,
            room: &'a mut usize,
            done: usize,
        }
        impl Drop for Run<'_> {
            #[inline]
            fn drop(&mut self) {
                *self.written += self.done;
                *self.room -= self.done;
            }
        }

        loop {
            let Some(columns) = self.direct else {
                for bundle in bundles {
                    let entity = entity_for(self.next_row());
                    self.push(entity, bundle);
                }
                return;
            };
            let first = self.table.len() + self.written;
            let len = self.room;
            let entity_list = self.table.entity_list_ptr();
            let mut run = Run {
                written: &mut self.written,
                room: &mut self.room,
                done: 0,
            };
            while run.done < len {
                let Some(bundle) = bundles.next() else {
                    return;
                };
                let row = first + run.done;
                let entity = entity_for(row);
                write_direct(
                    bundle,
                    entity,
                    row,
                    &columns,
                    self.info,
                    &mut self.ctx,
                    self.edge,
                );
                // SAFETY: `row` = len + written + done < len + written +
                // room, within the entity list's spare capacity (`NewRows`
                // invariant), and the list has not moved since
                // `entity_list_ptr` (only `grow` reallocates). Every column
                // of the row was written just above (the plan names each
                // once), so counting it (`done`) keeps the invariant.
                unsafe { entity_list.add(row).write(entity) };
                run.done += 1;
            }
            drop(run);
            // The room is used up: grow only if another bundle comes
            // (`push` grows, and refreshes the column pointers).
            let Some(bundle) = bundles.next() else {
                return;
            };
            let entity = entity_for(self.next_row());
            self.push(entity, bundle);
        }
    }

    /// Completes row `row` (its values written) with its entity.
    #[inline(always)]
    fn end_row(&mut self, row: usize, entity: Entity) -> usize {
        // SAFETY: row = len + written < len + written + room (room > 0), so
        // it is within the entity list's spare capacity.
        unsafe { self.table.write_spare_entity(row, entity) };
        // The plan names every column once (checked in `new`; bundles
        // naming a type twice are refused), so the writer wrote one value
        // to each: the row is complete.
        self.written += 1;
        self.room -= 1;
        row
    }

    /// Counts the rows written so far.
    #[inline]
    fn commit(&mut self) {
        if self.written > 0 {
            let len = self.table.len() + self.written;
            // SAFETY: rows up to `len` are complete (type invariant).
            unsafe { self.table.set_len(len) };
            self.written = 0;
        }
    }

    /// Makes room for more rows: geometric growth, as pushing one by one
    /// would do.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.commit();
        self.table.reserve(1);
        self.room = self.table.spare_rows();
        self.direct = direct_columns(self.table, &self.edge.slots);
        assert!(self.room > 0, "table did not grow");
    }

    /// Counts every row written; the table is complete again.
    pub fn finish(mut self) {
        self.commit();
    }
}

impl<B> Drop for NewRows<'_, '_, B> {
    /// A panic unwinding past the rows (the batch's iterator is user code)
    /// keeps the complete ones.
    fn drop(&mut self) {
        if self.written > 0 {
            let len = self.table.len() + self.written;
            // SAFETY: rows up to `len` are complete (type invariant).
            unsafe { self.table.set_len(len) };
            self.written = 0;
        }
    }
}

/// Writes `bundle`'s values for `entity` into row `row` through `columns`
/// (table components) and the sparse sets: one row of [`NewRows::push`] or
/// [`NewRows::push_all`], which count it.
#[inline(always)]
fn write_direct<B: Bundle>(
    bundle: B,
    entity: Entity,
    row: usize,
    columns: &DirectColumns,
    info: &BundleInfo,
    ctx: &mut WriteCtx<'_>,
    edge: &InsertEdge,
) {
    let mut writer = DirectWriter {
        entity,
        row,
        tick: ctx.tick,
        columns,
        components: &info.components,
        registry: ctx.components,
        sparse: &mut *ctx.sparse,
        panics: &mut *ctx.panics,
        next_component: 0,
        next_slot: 0,
    };
    bundle.write_components(&mut writer);
    debug_assert_eq!(writer.next_slot, edge.slots.len());
}

/// [`NewRowWriter`] through [`DirectColumns`]: each table value is one
/// typed store.
struct DirectWriter<'a> {
    entity: Entity,
    row: usize,
    tick: Tick,
    columns: &'a DirectColumns,
    components: &'a [(ComponentId, StorageType)],
    registry: &'a Components,
    sparse: &'a mut SparseSets,
    panics: &'a mut DeferredPanic,
    next_component: usize,
    next_slot: usize,
}

impl ComponentWriter for DirectWriter<'_> {
    #[inline(always)]
    fn write<C: Component>(&mut self, value: C) {
        match C::STORAGE {
            StorageType::Table => {
                let base = self.columns[self.next_slot];
                self.next_slot += 1;
                // SAFETY: `base` is the value array of the column of this
                // bundle position's component, `C` (module invariant; Bundle
                // contract), untracked, and not reallocated since
                // `direct_columns` read it (only `NewRows::grow` grows the
                // table, and refreshes them). `row` is past the column's
                // length and within its capacity, written once (`NewRows`
                // invariants), so the slot is in bounds, aligned for `C`
                // (the array is laid out for `C`s) and free.
                unsafe { base.as_ptr().cast::<C>().add(self.row).write(value) };
            }
            StorageType::SparseSet => {
                let id = self.components[self.next_component].0;
                write_sparse_value(
                    self.sparse,
                    self.registry,
                    id,
                    self.entity,
                    value,
                    self.tick,
                    self.panics,
                );
            }
        }
        self.next_component += 1;
    }
}

/// Writes one new row: every table component goes to slot `row` of its
/// column (which has room for it), sparse ones go to their sets.
///
/// With `COUNTED` (the writer of [`push_row_with`] and of its extras),
/// each column counts its value as it is written, so the row needs no
/// pass over the columns afterwards; [`NewRowWriter::abandon`] drops them
/// again. Without it (a [`NewRows`] row), the values stay past the
/// columns' lengths, for `NewRows` to count in bulk.
pub(crate) struct NewRowWriter<'a, const COUNTED: bool = true> {
    entity: Entity,
    row: usize,
    tick: Tick,
    table: &'a mut Table,
    slots: &'a [(u32, bool)],
    components: &'a [(ComponentId, StorageType)],
    registry: &'a Components,
    sparse: &'a mut SparseSets,
    panics: &'a mut DeferredPanic,
    next_component: usize,
    next_slot: usize,
}

impl<const COUNTED: bool> ComponentWriter for NewRowWriter<'_, COUNTED> {
    #[inline(always)]
    fn write<C: Component>(&mut self, value: C) {
        match C::STORAGE {
            StorageType::Table => {
                // The plan has one slot per table component of the bundle
                // (checked by `NewRows::new` and `push_row_with`), and the
                // bundle writes as many (Bundle contract).
                let (col, _) = self.slots[self.next_slot];
                self.next_slot += 1;
                // SAFETY: slots name columns of this table (they were made
                // from its component list: the module invariant); the
                // column holds `C`s, the component at this bundle position.
                let column = unsafe { self.table.column_at_unchecked_mut(col as usize) };
                // SAFETY: `row` is the table's next row (`push_row_with`)
                // or one past it (`NewRows`), at or past the column's
                // length and within its room (the callers reserved it), and
                // written once: the plan names each column once. Counted,
                // the column's length becomes `row + 1` (every slot below
                // holds a value: the table's rows, and this one).
                unsafe {
                    column.write_spare(self.row, value, self.tick);
                    if COUNTED {
                        column.set_len(self.row + 1);
                    }
                }
            }
            StorageType::SparseSet => {
                let id = self.components[self.next_component].0;
                write_sparse_value(
                    self.sparse,
                    self.registry,
                    id,
                    self.entity,
                    value,
                    self.tick,
                    self.panics,
                );
            }
        }
        self.next_component += 1;
    }
}

/// [`push_row_with`] with no extras: one [`World::spawn`]'s row, one value
/// pushed per column, without [`NewRows`]' batch set-up (column pointers,
/// room counting), which costs more than the row for a single entity.
///
/// [`World::spawn`]: crate::World::spawn
#[inline]
pub(crate) fn push_row<B: Bundle>(
    table: &mut Table,
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    edge: &InsertEdge,
    ctx: &mut WriteCtx<'_>,
) -> usize {
    push_row_with(table, entity, bundle, info, edge, ctx, |_| {})
}

/// Appends a row for `entity` to `table`, the target of `edge` from the
/// empty archetype for the bundle `info` describes: `bundle`'s values, then
/// those `extras` writes (the rest of `info`, in its order: the required
/// components a spawn brings). Returns the row.
///
/// `extras` runs user code (constructors) and may panic: then every value
/// already written for the row is dropped once, the table is as before
/// and the panic goes on.
#[inline]
pub(crate) fn push_row_with<B: Bundle>(
    table: &mut Table,
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    edge: &InsertEdge,
    ctx: &mut WriteCtx<'_>,
    extras: impl FnOnce(&mut NewRowWriter<'_>),
) -> usize {
    check_plan(table, info, edge);
    table.reserve(1);
    let row = table.len();
    let mut writer = NewRowWriter {
        entity,
        row,
        tick: ctx.tick,
        table,
        slots: &edge.slots,
        components: &info.components,
        registry: ctx.components,
        sparse: &mut *ctx.sparse,
        panics: &mut *ctx.panics,
        next_component: 0,
        next_slot: 0,
    };
    // Each column counts its value as it comes: until the entity is
    // pushed below, anything that unwinds must take them out again. (With
    // no extras and no sparse component, nothing here can unwind and the
    // catch compiles away.)
    let written = catch_unwind(AssertUnwindSafe(|| {
        bundle.write_components(&mut writer);
        extras(&mut writer);
    }));
    if let Err(payload) = written {
        writer.abandon();
        resume_unwind(payload);
    }
    if writer.next_slot != edge.slots.len() || writer.next_component != info.components.len() {
        writer.abandon();
        panic!("the extras did not complete the row");
    }
    // SAFETY: `reserve(1)` left room for one row; every column of the row
    // was written and counted once (the plan names each column once, and
    // all slots were used: checked above), so each holds one value more
    // than the table has rows.
    unsafe { writer.table.push_entity_unchecked(entity) }
}

impl NewRowWriter<'_> {
    /// Drops the values written so far for this row, whose entity was not
    /// pushed: the table and the sparse sets are as before the row.
    #[cold]
    fn abandon(self) {
        // The first panic is already unwinding: further ones (drops) are
        // caught and dropped.
        let mut panics = DeferredPanic::new();
        for &(col, _) in &self.slots[..self.next_slot] {
            let column = self.table.column_at_mut(col as usize);
            // SAFETY: this writer wrote and counted slot `row` of this
            // column (each column once, in slot order), so it is the
            // column's last value, and dropped once here.
            unsafe { column.swap_remove_drop(self.row, &mut panics) };
        }
        for &(id, storage) in &self.components[..self.next_component] {
            if storage == StorageType::SparseSet {
                if let Some(set) = self.sparse.get_mut(id) {
                    set.remove_drop(self.entity, &mut panics);
                }
            }
        }
        drop(panics);
    }
}

/// Moves `src_row` of `src` to a new row of `dst` (the target of `edge`) and
/// writes `bundle` there. Returns the new row and the entity that took
/// `src_row`'s place in `src`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn move_and_write<B: Bundle>(
    src: &mut Table,
    src_row: usize,
    dst: &mut Table,
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    edge: &InsertEdge,
    ctx: &mut WriteCtx<'_>,
) -> (usize, Option<Entity>) {
    assert!(src_row < src.len(), "row out of bounds");
    // SAFETY: `dst` ⊇ `src` (an insert edge only adds), so nothing is
    // missing; the columns `dst` adds are exactly the bundle's fresh table
    // components, which `write_row` pushes right below.
    let (row, swapped) = unsafe { src.move_row(src_row, dst, &edge.map) };
    write_row(dst, row, entity, bundle, info, edge, ctx, |_| {});
    (row, swapped)
}

/// [`move_and_write`], then the components `extras` writes (the rest of
/// `info`, in its order: required components an insert brings). `extras`
/// must not panic (the values are made beforehand).
#[allow(clippy::too_many_arguments)]
pub(crate) fn move_and_write_with<B: Bundle>(
    src: &mut Table,
    src_row: usize,
    dst: &mut Table,
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    edge: &InsertEdge,
    ctx: &mut WriteCtx<'_>,
    extras: impl FnOnce(&mut Writer<'_>),
) -> (usize, Option<Entity>) {
    assert!(src_row < src.len(), "row out of bounds");
    // SAFETY: as in `move_and_write`: the columns `dst` adds are exactly
    // the fresh table components of `info` (bundle and extras), which
    // `write_row` pushes right below (and checks it did).
    let (row, swapped) = unsafe { src.move_row(src_row, dst, &edge.map) };
    let complete = write_row(dst, row, entity, bundle, info, edge, ctx, extras);
    // A fresh column left unwritten would be read uninitialised.
    assert!(complete, "the extras did not complete the row");
    (row, swapped)
}

/// [`overwrite_row`], then the components `extras` writes (sparse ones: a
/// pure replace adds no table component). `extras` must not panic.
#[allow(clippy::too_many_arguments)]
pub(crate) fn overwrite_row_with<B: Bundle>(
    table: &mut Table,
    row: usize,
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    edge: &InsertEdge,
    ctx: &mut WriteCtx<'_>,
    extras: impl FnOnce(&mut Writer<'_>),
) {
    assert!(row < table.len(), "row out of bounds");
    assert!(
        edge.slots.iter().all(|&(_, replace)| replace),
        "not a pure replace"
    );
    let complete = write_row(table, row, entity, bundle, info, edge, ctx, extras);
    assert!(complete, "the extras did not complete the row");
}

/// Writes `bundle` into `row` of `table` when the insert does not change the
/// archetype (every table component is a replace).
pub(crate) fn overwrite_row<B: Bundle>(
    table: &mut Table,
    row: usize,
    entity: Entity,
    bundle: B,
    info: &BundleInfo,
    edge: &InsertEdge,
    ctx: &mut WriteCtx<'_>,
) {
    assert!(row < table.len(), "row out of bounds");
    assert!(
        edge.slots.iter().all(|&(_, replace)| replace),
        "not a pure replace"
    );
    write_row(table, row, entity, bundle, info, edge, ctx, |_| {});
}

struct Reader<'a> {
    entity: Entity,
    row: usize,
    table: &'a Table,
    /// Per table component of the bundle, in bundle order: its column.
    taken: &'a [u32],
    components: &'a [(ComponentId, StorageType)],
    sparse: &'a mut SparseSets,
    next_component: usize,
    next_slot: usize,
}

// SAFETY: `take` reads the component at the current bundle position from its
// column of the table row (the removal edge names it) or from its sparse set,
// which `take_bundle` checked are present.
unsafe impl ComponentReader for Reader<'_> {
    #[inline]
    unsafe fn take<C: Component>(&mut self) -> C {
        let id = self.components[self.next_component].0;
        self.next_component += 1;
        match C::STORAGE {
            StorageType::Table => {
                let col = self.taken[self.next_slot];
                self.next_slot += 1;
                let column = self.table.column_at(col as usize);
                // SAFETY: the edge's `taken` names, per table component of
                // the bundle, that component's column in this table (checked
                // in `take_bundle`: the edge leads from this table and is the
                // bundle's), so it holds `C`s; row < len (checked by
                // `take_bundle`); the caller forgets the slot afterwards.
                // `C`'s own size strides the array (no load of the layout).
                unsafe { column.base_ptr().as_ptr().cast::<C>().add(self.row).read() }
            }
            StorageType::SparseSet => take_sparse_value::<C>(self.sparse, id, self.entity),
        }
    }
}

/// Moves `entity`'s sparse component `id` (which is `C`'s id) out.
#[inline(always)]
fn take_sparse_value<C: Component>(sparse: &mut SparseSets, id: ComponentId, entity: Entity) -> C {
    let set = sparse.get_mut(id).expect("checked present");
    // SAFETY: `id` is the id the bundle reported for this position, which is
    // `C`'s (Bundle contract), so the set holds `C`s.
    unsafe { set.remove_value::<C>(entity) }.expect("checked present")
}

/// How many components of a sparse-only bundle [`find_sparse`] remembers the
/// place of; later ones (rare: bundles are small) are looked up again.
const SPARSE_SLOTS: usize = 8;

/// Where each of a sparse-only bundle's values sits for one entity, found by
/// [`find_sparse`]: per bundle position, the set's slot in [`SparseSets`] and
/// the value's dense index there.
pub(crate) struct SparseSlots {
    slots: [(u32, u32); SPARSE_SLOTS],
}

/// Finds every component of `info` (a sparse-only bundle) for `entity`, or
/// returns the first one it lacks.
#[inline(always)]
pub(crate) fn find_sparse(
    entity: Entity,
    info: &BundleInfo,
    sparse: &SparseSets,
) -> Result<SparseSlots, ComponentId> {
    let mut slots = [(0, 0); SPARSE_SLOTS];
    for (i, &(id, _)) in info.components.iter().enumerate() {
        let found = sparse.find(id, entity).ok_or(id)?;
        if let Some(slot) = slots.get_mut(i) {
            *slot = found;
        }
    }
    Ok(SparseSlots { slots })
}

/// Takes the components of a bundle made only of sparse components.
struct SparseReader<'a> {
    entity: Entity,
    components: &'a [(ComponentId, StorageType)],
    sparse: &'a mut SparseSets,
    slots: &'a SparseSlots,
    next: usize,
}

// SAFETY: `take` moves the component at the current bundle position out of
// its sparse set, where `find_sparse` found one for the entity.
unsafe impl ComponentReader for SparseReader<'_> {
    #[inline(always)]
    unsafe fn take<C: Component>(&mut self) -> C {
        let i = self.next;
        self.next += 1;
        let (slot, dense) = match self.slots.slots.get(i) {
            Some(&found) => found,
            None => self
                .sparse
                .find(self.components[i].0, self.entity)
                .expect("checked present"),
        };
        // SAFETY: the slot holds the set of the component at position `i`,
        // `C`'s (Bundle contract), so the set holds `C`s. The dense index
        // is still this entity's: only other sets (a bundle names each type
        // once) changed since `find_sparse`, and `remove_at` checks it.
        unsafe {
            self.sparse
                .slot_mut(slot)
                .remove_at::<C>(dense as usize, self.entity)
        }
    }
}

/// Moves the components of `B`, all sparse (`info.table_ids` is empty), out
/// of `entity`'s sparse sets, from the places `find_sparse` found with no
/// structural change since. The entity's table row is untouched.
#[inline(always)]
pub(crate) fn take_sparse<B: Bundle>(
    entity: Entity,
    info: &BundleInfo,
    sparse: &mut SparseSets,
    slots: &SparseSlots,
) -> B {
    assert!(info.table_ids.is_empty(), "not a sparse-only bundle");
    let mut reader = SparseReader {
        entity,
        components: &info.components,
        sparse,
        slots,
        next: 0,
    };
    // SAFETY: every position of a sparse-only bundle names a sparse set that
    // holds a value for the entity (found by `find_sparse`), and the reader
    // yields that value.
    unsafe { B::take_components(&mut reader) }
}

/// True if `entity` has every sparse component of the bundle `info`
/// describes.
pub(crate) fn has_sparse_parts(entity: Entity, info: &BundleInfo, sparse: &SparseSets) -> bool {
    info.components.iter().all(|&(id, storage)| {
        storage == StorageType::Table || sparse.get(id).is_some_and(|s| s.contains(entity))
    })
}

/// Moves `bundle`'s values out of `row` of `table` (and the sparse sets), then
/// moves the row to `dst` (the archetype without them, the target of `edge`),
/// or leaves it if the bundle has no table components. Returns the bundle, and
/// for a move the new row and the entity that took the old row's place.
///
/// The table components' presence is the edge's (`edge.taken`); the sparse
/// ones' is checked here. The caller has checked both already (for its error):
/// a missing component panics here, before anything changes.
#[inline]
pub(crate) fn take_bundle<B: Bundle>(
    table: &mut Table,
    row: usize,
    dst: Option<&mut Table>,
    edge: &RemoveEdge,
    entity: Entity,
    info: &BundleInfo,
    sparse: &mut SparseSets,
) -> (B, Option<(usize, Option<Entity>)>) {
    assert!(row < table.len(), "row out of bounds");
    assert!(
        edge.bundle == info.id && edge.map.is_from(table),
        "take_bundle: the edge is not this bundle's from this table"
    );
    let taken = edge
        .taken
        .as_deref()
        .expect("take_bundle: component missing");
    debug_assert_eq!(taken.len(), info.table_ids.len());
    assert!(
        info.components.len() == info.table_ids.len() || has_sparse_parts(entity, info, sparse),
        "take_bundle: component missing"
    );
    assert_eq!(
        dst.is_some(),
        !info.table_ids.is_empty(),
        "take_bundle: bad target"
    );
    let mut reader = Reader {
        entity,
        row,
        table,
        taken,
        components: &info.components,
        sparse,
        next_component: 0,
        next_slot: 0,
    };
    // SAFETY: presence of every component checked above (the table ones by
    // the edge); Reader yields the component named at each position.
    let bundle = unsafe { B::take_components(&mut reader) };
    let moved = dst.map(|dst| {
        // SAFETY: the values `dst` lacks are exactly the bundle's table
        // components, moved out just above; `dst` ⊆ `table`, so no slot of
        // the new row is left unwritten.
        unsafe { table.move_row(row, dst, &edge.map) }
    });
    (bundle, moved)
}

/// Moves every value of `row` of `table` out through `take` (called with
/// each column's component id and the row's value there, as a
/// [`TakenSlot`]), then moves the emptied row to `empty`, a table with no
/// columns. Returns the new row in `empty` and the entity that took `row`'s
/// place in `table`. Nothing is dropped: a value `take` leaves is leaked. A
/// panic in `take` aborts (a value it read would be owned twice).
pub(crate) fn take_row(
    table: &mut Table,
    row: usize,
    empty: &mut Table,
    mut take: impl FnMut(ComponentId, TakenSlot<'_>),
) -> (usize, Option<Entity>) {
    assert!(row < table.len(), "row out of bounds");
    assert!(
        empty.component_ids().is_empty(),
        "take_row: the target table has columns"
    );
    let guard = AbortOnUnwind("moving an entity's values out of its table");
    for (i, &id) in table.component_ids().iter().enumerate() {
        // SAFETY: row < len (checked above); `move_row_to_empty` below forgets the
        // row's value in every column, and nothing reads it before.
        take(id, unsafe { TakenSlot::new(table.column_at(i), row) });
    }
    std::mem::forget(guard);
    // SAFETY: every value of the row was moved out (or is left, leaked)
    // just above; `empty` has no columns to fill (checked there too).
    unsafe { table.move_row_to_empty(row, empty) }
}

/// Drops `row` of `table`. Returns the entity that took its place.
/// Always inlined (with [`Table::swap_remove_drop`]): a despawn is mostly
/// this, and with two callers the compiler stopped inlining it (+12%
/// instructions a plain despawn, in callgrind).
#[inline(always)]
pub(crate) fn drop_row(
    table: &mut Table,
    row: usize,
    panics: &mut DeferredPanic,
) -> Option<Entity> {
    assert!(row < table.len(), "row out of bounds");
    // SAFETY: row < len (checked).
    unsafe { table.swap_remove_drop(row, panics) }
}
