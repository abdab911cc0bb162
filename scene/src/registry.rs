//! The type registry: which component and resource types scenes may hold,
//! under which names, and how to read, write and remap each.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_content::Value as Content;

use super::columns::{encode_rows, new_column, write_value, EncodeRowsFn, PendingColumn, WriteFn};
use super::value::{to_content, DecodeError, SceneValue};
use mosaic::Entity;
use mosaic::World;
use mosaic::{short_type_name, Component};
use mosaic::{EntityMapper, MapEntities};

/// A decoded value waiting to be put into a world.
pub(crate) trait Pending: Send {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper);
    /// Puts the value onto `entity` (a component) or into the world (a
    /// resource: `entity` is `None`).
    fn put(self: Box<Self>, world: &mut World, entity: Option<Entity>);
    /// The value, for [`Entry::to_postcard`] (which knows its type).
    fn as_any(&self) -> &dyn Any;
}

/// How a decoded `T` is put into a world, and remapped.
type PutFn<T> = fn(&mut World, Option<Entity>, T);
pub(crate) type MapFn<T> = fn(&mut T, &mut dyn EntityMapper);

/// A typed value waiting to be put: a component or a resource, as its
/// registration's `put` says.
struct PendingValue<T> {
    value: T,
    map: Option<MapFn<T>>,
    put: PutFn<T>,
}

impl<T: Send + Sync + 'static> Pending for PendingValue<T> {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        if let Some(map) = self.map {
            map(&mut self.value, mapper);
        }
    }

    fn put(self: Box<Self>, world: &mut World, entity: Option<Entity>) {
        (self.put)(world, entity, self.value);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The postcard bytes of a decoded `T` (`None` if `pending` is not one, or
/// postcard cannot write it).
fn postcard_of<T: Serialize + Send + Sync + 'static>(pending: &dyn Pending) -> Option<Vec<u8>> {
    let value = &pending.as_any().downcast_ref::<PendingValue<T>>()?.value;
    postcard::to_allocvec(value).ok()
}

/// Puts a component onto its entity. The loader spawned the entity just
/// before; only a hook or observer run by an earlier insert can have
/// despawned it since, and then the value has nowhere to go.
fn put_component<T: Component>(world: &mut World, entity: Option<Entity>, value: T) {
    if let Some(entity) = entity {
        let _ = world.insert_one(entity, value);
    }
}

fn put_resource<T: Send + Sync + 'static>(world: &mut World, _: Option<Entity>, value: T) {
    world.insert_resource(value);
}

fn map_with<T: MapEntities>(value: &mut T, mapper: &mut dyn EntityMapper) {
    value.map_entities(mapper);
}

fn transcode<T: Serialize + DeserializeOwned>(
    value: &SceneValue,
) -> Result<Content<'static>, DecodeError> {
    let decoded: T = value.decode(PhantomData::<T>)?;
    to_content(&decoded).map_err(|message| DecodeError {
        message,
        path: String::new(),
        at: value.at(),
    })
}

fn decode_as<T: Send + Sync + 'static + DeserializeOwned>(
    value: &SceneValue,
    map: Option<MapFn<T>>,
    put: PutFn<T>,
) -> Result<Box<dyn Pending>, DecodeError> {
    let value: T = value.decode(PhantomData::<T>)?;
    Ok(Box::new(PendingValue { value, map, put }))
}

/// Component or resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Component,
    Resource,
}

type DecodeFn = fn(&SceneValue) -> Result<Box<dyn Pending>, DecodeError>;
type TranscodeFn = fn(&SceneValue) -> Result<Content<'static>, DecodeError>;
type PostcardFn = fn(&dyn Pending) -> Option<Vec<u8>>;
type EncodeFn = fn(&World, Option<Entity>) -> Option<Result<Content<'static>, String>>;
/// Removes (and drops) the component from an entity; false if it had none.
type RemoveFn = fn(&mut World, Entity) -> bool;

