//! Type-erased values: columns of them for a batch of new entities, and
//! single values for one entity whose components are chosen at run time.
//!
//! An [`ErasedColumn`] holds `n` values of one component type, one per new
//! entity, behind a trait object: the storage side of the public
//! [`BatchColumn`](crate::BatchColumn). The world writes each column into
//! its table (or sparse set) in one pass, without moving entities between
//! archetypes.
//!
//! An [`ErasedValue`] is one value of a type known at run time (a
//! builder's part, a clone, a made requirement). [`write_erased`] writes a
//! whole set of them for one entity along an archetype insert edge, as
//! `bundle_io` writes a static bundle: the row moves once, to its final
//! archetype, and every value lands there.
//!
//! The type is checked where the values are written ([`Column::holds`],
//! [`SparseSet::insert_checked`]), so a mismatch panics instead of writing
//! a value into a column of another type.

use std::any::TypeId;

use super::parts::{PartSlot, Parts, PartsDrain};
use super::{Column, DeferredPanic, SparseSet, SparseSets, Table};
use crate::archetype::InsertEdge;
use crate::bundle::BundleInfo;
use crate::change::Tick;
use crate::component::{Component, ComponentId, Components, StorageType};
use crate::dynamic::DynamicComponent;
use crate::entity::Entity;

/// Values of one component type for a batch of new entities.
pub(crate) trait ErasedColumn: Send {
    /// Registers the component type (if needed); returns its id and storage.
    fn register(&self, components: &mut Components) -> (ComponentId, StorageType);

    /// Number of values.
    fn len(&self) -> usize;

    /// True if `column` holds this column's type.
    fn fits(&self, column: &Column) -> bool;

    /// Appends every value to `column`, which must hold this column's type
    /// (panics otherwise, before writing anything).
    fn write_table(self: Box<Self>, column: &mut Column, tick: Tick);

    /// Inserts value `i` for `entities[i]` into `set`, which must hold this
    /// column's type (panics otherwise, before writing anything).
    fn write_sparse(
        self: Box<Self>,
        set: &mut SparseSet,
        entities: &[Entity],
        tick: Tick,
        panics: &mut DeferredPanic,
    );
}

/// An [`ErasedColumn`] of `T`s.
#[derive(Debug, Default)]
pub(crate) struct TypedColumn<T>(pub Vec<T>);

impl<T: Component> ErasedColumn for TypedColumn<T> {
    fn register(&self, components: &mut Components) -> (ComponentId, StorageType) {
        (components.register::<T>(), T::STORAGE)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn fits(&self, column: &Column) -> bool {
        column.holds::<T>()
    }

    fn write_table(self: Box<Self>, column: &mut Column, tick: Tick) {
        assert!(
            column.holds::<T>(),
            "batch column type mismatch: not a column of `{}`",
            std::any::type_name::<T>()
        );
        // SAFETY: the column holds `T`s (asserted above).
        unsafe { column.append_vec(self.0, tick) };
    }

    fn write_sparse(
        self: Box<Self>,
        set: &mut SparseSet,
        entities: &[Entity],
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        assert_eq!(entities.len(), self.0.len(), "one value per entity");
        for (&entity, value) in entities.iter().zip(self.0) {
            set.insert_checked(entity, value, tick, panics);
        }
    }
}

/// Appends a row for each of `entities` to `table`, taking the values from
/// `columns` (component id, storage, values): one column per table
/// component of `table` and any number of sparse ones, each with one value
/// per entity. Returns the first new row.
///
/// Panics, before writing anything, if the columns do not cover the table
/// exactly, name a component twice, or hold the wrong number or type of
/// values.
pub(crate) fn write_new_rows(
    table: &mut Table,
    sparse: &mut SparseSets,
    components: &Components,
    columns: Vec<(ComponentId, StorageType, Box<dyn ErasedColumn>)>,
    entities: &[Entity],
    tick: Tick,
    panics: &mut DeferredPanic,
) -> usize {
    let n = entities.len();
    let mut table_ids = Vec::with_capacity(columns.len());
    for (id, storage, values) in &columns {
        assert_eq!(values.len(), n, "batch column: one value per entity");
        if *storage == StorageType::Table {
            let column = table.column(*id).expect("batch component not in the table");
            assert!(values.fits(column), "batch column type mismatch");
            table_ids.push(*id);
        }
    }
    table_ids.sort_unstable();
    assert!(
        table_ids == table.component_ids(),
        "batch columns do not cover the table exactly once"
    );
    for (id, storage, values) in columns {
        match storage {
            StorageType::Table => {
                let column = table.column_mut(id).expect("checked above");
                values.write_table(column, tick);
            }
            StorageType::SparseSet => {
                let set = sparse.get_or_create(id, components);
                values.write_sparse(set, entities, tick, panics);
            }
        }
    }
    // SAFETY: each table column received exactly one batch column (the ids
    // match the table's, which are unique) of `n` values of its type
    // (checked above, before writing), so every column holds `n` values
    // more than the table has rows.
    unsafe { table.push_entities(entities) }
}

impl Column {
    /// The column's values as a slice of `T`s, if it holds `T`s.
    #[inline]
    pub fn as_slice<T: 'static>(&self) -> Option<&[T]> {
        if !self.holds::<T>() {
            return None;
        }
        // SAFETY: the column holds `len` initialised `T`s (checked type;
        // rows below `len` are initialised by the column's invariant), laid
        // out as an array from `base_ptr`, which is aligned and non-null
        // even when nothing is allocated.
        Some(unsafe {
            std::slice::from_raw_parts(self.base_ptr().as_ptr().cast::<T>(), self.len())
        })
    }
}

