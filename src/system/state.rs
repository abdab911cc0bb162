//! States: a finite state machine the game is in (title, playing, game
//! over), with schedules run on entering and leaving each state.
//!
//! `world.init_state::<S>()` (or [`World::insert_state`]) adds the
//! [`State<S>`] resource (the current state) and [`NextState<S>`] (where
//! systems ask for a change). Systems go in [`OnEnter`], [`OnExit`] and
//! [`OnTransition`] schedules with [`World::add_systems`]; [`in_state`]
//! guards systems that only run in one state; entities spawned with
//! [`StateScoped`] are despawned when their state is left.
//!
//! See [`States`] for when transitions happen and in which order.

use std::fmt;
use std::hash::Hash;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::{IntoSystemConfigs, Schedule};
use crate::component::Component;
use crate::entity::Entity;
use crate::query::Query;
use crate::resource::Res;
use crate::storage::DeferredPanic;
use crate::world::World;

/// A type whose values are the states of a state machine: usually a
/// fieldless enum, with `#[derive(States)]` beside the usual
/// `Clone, PartialEq, Eq, Hash, Debug`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
/// enum GameState { #[default] Title, Playing, GameOver }
/// let mut world = World::new();
/// world.init_state::<GameState>();
/// assert_eq!(*world.resource::<State<GameState>>().get(), GameState::Title);
/// ```
///
/// # When transitions happen
///
/// [`World::apply_state_transitions`] applies them, and
/// [`Schedule::run_frame`](crate::Schedule::run_frame) calls it at the
/// start of every frame, after advancing [`Time`](crate::Time) and before
/// the frame's fixed steps and systems: a state set during frame *n*
/// takes effect at the start of frame *n + 1*, and the whole of frame
/// *n + 1* sees the new state. A program running schedules with
/// [`Schedule::run`](crate::Schedule::run) calls it itself where it likes.
///
/// For each state type, in the order they were initialized, a pending
/// change from `old` to `new` runs, in this order: `OnExit(old)`; despawn
/// of the entities `StateScoped(old)`; `State<S>` becomes `new`;
/// `OnTransition { exited: old, entered: new }`; `OnEnter(new)`. Each runs
/// once. Setting the state it is already in does nothing. A change asked
/// for by those schedules waits for the next call. The first call also runs
/// `OnEnter` of the initial state. A panic in one of these schedules does
/// not stop the change half-way: the later steps still run, `State<S>` is
/// `new`, and then the first panic is raised.
pub trait States: Clone + PartialEq + Eq + Hash + fmt::Debug + Send + Sync + 'static {}

/// The current state of type `S` (a resource). Change it through
/// [`NextState<S>`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug)]
/// enum Phase { Day, Night }
/// let mut world = World::new();
/// world.insert_state(Phase::Night);
/// let night = world.run_system_once(|s: Res<State<Phase>>| *s.get() == Phase::Night);
/// assert!(night);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State<S: States>(S);

impl<S: States> State<S> {
    /// The current state.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug)]
    /// enum Phase { Day, Night }
    /// let mut world = World::new();
    /// world.insert_state(Phase::Day);
    /// assert_eq!(world.resource::<State<Phase>>().get(), &Phase::Day);
    /// ```
    pub fn get(&self) -> &S {
        &self.0
    }
}

/// The state to change to at the next transition point (a resource):
/// systems call [`NextState::set`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
/// enum GameState { #[default] Title, Playing }
/// let mut world = World::new();
/// world.init_state::<GameState>();
/// world.run_system_once(|mut next: ResMut<NextState<GameState>>| next.set(GameState::Playing));
/// world.apply_state_transitions();
/// assert_eq!(*world.resource::<State<GameState>>().get(), GameState::Playing);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NextState<S: States>(Option<S>);

impl<S: States> NextState<S> {
    /// Asks to change to `state` at the next transition point (replacing
    /// any earlier request).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    /// enum S { #[default] A, B }
    /// let mut world = World::new();
    /// world.init_state::<S>();
    /// world.resource_mut::<NextState<S>>().set(S::B);
    /// assert_eq!(world.resource::<NextState<S>>().pending(), Some(&S::B));
    /// ```
    pub fn set(&mut self, state: S) {
        self.0 = Some(state);
    }

    /// The requested state, if any.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    /// enum S { #[default] A }
    /// let mut world = World::new();
    /// world.init_state::<S>();
    /// assert_eq!(world.resource::<NextState<S>>().pending(), None);
    /// ```
    pub fn pending(&self) -> Option<&S> {
        self.0.as_ref()
    }

