//! The schedule: named systems, their order, and the plan that runs them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use rustc_hash::{FxHashMap, FxHashSet};
use thiserror::Error;

use super::condition::{Condition, ConditionSlot};
use super::config::{BoxedSystem, IntoLabel, PendingSystem};
use super::executor::{self, Block, ExecutorKind, Plan, SlotStats, Step};
use super::timing::{SystemTiming, SystemTimings};
use super::{ErrorHandler, IntoSystem, IntoSystemOutput, System, SystemAccess};
use crate::time::{FrameTime, Time};
use crate::world::{World, WorldId};

/// Why a schedule cannot run. Every variant names the systems (and, for
/// conflicts, the types) involved.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut schedule = Schedule::new();
/// schedule.add_system("a", || {}).after("b");
/// schedule.add_system("b", || {}).after("a");
/// let err = schedule.build(&mut World::new()).unwrap_err();
/// assert!(matches!(err, ScheduleError::Cycle(_)));
/// assert!(err.to_string().contains("`a`") && err.to_string().contains("`b`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScheduleError {
    /// Two systems share a name.
    #[error("two systems are named `{0}`; system names must be unique")]
    DuplicateName(String),
    /// A `before`/`after` names neither a system nor a set.
    #[error(
        "system or set `{from}` is ordered against `{target}`, which is neither a system nor a set{}",
        did_you_mean(.suggestion)
    )]
    UnknownTarget {
        /// The system or set that has the ordering.
        from: String,
        /// The name it orders against.
        target: String,
        /// The schedule's system or set name closest to `target`, when one
        /// is close (a typo): the error's text asks "did you mean ...?".
        suggestion: Option<String>,
    },
    /// The orderings form a cycle, through these systems.
    #[error("the orderings form a cycle: {}", cycle_text(.0))]
    Cycle(Vec<String>),
    /// A system's own parameters conflict.
    #[error("system `{system}` has conflicting parameters: {detail}")]
    ParamConflict {
        /// The system.
        system: String,
        /// Which parameters and types conflict.
        detail: String,
    },
    /// No system has this name.
    #[error("no system is named `{0}`")]
    UnknownSystem(String),
    /// A run condition's parameters conflict, or it writes.
    #[error("run condition `{condition}` of `{guards}` is invalid: {detail}")]
    InvalidCondition {
        /// The condition.
        condition: String,
        /// The system or set it guards.
        guards: String,
        /// What is wrong.
        detail: String,
    },
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map_or_else(String::new, |s| format!("; did you mean `{s}`?"))
}

fn cycle_text(names: &[String]) -> String {
    let mut text: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    if let Some(first) = text.first().cloned() {
        text.push(first);
    }
    text.join(" -> ")
}

/// One system in the schedule.
pub(crate) struct SystemSlot {
    pub name: String,
    pub system: Mutex<BoxedSystem>,
    pub enabled: bool,
    pub stats: SlotStats,
    /// The system's own run conditions.
    pub conditions: Vec<ConditionSlot>,
    /// The sets, among those it belongs to, that have run conditions
    /// (indices into the schedule's sets; computed by `build`).
    pub guard_sets: Vec<usize>,
    /// True if the system has any condition, own or of a set (`build`).
    pub guarded: bool,
    before: Vec<String>,
    after: Vec<String>,
    sets: Vec<String>,
    /// Targets among `before` and `after` ordered without a sync point.
    unsynced: Vec<String>,
}

#[derive(Default)]
pub(crate) struct SetSlot {
    name: String,
    before: Vec<String>,
    after: Vec<String>,
    /// Evaluated once per run for all members.
    pub conditions: Vec<ConditionSlot>,
}

/// Named systems, run in a valid order, in parallel where their access
/// allows.
///
/// Names are unique. `before`/`after` name systems or sets; a set is a
/// label systems join with `in_set`, orderable as a whole with
/// [`Schedule::configure_set`]. Systems with no ordering between them run in
/// the order they were added when their access conflicts, so results do not
/// depend on the executor.
///
/// Commands issued by systems apply at sync points: at the end of the run,
/// before each exclusive (`&mut World`) system, and between a system with
/// `Commands` and every system ordered after it (by `chain`,
/// `before`/`after` or a set's ordering): the later system sees the
/// earlier one's changes in the same run, as with Bevy's automatic sync
/// points. `chain_ignore_deferred`, `before_ignore_deferred` and
/// `after_ignore_deferred` order without one. A sync point ends a block of
/// systems that run together, so unneeded ones cost parallelism. Systems
/// with `Commands` never overlap one another (their `spawn`s reserve entity
/// ids in system order, the same on every executor).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Default)] struct Log(Vec<&'static str>);
/// let mut world = World::new();
/// world.insert_resource(Log::default());
/// let mut schedule = Schedule::new();
/// schedule.add_system("render", |mut l: ResMut<Log>| l.0.push("render")).after("physics");
/// schedule.add_system("input", |mut l: ResMut<Log>| l.0.push("input")).before("physics");
/// schedule.add_system("physics", |mut l: ResMut<Log>| l.0.push("physics"));
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Log>().0, ["input", "physics", "render"]);
/// assert_eq!(schedule.system_names(), ["input", "physics", "render"]);
/// ```
pub struct Schedule {
    slots: Vec<SystemSlot>,
    /// How many systems have each name (a duplicate is kept until `build`
    /// reports it), so that name lookups do not scan the systems.
    names: FxHashMap<String, usize>,
    /// Per default name: every `name#k` below this is taken (see
    /// `add_systems`). Cleared when a system is removed.
    suffix_hints: FxHashMap<String, u64>,
    sets: Vec<SetSlot>,
    executor: ExecutorKind,
    plan: Option<Plan>,
    world: Option<WorldId>,
    timing: bool,
    runs: u64,
    /// True if some system or set has a run condition (set by `build`).
    has_conditions: bool,
    on_error: ErrorHandler,
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schedule")
            .field(
                "systems",
                &self.slots.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("executor", &self.executor)
            .field("built", &self.plan.is_some())
            .finish()
    }
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule::new()
    }
}

/// Orders a system just added; see [`Schedule::add_system`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut schedule = Schedule::new();
/// schedule.add_system("collide", || {}).in_set("physics").after("move");
/// schedule.add_system("move", || {}).in_set("physics");
/// assert_eq!(schedule.system_names(), ["move", "collide"]);
/// ```
pub struct SystemConfig<'a> {
    schedule: &'a mut Schedule,
    index: usize,
}

impl fmt::Debug for SystemConfig<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemConfig")
            .field("system", &self.schedule.slots[self.index].name)
            .finish()
    }
}

