//! Components: the plain data attached to entities, and their registry.
//!
//! Any `Send + Sync + 'static` type becomes a component with
//! `#[derive(Component)]`. Each type chooses its storage once, at compile
//! time: archetype tables (the default; fastest to iterate) or a sparse set
//! (`#[component(storage = "sparse")]`; fastest to add and remove, and adding
//! one never moves the entity's other data).
//!
//! Each world numbers component types in the order it first sees them
//! ([`ComponentId`]); there is no limit on how many types a world holds.

use std::alloc::Layout;
use std::any::TypeId;
use std::borrow::Cow;
use std::fmt;

use rustc_hash::{FxHashMap, FxHashSet};

use std::sync::Arc;

use crate::entity::Entity;
use crate::hooks::{
    ComponentHooks, RequiredComponents, Requirement, cycle_message, requirement_path,
    resolve_requirements,
};
use crate::observer::LifecycleTypes;

/// Where a component type's values live.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)]
/// #[component(storage = "sparse")]
/// struct Stunned;
/// assert_eq!(<Stunned as Component>::STORAGE, StorageType::SparseSet);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum StorageType {
    /// Archetype tables: one dense column per type per archetype.
    #[default]
    Table,
    /// A sparse set per type, indexed by entity.
    SparseSet,
}

/// Data that can be attached to an entity. Derive it.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Debug, PartialEq)]
/// struct Health(u32);
///
/// let mut world = World::new();
/// let e = world.spawn(Health(3));
/// assert_eq!(*world.get::<Health>(e).unwrap(), Health(3));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a component",
    label = "not a component",
    note = "derive it: `#[derive(Component)]` on the type (it must be `Send + Sync + 'static`)",
    note = "methods take the component type itself: `world.get::<T>(e)`, not hecs's `get::<&T>(e)`; queries are where `&T` and `&mut T` go"
)]
pub trait Component: Send + Sync + 'static {
    /// Where values of this type are stored.
    const STORAGE: StorageType = StorageType::Table;

    /// False for a component that is never changed in place
    /// (`#[component(immutable)]`): code that asks for `&mut` of it
    /// ([`World::get_mut`](crate::World::get_mut),
    /// [`EntityWorldMut::get_mut`](crate::EntityWorldMut::get_mut),
    /// [`World::get_many_mut`](crate::World::get_many_mut), a `&mut T` in a
    /// query) does not build. It changes only by `insert` (a replacement,
    /// which its `on_insert` hooks and observers see) or removal, so a hook
    /// or observer can keep something in step with its value: an index of
    /// entities by name, say. The relation components
    /// ([`Relation<R>`](struct@crate::Relation), [`Sources<R>`](crate::Sources))
    /// are immutable: their edge lists change only through the world's
    /// relation methods.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)]
    /// #[component(immutable)]
    /// struct Name(&'static str);
    /// let mut world = World::new();
    /// let e = world.spawn(Name("ada"));
    /// world.insert(e, Name("grace")).unwrap(); // replaced: hooks see it
    /// assert_eq!(world.get::<Name>(e), Ok(&Name("grace")));
    /// ```
    /// Changing it in place does not build:
    /// ```compile_fail
    /// use mosaic::prelude::*;
    /// #[derive(Component)]
    /// #[component(immutable)]
    /// struct Name(&'static str);
    /// let mut world = World::new();
    /// let e = world.spawn(Name("ada"));
    /// world.get_mut::<Name>(e).unwrap().0 = "grace";
    /// ```
    /// ```compile_fail
    /// use mosaic::prelude::*;
    /// #[derive(Component)]
    /// #[component(immutable)]
    /// struct Name(&'static str);
    /// let mut world = World::new();
    /// let _q = world.query::<&mut Name>();
    /// ```
    const MUTABLE: bool = true;

    /// Declares the type's hooks (`#[component(on_add = f)]`).
    #[doc(hidden)]
    fn register_hooks(_hooks: &mut ComponentHooks) {}

    /// Declares the components the type requires (`#[require(A, B)]`).
    #[doc(hidden)]
    fn register_required(_required: &mut RequiredComponents<'_>) {}

    /// How [`World::clone_entity`](crate::World::clone_entity) copies this
    /// component. The derive picks [`CloneBehavior::Clone`] for a type that
    /// implements `Clone` and [`CloneBehavior::Skip`] for one that does not
    /// (and for generic types); `#[component(clone = "skip")]`,
    /// `#[component(clone = "default")]` (needs `Default`) and
    /// `#[component(clone = "clone")]` choose. A world can override it with
    /// [`World::set_clone_behavior`](crate::World::set_clone_behavior).
    fn clone_behavior() -> CloneBehavior<Self>
    where
        Self: Sized,
    {
        CloneBehavior::Skip
    }

    /// `#[component(rollback)]`: the type registers itself for rollback
    /// (as [`World::register_rollback`](crate::World::register_rollback)
    /// does) in every world that uses it, when the world registers it.
    #[doc(hidden)]
    fn rollback() -> Option<crate::rollback::RollbackRegistration>
    where
        Self: Sized,
    {
        None
    }

    /// How [`World::checksum`](crate::World::checksum) hashes the type once
    /// it is registered for rollback: the derive picks the type's `Hash`
    /// impl if it has one; `None` leaves it out of the checksum.
    #[doc(hidden)]
    fn rollback_hash() -> Option<crate::rollback::RollbackHash>
    where
        Self: Sized,
    {
        None
    }
}

