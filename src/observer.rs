//! Observers: callbacks that run at once when an event is triggered, and the
//! world's lifecycle announcements (spawn, despawn, add, insert, remove).
//!
//! `world.observe(|trigger: Trigger<E>, world: DeferredWorld| ..)` registers
//! an observer of event type `E`; `world.trigger(e)` runs every observer of
//! `E` at once, in registration order; `world.trigger_for(entity, e)` also
//! runs those registered for that entity with `observe_entity`.
//!
//! The world triggers lifecycle events itself, inside the structural change,
//! at a point where the world is consistent: [`OnSpawn`] after a spawn;
//! [`OnAdd<T>`] (the entity lacked `T`) then [`OnInsert<T>`] (added or
//! replaced) after an insert; [`OnRemove<T>`] *before* a removal, so the
//! value is still readable; for a despawn (and a [`World::take`](crate::World::take)), one
//! `OnRemove` per component and then [`OnDespawn`], all before the entity
//! goes. Component hooks (see
//! [`ComponentHooks`](crate::ComponentHooks)) run just before the observers
//! of the same event.
//!
//! # Order for a spawn or an insert
//!
//! The whole change comes first: the bundle and every required component
//! it brings (see [`crate::hooks`]) are in place before anything runs. Then:
//! `OnSpawn` (for a spawn); one `OnAdd` per component the entity lacked —
//! the bundle's in bundle order, then the requirements, nearest first; then
//! one `OnInsert` per component, in the same order. So every hook and
//! observer sees the entity with all of them.
//!
//! # What observers may do
//!
//! An observer gets a [`DeferredWorld`]: it may read and write components
//! and resources and send events, but not change the world's structure.
//! Structural changes go through `DeferredWorld::commands`, applied right
//! after the operation that triggered the observer finishes. Commands are
//! applied in rounds, not recursively: observers triggered by those
//! commands queue theirs for the next round. Up to
//! [`MAX_OBSERVER_ROUNDS`] rounds run; a cascade that still has commands
//! queued after that many means observers keep feeding each other
//! forever, and panics with a message.
//!
//! # Panics: the policy
//!
//! A panic in a required component's constructor (`Default` or the given
//! function), a hook, an observer or a command they issued, leaves the
//! world consistent:
//!
//! - a requiring component is never without its requirements: they are
//!   made before the structural change and arrive in the same move, so if a
//!   constructor panics nothing changed (the bundle is dropped, once);
//! - the structural change itself is complete before any hook or observer
//!   runs, so it stays done (never half a bundle), and every value is
//!   dropped exactly once;
//! - a removal (`remove`, `exchange`, `despawn`, `take`) is announced
//!   whole before anything is removed, so a panicking `on_remove` hook or
//!   `OnRemove`/`OnDespawn` observer changes nothing: the entity keeps
//!   every component (none is taken out and lost to the unwind);
//! - the commands queued by the failed operation's hooks and observers (all
//!   rounds of it) are **dropped**, unapplied: the panic goes on, and the
//!   next operation or `trigger` starts with an empty queue. A dropped
//!   `spawn` command leaves no entity: the id it reserved never comes to
//!   life (it was held, not live, since it was recorded; its handle stays
//!   stale; the slot is reused under a newer generation);
//! - a `spawn` command (of any [`CommandBuffer`] or
//!   [`Commands`](crate::Commands)) whose required component's constructor
//!   panics leaves no entity either, as a failed `World::spawn` leaves
//!   none; an `OnSpawn` observer that panics sees the entity whole and
//!   leaves it so, as with `World::spawn`.
//!
//! A component's `Drop` that panics inside a structural change (a replaced
//! value on insert, a value of a despawned or cleared entity) does not fail
//! it: the change completes, its hooks' and observers' commands are
//! applied, then the panic goes on.
//!
//! # Cost
//!
//! While no type has hooks, requirements or observers (and nobody reads
//! [`LifecycleEvent`]s), structural changes skip all of this at the cost of
//! one branch.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;

use rustc_hash::FxHashMap;

use crate::commands::CommandBuffer;
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::error::ComponentError;
use crate::event::Events;
use crate::world::World;

/// Rounds of observer commands applied in a row before the world gives up:
/// observers that keep triggering each other forever.
pub const MAX_OBSERVER_ROUNDS: usize = 1024;

/// An entity was spawned (triggered for the new entity).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::OnSpawn;
/// #[derive(Default)] struct Born(u32);
/// let mut world = World::new();
/// world.insert_resource(Born::default());
/// world.observe(|_: Trigger<OnSpawn>, mut w: DeferredWorld| w.resource_mut::<Born>().0 += 1);
/// world.spawn(());
/// assert_eq!(world.resource::<Born>().0, 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OnSpawn;