    /// Withdraws the request.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    /// enum S { #[default] A, B }
    /// let mut world = World::new();
    /// world.init_state::<S>();
    /// let mut next = world.resource_mut::<NextState<S>>();
    /// next.set(S::B);
    /// next.reset();
    /// assert_eq!(next.pending(), None);
    /// ```
    pub fn reset(&mut self) {
        self.0 = None;
    }
}

/// The schedule run on entering state `S` (see [`States`] for when).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
/// enum GameState { #[default] Title, Playing }
/// #[derive(Component)] struct Level;
/// let mut world = World::new();
/// world.init_state::<GameState>();
/// world.add_systems(OnEnter(GameState::Playing), |mut c: Commands| { c.spawn(Level); });
/// world.resource_mut::<NextState<GameState>>().set(GameState::Playing);
/// world.apply_state_transitions();
/// assert_eq!(world.len(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OnEnter<S: States>(pub S);

/// The schedule run on leaving state `S`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
/// enum GameState { #[default] Playing, Paused }
/// let mut world = World::new();
/// world.insert_resource(0u32);
/// world.init_state::<GameState>();
/// world.add_systems(OnExit(GameState::Playing), |mut n: ResMut<u32>| *n += 1);
/// world.resource_mut::<NextState<GameState>>().set(GameState::Paused);
/// world.apply_state_transitions();
/// assert_eq!(*world.resource::<u32>(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OnExit<S: States>(pub S);

/// The schedule run on one particular change, between `OnExit(exited)` and
/// `OnEnter(entered)`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
/// enum S { #[default] A, B }
/// let mut world = World::new();
/// world.insert_resource(0u32);
/// world.init_state::<S>();
/// world.add_systems(OnTransition { exited: S::A, entered: S::B }, |mut n: ResMut<u32>| *n += 1);
/// world.resource_mut::<NextState<S>>().set(S::B);
/// world.apply_state_transitions();
/// assert_eq!(*world.resource::<u32>(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OnTransition<S: States> {
    /// The state left.
    pub exited: S,
    /// The state entered.
    pub entered: S,
}

/// Marks an entity as belonging to state `S`'s value: it is despawned when
/// that state is left (after `OnExit`), with its whole subtree through
/// [`ChildOf`](crate::ChildOf) (as by [`World::despawn_recursive`]), and
/// also if it is [`Disabled`](crate::Disabled). All the scoped entities go
/// in one sweep: decided first, then despawned, observers' commands after.
/// One whose subtree holds an entity that a relation keeps alive
/// ([`OnTargetDespawn::Refuse`](crate::OnTargetDespawn::Refuse)) stays,
/// with its subtree.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
/// enum GameState { #[default] Title, Playing }
/// let mut world = World::new();
/// world.init_state::<GameState>();
/// let menu = world.spawn(StateScoped(GameState::Title));
/// world.resource_mut::<NextState<GameState>>().set(GameState::Playing);
/// world.apply_state_transitions();
/// assert!(!world.contains(menu));
/// ```
///
/// A scoped parent takes its children along:
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
/// enum GameState { #[default] Title, Playing }
/// let mut world = World::new();
/// world.init_state::<GameState>();
/// let menu = world.spawn(StateScoped(GameState::Title));
/// let button = world.spawn_child(menu, ()).unwrap();
/// world.resource_mut::<NextState<GameState>>().set(GameState::Playing);
/// world.apply_state_transitions();
/// assert!(!world.contains(button));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateScoped<S: States>(pub S);

impl<S: States> Component for StateScoped<S> {}

/// A schedule kept in the world, named by a label: [`OnEnter`],
/// [`OnExit`], [`OnTransition`] or [`FixedUpdate`](crate::FixedUpdate);
/// see [`World::add_systems`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::ScheduleLabel;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug)]
/// enum S { A }
/// fn takes<L: ScheduleLabel>(_: L) {}
/// takes(OnEnter(S::A));
/// takes(FixedUpdate);
/// ```
pub trait ScheduleLabel: Clone {
    /// The labelled schedule in `world`, made empty if new.
    #[doc(hidden)]
    fn schedule_mut(self, world: &mut World) -> &mut Schedule;

    /// The labelled schedule in `world`, if it was ever made.
    #[doc(hidden)]
    fn schedule_ref(self, world: &World) -> Option<&Schedule>;
}

impl<S: States> ScheduleLabel for OnEnter<S> {
    fn schedule_mut(self, world: &mut World) -> &mut Schedule {
        let machine = world.resource_or_default::<StateMachine<S>>();
        entry(&mut machine.enter, self.0)
    }

