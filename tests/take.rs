//! `World::take`, `exchange`, `EntityBuilder` and `DynamicBundle`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;
use mosaic::{ComponentSchema, FieldType, FieldValue};

/// Counts its drops.
#[derive(Component, Debug)]
struct Counted(u32, Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// Counts its drops; sparse storage.
#[derive(Component, Debug)]
#[component(storage = "sparse")]
struct SparseCounted(u32, Arc<AtomicUsize>);

impl Drop for SparseCounted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Component, Debug, Clone, PartialEq)]
struct Name(String);

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(f32, f32);

fn drops(c: &Arc<AtomicUsize>) -> usize {
    c.load(Ordering::SeqCst)
}

#[test]
fn take_then_spawn_elsewhere_moves_every_component_once() {
    let table = Arc::new(AtomicUsize::new(0));
    let sparse = Arc::new(AtomicUsize::new(0));
    let mut a = World::new();
    let other = a.spawn(Pos(0.0, 0.0));
    let e = a.spawn((
        Counted(1, table.clone()),
        SparseCounted(2, sparse.clone()),
        Name("orc".into()),
        Pos(1.0, 2.0),
    ));
    let taken = a.take(e).unwrap();
    a.check_invariants();
    assert!(!a.contains(e));
    assert!(a.contains(other));
    assert_eq!(drops(&table), 0);
    assert_eq!(drops(&sparse), 0);
    assert_eq!(taken.len(), 4);
    assert_eq!(taken.get::<Name>(), Some(&Name("orc".into())));
    assert_eq!(taken.get::<Pos>(), Some(&Pos(1.0, 2.0)));
    let mut names = taken.component_names();
    names.sort();
    assert_eq!(names, ["Counted", "Name", "Pos", "SparseCounted"]);
    assert!(format!("{taken:?}").contains("Counted"));

    let mut b = World::new();
    let moved = b.spawn(taken);
    b.check_invariants();
    assert_eq!(drops(&table), 0, "moved, not dropped");
    assert_eq!(drops(&sparse), 0);
    assert_eq!(b.get::<Counted>(moved).unwrap().0, 1);
    assert_eq!(b.get::<SparseCounted>(moved).unwrap().0, 2);
    assert_eq!(b.get::<Name>(moved), Ok(&Name("orc".into())));
    assert_eq!(b.get::<Pos>(moved), Ok(&Pos(1.0, 2.0)));
    drop(b);
    assert_eq!(drops(&table), 1);
    assert_eq!(drops(&sparse), 1);
    drop(a);
    assert_eq!(drops(&table), 1, "nothing dropped twice");
    assert_eq!(drops(&sparse), 1);
}

#[test]
fn a_dropped_take_drops_each_component_once() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let e = world.spawn((Counted(1, count.clone()), SparseCounted(2, count.clone())));
    let mut taken = world.take(e).unwrap();
    let one = taken.remove::<Counted>().unwrap();
    assert_eq!(one.0, 1);
    assert!(!taken.has::<Counted>() && taken.has::<SparseCounted>());
    drop(taken);
    assert_eq!(drops(&count), 1);
    drop(one);
    assert_eq!(drops(&count), 2);
    drop(world);
    assert_eq!(drops(&count), 2);
}

#[test]
fn take_of_a_stale_entity_changes_nothing() {
    let mut world = World::new();
    let e = world.spawn(Pos(1.0, 1.0));
    let keep = world.spawn(Pos(2.0, 2.0));
    world.despawn(e).unwrap();
    assert_eq!(world.take(e).unwrap_err(), EntityError::NoSuchEntity(e));
    assert_eq!(world.len(), 1);
    assert_eq!(world.get::<Pos>(keep), Ok(&Pos(2.0, 2.0)));
    // An empty entity takes as an empty bundle.
    let empty = world.spawn(());
    let taken = world.take(empty).unwrap();
    assert!(taken.is_empty());
    let again = world.spawn(taken);
    assert!(world.contains(again));
}