/// An entity is being despawned (after the `OnRemove` of each of its
/// components, while it is still intact).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::OnDespawn;
/// #[derive(Default)] struct Gone(Vec<Entity>);
/// let mut world = World::new();
/// world.insert_resource(Gone::default());
/// world.observe(|t: Trigger<OnDespawn>, mut w: DeferredWorld| {
///     let e = t.entity().unwrap();
///     w.resource_mut::<Gone>().0.push(e);
/// });
/// let e = world.spawn(());
/// world.despawn(e).unwrap();
/// assert_eq!(world.resource::<Gone>().0, [e]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OnDespawn;

macro_rules! lifecycle_marker {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<T = AnyComponent>(PhantomData<fn() -> T>);

        impl<T: Component> ObserverEvent<T> for $name {
            type Key = $name<T>;
            #[inline]
            fn view(_key: &$name<T>) -> &Self {
                &$name::<AnyComponent>::VALUE
            }
        }

        impl<T> fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}<{}>", stringify!($name), crate::component::short_type_name::<T>())
            }
        }

        impl<T> $name<T> {
            /// The (zero-sized) value, for `'static` references to it.
            const VALUE: Self = $name(PhantomData);
        }
    };
}

lifecycle_marker!(
    /// Component `T` was added to an entity that lacked it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::OnAdd;
    /// #[derive(Component)] struct Ghost;
    /// #[derive(Default)] struct Count(u32);
    /// let mut world = World::new();
    /// world.insert_resource(Count::default());
    /// world.observe(|_: Trigger<OnAdd<Ghost>>, mut w: DeferredWorld| w.resource_mut::<Count>().0 += 1);
    /// let e = world.spawn(Ghost);
    /// world.insert_one(e, Ghost).unwrap(); // a replace: no OnAdd
    /// assert_eq!(world.resource::<Count>().0, 1);
    /// ```
    OnAdd
);
lifecycle_marker!(
    /// Component `T` was inserted into an entity: added or replaced.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::OnInsert;
    /// #[derive(Component)] struct Ghost;
    /// #[derive(Default)] struct Count(u32);
    /// let mut world = World::new();
    /// world.insert_resource(Count::default());
    /// world.observe(|_: Trigger<OnInsert<Ghost>>, mut w: DeferredWorld| w.resource_mut::<Count>().0 += 1);
    /// let e = world.spawn(Ghost);
    /// world.insert_one(e, Ghost).unwrap();
    /// assert_eq!(world.resource::<Count>().0, 2);
    /// ```
    OnInsert
);
lifecycle_marker!(
    /// Component `T` is about to be removed (by `remove`, `despawn` or
    /// `clear`); its value is still readable.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::OnRemove;
    /// #[derive(Component)] struct Gold(u32);
    /// #[derive(Default)] struct Dropped(u32);
    /// let mut world = World::new();
    /// world.insert_resource(Dropped::default());
    /// world.observe(|t: Trigger<OnRemove<Gold>>, mut w: DeferredWorld| {
    ///     let gold = w.get::<Gold>(t.entity().unwrap()).unwrap().0;
    ///     w.resource_mut::<Dropped>().0 += gold;
    /// });
    /// let e = world.spawn(Gold(12));
    /// world.despawn(e).unwrap();
    /// assert_eq!(world.resource::<Dropped>().0, 12);
    /// ```
    OnRemove
);

/// What happened, in a [`LifecycleEvent`].
///
/// # Example
/// ```
/// use mosaic::LifecycleKind;
/// assert_ne!(LifecycleKind::Add, LifecycleKind::Insert);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LifecycleKind {
    /// An entity was spawned.
    Spawn,
    /// An entity is being despawned.
    Despawn,
    /// A component was added to an entity that lacked it.
    Add,
    /// A component was inserted (added or replaced).
    Insert,
    /// A component is being removed.
    Remove,
}

/// The world's lifecycle announcements as an event that systems read with
/// `EventReader<LifecycleEvent>` (the readable counterpart of the
/// `On*` observer events). Sent only once some reader exists (or
/// `world.add_event::<LifecycleEvent>()` was called), in the same order the
/// observers see them.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{LifecycleEvent, LifecycleKind};
/// #[derive(Component)] struct A;
/// let mut world = World::new();
/// let mut cursor = world.event_cursor::<LifecycleEvent>();
/// let e = world.spawn(A);
/// world.despawn(e).unwrap();
/// let kinds: Vec<_> = world.read_events(&mut cursor).map(|ev| ev.kind).collect();
/// use LifecycleKind::*;
/// assert_eq!(kinds, [Spawn, Add, Insert, Remove, Despawn]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LifecycleEvent {
    /// What happened.
    pub kind: LifecycleKind,
    /// To which entity.
    pub entity: Entity,
    /// Which component (for `Add`, `Insert` and `Remove`).
    pub component: Option<ComponentId>,
}