/// Fails the build (when `T` is known, at monomorphization) of code that
/// asks for `&mut T` of an immutable `T` (see [`Component::MUTABLE`]).
#[inline(always)]
pub(crate) fn require_mutable<T: Component>() {
    const {
        assert!(
            T::MUTABLE,
            "`&mut` of an immutable component (`Component::MUTABLE` is false): \
             replace its value with `insert` instead"
        )
    }
}

/// What [`World::clone_entity`](crate::World::clone_entity) does with one
/// component type: copy it with a function (usually `Clone::clone`), give
/// the copy a fresh value (usually `Default::default`), or leave it out.
/// Bevy's `ComponentCloneBehavior`; hecs has no entity cloning.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::CloneBehavior;
/// #[derive(Component, Clone, Debug, PartialEq)] struct Hp(u32);
/// // Not `Clone`: skipped unless the world says otherwise.
/// #[derive(Component, Default, Debug, PartialEq)] struct Cooldown(u32);
/// let mut world = World::new();
/// world.set_clone_behavior::<Cooldown>(CloneBehavior::Default(Cooldown::default));
/// let e = world.spawn((Hp(3), Cooldown(9)));
/// let copy = world.clone_entity(e).unwrap();
/// assert_eq!(world.get::<Hp>(copy), Ok(&Hp(3)));
/// assert_eq!(world.get::<Cooldown>(copy), Ok(&Cooldown(0)));
/// ```
pub enum CloneBehavior<T> {
    /// The copy gets `f(&original)`.
    Clone(fn(&T) -> T),
    /// The copy gets `f()`.
    Default(fn() -> T),
    /// The copy does not get this component.
    Skip,
}

impl<T> fmt::Debug for CloneBehavior<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CloneBehavior::Clone(_) => "Clone",
            CloneBehavior::Default(_) => "Default",
            CloneBehavior::Skip => "Skip",
        })
    }
}

impl<T> Clone for CloneBehavior<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for CloneBehavior<T> {}

/// The derive's choice of [`CloneBehavior`]: `Clone` if the type is,
/// else `Skip` (the derive calls the method on `&&CloneProbe<T>`, and
/// method resolution tries `ViaClone`, implemented for `&CloneProbe<T>`,
/// first, which only applies when `T: Clone`). Not part of the API.
#[doc(hidden)]
pub struct CloneProbe<T>(pub std::marker::PhantomData<T>);

#[doc(hidden)]
pub trait ViaClone<T> {
    fn clone_behavior(&self) -> CloneBehavior<T>;
}

impl<T: Clone> ViaClone<T> for &CloneProbe<T> {
    fn clone_behavior(&self) -> CloneBehavior<T> {
        CloneBehavior::Clone(T::clone)
    }
}

#[doc(hidden)]
pub trait ViaSkip<T> {
    fn clone_behavior(&self) -> CloneBehavior<T>;
}

impl<T> ViaSkip<T> for CloneProbe<T> {
    fn clone_behavior(&self) -> CloneBehavior<T> {
        CloneBehavior::Skip
    }
}

/// Makes a component type's copy for an entity clone, as a box; kept in
/// its [`ComponentInfo`].
/// The function behind a [`CloneBoxed`].
type CloneFn =
    dyn Fn(&crate::World, Entity) -> Option<Box<dyn crate::world::BoxedComponent>> + Send + Sync;

#[derive(Clone)]
pub(crate) struct CloneBoxed(pub(crate) Arc<CloneFn>);

impl fmt::Debug for CloneBoxed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CloneBoxed")
    }
}

