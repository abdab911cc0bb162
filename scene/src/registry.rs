//! The type registry: which component and resource types scenes may hold,
//! under which names, and how to read, write and remap each.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_content::Value as Content;

use super::columns::{
    EncodeRowsFn, PendingColumn, WriteFn, encode_rows, new_column, write_postcard, write_value,
};
use super::value::{DecodeError, SceneValue, take_postcard, to_content};
use mosaic::Entity;
use mosaic::World;
use mosaic::{Component, short_type_name};
use mosaic::{EntityMapper, MapEntities};
use mosaic::{Relation, Relationship};

/// A decoded value waiting to be put into a world.
pub(crate) trait Pending: Send {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper);
    /// Puts the value onto `entity` (a component) or into the world (a
    /// resource: `entity` is `None`).
    fn put(self: Box<Self>, world: &mut World, entity: Option<Entity>);
    /// The value, for [`Entry::to_postcard`] (which knows its type).
    fn as_any(&self) -> &dyn Any;
    /// For the edges of an [acyclic](mosaic::Relationship::ACYCLIC)
    /// relation: the type its registration is keyed by (`Relation<R>`) and
    /// the targets, which the loader checks for a cycle before anything
    /// reaches the world.
    fn acyclic_targets(&self) -> Option<(TypeId, Vec<Entity>)> {
        None
    }
    /// True for a source's edges: the loader relates them after every
    /// other value, sources in ascending scene id.
    fn is_edges(&self) -> bool {
        false
    }
    /// True for a target's order of sources: put after every edge.
    fn after_edges(&self) -> bool {
        false
    }
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

/// A decoded `T` in the serde data model (`None` if `pending` is not one).
fn content_of<T: Serialize + Send + Sync + 'static>(
    pending: &dyn Pending,
) -> Option<Content<'static>> {
    let value = &pending.as_any().downcast_ref::<PendingValue<T>>()?.value;
    to_content(value).ok()
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

/// Decodes a `T` from a type-erased deserializer (a value met in the walk
/// over a text scene) and puts it in the serde data model.
fn transcode_erased<T: Serialize + DeserializeOwned>(
    de: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<Content<'static>, erased_serde::Error> {
    let value: T = erased_serde::deserialize(de)?;
    to_content(&value).map_err(serde::de::Error::custom)
}

/// Decodes a `T` from a type-erased deserializer (a value met in the walk
/// over a text scene).
fn erased_as<T: Send + Sync + 'static + DeserializeOwned>(
    de: &mut dyn erased_serde::Deserializer<'_>,
    map: Option<MapFn<T>>,
    put: PutFn<T>,
) -> Result<Box<dyn Pending>, erased_serde::Error> {
    let value: T = erased_serde::deserialize(de)?;
    Ok(Box::new(PendingValue { value, map, put }))
}

/// A [`ReadFn`]: decodes a `W`, refused if `valid` says so.
fn read_checked<W: Serialize + DeserializeOwned>(
    de: &mut dyn erased_serde::Deserializer<'_>,
    out: &mut Vec<u8>,
    valid: fn(&W) -> bool,
) -> bool {
    let start = out.len();
    let read = erased_serde::deserialize::<W>(de)
        .is_ok_and(|value| valid(&value) && write_postcard(&value, out).is_ok())
        // Postcard is not self-describing: a type that reads itself with
        // `deserialize_any` writes bytes it cannot read back.
        && reads_back::<W>(&out[start..]);
    if !read {
        out.truncate(start);
    }
    read
}

/// Whether `bytes` are exactly one `W`'s postcard bytes.
fn reads_back<W: DeserializeOwned>(bytes: &[u8]) -> bool {
    let mut de = super::depth::deserializer(bytes);
    W::deserialize(&mut de).is_ok() && matches!(de.finalize(), Ok([]))
}

fn read_as<T: Serialize + DeserializeOwned>(
    de: &mut dyn erased_serde::Deserializer<'_>,
    out: &mut Vec<u8>,
) -> bool {
    read_checked::<T>(de, out, |_| true)
}

