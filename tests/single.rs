//! Integration tests for the parameters users expect: `Single` (runs on
//! exactly one match, skipped on 0 and on 2, under both executors),
//! `Option<Single>`, `Populated` (skipped while empty; `for` loops over
//! `&populated` and `&mut populated`), the skip reported by
//! `run_system` and `try_run`, and `#[derive(SystemParam)]` bundling
//! parameters (with `Local` state kept, commands applied, a generic field,
//! and a `Single` inside skipping the system).

use mosaic::prelude::*;
use mosaic::{IntoSystem, System, SystemParam};

#[derive(Component)]
struct Player;
#[derive(Component, Debug, PartialEq)]
struct Health(u32);

#[derive(Default)]
struct Runs(u32);

fn heal(mut player: Single<&mut Health, With<Player>>, mut runs: ResMut<Runs>) {
    player.0 += 1;
    runs.0 += 1;
}

#[test]
fn single_skips_on_zero_and_on_two_matches() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = World::new();
        world.insert_resource(Runs::default());
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("heal", heal);
        schedule.run(&mut world); // none
        assert_eq!(world.resource::<Runs>().0, 0, "{kind:?}: skipped on 0");
        let p = world.spawn((Player, Health(1)));
        world.spawn(Health(50)); // not a player
        schedule.run(&mut world);
        assert_eq!(world.resource::<Runs>().0, 1, "{kind:?}: ran on 1");
        assert_eq!(world.get::<Health>(p).unwrap().0, 2);
        let q = world.spawn((Player, Health(9)));
        schedule.run(&mut world);
        assert_eq!(world.resource::<Runs>().0, 1, "{kind:?}: skipped on 2");
        assert_eq!(world.get::<Health>(p).unwrap().0, 2);
        world.despawn(q).unwrap();
        schedule.run(&mut world);
        assert_eq!(world.resource::<Runs>().0, 2, "{kind:?}: runs again on 1");
    }
}

#[test]
fn option_single_is_none_unless_exactly_one() {
    let mut world = World::new();
    let count = |world: &mut World| {
        world.run_system_once(|p: Option<Single<&Health, With<Player>>>| p.map(|h| h.0))
    };
    assert_eq!(count(&mut world), None);
    world.spawn((Player, Health(4)));
    assert_eq!(count(&mut world), Some(4));
    world.spawn((Player, Health(5)));
    assert_eq!(count(&mut world), None);
}

#[test]
fn populated_skips_while_empty() {
    let mut world = World::new();
    world.insert_resource(Runs::default());
    let mut schedule = Schedule::new();
    schedule.add_system(
        "count",
        |players: Populated<&Health, With<Player>>, mut runs: ResMut<Runs>| {
            runs.0 += players.iter().count() as u32;
        },
    );
    schedule.run(&mut world);
    assert_eq!(world.resource::<Runs>().0, 0);
    world.spawn((Player, Health(1)));
    world.spawn((Player, Health(1)));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Runs>().0, 2);
}

/// `for x in &populated` and `for x in &mut populated` walk the query inside,
/// in a schedule, and the system is still skipped while nothing matches.
#[test]
fn for_loops_over_populated_references() {
    let mut world = World::new();
    world.insert_resource(Runs::default());
    let mut schedule = Schedule::new();
    schedule.add_system(
        "heal_all",
        |mut players: Populated<&mut Health, With<Player>>, mut runs: ResMut<Runs>| {
            for h in &mut players {
                h.0 += 10;
            }
            runs.0 += 1;
        },
    );
    schedule
        .add_system(
            "sum",
            |players: Populated<&Health, With<Player>>, mut runs: ResMut<Runs>| {
                for h in &players {
                    runs.0 += h.0 * 100;
                }
            },
        )
        .after("heal_all");
    schedule.run(&mut world);
    assert_eq!(world.resource::<Runs>().0, 0, "both skipped while empty");
    let a = world.spawn((Player, Health(1)));
    let b = world.spawn((Player, Health(2)));
    let bystander = world.spawn(Health(5));
    schedule.run(&mut world);
    assert_eq!(world.get::<Health>(a), Ok(&Health(11)));
    assert_eq!(world.get::<Health>(b), Ok(&Health(12)));
    assert_eq!(world.get::<Health>(bystander), Ok(&Health(5)));
    assert_eq!(world.resource::<Runs>().0, 1 + (11 + 12) * 100);
}

