//! System parameters: what a function system asks for.

// Signatures mirror the trait's, lifetimes included, for readability.
#![allow(clippy::needless_lifetimes)]

use std::fmt;
use std::ops::{Deref, DerefMut};

use super::SystemMeta;
use crate::commands::{CommandBuffer, Commands};
use crate::query::TickRange;
use crate::resource::{Res, ResMut, missing_resource};
use crate::storage::ResourceId;
use crate::world::World;

/// Something a function system can take as a parameter: [`Query`],
/// [`Single`](crate::Single), `Option<Single<_>>`,
/// [`Populated`](crate::Populated), [`Res`], [`ResMut`], `Option<Res<_>>`,
/// `Option<ResMut<_>>`, [`Commands`], [`Local`], `&World`, a tuple of them
/// (up to 16), a [`ParamSet`](crate::ParamSet) of up to 8 that may conflict
/// with each other, or a struct of them with `#[derive(SystemParam)]` (its
/// lifetimes named `'w` and `'s`).
///
/// The methods are the scheduler's plumbing, hidden from the docs.
///
/// # Safety
/// An implementation must:
/// - record in `init_state` (on `meta.access`) everything `get_param`
///   borrows, writes as writes;
/// - borrow in `get_param` nothing else.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// // Every parameter of this function is a SystemParam:
/// fn tick(mut n: Local<u32>, mut commands: Commands, world: &World) {
///     *n += 1;
///     let _ = (world.len(), &mut commands);
/// }
/// World::new().run_system_once(tick);
///
/// // Parameters bundled in a struct:
/// #[derive(SystemParam)]
/// struct Scoring<'w, 's> {
///     score: ResMut<'w, u32>,
///     hits: Local<'s, u32>,
/// }
/// fn score(mut s: Scoring) {
///     *s.hits += 1;
///     *s.score += 10;
/// }
/// let mut world = World::new();
/// world.insert_resource(0u32);
/// world.run_system_once(score);
/// assert_eq!(*world.resource::<u32>(), 10);
/// ```
///
/// [`Query`]: crate::Query
pub unsafe trait SystemParam: Sized {
    #[doc(hidden)]
    type State: Send + 'static;
    /// The parameter with the lifetimes of one run.
    #[doc(hidden)]
    type Item<'w, 's>: SystemParam<State = Self::State>;

    #[doc(hidden)]
    fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State;

    /// # Safety
    /// - `state` was made by `init_state` on `world`;
    /// - no code running at the same time conflicts with what `init_state`
    ///   recorded.
    #[doc(hidden)]
    unsafe fn get_param<'w, 's>(
        state: &'s mut Self::State,
        meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Self::Item<'w, 's>;

    /// Like `get_param`, but may decline: then the system is skipped this
    /// run (`Single` with no match, `Populated` when empty).
    ///
    /// # Safety
    /// As `get_param`.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn try_get_param<'w, 's>(
        state: &'s mut Self::State,
        meta: &SystemMeta,
        world: &'w World,
        ticks: TickRange,
    ) -> Result<Self::Item<'w, 's>, SystemSkip> {
        // SAFETY: forwarded contract.
        Ok(unsafe { Self::get_param(state, meta, world, ticks) })
    }

    /// Applies deferred work (commands) at a sync point.
    #[doc(hidden)]
    fn apply(_state: &mut Self::State, _meta: &SystemMeta, _world: &mut World) {}

    /// Moves deferred commands into `queue` instead of applying them (an
    /// observer's commands join the observers' queue).
    #[doc(hidden)]
    fn queue_deferred(_state: &mut Self::State, _queue: &mut CommandBuffer) {}
}

/// Why a system did not run this time: a parameter found nothing to hand
/// it ([`Single`](crate::Single) with no match or several,
/// [`Populated`](crate::Populated) with none). The schedule logs a warning
/// for the first kind and skips quietly for the second.
///
/// # Example
/// ```
/// use mosaic::SystemSkip;
/// let skip = SystemSkip::warn("no player");
/// assert!(skip.warns());
/// assert_eq!(skip.to_string(), "no player");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemSkip {
    message: String,
    warn: bool,
}

impl SystemSkip {
    /// A skip worth a warning.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::SystemSkip::warn("why").warns());
    /// ```
    pub fn warn(message: impl Into<String>) -> Self {
        SystemSkip {
            message: message.into(),
            warn: true,
        }
    }

