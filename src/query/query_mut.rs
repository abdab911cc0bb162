//! hecs's `World::query_mut`: a one-off query walked with a `for` loop,
//! without keeping a [`QueryState`].
//!
//! The walk borrows the state it was made from, so an owning iterator
//! holds the state itself, on the heap, behind a raw pointer: the walk's
//! shared borrow of it is the only one while the walk lives, and the state
//! is freed only after the walk is dropped.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use super::{QueryData, QueryIter, QueryState};
use crate::world::World;

/// A query over a `&mut World`, made by [`World::query_mut`]: iterate it
/// with a `for` loop (it is [`IntoIterator`]).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Pos(f32);
/// #[derive(Component)] struct Vel(f32);
/// let mut world = World::new();
/// world.spawn((Pos(0.0), Vel(1.0)));
/// for (pos, vel) in world.query_mut::<(&mut Pos, &Vel)>() {
///     pos.0 += vel.0;
/// }
/// ```
pub struct QueryMut<'w, Q: QueryData> {
    state: QueryState<Q, ()>,
    world: &'w mut World,
}

impl<Q: QueryData> fmt::Debug for QueryMut<'_, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryMut")
            .field("matched_archetypes", &self.state.matched_archetype_count())
            .finish_non_exhaustive()
    }
}

impl<'w, Q: QueryData + 'w> IntoIterator for QueryMut<'w, Q> {
    type Item = Q::Item<'w>;
    type IntoIter = QueryMutIter<'w, Q>;

    fn into_iter(self) -> QueryMutIter<'w, Q> {
        let state = NonNull::from(Box::leak(Box::new(self.state)));
        // SAFETY: `state` is a fresh heap allocation that only this iterator
        // owns; the `&mut` made here is the only reference to it, and it is
        // given up to the walk, which keeps a shared borrow of the state as
        // long as it lives. `QueryMutIter` drops the walk before it frees
        // the state (see its `Drop` and `fold`), so the borrow the made-up
        // lifetime `'w` claims never outlives the state. The walk's items
        // borrow only the world (their type has `'w` alone), which
        // `self.world` lends for `'w`.
        let iter = unsafe { (*state.as_ptr()).iter_mut(self.world) };
        QueryMutIter {
            iter: ManuallyDrop::new(iter),
            state: OwnedState(state),
        }
    }
}

/// The state a [`QueryMutIter`] owns; freed when dropped.
struct OwnedState<Q: QueryData>(NonNull<QueryState<Q, ()>>);

impl<Q: QueryData> Drop for OwnedState<Q> {
    fn drop(&mut self) {
        // SAFETY: made by `Box::leak` in `into_iter` and freed only here,
        // once; every walk borrowing it has been dropped (the iterator
        // drops its walk first, and `fold` consumes the walk before this
        // guard goes).
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// The iterator of a [`QueryMut`]: a [`QueryIter`] that owns its
/// query's state.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Hp(u32);
/// let mut world = World::new();
/// world.spawn_batch([Hp(1), Hp(2)]);
/// let mut iter = world.query_mut::<&mut Hp>().into_iter();
/// iter.next().unwrap().0 += 10;
/// assert_eq!(iter.map(|hp| hp.0).sum::<u32>(), 2);
/// ```
pub struct QueryMutIter<'w, Q: QueryData + 'w> {
    // Field order matters only for reading: `Drop` below drops the walk
    // explicitly before `state` is dropped.
    iter: ManuallyDrop<QueryIter<'w, 'w, Q, ()>>,
    state: OwnedState<Q>,
}

impl<Q: QueryData> Drop for QueryMutIter<'_, Q> {
    fn drop(&mut self) {
        // SAFETY: dropped once, here; `fold`, the only other place that
        // takes the walk, forgets `self` after taking it.
        unsafe { ManuallyDrop::drop(&mut self.iter) };
        // `self.state` is dropped after this, freeing the state.
    }
}

impl<Q: QueryData> fmt::Debug for QueryMutIter<'_, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryMutIter")
            .field("remaining", &self.iter.size_hint())
            .finish_non_exhaustive()
    }
}

impl<'w, Q: QueryData + 'w> Iterator for QueryMutIter<'w, Q> {
    type Item = Q::Item<'w>;

    #[inline]
    fn next(&mut self) -> Option<Q::Item<'w>> {
        self.iter.next()
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }

    #[inline]
    fn fold<B, G>(self, init: B, g: G) -> B
    where
        G: FnMut(B, Q::Item<'w>) -> B,
    {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the walk taken here is
        // dropped once, by `fold` below.
        let iter = unsafe { ManuallyDrop::take(&mut this.iter) };
        // SAFETY: `this.state` is read once and `this` is never dropped, so
        // the guard is the state's only owner; declared before the walk is
        // consumed, it frees the state after (also when `g` panics).
        let _state = unsafe { std::ptr::read(&this.state) };
        iter.fold(init, g)
    }
}

impl<Q: QueryData> std::iter::FusedIterator for QueryMutIter<'_, Q> {}

impl World {
    /// hecs's name: every entity matching `Q`, for a `for` loop, with
    /// mutable access and no [`QueryState`] to keep (one is built for the
    /// call: keep a [`World::query`] state in a loop that runs every frame
    /// to skip matching the archetypes each time).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Pos(f32);
    /// #[derive(Component)] struct Vel(f32);
    /// let mut world = World::new();
    /// let e = world.spawn((Pos(0.0), Vel(2.0)));
    /// world.spawn(Pos(5.0)); // no Vel: not matched
    /// for (pos, vel) in world.query_mut::<(&mut Pos, &Vel)>() {
    ///     pos.0 += vel.0;
    /// }
    /// assert_eq!(world.get::<Pos>(e).unwrap().0, 2.0);
    /// let ids: Vec<Entity> = world.query_mut::<Entity>().into_iter().collect();
    /// assert_eq!(ids.len(), 2);
    /// ```
    pub fn query_mut<Q: QueryData>(&mut self) -> QueryMut<'_, Q> {
        let state = self.query::<Q>();
        QueryMut { state, world: self }
    }
}
