//! World operations on runtime-defined components (see [`crate::dynamic`]).

use super::World;
use crate::component::{ComponentId, StorageType};
use crate::dynamic::{ComponentSchema, DynamicComponent, SchemaError};
use crate::entity::Entity;
use crate::error::{ComponentError, EntityError};
use crate::storage::DeferredPanic;

/// A name in [`World::query_dynamic`] matched no component, or several.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let world = World::new();
/// let err = world.query_dynamic(&["Mana"]).unwrap_err();
/// assert_eq!(err.to_string(), "no component is called `Mana` in this world");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DynamicQueryError {
    /// No component (Rust or runtime-defined) has this name in the world.
    #[error("no component is called `{0}` in this world")]
    Unknown(String),
    /// Several Rust types share this short name; the name is ambiguous.
    #[error("several component types are called `{0}`")]
    Ambiguous(String),
}

impl World {
    /// Declares a runtime-defined component. Declaring the same schema again
    /// returns the same id; a different schema under a taken name (or the
    /// name of a Rust component type in this world) is an error.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{ComponentSchema, FieldType};
    /// let mut world = World::new();
    /// let mana = ComponentSchema::new("Mana").field("max", FieldType::Int);
    /// let id = world.register_dynamic_component(mana.clone()).unwrap();
    /// assert_eq!(world.register_dynamic_component(mana), Ok(id));
    /// let other = ComponentSchema::new("Mana").field("max", FieldType::Float);
    /// assert!(world.register_dynamic_component(other).is_err());
    /// ```
    pub fn register_dynamic_component(
        &mut self,
        schema: ComponentSchema,
    ) -> Result<ComponentId, SchemaError> {
        if self.components.dynamic_id(schema.name()).is_none() {
            if let Some(rust_type) = self.components.rust_type_named(schema.name()) {
                return Err(SchemaError::TakenByRustType {
                    name: schema.name().to_owned(),
                    rust_type: rust_type.to_owned(),
                });
            }
        }
        self.components.register_dynamic(schema)
    }

    /// The schema of the runtime-defined component called `name`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.register_dynamic_component(mosaic::ComponentSchema::new("Cursed")).unwrap();
    /// assert!(world.dynamic_schema("Cursed").is_some());
    /// assert!(world.dynamic_schema("Blessed").is_none());
    /// ```
    pub fn dynamic_schema(&self, name: &str) -> Option<&ComponentSchema> {
        let id = self.components.dynamic_id(name)?;
        self.components.info(id).schema()
    }

