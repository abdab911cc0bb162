//! Events: typed messages between systems, double-buffered.
//!
//! An event is any `Send + Sync + 'static` value. Senders append it to the
//! world's [`Events<E>`] resource; each reader keeps a cursor and sees each
//! event once, in send order. A cursor moves past an event when the read
//! iterator yields it, so a reader that stops early (`read().next()`) gets
//! the rest on its next read.
//!
//! How long events live: see [`Events`] ("Lifetime").
//!
//! Replacing the `Events<E>` resource (inserting a new one, or removing it
//! and sending again) clears it: a reader that read the old one starts at
//! the oldest event of the new one, so it sees everything sent since.

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::observer::LifecycleEvent;
use crate::query::TickRange;
use crate::resource::{Res, ResMut};
use crate::storage::ResourceId;
use crate::system::{SystemMeta, SystemParam};
use crate::world::{World, WorldId};

/// What an event is: any `Send + Sync + 'static` type (implemented for
/// all of them). `#[derive(Event)]`, Bevy's habit, compiles and only checks
/// that bound; a generic function over events may say `E: Event`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Event)]
/// struct Exploded(u32);
/// fn count<E: Event>(world: &mut World) -> usize {
///     let mut cursor = world.event_cursor::<E>();
///     world.read_events(&mut cursor).count()
/// }
/// let mut world = World::new();
/// world.send_event(Exploded(3));
/// assert_eq!(count::<Exploded>(&mut world), 1);
/// ```
pub trait Event: Send + Sync + 'static {}

impl<T: Send + Sync + 'static> Event for T {}

/// The events of type `E` in a world: a resource with two buffers.
///
/// # Lifetime
///
/// Events belong to the frame. The buffers advance ([`World::update_events`])
/// once per frame, at its end: events sent before the previous update are
/// dropped, and the ones sent since move to the older buffer. A frame is one
/// [`Schedule::run_frame`](crate::Schedule::run_frame), or one outermost
/// [`Schedule::run`](crate::Schedule::run) for a program that runs its
/// schedules itself; the schedules a frame runs inside it (state
/// transitions, each fixed step, a run from an exclusive system) and
/// one-shot systems never advance the buffers. So a reader that runs every
/// frame sees each event exactly once, before or after the writer and in
/// whatever schedule of the frame: in the same frame if it runs after the
/// writer, in the next one if before. A fixed-step reader may skip frames
/// (at 120 frames a second and 50 steps a second, most frames run no
/// step): while the fixed step has systems, a frame that ran no step does
/// not advance the buffers, so the next step still reads everything sent
/// since the last one. A reader that skips more than one update misses the
/// dropped events (see [`EventCursor::missed`]).
///
/// # Example
/// ```
/// use mosaic::{Events, World};
/// #[derive(Debug, PartialEq)]
/// struct Hit(u32);
/// let mut world = World::new();
/// world.send_event(Hit(1));
/// let mut cursor = world.event_cursor::<Hit>();
/// let seen: Vec<&Hit> = world.read_events(&mut cursor).collect();
/// assert_eq!(seen, [&Hit(1)]);
/// ```
pub struct Events<E> {
    /// Events sent before the last update.
    older: Vec<E>,
    /// Events sent since the last update.
    newer: Vec<E>,
    /// Id of `older[0]`; ids count every event ever sent.
    older_start: u64,
    /// The world whose [`World::update_events`] updates this type (set by
    /// [`World::add_event`]; `None` for a resource the user made).
    updated_by: Option<WorldId>,
    /// Tells this buffer from every other (never 0): event ids restart at
    /// 0 in a new buffer, so a cursor's position in a buffer that replaced
    /// the one it read means nothing.
    instance: u64,
}

/// The next [`Events::instance`].
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

