//! `ChildOf(parent)` as a spawn/insert bundle, Bevy 0.16's spelling
//! (issue #37): the edge is made with the entity's components, reparents
//! on insert, refuses a gone parent before changing anything, and is in
//! place when the bundle's `OnAdd` observers run.

use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq)]
struct Sprite(u32);

#[derive(Component)]
struct Ship;

#[test]
fn spawn_with_child_of_makes_the_edge_in_spawn_order() {
    let mut world = World::new();
    let ship = world.spawn(Ship);
    let kids: Vec<Entity> = (0..4)
        .map(|i| world.spawn((Sprite(i), ChildOf(ship))))
        .collect();
    assert_eq!(world.children(ship), kids);
    for (i, &k) in kids.iter().enumerate() {
        assert_eq!(world.parent(k), Some(ship));
        assert_eq!(world.get::<Sprite>(k).unwrap().0, i as u32);
        let edge = world.get::<Relation<ChildOf>>(k).unwrap();
        assert_eq!(edge.data()[0].parent(), ship);
        assert_eq!(edge.data()[0].0, ship);
    }
    // ChildOf alone, and inside a derived bundle.
    #[derive(Bundle)]
    struct Part {
        sprite: Sprite,
        child_of: ChildOf,
    }
    let lone = world.spawn(ChildOf(ship));
    let part = world.spawn(Part {
        sprite: Sprite(9),
        child_of: ChildOf(kids[0]),
    });
    assert_eq!(world.parent(lone), Some(ship));
    assert_eq!(world.parent(part), Some(kids[0]));
    assert_eq!(world.get::<Sprite>(part).unwrap().0, 9);
    // spawn_batch and extend take the same path.
    let batch = world.spawn_batch((0..2).map(|i| (Sprite(i), ChildOf(lone))));
    world.extend([(Sprite(5), ChildOf(lone))]);
    assert_eq!(world.children(lone).len(), 3);
    assert_eq!(world.children(lone)[..2], batch[..]);
}

#[test]
fn insert_child_of_reparents() {
    let mut world = World::new();
    let (p, q) = (world.spawn(Ship), world.spawn(Ship));
    let a = world.spawn((Sprite(0), ChildOf(p)));
    let b = world.spawn((Sprite(1), ChildOf(p)));
    world.insert(a, ChildOf(q)).unwrap();
    assert_eq!(world.parent(a), Some(q));
    assert_eq!(world.children(p), [b]);
    assert_eq!(world.children(q), [a]);
    world
        .entity_mut(b)
        .unwrap()
        .insert((Sprite(7), ChildOf(q)))
        .unwrap();
    assert_eq!(world.parent(b), Some(q));
    assert_eq!(world.get::<Sprite>(b).unwrap().0, 7);
    assert!(world.children(p).is_empty());
    // Inserting the same parent again keeps one edge.
    world.insert(b, ChildOf(q)).unwrap();
    assert_eq!(world.children(q), [a, b]);
    // remove::<ChildOf> detaches and gives the old value back.
    assert_eq!(world.remove::<ChildOf>(a), Ok(ChildOf(q)));
    assert_eq!(world.parent(a), None);
    assert!(world.remove::<ChildOf>(a).is_err());
}

#[test]
fn commands_forms() {
    let mut world = World::new();
    let mut commands = CommandBuffer::new(&world);
    let ship = commands.spawn(Ship);
    let sprite = commands.spawn((Sprite(1), ChildOf(ship)));
    let other = commands.spawn(Ship);
    commands.apply(&mut world).unwrap();
    assert_eq!(world.children(ship), [sprite]);
    let mut commands = CommandBuffer::new(&world);
    commands.insert(sprite, ChildOf(other));
    commands.apply(&mut world).unwrap();
    assert_eq!(world.parent(sprite), Some(other));
    assert!(world.children(ship).is_empty());

    // The system form, Bevy's: commands.spawn / commands.entity(e).insert.
    #[derive(Resource)]
    struct Ids(Entity, Entity);
    world.insert_resource(Ids(ship, sprite));
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut commands: Commands, ids: Res<Ids>| {
        commands.spawn((Sprite(2), ChildOf(ids.0)));
        commands.entity(ids.1).insert(ChildOf(ids.0));
    });
    schedule.run(&mut world);
    assert_eq!(world.children(ship).len(), 2);
    assert_eq!(world.parent(sprite), Some(ship));
    assert!(world.children(other).is_empty());
}

