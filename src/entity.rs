//! Entities: generational ids and the allocator that hands them out.
//!
//! An [`Entity`] is a 32-bit *index* (a slot in the world) plus a 32-bit
//! *generation* (how many times that slot has been reused). Despawning bumps
//! the slot's generation and pushes the index onto a free list; the next spawn
//! pops it (last freed, first reused, as in EntityX). Every handle to the old
//! occupant now carries a stale generation and is rejected by every API.
//!
//! A slot whose generation would wrap past `u32::MAX` is *retired*: it never
//! goes back on the free list, so an old handle can never alias a new entity.
//!
//! Ids can also be *reserved* through a shared reference
//! ([`Entities::reserve`]), which is how deferred commands hand out ids that
//! are valid at once while systems run in parallel; reserved ids become real
//! entities at the next [`Entities::flush`] — unless they were *released*
//! first ([`FreshIndices::release`], by a spawn command dropped unapplied):
//! a released reservation never comes to life; its slot's generation is
//! bumped and the slot freed, so the handle is stale, never an alias.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashSet;

use crate::archetype::ArchetypeId;

/// A handle to an entity: index plus generation.
///
/// Handles are plain values: `Copy`, comparable, hashable, and printable as
/// `index v generation` (`12v3`). A handle outlives its entity safely: once
/// the entity is despawned, every API reports the handle as stale.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let e = world.spawn(());
/// assert_eq!(format!("{e:?}"), "0v1");
/// assert_eq!(Entity::from_bits(e.to_bits()), Some(e));
/// world.despawn(e).unwrap();
/// assert!(!world.contains(e));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entity {
    index: u32,
    generation: NonZeroU32,
}

impl Entity {
    /// A handle that never names a live entity (index `u32::MAX`, which the
    /// allocator never hands out), for fields that need an `Entity` before
    /// the real one exists: Bevy's name. Every API reports it as stale.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.spawn(());
    /// assert!(!world.contains(Entity::PLACEHOLDER));
    /// assert!(world.despawn(Entity::PLACEHOLDER).is_err());
    /// ```
    pub const PLACEHOLDER: Entity = Entity {
        index: u32::MAX,
        generation: NonZeroU32::MIN,
    };

    /// The entity itself. mosaic's `spawn` (on [`World`](crate::World) and
    /// [`Commands`](crate::Commands)) returns the `Entity` directly, where
    /// Bevy's returns a handle to call `.id()` on: this lets Bevy's
    /// `let e = commands.spawn(..).id();` compile unchanged.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(()).id();
    /// assert!(world.contains(e));
    /// ```
    #[inline]
    pub const fn id(self) -> Entity {
        self
    }

    /// The slot this entity occupies. Slots are reused after despawn.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// let mut world = World::new();
    /// assert_eq!(world.spawn(()).index(), 0);
    /// ```
    #[inline]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// How many times the slot has been handed out (starts at 1).
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let a = world.spawn(());
    /// world.despawn(a).unwrap();
    /// let b = world.spawn(());
    /// assert_eq!((a.index(), a.generation()), (b.index(), 1));
    /// assert_eq!(b.generation(), 2);
    /// ```
    #[inline]
    pub const fn generation(self) -> u32 {
        self.generation.get()
    }

    /// Packs the handle into a `u64`: generation in the high 32 bits, index in
    /// the low 32 bits. [`Entity::from_bits`] reverses it.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert_eq!(e.to_bits(), 1 << 32);
    /// ```
    #[inline]
    pub const fn to_bits(self) -> u64 {
        ((self.generation.get() as u64) << 32) | self.index as u64
    }

    /// Rebuilds a handle from [`Entity::to_bits`]. Returns `None` for bits no
    /// handle can have (generation zero). A rebuilt handle is checked like any
    /// other: it refers to a live entity only if that exact generation lives.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// assert!(Entity::from_bits(7).is_none()); // generation 0
    /// let e = Entity::from_bits((3 << 32) | 7).unwrap();
    /// assert_eq!((e.index(), e.generation()), (7, 3));
    /// ```
    #[inline]
    pub const fn from_bits(bits: u64) -> Option<Entity> {
        match NonZeroU32::new((bits >> 32) as u32) {
            Some(generation) => Some(Entity {
                index: bits as u32,
                generation,
            }),
            None => None,
        }
    }

    #[inline]
    pub(crate) const fn new(index: u32, generation: NonZeroU32) -> Entity {
        Entity { index, generation }
    }
}

impl fmt::Debug for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}v{}", self.index, self.generation)
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Where a live entity's table components are: its archetype, and its row
/// in that archetype's table (its index in [`Archetype::entities`]). A
/// snapshot: any structural change may move the entity.
///
/// [`Archetype::entities`]: crate::Archetype::entities
///
/// # Example
/// ```
/// let mut world = mosaic::World::new();
/// let e = world.spawn(());
/// let location = world.location(e).unwrap();
/// assert_eq!(location.archetype, mosaic::ArchetypeId::EMPTY);
/// assert_eq!(location.row, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntityLocation {
    /// The entity's archetype.
    pub archetype: ArchetypeId,
    /// The entity's row in its archetype's table.
    pub row: u32,
}

impl EntityLocation {
    /// The location of a slot that holds no live entity.
    pub(crate) const INVALID: EntityLocation = EntityLocation {
        archetype: ArchetypeId::INVALID,
        row: u32::MAX,
    };

    /// False for [`EntityLocation::INVALID`]: see
    /// [`Entities::get_unverified`](crate::entity::Entities::get_unverified).
    #[inline(always)]
    pub(crate) fn is_valid(self) -> bool {
        self != EntityLocation::INVALID
    }
}

#[derive(Clone, Copy, Debug)]
struct EntityMeta {
    generation: NonZeroU32,
    location: EntityLocation,
}

pub(crate) const FIRST_GENERATION: NonZeroU32 = NonZeroU32::MIN;

