//! Adversarial scene files, in the combinations `hostile.rs` does not
//! cover: hostile input inside prefabs, relation edge lists, resources and
//! runtime schemas; the readers with and without the registry agreeing on
//! every file; loads that fail then succeed; ids at the edges of 64 bits;
//! determinism in JSON. Each case checks the exact error or world state.

use mosaic::prelude::*;
use mosaic_scene::{Location, Scene, SceneError, SpawnPrefab, TypeRegistry, Where};
use serde::{Deserialize, Serialize};

// ----- types -------------------------------------------------------------------------

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Health(u32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Speed(f32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Body {
    pos: Position,
    mass: f64,
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[component(storage = "sparse")]
struct Label(String);

#[derive(Component, MapEntities, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Target(#[entities] Entity);

#[derive(Relation, Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Damage {
    amount: u32,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Score(u32);

#[derive(MapEntities, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Camera {
    #[entities]
    follows: Option<Entity>,
}

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Health>();
    registry.register::<Speed>();
    registry.register::<Position>();
    registry.register::<Body>();
    registry.register::<Label>();
    registry.register::<Target>().map_entities();
    registry
        .register_relation::<ChildOf>()
        .register_relation::<Damage>();
    registry.register_resource::<Score>();
    registry.register_resource::<Camera>().map_entities();
    registry
}

// ----- helpers -----------------------------------------------------------------------

/// What a case expects of its error.
type Check = dyn Fn(&SceneError) -> bool;

/// Reads a scene anew.
type Reader<'a> = Box<dyn Fn() -> Scene + 'a>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fmt {
    Ron,
    Json,
}

/// Reads `text` without the registry and with it, and loads each into a
/// fresh world: the two results (the number of entities, or the error)
/// must be the same; returns it.
fn load_both(text: &str, format: Fmt) -> Result<usize, SceneError> {
    let registry = registry();
    let results: Vec<Result<usize, SceneError>> = [false, true]
        .into_iter()
        .map(|with| {
            let scene = match (format, with) {
                (Fmt::Ron, false) => Scene::from_ron_str(text),
                (Fmt::Ron, true) => Scene::from_ron_str_with(text, &registry),
                (Fmt::Json, false) => Scene::from_json_str(text),
                (Fmt::Json, true) => Scene::from_json_str_with(text, &registry),
            }?;
            let mut world = World::new();
            let result = scene.spawn_into(&mut world, &registry).map(|s| s.len());
            match &result {
                Ok(n) => assert_eq!(world.len(), *n),
                Err(_) => {
                    assert!(world.is_empty(), "a failed load left entities");
                    assert_eq!(world.archetype_count(), World::new().archetype_count());
                }
            }
            world.check_invariants();
            result
        })
        .collect();
    assert_eq!(
        results[0],
        results[1],
        "with and without the registry differ on {format:?}:\n{}",
        shorten(text)
    );
    results.into_iter().next().unwrap()
}

fn shorten(text: &str) -> String {
    if text.len() > 300 {
        let mut end = 300;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}... ({} bytes)", &text[..end], text.len())
    } else {
        text.to_owned()
    }
}

/// 1-based line and column of the first `needle` in `text`.
fn at(text: &str, needle: &str) -> Where {
    let offset = text.find(needle).expect("needle");
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    Where::Text(Location {
        line: text[..offset].matches('\n').count() + 1,
        column: text[line_start..offset].chars().count() + 1,
    })
}

