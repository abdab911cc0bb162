//! Runs frames of a small game with or without an idle inspector, for
//! instruction counts under callgrind (the difference over the frames is
//! what an idle inspector costs):
//!
//! ```text
//! cargo build --release -p mosaic-inspect --example idle_frames
//! valgrind --tool=callgrind target/release/examples/idle_frames without 100000
//! valgrind --tool=callgrind target/release/examples/idle_frames with 100000
//! ```

use mosaic::prelude::*;
use mosaic_inspect::Inspector;

#[derive(Component)]
struct Position(f32);

#[derive(Component)]
struct Velocity(f32);

fn main() {
    let mut args = std::env::args().skip(1);
    let with = args.next().as_deref() == Some("with");
    let frames: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let mut world = World::new();
    world.spawn_batch((0..100).map(|i| (Position(i as f32), Velocity(1.0))));
    let mut schedule = Schedule::new();
    schedule.set_executor(ExecutorKind::SingleThreaded);
    schedule.add_system("movement", |mut q: Query<(&mut Position, &Velocity)>| {
        for (p, v) in q.iter_mut() {
            p.0 += v.0;
        }
    });
    schedule.build(&mut world).expect("a valid schedule");
    let mut inspector = with.then(|| Inspector::serve("127.0.0.1:0").expect("a free port"));
    for _ in 0..frames {
        schedule.run(&mut world);
        if let Some(inspector) = &mut inspector {
            inspector.update(&mut world, &mut schedule);
        }
    }
    println!(
        "{} frames {} the inspector",
        frames,
        if with { "with" } else { "without" }
    );
}
