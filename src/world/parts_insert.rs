//! The structural change for components chosen at run time: an
//! [`EntityBuilder`](crate::EntityBuilder)'s parts, a
//! [`TakenEntity`](crate::TakenEntity), a clone, [`World::spawn_at`] with
//! any of those.
//!
//! It is the static bundle's change with the types read at run time: the
//! parts are registered as a bundle of their own (once per list of types,
//! found again by that list with one lookup), whose archetype edge gives
//! the target archetype; the missing
//! required components are made first (a panicking constructor changes
//! nothing, and a spawn leaves no entity); then the entity's row moves
//! once, to its final archetype, with every value written there
//! ([`write_erased`]; a spawn writes straight into the target table,
//! [`write_new_row`]); only then do hooks and observers run, each seeing
//! the whole entity. A panicking hook or observer leaves the entity whole
//! (as a static bundle's spawn does) and the panic goes on.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::{World, location};
use crate::archetype::ArchetypeId;
use crate::bundle::BundleId;
use crate::component::{ComponentId, StorageType};
use crate::entity::{Entity, EntityLocation};
use crate::error::EntityError;
use crate::relation::EdgeCopies;
use crate::storage::DeferredPanic;
use crate::storage::batch::{ErasedValues, ErasedWrite, NewRowPlan, write_erased, write_new_row};
use crate::storage::parts::Parts;

use super::required_ops::MadeRequirements;

/// How a world spawns each list of Rust types it has spawned as run-time
/// parts (a builder's, a taken entity's): the bundle the list forms, its
/// archetype and where each value goes ([`NewRowPlan`]). Made on the
/// list's first spawn and kept: archetypes are never removed and a
/// table's columns never change, so a plan stays true for the world's
/// life.
#[derive(Debug, Default)]
pub(crate) struct SpawnPlans {
    plans: Vec<SpawnPlan>,
    /// `by_bundle[b]` is 1 + the index in `plans` of bundle `b`'s plan, or
    /// 0 (none).
    by_bundle: Vec<u32>,
    /// The index of the plan used last (any index before the first: the
    /// types are compared anyway).
    last: usize,
}

/// See [`SpawnPlans`].
#[derive(Debug)]
struct SpawnPlan {
    bundle: BundleId,
    target: ArchetypeId,
    row: NewRowPlan,
    /// The bundle's [`BundleInfo::disables`](crate::bundle::BundleInfo).
    disables: bool,
}

impl SpawnPlans {
    /// The plan of bundle `bundle`, if it has one.
    fn by_bundle(&self, bundle: BundleId) -> Option<usize> {
        match self.by_bundle.get(bundle.index()) {
            Some(&i) if i > 0 => Some(i as usize - 1),
            _ => None,
        }
    }

    /// Adds `plan` (of a bundle with none yet); returns its index.
    fn add(&mut self, plan: SpawnPlan) -> usize {
        let index = plan.bundle.index();
        if self.by_bundle.len() <= index {
            self.by_bundle.resize(index + 1, 0);
        }
        self.plans.push(plan);
        self.by_bundle[index] = u32::try_from(self.plans.len()).expect("too many spawn plans");
        self.plans.len() - 1
    }
}

impl World {
    /// Allocates an entity with no component, placed in the empty
    /// archetype and not announced: the start of a run-time spawn.
    pub(super) fn alloc_empty(&mut self) -> Entity {
        let entity = self.entities.alloc();
        let row = self
            .archetypes
            .table_mut(ArchetypeId::EMPTY)
            .push_empty(entity);
        self.entities
            .set_location(entity.index(), location(ArchetypeId::EMPTY, row));
        entity
    }

    /// Spawns an entity holding `parts` (left empty), in one move, and
    /// announces it.
    /// Parts the world refuses (a runtime-defined component whose schema
    /// differs from the world's) are dropped.
    #[inline]
    pub(super) fn spawn_parts(&mut self, parts: &mut Parts) -> Entity {
        self.flush();
        // A list of types spawned before, last: one comparison finds its
        // plan (a builder spawned in a loop).
        match self.spawn_along(self.spawn_plans.last, parts) {
            Some(entity) => entity,
            None => self.spawn_unplanned(parts),
        }
    }

