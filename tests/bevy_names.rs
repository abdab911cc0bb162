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
//! Everything below the `use` lines is as written for Bevy.

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
    commands.spawn((Sprite, ChildOf(ship)));
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

// ----- Each name on its own ---------------------------------------------------
//
// The program above shows the names compile as a Bevy user writes them;
// these check what each one does, edge cases included.

mod names {
    use mosaic::prelude::*;
    use mosaic::{DeferredWorld, HookContext, Mut, ScheduleError};

    #[derive(Component, Debug, Clone, Copy, PartialEq)]
    struct Hp(u32);

    #[derive(Component, Debug, Clone, Copy, PartialEq)]
    #[component(storage = "sparse")]
    struct Stun(u32);

    #[derive(Component)]
    struct Tag;

    /// Entities whose `Hp` changed since the state's previous run.
    fn changed_hp(q: &mut QueryState<Entity, Changed<Hp>>, world: &World) -> Vec<Entity> {
        q.iter(world).collect()
    }

    #[test]
    fn query_is_empty_honours_filters_and_marks_nothing_changed() {
        let mut world = World::new();
        let a = world.spawn(Hp(1));
        let mut changed = world.query_filtered::<Entity, Changed<Hp>>();
        changed_hp(&mut changed, &world);
        // A writing query asked only whether it is empty marks nothing.
        assert!(!world.run_system_once(|q: Query<&mut Hp>| q.is_empty()));
        assert_eq!(changed_hp(&mut changed, &world), []);
        // Filters count: nothing has a Tag, nothing lacks Hp.
        assert!(world.run_system_once(|q: Query<&Hp, With<Tag>>| q.is_empty()));
        // Sparse components (a walk of their set).
        assert!(world.run_system_once(|q: Query<&Stun>| q.is_empty()));
        world.insert_one(a, Stun(1)).unwrap();
        assert!(!world.run_system_once(|q: Query<&Stun>| q.is_empty()));
        // A disabled entity does not count, as it does not iterate.
        world.insert_one(a, Disabled).unwrap();
        assert!(world.run_system_once(|q: Query<&Hp>| q.is_empty()));
    }

    #[test]
    fn query_get_many_and_iter_many() {
        let mut world = World::new();
        let a = world.spawn(Hp(1));
        let b = world.spawn(Hp(2));
        let nobody = world.spawn(Tag);
        let (pair, missing, listed) = world.run_system_once(move |q: Query<&Hp>| {
            let pair = q.get_many([a, b]).map(|[x, y]| (x.0, y.0));
            let missing = q.get_many([a, nobody]).is_err();
            let listed: Vec<u32> = q.iter_many(&[b, nobody, a, b]).map(|h| h.0).collect();
            (pair, missing, listed)
        });
        assert_eq!(pair, Ok((1, 2)));
        assert!(missing);
        assert_eq!(listed, [2, 1, 2]);
        let aliased = world.run_system_once(move |mut q: Query<&mut Hp>| {
            let [x, y] = q.get_many_mut([a, b]).unwrap();
            std::mem::swap(x, y);
            q.get_many_mut([b, b]).unwrap_err()
        });
        assert_eq!(aliased, QueryEntityError::AliasedMutability(b));
        assert_eq!(world.get::<Hp>(a), Ok(&Hp(2)));
    }

    #[test]
    fn mut_marks_changed_only_when_written() {
        let mut world = World::new();
        let table = world.spawn((Hp(5), Stun(5)));
        let other = world.spawn((Hp(1), Stun(1)));
        let mut changed = world.query_filtered::<Entity, Changed<Hp>>();
        let mut stun_changed = world.query_filtered::<Entity, Changed<Stun>>();
        changed_hp(&mut changed, &world);
        stun_changed.iter(&world).count();

        let mut q = world.query::<(Entity, Mut<Hp>, Mut<Stun>)>();
        for (e, mut hp, mut stun) in q.iter_mut(&mut world) {
            // Reading does not count; equal values are not written.
            assert!(hp.0 > 0);
            assert!(!hp.set_if_neq(Hp(hp.0)));
            if e == table {
                assert!(hp.set_if_neq(Hp(9)));
                stun.0 += 1; // DerefMut marks
            }
            assert!(hp.is_added()); // this state's first run: all is new
        }
        assert_eq!(changed_hp(&mut changed, &world), [table]);
        assert_eq!(stun_changed.iter(&world).collect::<Vec<_>>(), [table]);
        assert_eq!(world.get::<Hp>(table), Ok(&Hp(9)));
        assert_eq!(world.get::<Stun>(table), Ok(&Stun(6)));
        assert_eq!(world.get::<Hp>(other), Ok(&Hp(1)));

        // In a system, through `get_mut`, with `is_changed` per item.
        let seen = world.run_system_once(move |mut q: Query<Mut<Hp>>| {
            let hp = q.get_mut(other).unwrap();
            (hp.is_changed(), hp.is_added())
        });
        assert_eq!(seen, (true, true)); // a first run: everything is new
        let mut bypass = world.query::<Mut<Hp>>();
        bypass
            .get_mut(&mut world, other)
            .unwrap()
            .bypass_change_detection()
            .0 = 3;
        assert_eq!(changed_hp(&mut changed, &world), []);
        assert_eq!(world.get::<Hp>(other), Ok(&Hp(3)));
    }