/// One component value whose type is known only at run time (a builder's
/// part, a clone, a taken value, a made requirement): it writes itself
/// into a column or sparse set of its type. Each method checks the type
/// first and panics, writing nothing, on a mismatch.
pub(crate) trait ErasedValue: Send {
    /// True if `column` holds this value's type.
    fn value_fits(&self, column: &Column) -> bool;

    /// Appends the value (added and changed at `tick`) to `column`, one
    /// value past its table's rows until the caller completes the row.
    fn push_to(self: Box<Self>, column: &mut Column, tick: Tick);

    /// Puts the value in `row` of `column`, dropping the one it replaces
    /// (a panicking drop is kept in `panics`).
    fn replace_in(
        self: Box<Self>,
        column: &mut Column,
        row: usize,
        tick: Tick,
        panics: &mut DeferredPanic,
    );

    /// Stores the value for `entity` in `set`, replacing any it had.
    fn insert_into_set(
        self: Box<Self>,
        set: &mut SparseSet,
        entity: Entity,
        tick: Tick,
        panics: &mut DeferredPanic,
    );
}

impl<T: Component> ErasedValue for T {
    #[inline]
    fn value_fits(&self, column: &Column) -> bool {
        column.holds::<T>()
    }

    #[inline]
    fn push_to(self: Box<Self>, column: &mut Column, tick: Tick) {
        push_erased(*self, column, tick);
    }

    #[inline]
    fn replace_in(
        self: Box<Self>,
        column: &mut Column,
        row: usize,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        replace_erased(*self, column, row, tick, panics);
    }

    #[inline]
    fn insert_into_set(
        self: Box<Self>,
        set: &mut SparseSet,
        entity: Entity,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        set.insert_checked(entity, *self, tick, panics);
    }
}

/// A runtime-defined component's value (its sets hold
/// [`DynamicComponent`]s; it is never in a table).
impl ErasedValue for DynamicComponent {
    fn value_fits(&self, column: &Column) -> bool {
        column.holds::<DynamicComponent>()
    }

    fn push_to(self: Box<Self>, column: &mut Column, tick: Tick) {
        push_erased(*self, column, tick);
    }

    fn replace_in(
        self: Box<Self>,
        column: &mut Column,
        row: usize,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        replace_erased(*self, column, row, tick, panics);
    }

    fn insert_into_set(
        self: Box<Self>,
        set: &mut SparseSet,
        entity: Entity,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        set.insert_checked(entity, *self, tick, panics);
    }
}

/// [`ErasedValue::push_to`] of a `T`.
#[inline]
pub(crate) fn push_erased<T: 'static>(value: T, column: &mut Column, tick: Tick) {
    assert!(column.holds::<T>(), "erased value type mismatch");
    // SAFETY: the column holds `T`s (asserted just above).
    unsafe { column.push_value(value, tick) };
}

/// [`ErasedValue::replace_in`] of a `T`.
#[inline]
pub(crate) fn replace_erased<T: 'static>(
    value: T,
    column: &mut Column,
    row: usize,
    tick: Tick,
    panics: &mut DeferredPanic,
) {
    assert!(column.holds::<T>(), "erased value type mismatch");
    assert!(row < column.len(), "replaced row out of bounds");
    // SAFETY: the column holds `T`s (asserted) and `row < len`
    // (asserted); the old value is owned here from now on.
    let old = unsafe { column.replace_take(row, value, tick) };
    if std::mem::needs_drop::<T>() {
        panics.run(|| drop(old));
    }
}

