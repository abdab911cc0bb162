//! Scenes save and load relation edges with their targets remapped
//! (issue #19, item 4): hierarchies and many-target relations with data,
//! in RON, JSON and binary, into empty and non-empty worlds; bad edges are
//! refused before anything reaches the world.

use mosaic::prelude::*;
use mosaic_scene::{Scene, SceneError, TypeRegistry};
use serde::{Deserialize, Serialize};

#[derive(Component, Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Name(String);

#[derive(Relation, Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Damage {
    amount: u32,
}

#[derive(Relation, Serialize, Deserialize, Debug, PartialEq, Clone)]
#[relation(acyclic)]
struct DependsOn;

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Name>();
    registry
        .register_relation::<ChildOf>()
        .register_relation::<Damage>()
        .register_relation::<DependsOn>();
    registry
}

/// A tank with a turret (with a gun) and a wheel; the turret damages two
/// others with data.
fn build(world: &mut World) -> Vec<Entity> {
    let names = ["tank", "turret", "gun", "wheel", "rock"];
    let e: Vec<Entity> = names
        .iter()
        .map(|n| world.spawn(Name(n.to_string())))
        .collect();
    world.relate(e[1], e[0], ChildOf(e[0])).unwrap();
    world.relate(e[2], e[1], ChildOf(e[1])).unwrap();
    world.relate(e[3], e[0], ChildOf(e[0])).unwrap();
    world.relate(e[1], e[4], Damage { amount: 7 }).unwrap();
    world.relate(e[1], e[3], Damage { amount: 2 }).unwrap();
    world.relate(e[2], e[2], Damage { amount: 1 }).unwrap();
    world.relate(e[0], e[4], DependsOn).unwrap();
    e
}

fn by_name(world: &World, name: &str) -> Entity {
    let found: Vec<Entity> = world
        .iter()
        .map(|r| r.id())
        .filter(|&e| world.get::<Name>(e).is_ok_and(|n| n.0 == name))
        .collect();
    assert_eq!(found.len(), 1, "one entity named {name}");
    found[0]
}

/// The relations of `world`, by names: the same in every copy.
fn check_copy(world: &World) {
    let [tank, turret, gun, wheel, rock] =
        ["tank", "turret", "gun", "wheel", "rock"].map(|n| by_name(world, n));
    assert_eq!(world.targets::<ChildOf>(turret), [tank]);
    assert_eq!(world.targets::<ChildOf>(gun), [turret]);
    assert_eq!(world.targets::<ChildOf>(wheel), [tank]);
    assert!(world.targets::<ChildOf>(tank).is_empty());
    let mut children = world.sources::<ChildOf>(tank).to_vec();
    children.sort();
    let mut expected = vec![turret, wheel];
    expected.sort();
    assert_eq!(children, expected);
    let damage = world.get::<Relation<Damage>>(turret).unwrap();
    let edges: Vec<(Entity, u32)> = damage.iter().map(|(t, d)| (t, d.amount)).collect();
    assert_eq!(edges, [(rock, 7), (wheel, 2)]);
    assert_eq!(
        world.relation::<Damage>(gun, gun),
        Some(&Damage { amount: 1 })
    );
    assert_eq!(world.targets::<DependsOn>(tank), [rock]);
    assert_eq!(world.sources::<Damage>(rock), [turret]);
}

type Save = fn(&Scene) -> Vec<u8>;
type Load = fn(&[u8]) -> Scene;