#[test]
fn take_keeps_the_disabled_marker_and_runtime_components() {
    let mut a = World::new();
    let mana = ComponentSchema::new("Mana").field("max", FieldType::Int);
    a.register_dynamic_component(mana.clone()).unwrap();
    let e = a.spawn((Pos(1.0, 0.0), Disabled));
    a.insert_dynamic(e, mana.instantiate([("max", FieldValue::Int(5))]).unwrap())
        .unwrap();
    let taken = a.take(e).unwrap();
    assert_eq!(taken.len(), 3);
    let mut b = World::new();
    let moved = b.spawn(taken);
    b.check_invariants();
    assert!(b.is_disabled(moved));
    assert_eq!(
        b.get_dynamic(moved, "Mana").unwrap().get("max"),
        Some(&FieldValue::Int(5))
    );
    let mut q = b.query::<&Pos>();
    assert_eq!(q.iter(&b).count(), 0, "still disabled in its new world");
}

#[test]
fn take_runs_removal_observers() {
    let mut world = World::new();
    let removed = Arc::new(AtomicUsize::new(0));
    let r = removed.clone();
    world.observe(move |_: Trigger<OnRemove<Pos>>, _: DeferredWorld| {
        r.fetch_add(1, Ordering::SeqCst);
    });
    let e = world.spawn(Pos(0.0, 0.0));
    let taken = world.take(e).unwrap();
    assert_eq!(removed.load(Ordering::SeqCst), 1);
    assert_eq!(taken.len(), 1);
}

#[test]
fn exchange_swaps_bundles_or_changes_nothing() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let e = world.spawn((Pos(1.0, 1.0), Name("a".into())));
    let old: (Pos, Name) = world
        .exchange::<(Pos, Name), _>(e, Counted(7, count.clone()))
        .unwrap();
    assert_eq!(old, (Pos(1.0, 1.0), Name("a".into())));
    assert!(!world.has::<Pos>(e) && !world.has::<Name>(e));
    assert_eq!(world.get::<Counted>(e).unwrap().0, 7);

    // The entity lacks `Pos`: nothing changes, the new value is dropped once.
    let err = world
        .exchange::<Pos, _>(e, Counted(8, count.clone()))
        .unwrap_err();
    assert!(matches!(err, ComponentError::MissingComponent { .. }));
    assert_eq!(drops(&count), 1);
    assert_eq!(world.get::<Counted>(e).unwrap().0, 7);

    // Single components; and a stale handle.
    let f = world.spawn(Pos(0.0, 0.0));
    assert_eq!(
        world.exchange_one::<Pos, Name>(f, Name("b".into())),
        Ok(Pos(0.0, 0.0))
    );
    world.despawn(f).unwrap();
    assert_eq!(
        world.exchange_one::<Name, Pos>(f, Pos(0.0, 0.0)),
        Err(ComponentError::NoSuchEntity(f))
    );
    world.check_invariants();
}

#[test]
fn an_entity_builder_builds_and_is_reused() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let mut builder = EntityBuilder::new();
    builder.add(Pos(1.0, 1.0)).add(Counted(1, count.clone()));
    // Adding a type again replaces (and drops) the old value.
    builder.add(Counted(2, count.clone()));
    assert_eq!(drops(&count), 1);
    assert_eq!(builder.len(), 2);
    assert_eq!(builder.get::<Counted>().unwrap().0, 2);
    let a = world.spawn(builder.build());
    assert!(builder.is_empty());
    builder.add_bundle((Name("x".into()), Pos(3.0, 3.0)));
    let b = world.spawn(builder.build());
    assert_eq!(world.get::<Counted>(a).unwrap().0, 2);
    assert_eq!(world.get::<Pos>(a), Ok(&Pos(1.0, 1.0)));
    assert_eq!(world.get::<Name>(b), Ok(&Name("x".into())));
    assert!(!world.has::<Counted>(b));

    // Into an existing entity, and a stale one.
    builder.add(Name("y".into()));
    world.insert(a, builder.build()).unwrap();
    assert_eq!(world.get::<Name>(a), Ok(&Name("y".into())));
    world.despawn(b).unwrap();
    builder.add(Counted(3, count.clone()));
    assert_eq!(
        world.insert(b, builder.build()),
        Err(EntityError::NoSuchEntity(b))
    );
    assert_eq!(drops(&count), 2, "the refused value is dropped once");
    world.check_invariants();
    drop(world);
    assert_eq!(drops(&count), 3);
}

