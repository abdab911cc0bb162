//! The decode step of a text scene: its file walked once (see `doc`),
//! each value decoded with the type the registry names as the walk meets
//! it: an entity's components straight into their group's typed columns,
//! prefab and resource values into pending values.
//!
//! A value that fails stops the walk; it is then decoded again on its own
//! (the error path only), with its field path tracked, so the error says
//! which component, which field, and where in the file.

use std::ops::Range;

use serde::de::DeserializeSeed;

use super::{
    Batch, Decoded, Decoder, PendingDynamic, Prefabs, check_refs, check_unique, map_pending, merge,
};
use crate::doc::{self, FormatError, Place, Section, Stop, Walk};
use crate::error::{SceneError, Where};
use crate::registry::{Kind, Pending};
use crate::value::{DynamicSeed, Source, entity_refs_decoded};
use crate::{Scene, SceneComponent};

/// A value decoded in a walk, and the entity references decoding read.
pub(super) type Early = (Box<dyn Pending>, u64);

/// The values of a text scene's prefabs and resources, decoded in one walk.
#[derive(Default)]
pub(super) struct EarlyValues {
    pub prefabs: Vec<Vec<Option<Early>>>,
    pub resources: Vec<Option<Early>>,
}

impl EarlyValues {
    /// Prefab `i`'s component `j` as decoded, with its scene entry.
    pub fn prefab<'c>(&mut self, i: usize, j: usize, c: &'c SceneComponent) -> Option<Decoded<'c>> {
        let (p, refs) = self.prefabs.get_mut(i)?.get_mut(j)?.take()?;
        Some((c, p, refs))
    }

    /// Resource `j` as decoded, with its scene entry.
    pub fn resource<'c>(&mut self, j: usize, c: &'c SceneComponent) -> Option<Decoded<'c>> {
        let (p, refs) = self.resources.get_mut(j)?.take()?;
        Some((c, p, refs))
    }
}

impl Decoder<'_> {
    /// Decodes the value of component or resource `name` from a walk's
    /// deserializer (`None` if it fails, or the name is unknown: the
    /// value is then decoded on its own for the error).
    fn decode_erased(
        &self,
        name: &str,
        kind: Kind,
        de: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Option<Box<dyn Pending>> {
        if let Some(entry) = self.registry.get(name, kind) {
            return (entry.decode_erased)(de).ok();
        }
        let schema = self.schemas.get(name).filter(|_| kind == Kind::Component)?;
        let value = DynamicSeed(schema).deserialize(de).ok()?;
        Some(Box::new(PendingDynamic(value)))
    }
}

impl Scene {
    /// The file to walk for the values: a text scene's, while any value
    /// is still in it (not resolved).
    pub(crate) fn walked(&self) -> Option<&Source> {
        let source = self.text.as_deref()?;
        let in_file = self
            .values()
            .any(|c| matches!(c.value, crate::value::SceneValue::Text { .. }));
        in_file.then_some(source)
    }

    /// The component or resource at `place`, and which it is.
    pub(crate) fn component_at(&self, place: Place) -> Option<(&SceneComponent, Kind)> {
        match place {
            Place::Resource(j) => Some((self.resources.get(j)?, Kind::Resource)),
            Place::PrefabValue(i, j) => {
                Some((self.prefabs.get(i)?.components.get(j)?, Kind::Component))
            }
            Place::EntityValue(i, j) => {
                Some((self.entities.get(i)?.components.get(j)?, Kind::Component))
            }
            _ => None,
        }
    }

    /// The error of a walk that stopped: the failed value decoded on its
    /// own (with its field path and location), else the format's error.
    fn replay(
        &self,
        failed: Option<Place>,
        decoder: &Decoder<'_>,
        source: &Source,
        e: FormatError,
    ) -> SceneError {
        let replayed = failed
            .and_then(|place| self.component_at(place))
            .and_then(|(c, kind)| decoder.decode(c, kind).err());
        replayed.unwrap_or_else(|| SceneError::Syntax {
            format: source.format.name(),
            message: e.message,
            at: Where::Text(source.location(e.offset)),
        })
    }

