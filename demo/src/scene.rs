//! Scenes: the level the demo plays, and the one place that loads scene
//! text.
//!
//! The default level is `assets/default.ron` (embedded as
//! [`DEFAULT_SCENE`]), loaded like any `--scene FILE` by
//! [`load_scene_text`] with `mosaic::scene`: every component type the demo
//! has is registered under its short name in [`scene_registry`].
//! [`spawn_default_scene`] builds the same level in plain Rust, the way a
//! program without scene files would; the tests in `tests/scene_file.rs`
//! check that it and the file agree, entity by entity and value by value.

use mosaic::prelude::*;
use mosaic::scene::{Scene, TypeRegistry};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg32;

use crate::components::*;
use crate::resources::{Arena, GROUND};

/// The built-in scene, in the scene format (`assets/default.ron`).
pub const DEFAULT_SCENE: &str = include_str!("../assets/default.ron");

/// Every component the demo has, registered for scenes under its short
/// type name (`"Position"`, `"AI"`, ...).
pub fn scene_registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Velocity>();
    registry.register::<Appearance>();
    registry.register::<Light>();
    registry.register::<Health>();
    registry.register::<Sprite>();
    registry.register::<AI>();
    registry.register::<Player>();
    registry.register::<Gravity>();
    registry.register::<Collider>();
    registry.register::<PowerUp>();
    registry.register::<Ghost>();
    registry
}

/// What the live inspector (`--inspect`) reads and edits: the scene's
/// components, [`Carried`], the `ChildOf` hierarchy (so a child names its
/// parent) and the resources whose values can be shown.
///
/// # Example
/// ```
/// let registry = mosaic_demo::inspector_registry();
/// assert!(registry.contains("ChildOf") && registry.contains("Story"));
/// ```
pub fn inspector_registry() -> TypeRegistry {
    use crate::resources::{Input, KeyScript, Stats, Story, Threading};
    let mut registry = scene_registry();
    registry.register::<Carried>();
    registry.register_relation::<mosaic::ChildOf>();
    registry.register_resource::<Arena>();
    registry.register_resource::<Input>();
    registry.register_resource::<KeyScript>();
    registry.register_resource::<Story>();
    registry.register_resource::<Stats>();
    registry.register_resource::<Threading>();
    registry
}

/// Spawns the entities of a scene given as RON text; returns how many it
/// spawned, or a message saying what is wrong with the text (with its line
/// and column). This is the only place that turns scene text into
/// entities, for the built-in scene and `--scene FILE` alike. On an error
/// the world is left unchanged.
///
/// # Example
/// ```
/// use mosaic::World;
/// use mosaic_demo::{load_scene_text, Position};
/// let mut world = World::new();
/// let n = load_scene_text(&mut world, r#"(entities: [
///     (id: 1, components: { "Position": (x: 3.0, y: 4.0), "Appearance": (name: "tree") }),
/// ])"#).unwrap();
/// assert_eq!(n, 1);
/// let err = load_scene_text(&mut world, r#"(entities: [(id: 1, components: { "Mana": (9) })])"#);
/// assert!(err.unwrap_err().contains("Mana"));
/// assert_eq!(world.len(), 1);
/// ```
pub fn load_scene_text(world: &mut World, text: &str) -> Result<usize, String> {
    let registry = scene_registry();
    let scene = Scene::from_ron_str_with(text, &registry).map_err(|e| e.to_string())?;
    let spawned = scene
        .spawn_into(world, &registry)
        .map_err(|e| e.to_string())?;
    Ok(spawned.len())
}

/// The `Tree` prefab at `x`: scenery, `Position + Appearance`.
fn tree(x: f32) -> (Position, Appearance) {
    scenery(x, "tree")
}

/// The `Rock` prefab at `x`.
fn rock(x: f32) -> (Position, Appearance) {
    scenery(x, "rock")
}

fn scenery(x: f32, name: &str) -> (Position, Appearance) {
    (
        Position { x, y: GROUND },
        Appearance {
            name: name.to_owned(),
        },
    )
}

/// A monster's components: what the spell looks for is `Health + AI`.
type MonsterBundle = (Position, Velocity, Health, Sprite, AI, Collider, Gravity);

/// The `Monster` prefab at `x`.
fn monster(x: f32) -> MonsterBundle {
    (
        Position { x, y: 22.0 },
        Velocity::default(),
        Health { hp: 10 },
        Sprite {
            color: [220, 50, 50],
            size: 12.0,
        },
        AI,
        Collider { radius: 6.0 },
        Gravity { scale: 1.0 },
    )
}

