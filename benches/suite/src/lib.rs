//! ecs_bench_suite workloads for mosaic and its peers.
//!
//! Every library lives in `libs/<name>.rs` and exposes one struct per
//! workload it can run (`SimpleInsert`, `SimpleIter`, `FragIter`,
//! `HeavyCompute`, `Schedule`, `AddRemove`, `SerializeText`,
//! `SerializeBinary`), each with `new()` (setup, untimed) and `run()` (one
//! timed iteration); `SimpleInsert`, `SimpleIter` and `AddRemove` also take
//! an entity count (`with_entities(n)`). A library that cannot do a workload
//! simply has no struct for it.
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