    /// Decoded: the values of the prefabs and resources of a text scene,
    /// in one walk over its file (nothing for other scenes).
    pub(super) fn early_values(&self, decoder: &Decoder<'_>) -> Result<EarlyValues, SceneError> {
        let Some(source) = self.walked() else {
            return Ok(EarlyValues::default());
        };
        if self.prefabs.is_empty() && self.resources.is_empty() {
            return Ok(EarlyValues::default());
        }
        let mut walk = EarlyWalk {
            decoder,
            values: EarlyValues {
                prefabs: self
                    .prefabs
                    .iter()
                    .map(|p| p.components.iter().map(|_| None).collect())
                    .collect(),
                resources: self.resources.iter().map(|_| None).collect(),
            },
            failed: None,
        };
        match doc::run(source, &mut walk) {
            Ok(()) => Ok(walk.values),
            Err(e) => Err(self.replay(walk.failed, decoder, source, e)),
        }
    }

    /// Decoded: the entities of a text scene (which come first, so entity
    /// `i` is at position `i`), checked, then walked once: their own
    /// values into their groups' columns, their prefabs' with them.
    pub(super) fn decode_text_entities<'s>(
        &'s self,
        source: &Source,
        batch: &mut Batch<'_, 's>,
        prefabs: &'s Prefabs<'s>,
        decoder: &Decoder<'_>,
    ) -> Result<(), SceneError> {
        let plan = self.plan_entities(batch, prefabs, decoder)?;
        let mut walk = EntityWalk {
            scene: self,
            batch,
            plan: &plan,
            decoder,
            failed: None,
            error: None,
        };
        match doc::run(source, &mut walk) {
            Ok(()) => Ok(()),
            Err(e) => Err(match walk.error.take() {
                Some(error) => error,
                None => self.replay(walk.failed, decoder, source, e),
            }),
        }
    }

    /// Checked: each entity's components unique, known, its prefab known;
    /// each entity's group and where each of its values goes.
    fn plan_entities<'s>(
        &'s self,
        batch: &mut Batch<'_, 's>,
        prefabs: &'s Prefabs<'s>,
        decoder: &Decoder<'_>,
    ) -> Result<EntityPlan<'s>, SceneError> {
        let mut plan = EntityPlan::default();
        for (i, e) in self.entities.iter().enumerate() {
            check_unique(&e.components, "component")?;
            let base = prefabs.base(&e.prefab, || e.at.at_part(Place::EntityPrefab(i)))?;
            let inherited_start = plan.inherited.len();
            let group = if base.is_empty() {
                batch.group_of(e.components.iter(), decoder.registry)
            } else {
                let list = merge(base, &e.components);
                let group = batch.group_of(list.iter().copied(), decoder.registry);
                let own = e.components.as_ptr_range();
                plan.inherited.extend(
                    list.into_iter()
                        .filter(|&c| !own.contains(&std::ptr::from_ref(c))),
                );
                group
            };
            let own_start = plan.actions.len();
            decoder.check_known(&e.components)?;
            for c in &e.components {
                plan.actions.push(match batch.column_of(group, &c.name) {
                    Some(k) => Action::Column(k),
                    None => Action::Other,
                });
            }
            plan.entities.push(PlannedEntity {
                group,
                own: own_start..plan.actions.len(),
                inherited: inherited_start..plan.inherited.len(),
            });
        }
        Ok(plan)
    }
}

/// Where each entity's values go: its group, and per own value a column
/// of the group (or `Other`: one by one); its prefab's values besides.
#[derive(Default)]
struct EntityPlan<'s> {
    entities: Vec<PlannedEntity>,
    actions: Vec<Action>,
    inherited: Vec<&'s SceneComponent>,
}

struct PlannedEntity {
    group: usize,
    own: Range<usize>,
    inherited: Range<usize>,
}

#[derive(Clone, Copy)]
enum Action {
    /// Into column `k` of the entity's group.
    Column(usize),
    /// A runtime-defined component or a relation's edges: decoded on its
    /// own, put in after every entity exists.
    Other,
}

/// The walk that decodes prefab and resource values.
struct EarlyWalk<'a> {
    decoder: &'a Decoder<'a>,
    values: EarlyValues,
    failed: Option<Place>,
}

