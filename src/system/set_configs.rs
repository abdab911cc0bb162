//! [`Schedule::configure_sets`]: several sets ordered at once, as Bevy
//! writes it (`configure_sets((Input, Physics, Render).chain())`).

use std::fmt;
use std::ops::Range;

use super::Schedule;
use super::config::{IntoLabel, IsName};

/// Sets configured together, ready for [`Schedule::configure_sets`]; made
/// by the methods of [`IntoSetConfigs`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::IntoSetConfigs;
/// let configs = ("input", "physics").chain();
/// let mut schedule = Schedule::new();
/// schedule.configure_sets(configs);
/// schedule.add_system("step", || {}).in_set("physics");
/// schedule.add_system("read", || {}).in_set("input");
/// assert_eq!(schedule.system_names(), ["read", "step"]);
/// ```
pub struct SetConfigs {
    sets: Vec<PendingSet>,
    /// The top-level elements (ranges of `sets`), which `chain` orders.
    elements: Vec<Range<usize>>,
}

struct PendingSet {
    name: String,
    before: Vec<String>,
    after: Vec<String>,
}

impl fmt::Debug for SetConfigs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetConfigs")
            .field(
                "sets",
                &self.sets.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl SetConfigs {
    fn each(mut self, edit: impl FnMut(&mut PendingSet)) -> Self {
        self.sets.iter_mut().for_each(edit);
        self.elements = std::iter::once(0..self.sets.len()).collect();
        self
    }
}

/// What [`Schedule::configure_sets`] takes: a set (its name, or a
/// `#[derive(SystemSet)]` value), a tuple of up to 8 (nested freely), or
/// [`SetConfigs`]. The methods order every set of the group at once.
///
/// `Marker` only tells the implementations apart; it is inferred.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
/// enum GameSet { Input, Physics, Render }
/// let mut schedule = Schedule::new();
/// schedule.configure_sets((GameSet::Input, GameSet::Physics, GameSet::Render).chain());
/// schedule.add_systems((|| {}).in_set(GameSet::Render));
/// schedule.add_system("step", || {}).in_set(GameSet::Physics);
/// schedule.add_system("keys", || {}).in_set(GameSet::Input);
/// assert_eq!(schedule.system_names()[..2], ["keys", "step"]);
/// ```
pub trait IntoSetConfigs<Marker>: Sized {
    /// The sets, configured.
    fn into_set_configs(self) -> SetConfigs;

    /// Orders the elements of this tuple one after the other, in the order
    /// written (every set of an element before every set of the next).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.configure_sets(("a", "b").chain());
    /// schedule.add_system("y", || {}).in_set("b");
    /// schedule.add_system("x", || {}).in_set("a");
    /// assert_eq!(schedule.system_names(), ["x", "y"]);
    /// ```
    fn chain(self) -> SetConfigs {
        let mut configs = self.into_set_configs();
        let elements = configs.elements.clone();
        for pair in elements.windows(2) {
            for first in pair[0].clone() {
                let name = configs.sets[first].name.clone();
                for then in pair[1].clone() {
                    configs.sets[then].after.push(name.clone());
                }
            }
        }
        configs.elements = std::iter::once(0..configs.sets.len()).collect();
        configs
    }

    /// Runs every set of the group before `target` (a system or set).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.configure_sets("physics".before("render"));
    /// schedule.add_system("render", || {});
    /// schedule.add_system("step", || {}).in_set("physics");
    /// assert_eq!(schedule.system_names(), ["step", "render"]);
    /// ```
    fn before<M>(self, target: impl IntoLabel<M>) -> SetConfigs {
        let target = target.into_label();
        self.into_set_configs()
            .each(|set| set.before.push(target.clone()))
    }

    /// Runs every set of the group after `target` (a system or set).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut schedule = Schedule::new();
    /// schedule.configure_sets("physics".after("input"));
    /// schedule.add_system("step", || {}).in_set("physics");
    /// schedule.add_system("input", || {});
    /// assert_eq!(schedule.system_names(), ["input", "step"]);
    /// ```
    fn after<M>(self, target: impl IntoLabel<M>) -> SetConfigs {
        let target = target.into_label();
        self.into_set_configs()
            .each(|set| set.after.push(target.clone()))
    }
}

impl<T: Into<String>> IntoSetConfigs<IsName> for T {
    fn into_set_configs(self) -> SetConfigs {
        SetConfigs {
            sets: vec![PendingSet {
                name: self.into(),
                before: Vec::new(),
                after: Vec::new(),
            }],
            elements: std::iter::once(0..1).collect(),
        }
    }
}

/// Marker for [`IntoSetConfigs`] on [`SetConfigs`].
#[doc(hidden)]
pub struct IsSetConfigs;

impl IntoSetConfigs<IsSetConfigs> for SetConfigs {
    fn into_set_configs(self) -> SetConfigs {
        self
    }
}

/// Marker for [`IntoSetConfigs`] on tuples.
#[doc(hidden)]
pub struct IsSetTuple;

macro_rules! tuple_set_configs {
    ($(($p:ident, $m:ident)),*) => {
        #[allow(non_snake_case)]
        impl<$($p, $m),*> IntoSetConfigs<(IsSetTuple, $($m,)*)> for ($($p,)*)
        where
            $($p: IntoSetConfigs<$m>,)*
        {
            fn into_set_configs(self) -> SetConfigs {
                let ($($p,)*) = self;
                let mut configs = SetConfigs { sets: Vec::new(), elements: Vec::new() };
                $(
                    let part = $p.into_set_configs();
                    let start = configs.sets.len();
                    configs.sets.extend(part.sets);
                    configs.elements.push(start..configs.sets.len());
                )*
                configs
            }
        }
    };
}

tuple_set_configs!((S0, M0));
tuple_set_configs!((S0, M0), (S1, M1));
tuple_set_configs!((S0, M0), (S1, M1), (S2, M2));
tuple_set_configs!((S0, M0), (S1, M1), (S2, M2), (S3, M3));
tuple_set_configs!((S0, M0), (S1, M1), (S2, M2), (S3, M3), (S4, M4));
tuple_set_configs!((S0, M0), (S1, M1), (S2, M2), (S3, M3), (S4, M4), (S5, M5));
tuple_set_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6)
);
tuple_set_configs!(
    (S0, M0),
    (S1, M1),
    (S2, M2),
    (S3, M3),
    (S4, M4),
    (S5, M5),
    (S6, M6),
    (S7, M7)
);

impl Schedule {
    /// Orders several sets at once, as Bevy writes it:
    /// `configure_sets((Input, Physics).chain())`, `configure_sets(Physics.after(Input))`.
    /// (For one set's run condition, [`Schedule::configure_set`].)
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
    /// struct Input;
    /// #[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
    /// struct Physics;
    /// let mut schedule = Schedule::new();
    /// schedule.configure_sets((Input, Physics).chain());
    /// schedule.add_system("step", || {}).in_set(Physics);
    /// schedule.add_system("keys", || {}).in_set(Input);
    /// assert_eq!(schedule.system_names(), ["keys", "step"]);
    /// ```
    pub fn configure_sets<M>(&mut self, sets: impl IntoSetConfigs<M>) -> &mut Self {
        for set in sets.into_set_configs().sets {
            let mut config = self.configure_set(set.name);
            for target in set.before {
                config = config.before(target);
            }
            for target in set.after {
                config = config.after(target);
            }
        }
        self
    }
}
