//! Piping one system's output into another's input: [`IntoSystem::pipe`](crate::IntoSystem::pipe)
//! and the [`In`] parameter (Bevy's names).
//!
//! A piped pair is one system: the schedule sees the union of both
//! halves' access and runs them back to back on one thread, `a` then `b`.
//! The value travels through a per-thread stack: the pipe pushes `a`'s
//! output just before `b` runs, and `b`'s [`In`] parameter pops it while
//! `b`'s parameters are built. Nothing else runs on the thread between
//! the two (work a rayon thread steals while it waits runs to completion
//! and leaves the stack as it found it), so the value `b` pops is the one
//! its own pipe pushed. The pipe restores the stack's depth when `b`
//! returns, skips or panics, so a value `b` never took is dropped there.

use std::any::Any;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

use super::{System, SystemAccess, SystemMeta, SystemParam, SystemSkip};
use crate::query::TickRange;
use crate::world::World;

thread_local! {
    /// Outputs on their way from a pipe's first half to its second.
    static PIPED: RefCell<Vec<Box<dyn Any + Send>>> = const { RefCell::new(Vec::new()) };
}

/// The input of a system that is the second half of a [`pipe`]: the
/// value the first half returned. Destructure it in the signature, as in
/// Bevy: `fn report(In(hits): In<u32>)`.
///
/// A system with an `In` parameter runs only as a pipe's second half: run
/// any other way, building its parameters panics with a message naming
/// [`IntoSystem::pipe`](crate::IntoSystem::pipe).
///
/// [`pipe`]: crate::IntoSystem::pipe
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Enemy;
/// fn count(q: Query<&Enemy>) -> usize {
///     q.iter().count()
/// }
/// fn report(In(n): In<usize>, mut log: ResMut<Vec<String>>) {
///     log.push(format!("{n} enemies"));
/// }
/// let mut world = World::new();
/// world.insert_resource(Vec::<String>::new());
/// world.spawn_batch([Enemy, Enemy]);
/// world.run_system_once(count.pipe(report));
/// assert_eq!(world.resource::<Vec<String>>()[..], ["2 enemies"]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct In<T>(pub T);

impl<T> In<T> {
    /// The value.
    ///
    /// # Example
    /// ```
    /// use mosaic::In;
    /// assert_eq!(In(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for In<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for In<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

// SAFETY: borrows nothing of the world; takes a value its own pipe handed
// over on this thread.
unsafe impl<T: Send + 'static> SystemParam for In<T> {
    type State = ();
    type Item<'w, 's> = In<T>;

    fn init_state(_world: &mut World, _meta: &mut SystemMeta) {}

    unsafe fn get_param(_: &mut (), meta: &SystemMeta, _: &World, _: TickRange) -> In<T> {
        let value = PIPED.with(|stack| stack.borrow_mut().pop());
        let Some(value) = value else {
            panic!(
                "system `{}` takes `In<{}>`, but it was not run as the second half of \
                 `first.pipe(second)`, so it has no input",
                meta.name(),
                std::any::type_name::<T>()
            );
        };
        match value.downcast::<T>() {
            Ok(value) => In(*value),
            // Unreachable through `pipe`, whose types are checked at compile
            // time; a second `In` parameter of another type would land here.
            Err(_) => panic!(
                "system `{}` takes `In<{}>`, but its pipe passed another type (a system \
                 has at most one `In` parameter)",
                meta.name(),
                std::any::type_name::<T>()
            ),
        }
    }
}

/// Puts the stack back to `depth` when dropped: drops a value the second
/// half never took (it skipped, panicked, or has no `In`).
struct Restore(usize);

impl Drop for Restore {
    fn drop(&mut self) {
        PIPED.with(|stack| {
            // A panic while the stack is borrowed cannot happen (no user code
            // runs inside `with`); `try_borrow_mut` keeps a drop during
            // unwinding from panicking twice all the same.
            if let Ok(mut stack) = stack.try_borrow_mut() {
                stack.truncate(self.0);
            }
        });
    }
}

fn push<T: Send + 'static>(value: T) -> Restore {
    PIPED.with(|stack| {
        let mut stack = stack.borrow_mut();
        let depth = stack.len();
        stack.push(Box::new(value));
        Restore(depth)
    })
}

/// Two systems run as one, the first's output handed to the second's
/// [`In`] parameter; made by [`IntoSystem::pipe`](crate::IntoSystem::pipe).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::System;
/// fn parse() -> Result<u32, String> { "42".parse().map_err(|e| format!("{e}")) }
/// fn check(In(parsed): In<Result<u32, String>>) -> u32 { parsed.unwrap_or(0) }
/// let piped = parse.pipe(check);
/// assert!(piped.name().contains(" | "));
/// assert_eq!(World::new().run_system_once(piped), 42);
/// ```
pub struct PipeSystem<A, B> {
    a: A,
    b: B,
    name: Cow<'static, str>,
    access: SystemAccess,
}

impl<A: System, B: System> PipeSystem<A, B>
where
    A::Out: Send + 'static,
{
    pub(crate) fn new(a: A, b: B) -> Self {
        let name = Cow::Owned(format!("{} | {}", a.name(), b.name()));
        PipeSystem {
            a,
            b,
            name,
            access: SystemAccess::default(),
        }
    }
}

impl<A, B> fmt::Debug for PipeSystem<A, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipeSystem")
            .field("name", &self.name)
            .finish()
    }
}

impl<A: System, B: System> System for PipeSystem<A, B>
where
    A::Out: Send + 'static,
{
    type Out = B::Out;

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

    unsafe fn run_unsafe(&mut self, world: &World) -> B::Out {
        // SAFETY: the caller's contract covers the union of both halves'
        // access; the halves run one after the other, never together.
        let out = unsafe { self.a.run_unsafe(world) };
        let _restore = push(out);
        // SAFETY: as above; `a` has returned, so none of its borrows is live.
        unsafe { self.b.run_unsafe(world) }
    }

    unsafe fn try_run_unsafe(&mut self, world: &World) -> Result<B::Out, SystemSkip> {
        // SAFETY: as in `run_unsafe`. A skipped first half skips the pair.
        let out = unsafe { self.a.try_run_unsafe(world) }?;
        let _restore = push(out);
        // SAFETY: as in `run_unsafe`.
        unsafe { self.b.try_run_unsafe(world) }
    }

    fn run(&mut self, world: &mut World) -> B::Out {
        if let Err(conflict) = self.initialize(world) {
            panic!("system `{}` cannot run: {conflict}", self.name);
        }
        // An exclusive half needs the world itself; each half then applies
        // its own commands, the first's before the second runs.
        let out = self.a.run(world);
        let _restore = push(out);
        self.b.run(world)
    }

    fn apply_deferred(&mut self, world: &mut World) {
        self.a.apply_deferred(world);
        self.b.apply_deferred(world);
    }
}
