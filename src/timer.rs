//! [`Timer`]: counts time handed to it by [`Timer::tick`] (usually
//! `time.delta()` from `Res<Time>`) and says when a duration has passed,
//! once or every time it passes. The names and behaviour are Bevy's
//! (`bevy_time::Timer`), so a cooldown or spawn wave written for Bevy keeps
//! working; it is plain data, usable as a component, a resource or a
//! `Local`.

use std::time::Duration;

/// Whether a [`Timer`] stops when it first finishes or starts over.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// assert_eq!(TimerMode::default(), TimerMode::Once);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TimerMode {
    /// Finishes once, then stays finished until [`Timer::reset`].
    #[default]
    Once,
    /// Starts over each time it finishes, carrying the time past the end
    /// into the next round.
    Repeating,
}

/// A countdown driven by the time you give it.
///
/// Call [`Timer::tick`] once a frame with the frame's delta; then
/// [`Timer::just_finished`] is true on the tick the duration was reached
/// (for a repeating timer, on every tick it was reached, and
/// [`Timer::times_finished_this_tick`] says how many times when a long
/// tick covers several rounds). A paused timer ignores ticks.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use std::time::Duration;
/// #[derive(Component)] struct Spawner(Timer);
/// #[derive(Component)] struct Wave;
///
/// fn spawn_waves(time: Res<Time>, mut q: Query<&mut Spawner>, mut commands: Commands) {
///     for spawner in q.iter_mut() {
///         spawner.0.tick(time.delta());
///         for _ in 0..spawner.0.times_finished_this_tick() {
///             commands.spawn(Wave);
///         }
///     }
/// }
///
/// let mut world = World::new();
/// world.spawn(Spawner(Timer::from_seconds(1.0, TimerMode::Repeating)));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(spawn_waves);
/// // Ten frames of 0.25 s: 2.5 s, so two waves.
/// schedule.run_frames(&mut world, 10, Duration::from_millis(250));
/// assert_eq!(world.query::<&Wave>().iter(&world).count(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timer {
    duration: Duration,
    elapsed: Duration,
    mode: TimerMode,
    paused: bool,
    finished: bool,
    times_finished_this_tick: u32,
}

impl Timer {
    /// A timer of `duration`, not started (nothing elapsed).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let t = Timer::new(Duration::from_millis(500), TimerMode::Once);
    /// assert_eq!(t.duration(), Duration::from_millis(500));
    /// assert!(!t.finished());
    /// ```
    pub fn new(duration: Duration, mode: TimerMode) -> Timer {
        Timer {
            duration,
            mode,
            ..Timer::default()
        }
    }

    /// A timer of `seconds` (a negative or non-finite number is treated
    /// as zero, so the first tick finishes it).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let t = Timer::from_seconds(1.5, TimerMode::Repeating);
    /// assert_eq!(t.duration().as_secs_f32(), 1.5);
    /// assert_eq!(t.mode(), TimerMode::Repeating);
    /// ```
    pub fn from_seconds(seconds: f32, mode: TimerMode) -> Timer {
        let duration = Duration::try_from_secs_f32(seconds).unwrap_or(Duration::ZERO);
        Timer::new(duration, mode)
    }

    /// Advances the timer by `delta` (unless paused) and updates
    /// [`finished`](Timer::finished), [`just_finished`](Timer::just_finished)
    /// and [`times_finished_this_tick`](Timer::times_finished_this_tick).
    /// Returns the timer, for `timer.tick(dt).just_finished()`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// assert!(!t.tick(Duration::from_millis(600)).just_finished());
    /// assert!(t.tick(Duration::from_millis(600)).just_finished());
    /// assert!(!t.tick(Duration::from_millis(600)).just_finished());
    /// assert!(t.finished()); // a one-shot timer stays finished
    /// assert_eq!(t.elapsed(), Duration::from_secs(1));
    /// ```
    pub fn tick(&mut self, delta: Duration) -> &mut Timer {
        if self.paused {
            self.times_finished_this_tick = 0;
            if self.mode == TimerMode::Repeating {
                self.finished = false;
            }
            return self;
        }
        if self.mode == TimerMode::Once && self.finished {
            self.times_finished_this_tick = 0;
            return self;
        }
        self.elapsed = self.elapsed.saturating_add(delta);
        self.finished = self.elapsed >= self.duration;
        self.times_finished_this_tick = if !self.finished {
            0
        } else if self.mode == TimerMode::Once {
            self.elapsed = self.duration;
            1
        } else if self.duration.is_zero() {
            // Every instant finishes a zero-length round: say "very many"
            // rather than divide by zero.
            self.elapsed = Duration::ZERO;
            u32::MAX
        } else {
            let rounds = self.elapsed.as_nanos() / self.duration.as_nanos();
            let rest = self.elapsed.as_nanos() % self.duration.as_nanos();
            // `rest` is below `duration`, so its whole seconds fit a u64.
            const NANOS: u128 = 1_000_000_000;
            self.elapsed = Duration::new((rest / NANOS) as u64, (rest % NANOS) as u32);
            u32::try_from(rounds).unwrap_or(u32::MAX)
        };
        self
    }

