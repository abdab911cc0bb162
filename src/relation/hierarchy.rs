//! The hierarchy: [`ChildOf`] (a child has one parent), [`Children`] on the
//! parent, building, reparenting, recursive despawn, and parent-first order.

use std::any::{Any, TypeId};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use rustc_hash::FxHashMap;

use super::{Relation, RelationError, Relationship, Sources, Stamp};
use crate::bundle::Bundle;
use crate::component::CloneBehavior;
use crate::component::short_type_name;
use crate::entity::Entity;
use crate::error::{ComponentError, EntityError};
use crate::storage::DeferredPanic;
use crate::world::{EntityWorldMut, World};

/// The hierarchy relation: `child --ChildOf--> parent`, Bevy's spelling:
/// `ChildOf(parent)` names the parent. A `one` relation
/// (a child has at most one parent: relating it again reparents it); the
/// parent's [`Children`] lists its children. Acyclic
/// ([`Relationship::ACYCLIC`]): making an entity a child of itself or of
/// one of its descendants fails with [`RelationError::Cycle`] and changes
/// nothing. [`World::clone_entity`] of a child gives the copy the same
/// parent. Despawning a parent unparents
/// its children ([`OnTargetDespawn::Unrelate`](super::OnTargetDespawn));
/// [`World::despawn_recursive`] takes the whole subtree.
///
/// `ChildOf` is also a [`Bundle`] (not a component: the edge lives in the
/// relation's storage, [`Relation<ChildOf>`] on the child, [`Children`] on
/// the parent): `world.spawn((Sprite, ChildOf(ship)))`,
/// `commands.spawn((Sprite, ChildOf(ship)))` and
/// `world.insert(e, ChildOf(p))` (which reparents) make the edge as part of
/// the same change. The order: the entity's components go in (one
/// archetype move), then the edge is made (its own announcements:
/// `OnRelate`, the first child adding the parent's `Children`), then the
/// bundle's components are announced, so an `OnAdd` observer of another
/// component of the bundle finds the parent set. A parent that is not
/// alive, or (inserting) a parent that would close a cycle, is refused
/// before anything changes: [`World::insert`] returns
/// [`EntityError::Relation`], a command reports it, [`World::spawn`]
/// panics (it has no error to return) and spawns nothing. A bundle holding
/// two `ChildOf`s is refused as one naming a component type twice: a
/// panic the first time it is used, before anything changes.
/// `world.remove::<ChildOf>(e)` detaches the child and returns its old
/// `ChildOf` ([`World::remove_parent`]). `Query<&ChildOf>` (and
/// `Option<&ChildOf>`) reads a child's edge: the stored value, no lookup
/// beyond `&Relation<ChildOf>`'s. (`With<ChildOf>` is not a filter:
/// write `With<Relation<ChildOf>>`.)
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Tank;
/// #[derive(Component)] struct Turret;
/// let mut world = World::new();
/// let tank = world.spawn(Tank);
/// let turret = world.spawn((Turret, ChildOf(tank)));
/// assert_eq!(world.parent(turret), Some(tank));
/// assert_eq!(world.children(tank), [turret]);
/// // Queried as `&ChildOf` (the edge's stored value), as in Bevy.
/// let mut q = world.query::<(Entity, &ChildOf)>();
/// for (e, child_of) in q.iter(&world) {
///     assert_eq!((e, child_of.parent()), (turret, tank));
/// }
/// // The tank cannot become its turret's child: that would be a cycle.
/// assert!(matches!(
///     world.add_child(turret, tank),
///     Err(RelationError::Cycle { .. })
/// ));
/// assert!(world.insert(tank, ChildOf(turret)).is_err());
/// assert_eq!(world.parent(tank), None);
/// ```
///
/// The stored value cannot be changed in place (it would name another
/// entity than the edge's parent): reparent with an insert or `set_parent`.
/// ```compile_fail
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let parent = world.spawn(());
/// let child = world.spawn(ChildOf(parent));
/// world.relation_mut::<ChildOf>(child, parent);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChildOf(pub Entity);

impl ChildOf {
    /// The parent this names (Bevy's `ChildOf::parent`).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let ship = world.spawn(());
    /// assert_eq!(ChildOf(ship).parent(), ship);
    /// ```
    #[inline]
    pub fn parent(&self) -> Entity {
        self.0
    }
}

impl Relationship for ChildOf {
    const ONE: bool = true;
    /// No entity is its own ancestor: making a child of its own descendant
    /// fails with [`RelationError::Cycle`].
    const ACYCLIC: bool = true;

    /// A clone of a child is a child of the same parent.
    fn clone_behavior() -> CloneBehavior<Self> {
        CloneBehavior::Clone(Clone::clone)
    }

    /// The stored edge always names its target: `relate(c, p, ChildOf(q))`
    /// stores `ChildOf(p)`.
    #[inline]
    fn set_target(&mut self, target: Entity) {
        self.0 = target;
    }

    /// `relation_mut::<ChildOf>` does not build: a changed `.0` would name
    /// another entity than the edge's parent.
    const NAMES_TARGET: bool = true;
}

