//! Fallible systems: a system may return `Result<(), E>`, and `?` works in
//! it. The schedule hands an error to its [`ErrorHandler`] together with the
//! system's name; the default handler, [`log_error`], logs it and the
//! schedule goes on. Tests usually want [`panic_on_error`].

use std::fmt;

use super::{System, SystemAccess, SystemSkip};
use crate::world::World;

/// The error a fallible system returns: any error type, boxed (so `?` turns
/// any `std::error::Error`, a `String` or a `&str` into one).
///
/// # Example
/// ```
/// use mosaic::SystemError;
/// let e: SystemError = "no save file".into();
/// assert_eq!(e.to_string(), "no save file");
/// ```
pub type SystemError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a system run gives the schedule: `Ok(())`, or the error it
/// returned.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// fn load(names: Res<Vec<String>>) -> SystemResult {
///     let first = names.first().ok_or("no names")?;
///     println!("{first}");
///     Ok(())
/// }
/// let mut world = World::new();
/// world.insert_resource(Vec::<String>::new());
/// assert!(world.run_system_once(load).is_err());
/// ```
pub type SystemResult = Result<(), SystemError>;

/// What a scheduled system may return: `()` or `Result<(), E>` for any `E`
/// that converts into a [`SystemError`].
///
/// # Example
/// ```
/// use mosaic::IntoSystemOutput;
/// assert!(().into_result().is_ok());
/// assert!(Err::<(), _>("broken").into_result().is_err());
/// ```
pub trait IntoSystemOutput: 'static {
    /// The output as a [`SystemResult`].
    fn into_result(self) -> SystemResult;
}

impl IntoSystemOutput for () {
    #[inline]
    fn into_result(self) -> SystemResult {
        Ok(())
    }
}

impl<E: Into<SystemError> + 'static> IntoSystemOutput for Result<(), E> {
    #[inline]
    fn into_result(self) -> SystemResult {
        self.map_err(Into::into)
    }
}

/// Where a system's error came from, for an [`ErrorHandler`].
///
/// # Example
/// ```
/// use mosaic::ErrorContext;
/// let ctx = ErrorContext { system: "load_level" };
/// assert_eq!(ctx.to_string(), "system `load_level`");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorContext<'a> {
    /// The name of the system that failed.
    pub system: &'a str,
}

impl fmt::Display for ErrorContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "system `{}`", self.system)
    }
}

/// What a schedule does with a system's error; set it with
/// [`Schedule::set_error_handler`](crate::Schedule::set_error_handler).
/// It may run on a worker thread.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// fn ignore(_: SystemError, _: ErrorContext) {}
/// let mut schedule = Schedule::new();
/// schedule.set_error_handler(ignore);
/// ```
pub type ErrorHandler = fn(SystemError, ErrorContext<'_>);

/// The default [`ErrorHandler`]: logs the error (`log::error!`) with the
/// system's name; the schedule carries on.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let mut schedule = Schedule::new();
/// schedule.set_error_handler(log_error); // the default anyway
/// schedule.add_system("fails", || -> SystemResult { Err("nope".into()) });
/// schedule.run(&mut world); // logged, not raised
/// ```
pub fn log_error(error: SystemError, context: ErrorContext<'_>) {
    log::error!("{context} failed: {error}");
}

/// An [`ErrorHandler`] that panics with the system's name and the error;
/// the schedule re-raises it like any panic in a system.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let mut schedule = Schedule::new();
/// schedule.set_error_handler(panic_on_error);
/// schedule.add_system("fails", || -> SystemResult { Err("nope".into()) });
/// let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| schedule.run(&mut world)));
/// let message = caught.unwrap_err().downcast::<String>().unwrap();
/// assert!(message.contains("`fails` failed: nope"), "{message}");
/// ```
pub fn panic_on_error(error: SystemError, context: ErrorContext<'_>) {
    panic!("{context} failed: {error}");
}

/// A system whose output is turned into a [`SystemResult`].
pub(crate) struct ResultSystem<S>(pub S);

impl<S: System<Out: IntoSystemOutput>> System for ResultSystem<S> {
    type Out = SystemResult;

    fn name(&self) -> &str {
        self.0.name()
    }

    fn initialize(&mut self, world: &mut World) -> Result<(), String> {
        self.0.initialize(world)
    }

    fn access(&self) -> &SystemAccess {
        self.0.access()
    }

    #[inline]
    unsafe fn run_unsafe(&mut self, world: &World) -> SystemResult {
        // SAFETY: forwarded contract.
        unsafe { self.0.run_unsafe(world) }.into_result()
    }

    #[inline]
    unsafe fn try_run_unsafe(&mut self, world: &World) -> Result<SystemResult, SystemSkip> {
        // SAFETY: forwarded contract.
        unsafe { self.0.try_run_unsafe(world) }.map(IntoSystemOutput::into_result)
    }

    fn run(&mut self, world: &mut World) -> SystemResult {
        self.0.run(world).into_result()
    }

    fn try_run(&mut self, world: &mut World) -> Result<SystemResult, SystemSkip> {
        self.0.try_run(world).map(IntoSystemOutput::into_result)
    }

    fn apply_deferred(&mut self, world: &mut World) {
        self.0.apply_deferred(world);
    }
}
