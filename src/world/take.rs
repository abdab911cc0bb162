//! Components whose types are known at run time, for entities built or
//! moved then: [`World::take`] and [`TakenEntity`], [`EntityBuilder`], and
//! the [`DynamicBundle`] trait through which [`World::spawn`] takes them
//! all. Their values live in one type-erased buffer
//! ([`Parts`](crate::storage::parts::Parts)), not a box each: a builder
//! spawned in a loop allocates nothing per entity, and the world finds
//! the bundle of a list of types it saw before with one comparison.

use std::fmt;

use super::location;
use crate::archetype::ArchetypeId;
use crate::bundle::Bundle;
use crate::component::{CloneBehavior, CloneBoxed, Component, ComponentId, StorageType};
use crate::dynamic::DynamicComponent;
use crate::entity::Entity;
use crate::error::{ComponentError, EntityError};
use crate::relation::EdgeCopies;
use crate::storage::parts::{DynamicPart, Parts};
use crate::storage::{TakenSlot, bundle_io};
use crate::world::World;

/// One component as a boxed value (a taken or cloned one) that can put
/// itself into [`Parts`].
pub(crate) trait BoxedComponent: Send + Sync {
    /// Moves the value into `parts` (replacing one of its type).
    fn push_into(self: Box<Self>, parts: &mut Parts);
}

impl<C: Component> BoxedComponent for C {
    fn push_into(self: Box<Self>, parts: &mut Parts) {
        parts.set(*self);
    }
}

impl BoxedComponent for DynamicPart {
    fn push_into(self: Box<Self>, parts: &mut Parts) {
        parts.set(*self);
    }
}

/// How a component type's values are moved out of storage as boxes (kept
/// in its [`ComponentInfo`](crate::ComponentInfo), made where the type is
/// registered): [`take_boxed`] of that type.
pub(crate) type TakeBoxed = fn(TakenSlot<'_>) -> Option<Box<dyn BoxedComponent>>;

/// Moves the `C` in `slot` into a box (`None` if it holds another type).
/// Runs no user code.
pub(crate) fn take_boxed<C: Component>(slot: TakenSlot<'_>) -> Option<Box<dyn BoxedComponent>> {
    slot.take::<C>()
        .map(|value| Box::new(value) as Box<dyn BoxedComponent>)
}

/// Something [`World::spawn`] can make an entity from: every
/// [`Bundle`] (a component, a tuple, a `#[derive(Bundle)]` struct), and the
/// bundles whose components are chosen at run time: a [`TakenEntity`]
/// and an [`EntityBuilder`]'s [`BuiltEntity`]. hecs has the same trait;
/// Bevy spells the run-time form `EntityCommands::insert_by_id` and
/// reflection.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{DynamicBundle, EntityBuilder};
/// #[derive(Component)] struct Hp(u32);
/// fn spawn_any(world: &mut World, parts: impl DynamicBundle) -> Entity {
///     world.spawn(parts)
/// }
/// let mut world = World::new();
/// let a = spawn_any(&mut world, Hp(3));
/// let b = spawn_any(&mut world, EntityBuilder::new().add(Hp(4)).build());
/// assert_eq!(world.get::<Hp>(b).unwrap().0, 4);
/// # let _ = a;
/// ```
pub trait DynamicBundle: Send + 'static {
    /// Spawns an entity with these components in `world`.
    #[doc(hidden)]
    fn spawn_in(self, world: &mut World) -> Entity;

    /// Adds these components to `entity`; fails, dropping them, for a
    /// stale handle.
    #[doc(hidden)]
    fn insert_in(self, world: &mut World, entity: Entity) -> Result<(), EntityError>;

    /// Gives these components to `entity`, just placed in the world with
    /// none and not yet announced ([`World::spawn_at`]), in one move, and
    /// announces the whole as a spawn.
    #[doc(hidden)]
    fn spawn_placed(self, world: &mut World, entity: Entity);
}

impl<B: Bundle> DynamicBundle for B {
    #[inline]
    fn spawn_in(self, world: &mut World) -> Entity {
        world.spawn_bundle(self)
    }

    #[inline]
    fn insert_in(self, world: &mut World, entity: Entity) -> Result<(), EntityError> {
        // A single component takes `insert_one`'s path (see
        // `Bundle::__insert_into_world`).
        self.__insert_into_world(world, entity)
    }