impl<E> Default for Events<E> {
    fn default() -> Self {
        Events {
            older: Vec::new(),
            newer: Vec::new(),
            older_start: 0,
            updated_by: None,
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl<E> fmt::Debug for Events<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Events")
            .field("older", &self.older.len())
            .field("newer", &self.newer.len())
            .finish()
    }
}

impl<E> Events<E> {
    /// Appends `event`.
    ///
    /// # Example
    /// ```
    /// let mut events = mosaic::Events::default();
    /// events.send(3u8);
    /// assert_eq!(events.len(), 1);
    /// ```
    pub fn send(&mut self, event: E) {
        self.newer.push(event);
    }

    /// Drops the events sent before the previous update and starts a new
    /// buffer. [`World::update_events`] calls this for every event type.
    ///
    /// # Example
    /// ```
    /// let mut events = mosaic::Events::default();
    /// events.send(3u8);
    /// events.update(); // still readable
    /// assert_eq!(events.len(), 1);
    /// events.update(); // gone
    /// assert!(events.is_empty());
    /// ```
    pub fn update(&mut self) {
        self.older_start += self.older.len() as u64;
        self.older.clear();
        std::mem::swap(&mut self.older, &mut self.newer);
    }

    /// Number of events held (both buffers).
    ///
    /// # Example
    /// ```
    /// let events = mosaic::Events::<u8>::default();
    /// assert_eq!(events.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.older.len() + self.newer.len()
    }

    /// True if no event is held.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::Events::<u8>::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Id the next event sent will get.
    fn end(&self) -> u64 {
        self.older_start + self.len() as u64
    }

    /// Events with id `from` or later, oldest first.
    fn since(&self, from: u64) -> impl Iterator<Item = &E> {
        let skip = from.saturating_sub(self.older_start) as usize;
        self.older.iter().chain(self.newer.iter()).skip(skip)
    }
}

/// A reader's position in an event stream, for reading outside systems.
/// Systems use [`EventReader`], which keeps one for them.
///
/// # Example
/// ```
/// use mosaic::World;
/// let mut world = World::new();
/// let mut cursor = world.event_cursor::<&'static str>();
/// world.send_event("boom");
/// assert_eq!(world.read_events(&mut cursor).count(), 1);
/// assert_eq!(world.read_events(&mut cursor).count(), 0); // each once
/// ```
pub struct EventCursor<E> {
    next: u64,
    missed: u64,
    /// The [`Events::instance`] `next` counts in (0: none yet).
    instance: u64,
    marker: PhantomData<fn() -> E>,
}

impl<E> Default for EventCursor<E> {
    fn default() -> Self {
        EventCursor {
            next: 0,
            missed: 0,
            instance: 0,
            marker: PhantomData,
        }
    }
}

impl<E> fmt::Debug for EventCursor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCursor")
            .field("next", &self.next)
            .finish()
    }
}

impl<E> EventCursor<E> {
    /// A cursor at the oldest event `events` still holds: it will read
    /// those and everything sent later, and has missed nothing.
    fn at_oldest(events: &Events<E>) -> Self {
        EventCursor {
            next: events.older_start,
            missed: 0,
            instance: events.instance,
            marker: PhantomData,
        }
    }

    /// Where this cursor is in `events`: its position, or, if it last
    /// read another buffer that `events` replaced, the oldest event.
    fn position(&self, events: &Events<E>) -> u64 {
        if self.instance == 0 || self.instance == events.instance {
            self.next
        } else {
            events.older_start
        }
    }

