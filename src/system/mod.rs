//! Systems: the functions that hold a game's behaviour, and the schedule that
//! runs them.
//!
//! Any `fn` or closure whose parameters are [`SystemParam`]s is a system
//! ([`Query`](crate::Query), [`Res`](crate::Res), [`ResMut`](crate::ResMut),
//! [`Commands`](crate::Commands), [`Local`], `&World`, ...); so is a
//! function taking `&mut World` alone (an *exclusive* system). Parameters
//! declare what a system reads and writes ([`SystemAccess`]); the
//! [`Schedule`] runs systems whose access does not conflict at the same
//! time, and keeps the rest in order.
//!
//! # Safety policy
//!
//! Running systems side by side hands each one a shared `&World` from which
//! its parameters borrow (through the query and storage layers' raw
//! pointers). The one `unsafe` contract here is [`System::run_unsafe`]: no
//! system running at the same time may conflict with it. The executor, which
//! alone calls it, upholds it from the access each system recorded.

mod access;
mod condition;
mod config;
mod executor;
mod fallible;
mod fixed;
mod observer_system;
mod param;
mod param_set;
mod pipe;
mod registry;
mod schedule;
mod set_configs;
mod state;
mod timing;

pub use access::SystemAccess;
pub use condition::{
    CombinedCondition, Condition, NotCondition, any_with_component, not, on_event, resource_added,
    resource_changed, resource_exists, run_once,
};
pub use config::{IntoLabel, IntoSystemConfigs, SystemConfigs, SystemSet};
pub use executor::ExecutorKind;
pub use fallible::{
    ErrorContext, ErrorHandler, IntoSystemOutput, SystemError, SystemResult, log_error,
    panic_on_error,
};
pub use fixed::{FixedTime, FixedUpdate};
pub use observer_system::ObserverFunction;
pub use param::{Local, SystemParam, SystemParamItem, SystemSkip};
pub use param_set::ParamSet;
pub use pipe::{In, PipeSystem};
pub use registry::{RunSystemError, SystemId};
pub use schedule::{Schedule, ScheduleError, SetConfig, SystemConfig};
pub use set_configs::{IntoSetConfigs, SetConfigs};
pub use state::{
    NextState, OnEnter, OnExit, OnTransition, ScheduleLabel, State, StateScoped, States, in_state,
};
pub use timing::{SystemTiming, SystemTimings};

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::change::Tick;
use crate::query::TickRange;
use crate::world::{World, WorldId};

/// A system's name, access and last run: what its parameters see of it.
///
/// # Example
/// ```
/// use mosaic::{IntoSystem, System, World};
/// fn physics() {}
/// let mut s = physics.into_system();
/// s.initialize(&mut World::new()).unwrap();
/// assert!(s.name().ends_with("physics"));
/// ```
#[derive(Debug, Clone)]
pub struct SystemMeta {
    name: Cow<'static, str>,
    pub(crate) access: SystemAccess,
    pub(crate) last_run: Option<Tick>,
}

impl SystemMeta {
    pub(crate) fn new(name: Cow<'static, str>) -> Self {
        SystemMeta {
            name,
            access: SystemAccess::default(),
            last_run: None,
        }
    }

    /// The system's name.
    ///
    /// # Example
    /// ```
    /// use mosaic::{IntoSystem, System};
    /// fn physics() {}
    /// assert!(physics.into_system().name().ends_with("physics"));
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A runnable system. Made from a function with [`IntoSystem`]; the
/// schedule and [`World::run_system_once`] drive it.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{IntoSystem, System};
/// let mut world = World::new();
/// world.insert_resource(0u32);
/// let mut s = (|mut n: ResMut<u32>| *n += 1).into_system();
/// s.run(&mut world);
/// s.run(&mut world);
/// assert_eq!(*world.resource::<u32>(), 2);
/// ```
pub trait System: Send + 'static {
    /// What one run returns.
    type Out;

    /// The system's name (its function's type name unless the schedule
    /// names it).
    fn name(&self) -> &str;

    /// Builds the parameters' state on `world`. Fails, describing the
    /// problem, if the parameters conflict with each other. Calling it again
    /// for the same world does nothing; another world panics.
    fn initialize(&mut self, world: &mut World) -> Result<(), String>;