/// The values of one run-time insert (or spawn), in the order of the
/// bundle a [`ErasedWrite`] names: a [`Parts`](super::parts::Parts)'
/// values, then made requirements as boxes.
pub(crate) struct ErasedValues<'p> {
    pub parts: PartsDrain<'p>,
    pub extra: Vec<Box<dyn ErasedValue>>,
}

impl ErasedValues<'_> {
    fn len(&self) -> usize {
        self.parts.len() + self.extra.len()
    }

    /// True if value `i` fits `column`.
    fn fits(&self, i: usize, column: &Column) -> bool {
        match i.checked_sub(self.parts.len()) {
            None => column.holds_type(self.parts.type_at(i)),
            Some(j) => self.extra[j].value_fits(column),
        }
    }
}

/// The erased values of one insert (or spawn), in the order of the bundle
/// `info` describes (a bundle registered by component list), and the place
/// of the entity they go to.
pub(crate) struct ErasedWrite<'a> {
    pub entity: Entity,
    pub info: &'a BundleInfo,
    pub edge: &'a InsertEdge,
    pub values: ErasedValues<'a>,
}

/// Writes `write.values` into `entity`'s row `row` of `src` (when the
/// insert keeps its archetype: `dst` is `None`) or into a new row of `dst`,
/// the target of `write.edge` from `src`, where the row moves once. Sparse
/// values go to their sets. Returns, for a move, the new row and the entity
/// that took `row`'s place in `src`.
///
/// Every value's type is checked against its column or set before anything
/// changes (a mismatch panics then); after that nothing panics but the
/// drops of replaced values, which `panics` keeps.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_erased(
    src: &mut Table,
    row: usize,
    mut dst: Option<&mut Table>,
    write: ErasedWrite<'_>,
    sparse: &mut SparseSets,
    components: &Components,
    tick: Tick,
    panics: &mut DeferredPanic,
) -> Option<(usize, Option<Entity>)> {
    let ErasedWrite {
        entity,
        info,
        edge,
        values,
    } = write;
    assert!(row < src.len(), "row out of bounds");
    assert_eq!(
        values.len(),
        info.components.len(),
        "one value per component"
    );
    assert_eq!(
        edge.slots.len(),
        info.table_ids.len(),
        "plan is not this bundle's"
    );
    check_erased(src, dst.as_deref(), &values, info, edge, sparse, components);
    let moved = dst.as_deref_mut().map(|dst| {
        // No push below reallocates (nor fails) once the row has moved.
        dst.reserve(1);
        // SAFETY: `row < len` (asserted); `dst` is another table (a
        // distinct `&mut`); an insert edge only adds, so `dst` ⊇ `src` and
        // no value is missing there; the columns `dst` adds are the fresh
        // slots of the edge (checked by `check_erased`), each pushed once
        // in the loop below before anything reads `dst`.
        unsafe { src.move_row(row, dst, &edge.map) }
    });
    let (table, target_row) = match (dst, moved) {
        (Some(dst), Some((new_row, _))) => (dst, new_row),
        _ => (src, row),
    };
    let ErasedValues { mut parts, extra } = values;
    let mut extra = extra.into_iter();
    let mut slots = edge.slots.iter();
    for &(id, storage) in info.components.iter() {
        let from_parts = parts.next_index().is_some();
        match storage {
            StorageType::Table => {
                let &(col, replace) = slots.next().expect("one slot per table component");
                let column = table.column_at_mut(col as usize);
                match (from_parts, replace) {
                    (true, true) => parts.replace_next(column, target_row, tick, panics),
                    (true, false) => parts.push_next(column, tick),
                    (false, true) => extra
                        .next()
                        .expect("one value per component")
                        .replace_in(column, target_row, tick, panics),
                    (false, false) => extra
                        .next()
                        .expect("one value per component")
                        .push_to(column, tick),
                }
            }
            StorageType::SparseSet => {
                let set = sparse.get_or_create(id, components);
                if from_parts {
                    parts.insert_next(set, entity, tick, panics);
                } else {
                    extra
                        .next()
                        .expect("one value per component")
                        .insert_into_set(set, entity, tick, panics);
                }
            }
        }
    }
    moved
}

