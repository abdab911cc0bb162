//! One-shot systems by id: a system registered with the world once and run
//! on demand, as often as needed, keeping its state (`Local`s, change
//! detection, event cursors) between runs. A spell table (spell → system)
//! becomes a map of [`SystemId`]s.
//!
//! [`World::run_system_once`] is the throw-away form: a fresh system each
//! call, so its `Local`s start over.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;

use thiserror::Error;

use super::config::BoxedSystem;
use super::{IntoSystem, IntoSystemOutput, System, SystemError, SystemSkip, boxed, name_panic};
use crate::commands::Commands;
use crate::world::{World, WorldId};

/// The id of a system registered with [`World::register_system`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let a = world.register_system(|| {});
/// let b = world.register_system(|| {});
/// assert_ne!(a, b);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SystemId {
    index: u32,
    world: WorldId,
}

/// Why [`World::run_system`] did not run a system, or what it returned.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let id = world.register_system(|| -> SystemResult { Err("no mana".into()) });
/// let err = world.run_system(id).unwrap_err();
/// assert!(matches!(err, RunSystemError::Failed { .. }));
/// assert!(err.to_string().contains("no mana"));
/// ```
#[derive(Debug, Error)]
pub enum RunSystemError {
    /// The id was never registered with this world, or was unregistered.
    #[error("no system is registered as {0:?} in this world")]
    UnknownSystem(SystemId),
    /// The system is running already (it tried to run itself).
    #[error("system `{0}` is already running (a registered system cannot run itself)")]
    AlreadyRunning(String),
    /// The system's parameters conflict with each other.
    #[error("system `{system}` has conflicting parameters: {detail}")]
    InvalidParams {
        /// The system.
        system: String,
        /// Which parameters conflict.
        detail: String,
    },
    /// A parameter declined to run (a `Single` with no match, say).
    #[error("system `{system}` was skipped: {reason}")]
    Skipped {
        /// The system.
        system: String,
        /// Why.
        reason: SystemSkip,
    },
    /// The system ran and returned an error.
    #[error("system `{system}` failed: {error}")]
    Failed {
        /// The system.
        system: String,
        /// Its error.
        error: SystemError,
    },
}

/// A registered system's place: `None` while it runs (it is taken out, so it
/// can have the whole world).
struct Entry {
    name: String,
    system: Option<BoxedSystem>,
}

/// The world's registered systems (a resource of a private type). The
/// `Mutex` only makes the boxed systems `Sync`; it is never contended.
#[derive(Default)]
struct RegisteredSystems {
    entries: Mutex<Vec<Option<Entry>>>,
}

impl RegisteredSystems {
    fn entries(&mut self) -> &mut Vec<Option<Entry>> {
        self.entries.get_mut().unwrap_or_else(|p| p.into_inner())
    }
}

impl fmt::Debug for RegisteredSystems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredSystems").finish_non_exhaustive()
    }
}

impl World {
    /// Registers `system` for running on demand with [`World::run_system`]
    /// or [`Commands::run_system`]; it keeps its state (`Local`s, change
    /// ticks) between runs. It may return `()` or a `Result`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::collections::HashMap;
    /// #[derive(Default)] struct Mana(u32);
    /// let mut world = World::new();
    /// world.insert_resource(Mana(10));
    /// let mut spells = HashMap::new();
    /// spells.insert("fireball", world.register_system(|mut m: ResMut<Mana>| m.0 -= 3));
    /// spells.insert("heal", world.register_system(|mut m: ResMut<Mana>| m.0 -= 1));
    /// world.run_system(spells["fireball"]).unwrap();
    /// world.run_system(spells["heal"]).unwrap();
    /// assert_eq!(world.resource::<Mana>().0, 6);
    /// ```
    pub fn register_system<M, S>(&mut self, system: S) -> SystemId
    where
        S: IntoSystem<M>,
        <S::System as System>::Out: IntoSystemOutput,
    {
        let system = boxed(system.into_system());
        let world = self.id();
        let entries = self.resource_or_default::<RegisteredSystems>().entries();
        let index = u32::try_from(entries.len()).expect("fewer than 2^32 registered systems");
        entries.push(Some(Entry {
            name: super::config::default_name(system.name()),
            system: Some(system),
        }));
        SystemId { index, world }
    }