    fn spawn_placed(self, world: &mut World, entity: Entity) {
        world.spawn_bundle_placed(entity, self);
    }
}

/// Every component of an entity [`World::take`] despawned, as boxed
/// values: spawn it into any world (`world.spawn(taken)`), or look at and
/// take out single components. Dropping it drops each component once.
/// hecs's `TakenEntity`; Bevy has no whole-entity take (its
/// `EntityWorldMut::take::<B>` is mosaic's [`World::remove`]).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
/// #[derive(Component, Debug, PartialEq)] struct Name(&'static str);
/// let mut here = World::new();
/// let e = here.spawn((Hp(3), Name("orc")));
/// let taken = here.take(e).unwrap();
/// assert!(!here.contains(e));
/// assert_eq!(taken.get::<Hp>(), Some(&Hp(3)));
///
/// let mut there = World::new();
/// let moved = there.spawn(taken);
/// assert_eq!(there.get::<Name>(moved), Ok(&Name("orc")));
/// ```
pub struct TakenEntity {
    parts: Parts,
}

impl fmt::Debug for TakenEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TakenEntity")
            .field("components", &self.parts.names())
            .finish()
    }
}

impl TakenEntity {
    /// The taken `T`, if the entity had one.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Hp(1));
    /// assert_eq!(world.take(e).unwrap().get::<Hp>(), Some(&Hp(1)));
    /// ```
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.parts.get()
    }

    /// The taken `T`, mutably.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Hp(1));
    /// let mut taken = world.take(e).unwrap();
    /// taken.get_mut::<Hp>().unwrap().0 = 5;
    /// let e = world.spawn(taken);
    /// assert_eq!(world.get::<Hp>(e), Ok(&Hp(5)));
    /// ```
    pub fn get_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.parts.get_mut()
    }

    /// Takes `T` out (the rest stays).
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Hp(1));
    /// let mut taken = world.take(e).unwrap();
    /// assert_eq!(taken.remove::<Hp>(), Some(Hp(1)));
    /// assert!(taken.is_empty());
    /// ```
    pub fn remove<T: 'static>(&mut self) -> Option<T> {
        self.parts.remove()
    }

    /// True if a `T` was taken.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Hp(1));
    /// assert!(world.take(e).unwrap().has::<Hp>());
    /// ```
    pub fn has<T: 'static>(&self) -> bool {
        self.parts.position(std::any::TypeId::of::<T>()).is_some()
    }

    /// How many components were taken.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// #[derive(Component)] struct B;
    /// let mut world = World::new();
    /// let e = world.spawn((A, B));
    /// assert_eq!(world.take(e).unwrap().len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// True if the entity had no component.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert!(world.take(e).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The components' short names, in the order they were taken.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn(Hp(1));
    /// assert_eq!(world.take(e).unwrap().component_names(), ["Hp"]);
    /// ```
    pub fn component_names(&self) -> Vec<String> {
        self.parts.names()
    }
}

impl DynamicBundle for TakenEntity {
    fn spawn_in(mut self, world: &mut World) -> Entity {
        world.spawn_parts(&mut self.parts)
    }

    fn insert_in(mut self, world: &mut World, entity: Entity) -> Result<(), EntityError> {
        world.insert_parts_checked(entity, &mut self.parts)
    }

    fn spawn_placed(mut self, world: &mut World, entity: Entity) {
        world.insert_parts(entity, &mut self.parts, true)
    }
}

/// Builds an entity from components chosen at run time (a level editor, a
/// modding layer, a prefab read from a file): [`add`](Self::add) them, then
/// `world.spawn(builder.build())`. The builder is empty again after
/// [`build`](Self::build) and can be reused. Adding a type twice keeps the
/// last value. hecs's `EntityBuilder`; Bevy builds with repeated
/// `EntityCommands::insert`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::EntityBuilder;
/// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
/// #[derive(Component, Debug, PartialEq)] struct Flying;
/// let mut world = World::new();
/// let mut builder = EntityBuilder::new();
/// for level in 0..3 {
///     builder.add(Hp(level));
///     if level > 0 {
///         builder.add(Flying);
///     }
///     let e = world.spawn(builder.build());
///     assert_eq!(world.get::<Hp>(e), Ok(&Hp(level)));
///     assert_eq!(world.has::<Flying>(e), level > 0);
/// }
/// ```
#[derive(Default)]
pub struct EntityBuilder {
    parts: Parts,
    /// The parent a [`ChildOf`](crate::ChildOf) added with
    /// [`add_bundle`](Self::add_bundle) names: an edge, made with the
    /// components when the build is spawned or inserted.
    parent: Option<Entity>,
}

