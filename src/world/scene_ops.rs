//! Spawning a batch of entities from type-erased columns (scene loading).

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

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
    /// names stay empty entities. Every entity then gets the components
    /// its components require; hooks and observers run once every entity
    /// is complete, entity by entity in batch order. Returns the entities.
    ///
    /// If a required component's constructor panics, the entities go (none
    /// was announced yet), and the panic goes on.
    ///
    /// If `fill` panics, the entities stay, empty and unannounced.
    ///
    /// Panics, before writing any value, if a group names a component twice
    /// or a position twice, or a column's length differs from its group's;
    /// the entities then stay, empty and unannounced.
    pub(crate) fn spawn_columns(
        &mut self,
        count: usize,
        fill: impl FnOnce(&[Entity]) -> Vec<SpawnGroup>,
    ) -> Vec<Entity> {
        self.flush();
        let tick = self.change_tick();
        self.entities.reserve_capacity(count);
        let spawned: Vec<Entity> = (0..count).map(|_| self.entities.alloc()).collect();
        // The entities have no place until their rows are written. `fill`
        // cannot reach the world; if it or the checks below panic, the
        // entities become empty entities before the panic goes on.
        let planned = catch_unwind(AssertUnwindSafe(|| {
            let groups = fill(&spawned);
            self.plan_groups(count, groups)
        }));
        let (planned, placed) = match planned {
            Ok(planned) => planned,
            Err(payload) => {
                let empty = self.archetypes.table_mut(ArchetypeId::EMPTY);
                for &entity in &spawned {
                    let row = empty.push_empty(entity);
                    self.entities
                        .set_location(entity.index(), location(ArchetypeId::EMPTY, row));
                }
                resume_unwind(payload);
            }
        };

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
            // Every entity gets its requirements before any hook or
            // observer runs (a panicking one must not leave later entities
            // without theirs). A panicking constructor fails the spawn: the
            // entities, not yet announced, go quietly, each value dropped once.
            let completed = catch_unwind(AssertUnwindSafe(|| {
                let mut drops = Vec::new();
                for (row, added) in &mut announced {
                    drops.push(self.complete_required(spawned[*row], added));
                }
                drops
            }));
            match completed {
                Ok(drops) => {
                    for d in drops {
                        panics.run(|| d.resume());
                    }
                }
                Err(payload) => {
                    for &entity in &spawned {
                        panics.run(|| {
                            let _ = self.despawn_quietly(entity);
                        });
                    }
                    drop(panics);
                    resume_unwind(payload);
                }
            }
            for (row, added) in &announced {
                self.announce_insert(spawned[*row], true, added);
            }
            self.flush_observer_commands();
        }
        panics.resume();
        spawned
    }

    /// Registers each group's components and finds its archetype; checks
    /// that no group names a component twice or a position another group
    /// names, and that every column has one value per entity. Returns the
    /// plan and which positions a group names.
    #[allow(clippy::type_complexity)]
    fn plan_groups(
        &mut self,
        count: usize,
        groups: Vec<SpawnGroup>,
    ) -> (
        Vec<(SpawnGroup, Vec<(ComponentId, StorageType)>, ArchetypeId)>,
        Vec<bool>,
    ) {
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
        (planned, placed)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::batch::TypedColumn;

    #[derive(crate::Component, Debug, PartialEq)]
    struct Name(String);
    #[derive(crate::Component, Debug, PartialEq)]
    struct Level(u8);
    #[derive(crate::Component, Debug, PartialEq)]
    #[component(storage = "sparse")]
    struct Tag(u16);

    fn column<T: Component>(values: Vec<T>) -> Box<dyn BatchColumn> {
        Box::new(TypedColumn(values))
    }

    #[test]
    fn groups_land_in_their_archetypes_in_batch_order() {
        let mut world = World::new();
        world.spawn(Level(9));
        let spawned = world.spawn_columns(4, |entities| {
            assert_eq!(entities.len(), 4);
            vec![
                SpawnGroup {
                    rows: vec![0, 3],
                    columns: vec![
                        column(vec![Name("a".into()), Name("d".into())]),
                        column(vec![Level(1), Level(4)]),
                        column(vec![Tag(10), Tag(40)]),
                    ],
                },
                SpawnGroup {
                    rows: vec![1],
                    columns: vec![column(vec![Level(2)])],
                },
            ]
        });
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
    fn a_panicking_fill_leaves_empty_entities() {
        let mut world = World::new();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            world.spawn_columns(2, |_| panic!("fill"));
        }));
        assert!(result.is_err());
        assert_eq!(world.len(), 2);
        world.check_invariants();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            world.spawn_columns(1, |_| {
                vec![SpawnGroup {
                    rows: vec![0],
                    columns: vec![column(vec![Level(1), Level(2)])],
                }]
            });
        }));
        assert!(result.is_err());
        assert_eq!(world.len(), 3);
        world.check_invariants();
    }
}
