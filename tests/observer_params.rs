//! Integration tests for observers taking system parameters
//! (`World::add_observer`): `Query` and `Res`/`ResMut` in an observer of a
//! user event and of a lifecycle event, `Commands` applied after the
//! triggering operation, `Local` kept between triggers, a `Single` that
//! finds nothing skipping the observer, and conflicting parameters
//! panicking with the observer's name.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq)]
struct Hp(u32);
#[derive(Component)]
struct Boss;
struct Blast(u32);

#[test]
fn an_observer_reads_a_query_and_writes_a_resource() {
    let mut world = World::new();
    world.insert_resource(0u32);
    world.spawn_batch([Hp(3), Hp(4)]);
    world.add_observer(|t: Trigger<Blast>, q: Query<&Hp>, mut total: ResMut<u32>| {
        *total += t.event().0 * q.iter().map(|h| h.0).sum::<u32>();
    });
    world.trigger(Blast(2));
    assert_eq!(*world.resource::<u32>(), 14);
}

#[test]
fn lifecycle_observers_take_parameters_and_queue_commands() {
    let mut world = World::new();
    world.insert_resource(Vec::<u32>::new());
    world.add_observer(
        |t: Trigger<OnAdd<Hp>>, q: Query<&Hp>, mut seen: ResMut<Vec<u32>>, mut c: Commands| {
            let e = t.entity().unwrap();
            seen.push(q.get(e).unwrap().0);
            c.insert(e, Boss);
        },
    );
    let e = world.spawn(Hp(9));
    assert_eq!(*world.resource::<Vec<u32>>(), [9]);
    assert!(world.has::<Boss>(e), "the observer's command was applied");
}

#[test]
fn an_observer_keeps_its_local_between_triggers() {
    let mut world = World::new();
    world.insert_resource(Vec::<u32>::new());
    world.add_observer(
        |_: Trigger<Blast>, mut n: Local<u32>, mut log: ResMut<Vec<u32>>| {
            *n += 1;
            log.push(*n);
        },
    );
    for _ in 0..3 {
        world.trigger(Blast(0));
    }
    assert_eq!(*world.resource::<Vec<u32>>(), [1, 2, 3]);
}

#[test]
fn a_single_that_finds_nothing_skips_the_observer() {
    let mut world = World::new();
    world.insert_resource(0u32);
    world.add_observer(
        |_: Trigger<Blast>, boss: Single<&Hp, With<Boss>>, mut n: ResMut<u32>| *n += boss.0,
    );
    world.trigger(Blast(1));
    assert_eq!(*world.resource::<u32>(), 0);
    world.spawn((Boss, Hp(40)));
    world.trigger(Blast(1));
    assert_eq!(*world.resource::<u32>(), 40);
}

#[test]
fn conflicting_parameters_panic_naming_the_observer() {
    fn clash(_: Trigger<Blast>, _a: ResMut<u32>, _b: Res<u32>) {}
    let mut world = World::new();
    world.insert_resource(0u32);
    world.add_observer(clash);
    let payload = catch_unwind(AssertUnwindSafe(|| world.trigger(Blast(1)))).unwrap_err();
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("observer `clash`") && message.contains("borrowed"),
        "{message}"
    );
}
