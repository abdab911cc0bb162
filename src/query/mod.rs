//! Queries: "every entity that has A and B", fetched as column slices.
//!
//! A query has two halves:
//! - its *data* `Q` ([`QueryData`]): what each item yields — `Entity`, `&T`,
//!   `&mut T`, `Option<..>`, [`Has<T>`], [`Ref<T>`], or a tuple of those
//!   (or a struct of those with [`#[derive(QueryData)]`](derive@crate::QueryData));
//! - its *filter* `F` ([`QueryFilter`]): which entities count — [`With`],
//!   [`Without`], [`Or`], [`Added`], [`Changed`], or a tuple (all must hold;
//!   or a struct with [`#[derive(QueryFilter)]`](derive@crate::QueryFilter)).
//!
//! A [`QueryState`] caches the archetypes a query matches, with the index of
//! each column it reads there, and picks up new ones incrementally, so
//! iterating is a walk over matched tables: per table, one pointer per column
//! (no lookup), then a loop over rows with no per-entity lookup.
//! Sparse components are looked up per entity (that is the trade they make);
//! a query that requires one walks the smallest such set instead of the
//! tables when the set is the shorter list, and a query of sparse
//! components alone reads its smallest set as one array (see
//! [`Query::iter`]).
//!
//! # Safety policy
//!
//! Like `storage/`, this module holds `unsafe` code: fetches turn column
//! pointers into references. Soundness rests on two rules, checked when a
//! [`QueryState`] is built and when it runs: a query never aliases a
//! component mutably (checked by [`Access`]), and a query that writes runs
//! only with `&mut World`. A state refuses any world but its own.

mod access;
mod chunks;
mod derive;
mod fetch;
mod filter;
mod iter;
mod many;
mod mut_item;
mod param;
mod query_mut;
mod ref_item;
mod relation;
mod state;
mod tuples;

pub use access::Access;
pub use chunks::{QueryChunk, QueryParChunks};
#[doc(hidden)]
pub use derive::FromQueryItem;
pub use fetch::{Has, QueryData, ReadOnlyQueryData};
pub use filter::{Added, Changed, Or, QueryFilter, With, Without};
pub use iter::QueryIter;
pub use mut_item::Mut;
pub use param::{Populated, Query, QueryCombinations, QueryParIter, QuerySingleError, Single};
pub use query_mut::{QueryMut, QueryMutIter};
pub use ref_item::Ref;
pub use state::QueryState;

use crate::change::Tick;

/// The two ticks a query run compares against: values changed after
/// `last_run` (as seen from `this_run`) are new to it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct TickRange {
    pub(crate) last_run: Tick,
    pub(crate) this_run: Tick,
}

impl TickRange {
    /// The ticks a run at `this_run` compares against, for a query state or
    /// system whose previous run was `last_run` (`None`: never ran, so every
    /// value is new). A last run older than [`Tick::MAX_AGE`] is clamped like
    /// stored ticks, so it looks old rather than new.
    pub(crate) fn since(last_run: Option<Tick>, this_run: Tick) -> TickRange {
        let last_run = match last_run {
            None => Tick::never_before(this_run),
            Some(mut last_run) => {
                last_run.clamp_age(this_run);
                last_run
            }
        };
        TickRange { last_run, this_run }
    }
}