/// The event an observer receives, and the entity it targets (for
/// lifecycle events and `trigger_for`).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Explode { radius: f32 }
/// #[derive(Default)] struct Blasts(Vec<f32>);
/// let mut world = World::new();
/// world.insert_resource(Blasts::default());
/// world.observe(|t: Trigger<Explode>, mut w: DeferredWorld| {
///     let r = t.event().radius;
///     w.resource_mut::<Blasts>().0.push(r);
/// });
/// world.trigger(Explode { radius: 2.0 });
/// assert_eq!(world.resource::<Blasts>().0, [2.0]);
/// ```
///
/// Bevy's spelling of a lifecycle trigger, the event first and the
/// component second, means the same observer as mosaic's:
/// `Trigger<OnAdd, Ghost>` is `Trigger<OnAdd<Ghost>>` (see
/// [`ObserverEvent`]).
///
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Ghost;
/// #[derive(Default)] struct Seen(Vec<Entity>);
/// let mut world = World::new();
/// world.insert_resource(Seen::default());
/// world.observe(|t: Trigger<OnAdd, Ghost>, mut w: DeferredWorld| {
///     let e = t.target();
///     w.resource_mut::<Seen>().0.push(e);
/// });
/// let e = world.spawn(Ghost);
/// assert_eq!(world.resource::<Seen>().0, [e]);
/// ```
pub struct Trigger<'a, E, B = ()> {
    event: &'a E,
    entity: Option<Entity>,
    _component: PhantomData<fn() -> B>,
}

/// The component-less form of `OnAdd`, `OnInsert` and `OnRemove`, which
/// only Bevy's spelling `Trigger<OnAdd, T>` uses: the `T` after the event
/// says which component. Nothing is ever announced for `AnyComponent`
/// itself, so observing `Trigger<OnAdd>` alone is refused when it is
/// registered (it would never run).
///
/// # Example
/// ```
/// use mosaic::{AnyComponent, OnAdd};
/// // `OnAdd` without a parameter is `OnAdd<AnyComponent>`.
/// let _: Option<OnAdd> = None::<OnAdd<AnyComponent>>;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnyComponent;

/// What an observer of `Trigger<E, B>` listens to: for `B = ()`, `E`
/// itself (any `'static` event type, or a lifecycle event that names its
/// component, such as `OnAdd<Ghost>`); for Bevy's spelling
/// `Trigger<OnAdd, Ghost>` (and `OnInsert`, `OnRemove`, `OnDespawn`), the
/// lifecycle event of component `B`. Implemented by mosaic for exactly
/// these; user code never needs to.
///
/// `Trigger<OnDespawn, T>` runs when an entity that has a `T` is
/// despawned (Bevy's meaning), while `Trigger<OnDespawn>` runs for every
/// despawn.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::OnDespawn;
/// #[derive(Component)] struct Boss;
/// #[derive(Default)] struct Gone(u32);
/// let mut world = World::new();
/// world.insert_resource(Gone::default());
/// world.observe(|_: Trigger<OnDespawn, Boss>, mut w: DeferredWorld| w.resource_mut::<Gone>().0 += 1);
/// let minion = world.spawn(());
/// let boss = world.spawn(Boss);
/// world.despawn(minion).unwrap();
/// world.despawn(boss).unwrap();
/// assert_eq!(world.resource::<Gone>().0, 1);
/// ```
pub trait ObserverEvent<B>: 'static {
    /// The event type observers are registered under.
    type Key: 'static;
    /// The event the observer sees, given the one triggered.
    fn view(key: &Self::Key) -> &Self;
    /// Whether an observer of this form runs for a trigger that targets
    /// `entity` (only `Trigger<OnDespawn, T>` looks: does it have a `T`).
    #[inline]
    fn accepts(_world: &World, _entity: Option<Entity>) -> bool {
        true
    }
}

impl<E: 'static> ObserverEvent<()> for E {
    type Key = E;
    #[inline]
    fn view(key: &E) -> &E {
        key
    }
}

impl<T: Component> ObserverEvent<T> for OnDespawn {
    type Key = OnDespawn;
    #[inline]
    fn view(key: &OnDespawn) -> &Self {
        key
    }
    fn accepts(world: &World, entity: Option<Entity>) -> bool {
        entity.is_some_and(|e| world.has::<T>(e))
    }
}

impl<E, B> fmt::Debug for Trigger<'_, E, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trigger")
            .field("entity", &self.entity)
            .finish()
    }
}

