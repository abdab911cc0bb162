//! The world's side of rollback (see [`crate::rollback`]): registration,
//! [`World::snapshot`], [`World::restore`] and [`World::checksum`].

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{World, location};
use crate::archetype::ArchetypeId;
use crate::change::Tick;
use crate::component::{Component, ComponentId, StorageType};
use crate::entity::Entity;
use crate::relation::{Relation, Relationship, Sources};
use crate::rollback::{
    HashFn, RestoreReport, RollbackComponent, RollbackError, RollbackRelation, RollbackResource,
    Saved, SavedColumn, Snapshot, SparseSnapshot, StableHasher, TableSnapshot, same_entities,
};
use crate::storage::{Column, DeferredPanic};
use crate::world::{Disabled, EntityBuilder, RestoreEntitiesError};

// ----- per-type functions (monomorphised at registration) --------------------

fn save_column<T: Component + Clone>(column: &Column, buffer: Option<Saved>) -> (Saved, usize) {
    let values = column
        .as_slice::<T>()
        .expect("rollback registry: the column holds the registered type");
    let bytes = std::mem::size_of_val(values);
    if let Some(mut buffer) = buffer {
        // An older snapshot's copy that nothing else holds: overwritten in
        // place (one `memcpy` for a `Copy` type, into memory already
        // mapped: a fresh megabyte costs more in page faults than the copy).
        if let Some(vec) = Arc::get_mut(&mut buffer).and_then(|b| b.downcast_mut::<Vec<T>>()) {
            values.clone_into(vec);
            return (buffer, bytes);
        }
    }
    (Arc::new(values.to_vec()), bytes)
}

/// The rollback registry's entry for `T`, whose id is `id`.
pub(crate) fn rollback_component<T: Component + Clone>(
    id: ComponentId,
    hash: Option<HashFn>,
) -> RollbackComponent {
    RollbackComponent {
        id,
        type_name: std::any::type_name::<T>(),
        storage: T::STORAGE,
        save: save_column::<T>,
        empty: empty_column::<T>,
        restore: restore_column::<T>,
        add_to: add_to::<T>,
        restore_one: restore_one::<T>,
        remove: remove::<T>,
        hash,
    }
}

/// The added ticks of `column`'s rows, in `buffer` (an older snapshot's
/// copy) if nothing else holds it: 4 bytes a row.
fn save_added(column: &Column, buffer: Option<Arc<Vec<Tick>>>) -> Arc<Vec<Tick>> {
    if let Some(mut buffer) = buffer {
        if let Some(ticks) = Arc::get_mut(&mut buffer) {
            column.added_ticks_into(ticks);
            return buffer;
        }
    }
    let mut ticks = Vec::with_capacity(column.len());
    column.added_ticks_into(&mut ticks);
    Arc::new(ticks)
}

fn empty_column<T: Component + Clone>() -> Saved {
    Arc::new(Vec::<T>::new())
}

/// A copy of `entities`, in `buffer` (an older snapshot's list) if
/// nothing else holds it and it has the same length.
fn copy_entities(buffer: &mut Arc<[Entity]>, entities: &[Entity]) -> Arc<[Entity]> {
    match Arc::get_mut(buffer) {
        Some(list) if list.len() == entities.len() => {
            list.copy_from_slice(entities);
            buffer.clone()
        }
        _ => Arc::from(entities),
    }
}

/// Takes the saved column of component `k` out of an old snapshot's
/// columns (to keep, or to write the new copy into).
fn take_column(columns: &mut Vec<SavedColumn>, k: usize) -> Option<SavedColumn> {
    let at = columns.iter().position(|c| c.component == k)?;
    Some(columns.swap_remove(at))
}

fn saved<T: 'static>(s: &Saved) -> &[T] {
    s.downcast_ref::<Vec<T>>()
        .expect("rollback registry: a saved column holds the registered type")
}

fn restore_column<T: Component + Clone>(
    column: &mut Column,
    s: &Saved,
    since: Tick,
    now: Tick,
) -> usize {
    column.restore_written(saved::<T>(s), since, now)
}

fn add_to<T: Component + Clone>(builder: &mut EntityBuilder, s: &Saved, row: usize) {
    builder.add(saved::<T>(s)[row].clone());
}

fn restore_one<T: Component + Clone>(
    world: &mut World,
    entity: Entity,
    s: &Saved,
    row: usize,
    since: Tick,
) -> bool {
    let now = world.change_tick();
    let (Some(loc), Some(id)) = (world.entities.get(entity), world.components.id_of::<T>()) else {
        return false;
    };
    let column = match T::STORAGE {
        StorageType::Table => world
            .archetypes
            .get(loc.archetype)
            .table
            .column(id)
            .map(|c| (c, loc.row as usize)),
        StorageType::SparseSet => world
            .sparse
            .get(id)
            .and_then(|set| Some((set.column(), set.dense_index(entity)?))),
    };
    let Some((column, at)) = column else {
        return false;
    };
    // An untracked column cannot tell: put the value back.
    let written = column
        .changed_tick(at)
        .is_none_or(|t| t.is_newer_than(since, now));
    if written {
        let value = saved::<T>(s)[row].clone();
        if let Some(slot) = world.get_mut_opt::<T>(entity) {
            *slot = value;
        }
    }
    written
}

fn remove<T: Component>(world: &mut World, entity: Entity) {
    let _ = world.remove_one::<T>(entity);
}

/// Feeds `e`'s `T` to `h` (through `Hash`); false if it has none.
pub(crate) fn hash_component<T: Component + Hash>(
    world: &World,
    e: Entity,
    h: &mut StableHasher,
) -> bool {
    world.get_opt::<T>(e).map(|v| v.hash(h)).is_some()
}

/// [`hash_component`] for a type hashed field by field (the derive's
/// choice for a type that is not `Hash`: see
/// [`HashFields`](crate::rollback::HashFields)).
pub(crate) fn hash_component_fields<T: Component + crate::rollback::HashFields>(
    world: &World,
    e: Entity,
    h: &mut StableHasher,
) -> bool {
    world.get_opt::<T>(e).map(|v| v.hash_fields(h)).is_some()
}

fn save_resource<R: Send + Sync + Clone + 'static>(world: &World) -> Option<Saved> {
    world
        .get_resource::<R>()
        .map(|r| Arc::new(r.clone()) as Saved)
}

fn restore_resource<R: Send + Sync + Clone + 'static>(
    world: &mut World,
    s: Option<&Saved>,
    since: Tick,
) -> bool {
    let now = world.change_tick();
    let saved = s.map(|s| {
        s.downcast_ref::<R>()
            .expect("rollback registry: a saved resource has its type")
    });
    let written = world.resources.id_of::<R>().is_some_and(|id| {
        world.resources.contains::<R>()
            && world
                .resources
                .ticks(id)
                .changed()
                .is_newer_than(since, now)
    });
    match (saved, world.contains_resource::<R>()) {
        (Some(v), true) if written => {
            *world.resource_mut::<R>() = v.clone();
            true
        }
        (Some(_), true) | (None, false) => false,
        (Some(v), false) => {
            world.insert_resource(v.clone());
            true
        }
        (None, true) => {
            world.remove_resource::<R>();
            true
        }
    }
}

