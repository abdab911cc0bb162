//! `ChildOf(parent)` as Bevy users write it: in a spawn or insert bundle
//! (world, entity and commands forms), read back as `&ChildOf`, filtered
//! with `With`/`Without<ChildOf>`, removed with `remove::<ChildOf>()`;
//! making the same edge as `World::relate`, whole: the edge exists when
//! the child's hooks and observers run, and a stale parent or a cycle
//! changes nothing.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mosaic::prelude::*;
use mosaic::{CommandError, EntityWorldMut};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Hp(u32);

#[derive(Component, Debug, Clone, Copy, PartialEq)]
#[component(storage = "sparse")]
struct Stun;

#[derive(Component, Debug, Clone, Copy, PartialEq)]
#[component(on_add = hp_hook_seen)]
struct Hooked;

/// What an observer or hook saw: the entity, its parent then, whether it
/// had its `Hp`, and the parent's children then.
#[derive(Resource, Default, Debug)]
struct Seen(Vec<(Entity, Option<Entity>, bool, Vec<Entity>)>);

fn record(world: &World, e: Entity) -> (Entity, Option<Entity>, bool, Vec<Entity>) {
    let parent = world.parent(e);
    let siblings = parent.map_or(Vec::new(), |p| world.children(p).to_vec());
    (e, parent, world.has::<Hp>(e), siblings)
}

fn hp_hook_seen(mut world: DeferredWorld, e: Entity) {
    let seen = record(world.world(), e);
    world.resource_mut::<Seen>().0.push(seen);
}

fn parents(world: &mut World) -> Vec<(Entity, Entity)> {
    let mut q = world.query::<(Entity, &ChildOf)>();
    let mut all: Vec<(Entity, Entity)> = q.iter(world).map(|(e, c)| (e, c.parent())).collect();
    all.sort();
    all
}

#[test]
fn spawn_with_child_of_makes_the_edge_in_order() {
    let mut world = World::new();
    let ship = world.spawn(Hp(10));
    let a = world.spawn((Hp(1), ChildOf(ship)));
    let b = world.spawn(ChildOf(ship)); // alone
    let batch = world.spawn_batch([(Hp(2), ChildOf(ship)), (Hp(3), ChildOf(a))]);
    world.extend([(ChildOf(ship), Stun)]);
    let d = *world.children(ship).last().unwrap();
    let e = world
        .run_system_once(move |mut commands: Commands| commands.spawn((Hp(4), ChildOf(ship))).id());
    assert_eq!(world.children(ship), [a, b, batch[0], d, e]);
    assert_eq!(world.children(a), [batch[1]]);
    assert_eq!(world.get::<Hp>(a), Ok(&Hp(1)));
    assert!(world.has::<Stun>(d));
    // The same edge as `relate`: same data, same components, same answers.
    assert_eq!(world.relation::<ChildOf>(a, ship), Some(&ChildOf(ship)));
    assert_eq!(world.targets::<ChildOf>(e), [ship]);
    assert_eq!(world.ancestors(batch[1]).collect::<Vec<_>>(), [a, ship]);
    // `&ChildOf` and the filters, as queries and in a system.
    let mut expected = vec![
        (a, ship),
        (b, ship),
        (batch[0], ship),
        (batch[1], a),
        (d, ship),
        (e, ship),
    ];
    expected.sort();
    assert_eq!(parents(&mut world), expected);
    let (roots, kids) = world.run_system_once(
        |roots: Query<Entity, Without<ChildOf>>, kids: Query<&ChildOf, With<Hp>>| {
            (roots.iter().collect::<Vec<_>>(), kids.iter().count())
        },
    );
    assert_eq!((roots, kids), (vec![ship], 4));
    world.check_invariants();
}

#[test]
fn relate_keeps_the_data_naming_its_parent() {
    let mut world = World::new();
    let (p, q, child) = (world.spawn(()), world.spawn(()), world.spawn(()));
    // Whatever entity the value names, the edge's data names the target.
    world.relate(child, p, ChildOf(q)).unwrap();
    assert_eq!(world.relation::<ChildOf>(child, p), Some(&ChildOf(p)));
    assert_eq!(parents(&mut world), [(child, p)]);
    world.add_child(q, child).unwrap();
    assert_eq!(parents(&mut world), [(child, q)]);
    // A clone's edge names the same parent.
    let copy = world.clone_entity(child).unwrap();
    assert_eq!(world.relation::<ChildOf>(copy, q), Some(&ChildOf(q)));
    world.check_invariants();
}