fn line_of(err: &SceneError) -> Option<usize> {
    let w = match err {
        SceneError::Syntax { at, .. }
        | SceneError::UnknownComponent { at, .. }
        | SceneError::WrongShape { at, .. }
        | SceneError::DuplicateId { at, .. }
        | SceneError::ReservedId { at, .. }
        | SceneError::DanglingReference { at, .. }
        | SceneError::UnmappedEntities { at, .. }
        | SceneError::UnknownPrefab { at, .. }
        | SceneError::Duplicate { at, .. }
        | SceneError::Schema { at, .. } => at,
        _ => return None,
    };
    w.location().map(|l| l.line)
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

/// The header of a binary scene (everything before the document).
fn header() -> Vec<u8> {
    let saved = Scene::new().to_binary().unwrap();
    saved[..saved.len() - 4].to_vec()
}

// ----- empty, BOM, encodings ----------------------------------------------------------

#[test]
fn empty_and_blank_inputs_are_syntax_errors_in_both_readers() {
    for text in [
        "",
        "   \n\t ",
        "\u{feff}",
        "\u{feff}\n",
        "// only a comment\n",
    ] {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(
            matches!(err, SceneError::Syntax { format: "RON", .. }),
            "{text:?}: {err:?}"
        );
    }
    for text in [
        "",
        "   \n\t ",
        "\u{feff}",
        "\u{feff}\n",
        "null",
        "0",
        "\"entities\"",
    ] {
        let err = load_both(text, Fmt::Json).unwrap_err();
        assert!(
            matches!(err, SceneError::Syntax { format: "JSON", .. }),
            "{text:?}: {err:?}"
        );
    }
    for bytes in [&b""[..], b"\xef\xbb\xbf", &header()[..header().len() - 1]] {
        let err = Scene::from_binary(bytes).unwrap_err();
        assert!(
            matches!(
                err,
                SceneError::Syntax {
                    format: "binary",
                    ..
                }
            ),
            "{bytes:?}: {err:?}"
        );
    }
    // The smallest whole documents are empty scenes.
    assert_eq!(load_both("()", Fmt::Ron), Ok(0));
    assert_eq!(load_both("\u{feff}()", Fmt::Ron), Ok(0));
    assert_eq!(load_both("{}", Fmt::Json), Ok(0));
    assert_eq!(load_both("\u{feff}{}", Fmt::Json), Ok(0));
}

#[test]
fn a_bom_does_not_shift_locations_in_either_reader() {
    let text = "\u{feff}(entities: [\n  (id: 1, components: {\"Health\": \"x\"})])";
    let err = load_both(text, Fmt::Ron).unwrap_err();
    let expected = at(&text['\u{feff}'.len_utf8()..], "\"x\"");
    assert!(
        matches!(&err, SceneError::WrongShape { at, component, .. } if *at == expected && component == "Health"),
        "{err:?}"
    );
    let text = "\u{feff}{\"entities\": [\n  {\"id\": 1, \"components\": {\"Nope\": 1}}]}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    // (An unknown component is reported at its value, as in RON.)
    let expected = at(&text['\u{feff}'.len_utf8()..], "1}}");
    assert!(
        matches!(&err, SceneError::UnknownComponent { at, .. } if *at == expected),
        "{err:?}"
    );
}

#[test]
fn invalid_utf8_files_are_clear_errors() {
    let dir = std::env::temp_dir().join(format!("mosaic-adversarial-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for ext in ["ron", "json"] {
        let path = dir.join(format!("bad.{ext}"));
        std::fs::write(
            &path,
            b"(entities: [(id: 1, components: {\"Label\": (\"\xff\xfe\")})])",
        )
        .unwrap();
        let err = Scene::from_path(&path).unwrap_err();
        assert!(
            matches!(&err, SceneError::Io { message, .. } if message.contains("UTF-8")),
            "{ext}: {err:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// ----- duplicates in JSON -------------------------------------------------------------

#[test]
fn json_duplicate_keys_are_refused_where_names_must_be_unique() {
    let text = "{\"entities\": [{\"id\": 1, \"components\": {\"Health\": 1,\n \"Health\": 2}}]}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { what: "component", name, .. } if name == "Health"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(2), "{err}");

    let text = "{\"resources\": {\"Score\": 1,\n \"Score\": 2}}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { what: "resource", name, .. } if name == "Score"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(2), "{err}");

    let text = "{\"prefabs\": {\"P\": {},\n \"P\": {}}}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { what: "prefab", name, .. } if name == "P"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(2), "{err}");

    let text = "{\"schemas\": {\"Mana\": {\"max\": \"int\"},\n \"Mana\": {\"max\": \"int\"}}}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { name, .. } if name == "Mana"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(2), "{err}");

    // A schema's field twice.
    let text = "{\"schemas\": {\"Mana\": {\"max\": \"int\",\n \"max\": \"float\"}}}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    assert!(err.to_string().contains("Mana"), "{err}");
    assert!(err.to_string().contains("max"), "{err}");
    assert!(line_of(&err).is_some(), "{err:?}");

    // A document key twice is a syntax error.
    for text in [
        "{\"entities\": [],\n \"entities\": []}",
        "{\"entities\": [{\"id\": 1,\n \"prefab\": \"A\", \"prefab\": \"B\"}]}",
        "{\"prefabs\": {\"P\": {\"extends\": \"A\",\n \"extends\": \"B\"}}}",
    ] {
        let err = load_both(text, Fmt::Json).unwrap_err();
        assert!(
            matches!(&err, SceneError::Syntax { format: "JSON", message, .. } if message.contains("duplicate")),
            "{text}: {err:?}"
        );
        assert_eq!(line_of(&err), Some(2), "{err}");
    }
    // A duplicate id, second one reported.
    let text = "{\"entities\": [{\"id\": 4},\n {\"id\": 4}]}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::DuplicateId { id: 4, .. }),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(2), "{err}");
}

// ----- RON extensions -----------------------------------------------------------------

/// RON's errors about the document's own structs name them as a file
/// may write them (`Scene`, `Entity`, `Prefab`), never an internal type.
#[test]
fn ron_errors_name_the_documents_structs() {
    let cases = [
        ("[1]", "struct `Scene`"),
        ("Doc(entities: [])", "struct `Scene` but found `Doc`"),
        ("(entities: [[1]])", "struct `Entity`"),
        (
            "(prefabs: {\"A\": Bar()})",
            "struct `Prefab` but found `Bar`",
        ),
    ];
    let registry = registry();
    for (text, expected) in cases {
        for err in [
            Scene::from_ron_str(text).unwrap_err(),
            Scene::from_ron_str_with(text, &registry).unwrap_err(),
        ] {
            let message = err.to_string();
            assert!(message.contains(expected), "{text}: {message}");
            assert!(
                !message.contains("EntityDoc") && !message.contains("PrefabDoc"),
                "{text}: {message}"
            );
        }
    }
}

#[test]
fn ron_extensions_read_the_same_with_and_without_the_registry() {
    let cases = [
        (
            "#![enable(unwrap_newtypes)]\n(entities: [(id: 1, components: {\"Health\": 3})])",
            true,
        ),
        (
            "#![enable(implicit_some)]\n(resources: {\"Camera\": (follows: 1)}, entities: [(id: 1)])",
            true,
        ),
        (
            "#![enable(unwrap_variant_newtypes)]\n(entities: [(id: 1, components: {\"Health\": (3)})])",
            true,
        ),
        (
            // explicit_struct_names asks a name of the document's own structs
            // too: `Scene`, `Entity`, `Prefab`.
            "#![enable(explicit_struct_names)]\nScene(prefabs: {\"P\": Prefab(components: {\"Health\": Health(1)})}, entities: [Entity(id: 1, components: {\"Position\": Position(x: 1.0, y: 2.0)})])",
            true,
        ),
        (
            // Without them: refused, the same way by both readers.
            "#![enable(explicit_struct_names)]\n(entities: [(id: 1, components: {\"Position\": Position(x: 1.0, y: 2.0)})])",
            false,
        ),
        (
            "#![enable(explicit_struct_names)]\nScene(entities: [Entity(id: 1, components: {\"Position\": (x: 1.0, y: 2.0)})])",
            false,
        ),
        // The names may be written without the extension too, and must
        // then be right.
        ("Scene(entities: [Entity(id: 1)])", true),
        ("Doc(entities: [(id: 1)])", false),
        ("#![enable(no_such_extension)]\n(entities: [])", false),
        (
            "#![enable(unwrap_newtypes)]\n#![enable(implicit_some)]\n(entities: [(id: 1, components: {\"Health\": 3})])",
            true,
        ),
        ("#![enable(unwrap_newtypes)]", false),
        ("#![enable(", false),
    ];
    for (text, ok) in cases {
        let result = load_both(text, Fmt::Ron);
        assert_eq!(result.is_ok(), ok, "{text}: {result:?}");
    }
    // The values take the extensions.
    let registry = registry();
    let text = "#![enable(unwrap_newtypes)]\n(entities: [(id: 1, components: {\"Health\": 3})])";
    for scene in [
        Scene::from_ron_str(text).unwrap(),
        Scene::from_ron_str_with(text, &registry).unwrap(),
    ] {
        let mut world = World::new();
        let spawned = scene.spawn_into(&mut world, &registry).unwrap();
        assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(3)));
    }
}

// ----- numbers ------------------------------------------------------------------------

#[test]
fn huge_numbers_are_shape_errors_or_syntax_errors_never_wrapped() {
    for (text, component) in [
        (
            "(entities: [(id: 1, components: {\"Health\": (4294967296)})])",
            "Health",
        ),
        (
            "(entities: [(id: 1, components: {\"Health\": (340282366920938463463374607431768211456)})])",
            "Health",
        ),
        (
            "(entities: [(id: 1, components: {\"Health\": (-1)})])",
            "Health",
        ),
        (
            "(entities: [(id: 1, components: {\"Health\": (1e400)})])",
            "Health",
        ),
        (
            "(resources: {\"Score\": (99999999999999999999999)})",
            "Score",
        ),
    ] {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(
            matches!(&err, SceneError::WrongShape { component: c, .. } if c == component)
                || matches!(&err, SceneError::Syntax { .. }),
            "{text}: {err:?}"
        );
    }
    for (text, component) in [
        (
            "{\"entities\": [{\"id\": 1, \"components\": {\"Health\": 4294967296}}]}",
            "Health",
        ),
        (
            "{\"entities\": [{\"id\": 1, \"components\": {\"Health\": 1e400}}]}",
            "Health",
        ),
        (
            "{\"entities\": [{\"id\": 1, \"components\": {\"Speed\": 1e400}}]}",
            "Speed",
        ),
        (
            "{\"entities\": [{\"id\": 1, \"components\": {\"Health\": 99999999999999999999999}}]}",
            "Health",
        ),
        (
            "{\"resources\": {\"Score\": -99999999999999999999999}}",
            "Score",
        ),
    ] {
        let err = load_both(text, Fmt::Json).unwrap_err();
        assert!(
            matches!(&err, SceneError::WrongShape { component: c, .. } if c == component)
                || matches!(&err, SceneError::Syntax { .. }),
            "{text}: {err:?}"
        );
        assert!(line_of(&err).is_some(), "{err:?}");
    }
    // Ids: too large, fractional, negative, exponent: syntax errors.
    for text in [
        "(entities: [(id: 18446744073709551616)])",
        "(entities: [(id: 1.5)])",
        "(entities: [(id: -0.0)])",
        "(entities: [(id: 1e3)])",
        "(entities: [(id: \"1\")])",
    ] {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(matches!(&err, SceneError::Syntax { .. }), "{text}: {err:?}");
    }
    for text in [
        "{\"entities\": [{\"id\": 18446744073709551616}]}",
        "{\"entities\": [{\"id\": 1e3}]}",
        "{\"entities\": [{\"id\": 1.0}]}",
        "{\"entities\": [{\"id\": -1}]}",
    ] {
        let err = load_both(text, Fmt::Json).unwrap_err();
        assert!(matches!(&err, SceneError::Syntax { .. }), "{text}: {err:?}");
    }
}

#[test]
fn json_ids_keep_all_64_bits() {
    // 2^53 + 1 is not a double: a reader through f64 would fold it onto
    // 2^53.
    let a = (1u64 << 53) + 1;
    let b = 1u64 << 53;
    let text = format!(
        "{{\"entities\": [{{\"id\": {a}}}, {{\"id\": {b}, \"components\": {{\"Target\": {a}}}}}]}}"
    );
    assert_eq!(load_both(&text, Fmt::Json), Ok(2));
    let registry = registry();
    let mut world = World::new();
    let spawned = Scene::from_json_str_with(&text, &registry)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    assert_ne!(spawned[a], spawned[b]);
    assert_eq!(world.get::<Target>(spawned[b]).unwrap().0, spawned[a]);
}

// ----- ids -----------------------------------------------------------------------------

#[test]
fn ids_sharing_an_index_with_different_generations_are_two_entities() {
    // 5 and (1 << 32) | 5 are the same slot at two generations: a world
    // cannot hold both handles, so one gets a fresh handle; references
    // still go to the right one.
    let g1 = (1u64 << 32) | 5;
    let text = format!(
        "(entities: [(id: 5, components: {{\"Target\": ({g1})}}), (id: {g1}, components: {{\"Target\": (5)}})])"
    );
    assert_eq!(load_both(&text, Fmt::Ron), Ok(2));
    let registry = registry();
    let mut world = World::new();
    let spawned = Scene::from_ron_str(&text)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    let (a, b) = (spawned[5], spawned[g1]);
    assert_ne!(a, b);
    assert_eq!(world.get::<Target>(a).unwrap().0, b);
    assert_eq!(world.get::<Target>(b).unwrap().0, a);
    world.check_invariants();
}

#[test]
fn huge_entity_indices_load_into_an_empty_world() {
    // Index 4,000,000,000: keeping it exactly would mean a slot table of
    // four billion entries; the load must not try.
    for id in [
        4_000_000_000u64,
        u32::MAX as u64 - 1,
        u32::MAX as u64,
        (7u64 << 32) | 3_999_999_999,
    ] {
        let text = format!("(entities: [(id: {id}, components: {{\"Target\": ({id})}}), (id: 0)])");
        let registry = registry();
        let mut world = World::new();
        let spawned = {
            Scene::from_ron_str(&text)
                .unwrap()
                .spawn_into(&mut world, &registry)
                .unwrap()
        };
        assert_eq!(world.len(), 2);
        let e = spawned[id];
        assert_eq!(world.get::<Target>(e).unwrap().0, e);
        world.check_invariants();
        // The world goes on.
        let more = world.spawn(Health(1));
        assert!(world.contains(more));
    }
}

#[test]
fn reserved_ids_are_refused_everywhere_they_appear() {
    let big = 18446744069414584325u64; // 0xFFFF_FFFF_0000_0005
    // As an entity's id, in both readers and in JSON.
    let err = load_both(&format!("(entities: [(id: 5), (id: {big})])"), Fmt::Ron).unwrap_err();
    assert!(
        matches!(err, SceneError::ReservedId { id, .. } if id == big),
        "{err:?}"
    );
    let err = load_both(
        &format!("{{\"entities\": [{{\"id\": 5}}, {{\"id\": {big}}}]}}"),
        Fmt::Json,
    )
    .unwrap_err();
    assert!(
        matches!(err, SceneError::ReservedId { id, .. } if id == big),
        "{err:?}"
    );
    // As a relation target: never taken for entity 5.
    let text =
        format!("(entities: [(id: 5), (id: 6, components: {{\"ChildOf\": [({big}, ())]}})])");
    let err = load_both(&text, Fmt::Ron).unwrap_err();
    assert!(err.to_string().contains(&big.to_string()), "{err}");
    // In a resource's reference.
    let text = format!("(resources: {{\"Camera\": (follows: Some({big}))}}, entities: [(id: 5)])");
    let err = load_both(&text, Fmt::Ron).unwrap_err();
    assert!(err.to_string().contains(&big.to_string()), "{err}");
    // In a runtime-defined entity field.
    let text = format!(
        "(schemas: {{\"Owner\": {{\"who\": \"entity\"}}}}, entities: [(id: 5), (id: 6, components: {{\"Owner\": {{\"who\": {big}}}}})])"
    );
    let err = load_both(&text, Fmt::Ron).unwrap_err();
    assert!(err.to_string().contains(&big.to_string()), "{err}");
}

#[test]
fn an_entity_referring_to_itself() {
    let text =
        "(entities: [(id: 1, components: {\"Target\": (1), \"Damage\": [(1, (amount: 2))]})])";
    assert_eq!(load_both(text, Fmt::Ron), Ok(1));
    let registry = registry();
    let mut world = World::new();
    let spawned = Scene::from_ron_str(text)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    let e = spawned[1];
    assert_eq!(world.get::<Target>(e).unwrap().0, e);
    assert_eq!(world.relation::<Damage>(e, e), Some(&Damage { amount: 2 }));
    // And it saves and loads again the same, in every format.
    let saved = Scene::from_world(&world, &registry).unwrap();
    let ron = saved.to_ron_string().unwrap();
    let json = saved.to_json_string().unwrap();
    let bin = saved.to_binary().unwrap();
    for scene in [
        Scene::from_ron_str(&ron).unwrap(),
        Scene::from_json_str(&json).unwrap(),
        Scene::from_binary(&bin).unwrap(),
    ] {
        let mut copy = World::new();
        let s = scene.spawn_into(&mut copy, &registry).unwrap();
        let e2 = s[e.to_bits()];
        assert_eq!(e2, e, "an empty world keeps the saved handle");
        assert_eq!(copy.get::<Target>(e2).unwrap().0, e2);
        assert_eq!(copy.relation::<Damage>(e2, e2), Some(&Damage { amount: 2 }));
    }
}

// ----- relations ------------------------------------------------------------------------

#[test]
fn hostile_relation_edge_lists() {
    let cases: [(&str, &Check); 9] = [
        (
            "(entities: [(id: 1), (id: 2, components: {\"ChildOf\": 5})])",
            &|e| matches!(e, SceneError::WrongShape { component, .. } if component == "ChildOf"),
        ),
        (
            "(entities: [(id: 1), (id: 2, components: {\"ChildOf\": [(1)]})])",
            &|e| matches!(e, SceneError::WrongShape { component, .. } if component == "ChildOf"),
        ),
        (
            "(entities: [(id: 1), (id: 2, components: {\"ChildOf\": [(1, (), 3)]})])",
            &|e| matches!(e, SceneError::WrongShape { component, .. } if component == "ChildOf"),
        ),
        (
            "(entities: [(id: 1), (id: 2, components: {\"Damage\": [(1, (amount: \"x\"))]})])",
            &|e| matches!(e, SceneError::WrongShape { component, path, .. } if component == "Damage" && path.contains("amount")),
        ),
        (
            "(entities: [(id: 1), (id: 2, components: {\"Damage\": [(-1, (amount: 1))]})])",
            &|e| matches!(e, SceneError::WrongShape { component, .. } if component == "Damage"),
        ),
        (
            "(entities: [(id: 1), (id: 2, components: {\"ChildOf\": [(1, ())], \"ChildOf\": []})])",
            &|e| matches!(e, SceneError::Duplicate { name, .. } if name == "ChildOf"),
        ),
        // A relation as a resource.
        (
            "(resources: {\"ChildOf\": []})",
            &|e| matches!(e, SceneError::UnknownComponent { kind: "resource", name, .. } if name == "ChildOf"),
        ),
        // Edges inside a prefab to an id the scene lacks.
        (
            "(prefabs: {\"P\": (components: {\"ChildOf\": [(9, ())]})}, entities: [(id: 1, prefab: \"P\")])",
            &|e| matches!(e, SceneError::DanglingReference { id: 9, component, .. } if component == "ChildOf"),
        ),
        // An empty edge list is fine: checked below.
        (
            "(entities: [(id: 1), (id: 2, components: {\"ChildOf\": [(1, ())], \"Health\": \"x\"})])",
            &|e| matches!(e, SceneError::WrongShape { component, .. } if component == "Health"),
        ),
    ];
    for (text, check) in cases {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(check(&err), "{text}: {err:?}");
    }
    assert_eq!(
        load_both(
            "(entities: [(id: 1, components: {\"ChildOf\": []})])",
            Fmt::Ron
        ),
        Ok(1)
    );
    // Deeply nested edge list.
    let deep = format!(
        "(entities: [(id: 1), (id: 2, components: {{\"ChildOf\": {}{}}})])",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let err = load_both(&deep, Fmt::Ron).unwrap_err();
    assert!(
        err.to_string().contains("deep") || err.to_string().contains("recursion"),
        "{err}"
    );
    let deep = format!(
        "{{\"entities\": [{{\"id\": 1}}, {{\"id\": 2, \"components\": {{\"Damage\": [[1, {}1{}]]}}}}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let err = load_both(&deep, Fmt::Json).unwrap_err();
    assert!(
        err.to_string().contains("deep") || err.to_string().contains("recursion"),
        "{err}"
    );
}

#[test]
fn a_failed_relation_load_leaks_no_edge_and_the_next_load_works() {
    let registry = registry();
    let mut world = World::new();
    let parent = world.spawn(Health(1));
    let child = world.spawn(Health(2));
    world.relate(child, parent, ChildOf(parent)).unwrap();
    let before = Scene::from_world(&world, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    // The edges are fine, the last entity's value is not.
    let bad = "(entities: [(id: 1), (id: 2, components: {\"ChildOf\": [(1, ())], \"Damage\": [(1, (amount: 3))]}), (id: 3, components: {\"Health\": \"x\"})])";
    for _ in 0..2 {
        let err = Scene::from_ron_str(bad)
            .unwrap()
            .spawn_into(&mut world, &registry)
            .unwrap_err();
        assert!(matches!(err, SceneError::WrongShape { .. }), "{err:?}");
        world.check_invariants();
        assert_eq!(
            Scene::from_world(&world, &registry)
                .unwrap()
                .to_ron_string()
                .unwrap(),
            before
        );
        assert_eq!(world.children(parent), [child]);
    }
    // The same scene, fixed, loads into the same world.
    let good = bad.replace("\"x\"", "(3)");
    let spawned = Scene::from_ron_str(&good)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    assert_eq!(world.len(), 5);
    assert_eq!(world.children(spawned[1]), [spawned[2]]);
    assert_eq!(world.children(parent), [child]);
    world.check_invariants();
}

// ----- loading twice, failed loads and prefabs ------------------------------------------

#[test]
fn a_scene_loaded_twice_gives_two_sets_of_entities() {
    let registry = registry();
    let text = "(prefabs: {\"P\": (components: {\"Health\": (7)})}, resources: {\"Score\": (3)},
        entities: [(id: 1, prefab: \"P\"), (id: 2, components: {\"Target\": (1), \"ChildOf\": [(1, ())]})])";
    let scene = Scene::from_ron_str_with(text, &registry).unwrap();
    let mut world = World::new();
    let first = scene.spawn_into(&mut world, &registry).unwrap();
    let second = scene.spawn_into(&mut world, &registry);
    let second = second.unwrap_or_else(|e| panic!("loading the same scene again: {e}"));
    assert_eq!(world.len(), 4);
    for s in [&first, &second] {
        assert_eq!(world.get::<Target>(s[2]).unwrap().0, s[1]);
        assert_eq!(world.children(s[1]), [s[2]]);
        assert_eq!(world.get::<Health>(s[1]), Ok(&Health(7)));
    }
    assert_ne!(first[1], second[1]);
    assert_eq!(world.get_resource::<Score>(), Some(&Score(3)));
    let e = world.spawn_prefab("P", ()).unwrap();
    assert_eq!(world.get::<Health>(e), Ok(&Health(7)));
    world.check_invariants();
}

#[test]
fn a_prefab_of_a_scene_whose_load_failed_is_not_there() {
    let registry = registry();
    let text = "(prefabs: {\"Ghost\": (components: {\"Health\": (7)})},
        entities: [(id: 1, prefab: \"Ghost\"), (id: 2, components: {\"Health\": \"x\"})])";
    let mut world = World::new();
    for scene in [
        Scene::from_ron_str(text).unwrap(),
        Scene::from_ron_str_with(text, &registry).unwrap(),
    ] {
        assert!(scene.spawn_into(&mut world, &registry).is_err());
        let err = world.spawn_prefab("Ghost", ()).unwrap_err();
        assert!(
            matches!(&err, SceneError::UnknownPrefab { name, .. } if name == "Ghost"),
            "{err:?}"
        );
        assert!(world.is_empty());
    }
    // A prefab whose own value is bad: the load fails, nothing of it stays.
    let text = "(prefabs: {\"Bad\": (components: {\"Health\": \"x\"})}, entities: [])";
    let err = load_both(text, Fmt::Ron).unwrap_err();
    assert!(matches!(err, SceneError::WrongShape { .. }), "{err:?}");
    let mut world = World::new();
    assert!(
        Scene::from_ron_str(text)
            .unwrap()
            .spawn_into(&mut world, &registry)
            .is_err()
    );
    assert!(world.spawn_prefab("Bad", ()).is_err());
    assert!(world.is_empty());
}

// ----- prefabs ------------------------------------------------------------------------------

#[test]
fn hostile_values_inside_prefabs_are_found_in_both_readers() {
    let deep = format!(
        "(prefabs: {{\"P\": (components: {{\"Label\": ({}\"x\"{})}})}})",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    let err = load_both(&deep, Fmt::Ron).unwrap_err();
    assert!(
        err.to_string().contains("deep") || err.to_string().contains("recursion"),
        "{err}"
    );
    let text = "(prefabs: {\n \"P\": (components: {\n  \"Body\": (pos: (x: 1.0, y:\n   \"up\"), mass: 1.0)})})";
    let err = load_both(text, Fmt::Ron).unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, path, at: w, .. }
            if component == "Body" && path == "pos.y" && *w == at(text, "\"up\"")),
        "{err:?}"
    );
    let text = "{\"prefabs\": {\n \"P\": {\"components\": {\n  \"Body\": {\"pos\": {\"x\": 1.0, \"y\":\n   \"up\"}, \"mass\": 1.0}}}}}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, path, .. }
            if component == "Body" && path == "pos.y"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(4), "{err}");
    // Unknown component in a prefab only an extending prefab uses.
    let text = "(prefabs: {\"A\": (components: {\"Helth\": (1)}),\n \"B\": (extends: \"A\")}, entities: [])";
    let err = load_both(text, Fmt::Ron).unwrap_err();
    assert!(
        matches!(&err, SceneError::UnknownComponent { name, suggestion: Some(s), .. } if name == "Helth" && s == "Health"),
        "{err:?}"
    );
}

#[test]
fn prefab_cycles_name_the_prefab_and_say_where() {
    let text = "(prefabs: {\n  \"A\": (extends: \"B\"),\n  \"B\": (extends: \"A\"),\n})";
    for (text, format) in [
        (text.to_owned(), Fmt::Ron),
        (
            "{\"prefabs\": {\n  \"A\": {\"extends\": \"B\"},\n  \"B\": {\"extends\": \"A\"}\n}}"
                .to_owned(),
            Fmt::Json,
        ),
    ] {
        let err = load_both(&text, format).unwrap_err();
        assert!(
            matches!(&err, SceneError::PrefabCycle { chain, .. } if chain == &["A", "B", "A"]),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("line 2"), "{format:?}: {message}");
    }
}

#[test]
fn a_long_prefab_chain_of_distinct_components_loads_whole() {
    // Each prefab of a 2,000-deep chain adds a component of its own: the
    // last has 2,000. Copying each prefab's whole list down the chain
    // would be 2,000,000 copies.
    let n = 2000;
    let mut text = String::from("(schemas: {");
    for i in 0..n {
        text += &format!("\"C{i}\": {{\"v\": \"int\"}},");
    }
    text += "}, prefabs: {\"P0\": (components: {\"C0\": {\"v\": 0}}),\n";
    for i in 1..n {
        text += &format!(
            "\"P{i}\": (extends: \"P{}\", components: {{\"C{i}\": {{\"v\": {i}}}}}),\n",
            i - 1
        );
    }
    text += &format!("}}, entities: [(id: 1, prefab: \"P{}\")])", n - 1);
    let registry = registry();
    let scene = Scene::from_ron_str(&text).unwrap();
    let mut world = World::new();
    let spawned = { scene.spawn_into(&mut world, &registry).unwrap() };
    let v = world.get_dynamic(spawned[1], "C1999").unwrap();
    assert_eq!(v.get("v").unwrap().as_int(), Some(1999));
    let v = world.get_dynamic(spawned[1], "C0").unwrap();
    assert_eq!(v.get("v").unwrap().as_int(), Some(0));
}

/// Every prefab of a chain, asked for in reverse order and at run time:
/// each gets its whole chain, overrides applied, however its list was
/// made (from the root or from a list kept part way down).
#[test]
fn every_prefab_of_a_chain_gets_its_whole_chain_in_any_order() {
    let n = 300;
    // Prefab i adds C{i} = i, and (every third) overrides C{i / 2}.
    let expected = |k: usize| -> Vec<i64> {
        let mut v: Vec<i64> = (0..=k as i64).collect();
        for m in (0..=k).filter(|m| m % 3 == 0 && *m > 0) {
            v[m / 2] = 1000 + m as i64;
        }
        v
    };
    let mut text = String::from("(schemas: {");
    for i in 0..n {
        text += &format!("\"C{i}\": {{\"v\": \"int\"}},");
    }
    text += "}, prefabs: {\n";
    for i in 0..n {
        let extends = if i == 0 {
            String::new()
        } else {
            format!("extends: \"P{}\", ", i - 1)
        };
        let mut components = format!("\"C{i}\": {{\"v\": {i}}}");
        if i % 3 == 0 && i > 0 {
            components += &format!(", \"C{}\": {{\"v\": {}}}", i / 2, 1000 + i);
        }
        text += &format!("\"P{i}\": ({extends}components: {{{components}}}),\n");
    }
    text += "}, entities: [";
    for e in 0..n {
        text += &format!("(id: {e}, prefab: \"P{}\"),", n - 1 - e);
    }
    text += "])";
    let registry = registry();
    let values = |world: &World, e: Entity, k: usize| -> Vec<i64> {
        (0..=k)
            .map(|j| {
                world
                    .get_dynamic(e, &format!("C{j}"))
                    .unwrap()
                    .get("v")
                    .unwrap()
                    .as_int()
                    .unwrap()
            })
            .collect()
    };
    for scene in [
        Scene::from_ron_str(&text).unwrap(),
        Scene::from_ron_str_with(&text, &registry).unwrap(),
    ] {
        let mut world = World::new();
        let spawned = scene.spawn_into(&mut world, &registry).unwrap();
        for e in 0..n {
            let k = n - 1 - e;
            assert_eq!(values(&world, spawned[e as u64], k), expected(k), "P{k}");
            assert!(
                world
                    .get_dynamic(spawned[e as u64], &format!("C{}", k + 1))
                    .is_err()
            );
        }
        for k in [150, 7, 0, n - 1] {
            let e = world.spawn_prefab(&format!("P{k}"), ()).unwrap();
            assert_eq!(values(&world, e, k), expected(k), "spawn_prefab P{k}");
        }
    }
}

#[test]
fn long_chains_and_wide_entities_in_json_and_with_the_registry() {
    let n = 2000;
    let mut text = String::from("{\"prefabs\": {\"P0\": {\"components\": {\"Health\": 0}}");
    for i in 1..n {
        text += &format!(
            ",\n\"P{i}\": {{\"extends\": \"P{}\", \"components\": {{\"Health\": {i}}}}}",
            i - 1
        );
    }
    text += &format!(
        "}}, \"entities\": [{{\"id\": 1, \"prefab\": \"P{}\"}}]}}",
        n - 1
    );
    assert_eq!(load_both(&text, Fmt::Json), Ok(1));
    // A cycle closing the chain: found quickly, named.
    let cyclic = text.replace(
        "\"P0\": {\"components\"",
        &format!("\"P0\": {{\"extends\": \"P{}\", \"components\"", n - 1),
    );
    let err = load_both(&cyclic, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::PrefabCycle { chain, .. } if chain.len() == n + 1),
        "{}",
        shorten(&err.to_string())
    );
    // 50,000 components (runtime-defined would need 50,000 schemas): the
    // same one, repeated, is a duplicate found at the second.
    let mut wide = String::from("{\"entities\": [{\"id\": 1, \"components\": {\"Health\": 1");
    for _ in 1..50_000 {
        wide += ",\n\"Health\": 1";
    }
    wide += "}}]}";
    let err = load_both(&wide, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { name, .. } if name == "Health"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(2));
}

// ----- resources ----------------------------------------------------------------------------

#[test]
fn many_and_hostile_resources() {
    let mut text = String::from("(resources: {\n");
    for i in 0..10_000 {
        text += &format!("\"Unknown{i}\": ({i}),\n");
    }
    text += "})";
    let err = load_both(&text, Fmt::Ron).unwrap_err();
    assert!(
        matches!(&err, SceneError::UnknownComponent { kind: "resource", name, .. } if name == "Unknown0"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(2));
    let mut text = String::from("(resources: {\n");
    for i in 0..10_000 {
        text += &format!("\"Score\": ({i}),\n");
    }
    text += "})";
    let err = load_both(&text, Fmt::Ron).unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { what: "resource", name, .. } if name == "Score"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(3));
    // A resource's value on its own line, wrong: reported on that line.
    let text = "(resources: {\n  \"Score\":\n    \"lots\",\n})";
    let err = load_both(text, Fmt::Ron).unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, path, at: w, .. }
            if component == "Score" && path.is_empty() && *w == at(text, "\"lots\"")),
        "{err:?}"
    );
    let text = "{\"resources\": {\n  \"Score\":\n    \"lots\"\n}}";
    let err = load_both(text, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, path, .. }
            if component == "Score" && path.is_empty()),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(3), "{err}");
    // A resource referring to an entity the scene lacks.
    let text = "(resources: {\"Camera\": (follows: Some(4))}, entities: [(id: 1)])";
    let err = load_both(text, Fmt::Ron).unwrap_err();
    assert!(
        matches!(&err, SceneError::DanglingReference { id: 4, component, .. } if component == "Camera"),
        "{err:?}"
    );
    // A failed load leaves the world's resource alone.
    let registry = registry();
    let mut world = World::new();
    world.insert_resource(Score(1));
    let text =
        "(resources: {\"Score\": (2)}, entities: [(id: 1, components: {\"Health\": \"x\"})])";
    assert!(
        Scene::from_ron_str(text)
            .unwrap()
            .spawn_into(&mut world, &registry)
            .is_err()
    );
    assert_eq!(world.get_resource::<Score>(), Some(&Score(1)));
}

// ----- runtime schemas ----------------------------------------------------------------------

#[test]
fn hostile_runtime_schemas_and_values() {
    let cases: [(&str, &Check); 8] = [
        // A field of the wrong type, on its own line.
        (
            "(schemas: {\"Mana\": {\"max\": \"int\"}},\n entities: [(id: 1, components: {\"Mana\": {\"max\":\n \"many\"}})])",
            &|e| {
                matches!(e, SceneError::WrongShape { component, path, .. } if component == "Mana" && path == "max")
                    && line_of(e) == Some(3)
            },
        ),
        // A whole value of the wrong shape: empty path.
        (
            "(schemas: {\"Mana\": {\"max\": \"int\"}}, entities: [(id: 1, components: {\"Mana\": [1, 2]})])",
            &|e| matches!(e, SceneError::WrongShape { component, path, .. } if component == "Mana" && path.is_empty()),
        ),
        // An int field too large for i64.
        (
            "(schemas: {\"Mana\": {\"max\": \"int\"}}, entities: [(id: 1, components: {\"Mana\": {\"max\": 99999999999999999999}})])",
            &|e| matches!(e, SceneError::WrongShape { component, path, .. } if component == "Mana" && path == "max"),
        ),
        // An unknown field.
        (
            "(schemas: {\"Mana\": {\"max\": \"int\"}}, entities: [(id: 1, components: {\"Mana\": {\"max\": 1, \"min\": 0}})])",
            &|e| matches!(e, SceneError::WrongShape { component, .. } if component == "Mana"),
        ),
        // A field given twice.
        (
            "(schemas: {\"Mana\": {\"max\": \"int\"}}, entities: [(id: 1, components: {\"Mana\": {\"max\": 1, \"max\": 2}})])",
            &|e| {
                matches!(e, SceneError::WrongShape { component, .. } if component == "Mana")
                    || matches!(e, SceneError::Duplicate { .. })
            },
        ),
        // An entity field to an id the scene lacks.
        (
            "(schemas: {\"Owner\": {\"who\": \"entity\"}}, entities: [(id: 1, components: {\"Owner\": {\"who\": 77}})])",
            &|e| matches!(e, SceneError::DanglingReference { component, id: 77, .. } if component == "Owner"),
        ),
        // A schema in a resource's place.
        (
            "(schemas: {\"Mana\": {\"max\": \"int\"}}, resources: {\"Mana\": {\"max\": 1}})",
            &|e| matches!(e, SceneError::UnknownComponent { kind: "resource", name, .. } if name == "Mana"),
        ),
        // A schema's field type that is not a type, on line 2.
        (
            "(schemas: {\"A\": {\"v\": \"int\"},\n \"B\": {\"v\": [\"int\"]}})",
            &|e| {
                matches!(e, SceneError::Schema { .. } | SceneError::Syntax { .. })
                    && line_of(e) == Some(2)
            },
        ),
    ];
    for (text, check) in cases {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(check(&err), "{text}: {err:?}");
    }
    // Deep nesting inside a runtime-defined value, in both formats.
    let deep = format!(
        "(schemas: {{\"Mana\": {{\"max\": \"int\"}}}}, entities: [(id: 1, components: {{\"Mana\": {{\"max\": {}1{}}}}})])",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let err = load_both(&deep, Fmt::Ron).unwrap_err();
    assert!(
        err.to_string().contains("deep") || err.to_string().contains("recursion"),
        "{err}"
    );
    let deep = format!(
        "{{\"schemas\": {{\"Mana\": {{\"max\": \"int\"}}}}, \"entities\": [{{\"id\": 1, \"components\": {{\"Mana\": {{\"max\": {}1{}}}}}}}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let err = load_both(&deep, Fmt::Json).unwrap_err();
    assert!(
        err.to_string().contains("deep") || err.to_string().contains("recursion"),
        "{err}"
    );
}

#[test]
fn a_schema_with_20_000_fields_loads() {
    // 20,000 fields: a scan of the fields per field took 15 s here (95 s
    // for 50,000); by hash, well under a second.
    let mut text = String::from("(schemas: {\"Wide\": {");
    for i in 0..20_000 {
        text += &format!("\"f{i}\": \"int\",");
    }
    text += "}}, entities: [(id: 1, components: {\"Wide\": {";
    for i in 0..20_000 {
        text += &format!("\"f{i}\": {i},");
    }
    text += "}})])";
    assert_eq!(load_both(&text, Fmt::Ron), Ok(1));
}

#[test]
fn json_arrays_are_not_documents_entities_or_prefabs() {
    // serde reads a struct from a sequence of its fields in order; a
    // scene's JSON shape is objects only, as the RON shape is structs.
    for text in [
        "[]",
        "[[], {}, {}, []]",
        "{\"entities\": [[1]]}",
        "{\"entities\": [[1, null, {}]]}",
        "{\"prefabs\": {\"P\": [null, {}]}}",
        "{\"prefabs\": {\"P\": []}}",
    ] {
        let err = load_both(text, Fmt::Json).unwrap_err();
        assert!(
            matches!(&err, SceneError::Syntax { format: "JSON", .. }),
            "{text}: {err:?}"
        );
    }
}

// ----- long strings -------------------------------------------------------------------------

#[test]
fn very_long_names_and_strings() {
    // A 4 MB string value loads exactly.
    let long = "é".repeat(2 << 20);
    let text = format!("(entities: [(id: 1, components: {{\"Label\": (\"{long}\")}})])");
    assert_eq!(load_both(&text, Fmt::Ron), Ok(1));
    let registry = registry();
    let mut world = World::new();
    let spawned = Scene::from_ron_str_with(&text, &registry)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    assert_eq!(world.get::<Label>(spawned[1]).unwrap().0, long);
    // A 1 MB unknown component / prefab / resource name: an error, quickly
    // (a "did you mean" must not compare a megabyte against every name).
    let name = "H".repeat(1 << 20);
    for (text, kind) in [
        (
            format!("(entities: [(id: 1, components: {{\"{name}\": ()}})])"),
            "component",
        ),
        (format!("(resources: {{\"{name}\": ()}})"), "resource"),
        (
            format!("(entities: [(id: 1, prefab: \"{name}\")])"),
            "prefab",
        ),
        (
            format!("(prefabs: {{\"P\": (extends: \"{name}\")}})"),
            "prefab",
        ),
    ] {
        let err = load_both(&text, Fmt::Ron).unwrap_err();
        match &err {
            SceneError::UnknownComponent {
                name: n,
                suggestion,
                ..
            }
            | SceneError::UnknownPrefab {
                name: n,
                suggestion,
                ..
            } => {
                assert_eq!(n.len(), name.len());
                assert_eq!(suggestion, &None);
            }
            other => panic!("{kind}: {}", shorten(&other.to_string())),
        }
    }
}

// ----- NaN and infinities -------------------------------------------------------------------

#[test]
fn json_refuses_non_finite_floats_wherever_they_are() {
    let registry = registry();
    // A runtime-defined float field.
    let mut world = World::new();
    world
        .register_dynamic_component(
            mosaic::ComponentSchema::new("Heat").field("t", mosaic::FieldType::Float),
        )
        .unwrap();
    let e = world.spawn(());
    world
        .insert_dynamic(
            e,
            mosaic::ComponentSchema::new("Heat")
                .field("t", mosaic::FieldType::Float)
                .instantiate([("t", f64::NAN.into())])
                .unwrap(),
        )
        .unwrap();
    let scene = Scene::from_world(&world, &registry).unwrap();
    let err = scene.to_json_string().unwrap_err();
    assert!(
        matches!(&err, SceneError::Encode { component, .. } if component == "Heat"),
        "{err:?}"
    );
    // ... and RON keeps it.
    let ron = scene.to_ron_string().unwrap();
    let mut copy = World::new();
    let s = Scene::from_ron_str(&ron)
        .unwrap()
        .spawn_into(&mut copy, &registry)
        .unwrap();
    let t = copy
        .get_dynamic(s[e.to_bits()], "Heat")
        .unwrap()
        .get("t")
        .unwrap()
        .as_float();
    assert!(t.is_some_and(f64::is_nan), "{t:?}");
    // A nested f64 field, a relation's data... read with the registry
    // from RON and written as JSON.
    for text in [
        "(entities: [(id: 1, components: {\"Body\": (pos: (x: 0.0, y: 0.0), mass: NaN)})])",
        "(entities: [(id: 1, components: {\"Body\": (pos: (x: inf, y: 0.0), mass: 1.0)})])",
        "(entities: [(id: 1, components: {\"Speed\": (-inf)})])",
    ] {
        // (Read with the registry, a RON scene writes as RON until
        // resolved, like one read without it.)
        let scene = Scene::from_ron_str_with(text, &registry).unwrap();
        let err = scene.to_json_string().unwrap_err();
        assert!(
            matches!(&err, SceneError::Unresolved { .. }),
            "{text}: {err:?}"
        );
        let mut resolved = Scene::from_ron_str(text).unwrap();
        resolved.resolve(&registry).unwrap();
        let err = resolved.to_json_string().unwrap_err();
        assert!(matches!(&err, SceneError::Encode { .. }), "{text}: {err:?}");
        // Binary keeps them.
        let bin = resolved.to_binary().unwrap();
        let mut copy = World::new();
        Scene::from_binary(&bin)
            .unwrap()
            .spawn_into(&mut copy, &registry)
            .unwrap();
        assert_eq!(copy.len(), 1);
    }
    // A NaN resource.
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Wind(f64);
    let mut registry = registry;
    registry.register_resource::<Wind>();
    let mut world = World::new();
    world.insert_resource(Wind(f64::INFINITY));
    let err = Scene::from_world(&world, &registry)
        .unwrap()
        .to_json_string()
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::Encode { component, .. } if component == "Wind"),
        "{err:?}"
    );
}

// ----- wrong shapes: paths and lines --------------------------------------------------------

#[test]
fn whole_value_errors_have_an_empty_path_in_every_reader() {
    let ron = [
        "(entities: [(id: 1, components: {\"Body\": 3})])",
        "(entities: [(id: 1, components: {\"Health\": [1]})])",
        "(resources: {\"Score\": \"x\"})",
        "(prefabs: {\"P\": (components: {\"Position\": 1})})",
        "(entities: [(id: 1, components: {\"ChildOf\": \"x\"})])",
    ];
    for text in ron {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(
            matches!(&err, SceneError::WrongShape { path, .. } if path.is_empty()),
            "{text}: {err:?}"
        );
        assert!(!err.to_string().contains("field"), "{err}");
    }
    let json = [
        "{\"entities\": [{\"id\": 1, \"components\": {\"Body\": 3}}]}",
        "{\"resources\": {\"Score\": \"x\"}}",
        "{\"prefabs\": {\"P\": {\"components\": {\"Position\": 1}}}}",
    ];
    for text in json {
        let err = load_both(text, Fmt::Json).unwrap_err();
        assert!(
            matches!(&err, SceneError::WrongShape { path, .. } if path.is_empty()),
            "{text}: {err:?}"
        );
    }
    // Binary: a Health value that is not a varint.
    let mut bytes = header();
    bytes.extend_from_slice(&[0, 0, 0, 1, 1, 1, 0, 1]);
    varint(6, &mut bytes);
    bytes.extend_from_slice(b"Health");
    bytes.extend_from_slice(&[1, 0xff]);
    let err = Scene::from_binary(&bytes)
        .unwrap()
        .spawn_into(&mut World::new(), &registry())
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { path, component, .. } if path.is_empty() && component == "Health"),
        "{err:?}"
    );
}

