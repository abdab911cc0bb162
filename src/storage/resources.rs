//! Resource storage: one value per type, type-erased.
//!
//! Systems that run in parallel borrow resources through a shared `&World`,
//! so each value sits in an `UnsafeCell`; the scheduler's access rules (one
//! writer or many readers per resource) make the raw accesses sound.

use std::any::{Any, TypeId};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use rustc_hash::FxHashMap;

use crate::change::Tick;
use crate::component::short_type_name;

/// A resource type's number within one world (dense, in the order the world
/// first saw each type). Systems record their resource access by it.
///
/// # Example
/// ```
/// let mut world = mosaic::World::new();
/// world.insert_resource(1u8);
/// world.insert_resource(2u16);
/// assert_eq!(world.resource_id::<u16>().unwrap().index(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(u32);

impl ResourceId {
    /// The id as an index (dense, from 0).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(1u8);
    /// assert_eq!(world.resource_id::<u8>().unwrap().index(), 0);
    /// ```
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A resource value, shareable across the threads of a parallel schedule.
struct ResourceCell<R>(UnsafeCell<R>);

// SAFETY: the cell holds a `Send + Sync` value; shared access hands out only
// `&R` (through `&Resources`) or raw pointers whose use the scheduler's
// access rules govern.
unsafe impl<R: Send + Sync> Sync for ResourceCell<R> {}

struct Slot {
    name: String,
    value: Option<Box<dyn Any + Send + Sync>>,
    ticks: ResourceTicks,
}

/// When a resource was inserted and last changed. `changed` is atomic so
/// that a `ResMut` holding the only write access may stamp it through a
/// shared `&World` (in a parallel schedule), with no unsafe code.
#[derive(Debug, Default)]
pub(crate) struct ResourceTicks {
    added: AtomicU32,
    changed: AtomicU32,
}

impl ResourceTicks {
    fn stamp_added(&self, tick: Tick) {
        self.added.store(tick.get(), Ordering::Relaxed);
        self.changed.store(tick.get(), Ordering::Relaxed);
    }

    /// Records a change at `tick`.
    #[inline]
    pub fn set_changed(&self, tick: Tick) {
        self.changed.store(tick.get(), Ordering::Relaxed);
    }

    /// When the value was inserted.
    #[inline]
    pub fn added(&self) -> Tick {
        Tick::new(self.added.load(Ordering::Relaxed))
    }

    /// When the value was last changed (inserted counts).
    #[inline]
    pub fn changed(&self) -> Tick {
        Tick::new(self.changed.load(Ordering::Relaxed))
    }

    fn clamp(&mut self, now: Tick) {
        for cell in [&mut self.added, &mut self.changed] {
            let mut tick = Tick::new(*cell.get_mut());
            tick.clamp_age(now);
            *cell.get_mut() = tick.get();
        }
    }
}

/// Every resource of one world.
///
/// Invariant: the value in the slot of `by_type[TypeId::of::<R>()]`, if any,
/// is a `ResourceCell<R>`.
#[derive(Default)]
pub(crate) struct Resources {
    by_type: FxHashMap<TypeId, ResourceId>,
    slots: Vec<Slot>,
}

impl Resources {
    /// `R`'s id, registering it (with no value) if new.
    pub fn register<R: Send + Sync + 'static>(&mut self) -> ResourceId {
        if let Some(&id) = self.by_type.get(&TypeId::of::<R>()) {
            return id;
        }
        let id = ResourceId(self.slots.len() as u32);
        self.slots.push(Slot {
            name: short_type_name::<R>(),
            value: None,
            ticks: ResourceTicks::default(),
        });
        self.by_type.insert(TypeId::of::<R>(), id);
        id
    }

