//! Commands: structural changes recorded now and applied later.
//!
//! A system cannot spawn or despawn while other systems iterate the world, so
//! it records the change in a buffer; the schedule applies buffers at its
//! sync points, in the order the systems ran and the commands were issued.
//! Outside systems, a [`CommandBuffer`] does the same for code that holds a
//! query borrow (spawn inside a loop over `iter_mut`, apply after).
//!
//! Entity ids returned by `spawn` are valid at once: they can be stored in
//! components and named by later commands. Until the spawn command applies
//! the id is *held*: reserved, but not live (structural changes in between
//! do not bring it to life, unlike [`World::reserve_entity`]'s ids); no
//! query, `contains` or observer sees it. The command then places the
//! entity whole, as [`World::spawn_at`] does: one move to its final
//! archetype, then hooks and observers, each seeing every component.
//!
//! A spawn that never happens leaves no entity behind, as a failed
//! [`World::spawn`] leaves none:
//! - a spawn command dropped unapplied (the buffer dropped, or discarded
//!   after a panic, see [`crate::observer`]) gives its id up: it never comes
//!   to life, and its handle stays stale for good (the slot is reused under
//!   a newer generation);
//! - a spawn command whose required component's constructor panics leaves
//!   no entity, as [`World::spawn`] leaves none. (An `OnSpawn` observer
//!   that panics sees the entity whole, and leaves it so, as for
//!   [`World::spawn`].)
//!
//! A command whose entity is gone by the time it applies is skipped and
//! reported ([`CommandErrors`], or a `log::warn!` inside a schedule); the
//! commands after it still apply. A command that panics (a panicking
//! `Drop`, a closure) does not stop the others either: the first panic is
//! re-raised once the whole buffer has been applied.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use thiserror::Error;

use crate::archetype::ArchetypeId;
use crate::bundle::Bundle;
use crate::entity::{Entity, FreshIndices};
use crate::error::{ComponentError, EntityError};
use crate::relation::ChildOf;
use crate::storage::{CommandQueue, DeferredPanic};
use crate::world::{World, WorldId};

mod entity_commands;
pub use entity_commands::{ChildSpawnerCommands, EntityCommands};

/// A recorded list of structural changes for one world.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
/// #[derive(Component)] struct Corpse;
///
/// let mut world = World::new();
/// world.spawn_batch([Health(0), Health(5), Health(0)]);
/// let mut commands = CommandBuffer::new(&world);
/// let mut q = world.query::<(Entity, &Health)>();
/// for (e, hp) in q.iter_mut(&mut world) {
///     if hp.0 == 0 {
///         commands.despawn(e);
///         commands.spawn(Corpse);
///     }
/// }
/// commands.apply(&mut world).unwrap();
/// assert_eq!(world.len(), 3); // one survivor, two corpses
/// ```
pub struct CommandBuffer {
    world: WorldId,
    fresh: Arc<FreshIndices>,
    /// The commands, packed (no allocation per command).
    commands: CommandQueue,
    /// The ids of the spawn commands in `commands`: given up if those are
    /// dropped unapplied.
    spawned: Vec<Entity>,
}

impl Drop for CommandBuffer {
    fn drop(&mut self) {
        if !self.spawned.is_empty() {
            self.fresh.release(self.spawned.drain(..));
        }
    }
}

impl fmt::Debug for CommandBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandBuffer")
            .field("world", &self.world)
            .field("commands", &self.commands.len())
            .finish()
    }
}

impl CommandBuffer {
    /// An empty buffer for `world`. The world is needed now so that `spawn`
    /// can hand out ids that are valid at once; the buffer holds no borrow of
    /// it.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// let commands = mosaic::CommandBuffer::new(&world);
    /// assert!(commands.is_empty());
    /// ```
    pub fn new(world: &World) -> Self {
        CommandBuffer {
            world: world.id(),
            fresh: world.fresh_indices(),
            commands: CommandQueue::default(),
            spawned: Vec::new(),
        }
    }

