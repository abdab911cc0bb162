//! Hostile and unusual scene files (issue #18): each must load correctly or
//! fail with a clear error, never abort or panic. How long they take is
//! measured in `benches/hostile.rs`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mosaic::prelude::*;
use mosaic_scene::{Location, Scene, SceneError, SpawnPrefab, TypeRegistry, Where};
use serde::{Deserialize, Serialize};

/// A recursive component: nests as deep as the file says.
#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Chain(Option<Box<Chain>>);

impl Drop for Chain {
    /// Iterative, so dropping a deep (but accepted) chain cannot overflow.
    fn drop(&mut self) {
        let mut next = self.0.take();
        while let Some(mut link) = next {
            next = link.0.take();
        }
    }
}

#[derive(Component, MapEntities, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Target(#[entities] Entity);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Speed(f32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Health(u32);

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Chain>();
    registry.register::<Target>().map_entities();
    registry.register::<Speed>();
    registry.register::<Health>();
    registry
}

/// An unsigned LEB128 varint, as postcard writes lengths.
fn varint(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// A binary scene with one entity (id 1) whose one component `name` has
/// the postcard bytes `value`.
fn binary_scene(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let saved = Scene::new().to_binary().unwrap();
    // The header: everything before the empty document's four lengths.
    out.extend_from_slice(&saved[..saved.len() - 4]);
    out.extend_from_slice(&[0, 0, 0, 1]); // schemas, resources, prefabs, one table
    out.extend_from_slice(&[1, 1, 0, 1]); // ids [1], no prefab, one column
    varint(name.len() as u64, &mut out);
    out.extend_from_slice(name.as_bytes());
    varint(value.len() as u64, &mut out);
    out.extend_from_slice(value);
    out
}

fn load(scene: Result<Scene, SceneError>, world: &mut World) -> Result<usize, SceneError> {
    scene
        .and_then(|s| s.spawn_into(world, &registry()))
        .map(|s| s.len())
}

#[test]
fn binary_nested_100_000_deep_is_an_error_not_an_abort() {
    // Sanity: the hand-made encoding loads when shallow.
    let mut shallow = vec![1u8; 3];
    shallow.push(0);
    let mut world = World::new();
    assert_eq!(
        load(
            Scene::from_binary(&binary_scene("Chain", &shallow)),
            &mut world
        ),
        Ok(1)
    );
    let mut deep = vec![1u8; 100_000];
    deep.push(0);
    let bytes = binary_scene("Chain", &deep);
    let mut world = World::new();
    let err = load(Scene::from_binary(&bytes), &mut world).unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, message, .. }
            if component == "Chain" && message.contains("deep")),
        "{err}"
    );
    assert!(world.is_empty());
}