impl Walk for EarlyWalk<'_> {
    fn wants(&self, section: Section) -> bool {
        matches!(section, Section::Prefabs | Section::Resources)
    }

    fn value<'de>(
        &mut self,
        place: Place,
        name: &str,
        de: &mut dyn erased_serde::Deserializer<'de>,
    ) -> Result<(), Stop> {
        let kind = place.kind();
        let before = entity_refs_decoded();
        let slot = match place {
            Place::Resource(j) => self.values.resources.get_mut(j),
            Place::PrefabValue(i, j) => self.values.prefabs.get_mut(i).and_then(|p| p.get_mut(j)),
            _ => None,
        };
        let (Some(slot), Some(p)) = (slot, self.decoder.decode_erased(name, kind, de)) else {
            self.failed = Some(place);
            return Err(Stop);
        };
        *slot = Some((p, entity_refs_decoded() - before));
        Ok(())
    }
}

/// The walk that decodes entities' values into their columns.
struct EntityWalk<'a, 'b, 'k, 's> {
    scene: &'s Scene,
    batch: &'a mut Batch<'k, 's>,
    plan: &'b EntityPlan<'s>,
    decoder: &'a Decoder<'a>,
    failed: Option<Place>,
    /// An error found in the walk (a reference, an inherited value).
    error: Option<SceneError>,
}

impl EntityWalk<'_, '_, '_, '_> {
    fn fail(&mut self, error: SceneError) -> Stop {
        self.error = Some(error);
        Stop
    }

    /// Decodes value `j` of entity `i` into column `k` of its group.
    fn column_value(
        &mut self,
        (i, j, k): (usize, usize, usize),
        de: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<(), Stop> {
        let group = self.plan.entities[i].group;
        let column = self.batch.groups[group].columns[k].as_mut();
        let before = entity_refs_decoded();
        if column.push_erased(de).is_err() {
            self.failed = Some(Place::EntityValue(i, j));
            return Err(Stop);
        }
        let refs = entity_refs_decoded() - before;
        let c = &self.scene.entities[i].components[j];
        let at = || c.value.at();
        check_refs(refs, self.batch.keys, &c.name, &at, |m| column.map_last(m))
            .map_err(|e| self.fail(e))
    }

    /// Decodes value `j` of entity `i` on its own (runtime-defined, or a
    /// relation's edges).
    fn other_value(
        &mut self,
        (i, j): (usize, usize),
        de: &mut dyn erased_serde::Deserializer<'_>,
    ) -> Result<(), Stop> {
        let c = &self.scene.entities[i].components[j];
        let before = entity_refs_decoded();
        let Some(p) = self.decoder.decode_erased(&c.name, Kind::Component, de) else {
            self.failed = Some(Place::EntityValue(i, j));
            return Err(Stop);
        };
        let mut pending = vec![(c, p, entity_refs_decoded() - before)];
        map_pending(&mut pending, self.batch.keys.get()).map_err(|e| self.fail(e))?;
        if let Some((_, p, _)) = pending.pop() {
            self.batch.dynamics.push((i, p));
        }
        Ok(())
    }
}

impl Walk for EntityWalk<'_, '_, '_, '_> {
    fn wants(&self, section: Section) -> bool {
        section == Section::Entities
    }

    fn entity(&mut self, i: usize, end: bool) -> Result<(), Stop> {
        let Some(planned) = self.plan.entities.get(i) else {
            return Err(Stop);
        };
        let group = planned.group;
        if end {
            self.batch.groups[group].rows.push(i);
            return Ok(());
        }
        for &c in &self.plan.inherited[planned.inherited.clone()] {
            let at = || c.value.at();
            self.batch
                .push_value(group, c, i, &at, self.decoder)
                .map_err(|e| self.fail(e))?;
        }
        Ok(())
    }

    fn value<'de>(
        &mut self,
        place: Place,
        _: &str,
        de: &mut dyn erased_serde::Deserializer<'de>,
    ) -> Result<(), Stop> {
        let Place::EntityValue(i, j) = place else {
            return Err(Stop);
        };
        let action = self
            .plan
            .entities
            .get(i)
            .and_then(|p| self.plan.actions[p.own.clone()].get(j).copied());
        match action {
            Some(Action::Column(k)) => self.column_value((i, j, k), de),
            Some(Action::Other) => self.other_value((i, j), de),
            None => Err(Stop),
        }
    }
}