impl fmt::Debug for EntityBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntityBuilder")
            .field("components", &self.parts.names())
            .field("parent", &self.parent)
            .finish()
    }
}

impl EntityBuilder {
    /// An empty builder.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::EntityBuilder::new().is_empty());
    /// ```
    pub fn new() -> Self {
        EntityBuilder::default()
    }

    /// Adds `component`, replacing a value of the same type.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut b = mosaic::EntityBuilder::new();
    /// b.add(Hp(1)).add(Hp(2));
    /// assert_eq!(b.get::<Hp>(), Some(&Hp(2)));
    /// assert_eq!(b.len(), 1);
    /// ```
    pub fn add<C: Component>(&mut self, component: C) -> &mut Self {
        self.parts.set(component);
        self
    }

    /// Adds every component of `bundle` (replacing values of the same
    /// types).
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// #[derive(Component)] struct B;
    /// let mut b = mosaic::EntityBuilder::new();
    /// b.add_bundle((A, B));
    /// assert_eq!(b.len(), 2);
    /// ```
    ///
    /// A [`ChildOf`](crate::ChildOf) in the bundle (or alone) sets the
    /// built entity's parent (replacing one set before): spawning or
    /// inserting the build makes the edge with the components, in one
    /// change, so their hooks and observers find the parent set. It is not
    /// a component: [`len`](Self::len) does not count it. A bundle naming
    /// two parents panics, as it does for [`World::spawn`].
    ///
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(u32);
    /// let mut world = World::new();
    /// let ship = world.spawn(());
    /// let mut b = mosaic::EntityBuilder::new();
    /// b.add_bundle((Hp(3), ChildOf(ship)));
    /// let turret = world.spawn(b.build());
    /// assert_eq!(world.parent(turret), Some(ship));
    /// ```
    pub fn add_bundle<B: Bundle>(&mut self, bundle: B) -> &mut Self {
        const { assert!(B::PARENTS <= 1, "a bundle names one parent at most") };
        if B::HAS_PARENT {
            self.parent = bundle.parent_in_bundle();
        }
        struct Adder<'a>(&'a mut EntityBuilder);
        impl crate::bundle::ComponentWriter for Adder<'_> {
            fn write<C: Component>(&mut self, value: C) {
                self.0.add(value);
            }
        }
        bundle.write_components(&mut Adder(self));
        self
    }

    /// The added `T`, if any.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut b = mosaic::EntityBuilder::new();
    /// b.add(Hp(7));
    /// assert_eq!(b.get::<Hp>(), Some(&Hp(7)));
    /// ```
    pub fn get<T: Component>(&self) -> Option<&T> {
        self.parts.get()
    }

    /// The added `T`, mutably.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut b = mosaic::EntityBuilder::new();
    /// b.add(Hp(7));
    /// b.get_mut::<Hp>().unwrap().0 += 1;
    /// assert_eq!(b.get::<Hp>(), Some(&Hp(8)));
    /// ```
    pub fn get_mut<T: Component>(&mut self) -> Option<&mut T> {
        self.parts.get_mut()
    }

    /// Takes the added `T` back out.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut b = mosaic::EntityBuilder::new();
    /// b.add(Hp(7));
    /// assert_eq!(b.remove::<Hp>(), Some(Hp(7)));
    /// assert!(b.is_empty());
    /// ```
    pub fn remove<T: Component>(&mut self) -> Option<T> {
        self.parts.remove()
    }

    /// True if a `T` was added.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(u32);
    /// let mut b = mosaic::EntityBuilder::new();
    /// assert!(!b.has::<Hp>());
    /// b.add(Hp(1));
    /// assert!(b.has::<Hp>());
    /// ```
    pub fn has<T: Component>(&self) -> bool {
        self.parts.position(std::any::TypeId::of::<T>()).is_some()
    }

    /// How many components were added.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::EntityBuilder::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// True if nothing was added.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::EntityBuilder::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Drops every added component.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(u32);
    /// let mut b = mosaic::EntityBuilder::new();
    /// b.add(Hp(1)).clear();
    /// assert!(b.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.parts.clear();
        self.parent = None;
    }

    /// The added components, to spawn (`world.spawn(builder.build())`) or
    /// insert; the builder is left empty, ready for the next entity.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(u32);
    /// let mut world = World::new();
    /// let mut b = mosaic::EntityBuilder::new();
    /// b.add(Hp(1));
    /// let e = world.spawn(b.build());
    /// assert!(b.is_empty() && world.has::<Hp>(e));
    /// ```
    pub fn build(&mut self) -> BuiltEntity {
        BuiltEntity {
            parts: self.parts.take(),
            parent: self.parent.take(),
        }
    }
}