#[test]
fn text_nested_100_000_deep_is_an_error() {
    let depth = 100_000;
    let ron = format!(
        "(entities: [(id: 1, components: {{\"Chain\": ({}None{})}})])",
        "Some((".repeat(depth),
        "))".repeat(depth)
    );
    let json = format!(
        "{{\"entities\": [{{\"id\": 1, \"components\": {{\"Chain\": {}null{}}}}}]}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    // The same values in a prefab (read by another path).
    let ron_prefab = format!(
        "(prefabs: {{\"Deep\": (components: {{\"Chain\": ({}None{})}})}})",
        "Some((".repeat(depth),
        "))".repeat(depth)
    );
    let json_prefab = format!(
        "{{\"prefabs\": {{\"Deep\": {{\"components\": {{\"Chain\": {}null{}}}}}}}}}",
        "{\"a\": ".repeat(depth),
        "}".repeat(depth)
    );
    for scene in [
        Scene::from_ron_str(&ron),
        Scene::from_json_str(&json),
        Scene::from_ron_str(&ron_prefab),
        Scene::from_json_str(&json_prefab),
    ] {
        let mut world = World::new();
        let err = load(scene, &mut world).unwrap_err();
        assert!(
            err.to_string().contains("deep") || err.to_string().contains("recursion"),
            "{err}"
        );
        assert!(world.is_empty());
    }
}

#[test]
fn scene_ids_are_never_folded_to_32_bits() {
    // Two ids with the same low 32 bits are two entities, or an error;
    // never one entity reported twice, never one mistaken for the other.
    let big = 18446744069414584325u64; // 0xFFFF_FFFF_0000_0005
    let text = format!("(entities: [(id: 5), (id: {big})])");
    let mut world = World::new();
    match load(Scene::from_ron_str(&text), &mut world) {
        Ok(n) => assert_eq!(n, 2),
        Err(err) => {
            assert!(!matches!(err, SceneError::DuplicateId { .. }), "{err}");
            assert!(err.to_string().contains(&big.to_string()), "{err}");
            assert!(world.is_empty());
        }
    }
    // A reference to 0xFFFF_FFFF_0000_0007 is not a reference to 7.
    let text = "(entities: [(id: 7), (id: 8, components: {\"Target\": (18446744069414584327)})])";
    let mut world = World::new();
    let err = load(Scene::from_ron_str(text), &mut world).unwrap_err();
    assert!(err.to_string().contains("18446744069414584327"), "{err}");
    assert!(world.is_empty());
    // Ids above 2^32 that a save writes (real handles) load exactly.
    let a = (3u64 << 32) | 5;
    let b = (4u64 << 32) | 5;
    let text = format!("(entities: [(id: {a}), (id: {b}, components: {{\"Target\": ({a})}})])");
    let mut world = World::new();
    let spawned = Scene::from_ron_str(&text)
        .unwrap()
        .spawn_into(&mut world, &registry())
        .unwrap();
    assert_eq!(world.get::<Target>(spawned[b]).unwrap().0, spawned[a]);
}

fn text_at(text: &str, needle: &str) -> Where {
    let offset = text.find(needle).expect("needle");
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    Where::Text(Location {
        line: text[..offset].matches('\n').count() + 1,
        column: text[line_start..offset].chars().count() + 1,
    })
}

#[test]
fn ron_errors_point_at_the_offending_token() {
    let text = "(entities: [\n    (id: 1, components: {\n        \"Speed\":\n            \"fast\",\n    }),\n])";
    let mut world = World::new();
    let err = load(Scene::from_ron_str(text), &mut world).unwrap_err();
    match &err {
        SceneError::WrongShape { component, at, .. } => {
            assert_eq!(component, "Speed");
            assert_eq!(at, &text_at(text, "\"fast\""), "{err}");
        }
        other => panic!("{other}"),
    }
    let text = "(entities: [\n    (id: 1, components: {\n        \"Health\":\n            (-3),\n    }),\n])";
    let err = load(Scene::from_ron_str(text), &mut world).unwrap_err();
    let SceneError::WrongShape { at, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(at.location().unwrap().line, 4, "{err}");
}

#[test]
fn prefab_and_schema_errors_say_where_and_which_prefab() {
    let text = "(prefabs: {\n  \"Tree\": (components: {}),\n  \"Oak\": (extends: \"Tre\"),\n})";
    let mut world = World::new();
    let err = load(Scene::from_ron_str(text), &mut world).unwrap_err();
    let SceneError::UnknownPrefab { name, at, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(name, "Tre");
    assert_eq!(at.location().unwrap().line, 3, "{err}");
    assert!(err.to_string().contains("Oak"), "{err}");

    let text = "(prefabs: {\n  \"Tree\": (),\n  \"Tree\": (),\n})";
    let err = load(Scene::from_ron_str(text), &mut world).unwrap_err();
    let SceneError::Duplicate { name, at, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(name, "Tree");
    assert_eq!(at.location().unwrap().line, 3, "{err}");

    let text =
        "(schemas: {\n  \"Mana\": {\"max\": \"int\"},\n  \"Rage\": {\"max\": \"integer\"},\n})";
    let err = load(Scene::from_ron_str(text), &mut world).unwrap_err();
    assert!(err.to_string().contains("Rage"), "{err}");
    assert!(err.to_string().contains("line 3"), "{err}");

    let json = "{\"prefabs\": {\n \"Tree\": {},\n \"Oak\": {\"extends\": \"Tre\"}\n}}";
    let err = load(Scene::from_json_str(json), &mut world).unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
    assert!(world.is_empty());
}

#[test]
fn json_refuses_non_finite_floats() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut world = World::new();
        world.spawn(Speed(bad));
        let scene = Scene::from_world(&world, &registry()).unwrap();
        let err = scene.to_json_string().unwrap_err();
        assert!(matches!(err, SceneError::Encode { .. }), "{err}");
        assert!(err.to_string().contains("Speed"), "{err}");
        // RON and binary keep them exactly.
        let ron = scene.to_ron_string().unwrap();
        let mut copy = World::new();
        let spawned = Scene::from_ron_str(&ron)
            .unwrap()
            .spawn_into(&mut copy, &registry())
            .unwrap();
        let back = copy
            .get::<Speed>(spawned.entities().next().unwrap())
            .unwrap()
            .0;
        assert_eq!(back.to_bits(), bad.to_bits());
    }
    // A scene read from RON and resolved (values held in memory) too.
    let mut scene =
        Scene::from_ron_str("(entities: [(id: 1, components: {\"Speed\": (inf)})])").unwrap();
    scene.resolve(&registry()).unwrap();
    let err = scene.to_json_string().unwrap_err();
    assert!(
        matches!(&err, SceneError::Encode { component, .. } if component == "Speed"),
        "{err}"
    );
}

/// A component that counts, per thread, how many values of it were
/// decoded: the work a load does, measured without a clock.
#[derive(Component, Serialize, Debug, Clone, PartialEq)]
struct Counted(u32);

thread_local! {
    static DECODED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Those of them read from text (a human-readable format).
    static FROM_TEXT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// (values decoded, values decoded from text) on this thread so far.
fn decoded() -> (usize, usize) {
    (
        DECODED.with(std::cell::Cell::get),
        FROM_TEXT.with(std::cell::Cell::get),
    )
}

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// The derived form, so files write `Counted` as any newtype.
        #[derive(Deserialize)]
        #[serde(rename = "Counted")]
        struct Derived(u32);
        DECODED.with(|n| n.set(n.get() + 1));
        if d.is_human_readable() {
            FROM_TEXT.with(|n| n.set(n.get() + 1));
        }
        Derived::deserialize(d).map(|v| Counted(v.0))
    }
}

/// A RON scene: `n` prefabs, each extending the one before and giving
/// `component` its own value, and one entity of the last.
fn prefab_chain(n: usize, component: &str) -> String {
    let mut text = format!("(prefabs: {{\"P0\": (components: {{\"{component}\": (0)}}),\n");
    for i in 1..n {
        text += &format!(
            "\"P{i}\": (extends: \"P{}\", components: {{\"{component}\": ({i})}}),\n",
            i - 1
        );
    }
    text += &format!("}}, entities: [(id: 1, prefab: \"P{}\")])", n - 1);
    text
}

/// Loads a chain of `n` prefabs of `Counted` values: the entity's value,
/// and how many values were decoded, and how many of them from text.
fn load_counted_chain(n: usize) -> (Counted, (usize, usize)) {
    let mut registry = registry();
    registry.register::<Counted>();
    let scene = Scene::from_ron_str(&prefab_chain(n, "Counted")).unwrap();
    let mut world = World::new();
    let before = decoded();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    let after = decoded();
    let value = world.get::<Counted>(spawned[1]).unwrap().clone();
    (value, (after.0 - before.0, after.1 - before.1))
}

// Speed is proved in `benches/hostile.rs` (criterion); these check the
// results, and that the work grows linearly without timing it.

#[test]
fn a_2000_deep_prefab_chain_loads() {
    let mut world = World::new();
    let spawned = Scene::from_ron_str(&prefab_chain(2000, "Health"))
        .unwrap()
        .spawn_into(&mut world, &registry())
        .unwrap();
    assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(1999)));
    // The last prefab is kept, with its whole chain applied.
    let more = world.spawn_prefab("P1999", ()).unwrap();
    assert_eq!(world.get::<Health>(more), Ok(&Health(1999)));
}

