//! The one list of (workload, library) rows, shared by the criterion bench
//! (`benches/suite.rs`) and the report command (`src/main.rs`).
//!
//! A row's `setup` builds the library's workload struct (untimed) and returns
//! a [`Batch`]: a closure that runs the workload `iters` times back to back
//! and returns the wall time of the whole batch. The loop is monomorphised
//! per row, so the only dynamic call is the one per batch (criterion's
//! `iter_custom` and the report's sampler both time batches). A row marked
//! `, prepared` (despawn) also has a `prepare()` that is called before every
//! `run()` outside the timed region; its batch returns the sum of the
//! `run()` times only.
//!
//! Every library's row is its idiomatic form (plain `for` loops, default
//! storage, the calls its docs show first); mosaic's tuned forms are extra
//! columns of their own (`mosaic_for_each`, `mosaic_sparse`), so the
//! headline `mosaic` column is what a user writes.
//!
//! To add a row: give the library a struct for the workload (`new()` +
//! `run()`), then add one line to [`rows`] (and to [`scaled_rows`] if the
//! struct also has `with_entities(n)`).

use std::time::{Duration, Instant};

use crate::libs;

/// Runs the workload `iters` times and returns the elapsed wall time.
pub type Batch = Box<dyn FnMut(u64) -> Duration>;

/// The workloads, in the order the suite and the report print them.
pub const WORKLOADS: [&str; 11] = [
    "simple_insert",
    "simple_iter",
    "fragmented_iter",
    "join_filter",
    "random_get",
    "heavy_compute",
    "schedule",
    "add_remove",
    "despawn",
    "serialize_text",
    "serialize_binary",
];

/// What a library is in a comparison.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// A mosaic column: the headline `mosaic` (idiomatic form) or a labelled
    /// tuned variant (`mosaic_for_each`, `mosaic_sparse`, `mosaic_query`).
    Mosaic,
    /// Another ECS.
    Peer,
    /// The hand-written no-ECS floor (`plain_vec`).
    Baseline,
}

/// The libraries (report columns), in order, with their kind.
pub const LIBRARIES: [(&str, Kind); 11] = [
    ("mosaic", Kind::Mosaic),
    ("mosaic_for_each", Kind::Mosaic),
    ("mosaic_sparse", Kind::Mosaic),
    ("mosaic_query", Kind::Mosaic),
    ("bevy", Kind::Peer),
    ("hecs", Kind::Peer),
    ("legion", Kind::Peer),
    ("shipyard", Kind::Peer),
    ("specs", Kind::Peer),
    ("flecs", Kind::Peer),
    ("plain_vec", Kind::Baseline),
];

/// The headline mosaic column; the other [`Kind::Mosaic`] columns are its
/// tuned variants.
pub const MOSAIC: &str = "mosaic";

/// The kind of `library` (unknown names count as peers).
pub fn kind(library: &str) -> Kind {
    LIBRARIES
        .iter()
        .find(|(name, _)| *name == library)
        .map_or(Kind::Peer, |&(_, kind)| kind)
}

/// One (workload, library) pair at the suite's standard size.
#[derive(Clone, Copy)]
pub struct Row {
    pub workload: &'static str,
    pub library: &'static str,
    pub setup: fn() -> Batch,
}

/// One (workload, library) pair whose entity count is a parameter.
#[derive(Clone, Copy)]
pub struct ScaledRow {
    pub workload: &'static str,
    pub library: &'static str,
    pub setup: fn(usize) -> Batch,
}

/// Wraps a built workload in a [`Batch`] timing `iters` calls of `run()`.
macro_rules! batch {
    ($bench:expr) => {{
        let mut bench = $bench;
        Box::new(move |iters: u64| {
            let start = Instant::now();
            for _ in 0..iters {
                bench.run();
            }
            start.elapsed()
        }) as Batch
    }};
}

/// Wraps a built workload with `prepare()` in a [`Batch`]: each of the
/// `iters` iterations calls `prepare()` untimed, then times `run()`; the
/// batch returns the sum of the `run()` times.
macro_rules! batch_prepared {
    ($bench:expr) => {{
        let mut bench = $bench;
        Box::new(move |iters: u64| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                bench.prepare();
                let start = Instant::now();
                bench.run();
                timed += start.elapsed();
            }
            timed
        }) as Batch
    }};
}

/// `batch!` for a plain row, `batch_prepared!` for a row marked `, prepared`.
macro_rules! timed {
    ($bench:expr, prepared) => {
        batch_prepared!($bench)
    };
    ($bench:expr) => {
        batch!($bench)
    };
}

