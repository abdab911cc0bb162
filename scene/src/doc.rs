//! One pass over a text scene's document (RON or JSON), driven by a
//! [`Walk`]: the loader's registry-driven decode, `Scene::resolve`,
//! reading a file with the registry at hand (`read`, which also takes the
//! document's structure from the walk: see [`Part`]), and finding where a
//! part of the file is for an error.
//!
//! A text scene keeps its source, not the spans of its values: reading a
//! file (`Scene::from_*`) checks the document's shape with every value
//! skipped, and loading walks the document once more, handing each value's
//! deserializer (type-erased with `erased_serde`, since the walk is the
//! same for every format) to the walk, which decodes it with the type the
//! registry names, straight into its column. Nothing is parsed twice on
//! the way to the world, and no grammar of our own reads the file: the
//! format's own deserializer (`ron`, `serde_json`) does.
//!
//! Errors are raised inside the walk as the format's custom errors, so the
//! format places them (its own position of the offending token); a walk
//! keeps the structured error and the caller fills in that position.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::registry::Kind;
use super::text::{ENTITY_STRUCT, Id, PREFAB_STRUCT, SCENE_STRUCT};
use super::value::{Format, Source, json_offset, offset_of, skip_blank};

/// A part of a text scene, by index in document order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Place {
    /// Resource `j`'s value.
    Resource(usize),
    /// Component `j` of prefab `i`.
    PrefabValue(usize, usize),
    /// Component `j` of entity `i`.
    EntityValue(usize, usize),
    /// Prefab `i`'s body.
    PrefabBody(usize),
    /// Schema `i`'s body.
    SchemaBody(usize),
    /// Entity `i`'s id.
    EntityId(usize),
    /// Entity `i`'s `prefab`.
    EntityPrefab(usize),
    /// Prefab `i`'s `extends`.
    Extends(usize),
    /// The whole text: one value, not a scene (reflection's JSON values).
    Whole,
}

impl Place {
    /// Whether the value at this place is a resource or a component.
    pub fn kind(self) -> Kind {
        match self {
            Place::Resource(_) => Kind::Resource,
            _ => Kind::Component,
        }
    }
}

/// The top-level sections of a scene document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Section {
    Schemas,
    Resources,
    Prefabs,
    Entities,
}

/// A part of the document's structure (not a value), read and reported
/// only to a walk that [reads parts](Walk::reads_parts).
#[derive(Debug)]
pub(crate) enum Part<'a> {
    /// Prefab `i`'s name.
    PrefabName(usize, &'a str),
    /// Prefab `i`'s `extends`.
    Extends(usize, Option<String>),
    /// Entity `i`'s id.
    EntityId(usize, u64),
    /// Entity `i`'s `prefab`.
    EntityPrefab(usize, Option<String>),
}

/// Stops a walk: the walk keeps why (or the format's own error does).
#[derive(Debug)]
pub(crate) struct Stop;

/// What a pass over a document does with what it meets.
pub(crate) trait Walk {
    /// Whether to visit `section` (one not visited is skipped unread).
    fn wants(&self, section: Section) -> bool;

    /// Called where `place` (a body or an id) starts, before it is read.
    fn before(&mut self, _place: Place) -> Result<(), Stop> {
        Ok(())
    }

    /// Reads the value at `place` (of component or resource `name`) from
    /// `de`, which holds exactly that value.
    fn value<'de>(
        &mut self,
        place: Place,
        name: &str,
        de: &mut dyn erased_serde::Deserializer<'de>,
    ) -> Result<(), Stop>;

    /// Called when entity `i` starts (`end` false) and ends.
    fn entity(&mut self, _i: usize, _end: bool) -> Result<(), Stop> {
        Ok(())
    }

    /// Whether the walk reads the document's structure (names, ids,
    /// prefabs), handed to [`Walk::part`]; other walks skip it unread.
    fn reads_parts(&self) -> bool {
        false
    }

    /// Reports a part of the structure (see [`Walk::reads_parts`]).
    fn part(&mut self, _part: Part<'_>) -> Result<(), Stop> {
        Ok(())
    }
}