/// The checks [`write_erased`] makes before it changes anything: each
/// value fits its column or set, and the edge's fresh slots are exactly the
/// columns the target adds to `src` (so the moved row is complete).
fn check_erased(
    src: &Table,
    dst: Option<&Table>,
    values: &ErasedValues<'_>,
    info: &BundleInfo,
    edge: &InsertEdge,
    sparse: &mut SparseSets,
    components: &Components,
) {
    let target = dst.unwrap_or(src);
    let fresh = edge.slots.iter().filter(|&&(_, replace)| !replace).count();
    assert_eq!(
        fresh,
        target.component_ids().len() - src.component_ids().len(),
        "the insert plan does not complete the row"
    );
    if dst.is_none() {
        assert_eq!(fresh, 0, "a write in place only replaces");
    }
    let mut slots = edge.slots.iter();
    for (i, &(id, storage)) in info.components.iter().enumerate() {
        let fits = match storage {
            StorageType::Table => {
                let &(col, _) = slots.next().expect("one slot per table component");
                values.fits(i, target.column_at(col as usize))
            }
            StorageType::SparseSet => values.fits(i, sparse.get_or_create(id, components).column()),
        };
        assert!(fits, "erased value type mismatch");
    }
}

/// Appends a row for the new `entity` to `table`, the target of `edge`
/// from the empty archetype for the bundle `info` describes, holding
/// `parts` (its values in bundle order); sparse values go to their sets.
/// Returns the row. The run-time spawn's write: as a static bundle's, with
/// no row to move.
///
/// Every value's type is checked before anything changes (a mismatch
/// panics then, dropping the values); after that nothing panics.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_new_row(
    table: &mut Table,
    entity: Entity,
    info: &BundleInfo,
    edge: &InsertEdge,
    parts: &mut PartsDrain<'_>,
    sparse: &mut SparseSets,
    components: &Components,
    tick: Tick,
    panics: &mut DeferredPanic,
) -> usize {
    assert_eq!(
        parts.len(),
        info.components.len(),
        "one value per component"
    );
    check_new_row_edge(info, edge, table);
    let mut slots = edge.slots.iter();
    for (&(id, storage), &ty) in info.components.iter().zip(parts.types()) {
        let fits = match storage {
            StorageType::Table => {
                let &(col, replace) = slots.next().expect("one slot per table component");
                !replace && table.column_at(col as usize).holds_type(ty)
            }
            StorageType::SparseSet => sparse.get_or_create(id, components).column().holds_type(ty),
        };
        assert!(fits, "erased value type mismatch");
    }
    // Each push below grows its column as needed; a growth that fails
    // aborts (out of memory), so the row is written whole.
    let mut slots = edge.slots.iter();
    for &(id, storage) in info.components.iter() {
        match storage {
            StorageType::Table => {
                let &(col, _) = slots.next().expect("checked above");
                // SAFETY: values go in order, one per component (the
                // bundle's order, asserted to match the parts' count), so
                // the next value is this component's, whose column was
                // checked above to hold its type.
                unsafe { parts.push_next_unchecked(table.column_at_mut(col as usize), tick) };
            }
            StorageType::SparseSet => {
                let set = sparse.get_or_create(id, components);
                parts.insert_next(set, entity, tick, panics);
            }
        }
    }
    // SAFETY: each of the table's columns (the edge's slots cover them,
    // asserted above, each once: the bundle names a component once) got
    // one value of its type (checked before writing), so each holds one
    // value more than the table has rows.
    unsafe { table.push_entity(entity) }
}

/// How the values of one run-time bundle (a list of Rust types, in order)
/// are written as a new row of their table: [`write_new_row`]'s walk along
/// the bundle and its edge, and its type checks, done once. A world keeps
/// one per list of types it spawned; each spawn of that list finds it
/// ([`NewRowPlan::matching`], one comparison of the type lists) and
/// writes ([`PlannedParts::write_new_row`]): a copy per value.
///
/// Invariants (made by [`NewRowPlan::new`]; the fields are private): for
/// each `i`, `slots[i]` is where a value of type `types[i]` goes; the
/// column positions are distinct, one per column of the table numbered
/// `table`, and each of those columns holds its value's type. (A table's
/// columns never change: the check stays true.)
#[derive(Debug)]
pub(crate) struct NewRowPlan {
    types: Box<[TypeId]>,
    slots: Box<[PartSlot]>,
    /// The [`Table::uid`] of the table checked.
    table: u64,
    /// True if some slot is a sparse set (checked at each write: sets are
    /// not numbered).
    sparse: bool,
    /// With no sparse slot, the column of each slot (for a write without
    /// a branch per value); empty otherwise.
    columns: Box<[u32]>,
}

