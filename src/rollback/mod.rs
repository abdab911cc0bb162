//! Rollback: save a world's state as a [`Snapshot`], put it back with
//! [`World::restore`](crate::World::restore), compare states with
//! [`World::checksum`](crate::World::checksum), keep the last frames in a
//! [`SnapshotRing`].
//!
//! Rollback netcode (predict, receive a late input, restore the state of
//! a few frames ago, re-simulate) saves and restores the whole game state
//! every frame, so both must cost little more than copying the bytes, and
//! a restore must not look, to the systems that run after it, like the
//! world was rebuilt.
//!
//! # What is saved
//!
//! - The entity allocator: every slot's generation, which slots are live,
//!   the free list. After a restore the next spawns get the ids they got
//!   the first time.
//! - Every component of a type registered with
//!   [`World::register_rollback`](crate::World::register_rollback) (or
//!   `register_rollback_unhashed`, `register_rollback_hashed`), or declared
//!   with `#[component(rollback)]` on its derive (registered in every
//!   world that uses it, with no call), table or sparse, column by column:
//!   a clone of the column, one `memcpy` for a `Copy` type. The order of
//!   the rows is saved too (it is the order queries visit them). The type
//!   needs `Clone`; [`World::checksum`](crate::World::checksum) hashes it
//!   through its `Hash` impl, or, for a derived type that is not `Hash`
//!   (it holds floats), field by field, floats by their bits (the derive
//!   tells which).
//! - [`Disabled`](crate::Disabled) and the hierarchy
//!   ([`ChildOf`](crate::ChildOf) edges, each parent's
//!   [`Children`](crate::Children) in order), always.
//! - The resources registered with
//!   [`World::register_rollback_resource`](crate::World::register_rollback_resource).
//! - The edges of the relations registered with
//!   [`World::register_rollback_relation`](crate::World::register_rollback_relation),
//!   with the order of each target's sources.
//!
//! # Taking a snapshot
//!
//! [`World::snapshot`](crate::World::snapshot) (and `snapshot_into`,
//! `snapshot_after`, [`SnapshotRing::save`]) takes `&World`: a function
//! or a system that reads the world can save it, and nothing is
//! registered or applied on the way. That holds because:
//!
//! - a `#[component(rollback)]` type joins the rolled back types the
//!   moment the world first registers it (a spawn, an insert, a query),
//!   with change ticks from the start, and so does `Disabled`; the
//!   hierarchy is saved even before anything is registered;
//! - ids reserved and not yet applied (a command buffer's spawns,
//!   [`World::reserve_entity`](crate::World::reserve_entity)) are saved as
//!   the flush that applies them will leave the world: a reserved entity
//!   as live and empty, a spawn command's id as reserved for it (its
//!   entity is not in the snapshot: a restore despawns it), a dropped
//!   command's id as given up. A restore, and the spawns after it, go as
//!   if the world had been flushed before the snapshot;
//! - the change tick is an atomic counter: the snapshot moves it on, so
//!   anything written afterwards is newer.
//!
//! A component type registered for rollback after a snapshot was taken is
//! not in that snapshot: a restore leaves its values as they are, unless
//! the type was first used after the snapshot (it had no value then: a
//! restore removes it, as any registered component added since).
//!
//! Components of other types are not part of the state: a restore leaves
//! their values as they are, except on entities it despawns (spawned after
//! the snapshot) or spawns again (despawned since). It lists their types in
//! [`RestoreReport::unregistered`] rather than failing: a world always
//! holds some bookkeeping no game wants rolled back (names, debug
//! markers), and a missing registration shows up in that list. The edges
//! of unregistered relations are left as they are too, except those of
//! the entities a restore despawns: an entity of the snapshot tied to one
//! of those by an `on_target_despawn = "despawn"` relation loses the edge,
//! never its life (and one tied by a `"refuse"` relation keeps that entity
//! alive: [`RollbackError::DespawnRefused`]).
//!
//! Announcements are not part of the state either: the events in
//! [`Events<E>`](crate::Events) (an unregistered resource) and the
//! removals [`RemovedComponents`](crate::RemovedComponents) reads stay as
//! they are, so a removal made after the snapshot, announced then, is
//! still read by a reader that had not read it (and the restore, adding
//! the component back, announces that addition).
//!
//! # What a restore announces
//!
//! A restore undoes, with as little work as the change ticks allow:
//!
//! - **Values** written since the snapshot (their change tick is newer)
//!   are put back and marked changed at the current tick, so `Changed<T>`
//!   reports exactly those rows; rows nobody wrote keep their values and
//!   their ticks (in a stretch of rows mostly written, the values of a
//!   type without drop glue are copied back whole: an unwritten row gets
//!   the value it holds already). No hook or observer runs for a value put
//!   back (as for any write through `&mut T`).
//! - **Structure** that differs (entities spawned or despawned since the
//!   snapshot, registered components added or removed) is undone through
//!   the world's ordinary operations, so `Added<T>` fires only for
//!   components the restore had to add, removals are announced in
//!   [`RemovedComponents`](crate::RemovedComponents), and hooks and
//!   observers see a despawn, an insert, a removal, as what they are. Table
//!   rows (and sparse sets) are then put back in the snapshot's order.
//!   An entity gets back exactly the registered components it had: a
//!   requirement (`#[require(..)]`) that is a registered component is not
//!   made by a restore's insert (the snapshot says whether the entity had
//!   it); one that is not registered is made as on any insert.
//!   A restore puts back values, not the ticks of additions: a component
//!   removed and inserted again after the snapshot (on an entity that
//!   lived through) keeps its new `Added` tick, so to a system that last
//!   ran before that insert it is added (and, its value put back,
//!   changed), as it was before the restore.
//! - **Relation edges** that changed are rebuilt (unrelate, relate) and
//!   their observers run; unchanged relations are not touched.
//!
//! What those hooks and observers do stays done: a value they write into a
//! registered component is put back with the others, but a component they
//! insert or remove, or a relation they edit, is part of the world after
//! the restore, and an entity they spawn or despawn makes it fail
//! ([`RollbackError::Entities`]). An observer that reacts to `OnAdd` by
//! changing the game state would do it again on every rollback: react to
//! the inputs instead, or keep such observers out of the rolled-back world.
//!
//! A hook or observer that panics during a restore does not stop it
//! halfway: the change that ran it goes as that operation goes when its
//! callback panics (a despawn whose `OnRemove` observer panics does not
//! happen, and the entity stays), every other step still runs, and the
//! first panic is raised again when the restore is done. Restoring the
//! same snapshot again, once the callback no longer fails, completes it.
//!
//! A registered component's `Clone` that panics stops a restore where it
//! is (the panic goes on): every entity is whole and the world consistent,
//! between the two states, and restoring the same snapshot again completes
//! it. A snapshot whose `Clone` panics is not made (see
//! [`World::snapshot_into`](crate::World::snapshot_into) for one written
//! in place).
//!
//! # Cost
//!
//! A snapshot copies every registered column and entity list. A
//! [`SnapshotRing`] shares with the previous frame's snapshot every column
//! nobody wrote in between (and every unchanged entity list, and the
//! allocator's state if no entity was spawned, despawned or moved), and
//! copies the others into the buffers of the snapshot it drops, as
//! [`World::snapshot_into`](crate::World::snapshot_into) does: no new
//! memory (whose page faults would cost more than the copy) once full. A
//! restore compares each table's entity list with the saved one (unless no
//! entity moved), skips the blocks of rows nobody wrote (a bound per 8
//! rows), and copies back only the written rows of the others; a stretch of
//! mostly written blocks of a `Copy`-like type is copied back as one slice,
//! its change ticks marked in one pass.
//!
//! # Example
//! ```
//! use mosaic::prelude::*;
//! #[derive(Component, Clone, Hash, Debug, PartialEq)]
//! struct Pos(i32);
//! // Registered by its derive: no call needed.
//! #[derive(Component, Clone, Copy, Debug, PartialEq)]
//! #[component(rollback)]
//! struct Vel(f32);
//! let mut world = World::new();
//! world.register_rollback::<Pos>();
//! let a = world.spawn((Pos(1), Vel(0.5)));
//! let saved = world.snapshot();
//! let sum = world.checksum();
//!
//! world.get_mut::<Pos>(a).unwrap().0 = 5;
//! world.get_mut::<Vel>(a).unwrap().0 = 2.0;
//! let b = world.spawn(Pos(2));
//! assert_ne!(world.checksum(), sum);
//!
//! let report = world.restore(&saved).unwrap();
//! assert_eq!(world.get::<Pos>(a), Ok(&Pos(1)));
//! assert_eq!(world.get::<Vel>(a), Ok(&Vel(0.5)));
//! assert!(!world.contains(b));
//! assert_eq!(world.checksum(), sum);
//! assert_eq!(report.rows_restored, 2);
//! assert!(report.unregistered.is_empty());
//! assert_eq!(world.spawn(Pos(2)), b); // the same id as the first time
//! ```