    /// An empty buffer for the same world.
    pub(crate) fn empty_like(&self) -> CommandBuffer {
        CommandBuffer {
            world: self.world,
            fresh: Arc::clone(&self.fresh),
            commands: CommandQueue::default(),
            spawned: Vec::new(),
        }
    }

    /// Number of recorded commands.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// let mut commands = mosaic::CommandBuffer::new(&world);
    /// commands.spawn(());
    /// assert_eq!(commands.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// True if nothing is recorded.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert!(mosaic::CommandBuffer::new(&world).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Records spawning an entity with `bundle`; returns its id, valid at
    /// once. (A standalone buffer takes never-used indices; systems'
    /// [`Commands`] reuse freed ones.)
    ///
    /// A spawn that never happens leaves no entity, as a failed
    /// [`World::spawn`] leaves none. If the command is dropped unapplied
    /// (the buffer dropped, or discarded after a panic), its id never comes
    /// to life and the handle stays stale for good: until the command
    /// applies, the id is held, not live, whatever structural changes come
    /// in between. If a required component's `Default` panics, the entity
    /// is not left behind either.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Spark;
    /// let mut world = World::new();
    /// let mut commands = CommandBuffer::new(&world);
    /// let e = commands.spawn(Spark);
    /// commands.apply(&mut world).unwrap();
    /// assert!(world.has::<Spark>(e));
    /// ```
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let entity = self.fresh.next_held();
        self.spawn_reserved(entity, bundle);
        entity
    }

    /// Records spawning `entity`, an id just reserved (held) for this
    /// command, with `bundle`: placed whole when it applies, on
    /// [`World::spawn_at`]'s path.
    pub(crate) fn spawn_reserved<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        self.spawned.push(entity);
        self.push(move |world| {
            match catch_unwind(AssertUnwindSafe(|| world.spawn_held(entity, bundle))) {
                Ok(result) => Ok(result?),
                Err(payload) => {
                    // The spawn failed before the entity got anything: like
                    // a failed `World::spawn`, it leaves no entity. (The
                    // first panic is the one that goes on.)
                    let _ = catch_unwind(AssertUnwindSafe(|| despawn_if_empty(world, entity)));
                    resume_unwind(payload)
                }
            }
        });
    }

    /// Records despawning `entity`.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// let mut commands = mosaic::CommandBuffer::new(&world);
    /// commands.despawn(e);
    /// commands.apply(&mut world).unwrap();
    /// assert!(!world.contains(e));
    /// ```
    pub fn despawn(&mut self, entity: Entity) {
        self.push(move |world| Ok(world.despawn(entity)?));
    }

    /// Records inserting `bundle` into `entity`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Ghost;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.insert(e, Ghost);
    /// commands.apply(&mut world).unwrap();
    /// assert!(world.has::<Ghost>(e));
    /// ```
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        self.push(move |world| Ok(world.insert(entity, bundle)?));
    }

    /// Records removing bundle `B` from `entity` (the values are dropped).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Ghost;
    /// let mut world = World::new();
    /// let e = world.spawn(Ghost);
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.remove::<Ghost>(e);
    /// commands.apply(&mut world).unwrap();
    /// assert!(!world.has::<Ghost>(e));
    /// ```
    pub fn remove<B: Bundle>(&mut self, entity: Entity) {
        self.push(move |world| {
            world
                .remove::<B>(entity)
                .map(drop)
                .map_err(CommandError::from)
        });
    }

    /// Records adding the edge `source --R--> target` (see
    /// [`World::relate`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.relate(a, b, Likes);
    /// commands.apply(&mut world).unwrap();
    /// assert!(world.has_relation::<Likes>(a, b));
    /// ```
    pub fn relate<R: crate::Relationship>(&mut self, source: Entity, target: Entity, data: R) {
        self.push(move |world| Ok(world.relate(source, target, data)?));
    }

    /// Records removing the edge `source --R--> target` (see
    /// [`World::unrelate`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.unrelate::<Likes>(a, b);
    /// commands.apply(&mut world).unwrap();
    /// assert!(!world.has_relation::<Likes>(a, b));
    /// ```
    pub fn unrelate<R: crate::Relationship>(&mut self, source: Entity, target: Entity) {
        self.push(move |world| {
            world
                .unrelate::<R>(source, target)
                .map(drop)
                .map_err(Into::into)
        });
    }

    /// Records making `child` a child of `parent` (see [`World::add_child`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let (parent, child) = (world.spawn(()), world.spawn(()));
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.add_child(parent, child);
    /// commands.apply(&mut world).unwrap();
    /// assert_eq!(world.parent(child), Some(parent));
    /// ```
    pub fn add_child(&mut self, parent: Entity, child: Entity) {
        self.push(move |world| Ok(world.add_child(parent, child)?));
    }

    /// Records despawning `entity` and its descendants (see
    /// [`World::despawn_recursive`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// world.spawn_child(parent, ()).unwrap();
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.despawn_recursive(parent);
    /// commands.apply(&mut world).unwrap();
    /// assert!(world.is_empty());
    /// ```
    pub fn despawn_recursive(&mut self, entity: Entity) {
        self.push(move |world| Ok(world.despawn_recursive(entity)?));
    }

    /// Records despawning `entity`'s descendants, keeping `entity` (see
    /// [`World::despawn_descendants`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// world.spawn_child(parent, ()).unwrap();
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.despawn_descendants(parent);
    /// commands.apply(&mut world).unwrap();
    /// assert_eq!(world.len(), 1);
    /// ```
    pub fn despawn_descendants(&mut self, entity: Entity) {
        self.push(move |world| Ok(world.despawn_descendants(entity)?));
    }

    /// Records inserting resource `value`.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let mut commands = mosaic::CommandBuffer::new(&world);
    /// commands.insert_resource(3u32);
    /// commands.apply(&mut world).unwrap();
    /// assert_eq!(*world.resource::<u32>(), 3);
    /// ```
    pub fn insert_resource<R: Send + Sync + 'static>(&mut self, value: R) {
        self.push(move |world| {
            world.insert_resource(value);
            Ok(())
        });
    }

    /// Records removing resource `R` (dropping it).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(3u32);
    /// let mut commands = mosaic::CommandBuffer::new(&world);
    /// commands.remove_resource::<u32>();
    /// commands.apply(&mut world).unwrap();
    /// assert!(!world.contains_resource::<u32>());
    /// ```
    pub fn remove_resource<R: Send + Sync + 'static>(&mut self) {
        self.push(move |world| {
            world.remove_resource::<R>();
            Ok(())
        });
    }

    /// Records running `f` with the whole world.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let mut commands = mosaic::CommandBuffer::new(&world);
    /// commands.run(|world| world.clear());
    /// world.spawn(());
    /// commands.apply(&mut world).unwrap();
    /// assert!(world.is_empty());
    /// ```
    pub fn run(&mut self, f: impl FnOnce(&mut World) + Send + 'static) {
        self.push(move |world| {
            f(world);
            Ok(())
        });
    }

    /// Moves every command of `other` to the end of this buffer.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// let mut a = mosaic::CommandBuffer::new(&world);
    /// let mut b = mosaic::CommandBuffer::new(&world);
    /// b.spawn(());
    /// a.append(&mut b);
    /// assert_eq!((a.len(), b.len()), (1, 0));
    /// ```
    pub fn append(&mut self, other: &mut CommandBuffer) {
        assert_eq!(
            self.world, other.world,
            "command buffers belong to different worlds"
        );
        self.commands.append(&mut other.commands);
        self.spawned.append(&mut other.spawned);
    }

    /// Drops every command unapplied, as after a panic, for `world` (the
    /// world the buffer was made for): the ids of its spawn commands (held,
    /// never live) are given up. A panic while dropping or despawning is
    /// not raised: this runs while another panic is under way.
    pub(crate) fn discard(&mut self, world: &mut World) {
        debug_assert!(self.world == world.id());
        let commands = std::mem::take(&mut self.commands);
        let spawned = std::mem::take(&mut self.spawned);
        let _ = catch_unwind(AssertUnwindSafe(move || drop(commands)));
        let (live, unborn): (Vec<Entity>, Vec<Entity>) =
            spawned.into_iter().partition(|&e| world.contains(e));
        self.fresh.release(unborn);
        for entity in live {
            let _ = catch_unwind(AssertUnwindSafe(|| despawn_if_empty(world, entity)));
        }
    }

    fn push(
        &mut self,
        command: impl FnOnce(&mut World) -> Result<(), CommandError> + Send + 'static,
    ) {
        self.commands.push(command);
    }

    /// [`CommandBuffer::apply`] under hecs's name: applies every command
    /// in order, reporting those whose entity was gone.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let mut commands = CommandBuffer::new(&world);
    /// let e = commands.spawn(A);
    /// commands.run_on(&mut world).unwrap();
    /// assert!(world.has::<A>(e));
    /// ```
    pub fn run_on(&mut self, world: &mut World) -> Result<(), CommandErrors> {
        self.apply(world)
    }

    /// Applies every command in the order recorded, leaving the buffer empty
    /// and ready for reuse. Commands whose entity is gone are skipped and
    /// reported together; the others still apply.
    ///
    /// Panics if `world` is not the world the buffer was made for. If a
    /// command panics, the rest still apply and the first panic is re-raised
    /// at the end.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let gone = world.spawn(());
    /// world.despawn(gone).unwrap();
    /// let mut commands = CommandBuffer::new(&world);
    /// commands.insert(gone, A);     // fails: the entity is gone
    /// let kept = commands.spawn(A); // still applies
    /// let errors = commands.apply(&mut world).unwrap_err();
    /// assert_eq!(errors.len(), 1);
    /// assert!(world.has::<A>(kept));
    /// ```
    pub fn apply(&mut self, world: &mut World) -> Result<(), CommandErrors> {
        assert!(
            self.world == world.id(),
            "command buffer made for world {:?} applied to world {:?}",
            self.world,
            world.id()
        );
        let mut errors = Vec::new();
        let mut panics = DeferredPanic::new();
        // Every command runs now; each spawn command sees to its own id.
        self.spawned.clear();
        let mut index = 0;
        self.commands.drain_with(|command| {
            panics.run(|| {
                if let Err(error) = command.run(world) {
                    errors.push((index, error));
                }
            });
            index += 1;
        });
        panics.resume();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(CommandErrors { errors })
        }
    }
}