impl CloneBoxed {
    /// The copy maker for `behavior`, or `None` to skip.
    pub(crate) fn of<T: Component>(behavior: CloneBehavior<T>) -> Option<CloneBoxed> {
        let make: Arc<CloneFn> = match behavior {
            CloneBehavior::Skip => return None,
            CloneBehavior::Clone(f) => Arc::new(move |world, entity| {
                let value = world.get::<T>(entity).ok()?;
                Some(Box::new(f(value)))
            }),
            CloneBehavior::Default(f) => Arc::new(move |world, entity| {
                world.has::<T>(entity).then(|| Box::new(f()) as Box<_>)
            }),
        };
        Some(CloneBoxed(make))
    }
}

/// A component type's number within one world.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)]
/// struct A;
/// let mut world = World::new();
/// let id = world.register_component::<A>();
/// assert_eq!(world.component_info(id).unwrap().name(), "A");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentId(u32);

/// A component id that one world's registry issued for the Rust type `T`
/// (only [`Components`]' lookups by type make one): every column and sparse set
/// of that id in that world holds `T`s, so storage can hand out `&T`
/// without comparing `TypeId`s on each access.
pub(crate) struct TypedId<T> {
    id: ComponentId,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T> TypedId<T> {
    /// The plain id.
    #[inline(always)]
    pub fn id(self) -> ComponentId {
        self.id
    }
}

impl<T> Clone for TypedId<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for TypedId<T> {}

impl ComponentId {
    /// The id as an index (dense, from 0).
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// assert_eq!(world.register_component::<A>().index(), 0);
    /// ```
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    #[inline]
    pub(crate) const fn new(index: usize) -> ComponentId {
        ComponentId(index as u32)
    }
}

/// What a world knows about one component type.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)]
/// struct Position(f32, f32);
/// let mut world = World::new();
/// let id = world.register_component::<Position>();
/// let info = world.component_info(id).unwrap();
/// assert_eq!(info.name(), "Position");
/// assert_eq!(info.layout().size(), 8);
/// assert_eq!(info.storage(), StorageType::Table);
/// ```
#[derive(Debug, Clone)]
pub struct ComponentInfo {
    id: ComponentId,
    name: Cow<'static, str>,
    layout: Layout,
    drop: Option<unsafe fn(*mut u8)>,
    storage: StorageType,
    type_id: Option<TypeId>,
    /// The full Rust type name (`my_game::Hp`); `None` for a runtime-defined
    /// component.
    type_name: Option<&'static str>,
    /// The Rust type of the stored values (the component's own type, or
    /// [`DynamicComponent`](crate::DynamicComponent) for a runtime-defined one).
    value_type: TypeId,
    /// The field schema of a runtime-defined component.
    schema: Option<std::sync::Arc<crate::dynamic::ComponentSchema>>,
    track_changes: bool,
    hooks: ComponentHooks,
    required: Vec<Requirement>,
    /// Every requirement, transitively ([`resolve_requirements`]); made on
    /// first use, forgotten when a requirement is added.
    resolved: Option<Arc<[Requirement]>>,
    /// The type's `#[require(..)]` declarations loop: every use panics
    /// with this message.
    cycle: Option<Arc<str>>,
    /// Observers watch this type's lifecycle.
    observed: bool,
    lifecycle_types: Option<LifecycleTypes>,
    /// Takes a Rust-typed component off an entity as a boxed value (for
    /// [`World::take`](crate::World::take)); `None` for a runtime-defined
    /// component.
    take_boxed: Option<crate::world::TakeBoxed>,
    /// Makes the copy for [`World::clone_entity`](crate::World::clone_entity);
    /// `None` skips the component.
    clone_boxed: Option<CloneBoxed>,
}

impl ComponentInfo {
    /// How to take this component off an entity as a boxed value.
    pub(crate) fn take_boxed(&self) -> Option<crate::world::TakeBoxed> {
        self.take_boxed
    }

    /// How to copy this component for an entity clone.
    pub(crate) fn clone_boxed(&self) -> Option<&CloneBoxed> {
        self.clone_boxed.as_ref()
    }

    /// Sets how to copy this component for an entity clone.
    pub(crate) fn set_clone_boxed(&mut self, clone: Option<CloneBoxed>) {
        self.clone_boxed = clone;
    }

