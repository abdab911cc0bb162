#![doc = include_str!("../README.md")]
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
//! `unsafe` code lives only in `storage/` and `query/`; every block names the
//! invariant it relies on.

extern crate self as mosaic;

mod archetype;
mod bundle;
mod change;
mod component;
mod entity;
mod error;
mod query;
mod storage;
mod world;

pub use archetype::{Archetype, ArchetypeId};
pub use bundle::Bundle;
pub use change::Tick;
pub use component::{Component, ComponentId, ComponentInfo, StorageType};
pub use entity::Entity;
pub use error::{ComponentError, EntityError, QueryEntityError};
pub use query::{
    Added, Changed, Has, Or, QueryData, QueryFilter, QueryIter, QueryState, ReadOnlyQueryData,
    With, Without,
};
pub use world::{World, WorldId};

/// Derive macros: `#[derive(Component)]` and `#[derive(Bundle)]`.
pub use mosaic_macros::{Bundle, Component};

/// The names most programs need: `use mosaic::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Added, Bundle, Changed, Component, ComponentError, Entity, EntityError, Has, Or,
        QueryEntityError, QueryState, StorageType, With, Without, World,
    };
}

/// Items the derive macros name. Not part of the public API.
#[doc(hidden)]
pub mod __macro {
    pub use crate::bundle::{ComponentReader, ComponentRegistrar, ComponentWriter};
}
