//! Sparse-set storage: one set per sparse component type.

use super::{Column, DeferredPanic};
use crate::change::Tick;
use crate::component::{ComponentId, Components};
use crate::entity::Entity;

const ABSENT: u32 = u32::MAX;

/// Values of one component type, packed densely and found by entity index.
///
/// Invariants:
/// - `column.len() == entities.len()`;
/// - for every dense index `d`: `sparse[entities[d].index()] == d`;
/// - every other `sparse` entry is `ABSENT`.
pub(crate) struct SparseSet {
    column: Column,
    entities: Vec<Entity>,
    sparse: Vec<u32>,
}

impl SparseSet {
    pub fn new(id: ComponentId, components: &Components) -> Self {
        SparseSet {
            column: Column::new(components.info(id)),
            entities: Vec::new(),
            sparse: Vec::new(),
        }
    }

    #[inline]
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    #[inline]
    pub fn column(&self) -> &Column {
        &self.column
    }

    /// Dense index of `entity`'s value, if it has one.
    #[inline(always)]
    pub fn dense_index(&self, entity: Entity) -> Option<usize> {
        let d = *self.sparse.get(entity.index() as usize)?;
        if d == ABSENT {
            return None;
        }
        // The generation check makes a stale handle miss, even though
        // despawn always empties the slot first.
        (self.entities[d as usize] == entity).then_some(d as usize)
    }

    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.dense_index(entity).is_some()
    }

    /// Stores `value` for `entity`, replacing (and dropping) any value it
    /// had: [`SparseSet::insert`] for a statically known type, with typed
    /// writes. Returns true if a value was replaced.
    ///
    /// # Safety
    /// - `T` is this set's component type.
    #[inline(always)]
    pub unsafe fn insert_value<T: 'static>(
        &mut self,
        entity: Entity,
        value: T,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) -> bool {
        if let Some(d) = self.dense_index(entity) {
            // SAFETY: d < len; `T` is the set's type (contract).
            unsafe { self.column.replace_value(d, value, tick, panics) };
            return true;
        }
        let index = entity.index() as usize;
        if index >= self.sparse.len() {
            self.grow_sparse(index);
        }
        self.sparse[index] = self.entities.len() as u32;
        self.entities.push(entity);
        // SAFETY: `T` is the set's type (contract).
        unsafe { self.column.push_value(value, tick) };
        false
    }

    /// [`SparseSet::insert_value`] with the type checked at run time: for
    /// callers (runtime-defined components) that hold a set by id, not type.
    ///
    /// Panics if this set does not hold `T`s.
    pub fn insert_checked<T: 'static>(
        &mut self,
        entity: Entity,
        value: T,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) -> bool {
        assert!(
            self.column.holds::<T>(),
            "sparse set type mismatch: not a set of `{}`",
            std::any::type_name::<T>()
        );
        // SAFETY: the set holds `T`s (asserted just above).
        unsafe { self.insert_value(entity, value, tick, panics) }
    }

    /// [`SparseSet::remove_value`] with the type checked at run time: `None`
    /// if `entity` has no value or this set does not hold `T`s.
    pub fn remove_checked<T: 'static>(&mut self, entity: Entity) -> Option<T> {
        if !self.column.holds::<T>() {
            return None;
        }
        // SAFETY: the set holds `T`s (checked just above).
        unsafe { self.remove_value(entity) }
    }

    #[cold]
    fn grow_sparse(&mut self, index: usize) {
        self.sparse.resize(index + 1, ABSENT);
    }

    /// Removes `entity`'s value and returns it, if it has one:
    /// [`SparseSet::remove_with`] for a statically known type.
    ///
    /// # Safety
    /// - `T` is this set's component type.
    #[inline(always)]
    pub unsafe fn remove_value<T: 'static>(&mut self, entity: Entity) -> Option<T> {
        let d = self.dense_index(entity)?;
        // SAFETY: d < len; `T` is the set's type (contract).
        let value = unsafe { self.column.swap_remove_take::<T>(d) };
        self.swap_remove_index(d);
        Some(value)
    }

    /// Removes the value at dense index `dense`, which must be `entity`'s
    /// (checked: a panic otherwise, before anything changes), and returns it.
    ///
    /// # Safety
    /// - `T` is this set's component type.
    #[inline(always)]
    pub unsafe fn remove_at<T: 'static>(&mut self, dense: usize, entity: Entity) -> T {
        assert!(
            self.entities.get(dense) == Some(&entity),
            "sparse set: stale dense index"
        );
        // SAFETY: dense < len (its entity was just read); `T` is the set's
        // type (contract).
        let value = unsafe { self.column.swap_remove_take::<T>(dense) };
        self.swap_remove_index(dense);
        value
    }

    /// Drops `entity`'s value, if any. Returns true if there was one.
    pub fn remove_drop(&mut self, entity: Entity, panics: &mut DeferredPanic) -> bool {
        let Some(d) = self.dense_index(entity) else {
            return false;
        };
        // SAFETY: d < len.
        unsafe { self.column.swap_remove_drop(d, panics) };
        self.swap_remove_index(d);
        true
    }

    #[inline(always)]
    fn swap_remove_index(&mut self, d: usize) {
        let removed = self.entities.swap_remove(d);
        self.sparse[removed.index() as usize] = ABSENT;
        if let Some(moved) = self.entities.get(d) {
            self.sparse[moved.index() as usize] = d as u32;
        }
    }

    /// `entity`'s value as a `T`, if it has one and this set holds `T`s.
    #[inline]
    pub fn get<T: 'static>(&self, entity: Entity) -> Option<&T> {
        self.column.get(self.dense_index(entity)?)
    }

    /// `entity`'s value as a `&mut T`, marked changed at `tick`.
    #[inline]
    pub fn get_mut<T: 'static>(&mut self, entity: Entity, tick: Tick) -> Option<&mut T> {
        let d = self.dense_index(entity)?;
        self.column.get_mut(d, tick)
    }

    pub fn clear(&mut self, panics: &mut DeferredPanic) {
        for e in self.entities.drain(..) {
            self.sparse[e.index() as usize] = ABSENT;
        }
        self.column.clear(panics);
    }

    /// Starts recording change ticks; see [`Column::track_ticks`].
    pub fn track_ticks(&mut self, now: Tick) {
        self.column.track_ticks(now);
    }

    pub fn clamp_ticks(&mut self, now: Tick) {
        self.column.clamp_ticks(now);
    }

    /// Checks the invariants documented on the type; panics on violation.
    pub fn check_invariants(&self) {
        assert_eq!(self.column.len(), self.entities.len());
        for (d, e) in self.entities.iter().enumerate() {
            assert_eq!(
                self.sparse[e.index() as usize] as usize,
                d,
                "sparse/dense mismatch"
            );
        }
        let present = self.sparse.iter().filter(|&&d| d != ABSENT).count();
        assert_eq!(present, self.entities.len(), "stray sparse entries");
    }
}