impl SystemConfig<'_> {
    /// Runs this system before the system or every system of the set named
    /// `target`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("b", || {});
    /// schedule.add_system("a", || {}).before("b");
    /// assert_eq!(schedule.system_names(), ["a", "b"]);
    /// ```
    pub fn before<M>(self, target: impl IntoLabel<M>) -> Self {
        self.schedule.slots[self.index]
            .before
            .push(target.into_label());
        self
    }

    /// Runs this system after the system or every system of the set named
    /// `target`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("b", || {}).after("a");
    /// schedule.add_system("a", || {});
    /// assert_eq!(schedule.system_names(), ["a", "b"]);
    /// ```
    pub fn after<M>(self, target: impl IntoLabel<M>) -> Self {
        self.schedule.slots[self.index]
            .after
            .push(target.into_label());
        self
    }

    /// [`SystemConfig::before`] without a sync point: if this system has
    /// `Commands`, `target` does not see them in the same run.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("b", || {});
    /// schedule.add_system("a", |mut c: Commands| { c.spawn(()); }).before_ignore_deferred("b");
    /// assert_eq!(schedule.system_names(), ["a", "b"]);
    /// ```
    pub fn before_ignore_deferred(self, target: impl Into<String>) -> Self {
        let target = target.into();
        let slot = &mut self.schedule.slots[self.index];
        slot.unsynced.push(target.clone());
        slot.before.push(target);
        self
    }

    /// [`SystemConfig::after`] without a sync point: this system does not
    /// see the commands of `target` in the same run.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("b", || {}).after_ignore_deferred("a");
    /// schedule.add_system("a", |mut c: Commands| { c.spawn(()); });
    /// assert_eq!(schedule.system_names(), ["a", "b"]);
    /// ```
    pub fn after_ignore_deferred(self, target: impl Into<String>) -> Self {
        let target = target.into();
        let slot = &mut self.schedule.slots[self.index];
        slot.unsynced.push(target.clone());
        slot.after.push(target);
        self
    }

    /// Puts this system in set `set` (a system may join several).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("draw", || {}).in_set("render");
    /// schedule.add_system("step", || {}).in_set("physics");
    /// schedule.configure_set("physics").before("render");
    /// assert_eq!(schedule.system_names(), ["step", "draw"]);
    /// ```
    pub fn in_set(self, set: impl Into<String>) -> Self {
        self.schedule.slots[self.index].sets.push(set.into());
        self
    }

    /// Runs this system only when `condition` is true (evaluated once per
    /// schedule run; see [`Condition`]). Several calls add several
    /// conditions, all of which must hold.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct Paused;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let mut schedule = Schedule::new();
    /// schedule
    ///     .add_system("count", |mut n: ResMut<u32>| *n += 1)
    ///     .run_if(not(resource_exists::<Paused>));
    /// schedule.run(&mut world);
    /// world.insert_resource(Paused);
    /// schedule.run(&mut world);
    /// assert_eq!(*world.resource::<u32>(), 1);
    /// ```
    pub fn run_if<M, C: Condition<M>>(self, condition: C) -> Self {
        let slot = &mut self.schedule.slots[self.index];
        slot.conditions.push(ConditionSlot::new(condition));
        self
    }
}

/// Orders a whole set; see [`Schedule::configure_set`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut schedule = Schedule::new();
/// schedule.configure_set("physics").after("input");
/// schedule.add_system("step", || {}).in_set("physics");
/// schedule.add_system("input", || {});
/// assert_eq!(schedule.system_names(), ["input", "step"]);
/// ```
pub struct SetConfig<'a> {
    set: &'a mut SetSlot,
}

impl fmt::Debug for SetConfig<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetConfig")
            .field("set", &self.set.name)
            .finish()
    }
}

impl SetConfig<'_> {
    /// Runs every system of this set before `target` (a system or a set).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("draw", || {});
    /// schedule.add_system("step", || {}).in_set("physics");
    /// schedule.configure_set("physics").before("draw");
    /// assert_eq!(schedule.system_names(), ["step", "draw"]);
    /// ```
    pub fn before<M>(self, target: impl IntoLabel<M>) -> Self {
        self.set.before.push(target.into_label());
        self
    }

    /// Runs every system of this set after `target` (a system or a set).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("step", || {}).in_set("physics");
    /// schedule.add_system("input", || {});
    /// schedule.configure_set("physics").after("input");
    /// assert_eq!(schedule.system_names(), ["input", "step"]);
    /// ```
    pub fn after<M>(self, target: impl IntoLabel<M>) -> Self {
        self.set.after.push(target.into_label());
        self
    }

    /// Runs the members of this set only when `condition` is true. It is
    /// evaluated once per schedule run, just before the first member that
    /// runs, and that answer holds for every member.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct Paused;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("a", |mut n: ResMut<u32>| *n += 1).in_set("gameplay");
    /// schedule.add_system("b", |mut n: ResMut<u32>| *n += 10).in_set("gameplay");
    /// schedule.configure_set("gameplay").run_if(not(resource_exists::<Paused>));
    /// schedule.run(&mut world);
    /// world.insert_resource(Paused);
    /// schedule.run(&mut world);
    /// assert_eq!(*world.resource::<u32>(), 11);
    /// ```
    pub fn run_if<M, C: Condition<M>>(self, condition: C) -> Self {
        self.set.conditions.push(ConditionSlot::new(condition));
        self
    }
}

impl Schedule {
    /// An empty schedule with the parallel executor.
    ///
    /// # Example
    /// ```
    /// let schedule = mosaic::Schedule::new();
    /// assert!(schedule.system_names().is_empty());
    /// ```
    pub fn new() -> Self {
        Schedule {
            slots: Vec::new(),
            names: FxHashMap::default(),
            suffix_hints: FxHashMap::default(),
            sets: Vec::new(),
            executor: ExecutorKind::default(),
            plan: None,
            world: None,
            timing: false,
            runs: 0,
            has_conditions: false,
            on_error: super::log_error,
        }
    }

    /// Adds `system` under `name`; chain `.before(..)`, `.after(..)` and
    /// `.in_set(..)` to order it. A duplicate name is reported by
    /// [`Schedule::build`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("movement", || {});
    /// assert!(schedule.contains("movement"));
    /// ```
    pub fn add_system<M, S>(&mut self, name: impl Into<String>, system: S) -> SystemConfig<'_>
    where
        S: IntoSystem<M>,
        <S::System as System>::Out: IntoSystemOutput,
    {
        self.push_slot(PendingSystem {
            name: name.into(),
            system: super::boxed(system.into_system()),
            before: Vec::new(),
            after: Vec::new(),
            sets: Vec::new(),
            conditions: Vec::new(),
            unsynced: Vec::new(),
        });
        let index = self.slots.len() - 1;
        SystemConfig {
            schedule: self,
            index,
        }
    }

