//! Loading a scene into a world (all-or-nothing), and prefabs at run time.
//!
//! [`Scene::spawn_into`] is a pipeline of small steps, each a function here:
//!
//! 1. **Parsed** (before `spawn_into`, by `Scene::from_*`): the document's
//!    shape, names and ids, every value's syntax (skipped, not decoded);
//!    a text scene keeps its file, a binary one each column's bytes. A
//!    text scene read with its registry (`Scene::from_ron_str_with`, see
//!    `read`) has its values decoded here already, as postcard bytes:
//!    step 3 then decodes those, and parses no text.
//! 2. **Checked**: schemas valid and consistent with the world and the
//!    registry (`check_schemas`); prefab names unique, every `extends`
//!    known, no cycle (`PrefabPlan::check`); entity ids unique and not
//!    reserved (`check_ids`).
//! 3. **Decoded**: every value decoded with its registered type or schema
//!    (a text scene's as a walk over its file meets it, see `walk`: one
//!    walk for prefabs and resources, if any, one for entities, so each
//!    value is read once, by the format's own deserializer, straight into
//!    its typed column; each prefab's own values once, kept as postcard bytes that its
//!    entities and later `spawn_prefab`s decode, then each prefab resolved
//!    once from its base, `Prefabs::resolve`; entities' values into one typed
//!    column per component and group of entities with the same
//!    components; runtime-defined values and relation edges one source at
//!    a time; resources one by one), and every entity reference checked
//!    to name an entity of the scene (`decode_entities`,
//!    `decode_resources`); relation edges also checked for what `relate`
//!    would refuse or silently change: two targets of a `one` relation, a
//!    target twice (when decoded), a cycle of an acyclic relation
//!    (`check_cycles`, over the whole scene's edges).
//! 4. **Applied** (`Apply::run`, then the prefab library): the only step
//!    that changes the world. Entities are spawned a group at a time into
//!    their final archetypes, with saved handles kept when the world never
//!    had an entity, then runtime-defined components and relation edges
//!    (whose targets must be alive: every entity of the scene is, by
//!    then), resources, prefabs.
//!
//! Why this order: every error a file can cause is found in steps 2 and 3,
//! so an error leaves the world exactly as it was; and user code (hooks,
//! observers, required-component constructors) runs only in step 4, where
//! a panic among it is held until the whole scene is in.

mod walk;

use std::any::TypeId;
use std::cell::OnceCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;

use super::columns::{PendingColumn, left_over};
use super::doc::Place;
use super::error::{SceneError, Where, suggest};
use super::registry::{ColumnFns, Kind, Pending, TakeFn, TypeRegistry};
use super::value::Spot;
use super::value::{
    DecodeError, DynamicSeed, SceneValue, SerDynamic, entity_refs_decoded, scene_id, scene_key,
    take_postcard, to_content,
};
use super::{Prefab, Scene, SceneComponent, SceneTable, TableColumn};
use mosaic::Bundle;
use mosaic::ColumnBatch;
use mosaic::Entity;
use mosaic::{ComponentSchema, DynamicComponent, SchemaError};
use mosaic::{DynamicInsertError, World};
use mosaic::{EntityMapper, MapEntities};

/// The entities a scene spawned, by scene id.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic_scene::{Scene, TypeRegistry};
/// let scene = Scene::from_ron_str("(entities: [(id: 10), (id: 20)])").unwrap();
/// let mut world = World::new();
/// let spawned = scene.spawn_into(&mut world, &TypeRegistry::new()).unwrap();
/// assert_eq!(spawned.len(), 2);
/// assert!(world.contains(spawned[20]));
/// assert_eq!(spawned.get(30), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct SceneSpawn {
    order: Vec<(u64, Entity)>,
    /// `order`'s index by id, built on the first lookup (a load whose
    /// caller never looks an id up does not pay for it).
    by_id: OnceLock<FxHashMap<u64, Entity>>,
}

impl PartialEq for SceneSpawn {
    fn eq(&self, other: &Self) -> bool {
        self.order == other.order
    }
}

impl Eq for SceneSpawn {}

impl SceneSpawn {
    /// The entity spawned for scene id `id`.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # use mosaic_scene::{Scene, TypeRegistry};
    /// let scene = Scene::from_ron_str("(entities: [(id: 1)])").unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &TypeRegistry::new()).unwrap();
    /// assert!(spawned.get(1).is_some());
    /// ```
    pub fn get(&self, id: u64) -> Option<Entity> {
        self.index().get(&id).copied()
    }

    fn index(&self) -> &FxHashMap<u64, Entity> {
        self.by_id
            .get_or_init(|| self.order.iter().copied().collect())
    }

    /// `(scene id, entity)` pairs, in scene order.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # use mosaic_scene::{Scene, TypeRegistry};
    /// let scene = Scene::from_ron_str("(entities: [(id: 5), (id: 6)])").unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &TypeRegistry::new()).unwrap();
    /// assert_eq!(spawned.iter().map(|(id, _)| id).collect::<Vec<_>>(), [5, 6]);
    /// ```
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u64, Entity)> + '_ {
        self.order.iter().copied()
    }

    /// The spawned entities, in scene order.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # use mosaic_scene::{Scene, TypeRegistry};
    /// let scene = Scene::from_ron_str("(entities: [(id: 5)])").unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &TypeRegistry::new()).unwrap();
    /// assert!(spawned.entities().all(|e| world.contains(e)));
    /// ```
    pub fn entities(&self) -> impl ExactSizeIterator<Item = Entity> + '_ {
        self.order.iter().map(|&(_, e)| e)
    }

    /// Number of entities spawned.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic_scene::SceneSpawn::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True if nothing was spawned.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic_scene::SceneSpawn::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

impl std::ops::Index<u64> for SceneSpawn {
    type Output = Entity;

    /// Panics if no entity had scene id `id`.
    fn index(&self, id: u64) -> &Entity {
        self.index()
            .get(&id)
            .unwrap_or_else(|| panic!("no entity had scene id {id}"))
    }
}

/// A decoded value, with the scene entry it came from and the number of
/// entity references decoding read (mapping must visit them all).
type Decoded<'c> = (&'c SceneComponent, Box<dyn Pending>, u64);

/// Decoded components of one entity or prefab.
type PendingList<'c> = Vec<Decoded<'c>>;

/// A runtime-defined component value waiting for its entity.
struct PendingDynamic(DynamicComponent);