/// All sparse sets of a world, indexed by component id.
#[derive(Default)]
pub(crate) struct SparseSets {
    /// `index[component] == position in sets + 1`, or 0 if not sparse/created.
    index: Vec<u32>,
    sets: Vec<(ComponentId, SparseSet)>,
}

impl SparseSets {
    #[inline]
    pub fn get(&self, id: ComponentId) -> Option<&SparseSet> {
        match self.index.get(id.index()) {
            Some(&i) if i > 0 => Some(&self.sets[i as usize - 1].1),
            _ => None,
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: ComponentId) -> Option<&mut SparseSet> {
        match self.index.get(id.index()) {
            Some(&i) if i > 0 => Some(&mut self.sets[i as usize - 1].1),
            _ => None,
        }
    }

    /// Where `entity`'s value of component `id` is: the set's slot (for
    /// [`SparseSets::slot_mut`]) and the value's dense index.
    #[inline(always)]
    pub fn find(&self, id: ComponentId, entity: Entity) -> Option<(u32, u32)> {
        let slot = match self.index.get(id.index()) {
            Some(&i) if i > 0 => i - 1,
            _ => return None,
        };
        let dense = self.sets[slot as usize].1.dense_index(entity)?;
        Some((slot, dense as u32))
    }

    /// The set in slot `slot` (from [`SparseSets::find`]).
    #[inline(always)]
    pub fn slot_mut(&mut self, slot: u32) -> &mut SparseSet {
        &mut self.sets[slot as usize].1
    }

    /// The set for `id`, created if needed.
    #[inline]
    pub fn get_or_create(&mut self, id: ComponentId, components: &Components) -> &mut SparseSet {
        let i = match self.index.get(id.index()) {
            Some(&i) if i > 0 => i,
            _ => self.create(id, components),
        };
        &mut self.sets[i as usize - 1].1
    }

    /// Creates the set for `id` (which has none); returns its `index` entry.
    #[cold]
    #[inline(never)]
    fn create(&mut self, id: ComponentId, components: &Components) -> u32 {
        if self.index.len() <= id.index() {
            self.index.resize(id.index() + 1, 0);
        }
        self.sets.push((id, SparseSet::new(id, components)));
        let i = self.sets.len() as u32;
        self.index[id.index()] = i;
        i
    }

    /// Every set, in creation order.
    pub fn iter(&self) -> impl Iterator<Item = (ComponentId, &SparseSet)> {
        self.sets.iter().map(|(id, s)| (*id, s))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ComponentId, &mut SparseSet)> {
        self.sets.iter_mut().map(|(id, s)| (*id, s))
    }
}
