//! Bundles: groups of components inserted or removed together.
//!
//! A single component, a tuple of bundles (up to 16, nested freely) and any
//! struct with `#[derive(Bundle)]` is a bundle. A bundle that names one
//! component type twice, or holds two [`ChildOf`](crate::ChildOf)s, is
//! refused with a panic the first time it is used, before anything changes.

use std::any::TypeId;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::component::{Component, ComponentId, Components, StorageType};
use crate::entity::Entity;
use crate::error::{ComponentError, EntityError};
use crate::hooks::Requirement;
use crate::world::World;

/// A group of components. Implemented for every [`Component`], for tuples of
/// bundles, and by `#[derive(Bundle)]`.
///
/// # Safety
/// - `component_ids` must report the ids of exactly the components that
///   `write_components` writes and `take_components` takes, in the same
///   order. Use the derive; implementing this by hand is rarely needed.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Component)] struct Velocity(f32);
/// #[derive(Bundle)]
/// struct Body { pos: Position, vel: Velocity }
///
/// let mut world = World::new();
/// let e = world.spawn(Body { pos: Position(0.0), vel: Velocity(1.0) });
/// assert!(world.has::<Position>(e) && world.has::<Velocity>(e));
/// let body: Body = world.remove::<Body>(e).unwrap();
/// assert_eq!(body.vel.0, 1.0);
/// ```
///
/// The derive works on generic structs and adds the `Field: Bundle` bounds
/// itself (as hecs's does):
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Bundle)]
/// struct Spawned<T> { what: T, at: Position }
///
/// #[derive(Component)] struct Tree;
/// let mut world = World::new();
/// let e = world.spawn(Spawned { what: Tree, at: Position(2.0) });
/// assert!(world.has::<Tree>(e));
/// ```
pub unsafe trait Bundle: Send + Sync + 'static {
    /// Registers the components and reports their ids, in order.
    fn component_ids(
        components: &mut ComponentRegistrar<'_>,
        ids: &mut dyn FnMut(ComponentId, StorageType),
    );

    /// Moves each component into `writer`, in `component_ids` order.
    fn write_components<W: ComponentWriter>(self, writer: &mut W);

    /// Rebuilds the bundle from `reader`, in `component_ids` order.
    ///
    /// # Safety
    /// - the reader must yield valid values of the requested types.
    unsafe fn take_components<R: ComponentReader>(reader: &mut R) -> Self
    where
        Self: Sized;

    /// How many [`ChildOf`](crate::ChildOf)s the bundle holds: spawning or
    /// inserting one also makes the entity that parent's child. Tuples and
    /// the derive add them up; a constant, so the bundles without one pay
    /// nothing. More than one is refused as a component named twice is
    /// (a panic the first time the bundle is used).
    #[doc(hidden)]
    const PARENTS: usize = 0;

    /// Whether the bundle holds a [`ChildOf`](crate::ChildOf).
    #[doc(hidden)]
    const HAS_PARENT: bool = Self::PARENTS > 0;

    /// The parent the bundle's [`ChildOf`](crate::ChildOf) names, if it
    /// holds one.
    #[doc(hidden)]
    #[inline]
    fn parent_in_bundle(&self) -> Option<Entity> {
        None
    }

    /// [`World::insert`] of this bundle. A single component (or a
    /// one-element tuple of one) goes straight to [`World::insert_one`]'s
    /// path, so `world.insert(e, B)` costs what `insert_one(e, B)` does (for
    /// a sparse `B`, one set write instead of the bundle registry's walk);
    /// every other bundle takes the bundle path.
    #[doc(hidden)]
    #[inline]
    fn __insert_into_world(self, world: &mut World, entity: Entity) -> Result<(), EntityError>
    where
        Self: Sized,
    {
        world.insert_bundle(entity, self)
    }

    /// [`World::remove`] of this bundle; a single component takes
    /// [`World::remove_one`]'s path, as in [`Bundle::__insert_into_world`].
    #[doc(hidden)]
    #[inline]
    fn __remove_from_world(world: &mut World, entity: Entity) -> Result<Self, ComponentError>
    where
        Self: Sized,
    {
        world.remove_static::<Self>(entity)
    }
}

/// Hands a world's component registry to [`Bundle::component_ids`].
#[derive(Debug)]
pub struct ComponentRegistrar<'a> {
    pub(crate) components: &'a mut Components,
}

impl ComponentRegistrar<'_> {
    /// Registers `C` (if new) and returns its id.
    pub fn register<C: Component>(&mut self) -> ComponentId {
        self.components.register::<C>()
    }
}

/// Receives a bundle's components by value, one at a time.
pub trait ComponentWriter {
    /// Takes one component.
    fn write<C: Component>(&mut self, value: C);
}

