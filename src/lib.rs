//! The core of the mosaic ECS (package `mosaic-core`): entities,
//! components, storage, queries, systems, events, observers, hooks and
//! required components, columnar spawning. Programs depend on `mosaic-ecs`
//! (library `mosaic`), which re-exports all of this and, behind its default
//! `serde` feature, the scenes of `mosaic-scene`; the README there is the
//! guide. This crate has no serde dependency and knows nothing of scenes:
//! the scene crate is built on the public API below.
//!
//! ```
//! use mosaic::prelude::*;
//! #[derive(Component, Debug, PartialEq)]
//! struct Position(f32);
//! let mut world = World::new();
//! let e = world.spawn(Position(1.0));
//! assert_eq!(world.get::<Position>(e), Ok(&Position(1.0)));
//! ```
//!
//! # Design, in brief
//!
//! - [`Entity`]: 32-bit index + 32-bit generation, recycled through a free
//!   list; a stale handle is always detected.
//! - Components are stored per type, in archetype tables by default
//!   (fastest iteration) or in sparse sets (`#[component(storage =
//!   "sparse")]`: cheapest add/remove).
//! - [`QueryState`] caches the archetypes a query matches and iterates them
//!   as column slices.
//! - Change detection ([`Added`], [`Changed`]) by per-component ticks.
//!
//! `unsafe` code lives in `storage/` and `query/`, plus the scheduler's one
//! contract in `system/`; every block names the invariant it relies on.

extern crate self as mosaic;

mod archetype;
mod bundle;
mod change;
mod column_batch;
mod commands;
mod component;
mod dynamic;
mod entity;
#[cfg(feature = "serde")]
mod entity_serde;
mod error;
mod event;
mod hooks;
mod map_entities;
mod observer;
mod query;
mod removed;
mod resource;
mod storage;
mod system;
mod time;
mod world;

pub use archetype::{Archetype, ArchetypeId};
pub use bundle::Bundle;
pub use change::Tick;
pub use column_batch::{BatchColumn, ColumnBatch, ColumnBatchError};
pub use commands::{CommandBuffer, CommandError, CommandErrors, Commands};
pub use component::{short_type_name, Component, ComponentId, ComponentInfo, StorageType};
pub use dynamic::{ComponentSchema, DynamicComponent, FieldType, FieldValue, SchemaError};
pub use entity::{Entity, EntityLocation};
pub use error::{ComponentError, EntityError, QueryEntityError};
pub use event::{EventCursor, EventReader, EventWriter, Events};
pub use hooks::{ComponentHook, ComponentHooks, RequiredComponents, RequiredCycleError};
pub use map_entities::{EntityMapper, MapEntities};
pub use observer::{
    DeferredWorld, LifecycleEvent, LifecycleKind, ObserverId, OnAdd, OnDespawn, OnInsert, OnRemove,
    OnSpawn, Trigger, MAX_OBSERVER_ROUNDS,
};
pub use query::{
    Access, Added, Changed, Has, Or, Query, QueryChunk, QueryCombinations, QueryData, QueryFilter,
    QueryIter, QueryParChunks, QueryParIter, QuerySingleError, QueryState, ReadOnlyQueryData, With,
    Without,
};
pub use removed::RemovedComponents;
pub use resource::{Res, ResMut};
pub use storage::ResourceId;
pub use system::{
    ExecutorKind, IntoSystem, Local, Schedule, ScheduleError, SetConfig, System, SystemAccess,
    SystemConfig, SystemMeta, SystemParam, SystemParamFunction, SystemParamItem, SystemTiming,
    SystemTimings,
};
pub use time::Time;
pub use world::{
    DynamicInsertError, DynamicMut, DynamicQueryError, SparseMut, SparseMutError, World, WorldId,
};

/// Derive macros: `#[derive(Component)]`, `#[derive(Bundle)]` and
/// `#[derive(MapEntities)]`.
pub use mosaic_macros::{Bundle, Component, MapEntities};

/// The names most programs need: `use mosaic::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Added, Bundle, Changed, CommandBuffer, Commands, Component, ComponentError, DeferredWorld,
        Entity, EntityError, EventReader, EventWriter, ExecutorKind, Has, Local, MapEntities,
        OnAdd, OnDespawn, OnInsert, OnRemove, OnSpawn, Or, Query, QueryEntityError,
        QuerySingleError, QueryState, RemovedComponents, Res, ResMut, Schedule, ScheduleError,
        StorageType, Time, Trigger, With, Without, World,
    };
}

/// Items the derive macros name. Not part of the public API.
#[doc(hidden)]
pub mod __macro {
    pub use crate::bundle::{ComponentReader, ComponentRegistrar, ComponentWriter};
}