fn read_edges<R: Relationship + Serialize + DeserializeOwned>(
    de: &mut dyn erased_serde::Deserializer<'_>,
    out: &mut Vec<u8>,
) -> bool {
    read_checked::<EdgeList<R>>(de, out, |edges| check_edges(edges).is_ok())
}

fn decode_as<T: Send + Sync + 'static + DeserializeOwned>(
    value: &SceneValue,
    map: Option<MapFn<T>>,
    put: PutFn<T>,
) -> Result<Box<dyn Pending>, DecodeError> {
    let value: T = value.decode(PhantomData::<T>)?;
    Ok(Box::new(PendingValue { value, map, put }))
}

/// The edges of one source as a scene holds them: `(target, data)` pairs,
/// the targets as scene entity references (remapped on load).
type EdgeList<R> = Vec<(Entity, R)>;

/// The decoded edges of one source, waiting for every entity of the scene.
struct PendingEdges<R> {
    edges: EdgeList<R>,
}

impl<R: Relationship> Pending for PendingEdges<R> {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        for (target, _) in &mut self.edges {
            *target = mapper.map(*target);
        }
    }

    /// Relates the source to each target. The loader spawned both just
    /// before and checked the edges (targets in the scene, at most one for
    /// a `one` relation, no repeat, no cycle), so `relate` fails only if a
    /// hook or observer despawned one of them since: that edge has nowhere
    /// to go, as a component whose entity was despawned. An observer of
    /// `relate` that panics does not cost the source its other edges: the
    /// first panic goes on once they are all in.
    fn put(self: Box<Self>, world: &mut World, entity: Option<Entity>) {
        let Some(source) = entity else { return };
        let mut caught = None;
        for (target, data) in self.edges {
            let relate = AssertUnwindSafe(|| {
                let _ = world.relate(source, target, data);
            });
            if let Err(payload) = catch_unwind(relate) {
                caught.get_or_insert(payload);
            }
        }
        if let Some(payload) = caught {
            resume_unwind(payload);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn is_edges(&self) -> bool {
        true
    }

    fn acyclic_targets(&self) -> Option<(TypeId, Vec<Entity>)> {
        R::ACYCLIC.then(|| {
            let targets = self.edges.iter().map(|e| e.0).collect();
            (TypeId::of::<Relation<R>>(), targets)
        })
    }
}

/// The order of one target's sources of `R`, as a scene holds it (scene
/// entity references, remapped on load), waiting for every edge.
struct PendingOrder<R> {
    sources: Vec<Entity>,
    relation: PhantomData<fn() -> R>,
}

impl<R: Relationship> Pending for PendingOrder<R> {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        for source in &mut self.sources {
            *source = mapper.map(*source);
        }
    }

    /// Sorts the target's sources into the saved order (every edge is in
    /// by now). A source the list does not name keeps its place after the
    /// named ones; a name that is not a source is ignored: the order never
    /// makes or removes an edge.
    fn put(self: Box<Self>, world: &mut World, entity: Option<Entity>) {
        let Some(target) = entity else { return };
        if self.sources.len() < 2 {
            return;
        }
        let rank: rustc_hash::FxHashMap<Entity, usize> = self
            .sources
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, i))
            .collect();
        let _ = world.sort_sources_by_key::<R, usize>(target, |s| {
            rank.get(&s).copied().unwrap_or(usize::MAX)
        });
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn after_edges(&self) -> bool {
        true
    }
}

/// True if a load would not give `sources` back in this order by itself:
/// it relates sources in ascending scene id.
fn needs_order(sources: &[Entity]) -> bool {
    sources.windows(2).any(|w| w[0].to_bits() > w[1].to_bits())
}

fn decode_order<R: Relationship>(value: &SceneValue) -> Result<Box<dyn Pending>, DecodeError> {
    let sources: Vec<Entity> = value.decode(PhantomData::<Vec<Entity>>)?;
    Ok(Box::new(PendingOrder::<R> {
        sources,
        relation: PhantomData,
    }))
}