    /// Every runtime-defined component's schema, in declaration order.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.register_dynamic_component(mosaic::ComponentSchema::new("Cursed")).unwrap();
    /// assert_eq!(world.dynamic_schemas().count(), 1);
    /// ```
    pub fn dynamic_schemas(&self) -> impl Iterator<Item = &ComponentSchema> + '_ {
        (0..self.components.len())
            .filter_map(|i| self.components.info(ComponentId::new(i)).schema())
    }

    /// Adds (or replaces) a runtime-defined component value on `entity`. The
    /// component must have been declared
    /// ([`World::register_dynamic_component`], or by a scene).
    ///
    /// Fails, changing nothing, if the handle is stale or the component is
    /// not declared.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{ComponentSchema, FieldType, FieldValue};
    /// let mut world = World::new();
    /// let mana = ComponentSchema::new("Mana").field("max", FieldType::Int);
    /// world.register_dynamic_component(mana.clone()).unwrap();
    /// let e = world.spawn(());
    /// world.insert_dynamic(e, mana.instantiate([("max", FieldValue::Int(50))]).unwrap()).unwrap();
    /// assert_eq!(world.get_dynamic(e, "Mana").unwrap().get("max"), Some(&FieldValue::Int(50)));
    /// ```
    pub fn insert_dynamic(
        &mut self,
        entity: Entity,
        value: DynamicComponent,
    ) -> Result<(), DynamicInsertError> {
        self.flush();
        if !self.contains(entity) {
            return Err(EntityError::NoSuchEntity(entity).into());
        }
        let id = self.components.dynamic_id(value.name()).ok_or_else(|| {
            SchemaError::UnknownComponent {
                name: value.name().to_owned(),
            }
        })?;
        let schema = self.components.info(id).schema().expect("dynamic");
        if value
            .fields()
            .iter()
            .map(|(n, v)| (n.as_str(), v.field_type()))
            .ne(schema.fields().iter().map(|(n, t)| (n.as_str(), *t)))
        {
            return Err(SchemaError::Conflict {
                name: value.name().to_owned(),
            }
            .into());
        }
        let tick = self.change_tick();
        let mut panics = DeferredPanic::new();
        let set = self.sparse.get_or_create(id, &self.components);
        let replaced = set.insert_checked(entity, value, tick, &mut panics);
        if self.components.lifecycle_active() && self.components.announces(id) {
            self.announce_insert(entity, false, &[(id, !replaced)]);
            self.flush_observer_commands();
        }
        panics.resume();
        Ok(())
    }

    /// Removes the runtime-defined component `name` from `entity` and returns
    /// it. Fails, changing nothing, if the entity lacks it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::ComponentSchema;
    /// let mut world = World::new();
    /// let cursed = ComponentSchema::new("Cursed");
    /// world.register_dynamic_component(cursed.clone()).unwrap();
    /// let e = world.spawn(());
    /// world.insert_dynamic(e, cursed.instantiate([]).unwrap()).unwrap();
    /// assert_eq!(world.remove_dynamic(e, "Cursed").unwrap().name(), "Cursed");
    /// assert!(world.remove_dynamic(e, "Cursed").is_err());
    /// ```
    pub fn remove_dynamic(
        &mut self,
        entity: Entity,
        name: &str,
    ) -> Result<DynamicComponent, ComponentError> {
        self.flush();
        let id = self.dynamic_component_of(entity, name)?;
        if self.components.lifecycle_active() && self.components.announces(id) {
            self.announce_remove(entity, false, &[id]);
        }
        let value = self
            .sparse
            .get_mut(id)
            .and_then(|s| s.remove_checked::<DynamicComponent>(entity))
            .ok_or_else(|| missing_named(entity, name))?;
        self.flush_observer_commands();
        Ok(value)
    }

    /// `entity`'s value of the runtime-defined component `name`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert_eq!(
    ///     world.get_dynamic(e, "Mana").unwrap_err().to_string(),
    ///     "entity 0v1 has no component `Mana`"
    /// );
    /// ```
    pub fn get_dynamic(
        &self,
        entity: Entity,
        name: &str,
    ) -> Result<&DynamicComponent, ComponentError> {
        let id = self.dynamic_component_of(entity, name)?;
        self.sparse
            .get(id)
            .and_then(|s| s.get::<DynamicComponent>(entity))
            .ok_or_else(|| missing_named(entity, name))
    }

    /// A mutable reference to `entity`'s value of the runtime-defined
    /// component `name` (counts as a change). Its fields keep their types:
    /// write them with [`DynamicComponent::set`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{ComponentSchema, FieldType};
    /// let mut world = World::new();
    /// let hp = ComponentSchema::new("Hp").field("value", FieldType::Int);
    /// world.register_dynamic_component(hp.clone()).unwrap();
    /// let e = world.spawn(());
    /// world.insert_dynamic(e, hp.instantiate([]).unwrap()).unwrap();
    /// world.get_dynamic_mut(e, "Hp").unwrap().set("value", 3).unwrap();
    /// assert_eq!(world.get_dynamic(e, "Hp").unwrap().get("value").unwrap().as_int(), Some(3));
    /// ```
    pub fn get_dynamic_mut(
        &mut self,
        entity: Entity,
        name: &str,
    ) -> Result<DynamicMut<'_>, ComponentError> {
        let id = self.dynamic_component_of(entity, name)?;
        let tick = self.change_tick();
        self.sparse
            .get_mut(id)
            .and_then(|s| s.get_mut::<DynamicComponent>(entity, tick))
            .map(|value| DynamicMut { value })
            .ok_or_else(|| missing_named(entity, name))
    }

    /// The entities that have every named component, in iteration order.
    /// Names are runtime-defined components' names or Rust components'
    /// short type names (`"Position"`); an unknown or ambiguous name is an
    /// error.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{ComponentSchema, FieldType};
    /// #[derive(Component)] struct Position(f32);
    /// let mut world = World::new();
    /// let mana = ComponentSchema::new("Mana").field("max", FieldType::Int);
    /// world.register_dynamic_component(mana.clone()).unwrap();
    /// let wizard = world.spawn(Position(0.0));
    /// world.insert_dynamic(wizard, mana.instantiate([]).unwrap()).unwrap();
    /// world.spawn(Position(1.0));
    /// assert_eq!(world.query_dynamic(&["Mana", "Position"]).unwrap(), vec![wizard]);
    /// ```
    pub fn query_dynamic(&self, names: &[&str]) -> Result<Vec<Entity>, DynamicQueryError> {
        let mut table_ids = Vec::new();
        let mut sparse_ids = Vec::new();
        for &name in names {
            let id = self.component_named(name)?;
            match self.components.info(id).storage() {
                StorageType::Table => table_ids.push(id),
                StorageType::SparseSet => sparse_ids.push(id),
            }
        }
        let mut sets = Vec::with_capacity(sparse_ids.len());
        for id in sparse_ids {
            match self.sparse.get(id) {
                Some(set) => sets.push(set),
                None => return Ok(Vec::new()),
            }
        }
        let mut out = Vec::new();
        for archetype in self.archetypes.iter() {
            if table_ids.iter().all(|&id| archetype.contains(id)) {
                out.extend(
                    archetype
                        .entities()
                        .iter()
                        .filter(|&&e| sets.iter().all(|s| s.contains(e))),
                );
            }
        }
        Ok(out)
    }

    /// The component (Rust or runtime-defined) called `name`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Position(f32);
    /// let mut world = World::new();
    /// let id = world.register_component::<Position>();
    /// assert_eq!(world.component_named("Position"), Ok(id));
    /// ```
    pub fn component_named(&self, name: &str) -> Result<ComponentId, DynamicQueryError> {
        if let Some(id) = self.components.dynamic_id(name) {
            // Registration keeps Rust types off runtime-defined names (both
            // ways), so this is the only component with the name.
            debug_assert!(self.components.rust_type_named(name).is_none());
            return Ok(id);
        }
        let mut ids = self.components.ids_named(name);
        match (ids.next(), ids.next()) {
            (Some(id), None) => Ok(id),
            (Some(_), Some(_)) => Err(DynamicQueryError::Ambiguous(name.to_owned())),
            (None, _) => Err(DynamicQueryError::Unknown(name.to_owned())),
        }
    }

    /// The id of runtime-defined component `name`, if `entity` lives and has it.
    fn dynamic_component_of(
        &self,
        entity: Entity,
        name: &str,
    ) -> Result<ComponentId, ComponentError> {
        if !self.contains(entity) {
            return Err(ComponentError::NoSuchEntity(entity));
        }
        self.components
            .dynamic_id(name)
            .filter(|&id| self.sparse.get(id).is_some_and(|s| s.contains(entity)))
            .ok_or_else(|| missing_named(entity, name))
    }
}