/// How a component type's values are read and written a column at a time.
#[derive(Clone, Copy)]
pub(crate) struct ColumnFns {
    /// An empty column to decode values into.
    pub new: fn() -> Box<dyn PendingColumn>,
    /// Appends the postcard bytes of the values on some entities of one
    /// archetype (see [`encode_rows`]).
    pub encode: EncodeRowsFn,
    /// Decodes one value from postcard bytes and hands it to a serializer.
    pub write: WriteFn,
}

/// What the registry knows about one type.
#[derive(Clone)]
pub(crate) struct Entry {
    pub name: String,
    pub type_id: TypeId,
    /// The full Rust type name, for messages.
    pub type_name: &'static str,
    pub kind: Kind,
    pub maps_entities: bool,
    decode: DecodeFn,
    transcode: TranscodeFn,
    postcard: PostcardFn,
    encode: EncodeFn,
    /// Components only.
    remove: Option<RemoveFn>,
    /// Components only.
    pub column: Option<ColumnFns>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("maps_entities", &self.maps_entities)
            .finish()
    }
}

impl Entry {
    /// Decodes a value. (The loader counts the entity references decoding
    /// read and refuses a value whose type did not map them all.)
    pub fn decode(&self, value: &SceneValue) -> Result<Box<dyn Pending>, DecodeError> {
        (self.decode)(value)
    }

    /// The postcard bytes of `pending`, a value this entry decoded (`None`
    /// if postcard cannot write it).
    pub fn to_postcard(&self, pending: &dyn Pending) -> Option<Vec<u8>> {
        (self.postcard)(pending)
    }

    /// The value decoded with its type and put in the serde data model.
    pub fn to_content(&self, value: &SceneValue) -> Result<Content<'static>, DecodeError> {
        (self.transcode)(value)
    }

    /// The value of this type on `entity` (or the resource), if present.
    pub fn encode(
        &self,
        world: &World,
        entity: Option<Entity>,
    ) -> Option<Result<Content<'static>, String>> {
        (self.encode)(world, entity)
    }

    /// Removes this component from `entity`: false if it had none (or this
    /// is a resource type).
    pub fn remove(&self, world: &mut World, entity: Entity) -> bool {
        self.remove.is_some_and(|remove| remove(world, entity))
    }
}

#[derive(Clone, Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    by_name: FxHashMap<String, usize>,
    by_type: FxHashMap<(TypeId, bool), usize>,
}

/// The component and resource types scenes may hold, by name.
///
/// Register every type a scene file names, or a world you save holds.
/// Names default to the type's short name (`Position`); choose another with
/// [`TypeRegistry::register_as`]. Cloning a registry is cheap (shared until
/// changed).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic_scene::TypeRegistry;
/// use serde::{Deserialize, Serialize};
/// #[derive(Component, Serialize, Deserialize)]
/// struct Position { x: f32, y: f32 }
/// #[derive(Serialize, Deserialize)]
/// struct Gravity(f32);
///
/// let mut registry = TypeRegistry::new();
/// registry.register::<Position>();
/// registry.register_resource::<Gravity>();
/// assert!(registry.contains("Position"));
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["Position", "Gravity"]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct TypeRegistry {
    inner: Arc<Inner>,
}

/// Options of one registration, returned by [`TypeRegistry::register`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic_scene::TypeRegistry;
/// use serde::{Deserialize, Serialize};
/// #[derive(Component, MapEntities, Serialize, Deserialize)]
/// struct Target(#[entities] Entity);
/// let mut registry = TypeRegistry::new();
/// registry.register::<Target>().map_entities();
/// ```
#[derive(Debug)]
pub struct Registration<'r, T, K = AsComponent> {
    registry: &'r mut TypeRegistry,
    index: usize,
    marker: PhantomData<fn(T, K)>,
}

/// Marks a [`Registration`] of a component type.
#[derive(Debug)]
pub enum AsComponent {}

