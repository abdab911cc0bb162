//! Storage: where component values live.
//!
//! Two kinds, chosen per component type:
//! - [`Table`]: one per archetype; a [`Column`] per table component, one row
//!   per entity. Iteration is a walk over column slices.
//! - [`SparseSet`]: one per sparse component type; values packed densely,
//!   found by entity index. Adding or removing one touches nothing else.
//!
//! # Safety policy
//!
//! This module and `query/` hold the `unsafe` code (plus the scheduler's
//! single contract, `System::run_unsafe`, in `system/`). Raw
//! layout arithmetic lives in [`column`] alone; tables and sparse sets talk to
//! columns through typed rows. Every type here states its invariants on its
//! doc and every `unsafe` block names the one it relies on.
//!
//! # Panics while dropping
//!
//! A component's `Drop` may panic. Storage never drops a value twice and never
//! leaves an uninitialised value readable: it finishes the structural change
//! it is in (catching the panic), then re-raises the first panic. Values not
//! yet dropped when a second panic strikes may leak.

pub(crate) mod batch;
pub(crate) mod bundle_io;
pub(crate) mod column;
pub(crate) mod column_hints;
pub(crate) mod command_queue;
pub(crate) mod parts;
pub(crate) mod resources;
pub(crate) mod sparse_set;
pub(crate) mod table;

pub(crate) use column::{BlockTick, Column, TakenSlot, block_of};
pub(crate) use column_hints::ColumnHints;
pub(crate) use command_queue::CommandQueue;
pub use resources::ResourceId;
pub(crate) use resources::{ResourceTicks, Resources};
pub(crate) use sparse_set::{SparseSet, SparseSets};
pub(crate) use table::{ColumnMap, DisabledRows, Table};

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

/// Collects the first panic of a series of user callbacks (drops, hooks) so
/// the caller can finish restoring its invariants before re-raising it.
#[derive(Default)]
pub(crate) struct DeferredPanic {
    payload: Option<Box<dyn Any + Send>>,
}

impl DeferredPanic {
    #[inline]
    pub fn new() -> Self {
        DeferredPanic { payload: None }
    }

    /// Runs `f`, keeping its panic (if any) for later.
    #[inline]
    pub fn run(&mut self, f: impl FnOnce()) {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
            self.payload.get_or_insert(payload);
        }
    }

    /// Runs `f`, keeping its panic (if any) for later; true if `f`
    /// returned rather than panicked.
    #[inline]
    pub fn completes(&mut self, f: impl FnOnce()) -> bool {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(()) => true,
            Err(payload) => {
                self.payload.get_or_insert(payload);
                false
            }
        }
    }

    /// True if a panic was caught.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.payload.is_some()
    }

    /// Re-raises the first panic caught, if any.
    #[inline]
    pub fn resume(self) {
        if let Some(payload) = self.payload {
            resume_unwind(payload);
        }
    }
}

/// Aborts the process when dropped: armed (and then forgotten) across a step
/// that must not unwind, where a value read out of storage but not yet
/// forgotten there would otherwise be owned, and dropped, twice.
pub(crate) struct AbortOnUnwind(pub &'static str);

impl Drop for AbortOnUnwind {
    #[cold]
    fn drop(&mut self) {
        eprintln!("mosaic: panic while {}; aborting", self.0);
        std::process::abort();
    }
}