/// Fails on a field met twice, as a derived `Deserialize` does: `seen`
/// holds one bit per field of `fields`.
fn once<E: de::Error>(
    seen: &mut u8,
    field: usize,
    fields: &'static [&'static str],
) -> Result<(), E> {
    let bit = 1 << field;
    if *seen & bit != 0 {
        return Err(E::duplicate_field(fields[field]));
    }
    *seen |= bit;
    Ok(())
}

/// Where a walk stopped with an error: the format's message and the byte
/// offset of the offending token.
#[derive(Debug)]
pub(crate) struct FormatError {
    pub message: String,
    pub offset: usize,
    /// Where the format stopped reading: the end of the last token it
    /// read (which can be the key before the value the walk stopped at).
    pub end: usize,
}

/// Walks the document of `source` with `walk`.
pub(crate) fn run<W: Walk>(source: &Source, walk: &mut W) -> Result<(), FormatError> {
    let text = source.text.as_str();
    match source.format {
        Format::Ron => {
            let mut de =
                ron::Deserializer::from_str_with_options(text, &super::text::ron_options())
                    .map_err(|e| ron_error(text, e))?;
            let result = DocSeed { walk }
                .deserialize(&mut de)
                .and_then(|()| de.end());
            result.map_err(|e| ron_error(text, de.span_error(e)))
        }
        _ => {
            let mut de = serde_json::Deserializer::from_str(text);
            let result = DocSeed { walk }
                .deserialize(&mut de)
                .and_then(|()| de.end());
            result.map_err(|e| {
                // serde_json's position is its last character read.
                let offset = json_offset(text, e.line(), e.column());
                let end = text[offset..]
                    .chars()
                    .next()
                    .map_or(offset, |c| offset + c.len_utf8());
                FormatError {
                    message: super::value::strip_json_position(&e),
                    offset,
                    end,
                }
            })
        }
    }
}

fn ron_error(text: &str, e: ron::error::SpannedError) -> FormatError {
    let (start, end) = (e.span.start, e.span.end);
    FormatError {
        message: e.code.to_string(),
        offset: skip_blank(text, offset_of(text, start.line, start.col)),
        end: offset_of(text, end.line, end.col),
    }
}

/// Finds where `place` starts in `source`: the byte offset of its first
/// token (`None` if the document has no such place).
pub(crate) fn locate(source: &Source, place: Place) -> Option<usize> {
    if place == Place::Whole {
        return Some(skip_blank(&source.text, 0));
    }
    let mut walk = Locate {
        target: place,
        found: false,
    };
    match run(source, &mut walk) {
        // The walk stopped after a key (or its colon): the place starts
        // at the next token after the colon.
        Err(e) if walk.found => {
            let text = &source.text;
            let mut offset = skip_blank(text, e.end);
            if text.as_bytes().get(offset) == Some(&b':') {
                offset = skip_blank(text, offset + 1);
            }
            Some(offset)
        }
        _ => None,
    }
}

/// The walk of [`locate`]: stops where its target place starts, skipping
/// every value before it unread.
struct Locate {
    target: Place,
    found: bool,
}

impl Locate {
    fn at(&mut self, place: Place) -> Result<(), Stop> {
        if place == self.target {
            self.found = true;
            return Err(Stop);
        }
        Ok(())
    }
}

impl Walk for Locate {
    fn wants(&self, section: Section) -> bool {
        section
            == match self.target {
                Place::Resource(_) => Section::Resources,
                Place::PrefabValue(..) | Place::PrefabBody(_) | Place::Extends(_) => {
                    Section::Prefabs
                }
                Place::EntityValue(..) | Place::EntityId(_) | Place::EntityPrefab(_) => {
                    Section::Entities
                }
                Place::SchemaBody(_) => Section::Schemas,
                Place::Whole => return false,
            }
    }
    fn before(&mut self, place: Place) -> Result<(), Stop> {
        self.at(place)
    }
    fn value<'de>(
        &mut self,
        place: Place,
        _: &str,
        de: &mut dyn erased_serde::Deserializer<'de>,
    ) -> Result<(), Stop> {
        self.at(place)?;
        IgnoredAny::deserialize(de).map(drop).map_err(|_| Stop)
    }
}

