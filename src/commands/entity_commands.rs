//! [`EntityCommands`]: the commands for one entity, as Bevy users write
//! them (`commands.entity(e).insert(..)`), and the child spawner of
//! [`EntityCommands::with_children`].

use std::fmt;

use super::{CommandError, Commands};
use crate::bundle::Bundle;
use crate::entity::Entity;
use crate::world::World;

/// The commands for one entity, from [`Commands::entity`] (or
/// [`Commands::spawn_empty`]): each method records the command it names on
/// the system's buffer, as the method of [`Commands`] taking the entity
/// does, and returns the handle for the next.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Poisoned;
/// #[derive(Component)] struct Health(u32);
/// let mut world = World::new();
/// let e = world.spawn(Health(3));
/// world.run_system_once(move |mut commands: Commands| {
///     commands.entity(e).insert(Poisoned).remove::<Health>();
/// });
/// assert!(world.has::<Poisoned>(e) && !world.has::<Health>(e));
/// ```
pub struct EntityCommands<'a, 'w, 's> {
    entity: Entity,
    commands: &'a mut Commands<'w, 's>,
}

impl fmt::Debug for EntityCommands<'_, '_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntityCommands")
            .field("entity", &self.entity)
            .finish()
    }
}

impl<'w, 's> Commands<'w, 's> {
    /// The commands for `entity`: `commands.entity(e).insert(..)`. The
    /// entity is not checked now; a command whose entity is gone when it
    /// applies is skipped and reported, as every command is
    /// ([`EntityCommands::try_insert`] skips quietly).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Frozen;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.entity(e).insert(Frozen);
    /// });
    /// assert!(world.has::<Frozen>(e));
    /// ```
    pub fn entity(&mut self, entity: Entity) -> EntityCommands<'_, 'w, 's> {
        EntityCommands {
            entity,
            commands: self,
        }
    }

    /// Records spawning an entity with no components, and returns its
    /// commands (the entity's id is [`EntityCommands::id`], valid at once).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Tag;
    /// let mut world = World::new();
    /// let e = world.run_system_once(|mut commands: Commands| {
    ///     commands.spawn_empty().insert(Tag).id()
    /// });
    /// assert!(world.has::<Tag>(e));
    /// ```
    pub fn spawn_empty(&mut self) -> EntityCommands<'_, 'w, 's> {
        let entity = self.spawn(());
        self.entity(entity)
    }

    /// Records spawning one entity per bundle of `bundles`, when the
    /// commands apply (Bevy's name; the ids are not returned: spawn them
    /// one by one with [`Commands::spawn`] to keep them).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Coin(u32);
    /// let mut world = World::new();
    /// world.run_system_once(|mut commands: Commands| {
    ///     commands.spawn_batch((0..10).map(Coin));
    /// });
    /// assert_eq!(world.len(), 10);
    /// ```
    pub fn spawn_batch<I>(&mut self, bundles: I)
    where
        I: IntoIterator + Send + 'static,
        I::Item: Bundle,
    {
        self.run(move |world| {
            world.spawn_batch(bundles);
        });
    }

    /// Records running `command` with the whole world: Bevy's name for
    /// [`Commands::run`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.run_system_once(|mut commands: Commands| {
    ///     commands.queue(|world: &mut World| world.insert_resource(3u8));
    /// });
    /// assert_eq!(*world.resource::<u8>(), 3);
    /// ```
    pub fn queue(&mut self, command: impl FnOnce(&mut World) + Send + 'static) {
        self.run(command);
    }

    /// The commands for `entity` if it is alive now, or the error saying
    /// it is not: Bevy's `get_entity`, for code that must not record
    /// commands for a stale handle. (It may still be despawned by an
    /// earlier command before these apply; they are then skipped and
    /// reported, as every command is.)
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Frozen;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// let gone = world.spawn(());
    /// world.despawn(gone).unwrap();
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.get_entity(e).unwrap().insert(Frozen);
    ///     assert!(commands.get_entity(gone).is_err());
    /// });
    /// assert!(world.has::<Frozen>(e));
    /// ```
    pub fn get_entity(
        &mut self,
        entity: Entity,
    ) -> Result<EntityCommands<'_, 'w, 's>, crate::EntityError> {
        if self.world.contains(entity) {
            Ok(self.entity(entity))
        } else {
            Err(crate::EntityError::NoSuchEntity(entity))
        }
    }

    /// Records triggering `event` (see [`World::trigger`]): its observers
    /// run when the commands are applied.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct Boom(u32);
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// world.add_observer(|t: Trigger<Boom>, mut n: ResMut<u32>| *n += t.event().0);
    /// world.run_system_once(|mut commands: Commands| commands.trigger(Boom(3)));
    /// assert_eq!(*world.resource::<u32>(), 3);
    /// ```
    pub fn trigger<E: Send + 'static>(&mut self, event: E) {
        self.run(move |world| world.trigger(event));
    }

    /// Records triggering `event` for `entity` (see [`World::trigger_for`]):
    /// the observers of `E`, and those registered for `entity`, run when
    /// the commands are applied. Bevy calls this `trigger_targets`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct Hit;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.insert_resource(Vec::<Entity>::new());
    /// world.add_observer(|t: Trigger<Hit>, mut hits: ResMut<Vec<Entity>>| hits.push(t.target()));
    /// world.run_system_once(move |mut commands: Commands| commands.trigger_for(e, Hit));
    /// assert_eq!(*world.resource::<Vec<Entity>>(), [e]);
    /// ```
    pub fn trigger_for<E: Send + 'static>(&mut self, entity: Entity, event: E) {
        self.run(move |world| world.trigger_for(entity, event));
    }

    /// [`Commands::trigger_for`] under Bevy's name.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct Hit;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.insert_resource(0u32);
    /// world.add_observer(|_: Trigger<Hit>, mut n: ResMut<u32>| *n += 1);
    /// world.run_system_once(move |mut commands: Commands| commands.trigger_targets(Hit, e));
    /// assert_eq!(*world.resource::<u32>(), 1);
    /// ```
    pub fn trigger_targets<E: Send + 'static>(&mut self, event: E, entity: Entity) {
        self.trigger_for(entity, event);
    }

    /// Records sending `event` (see [`World::send_event`]): it is in the
    /// event buffer once the commands are applied. `EventWriter` sends at
    /// once and is the usual way; this is Bevy's `Commands::send_event`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Event)] struct Scored(u32);
    /// let mut world = World::new();
    /// world.run_system_once(|mut commands: Commands| commands.send_event(Scored(2)));
    /// let total: u32 = world.run_system_once(|mut r: EventReader<Scored>| r.read().map(|s| s.0).sum());
    /// assert_eq!(total, 2);
    /// ```
    pub fn send_event<E: Send + Sync + 'static>(&mut self, event: E) {
        self.run(move |world| world.send_event(event));
    }

    /// Records registering an observer with system parameters (see
    /// [`World::add_observer`]); it observes from when the commands are
    /// applied.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Ghost;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// world.run_system_once(|mut commands: Commands| {
    ///     commands.add_observer(|_: Trigger<OnAdd, Ghost>, mut n: ResMut<u32>| *n += 1);
    /// });
    /// world.spawn(Ghost);
    /// assert_eq!(*world.resource::<u32>(), 1);
    /// ```
    pub fn add_observer<E, M, F>(&mut self, observer: F)
    where
        E: crate::ObserverEvent<F::Component>,
        F: crate::ObserverFunction<E, M>,
    {
        self.run(move |world| {
            world.add_observer(observer);
        });
    }
}

