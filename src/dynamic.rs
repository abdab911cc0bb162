//! Runtime-defined components: components that exist only in data.
//!
//! A modder's `Mana { current: 10, max: 50 }` has no Rust type. It is
//! declared at run time with a name and a field schema
//! ([`ComponentSchema`]), and its values ([`DynamicComponent`]) are stored in
//! the world like any other component — in a sparse set of their own,
//! counted in [`World::len`](crate::World::len)'s entities, dropped on
//! despawn, announced to observers — and found by name with
//! [`World::query_dynamic`](crate::World::query_dynamic). Scenes declare,
//! save and load them like Rust components.

use std::fmt;

use thiserror::Error;

use crate::entity::Entity;

/// The type of one field of a runtime-defined component.
///
/// # Example
/// ```
/// use mosaic::FieldType;
/// assert_eq!("int".parse::<FieldType>(), Ok(FieldType::Int));
/// assert_eq!(FieldType::Float.to_string(), "float");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// `true` or `false`.
    Bool,
    /// A signed 64-bit integer.
    Int,
    /// A 64-bit float (integers are accepted and converted).
    Float,
    /// A string.
    Str,
    /// A reference to another entity (remapped when a scene loads).
    Entity,
}

impl FieldType {
    /// Every field type, with the name scene files use for it.
    pub const ALL: [(FieldType, &'static str); 5] = [
        (FieldType::Bool, "bool"),
        (FieldType::Int, "int"),
        (FieldType::Float, "float"),
        (FieldType::Str, "string"),
        (FieldType::Entity, "entity"),
    ];

    /// The name scene files use for this type.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::FieldType::Str.name(), "string");
    /// ```
    pub fn name(self) -> &'static str {
        FieldType::ALL
            .iter()
            .find(|(t, _)| *t == self)
            .map(|(_, n)| *n)
            .unwrap_or("?")
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for FieldType {
    type Err = SchemaError;

    fn from_str(s: &str) -> Result<FieldType, SchemaError> {
        FieldType::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(t, _)| *t)
            .ok_or_else(|| SchemaError::UnknownFieldType { name: s.to_owned() })
    }
}

/// The value of one field of a runtime-defined component.
///
/// # Example
/// ```
/// use mosaic::{FieldType, FieldValue};
/// assert_eq!(FieldValue::Int(3).field_type(), FieldType::Int);
/// assert_eq!(FieldValue::from(2.5).as_float(), Some(2.5));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// A [`FieldType::Bool`] value.
    Bool(bool),
    /// A [`FieldType::Int`] value.
    Int(i64),
    /// A [`FieldType::Float`] value.
    Float(f64),
    /// A [`FieldType::Str`] value.
    Str(String),
    /// A [`FieldType::Entity`] value.
    Entity(Entity),
}

impl FieldValue {
    /// The type of this value.
    ///
    /// # Example
    /// ```
    /// use mosaic::{FieldType, FieldValue};
    /// assert_eq!(FieldValue::from("hi").field_type(), FieldType::Str);
    /// ```
    pub fn field_type(&self) -> FieldType {
        match self {
            FieldValue::Bool(_) => FieldType::Bool,
            FieldValue::Int(_) => FieldType::Int,
            FieldValue::Float(_) => FieldType::Float,
            FieldValue::Str(_) => FieldType::Str,
            FieldValue::Entity(_) => FieldType::Entity,
        }
    }

    /// The integer, if this is an `Int`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::FieldValue::Int(4).as_int(), Some(4));
    /// ```
    pub fn as_int(&self) -> Option<i64> {
        match self {
            FieldValue::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The float, if this is a `Float`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::FieldValue::Float(0.5).as_float(), Some(0.5));
    /// ```
    pub fn as_float(&self) -> Option<f64> {
        match self {
            FieldValue::Float(v) => Some(*v),
            _ => None,
        }
    }

    /// The bool, if this is a `Bool`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::FieldValue::Bool(true).as_bool(), Some(true));
    /// ```
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            FieldValue::Bool(v) => Some(*v),
            _ => None,
        }
    }

    /// The string, if this is a `Str`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::FieldValue::from("x").as_str(), Some("x"));
    /// ```
    pub fn as_str(&self) -> Option<&str> {
        match self {
            FieldValue::Str(v) => Some(v),
            _ => None,
        }
    }

    /// The entity, if this is an `Entity`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let e = World::new().spawn(());
    /// assert_eq!(mosaic::FieldValue::Entity(e).as_entity(), Some(e));
    /// ```
    pub fn as_entity(&self) -> Option<Entity> {
        match self {
            FieldValue::Entity(v) => Some(*v),
            _ => None,
        }
    }
}

