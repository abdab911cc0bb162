//! Per-system timing: how long each system took while timing was on.

use std::fmt;
use std::time::Duration;

/// One system's line in the timing table.
///
/// # Example
/// ```
/// use mosaic::SystemTiming;
/// use std::time::Duration;
/// let t = SystemTiming { name: "physics".into(), runs: 4, total: Duration::from_millis(8) };
/// assert_eq!(t.mean(), Duration::from_millis(2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemTiming {
    /// The system's name.
    pub name: String,
    /// How many runs were timed.
    pub runs: u64,
    /// Their total time.
    pub total: Duration,
}

impl SystemTiming {
    /// Mean time per timed run (zero if none).
    ///
    /// # Example
    /// ```
    /// use mosaic::SystemTiming;
    /// use std::time::Duration;
    /// let t = SystemTiming { name: "idle".into(), runs: 0, total: Duration::ZERO };
    /// assert_eq!(t.mean(), Duration::ZERO);
    /// ```
    pub fn mean(&self) -> Duration {
        match u32::try_from(self.runs) {
            Ok(0) => Duration::ZERO,
            Ok(runs) => self.total / runs,
            Err(_) => Duration::from_nanos((self.total.as_nanos() / u128::from(self.runs)) as u64),
        }
    }
}

/// The timing table of a schedule, in run order; `Display` prints it.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// let mut world = World::new();
/// let mut schedule = Schedule::new();
/// schedule.add_system("physics", || {});
/// schedule.set_timing(true);
/// schedule.run(&mut world);
/// let table = schedule.timings();
/// assert_eq!(table.rows()[0].name, "physics");
/// println!("{table}");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemTimings {
    rows: Vec<SystemTiming>,
}

impl SystemTimings {
    pub(crate) fn new(rows: Vec<SystemTiming>) -> Self {
        SystemTimings { rows }
    }

    /// The rows, in run order.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::SystemTimings::default().rows().is_empty());
    /// ```
    pub fn rows(&self) -> &[SystemTiming] {
        &self.rows
    }
}

impl fmt::Display for SystemTimings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .rows
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(0)
            .max("system".len());
        writeln!(
            f,
            "{:<width$}  {:>8}  {:>12}  {:>12}",
            "system", "runs", "total", "mean"
        )?;
        for row in &self.rows {
            writeln!(
                f,
                "{:<width$}  {:>8}  {:>12}  {:>12}",
                row.name,
                row.runs,
                format!("{:.3?}", row.total),
                format!("{:.3?}", row.mean())
            )?;
        }
        Ok(())
    }
}
