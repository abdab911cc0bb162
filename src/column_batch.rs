//! Columnar spawning: many entities' components handed over a column at a
//! time.
//!
//! [`World::spawn_batch`](crate::World::spawn_batch) takes one bundle per
//! entity; a [`ColumnBatch`] takes one `Vec` per component instead, all of
//! the same length, and [`World::spawn_column_batch`] writes each of them
//! into the new entities' table in one move (a column that has nothing
//! allocated yet takes the `Vec`'s buffer as its own, with no copy). This
//! is the shape of data a loader decodes (a file lists each component's
//! values together), and it is how code that knows component types only at
//! run time spawns: each [`BatchColumn`] is type-erased, made from a typed
//! `Vec` where the type is known (a registry's function, say) and handed
//! around as a plain value.
//!
//! A batch checks itself as it is built: every column must hold one value
//! per entity, and no component may appear twice. A column refused leaves
//! the batch as it was; a batch that holds no refused column always spawns.
//!
//! [`World::spawn_column_batches`] spawns several batches at once (entities
//! with different component sets, as a scene has), giving the caller the
//! entities' handles before it builds the batches, so values can refer to
//! the entities being spawned.

use std::any::TypeId;
use std::fmt;

use thiserror::Error;

use crate::component::{Component, ComponentId, Components, StorageType, short_type_name};
use crate::storage::batch::{ErasedColumn, TypedColumn};

/// One component's values for a batch of new entities, one value per
/// entity, with their type erased.
///
/// Made from a `Vec<T>` of any component type ([`BatchColumn::new`], or
/// `From<Vec<T>>`), so code that picks component types at run time can
/// build columns through typed functions it looked up and hand them to a
/// [`ColumnBatch`] without naming the type.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::BatchColumn;
/// #[derive(Component)] struct Health(u32);
/// let column = BatchColumn::new(vec![Health(3), Health(5)]);
/// assert_eq!(column.len(), 2);
/// assert_eq!(column.component_name(), "Health");
/// ```
pub struct BatchColumn {
    values: Box<dyn ErasedColumn>,
    type_id: TypeId,
    name: String,
}

impl BatchColumn {
    /// A column holding `values`, in order.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::BatchColumn;
    /// #[derive(Component)] struct Speed(f32);
    /// let column = BatchColumn::new(Vec::<Speed>::new());
    /// assert!(column.is_empty());
    /// ```
    pub fn new<T: Component>(values: Vec<T>) -> Self {
        BatchColumn {
            values: Box::new(TypedColumn(values)),
            type_id: TypeId::of::<T>(),
            name: short_type_name::<T>(),
        }
    }

    /// Number of values.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// assert_eq!(mosaic::BatchColumn::new(vec![A, A, A]).len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True if the column holds no value.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// assert!(mosaic::BatchColumn::new(Vec::<A>::new()).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The component type's short name (as errors and the world's
    /// [`ComponentInfo::name`](crate::ComponentInfo::name) give it).
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct Mana(u8);
    /// assert_eq!(mosaic::BatchColumn::new(vec![Mana(1)]).component_name(), "Mana");
    /// ```
    pub fn component_name(&self) -> &str {
        &self.name
    }

    /// The component's Rust type id.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct Mana(u8);
    /// let column = mosaic::BatchColumn::new(vec![Mana(1)]);
    /// assert_eq!(column.type_id(), std::any::TypeId::of::<Mana>());
    /// ```
    pub fn type_id(&self) -> TypeId {
        self.type_id
    }

    /// Registers the component type (if needed); returns its id and
    /// storage.
    pub(crate) fn register(&self, components: &mut Components) -> (ComponentId, StorageType) {
        self.values.register(components)
    }

    pub(crate) fn into_erased(self) -> Box<dyn ErasedColumn> {
        self.values
    }
}

impl<T: Component> From<Vec<T>> for BatchColumn {
    fn from(values: Vec<T>) -> Self {
        BatchColumn::new(values)
    }
}

impl fmt::Debug for BatchColumn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchColumn")
            .field("component", &self.name)
            .field("len", &self.len())
            .finish()
    }
}

/// Why a [`ColumnBatch`] refused a column, or
/// [`World::spawn_column_batches`](crate::World::spawn_column_batches) a
/// set of batches. Nothing was changed.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{ColumnBatch, ColumnBatchError};
/// #[derive(Component)] struct A(u8);
/// let mut batch = ColumnBatch::new(2);
/// let error = batch.push(vec![A(1)]).unwrap_err();
/// assert_eq!(error, ColumnBatchError::WrongLength { component: "A".into(), expected: 2, found: 1 });
/// assert_eq!(error.to_string(), "column `A` has 1 values for 2 entities");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ColumnBatchError {
    /// A column's length differs from the batch's number of entities.
    #[error("column `{component}` has {found} values for {expected} entities")]
    WrongLength {
        /// The column's component.
        component: String,
        /// The batch's number of entities.
        expected: usize,
        /// The column's number of values.
        found: usize,
    },
    /// A component was given twice.
    #[error("component `{component}` is in the batch twice")]
    DuplicateColumn {
        /// The component.
        component: String,
    },
    /// A batch's positions and its length differ.
    #[error("a batch of {len} entities was given {positions} positions")]
    WrongPositions {
        /// The batch's number of entities.
        len: usize,
        /// How many positions it was given.
        positions: usize,
    },
    /// A position is past the number of entities spawned.
    #[error("position {position} is past the {count} entities spawned")]
    PositionOutOfRange {
        /// The position.
        position: usize,
        /// The number of entities spawned.
        count: usize,
    },
    /// Two batches (or one batch twice) name the same position.
    #[error("position {position} is in two batches")]
    DuplicatePosition {
        /// The position.
        position: usize,
    },
    /// No batch names a position: every entity spawned needs its
    /// columns (an entity with no component is a batch with no column).
    #[error("no batch names position {position}")]
    MissingPosition {
        /// The first position missing.
        position: usize,
    },
}

