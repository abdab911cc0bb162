//! Per-type component hooks and required components: behaviour a component
//! type declares once, that the world applies on every insert or removal.
//!
//! - **Hooks** (`on_add`, `on_insert`, `on_replace`, `on_remove`,
//!   `on_despawn`) are plain functions run
//!   inside the structural change, before observers, for engine-level
//!   invariants (an index, a spatial grid). Declare them with
//!   `#[component(on_add = path::to_fn)]` or [`World::register_component_hooks`].
//! - **Required components**: `#[require(Position, Direction)]` (or
//!   [`World::register_required`]) makes adding `Physics` add `Position` and
//!   `Direction` too, with `Default::default()` — or with a given value:
//!   `#[require(Mana = Mana(50))]`, `#[require(Mana = new_mana())]`,
//!   [`World::register_required_with`] — when the entity lacks them.
//!   Requirements are transitive; what the entity already has, or the
//!   bundle brings, is never overwritten. They are part of the same change
//!   as the component that needs them: made first (a panicking constructor
//!   changes nothing), then added together, before any hook or observer
//!   runs. Each type's full set is resolved once (shared requirements, as
//!   in a diamond, once each) and cached until a requirement is added.
//! - A cycle is refused: by [`World::register_required`] with a
//!   [`RequiredCycleError`]; declared with the derive, with a panic naming
//!   the path at the first use of any type on it, and at every use after.
//!
//! # Example
//! ```
//! use mosaic::prelude::*;
//! #[derive(Component, Debug, PartialEq)] struct Mana(u32);
//! fn full_mana() -> Mana { Mana(50) }
//! #[derive(Component, Default)] struct Position(f32);
//! #[derive(Component)]
//! #[require(Mana = full_mana(), Position)]
//! struct Wizard;
//! let mut world = World::new();
//! let e = world.spawn(Wizard);
//! assert_eq!(world.get::<Mana>(e), Ok(&Mana(50)));
//! assert!(world.has::<Position>(e));
//! ```

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use rustc_hash::FxHashSet;
use thiserror::Error;

use crate::bundle::ComponentWriter;
use crate::component::{Component, ComponentId, Components, StorageType, short_type_name};
use crate::entity::Entity;
use crate::observer::DeferredWorld;
use crate::storage::batch::{ErasedColumn, ErasedValue, TypedColumn};
use crate::storage::bundle_io::{NewRowWriter, SparseWriter, Writer};
use crate::world::World;

/// A hook: runs with the world (no structural changes; commands are
/// applied after the change) and the entity concerned.
pub type ComponentHook = fn(DeferredWorld<'_>, Entity);

/// What a hook is told, as Bevy's `HookContext`: the entity and the
/// component. A hook declared with the derive may take it in place of the
/// `Entity`: `fn(DeferredWorld, HookContext)`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{ComponentId, DeferredWorld, HookContext};
/// #[derive(Component)]
/// #[component(on_add = log_add)]
/// struct Tracked;
/// #[derive(Default)] struct Log(Vec<(Entity, ComponentId)>);
/// fn log_add(mut world: DeferredWorld, context: HookContext) {
///     world.resource_mut::<Log>().0.push((context.entity, context.component_id));
/// }
/// let mut world = World::new();
/// world.insert_resource(Log::default());
/// let e = world.spawn(Tracked);
/// let id = world.component_id::<Tracked>().unwrap();
/// assert_eq!(world.resource::<Log>().0, [(e, id)]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HookContext {
    /// The entity whose component the hook is about.
    pub entity: Entity,
    /// The component.
    pub component_id: ComponentId,
}

/// A function the derive accepts as a hook: `fn(DeferredWorld, Entity)` or
/// `fn(DeferredWorld, HookContext)`. `Marker` tells them apart.
#[doc(hidden)]
pub trait HookFunction<Marker> {
    /// Runs the hook of component `C` for `entity`.
    fn call<C: Component>(self, world: DeferredWorld<'_>, entity: Entity);
}

impl<F: FnOnce(DeferredWorld<'_>, Entity)> HookFunction<Entity> for F {
    fn call<C: Component>(self, world: DeferredWorld<'_>, entity: Entity) {
        self(world, entity)
    }
}

impl<F: FnOnce(DeferredWorld<'_>, HookContext)> HookFunction<HookContext> for F {
    fn call<C: Component>(self, world: DeferredWorld<'_>, entity: Entity) {
        let component_id = world
            .world()
            .component_id::<C>()
            .expect("a hook runs for a registered component");
        self(
            world,
            HookContext {
                entity,
                component_id,
            },
        )
    }
}

/// Runs hook `f` of component `C` (what the derive's hooks call).
#[doc(hidden)]
#[inline]
pub fn call_hook<C: Component, M>(
    f: impl HookFunction<M>,
    world: DeferredWorld<'_>,
    entity: Entity,
) {
    f.call::<C>(world, entity);
}

/// The hooks of one component type.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::DeferredWorld;
/// #[derive(Default)] struct Added(u32);
/// #[derive(Component)]
/// #[component(on_add = count_add)]
/// struct Tracked;
/// fn count_add(mut world: DeferredWorld, _e: Entity) {
///     world.resource_mut::<Added>().0 += 1;
/// }
/// let mut world = World::new();
/// world.insert_resource(Added::default());
/// world.spawn(Tracked);
/// assert_eq!(world.resource::<Added>().0, 1);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ComponentHooks {
    pub(crate) on_add: Option<ComponentHook>,
    pub(crate) on_insert: Option<ComponentHook>,
    pub(crate) on_remove: Option<ComponentHook>,
    pub(crate) on_replace: Option<ComponentHook>,
    pub(crate) on_despawn: Option<ComponentHook>,
}