impl<'w, 's> EntityCommands<'_, 'w, 's> {
    /// The entity these commands are for.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// let same = world.run_system_once(move |mut commands: Commands| commands.entity(e).id());
    /// assert_eq!(same, e);
    /// ```
    pub fn id(&self) -> Entity {
        self.entity
    }

    /// Records inserting `bundle` (see [`Commands::insert`]). A gone
    /// entity is reported when the command applies.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Speed(f32);
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.entity(e).insert(Speed(2.0));
    /// });
    /// assert_eq!(world.get::<Speed>(e).unwrap().0, 2.0);
    /// ```
    pub fn insert<B: Bundle>(&mut self, bundle: B) -> &mut Self {
        self.commands.insert(self.entity, bundle);
        self
    }

    /// Records inserting `bundle` if the entity still exists when the
    /// command applies; a gone entity is skipped without a report (for an
    /// entity that may have been despawned meanwhile, on purpose).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Hit;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.entity(e).despawn();
    ///     commands.entity(e).try_insert(Hit); // e is gone by then: skipped
    /// });
    /// assert!(!world.contains(e));
    /// ```
    pub fn try_insert<B: Bundle>(&mut self, bundle: B) -> &mut Self {
        self.commands.buffer.try_insert(self.entity, bundle);
        self
    }

    /// Records removing bundle `B` (see [`Commands::remove`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Shield;
    /// let mut world = World::new();
    /// let e = world.spawn(Shield);
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.entity(e).remove::<Shield>();
    /// });
    /// assert!(!world.has::<Shield>(e));
    /// ```
    pub fn remove<B: Bundle>(&mut self) -> &mut Self {
        self.commands.remove::<B>(self.entity);
        self
    }

    /// Records despawning the entity (see [`Commands::despawn`]). Its
    /// children stay, unparented: unlike Bevy 0.16, a despawn is not
    /// recursive; [`EntityCommands::despawn_recursive`] takes the subtree.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| commands.entity(e).despawn());
    /// assert!(!world.contains(e));
    /// ```
    pub fn despawn(&mut self) {
        self.commands.despawn(self.entity);
    }

    /// Records despawning the entity and all its descendants (see
    /// [`World::despawn_recursive`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let ship = world.spawn(());
    /// world.spawn_child(ship, ()).unwrap();
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.entity(ship).despawn_recursive()
    /// });
    /// assert!(world.is_empty());
    /// ```
    pub fn despawn_recursive(&mut self) {
        self.commands.despawn_recursive(self.entity);
    }

    /// Spawns children of the entity: `spawn` on the spawner `f` is given
    /// records spawning a child (see [`Commands::spawn_child`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Turret;
    /// let mut world = World::new();
    /// let tank = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.entity(tank).with_children(|parent| {
    ///         parent.spawn(Turret);
    ///         parent.spawn(Turret);
    ///     });
    /// });
    /// assert_eq!(world.children(tank).len(), 2);
    /// ```
    pub fn with_children(
        &mut self,
        f: impl FnOnce(&mut ChildSpawnerCommands<'_, 'w, 's>),
    ) -> &mut Self {
        let mut spawner = ChildSpawnerCommands {
            parent: self.entity,
            commands: self.commands,
        };
        f(&mut spawner);
        self
    }

    /// The [`Commands`] these entity commands record on (to spawn or
    /// despawn another entity in the middle of a chain).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| {
    ///     let mut ec = commands.entity(e);
    ///     ec.commands().spawn(());
    /// });
    /// assert_eq!(world.len(), 2);
    /// ```
    pub fn commands(&mut self) -> &mut Commands<'w, 's> {
        self.commands
    }
}

