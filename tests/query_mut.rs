//! `World::query_mut` (hecs's name): an owning, one-off query walk. It
//! holds its own query state, so these check each way a walk can end —
//! finished, dropped early, consumed by `fold`, unwound by a panic — under
//! Miri as well as natively.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq)]
struct Pos(i32);
#[derive(Component)]
struct Vel(i32);

fn world_of(n: i32) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let ids = (0..n).map(|i| world.spawn((Pos(i), Vel(1)))).collect();
    world.spawn(Pos(100)); // no Vel
    (world, ids)
}

#[test]
fn a_for_loop_writes_every_match_and_only_matches() {
    let (mut world, ids) = world_of(5);
    for (pos, vel) in world.query_mut::<(&mut Pos, &Vel)>() {
        pos.0 += vel.0;
    }
    let got: Vec<i32> = ids
        .iter()
        .map(|&e| world.get::<Pos>(e).unwrap().0)
        .collect();
    assert_eq!(got, [1, 2, 3, 4, 5]);
    let mut q = world.query_filtered::<&Pos, Without<Vel>>();
    assert_eq!(q.iter(&world).next(), Some(&Pos(100)));
}

#[test]
fn fold_and_early_drop_and_collect_all_free_cleanly() {
    let (mut world, _) = world_of(4);
    let sum: i32 = world.query_mut::<&Pos>().into_iter().map(|p| p.0).sum();
    assert_eq!(sum, 1 + 2 + 3 + 100);
    let mut iter = world.query_mut::<&mut Pos>().into_iter();
    iter.next().unwrap().0 = -1;
    drop(iter);
    world
        .query_mut::<&mut Pos>()
        .into_iter()
        .for_each(|p| p.0 *= 2);
    let items: Vec<&Pos> = world.query_mut::<&Pos>().into_iter().collect();
    assert_eq!(items.len(), 5);
    assert!(items.contains(&&Pos(-2)));
}

#[test]
fn a_panic_inside_for_each_unwinds_and_the_world_stays_usable() {
    let (mut world, _) = world_of(3);
    let result = catch_unwind(AssertUnwindSafe(|| {
        world
            .query_mut::<&mut Pos>()
            .into_iter()
            .for_each(|p| if p.0 == 1 { panic!("boom") } else { p.0 += 10 });
    }));
    assert!(result.is_err());
    assert_eq!(world.query_mut::<&Pos>().into_iter().count(), 4);
}

#[test]
fn writes_count_as_changes_and_disabled_entities_are_skipped() {
    let (mut world, ids) = world_of(3);
    world.insert(ids[0], Disabled).unwrap();
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    let _ = changed.iter(&world).count(); // everything is new once
    for pos in world.query_mut::<&mut Pos>() {
        pos.0 += 1;
    }
    let seen: Vec<Entity> = changed.iter(&world).collect();
    assert_eq!(seen.len(), 3, "two enabled with Vel, one without: {seen:?}");
    assert!(!seen.contains(&ids[0]));
    assert_eq!(world.get::<Pos>(ids[0]).unwrap().0, 0);
}