/// The children of a parent: `Sources<ChildOf>`, a component on every
/// entity with at least one child, readable as `&[Entity]`.
///
/// **Order.** Children are listed in the order they were added. Removing
/// one (unparenting, reparenting or despawning it) is O(1): the last child
/// takes its place, so the order of the others changes. Where the order
/// matters (UI, turn order), sort after the change with
/// [`World::sort_children_by_key`](crate::World::sort_children_by_key).
/// A rollback restore puts the saved order back.
///
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let parent = world.spawn(());
/// let [a, b, c] = [(); 3].map(|_| world.spawn_child(parent, ()).unwrap());
/// world.despawn(a).unwrap();
/// assert_eq!(world.get::<Children>(parent).unwrap().as_slice(), [c, b]); // the last took a's place
/// ```
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let parent = world.spawn(());
/// let kids: Vec<Entity> = (0..3).map(|_| world.spawn_child(parent, ()).unwrap()).collect();
/// let mut q = world.query::<(Entity, &Children)>();
/// let (p, children) = q.iter(&world).next().unwrap();
/// assert_eq!((p, children.len()), (parent, 3));
/// assert!(kids.iter().all(|k| children.contains(k)));
/// ```
pub type Children = Sources<ChildOf>;

/// What a sweep does with a root whose subtree holds an entity a relation
/// keeps alive ([`OnTargetDespawn::Refuse`](super::OnTargetDespawn::Refuse)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnRefused {
    /// Fail the whole sweep, changing nothing.
    Fail,
    /// Leave that root's subtree, whole; sweep the others.
    Keep,
}

impl World {
    /// The parent a [`ChildOf`] in `bundle` names for `child`, checked
    /// before anything changes: alive, and not `child` itself or one of its
    /// descendants. `None` for a bundle without one (a constant test).
    #[inline]
    pub(crate) fn bundle_parent<B: Bundle>(
        &self,
        bundle: &B,
        child: Entity,
    ) -> Result<Option<Entity>, RelationError> {
        if !B::HAS_PARENT {
            return Ok(None);
        }
        let Some(parent) = bundle.parent_in_bundle() else {
            return Ok(None);
        };
        if !self.contains(parent) {
            return Err(RelationError::NoSuchEntity(parent));
        }
        if self.reaches::<ChildOf>(parent, child) {
            return Err(RelationError::Cycle {
                entity: child,
                target: parent,
                relation: "ChildOf",
            });
        }
        Ok(Some(parent))
    }

    /// Makes the edge [`World::bundle_parent`] checked, once the bundle's
    /// components are in and before they are announced.
    #[inline]
    pub(crate) fn attach_bundle_parent(&mut self, child: Entity, parent: Option<Entity>) {
        if let Some(parent) = parent {
            // Checked before the bundle went in, and writing it ran no user
            // code that could despawn or reparent (hooks of replaced values
            // make no structural change): this cannot fail.
            let made = self.relate(child, parent, ChildOf(parent));
            debug_assert!(made.is_ok(), "checked parent: {made:?}");
        }
    }

    /// [`World::attach_bundle_parent`] in a change whose announcements
    /// follow: the commands the edge's own observers issue
    /// ([`OnRelate<ChildOf>`](super::OnRelate), a first child's
    /// `OnAdd<Children>`) are held until the change is whole and announced,
    /// so none of them (a despawn, say) runs between the edge and the
    /// bundle's hooks and observers. The change's flush applies them; if
    /// an observer of the edge panics, they are dropped, as a panicking
    /// announcement drops its own.
    pub(crate) fn attach_bundle_parent_announced(&mut self, child: Entity, parent: Option<Entity>) {
        if parent.is_none() {
            return;
        }
        self.make_edges_held(|world| world.attach_bundle_parent(child, parent));
    }

    /// Runs `make` (which makes edges of an entity whose change is
    /// announced next) with the commands its observers issue held until
    /// that change is whole and announced: the rule of
    /// [`World::attach_bundle_parent_announced`], for any edges (the
    /// copies [`World::clone_entity`] makes).
    pub(crate) fn make_edges_held(&mut self, make: impl FnOnce(&mut World)) {
        let held = self.hold_observer_commands();
        let made = catch_unwind(AssertUnwindSafe(|| make(self)));
        self.release_observer_commands(held);
        if let Err(payload) = made {
            self.discard_commands_on_panic(|_| resume_unwind(payload));
        }
    }

    /// [`World::remove`] of bundle `B`, which holds a [`ChildOf`]: only
    /// `ChildOf` alone is taken back ([`World::remove_parent`]).
    #[cold]
    pub(crate) fn remove_child_of<B: Bundle>(
        &mut self,
        entity: Entity,
    ) -> Result<B, ComponentError> {
        assert!(
            TypeId::of::<B>() == TypeId::of::<ChildOf>(),
            "remove `ChildOf` on its own (`world.remove::<ChildOf>(e)` or \
             `world.remove_parent(e)`), not inside bundle `{}`",
            short_type_name::<B>()
        );
        let parent = self.remove_parent(entity).map_err(|err| match err {
            RelationError::NoSuchEntity(e) => ComponentError::NoSuchEntity(e),
            _ => ComponentError::MissingComponent {
                entity,
                component: "ChildOf".to_owned(),
            },
        })?;
        let taken: Box<dyn Any> = Box::new(ChildOf(parent));
        Ok(*taken.downcast::<B>().expect("B is ChildOf"))
    }
}

impl World {
    /// Makes `child` a child of `parent` (reparenting it if it had
    /// another): `relate(child, parent, ChildOf(parent))`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let (a, b, child) = (world.spawn(()), world.spawn(()), world.spawn(()));
    /// world.add_child(a, child).unwrap();
    /// world.add_child(b, child).unwrap(); // reparented
    /// assert_eq!(world.parent(child), Some(b));
    /// assert!(world.children(a).is_empty());
    /// ```
    pub fn add_child(&mut self, parent: Entity, child: Entity) -> Result<(), RelationError> {
        self.relate(child, parent, ChildOf(parent))
    }

