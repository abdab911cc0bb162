//! Columnar spawning: a [`ColumnBatch`] written into its table in one move.
//!
//! The batch types and their checks live in `column_batch.rs`; here the
//! world allocates the entities, finds each batch's archetype (its
//! components plus the ones they require), makes the required components'
//! values, hands each column to its table or sparse set, and runs the
//! lifecycle once every entity is complete. Requirements are written with
//! the batch's own columns, in the same move: no entity passes through the
//! archetype of its batch without them.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::{World, location};
use crate::archetype::ArchetypeId;
use crate::column_batch::{BatchColumn, ColumnBatch, ColumnBatchError};
use crate::component::{ComponentId, StorageType};
use crate::entity::{Entity, EntityLocation};
use crate::hooks::Requirement;
use crate::storage::DeferredPanic;
use crate::storage::batch::{ErasedColumn, write_new_rows};

/// A group's components: its own columns' and then its requirements'.
type GroupIds = Vec<(ComponentId, StorageType)>;

/// The columns of a group's requirements, one value per entity.
type RequiredColumns = Vec<(ComponentId, StorageType, Box<dyn ErasedColumn>)>;

/// A batch whose positions were checked: the entities it spawns (as
/// positions in the whole spawn, increasing or not) and its columns.
struct Group {
    rows: Vec<usize>,
    columns: Vec<BatchColumn>,
}

impl World {
    /// Spawns one entity per row of `batch`, each column's values written
    /// into the new entities' table in one move (see [`ColumnBatch`]).
    /// Returns the entities, in the batch's order. Hooks, observers and
    /// required components run as for [`World::spawn_batch`], once every
    /// entity is complete.
    ///
    /// A [`ColumnBatch`] checks its columns as they are added, so this
    /// cannot fail on the batch's account.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::ColumnBatch;
    /// #[derive(Component, Debug, PartialEq)] struct Position(f32);
    /// #[derive(Component, Debug, PartialEq)] #[component(storage = "sparse")] struct Tag;
    ///
    /// let mut batch = ColumnBatch::new(2);
    /// batch.push(vec![Position(1.0), Position(2.0)]).unwrap().push(vec![Tag, Tag]).unwrap();
    /// let mut world = World::new();
    /// let entities = world.spawn_column_batch(batch);
    /// assert_eq!(world.get::<Position>(entities[1]), Ok(&Position(2.0)));
    /// assert!(world.has::<Tag>(entities[0]));
    /// ```
    pub fn spawn_column_batch(&mut self, batch: ColumnBatch) -> Vec<Entity> {
        let rows = (0..batch.len()).collect();
        let count = batch.len();
        match self.spawn_column_batches(count, |_| vec![(rows, batch)]) {
            Ok(entities) => entities,
            Err(e) => unreachable!("one checked batch covers every position once: {e}"),
        }
    }

    /// Arranges for the next entities this world spawns to get exactly
    /// `ids` (in order): what a loader needs to give a saved world's
    /// entities back their own handles, for replays, rollback and late
    /// joiners. Returns true if it did; false, changing nothing, unless the
    /// world has never had an entity nor handed out an id (for commands),
    /// or if two ids share an index, or the largest index is far beyond the
    /// number of ids (at least `4 * ids.len() + 4096`: the world makes a
    /// slot for every index below it). The slots below the largest index
    /// that `ids` leave out are free, for later spawns.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Name(&'static str);
    /// let ids = [Entity::from_bits((3 << 32) | 5).unwrap(), Entity::from_bits((1 << 32) | 2).unwrap()];
    /// let mut world = World::new();
    /// assert!(world.prepare_spawn_ids(&ids));
    /// let a = world.spawn(Name("a"));
    /// let b = world.spawn(Name("b"));
    /// assert_eq!([a, b], ids);
    /// // Only for a world that never had an entity.
    /// assert!(!world.prepare_spawn_ids(&ids));
    /// ```
    pub fn prepare_spawn_ids(&mut self, ids: &[Entity]) -> bool {
        let limit = ids
            .len()
            .saturating_mul(4)
            .saturating_add(4096)
            .min(u32::MAX as usize) as u32;
        self.entities.prepare_exact(ids, limit)
    }