/// Hands out never-used entity indices. Shared (through an `Arc`) by a world
/// and its command buffers, so a buffer can reserve ids that are valid at
/// once without a lock and while the world is borrowed elsewhere.
///
/// Also carries the reservations given up by spawn commands dropped
/// unapplied ([`FreshIndices::release`]), for the next
/// [`Entities::flush`] to skip.
#[derive(Debug, Default)]
pub(crate) struct FreshIndices {
    next: AtomicU64,
    released: Mutex<Vec<Entity>>,
    /// Reservations owned by spawn commands ([`Entities::reserve_held`],
    /// [`FreshIndices::next_held`]): the next flush *holds* them (reserved,
    /// not live) instead of making them live and empty, for their command
    /// to place whole. A fresh index is taken and recorded under this lock,
    /// and a flush reads the counter under it, so a flush never sees a
    /// held index without its record.
    held: Mutex<Vec<Entity>>,
    /// True while `released` may hold ids: a held slot's release needs a
    /// flush even when nothing new was reserved.
    any_released: AtomicBool,
    /// Set (after the fact, with `Release`) by every reservation and
    /// release made through a shared reference; cleared (with `Acquire`)
    /// by the world before it looks at what was reserved. The one check
    /// the world's structural operations pay for reservations
    /// ([`Entities::may_need_flush`]), instead of reading every source.
    dirty: AtomicBool,
}

impl FreshIndices {
    /// The next never-used index. Panics once the index space is exhausted
    /// (and keeps panicking: an index is never handed out twice).
    #[inline]
    pub fn next(&self) -> u32 {
        // `take` leaves the counter as it was when it refuses, so a caught
        // exhaustion panic leaves no index handed out to nobody (a
        // `fetch_add` here would count one past the limit, and the next
        // flush would make a live entity of it).
        match self.take(1) {
            Some(index) => index as u32,
            None => panic!(
                "entity index space exhausted: more than {} entities",
                u32::MAX - 1
            ),
        }
    }

    /// A never-used index as an id owned by a spawn command: the next
    /// flush holds it (see [`FreshIndices::held`]). Panics as
    /// [`FreshIndices::next`] does.
    pub fn next_held(&self) -> Entity {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        self.next_held_locked(&mut held)
    }

    /// [`FreshIndices::next_held`] with its lock taken.
    fn next_held_locked(&self, held: &mut Vec<Entity>) -> Entity {
        let entity = Entity::new(self.next(), FIRST_GENERATION);
        held.push(entity);
        self.mark_dirty();
        entity
    }