/// Marks a [`Registration`] of a resource type.
#[derive(Debug)]
pub enum AsResource {}

impl<T: Component + DeserializeOwned + MapEntities> Registration<'_, T, AsComponent> {
    /// Remaps the entity references in `T` when scenes are loaded (see
    /// [`MapEntities`]). Without it, loading a `T` that holds entities is
    /// refused.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// use serde::{Deserialize, Serialize};
    /// #[derive(Component, MapEntities, Serialize, Deserialize)]
    /// struct Parent(#[entities] Entity);
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Parent>().map_entities();
    /// ```
    pub fn map_entities(self) -> Self {
        let inner = Arc::make_mut(&mut self.registry.inner);
        let entry = &mut inner.entries[self.index];
        entry.maps_entities = true;
        entry.decode = |value| decode_as::<T>(value, Some(map_with::<T>), put_component::<T>);
        if let Some(column) = &mut entry.column {
            column.new = || new_column::<T>(Some(map_with::<T>));
        }
        self
    }
}

impl<T: Send + Sync + 'static + DeserializeOwned + MapEntities> Registration<'_, T, AsResource> {
    /// Remaps the entity references in resource `T` when scenes are loaded.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// use serde::{Deserialize, Serialize};
    /// #[derive(MapEntities, Serialize, Deserialize)]
    /// struct Camera { #[entities] follows: Option<Entity> }
    /// let mut registry = TypeRegistry::new();
    /// registry.register_resource::<Camera>().map_entities();
    /// ```
    pub fn map_entities(self) -> Self {
        let inner = Arc::make_mut(&mut self.registry.inner);
        let entry = &mut inner.entries[self.index];
        entry.maps_entities = true;
        entry.decode = |value| decode_as::<T>(value, Some(map_with::<T>), put_resource::<T>);
        self
    }
}

impl TypeRegistry {
    /// An empty registry.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic_scene::TypeRegistry::new().is_empty());
    /// ```
    pub fn new() -> TypeRegistry {
        TypeRegistry::default()
    }

    /// Registers component `T` under its short type name.
    ///
    /// Panics if another type is registered under that name (use
    /// [`TypeRegistry::register_as`] to pick another).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Health(u32);
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// assert!(registry.contains("Health"));
    /// ```
    pub fn register<T>(&mut self) -> Registration<'_, T>
    where
        T: Component + Serialize + DeserializeOwned,
    {
        self.register_as::<T>(&short_type_name::<T>())
    }