    /// Spawns `count` entities from several batches at once: asks `fill`
    /// for the batches given the entities' handles (so that values can
    /// refer to the entities being spawned), each batch paired with the
    /// positions (in `0..count`) of the entities it makes. Every position
    /// must be in exactly one batch (a batch with no column makes entities
    /// with no component). Each batch is written into its archetype's table
    /// in one move; required components, hooks and observers run once every
    /// entity is complete, entity by entity in position order. Returns the
    /// entities, by position.
    ///
    /// # Errors
    /// If a batch's positions do not match its length, or a position is out
    /// of range, in two batches or in none, the error says which, and the
    /// world holds what it held before: the handles `fill` saw are not
    /// alive (their slots are free again, with a new generation).
    ///
    /// # Panics
    /// If `fill` panics, the handles are freed as for an error and the panic
    /// goes on. If a required component's constructor panics, the entities
    /// go (none was announced yet), and the panic goes on.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::ColumnBatch;
    /// #[derive(Component, Debug, PartialEq)] struct Name(&'static str);
    /// #[derive(Component, Debug, PartialEq)] struct Follows(Entity);
    ///
    /// let mut world = World::new();
    /// // A leader (position 0) and two followers (positions 1 and 2).
    /// let entities = world.spawn_column_batches(3, |entities| {
    ///     let mut leader = ColumnBatch::new(1);
    ///     leader.push(vec![Name("leader")]).unwrap();
    ///     let mut followers = ColumnBatch::new(2);
    ///     followers.push(vec![Follows(entities[0]); 2]).unwrap();
    ///     vec![(vec![0], leader), (vec![1, 2], followers)]
    /// }).unwrap();
    /// # impl Clone for Follows { fn clone(&self) -> Self { Follows(self.0) } }
    /// assert_eq!(world.get::<Follows>(entities[2]), Ok(&Follows(entities[0])));
    /// assert_eq!(world.get::<Name>(entities[0]), Ok(&Name("leader")));
    /// ```
    pub fn spawn_column_batches(
        &mut self,
        count: usize,
        fill: impl FnOnce(&[Entity]) -> Vec<(Vec<usize>, ColumnBatch)>,
    ) -> Result<Vec<Entity>, ColumnBatchError> {
        self.flush();
        let tick = self.change_tick();
        self.entities.reserve_capacity(count);
        // Fresh ids in one step (a shared atomic counter, as `spawn_batch`
        // takes them), not one atomic step each; placed once their rows
        // are written. The unused rest (none, unless the free list had
        // indices to hand out first) goes back at once.
        let mut fresh = self.entities.take_fresh(count);
        let spawned: Vec<Entity> = (0..count)
            .map(|_| self.entities.alloc_in(&mut fresh, EntityLocation::INVALID))
            .collect();
        self.entities.end_batch(fresh);
        // The entities have no place until their rows are written. `fill`
        // cannot reach the world; if it panics or its batches are refused,
        // the handles are freed before the panic or error goes on.
        let groups = match catch_unwind(AssertUnwindSafe(|| check_positions(count, fill(&spawned))))
        {
            Ok(Ok(groups)) => groups,
            Ok(Err(error)) => {
                self.free_unplaced(&spawned);
                return Err(error);
            }
            Err(payload) => {
                self.free_unplaced(&spawned);
                resume_unwind(payload);
            }
        };
        let planned = self.plan_groups(groups);
        // Every requirement's values are made before anything is written:
        // a panicking constructor leaves the world as it was (the handles
        // freed, every value made so far dropped once) and goes on.
        let made = catch_unwind(AssertUnwindSafe(|| {
            planned
                .into_iter()
                .map(|(group, ids, extras, archetype)| {
                    let n = group.rows.len();
                    let required: RequiredColumns = extras
                        .iter()
                        .map(|r| (r.component, r.storage, r.maker.make_column(n)))
                        .collect();
                    (group, ids, required, archetype)
                })
                .collect::<Vec<_>>()
        }));
        let planned = match made {
            Ok(planned) => planned,
            Err(payload) => {
                self.free_unplaced(&spawned);
                resume_unwind(payload);
            }
        };

        let mut panics = DeferredPanic::new();
        let lifecycle = self.components.lifecycle_active();
        let mut announced: Vec<(usize, Vec<(ComponentId, bool)>)> = Vec::new();
        // Only a group holding the `Disabled` marker (given or required)
        // has rows to mark disabled.
        let disabled = self.components.disabled_id();
        let mut disables = false;
        for (group, ids, required, archetype) in planned {
            disables |= disabled.is_some_and(|d| {
                ids.iter().any(|&(id, _)| id == d) || required.iter().any(|r| r.0 == d)
            });
            let entities: Vec<Entity> = group.rows.iter().map(|&r| spawned[r]).collect();
            let columns = ids
                .iter()
                .zip(group.columns)
                .map(|(&(id, storage), values)| (id, storage, values.into_erased()))
                .chain(required)
                .collect();
            // Room first, so nothing can fail once values are written; a
            // column with nothing allocated yet takes its batch's buffer.
            let table = self.archetypes.table_mut(archetype);
            table.reserve_for_append(entities.len());
            let first = write_new_rows(
                table,
                &mut self.sparse,
                &self.components,
                columns,
                &entities,
                tick,
                &mut panics,
            );
            for (i, &entity) in entities.iter().enumerate() {
                self.entities
                    .set_location(entity.index(), location(archetype, first + i));
            }
            if lifecycle
                && (self.components.spawn_announced()
                    || self.components.announces_any(ids.iter().map(|&(id, _)| id)))
            {
                let added: Vec<(ComponentId, bool)> =
                    ids.iter().map(|&(id, _)| (id, true)).collect();
                announced.extend(group.rows.iter().map(|&r| (r, added.clone())));
            }
        }
        if disables {
            self.sync_disabled_all(&spawned);
        }
        if !announced.is_empty() {
            announced.sort_by_key(|&(row, _)| row);
            // Every entity is whole (requirements included) before any
            // hook or observer runs.
            for (row, added) in &announced {
                self.announce_insert(spawned[*row], true, added);
            }
            self.flush_observer_commands();
        }
        panics.resume();
        Ok(spawned)
    }