impl From<bool> for FieldValue {
    fn from(v: bool) -> Self {
        FieldValue::Bool(v)
    }
}
impl From<i64> for FieldValue {
    fn from(v: i64) -> Self {
        FieldValue::Int(v)
    }
}
impl From<i32> for FieldValue {
    fn from(v: i32) -> Self {
        FieldValue::Int(v.into())
    }
}
impl From<f64> for FieldValue {
    fn from(v: f64) -> Self {
        FieldValue::Float(v)
    }
}
impl From<&str> for FieldValue {
    fn from(v: &str) -> Self {
        FieldValue::Str(v.to_owned())
    }
}
impl From<String> for FieldValue {
    fn from(v: String) -> Self {
        FieldValue::Str(v)
    }
}
impl From<Entity> for FieldValue {
    fn from(v: Entity) -> Self {
        FieldValue::Entity(v)
    }
}

/// The declaration of a runtime-defined component: its name and fields.
///
/// # Example
/// ```
/// use mosaic::{ComponentSchema, FieldType};
/// let mana = ComponentSchema::new("Mana")
///     .field("current", FieldType::Int)
///     .field("max", FieldType::Int);
/// assert_eq!(mana.fields().len(), 2);
/// assert_eq!(mana.field_type("max"), Some(FieldType::Int));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentSchema {
    name: String,
    fields: Vec<(String, FieldType)>,
}

