//! Systems given to [`Schedule::add_systems`]: one system, a tuple of them,
//! or a group configured as a whole (`.chain()`, `.run_if(..)`,
//! `.in_set(..)`, `.before(..)`, `.after(..)`).
//!
//! A system added this way is named after its function (`movement` for
//! `game::systems::movement`; `setup::{{closure}}` for a closure in
//! `setup`), with `#2`, `#3`, ... appended when the name is taken, so
//! [`Schedule::set_enabled`] and friends can find it; name it yourself with
//! [`Schedule::add_system`] when you need a stable name.

use std::fmt;
use std::ops::Range;

use rustc_hash::FxHashSet;

use super::condition::{Condition, ConditionSlot};
use super::{IntoSystem, IntoSystemOutput, Schedule, System};

/// A system as the schedule stores it.
pub(crate) type BoxedSystem = Box<dyn System<Out = super::SystemResult>>;

/// One system waiting to be added.
pub(crate) struct PendingSystem {
    pub name: String,
    pub system: BoxedSystem,
    pub before: Vec<String>,
    pub after: Vec<String>,
    pub sets: Vec<String>,
    pub conditions: Vec<ConditionSlot>,
    /// Targets among `before` and `after` whose ordering brings no sync
    /// point (`*_ignore_deferred`).
    pub unsynced: Vec<String>,
}

/// Conditions shared by a group (they become an anonymous set's).
pub(crate) struct PendingGroup {
    pub members: Range<usize>,
    pub conditions: Vec<ConditionSlot>,
}

/// Systems configured together, ready for [`Schedule::add_systems`]; made by
/// the methods of [`IntoSystemConfigs`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// fn input() {}
/// fn physics() {}
/// let configs = (input, physics).chain();
/// let mut schedule = Schedule::new();
/// schedule.add_systems(configs);
/// assert_eq!(schedule.system_names(), ["input", "physics"]);
/// ```
pub struct SystemConfigs {
    pub(crate) systems: Vec<PendingSystem>,
    /// The top-level elements (ranges of `systems`), which `chain` orders.
    elements: Vec<Range<usize>>,
    /// Orderings `(first, then, sync)` between systems of this group;
    /// `sync` is false for `chain_ignore_deferred`.
    pub(crate) order: Vec<(usize, usize, bool)>,
    pub(crate) groups: Vec<PendingGroup>,
}