/// Gives back a bundle's components by value, one at a time.
///
/// # Safety
/// - `take::<C>` is only called for the component the bundle's
///   `component_ids` names at that position.
pub unsafe trait ComponentReader {
    /// Yields one component.
    ///
    /// # Safety
    /// - `C` is the component type at the current position.
    unsafe fn take<C: Component>(&mut self) -> C;
}

// SAFETY: one component: reports one id, writes/takes that one value.
unsafe impl<C: Component> Bundle for C {
    #[inline]
    fn component_ids(
        components: &mut ComponentRegistrar<'_>,
        ids: &mut dyn FnMut(ComponentId, StorageType),
    ) {
        ids(components.register::<C>(), C::STORAGE);
    }

    // Always inlined: a one-component bundle's write is its writer's
    // (out of line, the call and its spills cost a table insert ~40
    // instructions).
    #[inline(always)]
    fn write_components<W: ComponentWriter>(self, writer: &mut W) {
        writer.write(self);
    }

    #[inline]
    unsafe fn take_components<R: ComponentReader>(reader: &mut R) -> Self {
        // SAFETY: position 0 of this bundle is C (our component_ids).
        unsafe { reader.take::<C>() }
    }

    #[inline]
    fn __insert_into_world(self, world: &mut World, entity: Entity) -> Result<(), EntityError> {
        world.insert_one(entity, self)
    }

    #[inline]
    fn __remove_from_world(world: &mut World, entity: Entity) -> Result<Self, ComponentError> {
        world.remove_one::<C>(entity)
    }
}

// SAFETY: no components: `component_ids` reports none, `write_components`
// writes none and `take_components` takes none (the world removes a
// `ChildOf` bundle itself, see `World::remove`).
unsafe impl Bundle for crate::ChildOf {
    const PARENTS: usize = 1;

    #[inline]
    fn component_ids(
        _components: &mut ComponentRegistrar<'_>,
        _ids: &mut dyn FnMut(ComponentId, StorageType),
    ) {
    }

    #[inline]
    fn write_components<W: ComponentWriter>(self, _writer: &mut W) {}

    unsafe fn take_components<R: ComponentReader>(_reader: &mut R) -> Self {
        unreachable!("`World::remove` takes a `ChildOf` bundle through `remove_parent`")
    }

    #[inline]
    fn parent_in_bundle(&self) -> Option<Entity> {
        Some(self.0)
    }
}

macro_rules! tuple_bundle {
    // A one-element tuple inserts and removes as its element does: `(B,)`
    // is `B` (a single component takes `insert_one`'s path).
    ($name:ident) => {
        tuple_bundle!(@impl [$name] {
            #[inline]
            fn __insert_into_world(self, world: &mut World, entity: Entity) -> Result<(), EntityError> {
                self.0.__insert_into_world(world, entity)
            }

            #[inline]
            fn __remove_from_world(world: &mut World, entity: Entity) -> Result<Self, ComponentError> {
                $name::__remove_from_world(world, entity).map(|bundle| (bundle,))
            }
        });
    };
    ($($name:ident),*) => {
        tuple_bundle!(@impl [$($name),*] {});
    };
    (@impl [$($name:ident),*] { $($extra:tt)* }) => {
        // SAFETY: each element reports, writes and takes in the same order.
        unsafe impl<$($name: Bundle),*> Bundle for ($($name,)*) {
            const PARENTS: usize = 0 $(+ $name::PARENTS)*;

            #[inline]
            #[allow(unused_variables, non_snake_case)]
            fn parent_in_bundle(&self) -> Option<Entity> {
                let ($($name,)*) = self;
                None $(.or_else(|| $name.parent_in_bundle()))*
            }

            #[inline]
            #[allow(unused_variables)]
            fn component_ids(components: &mut ComponentRegistrar<'_>, ids: &mut dyn FnMut(ComponentId, StorageType)) {
                $($name::component_ids(components, ids);)*
            }

            #[inline]
            #[allow(unused_variables, non_snake_case)]
            fn write_components<W: ComponentWriter>(self, writer: &mut W) {
                let ($($name,)*) = self;
                $($name.write_components(writer);)*
            }

            #[inline]
            #[allow(unused_variables, clippy::unused_unit)]
            unsafe fn take_components<R: ComponentReader>(reader: &mut R) -> Self {
                // SAFETY: forwarded in component_ids order.
                ($(unsafe { $name::take_components(reader) },)*)
            }

            $($extra)*
        }
    };
}

