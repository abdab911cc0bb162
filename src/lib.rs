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
//! `unsafe` code lives in `storage/` and `query/`, the scheduler's
//! contract in `system/` (and the two system parameters outside it, in
//! `event` and `removed`), the `Bundle` trait's reader contract in `bundle`
//! and the type-erased drop in `component`; every block names the invariant
//! it relies on. The compiler holds that fence: the crate denies
//! `unsafe_code`, and only those modules allow it.

#![deny(unsafe_code)]

extern crate self as mosaic;

mod archetype;
#[allow(
    unsafe_code,
    reason = "a bundle writes its components through a raw column reader/writer"
)]
mod bundle;
mod change;
mod column_batch;
mod commands;
#[allow(unsafe_code, reason = "a component's type-erased drop function")]
mod component;
mod dynamic;
mod entity;
#[cfg(feature = "serde")]
mod entity_serde;
mod error;
#[allow(
    unsafe_code,
    reason = "EventReader and EventWriter are system parameters (an unsafe trait)"
)]
mod event;
mod hooks;
mod map_entities;
mod observer;
#[allow(
    unsafe_code,
    reason = "fetches hand out references into columns by row"
)]
mod query;
mod relation;
#[allow(
    unsafe_code,
    reason = "RemovedComponents is a system parameter (an unsafe trait)"
)]
mod removed;
mod resource;
#[allow(unsafe_code, reason = "type-erased columns, sparse sets and resources")]
mod storage;
#[allow(
    unsafe_code,
    reason = "the system-parameter contract and the parallel executor's world access"
)]
mod system;
mod time;
mod world;

pub use archetype::{Archetype, ArchetypeId};
pub use bundle::Bundle;
pub use change::Tick;
pub use column_batch::{BatchColumn, ColumnBatch, ColumnBatchError};
pub use commands::{CommandBuffer, CommandError, CommandErrors, Commands};
pub use component::{
    short_type_name, CloneBehavior, Component, ComponentId, ComponentInfo, StorageType,
};
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
    Access, Added, Changed, Has, Or, Populated, Query, QueryChunk, QueryCombinations, QueryData,
    QueryFilter, QueryIter, QueryParChunks, QueryParIter, QuerySingleError, QueryState,
    ReadOnlyQueryData, Ref, Single, With, Without,
};
pub use relation::{
    ChildOf, ChildSpawner, Children, OnRelate, OnTargetDespawn, OnUnrelate, ParentFirst, Relation,
    RelationError, Relationship, Sources,
};
pub use removed::RemovedComponents;
pub use resource::{Res, ResMut};
pub use storage::ResourceId;
pub use system::{
    in_state, FixedTime, FixedUpdate, NextState, OnEnter, OnExit, OnTransition, ScheduleLabel,
    State, StateScoped, States,
};
pub use system::{
    log_error, panic_on_error, ErrorContext, ErrorHandler, IntoSystemConfigs, IntoSystemOutput,
    ObserverFunction, RunSystemError, SystemConfigs, SystemError, SystemId, SystemResult,
    SystemSkip,
};
pub use system::{
    not, on_event, resource_added, resource_changed, resource_exists, CombinedCondition, Condition,
    ExecutorKind, IntoSystem, Local, NotCondition, Schedule, ScheduleError, SetConfig, System,
    SystemAccess, SystemConfig, SystemMeta, SystemParam, SystemParamFunction, SystemParamItem,
    SystemTiming, SystemTimings,
};
pub use time::Time;
pub use world::{
    BuiltEntity, Disabled, DynamicBundle, DynamicInsertError, DynamicMut, DynamicQueryError,
    EntitiesSnapshot, EntityBuilder, EntityRef, EntityWorldMut, MemoryReport, Name,
    RestoreEntitiesError, SparseMut, SparseMutError, SparseSetMemory, TableMemory, TakenEntity,
    World, WorldId,
};

/// Derive macros: `#[derive(Component)]`, `#[derive(Bundle)]`,
/// `#[derive(MapEntities)]`, `#[derive(SystemParam)]`, `#[derive(States)]`
/// and `#[derive(Relation)]` (see [`Relationship`]).
pub use mosaic_macros::{Bundle, Component, MapEntities, Relation, States, SystemParam};

/// The names most programs need: `use mosaic::prelude::*;`.
pub mod prelude {
    pub use crate::{
        in_state, FixedTime, FixedUpdate, NextState, OnEnter, OnExit, OnTransition, State,
        StateScoped, States,
    };
    pub use crate::{
        log_error, panic_on_error, ErrorContext, IntoSystemConfigs, Populated, RunSystemError,
        Single, SystemError, SystemId, SystemParam, SystemResult,
    };
    pub use crate::{not, on_event, resource_added, resource_changed, resource_exists, Condition};
    pub use crate::{
        Added, Bundle, Changed, CommandBuffer, Commands, Component, ComponentError, DeferredWorld,
        Disabled, DynamicBundle, Entity, EntityBuilder, EntityError, EventReader, EventWriter,
        ExecutorKind, Has, Local, MapEntities, Name, OnAdd, OnDespawn, OnInsert, OnRemove, OnSpawn,
        Or, Query, QueryEntityError, QuerySingleError, QueryState, RemovedComponents, Res, ResMut,
        Schedule, ScheduleError, StorageType, Time, Trigger, With, Without, World,
    };
    pub use crate::{
        ChildOf, Children, OnRelate, OnTargetDespawn, OnUnrelate, ParentFirst, Relation,
        RelationError, Relationship, Sources,
    };
}

/// Items the derive macros name. Not part of the public API.
#[doc(hidden)]
pub mod __macro {
    pub use crate::bundle::{ComponentReader, ComponentRegistrar, ComponentWriter};
    pub use crate::component::{CloneProbe, ViaClone, ViaSkip};
    pub use crate::query::TickRange;
}