impl<'a, E, B> Trigger<'a, E, B> {
    /// The event.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.observe(|t: Trigger<u32>, _: DeferredWorld| assert_eq!(*t.event(), 7));
    /// world.trigger(7u32);
    /// ```
    pub fn event(&self) -> &'a E {
        self.event
    }

    /// The entity the event targets, if any.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.observe(move |t: Trigger<u32>, _: DeferredWorld| assert_eq!(t.entity(), Some(e)));
    /// world.trigger_for(e, 7u32);
    /// ```
    pub fn entity(&self) -> Option<Entity> {
        self.entity
    }

    /// The entity the event targets, or [`Entity::PLACEHOLDER`] for an
    /// untargeted event: Bevy's name ([`Trigger::entity`] says "none" as
    /// an `Option`).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Ghost;
    /// let mut world = World::new();
    /// world.observe(|t: Trigger<OnAdd<Ghost>>, w: DeferredWorld| assert!(w.world().contains(t.target())));
    /// world.observe(|t: Trigger<u8>, _: DeferredWorld| assert_eq!(t.target(), Entity::PLACEHOLDER));
    /// world.spawn(Ghost);
    /// world.trigger(1u8);
    /// ```
    pub fn target(&self) -> Entity {
        self.entity.unwrap_or(Entity::PLACEHOLDER)
    }
}

/// The world as observers and hooks see it: components and resources
/// readable and writable, no structural changes (use
/// [`DeferredWorld::commands`], applied after the triggering operation).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::OnAdd;
/// #[derive(Component)] struct Poisoned;
/// #[derive(Component)] struct Health(u32);
/// let mut world = World::new();
/// world.observe(|t: Trigger<OnAdd<Poisoned>>, mut w: DeferredWorld| {
///     let e = t.entity().unwrap();
///     if let Ok(h) = w.get_mut::<Health>(e) {
///         h.0 -= 1;
///     }
/// });
/// let e = world.spawn((Health(10), Poisoned));
/// assert_eq!(world.get::<Health>(e).unwrap().0, 9);
/// ```
pub struct DeferredWorld<'w> {
    world: &'w mut World,
}

impl fmt::Debug for DeferredWorld<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DeferredWorld").field(&self.world).finish()
    }
}

impl DeferredWorld<'_> {
    /// The whole world, for observers whose parameters are system
    /// parameters (they borrow only what they recorded, and queue their
    /// commands like the rest).
    pub(crate) fn world_mut(&mut self) -> &mut World {
        self.world
    }

    /// The world, read-only.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.observe(|_: Trigger<u8>, w: DeferredWorld| assert_eq!(w.world().len(), 0));
    /// world.trigger(0u8);
    /// ```
    pub fn world(&self) -> &World {
        self.world
    }

    /// `entity`'s `T`; see [`World::get`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Name(&'static str);
    /// let mut world = World::new();
    /// let e = world.spawn(Name("orc"));
    /// world.observe(move |_: Trigger<u8>, w: DeferredWorld| assert_eq!(w.get::<Name>(e).unwrap().0, "orc"));
    /// world.trigger(0u8);
    /// ```
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, ComponentError> {
        self.world.get::<T>(entity)
    }

    /// `entity`'s `T`, mutably; see [`World::get_mut`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Hp(3));
    /// world.observe(move |_: Trigger<u8>, mut w: DeferredWorld| w.get_mut::<Hp>(e).unwrap().0 = 0);
    /// world.trigger(0u8);
    /// assert_eq!(world.get::<Hp>(e).unwrap().0, 0);
    /// ```
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<&mut T, ComponentError> {
        self.world.get_mut::<T>(entity)
    }

    /// The world's `R` (panics naming `R` if missing); see
    /// [`World::resource`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(3u8);
    /// world.observe(|_: Trigger<()>, w: DeferredWorld| assert_eq!(*w.resource::<u8>(), 3));
    /// world.trigger(());
    /// ```
    pub fn resource<R: Send + Sync + 'static>(&self) -> &R {
        self.world.resource::<R>()
    }

    /// The world's `R`, mutably (panics naming `R` if missing).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(3u8);
    /// world.observe(|_: Trigger<()>, mut w: DeferredWorld| *w.resource_mut::<u8>() += 1);
    /// world.trigger(());
    /// assert_eq!(*world.resource::<u8>(), 4);
    /// ```
    pub fn resource_mut<R: Send + Sync + 'static>(&mut self) -> &mut R {
        self.world.resource_mut::<R>()
    }

    /// The world's `R`, if any.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.observe(|_: Trigger<()>, w: DeferredWorld| assert!(w.get_resource::<u8>().is_none()));
    /// world.trigger(());
    /// ```
    pub fn get_resource<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.world.get_resource::<R>()
    }

    /// The world's `R` mutably, if any.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.observe(|_: Trigger<()>, mut w: DeferredWorld| assert!(w.get_resource_mut::<u8>().is_none()));
    /// world.trigger(());
    /// ```
    pub fn get_resource_mut<R: Send + Sync + 'static>(&mut self) -> Option<&mut R> {
        self.world.get_resource_mut::<R>()
    }

    /// Sends an event for systems to read.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.observe(|_: Trigger<()>, mut w: DeferredWorld| w.send_event(5u8));
    /// world.trigger(());
    /// assert_eq!(world.events::<u8>().unwrap().len(), 1);
    /// ```
    pub fn send_event<E: Send + Sync + 'static>(&mut self, event: E) {
        self.world.send_event(event);
    }

    /// Structural changes to apply right after the triggering operation.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Spark;
    /// let mut world = World::new();
    /// world.observe(|_: Trigger<()>, mut w: DeferredWorld| { w.commands().spawn(Spark); });
    /// world.trigger(());
    /// assert_eq!(world.len(), 1);
    /// ```
    pub fn commands(&mut self) -> &mut CommandBuffer {
        self.world.observers_mut().queue()
    }
}

