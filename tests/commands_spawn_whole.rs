//! Issue 39: an entity spawned by `Commands` is never seen alive and
//! empty. Ids are reserved when the command is recorded; the probe is an
//! observer run by an earlier command of the same queue, looking at the
//! id a later command will spawn.

use mosaic::prelude::*;

#[derive(Component)]
struct Trigger1;
#[derive(Component)]
struct Body(#[allow(dead_code, reason = "a value to spawn with")] u32);

#[derive(Default)]
struct Seen(Vec<(bool, bool)>);

// Failed before the fix (seen failing on bb755d2): the first structural
// change of `apply` flushed every reserved id live and empty
// (`World::flush`, the hecs/Bevy model), and the spawn command then
// inserted its bundle. Ids owned by a pending spawn command are now held
// (reserved, not live) and placed whole by that command (the `spawn_at`
// path).
#[test]
fn an_earlier_command_s_observer_never_sees_a_later_spawn_empty() {
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.init_resource::<Later>();
    let first = world.spawn(());
    world.observe(|_: Trigger<OnAdd<Trigger1>>, mut w: DeferredWorld| {
        let later = w.resource::<Later>().0.unwrap();
        let alive = w.world().contains(later);
        let whole = w.get::<Body>(later).is_ok();
        w.resource_mut::<Seen>().0.push((alive, whole));
    });
    #[derive(Default)]
    struct Later(Option<Entity>);
    let mut schedule = Schedule::new();
    schedule.add_systems(move |mut commands: Commands, mut later: ResMut<Later>| {
        commands.entity(first).insert(Trigger1);
        later.0 = Some(commands.spawn(Body(7)).id());
    });
    schedule.run(&mut world);
    let seen = &world.resource::<Seen>().0;
    assert_eq!(seen.len(), 1);
    let (alive, whole) = seen[0];
    assert!(
        !alive || whole,
        "the observer saw the spawned entity alive with no components"
    );
}