#[test]
fn stale_parent_is_refused_and_changes_nothing() {
    let mut world = World::new();
    let gone = world.spawn(Ship);
    world.despawn(gone).unwrap();
    let e = world.spawn(Sprite(3));
    let count = world.len();
    // World insert: an error, the entity unchanged.
    assert_eq!(
        world.insert(e, (Ship, ChildOf(gone))),
        Err(EntityError::Relation(RelationError::NoSuchEntity(gone)))
    );
    assert!(!world.has::<Ship>(e));
    assert_eq!(world.parent(e), None);
    // A cycle is refused the same way.
    let kid = world.spawn((Sprite(4), ChildOf(e)));
    assert!(matches!(
        world.insert(e, (Ship, ChildOf(kid))),
        Err(EntityError::Relation(RelationError::Cycle { .. }))
    ));
    assert!(!world.has::<Ship>(e));
    assert_eq!(world.parent(e), None);
    // Commands: the command error path, and no entity spawned.
    let before = world.len();
    let mut commands = CommandBuffer::new(&world);
    let spawned = commands.spawn((Sprite(5), ChildOf(gone)));
    commands.insert(e, (Ship, ChildOf(gone)));
    let errors = commands.apply(&mut world).unwrap_err();
    assert_eq!(errors.iter().count(), 2);
    assert!(!world.contains(spawned));
    assert_eq!(world.len(), before);
    assert!(!world.has::<Ship>(e));
    // World spawn has no error to return: it panics, spawning nothing.
    let before = world.len();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn((Sprite(6), ChildOf(gone)));
    }));
    assert!(panicked.is_err());
    assert_eq!(world.len(), before);
    let mut sprites = world.query::<&Sprite>();
    assert!(sprites.iter(&world).all(|s| s.0 != 6));
    assert_eq!(count + 1, world.len());
}

#[test]
fn on_add_observer_sees_the_parent() {
    #[derive(Resource, Default)]
    struct Seen(Vec<(Entity, Option<Entity>)>);
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(|t: Trigger<OnAdd, Sprite>, mut w: DeferredWorld| {
        let e = t.target();
        let parent = w.get::<Relation<ChildOf>>(e).ok().map(|r| r.target());
        w.resource_mut::<Seen>().0.push((e, parent));
    });
    let ship = world.spawn(Ship);
    let a = world.spawn((Sprite(1), ChildOf(ship)));
    let b = world.spawn(Ship);
    world.insert(b, (Sprite(2), ChildOf(a))).unwrap();
    assert_eq!(world.resource::<Seen>().0, [(a, Some(ship)), (b, Some(a))]);
}

#[test]
fn despawn_recursive_takes_the_child() {
    let mut world = World::new();
    let ship = world.spawn(Ship);
    let a = world.spawn((Sprite(1), ChildOf(ship)));
    let b = world.spawn((Sprite(2), ChildOf(a)));
    let other = world.spawn(Ship);
    world.despawn_recursive(ship).unwrap();
    assert!(!world.contains(ship) && !world.contains(a) && !world.contains(b));
    assert!(world.contains(other));
}

#[test]
fn query_child_of_yields_the_parent() {
    let mut world = World::new();
    let ship = world.spawn(Ship);
    let other = world.spawn(Ship);
    let a = world.spawn((Sprite(1), ChildOf(ship)));
    let b = world.spawn((Sprite(2), ChildOf(other)));
    world.relate(b, ship, ChildOf(other)).unwrap(); // the target wins
    let mut q = world.query::<(Entity, &ChildOf, &Sprite)>();
    let mut seen: Vec<(Entity, Entity, Entity)> = q
        .iter(&world)
        .map(|(e, child_of, _)| (e, child_of.parent(), child_of.0))
        .collect();
    seen.sort();
    assert_eq!(seen, [(a, ship, ship), (b, ship, ship)]);
    let mut roots = world.query::<(Entity, Option<&ChildOf>)>();
    let parentless: Vec<Entity> = roots
        .iter(&world)
        .filter(|(_, c)| c.is_none())
        .map(|(e, _)| e)
        .collect();
    assert_eq!(parentless.len(), 2);
    assert!(parentless.contains(&ship) && parentless.contains(&other));
    assert_eq!(
        world.query::<&ChildOf>().get(&world, a).unwrap(),
        &ChildOf(ship)
    );
}