/// Identifies a registered observer, to remove it.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let id = world.observe(|_: Trigger<u8>, _: DeferredWorld| {});
/// assert!(world.remove_observer(id));
/// assert!(!world.remove_observer(id));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObserverId(u64);

type Callback = Box<dyn FnMut(&dyn Any, Option<Entity>, DeferredWorld<'_>) + Send + Sync>;

struct Observer {
    id: ObserverId,
    target: Option<Entity>,
    callback: Callback,
}

/// Every observer of a world, by event type, in registration order.
#[derive(Default)]
pub(crate) struct Observers {
    by_event: FxHashMap<TypeId, Vec<Observer>>,
    next_id: u64,
    /// Commands issued by observers and hooks, applied after the operation.
    /// (In a `Mutex` only so the world stays `Sync`; reached through
    /// `get_mut`, never locked.)
    queue: Option<Mutex<CommandBuffer>>,
    /// A flush is under way (commands it applies queue into the next round).
    flushing: bool,
    /// An operation of several announced steps is under way (a relation's
    /// edge change): commands wait for its end, so none runs on a half-made
    /// change. See [`World::hold_observer_commands`].
    held: bool,
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count: usize = self.by_event.values().map(Vec::len).sum();
        f.debug_struct("Observers")
            .field("observers", &count)
            .finish()
    }
}

impl Observers {
    pub(crate) fn queue(&mut self) -> &mut CommandBuffer {
        let queue = self
            .queue
            .as_mut()
            .expect("the queue is made when the first observer or hook runs");
        queue.get_mut().unwrap_or_else(|p| p.into_inner())
    }

    fn has_queued(&mut self) -> bool {
        self.queue.is_some() && !self.queue().is_empty()
    }

    /// Takes every queued command out, leaving the queue empty.
    fn take_queued(&mut self) -> Option<CommandBuffer> {
        let queue = self
            .queue
            .as_mut()?
            .get_mut()
            .unwrap_or_else(|p| p.into_inner());
        let empty = queue.empty_like();
        Some(std::mem::replace(queue, empty))
    }
}

/// The lifecycle event types of a component type, for observers: each
/// marker's type id and a `'static` value of it.
#[derive(Clone, Copy)]
pub(crate) struct LifecycleTypes {
    add: (TypeId, &'static (dyn Any + Send + Sync)),
    insert: (TypeId, &'static (dyn Any + Send + Sync)),
    remove: (TypeId, &'static (dyn Any + Send + Sync)),
}

impl fmt::Debug for LifecycleTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LifecycleTypes")
    }
}

impl LifecycleTypes {
    pub fn of<T: 'static>() -> Self {
        LifecycleTypes {
            add: (TypeId::of::<OnAdd<T>>(), &OnAdd::<T>::VALUE),
            insert: (TypeId::of::<OnInsert<T>>(), &OnInsert::<T>::VALUE),
            remove: (TypeId::of::<OnRemove<T>>(), &OnRemove::<T>::VALUE),
        }
    }

    /// True if `event_type` is one of these.
    pub fn contains(&self, event_type: TypeId) -> bool {
        [self.add.0, self.insert.0, self.remove.0].contains(&event_type)
    }

    fn get(&self, kind: LifecycleKind) -> Option<(TypeId, &'static (dyn Any + Send + Sync))> {
        match kind {
            LifecycleKind::Add => Some(self.add),
            LifecycleKind::Insert => Some(self.insert),
            LifecycleKind::Remove => Some(self.remove),
            LifecycleKind::Spawn | LifecycleKind::Despawn => None,
        }
    }
}