impl ComponentHooks {
    /// Runs `hook` when the component is added to an entity that lacked it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// world.register_component_hooks::<A>().on_add(|mut w, e| w.commands().despawn(e));
    /// let e = world.spawn(A);
    /// assert!(!world.contains(e)); // the hook's command ran after the spawn
    /// ```
    pub fn on_add(&mut self, hook: ComponentHook) -> &mut Self {
        self.on_add = Some(hook);
        self
    }

    /// Runs `hook` whenever the component is inserted (added or replaced).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// #[derive(Default)] struct Count(u32);
    /// let mut world = World::new();
    /// world.insert_resource(Count::default());
    /// world.register_component_hooks::<A>().on_insert(|mut w, _| w.resource_mut::<Count>().0 += 1);
    /// let e = world.spawn(A);
    /// world.insert_one(e, A).unwrap();
    /// assert_eq!(world.resource::<Count>().0, 2);
    /// ```
    pub fn on_insert(&mut self, hook: ComponentHook) -> &mut Self {
        self.on_insert = Some(hook);
        self
    }

    /// Runs `hook` before the component is removed (by `remove`,
    /// `despawn` or `take`), while its value is still readable.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Score(u32);
    /// #[derive(Default)] struct Banked(u32);
    /// let mut world = World::new();
    /// world.insert_resource(Banked::default());
    /// world.register_component_hooks::<Score>().on_remove(|mut w, e| {
    ///     let s = w.get::<Score>(e).unwrap().0;
    ///     w.resource_mut::<Banked>().0 += s;
    /// });
    /// let e = world.spawn(Score(7));
    /// world.despawn(e).unwrap();
    /// assert_eq!(world.resource::<Banked>().0, 7);
    /// ```
    pub fn on_remove(&mut self, hook: ComponentHook) -> &mut Self {
        self.on_remove = Some(hook);
        self
    }

    /// Runs `hook` before the component's value goes: before an insert
    /// replaces it (the old value is still readable) and before it is
    /// removed (by `remove`, `despawn` or `take`; before `on_remove`). As
    /// Bevy's `on_replace`: for an index keyed by the value, say.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)]
    /// #[component(on_replace = bank_old_score)]
    /// struct Score(u32);
    /// #[derive(Default)] struct Banked(u32);
    /// fn bank_old_score(mut world: DeferredWorld, e: Entity) {
    ///     let old = world.get::<Score>(e).unwrap().0;
    ///     world.resource_mut::<Banked>().0 += old;
    /// }
    /// let mut world = World::new();
    /// world.insert_resource(Banked::default());
    /// let e = world.spawn(Score(7));
    /// world.insert_one(e, Score(1)).unwrap(); // replaces 7
    /// world.despawn(e).unwrap(); // removes 1
    /// assert_eq!(world.resource::<Banked>().0, 8);
    /// ```
    pub fn on_replace(&mut self, hook: ComponentHook) -> &mut Self {
        self.on_replace = Some(hook);
        self
    }

    /// Runs `hook` when the entity holding the component is despawned,
    /// before its `on_replace` and `on_remove` hooks (the entity is whole
    /// and readable). As Bevy's `on_despawn`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)]
    /// #[component(on_despawn = count_loss)]
    /// struct Unit;
    /// #[derive(Default)] struct Losses(u32);
    /// fn count_loss(mut world: DeferredWorld, _e: Entity) {
    ///     world.resource_mut::<Losses>().0 += 1;
    /// }
    /// let mut world = World::new();
    /// world.insert_resource(Losses::default());
    /// let a = world.spawn(Unit);
    /// let b = world.spawn(Unit);
    /// world.remove::<Unit>(a).unwrap(); // a removal, not a despawn
    /// world.despawn(b).unwrap();
    /// assert_eq!(world.resource::<Losses>().0, 1);
    /// ```
    pub fn on_despawn(&mut self, hook: ComponentHook) -> &mut Self {
        self.on_despawn = Some(hook);
        self
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.on_add.is_none()
            && self.on_insert.is_none()
            && self.on_remove.is_none()
            && self.on_replace.is_none()
            && self.on_despawn.is_none()
    }
}

