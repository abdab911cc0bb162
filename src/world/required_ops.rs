//! Structural changes that bring required components along (see
//! [`crate::hooks`] for what requirements are).
//!
//! Requirements are part of the change that needs them: every missing
//! requirement is made *before* the world changes, so a panicking
//! constructor leaves the world as it was (the bundle is dropped, once);
//! then the entity gets the bundle and the requirements together; only
//! then do hooks and observers run, each seeing the whole change.
//!
//! - A spawn writes the bundle and its requirements into one new row of
//!   the final archetype (one move; the resolved set of each bundle type is
//!   cached, see [`Bundles::with_required`](crate::bundle::Bundles)).
//! - An insert makes the missing requirements first (they depend on what
//!   the entity has), then moves the entity once, to the archetype of its
//!   components plus the bundle plus the requirements (a bundle of its own,
//!   registered once per component list).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::World;
use super::location;
use crate::archetype::ArchetypeId;
use crate::bundle::{Bundle, BundleId, WithRequired};
use crate::change::Tick;
use crate::component::ComponentId;
use crate::entity::{Entity, EntityLocation};
use crate::hooks::Requirement;
use crate::storage::DeferredPanic;
use crate::storage::bundle_io::{self, WriteCtx, Writer};

/// Requirements made for an insert, before the world changes.
pub(super) type MadeRequirements = Vec<(Requirement, Box<dyn Any + Send>)>;

impl World {
    /// [`World::spawn`] of a bundle that requires more (`with`): one row
    /// holding the bundle and every requirement, then the announcements.
    #[cold]
    #[inline(never)]
    pub(super) fn spawn_with_required<B: Bundle>(
        &mut self,
        bundle: B,
        with: WithRequired,
        tick: Tick,
    ) -> Entity {
        let entity = self.entities.alloc();
        let disables = self.bundles.get(with.combined).disables;
        let mut panics = DeferredPanic::new();
        let written = catch_unwind(AssertUnwindSafe(|| {
            let info = self.bundles.get(with.combined);
            let plan = self
                .archetypes
                .insert_plan(ArchetypeId::EMPTY, info, &self.components);
            let target = plan.edge.target;
            let table = plan.dst.unwrap_or(plan.src);
            let mut ctx = WriteCtx {
                components: &self.components,
                sparse: &mut self.sparse,
                panics: &mut panics,
                tick,
            };
            let row =
                bundle_io::push_row_with(table, entity, bundle, info, plan.edge, &mut ctx, |w| {
                    for r in with.extras.iter() {
                        r.maker.write_new(w);
                    }
                });
            location(target, row)
        }));
        match written {
            Ok(loc) => {
                self.entities.set_location(entity.index(), loc);
                self.sync_disabled_if(disables, entity);
            }
            Err(payload) => {
                // A constructor panicked: nothing was written; the id goes
                // back, and the panic goes on.
                self.discard_allocated(entity);
                resume_unwind(payload);
            }
        }
        let changes: Vec<(ComponentId, bool)> = self
            .bundles
            .get(with.combined)
            .component_ids()
            .map(|id| (id, true))
            .collect();
        self.announce_insert(entity, true, &changes);
        self.flush_observer_commands();
        panics.resume();
        entity
    }

    /// Frees `entity`, just allocated and never placed.
    #[cold]
    fn discard_allocated(&mut self, entity: Entity) {
        let row = self
            .archetypes
            .table_mut(ArchetypeId::EMPTY)
            .push_empty(entity);
        self.entities
            .set_location(entity.index(), location(ArchetypeId::EMPTY, row));
        // An empty row has nothing to drop, so this cannot panic.
        self.despawn_quietly(entity)
            .expect("the entity was placed just above");
    }

    /// The requirements `added` (components an insert adds to `entity`, at
    /// `loc`) bring and neither `entity` nor the insert (`changes`) holds,
    /// made now, nearest first. A panicking constructor drops those made so
    /// far and goes on, before anything changed.
    pub(super) fn make_required(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        changes: &[(ComponentId, bool)],
        exact: bool,
    ) -> MadeRequirements {
        let mut made: MadeRequirements = Vec::new();
        for &(id, added) in changes {
            if !added || self.components.info(id).required().is_empty() {
                continue;
            }
            for r in self.components.resolved_requirements(id).iter() {
                // A restore puts back the registered components its
                // snapshot lists, no more: it makes none of those.
                let restored = exact
                    && self
                        .components
                        .rollback
                        .by_component
                        .contains_key(&r.component);
                let held = restored
                    || changes.iter().any(|&(c, _)| c == r.component)
                    || made.iter().any(|(m, _)| m.component == r.component)
                    || self.has_id(entity, loc, r.component);
                if !held {
                    let value = r.maker.make();
                    made.push((r.clone(), value));
                }
            }
        }
        made
    }

    /// Inserts `bundle` (bundle `bundle_id`) and the requirements
    /// [`World::make_required`] made into `entity` (at `loc`) in one move,
    /// and lists the requirements in `changes` as added. Returns the panics
    /// of replaced values' drops, for the caller to raise once it is done.
    pub(super) fn insert_with_made<B: Bundle>(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        bundle_id: BundleId,
        bundle: B,
        made: MadeRequirements,
        changes: &mut Vec<(ComponentId, bool)>,
    ) -> DeferredPanic {
        let extras = made.iter().map(|(r, _)| (r.component, r.storage));
        let disabled = self.components.disabled_id();
        let combined = self.bundles.combined(bundle_id, extras, disabled);
        changes.extend(made.iter().map(|(r, _)| (r.component, true)));
        let tick = self.change_tick();
        let info = self.bundles.get(combined);
        let disables = info.disables;
        let mut panics = DeferredPanic::new();
        let mut ctx = WriteCtx {
            components: &self.components,
            sparse: &mut self.sparse,
            panics: &mut panics,
            tick,
        };
        if info.table_ids.is_empty() {
            bundle_io::write_sparse_with(entity, bundle, info, &mut ctx, |w| {
                for (r, value) in made {
                    r.maker.write_made_sparse(value, w);
                }
            });
            self.sync_disabled_if(disables, entity);
            return panics;
        }
        let extras = |w: &mut Writer<'_>| {
            for (r, value) in made {
                r.maker.write_made(value, w);
            }
        };
        let plan = self
            .archetypes
            .insert_plan(loc.archetype, info, &self.components);
        let row = loc.row as usize;
        match plan.dst {
            None => bundle_io::overwrite_row_with(
                plan.src, row, entity, bundle, info, plan.edge, &mut ctx, extras,
            ),
            Some(dst) => {
                let (new_row, moved) = bundle_io::move_and_write_with(
                    plan.src, row, dst, entity, bundle, info, plan.edge, &mut ctx, extras,
                );
                self.entities
                    .set_location(entity.index(), location(plan.edge.target, new_row));
                if let Some(moved) = moved {
                    self.entities.set_location(moved.index(), loc);
                }
            }
        }
        self.sync_disabled_if(disables, entity);
        panics
    }
}