fn erased_order<R: Relationship>(
    de: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<Box<dyn Pending>, erased_serde::Error> {
    let sources: Vec<Entity> = erased_serde::deserialize(de)?;
    Ok(Box::new(PendingOrder::<R> {
        sources,
        relation: PhantomData,
    }))
}

fn take_order<R: Relationship>(bytes: &[u8]) -> Result<(Box<dyn Pending>, &[u8]), DecodeError> {
    let (sources, rest) = take_postcard(bytes, PhantomData::<Vec<Entity>>)?;
    let pending = PendingOrder::<R> {
        sources,
        relation: PhantomData,
    };
    Ok((Box::new(pending), rest))
}

fn order_postcard<R: Relationship>(pending: &dyn Pending) -> Option<Vec<u8>> {
    let sources = &pending.as_any().downcast_ref::<PendingOrder<R>>()?.sources;
    postcard::to_allocvec(sources).ok()
}

fn order_content<R: Relationship>(pending: &dyn Pending) -> Option<Content<'static>> {
    let sources = &pending.as_any().downcast_ref::<PendingOrder<R>>()?.sources;
    to_content(sources).ok()
}

fn encode_order<R: Relationship>(
    world: &World,
    entity: Option<Entity>,
) -> Option<Result<Content<'static>, String>> {
    let sources = world.sources::<R>(entity?);
    needs_order(sources).then(|| to_content(sources))
}

/// Appends the order of each of `entities`' sources of `R`: the list when
/// a load would not give it back by itself, else an empty one (and a
/// column of empty lists only is left out of the file, see
/// [`ColumnFns::optional`]).
fn encode_order_rows<R: Relationship>(
    world: &World,
    _: mosaic::ArchetypeId,
    _: Option<&[usize]>,
    entities: &[Entity],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    for &entity in entities {
        let sources = world.sources::<R>(entity);
        if needs_order(sources) {
            write_postcard(sources, out)?;
        } else {
            write_postcard(&Vec::<Entity>::new(), out)?;
        }
    }
    Ok(())
}

/// Refuses edges a world would not take as they are: two targets for a
/// `one` relation, or one target twice.
fn check_edges<R: Relationship>(edges: &EdgeList<R>) -> Result<(), String> {
    if R::ONE && edges.len() > 1 {
        return Err(format!(
            "`{}` is a `one` relation: a source has at most one target, here {}",
            short_type_name::<R>(),
            edges.len()
        ));
    }
    let mut seen = rustc_hash::FxHashSet::default();
    for (target, _) in edges {
        if !seen.insert(*target) {
            return Err(format!(
                "target {} is listed twice (an entity has one `{}` edge to a target)",
                target.scene_id(),
                short_type_name::<R>()
            ));
        }
    }
    Ok(())
}

fn decode_edges<R: Relationship + DeserializeOwned>(
    value: &SceneValue,
) -> Result<Box<dyn Pending>, DecodeError> {
    let edges: EdgeList<R> = value.decode(PhantomData::<EdgeList<R>>)?;
    check_edges(&edges).map_err(|message| DecodeError {
        message,
        path: String::new(),
        at: value.at(),
    })?;
    Ok(Box::new(PendingEdges { edges }))
}

fn erased_edges<R: Relationship + DeserializeOwned>(
    de: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<Box<dyn Pending>, erased_serde::Error> {
    let edges: EdgeList<R> = erased_serde::deserialize(de)?;
    check_edges(&edges).map_err(serde::de::Error::custom)?;
    Ok(Box::new(PendingEdges { edges }))
}

fn take_edges<R: Relationship + DeserializeOwned>(
    bytes: &[u8],
) -> Result<(Box<dyn Pending>, &[u8]), DecodeError> {
    let (edges, rest) = take_postcard(bytes, PhantomData::<EdgeList<R>>)?;
    check_edges(&edges).map_err(|message| DecodeError {
        message,
        path: String::new(),
        at: super::error::Where::Unknown,
    })?;
    Ok((Box::new(PendingEdges::<R> { edges }), rest))
}

fn edges_postcard<R: Relationship + Serialize>(pending: &dyn Pending) -> Option<Vec<u8>> {
    let edges = &pending.as_any().downcast_ref::<PendingEdges<R>>()?.edges;
    postcard::to_allocvec(edges).ok()
}

fn edges_content<R: Relationship + Serialize>(pending: &dyn Pending) -> Option<Content<'static>> {
    let edges = &pending.as_any().downcast_ref::<PendingEdges<R>>()?.edges;
    to_content(edges).ok()
}