impl fmt::Debug for SystemConfigs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemConfigs")
            .field(
                "systems",
                &self.systems.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl SystemConfigs {
    fn single(name: String, system: BoxedSystem) -> Self {
        SystemConfigs {
            systems: vec![PendingSystem {
                name,
                system,
                before: Vec::new(),
                after: Vec::new(),
                sets: Vec::new(),
                conditions: Vec::new(),
                unsynced: Vec::new(),
            }],
            elements: std::iter::once(0..1).collect(),
            order: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// Appends `other` as one more top-level element.
    fn push(&mut self, other: SystemConfigs) {
        let offset = self.systems.len();
        let shift = |r: Range<usize>| r.start + offset..r.end + offset;
        self.systems.extend(other.systems);
        self.elements.push(offset..self.systems.len());
        self.order.extend(
            other
                .order
                .into_iter()
                .map(|(a, b, sync)| (a + offset, b + offset, sync)),
        );
        self.groups
            .extend(other.groups.into_iter().map(|g| PendingGroup {
                members: shift(g.members),
                conditions: g.conditions,
            }));
    }

    /// Makes the whole group one element (after configuring it as a whole).
    fn seal(mut self) -> Self {
        self.elements = std::iter::once(0..self.systems.len()).collect();
        self
    }
}

/// Marker for [`IntoSystemConfigs`] on one system.
#[doc(hidden)]
pub struct IsOneSystem;
/// Marker for [`IntoSystemConfigs`] on [`SystemConfigs`].
#[doc(hidden)]
pub struct IsConfigs;
/// Marker for [`IntoSystemConfigs`] on tuples.
#[doc(hidden)]
pub struct IsTuple;

/// What [`Schedule::add_systems`] takes: a system, a tuple of up to 16
/// (nested freely), or [`SystemConfigs`]. The methods configure every
/// system of the group at once.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Paused;
/// fn input() {}
/// fn physics() {}
/// fn render() {}
/// let mut schedule = Schedule::new();
/// schedule.add_systems(((input, physics).chain().run_if(not(resource_exists::<Paused>)), render));
/// assert_eq!(schedule.system_names(), ["input", "physics", "render"]);
/// ```
pub trait IntoSystemConfigs<Marker>: Sized {
    /// The systems, configured.
    fn into_configs(self) -> SystemConfigs;

    /// Runs the elements of this tuple one after the other, in the order
    /// written (each element's systems all before the next element's).
    ///
    /// Where an element has `Commands`, the next one starts after a sync
    /// point: it sees what the earlier one spawned, inserted or despawned,
    /// in the same run (as Bevy's automatic sync points).
    /// [`IntoSystemConfigs::chain_ignore_deferred`] orders without them.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Default)] struct Log(Vec<u8>);
    /// #[derive(Component)] struct Spawned;
    /// let mut world = World::new();
    /// world.insert_resource(Log::default());
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((
    ///     |mut l: ResMut<Log>| l.0.push(1),
    ///     |mut l: ResMut<Log>| l.0.push(2),
    ///     |mut l: ResMut<Log>| l.0.push(3),
    /// ).chain());
    /// schedule.add_systems((
    ///     |mut c: Commands| { c.spawn(Spawned); },
    ///     |q: Query<&Spawned>, mut l: ResMut<Log>| l.0.push(q.iter().count() as u8),
    /// ).chain());
    /// schedule.run(&mut world);
    /// assert_eq!(world.resource::<Log>().0, [1, 2, 3, 1]);
    /// ```
    fn chain(self) -> SystemConfigs {
        chained(self.into_configs(), true)
    }

    /// [`IntoSystemConfigs::chain`] without sync points: the elements run in
    /// order, but commands still wait for the schedule's next sync point, so
    /// a later element does not see an earlier one's (and they may share a
    /// block of systems run together).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Spawned;
    /// let mut world = World::new();
    /// world.insert_resource(0usize);
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((
    ///     |mut c: Commands| { c.spawn(Spawned); },
    ///     |q: Query<&Spawned>, mut n: ResMut<usize>| *n = q.iter().count(),
    /// ).chain_ignore_deferred());
    /// schedule.run(&mut world);
    /// assert_eq!(*world.resource::<usize>(), 0); // applied after the run
    /// assert_eq!(world.len(), 1);
    /// ```
    fn chain_ignore_deferred(self) -> SystemConfigs {
        chained(self.into_configs(), false)
    }

    /// Runs the group only when `condition` holds. It is evaluated once per
    /// schedule run for the whole group (like a set's condition).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// struct Paused;
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// world.insert_resource(Paused);
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((|mut n: ResMut<u32>| *n += 1).run_if(not(resource_exists::<Paused>)));
    /// schedule.run(&mut world);
    /// assert_eq!(*world.resource::<u32>(), 0);
    /// ```
    fn run_if<M, C: Condition<M>>(self, condition: C) -> SystemConfigs {
        let mut configs = self.into_configs();
        let members = 0..configs.systems.len();
        configs.groups.push(PendingGroup {
            members,
            conditions: vec![ConditionSlot::new(condition)],
        });
        configs.seal()
    }

    /// Puts every system of the group in set `set`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// fn a() {}
    /// fn b() {}
    /// fn late() {}
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(((a, b).in_set("early"), late));
    /// schedule.configure_set("early").after("late");
    /// assert_eq!(schedule.system_names(), ["late", "a", "b"]);
    /// ```
    fn in_set(self, set: impl Into<String>) -> SystemConfigs {
        let set = set.into();
        each_system(self.into_configs(), |system| system.sets.push(set.clone()))
    }

    /// Runs every system of the group before `target` (a system or set).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// fn a() {}
    /// fn b() {}
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("render", || {});
    /// schedule.add_systems((a, b).before("render"));
    /// assert_eq!(schedule.system_names(), ["a", "b", "render"]);
    /// ```
    fn before<M>(self, target: impl IntoLabel<M>) -> SystemConfigs {
        let target = target.into_label();
        each_system(self.into_configs(), |system| {
            system.before.push(target.clone())
        })
    }

    /// Runs every system of the group after `target` (a system or set).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// fn a() {}
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(a.after("input"));
    /// schedule.add_system("input", || {});
    /// assert_eq!(schedule.system_names(), ["input", "a"]);
    /// ```
    fn after<M>(self, target: impl IntoLabel<M>) -> SystemConfigs {
        let target = target.into_label();
        each_system(self.into_configs(), |system| {
            system.after.push(target.clone())
        })
    }
}

/// What `before` and `after` take: the name of a system or set (any
/// `Into<String>`: a `&str`, a `String`, a `#[derive(SystemSet)]` value),
/// or a system function itself, as in Bevy (`.after(despawn_dead)`), which
/// stands for the name [`Schedule::add_systems`] gives it: the function's
/// own name. (A function added more than once is named `name`, `name#2`,
/// ...; the function as a label means the first.)
///
/// `Marker` only tells the two kinds apart; it is inferred.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// fn despawn_dead() {}
/// fn score() {}
/// fn draw() {}
/// let mut schedule = Schedule::new();
/// schedule.add_systems((score.after(despawn_dead), draw.after("score")));
/// schedule.add_systems(despawn_dead);
/// assert_eq!(schedule.system_names(), ["despawn_dead", "score", "draw"]);
/// ```
pub trait IntoLabel<Marker> {
    /// The name this label stands for.
    fn into_label(self) -> String;
}

/// A set label written as a type, as in Bevy: `#[derive(SystemSet)]` on a
/// unit struct or an enum of unit variants. The value converts to the
/// set's name (`Physics`, `GameSet::Input`), so it goes wherever a set's
/// name does: `.in_set(Physics)`, `configure_set(Physics)`,
/// `.after(GameSet::Input)`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
/// enum GameSet { Input, Physics }
/// fn read_keys() {}
/// fn step() {}
/// let mut schedule = Schedule::new();
/// schedule.add_systems((step.in_set(GameSet::Physics), read_keys.in_set(GameSet::Input)));
/// schedule.configure_set(GameSet::Physics).after(GameSet::Input);
/// assert_eq!(schedule.system_names(), ["read_keys", "step"]);
/// assert_eq!(GameSet::Input.set_name(), "GameSet::Input");
/// ```
pub trait SystemSet: Send + Sync + 'static {
    /// The set's name in the schedule.
    fn set_name(&self) -> &'static str;
}

/// Marker for [`IntoLabel`] on names.
#[doc(hidden)]
pub struct IsName;
/// Marker for [`IntoLabel`] on system functions.
#[doc(hidden)]
pub struct IsSystemLabel<M>(std::marker::PhantomData<M>);

impl<T: Into<String>> IntoLabel<IsName> for T {
    fn into_label(self) -> String {
        self.into()
    }
}

impl<M, S: IntoSystem<M>> IntoLabel<IsSystemLabel<M>> for S {
    fn into_label(self) -> String {
        default_name(std::any::type_name::<S>())
    }
}

/// `configs` with each element ordered after the one before (with sync
/// points if `sync`), sealed.
fn chained(mut configs: SystemConfigs, sync: bool) -> SystemConfigs {
    for pair in configs.elements.windows(2) {
        for first in pair[0].clone() {
            for then in pair[1].clone() {
                configs.order.push((first, then, sync));
            }
        }
    }
    configs.seal()
}

/// `configs` with `edit` applied to each of its systems, sealed (what
/// `in_set`, `before` and `after` do to a group).
fn each_system(mut configs: SystemConfigs, edit: impl FnMut(&mut PendingSystem)) -> SystemConfigs {
    configs.systems.iter_mut().for_each(edit);
    configs.seal()
}

impl<M, S> IntoSystemConfigs<(IsOneSystem, M)> for S
where
    S: IntoSystem<M>,
    <S::System as System>::Out: IntoSystemOutput,
{
    fn into_configs(self) -> SystemConfigs {
        let system = self.into_system();
        let name = default_name(system.name());
        SystemConfigs::single(name, super::boxed(system))
    }
}

impl IntoSystemConfigs<IsConfigs> for SystemConfigs {
    fn into_configs(self) -> SystemConfigs {
        self
    }
}

macro_rules! tuple_configs {
    ($(($p:ident, $m:ident)),*) => {
        #[allow(non_snake_case)]
        impl<$($p, $m),*> IntoSystemConfigs<(IsTuple, $($m,)*)> for ($($p,)*)
        where
            $($p: IntoSystemConfigs<$m>,)*
        {
            fn into_configs(self) -> SystemConfigs {
                let ($($p,)*) = self;
                let mut configs = SystemConfigs {
                    systems: Vec::new(),
                    elements: Vec::new(),
                    order: Vec::new(),
                    groups: Vec::new(),
                };
                $(configs.push($p.into_configs());)*
                configs
            }
        }
    };
}

tuple_configs!((S0, M0));
tuple_configs!((S0, M0), (S1, M1));
tuple_configs!((S0, M0), (S1, M1), (S2, M2));
tuple_configs!((S0, M0), (S1, M1), (S2, M2), (S3, M3));
tuple_configs!((S0, M0), (S1, M1), (S2, M2), (S3, M3), (S4, M4));
tuple_configs!((S0, M0), (S1, M1), (S2, M2), (S3, M3), (S4, M4), (S5, M5));
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7),
    (S8, M8)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7),
    (S8, M8),
    (S9, M9)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7),
    (S8, M8),
    (S9, M9),
    (S10, M10)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7),
    (S8, M8),
    (S9, M9),
    (S10, M10),
    (S11, M11)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7),
    (S8, M8),
    (S9, M9),
    (S10, M10),
    (S11, M11),
    (S12, M12)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7),
    (S8, M8),
    (S9, M9),
    (S10, M10),
    (S11, M11),
    (S12, M12),
    (S13, M13)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7),
    (S8, M8),
    (S9, M9),
    (S10, M10),
    (S11, M11),
    (S12, M12),
    (S13, M13),
    (S14, M14)
);
tuple_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7),
    (S8, M8),
    (S9, M9),
    (S10, M10),
    (S11, M11),
    (S12, M12),
    (S13, M13),
    (S14, M14),
    (S15, M15)
);