    /// Makes `child` a child of `parent`: [`World::add_child`] with the
    /// arguments the other way round.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let (parent, child) = (world.spawn(()), world.spawn(()));
    /// world.set_parent(child, parent).unwrap();
    /// assert_eq!(world.parent(child), Some(parent));
    /// ```
    pub fn set_parent(&mut self, child: Entity, parent: Entity) -> Result<(), RelationError> {
        self.relate(child, parent, ChildOf(parent))
    }

    /// Detaches `child` from its parent, which it returns (the child
    /// becomes a root and stays alive).
    ///
    /// Fails, changing nothing, if `child` has no parent.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let (parent, child) = (world.spawn(()), world.spawn(()));
    /// world.add_child(parent, child).unwrap();
    /// assert_eq!(world.remove_parent(child), Ok(parent));
    /// assert_eq!(world.parent(child), None);
    /// ```
    pub fn remove_parent(&mut self, child: Entity) -> Result<Entity, RelationError> {
        let Some(parent) = self.parent(child) else {
            return Err(if self.contains(child) {
                RelationError::NoTarget {
                    entity: child,
                    relation: "ChildOf",
                }
            } else {
                RelationError::NoSuchEntity(child)
            });
        };
        self.unrelate::<ChildOf>(child, parent)?;
        Ok(parent)
    }

    /// `child`'s parent, if it has one.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let root = world.spawn(());
    /// assert_eq!(world.parent(root), None);
    /// ```
    pub fn parent(&self, child: Entity) -> Option<Entity> {
        self.get_opt::<Relation<ChildOf>>(child)
            .map(Relation::target)
    }

    /// `parent`'s children (empty if none).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// let child = world.spawn_child(parent, ()).unwrap();
    /// assert_eq!(world.children(parent), [child]);
    /// ```
    pub fn children(&self, parent: Entity) -> &[Entity] {
        self.sources::<ChildOf>(parent)
    }

    /// Sorts `parent`'s [`Children`] by `key`, stably (see
    /// [`World::sort_sources_by_key`]): Bevy's `Children::sort_by_key`.
    ///
    /// Fails, changing nothing, if `parent` is not alive.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Slot(u32);
    /// let mut world = World::new();
    /// let bar = world.spawn(());
    /// let kids: Vec<Entity> = [2, 0, 1].map(|s| world.spawn_child(bar, Slot(s)).unwrap()).into();
    /// let slots: Vec<(Entity, u32)> = kids.iter().map(|&k| (k, world.get::<Slot>(k).unwrap().0)).collect();
    /// world.sort_children_by_key(bar, |k| slots.iter().find(|s| s.0 == k).unwrap().1).unwrap();
    /// assert_eq!(world.children(bar), [kids[1], kids[2], kids[0]]);
    /// ```
    pub fn sort_children_by_key<K: Ord>(
        &mut self,
        parent: Entity,
        key: impl FnMut(Entity) -> K,
    ) -> Result<(), RelationError> {
        self.sort_sources_by_key::<ChildOf, K>(parent, key)
    }

