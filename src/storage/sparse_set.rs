//! Sparse-set storage: one set per sparse component type.

use std::any::TypeId;
use std::marker::PhantomData;

use super::{AbortOnUnwind, Column, DeferredPanic, TakenSlot};
use crate::change::Tick;
use crate::component::{ComponentId, Components};
use crate::entity::Entity;

const ABSENT: u32 = u32::MAX;

#[cold]
#[inline(never)]
fn slot_taken(index: usize, holder: Option<Entity>) -> ! {
    panic!("sparse set: slot {index} is held by {holder:?}, not the entity inserted");
}

/// Grows `sparse` to cover `index`; returns that (empty) slot.
#[cold]
#[inline(never)]
fn grow_sparse(sparse: &mut Vec<u32>, index: usize) -> &mut u32 {
    sparse.resize(index + 1, ABSENT);
    &mut sparse[index]
}

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

    /// Bytes held on the heap, by structure: values with their change
    /// ticks, the dense entity list, the sparse index (allocated capacity,
    /// not length).
    pub fn heap_bytes_parts(&self) -> (usize, usize, usize) {
        (
            self.column.heap_bytes(),
            self.entities.capacity() * std::mem::size_of::<Entity>(),
            self.sparse.capacity() * std::mem::size_of::<u32>(),
        )
    }

    #[inline]
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    #[inline]
    pub fn column(&self) -> &Column {
        &self.column
    }

    /// The values, for a rewrite in place that keeps them where they are
    /// (rollback puts saved values back row for row).
    #[inline]
    pub fn column_mut(&mut self) -> &mut Column {
        &mut self.column
    }

    /// Dense index of `entity`'s value, if it has one.
    #[inline(always)]
    pub fn dense_index(&self, entity: Entity) -> Option<usize> {
        // An empty slot holds `ABSENT`, past any dense index, so the bounds
        // check of the lookup below covers it. The generation check makes a
        // stale handle miss, even though despawn always empties the slot
        // first.
        let d = *self.sparse.get(entity.index() as usize)? as usize;
        (self.entities.get(d) == Some(&entity)).then_some(d)
    }

    /// `entity`'s value as a `T`, for an entity known to be alive:
    /// [`SparseSet::get`] without the generation check, so a walk over
    /// many entities reads the set's values and sparse index only, not its
    /// dense entity list. A live entity's slot is its own (set invariant);
    /// a dead one's may name another entity's value, or none.
    #[inline]
    pub fn get_live<T: 'static>(&self, entity: Entity) -> Option<&T> {
        let d = *self.sparse.get(entity.index() as usize)? as usize;
        // `ABSENT` is past any row: `Column::get` checks the bound.
        self.column.get(d)
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
        // SAFETY: forwarded contract.
        match unsafe { self.insert_or_replace(entity, value, tick) } {
            Some(old) => {
                if std::mem::needs_drop::<T>() {
                    panics.run(|| drop(old));
                }
                true
            }
            None => false,
        }
    }

    /// Stores `value` for `entity` and hands back the value it replaces, if
    /// any (marked changed at `tick`, like a fresh value is marked added).
    /// The set is complete when this returns: the caller drops the old value
    /// when it suits it (a panicking drop then finds nothing half-done).
    ///
    /// # Safety
    /// - `T` is this set's component type.
    #[inline(always)]
    pub unsafe fn insert_or_replace<T: 'static>(
        &mut self,
        entity: Entity,
        value: T,
        tick: Tick,
    ) -> Option<T> {
        let index = entity.index() as usize;
        let slot = match self.sparse.get_mut(index) {
            Some(slot) => slot,
            None => grow_sparse(&mut self.sparse, index),
        };
        if *slot != ABSENT {
            let d = *slot as usize;
            // A slot holds the dense index of the value of whichever entity
            // has this index; only the same generation owns it.
            if self.entities.get(d) == Some(&entity) {
                // SAFETY: d < len (its entity was just read); `T` is the
                // set's type (contract).
                return Some(unsafe { self.column.replace_take(d, value, tick) });
            }
            // A live entity's index is unique and despawn empties its slots,
            // so an older generation cannot hold this slot.
            slot_taken(index, self.entities.get(d).copied());
        }
        *slot = self.entities.len() as u32;
        self.entities.push(entity);
        // SAFETY: `T` is the set's type (contract).
        unsafe { self.column.push_value(value, tick) };
        None
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

    /// Removes `entity`'s value and returns it, if it has one:
    /// [`SparseSet::remove_with`] for a statically known type.
    ///
    /// # Safety
    /// - `T` is this set's component type.
    #[inline(always)]
    pub unsafe fn remove_value<T: 'static>(&mut self, entity: Entity) -> Option<T> {
        let slot = self.sparse.get_mut(entity.index() as usize)?;
        // `ABSENT` is past any dense index (see `dense_index`).
        let d = *slot as usize;
        if self.entities.get(d) != Some(&entity) {
            return None;
        }
        *slot = ABSENT;
        let last = self.entities.len() - 1;
        if d != last {
            let moved = self.entities[last];
            self.entities[d] = moved;
            debug_assert!((moved.index() as usize) < self.sparse.len());
            // SAFETY: `moved` is in the dense list, so its sparse slot
            // exists (type invariant: `sparse[moved.index()]` names its
            // dense index); the bounds are known, not checked again.
            unsafe { *self.sparse.get_unchecked_mut(moved.index() as usize) = d as u32 };
        }
        self.entities.truncate(last);
        // The value last: its move goes through a raw pointer, after which
        // the compiler reloads every length. The column is still one longer
        // than `entities`, and its slot `d` is the entity's value.
        // SAFETY: d < the column's len (it was < entities' len before the
        // swap-remove); `T` is the set's type (contract).
        Some(unsafe { self.column.swap_remove_take::<T>(d) })
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

    /// Removes `entity`'s value, if it has one, handing it to `take` as a
    /// [`TakenSlot`] to move it out; returns what `take` returned. The set
    /// forgets the value: one `take` leaves is leaked, never dropped. A
    /// panic in `take` aborts (the value it read would be owned twice).
    pub fn take_with<R>(
        &mut self,
        entity: Entity,
        take: impl FnOnce(TakenSlot<'_>) -> R,
    ) -> Option<R> {
        let d = self.dense_index(entity)?;
        let guard = AbortOnUnwind("moving a value out of a sparse set");
        // SAFETY: d < len (`dense_index` found the entity there); the slot
        // is forgotten just below, and read by nothing else before.
        let taken = take(unsafe { TakenSlot::new(&self.column, d) });
        std::mem::forget(guard);
        // SAFETY: d < len; the value is `take`'s now (or leaked): the slot
        // is removed without a drop.
        unsafe { self.column.swap_remove_forget(d) };
        self.swap_remove_index(d);
        Some(taken)
    }

    /// Removes `entity`'s value, if any, without reading or dropping it (a
    /// leak, for a value the caller knows owns nothing). Returns true if
    /// there was one.
    pub fn remove_forget(&mut self, entity: Entity) -> bool {
        let Some(d) = self.dense_index(entity) else {
            return false;
        };
        // SAFETY: d < len; the value is given up, never read again.
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

    /// Removes the values of every entity `alive` rejects, in one
    /// sequential pass that keeps the others in order: dropped (catching
    /// panics into `panics`), or forgotten unread if `drop_dead` is false
    /// (a leak, for values the caller knows own nothing). For removing
    /// many entities at once: the cost is the set's length, where
    /// [`SparseSet::remove_drop`] costs a lookup and a swap per entity.
    pub fn retain_alive(
        &mut self,
        alive: impl Fn(Entity) -> bool,
        drop_dead: bool,
        panics: &mut DeferredPanic,
    ) {
        let (entities, sparse) = (&mut self.entities, &mut self.sparse);
        let mut kept = 0;
        // `alive` unwinding midway would leave the column shorter than
        // `entities`: stop there rather than go on with a broken set.
        let guard = AbortOnUnwind("a sparse set's liveness test panicked");
        self.column.retain(
            #[inline(always)]
            |d| {
                let e = entities[d];
                let keep = alive(e);
                sparse[e.index() as usize] = if keep { kept as u32 } else { ABSENT };
                if keep {
                    entities[kept] = e;
                    kept += 1;
                }
                keep
            },
            drop_dead,
            panics,
        );
        std::mem::forget(guard);
        entities.truncate(kept);
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

    /// `entity`'s value as a `&mut T`, not marked changed (see
    /// [`Column::get_mut_unmarked`]).
    #[inline]
    pub fn get_mut_unmarked<T: 'static>(&mut self, entity: Entity) -> Option<&mut T> {
        let d = self.dense_index(entity)?;
        self.column.get_mut_unmarked(d)
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

    /// Reorders the set: afterwards dense slot `i` holds what slot
    /// `order[i]` held (value, ticks and entity).
    ///
    /// Panics, before changing anything, if `order` is not a permutation of
    /// `0..len`.
    pub fn reorder(&mut self, order: &[u32]) {
        assert!(
            super::table::is_permutation(order, self.entities.len()),
            "a set reorder needs each of the {} values exactly once",
            self.entities.len()
        );
        // SAFETY: `order` is a permutation of `0..len` (checked above), and
        // the column holds `len` values (type invariant).
        unsafe { self.column.permute(order) };
        self.entities = order
            .iter()
            .map(|&from| self.entities[from as usize])
            .collect();
        for (d, e) in self.entities.iter().enumerate() {
            self.sparse[e.index() as usize] = d as u32;
        }
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
///
/// Invariant: with `last == (t, id, slot)` (and the same for `prev`) and
/// `t` not `NoSet`'s id, `sets[slot]` is the set of component `id`, which
/// holds values of the Rust type whose `TypeId` is `t`.
pub(crate) struct SparseSets {
    /// `index[component] == position in sets + 1`, or 0 if not sparse/created.
    index: Vec<u32>,
    sets: Vec<(ComponentId, SparseSet)>,
    /// The set a typed insert or remove used last: loops over one component
    /// type (the common case) find its set without hashing the type.
    last: (TypeId, ComponentId, u32),
    /// The one remembered before `last`: two components toggled in turn
    /// (two status effects) swap the two instead of hashing each time.
    prev: (TypeId, ComponentId, u32),
}

/// The type `SparseSets::last` names while it remembers no set: private, so
/// no set holds it.
struct NoSet;

impl Default for SparseSets {
    fn default() -> Self {
        SparseSets {
            index: Vec::new(),
            sets: Vec::new(),
            last: (TypeId::of::<NoSet>(), ComponentId::new(0), 0),
            prev: (TypeId::of::<NoSet>(), ComponentId::new(0), 0),
        }
    }
}

/// The sparse set of the Rust component type `T`, checked to hold `T`s: its
/// typed operations need no `unsafe` at the call site.
pub(crate) struct TypedSet<'a, T> {
    set: &'a mut SparseSet,
    value: PhantomData<fn(T) -> T>,
}

impl<T: 'static> TypedSet<'_, T> {
    /// How many entities have a value.
    #[inline]
    pub fn len(&self) -> usize {
        self.set.entities.len()
    }

    /// See [`SparseSet::insert_or_replace`].
    #[inline(always)]
    pub fn insert(&mut self, entity: Entity, value: T, tick: Tick) -> Option<T> {
        // SAFETY: a `TypedSet<T>` is only made for a set of `T`s (see
        // `SparseSets::typed`).
        unsafe { self.set.insert_or_replace(entity, value, tick) }
    }

    /// See [`SparseSet::remove_value`].
    #[inline(always)]
    pub fn remove(&mut self, entity: Entity) -> Option<T> {
        // SAFETY: as in `insert`.
        unsafe { self.set.remove_value(entity) }
    }
}

impl SparseSets {
    /// The set of Rust type `T`, if it is the one remembered by
    /// [`SparseSets::remember`]; also its component id.
    #[inline(always)]
    pub fn typed<T: 'static>(&mut self) -> Option<(ComponentId, TypedSet<'_, T>)> {
        let (t, id, slot) = self.last;
        if t != TypeId::of::<T>() {
            return None;
        }
        debug_assert!(slot < self.sets.len() as u32);
        // SAFETY: `t` is a real type's id (`NoSet` is never a `T` here: it
        // is private and no set holds it), so `slot` names an existing set
        // (type invariant); sets are never removed.
        let set = unsafe { &mut self.sets.get_unchecked_mut(slot as usize).1 };
        Some((
            id,
            TypedSet {
                set,
                value: PhantomData,
            },
        ))
    }

    /// Remembers the set of component `id`, which must hold `T`s (checked),
    /// for [`SparseSets::typed`]; creates the set if `create`. Returns false
    /// if there is no set (and `!create`).
    #[cold]
    #[inline(never)]
    pub fn remember<T: 'static>(
        &mut self,
        id: ComponentId,
        components: &Components,
        create: bool,
    ) -> bool {
        let slot = match self.index.get(id.index()) {
            Some(&i) if i > 0 => i - 1,
            _ if create => self.create(id, components) - 1,
            _ => return false,
        };
        assert!(
            self.sets[slot as usize].1.column.holds::<T>(),
            "sparse set of {id:?} does not hold `{}`",
            std::any::type_name::<T>()
        );
        if self.last.0 != TypeId::of::<T>() {
            self.prev = self.last;
        }
        self.last = (TypeId::of::<T>(), id, slot);
        true
    }

    /// Makes the set remembered before the last one the last one again if
    /// it is `T`'s (swapping the two); false if it is not.
    #[inline]
    pub fn recall<T: 'static>(&mut self) -> bool {
        if self.prev.0 != TypeId::of::<T>() {
            return false;
        }
        std::mem::swap(&mut self.last, &mut self.prev);
        true
    }

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