#[test]
fn spawn_takes_any_dynamic_bundle() {
    fn spawn_all(world: &mut World, parts: Vec<BuiltEntity>) -> Vec<Entity> {
        parts.into_iter().map(|p| world.spawn(p)).collect()
    }
    let mut world = World::new();
    let parts = (0..3)
        .map(|i| {
            let mut b = EntityBuilder::new();
            b.add(Pos(i as f32, 0.0));
            b.build()
        })
        .collect();
    let es = spawn_all(&mut world, parts);
    assert_eq!(world.get::<Pos>(es[2]), Ok(&Pos(2.0, 0.0)));
    let mut q = world.query::<&Pos>();
    assert_eq!(q.iter(&world).count(), 3);
}

use mosaic::BuiltEntity;

#[test]
fn take_leaves_relation_edges_behind_and_both_ends_clean() {
    #[derive(Component, Debug, PartialEq)]
    struct Hp(u32);
    let mut world = World::new();
    let parent = world.spawn(Hp(1));
    let child = world.spawn_child(parent, Hp(2)).unwrap();
    let grandchild = world.spawn_child(child, Hp(3)).unwrap();
    let taken = world.take(child).unwrap();
    world.check_invariants();
    assert!(world.children(parent).is_empty(), "the parent forgot it");
    assert_eq!(world.parent(grandchild), None, "its child was unparented");

    // Spawned elsewhere it is its components only, with no edge naming
    // the first world's entities.
    let mut other = World::new();
    let copy = other.spawn(taken);
    other.check_invariants();
    assert_eq!(other.get::<Hp>(copy), Ok(&Hp(2)));
    assert_eq!(other.parent(copy), None);
    assert_eq!(other.entity(copy).unwrap().component_ids().len(), 1);
}

// ----- one structural change for run-time bundles (issue #39, item 1) -------

#[derive(Component, Debug, Clone, PartialEq)]
struct Hp(u32);
#[derive(Component, Debug, Clone, PartialEq)]
struct Armor(u32);
#[derive(Component, Debug, Clone, PartialEq)]
struct Speed(u32);
#[derive(Component, Debug, Clone, PartialEq)]
#[component(storage = "sparse")]
struct Stunned;

fn built_hp_armor_speed() -> mosaic::BuiltEntity {
    EntityBuilder::new()
        .add(Hp(10))
        .add(Armor(2))
        .add(Speed(3))
        .build()
}

#[test]
fn a_built_entity_makes_the_archetypes_the_static_bundle_makes() {
    let mut built = World::new();
    let e = built.spawn(built_hp_armor_speed());
    let mut fixed = World::new();
    fixed.spawn((Hp(10), Armor(2), Speed(3)));
    // The empty archetype and the entity's: no stop on the way.
    assert_eq!(built.archetype_count(), fixed.archetype_count());
    assert_eq!(built.archetype_count(), 2);
    assert_eq!(built.get::<Speed>(e), Ok(&Speed(3)));
    // An insert of run-time parts moves once too.
    let other = built.spawn(Hp(1));
    built
        .insert(
            other,
            EntityBuilder::new()
                .add(Armor(1))
                .add(Speed(1))
                .add(Stunned)
                .build(),
        )
        .unwrap();
    assert_eq!(built.archetype_count(), 3);
    assert!(built.has::<Stunned>(other));
    built.check_invariants();
}

#[test]
fn an_observer_of_one_part_sees_the_whole_built_entity() {
    let mut world = World::new();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    world.observe(move |t: Trigger<OnAdd<Hp>>, w: DeferredWorld| {
        let e = t.entity().unwrap();
        if w.get::<Armor>(e).is_ok() && w.get::<Speed>(e).is_ok() && w.get::<Stunned>(e).is_ok() {
            s.fetch_add(1, Ordering::SeqCst);
        }
    });
    let s = seen.clone();
    world.observe(move |t: Trigger<OnSpawn>, w: DeferredWorld| {
        if w.get::<Hp>(t.entity().unwrap()).is_ok() {
            s.fetch_add(10, Ordering::SeqCst);
        }
    });
    let mut builder = EntityBuilder::new();
    builder.add(Hp(1)).add(Armor(1)).add(Speed(1)).add(Stunned);
    world.spawn(builder.build());
    assert_eq!(seen.load(Ordering::SeqCst), 11);
    // `spawn_at` announces the spawn once the components are there.
    let id = Entity::from_bits((1 << 32) | 7).unwrap();
    builder.add(Hp(2)).add(Armor(2)).add(Speed(2)).add(Stunned);
    world.spawn_at(id, builder.build());
    assert_eq!(seen.load(Ordering::SeqCst), 22);
    world.spawn_at(
        Entity::from_bits((1 << 32) | 9).unwrap(),
        (Hp(3), Armor(3), Speed(3), Stunned),
    );
    assert_eq!(seen.load(Ordering::SeqCst), 33);
    world.check_invariants();
}

