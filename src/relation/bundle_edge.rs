//! [`ChildOf`]`(parent)` as a bundle: the hierarchy edge a spawn or an
//! insert makes, as Bevy users write it (`spawn((Sprite, ChildOf(ship)))`).
//!
//! `ChildOf` is not a component: the edge lives in the hierarchy's two
//! sparse components, which only the relation methods edit. So its
//! [`Bundle`] implementation (in `bundle`, with the trait's other unsafe
//! implementations) writes nothing and reports the edge instead
//! ([`Bundle::RELATES`], [`Bundle::edges`]), and a spawn or insert of a
//! bundle holding it takes three steps, each path calling here once:
//!
//! 1. the checks, before anything changes: the entity and the parent
//!    alive, no cycle (an insert into an existing entity may try to make
//!    it a child of its own descendant), `ChildOf` named once;
//! 2. the bundle's components move in, as for any bundle (one move);
//! 3. the edge is made, then the change is announced. The world keeps the
//!    edge to make ([`PendingEdge`], in `Relations`) while step 2 runs;
//!    the first announcement of the change (`World::announce_insert`, the
//!    start of every spawn's and insert's hooks and observers) makes it
//!    before any hook or observer runs. If the change announces nothing,
//!    the edge is made right after it.
//!
//! The edge's own announcements (`OnAdd<Relation<ChildOf>>`, a first
//! child's `OnAdd<Children>` on the parent, [`OnRelate<ChildOf>`]) run
//! first, and the commands their observers issue wait with the change's
//! own until the whole change is announced. Nothing in step 2 runs user
//! code that can reach the world (required components' constructors and
//! drops of replaced values cannot; `on_replace` hooks only queue
//! commands), so step 1's checks still hold at step 3.
//!
//! [`OnRelate<ChildOf>`]: super::OnRelate

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::{ChildOf, RelationError};
use crate::bundle::{Bundle, BundleEdges};
use crate::component::short_type_name as short_bundle_name;
use crate::entity::Entity;
use crate::error::{ComponentError, EntityError};
use crate::world::World;

/// The edge a spawn or insert under way is to make once its components
/// are in (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingEdge {
    /// The entity inserted into; `None` for a spawn (the entity is not
    /// allocated yet: the spawn's announcement is the first to come).
    child: Option<Entity>,
    parent: Entity,
}

impl World {
    /// The parent that `bundle` (a relating bundle) names, checked for a
    /// child `child` (`None`: an entity about to be spawned, which can
    /// close no cycle). Changes nothing (but registers `ChildOf`).
    ///
    /// Panics if the bundle names `ChildOf` twice, as a bundle naming a
    /// component twice does.
    fn bundle_parent<B: Bundle>(
        &mut self,
        bundle: &B,
        child: Option<Entity>,
    ) -> Result<Entity, RelationError> {
        let mut edges = BundleEdges::default();
        bundle.edges(&mut edges);
        assert!(
            !edges.repeated(),
            "bundle `{}` contains `ChildOf` more than once; an entity has one parent",
            short_bundle_name::<B>()
        );
        let parent = edges.parent().expect("a relating bundle names a parent");
        match child {
            Some(child) => self.check_relate::<ChildOf>(child, parent)?,
            None if !self.contains(parent) => return Err(RelationError::NoSuchEntity(parent)),
            None => self.register_relation::<ChildOf>(),
        }
        Ok(parent)
    }

    /// [`World::spawn`] of a bundle holding `ChildOf(parent)`: the
    /// components in one move, then the edge, then the announcements.
    ///
    /// Panics, changing nothing, if the parent is not alive.
    pub(crate) fn spawn_relating<B: Bundle>(&mut self, bundle: B) -> Entity {
        // First: the flush may announce reserved entities coming to life,
        // and the edge must wait for this spawn's announcement.
        self.flush();
        let parent = match self.bundle_parent(&bundle, None) {
            Ok(parent) => parent,
            Err(err) => panic!(
                "World::spawn of `{}`: {err}; nothing was spawned (check the parent with \
                 `World::contains`, or use `World::spawn_child`, which returns a `Result`)",
                short_bundle_name::<B>()
            ),
        };
        let edge = PendingEdge {
            child: None,
            parent,
        };
        self.with_pending_edge(edge, |world| world.spawn_bundle(bundle))
    }