    #[test]
    fn res_mut_set_if_neq_changes_only_on_a_new_value() {
        #[derive(Resource, PartialEq, Debug)]
        struct Level(u32);
        let mut world = World::new();
        world.insert_resource(Level(1));
        let mut watch = Schedule::new();
        world.insert_resource(Vec::<bool>::new());
        watch.add_systems(|l: Res<Level>, mut seen: ResMut<Vec<bool>>| seen.push(l.is_changed()));
        watch.run(&mut world);
        world.run_system_once(|mut l: ResMut<Level>| assert!(!l.set_if_neq(Level(1))));
        watch.run(&mut world);
        world.run_system_once(|mut l: ResMut<Level>| assert!(l.set_if_neq(Level(2))));
        watch.run(&mut world);
        assert_eq!(*world.resource::<Vec<bool>>(), [true, false, true]);
        assert_eq!(*world.resource::<Level>(), Level(2));
    }

    #[derive(Resource, Default)]
    struct HookLog(Vec<String>);

    fn log(world: &mut DeferredWorld, text: String) {
        world.resource_mut::<HookLog>().0.push(text);
    }

    #[derive(Component)]
    #[component(on_replace = replaced, on_remove = removed, on_despawn = despawned, on_add = added)]
    struct Watched(u32);

    fn added(mut world: DeferredWorld, e: Entity) {
        let v = world.get::<Watched>(e).unwrap().0;
        log(&mut world, format!("add {v}"));
    }
    fn replaced(mut world: DeferredWorld, context: HookContext) {
        let v = world.get::<Watched>(context.entity).unwrap().0;
        assert_eq!(
            Some(context.component_id),
            world.world().component_id::<Watched>()
        );
        log(&mut world, format!("replace {v}"));
    }
    fn removed(mut world: DeferredWorld, e: Entity) {
        let v = world.get::<Watched>(e).unwrap().0;
        log(&mut world, format!("remove {v}"));
    }
    fn despawned(mut world: DeferredWorld, e: Entity) {
        let v = world.get::<Watched>(e).unwrap().0;
        log(&mut world, format!("despawn {v}"));
    }

    #[test]
    fn replace_and_despawn_hooks_see_the_old_value_in_order() {
        let mut world = World::new();
        world.init_resource::<HookLog>();
        let a = world.spawn(Watched(1));
        world.insert_one(a, Watched(2)).unwrap(); // replace sees 1
        world.insert(a, (Watched(3), Tag)).unwrap(); // replace sees 2
        world.remove::<Watched>(a).unwrap(); // replace, remove; no despawn
        world.insert_one(a, Watched(4)).unwrap(); // added again
        world.despawn(a).unwrap(); // despawn, replace, remove
        let b = world.spawn(Tag); // no Watched: no hook
        world.despawn(b).unwrap();
        assert_eq!(
            world.resource::<HookLog>().0,
            [
                "add 1",
                "replace 1",
                "replace 2",
                "replace 3",
                "remove 3",
                "add 4",
                "despawn 4",
                "replace 4",
                "remove 4"
            ]
        );
    }

