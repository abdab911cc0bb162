//! The methods: each answers one call on the game thread, with the world
//! (and schedule) borrowed. A method that fails changes nothing.

use std::collections::BTreeMap;

use mosaic::scene::{TypeRegistry, ValueError};
use mosaic::{ComponentId, ComponentInfo, Entity, FixedUpdate, Name, Schedule, StorageType, World};
use serde_json::{Map, Value, json};

use crate::State;
use crate::rpc::{Call, RpcError, codes};

type Answer = Result<Value, RpcError>;

/// A parameter's JSON type, for `rpc.discover`.
#[derive(Clone, Copy)]
enum Kind {
    Entity,
    Entities,
    Names,
    Name,
    Text,
    Any,
    Bool,
    Count,
    Object,
    /// A map from component (or resource) name to value.
    Values,
}

/// Every method, with its parameters (for `rpc.discover`).
const METHODS: &[(&str, &[(&str, Kind)])] = &[
    (
        "world.query",
        &[
            ("data", Kind::Object),
            ("filter", Kind::Object),
            ("strict", Kind::Bool),
            ("offset", Kind::Count),
            ("limit", Kind::Count),
        ],
    ),
    (
        "world.get_components",
        &[
            ("entity", Kind::Entity),
            ("components", Kind::Names),
            ("strict", Kind::Bool),
        ],
    ),
    (
        "world.insert_components",
        &[("entity", Kind::Entity), ("components", Kind::Values)],
    ),
    (
        "world.remove_components",
        &[("entity", Kind::Entity), ("components", Kind::Names)],
    ),
    (
        "world.mutate_components",
        &[
            ("entity", Kind::Entity),
            ("component", Kind::Name),
            ("path", Kind::Text),
            ("value", Kind::Any),
        ],
    ),
    ("world.list_components", &[("entity", Kind::Entity)]),
    ("world.spawn_entity", &[("components", Kind::Values)]),
    ("world.despawn_entity", &[("entity", Kind::Entity)]),
    (
        "world.reparent_entities",
        &[("entities", Kind::Entities), ("parent", Kind::Entity)],
    ),
    ("world.list_resources", &[]),
    ("world.get_resources", &[("resource", Kind::Name)]),
    (
        "world.insert_resources",
        &[("resource", Kind::Name), ("value", Kind::Any)],
    ),
    (
        "world.mutate_resources",
        &[
            ("resource", Kind::Name),
            ("path", Kind::Text),
            ("value", Kind::Any),
        ],
    ),
    ("world.remove_resources", &[("resource", Kind::Name)]),
    ("world.overview", &[]),
    ("world.entity_info", &[("entity", Kind::Entity)]),
    ("world.hierarchy", &[("limit", Kind::Count)]),
    (
        "world.find",
        &[("text", Kind::Text), ("limit", Kind::Count)],
    ),
    (
        "registry.schema",
        &[
            ("with_crates", Kind::Names),
            ("without_crates", Kind::Names),
            ("type_limit", Kind::Object),
        ],
    ),
    ("schedule.list", &[]),
    ("schedule.graph", &[]),
    (
        "schedule.set_enabled",
        &[("system", Kind::Text), ("enabled", Kind::Bool)],
    ),
    ("schedule.pause", &[("paused", Kind::Bool)]),
    ("schedule.step", &[("frames", Kind::Count)]),
    ("rpc.discover", &[]),
];

/// Bevy Remote Protocol methods mosaic has no counterpart for: answered
/// with an error that names the method and says why.
const UNSUPPORTED: &[(&str, &str)] = &[(
    "world.trigger_event",
    "mosaic's events and observers are typed, and none is registered by name for a remote trigger",
)];

/// Answers one call.
pub(crate) fn call(
    call: &Call,
    world: &mut World,
    schedule: Option<&mut Schedule>,
    state: &mut State,
    url: &str,
) -> Answer {
    // Reserved entities become real before anything reads the world.
    world.flush();
    let p = Params(&call.params);
    let registry = &state.registry.clone();
    let mut schedule = schedule;
    match call.method.as_str() {
        "world.query" => {
            let (offset, limit) = query_window(&call.params)?;
            let mut out = String::from("[");
            query(world, registry, &call.params, offset, limit, None, &mut out)?;
            out.push(']');
            Ok(parse(&out))
        }
        "world.get_components" => get_components(world, registry, &p),
        "world.insert_components" => {
            let entity = p.entity("entity", world)?;
            insert_components(world, registry, entity, p.object("components")?)
        }
        "world.reparent_entities" => reparent(world, &p),
        "world.remove_resources" => {
            let name = canonical(registry, p.str("resource")?);
            registry
                .remove_resource(world, name)
                .map_err(resource_error)?;
            Ok(Value::Null)
        }
        "world.hierarchy" => hierarchy(world, &p),
        "world.find" => find(world, &p),
        "registry.schema" => Ok(schema(world, registry, &p)),
        "schedule.list" => schedule_list(world, schedule.as_deref()),
        "world.remove_components" => remove_components(world, registry, &p),
        "world.mutate_components" => mutate_component(world, registry, &p),
        "world.list_components" => list_components(world, registry, &p),
        "world.spawn_entity" => spawn_entity(world, registry, &p),
        "world.despawn_entity" => {
            // With its `ChildOf` descendants, as Bevy does.
            let entity = p.entity("entity", world)?;
            world
                .despawn_recursive(entity)
                .map(|()| Value::Null)
                .map_err(|e| RpcError::new(codes::ENTITY_NOT_FOUND, e.to_string()))
        }
        "world.list_resources" => Ok(list_resources(world, registry)),
        "world.get_resources" => {
            let name = canonical(registry, p.str("resource")?);
            let value = registry
                .resource_to_json(world, name)
                .map_err(resource_error)?;
            Ok(json!({ "value": parse(&value) }))
        }
        "world.insert_resources" => {
            let name = canonical(registry, p.str("resource")?);
            let value = p.value("value")?;
            registry
                .insert_resource_json(world, name, &value.to_string())
                .map_err(resource_error)?;
            Ok(Value::Null)
        }
        "world.mutate_resources" => {
            let name = canonical(registry, p.str("resource")?);
            let path = p.opt_str("path")?.unwrap_or("");
            let value = p.value("value")?;
            let current = registry
                .resource_to_json(world, name)
                .map_err(resource_error)?;
            let mut current = parse(&current);
            set_path(&mut current, path, value.clone())?;
            registry
                .insert_resource_json(world, name, &current.to_string())
                .map_err(resource_error)?;
            Ok(Value::Null)
        }
        "world.overview" => Ok(overview(world, registry, state)),
        "world.entity_info" => {
            let entity = p.entity("entity", world)?;
            Ok(entity_info(world, registry, entity))
        }
        "schedule.graph" => schedule_graph(world, need(schedule.as_deref_mut())?, state),
        "schedule.set_enabled" => {
            let name = p.str("system")?;
            let enabled = p.bool("enabled")?;
            let frame = need(schedule)?;
            let fixed = world
                .get_schedule(FixedUpdate)
                .is_some_and(|f| f.system_names().contains(&name));
            let target = if !frame.system_names().contains(&name) && fixed {
                world.schedule_mut(FixedUpdate)
            } else {
                frame
            };
            target
                .set_enabled(name, enabled)
                .map_err(|e| RpcError::new(codes::SCHEDULE_ERROR, e.to_string()))?;
            Ok(Value::Null)
        }
        "schedule.pause" => {
            state.paused = p.bool("paused")?;
            state.steps = 0;
            Ok(json!({ "paused": state.paused }))
        }
        "schedule.step" => {
            let frames = p.opt_u64("frames")?.unwrap_or(1).min(10_000);
            state.paused = true;
            state.steps += frames;
            Ok(json!({ "paused": true, "steps": state.steps }))
        }
        "rpc.discover" => Ok(discover(url, world, registry)),
        other => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            match UNSUPPORTED.iter().find(|(name, _)| *name == other) {
                Some((name, why)) => format!("method not supported: {name} ({why})"),
                None => format!("method not supported: {other}"),
            },
        )),
    }
}