    /// A skip that is expected, logged at most at debug level.
    ///
    /// # Example
    /// ```
    /// assert!(!mosaic::SystemSkip::quiet("nothing to do").warns());
    /// ```
    pub fn quiet(message: impl Into<String>) -> Self {
        SystemSkip {
            message: message.into(),
            warn: false,
        }
    }

    /// True if the skip deserves a warning.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::SystemSkip::warn("x").warns());
    /// ```
    pub fn warns(&self) -> bool {
        self.warn
    }
}

impl fmt::Display for SystemSkip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SystemSkip {}

/// The item type of parameter `P` for one run.
pub type SystemParamItem<'w, 's, P> = <P as SystemParam>::Item<'w, 's>;

// ----- resources ------------------------------------------------------------------

fn resource_ptr<R: Send + Sync + 'static>(
    world: &World,
    id: ResourceId,
) -> Option<std::ptr::NonNull<R>> {
    world.resources().ptr::<R>(id)
}

// SAFETY: records a read of R; borrows only R, shared.
unsafe impl<'a, R: Send + Sync + 'static> SystemParam for Res<'a, R> {
    type State = ResourceId;
    type Item<'w, 's> = Res<'w, R>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> ResourceId {
        let id = world.resources_mut().register::<R>();
        meta.access.add_resource_read(id, world);
        id
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut ResourceId,
        _: &SystemMeta,
        world: &'w World,
        run: TickRange,
    ) -> Res<'w, R> {
        let ptr = resource_ptr::<R>(world, *state).unwrap_or_else(|| missing_resource::<R>());
        // SAFETY: the scheduler runs no writer of R alongside (recorded read).
        let value = unsafe { ptr.as_ref() };
        let ticks = world.resources().ticks(*state);
        Res { value, ticks, run }
    }
}

// SAFETY: records a write of R; borrows only R.
unsafe impl<'a, R: Send + Sync + 'static> SystemParam for ResMut<'a, R> {
    type State = ResourceId;
    type Item<'w, 's> = ResMut<'w, R>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> ResourceId {
        let id = world.resources_mut().register::<R>();
        meta.access.add_resource_write(id, world);
        id
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut ResourceId,
        _: &SystemMeta,
        world: &'w World,
        run: TickRange,
    ) -> ResMut<'w, R> {
        let mut ptr = resource_ptr::<R>(world, *state).unwrap_or_else(|| missing_resource::<R>());
        // SAFETY: the scheduler runs no other user of R alongside (recorded
        // write), and this system borrows R once (its own params checked).
        let value = unsafe { ptr.as_mut() };
        let ticks = world.resources().ticks(*state);
        ResMut { value, ticks, run }
    }
}

// SAFETY: as `Res<R>`.
unsafe impl<'a, R: Send + Sync + 'static> SystemParam for Option<Res<'a, R>> {
    type State = ResourceId;
    type Item<'w, 's> = Option<Res<'w, R>>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> ResourceId {
        Res::<R>::init_state(world, meta)
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut ResourceId,
        _: &SystemMeta,
        world: &'w World,
        run: TickRange,
    ) -> Self::Item<'w, 's> {
        let ptr = resource_ptr::<R>(world, *state)?;
        // SAFETY: as `Res<R>`.
        let value = unsafe { ptr.as_ref() };
        let ticks = world.resources().ticks(*state);
        Some(Res { value, ticks, run })
    }
}

// SAFETY: as `ResMut<R>`.
unsafe impl<'a, R: Send + Sync + 'static> SystemParam for Option<ResMut<'a, R>> {
    type State = ResourceId;
    type Item<'w, 's> = Option<ResMut<'w, R>>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> ResourceId {
        ResMut::<R>::init_state(world, meta)
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut ResourceId,
        _: &SystemMeta,
        world: &'w World,
        run: TickRange,
    ) -> Self::Item<'w, 's> {
        let mut ptr = resource_ptr::<R>(world, *state)?;
        // SAFETY: as `ResMut<R>`.
        let value = unsafe { ptr.as_mut() };
        let ticks = world.resources().ticks(*state);
        Some(ResMut { value, ticks, run })
    }
}

// ----- commands ---------------------------------------------------------------------