    /// [`World::insert`] of a bundle holding `ChildOf(parent)`: the
    /// components in one move, then the edge (reparenting the entity if
    /// it had a parent), then the announcements.
    ///
    /// Fails, changing nothing, if either entity is not alive or the edge
    /// would close a cycle.
    pub(crate) fn insert_relating<B: Bundle>(
        &mut self,
        entity: Entity,
        bundle: B,
    ) -> Result<(), EntityError> {
        self.flush();
        if !self.contains(entity) {
            return Err(EntityError::NoSuchEntity(entity));
        }
        let parent = self
            .bundle_parent(&bundle, Some(entity))
            .map_err(EntityError::Relation)?;
        let edge = PendingEdge {
            child: Some(entity),
            parent,
        };
        self.with_pending_edge(edge, |world| {
            world.insert_bundle(entity, bundle).expect("checked alive");
            entity
        });
        Ok(())
    }

    /// `DynamicBundle::spawn_placed` of a bundle holding `ChildOf(parent)`
    /// ([`World::spawn_at`]): as [`World::spawn_relating`] for `entity`,
    /// just placed, empty and unannounced.
    ///
    /// Panics if the parent is not alive or is `entity`, after removing
    /// `entity` again (it never existed).
    pub(crate) fn spawn_placed_relating<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        let parent = match self.bundle_parent(&bundle, Some(entity)) {
            Ok(parent) => parent,
            Err(err) => {
                // Placed with no component: nothing to drop or announce.
                let _ = self.despawn_quietly(entity);
                panic!(
                    "World::spawn_at({entity:?}) of `{}`: {err}; nothing was spawned",
                    short_bundle_name::<B>()
                )
            }
        };
        let edge = PendingEdge {
            child: Some(entity),
            parent,
        };
        self.with_pending_edge(edge, |world| {
            world.spawn_bundle_placed(entity, bundle);
            entity
        });
    }

    /// Runs `change` (a spawn or insert, returning its entity) with `edge`
    /// pending: made by the change's first announcement, or after it if
    /// it announces nothing. If `change` panics before its announcement,
    /// the edge is not made (as the entity got nothing, or is gone).
    fn with_pending_edge(
        &mut self,
        edge: PendingEdge,
        change: impl FnOnce(&mut World) -> Entity,
    ) -> Entity {
        debug_assert!(self.relations().bundle_edge.is_none());
        self.relations_mut().bundle_edge = Some(edge);
        let done = catch_unwind(AssertUnwindSafe(|| change(self)));
        let left = self.relations_mut().bundle_edge.take();
        let entity = done.unwrap_or_else(|payload| resume_unwind(payload));
        if let Some(edge) = left {
            self.make_bundle_edge(entity, edge.parent);
        }
        entity
    }

    /// The start of every announcement of a spawn or insert
    /// (`World::announce_insert`): makes the pending edge if it is this
    /// change's, holding the commands its observers issue until the whole
    /// change is announced.
    #[inline]
    pub(crate) fn announce_bundle_edge(&mut self, entity: Entity, spawned: bool) {
        let Some(edge) = self.relations().bundle_edge else {
            return;
        };
        let mine = match edge.child {
            Some(child) => child == entity,
            None => spawned,
        };
        if mine {
            self.relations_mut().bundle_edge = None;
            let held = self.hold_observer_commands();
            let made = catch_unwind(AssertUnwindSafe(|| {
                self.make_bundle_edge(entity, edge.parent);
            }));
            self.release_observer_commands(held);
            if let Err(payload) = made {
                resume_unwind(payload);
            }
        }
    }

    /// Makes the edge `child --ChildOf--> parent` that step 1 checked.
    fn make_bundle_edge(&mut self, child: Entity, parent: Entity) {
        self.relate(child, parent, ChildOf(parent))
            .expect("checked before the components moved, and nothing between could change it");
    }

    /// [`World::remove`] of a bundle that relates: `remove::<ChildOf>()`
    /// unparents the entity and returns `ChildOf(its parent)`.
    ///
    /// Fails, changing nothing, if the entity is not alive or has no
    /// parent. Panics for any other relating bundle (a tuple holding
    /// `ChildOf`): remove `ChildOf` on its own.
    pub(crate) fn remove_relating<B: Bundle>(
        &mut self,
        entity: Entity,
    ) -> Result<B, ComponentError> {
        let mut taken: Option<B> = None;
        let Some(slot) = (&mut taken as &mut dyn Any).downcast_mut::<Option<ChildOf>>() else {
            panic!(
                "World::remove::<{}>: a bundle holding `ChildOf` is removed in two steps: \
                 `remove::<ChildOf>()` (or `World::remove_parent`), then the components",
                short_bundle_name::<B>()
            );
        };
        self.flush();
        if !self.contains(entity) {
            return Err(ComponentError::NoSuchEntity(entity));
        }
        let Some(parent) = self.parent(entity) else {
            return Err(ComponentError::MissingComponent {
                entity,
                component: "ChildOf".into(),
            });
        };
        let child_of = self
            .unrelate::<ChildOf>(entity, parent)
            .expect("the entity's parent edge");
        *slot = Some(child_of);
        Ok(taken.expect("set above"))
    }
}