    fn schedule_ref(self, world: &World) -> Option<&Schedule> {
        find(&world.get_resource::<StateMachine<S>>()?.enter, &self.0)
    }
}

impl<S: States> ScheduleLabel for OnExit<S> {
    fn schedule_mut(self, world: &mut World) -> &mut Schedule {
        let machine = world.resource_or_default::<StateMachine<S>>();
        entry(&mut machine.exit, self.0)
    }

    fn schedule_ref(self, world: &World) -> Option<&Schedule> {
        find(&world.get_resource::<StateMachine<S>>()?.exit, &self.0)
    }
}

impl<S: States> ScheduleLabel for OnTransition<S> {
    fn schedule_mut(self, world: &mut World) -> &mut Schedule {
        let machine = world.resource_or_default::<StateMachine<S>>();
        entry(&mut machine.transition, (self.exited, self.entered))
    }

    fn schedule_ref(self, world: &World) -> Option<&Schedule> {
        let machine = world.get_resource::<StateMachine<S>>()?;
        find(&machine.transition, &(self.exited, self.entered))
    }
}

fn find<'a, K: PartialEq>(list: &'a [(K, Schedule)], key: &K) -> Option<&'a Schedule> {
    list.iter().find(|(k, _)| k == key).map(|(_, s)| s)
}

fn entry<K: PartialEq>(list: &mut Vec<(K, Schedule)>, key: K) -> &mut Schedule {
    let index = match list.iter().position(|(k, _)| *k == key) {
        Some(index) => index,
        None => {
            list.push((key, Schedule::new()));
            list.len() - 1
        }
    };
    &mut list[index].1
}

/// State `S`'s schedules and whether its initial state was entered (a
/// resource).
struct StateMachine<S: States> {
    enter: Vec<(S, Schedule)>,
    exit: Vec<(S, Schedule)>,
    transition: Vec<((S, S), Schedule)>,
    entered: bool,
}

impl<S: States> Default for StateMachine<S> {
    fn default() -> Self {
        StateMachine {
            enter: Vec::new(),
            exit: Vec::new(),
            transition: Vec::new(),
            entered: false,
        }
    }
}

impl<S: States> fmt::Debug for StateMachine<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateMachine")
            .field("entered", &self.entered)
            .finish_non_exhaustive()
    }
}

/// Every state type's transition step, in the order initialized.
#[derive(Default)]
struct StateTypes(Vec<fn(&mut World)>);

/// A condition: true while state `S` is `state` (false before
/// `init_state`).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
/// enum GameState { #[default] Title, Playing }
/// let mut world = World::new();
/// world.insert_resource(0u32);
/// world.init_state::<GameState>();
/// let mut schedule = Schedule::new();
/// schedule
///     .add_system("score", |mut n: ResMut<u32>| *n += 1)
///     .run_if(in_state(GameState::Playing));
/// schedule.run(&mut world);
/// world.resource_mut::<NextState<GameState>>().set(GameState::Playing);
/// world.apply_state_transitions();
/// schedule.run(&mut world);
/// assert_eq!(*world.resource::<u32>(), 1);
/// ```
pub fn in_state<S: States>(state: S) -> impl FnMut(Option<Res<State<S>>>) -> bool + Send + 'static {
    move |current: Option<Res<State<S>>>| current.is_some_and(|c| c.0 == state)
}

impl World {
    /// Starts state machine `S` in `S::default()`; see [`World::insert_state`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    /// enum S { #[default] A }
    /// let mut world = World::new();
    /// world.init_state::<S>();
    /// assert!(world.contains_resource::<State<S>>());
    /// ```
    pub fn init_state<S: States + Default>(&mut self) {
        self.insert_state(S::default());
    }

    /// Starts state machine `S` in `state`: inserts [`State<S>`] and an
    /// empty [`NextState<S>`]. `OnEnter(state)` runs at the first
    /// [`World::apply_state_transitions`]. Calling it again restarts the
    /// machine in `state` (its schedules are kept).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug)]
    /// enum S { A, B }
    /// let mut world = World::new();
    /// world.insert_state(S::B);
    /// assert_eq!(*world.resource::<State<S>>().get(), S::B);
    /// ```
    pub fn insert_state<S: States>(&mut self, state: S) {
        let new = !self.contains_resource::<StateMachine<S>>();
        self.insert_resource(State(state));
        self.insert_resource(NextState::<S>(None));
        self.resource_or_default::<StateMachine<S>>().entered = false;
        if new {
            self.resource_or_default::<StateTypes>()
                .0
                .push(apply_transition::<S>);
        }
    }