#[test]
fn a_wrong_value_on_its_own_line_is_reported_on_that_line() {
    let ron = "(entities: [(id: 1, components: {\n  \"Position\": (\n    x: 1.0,\n    y: \"up\",\n  ),\n  \"Health\":\n    (\n      -5\n    ),\n})])";
    let err = load_both(ron, Fmt::Ron).unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { path, at: w, .. } if path == "y" && *w == at(ron, "\"up\"")),
        "{err:?}"
    );
    let ron = "(entities: [(id: 1, components: {\n  \"Health\":\n    (\n      -5\n    ),\n})])";
    let err = load_both(ron, Fmt::Ron).unwrap_err();
    assert_eq!(line_of(&err), Some(4), "{err:?}");
    let json = "{\"entities\": [{\"id\": 1, \"components\": {\n  \"Position\": {\n    \"x\": 1.0,\n    \"y\":\n      \"up\"\n  }\n}}]}";
    let err = load_both(json, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { path, .. } if path == "y"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(5), "{err:?}");
    // A missing field: reported at the value.
    let json =
        "{\"entities\": [{\"id\": 1, \"components\": {\n  \"Position\":\n    {\"x\": 1.0}\n}}]}";
    let err = load_both(json, Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, .. } if component == "Position"),
        "{err:?}"
    );
    assert_eq!(line_of(&err), Some(3), "{err:?}");
    // An entity's bad id on its own line.
    let ron = "(entities: [(\n  id:\n    \"one\")])";
    let err = load_both(ron, Fmt::Ron).unwrap_err();
    assert_eq!(line_of(&err), Some(3), "{err:?}");
}

