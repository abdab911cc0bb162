//! [`ParamSet`]: system parameters that conflict with each other, used one
//! at a time.

use std::fmt;

use super::SystemMeta;
use super::param::{SystemParam, SystemParamItem, SystemSkip};
use crate::commands::CommandBuffer;
use crate::query::TickRange;
use crate::world::World;

/// Up to 8 system parameters that may conflict with each other, handed out
/// one at a time: [`p0`](ParamSet::p0), [`p1`](ParamSet::p1), ... each
/// borrow the set mutably, so only one of them is alive at once (Bevy's
/// `ParamSet`).
///
/// Against the system's other parameters, each parameter of the set counts
/// as if it were a direct parameter: a `ParamSet<(Query<&mut A>,)>` beside a
/// `Query<&A>` is refused with the same error as two plain conflicting
/// queries. To the schedule, the system borrows everything its set's
/// parameters borrow, so it never runs beside a system that conflicts
/// with any of them.
///
/// The parameters' state is made once, when the system is initialized;
/// change detection sees the set's parameters as it sees direct ones.
/// When the system runs, the set first fetches each parameter once, in
/// order, and drops it: a parameter that declines ([`Single`](crate::Single)
/// with no match, [`Populated`](crate::Populated) with none) skips the whole
/// system before it starts, as a direct one would, and a missing resource
/// (`Res`, `ResMut`) panics naming it, as it does directly. (For the same
/// reason [`In`](crate::In) belongs outside a set: the first fetch would
/// take its value.)
///
/// Inside a set, a query's components are written with `'static`
/// (`Query<&'static mut Transform>`), as in a `#[derive(SystemParam)]`
/// struct: where Bevy's `ParamSet` accepts the elided `&mut Transform`, it
/// does so through a compatibility rule in rustc that is reserved for
/// Bevy's own crate. Without it the compiler says the type "does not
/// fulfill the required lifetime". `Res`, `ResMut`, `Commands`, `Local`
/// and the other parameters need no change. In a `#[derive(SystemParam)]`
/// struct, the set takes the struct's lifetimes and its members `'static`
/// ones: `ParamSet<'w, 's, (Query<'static, 'static, &'static mut A>,)>`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct Transform(f32);
/// #[derive(Component)] struct Player;
/// #[derive(Component)] struct Enemy;
/// // Both queries write `Transform`: as two parameters they would conflict
/// // (an entity could be both a player and an enemy).
/// fn sys(mut set: ParamSet<(
///     Query<&'static mut Transform, With<Player>>,
///     Query<&'static mut Transform, With<Enemy>>,
/// )>) {
///     for t in set.p0().iter_mut() {
///         t.0 += 1.0;
///     }
///     for t in set.p1().iter_mut() {
///         t.0 -= 1.0;
///     }
/// }
/// let mut world = World::new();
/// let player = world.spawn((Transform(0.0), Player));
/// let enemy = world.spawn((Transform(0.0), Enemy));
/// world.run_system_once(sys);
/// assert_eq!(world.get::<Transform>(player).unwrap().0, 1.0);
/// assert_eq!(world.get::<Transform>(enemy).unwrap().0, -1.0);
/// ```
pub struct ParamSet<'w, 's, T: SystemParam> {
    state: &'s mut T::State,
    meta: &'s SystemMeta,
    world: &'w World,
    ticks: TickRange,
}

impl<T: SystemParam> fmt::Debug for ParamSet<'_, '_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamSet")
            .field("params", &std::any::type_name::<T>())
            .finish_non_exhaustive()
    }
}

/// A [`ParamSet`]'s state: its parameters' states, and the system's name
/// for them to see when fetched (the meta a run hands the set lives only
/// for that call).
#[doc(hidden)]
pub struct ParamSetState<S> {
    states: S,
    meta: SystemMeta,
}

impl<S> fmt::Debug for ParamSetState<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamSetState")
            .field("system", &self.meta.name())
            .finish_non_exhaustive()
    }
}

