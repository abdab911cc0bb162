//! What can go wrong loading or saving a scene, and where.

use std::fmt;

use thiserror::Error;

use mosaic::SchemaError;

/// A place in a scene file: 1-based line and column of a text file.
///
/// # Example
/// ```
/// use mosaic_scene::Location;
/// assert_eq!(Location { line: 3, column: 14 }.to_string(), "line 3, column 14");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Where an error is: a text location, or (binary scenes) a description.
///
/// # Example
/// ```
/// use mosaic_scene::{Location, Where};
/// let at = Where::Text(Location { line: 2, column: 5 });
/// assert_eq!(at.to_string(), " at line 2, column 5");
/// assert_eq!(Where::Unknown.to_string(), "");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Where {
    /// A line and column of a RON or JSON scene.
    Text(Location),
    /// A binary scene: which entity, prefab or resource.
    Binary(String),
    /// Not known (a scene built in code, or saved from a world).
    #[default]
    Unknown,
}

impl Where {
    /// The text location, if there is one.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::{Location, Where};
    /// assert_eq!(Where::Unknown.location(), None);
    /// ```
    pub fn location(&self) -> Option<Location> {
        match self {
            Where::Text(l) => Some(*l),
            _ => None,
        }
    }
}

impl fmt::Display for Where {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Where::Text(l) => write!(f, " at {l}"),
            Where::Binary(what) => write!(f, " in {what}"),
            Where::Unknown => Ok(()),
        }
    }
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    }
}

/// " (in the `extends` of prefab `P`)", unless `at` names the prefab
/// already (binary scenes).
fn extended_by(prefab: &Option<String>, at: &Where) -> String {
    match (prefab, at) {
        (Some(p), Where::Text(_) | Where::Unknown) => {
            format!(" (in the `extends` of prefab `{p}`)")
        }
        _ => String::new(),
    }
}

fn at_field(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(", field `{path}`")
    }
}