/// The `BigMonster` prefab at `x`: a `Monster` with more of everything.
fn big_monster(x: f32) -> MonsterBundle {
    let (_, velocity, _, _, ai, _, gravity) = monster(x);
    (
        Position { x, y: 25.0 },
        velocity,
        Health { hp: 30 },
        Sprite {
            color: [150, 20, 40],
            size: 18.0,
        },
        ai,
        Collider { radius: 9.0 },
        gravity,
    )
}

/// The `Wisp` prefab at `(x, y)`: AI but no Health, so the spell spares it.
fn wisp(x: f32, y: f32) -> (Position, Velocity, Sprite, AI, Light, Collider) {
    (
        Position { x, y },
        Velocity::default(),
        Sprite {
            color: [190, 235, 255],
            size: 6.0,
        },
        AI,
        Light {
            color: [140, 210, 255],
            radius: 10.0,
            flare: 0.0,
        },
        Collider { radius: 3.0 },
    )
}

/// Builds the built-in scene in plain Rust: exactly the entities of
/// `assets/default.ron`, in its order (the prefabs are the functions
/// above). Returns them in that order.
pub fn spawn_default_scene(world: &mut World) -> Vec<Entity> {
    let mut spawned = Vec::new();
    for x in [14.0, 58.0, 124.0, 186.0, 240.0, 304.0] {
        spawned.push(world.spawn(tree(x)));
    }
    for x in [90.0, 268.0] {
        spawned.push(world.spawn(rock(x)));
    }
    spawned.push(world.spawn((
        Position { x: 24.0, y: 22.0 },
        Velocity::default(),
        Health { hp: 100 },
        Sprite {
            color: [60, 120, 255],
            size: 12.0,
        },
        Player,
        Collider { radius: 6.0 },
        Gravity { scale: 1.0 },
    )));
    spawned.push(world.spawn((
        Position { x: 100.0, y: 26.0 },
        Sprite {
            color: [230, 255, 250],
            size: 8.0,
        },
        PowerUp { ghost_seconds: 3.0 },
        Collider { radius: 5.0 },
        Light {
            color: [120, 255, 220],
            radius: 14.0,
            flare: 0.0,
        },
    )));
    for (x, big) in [
        (150.0, false),
        (172.0, false),
        (200.0, true),
        (228.0, false),
        (252.0, false),
        (280.0, true),
        (302.0, false),
    ] {
        spawned.push(world.spawn(if big { big_monster(x) } else { monster(x) }));
    }
    for (x, y) in [(60.0, 150.0), (160.0, 190.0), (262.0, 140.0)] {
        spawned.push(world.spawn(wisp(x, y)));
    }
    spawned
}

/// The colours particles glow in: embers and fireflies.
const PARTICLE_COLORS: [[u8; 3]; 4] = [
    [255, 170, 60],
    [255, 220, 90],
    [190, 255, 120],
    [255, 120, 50],
];

/// Particle collider radius.
pub const PARTICLE_RADIUS: f32 = 0.35;

/// Adds `count` particles (`Position + Velocity + Light + Collider`),
/// scattered over `arena` and flying in random directions, from a generator
/// seeded with `seed`, and returns them.
///
/// They are spawned in one `spawn_batch`, ordered by where they start
/// (row by row of the collision grid's cells), so the table's order starts
/// out close to the grid's: the collision step then reads and writes memory
/// nearly in sequence instead of at random, which at a million particles is
/// several times faster. As they fly about the order decays, gracefully.
pub fn spawn_particles(world: &mut World, count: usize, seed: u64, arena: Arena) -> Vec<Entity> {
    let mut rng = Pcg32::seed_from_u64(seed);
    let (lo_y, hi_y) = (GROUND + 1.0, arena.height - 1.0);
    let mut particles: Vec<_> = (0..count)
        .map(|_| {
            let angle = rng.random_range(0.0..std::f32::consts::TAU);
            let speed = rng.random_range(8.0..30.0);
            (
                Position {
                    x: rng.random_range(1.0..arena.width - 1.0),
                    y: rng.random_range(lo_y..hi_y),
                },
                Velocity {
                    x: angle.cos() * speed,
                    y: angle.sin() * speed,
                },
                Light {
                    color: PARTICLE_COLORS[rng.random_range(0..PARTICLE_COLORS.len())],
                    radius: rng.random_range(1.5..2.5),
                    flare: 0.0,
                },
                Collider {
                    radius: PARTICLE_RADIUS,
                },
            )
        })
        .collect();
    let cell = crate::grid::CELL;
    particles.sort_by_key(|(p, ..)| ((p.y / cell) as u32, (p.x / cell) as u32));
    world.spawn_batch(particles)
}
