//! Run conditions: read-only systems returning `bool` that decide whether a
//! system, or every system of a set, runs this time.
//!
//! A condition is attached with `.run_if(..)` on a system
//! ([`SystemConfig::run_if`](crate::SystemConfig::run_if)), on a set
//! ([`SetConfig::run_if`](crate::SetConfig::run_if)) or on a group given to
//! [`Schedule::add_systems`](crate::Schedule::add_systems). Each condition is
//! evaluated at most once per schedule run, just before the first system it
//! guards would run; a set's condition is evaluated once for all its
//! members, which all see that one answer. All of a system's conditions are
//! evaluated (none is short-cut by another's `false`), so each sees every
//! run and its change detection stays current.
//!
//! A condition's access counts as its system's access when the schedule
//! plans what may run at the same time, and a condition may not write
//! (the schedule refuses one that does). A system with no condition pays
//! one branch per run.
//!
//! A condition whose parameter declines to run (a [`Single`](crate::Single)
//! without exactly one match, a [`Populated`](crate::Populated) query with
//! none) counts as false, also under [`not`] and the combinators: the
//! systems it guards are skipped, and the skip is logged as a system's is.

use std::borrow::Cow;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{IntoSystem, System, SystemAccess, SystemSkip};
use crate::event::EventReader;
use crate::resource::Res;
use crate::world::World;

/// A condition as the schedule keeps it: the system and its answer for the
/// run it was last evaluated in.
pub(crate) struct ConditionSlot {
    system: Mutex<Box<dyn System<Out = bool>>>,
    /// `(run + 1) << 1 | answer` of the last evaluation; 0 before the first.
    evaluated: AtomicU64,
}

impl ConditionSlot {
    pub fn new<M, C: Condition<M>>(condition: C) -> Self {
        ConditionSlot {
            system: Mutex::new(Box::new(condition.into_system())),
            evaluated: AtomicU64::new(0),
        }
    }

    pub fn system_mut(&mut self) -> &mut dyn System<Out = bool> {
        &mut **self.system.get_mut().unwrap_or_else(|p| p.into_inner())
    }

    /// Initializes the condition, refusing one whose parameters conflict or
    /// that writes anything.
    pub fn initialize(&mut self, world: &mut World) -> Result<(), (String, String)> {
        let system = self.system_mut();
        let name = system.name().to_owned();
        system.initialize(world).map_err(|e| (name.clone(), e))?;
        if !system.access().is_read_only() {
            return Err((
                name,
                "a run condition may only read (no `ResMut`, `&mut` query or `&mut World`)"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// The condition's answer for run `run`, evaluating it if this is the
    /// first time it is asked in that run.
    ///
    /// # Safety
    /// - the condition was initialized for `world`;
    /// - nothing running at the same time writes what it reads.
    pub unsafe fn evaluate(&self, run: u64, world: &World) -> bool {
        let mut system = self.system.lock().unwrap_or_else(|p| p.into_inner());
        let stamp = (run + 1) << 1;
        let last = self.evaluated.load(Ordering::Relaxed);
        if last & !1 == stamp {
            return last & 1 == 1;
        }
        // SAFETY: `try_run_unsafe` has `run_unsafe`'s contract, forwarded
        // from this method's caller; the condition is read-only (checked at
        // initialize), so it conflicts with no reader running beside it.
        let answer = match unsafe { system.try_run_unsafe(world) } {
            Ok(answer) => answer,
            Err(skip) => {
                declined(system.name(), &skip);
                false
            }
        };
        self.evaluated
            .store(stamp | u64::from(answer), Ordering::Relaxed);
        answer
    }

    pub fn apply_deferred(&mut self, world: &mut World) {
        self.system_mut().apply_deferred(world);
    }
}

/// Reports a condition a parameter declined to evaluate (it counts as
/// false).
#[cold]
fn declined(condition: &str, skip: &SystemSkip) {
    if skip.warns() {
        log::warn!("run condition `{condition}` counts as false: {skip}");
    } else {
        log::debug!("run condition `{condition}` counts as false: {skip}");
    }
}

impl fmt::Debug for ConditionSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let system = self.system.lock().unwrap_or_else(|p| p.into_inner());
        f.debug_tuple("Condition").field(&system.name()).finish()
    }
}

/// A run condition: anything that becomes a [`System`] returning `bool`
/// (a function of read-only parameters, usually). Combine conditions with
/// [`Condition::and`], [`Condition::or`] and [`not`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Paused;
/// #[derive(Default)] struct Ticks(u32);
/// let mut world = World::new();
/// world.insert_resource(Ticks::default());
/// let mut schedule = Schedule::new();
/// schedule
///     .add_system("tick", |mut t: ResMut<Ticks>| t.0 += 1)
///     .run_if(not(resource_exists::<Paused>));
/// schedule.run(&mut world);
/// world.insert_resource(Paused);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Ticks>().0, 1);
/// ```
pub trait Condition<Marker>: IntoSystem<Marker, System: System<Out = bool>> {
    /// True when both are; `other` is not evaluated when `self` is false.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct A;
    /// struct B;
    /// let mut world = World::new();
    /// world.insert_resource(A);
    /// let both = resource_exists::<A>.and(resource_exists::<B>);
    /// assert!(!world.run_system_once(both));
    /// ```
    fn and<M, C: Condition<M>>(self, other: C) -> CombinedCondition<Self::System, C::System> {
        CombinedCondition::new(self.into_system(), other.into_system(), Combine::And)
    }

    /// True when either is; `other` is not evaluated when `self` is true.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct A;
    /// struct B;
    /// let mut world = World::new();
    /// world.insert_resource(B);
    /// let either = resource_exists::<A>.or(resource_exists::<B>);
    /// assert!(world.run_system_once(either));
    /// ```
    fn or<M, C: Condition<M>>(self, other: C) -> CombinedCondition<Self::System, C::System> {
        CombinedCondition::new(self.into_system(), other.into_system(), Combine::Or)
    }
}

impl<Marker, C: IntoSystem<Marker, System: System<Out = bool>>> Condition<Marker> for C {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Combine {
    And,
    Or,
}

/// Two conditions joined by [`Condition::and`] or [`Condition::or`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::System;
/// struct A;
/// let c = resource_exists::<A>.or(not(resource_exists::<A>));
/// assert!(c.name().contains(" or "));
/// ```
pub struct CombinedCondition<A, B> {
    a: A,
    b: B,
    op: Combine,
    name: Cow<'static, str>,
    access: SystemAccess,
}

impl<A: System<Out = bool>, B: System<Out = bool>> CombinedCondition<A, B> {
    fn new(a: A, b: B, op: Combine) -> Self {
        let word = match op {
            Combine::And => "and",
            Combine::Or => "or",
        };
        let name = Cow::Owned(format!("({} {word} {})", a.name(), b.name()));
        CombinedCondition {
            a,
            b,
            op,
            name,
            access: SystemAccess::default(),
        }
    }
}

impl<A, B> fmt::Debug for CombinedCondition<A, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CombinedCondition")
            .field("name", &self.name)
            .finish()
    }
}

impl<A: System<Out = bool>, B: System<Out = bool>> System for CombinedCondition<A, B> {
    type Out = bool;

