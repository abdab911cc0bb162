//! Resources (world-wide singletons) and the event type the systems share.

use std::fmt;

use mosaic::prelude::*;
use rand::SeedableRng;
use rand_pcg::Pcg32;
use serde::{Deserialize, Serialize};

/// Height of the ground line: what falls stands on it, what flies bounces
/// off it.
pub const GROUND: f32 = 16.0;

/// Size of the default arena, which is also the size of the picture.
pub const VIEW: (u32, u32) = (320, 240);

/// Area each particle gets when `--entities` asks for more than the default
/// arena holds comfortably: keeps the crowd (and so the collision work per
/// particle) the same at any scale.
pub const AREA_PER_PARTICLE: f32 = 16.0;

/// The box everything moves in: `x` in `0..width`, `y` in `GROUND..height`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Arena {
    /// Width in world units.
    pub width: f32,
    /// Height in world units.
    pub height: f32,
}

impl Default for Arena {
    fn default() -> Self {
        Arena {
            width: VIEW.0 as f32,
            height: VIEW.1 as f32,
        }
    }
}

impl Arena {
    /// The default arena, grown (keeping its 4:3 shape) so that `particles`
    /// get [`AREA_PER_PARTICLE`] each. The scene stays in the bottom-left
    /// corner, where the camera starts.
    ///
    /// # Example
    /// ```
    /// use mosaic_demo::Arena;
    /// assert_eq!(Arena::for_particles(500), Arena::default());
    /// assert!(Arena::for_particles(1_000_000).width > 4000.0);
    /// ```
    pub fn for_particles(particles: usize) -> Arena {
        let base = Arena::default();
        let needed = particles as f32 * AREA_PER_PARTICLE;
        let area = base.width * base.height;
        if needed <= area {
            return base;
        }
        let scale = (needed / area).sqrt();
        Arena {
            width: (base.width * scale).ceil(),
            height: (base.height * scale).ceil(),
        }
    }
}

/// The keys held down in one frame.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keys {
    /// Walk left.
    pub left: bool,
    /// Walk right.
    pub right: bool,
    /// Jump (when standing).
    pub jump: bool,
}

impl Keys {
    /// No key.
    pub const NONE: Keys = Keys {
        left: false,
        right: false,
        jump: false,
    };
    /// Left alone.
    pub const LEFT: Keys = Keys {
        left: true,
        ..Keys::NONE
    };
    /// Right alone.
    pub const RIGHT: Keys = Keys {
        right: true,
        ..Keys::NONE
    };

    /// These keys plus jump.
    pub const fn and_jump(self) -> Keys {
        Keys { jump: true, ..self }
    }
}

impl fmt::Display for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [
            (self.left, "left"),
            (self.right, "right"),
            (self.jump, "jump"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join("+"))
        }
    }
}

/// What the (scripted) keyboard reports this frame. The
/// [`keyboard`](crate::systems::keyboard) system writes it; the
/// [`input`](crate::systems::input) system reads it, and is the one switched
/// off: the keys keep coming, nobody listens.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Input {
    /// Keys held this frame.
    pub keys: Keys,
}

/// The headless stand-in for a player at the keyboard: which keys are held
/// from which frame on.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct KeyScript {
    /// `(first frame, keys)`, by first frame; each holds until the next.
    pub steps: Vec<(u64, Keys)>,
}

impl KeyScript {
    /// The keys held in `frame` (frames count from 1).
    ///
    /// # Example
    /// ```
    /// use mosaic_demo::{KeyScript, Keys};
    /// let script = KeyScript { steps: vec![(1, Keys::RIGHT), (10, Keys::NONE)] };
    /// assert_eq!(script.keys_at(9), Keys::RIGHT);
    /// assert_eq!(script.keys_at(10), Keys::NONE);
    /// ```
    pub fn keys_at(&self, frame: u64) -> Keys {
        self.steps
            .iter()
            .take_while(|(from, _)| *from <= frame)
            .last()
            .map_or(Keys::NONE, |(_, keys)| *keys)
    }
}

/// One notable moment of the run.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct StoryLine {
    /// The frame it happened in.
    pub frame: u64,
    /// What happened.
    pub text: String,
}

impl fmt::Display for StoryLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.frame as f64 * crate::FRAME.as_secs_f64();
        write!(
            f,
            "frame {:>4} ({seconds:>5.2} s)  {}",
            self.frame, self.text
        )
    }
}

/// The frame-by-frame story: systems, observers and the director append to
/// it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Story {
    /// Every line so far, in order.
    pub lines: Vec<StoryLine>,
}

impl Story {
    /// Appends a line.
    pub fn tell(&mut self, frame: u64, text: impl Into<String>) {
        self.lines.push(StoryLine {
            frame,
            text: text.into(),
        });
    }
}

/// The run's random numbers: one seeded generator, so a seed replays the
/// same run.
#[derive(Clone, Debug)]
pub struct SimRng(pub Pcg32);

impl SimRng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SimRng {
        SimRng(Pcg32::seed_from_u64(seed))
    }
}

/// Whether the heavy systems split their work over threads
/// (`--parallel`). Either way the results are the same.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Threading {
    /// Use `par_iter_mut` and the thread pool.
    pub parallel: bool,
}

/// Running totals for the report.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Collision events sent.
    pub collisions: u64,
    /// Hits the player took.
    pub hits: u64,
}

/// The entities that collided this frame, as a bitset by entity index:
/// the [`sparks`](crate::systems::sparks) system marks them, the
/// [`glow`](crate::systems::glow) system lights them up in its parallel pass
/// over every light (far cheaper than looking each one up).
#[derive(Clone, Debug, Default)]
pub struct Flares {
    bits: Vec<u64>,
}

impl Flares {
    /// Forgets every mark (keeps the memory).
    pub fn clear(&mut self) {
        self.bits.fill(0);
    }

    /// Marks `e`.
    pub fn mark(&mut self, e: Entity) {
        let i = e.index() as usize;
        if i / 64 >= self.bits.len() {
            self.bits.resize(i / 64 + 1, 0);
        }
        self.bits[i / 64] |= 1 << (i % 64);
    }

    /// True if `e` is marked.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_demo::Flares;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// let mut flares = Flares::default();
    /// flares.mark(b);
    /// assert!(flares.contains(b) && !flares.contains(a));
    /// ```
    pub fn contains(&self, e: Entity) -> bool {
        let i = e.index() as usize;
        self.bits
            .get(i / 64)
            .is_some_and(|word| word & (1 << (i % 64)) != 0)
    }
}

/// Two colliders overlap this frame (sent once per pair per frame, in a
/// deterministic order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Collision {
    /// One of the two.
    pub a: Entity,
    /// The other.
    pub b: Entity,
}

impl Collision {
    /// If `e` is one of the two, the other one.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic_demo::Collision;
    /// let mut world = World::new();
    /// let (a, b, c) = (world.spawn(()), world.spawn(()), world.spawn(()));
    /// let hit = Collision { a, b };
    /// assert_eq!(hit.other(b), Some(a));
    /// assert_eq!(hit.other(c), None);
    /// ```
    pub fn other(&self, e: Entity) -> Option<Entity> {
        if self.a == e {
            Some(self.b)
        } else if self.b == e {
            Some(self.a)
        } else {
            None
        }
    }
}

/// The hierarchy's parent-first order, cached between frames: the
/// [`carry`](crate::systems::carry) system asks it every step and it is
/// rebuilt only when some `ChildOf` edge changed.
#[derive(Debug, Default)]
pub struct CarryOrder(pub ParentFirst<ChildOf>);
