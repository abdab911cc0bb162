//! Spawning a batch of entities from type-erased columns (scene loading).

use super::{location, World};
use crate::archetype::ArchetypeId;
use crate::component::{Component, ComponentId, StorageType};
use crate::entity::Entity;
use crate::storage::batch::{write_new_rows, BatchColumn};
use crate::storage::DeferredPanic;

/// Entities of one batch that get the same components: their positions in
/// the batch (increasing) and one column of values per component, one value
/// per entity.
pub(crate) struct SpawnGroup {
    pub rows: Vec<usize>,
    pub columns: Vec<Box<dyn BatchColumn>>,
}

impl World {
    /// Spawns `count` entities, asks `fill` for their components given
    /// their handles (so values can refer to them), and writes each group's
    /// components once, into the group's final archetype. Positions no group
    /// names stay empty entities. Hooks and observers run once every entity
    /// is complete, entity by entity in batch order. Returns the entities.
    ///
    /// If `fill` panics, the entities stay, empty and unannounced.
    ///
    /// Panics, before writing any value, if a group names a component twice
    /// or a position twice, or a column's length differs from its group's.
    pub(crate) fn spawn_columns(
        &mut self,
        count: usize,
        fill: impl FnOnce(&[Entity]) -> Vec<SpawnGroup>,
    ) -> Vec<Entity> {
        self.flush();
        let tick = self.change_tick();
        self.entities.reserve_capacity(count);
        let empty = self.archetypes.table_mut(ArchetypeId::EMPTY);
        let base = empty.len();
        let mut spawned = Vec::with_capacity(count);
        for _ in 0..count {
            let entity = self.entities.alloc();
            let row = empty.push_empty(entity);
            self.entities
                .set_location(entity.index(), location(ArchetypeId::EMPTY, row));
            spawned.push(entity);
        }
        let groups = fill(&spawned);

        // Check and plan every group before moving anything.
        let mut planned = Vec::with_capacity(groups.len());
        let mut placed = vec![false; count];
        for group in groups {
            let ids: Vec<(ComponentId, StorageType)> = group
                .columns
                .iter()
                .map(|c| c.register(&mut self.components))
                .collect();
            let mut sorted: Vec<ComponentId> = ids.iter().map(|&(id, _)| id).collect();
            sorted.sort_unstable();
            assert!(
                sorted.windows(2).all(|w| w[0] != w[1]),
                "a spawn group names a component twice"
            );
            assert!(
                group.columns.iter().all(|c| c.len() == group.rows.len()),
                "a spawn group column has the wrong length"
            );
            for &row in &group.rows {
                assert!(!placed[row], "a batch position is in two spawn groups");
                placed[row] = true;
            }
            let mut table_ids: Vec<ComponentId> = ids
                .iter()
                .filter(|&&(_, s)| s == StorageType::Table)
                .map(|&(id, _)| id)
                .collect();
            table_ids.sort_unstable();
            let archetype = self.archetypes.get_or_create(&table_ids, &self.components);
            planned.push((group, ids, archetype));
        }

        // The batch's entities are the last rows of the empty table (only
        // `fill`, which cannot reach the world, ran since): take them out,
        // then put each into its archetype.
        let taken = self
            .archetypes
            .table_mut(ArchetypeId::EMPTY)
            .truncate_empty(base);
        assert!(taken == spawned, "the batch's empty rows moved");
        let mut panics = DeferredPanic::new();
        let lifecycle = self.components.lifecycle_active();
        let mut announced: Vec<(usize, Vec<(ComponentId, bool)>)> = Vec::new();
        for (group, ids, archetype) in planned {
            let entities: Vec<Entity> = group.rows.iter().map(|&r| spawned[r]).collect();
            let columns = ids
                .iter()
                .zip(group.columns)
                .map(|(&(id, storage), values)| (id, storage, values))
                .collect();
            let table = self.archetypes.table_mut(archetype);
            table.reserve(entities.len());
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
        let empty = self.archetypes.table_mut(ArchetypeId::EMPTY);
        for (row, &entity) in spawned.iter().enumerate() {
            if !placed[row] {
                let at = empty.push_empty(entity);
                self.entities
                    .set_location(entity.index(), location(ArchetypeId::EMPTY, at));
                if lifecycle && self.components.spawn_announced() {
                    announced.push((row, Vec::new()));
                }
            }
        }
        if !announced.is_empty() {
            announced.sort_by_key(|&(row, _)| row);
            for (row, added) in &announced {
                self.announce_insert(spawned[*row], true, added);
            }
            self.flush_observer_commands();
        }
        panics.resume();
        spawned
    }

    /// The values of table component `T` in `archetype`'s table, by row
    /// (`None` if `T` is not one of its table components).
    pub(crate) fn table_values<T: Component>(&self, archetype: ArchetypeId) -> Option<&[T]> {
        let id = self.components.id_of::<T>()?;
        self.archetypes
            .get(archetype)
            .table
            .column(id)?
            .as_slice::<T>()
    }
}
