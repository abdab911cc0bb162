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

// SAFETY: every item is `&Relation<R>`'s, whose implementation upholds the
// contract; this one forwards each method to it unchanged (the same access,
// archetypes, states and fetches).
unsafe impl<R: Relationship> QueryData for Relation<R> {
    type Item<'w> = &'w Relation<R>;
    type Fetch<'w> = <Inner<R> as QueryData>::Fetch<'w>;
    type State = <Inner<R> as QueryData>::State;
    type ArchetypeState = <Inner<R> as QueryData>::ArchetypeState;
    const DENSE: bool = <Inner<R> as QueryData>::DENSE;
    const FALLIBLE: bool = <Inner<R> as QueryData>::FALLIBLE;
    const WRITES_ON_FETCH: bool = <Inner<R> as QueryData>::WRITES_ON_FETCH;

    fn init_state(world: &mut World) -> Self::State {
        world.register_relation::<R>();
        <Inner<R> as QueryData>::init_state(world)
    }

    fn update_access(state: &Self::State, access: &mut Access) {
        <Inner<R> as QueryData>::update_access(state, access);
    }

    fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::ArchetypeState> {
        <Inner<R> as QueryData>::match_archetype(state, archetype)
    }

    #[inline]
    unsafe fn init_fetch<'w>(
        world: &'w World,
        state: &Self::State,
        ticks: TickRange,
    ) -> Self::Fetch<'w> {
        // SAFETY: forwarded contract.
        unsafe { <Inner<R> as QueryData>::init_fetch(world, state, ticks) }
    }

    #[inline]
    unsafe fn set_archetype<'w>(
        fetch: &mut Self::Fetch<'w>,
        state: &Self::State,
        arch: Self::ArchetypeState,
        archetype: &'w Archetype,
    ) {
        // SAFETY: forwarded contract.
        unsafe { <Inner<R> as QueryData>::set_archetype(fetch, state, arch, archetype) }
    }

    #[inline(always)]
    unsafe fn can_fetch(fetch: &Self::Fetch<'_>, entity: Entity) -> bool {
        // SAFETY: forwarded contract.
        unsafe { <Inner<R> as QueryData>::can_fetch(fetch, entity) }
    }

    #[inline]
    unsafe fn set_driver(fetch: &mut Self::Fetch<'_>, state: &Self::State, driver: ComponentId) {
        // SAFETY: forwarded contract.
        unsafe { <Inner<R> as QueryData>::set_driver(fetch, state, driver) }
    }

    #[inline(always)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        // SAFETY: forwarded contract.
        unsafe { <Inner<R> as QueryData>::fetch(fetch, entity, row) }
    }

    #[inline(always)]
    unsafe fn fetch_unstamped<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        // SAFETY: forwarded contract.
        unsafe { <Inner<R> as QueryData>::fetch_unstamped(fetch, entity, row) }
    }

    #[inline(always)]
    unsafe fn stamp_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>) {
        // SAFETY: forwarded contract.
        unsafe { <Inner<R> as QueryData>::stamp_rows(fetch, rows) }
    }

    #[inline(always)]
    fn tracks(fetch: &Self::Fetch<'_>) -> bool {
        <Inner<R> as QueryData>::tracks(fetch)
    }

    #[inline(always)]
    fn writes_ticks(fetch: &Self::Fetch<'_>) -> bool {
        <Inner<R> as QueryData>::writes_ticks(fetch)
    }
}

// SAFETY: forwards to `&Relation<R>`, which only reads.
unsafe impl<R: Relationship> ReadOnlyQueryData for Relation<R> {}

// SAFETY: `&ChildOf` is `&Relation<ChildOf>` (whose implementation upholds
// the contract) with each item narrowed to the edge's value, which lives in
// the fetched `Relation<ChildOf>`: the same access, archetypes, states and
// fetches, forwarded unchanged.
unsafe impl QueryData for &ChildOf {
    type Item<'w> = &'w ChildOf;
    type Fetch<'w> = <Inner<ChildOf> as QueryData>::Fetch<'w>;
    type State = <Inner<ChildOf> as QueryData>::State;
    type ArchetypeState = <Inner<ChildOf> as QueryData>::ArchetypeState;
    const DENSE: bool = <Inner<ChildOf> as QueryData>::DENSE;
    const FALLIBLE: bool = <Inner<ChildOf> as QueryData>::FALLIBLE;
    const WRITES_ON_FETCH: bool = <Inner<ChildOf> as QueryData>::WRITES_ON_FETCH;

    fn init_state(world: &mut World) -> Self::State {
        world.register_relation::<ChildOf>();
        <Inner<ChildOf> as QueryData>::init_state(world)
    }

    fn update_access(state: &Self::State, access: &mut Access) {
        <Inner<ChildOf> as QueryData>::update_access(state, access);
    }

    fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::ArchetypeState> {
        <Inner<ChildOf> as QueryData>::match_archetype(state, archetype)
    }

    #[inline]
    unsafe fn init_fetch<'w>(
        world: &'w World,
        state: &Self::State,
        ticks: TickRange,
    ) -> Self::Fetch<'w> {
        // SAFETY: forwarded contract.
        unsafe { <Inner<ChildOf> as QueryData>::init_fetch(world, state, ticks) }
    }

    #[inline]
    unsafe fn set_archetype<'w>(
        fetch: &mut Self::Fetch<'w>,
        state: &Self::State,
        arch: Self::ArchetypeState,
        archetype: &'w Archetype,
    ) {
        // SAFETY: forwarded contract.
        unsafe { <Inner<ChildOf> as QueryData>::set_archetype(fetch, state, arch, archetype) }
    }

    #[inline(always)]
    unsafe fn can_fetch(fetch: &Self::Fetch<'_>, entity: Entity) -> bool {
        // SAFETY: forwarded contract.
        unsafe { <Inner<ChildOf> as QueryData>::can_fetch(fetch, entity) }
    }

    #[inline]
    unsafe fn set_driver(fetch: &mut Self::Fetch<'_>, state: &Self::State, driver: ComponentId) {
        // SAFETY: forwarded contract.
        unsafe { <Inner<ChildOf> as QueryData>::set_driver(fetch, state, driver) }
    }

    #[inline(always)]
    unsafe fn fetch<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        // SAFETY: forwarded contract.
        unsafe { <Inner<ChildOf> as QueryData>::fetch(fetch, entity, row) }.map(child_of)
    }

    #[inline(always)]
    unsafe fn fetch_unstamped<'w>(
        fetch: &mut Self::Fetch<'w>,
        entity: Entity,
        row: usize,
    ) -> Option<Self::Item<'w>> {
        // SAFETY: forwarded contract.
        unsafe { <Inner<ChildOf> as QueryData>::fetch_unstamped(fetch, entity, row) }.map(child_of)
    }

    #[inline(always)]
    unsafe fn stamp_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>) {
        // SAFETY: forwarded contract.
        unsafe { <Inner<ChildOf> as QueryData>::stamp_rows(fetch, rows) }
    }

    #[inline(always)]
    fn tracks(fetch: &Self::Fetch<'_>) -> bool {
        <Inner<ChildOf> as QueryData>::tracks(fetch)
    }

    #[inline(always)]
    fn writes_ticks(fetch: &Self::Fetch<'_>) -> bool {
        <Inner<ChildOf> as QueryData>::writes_ticks(fetch)
    }
}

// SAFETY: forwards to `&Relation<ChildOf>`, which only reads.
unsafe impl ReadOnlyQueryData for &ChildOf {}

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