    /// True once the duration has been reached: for a one-shot timer from
    /// then on (until [`Timer::reset`]); for a repeating one, on the ticks
    /// that reached it.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(0.5, TimerMode::Once);
    /// t.tick(Duration::from_secs(1));
    /// assert!(t.finished());
    /// ```
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// True if the last [`Timer::tick`] reached the duration.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Repeating);
    /// t.tick(Duration::from_millis(1500));
    /// assert!(t.just_finished());
    /// t.tick(Duration::from_millis(100));
    /// assert!(!t.just_finished());
    /// ```
    pub fn just_finished(&self) -> bool {
        self.times_finished_this_tick > 0
    }

    /// How many times the last tick reached the duration: 0 or 1 for a
    /// one-shot timer; for a repeating one, every round the tick covered.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Repeating);
    /// t.tick(Duration::from_millis(3500));
    /// assert_eq!(t.times_finished_this_tick(), 3);
    /// assert_eq!(t.elapsed(), Duration::from_millis(500));
    /// ```
    pub fn times_finished_this_tick(&self) -> u32 {
        self.times_finished_this_tick
    }

    /// Time counted in the current round.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.tick(Duration::from_millis(250));
    /// assert_eq!(t.elapsed(), Duration::from_millis(250));
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// [`Timer::elapsed`] in seconds.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.tick(Duration::from_millis(250));
    /// assert_eq!(t.elapsed_secs(), 0.25);
    /// ```
    pub fn elapsed_secs(&self) -> f32 {
        self.elapsed.as_secs_f32()
    }

    /// Sets the time counted in the current round (it is checked against
    /// the duration at the next tick).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.set_elapsed(Duration::from_millis(900));
    /// assert!(t.tick(Duration::from_millis(100)).just_finished());
    /// ```
    pub fn set_elapsed(&mut self, elapsed: Duration) {
        self.elapsed = elapsed;
    }

    /// How long a round lasts.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// assert_eq!(Timer::from_seconds(2.0, TimerMode::Once).duration().as_secs(), 2);
    /// ```
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Changes how long a round lasts (what has elapsed is kept).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(2.0, TimerMode::Once);
    /// t.tick(Duration::from_secs(1));
    /// t.set_duration(Duration::from_millis(1500));
    /// assert!(t.tick(Duration::from_millis(500)).just_finished());
    /// ```
    pub fn set_duration(&mut self, duration: Duration) {
        self.duration = duration;
    }

    /// Once or repeating.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// assert_eq!(Timer::from_seconds(1.0, TimerMode::Once).mode(), TimerMode::Once);
    /// ```
    pub fn mode(&self) -> TimerMode {
        self.mode
    }

    /// Switches between once and repeating. A finished one-shot timer made
    /// repeating starts a new round.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.tick(Duration::from_secs(1));
    /// t.set_mode(TimerMode::Repeating);
    /// assert!(!t.finished());
    /// assert!(t.tick(Duration::from_secs(1)).just_finished());
    /// ```
    pub fn set_mode(&mut self, mode: TimerMode) {
        if self.mode == TimerMode::Once && mode == TimerMode::Repeating && self.finished {
            self.elapsed = Duration::ZERO;
            self.finished = false;
        }
        self.mode = mode;
    }

    /// Stops counting: ticks change nothing until [`Timer::unpause`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.pause();
    /// t.tick(Duration::from_secs(5));
    /// assert!(t.paused() && !t.finished());
    /// t.unpause();
    /// assert!(t.tick(Duration::from_secs(1)).finished());
    /// ```
    pub fn pause(&mut self) {
        self.paused = true;
    }

    /// Counts again after [`Timer::pause`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.pause();
    /// t.unpause();
    /// assert!(!t.paused());
    /// ```
    pub fn unpause(&mut self) {
        self.paused = false;
    }