    /// True if [`World::clone_entity`](crate::World::clone_entity) copies
    /// this component (by a clone or a fresh value) rather than skipping
    /// it.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Clone)] struct A;
    /// #[derive(Component)] struct B;
    /// let mut world = World::new();
    /// let a = world.register_component::<A>();
    /// let b = world.register_component::<B>();
    /// assert!(world.component_info(a).unwrap().is_cloned());
    /// assert!(!world.component_info(b).unwrap().is_cloned());
    /// ```
    pub fn is_cloned(&self) -> bool {
        self.clone_boxed.is_some() || self.schema.is_some()
    }

    /// The component's id in this world.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert_eq!(world.component_info(id).unwrap().id(), id);
    /// ```
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// The type's short name (`Position`, not `my_game::Position`).
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert_eq!(world.component_info(id).unwrap().name(), "A");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size and alignment of one value.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A(u64);
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert_eq!(world.component_info(id).unwrap().layout().align(), 8);
    /// ```
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Table or sparse set.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert_eq!(world.component_info(id).unwrap().storage(), StorageType::Table);
    /// ```
    pub fn storage(&self) -> StorageType {
        self.storage
    }

    /// The Rust type, if the component has one.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert_eq!(world.component_info(id).unwrap().type_id(), Some(std::any::TypeId::of::<A>()));
    /// ```
    pub fn type_id(&self) -> Option<TypeId> {
        self.type_id
    }

    /// The full Rust type name (`my_game::Health`), if the component has a
    /// Rust type; `None` for a runtime-defined one.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert!(world.component_info(id).unwrap().type_name().unwrap().ends_with("::A"));
    /// ```
    pub fn type_name(&self) -> Option<&'static str> {
        self.type_name
    }

    /// True if this world records change ticks for the type (switched on by
    /// the first `Added<T>` or `Changed<T>` filter built in this world; see
    /// [`Tick`](crate::Tick) for the rules).
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let id = world.register_component::<A>();
    /// assert!(!world.component_info(id).unwrap().tracks_changes());
    /// let _q = world.query_filtered::<Entity, Changed<A>>();
    /// assert!(world.component_info(id).unwrap().tracks_changes());
    /// ```
    pub fn tracks_changes(&self) -> bool {
        self.track_changes
    }

    /// The field schema, for a runtime-defined component (one declared by
    /// name, with no Rust type).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{ComponentSchema, FieldType};
    /// let mut world = World::new();
    /// let schema = ComponentSchema::new("Mana").field("current", FieldType::Int);
    /// let id = world.register_dynamic_component(schema).unwrap();
    /// let info = world.component_info(id).unwrap();
    /// assert_eq!(info.schema().unwrap().name(), "Mana");
    /// assert_eq!(info.type_id(), None);
    /// ```
    pub fn schema(&self) -> Option<&crate::dynamic::ComponentSchema> {
        self.schema.as_deref()
    }

    #[allow(dead_code)]
    pub(crate) fn schema_arc(&self) -> Option<&std::sync::Arc<crate::dynamic::ComponentSchema>> {
        self.schema.as_ref()
    }

    pub(crate) fn value_type(&self) -> TypeId {
        self.value_type
    }

    pub(crate) fn drop_fn(&self) -> Option<unsafe fn(*mut u8)> {
        self.drop
    }

    pub(crate) fn hooks(&self) -> &ComponentHooks {
        &self.hooks
    }

    pub(crate) fn lifecycle_types(&self) -> Option<&LifecycleTypes> {
        self.lifecycle_types.as_ref()
    }

    pub(crate) fn required(&self) -> &[Requirement] {
        &self.required
    }

    /// True if adding or removing this type runs anything (hooks,
    /// requirements, observers).
    #[inline]
    pub(crate) fn has_lifecycle(&self) -> bool {
        self.observed || !self.required.is_empty() || !self.hooks.is_empty()
    }
}

/// Drops the `T` behind `ptr`.
///
/// # Safety
/// - `ptr` points to a valid, initialised `T` that is not used again.
unsafe fn drop_ptr<T>(ptr: *mut u8) {
    // SAFETY: the caller guarantees `ptr` is a valid, owned `T`.
    unsafe { ptr.cast::<T>().drop_in_place() }
}

/// Short name of a type: the path with module prefixes removed, generics
/// kept. This is the name a Rust component type gets in this world
/// ([`ComponentInfo::name`]), so a layer above the core (a scene registry,
/// an inspector) can name a type the same way before any world has seen it.
///
/// # Example
/// ```
/// mod game { pub struct Pair<T>(pub T); }
/// assert_eq!(mosaic::short_type_name::<game::Pair<u8>>(), "Pair<u8>");
/// assert_eq!(mosaic::short_type_name::<Option<std::string::String>>(), "Option<String>");
/// ```
pub fn short_type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    let mut segment_start = 0;
    for (i, c) in full.char_indices() {
        match c {
            ':' => segment_start = i + 1,
            '<' | '>' | ',' | ' ' | '(' | ')' | '[' | ']' | ';' | '&' => {
                out.push_str(&full[segment_start..i]);
                out.push(c);
                segment_start = i + 1;
            }
            _ => {}
        }
    }
    out.push_str(&full[segment_start..]);
    out
}

