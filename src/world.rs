//! The world: entities, their components, and the façade over both.
//!
//! A [`World`] owns the entity allocator, the component registry, the
//! archetype tables and the sparse sets. Its methods check their arguments
//! and delegate to the module of the concept they touch; the logic lives
//! there. Worlds are independent values: a program may hold any number, and
//! each is `Send + Sync`.
//!
//! # Iteration order
//!
//! Iteration order is a pure function of the operations applied to a world:
//! archetypes are visited in creation order, and within one archetype
//! entities are in row order. A new entity takes the next row; removing an
//! entity from a table (despawn, or a move to another archetype) moves the
//! table's last row into the hole. No hash-map order or address ever decides
//! an order, so two worlds given the same operations iterate identically
//! (lockstep networking and replays rely on this).

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use fixedbitset::FixedBitSet;

use crate::archetype::{Archetype, ArchetypeId, Archetypes};
use crate::bundle::{Bundle, BundleId, Bundles};
use crate::change::{CHECK_INTERVAL, Tick};
use crate::component::{
    Component, ComponentId, ComponentInfo, Components, StorageType, short_type_name, type_slot,
};
use crate::entity::FreshIndices;
use crate::entity::{Entities, Entity, EntityLocation};
use crate::error::{ComponentError, EntityError};
use crate::observer::Observers;
use crate::query::{QueryData, QueryFilter, QueryState};
use crate::relation::{ChildOf, Children, Relations, Relationship};
use crate::storage::bundle_io::{self, NewRows, WriteCtx};
use crate::storage::{DeferredPanic, Resources, SparseSets, Table};

mod column_spawn;
mod debug_ops;
mod disabled_ops;
/// How many rows `spawn_batch` reserves up front at most: an iterator's
/// `size_hint` may lie, and an absurd one must not turn into an absurd
/// allocation. Past this, columns grow by doubling.
mod dynamic_ops;
mod entity_ref;
mod parts_insert;
mod required_ops;
mod rollback_ops;
pub(crate) use rollback_ops::{hash_component, hash_component_fields, rollback_component};
mod sort;
mod sparse_view;
mod spawn_at;
mod take;
pub use debug_ops::{MemoryReport, Name, SparseSetMemory, TableMemory};
pub use disabled_ops::Disabled;
use disabled_ops::is_disabled_marker;
pub use dynamic_ops::{DynamicInsertError, DynamicMut, DynamicQueryError};
pub use entity_ref::{EntityRef, EntityWorldMut};
pub use sparse_view::{SparseMut, SparseMutError};
pub use spawn_at::{EntitiesSnapshot, RestoreEntitiesError};
pub(crate) use take::{BoxedComponent, TakeBoxed, take_boxed};
pub use take::{BuiltEntity, DynamicBundle, EntityBuilder, TakenEntity};

const MAX_BATCH_RESERVE: usize = 1 << 22;

/// A world's unique id. Query states remember the id of the world that built
/// them and refuse to run on any other.
///
/// # Example
/// ```
/// use mosaic::World;
/// assert_ne!(World::new().id(), World::new().id());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorldId(u64);

impl WorldId {
    fn next() -> WorldId {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        WorldId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// Entities and their components.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Debug, PartialEq)]
/// struct Position(f32);
/// #[derive(Component)]
/// struct Velocity(f32);
///
/// let mut world = World::new();
/// let e = world.spawn((Position(0.0), Velocity(2.0)));
/// let mut movement = world.query::<(&mut Position, &Velocity)>();
/// for (p, v) in movement.iter_mut(&mut world) {
///     p.0 += v.0;
/// }
/// assert_eq!(*world.get::<Position>(e).unwrap(), Position(2.0));
/// ```
pub struct World {
    id: WorldId,
    entities: Entities,
    components: Components,
    bundles: Bundles,
    /// How run-time parts of each list of types spawn (see
    /// [`parts_insert`]).
    spawn_plans: parts_insert::SpawnPlans,
    archetypes: Archetypes,
    sparse: SparseSets,
    resources: Resources,
    observers: Observers,
    relations: Relations,
    /// The types [`World::snapshot`] saves (see [`crate::rollback`]).
    rollback: crate::rollback::RollbackRegistry,
    change_tick: AtomicU32,
    last_check_tick: Tick,
    /// How many frames, schedule runs or state transitions are under way:
    /// only the outermost advances the event buffers (see
    /// [`World::in_frame`]).
    frame_depth: u32,
}

impl fmt::Debug for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World")
            .field("id", &self.id)
            .field("entities", &self.entities.len())
            .field("components", &self.components.len())
            .field("archetypes", &self.archetypes.len())
            .finish()
    }
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

/// Spawns one entity per bundle, as [`World::spawn_batch`] does, without
/// collecting their handles: for bulk spawns whose entities are found again
/// by queries (particles, tiles, a level's props), this saves the returned
/// `Vec` (8 bytes per entity) and the copy into it.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Particle { life: f32 }
/// let mut world = World::new();
/// world.extend((0..1000).map(|i| Particle { life: i as f32 }));
/// assert_eq!(world.len(), 1000);
/// let mut particles = world.query::<&Particle>();
/// assert_eq!(particles.iter(&world).filter(|p| p.life < 10.0).count(), 10);
/// ```
impl<B: Bundle> Extend<B> for World {
    fn extend<I: IntoIterator<Item = B>>(&mut self, bundles: I) {
        if B::HAS_PARENT || self.spawn_brings_required::<B>() {
            self.spawn_each(bundles, |_| ());
            return;
        }
        let rows = self.spawn_rows(bundles);
        if self.spawn_has_lifecycle::<B>() {
            let spawned = self.spawned_entities(&rows);
            rows.announced(|| self.after_spawn::<B>(&spawned));
        } else {
            rows.resume();
        }
    }
}

/// The rows [`World::spawn_rows`] appended, and the panics it caught on the
/// way: the caller runs the lifecycle, then [`SpawnedRows::resume`]s them.
struct SpawnedRows {
    archetype: ArchetypeId,
    rows: std::ops::Range<usize>,
    /// The batch iterator's own panic, raised first.
    iterated: Option<Box<dyn std::any::Any + Send>>,
    /// The first panic of a drop or hook while writing.
    panics: DeferredPanic,
}

impl SpawnedRows {
    /// Runs `announce` (the rows' lifecycle), then re-raises the first
    /// panic: the iterator's, a drop's or hook's while writing, then the
    /// announcements'.
    fn announced(self, announce: impl FnOnce()) {
        let announced = catch_unwind(AssertUnwindSafe(announce));
        self.resume();
        if let Err(payload) = announced {
            resume_unwind(payload);
        }
    }

    /// Re-raises the panic caught while spawning, if any.
    fn resume(self) {
        if let Some(payload) = self.iterated {
            resume_unwind(payload);
        }
        self.panics.resume();
    }
}

impl World {
    /// An empty world with a fresh [`WorldId`].
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert!(world.is_empty());
    /// ```
    pub fn new() -> World {
        let components = Components::default();
        let archetypes = Archetypes::new(&components);
        World {
            id: WorldId::next(),
            entities: Entities::new(),
            components,
            bundles: Bundles::default(),
            spawn_plans: Default::default(),
            archetypes,
            sparse: SparseSets::default(),
            resources: Resources::default(),
            observers: Observers::default(),
            relations: Relations::default(),
            rollback: crate::rollback::RollbackRegistry::default(),
            change_tick: AtomicU32::new(1),
            last_check_tick: Tick::new(1),
            frame_depth: 0,
        }
    }