    /// `entity`'s ancestors through [`ChildOf`], nearest first: its parent,
    /// its parent's parent, and so on up to the root of its tree. Empty for
    /// a root, or an entity that is not alive. Lazy, O(depth) in all;
    /// [`ChildOf`] is acyclic, so the walk ends.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let tank = world.spawn(());
    /// let turret = world.spawn_child(tank, ()).unwrap();
    /// let gun = world.spawn_child(turret, ()).unwrap();
    /// assert_eq!(world.ancestors(gun).collect::<Vec<_>>(), [turret, tank]);
    /// assert_eq!(world.ancestors(tank).count(), 0);
    /// ```
    pub fn ancestors(&self, entity: Entity) -> impl Iterator<Item = Entity> + '_ {
        std::iter::successors(self.parent(entity), move |&e| self.parent(e))
    }

    /// The root of `entity`'s tree: its farthest [`ancestor`](World::ancestors),
    /// or `entity` itself if it has no parent (or is not alive).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let tank = world.spawn(());
    /// let turret = world.spawn_child(tank, ()).unwrap();
    /// let gun = world.spawn_child(turret, ()).unwrap();
    /// assert_eq!(world.root_ancestor(gun), tank);
    /// assert_eq!(world.root_ancestor(tank), tank);
    /// ```
    pub fn root_ancestor(&self, entity: Entity) -> Entity {
        self.ancestors(entity).last().unwrap_or(entity)
    }

    /// `entity`'s descendants through [`ChildOf`], breadth first: its
    /// children, then their children, and so on (each parent before its
    /// children; siblings in [`Children`] order). Not `entity` itself; empty
    /// if it has no children or is not alive. Lazy, with a queue of the
    /// entities met but not yet yielded (no recursion: any depth is fine).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let tank = world.spawn(());
    /// let turret = world.spawn_child(tank, ()).unwrap();
    /// let wheel = world.spawn_child(tank, ()).unwrap();
    /// let gun = world.spawn_child(turret, ()).unwrap();
    /// assert_eq!(world.descendants(tank).collect::<Vec<_>>(), [turret, wheel, gun]);
    /// assert_eq!(world.descendants(gun).count(), 0);
    /// ```
    pub fn descendants(&self, entity: Entity) -> impl Iterator<Item = Entity> + '_ {
        let mut queue: std::collections::VecDeque<Entity> =
            self.children(entity).iter().copied().collect();
        std::iter::from_fn(move || {
            let next = queue.pop_front()?;
            queue.extend(self.children(next));
            Some(next)
        })
    }

    /// Despawns every [`descendant`](World::descendants) of `entity`,
    /// keeping `entity` itself: one sweep, as [`World::despawn_recursive`]
    /// of all its children at once. The whole set of descendants is decided
    /// before anything goes, so a hook or observer cannot split it (a
    /// command of one despawning a child waits until the sweep is done, and
    /// finds it gone). The sources their relations doom
    /// ([`OnTargetDespawn::Despawn`](super::OnTargetDespawn::Despawn)) go
    /// after the sweep.
    /// Afterwards `entity` has no children.
    ///
    /// Fails, changing nothing, if `entity` is not alive, or if some
    /// descendant is the target of a relation whose policy is
    /// [`OnTargetDespawn::Refuse`](super::OnTargetDespawn::Refuse) from a
    /// source that stays ([`EntityError::DespawnRefused`]): every
    /// descendant is checked before any goes. A refusing source that goes
    /// in the same sweep (a descendant, or a source the descendants'
    /// relations doom) keeps nothing: the rule of every despawn, so the
    /// same graph gives the same world. A panic in user code (a `Drop`, a hook, an
    /// observer) does not stop the sweep: the first panic is raised once
    /// every descendant is gone.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let inventory = world.spawn(());
    /// let bag = world.spawn_child(inventory, ()).unwrap();
    /// world.spawn_child(bag, ()).unwrap();
    /// world.spawn_child(inventory, ()).unwrap();
    /// world.despawn_descendants(inventory).unwrap();
    /// assert!(world.children(inventory).is_empty());
    /// assert_eq!(world.len(), 1);
    /// ```
    pub fn despawn_descendants(&mut self, entity: Entity) -> Result<(), EntityError> {
        self.flush();
        if !self.contains(entity) {
            return Err(EntityError::NoSuchEntity(entity));
        }
        let children = self.children(entity).to_vec();
        self.despawn_subtrees(&children, OnRefused::Fail)
    }

    /// Spawns an entity with `bundle` as a child of `parent`: the spawn of
    /// `(bundle, ChildOf(parent))`, one change. The edge is made right
    /// after the components go in and before they are announced, so the
    /// child's `OnAdd`/`OnInsert` hooks and observers find its parent.
    ///
    /// Fails, spawning nothing, if `parent` is not alive. What the spawn's
    /// hooks and observers do afterwards (despawning the parent, say) is
    /// theirs, as after any spawn. Panics if `bundle` holds a [`ChildOf`]
    /// of its own (a bundle names its parent once).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Light;
    /// let mut world = World::new();
    /// let monster = world.spawn(());
    /// let light = world.spawn_child(monster, Light).unwrap();
    /// assert_eq!(world.parent(light), Some(monster));
    /// ```
    pub fn spawn_child<B: Bundle>(
        &mut self,
        parent: Entity,
        bundle: B,
    ) -> Result<Entity, RelationError> {
        self.flush();
        if !self.contains(parent) {
            return Err(RelationError::NoSuchEntity(parent));
        }
        Ok(self.spawn((bundle, ChildOf(parent))))
    }

    /// Despawns `root` and all its descendants (through [`ChildOf`]),
    /// children before their parents (as hooks and observers see it): one
    /// sweep, the subtree decided before any user code runs. [`World::despawn`]
    /// of a parent leaves its children, unparented; this is the form that
    /// takes them along (Bevy's plain `despawn` since 0.16).
    /// Iterative: a chain of any depth is
    /// fine. Each entity's other relations are cleaned up as by
    /// [`World::despawn`], and each [`ChildOf`] edge that goes is heard by
    /// [`OnUnrelate<ChildOf>`](super::OnUnrelate) observers as a despawn's
    /// would be (`root`'s edge to its parent with `root`, last).
    ///
    /// Fails, changing nothing, if `root` is not alive, or if some entity
    /// of the subtree is the target of a relation whose policy is
    /// [`OnTargetDespawn::Refuse`](super::OnTargetDespawn::Refuse) from a
    /// source that survives ([`EntityError::DespawnRefused`]). A refusing
    /// source that goes too (inside the subtree, or doomed by the
    /// subtree's relations, [`OnTargetDespawn::Despawn`](super::OnTargetDespawn::Despawn))
    /// keeps nothing, the rule of every despawn: the same graph gives the
    /// same world.
    ///
    /// A panic in user code (a value's `Drop`, a hook, an observer, such
    /// as an `OnUnrelate` one) does not stop the rest of the subtree going:
    /// the first panic is raised once every entity was despawned and the
    /// sources other relations doom went. An entity that stays (its own
    /// despawn stopped by a hook or observer, as it would stop
    /// [`World::despawn`]) loses its [`ChildOf`] edges to the entities that
    /// went: no edge ever names a dead entity. The commands hooks and
    /// observers queue meanwhile run once the whole subtree is gone, as
    /// after one despawn (so one giving a dying entity a new child finds
    /// it gone, and the newcomer stays a root).
    ///
    /// While no hook or observer is registered, nothing can watch the
    /// order, and the subtree goes in one batch: one walk that frees each
    /// entity as it goes, then one sweep of each storage, rather than an
    /// edit per entity (a 1,000,000-node chain took 1.7 to 1.8 times as
    /// long as 1,000,000 plain despawns; `cargo bench --bench relations`). The
    /// order in which component values are then dropped is unspecified.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let keep = world.spawn(());
    /// let root = world.spawn_child(keep, ()).unwrap();
    /// let mut last = root;
    /// for _ in 0..1000 {
    ///     last = world.spawn_child(last, ()).unwrap();
    /// }
    /// world.despawn_recursive(root).unwrap();
    /// assert!(!world.contains(last));
    /// assert_eq!(world.len(), 1);
    /// assert!(world.children(keep).is_empty());
    /// ```
    pub fn despawn_recursive(&mut self, root: Entity) -> Result<(), EntityError> {
        self.flush();
        if !self.contains(root) {
            return Err(EntityError::NoSuchEntity(root));
        }
        self.despawn_subtrees(&[root], OnRefused::Fail)
    }

    /// The sweep of [`World::despawn_recursive`], [`World::despawn_descendants`]
    /// and state scoping: despawns each of `roots` (alive, checked by the
    /// caller) with all its descendants, as one operation, in three steps.
    ///
    /// 1. Decide: the doomed set is the roots' subtrees and what their
    ///    relations doom, read from the graph before any user code runs
    ///    ([`World::decide_sweep`]); a subtree holding an entity its
    ///    relations keep alive ([`OnTargetDespawn::Refuse`](super::OnTargetDespawn::Refuse)
    ///    from a source outside the doomed set) fails the whole sweep or
    ///    stays, by `on_refused`.
    /// 2. Announce and remove, children before parents (pre-order
    ///    reversed), each entity as by [`World::despawn`]; or, with no hook
    ///    or observer anywhere, all in one quiet batch. No observer's
    ///    command runs until every doomed entity was visited, and a panic
    ///    of user code is kept while the sweep goes on.
    /// 3. The sources other relations' policies doom go (see
    ///    [`World::drain_doomed_sources`]), then the observers' commands
    ///    have run, then the first panic is raised.
    pub(crate) fn despawn_subtrees(
        &mut self,
        roots: &[Entity],
        on_refused: OnRefused,
    ) -> Result<(), EntityError> {
        self.flush();
        self.register_relation::<ChildOf>();
        let mut roots = roots.to_vec();
        roots.retain(|&r| self.contains(r));
        // Step 1: decide, by the rule of every despawn
        // ([`World::decide_sweep`]): the subtrees go, with the sources
        // their relations' policies doom, and only a pin from outside all
        // that keeps an entity alive (a pin between two entities of the
        // sweep keeps nothing, whatever order the edges were made in).
        // Nothing may change if a subtree is refused; or the refused
        // subtrees are left out, whole, which shrinks the set: repeated
        // until no root is refused.
        if self.relations().any_refuse() {
            loop {
                let mut named = Vec::new();
                let mut seen = rustc_hash::FxHashSet::default();
                for &r in &roots {
                    for e in std::iter::once(r).chain(self.descendants(r)) {
                        if seen.insert(e) {
                            named.push(e);
                        }
                    }
                }
                let refused = self.decide_sweep(&named, Vec::new()).refused;
                let Some(&(entity, relation)) = refused.first() else {
                    break;
                };
                match on_refused {
                    OnRefused::Fail => {
                        return Err(EntityError::DespawnRefused { entity, relation });
                    }
                    OnRefused::Keep => {
                        let refused: rustc_hash::FxHashSet<Entity> =
                            refused.iter().map(|&(e, _)| e).collect();
                        roots.retain(|&r| {
                            !std::iter::once(r)
                                .chain(self.descendants(r))
                                .any(|e| refused.contains(&e))
                        });
                    }
                }
            }
        }
        if roots.is_empty() {
            return Ok(());
        }
        // With no hook or observer (any of them makes the lifecycle
        // active), nothing can watch the subtree go: it goes in one batch.
        let batch = !self.components().lifecycle_active();
        // Otherwise, pre-order: each parent before its children, each
        // entity once (a root may lie below another).
        let mut order = Vec::new();
        if !batch {
            let mut seen: Option<rustc_hash::FxHashSet<Entity>> = None;
            if roots.len() == 1 {
                order.push(roots[0]);
            } else {
                let seen = seen.insert(rustc_hash::FxHashSet::default());
                order.extend(roots.iter().copied().filter(|&r| seen.insert(r)));
            }
            let (_, children_id) = self.relations().ids::<ChildOf>().expect("registered");
            let set = self.sparse_sets().get(children_id);
            let first = roots[0];
            let mut i = 0;
            while i < order.len() {
                let e = order[i];
                if let Some(children) = set.and_then(|set| set.get::<Children>(e)) {
                    match &mut seen {
                        // A `one` relation admits a cycle only through a
                        // root (each entity has one parent), so skipping
                        // the root ends every walk.
                        None => order.extend(children.iter().copied().filter(|&c| c != first)),
                        Some(seen) => {
                            order.extend(children.iter().copied().filter(|&c| seen.insert(c)))
                        }
                    }
                }
                i += 1;
            }
        }
        // In a batch, only the roots' own edges to their parents need
        // unlinking: every other `ChildOf` edge of the subtrees joins two
        // entities that die here, so their lists are dropped rather than
        // fixed entry by entry. Their other relations are detached as
        // usual. Unless user code that can read the world runs on the way
        // (a hook, any observer): an `OnUnrelate<ChildOf>` observer must
        // hear every edge that goes, and none may find a dead child in a
        // list. Then each entity's edges are detached as by `despawn`
        // (children first, so each edge goes with its child; a root's edge
        // to its parent with the root, last), panics and all.
        if batch {
            for &root in &roots {
                if let Some(parent) = self.parent(root) {
                    self.unrelate::<ChildOf>(root, parent)
                        .expect("the edge was just read");
                }
            }
        }
        let version = self.relations().version::<ChildOf>();
        let skip = batch.then(|| self.relations_mut().skip_during::<ChildOf>());
        // No hook's or observer's command runs until the whole subtree is
        // gone: one operation, as one despawn.
        let held = self.hold_observer_commands();
        let mut caught = None;
        if batch {
            if let Err(payload) =
                catch_unwind(AssertUnwindSafe(|| self.despawn_tree_quietly(&roots)))
            {
                caught = Some(payload);
            }
        } else {
            // Step 2, children first.
            for &e in order.iter().rev() {
                // Refusals were checked above, and the sources other
                // relations' policies doom are despawned once, after the
                // subtree. A panic is kept for the end: every entity of
                // the subtree must go.
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.despawn_now(e))) {
                    caught.get_or_insert(payload);
                }
            }
        }
        if let Some(previous) = skip {
            // The skip was right if every entity of the subtree went and
            // no hook or observer related or unrelated `ChildOf` meanwhile
            // (which bumps its version); otherwise some edges may join a
            // survivor to an entity that went.
            let disturbed = caught.is_some() || self.relations().version::<ChildOf>() != version;
            self.relations_mut().end_skip(previous);
            if disturbed {
                self.edge_change(|world, panics| world.unlink_dead_relatives(panics));
            }
        }
        self.release_observer_commands(held);
        // The skipped cleanup bumped no version: the hierarchy changed.
        self.relations_mut().bump::<ChildOf>();
        // Step 3: the sources other relations doom go, then the
        // observers' commands, then the first panic.
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.drain_doomed_sources())) {
            caught.get_or_insert(payload);
        }
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.flush_observer_commands())) {
            caught.get_or_insert(payload);
        }
        if let Some(payload) = caught {
            std::panic::resume_unwind(payload);
        }
        Ok(())
    }

    /// Removes every [`ChildOf`] edge with a dead end, silently (as the
    /// cleanup a recursive despawn skipped would have): a survivor's edge
    /// to a dead parent, a survivor's entries for dead children. Linear in
    /// the world's `ChildOf` edges; only run when a recursive despawn was
    /// disturbed (see there). Panics of user code (hooks and observers of
    /// the relation's components) go to `panics`.
    fn unlink_dead_relatives(&mut self, panics: &mut DeferredPanic) {
        let Some((relation, children)) = self.relations().ids::<ChildOf>() else {
            return;
        };
        let holders = |world: &World, id| {
            world
                .sparse_sets()
                .get(id)
                .map_or_else(Vec::new, |set| set.entities().to_vec())
        };
        for child in holders(self, relation) {
            let parent = self
                .get_opt::<Relation<ChildOf>>(child)
                .map(|r| r.targets()[0]);
            if parent.is_some_and(|p| !self.contains(p)) {
                self.remove_edge_part::<Relation<ChildOf>>(child, panics)
                    .expect("read just above");
            }
        }
        for parent in holders(self, children) {
            // Last first: the entry a removal swaps into place is then one
            // already looked at, a live one.
            let mut j = self.get_opt::<Children>(parent).map_or(0, |c| c.len());
            while j > 0 {
                j -= 1;
                let child = self.get_opt::<Children>(parent).map(|c| c.as_slice()[j]);
                if child.is_some_and(|c| !self.contains(c)) {
                    self.remove_source_entry::<ChildOf>(parent, j, panics);
                }
            }
        }
    }

    /// Every entity with an `R` edge, each after all its targets (for
    /// [`ChildOf`]: parents before children, roots first): the order for
    /// propagating something down a hierarchy. Entities on a cycle of `R`
    /// edges (which no `one` relation built by a tree has) are left out,
    /// and so is every entity that reaches one through its targets: none
    /// of them can come after all its targets.
    /// Builds the order afresh; [`ParentFirst`] caches it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let root = world.spawn(());
    /// let a = world.spawn_child(root, ()).unwrap();
    /// let b = world.spawn_child(a, ()).unwrap();
    /// let c = world.spawn_child(root, ()).unwrap();
    /// let order = world.parent_first::<ChildOf>();
    /// assert_eq!(order.len(), 4);
    /// assert_eq!(order[0], root);
    /// let pos = |e| order.iter().position(|&x| x == e).unwrap();
    /// assert!(pos(a) < pos(b) && pos(root) < pos(c));
    /// ```
    pub fn parent_first<R: Relationship>(&self) -> Vec<Entity> {
        let mut order = Vec::new();
        parent_first_into::<R>(self, &mut order);
        order
    }
}

