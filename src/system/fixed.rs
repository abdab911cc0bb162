//! The fixed timestep: a schedule run a whole number of times per frame so
//! that, on average, it runs once per [`FixedTime::timestep`] of game time,
//! whatever the frame rate. Physics written against the fixed step gives
//! the same results at 10 and at 1000 frames per second.
//!
//! Each frame, [`Schedule::run_frame`](crate::Schedule::run_frame) adds the
//! frame's `delta` to an accumulator and runs [`FixedUpdate`] once per whole
//! timestep in it, before the frame's own systems (and after state
//! transitions). What is left, less than one step, is the
//! [overstep](FixedTime::overstep): render code interpolates between the
//! last two fixed states with [`FixedTime::overstep_fraction`]. A slow frame
//! cannot make the fixed schedule spiral: at most
//! [`FixedTime::max_steps_per_frame`] steps run, and the backlog beyond
//! them is dropped (game time slows down instead; [`FixedTime::dropped`]
//! counts it).
//!
//! Durations are whole nanoseconds, so the number of steps is exact: the
//! same game time gives the same steps, hence bit-identical simulations,
//! for any split into frames.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::time::Duration;

use super::Schedule;
use super::state::ScheduleLabel;
use crate::time::Time;
use crate::world::World;

/// The fixed-step clock (a resource): the step, the accumulated time not
/// yet simulated, and a cap on steps per frame.
///
/// Systems in [`FixedUpdate`] advance by the step: `Res<Time>` is the
/// fixed clock there (its delta is the step, as in Bevy), and
/// `Res<FixedTime>` gives the step too ([`FixedTime::delta_seconds`]),
/// with the accumulator and the overstep. The frame's clock stays
/// reachable as [`FrameTime`](crate::FrameTime).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use std::time::Duration;
/// #[derive(Component)] struct Height(f32);
/// fn fall(time: Res<FixedTime>, mut q: Query<&mut Height>) {
///     for h in q.iter_mut() {
///         h.0 -= 10.0 * time.delta_seconds();
///     }
/// }
/// let mut world = World::new();
/// world.insert_resource(FixedTime::from_hz(50.0));
/// world.add_systems(FixedUpdate, fall);
/// let e = world.spawn(Height(100.0));
/// let mut frame = Schedule::new();
/// frame.run_frames(&mut world, 10, Duration::from_millis(100)); // one second
/// assert_eq!(world.resource::<FixedTime>().steps(), 50);
/// assert!((world.get::<Height>(e).unwrap().0 - 90.0).abs() < 1e-3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedTime {
    timestep: Duration,
    overstep: Duration,
    max_steps_per_frame: u32,
    steps: u64,
    /// The steps run so far, each counted at the step it had.
    elapsed: Duration,
    dropped: Duration,
}

impl Default for FixedTime {
    /// 64 steps per second (a step of 15.625 ms), at most 16 per frame.
    fn default() -> Self {
        FixedTime::new(Duration::from_nanos(15_625_000))
    }
}

impl FixedTime {
    /// A clock stepping every `timestep` (at most 16 steps per frame).
    /// Panics if `timestep` is zero.
    ///
    /// # Example
    /// ```
    /// use mosaic::FixedTime;
    /// use std::time::Duration;
    /// let t = FixedTime::new(Duration::from_millis(20));
    /// assert_eq!(t.timestep(), Duration::from_millis(20));
    /// ```
    pub fn new(timestep: Duration) -> Self {
        assert!(!timestep.is_zero(), "the fixed timestep must not be zero");
        FixedTime {
            timestep,
            overstep: Duration::ZERO,
            max_steps_per_frame: 16,
            steps: 0,
            elapsed: Duration::ZERO,
            dropped: Duration::ZERO,
        }
    }

    /// A clock stepping `hz` times per second (rounded to whole
    /// nanoseconds). Panics unless `hz` is finite and positive.
    ///
    /// # Example
    /// ```
    /// use mosaic::FixedTime;
    /// use std::time::Duration;
    /// assert_eq!(FixedTime::from_hz(50.0).timestep(), Duration::from_millis(20));
    /// ```
    pub fn from_hz(hz: f64) -> Self {
        assert!(
            hz.is_finite() && hz > 0.0,
            "fixed steps per second must be positive, not {hz}"
        );
        FixedTime::new(Duration::from_secs_f64(1.0 / hz))
    }