    /// [`World::spawn_parts`] along plan `plan`, if there is one of that
    /// index and of `parts`' types (`None`, changing nothing, otherwise).
    #[inline(always)]
    fn spawn_along(&mut self, plan: usize, parts: &mut Parts) -> Option<Entity> {
        let plan = self.spawn_plans.plans.get(plan)?;
        let planned = plan.row.matching(parts)?;
        let lifecycle = self.components.lifecycle_active();
        if lifecycle
            && self
                .components
                .announces_any(self.bundles.get(plan.bundle).component_ids())
        {
            let bundle_id = plan.bundle;
            return Some(self.spawn_announced(bundle_id, parts));
        }
        // As a static bundle's spawn: straight into the target table, each
        // value copied to the column the plan names.
        let tick = self.change_tick();
        let entity = self.entities.alloc();
        let target = plan.target;
        let disables = plan.disables;
        let mut panics = DeferredPanic::new();
        let row = planned.write_new_row(
            self.archetypes.table_mut(target),
            entity,
            &mut self.sparse,
            &self.components,
            tick,
            &mut panics,
        );
        Some(self.place_new_row(entity, target, row, disables, lifecycle, panics))
    }

    /// [`World::spawn_parts`] of a list of types other than the last one
    /// spawned: its plan is found (made on its first spawn) and becomes
    /// the last one; parts that have none (some are runtime-defined
    /// components) are spawned by bundle.
    #[cold]
    #[inline(never)]
    fn spawn_unplanned(&mut self, parts: &mut Parts) -> Entity {
        match self.spawn_plan(parts) {
            Ok(plan) => {
                self.spawn_plans.last = plan;
                self.spawn_along(plan, parts)
                    .expect("a plan matches the parts it was found for")
            }
            Err(bundle_id) => self.spawn_by_bundle(bundle_id, parts),
        }
    }

    /// The spawn plan of `parts`' list of types (made on its first
    /// unannounced spawn), or their bundle, for parts that are not all Rust
    /// types (a runtime-defined component) or that are announced and have
    /// no plan yet.
    #[cold]
    #[inline(never)]
    fn spawn_plan(&mut self, parts: &mut Parts) -> Result<usize, BundleId> {
        let bundle_id = self.parts_bundle(parts);
        // Lists of Rust types only are known by their types (the parts are
        // in the bundle's order now, each type once).
        if self.bundles.by_types(parts.types()) != Some(bundle_id) {
            return Err(bundle_id);
        }
        if let Some(plan) = self.spawn_plans.by_bundle(bundle_id) {
            return Ok(plan);
        }
        if self.components.lifecycle_active()
            && self
                .components
                .announces_any(self.bundles.get(bundle_id).component_ids())
        {
            // Announced (with requirements, maybe): spawned by bundle, and
            // no archetype is made for the parts alone.
            return Err(bundle_id);
        }
        let info = self.bundles.get(bundle_id);
        let insert = self
            .archetypes
            .insert_plan(ArchetypeId::EMPTY, info, &self.components);
        let target = insert.edge.target;
        let table = insert.dst.as_deref().unwrap_or(insert.src);
        let row = NewRowPlan::new(parts.types(), info, insert.edge, table);
        let disables = info.disables;
        Ok(self.spawn_plans.add(SpawnPlan {
            bundle: bundle_id,
            target,
            row,
            disables,
        }))
    }

    /// [`World::spawn_parts`] of parts whose components have hooks,
    /// observers or requirements: placed empty, then given every part in
    /// one move (with the requirements), then announced.
    fn spawn_announced(&mut self, bundle_id: BundleId, parts: &mut Parts) -> Entity {
        let entity = self.alloc_empty();
        self.insert_resolved(entity, bundle_id, parts, true, Vec::new());
        entity
    }

    /// [`World::spawn_parts`] of parts of bundle `bundle_id` that have no
    /// plan (some are runtime-defined components).
    fn spawn_by_bundle(&mut self, bundle_id: BundleId, parts: &mut Parts) -> Entity {
        let lifecycle = self.components.lifecycle_active();
        if lifecycle
            && self
                .components
                .announces_any(self.bundles.get(bundle_id).component_ids())
        {
            return self.spawn_announced(bundle_id, parts);
        }
        // As a static bundle's spawn: straight into the target table.
        let tick = self.change_tick();
        let entity = self.entities.alloc();
        let info = self.bundles.get(bundle_id);
        let plan = self
            .archetypes
            .insert_plan(ArchetypeId::EMPTY, info, &self.components);
        let target = plan.edge.target;
        let table = plan.dst.unwrap_or(plan.src);
        let disables = info.disables;
        let mut panics = DeferredPanic::new();
        let row = write_new_row(
            table,
            entity,
            info,
            plan.edge,
            &mut parts.drain(),
            &mut self.sparse,
            &self.components,
            tick,
            &mut panics,
        );
        self.place_new_row(entity, target, row, disables, lifecycle, panics)
    }

