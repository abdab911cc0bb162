#![doc = include_str!("../../README.md")]
//!
//! # The crates
//!
//! This crate (`mosaic-ecs`, library `mosaic`) is what programs depend on.
//! It holds no code of its own: it re-exports
//!
//! - the core, `mosaic-core` (library `mosaic_core`: entities, components,
//!   storage, queries,
//!   systems, events, observers, columnar spawning), item for item;
//! - with the default `serde` feature, the scenes of `mosaic-scene` as
//!   [`mosaic::scene`](crate::scene), and its
//!   [`SpawnPrefab`](crate::scene::SpawnPrefab) trait in the [`prelude`].
//!
//! The scene crate is built on the core's public API alone (it has no
//! `unsafe` and no access to storage), so the core builds and tests without
//! it and without serde: `cargo tree -p mosaic-ecs --no-default-features`
//! lists no serde crate. Cargo refuses a cycle of packages even through an
//! optional dependency, which is why this crate, and not the core, re-exports
//! the scenes.
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
//! `unsafe` code lives in the core's `storage/` and `query/`, plus the
//! scheduler's one contract in `system/`; every block names the invariant
//! it relies on.

pub use mosaic_core::*;

/// Scenes, prefabs, save and load: the `mosaic-scene` crate (default
/// `serde` feature).
#[cfg(feature = "serde")]
pub use mosaic_scene as scene;

/// The names most programs need: `use mosaic::prelude::*;`. The core's
/// prelude, and with the `serde` feature
/// [`SpawnPrefab`](crate::scene::SpawnPrefab) (so `world.spawn_prefab(..)`
/// needs no import of its own).
pub mod prelude {
    pub use mosaic_core::prelude::*;

    #[cfg(feature = "serde")]
    pub use mosaic_scene::SpawnPrefab;
}