    /// What the parameters borrow (after `initialize`).
    fn access(&self) -> &SystemAccess;

    /// Runs once with a shared world.
    ///
    /// # Safety
    /// - `initialize` succeeded for `world`, and the system is not
    ///   exclusive;
    /// - nothing running at the same time conflicts with [`System::access`].
    unsafe fn run_unsafe(&mut self, world: &World) -> Self::Out;

    /// Runs once with the whole world (initializing first if needed, and
    /// panicking with the conflict if the parameters conflict), then applies
    /// its deferred commands.
    fn run(&mut self, world: &mut World) -> Self::Out;

    /// Applies deferred work (commands) recorded by earlier runs.
    fn apply_deferred(&mut self, world: &mut World);

    /// Like [`System::run_unsafe`], but a parameter may decline to run
    /// (a [`Single`](crate::Single) with no match): then nothing runs and
    /// the reason is returned. The schedule calls this one.
    ///
    /// # Safety
    /// As [`System::run_unsafe`].
    #[inline]
    unsafe fn try_run_unsafe(&mut self, world: &World) -> Result<Self::Out, SystemSkip> {
        // SAFETY: forwarded contract.
        Ok(unsafe { self.run_unsafe(world) })
    }

    /// Like [`System::run`], but returns the reason instead of running when
    /// a parameter declines.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{IntoSystem, System};
    /// #[derive(Component)] struct Player;
    /// let mut world = World::new();
    /// let mut s = (|_p: Single<&Player>| {}).into_system();
    /// assert!(s.try_run(&mut world).is_err());
    /// world.spawn(Player);
    /// assert!(s.try_run(&mut world).is_ok());
    /// ```
    fn try_run(&mut self, world: &mut World) -> Result<Self::Out, SystemSkip> {
        Ok(self.run(world))
    }
}

/// Things that become a [`System`]: functions and closures of system
/// parameters, functions of `&mut World`, and systems themselves.
///
/// `Marker` only tells the implementations apart; it is inferred.
///
/// # Example
/// ```
/// use mosaic::{IntoSystem, System};
/// fn hello() {}
/// let system = hello.into_system();
/// assert!(system.name().contains("hello"));
/// ```
pub trait IntoSystem<Marker>: Sized {
    /// The system this becomes.
    type System: System;
    /// Makes the system.
    fn into_system(self) -> Self::System;

    /// A system that runs this one, then `next` with this one's output as
    /// `next`'s [`In`] parameter (Bevy's `pipe`). The pair is one system
    /// to the schedule: both halves' access, run back to back.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(i32);
    /// fn lowest(q: Query<&Hp>) -> Option<i32> {
    ///     q.iter().map(|hp| hp.0).min()
    /// }
    /// fn warn(In(lowest): In<Option<i32>>, mut alarm: ResMut<bool>) {
    ///     *alarm = lowest.is_some_and(|hp| hp < 10);
    /// }
    /// let mut world = World::new();
    /// world.insert_resource(false);
    /// world.spawn_batch([Hp(50), Hp(5)]);
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(lowest.pipe(warn));
    /// schedule.run(&mut world);
    /// assert!(*world.resource::<bool>());
    /// ```
    fn pipe<MB, B: IntoSystem<MB>>(self, next: B) -> PipeSystem<Self::System, B::System>
    where
        <Self::System as System>::Out: Send + 'static,
    {
        PipeSystem::new(self.into_system(), next.into_system())
    }
}

/// Marker for [`IntoSystem`] on functions of system parameters.
#[doc(hidden)]
pub struct IsFunctionSystem;
/// Marker for [`IntoSystem`] on functions of `&mut World`.
#[doc(hidden)]
pub struct IsExclusiveSystem;
/// Marker for [`IntoSystem`] on systems.
#[doc(hidden)]
pub struct IsSystem;

impl<S: System> IntoSystem<IsSystem> for S {
    type System = S;
    fn into_system(self) -> S {
        self
    }
}