/// Despawns `entity` if it is alive with no component: a spawn that never
/// happened (its `OnSpawn` observers saw it come to life; those of
/// `OnDespawn` see it go).
fn despawn_if_empty(world: &mut World, entity: Entity) {
    let Some(loc) = world.location(entity) else {
        return;
    };
    let empty = loc.archetype == ArchetypeId::EMPTY
        && !world
            .sparse_sets()
            .iter()
            .any(|(_, set)| set.contains(entity));
    if empty {
        // Cannot fail: the entity is alive.
        let _ = world.despawn(entity);
    }
}

/// Why one command could not apply.
///
/// # Example
/// ```
/// use mosaic::{CommandError, EntityError, World};
/// let mut world = World::new();
/// let e = world.spawn(());
/// world.despawn(e).unwrap();
/// let err = CommandError::from(EntityError::NoSuchEntity(e));
/// assert!(err.to_string().contains("does not exist"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommandError {
    /// The command's entity was gone.
    #[error(transparent)]
    Entity(#[from] EntityError),
    /// The entity lacked a component the command removes.
    #[error(transparent)]
    Component(#[from] ComponentError),
    /// A relation edit failed (an end was gone, or there was no such edge).
    #[error(transparent)]
    Relation(#[from] crate::relation::RelationError),
}

/// The commands of one buffer that could not apply, with their positions in
/// the buffer.
///
/// # Example
/// ```
/// let mut world = mosaic::World::new();
/// let e = world.spawn(());
/// let mut commands = mosaic::CommandBuffer::new(&world);
/// commands.despawn(e);
/// commands.despawn(e); // the second one fails
/// let errors = commands.apply(&mut world).unwrap_err();
/// assert_eq!(errors.iter().next().unwrap().0, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct CommandErrors {
    errors: Vec<(usize, CommandError)>,
}

impl CommandErrors {
    /// How many commands failed.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// let mut commands = mosaic::CommandBuffer::new(&world);
    /// commands.despawn(e);
    /// commands.despawn(e);
    /// assert_eq!(commands.apply(&mut world).unwrap_err().len(), 1);
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// Each failed command's position in the buffer and its error.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// let mut commands = mosaic::CommandBuffer::new(&world);
    /// commands.despawn(e);
    /// commands.despawn(e);
    /// let errors = commands.apply(&mut world).unwrap_err();
    /// let (position, _error) = errors.iter().next().unwrap();
    /// assert_eq!(*position, 1);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &(usize, CommandError)> {
        self.errors.iter()
    }
}

