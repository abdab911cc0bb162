//! One value at a time: reading and writing a single registered component
//! or resource as JSON, for inspectors and editors (the scene loader and
//! saver work on whole worlds).

use std::any::TypeId;

use thiserror::Error;

use super::doc::Place;
use super::registry::{Kind, TypeRegistry};
use super::value::{Format, SceneValue, Source};
use mosaic::{Entity, World};

/// Why a single value could not be read or written (see
/// [`TypeRegistry::component_to_json`]). The world is unchanged.
///
/// # Example
/// ```
/// use mosaic::World;
/// use mosaic_scene::{TypeRegistry, ValueError};
/// let world = World::new();
/// let err = TypeRegistry::new().resource_to_json(&world, "Score").unwrap_err();
/// assert_eq!(err, ValueError::Unregistered("Score".into()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ValueError {
    /// No component (or resource) type is registered under this name.
    #[error("no type is registered under the name `{0}`")]
    Unregistered(String),
    /// The entity does not exist (or was despawned).
    #[error("entity {0:?} does not exist")]
    NoEntity(Entity),
    /// The entity has no such component, or the world no such resource.
    #[error("`{0}` is not present")]
    Missing(String),
    /// The value does not have the type's shape (the serde message, with
    /// the field path if known).
    #[error("`{name}`: {message}")]
    Decode {
        /// The registered name.
        name: String,
        /// What was wrong, and where.
        message: String,
    },
    /// The value could not be written as JSON (its `Serialize` failed).
    #[error("`{name}` could not be written: {message}")]
    Encode {
        /// The registered name.
        name: String,
        /// The serializer's message.
        message: String,
    },
}

impl TypeRegistry {
    /// The name component type `type_id` is registered under.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Health(u32);
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// assert_eq!(registry.component_name(std::any::TypeId::of::<Health>()), Some("Health"));
    /// ```
    pub fn component_name(&self, type_id: TypeId) -> Option<&str> {
        self.by_type(type_id, Kind::Component)
            .map(|e| e.name.as_str())
    }

    /// The name resource type `type_id` is registered under.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Score(u64);
    /// let mut registry = TypeRegistry::new();
    /// registry.register_resource::<Score>();
    /// assert_eq!(registry.resource_name(std::any::TypeId::of::<Score>()), Some("Score"));
    /// ```
    pub fn resource_name(&self, type_id: TypeId) -> Option<&str> {
        self.by_type(type_id, Kind::Resource)
            .map(|e| e.name.as_str())
    }

    /// The registered name of the type called `name`: `name` itself if a
    /// type is registered under it, else the name of the type whose full
    /// Rust type path is `name` (as `std::any::type_name` gives it, the
    /// form Bevy Remote Protocol clients send).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// mod game {
    ///     #[derive(mosaic::Component, serde::Serialize, serde::Deserialize)]
    ///     pub struct Health(pub u32);
    /// }
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<game::Health>();
    /// let path = std::any::type_name::<game::Health>();
    /// assert_eq!(registry.registered_name(path), Some("Health"));
    /// assert_eq!(registry.registered_name("Health"), Some("Health"));
    /// assert_eq!(registry.registered_name("Mana"), None);
    /// ```
    pub fn registered_name(&self, name: &str) -> Option<&str> {
        if self.contains(name) {
            return self.names().find(|n| *n == name);
        }
        self.all_entries()
            .find(|e| e.type_name == name)
            .map(|e| e.name.as_str())
    }