/// The components an [`EntityBuilder`] built, ready for [`World::spawn`]
/// or [`World::insert`]-like use through [`DynamicBundle`]. Dropping it
/// drops them.
///
/// # Example
/// ```
/// # use mosaic::prelude::*;
/// #[derive(Component)] struct Hp(u32);
/// let mut world = World::new();
/// let built = mosaic::EntityBuilder::new().add(Hp(2)).build();
/// assert_eq!(built.len(), 1);
/// let e = world.spawn(built);
/// assert_eq!(world.get::<Hp>(e).unwrap().0, 2);
/// ```
pub struct BuiltEntity {
    parts: Parts,
    /// The builder's [`ChildOf`](crate::ChildOf) parent, if any.
    parent: Option<Entity>,
}

impl fmt::Debug for BuiltEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltEntity")
            .field("components", &self.parts.names())
            .field("parent", &self.parent)
            .finish()
    }
}

impl BuiltEntity {
    /// How many components were built.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::EntityBuilder::new().build().is_empty());
    /// ```
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// True if no component was built.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::EntityBuilder::new().build().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

impl DynamicBundle for BuiltEntity {
    // Inlined into the caller's `World::spawn`: the parts are spawned
    // from where they are, not copied into this call's frame first.
    #[inline]
    fn spawn_in(mut self, world: &mut World) -> Entity {
        match self.parent {
            None => world.spawn_parts(&mut self.parts),
            Some(parent) => world.spawn_parts_child(&mut self.parts, parent),
        }
    }

    fn insert_in(mut self, world: &mut World, entity: Entity) -> Result<(), EntityError> {
        match self.parent {
            None => world.insert_parts_checked(entity, &mut self.parts),
            Some(parent) => world.insert_parts_child(entity, &mut self.parts, parent),
        }
    }

    fn spawn_placed(mut self, world: &mut World, entity: Entity) {
        match self.parent {
            None => world.insert_parts(entity, &mut self.parts, true),
            Some(parent) => world.spawn_placed_child(entity, &mut self.parts, parent),
        }
    }
}

/// The `ChildOf(parent)` edge of a built entity, to make inside its
/// change ([`World::insert_parts_related`]); its parent checked first.
fn child_edge(parent: Entity) -> Vec<EdgeCopies> {
    vec![Box::new(move |world: &mut World, child: Entity| {
        world.attach_bundle_parent(child, Some(parent));
    })]
}

impl World {
    /// [`World::spawn_parts`] of a build with a [`ChildOf`](crate::ChildOf):
    /// the parts and the edge in one change, then announced. Panics,
    /// changing nothing, if `parent` is not alive (as a spawn of a static
    /// bundle with `ChildOf` does).
    #[cold]
    #[inline(never)]
    fn spawn_parts_child(&mut self, parts: &mut Parts, parent: Entity) -> Entity {
        self.flush();
        if !self.contains(parent) {
            panic!(
                "spawn with `ChildOf({parent:?})`: {}",
                crate::relation::RelationError::NoSuchEntity(parent)
            );
        }
        // A new entity has no descendants: no cycle to check.
        let entity = self.alloc_empty();
        self.insert_parts_related(entity, parts, true, child_edge(parent));
        entity
    }

