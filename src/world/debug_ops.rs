//! Debugging aids: the [`Name`] component with lookup by name, and the
//! per-world [`MemoryReport`].

use std::borrow::Cow;
use std::fmt;

use crate::Component;
use crate::archetype::ArchetypeId;
use crate::entity::Entity;
use crate::world::World;

/// A human-readable name for an entity, for debugging, logs and editors:
/// find it again with [`World::find_by_name`]. Names need not be unique.
/// As Bevy's `Name` (hecs has none).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let boss = world.spawn(Name::new("boss"));
/// assert_eq!(world.find_by_name("boss"), Some(boss));
/// assert_eq!(world.get::<Name>(boss).unwrap().as_str(), "boss");
/// assert_eq!(world.get::<Name>(boss).unwrap().to_string(), "boss");
/// ```
#[derive(Component, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Cow<'static, str>);

impl Name {
    /// A name.
    ///
    /// # Example
    /// ```
    /// let n = mosaic::Name::new(format!("enemy {}", 3));
    /// assert_eq!(n.as_str(), "enemy 3");
    /// ```
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        Name(name.into())
    }

    /// The name as a string slice.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::Name::new("x").as_str(), "x");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Replaces the name.
    ///
    /// # Example
    /// ```
    /// let mut n = mosaic::Name::new("a");
    /// n.set("b");
    /// assert_eq!(n.as_str(), "b");
    /// ```
    pub fn set(&mut self, name: impl Into<Cow<'static, str>>) {
        self.0 = name.into();
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&'static str> for Name {
    fn from(name: &'static str) -> Self {
        Name::new(name)
    }
}

impl From<String> for Name {
    fn from(name: String) -> Self {
        Name::new(name)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A `Name` reads as the `str` it holds, as Bevy's does: `name.len()`,
/// `name.starts_with(..)`, `&*name` where a `&str` is wanted.
///
/// # Example
/// ```
/// let n = mosaic::Name::new("orc 7");
/// assert!(n.starts_with("orc"));
/// let s: &str = &n;
/// assert_eq!(s, "orc 7");
/// ```
impl std::ops::Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl World {
    /// The first entity (in iteration order) whose [`Name`] is `name`.
    /// A scan of every named entity: for debugging and tools, not for a
    /// game's hot path (keep the `Entity` instead). Sees disabled entities
    /// too.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.spawn(Name::new("a"));
    /// let b = world.spawn(Name::new("b"));
    /// assert_eq!(world.find_by_name("b"), Some(b));
    /// assert_eq!(world.find_by_name("c"), None);
    /// ```
    pub fn find_by_name(&self, name: &str) -> Option<Entity> {
        self.entities_named(name).next()
    }

    /// Every entity whose [`Name`] is `name`, in iteration order.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.spawn_batch((0..3).map(|_| Name::new("grunt")));
    /// assert_eq!(world.entities_named("grunt").count(), 3);
    /// ```
    pub fn entities_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Entity> + 'a {
        self.archetypes.iter().flat_map(move |archetype| {
            let names = archetype.column::<Name>().unwrap_or(&[]);
            names
                .iter()
                .zip(archetype.entities())
                .filter(move |(n, _)| n.as_str() == name)
                .map(|(_, &e)| e)
        })
    }

    /// How much heap memory this world's entities and components hold: per
    /// table (archetype) and column, per sparse set, and the total. For
    /// finding what grows; `Display` prints a table, `Debug` the fields.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Position([f32; 3]);
    /// let mut world = World::new();
    /// world.spawn_batch((0..1000).map(|_| Position([0.0; 3])));
    /// let report = world.memory_report();
    /// assert!(report.total_bytes() >= 1000 * 12);
    /// let table = report.tables().iter().find(|t| t.rows == 1000).unwrap();
    /// assert_eq!(table.columns[0].0, "Position");
    /// println!("{report}");
    /// ```
    pub fn memory_report(&self) -> MemoryReport {
        let tables = self
            .archetypes
            .iter()
            .map(|archetype| {
                let (columns, own) = archetype.table.heap_bytes();
                TableMemory {
                    archetype: archetype.id(),
                    rows: archetype.len(),
                    columns: archetype
                        .components()
                        .iter()
                        .zip(columns)
                        .map(|(&id, bytes)| (self.components.name(id).to_owned(), bytes))
                        .collect(),
                    entity_bytes: own,
                }
            })
            .collect();
        let sparse_sets = self
            .sparse
            .iter()
            .map(|(id, set)| {
                let (value_bytes, entity_bytes, index_bytes) = set.heap_bytes_parts();
                SparseSetMemory {
                    component: self.components.name(id).to_owned(),
                    len: set.entities().len(),
                    bytes: value_bytes + entity_bytes + index_bytes,
                    value_bytes,
                    entity_bytes,
                    index_bytes,
                }
            })
            .collect();
        MemoryReport {
            tables,
            sparse_sets,
        }
    }
}

/// One table's share of a [`MemoryReport`].
///
/// # Example
/// ```
/// let world = mosaic::World::new();
/// let report = world.memory_report();
/// assert_eq!(report.tables()[0].rows, 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableMemory {
    /// The table's archetype.
    pub archetype: ArchetypeId,
    /// Entities in it.
    pub rows: usize,
    /// Per column: the component's name and the bytes its values and
    /// change ticks hold.
    pub columns: Vec<(String, usize)>,
    /// Bytes of the table's entity list and bookkeeping.
    pub entity_bytes: usize,
}