macro_rules! param_set {
    ($params:literal; $(($p:ident, $i:tt, $get:ident)),*) => {
        // SAFETY: `init_state` records, on the system's access, the union of
        // what the parameters record, each checked against the system's
        // other parameters as a direct parameter would be (only not against
        // each other). `get_param` fetches each parameter once and drops it
        // before the next; afterwards each is fetched by its accessor, whose
        // `&mut self` borrow outlives the item (both its lifetimes are that
        // borrow's), so no two parameters of the set are alive at once.
        #[allow(non_snake_case)]
        unsafe impl<$($p: SystemParam),*> SystemParam for ParamSet<'_, '_, ($($p,)*)> {
            type State = ParamSetState<($($p::State,)*)>;
            type Item<'w, 's> = ParamSet<'w, 's, ($($p,)*)>;

            fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
                // Each parameter starts from the system's access before the
                // set: it is checked against the other parameters, and not
                // against the set's other members.
                let base = meta.clone();
                let states = ($({
                    let mut member = base.clone();
                    let state = $p::init_state(world, &mut member);
                    meta.access.add_set_member(&base.access, &member.access);
                    state
                },)*);
                ParamSetState {
                    states,
                    meta: SystemMeta::new(base.name.clone()),
                }
            }

            unsafe fn get_param<'w, 's>(
                state: &'s mut Self::State,
                meta: &SystemMeta,
                world: &'w World,
                ticks: TickRange,
            ) -> Self::Item<'w, 's> {
                // SAFETY: forwarded contract.
                match unsafe { Self::try_get_param(state, meta, world, ticks) } {
                    Ok(set) => set,
                    Err(skip) => panic!("{skip}"),
                }
            }

            unsafe fn try_get_param<'w, 's>(
                state: &'s mut Self::State,
                meta: &SystemMeta,
                world: &'w World,
                ticks: TickRange,
            ) -> Result<Self::Item<'w, 's>, SystemSkip> {
                let ParamSetState { states, meta: own } = state;
                {
                    let ($($p,)*) = &mut *states;
                    // SAFETY: forwarded contract (the set recorded each
                    // parameter's access); each item is dropped before the
                    // next parameter is fetched.
                    $(drop(unsafe { $p::try_get_param($p, meta, world, ticks) }?);)*
                }
                Ok(ParamSet {
                    state: states,
                    meta: own,
                    world,
                    ticks,
                })
            }

            fn apply(state: &mut Self::State, meta: &SystemMeta, world: &mut World) {
                let ($($p,)*) = &mut state.states;
                $($p::apply($p, meta, world);)*
            }

            fn queue_deferred(state: &mut Self::State, queue: &mut CommandBuffer) {
                let ($($p,)*) = &mut state.states;
                $($p::queue_deferred($p, queue);)*
            }
        }

        impl<'w, 's, $($p: SystemParam),*> ParamSet<'w, 's, ($($p,)*)> {
            $(
                #[doc = concat!(
                    "The set's parameter number ", stringify!($i), ", borrowed until the \
                     returned item is dropped (so no other parameter of the set is \
                     alive meanwhile).\n\n",
                    "# Example\n",
                    "```\n",
                    "use mosaic::prelude::*;\n",
                    "#[derive(Component)] struct Hp(u32);\n",
                    "let mut world = World::new();\n",
                    "let e = world.spawn(Hp(0));\n",
                    "world.run_system_once(|mut set: ParamSet<(", $params, ")>| {\n",
                    "    for hp in set.", stringify!($get), "().iter_mut() {\n",
                    "        hp.0 += 1;\n",
                    "    }\n",
                    "    // The item is gone: the next call may borrow `Hp` again.\n",
                    "    assert_eq!(set.", stringify!($get), "().iter_mut().count(), 1);\n",
                    "});\n",
                    "assert_eq!(world.get::<Hp>(e).unwrap().0, 1);\n",
                    "```"
                )]
                pub fn $get(&mut self) -> SystemParamItem<'_, '_, $p> {
                    // SAFETY: the state was made by this set's `init_state`
                    // on the world it was fetched from (the set's own
                    // contract); nothing running beside the system conflicts
                    // with the set's recorded access, which covers this
                    // parameter's; the system's other parameters were
                    // checked against it; and `&mut self` keeps every other
                    // item of the set dead while this one lives.
                    unsafe { $p::get_param(&mut self.state.$i, self.meta, self.world, self.ticks) }
                }
            )*
        }
    };
}

param_set!("Query<&'static mut Hp>,"; (P0, 0, p0));
param_set!("Query<&'static mut Hp>, Query<&'static mut Hp>"; (P0, 0, p0), (P1, 1, p1));
param_set!(
    "Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>";
    (P0, 0, p0), (P1, 1, p1), (P2, 2, p2)
);
param_set!(
    "Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>";
    (P0, 0, p0), (P1, 1, p1), (P2, 2, p2), (P3, 3, p3)
);
param_set!(
    "Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>";
    (P0, 0, p0), (P1, 1, p1), (P2, 2, p2), (P3, 3, p3), (P4, 4, p4)
);
param_set!(
    "Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, \
     Query<&'static mut Hp>";
    (P0, 0, p0), (P1, 1, p1), (P2, 2, p2), (P3, 3, p3), (P4, 4, p4), (P5, 5, p5)
);
param_set!(
    "Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, \
     Query<&'static mut Hp>, Query<&'static mut Hp>";
    (P0, 0, p0), (P1, 1, p1), (P2, 2, p2), (P3, 3, p3), (P4, 4, p4), (P5, 5, p5),
    (P6, 6, p6)
);
param_set!(
    "Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>, \
     Query<&'static mut Hp>, Query<&'static mut Hp>, Query<&'static mut Hp>";
    (P0, 0, p0), (P1, 1, p1), (P2, 2, p2), (P3, 3, p3), (P4, 4, p4), (P5, 5, p5),
    (P6, 6, p6), (P7, 7, p7)
);