fn missing_named(entity: Entity, name: &str) -> ComponentError {
    ComponentError::MissingComponent {
        entity,
        component: name.to_owned(),
    }
}

/// [`World::insert_dynamic`] failed; nothing changed.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let e = world.spawn(());
/// let value = mosaic::ComponentSchema::new("Mana").instantiate([]).unwrap();
/// let err = world.insert_dynamic(e, value).unwrap_err();
/// assert_eq!(err.to_string(), "no runtime-defined component is called `Mana`");
/// ```
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DynamicInsertError {
    /// The handle is stale.
    #[error(transparent)]
    Entity(#[from] EntityError),
    /// The component is not declared, or the value does not fit its schema.
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// A mutable borrow of a runtime-defined component value: fields can be
/// read, and written with their declared types only.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{ComponentSchema, FieldType};
/// let mut world = World::new();
/// let s = ComponentSchema::new("Hp").field("value", FieldType::Int);
/// world.register_dynamic_component(s.clone()).unwrap();
/// let e = world.spawn(());
/// world.insert_dynamic(e, s.instantiate([]).unwrap()).unwrap();
/// let mut hp = world.get_dynamic_mut(e, "Hp").unwrap();
/// assert!(hp.set("value", "ten").is_err());
/// assert_eq!(hp.get("value").unwrap().as_int(), Some(0));
/// ```
#[derive(Debug)]
pub struct DynamicMut<'w> {
    value: &'w mut DynamicComponent,
}

impl std::ops::Deref for DynamicMut<'_> {
    type Target = DynamicComponent;

    fn deref(&self) -> &DynamicComponent {
        self.value
    }
}

