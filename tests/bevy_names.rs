//! Issue #37's "done when": a small game written as a Bevy 0.16 user
//! writes it (a `World` and a `Schedule`, Bevy's own way to run systems
//! without an `App`), which compiles and runs on mosaic with only its `use`
//! lines changed. The Bevy imports were:
//!
//! ```text
//! use bevy_ecs::prelude::*;
//! use bevy_ecs::component::HookContext;
//! use bevy_ecs::world::DeferredWorld;
//! use bevy_time::Time;
//! ```
//!
//! Everything below the `use` lines is as written for Bevy, with one
//! exception, marked `NOT BEVY'S`: mosaic's `ChildOf` is the hierarchy's
//! edge label (a unit struct), so Bevy's `spawn((Sprite, ChildOf(ship)))`
//! is spelled with `with_children`, which both accept.

// Bevy's `&mut T` query items are `Mut<T>`, which need `mut` bindings to
// write through; mosaic's are `&mut T`, which do not.
#![allow(unused_mut)]

use mosaic::prelude::*;
use mosaic::{DeferredWorld, HookContext};
use std::time::Duration;

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Position(f32);

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Velocity(f32);

#[derive(Component)]
struct Ship;

#[derive(Component)]
struct Sprite;

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Health(u32);

/// Counted when its entity goes, however it goes.
#[derive(Component)]
#[component(on_despawn = count_wreck)]
struct Wreckable;

#[derive(Resource, Default)]
struct Score(u32);

#[derive(Resource, Default)]
struct Wrecks(u32);

#[derive(Resource, Default, PartialEq, Debug)]
struct Alarm(bool);

#[derive(Resource, Default)]
struct SetupRuns(u32);

#[derive(Resource, Default)]
struct Ids {
    ship: Option<Entity>,
    rocks: Vec<Entity>,
}

#[derive(Event)]
struct Hit {
    target: Entity,
    damage: u32,
}

#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
enum GameSet {
    Physics,
    Combat,
}

fn count_wreck(mut world: DeferredWorld, _context: HookContext) {
    world.resource_mut::<Wrecks>().0 += 1;
}

fn setup(mut commands: Commands, mut ids: ResMut<Ids>) {
    let ship = commands.spawn((Ship, Position(0.0), Velocity(2.0))).id();
    // NOT BEVY'S: Bevy also writes `commands.spawn((Sprite, ChildOf(ship)));`
    commands.entity(ship).with_children(|parent| {
        parent.spawn(Sprite);
    });
    for i in 0..3 {
        let rock = commands
            .spawn((Position(10.0 * (i + 1) as f32), Health(2), Wreckable))
            .id();
        ids.rocks.push(rock);
    }
    ids.ship = Some(ship);
}

fn greet(mut runs: ResMut<SetupRuns>) {
    runs.0 += 1;
}

fn movement(time: Res<Time>, mut query: Query<(&mut Position, &Velocity)>) {
    for (mut position, velocity) in &mut query {
        position.0 += velocity.0 * time.delta_secs();
    }
}

fn shoot(ids: Res<Ids>, positions: Query<&Position>, mut hits: EventWriter<Hit>) {
    let Some(ship) = ids.ship else { return };
    let Some(&first_rock) = ids.rocks.first() else {
        return;
    };
    // Two entities' components at once.
    if let Ok([ship_pos, rock_pos]) = positions.get_many([ship, first_rock]) {
        if (rock_pos.0 - ship_pos.0).abs() < 100.0 {
            hits.write(Hit {
                target: first_rock,
                damage: 1,
            });
        }
    }
}

fn apply_hits(mut hits: EventReader<Hit>, mut commands: Commands, mut healths: Query<&mut Health>) {
    for hit in hits.read() {
        if let Ok(mut health) = healths.get_mut(hit.target) {
            health.0 = health.0.saturating_sub(hit.damage);
            if health.0 == 0 {
                commands.entity(hit.target).insert(Velocity(0.0));
            }
        }
    }
}

fn despawn_dead(
    mut commands: Commands,
    dead: Query<(Entity, &Health)>,
    mut ids: ResMut<Ids>,
    mut score: ResMut<Score>,
) {
    for (entity, health) in &dead {
        if health.0 == 0 {
            commands.entity(entity).despawn();
            ids.rocks.retain(|&rock| rock != entity);
            score.0 += 10;
        }
    }
}

fn raise_alarm(rocks: Query<(), With<Wreckable>>, mut alarm: ResMut<Alarm>) {
    // Writes only when the value differs, so `Alarm` changes only then.
    alarm.set_if_neq(Alarm(!rocks.is_empty()));
}

fn count_alarm_changes(alarm: Res<Alarm>, mut changes: Local<u32>, mut score: ResMut<Score>) {
    if alarm.is_changed() {
        *changes += 1;
        score.0 += 1000 * *changes;
    }
}

#[test]
fn a_bevy_program_runs_with_only_its_imports_changed() {
    let mut world = World::new();
    world.init_resource::<Score>();
    world.init_resource::<Wrecks>();
    world.init_resource::<Alarm>();
    world.init_resource::<SetupRuns>();
    world.init_resource::<Ids>();
    world.init_resource::<Time>();

    let mut startup = Schedule::default();
    startup.add_systems(setup);
    startup.run(&mut world);

    let mut schedule = Schedule::default();
    schedule.add_systems(greet.run_if(run_once));
    schedule.add_systems(movement.in_set(GameSet::Physics));
    schedule.add_systems((shoot, apply_hits).chain().in_set(GameSet::Combat));
    schedule.add_systems(despawn_dead.after(apply_hits));
    schedule.add_systems(
        (raise_alarm, count_alarm_changes)
            .chain()
            .after(despawn_dead),
    );
    schedule
        .add_systems((|mut score: ResMut<Score>| score.0 += 0).run_if(any_with_component::<Ship>));
    schedule.configure_sets((GameSet::Physics, GameSet::Combat).chain());

    for _ in 0..8 {
        world
            .resource_mut::<Time>()
            .advance_by(Duration::from_millis(500));
        schedule.run(&mut world);
    }

    // `run_once`: greeted once in eight frames.
    assert_eq!(world.resource::<SetupRuns>().0, 1);
    // Each frame hits the first rock once; each rock takes two hits: all
    // three are gone after six frames, each counted by `on_despawn`.
    assert_eq!(world.resource::<Wrecks>().0, 3);
    assert!(world.resource::<Ids>().rocks.is_empty());
    // Alarm: inserted and raised before `count_alarm_changes` first ran (one
    // change seen: 1000), lowered once the last rock went (2000); plus 10
    // per rock.
    assert_eq!(world.resource::<Score>().0, 3000 + 30);
    assert_eq!(*world.resource::<Alarm>(), Alarm(false));
    // The ship moved 2.0 per second for four seconds.
    let ship = world.resource::<Ids>().ship.unwrap();
    assert_eq!(world.get::<Position>(ship).unwrap().0, 8.0);
    let sprite = world.children(ship)[0];
    assert!(world.get_entity(sprite).unwrap().contains::<Sprite>());
}
