//! Observers whose parameters are system parameters: `world.add_observer`
//! takes a function of a [`Trigger`] and any [`SystemParam`]s (`Query`,
//! `Res`, `ResMut`, `Commands`, `Local`, ...), the shape a system has.
//!
//! The observer runs where observers run (see [`World::observe`]), with the
//! whole world to itself, so its parameters cannot clash with anything but
//! each other (a conflict panics, naming the observer, when it first runs).
//! Its `Commands` join the observers' queue, applied after the operation
//! that triggered it like those of [`DeferredWorld::commands`]. Its
//! `Local`s and change detection persist between triggers. A `Single` that
//! finds no fit skips the observer, with a warning.

use std::borrow::Cow;
use std::sync::Mutex;

use super::{SystemMeta, SystemParam, SystemParamItem};
use crate::observer::{DeferredWorld, ObserverEvent, ObserverId, Trigger};
use crate::query::TickRange;
use crate::world::World;

/// A function of a [`Trigger<E>`] followed by up to 15 system parameters:
/// what [`World::add_observer`] takes.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::ObserverFunction;
/// struct Ping;
/// fn takes<M, F: ObserverFunction<Ping, M>>(_: F) {}
/// takes(|_t: Trigger<Ping>, _n: Res<u32>| {});
/// ```
pub trait ObserverFunction<E, Marker>: Send + 'static {
    /// The parameters after the trigger, as a tuple.
    type Param: SystemParam;
    /// The trigger's second parameter: `()`, or the component of Bevy's
    /// spelling `Trigger<OnAdd, T>` (see [`ObserverEvent`]).
    type Component: 'static;
    /// Calls the function.
    fn run(
        &mut self,
        trigger: Trigger<'_, E, Self::Component>,
        param: SystemParamItem<'_, '_, Self::Param>,
    );
}

macro_rules! impl_observer_function {
    ($($p:ident),*) => {
        #[allow(non_snake_case)]
        impl<E: 'static, C: 'static, Func, $($p),*> ObserverFunction<E, fn(Trigger<E, C>, $($p,)*)> for Func
        where
            Func: Send + 'static,
            for<'a> &'a mut Func: FnMut(Trigger<'_, E, C>, $($p),*)
                + FnMut(Trigger<'_, E, C>, $(SystemParamItem<$p>),*),
            $($p: SystemParam,)*
        {
            type Param = ($($p,)*);
            type Component = C;

            #[inline]
            fn run(&mut self, trigger: Trigger<'_, E, C>, param: SystemParamItem<'_, '_, ($($p,)*)>) {
                #[allow(clippy::too_many_arguments)]
                fn call<E, C, $($p),*>(
                    mut f: impl FnMut(Trigger<'_, E, C>, $($p),*),
                    trigger: Trigger<'_, E, C>,
                    $($p: $p),*
                ) {
                    f(trigger, $($p),*)
                }
                let ($($p,)*) = param;
                call(self, trigger, $($p),*)
            }
        }
    };
}

impl_observer_function!();
impl_observer_function!(B0);
impl_observer_function!(B0, B1);
impl_observer_function!(B0, B1, B2);
impl_observer_function!(B0, B1, B2, B3);
impl_observer_function!(B0, B1, B2, B3, B4);
impl_observer_function!(B0, B1, B2, B3, B4, B5);
impl_observer_function!(B0, B1, B2, B3, B4, B5, B6);
impl_observer_function!(B0, B1, B2, B3, B4, B5, B6, B7);

/// An observer's parameters, built on its first run.
struct ObserverState<S> {
    state: S,
    meta: SystemMeta,
}

/// The parameter state of observer function `F`, once built.
type BuiltState<F, E, M> =
    Option<ObserverState<<<F as ObserverFunction<E, M>>::Param as SystemParam>::State>>;

impl World {
    /// Registers an observer of `E` whose parameters, after the
    /// [`Trigger`], are system parameters (up to 8); see
    /// [`World::observe`] for when observers run. Its commands are applied
    /// after the operation that triggered it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Hp(u32);
    /// struct Explosion(u32);
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// world.spawn_batch([Hp(5), Hp(30)]);
    /// world.add_observer(
    ///     |t: Trigger<Explosion>, mut q: Query<(Entity, &mut Hp)>, mut kills: ResMut<u32>, mut c: Commands| {
    ///         for (e, hp) in q.iter_mut() {
    ///             hp.0 = hp.0.saturating_sub(t.event().0);
    ///             if hp.0 == 0 {
    ///                 *kills += 1;
    ///                 c.despawn(e);
    ///             }
    ///         }
    ///     },
    /// );
    /// world.trigger(Explosion(10));
    /// assert_eq!(*world.resource::<u32>(), 1);
    /// assert_eq!(world.len(), 1);
    /// ```
    pub fn add_observer<E, M, F>(&mut self, observer: F) -> ObserverId
    where
        E: ObserverEvent<F::Component>,
        F: ObserverFunction<E, M>,
    {
        let name = super::config::default_name(std::any::type_name::<F>());
        // In a `Mutex` only so the callback is `Sync`; never contended.
        let cell: Mutex<(F, BuiltState<F, E, M>)> = Mutex::new((observer, None));
        self.push_observer(
            None,
            move |trigger: Trigger<'_, E, F::Component>, mut world: DeferredWorld<'_>| {
                let mut guard = cell.lock().unwrap_or_else(|p| p.into_inner());
                let (func, built) = &mut *guard;
                run_observer(&name, func, built, trigger, world.world_mut());
            },
        )
    }
}

/// One run of an observer with system parameters.
fn run_observer<E, M, F: ObserverFunction<E, M>>(
    name: &str,
    func: &mut F,
    built: &mut BuiltState<F, E, M>,
    trigger: Trigger<'_, E, F::Component>,
    world: &mut World,
) {
    let observer = match built {
        Some(observer) => observer,
        None => {
            let mut meta = SystemMeta::new(Cow::Owned(name.to_owned()));
            let state = F::Param::init_state(world, &mut meta);
            if let Some(conflict) = meta.access.conflict() {
                panic!("observer `{name}` cannot run: {conflict}");
            }
            built.insert(ObserverState { state, meta })
        }
    };
    let this_run = world.increment_change_tick();
    let ticks = TickRange::since(observer.meta.last_run, this_run);
    {
        let shared: &World = world;
        // SAFETY: the state was made on this world just above or at an
        // earlier trigger (observers belong to one world); `&mut World`
        // excludes every other borrow, and the parameters' own conflicts
        // were refused.
        let params =
            unsafe { F::Param::try_get_param(&mut observer.state, &observer.meta, shared, ticks) };
        match params {
            Ok(params) => func.run(trigger, params),
            Err(skip) if skip.warns() => log::warn!("observer `{name}` skipped: {skip}"),
            Err(skip) => log::debug!("observer `{name}` skipped: {skip}"),
        }
    }
    observer.meta.last_run = Some(this_run);
    let queue = world.observers_mut().queue();
    F::Param::queue_deferred(&mut observer.state, queue);
}
