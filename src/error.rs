//! Error types returned by the world and by queries.
//!
//! Each error names the entity, and where it applies the component type (by
//! its short name), that caused it. None of them leaves the world changed.

use thiserror::Error;

use crate::entity::Entity;

/// An operation named an entity that does not exist.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let e = world.spawn(());
/// world.despawn(e).unwrap();
/// assert_eq!(world.despawn(e), Err(EntityError::NoSuchEntity(e)));
/// assert_eq!(
///     world.despawn(e).unwrap_err().to_string(),
///     "entity 0v1 does not exist (despawned, or never spawned in this world)"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EntityError {
    /// The handle is stale (despawned) or was never spawned in this world.
    #[error("entity {0:?} does not exist (despawned, or never spawned in this world)")]
    NoSuchEntity(Entity),
    /// The entity is the target of a relation whose policy refuses its
    /// despawn while anything relates to it
    /// ([`OnTargetDespawn::Refuse`](crate::OnTargetDespawn::Refuse)).
    #[error("entity {entity:?} is a `{relation}` target that refuses despawn while related")]
    DespawnRefused {
        /// The entity kept alive.
        entity: Entity,
        /// The relation's short type name.
        relation: &'static str,
    },
    /// A [`ChildOf`](crate::ChildOf) in an inserted bundle named a parent
    /// that is not alive, or one that would close a cycle (the entity's
    /// own descendant). Nothing changed.
    #[error(transparent)]
    Relation(#[from] crate::relation::RelationError),
}

/// Reading or removing a component failed.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Debug)] struct Health(u32);
/// let mut world = World::new();
/// let e = world.spawn(());
/// let err = world.get::<Health>(e).unwrap_err();
/// assert_eq!(err.to_string(), "entity 0v1 has no component `Health`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ComponentError {
    /// The handle is stale (despawned) or was never spawned in this world.
    #[error("entity {0:?} does not exist (despawned, or never spawned in this world)")]
    NoSuchEntity(Entity),
    /// The entity lives but lacks the component.
    #[error("entity {entity:?} has no component `{component}`")]
    MissingComponent {
        /// The entity asked about.
        entity: Entity,
        /// The component's short type name.
        component: String,
    },
    /// See [`EntityError::DespawnRefused`].
    #[error("entity {entity:?} is a `{relation}` target that refuses despawn while related")]
    DespawnRefused {
        /// The entity kept alive.
        entity: Entity,
        /// The relation's short type name.
        relation: &'static str,
    },
    /// See [`EntityError::Relation`].
    #[error(transparent)]
    Relation(crate::relation::RelationError),
}

impl From<EntityError> for ComponentError {
    fn from(err: EntityError) -> Self {
        match err {
            EntityError::NoSuchEntity(e) => ComponentError::NoSuchEntity(e),
            EntityError::DespawnRefused { entity, relation } => {
                ComponentError::DespawnRefused { entity, relation }
            }
            EntityError::Relation(crate::relation::RelationError::NoSuchEntity(e)) => {
                ComponentError::NoSuchEntity(e)
            }
            EntityError::Relation(err) => ComponentError::Relation(err),
        }
    }
}

/// A query could not return an item for an entity.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component, Debug)] struct Health(u32);
/// let mut world = World::new();
/// let e = world.spawn(());
/// let mut q = world.query::<&Health>();
/// assert_eq!(
///     q.get(&world, e).unwrap_err().to_string(),
///     "entity 0v1 does not match query `&Health`"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QueryEntityError {
    /// The handle is stale (despawned) or was never spawned in this world.
    #[error("entity {0:?} does not exist (despawned, or never spawned in this world)")]
    NoSuchEntity(Entity),
    /// The entity lives but lacks a component the query needs, or a filter
    /// rejects it.
    #[error("entity {entity:?} does not match query `{query}`")]
    QueryDoesNotMatch {
        /// The entity asked about.
        entity: Entity,
        /// The query's type, shortened (`(&A, &mut B)`).
        query: String,
    },
    /// The same entity was named twice in a call that hands out mutable
    /// items for each ([`QueryState::get_many_mut`](crate::QueryState::get_many_mut),
    /// [`World::get_many_mut`](crate::World::get_many_mut)): two `&mut`
    /// to one value are never made. Bevy's name.
    #[error("entity {0:?} was named more than once; mutable items must be for distinct entities")]
    AliasedMutability(Entity),
}
