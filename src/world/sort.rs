//! Reordering stored components by a key (`World::sort_by_key`).

use super::{World, location};
use crate::archetype::ArchetypeId;
use crate::component::{Component, StorageType};

impl World {
    /// Sorts the stored `T` values by `key`, stably: the rows of every
    /// table that holds `T` (each table on its own), or, for a sparse `T`,
    /// the order of `T`'s set. Entities keep their handles and components,
    /// change ticks move with their values (a sort is not a change), and
    /// no hook or observer runs.
    ///
    /// Iteration order follows the stored order, so this sets the order in
    /// which queries visit entities, and it can keep data that is used
    /// together close in memory: the showcase sorts its particles by grid
    /// cell now and then, so its collision step reads and writes memory in
    /// order instead of at random.
    ///
    /// Keys are all computed, and sorted, before anything moves: a `key`
    /// (or `Ord`) that panics leaves the world as it was. Costs
    /// `O(n log n)` for `n` values plus one copy of each sorted table.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Depth(i32);
    /// #[derive(Component)] struct Name(&'static str);
    /// let mut world = World::new();
    /// world.spawn_batch([(Depth(3), Name("far")), (Depth(1), Name("near")), (Depth(2), Name("mid"))]);
    /// world.sort_by_key::<Depth, _>(|d| d.0);
    /// let names = world.run_system_once(|q: Query<&Name>| q.iter().map(|n| n.0).collect::<Vec<_>>());
    /// assert_eq!(names, ["near", "mid", "far"]);
    /// ```
    pub fn sort_by_key<T: Component, K: Ord>(&mut self, mut key: impl FnMut(&T) -> K) {
        let Some(id) = self.component_id::<T>() else {
            return;
        };
        match T::STORAGE {
            StorageType::Table => {
                let ids: Vec<ArchetypeId> = self.archetypes.iter().map(|a| a.id()).collect();
                for archetype in ids {
                    let table = self.archetypes.table_mut(archetype);
                    let Some(column) = table.column(id) else {
                        continue;
                    };
                    let values = |row: usize| column.get::<T>(row).expect("the column holds T");
                    let Some(order) = sorted_order(table.len(), |row| key(values(row))) else {
                        continue;
                    };
                    table.reorder(&order);
                    for (row, entity) in table.entities().iter().enumerate() {
                        self.entities
                            .set_location(entity.index(), location(archetype, row));
                    }
                }
            }
            StorageType::SparseSet => {
                let Some(set) = self.sparse.get_mut(id) else {
                    return;
                };
                let column = set.column();
                let values = |d: usize| column.get::<T>(d).expect("the set holds T");
                if let Some(order) = sorted_order(set.entities().len(), |d| key(values(d))) {
                    set.reorder(&order);
                }
            }
        }
    }
}

/// The stable order of `0..len` by `key_at`, or `None` if it is already in
/// order.
fn sorted_order<K: Ord>(len: usize, mut key_at: impl FnMut(usize) -> K) -> Option<Vec<u32>> {
    let mut keyed: Vec<(K, u32)> = (0..len).map(|i| (key_at(i), i as u32)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let identity = keyed.iter().enumerate().all(|(i, k)| k.1 as usize == i);
    (!identity).then(|| keyed.into_iter().map(|(_, i)| i).collect())
}