    pub(crate) fn push_slot(&mut self, pending: PendingSystem) {
        self.insert_slot(SystemSlot {
            name: pending.name,
            system: Mutex::new(pending.system),
            enabled: true,
            stats: SlotStats::default(),
            conditions: pending.conditions,
            guard_sets: Vec::new(),
            guarded: false,
            before: pending.before,
            after: pending.after,
            sets: pending.sets,
            unsynced: pending.unsynced,
        });
    }

    /// Appends `slot`, counting its name (see `names`); the plan is stale.
    fn insert_slot(&mut self, slot: SystemSlot) {
        self.plan = None;
        *self.names.entry(slot.name.clone()).or_default() += 1;
        self.slots.push(slot);
    }

    /// Moves everything `other` holds (systems, sets, orderings) into this
    /// schedule, as if added here: a system whose name is taken gets the
    /// next free `#k`, anonymous sets are renumbered, a named set that
    /// exists here gains `other`'s orderings and conditions. Orderings
    /// among `other`'s systems follow the renames.
    pub(crate) fn absorb(&mut self, other: Schedule) {
        if other.slots.is_empty() && other.sets.is_empty() {
            return;
        }
        let mut renamed: FxHashMap<String, String> = FxHashMap::default();
        let mut sets = Vec::with_capacity(other.sets.len());
        for mut set in other.sets {
            if set.name.starts_with("(group ") {
                let name = format!("(group {})", self.sets.len() + sets.len());
                renamed.insert(std::mem::replace(&mut set.name, name.clone()), name);
            }
            sets.push(set);
        }
        let mut taken = FxHashSet::default();
        let mut slots = Vec::with_capacity(other.slots.len());
        for mut slot in other.slots {
            let name = self.free_name(&slot.name, &taken);
            taken.insert(name.clone());
            if name != slot.name {
                renamed.insert(std::mem::replace(&mut slot.name, name.clone()), name);
            }
            slots.push(slot);
        }
        let rename = |names: &mut Vec<String>| {
            for name in names {
                if let Some(new) = renamed.get(name.as_str()) {
                    name.clone_from(new);
                }
            }
        };
        for mut set in sets {
            rename(&mut set.before);
            rename(&mut set.after);
            match self.sets.iter_mut().find(|s| s.name == set.name) {
                Some(existing) => {
                    existing.before.append(&mut set.before);
                    existing.after.append(&mut set.after);
                    existing.conditions.append(&mut set.conditions);
                }
                None => self.sets.push(set),
            }
        }
        for mut slot in slots {
            rename(&mut slot.before);
            rename(&mut slot.after);
            rename(&mut slot.sets);
            rename(&mut slot.unsynced);
            self.insert_slot(slot);
        }
        self.plan = None;
    }

    /// A new set, named `(group N)`, guarded by `conditions`.
    pub(crate) fn anonymous_set(&mut self, conditions: Vec<ConditionSlot>) -> String {
        let name = format!("(group {})", self.sets.len());
        self.sets.push(SetSlot {
            name: name.clone(),
            conditions,
            ..SetSlot::default()
        });
        name
    }