#[test]
fn requirements_come_with_the_edge_and_a_panicking_one_leaves_nothing() {
    #[derive(Component, Default, Debug, PartialEq)]
    struct Hull(u32);
    #[derive(Component)]
    #[require(Hull)]
    struct Turret;
    struct Fragile;
    impl Default for Fragile {
        fn default() -> Self {
            panic!("no Fragile today")
        }
    }
    impl Component for Fragile {}
    #[derive(Component)]
    #[require(Fragile)]
    struct Glass;

    let mut world = World::new();
    let ship = world.spawn(Ship);
    let turret = world.spawn((Turret, ChildOf(ship)));
    assert_eq!(world.get::<Hull>(turret), Ok(&Hull(0)));
    assert_eq!(world.children(ship), [turret]);
    let before = world.len();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn((Glass, ChildOf(ship)));
    }));
    assert!(panicked.is_err());
    assert_eq!(world.len(), before);
    assert_eq!(world.children(ship), [turret]);
}

/// A spawn command whose `ChildOf` names a parent gone by the time it
/// applies: the command reports the error and leaves no entity (its id,
/// held until then, is given up unannounced), and the commands after it
/// still apply.
#[test]
fn a_command_spawn_under_a_gone_parent_leaves_no_entity() {
    let mut world = World::new();
    let gone = world.spawn(Ship);
    let mut commands = CommandBuffer::new(&world);
    commands.despawn(gone);
    let orphan = commands.spawn((Sprite(1), ChildOf(gone)));
    let kept = commands.spawn(Sprite(2));
    let errors = commands.apply(&mut world).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(!world.contains(orphan));
    assert_eq!(world.get::<Sprite>(kept).map(|s| s.0), Ok(2));
    assert_eq!(world.len(), 1);
    world.check_invariants();
    let again = world.spawn(());
    assert!(again != orphan && !world.contains(orphan));
}

// ----- From the s3-learn branch: filters, hooks, order, held commands --------

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Hp(u32);

/// What a hook or observer saw: the entity, its parent then, whether it
/// had its `Hp`, and the parent's children then.
type Sight = (Entity, Option<Entity>, bool, Vec<Entity>);

#[derive(Resource, Default, Debug)]
struct Seen(Vec<Sight>);

fn sight(world: &World, e: Entity) -> Sight {
    let parent = world.parent(e);
    let siblings = parent.map_or(Vec::new(), |p| world.children(p).to_vec());
    (e, parent, world.has::<Hp>(e), siblings)
}

#[derive(Component)]
#[component(on_add = hooked_added)]
struct Hooked;

fn hooked_added(mut world: DeferredWorld, e: Entity) {
    let seen = sight(world.world(), e);
    world.resource_mut::<Seen>().0.push(seen);
}

#[test]
fn with_and_without_child_of_filter_children_and_roots() {
    let mut world = World::new();
    let root = world.spawn(Hp(1));
    let kid = world.spawn((Hp(2), ChildOf(root)));
    let other = world.spawn(ChildOf(root));
    let (roots, kids) = world.run_system_once(
        |roots: Query<Entity, Without<ChildOf>>, kids: Query<Entity, (With<ChildOf>, With<Hp>)>| {
            (
                roots.iter().collect::<Vec<_>>(),
                kids.iter().collect::<Vec<_>>(),
            )
        },
    );
    assert_eq!((roots, kids), (vec![root], vec![kid]));
    // A filter sees reparenting and unparenting at once.
    world.remove::<ChildOf>(other).unwrap();
    let mut roots = world.query_filtered::<Entity, Without<ChildOf>>();
    let mut found: Vec<Entity> = roots.iter(&world).collect();
    found.sort();
    assert_eq!(found, [root, other]);
}