macro_rules! all_tuples {
    ($m:ident) => {
        $m!();
        $m!(B0);
        $m!(B0, B1);
        $m!(B0, B1, B2);
        $m!(B0, B1, B2, B3);
        $m!(B0, B1, B2, B3, B4);
        $m!(B0, B1, B2, B3, B4, B5);
        $m!(B0, B1, B2, B3, B4, B5, B6);
        $m!(B0, B1, B2, B3, B4, B5, B6, B7);
        $m!(B0, B1, B2, B3, B4, B5, B6, B7, B8);
        $m!(B0, B1, B2, B3, B4, B5, B6, B7, B8, B9);
        $m!(B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10);
        $m!(B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11);
        $m!(B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12);
        $m!(B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13);
        $m!(
            B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14
        );
        $m!(
            B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15
        );
    };
}

pub(crate) use all_tuples;

all_tuples!(tuple_bundle);

/// Identifies a bundle type within one world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BundleId(u32);

impl BundleId {
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a world knows about one bundle type.
#[derive(Debug)]
pub(crate) struct BundleInfo {
    pub id: BundleId,
    /// Every component, in bundle order.
    pub components: Box<[(ComponentId, StorageType)]>,
    /// The table components, in bundle order.
    pub table_ids: Box<[ComponentId]>,
    /// True if the bundle holds the [`Disabled`](crate::Disabled) marker.
    /// Only then does writing or removing it change the table's mirror
    /// of disabled rows (a row move carries the entity's bit), so every
    /// other bundle's insert, spawn or removal skips the sync with this
    /// one branch.
    pub disables: bool,
}

impl BundleInfo {
    /// Every component, in bundle order.
    pub fn component_ids(&self) -> impl Iterator<Item = ComponentId> + '_ {
        self.components.iter().map(|&(id, _)| id)
    }
}

/// The registry of bundle types known to one world.
#[derive(Debug, Default)]
pub(crate) struct Bundles {
    infos: Vec<BundleInfo>,
    by_type: FxHashMap<TypeId, BundleId>,
    /// The bundle type looked up last: loops of inserts or removes of one
    /// bundle type (the common case) skip the hash lookup.
    last: Option<(TypeId, BundleId)>,
    /// Per bundle (by index), once asked: what spawning it brings besides
    /// (`None`: nothing). Valid for `required_epoch`.
    required: Vec<Option<Option<WithRequired>>>,
    required_epoch: u64,
    /// Bundles known by their component list only (a bundle plus the
    /// requirements an insert brings), by that list.
    combined: FxHashMap<Box<[ComponentId]>, BundleId>,
    /// Bundles of run-time values (an `EntityBuilder`'s), by the Rust types
    /// of their values in order: a builder spawned again finds its bundle
    /// with one lookup, without registering each type.
    by_types: FxHashMap<Arc<[TypeId]>, BundleId>,
    /// The list looked up last in `by_types`: a builder spawned in a loop
    /// skips the hash.
    last_types: Option<(Arc<[TypeId]>, BundleId)>,
}

/// A bundle plus the components it requires (transitively) and does not
/// hold: what a spawn of the bundle writes, in one move.
#[derive(Debug, Clone)]
pub(crate) struct WithRequired {
    /// The bundle's components followed by the requirements (a bundle of
    /// its own, for the archetype graph).
    pub combined: BundleId,
    /// The requirements, in the order `combined` lists them.
    pub extras: Arc<[Requirement]>,
}

impl Bundles {
    /// The info for bundle `B`, registering it (and its components) if new.
    ///
    /// Panics if `B` names a component type twice.
    #[inline]
    pub fn register<B: Bundle>(&mut self, components: &mut Components) -> &BundleInfo {
        let id = match self.last {
            Some((type_id, id)) if type_id == TypeId::of::<B>() => id,
            _ => self.lookup::<B>(components),
        };
        &self.infos[id.index()]
    }

    /// [`Bundles::register`] past the one-entry cache.
    #[inline(never)]
    fn lookup<B: Bundle>(&mut self, components: &mut Components) -> BundleId {
        let id = match self.by_type.get(&TypeId::of::<B>()) {
            Some(&id) => id,
            None => self.register_new::<B>(components),
        };
        self.last = Some((TypeId::of::<B>(), id));
        id
    }

    /// The info of a registered bundle.
    #[inline]
    pub fn get(&self, id: BundleId) -> &BundleInfo {
        &self.infos[id.index()]
    }

    /// What spawning bundle `id` brings besides (its components'
    /// requirements, transitively, minus what it holds), if anything;
    /// computed once per set of requirements.
    #[inline]
    pub fn with_required(
        &mut self,
        id: BundleId,
        components: &mut Components,
    ) -> Option<WithRequired> {
        if self.required_epoch != components.requirements_epoch() {
            self.required.clear();
            self.required_epoch = components.requirements_epoch();
        }
        match self.required.get(id.index()) {
            Some(Some(known)) => known.clone(),
            _ => self.resolve_required(id, components),
        }
    }

