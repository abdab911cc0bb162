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
    #[inline]
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

    /// Stores the value at `src` for `entity`, replacing (and dropping) any
    /// value it had. Returns true if a value was replaced.
    ///
    /// # Safety
    /// - `src` is a valid value of this set's type that the caller gives up.
    #[inline]
    pub unsafe fn insert(
        &mut self,
        entity: Entity,
        src: *const u8,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) -> bool {
        if let Some(d) = self.dense_index(entity) {
            // SAFETY: d < len; src contract forwarded.
            unsafe { self.column.replace(d, src, tick, panics) };
            return true;
        }
        let index = entity.index() as usize;
        if index >= self.sparse.len() {
            self.sparse.resize(index + 1, ABSENT);
        }
        self.sparse[index] = self.entities.len() as u32;
        self.entities.push(entity);
        // SAFETY: src contract forwarded.
        unsafe { self.column.push_from(src, tick) };
        false
    }

    /// Stores `value` for `entity`, replacing (and dropping) any value it
    /// had. Returns true if a value was replaced.
    ///
    /// Panics if this set does not hold `T`s.
    pub fn insert_value<T: 'static>(
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
        let value = std::mem::ManuallyDrop::new(value);
        // SAFETY: the set holds `T`s (asserted); `value` is a valid `T` that
        // is given up (ManuallyDrop) and now owned by the set.
        unsafe { self.insert(entity, (&*value as *const T).cast(), tick, panics) }
    }

    /// Moves `entity`'s value out, if it has one and this set holds `T`s.
    pub fn remove_value<T: 'static>(&mut self, entity: Entity) -> Option<T> {
        if !self.column.holds::<T>() {
            return None;
        }
        let mut out = None;
        self.remove_with(entity, |ptr| {
            // SAFETY: the set holds `T`s (checked above); `remove_with`
            // forgets the slot after this closure moved the value out.
            out = Some(unsafe { ptr.cast::<T>().read() })
        });
        out
    }

    /// Removes `entity`'s value without dropping it, first letting `take`
    /// move it out. Returns false (and does nothing) if there is none.
    pub fn remove_with(&mut self, entity: Entity, take: impl FnOnce(*mut u8)) -> bool {
        let Some(d) = self.dense_index(entity) else {
            return false;
        };
        // SAFETY: d < len.
        take(unsafe { self.column.ptr_at(d) });
        // SAFETY: the value was moved out by `take`.
        unsafe { self.column.swap_remove_forget(d) };
        self.swap_remove_index(d);
        true
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

    /// The set for `id`, created if needed.
    pub fn get_or_create(&mut self, id: ComponentId, components: &Components) -> &mut SparseSet {
        if self.get(id).is_none() {
            if self.index.len() <= id.index() {
                self.index.resize(id.index() + 1, 0);
            }
            self.sets.push((id, SparseSet::new(id, components)));
            self.index[id.index()] = self.sets.len() as u32;
        }
        self.get_mut(id).expect("just created")
    }

    /// Every set, in creation order.
    pub fn iter(&self) -> impl Iterator<Item = (ComponentId, &SparseSet)> {
        self.sets.iter().map(|(id, s)| (*id, s))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ComponentId, &mut SparseSet)> {
        self.sets.iter_mut().map(|(id, s)| (*id, s))
    }
}
