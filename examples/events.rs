//! Events: typed messages from one system to any number of readers.
//!
//! Shows: `#[derive(Event)]`, `EventWriter::write`, two `EventReader`s that
//! each see every event once, `world.send_event` from outside, and the
//! `on_event` run condition.
//!
//! ```text
//! cargo run --example events [FRAMES]    # default 5 frames
//! ```

use mosaic::prelude::*;

#[derive(Event, Debug)]
struct Damage {
    target: Entity,
    amount: u32,
}

#[derive(Component)]
struct Health(u32);
#[derive(Resource, Default)]
struct Audio(Vec<String>);

fn traps(q: Query<Entity, With<Health>>, time: Res<Time>, mut out: EventWriter<Damage>) {
    if time.frame() % 2 == 0 {
        for target in &q {
            out.write(Damage { target, amount: 3 });
        }
    }
}

fn apply_damage(mut events: EventReader<Damage>, mut q: Query<&mut Health>) {
    for d in events.read() {
        if let Ok(h) = q.get_mut(d.target) {
            h.0 = h.0.saturating_sub(d.amount);
        }
    }
}

// A second reader: its own cursor, so it sees every event too.
fn play_sounds(mut events: EventReader<Damage>, mut audio: ResMut<Audio>) {
    for d in events.read() {
        audio.0.push(format!("ouch from {:?}", d.target));
    }
}

fn main() {
    let frames: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let mut world = World::new();
    world.init_resource::<Audio>();
    let a = world.spawn(Health(20));
    let b = world.spawn(Health(20));

    let mut schedule = Schedule::new();
    schedule.add_systems(traps);
    schedule.add_systems(apply_damage.after(traps));
    schedule.add_systems(play_sounds.run_if(on_event::<Damage>));

    world.send_event(Damage {
        target: a,
        amount: 10,
    }); // from outside a system
    for _ in 0..frames {
        schedule.run_frame(&mut world, std::time::Duration::from_millis(16));
    }
    let hp = |e| world.get::<Health>(e).unwrap().0;
    println!("health: a {}, b {}", hp(a), hp(b));
    println!("sounds played: {}", world.resource::<Audio>().0.len());
    for line in world.resource::<Audio>().0.iter().take(3) {
        println!("  {line}");
    }
    // Both readers saw the same events: damage taken = sounds played × 3 (+ the 10).
    let sounds = world.resource::<Audio>().0.len() as u32;
    assert_eq!(40 - hp(a) - hp(b), 3 * (sounds - 1) + 10);
}