    #[cold]
    fn resolve_required(
        &mut self,
        id: BundleId,
        components: &mut Components,
    ) -> Option<WithRequired> {
        let own: Vec<(ComponentId, StorageType)> = self.get(id).components.to_vec();
        let mut extras: Vec<Requirement> = Vec::new();
        for &(component, _) in &own {
            for r in components.resolved_requirements(component).iter() {
                let held = own.iter().any(|&(c, _)| c == r.component);
                if !held && !extras.iter().any(|e| e.component == r.component) {
                    extras.push(r.clone());
                }
            }
        }
        let with = (!extras.is_empty()).then(|| {
            let mut list = own;
            list.extend(extras.iter().map(|r| (r.component, r.storage)));
            WithRequired {
                combined: self.push_info(list, components.disabled_id()),
                extras: extras.into(),
            }
        });
        if self.required.len() <= id.index() {
            self.required.resize(id.index() + 1, None);
        }
        self.required[id.index()] = Some(with.clone());
        with
    }

    /// The bundle of `id`'s components followed by `extras` (distinct
    /// from them and from each other), registered once per list.
    /// `disabled` is the [`Disabled`](crate::Disabled) marker's id, if
    /// registered.
    pub fn combined(
        &mut self,
        id: BundleId,
        extras: impl Iterator<Item = (ComponentId, StorageType)>,
        disabled: Option<ComponentId>,
    ) -> BundleId {
        let mut list: Vec<(ComponentId, StorageType)> = self.get(id).components.to_vec();
        list.extend(extras);
        let key: Box<[ComponentId]> = list.iter().map(|&(c, _)| c).collect();
        if let Some(&known) = self.combined.get(&key) {
            return known;
        }
        let combined = self.push_info(list, disabled);
        self.combined.insert(key, combined);
        combined
    }

    /// The bundle [`Bundles::remember_types`] stored for values of these
    /// Rust types, in this order.
    #[inline]
    pub fn by_types(&mut self, types: &[TypeId]) -> Option<BundleId> {
        match &self.last_types {
            Some((last, id)) if **last == *types => Some(*id),
            _ => self.by_types_lookup(types),
        }
    }

    fn by_types_lookup(&mut self, types: &[TypeId]) -> Option<BundleId> {
        let (key, &id) = self.by_types.get_key_value(types)?;
        self.last_types = Some((Arc::clone(key), id));
        Some(id)
    }

    /// Remembers that values of these Rust types, in this order, form
    /// bundle `id` (each type registered as the component of that type).
    pub fn remember_types(&mut self, types: &[TypeId], id: BundleId) {
        self.by_types.insert(types.into(), id);
    }

    /// Registers a bundle of these (distinct) components, known by id only.
    /// `disabled` is the [`Disabled`](crate::Disabled) marker's id, if
    /// registered (it is whenever `list` holds it: a list names registered
    /// components only).
    fn push_info(
        &mut self,
        list: Vec<(ComponentId, StorageType)>,
        disabled: Option<ComponentId>,
    ) -> BundleId {
        let id = BundleId(self.infos.len() as u32);
        let disables = disabled.is_some_and(|d| list.iter().any(|&(c, _)| c == d));
        let table_ids = list
            .iter()
            .filter(|(_, s)| *s == StorageType::Table)
            .map(|&(c, _)| c)
            .collect();
        self.infos.push(BundleInfo {
            id,
            components: list.into(),
            table_ids,
            disables,
        });
        id
    }

    #[cold]
    fn register_new<B: Bundle>(&mut self, components: &mut Components) -> BundleId {
        let mut list = Vec::new();
        B::component_ids(
            &mut ComponentRegistrar { components },
            &mut |id, storage| list.push((id, storage)),
        );
        // A second parent is a second `ChildOf`: the same mistake, the
        // same answer, before anything changes.
        if B::PARENTS > 1 {
            panic!(
                "bundle `{}` contains component `ChildOf` more than once; an entity has one parent, so a bundle may name it once",
                crate::component::short_type_name::<B>(),
            );
        }
        let mut sorted: Vec<ComponentId> = list.iter().map(|&(id, _)| id).collect();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            panic!(
                "bundle `{}` contains component `{}` more than once; each component type may appear once per bundle",
                crate::component::short_type_name::<B>(),
                components.name(w[0])
            );
        }
        let id = self.push_info(list, components.disabled_id());
        self.by_type.insert(TypeId::of::<B>(), id);
        id
    }
}