fn hash_resource<R: Send + Sync + Hash + 'static>(world: &World, h: &mut StableHasher) {
    match world.get_resource::<R>() {
        Some(v) => {
            h.write_u8(1);
            v.hash(h);
        }
        None => h.write_u8(0),
    }
}

/// A relation's saved state: each source's edges (in the order of the
/// sources' set) and each target's sources (in the order of the targets'
/// set, each list in its order), and the version it had.
struct SavedEdges<R> {
    version: u64,
    edges: Vec<(Entity, Vec<(Entity, R)>)>,
    sources: Vec<(Entity, Vec<Entity>)>,
}

fn save_relation<R: Relationship + Clone>(world: &World) -> Saved {
    // (A relation the world never registered has no edge; the hierarchy
    // is saved before anything is registered.)
    let ids = world.relations.ids::<R>();
    let of = |id: Option<ComponentId>| {
        id.and_then(|id| world.sparse.get(id))
            .map_or(&[][..], |s| s.entities())
    };
    let (rel, src) = (ids.map(|i| i.0), ids.map(|i| i.1));
    let edges = of(rel)
        .iter()
        .map(|&s| {
            let r = world
                .get_opt::<Relation<R>>(s)
                .expect("relation invariant: a source has its Relation");
            (s, r.iter().map(|(t, d)| (t, d.clone())).collect())
        })
        .collect();
    let sources = of(src)
        .iter()
        .map(|&t| (t, world.sources::<R>(t).to_vec()))
        .collect();
    Arc::new(SavedEdges {
        version: world.relation_version::<R>(),
        edges,
        sources,
    })
}

fn restore_relation<R: Relationship + Clone>(world: &mut World, s: &Saved, since: Tick) -> bool {
    let saved = s
        .downcast_ref::<SavedEdges<R>>()
        .expect("rollback registry: saved edges have their type");
    let (rel, src) = world
        .relations
        .ids::<R>()
        .expect("rollback registry: the relation is registered");
    let now = world.change_tick();
    let data_written = world
        .sparse
        .get(rel)
        .is_some_and(|set| set.column().written_since(since, now));
    if world.relation_version::<R>() == saved.version && !data_written {
        return false;
    }
    let sources: Vec<Entity> = world
        .sparse
        .get(rel)
        .map_or(Vec::new(), |s| s.entities().to_vec());
    for s in sources {
        world.unrelate_all::<R>(s);
    }
    for (s, edges) in &saved.edges {
        for (t, d) in edges {
            // Both ends are live (the restore brought the snapshot's
            // entities back first) and the edges were valid together.
            let _ = world.relate(*s, *t, d.clone());
        }
    }
    for (t, list) in &saved.sources {
        if world.sources::<R>(*t) != list.as_slice() {
            let _ = world.sort_sources_by_key::<R, _>(*t, |e| list.iter().position(|&x| x == e));
        }
    }
    let edge_order: Vec<Entity> = saved.edges.iter().map(|(s, _)| *s).collect();
    let source_order: Vec<Entity> = saved.sources.iter().map(|(t, _)| *t).collect();
    world.reorder_sparse(rel, &edge_order);
    world.reorder_sparse(src, &source_order);
    true
}

fn hash_relation<R: Relationship + Hash>(world: &World, live: &[Entity], h: &mut StableHasher) {
    // No edge: nothing to hash (and no lookup per entity).
    let empty = |id: Option<ComponentId>| {
        id.and_then(|id| world.sparse.get(id))
            .is_none_or(|set| set.entities().is_empty())
    };
    let ids = world.relations.ids::<R>();
    if empty(ids.map(|i| i.0)) && empty(ids.map(|i| i.1)) {
        return;
    }
    for &e in live {
        if let Some(r) = world.get_opt::<Relation<R>>(e) {
            h.write_u64(e.to_bits());
            h.write_usize(r.len());
            for (t, d) in r.iter() {
                h.write_u64(t.to_bits());
                d.hash(h);
            }
        }
        if let Some(s) = world.get_opt::<Sources<R>>(e) {
            h.write_u64(e.to_bits() ^ u64::MAX);
            h.write_usize(s.len());
            for t in s.as_slice() {
                h.write_u64(t.to_bits());
            }
        }
    }
}

impl World {
    /// Registers component type `T` for rollback: [`World::snapshot`]
    /// saves every `T`, [`World::restore`] puts them back, and
    /// [`World::checksum`] hashes them (with a portable hasher, in entity
    /// order) if `T` implements `Hash`. Turns on change ticks for `T` (a
    /// restore puts back only the rows written since the snapshot).
    /// Idempotent. `#[component(rollback)]` on the type's derive does the
    /// same in every world that uses it, with no call, as soon as the
    /// world registers the type (its first spawn, insert or query).
    ///
    /// `#[derive(Component)]` tells how the checksum hashes the type:
    /// through its `Hash` impl if it has one; else, for a type holding
    /// floats, field by field, each field through its `Hash` impl or, for
    /// floats (and arrays, tuples, `Option`s and `Vec`s of floats and
    /// integers), by their bits, every NaN alike. A type with a field that
    /// is neither (a `HashMap`, a type of yours without `Hash`) is saved
    /// and restored but left out of the checksum: implement `Hash` for that
    /// field's type (over floats' bits) to include it. A type with a
    /// hand-written `Component` impl, or a generic one, is hashed with
    /// [`World::register_rollback_hashed`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Copy, Hash, Debug, PartialEq)]
    /// struct Pos { x: i32, y: i32 }
    /// let mut world = World::new();
    /// world.register_rollback::<Pos>();
    /// let e = world.spawn(Pos { x: 1, y: 2 });
    /// let saved = world.snapshot();
    /// world.get_mut::<Pos>(e).unwrap().x = 9;
    /// world.restore(&saved).unwrap();
    /// assert_eq!(world.get::<Pos>(e), Ok(&Pos { x: 1, y: 2 }));
    /// ```
    pub fn register_rollback<T: Component + Clone>(&mut self) {
        self.register_rollback_with::<T>(T::rollback_hash().map(|h| h.0));
    }

    /// [`World::register_rollback`], hashing `T` for [`World::checksum`]
    /// through its `Hash` impl whatever its `Component` impl says (for a
    /// hand-written `Component` impl or a generic type, which the derive
    /// cannot probe for `Hash`).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Clone, Hash)]
    /// struct Hp(u32);
    /// impl Component for Hp {}
    /// let mut world = World::new();
    /// world.register_rollback_hashed::<Hp>();
    /// let e = world.spawn(Hp(3));
    /// let sum = world.checksum();
    /// world.get_mut::<Hp>(e).unwrap().0 = 4;
    /// assert_ne!(world.checksum(), sum);
    /// ```
    pub fn register_rollback_hashed<T: Component + Clone + Hash>(&mut self) {
        self.register_rollback_with::<T>(Some(hash_component::<T>));
    }