mod checksum;
mod ring;

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::{Arc, LazyLock};

use rustc_hash::FxHashMap;
use thiserror::Error;

use crate::archetype::ArchetypeId;
use crate::change::Tick;
use crate::component::{ComponentId, StorageType};
use crate::entity::Entity;
use crate::world::{RestoreEntitiesError, WorldId};

pub(crate) use checksum::StableHasher;
pub use ring::SnapshotRing;

/// A saved column or value: a `Vec<T>` (or a `T`) behind an `Arc`, shared
/// between the snapshots of a [`SnapshotRing`] while nobody writes it.
pub(crate) type Saved = Arc<dyn Any + Send + Sync>;

/// A world's state, as [`World::snapshot`](crate::World::snapshot) saved
/// it, for [`World::restore`](crate::World::restore). See the
/// [module documentation](self) for what it holds.
///
/// A snapshot belongs to the world that took it: restoring it elsewhere is
/// refused ([`RollbackError::WrongWorld`]). Cloning one is cheap (its
/// columns are shared).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Clone, Hash)] struct Hp(u32);
/// let mut world = World::new();
/// world.register_rollback::<Hp>();
/// world.spawn(Hp(3));
/// let saved = world.snapshot();
/// assert_eq!(saved.entity_count(), 1);
/// ```
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) world: WorldId,
    /// The change tick the snapshot was taken at: values written later
    /// carry a newer one.
    pub(crate) tick: Tick,
    /// The allocator's slots and free list: shared with the snapshot a
    /// [`SnapshotRing`] took before if no entity was spawned, despawned or
    /// moved in between (the same `structure`).
    pub(crate) slots: Arc<Vec<(u32, bool)>>,
    pub(crate) free: Arc<Vec<u32>>,
    /// The entities' version when it was taken: if the world's is still
    /// the same, no entity was spawned, despawned or moved since, and a
    /// restore skips comparing entity lists and allocator state.
    pub(crate) structure: u64,
    pub(crate) live: usize,
    pub(crate) tables: Vec<TableSnapshot>,
    /// Per archetype index: the position of its table in `tables`.
    pub(crate) table_of: Vec<Option<u32>>,
    /// One per registered sparse component, in registration order.
    pub(crate) sparse: Vec<SparseSnapshot>,
    /// One per registered resource, in registration order.
    pub(crate) resources: Vec<Option<Saved>>,
    /// One per registered relation, in registration order.
    pub(crate) relations: Vec<Saved>,
    /// How many components were registered when it was taken (those
    /// registered later are not in it).
    pub(crate) components_known: usize,
    /// How many component types the world knew when it was taken: a type
    /// registered for rollback later but first used later too had no
    /// value then, so a restore removes it.
    pub(crate) component_types: usize,
}

