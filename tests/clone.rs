//! `World::clone_entity`: per-component clone, fresh value or skip.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;
use mosaic::{CloneBehavior, ComponentSchema, FieldType, FieldValue};

#[derive(Component, Clone, Debug, PartialEq)]
struct Hp(u32);

#[derive(Component, Clone, Debug, PartialEq)]
#[component(storage = "sparse")]
struct Poisoned(u8);

/// Not `Clone`: the documented choice is that copies do not get it.
#[derive(Component, Debug)]
struct Handle(Arc<AtomicUsize>);

/// `Clone`, but told to be skipped.
#[derive(Component, Clone, Debug)]
#[component(clone = "skip")]
struct Selected;

/// Copies get a fresh value.
#[derive(Component, Default, Debug, PartialEq)]
#[component(clone = "default")]
struct Cooldown(u32);

/// Generic: skipped unless it says otherwise.
#[derive(Component, Clone, Debug, PartialEq)]
struct Tagged<T: Send + Sync + 'static>(T);

/// Generic, cloned on request.
#[derive(Component, Clone, Debug, PartialEq)]
#[component(clone = "clone")]
struct Labelled<T: Clone + Send + Sync + 'static>(T);

#[test]
fn each_component_follows_its_behavior() {
    let handles = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let e = world.spawn((
        Hp(10),
        Poisoned(2),
        Handle(handles.clone()),
        Selected,
        Cooldown(7),
        Tagged(1u8),
        Labelled("x"),
    ));
    let copy = world.clone_entity(e).unwrap();
    world.check_invariants();
    assert_ne!(copy, e);
    assert_eq!(world.get::<Hp>(copy), Ok(&Hp(10)));
    assert_eq!(world.get::<Poisoned>(copy), Ok(&Poisoned(2)));
    assert!(!world.has::<Handle>(copy), "not Clone: skipped");
    assert!(!world.has::<Selected>(copy), "clone = skip");
    assert_eq!(world.get::<Cooldown>(copy), Ok(&Cooldown(0)));
    assert!(!world.has::<Tagged<u8>>(copy), "generic: skipped");
    assert_eq!(world.get::<Labelled<&str>>(copy), Ok(&Labelled("x")));
    // The original is untouched.
    assert_eq!(world.get::<Cooldown>(e), Ok(&Cooldown(7)));
    assert!(world.has::<Handle>(e));
    assert_eq!(Arc::strong_count(&handles), 2);

    let info = |w: &World, id| w.component_info(id).unwrap().is_cloned();
    let hp = world.component_id::<Hp>().unwrap();
    let handle = world.component_id::<Handle>().unwrap();
    assert!(info(&world, hp));
    assert!(!info(&world, handle));
}

#[test]
fn a_world_overrides_a_behavior() {
    let mut world = World::new();
    world.set_clone_behavior::<Hp>(CloneBehavior::Skip);
    world.set_clone_behavior::<Handle>(CloneBehavior::Clone(|h: &Handle| Handle(h.0.clone())));
    let count = Arc::new(AtomicUsize::new(0));
    let e = world.spawn((Hp(1), Handle(count.clone())));
    let copy = world.clone_entity(e).unwrap();
    assert!(!world.has::<Hp>(copy));
    assert!(Arc::ptr_eq(&world.get::<Handle>(copy).unwrap().0, &count));
}

#[test]
fn clone_into_another_world_and_stale_handles() {
    let mut a = World::new();
    let mut b = World::new();
    b.spawn(Hp(0));
    let schema = ComponentSchema::new("Mana").field("max", FieldType::Int);
    a.register_dynamic_component(schema.clone()).unwrap();
    let e = a.spawn((Hp(4), Poisoned(1), Disabled));
    a.insert_dynamic(
        e,
        schema.instantiate([("max", FieldValue::Int(3))]).unwrap(),
    )
    .unwrap();
    let copy = a.clone_entity_to(e, &mut b).unwrap();
    b.check_invariants();
    assert_eq!(b.get::<Hp>(copy), Ok(&Hp(4)));
    assert_eq!(b.get::<Poisoned>(copy), Ok(&Poisoned(1)));
    assert!(b.is_disabled(copy), "Disabled is cloned like any marker");
    assert_eq!(
        b.get_dynamic(copy, "Mana").unwrap().get("max"),
        Some(&FieldValue::Int(3))
    );
    assert!(a.contains(e));

    a.despawn(e).unwrap();
    assert_eq!(a.clone_entity(e), Err(EntityError::NoSuchEntity(e)));
    assert_eq!(
        a.clone_entity_to(e, &mut b),
        Err(EntityError::NoSuchEntity(e))
    );
    assert_eq!(b.len(), 2);
}

#[test]
fn a_panicking_clone_changes_nothing() {
    #[derive(Component, Debug)]
    struct Fragile;
    let mut world = World::new();
    world.set_clone_behavior::<Fragile>(CloneBehavior::Clone(|_| panic!("no copies")));
    let e = world.spawn((Hp(1), Fragile));
    let before = world.len();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.clone_entity(e)));
    assert!(result.is_err());
    assert_eq!(world.len(), before);
    world.check_invariants();
    let _ = Ordering::SeqCst;
}

/// Issue #39, item 2: the copy is spawned whole, in one move.
#[test]
fn a_copy_is_whole_when_its_hooks_run_or_panic() {
    #[derive(Component, Clone, Debug, PartialEq)]
    struct Armor(u32);
    #[derive(Component, Clone, Debug, PartialEq)]
    struct Speed(u32);
    #[derive(Relation, Clone)]
    struct Likes;
    let mut world = World::new();
    let friend = world.spawn(());
    let e = world.spawn((Hp(3), Armor(2), Speed(1), Poisoned(4)));
    world.relate(e, friend, Likes).unwrap();
    let archetypes = world.archetype_count();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    world.observe(move |t: Trigger<OnAdd<Hp>>, w: DeferredWorld| {
        let c = t.entity().unwrap();
        if w.get::<Armor>(c).is_ok() && w.get::<Speed>(c).is_ok() && w.get::<Poisoned>(c).is_ok() {
            s.fetch_add(1, Ordering::SeqCst);
        }
    });
    let copy = world.clone_entity(e).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    // No stop on the way: the copy's archetype is the original's.
    assert_eq!(world.archetype_count(), archetypes);
    assert_eq!(world.get::<Speed>(copy), Ok(&Speed(1)));

    world
        .register_component_hooks::<Armor>()
        .on_add(|_, _| panic!("armor hook"));
    let before = world.len();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.clone_entity(e)));
    assert!(result.is_err());
    world.check_invariants();
    // As a static spawn: the copy stays, whole, with its edges.
    assert_eq!(world.len(), before + 1);
    let mut q = world.query::<(Entity, &Hp, &Armor, &Speed, &Poisoned)>();
    let copies: Vec<Entity> = q.iter(&world).map(|(c, ..)| c).collect();
    assert_eq!(copies.len(), 3);
    assert_eq!(world.sources::<Likes>(friend).len(), 3);
}
