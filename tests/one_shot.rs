//! Integration tests for one-shot systems by id: `Local` state and change
//! detection kept across runs, a spell table of `SystemId`s,
//! `Commands::run_system`, fallible systems' errors, unknown, unregistered
//! and foreign ids refused, a system that tries to run itself refused, and
//! a panic re-raised naming the system while it stays registered.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use mosaic::prelude::*;

#[derive(Default)]
struct Log(Vec<u32>);

#[test]
fn a_one_shot_system_keeps_its_local_across_runs() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let id = world.register_system(|mut runs: Local<u32>, mut log: ResMut<Log>| {
        *runs += 1;
        log.0.push(*runs);
    });
    for _ in 0..3 {
        world.run_system(id).unwrap();
    }
    assert_eq!(world.resource::<Log>().0, [1, 2, 3]);
    // run_system_once builds a fresh system: its Local starts over.
    world.run_system_once(|mut runs: Local<u32>, mut log: ResMut<Log>| {
        *runs += 1;
        log.0.push(*runs);
    });
    assert_eq!(world.resource::<Log>().0, [1, 2, 3, 1]);
}

#[test]
fn change_detection_carries_over_between_runs() {
    let mut world = World::new();
    world.insert_resource(5u32);
    world.insert_resource(Vec::<bool>::new());
    let id = world.register_system(|n: Res<u32>, mut seen: ResMut<Vec<bool>>| {
        seen.push(n.is_changed());
    });
    world.run_system(id).unwrap();
    world.run_system(id).unwrap();
    *world.resource_mut::<u32>() = 6;
    world.run_system(id).unwrap();
    assert_eq!(*world.resource::<Vec<bool>>(), [true, false, true]);
}

#[test]
fn a_spell_table_is_a_map_of_system_ids() {
    struct Mana(i32);
    let mut world = World::new();
    world.insert_resource(Mana(10));
    let mut spells: HashMap<&str, SystemId> = HashMap::new();
    spells.insert(
        "fireball",
        world.register_system(|mut m: ResMut<Mana>| m.0 -= 4),
    );
    spells.insert(
        "drain",
        world.register_system(|mut m: ResMut<Mana>| -> SystemResult {
            if m.0 < 8 {
                return Err(format!("not enough mana ({})", m.0).into());
            }
            m.0 -= 8;
            Ok(())
        }),
    );
    world.run_system(spells["fireball"]).unwrap();
    let err = world.run_system(spells["drain"]).unwrap_err();
    assert!(
        matches!(&err, RunSystemError::Failed { error, .. } if error.to_string() == "not enough mana (6)"),
        "{err}"
    );
    assert_eq!(world.resource::<Mana>().0, 6);
}

#[test]
fn commands_run_a_system_when_they_apply() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let push = world.register_system(|mut log: ResMut<Log>| log.0.push(7));
    let mut schedule = Schedule::new();
    schedule.add_system("caster", move |mut commands: Commands| {
        commands.run_system(push);
    });
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, [7, 7]);
}

#[test]
fn unknown_unregistered_and_foreign_ids_are_refused() {
    let mut world = World::new();
    let mut other = World::new();
    let id = world.register_system(|| {});
    let foreign = other.register_system(|| {});
    assert!(matches!(
        world.run_system(foreign),
        Err(RunSystemError::UnknownSystem(_))
    ));
    world.unregister_system(id).unwrap();
    assert!(matches!(
        world.run_system(id),
        Err(RunSystemError::UnknownSystem(_))
    ));
    assert!(world.unregister_system(id).is_err());
    // A new registration does not reuse the old id.
    let next = world.register_system(|| {});
    assert_ne!(next, id);
    assert!(world.run_system(id).is_err());
    world.run_system(next).unwrap();
}

#[test]
fn a_system_cannot_run_itself() {
    struct Me(SystemId);
    let mut world = World::new();
    let id = world.register_system(|w: &mut World| {
        let me = w.resource::<Me>().0;
        w.run_system(me)
    });
    world.insert_resource(Me(id));
    let err = world.run_system(id).unwrap_err();
    let RunSystemError::Failed { error, .. } = err else {
        panic!("expected the inner refusal, got {err}");
    };
    assert!(error.to_string().contains("already running"), "{error}");
    // Still registered and runnable.
    assert!(world.run_system(id).is_err());
}

#[test]
fn a_panic_is_re_raised_naming_the_system_and_it_stays_registered() {
    fn volcano(mut runs: Local<u32>) {
        *runs += 1;
        assert!(*runs > 1, "first eruption");
    }
    let mut world = World::new();
    let id = world.register_system(volcano);
    let payload = catch_unwind(AssertUnwindSafe(|| world.run_system(id))).unwrap_err();
    let message = payload.downcast::<String>().unwrap();
    assert!(
        message.contains("volcano") && message.contains("first eruption"),
        "{message}"
    );
    world.run_system(id).unwrap(); // its Local kept the first run
}

#[test]
fn conflicting_parameters_are_an_error_not_a_panic() {
    let mut world = World::new();
    world.insert_resource(1u32);
    let id = world.register_system(|_a: ResMut<u32>, _b: Res<u32>| {});
    assert!(matches!(
        world.run_system(id),
        Err(RunSystemError::InvalidParams { .. })
    ));
}