    /// Orders the set named `set` as a whole.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("a", || {}).in_set("late");
    /// schedule.add_system("b", || {});
    /// schedule.configure_set("late").after("b");
    /// assert_eq!(schedule.system_names(), ["b", "a"]);
    /// ```
    pub fn configure_set(&mut self, set: impl Into<String>) -> SetConfig<'_> {
        self.plan = None;
        let set = set.into();
        let index = match self.sets.iter().position(|s| s.name == set) {
            Some(index) => index,
            None => {
                self.sets.push(SetSlot {
                    name: set,
                    ..SetSlot::default()
                });
                self.sets.len() - 1
            }
        };
        SetConfig {
            set: &mut self.sets[index],
        }
    }

    /// Switches a system on or off; a disabled system is skipped (the
    /// systems ordered around it still keep their order).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("count", |mut n: ResMut<u32>| *n += 1);
    /// schedule.set_enabled("count", false).unwrap();
    /// schedule.run(&mut world);
    /// assert_eq!(*world.resource::<u32>(), 0);
    /// assert!(schedule.set_enabled("nope", true).is_err());
    /// ```
    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> Result<(), ScheduleError> {
        self.slot_mut(name)?.enabled = enabled;
        Ok(())
    }

    /// True if system `name` exists and is enabled.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("input", || {});
    /// schedule.set_enabled("input", false).unwrap();
    /// assert!(!schedule.is_enabled("input"));
    /// ```
    pub fn is_enabled(&self, name: &str) -> bool {
        self.slots.iter().any(|s| s.name == name && s.enabled)
    }

    /// What system `name` borrows (its parameters' access, known once the
    /// schedule is built or has run), or `None` if no system has that name.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("count", |mut n: ResMut<u32>| *n += 1);
    /// schedule.build(&mut world).unwrap();
    /// let access = schedule.system_access("count").unwrap();
    /// assert!(access.writes_resource(world.resource_id::<u32>().unwrap()));
    /// assert!(schedule.system_access("nope").is_none());
    /// ```
    pub fn system_access(&self, name: &str) -> Option<SystemAccess> {
        let slot = &self.slots[self.index_of(name).ok()?];
        let system = slot.system.lock().unwrap_or_else(|p| p.into_inner());
        Some(system.access().clone())
    }

    /// The names system `name` is ordered against: `(before, after)`, as
    /// given to [`SystemConfig::before`] and [`SystemConfig::after`]
    /// (systems or sets), or `None` if no system has that name.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("physics", || {});
    /// schedule.add_system("input", || {}).before("physics");
    /// let (before, after) = schedule.system_orderings("input").unwrap();
    /// assert_eq!(before, ["physics"]);
    /// assert!(after.is_empty());
    /// ```
    pub fn system_orderings(&self, name: &str) -> Option<(&[String], &[String])> {
        let slot = &self.slots[self.index_of(name).ok()?];
        Some((&slot.before, &slot.after))
    }

    /// Removes system `name` (orderings against it are dropped with it).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("ghost", || {});
    /// schedule.remove_system("ghost").unwrap();
    /// assert!(!schedule.contains("ghost"));
    /// ```
    pub fn remove_system(&mut self, name: &str) -> Result<(), ScheduleError> {
        let index = self.index_of(name)?;
        self.slots.remove(index);
        if let Some(count) = self.names.get_mut(name) {
            *count -= 1;
            if *count == 0 {
                self.names.remove(name);
            }
        }
        // A suffix may be free again.
        self.suffix_hints.clear();
        for slot in &mut self.slots {
            slot.before.retain(|t| t != name);
            slot.after.retain(|t| t != name);
            slot.unsynced.retain(|t| t != name);
        }
        for set in &mut self.sets {
            set.before.retain(|t| t != name);
            set.after.retain(|t| t != name);
        }
        self.plan = None;
        Ok(())
    }

    /// True if the schedule has no system.
    ///
    /// # Example
    /// ```
    /// let mut schedule = mosaic::Schedule::new();
    /// assert!(schedule.is_empty());
    /// schedule.add_system("a", || {});
    /// assert!(!schedule.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// True if a system is named `name`.
    ///
    /// # Example
    /// ```
    /// let schedule = mosaic::Schedule::new();
    /// assert!(!schedule.contains("anything"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains_key(name)
    }

    /// The first suffix that may be free for default name `name`.
    pub(crate) fn suffix_hint(&self, name: &str) -> u64 {
        self.suffix_hints.get(name).copied().unwrap_or(2)
    }

    pub(crate) fn set_suffix_hint(&mut self, name: &str, next: u64) {
        self.suffix_hints.insert(name.to_owned(), next);
    }

    /// The systems' names in run order (insertion order where the orderings
    /// leave a choice, or if they are invalid).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("b", || {});
    /// schedule.add_system("a", || {}).before("b");
    /// assert_eq!(schedule.system_names(), ["a", "b"]);
    /// ```
    pub fn system_names(&self) -> Vec<&str> {
        let order = self
            .edges()
            .ok()
            .and_then(|edges| topological_order(self.slots.len(), &edges).ok())
            .unwrap_or_else(|| (0..self.slots.len()).collect());
        order
            .into_iter()
            .map(|i| self.slots[i].name.as_str())
            .collect()
    }

    /// Chooses the executor: parallel (the default) or single-threaded.
    /// Both give the same results for deterministic systems.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.set_executor(ExecutorKind::SingleThreaded);
    /// assert_eq!(schedule.executor(), ExecutorKind::SingleThreaded);
    /// ```
    pub fn set_executor(&mut self, kind: ExecutorKind) {
        self.executor = kind;
    }

    /// The executor in use.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// assert_eq!(Schedule::new().executor(), ExecutorKind::Parallel);
    /// ```
    pub fn executor(&self) -> ExecutorKind {
        self.executor
    }

    /// Chooses what happens to an error a system returns; the default,
    /// [`log_error`](crate::log_error), logs it with the system's name.
    /// [`panic_on_error`](crate::panic_on_error) suits tests.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// static FAILURES: AtomicUsize = AtomicUsize::new(0);
    /// fn count(_: SystemError, context: ErrorContext) {
    ///     assert_eq!(context.system, "load");
    ///     FAILURES.fetch_add(1, Ordering::Relaxed);
    /// }
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.set_error_handler(count);
    /// schedule.add_system("load", || -> SystemResult { Err("missing file".into()) });
    /// schedule.run(&mut world);
    /// assert_eq!(FAILURES.load(Ordering::Relaxed), 1);
    /// ```
    pub fn set_error_handler(&mut self, handler: ErrorHandler) {
        self.on_error = handler;
    }

    /// Switches per-system timing on or off (off by default: no clock is
    /// read for the table when off).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("idle", || {});
    /// schedule.set_timing(true);
    /// schedule.run(&mut world);
    /// assert_eq!(schedule.timings().rows()[0].runs, 1);
    /// ```
    pub fn set_timing(&mut self, on: bool) {
        self.timing = on;
    }

    /// True if per-system timing is on (see [`Schedule::set_timing`]).
    ///
    /// # Example
    /// ```
    /// let mut schedule = mosaic::Schedule::new();
    /// assert!(!schedule.is_timing());
    /// schedule.set_timing(true);
    /// assert!(schedule.is_timing());
    /// ```
    pub fn is_timing(&self) -> bool {
        self.timing
    }

    /// The per-system timings collected while timing was on, in run order;
    /// `Display` prints them as a table.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("idle", || {});
    /// schedule.set_timing(true);
    /// schedule.run_frames(&mut world, 3, std::time::Duration::from_millis(16));
    /// let table = schedule.timings().to_string();
    /// assert!(table.contains("idle"));
    /// ```
    pub fn timings(&self) -> SystemTimings {
        let order = self
            .plan
            .as_ref()
            .map(|p| p.order.clone())
            .unwrap_or_else(|| (0..self.slots.len()).collect());
        SystemTimings::new(
            order
                .into_iter()
                .map(|i| {
                    let slot = &self.slots[i];
                    let (runs, total) = slot.stats.timing();
                    SystemTiming {
                        name: slot.name.clone(),
                        runs,
                        total,
                    }
                })
                .collect(),
        )
    }

    /// Checks everything and plans the runs, before anything runs: names
    /// unique, orderings name existing systems or sets and form no cycle,
    /// no system's parameters conflict. Errors name the culprits.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("a", || {}).after("nowhere");
    /// let err = schedule.build(&mut World::new()).unwrap_err();
    /// assert_eq!(
    ///     err,
    ///     ScheduleError::UnknownTarget { from: "a".into(), target: "nowhere".into(), suggestion: None }
    /// );
    /// ```
    pub fn build(&mut self, world: &mut World) -> Result<(), ScheduleError> {
        self.plan = None;
        let mut seen = FxHashSet::default();
        for slot in &self.slots {
            if !seen.insert(slot.name.as_str()) {
                return Err(ScheduleError::DuplicateName(slot.name.clone()));
            }
        }
        // Orderings first: they need no world, so a schedule refused for
        // them has touched no world yet.
        let (edges, syncs) = self.edges_and_syncs()?;
        let order = topological_order(self.slots.len(), &edges).map_err(|cycle| {
            ScheduleError::Cycle(
                cycle
                    .into_iter()
                    .map(|i| self.slots[i].name.clone())
                    .collect(),
            )
        })?;
        for slot in &mut self.slots {
            let system = slot.system.get_mut().unwrap_or_else(|p| p.into_inner());
            system
                .initialize(world)
                .map_err(|detail| ScheduleError::ParamConflict {
                    system: slot.name.clone(),
                    detail,
                })?;
            init_conditions(&mut slot.conditions, &slot.name, world)?;
        }
        for set in &mut self.sets {
            init_conditions(&mut set.conditions, &set.name, world)?;
        }
        self.guard_systems();
        self.has_conditions = self.slots.iter().any(|s| !s.conditions.is_empty())
            || self.sets.iter().any(|s| !s.conditions.is_empty());
        if self.executor == ExecutorKind::Parallel && executor::pool_enabled() {
            // Start the thread pool now, so its start-up is not measured as
            // the first parallel run.
            rayon::current_num_threads();
        }
        self.plan = Some(self.plan_steps(order, &edges, &syncs));
        self.world = Some(world.id());
        Ok(())
    }

    /// Runs every enabled system once, building first if needed (panicking
    /// with the [`ScheduleError`] message if the schedule is invalid). A
    /// panic inside a system is re-raised as a `String` naming the system.
    ///
    /// A run that is not inside another (nor inside
    /// [`Schedule::run_frame`] or [`World::apply_state_transitions`]) is a
    /// frame of its own: it advances the event buffers at its end
    /// ([`World::update_events`]). A nested run, say from an exclusive
    /// system, is part of the frame under way and leaves them alone.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("count", |mut n: ResMut<u32>| *n += 1);
    /// schedule.run(&mut world);
    /// schedule.run(&mut world);
    /// assert_eq!(*world.resource::<u32>(), 2);
    /// ```
    pub fn run(&mut self, world: &mut World) {
        if world.is_in_frame() {
            // Nested (a fixed step, a state transition, a run from an
            // exclusive system): part of the frame under way.
            self.run_once(world);
        } else {
            world.in_frame(|world| self.run_once(world));
            world.update_events();
        }
    }

    /// One run of every enabled system, without touching the events.
    fn run_once(&mut self, world: &mut World) {
        if self.plan.is_none() || self.world != Some(world.id()) {
            if let Err(err) = self.build(world) {
                panic!("{err}");
            }
        }
        // Clamp old change ticks when it is time to (one compare otherwise),
        // so a program that only runs schedules, with no structural change,
        // still keeps ages meaningful across the u32 wrap.
        world.check_change_ticks();
        let plan = self.plan.as_mut().expect("built just above");
        // Counted before anything runs: a run that panics has still used
        // its number, so the next run evaluates its conditions afresh
        // instead of reusing the answers they gave the failed run.
        let run = self.runs;
        self.runs += 1;
        let context = executor::RunContext {
            slots: &self.slots,
            sets: &self.sets,
            timing: self.timing,
            run,
            on_error: self.on_error,
        };
        executor::run(&context, plan, self.executor, world);
        if self.has_conditions {
            self.apply_condition_commands(world);
        }
    }

    /// One frame of the classic `update(dt)` loop: advances the world's
    /// [`Time`] by `delta` (inserting it if missing) and copies it to
    /// [`FrameTime`], applies pending state transitions
    /// ([`World::apply_state_transitions`]), runs the fixed-step schedule
    /// ([`FixedUpdate`](crate::FixedUpdate)) as many times as `delta` calls
    /// for, with `Time` set to the fixed clock, then runs this schedule.
    ///
    /// The frame advances the event buffers once, at its end (see
    /// [`Events`](crate::Events), "Lifetime"): the schedules it runs are all part of it. While
    /// the fixed step has systems, a frame that runs no fixed step leaves
    /// them alone, so the fixed step reads every event sent since its last
    /// step, at any frame rate.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.run_frame(&mut world, Duration::from_millis(16));
    /// assert_eq!(world.resource::<Time>().frame(), 1);
    /// ```
    pub fn run_frame(&mut self, world: &mut World, delta: Duration) {
        let time = world.resource_or_default::<Time>();
        time.advance(delta);
        let frame = FrameTime::new(time.clone());
        *world.resource_or_default::<FrameTime>() = frame;
        let nested = world.is_in_frame();
        let fixed_step_read = world.in_frame(|world| {
            world.apply_state_transitions();
            let fixed_step_read = super::fixed::run_fixed_steps(world, delta);
            self.run(world);
            fixed_step_read
        });
        if fixed_step_read && !nested {
            world.update_events();
        }
    }

    /// Runs `frames` frames of length `delta` ([`Schedule::run_frame`] in a
    /// loop).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.run_frames(&mut world, 10, Duration::from_millis(100));
    /// assert_eq!(world.resource::<Time>().elapsed(), Duration::from_secs(1));
    /// ```
    pub fn run_frames(&mut self, world: &mut World, frames: u64, delta: Duration) {
        for _ in 0..frames {
            self.run_frame(world, delta);
        }
    }

    fn index_of(&self, name: &str) -> Result<usize, ScheduleError> {
        self.slots
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| ScheduleError::UnknownSystem(name.to_owned()))
    }

    fn slot_mut(&mut self, name: &str) -> Result<&mut SystemSlot, ScheduleError> {
        let index = self.index_of(name)?;
        Ok(&mut self.slots[index])
    }

    /// What each name stands for: the system of that name and every member
    /// of the set of that name (sets without members map to nothing), so
    /// that resolving an ordering target costs one lookup, not a scan.
    fn members_by_name(&self) -> FxHashMap<&str, Vec<usize>> {
        let mut members: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
        for set in &self.sets {
            members.entry(set.name.as_str()).or_default();
        }
        for (i, slot) in self.slots.iter().enumerate() {
            members.entry(slot.name.as_str()).or_default().push(i);
            for set in &slot.sets {
                let list = members.entry(set.as_str()).or_default();
                if list.last() != Some(&i) {
                    list.push(i);
                }
            }
        }
        members
    }

    /// Every ordering edge `(first, then)`, or the first unknown target.
    fn edges(&self) -> Result<Vec<(usize, usize)>, ScheduleError> {
        Ok(self.edges_and_syncs()?.0)
    }

    /// Every ordering edge `(first, then)` and, beside it, whether it
    /// brings a sync point (all do but `*_ignore_deferred` ones); or the
    /// first unknown target.
    #[allow(clippy::type_complexity)]
    fn edges_and_syncs(&self) -> Result<(Vec<(usize, usize)>, Vec<bool>), ScheduleError> {
        let members_by_name = self.members_by_name();
        let resolve = |name: &str| members_by_name.get(name);
        let mut edges = Vec::new();
        let mut syncs = Vec::new();
        let unknown = |from: &str, target: &str| ScheduleError::UnknownTarget {
            from: from.to_owned(),
            target: target.to_owned(),
            suggestion: closest_name(target, members_by_name.keys().copied()),
        };
        for (i, slot) in self.slots.iter().enumerate() {
            let sync = |target: &String| !slot.unsynced.contains(target);
            for target in &slot.before {
                let targets = resolve(target).ok_or_else(|| unknown(&slot.name, target))?;
                edges.extend(targets.iter().map(|&t| (i, t)));
                syncs.resize(edges.len(), sync(target));
            }
            for target in &slot.after {
                let targets = resolve(target).ok_or_else(|| unknown(&slot.name, target))?;
                edges.extend(targets.iter().map(|&t| (t, i)));
                syncs.resize(edges.len(), sync(target));
            }
        }
        for set in &self.sets {
            let members = resolve(&set.name).map_or(&[][..], Vec::as_slice);
            for target in &set.before {
                let targets = resolve(target).ok_or_else(|| unknown(&set.name, target))?;
                edges.extend(
                    members
                        .iter()
                        .flat_map(|&m| targets.iter().map(move |&t| (m, t))),
                );
            }
            for target in &set.after {
                let targets = resolve(target).ok_or_else(|| unknown(&set.name, target))?;
                edges.extend(
                    members
                        .iter()
                        .flat_map(|&m| targets.iter().map(move |&t| (t, m))),
                );
            }
        }
        syncs.resize(edges.len(), true);
        Ok((edges, syncs))
    }

    /// Splits the run order into blocks of systems that may overlap,
    /// separated by exclusive systems and by sync points: a system ordered
    /// after one with `Commands` (by an edge that syncs) starts a new block
    /// if that one is in the current block, so its commands apply in
    /// between. Within a block a system waits for its explicit
    /// predecessors and for every earlier system it conflicts with.
    fn plan_steps(&mut self, order: Vec<usize>, edges: &[(usize, usize)], syncs: &[bool]) -> Plan {
        // Per system: the predecessors whose commands it must see.
        let mut deferred_before: Vec<Vec<usize>> = vec![Vec::new(); self.slots.len()];
        for (&(a, b), &sync) in edges.iter().zip(syncs) {
            if sync && self.system_ref(a).access().has_deferred() {
                deferred_before[b].push(a);
            }
        }
        // Per system: the block it is in (blocks counted from 1).
        let mut block_of = vec![0usize; self.slots.len()];
        let mut blocks = 1;
        let mut steps = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        for &i in &order {
            let exclusive = self.system_ref(i).access().is_exclusive();
            let needs_sync = deferred_before[i].iter().any(|&a| block_of[a] == blocks);
            if (exclusive || needs_sync) && !current.is_empty() {
                steps.push(Step::Block(self.block(std::mem::take(&mut current), edges)));
                blocks += 1;
            }
            if exclusive {
                steps.push(Step::Exclusive(i));
            } else {
                block_of[i] = blocks;
                current.push(i);
            }
        }
        if !current.is_empty() {
            steps.push(Step::Block(self.block(current, edges)));
        }
        Plan { order, steps }
    }

    /// Plans one block. A system must wait for its explicit predecessors
    /// and for every earlier system it conflicts with, but only the order
    /// those waits imply matters: a wait already implied by others (`c`
    /// after `a`, when `c` waits for `b` and `b` for `a`) is left out, and
    /// the pair is not even compared. So systems that all conflict plan in
    /// linear time and memory rather than quadratic, and run with one wait
    /// each; which systems may overlap, and in what order the others run,
    /// is exactly as if every conflicting pair waited.
    fn block(&mut self, systems: Vec<usize>, edges: &[(usize, usize)]) -> Block {
        let n = systems.len();
        let local: FxHashMap<usize, usize> =
            systems.iter().enumerate().map(|(l, &g)| (g, l)).collect();
        let mut dependents = vec![Vec::new(); n];
        for &(a, b) in edges {
            if let (Some(&la), Some(&lb)) = (local.get(&a), local.get(&b)) {
                dependents[la].push(lb);
            }
        }
        let access: Vec<_> = systems.iter().map(|&i| self.planned_access(i)).collect();
        // A system that borrows nothing conflicts with nothing (blocks hold
        // no exclusive system): only the others, the borrowers, are
        // compared, and only they are tracked as ancestors, by their rank
        // among the borrowers.
        let borrowers: Vec<usize> = (0..n).filter(|&l| !access[l].touches_nothing()).collect();
        if borrowers.is_empty() {
            return Block::new(systems, dependents);
        }
        let mut rank = vec![None; n];
        for (r, &l) in borrowers.iter().enumerate() {
            rank[l] = Some(r);
        }
        // Explicit predecessors per system: earlier in the block, since the
        // block follows a topological order.
        let mut predecessors = vec![Vec::new(); n];
        for (a, then) in dependents.iter().enumerate() {
            for &b in then {
                predecessors[b].push(a);
            }
        }
        // Per system: the borrowers that finish before it starts, through
        // any chain of waits.
        let mut ancestors: Vec<Ancestors> = Vec::with_capacity(n);
        let mut before = OrderedBefore::new(borrowers.len());
        for b in 0..n {
            for &a in &predecessors[b] {
                before.follow(rank[a], &ancestors[a]);
            }
            if let Some(rank_b) = rank[b] {
                // Nearest first, so that one wait (on the latest conflicting
                // system) orders as many of the rest as possible.
                let mut below = rank_b;
                while let Some(r) = before.last_unordered(below) {
                    let a = borrowers[r];
                    if access[a].conflicts_with(&access[b]) {
                        dependents[a].push(b);
                        before.follow(rank[a], &ancestors[a]);
                    }
                    below = r;
                }
            }
            ancestors.push(before.take());
        }
        Block::new(systems, dependents)
    }

    /// Which sets with conditions each system belongs to.
    fn guard_systems(&mut self) {
        for slot in &mut self.slots {
            slot.guard_sets = (0..self.sets.len())
                .filter(|&s| {
                    !self.sets[s].conditions.is_empty()
                        && slot.sets.iter().any(|n| *n == self.sets[s].name)
                })
                .collect();
            slot.guarded = !slot.conditions.is_empty() || !slot.guard_sets.is_empty();
        }
    }

    /// System `i`'s access joined with its conditions' (own and sets'):
    /// what must not overlap with it.
    fn planned_access(&mut self, i: usize) -> SystemAccess {
        let mut access = self.system_ref(i).access().clone();
        let slot = &mut self.slots[i];
        for condition in &mut slot.conditions {
            access.extend(condition.system_mut().access());
        }
        for &s in &slot.guard_sets {
            for condition in &mut self.sets[s].conditions {
                access.extend(condition.system_mut().access());
            }
        }
        access
    }

    /// Applies what conditions deferred (they may take `Commands`).
    fn apply_condition_commands(&mut self, world: &mut World) {
        let slots = self.slots.iter_mut().flat_map(|s| s.conditions.iter_mut());
        let sets = self.sets.iter_mut().flat_map(|s| s.conditions.iter_mut());
        for condition in slots.chain(sets) {
            condition.apply_deferred(world);
        }
    }

    fn system_ref(&mut self, i: usize) -> &dyn System<Out = super::SystemResult> {
        &**self.slots[i]
            .system
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// Initializes the conditions guarding `guards`, refusing invalid ones.
fn init_conditions(
    conditions: &mut [ConditionSlot],
    guards: &str,
    world: &mut World,
) -> Result<(), ScheduleError> {
    for condition in conditions {
        condition.initialize(world).map_err(|(condition, detail)| {
            ScheduleError::InvalidCondition {
                condition,
                guards: guards.to_owned(),
                detail,
            }
        })?;
    }
    Ok(())
}

const WORD_BITS: usize = usize::BITS as usize;

/// The borrowers (by rank, see `Schedule::block`) that finish before a
/// system starts: every rank below `WORD_BITS * full`, and those set in
/// `rest`, whose first word starts at that rank. A system in a long run of
/// conflicting ones comes after nearly every borrower before it, so this
/// stays a word or two where a plain bitset would grow with the block.
struct Ancestors {
    full: usize,
    rest: Box<[usize]>,
}

/// The borrowers ordered before the system being planned: a bitset over
/// every rank, whose first `full` words are all ones without being
/// written (so a system that comes after everything before it costs a
/// word or two, not a pass over the block). Only words in `full..used` may
/// be nonzero; all are zero again between systems.
struct OrderedBefore {
    words: Vec<usize>,
    full: usize,
    used: usize,
}

impl OrderedBefore {
    fn new(ranks: usize) -> Self {
        OrderedBefore {
            words: vec![0; ranks.div_ceil(WORD_BITS)],
            full: 0,
            used: 0,
        }
    }

    /// Adds a system waited for: itself (`rank`, if a borrower) and its
    /// `ancestors`.
    fn follow(&mut self, rank: Option<usize>, ancestors: &Ancestors) {
        if ancestors.full > self.full {
            // Words now wholly ordered: their bits are implied.
            let end = ancestors.full.min(self.used);
            if self.full < end {
                self.words[self.full..end].fill(0);
            }
            self.full = ancestors.full;
            self.used = self.used.max(self.full);
        }
        for (i, &bits) in ancestors.rest.iter().enumerate() {
            let word = ancestors.full + i;
            if word >= self.full {
                self.words[word] |= bits;
                self.used = self.used.max(word + 1);
            }
        }
        if let Some(r) = rank {
            let word = r / WORD_BITS;
            if word >= self.full {
                self.words[word] |= 1 << (r % WORD_BITS);
                self.used = self.used.max(word + 1);
            }
        }
        while self.full < self.used && self.words[self.full] == !0 {
            self.words[self.full] = 0;
            self.full += 1;
        }
    }

    /// The last rank below `below` not ordered yet, if any: a word at a
    /// time, so a run of borrowers already ordered is skipped 64 at once.
    fn last_unordered(&self, below: usize) -> Option<usize> {
        let mut end = below;
        while end > self.full * WORD_BITS {
            let word = (end - 1) / WORD_BITS;
            let in_range = end - word * WORD_BITS;
            let mask = if in_range == WORD_BITS {
                !0
            } else {
                (1 << in_range) - 1
            };
            let free = !self.words[word] & mask;
            if free != 0 {
                return Some(word * WORD_BITS + (WORD_BITS - 1 - free.leading_zeros() as usize));
            }
            end = word * WORD_BITS;
        }
        None
    }

    /// The set, compacted, leaving this one empty for the next system.
    fn take(&mut self) -> Ancestors {
        let full = self.full;
        let written = &mut self.words[full..self.used];
        let len = written
            .iter()
            .rposition(|&w| w != 0)
            .map_or(0, |last| last + 1);
        let ancestors = Ancestors {
            full,
            rest: written[..len].into(),
        };
        written.fill(0);
        self.full = 0;
        self.used = 0;
        ancestors
    }
}

/// A topological order of `n` nodes under `edges`, taking the lowest index
/// whenever there is a choice (so insertion order decides ties); or, if the
/// edges form a cycle, the nodes of one cycle in order.
fn topological_order(n: usize, edges: &[(usize, usize)]) -> Result<Vec<usize>, Vec<usize>> {
    let mut successors = vec![Vec::new(); n];
    let mut indegree = vec![0usize; n];
    for &(a, b) in edges {
        successors[a].push(b);
        indegree[b] += 1;
    }
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&i| indegree[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &s in &successors[i] {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.push(Reverse(s));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    Err(find_cycle(&successors, &indegree))
}

/// One cycle among the nodes a topological sort left behind (those still
/// with incoming edges). Each of them has a left-behind predecessor, so
/// walking predecessors must revisit a node; the walk from there is a
/// cycle, reversed.
fn find_cycle(successors: &[Vec<usize>], indegree: &[usize]) -> Vec<usize> {
    let stuck = |i: usize| indegree[i] > 0;
    let mut predecessors = vec![Vec::new(); successors.len()];
    for (a, succ) in successors.iter().enumerate() {
        for &b in succ {
            predecessors[b].push(a);
        }
    }
    let start = (0..successors.len())
        .find(|&i| stuck(i))
        .expect("a cycle exists");
    let mut path = vec![start];
    let mut position = FxHashMap::default();
    position.insert(start, 0);
    let mut node = start;
    loop {
        let prev = *predecessors[node]
            .iter()
            .find(|&&p| stuck(p))
            .expect("a left-behind node has a left-behind predecessor");
        if let Some(&p) = position.get(&prev) {
            let mut cycle = path[p..].to_vec();
            cycle.reverse();
            return cycle;
        }
        position.insert(prev, path.len());
        path.push(prev);
        node = prev;
    }
}

/// The name among `names` closest to `target` by edit distance, if it is
/// close enough to be a typo of it (at most a third of its characters
/// differ, and at least one): for the "did you mean" of
/// [`ScheduleError::UnknownTarget`]. Ties go to the smallest name, so the
/// answer does not depend on hash order.
pub(crate) fn closest_name<'a>(
    target: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let limit = (target.chars().count() / 3).max(1);
    names
        .into_iter()
        .filter(|name| *name != target)
        .map(|name| (edit_distance(target, name), name))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, name)| name.to_owned())
}