fn formats() -> [(&'static str, Save, Load); 3] {
    [
        (
            "RON",
            |s| s.to_ron_string().unwrap().into_bytes(),
            |b| Scene::from_ron_str(std::str::from_utf8(b).unwrap()).unwrap(),
        ),
        (
            "JSON",
            |s| s.to_json_string().unwrap().into_bytes(),
            |b| Scene::from_json_str(std::str::from_utf8(b).unwrap()).unwrap(),
        ),
        (
            "binary",
            |s| s.to_binary().unwrap(),
            |b| Scene::from_binary(b).unwrap(),
        ),
    ]
}

#[test]
fn round_trip_into_an_empty_world_keeps_handles_and_edges() {
    let registry = registry();
    let mut world = World::new();
    let original = build(&mut world);
    check_copy(&world);
    for (format, save, load) in formats() {
        let bytes = save(&Scene::from_world(&world, &registry).unwrap());
        let mut copy = World::new();
        let spawned = load(&bytes).spawn_into(&mut copy, &registry).unwrap();
        check_copy(&copy);
        // Into an empty world the saved handles come back.
        for &e in &original {
            assert_eq!(spawned[e.scene_id()], e, "{format}");
        }
        // Save -> load -> save is byte-identical.
        let again = save(&Scene::from_world(&copy, &registry).unwrap());
        assert_eq!(again, bytes, "{format}: save, load, save");
    }
}

#[test]
fn round_trip_into_a_non_empty_world_remaps_targets() {
    let registry = registry();
    let mut world = World::new();
    let original = build(&mut world);
    for (format, save, load) in formats() {
        let bytes = save(&Scene::from_world(&world, &registry).unwrap());
        let mut other = World::new();
        // Entities that hold the saved handles' indices, and their own edge.
        let a = other.spawn(Name("a".into()));
        let b = other.spawn(Name("b".into()));
        other.relate(b, a, ChildOf(a)).unwrap();
        let spawned = load(&bytes).spawn_into(&mut other, &registry).unwrap();
        check_copy(&other);
        for &e in &original {
            assert_ne!(spawned[e.scene_id()], e, "{format}: fresh handles");
        }
        // The targets are the new entities, not the saved handles.
        let turret = spawned[original[1].scene_id()];
        assert_eq!(
            other.targets::<ChildOf>(turret),
            [spawned[original[0].scene_id()]],
            "{format}"
        );
        // The world's own edge is untouched.
        assert_eq!(other.targets::<ChildOf>(b), [a]);
        assert_eq!(other.sources::<ChildOf>(a), [b]);
        assert_eq!(other.len(), 2 + original.len());
    }
}

#[test]
fn sources_side_is_not_reported_skipped() {
    let registry = registry();
    let mut world = World::new();
    build(&mut world);
    let scene = Scene::from_world(&world, &registry).unwrap();
    assert!(scene.skipped().is_empty(), "{:?}", scene.skipped());
}

#[test]
fn text_written_by_hand_loads() {
    let registry = registry();
    let scene = Scene::from_ron_str(
        r#"(entities: [
            (id: 1, components: {"Name": ("root")}),
            (id: 2, components: {"Name": ("leaf"), "ChildOf": [(1, ())], "Damage": [(1, (amount: 3)), (2, (amount: 4))]}),
        ])"#,
    )
    .unwrap();
    let mut world = World::new();
    world.spawn(());
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    assert_eq!(world.targets::<ChildOf>(spawned[2]), [spawned[1]]);
    assert_eq!(world.children(spawned[1]), [spawned[2]]);
    // Written as a unit (`()`) as before `ChildOf` named its parent: the
    // loaded edge's value names the parent all the same.
    assert_eq!(
        world.relation::<ChildOf>(spawned[2], spawned[1]),
        Some(&ChildOf(spawned[1]))
    );
    assert_eq!(
        world.relation::<Damage>(spawned[2], spawned[2]),
        Some(&Damage { amount: 4 })
    );
}