    /// [`World::insert_parts_checked`] of a build with a
    /// [`ChildOf`](crate::ChildOf): fails, changing nothing, for a stale
    /// handle or a parent `entity` cannot have (gone, itself, or one of its
    /// descendants); reparents an entity that had a parent.
    #[cold]
    #[inline(never)]
    fn insert_parts_child(
        &mut self,
        entity: Entity,
        parts: &mut Parts,
        parent: Entity,
    ) -> Result<(), EntityError> {
        self.flush();
        if !self.contains(entity) {
            return Err(EntityError::NoSuchEntity(entity));
        }
        self.bundle_parent(&crate::ChildOf(parent), entity)?;
        self.insert_parts_related(entity, parts, false, child_edge(parent));
        Ok(())
    }

    /// [`DynamicBundle::spawn_placed`] of a build with a
    /// [`ChildOf`](crate::ChildOf): as [`World::spawn_bundle_placed`], a
    /// parent that is gone despawns the placed, empty, unannounced entity
    /// again and panics.
    #[cold]
    #[inline(never)]
    fn spawn_placed_child(&mut self, entity: Entity, parts: &mut Parts, parent: Entity) {
        if let Err(err) = self.bundle_parent(&crate::ChildOf(parent), entity) {
            let _ = self.despawn_quietly(entity);
            panic!("spawning {entity:?} with `ChildOf`: {err}");
        }
        self.insert_parts_related(entity, parts, true, child_edge(parent));
    }
}

impl World {
    /// Despawns `entity` and gives back every component it had, as a
    /// [`TakenEntity`] that can be spawned into this or any other world
    /// (`other.spawn(taken)`). Hooks and observers run as for
    /// [`World::despawn`]: every component's `on_remove` hook and `OnRemove`
    /// observers, then `OnDespawn` ones, all before anything is taken (each
    /// can still read every value). If one panics, nothing is taken: the
    /// entity keeps all its components, and the panic goes on. Relation
    /// edges are not taken (they name this world's entities): the despawn
    /// removes them from both ends, as any despawn does, and a relation
    /// that refuses the despawn refuses the take.
    ///
    /// Fails, changing nothing, for a stale handle, or with
    /// [`EntityError::DespawnRefused`] as [`World::despawn`] does.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Hp(u32);
    /// let mut a = World::new();
    /// let e = a.spawn(Hp(9));
    /// let taken = a.take(e).unwrap();
    /// assert_eq!(a.take(e).unwrap_err(), EntityError::NoSuchEntity(e));
    /// let mut b = World::new();
    /// let e2 = b.spawn(taken);
    /// assert_eq!(b.get::<Hp>(e2), Ok(&Hp(9)));
    /// ```
    pub fn take(&mut self, entity: Entity) -> Result<TakenEntity, EntityError> {
        self.flush();
        if !self.contains(entity) {
            return Err(EntityError::NoSuchEntity(entity));
        }
        if self.relations.active() {
            return self.under_relation_policies(entity, |world| world.take_now(entity));
        }
        self.take_now(entity)
    }

    /// [`World::take`] without the relation policies: the steps of
    /// [`World::despawn_now`], with the values moved out rather than
    /// dropped.
    fn take_now(&mut self, entity: Entity) -> Result<TakenEntity, EntityError> {
        let loc = self
            .entities
            .get(entity)
            .ok_or(EntityError::NoSuchEntity(entity))?;
        let ids = self.components_of(entity, loc);
        // Every removal is announced before anything is taken out: a
        // panicking hook or observer leaves the entity whole.
        self.announce_despawn(entity, &ids);
        let parts = self.take_values(entity, &ids);
        // The rest is the despawn's: the edges go from both ends, and what
        // is left of the entity (its edges' components) is dropped.
        let panics = self.despawn_deferred(entity)?;
        self.flush_observer_commands();
        panics.resume();
        Ok(TakenEntity { parts })
    }