    /// The events this cursor has not seen yet, oldest first. The cursor
    /// moves past each event as the iterator yields it, so an event the
    /// caller did not take (it stopped early) stays unread.
    ///
    /// # Example
    /// ```
    /// let mut events = mosaic::Events::default();
    /// let mut cursor = mosaic::EventCursor::default();
    /// events.send(1);
    /// events.send(2);
    /// events.send(3);
    /// assert_eq!(cursor.read(&events).next(), Some(&1));
    /// assert_eq!(cursor.read(&events).copied().collect::<Vec<i32>>(), [2, 3]);
    /// ```
    pub fn read<'c, 'e: 'c>(
        &'c mut self,
        events: &'e Events<E>,
    ) -> impl Iterator<Item = &'e E> + 'c {
        self.next = self.position(events);
        self.instance = events.instance;
        if self.next < events.older_start {
            self.missed += events.older_start - self.next;
            self.next = events.older_start;
        }
        let from = self.next;
        Unread {
            events: events.since(from),
            next: &mut self.next,
        }
    }

    /// How many events were dropped before this cursor read them (it fell
    /// more than one update behind).
    ///
    /// # Example
    /// ```
    /// let mut events = mosaic::Events::default();
    /// let mut cursor = mosaic::EventCursor::default();
    /// events.send(1);
    /// events.update();
    /// events.update();
    /// assert_eq!(cursor.read(&events).count(), 0);
    /// assert_eq!(cursor.missed(), 1);
    /// ```
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

/// The iterator of [`EventCursor::read`]: moves the cursor past each event
/// as it yields it.
struct Unread<'c, I> {
    events: I,
    next: &'c mut u64,
}

impl<'e, E: 'e, I: Iterator<Item = &'e E>> Iterator for Unread<'_, I> {
    type Item = &'e E;

    #[inline]
    fn next(&mut self) -> Option<&'e E> {
        let event = self.events.next()?;
        *self.next += 1;
        Some(event)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.events.size_hint()
    }
}

/// Reads events of type `E` in a system: each event once, in send order.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Collision(u32);
/// #[derive(Default)] struct Damage(u32);
/// fn damage(mut hits: EventReader<Collision>, mut total: ResMut<Damage>) {
///     for hit in hits.read() {
///         total.0 += hit.0;
///     }
/// }
/// let mut world = World::new();
/// world.insert_resource(Damage::default());
/// let mut schedule = Schedule::new();
/// schedule.add_system("damage", damage);
/// world.send_event(Collision(5));
/// schedule.run(&mut world);
/// schedule.run(&mut world); // not counted twice
/// assert_eq!(world.resource::<Damage>().0, 5);
/// ```
pub struct EventReader<'w, 's, E: Send + Sync + 'static> {
    events: Res<'w, Events<E>>,
    cursor: &'s mut EventCursor<E>,
}

impl<E: Send + Sync + 'static> fmt::Debug for EventReader<'_, '_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventReader")
            .field("cursor", &self.cursor)
            .finish()
    }
}

impl<'w, E: Send + Sync + 'static> EventReader<'w, '_, E> {
    /// The events this system has not read yet, oldest first; each counts
    /// as read once the iterator yields it (those not taken stay unread).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.send_event(7u64);
    /// let n = world.run_system_once(|mut r: EventReader<u64>| r.read().count());
    /// assert_eq!(n, 1);
    /// ```
    pub fn read(&mut self) -> impl Iterator<Item = &E> + use<'_, E> {
        self.cursor.read(&self.events)
    }

    /// True if there is nothing new to read (does not move the cursor).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// assert!(world.run_system_once(|r: EventReader<u64>| r.is_empty()));
    /// ```
    pub fn is_empty(&self) -> bool {
        let next = self.cursor.position(&self.events);
        next.max(self.events.older_start) >= self.events.end()
    }
}

// SAFETY: records a read of the `Events<E>` resource (registering it);
// borrows only that resource and the reader's own cursor.
unsafe impl<E: Send + Sync + 'static> SystemParam for EventReader<'_, '_, E> {
    type State = (ResourceId, EventCursor<E>);
    type Item<'w, 's> = EventReader<'w, 's, E>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
        world.add_event::<E>();
        (
            Res::<Events<E>>::init_state(world, meta),
            EventCursor::at_oldest(world.resource::<Events<E>>()),
        )
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut Self::State,
        meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Self::Item<'w, 's> {
        let (id, cursor) = state;
        // SAFETY: forwarded: the read of `Events<E>` was recorded.
        let events = unsafe { Res::<Events<E>>::get_param(id, meta, world, ticks) };
        EventReader { events, cursor }
    }
}

