//! The core of the mosaic ECS (package `mosaic-core`): entities,
//! components, storage, queries, systems, events, observers, hooks and
//! required components, columnar spawning. Programs depend on `mosaic-ecs`
//! (library `mosaic`), which re-exports all of this and, behind its default
//! `serde` feature, the scenes of `mosaic-scene`; the guide is
//! `docs/guide/` in the repository. This crate has no serde dependency and knows nothing of scenes:
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
//! `event` and `removed`), the `Bundle` trait's reader contract in `bundle`,
//! the type-erased drop in `component` and the column hints' reads in
//! `archetype` (which owns the tables they point to); every block names the invariant
//! it relies on. The compiler holds that fence: the crate denies
//! `unsafe_code`, and only those modules allow it.

#![deny(unsafe_code)]

extern crate self as mosaic;

#[allow(
    unsafe_code,
    reason = "column hints: pointers to the columns of tables the archetypes own"
)]
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
mod platform;
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
pub mod rollback;
#[allow(unsafe_code, reason = "type-erased columns, sparse sets and resources")]
mod storage;
#[allow(
    unsafe_code,
    reason = "the system-parameter contract and the parallel executor's world access"
)]
mod system;
mod time;
mod timer;
mod world;

pub use archetype::{Archetype, ArchetypeId};
pub use bundle::Bundle;
pub use change::{DetectChanges, DetectChangesMut, Tick};
pub use column_batch::{BatchColumn, ColumnBatch, ColumnBatchError};
pub use commands::{
    ChildSpawnerCommands, CommandBuffer, CommandError, CommandErrors, Commands, EntityCommands,
};
pub use component::{
    CloneBehavior, Component, ComponentId, ComponentInfo, StorageType, short_type_name,
};
pub use dynamic::{ComponentSchema, DynamicComponent, FieldType, FieldValue, SchemaError};
pub use entity::{Entity, EntityLocation};
pub use error::{ComponentError, EntityError, QueryEntityError};
pub use event::{Event, EventCursor, EventReader, EventWriter, Events};
pub use hooks::{
    ComponentHook, ComponentHooks, HookContext, RequiredComponents, RequiredCycleError,
};
pub use map_entities::{EntityMapper, MapEntities};
pub use observer::{
    AnyComponent, DeferredWorld, LifecycleEvent, LifecycleKind, MAX_OBSERVER_ROUNDS, ObserverEvent,
    ObserverId, OnAdd, OnDespawn, OnInsert, OnRemove, OnSpawn, Trigger,
};
pub use platform::{SetClockError, set_clock};
pub use query::{
    Access, Added, Changed, Has, Mut, Or, Populated, Query, QueryChunk, QueryCombinations,
    QueryData, QueryFilter, QueryIter, QueryMut, QueryMutIter, QueryParChunks, QueryParIter,
    QuerySingleError, QueryState, ReadOnlyQueryData, Ref, Single, With, Without,
};
pub use relation::{
    ChildOf, ChildSpawner, Children, OnRelate, OnTargetDespawn, OnUnrelate, ParentFirst, Relation,
    RelationError, RelationSide, Relationship, Sources,
};
pub use removed::RemovedComponents;
pub use resource::{FromWorld, Res, ResMut, Resource};
pub use rollback::{RestoreReport, RollbackError, Snapshot, SnapshotRing};
pub use storage::ResourceId;
pub use system::{
    CombinedCondition, Condition, ExecutorKind, In, IntoSystem, Local, NotCondition, ParamSet,
    PipeSystem, Schedule, ScheduleError, SetConfig, System, SystemAccess, SystemConfig, SystemMeta,
    SystemParam, SystemParamFunction, SystemParamItem, SystemTiming, SystemTimings,
    any_with_component, not, on_event, resource_added, resource_changed, resource_exists, run_once,
};
pub use system::{
    ErrorContext, ErrorHandler, IntoLabel, IntoSetConfigs, IntoSystemConfigs, IntoSystemOutput,
    ObserverFunction, RunSystemError, SetConfigs, SystemConfigs, SystemError, SystemId,
    SystemResult, SystemSet, SystemSkip, log_error, panic_on_error,
};
pub use system::{
    FixedTime, FixedUpdate, NextState, OnEnter, OnExit, OnTransition, ScheduleLabel, State,
    StateScoped, States, in_state,
};
pub use time::{FrameTime, Time};
pub use timer::{Timer, TimerMode};
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