    /// Moves every value of `entity` (whose components are `ids`) out, but
    /// the ends of its relations' edges, announcing nothing: its table row
    /// goes to the empty archetype, emptied, for the despawn to free. Runs
    /// no user code.
    fn take_values(&mut self, entity: Entity, ids: &[ComponentId]) -> Parts {
        // The room for every value: no push below reallocates (nor panics).
        let mut parts: Vec<Box<dyn BoxedComponent>> = Vec::with_capacity(ids.len());
        let loc = self.entities.get(entity).expect("taken entity is alive");
        if loc.archetype != ArchetypeId::EMPTY {
            let components = &self.components;
            let (src, empty) = self.archetypes.pair_mut(loc.archetype, ArchetypeId::EMPTY);
            // Table components are Rust types (runtime-defined ones are
            // sparse): each has a take function. The closure cannot panic
            // (the pushes stay within the capacity reserved).
            let (row, swapped) = bundle_io::take_row(
                &mut src.table,
                loc.row as usize,
                &mut empty.table,
                |id, slot| {
                    let take = components.info(id).take_boxed();
                    debug_assert!(take.is_some(), "a table component without a take function");
                    parts.extend(take.and_then(|take| take(slot)));
                },
            );
            self.entities
                .set_location(entity.index(), location(ArchetypeId::EMPTY, row));
            if let Some(swapped) = swapped {
                self.entities.set_location(swapped.index(), loc);
            }
        }
        for &id in ids {
            // Edges are not values: the despawn removes them from both
            // sides (their entities are this world's anyway).
            let info = self.components.info(id);
            if info.storage() != StorageType::SparseSet || self.relations.is_edge_component(id) {
                continue;
            }
            let Some(set) = self.sparse.get_mut(id) else {
                continue;
            };
            if let Some(take) = info.take_boxed() {
                parts.extend(set.take_with(entity, take).flatten());
            } else if let Some(schema) = info.schema() {
                if let Some(value) = set.remove_checked::<DynamicComponent>(entity) {
                    parts.push(Box::new(DynamicPart {
                        schema: schema.clone(),
                        value,
                    }));
                }
            }
        }
        let mut out = Parts::new();
        for part in parts {
            part.push_into(&mut out);
        }
        out
    }

    /// Removes bundle `Old` from `entity` and inserts `new` in its place,
    /// returning the old components: hecs's `exchange::<Old, New>`
    /// (Bevy: `remove` then `insert`). The swap of a state ("`Walking` for
    /// `Running`") in one call.
    ///
    /// Fails, changing nothing and dropping `new`, for a stale handle or if
    /// the entity lacks one of `Old`'s components.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Walking(f32);
    /// #[derive(Component, Debug, PartialEq)] struct Running(f32);
    /// let mut world = World::new();
    /// let e = world.spawn(Walking(1.0));
    /// let old: Walking = world.exchange::<Walking, _>(e, Running(3.0)).unwrap();
    /// assert_eq!(old, Walking(1.0));
    /// assert_eq!(world.get::<Running>(e), Ok(&Running(3.0)));
    /// assert!(!world.has::<Walking>(e));
    /// assert!(world.exchange::<Walking, _>(e, Running(0.0)).is_err());
    /// ```
    pub fn exchange<Old: Bundle, New: DynamicBundle>(
        &mut self,
        entity: Entity,
        new: New,
    ) -> Result<Old, ComponentError> {
        let old = self.remove::<Old>(entity)?;
        // Removal observers may have despawned it: `new` is dropped then.
        let _ = new.insert_in(self, entity);
        Ok(old)
    }

    /// [`World::exchange`] of single components.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Egg;
    /// #[derive(Component, Debug, PartialEq)] struct Chick;
    /// let mut world = World::new();
    /// let e = world.spawn(Egg);
    /// assert_eq!(world.exchange_one::<Egg, Chick>(e, Chick), Ok(Egg));
    /// assert!(world.has::<Chick>(e));
    /// ```
    pub fn exchange_one<Old: Component, New: Component>(
        &mut self,
        entity: Entity,
        new: New,
    ) -> Result<Old, ComponentError> {
        self.exchange::<Old, New>(entity, new)
    }