    /// [`World::register_rollback`] for a type without `Hash`: saved and
    /// restored, but not part of [`World::checksum`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Debug, PartialEq)]
    /// struct Vel(f32);
    /// let mut world = World::new();
    /// world.register_rollback_unhashed::<Vel>();
    /// let e = world.spawn(Vel(1.5));
    /// let (saved, sum) = (world.snapshot(), world.checksum());
    /// world.get_mut::<Vel>(e).unwrap().0 = 0.0;
    /// assert_eq!(world.checksum(), sum); // not hashed
    /// world.restore(&saved).unwrap();
    /// assert_eq!(world.get::<Vel>(e), Ok(&Vel(1.5)));
    /// ```
    pub fn register_rollback_unhashed<T: Component + Clone>(&mut self) {
        self.register_rollback_with::<T>(None);
    }

    fn register_rollback_with<T: Component + Clone>(&mut self, hash: Option<HashFn>) {
        self.register_rollback_builtins();
        self.register_rollback_component::<T>(hash);
    }

    fn register_rollback_component<T: Component + Clone>(&mut self, hash: Option<HashFn>) {
        // A `#[component(rollback)]` type is in the list from here on.
        let id = self.register_component::<T>();
        if self.components.rollback.by_component.contains_key(&id) {
            return;
        }
        self.track_ticks(id);
        self.components
            .rollback
            .add(rollback_component::<T>(id, hash));
    }

    /// [`Disabled`] and the hierarchy ([`ChildOf`](crate::ChildOf)) are
    /// always part of the state. Registered at the first registration for
    /// rollback of any kind (and by a restore); until then a snapshot saves
    /// the hierarchy as relation 0 all the same (see
    /// [`World::snapshot_sharing`]), and `Disabled` joins the rolled back
    /// types when the world first registers it (see `Components::rollback`).
    fn register_rollback_builtins(&mut self) {
        if self.rollback.relations.is_empty() {
            self.register_component::<Disabled>();
            self.add_rollback_relation::<crate::ChildOf>();
        }
    }