/// Spawns children of one parent, for [`EntityCommands::with_children`]:
/// each `spawn` records spawning a child (Bevy's
/// `ChildSpawnerCommands`).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let root = world.spawn(());
/// let kid = world.run_system_once(move |mut commands: Commands| {
///     let mut kid = None;
///     commands.entity(root).with_children(|p| {
///         assert_eq!(p.parent_entity(), root);
///         kid = Some(p.spawn(()));
///     });
///     kid.unwrap()
/// });
/// assert_eq!(world.parent(kid), Some(root));
/// ```
pub struct ChildSpawnerCommands<'a, 'w, 's> {
    parent: Entity,
    commands: &'a mut Commands<'w, 's>,
}

impl fmt::Debug for ChildSpawnerCommands<'_, '_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpawnerCommands")
            .field("parent", &self.parent)
            .finish()
    }
}

impl<'w, 's> ChildSpawnerCommands<'_, 'w, 's> {
    /// Records spawning a child with `bundle`; returns its id, valid at
    /// once (as [`ChildSpawner::spawn`](crate::ChildSpawner::spawn) does
    /// on a world).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let root = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.entity(root).with_children(|p| {
    ///         p.spawn(());
    ///     });
    /// });
    /// assert_eq!(world.children(root).len(), 1);
    /// ```
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.commands.spawn_child(self.parent, bundle)
    }

    /// The parent the children are spawned under.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let root = world.spawn(());
    /// let seen = world.run_system_once(move |mut commands: Commands| {
    ///     let mut seen = None;
    ///     commands.entity(root).with_children(|p| seen = Some(p.parent_entity()));
    ///     seen.unwrap()
    /// });
    /// assert_eq!(seen, root);
    /// ```
    pub fn parent_entity(&self) -> Entity {
        self.parent
    }

    /// The [`Commands`] the spawner records on.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let root = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.entity(root).with_children(|p| {
    ///         p.commands().spawn(()); // not a child
    ///     });
    /// });
    /// assert_eq!(world.len(), 2);
    /// ```
    pub fn commands(&mut self) -> &mut Commands<'w, 's> {
        self.commands
    }
}

impl super::CommandBuffer {
    /// Records inserting `bundle` into `entity` if it still exists when
    /// the command applies; a gone entity is skipped without a report.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Hit;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.despawn(b).unwrap();
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.try_insert(a, Hit);
    /// commands.try_insert(b, Hit);
    /// assert!(commands.apply(&mut world).is_ok());
    /// assert!(world.has::<Hit>(a));
    /// ```
    pub fn try_insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        self.push(move |world| match world.insert(entity, bundle) {
            Err(crate::EntityError::NoSuchEntity(_)) => Ok(()),
            other => other.map_err(CommandError::from),
        });
    }
}
