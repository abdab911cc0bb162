//! `Relation<R>` as query data: the source's edges, as `&Relation<R>`; and
//! `&ChildOf`, a child's edge value (Bevy's `Query<&ChildOf>`), with the
//! filters `With<ChildOf>` and `Without<ChildOf>` (children and roots).

use std::ops::Range;

use super::{Access, QueryData, QueryFilter, ReadOnlyQueryData, TickRange, With, Without};
use crate::archetype::Archetype;
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::relation::{ChildOf, Relation, Relationship};
use crate::world::World;

type Inner<R> = &'static Relation<R>;

/// Query data read from relation `$rel`'s `&Relation<$rel>` on each source:
/// every method forwarded to `&Relation<$rel>`'s implementation unchanged
/// (the same access, archetypes, states and fetches), each item narrowed
/// by `$map` (`fn(&Relation<$rel>) -> &$value`) to what it borrows from.
/// `Relation<R>` itself (the whole edge list) and `&ChildOf` (a child's
/// edge value) are both this.
macro_rules! relation_data {
    ([$($generics:tt)*] $data:ty => &$value:ty, $rel:ty, $map:path) => {
        // SAFETY: `&Relation<$rel>`'s implementation upholds the contract;
        // this one forwards each method to it unchanged, and `$map` only
        // narrows each item to a part of the fetched `Relation<$rel>`
        // (the same borrow of the same row).
        unsafe impl<$($generics)*> QueryData for $data {
            type Item<'w> = &'w $value;
            type Fetch<'w> = <Inner<$rel> as QueryData>::Fetch<'w>;
            type State = <Inner<$rel> as QueryData>::State;
            type ArchetypeState = <Inner<$rel> as QueryData>::ArchetypeState;
            const DENSE: bool = <Inner<$rel> as QueryData>::DENSE;
            const FALLIBLE: bool = <Inner<$rel> as QueryData>::FALLIBLE;
            const WRITES_ON_FETCH: bool = <Inner<$rel> as QueryData>::WRITES_ON_FETCH;
            const ODD_SIZED: bool = <Inner<$rel> as QueryData>::ODD_SIZED;
            const POW2_SIZED: bool = <Inner<$rel> as QueryData>::POW2_SIZED;

            fn init_state(world: &mut World) -> Self::State {
                world.register_relation::<$rel>();
                <Inner<$rel> as QueryData>::init_state(world)
            }

            fn update_access(state: &Self::State, access: &mut Access) {
                <Inner<$rel> as QueryData>::update_access(state, access);
            }

            fn match_archetype(
                state: &Self::State,
                archetype: &Archetype,
            ) -> Option<Self::ArchetypeState> {
                <Inner<$rel> as QueryData>::match_archetype(state, archetype)
            }

            #[inline]
            unsafe fn init_fetch<'w>(
                world: &'w World,
                state: &Self::State,
                ticks: TickRange,
            ) -> Self::Fetch<'w> {
                // SAFETY: forwarded contract.
                unsafe { <Inner<$rel> as QueryData>::init_fetch(world, state, ticks) }
            }

            #[inline]
            unsafe fn set_archetype<'w>(
                fetch: &mut Self::Fetch<'w>,
                state: &Self::State,
                arch: Self::ArchetypeState,
                archetype: &'w Archetype,
            ) {
                // SAFETY: forwarded contract.
                unsafe {
                    <Inner<$rel> as QueryData>::set_archetype(fetch, state, arch, archetype)
                }
            }

            #[inline(always)]
            unsafe fn can_fetch(fetch: &Self::Fetch<'_>, entity: Entity) -> bool {
                // SAFETY: forwarded contract.
                unsafe { <Inner<$rel> as QueryData>::can_fetch(fetch, entity) }
            }

            #[inline]
            unsafe fn set_driver(
                fetch: &mut Self::Fetch<'_>,
                state: &Self::State,
                driver: ComponentId,
            ) {
                // SAFETY: forwarded contract.
                unsafe { <Inner<$rel> as QueryData>::set_driver(fetch, state, driver) }
            }

            #[inline(always)]
            unsafe fn fetch<'w>(
                fetch: &mut Self::Fetch<'w>,
                entity: Entity,
                row: usize,
            ) -> Option<Self::Item<'w>> {
                // SAFETY: forwarded contract.
                unsafe { <Inner<$rel> as QueryData>::fetch(fetch, entity, row) }.map($map)
            }

            #[inline(always)]
            unsafe fn fetch_unstamped<'w>(
                fetch: &mut Self::Fetch<'w>,
                entity: Entity,
                row: usize,
            ) -> Option<Self::Item<'w>> {
                // SAFETY: forwarded contract.
                unsafe { <Inner<$rel> as QueryData>::fetch_unstamped(fetch, entity, row) }
                    .map($map)
            }

            #[inline(always)]
            unsafe fn stamp_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>) {
                // SAFETY: forwarded contract.
                unsafe { <Inner<$rel> as QueryData>::stamp_rows(fetch, rows) }
            }

            #[inline(always)]
            fn tracks(fetch: &Self::Fetch<'_>) -> bool {
                <Inner<$rel> as QueryData>::tracks(fetch)
            }

            #[inline(always)]
            fn writes_ticks(fetch: &Self::Fetch<'_>) -> bool {
                <Inner<$rel> as QueryData>::writes_ticks(fetch)
            }
        }

        // SAFETY: forwards to `&Relation<$rel>`, which only reads.
        unsafe impl<$($generics)*> ReadOnlyQueryData for $data {}
    };
}