/// Loads `text` into a world holding a saved scene, expects the error
/// `check`, and the world unchanged.
fn refused(text: &str, check: impl Fn(&SceneError) -> bool) {
    let registry = registry();
    let mut world = World::new();
    build(&mut world);
    let before = Scene::from_world(&world, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    let len = world.len();
    let scene = Scene::from_ron_str(text).unwrap();
    let err = scene.spawn_into(&mut world, &registry).unwrap_err();
    assert!(check(&err), "unexpected error: {err}");
    assert_eq!(world.len(), len);
    let after = Scene::from_world(&world, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    assert_eq!(after, before, "the world changed");
    check_copy(&world);
}

#[test]
fn dangling_target_is_refused_and_changes_nothing() {
    refused(
        r#"(entities: [(id: 1), (id: 2, components: {"ChildOf": [(9, ())]})])"#,
        |e| matches!(e, SceneError::DanglingReference { id: 9, component, .. } if component == "ChildOf"),
    );
    refused(
        r#"(entities: [(id: 1), (id: 2, components: {"Damage": [(1, (amount: 1)), (7, (amount: 2))]})])"#,
        |e| matches!(e, SceneError::DanglingReference { id: 7, .. }),
    );
}

#[test]
fn two_parents_are_refused() {
    refused(
        r#"(entities: [(id: 1), (id: 2), (id: 3, components: {"ChildOf": [(1, ()), (2, ())]})])"#,
        |e| {
            matches!(e, SceneError::WrongShape { component, message, .. }
            if component == "ChildOf" && message.contains("one"))
        },
    );
}

#[test]
fn a_target_twice_is_refused() {
    refused(
        r#"(entities: [(id: 1), (id: 3, components: {"Damage": [(1, (amount: 1)), (1, (amount: 2))]})])"#,
        |e| {
            matches!(e, SceneError::WrongShape { component, message, .. }
            if component == "Damage" && message.contains("twice"))
        },
    );
}

#[test]
fn cycles_of_acyclic_relations_are_refused() {
    refused(
        r#"(entities: [
            (id: 1, components: {"ChildOf": [(3, ())]}),
            (id: 2, components: {"ChildOf": [(1, ())]}),
            (id: 3, components: {"ChildOf": [(2, ())]}),
        ])"#,
        |e| matches!(e, SceneError::RelationCycle { relation, .. } if relation == "ChildOf"),
    );
    refused(
        r#"(entities: [(id: 1, components: {"ChildOf": [(1, ())]})])"#,
        |e| matches!(e, SceneError::RelationCycle { id: 1, .. }),
    );
    refused(
        r#"(entities: [
            (id: 1, components: {"DependsOn": [(2, ()), (3, ())]}),
            (id: 2, components: {"DependsOn": [(3, ())]}),
            (id: 3, components: {"DependsOn": [(1, ())]}),
        ])"#,
        |e| matches!(e, SceneError::RelationCycle { relation, .. } if relation == "DependsOn"),
    );
    // The relation is named as the file names it: its registered name.
    let mut renamed = TypeRegistry::new();
    renamed.register_relation_as::<DependsOn>("Needs");
    let err = Scene::from_ron_str(r#"(entities: [(id: 1, components: {"Needs": [(1, ())]})])"#)
        .unwrap()
        .spawn_into(&mut World::new(), &renamed)
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::RelationCycle { relation, .. } if relation == "Needs"),
        "{err:?}"
    );
    assert!(err.to_string().contains("the `Needs` edges"), "{err}");
    // A diamond is not a cycle.
    let registry = registry();
    let scene = Scene::from_ron_str(
        r#"(entities: [
            (id: 1, components: {"DependsOn": [(2, ()), (3, ())]}),
            (id: 2, components: {"DependsOn": [(4, ())]}),
            (id: 3, components: {"DependsOn": [(4, ())]}),
            (id: 4),
        ])"#,
    )
    .unwrap();
    let mut world = World::new();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    assert_eq!(world.sources::<DependsOn>(spawned[4]).len(), 2);
}

#[test]
fn binary_file_with_dangling_target_is_refused() {
    // Save part of a hierarchy: the child without its parent.
    let registry = registry();
    let mut world = World::new();
    let e = build(&mut world);
    let part = Scene::from_entities(&world, &registry, [e[3]]).unwrap();
    let bytes = part.to_binary().unwrap();
    let len = world.len();
    let err = Scene::from_binary(&bytes)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::DanglingReference { id, .. } if *id == e[0].scene_id()),
        "{err}"
    );
    assert_eq!(world.len(), len);
    check_copy(&world);
}

#[test]
fn observers_of_relate_see_every_loaded_edge() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SEEN: AtomicUsize = AtomicUsize::new(0);
    let registry = registry();
    let mut world = World::new();
    build(&mut world);
    let text = Scene::from_world(&world, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    let mut copy = World::new();
    copy.add_observer(|_: Trigger<OnRelate<ChildOf>>| {
        SEEN.fetch_add(1, Ordering::Relaxed);
    });
    Scene::from_ron_str(&text)
        .unwrap()
        .spawn_into(&mut copy, &registry)
        .unwrap();
    assert_eq!(SEEN.load(Ordering::Relaxed), 3);
}

#[test]
fn observer_panic_is_held_until_every_edge_is_in() {
    held_panic(|w| {
        w.add_observer(|_: Trigger<OnRelate<ChildOf>>| panic!("observer refuses"));
    });
    // Damage: the turret's second edge goes in after the first one's panic.
    held_panic(|w| {
        w.add_observer(|_: Trigger<OnRelate<Damage>>| panic!("observer refuses"));
    });
}