#[test]
fn hooks_and_observers_see_the_edge_after_its_own_observers() {
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(|t: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        let seen = sight(w.world(), t.target());
        w.resource_mut::<Seen>().0.push(seen);
    });
    // The edge's own observers run first, on the whole entity.
    world.observe(|t: Trigger<OnRelate<ChildOf>>, mut w: DeferredWorld| {
        let seen = sight(w.world(), t.event().source);
        w.resource_mut::<Seen>().0.push(seen);
    });
    let ship = world.spawn(());
    let first = world.spawn((Hp(1), ChildOf(ship)));
    let second = world.spawn((Hooked, Hp(2), ChildOf(ship)));
    let loose = world.spawn(());
    world.insert(loose, (Hp(3), ChildOf(first))).unwrap();
    let commanded = world.run_system_once(move |mut commands: Commands| {
        commands.spawn((Hp(4), ChildOf(first))).id()
    });
    let both = vec![first, second];
    assert_eq!(
        world.resource::<Seen>().0,
        [
            (first, Some(ship), true, vec![first]),   // OnRelate
            (first, Some(ship), true, vec![first]),   // OnAdd<Hp>
            (second, Some(ship), true, both.clone()), // OnRelate
            (second, Some(ship), true, both.clone()), // on_add of Hooked
            (second, Some(ship), true, both),         // OnAdd<Hp>
            (loose, Some(first), true, vec![loose]),
            (loose, Some(first), true, vec![loose]),
            (commanded, Some(first), true, vec![loose, commanded]),
            (commanded, Some(first), true, vec![loose, commanded]),
        ]
    );
    world.check_invariants();
}

#[test]
fn the_edges_observers_commands_wait_for_the_whole_spawn() {
    // An `OnRelate` observer despawns the child through commands: the
    // spawn's `OnAdd` observers still see it whole, then it goes. (Before,
    // the edge's commands applied between the edge and the bundle's
    // announcements: `OnAdd<Hp>` ran for a despawned entity.)
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(|t: Trigger<OnRelate<ChildOf>>, mut w: DeferredWorld| {
        w.commands().despawn(t.event().source);
    });
    world.observe(|t: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        let seen = sight(w.world(), t.target());
        w.resource_mut::<Seen>().0.push(seen);
    });
    let p = world.spawn(());
    let c = world.spawn((Hp(1), ChildOf(p)));
    let kept = world.spawn(());
    world.insert(kept, (Hp(2), ChildOf(p))).unwrap();
    assert_eq!(
        world.resource::<Seen>().0,
        [
            (c, Some(p), true, vec![c]),
            (kept, Some(p), true, vec![kept])
        ]
    );
    assert!(!world.contains(c) && !world.contains(kept));
    assert!(world.children(p).is_empty());
    world.check_invariants();
}

#[test]
fn spawn_at_and_a_derived_bundle_take_child_of() {
    #[derive(Bundle)]
    struct Turret {
        hp: Hp,
        parent: ChildOf,
    }
    let mut world = World::new();
    let tank = world.spawn(());
    let id = world.spawn(());
    world.despawn(id).unwrap();
    world.spawn_at(id, (Hp(1), ChildOf(tank)));
    let t = world.spawn(Turret {
        hp: Hp(3),
        parent: ChildOf(tank),
    });
    assert_eq!(world.children(tank), [id, t]);
    assert_eq!(world.get::<Hp>(t), Ok(&Hp(3)));
    world.check_invariants();
}

// ----- Every child-spawning path is the ChildOf bundle's (#39 leftovers) --------