impl Pending for PendingDynamic {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        self.0.map_entities(mapper);
    }

    fn put(self: Box<Self>, world: &mut World, entity: Option<Entity>) {
        // The loader declared the schema and spawned `entity` just before;
        // only a hook or observer can have despawned it since. (Runtime-
        // defined components are never resources: `entity` is always set.)
        let Some(entity) = entity else { return };
        match world.insert_dynamic(entity, self.0) {
            Ok(()) | Err(DynamicInsertError::Entity(_)) => {}
            Err(e) => unreachable!("scene value checked against its schema: {e}"),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// What decoding needs besides the value: the registry and the schemas of
/// runtime-defined components (the scene's and the world's).
struct Decoder<'a> {
    registry: &'a TypeRegistry,
    schemas: FxHashMap<&'a str, &'a ComponentSchema>,
}

impl Decoder<'_> {
    /// Decodes one value, counting the entity references it holds (so a
    /// type that maps none or only some of its entity fields is caught when
    /// mapped).
    fn decode<'c>(&self, c: &'c SceneComponent, kind: Kind) -> Result<Decoded<'c>, SceneError> {
        let before = entity_refs_decoded();
        let pending = self.decode_inner(c, kind)?;
        Ok((c, pending, entity_refs_decoded() - before))
    }

    fn decode_inner(&self, c: &SceneComponent, kind: Kind) -> Result<Box<dyn Pending>, SceneError> {
        let wrong = |e: DecodeError| SceneError::WrongShape {
            component: c.name.clone(),
            path: e.path,
            message: e.message,
            at: e.at,
        };
        if let Some(entry) = self.registry.get(&c.name, kind) {
            return entry.decode(&c.value).map_err(wrong);
        }
        if kind == Kind::Component {
            if let Some(schema) = self.schemas.get(c.name.as_str()) {
                let value = c.value.decode(DynamicSeed(schema)).map_err(wrong)?;
                return Ok(Box::new(PendingDynamic(value)));
            }
        }
        Err(self.unknown(c, kind))
    }

    /// Checked: every component of `list` is of a registered type or a
    /// known schema.
    fn check_known(&self, list: &[SceneComponent]) -> Result<(), SceneError> {
        match list.iter().find(|c| {
            self.registry.get(&c.name, Kind::Component).is_none()
                && !self.schemas.contains_key(c.name.as_str())
        }) {
            Some(c) => Err(self.unknown(c, Kind::Component)),
            None => Ok(()),
        }
    }

    /// The error for `c`, whose name is neither registered as `kind` nor
    /// (a component) the name of a schema.
    fn unknown(&self, c: &SceneComponent, kind: Kind) -> SceneError {
        let known: Vec<&str> = match kind {
            Kind::Component => self
                .registry
                .names_of(kind)
                .chain(self.schemas.keys().copied())
                .collect(),
            Kind::Resource => self.registry.names_of(kind).collect(),
        };
        SceneError::UnknownComponent {
            kind: match kind {
                Kind::Component => "component",
                Kind::Resource => "resource",
            },
            name: c.name.clone(),
            suggestion: suggest(&c.name, known),
            at: c.value.at(),
        }
    }

    /// Decodes prefab component `c`, checks its entity references (to the
    /// scene's keys), and returns it as postcard bytes, which decode to
    /// the same value (or as it was, if postcard cannot hold it: a type
    /// that reads itself with `deserialize_any`, such as an untagged enum).
    fn decode_once(
        &self,
        c: &SceneComponent,
        keys: &Keys<'_>,
    ) -> Result<SceneComponent, SceneError> {
        let decoded = self.decode(c, Kind::Component)?;
        self.keep_once(decoded, keys)
    }

    /// [`Decoder::decode_once`] of a value already decoded (`decoded`).
    fn keep_once(
        &self,
        decoded: Decoded<'_>,
        keys: &Keys<'_>,
    ) -> Result<SceneComponent, SceneError> {
        let c = decoded.0;
        let mut pending = vec![decoded];
        map_pending(&mut pending, keys.get())?;
        if !matches!(c.value, SceneValue::Text { .. }) {
            return Ok(c.clone());
        }
        let (_, value, _) = &pending[0];
        let bytes = match self.registry.get(&c.name, Kind::Component) {
            Some(entry) => entry.to_postcard(value.as_ref()),
            None => value
                .as_any()
                .downcast_ref::<PendingDynamic>()
                .and_then(|d| postcard::to_allocvec(&SerDynamic(&d.0)).ok()),
        };
        if let Some(bytes) = bytes {
            let encoded = SceneComponent {
                name: c.name.clone(),
                value: SceneValue::Binary(bytes),
            };
            // Postcard is not self-describing: a type that reads itself with
            // `deserialize_any` writes bytes it cannot read back.
            if self.decode(&encoded, Kind::Component).is_ok() {
                return Ok(encoded);
            }
        }
        // Then in the serde data model, which is self-describing.
        let content = match self.registry.get(&c.name, Kind::Component) {
            Some(entry) => entry.content_of(value.as_ref()),
            None => value
                .as_any()
                .downcast_ref::<PendingDynamic>()
                .and_then(|d| to_content(&SerDynamic(&d.0)).ok()),
        };
        Ok(match content {
            Some(content) => SceneComponent {
                name: c.name.clone(),
                value: SceneValue::Content(content),
            },
            None => c.clone(),
        })
    }

    /// Decodes a list of components (later ones replace earlier ones of the
    /// same name, as overrides do).
    fn decode_all<'c>(
        &self,
        list: impl IntoIterator<Item = &'c SceneComponent>,
    ) -> Result<PendingList<'c>, SceneError> {
        let mut out: PendingList<'_> = Vec::new();
        let mut index: FxHashMap<&str, usize> = FxHashMap::default();
        for c in list {
            let decoded = self.decode(c, Kind::Component)?;
            match index.get(c.name.as_str()) {
                Some(&slot) => out[slot] = decoded,
                None => {
                    index.insert(&c.name, out.len());
                    out.push(decoded);
                }
            }
        }
        Ok(out)
    }
}

/// The scene's keys, each mapped to itself: what checking maps entity
/// references with. Built on first use: a scene whose values hold no
/// entity references never needs it.
struct Keys<'a> {
    order: &'a [(u64, Entity)],
    map: OnceCell<FxHashMap<Entity, Entity>>,
}

impl Keys<'_> {
    fn get(&self) -> &FxHashMap<Entity, Entity> {
        self.map
            .get_or_init(|| self.order.iter().map(|&(_, k)| (k, k)).collect())
    }
}

/// Where an entity of a binary scene is, for errors.
fn binary_entity(id: u64) -> Where {
    Where::Binary(format!("entity {id}"))
}

/// Checks the value just decoded, which read `refs` entity references:
/// `map` maps them (with a mapper over the scene's keys); every reference
/// must be mapped, and to an entity of the scene.
fn check_refs(
    refs: u64,
    keys: &Keys<'_>,
    component: &str,
    at: &dyn Fn() -> Where,
    map: impl FnOnce(&mut KeyMapper<'_>),
) -> Result<(), SceneError> {
    if refs == 0 {
        return Ok(());
    }
    let mut mapper = KeyMapper {
        map: keys.get(),
        missing: None,
        calls: 0,
    };
    map(&mut mapper);
    if mapper.calls < refs {
        return Err(SceneError::UnmappedEntities {
            component: component.to_owned(),
            at: at(),
        });
    }
    if let Some(key) = mapper.missing {
        return Err(SceneError::DanglingReference {
            component: component.to_owned(),
            id: scene_id(key),
            at: at(),
        });
    }
    Ok(())
}

/// A decode error as the scene error for `component`, placed at `at` if
/// the decoder did not place it.
fn wrong_shape(component: &str, e: DecodeError, at: &dyn Fn() -> Where) -> SceneError {
    SceneError::WrongShape {
        component: component.to_owned(),
        path: e.path,
        message: e.message,
        at: match e.at {
            Where::Unknown => at(),
            known => known,
        },
    }
}

/// Decodes one value into `column` with `decode`, then checks its entity
/// references.
fn push_checked(
    column: &mut dyn PendingColumn,
    component: &str,
    keys: &Keys<'_>,
    at: &dyn Fn() -> Where,
    decode: impl FnOnce(&mut dyn PendingColumn) -> Result<(), DecodeError>,
) -> Result<(), SceneError> {
    let before = entity_refs_decoded();
    decode(column).map_err(|e| wrong_shape(component, e, at))?;
    let refs = entity_refs_decoded() - before;
    check_refs(refs, keys, component, at, |m| column.map_last(m))
}

/// Entities with the same registered components, decoded a column each.
struct Group<'s> {
    /// The components' names, sorted; `columns` in the same order.
    names: Vec<&'s str>,
    columns: Vec<Box<dyn PendingColumn>>,
    /// Positions of the entities in the scene.
    rows: Vec<usize>,
}

