//! States: title, playing, game over, with systems that run per state.
//!
//! Shows: `#[derive(States)]`, `init_state`, `NextState::set`, `OnEnter`
//! and `OnExit` schedules, `in_state` as a run condition, `StateScoped`
//! entities despawned when the state ends, and reading `State<S>`.
//!
//! ```text
//! cargo run --example states [FRAMES]    # default 12 frames
//! ```

use mosaic::prelude::*;
use std::time::Duration;

#[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
enum AppState {
    #[default]
    Title,
    Playing,
    GameOver,
}

#[derive(Component)]
struct Enemy(u32);

fn start(mut next: ResMut<NextState<AppState>>) {
    println!("  title: press start");
    next.set(AppState::Playing);
}

fn spawn_level(mut commands: Commands) {
    println!("  entering Playing: spawning the level");
    for i in 0..3 {
        commands.spawn((Enemy(i * 2 + 1), StateScoped(AppState::Playing)));
    }
}

fn fight(mut q: Query<&mut Enemy>, mut next: ResMut<NextState<AppState>>) {
    let mut alive = 0;
    for e in &mut q {
        e.0 = e.0.saturating_sub(1);
        alive += usize::from(e.0 > 0);
    }
    println!("  playing: enemies still standing: {alive}");
    if alive == 0 {
        next.set(AppState::GameOver);
    }
}

fn main() {
    let frames: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(12);
    let mut world = World::new();
    world.init_state::<AppState>();
    world.add_systems(OnEnter(AppState::Playing), spawn_level);
    world.add_systems(OnExit(AppState::Playing), || println!("  leaving Playing"));
    world.add_systems(OnEnter(AppState::GameOver), || println!("  game over"));

    let mut schedule = Schedule::new();
    schedule.add_systems(start.run_if(in_state(AppState::Title)));
    schedule.add_systems(fight.run_if(in_state(AppState::Playing)));

    for frame in 1..=frames {
        println!(
            "frame {frame} ({:?}):",
            world.resource::<State<AppState>>().get()
        );
        schedule.run_frame(&mut world, Duration::from_millis(16));
    }
    let state = *world.resource::<State<AppState>>().get();
    println!(
        "final state {state:?}, {} entities (the level was state-scoped)",
        world.len()
    );
    if frames >= 8 {
        assert_eq!(state, AppState::GameOver);
        assert!(world.is_empty());
    }
}