    /// Spawns a copy of `entity` in this world, component by component as
    /// each type's [`CloneBehavior`] says: cloned (the default for `Clone`
    /// types), made fresh, or skipped (the default for types that are not
    /// `Clone`). Runtime-defined components are cloned. Returns the copy.
    /// Bevy's `EntityCommands::clone_and_spawn`.
    ///
    /// Relations: the copy gets the original's outgoing edges (an edge to
    /// each of its targets, so a clone of a child has the same parent),
    /// with data as the relation's
    /// [`Relationship::clone_behavior`](crate::Relationship::clone_behavior)
    /// says (cloned for a `Clone` relation type; a relation that is not
    /// `Clone` is left out). For a `one` relation this is the copy's one
    /// target. Incoming edges are not copied: the copy has no children and
    /// nothing relates to it. The copy's edges are made with its
    /// components, in one change: its hooks and observers (`OnAdd`) find
    /// its parent and its other edges already there.
    ///
    /// Fails, changing nothing, for a stale handle.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Debug, PartialEq)] struct Hp(u32);
    /// // Not `Clone`: a copy does not get it.
    /// #[derive(Component)] struct Socket(std::net::UdpSocket);
    /// let mut world = World::new();
    /// let e = world.spawn(Hp(5));
    /// let copy = world.clone_entity(e).unwrap();
    /// assert_eq!(world.get::<Hp>(copy), Ok(&Hp(5)));
    /// assert_ne!(copy, e);
    /// ```
    pub fn clone_entity(&mut self, entity: Entity) -> Result<Entity, EntityError> {
        self.flush();
        let mut parts = self.clone_parts(entity)?;
        // Every value is copied before the copy is spawned: a panicking
        // clone leaves no half-copied entity behind.
        let edges = self.copy_relations(entity);
        let copy = self.alloc_empty();
        // The copy is whole, parts and edges (its parent), before its
        // hooks and observers run: one change.
        self.insert_parts_related(copy, &mut parts, true, edges);
        Ok(copy)
    }

    /// [`World::clone_entity`] into another world: spawns the copy in
    /// `target` and returns it there. Component types are matched by Rust
    /// type (registered in `target` as needed); the copy follows the
    /// behaviors of this world. Relation edges are not copied (their other
    /// ends live in this world).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Clone, Debug, PartialEq)] struct Hp(u32);
    /// let mut a = World::new();
    /// let mut b = World::new();
    /// let e = a.spawn(Hp(5));
    /// let copy = a.clone_entity_to(e, &mut b).unwrap();
    /// assert_eq!(b.get::<Hp>(copy), Ok(&Hp(5)));
    /// assert!(a.contains(e));
    /// ```
    pub fn clone_entity_to(
        &mut self,
        entity: Entity,
        target: &mut World,
    ) -> Result<Entity, EntityError> {
        self.flush();
        let mut parts = self.clone_parts(entity)?;
        Ok(target.spawn_parts(&mut parts))
    }

    /// Sets how [`World::clone_entity`] copies `T` in this world,
    /// overriding the type's own [`Component::clone_behavior`]: skip a
    /// `Clone` type, give copies a fresh value, or clone a type the derive
    /// skipped (with any function).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::CloneBehavior;
    /// #[derive(Component, Clone)] struct PlayerInput(u8);
    /// let mut world = World::new();
    /// world.set_clone_behavior::<PlayerInput>(CloneBehavior::Skip);
    /// let e = world.spawn(PlayerInput(1));
    /// let copy = world.clone_entity(e).unwrap();
    /// assert!(!world.has::<PlayerInput>(copy));
    /// ```
    pub fn set_clone_behavior<T: Component>(&mut self, behavior: CloneBehavior<T>) {
        let id = self.components.register::<T>();
        self.components
            .info_mut(id)
            .set_clone_boxed(CloneBoxed::of::<T>(behavior));
    }

    /// The copies of `entity`'s components, as its types' behaviors say.
    fn clone_parts(&self, entity: Entity) -> Result<Parts, EntityError> {
        let loc = self
            .entities
            .get(entity)
            .ok_or(EntityError::NoSuchEntity(entity))?;
        let mut parts = Parts::default();
        for id in self.components_of(entity, loc) {
            let info = self.components.info(id);
            if let Some(clone) = info.clone_boxed() {
                if let Some(part) = (clone.0)(self, entity) {
                    part.push_into(&mut parts);
                }
            } else if let Some(schema) = info.schema() {
                if let Ok(value) = self.get_dynamic(entity, schema.name()) {
                    parts.set(DynamicPart {
                        schema: schema.clone(),
                        value: value.clone(),
                    });
                }
            }
        }
        Ok(parts)
    }
}