#[test]
fn inserting_child_of_reparents() {
    let mut world = World::new();
    let (old, new) = (world.spawn(()), world.spawn(()));
    let kids: Vec<Entity> = (0..4).map(|_| world.spawn(ChildOf(old))).collect();
    // World::insert, with a component beside it.
    world.insert(kids[1], (Hp(5), ChildOf(new))).unwrap();
    assert_eq!(world.parent(kids[1]), Some(new));
    assert_eq!(world.get::<Hp>(kids[1]), Ok(&Hp(5)));
    assert!(!world.children(old).contains(&kids[1]));
    // EntityWorldMut::insert.
    world
        .entity_mut(kids[2])
        .unwrap()
        .insert(ChildOf(new))
        .unwrap();
    // Commands, through `commands.entity(e)`.
    let k3 = kids[3];
    world.run_system_once(move |mut commands: Commands| {
        commands.entity(k3).insert((ChildOf(new), Stun));
    });
    assert_eq!(world.children(new), [kids[1], kids[2], kids[3]]);
    assert_eq!(world.children(old), [kids[0]]);
    assert!(world.has::<Stun>(kids[3]));
    // The same parent again: nothing moves.
    world.insert(kids[0], ChildOf(old)).unwrap();
    assert_eq!(world.children(old), [kids[0]]);
    world.check_invariants();
}

#[test]
fn a_stale_parent_or_a_cycle_changes_nothing() {
    let mut world = World::new();
    let root = world.spawn(());
    let child = world.spawn((Hp(1), ChildOf(root)));
    let gone = world.spawn(());
    world.despawn(gone).unwrap();
    let (len, archetypes) = (world.len(), world.archetype_count());

    // World::insert: an error, and the bundle's components stay out.
    let err = world.insert(root, (Stun, Hp(3), ChildOf(gone)));
    assert_eq!(
        err,
        Err(EntityError::Relation(RelationError::NoSuchEntity(gone)))
    );
    assert!(!world.has::<Hp>(root) && !world.has::<Stun>(root));
    // A cycle: the root under its own child, an entity under itself.
    let err = world.insert(root, (Hp(3), ChildOf(child)));
    assert!(matches!(
        err,
        Err(EntityError::Relation(RelationError::Cycle { entity, target, relation: "ChildOf" }))
            if entity == root && target == child
    ));
    assert!(matches!(
        world.insert(child, ChildOf(child)),
        Err(EntityError::Relation(RelationError::Cycle { .. }))
    ));
    assert_eq!(world.parent(child), Some(root));
    assert!(!world.has::<Hp>(root));
    assert_eq!(
        world.entity_mut(root).unwrap().insert(ChildOf(gone)).err(),
        Some(EntityError::Relation(RelationError::NoSuchEntity(gone)))
    );
    // A stale child is its own error, as for any insert.
    assert_eq!(
        world.insert(gone, ChildOf(root)),
        Err(EntityError::NoSuchEntity(gone))
    );

    // World::spawn returns no Result: it panics, before spawning anything.
    let panic = catch_unwind(AssertUnwindSafe(|| world.spawn((Hp(2), ChildOf(gone))))).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("does not exist"), "{message}");
    assert!(message.contains("nothing was spawned"), "{message}");
    let batch = catch_unwind(AssertUnwindSafe(|| {
        world.spawn_batch([(Hp(2), ChildOf(root)), (Hp(2), ChildOf(gone))])
    }));
    assert!(batch.is_err());
    // The batch's first entity is whole (each spawn is), the second never
    // came: one entity more, with its edge.
    assert_eq!(world.len(), len + 1);
    assert_eq!(world.children(root).len(), 2);
    let extra = world.children(root)[1];
    world.despawn(extra).unwrap();

    // Commands: reported as failed, and a spawned entity does not stay.
    let mut commands = CommandBuffer::new(&world);
    let never = commands.spawn((Hp(9), ChildOf(gone)));
    commands.insert(child, (Stun, ChildOf(gone)));
    commands.insert(root, ChildOf(child));
    let errors = commands.apply(&mut world).unwrap_err();
    let failed: Vec<(usize, CommandError)> = errors.iter().cloned().collect();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert_eq!(
        failed[0],
        (
            0,
            CommandError::Entity(EntityError::Relation(RelationError::NoSuchEntity(gone)))
        )
    );
    assert!(!world.contains(never));
    assert!(!world.has::<Stun>(child));
    assert_eq!(world.parent(child), Some(root));
    // In a system, the same failures are logged and skipped.
    world.run_system_once(move |mut commands: Commands| {
        commands.spawn((Hp(9), ChildOf(gone)));
        commands.entity(child).insert(ChildOf(gone));
    });
    assert_eq!((world.len(), world.archetype_count()), (len, archetypes));
    assert_eq!(world.parent(child), Some(root));
    world.check_invariants();
}

#[test]
#[should_panic(expected = "contains `ChildOf` more than once")]
fn a_bundle_naming_child_of_twice_panics() {
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    world.spawn((ChildOf(a), Hp(1), ChildOf(b)));
}