/// Kahn's algorithm over `R`'s edges: roots (targets with no target of
/// their own) first, then each source once all its targets are placed.
fn parent_first_into<R: Relationship>(world: &World, order: &mut Vec<Entity>) {
    order.clear();
    let Some((relation_id, sources_id)) = world.relations().ids::<R>() else {
        return;
    };
    let Some(targets_set) = world.sparse_sets().get(sources_id) else {
        return;
    };
    // Roots: entities with sources and no target.
    for &e in targets_set.entities() {
        if !world.contains_id(e, relation_id) {
            order.push(e);
        }
    }
    // Entities still waiting for some of their targets: how many.
    let mut waiting: FxHashMap<Entity, u32> = FxHashMap::default();
    let mut i = 0;
    while i < order.len() {
        let e = order[i];
        i += 1;
        for &s in world.sources::<R>(e) {
            let left = if R::ONE {
                0
            } else {
                let n = waiting
                    .entry(s)
                    .or_insert_with(|| world.targets::<R>(s).len() as u32);
                *n -= 1;
                *n
            };
            if left == 0 {
                order.push(s);
            }
        }
    }
}

/// A cached parent-first order of relation `R` (see
/// [`World::parent_first`]), rebuilt only when the relation changed since
/// the last build. Keep one (in a resource, a `Local`, or a struct) and ask
/// it every frame: for transform propagation.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Clone, Copy)] struct Local(f32);
/// #[derive(Component, Clone, Copy)] struct Global(f32);
/// let mut world = World::new();
/// let root = world.spawn((Local(1.0), Global(0.0)));
/// let child = world.spawn_child(root, (Local(2.0), Global(0.0))).unwrap();
/// let grandchild = world.spawn_child(child, (Local(3.0), Global(0.0))).unwrap();
///
/// let mut order = ParentFirst::<ChildOf>::new();
/// for _frame in 0..2 {
///     // The slice borrows `order`, not the world: no copy needed.
///     for &e in order.get(&world) {
///         let parent = world.parent(e).map_or(0.0, |p| world.get::<Global>(p).unwrap().0);
///         let local = world.get::<Local>(e).unwrap().0;
///         world.get_mut::<Global>(e).unwrap().0 = parent + local;
///     }
/// }
/// assert_eq!(world.get::<Global>(grandchild).unwrap().0, 6.0);
/// assert_eq!(order.rebuilds(), 1); // unchanged relation: built once
/// ```
pub struct ParentFirst<R: Relationship> {
    order: Vec<Entity>,
    stamp: Option<Stamp>,
    rebuilds: u64,
    relation: PhantomData<fn() -> R>,
}

