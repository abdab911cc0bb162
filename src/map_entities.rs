//! Remapping entity references: when a scene is loaded, the entities its
//! components name (by scene id) become the entities just spawned.

use crate::dynamic::{DynamicComponent, FieldValue};
use crate::entity::Entity;

/// Turns one entity reference into another (a scene id into the entity
/// spawned for it).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::EntityMapper;
/// struct Swap(Entity, Entity);
/// impl EntityMapper for Swap {
///     fn map(&mut self, e: Entity) -> Entity { if e == self.0 { self.1 } else { e } }
/// }
/// let mut world = World::new();
/// let (a, b) = (world.spawn(()), world.spawn(()));
/// assert_eq!(Swap(a, b).map(a), b);
/// ```
pub trait EntityMapper {
    /// The entity `entity` stands for.
    fn map(&mut self, entity: Entity) -> Entity;
}

/// A component (or resource) that holds entity references, which must be
/// remapped when it is loaded from a scene. Derive it and mark the fields
/// holding entities with `#[entities]`; register the type with the scene
/// registry's `Registration::map_entities` (`mosaic::scene`; scenes refuse to load an entity reference in a type registered without
/// it, rather than silently keep a meaningless id).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{EntityMapper, MapEntities};
/// #[derive(MapEntities)]
/// struct Target { #[entities] who: Entity, range: f32 }
///
/// struct To(Entity);
/// impl EntityMapper for To { fn map(&mut self, _: Entity) -> Entity { self.0 } }
/// let mut world = World::new();
/// let (a, b) = (world.spawn(()), world.spawn(()));
/// let mut t = Target { who: a, range: 2.0 };
/// t.map_entities(&mut To(b));
/// assert_eq!(t.who, b);
/// ```
pub trait MapEntities {
    /// Replaces every entity reference `e` in `self` with `mapper.map(e)`.
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper);
}

impl MapEntities for Entity {
    #[inline]
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        *self = mapper.map(*self);
    }
}

impl<T: MapEntities> MapEntities for Option<T> {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        if let Some(v) = self {
            v.map_entities(mapper);
        }
    }
}

impl<T: MapEntities> MapEntities for Vec<T> {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        self.iter_mut().for_each(|v| v.map_entities(mapper));
    }
}

impl<T: MapEntities, const N: usize> MapEntities for [T; N] {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        self.iter_mut().for_each(|v| v.map_entities(mapper));
    }
}

impl<T: MapEntities> MapEntities for Box<T> {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        (**self).map_entities(mapper);
    }
}

impl MapEntities for DynamicComponent {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        for value in self.fields_mut() {
            if let FieldValue::Entity(e) = value {
                *e = mapper.map(*e);
            }
        }
    }
}