    /// True while paused.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// assert!(!Timer::from_seconds(1.0, TimerMode::Once).paused());
    /// ```
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Starts the round over: nothing elapsed, not finished.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.tick(Duration::from_secs(2));
    /// t.reset();
    /// assert!(!t.finished() && t.elapsed().is_zero());
    /// ```
    pub fn reset(&mut self) {
        self.elapsed = Duration::ZERO;
        self.finished = false;
        self.times_finished_this_tick = 0;
    }

    /// Time left in the round (zero once finished).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.tick(Duration::from_millis(300));
    /// assert_eq!(t.remaining(), Duration::from_millis(700));
    /// ```
    pub fn remaining(&self) -> Duration {
        self.duration.saturating_sub(self.elapsed)
    }

    /// [`Timer::remaining`] in seconds.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(1.0, TimerMode::Once);
    /// t.tick(Duration::from_millis(250));
    /// assert_eq!(t.remaining_secs(), 0.75);
    /// ```
    pub fn remaining_secs(&self) -> f32 {
        self.remaining().as_secs_f32()
    }

    /// How far through the round, from 0.0 to 1.0 (1.0 for a zero
    /// duration).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(2.0, TimerMode::Once);
    /// t.tick(Duration::from_millis(500));
    /// assert_eq!(t.fraction(), 0.25);
    /// ```
    pub fn fraction(&self) -> f32 {
        if self.duration.is_zero() {
            1.0
        } else {
            (self.elapsed.as_secs_f64() / self.duration.as_secs_f64()).min(1.0) as f32
        }
    }

    /// `1.0 - fraction()`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use std::time::Duration;
    /// let mut t = Timer::from_seconds(2.0, TimerMode::Once);
    /// t.tick(Duration::from_millis(500));
    /// assert_eq!(t.fraction_remaining(), 0.75);
    /// ```
    pub fn fraction_remaining(&self) -> f32 {
        1.0 - self.fraction()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn once_finishes_once_and_stays_finished() {
        let mut t = Timer::new(ms(100), TimerMode::Once);
        let just: Vec<bool> = (0..5).map(|_| t.tick(ms(40)).just_finished()).collect();
        assert_eq!(just, [false, false, true, false, false]);
        assert!(t.finished());
        assert_eq!(t.elapsed(), ms(100));
        assert_eq!(t.remaining(), Duration::ZERO);
    }

    #[test]
    fn repeating_carries_the_overshoot() {
        let mut t = Timer::new(ms(100), TimerMode::Repeating);
        let rounds: Vec<u32> = (0..6)
            .map(|_| t.tick(ms(70)).times_finished_this_tick())
            .collect();
        // 70, 140 -> 40, 110 -> 10, 80, 150 -> 50, 120 -> 20
        assert_eq!(rounds, [0, 1, 1, 0, 1, 1]);
        assert_eq!(t.elapsed(), ms(20));
        assert!(t.finished(), "the last tick finished a round");
        t.tick(ms(10));
        assert!(
            !t.finished(),
            "a repeating timer is finished only on that tick"
        );
    }

    #[test]
    fn zero_duration_and_huge_ticks_do_not_panic() {
        let mut z = Timer::new(Duration::ZERO, TimerMode::Repeating);
        assert_eq!(z.tick(ms(1)).times_finished_this_tick(), u32::MAX);
        assert_eq!(z.fraction(), 1.0);
        let mut t = Timer::new(Duration::from_nanos(1), TimerMode::Repeating);
        t.tick(Duration::MAX);
        assert_eq!(t.times_finished_this_tick(), u32::MAX);
        let mut o = Timer::new(ms(1), TimerMode::Once);
        o.tick(Duration::MAX);
        o.tick(Duration::MAX);
        assert!(o.finished());
        assert_eq!(
            Timer::from_seconds(f32::NAN, TimerMode::Once).duration(),
            Duration::ZERO
        );
        assert_eq!(
            Timer::from_seconds(-1.0, TimerMode::Once).duration(),
            Duration::ZERO
        );
    }

    #[test]
    fn paused_repeating_timer_is_not_finished() {
        let mut t = Timer::new(ms(100), TimerMode::Repeating);
        t.tick(ms(100));
        assert!(t.just_finished());
        t.pause();
        t.tick(ms(500));
        assert!(!t.finished() && !t.just_finished());
        assert_eq!(t.elapsed(), Duration::ZERO);
    }
}
