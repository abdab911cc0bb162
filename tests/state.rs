//! Integration tests for states: a transition runs `OnExit` then
//! `OnTransition` then `OnEnter`, each exactly once, at the start of the
//! next frame; the initial state's `OnEnter` runs once; setting the current
//! state does nothing; `in_state` guards systems; state-scoped entities are
//! despawned on exit (after `OnExit`, which still sees them); a change asked
//! for during a transition waits for the next one; a panicking `OnEnter`
//! system keeps its schedule.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use mosaic::prelude::*;

#[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
enum Game {
    #[default]
    Title,
    Playing,
    Over,
}

#[derive(Default)]
struct Log(Vec<String>);

fn log(entry: &'static str) -> impl FnMut(ResMut<Log>) + Send + 'static {
    move |mut l: ResMut<Log>| l.0.push(entry.to_owned())
}

fn world() -> World {
    let mut world = World::new();
    world.insert_resource(Log::default());
    world.init_state::<Game>();
    world
        .add_systems(OnEnter(Game::Title), log("enter title"))
        .add_systems(OnExit(Game::Title), log("exit title"))
        .add_systems(OnEnter(Game::Playing), log("enter playing"))
        .add_systems(OnExit(Game::Playing), log("exit playing"))
        .add_systems(
            OnTransition {
                exited: Game::Title,
                entered: Game::Playing,
            },
            log("title -> playing"),
        );
    world
}

fn take(world: &mut World) -> Vec<String> {
    std::mem::take(&mut world.resource_mut::<Log>().0)
}

#[test]
fn a_transition_runs_exit_then_enter_exactly_once_each() {
    let mut world = world();
    let mut frame = Schedule::new();
    frame.add_system("frame", |s: Res<State<Game>>, mut l: ResMut<Log>| {
        l.0.push(format!("frame in {:?}", s.get()));
    });
    frame.run_frame(&mut world, Duration::from_millis(16));
    assert_eq!(take(&mut world), ["enter title", "frame in Title"]);
    world.resource_mut::<NextState<Game>>().set(Game::Playing);
    assert_eq!(
        *world.resource::<State<Game>>().get(),
        Game::Title,
        "not yet"
    );
    frame.run_frame(&mut world, Duration::from_millis(16));
    assert_eq!(
        take(&mut world),
        [
            "exit title",
            "title -> playing",
            "enter playing",
            "frame in Playing"
        ]
    );
    frame.run_frame(&mut world, Duration::from_millis(16));
    assert_eq!(take(&mut world), ["frame in Playing"], "nothing runs twice");
}

#[test]
fn setting_the_current_state_does_nothing() {
    let mut world = world();
    world.apply_state_transitions();
    take(&mut world);
    world.resource_mut::<NextState<Game>>().set(Game::Title);
    world.apply_state_transitions();
    assert!(take(&mut world).is_empty());
    assert_eq!(world.resource::<NextState<Game>>().pending(), None);
}

#[test]
fn in_state_guards_systems() {
    let mut world = world();
    world.insert_resource(0u32);
    let mut frame = Schedule::new();
    frame
        .add_system("score", |mut n: ResMut<u32>| *n += 1)
        .run_if(in_state(Game::Playing));
    frame.run_frames(&mut world, 2, Duration::from_millis(16));
    assert_eq!(*world.resource::<u32>(), 0);
    world.resource_mut::<NextState<Game>>().set(Game::Playing);
    frame.run_frames(&mut world, 3, Duration::from_millis(16));
    assert_eq!(*world.resource::<u32>(), 3);
}

#[test]
fn state_scoped_entities_are_despawned_after_on_exit() {
    #[derive(Component)]
    struct Menu;
    let mut world = world();
    world.add_systems(
        OnExit(Game::Title),
        |menus: Query<&Menu>, mut l: ResMut<Log>| {
            l.0.push(format!("{} menus at exit", menus.iter().count()));
        },
    );
    let menu = world.spawn((Menu, StateScoped(Game::Title)));
    let hud = world.spawn(StateScoped(Game::Playing));
    let plain = world.spawn(Menu);
    world.apply_state_transitions();
    world.resource_mut::<NextState<Game>>().set(Game::Playing);
    world.apply_state_transitions();
    assert!(take(&mut world).contains(&"2 menus at exit".to_owned()));
    assert!(!world.contains(menu));
    assert!(world.contains(hud) && world.contains(plain));
    world.resource_mut::<NextState<Game>>().set(Game::Over);
    world.apply_state_transitions();
    assert!(!world.contains(hud));
}

#[test]
fn a_change_asked_for_during_a_transition_waits_for_the_next() {
    let mut world = world();
    world.add_systems(
        OnEnter(Game::Playing),
        |mut next: ResMut<NextState<Game>>| next.set(Game::Over),
    );
    world.apply_state_transitions();
    world.resource_mut::<NextState<Game>>().set(Game::Playing);
    world.apply_state_transitions();
    assert_eq!(*world.resource::<State<Game>>().get(), Game::Playing);
    world.apply_state_transitions();
    assert_eq!(*world.resource::<State<Game>>().get(), Game::Over);
    assert!(take(&mut world).contains(&"exit playing".to_owned()));
}

#[test]
fn a_panicking_on_enter_system_keeps_its_schedule() {
    #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug)]
    enum Door {
        Shut,
        Open,
    }
    let mut world = World::new();
    world.insert_resource(0u32);
    world.insert_state(Door::Shut);
    world.add_systems(OnEnter(Door::Open), |mut n: ResMut<u32>| {
        *n += 1;
        assert!(*n > 1, "first opening fails");
    });
    world.resource_mut::<NextState<Door>>().set(Door::Open);
    let caught = catch_unwind(AssertUnwindSafe(|| world.apply_state_transitions()));
    assert!(caught.is_err());
    world.resource_mut::<NextState<Door>>().set(Door::Shut);
    world.apply_state_transitions();
    world.resource_mut::<NextState<Door>>().set(Door::Open);
    world.apply_state_transitions();
    assert_eq!(*world.resource::<u32>(), 2, "the OnEnter system ran again");
}

#[test]
fn a_frame_with_nothing_pending_does_not_touch_next_state() {
    let mut world = world();
    world.insert_resource(0u32);
    let mut frame = Schedule::new();
    frame
        .add_system("asked", |mut n: ResMut<u32>| *n += 1)
        .run_if(resource_changed::<NextState<Game>>);
    frame.run_frame(&mut world, Duration::from_millis(16)); // first look: new
    frame.run_frames(&mut world, 3, Duration::from_millis(16));
    assert_eq!(*world.resource::<u32>(), 1);
    world.resource_mut::<NextState<Game>>().set(Game::Playing);
    frame.run_frame(&mut world, Duration::from_millis(16)); // taken: a change
    assert_eq!(*world.resource::<u32>(), 2);
    frame.run_frames(&mut world, 3, Duration::from_millis(16));
    assert_eq!(*world.resource::<u32>(), 2);
}

/// Issue 39, items 4 and 12: leaving a state despawns its scoped entities
/// whole, as one recursive sweep: a disabled scoped entity goes too, and
/// so does every descendant of a scoped one (scoped or not, disabled or
/// not), while an unscoped parent above it stays.
#[test]
fn leaving_a_state_despawns_disabled_and_whole_subtrees() {
    scoped_sweep(false);
}

/// The same with an observer watching: the sweep goes entity by entity
/// (not in one quiet batch), each once, though one scoped entity lies
/// below another.
#[test]
fn leaving_a_state_despawns_whole_subtrees_while_observed() {
    scoped_sweep(true);
}

fn scoped_sweep(observed: bool) {
    use mosaic::Disabled;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut world = world();
    let despawned = Arc::new(AtomicUsize::new(0));
    if observed {
        let d = Arc::clone(&despawned);
        world.observe(move |_: Trigger<OnDespawn>, _: DeferredWorld| {
            d.fetch_add(1, Ordering::Relaxed);
        });
    }
    world.apply_state_transitions();
    let keep = world.spawn(());
    let menu = world.spawn(StateScoped(Game::Title));
    world.add_child(keep, menu).unwrap();
    let button = world.spawn_child(menu, ()).unwrap();
    let label = world.spawn_child(button, ()).unwrap();
    let hidden = world.spawn((StateScoped(Game::Title), Disabled));
    let hidden_kid = world.spawn_child(hidden, Disabled).unwrap();
    // A scoped entity below another scoped one: one sweep takes both.
    let nested = world.spawn_child(button, StateScoped(Game::Title)).unwrap();
    let hud = world.spawn(StateScoped(Game::Playing));
    world.resource_mut::<NextState<Game>>().set(Game::Playing);
    world.apply_state_transitions();
    for e in [menu, button, label, hidden, hidden_kid, nested] {
        assert!(!world.contains(e), "{e:?} outlived its state");
    }
    assert!(world.contains(keep) && world.contains(hud));
    assert!(world.children(keep).is_empty());
    world.check_invariants();
    let heard = despawned.load(Ordering::Relaxed);
    assert_eq!(heard, if observed { 6 } else { 0 });
}