#[test]
fn a_prefab_chain_decodes_each_value_a_bounded_number_of_times() {
    let (value, (small, small_text)) = load_counted_chain(1000);
    assert_eq!(value, Counted(999));
    let (value, (large, large_text)) = load_counted_chain(2000);
    assert_eq!(value, Counted(1999));
    // Every prefab's text is read once (to check it), and never again for
    // the prefabs extending it or the entity: twice the chain, twice the
    // work (a loader that re-decoded each base per level would do n²/2).
    assert_eq!((small_text, large_text), (1000, 2000));
    assert!(small >= 1000, "{small}");
    assert!(
        large <= 2 * small + 2,
        "{small} values for 1,000, {large} for 2,000"
    );
}

#[test]
fn a_prefab_value_is_read_from_text_once_however_often_it_is_used() {
    let mut registry = registry();
    registry.register::<Counted>();
    let mut text = String::from("(prefabs: {\"Base\": (components: {\"Counted\": (5)}),\n");
    text += "\"Child\": (extends: \"Base\", components: {\"Health\": (1)})},\n";
    text += "entities: [";
    for id in 1..=100 {
        text += &format!("(id: {id}, prefab: \"Child\"),");
    }
    text += "])";
    let scene = Scene::from_ron_str(&text).unwrap();
    let mut world = World::new();
    let before = decoded();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    for _ in 0..3 {
        let e = world.spawn_prefab("Child", ()).unwrap();
        assert_eq!(world.get::<Counted>(e), Ok(&Counted(5)));
    }
    let after = decoded();
    assert_eq!(after.1 - before.1, 1, "the prefab's text is read once");
    // ... and its kept form once per entity (and once to check it).
    assert!(after.0 - before.0 <= 1 + 1 + 100 + 3, "{:?}", after);
    for (_, e) in spawned.iter() {
        assert_eq!(world.get::<Counted>(e), Ok(&Counted(5)));
        assert_eq!(world.get::<Health>(e), Ok(&Health(1)));
    }
}