/// A system's default schedule name, from its type name: the function's
/// own name, or `function::{{closure}}` for a closure.
pub(crate) fn default_name(type_name: &str) -> String {
    let base = type_name.split('<').next().unwrap_or(type_name);
    let mut parts = base.rsplit("::");
    let last = parts.next().unwrap_or(base);
    if last.starts_with("{{") {
        if let Some(owner) = parts.find(|p| !p.starts_with("{{")) {
            return format!("{owner}::{last}");
        }
    }
    last.to_owned()
}

impl Schedule {
    /// Adds systems: one, a tuple (up to 16, nested freely), or a group
    /// configured with [`IntoSystemConfigs`]'s methods (`.chain()`,
    /// `.run_if(..)`, `.in_set(..)`, `.before(..)`, `.after(..)`). Each is
    /// named after its function, with `#2`, `#3`, ... appended if the name
    /// is taken (see [`Schedule::system_names`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// fn input() {}
    /// fn physics() {}
    /// fn render() {}
    /// let mut schedule = Schedule::new();
    /// schedule
    ///     .add_systems((input, physics, render).chain())
    ///     .add_systems(|| {});
    /// assert!(schedule.contains("physics"));
    /// assert_eq!(schedule.system_names().len(), 4);
    /// ```
    pub fn add_systems<M>(&mut self, systems: impl IntoSystemConfigs<M>) -> &mut Self {
        let configs = systems.into_configs();
        let mut names = Vec::with_capacity(configs.systems.len());
        let mut taken = FxHashSet::default();
        for pending in &configs.systems {
            let name = self.free_name(&pending.name, &taken);
            taken.insert(name.clone());
            names.push(name);
        }
        let mut systems: Vec<PendingSystem> = configs.systems;
        for &(first, then, sync) in &configs.order {
            let name = names[first].clone();
            if !sync {
                systems[then].unsynced.push(name.clone());
            }
            systems[then].after.push(name);
        }
        for group in configs.groups {
            let set = self.anonymous_set(group.conditions);
            for i in group.members {
                systems[i].sets.push(set.clone());
            }
        }
        for (mut pending, name) in systems.into_iter().zip(names) {
            pending.name = name;
            self.push_slot(pending);
        }
        self
    }

    /// `name`, or `name#2`, `name#3`, ... : the first not yet used by the
    /// schedule nor by `taken`. The search starts at the schedule's hint
    /// for `name` (every suffix below it is taken), so adding the same
    /// function n times costs O(n), not O(n²) name tries.
    pub(crate) fn free_name(&mut self, name: &str, taken: &FxHashSet<String>) -> String {
        let used = |schedule: &Schedule, n: &str| schedule.contains(n) || taken.contains(n);
        if !used(self, name) {
            return name.to_owned();
        }
        let start = self.suffix_hint(name);
        let (k, free) = (start..)
            .map(|k| (k, format!("{name}#{k}")))
            .find(|(_, n)| !used(self, n))
            .expect("some suffix is free");
        self.set_suffix_hint(name, k + 1);
        free
    }
}