    #[inline]
    pub fn id_of<R: 'static>(&self) -> Option<ResourceId> {
        self.by_type.get(&TypeId::of::<R>()).copied()
    }

    /// The ids and names of the resources that hold a value.
    pub fn present(&self) -> impl Iterator<Item = (ResourceId, &str)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.value.is_some())
            .map(|(i, slot)| (ResourceId(i as u32), slot.name.as_str()))
    }

    pub fn get_name(&self, id: ResourceId) -> Option<&str> {
        self.slots.get(id.index()).map(|slot| slot.name.as_str())
    }

    pub fn name(&self, id: ResourceId) -> &str {
        &self.slots[id.index()].name
    }

    /// Stores `value` (added and changed at `tick`), returning the value it
    /// replaces.
    pub fn insert<R: Send + Sync + 'static>(&mut self, value: R, tick: Tick) -> Option<R> {
        let id = self.register::<R>();
        let slot = &mut self.slots[id.index()];
        slot.ticks.stamp_added(tick);
        let old = slot
            .value
            .replace(Box::new(ResourceCell(UnsafeCell::new(value))));
        old.map(into_inner::<R>)
    }

    /// Puts `value` back as `R` after a [`Resources::remove`] (for
    /// `World::resource_scope`): its added tick stays, it counts as changed
    /// at `tick`. Returns the value it replaces (one inserted meanwhile).
    pub fn restore<R: Send + Sync + 'static>(&mut self, value: R, tick: Tick) -> Option<R> {
        let id = self.register::<R>();
        let slot = &mut self.slots[id.index()];
        slot.ticks.set_changed(tick);
        let old = slot
            .value
            .replace(Box::new(ResourceCell(UnsafeCell::new(value))));
        old.map(into_inner::<R>)
    }

    /// The ticks of resource `id` (meaningful while it holds a value).
    #[inline]
    pub fn ticks(&self, id: ResourceId) -> &ResourceTicks {
        &self.slots[id.index()].ticks
    }

    /// Clamps every resource's ticks older than [`Tick::MAX_AGE`].
    pub fn clamp_ticks(&mut self, now: Tick) {
        for slot in &mut self.slots {
            slot.ticks.clamp(now);
        }
    }

    pub fn remove<R: 'static>(&mut self) -> Option<R> {
        let id = self.id_of::<R>()?;
        self.slots[id.index()].value.take().map(into_inner::<R>)
    }

    pub fn contains<R: 'static>(&self) -> bool {
        self.id_of::<R>()
            .is_some_and(|id| self.slots[id.index()].value.is_some())
    }

    fn cell<R: 'static>(&self, id: ResourceId) -> Option<&ResourceCell<R>> {
        let value = self.slots.get(id.index())?.value.as_ref()?;
        Some(
            value
                .downcast_ref::<ResourceCell<R>>()
                .expect("resource slot holds its own type"),
        )
    }

    pub fn get<R: 'static>(&self) -> Option<&R> {
        let cell = self.cell::<R>(self.id_of::<R>()?)?;
        // SAFETY: `&self` excludes `get_mut`; writers through `ptr` exist only
        // under the scheduler's rules, which exclude readers of `R` (and of
        // the whole world) while they run.
        Some(unsafe { &*cell.0.get() })
    }

    /// `R`, mutably, recording a change at `tick`.
    pub fn get_mut<R: 'static>(&mut self, tick: Tick) -> Option<&mut R> {
        let id = self.id_of::<R>()?;
        let slot = &mut self.slots[id.index()];
        let value = slot.value.as_mut()?;
        slot.ticks.set_changed(tick);
        let cell = value
            .downcast_mut::<ResourceCell<R>>()
            .expect("resource slot holds its own type");
        Some(cell.0.get_mut())
    }

    /// A raw pointer to resource `id`, which holds an `R`. Reading or writing
    /// through it is the caller's responsibility (the scheduler's access
    /// rules).
    pub fn ptr<R: 'static>(&self, id: ResourceId) -> Option<NonNull<R>> {
        NonNull::new(self.cell::<R>(id)?.0.get())
    }
}

fn into_inner<R: 'static>(value: Box<dyn Any + Send + Sync>) -> R {
    value
        .downcast::<ResourceCell<R>>()
        .expect("resource slot holds its own type")
        .0
        .into_inner()
}