#[derive(Clone)]
pub(crate) struct TableSnapshot {
    pub archetype: ArchetypeId,
    pub entities: Arc<[Entity]>,
    pub columns: Vec<SavedColumn>,
}

#[derive(Clone)]
pub(crate) struct SavedColumn {
    /// Registration index of the component.
    pub component: usize,
    pub values: Saved,
    /// Bytes of values saved.
    pub bytes: usize,
}

#[derive(Clone)]
pub(crate) struct SparseSnapshot {
    pub component: usize,
    pub entities: Arc<[Entity]>,
    pub values: SavedColumn,
}

/// True if `a` and `b` list the same entities in the same order: a
/// branch-free compare of their bits a block at a time (vector code),
/// where `==` on the slices stops to branch at every entity.
pub(crate) fn same_entities(a: &[Entity], b: &[Entity]) -> bool {
    const BLOCK: usize = 32;
    if a.len() != b.len() {
        return false;
    }
    let (ablocks, bblocks) = (a.chunks_exact(BLOCK), b.chunks_exact(BLOCK));
    let tails = ablocks.remainder() == bblocks.remainder();
    tails
        && ablocks.zip(bblocks).all(|(x, y)| {
            x.iter().zip(y).fold(true, |same, (x, y)| {
                same & (x.index() == y.index()) & (x.generation() == y.generation())
            })
        })
}