fn need(schedule: Option<&mut Schedule>) -> Result<&mut Schedule, RpcError> {
    schedule.ok_or_else(|| {
        RpcError::new(
            codes::SCHEDULE_ERROR,
            "no schedule: the program calls Inspector::update_world",
        )
    })
}

fn parse(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or(Value::Null)
}

fn component_error(e: ValueError) -> RpcError {
    let code = match e {
        ValueError::NoEntity(_) => codes::ENTITY_NOT_FOUND,
        ValueError::Missing(_) => codes::COMPONENT_NOT_PRESENT,
        _ => codes::COMPONENT_ERROR,
    };
    RpcError::new(code, e.to_string())
}

fn resource_error(e: ValueError) -> RpcError {
    let code = match e {
        ValueError::Missing(_) => codes::RESOURCE_NOT_PRESENT,
        _ => codes::RESOURCE_ERROR,
    };
    RpcError::new(code, e.to_string())
}

/// Typed access to a call's parameters.
struct Params<'a>(&'a Value);

impl<'a> Params<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn value(&self, key: &str) -> Result<&'a Value, RpcError> {
        self.get(key)
            .ok_or_else(|| RpcError::params(format!("missing parameter `{key}`")))
    }

    fn str(&self, key: &str) -> Result<&'a str, RpcError> {
        self.value(key)?
            .as_str()
            .ok_or_else(|| RpcError::params(format!("`{key}` must be a string")))
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, RpcError> {
        self.get(key).map(|_| self.str(key)).transpose()
    }

    fn bool(&self, key: &str) -> Result<bool, RpcError> {
        self.value(key)?
            .as_bool()
            .ok_or_else(|| RpcError::params(format!("`{key}` must be true or false")))
    }

    fn opt_bool(&self, key: &str) -> Result<bool, RpcError> {
        Ok(self
            .get(key)
            .map(|_| self.bool(key))
            .transpose()?
            .unwrap_or(false))
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, RpcError> {
        self.get(key)
            .map(|v| {
                v.as_u64().ok_or_else(|| {
                    RpcError::params(format!("`{key}` must be a non-negative integer"))
                })
            })
            .transpose()
    }

    fn object(&self, key: &str) -> Result<&'a Map<String, Value>, RpcError> {
        self.value(key)?
            .as_object()
            .ok_or_else(|| RpcError::params(format!("`{key}` must be an object")))
    }

    /// A list of names (absent: empty).
    fn names(&self, key: &str) -> Result<Vec<&'a str>, RpcError> {
        names_in(self.get(key), key)
    }

    /// A live entity, given as `Entity::to_bits`.
    fn entity(&self, key: &str, world: &World) -> Result<Entity, RpcError> {
        entity_of(self.value(key)?, world)
    }
}

fn names_in<'a>(value: Option<&'a Value>, key: &str) -> Result<Vec<&'a str>, RpcError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let error = || RpcError::params(format!("`{key}` must be a list of names"));
    value
        .as_array()
        .ok_or_else(error)?
        .iter()
        .map(|v| v.as_str().ok_or_else(error))
        .collect()
}

fn entity_of(value: &Value, world: &World) -> Result<Entity, RpcError> {
    let bits = value
        .as_u64()
        .ok_or_else(|| RpcError::params("an entity is a number (Entity::to_bits)"))?;
    match Entity::from_bits(bits) {
        Some(entity) if world.contains(entity) => Ok(entity),
        _ => Err(RpcError::new(
            codes::ENTITY_NOT_FOUND,
            format!("entity {bits} does not exist"),
        )),
    }
}

// ----- component names ------------------------------------------------------

/// The name a component is shown under: its registered name if its type is
/// registered, else its short type name.
fn display_name<'a>(info: &'a ComponentInfo, registry: &'a TypeRegistry) -> &'a str {
    info.type_id()
        .and_then(|t| registry.component_name(t))
        .unwrap_or(info.name())
}

fn is_registered(info: &ComponentInfo, registry: &TypeRegistry) -> bool {
    info.type_id()
        .is_some_and(|t| registry.component_name(t).is_some())
}

/// The world's component called `name`: by registered name, short type
/// name or full type name.
fn find_component<'w>(
    world: &'w World,
    registry: &TypeRegistry,
    name: &str,
) -> Option<&'w ComponentInfo> {
    let infos = || world.component_infos();
    infos()
        .find(|i| display_name(i, registry) == name)
        .or_else(|| infos().find(|i| i.name() == name || i.type_name() == Some(name)))
}