    /// The end of a spawn written straight into its target table (the
    /// planned and the by-bundle paths): `entity` is placed at `row`, its
    /// disabled mirror updated if the bundle `disables` (holds the
    /// marker), the whole entity announced if anyone listens, then the
    /// first panic a value's write deferred goes on.
    #[inline(always)]
    fn place_new_row(
        &mut self,
        entity: Entity,
        target: ArchetypeId,
        row: usize,
        disables: bool,
        lifecycle: bool,
        panics: DeferredPanic,
    ) -> Entity {
        self.entities
            .set_location(entity.index(), location(target, row));
        self.sync_disabled_if(disables, entity);
        if lifecycle && self.components.spawn_announced() {
            self.announce_insert(entity, true, &[]);
            self.flush_observer_commands();
        }
        panics.resume();
        entity
    }

    /// [`World::insert_parts`] into `entity` if it is alive; fails,
    /// dropping the parts, for a stale handle.
    pub(super) fn insert_parts_checked(
        &mut self,
        entity: Entity,
        parts: &mut Parts,
    ) -> Result<(), EntityError> {
        self.flush();
        if !self.contains(entity) {
            return Err(EntityError::NoSuchEntity(entity));
        }
        self.insert_parts(entity, parts, false);
        Ok(())
    }

    /// Gives `entity` (alive) every part, in one move, then announces the
    /// change (as a spawn if `spawned`: the entity was just placed, empty
    /// and unannounced). Parts the world refuses (a runtime-defined
    /// component whose schema differs from the world's) are dropped.
    pub(super) fn insert_parts(&mut self, entity: Entity, parts: &mut Parts, spawned: bool) {
        let bundle_id = self.parts_bundle(parts);
        self.insert_resolved(entity, bundle_id, parts, spawned, Vec::new());
    }

    /// [`World::insert_parts`] that also makes `edges` (of `entity`, as
    /// their sources) inside the same change: after the parts are written
    /// and before the change is announced, so its hooks and observers find
    /// the edges made (a copy's parent, a built entity's `ChildOf`).
    pub(super) fn insert_parts_related(
        &mut self,
        entity: Entity,
        parts: &mut Parts,
        spawned: bool,
        edges: Vec<EdgeCopies>,
    ) {
        let bundle_id = self.parts_bundle(parts);
        self.insert_resolved(entity, bundle_id, parts, spawned, edges);
    }

    /// [`World::insert_parts`] of parts that form bundle `bundle_id` (in
    /// its order), with `edges` made before the announcements.
    fn insert_resolved(
        &mut self,
        entity: Entity,
        mut bundle_id: BundleId,
        parts: &mut Parts,
        spawned: bool,
        edges: Vec<EdgeCopies>,
    ) {
        let loc = self
            .entities
            .get(entity)
            .expect("checked alive by the caller");
        let mut extra = Vec::new();
        let lifecycle = self.components.lifecycle_active();
        let announces = lifecycle
            && self
                .components
                .announces_any(self.bundles.get(bundle_id).component_ids());
        let mut changes = Vec::new();
        if announces {
            // A restore's own insert: no registered requirement is made
            // (and none without announcements: the restore clears it).
            let exact = self.rollback.exact_insert == Some(entity);
            if exact {
                self.rollback.exact_insert = None;
            }
            changes = self.insert_changes(entity, loc, bundle_id);
            let made = self.make_required_or_discard(entity, loc, &changes, spawned, exact);
            if !made.is_empty() {
                let extras = made.iter().map(|(r, _)| (r.component, r.storage));
                let disabled = self.components.disabled_id();
                bundle_id = self.bundles.combined(bundle_id, extras, disabled);
                changes.extend(made.iter().map(|(r, _)| (r.component, true)));
                extra.extend(made.into_iter().map(|(r, value)| r.maker.erase(value)));
            }
            // `on_replace` hooks of the values about to be overwritten,
            // before the write, while they are readable (as a static
            // insert does). Hooks make no structural change: `loc` holds.
            let replaced: Vec<ComponentId> = changes
                .iter()
                .filter(|&&(id, added)| {
                    !added && self.components.info(id).hooks().on_replace.is_some()
                })
                .map(|&(id, _)| id)
                .collect();
            if !replaced.is_empty() {
                self.announce_replace(entity, &replaced);
            }
        }
        let values = ErasedValues {
            parts: parts.drain(),
            extra,
        };
        let panics = self.write_parts(entity, loc, bundle_id, values);
        if !edges.is_empty() {
            // The edges, before the parts' announcements: their observers
            // find them made (and the edges' own observers' commands wait
            // for the change to be announced).
            self.make_edges_held(|world| world.relate_copies(edges, entity));
        }
        self.sync_disabled_if(self.bundles.get(bundle_id).disables, entity);
        if announces || (lifecycle && spawned && self.components.spawn_announced()) {
            // The change is complete even if a replaced value's drop
            // panicked: announce it, then let the panic go on.
            self.announce_insert(entity, spawned, &changes);
            self.flush_observer_commands();
        }
        panics.resume();
    }