    /// Registers resource type `R` for rollback: saved, restored (put
    /// back if written since the snapshot, inserted or removed if its
    /// presence differs) and hashed by [`World::checksum`]. Idempotent.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Clone, Hash, Debug, PartialEq)]
    /// struct Score(u32);
    /// let mut world = World::new();
    /// world.register_rollback_resource::<Score>();
    /// world.insert_resource(Score(1));
    /// let saved = world.snapshot();
    /// world.resource_mut::<Score>().0 = 7;
    /// world.restore(&saved).unwrap();
    /// assert_eq!(world.resource::<Score>(), &Score(1));
    /// ```
    pub fn register_rollback_resource<R: Send + Sync + Clone + Hash + 'static>(&mut self) {
        self.register_rollback_resource_with::<R>(Some(hash_resource::<R>));
    }

    /// [`World::register_rollback_resource`] for a type without `Hash` (it
    /// holds floats, say): saved and restored, but not part of
    /// [`World::checksum`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Wind(f32);
    /// let mut world = World::new();
    /// world.register_rollback_resource_unhashed::<Wind>();
    /// world.insert_resource(Wind(0.5));
    /// let saved = world.snapshot();
    /// world.resource_mut::<Wind>().0 = 2.0;
    /// world.restore(&saved).unwrap();
    /// assert_eq!(world.resource::<Wind>(), &Wind(0.5));
    /// ```
    pub fn register_rollback_resource_unhashed<R: Send + Sync + Clone + 'static>(&mut self) {
        self.register_rollback_resource_with::<R>(None);
    }

    fn register_rollback_resource_with<R: Send + Sync + Clone + 'static>(
        &mut self,
        hash: Option<fn(&World, &mut StableHasher)>,
    ) {
        self.register_rollback_builtins();
        let t = std::any::TypeId::of::<R>();
        if self.rollback.by_resource.contains_key(&t) {
            return;
        }
        self.rollback
            .by_resource
            .insert(t, self.rollback.resources.len());
        self.rollback.resources.push(RollbackResource {
            type_name: std::any::type_name::<R>(),
            save: save_resource::<R>,
            restore: restore_resource::<R>,
            hash,
        });
    }

    /// Registers relation type `R` for rollback: its edges (and their
    /// data), each source's targets in order and each target's sources in
    /// order (a parent's [`Children`](crate::Children)) are saved, rebuilt
    /// by a restore if they changed, and hashed by [`World::checksum`].
    /// Idempotent.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.register_rollback_relation::<ChildOf>();
    /// let parent = world.spawn(());
    /// let kids: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    /// for &k in &kids { world.relate(k, parent, ChildOf(parent)).unwrap(); }
    /// let saved = world.snapshot();
    /// world.despawn(kids[0]).unwrap();
    /// world.restore(&saved).unwrap();
    /// assert_eq!(world.sources::<ChildOf>(parent), kids);
    /// ```
    pub fn register_rollback_relation<R: Relationship + Clone + Hash>(&mut self) {
        self.register_rollback_builtins();
        self.add_rollback_relation::<R>();
    }

    fn add_rollback_relation<R: Relationship + Clone + Hash>(&mut self) {
        let t = std::any::TypeId::of::<R>();
        if self.rollback.by_relation.contains_key(&t) {
            return;
        }
        self.register_relation::<R>();
        let ids = self.relations.ids::<R>().expect("registered just above");
        self.track_ticks(ids.0);
        self.rollback
            .by_relation
            .insert(t, self.rollback.relations.len());
        self.rollback.relations.push(RollbackRelation {
            type_name: std::any::type_name::<R>(),
            ids,
            save: save_relation::<R>,
            restore: restore_relation::<R>,
            hash: hash_relation::<R>,
        });
    }

    /// Saves this world's state (see [`crate::rollback`]): the entity
    /// allocator, every registered component, resource and relation,
    /// [`Disabled`] and the hierarchy. Copies each registered column (one
    /// `memcpy` for a `Copy` type) and its rows' added ticks.
    ///
    /// Takes `&self`: a function or a system holding `&World` can save.
    /// Ids reserved and not yet applied (spawns of a command buffer,
    /// [`World::reserve_entity`]) are saved as the next
    /// [`flush`](World::flush) will leave them, as live empty entities (a
    /// spawn command's id as reserved for it), so a restore, and the spawns
    /// after it, go as if the world had been flushed first. It advances
    /// the change tick, so that anything written afterwards is newer than
    /// the snapshot.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::Snapshot;
    /// #[derive(Component, Clone, Hash)] struct Hp(u32);
    /// fn save(world: &World) -> Snapshot { world.snapshot() }
    ///
    /// let mut world = World::new();
    /// world.register_rollback::<Hp>();
    /// let e = world.spawn(Hp(10));
    /// let saved = save(&world);
    /// world.despawn(e).unwrap();
    /// world.restore(&saved).unwrap();
    /// assert_eq!(world.get::<Hp>(e).unwrap().0, 10);
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_sharing(None, None, false)
    }

    /// [`World::snapshot`] into `snapshot`, replacing what it held and
    /// reusing its memory: columns nobody wrote since it was taken are
    /// kept as they are (as [`World::snapshot_after`] shares them), the
    /// others are copied into its buffers where it holds the only
    /// reference (no clone of it, no [`SnapshotRing`](crate::SnapshotRing)
    /// frame shares them). Once the world's tables have settled, a
    /// snapshot taken this way allocates no memory for its values: a new
    /// megabyte costs more in page faults than copying into it. A
    /// snapshot of another world is simply overwritten. If a registered
    /// component's `Clone` panics, the panic goes on and `snapshot` is left
    /// holding no state (its buffers were being overwritten): restoring it
    /// fails with [`RollbackError::Incomplete`], changing nothing, until it
    /// is taken again. Takes `&self`, as [`World::snapshot`] does.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Copy, Hash, Debug, PartialEq)] struct Pos(i32);
    /// let mut world = World::new();
    /// world.register_rollback::<Pos>();
    /// let e = world.spawn(Pos(0));
    /// let mut saved = world.snapshot();
    /// for frame in 1..=3 {
    ///     world.get_mut::<Pos>(e).unwrap().0 = frame;
    ///     world.snapshot_into(&mut saved); // the state of `frame`
    /// }
    /// world.get_mut::<Pos>(e).unwrap().0 = 9;
    /// world.restore(&saved).unwrap();
    /// assert_eq!(world.get::<Pos>(e), Ok(&Pos(3)));
    /// ```
    pub fn snapshot_into(&self, snapshot: &mut Snapshot) {
        let old = std::mem::replace(snapshot, Snapshot::empty(self.id));
        *snapshot = self.snapshot_sharing(None, Some(old), true);
    }

    /// [`World::snapshot`], sharing with `base` (an earlier snapshot of
    /// this world) every column nobody wrote since `base` was taken, and
    /// every unchanged entity list: what [`SnapshotRing`](crate::SnapshotRing)
    /// does frame after frame. A `base` from another world shares nothing.
    /// Takes `&self`, as [`World::snapshot`] does.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Hash)] struct Pos(i32);
    /// #[derive(Component, Clone, Hash)] struct Hp(u32);
    /// let mut world = World::new();
    /// world.register_rollback::<Pos>();
    /// world.register_rollback::<Hp>();
    /// let e = world.spawn((Pos(0), Hp(3)));
    /// let a = world.snapshot();
    /// world.get_mut::<Pos>(e).unwrap().0 += 1;
    /// let b = world.snapshot_after(&a);
    /// assert_eq!(b.shared_columns(&a), 1); // Hp's column, not Pos's
    /// ```
    pub fn snapshot_after(&self, base: &Snapshot) -> Snapshot {
        self.snapshot_sharing(Some(base), None, false)
    }

    /// Takes a snapshot (see [`World::snapshot_after`] for `base`), taking
    /// the buffers it copies into from `recycle` (an older snapshot, of any
    /// world) where nothing else holds them: a snapshot of the same world
    /// shape then allocates nothing large. If `recycle_is_base`, `recycle`
    /// also plays `base` (its unwritten columns are kept, not copied).
    ///
    /// Through `&self`, so nothing is registered or flushed here: the
    /// component types rolled back are all in `Components::rollback`
    /// already (a `#[component(rollback)]` type and [`Disabled`] join it
    /// when registered, with change ticks from the start); if no relation
    /// is registered for rollback yet, the hierarchy is saved as relation 0,
    /// which it becomes at the first registration (or restore); reserved
    /// ids are saved as a flush would leave them.
    pub(crate) fn snapshot_sharing(
        &self,
        base: Option<&Snapshot>,
        recycle: Option<Snapshot>,
        recycle_is_base: bool,
    ) -> Snapshot {
        // Everything written from here on is newer than the snapshot (an
        // atomic step: readers on other threads may run queries meanwhile).
        let now = self.increment_change_tick();
        let own = recycle_is_base && recycle.as_ref().is_some_and(|r| r.world == self.id);
        let base = base.filter(|b| b.world == self.id && !own);
        // The old snapshot, taken apart (what is not named here, its saved
        // resources and relations, is dropped now).
        let Snapshot {
            world: old_world,
            tick: old_tick,
            slots: old_slots,
            free: old_free,
            structure: old_structure,
            tables: old_tables,
            mut table_of,
            sparse: old_sparse,
            ..
        } = recycle.unwrap_or_else(|| Snapshot::empty(self.id));
        let same_world = old_world == self.id;
        // Reserved ids not applied yet: saved as the flush that applies
        // them will leave the allocator, and the empty archetype's table
        // (with `reserved` at its end). The world's entities will change
        // (that flush): such a snapshot is never "unmoved".
        let unflushed = self.entities.needs_flush();
        // No entity spawned, despawned or moved since `base` (or the old
        // snapshot, if it plays `base`) was taken: the allocator is as it
        // saved it, and so is every table's entity list (as a restore
        // reasons): shared, not copied nor compared. (Sparse sets are
        // still compared, as a restore does.)
        let version = self.entities.version();
        let base_unmoved = !unflushed && base.is_some_and(|b| b.structure == version);
        let own_unmoved = !unflushed && own && old_structure == version;
        let mut reserved = Vec::new();
        let (slots, free) = if base_unmoved {
            let b = base.expect("checked just above");
            (b.slots.clone(), b.free.clone())
        } else if own_unmoved {
            (old_slots, old_free)
        } else {
            let (mut slots, mut free) = (old_slots, old_free);
            let (s, f) = match (Arc::get_mut(&mut slots), Arc::get_mut(&mut free)) {
                // An older snapshot's lists that nothing else holds:
                // overwritten in place.
                (Some(s), Some(f)) => (s, f),
                _ => {
                    (slots, free) = (Arc::default(), Arc::default());
                    (
                        Arc::get_mut(&mut slots).expect("new"),
                        Arc::get_mut(&mut free).expect("new"),
                    )
                }
            };
            if unflushed {
                reserved = self.entities.snapshot_flushed_into(s, f);
            } else {
                self.entities.snapshot_into(s, f);
            }
            (slots, free)
        };
        let registry = &self.components.rollback;
        let base_tick = if own {
            Some(old_tick)
        } else {
            base.map(|b| b.tick)
        };
        let since = base_tick.map(|t| self.rollback.written_after(t));
        // The old snapshot's tables, in archetype order (as every
        // snapshot lists them), met in step with the world's.
        let mut old_tables = old_tables.into_iter().peekable();
        let mut tables = Vec::with_capacity(old_tables.len());
        table_of.clear();
        table_of.resize(self.archetypes.len(), None);
        for archetype in self.archetypes.iter() {
            let table = &archetype.table;
            let id = archetype.id();
            // The table's entities, with the reserved ids a flush appends
            // to the empty archetype's.
            let rows: std::borrow::Cow<'_, [Entity]> =
                if id == ArchetypeId::EMPTY && !reserved.is_empty() {
                    [table.entities(), &reserved].concat().into()
                } else {
                    table.entities().into()
                };
            if rows.is_empty() {
                continue;
            }
            while old_tables.next_if(|t| t.archetype < id).is_some() {}
            let mut mine = old_tables.next_if(|t| t.archetype == id);
            // The snapshot shared with, if it saved these rows: `base`'s
            // table, or (if `own`) the old one itself.
            let based = base
                .and_then(|b| b.table(id))
                .filter(|t| base_unmoved || same_entities(&t.entities, &rows));
            let own_same = own
                && mine
                    .as_ref()
                    .is_some_and(|t| own_unmoved || same_entities(&t.entities, &rows));
            let entities = match (based, mine.as_mut()) {
                (Some(t), _) => t.entities.clone(),
                (None, Some(m)) if own_same => m.entities.clone(),
                (None, Some(m)) => copy_entities(&mut m.entities, &rows),
                (None, None) => Arc::from(&*rows),
            };
            let mut columns = Vec::with_capacity(table.component_ids().len());
            for &cid in table.component_ids() {
                let Some(&k) = registry.by_component.get(&cid) else {
                    continue;
                };
                let column = table.column(cid).expect("the table has its components");
                let unwritten = || {
                    let since = since.expect("a shared table comes from a base");
                    !column.written_since(since, now)
                };
                let old_column = mine.as_mut().and_then(|m| take_column(&mut m.columns, k));
                let kept = match (based, old_column) {
                    (Some(b), old) => (
                        b.columns
                            .iter()
                            .find(|c| c.component == k)
                            .filter(|_| unwritten())
                            .cloned(),
                        old,
                    ),
                    (None, Some(old)) if own_same && unwritten() => (Some(old), None),
                    (None, old) => (None, old),
                };
                columns.push(match kept {
                    (Some(shared), _) => shared,
                    (None, old) => {
                        let (buffer, old_added) = old.map(|c| (c.values, c.added)).unzip();
                        let (values, bytes) = (registry.components[k].save)(column, buffer);
                        // No entity moved since `base` (or the old
                        // snapshot): no row was added since, the added
                        // ticks are the ones it saved.
                        let unmoved_added = match based {
                            Some(b) if base_unmoved => b
                                .columns
                                .iter()
                                .find(|c| c.component == k)
                                .map(|c| c.added.clone()),
                            _ => None,
                        };
                        let added = match (unmoved_added, old_added) {
                            (Some(shared), _) => shared,
                            (None, Some(old)) if own_unmoved => old,
                            (None, old) => save_added(column, old),
                        };
                        SavedColumn {
                            component: k,
                            values,
                            bytes,
                            added,
                        }
                    }
                });
            }
            table_of[id.index()] = Some(tables.len() as u32);
            tables.push(TableSnapshot {
                archetype: id,
                entities,
                columns,
            });
        }
        // The old snapshot's sets, in registration order, as the loop
        // below visits them.
        let mut old_sparse = old_sparse.into_iter().peekable();
        let mut sparse = Vec::with_capacity(old_sparse.len());
        for (k, c) in registry.components.iter().enumerate() {
            if c.storage != StorageType::SparseSet {
                continue;
            }
            while old_sparse.next_if(|s| s.component < k).is_some() {}
            let mine = old_sparse.next_if(|s| s.component == k);
            let snap = match self.sparse.get(c.id) {
                Some(set) => {
                    let based = base
                        .and_then(|b| b.sparse.iter().find(|s| s.component == k))
                        .filter(|o| same_entities(&o.entities, set.entities()));
                    let own_same = own
                        && mine
                            .as_ref()
                            .is_some_and(|o| same_entities(&o.entities, set.entities()));
                    let unwritten = (based.is_some() || own_same)
                        && !set
                            .column()
                            .written_since(since.expect("a shared set comes from a base"), now);
                    match (based, mine) {
                        (Some(o), _) if unwritten => o.clone(),
                        (None, Some(m)) if unwritten => m,
                        (based, mut mine) => {
                            let entities = match (based, mine.as_mut()) {
                                (Some(o), _) => o.entities.clone(),
                                (None, Some(m)) if own_same => m.entities.clone(),
                                (None, Some(m)) => copy_entities(&mut m.entities, set.entities()),
                                (None, None) => Arc::from(set.entities()),
                            };
                            let (buffer, old_added) =
                                mine.map(|m| (m.values.values, m.values.added)).unzip();
                            let (values, bytes) = (c.save)(set.column(), buffer);
                            // (A sparse insert moves no entity: its added
                            // ticks are copied whenever its values are.)
                            let added = save_added(set.column(), old_added);
                            SparseSnapshot {
                                component: k,
                                entities,
                                values: SavedColumn {
                                    component: k,
                                    values,
                                    bytes,
                                    added,
                                },
                            }
                        }
                    }
                }
                // No set yet: an empty one, typed (a restore after the
                // set was made and emptied reads it as a column of `T`s).
                None => match mine {
                    // (Component indices name the same types only within
                    // one world.)
                    Some(m) if same_world && m.entities.is_empty() => m,
                    _ => SparseSnapshot {
                        component: k,
                        entities: Arc::from(&[][..]),
                        values: SavedColumn {
                            component: k,
                            values: (c.empty)(),
                            bytes: 0,
                            added: Arc::default(),
                        },
                    },
                },
            };
            sparse.push(snap);
        }
        drop(old_sparse);
        let resources = self
            .rollback
            .resources
            .iter()
            .map(|r| (r.save)(self))
            .collect();
        let relations = if self.rollback.relations.is_empty() {
            // The hierarchy, relation 0 once anything is registered for
            // rollback (`register_rollback_builtins`, which a restore runs
            // first). Its edge data has change ticks since its
            // registration, as a registered relation's.
            vec![save_relation::<crate::ChildOf>(self)]
        } else {
            self.rollback
                .relations
                .iter()
                .map(|r| (r.save)(self))
                .collect()
        };
        let components_known = registry.components.len();
        Snapshot {
            world: self.id,
            tick: now,
            live: self.entities.len() as usize + reserved.len(),
            // A flush will change the entities: never "unmoved" then.
            structure: if unflushed {
                crate::rollback::UNFLUSHED
            } else {
                version
            },
            slots,
            free,
            tables,
            table_of,
            sparse,
            resources,
            relations,
            components_known,
            component_types: self.components.len(),
        }
    }

    /// Puts back the state `snapshot` saved (see [`crate::rollback`] for
    /// what that covers, what it announces and what it costs): afterwards
    /// the registered components, resources, relations, [`Disabled`] and
    /// the entity allocator are as they were, the table rows in the same
    /// order, and the next spawns get the ids they got after the snapshot.
    ///
    /// Component types present but not registered are left as they are
    /// and named in [`RestoreReport::unregistered`].
    ///
    /// Fails, changing nothing, with [`RollbackError::WrongWorld`] for a
    /// snapshot of another world, and with [`RollbackError::Incomplete`]
    /// for one a [`World::snapshot_into`] left empty when a `Clone`
    /// panicked.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Hash, Debug, PartialEq)] struct Hp(u32);
    /// let mut world = World::new();
    /// world.register_rollback::<Hp>();
    /// let a = world.spawn(Hp(1));
    /// let saved = world.snapshot();
    /// let b = world.spawn(Hp(2));
    /// world.despawn(a).unwrap();
    /// let report = world.restore(&saved).unwrap();
    /// assert_eq!((report.despawned, report.respawned), (1, 1));
    /// assert_eq!(world.get::<Hp>(a), Ok(&Hp(1)));
    /// assert_eq!(world.spawn(Hp(2)), b);
    /// ```
    pub fn restore(&mut self, snapshot: &Snapshot) -> Result<RestoreReport, RollbackError> {
        if snapshot.world != self.id {
            return Err(RollbackError::WrongWorld);
        }
        if snapshot.structure == crate::rollback::NOT_TAKEN {
            return Err(RollbackError::Incomplete);
        }
        // A hook or observer that panics on a structural change the
        // restore undoes does not stop it halfway: its change goes as that
        // call goes when the callback panics (a despawn whose `OnRemove`
        // observer panics does not happen), the other steps run, and the
        // first panic is raised again at the end.
        let mut panics = DeferredPanic::new();
        let restored = self.restore_steps(snapshot, &mut panics);
        panics.resume();
        restored
    }

    /// [`World::restore`]'s steps, keeping the panics of the callbacks
    /// they run in `panics`.
    fn restore_steps(
        &mut self,
        snapshot: &Snapshot,
        panics: &mut DeferredPanic,
    ) -> Result<RestoreReport, RollbackError> {
        self.flush();
        self.register_rollback_builtins();
        let since = self.rollback.written_after(snapshot.tick);
        // The restore's own inserts (components and entities the snapshot
        // had and the world lost) get a tick no write of the frame has:
        // they stay added, where a row added during the frame, which the
        // snapshot had, gets its saved added tick back (step 7).
        self.increment_change_tick_mut();
        let now = self.change_tick();
        let mut report = RestoreReport::default();
        let known = snapshot.components_known;
        // Rolled back: registered when it was taken, or first used since
        // (no value then: whatever there is now is removed).
        let in_state =
            |k: usize, id: ComponentId| k < known || id.index() >= snapshot.component_types;
        // No entity spawned, despawned or moved since the snapshot: every
        // table holds the saved entities in the saved rows, the allocator
        // is as saved (the common frame; comparing lists would cost a
        // pass over every entity).
        let unmoved = |world: &World| world.entities.version() == snapshot.structure;

        // 1. Which entities' structure differs: those of every table, and
        //    every registered sparse set, whose entity list is not the
        //    saved one.
        let mut dirty: Vec<Entity> = Vec::new();
        let mut dirty_tables: Vec<usize> = Vec::new();
        for archetype in self.archetypes.iter() {
            let now_rows = archetype.table.entities();
            let same = |t: &TableSnapshot| {
                if unmoved(self) {
                    debug_assert!(*t.entities == *now_rows, "unmoved, yet rows differ");
                    return true;
                }
                same_entities(&t.entities, now_rows)
            };
            match snapshot.table(archetype.id()) {
                Some(t) if same(t) => {}
                None if unmoved(self) => debug_assert!(now_rows.is_empty()),
                Some(t) => {
                    dirty.extend_from_slice(now_rows);
                    dirty.extend_from_slice(&t.entities);
                    dirty_tables.push(
                        snapshot.table_of[archetype.id().index()].expect("found above") as usize,
                    );
                }
                None => dirty.extend_from_slice(now_rows),
            }
        }
        let mut dirty_sparse: Vec<usize> = Vec::new();
        for (i, s) in snapshot.sparse.iter().enumerate() {
            let id = self.components.rollback.components[s.component].id;
            let now_rows = self.sparse.get(id).map_or(&[][..], |set| set.entities());
            if !same_entities(&s.entities, now_rows) {
                dirty.extend_from_slice(now_rows);
                dirty.extend_from_slice(&s.entities);
                dirty_sparse.push(i);
            }
        }
        dirty.sort_unstable();
        dirty.dedup();

        // Where each dirty entity's saved values are.
        let mut saved_row: FxHashMap<Entity, (usize, usize)> = FxHashMap::default();
        for &t in &dirty_tables {
            for (row, &e) in snapshot.tables[t].entities.iter().enumerate() {
                saved_row.insert(e, (t, row));
            }
        }
        // (Allocated only when a set changed: after most frames none did.)
        let mut saved_dense: Vec<FxHashMap<Entity, usize>> = Vec::new();
        if !dirty_sparse.is_empty() {
            saved_dense.resize(snapshot.sparse.len(), FxHashMap::default());
        }
        for &i in &dirty_sparse {
            saved_dense[i] = snapshot.sparse[i]
                .entities
                .iter()
                .enumerate()
                .map(|(d, &e)| (e, d))
                .collect();
        }
        // A registered sparse component of a dirty entity in the snapshot:
        // (set index, dense index).
        let saved_sparse = |e: Entity, i: usize, world: &World| -> Option<usize> {
            if dirty_sparse.contains(&i) {
                saved_dense[i].get(&e).copied()
            } else {
                // Unchanged set: what is there now is what was saved.
                let id = world.components.rollback.components[snapshot.sparse[i].component].id;
                world.sparse.get(id).and_then(|set| set.dense_index(e))
            }
        };

        // 2. Entities despawned since: spawned again with their ids and
        //    their saved registered components, in one structural change.
        let mut lived: Vec<Entity> = Vec::new();
        for &e in &dirty {
            if !snapshot.live_at(e) {
                continue;
            }
            if self.contains(e) {
                lived.push(e);
                continue;
            }
            let mut builder = EntityBuilder::new();
            if let Some(&(t, row)) = saved_row.get(&e) {
                for c in &snapshot.tables[t].columns {
                    (self.components.rollback.components[c.component].add_to)(
                        &mut builder,
                        &c.values,
                        row,
                    );
                }
            }
            for i in 0..snapshot.sparse.len() {
                if let Some(d) = saved_sparse(e, i, self) {
                    let s = &snapshot.sparse[i];
                    (self.components.rollback.components[s.component].add_to)(
                        &mut builder,
                        &s.values.values,
                        d,
                    );
                }
            }
            self.rollback.exact_insert = Some(e);
            if panics.completes(|| self.spawn_at(e, builder.build())) {
                report.respawned += 1;
            }
            self.rollback.exact_insert = None;
        }

        // 3. Relations (every end is live again), before the despawns below
        //    so that no cascade reaches an entity of the snapshot.
        for (k, s) in snapshot.relations.iter().enumerate() {
            let restore = self.rollback.relations[k].restore;
            panics.run(|| {
                if restore(self, s, since) {
                    report.relations_rebuilt += 1;
                }
            });
        }

        // 4. Entities spawned since, as one sweep (the rule of every
        //    despawn of many): a `Refuse` pin between two of them keeps
        //    nothing, whatever order they were spawned in. One pinned by an
        //    entity of the snapshot (an unregistered relation) stays, and
        //    so does one whose callback panicked; the other steps still run.
        let doomed: Vec<Entity> = dirty
            .iter()
            .copied()
            .filter(|&e| !snapshot.live_at(e) && self.contains(e))
            .collect();
        let mut refused = None;
        if !doomed.is_empty() {
            // An entity of the snapshot that an unregistered `Despawn`
            // relation ties to one of them loses the edge, not its life.
            self.spare_sources_of(&doomed, |s| snapshot.live_at(s));
            panics.run(|| {
                let _ = self.despawn_subtrees(&doomed, crate::relation::OnRefused::Keep);
            });
            self.end_spare();
            for &e in &doomed {
                if !self.contains(e) {
                    report.despawned += 1;
                } else if !panics.is_set() {
                    refused.get_or_insert(e);
                }
            }
        }

        // 5. Entities that lived through: registered components added or
        //    removed since, undone (inserts in one change).
        for &e in &lived {
            let Some(loc) = self.entities.get(e) else {
                continue;
            };
            let mut builder = EntityBuilder::new();
            let mut removals: Vec<usize> = Vec::new();
            let archetype = self.archetypes.get(loc.archetype);
            let saved_table = saved_row
                .get(&e)
                .map(|&(t, row)| (&snapshot.tables[t], row));
            for (k, c) in self.components.rollback.components.iter().enumerate() {
                if c.storage != StorageType::Table || !in_state(k, c.id) {
                    continue;
                }
                let has = archetype.contains(c.id);
                let saved = match saved_table {
                    Some((t, row)) => t
                        .columns
                        .iter()
                        .find(|s| s.component == k)
                        .map(|s| (s, row)),
                    // Its table did not change: neither did its components.
                    None => None,
                };
                match (has, saved) {
                    (false, Some((s, row))) => (c.add_to)(&mut builder, &s.values, row),
                    (true, None) if saved_table.is_some() => removals.push(k),
                    _ => {}
                }
            }
            for (i, s) in snapshot.sparse.iter().enumerate() {
                let c = &self.components.rollback.components[s.component];
                let has = self.sparse.get(c.id).is_some_and(|set| set.contains(e));
                match (has, saved_sparse(e, i, self)) {
                    (false, Some(d)) => (c.add_to)(&mut builder, &s.values.values, d),
                    (true, None) => removals.push(s.component),
                    _ => {}
                }
            }
            for k in removals {
                let remove = self.components.rollback.components[k].remove;
                if panics.completes(|| remove(self, e)) {
                    report.components_changed += 1;
                }
            }
            if !builder.is_empty() {
                let n = builder.len();
                self.rollback.exact_insert = Some(e);
                if panics.completes(|| {
                    let _ = self.insert(e, builder.build());
                }) {
                    report.components_changed += n;
                }
                self.rollback.exact_insert = None;
            }
        }

        //    Sparse types first used since the snapshot (not in it, and
        //    their sets are not either): every value removed.
        for k in known..self.components.rollback.components.len() {
            let c = &self.components.rollback.components[k];
            if c.storage != StorageType::SparseSet || !in_state(k, c.id) {
                continue;
            }
            let (id, remove) = (c.id, c.remove);
            let holders = self
                .sparse
                .get(id)
                .map_or(Vec::new(), |s| s.entities().to_vec());
            for e in holders {
                if panics.completes(|| remove(self, e)) {
                    report.components_changed += 1;
                }
            }
        }

        // 6. Rows back in the saved order, where the sets now agree.
        for &t in &dirty_tables {
            let saved = &snapshot.tables[t];
            let table = self.archetypes.table_mut(saved.archetype);
            if let Some(order) = order_of(table.entities(), &saved.entities) {
                table.reorder(&order);
                for (row, entity) in table.entities().iter().enumerate() {
                    self.entities
                        .set_location(entity.index(), location(saved.archetype, row));
                }
            }
        }
        for &i in &dirty_sparse {
            let id = self.components.rollback.components[snapshot.sparse[i].component].id;
            self.reorder_sparse(id, &snapshot.sparse[i].entities);
        }

        // 7. Values written since the snapshot: a scan of the change ticks
        //    of each table and set whose rows are the saved ones, else
        //    entity by entity.
        //    A row added since (removed and inserted again, as a table or
        //    sparse component) whose entity had the component at the
        //    snapshot gets its saved added tick back: it was not added, as
        //    seen from before the snapshot. A table row can only have been
        //    added again if some entity moved (a sparse one, whatever).
        let unmoved_now = unmoved(self);
        let mut added_put_back = 0;
        for saved in &snapshot.tables {
            let table = self.archetypes.table_mut(saved.archetype);
            if unmoved_now || same_entities(table.entities(), &saved.entities) {
                for c in &saved.columns {
                    let info = &self.components.rollback.components[c.component];
                    let column = table
                        .column_mut(info.id)
                        .expect("same archetype, same columns");
                    if !unmoved_now {
                        added_put_back += column.restore_added(&c.added, since, now);
                    }
                    report.rows_restored += (info.restore)(column, &c.values, since, now);
                }
            } else {
                for (row, &e) in saved.entities.iter().enumerate() {
                    for c in &saved.columns {
                        let f = self.components.rollback.components[c.component].restore_one;
                        if f(self, e, &c.values, row, since) {
                            report.rows_restored += 1;
                            added_put_back += self.restore_added_of(c, e, row, since, now);
                        }
                    }
                }
            }
        }
        for s in &snapshot.sparse {
            let info = &self.components.rollback.components[s.component];
            let (id, restore, restore_one) = (info.id, info.restore, info.restore_one);
            match self.sparse.get_mut(id) {
                Some(set) if same_entities(set.entities(), &s.entities) => {
                    let column = set.column_mut();
                    if !s.entities.is_empty() {
                        added_put_back += column.restore_added(&s.values.added, since, now);
                    }
                    report.rows_restored += restore(column, &s.values.values, since, now);
                }
                Some(_) => {
                    for (d, &e) in s.entities.iter().enumerate() {
                        if restore_one(self, e, &s.values.values, d, since) {
                            report.rows_restored += 1;
                            added_put_back += self.restore_added_of(&s.values, e, d, since, now);
                        }
                    }
                }
                None => {}
            }
        }
        if added_put_back > 0 {
            // Rows' added ticks changed without an entity moving: no
            // snapshot taken before may share its saved added ticks with
            // the next one as "unmoved" (see `snapshot_sharing`).
            self.entities.touch();
        }
        self.sync_disabled_all(&dirty);

        // 8. Resources.
        for (k, s) in snapshot.resources.iter().enumerate() {
            let restore = self.rollback.resources[k].restore;
            if restore(self, s.as_ref(), since) {
                report.resources_restored += 1;
            }
        }

        // 9. The allocator: slots past the saved ones (all dead now) are
        //    forgotten, then generations and the free list put back.
        if let Some(e) = refused {
            return Err(RollbackError::DespawnRefused(e));
        }
        self.flush();
        // A frame that spawned and despawned nothing left the allocator as
        // saved: nothing to put back (this skip is most of the cost of a
        // restore after a small frame).
        if !unmoved(self) && !self.entities.is_snapshot(&snapshot.slots, &snapshot.free) {
            if !self.entities.truncate_slots(snapshot.slots.len()) {
                return Err(RollbackError::Entities(
                    RestoreEntitiesError::TooManySlots {
                        world: self.entities.slot_count(),
                        snapshot: snapshot.slots.len(),
                    },
                ));
            }
            let entities = crate::world::EntitiesSnapshot::from_parts(
                snapshot.slots.to_vec(),
                snapshot.free.to_vec(),
            );
            self.restore_entities(&entities)?;
        }
        // Writes from here on are newer than the restore's.
        self.rollback.last_restore = Some((snapshot.tick, now));
        self.increment_change_tick_mut();

        report.unregistered = self.unregistered_components(known);
        Ok(report)
    }

    /// Step 7 of a restore for one row: puts back the added tick `saved`
    /// holds at `row` for `e`'s component, if it was added since (see
    /// [`Column::restore_added`]). 1 if it did, else 0. (Out of line: only
    /// the entity-by-entity path of a restore calls it.)
    #[inline(never)]
    fn restore_added_of(
        &mut self,
        saved: &SavedColumn,
        e: Entity,
        row: usize,
        since: Tick,
        now: Tick,
    ) -> usize {
        let Some(&tick) = saved.added.get(row) else {
            return 0;
        };
        let c = &self.components.rollback.components[saved.component];
        let (id, storage) = (c.id, c.storage);
        let Some(loc) = self.entities.get(e) else {
            return 0;
        };
        let column = match storage {
            StorageType::Table => self
                .archetypes
                .table_mut(loc.archetype)
                .column_mut(id)
                .map(|c| (c, loc.row as usize)),
            StorageType::SparseSet => self.sparse.get_mut(id).and_then(|set| {
                let at = set.dense_index(e)?;
                Some((set.column_mut(), at))
            }),
        };
        column.map_or(0, |(column, at)| {
            usize::from(column.restore_added_row(at, tick, since, now))
        })
    }

    /// Names of the component types present and not rolled back.
    fn unregistered_components(&self, known: usize) -> Vec<String> {
        let registered = |id: ComponentId| {
            self.components
                .rollback
                .by_component
                .get(&id)
                .is_some_and(|&k| k < known)
                || self.rollback.is_relation_part(id)
        };
        let mut names: Vec<String> = Vec::new();
        for archetype in self.archetypes.iter() {
            if archetype.table.len() == 0 {
                continue;
            }
            for &id in archetype.table.component_ids() {
                if !registered(id) {
                    names.push(self.components.name(id).to_string());
                }
            }
        }
        for (id, set) in self.sparse.iter() {
            if !set.entities().is_empty() && !registered(id) {
                names.push(self.components.name(id).to_string());
            }
        }
        names.sort();
        names.dedup();
        names
    }

    /// Puts sparse set `id` in the order of `order` if it holds exactly
    /// those entities.
    fn reorder_sparse(&mut self, id: ComponentId, order: &[Entity]) {
        if let Some(set) = self.sparse.get_mut(id) {
            if let Some(perm) = order_of(set.entities(), order) {
                set.reorder(&perm);
            }
        }
    }

    /// A hash of this world's registered state, equal in any two worlds
    /// (any process, platform or executor) whose registered state is
    /// equal: the entity allocator (slots, generations, free list; ids
    /// reserved and not yet applied count as the next flush will leave
    /// them, as [`World::snapshot`] saves them), every
    /// live entity's registered components in entity-index order (by type
    /// name), [`Disabled`], the registered relations' edges in order, and
    /// the registered resources. Values are hashed through their `Hash`
    /// impls with a fixed, portable hasher (integers as little-endian
    /// 64-bit words): never memory addresses, padding or map order.
    /// Derived types that are not `Hash` are hashed field by field, floats
    /// by their bits with every NaN alike (see
    /// [`World::register_rollback`]). Types registered without a hash
    /// (`register_rollback_unhashed`, a derived type with a field that can
    /// be hashed neither way, a hand-written `Component` impl registered
    /// with `register_rollback`) and unregistered types are not included.
    ///
    /// Two peers of a rollback game compare it every frame to detect a
    /// desync. Types are taken in the order of their
    /// [`std::any::type_name`], whose text Rust does not promise to keep
    /// from one compiler release to the next: peers compare checksums
    /// reliably when they run the same build of the game (as rollback
    /// peers must anyway, to simulate alike).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Hash)] struct Hp(u32);
    /// let build = |order: &[u32]| {
    ///     let mut world = World::new();
    ///     world.register_rollback::<Hp>();
    ///     let es: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    ///     for &i in order { world.insert(es[i as usize], Hp(i)).unwrap(); }
    ///     world.checksum()
    /// };
    /// assert_eq!(build(&[0, 1, 2]), build(&[2, 0, 1]));
    /// ```
    pub fn checksum(&self) -> u64 {
        let mut h = StableHasher::new();
        // Ids reserved and not applied count as the flush will leave them,
        // as a snapshot saves them: the same sum before and after it.
        let (mut slots, mut free) = (Vec::new(), Vec::new());
        if self.entities.needs_flush() {
            self.entities.snapshot_flushed_into(&mut slots, &mut free);
        } else {
            self.entities.snapshot_into(&mut slots, &mut free);
        }
        h.write_usize(slots.len());
        let mut live = Vec::with_capacity(self.entities.len() as usize);
        for (i, &(generation, alive)) in slots.iter().enumerate() {
            h.write_u32(generation);
            h.write_u8(u8::from(alive));
            if alive {
                live.extend(Entity::from_bits((u64::from(generation) << 32) | i as u64));
            }
        }
        h.write_usize(free.len());
        for f in free {
            h.write_u32(f);
        }
        let order = self.hash_order();
        for &e in &live {
            h.write_u64(e.to_bits());
            for (pos, &hash) in order.iter().enumerate() {
                let mut probe = h.clone();
                probe.write_u32(pos as u32);
                if hash(self, e, &mut probe) {
                    h = probe;
                }
            }
        }
        let mut relations: Vec<&RollbackRelation> = self.rollback.relations.iter().collect();
        relations.sort_by_key(|r| r.type_name);
        for r in relations {
            (r.hash)(self, &live, &mut h);
        }
        if self.rollback.relations.is_empty() {
            // The hierarchy is always part of the state (registered at the
            // first snapshot): hashed the same before.
            hash_relation::<crate::ChildOf>(self, &live, &mut h);
        }
        let mut resources: Vec<&RollbackResource> = self.rollback.resources.iter().collect();
        resources.sort_by_key(|r| r.type_name);
        for r in resources {
            if let Some(hash) = r.hash {
                hash(self, &mut h);
            }
        }
        h.finish()
    }
}