/// Bevy's derives, for the names a Bevy program types first:
/// `#[derive(Resource)]` and `#[derive(Event)]` are markers (mosaic needs
/// none: every `Send + Sync + 'static` type is a [`Resource`](trait@Resource)
/// and an [`Event`](trait@Event); the derive checks that bound);
/// `#[derive(SystemSet)]` makes a type a [set label](trait@SystemSet).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Resource, Default)]
/// struct Score(u32);
/// #[derive(Event)]
/// struct Scored(u32);
/// #[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
/// struct Scoring;
/// fn score(mut events: EventReader<Scored>, mut total: ResMut<Score>) {
///     for e in events.read() {
///         total.0 += e.0;
///     }
/// }
/// let mut world = World::new();
/// world.init_resource::<Score>();
/// world.send_event(Scored(5));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(score.in_set(Scoring));
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Score>().0, 5);
/// ```
pub use mosaic_macros::{Event, Resource, SystemSet};

/// Derives [`QueryData`](trait@QueryData) for a struct of query fields:
/// named fields instead of a long tuple.
///
/// Each field is a query item at the struct's one lifetime (the world
/// borrow): `&'w T`, `&'w mut T`, `Entity`, `Option<..>` of those,
/// [`Has<T>`](Has) (the field then holds a `Has<T>` that dereferences to
/// `bool`), [`Ref<'w, T>`](Ref), a tuple of those, or another derived
/// struct. The query yields the struct itself, so `m.pos` is a
/// `&mut Position`. A struct with no references needs no lifetime; tuple
/// structs and generic structs derive too (write the bounds, e.g.
/// `T: Component`).
///
/// The struct is the tuple of its field types under another name: it
/// borrows what the tuple would, conflicting `&mut` access is refused as
/// for the tuple, and it iterates as fast. It implements
/// [`ReadOnlyQueryData`] when no field writes, so `iter(&world)` and
/// `get(&world, e)` take it; a struct with a `&mut` field needs
/// `iter_mut(&mut world)`. The derived impl names the field types, so a
/// `pub` struct needs `pub` component types (Rust's private-in-public rule,
/// error E0446); a private struct may use any. (Bevy's derive declares
/// fields `&'static T` and generates a separate `…Item<'w>` struct; here,
/// as in hecs's `#[derive(Query)]`, the struct is its own item.)
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Component)] struct Velocity(f32);
/// #[derive(Component)] struct Frozen;
///
/// #[derive(QueryData)]
/// struct Mover<'w> {
///     pos: &'w mut Position,
///     vel: &'w Velocity,
/// }
///
/// #[derive(QueryData)]
/// struct Status<'w> {
///     entity: Entity,
///     pos: &'w Position,
///     frozen: Has<Frozen>,
/// }
///
/// let mut world = World::new();
/// let a = world.spawn((Position(0.0), Velocity(2.0)));
/// world.spawn((Position(5.0), Frozen));
///
/// let mut movers = world.query::<Mover>();
/// for m in movers.iter_mut(&mut world) {
///     m.pos.0 += m.vel.0;
/// }
///
/// // Read-only: `iter` with a shared world.
/// let mut status = world.query::<Status>();
/// for s in status.iter(&world) {
///     assert_eq!(s.pos.0, if s.entity == a { 2.0 } else { 5.0 });
///     assert_eq!(*s.frozen, s.entity != a);
/// }
///
/// // In a system.
/// fn movement(mut q: Query<Mover>) {
///     for m in q.iter_mut() {
///         m.pos.0 += m.vel.0;
///     }
/// }
/// let mut schedule = Schedule::new();
/// schedule.add_systems(movement);
/// schedule.run(&mut world);
/// assert_eq!(world.get::<Position>(a).unwrap().0, 4.0);
/// ```
pub use mosaic_macros::QueryData;

