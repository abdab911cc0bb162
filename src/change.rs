//! Change ticks: how `Added<T>` and `Changed<T>` know what is new.
//!
//! The world keeps a 32-bit *change tick* that every query run advances. Each
//! component value records two ticks: when it was *added* and when it was last
//! *changed* (an added value counts as changed). A query state remembers the
//! tick of its previous run; a value is new to it if its tick is newer than
//! that run.
//!
//! # Wrapping rule
//!
//! Ticks are compared by *age* (`now - tick`, wrapping), never by value, so
//! the counter may wrap freely. To keep ages meaningful the world clamps every
//! stored tick older than [`Tick::MAX_AGE`] at least every
//! [`CHECK_INTERVAL`] ticks (during structural changes and schedule runs).
//! Consequences: a value unchanged for more than about 3.2 billion ticks is
//! reported as "changed long ago" rather than wrongly as new; a query state
//! left unused for more than 2³² ticks may report stale results once.
//!
//! # Cost
//!
//! Ticks cost 8 bytes per component value, a write per structural change and
//! a store per `&mut T` access. mosaic only pays that for component types
//! that some `Added<T>` or `Changed<T>` filter watches: building the first
//! such filter switches tracking on for `T` in that world, and every `T`
//! already present is stamped with the current tick. Nothing observable is
//! lost, because the first run of any query state reports every value as
//! added and changed anyway. Once on, tracking stays on, and
//! `World::get_mut`, replacing inserts and `&mut T` query access all record.
//!
//! # What counts as a change
//!
//! A `&mut T` item is stamped when it is handed out, so the world marks
//! only items user code receives and could have written. Looking without
//! handing out stamps nothing: a `Single<&mut T>` skipped because several
//! entities match, a `Populated<&mut T>` checked for emptiness,
//! `Query::get_single_mut` failing, a failed `get_many_mut`, and the
//! entities of `iter_combinations_mut` all count matches without fetching
//! (`QueryState::probe_prepared`).

/// A point in a world's change history.
///
/// # Example
/// ```
/// use mosaic::Tick;
/// let (last_run, this_run) = (Tick::new(10), Tick::new(20));
/// assert!(Tick::new(15).is_newer_than(last_run, this_run));
/// assert!(!Tick::new(10).is_newer_than(last_run, this_run));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
// Laid out as a `u32` (the vector pass over a column's ticks in
// `storage::column` reads them as lanes).
#[repr(transparent)]
pub struct Tick(u32);

/// How often (in ticks) stored ticks are clamped at the latest.
pub const CHECK_INTERVAL: u32 = 1 << 29;

impl Tick {
    /// Ticks older than this are clamped to this age.
    pub const MAX_AGE: u32 = u32::MAX - 2 * CHECK_INTERVAL - 1;

    /// A tick with the given raw value.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::Tick::new(3).get(), 3);
    /// ```
    #[inline]
    pub const fn new(raw: u32) -> Tick {
        Tick(raw)
    }

    /// The raw value.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::Tick::new(3).get(), 3);
    /// ```
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// True if `self` happened after `last_run`, as seen from `this_run`.
    ///
    /// # Example
    /// ```
    /// use mosaic::Tick;
    /// // Works across the u32 wrap:
    /// let last_run = Tick::new(u32::MAX - 1);
    /// assert!(Tick::new(2).is_newer_than(last_run, Tick::new(5)));
    /// ```
    #[inline]
    pub fn is_newer_than(self, last_run: Tick, this_run: Tick) -> bool {
        let since_change = this_run.0.wrapping_sub(self.0);
        let since_run = this_run.0.wrapping_sub(last_run.0);
        since_run > since_change
    }

    /// Clamps this tick so its age seen from `now` is at most [`Tick::MAX_AGE`].
    #[inline]
    pub(crate) fn clamp_age(&mut self, now: Tick) {
        if now.0.wrapping_sub(self.0) > Self::MAX_AGE {
            self.0 = now.0.wrapping_sub(Self::MAX_AGE);
        }
    }

    /// The tick that makes every stored tick "newer": used as the last run of
    /// a query state that never ran.
    #[inline]
    pub(crate) fn never_before(this_run: Tick) -> Tick {
        Tick(this_run.0.wrapping_add(1))
    }
}

/// The two ticks every component value carries.
///
/// `repr(C)`: `added` then `changed`, 8 bytes, so a column's ticks are
/// pairs of `u32` lanes (the vector pass of a rollback restore,
/// `storage::column::mark_written`, relies on it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct ComponentTicks {
    /// When the value was added to its entity.
    pub added: Tick,
    /// When the value was last mutably accessed (or added).
    pub changed: Tick,
}