/// A scene's entities, decoded and checked, waiting to be spawned.
struct Batch<'k, 's> {
    keys: &'k Keys<'k>,
    groups: Vec<Group<'s>>,
    by_names: FxHashMap<Vec<&'s str>, usize>,
    /// For each set of table-stored components, the group that took the
    /// last entity with them: groups that share a table (they differ only
    /// in sparse components) fill it one after the other, so a group is
    /// taken up again only if no other group of its table came between,
    /// and the table's rows keep the scene's order.
    table_tail: FxHashMap<Vec<&'s str>, usize>,
    /// Each registered component's rank in order of first appearance in
    /// the scene: components are registered with the world in that order,
    /// as inserting them one by one did (component ids, and so archetype
    /// component order, follow registration).
    rank: FxHashMap<&'s str, usize>,
    /// Runtime-defined component values, by entity position.
    dynamics: Vec<(usize, Box<dyn Pending>)>,
    /// The names [`Batch::group`] was last asked about, as given, and the
    /// group it answered: consecutive entities usually have the same
    /// components, and then finding their group costs one comparison.
    last: Option<(Vec<&'s str>, usize)>,
    /// A buffer for [`Batch::group_of`].
    names: Vec<&'s str>,
}

/// The names of `names` whose registered component type has a column
/// (`ColumnFns`) that `keep` accepts, in order.
fn with_column<'s>(
    names: &[&'s str],
    registry: &TypeRegistry,
    keep: impl Fn(&ColumnFns) -> bool,
) -> Vec<&'s str> {
    names
        .iter()
        .copied()
        .filter(|n| {
            registry
                .get(n, Kind::Component)
                .and_then(|e| e.column.as_ref())
                .is_some_and(&keep)
        })
        .collect()
}

impl<'s> Batch<'_, 's> {
    /// Decodes the components of the entity at `position`: `own`, and
    /// those of `base` (its prefab's) it does not override. In the order
    /// the walk over a file takes (the inherited ones, then its own in file
    /// order), so a scene fails at the same value whichever way it was read.
    fn add_entity(
        &mut self,
        base: &'s [SceneComponent],
        own: &'s [SceneComponent],
        position: usize,
        decoder: &Decoder<'_>,
    ) -> Result<(), SceneError> {
        if base.is_empty() {
            // No prefab: the entity's own components, in file order.
            let group = self.group_of(own.iter(), decoder.registry);
            for c in own {
                self.push_value(group, c, position, &|| c.value.at(), decoder)?;
            }
            self.groups[group].rows.push(position);
            return Ok(());
        }
        let list = merge(base, own);
        let group = self.group_of(list.iter().copied(), decoder.registry);
        let mine = own.as_ptr_range();
        let inherited = list
            .into_iter()
            .filter(|&c| !mine.contains(&std::ptr::from_ref(c)));
        for c in inherited.chain(own) {
            self.push_value(group, c, position, &|| c.value.at(), decoder)?;
        }
        self.groups[group].rows.push(position);
        Ok(())
    }

    /// Decodes the entities of a binary table, which start at `position`
    /// and have the components `base` (their prefab's) besides their own.
    fn add_table(
        &mut self,
        table: &'s SceneTable,
        base: &'s [SceneComponent],
        position: usize,
        decoder: &Decoder<'_>,
    ) -> Result<(), SceneError> {
        let mut own = rustc_hash::FxHashSet::default();
        for c in &table.columns {
            if !own.insert(c.name.as_str()) {
                return Err(SceneError::Duplicate {
                    what: "component",
                    name: c.name.clone(),
                    at: binary_entity(table.first_id()),
                });
            }
        }
        let kept: Vec<&SceneComponent> = base
            .iter()
            .filter(|b| !own.contains(b.name.as_str()))
            .collect();
        let names: Vec<&str> = kept
            .iter()
            .map(|c| c.name.as_str())
            .chain(table.columns.iter().map(|c| c.name.as_str()))
            .collect();
        let group = self.group(&names, decoder.registry);
        let rows = position..position + table.ids.len();
        for c in &table.columns {
            self.decode_column(group, c, &table.ids, position, decoder)?;
        }
        for c in kept {
            for (row, &id) in rows.clone().zip(&table.ids) {
                self.push_value(group, c, row, &|| binary_entity(id), decoder)?;
            }
        }
        self.groups[group].rows.extend(rows);
        Ok(())
    }

    /// Decodes one value of the entity at `position` (in `group`): into its
    /// column if it is of a registered type, else as a runtime-defined
    /// component; checks its entity references.
    fn push_value(
        &mut self,
        group: usize,
        c: &SceneComponent,
        position: usize,
        at: &dyn Fn() -> Where,
        decoder: &Decoder<'_>,
    ) -> Result<(), SceneError> {
        match self.column_of(group, &c.name) {
            Some(k) => {
                let column = self.groups[group].columns[k].as_mut();
                push_checked(column, &c.name, self.keys, at, |col| {
                    col.push_value(&c.value)
                })
            }
            None => {
                let mut pending = vec![decoder.decode(c, Kind::Component)?];
                map_pending(&mut pending, self.keys.get())?;
                let (_, p, _) = pending.pop().expect("one value");
                self.dynamics.push((position, p));
                Ok(())
            }
        }
    }

    /// [`Batch::group`] of the names of `list`, gathered in a buffer kept
    /// from one entity to the next.
    fn group_of(
        &mut self,
        list: impl Iterator<Item = &'s SceneComponent>,
        registry: &TypeRegistry,
    ) -> usize {
        let mut names = std::mem::take(&mut self.names);
        names.clear();
        names.extend(list.map(|c| c.name.as_str()));
        let group = self.group(&names, registry);
        self.names = names;
        group
    }

    /// The group of entities whose components are `names` (those of them
    /// that are registered types make the group).
    fn group(&mut self, names: &[&'s str], registry: &TypeRegistry) -> usize {
        if let Some((last, g)) = &self.last {
            if last.as_slice() == names {
                return *g;
            }
        }
        let g = self.find_group(names, registry);
        match &mut self.last {
            Some((last, at)) => {
                last.clear();
                last.extend_from_slice(names);
                *at = g;
            }
            None => self.last = Some((names.to_vec(), g)),
        }
        g
    }

    /// [`Batch::group`] without the memo of the last answer.
    fn find_group(&mut self, names: &[&'s str], registry: &TypeRegistry) -> usize {
        let mut typed = with_column(names, registry, |c| c.new.is_some());
        for &name in &typed {
            let next = self.rank.len();
            self.rank.entry(name).or_insert(next);
        }
        typed.sort_unstable();
        if let Some(last) = self.groups.last() {
            if last.names == typed {
                return self.groups.len() - 1;
            }
        }
        let table = with_column(&typed, registry, |c| !c.sparse);
        if let Some(&g) = self.by_names.get(&typed) {
            if self.table_tail.get(&table) == Some(&g) {
                return g;
            }
        }
        self.table_tail.insert(table, self.groups.len());
        let columns = typed
            .iter()
            .map(|n| {
                let new = registry.get(n, Kind::Component).and_then(|e| e.column?.new);
                (new.expect("filtered above"))()
            })
            .collect();
        self.by_names.insert(typed.clone(), self.groups.len());
        self.groups.push(Group {
            names: typed,
            columns,
            rows: Vec::new(),
        });
        self.groups.len() - 1
    }

    /// The index in `group` of the column of registered component `name`.
    fn column_of(&self, group: usize, name: &str) -> Option<usize> {
        self.groups[group].names.binary_search(&name).ok()
    }

    /// Decodes the values of a binary column, for the entities `ids` at
    /// positions from `first`.
    fn decode_column(
        &mut self,
        group: usize,
        column: &'s TableColumn,
        ids: &[u64],
        first: usize,
        decoder: &Decoder<'_>,
    ) -> Result<(), SceneError> {
        let name = column.name.as_str();
        let bytes = column.bytes.as_slice();
        let rest = if let Some(k) = self.column_of(group, name) {
            self.decode_typed_column(group, k, name, bytes, ids)?
        } else if let Some(take) = decoder
            .registry
            .get(name, Kind::Component)
            .and_then(|e| e.take)
        {
            self.decode_edge_column(take, name, bytes, ids, first)?
        } else if let Some(schema) = decoder.schemas.get(name).copied() {
            self.decode_dynamic_column(schema, name, bytes, ids, first)?
        } else {
            return Err(SceneError::UnknownComponent {
                kind: "component",
                name: name.to_owned(),
                suggestion: suggest(
                    name,
                    decoder
                        .registry
                        .names_of(Kind::Component)
                        .chain(decoder.schemas.keys().copied()),
                ),
                at: ids.first().map_or(Where::Unknown, |&id| binary_entity(id)),
            });
        };
        if rest.is_empty() {
            Ok(())
        } else {
            Err(left_over(name, rest.len()))
        }
    }

    /// [`Batch::decode_column`] of a registered type, into column `k` of
    /// `group`: all at once, unless a value fails or holds entities (then
    /// one by one, each checked). Returns the bytes after the values.
    fn decode_typed_column<'b>(
        &mut self,
        group: usize,
        k: usize,
        name: &str,
        mut bytes: &'b [u8],
        ids: &[u64],
    ) -> Result<&'b [u8], SceneError> {
        let keys = self.keys;
        let values = self.groups[group].columns[k].as_mut();
        let start = values.len();
        let refs = entity_refs_decoded();
        match values.push_rows(bytes, ids.len()) {
            Ok(rest) if entity_refs_decoded() == refs => Ok(rest),
            _ => {
                values.truncate(start);
                for &id in ids {
                    push_checked(values, name, keys, &|| binary_entity(id), |col| {
                        bytes = col.push_postcard(bytes)?;
                        Ok(())
                    })?;
                }
                Ok(bytes)
            }
        }
    }

    /// [`Batch::decode_column`] of a relation: each source's edges decoded
    /// and checked, to be related once every entity exists. Returns the
    /// bytes after them.
    fn decode_edge_column<'b>(
        &mut self,
        take: TakeFn,
        name: &str,
        mut bytes: &'b [u8],
        ids: &[u64],
        first: usize,
    ) -> Result<&'b [u8], SceneError> {
        for (row, &id) in ids.iter().enumerate() {
            let at = || binary_entity(id);
            let before = entity_refs_decoded();
            let (mut value, rest) = take(bytes).map_err(|e| wrong_shape(name, e, &at))?;
            bytes = rest;
            let refs = entity_refs_decoded() - before;
            check_refs(refs, self.keys, name, &at, |m| value.map_entities(m))?;
            self.dynamics.push((first + row, value));
        }
        Ok(bytes)
    }

    /// [`Batch::decode_column`] of a runtime-defined component: each value
    /// decoded with `schema` and checked. Returns the bytes after them.
    fn decode_dynamic_column<'b>(
        &mut self,
        schema: &ComponentSchema,
        name: &str,
        mut bytes: &'b [u8],
        ids: &[u64],
        first: usize,
    ) -> Result<&'b [u8], SceneError> {
        for (row, &id) in ids.iter().enumerate() {
            let at = || binary_entity(id);
            let before = entity_refs_decoded();
            let (mut value, rest) =
                take_postcard(bytes, DynamicSeed(schema)).map_err(|e| wrong_shape(name, e, &at))?;
            bytes = rest;
            let refs = entity_refs_decoded() - before;
            check_refs(refs, self.keys, name, &at, |m| value.map_entities(m))?;
            self.dynamics
                .push((first + row, Box::new(PendingDynamic(value))));
        }
        Ok(bytes)
    }
}