    /// The full Rust type path of the type registered under `name`.
    ///
    /// # Example
    /// ```
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Score(u64);
    /// let mut registry = TypeRegistry::new();
    /// registry.register_resource::<Score>();
    /// assert!(registry.type_path("Score").unwrap().ends_with("Score"));
    /// assert_eq!(registry.type_path("Mana"), None);
    /// ```
    pub fn type_path(&self, name: &str) -> Option<&'static str> {
        self.all_entries()
            .find(|e| e.name == name)
            .map(|e| e.type_name)
    }

    /// The names of the registered component types, in registration order.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Health(u32);
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Score(u64);
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// registry.register_resource::<Score>();
    /// assert_eq!(registry.component_names().collect::<Vec<_>>(), ["Health"]);
    /// assert_eq!(registry.resource_names().collect::<Vec<_>>(), ["Score"]);
    /// ```
    pub fn component_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.names_of(Kind::Component)
    }

    /// The names of the registered resource types, in registration order
    /// (see [`TypeRegistry::component_names`]).
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic_scene::TypeRegistry::new().resource_names().count(), 0);
    /// ```
    pub fn resource_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.names_of(Kind::Resource)
    }

    /// `entity`'s component `name` (a registered name), as JSON text.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Position { x: f32, y: f32 }
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Position>();
    /// let mut world = World::new();
    /// let e = world.spawn(Position { x: 1.0, y: 2.5 });
    /// let json = registry.component_to_json(&world, e, "Position").unwrap();
    /// assert_eq!(json, r#"{"x":1.0,"y":2.5}"#);
    /// ```
    pub fn component_to_json(
        &self,
        world: &World,
        entity: Entity,
        name: &str,
    ) -> Result<String, ValueError> {
        let entry = self
            .get(name, Kind::Component)
            .ok_or_else(|| ValueError::Unregistered(name.to_owned()))?;
        if !world.contains(entity) {
            return Err(ValueError::NoEntity(entity));
        }
        let content = entry
            .encode(world, Some(entity))
            .ok_or_else(|| ValueError::Missing(name.to_owned()))?;
        to_json(name, content)
    }

    /// The world's resource `name` (a registered name), as JSON text.
    ///
    /// # Example
    /// ```
    /// use mosaic::World;
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Score(u64);
    /// let mut registry = TypeRegistry::new();
    /// registry.register_resource::<Score>();
    /// let mut world = World::new();
    /// world.insert_resource(Score(12));
    /// assert_eq!(registry.resource_to_json(&world, "Score").unwrap(), "12");
    /// ```
    pub fn resource_to_json(&self, world: &World, name: &str) -> Result<String, ValueError> {
        let entry = self
            .get(name, Kind::Resource)
            .ok_or_else(|| ValueError::Unregistered(name.to_owned()))?;
        let content = entry
            .encode(world, None)
            .ok_or_else(|| ValueError::Missing(name.to_owned()))?;
        to_json(name, content)
    }

    /// Decodes `json` as component `name` and inserts it on `entity`
    /// (replacing its value). On any error the world is unchanged.
    ///
    /// Entity references inside the value are not remapped: a value that
    /// holds entities reads them as scene ids (see
    /// [`Registration::map_entities`](crate::Registration::map_entities)).
    /// A relation's edges (registered with
    /// [`TypeRegistry::register_relation`]) are read by
    /// [`TypeRegistry::component_to_json`] and removed by
    /// [`TypeRegistry::remove_component`], but not set here (an error): use
    /// `World::relate`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{TypeRegistry, ValueError};
    /// #[derive(Component, serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// struct Health(u32);
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// let mut world = World::new();
    /// let e = world.spawn(Health(3));
    /// registry.insert_component_json(&mut world, e, "Health", "10").unwrap();
    /// assert_eq!(world.get::<Health>(e).unwrap(), &Health(10));
    /// let err = registry.insert_component_json(&mut world, e, "Health", "\"ten\"");
    /// assert!(matches!(err, Err(ValueError::Decode { .. })));
    /// assert_eq!(world.get::<Health>(e).unwrap(), &Health(10));
    /// ```
    pub fn insert_component_json(
        &self,
        world: &mut World,
        entity: Entity,
        name: &str,
        json: &str,
    ) -> Result<(), ValueError> {
        let entry = self
            .get(name, Kind::Component)
            .ok_or_else(|| ValueError::Unregistered(name.to_owned()))?;
        if !world.contains(entity) {
            return Err(ValueError::NoEntity(entity));
        }
        if entry.take.is_some() {
            // A relation: setting edges could half-succeed (a dead target,
            // a cycle), so it is `World::relate`'s job.
            return Err(ValueError::Decode {
                name: name.to_owned(),
                message: "a relation's edges are not set from JSON; use `World::relate`".into(),
            });
        }
        let pending = entry
            .decode(&json_value(json))
            .map_err(|e| decode_error(name, e))?;
        pending.put(world, Some(entity));
        Ok(())
    }

    /// Decodes `json` as resource `name` and inserts it into the world
    /// (replacing its value). On any error the world is unchanged.
    ///
    /// # Example
    /// ```
    /// use mosaic::World;
    /// use mosaic_scene::TypeRegistry;
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Score(u64);
    /// let mut registry = TypeRegistry::new();
    /// registry.register_resource::<Score>();
    /// let mut world = World::new();
    /// registry.insert_resource_json(&mut world, "Score", "40").unwrap();
    /// assert_eq!(world.resource::<Score>().0, 40);
    /// ```
    pub fn insert_resource_json(
        &self,
        world: &mut World,
        name: &str,
        json: &str,
    ) -> Result<(), ValueError> {
        let entry = self
            .get(name, Kind::Resource)
            .ok_or_else(|| ValueError::Unregistered(name.to_owned()))?;
        let pending = entry
            .decode(&json_value(json))
            .map_err(|e| decode_error(name, e))?;
        pending.put(world, None);
        Ok(())
    }

    /// Removes (and drops) the world's resource `name`.
    ///
    /// # Example
    /// ```
    /// use mosaic::World;
    /// use mosaic_scene::{TypeRegistry, ValueError};
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Score(u64);
    /// let mut registry = TypeRegistry::new();
    /// registry.register_resource::<Score>();
    /// let mut world = World::new();
    /// world.insert_resource(Score(1));
    /// registry.remove_resource(&mut world, "Score").unwrap();
    /// assert!(!world.contains_resource::<Score>());
    /// assert_eq!(
    ///     registry.remove_resource(&mut world, "Score"),
    ///     Err(ValueError::Missing("Score".into()))
    /// );
    /// ```
    pub fn remove_resource(&self, world: &mut World, name: &str) -> Result<(), ValueError> {
        let entry = self
            .get(name, Kind::Resource)
            .ok_or_else(|| ValueError::Unregistered(name.to_owned()))?;
        if entry.remove(world, None) {
            Ok(())
        } else {
            Err(ValueError::Missing(name.to_owned()))
        }
    }

    /// Removes (and drops) `entity`'s component `name`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_scene::{TypeRegistry, ValueError};
    /// #[derive(Component, serde::Serialize, serde::Deserialize)]
    /// struct Health(u32);
    /// let mut registry = TypeRegistry::new();
    /// registry.register::<Health>();
    /// let mut world = World::new();
    /// let e = world.spawn(Health(3));
    /// registry.remove_component(&mut world, e, "Health").unwrap();
    /// assert!(!world.has::<Health>(e));
    /// assert_eq!(
    ///     registry.remove_component(&mut world, e, "Health"),
    ///     Err(ValueError::Missing("Health".into()))
    /// );
    /// ```
    pub fn remove_component(
        &self,
        world: &mut World,
        entity: Entity,
        name: &str,
    ) -> Result<(), ValueError> {
        let entry = self
            .get(name, Kind::Component)
            .ok_or_else(|| ValueError::Unregistered(name.to_owned()))?;
        if !world.contains(entity) {
            return Err(ValueError::NoEntity(entity));
        }
        if entry.remove(world, Some(entity)) {
            Ok(())
        } else {
            Err(ValueError::Missing(name.to_owned()))
        }
    }
}

fn to_json(
    name: &str,
    content: Result<serde_content::Value<'static>, String>,
) -> Result<String, ValueError> {
    let encode = |message: String| ValueError::Encode {
        name: name.to_owned(),
        message,
    };
    let content = content.map_err(encode)?;
    serde_json::to_string(&content).map_err(|e| encode(e.to_string()))
}

fn json_value(json: &str) -> SceneValue {
    SceneValue::Text {
        source: Source::new(json, Format::Json, ron::extensions::Extensions::empty()),
        place: Place::Whole,
    }
}

fn decode_error(name: &str, e: super::value::DecodeError) -> ValueError {
    let message = if e.path.is_empty() {
        e.message
    } else {
        format!("at `{}`: {}", e.path, e.message)
    };
    ValueError::Decode {
        name: name.to_owned(),
        message,
    }
}