/// The `structure` of [`Snapshot::empty`]: no world's entities reach this
/// version, and a restore refuses a snapshot that has it
/// ([`RollbackError::Incomplete`]).
pub(crate) const NOT_TAKEN: u64 = u64::MAX;

/// The `structure` of a snapshot taken with reservations pending (saved as
/// the flush that applies them leaves the world): that flush changes the
/// entities' version, so no world's entities are "unmoved" since it. A
/// version no world reaches either, and not [`NOT_TAKEN`].
pub(crate) const UNFLUSHED: u64 = u64::MAX - 1;

/// The empty allocator lists of [`Snapshot::empty`], allocated once.
static NO_SLOTS: LazyLock<Arc<Vec<(u32, bool)>>> = LazyLock::new(Arc::default);
static NO_FREE: LazyLock<Arc<Vec<u32>>> = LazyLock::new(Arc::default);

impl Snapshot {
    /// A snapshot of nothing, holding no allocation of its own: what
    /// [`World::snapshot_into`](crate::World::snapshot_into) leaves in
    /// place while it takes the old one apart (and leaves there if a
    /// `Clone` panics meanwhile: a restore refuses it).
    pub(crate) fn empty(world: WorldId) -> Self {
        Snapshot {
            world,
            tick: Tick::new(0),
            slots: NO_SLOTS.clone(),
            free: NO_FREE.clone(),
            // No world's entities reach this version: never "unmoved".
            structure: NOT_TAKEN,
            live: 0,
            tables: Vec::new(),
            table_of: Vec::new(),
            sparse: Vec::new(),
            resources: Vec::new(),
            relations: Vec::new(),
            components_known: 0,
            component_types: 0,
        }
    }

    /// How many live entities it holds.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.spawn(());
    /// assert_eq!(world.snapshot().entity_count(), 1);
    /// ```
    pub fn entity_count(&self) -> usize {
        self.live
    }

    /// The change tick it was taken at: a value whose change tick is newer
    /// was written after it.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// let saved = world.snapshot();
    /// assert!(world.change_tick().get() > saved.tick().get());
    /// ```
    pub fn tick(&self) -> Tick {
        self.tick
    }

    /// Bytes of saved values and entity lists it holds (counting shared
    /// columns in full).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Hash)] struct Hp(u64);
    /// let mut world = World::new();
    /// world.register_rollback::<Hp>();
    /// world.spawn_batch((0..10).map(Hp));
    /// assert!(world.snapshot().saved_bytes() >= 10 * 8);
    /// ```
    pub fn saved_bytes(&self) -> usize {
        let tables: usize = self
            .tables
            .iter()
            .map(|t| {
                t.entities.len() * std::mem::size_of::<Entity>()
                    + t.columns.iter().map(|c| c.bytes).sum::<usize>()
            })
            .sum();
        let sparse: usize = self
            .sparse
            .iter()
            .map(|s| s.entities.len() * std::mem::size_of::<Entity>() + s.values.bytes)
            .sum();
        tables + sparse + self.slots.len() * 8 + self.free.len() * 4
    }

    /// How many columns this snapshot shares with `other` (the same
    /// allocation, not a copy): what a [`SnapshotRing`] saves.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Hash)] struct Hp(u32);
    /// let mut world = World::new();
    /// world.register_rollback::<Hp>();
    /// world.spawn(Hp(1));
    /// let a = world.snapshot();
    /// let b = world.snapshot_after(&a);
    /// assert_eq!(b.shared_columns(&a), 1);
    /// ```
    pub fn shared_columns(&self, other: &Snapshot) -> usize {
        let mut n = 0;
        for t in &self.tables {
            let Some(o) = other.table(t.archetype) else {
                continue;
            };
            for c in &t.columns {
                if o.columns
                    .iter()
                    .any(|oc| oc.component == c.component && Arc::ptr_eq(&c.values, &oc.values))
                {
                    n += 1;
                }
            }
        }
        for (s, o) in self.sparse.iter().zip(&other.sparse) {
            if Arc::ptr_eq(&s.values.values, &o.values.values) {
                n += 1;
            }
        }
        n
    }

    pub(crate) fn table(&self, archetype: ArchetypeId) -> Option<&TableSnapshot> {
        let i = (*self.table_of.get(archetype.index())?)?;
        Some(&self.tables[i as usize])
    }