/// The registered name of component `name` (a registered name, a short
/// type name or a full type path, as BRP clients send): `None` if its
/// type is not registered.
fn registered(world: &World, registry: &TypeRegistry, name: &str) -> Option<String> {
    if let Some(found) = registry.registered_name(name) {
        return Some(found.to_owned());
    }
    find_component(world, registry, name)
        .filter(|info| is_registered(info, registry))
        .map(|info| display_name(info, registry).to_owned())
}

/// `name` (a registered name or a full type path) as registered;
/// an unknown name is kept, for the registry's error to name it.
fn canonical<'a>(registry: &'a TypeRegistry, name: &'a str) -> &'a str {
    registry.registered_name(name).unwrap_or(name)
}

fn not_registered(name: &str) -> RpcError {
    RpcError::new(
        codes::COMPONENT_ERROR,
        format!("component `{name}` is not registered"),
    )
}

fn resolve(world: &World, registry: &TypeRegistry, name: &str) -> Result<ComponentId, RpcError> {
    find_component(world, registry, name)
        .map(ComponentInfo::id)
        .ok_or_else(|| {
            RpcError::new(
                codes::COMPONENT_ERROR,
                format!("unknown component `{name}`"),
            )
        })
}

fn storage_name(storage: StorageType) -> &'static str {
    match storage {
        StorageType::Table => "table",
        StorageType::SparseSet => "sparse",
    }
}

/// What is shown of a component without a registration.
fn unregistered(info: &ComponentInfo) -> Value {
    json!({
        "name": info.name(),
        "type": info.type_name(),
        "storage": storage_name(info.storage()),
        "size": info.layout().size(),
    })
}

// ----- world.query ----------------------------------------------------------

/// Rows `world.query` returns when the call gives no `limit`.
pub(crate) const DEFAULT_QUERY_LIMIT: usize = 1000;

/// A call's `offset` and `limit` (absent: 0 and [`DEFAULT_QUERY_LIMIT`]).
pub(crate) fn query_window(params: &Value) -> Result<(usize, usize), RpcError> {
    let p = Params(params);
    let offset = p.opt_u64("offset")?.unwrap_or(0);
    let limit = p.opt_u64("limit")?.unwrap_or(DEFAULT_QUERY_LIMIT as u64);
    let clamp = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Ok((clamp(offset), clamp(limit)))
}

/// One slice of a `world.query` answer.
pub(crate) struct QuerySlice {
    /// Rows written.
    pub rows: usize,
    /// True if matches are left after these rows (the limit or the
    /// deadline stopped the walk).
    pub more: bool,
}

/// Up to `limit` rows of `world.query` from match `offset` on, written as
/// JSON text to `out` (an array's elements: each after a `,` unless `out`
/// ends with `[`), stopping early (with `more`) once `deadline` passes;
/// at least one row is written if one matches. Each component's value
/// is the registry's JSON text copied as it is, so the game thread builds
/// no `Value` tree for a row.
pub(crate) fn query<'a>(
    world: &'a World,
    registry: &'a TypeRegistry,
    params: &'a Value,
    offset: usize,
    limit: usize,
    deadline: Option<std::time::Instant>,
    out: &mut String,
) -> Result<QuerySlice, RpcError> {
    let p = &Params(params);
    let strict = p.opt_bool("strict")?;
    let data = p.get("data").unwrap_or(&Value::Null);
    let filter = p.get("filter").unwrap_or(&Value::Null);
    if !(data.is_object() || data.is_null()) || !(filter.is_object() || filter.is_null()) {
        return Err(RpcError::params("`data` and `filter` must be objects"));
    }
    let components = names_in(data.get("components"), "data.components")?;
    // BRP's `"option": "all"`: every registered component of each row.
    let all = data.get("option").and_then(Value::as_str) == Some("all");
    let option = if all {
        Vec::new()
    } else {
        names_in(data.get("option"), "data.option")?
    };
    let has = names_in(data.get("has"), "data.has")?;
    let with = names_in(filter.get("with"), "filter.with")?;
    let without = names_in(filter.get("without"), "filter.without")?;

    // Names that resolve to nothing: an error in strict mode; otherwise a
    // required one matches nothing and an optional one is left out.
    let lookup = |names: &[&str]| -> Result<Vec<Option<ComponentId>>, RpcError> {
        names
            .iter()
            .map(|n| match resolve(world, registry, n) {
                Ok(id) => Ok(Some(id)),
                Err(e) if strict => Err(e),
                Err(_) => Ok(None),
            })
            .collect()
    };
    let required: Vec<Option<ComponentId>> = lookup(&components)?
        .into_iter()
        .chain(lookup(&with)?)
        .collect();
    let none = QuerySlice {
        rows: 0,
        more: false,
    };
    if required.iter().any(Option::is_none) {
        return Ok(none);
    }
    let required: Vec<ComponentId> = required.into_iter().flatten().collect();
    let excluded: Vec<ComponentId> = lookup(&without)?.into_iter().flatten().collect();
    let mut shown: Vec<(&str, Option<ComponentId>)> = Vec::new();
    // A name given twice is shown once (as a JSON object's key).
    for (name, id) in components
        .iter()
        .copied()
        .zip(lookup(&components)?)
        .chain(option.iter().copied().zip(lookup(&option)?))
    {
        if !shown.iter().any(|&(n, _)| n == name) {
            shown.push((name, id));
        }
    }
    let mut has_ids: Vec<(&str, Option<ComponentId>)> = Vec::new();
    for (name, id) in has.iter().copied().zip(lookup(&has)?) {
        if !has_ids.iter().any(|&(n, _)| n == name) {
            has_ids.push((name, id));
        }
    }
    let sparse = |id: ComponentId| {
        world
            .component_info(id)
            .is_some_and(|i| i.storage() == StorageType::SparseSet)
    };
    let (table_req, sparse_req): (Vec<_>, Vec<_>) = required.iter().partition(|&&id| !sparse(id));
    let (table_ex, sparse_ex): (Vec<_>, Vec<_>) = excluded.iter().partition(|&&id| !sparse(id));
    let per_entity = !sparse_req.is_empty() || !sparse_ex.is_empty();

    let mut skip = offset;
    let mut rows = 0;
    let mut more = false;
    // Keys already written in the row under way.
    let mut keys: Vec<&str> = Vec::new();
    'archetypes: for archetype in world.archetypes() {
        if archetype.is_empty()
            || !table_req.iter().all(|&&id| archetype.contains(id))
            || table_ex.iter().any(|&&id| archetype.contains(id))
        {
            continue;
        }
        let entities = archetype.entities();
        // Whole archetypes before the page are skipped without a look at
        // their entities.
        if !per_entity && skip >= entities.len() {
            skip -= entities.len();
            continue;
        }
        for &entity in entities {
            if per_entity
                && (!sparse_req.iter().all(|&&id| world.contains_id(entity, id))
                    || sparse_ex.iter().any(|&&id| world.contains_id(entity, id)))
            {
                continue;
            }
            if skip > 0 {
                skip -= 1;
                continue;
            }
            // A match past the window: say more are left.
            if rows >= limit
                || (rows > 0 && deadline.is_some_and(|d| std::time::Instant::now() >= d))
            {
                more = true;
                break 'archetypes;
            }
            // A failed row (strict) leaves `out` as it was.
            let mark = out.len();
            if !out.ends_with('[') {
                out.push(',');
            }
            keys.clear();
            let written =
                write_row(world, registry, entity, &shown, strict, &mut keys, out).map(|()| {
                    if all {
                        all_components(world, registry, entity, &mut keys, out);
                    }
                    finish_row(entity, &has_ids, world, out);
                });
            if let Err(e) = written {
                out.truncate(mark);
                return Err(e);
            }
            rows += 1;
        }
    }
    Ok(QuerySlice { rows, more })
}