impl DynamicMut<'_> {
    /// Sets field `name` (see [`DynamicComponent::set`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{ComponentSchema, FieldType};
    /// let mut world = World::new();
    /// let s = ComponentSchema::new("Hp").field("value", FieldType::Int);
    /// world.register_dynamic_component(s.clone()).unwrap();
    /// let e = world.spawn(());
    /// world.insert_dynamic(e, s.instantiate([]).unwrap()).unwrap();
    /// world.get_dynamic_mut(e, "Hp").unwrap().set("value", 9).unwrap();
    /// ```
    pub fn set(
        &mut self,
        name: &str,
        value: impl Into<crate::dynamic::FieldValue>,
    ) -> Result<(), SchemaError> {
        self.value.set(name, value)
    }
}

#[cfg(test)]
mod tests {
    use crate::World;
    use crate::dynamic::{ComponentSchema, FieldType, FieldValue};

    /// Runtime-defined values go through the sparse set's typed insert,
    /// replace and remove (the storage layer's `unsafe`): run under Miri
    /// with the library tests. Strings make every value own heap memory,
    /// so a double drop or a leak would show.
    #[test]
    fn dynamic_values_insert_replace_remove_despawn() {
        let mut world = World::new();
        let tag = ComponentSchema::new("Tag").field("label", FieldType::Str);
        world.register_dynamic_component(tag.clone()).unwrap();
        let value = |s: &str| tag.instantiate([("label", FieldValue::from(s))]).unwrap();
        let a = world.spawn(());
        let b = world.spawn(());
        world.insert_dynamic(a, value("first")).unwrap();
        world.insert_dynamic(b, value("other")).unwrap();
        world.insert_dynamic(a, value("second")).unwrap(); // replaces, drops "first"
        assert_eq!(
            world.get_dynamic(a, "Tag").unwrap().get("label"),
            Some(&FieldValue::from("second"))
        );
        world
            .get_dynamic_mut(b, "Tag")
            .unwrap()
            .set("label", "changed")
            .unwrap();
        let removed = world.remove_dynamic(a, "Tag").unwrap();
        assert_eq!(
            removed.get("label").and_then(|v| v.as_str()),
            Some("second")
        );
        assert!(world.get_dynamic(a, "Tag").is_err());
        assert_eq!(world.query_dynamic(&["Tag"]).unwrap(), vec![b]);
        world.despawn(b).unwrap(); // drops "changed" with the entity
        assert!(world.query_dynamic(&["Tag"]).unwrap().is_empty());
        let c = world.spawn(());
        world.insert_dynamic(c, value("kept")).unwrap();
        world.clear();
        assert!(world.is_empty());
    }
}