impl NewRowPlan {
    /// The plan of values of `types` (bundle `info`, in its order) into
    /// `table`, the target of `edge` from the empty archetype. Panics if
    /// the edge is not such a one, or a type does not fit its column.
    pub fn new(
        types: &[TypeId],
        info: &BundleInfo,
        edge: &InsertEdge,
        table: &Table,
    ) -> NewRowPlan {
        assert_eq!(types.len(), info.components.len(), "one type per component");
        check_new_row_edge(info, edge, table);
        let mut edge_slots = edge.slots.iter();
        let slots: Box<[PartSlot]> = info
            .components
            .iter()
            .zip(types)
            .map(|(&(id, storage), &ty)| match storage {
                StorageType::Table => {
                    let &(col, replace) = edge_slots.next().expect("one slot per table component");
                    assert!(!replace, "a new row replaces nothing");
                    assert!(
                        table.column_at(col as usize).holds_type(ty),
                        "erased value type mismatch"
                    );
                    PartSlot::Column(col)
                }
                StorageType::SparseSet => PartSlot::Sparse(id),
            })
            .collect();
        let mut columns: Vec<u32> = slots
            .iter()
            .filter_map(|slot| match *slot {
                PartSlot::Column(col) => Some(col),
                PartSlot::Sparse(_) => None,
            })
            .collect();
        columns.sort_unstable();
        columns.dedup();
        assert_eq!(
            columns.len(),
            table.component_ids().len(),
            "a bundle names each column once"
        );
        let sparse = slots.iter().any(|s| matches!(s, PartSlot::Sparse(_)));
        let columns = if sparse {
            Box::default()
        } else {
            slots
                .iter()
                .filter_map(|slot| match *slot {
                    PartSlot::Column(col) => Some(col),
                    PartSlot::Sparse(_) => None,
                })
                .collect()
        };
        NewRowPlan {
            types: types.into(),
            sparse,
            columns,
            slots,
            table: table.uid(),
        }
    }

    /// `parts`, if their types are this plan's (in order).
    #[inline]
    pub fn matching<'a>(&'a self, parts: &'a mut Parts) -> Option<PlannedParts<'a>> {
        (*self.types == *parts.types()).then_some(PlannedParts { plan: self, parts })
    }
}

/// Parts whose types are those of `plan` (compared when it was made; the
/// parts are borrowed since, so they stay so).
pub(crate) struct PlannedParts<'a> {
    plan: &'a NewRowPlan,
    parts: &'a mut Parts,
}

impl PlannedParts<'_> {
    /// [`write_new_row`] along the plan: appends a row for the new
    /// `entity` to `table` holding the parts (left empty), sparse values
    /// to their sets. Returns the row.
    ///
    /// Panics, before writing anything (the values dropped), if `table`
    /// is not the plan's or a sparse value does not fit its set; after
    /// that nothing panics but a failure to grow (out of memory).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn write_new_row(
        self,
        table: &mut Table,
        entity: Entity,
        sparse: &mut SparseSets,
        components: &Components,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) -> usize {
        let PlannedParts { plan, parts } = self;
        let mut drain = parts.drain();
        assert_eq!(table.uid(), plan.table, "a plan is used with its table");
        if plan.sparse {
            for (slot, &ty) in plan.slots.iter().zip(plan.types.iter()) {
                if let PartSlot::Sparse(id) = *slot {
                    let set = sparse.get_or_create(id, components);
                    assert!(set.column().holds_type(ty), "erased value type mismatch");
                }
            }
            // SAFETY: nothing is moved out yet; the parts' types are the
            // plan's (`matching`) and its slots are one per part; each
            // column slot names a column of `table` (the plan's, by its
            // number) that holds its part's type, each sparse slot a set
            // that does (checked above).
            unsafe {
                drain.write_row(&plan.slots, table, entity, sparse, components, tick, panics)
            };
        } else {
            // SAFETY: as above; with no sparse slot, `columns` is the
            // plan's column of each part, checked (in bounds, holding its
            // type) against this table when the plan was made.
            unsafe { drain.write_columns(&plan.columns, table, tick) };
        }
        drop(drain);
        // SAFETY: the plan's column slots are the table's columns, each
        // once (its invariant): every column got exactly one value, of its
        // type, so each holds one value more than the table has rows.
        unsafe { table.push_entity(entity) }
    }
}

/// Panics unless `edge` (from the empty archetype) covers every column of
/// `table` and belongs to bundle `info`: what a new row's writes (planned
/// or not) rely on to fill each column once.
#[inline]
fn check_new_row_edge(info: &BundleInfo, edge: &InsertEdge, table: &Table) {
    assert_eq!(
        edge.slots.len(),
        table.component_ids().len(),
        "the insert plan does not cover the table"
    );
    assert_eq!(
        edge.slots.len(),
        info.table_ids.len(),
        "plan is not this bundle's"
    );
}