/// The message a [`Stop`] raises in the format (the walk keeps the real
/// error).
const STOPPED: &str = "stopped";

fn stop<E: de::Error>(_: Stop) -> E {
    E::custom(STOPPED)
}

/// A map key, borrowed from the file when it can be.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

const DOC_FIELDS: &[&str] = &["schemas", "resources", "prefabs", "entities"];
const PREFAB_FIELDS: &[&str] = &["extends", "components"];
const ENTITY_FIELDS: &[&str] = &["id", "prefab", "components"];

#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum DocField {
    Schemas,
    Resources,
    Prefabs,
    Entities,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum PrefabField {
    Extends,
    Components,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum EntityField {
    Id,
    Prefab,
    Components,
}

struct DocSeed<'w, W> {
    walk: &'w mut W,
}

impl<'de, W: Walk> DeserializeSeed<'de> for DocSeed<'_, W> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_struct(SCENE_STRUCT, DOC_FIELDS, self)
    }
}

impl<'de, W: Walk> Visitor<'de> for DocSeed<'_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scene")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = 0;
        while let Some(field) = map.next_key::<DocField>()? {
            once(&mut seen, field as usize, DOC_FIELDS)?;
            let section = match field {
                DocField::Schemas => Section::Schemas,
                DocField::Resources => Section::Resources,
                DocField::Prefabs => Section::Prefabs,
                DocField::Entities => Section::Entities,
            };
            if !self.walk.wants(section) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let walk = &mut *self.walk;
            match section {
                Section::Schemas => map.next_value_seed(Bodies { walk })?,
                Section::Resources => map.next_value_seed(Values {
                    walk,
                    place: |j| Place::Resource(j),
                })?,
                Section::Prefabs => map.next_value_seed(Prefabs { walk })?,
                Section::Entities => map.next_value_seed(Entities { walk })?,
            }
        }
        Ok(())
    }
}

/// The schemas: each body's place announced, then skipped.
struct Bodies<'w, W> {
    walk: &'w mut W,
}

impl<'de, W: Walk> DeserializeSeed<'de> for Bodies<'_, W> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, W: Walk> Visitor<'de> for Bodies<'_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of schemas")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut i = 0;
        while map.next_key::<IgnoredAny>()?.is_some() {
            self.walk.before(Place::SchemaBody(i)).map_err(stop)?;
            map.next_value::<IgnoredAny>()?;
            i += 1;
        }
        Ok(())
    }
}

/// A map of named values (resources, or one prefab's or entity's
/// components), each handed to the walk.
struct Values<'w, W, P> {
    walk: &'w mut W,
    place: P,
}

impl<'de, W: Walk, P: Fn(usize) -> Place> DeserializeSeed<'de> for Values<'_, W, P> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, W: Walk, P: Fn(usize) -> Place> Visitor<'de> for Values<'_, W, P> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of component names to values")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut j = 0;
        while let Some(Key(name)) = map.next_key::<Key<'de>>()? {
            map.next_value_seed(ValueSeed {
                walk: &mut *self.walk,
                place: (self.place)(j),
                name: &name,
            })?;
            j += 1;
        }
        Ok(())
    }
}

/// One value, handed to the walk type-erased.
struct ValueSeed<'w, 'n, W> {
    walk: &'w mut W,
    place: Place,
    name: &'n str,
}

impl<'de, W: Walk> DeserializeSeed<'de> for ValueSeed<'_, '_, W> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let mut erased = <dyn erased_serde::Deserializer<'de>>::erase(d);
        self.walk
            .value(self.place, self.name, &mut erased)
            .map_err(stop)
    }
}

struct Prefabs<'w, W> {
    walk: &'w mut W,
}

