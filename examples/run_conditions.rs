//! Run conditions: systems that run only when something holds.
//!
//! Shows: `run_if` with `resource_exists`, `resource_changed`,
//! `any_with_component`, `run_once`, a condition of your own (a read-only
//! system returning `bool`), combinators `not`, `.and`, `.or`, and a
//! condition on a whole set.
//!
//! ```text
//! cargo run --example run_conditions [FRAMES]    # default 8 frames
//! ```

use mosaic::prelude::*;
use std::time::Duration;

#[derive(Resource)]
struct Paused;
#[derive(Resource, Default, PartialEq)]
struct Level(u32);
#[derive(Component)]
struct Enemy;
#[derive(Resource, Default, Debug)]
struct Log(Vec<String>);

fn say(what: &'static str) -> impl FnMut(ResMut<Log>, Res<Time>) {
    move |mut log: ResMut<Log>, time: Res<Time>| {
        log.0.push(format!("frame {}: {what}", time.frame()))
    }
}

/// A condition of your own: every third frame.
fn every_third_frame(time: Res<Time>) -> bool {
    time.frame() % 3 == 0
}

fn main() {
    let frames: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8);
    let mut world = World::new();
    world.init_resource::<Log>();
    world.init_resource::<Level>();

    let mut schedule = Schedule::new();
    schedule.add_systems(say("hello, once").run_if(run_once));
    schedule.add_systems(say("playing").run_if(not(resource_exists::<Paused>)));
    schedule.add_systems(say("the level changed").run_if(resource_changed::<Level>));
    schedule.add_systems(say("fight!").run_if(any_with_component::<Enemy>.and(every_third_frame)));
    schedule.add_systems(say("ai thinks").in_set("ai"));
    schedule
        .configure_set("ai")
        .run_if(every_third_frame.or(resource_exists::<Paused>));

    for frame in 1..=frames {
        match frame {
            3 => {
                world.spawn(Enemy);
            }
            4 => world.insert_resource(Paused),
            5 => {
                world.remove_resource::<Paused>();
                world.resource_mut::<Level>().0 = 2;
            }
            _ => {}
        }
        schedule.run_frame(&mut world, Duration::from_millis(16));
    }
    for line in &world.resource::<Log>().0 {
        println!("{line}");
    }
    assert_eq!(
        world
            .resource::<Log>()
            .0
            .iter()
            .filter(|l| l.contains("once"))
            .count(),
        1
    );
}
