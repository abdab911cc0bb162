//! ecs_bench_suite workloads for mosaic and its peers.
//!
//! Every library lives in `libs/<name>.rs` and exposes one struct per
//! workload it can run (`SimpleInsert`, `SimpleIter`, `FragIter`,
//! `JoinFilter`, `RandomGet`, `HeavyCompute`, `Schedule`, `AddRemove`,
//! `Despawn`, `SerializeText`, `SerializeBinary`), each with `new()` (setup,
//! untimed) and `run()` (one timed iteration); `Despawn` also has
//! `prepare()` (untimed, before every `run()`: spawns the entities to
//! despawn); `SimpleInsert`, `SimpleIter` and `AddRemove` also take an
//! entity count (`with_entities(n)`). A library that cannot do a workload
//! simply has no struct for it.
//!
//! Each library's row is written the way its users write it: plain `for`
//! loops over its queries (flecs: `query.each`, its documented form;
//! heavy_compute is parallel for everyone), default storage, the calls its
//! docs show first. The headline `mosaic` row follows that rule too;
//! mosaic's tuned forms are labelled extra columns: `mosaic_for_each`
//! (`.for_each` closures), `mosaic_sparse` (opt-in sparse-set storage) and
//! `mosaic_query` (random_get through a kept `QueryState`).
//!
//! `plain_vec` is the floor: the same data in plain `Vec`s with no ECS.
//! For join_filter it times the body's loop both as LLVM vectorises it and
//! kept scalar, and runs the faster on the machine (see
//! `libs::plain::JoinFilter`): which wins depends on the processor, and a
//! floor built from one of them was beaten by bevy's scalar loop.
//!
//! Workloads beyond ecs_bench_suite's: join_filter (a 3-component join
//! with a `Without<Frozen>` filter), random_get (get + get_mut by entity
//! handle in a shuffled order) and despawn (10k entities, only the
//! despawning timed).
//!
//! [`registry`] lists every (workload, library) row once; both consumers
//! read it: `benches/suite.rs` (criterion, one group per workload) and the
//! `report` command in `src/main.rs` (interleaved samples, markdown tables,
//! SVG chart, peak RSS, scaling).

// Workload structs are built with `new()` as in the upstream suite; a
// `Default` impl per struct would add nothing.
#![allow(clippy::new_without_default)]

pub mod data;
pub mod registry;

pub mod libs {
    pub mod bevy;
    pub mod flecs;
    pub mod hecs;
    pub mod legion;
    #[cfg(feature = "mosaic")]
    pub mod mosaic;
    pub mod plain;
    pub mod shipyard;
    pub mod specs;
}