/// Refuses edges of an acyclic relation that form a cycle among the
/// scene's entities (the only entities a scene's edges can name): the
/// world would refuse the edge closing it half-way through the load.
/// Linear in the number of edges (an iterative depth-first search).
fn check_cycles(
    dynamics: &[(usize, Box<dyn Pending>)],
    order: &[(u64, Entity)],
    registry: &TypeRegistry,
) -> Result<(), SceneError> {
    let mut graphs: FxHashMap<TypeId, FxHashMap<Entity, Vec<Entity>>> = FxHashMap::default();
    for (position, pending) in dynamics {
        if let Some((relation, targets)) = pending.acyclic_targets() {
            let graph = graphs.entry(relation).or_default();
            graph.entry(order[*position].1).or_default().extend(targets);
        }
    }
    for (relation, graph) in &graphs {
        // 1: on the current path; 2: done (no cycle through it).
        let mut state: FxHashMap<Entity, u8> = FxHashMap::default();
        for &root in graph.keys() {
            if state.contains_key(&root) {
                continue;
            }
            let mut stack = vec![(root, 0usize)];
            state.insert(root, 1);
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                let targets = graph.get(&node).map_or(&[][..], Vec::as_slice);
                let Some(&target) = targets.get(*next) else {
                    state.insert(node, 2);
                    stack.pop();
                    continue;
                };
                *next += 1;
                match state.get(&target) {
                    Some(1) => {
                        // The name the file gives the relation.
                        let relation = registry
                            .by_type(*relation, Kind::Component)
                            .map_or("?", |entry| entry.name.as_str());
                        return Err(SceneError::RelationCycle {
                            relation: relation.to_owned(),
                            id: scene_id(target),
                            at: Where::Unknown,
                        });
                    }
                    Some(_) => {}
                    None => {
                        state.insert(target, 1);
                        stack.push((target, 0));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Lists at most this long are searched by comparing names pairwise (no
/// allocation); longer ones through a hash map, so a list of 50,000
/// components still takes linear time.
const SHORT_LIST: usize = 16;

/// Refuses a list that names one component twice (linear time), at its
/// second occurrence.
fn check_unique(list: &[SceneComponent], what: &'static str) -> Result<(), SceneError> {
    let duplicate = |c: &SceneComponent| SceneError::Duplicate {
        what,
        name: c.name.clone(),
        at: c.value.at(),
    };
    if list.len() <= SHORT_LIST {
        for (i, c) in list.iter().enumerate() {
            if list[..i].iter().any(|earlier| earlier.name == c.name) {
                return Err(duplicate(c));
            }
        }
        return Ok(());
    }
    let mut seen = rustc_hash::FxHashSet::default();
    for c in list {
        if !seen.insert(c.name.as_str()) {
            return Err(duplicate(c));
        }
    }
    Ok(())
}

/// Maps scene keys to entities; remembers the first key it could not map
/// and counts the references it was asked to map.
struct KeyMapper<'a> {
    map: &'a FxHashMap<Entity, Entity>,
    missing: Option<Entity>,
    calls: u64,
}

impl EntityMapper for KeyMapper<'_> {
    fn map(&mut self, key: Entity) -> Entity {
        self.calls += 1;
        match self.map.get(&key) {
            Some(&e) => e,
            None => {
                self.missing.get_or_insert(key);
                key
            }
        }
    }
}

/// Maps every pending value through `map`; fails on the first reference to
/// a key `map` lacks, and on a value whose type left some of the entity
/// references it holds unmapped (a `#[entities]` forgotten on a field).
fn map_pending(
    pending: &mut [Decoded<'_>],
    map: &FxHashMap<Entity, Entity>,
) -> Result<(), SceneError> {
    for (c, p, refs) in pending {
        let mut mapper = KeyMapper {
            map,
            missing: None,
            calls: 0,
        };
        p.map_entities(&mut mapper);
        if mapper.calls < *refs {
            return Err(SceneError::UnmappedEntities {
                component: c.name.clone(),
                at: c.value.at(),
            });
        }
        if let Some(key) = mapper.missing {
            return Err(SceneError::DanglingReference {
                component: c.name.clone(),
                id: scene_id(key),
                at: c.value.at(),
            });
        }
    }
    Ok(())
}

/// The prefabs of one scene, resolved (each with its whole `extends`
/// chain), as a world keeps them for [`SpawnPrefab::spawn_prefab`].
#[derive(Debug)]
struct PrefabSource {
    names: Vec<String>,
    prefabs: Resolved,
    schemas: Vec<ComponentSchema>,
    registry: TypeRegistry,
    /// Scene keys of the scene that defined them → the entities it spawned.
    ids: FxHashMap<Entity, Entity>,
}

/// The prefabs a world knows, by name (a world resource).
#[derive(Debug, Default)]
pub(crate) struct PrefabLibrary {
    by_name: FxHashMap<String, (Arc<PrefabSource>, usize)>,
}

/// The shape of a scene's prefabs, checked: each one's base (the prefab
/// it extends), with no cycle.
struct PrefabPlan {
    base: Vec<Option<usize>>,
}

impl PrefabPlan {
    /// Checked: prefab names unique, components unique in each, every
    /// `extends` known, no cycle (the first such error).
    ///
    /// Each prefab is placed once (a walk up to the first placed ancestor,
    /// then back down), so a chain of `n` prefabs costs time linear in `n`.
    fn check(prefabs: &[Prefab]) -> Result<PrefabPlan, SceneError> {
        let mut by_name: FxHashMap<&str, usize> = FxHashMap::default();
        for (i, p) in prefabs.iter().enumerate() {
            if by_name.insert(&p.name, i).is_some() {
                return Err(SceneError::Duplicate {
                    what: "prefab",
                    name: p.name.clone(),
                    at: p.at.at(),
                });
            }
            check_unique(&p.components, "component")?;
        }
        let mut base: Vec<Option<usize>> = Vec::with_capacity(prefabs.len());
        for (i, p) in prefabs.iter().enumerate() {
            base.push(match p.extends.as_deref() {
                None => None,
                Some(name) => {
                    Some(*by_name.get(name).ok_or_else(|| SceneError::UnknownPrefab {
                        name: name.to_owned(),
                        in_prefab: Some(p.name.clone()),
                        suggestion: suggest(name, by_name.keys().copied()),
                        at: p.at.at_part(Place::Extends(i)),
                    })?)
                }
            });
        }
        // 0: not placed; 1: on the walk being placed; 2: placed.
        let mut state = vec![0u8; prefabs.len()];
        let mut walk = Vec::new();
        for start in 0..prefabs.len() {
            walk.clear();
            let mut next = Some(start);
            while let Some(i) = next {
                match state[i] {
                    2 => break,
                    1 => return Err(prefab_cycle(prefabs, &walk, i)),
                    _ => {}
                }
                state[i] = 1;
                walk.push(i);
                next = base[i];
            }
            for &i in walk.iter().rev() {
                state[i] = 2;
            }
        }
        Ok(PrefabPlan { base })
    }
}

/// Each prefab's components with its `extends` chain applied (base first,
/// overrides after), made when asked for ([`Resolved::list`]) and kept.
///
/// Making every prefab's whole list would cost the sum of their lengths:
/// quadratic for a chain whose prefabs each add a component (2,000 of
/// them, 2,000,000 copies). A list is instead made from the nearest list
/// made above it, applying the own components of the prefabs between in
/// one pass; on the way, the list so far is kept at a prefab whenever the
/// walk since the last kept list has cost more than that list is long. So
/// asking for a list costs about its length, the lists kept along a chain
/// grow geometrically, and a scene's prefabs cost time and memory linear
/// in the file plus what its entities use.
#[derive(Debug)]
struct Resolved {
    /// Each prefab's own components.
    own: Vec<Vec<SceneComponent>>,
    /// The prefab each extends.
    base: Vec<Option<usize>>,
    /// The lists made so far.
    lists: Vec<OnceLock<Vec<SceneComponent>>>,
}

impl Resolved {
    fn new(own: Vec<Vec<SceneComponent>>, plan: &PrefabPlan) -> Resolved {
        Resolved {
            lists: own.iter().map(|_| OnceLock::new()).collect(),
            own,
            base: plan.base.clone(),
        }
    }

    /// Prefab `i`'s components, its chain applied.
    fn list(&self, i: usize) -> &[SceneComponent] {
        self.lists[i].get_or_init(|| self.make(i))
    }

    /// Prefab `i`'s list, from the nearest list made above it and the own
    /// components of the prefabs between (see [`Resolved`]).
    fn make(&self, i: usize) -> Vec<SceneComponent> {
        let mut levels = vec![i];
        let mut at = self.base[i];
        let start: &[SceneComponent] = loop {
            let Some(k) = at else { break &[] };
            if let Some(list) = self.lists[k].get() {
                break list;
            }
            levels.push(k);
            at = self.base[k];
        };
        let mut list: Vec<SceneComponent> = start.to_vec();
        let mut index: FxHashMap<&str, usize> = start
            .iter()
            .enumerate()
            .map(|(slot, c)| (c.name.as_str(), slot))
            .collect();
        let (mut walked, mut kept) = (0, list.len());
        for &k in levels.iter().rev() {
            for c in &self.own[k] {
                match index.get(c.name.as_str()) {
                    Some(&slot) => list[slot] = c.clone(),
                    None => {
                        index.insert(&c.name, list.len());
                        list.push(c.clone());
                    }
                }
            }
            walked += 1 + self.own[k].len();
            if k != i && walked > kept {
                // (Set at most once: nothing below `start` was made.)
                let _ = self.lists[k].set(list.clone());
                (walked, kept) = (0, list.len());
            }
        }
        list
    }
}

/// The cycle error for a walk (prefab indices, each extending the next)
/// that came back to `repeated`.
fn prefab_cycle(prefabs: &[Prefab], walk: &[usize], repeated: usize) -> SceneError {
    let from = walk.iter().position(|&i| i == repeated).unwrap_or(0);
    let mut chain: Vec<String> = walk[from..]
        .iter()
        .map(|&i| prefabs[i].name.clone())
        .collect();
    chain.push(prefabs[repeated].name.clone());
    SceneError::PrefabCycle {
        chain,
        at: prefabs[repeated].at.at(),
    }
}

/// `base` with `overrides` applied: a component of `overrides` replaces
/// the one of the same name in `base` (in its place), or is appended.
/// Linear time: names are looked up in a hash map.
fn merge<'c>(
    base: &'c [SceneComponent],
    overrides: &'c [SceneComponent],
) -> Vec<&'c SceneComponent> {
    let mut list: Vec<&SceneComponent> = Vec::with_capacity(base.len() + overrides.len());
    if base.len() + overrides.len() <= SHORT_LIST {
        for c in base.iter().chain(overrides) {
            match list.iter().position(|l| l.name == c.name) {
                Some(slot) => list[slot] = c,
                None => list.push(c),
            }
        }
        return list;
    }
    let mut index: FxHashMap<&str, usize> = FxHashMap::default();
    for c in base.iter().chain(overrides) {
        match index.get(c.name.as_str()) {
            Some(&slot) => list[slot] = c,
            None => {
                index.insert(&c.name, list.len());
                list.push(c);
            }
        }
    }
    list
}

/// A scene checked and decoded, ready to go into a world: the last step of
/// [`Scene::spawn_into`], the only one that changes the world.
struct Apply<'o, 's> {
    new_schemas: Vec<ComponentSchema>,
    order: &'o [(u64, Entity)],
    groups: Vec<Group<'s>>,
    rank: FxHashMap<&'s str, usize>,
    dynamics: Vec<(usize, Box<dyn Pending>)>,
    resources: Vec<Box<dyn Pending>>,
    needs_map: bool,
}

/// The first panic caught while a load goes on.
type Caught = Option<Box<dyn std::any::Any + Send>>;

/// Runs `f`, keeping its panic (the first one) in `caught`.
fn keep_panic(caught: &mut Caught, f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        caught.get_or_insert(payload);
    }
}

impl Apply<'_, '_> {
    /// Puts the entities in, with their components (typed ones a column at
    /// a time), and the resources; returns the entities (by position), the
    /// map from scene keys to them (if needed) and the panic of a hook or
    /// observer, if one panicked, for the caller to resume once it has put
    /// in the rest of the scene (its prefabs).
    ///
    /// A hook or observer that panics does not stop the load half-way: the
    /// panic is held until the whole scene is in. (If the core took the
    /// entities back out, as it does when a required component's
    /// constructor panics, nothing more goes in and the panic goes on at
    /// once: the world keeps only the schemas the scene declared.)
    fn run(mut self, world: &mut World) -> (Vec<Entity>, FxHashMap<Entity, Entity>, Caught) {
        for schema in &self.new_schemas {
            if let Err(e) = world.register_dynamic_component(schema.clone()) {
                unreachable!("schema checked above: {e}");
            }
        }
        let (spawned, map, mut caught) = self.spawn(world);
        if caught.is_some() && !spawned.iter().any(|&e| world.contains(e)) {
            if let Some(payload) = caught {
                resume_unwind(payload);
            }
        }
        let mapper = || KeyMapper {
            map: &map,
            missing: None,
            calls: 0,
        };
        // Values first, then every source's edges, sources in ascending
        // scene id (so a target's sources come back in that order), then
        // the saved orders of targets whose sources were in another.
        let (mut edges, rest): (Vec<_>, Vec<_>) =
            self.dynamics.into_iter().partition(|(_, p)| p.is_edges());
        let (orders, values): (Vec<_>, Vec<_>) =
            rest.into_iter().partition(|(_, p)| p.after_edges());
        let order = self.order;
        edges.sort_by_key(|&(row, _)| order[row].0);
        for (row, mut p) in values.into_iter().chain(edges).chain(orders) {
            p.map_entities(&mut mapper());
            keep_panic(&mut caught, || p.put(world, Some(spawned[row])));
        }
        for mut p in self.resources {
            p.map_entities(&mut mapper());
            keep_panic(&mut caught, || p.put(world, None));
        }
        (spawned, map, caught)
    }

    /// Spawns the entities with their typed components; returns them (by
    /// position), the map from scene keys to them (if needed), and the
    /// panic of a hook or observer, if one panicked.
    fn spawn(&mut self, world: &mut World) -> (Vec<Entity>, FxHashMap<Entity, Entity>, Caught) {
        let (order, needs_map, rank) = (self.order, self.needs_map, &self.rank);
        let groups = std::mem::take(&mut self.groups);
        let mut handles = Vec::new();
        let mut map: FxHashMap<Entity, Entity> = FxHashMap::default();
        if world.is_empty() {
            // Saved handles come back as they were, when the world can
            // give them (it never had an entity; every id is a handle's
            // bits, not a hand-written small id).
            // (Into a buffer of the right size: collecting into an
            // `Option<Vec>` grows it from empty.)
            let mut ids = Vec::with_capacity(order.len());
            let all = order
                .iter()
                .all(|&(id, _)| Entity::from_bits(id).map(|e| ids.push(e)).is_some());
            if all {
                world.prepare_spawn_ids(&ids);
            }
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            world.spawn_column_batches(order.len(), |spawned| {
                handles = spawned.to_vec();
                if needs_map {
                    map = order
                        .iter()
                        .zip(spawned)
                        .map(|(&(_, key), &e)| (key, e))
                        .collect();
                }
                let mut mapper = KeyMapper {
                    map: &map,
                    missing: None,
                    calls: 0,
                };
                groups
                    .into_iter()
                    .map(|g| g.into_batch(needs_map.then_some(&mut mapper), rank))
                    .collect()
            })
        }));
        match result {
            Ok(Ok(spawned)) => (spawned, map, None),
            // Every position has a group, each with one position per value.
            Ok(Err(e)) => unreachable!("every entity is in one group: {e}"),
            Err(payload) => (handles, map, Some(payload)),
        }
    }
}