#[cold]
#[inline(never)]
fn name_taken_panic<T>(name: &str) -> ! {
    panic!(
        "the Rust component type `{}` cannot be registered: its name `{name}` is taken by the runtime-defined component `{name}` in this world (one name, one component: rename the type or the schema)",
        std::any::type_name::<T>()
    )
}

/// Slots of [`TypeCache`] (and of the column hints kept beside it, one
/// per slot: `storage::ColumnHints`): a power of two.
pub(crate) const TYPE_CACHE_SLOTS: usize = 256;

/// The [`TypeCache`] slot of type `T`, a constant for a type known at
/// compile time; column hints are kept per slot too.
#[inline(always)]
pub(crate) fn type_slot<T: 'static>() -> usize {
    TypeCache::slot(TypeId::of::<T>())
}

/// A direct-mapped cache in front of [`Components`]' `TypeId` map: each
/// type hashes to one slot, which holds the first type registered there.
/// `World::get` and friends look a type up on every call, and for a type
/// known at compile time the slot's position is a constant, so a hit is
/// one load and one compare of the `TypeId` instead of a hash-table probe
/// (a `get` and a `get_mut` by entity went from 189 to 151 instructions
/// with it: callgrind, `examples/profile.rs random-get-mosaic`). A type
/// whose slot another type holds is found in the map as before: the cache
/// only ever answers with the id registered for exactly that `TypeId`.
///
/// A type's slot also names its column hint (`storage::ColumnHints`,
/// kept by the archetypes whose columns it points to): where the type's
/// column was in the table a lookup by entity last found it in. Only the
/// slot's own type refreshes it (see [`Components::typed_id_hinted`]).
///
/// A free slot holds [`Vacant`]'s `TypeId`, which no lookup asks for (it
/// is not a component), so a probe is one compare, with no `Option` tag
/// to test first.
struct TypeCache(Box<[CacheSlot; TYPE_CACHE_SLOTS]>);

/// One [`TypeCache`] slot.
struct CacheSlot {
    type_id: TypeId,
    id: ComponentId,
}

/// The type whose `TypeId` marks a free [`TypeCache`] slot.
struct Vacant;

impl TypeCache {
    #[inline(always)]
    fn slot(type_id: TypeId) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        type_id.hash(&mut h);
        // The top bits are the best mixed by Fx's final multiply.
        (h.finish() >> (64 - TYPE_CACHE_SLOTS.trailing_zeros())) as usize
    }

    #[inline(always)]
    fn get(&self, type_id: TypeId) -> Option<ComponentId> {
        let slot = &self.0[Self::slot(type_id)];
        (slot.type_id == type_id).then_some(slot.id)
    }

    /// Caches `id` for `type_id` if its slot is free (the first type keeps it).
    fn offer(&mut self, type_id: TypeId, id: ComponentId) {
        let slot = &mut self.0[Self::slot(type_id)];
        if slot.type_id == TypeId::of::<Vacant>() {
            slot.type_id = type_id;
            slot.id = id;
        }
    }
}

impl Default for TypeCache {
    fn default() -> Self {
        TypeCache(Box::new(std::array::from_fn(|_| CacheSlot {
            type_id: TypeId::of::<Vacant>(),
            id: ComponentId::new(0),
        })))
    }
}

impl fmt::Debug for TypeCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let used = self
            .0
            .iter()
            .filter(|s| s.type_id != TypeId::of::<Vacant>())
            .count();
        write!(f, "TypeCache({used}/{TYPE_CACHE_SLOTS} slots used)")
    }
}