    /// Runs `f` as part of the frame under way: a schedule run inside it
    /// is nested, and leaves the event buffers alone (see [`Events`](crate::Events), "Lifetime").
    pub(crate) fn in_frame<R>(&mut self, f: impl FnOnce(&mut World) -> R) -> R {
        self.frame_depth += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| f(self)));
        self.frame_depth -= 1;
        outcome.unwrap_or_else(|payload| resume_unwind(payload))
    }

    /// True if a frame, schedule run or state transition is under way.
    #[inline]
    pub(crate) fn is_in_frame(&self) -> bool {
        self.frame_depth > 0
    }

    /// This world's unique id.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert_eq!(world.id(), world.id());
    /// ```
    #[inline]
    pub fn id(&self) -> WorldId {
        self.id
    }

    // ----- entities ---------------------------------------------------------

    /// Creates an entity with the components of `bundle` (a component, a
    /// tuple of them, or a `#[derive(Bundle)]` struct).
    ///
    /// Panics if the bundle names one component type twice (or holds two
    /// [`ChildOf`](crate::ChildOf)s), before anything changes.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Name(&'static str);
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn((Name("orc"), Health(10)));
    /// assert!(world.has::<Health>(e));
    /// ```
    ///
    /// Also takes the bundles made at run time ([`DynamicBundle`]): a
    /// [`TakenEntity`] from [`World::take`] and an
    /// [`EntityBuilder`](crate::EntityBuilder)'s build.
    #[inline]
    pub fn spawn<B: DynamicBundle>(&mut self, bundle: B) -> Entity {
        bundle.spawn_in(self)
    }

    /// [`World::spawn`] of a static bundle.
    pub(crate) fn spawn_bundle<B: Bundle>(&mut self, bundle: B) -> Entity {
        if B::HAS_PARENT {
            return self.spawn_with_parent(bundle);
        }
        self.flush();
        let tick = self.change_tick();
        // Register first: a bundle naming a type twice panics here, before
        // anything changed.
        let bundle_id = self.bundles.register::<B>(&mut self.components).id;
        if self.components.lifecycle_active() {
            if let Some(with) = self.bundles.with_required(bundle_id, &mut self.components) {
                return self.spawn_with_required(bundle, with, tick);
            }
        }
        let info = self.bundles.get(bundle_id);
        let entity = self.entities.alloc();
        let plan = self.archetypes.spawn_plan(info, &self.components);
        let target = plan.edge.target;
        let mut panics = DeferredPanic::new();
        let mut ctx = WriteCtx {
            components: &self.components,
            sparse: &mut self.sparse,
            panics: &mut panics,
            tick,
        };
        let disables = info.disables;
        // One row: pushed directly (a spawn loop's cost), not through the
        // batch writer `spawn_batch` uses.
        let row = bundle_io::push_row(plan.table, entity, bundle, info, plan.edge, &mut ctx);
        self.entities
            .set_location(entity.index(), location(target, row));
        self.sync_disabled_if(disables, entity);
        self.after_spawn::<B>(&[entity]);
        panics.resume();
        entity
    }

    /// Creates one entity per bundle. Reserves room once (from the
    /// iterator's size hint) and writes straight into the target table.
    /// A hook or observer that panics on one entity does not stop the
    /// others being announced: the batch is one change, and the first
    /// panic goes on once every entity was spawned and announced.
    /// Returns the new entities in order; when the handles are not needed,
    /// [`World::extend`](#impl-Extend<B>-for-World) spawns the same way
    /// without building the `Vec`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Position(f32);
    /// let mut world = World::new();
    /// let es = world.spawn_batch((0..100).map(|i| Position(i as f32)));
    /// assert_eq!(es.len(), 100);
    /// assert_eq!(world.get::<Position>(es[7]).unwrap().0, 7.0);
    /// ```
    pub fn spawn_batch<B, I>(&mut self, bundles: I) -> Vec<Entity>
    where
        B: Bundle,
        I: IntoIterator<Item = B>,
    {
        if B::HAS_PARENT || self.spawn_brings_required::<B>() {
            // Each entity in one move with its requirements (or its edge).
            let mut spawned = Vec::new();
            self.spawn_each(bundles, |e| spawned.push(e));
            return spawned;
        }
        let rows = self.spawn_rows(bundles);
        // Taken before the lifecycle runs: hooks and observers may move or
        // despawn the new entities.
        let spawned = self.spawned_entities(&rows);
        rows.announced(|| self.after_spawn::<B>(&spawned));
        spawned
    }

    /// Appends one row per bundle to `B`'s table (see
    /// [`World::spawn_batch`]), without running the lifecycle. The new
    /// entities are the returned rows of the returned archetype.
    fn spawn_rows<B, I>(&mut self, bundles: I) -> SpawnedRows
    where
        B: Bundle,
        I: IntoIterator<Item = B>,
    {
        self.flush();
        let bundles = bundles.into_iter();
        let reserve = bundles.size_hint().0.min(MAX_BATCH_RESERVE);
        let tick = self.change_tick();
        let info = self.bundles.register::<B>(&mut self.components);
        let plan = self
            .archetypes
            .insert_plan(ArchetypeId::EMPTY, info, &self.components);
        let target = plan.edge.target;
        let table = plan.dst.unwrap_or(plan.src);
        table.reserve(reserve);
        self.entities.reserve_capacity(reserve);
        let first = table.len();
        let mut panics = DeferredPanic::new();
        let ctx = WriteCtx {
            components: &self.components,
            sparse: &mut self.sparse,
            panics: &mut panics,
            tick,
        };
        let mut rows = NewRows::new(table, info, plan.edge, ctx);
        let entities = &mut self.entities;
        // Fresh ids for the hinted count in one step (a shared atomic counter,
        // which command buffers use too); the unused rest goes back below.
        let mut batch = entities.take_fresh(reserve);
        // The iterator is user code: if it panics, the entities spawned so
        // far stay (each is complete) and are announced before the panic
        // goes on.
        let iterated = catch_unwind(AssertUnwindSafe(|| {
            rows.push_all(bundles, |row| {
                entities.alloc_in(&mut batch, location(target, row))
            });
        }));
        let end = rows.next_row();
        rows.finish();
        self.entities.end_batch(batch);
        if info.disables {
            let table = self.archetypes.table_mut(target);
            for row in first..end {
                table.set_disabled(row, true);
            }
        }
        SpawnedRows {
            archetype: target,
            rows: first..end,
            iterated: iterated.err(),
            panics,
        }
    }

    /// Spawns each bundle on its own (with its requirements or its edge),
    /// handing each new entity to `each`: a batch that cannot be written
    /// as rows of one table. A panic of one spawn's hooks or observers (or
    /// a refused `ChildOf`) does not stop the others: every bundle is
    /// spawned, then the first panic goes on, as a batch of rows does. A
    /// panic of the iterator itself ends the batch there.
    fn spawn_each<B: Bundle>(
        &mut self,
        bundles: impl IntoIterator<Item = B>,
        mut each: impl FnMut(Entity),
    ) {
        let mut panics = DeferredPanic::new();
        for bundle in bundles {
            panics.run(|| each(self.spawn(bundle)));
        }
        panics.resume();
    }

    /// The entities of the rows [`World::spawn_rows`] appended, in order.
    fn spawned_entities(&self, rows: &SpawnedRows) -> Vec<Entity> {
        self.archetypes.get(rows.archetype).entities()[rows.rows.clone()].to_vec()
    }

    /// Runs the lifecycle of `entities`, just spawned with bundle `B`
    /// (which brings no required components: those bundles spawn through
    /// [`World::spawn`]): announcements, hooks, observers. The entities are
    /// complete before any of it runs, and stay if it panics.
    ///
    /// Inlined down to one test while nothing observes (no hook, no
    /// observer): every spawn passes here.
    #[inline(always)]
    fn after_spawn<B: Bundle>(&mut self, entities: &[Entity]) {
        if self.components.lifecycle_active() {
            self.after_spawn_announced::<B>(entities);
        }
    }

    /// [`World::after_spawn`] in a world where something observes.
    #[inline(never)]
    fn after_spawn_announced<B: Bundle>(&mut self, entities: &[Entity]) {
        if !self.spawn_has_lifecycle::<B>() {
            return;
        }
        let added: Vec<(ComponentId, bool)> =
            self.bundle_components::<B>().map(|id| (id, true)).collect();
        // One change: every entity is announced, even after a hook or
        // observer of another panicked (its commands are dropped, as a
        // panicking announcement's are); the observers' commands run once
        // all were, then the first panic goes on.
        let mut panics = DeferredPanic::new();
        for &entity in entities {
            panics.run(|| self.announce_insert(entity, true, &added));
        }
        panics.run(|| self.flush_observer_commands());
        panics.resume();
    }

    /// Whether spawning bundle `B` adds required components.
    fn spawn_brings_required<B: Bundle>(&mut self) -> bool {
        // Register first: a type's first registration may declare
        // requirements.
        let bundle_id = self.bundles.register::<B>(&mut self.components).id;
        if !self.components.lifecycle_active() {
            return false;
        }
        self.bundles
            .with_required(bundle_id, &mut self.components)
            .is_some()
    }

    /// Whether spawning with bundle `B` runs any lifecycle (announcements,
    /// hooks, observers, required components).
    fn spawn_has_lifecycle<B: Bundle>(&mut self) -> bool {
        self.components.lifecycle_active()
            && (self.components.spawn_announced() || self.bundle_announces::<B>())
    }

    /// Destroys `entity`, dropping each of its components exactly once.
    /// Its relation edges go with it, under each relation's
    /// [`OnTargetDespawn`](crate::OnTargetDespawn) policy: its
    /// [`Children`](crate::Children) are unparented and stay, roots (unlike
    /// Bevy 0.16+). To take the children along, use
    /// [`World::despawn_recursive`].
    ///
    /// Fails (changing nothing) if the handle is stale, or if a relation
    /// keeps `entity` alive ([`EntityError::DespawnRefused`]): a
    /// [`Refuse`](crate::OnTargetDespawn::Refuse) edge from a source that
    /// survives the despawn. A source that goes with it (itself, or one
    /// its relations doom, [`Despawn`](crate::OnTargetDespawn::Despawn))
    /// keeps nothing: the rule of every despawn, recursive and cascading
    /// ones included.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert!(world.despawn(e).is_ok());
    /// assert_eq!(world.despawn(e), Err(EntityError::NoSuchEntity(e)));
    /// ```
    pub fn despawn(&mut self, entity: Entity) -> Result<(), EntityError> {
        self.flush();
        if self.relations.active() {
            return self.despawn_relating(entity);
        }
        if self.components.lifecycle_active() {
            return self.despawn_now(entity);
        }
        // No relation and no lifecycle anywhere: nothing to announce, check
        // or detach, so the entity's storage is all there is to undo, here
        // rather than through `despawn_now`'s extra call.
        self.despawn_deferred(entity)?.resume();
        Ok(())
    }

    /// [`World::despawn`] in a world with relations: refuses a target its
    /// relations keep alive, and despawns afterwards the sources its
    /// relations' policies doom (iteratively, however deep the chain).
    #[inline(never)]
    fn despawn_relating(&mut self, entity: Entity) -> Result<(), EntityError> {
        self.under_relation_policies(entity, |world| world.despawn_now(entity))
    }

    /// Runs `despawn`, which despawns `entity` (as [`World::despawn_now`]
    /// does), under the relations' policies: refuses, changing nothing, a
    /// target its relations keep alive, and despawns afterwards the sources
    /// they doom. For [`World::despawn`] and [`World::take`].
    #[inline]
    fn under_relation_policies<R>(
        &mut self,
        entity: Entity,
        despawn: impl FnOnce(&mut World) -> Result<R, EntityError>,
    ) -> Result<R, EntityError> {
        // A pin only matters if its source survives: the rule of every
        // sweep, decided only when there is a pin (a despawn with none
        // pays one check).
        if self.relations.refusing(self, entity).is_some() {
            let sweep = self.decide_sweep(&[entity], Vec::new());
            if let Some(&(entity, relation)) = sweep.refused.first() {
                return Err(EntityError::DespawnRefused { entity, relation });
            }
        }
        // The sources go even if the despawn panicked (a value's drop: the
        // entity is gone all the same), then the panic goes on.
        match catch_unwind(AssertUnwindSafe(|| despawn(self))) {
            Ok(result) => {
                self.drain_doomed_sources();
                result
            }
            Err(payload) => {
                let _ = catch_unwind(AssertUnwindSafe(|| self.drain_doomed_sources()));
                resume_unwind(payload)
            }
        }
    }

    /// Despawns the sources queued by relation policies, unless an outer
    /// despawn is doing so already: one sweep. The doomed set is decided
    /// first, on the graph alone ([`World::decide_doomed`]: not on the order
    /// the edges were made in), then each goes; no observer's command runs
    /// until all did. A panic in one's despawn (a value's drop, a hook, an
    /// observer) does not stop the others: the first is raised once the
    /// queue is empty, so no doomed source waits for some later despawn to
    /// finish the job.
    pub(crate) fn drain_doomed_sources(&mut self) {
        if !self.relations.start_drain() {
            return;
        }
        let held = self.hold_observer_commands();
        let mut caught = None;
        loop {
            // The despawns below queue their own doomed sources again:
            // those decided already are gone by then, and those a survivor
            // keeps alive are left out again.
            let seeds = self.relations.take_pending();
            if seeds.is_empty() {
                break;
            }
            for source in self.decide_doomed(seeds) {
                if self.contains(source) {
                    if let Err(payload) =
                        catch_unwind(AssertUnwindSafe(|| self.despawn_now(source)))
                    {
                        caught.get_or_insert(payload);
                    }
                }
            }
        }
        self.release_observer_commands(held);
        self.relations.end_drain();
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.flush_observer_commands())) {
            caught.get_or_insert(payload);
        }
        if let Some(payload) = caught {
            resume_unwind(payload);
        }
    }

    /// Removes every relation edge of `entity` (about to be despawned). A
    /// panic of user code on the way (edge data's drop, an `OnUnrelate`
    /// observer, a hook or observer of a relation's components) is kept in
    /// `panics`: every edge goes all the same.
    #[inline(never)]
    fn detach_relations(&mut self, entity: Entity, panics: &mut DeferredPanic) {
        for k in 0..self.relations.len() {
            let Some((detach, relation, sources)) = self.relations.detacher(k) else {
                continue;
            };
            let has = |id| self.sparse.get(id).is_some_and(|s| s.contains(entity));
            if has(relation) || has(sources) {
                let mut pending = self.relations.take_pending();
                detach(self, entity, &mut pending, panics);
                self.relations.restore_pending(pending);
            }
        }
    }

    /// [`World::despawn`] without the relation policies.
    pub(crate) fn despawn_now(&mut self, entity: Entity) -> Result<(), EntityError> {
        if self.components.lifecycle_active() {
            let loc = self
                .entities
                .get(entity)
                .ok_or(EntityError::NoSuchEntity(entity))?;
            let ids = self.components_of(entity, loc);
            self.announce_despawn(entity, &ids);
        }
        // The despawn is complete even if a value's drop panicked: the
        // commands its observers queued run with it, then the panic goes on
        // (as for an insert), rather than waiting for some later operation.
        let panics = self.despawn_deferred(entity)?;
        // Also when the entity announced nothing itself: the edges it had
        // may have announced (`OnUnrelate`, a relation component's removal).
        // Only hooks and observers queue these commands, and any of them
        // makes the lifecycle active.
        if self.components.lifecycle_active() {
            self.flush_observer_commands();
        }
        panics.resume();
        Ok(())
    }

    /// Announces the despawn of `entity`, whose components are `ids`: each
    /// one's `on_remove` hook and `OnRemove` observers, then `OnDespawn`
    /// ones, if any of them is announced. Nothing has changed yet: a panic
    /// here leaves the entity whole. The lifecycle part of
    /// [`World::despawn_now`] and [`World::take`].
    #[inline]
    fn announce_despawn(&mut self, entity: Entity, ids: &[ComponentId]) {
        if self.components.lifecycle_active()
            && (self.components.despawn_announced()
                || self.components.announces_any(ids.iter().copied()))
        {
            self.announce_remove(entity, true, ids);
        }
    }

    /// Destroys `entity` without lifecycle announcements.
    fn despawn_quietly(&mut self, entity: Entity) -> Result<(), EntityError> {
        let panics = self.despawn_deferred(entity)?;
        if self.relations.active() {
            self.drain_doomed_sources();
        }
        panics.resume();
        Ok(())
    }

    /// [`World::despawn_quietly`], returning the panics of the values'
    /// drops for the caller to raise once it is done.
    fn despawn_deferred(&mut self, entity: Entity) -> Result<DeferredPanic, EntityError> {
        let mut panics = DeferredPanic::new();
        if self.relations.detaches_any() && self.contains(entity) {
            // No observer's command runs until the entity is gone: one
            // applied mid-detach could relate it again, or despawn it.
            let held = self.hold_observer_commands();
            self.detach_relations(entity, &mut panics);
            self.release_observer_commands(held);
        }
        let loc = self
            .entities
            .free(entity)
            .ok_or(EntityError::NoSuchEntity(entity))?;
        for (_, set) in self.sparse.iter_mut() {
            set.remove_drop(entity, &mut panics);
        }
        let table = self.archetypes.table_mut(loc.archetype);
        if let Some(moved) = bundle_io::drop_row(table, loc.row as usize, &mut panics) {
            // Counted in the entities' version by `free` above.
            self.entities.fill_hole(moved.index(), loc);
        }
        Ok(panics)
    }

    /// Despawns each of `roots` and everything below it through
    /// [`Children`], in one batch: the hierarchy's part of
    /// [`World::despawn_recursive`] (and the other sweeps) for a world
    /// whose lifecycle is inactive (nothing is announced, and no hook or
    /// observer can run midway), with `ChildOf`'s cleanup skipped
    /// (`Relations::skip_during`) and each root already unlinked from its
    /// parent, so every `ChildOf` edge left in the subtrees joins two of
    /// their entities (and no subtree holds another's root).
    ///
    /// Other relations are detached first, for the whole subtree. Then one
    /// walk, breadth first, reads each entity's children and, in the same
    /// step, frees its id and drops its table row: the walk's reads depend
    /// on each other (a chain is a linked list), and the step's other work
    /// fills their wait. Then each
    /// sparse set drops the values of the dead: in one sequential pass when
    /// the subtree is at least half of the set (as it is of `ChildOf`'s two
    /// sets in a large subtree), by lookups otherwise. The cost is linear
    /// in the subtree. `ChildOf` edges and `Children` of one child own
    /// nothing, so they are forgotten unread rather than dropped. The
    /// order in which values are dropped is unspecified.
    ///
    /// A panicking drop does not stop the batch; the first is raised at
    /// the end.
    pub(crate) fn despawn_tree_quietly(&mut self, roots: &[Entity]) {
        debug_assert!(!self.components.lifecycle_active());
        let (edges_id, children_id) = self.relations.ids::<ChildOf>().expect("registered");
        let mut panics = DeferredPanic::new();
        if self.relations.detaches_any() {
            // Other relations first, while every entity of the subtree is
            // alive (their cleanup keeps `ChildOf`'s edges, skipped).
            let subtree: Vec<Entity> = roots
                .iter()
                .flat_map(|&root| std::iter::once(root).chain(self.descendants(root)))
                .collect();
            for e in subtree {
                self.detach_relations(e, &mut panics);
            }
        }
        // The dead, by index, for the one-pass sets below: a bit an index
        // (a cache line covers 512 entities, where the entity table holds
        // 5), once there are enough of them for the bits to pay.
        let slots = self.entities.slots();
        let mut dead: Option<FixedBitSet> = None;
        // Whether some `Children` of the subtree owns a list.
        let mut long_lists = false;
        let mut order = roots.to_vec();
        let children_set = self.sparse.get(children_id);
        let (entities, archetypes) = (&mut self.entities, &mut self.archetypes);
        let mut i = 0;
        while i < order.len() {
            let e = order[i];
            // Every entity of `order` is alive when walked (the roots were
            // checked; lists name live entities only, and each entity is
            // listed by its one parent: a root, unlinked from its parent,
            // by none, so no walk meets one again).
            if let Some(children) = children_set.and_then(|set| set.get_live::<Children>(e)) {
                long_lists |= children.owns_heap();
                order.extend_from_slice(children);
            }
            if let Some(loc) = entities.free(e) {
                if let Some(dead) = &mut dead {
                    dead.insert(e.index() as usize);
                }
                let table = archetypes.table_mut(loc.archetype);
                if let Some(moved) = bundle_io::drop_row(table, loc.row as usize, &mut panics) {
                    entities.set_location(moved.index(), loc);
                }
            }
            i += 1;
            if dead.is_none() && i * 64 >= slots {
                let mut bits = FixedBitSet::with_capacity(slots);
                for e in &order[..i] {
                    bits.insert(e.index() as usize);
                }
                dead = Some(bits);
            }
        }
        // A `ChildOf` edge is inline (a `one` relation, with no data to
        // drop); a `Children` of one child is inline too.
        const { assert!(ChildOf::ONE && !std::mem::needs_drop::<ChildOf>()) };
        let forget: &[ComponentId] = match long_lists {
            true => &[edges_id],
            false => &[edges_id, children_id],
        };
        let entities = &self.entities;
        for (id, set) in self.sparse.iter_mut() {
            let drop = !forget.contains(&id);
            // Both ways cost O(subtree): the pass visits at most twice as
            // many values as the subtree has entities.
            if set.entities().len() > 2 * order.len() {
                for &e in &order {
                    if drop {
                        set.remove_drop(e, &mut panics);
                    } else {
                        set.remove_forget(e);
                    }
                }
            } else if let Some(dead) = &dead {
                // A set holds live entities only, and the subtree's are all
                // dead now: an index marked dead is one of the subtree.
                set.retain_alive(|e| !dead.contains(e.index() as usize), drop, &mut panics);
            } else {
                set.retain_alive(|e| entities.get(e).is_some(), drop, &mut panics);
            }
        }
        panics.resume();
    }

    /// Reserves an entity id through a shared reference: the id is valid at
    /// once, and becomes a live entity with no components at the next
    /// structural change (`spawn`, `insert`, `despawn`, ...). Until then
    /// [`World::contains`] is false for it. This is how deferred commands
    /// hand out ids while systems run.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let e = world.reserve_entity();
    /// assert!(!world.contains(e));
    /// world.insert_one(e, A).unwrap(); // flushes first
    /// assert!(world.has::<A>(e));
    /// ```
    pub fn reserve_entity(&self) -> Entity {
        self.entities.reserve()
    }

    /// Test hook: makes slot `index` (which must not hold a live entity)
    /// hand out `generation` next, so tests can cross the generation limit
    /// without four billion despawns. Not for use outside tests.
    #[doc(hidden)]
    pub fn debug_set_next_generation(&mut self, index: u32, generation: std::num::NonZeroU32) {
        self.flush();
        self.entities.set_next_generation(index, generation);
    }

    /// True if `entity` is alive in this world.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert!(world.contains(e));
    /// ```
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.entities.get(entity).is_some()
    }

    /// Number of live entities.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.spawn(());
    /// assert_eq!(world.len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.entities.len() as usize
    }

    /// True if no entity lives.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::World::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Despawns every entity, dropping every component once. Registered
    /// component types, archetypes and cached queries stay valid. Every
    /// relation edge goes with them, each heard by
    /// [`OnUnrelate`](crate::OnUnrelate) observers first, as a despawn's.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// world.clear();
    /// assert!(world.is_empty() && !world.contains(e));
    /// ```
    pub fn clear(&mut self) {
        self.flush();
        let announce = self.components.lifecycle_active();
        if announce {
            let live: Vec<Entity> = self
                .archetypes
                .iter()
                .flat_map(|a| a.entities().iter().copied())
                .collect();
            for entity in live {
                if let Some(loc) = self.entities.get(entity) {
                    let ids = self.components_of(entity, loc);
                    self.announce_remove(entity, true, &ids);
                }
            }
        }
        // Every edge goes too: `OnUnrelate` observers hear each one, as
        // from a despawn, while both ends can still be read. Their
        // commands wait for the end, with the lifecycle observers' (a
        // panicking observer drops them, and nothing is cleared).
        let held = self.hold_observer_commands();
        let announced = catch_unwind(AssertUnwindSafe(|| {
            let announcers = self.relations.clear_announcers();
            announcers
                .into_iter()
                .fold(false, |any, edges| edges(self) | any)
        }));
        self.release_observer_commands(held);
        let announced = announced.unwrap_or_else(|payload| resume_unwind(payload));
        self.entities.free_all();
        self.relations.cleared();
        let mut panics = DeferredPanic::new();
        for archetype in self.archetypes.iter_mut() {
            archetype.table.clear(&mut panics);
        }
        for (_, set) in self.sparse.iter_mut() {
            set.clear(&mut panics);
        }
        // As in `despawn`: the observers' commands run before a drop's
        // panic goes on, not at some later operation.
        if announce || announced {
            self.flush_observer_commands();
        }
        panics.resume();
    }

    // ----- components -------------------------------------------------------

    /// Adds the components of `bundle` to `entity`; components it already
    /// has are replaced (the old values dropped) and count as changed.
    ///
    /// Fails (dropping `bundle`, changing nothing) if the handle is stale.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A(u32);
    /// #[derive(Component)] struct B;
    /// let mut world = World::new();
    /// let e = world.spawn(A(1));
    /// world.insert(e, (A(2), B)).unwrap();
    /// assert_eq!(world.get::<A>(e).unwrap().0, 2);
    /// assert!(world.has::<B>(e));
    /// ```
    ///
    /// Also takes the bundles made at run time ([`DynamicBundle`]), as
    /// [`World::spawn`] does.
    #[inline]
    pub fn insert<B: DynamicBundle>(
        &mut self,
        entity: Entity,
        bundle: B,
    ) -> Result<(), EntityError> {
        bundle.insert_in(self, entity)
    }

    /// [`World::insert`] of a static bundle.
    pub(crate) fn insert_bundle<B: Bundle>(
        &mut self,
        entity: Entity,
        bundle: B,
    ) -> Result<(), EntityError> {
        self.flush();
        let loc = self
            .entities
            .get(entity)
            .ok_or(EntityError::NoSuchEntity(entity))?;
        // Register first: a bundle naming a type (or a parent) twice
        // panics here, before anything changed; and a type's first
        // registration may switch its lifecycle on (hooks, requirements
        // declared on the type).
        let bundle_id = self.bundles.register::<B>(&mut self.components).id;
        // A `ChildOf` in the bundle: its parent is checked before anything
        // changes, and the edge made once the components are in.
        let parent = self.bundle_parent(&bundle, entity)?;
        let info = self.bundles.get(bundle_id);
        if self.components.lifecycle_active() && self.components.announces_any(info.component_ids())
        {
            self.insert_announced(entity, loc, bundle_id, bundle, false, parent);
        } else {
            let disables = info.disables;
            let panics = self.insert_at(entity, loc, bundle_id, bundle);
            self.attach_bundle_parent(entity, parent);
            self.sync_disabled_if(disables, entity);
            panics.resume();
        }
        Ok(())
    }

    /// [`DynamicBundle::spawn_placed`] of a static bundle: `entity` was
    /// just placed, empty and unannounced; it gets `bundle` (and its
    /// requirements) in one move, then the spawn is announced.
    pub(crate) fn spawn_bundle_placed<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        if let Err(err) = self.try_spawn_bundle_placed(entity, bundle) {
            panic!("spawning {entity:?} with `ChildOf`: {err}");
        }
    }

    /// [`World::spawn_bundle_placed`], failing if the bundle's
    /// [`ChildOf`](crate::ChildOf) names a parent `entity` cannot have.
    /// The bundle is checked before the entity gets anything (its types
    /// registered: one named twice panics; its parent): a failed check
    /// despawns the placed, empty, unannounced entity again, unannounced,
    /// so the refused spawn leaves nothing.
    pub(crate) fn try_spawn_bundle_placed<B: Bundle>(
        &mut self,
        entity: Entity,
        bundle: B,
    ) -> Result<(), crate::relation::RelationError> {
        let loc = self.entities.get(entity).expect("placed by the caller");
        let checked = catch_unwind(AssertUnwindSafe(|| {
            let bundle_id = self.bundles.register::<B>(&mut self.components).id;
            Ok((bundle_id, self.bundle_parent(&bundle, entity)?))
        }));
        let (bundle_id, parent) = match checked {
            Ok(Ok(checked)) => checked,
            Ok(Err(err)) => {
                let _ = self.despawn_quietly(entity);
                return Err(err);
            }
            Err(payload) => {
                let _ = self.despawn_quietly(entity);
                resume_unwind(payload);
            }
        };
        let info = self.bundles.get(bundle_id);
        if self.components.lifecycle_active()
            && (self.components.spawn_announced()
                || self.components.announces_any(info.component_ids()))
        {
            self.insert_announced(entity, loc, bundle_id, bundle, true, parent);
        } else {
            let disables = info.disables;
            let panics = self.insert_at(entity, loc, bundle_id, bundle);
            self.attach_bundle_parent(entity, parent);
            self.sync_disabled_if(disables, entity);
            panics.resume();
        }
        Ok(())
    }

    /// [`World::spawn`] of a bundle holding a [`ChildOf`](crate::ChildOf):
    /// the parent is checked first (a stale one panics, spawning nothing),
    /// then the entity is placed empty and gets the bundle as
    /// [`World::spawn_at`] gives it, edge included.
    #[cold]
    #[inline(never)]
    fn spawn_with_parent<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.flush();
        // A bundle naming a type or a parent twice panics here, first.
        self.bundles.register::<B>(&mut self.components);
        if let Some(parent) = bundle.parent_in_bundle() {
            if !self.contains(parent) {
                panic!(
                    "spawn with `ChildOf({parent:?})`: {}",
                    crate::relation::RelationError::NoSuchEntity(parent)
                );
            }
        }
        let entity = self.entities.alloc();
        let row = self
            .archetypes
            .table_mut(ArchetypeId::EMPTY)
            .push_empty(entity);
        self.entities
            .set_location(entity.index(), location(ArchetypeId::EMPTY, row));
        self.spawn_bundle_placed(entity, bundle);
        entity
    }

    /// The structural part of [`World::insert`]: writes `bundle` (bundle
    /// `bundle_id`) into `entity` at `loc`. Returns the panics of replaced
    /// values' drops, for the caller to raise once it is done.
    #[inline]
    fn insert_at<B: Bundle>(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
        bundle: B,
    ) -> DeferredPanic {
        let tick = self.change_tick();
        let info = self.bundles.get(bundle_id);
        let mut panics = DeferredPanic::new();
        if info.table_ids.is_empty() {
            // Only sparse components: the entity keeps its archetype and its
            // row, so there is no move to plan.
            let mut ctx = WriteCtx {
                components: &self.components,
                sparse: &mut self.sparse,
                panics: &mut panics,
                tick,
            };
            bundle_io::write_sparse(entity, bundle, info, &mut ctx);
        } else {
            self.insert_into_tables(entity, loc, bundle_id, bundle, tick, &mut panics);
        }
        panics
    }

    /// [`World::insert`] with lifecycle: the missing requirements are made
    /// first (a panicking constructor changes nothing), then the bundle and
    /// the requirements go in, then the whole change is announced (bundle
    /// components in bundle order, then requirements, nearest first).
    #[cold]
    #[inline(never)]
    fn insert_announced<B: Bundle>(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
        bundle: B,
        spawned: bool,
        parent: Option<Entity>,
    ) {
        let mut changes = self.insert_changes(entity, loc, bundle_id);
        let made = self.make_required_or_discard(entity, loc, &changes, spawned, false);
        // `on_replace` hooks of the values about to be overwritten, before
        // the write, while they are readable. Hooks make no structural
        // change, so `loc` still holds.
        let replaced: Vec<ComponentId> = changes
            .iter()
            .filter(|&&(id, added)| !added && self.components.info(id).hooks().on_replace.is_some())
            .map(|&(id, _)| id)
            .collect();
        if !replaced.is_empty() {
            self.announce_replace(entity, &replaced);
        }
        let panics = if made.is_empty() {
            self.insert_at(entity, loc, bundle_id, bundle)
        } else {
            self.insert_with_made(entity, loc, bundle_id, bundle, made, &mut changes)
        };
        // The edge a `ChildOf` in the bundle names, before the bundle's
        // announcements: their observers find the parent set (and the
        // edge's observers' commands wait for them).
        self.attach_bundle_parent_announced(entity, parent);
        // The requirements' marker, if one is, was synced as they went in.
        self.sync_disabled_if(self.bundles.get(bundle_id).disables, entity);
        // The insert is complete even if a replaced value's drop panicked:
        // announce it, then let the panic go on.
        self.announce_insert(entity, spawned, &changes);
        self.flush_observer_commands();
        panics.resume();
    }

    /// For each component of bundle `bundle_id`: whether inserting it into
    /// `entity` adds it (rather than replacing it). For the announcements.
    #[cold]
    #[inline(never)]
    fn insert_changes(
        &self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
    ) -> Vec<(ComponentId, bool)> {
        self.bundles
            .get(bundle_id)
            .components
            .iter()
            .map(|&(id, _)| (id, !self.has_id(entity, loc, id)))
            .collect()
    }

    /// The part of [`World::insert`] for a bundle with table components:
    /// follows the archetype edge, moving the entity's row if the archetype
    /// changes.
    #[inline]
    fn insert_into_tables<B: Bundle>(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
        bundle: B,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        let info = self.bundles.get(bundle_id);
        let plan = self
            .archetypes
            .insert_plan(loc.archetype, info, &self.components);
        let mut ctx = WriteCtx {
            components: &self.components,
            sparse: &mut self.sparse,
            panics,
            tick,
        };
        let row = loc.row as usize;
        match plan.dst {
            None => {
                bundle_io::overwrite_row(plan.src, row, entity, bundle, info, plan.edge, &mut ctx)
            }
            Some(dst) => {
                let (new_row, moved) = bundle_io::move_and_write(
                    plan.src, row, dst, entity, bundle, info, plan.edge, &mut ctx,
                );
                self.entities
                    .set_location(entity.index(), location(plan.edge.target, new_row));
                if let Some(moved) = moved {
                    self.entities.set_location(moved.index(), loc);
                }
            }
        }
    }

    /// Adds (or replaces) one component. Same as [`World::insert`] with a
    /// single component.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Ghost;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.insert_one(e, Ghost).unwrap();
    /// assert!(world.has::<Ghost>(e));
    /// ```
    #[inline(always)]
    pub fn insert_one<C: Component>(
        &mut self,
        entity: Entity,
        component: C,
    ) -> Result<(), EntityError> {
        match C::STORAGE {
            StorageType::SparseSet => self.insert_sparse_one(entity, component),
            StorageType::Table => self.insert_bundle(entity, component),
        }
    }

    /// [`World::insert_one`] of a sparse component: the entity keeps its
    /// archetype and row, so this is one sparse-set write. The set is found
    /// through the remembered last type, not the bundle registry; a
    /// component with announced lifecycle takes [`World::insert`]'s path.
    ///
    /// Always inlined: `insert`, `(B,)`, `EntityWorldMut::insert` and
    /// commands all come here, and with that many callers the compiler
    /// left it out of line, at a quarter more per toggle than inlined.
    #[inline(always)]
    fn insert_sparse_one<C: Component>(
        &mut self,
        entity: Entity,
        component: C,
    ) -> Result<(), EntityError> {
        self.flush();
        if self.entities.get(entity).is_none() {
            return Err(EntityError::NoSuchEntity(entity));
        }
        let tick = self.change_tick();
        // One type check finds the set; a first use (or another sparse type
        // used since) goes out of line.
        let Some((id, mut set)) = self.sparse.typed::<C>() else {
            return self.insert_sparse_one_first(entity, component);
        };
        if self.components.lifecycle_active() && self.components.announces(id) {
            return self.insert_bundle_cold(entity, component);
        }
        // The set is complete before a replaced value's drop runs, so a
        // panic there leaves nothing half-done.
        let replaced = set.insert(entity, component, tick);
        if is_disabled_marker::<C>() {
            self.sync_disabled(entity);
        }
        drop(replaced);
        Ok(())
    }

    /// [`World::insert_bundle`] out of line: the announced path of
    /// [`World::insert_sparse_one`], kept out of its body so the hit path
    /// stays small enough to inline where users call it.
    #[cold]
    #[inline(never)]
    fn insert_bundle_cold<C: Component>(
        &mut self,
        entity: Entity,
        component: C,
    ) -> Result<(), EntityError> {
        self.insert_bundle(entity, component)
    }

    /// [`World::remove_static`] out of line, for
    /// [`World::remove_sparse_one`] as [`World::insert_bundle_cold`] is for
    /// the insert.
    #[cold]
    #[inline(never)]
    fn remove_static_cold<C: Component>(&mut self, entity: Entity) -> Result<C, ComponentError> {
        self.remove_static::<C>(entity)
    }

    /// [`World::insert_sparse_one`] when `C`'s set is not the remembered
    /// one: registers `C` first, as `insert` does (a first registration may
    /// switch its lifecycle on), remembers its set (made if needed), then
    /// takes the fast path.
    #[cold]
    #[inline(never)]
    fn insert_sparse_one_first<C: Component>(
        &mut self,
        entity: Entity,
        component: C,
    ) -> Result<(), EntityError> {
        if !self.sparse.recall::<C>() {
            let id = self.components.register::<C>();
            self.sparse.remember::<C>(id, &self.components, true);
        }
        self.insert_sparse_one(entity, component)
    }

    /// Removes the components of bundle `B` from `entity` and returns them.
    ///
    /// Fails, changing nothing, if the handle is stale or the entity lacks
    /// any of them (the error names the first missing one).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct A(u32);
    /// #[derive(Component, Debug, PartialEq)] struct B(u32);
    /// let mut world = World::new();
    /// let e = world.spawn((A(1), B(2)));
    /// assert_eq!(world.remove::<(A, B)>(e).unwrap(), (A(1), B(2)));
    /// assert!(world.remove::<A>(e).is_err());
    /// ```
    #[inline]
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        // A single component takes `remove_one`'s path (see
        // `Bundle::__remove_from_world`); every other bundle `remove_static`'s.
        B::__remove_from_world(self, entity)
    }

    /// [`World::remove`] of a static bundle, by its bundle registration.
    pub(crate) fn remove_static<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        if B::HAS_PARENT {
            return self.remove_child_of::<B>(entity);
        }
        self.remove_bundle::<B>(entity)
    }

    /// [`World::remove`] of a bundle without `ChildOf`.
    #[inline]
    fn remove_bundle<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        self.flush();
        let loc = self
            .entities
            .get(entity)
            .ok_or(ComponentError::NoSuchEntity(entity))?;
        let bundle_id = self.bundles.register::<B>(&mut self.components).id;
        let info = self.bundles.get(bundle_id);
        if self.relations.active() {
            self.refuse_edge_components(info.component_ids());
        }
        // A row move carries the entity's disabled bit: only taking the
        // marker itself changes the mirror.
        let disables = info.disables;
        let removed = if info.table_ids.is_empty() {
            self.remove_sparse::<B>(entity, bundle_id)
        } else if self.components.lifecycle_active()
            && self.components.announces_any(info.component_ids())
        {
            self.remove_announced::<B>(entity, loc, bundle_id)
        } else {
            self.remove_from_tables::<B>(entity, loc, bundle_id)
        };
        if disables && removed.is_ok() {
            self.sync_disabled(entity);
        }
        removed
    }

    /// [`World::remove`] of a bundle with table components, some of whose
    /// removals are announced: checks the entity has the whole bundle,
    /// announces, then removes it.
    #[cold]
    #[inline(never)]
    fn remove_announced<B: Bundle>(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
    ) -> Result<B, ComponentError> {
        if let Some(err) = self.first_missing(entity, loc, bundle_id) {
            return Err(err);
        }
        self.announce_bundle_removal(entity, bundle_id);
        let bundle = self
            .remove_from_tables::<B>(entity, loc, bundle_id)
            .expect("observers and hooks make no structural change");
        self.flush_observer_commands();
        Ok(bundle)
    }

    /// [`World::remove`] of a bundle made only of sparse components: the
    /// entity keeps its archetype and row, and each value is looked up once.
    #[inline(always)]
    fn remove_sparse<B: Bundle>(
        &mut self,
        entity: Entity,
        bundle_id: BundleId,
    ) -> Result<B, ComponentError> {
        let info = self.bundles.get(bundle_id);
        let mut slots = match bundle_io::find_sparse(entity, info, &self.sparse) {
            Ok(slots) => slots,
            Err(id) => return Err(self.missing_component(entity, id)),
        };
        let announce = self.components.lifecycle_active()
            && self.components.announces_any(info.component_ids());
        if announce {
            self.announce_bundle_removal(entity, bundle_id);
            // Hooks and observers may not change structure, but look again
            // rather than rely on it.
            let info = self.bundles.get(bundle_id);
            slots = bundle_io::find_sparse(entity, info, &self.sparse)
                .expect("observers and hooks make no structural change");
        }
        let info = self.bundles.get(bundle_id);
        let bundle = bundle_io::take_sparse::<B>(entity, info, &mut self.sparse, &slots);
        if announce {
            self.flush_observer_commands();
        }
        Ok(bundle)
    }

    /// Removes `entity`'s `C`, one of a relation's own components, as a
    /// step of an edge change that must complete: its `on_remove` hook and
    /// `OnRemove` observers run first, as for [`World::remove_one`], but
    /// their panic is kept in `panics` rather than stopping the removal (the
    /// other end of the edge has changed already). `C` is sparse.
    pub(crate) fn remove_edge_part<C: Component>(
        &mut self,
        entity: Entity,
        panics: &mut DeferredPanic,
    ) -> Option<C> {
        let id = self.components.id_of::<C>()?;
        if !self.sparse.get(id).is_some_and(|s| s.contains(entity)) {
            return None;
        }
        if self.components.lifecycle_active() && self.components.announces(id) {
            panics.run(|| self.announce_remove(entity, false, &[id]));
        }
        self.take_edge_part_quietly(entity)
    }

    /// `entity`'s `C` (a relation's edge component, sparse), mutably and
    /// not marked changed: for the back indices the world keeps inside
    /// the edge lists, which change where an edge sits in the other list,
    /// not the entity's edges.
    pub(crate) fn edge_part_mut_unmarked<C: Component>(
        &mut self,
        entity: Entity,
    ) -> Option<&mut C> {
        debug_assert!(C::STORAGE == StorageType::SparseSet);
        let id = self.components.id_of::<C>()?;
        self.sparse.get_mut(id)?.get_mut_unmarked::<C>(entity)
    }

    /// [`World::remove_edge_part`] without the announcements: for an
    /// entity being despawned, whose despawn announced the removal of all
    /// its components already (and the last step of `remove_edge_part`).
    pub(crate) fn take_edge_part_quietly<C: Component>(&mut self, entity: Entity) -> Option<C> {
        let id = self.components.id_of::<C>()?;
        self.sparse.get_mut(id)?.remove_checked::<C>(entity)
    }

    /// Panics if `ids` names one end of a relation's edges (`Relation<R>`,
    /// `Sources<R>`): only relate/unrelate and despawn change those, since
    /// taken out by hand, the other end of each edge would name an entity
    /// with no edge. Called before anything changes.
    #[cold]
    #[inline(never)]
    fn refuse_edge_components(&self, ids: impl IntoIterator<Item = ComponentId>) {
        for id in ids {
            if self.relations.is_edge_component(id) {
                panic!(
                    "`{}` is one end of a relation's edges, which the world keeps: \
                     use `unrelate`/`unrelate_all` or despawn, which fix the other end too",
                    self.components.name(id)
                );
            }
        }
    }

    /// [`World::refuse_edge_components`] of `C`, out of line: while some
    /// relation is in use, a removal pays for this call, and one with no
    /// relation pays only the caller's branch on `relations.active()`.
    #[cold]
    #[inline(never)]
    fn refuse_edge_component<C: Component>(&mut self) {
        let id = self.components.register::<C>();
        self.refuse_edge_components([id]);
    }

    /// The error for removing bundle `bundle_id` from `entity` (at `loc`),
    /// if it lacks some of it: names the first one missing, in bundle
    /// order.
    #[cold]
    #[inline(never)]
    fn first_missing(
        &self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
    ) -> Option<ComponentError> {
        let table = &self.archetypes.get(loc.archetype).table;
        let missing = self
            .bundles
            .get(bundle_id)
            .components
            .iter()
            .find(|&&(id, storage)| match storage {
                StorageType::Table => table.column_index(id).is_none(),
                StorageType::SparseSet => !self.sparse.get(id).is_some_and(|s| s.contains(entity)),
            });
        missing.map(|&(id, _)| self.missing_component(entity, id))
    }

    #[cold]
    #[inline(never)]
    fn missing_component(&self, entity: Entity, id: ComponentId) -> ComponentError {
        ComponentError::MissingComponent {
            entity,
            component: self.components.name(id).to_owned(),
        }
    }

    /// Announces the removal of bundle `bundle_id`'s components (the
    /// lifecycle part of [`World::remove`], before anything is removed).
    #[cold]
    #[inline(never)]
    fn announce_bundle_removal(&mut self, entity: Entity, bundle_id: BundleId) {
        let ids: Vec<ComponentId> = self.bundles.get(bundle_id).component_ids().collect();
        self.announce_remove(entity, false, &ids);
    }

    /// The part of [`World::remove`] for a bundle with table components:
    /// takes the values and moves the row to the archetype without them.
    /// Fails, changing nothing, if the entity lacks any of them: the table
    /// components' presence is the removal edge's (found once per
    /// archetype), the sparse ones' is looked up.
    #[inline]
    fn remove_from_tables<B: Bundle>(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
    ) -> Result<B, ComponentError> {
        let info = self.bundles.get(bundle_id);
        let plan = self
            .archetypes
            .remove_plan(loc.archetype, info, &self.components);
        if plan.edge.taken.is_none()
            || info.components.len() != info.table_ids.len()
                && !bundle_io::has_sparse_parts(entity, info, &self.sparse)
        {
            let missing = self.first_missing(entity, loc, bundle_id);
            return Err(missing.expect("some component of the bundle is missing"));
        }
        let target = plan.edge.target;
        let (bundle, moved) = bundle_io::take_bundle::<B>(
            plan.src,
            loc.row as usize,
            plan.dst,
            plan.edge,
            entity,
            info,
            &mut self.sparse,
        );
        if let Some((new_row, swapped)) = moved {
            self.entities
                .set_location(entity.index(), location(target, new_row));
            if let Some(swapped) = swapped {
                self.entities.set_location(swapped.index(), loc);
            }
        }
        Ok(bundle)
    }

    /// Removes one component and returns it. Same as [`World::remove`] with a
    /// single component.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Ghost(u8);
    /// let mut world = World::new();
    /// let e = world.spawn(Ghost(3));
    /// assert_eq!(world.remove_one::<Ghost>(e), Ok(Ghost(3)));
    /// ```
    #[inline(always)]
    pub fn remove_one<C: Component>(&mut self, entity: Entity) -> Result<C, ComponentError> {
        match C::STORAGE {
            StorageType::SparseSet => self.remove_sparse_one::<C>(entity),
            StorageType::Table => self.remove_static::<C>(entity),
        }
    }

    /// [`World::remove_one`] of a sparse component: one sparse-set removal,
    /// found as in [`World::insert_sparse_one`]. A component with announced
    /// lifecycle takes [`World::remove`]'s path.
    #[inline(always)]
    fn remove_sparse_one<C: Component>(&mut self, entity: Entity) -> Result<C, ComponentError> {
        self.flush();
        if self.relations.active() {
            // A stale handle's error comes before the refusal.
            if self.entities.get(entity).is_none() {
                return Err(ComponentError::NoSuchEntity(entity));
            }
            self.refuse_edge_component::<C>();
        }
        let Some((id, mut set)) = self.sparse.typed::<C>() else {
            return self.remove_sparse_one_first::<C>(entity);
        };
        if self.components.lifecycle_active() && self.components.announces(id) {
            return self.remove_static_cold::<C>(entity);
        }
        // The entity is not looked up: a set holds values of live entities
        // only (despawn and clear empty every set of the dead), and its
        // lookup matches the generation, so a value found is a live
        // entity's; when none is found, the error says which it is.
        let Some(removed) = set.remove(entity) else {
            return self.sparse_remove_error::<C>(entity);
        };
        debug_assert!(
            self.entities.get(entity).is_some(),
            "a set held a dead entity's value"
        );
        if is_disabled_marker::<C>() {
            self.sync_disabled(entity);
        }
        Ok(removed)
    }

    /// Why [`World::remove_sparse_one`] found no `C` for `entity` (a stale
    /// handle, or an entity without one), as the whole `Result`, out of
    /// line: the hit path's `Ok` then stays in registers (merged with a
    /// built error, the whole `Result` went through the stack on every hit
    /// of `remove_one`).
    #[cold]
    #[inline(never)]
    fn sparse_remove_error<C: Component>(&self, entity: Entity) -> Result<C, ComponentError> {
        if self.entities.get(entity).is_none() {
            Err(ComponentError::NoSuchEntity(entity))
        } else {
            Err(missing::<C>(entity))
        }
    }

    /// [`World::remove_sparse_one`] when `C`'s set is not the remembered
    /// one: remembers it and takes the fast path, or, if there is no set
    /// yet (no entity has a `C`, and none is made here, so set-creation
    /// order stays that of the inserts), takes [`World::remove`]'s path.
    #[cold]
    #[inline(never)]
    fn remove_sparse_one_first<C: Component>(
        &mut self,
        entity: Entity,
    ) -> Result<C, ComponentError> {
        if !self.sparse.recall::<C>() {
            let id = self.components.register::<C>();
            if !self.sparse.remember::<C>(id, &self.components, false) {
                return self.remove_static::<C>(entity);
            }
        }
        self.remove_sparse_one::<C>(entity)
    }

    /// A shared reference to `entity`'s `T`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(7));
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 7);
    /// ```
    #[inline]
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, ComponentError> {
        // The hit path is straight-line code; every miss (no cached type,
        // a hint for another archetype, a dead entity, no such component)
        // takes one out-of-line call, which builds the error too. Split so,
        // the hit path tests the type cache once, where checking it first
        // and the entity after kept its answer in a flag tested twice.
        match self.get_hinted::<T>(entity) {
            Some(value) => Ok(value),
            None => {
                let found = self.get_searched(entity);
                // A found entity is alive, so this never fires; written
                // out, it tells the compiler that both ways out of `get`
                // passed the entity's generation check, which a `get_mut`
                // of the same entity next then skips (the suite's
                // random_get: 59 to 54 instructions a pair, callgrind).
                if found.is_ok() && self.entities.get_unverified(entity).is_none() {
                    unreachable!("a found entity is alive");
                }
                found
            }
        }
    }

    /// [`World::get`] without building an error: for this crate's lookups
    /// that expect a miss (a relation's component on an entity that has
    /// none yet), where the error's type name would cost more than the
    /// lookup.
    #[inline]
    pub(crate) fn get_opt<T: Component>(&self, entity: Entity) -> Option<&T> {
        if let Some(value) = self.get_hinted::<T>(entity) {
            return Some(value);
        }
        let loc = self.entities.get_unverified(entity)?;
        self.component_at_searched(entity, loc)
    }

    /// `entity`'s `T` when the column hint of `T`'s type-cache slot names
    /// the column of the entity's archetype (the common case: a run of
    /// lookups among entities of one archetype), else `None` for the
    /// caller's search. A hit costs the hint (a pointer to the column),
    /// the entity's location, then the column: the column's archetype
    /// compared with the entity's, its `TypeId` with `T`'s and its length
    /// with the row (`Column::get`), with no lookup of `T`'s component id
    /// and no indexing of the archetype list or the table's columns. The
    /// slot may hold another type's hint (the cache is direct-mapped), or
    /// a hint for another archetype; either fails a check here and costs a
    /// search, never a wrong read. The hint is read before the entity's
    /// location: it is an atomic, and an atomic load keeps the compiler
    /// from merging the loads around it, so it goes first, where the entity
    /// lookup after it (and a `get_mut` of the same entity next) can still
    /// share loads. The entity's location is unverified: an invalid one's
    /// archetype (`u32::MAX`) is no column's.
    #[inline(always)]
    fn get_hinted<T: Component>(&self, entity: Entity) -> Option<&T> {
        if T::STORAGE != StorageType::Table {
            return None;
        }
        let column = self.archetypes.hinted_column::<T>();
        let loc = self.entities.get_unverified(entity)?;
        if column.archetype() != loc.archetype.index() as u32 {
            return None;
        }
        column.get::<T>(loc.row as usize)
    }

    /// [`World::get`] of an entity whose location the caller found (a
    /// handle's: [`EntityRef::get`](crate::EntityRef::get)), with no
    /// second lookup of the entity: the hinted column checked against the
    /// location, else a search, else the error `get` gives.
    #[inline]
    pub(crate) fn get_at<T: Component>(
        &self,
        entity: Entity,
        loc: EntityLocation,
    ) -> Result<&T, ComponentError> {
        let column = self.archetypes.hinted_column::<T>();
        let hit = if T::STORAGE == StorageType::Table
            && column.archetype() == loc.archetype.index() as u32
        {
            column.get::<T>(loc.row as usize)
        } else {
            None
        };
        match hit {
            Some(value) => Ok(value),
            None => self.get_at_searched(entity, loc),
        }
    }

    /// [`World::get_at`] when the hint missed (cold, as `get_searched`).
    #[cold]
    #[inline(never)]
    fn get_at_searched<T: Component>(
        &self,
        entity: Entity,
        loc: EntityLocation,
    ) -> Result<&T, ComponentError> {
        match self.component_at_searched(entity, loc) {
            Some(value) => Ok(value),
            None => Err(lookup_error::<T>(entity, loc)),
        }
    }

    /// [`World::get`] when [`World::get_hinted`] missed: the entity looked
    /// up again, the column searched (refreshing the hint), or the error.
    /// Cold, so that the hit path falls through to the caller's code with
    /// this call laid out after it (no jump over it on every hit; it is
    /// only the common path while lookups alternate between archetypes).
    #[cold]
    #[inline(never)]
    fn get_searched<T: Component>(&self, entity: Entity) -> Result<&T, ComponentError> {
        let loc = self
            .entities
            .get_unverified(entity)
            .ok_or(ComponentError::NoSuchEntity(entity))?;
        match self.component_at_searched(entity, loc) {
            Some(value) => Ok(value),
            None => Err(lookup_error::<T>(entity, loc)),
        }
    }

    /// [`World::get_hinted`]'s check for `&mut` access: the entity's
    /// location if `T`'s column hint names its column (see
    /// [`Archetypes::hint_hits`](crate::archetype::Archetypes::hint_hits)),
    /// so that the caller can take the exclusive borrow only on a hit.
    #[inline(always)]
    fn hinted_slot<T: Component>(&mut self, entity: Entity) -> Option<EntityLocation> {
        if T::STORAGE != StorageType::Table {
            return None;
        }
        let loc = self.entities.get_unverified(entity)?;
        self.archetypes.hint_hits::<T>(loc).then_some(loc)
    }

    /// [`World::component_at`] when the type's hint does not name the
    /// entity's archetype: the column by id, and the hint refreshed.
    #[inline(never)]
    fn component_at_searched<T: Component>(
        &self,
        entity: Entity,
        loc: EntityLocation,
    ) -> Option<&T> {
        if !loc.is_valid() {
            return None;
        }
        let (id, holds_slot) = self.components.typed_id_hinted::<T>()?;
        match T::STORAGE {
            StorageType::Table => {
                let table = &self.archetypes.get(loc.archetype).table;
                let i = table.column_index(id.id())?;
                if holds_slot {
                    self.archetypes
                        .remember_column(type_slot::<T>(), loc.archetype, i);
                }
                table.column_at(i).get_typed(id, loc.row as usize)
            }
            StorageType::SparseSet => self.sparse.get(id.id())?.get::<T>(entity),
        }
    }

    /// [`World::get_mut`] without building an error (see
    /// [`World::get_opt`]).
    #[inline]
    pub(crate) fn get_mut_opt<T: Component>(&mut self, entity: Entity) -> Option<&mut T> {
        let tick = Tick::new(*self.change_tick.get_mut());
        if let Some(loc) = self.hinted_slot::<T>(entity) {
            return self.archetypes.hinted_mut(loc, tick);
        }
        let loc = self.entities.get_unverified(entity)?;
        self.component_at_mut_searched(entity, loc, tick)
    }

    /// [`World::component_at_mut`] when the hint misses (see
    /// [`World::component_at_searched`]).
    #[inline(never)]
    fn component_at_mut_searched<T: Component>(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        tick: Tick,
    ) -> Option<&mut T> {
        if !loc.is_valid() {
            return None;
        }
        let (id, holds_slot) = self.components.typed_id_hinted::<T>()?;
        match T::STORAGE {
            StorageType::Table => {
                let i = self
                    .archetypes
                    .get(loc.archetype)
                    .table
                    .column_index(id.id())?;
                if holds_slot {
                    self.archetypes
                        .remember_column(type_slot::<T>(), loc.archetype, i);
                }
                self.archetypes
                    .table_mut(loc.archetype)
                    .column_at_mut(i)
                    .get_typed_mut(id, loc.row as usize, tick)
            }
            StorageType::SparseSet => self
                .sparse
                .get_mut(id.id())
                .and_then(|s| s.get_mut::<T>(entity, tick)),
        }
    }

    /// [`World::get_mut`] when [`World::hinted_slot`] missed (see
    /// [`World::get_searched`], cold for the same reason).
    #[cold]
    #[inline(never)]
    fn get_mut_searched<T: Component>(&mut self, entity: Entity) -> Result<&mut T, ComponentError> {
        let tick = Tick::new(*self.change_tick.get_mut());
        let loc = self
            .entities
            .get_unverified(entity)
            .ok_or(ComponentError::NoSuchEntity(entity))?;
        match self.component_at_mut_searched(entity, loc, tick) {
            Some(value) => Ok(value),
            None => Err(lookup_error::<T>(entity, loc)),
        }
    }

    /// A mutable reference to `entity`'s `T`, which counts as a change (for
    /// [`Changed`](crate::Changed) filters) whether or not it is written.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Health(7));
    /// world.get_mut::<Health>(e).unwrap().0 -= 2;
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 5);
    /// ```
    #[inline]
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<&mut T, ComponentError> {
        crate::component::require_mutable::<T>();
        // As in `get`: a straight-line hit path, one call for every miss.
        if let Some(loc) = self.hinted_slot::<T>(entity) {
            let tick = Tick::new(*self.change_tick.get_mut());
            // `hinted_slot` checked the column, type and row this takes,
            // through the same `&mut self`: it does not miss.
            return self
                .archetypes
                .hinted_mut(loc, tick)
                .ok_or_else(|| missing::<T>(entity));
        }
        self.get_mut_searched(entity)
    }

    /// True if `entity` is alive and has a `T`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Ghost;
    /// let mut world = World::new();
    /// let e = world.spawn(Ghost);
    /// assert!(world.has::<Ghost>(e));
    /// ```
    #[inline]
    pub fn has<T: Component>(&self, entity: Entity) -> bool {
        // Not `get(..).is_ok()`: a miss would build (and allocate) the
        // error's type name only to drop it.
        self.get_opt::<T>(entity).is_some()
    }

    /// True if `entity` is alive and has component `id` (a table or sparse
    /// one, a Rust type or runtime-defined): [`World::has`] for code that
    /// knows components by id.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] #[component(storage = "sparse")] struct Ghost;
    /// let mut world = World::new();
    /// let e = world.spawn(Ghost);
    /// let id = world.component_id::<Ghost>().unwrap();
    /// assert!(world.contains_id(e, id));
    /// let bare = world.spawn(());
    /// assert!(!world.contains_id(bare, id));
    /// ```
    pub fn contains_id(&self, entity: Entity, id: ComponentId) -> bool {
        let Some(loc) = self.location(entity) else {
            return false;
        };
        match self.components.get_info(id).map(ComponentInfo::storage) {
            Some(StorageType::Table) => self.archetypes.get(loc.archetype).contains(id),
            Some(StorageType::SparseSet) => self.sparse.find(id, entity).is_some(),
            None => false,
        }
    }

    // ----- queries ----------------------------------------------------------

    /// Builds a cached query for `Q` (a tuple of `Entity`, `&T`, `&mut T`,
    /// `Option<..>` and [`Has<T>`](crate::Has)).
    ///
    /// Panics if `Q` aliases a component (`(&mut A, &A)`), naming it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// world.spawn(Health(3));
    /// let mut q = world.query::<&Health>();
    /// assert_eq!(q.iter(&world).map(|h| h.0).sum::<u32>(), 3);
    /// ```
    pub fn query<Q: QueryData>(&mut self) -> QueryState<Q, ()> {
        QueryState::new(self)
    }

    /// Builds a cached query for `Q` filtered by `F` (a tuple of
    /// [`With`](crate::With), [`Without`](crate::Without),
    /// [`Or`](crate::Or), [`Added`](crate::Added) and
    /// [`Changed`](crate::Changed)).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// world.spawn(Health(3));
    /// world.spawn((Health(5), Player));
    /// let mut q = world.query_filtered::<&Health, Without<Player>>();
    /// assert_eq!(q.iter(&world).map(|h| h.0).collect::<Vec<_>>(), [3]);
    /// ```
    pub fn query_filtered<Q: QueryData, F: QueryFilter>(&mut self) -> QueryState<Q, F> {
        QueryState::new(self)
    }

    /// The components of bundle `B`, in bundle order.
    fn bundle_components<B: Bundle>(&mut self) -> impl Iterator<Item = ComponentId> + '_ {
        let info = self.bundles.register::<B>(&mut self.components);
        info.component_ids()
    }

    /// True if some component of bundle `B` has its lifecycle announced.
    fn bundle_announces<B: Bundle>(&mut self) -> bool {
        let info = self.bundles.register::<B>(&mut self.components);
        self.components.announces_any(info.component_ids())
    }

    /// True if the entity at `loc` has component `id`.
    fn has_id(&self, entity: Entity, loc: EntityLocation, id: ComponentId) -> bool {
        match self.components.info(id).storage() {
            StorageType::Table => self.archetypes.get(loc.archetype).contains(id),
            StorageType::SparseSet => self.sparse.get(id).is_some_and(|s| s.contains(entity)),
        }
    }

    /// Every component of the entity at `loc`: table ones in id order, then
    /// sparse ones in set-creation order.
    fn components_of(&self, entity: Entity, loc: EntityLocation) -> Vec<ComponentId> {
        let mut ids = self.archetypes.get(loc.archetype).components().to_vec();
        ids.extend(
            self.sparse
                .iter()
                .filter(|(_, s)| s.contains(entity))
                .map(|(id, _)| id),
        );
        ids
    }

    // ----- registry and introspection ----------------------------------------

    /// Registers `T` (if new) and returns its id in this world.
    ///
    /// # Panics
    /// If a runtime-defined component
    /// ([`World::register_dynamic_component`]) already has `T`'s short
    /// name: one name means one component. Every operation that registers
    /// `T` on first use (spawn, insert, queries) panics the same way.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert_eq!(world.component_id::<A>(), Some(id));
    /// ```
    pub fn register_component<T: Component>(&mut self) -> ComponentId {
        self.components.register::<T>()
    }

    /// `T`'s id, if this world has seen `T`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// assert_eq!(World::new().component_id::<A>(), None);
    /// ```
    pub fn component_id<T: Component>(&self) -> Option<ComponentId> {
        self.components.id_of::<T>()
    }

    /// What this world knows about component `id`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert_eq!(world.component_info(id).unwrap().name(), "A");
    /// ```
    pub fn component_info(&self, id: ComponentId) -> Option<&ComponentInfo> {
        self.components.get_info(id)
    }

    /// What this world knows about every component it has registered (Rust
    /// types and runtime-defined ones), in id order.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// #[derive(Component)] #[component(storage = "sparse")] struct B;
    /// let mut world = World::new();
    /// world.spawn((A, B));
    /// let sparse: Vec<&str> = world
    ///     .component_infos()
    ///     .filter(|i| i.storage() == StorageType::SparseSet)
    ///     .map(|i| i.name())
    ///     .collect();
    /// assert!(sparse.contains(&"B") && !sparse.contains(&"A"));
    /// ```
    pub fn component_infos(&self) -> impl ExactSizeIterator<Item = &ComponentInfo> + '_ {
        self.components.infos()
    }

    /// Every archetype, in creation order (the empty archetype first).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// world.spawn(A);
    /// let sizes: Vec<usize> = world.archetypes().map(|a| a.len()).collect();
    /// assert_eq!(sizes, [0, 1]);
    /// ```
    pub fn archetypes(&self) -> impl ExactSizeIterator<Item = &Archetype> + '_ {
        self.archetypes.iter()
    }

    /// The archetype `id`, or `None` if this world has none of that id.
    ///
    /// # Example
    /// ```
    /// use mosaic::{ArchetypeId, World};
    /// let world = World::new();
    /// assert!(world.get_archetype(ArchetypeId::EMPTY).unwrap().is_empty());
    /// ```
    pub fn get_archetype(&self, id: ArchetypeId) -> Option<&Archetype> {
        self.archetypes.as_slice().get(id.index())
    }

    /// Number of archetypes (including the empty one).
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::World::new().archetype_count(), 1);
    /// ```
    pub fn archetype_count(&self) -> usize {
        self.archetypes.len()
    }

    /// How many entities have sparse-set component `id` (0 for a table
    /// component, or one nothing has had yet): the size of its sparse set.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] #[component(storage = "sparse")] struct Burning;
    /// let mut world = World::new();
    /// world.spawn(Burning);
    /// world.spawn(Burning);
    /// let id = world.component_id::<Burning>().unwrap();
    /// assert_eq!(world.sparse_set_len(id), 2);
    /// ```
    pub fn sparse_set_len(&self, id: ComponentId) -> usize {
        self.sparse.get(id).map_or(0, |set| set.entities().len())
    }

    // ----- change ticks -----------------------------------------------------

    /// The world's current change tick: the tick structural changes and
    /// [`World::get_mut`] stamp values with.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let before = world.change_tick();
    /// world.advance_change_tick(5);
    /// assert_eq!(world.change_tick().get(), before.get() + 5);
    /// ```
    #[inline]
    pub fn change_tick(&self) -> Tick {
        Tick::new(self.change_tick.load(Ordering::Relaxed))
    }

    /// Advances the change tick by `ticks`, clamping stored ticks as it goes
    /// (see the wrapping rule in [`Tick`]). Every query run advances it by
    /// one; this is for tests and tools that need to move time on, for
    /// example across the `u32` wrap.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.advance_change_tick(u32::MAX); // wraps, and that is fine
    /// assert_eq!(world.change_tick().get(), 0);
    /// ```
    pub fn advance_change_tick(&mut self, ticks: u32) {
        let mut left = ticks;
        while left > 0 {
            // Never let more than CHECK_INTERVAL ticks pass between two
            // clamps, counting the ticks query runs took since the last one:
            // otherwise an old value's age could pass 2^32 and wrap to "new".
            let since = self
                .change_tick()
                .get()
                .wrapping_sub(self.last_check_tick.get());
            let step = left.min(CHECK_INTERVAL.saturating_sub(since).max(1));
            self.change_tick.fetch_add(step, Ordering::Relaxed);
            left -= step;
            self.check_change_ticks();
        }
    }

    /// Starts a query run: returns the tick the run stamps changes with and
    /// moves the world's tick on.
    #[inline]
    pub(crate) fn increment_change_tick(&self) -> Tick {
        Tick::new(self.change_tick.fetch_add(1, Ordering::Relaxed))
    }

    /// Starts a query run with exclusive access: as
    /// [`World::increment_change_tick`], without an atomic read-modify-write.
    #[inline]
    pub(crate) fn increment_change_tick_mut(&mut self) -> Tick {
        let tick = self.change_tick.get_mut();
        let this_run = *tick;
        *tick = this_run.wrapping_add(1);
        Tick::new(this_run)
    }

    /// Clamps every stored tick if [`CHECK_INTERVAL`] ticks passed since the
    /// last time, so ages stay meaningful across the `u32` wrap.
    #[inline]
    pub(crate) fn check_change_ticks(&mut self) {
        let now = self.change_tick();
        if now.get().wrapping_sub(self.last_check_tick.get()) >= CHECK_INTERVAL {
            self.clamp_change_ticks(now);
        }
    }

    #[cold]
    #[inline(never)]
    fn clamp_change_ticks(&mut self, now: Tick) {
        for archetype in self.archetypes.iter_mut() {
            archetype.table.clamp_ticks(now);
        }
        for (_, set) in self.sparse.iter_mut() {
            set.clamp_ticks(now);
        }
        self.resources.clamp_ticks(now);
        self.last_check_tick = now;
    }

    /// Starts recording change ticks for component `id` (for `Added` and
    /// `Changed` filters): existing values get the current tick, new ones
    /// their own. Idempotent.
    pub(crate) fn track_ticks(&mut self, id: ComponentId) {
        if self.components.info(id).tracks_changes() {
            return;
        }
        self.components.enable_change_tracking(id);
        let now = self.change_tick();
        for archetype in self.archetypes.iter_mut() {
            archetype.table.track_ticks(id, now);
        }
        if let Some(set) = self.sparse.get_mut(id) {
            set.track_ticks(now);
        }
    }

    // ----- crate-internal access for the query layer -------------------------

    #[inline]
    pub(crate) fn components(&self) -> &Components {
        &self.components
    }

    #[inline]
    pub(crate) fn components_mut(&mut self) -> &mut Components {
        &mut self.components
    }

    #[inline]
    pub(crate) fn observers(&self) -> &Observers {
        &self.observers
    }

    #[inline]
    pub(crate) fn observers_mut(&mut self) -> &mut Observers {
        &mut self.observers
    }

    #[inline]
    pub(crate) fn relations(&self) -> &Relations {
        &self.relations
    }

    #[inline]
    pub(crate) fn relations_mut(&mut self) -> &mut Relations {
        &mut self.relations
    }

    #[inline]
    pub(crate) fn resources(&self) -> &Resources {
        &self.resources
    }

    #[inline]
    pub(crate) fn resources_mut(&mut self) -> &mut Resources {
        &mut self.resources
    }

    /// The shared source of fresh entity indices (for command buffers).
    pub(crate) fn fresh_indices(&self) -> std::sync::Arc<FreshIndices> {
        self.entities.fresh_indices()
    }

    #[inline]
    pub(crate) fn archetype(&self, id: ArchetypeId) -> &Archetype {
        self.archetypes.get(id)
    }

    /// Every archetype, indexed by id.
    #[inline]
    pub(crate) fn archetype_slice(&self) -> &[Archetype] {
        self.archetypes.as_slice()
    }

    #[inline]
    pub(crate) fn sparse_sets(&self) -> &SparseSets {
        &self.sparse
    }

    /// Where a live entity's table components are (archetype and row), or
    /// `None` for a stale handle.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let e = world.spawn(A);
    /// let location = world.location(e).unwrap();
    /// assert_eq!(world.get_archetype(location.archetype).unwrap().entities(), &[e]);
    /// world.despawn(e).unwrap();
    /// assert_eq!(world.location(e), None);
    /// ```
    #[inline]
    pub fn location(&self, entity: Entity) -> Option<EntityLocation> {
        self.entities.get(entity)
    }

    /// [`World::location`] without the check that the location is real:
    /// see [`Entities::get_unverified`] (an invalid one's archetype is
    /// [`ArchetypeId::INVALID`], no archetype's index).
    #[inline(always)]
    pub(crate) fn location_unverified(&self, entity: Entity) -> Option<EntityLocation> {
        self.entities.get_unverified(entity)
    }

    /// Makes ids reserved through `&self` or by command buffers live, as
    /// empty entities; returns them if spawns are announced (for
    /// [`World::announce_spawned`]).
    fn make_reserved_live(&mut self) -> Vec<Entity> {
        let mut spawned = Vec::new();
        if self.entities.needs_flush() {
            let announce = self.components.lifecycle_active() && self.components.spawn_announced();
            let table: &mut Table = self.archetypes.table_mut(ArchetypeId::EMPTY);
            self.entities.flush(|entity| {
                if announce {
                    spawned.push(entity);
                }
                location(ArchetypeId::EMPTY, table.push_empty(entity))
            });
        }
        spawned
    }

    /// Announces entities that came to life from reserved ids as spawned.
    fn announce_spawned(&mut self, spawned: Vec<Entity>) {
        for &entity in &spawned {
            self.announce_insert(entity, true, &[]);
        }
        if !spawned.is_empty() {
            self.flush_observer_commands();
        }
    }

    /// Makes ids reserved through `&self` ([`World::reserve_entity`],
    /// command buffers) live, as empty entities, announcing them to spawn
    /// observers; and clamps old change ticks when it is time to. Every
    /// structural change does this first, so call it only to see reserved
    /// entities before the next one (as in hecs and Bevy).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.reserve_entity();
    /// assert!(!world.contains(e));
    /// world.flush();
    /// assert!(world.contains(e));
    /// assert_eq!(world.iter().count(), 1);
    /// ```
    #[inline]
    pub fn flush(&mut self) {
        self.check_change_ticks();
        if self.entities.may_need_flush() {
            self.flush_reserved();
        }
    }

    /// Reserved ids ([`World::reserve_entity`]) come to life here:
    /// announced as spawned, before whatever the current operation adds.
    /// Those of spawn commands are held instead, not live, until their
    /// command places them whole ([`World::spawn_held`]).
    #[cold]
    #[inline(never)]
    fn flush_reserved(&mut self) {
        self.entities.take_dirty();
        let spawned = self.make_reserved_live();
        self.announce_spawned(spawned);
    }

    /// Checks every internal invariant; panics with a message on violation.
    /// For tests and fuzzers.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.spawn(());
    /// world.check_invariants();
    /// ```
    pub fn check_invariants(&self) {
        self.entities.check_invariants();
        for archetype in self.archetypes.iter() {
            archetype.table.check_invariants();
            for (row, &e) in archetype.entities().iter().enumerate() {
                assert_eq!(
                    self.entities.get(e),
                    Some(location(archetype.id(), row)),
                    "entity {e:?} is not where its table says"
                );
            }
        }
        for (_, set) in self.sparse.iter() {
            set.check_invariants();
            for &e in set.entities() {
                assert!(self.contains(e), "sparse set holds dead entity {e:?}");
            }
        }
        let now = self.change_tick();
        for archetype in self.archetypes.iter() {
            let table = &archetype.table;
            for i in 0..table.component_ids().len() {
                table.column_at(i).check_block_bounds(now);
            }
        }
        for (_, set) in self.sparse.iter() {
            set.column().check_block_bounds(now);
        }
        self.check_disabled_mirror();
        self.relations.check_all(self);
    }
}