/// A source's edges, written as an [`EdgeList`] without building one.
struct EdgesOut<'a, R: Relationship>(&'a Relation<R>);

impl<R: Relationship + Serialize> Serialize for EdgesOut<'_, R> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

fn encode_edges<R: Relationship + Serialize>(
    world: &World,
    entity: Option<Entity>,
) -> Option<Result<Content<'static>, String>> {
    let relation = world.get::<Relation<R>>(entity?).ok()?;
    Some(to_content(&EdgesOut(relation)))
}

/// Appends the edges of each of `entities` (an entity without edges of
/// `R` has an empty list).
fn encode_edge_rows<R: Relationship + Serialize>(
    world: &World,
    _: mosaic::ArchetypeId,
    _: Option<&[usize]>,
    entities: &[Entity],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    for &entity in entities {
        match world.get::<Relation<R>>(entity) {
            Ok(relation) => write_postcard(&EdgesOut(relation), out)?,
            Err(_) => write_postcard(&Vec::<()>::new(), out)?,
        }
    }
    Ok(())
}

/// Component or resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Component,
    Resource,
}

type DecodeFn = fn(&SceneValue) -> Result<Box<dyn Pending>, DecodeError>;
/// Decodes one value from a type-erased deserializer (see `doc`).
pub(crate) type ErasedDecodeFn =
    fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<Box<dyn Pending>, erased_serde::Error>;
type ErasedContentFn =
    fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<Content<'static>, erased_serde::Error>;