impl<R: Relationship> Default for ParentFirst<R> {
    fn default() -> Self {
        ParentFirst {
            order: Vec::new(),
            stamp: None,
            rebuilds: 0,
            relation: PhantomData,
        }
    }
}

impl<R: Relationship> std::fmt::Debug for ParentFirst<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParentFirst")
            .field("len", &self.order.len())
            .field("rebuilds", &self.rebuilds)
            .finish()
    }
}

impl<R: Relationship> ParentFirst<R> {
    /// An empty cache; the first [`get`](Self::get) builds it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let order = ParentFirst::<ChildOf>::new();
    /// assert_eq!(order.rebuilds(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The order for `world`: the cached one if no `R` edge changed since
    /// it was built (for this world), else a fresh build.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let root = world.spawn(());
    /// let child = world.spawn_child(root, ()).unwrap();
    /// let mut order = ParentFirst::<ChildOf>::new();
    /// assert_eq!(order.get(&world), [root, child]);
    /// world.remove_parent(child).unwrap();
    /// assert!(order.get(&world).is_empty());
    /// assert_eq!(order.rebuilds(), 2);
    /// ```
    pub fn get(&mut self, world: &World) -> &[Entity] {
        let stamp = Stamp {
            world: world.id(),
            version: world.relation_version::<R>(),
        };
        if self.stamp != Some(stamp) {
            parent_first_into::<R>(world, &mut self.order);
            self.stamp = Some(stamp);
            self.rebuilds += 1;
        }
        &self.order
    }