/// How to make a required component, type-erased: run by the world when
/// the requiring component arrives on an entity that lacks it.
pub(crate) trait RequiredMaker: Send + Sync {
    /// Makes the value and writes it as the next component of a new row
    /// (a spawn). May panic (a user constructor).
    fn write_new(&self, writer: &mut NewRowWriter<'_>);

    /// Makes the value, to insert later with [`RequiredMaker::insert_made`].
    /// May panic (a user constructor).
    fn make(&self) -> Box<dyn Any + Send>;

    /// Writes a value [`RequiredMaker::make`] made as the next component
    /// of a row being inserted into.
    fn write_made(&self, value: Box<dyn Any + Send>, writer: &mut Writer<'_>);

    /// Writes a value [`RequiredMaker::make`] made as the next component
    /// of a sparse-only insert.
    fn write_made_sparse(&self, value: Box<dyn Any + Send>, writer: &mut SparseWriter<'_>);

    /// A value [`RequiredMaker::make`] made, as an erased value for an
    /// insert of run-time parts (no copy: the box is the same).
    fn erase(&self, value: Box<dyn Any + Send>) -> Box<dyn ErasedValue>;

    /// Makes `n` values, as a column for a batch of new entities (a
    /// column spawn). May panic (a user constructor): those made so far
    /// are dropped.
    fn make_column(&self, n: usize) -> Box<dyn ErasedColumn>;
}

struct Maker<F>(F);

impl<C: Component, F: Fn() -> C + Send + Sync> RequiredMaker for Maker<F> {
    fn write_new(&self, writer: &mut NewRowWriter<'_>) {
        writer.write::<C>((self.0)());
    }

    fn make(&self) -> Box<dyn Any + Send> {
        Box::new((self.0)())
    }

    fn write_made(&self, value: Box<dyn Any + Send>, writer: &mut Writer<'_>) {
        writer.write::<C>(unbox(value));
    }

    fn write_made_sparse(&self, value: Box<dyn Any + Send>, writer: &mut SparseWriter<'_>) {
        writer.write::<C>(unbox(value));
    }

    fn erase(&self, value: Box<dyn Any + Send>) -> Box<dyn ErasedValue> {
        value
            .downcast::<C>()
            .expect("made by this requirement's constructor")
    }

    fn make_column(&self, n: usize) -> Box<dyn ErasedColumn> {
        Box::new(TypedColumn::<C>((0..n).map(|_| (self.0)()).collect()))
    }
}

/// The `C` a [`RequiredMaker`] of `C` made.
fn unbox<C: Component>(value: Box<dyn Any + Send>) -> C {
    *value
        .downcast::<C>()
        .expect("made by this requirement's constructor")
}

/// A requirement: the required component and how to make it.
#[derive(Clone)]
pub(crate) struct Requirement {
    pub component: ComponentId,
    pub storage: StorageType,
    pub maker: Arc<dyn RequiredMaker>,
}

impl fmt::Debug for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Requirement")
            .field("component", &self.component)
            .finish()
    }
}

fn requirement<B: Component>(
    components: &mut Components,
    make: impl Fn() -> B + Send + Sync + 'static,
) -> Requirement {
    Requirement {
        component: components.register::<B>(),
        storage: B::STORAGE,
        maker: Arc::new(Maker(make)),
    }
}

/// Every component `id` requires, directly or through others: each once,
/// nearest first (breadth-first; at one distance, in declaration order),
/// with the constructor of its nearest declaration.
pub(crate) fn resolve_requirements(components: &Components, id: ComponentId) -> Vec<Requirement> {
    let mut seen: FxHashSet<ComponentId> = FxHashSet::default();
    seen.insert(id);
    let mut out: Vec<Requirement> = Vec::new();
    let mut next = 0;
    let mut push_direct = |of: ComponentId, out: &mut Vec<Requirement>| {
        for r in components.info(of).required() {
            if seen.insert(r.component) {
                out.push(r.clone());
            }
        }
    };
    push_direct(id, &mut out);
    while next < out.len() {
        let of = out[next].component;
        push_direct(of, &mut out);
        next += 1;
    }
    out
}

/// The components a component type requires, as declared with
/// `#[require(..)]`. Filled by the derive; not for direct use.
#[derive(Debug)]
pub struct RequiredComponents<'a> {
    components: &'a mut Components,
    list: Vec<Requirement>,
}

impl<'a> RequiredComponents<'a> {
    pub(crate) fn new(components: &'a mut Components) -> Self {
        RequiredComponents {
            components,
            list: Vec::new(),
        }
    }