#[test]
fn a_panicking_hook_leaves_the_built_entity_whole() {
    let mut world = World::new();
    world
        .register_component_hooks::<Hp>()
        .on_add(|_, _| panic!("hp hook"));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn(built_hp_armor_speed());
    }));
    assert!(caught.is_err());
    world.check_invariants();
    // As a static bundle's spawn: the entity is whole, the panic went on.
    assert_eq!(world.len(), 1);
    let mut q = world.query::<(&Hp, &Armor, &Speed)>();
    assert_eq!(q.iter(&world).count(), 1);
}

#[test]
fn a_built_entity_brings_its_requirements_in_the_same_move() {
    #[derive(Component, Debug, Default, PartialEq)]
    struct Mass(u32);
    #[derive(Component, Debug, PartialEq)]
    #[require(Mass)]
    struct Body;
    let mut world = World::new();
    let e = world.spawn(EntityBuilder::new().add(Body).add(Hp(1)).build());
    assert_eq!(world.get::<Mass>(e), Ok(&Mass(0)));
    assert_eq!(world.archetype_count(), 2);
    world.check_invariants();
}

#[test]
fn a_panicking_requirement_leaves_no_built_entity() {
    #[derive(Component, Debug, PartialEq)]
    #[require(Armor = boom())]
    struct Fragile;
    fn boom() -> Armor {
        panic!("no armor")
    }
    let mut world = World::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn(EntityBuilder::new().add(Fragile).add(Counted(1, d)).build());
    }));
    assert!(caught.is_err());
    assert_eq!(world.len(), 0);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    world.check_invariants();
}

/// Over-aligned: kept apart from the builder's buffer.
#[derive(Component, Debug, PartialEq)]
#[repr(align(64))]
struct Aligned(u64);

/// Zero-sized.
#[derive(Component, Debug, PartialEq)]
struct Marker;

/// Bigger than the builder's inline room.
#[derive(Component, Debug, PartialEq)]
struct Big([u64; 32]);

#[test]
fn a_builder_holds_any_layout_and_drops_each_value_once() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let mut builder = EntityBuilder::new();
    for round in 0..3u32 {
        builder
            .add(Counted(round, count.clone()))
            .add(Aligned(7))
            .add(Marker)
            .add(Big([round as u64; 32]))
            .add(Name(format!("n{round}")))
            .add(SparseCounted(round, count.clone()))
            .add(Pos(1.0, 2.0));
        assert_eq!(builder.get::<Aligned>(), Some(&Aligned(7)));
        assert_eq!(builder.get::<Big>().unwrap().0[31], round as u64);
        builder.get_mut::<Pos>().unwrap().0 = round as f32;
        assert_eq!(builder.remove::<Marker>(), Some(Marker));
        builder.add(Marker);
        if round == 1 {
            // A built entity dropped unspawned drops its values once.
            drop(builder.build());
            assert_eq!(drops(&count), 2);
            continue;
        }
        let e = world.spawn(builder.build());
        assert_eq!(world.get::<Aligned>(e), Ok(&Aligned(7)));
        assert_eq!(world.get::<Big>(e).unwrap().0[0], round as u64);
        assert_eq!(world.get::<Name>(e), Ok(&Name(format!("n{round}"))));
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(round as f32, 2.0)));
        assert_eq!(world.get::<SparseCounted>(e).unwrap().0, round);
        assert!(world.has::<Marker>(e));
    }
    world.check_invariants();
    assert_eq!(drops(&count), 2, "spawned values are not dropped");
    drop(world);
    assert_eq!(drops(&count), 6);
}

/// A component whose `on_replace` hook logs the value being replaced.
#[derive(Component)]
#[component(on_replace = log_replaced)]
struct Watched(u32);

#[derive(Resource, Default)]
struct Replaced(Vec<u32>);