    /// Calls `f` with the world and each entity of the order (refreshed
    /// first, as by [`get`](Self::get)), parents first: the world is lent
    /// to `f` mutably and the order is not copied. For an order kept
    /// outside the world, `for &e in order.get(&world)` does the same;
    /// this is the form for one taken out of a resource or passed around
    /// with the world. If `f` edits `R`'s edges the walk goes on over the
    /// order it started with (entities `f` despawned are still visited:
    /// check [`World::contains`]); the next call rebuilds it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Depth(u32);
    /// let mut world = World::new();
    /// let root = world.spawn(Depth(0));
    /// let child = world.spawn_child(root, Depth(0)).unwrap();
    /// let grandchild = world.spawn_child(child, Depth(0)).unwrap();
    /// let mut order = ParentFirst::<ChildOf>::new();
    /// order.visit(&mut world, |world, e| {
    ///     let depth = world.parent(e).map_or(0, |p| world.get::<Depth>(p).unwrap().0 + 1);
    ///     world.get_mut::<Depth>(e).unwrap().0 = depth;
    /// });
    /// assert_eq!(world.get::<Depth>(grandchild).unwrap().0, 2);
    /// ```
    pub fn visit(&mut self, world: &mut World, mut f: impl FnMut(&mut World, Entity)) {
        for &e in self.get(world) {
            f(world, e);
        }
    }

    /// How many times the order was built.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let world = World::new();
    /// let mut order = ParentFirst::<ChildOf>::new();
    /// order.get(&world);
    /// order.get(&world);
    /// assert_eq!(order.rebuilds(), 1);
    /// ```
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }
}

/// Spawns children of one parent: the argument of
/// [`EntityWorldMut::with_children`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Name(&'static str);
/// let mut world = World::new();
/// let player = world
///     .spawn_entity(Name("player"))
///     .with_children(|p| {
///         p.spawn(Name("sword"));
///         p.spawn(Name("shield"));
///     })
///     .id();
/// assert_eq!(world.children(player).len(), 2);
/// ```
pub struct ChildSpawner<'w> {
    world: &'w mut World,
    parent: Entity,
}

impl std::fmt::Debug for ChildSpawner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSpawner")
            .field("parent", &self.parent)
            .finish()
    }
}