#[test]
fn a_skip_is_reported_outside_the_schedule() {
    let mut world = World::new();
    world.insert_resource(Runs::default());
    let id = world.register_system(heal);
    let err = world.run_system(id).unwrap_err();
    assert!(
        matches!(&err, RunSystemError::Skipped { reason, .. } if reason.warns()),
        "{err}"
    );
    assert!(err.to_string().contains("no entity matches"), "{err}");
    let mut system = heal.into_system();
    assert!(system.try_run(&mut world).is_err());
    world.spawn((Player, Health(1)));
    assert!(system.try_run(&mut world).is_ok());
    world.run_system(id).unwrap();
    assert_eq!(world.resource::<Runs>().0, 2);
}

#[test]
#[should_panic(expected = "cannot run: no entity matches query")]
fn run_system_once_panics_on_a_skip() {
    World::new().run_system_once(|_p: Single<&Player>| {});
}

/// A bundle of parameters.
#[derive(SystemParam)]
struct Game<'w, 's> {
    players: Query<'w, 's, &'static mut Health, With<Player>>,
    runs: ResMut<'w, Runs>,
    frames: Local<'s, u32>,
    commands: Commands<'w, 's>,
}

fn play(mut game: Game) {
    *game.frames += 1;
    for h in game.players.iter_mut() {
        h.0 += 10;
    }
    game.runs.0 = *game.frames;
    game.commands.spawn(Health(0));
}

#[test]
fn derived_system_params_bundle_their_fields() {
    let mut world = World::new();
    world.insert_resource(Runs::default());
    let p = world.spawn((Player, Health(1)));
    let mut schedule = Schedule::new();
    schedule.add_system("play", play);
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(world.get::<Health>(p).unwrap().0, 21);
    assert_eq!(world.resource::<Runs>().0, 2, "the Local is kept");
    assert_eq!(world.len(), 3, "commands applied");
}

/// Generic, tuple-shaped, holding a `Single`.
#[derive(SystemParam)]
struct Lead<'w, T: Component>(Single<'w, &'static T, With<Player>>, Res<'w, Runs>);

#[test]
fn a_single_inside_a_derived_param_skips_the_system() {
    let mut world = World::new();
    world.insert_resource(Runs::default());
    world.insert_resource(0u32);
    let mut schedule = Schedule::new();
    schedule.add_system("lead", |lead: Lead<Health>, mut out: ResMut<u32>| {
        *out = lead.0.0 + lead.1.0;
    });
    schedule.run(&mut world);
    assert_eq!(*world.resource::<u32>(), 0);
    world.spawn((Player, Health(7)));
    schedule.run(&mut world);
    assert_eq!(*world.resource::<u32>(), 7);
}

#[test]
fn a_derived_param_with_conflicting_fields_is_refused() {
    #[derive(SystemParam)]
    #[allow(dead_code)]
    struct Bad<'w> {
        a: ResMut<'w, Runs>,
        b: Res<'w, Runs>,
    }
    let mut world = World::new();
    world.insert_resource(Runs::default());
    let mut schedule = Schedule::new();
    schedule.add_system("bad", |_b: Bad| {});
    assert!(matches!(
        schedule.build(&mut world),
        Err(ScheduleError::ParamConflict { .. })
    ));
}

// ----- change detection marks only what user code could write (#39, 7-8) ----

/// The entities whose `Health` changed since the last call (a query kept
/// across calls: each call sees the changes since the previous one).
fn changed(world: &mut World, seen: &mut QueryState<Entity, Changed<Health>>) -> Vec<Entity> {
    seen.iter(world).collect()
}