#[test]
fn hooks_and_observers_of_the_child_see_the_edge() {
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(|t: Trigger<OnAdd<Hp>>, mut w: DeferredWorld| {
        let seen = record(w.world(), t.entity().unwrap());
        w.resource_mut::<Seen>().0.push(seen);
    });
    // The edge's own observers run first, on the whole entity.
    world.observe(|t: Trigger<OnRelate<ChildOf>>, mut w: DeferredWorld| {
        let seen = record(w.world(), t.event().source);
        w.resource_mut::<Seen>().0.push(seen);
    });
    let ship = world.spawn(());
    let first = world.spawn((Hp(1), ChildOf(ship)));
    let second = world.spawn((Hooked, Hp(2), ChildOf(ship)));
    let seen = std::mem::take(&mut world.resource_mut::<Seen>().0);
    assert_eq!(
        seen,
        [
            (first, Some(ship), true, vec![first]),          // OnRelate
            (first, Some(ship), true, vec![first]),          // OnAdd<Hp>
            (second, Some(ship), true, vec![first, second]), // OnRelate
            (second, Some(ship), true, vec![first, second]), // on_add of Hooked
            (second, Some(ship), true, vec![first, second]), // OnAdd<Hp>
        ]
    );
    // An insert into an existing entity, and a command's spawn.
    let loose = world.spawn(());
    world.insert(loose, (Hp(3), ChildOf(first))).unwrap();
    let commanded = world.run_system_once(move |mut commands: Commands| {
        commands.spawn((Hp(4), ChildOf(first))).id()
    });
    let seen = std::mem::take(&mut world.resource_mut::<Seen>().0);
    assert_eq!(
        seen,
        [
            (loose, Some(first), true, vec![loose]),
            (loose, Some(first), true, vec![loose]),
            (commanded, Some(first), true, vec![loose, commanded]),
            (commanded, Some(first), true, vec![loose, commanded]),
        ]
    );
    world.check_invariants();
}

#[test]
fn observers_commands_wait_for_the_whole_spawn() {
    // An `OnRelate` observer despawns what it sees through commands: the
    // spawn's `OnAdd` observers still see the entity, then it goes.
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(|t: Trigger<OnRelate<ChildOf>>, mut w: DeferredWorld| {
        w.commands().despawn(t.event().source);
    });
    world.observe(|t: Trigger<OnAdd<Hp>>, mut w: DeferredWorld| {
        let seen = record(w.world(), t.entity().unwrap());
        w.resource_mut::<Seen>().0.push(seen);
    });
    let p = world.spawn(());
    let c = world.spawn((Hp(1), ChildOf(p)));
    assert_eq!(world.resource::<Seen>().0, [(c, Some(p), true, vec![c])]);
    assert!(!world.contains(c));
    assert!(world.children(p).is_empty());
    world.check_invariants();
}

#[test]
fn spawn_at_takes_child_of() {
    let mut world = World::new();
    let p = world.spawn(());
    let id = world.spawn(()); // the id to spawn at, freed below
    world.despawn(id).unwrap();
    world.spawn_at(id, (Hp(1), ChildOf(p)));
    assert_eq!(world.parent(id), Some(p));
    assert_eq!(world.get::<Hp>(id), Ok(&Hp(1)));
    world.check_invariants();
}

#[test]
fn remove_child_of_unparents() {
    let mut world = World::new();
    let p = world.spawn(());
    let c = world.spawn((Hp(1), ChildOf(p)));
    assert_eq!(world.remove::<ChildOf>(c), Ok(ChildOf(p)));
    assert_eq!(world.parent(c), None);
    assert!(world.children(p).is_empty());
    assert!(matches!(
        world.remove::<ChildOf>(c),
        Err(ComponentError::MissingComponent { component, .. }) if component == "ChildOf"
    ));
    // Bevy's command form.
    world.insert(c, ChildOf(p)).unwrap();
    world.run_system_once(move |mut commands: Commands| {
        commands.entity(c).remove::<ChildOf>();
    });
    assert_eq!(world.parent(c), None);
    let mut handle: EntityWorldMut<'_> = world.entity_mut(c).unwrap();
    assert!(handle.remove::<ChildOf>().is_err());
    assert_eq!(world.get::<Hp>(c), Ok(&Hp(1)));
    // A tuple holding ChildOf is refused before anything changes.
    world.insert(c, ChildOf(p)).unwrap();
    let refused = catch_unwind(AssertUnwindSafe(|| world.remove::<(Hp, ChildOf)>(c)));
    assert!(refused.is_err());
    assert_eq!(world.parent(c), Some(p));
    assert_eq!(world.get::<Hp>(c), Ok(&Hp(1)));
    world.check_invariants();
}

#[test]
fn a_derived_bundle_may_hold_child_of() {
    #[derive(Bundle)]
    struct Turret {
        hp: Hp,
        parent: ChildOf,
    }
    let mut world = World::new();
    let tank = world.spawn(());
    let t = world.spawn(Turret {
        hp: Hp(3),
        parent: ChildOf(tank),
    });
    assert_eq!(world.parent(t), Some(tank));
    assert_eq!(world.get::<Hp>(t), Ok(&Hp(3)));
}