/// Keeps a loaded scene's prefabs in `world`, for
/// [`SpawnPrefab::spawn_prefab`].
fn keep_prefabs(world: &mut World, source: PrefabSource) {
    let source = Arc::new(source);
    let library = world.resource_or_default::<PrefabLibrary>();
    for (i, name) in source.names.iter().enumerate() {
        library
            .by_name
            .insert(name.clone(), (Arc::clone(&source), i));
    }
}

impl Group<'_> {
    /// The group's positions and its columns as a batch (mapped with
    /// `mapper` if given; columns in the order `rank` gives their names).
    fn into_batch(
        mut self,
        mapper: Option<&mut KeyMapper<'_>>,
        rank: &FxHashMap<&str, usize>,
    ) -> (Vec<usize>, ColumnBatch) {
        if let Some(mapper) = mapper {
            for column in &mut self.columns {
                column.map_all(mapper);
            }
        }
        let mut columns: Vec<_> = self.names.iter().zip(self.columns).collect();
        columns.sort_by_key(|(name, _)| rank.get(*name).copied());
        let mut batch = ColumnBatch::new(self.rows.len());
        for (_, column) in columns {
            if let Err(e) = batch.push_column(column.into_batch()) {
                unreachable!("names, and lengths, checked above: {e}");
            }
        }
        (self.rows, batch)
    }
}