// ----- binary lengths that lie -----------------------------------------------------------------

#[test]
fn binary_lengths_that_lie_are_refused_quickly() {
    let huge = 1u64 << 60;
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    for section in 0..4 {
        let mut b = header();
        for s in 0..section {
            let _ = s;
            b.push(0);
        }
        varint(huge, &mut b);
        cases.push(("a section's length", b));
    }
    // A table with 2^60 ids.
    let mut b = header();
    b.extend_from_slice(&[0, 0, 0, 1]);
    varint(huge, &mut b);
    b.extend_from_slice(&[1, 2, 3]);
    cases.push(("a table's ids", b));
    // A column whose byte length lies.
    let mut b = header();
    b.extend_from_slice(&[0, 0, 0, 1, 1, 1, 0, 1]);
    varint(6, &mut b);
    b.extend_from_slice(b"Health");
    varint(huge, &mut b);
    b.push(1);
    cases.push(("a column's bytes", b));
    // A name whose length lies.
    let mut b = header();
    b.extend_from_slice(&[0, 0, 0, 1, 1, 1, 0, 1]);
    varint(huge, &mut b);
    b.extend_from_slice(b"Health");
    cases.push(("a name", b));
    // A resource value whose length lies.
    let mut b = header();
    b.extend_from_slice(&[0, 1]);
    varint(5, &mut b);
    b.extend_from_slice(b"Score");
    varint(huge, &mut b);
    cases.push(("a resource", b));
    // A schema with 2^60 fields.
    let mut b = header();
    b.extend_from_slice(&[1]);
    varint(4, &mut b);
    b.extend_from_slice(b"Mana");
    varint(huge, &mut b);
    cases.push(("a schema's fields", b));
    // A varint longer than 64 bits.
    let mut b = header();
    b.extend_from_slice(&[0xff; 12]);
    cases.push(("an overlong varint", b));
    for (what, bytes) in cases {
        let err = Scene::from_binary(&bytes).unwrap_err();
        assert!(
            matches!(
                err,
                SceneError::Syntax {
                    format: "binary",
                    ..
                }
            ),
            "{what}: {err:?}"
        );
    }
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Many(Vec<u64>);

#[test]
fn binary_values_whose_lengths_lie_are_shape_errors() {
    let mut registry = registry();
    registry.register::<Many>();
    // A Vec<u64> claiming 2^60 elements, and a String claiming 2^60 bytes.
    for (name, value) in [("Many", 1u64 << 60), ("Label", 1u64 << 60)] {
        let mut v = Vec::new();
        varint(value, &mut v);
        v.extend_from_slice(&[1, 2, 3]);
        let mut b = header();
        b.extend_from_slice(&[0, 0, 0, 1, 1, 1, 0, 1]);
        varint(name.len() as u64, &mut b);
        b.extend_from_slice(name.as_bytes());
        varint(v.len() as u64, &mut b);
        b.extend_from_slice(&v);
        let mut world = World::new();
        let err = {
            Scene::from_binary(&b)
                .unwrap()
                .spawn_into(&mut world, &registry)
        }
        .unwrap_err();
        assert!(
            matches!(&err, SceneError::WrongShape { component, .. } if component == name),
            "{name}: {err:?}"
        );
        assert!(world.is_empty());
    }
    // A table of three ids whose column holds two values; and one of four.
    for values in [&[1u8, 2][..], &[1, 2, 3, 4]] {
        let mut b = header();
        b.extend_from_slice(&[0, 0, 0, 1, 3, 1, 2, 3, 0, 1]);
        varint(6, &mut b);
        b.extend_from_slice(b"Health");
        varint(values.len() as u64, &mut b);
        b.extend_from_slice(values);
        let mut world = World::new();
        let err = Scene::from_binary(&b)
            .unwrap()
            .spawn_into(&mut world, &registry)
            .unwrap_err();
        assert!(
            matches!(&err, SceneError::WrongShape { component, .. } if component == "Health"),
            "{values:?}: {err:?}"
        );
        assert!(world.is_empty());
    }
}

#[test]
fn binary_duplicates_across_tables() {
    let registry = registry();
    // Two tables with the same id.
    let mut b = header();
    b.extend_from_slice(&[0, 0, 0, 2, 1, 1, 0, 0, 1, 1, 0, 0]);
    let err = Scene::from_binary(&b)
        .unwrap()
        .spawn_into(&mut World::new(), &registry)
        .unwrap_err();
    assert!(
        matches!(err, SceneError::DuplicateId { id: 1, .. }),
        "{err:?}"
    );
    // A table naming the same column twice.
    let mut b = header();
    b.extend_from_slice(&[0, 0, 0, 1, 1, 1, 0, 2]);
    for _ in 0..2 {
        varint(6, &mut b);
        b.extend_from_slice(b"Health");
        b.extend_from_slice(&[1, 1]);
    }
    let err = Scene::from_binary(&b)
        .unwrap()
        .spawn_into(&mut World::new(), &registry)
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { name, .. } if name == "Health"),
        "{err:?}"
    );
    // A table naming a prefab the scene lacks.
    let mut b = header();
    b.extend_from_slice(&[0, 0, 0, 1, 1, 1, 1, 4]);
    b.extend_from_slice(b"Nope");
    b.push(0);
    let err = Scene::from_binary(&b)
        .unwrap()
        .spawn_into(&mut World::new(), &registry)
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::UnknownPrefab { name, .. } if name == "Nope"),
        "{err:?}"
    );
}

