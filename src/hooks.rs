//! Per-type component hooks and required components: behaviour a component
//! type declares once, that the world applies on every insert or removal.
//!
//! - **Hooks** (`on_add`, `on_insert`, `on_remove`) are plain functions run
//!   inside the structural change, before observers, for engine-level
//!   invariants (an index, a spatial grid). Declare them with
//!   `#[component(on_add = path::to_fn)]` or [`World::register_component_hooks`].
//! - **Required components**: `#[require(Position, Direction)]` (or
//!   [`World::register_required`]) makes adding `Physics` add `Position` and
//!   `Direction` too, with `Default::default()` (or a given constructor),
//!   when the entity lacks them. Requirements are transitive; what the
//!   entity already has, or the bundle brings, is never overwritten; a cycle
//!   is refused when it is registered.

use std::fmt;
use std::sync::Arc;

use thiserror::Error;

use crate::component::{short_type_name, Component, ComponentId, Components};
use crate::entity::Entity;
use crate::observer::DeferredWorld;
use crate::world::World;

/// A hook: runs with the world (no structural changes; commands are
/// applied after the change) and the entity concerned.
pub type ComponentHook = fn(DeferredWorld<'_>, Entity);

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

    /// Runs `hook` before the component is removed (by `remove` or
    /// `despawn`), while its value is still readable.
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

    pub(crate) fn is_empty(&self) -> bool {
        self.on_add.is_none() && self.on_insert.is_none() && self.on_remove.is_none()
    }
}

/// Adds a required component to an entity that lacks it.
pub(crate) type RequiredInsert = Arc<dyn Fn(&mut World, Entity) + Send + Sync>;

/// A requirement: the required component and how to add it.
#[derive(Clone)]
pub(crate) struct Requirement {
    pub component: ComponentId,
    pub insert: RequiredInsert,
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
        insert: Arc::new(move |world: &mut World, entity: Entity| {
            if !world.contains(entity) {
                return;
            }
            if world.has::<B>(entity) {
                // Kept as it is, but what `B` requires still applies
                // (requirements are transitive).
                if let Some(id) = world.component_id::<B>() {
                    world.add_required(entity, &[id]);
                }
            } else {
                world
                    .insert_one(entity, make())
                    .expect("the entity was checked alive just above");
            }
        }),
    }
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
pub(crate) fn requirement_path(
    components: &Components,
    from: ComponentId,
    to: ComponentId,
) -> Option<Vec<ComponentId>> {
    if from == to {
        return Some(vec![from]);
    }
    components.info(from).required().iter().find_map(|r| {
        let mut path = requirement_path(components, r.component, to)?;
        path.insert(0, from);
        Some(path)
    })
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

    /// Adds the components that those in `ids` require and `entity` lacks.
    pub(crate) fn add_required(&mut self, entity: Entity, ids: &[ComponentId]) {
        for &id in ids {
            let required = self.components().info(id).required().to_vec();
            for r in required {
                (r.insert)(self, entity);
            }
        }
    }
}

/// The message for a component type whose declared requirements loop.
pub(crate) fn cycle_panic<T>(path: &str) -> ! {
    panic!(
        "component `{}` requires itself through its #[require(..)] declarations: {path}",
        short_type_name::<T>()
    )
}