impl Scene {
    /// Spawns the scene's entities into `world`, with their components
    /// (prefab ones first, then the entity's own, which override), inserts
    /// its resources, declares its runtime-defined components and keeps its
    /// prefabs for [`SpawnPrefab::spawn_prefab`]. Returns the entity spawned for
    /// each scene id.
    ///
    /// Each entity is written once, with all its registered components,
    /// straight into its final archetype (entities with the same components
    /// a column at a time). Hooks and observers run once every entity is in,
    /// entity by entity in scene order; runtime-defined components,
    /// relation edges (see
    /// [`TypeRegistry::register_relation`](crate::TypeRegistry::register_relation))
    /// and resources go in after. If a hook despawns a scene entity, its
    /// remaining runtime-defined components are dropped and its handle here
    /// is stale.
    ///
    /// All-or-nothing: every name, id, prefab, reference and value is
    /// checked and decoded before anything changes; on any error the world
    /// is exactly as it was.
    ///
    /// Into a world that has never had an entity, the saved entities get
    /// their saved handles back exactly (each scene id is the saved
    /// entity's [`Entity::to_bits`](mosaic::Entity::to_bits)), so a replay,
    /// a rollback or a late-joining client names entities as the saving
    /// world did; hand-written small ids (below 2^32), or ids far beyond
    /// the scene's size, get fresh handles instead. Into any other world
    /// the entities get fresh handles ([`SceneSpawn`] maps ids to them);
    /// either way they are spawned in scene order, archetype by archetype
    /// in order of first appearance, so in a world that had none of their
    /// archetypes they iterate in the saved world's order.
    ///
    /// A hook or observer that panics during the load does not leave half
    /// a scene: the panic is held until the whole scene is in (entities,
    /// every component, resources, prefabs), then goes on to the caller.
    /// A required component's constructor that panics makes the core take
    /// the new entities back out; then nothing more of the scene goes in
    /// (only the schemas it declared stay declared) and the panic goes on.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, SceneError, TypeRegistry};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Component, MapEntities, Serialize, Deserialize)]
    /// struct Target(#[entities] Entity);
    ///
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Target>().map_entities();
    /// let scene = Scene::from_ron_str(
    ///     "(entities: [(id: 1), (id: 2, components: {\"Target\": (1)})])",
    /// ).unwrap();
    /// let mut world = World::new();
    /// let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    /// assert_eq!(world.get::<Target>(spawned[2]).unwrap().0, spawned[1]);
    ///
    /// // A reference to an id the scene lacks: an error, and no change.
    /// let bad = Scene::from_ron_str("(entities: [(id: 2, components: {\"Target\": (9)})])").unwrap();
    /// let before = world.len();
    /// assert!(matches!(bad.spawn_into(&mut world, &registry), Err(SceneError::DanglingReference { id: 9, .. })));
    /// assert_eq!(world.len(), before);
    /// ```
    pub fn spawn_into(
        &self,
        world: &mut World,
        registry: &TypeRegistry,
    ) -> Result<SceneSpawn, SceneError> {
        // Parsed (by `from_*`) → checked → decoded → applied; only the last
        // step changes the world.
        let world_schemas: Vec<ComponentSchema> = world.dynamic_schemas().cloned().collect();
        let (decoder, new_schemas) = self.check_schemas(world, registry, &world_schemas)?;
        let plan = PrefabPlan::check(&self.prefabs)?;
        let order = self.check_ids()?;
        let keys = Keys {
            order: &order,
            map: OnceCell::new(),
        };
        let refs_before = entity_refs_decoded();
        let mut early = self.early_values(&decoder)?;
        let prefabs = Prefabs::resolve(&self.prefabs, &plan, &decoder, &keys, &mut early)?;
        let batch = self.decode_entities(&keys, &prefabs, &decoder)?;
        check_cycles(&batch.dynamics, &order, registry).map_err(|e| self.place_cycle(e))?;
        let resources = self.decode_resources(&keys, &decoder, &mut early)?;

        // Everything checked and decoded: now change the world.
        let (spawned, map, caught) = Apply {
            new_schemas,
            order: &order,
            groups: batch.groups,
            rank: batch.rank,
            dynamics: batch.dynamics,
            resources,
            // Entity references to remap, or prefabs to keep (which remap
            // theirs later): the map from scene keys to the entities spawned.
            needs_map: entity_refs_decoded() != refs_before || !self.prefabs.is_empty(),
        }
        .run(world);
        if !self.prefabs.is_empty() {
            keep_prefabs(world, self.prefab_source(prefabs.resolved, &decoder, map));
        }
        if let Some(payload) = caught {
            resume_unwind(payload);
        }
        Ok(SceneSpawn {
            order: order.iter().map(|&(id, _)| id).zip(spawned).collect(),
            by_id: OnceLock::new(),
        })
    }

