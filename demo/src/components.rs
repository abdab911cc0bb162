//! The components: plain data, one struct per concern.
//!
//! Every component derives `Serialize` and `Deserialize`: a scene file
//! (`assets/default.ron`) names a component by its short type name and
//! gives its value in the serde (RON) form of the Rust type, so
//! `Position { x: 3.0, y: 4.0 }` is written `"Position": (x: 3.0, y: 4.0)`
//! and the marker `AI` is written `"AI": ()`.

use std::time::Duration;

use mosaic::prelude::*;
use serde::{Deserialize, Serialize};

/// Where an entity is, in world units (one unit is one pixel of the
/// picture; `y` points up).
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Position {
    /// Horizontal position.
    pub x: f32,
    /// Vertical position (up is positive).
    pub y: f32,
}

/// How fast an entity moves, in units per second.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Velocity {
    /// Horizontal speed.
    pub x: f32,
    /// Vertical speed (up is positive).
    pub y: f32,
}

/// What a still piece of scenery looks like, by name (`"tree"`, `"rock"`).
/// Trees are just `Position + Appearance`: no system touches them but the
/// renderer.
#[derive(Component, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Appearance {
    /// The look's name; the renderer knows `tree` and `rock`.
    pub name: String,
}

/// A light source: particles, wisps and the power-up glow.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Light {
    /// Colour of the glow.
    pub color: [u8; 3],
    /// Radius of the halo, in pixels.
    pub radius: f32,
    /// Extra brightness from a recent collision, fading to 0 (run-time
    /// state: a scene leaves it out).
    #[serde(default)]
    pub flare: f32,
}

/// Hit points. Monsters and the player have them; with [`AI`] it marks what
/// the spell destroys.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// Hit points left.
    pub hp: i32,
}

/// How a character is drawn: a coloured body of `size` pixels.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Sprite {
    /// Body colour.
    pub color: [u8; 3],
    /// Body size in pixels.
    pub size: f32,
}

/// Marks the entities the [`ai`](crate::systems::ai) system steers:
/// monsters (with [`Health`]) and wisps (without).
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(clippy::upper_case_acronyms)] // the scene format's name for it
pub struct AI;

/// Marks the player, whom the [`input`](crate::systems::input) system
/// steers.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Player;

/// Falls: the [`movement`](crate::systems::movement) system pulls it down
/// by `scale` times gravity, and it stands on the ground instead of
/// bouncing off it.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Gravity {
    /// 1.0 for ordinary weight.
    pub scale: f32,
}

/// A round body the [`collision`](crate::systems::collision) step checks
/// against every other.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Collider {
    /// Radius in world units.
    pub radius: f32,
}

/// A power-up: the player who touches it turns into a ghost for
/// `ghost_seconds`.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct PowerUp {
    /// How long the ghost lasts.
    pub ghost_seconds: f32,
}

/// The player passes through monsters while this lasts; the
/// [`ghost_timer`](crate::systems::ghost_timer) system removes it when the
/// time is up. Sparse storage: it comes and goes, and adding or removing it
/// moves no other data.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[component(storage = "sparse")]
pub struct Ghost {
    /// Time left.
    pub remaining: Duration,
}

/// Something carried by its parent (`ChildOf`): a monster's lamp, the
/// player's lantern. It sits at the parent's [`Position`] plus this offset,
/// placed every fixed step by the [`carry`](crate::systems::carry) system,
/// parents before children; despawning the parent with
/// `despawn_recursive` takes it along.
#[derive(Component, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Carried {
    /// Offset from the parent, x.
    pub dx: f32,
    /// Offset from the parent, y (up).
    pub dy: f32,
}