fn two_players() -> (World, QueryState<Entity, Changed<Health>>) {
    let mut world = World::new();
    world.insert_resource(Runs::default());
    world.spawn((Player, Health(1)));
    world.spawn((Player, Health(2)));
    let mut seen = world.query_filtered::<Entity, Changed<Health>>();
    assert_eq!(
        changed(&mut world, &mut seen).len(),
        2,
        "spawned: changed once"
    );
    (world, seen)
}

#[test]
fn a_skipped_single_marks_nothing_changed() {
    let (mut world, mut seen) = two_players();
    let mut schedule = Schedule::new();
    schedule.add_system("heal", heal);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Runs>().0, 0, "two players: skipped");
    assert_eq!(changed(&mut world, &mut seen), []);

    // `Option<Single>` and `Query::get_single_mut` tell two from one the
    // same way.
    world.run_system_once(|p: Option<Single<&mut Health, With<Player>>>| assert!(p.is_none()));
    assert_eq!(changed(&mut world, &mut seen), []);
    world.run_system_once(|mut q: Query<&mut Health>| assert!(q.get_single_mut().is_err()));
    assert_eq!(changed(&mut world, &mut seen), []);
    // Combinations of 3 out of 2 entities: none handed out, none marked.
    world.run_system_once(|mut q: Query<&mut Health>| {
        assert!(q.iter_combinations_mut::<3>().fetch_next().is_none())
    });
    assert_eq!(changed(&mut world, &mut seen), []);

    // One player: the system runs and its write is seen.
    let mut q = world.query_filtered::<Entity, With<Player>>();
    let second = q.iter(&world).nth(1).unwrap();
    world.despawn(second).unwrap();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Runs>().0, 1);
    assert_eq!(changed(&mut world, &mut seen).len(), 1);
}

#[test]
fn checking_a_populated_query_marks_nothing_changed() {
    let (mut world, mut seen) = two_players();
    let ran = world.run_system_once(|p: Populated<&mut Health>| {
        let _ = &p;
        true
    });
    assert!(ran);
    assert_eq!(changed(&mut world, &mut seen), []);
    // Reaching one item mutably marks that one only.
    world.run_system_once(|mut p: Populated<&mut Health>| {
        p.iter_mut().next().unwrap().0 += 1;
    });
    assert_eq!(changed(&mut world, &mut seen).len(), 1);
}

#[test]
fn a_failed_get_many_mut_marks_nothing_changed() {
    let (mut world, mut seen) = two_players();
    let mut players = world.query_filtered::<Entity, With<Player>>();
    let [a, b]: [Entity; 2] = players.iter(&world).collect::<Vec<_>>().try_into().unwrap();
    world.insert_one(b, mosaic::Disabled).unwrap();
    let mut q = world.query::<&mut Health>();
    assert!(q.get_many_mut(&mut world, [a, b]).is_err());
    assert_eq!(changed(&mut world, &mut seen), []);
}

/// `QueryState::get_single_mut` (Bevy's name on a world-level query) that
/// fails because two entities match marks neither changed, like `Single`.
#[test]
fn query_state_single_mut_marks_nothing_when_it_fails() {
    #[derive(Component)]
    struct Hp(u32);
    let mut world = World::new();
    let a = world.spawn(Hp(1));
    world.spawn(Hp(2));
    let mut changed = world.query_filtered::<Entity, Changed<Hp>>();
    assert_eq!(changed.iter(&world).count(), 2, "both were just added");
    let mut q = world.query::<&mut Hp>();
    assert!(q.get_single_mut(&mut world).is_err());
    assert_eq!(
        changed.iter(&world).count(),
        0,
        "a failed single marks nothing"
    );
    world.despawn(a).unwrap();
    q.single_mut(&mut world).0 = 9;
    assert_eq!(changed.iter(&world).count(), 1);
    let mut read = world.query::<&Hp>();
    assert_eq!(read.single(&world).0, 9);
}