impl ChildSpawner<'_> {
    /// Spawns a child with `bundle`; returns it. One change, as
    /// [`World::spawn_child`]: the child's `OnAdd` hooks and observers find
    /// its parent. If the parent is gone (a hook or observer of an earlier
    /// child despawned it), the child is spawned as a root.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let mut kid = None;
    /// let p = world.spawn_entity(()).with_children(|p| kid = Some(p.spawn(()))).id();
    /// assert_eq!(world.parent(kid.unwrap()), Some(p));
    /// ```
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        // The parent is alive (checked by `with_children`) unless a hook
        // or observer of an earlier child despawned it.
        if self.world.contains(self.parent) {
            self.world.spawn((bundle, ChildOf(self.parent)))
        } else {
            self.world.spawn(bundle)
        }
    }

    /// Spawns a child and gives its own spawner to `f`, for grandchildren.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let root = world.spawn_entity(()).with_children(|p| {
    ///     p.spawn_with_children((), |c| { c.spawn(()); });
    /// }).id();
    /// let child = world.children(root)[0];
    /// assert_eq!(world.children(child).len(), 1);
    /// ```
    pub fn spawn_with_children<B: Bundle>(
        &mut self,
        bundle: B,
        f: impl FnOnce(&mut ChildSpawner<'_>),
    ) -> Entity {
        let child = self.spawn(bundle);
        f(&mut ChildSpawner {
            world: self.world,
            parent: child,
        });
        child
    }

    /// The parent the children get.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let p = world.spawn_entity(()).with_children(|s| { let _ = s.parent(); }).id();
    /// # let _ = p;
    /// ```
    pub fn parent(&self) -> Entity {
        self.parent
    }
}

impl EntityWorldMut<'_> {
    /// Spawns children of this entity through `f`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// world.entity_mut(e).unwrap().with_children(|p| { p.spawn(()); });
    /// assert_eq!(world.children(e).len(), 1);
    /// ```
    pub fn with_children(&mut self, f: impl FnOnce(&mut ChildSpawner<'_>)) -> &mut Self {
        let parent = self.id();
        if self.world().contains(parent) {
            f(&mut ChildSpawner {
                world: self.world_mut_internal(),
                parent,
            });
        }
        self
    }

    /// Makes `child` a child of this entity (see [`World::add_child`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let child = world.spawn(());
    /// let parent = world.spawn_entity(()).add_child(child).unwrap().id();
    /// assert_eq!(world.parent(child), Some(parent));
    /// ```
    pub fn add_child(&mut self, child: Entity) -> Result<&mut Self, RelationError> {
        let parent = self.id();
        self.world_mut_internal().add_child(parent, child)?;
        Ok(self)
    }

    /// Despawns this entity's descendants, keeping it (see
    /// [`World::despawn_descendants`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let mut e = world.spawn_entity(());
    /// e.with_children(|p| { p.spawn(()); p.spawn(()); });
    /// e.despawn_descendants().unwrap();
    /// let e = e.id();
    /// assert!(world.children(e).is_empty());
    /// assert_eq!(world.len(), 1);
    /// ```
    pub fn despawn_descendants(&mut self) -> Result<&mut Self, EntityError> {
        let id = self.id();
        self.world_mut_internal().despawn_descendants(id)?;
        Ok(self)
    }

    /// Despawns this entity and its descendants (see
    /// [`World::despawn_recursive`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn_entity(()).with_children(|p| { p.spawn(()); }).id();
    /// world.entity_mut(e).unwrap().despawn_recursive().unwrap();
    /// assert!(world.is_empty());
    /// ```
    pub fn despawn_recursive(self) -> Result<(), EntityError> {
        let id = self.id();
        self.into_world_mut().despawn_recursive(id)
    }
}

impl<'w, 's, 'c, F: crate::QueryFilter> crate::Query<'w, 's, &'c Children, F> {
    /// `entity`'s descendants, breadth first (as
    /// [`World::descendants`]), read through this `Query<&Children>`: the
    /// form a system uses, Bevy's `iter_descendants`. Not `entity`
    /// itself; entities the query does not match (filtered out) end their
    /// branch.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let tank = world.spawn(());
    /// let turret = world.spawn_child(tank, ()).unwrap();
    /// let wheel = world.spawn_child(tank, ()).unwrap();
    /// let gun = world.spawn_child(turret, ()).unwrap();
    /// let all = world.run_system_once(move |q: Query<&Children>| q.iter_descendants(tank).collect::<Vec<_>>());
    /// assert_eq!(all, [turret, wheel, gun]);
    /// ```
    pub fn iter_descendants(&self, entity: Entity) -> impl Iterator<Item = Entity> + '_ {
        let children = |e: Entity| self.get(e).map(|c| c.iter().copied());
        let mut queue: std::collections::VecDeque<Entity> =
            children(entity).into_iter().flatten().collect();
        std::iter::from_fn(move || {
            let next = queue.pop_front()?;
            if let Ok(grandchildren) = children(next) {
                queue.extend(grandchildren);
            }
            Some(next)
        })
    }
}

impl<'w, 's, 'c, F: crate::QueryFilter> crate::Query<'w, 's, &'c ChildOf, F> {
    /// `entity`'s ancestors, nearest first (as [`World::ancestors`]), read
    /// through this `Query<&ChildOf>`: Bevy's `iter_ancestors`. Not
    /// `entity` itself; an ancestor the query does not match (filtered
    /// out) ends the walk after it. [`ChildOf`] is acyclic, so it ends.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let tank = world.spawn(());
    /// let turret = world.spawn(ChildOf(tank));
    /// let gun = world.spawn(ChildOf(turret));
    /// let up = world.run_system_once(move |q: Query<&ChildOf>| q.iter_ancestors(gun).collect::<Vec<_>>());
    /// assert_eq!(up, [turret, tank]);
    /// ```
    pub fn iter_ancestors(&self, entity: Entity) -> impl Iterator<Item = Entity> + '_ {
        let parent = |e: Entity| self.get(e).ok().map(|c| c.parent());
        std::iter::successors(parent(entity), move |&e| parent(e))
    }
}