    /// Registers component `T` under `name`.
    ///
    /// Panics if `name` is taken by another type.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Hp(u32);
    /// let mut registry = TypeRegistry::new();
    /// registry.register_as::<Hp>("Health");
    /// assert!(registry.contains("Health"));
    /// ```
    pub fn register_as<T>(&mut self, name: &str) -> Registration<'_, T>
    where
        T: Component + Serialize + DeserializeOwned,
    {
        fn encode<T: Component + Serialize>(
            world: &World,
            entity: Option<Entity>,
        ) -> Option<Result<Content<'static>, String>> {
            let value = world.get::<T>(entity?).ok()?;
            Some(to_content(value))
        }
        self.add(Entry {
            name: name.to_owned(),
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            kind: Kind::Component,
            maps_entities: false,
            decode: |value| decode_as::<T>(value, None, put_component::<T>),
            transcode: transcode::<T>,
            postcard: postcard_of::<T>,
            encode: encode::<T>,
            remove: Some(|world, entity| world.remove_one::<T>(entity).is_ok()),
            column: Some(ColumnFns {
                new: || new_column::<T>(None),
                encode: encode_rows::<T>,
                write: write_value::<T>,
            }),
        })
    }

    /// Registers resource `R` under its short type name.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Score(u64);
    /// let mut registry = TypeRegistry::new();
    /// registry.register_resource::<Score>();
    /// assert!(registry.contains("Score"));
    /// ```
    pub fn register_resource<R>(&mut self) -> Registration<'_, R, AsResource>
    where
        R: Send + Sync + 'static + Serialize + DeserializeOwned,
    {
        self.register_resource_as::<R>(&short_type_name::<R>())
    }

    /// Registers resource `R` under `name`.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Score(u64);
    /// let mut registry = TypeRegistry::new();
    /// registry.register_resource_as::<Score>("Points");
    /// assert!(registry.contains("Points"));
    /// ```
    pub fn register_resource_as<R>(&mut self, name: &str) -> Registration<'_, R, AsResource>
    where
        R: Send + Sync + 'static + Serialize + DeserializeOwned,
    {
        fn encode<R: Send + Sync + 'static + Serialize>(
            world: &World,
            _: Option<Entity>,
        ) -> Option<Result<Content<'static>, String>> {
            let value = world.get_resource::<R>()?;
            Some(to_content(value))
        }
        self.add(Entry {
            name: name.to_owned(),
            type_id: TypeId::of::<R>(),
            type_name: std::any::type_name::<R>(),
            kind: Kind::Resource,
            maps_entities: false,
            decode: |value| decode_as::<R>(value, None, put_resource::<R>),
            transcode: transcode::<R>,
            postcard: postcard_of::<R>,
            encode: encode::<R>,
            remove: None,
            column: None,
        })
    }

    fn add<T, K>(&mut self, entry: Entry) -> Registration<'_, T, K> {
        let key = (entry.type_id, entry.kind == Kind::Resource);
        let inner = Arc::make_mut(&mut self.inner);
        if let Some(&i) = inner.by_name.get(&entry.name) {
            assert!(
                inner.entries[i].type_id == entry.type_id && inner.entries[i].kind == entry.kind,
                "scene name `{}` is already registered for another type; use `register_as` to choose another name",
                entry.name
            );
            return Registration {
                registry: self,
                index: i,
                marker: PhantomData,
            };
        }
        if let Some(&i) = inner.by_type.get(&key) {
            // The same type under a second name: the new name replaces it.
            let old = std::mem::replace(&mut inner.entries[i].name, entry.name.clone());
            inner.by_name.remove(&old);
            inner.by_name.insert(entry.name, i);
            return Registration {
                registry: self,
                index: i,
                marker: PhantomData,
            };
        }
        let index = inner.entries.len();
        inner.by_name.insert(entry.name.clone(), index);
        inner.by_type.insert(key, index);
        inner.entries.push(entry);
        Registration {
            registry: self,
            index,
            marker: PhantomData,
        }
    }

    /// True if a component or resource is registered under `name`.
    ///
    /// # Example
    /// ```
    /// assert!(!mosaic_scene::TypeRegistry::new().contains("Position"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.inner.by_name.contains_key(name)
    }

    /// The registered names, in registration order.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic_scene::TypeRegistry::new().names().count(), 0);
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.inner.entries.iter().map(|e| e.name.as_str())
    }

    /// Number of registered types.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic_scene::TypeRegistry::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    /// True if nothing is registered.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic_scene::TypeRegistry::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.inner.entries.is_empty()
    }

    pub(crate) fn get(&self, name: &str, kind: Kind) -> Option<&Entry> {
        let e = &self.inner.entries[*self.inner.by_name.get(name)?];
        (e.kind == kind).then_some(e)
    }

    pub(crate) fn by_type(&self, type_id: TypeId, kind: Kind) -> Option<&Entry> {
        let i = *self.inner.by_type.get(&(type_id, kind == Kind::Resource))?;
        Some(&self.inner.entries[i])
    }

    pub(crate) fn entries(&self, kind: Kind) -> impl Iterator<Item = &Entry> + '_ {
        self.inner.entries.iter().filter(move |e| e.kind == kind)
    }

    pub(crate) fn names_of(&self, kind: Kind) -> impl Iterator<Item = &str> + '_ {
        self.entries(kind).map(|e| e.name.as_str())
    }
}
