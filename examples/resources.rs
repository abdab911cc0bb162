//! Resources: values the world holds once (a score, settings, the clock).
//!
//! Shows: `#[derive(Resource)]`, `init_resource` and `insert_resource`,
//! `Res`/`ResMut` in systems, `Option<Res<..>>` for one that may be
//! missing, change detection on a resource, `resource_scope`, and
//! inserting one from a command.
//!
//! ```text
//! cargo run --example resources [FRAMES]    # default 5 frames
//! ```

use mosaic::prelude::*;

#[derive(Resource, Default, Debug)]
struct Score(u32);

#[derive(Resource)]
struct Settings {
    points_per_frame: u32,
}

#[derive(Resource, Debug)]
struct HighScore(u32);

#[derive(Component)]
struct Coin(u32);

fn earn(settings: Res<Settings>, mut score: ResMut<Score>) {
    score.0 += settings.points_per_frame;
}

fn announce(score: Res<Score>, best: Option<Res<HighScore>>) {
    if score.is_changed() {
        match best {
            Some(best) => println!("score {} (best so far {})", score.0, best.0),
            None => println!("score {} (no high score yet)", score.0),
        }
    }
}

fn record(mut commands: Commands, score: Res<Score>) {
    if score.0 >= 20 {
        commands.insert_resource(HighScore(score.0));
    }
}

fn main() {
    let frames: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let mut world = World::new();
    world.init_resource::<Score>(); // from `Default`
    world.insert_resource(Settings {
        points_per_frame: 10,
    });
    world.spawn_batch([Coin(1), Coin(5), Coin(25)]);

    let mut schedule = Schedule::new();
    schedule.add_systems((earn, announce, record).chain());
    for _ in 0..frames {
        schedule.run(&mut world);
    }

    // Borrow a resource and the rest of the world together.
    world.resource_scope(|world, score: &mut Score| {
        let mut coins = world.query::<&Coin>();
        score.0 += coins.iter(world).map(|c| c.0).sum::<u32>();
    });
    println!("after the coins: {:?}", world.resource::<Score>());
    assert_eq!(world.resource::<Score>().0, 10 * frames + 31);
    println!("high score: {:?}", world.get_resource::<HighScore>());
}
