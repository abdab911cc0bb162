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
//! - An insert makes the missing requirements first, then inserts the
//!   bundle and each requirement with no announcement in between.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use super::location;
use super::World;
use crate::archetype::ArchetypeId;
use crate::bundle::{Bundle, WithRequired};
use crate::change::Tick;
use crate::component::ComponentId;
use crate::entity::{Entity, EntityLocation};
use crate::hooks::Requirement;
use crate::storage::bundle_io::{self, WriteCtx};
use crate::storage::DeferredPanic;

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
            Ok(loc) => self.entities.set_location(entity.index(), loc),
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
    ) -> MadeRequirements {
        let mut made: MadeRequirements = Vec::new();
        for &(id, added) in changes {
            if !added || self.components.info(id).required().is_empty() {
                continue;
            }
            for r in self.components.resolved_requirements(id).iter() {
                let held = changes.iter().any(|&(c, _)| c == r.component)
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

    /// Inserts requirements [`World::make_required`] made into `entity`,
    /// quietly, and lists them in `changes` as added.
    pub(super) fn insert_made(
        &mut self,
        entity: Entity,
        made: MadeRequirements,
        changes: &mut Vec<(ComponentId, bool)>,
    ) {
        for (r, value) in made {
            r.maker.insert_made(self, entity, value);
            changes.push((r.component, true));
        }
    }

    /// Inserts `bundle` into `entity` (alive) with no announcement: a step
    /// of a change the caller announces as a whole.
    pub(crate) fn insert_quietly<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        let loc = self
            .entities
            .get(entity)
            .expect("requirements are inserted into a live entity");
        let bundle_id = self.bundles.register::<B>(&mut self.components).id;
        self.insert_at(entity, loc, bundle_id, bundle).resume();
    }

    /// Completes the requirements of components added to `entity` outside
    /// [`World::spawn`] and [`World::insert`] (scenes, runtime-defined
    /// components), then announces the whole change.
    pub(crate) fn announce_insert_with_required(
        &mut self,
        entity: Entity,
        spawned: bool,
        changes: &[(ComponentId, bool)],
    ) {
        let mut changes = changes.to_vec();
        if let Some(loc) = self.entities.get(entity) {
            let made = self.make_required(entity, loc, &changes);
            self.insert_made(entity, made, &mut changes);
        }
        self.announce_insert(entity, spawned, &changes);
    }
}