/// Decodes one value from a type-erased deserializer and appends its
/// postcard bytes to a buffer (see `read`); false, with the buffer as it
/// was, if the value does not decode or its bytes do not read back.
pub(crate) type ReadFn = fn(&mut dyn erased_serde::Deserializer<'_>, &mut Vec<u8>) -> bool;
/// Decodes one value from the front of postcard bytes; returns the rest.
pub(crate) type TakeFn = for<'b> fn(&'b [u8]) -> Result<(Box<dyn Pending>, &'b [u8]), DecodeError>;
type TranscodeFn = fn(&SceneValue) -> Result<Content<'static>, DecodeError>;
type PostcardFn = fn(&dyn Pending) -> Option<Vec<u8>>;
type ContentOfFn = fn(&dyn Pending) -> Option<Content<'static>>;
type EncodeFn = fn(&World, Option<Entity>) -> Option<Result<Content<'static>, String>>;
/// Removes (and drops) the component from an entity; false if it had none.
type RemoveFn = fn(&mut World, Option<Entity>) -> bool;

/// How a component type's values are read and written a column at a time.
#[derive(Clone, Copy)]
pub(crate) struct ColumnFns {
    /// An empty column to decode values into (`None` for a relation: its
    /// edges are put one source at a time, after every entity exists).
    pub new: Option<fn() -> Box<dyn PendingColumn>>,
    /// Appends the postcard bytes of the values on some entities of one
    /// archetype (see [`encode_rows`]).
    pub encode: EncodeRowsFn,
    /// Decodes one value from postcard bytes and hands it to a serializer.
    pub write: WriteFn,
    /// Stored in a sparse set: not part of its entity's table (entities
    /// that differ only in sparse components share one table).
    pub sparse: bool,
    /// Left out of a saved table when every value is empty (one byte,
    /// postcard's empty list): a relation's order of sources, written only
    /// for targets whose order a load would not give back.
    pub optional: bool,
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
    /// `decode`, from the deserializer of a walk over a text scene.
    pub decode_erased: ErasedDecodeFn,
    /// `decode_erased` straight to postcard bytes, as a text scene is read
    /// with its registry at hand.
    pub read: ReadFn,
    transcode: TranscodeFn,
    /// `transcode`, from the deserializer of a walk over a text scene.
    pub transcode_erased: ErasedContentFn,
    postcard: PostcardFn,
    content_of: ContentOfFn,
    encode: EncodeFn,
    /// A component's removal from the entity; a resource's from the world
    /// (the entity is then ignored).
    remove: Option<RemoveFn>,
    /// Components only.
    pub column: Option<ColumnFns>,
    /// Relations only: how a binary column's values are decoded one by one
    /// (they go in after the entities, not as a column).
    pub take: Option<TakeFn>,
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

    /// `pending` (a value this entry decoded) in the serde data model.
    pub fn content_of(&self, pending: &dyn Pending) -> Option<Content<'static>> {
        (self.content_of)(pending)
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

    /// Removes this component from `entity` (or, given `None`, this
    /// resource from the world): false if there was none.
    pub fn remove(&self, world: &mut World, entity: Option<Entity>) -> bool {
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
        entry.decode_erased = |de| erased_as::<T>(de, Some(map_with::<T>), put_component::<T>);
        if let Some(column) = &mut entry.column {
            column.new = Some(|| new_column::<T>(Some(map_with::<T>)));
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
        entry.decode_erased = |de| erased_as::<T>(de, Some(map_with::<T>), put_resource::<T>);
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
            decode_erased: |de| erased_as::<T>(de, None, put_component::<T>),
            read: read_as::<T>,
            transcode: transcode::<T>,
            transcode_erased: transcode_erased::<T>,
            postcard: postcard_of::<T>,
            content_of: content_of::<T>,
            encode: encode::<T>,
            remove: Some(|world, entity| entity.is_some_and(|e| world.remove_one::<T>(e).is_ok())),
            column: Some(ColumnFns {
                new: Some(|| new_column::<T>(None)),
                encode: encode_rows::<T>,
                write: write_value::<T>,
                sparse: T::STORAGE == mosaic::StorageType::SparseSet,
                optional: false,
            }),
            take: None,
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
            decode_erased: |de| erased_as::<R>(de, None, put_resource::<R>),
            read: read_as::<R>,
            transcode: transcode::<R>,
            transcode_erased: transcode_erased::<R>,
            postcard: postcard_of::<R>,
            content_of: content_of::<R>,
            encode: encode::<R>,
            remove: Some(|world, _| world.remove_resource::<R>().is_some()),
            column: None,
            take: None,
        })
    }

    /// Registers relation `R` under its short type name: scenes save each
    /// source's `R` edges (its [`Relation<R>`](struct@Relation)) as one value, a list of
    /// `(target, data)` pairs, and loading relates them again, the targets
    /// remapped to the entities the load spawned (like any
    /// [`MapEntities`] reference).
    ///
    /// `R` must be `Serialize` and `Deserialize` (its data; a unit relation
    /// such as [`ChildOf`](mosaic::ChildOf) writes as `()`). Loading refuses,
    /// before anything reaches the world, a target the scene lacks, two
    /// targets for a `one` relation, a target listed twice, and edges of an
    /// [acyclic](Relationship::ACYCLIC) relation that close a cycle. Edges
    /// go in after every entity of the scene, so hooks and observers of
    /// `relate` see both ends with all their components. Both orders come
    /// back exactly: a source's targets as listed, and a target's sources
    /// too: loading relates sources in ascending id, and a target whose
    /// sources were in another order is saved with `"<name>.order"` (for
    /// `ChildOf`, `"ChildOf.order": [4, 6, 5]`), which loading restores
    /// ([`World::sort_sources_by_key`](mosaic::World::sort_sources_by_key)). A saved edge whose
    /// target is not among the saved entities makes a file that does not
    /// load ([`Scene::from_entities`](crate::Scene::from_entities) of part
    /// of a hierarchy: include the targets). Edge data that holds entities
    /// is not remapped: loading it is refused with
    /// [`SceneError::UnmappedEntities`](crate::SceneError::UnmappedEntities).
    ///
    /// Panics if another type is registered under that name.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, TypeRegistry};
    /// use serde::{Deserialize, Serialize};
    /// #[derive(Relation, Serialize, Deserialize, Debug, PartialEq)]
    /// struct Owes(u32);
    ///
    /// let mut registry = TypeRegistry::new();
    /// registry.register_relation::<ChildOf>();
    /// registry.register_relation::<Owes>();
    ///
    /// let mut world = World::new();
    /// let (tank, turret) = (world.spawn(()), world.spawn(()));
    /// world.relate(turret, tank, ChildOf(tank)).unwrap();
    /// world.relate(tank, turret, Owes(5)).unwrap();
    /// let text = Scene::from_world(&world, &registry).unwrap().to_ron_string().unwrap();
    ///
    /// let mut other = World::new();
    /// other.spawn(()); // not empty: the scene's entities get new handles
    /// let spawned = Scene::from_ron_str(&text).unwrap().spawn_into(&mut other, &registry).unwrap();
    /// let (tank2, turret2) = (spawned[tank.scene_id()], spawned[turret.scene_id()]);
    /// assert_eq!(other.targets::<ChildOf>(turret2), [tank2]);
    /// assert_eq!(other.relation::<Owes>(tank2, turret2), Some(&Owes(5)));
    /// ```
    pub fn register_relation<R>(&mut self) -> &mut TypeRegistry
    where
        R: Relationship + Serialize + DeserializeOwned,
    {
        self.register_relation_as::<R>(&short_type_name::<R>())
    }

    /// Registers relation `R` under `name` (see
    /// [`TypeRegistry::register_relation`]).
    ///
    /// Panics if `name` is taken by another type.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// let mut registry = TypeRegistry::new();
    /// registry.register_relation_as::<ChildOf>("Parent");
    /// assert!(registry.contains("Parent"));
    /// ```
    pub fn register_relation_as<R>(&mut self, name: &str) -> &mut TypeRegistry
    where
        R: Relationship + Serialize + DeserializeOwned,
    {
        self.add::<R, AsComponent>(Entry {
            name: name.to_owned(),
            type_id: TypeId::of::<Relation<R>>(),
            type_name: std::any::type_name::<Relation<R>>(),
            kind: Kind::Component,
            maps_entities: true,
            decode: decode_edges::<R>,
            decode_erased: erased_edges::<R>,
            read: read_edges::<R>,
            transcode: transcode::<EdgeList<R>>,
            transcode_erased: transcode_erased::<EdgeList<R>>,
            postcard: edges_postcard::<R>,
            content_of: edges_content::<R>,
            encode: encode_edges::<R>,
            remove: Some(|world, entity| entity.is_some_and(|e| world.unrelate_all::<R>(e) > 0)),
            column: Some(ColumnFns {
                new: None,
                encode: encode_edge_rows::<R>,
                write: write_value::<EdgeList<R>>,
                sparse: false,
                optional: false,
            }),
            take: Some(take_edges::<R>),
        });
        // The targets' side is the mirror of the edges, but for its order:
        // saved (under `<name>.order`) only for a target whose sources a
        // load would not give back in order.
        self.add::<mosaic::Sources<R>, AsComponent>(Entry {
            name: format!("{name}.order"),
            type_id: TypeId::of::<mosaic::Sources<R>>(),
            type_name: std::any::type_name::<mosaic::Sources<R>>(),
            kind: Kind::Component,
            maps_entities: true,
            decode: decode_order::<R>,
            decode_erased: erased_order::<R>,
            read: read_as::<Vec<Entity>>,
            transcode: transcode::<Vec<Entity>>,
            transcode_erased: transcode_erased::<Vec<Entity>>,
            postcard: order_postcard::<R>,
            content_of: order_content::<R>,
            encode: encode_order::<R>,
            remove: None,
            column: Some(ColumnFns {
                new: None,
                encode: encode_order_rows::<R>,
                write: write_value::<Vec<Entity>>,
                sparse: false,
                optional: true,
            }),
            take: Some(take_order::<R>),
        });
        self
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

    pub(crate) fn all_entries(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.inner.entries.iter()
    }

    pub(crate) fn names_of(&self, kind: Kind) -> impl Iterator<Item = &str> + '_ {
        self.entries(kind).map(|e| e.name.as_str())
    }
}