    /// Frees entities allocated but never placed in a table: each goes
    /// through the empty table, unannounced, so its slot is free again.
    fn free_unplaced(&mut self, spawned: &[Entity]) {
        let empty = self.archetypes.table_mut(ArchetypeId::EMPTY);
        for &entity in spawned {
            let row = empty.push_empty(entity);
            self.entities
                .set_location(entity.index(), location(ArchetypeId::EMPTY, row));
        }
        for &entity in spawned {
            let _ = self.despawn_quietly(entity);
        }
    }

    /// Registers each group's components, lists the requirements they
    /// bring and the group lacks (nearest first, each once, as a spawn of
    /// a bundle of those components lists them), and finds the archetype
    /// of both. The ids returned are the group's columns' then the
    /// requirements'.
    fn plan_groups(
        &mut self,
        groups: Vec<Group>,
    ) -> Vec<(Group, GroupIds, Vec<Requirement>, ArchetypeId)> {
        let mut planned = Vec::with_capacity(groups.len());
        for group in groups {
            let mut ids: GroupIds = group
                .columns
                .iter()
                .map(|c| c.register(&mut self.components))
                .collect();
            let mut extras: Vec<Requirement> = Vec::new();
            if self.components.lifecycle_active() {
                for i in 0..ids.len() {
                    let (id, _) = ids[i];
                    if self.components.info(id).required().is_empty() {
                        continue;
                    }
                    for r in self.components.resolved_requirements(id).iter() {
                        let held = ids.iter().any(|&(c, _)| c == r.component)
                            || extras.iter().any(|e| e.component == r.component);
                        if !held {
                            extras.push(r.clone());
                        }
                    }
                }
            }
            ids.extend(extras.iter().map(|r| (r.component, r.storage)));
            let mut table_ids: Vec<ComponentId> = ids
                .iter()
                .filter(|&&(_, s)| s == StorageType::Table)
                .map(|&(id, _)| id)
                .collect();
            table_ids.sort_unstable();
            let archetype = self.archetypes.get_or_create(&table_ids, &self.components);
            planned.push((group, ids, extras, archetype));
        }
        planned
    }
}