    #[test]
    fn a_panicking_replace_hook_leaves_the_old_value() {
        #[derive(Component, Debug, PartialEq)]
        #[component(on_replace = refuse)]
        struct Locked(u32);
        fn refuse(_world: DeferredWorld, _e: Entity) {
            panic!("locked");
        }
        let mut world = World::new();
        let e = world.spawn(Locked(1));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            world.insert_one(e, Locked(2)).unwrap();
        }));
        assert!(caught.is_err());
        assert_eq!(world.get::<Locked>(e), Ok(&Locked(1)));
        world.check_invariants();
    }

    #[test]
    fn system_functions_are_ordering_labels() {
        fn first() {}
        fn second() {}
        fn third() {}
        let mut schedule = Schedule::new();
        schedule.add_systems(third.after(second));
        schedule.add_systems(second.after(first).before(third));
        schedule.add_systems(first);
        assert_eq!(schedule.system_names(), ["first", "second", "third"]);

        // A function never added is an unknown target, named as added.
        fn never() {}
        let mut schedule = Schedule::new();
        schedule.add_systems(first.after(never));
        let err = schedule.build(&mut World::new()).unwrap_err();
        assert_eq!(
            err,
            ScheduleError::UnknownTarget {
                from: "first".into(),
                target: "never".into(),
                suggestion: None,
            }
        );
    }

    #[test]
    fn unknown_labels_suggest_the_closest_name() {
        fn despawn_dead() {}
        let mut schedule = Schedule::new();
        schedule.add_systems(despawn_dead);
        schedule.add_system("score", || {}).after("despawn_ded");
        schedule.add_system("draw", || {}).in_set("Render");
        schedule.add_system("ui", || {}).after("render"); // case slip
        schedule.add_system("far", || {}).after("zzzzzz");
        let err = schedule.build(&mut World::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "system or set `score` is ordered against `despawn_ded`, which is neither a system \
             nor a set; did you mean `despawn_dead`?"
        );
        schedule.remove_system("score").unwrap();
        let err = schedule.build(&mut World::new()).unwrap_err();
        assert!(matches!(
            err,
            ScheduleError::UnknownTarget { ref suggestion, .. } if suggestion.as_deref() == Some("Render")
        ));
        schedule.remove_system("ui").unwrap();
        let err = schedule.build(&mut World::new()).unwrap_err();
        assert!(matches!(
            err,
            ScheduleError::UnknownTarget {
                suggestion: None,
                ..
            }
        ));
        assert!(!err.to_string().contains("did you mean"));
    }

    #[test]
    fn system_sets_from_types() {
        #[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
        struct Physics;
        #[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
        enum Stage {
            Input,
            Output,
        }
        assert_eq!(Physics.set_name(), "Physics");
        assert_eq!(String::from(Stage::Output), "Stage::Output");
        let mut schedule = Schedule::new();
        schedule.add_system("out", || {}).in_set(Stage::Output);
        schedule.add_system("step", || {}).in_set(Physics);
        schedule.add_system("keys", || {}).in_set(Stage::Input);
        schedule.configure_sets((Stage::Input, (Physics, "extra"), Stage::Output).chain());
        assert_eq!(schedule.system_names(), ["keys", "step", "out"]);
        let mut schedule = Schedule::new();
        schedule.add_system("out", || {}).in_set(Stage::Output);
        schedule.add_system("keys", || {}).in_set(Stage::Input);
        schedule.configure_sets(Stage::Output.after(Stage::Input));
        assert_eq!(schedule.system_names(), ["keys", "out"]);
    }

    #[test]
    fn conditions_run_once_and_any_with_component() {
        #[derive(Resource, Default)]
        struct Runs(u32, u32);
        let mut world = World::new();
        world.init_resource::<Runs>();
        let mut schedule = Schedule::new();
        // Two uses of `run_once`: each remembers for itself.
        schedule.add_systems((|mut r: ResMut<Runs>| r.0 += 1).run_if(run_once));
        schedule.add_systems((|mut r: ResMut<Runs>| r.0 += 10).run_if(run_once));
        schedule.add_systems((|mut r: ResMut<Runs>| r.1 += 1).run_if(any_with_component::<Tag>));
        schedule.run(&mut world);
        let e = world.spawn(Tag);
        schedule.run(&mut world);
        schedule.run(&mut world);
        world.despawn(e).unwrap();
        schedule.run(&mut world);
        assert_eq!(
            (world.resource::<Runs>().0, world.resource::<Runs>().1),
            (11, 2)
        );
    }

    #[test]
    fn init_resource_and_from_world() {
        #[derive(Resource, Default)]
        struct Count(u32);
        struct Doubled(u32);
        impl FromWorld for Doubled {
            fn from_world(world: &mut World) -> Self {
                Doubled(world.resource::<Count>().0 * 2)
            }
        }
        let mut world = World::new();
        let id = world.init_resource::<Count>();
        assert_eq!(world.resource_id::<Count>(), Some(id));
        world.resource_mut::<Count>().0 = 4;
        assert_eq!(world.init_resource::<Count>(), id);
        assert_eq!(world.resource::<Count>().0, 4);
        world.init_resource::<Doubled>();
        assert_eq!(world.resource::<Doubled>().0, 8);
    }

    #[test]
    fn resource_scope_puts_the_value_back_even_after_a_panic() {
        #[derive(Resource, Debug, PartialEq)]
        struct Bank(u32);
        let mut world = World::new();
        world.insert_resource(Bank(1));
        let inside = world.resource_scope(|world, bank: &mut Bank| {
            bank.0 += 1;
            let gone = !world.contains_resource::<Bank>();
            world.insert_resource(Bank(100)); // dropped when the scope ends
            gone
        });
        assert!(inside);
        assert_eq!(*world.resource::<Bank>(), Bank(2));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            world.resource_scope(|_, bank: &mut Bank| {
                bank.0 = 3;
                panic!("mid-scope");
            })
        }));
        assert!(caught.is_err());
        assert_eq!(*world.resource::<Bank>(), Bank(3));
        // The value going back counts as a change.
        let changed = world.run_system_once(|b: Res<Bank>| b.is_changed());
        assert!(changed);
    }

    #[test]
    fn entity_commands() {
        let mut world = World::new();
        let e = world.spawn(Hp(1));
        let gone = world.spawn(());
        world.despawn(gone).unwrap();
        let (spawned, kid) = world.run_system_once(move |mut commands: Commands| {
            commands.entity(e).insert(Tag).remove::<Hp>();
            commands.entity(gone).try_insert(Tag); // quietly skipped
            let mut kid = None;
            let spawned = commands
                .spawn_empty()
                .insert(Hp(7))
                .with_children(|p| kid = Some(p.spawn(Tag)))
                .id();
            commands.spawn_batch((0..3).map(Hp));
            commands.queue(|world: &mut World| world.insert_resource(5u8));
            (spawned, kid.unwrap())
        });
        assert!(world.has::<Tag>(e) && !world.has::<Hp>(e));
        assert_eq!(world.get::<Hp>(spawned), Ok(&Hp(7)));
        assert_eq!(world.parent(kid), Some(spawned));
        assert_eq!(*world.resource::<u8>(), 5);
        assert_eq!(world.len(), 1 + 2 + 3);

        // try_insert reports nothing; insert reports the gone entity.
        let mut buffer = CommandBuffer::new(&world);
        buffer.try_insert(gone, Tag);
        assert!(buffer.apply(&mut world).is_ok());
        buffer.insert(gone, Tag);
        assert_eq!(buffer.apply(&mut world).unwrap_err().len(), 1);

        world.run_system_once(move |mut commands: Commands| {
            commands.entity(spawned).despawn_recursive();
            commands.entity(e).despawn();
        });
        assert!(!world.contains(kid) && !world.contains(e));
    }

    #[test]
    fn world_names_from_bevy_and_hecs() {
        let mut world = World::new();
        let e = world.spawn_empty().id();
        assert_eq!(world.get_entity(e).unwrap().id(), e);
        world.get_entity_mut(e).unwrap().insert(Hp(2)).unwrap();
        assert_eq!(world.iter_entities().count(), 1);
        assert!(world.satisfies::<&Hp>(e));
        assert!(!world.satisfies::<(&Hp, &Tag)>(e));
        let (hp, tag) = world.query_one_mut::<(&mut Hp, Option<&Tag>)>(e).unwrap();
        hp.0 += 1;
        assert!(tag.is_none());
        assert_eq!(world.get::<Hp>(e), Ok(&Hp(3)));
        let reserved: Vec<Entity> = world.reserve_entities(2).collect();
        world.flush();
        assert!(reserved.iter().all(|&r| world.contains(r)));
        assert_eq!(world.try_despawn(e), Ok(()));
        assert!(world.try_despawn(e).is_err());
        assert!(world.get_entity(e).is_err());
        assert!(world.get_entity_mut(e).is_err());
        assert!(!world.satisfies::<()>(e));
    }

    #[test]
    fn name_reads_as_str_and_time_in_secs() {
        let name = Name::new("orc 7");
        assert_eq!(name.len(), 5);
        assert!(name.starts_with("orc"));
        let mut time = Time::default();
        time.advance_by(std::time::Duration::from_millis(250));
        time.advance_by(std::time::Duration::from_millis(500));
        assert_eq!((time.delta_secs(), time.elapsed_secs()), (0.5, 0.75));
    }
}