impl ComponentSchema {
    /// A schema with no fields yet (a tag).
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::ComponentSchema::new("Cursed").fields().is_empty());
    /// ```
    pub fn new(name: impl Into<String>) -> ComponentSchema {
        ComponentSchema {
            name: name.into(),
            fields: Vec::new(),
        }
    }

    /// Adds a field.
    ///
    /// # Example
    /// ```
    /// use mosaic::{ComponentSchema, FieldType};
    /// let s = ComponentSchema::new("Mana").field("max", FieldType::Int);
    /// assert_eq!(s.fields()[0], ("max".to_owned(), FieldType::Int));
    /// ```
    pub fn field(mut self, name: impl Into<String>, ty: FieldType) -> ComponentSchema {
        self.fields.push((name.into(), ty));
        self
    }

    /// The component's name.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::ComponentSchema::new("Mana").name(), "Mana");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fields, in declaration order.
    ///
    /// # Example
    /// ```
    /// use mosaic::{ComponentSchema, FieldType};
    /// let s = ComponentSchema::new("P").field("x", FieldType::Float);
    /// assert_eq!(s.fields().len(), 1);
    /// ```
    pub fn fields(&self) -> &[(String, FieldType)] {
        &self.fields
    }

    /// The type of field `name`.
    ///
    /// # Example
    /// ```
    /// use mosaic::{ComponentSchema, FieldType};
    /// let s = ComponentSchema::new("P").field("x", FieldType::Float);
    /// assert_eq!(s.field_type("y"), None);
    /// ```
    pub fn field_type(&self, name: &str) -> Option<FieldType> {
        self.position(name).map(|i| self.fields[i].1)
    }

    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }

    /// A value with every field at its type's zero (`false`, `0`, `0.0`,
    /// `""`); entity fields have no zero, so they must be given.
    fn default_for(ty: FieldType) -> Option<FieldValue> {
        Some(match ty {
            FieldType::Bool => FieldValue::Bool(false),
            FieldType::Int => FieldValue::Int(0),
            FieldType::Float => FieldValue::Float(0.0),
            FieldType::Str => FieldValue::Str(String::new()),
            FieldType::Entity => return None,
        })
    }

    /// Checks the schema itself: a non-empty name, distinct field names.
    ///
    /// # Example
    /// ```
    /// use mosaic::{ComponentSchema, FieldType};
    /// let twice = ComponentSchema::new("A").field("x", FieldType::Int).field("x", FieldType::Int);
    /// assert!(twice.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SchemaError> {
        if self.name.trim().is_empty() {
            return Err(SchemaError::EmptyName);
        }
        // A set, not a scan of the fields before each: a schema read from
        // a file may have tens of thousands of fields.
        let mut seen = rustc_hash::FxHashSet::default();
        for (name, _) in &self.fields {
            if !seen.insert(name.as_str()) {
                return Err(SchemaError::DuplicateField {
                    component: self.name.clone(),
                    field: name.clone(),
                });
            }
        }
        Ok(())
    }

    /// Builds a value of this component from `(field, value)` pairs, checking
    /// every field: unknown names, wrong types and missing entity fields are
    /// errors; other missing fields take their type's zero. An `Int` given
    /// for a `Float` field is converted.
    ///
    /// # Example
    /// ```
    /// use mosaic::{ComponentSchema, FieldType, FieldValue};
    /// let mana = ComponentSchema::new("Mana")
    ///     .field("current", FieldType::Int)
    ///     .field("max", FieldType::Int);
    /// let v = mana.instantiate([("max", FieldValue::Int(50))]).unwrap();
    /// assert_eq!(v.get("current"), Some(&FieldValue::Int(0)));
    /// assert!(mana.instantiate([("mana", FieldValue::Int(1))]).is_err());
    /// ```
    pub fn instantiate<'a>(
        &self,
        values: impl IntoIterator<Item = (&'a str, FieldValue)>,
    ) -> Result<DynamicComponent, SchemaError> {
        let mut slots: Vec<Option<FieldValue>> = vec![None; self.fields.len()];
        // Many fields (a schema read from a file): found by hash, not by a
        // scan per field given.
        let index: Option<rustc_hash::FxHashMap<&str, usize>> =
            (self.fields.len() > 16).then(|| {
                let mut index = rustc_hash::FxHashMap::default();
                for (i, (n, _)) in self.fields.iter().enumerate() {
                    index.entry(n.as_str()).or_insert(i);
                }
                index
            });
        for (name, value) in values {
            let found = match &index {
                Some(index) => index.get(name).copied(),
                None => self.position(name),
            };
            let i = found.ok_or_else(|| SchemaError::UnknownField {
                component: self.name.clone(),
                field: name.to_owned(),
            })?;
            if slots[i].is_some() {
                return Err(SchemaError::DuplicateField {
                    component: self.name.clone(),
                    field: name.to_owned(),
                });
            }
            slots[i] = Some(self.check(i, value)?);
        }
        let values = slots
            .into_iter()
            .zip(&self.fields)
            .map(|(slot, (name, ty))| {
                slot.or_else(|| Self::default_for(*ty))
                    .ok_or_else(|| SchemaError::MissingField {
                        component: self.name.clone(),
                        field: name.clone(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DynamicComponent {
            name: self.name.clone(),
            fields: self
                .fields
                .iter()
                .map(|(n, _)| n.clone())
                .zip(values)
                .collect(),
        })
    }

    /// `value` as the type of field `i` (an `Int` widens to `Float`).
    fn check(&self, i: usize, value: FieldValue) -> Result<FieldValue, SchemaError> {
        let (name, ty) = &self.fields[i];
        match (ty, value) {
            (FieldType::Float, FieldValue::Int(v)) => Ok(FieldValue::Float(v as f64)),
            (ty, value) if value.field_type() == *ty => Ok(value),
            (ty, value) => Err(SchemaError::WrongType {
                component: self.name.clone(),
                field: name.clone(),
                expected: *ty,
                found: value.field_type(),
            }),
        }
    }
}

/// A value of a runtime-defined component: its fields, in schema order.
///
/// Read and write it through [`World::get_dynamic`](crate::World::get_dynamic)
/// and [`World::get_dynamic_mut`](crate::World::get_dynamic_mut); a write
/// keeps the field's type.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{ComponentSchema, FieldType, FieldValue};
/// let mut world = World::new();
/// let mana = ComponentSchema::new("Mana").field("current", FieldType::Int);
/// world.register_dynamic_component(mana.clone()).unwrap();
/// let e = world.spawn(());
/// world.insert_dynamic(e, mana.instantiate([("current", FieldValue::Int(10))]).unwrap()).unwrap();
/// world.get_dynamic_mut(e, "Mana").unwrap().set("current", 7).unwrap();
/// assert_eq!(world.get_dynamic(e, "Mana").unwrap().get("current"), Some(&FieldValue::Int(7)));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicComponent {
    name: String,
    fields: Vec<(String, FieldValue)>,
}

impl DynamicComponent {
    /// The component's name (its schema's).
    ///
    /// # Example
    /// ```
    /// let s = mosaic::ComponentSchema::new("Cursed");
    /// assert_eq!(s.instantiate([]).unwrap().name(), "Cursed");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Field `name`'s value.
    ///
    /// # Example
    /// ```
    /// use mosaic::{ComponentSchema, FieldType, FieldValue};
    /// let s = ComponentSchema::new("A").field("x", FieldType::Bool);
    /// assert_eq!(s.instantiate([]).unwrap().get("x"), Some(&FieldValue::Bool(false)));
    /// ```
    pub fn get(&self, name: &str) -> Option<&FieldValue> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Sets field `name`, which must exist; the value must have the field's
    /// type (an `Int` is widened for a `Float` field).
    ///
    /// # Example
    /// ```
    /// use mosaic::{ComponentSchema, FieldType, FieldValue};
    /// let s = ComponentSchema::new("A").field("x", FieldType::Float);
    /// let mut v = s.instantiate([]).unwrap();
    /// v.set("x", 2).unwrap();
    /// assert_eq!(v.get("x"), Some(&FieldValue::Float(2.0)));
    /// assert!(v.set("x", "two").is_err());
    /// assert!(v.set("y", 1).is_err());
    /// ```
    pub fn set(&mut self, name: &str, value: impl Into<FieldValue>) -> Result<(), SchemaError> {
        let value = value.into();
        let component = &self.name;
        let Some((_, slot)) = self.fields.iter_mut().find(|(n, _)| n == name) else {
            return Err(SchemaError::UnknownField {
                component: component.clone(),
                field: name.to_owned(),
            });
        };
        *slot = match (slot.field_type(), value) {
            (FieldType::Float, FieldValue::Int(v)) => FieldValue::Float(v as f64),
            (ty, value) if value.field_type() == ty => value,
            (ty, value) => {
                return Err(SchemaError::WrongType {
                    component: component.clone(),
                    field: name.to_owned(),
                    expected: ty,
                    found: value.field_type(),
                });
            }
        };
        Ok(())
    }

    /// The fields, in schema order.
    ///
    /// # Example
    /// ```
    /// use mosaic::{ComponentSchema, FieldType};
    /// let s = ComponentSchema::new("A").field("x", FieldType::Int);
    /// assert_eq!(s.instantiate([]).unwrap().fields().len(), 1);
    /// ```
    pub fn fields(&self) -> &[(String, FieldValue)] {
        &self.fields
    }

    pub(crate) fn fields_mut(&mut self) -> impl Iterator<Item = &mut FieldValue> {
        self.fields.iter_mut().map(|(_, v)| v)
    }
}

/// A runtime-defined component declaration or value was refused.
///
/// # Example
/// ```
/// use mosaic::{ComponentSchema, FieldType, SchemaError};
/// let s = ComponentSchema::new("Mana").field("max", FieldType::Int);
/// let err = s.instantiate([("max", "lots".into())]).unwrap_err();
/// assert_eq!(err.to_string(), "field `Mana.max` is int, not string");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SchemaError {
    /// The component name is empty.
    #[error("a runtime-defined component needs a name")]
    EmptyName,
    /// The name is taken by a runtime-defined component with other fields.
    #[error("component `{name}` is already declared with a different schema")]
    Conflict {
        /// The component name.
        name: String,
    },
    /// The name is taken by a Rust component type.
    #[error("component name `{name}` is taken by the Rust component type `{rust_type}`")]
    TakenByRustType {
        /// The component name.
        name: String,
        /// The Rust type that has it (its full path).
        rust_type: String,
    },
    /// No runtime-defined component has this name.
    #[error("no runtime-defined component is called `{name}`")]
    UnknownComponent {
        /// The component name.
        name: String,
    },
    /// A field type name that is not one of bool, int, float, string, entity.
    #[error("unknown field type `{name}` (expected bool, int, float, string or entity)")]
    UnknownFieldType {
        /// The type name given.
        name: String,
    },
    /// A field named twice.
    #[error("field `{component}.{field}` is given twice")]
    DuplicateField {
        /// The component name.
        component: String,
        /// The field name.
        field: String,
    },
    /// A field the schema does not declare.
    #[error("component `{component}` has no field `{field}`")]
    UnknownField {
        /// The component name.
        component: String,
        /// The field name.
        field: String,
    },
    /// An entity field left out (entities have no default).
    #[error("field `{component}.{field}` is missing")]
    MissingField {
        /// The component name.
        component: String,
        /// The field name.
        field: String,
    },
    /// A value of the wrong type.
    #[error("field `{component}.{field}` is {expected}, not {found}")]
    WrongType {
        /// The component name.
        component: String,
        /// The field name.
        field: String,
        /// The declared type.
        expected: FieldType,
        /// The type given.
        found: FieldType,
    },
}