    pub(crate) fn live_at(&self, e: Entity) -> bool {
        self.slots.get(e.index() as usize) == Some(&(e.generation(), true))
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("tick", &self.tick)
            .field("entities", &self.live)
            .field("tables", &self.tables.len())
            .field("sparse_sets", &self.sparse.len())
            .field("resources", &self.resources.len())
            .field("relations", &self.relations.len())
            .finish()
    }
}

/// What [`World::restore`](crate::World::restore) did.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Clone, Hash)] struct Hp(u32);
/// #[derive(Component)] struct Label;
/// let mut world = World::new();
/// world.register_rollback::<Hp>();
/// let e = world.spawn((Hp(3), Label));
/// let saved = world.snapshot();
/// world.get_mut::<Hp>(e).unwrap().0 = 1;
/// let report = world.restore(&saved).unwrap();
/// assert_eq!(report.rows_restored, 1);
/// assert_eq!(report.unregistered, ["Label"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreReport {
    /// Component values put back (rows written since the snapshot, plus
    /// those of re-added components).
    pub rows_restored: usize,
    /// Entities spawned after the snapshot, despawned by the restore.
    pub despawned: usize,
    /// Entities despawned after the snapshot, spawned again with their ids.
    pub respawned: usize,
    /// Registered components added back to, or removed from, entities that
    /// lived through (each one an ordinary insert or removal, announced).
    pub components_changed: usize,
    /// Resources put back, inserted or removed.
    pub resources_restored: usize,
    /// Relations whose edges were rebuilt.
    pub relations_rebuilt: usize,
    /// Names of the component types present in the world that are not
    /// registered for rollback (their values were left as they are),
    /// sorted.
    pub unregistered: Vec<String>,
}

/// Why [`World::restore`](crate::World::restore) refused a snapshot.
///
/// # Example
/// ```
/// use mosaic::{RollbackError, World};
/// let a = World::new();
/// let saved = a.snapshot();
/// let mut b = World::new();
/// assert!(matches!(b.restore(&saved), Err(RollbackError::WrongWorld)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RollbackError {
    /// The snapshot was taken from another world (component ids and
    /// archetypes are per world). Nothing was changed.
    #[error("the snapshot was taken from another world")]
    WrongWorld,
    /// The snapshot holds no state: a
    /// [`World::snapshot_into`](crate::World::snapshot_into) that was
    /// writing it did not finish (a registered component's `Clone`
    /// panicked). Nothing was changed; taking it again makes it whole.
    #[error("the snapshot holds no state: taking it did not finish")]
    Incomplete,
    /// The entity allocator could not be put back: a hook or observer run
    /// by the restore spawned or despawned entities, or a command buffer
    /// holds ids reserved and not yet applied. The components and
    /// relations were restored; the allocator was not.
    #[error("the entity allocator could not be restored: {0}")]
    Entities(#[from] RestoreEntitiesError),
    /// An entity spawned after the snapshot could not be despawned: it is
    /// the target of an unregistered relation that refuses despawn, whose
    /// source is an entity of the snapshot (a source spawned since goes
    /// with it). Everything else was restored but the entity allocator;
    /// unrelate the source and restore again to complete it.
    #[error("entity {0:?} (spawned after the snapshot) refuses despawn")]
    DespawnRefused(Entity),
}

/// A hashing function for the checksum: `World::checksum` calls it per
/// entity (true if the entity has the component). Not part of the API:
/// what [`Component::rollback_hash`](crate::Component) returns.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct RollbackHash(pub(crate) HashFn);

pub(crate) type HashFn = fn(&crate::World, Entity, &mut StableHasher) -> bool;

impl fmt::Debug for RollbackHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RollbackHash")
    }
}

/// The derive's choice of [`RollbackHash`]: the type's `Hash` impl if it
/// has one, else none (method resolution on `&&HashProbe<T>` tries
/// `ViaHash`, implemented for `&HashProbe<T>` when `T: Hash`, first). Not
/// part of the API.
#[doc(hidden)]
pub struct HashProbe<T>(pub std::marker::PhantomData<T>);

#[doc(hidden)]
pub trait ViaHash {
    fn rollback_hash(&self) -> Option<RollbackHash>;
}