impl TableMemory {
    /// Every byte of the table.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert_eq!(world.memory_report().tables()[0].bytes(), 0);
    /// ```
    pub fn bytes(&self) -> usize {
        self.entity_bytes + self.columns.iter().map(|(_, b)| b).sum::<usize>()
    }
}

/// One sparse set's share of a [`MemoryReport`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] #[component(storage = "sparse")] struct Mark;
/// let mut world = World::new();
/// world.spawn(Mark);
/// let report = world.memory_report();
/// assert_eq!(report.sparse_sets()[0].component, "Mark");
/// assert_eq!(report.sparse_sets()[0].len, 1);
/// let set = &report.sparse_sets()[0];
/// assert_eq!(set.bytes, set.value_bytes + set.entity_bytes + set.index_bytes);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparseSetMemory {
    /// The component's name.
    pub component: String,
    /// Entities in the set.
    pub len: usize,
    /// Bytes of values, ticks, entity list and index: the sum of the three
    /// fields below.
    pub bytes: usize,
    /// Of [`bytes`](Self::bytes): the values and their change ticks (ticks
    /// only once a change filter on the type asked for them). Heap memory a
    /// value owns (a `Vec` inside it) is not counted.
    pub value_bytes: usize,
    /// Of [`bytes`](Self::bytes): the dense list of the set's entities (8
    /// bytes each).
    pub entity_bytes: usize,
    /// Of [`bytes`](Self::bytes): the sparse index, one `u32` per entity
    /// index up to the highest in the set.
    pub index_bytes: usize,
}

/// Heap memory of a world's storage, from [`World::memory_report`].
/// Counts allocated capacity, not just what is in use; resources, the
/// entity allocator and caches are not counted.
///
/// # Example
/// ```
/// let world = mosaic::World::new();
/// assert_eq!(world.memory_report().total_bytes(), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    tables: Vec<TableMemory>,
    sparse_sets: Vec<SparseSetMemory>,
}

impl MemoryReport {
    /// Per table, in archetype order.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert_eq!(world.memory_report().tables().len(), 1); // the empty archetype
    /// ```
    pub fn tables(&self) -> &[TableMemory] {
        &self.tables
    }

    /// Per sparse set.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert!(world.memory_report().sparse_sets().is_empty());
    /// ```
    pub fn sparse_sets(&self) -> &[SparseSetMemory] {
        &self.sparse_sets
    }

    /// Every counted byte.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.spawn(());
    /// assert!(world.memory_report().total_bytes() > 0);
    /// ```
    pub fn total_bytes(&self) -> usize {
        self.tables.iter().map(TableMemory::bytes).sum::<usize>()
            + self.sparse_sets.iter().map(|s| s.bytes).sum::<usize>()
    }
}

impl fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "world memory: {} bytes", self.total_bytes())?;
        for t in self.tables.iter().filter(|t| t.bytes() > 0) {
            writeln!(
                f,
                "  table {:>4}  {:>8} rows  {:>10} bytes  (entities {})",
                t.archetype.index(),
                t.rows,
                t.bytes(),
                t.entity_bytes
            )?;
            for (name, bytes) in &t.columns {
                writeln!(f, "      {name:<24} {bytes:>10} bytes")?;
            }
        }
        for s in &self.sparse_sets {
            writeln!(
                f,
                "  sparse {:<18} {:>8} ents  {:>10} bytes  (values {}, entities {}, index {})",
                s.component, s.len, s.bytes, s.value_bytes, s.entity_bytes, s.index_bytes
            )?;
        }
        Ok(())
    }
}