impl World {
    /// Registers `observer` for events of type `E` (a user event, or a
    /// lifecycle event such as `OnAdd<Position>`); it runs, in registration
    /// order with the others, each time an `E` is triggered.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct LevelUp;
    /// #[derive(Default)] struct Level(u32);
    /// let mut world = World::new();
    /// world.insert_resource(Level::default());
    /// world.observe(|_: Trigger<LevelUp>, mut w: DeferredWorld| w.resource_mut::<Level>().0 += 1);
    /// world.trigger(LevelUp);
    /// world.trigger(LevelUp);
    /// assert_eq!(world.resource::<Level>().0, 2);
    /// ```
    pub fn observe<E: ObserverEvent<B>, B: 'static, F>(&mut self, observer: F) -> ObserverId
    where
        F: FnMut(Trigger<'_, E, B>, DeferredWorld<'_>) + Send + Sync + 'static,
    {
        self.push_observer(None, observer)
    }

    /// Registers `observer` for events of type `E` that target `entity`
    /// (lifecycle events of that entity, or `trigger_for(entity, ..)`).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::OnDespawn;
    /// #[derive(Default)] struct BossDead(bool);
    /// let mut world = World::new();
    /// world.insert_resource(BossDead::default());
    /// let boss = world.spawn(());
    /// let minion = world.spawn(());
    /// world.observe_entity(boss, |_: Trigger<OnDespawn>, mut w: DeferredWorld| w.resource_mut::<BossDead>().0 = true);
    /// world.despawn(minion).unwrap();
    /// assert!(!world.resource::<BossDead>().0);
    /// world.despawn(boss).unwrap();
    /// assert!(world.resource::<BossDead>().0);
    /// ```
    pub fn observe_entity<E: ObserverEvent<B>, B: 'static, F>(
        &mut self,
        entity: Entity,
        observer: F,
    ) -> ObserverId
    where
        F: FnMut(Trigger<'_, E, B>, DeferredWorld<'_>) + Send + Sync + 'static,
    {
        self.push_observer(Some(entity), observer)
    }

    pub(crate) fn push_observer<E: ObserverEvent<B>, B: 'static, F>(
        &mut self,
        target: Option<Entity>,
        mut observer: F,
    ) -> ObserverId
    where
        F: FnMut(Trigger<'_, E, B>, DeferredWorld<'_>) + Send + Sync + 'static,
    {
        let key = TypeId::of::<E::Key>();
        assert!(
            ![
                TypeId::of::<OnAdd>(),
                TypeId::of::<OnInsert>(),
                TypeId::of::<OnRemove>()
            ]
            .contains(&key),
            "an observer of `{}` would never run: name the component, as \
             `Trigger<OnAdd, Health>` or `Trigger<OnAdd<Health>>`",
            std::any::type_name::<E>()
        );
        self.prepare_observers();
        self.components_mut().observe_event(key);
        let observers = self.observers_mut();
        let id = ObserverId(observers.next_id);
        observers.next_id += 1;
        let callback: Callback = Box::new(move |event: &dyn Any, entity, world| {
            let event = event
                .downcast_ref::<E::Key>()
                .expect("observers are keyed by event type");
            if E::accepts(world.world(), entity) {
                let event = E::view(event);
                observer(
                    Trigger {
                        event,
                        entity,
                        _component: PhantomData,
                    },
                    world,
                );
            }
        });
        observers.by_event.entry(key).or_default().push(Observer {
            id,
            target,
            callback,
        });
        id
    }

    /// Removes an observer; false if it was already gone.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let id = world.observe(|_: Trigger<u8>, _: DeferredWorld| panic!("removed"));
    /// world.remove_observer(id);
    /// world.trigger(1u8); // nothing runs
    /// ```
    pub fn remove_observer(&mut self, id: ObserverId) -> bool {
        for list in self.observers_mut().by_event.values_mut() {
            if let Some(pos) = list.iter().position(|o| o.id == id) {
                list.remove(pos);
                return true;
            }
        }
        false
    }

    /// Runs every observer of `E` (not those registered for one entity),
    /// now, then applies the commands they issued.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.observe(|t: Trigger<&'static str>, mut w: DeferredWorld| w.send_event(t.event().len()));
    /// world.trigger("hello");
    /// assert_eq!(world.events::<usize>().unwrap().len(), 1);
    /// ```
    pub fn trigger<E: 'static>(&mut self, event: E) {
        self.trigger_inner(&event, None);
    }

    /// Runs every observer of `E`, including those registered for `entity`,
    /// now, then applies the commands they issued.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct Damage(u32);
    /// #[derive(Component)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Hp(10));
    /// world.observe_entity(e, |t: Trigger<Damage>, mut w: DeferredWorld| {
    ///     let target = t.entity().unwrap();
    ///     w.get_mut::<Hp>(target).unwrap().0 -= t.event().0;
    /// });
    /// world.trigger_for(e, Damage(3));
    /// assert_eq!(world.get::<Hp>(e).unwrap().0, 7);
    /// ```
    pub fn trigger_for<E: 'static>(&mut self, entity: Entity, event: E) {
        self.trigger_inner(&event, Some(entity));
    }

    /// True if some observer of event type `E` is registered (so a
    /// trigger of `E` is worth building).
    pub(crate) fn has_observers<E: 'static>(&self) -> bool {
        let observers = &self.observers().by_event;
        !observers.is_empty()
            && observers
                .get(&TypeId::of::<E>())
                .is_some_and(|l| !l.is_empty())
    }

    fn trigger_inner<E: 'static>(&mut self, event: &E, entity: Option<Entity>) {
        self.prepare_observers();
        self.discard_commands_on_panic(|world| {
            run_observers(world, TypeId::of::<E>(), event, entity);
        });
        self.flush_observer_commands();
    }

    /// Makes the observer command queue (it needs the world's id space).
    fn prepare_observers(&mut self) {
        if self.observers_mut().queue.is_none() {
            let queue = CommandBuffer::new(self);
            self.observers_mut().queue = Some(Mutex::new(queue));
        }
    }

    // ----- lifecycle announcements (called by structural changes) -----------

    /// After `entity` was spawned or had components inserted (the required
    /// components the change brought included): `OnSpawn` (if `spawned`),
    /// then per component `on_add`/`OnAdd` for those it lacked, then
    /// `on_insert`/`OnInsert` for all, in `changes` order. `changes` holds
    /// `(component, was added)`.
    pub(crate) fn announce_insert(
        &mut self,
        entity: Entity,
        spawned: bool,
        changes: &[(ComponentId, bool)],
    ) {
        self.prepare_observers();
        self.discard_commands_on_panic(|world| {
            if spawned {
                world.lifecycle(LifecycleKind::Spawn, entity, None);
            }
            for &(id, added) in changes {
                if added && world.components().announces(id) {
                    world.lifecycle(LifecycleKind::Add, entity, Some(id));
                }
            }
            for &(id, _) in changes {
                if world.components().announces(id) {
                    world.lifecycle(LifecycleKind::Insert, entity, Some(id));
                }
            }
        });
    }

    /// Before `ids` are removed from `entity` (and, if `despawn`, before it
    /// goes): `on_remove`/`OnRemove` per component, then `OnDespawn`.
    pub(crate) fn announce_remove(&mut self, entity: Entity, despawn: bool, ids: &[ComponentId]) {
        self.prepare_observers();
        self.discard_commands_on_panic(|world| {
            if despawn {
                world.run_hooks(entity, ids, |hooks| hooks.on_despawn);
            }
            world.run_hooks(entity, ids, |hooks| hooks.on_replace);
            for &id in ids {
                if world.components().announces(id) {
                    world.lifecycle(LifecycleKind::Remove, entity, Some(id));
                }
            }
            if despawn {
                world.lifecycle(LifecycleKind::Despawn, entity, None);
            }
        });
    }

    /// Before `ids` of `entity` are overwritten by an insert: their
    /// `on_replace` hooks, while the old values are readable.
    pub(crate) fn announce_replace(&mut self, entity: Entity, ids: &[ComponentId]) {
        self.prepare_observers();
        self.discard_commands_on_panic(|world| {
            world.run_hooks(entity, ids, |hooks| hooks.on_replace);
        });
    }

    /// The hook `which` picks, of each of `ids` that has one (a hook has no
    /// observer counterpart).
    fn run_hooks(
        &mut self,
        entity: Entity,
        ids: &[ComponentId],
        which: impl Fn(&crate::hooks::ComponentHooks) -> Option<crate::hooks::ComponentHook>,
    ) {
        for &id in ids {
            if !self.components().announces(id) {
                continue;
            }
            if let Some(hook) = which(self.components().info(id).hooks()) {
                hook(DeferredWorld { world: self }, entity);
            }
        }
    }

    /// One lifecycle announcement: the component's hook, its observers, and
    /// the readable [`LifecycleEvent`].
    fn lifecycle(&mut self, kind: LifecycleKind, entity: Entity, component: Option<ComponentId>) {
        if let Some(id) = component {
            let info = self.components().info(id);
            let hook = match kind {
                LifecycleKind::Add => info.hooks().on_add,
                LifecycleKind::Insert => info.hooks().on_insert,
                LifecycleKind::Remove => info.hooks().on_remove,
                LifecycleKind::Spawn | LifecycleKind::Despawn => None,
            };
            if let Some(hook) = hook {
                hook(DeferredWorld { world: self }, entity);
            }
        }
        let event: Option<(TypeId, &'static (dyn Any + Send + Sync))> = match (kind, component) {
            (LifecycleKind::Spawn, _) => Some((TypeId::of::<OnSpawn>(), &OnSpawn)),
            (LifecycleKind::Despawn, _) => Some((TypeId::of::<OnDespawn>(), &OnDespawn)),
            (_, Some(id)) => self
                .components()
                .info(id)
                .lifecycle_types()
                .and_then(|t| t.get(kind)),
            (_, None) => None,
        };
        if let Some((event_type, value)) = event {
            run_observers(self, event_type, value, Some(entity));
        }
        if self.components().observes_all() {
            if let Some(events) = self.get_resource_mut::<Events<LifecycleEvent>>() {
                events.send(LifecycleEvent {
                    kind,
                    entity,
                    component,
                });
            }
        }
    }

    /// Applies the commands observers and hooks issued, in rounds, until
    /// none are left (see the module docs for the round limit).
    pub(crate) fn flush_observer_commands(&mut self) {
        let observers = self.observers_mut();
        if observers.flushing || observers.held || !observers.has_queued() {
            return;
        }
        self.observers_mut().flushing = true;
        let result = catch_unwind(AssertUnwindSafe(|| {
            for _ in 0..MAX_OBSERVER_ROUNDS {
                let queue = self.observers_mut().queue();
                let mut round = queue.empty_like();
                std::mem::swap(queue, &mut round);
                if let Err(errors) = round.apply(self) {
                    log::warn!("commands issued by observers or hooks: {errors}");
                }
                if !self.observers_mut().has_queued() {
                    return;
                }
            }
            panic!(
                "observers and hooks kept issuing commands for {MAX_OBSERVER_ROUNDS} rounds in a row; \
                 some observers trigger each other forever"
            );
        }));
        self.observers_mut().flushing = false;
        if let Err(payload) = result {
            self.discard_observer_commands();
            resume_unwind(payload);
        }
    }

    /// Keeps [`World::flush_observer_commands`] from applying anything until
    /// [`World::release_observer_commands`]: for an operation whose steps
    /// each announce (a relation's edge change touches both ends), so no
    /// observer's command runs on a half-made change. Returns the previous
    /// state, for the release. (A panicking announcement still drops the
    /// commands queued so far, as everywhere.)
    pub(crate) fn hold_observer_commands(&mut self) -> bool {
        std::mem::replace(&mut self.observers_mut().held, true)
    }

    /// Ends a hold begun by [`World::hold_observer_commands`] (`previous`
    /// is what it returned). Applies nothing: the operation flushes when it
    /// is whole.
    pub(crate) fn release_observer_commands(&mut self, previous: bool) {
        self.observers_mut().held = previous;
    }

    /// Drops every queued command, unapplied (after a panic). The ids their
    /// spawn commands reserved (held, not live) never come to life.
    fn discard_observer_commands(&mut self) {
        if let Some(mut dropped) = self.observers_mut().take_queued() {
            dropped.discard(self);
        }
    }

    /// Runs `f`, a part of one operation's lifecycle; if it panics outside a
    /// flush, drops the commands the operation's hooks and observers queued
    /// (inside a flush, the flush drops them). See the module docs.
    pub(crate) fn discard_commands_on_panic<R>(&mut self, f: impl FnOnce(&mut World) -> R) -> R {
        match catch_unwind(AssertUnwindSafe(|| f(self))) {
            Ok(value) => value,
            Err(payload) => {
                if !self.observers_mut().flushing {
                    self.discard_observer_commands();
                }
                resume_unwind(payload)
            }
        }
    }
}

/// Runs the observers of `event_type` (all untargeted ones, and those
/// targeting `entity`), in registration order. Observers registered
/// meanwhile are kept, after the others.
fn run_observers(world: &mut World, event_type: TypeId, event: &dyn Any, entity: Option<Entity>) {
    let Some(list) = world.observers_mut().by_event.get_mut(&event_type) else {
        return;
    };
    if list.is_empty() {
        return;
    }
    let list = std::mem::take(list);
    let mut restore = Restore {
        world,
        event_type,
        list,
    };
    let Restore { world, list, .. } = &mut restore;
    for observer in list.iter_mut() {
        if observer.target.is_none() || observer.target == entity {
            (observer.callback)(event, entity, DeferredWorld { world });
        }
    }
}

/// Puts an observer list back after running it, even if an observer
/// panicked.
struct Restore<'a> {
    world: &'a mut World,
    event_type: TypeId,
    list: Vec<Observer>,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let slot = self
            .world
            .observers_mut()
            .by_event
            .entry(self.event_type)
            .or_default();
        let added = std::mem::replace(slot, std::mem::take(&mut self.list));
        slot.extend(added);
    }
}