impl<T: crate::Component + std::hash::Hash> ViaHash for &HashProbe<T> {
    fn rollback_hash(&self) -> Option<RollbackHash> {
        Some(RollbackHash(crate::world::hash_component::<T>))
    }
}

#[doc(hidden)]
pub trait ViaNoHash {
    fn rollback_hash(&self) -> Option<RollbackHash>;
}

impl<T> ViaNoHash for HashProbe<T> {
    fn rollback_hash(&self) -> Option<RollbackHash> {
        None
    }
}

/// The derive's checksum for a type that is not `Hash` as a whole: field
/// by field, each field through its `Hash` impl or, for a float, its bits
/// (see [`BitHash`]). `#[derive(Component)]` implements it for a struct
/// or enum without generics; [`FieldProbe`] tells whether every field can
/// be hashed. Not part of the API.
#[doc(hidden)]
pub trait HashFields {
    /// Feeds every field, in declaration order (an enum's variant index
    /// first), to `h`.
    fn hash_fields(&self, h: &mut dyn std::hash::Hasher);
}

impl RollbackHash {
    /// The checksum of `T` through its [`HashFields`] impl (what the
    /// derive picks when `T` is not `Hash` but each field can be hashed).
    pub fn fields<T: crate::Component + HashFields>() -> Self {
        RollbackHash(crate::world::hash_component_fields::<T>)
    }
}

/// How a field's value goes into the checksum when the field's type is
/// not `Hash`: floats by their bits (every NaN as the same quiet NaN, so
/// that platforms whose arithmetic makes NaNs with different payloads
/// agree; `-0.0` and `0.0` differ, as they behave differently), and
/// arrays, tuples, `Option`s, `Vec`s and boxed slices of such values.
/// Integers, `bool` and `char` are here too, so that a tuple mixing them
/// with floats is covered. Not part of the API: the derive uses it
/// through [`FieldProbe`].
#[doc(hidden)]
pub trait BitHash {
    /// Feeds the value to `h`.
    fn bit_hash(&self, h: &mut dyn std::hash::Hasher);
}

impl BitHash for f32 {
    fn bit_hash(&self, h: &mut dyn std::hash::Hasher) {
        h.write_u32(if self.is_nan() {
            0x7FC0_0000
        } else {
            self.to_bits()
        });
    }
}

impl BitHash for f64 {
    fn bit_hash(&self, h: &mut dyn std::hash::Hasher) {
        h.write_u64(if self.is_nan() {
            0x7FF8_0000_0000_0000
        } else {
            self.to_bits()
        });
    }
}

macro_rules! bit_hash_via_hash {
    ($($t:ty),*) => {$(
        impl BitHash for $t {
            fn bit_hash(&self, mut h: &mut dyn std::hash::Hasher) {
                std::hash::Hash::hash(self, &mut h);
            }
        }
    )*};
}
bit_hash_via_hash!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, bool, char
);

impl<T: BitHash, const N: usize> BitHash for [T; N] {
    fn bit_hash(&self, h: &mut dyn std::hash::Hasher) {
        self.iter().for_each(|v| v.bit_hash(h));
    }
}

impl<T: BitHash> BitHash for Vec<T> {
    fn bit_hash(&self, h: &mut dyn std::hash::Hasher) {
        self.as_slice().bit_hash(h);
    }
}

impl<T: BitHash> BitHash for [T] {
    fn bit_hash(&self, h: &mut dyn std::hash::Hasher) {
        h.write_usize(self.len());
        self.iter().for_each(|v| v.bit_hash(h));
    }
}

impl<T: BitHash + ?Sized> BitHash for Box<T> {
    fn bit_hash(&self, h: &mut dyn std::hash::Hasher) {
        (**self).bit_hash(h);
    }
}

impl<T: BitHash> BitHash for Option<T> {
    fn bit_hash(&self, h: &mut dyn std::hash::Hasher) {
        match self {
            None => h.write_u8(0),
            Some(v) => {
                h.write_u8(1);
                v.bit_hash(h);
            }
        }
    }
}

macro_rules! bit_hash_tuple {
    ($(($($name:ident),+)),*) => {$(
        impl<$($name: BitHash),+> BitHash for ($($name,)+) {
            #[allow(non_snake_case)]
            fn bit_hash(&self, h: &mut dyn std::hash::Hasher) {
                let ($($name,)+) = self;
                $($name.bit_hash(h);)+
            }
        }
    )*};
}
bit_hash_tuple!(
    (A),
    (A, B),
    (A, B, C),
    (A, B, C, D),
    (A, B, C, D, E),
    (A, B, C, D, E, F)
);