    /// Unregisters system `id`; later runs of it are refused. Its index is
    /// never reused, so a stale id cannot run another system.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let id = world.register_system(|| {});
    /// world.unregister_system(id).unwrap();
    /// assert!(matches!(world.run_system(id), Err(RunSystemError::UnknownSystem(_))));
    /// ```
    pub fn unregister_system(&mut self, id: SystemId) -> Result<(), RunSystemError> {
        let entry = self.entry(id)?;
        if entry.system.is_none() {
            return Err(RunSystemError::AlreadyRunning(entry.name.clone()));
        }
        self.registered().entries()[id.index as usize] = None;
        Ok(())
    }

    /// Runs registered system `id` now and applies its commands. Its
    /// `Local`s and change detection carry over from its previous run. A
    /// panic inside it is re-raised naming it (the system stays registered).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(Vec::<u32>::new());
    /// let id = world.register_system(|mut casts: Local<u32>, mut log: ResMut<Vec<u32>>| {
    ///     *casts += 1;
    ///     log.push(*casts);
    /// });
    /// world.run_system(id).unwrap();
    /// world.run_system(id).unwrap();
    /// assert_eq!(*world.resource::<Vec<u32>>(), [1, 2]);
    /// ```
    pub fn run_system(&mut self, id: SystemId) -> Result<(), RunSystemError> {
        let entry = self.entry(id)?;
        let name = entry.name.clone();
        let mut system = self.registered().entries()[id.index as usize]
            .as_mut()
            .and_then(|e| e.system.take())
            .ok_or_else(|| RunSystemError::AlreadyRunning(name.clone()))?;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            system.initialize(self)?;
            Ok(system.try_run(self))
        }));
        // Put it back before anything else, panic or not.
        if let Some(Some(entry)) = self.registered().entries().get_mut(id.index as usize) {
            entry.system = Some(system);
        }
        match outcome {
            Err(payload) => resume_unwind(name_panic(&name, payload)),
            Ok(Err(detail)) => Err(RunSystemError::InvalidParams {
                system: name,
                detail,
            }),
            Ok(Ok(Err(reason))) => Err(RunSystemError::Skipped {
                system: name,
                reason,
            }),
            Ok(Ok(Ok(Err(error)))) => Err(RunSystemError::Failed {
                system: name,
                error,
            }),
            Ok(Ok(Ok(Ok(())))) => Ok(()),
        }
    }

    fn registered(&mut self) -> &mut RegisteredSystems {
        self.resource_or_default::<RegisteredSystems>()
    }

    /// The entry of `id`, or why there is none.
    fn entry(&mut self, id: SystemId) -> Result<&Entry, RunSystemError> {
        if id.world != self.id() {
            return Err(RunSystemError::UnknownSystem(id));
        }
        self.registered()
            .entries()
            .get(id.index as usize)
            .and_then(Option::as_ref)
            .ok_or(RunSystemError::UnknownSystem(id))
    }
}

impl Commands<'_, '_> {
    /// Records running registered system `id` (see [`World::run_system`])
    /// when the commands apply; an error is logged with the system's name.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let bump = world.register_system(|mut n: ResMut<u32>| *n += 1);
    /// world.run_system_once(move |mut commands: Commands| {
    ///     commands.run_system(bump);
    ///     commands.run_system(bump);
    /// });
    /// assert_eq!(*world.resource::<u32>(), 2);
    /// ```
    pub fn run_system(&mut self, id: SystemId) {
        self.run(move |world| {
            if let Err(error) = world.run_system(id) {
                log::error!("{error}");
            }
        });
    }
}