// ----- determinism ---------------------------------------------------------------------------

/// A world with holes (despawned entities), generations above zero,
/// relations, sparse and runtime-defined components and resources.
fn rich_world() -> World {
    let mut world = World::new();
    world
        .register_dynamic_component(
            mosaic::ComponentSchema::new("Mana").field("max", mosaic::FieldType::Int),
        )
        .unwrap();
    let mut kept = Vec::new();
    for i in 0..12u32 {
        let e = match i % 4 {
            0 => world.spawn((Health(i), Speed(i as f32 / 3.0))),
            1 => world.spawn(Label(format!("n{i}"))),
            2 => world.spawn((
                Position {
                    x: i as f32,
                    y: -1.5,
                },
                Health(i),
            )),
            _ => world.spawn(()),
        };
        kept.push(e);
    }
    for &e in kept.iter().step_by(5) {
        world.despawn(e).unwrap();
    }
    // Reuse slots: generation 1.
    let a = world.spawn((Health(100), Label("reused".into())));
    let b = world.spawn(Target(a));
    world.insert_one(a, Target(b)).unwrap();
    world.relate(b, a, ChildOf(a)).unwrap();
    world.relate(kept[3], a, ChildOf(a)).unwrap();
    world.relate(a, b, Damage { amount: 9 }).unwrap();
    world.relate(b, b, Damage { amount: 1 }).unwrap();
    world
        .insert_dynamic(
            kept[2],
            mosaic::ComponentSchema::new("Mana")
                .field("max", mosaic::FieldType::Int)
                .instantiate([("max", i64::MIN.into())])
                .unwrap(),
        )
        .unwrap();
    world.insert_resource(Score(u32::MAX));
    world.insert_resource(Camera { follows: Some(b) });
    world
}