    /// `error` (a relation cycle) placed at the entity it names: its id in
    /// a text file, its entity in a binary one.
    fn place_cycle(&self, mut error: SceneError) -> SceneError {
        if let SceneError::RelationCycle { id, at, .. } = &mut error {
            *at = match self.entities.iter().find(|e| e.id == *id) {
                Some(e) => e.at.at(),
                None if self.tables.iter().any(|t| t.ids.contains(id)) => binary_entity(*id),
                None => Where::Unknown,
            };
        }
        error
    }

    /// The scene's prefabs as `resolved`, kept for `spawn_prefab` with
    /// what decoding them needs: the schemas and registry they were
    /// decoded with, and `ids`, the scene's keys → the entities spawned.
    fn prefab_source(
        &self,
        resolved: Resolved,
        decoder: &Decoder<'_>,
        ids: FxHashMap<Entity, Entity>,
    ) -> PrefabSource {
        PrefabSource {
            names: self.prefabs.iter().map(|p| p.name.clone()).collect(),
            prefabs: resolved,
            schemas: decoder.schemas.values().map(|&s| s.clone()).collect(),
            registry: decoder.registry.clone(),
            ids,
        }
    }

    /// Checked: the scene's schemas are valid, unique, and consistent with
    /// the world's and the registry's names. Returns the decoder (the
    /// registry and every schema, the world's and the scene's) and the
    /// schemas the world does not have yet.
    fn check_schemas<'a>(
        &'a self,
        world: &World,
        registry: &'a TypeRegistry,
        world_schemas: &'a [ComponentSchema],
    ) -> Result<(Decoder<'a>, Vec<ComponentSchema>), SceneError> {
        let mut decoder = Decoder {
            registry,
            schemas: world_schemas.iter().map(|s| (s.name(), s)).collect(),
        };
        let mut new_schemas = Vec::new();
        let mut declared = rustc_hash::FxHashSet::default();
        for (schema, at) in &self.schemas {
            schema.validate().map_err(|e| schema_error(schema, at, e))?;
            if !declared.insert(schema.name()) {
                return Err(SceneError::Duplicate {
                    what: "schema",
                    name: schema.name().to_owned(),
                    at: at.at(),
                });
            }
            if check_schema(schema, at, &decoder, world)? {
                new_schemas.push(schema.clone());
            }
        }
        for (schema, _) in &self.schemas {
            decoder.schemas.insert(schema.name(), schema);
        }
        Ok((decoder, new_schemas))
    }

    /// Checked: every entity id is unique, and none is reserved. Returns
    /// each entity's id and the key its references decode to, in order.
    fn check_ids(&self) -> Result<Vec<(u64, Entity)>, SceneError> {
        // Slice by slice: a chain of them would be extended an element at a
        // time, each checked for room.
        let mut order: Vec<(u64, Entity)> = Vec::with_capacity(self.len());
        order.extend(self.entities.iter().map(|e| (e.id, scene_key(e.id))));
        for table in &self.tables {
            order.extend(table.ids.iter().map(|&id| (id, scene_key(id))));
        }
        let at_position = |i: usize, id: u64| {
            self.entities
                .get(i)
                .map_or_else(|| binary_entity(id), |e| e.at.at())
        };
        // A reserved id would share its key with its low 32 bits.
        if let Some(i) = order
            .iter()
            .position(|&(id, _)| id >= Entity::RESERVED_SCENE_IDS)
        {
            let id = order[i].0;
            return Err(SceneError::ReservedId {
                id,
                at: at_position(i, id),
            });
        }
        let mut sorted: Vec<u64> = order.iter().map(|&(_, key)| key.to_bits()).collect();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            // Report the first repeat in scene order.
            let mut seen = rustc_hash::FxHashSet::default();
            for (i, &(id, key)) in order.iter().enumerate() {
                if !seen.insert(key) {
                    return Err(SceneError::DuplicateId {
                        id,
                        at: at_position(i, id),
                    });
                }
            }
        }
        Ok(order)
    }

    /// Decoded: every entity's components (its prefab's, then its own),
    /// checked to refer only to the scene. Typed values go into one column
    /// per component and group of entities with the same components,
    /// runtime-defined ones one by one.
    fn decode_entities<'k, 's>(
        &'s self,
        keys: &'k Keys<'k>,
        prefabs: &'s Prefabs<'s>,
        decoder: &Decoder<'_>,
    ) -> Result<Batch<'k, 's>, SceneError> {
        let mut batch = Batch {
            keys,
            groups: Vec::new(),
            by_names: FxHashMap::default(),
            table_tail: FxHashMap::default(),
            rank: FxHashMap::default(),
            dynamics: Vec::new(),
            last: None,
            names: Vec::new(),
        };
        let mut position = 0;
        match self.walked() {
            Some(source) => {
                self.decode_text_entities(source, &mut batch, prefabs, decoder)?;
                position = self.entities.len();
            }
            None => {
                // Every entity checked before any is decoded, as the walk
                // over a file plans them (`plan_entities`): a scene read
                // with its registry fails with the error reading it
                // without gives.
                let mut bases = Vec::with_capacity(self.entities.len());
                for (i, e) in self.entities.iter().enumerate() {
                    check_unique(&e.components, "component")?;
                    let at = || e.at.at_part(Place::EntityPrefab(i));
                    bases.push(prefabs.base(&e.prefab, at)?);
                    decoder.check_known(&e.components)?;
                }
                for (e, base) in self.entities.iter().zip(bases) {
                    batch.add_entity(base, &e.components, position, decoder)?;
                    position += 1;
                }
            }
        }
        for table in &self.tables {
            let base = prefabs.base(&table.prefab, || binary_entity(table.first_id()))?;
            batch.add_table(table, base, position, decoder)?;
            position += table.ids.len();
        }
        Ok(batch)
    }

    /// Decoded: the resources, unique and referring only to the scene.
    fn decode_resources(
        &self,
        keys: &Keys<'_>,
        decoder: &Decoder<'_>,
        early: &mut walk::EarlyValues,
    ) -> Result<Vec<Box<dyn Pending>>, SceneError> {
        check_unique(&self.resources, "resource")?;
        let mut resources = Vec::with_capacity(self.resources.len());
        for (j, r) in self.resources.iter().enumerate() {
            let decoded = match early.resource(j, r) {
                Some(decoded) => decoded,
                None => decoder.decode(r, Kind::Resource)?,
            };
            let mut pending = vec![decoded];
            map_pending(&mut pending, keys.get())?;
            resources.extend(pending.into_iter().map(|(_, p, _)| p));
        }
        Ok(resources)
    }
}