/// How the derive hashes one field of type `F` (see [`HashFields`]):
/// method resolution on `&&&FieldProbe<F>` tries `F`'s `Hash` impl
/// ([`ViaFieldHash`]), then [`BitHash`] ([`ViaFieldBits`]), then gives up
/// ([`ViaFieldNone`]: the whole type is then left out of the checksum).
/// Not part of the API.
#[doc(hidden)]
pub struct FieldProbe<F>(pub std::marker::PhantomData<F>);

/// A field's hashing function, if it has one (see [`FieldProbe`]).
#[doc(hidden)]
pub type FieldHashFn<F> = fn(&F, &mut dyn std::hash::Hasher);

#[doc(hidden)]
pub trait ViaFieldHash<F> {
    fn field_hash(&self) -> Option<FieldHashFn<F>>;
}

impl<F: std::hash::Hash> ViaFieldHash<F> for &&FieldProbe<F> {
    fn field_hash(&self) -> Option<FieldHashFn<F>> {
        Some(|v, mut h| v.hash(&mut h))
    }
}

#[doc(hidden)]
pub trait ViaFieldBits<F> {
    fn field_hash(&self) -> Option<FieldHashFn<F>>;
}

impl<F: BitHash> ViaFieldBits<F> for &FieldProbe<F> {
    fn field_hash(&self) -> Option<FieldHashFn<F>> {
        Some(|v, h| v.bit_hash(h))
    }
}

#[doc(hidden)]
pub trait ViaFieldNone<F> {
    fn field_hash(&self) -> Option<FieldHashFn<F>>;
}

impl<F> ViaFieldNone<F> for FieldProbe<F> {
    fn field_hash(&self) -> Option<FieldHashFn<F>> {
        None
    }
}

/// What `#[component(rollback)]` registers: the type's
/// [`World::register_rollback`](crate::World::register_rollback), which
/// the world's component registry runs when it first meets the type. Not
/// part of the API.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct RollbackRegistration {
    make: fn(ComponentId) -> RollbackComponent,
}

impl RollbackRegistration {
    /// The registration of `T` (which must be `Clone`), hashed for the
    /// checksum as its derive chose.
    pub fn of<T: crate::Component + Clone>() -> Self {
        RollbackRegistration {
            make: |id| crate::world::rollback_component::<T>(id, T::rollback_hash().map(|h| h.0)),
        }
    }

    /// [`Disabled`](crate::Disabled)'s, always part of the state.
    pub(crate) fn disabled() -> Self {
        RollbackRegistration {
            make: |id| {
                crate::world::rollback_component::<crate::Disabled>(
                    id,
                    Some(crate::world::hash_component::<crate::Disabled>),
                )
            },
        }
    }

    /// The type's entry in a world where its id is `id`.
    pub(crate) fn component(self, id: ComponentId) -> RollbackComponent {
        (self.make)(id)
    }
}

impl fmt::Debug for RollbackRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RollbackRegistration")
    }
}

/// How the world reads and writes one registered component type.
pub(crate) struct RollbackComponent {
    pub id: ComponentId,
    pub type_name: &'static str,
    pub storage: StorageType,
    /// A copy of a column (a `Vec<T>`), written into the given buffer of
    /// an older snapshot if nothing else holds it (no allocation), else
    /// into a new one; and its size in bytes.
    pub save: fn(&crate::storage::Column, Option<Saved>) -> (Saved, usize),
    /// An empty saved column (an empty `Vec<T>`): a sparse set that does
    /// not exist yet.
    pub empty: fn() -> Saved,
    /// `Column::restore_written` with the saved `Vec<T>`.
    pub restore: fn(&mut crate::storage::Column, &Saved, Tick, Tick) -> usize,
    /// Adds a clone of saved row `row` to a builder.
    pub add_to: fn(&mut crate::EntityBuilder, &Saved, usize),
    /// Puts saved row `row` back into `entity`'s value if it was written
    /// since `since`; true if it was.
    pub restore_one: fn(&mut crate::World, Entity, &Saved, usize, Tick) -> bool,
    /// Removes the component from an entity (an ordinary removal).
    pub remove: fn(&mut crate::World, Entity),
    /// Hashes an entity's value, if it has one, for the checksum.
    pub hash: Option<HashFn>,
}

