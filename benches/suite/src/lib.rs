//! ecs_bench_suite workloads for mosaic and its peers.
//!
//! Every library lives in `libs/<name>.rs` and exposes one struct per
//! workload it can run (`SimpleInsert`, `SimpleIter`, `FragIter`,
//! `HeavyCompute`, `Schedule`, `AddRemove`, `SerializeText`,
//! `SerializeBinary`), each with `new()` (setup, untimed) and `run()` (one
//! timed iteration). `benches/suite.rs` registers them, one criterion group
//! per workload. A library that cannot do a workload simply has no struct
//! for it.

pub mod data;

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
