//! Scenes of worlds with relations, as a user tries them after reading the
//! README: a subset that leaves a target out, relations registered under
//! another name, an unregistered relation, the same scene loaded twice into
//! one world, and edges of the loaded entities used afterwards.

use mosaic::prelude::*;
use mosaic_scene::{Scene, SceneError, TypeRegistry};
use serde::{Deserialize, Serialize};

#[derive(Component, Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Name(String);

#[derive(Relation, Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Owes(u32);

#[derive(Relation, Serialize, Deserialize, Debug, PartialEq, Clone)]
#[relation(one)]
struct Aims;

#[derive(Relation, Debug, PartialEq)]
struct Secret;

fn name(world: &World, e: Entity) -> &str {
    &world.get::<Name>(e).unwrap().0
}

fn by_name(world: &World, n: &str) -> Entity {
    let found: Vec<Entity> = world
        .iter()
        .map(|r| r.id())
        .filter(|&e| world.get::<Name>(e).is_ok_and(|x| x.0 == n))
        .collect();
    assert_eq!(found.len(), 1, "one {n}");
    found[0]
}

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Name>();
    registry
        .register_relation::<ChildOf>()
        .register_relation::<Owes>()
        .register_relation::<Aims>();
    registry
}

/// root <- a <- b, a owes root 3, b aims at root.
fn build(world: &mut World) -> [Entity; 3] {
    let root = world.spawn(Name("root".into()));
    let a = world.spawn_child(root, Name("a".into())).unwrap();
    let b = world.spawn_child(a, Name("b".into())).unwrap();
    world.relate(a, root, Owes(3)).unwrap();
    world.relate(b, root, Aims).unwrap();
    [root, a, b]
}

#[test]
fn a_subset_without_the_targets_is_refused_on_load_changing_nothing() {
    let registry = registry();
    let mut world = World::new();
    let [root, a, b] = build(&mut world);
    // Documented: an edge to an entity left out makes the load fail.
    let scene = Scene::from_entities(&world, &registry, [a, b]).unwrap();
    let text = scene.to_ron_string().unwrap();
    let mut other = World::new();
    let keep = other.spawn(Name("keep".into()));
    let err = Scene::from_ron_str(&text)
        .unwrap()
        .spawn_into(&mut other, &registry)
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::DanglingReference { id, .. } if *id == root.scene_id()),
        "{err}"
    );
    assert_eq!(other.len(), 1);
    assert!(other.contains(keep));
    other.check_invariants();

    // The targets without their sources: they load, with no edges.
    let scene = Scene::from_entities(&world, &registry, [root]).unwrap();
    let map = scene.spawn_into(&mut other, &registry).unwrap();
    let root2 = map[root.scene_id()];
    assert_eq!(name(&other, root2), "root");
    assert!(other.children(root2).is_empty());
    assert!(other.sources::<Owes>(root2).is_empty());
    assert!(other.sources::<Aims>(root2).is_empty());
    other.check_invariants();
    // And the whole group, into the same world: a second, separate tree.
    let scene = Scene::from_entities(&world, &registry, [b, a, root]).unwrap();
    let map = scene.spawn_into(&mut other, &registry).unwrap();
    let (r, x, y) = (map[root.scene_id()], map[a.scene_id()], map[b.scene_id()]);
    assert_eq!(other.children(r), [x]);
    assert_eq!(other.children(x), [y]);
    assert_eq!(other.relation::<Owes>(x, r), Some(&Owes(3)));
    assert_eq!(other.targets::<Aims>(y), [r]);
    assert!(other.children(root2).is_empty());
    other.check_invariants();
}

