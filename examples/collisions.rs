//! Collisions as events: one system writes them, two others each read all.
//!
//! A few dozen balls (`Position`, `Velocity`) bounce around a box. Each
//! frame `detect` checks every pair with `iter_combinations::<2>` and sends a
//! `Collision { a, b }` event per overlapping pair. Two independent systems
//! read those events with their own `EventReader`: `damage` takes one health
//! point from both balls, `log_collisions` prints the first few. Each reader
//! keeps its own cursor, so both see every collision exactly once; the
//! per-frame summary checks that their counts agree.
//!
//! Everything is deterministic (a fixed-seed LCG instead of a random crate),
//! so every run prints the same thing.
//!
//! ```text
//! cargo run --example collisions
//! ```

use mosaic::prelude::*;

const BALLS: usize = 40;
const FRAMES: u32 = 12;
const BOX: f32 = 100.0;
const RADIUS: f32 = 2.0;
const SHOWN_PER_FRAME: usize = 3;

#[derive(Component, Debug, Clone, Copy)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Debug, Clone, Copy)]
struct Velocity {
    x: f32,
    y: f32,
}

#[derive(Component, Debug)]
struct Health(u32);

/// Two balls overlap this frame.
#[derive(Debug, Clone, Copy)]
struct Collision {
    a: Entity,
    b: Entity,
}

/// What each reader saw in the current frame.
#[derive(Debug, Default)]
struct Tally {
    damaged: usize,
    logged: usize,
}

/// A tiny linear congruential generator: deterministic, no dependencies.
struct Lcg(u64);
const LCG_MUL: u64 = 6_364_136_223_846_793_005;

impl Lcg {
    /// Two floats in `[lo, hi)`.
    fn pair(&mut self, lo: f32, hi: f32) -> (f32, f32) {
        let mut next = || {
            self.0 = self.0.wrapping_mul(LCG_MUL).wrapping_add(1);
            lo + (self.0 >> 40) as f32 / (1u64 << 24) as f32 * (hi - lo)
        };
        (next(), next())
    }
}

/// Moves one coordinate, bouncing off the walls.
fn step(pos: &mut f32, vel: &mut f32) {
    *pos += *vel;
    if !(RADIUS..=BOX - RADIUS).contains(pos) {
        *vel = -*vel;
        *pos = pos.clamp(RADIUS, BOX - RADIUS);
    }
}

/// Moves every ball.
fn movement(mut balls: Query<(&mut Position, &mut Velocity)>) {
    for (pos, vel) in balls.iter_mut() {
        step(&mut pos.x, &mut vel.x);
        step(&mut pos.y, &mut vel.y);
    }
}

/// Sends a `Collision` for every pair of overlapping balls.
fn detect(balls: Query<(Entity, &Position)>, mut collisions: EventWriter<Collision>) {
    for [(a, pa), (b, pb)] in balls.iter_combinations::<2>() {
        let (dx, dy) = (pa.x - pb.x, pa.y - pb.y);
        if dx * dx + dy * dy < (2.0 * RADIUS) * (2.0 * RADIUS) {
            collisions.send(Collision { a, b });
        }
    }
}

/// Reader one: every collision hurts both balls.
fn damage(
    mut collisions: EventReader<Collision>,
    mut health: Query<&mut Health>,
    mut tally: ResMut<Tally>,
) {
    for hit in collisions.read() {
        for e in [hit.a, hit.b] {
            if let Ok(h) = health.get_mut(e) {
                h.0 = h.0.saturating_sub(1);
            }
        }
        tally.damaged += 1;
    }
}

/// Reader two: prints the first few collisions of the frame.
fn log_collisions(mut collisions: EventReader<Collision>, mut tally: ResMut<Tally>) {
    for hit in collisions.read() {
        if tally.logged < SHOWN_PER_FRAME {
            println!("    hit: {} <-> {}", hit.a, hit.b);
        }
        tally.logged += 1;
    }
}

fn main() {
    let mut world = World::new();
    world.insert_resource(Tally::default());
    let mut rng = Lcg(0x5EED);
    world.extend((0..BALLS).map(|_| {
        let (x, y) = rng.pair(RADIUS, BOX - RADIUS);
        let (vx, vy) = rng.pair(-1.5, 1.5);
        (Position { x, y }, Velocity { x: vx, y: vy }, Health(10))
    }));

    let mut schedule = Schedule::new();
    schedule.add_system("movement", movement);
    schedule.add_system("detect", detect).after("movement");
    schedule.add_system("damage", damage).after("detect");
    schedule.add_system("log", log_collisions).after("detect");

    let mut total = 0;
    for frame in 1..=FRAMES {
        println!("frame {frame}:");
        schedule.run(&mut world);
        let tally = std::mem::take(world.resource_mut::<Tally>());
        assert_eq!(tally.damaged, tally.logged, "both readers see all");
        total += tally.damaged;
        let mut health = world.query::<&Health>();
        let weakest = health.iter(&world).map(|h| h.0).min().unwrap_or(0);
        println!(
            "  collisions: damage saw {}, log saw {}; weakest ball at {weakest} hp",
            tally.damaged, tally.logged
        );
    }
    println!("{total} collisions in {FRAMES} frames, each read once by both systems");
}