    /// Adds systems to a schedule the world keeps: one of a state's
    /// ([`OnEnter`], [`OnExit`], [`OnTransition`]) or the fixed-step one
    /// ([`FixedUpdate`](crate::FixedUpdate)), taking what
    /// [`Schedule::add_systems`] takes.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    /// enum GameState { #[default] Title, Playing }
    /// fn spawn_level() {}
    /// fn show_score() {}
    /// let mut world = World::new();
    /// world.init_state::<GameState>();
    /// world
    ///     .add_systems(OnEnter(GameState::Playing), (spawn_level, show_score).chain())
    ///     .add_systems(OnExit(GameState::Playing), || {});
    /// ```
    pub fn add_systems<L: ScheduleLabel, M>(
        &mut self,
        label: L,
        systems: impl IntoSystemConfigs<M>,
    ) -> &mut Self {
        label.schedule_mut(self).add_systems(systems);
        self
    }

    /// The schedule kept under `label` ([`OnEnter`], [`OnExit`],
    /// [`OnTransition`] or [`FixedUpdate`](crate::FixedUpdate)), made empty
    /// if new: name its systems, order them, put them in sets with
    /// conditions, or switch timing on, as with any [`Schedule`].
    /// ([`World::add_systems`] is the short form for unnamed systems.)
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let fixed = world.schedule_mut(FixedUpdate);
    /// fixed.add_system("count", |mut n: ResMut<u32>| *n += 1);
    /// fixed.set_timing(true);
    /// Schedule::new().run_frame(&mut world, FixedTime::default().timestep());
    /// assert_eq!(*world.resource::<u32>(), 1);
    /// assert_eq!(world.schedule_mut(FixedUpdate).timings().rows()[0].runs, 1);
    /// ```
    pub fn schedule_mut<L: ScheduleLabel>(&mut self, label: L) -> &mut Schedule {
        label.schedule_mut(self)
    }

    /// The schedule kept under `label`, or `None` if none was ever made
    /// (unlike [`World::schedule_mut`], this never makes one: a world
    /// without a [`FixedUpdate`](crate::FixedUpdate) schedule stays so).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// assert!(world.get_schedule(FixedUpdate).is_none());
    /// world.add_systems(FixedUpdate, || {});
    /// assert_eq!(world.get_schedule(FixedUpdate).unwrap().system_names().len(), 1);
    /// ```
    pub fn get_schedule<L: ScheduleLabel>(&self, label: L) -> Option<&Schedule> {
        label.schedule_ref(self)
    }

    /// Runs `f` with the schedule kept under `label` taken out of the world,
    /// so that `f` may use both (to [`Schedule::build`] it, or run it by
    /// hand). The schedule is put back afterwards, also when `f` panics.
    /// Systems added under `label` meanwhile (say, by one of its own
    /// exclusive systems) are added to it then, named as
    /// [`Schedule::add_systems`] names them (`f#2` if `f` is taken).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// world.add_systems(FixedUpdate, |mut n: ResMut<u32>| *n += 1);
    /// world.schedule_scope(FixedUpdate, |world, fixed| {
    ///     fixed.build(world).unwrap();
    ///     fixed.run(world);
    /// });
    /// assert_eq!(*world.resource::<u32>(), 1);
    /// ```
    pub fn schedule_scope<L: ScheduleLabel, R>(
        &mut self,
        label: L,
        f: impl FnOnce(&mut World, &mut Schedule) -> R,
    ) -> R {
        let mut schedule = std::mem::take(label.clone().schedule_mut(self));
        let outcome = catch_unwind(AssertUnwindSafe(|| f(self, &mut schedule)));
        // Systems added under `label` meanwhile (by a system of this very
        // schedule) went to the empty stand-in: keep them.
        let added = std::mem::replace(label.clone().schedule_mut(self), schedule);
        label.schedule_mut(self).absorb(added);
        outcome.unwrap_or_else(|payload| resume_unwind(payload))
    }

    /// Runs the schedule kept under `label` once, as Bevy's
    /// `World::run_schedule` (through [`World::schedule_scope`], so the
    /// schedule may add systems to itself). A label with no schedule runs
    /// nothing. [`Schedule::run_frame`](crate::Schedule::run_frame) is the
    /// frame loop that runs [`FixedUpdate`](crate::FixedUpdate) as many
    /// times as the clock says; this runs it exactly once.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// world.add_systems(FixedUpdate, |mut n: ResMut<u32>| *n += 1);
    /// world.run_schedule(FixedUpdate);
    /// world.run_schedule(FixedUpdate);
    /// assert_eq!(*world.resource::<u32>(), 2);
    /// ```
    pub fn run_schedule<L: ScheduleLabel>(&mut self, label: L) {
        if self.get_schedule(label.clone()).is_none() {
            return;
        }
        self.schedule_scope(label, |world, schedule| schedule.run(world));
    }

