//! Frame time: the [`Time`] resource the frame runner advances, and
//! [`FrameTime`], the frame's clock under a name of its own.
//!
//! `Res<Time>` is the clock of the schedule that is running: the frame's
//! clock in the frame's systems (and in state transitions), the fixed
//! clock inside [`FixedUpdate`](crate::FixedUpdate) (its delta is the step),
//! as in Bevy. [`FrameTime`] is always the frame's clock, fixed step or not.

use std::ops::Deref;
use std::time::Duration;

/// How far the simulation has come: the last frame's step and the total.
///
/// [`Schedule::run_frames`](crate::Schedule::run_frames) and
/// [`Schedule::run_frame`](crate::Schedule::run_frame) insert it if missing
/// and advance it before each run, as the classic `update(dt)` loop does.
/// Systems read it with `Res<Time>`.
///
/// Inside the fixed step ([`FixedUpdate`](crate::FixedUpdate)) `Time` is
/// the fixed clock: [`Time::delta`] is the step and [`Time::elapsed`] the
/// fixed time so far (as [`FixedTime::elapsed`](crate::FixedTime::elapsed)),
/// while [`Time::frame`] stays the frame's number; the frame's clock is
/// put back when the steps end. Read [`FrameTime`] for the frame's clock
/// anywhere.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use std::time::Duration;
/// #[derive(Component)] struct Position(f32);
/// #[derive(Component)] struct Velocity(f32);
///
/// fn movement(time: Res<Time>, mut q: Query<(&mut Position, &Velocity)>) {
///     for (p, v) in q.iter_mut() {
///         p.0 += v.0 * time.delta_seconds();
///     }
/// }
/// let mut world = World::new();
/// let e = world.spawn((Position(0.0), Velocity(2.0)));
/// let mut schedule = Schedule::new();
/// schedule.add_system("movement", movement);
/// schedule.run_frames(&mut world, 4, Duration::from_millis(250));
/// assert_eq!(world.get::<Position>(e).unwrap().0, 2.0);
/// assert_eq!(world.resource::<Time>().frame(), 4);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Time {
    delta: Duration,
    elapsed: Duration,
    frame: u64,
}

impl Time {
    /// The last frame's step.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance(Duration::from_millis(16));
    /// assert_eq!(time.delta(), Duration::from_millis(16));
    /// ```
    pub fn delta(&self) -> Duration {
        self.delta
    }

    /// The last frame's step in seconds.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance(Duration::from_millis(500));
    /// assert_eq!(time.delta_seconds(), 0.5);
    /// ```
    pub fn delta_seconds(&self) -> f32 {
        self.delta.as_secs_f32()
    }

    /// Time since the first frame (the sum of all steps, at most
    /// [`Duration::MAX`]).
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance(Duration::from_secs(1));
    /// time.advance(Duration::from_secs(2));
    /// assert_eq!(time.elapsed(), Duration::from_secs(3));
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// Time since the first frame, in seconds.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance(Duration::from_millis(1500));
    /// assert_eq!(time.elapsed_seconds(), 1.5);
    /// ```
    pub fn elapsed_seconds(&self) -> f64 {
        self.elapsed.as_secs_f64()
    }

    /// How many frames have been advanced.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance(Duration::ZERO);
    /// assert_eq!(time.frame(), 1);
    /// ```
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Starts a new frame of length `delta`.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance(Duration::from_millis(10));
    /// assert_eq!((time.frame(), time.elapsed()), (1, Duration::from_millis(10)));
    /// ```
    pub fn advance(&mut self, delta: Duration) {
        self.delta = delta;
        // Saturating: a hostile or absurd `delta` (`Duration::MAX`) must
        // not make every later frame panic.
        self.elapsed = self.elapsed.saturating_add(delta);
        self.frame += 1;
    }
}

/// Bevy's names for the accessors above (Bevy 0.16 spells seconds `secs`).
impl Time {
    /// The last frame's step in seconds (Bevy's name for
    /// [`Time::delta_seconds`]).
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance(Duration::from_millis(250));
    /// assert_eq!(time.delta_secs(), 0.25);
    /// ```
    pub fn delta_secs(&self) -> f32 {
        self.delta_seconds()
    }

    /// Time since the first frame, in seconds, as `f32` as in Bevy (which
    /// loses precision after hours; [`Time::elapsed_seconds`] is an `f64`).
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance(Duration::from_millis(1500));
    /// assert_eq!(time.elapsed_secs(), 1.5);
    /// ```
    pub fn elapsed_secs(&self) -> f32 {
        self.elapsed.as_secs_f32()
    }
}

impl Time {
    /// Starts a new frame of length `delta`: Bevy's name for
    /// [`Time::advance`].
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let mut time = mosaic::Time::default();
    /// time.advance_by(Duration::from_millis(20));
    /// assert_eq!(time.delta_secs(), 0.02);
    /// ```
    pub fn advance_by(&mut self, delta: Duration) {
        self.advance(delta);
    }
}

impl Time {
    /// The fixed clock one fixed step sees: `step` long, `elapsed` of fixed
    /// time (this step included), in frame number `frame`.
    pub(crate) fn fixed_step(step: Duration, elapsed: Duration, frame: u64) -> Time {
        Time {
            delta: step,
            elapsed,
            frame,
        }
    }
}

/// The frame's clock (a resource), whichever schedule is running: what
/// `Res<Time>` is in the frame's own systems, also inside the fixed step,
/// where `Time` is the fixed clock. (Bevy names these clocks `Time<Virtual>`
/// and `Time<Fixed>`.)
///
/// [`Schedule::run_frame`](crate::Schedule::run_frame) sets it from
/// [`Time`] each frame; it dereferences to that [`Time`].
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use std::time::Duration;
/// #[derive(Default)] struct Deltas(Vec<(Duration, Duration)>);
/// let mut world = World::new();
/// world.insert_resource(Deltas::default());
/// world.insert_resource(FixedTime::new(Duration::from_millis(10)));
/// world.add_systems(FixedUpdate, |t: Res<Time>, f: Res<FrameTime>, mut d: ResMut<Deltas>| {
///     d.0.push((t.delta(), f.delta()));
/// });
/// Schedule::new().run_frame(&mut world, Duration::from_millis(20));
/// let (step, frame) = (Duration::from_millis(10), Duration::from_millis(20));
/// assert_eq!(world.resource::<Deltas>().0, [(step, frame), (step, frame)]);
/// ```
#[doc(alias = "Virtual")]
#[doc(alias = "RealTime")]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameTime(Time);

impl FrameTime {
    /// The frame's clock as a [`Time`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// Schedule::new().run_frame(&mut world, std::time::Duration::from_millis(16));
    /// assert_eq!(world.resource::<FrameTime>().time(), world.resource::<Time>());
    /// ```
    pub fn time(&self) -> &Time {
        &self.0
    }

    pub(crate) fn new(time: Time) -> Self {
        FrameTime(time)
    }
}

impl Deref for FrameTime {
    type Target = Time;

    fn deref(&self) -> &Time {
        &self.0
    }
}
