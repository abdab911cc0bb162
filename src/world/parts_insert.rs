//! The structural change for components chosen at run time: an
//! [`EntityBuilder`](crate::EntityBuilder)'s parts, a
//! [`TakenEntity`](crate::TakenEntity), a clone, [`World::spawn_at`] with
//! any of those.
//!
//! It is the static bundle's change with the types read at run time: the
//! parts are registered as a bundle of their own (once per component
//! list), whose archetype edge gives the target archetype; the missing
//! required components are made first (a panicking constructor changes
//! nothing, and a spawn leaves no entity); then the entity's row moves
//! once, to its final archetype, with every value written there
//! ([`write_erased`]); only then do hooks and observers run, each seeing
//! the whole entity. A panicking hook or observer leaves the entity whole
//! (as a static bundle's spawn does) and the panic goes on.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::take::{BoxedComponent, ResolvedPart};
use super::{World, location};
use crate::archetype::ArchetypeId;
use crate::bundle::BundleId;
use crate::component::ComponentId;
use crate::entity::{Entity, EntityLocation};
use crate::storage::DeferredPanic;
use crate::storage::batch::{ErasedValue, ErasedWrite, write_erased};

use super::required_ops::MadeRequirements;

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

    /// Gives `entity` (alive) every part, in one move, then announces the
    /// change (as a spawn if `spawned`: the entity was just placed, empty
    /// and unannounced). Parts the world refuses (a runtime-defined
    /// component whose schema differs from the world's) are dropped.
    pub(super) fn insert_parts(
        &mut self,
        entity: Entity,
        parts: Vec<Box<dyn BoxedComponent>>,
        spawned: bool,
    ) {
        let loc = self
            .entities
            .get(entity)
            .expect("checked alive by the caller");
        let resolved = self.resolve_parts(parts);
        let unit = self.bundles.register::<()>(&mut self.components).id;
        let mut bundle_id = self
            .bundles
            .combined(unit, resolved.iter().map(|&(id, storage, _)| (id, storage)));
        let mut values: Vec<Box<dyn ErasedValue>> =
            resolved.into_iter().map(|(_, _, value)| value).collect();
        let lifecycle = self.components.lifecycle_active();
        let announces = lifecycle
            && self
                .components
                .announces_any(self.bundles.get(bundle_id).component_ids());
        let mut changes = Vec::new();
        if announces {
            changes = self.insert_changes(entity, loc, bundle_id);
            let made = self.make_required_or_discard(entity, loc, &changes, spawned);
            if !made.is_empty() {
                let extras = made.iter().map(|(r, _)| (r.component, r.storage));
                bundle_id = self.bundles.combined(bundle_id, extras);
                changes.extend(made.iter().map(|(r, _)| (r.component, true)));
                values.extend(made.into_iter().map(|(r, value)| r.maker.erase(value)));
            }
        }
        let panics = self.write_parts(entity, loc, bundle_id, values);
        self.sync_disabled(entity);
        if announces || (lifecycle && spawned && self.components.spawn_announced()) {
            // The change is complete even if a replaced value's drop
            // panicked: announce it, then let the panic go on.
            self.announce_insert(entity, spawned, &changes);
            self.flush_observer_commands();
        }
        panics.resume();
    }

    /// Registers each part; keeps the last of two parts of one component
    /// (a bundle names each component once).
    fn resolve_parts(&mut self, parts: Vec<Box<dyn BoxedComponent>>) -> Vec<ResolvedPart> {
        let mut resolved: Vec<ResolvedPart> = Vec::with_capacity(parts.len());
        for part in parts {
            let Some(part) = part.resolve(self) else {
                continue;
            };
            match resolved.iter().position(|&(id, _, _)| id == part.0) {
                Some(i) => resolved[i] = part,
                None => resolved.push(part),
            }
        }
        resolved
    }

    /// [`World::make_required`]; for a spawn (`spawned`), a panicking
    /// constructor also takes the new entity away (it was never
    /// announced), so that a failed spawn leaves no entity.
    pub(super) fn make_required_or_discard(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        changes: &[(ComponentId, bool)],
        spawned: bool,
    ) -> MadeRequirements {
        if !spawned {
            return self.make_required(entity, loc, changes);
        }
        match catch_unwind(AssertUnwindSafe(|| {
            self.make_required(entity, loc, changes)
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
        values: Vec<Box<dyn ErasedValue>>,
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