relation_data!([R: Relationship] Relation<R> => &Relation<R>, R, whole);
relation_data!([] &ChildOf => &ChildOf, ChildOf, child_of);

/// The whole edge list, as fetched.
#[inline(always)]
fn whole<R: Relationship>(edges: &Relation<R>) -> &Relation<R> {
    edges
}

/// A child's edge value: a `one` relation's source holds exactly one.
#[inline(always)]
fn child_of(edges: &Relation<ChildOf>) -> &ChildOf {
    &edges.data()[0]
}

/// The component that holds a child's edge.
type ParentEdge = Relation<ChildOf>;

/// `With<ChildOf>` / `Without<ChildOf>`: the children, and the roots (Bevy's
/// spelling of `With<Relation<ChildOf>>`).
macro_rules! child_of_filter {
    ($name:ident) => {
        // SAFETY: forwards every method to the same filter of
        // `Relation<ChildOf>`, the component that holds a child's edge.
        unsafe impl QueryFilter for $name<ChildOf> {
            type Fetch<'w> = <$name<ParentEdge> as QueryFilter>::Fetch<'w>;
            type State = <$name<ParentEdge> as QueryFilter>::State;
            type ArchetypeState = <$name<ParentEdge> as QueryFilter>::ArchetypeState;

            fn init_state(world: &mut World) -> Self::State {
                world.register_relation::<ChildOf>();
                <$name<ParentEdge> as QueryFilter>::init_state(world)
            }

            fn update_access(state: &Self::State, access: &mut Access) {
                <$name<ParentEdge> as QueryFilter>::update_access(state, access);
            }

            fn match_archetype(
                state: &Self::State,
                archetype: &Archetype,
            ) -> Option<Self::ArchetypeState> {
                <$name<ParentEdge> as QueryFilter>::match_archetype(state, archetype)
            }

            #[inline]
            unsafe fn init_fetch<'w>(
                world: &'w World,
                state: &Self::State,
                ticks: TickRange,
            ) -> Self::Fetch<'w> {
                // SAFETY: forwarded contract.
                unsafe { <$name<ParentEdge> as QueryFilter>::init_fetch(world, state, ticks) }
            }

            #[inline]
            unsafe fn set_archetype<'w>(
                fetch: &mut Self::Fetch<'w>,
                state: &Self::State,
                arch: Self::ArchetypeState,
                archetype: &'w Archetype,
            ) {
                // SAFETY: forwarded contract.
                unsafe {
                    <$name<ParentEdge> as QueryFilter>::set_archetype(fetch, state, arch, archetype)
                }
            }

            #[inline(always)]
            unsafe fn filter(fetch: &mut Self::Fetch<'_>, entity: Entity, row: usize) -> bool {
                // SAFETY: forwarded contract.
                unsafe { <$name<ParentEdge> as QueryFilter>::filter(fetch, entity, row) }
            }
        }
    };
}

child_of_filter!(With);
child_of_filter!(Without);