/// A component that reads itself with `deserialize_any` (an untagged
/// enum), which postcard cannot decode.
#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
enum Loose {
    Number(u32),
    Text(String),
}

#[test]
fn a_prefab_value_postcard_cannot_hold_still_loads_from_text() {
    let mut registry = registry();
    registry.register::<Loose>();
    let scene = Scene::from_json_str(
        r#"{"prefabs": {"P": {"components": {"Loose": "seven"}}},
            "entities": [{"id": 1, "prefab": "P"}, {"id": 2, "prefab": "P", "components": {"Loose": 7}}]}"#,
    )
    .unwrap();
    let mut world = World::new();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    assert_eq!(
        world.get::<Loose>(spawned[1]),
        Ok(&Loose::Text("seven".into()))
    );
    assert_eq!(world.get::<Loose>(spawned[2]), Ok(&Loose::Number(7)));
    let more = world.spawn_prefab("P", ()).unwrap();
    assert_eq!(world.get::<Loose>(more), Ok(&Loose::Text("seven".into())));
}

#[test]
fn a_value_postcard_cannot_hold_loads_when_read_with_the_registry() {
    let mut registry = registry();
    registry.register::<Loose>();
    let json = r#"{"entities": [{"id": 1, "components": {"Health": 3, "Loose": "seven"}},
                                 {"id": 2, "components": {"Health": 4, "Loose": 7}}]}"#;
    let ron = r#"(entities: [(id: 1, components: {"Health": (3), "Loose": "seven"}),
                             (id: 2, components: {"Health": (4), "Loose": 7})])"#;
    for scene in [
        Scene::from_json_str_with(json, &registry),
        Scene::from_ron_str_with(ron, &registry),
    ] {
        let mut world = World::new();
        let spawned = scene.unwrap().spawn_into(&mut world, &registry).unwrap();
        assert_eq!(
            world.get::<Loose>(spawned[1]),
            Ok(&Loose::Text("seven".into()))
        );
        assert_eq!(world.get::<Loose>(spawned[2]), Ok(&Loose::Number(7)));
        assert_eq!(world.get::<Health>(spawned[2]), Ok(&Health(4)));
    }
}

/// A RON scene of one entity whose components are `component(i)`, `i < n`.
fn wide_entity(n: usize, component: impl Fn(usize) -> String) -> String {
    let mut text = String::from("(entities: [(id: 1, components: {\n");
    for i in 0..n {
        text += &component(i);
    }
    text += "})])";
    text
}

#[test]
fn an_entity_with_50_000_components_is_refused_at_the_first_bad_one() {
    let mut world = World::new();
    let text = wide_entity(50_000, |i| format!("\"Unknown{i}\": (),\n"));
    let err = load(Scene::from_ron_str(&text), &mut world).unwrap_err();
    assert!(
        matches!(&err, SceneError::UnknownComponent { name, at: Where::Text(at), .. }
            if name == "Unknown0" && at.line == 2),
        "{err}"
    );
    // The same with repeated names: a duplicate, reported at the second.
    let text = wide_entity(50_000, |_| "\"Health\": (1),\n".to_owned());
    let err = load(Scene::from_ron_str(&text), &mut world).unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { name, .. } if name == "Health"),
        "{err}"
    );
    assert!(world.is_empty());
}