/// A function whose parameters are all [`SystemParam`]s. Implemented for
/// every such `fn` and closure of up to 16 parameters.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::SystemParamFunction;
/// fn takes<M, F: SystemParamFunction<M>>(_: F) {}
/// takes(|_q: Query<Entity>, _n: Local<u8>| {});
/// ```
pub trait SystemParamFunction<Marker>: Send + 'static {
    /// The parameters, as a tuple.
    type Param: SystemParam;
    /// What the function returns.
    type Out;
    /// Calls the function.
    fn run(&mut self, param: SystemParamItem<'_, '_, Self::Param>) -> Self::Out;
}

macro_rules! impl_system_function {
    ($($p:ident),*) => {
        #[allow(non_snake_case)]
        impl<Out, Func, $($p),*> SystemParamFunction<fn($($p,)*) -> Out> for Func
        where
            Func: Send + 'static,
            for<'a> &'a mut Func: FnMut($($p),*) -> Out + FnMut($(SystemParamItem<$p>),*) -> Out,
            Out: 'static,
            $($p: SystemParam,)*
        {
            type Param = ($($p,)*);
            type Out = Out;

            #[inline]
            fn run(&mut self, param: SystemParamItem<'_, '_, ($($p,)*)>) -> Out {
                // Calling through a generic helper lets the compiler pick the
                // `FnMut(SystemParamItem<..>)` implementation.
                #[allow(clippy::too_many_arguments)]
                fn call<Out, $($p),*>(mut f: impl FnMut($($p),*) -> Out, $($p: $p),*) -> Out {
                    f($($p),*)
                }
                let ($($p,)*) = param;
                call(self, $($p),*)
            }
        }
    };
}

crate::bundle::all_tuples!(impl_system_function);

/// A system made from a function of system parameters.
pub struct FunctionSystem<Marker, F: SystemParamFunction<Marker>> {
    func: F,
    state: Option<<F::Param as SystemParam>::State>,
    meta: SystemMeta,
    world: Option<WorldId>,
    marker: PhantomData<fn() -> Marker>,
}

impl<Marker, F: SystemParamFunction<Marker>> fmt::Debug for FunctionSystem<Marker, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionSystem")
            .field("name", &self.meta.name)
            .finish()
    }
}

impl<Marker: 'static, F: SystemParamFunction<Marker>> IntoSystem<(IsFunctionSystem, Marker)> for F {
    type System = FunctionSystem<Marker, F>;
    fn into_system(self) -> Self::System {
        FunctionSystem {
            func: self,
            state: None,
            meta: SystemMeta::new(Cow::Borrowed(std::any::type_name::<F>())),
            world: None,
            marker: PhantomData,
        }
    }
}

/// Refuses a system made for another world.
fn check_world(system: &str, bound: Option<WorldId>, world: &World) {
    if let Some(id) = bound {
        assert!(
            id == world.id(),
            "system `{system}` was initialized for world {id:?} and cannot run on world {:?}",
            world.id()
        );
    }
}

impl<Marker: 'static, F: SystemParamFunction<Marker>> System for FunctionSystem<Marker, F> {
    type Out = F::Out;

    fn name(&self) -> &str {
        &self.meta.name
    }

    fn initialize(&mut self, world: &mut World) -> Result<(), String> {
        check_world(&self.meta.name, self.world, world);
        if self.state.is_none() {
            self.state = Some(F::Param::init_state(world, &mut self.meta));
            self.world = Some(world.id());
        }
        match self.meta.access.conflict() {
            Some(conflict) => Err(conflict.to_owned()),
            None => Ok(()),
        }
    }

    fn access(&self) -> &SystemAccess {
        &self.meta.access
    }

    unsafe fn run_unsafe(&mut self, world: &World) -> F::Out {
        // SAFETY: forwarded contract.
        match unsafe { self.try_run_unsafe(world) } {
            Ok(out) => out,
            Err(skip) => panic!("system `{}` cannot run: {skip}", self.meta.name),
        }
    }

    #[inline]
    unsafe fn try_run_unsafe(&mut self, world: &World) -> Result<F::Out, SystemSkip> {
        check_world(&self.meta.name, self.world, world);
        let state = self
            .state
            .as_mut()
            .expect("system initialized before it runs");
        let this_run = world.increment_change_tick();
        let ticks = TickRange::since(self.meta.last_run, this_run);
        // SAFETY: initialized for `world` (checked); no conflicting system
        // runs alongside (contract).
        let params = unsafe { F::Param::try_get_param(state, &self.meta, world, ticks) }?;
        let out = self.func.run(params);
        self.meta.last_run = Some(this_run);
        Ok(out)
    }

    fn run(&mut self, world: &mut World) -> F::Out {
        match self.try_run(world) {
            Ok(out) => out,
            Err(skip) => panic!("system `{}` cannot run: {skip}", self.meta.name),
        }
    }

    fn try_run(&mut self, world: &mut World) -> Result<F::Out, SystemSkip> {
        if let Err(conflict) = self.initialize(world) {
            panic!("system `{}` cannot run: {conflict}", self.meta.name);
        }
        // SAFETY: initialized (just above); `&mut World` excludes everything
        // else; a function system is never exclusive.
        let out = unsafe { self.try_run_unsafe(world) };
        self.apply_deferred(world);
        out
    }

    fn apply_deferred(&mut self, world: &mut World) {
        if let Some(state) = self.state.as_mut() {
            F::Param::apply(state, &self.meta, world);
        }
    }
}