fn location(archetype: ArchetypeId, row: usize) -> EntityLocation {
    EntityLocation {
        archetype,
        row: row as u32,
    }
}

/// The error of a [`World::get`] or [`World::get_mut`] that missed, given
/// the location in the entity's slot (unverified, see
/// [`Entities::get_unverified`]): an invalid one means no live entity.
#[cold]
#[inline(never)]
fn lookup_error<T>(entity: Entity, loc: EntityLocation) -> ComponentError {
    if loc.is_valid() {
        missing::<T>(entity)
    } else {
        ComponentError::NoSuchEntity(entity)
    }
}

#[cold]
#[inline(never)]
fn missing<T>(entity: Entity) -> ComponentError {
    ComponentError::MissingComponent {
        entity,
        component: short_type_name::<T>(),
    }
}

#[cfg(test)]
mod tests {
    use super::World;
    use crate::component::{Component, type_slot};

    #[derive(Debug, PartialEq)]
    struct First(u64);
    impl Component for First {}

    #[derive(Debug, PartialEq)]
    struct Second(u8);
    impl Component for Second {}

    /// A column hint is a guess checked by the column's own `TypeId`: one
    /// that named another type's column (which no public path makes, so it
    /// is forged here) costs a search and gives the right value. Before the
    /// check, the hinted column was read as the asked-for type (a debug
    /// assertion caught it; release would have read a `Second` as a `First`).
    #[test]
    fn a_wrong_column_hint_is_a_miss() {
        let mut world = World::new();
        let e = world.spawn((First(7), Second(9)));
        let archetype = world.entities.get(e).unwrap().archetype;
        let second = world.components.id_of::<Second>().unwrap();
        let wrong = world
            .archetypes
            .get(archetype)
            .table
            .column_index(second)
            .unwrap();
        let forge = |world: &World| {
            world
                .archetypes
                .remember_column(type_slot::<First>(), archetype, wrong);
        };
        forge(&world);
        assert_eq!(world.get::<First>(e), Ok(&First(7)));
        forge(&world);
        assert_eq!(world.get_mut::<First>(e).map(|v| v.0), Ok(7));
        forge(&world);
        assert!(world.has::<First>(e));
        assert_eq!(world.get::<Second>(e), Ok(&Second(9)));
    }