/// `spawn_child`, `with_children` (world and commands), `spawn_with_children`
/// and `Commands::spawn_child` make the edge with the spawn, as
/// `spawn((.., ChildOf(p)))` does: the child's `OnAdd` hooks and observers
/// find its parent and its place among its siblings, and no observer ever
/// sees the child as a root. (Before, each related the child after the
/// spawn: both saw `None`.)
#[test]
fn every_child_spawning_path_makes_the_edge_before_the_announcements() {
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(|t: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        let seen = sight(w.world(), t.target());
        w.resource_mut::<Seen>().0.push(seen);
    });
    let p = world.spawn(());
    let a = world.spawn_child(p, (Hooked, Hp(1))).unwrap();
    let mut made = vec![a];
    let mut grandchild = None;
    world.entity_mut(p).unwrap().with_children(|s| {
        made.push(s.spawn((Hooked, Hp(2))));
        made.push(s.spawn_with_children((Hooked, Hp(3)), |g| {
            grandchild = Some(g.spawn((Hooked, Hp(4))));
        }));
    });
    let grandchild = grandchild.unwrap();
    let (b, c) = world.run_system_once(move |mut commands: Commands| {
        let b = commands.spawn_child(p, (Hooked, Hp(5)));
        let mut c = None;
        commands
            .entity(p)
            .with_children(|s| c = Some(s.spawn((Hooked, Hp(6)))));
        (b, c.unwrap())
    });
    made.extend([b, c]);
    assert_eq!(world.children(p), made);
    let seen = &world.resource::<Seen>().0;
    // Two sightings per child (its hook, then the observer), each with its
    // parent and itself among the parent's children.
    assert_eq!(seen.len(), 2 * (made.len() + 1));
    for (e, parent, has_hp, siblings) in seen {
        let expected = if *e == grandchild { made[2] } else { p };
        assert_eq!(*parent, Some(expected), "{e:?} was seen without its parent");
        assert!(*has_hp && siblings.contains(e), "{e:?}: {siblings:?}");
    }
    world.check_invariants();
}

/// Runs `f`, which must panic with a message containing `needle`.
fn panics_with(needle: &str, f: impl FnOnce()) {
    let payload =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("expected a panic");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(message.contains(needle), "{message:?}");
}

/// A bundle naming two parents is refused as one naming a component type
/// twice is: a panic the first time it is used, before anything changes,
/// on every path (spawn, insert, spawn_child, spawn_at, commands). (Before,
/// the first `ChildOf` silently won.) A bundle naming a component twice
/// next to a `ChildOf`, or given to `spawn_at`, leaves no entity either.
#[test]
fn two_parents_in_one_bundle_are_refused_like_a_duplicate_component() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    let e = world.spawn(Hp(0));
    let before = world.len();
    let unchanged = |world: &World| {
        assert_eq!(world.len(), before);
        assert!(world.children(a).is_empty() && world.children(b).is_empty());
        assert_eq!(world.get::<Hp>(e), Ok(&Hp(0)));
        world.check_invariants();
    };
    panics_with("`ChildOf` more than once", || {
        world.spawn((Hp(1), ChildOf(a), ChildOf(b)));
    });
    unchanged(&world);
    panics_with("`ChildOf` more than once", || {
        let _ = world.insert(e, (Hp(2), (ChildOf(a), ChildOf(b))));
    });
    unchanged(&world);
    panics_with("`ChildOf` more than once", || {
        let _ = world.spawn_child(a, (Hp(3), ChildOf(b)));
    });
    unchanged(&world);
    let id = world.spawn(());
    world.despawn(id).unwrap();
    panics_with("`ChildOf` more than once", || {
        world.spawn_at(id, (ChildOf(a), Hp(4), ChildOf(b)));
    });
    assert!(!world.contains(id));
    unchanged(&world);
    let mut commands = CommandBuffer::new(&world);
    let queued = commands.spawn((ChildOf(a), ChildOf(b)));
    panics_with("`ChildOf` more than once", || {
        let _ = commands.apply(&mut world);
    });
    assert!(!world.contains(queued));
    unchanged(&world);
    // A component twice, next to a parent or through spawn_at: the same
    // panic as a plain spawn's, and no empty entity left behind.
    panics_with("more than once", || {
        world.spawn((Hp(5), Hp(6), ChildOf(a)));
    });
    unchanged(&world);
    panics_with("more than once", || {
        world.spawn_at(id, (Hp(7), Hp(8)));
    });
    assert!(!world.contains(id));
    unchanged(&world);
}

// ----- Issue #39: a clone's and a builder's parent inside the one change ------

#[derive(Relation, Clone, Debug, PartialEq)]
struct Likes;