    fn name(&self) -> &str {
        &self.name
    }

    fn initialize(&mut self, world: &mut World) -> Result<(), String> {
        self.a.initialize(world)?;
        self.b.initialize(world)?;
        let mut access = self.a.access().clone();
        access.extend(self.b.access());
        self.access = access;
        Ok(())
    }

    fn access(&self) -> &SystemAccess {
        &self.access
    }

    unsafe fn run_unsafe(&mut self, world: &World) -> bool {
        // SAFETY: forwarded; the combined access covers both.
        let first = unsafe { self.a.run_unsafe(world) };
        match (self.op, first) {
            (Combine::And, false) => false,
            (Combine::Or, true) => true,
            // SAFETY: as above.
            _ => unsafe { self.b.run_unsafe(world) },
        }
    }

    unsafe fn try_run_unsafe(&mut self, world: &World) -> Result<bool, SystemSkip> {
        // SAFETY: the caller's contract covers this combined access, which
        // is the union of `a`'s and `b`'s: `a` borrows nothing beyond it.
        let first = unsafe { self.a.try_run_unsafe(world) }?;
        match (self.op, first) {
            (Combine::And, false) => Ok(false),
            (Combine::Or, true) => Ok(true),
            // SAFETY: the same union covers `b`'s access; `a` has returned,
            // so no borrow of it is live.
            _ => unsafe { self.b.try_run_unsafe(world) },
        }
    }

    fn run(&mut self, world: &mut World) -> bool {
        if let Err(conflict) = self.initialize(world) {
            panic!("condition `{}` cannot run: {conflict}", self.name);
        }
        if self.access.is_exclusive() {
            let first = self.a.run(world);
            return match (self.op, first) {
                (Combine::And, false) => false,
                (Combine::Or, true) => true,
                _ => self.b.run(world),
            };
        }
        // SAFETY: initialized just above; `&mut World` excludes everything
        // else; not exclusive (checked).
        let out = unsafe { self.run_unsafe(world) };
        self.apply_deferred(world);
        out
    }

    fn apply_deferred(&mut self, world: &mut World) {
        self.a.apply_deferred(world);
        self.b.apply_deferred(world);
    }
}

/// A condition that is true when `condition` is false.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Paused;
/// let mut world = World::new();
/// assert!(world.run_system_once(not(resource_exists::<Paused>)));
/// ```
pub fn not<M, C: Condition<M>>(condition: C) -> NotCondition<C::System> {
    let inner = condition.into_system();
    let name = Cow::Owned(format!("not({})", inner.name()));
    NotCondition { inner, name }
}

/// The negation of a condition; see [`not`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::System;
/// struct Paused;
/// assert!(not(resource_exists::<Paused>).name().starts_with("not("));
/// ```
pub struct NotCondition<C> {
    inner: C,
    name: Cow<'static, str>,
}

impl<C> fmt::Debug for NotCondition<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotCondition")
            .field("name", &self.name)
            .finish()
    }
}