    /// Records that something was reserved or released since the world
    /// last looked (see [`FreshIndices::dirty`]). Called after the change,
    /// so a world that sees the flag sees the change.
    #[inline]
    fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// The held reservations' lock: taken by a reservation for a spawn
    /// command before it takes its id (from the free list or the fresh
    /// indices) and records it, so that whoever reads the reservations
    /// under it ([`Entities::snapshot_flushed_into`]) sees every held id
    /// with its record.
    fn lock_held(&self) -> std::sync::MutexGuard<'_, Vec<Entity>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many indices were handed out, and every held reservation
    /// recorded since the last call, read together.
    fn take_held(&self) -> (usize, Vec<Entity>) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        (self.handed_out() as usize, std::mem::take(&mut *held))
    }

    /// Test hook: the next fresh index will be `next` (none may have been
    /// handed out past it).
    #[cfg(test)]
    pub fn start_at(&self, next: u32) {
        self.next.store(u64::from(next), Ordering::Relaxed);
    }

    /// How many indices were ever handed out.
    #[inline]
    fn handed_out(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    /// Gives up reserved ids whose spawn will never happen: at the next
    /// flush they do not come to life (see [`Entities::flush`]). An id that
    /// is not (or no longer) a pending reservation by then is ignored.
    pub fn release(&self, entities: impl IntoIterator<Item = Entity>) {
        let mut released = self.released.lock().unwrap_or_else(PoisonError::into_inner);
        released.extend(entities);
        if !released.is_empty() {
            self.any_released.store(true, Ordering::Relaxed);
            self.mark_dirty();
        }
    }

    /// Every id released since the last call.
    fn take_released(&self) -> Vec<Entity> {
        let mut released = self.released.lock().unwrap_or_else(PoisonError::into_inner);
        self.any_released.store(false, Ordering::Relaxed);
        std::mem::take(&mut *released)
    }

    /// True if ids were released since [`FreshIndices::take_released`].
    #[inline]
    fn any_released(&self) -> bool {
        self.any_released.load(Ordering::Relaxed)
    }

    /// Takes `n` never-used indices in one step and returns the first, or
    /// takes none (`None`) if fewer than `n` are left.
    fn take(&self, n: u64) -> Option<u64> {
        let limit = u64::from(u32::MAX);
        self.next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |start| {
                start.checked_add(n).filter(|&end| end <= limit)
            })
            .ok()
    }

    /// Takes `0..n` if no index was ever handed out; false (taking none)
    /// otherwise.
    fn take_first(&self, n: u64) -> bool {
        n <= u64::from(u32::MAX)
            && self
                .next
                .compare_exchange(0, n, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Gives back `start..end`, the last indices taken, if no index was
    /// taken since. Returns false (giving back nothing) otherwise.
    fn give_back(&self, start: u64, end: u64) -> bool {
        self.next
            .compare_exchange(end, start, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

/// Never-used indices a batch spawn took in one step
/// ([`Entities::take_fresh`]), handed out one by one by
/// [`Entities::alloc_in`]; the rest goes back with [`Entities::end_batch`].
#[derive(Debug)]
pub(crate) struct FreshBatch {
    next: u32,
    end: u32,
}

/// The allocator: one [`EntityMeta`] per slot ever used, plus a free list.
///
/// Invariants:
/// - a slot is *live* iff its location is not `INVALID`; its generation is
///   the one handed out for the current occupant;
/// - every index in `free` is a dead slot whose generation is not yet
///   exhausted, and appears once;
/// - `meta.len() <= fresh.handed_out()`;
/// - *reserved* ids (handed out but not yet made live by
///   [`Entities::flush`]) are: `free[max(free_cursor, 0)..]` (reserved
///   through [`Entities::reserve`]), every index in `pending`, and every
///   index in `meta.len()..fresh.handed_out()`; those released meanwhile
///   ([`FreshIndices::release`]) are freed by the flush instead.
///
/// ```text
///   free:   [ f0 f1 f2 | f3 f4 ]        meta: [ 0 .. len )[ reserved fresh )
///                      ^ free_cursor (f3, f4 reserved)
///   free_cursor < 0  ⇒  the free list is all reserved; later reservations
///                        took fresh indices
/// ```
pub(crate) struct Entities {
    meta: Vec<EntityMeta>,
    free: Vec<u32>,
    free_cursor: AtomicI64,
    fresh: Arc<FreshIndices>,
    /// Fresh indices reserved elsewhere that `alloc` stepped over.
    pending: Vec<u32>,
    /// Slots reserved by spawn commands not applied yet: flushed, but not
    /// live (no location) nor free, under their slot's generation, until
    /// the command places the entity whole ([`Entities::take_held`]) or is
    /// dropped (its reservation released: the slot is freed).
    held: FxHashSet<u32>,
    len: u32,
    /// Counts the changes made through `&mut self` (any id allocated,
    /// freed, reserved into life or moved to another location): equal
    /// versions mean that no entity was spawned, despawned or moved
    /// between two looks, so every table holds the same entities in the
    /// same rows. Rollback uses it to skip comparing entity lists.
    version: u64,
}

impl fmt::Debug for Entities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entities")
            .field("live", &self.len)
            .field("slots", &self.meta.len())
            .field("free", &self.free.len())
            .finish()
    }
}

const DEAD: EntityMeta = EntityMeta {
    generation: FIRST_GENERATION,
    location: EntityLocation::INVALID,
};

impl Entities {
    pub fn new() -> Self {
        Entities {
            meta: Vec::new(),
            free: Vec::new(),
            free_cursor: AtomicI64::new(0),
            fresh: Arc::default(),
            pending: Vec::new(),
            held: FxHashSet::default(),
            len: 0,
            version: 0,
        }
    }

    /// See the `version` field: changes whenever an entity is allocated,
    /// freed or moved.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Changes the version without any entity changing: for a change to
    /// the rows (a rollback restore putting added ticks back) that
    /// whatever compares versions must not take for "nothing moved".
    pub fn touch(&mut self) {
        self.version = self.version.wrapping_add(1);
    }

    /// Number of live entities.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Number of index slots, live or not: every live entity's index is
    /// below it.
    #[inline]
    pub fn slots(&self) -> usize {
        self.meta.len()
    }

    /// The shared source of fresh indices, for command buffers.
    pub fn fresh_indices(&self) -> Arc<FreshIndices> {
        Arc::clone(&self.fresh)
    }

    /// Reserves an id through a shared reference, reusing a freed index when
    /// one is left. The id is unique and becomes a live (empty) entity at the
    /// next [`Entities::flush`].
    pub fn reserve(&self) -> Entity {
        let n = self.free_cursor.fetch_sub(1, Ordering::Relaxed);
        let entity = if n > 0 {
            let index = self.free[n as usize - 1];
            Entity::new(index, self.meta[index as usize].generation)
        } else {
            Entity::new(self.fresh.next(), FIRST_GENERATION)
        };
        self.fresh.mark_dirty();
        entity
    }

    /// [`Entities::reserve`] for a spawn command: the next flush holds the
    /// id (reserved, not live) rather than making it live and empty, until
    /// the command places it whole ([`Entities::take_held`]).
    pub fn reserve_held(&self) -> Entity {
        // The lock first (see `FreshIndices::lock_held`).
        let mut held = self.fresh.lock_held();
        let n = self.free_cursor.fetch_sub(1, Ordering::Relaxed);
        if n > 0 {
            let index = self.free[n as usize - 1];
            let entity = Entity::new(index, self.meta[index as usize].generation);
            held.push(entity);
            self.fresh.mark_dirty();
            entity
        } else {
            self.fresh.next_held_locked(&mut held)
        }
    }

    /// Ends the hold of a flushed spawn command's id: true if `entity` was
    /// held (its slot then waits, dead, for [`Entities::place`]); false if
    /// it was not (never reserved for a spawn, or taken since).
    pub fn take_held(&mut self, entity: Entity) -> bool {
        self.version = self.version.wrapping_add(1);
        debug_assert!(!self.needs_flush());
        let index = entity.index;
        let ours = self
            .meta
            .get(index as usize)
            .is_some_and(|m| m.generation == entity.generation);
        ours && self.held.remove(&index)
    }

    /// False only if [`Entities::needs_flush`] is false: one flag and one
    /// length, for the check every structural operation makes. A true
    /// answer is confirmed by [`Entities::take_dirty`] then
    /// [`Entities::needs_flush`].
    #[inline(always)]
    pub fn may_need_flush(&self) -> bool {
        self.fresh.dirty.load(Ordering::Relaxed) || !self.pending.is_empty()
    }

    /// Clears the flag [`Entities::may_need_flush`] reads, before
    /// [`Entities::needs_flush`] looks: a reservation made after this sets
    /// it again, one made before is seen by that look.
    pub fn take_dirty(&self) {
        self.fresh.dirty.swap(false, Ordering::Acquire);
    }

    /// True if ids were reserved since the last flush.
    #[inline]
    pub fn needs_flush(&self) -> bool {
        self.free_cursor.load(Ordering::Relaxed) != self.free.len() as i64
            || !self.pending.is_empty()
            || self.fresh.handed_out() != self.meta.len() as u64
            || (!self.held.is_empty() && self.fresh.any_released())
    }

    /// Makes every reserved id a live entity, in reservation order for each
    /// source, calling `place` to put it somewhere (the world puts it in the
    /// empty archetype). Released reservations ([`FreshIndices::release`])
    /// do not come to life: their slot's generation is bumped (so the
    /// handle out there is stale, and never names a later entity) and the
    /// slot is freed, or retired if its generation is exhausted.
    pub fn flush(&mut self, mut place: impl FnMut(Entity) -> EntityLocation) {
        self.version = self.version.wrapping_add(1);
        // Fresh indices up to `end` are flushed now; one reserved (and
        // perhaps released) after this read waits for the next flush. The
        // held ones among them are all recorded by now (same lock).
        let (end, held) = self.fresh.take_held();
        let mut held: FxHashSet<Entity> = held.into_iter().collect();
        let mut released: FxHashSet<Entity> = self.fresh.take_released().into_iter().collect();
        let mut given_up = Vec::new();
        let cursor = *self.free_cursor.get_mut();
        let start = cursor.max(0) as usize;
        // Reserved free entries were taken from the end, so the first one
        // reserved is the last in the list.
        for i in (start..self.free.len()).rev() {
            let index = self.free[i];
            self.make_live(index, &mut released, &mut held, &mut given_up, &mut place);
        }
        self.free.truncate(start);
        for index in std::mem::take(&mut self.pending) {
            self.make_live(index, &mut released, &mut held, &mut given_up, &mut place);
        }
        for index in self.meta.len()..end {
            self.meta.push(DEAD);
            self.make_live(
                index as u32,
                &mut released,
                &mut held,
                &mut given_up,
                &mut place,
            );
        }
        // Spawn commands dropped since their id was held: the slot is
        // freed, as for a reservation given up before any flush.
        if !self.held.is_empty() && !released.is_empty() {
            released.retain(|e| {
                let meta = &self.meta[e.index as usize];
                let held_here = meta.generation == e.generation && self.held.remove(&e.index);
                if held_here {
                    given_up.push(e.index);
                }
                !held_here
            });
        }
        for index in given_up {
            self.free_unborn(index);
        }
        // Every held record named an id flushed here (recorded before the
        // counter was read): none is left.
        debug_assert!(held.is_empty(), "a held id that was not reserved");
        *self.free_cursor.get_mut() = self.free.len() as i64;
        // A fresh index not flushed yet may still be a pending reservation;
        // any other id left was not one (it is live, or gone): ignored.
        if !released.is_empty() {
            self.fresh
                .release(released.into_iter().filter(|e| e.index as usize >= end));
        }
    }

    /// Makes reserved `index` live, unless its reservation was released
    /// (then it goes to `given_up`).
    fn make_live(
        &mut self,
        index: u32,
        released: &mut FxHashSet<Entity>,
        held: &mut FxHashSet<Entity>,
        given_up: &mut Vec<u32>,
        place: &mut impl FnMut(Entity) -> EntityLocation,
    ) {
        let generation = self.meta[index as usize].generation;
        let entity = Entity::new(index, generation);
        if !released.is_empty() && released.remove(&entity) {
            held.remove(&entity);
            given_up.push(index);
            return;
        }
        if !held.is_empty() && held.remove(&entity) {
            // A spawn command's: reserved, not live, until it applies.
            self.held.insert(index);
            return;
        }
        let location = place(entity);
        self.meta[index as usize].location = location;
        self.len += 1;
    }

    /// Frees the dead slot `index` whose reservation was given up: as if
    /// its entity had lived and died, so the handle it was reserved under is
    /// stale for good.
    fn free_unborn(&mut self, index: u32) {
        let meta = &mut self.meta[index as usize];
        debug_assert_eq!(meta.location, EntityLocation::INVALID);
        if let Some(next) = meta.generation.checked_add(1) {
            meta.generation = next;
            self.free.push(index);
        }
    }

    /// Allocates a live id directly (its location set by the caller right
    /// after). Requires no reservation through `&self` since the last flush;
    /// reservations by command buffers may happen at any time.
    ///
    /// A spawn loop's case inline: nothing free, the counter this
    /// allocator's alone (see [`Entities::next_fresh`]) and at the slots'
    /// end, and room for one more slot.
    #[inline(always)]
    pub fn alloc(&mut self) -> Entity {
        let index = self.meta.len();
        if self.free.is_empty() && self.meta.capacity() > index && self.fresh_is_sole() {
            let next = self.fresh.next.load(Ordering::Relaxed);
            if next == index as u64 && next < u64::from(u32::MAX) {
                // No other handle exists, and none can be made meanwhile
                // (cloning takes this one, behind `&mut self`).
                self.fresh.next.store(next + 1, Ordering::Relaxed);
                self.version = self.version.wrapping_add(1);
                self.len += 1;
                self.meta.push(DEAD);
                return Entity::new(next as u32, FIRST_GENERATION);
            }
        }
        self.alloc_slow()
    }

    /// [`Entities::alloc`] in general.
    #[inline(never)]
    fn alloc_slow(&mut self) -> Entity {
        self.version = self.version.wrapping_add(1);
        debug_assert_eq!(
            *self.free_cursor.get_mut(),
            self.free.len() as i64,
            "alloc with pending reservations"
        );
        if let Some(index) = self.free.pop() {
            *self.free_cursor.get_mut() = self.free.len() as i64;
            self.len += 1;
            return Entity::new(index, self.meta[index as usize].generation);
        }
        // May panic (index space exhausted): nothing is counted before it.
        let index = self.next_fresh();
        self.len += 1;
        while self.meta.len() < index as usize {
            // A command buffer reserved this index in between: it becomes
            // live at the next flush.
            self.pending.push(self.meta.len() as u32);
            self.meta.push(DEAD);
        }
        self.meta.push(DEAD);
        Entity::new(index, FIRST_GENERATION)
    }

    /// The next never-used index, as [`FreshIndices::next`], through a
    /// plain load and store when the counter is this allocator's alone
    /// ([`Entities::fresh_is_sole`]).
    #[inline(always)]
    fn next_fresh(&mut self) -> u32 {
        if self.fresh_is_sole() {
            let next = self.fresh.next.load(Ordering::Relaxed);
            if next < u64::from(u32::MAX) {
                // No other handle exists, and none can be made meanwhile
                // (cloning takes this one, behind `&mut self`).
                self.fresh.next.store(next + 1, Ordering::Relaxed);
                return next as u32;
            }
        }
        // Shared, or exhausted (then it panics, counting nothing).
        self.fresh.next()
    }

    /// True if this allocator holds the only handle to the counter of
    /// fresh indices (no command buffer holds one, the common case): then
    /// `&mut self` is exclusive access to it, and a plain load and store
    /// take an index, where an atomic read-modify-write costs a spawn loop
    /// about a fifth of its time per entity.
    #[inline(always)]
    fn fresh_is_sole(&mut self) -> bool {
        if Arc::strong_count(&self.fresh) == 1 && Arc::weak_count(&self.fresh) == 0 {
            // Pairs with the release decrement of the last other handle
            // dropped: whatever it reserved is seen by the loads after.
            std::sync::atomic::fence(Ordering::Acquire);
            return true;
        }
        false
    }

    /// Takes up to `n` never-used indices at once for a batch spawn: one
    /// atomic step instead of one per entity. Takes none while the free list
    /// has indices, which are reused first (as [`Entities::alloc`] does).
    /// Until [`Entities::end_batch`], the untaken part counts as reserved
    /// fresh ids (see the type's invariants), so nothing may flush.
    pub fn take_fresh(&mut self, n: usize) -> FreshBatch {
        self.version = self.version.wrapping_add(1);
        let none = FreshBatch { next: 0, end: 0 };
        if !self.free.is_empty() || n == 0 {
            return none;
        }
        let Some(start) = self.fresh.take(n as u64) else {
            return none;
        };
        // Fresh indices a command buffer reserved in between become live at
        // the next flush, as with `alloc`.
        while (self.meta.len() as u64) < start {
            self.pending.push(self.meta.len() as u32);
            self.meta.push(DEAD);
        }
        FreshBatch {
            next: start as u32,
            end: (start + n as u64) as u32,
        }
    }

    /// [`Entities::alloc`] of a live entity at `location`, from `batch`
    /// while it lasts.
    #[inline(always)]
    pub fn alloc_in(&mut self, batch: &mut FreshBatch, location: EntityLocation) -> Entity {
        self.version = self.version.wrapping_add(1);
        if batch.next == batch.end {
            return self.alloc_at(location);
        }
        let index = batch.next;
        batch.next += 1;
        debug_assert_eq!(self.meta.len(), index as usize);
        self.meta.push(EntityMeta {
            generation: FIRST_GENERATION,
            location,
        });
        self.len += 1;
        Entity::new(index, FIRST_GENERATION)
    }

    /// [`Entities::alloc`] of a live entity at `location`.
    #[inline(never)]
    fn alloc_at(&mut self, location: EntityLocation) -> Entity {
        let entity = self.alloc();
        self.set_location(entity.index(), location);
        entity
    }

    /// Ends a batch: indices it did not hand out go back to the shared
    /// counter if no one took an index since, else onto the free list (in
    /// order, lowest next), so no id is left reserved for nobody.
    pub fn end_batch(&mut self, batch: FreshBatch) {
        self.version = self.version.wrapping_add(1);
        if batch.next == batch.end {
            return;
        }
        debug_assert_eq!(self.meta.len(), batch.next as usize);
        if self
            .fresh
            .give_back(u64::from(batch.next), u64::from(batch.end))
        {
            return;
        }
        let unused = (batch.end - batch.next) as usize;
        self.meta.resize(self.meta.len() + unused, DEAD);
        // The free list was empty when the batch began (`take_fresh`), and
        // nothing frees or reserves through `&self` during one.
        debug_assert!(self.free.is_empty() && *self.free_cursor.get_mut() == 0);
        self.free.extend((batch.next..batch.end).rev());
        *self.free_cursor.get_mut() = self.free.len() as i64;
    }

    /// Arranges that the next allocations ([`Entities::alloc`]) return
    /// exactly `ids`, in order; the other slots below the largest index are
    /// left free (generation 1). Only for an allocator that never handed out
    /// an index: returns false, changing nothing, otherwise, or if two ids
    /// share an index, or an index is `limit` or more (every slot below the
    /// largest index is made).
    pub fn prepare_exact(&mut self, ids: &[Entity], limit: u32) -> bool {
        self.version = self.version.wrapping_add(1);
        if !self.meta.is_empty() || !self.pending.is_empty() || self.len != 0 {
            return false;
        }
        // The ids fresh allocation gives anyway (0, 1, 2, ... of the first
        // generation): nothing to arrange.
        if ids
            .iter()
            .enumerate()
            .all(|(i, e)| e.index() as usize == i && e.generation == FIRST_GENERATION)
        {
            return self.fresh.handed_out() == 0;
        }
        let Some(max) = ids.iter().map(|e| e.index()).max() else {
            return true;
        };
        if max >= limit {
            return false;
        }
        let slots = max as usize + 1;
        let mut wanted: Vec<Option<NonZeroU32>> = vec![None; slots];
        for e in ids {
            if wanted[e.index() as usize].replace(e.generation).is_some() {
                return false;
            }
        }
        // Only if no index was ever handed out (a command buffer may hold
        // the shared counter): take `0..slots` in one step.
        if !self.fresh.take_first(slots as u64) {
            return false;
        }
        self.meta = vec![DEAD; slots];
        // `alloc` pops from the end: the other free slots first in the
        // list (handed out after), then `ids` in reverse.
        let free = (0..slots as u32)
            .filter(|&i| wanted[i as usize].is_none())
            .rev()
            .chain(ids.iter().rev().map(|e| e.index()))
            .collect();
        self.install(wanted.iter().map(|g| g.unwrap_or(FIRST_GENERATION)), free);
        true
    }

    /// Gives each dead slot its generation from `generations` (in slot
    /// order; live slots keep theirs) and makes `free` the free list: the
    /// step [`Entities::prepare_exact`] and [`Entities::restore`] share,
    /// once the slots exist.
    fn install(&mut self, generations: impl IntoIterator<Item = NonZeroU32>, free: Vec<u32>) {
        for (meta, generation) in self.meta.iter_mut().zip(generations) {
            if meta.location == EntityLocation::INVALID {
                meta.generation = generation;
            }
        }
        self.free = free;
        *self.free_cursor.get_mut() = self.free.len() as i64;
    }

    /// Reserves room for `additional` more slots.
    pub fn reserve_capacity(&mut self, additional: usize) {
        let from_free = self.free.len().min(additional);
        self.meta.reserve(additional - from_free);
    }

    /// Kills `entity`: bumps its slot's generation and frees the slot (unless
    /// the generation is exhausted, in which case the slot is retired).
    /// Returns where the entity was, or `None` if the handle is stale.
    #[inline]
    pub fn free(&mut self, entity: Entity) -> Option<EntityLocation> {
        let location = self.get(entity)?;
        let meta = &mut self.meta[entity.index as usize];
        meta.location = EntityLocation::INVALID;
        self.len -= 1;
        self.version = self.version.wrapping_add(1);
        // On generation exhaustion the slot is retired for good: it never
        // goes back on the free list.
        if let Some(next) = meta.generation.checked_add(1) {
            meta.generation = next;
            // Ids reserved from the free list through `&self` are its tail
            // (from the cursor on) and stay reserved: the freed index goes
            // just before them, and is the next one `reserve` hands out.
            let cursor = (*self.free_cursor.get_mut()).max(0) as usize;
            self.free.insert(cursor, entity.index);
            *self.free_cursor.get_mut() = cursor as i64 + 1;
        }
        Some(location)
    }

    /// Kills every live entity, in index order.
    pub fn free_all(&mut self) {
        self.version = self.version.wrapping_add(1);
        for index in 0..self.meta.len() {
            let meta = self.meta[index];
            if meta.location != EntityLocation::INVALID {
                self.free(Entity::new(index as u32, meta.generation));
            }
        }
    }

    /// The location of a live entity, or `None` if the handle is stale.
    #[inline]
    pub fn get(&self, entity: Entity) -> Option<EntityLocation> {
        let meta = self.meta.get(entity.index as usize)?;
        (meta.generation == entity.generation && meta.location != EntityLocation::INVALID)
            .then_some(meta.location)
    }

    /// The location in `entity`'s slot if the slot is of `entity`'s
    /// generation, *without* checking that it is a real location: it may
    /// be `EntityLocation::INVALID` (an id reserved but not yet flushed, or
    /// a slot retired at the last generation). For a lookup whose next
    /// step misses on an invalid location anyway (no archetype has index
    /// `u32::MAX`) and checks [`EntityLocation::is_valid`] only then, off
    /// the hot path.
    #[inline(always)]
    pub fn get_unverified(&self, entity: Entity) -> Option<EntityLocation> {
        let meta = self.meta.get(entity.index as usize)?;
        (meta.generation == entity.generation).then_some(meta.location)
    }

    /// [`Entities::set_location`] for the row that fills the hole a freed
    /// entity left (a despawn): the change is counted once, by the
    /// [`Entities::free`] it goes with.
    #[inline]
    pub fn fill_hole(&mut self, index: u32, location: EntityLocation) {
        self.meta[index as usize].location = location;
    }

    /// Records where a live entity now lives.
    #[inline]
    pub fn set_location(&mut self, index: u32, location: EntityLocation) {
        self.meta[index as usize].location = location;
        self.version = self.version.wrapping_add(1);
    }

    /// Test hook: sets the generation a dead or never-used slot will hand out
    /// next, so tests can cross the generation limit without 4 billion
    /// despawns. Creates the slot (and free-list entries for any skipped
    /// slots) if needed.
    pub fn set_next_generation(&mut self, index: u32, generation: NonZeroU32) {
        self.version = self.version.wrapping_add(1);
        debug_assert!(!self.needs_flush());
        while self.meta.len() <= index as usize {
            let i = self.fresh.next();
            assert_eq!(
                i as usize,
                self.meta.len(),
                "set_next_generation raced a command buffer"
            );
            self.meta.push(DEAD);
            self.free.push(i);
        }
        let meta = &mut self.meta[index as usize];
        assert!(
            meta.location == EntityLocation::INVALID,
            "set_next_generation on a live slot"
        );
        meta.generation = generation;
        if !self.free.contains(&index) {
            self.free.push(index);
        }
        // Make `index` the next one handed out.
        let pos = self.free.iter().position(|&i| i == index).unwrap_or(0);
        let last = self.free.len() - 1;
        self.free.swap(pos, last);
        *self.free_cursor.get_mut() = self.free.len() as i64;
    }

    /// Makes dead slot `entity.index()` hold `entity`'s generation and
    /// takes it off the free list, creating the slot (and free slots before
    /// it) if needed, for the caller to make it live ([`Entities::place`]).
    /// Returns the entity living in the slot instead, if one does (nothing
    /// changed then). Requires no reservation since the last flush.
    pub fn claim(&mut self, entity: Entity) -> Result<(), Entity> {
        self.version = self.version.wrapping_add(1);
        debug_assert!(!self.needs_flush());
        if let Some(meta) = self.meta.get(entity.index as usize) {
            if meta.location != EntityLocation::INVALID {
                return Err(Entity::new(entity.index, meta.generation));
            }
        }
        self.grow_to(entity.index as usize + 1);
        // A slot held for a pending spawn command is taken from it (that
        // command then reports its entity gone).
        self.held.remove(&entity.index);
        // The slot is free; take it out of the free list keeping the
        // list's order (it decides the ids later spawns get). Searching from
        // the end finds it at once when slots are claimed in ascending or
        // descending order (a save being loaded), where `retain` scanned the
        // whole list every time.
        if let Some(at) = self.free.iter().rposition(|&i| i == entity.index) {
            self.free.remove(at);
        }
        *self.free_cursor.get_mut() = self.free.len() as i64;
        self.meta[entity.index as usize].generation = entity.generation;
        Ok(())
    }

    /// Makes the slots up to `len` exist, the new ones free.
    fn grow_to(&mut self, len: usize) {
        while self.meta.len() < len {
            let i = self.fresh.next();
            assert_eq!(
                i as usize,
                self.meta.len(),
                "an entity slot was taken by a command buffer in between"
            );
            self.meta.push(DEAD);
            self.free.push(i);
        }
        *self.free_cursor.get_mut() = self.free.len() as i64;
    }

    /// Makes a slot [`Entities::claim`]ed live at `location`.
    pub fn place(&mut self, entity: Entity, location: EntityLocation) {
        self.version = self.version.wrapping_add(1);
        let meta = &mut self.meta[entity.index as usize];
        debug_assert_eq!(meta.generation, entity.generation);
        debug_assert_eq!(meta.location, EntityLocation::INVALID);
        meta.location = location;
        self.len += 1;
    }

    /// The allocator's state: per slot its generation and whether it is
    /// live, and the free list in order.
    pub fn snapshot(&self) -> (Vec<(u32, bool)>, Vec<u32>) {
        let (mut slots, mut free) = (Vec::new(), Vec::new());
        self.snapshot_into(&mut slots, &mut free);
        (slots, free)
    }

    /// [`Entities::snapshot`] into the buffers of an earlier one (cleared
    /// first): no allocation once they are large enough.
    pub fn snapshot_into(&self, slots: &mut Vec<(u32, bool)>, free: &mut Vec<u32>) {
        slots.clear();
        // Only a dead slot's location has the invalid archetype.
        slots.extend(self.meta.iter().map(|m| {
            (
                m.generation.get(),
                m.location.archetype != EntityLocation::INVALID.archetype,
            )
        }));
        free.clone_from(&self.free);
    }

    /// [`Entities::snapshot_into`] of the allocator as a
    /// [`flush`](Entities::flush) now would leave it, through `&self`:
    /// reserved ids live (or held, for spawn commands), released ones
    /// freed. Returns the ids the flush would make live, in the order it
    /// would place them (at the end of the empty archetype's table).
    /// Reservations made meanwhile, on other threads, count as made before
    /// it if it sees them, after it if not: a spawn command's reservation
    /// is seen whole, with its record (see `FreshIndices::lock_held`).
    pub fn snapshot_flushed_into(
        &self,
        slots: &mut Vec<(u32, bool)>,
        free: &mut Vec<u32>,
    ) -> Vec<Entity> {
        // The same reads as `flush`'s, under the held lock (reservations
        // for spawn commands wait), without taking anything.
        let held_lock = self.fresh.lock_held();
        let end = self.fresh.handed_out() as usize;
        let cursor = self.free_cursor.load(Ordering::Relaxed);
        let mut held: FxHashSet<Entity> = held_lock.iter().copied().collect();
        drop(held_lock);
        let mut released: FxHashSet<Entity> = self
            .fresh
            .released
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .copied()
            .collect();
        self.snapshot_into(slots, free);
        let mut live = Vec::new();
        let mut given_up = Vec::new();
        let mut now_held: FxHashSet<u32> = self.held.clone();
        // As `make_live`.
        let mut make_live = |index: u32, slots: &mut Vec<(u32, bool)>| {
            let generation = NonZeroU32::new(slots[index as usize].0).unwrap_or(FIRST_GENERATION);
            let entity = Entity::new(index, generation);
            if !released.is_empty() && released.remove(&entity) {
                held.remove(&entity);
                given_up.push(index);
            } else if !held.is_empty() && held.remove(&entity) {
                now_held.insert(index);
            } else {
                slots[index as usize].1 = true;
                live.push(entity);
            }
        };
        let start = (cursor.max(0) as usize).min(self.free.len());
        for &index in self.free[start..].iter().rev() {
            make_live(index, slots);
        }
        free.truncate(start);
        for &index in &self.pending {
            make_live(index, slots);
        }
        for index in self.meta.len()..end.max(self.meta.len()) {
            slots.push((FIRST_GENERATION.get(), false));
            make_live(index as u32, slots);
        }
        // Spawn commands dropped since their id was held.
        if !now_held.is_empty() {
            for e in &released {
                let slot = slots.get(e.index as usize);
                if slot.is_some_and(|&(g, _)| g == e.generation.get()) && now_held.remove(&e.index)
                {
                    given_up.push(e.index);
                }
            }
        }
        // As `free_unborn`.
        for index in given_up {
            let slot = &mut slots[index as usize];
            if let Some(next) = slot.0.checked_add(1) {
                slot.0 = next;
                free.push(index);
            }
        }
        live
    }

    /// True if the allocator is exactly in the state [`Entities::snapshot`]
    /// returned as `(slots, free)`: same slots, generations, live set and
    /// free list order, nothing reserved. Rollback uses it to skip
    /// re-installing (and re-validating) an allocator that a frame did not
    /// touch: one linear compare, no allocation.
    pub fn is_snapshot(&self, slots: &[(u32, bool)], free: &[u32]) -> bool {
        !self.needs_flush()
            && self.meta.len() == slots.len()
            && self.free == free
            // A branch-free fold: a linear compare, not a search.
            && self.meta.iter().zip(slots).fold(true, |ok, (m, &(generation, live))| {
                ok & (m.generation.get() == generation)
                    & ((m.location != EntityLocation::INVALID) == live)
            })
    }

    /// Restores the state [`Entities::snapshot`] gave: the slots' live set
    /// must be the one here already (checked by the caller); dead slots
    /// take the saved generations and the free list its saved order.
    pub fn restore(&mut self, slots: &[(u32, bool)], free: &[u32]) {
        self.version = self.version.wrapping_add(1);
        debug_assert!(!self.needs_flush());
        self.grow_to(slots.len());
        self.install(
            slots
                .iter()
                .map(|&(generation, _)| NonZeroU32::new(generation).unwrap_or(FIRST_GENERATION)),
            free.to_vec(),
        );
    }

    /// Forgets the slots from `len` on, so that the next never-used index
    /// is `len` again: rollback to a state that had `len` slots. Refuses
    /// (returns false, changing nothing) if one of those slots is live or
    /// if ids were reserved past the slots (a command buffer's spawns not
    /// yet applied).
    pub fn truncate_slots(&mut self, len: usize) -> bool {
        self.version = self.version.wrapping_add(1);
        if len >= self.meta.len() {
            return true;
        }
        if self.needs_flush()
            || self.held.iter().any(|&i| i as usize >= len)
            || self.fresh.handed_out() != self.meta.len() as u64
            || self.meta[len..]
                .iter()
                .any(|m| m.location != EntityLocation::INVALID)
        {
            return false;
        }
        self.meta.truncate(len);
        self.free.retain(|&i| (i as usize) < len);
        *self.free_cursor.get_mut() = self.free.len() as i64;
        self.fresh.next.store(len as u64, Ordering::Relaxed);
        true
    }

    /// Number of slots (live, free or retired).
    pub fn slot_count(&self) -> usize {
        self.meta.len()
    }

    /// Whether slot `index` holds a live entity, and its generation.
    pub fn slot(&self, index: usize) -> Option<(u32, bool)> {
        self.meta
            .get(index)
            .map(|m| (m.generation.get(), m.location != EntityLocation::INVALID))
    }

    /// Checks the invariants documented on the type; panics on violation.
    pub fn check_invariants(&self) {
        let live = self
            .meta
            .iter()
            .filter(|m| m.location != EntityLocation::INVALID)
            .count();
        assert_eq!(live, self.len as usize, "live count mismatch");
        assert!(
            self.meta.len() as u64 <= self.fresh.handed_out(),
            "more slots than indices handed out"
        );
        let mut seen = vec![false; self.meta.len()];
        for &i in &self.free {
            assert!(!seen[i as usize], "index {i} twice on the free list");
            seen[i as usize] = true;
            assert_eq!(
                self.meta[i as usize].location,
                EntityLocation::INVALID,
                "live index {i} on the free list"
            );
        }
        for &i in &self.held {
            assert!(!seen[i as usize], "held index {i} on the free list");
            assert_eq!(
                self.meta[i as usize].location,
                EntityLocation::INVALID,
                "held index {i} is live"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> EntityLocation {
        EntityLocation {
            archetype: ArchetypeId::EMPTY,
            row: 0,
        }
    }

    #[test]
    fn free_list_is_lifo_and_bumps_generation() {
        let mut e = Entities::new();
        let a = e.alloc();
        e.set_location(a.index(), here());
        let b = e.alloc();
        e.set_location(b.index(), here());
        assert!(e.free(a).is_some());
        assert!(e.free(a).is_none(), "double free must be refused");
        let c = e.alloc();
        assert_eq!(c.index(), a.index());
        assert_eq!(c.generation(), 2);
        assert!(e.get(a).is_none());
        e.set_location(c.index(), here());
        e.check_invariants();
    }

    /// The one-flag check structural operations make is never false while
    /// a reservation or release through a shared reference waits: each of
    /// the ways to reserve (free list, fresh index, held for a spawn
    /// command) and a release set it; the world's look clears it.
    #[test]
    fn every_reservation_raises_the_flush_flag() {
        let mut e = Entities::new();
        let a = e.alloc();
        e.set_location(a.index(), here());
        let b = e.alloc();
        e.set_location(b.index(), here());
        assert!(!e.may_need_flush());
        e.free(a);
        e.free(b);
        let reservations: [fn(&Entities) -> Entity; 4] = [
            Entities::reserve,      // from the free list
            Entities::reserve_held, // from the free list, held
            Entities::reserve,      // fresh
            |e| e.fresh_indices().next_held(),
        ];
        for reserve in reservations {
            let reserved = reserve(&e);
            assert!(e.may_need_flush(), "{reserved:?} not flagged");
            e.take_dirty();
            assert!(e.needs_flush());
            e.flush(|_| here());
            assert!(!e.may_need_flush());
        }
        e.check_invariants();
        let fresh = e.reserve();
        e.take_dirty();
        e.fresh_indices().release([fresh]);
        assert!(e.may_need_flush(), "a release is not flagged");
    }

    #[test]
    fn reserve_then_flush() {
        let mut e = Entities::new();
        let a = e.alloc();
        e.set_location(a.index(), here());
        e.free(a);
        let r1 = e.reserve(); // from the free list
        let r2 = e.reserve(); // brand new
        assert_eq!(r1.index(), a.index());
        assert_eq!(r1.generation(), 2);
        assert_eq!(r2.index(), 1);
        assert!(e.get(r1).is_none());
        assert!(e.needs_flush());
        let mut placed = Vec::new();
        e.flush(|ent| {
            placed.push(ent);
            here()
        });
        assert_eq!(placed, vec![r1, r2]);
        assert!(e.get(r1).is_some() && e.get(r2).is_some());
        assert_eq!(e.len(), 2);
        e.check_invariants();
    }

    #[test]
    fn released_reservations_never_come_to_life() {
        let mut e = Entities::new();
        let a = e.alloc();
        e.set_location(a.index(), here());
        let kept = e.alloc();
        e.set_location(kept.index(), here());
        e.free(a);
        let from_free = e.reserve(); // a's slot, generation 2
        let fresh = e.reserve(); // brand new index 2
        let other = e.fresh.next(); // a command buffer's index 3
        let later = Entity::new(other + 1, FIRST_GENERATION); // not reserved yet
        e.fresh_indices().release([from_free, fresh, later, kept]);
        let mut placed = Vec::new();
        e.flush(|ent| {
            placed.push(ent);
            here()
        });
        assert_eq!(placed, vec![Entity::new(other, FIRST_GENERATION)]);
        assert_eq!(e.len(), 2, "kept and the unreleased reservation");
        assert!(e.get(kept).is_some(), "releasing a live id does nothing");
        assert!(e.get(from_free).is_none() && e.get(fresh).is_none());
        e.check_invariants();
        // The slots are reused under newer generations: old handles stay stale.
        let x = e.alloc();
        e.set_location(x.index(), here());
        let y = e.alloc();
        e.set_location(y.index(), here());
        let mut reused = [x, y];
        reused.sort();
        assert_eq!(reused[0].index(), from_free.index());
        assert_eq!(reused[0].generation(), from_free.generation() + 1);
        assert_eq!(reused[1].index(), fresh.index());
        assert_eq!(reused[1].generation(), fresh.generation() + 1);
        assert!(e.get(from_free).is_none() && e.get(fresh).is_none());
        // The not-yet-reserved index's release waits for its reservation.
        let next = e.fresh.next();
        assert_eq!(next, later.index());
        e.flush(|_| panic!("the released reservation must not come to life"));
        assert!(e.get(later).is_none());
        e.check_invariants();
    }

    #[test]
    fn caught_index_exhaustion_leaves_counts_right() {
        let mut e = Entities::new();
        let a = e.alloc();
        e.set_location(a.index(), here());
        let b = e.alloc();
        e.set_location(b.index(), here());
        // Pretend every index was handed out (the slots in between are
        // never touched: this test does not flush).
        e.fresh.start_at(u32::MAX);
        for _ in 0..2 {
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.alloc()));
            let payload = caught.expect_err("the index space is exhausted");
            let message = payload
                .downcast_ref::<String>()
                .expect("a formatted message");
            assert!(message.contains("exhausted"), "{message}");
            assert_eq!(e.len(), 2, "a refused alloc must not count a live entity");
            assert_eq!(
                e.fresh.handed_out(),
                u64::from(u32::MAX),
                "a refused alloc must not hand out an index"
            );
        }
        // A freed slot is still reused after the caught panics.
        e.free(a);
        assert_eq!(e.len(), 1);
        let c = e.alloc();
        assert_eq!((c.index(), c.generation()), (a.index(), 2));
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn exhausted_generation_retires_slot() {
        let mut e = Entities::new();
        e.set_next_generation(0, NonZeroU32::new(u32::MAX).unwrap());
        let a = e.alloc();
        assert_eq!(a.generation(), u32::MAX);
        e.set_location(a.index(), here());
        e.free(a);
        let b = e.alloc();
        assert_ne!(b.index(), a.index(), "retired slot must not be reused");
        e.set_location(b.index(), here());
        e.check_invariants();
    }
}