/// A schema error for `schema`, at `at`.
fn schema_error(schema: &ComponentSchema, at: &Spot, error: SchemaError) -> SceneError {
    SceneError::Schema {
        component: schema.name().to_owned(),
        error,
        at: at.at(),
    }
}

/// Checks one (valid) schema of a scene against the schemas `decoder`
/// knows (the world's) and the Rust components of the registry and world.
/// Returns true if it is new to the world.
fn check_schema(
    schema: &ComponentSchema,
    at: &Spot,
    decoder: &Decoder<'_>,
    world: &World,
) -> Result<bool, SceneError> {
    let fail = |error| schema_error(schema, at, error);
    let name = schema.name();
    match decoder.schemas.get(name) {
        Some(&existing) if existing == schema => return Ok(false),
        Some(_) => {
            return Err(fail(SchemaError::Conflict {
                name: name.to_owned(),
            }));
        }
        None => {}
    }
    // A name several Rust types share is taken too (the lookup calls it
    // ambiguous rather than unknown).
    let rust_type = decoder
        .registry
        .get(name, Kind::Component)
        .map(|e| e.type_name)
        .or_else(|| {
            world
                .component_infos()
                .filter(|i| i.name() == name)
                .find_map(|i| i.type_name())
        });
    match rust_type {
        Some(rust_type) => Err(fail(SchemaError::TakenByRustType {
            name: name.to_owned(),
            rust_type: rust_type.to_owned(),
        })),
        None => Ok(true),
    }
}

/// A scene's prefabs, resolved (each with its `extends` chain applied),
/// by name.
struct Prefabs<'s> {
    resolved: Resolved,
    index: FxHashMap<&'s str, usize>,
}

impl<'s> Prefabs<'s> {
    /// Decoded: every prefab's own values, each once (checked to refer
    /// only to the scene), then each prefab resolved along `plan`.
    ///
    /// A text value is decoded here once and kept as its postcard bytes:
    /// the entities of the prefab, and every later
    /// [`SpawnPrefab::spawn_prefab`], decode those (a tenth of the cost of
    /// reading text), never the text again; and a chain of prefabs decodes
    /// each value once, however many prefabs inherit it.
    fn resolve(
        prefabs: &'s [Prefab],
        plan: &PrefabPlan,
        decoder: &Decoder<'_>,
        keys: &Keys<'_>,
        early: &mut walk::EarlyValues,
    ) -> Result<Prefabs<'s>, SceneError> {
        let mut own = Vec::with_capacity(prefabs.len());
        for (i, p) in prefabs.iter().enumerate() {
            let mut list = Vec::with_capacity(p.components.len());
            for (j, c) in p.components.iter().enumerate() {
                list.push(match early.prefab(i, j, c) {
                    Some(decoded) => decoder.keep_once(decoded, keys)?,
                    None => decoder.decode_once(c, keys)?,
                });
            }
            own.push(list);
        }
        Ok(Prefabs {
            resolved: Resolved::new(own, plan),
            index: prefabs
                .iter()
                .enumerate()
                .map(|(i, p)| (p.name.as_str(), i))
                .collect(),
        })
    }

    /// The components an entity of `prefab` starts with (none without
    /// one), or the error for an unknown prefab, placed at `at`.
    fn base(
        &self,
        prefab: &Option<String>,
        at: impl FnOnce() -> Where,
    ) -> Result<&[SceneComponent], SceneError> {
        let Some(name) = prefab else { return Ok(&[]) };
        match self.index.get(name.as_str()) {
            Some(&i) => Ok(self.resolved.list(i)),
            None => Err(SceneError::UnknownPrefab {
                name: name.clone(),
                in_prefab: None,
                suggestion: suggest(name, self.index.keys().copied()),
                at: at(),
            }),
        }
    }
}

/// Spawning the prefabs of scenes loaded into a world, as a method of
/// [`World`]: `world.spawn_prefab(name, overrides)`. Through `mosaic-ecs`,
/// `use mosaic::prelude::*;` brings it in scope.
pub trait SpawnPrefab {
    /// Spawns an entity from a prefab of a scene loaded earlier
    /// ([`Scene::spawn_into`] keeps each scene's prefabs; a later prefab of
    /// the same name replaces an earlier one), then inserts `overrides`
    /// (a bundle: its components replace the prefab's). Entity references
    /// in the prefab resolve against the scene that defined it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{Scene, SceneError, SpawnPrefab, TypeRegistry};
    /// use serde::{Deserialize, Serialize};
    /// #[derive(Component, Serialize, Deserialize, Debug, PartialEq)]
    /// struct Position { x: f32, y: f32 }
    /// #[derive(Component, Serialize, Deserialize, Debug, PartialEq)]
    /// struct Appearance { name: String }
    ///
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Position>();
    /// registry.register::<Appearance>();
    /// let scene = Scene::from_ron_str(r#"(prefabs: { "Tree": (components: {
    ///     "Position": (x: 0.0, y: 0.0), "Appearance": (name: "tree") }) })"#).unwrap();
    /// let mut world = World::new();
    /// scene.spawn_into(&mut world, &registry).unwrap();
    ///
    /// let tree = world.spawn_prefab("Tree", Position { x: 4.0, y: 2.0 }).unwrap();
    /// assert_eq!(world.get::<Position>(tree).unwrap(), &Position { x: 4.0, y: 2.0 });
    /// assert_eq!(world.get::<Appearance>(tree).unwrap().name, "tree");
    /// assert!(matches!(world.spawn_prefab("Tre", ()), Err(SceneError::UnknownPrefab { .. })));
    /// ```
    fn spawn_prefab<B: Bundle>(&mut self, name: &str, overrides: B) -> Result<Entity, SceneError>;
}

impl SpawnPrefab for World {
    fn spawn_prefab<B: Bundle>(&mut self, name: &str, overrides: B) -> Result<Entity, SceneError> {
        let found = self
            .get_resource::<PrefabLibrary>()
            .and_then(|l| l.by_name.get(name).cloned());
        let Some((source, index)) = found else {
            let known: Vec<String> = self
                .get_resource::<PrefabLibrary>()
                .map(|l| l.by_name.keys().cloned().collect())
                .unwrap_or_default();
            return Err(SceneError::UnknownPrefab {
                name: name.to_owned(),
                in_prefab: None,
                suggestion: suggest(name, known.iter().map(String::as_str)),
                at: Where::Unknown,
            });
        };
        let decoder = Decoder {
            registry: &source.registry,
            schemas: source.schemas.iter().map(|s| (s.name(), s)).collect(),
        };
        let mut pending = decoder.decode_all(source.prefabs.list(index))?;
        map_pending(&mut pending, &source.ids)?;
        for schema in &source.schemas {
            if self
                .dynamic_schema(schema.name())
                .is_some_and(|s| s != schema)
            {
                return Err(SceneError::Schema {
                    component: schema.name().to_owned(),
                    error: SchemaError::Conflict {
                        name: schema.name().to_owned(),
                    },
                    at: Where::Unknown,
                });
            }
        }
        for schema in &source.schemas {
            // Checked just above: new, or the same schema again.
            let _ = self.register_dynamic_component(schema.clone());
        }
        let entity = self.spawn(());
        for (_, p, _) in pending {
            p.put(self, Some(entity));
        }
        // Fails only if a hook or observer despawned the entity meanwhile
        // (the handle returned is then stale, as `spawn`'s would be).
        let _ = self.insert(entity, overrides);
        Ok(entity)
    }
}