impl<C: System<Out = bool>> System for NotCondition<C> {
    type Out = bool;

    fn name(&self) -> &str {
        &self.name
    }

    fn initialize(&mut self, world: &mut World) -> Result<(), String> {
        self.inner.initialize(world)
    }

    fn access(&self) -> &SystemAccess {
        self.inner.access()
    }

    unsafe fn run_unsafe(&mut self, world: &World) -> bool {
        // SAFETY: forwarded; same access as the inner condition.
        !unsafe { self.inner.run_unsafe(world) }
    }

    unsafe fn try_run_unsafe(&mut self, world: &World) -> Result<bool, SystemSkip> {
        // SAFETY: the caller's contract covers this access, which is the
        // inner condition's exactly.
        unsafe { self.inner.try_run_unsafe(world) }.map(|answer| !answer)
    }

    fn run(&mut self, world: &mut World) -> bool {
        !self.inner.run(world)
    }

    fn apply_deferred(&mut self, world: &mut World) {
        self.inner.apply_deferred(world);
    }
}

/// A condition: true if the world has an `R`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Level(u32);
/// let mut world = World::new();
/// assert!(!world.run_system_once(resource_exists::<Level>));
/// world.insert_resource(Level(1));
/// assert!(world.run_system_once(resource_exists::<Level>));
/// ```
pub fn resource_exists<R: Send + Sync + 'static>(res: Option<Res<R>>) -> bool {
    res.is_some()
}

/// A condition: true if `R` exists and was inserted or changed since the
/// condition's previous evaluation (so on its first evaluation, if `R`
/// exists). False if there is no `R`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Score(u32);
/// #[derive(Default)] struct Redraws(u32);
/// let mut world = World::new();
/// world.insert_resource(Score(0));
/// world.insert_resource(Redraws::default());
/// let mut schedule = Schedule::new();
/// schedule
///     .add_system("redraw", |mut r: ResMut<Redraws>| r.0 += 1)
///     .run_if(resource_changed::<Score>);
/// schedule.run(&mut world); // first look: Score is new
/// schedule.run(&mut world); // unchanged
/// world.resource_mut::<Score>().0 += 5;
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Redraws>().0, 2);
/// ```
pub fn resource_changed<R: Send + Sync + 'static>(res: Option<Res<R>>) -> bool {
    res.is_some_and(|r| r.is_changed())
}

/// A condition: true if `R` was inserted since the condition's previous
/// evaluation.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Level(u32);
/// let mut world = World::new();
/// world.insert_resource(Level(1));
/// assert!(world.run_system_once(resource_added::<Level>));
/// ```
pub fn resource_added<R: Send + Sync + 'static>(res: Option<Res<R>>) -> bool {
    res.is_some_and(|r| r.is_added())
}

/// A condition: true if an `E` event was sent that this condition has not
/// seen yet (it reads, and so consumes for itself, every new event).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Jump;
/// #[derive(Default)] struct Jumps(u32);
/// let mut world = World::new();
/// world.insert_resource(Jumps::default());
/// let mut schedule = Schedule::new();
/// schedule
///     .add_system("jump", |mut j: ResMut<Jumps>| j.0 += 1)
///     .run_if(on_event::<Jump>);
/// schedule.run(&mut world);
/// world.send_event(Jump);
/// schedule.run(&mut world);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Jumps>().0, 1);
/// ```
pub fn on_event<E: Send + Sync + 'static>(mut reader: EventReader<E>) -> bool {
    reader.read().count() > 0
}

/// A condition: true the first time it is evaluated, false ever after (a
/// set-up system in a schedule that runs every frame). Each use of it is
/// its own condition, with its own memory.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Default)] struct Setups(u32);
/// let mut world = World::new();
/// world.insert_resource(Setups::default());
/// let mut schedule = Schedule::new();
/// schedule.add_systems((|mut s: ResMut<Setups>| s.0 += 1).run_if(run_once));
/// schedule.run(&mut world);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Setups>().0, 1);
/// ```
pub fn run_once(mut has_run: crate::Local<bool>) -> bool {
    !std::mem::replace(&mut *has_run, true)
}

/// A condition: true if some entity has a `T` (disabled entities do not
/// count).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Enemy;
/// let mut world = World::new();
/// assert!(!world.run_system_once(any_with_component::<Enemy>));
/// world.spawn(Enemy);
/// assert!(world.run_system_once(any_with_component::<Enemy>));
/// ```
pub fn any_with_component<T: crate::Component>(query: crate::Query<(), crate::With<T>>) -> bool {
    !query.is_empty()
}