macro_rules! row_list {
    ($( $(#[$attr:meta])* $workload:literal, $library:literal => $ty:ty $(, $prepared:ident)?; )*) => {
        /// Every (workload, library) row, in [`WORKLOADS`] then [`LIBRARIES`] order.
        pub fn rows() -> Vec<Row> {
            let mut rows = Vec::new();
            $(
                $(#[$attr])*
                rows.push(Row {
                    workload: $workload,
                    library: $library,
                    setup: || timed!(<$ty>::new() $(, $prepared)?),
                });
            )*
            rows
        }
    };
}

macro_rules! scaled_row_list {
    ($( $(#[$attr:meta])* $workload:literal, $library:literal => $ty:ty; )*) => {
        /// The rows whose entity count can be chosen (`with_entities(n)`):
        /// simple_insert, simple_iter and add_remove (the report's RSS and
        /// scaling tables).
        pub fn scaled_rows() -> Vec<ScaledRow> {
            let mut rows = Vec::new();
            $(
                $(#[$attr])*
                rows.push(ScaledRow {
                    workload: $workload,
                    library: $library,
                    setup: |n| batch!(<$ty>::with_entities(n)),
                });
            )*
            rows
        }
    };
}

row_list! {
    #[cfg(feature = "mosaic")]
    "simple_insert", "mosaic" => libs::mosaic::SimpleInsert;
    "simple_insert", "bevy" => libs::bevy::SimpleInsert;
    "simple_insert", "hecs" => libs::hecs::SimpleInsert;
    "simple_insert", "legion" => libs::legion::SimpleInsert;
    "simple_insert", "shipyard" => libs::shipyard::SimpleInsert;
    "simple_insert", "specs" => libs::specs::SimpleInsert;
    "simple_insert", "flecs" => libs::flecs::SimpleInsert;
    "simple_insert", "plain_vec" => libs::plain::SimpleInsert;

    #[cfg(feature = "mosaic")]
    "simple_iter", "mosaic" => libs::mosaic::SimpleIter;
    #[cfg(feature = "mosaic")]
    "simple_iter", "mosaic_for_each" => libs::mosaic::SimpleIterForEach;
    "simple_iter", "bevy" => libs::bevy::SimpleIter;
    "simple_iter", "hecs" => libs::hecs::SimpleIter;
    "simple_iter", "legion" => libs::legion::SimpleIter;
    "simple_iter", "shipyard" => libs::shipyard::SimpleIter;
    "simple_iter", "specs" => libs::specs::SimpleIter;
    "simple_iter", "flecs" => libs::flecs::SimpleIter;
    "simple_iter", "plain_vec" => libs::plain::SimpleIter;

    #[cfg(feature = "mosaic")]
    "fragmented_iter", "mosaic" => libs::mosaic::FragIter;
    #[cfg(feature = "mosaic")]
    "fragmented_iter", "mosaic_for_each" => libs::mosaic::FragIterForEach;
    #[cfg(feature = "mosaic")]
    "fragmented_iter", "mosaic_sparse" => libs::mosaic::FragIterSparse;
    "fragmented_iter", "bevy" => libs::bevy::FragIter;
    "fragmented_iter", "hecs" => libs::hecs::FragIter;
    "fragmented_iter", "legion" => libs::legion::FragIter;
    "fragmented_iter", "shipyard" => libs::shipyard::FragIter;
    "fragmented_iter", "specs" => libs::specs::FragIter;
    "fragmented_iter", "flecs" => libs::flecs::FragIter;
    "fragmented_iter", "plain_vec" => libs::plain::FragIter;

    #[cfg(feature = "mosaic")]
    "join_filter", "mosaic" => libs::mosaic::JoinFilter;
    #[cfg(feature = "mosaic")]
    "join_filter", "mosaic_for_each" => libs::mosaic::JoinFilterForEach;
    "join_filter", "bevy" => libs::bevy::JoinFilter;
    "join_filter", "hecs" => libs::hecs::JoinFilter;
    "join_filter", "legion" => libs::legion::JoinFilter;
    "join_filter", "shipyard" => libs::shipyard::JoinFilter;
    "join_filter", "specs" => libs::specs::JoinFilter;
    "join_filter", "flecs" => libs::flecs::JoinFilter;
    "join_filter", "plain_vec" => libs::plain::JoinFilter;

    #[cfg(feature = "mosaic")]
    "random_get", "mosaic" => libs::mosaic::RandomGet;
    #[cfg(feature = "mosaic")]
    "random_get", "mosaic_query" => libs::mosaic::RandomGetQuery;
    "random_get", "bevy" => libs::bevy::RandomGet;
    "random_get", "hecs" => libs::hecs::RandomGet;
    "random_get", "legion" => libs::legion::RandomGet;
    "random_get", "shipyard" => libs::shipyard::RandomGet;
    "random_get", "specs" => libs::specs::RandomGet;
    "random_get", "flecs" => libs::flecs::RandomGet;
    "random_get", "plain_vec" => libs::plain::RandomGet;

    #[cfg(feature = "mosaic")]
    "heavy_compute", "mosaic" => libs::mosaic::HeavyCompute;
    "heavy_compute", "bevy" => libs::bevy::HeavyCompute;
    "heavy_compute", "hecs" => libs::hecs::HeavyCompute;
    "heavy_compute", "legion" => libs::legion::HeavyCompute;
    "heavy_compute", "shipyard" => libs::shipyard::HeavyCompute;
    "heavy_compute", "specs" => libs::specs::HeavyCompute;
    "heavy_compute", "flecs" => libs::flecs::HeavyCompute;

    #[cfg(feature = "mosaic")]
    "schedule", "mosaic" => libs::mosaic::Schedule;
    #[cfg(feature = "mosaic")]
    "schedule", "mosaic_for_each" => libs::mosaic::ScheduleForEach;
    "schedule", "bevy" => libs::bevy::Schedule;
    "schedule", "legion" => libs::legion::Schedule;
    "schedule", "shipyard" => libs::shipyard::Schedule;
    "schedule", "specs" => libs::specs::Schedule;
    "schedule", "flecs" => libs::flecs::Schedule;

    #[cfg(feature = "mosaic")]
    "add_remove", "mosaic" => libs::mosaic::AddRemove;
    #[cfg(feature = "mosaic")]
    "add_remove", "mosaic_sparse" => libs::mosaic::AddRemoveSparse;
    "add_remove", "bevy" => libs::bevy::AddRemove;
    "add_remove", "hecs" => libs::hecs::AddRemove;
    "add_remove", "legion" => libs::legion::AddRemove;
    "add_remove", "shipyard" => libs::shipyard::AddRemove;
    "add_remove", "specs" => libs::specs::AddRemove;
    "add_remove", "flecs" => libs::flecs::AddRemove;

    #[cfg(feature = "mosaic")]
    "despawn", "mosaic" => libs::mosaic::Despawn, prepared;
    "despawn", "bevy" => libs::bevy::Despawn, prepared;
    "despawn", "hecs" => libs::hecs::Despawn, prepared;
    "despawn", "legion" => libs::legion::Despawn, prepared;
    "despawn", "shipyard" => libs::shipyard::Despawn, prepared;
    "despawn", "specs" => libs::specs::Despawn, prepared;
    "despawn", "flecs" => libs::flecs::Despawn, prepared;

    #[cfg(feature = "mosaic")]
    "serialize_text", "mosaic" => libs::mosaic::SerializeText;
    "serialize_text", "hecs" => libs::hecs::SerializeText;
    "serialize_text", "legion" => libs::legion::SerializeText;
    "serialize_text", "specs" => libs::specs::SerializeText;
    "serialize_text", "plain_vec" => libs::plain::SerializeText;

    #[cfg(feature = "mosaic")]
    "serialize_binary", "mosaic" => libs::mosaic::SerializeBinary;
    "serialize_binary", "hecs" => libs::hecs::SerializeBinary;
    "serialize_binary", "legion" => libs::legion::SerializeBinary;
    "serialize_binary", "specs" => libs::specs::SerializeBinary;
    "serialize_binary", "plain_vec" => libs::plain::SerializeBinary;
}

scaled_row_list! {
    #[cfg(feature = "mosaic")]
    "simple_insert", "mosaic" => libs::mosaic::SimpleInsert;
    "simple_insert", "bevy" => libs::bevy::SimpleInsert;
    "simple_insert", "hecs" => libs::hecs::SimpleInsert;
    "simple_insert", "legion" => libs::legion::SimpleInsert;
    "simple_insert", "shipyard" => libs::shipyard::SimpleInsert;
    "simple_insert", "specs" => libs::specs::SimpleInsert;
    "simple_insert", "flecs" => libs::flecs::SimpleInsert;
    "simple_insert", "plain_vec" => libs::plain::SimpleInsert;

    #[cfg(feature = "mosaic")]
    "simple_iter", "mosaic" => libs::mosaic::SimpleIter;
    #[cfg(feature = "mosaic")]
    "simple_iter", "mosaic_for_each" => libs::mosaic::SimpleIterForEach;
    "simple_iter", "bevy" => libs::bevy::SimpleIter;
    "simple_iter", "hecs" => libs::hecs::SimpleIter;
    "simple_iter", "legion" => libs::legion::SimpleIter;
    "simple_iter", "shipyard" => libs::shipyard::SimpleIter;
    "simple_iter", "specs" => libs::specs::SimpleIter;
    "simple_iter", "flecs" => libs::flecs::SimpleIter;
    "simple_iter", "plain_vec" => libs::plain::SimpleIter;

    #[cfg(feature = "mosaic")]
    "add_remove", "mosaic" => libs::mosaic::AddRemove;
    #[cfg(feature = "mosaic")]
    "add_remove", "mosaic_sparse" => libs::mosaic::AddRemoveSparse;
    "add_remove", "bevy" => libs::bevy::AddRemove;
    "add_remove", "hecs" => libs::hecs::AddRemove;
    "add_remove", "legion" => libs::legion::AddRemove;
    "add_remove", "shipyard" => libs::shipyard::AddRemove;
    "add_remove", "specs" => libs::specs::AddRemove;
    "add_remove", "flecs" => libs::flecs::AddRemove;
}

/// The standard-size row for (workload, library), if the library has one.
pub fn find(workload: &str, library: &str) -> Option<Row> {
    rows()
        .into_iter()
        .find(|row| row.workload == workload && row.library == library)
}

/// The scaled row for (workload, library), if the library has one.
pub fn find_scaled(workload: &str, library: &str) -> Option<ScaledRow> {
    scaled_rows()
        .into_iter()
        .find(|row| row.workload == workload && row.library == library)
}