/// Sends events of type `E` from a system.
///
/// Writers borrow `Events<E>` mutably, so two writers (or a writer and a
/// reader) of one event type never run at the same time; their order is the
/// order the systems were added, so send order is deterministic.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Boom;
/// let mut world = World::new();
/// world.run_system_once(|mut w: EventWriter<Boom>| w.send(Boom));
/// assert_eq!(world.events::<Boom>().unwrap().len(), 1);
/// ```
pub struct EventWriter<'w, E: Send + Sync + 'static> {
    events: ResMut<'w, Events<E>>,
}

impl<E: Send + Sync + 'static> fmt::Debug for EventWriter<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventWriter")
            .field("events", &*self.events)
            .finish()
    }
}

impl<E: Send + Sync + 'static> EventWriter<'_, E> {
    /// Sends `event`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.run_system_once(|mut w: EventWriter<u8>| { w.send(1); w.send(2); });
    /// assert_eq!(world.events::<u8>().unwrap().len(), 2);
    /// ```
    pub fn send(&mut self, event: E) {
        self.events.send(event);
    }

    /// Sends `event`: Bevy 0.16's name for [`EventWriter::send`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.run_system_once(|mut w: EventWriter<u8>| w.write(9));
    /// assert_eq!(world.events::<u8>().unwrap().len(), 1);
    /// ```
    pub fn write(&mut self, event: E) {
        self.send(event);
    }
}

#[allow(clippy::needless_lifetimes)] // the signature mirrors the trait's
// SAFETY: records a write of the `Events<E>` resource; borrows only it.
unsafe impl<E: Send + Sync + 'static> SystemParam for EventWriter<'_, E> {
    type State = ResourceId;
    type Item<'w, 's> = EventWriter<'w, E>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> ResourceId {
        world.add_event::<E>();
        ResMut::<Events<E>>::init_state(world, meta)
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut ResourceId,
        meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> EventWriter<'w, E> {
        // SAFETY: forwarded: the write of `Events<E>` was recorded.
        let events = unsafe { ResMut::<Events<E>>::get_param(state, meta, world, ticks) };
        EventWriter { events }
    }
}

/// Counts the events of one type a world holds (`None` if its resource
/// was removed).
type CountFn = fn(&World) -> Option<usize>;

/// The update functions of every event type a world has seen.
#[derive(Default)]
pub(crate) struct EventRegistry {
    updaters: Vec<fn(&mut World)>,
    /// Each event type's short name and how to count its events.
    counters: Vec<(String, CountFn)>,
    /// The event types in `updaters`: each is updated once per run, even
    /// if its resource was removed and made again.
    registered: rustc_hash::FxHashSet<std::any::TypeId>,
}

fn update_events_of<E: Send + Sync + 'static>(world: &mut World) {
    if let Some(events) = world.get_resource_mut::<Events<E>>() {
        events.update();
    }
}

fn count_events_of<E: Send + Sync + 'static>(world: &World) -> Option<usize> {
    world.get_resource::<Events<E>>().map(Events::len)
}

