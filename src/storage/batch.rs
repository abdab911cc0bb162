//! Type-erased columns of values for a batch of new entities.
//!
//! An [`ErasedColumn`] holds `n` values of one component type, one per new
//! entity, behind a trait object: the storage side of the public
//! [`BatchColumn`](crate::BatchColumn). The world writes each column into
//! its table (or sparse set) in one pass, without moving entities between
//! archetypes.
//!
//! The type is checked where the values are written ([`Column::holds`],
//! [`SparseSet::insert_checked`]), so a mismatch panics instead of writing
//! a value into a column of another type.

use super::{Column, DeferredPanic, SparseSet, SparseSets, Table};
use crate::change::Tick;
use crate::component::{Component, ComponentId, Components, StorageType};
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