    /// Applies every state type's pending change (see the
    /// [`States`] for the order), and runs `OnEnter` of
    /// initial states not yet entered. The schedules it runs belong to the
    /// frame: they do not advance the event buffers, so events sent before
    /// (or by them) reach the frame's readers.
    /// [`Schedule::run_frame`](crate::Schedule::run_frame) calls it at the
    /// start of each frame.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    /// enum S { #[default] A, B }
    /// let mut world = World::new();
    /// world.init_state::<S>();
    /// world.resource_mut::<NextState<S>>().set(S::B);
    /// assert_eq!(*world.resource::<State<S>>().get(), S::A); // not yet
    /// world.apply_state_transitions();
    /// assert_eq!(*world.resource::<State<S>>().get(), S::B);
    /// ```
    pub fn apply_state_transitions(&mut self) {
        let Some(types) = self.get_resource::<StateTypes>() else {
            return;
        };
        let types = types.0.clone();
        // Part of the frame: the schedules run here leave the events to it.
        self.in_frame(|world| {
            for apply in types {
                apply(world);
            }
        });
    }
}

/// State `S`'s step of [`World::apply_state_transitions`].
fn apply_transition<S: States>(world: &mut World) {
    let Some(current) = world.get_resource::<State<S>>().map(|s| s.0.clone()) else {
        return;
    };
    let first = !world
        .get_resource::<StateMachine<S>>()
        .is_some_and(|m| m.entered);
    if first {
        world.resource_or_default::<StateMachine<S>>().entered = true;
        run_state_schedule(world, OnEnter(current.clone()));
    }
    // Look before taking, so that a frame with nothing pending does not
    // mark NextState changed.
    let pending = world
        .get_resource::<NextState<S>>()
        .is_some_and(|n| n.0.is_some());
    if !pending {
        return;
    }
    let Some(next) = world.resource_mut::<NextState<S>>().0.take() else {
        return;
    };
    if next == current {
        return;
    }
    // Every step runs, whatever panics on the way (the request is taken:
    // stopping after `OnExit` would leave the change neither made nor
    // pending); the first panic is raised at the end.
    let mut panics = DeferredPanic::new();
    panics.run(|| run_state_schedule(world, OnExit(current.clone())));
    panics.run(|| despawn_scoped(world, &current));
    world.insert_resource(State(next.clone()));
    panics.run(|| {
        run_state_schedule(
            world,
            OnTransition {
                exited: current,
                entered: next.clone(),
            },
        )
    });
    panics.run(|| run_state_schedule(world, OnEnter(next)));
    panics.resume();
}

/// Runs one labelled schedule, if it exists. It is taken out of the world
/// while it runs and put back afterwards, also when a system panics.
pub(crate) fn run_state_schedule<L: ScheduleLabel>(world: &mut World, label: L) {
    run_labelled(world, label, 1);
}

/// Runs the labelled schedule `times` times, if it has systems. It is taken
/// out of the world while it runs and put back afterwards, also when a
/// system panics.
pub(crate) fn run_labelled<L: ScheduleLabel>(world: &mut World, label: L, times: u32) {
    if times == 0 {
        return;
    }
    world.schedule_scope(label, |world, schedule| {
        if schedule.is_empty() {
            return;
        }
        for _ in 0..times {
            schedule.run(world);
        }
    });
}

/// Despawns the entities scoped to `exited`, disabled ones too, each with
/// its whole subtree (as Bevy does): one sweep ([`World::despawn_recursive`]
/// of them all at once). A scoped entity whose subtree holds one that a
/// relation keeps alive (`OnTargetDespawn::Refuse`) stays, with its
/// subtree, as a `despawn` of it would be refused.
fn despawn_scoped<S: States>(world: &mut World, exited: &S) {
    let exited = exited.clone();
    // Naming `Disabled` makes the query see disabled entities.
    let doomed = world.run_system_once(
        move |q: Query<(Entity, &StateScoped<S>, crate::query::Has<crate::Disabled>)>| {
            q.iter()
                .filter(|(_, s, _)| s.0 == exited)
                .map(|(e, _, _)| e)
                .collect::<Vec<_>>()
        },
    );
    // Already gone (an OnExit system despawned it): nothing to do.
    let _ = world.despawn_subtrees(&doomed, crate::relation::OnRefused::Keep);
}
