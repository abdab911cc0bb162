//! [`SnapshotRing`]: the last N frames' snapshots, sharing what did not
//! change between them.

use std::collections::VecDeque;
use std::fmt;

use super::{RestoreReport, RollbackError, Snapshot};
use crate::world::World;

/// The snapshots of the last `capacity` frames, oldest first, each
/// labelled with its frame number: what rollback netcode keeps to go back
/// to the frame of a late input.
///
/// Each snapshot is taken with
/// [`World::snapshot_after`](crate::World::snapshot_after) the previous
/// one, so a column nobody wrote between two frames is shared (one
/// allocation, reference-counted), not copied again. The others are
/// copied into the buffers of the snapshot the ring drops (its oldest, or
/// one that a rollback or a repeated frame made obsolete), as
/// [`World::snapshot_into`](crate::World::snapshot_into) does: once the
/// ring is full, saving a frame allocates no memory for its values.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::SnapshotRing;
/// #[derive(Component, Clone, Hash, Debug, PartialEq)] struct Pos(i32);
/// let mut world = World::new();
/// world.register_rollback::<Pos>();
/// let e = world.spawn(Pos(0));
/// let mut ring = SnapshotRing::new(8);
/// for frame in 0..20 {
///     ring.save(frame, &world);
///     world.get_mut::<Pos>(e).unwrap().0 += 1; // simulate the frame
/// }
/// assert_eq!(ring.len(), 8);
/// assert_eq!(ring.oldest_frame(), Some(12));
/// // A late input for frame 15: go back there, and forget the frames after it.
/// ring.rollback_to(15, &mut world).unwrap();
/// assert_eq!(world.get::<Pos>(e), Ok(&Pos(15)));
/// assert_eq!(ring.newest_frame(), Some(15));
/// ```
pub struct SnapshotRing {
    capacity: usize,
    frames: VecDeque<(u64, Snapshot)>,
    /// Snapshots dropped from the back (a rollback, a frame saved again),
    /// kept for their buffers; never more than `capacity - frames.len()`.
    spare: Vec<Snapshot>,
}

impl fmt::Debug for SnapshotRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapshotRing")
            .field("capacity", &self.capacity)
            .field("oldest_frame", &self.oldest_frame())
            .field("newest_frame", &self.newest_frame())
            .field("spare", &self.spare.len())
            .finish()
    }
}

impl SnapshotRing {
    /// A ring keeping the last `capacity` snapshots (at least one).
    ///
    /// # Example
    /// ```
    /// let ring = mosaic::SnapshotRing::new(8);
    /// assert!(ring.is_empty());
    /// ```
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        SnapshotRing {
            capacity,
            frames: VecDeque::with_capacity(capacity),
            spare: Vec::new(),
        }
    }

    /// Saves `world` as the snapshot of `frame`, sharing unchanged columns
    /// with the newest snapshot held; drops the oldest if the ring is full.
    /// A snapshot already held for `frame` or a later frame is dropped
    /// first (the frames after it are being simulated again). Takes
    /// `&World`, as [`World::snapshot`] does.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// let mut ring = mosaic::SnapshotRing::new(2);
    /// for frame in 0..3 { ring.save(frame, &world); }
    /// assert_eq!((ring.oldest_frame(), ring.newest_frame()), (Some(1), Some(2)));
    /// ```
    pub fn save(&mut self, frame: u64, world: &World) {
        while self.frames.back().is_some_and(|(f, _)| *f >= frame) {
            let (_, dropped) = self.frames.pop_back().expect("checked just above");
            self.spare.push(dropped);
        }
        let snapshot = if self.frames.len() == self.capacity {
            let (_, oldest) = self.frames.pop_front().expect("a full ring");
            match self.frames.back() {
                Some((_, base)) => world.snapshot_sharing(Some(base), Some(oldest), false),
                // A ring of one: the oldest is the newest too.
                None => world.snapshot_sharing(None, Some(oldest), true),
            }
        } else {
            let recycle = self.spare.pop();
            let base = self.frames.back().map(|(_, s)| s);
            world.snapshot_sharing(base, recycle, false)
        };
        self.frames.push_back((frame, snapshot));
    }

    /// The snapshot of `frame`, if held.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// let mut ring = mosaic::SnapshotRing::new(4);
    /// ring.save(7, &world);
    /// assert!(ring.get(7).is_some() && ring.get(6).is_none());
    /// ```
    pub fn get(&self, frame: u64) -> Option<&Snapshot> {
        self.frames
            .iter()
            .find(|(f, _)| *f == frame)
            .map(|(_, s)| s)
    }

    /// Restores `world` to the snapshot of `frame` and drops the snapshots
    /// of later frames (they described a future that is now being
    /// simulated again). Returns `None`, changing nothing, if `frame` is
    /// not held.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let mut ring = mosaic::SnapshotRing::new(4);
    /// ring.save(0, &world);
    /// world.spawn(());
    /// ring.save(1, &world);
    /// assert!(ring.rollback_to(0, &mut world).unwrap().is_ok());
    /// assert!(world.is_empty());
    /// assert!(ring.rollback_to(1, &mut world).is_none());
    /// ```
    pub fn rollback_to(
        &mut self,
        frame: u64,
        world: &mut World,
    ) -> Option<Result<RestoreReport, RollbackError>> {
        let at = self.frames.iter().position(|(f, _)| *f == frame)?;
        while self.frames.len() > at + 1 {
            let (_, dropped) = self.frames.pop_back().expect("longer than at + 1");
            self.spare.push(dropped);
        }
        Some(world.restore(&self.frames[at].1))
    }

    /// Forgets every frame (a new match, a resynchronised session),
    /// keeping their buffers for the next frames saved.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// let mut ring = mosaic::SnapshotRing::new(4);
    /// ring.save(0, &world);
    /// ring.clear();
    /// assert!(ring.is_empty() && ring.get(0).is_none());
    /// ```
    pub fn clear(&mut self) {
        self.spare.extend(self.frames.drain(..).map(|(_, s)| s));
    }

    /// The oldest frame held.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::SnapshotRing::new(4).oldest_frame(), None);
    /// ```
    pub fn oldest_frame(&self) -> Option<u64> {
        self.frames.front().map(|(f, _)| *f)
    }

    /// The newest frame held.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::SnapshotRing::new(4).newest_frame(), None);
    /// ```
    pub fn newest_frame(&self) -> Option<u64> {
        self.frames.back().map(|(f, _)| *f)
    }

    /// How many snapshots it holds.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::SnapshotRing::new(4).len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// True if it holds no snapshot.
    ///
    /// # Example
    /// ```
    /// assert!(mosaic::SnapshotRing::new(4).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The most it holds.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::SnapshotRing::new(8).capacity(), 8);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}