    /// The bundle `parts` form in this world (registered once per list of
    /// types), and the parts in its order: a runtime-defined part the
    /// world refuses is dropped, and of two parts of one component the
    /// last stays.
    #[inline]
    fn parts_bundle(&mut self, parts: &mut Parts) -> BundleId {
        match self.bundles.by_types(parts.types()) {
            Some(id) => id,
            None => self.register_parts(parts),
        }
    }

    /// [`World::parts_bundle`] the first time.
    #[cold]
    fn register_parts(&mut self, parts: &mut Parts) -> BundleId {
        let mut list: Vec<(ComponentId, StorageType)> = Vec::with_capacity(parts.len());
        // Only lists of Rust types are remembered by type: runtime-defined
        // values all have one Rust type.
        let mut by_type = true;
        let mut i = 0;
        while i < parts.len() {
            let ops = parts.ops(i);
            let id = match ops.register {
                Some(register) => Some(register(&mut self.components)),
                None => {
                    by_type = false;
                    let schema = parts
                        .dynamic_at(i)
                        .map(|d| d.schema.clone())
                        .expect("a part without a Rust type is runtime-defined");
                    // A world whose own schema of that name differs refuses
                    // the value (dropped): the same rule as
                    // `insert_dynamic`.
                    self.register_dynamic_component(schema).ok()
                }
            };
            let Some(id) = id else {
                parts.remove_at(i);
                continue;
            };
            if let Some(j) = list.iter().position(|&(c, _)| c == id) {
                // A bundle names each component once: the later value stays.
                list.remove(j);
                parts.remove_at(j);
                i -= 1;
            }
            list.push((id, ops.storage));
            i += 1;
        }
        let unit = self.bundles.register::<()>(&mut self.components).id;
        let disabled = self.components.disabled_id();
        let bundle_id = self.bundles.combined(unit, list.into_iter(), disabled);
        if by_type {
            self.bundles.remember_types(parts.types(), bundle_id);
        }
        bundle_id
    }

    /// [`World::make_required`]; for a spawn (`spawned`), a panicking
    /// constructor also takes the new entity away (it was never
    /// announced), so that a failed spawn leaves no entity. `exact`: a
    /// restore's insert (see `RollbackRegistry::exact_insert`).
    pub(super) fn make_required_or_discard(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        changes: &[(ComponentId, bool)],
        spawned: bool,
        exact: bool,
    ) -> MadeRequirements {
        if !spawned {
            return self.make_required(entity, loc, changes, exact);
        }
        match catch_unwind(AssertUnwindSafe(|| {
            self.make_required(entity, loc, changes, exact)
        })) {
            Ok(made) => made,
            Err(payload) => {
                // Placed with no component yet: nothing to drop, so this
                // cannot panic.
                let _ = self.despawn_quietly(entity);
                resume_unwind(payload)
            }
        }
    }

    /// Writes `values` (bundle `bundle_id`, in its order) into `entity` at
    /// `loc`, moving its row once if the archetype changes. Returns the
    /// panics of replaced values' drops, for the caller to raise once it
    /// is done.
    fn write_parts(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
        values: ErasedValues<'_>,
    ) -> DeferredPanic {
        let tick = self.change_tick();
        let info = self.bundles.get(bundle_id);
        let plan = self
            .archetypes
            .insert_plan(loc.archetype, info, &self.components);
        let target = plan.edge.target;
        let write = ErasedWrite {
            entity,
            info,
            edge: plan.edge,
            values,
        };
        let mut panics = DeferredPanic::new();
        let moved = write_erased(
            plan.src,
            loc.row as usize,
            plan.dst,
            write,
            &mut self.sparse,
            &self.components,
            tick,
            &mut panics,
        );
        if let Some((row, swapped)) = moved {
            self.entities
                .set_location(entity.index(), location(target, row));
            if let Some(swapped) = swapped {
                self.entities.set_location(swapped.index(), loc);
            }
        }
        panics
    }
}
