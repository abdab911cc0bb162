//! Frame time: the [`Time`] resource the frame runner advances.

use std::time::Duration;

/// How far the simulation has come: the last frame's step and the total.
///
/// [`Schedule::run_frames`](crate::Schedule::run_frames) and
/// [`Schedule::run_frame`](crate::Schedule::run_frame) insert it if missing
/// and advance it before each run, as the classic `update(dt)` loop does.
/// Systems read it with `Res<Time>`.
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