/// The registry of component types known to one world.
#[derive(Debug, Default)]
pub(crate) struct Components {
    infos: Vec<ComponentInfo>,
    by_type: FxHashMap<TypeId, ComponentId>,
    /// The first stop of a lookup by Rust type, before `by_type`.
    cache: TypeCache,
    /// Runtime-defined components, by name.
    by_name: FxHashMap<String, ComponentId>,
    /// Some type has hooks, requirements or observers: structural changes
    /// must look. While false they skip all of it at the cost of one branch.
    lifecycle_active: bool,
    /// Observers watch every type's lifecycle (lifecycle events for systems).
    observe_all: bool,
    /// Event types some observer watches (to mark component types
    /// registered later).
    observed_events: FxHashSet<TypeId>,
    /// Some observer watches `OnSpawn` / `OnDespawn`.
    spawn_observed: bool,
    despawn_observed: bool,
    /// Some type's `#[require(..)]` declarations loop (its info says so).
    cycles: bool,
    /// Bumped by every requirement added after registration.
    requirements_epoch: u64,
    /// The id of [`Disabled`](crate::Disabled), once registered.
    disabled: Option<ComponentId>,
    /// The component types the world rolls back, in registration order:
    /// kept beside the types themselves, so that a
    /// `#[component(rollback)]` type (and [`Disabled`](crate::Disabled))
    /// joins them the moment the world registers it, and a snapshot, which
    /// takes `&World`, never finds one waiting.
    pub(crate) rollback: crate::rollback::RollbackComponents,
}

impl Components {
    #[inline]
    pub fn register<T: Component>(&mut self) -> ComponentId {
        if let Some(id) = self.id_of::<T>() {
            if self.cycles {
                self.refuse_cycle(id);
            }
            return id;
        }
        self.register_new::<T>()
    }

    /// Panics if component `id`'s declared requirements loop.
    #[cold]
    fn refuse_cycle(&self, id: ComponentId) {
        if let Some(message) = &self.infos[id.index()].cycle {
            panic!("{message}");
        }
    }

    /// Every component `id` requires, transitively, nearest first (see
    /// [`resolve_requirements`]); computed once per set of requirements.
    pub fn resolved_requirements(&mut self, id: ComponentId) -> Arc<[Requirement]> {
        if let Some(resolved) = &self.infos[id.index()].resolved {
            return Arc::clone(resolved);
        }
        let resolved: Arc<[Requirement]> = resolve_requirements(self, id).into();
        self.infos[id.index()].resolved = Some(Arc::clone(&resolved));
        resolved
    }

    /// Changes whenever a requirement is added (so caches built on
    /// requirements know to start again).
    #[inline]
    pub fn requirements_epoch(&self) -> u64 {
        self.requirements_epoch
    }

