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

use rustc_hash::FxHashMap;

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
pub trait Component: Send + Sync + 'static {
    /// Where values of this type are stored.
    const STORAGE: StorageType = StorageType::Table;
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
    track_changes: bool,
}

impl ComponentInfo {
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

    pub(crate) fn drop_fn(&self) -> Option<unsafe fn(*mut u8)> {
        self.drop
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

/// Short name of a type: the path with module prefixes removed, generics kept.
pub(crate) fn short_type_name<T: ?Sized>() -> String {
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

/// The registry of component types known to one world.
#[derive(Debug, Default)]
pub(crate) struct Components {
    infos: Vec<ComponentInfo>,
    by_type: FxHashMap<TypeId, ComponentId>,
}

impl Components {
    #[inline]
    pub fn register<T: Component>(&mut self) -> ComponentId {
        if let Some(&id) = self.by_type.get(&TypeId::of::<T>()) {
            return id;
        }
        self.register_new::<T>()
    }

    #[cold]
    fn register_new<T: Component>(&mut self) -> ComponentId {
        let id = ComponentId::new(self.infos.len());
        self.infos.push(ComponentInfo {
            id,
            name: Cow::Owned(short_type_name::<T>()),
            layout: Layout::new::<T>(),
            drop: std::mem::needs_drop::<T>().then_some(drop_ptr::<T> as unsafe fn(*mut u8)),
            storage: T::STORAGE,
            type_id: Some(TypeId::of::<T>()),
            track_changes: false,
        });
        self.by_type.insert(TypeId::of::<T>(), id);
        id
    }

    #[inline]
    pub fn id_of<T: Component>(&self) -> Option<ComponentId> {
        self.by_type.get(&TypeId::of::<T>()).copied()
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