/// Components for a batch of new entities, given a column per component:
/// every column holds one value per entity, in the entities' order.
///
/// Build it with [`ColumnBatch::push`] (a typed `Vec`) or
/// [`ColumnBatch::push_column`] (a type-erased [`BatchColumn`]), then spawn
/// it with [`World::spawn_column_batch`](crate::World::spawn_column_batch).
/// A column of the wrong length, or of a component the batch already has,
/// is refused with a [`ColumnBatchError`], and the batch stays as it was.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::ColumnBatch;
/// #[derive(Component, Debug, PartialEq)] struct Position(f32);
/// #[derive(Component, Debug, PartialEq, Clone)] struct Velocity(f32);
///
/// let mut batch = ColumnBatch::new(3);
/// batch.push(vec![Position(0.0), Position(1.0), Position(2.0)]).unwrap();
/// batch.push(vec![Velocity(1.0); 3]).unwrap();
/// let mut world = World::new();
/// let entities = world.spawn_column_batch(batch);
/// assert_eq!(world.get::<Position>(entities[2]), Ok(&Position(2.0)));
/// assert_eq!(world.get::<Velocity>(entities[0]), Ok(&Velocity(1.0)));
/// ```
pub struct ColumnBatch {
    len: usize,
    columns: Vec<BatchColumn>,
}

impl ColumnBatch {
    /// An empty batch for `len` entities: spawned as it is, it makes `len`
    /// entities with no component.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let entities = world.spawn_column_batch(mosaic::ColumnBatch::new(4));
    /// assert_eq!((entities.len(), world.len()), (4, 4));
    /// ```
    pub fn new(len: usize) -> Self {
        ColumnBatch {
            len,
            columns: Vec::new(),
        }
    }

    /// Adds the column of component `T`: `values[i]` goes to the `i`-th
    /// entity. Refused (and the values dropped) if its length is not the
    /// batch's or the batch already has a `T` column.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{ColumnBatch, ColumnBatchError};
    /// #[derive(Component)] struct Level(u8);
    /// let mut batch = ColumnBatch::new(2);
    /// batch.push(vec![Level(1), Level(2)]).unwrap();
    /// assert!(matches!(
    ///     batch.push(vec![Level(3), Level(4)]),
    ///     Err(ColumnBatchError::DuplicateColumn { .. })
    /// ));
    /// assert_eq!(batch.column_count(), 1);
    /// ```
    pub fn push<T: Component>(&mut self, values: Vec<T>) -> Result<&mut Self, ColumnBatchError> {
        self.push_column(BatchColumn::new(values))
    }

    /// Adds a type-erased column, with the checks of [`ColumnBatch::push`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{BatchColumn, ColumnBatch};
    /// #[derive(Component, Debug, PartialEq)] struct Name(String);
    /// let columns: Vec<BatchColumn> = vec![vec![Name("a".into()), Name("b".into())].into()];
    /// let mut batch = ColumnBatch::new(2);
    /// for column in columns {
    ///     batch.push_column(column).unwrap();
    /// }
    /// let mut world = World::new();
    /// let [a, b] = world.spawn_column_batch(batch)[..] else { unreachable!() };
    /// assert_eq!(world.get::<Name>(b), Ok(&Name("b".into())));
    /// ```
    pub fn push_column(&mut self, column: BatchColumn) -> Result<&mut Self, ColumnBatchError> {
        if column.len() != self.len {
            return Err(ColumnBatchError::WrongLength {
                found: column.len(),
                component: column.name,
                expected: self.len,
            });
        }
        if self.columns.iter().any(|c| c.type_id == column.type_id) {
            return Err(ColumnBatchError::DuplicateColumn {
                component: column.name,
            });
        }
        self.columns.push(column);
        Ok(self)
    }

    /// Number of entities the batch spawns.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::ColumnBatch::new(7).len(), 7);
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the batch spawns no entity.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::ColumnBatch::new(0).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of columns (components) added so far.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut batch = mosaic::ColumnBatch::new(1);
    /// batch.push(vec![A]).unwrap();
    /// assert_eq!(batch.column_count(), 1);
    /// ```
    pub fn column_count(&self) -> usize {
        self.columns.len()
    }

    /// The columns, for the world to write.
    pub(crate) fn into_columns(self) -> Vec<BatchColumn> {
        self.columns
    }
}

impl fmt::Debug for ColumnBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ColumnBatch")
            .field("len", &self.len)
            .field("columns", &self.columns)
            .finish()
    }
}
