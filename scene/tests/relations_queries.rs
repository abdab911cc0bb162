//! Scenes with relations, seen the way the rest of a program sees them
//! after a load: `one` and many-target relations with data through queries,
//! change detection and a parent-first cache; a scene loaded into the world
//! it was saved from; prefab edges overridden by an entity's own; and a
//! prefab spawned after its edge's target went.

use mosaic::prelude::*;
use mosaic_scene::{Scene, SpawnPrefab, TypeRegistry};
use serde::{Deserialize, Serialize};

#[derive(Component, Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Name(String);

#[derive(Relation, Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Owes(u32);

#[derive(Relation, Serialize, Deserialize, Debug, PartialEq, Clone)]
#[relation(one)]
struct Aims(String);

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Name>();
    registry
        .register_relation::<ChildOf>()
        .register_relation::<Owes>()
        .register_relation::<Aims>();
    registry
}

fn name(world: &World, e: Entity) -> String {
    world.get::<Name>(e).unwrap().0.clone()
}

/// root <- a <- b, root <- c; a owes root 3 and c 4; b aims at c.
fn build(world: &mut World) -> Vec<Entity> {
    let root = world.spawn(Name("root".into()));
    let a = world.spawn_child(root, Name("a".into())).unwrap();
    let b = world.spawn_child(a, Name("b".into())).unwrap();
    let c = world.spawn_child(root, Name("c".into())).unwrap();
    world.relate(a, root, Owes(3)).unwrap();
    world.relate(a, c, Owes(4)).unwrap();
    world.relate(b, c, Aims("c".into())).unwrap();
    vec![root, a, b, c]
}