    /// The step.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(mosaic::FixedTime::default().timestep(), Duration::from_nanos(15_625_000));
    /// ```
    pub fn timestep(&self) -> Duration {
        self.timestep
    }

    /// The step (what a fixed system advances by), as [`FixedTime::timestep`].
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let t = mosaic::FixedTime::new(Duration::from_millis(10));
    /// assert_eq!(t.delta(), Duration::from_millis(10));
    /// ```
    pub fn delta(&self) -> Duration {
        self.timestep
    }

    /// The step in seconds.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::FixedTime::from_hz(4.0).delta_seconds(), 0.25);
    /// ```
    pub fn delta_seconds(&self) -> f32 {
        self.timestep.as_secs_f32()
    }

    /// Changes the step (the accumulated time is kept). Panics if zero.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut t = mosaic::FixedTime::default();
    /// t.set_timestep(Duration::from_millis(5));
    /// assert_eq!(t.timestep(), Duration::from_millis(5));
    /// ```
    pub fn set_timestep(&mut self, timestep: Duration) {
        assert!(!timestep.is_zero(), "the fixed timestep must not be zero");
        self.timestep = timestep;
    }

    /// The most steps one frame may run.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::FixedTime::default().max_steps_per_frame(), 16);
    /// ```
    pub fn max_steps_per_frame(&self) -> u32 {
        self.max_steps_per_frame
    }

    /// Sets the most steps one frame may run (at least 1).
    ///
    /// # Example
    /// ```
    /// let mut t = mosaic::FixedTime::default();
    /// t.set_max_steps_per_frame(4);
    /// assert_eq!(t.max_steps_per_frame(), 4);
    /// ```
    pub fn set_max_steps_per_frame(&mut self, max: u32) {
        self.max_steps_per_frame = max.max(1);
    }

    /// Accumulated time not simulated yet (less than one step after a
    /// frame).
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut t = mosaic::FixedTime::new(Duration::from_millis(20));
    /// assert_eq!(t.accumulate(Duration::from_millis(50)), 2);
    /// assert_eq!(t.overstep(), Duration::from_millis(10));
    /// ```
    pub fn overstep(&self) -> Duration {
        self.overstep
    }

    /// How far the frame is into the next step, from 0 (inclusive) to 1
    /// (exclusive): the weight for interpolating between the last two fixed
    /// states when rendering.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut t = mosaic::FixedTime::new(Duration::from_millis(20));
    /// t.accumulate(Duration::from_millis(25));
    /// assert_eq!(t.overstep_fraction(), 0.25);
    /// ```
    pub fn overstep_fraction(&self) -> f32 {
        (self.overstep.as_secs_f64() / self.timestep.as_secs_f64()) as f32
    }

    /// Steps run so far.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut t = mosaic::FixedTime::new(Duration::from_millis(20));
    /// t.accumulate(Duration::from_millis(45));
    /// assert_eq!(t.steps(), 2);
    /// ```
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Fixed game time so far: the sum of the steps run, each at the
    /// step it had then (so [`FixedTime::set_timestep`] changes what comes,
    /// not what was).
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut t = mosaic::FixedTime::new(Duration::from_millis(20));
    /// t.accumulate(Duration::from_millis(45));
    /// assert_eq!(t.elapsed(), Duration::from_millis(40));
    /// t.set_timestep(Duration::from_millis(10));
    /// t.accumulate(Duration::from_millis(15)); // 5 ms over + 15 ms: two steps
    /// assert_eq!(t.elapsed(), Duration::from_millis(60));
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// Time dropped because frames were too slow for
    /// [`FixedTime::max_steps_per_frame`].
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut t = mosaic::FixedTime::new(Duration::from_millis(10));
    /// t.set_max_steps_per_frame(3);
    /// assert_eq!(t.accumulate(Duration::from_millis(55)), 3);
    /// assert_eq!(t.overstep(), Duration::from_millis(5));
    /// assert_eq!(t.dropped(), Duration::from_millis(20));
    /// ```
    pub fn dropped(&self) -> Duration {
        self.dropped
    }