impl World {
    /// The checksum's hashing functions, in its order (by type name): the
    /// registered hashed types, and [`Disabled`] if this world has not
    /// registered it yet (no entity has it, but its place in the order is
    /// the same as in a world that did).
    fn hash_order(&self) -> Vec<HashFn> {
        let registry = &self.components.rollback;
        let mut order: Vec<(&str, HashFn)> = registry
            .hash_order
            .iter()
            .map(|&k| {
                let c = &registry.components[k];
                (c.type_name, c.hash.expect("hash_order lists hashed types"))
            })
            .collect();
        let disabled = std::any::type_name::<Disabled>();
        if let Err(at) = order.binary_search_by_key(&disabled, |&(name, _)| name) {
            if self.components.id_of::<Disabled>().is_none() {
                order.insert(at, (disabled, hash_component::<Disabled>));
            }
        }
        order.into_iter().map(|(_, h)| h).collect()
    }
}

/// The permutation that puts the rows of `now` in the order they have in
/// `saved` (`order[i]` = the row that goes to `i`), rows `saved` does not
/// hold last in their current order; `None` if nothing moves. When both
/// hold the same entities, this is `saved`'s order exactly.
fn order_of(now: &[Entity], saved: &[Entity]) -> Option<Vec<u32>> {
    if now == saved {
        return None;
    }
    let at: FxHashMap<Entity, u32> = saved
        .iter()
        .enumerate()
        .map(|(i, &e)| (e, i as u32))
        .collect();
    let mut order: Vec<u32> = (0..now.len() as u32).collect();
    order.sort_by_key(|&r| at.get(&now[r as usize]).copied().unwrap_or(u32::MAX));
    (!order.iter().enumerate().all(|(i, &r)| i as u32 == r)).then_some(order)
}

#[cfg(test)]
#[path = "rollback_ops_tests.rs"]
mod tests;