/// Every edge of `world`, by names, with data: the same in every copy.
fn edges(world: &World) -> Vec<String> {
    let mut out = Vec::new();
    for r in world.iter() {
        let e = r.id();
        let n = name(world, e);
        if let Some(p) = world.parent(e) {
            out.push(format!("{n} childof {}", name(world, p)));
        }
        if let Ok(rel) = world.get::<Relation<Owes>>(e) {
            for (t, d) in rel.iter() {
                out.push(format!("{n} owes {} {}", name(world, t), d.0));
            }
        }
        if let Ok(rel) = world.get::<Relation<Aims>>(e) {
            out.push(format!(
                "{n} aims {} {}",
                name(world, rel.target()),
                rel.data()[0].0
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn loaded_edges_are_seen_by_queries_change_detection_and_parent_first() {
    let registry = registry();
    let mut world = World::new();
    build(&mut world);
    let want = edges(&world);
    let bytes = Scene::from_world(&world, &registry)
        .unwrap()
        .to_binary()
        .unwrap();
    let text = Scene::from_world(&world, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    for binary in [true, false] {
        let mut other = World::new();
        other.spawn(Name("outsider".into()));
        let mut order = ParentFirst::<ChildOf>::new();
        assert!(order.get(&other).is_empty());
        let mut added = other.query_filtered::<Entity, Added<Relation<Owes>>>();
        let mut kids_changed = other.query_filtered::<Entity, Changed<Children>>();
        assert_eq!(added.iter(&other).count(), 0);
        assert_eq!(kids_changed.iter(&other).count(), 0);
        let scene = if binary {
            Scene::from_binary(&bytes).unwrap()
        } else {
            Scene::from_ron_str(&text).unwrap()
        };
        scene.spawn_into(&mut other, &registry).unwrap();
        other.check_invariants();
        let mut want_all = want.clone();
        want_all.sort();
        assert_eq!(edges(&other), want_all);
        // The cache built before the load is rebuilt.
        let names: Vec<String> = order.get(&other).iter().map(|&e| name(&other, e)).collect();
        assert_eq!(names.len(), 4);
        assert_eq!(names[0], "root");
        let pos = |n: &str| names.iter().position(|x| x == n).unwrap();
        assert!(pos("a") < pos("b"));
        // Queries kept from before the load see the new edges as added.
        let added: Vec<String> = added.iter(&other).map(|e| name(&other, e)).collect();
        assert_eq!(added, ["a"]);
        let mut changed: Vec<String> = kids_changed.iter(&other).map(|e| name(&other, e)).collect();
        changed.sort();
        assert_eq!(changed, ["a", "root"]);
        let total: u32 = other
            .query::<Relation<Owes>>()
            .iter(&other)
            .flat_map(|r| r.data().iter().map(|o| o.0))
            .sum();
        assert_eq!(total, 7);
    }
}

/// A scene loaded back into the world it was saved from: a second copy,
/// with edges among the copies only; the originals keep theirs.
#[test]
fn a_scene_loaded_into_its_own_world_makes_a_separate_copy() {
    let registry = registry();
    let mut world = World::new();
    let original = build(&mut world);
    let before = edges(&world);
    let mut order = ParentFirst::<ChildOf>::new();
    assert_eq!(order.get(&world).len(), 4);
    let scene = Scene::from_world(&world, &registry).unwrap();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    world.check_invariants();
    assert_eq!(world.len(), 8);
    let copy: Vec<Entity> = original.iter().map(|e| spawned[e.scene_id()]).collect();
    for (o, c) in original.iter().zip(&copy) {
        assert_ne!(o, c);
    }
    // The originals' edges are untouched.
    assert_eq!(world.children(original[0]), [original[1], original[3]]);
    assert_eq!(world.targets::<Aims>(original[2]), [original[3]]);
    // The copies relate among themselves.
    assert_eq!(world.children(copy[0]), [copy[1], copy[3]]);
    assert_eq!(world.targets::<Owes>(copy[1]), [copy[0], copy[3]]);
    assert_eq!(world.sources::<Aims>(copy[3]), [copy[2]]);
    let mut doubled: Vec<String> = before.iter().chain(&before).cloned().collect();
    doubled.sort();
    assert_eq!(edges(&world), doubled);
    assert_eq!(order.get(&world).len(), 8);
    // Taking one copy away leaves the other whole.
    world.despawn_recursive(original[0]).unwrap();
    world.check_invariants();
    assert_eq!(edges(&world), before);
    assert_eq!(order.get(&world).len(), 4);
}

/// A prefab's edges and an entity's own list of the same relation: the
/// entity's own list replaces the prefab's, as for any component.
#[test]
fn an_entitys_own_edges_override_its_prefabs() {
    let registry = registry();
    let scene = Scene::from_ron_str(
        r#"(
            prefabs: { "Debtor": (components: {
                "Name": ("debtor"),
                "Owes": [(1, (5)), (2, (6))],
                "Aims": [(1, ("one"))],
            }) },
            entities: [
                (id: 1, components: { "Name": ("bank") }),
                (id: 2, components: { "Name": ("shop") }),
                (id: 3, prefab: "Debtor"),
                (id: 4, prefab: "Debtor", components: {
                    "Owes": [(2, (9))],
                    "Aims": [(2, ("two"))],
                }),
            ],
        )"#,
    )
    .unwrap();
    let mut world = World::new();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    world.check_invariants();
    let (bank, shop) = (spawned[1], spawned[2]);
    assert_eq!(world.targets::<Owes>(spawned[3]), [bank, shop]);
    assert_eq!(world.targets::<Aims>(spawned[3]), [bank]);
    assert_eq!(world.targets::<Owes>(spawned[4]), [shop]);
    assert_eq!(world.relation::<Owes>(spawned[4], shop), Some(&Owes(9)));
    assert_eq!(world.targets::<Aims>(spawned[4]), [shop]);
    assert_eq!(world.sources::<Owes>(bank), [spawned[3]]);
}

/// A prefab spawned after the target of one of its edges was despawned:
/// the entity comes without that edge (an edge never names a dead
/// entity), and the world stays whole.
#[test]
fn a_prefab_spawned_after_its_edges_target_went() {
    let registry = registry();
    let scene = Scene::from_ron_str(
        r#"(
            prefabs: { "Wheel": (components: { "Name": ("wheel"), "ChildOf": [(1, ())], "Owes": [(1, (1)), (2, (2))] }) },
            entities: [(id: 1, components: { "Name": ("tank") }), (id: 2, components: { "Name": ("shop") })],
        )"#,
    )
    .unwrap();
    let mut world = World::new();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    let (tank, shop) = (spawned[1], spawned[2]);
    world.despawn(tank).unwrap();
    // The slot is reused: the prefab's edge must not find the newcomer.
    let newcomer = world.spawn(Name("newcomer".into()));
    assert_eq!(newcomer.index(), tank.index());
    let wheel = world.spawn_prefab("Wheel", ()).unwrap();
    world.check_invariants();
    assert_eq!(name(&world, wheel), "wheel");
    assert_eq!(world.parent(wheel), None);
    assert_eq!(world.targets::<Owes>(wheel), [shop]);
    assert!(world.children(newcomer).is_empty());
}