#[test]
fn save_load_save_is_byte_identical_in_every_format_with_the_same_handles() {
    let registry = registry();
    let world = rich_world();
    let saved = Scene::from_world(&world, &registry).unwrap();
    let ron = saved.to_ron_string().unwrap();
    let json = saved.to_json_string().unwrap();
    let bin = saved.to_binary().unwrap();
    let original: Vec<Entity> = world.iter().map(|e| e.id()).collect();
    let readers: [(&str, Reader); 5] = [
        ("ron", Box::new(|| Scene::from_ron_str(&ron).unwrap())),
        (
            "ron with",
            Box::new(|| Scene::from_ron_str_with(&ron, &registry).unwrap()),
        ),
        ("json", Box::new(|| Scene::from_json_str(&json).unwrap())),
        (
            "json with",
            Box::new(|| Scene::from_json_str_with(&json, &registry).unwrap()),
        ),
        ("binary", Box::new(|| Scene::from_binary(&bin).unwrap())),
    ];
    for (what, read) in readers {
        let mut copy = World::new();
        let spawned = read().spawn_into(&mut copy, &registry).unwrap();
        for (id, e) in spawned.iter() {
            assert_eq!(e.to_bits(), id, "{what}: handles kept exactly");
        }
        let order: Vec<Entity> = copy.iter().map(|e| e.id()).collect();
        assert_eq!(order, original, "{what}: iteration order");
        let again = Scene::from_world(&copy, &registry).unwrap();
        assert_eq!(again.to_ron_string().unwrap(), ron, "{what}: RON");
        assert_eq!(again.to_json_string().unwrap(), json, "{what}: JSON");
        assert_eq!(again.to_binary().unwrap(), bin, "{what}: binary");
        // The scene read writes back as read.
        let reread = read();
        match what {
            "ron" | "ron with" => assert_eq!(reread.to_ron_string().unwrap(), ron, "{what}"),
            "json" | "json with" => assert_eq!(reread.to_json_string().unwrap(), json, "{what}"),
            _ => assert_eq!(reread.to_binary().unwrap(), bin, "{what}"),
        }
        copy.check_invariants();
    }
}

// ----- a hook that panics -------------------------------------------------------------------

static ARMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[component(on_add = refuse)]
struct Fragile;

fn refuse(_: mosaic::DeferredWorld, _: Entity) {
    if ARMED.load(std::sync::atomic::Ordering::SeqCst) {
        panic!("hook refuses");
    }
}

/// Issue #18 lets a load choose: hooks and observers run only after the
/// whole scene is in, or a panic among them rolls the load back. The crate
/// chose the first (README, `panic_safety.rs`, `hostile.rs`): here with a
/// resource and a relation edge in the same scene, the whole scene is in
/// when the hook's panic goes on, edges whole on both ends, and the next
/// load works.
#[test]
fn a_panicking_hook_finds_the_whole_scene_in_with_its_edges_and_resources() {
    let mut registry = registry();
    registry.register::<Fragile>();
    let scene = Scene::from_ron_str(
        "(resources: {\"Score\": (5)}, entities: [(id: 1, components: {\"Fragile\": ()}), (id: 2, components: {\"ChildOf\": [(1, ())]})])",
    )
    .unwrap();
    let mut world = World::new();
    ARMED.store(true, std::sync::atomic::Ordering::SeqCst);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        scene.spawn_into(&mut world, &registry)
    }));
    ARMED.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(result.is_err());
    world.check_invariants();
    assert_eq!(world.len(), 2);
    assert_eq!(world.get_resource::<Score>(), Some(&Score(5)));
    let mut parents = world.query::<(Entity, &Children)>();
    let (parent, children) = parents.iter(&world).next().unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(world.parent(children[0]), Some(parent));
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    assert_eq!(world.len(), 4);
    assert_eq!(world.parent(spawned[2]), Some(spawned[1]));
}

// ----- escapes, raw strings, comments ----------------------------------------------------------

#[test]
fn escaped_and_raw_names_read_the_same_in_both_readers() {
    let registry = registry();
    let ron = [
        "(entities: [(id: 1, components: {\"Heal\\u{74}h\": (3)})])",
        "(entities: [(id: 1, components: {r\"Health\": (3)})])",
        "(entities: [(id: 1, components: {r#\"Health\"#: (3)})])",
        "(prefabs: {\"P\\u{30}\": (components: {\"Health\": (3)})}, entities: [(id: 1, prefab: \"P0\")])",
        "(prefabs: {r\"P0\": (components: {\"Health\": (3)})}, entities: [(id: 1, prefab: \"P\\u{30}\")])",
        "(resources: {\"Sc\\u{6f}re\": (3)}, entities: [(id: 1, components: {\"Health\": (3)})])",
    ];
    for text in ron {
        assert_eq!(load_both(text, Fmt::Ron), Ok(1), "{text}");
        let mut world = World::new();
        let spawned = Scene::from_ron_str_with(text, &registry)
            .unwrap()
            .spawn_into(&mut world, &registry)
            .unwrap();
        assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(3)), "{text}");
    }
    let json = [
        "{\"entities\": [{\"id\": 1, \"components\": {\"Heal\\u0074h\": 3}}]}",
        "{\"prefabs\": {\"P\\u0030\": {\"components\": {\"Health\": 3}}}, \"entities\": [{\"id\": 1, \"prefab\": \"P0\"}]}",
        "{\"entities\": [{\"i\\u0064\": 1, \"components\": {\"Health\": 3}}]}",
        "{\"entities\": [{\"id\": 1, \"comp\\u006fnents\": {\"Health\": 3}}]}",
    ];
    for text in json {
        assert_eq!(load_both(text, Fmt::Json), Ok(1), "{text}");
    }
    // The same name written two ways is the same name twice.
    let err = load_both(
        "(entities: [(id: 1, components: {\"Health\": (1), \"Heal\\u{74}h\": (2)})])",
        Fmt::Ron,
    )
    .unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { name, .. } if name == "Health"),
        "{err:?}"
    );
    let err = load_both(
        "{\"entities\": [{\"id\": 1, \"components\": {\"Health\": 1, \"Heal\\u0074h\": 2}}]}",
        Fmt::Json,
    )
    .unwrap_err();
    assert!(
        matches!(&err, SceneError::Duplicate { name, .. } if name == "Health"),
        "{err:?}"
    );
    // A lone surrogate is not a name.
    let err = load_both(
        "{\"entities\": [{\"id\": 1, \"components\": {\"\\ud800\": 1}}]}",
        Fmt::Json,
    )
    .unwrap_err();
    assert!(matches!(&err, SceneError::Syntax { .. }), "{err:?}");
}

#[test]
fn comments_commas_and_signs() {
    let ok_ron = [
        "/* a /* nested */ comment */ (entities: [(id: 1 /* here */, components: {// line\n\"Health\": /* value */ (3),},),],)",
        "(entities: [(id: +1)])",
        "(entities: [(id: 0x10), (id: 0b11), (id: 0o7)])",
        "(entities: [(id: 1_000)])",
    ];
    for text in ok_ron {
        assert!(load_both(text, Fmt::Ron).is_ok(), "{text}");
    }
    let bad_ron = [
        "(entities: [(id: 1)]) /* unterminated",
        "(entities: [(id: 1)]) trailing",
        "(entities: [(id: 1)]))",
        "(entities: [(id: 1,,)])",
    ];
    for text in bad_ron {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(matches!(&err, SceneError::Syntax { .. }), "{text}: {err:?}");
    }
    let bad_json = [
        "{\"entities\": [{\"id\": 1,}]}",
        "{\"entities\": [{\"id\": 1}],}",
        "{\"entities\": [{\"id\": 1}]} trailing",
        "{\"entities\": [{\"id\": 01}]}",
        "{\"entities\": [{\"id\": +1}]}",
        "// comment\n{}",
        "{\"entities\": [{\"id\": 1, \"components\": {\"Health\": NaN}}]}",
    ];
    for text in bad_json {
        let err = load_both(text, Fmt::Json).unwrap_err();
        assert!(matches!(&err, SceneError::Syntax { .. }), "{text}: {err:?}");
    }
    // serde_json reads -0 as a float: not an id.
    let err = load_both("{\"entities\": [{\"id\": -0}]}", Fmt::Json).unwrap_err();
    assert!(
        matches!(&err, SceneError::Syntax { message, .. } if message.contains("entity id")),
        "{err:?}"
    );
}

// ----- prefabs spawned after the world changed --------------------------------------------------