#[test]
fn a_wide_entity_decodes_each_value_once() {
    // 5,000 components: one `Counted`, the rest runtime-defined, all loaded.
    let mut text = String::from("(schemas: {");
    for i in 0..5_000 {
        text += &format!("\"C{i}\": {{\"v\": \"int\"}},");
    }
    text += "}, entities: [(id: 1, components: {\"Counted\": (7),\n";
    for i in 0..5_000 {
        text += &format!("\"C{i}\": {{\"v\": {i}}},\n");
    }
    text += "})])";
    let mut registry = registry();
    registry.register::<Counted>();
    let scene = Scene::from_ron_str(&text).unwrap();
    let mut world = World::new();
    let before = decoded();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    assert_eq!(decoded().0 - before.0, 1);
    assert_eq!(world.get::<Counted>(spawned[1]), Ok(&Counted(7)));
    let c4999 = world.dynamic_schema("C4999").is_some();
    assert!(c4999);
}

static PANIC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[component(on_add = panicking)]
struct Touchy;

fn panicking(_: mosaic::DeferredWorld, _: Entity) {
    if PANIC.load(std::sync::atomic::Ordering::SeqCst) {
        panic!("hook panics");
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
struct Score(u32);

#[test]
fn a_panicking_hook_never_leaves_half_a_scene() {
    let mut registry = registry();
    registry.register::<Touchy>();
    registry.register_resource::<Score>();
    let text = "(schemas: {\"Mana\": {\"max\": \"int\"}},
        resources: {\"Score\": (7)},
        prefabs: {\"Tree\": (components: {\"Health\": (3)})},
        entities: [
            (id: 1, components: {\"Touchy\": (), \"Mana\": {\"max\": 5}}),
            (id: 2, components: {\"Health\": (2), \"Mana\": {\"max\": 6}}),
        ])";
    let scene = Scene::from_ron_str(text).unwrap();
    let mut world = World::new();
    PANIC.store(true, std::sync::atomic::Ordering::SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| scene.spawn_into(&mut world, &registry)));
    PANIC.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(result.is_err(), "the panic goes on to the caller");
    world.check_invariants();
    // The whole scene is in: both entities with every component, the
    // resource, the prefab.
    assert_eq!(world.len(), 2);
    assert_eq!(world.get_resource::<Score>(), Some(&Score(7)));
    let mut q = world.query::<&Health>();
    assert_eq!(q.iter(&world).count(), 1);
    assert!(world.dynamic_schema("Mana").is_some());
    let manas = world
        .iter()
        .filter(|e| world.get_dynamic(e.id(), "Mana").is_ok())
        .count();
    assert_eq!(manas, 2);
    assert!(world.spawn_prefab("Tree", ()).is_ok());
}

static SHAKY_FAILS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[derive(Component, Debug)]
struct Shaky;

impl Default for Shaky {
    fn default() -> Self {
        if SHAKY_FAILS.load(std::sync::atomic::Ordering::SeqCst) {
            panic!("Shaky::default panics");
        }
        Shaky
    }
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[require(Shaky)]
struct NeedsShaky(u32);

#[test]
fn a_panicking_required_constructor_leaves_nothing_of_the_scene() {
    let mut registry = registry();
    registry.register::<NeedsShaky>();
    registry.register_resource::<Score>();
    let text = "(resources: {\"Score\": (7)},
        prefabs: {\"Tree\": (components: {\"Health\": (3)})},
        entities: [(id: 1, components: {\"NeedsShaky\": (1)}), (id: 2, components: {\"Health\": (2)})])";
    let scene = Scene::from_ron_str(text).unwrap();
    let mut world = World::new();
    SHAKY_FAILS.store(true, std::sync::atomic::Ordering::SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| scene.spawn_into(&mut world, &registry)));
    SHAKY_FAILS.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(result.is_err(), "the panic goes on to the caller");
    world.check_invariants();
    assert_eq!(world.len(), 0);
    assert_eq!(world.get_resource::<Score>(), None);
    assert!(world.spawn_prefab("Tree", ()).is_err());
    // And loads cleanly afterwards.
    assert_eq!(scene.spawn_into(&mut world, &registry).unwrap().len(), 2);
}

/// A world with several archetypes, built in an order that makes the
/// archetypes' creation order differ from their components' order.
fn mixed_world() -> World {
    let mut world = World::new();
    for i in 0..6u32 {
        match i % 3 {
            0 => {
                world.spawn((Health(i), Speed(i as f32)));
            }
            1 => {
                world.spawn(Speed(i as f32));
            }
            _ => {
                world.spawn(Health(i));
            }
        }
    }
    let e = world.spawn(Health(99));
    world.insert_one(e, Speed(1.5)).unwrap();
    world.spawn(());
    world
}

/// The `Health` values a query visits, in order.
fn healths(world: &mut World) -> Vec<u32> {
    let mut q = world.query::<&Health>();
    q.iter(world).map(|h| h.0).collect()
}

#[test]
fn a_loaded_world_iterates_in_the_saved_order() {
    let mut world = mixed_world();
    let registry = registry();
    let scene = Scene::from_world(&world, &registry).unwrap();
    let ron = scene.to_ron_string().unwrap();
    let bin = scene.to_binary().unwrap();
    for copy_scene in [
        Scene::from_ron_str(&ron).unwrap(),
        Scene::from_binary(&bin).unwrap(),
    ] {
        let mut copy = World::new();
        let spawned = copy_scene.spawn_into(&mut copy, &registry).unwrap();
        let original: Vec<u64> = world.iter().map(|e| e.id().to_bits()).collect();
        let by_entity: std::collections::HashMap<Entity, u64> =
            spawned.iter().map(|(id, e)| (e, id)).collect();
        let loaded: Vec<u64> = copy.iter().map(|e| by_entity[&e.id()]).collect();
        assert_eq!(loaded, original, "World::iter order");
        assert_eq!(healths(&mut copy), healths(&mut world), "query order");
    }
}

#[test]
fn save_load_save_is_byte_identical() {
    let world = mixed_world();
    let registry = registry();
    let first = Scene::from_world(&world, &registry).unwrap();
    let (ron, bin) = (first.to_ron_string().unwrap(), first.to_binary().unwrap());
    let mut copy = World::new();
    Scene::from_binary(&bin)
        .unwrap()
        .spawn_into(&mut copy, &registry)
        .unwrap();
    let second = Scene::from_world(&copy, &registry).unwrap();
    assert_eq!(second.to_ron_string().unwrap(), ron);
    assert_eq!(second.to_binary().unwrap(), bin);
}

/// Issue #18, hostile item 3: a RON error is placed at the offending token,
/// not at the whitespace (or comment) before it, so a bad value on a line
/// of its own is reported on that line: inside a component value, in a
/// prefab's body, and in the document itself.
#[test]
fn ron_errors_point_past_whitespace_and_comments() {
    let cases = [
        // A field of a component value.
        "(entities: [\n    (id: 1, components: {\n        \"Health\":\n            (\n              \"many\")}),\n])",
        // After a comment.
        "(entities: [\n    (id: 1, components: {\n        \"Speed\": ( // fast\n             \"quick\")}),\n])",
        // A prefab's component.
        "(prefabs: {\"A\": (components: {\n  \"Health\":\n     (\n      \"lots\")})})",
        // The document: a prefab name that is not a string.
        "(entities: [\n    (id: 1,\n\n     prefab: 7),\n])",
        // An unknown section.
        "(entities: [],\n    bogus: 3,\n)",
    ];
    let tokens = ["\"many\"", "\"quick\"", "\"lots\"", "7)", "bogus"];
    for (text, token) in cases.iter().zip(tokens) {
        let mut world = World::new();
        let err = load(Scene::from_ron_str(text), &mut world).unwrap_err();
        let at = match &err {
            SceneError::WrongShape { at, .. } | SceneError::Syntax { at, .. } => at.clone(),
            other => panic!("{other}"),
        };
        assert_eq!(at, text_at(text, token), "{err}\n{text}");
    }
}

#[test]
fn a_runtime_defined_prefab_value_with_a_reference_loads_for_every_entity() {
    let scene = Scene::from_ron_str(
        r#"(
        schemas: { "Owner": { "who": "entity", "note": "string" } },
        prefabs: { "Pet": (components: { "Owner": { "who": 1, "note": "good" }, "Health": (2) }) },
        entities: [(id: 1), (id: 2, prefab: "Pet"), (id: 3, prefab: "Pet")],
    )"#,
    )
    .unwrap();
    let mut world = World::new();
    let spawned = scene.spawn_into(&mut world, &registry()).unwrap();
    let owner = |world: &World, e: Entity| {
        let value = world.get_dynamic(e, "Owner").unwrap();
        (value.get("who").cloned(), value.get("note").cloned())
    };
    let expected = (
        Some(mosaic::FieldValue::Entity(spawned[1])),
        Some(mosaic::FieldValue::Str("good".into())),
    );
    assert_eq!(owner(&world, spawned[2]), expected);
    assert_eq!(owner(&world, spawned[3]), expected);
    let more = world.spawn_prefab("Pet", ()).unwrap();
    assert_eq!(owner(&world, more), expected);
    assert_eq!(world.get::<Health>(more), Ok(&Health(2)));
}