/// Checks that every position in `0..count` is in exactly one batch, and
/// that each batch has one position per entity.
fn check_positions(
    count: usize,
    batches: Vec<(Vec<usize>, ColumnBatch)>,
) -> Result<Vec<Group>, ColumnBatchError> {
    let mut placed = vec![false; count];
    for (rows, batch) in &batches {
        if rows.len() != batch.len() {
            return Err(ColumnBatchError::WrongPositions {
                len: batch.len(),
                positions: rows.len(),
            });
        }
        for &position in rows {
            match placed.get_mut(position) {
                None => return Err(ColumnBatchError::PositionOutOfRange { position, count }),
                Some(true) => return Err(ColumnBatchError::DuplicatePosition { position }),
                Some(seen) => *seen = true,
            }
        }
    }
    if let Some(position) = placed.iter().position(|&p| !p) {
        return Err(ColumnBatchError::MissingPosition { position });
    }
    Ok(batches
        .into_iter()
        .map(|(rows, batch)| Group {
            rows,
            columns: batch.into_columns(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(crate::Component, Debug, PartialEq)]
    struct Name(String);
    #[derive(crate::Component, Debug, PartialEq)]
    struct Level(u8);
    #[derive(crate::Component, Debug, PartialEq)]
    #[component(storage = "sparse")]
    struct Tag(u16);

    #[test]
    fn groups_land_in_their_archetypes_in_position_order() {
        let mut world = World::new();
        world.spawn(Level(9));
        let spawned = world
            .spawn_column_batches(4, |entities| {
                assert_eq!(entities.len(), 4);
                let mut first = ColumnBatch::new(2);
                first
                    .push(vec![Name("a".into()), Name("d".into())])
                    .unwrap()
                    .push(vec![Level(1), Level(4)])
                    .unwrap()
                    .push(vec![Tag(10), Tag(40)])
                    .unwrap();
                let mut second = ColumnBatch::new(1);
                second.push(vec![Level(2)]).unwrap();
                vec![
                    (vec![0, 3], first),
                    (vec![1], second),
                    (vec![2], ColumnBatch::new(1)),
                ]
            })
            .unwrap();
        assert_eq!(world.len(), 5);
        assert_eq!(world.get::<Name>(spawned[0]), Ok(&Name("a".into())));
        assert_eq!(world.get::<Level>(spawned[3]), Ok(&Level(4)));
        assert_eq!(world.get::<Tag>(spawned[3]), Ok(&Tag(40)));
        assert_eq!(world.get::<Level>(spawned[1]), Ok(&Level(2)));
        assert!(!world.has::<Name>(spawned[1]));
        assert!(world.contains(spawned[2]) && !world.has::<Level>(spawned[2]));
        world.check_invariants();
        world.despawn(spawned[0]).unwrap();
        world.check_invariants();
    }

    #[test]
    fn a_panicking_fill_frees_the_handles() {
        let mut world = World::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let _ = world.spawn_column_batches(2, |_| panic!("fill"));
        }));
        assert!(result.is_err());
        assert_eq!(world.len(), 0);
        world.check_invariants();
        let kept = world.spawn(Level(1));
        assert_eq!(world.len(), 1);
        assert!(world.contains(kept));
    }
}
