//! Removals as typed events: [`RemovedComponents<T>`] tells a system which
//! entities lost a `T` (by `remove`, `despawn` or `clear`) since it last
//! read, without comparing component ids by hand.
//!
//! The first `RemovedComponents<T>` of a world installs one observer of
//! [`OnRemove<T>`](crate::OnRemove) that sends each removal as an event;
//! from then on removals of `T` (and only of `T`) are announced, and each
//! reader sees each removal once, in order, with the lifetime of any event
//! (two schedule runs, see [`crate::event`]). Removals before the first
//! reader was built are not recorded.

use std::fmt;
use std::marker::PhantomData;

use crate::component::Component;
use crate::entity::Entity;
use crate::event::EventReader;
use crate::observer::{DeferredWorld, OnRemove, Trigger};
use crate::query::TickRange;
use crate::system::{SystemMeta, SystemParam};
use crate::world::World;

/// One removal of a `T`, as an event.
struct Removed<T> {
    entity: Entity,
    marker: PhantomData<fn() -> T>,
}

/// The world already feeds `Removed<T>` events (a resource, as a marker).
struct RemovalFeed<T>(PhantomData<fn() -> T>);

/// A system parameter: the entities that lost a `T` since this system last
/// read them (oldest first; an entity that lost `T` twice appears twice).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::RemovedComponents;
/// #[derive(Component)] struct Health(u32);
/// #[derive(Default)] struct Fallen(Vec<Entity>);
///
/// fn mourn(mut removed: RemovedComponents<Health>, mut fallen: ResMut<Fallen>) {
///     fallen.0.extend(removed.read());
/// }
///
/// let mut world = World::new();
/// world.insert_resource(Fallen::default());
/// let mut schedule = Schedule::new();
/// schedule.add_system("mourn", mourn);
/// schedule.run(&mut world); // builds the reader
/// let a = world.spawn(Health(1));
/// let b = world.spawn(Health(2));
/// world.remove_one::<Health>(a).unwrap();
/// world.despawn(b).unwrap();
/// schedule.run(&mut world);
/// schedule.run(&mut world); // each removal is seen once
/// assert_eq!(world.resource::<Fallen>().0, [a, b]);
/// ```
pub struct RemovedComponents<'w, 's, T: Component> {
    reader: EventReader<'w, 's, Removed<T>>,
}

impl<T: Component> fmt::Debug for RemovedComponents<'_, '_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemovedComponents")
            .field("component", &crate::component::short_type_name::<T>())
            .finish()
    }
}

impl<T: Component> RemovedComponents<'_, '_, T> {
    /// The entities that lost a `T` since the last read, oldest first; each
    /// counts as read once yielded.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::RemovedComponents;
    /// #[derive(Component)] struct Tag;
    /// let mut world = World::new();
    /// world.run_system_once(|mut r: RemovedComponents<Tag>| assert_eq!(r.read().count(), 0));
    /// let e = world.spawn(Tag);
    /// world.despawn(e).unwrap();
    /// let seen: Vec<Entity> = world.run_system_once(|mut r: RemovedComponents<Tag>| r.read().collect());
    /// assert_eq!(seen, [e]);
    /// ```
    pub fn read(&mut self) -> impl Iterator<Item = Entity> + use<'_, T> {
        self.reader.read().map(|removed| removed.entity)
    }

    /// True if no removal is left to read (does not move the cursor).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::RemovedComponents;
    /// #[derive(Component)] struct Tag;
    /// let mut world = World::new();
    /// assert!(world.run_system_once(|r: RemovedComponents<Tag>| r.is_empty()));
    /// ```
    pub fn is_empty(&self) -> bool {
        self.reader.is_empty()
    }
}

/// Installs, once per world, the observer that turns removals of `T` into
/// `Removed<T>` events.
fn feed_removals<T: Component>(world: &mut World) {
    if world.contains_resource::<RemovalFeed<T>>() {
        return;
    }
    world.insert_resource(RemovalFeed::<T>(PhantomData));
    world.add_event::<Removed<T>>();
    world.observe(|t: Trigger<OnRemove<T>>, mut w: DeferredWorld| {
        if let Some(entity) = t.entity() {
            w.send_event(Removed::<T> {
                entity,
                marker: PhantomData,
            });
        }
    });
}

type ReaderState<T> = <EventReader<'static, 'static, Removed<T>> as SystemParam>::State;

/// The state of a [`RemovedComponents`] parameter (its event reader's).
#[doc(hidden)]
pub struct RemovedState<T: Component>(ReaderState<T>);

impl<T: Component> fmt::Debug for RemovedState<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RemovedState")
    }
}

// SAFETY: forwards to `EventReader<Removed<T>>`, which records a read of the
// `Events<Removed<T>>` resource and borrows only it and its own cursor.
unsafe impl<T: Component> SystemParam for RemovedComponents<'_, '_, T> {
    type State = RemovedState<T>;
    type Item<'w, 's> = RemovedComponents<'w, 's, T>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
        feed_removals::<T>(world);
        RemovedState(EventReader::<Removed<T>>::init_state(world, meta))
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut Self::State,
        meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Self::Item<'w, 's> {
        // SAFETY: forwarded: `init_state` recorded the read.
        let reader =
            unsafe { EventReader::<Removed<T>>::get_param(&mut state.0, meta, world, ticks) };
        RemovedComponents { reader }
    }
}