impl fmt::Display for CommandErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} command(s) could not apply:", self.errors.len())?;
        for (index, error) in &self.errors {
            write!(f, " [command {index}] {error};")?;
        }
        Ok(())
    }
}

/// Deferred structural changes from inside a system: the [`CommandBuffer`]
/// of that system, applied at the schedule's next sync point (after the
/// systems that ran with it).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Health(u32);
/// #[derive(Component)] struct Ai;
///
/// // The classic "destroy every entity that has Health and AI" spell.
/// fn smite(mut commands: Commands, q: Query<Entity, (With<Health>, With<Ai>)>) {
///     for e in q.iter() {
///         commands.despawn(e);
///     }
/// }
/// let mut world = World::new();
/// world.spawn((Health(3), Ai));
/// let player = world.spawn(Health(10));
/// world.run_system_once(smite);
/// assert_eq!(world.len(), 1);
/// assert!(world.contains(player));
/// ```
pub struct Commands<'w, 's> {
    pub(crate) world: &'w World,
    pub(crate) buffer: &'s mut CommandBuffer,
}

impl fmt::Debug for Commands<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Commands")
            .field("buffer", &self.buffer)
            .finish()
    }
}

impl Commands<'_, '_> {
    /// Records spawning an entity with `bundle`; returns its id, valid at
    /// once (reusing a freed index when one is left), so later commands of
    /// the same system may name it. The id depends on the systems' order
    /// only, never on the executor or thread timing: systems with
    /// `Commands` never run at the same time as one another.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Spark;
    /// let mut world = World::new();
    /// let e = world.run_system_once(|mut commands: Commands| commands.spawn(Spark));
    /// assert!(world.has::<Spark>(e));
    /// ```
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let entity = self.world.reserve_held_entity();
        self.buffer.spawn_reserved(entity, bundle);
        entity
    }

    /// Records despawning `entity`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| commands.despawn(e));
    /// assert!(!world.contains(e));
    /// ```
    pub fn despawn(&mut self, entity: Entity) {
        self.buffer.despawn(entity);
    }

    /// Records inserting `bundle` into `entity`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Ghost;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.run_system_once(move |mut commands: Commands| commands.insert(e, Ghost));
    /// assert!(world.has::<Ghost>(e));
    /// ```
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        self.buffer.insert(entity, bundle);
    }

    /// Records removing bundle `B` from `entity`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Ghost;
    /// let mut world = World::new();
    /// let e = world.spawn(Ghost);
    /// world.run_system_once(move |mut commands: Commands| commands.remove::<Ghost>(e));
    /// assert!(!world.has::<Ghost>(e));
    /// ```
    pub fn remove<B: Bundle>(&mut self, entity: Entity) {
        self.buffer.remove::<B>(entity);
    }

    /// Records adding the edge `source --R--> target` (see
    /// [`World::relate`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.run_system_once(move |mut commands: Commands| commands.relate(a, b, Likes));
    /// assert!(world.has_relation::<Likes>(a, b));
    /// ```
    pub fn relate<R: crate::Relationship>(&mut self, source: Entity, target: Entity, data: R) {
        self.buffer.relate(source, target, data);
    }

    /// Records removing the edge `source --R--> target` (see
    /// [`World::unrelate`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// world.run_system_once(move |mut commands: Commands| commands.unrelate::<Likes>(a, b));
    /// assert!(!world.has_relation::<Likes>(a, b));
    /// ```
    pub fn unrelate<R: crate::Relationship>(&mut self, source: Entity, target: Entity) {
        self.buffer.unrelate::<R>(source, target);
    }

    /// Records making `child` a child of `parent` (see [`World::add_child`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let (parent, child) = (world.spawn(()), world.spawn(()));
    /// world.run_system_once(move |mut commands: Commands| commands.add_child(parent, child));
    /// assert_eq!(world.children(parent), [child]);
    /// ```
    pub fn add_child(&mut self, parent: Entity, child: Entity) {
        self.buffer.add_child(parent, child);
    }

    /// Records spawning an entity with `bundle` as a child of `parent`;
    /// returns its id, valid at once. The spawn command of
    /// `(bundle, ChildOf(parent))`: one change, the child's `OnAdd` hooks
    /// and observers find its parent. If `parent` is gone when the command
    /// applies, nothing is spawned and the command reports the error.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// let child = world.run_system_once(move |mut commands: Commands| commands.spawn_child(parent, ()));
    /// assert_eq!(world.parent(child), Some(parent));
    /// ```
    pub fn spawn_child<B: Bundle>(&mut self, parent: Entity, bundle: B) -> Entity {
        self.spawn((bundle, ChildOf(parent)))
    }

    /// Records despawning `entity` and its descendants (see
    /// [`World::despawn_recursive`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// world.spawn_child(parent, ()).unwrap();
    /// world.run_system_once(move |mut commands: Commands| commands.despawn_recursive(parent));
    /// assert!(world.is_empty());
    /// ```
    pub fn despawn_recursive(&mut self, entity: Entity) {
        self.buffer.despawn_recursive(entity);
    }

    /// Records despawning `entity`'s descendants, keeping `entity` (see
    /// [`World::despawn_descendants`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// world.spawn_child(parent, ()).unwrap();
    /// world.run_system_once(move |mut commands: Commands| commands.despawn_descendants(parent));
    /// assert_eq!(world.len(), 1);
    /// ```
    pub fn despawn_descendants(&mut self, entity: Entity) {
        self.buffer.despawn_descendants(entity);
    }

    /// Records inserting resource `value`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.run_system_once(|mut commands: Commands| commands.insert_resource(5u8));
    /// assert_eq!(*world.resource::<u8>(), 5);
    /// ```
    pub fn insert_resource<R: Send + Sync + 'static>(&mut self, value: R) {
        self.buffer.insert_resource(value);
    }

    /// Records removing resource `R`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(5u8);
    /// world.run_system_once(|mut commands: Commands| commands.remove_resource::<u8>());
    /// assert!(!world.contains_resource::<u8>());
    /// ```
    pub fn remove_resource<R: Send + Sync + 'static>(&mut self) {
        self.buffer.remove_resource::<R>();
    }

    /// Records running `f` with the whole world.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.spawn(());
    /// world.run_system_once(|mut commands: Commands| commands.run(|w| w.clear()));
    /// assert!(world.is_empty());
    /// ```
    pub fn run(&mut self, f: impl FnOnce(&mut World) + Send + 'static) {
        self.buffer.run(f);
    }
}