/// How the world saves and restores one registered resource type.
pub(crate) struct RollbackResource {
    pub type_name: &'static str,
    pub save: fn(&crate::World) -> Option<Saved>,
    /// Puts the saved value back if the resource was written since the
    /// tick (or inserts or removes it); true if it changed anything.
    pub restore: fn(&mut crate::World, Option<&Saved>, Tick) -> bool,
    pub hash: Option<fn(&crate::World, &mut StableHasher)>,
}

/// How the world saves and restores one registered relation type.
pub(crate) struct RollbackRelation {
    pub type_name: &'static str,
    /// The ids of `Relation<R>` and `Sources<R>`.
    pub ids: (ComponentId, ComponentId),
    pub save: fn(&crate::World) -> Saved,
    /// Rebuilds the edges if they changed since the tick; true if it did.
    pub restore: fn(&mut crate::World, &Saved, Tick) -> bool,
    pub hash: fn(&crate::World, &[Entity], &mut StableHasher),
}

/// The component types a world rolls back, in registration order (a
/// snapshot's columns name them by their index here). Kept in the world's
/// component registry (`Components::rollback`), which adds a
/// `#[component(rollback)]` type and [`Disabled`](crate::Disabled) when it
/// registers them: so a snapshot, through `&World`, never finds a type
/// waiting to be registered.
#[derive(Default)]
pub(crate) struct RollbackComponents {
    pub components: Vec<RollbackComponent>,
    pub by_component: FxHashMap<ComponentId, usize>,
    /// Hashed components' indices, sorted by type name (the checksum's
    /// order, the same in every process).
    pub hash_order: Vec<usize>,
}

impl RollbackComponents {
    /// Adds `c` (its columns must track change ticks); nothing if its type
    /// is registered already.
    pub fn add(&mut self, c: RollbackComponent) {
        if self.by_component.contains_key(&c.id) {
            return;
        }
        self.by_component.insert(c.id, self.components.len());
        self.components.push(c);
        let mut order: Vec<usize> = (0..self.components.len())
            .filter(|&k| self.components[k].hash.is_some())
            .collect();
        order.sort_by_key(|&k| self.components[k].type_name);
        self.hash_order = order;
    }
}

impl fmt::Debug for RollbackComponents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.components.iter().map(|c| c.type_name))
            .finish()
    }
}

/// The resources and relations a world rolls back (its components are in
/// [`RollbackComponents`]), and what the last restore did.
#[derive(Default)]
pub(crate) struct RollbackRegistry {
    pub resources: Vec<RollbackResource>,
    pub by_resource: FxHashMap<TypeId, usize>,
    pub relations: Vec<RollbackRelation>,
    pub by_relation: FxHashMap<TypeId, usize>,
    /// The last successful restore: the tick of its snapshot, and the tick
    /// it wrote at. Rows not written since then hold that snapshot's
    /// values, so restoring it again (or sharing its columns) can start
    /// from the later tick: what a restore wrote is not written again.
    pub last_restore: Option<(Tick, Tick)>,
    /// The entity a restore is adding saved components to (a respawn, or
    /// an insert into an entity that lived through), for the one insert
    /// that does it: that insert makes no requirement that is a registered
    /// component (the snapshot lists which of those the entity had), and
    /// clears it before anything is announced.
    pub exact_insert: Option<Entity>,
}

impl RollbackRegistry {
    /// The tick after which a row may differ from `snapshot_tick`'s
    /// snapshot (see [`RollbackRegistry::last_restore`]).
    pub fn written_after(&self, snapshot_tick: Tick) -> Tick {
        match self.last_restore {
            Some((s, r)) if s == snapshot_tick => r,
            _ => snapshot_tick,
        }
    }
}

impl RollbackRegistry {
    /// True if `id` is the edge component of a registered relation.
    pub fn is_relation_part(&self, id: ComponentId) -> bool {
        self.relations
            .iter()
            .any(|r| r.ids.0 == id || r.ids.1 == id)
    }
}

impl fmt::Debug for RollbackRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RollbackRegistry")
            .field(
                "resources",
                &self
                    .resources
                    .iter()
                    .map(|c| c.type_name)
                    .collect::<Vec<_>>(),
            )
            .field(
                "relations",
                &self
                    .relations
                    .iter()
                    .map(|c| c.type_name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}