#[test]
fn spawning_a_prefab_whose_referent_is_gone() {
    let registry = registry();
    let text = "(prefabs: {\"Kid\": (components: {\"ChildOf\": [(1, ())], \"Target\": (1), \"Health\": (1)})},
        entities: [(id: 1), (id: 2, prefab: \"Kid\")])";
    let mut world = World::new();
    let spawned = Scene::from_ron_str(text)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    let parent = spawned[1];
    assert_eq!(world.children(parent), [spawned[2]]);
    let kid = world.spawn_prefab("Kid", ()).unwrap();
    assert_eq!(world.children(parent), [spawned[2], kid]);
    // The parent goes (its children with it, as a hierarchy does); then
    // the prefab is spawned again: an error or an entity without the
    // edge, never a panic or an edge to a dead entity.
    world.despawn(parent).unwrap();
    let len = world.len();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn_prefab("Kid", ())
    }));
    let result = result.expect("spawn_prefab panicked");
    world.check_invariants();
    match result {
        Ok(e) => {
            assert_eq!(world.len(), len + 1);
            assert!(
                world
                    .targets::<ChildOf>(e)
                    .iter()
                    .all(|&t| world.contains(t))
            );
        }
        Err(err) => assert_eq!(world.len(), len, "{err}"),
    }
}

// ----- empty names, empty worlds, loads after failures ---------------------------------------

#[test]
fn empty_names_are_errors_that_say_what() {
    let cases: [(&str, &Check); 5] = [
        (
            "(entities: [(id: 1, components: {\"\": ()})])",
            &|e| matches!(e, SceneError::UnknownComponent { name, suggestion: None, .. } if name.is_empty()),
        ),
        (
            "(resources: {\"\": ()})",
            &|e| matches!(e, SceneError::UnknownComponent { kind: "resource", name, .. } if name.is_empty()),
        ),
        (
            "(entities: [(id: 1, prefab: \"\")])",
            &|e| matches!(e, SceneError::UnknownPrefab { name, .. } if name.is_empty()),
        ),
        ("(schemas: {\"\": {\"v\": \"int\"}})", &|e| {
            matches!(e, SceneError::Schema { component, .. } if component.is_empty())
                && line_of(e) == Some(1)
        }),
        (
            "(prefabs: {\"\": (components: {\"Health\": (1)})}, entities: [(id: 1, prefab: \"\")])",
            &|_| false,
        ),
    ];
    for (text, check) in &cases[..4] {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(check(&err), "{text}: {err:?}");
    }
    // A prefab may be named "" (names are any string): it loads.
    assert_eq!(load_both(cases[4].0, Fmt::Ron), Ok(1));
}

#[test]
fn an_empty_world_round_trips_byte_for_byte_in_every_format() {
    let registry = registry();
    let world = World::new();
    let saved = Scene::from_world(&world, &registry).unwrap();
    let (ron, json, bin) = (
        saved.to_ron_string().unwrap(),
        saved.to_json_string().unwrap(),
        saved.to_binary().unwrap(),
    );
    for scene in [
        Scene::from_ron_str(&ron).unwrap(),
        Scene::from_ron_str_with(&ron, &registry).unwrap(),
        Scene::from_json_str(&json).unwrap(),
        Scene::from_json_str_with(&json, &registry).unwrap(),
        Scene::from_binary(&bin).unwrap(),
    ] {
        let mut copy = World::new();
        assert!(scene.spawn_into(&mut copy, &registry).unwrap().is_empty());
        let again = Scene::from_world(&copy, &registry).unwrap();
        assert_eq!(again.to_ron_string().unwrap(), ron);
        assert_eq!(again.to_json_string().unwrap(), json);
        assert_eq!(again.to_binary().unwrap(), bin);
    }
}

#[test]
fn failed_loads_of_every_kind_then_a_good_load_keeps_the_saved_handles() {
    let registry = registry();
    let world = rich_world();
    let saved = Scene::from_world(&world, &registry).unwrap();
    let bin = saved.to_binary().unwrap();
    let failing = [
        // A schema conflicting with the saved one.
        "(schemas: {\"Mana\": {\"max\": \"float\"}}, entities: [(id: 1)])".to_owned(),
        // A bad value in the last entity.
        "(entities: [(id: 1, components: {\"Health\": (1)}), (id: 2, components: {\"Health\": \"x\"})])"
            .to_owned(),
        // A relation cycle.
        "(entities: [(id: 1, components: {\"ChildOf\": [(2, ())]}), (id: 2, components: {\"ChildOf\": [(1, ())]})])"
            .to_owned(),
        // A prefab cycle.
        "(prefabs: {\"A\": (extends: \"A\")}, entities: [(id: 1, prefab: \"A\")])".to_owned(),
    ];
    let mut copy = World::new();
    copy.register_dynamic_component(
        mosaic::ComponentSchema::new("Mana").field("max", mosaic::FieldType::Int),
    )
    .unwrap();
    for text in &failing {
        assert!(
            Scene::from_ron_str(text)
                .unwrap()
                .spawn_into(&mut copy, &registry)
                .is_err(),
            "{text}"
        );
        assert!(copy.is_empty());
    }
    let spawned = Scene::from_binary(&bin)
        .unwrap()
        .spawn_into(&mut copy, &registry)
        .unwrap();
    for (id, e) in spawned.iter() {
        assert_eq!(e.to_bits(), id, "the failed loads cost the saved handles");
    }
    assert_eq!(
        Scene::from_world(&copy, &registry)
            .unwrap()
            .to_binary()
            .unwrap(),
        bin
    );
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

/// A load undone by a panicking required constructor leaves an empty
/// world, and the next load into it works. It gives fresh handles,
/// though: the undone load's handles used their slots (a world keeps saved
/// handles only if it never had an entity, README), and the handles are
/// kept all or none.
#[test]
fn after_a_load_undone_by_a_panic_the_next_load_works() {
    let mut registry = registry();
    registry.register::<NeedsShaky>();
    let mut world = rich_world();
    let bin = Scene::from_world(&world, &registry)
        .unwrap()
        .to_binary()
        .unwrap();
    let mut copy = World::new();
    let bad = Scene::from_ron_str(
        "(entities: [(id: 4294967297, components: {\"NeedsShaky\": (1)}), (id: 4294967298, components: {\"Health\": (2), \"ChildOf\": [(4294967297, ())]})])",
    )
    .unwrap();
    SHAKY_FAILS.store(true, std::sync::atomic::Ordering::SeqCst);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        bad.spawn_into(&mut copy, &registry)
    }));
    SHAKY_FAILS.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(result.is_err());
    copy.check_invariants();
    assert!(copy.is_empty());
    let spawned = Scene::from_binary(&bin)
        .unwrap()
        .spawn_into(&mut copy, &registry)
        .unwrap();
    assert_eq!(spawned.len(), world.len());
    let kept = spawned.iter().filter(|&(id, e)| e.to_bits() == id).count();
    assert_eq!(kept, 0, "fresh handles, all of them");
    // References and edges follow the fresh handles.
    let mut q = world.query::<(Entity, &Target)>();
    for (e, t) in q.iter(&world) {
        let copy_e = spawned[e.to_bits()];
        assert_eq!(
            copy.get::<Target>(copy_e).unwrap().0,
            spawned[t.0.to_bits()]
        );
    }
    for e in world.iter().map(|r| r.id()) {
        let parents: Vec<Entity> = world
            .targets::<ChildOf>(e)
            .iter()
            .map(|p| spawned[p.to_bits()])
            .collect();
        assert_eq!(copy.targets::<ChildOf>(spawned[e.to_bits()]), parents);
    }
    copy.check_invariants();
}

// ----- wide relations, deep documents -----------------------------------------------------------

#[test]
fn an_entity_with_20_000_edges_and_a_parent_with_20_000_children_load_quickly() {
    // (20,000: linear here in well under a second; a scan per edge would
    // be 4 * 10^8 steps.)
    let n = 20_000u64;
    let registry = registry();
    // One source, 20,000 targets with data.
    let mut text = String::from("(entities: [(id: 0, components: {\"Damage\": [");
    for i in 1..=n {
        text += &format!("({i}, (amount: {})),", i % 7);
    }
    text += "]}),\n";
    for i in 1..=n {
        text += &format!("(id: {i}),");
    }
    text += "])";
    let mut world = World::new();
    let spawned = {
        Scene::from_ron_str(&text)
            .unwrap()
            .spawn_into(&mut world, &registry)
            .unwrap()
    };
    assert_eq!(world.targets::<Damage>(spawned[0]).len(), n as usize);
    assert_eq!(
        world.relation::<Damage>(spawned[0], spawned[n]),
        Some(&Damage {
            amount: (n % 7) as u32
        })
    );
    // One parent, 20,000 children.
    let mut text = String::from("(entities: [(id: 0),\n");
    for i in 1..=n {
        text += &format!("(id: {i}, components: {{\"ChildOf\": [(0, ())]}}),");
    }
    text += "])";
    let mut world = World::new();
    let spawned = {
        Scene::from_ron_str(&text)
            .unwrap()
            .spawn_into(&mut world, &registry)
            .unwrap()
    };
    assert_eq!(world.children(spawned[0]).len(), n as usize);
    // The same target twice at the end of a long list: refused, quickly.
    let mut text = String::from("(entities: [(id: 0, components: {\"Damage\": [");
    for i in 1..=n {
        text += &format!("({i}, (amount: 1)),");
    }
    text += "(1, (amount: 2))]}),\n";
    for i in 1..=n {
        text += &format!("(id: {i}),");
    }
    text += "])";
    let mut world = World::new();
    let err = {
        Scene::from_ron_str(&text)
            .unwrap()
            .spawn_into(&mut world, &registry)
    }
    .unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, .. } if component == "Damage"),
        "{err:?}"
    );
    assert!(world.is_empty());
}

#[test]
fn deep_nesting_outside_values_is_refused_in_both_readers() {
    let d = 100_000;
    let open = "[".repeat(d);
    let close = "]".repeat(d);
    let ron = [
        format!("(entities: [(id: {open}1{close})])"),
        format!("(entities: [(id: 1, prefab: {open}\"P\"{close})])"),
        format!("(prefabs: {{\"P\": (extends: {open}\"Q\"{close})}})"),
        format!("(schemas: {{\"A\": {{\"v\": {open}\"int\"{close}}}}})"),
        format!("(bogus: {open}{close})"),
        format!("(entities: {open}{close})"),
        format!("{}{}", "(".repeat(d), ")".repeat(d)),
    ];
    for text in &ron {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        assert!(
            matches!(&err, SceneError::Syntax { .. }),
            "{}: {err:?}",
            shorten(text)
        );
    }
    let json = [
        format!("{{\"entities\": [{{\"id\": {open}1{close}}}]}}"),
        format!("{{\"prefabs\": {{\"P\": {{\"extends\": {open}\"Q\"{close}}}}}}}"),
        format!("{{\"schemas\": {{\"A\": {{\"v\": {open}\"int\"{close}}}}}}}"),
        format!("{{\"bogus\": {open}{close}}}"),
        format!("{}{}", "{\"a\": ".repeat(d), "}".repeat(d)),
    ];
    for text in &json {
        let err = load_both(text, Fmt::Json).unwrap_err();
        assert!(
            matches!(&err, SceneError::Syntax { .. }),
            "{}: {err:?}",
            shorten(text)
        );
    }
}

// ----- binary: invalid UTF-8, leftovers, where ----------------------------------------------------