impl ComponentTicks {
    /// Both ticks at `tick`: a fresh value.
    #[inline]
    pub(crate) fn new(tick: Tick) -> Self {
        ComponentTicks {
            added: tick,
            changed: tick,
        }
    }
}

/// Whether a value was added or changed since the system (or query
/// state) last ran: Bevy's trait, implemented by [`Ref`](crate::Ref),
/// [`Mut`](crate::Mut), [`Res`](crate::Res) and [`ResMut`](crate::ResMut).
/// (`Ref` and `Res` have these methods of their own too.)
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// fn report<T: DetectChanges>(value: &T) -> &'static str {
///     if value.is_added() { "new" } else if value.is_changed() { "changed" } else { "same" }
/// }
/// let mut world = World::new();
/// world.insert_resource(1u32);
/// assert_eq!(world.run_system_once(|n: Res<u32>| report(&n)), "new");
/// ```
pub trait DetectChanges {
    /// True if the value was added since the last run.
    fn is_added(&self) -> bool;
    /// True if the value was added or written since the last run.
    fn is_changed(&self) -> bool;
}

/// Writing with change detection in mind: Bevy's trait, implemented by
/// [`Mut`](crate::Mut) and [`ResMut`](crate::ResMut), which mark their
/// value changed when written through (a `&mut T` query item is marked as
/// it is fetched: query `Mut<T>` to use these).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(PartialEq)] struct Level(u32);
/// let mut world = World::new();
/// world.insert_resource(Level(1));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(|mut level: ResMut<Level>| {
///     level.set_if_neq(Level(1)); // the same value: not a change
/// });
/// schedule.add_systems(|level: Res<Level>, mut seen: Local<u32>| {
///     *seen += 1;
///     assert_eq!(level.is_changed(), *seen == 1); // only the insert
/// });
/// schedule.run(&mut world);
/// schedule.run(&mut world);
/// ```
pub trait DetectChangesMut: DetectChanges {
    /// The value's type.
    type Inner: ?Sized;

    /// Marks the value changed without writing it.
    fn set_changed(&mut self);

    /// The value, without marking it changed (for a write that observers
    /// of `Changed` must not see, such as a cache).
    fn bypass_change_detection(&mut self) -> &mut Self::Inner;

    /// Writes `value` only if it differs from the current one, marking the
    /// value changed only then; true if it wrote.
    fn set_if_neq(&mut self, value: Self::Inner) -> bool
    where
        Self::Inner: Sized + PartialEq,
    {
        let current = self.bypass_change_detection();
        if *current == value {
            return false;
        }
        *current = value;
        self.set_changed();
        true
    }
}

/// Never implemented: its only use is the error message a Bevy habit meets
/// (see [`PlainRefChangeHint`]).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is a plain mutable reference, with no change detection of its own",
    label = "a `&mut T` query item is marked changed when it is fetched, so `set_if_neq` could not keep it unchanged",
    note = "query `Mut<T>` instead of `&mut T` (it marks the value changed only when written), or use `ResMut<T>` for a resource"
)]
pub trait ChangeDetectingPointer {}

/// Gives `set_if_neq`, `is_changed` and `is_added` on a plain `&mut T` a
/// teaching compile error instead of "no method found": mosaic's
/// `Query<&mut T>` yields `&mut T` (of a component), Bevy's a `Mut<T>`. In the prelude,
/// unnamed; nothing implements the bound, so these never run.
#[doc(hidden)]
pub trait PlainRefChangeHint {
    /// See the trait's docs.
    fn set_if_neq<V>(&mut self, _value: V) -> bool
    where
        Self: ChangeDetectingPointer,
    {
        unreachable!("`ChangeDetectingPointer` has no implementation")
    }

    /// See the trait's docs.
    fn is_changed(&self) -> bool
    where
        Self: ChangeDetectingPointer,
    {
        unreachable!("`ChangeDetectingPointer` has no implementation")
    }

    /// See the trait's docs.
    fn is_added(&self) -> bool
    where
        Self: ChangeDetectingPointer,
    {
        unreachable!("`ChangeDetectingPointer` has no implementation")
    }
}

impl<T: crate::Component> PlainRefChangeHint for &mut T {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_before_sees_every_clamped_tick() {
        let now = Tick::new(7);
        let mut old = Tick::new(now.0.wrapping_sub(u32::MAX - 3));
        old.clamp_age(now);
        assert!(old.is_newer_than(Tick::never_before(now), now));
        assert!(!now.is_newer_than(now, now));
    }
}
