//! Reading a text scene with its registry at hand
//! ([`Scene::from_ron_str_with`], [`Scene::from_json_str_with`]): one walk
//! over the file (see `doc`) reads the document and decodes every value
//! with the type the registry names, as the walk meets it. Each value is
//! kept as its postcard bytes, so loading parses no text again: the file is
//! read once on its way to the world.
//!
//! The walk reads what it can read alone. A file it stops on is read the
//! ordinary way (`Scene::from_ron_str`/`from_json_str`), which then reports
//! any error exactly as those do, at the same place: a malformed document,
//! a value that does not decode, a name the registry does not know (it may
//! be a runtime-defined component of the world loaded into), runtime
//! schemas, and a value postcard cannot hold (a type that reads itself with
//! `deserialize_any`). So the two ways accept the same files, and fail on
//! the same ones with the same errors; only their speed differs.

use std::sync::Arc;

use super::doc::{self, Part, Place, Section, Stop, Walk};
use super::error::SceneError;
use super::text::{json_source, ron_source};
use super::value::{Format, SceneValue, Source, Spot};
use super::{ColumnBytes, Prefab, Scene, SceneComponent, SceneEntity, TypeRegistry};

/// Reads `text` (RON or JSON) with `registry`: in one walk if it can, else
/// the ordinary way.
pub(crate) fn read_with(
    text: &str,
    format: Format,
    registry: &TypeRegistry,
) -> Result<Scene, SceneError> {
    let source = match format {
        Format::Ron => ron_source(text),
        _ => json_source(text)?,
    };
    let mut walk = ReadWalk {
        registry,
        source: &source,
        scene: Scene::default(),
        bytes: Vec::new(),
        unfilled: Arc::default(),
        width: 0,
    };
    if doc::run(&source, &mut walk).is_ok() {
        let mut scene = walk.scene;
        fill(&mut scene, walk.bytes);
        scene.text = Some(source);
        return Ok(scene);
    }
    match format {
        Format::Ron => super::text::parse_ron(text),
        _ => super::text::parse_json(text),
    }
}

/// Gives every value read the buffer of all their bytes, `bytes`: while
/// the walk went on, each held its range of it and an empty stand-in.
fn fill(scene: &mut Scene, bytes: Vec<u8>) {
    let buffer = Arc::new(bytes);
    let lists = std::iter::once(&mut scene.resources)
        .chain(scene.prefabs.iter_mut().map(|p| &mut p.components))
        .chain(scene.entities.iter_mut().map(|e| &mut e.components));
    for c in lists.flatten() {
        if let SceneValue::Read { bytes, .. } = &mut c.value {
            bytes.buffer = Arc::clone(&buffer);
        }
    }
}

/// Builds the scene as the document is walked; stops on anything it does
/// not read alone (see the module docs).
struct ReadWalk<'a> {
    registry: &'a TypeRegistry,
    source: &'a Arc<Source>,
    scene: Scene,
    /// The postcard bytes of every value read, back to back (one buffer
    /// rather than one allocation a value).
    bytes: Vec<u8>,
    /// The stand-in buffer of each value until the walk ends (see `fill`).
    unfilled: Arc<Vec<u8>>,
    /// How many components the last entity had: the next one's list is
    /// made that long at once (entities of a file tend to come alike).
    width: usize,
}

impl ReadWalk<'_> {
    fn spot(&self, place: Place) -> Spot {
        Spot::Text {
            source: Arc::clone(self.source),
            place,
        }
    }

    /// The list value `place` goes into, if `place` is its next one (the
    /// walk refuses a section or field met twice, so it always is: a guard
    /// against a value landing in the wrong place).
    fn list_of(&mut self, place: Place) -> Option<&mut Vec<SceneComponent>> {
        let (list, j) = match place {
            Place::Resource(j) => (&mut self.scene.resources, j),
            Place::PrefabValue(i, j) => {
                let prefab = self.scene.prefabs.get_mut(i)?;
                (&mut prefab.components, j)
            }
            Place::EntityValue(i, j) => {
                let entity = self.scene.entities.get_mut(i)?;
                (&mut entity.components, j)
            }
            _ => return None,
        };
        (list.len() == j).then_some(list)
    }
}

impl Walk for ReadWalk<'_> {
    fn wants(&self, _section: Section) -> bool {
        // Schemas too: one is met only to stop on it (see `before`).
        true
    }

    fn before(&mut self, place: Place) -> Result<(), Stop> {
        match place {
            // Runtime-defined components: read the ordinary way.
            Place::SchemaBody(_) => Err(Stop),
            Place::PrefabBody(i) if i == self.scene.prefabs.len() => {
                let at = self.spot(place);
                self.scene.prefabs.push(Prefab {
                    name: String::new(),
                    extends: None,
                    components: Vec::new(),
                    at,
                });
                Ok(())
            }
            Place::PrefabBody(_) => Err(Stop),
            _ => Ok(()),
        }
    }

    fn value<'de>(
        &mut self,
        place: Place,
        name: &str,
        de: &mut dyn erased_serde::Deserializer<'de>,
    ) -> Result<(), Stop> {
        let kind = place.kind();
        let entry = self.registry.get(name, kind).ok_or(Stop)?;
        let start = self.bytes.len();
        if !(entry.read)(de, &mut self.bytes) {
            return Err(Stop);
        }
        let value = SceneValue::Read {
            bytes: ColumnBytes {
                buffer: Arc::clone(&self.unfilled),
                range: start..self.bytes.len(),
            },
            source: Arc::clone(self.source),
            place,
        };
        let list = self.list_of(place).ok_or(Stop)?;
        list.push(SceneComponent {
            name: name.to_owned(),
            value,
        });
        Ok(())
    }

    fn entity(&mut self, i: usize, end: bool) -> Result<(), Stop> {
        // (An entity without an id fails the walk: see `doc`.)
        if end {
            if let Some(e) = self.scene.entities.last() {
                self.width = e.components.len();
            }
            return Ok(());
        }
        if i != self.scene.entities.len() {
            return Err(Stop);
        }
        let at = self.spot(Place::EntityId(i));
        self.scene.entities.push(SceneEntity {
            id: 0,
            prefab: None,
            components: Vec::with_capacity(self.width),
            at,
        });
        Ok(())
    }

    fn reads_parts(&self) -> bool {
        true
    }

    fn part(&mut self, part: Part<'_>) -> Result<(), Stop> {
        match part {
            Part::PrefabName(i, name) => {
                self.scene.prefabs.get_mut(i).ok_or(Stop)?.name = name.to_owned();
            }
            Part::Extends(i, extends) => {
                self.scene.prefabs.get_mut(i).ok_or(Stop)?.extends = extends;
            }
            Part::EntityId(i, id) => {
                self.scene.entities.get_mut(i).ok_or(Stop)?.id = id;
            }
            Part::EntityPrefab(i, prefab) => {
                self.scene.entities.get_mut(i).ok_or(Stop)?.prefab = prefab;
            }
        }
        Ok(())
    }
}