    /// A lookup reads the hint of the type-cache slot its type maps to
    /// whether or not that type holds the slot (another type may, or none):
    /// a slot's hint naming a column of the entity's own archetype that is
    /// not the asked-for type's is a miss, for a type the world has never
    /// seen as for one it has. (Forged: in a fresh world the slots of
    /// `Third` and `Fourth` are free, or another type's.)
    #[test]
    fn a_slot_hint_of_another_type_is_a_miss() {
        #[derive(Debug, PartialEq)]
        struct Third(u64);
        impl Component for Third {}
        #[derive(Debug, PartialEq)]
        struct Fourth(u64);
        impl Component for Fourth {}

        let mut world = World::new();
        let e = world.spawn((First(7), Second(9)));
        world.spawn(Fourth(1));
        let archetype = world.entities.get(e).unwrap().archetype;
        let first = world.components.id_of::<First>().unwrap();
        let column = world
            .archetypes
            .get(archetype)
            .table
            .column_index(first)
            .unwrap();
        // Never registered: the hint names `First`'s column, a `u64` like it.
        world
            .archetypes
            .remember_column(type_slot::<Third>(), archetype, column);
        assert!(world.get::<Third>(e).is_err());
        assert!(world.get_mut::<Third>(e).is_err());
        assert!(!world.has::<Third>(e));
        // Registered, but not in `e`'s archetype.
        world
            .archetypes
            .remember_column(type_slot::<Fourth>(), archetype, column);
        assert!(world.get::<Fourth>(e).is_err());
        assert!(world.get_mut::<Fourth>(e).is_err());
        assert_eq!(world.get::<First>(e), Ok(&First(7)));
    }