#[test]
fn a_clones_hooks_and_observers_see_its_parent_and_edges() {
    // Before, the copy's edges were made after its spawn was announced:
    // `OnAdd<Hp>` saw `[Some(p), None]` (the original, then the copy).
    let mut world = World::new();
    world.init_resource::<Seen>();
    let p = world.spawn(());
    let friend = world.spawn(());
    let e = world.spawn((Hp(1), ChildOf(p)));
    world.relate(e, friend, Likes).unwrap();
    world.observe(|t: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        let e = t.target();
        let likes = w.world().targets::<Likes>(e).to_vec();
        let seen = sight(w.world(), e);
        assert_eq!(likes.len(), 1, "the copy's other edges are made too");
        w.resource_mut::<Seen>().0.push(seen);
    });
    let copy = world.clone_entity(e).unwrap();
    assert_eq!(
        world.resource::<Seen>().0,
        [(copy, Some(p), true, vec![e, copy])]
    );
    assert_eq!(world.parent(copy), Some(p));
    assert_eq!(world.sources::<Likes>(friend), [e, copy]);
    world.check_invariants();
}

#[test]
fn a_clones_edge_observers_commands_wait_for_its_announcement() {
    // An `OnRelate<ChildOf>` observer despawns the source through
    // commands: the copy's `OnAdd<Hp>` still sees it whole, then it goes.
    let mut world = World::new();
    world.init_resource::<Seen>();
    let p = world.spawn(());
    let e = world.spawn((Hp(1), ChildOf(p)));
    world.observe(|t: Trigger<OnRelate<ChildOf>>, mut w: DeferredWorld| {
        w.commands().despawn(t.event().source);
    });
    world.observe(|t: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        let seen = sight(w.world(), t.target());
        w.resource_mut::<Seen>().0.push(seen);
    });
    let copy = world.clone_entity(e).unwrap();
    assert_eq!(
        world.resource::<Seen>().0,
        [(copy, Some(p), true, vec![e, copy])]
    );
    assert!(!world.contains(copy));
    assert_eq!(world.children(p), [e]);
    world.check_invariants();
}

#[test]
fn a_builder_with_child_of_spawns_and_inserts_whole() {
    // Before, `add_bundle` refused a `ChildOf` (pointing to
    // `World::spawn_child`, which takes only static bundles).
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(|t: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        let seen = sight(w.world(), t.target());
        w.resource_mut::<Seen>().0.push(seen);
    });
    let ship = world.spawn(());
    let mut builder = mosaic::EntityBuilder::new();
    builder.add_bundle((Hooked, Hp(1), ChildOf(ship)));
    assert_eq!(builder.len(), 2, "the parent is not a component");
    let turret = world.spawn(builder.build());
    // Reused: the parent went with the build.
    builder.add(Hp(2));
    let loose = world.spawn(builder.build());
    // Inserted: the edge with the components (a reparent for `turret`).
    let moved = world.spawn(());
    builder.add_bundle((Hp(3), ChildOf(turret)));
    world.insert(moved, builder.build()).unwrap();
    assert_eq!(
        world.resource::<Seen>().0,
        [
            (turret, Some(ship), true, vec![turret]), // on_add of Hooked
            (turret, Some(ship), true, vec![turret]), // OnAdd<Hp>
            (loose, None, true, vec![]),
            (moved, Some(turret), true, vec![moved]),
        ]
    );
    // A parent the entity cannot have: refused, nothing changed.
    builder.add_bundle((Hp(4), ChildOf(moved)));
    assert!(world.insert(turret, builder.build()).is_err());
    assert_eq!(world.parent(turret), Some(ship));
    assert_eq!(world.get::<Hp>(turret), Ok(&Hp(1)));
    // `spawn_at` a recycled id.
    let id = world.spawn(());
    world.despawn(id).unwrap();
    builder.add_bundle((Hp(6), ChildOf(ship)));
    world.spawn_at(id, builder.build());
    assert_eq!(world.children(ship), [turret, id]);
    // A gone parent: the spawn panics and leaves no entity.
    let gone = world.spawn(());
    world.despawn(gone).unwrap();
    let before = world.len();
    builder.add_bundle((Hp(5), ChildOf(gone)));
    let built = builder.build();
    let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.spawn(built)));
    assert!(spawned.is_err());
    assert_eq!(world.len(), before);
    world.check_invariants();
}
