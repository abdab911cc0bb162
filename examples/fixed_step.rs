//! The fixed step: physics at 50 Hz, whatever the frame rate.
//!
//! Shows: `FixedTime::from_hz`, systems in `FixedUpdate`, `Res<Time>` as
//! the fixed clock inside the step, `FrameTime` for the frame's clock,
//! `overstep_fraction` for interpolation, and the same result from 30 and
//! 144 frames a second.
//!
//! ```text
//! cargo run --example fixed_step [SECONDS]    # default 1 simulated second
//! ```

use mosaic::prelude::*;
use std::time::Duration;

#[derive(Component)]
struct Body {
    y: f32,
    vy: f32,
}

fn gravity(time: Res<Time>, mut q: Query<&mut Body>) {
    for b in &mut q {
        b.vy -= 9.81 * time.delta_secs(); // the step: 0.02 s
        b.y += b.vy * time.delta_secs();
    }
}

fn draw(fixed: Res<FixedTime>, frame: Res<FrameTime>, mut frames: Local<u32>) {
    *frames += 1;
    if *frames % 16 == 1 {
        println!(
            "    frame {:>3}: {:.1} ms frame, {:.2} of the way to the next step",
            *frames,
            frame.delta_secs() * 1000.0,
            fixed.overstep_fraction()
        );
    }
}

fn simulate(fps: u32, seconds: u32) -> (f32, u64) {
    let mut world = World::new();
    world.insert_resource(FixedTime::from_hz(50.0));
    world.add_systems(FixedUpdate, gravity);
    let ball = world.spawn(Body { y: 100.0, vy: 0.0 });
    let mut frame = Schedule::new();
    frame.add_systems(draw);
    let dt = Duration::from_nanos(1_000_000_000 / u64::from(fps));
    // Whole frames up to the simulated time (the last one may overshoot).
    let frames = u64::from(seconds * fps);
    frame.run_frames(&mut world, frames, dt);
    let steps = world.resource::<FixedTime>().steps();
    (world.get::<Body>(ball).unwrap().y, steps)
}

fn main() {
    let seconds: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let mut results = Vec::new();
    for fps in [30, 144] {
        println!("{fps} frames a second:");
        let (y, steps) = simulate(fps, seconds);
        println!("  after {seconds} s: {steps} steps, ball at y = {y}");
        results.push((y, steps));
    }
    // Same game time, same steps, same bits.
    assert_eq!(results[0].1, results[1].1);
    assert_eq!(results[0].0.to_bits(), results[1].0.to_bits());
    println!("identical at both frame rates");
}