fn held_panic(observe: fn(&mut World)) {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let registry = registry();
    let mut world = World::new();
    build(&mut world);
    let text = Scene::from_world(&world, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    let mut copy = World::new();
    observe(&mut copy);
    let scene = Scene::from_ron_str(&text).unwrap();
    let result = catch_unwind(AssertUnwindSafe(|| scene.spawn_into(&mut copy, &registry)));
    let payload = result.expect_err("the observer's panic goes on to the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"observer refuses"));
    // The whole scene went in before the panic went on: every edge, and
    // the other relations' edges.
    assert_eq!(copy.len(), 5);
    check_copy(&copy);
}

#[test]
fn reflection_reads_and_removes_edges_but_does_not_set_them() {
    let registry = registry();
    let mut world = World::new();
    let e = build(&mut world);
    let json = registry.component_to_json(&world, e[1], "Damage").unwrap();
    assert_eq!(
        json,
        format!(
            r#"[[{},{{"amount":7}}],[{},{{"amount":2}}]]"#,
            e[4].scene_id(),
            e[3].scene_id()
        )
    );
    let err = registry
        .insert_component_json(
            &mut world,
            e[0],
            "ChildOf",
            &format!("[[{}, null]]", e[4].scene_id()),
        )
        .unwrap_err();
    assert!(err.to_string().contains("World::relate"), "{err}");
    assert!(world.targets::<ChildOf>(e[0]).is_empty());
    registry
        .remove_component(&mut world, e[1], "Damage")
        .unwrap();
    assert!(!world.has::<Relation<Damage>>(e[1]));
    assert!(world.sources::<Damage>(e[4]).is_empty());
    assert!(
        registry
            .remove_component(&mut world, e[1], "Damage")
            .is_err()
    );
}

#[test]
fn prefab_edges_are_remapped_for_loaded_and_runtime_entities() {
    use mosaic_scene::SpawnPrefab;
    let registry = registry();
    let scene = Scene::from_ron_str(
        r#"(
            prefabs: { "Wheel": (components: { "Name": ("wheel"), "ChildOf": [(1, ())] }) },
            entities: [(id: 1, components: { "Name": ("tank") }), (id: 2, prefab: "Wheel")],
        )"#,
    )
    .unwrap();
    let mut world = World::new();
    world.spawn(());
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    let tank = spawned[1];
    assert_eq!(world.targets::<ChildOf>(spawned[2]), [tank]);
    let spare = world.spawn_prefab("Wheel", ()).unwrap();
    assert_eq!(world.targets::<ChildOf>(spare), [tank]);
    assert_eq!(world.children(tank), [spawned[2], spare]);
}

/// Issue 39, item 13: a target's sources come back in their saved order,
/// in every format and into a non-empty world: `Children` saved
/// `[4, 6, 5, 1, 3]` loaded `[1, 3, 4, 5, 6]` before. Children in two
/// archetypes, a many-target relation's sources, and each source's
/// targets (kept before too) are checked; a parent whose children are in
/// id order writes no order at all.
#[test]
fn loading_keeps_every_relation_order() {
    let registry = registry();
    let mut world = World::new();
    let parent = world.spawn(Name("parent".into()));
    let kids: Vec<Entity> = (1..=6)
        .map(|i| match i % 2 {
            0 => world.spawn(Name(format!("kid{i}"))),
            _ => world.spawn(()),
        })
        .collect();
    for i in [4, 6, 5, 1, 3] {
        world.add_child(parent, kids[i - 1]).unwrap();
    }
    let target = kids[1];
    for i in [5, 2, 0] {
        world
            .relate(kids[i], target, Damage { amount: i as u32 })
            .unwrap();
    }
    for i in [2, 0, 3] {
        world
            .relate(kids[4], kids[i], Damage { amount: 9 })
            .unwrap();
    }
    // A second parent, children in id order: no order saved for it.
    let tidy = world.spawn(());
    let tidy_kids: Vec<Entity> = (0..3)
        .map(|_| world.spawn_child(tidy, ()).unwrap())
        .collect();
    for (format, save, load) in formats() {
        let bytes = save(&Scene::from_world(&world, &registry).unwrap());
        for mut copy in [World::new(), {
            let mut w = World::new();
            w.spawn(());
            w.spawn(());
            w
        }] {
            let spawned = load(&bytes).spawn_into(&mut copy, &registry).unwrap();
            let map = |e: Entity| spawned[e.scene_id()];
            let want: Vec<Entity> = [4, 6, 5, 1, 3].map(|i| map(kids[i - 1])).into();
            assert_eq!(copy.children(map(parent)), want, "{format}");
            let want: Vec<Entity> = [5, 2, 0].map(|i| map(kids[i])).into();
            assert_eq!(copy.sources::<Damage>(map(target)), want, "{format}");
            let want: Vec<Entity> = [2, 0, 3].map(|i| map(kids[i])).into();
            assert_eq!(copy.targets::<Damage>(map(kids[4])), want, "{format}");
            let want: Vec<Entity> = tidy_kids.iter().map(|&k| map(k)).collect();
            assert_eq!(copy.children(map(tidy)), want, "{format}");
            copy.check_invariants();
        }
    }
    let text = Scene::from_world(&world, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    assert_eq!(text.matches("ChildOf.order").count(), 1, "{text}");
}