    #[cold]
    fn register_new<T: Component>(&mut self) -> ComponentId {
        let name = short_type_name::<T>();
        // One name, one component: a Rust type may not take the name of a
        // runtime-defined one (the reverse is refused by
        // `World::register_dynamic_component`), or lookups by name and
        // saved scenes could not tell them apart.
        if self.by_name.contains_key(&name) {
            name_taken_panic::<T>(&name);
        }
        let id = ComponentId::new(self.infos.len());
        // `#[component(rollback)]` types, and `Disabled` (always part of
        // a rollback state), are registered for rollback here and now.
        let rollback = T::rollback().or_else(|| {
            (TypeId::of::<T>() == TypeId::of::<crate::Disabled>())
                .then(crate::rollback::RollbackRegistration::disabled)
        });
        self.infos.push(ComponentInfo {
            id,
            name: Cow::Owned(name),
            layout: Layout::new::<T>(),
            drop: std::mem::needs_drop::<T>().then_some(drop_ptr::<T> as unsafe fn(*mut u8)),
            storage: T::STORAGE,
            type_id: Some(TypeId::of::<T>()),
            type_name: Some(std::any::type_name::<T>()),
            value_type: TypeId::of::<T>(),
            schema: None,
            // A type rolled back from its registration on (see below):
            // its columns keep change ticks from the start, so a restore
            // tells which rows were written since a snapshot.
            track_changes: rollback.is_some(),
            hooks: ComponentHooks::default(),
            required: Vec::new(),
            resolved: None,
            cycle: None,
            observed: false,
            lifecycle_types: Some(LifecycleTypes::of::<T>()),
            take_boxed: Some(crate::world::take_boxed::<T>),
            clone_boxed: CloneBoxed::of::<T>(T::clone_behavior()),
        });
        self.by_type.insert(TypeId::of::<T>(), id);
        self.cache.offer(TypeId::of::<T>(), id);
        if TypeId::of::<T>() == TypeId::of::<crate::Disabled>() {
            self.disabled = Some(id);
        }
        if let Some(rollback) = rollback {
            self.rollback.add(rollback.component(id));
        }
        let mut hooks = ComponentHooks::default();
        T::register_hooks(&mut hooks);
        // Registering a requirement may meet a loop further down (a type
        // required by `T` requires itself) and panic: `T` stays registered
        // (its info is pushed), so it is marked too, or its next use would
        // find it registered with no requirements and go on without them.
        let declared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut required = RequiredComponents::new(self);
            T::register_required(&mut required);
            required.into_list()
        }));
        let required = match declared {
            Ok(required) => required,
            Err(payload) => {
                let cause = payload
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| payload.downcast_ref::<&str>().copied())
                    .unwrap_or("a requirement could not be registered");
                let message: Arc<str> = Arc::from(
                    format!(
                        "component `{}` cannot be used: {cause}",
                        short_type_name::<T>()
                    )
                    .as_str(),
                );
                self.infos[id.index()].cycle = Some(message);
                self.cycles = true;
                std::panic::resume_unwind(payload);
            }
        };
        for r in &required {
            if let Some(path) = requirement_path(self, r.component, id) {
                let names: Vec<&str> = std::iter::once(&id)
                    .chain(path.iter())
                    .map(|&c| self.name(c))
                    .collect();
                // Remembered: the type stays registered, and every later
                // use panics the same way (see `Components::register`).
                // Every type on the loop is marked: each requires itself.
                let message = cycle_message::<T>(&names.join(" -> "));
                let message: Arc<str> = Arc::from(message.as_str());
                for &member in std::iter::once(&id).chain(path.iter()) {
                    self.infos[member.index()].cycle = Some(Arc::clone(&message));
                }
                self.cycles = true;
                panic!("{message}");
            }
        }
        if !hooks.is_empty() || !required.is_empty() {
            self.lifecycle_active = true;
        }
        let observed = self
            .observed_events
            .iter()
            .any(|&t| LifecycleTypes::of::<T>().contains(t));
        let info = &mut self.infos[id.index()];
        info.hooks = hooks;
        info.required = required;
        info.observed = observed;
        id
    }

    /// Registers a runtime-defined component (stored as
    /// [`DynamicComponent`](crate::DynamicComponent) values in a sparse set).
    /// Registering the same schema again returns the same id; a different
    /// schema under a taken name is refused.
    pub fn register_dynamic(
        &mut self,
        schema: crate::dynamic::ComponentSchema,
    ) -> Result<ComponentId, crate::dynamic::SchemaError> {
        use crate::dynamic::{DynamicComponent, SchemaError};
        schema.validate()?;
        if let Some(&id) = self.by_name.get(schema.name()) {
            let existing = self.infos[id.index()].schema().expect("dynamic");
            return if *existing == schema {
                Ok(id)
            } else {
                Err(SchemaError::Conflict {
                    name: schema.name().to_owned(),
                })
            };
        }
        let id = ComponentId::new(self.infos.len());
        let name = schema.name().to_owned();
        self.infos.push(ComponentInfo {
            id,
            name: Cow::Owned(name.clone()),
            layout: Layout::new::<DynamicComponent>(),
            drop: Some(drop_ptr::<DynamicComponent> as unsafe fn(*mut u8)),
            storage: StorageType::SparseSet,
            type_id: None,
            type_name: None,
            value_type: TypeId::of::<DynamicComponent>(),
            schema: Some(std::sync::Arc::new(schema)),
            track_changes: false,
            hooks: ComponentHooks::default(),
            required: Vec::new(),
            resolved: None,
            cycle: None,
            observed: false,
            lifecycle_types: None,
            take_boxed: None,
            clone_boxed: None,
        });
        self.by_name.insert(name, id);
        Ok(id)
    }

    /// The full type name of a Rust component type called `name`, if any
    /// (the first registered, if several share the short name).
    /// Every registered component, by id.
    pub fn infos(&self) -> std::slice::Iter<'_, ComponentInfo> {
        self.infos.iter()
    }

    pub fn rust_type_named(&self, name: &str) -> Option<&'static str> {
        self.infos
            .iter()
            .filter(|i| i.name() == name)
            .find_map(|i| i.type_name)
    }

    /// The runtime-defined component called `name`.
    pub fn dynamic_id(&self, name: &str) -> Option<ComponentId> {
        self.by_name.get(name).copied()
    }

    /// Every component (Rust or runtime-defined) whose name is `name`.
    pub fn ids_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = ComponentId> + 'a {
        self.infos
            .iter()
            .filter(move |i| i.name() == name)
            .map(|i| i.id)
    }

    /// Records that an observer watches `event_type`; marks the component
    /// type whose lifecycle it is (now or when registered).
    pub fn observe_event(&mut self, event_type: TypeId) {
        self.observed_events.insert(event_type);
        self.lifecycle_active = true;
        self.spawn_observed |= event_type == TypeId::of::<crate::observer::OnSpawn>();
        self.despawn_observed |= event_type == TypeId::of::<crate::observer::OnDespawn>();
        for info in &mut self.infos {
            if info.lifecycle_types.is_some_and(|t| t.contains(event_type)) {
                info.observed = true;
            }
        }
    }

    /// True if the lifecycle of any of `ids` must be announced.
    #[inline]
    pub fn announces_any(&self, ids: impl IntoIterator<Item = ComponentId>) -> bool {
        ids.into_iter().any(|id| self.announces(id))
    }

    /// True if spawning must be announced even for unannounced components.
    #[inline]
    pub fn spawn_announced(&self) -> bool {
        self.spawn_observed || self.observe_all
    }

    /// True if despawning must be announced even for unannounced components.
    #[inline]
    pub fn despawn_announced(&self) -> bool {
        self.despawn_observed || self.observe_all
    }

    /// True if every component's lifecycle is announced (for
    /// `LifecycleEvent` readers).
    #[inline]
    pub fn observes_all(&self) -> bool {
        self.observe_all
    }

    /// True if structural changes must run lifecycle work.
    #[inline]
    pub fn lifecycle_active(&self) -> bool {
        self.lifecycle_active
    }

    /// True if the lifecycle of component `id` must be announced.
    #[inline]
    pub fn announces(&self, id: ComponentId) -> bool {
        self.observe_all || self.infos[id.index()].has_lifecycle()
    }

    pub fn set_observe_all(&mut self) {
        self.observe_all = true;
        self.lifecycle_active = true;
    }

    pub fn hooks_mut(&mut self, id: ComponentId) -> &mut ComponentHooks {
        self.lifecycle_active = true;
        &mut self.infos[id.index()].hooks
    }

    pub fn add_requirement(&mut self, id: ComponentId, requirement: Requirement) {
        self.lifecycle_active = true;
        self.infos[id.index()].required.push(requirement);
        self.requirements_epoch += 1;
        for info in &mut self.infos {
            info.resolved = None;
        }
    }

    /// The id of [`Disabled`](crate::Disabled), if it is registered.
    #[inline(always)]
    pub fn disabled_id(&self) -> Option<ComponentId> {
        self.disabled
    }

    #[inline]
    pub fn id_of<T: Component>(&self) -> Option<ComponentId> {
        let type_id = TypeId::of::<T>();
        self.cache
            .get(type_id)
            .or_else(|| self.by_type.get(&type_id).copied())
    }

    /// `T`'s component id, and whether `T` holds its [`TypeCache`] slot
    /// (the id then comes from the slot; else from the map): a lookup
    /// refreshes the slot's column hint only for the slot's own type, so
    /// that types sharing a slot do not overwrite each other's hint.
    #[inline(always)]
    pub fn typed_id_hinted<T: Component>(&self) -> Option<(TypedId<T>, bool)> {
        let type_id = TypeId::of::<T>();
        let (id, holds_slot) = match self.cache.get(type_id) {
            Some(id) => (id, true),
            None => (*self.by_type.get(&type_id)?, false),
        };
        let id = TypedId {
            id,
            _type: std::marker::PhantomData,
        };
        Some((id, holds_slot))
    }

    #[inline]
    pub fn info_mut(&mut self, id: ComponentId) -> &mut ComponentInfo {
        &mut self.infos[id.index()]
    }

    #[inline]
    pub fn info(&self, id: ComponentId) -> &ComponentInfo {
        &self.infos[id.index()]
    }

    #[inline]
    pub fn get_info(&self, id: ComponentId) -> Option<&ComponentInfo> {
        self.infos.get(id.index())
    }

    pub fn name(&self, id: ComponentId) -> &str {
        self.infos[id.index()].name()
    }

    pub fn enable_change_tracking(&mut self, id: ComponentId) {
        self.infos[id.index()].track_changes = true;
    }

    pub fn len(&self) -> usize {
        self.infos.len()
    }
}

#[cfg(test)]
mod tests {
    use super::short_type_name;

    #[test]
    fn short_names() {
        assert_eq!(short_type_name::<u32>(), "u32");
        assert_eq!(
            short_type_name::<std::vec::Vec<std::string::String>>(),
            "Vec<String>"
        );
        assert_eq!(
            short_type_name::<(u8, std::string::String)>(),
            "(u8, String)"
        );
    }
}