#[test]
fn relations_registered_under_another_name() {
    let mut registry = TypeRegistry::new();
    registry.register::<Name>();
    registry
        .register_relation_as::<ChildOf>("parent")
        .register_relation_as::<Owes>("debts");
    let mut world = World::new();
    let [root, a, _] = build(&mut world);
    let scene = Scene::from_world(&world, &registry).unwrap();
    // Aims is not registered: skipped.
    assert_eq!(
        scene.skipped().get("Aims"),
        Some(&1),
        "{:?}",
        scene.skipped()
    );
    let text = scene.to_ron_string().unwrap();
    assert!(text.contains("\"parent\": [("), "{text}");
    assert!(text.contains("\"debts\": [("), "{text}");
    assert!(!text.contains("ChildOf"), "{text}");

    for _ in 0..2 {
        let mut other = World::new();
        other.spawn(());
        let map = Scene::from_ron_str(&text)
            .unwrap()
            .spawn_into(&mut other, &registry)
            .unwrap();
        let (r, x) = (map[root.scene_id()], map[a.scene_id()]);
        assert_eq!(other.parent(x), Some(r));
        assert_eq!(other.relation::<Owes>(x, r), Some(&Owes(3)));
        other.check_invariants();
    }

    // A registry that knows the relation under its default name does not
    // read the file's: an unknown component, and the world unchanged.
    let mut other = World::new();
    let err = Scene::from_ron_str(&text)
        .unwrap()
        .spawn_into(&mut other, &self::registry())
        .unwrap_err();
    assert!(matches!(err, SceneError::UnknownComponent { .. }), "{err}");
    assert!(other.is_empty());
}

#[test]
fn an_unregistered_relation_is_reported_skipped() {
    let registry = registry();
    let mut world = World::new();
    let [root, a, _] = build(&mut world);
    world.relate(a, root, Secret).unwrap();
    let scene = Scene::from_world(&world, &registry).unwrap();
    assert_eq!(
        scene.skipped().get("Secret"),
        Some(&1),
        "{:?}",
        scene.skipped()
    );
    let mut other = World::new();
    scene.spawn_into(&mut other, &registry).unwrap();
    let (r2, a2) = (by_name(&other, "root"), by_name(&other, "a"));
    assert!(!other.has_relation::<Secret>(a2, r2));
    assert_eq!(other.parent(a2), Some(r2));
    other.check_invariants();
}

/// An unregistered relation's edges live in two components (`Relation<R>`
/// on the sources, `Sources<R>` on the targets), but they are one thing the
/// registry lacks: the report lists it once, under the relation's name,
/// counting the entities whose edges were left out (its sources).
#[test]
fn an_unregistered_relation_is_listed_once_by_its_name() {
    let registry = registry();
    let mut world = World::new();
    let [root, a, b] = build(&mut world);
    // Two sources (a with two edges, b with one), three targets.
    world.relate(a, root, Secret).unwrap();
    world.relate(a, b, Secret).unwrap();
    world.relate(b, a, Secret).unwrap();
    let scene = Scene::from_world(&world, &registry).unwrap();
    let expected: std::collections::BTreeMap<String, usize> = [("Secret".to_owned(), 2)].into();
    assert_eq!(scene.skipped(), &expected);

    // With nothing registered, each relation is one row too, beside the
    // plain component.
    let scene = Scene::from_world(&world, &TypeRegistry::new()).unwrap();
    let expected: std::collections::BTreeMap<String, usize> = [
        ("Aims".to_owned(), 1),
        ("ChildOf".to_owned(), 2),
        ("Name".to_owned(), 3),
        ("Owes".to_owned(), 1),
        ("Secret".to_owned(), 2),
    ]
    .into();
    assert_eq!(scene.skipped(), &expected);
}

#[test]
fn loaded_edges_are_edges_like_any() {
    let registry = registry();
    let mut world = World::new();
    build(&mut world);
    let bytes = Scene::from_world(&world, &registry)
        .unwrap()
        .to_binary()
        .unwrap();
    let mut other = World::new();
    Scene::from_binary(&bytes)
        .unwrap()
        .spawn_into(&mut other, &registry)
        .unwrap();
    Scene::from_binary(&bytes)
        .unwrap()
        .spawn_into(&mut other, &registry)
        .unwrap();
    other.check_invariants();
    assert_eq!(other.len(), 6);
    let roots: Vec<Entity> = other
        .iter()
        .map(|r| r.id())
        .filter(|&e| name(&other, e) == "root")
        .collect();
    assert_eq!(roots.len(), 2);
    for &r in &roots {
        assert_eq!(other.descendants(r).count(), 2);
        let leaf = other.descendants(r).last().unwrap();
        assert_eq!(other.root_ancestor(leaf), r);
        assert_eq!(other.targets::<Aims>(leaf), [r]);
    }
    other.despawn_recursive(roots[0]).unwrap();
    other.check_invariants();
    assert_eq!(other.len(), 3);
    assert_eq!(other.descendants(roots[1]).count(), 2);
}