/// A scene could not be read, loaded or written. Loading is all-or-nothing:
/// whenever [`Scene::spawn_into`](super::Scene::spawn_into) returns an error,
/// the world is exactly as it was.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic_scene::{Scene, SceneError, TypeRegistry};
/// let scene = Scene::from_ron_str("(entities: [(id: 1, components: {\"Postion\": ()})])").unwrap();
/// let mut registry = TypeRegistry::new();
/// # #[derive(Component, serde::Serialize, serde::Deserialize)] struct Position;
/// registry.register::<Position>();
/// let mut world = World::new();
/// let err = scene.spawn_into(&mut world, &registry).unwrap_err();
/// assert!(matches!(err, SceneError::UnknownComponent { .. }));
/// assert_eq!(
///     err.to_string(),
///     "unknown component `Postion` at line 1, column 45; did you mean `Position`?"
/// );
/// assert!(world.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Error)]
#[non_exhaustive]
pub enum SceneError {
    /// The file is not valid RON / JSON / binary scene data, or does not
    /// have the scene's shape.
    #[error("{format} syntax error{at}: {message}")]
    Syntax {
        /// `"RON"`, `"JSON"` or `"binary"`.
        format: &'static str,
        /// The parser's message.
        message: String,
        /// Where.
        at: Where,
    },
    /// A component (or resource) name no registry entry or schema has.
    #[error("unknown {kind} `{name}`{at}{}", did_you_mean(suggestion))]
    UnknownComponent {
        /// `"component"` or `"resource"`.
        kind: &'static str,
        /// The name in the file.
        name: String,
        /// The closest known name, if one is close.
        suggestion: Option<String>,
        /// Where.
        at: Where,
    },
    /// A value that does not fit its component's type.
    #[error("component `{component}`{}{at}: {message}", at_field(path))]
    WrongShape {
        /// The component (or resource) name.
        component: String,
        /// The field path inside the value (`"x"`, `"inner.y"`), empty
        /// for the value as a whole.
        path: String,
        /// What the parser expected.
        message: String,
        /// Where (the offending token, for text files).
        at: Where,
    },
    /// Two entities with the same scene id.
    #[error("duplicate scene id {id}{at}")]
    DuplicateId {
        /// The id.
        id: u64,
        /// Where (the second one).
        at: Where,
    },
    /// An entity's scene id is reserved: at least
    /// [`Entity::RESERVED_SCENE_IDS`](mosaic::Entity::RESERVED_SCENE_IDS)
    /// (`0xFFFF_FFFF_0000_0000`). Such an id would read, as an entity
    /// reference, as the same handle as its low 32 bits; no save writes one.
    /// (A component value that refers to such an id fails to decode, as
    /// [`SceneError::WrongShape`].)
    #[error(
        "scene id {id}{at} is reserved (scene ids must be below 18446744069414584320, 0xFFFF_FFFF_0000_0000)"
    )]
    ReservedId {
        /// The id.
        id: u64,
        /// Where.
        at: Where,
    },
    /// A component refers to a scene id no entity in the scene has.
    #[error("component `{component}`{at} refers to entity {id}, which is not in the scene")]
    DanglingReference {
        /// The component holding the reference.
        component: String,
        /// The scene id it names.
        id: u64,
        /// Where (the component's value).
        at: Where,
    },
    /// The scene's edges of an [acyclic](mosaic::Relationship::ACYCLIC)
    /// relation (as `ChildOf`) form a cycle, which the world would refuse.
    #[error("the `{relation}` edges of the scene form a cycle through entity {id}{at}")]
    RelationCycle {
        /// The relation's name in the file (its registered name).
        relation: String,
        /// The scene id of an entity on the cycle.
        id: u64,
        /// Where that entity is (its id, for text files).
        at: Where,
    },
    /// A component or resource holds entity references its type does not
    /// remap: registered without
    /// [`Registration::map_entities`](super::Registration::map_entities), or
    /// an entity field left without `#[entities]`.
    #[error(
        "component `{component}`{at} holds entity references, but its registration does not map them (call `.map_entities()` when registering it)"
    )]
    UnmappedEntities {
        /// The component name.
        component: String,
        /// Where.
        at: Where,
    },
    /// An entity or prefab names a prefab that does not exist.
    #[error(
        "unknown prefab `{name}`{}{at}{}",
        extended_by(in_prefab, at),
        did_you_mean(suggestion)
    )]
    UnknownPrefab {
        /// The prefab name.
        name: String,
        /// The prefab whose `extends` names it (`None` for an entity's
        /// `prefab`, or a prefab spawned by name).
        in_prefab: Option<String>,
        /// The closest known name, if one is close.
        suggestion: Option<String>,
        /// Where.
        at: Where,
    },
    /// Prefabs that extend each other in a circle.
    #[error("prefab cycle: {}{at}", chain.join(" -> "))]
    PrefabCycle {
        /// The prefabs in the cycle, the first repeated at the end.
        chain: Vec<String>,
        /// Where the first prefab of `chain` is.
        at: Where,
    },
    /// A name given twice where names must be unique (a component within
    /// one entity, a prefab, a resource, a schema).
    #[error("{what} `{name}` is given twice{at}")]
    Duplicate {
        /// What kind of name.
        what: &'static str,
        /// The name.
        name: String,
        /// Where (the second one).
        at: Where,
    },
    /// A runtime-defined component's schema is invalid or conflicts with
    /// the world's.
    #[error("schema of `{component}`{at}: {error}")]
    Schema {
        /// The component name.
        component: String,
        /// What is wrong.
        error: SchemaError,
        /// Where the schema is in the file (its body, for text files).
        at: Where,
    },
    /// A value read from one format cannot be written to another without
    /// its type: call [`Scene::resolve`](super::Scene::resolve) first.
    #[error(
        "component `{component}` was read from {from}; call `scene.resolve(&registry)` before writing it as {to}"
    )]
    Unresolved {
        /// The component name.
        component: String,
        /// The format it was read from.
        from: &'static str,
        /// The format asked for.
        to: &'static str,
    },
    /// A value could not be serialised.
    #[error("could not write component `{component}`: {message}")]
    Encode {
        /// The component (or resource) name.
        component: String,
        /// The serialiser's message.
        message: String,
    },
    /// A scene file could not be read.
    #[error("could not read scene file `{path}`: {message}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        message: String,
    },
}

/// The name in `known` closest to `name`, if it is close enough to be a typo.
///
/// Names whose lengths differ by more than a typo's distance are not
/// compared: the distance is at least the difference in length, and
/// comparing costs the product of the lengths (a megabyte-long name in a
/// hostile file must not cost seconds and a matrix of megabytes).
pub(crate) fn suggest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let len = name.chars().count();
    known
        .into_iter()
        .filter(|k| {
            let k_len = k.chars().count();
            len.abs_diff(k_len) <= 2.max(k_len / 3)
        })
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|&(d, k)| d > 0 && d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| k.to_owned())
}