/// `"name":` as JSON text.
fn write_key(out: &mut String, name: &str) {
    push_json(out, &Value::String(name.to_owned()));
    out.push(':');
}

fn push_json(out: &mut String, value: &Value) {
    use std::fmt::Write;
    let _ = write!(out, "{value}");
}

/// A row's start and its `shown` components: `{"entity":…,"components":{…`
/// (closed by [`finish_row`]).
fn write_row<'a>(
    world: &'a World,
    registry: &'a TypeRegistry,
    entity: Entity,
    shown: &[(&'a str, Option<ComponentId>)],
    strict: bool,
    keys: &mut Vec<&'a str>,
    out: &mut String,
) -> Result<(), RpcError> {
    use std::fmt::Write;
    let _ = write!(out, r#"{{"entity":{},"components":{{"#, entity.to_bits());
    for &(name, id) in shown {
        let Some(id) = id else { continue };
        if !world.contains_id(entity, id) {
            continue;
        }
        let info = world.component_info(id).expect("resolved in this world");
        let value = if is_registered(info, registry) {
            let shown_name = display_name(info, registry);
            match registry.component_to_json(world, entity, shown_name) {
                Ok(json) => json,
                Err(e) if strict => return Err(component_error(e)),
                Err(_) => continue,
            }
        } else if strict {
            return Err(RpcError::new(
                codes::COMPONENT_ERROR,
                format!("component `{name}` is not registered"),
            ));
        } else {
            json!({ "unregistered": unregistered(info) }).to_string()
        };
        if !keys.is_empty() {
            out.push(',');
        }
        write_key(out, name);
        out.push_str(&value);
        keys.push(name);
    }
    Ok(())
}

/// Closes the components of a row and adds its `has`.
fn finish_row(
    entity: Entity,
    has: &[(&str, Option<ComponentId>)],
    world: &World,
    out: &mut String,
) {
    out.push('}');
    if !has.is_empty() {
        out.push_str(r#","has":{"#);
        for (i, &(name, id)) in has.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_key(out, name);
            let present = id.is_some_and(|id| world.contains_id(entity, id));
            out.push_str(if present { "true" } else { "false" });
        }
        out.push('}');
    }
    out.push('}');
}

/// Writes every registered component of `entity` not in `keys`, keyed by
/// full type path (as Bevy answers `"option": "all"`).
fn all_components<'a>(
    world: &'a World,
    registry: &'a TypeRegistry,
    entity: Entity,
    keys: &mut Vec<&'a str>,
    out: &mut String,
) {
    let Ok(e) = world.entity(entity) else { return };
    for id in e.component_ids() {
        let Some(info) = world.component_info(id) else {
            continue;
        };
        let Some(name) = info.type_id().and_then(|t| registry.component_name(t)) else {
            continue;
        };
        let path = registry
            .type_path(name)
            .or(info.type_name())
            .unwrap_or(name);
        if keys.contains(&name) || keys.contains(&path) {
            continue;
        }
        if let Ok(json) = registry.component_to_json(world, entity, name) {
            if !keys.is_empty() {
                out.push(',');
            }
            write_key(out, path);
            out.push_str(&json);
            keys.push(path);
        }
    }
}

// ----- one entity -----------------------------------------------------------

fn get_components(world: &World, registry: &TypeRegistry, p: &Params) -> Answer {
    let entity = p.entity("entity", world)?;
    let names = p.names("components")?;
    let strict = p.opt_bool("strict")?;
    let mut components = Map::new();
    let mut errors = Map::new();
    for name in names {
        let result = match find_component(world, registry, name) {
            Some(info) if !is_registered(info, registry) => Err(RpcError::new(
                codes::COMPONENT_ERROR,
                format!(
                    "component `{name}` is not registered ({} storage, {} bytes)",
                    storage_name(info.storage()),
                    info.layout().size()
                ),
            )),
            Some(info) => registry
                .component_to_json(world, entity, display_name(info, registry))
                .map(|json| parse(&json))
                .map_err(component_error),
            None => registry
                .component_to_json(world, entity, canonical(registry, name))
                .map(|json| parse(&json))
                .map_err(component_error),
        };
        match result {
            Ok(value) => {
                components.insert(name.to_owned(), value);
            }
            Err(e) if strict => return Err(e),
            Err(e) => {
                errors.insert(name.to_owned(), e.to_json());
            }
        }
    }
    Ok(json!({ "components": components, "errors": errors }))
}

/// Inserts every value or none: on an error the values already inserted
/// are put back as they were.
fn insert_components(
    world: &mut World,
    registry: &TypeRegistry,
    entity: Entity,
    values: &Map<String, Value>,
) -> Answer {
    let mut named = Vec::with_capacity(values.len());
    for (given, value) in values {
        let name = registered(world, registry, given).ok_or_else(|| not_registered(given))?;
        named.push((name, value));
    }
    let mut undo: Vec<(&str, Option<String>)> = Vec::new();
    for (name, value) in &named {
        let name = name.as_str();
        let before = registry.component_to_json(world, entity, name).ok();
        if let Err(e) = registry.insert_component_json(world, entity, name, &value.to_string()) {
            for (name, before) in undo.into_iter().rev() {
                let _ = match before {
                    Some(json) => registry.insert_component_json(world, entity, name, &json),
                    None => registry.remove_component(world, entity, name),
                };
            }
            return Err(component_error(e));
        }
        undo.push((name, before));
    }
    Ok(Value::Null)
}

fn remove_components(world: &mut World, registry: &TypeRegistry, p: &Params) -> Answer {
    let entity = p.entity("entity", world)?;
    let names: Vec<String> = p
        .names("components")?
        .into_iter()
        .map(|n| registered(world, registry, n).unwrap_or_else(|| n.to_owned()))
        .collect();
    // Check everything first: all or nothing.
    for name in &names {
        registry
            .component_to_json(world, entity, name)
            .map_err(component_error)?;
    }
    for name in &names {
        registry
            .remove_component(world, entity, name)
            .map_err(component_error)?;
    }
    Ok(Value::Null)
}

fn mutate_component(world: &mut World, registry: &TypeRegistry, p: &Params) -> Answer {
    let entity = p.entity("entity", world)?;
    let given = p.str("component")?;
    let name = &registered(world, registry, given).unwrap_or_else(|| given.to_owned());
    let path = p.opt_str("path")?.unwrap_or("");
    let value = p.value("value")?;
    let current = registry
        .component_to_json(world, entity, name)
        .map_err(component_error)?;
    let mut current = parse(&current);
    set_path(&mut current, path, value.clone())?;
    registry
        .insert_component_json(world, entity, name, &current.to_string())
        .map_err(component_error)?;
    Ok(Value::Null)
}

/// Sets the part of `target` at `path` (`""`, `".x"`, `"pos.x"`,
/// `".items[2]"`, `".0"` for a tuple's field): the path must exist.
fn set_path(target: &mut Value, path: &str, value: Value) -> Result<(), RpcError> {
    let mut node = target;
    let mut segments = Vec::new();
    for part in path.split('.').filter(|s| !s.is_empty()) {
        let (field, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !field.is_empty() {
            segments.push(field.to_owned());
        }
        while let Some(inner) = rest.strip_prefix('[') {
            let end = inner
                .find(']')
                .ok_or_else(|| RpcError::params(format!("bad path `{path}`")))?;
            segments.push(inner[..end].to_owned());
            rest = &inner[end + 1..];
        }
        if !rest.is_empty() {
            return Err(RpcError::params(format!("bad path `{path}`")));
        }
    }
    for segment in &segments {
        let missing = || {
            RpcError::new(
                codes::COMPONENT_ERROR,
                format!("path `{path}` does not exist in the value"),
            )
        };
        node = match node {
            Value::Object(map) => map.get_mut(segment.as_str()).ok_or_else(missing)?,
            Value::Array(items) => {
                let i: usize = segment.parse().map_err(|_| missing())?;
                items.get_mut(i).ok_or_else(missing)?
            }
            _ => return Err(missing()),
        };
    }
    *node = value;
    Ok(())
}

fn list_components(world: &World, registry: &TypeRegistry, p: &Params) -> Answer {
    if p.get("entity").is_some() {
        let entity = p.entity("entity", world)?;
        let entity = world.entity(entity).expect("checked live");
        let names: Vec<&str> = entity
            .component_ids()
            .into_iter()
            .filter_map(|id| world.component_info(id))
            .map(|i| display_name(i, registry))
            .collect();
        return Ok(json!(names));
    }
    let mut names: Vec<&str> = world
        .component_infos()
        .map(|i| display_name(i, registry))
        .collect();
    for name in registry.component_names() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(json!(names))
}

fn spawn_entity(world: &mut World, registry: &TypeRegistry, p: &Params) -> Answer {
    let empty = Map::new();
    let values = match p.get("components") {
        Some(_) => p.object("components")?,
        None => &empty,
    };
    let entity = world.spawn(());
    if let Err(e) = insert_components(world, registry, entity, values) {
        let _ = world.despawn(entity);
        return Err(e);
    }
    Ok(json!({ "entity": entity.to_bits() }))
}

fn entity_info(world: &World, registry: &TypeRegistry, entity: Entity) -> Value {
    let components: Vec<Value> = world
        .entity(entity)
        .map(|e| e.component_ids())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|id| world.component_info(id))
        .map(|info| {
            let name = display_name(info, registry);
            let mut row = json!({
                "name": name,
                "storage": storage_name(info.storage()),
                "size": info.layout().size(),
                "registered": is_registered(info, registry),
            });
            if is_registered(info, registry) {
                match registry.component_to_json(world, entity, name) {
                    Ok(json) => row["value"] = parse(&json),
                    Err(e) => row["error"] = json!(e.to_string()),
                }
            } else {
                row["type"] = json!(info.type_name());
            }
            row
        })
        .collect();
    let children: Vec<u64> = world.children(entity).iter().map(|c| c.to_bits()).collect();
    json!({
        "entity": entity.to_bits(),
        "label": format!("{entity:?}"),
        "name": entity_name(world, entity),
        "parent": world.parent(entity).map(|p| json!({
            "entity": p.to_bits(),
            "label": format!("{p:?}"),
            "name": entity_name(world, p),
        })),
        "children": children,
        "archetype": world.location(entity).map(|l| l.archetype.index()),
        "components": components,
    })
}

// ----- resources, overview --------------------------------------------------

fn list_resources(world: &World, registry: &TypeRegistry) -> Value {
    let mut names: Vec<String> = world
        .resource_names()
        .map(|(_, name)| name.to_owned())
        .collect();
    for name in registry.resource_names() {
        if !names.iter().any(|n| n == name) && registry.resource_to_json(world, name).is_ok() {
            names.push(name.to_owned());
        }
    }
    json!(names)
}

fn overview(world: &World, registry: &TypeRegistry, state: &State) -> Value {
    let archetypes: Vec<Value> = world
        .archetypes()
        .filter(|a| !a.is_empty())
        .map(|a| {
            let row_bytes: usize = a
                .components()
                .iter()
                .filter_map(|&id| world.component_info(id))
                .map(|i| i.layout().size())
                .sum::<usize>()
                + std::mem::size_of::<Entity>();
            let names: Vec<&str> = a
                .components()
                .iter()
                .filter_map(|&id| world.component_info(id))
                .map(|i| display_name(i, registry))
                .collect();
            json!({
                "id": a.id().index(),
                "rows": a.len(),
                "bytes": a.len() * row_bytes,
                "components": names,
            })
        })
        .collect();
    let sparse_sets: Vec<Value> = world
        .component_infos()
        .filter(|i| i.storage() == StorageType::SparseSet)
        .map(|i| {
            let len = world.sparse_set_len(i.id());
            json!({
                "component": display_name(i, registry),
                "len": len,
                "bytes": len * (i.layout().size() + std::mem::size_of::<Entity>()),
            })
        })
        .collect();
    let resources = world.resource_names().count();
    let events: Vec<Value> = world
        .event_counts()
        .into_iter()
        .map(|(name, count)| json!({ "name": name, "count": count }))
        .collect();
    json!({
        "entities": world.len(),
        "archetypes": archetypes,
        "sparse_sets": sparse_sets,
        "components": world.component_infos().len(),
        "resources": resources,
        "events": events,
        "paused": state.paused,
        "frames": world.get_resource::<mosaic::Time>().map(|t| t.frame()),
    })
}

// ----- schedule -------------------------------------------------------------

/// The systems of the world's fixed-step schedule (labelled
/// `"FixedUpdate"`, first: it runs first in a frame), then the frame
/// schedule's (`"frame"`).
fn schedule_graph(world: &World, schedule: &Schedule, state: &State) -> Answer {
    let mut systems = match world.get_schedule(FixedUpdate) {
        Some(fixed) => system_rows(world, fixed, "FixedUpdate"),
        None => Vec::new(),
    };
    systems.extend(system_rows(world, schedule, "frame"));
    Ok(json!({
        "systems": systems,
        "timing": schedule.is_timing(),
        "paused": state.paused,
    }))
}

/// One row per system of `schedule`: name, enabled, ordering, access and
/// timing, and which schedule it is in.
fn system_rows(world: &World, schedule: &Schedule, label: &str) -> Vec<Value> {
    let timings = schedule.timings();
    let timing: BTreeMap<&str, &mosaic::SystemTiming> = timings
        .rows()
        .iter()
        .map(|t| (t.name.as_str(), t))
        .collect();
    let resources: Vec<(mosaic::ResourceId, &str)> = world.resource_names().collect();
    schedule
        .system_names()
        .into_iter()
        .map(|name| {
            let mut row = json!({
                "name": name,
                "schedule": label,
                "enabled": schedule.is_enabled(name),
            });
            if let Some((before, after)) = schedule.system_orderings(name) {
                row["before"] = json!(before);
                row["after"] = json!(after);
            }
            if let Some(access) = schedule.system_access(name) {
                let mut reads = Vec::new();
                let mut writes = Vec::new();
                for info in world.component_infos() {
                    let id = info.id();
                    if access.queries().any(|(_, a)| a.writes(id)) {
                        writes.push(info.name());
                    } else if access.queries().any(|(_, a)| a.reads(id)) {
                        reads.push(info.name());
                    }
                }
                let res_writes: Vec<&str> = resources
                    .iter()
                    .filter(|&&(id, _)| access.writes_resource(id))
                    .map(|&(_, n)| n)
                    .collect();
                let res_reads: Vec<&str> = resources
                    .iter()
                    .filter(|&&(id, _)| !access.writes_resource(id) && access.reads_resource(id))
                    .map(|&(_, n)| n)
                    .collect();
                row["access"] = json!({
                    "reads": reads,
                    "writes": writes,
                    "resources_read": res_reads,
                    "resources_write": res_writes,
                    "reads_world": access.reads_world(),
                    "exclusive": access.is_exclusive(),
                });
            }
            if let Some(t) = timing.get(name) {
                row["timing"] = json!({
                    "runs": t.runs,
                    "total_ns": t.total.as_nanos() as u64,
                    "mean_ns": t.mean().as_nanos() as u64,
                });
            }
            row
        })
        .collect()
}

fn discover(url: &str, world: &World, registry: &TypeRegistry) -> Value {
    let components: Vec<&str> = registry.component_names().collect();
    let resources: Vec<&str> = registry.resource_names().collect();
    let with_paths = |names: &[&str]| -> Value {
        let mut all: Vec<&str> = names.to_vec();
        all.extend(names.iter().filter_map(|n| registry.type_path(n)));
        json!(all)
    };
    let (component_names, resource_names) = (with_paths(&components), with_paths(&resources));
    let schemas = schema(world, registry, &Params(&Value::Null));
    let methods: Vec<Value> = METHODS
        .iter()
        .map(|(name, params)| {
            let on_resources = name.contains("resource");
            let params: Vec<Value> = params
                .iter()
                .map(|&(param, kind)| {
                    let names = if on_resources {
                        &resource_names
                    } else {
                        &component_names
                    };
                    let schema = match kind {
                        Kind::Entity => json!({ "type": "integer", "minimum": 0 }),
                        Kind::Entities => {
                            json!({ "type": "array", "items": { "type": "integer", "minimum": 0 } })
                        }
                        Kind::Names => json!({ "type": "array", "items": { "enum": names } }),
                        Kind::Name => json!({ "enum": names }),
                        Kind::Text => json!({ "type": "string" }),
                        Kind::Any => json!({}),
                        Kind::Bool => json!({ "type": "boolean" }),
                        Kind::Count => json!({ "type": "integer", "minimum": 0 }),
                        Kind::Object => json!({ "type": "object" }),
                        Kind::Values => json!({
                            "type": "object",
                            "propertyNames": { "enum": names },
                        }),
                    };
                    json!({ "name": param, "schema": schema })
                })
                .collect();
            json!({ "name": name, "params": params })
        })
        .collect();
    json!({
        "openrpc": "1.3.2",
        "info": { "title": "mosaic inspector", "version": env!("CARGO_PKG_VERSION") },
        "methods": methods,
        "servers": [{ "name": "mosaic", "url": url }],
        "components": { "schemas": schemas },
    })
}

// ----- hierarchy, search ----------------------------------------------------

/// `entity`'s `Name`, if it has one.
fn entity_name(world: &World, entity: Entity) -> Option<String> {
    world
        .get::<Name>(entity)
        .ok()
        .map(|n| n.as_str().to_owned())
}

/// Most nodes `world.hierarchy` and `world.find` answer with by default.
const DEFAULT_NODES: u64 = 2_000;

/// BRP's `world.reparent_entities`: makes each of `entities` a child of
/// `parent`, or a root if `parent` is absent. Checked first, so a dead
/// entity or a cycle changes nothing.
fn reparent(world: &mut World, p: &Params) -> Answer {
    let list = p
        .value("entities")?
        .as_array()
        .ok_or_else(|| RpcError::params("`entities` must be a list of entities"))?;
    let entities: Vec<Entity> = list
        .iter()
        .map(|v| entity_of(v, world))
        .collect::<Result<_, _>>()?;
    let parent = p.get("parent").map(|v| entity_of(v, world)).transpose()?;
    if let Some(parent) = parent {
        // `parent` under one of `entities` (or one of them) would close a
        // cycle: refused before anything changes.
        let mut up = Some(parent);
        while let Some(at) = up {
            if entities.contains(&at) {
                return Err(RpcError::params(format!(
                    "entity {} cannot become a child of its own descendant {}",
                    at.to_bits(),
                    parent.to_bits()
                )));
            }
            up = world.parent(at);
        }
    }
    for &child in &entities {
        let result = match parent {
            Some(parent) if world.parent(child) == Some(parent) => Ok(()),
            Some(parent) => world.set_parent(child, parent),
            None if world.parent(child).is_some() => world.remove_parent(child).map(drop),
            None => Ok(()),
        };
        result.map_err(|e| RpcError::params(e.to_string()))?;
    }
    Ok(Value::Null)
}

/// mosaic's `world.hierarchy`: every entity with a `ChildOf` parent or
/// children, with its parent and name (the page builds its tree from it):
/// the roots (parents without a parent) first, then the children. Its cost
/// follows the number of children, not of entities: the query walks the
/// sparse set of `Relation<ChildOf>`, not the world.
fn hierarchy(world: &mut World, p: &Params) -> Answer {
    let limit = p.opt_u64("limit")?.unwrap_or(DEFAULT_NODES) as usize;
    let mut edges = world.query::<(Entity, &mosaic::Relation<mosaic::ChildOf>)>();
    let children: Vec<(Entity, Entity)> = edges
        .iter(world)
        .map(|(child, edge)| (child, edge.target()))
        .collect();
    let is_child: std::collections::HashSet<Entity> = children.iter().map(|&(c, _)| c).collect();
    let mut roots: Vec<Entity> = children
        .iter()
        .map(|&(_, parent)| parent)
        .filter(|parent| !is_child.contains(parent))
        .collect();
    roots.sort_unstable();
    roots.dedup();
    let node = |entity: Entity, parent: Option<Entity>| {
        json!({
            "entity": entity.to_bits(),
            "label": format!("{entity:?}"),
            "name": entity_name(world, entity),
            "parent": parent.map(Entity::to_bits),
        })
    };
    let all = roots.iter().map(|&root| (root, None)).chain(
        children
            .iter()
            .map(|&(child, parent)| (child, Some(parent))),
    );
    let total = roots.len() + children.len();
    let nodes: Vec<Value> = all.take(limit).map(|(e, parent)| node(e, parent)).collect();
    Ok(json!({ "relation": "ChildOf", "nodes": nodes, "truncated": total > limit }))
}

/// mosaic's `world.find`: entities whose id (`to_bits`, or the `12v0`
/// label) is `text`, or whose `Name` contains it (ignoring case). Its cost
/// follows the number of named entities: the query visits only those.
fn find(world: &mut World, p: &Params) -> Answer {
    let text = p.str("text")?.trim();
    let limit = p.opt_u64("limit")?.unwrap_or(DEFAULT_NODES) as usize;
    let by_id = text
        .parse::<u64>()
        .ok()
        .and_then(Entity::from_bits)
        .or_else(|| {
            let (index, generation) = text.split_once('v')?;
            let bits = u64::from(generation.parse::<u32>().ok()?) << 32
                | u64::from(index.parse::<u32>().ok()?);
            Entity::from_bits(bits)
        })
        .filter(|&e| world.contains(e));
    let lower = text.to_lowercase();
    let mut matches: Vec<Entity> = by_id.into_iter().collect();
    if !lower.is_empty() {
        let mut named = world.query::<(Entity, &Name)>();
        for (entity, name) in named.iter(world) {
            if matches.len() >= limit {
                break;
            }
            if Some(entity) != by_id && contains_ignoring_case(name.as_str(), &lower) {
                matches.push(entity);
            }
        }
    }
    let found: Vec<Value> = matches
        .into_iter()
        .map(|e| json!({ "entity": e.to_bits(), "label": format!("{e:?}"), "name": entity_name(world, e) }))
        .collect();
    Ok(json!(found))
}

/// True if `text`, lowercased, contains `lower` (already lowercase).
/// ASCII text is compared in place; other text is lowercased first.
fn contains_ignoring_case(text: &str, lower: &str) -> bool {
    if text.is_ascii() && lower.is_ascii() {
        let (text, lower) = (text.as_bytes(), lower.as_bytes());
        lower.is_empty()
            || text
                .windows(lower.len())
                .any(|w| w.eq_ignore_ascii_case(lower))
    } else {
        text.to_lowercase().contains(lower)
    }
}

// ----- schemas --------------------------------------------------------------

/// BRP's `registry.schema`: a JSON schema per registered type, keyed by
/// full type path. The fields and their JSON types are read from a live
/// value (the first entity holding the component, or the resource); a
/// type with no live value is listed with its names and kind only.
fn schema(world: &World, registry: &TypeRegistry, p: &Params) -> Value {
    let with = names_in(p.get("with_crates"), "with_crates").unwrap_or_default();
    let without = names_in(p.get("without_crates"), "without_crates").unwrap_or_default();
    let limit = p.get("type_limit");
    let limit_with = names_in(limit.and_then(|l| l.get("with")), "with").unwrap_or_default();
    let limit_without =
        names_in(limit.and_then(|l| l.get("without")), "without").unwrap_or_default();
    let mut out = Map::new();
    let kinds = registry
        .component_names()
        .map(|n| (n, "Component"))
        .chain(registry.resource_names().map(|n| (n, "Resource")));
    for (name, kind) in kinds {
        let path = registry.type_path(name).unwrap_or(name);
        let crate_name = path.split("::").next().unwrap_or(path);
        if (!with.is_empty() && !with.contains(&crate_name)) || without.contains(&crate_name) {
            continue;
        }
        if (!limit_with.is_empty() && !limit_with.contains(&kind)) || limit_without.contains(&kind)
        {
            continue;
        }
        let sample = match kind {
            "Component" => sample_component(world, registry, name),
            _ => registry
                .resource_to_json(world, name)
                .ok()
                .map(|j| parse(&j)),
        };
        let module = path.rsplit_once("::").map_or("", |(m, _)| m);
        let mut entry = json!({
            "shortPath": name,
            "typePath": path,
            "modulePath": module,
            "crateName": crate_name,
            "reflectTypes": [kind, "Serialize", "Deserialize"],
        });
        if let Some(sample) = sample {
            describe(&mut entry, &sample);
        }
        out.insert(path.to_owned(), entry);
    }
    Value::Object(out)
}

/// The value of component `name` on the first entity holding it.
fn sample_component(world: &World, registry: &TypeRegistry, name: &str) -> Option<Value> {
    let id = find_component(world, registry, name)?.id();
    world
        .archetypes()
        .flat_map(|a| a.entities().iter().copied())
        .find(|&e| world.contains_id(e, id))
        .and_then(|e| registry.component_to_json(world, e, name).ok())
        .map(|j| parse(&j))
}

/// Adds the kind, JSON type and (for an object) the fields of `sample`.
fn describe(entry: &mut Value, sample: &Value) {
    let ty = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    entry["type"] = json!(ty(sample));
    match sample {
        Value::Object(fields) => {
            entry["kind"] = json!("Struct");
            let properties: Map<String, Value> = fields
                .iter()
                .map(|(k, v)| (k.clone(), json!({ "type": ty(v) })))
                .collect();
            entry["required"] = json!(fields.keys().collect::<Vec<_>>());
            entry["properties"] = Value::Object(properties);
        }
        Value::Array(items) => {
            entry["kind"] = json!("List");
            if let Some(first) = items.first() {
                entry["items"] = json!({ "type": ty(first) });
            }
        }
        _ => entry["kind"] = json!("Value"),
    }
}

// ----- schedules --------------------------------------------------------------

/// BRP's `schedule.list`: the schedules and their systems.
fn schedule_list(world: &World, schedule: Option<&Schedule>) -> Answer {
    let mut schedules = Vec::new();
    if let Some(fixed) = world.get_schedule(FixedUpdate) {
        schedules.push(json!({ "name": "FixedUpdate", "systems": fixed.system_names() }));
    }
    if let Some(frame) = schedule {
        schedules.push(json!({ "name": "frame", "systems": frame.system_names() }));
    }
    Ok(json!(schedules))
}

// ----- watches ----------------------------------------------------------------

/// What a `+watch` stream sends next, given the previous answer (`None` at
/// first) and this one: `None` if nothing changed. As Bevy's watches:
/// `world.get_components` sends the components whose values changed and
/// the names of those removed; `world.list_components` the names added and
/// removed; other methods their whole result.
pub(crate) fn watch_delta(method: &str, last: Option<&Value>, now: &Value) -> Option<Value> {
    let method = method.trim_end_matches("+watch");
    match method {
        "world.get_components" => {
            let empty = Map::new();
            let before = last
                .and_then(|l| l["components"].as_object())
                .unwrap_or(&empty);
            let after = now["components"].as_object().unwrap_or(&empty);
            let changed: Map<String, Value> = after
                .iter()
                .filter(|(k, v)| before.get(*k) != Some(v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let removed: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
            let errors = &now["errors"];
            let errors_changed = last.is_none_or(|l| &l["errors"] != errors);
            (last.is_none() || !changed.is_empty() || !removed.is_empty() || errors_changed)
                .then(|| json!({ "components": changed, "removed": removed, "errors": errors }))
        }
        "world.list_components" => {
            let names = |v: Option<&Value>| -> Vec<Value> {
                v.and_then(Value::as_array).cloned().unwrap_or_default()
            };
            let (before, after) = (names(last), names(Some(now)));
            let added: Vec<&Value> = after.iter().filter(|n| !before.contains(n)).collect();
            let removed: Vec<&Value> = before.iter().filter(|n| !after.contains(n)).collect();
            (last.is_none() || !added.is_empty() || !removed.is_empty())
                .then(|| json!({ "added": added, "removed": removed }))
        }
        _ => (last != Some(now)).then(|| now.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic::prelude::Component;

    #[test]
    fn contains_ignoring_case_matches_to_lowercase() {
        let cases = [
            ("Boss", "boss", true),
            ("the BOSS room", "oss r", true),
            ("Boss", "bosses", false),
            ("ab", "", true),
            ("ÉCLAIR", "éclair", true),
            ("Straße", "ße", true),
            ("Boss", "ö", false),
        ];
        for (text, lower, want) in cases {
            assert_eq!(
                text.to_lowercase().contains(lower),
                want,
                "{text} / {lower}"
            );
            assert_eq!(
                contains_ignoring_case(text, lower),
                want,
                "{text} / {lower}"
            );
        }
    }

    #[test]
    fn find_reads_names_in_every_archetype_and_skips_the_unnamed() {
        #[derive(Component)]
        struct Marker;
        let mut world = World::new();
        for _ in 0..10 {
            world.spawn(());
        }
        let a = world.spawn(Name::new("Crate A"));
        let b = world.spawn((Name::new("crate b"), Marker));
        world.spawn(Name::new("Barrel"));
        let params = json!({ "text": "CRATE" });
        let found = find(&mut world, &Params(&params)).unwrap();
        let mut ids: Vec<u64> = found
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["entity"].as_u64().unwrap())
            .collect();
        ids.sort_unstable();
        let mut want = vec![a.to_bits(), b.to_bits()];
        want.sort_unstable();
        assert_eq!(ids, want, "{found}");
        // The limit still cuts across archetypes.
        let params = json!({ "text": "crate", "limit": 1 });
        let found = find(&mut world, &Params(&params)).unwrap();
        assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    }
}
