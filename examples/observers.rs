//! Observers: code that runs at once when something happens.
//!
//! Shows: observers of lifecycle events (`OnAdd<T>`, `OnRemove<T>`,
//! `OnDespawn`) with a `DeferredWorld`, an observer of an event of your own
//! (`world.trigger`) taking system parameters and issuing commands, an
//! observer of one entity (`observe_entity`), and removing an observer.
//!
//! ```text
//! cargo run --example observers
//! ```

use mosaic::prelude::*;

#[derive(Component, Debug)]
struct Health(u32);
#[derive(Component)]
struct Boss;
#[derive(Resource, Default)]
struct Log(Vec<String>);

/// An event of our own.
struct Explosion {
    radius: f32,
}

fn log(w: &mut DeferredWorld, line: String) {
    println!("  {line}");
    w.resource_mut::<Log>().0.push(line);
}

fn main() {
    let mut world = World::new();
    world.init_resource::<Log>();

    // Lifecycle: runs inside the change, and sees the value.
    world.observe(|t: Trigger<OnAdd<Health>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let hp = w.get::<Health>(e).unwrap().0;
        log(&mut w, format!("{e:?} arrives with {hp} hp"));
    });
    let farewell = world.observe(|t: Trigger<OnRemove<Health>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let hp = w.get::<Health>(e).unwrap().0; // still there
        log(&mut w, format!("{e:?} leaves with {hp} hp"));
    });

    // Our own event, with system parameters; commands apply right after.
    world.add_observer(
        |t: Trigger<Explosion>,
         q: Query<(Entity, &Health), Without<Boss>>,
         mut commands: Commands| {
            println!("  boom (radius {})", t.event().radius);
            for (e, h) in &q {
                if (h.0 as f32) < t.event().radius * 10.0 {
                    commands.entity(e).despawn();
                }
            }
        },
    );

    println!("spawning:");
    let weak = world.spawn(Health(5));
    let strong = world.spawn(Health(50));
    let boss = world.spawn((Health(5), Boss));

    // Observe one entity only.
    world.observe_entity(boss, |t: Trigger<OnDespawn>, mut w: DeferredWorld| {
        log(
            &mut w,
            format!("the boss {:?} is defeated", t.entity().unwrap()),
        );
    });

    println!("explosion:");
    world.trigger(Explosion { radius: 1.0 });
    assert!(!world.contains(weak) && world.contains(strong) && world.contains(boss));

    println!("the farewell observer is removed; the boss goes quietly but for its own observer:");
    world.remove_observer(farewell);
    world.despawn(boss).unwrap();

    let lines = world.resource::<Log>().0.len();
    println!("{lines} lines logged");
    assert_eq!(lines, 5);
}