impl<'de, W: Walk> DeserializeSeed<'de> for Prefabs<'_, W> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, W: Walk> Visitor<'de> for Prefabs<'_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of prefabs")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut i = 0;
        while let Some(name) = next_name(&mut map, self.walk.reads_parts())? {
            self.walk.before(Place::PrefabBody(i)).map_err(stop)?;
            if let Some(Key(name)) = name {
                self.walk.part(Part::PrefabName(i, &name)).map_err(stop)?;
            }
            map.next_value_seed(PrefabSeed {
                walk: &mut *self.walk,
                i,
            })?;
            i += 1;
        }
        Ok(())
    }
}

struct PrefabSeed<'w, W> {
    walk: &'w mut W,
    i: usize,
}

impl<'de, W: Walk> DeserializeSeed<'de> for PrefabSeed<'_, W> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_struct(PREFAB_STRUCT, PREFAB_FIELDS, self)
    }
}

impl<'de, W: Walk> Visitor<'de> for PrefabSeed<'_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a prefab")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let i = self.i;
        let mut seen = 0;
        while let Some(field) = map.next_key::<PrefabField>()? {
            once(&mut seen, field as usize, PREFAB_FIELDS)?;
            if let PrefabField::Extends = field {
                self.walk.before(Place::Extends(i)).map_err(stop)?;
            }
            match field {
                PrefabField::Extends if self.walk.reads_parts() => {
                    let extends = map.next_value::<Option<String>>()?;
                    self.walk.part(Part::Extends(i, extends)).map_err(stop)?;
                }
                PrefabField::Extends => drop(map.next_value::<IgnoredAny>()?),
                PrefabField::Components => map.next_value_seed(Values {
                    walk: &mut *self.walk,
                    place: move |j| Place::PrefabValue(i, j),
                })?,
            }
        }
        Ok(())
    }
}

struct Entities<'w, W> {
    walk: &'w mut W,
}

impl<'de, W: Walk> DeserializeSeed<'de> for Entities<'_, W> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, W: Walk> Visitor<'de> for Entities<'_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of entities")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(EntitySeed {
                walk: &mut *self.walk,
                i,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
}

struct EntitySeed<'w, W> {
    walk: &'w mut W,
    i: usize,
}

impl<'de, W: Walk> DeserializeSeed<'de> for EntitySeed<'_, W> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_struct(ENTITY_STRUCT, ENTITY_FIELDS, self)
    }
}

impl<'de, W: Walk> Visitor<'de> for EntitySeed<'_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an entity")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let i = self.i;
        let parts = self.walk.reads_parts();
        self.walk.entity(i, false).map_err(stop)?;
        let mut seen = 0;
        while let Some(field) = map.next_key::<EntityField>()? {
            once(&mut seen, field as usize, ENTITY_FIELDS)?;
            match field {
                EntityField::Id => {
                    self.walk.before(Place::EntityId(i)).map_err(stop)?;
                    if parts {
                        let Id(id) = map.next_value()?;
                        self.walk.part(Part::EntityId(i, id)).map_err(stop)?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                EntityField::Prefab if parts => {
                    self.walk.before(Place::EntityPrefab(i)).map_err(stop)?;
                    let prefab = map.next_value::<Option<String>>()?;
                    self.walk
                        .part(Part::EntityPrefab(i, prefab))
                        .map_err(stop)?;
                }
                EntityField::Prefab => {
                    self.walk.before(Place::EntityPrefab(i)).map_err(stop)?;
                    map.next_value::<IgnoredAny>()?;
                }
                EntityField::Components => map.next_value_seed(Values {
                    walk: &mut *self.walk,
                    place: move |j| Place::EntityValue(i, j),
                })?,
            }
        }
        if seen & 1 == 0 {
            return Err(de::Error::missing_field("id"));
        }
        self.walk.entity(i, true).map_err(stop)
    }
}

/// The next key of a map of named bodies: read (`Some(Some(name))`) if
/// the walk reads parts, else skipped (`Some(None)`).
fn next_name<'de, A: MapAccess<'de>>(
    map: &mut A,
    read: bool,
) -> Result<Option<Option<Key<'de>>>, A::Error> {
    if read {
        Ok(map.next_key::<Key<'de>>()?.map(Some))
    } else {
        Ok(map.next_key::<IgnoredAny>()?.map(|_| None))
    }
}