/// Derives [`QueryFilter`](trait@QueryFilter) for a struct whose fields are
/// filters: all must hold, as for the tuple of the field types.
///
/// Fields are typed with the filters themselves ([`With<T>`](With),
/// [`Without<T>`](Without), [`Added<T>`](Added), [`Changed<T>`](Changed),
/// [`Or<..>`](Or), a tuple of those, or another derived filter). Their
/// names are free (the values are never built); tuple structs derive too.
/// As for the data derive, a `pub` struct needs `pub` component types.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Component)] struct Velocity(f32);
/// #[derive(Component)] struct Frozen;
///
/// #[derive(QueryFilter)]
/// struct Movable {
///     _moves: With<Velocity>,
///     _not_frozen: Without<Frozen>,
/// }
///
/// let mut world = World::new();
/// world.spawn((Position(0.0), Velocity(1.0)));
/// world.spawn((Position(0.0), Velocity(1.0), Frozen));
/// world.spawn(Position(0.0));
/// let mut q = world.query_filtered::<&mut Position, Movable>();
/// for p in q.iter_mut(&mut world) {
///     p.0 += 1.0;
/// }
/// let mut moved = world.query_filtered::<&Position, Movable>();
/// assert_eq!(moved.iter(&world).count(), 1);
/// ```
pub use mosaic_macros::QueryFilter;

/// The names most programs need: `use mosaic::prelude::*;`.
pub mod prelude {
    /// Teaching errors for Bevy habits (see `change::PlainRefChangeHint`).
    #[doc(hidden)]
    pub use crate::change::PlainRefChangeHint as _;
    pub use crate::{
        Added, Bundle, Changed, CommandBuffer, Commands, Component, ComponentError, DeferredWorld,
        Disabled, DynamicBundle, Entity, EntityBuilder, EntityCommands, EntityError, EntityRef,
        EntityWorldMut, EventReader, EventWriter, Events, ExecutorKind, Has, Local, MapEntities,
        Name, OnAdd, OnDespawn, OnInsert, OnRemove, OnSpawn, Or, Query, QueryEntityError,
        QuerySingleError, QueryState, Ref, RemovedComponents, Res, ResMut, Schedule, ScheduleError,
        StorageType, Time, Timer, TimerMode, Trigger, With, Without, World,
    };
    pub use crate::{
        ChildOf, Children, OnRelate, OnTargetDespawn, OnUnrelate, ParentFirst, Relation,
        RelationError, Relationship, Sources,
    };
    pub use crate::{Condition, not, on_event, resource_added, resource_changed, resource_exists};
    pub use crate::{
        DetectChanges, DetectChangesMut, Event, FromWorld, IntoSetConfigs, Mut, Resource,
        SystemSet, any_with_component, run_once,
    };
    pub use crate::{
        ErrorContext, IntoSystemConfigs, ParamSet, Populated, RunSystemError, Single, SystemError,
        SystemId, SystemParam, SystemResult, log_error, panic_on_error,
    };
    pub use crate::{
        FixedTime, FixedUpdate, FrameTime, NextState, OnEnter, OnExit, OnTransition, State,
        StateScoped, States, in_state,
    };
    pub use crate::{In, IntoSystem};
    /// The derives and their traits: `#[derive(QueryData)]`,
    /// `#[derive(QueryFilter)]`.
    pub use crate::{QueryData, QueryFilter};
}

/// Items the derive macros name. Not part of the public API.
#[doc(hidden)]
pub mod __macro {
    pub use crate::bundle::{ComponentReader, ComponentRegistrar, ComponentWriter};
    pub use crate::component::{CloneProbe, ViaClone, ViaSkip};
    pub use crate::hooks::call_hook;
    pub use crate::query::{FromQueryItem, TickRange};
    pub use crate::rollback::{
        FieldProbe, HashFields, HashProbe, RollbackHash, RollbackRegistration, ViaFieldBits,
        ViaFieldHash, ViaFieldNone, ViaHash, ViaNoHash,
    };
}