    /// A hint names a column by pointer, and the column says which
    /// archetype's table it is in: a hint of the right type but another
    /// archetype (the entity moved, or the last lookup was in another
    /// table) is a miss, and the search finds the entity's own column. The
    /// hint then names that one, which the next lookup hits.
    #[test]
    fn a_hint_of_another_archetype_is_a_miss() {
        let mut world = World::new();
        let a = world.spawn((First(1), Second(2)));
        let b = world.spawn(First(3));
        assert_eq!(world.get::<First>(a), Ok(&First(1)));
        // The hint names `First`'s column in `a`'s archetype; `b` is in
        // another.
        assert_eq!(world.get::<First>(b), Ok(&First(3)));
        assert_eq!(world.get_mut::<First>(a).map(|v| v.0), Ok(1));
        // `a` moves to `b`'s archetype; the hint named its old column.
        world.remove_one::<Second>(a).unwrap();
        assert_eq!(world.get::<First>(a), Ok(&First(1)));
        assert_eq!(world.get_mut::<First>(b).map(|v| v.0), Ok(3));
        world.despawn(b).unwrap();
        assert!(world.get::<First>(b).is_err());
        assert!(world.get_mut::<First>(b).is_err());
        assert_eq!(world.get::<First>(a), Ok(&First(1)));
    }