impl World {
    /// Makes `E` an event type of this world: adds an empty `Events<E>`
    /// resource (if missing) and includes it in [`World::update_events`].
    /// Sending, `EventReader` and `EventWriter` do this themselves.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.add_event::<u8>();
    /// assert!(world.events::<u8>().unwrap().is_empty());
    /// ```
    pub fn add_event<E: Send + Sync + 'static>(&mut self) {
        let world = self.id();
        match self.get_resource::<Events<E>>() {
            Some(events) if events.updated_by == Some(world) => return,
            // Inserted by the user (or moved from another world): kept, and
            // registered below.
            Some(_) => self.resource_mut::<Events<E>>().updated_by = Some(world),
            None => self.insert_resource(Events::<E> {
                updated_by: Some(world),
                ..Events::default()
            }),
        }
        if std::any::TypeId::of::<E>() == std::any::TypeId::of::<LifecycleEvent>() {
            // Lifecycle events are produced only once someone reads them.
            self.components_mut().set_observe_all();
        }
        let registry = self.resource_or_default::<EventRegistry>();
        if registry.registered.insert(std::any::TypeId::of::<E>()) {
            registry.updaters.push(update_events_of::<E>);
            registry
                .counters
                .push((crate::short_type_name::<E>(), count_events_of::<E>));
        }
    }

    /// Sends `event` (readable by systems' `EventReader<E>` and by
    /// [`EventCursor`]s).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.send_event(1u32);
    /// assert_eq!(world.events::<u32>().unwrap().len(), 1);
    /// ```
    pub fn send_event<E: Send + Sync + 'static>(&mut self, event: E) {
        self.add_event::<E>();
        self.resource_mut::<Events<E>>().send(event);
    }

    /// The events of type `E`, if `E` is an event type of this world.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// assert!(world.events::<u32>().is_none());
    /// world.send_event(1u32);
    /// assert_eq!(world.events::<u32>().unwrap().len(), 1);
    /// ```
    pub fn events<E: Send + Sync + 'static>(&self) -> Option<&Events<E>> {
        self.get_resource::<Events<E>>()
    }

    /// The events of type `E` that `cursor` has not seen, oldest first
    /// (none if `E` was never used); moves the cursor past them.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let mut cursor = world.event_cursor::<u8>();
    /// world.send_event(4u8);
    /// assert_eq!(world.read_events(&mut cursor).copied().collect::<Vec<_>>(), [4]);
    /// assert_eq!(world.read_events(&mut cursor).count(), 0);
    /// ```
    pub fn read_events<'c, 'w: 'c, E: Send + Sync + 'static>(
        &'w self,
        cursor: &'c mut EventCursor<E>,
    ) -> impl Iterator<Item = &'w E> + 'c {
        self.events::<E>()
            .map(|events| cursor.read(events))
            .into_iter()
            .flatten()
    }

    /// A cursor that will read every event of type `E` sent from now on
    /// (and those still held).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let mut cursor = world.event_cursor::<u8>();
    /// world.send_event(4u8);
    /// assert_eq!(world.read_events(&mut cursor).copied().collect::<Vec<_>>(), [4]);
    /// ```
    pub fn event_cursor<E: Send + Sync + 'static>(&mut self) -> EventCursor<E> {
        self.add_event::<E>();
        EventCursor::at_oldest(self.resource::<Events<E>>())
    }

    /// Every event type of this world (in the order first used), with the
    /// number of events it holds now ([`Events::len`]): for inspectors and
    /// debugging, where the types are not known.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.send_event(1u8);
    /// world.send_event(2u8);
    /// world.add_event::<u32>();
    /// assert_eq!(world.event_counts(), [("u8".to_owned(), 2), ("u32".to_owned(), 0)]);
    /// ```
    pub fn event_counts(&self) -> Vec<(String, usize)> {
        let Some(registry) = self.get_resource::<EventRegistry>() else {
            return Vec::new();
        };
        registry
            .counters
            .iter()
            .filter_map(|(name, count)| Some((name.clone(), count(self)?)))
            .collect()
    }

    /// Moves every event type's buffers on: events older than the previous
    /// update are dropped. The frame calls this at its end (see [`Events`]
    /// for when that is).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.send_event(1u8);
    /// world.update_events();
    /// world.update_events();
    /// assert!(world.events::<u8>().unwrap().is_empty());
    /// ```
    pub fn update_events(&mut self) {
        let Some(registry) = self.get_resource::<EventRegistry>() else {
            return;
        };
        let updaters = registry.updaters.clone();
        for update in updaters {
            update(self);
        }
    }
}
