//! mosaic: a fast, sound, complete Entity-Component-System for Rust.
//!
//! A [`World`] holds entities ([`Entity`]: ids) with components (plain Rust
//! types with `#[derive(Component)]`); queries visit every entity with the
//! components they name; systems (plain functions whose parameters say
//! what they touch) run in a [`Schedule`], in parallel where their access
//! allows. Around that: resources, commands, events, observers, hooks,
//! required components, change detection, relations and hierarchies,
//! states, a fixed step, one-shot systems, disabling, and, with the default
//! `serde` feature, scenes and prefabs in [`scene`].
//!
//! Depend on the package `mosaic-ecs`; the library is `mosaic`:
//!
//! ```toml
//! [dependencies]
//! mosaic-ecs = { path = "../mosaic/mosaic" }
//! ```
//!
//! ```
//! use mosaic::prelude::*;
//! use std::time::Duration;
//!
//! #[derive(Component, Debug, PartialEq)]
//! struct Position(f32);
//! #[derive(Component)]
//! struct Velocity(f32);
//!
//! fn movement(time: Res<Time>, mut q: Query<(&mut Position, &Velocity)>) {
//!     for (p, v) in &mut q {
//!         p.0 += v.0 * time.delta_secs();
//!     }
//! }
//!
//! let mut world = World::new();
//! let ball = world.spawn((Position(0.0), Velocity(2.0)));
//! let mut schedule = Schedule::new();
//! schedule.add_systems(movement);
//! schedule.run_frames(&mut world, 4, Duration::from_millis(250)); // one second
//! assert_eq!(world.get::<Position>(ball), Ok(&Position(2.0)));
//! ```
//!
//! Where to read next: the guide in the repository's `docs/guide/` (one
//! chapter per concept, every code block tested; `mdbook build
//! docs/guide` makes it a book), one example per concept in `examples/`
//! (`cargo run --example states`), and in these docs the [`World`],
//! [`Query`], [`Schedule`] and [`Commands`] pages.
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

/// The guide's chapters (`docs/guide/src/`, an mdBook), compiled here so
/// that `cargo test` runs every code block in them as a doc test. Only
/// under `cfg(doctest)`: the guide is read as a book, not in rustdoc. The
/// inspector's chapter is tested by `mosaic-inspect`, whose crate it needs.
#[cfg(doctest)]
pub mod guide {
    macro_rules! chapter {
        ($name:ident, $file:literal) => {
            #[doc = include_str!(concat!("../../docs/guide/src/", $file))]
            pub struct $name;
        };
    }
    chapter!(Introduction, "introduction.md");
    chapter!(Entities, "entities.md");
    chapter!(Queries, "queries.md");
    chapter!(Systems, "systems.md");
    chapter!(Resources, "resources.md");
    chapter!(Commands, "commands.md");
    chapter!(Events, "events.md");
    chapter!(Observers, "observers.md");
    chapter!(Required, "required.md");
    chapter!(ChangeDetection, "change_detection.md");
    chapter!(Relations, "relations.md");
    chapter!(States, "states.md");
    chapter!(FixedStep, "fixed_step.md");
    chapter!(OneShot, "one_shot.md");
    chapter!(Disabling, "disabling.md");
    chapter!(Rollback, "rollback.md");
    chapter!(Parallelism, "parallelism.md");
    chapter!(Performance, "performance.md");
    chapter!(Soundness, "soundness.md");
    chapter!(FromBevy, "from_bevy.md");
    chapter!(FromHecs, "from_hecs.md");
    #[cfg(feature = "serde")]
    chapter!(Scenes, "scenes.md");
}

/// The README's code (its tour), run as a doc test so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// Scenes, prefabs, save and load: the `mosaic-scene` crate (default
/// `serde` feature).
#[cfg(feature = "serde")]
#[doc(inline)]
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