#[test]
fn binary_invalid_utf8_and_leftovers() {
    let registry = registry();
    // A component name that is not UTF-8.
    let mut b = header();
    b.extend_from_slice(&[0, 0, 0, 1, 1, 1, 0, 1, 2, 0xff, 0xfe, 0]);
    let err = Scene::from_binary(&b).unwrap_err();
    assert!(
        matches!(
            err,
            SceneError::Syntax {
                format: "binary",
                ..
            }
        ),
        "{err:?}"
    );
    // A string value that is not UTF-8: the component's shape error.
    let mut b = header();
    b.extend_from_slice(&[0, 0, 0, 1, 1, 7, 0, 1]);
    varint(5, &mut b);
    b.extend_from_slice(b"Label");
    b.extend_from_slice(&[3, 2, 0xc3, 0x28]);
    let mut world = World::new();
    let err = Scene::from_binary(&b)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, at: Where::Binary(at), .. }
            if component == "Label" && at.contains('7')),
        "{err:?}"
    );
    assert!(world.is_empty());
    // Bytes after the document.
    let mut b = Scene::new().to_binary().unwrap();
    b.push(0);
    let err = Scene::from_binary_vec(b).unwrap_err();
    assert!(
        matches!(&err, SceneError::Syntax { format: "binary", message, .. } if message.contains("left over")),
        "{err:?}"
    );
    // An unknown resource and a bad schema say where, by name.
    let mut b = header();
    b.extend_from_slice(&[0, 1]);
    varint(5, &mut b);
    b.extend_from_slice(b"Scroe");
    b.extend_from_slice(&[1, 3, 0, 0]);
    let err = Scene::from_binary(&b)
        .unwrap()
        .spawn_into(&mut World::new(), &registry)
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::UnknownComponent { kind: "resource", name, suggestion: Some(s), .. }
            if name == "Scroe" && s == "Score"),
        "{err:?}"
    );
    let mut b = header();
    b.extend_from_slice(&[1, 4]);
    b.extend_from_slice(b"Mana");
    b.extend_from_slice(&[1, 3]);
    b.extend_from_slice(b"max");
    b.extend_from_slice(&[3]);
    b.extend_from_slice(b"big");
    b.extend_from_slice(&[0, 0, 0]);
    let err = Scene::from_binary(&b).unwrap_err();
    assert!(
        matches!(&err, SceneError::Schema { component, at: Where::Binary(at), .. }
            if component == "Mana" && at.contains("Mana")),
        "{err:?}"
    );
}

// ----- every located error on a line of its own ---------------------------------------------------

/// Each error's location is the line of its offending token, when that
/// token is on a line of its own (not the line of the key before it).
#[test]
fn located_errors_are_on_the_offending_tokens_line() {
    let ron = [
        // A duplicate id.
        ("(entities: [(id: 1),\n  (id:\n    1)])", 3),
        // An unknown prefab of an entity.
        ("(entities: [(id: 1,\n  prefab:\n    \"Nope\")])", 3),
        // An unknown prefab in an extends.
        ("(prefabs: {\"A\": (\n  extends:\n    \"Nope\")})", 3),
        // An unknown component's value.
        (
            "(entities: [(id: 1, components: {\n  \"Nope\":\n    (1)})])",
            3,
        ),
        // A duplicate component.
        (
            "(entities: [(id: 1, components: {\"Health\": (1),\n  \"Health\":\n    (2)})])",
            3,
        ),
        // A dangling reference.
        (
            "(entities: [(id: 1, components: {\n  \"Target\":\n    (9)})])",
            3,
        ),
        // A dangling edge.
        (
            "(entities: [(id: 1, components: {\n  \"ChildOf\":\n    [(9, ())]})])",
            3,
        ),
        // A resource of the wrong shape.
        ("(resources: {\n  \"Camera\":\n    (follows: \"x\")})", 3),
    ];
    let mut wrong = Vec::new();
    for (text, line) in ron {
        let err = load_both(text, Fmt::Ron).unwrap_err();
        if line_of(&err) != Some(line) {
            wrong.push(format!("{text}: {err:?}"));
        }
    }
    let json = [
        ("{\"entities\": [{\"id\": 1},\n  {\"id\":\n    1}]}", 3),
        (
            "{\"entities\": [{\"id\": 1,\n  \"prefab\":\n    \"Nope\"}]}",
            3,
        ),
        (
            "{\"entities\": [{\"id\": 1, \"components\": {\n  \"Nope\":\n    1}}]}",
            3,
        ),
        (
            "{\"entities\": [{\"id\": 1, \"components\": {\"Health\": 1,\n  \"Health\":\n    2}}]}",
            3,
        ),
        (
            "{\"entities\": [{\"id\": 1, \"components\": {\n  \"Target\":\n    9}}]}",
            3,
        ),
        (
            "{\"entities\": [{\"id\": 1, \"components\": {\n  \"ChildOf\":\n    [[9, null]]}}]}",
            3,
        ),
        (
            "{\"resources\": {\n  \"Camera\":\n    {\"follows\": \"x\"}}}",
            3,
        ),
        (
            "{\"prefabs\": {\"A\": {\n  \"extends\":\n    \"Nope\"}}}",
            3,
        ),
    ];
    for (text, line) in json {
        let err = load_both(text, Fmt::Json).unwrap_err();
        if line_of(&err) != Some(line) {
            wrong.push(format!("{text}: {err:?}"));
        }
    }
    // Exactly at the token, with or without blanks around the colon.
    for (text, token, format) in [
        ("{\"entities\":[{\"id\":1},{\"id\":1}]}", "1}]", Fmt::Json),
        (
            "{\"entities\":[{\"id\":1,\"prefab\":\"Nope\"}]}",
            "\"Nope",
            Fmt::Json,
        ),
        (
            "{\"entities\":[{\"id\":1,\"components\":{\"Nope\":7}}]}",
            "7}",
            Fmt::Json,
        ),
        (
            "{\"prefabs\":{\"A\":{\"extends\" :  \"Nope\"}}}",
            "\"Nope",
            Fmt::Json,
        ),
        ("(entities:[(id:1),(id:1)])", "1)]", Fmt::Ron),
        ("(entities:[(id:1,prefab:\"Nope\")])", "\"Nope", Fmt::Ron),
        ("(prefabs:{\"A\":(extends : \"Nope\")})", "\"Nope", Fmt::Ron),
    ] {
        let err = load_both(text, format).unwrap_err();
        let expected = at(text, token);
        let found = match &err {
            SceneError::DuplicateId { at, .. }
            | SceneError::UnknownPrefab { at, .. }
            | SceneError::UnknownComponent { at, .. } => at.clone(),
            other => panic!("{other:?}"),
        };
        if found != expected {
            wrong.push(format!("{text}: {err:?}, expected {expected:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// ----- both readers on mutated files ---------------------------------------------------------------

/// A small text scene of every kind of part: schemas, resources, a prefab
/// chain, references, edges, sparse and runtime-defined components.
const MIXED_RON: &str = r#"(
    schemas: {"Mana": {"max": "int", "who": "entity"}},
    resources: {"Score": (7), "Camera": (follows: Some(2))},
    prefabs: {
        "Base": (components: {"Health": (5), "Position": (x: 1.0, y: 2.0)}),
        "Kid": (extends: "Base", components: {"ChildOf": [(1, ())], "Label": ("kid")}),
    },
    entities: [
        (id: 1, components: {"Body": (pos: (x: 0.5, y: -1.0), mass: 2.0), "Mana": {"max": 3, "who": 2}}),
        (id: 2, prefab: "Kid", components: {"Target": (1), "Damage": [(1, (amount: 4)), (2, (amount: 1))]}),
        (id: 3, prefab: "Base", components: {"Speed": (1.5), "Health": (9)}),
    ],
)"#;

const MIXED_JSON: &str = r#"{
    "schemas": {"Mana": {"max": "int", "who": "entity"}},
    "resources": {"Score": 7, "Camera": {"follows": 2}},
    "prefabs": {
        "Base": {"components": {"Health": 5, "Position": {"x": 1.0, "y": 2.0}}},
        "Kid": {"extends": "Base", "components": {"ChildOf": [[1, null]], "Label": "kid"}}
    },
    "entities": [
        {"id": 1, "components": {"Body": {"pos": {"x": 0.5, "y": -1.0}, "mass": 2.0}, "Mana": {"max": 3, "who": 2}}},
        {"id": 2, "prefab": "Kid", "components": {"Target": 1, "Damage": [[1, {"amount": 4}], [2, {"amount": 1}]]}},
        {"id": 3, "prefab": "Base", "components": {"Speed": 1.5, "Health": 9}}
    ]
}"#;

/// Every truncation, every one-character deletion, and insertions of
/// structural characters at every position: the two readers accept and
/// refuse the same files with the same errors (`load_both` checks it).
#[test]
fn both_readers_agree_on_every_small_mutation() {
    assert_eq!(load_both(MIXED_RON, Fmt::Ron), Ok(3));
    assert_eq!(load_both(MIXED_JSON, Fmt::Json), Ok(3));
    for (text, format) in [(MIXED_RON, Fmt::Ron), (MIXED_JSON, Fmt::Json)] {
        let cuts: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        let mut variants: Vec<String> = Vec::new();
        for &i in &cuts {
            if i < text.len() {
                // Every truncated file is refused, as a syntax error.
                let err = load_both(&text[..i], format).unwrap_err();
                assert!(matches!(err, SceneError::Syntax { .. }), "{i}: {err:?}");
                let next = cuts.iter().find(|&&j| j > i).copied().unwrap_or(text.len());
                variants.push(format!("{}{}", &text[..i], &text[next..]));
            }
        }
        for &i in cuts.iter().step_by(3) {
            for c in ["[", "]", "\"", ",", "9", "-", "(", "}"] {
                variants.push(format!("{}{c}{}", &text[..i], &text[i..]));
            }
        }
        // The rest load or fail, the same way in both readers.
        let loaded = variants
            .iter()
            .filter(|v| load_both(v, format).is_ok())
            .count();
        assert!(loaded < variants.len(), "{loaded} of {}", variants.len());
    }
}

/// A relation cycle says where: at the entity it names.
#[test]
fn relation_cycles_say_where() {
    let ron = "(entities: [\n  (id: 1, components: {\"ChildOf\": [(2, ())]}),\n  (id: 2, components: {\"ChildOf\": [(1, ())]}),\n])";
    let err = load_both(ron, Fmt::Ron).unwrap_err();
    let SceneError::RelationCycle { id, .. } = &err else {
        panic!("{err:?}")
    };
    let line = if *id == 1 { 2 } else { 3 };
    assert!(
        err.to_string().contains(&format!("at line {line}")),
        "{err}"
    );
    let json = "{\"entities\": [\n  {\"id\": 1, \"components\": {\"ChildOf\": [[2, null]]}},\n  {\"id\": 2, \"components\": {\"ChildOf\": [[1, null]]}}\n]}";
    let err = load_both(json, Fmt::Json).unwrap_err();
    let SceneError::RelationCycle { id, .. } = &err else {
        panic!("{err:?}")
    };
    let line = if *id == 1 { 2 } else { 3 };
    assert!(
        err.to_string().contains(&format!("at line {line}")),
        "{err}"
    );
    // Binary: the entity, by id.
    let registry = registry();
    let mut scene = Scene::from_ron_str(ron).unwrap();
    scene.resolve(&registry).unwrap();
    let bin = scene.to_binary().unwrap();
    let err = Scene::from_binary(&bin)
        .unwrap()
        .spawn_into(&mut World::new(), &registry)
        .unwrap_err();
    let SceneError::RelationCycle { id, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        err.to_string().ends_with(&format!(" in entity {id}")),
        "{err}"
    );
}