/// Levenshtein distance between `a` and `b`, by characters, ignoring ASCII
/// case (a label's case is the commonest slip).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Component;
    use crate::query::{Query, With, Without};
    use crate::resource::{Res, ResMut};
    use fixedbitset::FixedBitSet;

    /// A condition's read joins its system's access: a system guarded by a
    /// condition reading `u32` waits for an earlier writer of `u32`, though
    /// the system itself touches nothing.
    #[test]
    fn a_condition_s_access_orders_its_system() {
        let mut world = World::new();
        world.insert_resource(0u32);
        let mut schedule = Schedule::new();
        schedule.add_system("writer", |mut n: ResMut<u32>| *n += 1);
        schedule.add_system("free", || {});
        schedule
            .add_system("guarded", || {})
            .run_if(|n: Res<u32>| *n > 0);
        schedule.build(&mut world).unwrap();
        let plan = schedule.plan.as_ref().unwrap();
        let Step::Block(block) = &plan.steps[0] else {
            panic!("one block expected");
        };
        assert_eq!(block.dependents(0), [2], "guarded waits for writer");
        assert!(block.dependents(1).is_empty());
    }

    #[derive(Component)]
    struct A;
    #[derive(Component)]
    struct B;
    #[derive(Component)]
    struct Mark;

    /// Every system that must finish before each system of `block` starts,
    /// following `dependents` (waits point forward in the block).
    fn closure(n: usize, dependents: impl Fn(usize) -> Vec<usize>) -> Vec<FixedBitSet> {
        let mut before = vec![FixedBitSet::with_capacity(n); n];
        for a in 0..n {
            let ancestors = before[a].clone();
            for b in dependents(a) {
                assert!(a < b, "a wait points backwards");
                before[b].insert(a);
                before[b].union_with(&ancestors);
            }
        }
        before
    }

    /// The plan leaves out waits that others imply, but the order it
    /// enforces is exactly that of a wait for every explicit predecessor
    /// and every earlier conflicting system, each pair compared: checked on
    /// a mix of resource and query readers and writers (disjoint filters
    /// among them), `&World` readers, conditions, orderings, systems with
    /// `Commands` (which never overlap one another) and exclusive systems
    /// and sync points splitting the blocks; every system ordered after one
    /// with `Commands` is in a later step.
    #[test]
    fn the_plan_orders_exactly_what_pairwise_conflicts_order() {
        let mut world = World::new();
        world.insert_resource(0u32);
        world.insert_resource(0u64);
        world.insert_resource(0i8);
        let mut schedule = Schedule::new();
        let mut seed = 12345u64;
        let (n, split) = if cfg!(miri) { (40, 15) } else { (400, 150) };
        for i in 0..n {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Mostly writers of one resource at first: long runs where
            // each system comes after every borrower before it.
            let kind = if i < split && seed % 4 != 0 {
                2
            } else {
                (seed >> 33) % 15
            };
            let name = format!("s{i}");
            let config = match kind {
                _ if i % split == split - 1 => schedule.add_system(name, |_: &mut World| {}),
                0 => schedule.add_system(name, || {}),
                1 => schedule.add_system(name, |_: Res<u32>| {}),
                2 => schedule.add_system(name, |_: ResMut<u32>| {}),
                3 => schedule.add_system(name, |_: Res<u64>| {}),
                4 => schedule.add_system(name, |_: ResMut<u64>| {}),
                5 => schedule.add_system(name, |_: Query<&mut A>| {}),
                6 => schedule.add_system(name, |_: Query<&A>| {}),
                7 => schedule.add_system(name, |_: Query<&mut A, With<Mark>>| {}),
                8 => schedule.add_system(name, |_: Query<&mut A, Without<Mark>>| {}),
                9 => schedule.add_system(name, |_: &World| {}),
                10 => schedule.add_system(name, |_: ResMut<i8>, _: Query<&B>| {}),
                11 => schedule.add_system(name, |_: Query<&mut B>| {}),
                12 => schedule
                    .add_system(name, || {})
                    .run_if(|n: Res<u64>| *n == 0),
                13 => schedule.add_system(name, |_: crate::Commands| {}),
                _ => schedule.add_system(name, |_: Res<i8>| {}),
            };
            // An ordering against a recent system or any earlier one
            // (each system orders itself against one earlier system at
            // most, so there is no cycle).
            let pick = (seed >> 20) % 8;
            let back = if (seed >> 45) % 2 == 0 {
                1 + (seed >> 40) as usize % 4
            } else {
                1 + (seed >> 40) as usize % i.max(1)
            };
            let target = format!("s{}", i.saturating_sub(back));
            if i > 4 && pick == 0 {
                config.after(target);
            } else if i > 4 && pick == 1 {
                config.before(target);
            }
        }
        // One ordering after a system with commands whatever the seed gives
        // (Miri's shorter mix may have none).
        schedule.add_system("deferring", |_: crate::Commands| {});
        schedule
            .add_system("after_deferring", || {})
            .after("deferring");
        let n = n + 2;
        schedule.build(&mut world).unwrap();
        let edges = schedule.edges().unwrap();
        let plan = schedule.plan.take().unwrap();
        let mut blocks = 0;
        let mut start = 0;
        // Per system: its step, to check the sync points.
        let mut step_of = vec![0; n];
        for (k, step) in plan.steps.iter().enumerate() {
            match step {
                Step::Block(block) => block.systems().iter().for_each(|&i| step_of[i] = k),
                Step::Exclusive(i) => step_of[*i] = k,
            }
        }
        let mut synced = 0;
        for &(a, b) in &edges {
            if schedule.system_ref(a).access().has_deferred() {
                let name = |i: usize| schedule.slots[i].name.clone();
                assert!(
                    step_of[a] < step_of[b],
                    "`{}` sees the commands of `{}`",
                    name(b),
                    name(a)
                );
                synced += 1;
            }
        }
        assert!(
            synced > 0,
            "some system with commands is ordered before another"
        );
        for step in &plan.steps {
            let Step::Block(block) = step else {
                start += 1;
                continue;
            };
            let systems = &plan.order[start..start + block.systems().len()];
            assert_eq!(systems, block.systems());
            start += systems.len();
            blocks += 1;
            let m = systems.len();
            let local: FxHashMap<usize, usize> =
                systems.iter().enumerate().map(|(l, &g)| (g, l)).collect();
            let access: Vec<_> = systems
                .iter()
                .map(|&i| schedule.planned_access(i))
                .collect();
            let mut every_wait = vec![Vec::new(); m];
            for &(a, b) in &edges {
                if let (Some(&la), Some(&lb)) = (local.get(&a), local.get(&b)) {
                    every_wait[la].push(lb);
                }
            }
            for a in 0..m {
                for b in a + 1..m {
                    if access[a].conflicts_with(&access[b]) {
                        every_wait[a].push(b);
                    }
                }
            }
            let expected = closure(m, |a| every_wait[a].clone());
            let planned = closure(m, |a| block.dependents(a).to_vec());
            for b in 0..m {
                assert_eq!(
                    planned[b].ones().collect::<Vec<_>>(),
                    expected[b].ones().collect::<Vec<_>>(),
                    "what must finish before `{}`",
                    schedule.slots[systems[b]].name
                );
            }
        }
        assert_eq!(start, n);
        assert!(blocks > 1, "exclusive systems split the schedule");
    }
}
