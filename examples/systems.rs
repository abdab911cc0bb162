//! Systems and schedules: plain functions, run in order, timed.
//!
//! Shows: system parameters (`Query`, `Res`, `ResMut`, `Local`), named
//! systems and ordering (`before`/`after`, with a name or the function),
//! sets (`in_set`, `configure_set`), `chain`, switching a system off and on,
//! `run_frames` as the game loop, and the per-system timing table.
//!
//! ```text
//! cargo run --example systems [FRAMES]    # default 6 frames
//! ```

use mosaic::prelude::*;
use std::time::Duration;

#[derive(Component)]
struct Position(f32);
#[derive(Component)]
struct Velocity(f32);
#[derive(Resource, Default)]
struct Input {
    pushes: u32,
}

fn read_input(mut input: ResMut<Input>) {
    input.pushes += 1;
}

fn push(input: Res<Input>, mut q: Query<&mut Velocity>) {
    for v in &mut q {
        v.0 = input.pushes as f32;
    }
}

fn movement(time: Res<Time>, mut q: Query<(&mut Position, &Velocity)>) {
    for (p, v) in &mut q {
        p.0 += v.0 * time.delta_secs();
    }
}

fn report(time: Res<Time>, q: Query<&Position>, mut frames: Local<u32>) {
    *frames += 1; // a `Local` keeps its value between runs
    let furthest = q.iter().map(|p| p.0).fold(0.0f32, f32::max);
    println!(
        "frame {} (t = {:.1} s): furthest at {furthest:.2}",
        *frames,
        time.elapsed_secs()
    );
}

fn main() {
    let frames: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(6);
    let mut world = World::new();
    world.init_resource::<Input>();
    world.spawn_batch((0..3).map(|i| (Position(i as f32), Velocity(0.0))));

    let mut schedule = Schedule::new();
    schedule.add_system("input", read_input).before("physics");
    // A set: its members share an ordering and run conditions.
    schedule.add_systems((push, movement).chain().in_set("physics"));
    // A function is its own label, as in Bevy.
    schedule.add_systems(report.after(movement));
    schedule.configure_set("physics").after("input");
    schedule.set_timing(true);

    let dt = Duration::from_millis(100);
    schedule.run_frames(&mut world, frames / 2, dt);
    schedule.set_enabled("input", false).unwrap(); // ignore input for a while
    schedule.run_frames(&mut world, frames - frames / 2, dt);

    println!("input read {} times", world.resource::<Input>().pushes);
    assert_eq!(u64::from(world.resource::<Input>().pushes), frames / 2);
    print!("{}", schedule.timings());
}