/// A system made from a function of `&mut World`: it runs alone, with the
/// whole world.
pub struct ExclusiveSystem<F, Out> {
    func: F,
    meta: SystemMeta,
    marker: PhantomData<fn() -> Out>,
}

impl<F, Out> fmt::Debug for ExclusiveSystem<F, Out> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExclusiveSystem")
            .field("name", &self.meta.name)
            .finish()
    }
}

impl<Out: 'static, F: FnMut(&mut World) -> Out + Send + 'static>
    IntoSystem<(IsExclusiveSystem, Out)> for F
{
    type System = ExclusiveSystem<F, Out>;
    fn into_system(self) -> Self::System {
        let mut meta = SystemMeta::new(Cow::Borrowed(std::any::type_name::<F>()));
        meta.access.set_exclusive();
        ExclusiveSystem {
            func: self,
            meta,
            marker: PhantomData,
        }
    }
}

impl<Out: 'static, F: FnMut(&mut World) -> Out + Send + 'static> System
    for ExclusiveSystem<F, Out>
{
    type Out = Out;

    fn name(&self) -> &str {
        &self.meta.name
    }

    fn initialize(&mut self, _world: &mut World) -> Result<(), String> {
        Ok(())
    }

    fn access(&self) -> &SystemAccess {
        &self.meta.access
    }

    unsafe fn run_unsafe(&mut self, _world: &World) -> Out {
        panic!(
            "exclusive system `{}` needs `&mut World`; run it with `run`",
            self.meta.name
        )
    }

    fn run(&mut self, world: &mut World) -> Out {
        (self.func)(world)
    }

    fn apply_deferred(&mut self, _world: &mut World) {}
}

impl World {
    /// Runs `system` once, now, outside any schedule (a spell cast on
    /// demand), applies its commands, and returns its output. The system is
    /// built fresh: its `Local`s start at their defaults and its change
    /// filters see everything.
    ///
    /// Panics if the system's parameters conflict; a panic inside the system
    /// is re-raised with the system's name in its message.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Health(u32);
    /// let mut world = World::new();
    /// world.spawn_batch([Health(1), Health(2)]);
    /// let total = world.run_system_once(|q: Query<&Health>| q.iter().map(|h| h.0).sum::<u32>());
    /// assert_eq!(total, 3);
    /// ```
    pub fn run_system_once<M, S: IntoSystem<M>>(
        &mut self,
        system: S,
    ) -> <S::System as System>::Out {
        let mut system = system.into_system();
        let name = system.name().to_owned();
        run_named(&name, || system.run(self))
    }
}

/// `system`, boxed as the schedule keeps it (its output made a
/// [`SystemResult`]).
pub(crate) fn boxed<S: System<Out: IntoSystemOutput>>(system: S) -> config::BoxedSystem {
    Box::new(fallible::ResultSystem(system))
}

/// Runs `f`, re-raising a panic as a `String` that names system `name`.
pub(crate) fn run_named<T>(name: &str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(out) => out,
        Err(payload) => resume_unwind(name_panic(name, payload)),
    }
}

/// A panic payload that names the system it came from.
pub(crate) fn name_panic(name: &str, payload: Box<dyn Any + Send>) -> Box<dyn Any + Send> {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    };
    Box::new(format!("system `{name}` panicked: {message}"))
}