// SAFETY: borrows nothing of the world but entity reservation (atomic),
// which it records as deferred access (ordering reservations, not for
// soundness).
unsafe impl SystemParam for Commands<'_, '_> {
    type State = CommandBuffer;
    type Item<'w, 's> = Commands<'w, 's>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> CommandBuffer {
        meta.access.add_deferred();
        CommandBuffer::new(world)
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut CommandBuffer,
        _: &SystemMeta,
        world: &'w World,
        _: TickRange,
    ) -> Commands<'w, 's> {
        Commands {
            world,
            buffer: state,
        }
    }

    fn apply(state: &mut CommandBuffer, meta: &SystemMeta, world: &mut World) {
        if let Err(errors) = state.apply(world) {
            log::warn!("commands of system `{}`: {errors}", meta.name());
        }
    }

    fn queue_deferred(state: &mut CommandBuffer, queue: &mut CommandBuffer) {
        queue.append(state);
    }
}

// ----- Local ------------------------------------------------------------------------

/// A value private to one system, kept between its runs (starts as
/// `T::default()`).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// fn count(mut runs: Local<u32>) -> u32 {
///     *runs += 1;
///     *runs
/// }
/// let mut world = World::new();
/// let mut schedule = Schedule::new();
/// schedule.add_system("count", |runs: Local<u32>| { count(runs); });
/// schedule.run(&mut world);
/// // run_system_once builds a fresh system each time:
/// assert_eq!(world.run_system_once(count), 1);
/// ```
pub struct Local<'s, T> {
    value: &'s mut T,
}

impl<T> Deref for Local<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Local<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Local").field(&*self.value).finish()
    }
}

// SAFETY: borrows nothing of the world.
unsafe impl<'a, T: Default + Send + 'static> SystemParam for Local<'a, T> {
    type State = T;
    type Item<'w, 's> = Local<'s, T>;

    fn init_state(_world: &mut World, _meta: &mut SystemMeta) -> T {
        T::default()
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut T,
        _: &SystemMeta,
        _: &'w World,
        _: TickRange,
    ) -> Local<'s, T> {
        Local { value: state }
    }
}

// ----- &World -----------------------------------------------------------------------

// SAFETY: records a read of everything; hands out only `&World`.
unsafe impl SystemParam for &World {
    type State = ();
    type Item<'w, 's> = &'w World;

    fn init_state(_world: &mut World, meta: &mut SystemMeta) {
        meta.access.add_world_read();
    }

    unsafe fn get_param<'w, 's>(
        _: &'s mut (),
        _: &SystemMeta,
        world: &'w World,
        _: TickRange,
    ) -> &'w World {
        world
    }
}

// ----- tuples -----------------------------------------------------------------------

macro_rules! tuple_param {
    ($($p:ident),*) => {
        // SAFETY: the union of the elements' access; each borrows as recorded.
        #[allow(non_snake_case, unused_variables, clippy::unused_unit)]
        unsafe impl<$($p: SystemParam),*> SystemParam for ($($p,)*) {
            type State = ($($p::State,)*);
            type Item<'w, 's> = ($($p::Item<'w, 's>,)*);

            fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
                ($($p::init_state(world, meta),)*)
            }

            unsafe fn get_param<'w, 's>(
                state: &'s mut Self::State,
                meta: &SystemMeta,
                world: &'w World,
                ticks: TickRange,
            ) -> Self::Item<'w, 's> {
                let ($($p,)*) = state;
                // SAFETY: forwarded contract.
                ($(unsafe { $p::get_param($p, meta, world, ticks) },)*)
            }

            #[inline(always)]
            unsafe fn try_get_param<'w, 's>(
                state: &'s mut Self::State,
                meta: &SystemMeta,
                world: &'w World,
                ticks: TickRange,
            ) -> Result<Self::Item<'w, 's>, SystemSkip> {
                let ($($p,)*) = state;
                // SAFETY: forwarded contract.
                Ok(($(unsafe { $p::try_get_param($p, meta, world, ticks) }?,)*))
            }

            fn apply(state: &mut Self::State, meta: &SystemMeta, world: &mut World) {
                let ($($p,)*) = state;
                $($p::apply($p, meta, world);)*
            }

            fn queue_deferred(state: &mut Self::State, queue: &mut CommandBuffer) {
                let ($($p,)*) = state;
                $($p::queue_deferred($p, queue);)*
            }
        }
    };
}

crate::bundle::all_tuples!(tuple_param);