fn log_replaced(mut world: mosaic::DeferredWorld, context: mosaic::HookContext) {
    let old = world.get::<Watched>(context.entity).unwrap().0;
    world.resource_mut::<Replaced>().0.push(old);
}

#[test]
fn a_built_insert_runs_on_replace_hooks_as_a_static_insert_does() {
    let mut world = World::new();
    world.init_resource::<Replaced>();
    let e = world.spawn(Watched(1));
    world.insert(e, Watched(2)).unwrap();
    assert_eq!(world.resource::<Replaced>().0, [1], "static insert");
    world
        .insert(
            e,
            EntityBuilder::new()
                .add(Watched(3))
                .add(Pos(0.0, 0.0))
                .build(),
        )
        .unwrap();
    assert_eq!(
        world.resource::<Replaced>().0,
        [1, 2],
        "the builder's insert replaces 2 and its hook sees it first"
    );
    assert_eq!(world.get::<Watched>(e).unwrap().0, 3);
    // A taken entity inserted over its own kind replaces too (the take
    // itself runs the hook of the value it removes, 9, as a removal does).
    let other = world.spawn(Watched(9));
    let taken = world.take(other).unwrap();
    assert_eq!(world.resource::<Replaced>().0, [1, 2, 9]);
    world.insert(e, taken).unwrap();
    assert_eq!(world.resource::<Replaced>().0, [1, 2, 9, 3]);
    assert_eq!(world.get::<Watched>(e).unwrap().0, 9);
}

/// A world remembers how each list of types spawns (issue #39, the
/// builder's speed): the plans must stay true when the lists alternate,
/// when one holds a sparse or an over-aligned value, and when a hook or an
/// observer arrives after a plan was made.
#[test]
fn builders_of_alternating_shapes_spawn_as_static_bundles_do_and_see_later_hooks() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut built = World::new();
    let mut fixed = World::new();
    let mut builder = EntityBuilder::new();
    for round in 0..6u32 {
        let e = if round % 2 == 0 {
            builder
                .add(Hp(round))
                .add(SparseCounted(round, count.clone()))
                .add(Pos(round as f32, 0.0));
            fixed.spawn((
                Hp(round),
                SparseCounted(round, count.clone()),
                Pos(round as f32, 0.0),
            ));
            built.spawn(builder.build())
        } else {
            // The same types in another order: another list, another plan,
            // the same archetype.
            builder
                .add(Pos(round as f32, 1.0))
                .add(Aligned(round as u64))
                .add(Hp(round));
            fixed.spawn((Pos(round as f32, 1.0), Aligned(round as u64), Hp(round)));
            built.spawn(builder.build())
        };
        assert_eq!(built.get::<Hp>(e), Ok(&Hp(round)));
        assert_eq!(built.get::<Pos>(e).unwrap().0, round as f32);
        assert_eq!(built.has::<Aligned>(e), round % 2 == 1);
        assert_eq!(built.has::<SparseCounted>(e), round % 2 == 0);
    }
    assert_eq!(built.archetype_count(), fixed.archetype_count());
    built.check_invariants();

    // Both lists have plans now; a hook and an observer that come later
    // are run all the same, each seeing the whole entity.
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    built.observe(move |t: Trigger<OnAdd<Pos>>, w: DeferredWorld| {
        if w.get::<Hp>(t.entity().unwrap()).is_ok() {
            s.fetch_add(1, Ordering::SeqCst);
        }
    });
    built
        .register_component_hooks::<Aligned>()
        .on_add(|mut w, e| w.get_mut::<Hp>(e).unwrap().0 += 100);
    let a = built.spawn(
        EntityBuilder::new()
            .add(Hp(1))
            .add(SparseCounted(9, count.clone()))
            .add(Pos(0.0, 0.0))
            .build(),
    );
    let b = built.spawn(
        EntityBuilder::new()
            .add(Pos(0.0, 1.0))
            .add(Aligned(3))
            .add(Hp(2))
            .build(),
    );
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    assert_eq!(built.get::<Hp>(a), Ok(&Hp(1)));
    assert_eq!(built.get::<Hp>(b), Ok(&Hp(102)));
    assert_eq!(built.archetype_count(), fixed.archetype_count());
    built.check_invariants();
    drop(built);
    drop(fixed);
    assert_eq!(drops(&count), 3 + 3 + 1);
}