    /// A handle keeps the location it found: its `get` reads the entity's
    /// own values (table and sparse), gives `get`'s error for a missing
    /// component, and the handles of `iter_entities` (whose locations come
    /// from the walk, not a lookup) read each entity's own values.
    #[test]
    fn a_handle_reads_through_its_location() {
        #[derive(Debug, PartialEq)]
        struct Sparse(u8);
        impl Component for Sparse {
            const STORAGE: crate::component::StorageType = crate::component::StorageType::SparseSet;
        }
        let mut world = World::new();
        let a = world.spawn((First(1), Second(2)));
        let b = world.spawn((First(3), Sparse(4)));
        let c = world.spawn(Second(5));
        let handle = world.entity(b).unwrap();
        assert_eq!(handle.get::<First>(), Ok(&First(3)));
        assert_eq!(handle.get::<Sparse>(), Ok(&Sparse(4)));
        assert_eq!(handle.get::<Second>(), Err(super::missing::<Second>(b)));
        assert_eq!(
            world.entity(a).unwrap().get::<First>(),
            world.get::<First>(a)
        );
        for handle in world.iter_entities() {
            let e = handle.id();
            assert_eq!(handle.get::<First>().ok(), world.get::<First>(e).ok());
            assert_eq!(handle.get::<Second>().ok(), world.get::<Second>(e).ok());
        }
        assert_eq!(world.entity(c).unwrap().get::<Second>(), Ok(&Second(5)));
        world.despawn(c).unwrap();
        assert!(world.entity(c).is_err());
    }

    /// A hint survives its column's reallocation (it names the column, not
    /// its values): lookups after the table grew read the new buffer.
    #[test]
    fn a_hint_survives_its_column_growing() {
        let mut world = World::new();
        let first = world.spawn((First(1), Second(1)));
        assert_eq!(world.get::<First>(first), Ok(&First(1)));
        let more: Vec<_> = (0..100u64)
            .map(|i| world.spawn((First(i + 10), Second(0))))
            .collect();
        for (i, &e) in more.iter().enumerate() {
            assert_eq!(world.get::<First>(e), Ok(&First(i as u64 + 10)));
            world.get_mut::<First>(e).unwrap().0 += 1;
        }
        assert_eq!(world.get::<First>(first), Ok(&First(1)));
        assert_eq!(world.get::<First>(more[99]), Ok(&First(110)));
        world.archetypes.forget_hints();
        assert_eq!(world.get::<First>(more[50]), Ok(&First(61)));
    }
}