    /// Adds a frame of `delta` and returns how many steps to run now
    /// (counting them as run). [`Schedule::run_frame`] calls it.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut t = mosaic::FixedTime::new(Duration::from_millis(20));
    /// assert_eq!(t.accumulate(Duration::from_millis(16)), 0);
    /// assert_eq!(t.accumulate(Duration::from_millis(16)), 1);
    /// ```
    pub fn accumulate(&mut self, delta: Duration) -> u32 {
        self.overstep = self.overstep.saturating_add(delta);
        // In whole nanoseconds (u128: any Duration fits), so that a frame
        // of more than u32::MAX steps still leaves less than one step
        // over and counts the rest as dropped.
        let step = self.timestep.as_nanos();
        let total = self.overstep.as_nanos();
        let whole = total / step;
        let run = u32::try_from(whole)
            .unwrap_or(u32::MAX)
            .min(self.max_steps_per_frame);
        self.overstep = from_nanos(total % step);
        let dropped = (whole - u128::from(run)) * step;
        self.dropped = self.dropped.saturating_add(from_nanos(dropped));
        self.steps += u64::from(run);
        self.elapsed = self
            .elapsed
            .saturating_add(self.timestep.saturating_mul(run));
        run
    }
}

/// The label of the fixed-step schedule: add systems to it with
/// `world.add_systems(FixedUpdate, ..)`; [`Schedule::run_frame`] runs it.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use std::time::Duration;
/// let mut world = World::new();
/// world.insert_resource(0u32);
/// world.insert_resource(FixedTime::from_hz(10.0));
/// world.add_systems(FixedUpdate, |mut n: ResMut<u32>| *n += 1);
/// Schedule::new().run_frames(&mut world, 4, Duration::from_millis(250));
/// assert_eq!(*world.resource::<u32>(), 10);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FixedUpdate;

/// The fixed-step schedule (a resource).
#[derive(Debug, Default)]
struct FixedSchedule(Schedule);

impl ScheduleLabel for FixedUpdate {
    fn schedule_mut(self, world: &mut World) -> &mut Schedule {
        if !world.contains_resource::<FixedTime>() {
            world.insert_resource(FixedTime::default());
        }
        &mut world.resource_or_default::<FixedSchedule>().0
    }

    fn schedule_ref(self, world: &World) -> Option<&Schedule> {
        world.get_resource::<FixedSchedule>().map(|s| &s.0)
    }
}

/// `nanos` as a `Duration` (at most [`Duration::MAX`]).
fn from_nanos(nanos: u128) -> Duration {
    const PER_SEC: u128 = 1_000_000_000;
    match u64::try_from(nanos / PER_SEC) {
        Ok(secs) => Duration::new(secs, (nanos % PER_SEC) as u32),
        Err(_) => Duration::MAX,
    }
}

/// Runs the fixed-step schedule as often as `delta` calls for (nothing if
/// the world has none), with [`Time`] set to the fixed clock for each step
/// and put back to the frame's afterwards (also when a step panics).
/// Returns true if the fixed step has had its chance at the frame's events:
/// it ran, or it has no systems to read them.
pub(crate) fn run_fixed_steps(world: &mut World, delta: Duration) -> bool {
    let Some(fixed) = world.get_resource::<FixedSchedule>() else {
        return true;
    };
    let idle = fixed.0.is_empty();
    let steps = world.resource_or_default::<FixedTime>().accumulate(delta);
    if steps == 0 || idle {
        return idle;
    }
    let fixed = world.resource::<FixedTime>();
    let (step, end) = (fixed.timestep(), fixed.elapsed());
    let frame = world.resource_or_default::<Time>().clone();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        world.schedule_scope(FixedUpdate, |world, schedule| {
            for k in 1..=steps {
                // The fixed time at the end of step k (of `steps`).
                let elapsed = end.saturating_sub(step.saturating_mul(steps - k));
                *world.resource_or_default::<Time>() =
                    Time::fixed_step(step, elapsed, frame.frame());
                schedule.run(world);
            }
        })
    }));
    *world.resource_or_default::<Time>() = frame;
    outcome.unwrap_or_else(|payload| resume_unwind(payload));
    true
}