    /// Requires `B`, added with `B::default()` when missing.
    #[doc(hidden)]
    pub fn require<B: Component + Default>(&mut self) {
        let requirement = requirement::<B>(self.components, B::default);
        self.list.push(requirement);
    }

    /// Requires `B`, added with `make()` when missing
    /// (`#[require(B = expr)]`).
    #[doc(hidden)]
    pub fn require_with<B: Component>(&mut self, make: impl Fn() -> B + Send + Sync + 'static) {
        let requirement = requirement::<B>(self.components, make);
        self.list.push(requirement);
    }

    pub(crate) fn into_list(self) -> Vec<Requirement> {
        self.list
    }
}

/// A requirement would make a component require itself.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Default)] struct A;
/// #[derive(Component, Default)] struct B;
/// let mut world = World::new();
/// world.register_required::<A, B>().unwrap();
/// let err = world.register_required::<B, A>().unwrap_err();
/// assert!(err.to_string().contains("cycle"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("requiring `{required}` from `{component}` would make a cycle: {path}")]
pub struct RequiredCycleError {
    /// The component that would get the requirement.
    pub component: String,
    /// The component it would require.
    pub required: String,
    /// The chain of requirements that leads back, e.g. `B -> A`.
    pub path: String,
}

/// The requirement chain from `from` to `to` (both included), if any.
///
/// Each component is explored once (a component already explored does not
/// lead to `to`), so shared requirements — stacked diamonds — cost one
/// visit each, not one per path.
pub(crate) fn requirement_path(
    components: &Components,
    from: ComponentId,
    to: ComponentId,
) -> Option<Vec<ComponentId>> {
    fn walk(
        components: &Components,
        from: ComponentId,
        to: ComponentId,
        explored: &mut FxHashSet<ComponentId>,
    ) -> Option<Vec<ComponentId>> {
        if from == to {
            return Some(vec![from]);
        }
        if !explored.insert(from) {
            return None;
        }
        components.info(from).required().iter().find_map(|r| {
            let mut path = walk(components, r.component, to, explored)?;
            path.insert(0, from);
            Some(path)
        })
    }
    walk(components, from, to, &mut FxHashSet::default())
}

impl World {
    /// The hooks of component `T`, to set (registering `T` if new).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// world.register_component_hooks::<A>().on_add(|_, _| {});
    /// ```
    pub fn register_component_hooks<T: Component>(&mut self) -> &mut ComponentHooks {
        let id = self.register_component::<T>();
        self.components_mut().hooks_mut(id)
    }

    /// Makes `A` require `B`: whenever `A` is added to an entity without a
    /// `B`, `B::default()` is added too. Fails if `B` already requires `A`
    /// (directly or through others).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Default)] struct Physics;
    /// #[derive(Component, Default, Debug, PartialEq)] struct Position(f32);
    /// let mut world = World::new();
    /// world.register_required::<Physics, Position>().unwrap();
    /// let a = world.spawn(Physics);
    /// let b = world.spawn((Physics, Position(5.0))); // kept, not overwritten
    /// assert_eq!(*world.get::<Position>(a).unwrap(), Position(0.0));
    /// assert_eq!(*world.get::<Position>(b).unwrap(), Position(5.0));
    /// ```
    pub fn register_required<A: Component, B: Component + Default>(
        &mut self,
    ) -> Result<(), RequiredCycleError> {
        self.register_required_with::<A, B>(B::default)
    }

    /// Like [`World::register_required`], with `make` building the `B`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Enemy;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// world.register_required_with::<Enemy, Health>(|| Health(30)).unwrap();
    /// let e = world.spawn(Enemy);
    /// assert_eq!(world.get::<Health>(e).unwrap().0, 30);
    /// ```
    pub fn register_required_with<A: Component, B: Component>(
        &mut self,
        make: impl Fn() -> B + Send + Sync + 'static,
    ) -> Result<(), RequiredCycleError> {
        let a = self.register_component::<A>();
        let requirement = requirement::<B>(self.components_mut(), make);
        let components = self.components();
        if let Some(path) = requirement_path(components, requirement.component, a) {
            return Err(RequiredCycleError {
                component: components.name(a).to_owned(),
                required: components.name(requirement.component).to_owned(),
                path: path
                    .iter()
                    .map(|&id| components.name(id))
                    .collect::<Vec<_>>()
                    .join(" -> "),
            });
        }
        self.components_mut().add_requirement(a, requirement);
        Ok(())
    }
}

/// The message for a component type whose declared requirements loop.
pub(crate) fn cycle_message<T>(path: &str) -> String {
    format!(
        "component `{}` requires itself through its #[require(..)] declarations: {path}",
        short_type_name::<T>()
    )
}
