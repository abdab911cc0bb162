//! Scenes: save and load in RON, JSON and binary, prefabs, runtime-defined
//! components, and every load error (with the world unchanged after it).
//!
//! A world "round-trips to an equal world" when the copy has as many
//! entities, each original entity's copy (found through the [`SceneSpawn`]
//! map: a saved scene id is the original's `Entity::to_bits`) has the same
//! components with the same values, entity references point at the copies
//! of the entities they pointed at, and the resources and runtime-defined
//! schemas are the same. [`snapshot`] builds that comparable form.
//!
//! The property test (`random_worlds_round_trip`) runs `MOSAIC_SCENE_CASES`
//! cases (default 64, about a second in debug):
//!
//! ```text
//! MOSAIC_SCENE_CASES=20000 cargo test --release --test scene random_worlds
//! ```

use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};

use mosaic::prelude::*;
use mosaic::{ComponentSchema, DynamicComponent, EntityMapper, FieldType, FieldValue, SchemaError};
use mosaic_scene::{Location, Scene, SceneError, SceneSpawn, SpawnPrefab, TypeRegistry, Where};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

// ----- types -------------------------------------------------------------------------

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Health(u32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[component(storage = "sparse")]
struct Label {
    name: String,
}

/// A sparse tag (unit struct).
#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[component(storage = "sparse")]
struct Frozen;

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
enum Mood {
    Calm,
    Angry(u8),
    Scared { level: u8, of: String },
}

/// Table component with every kind of entity field.
#[derive(Component, MapEntities, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Links {
    #[entities]
    target: Entity,
    #[entities]
    parent: Option<Entity>,
    #[entities]
    children: Vec<Entity>,
    weight: f32,
}

/// Sparse component with an entity reference.
#[derive(Component, MapEntities, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[component(storage = "sparse")]
struct Follow(#[entities] Option<Entity>);

/// Holds an entity but is registered without `.map_entities()`.
#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Unmapped(Entity);

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Gravity(f32);

/// A resource with an entity reference.
#[derive(MapEntities, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Camera {
    #[entities]
    follows: Option<Entity>,
    zoom: f32,
}

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Health>();
    registry.register::<Label>();
    registry.register::<Frozen>();
    registry.register::<Mood>();
    registry.register::<Links>().map_entities();
    registry.register::<Follow>().map_entities();
    registry.register::<Unmapped>();
    registry.register_resource::<Gravity>();
    registry.register_resource::<Camera>().map_entities();
    registry
}

fn mana() -> ComponentSchema {
    ComponentSchema::new("Mana")
        .field("current", FieldType::Int)
        .field("max", FieldType::Float)
}

fn owner() -> ComponentSchema {
    ComponentSchema::new("Owner")
        .field("who", FieldType::Entity)
        .field("note", FieldType::Str)
        .field("loyal", FieldType::Bool)
}

fn mana_value(current: i64, max: f64) -> DynamicComponent {
    mana()
        .instantiate([("current", current.into()), ("max", max.into())])
        .unwrap()
}

fn owner_value(who: Entity, note: &str, loyal: bool) -> DynamicComponent {
    owner()
        .instantiate([
            ("who", who.into()),
            ("note", note.into()),
            ("loyal", loyal.into()),
        ])
        .unwrap()
}

// ----- comparing worlds ----------------------------------------------------------------

/// One component value, entity references already translated.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Position(Position),
    Health(Health),
    Label(Label),
    Frozen(Frozen),
    Mood(Mood),
    Links(Links),
    Follow(Follow),
    Unmapped(Unmapped),
    Dynamic(DynamicComponent),
}

struct Translate<'a>(&'a dyn Fn(Entity) -> Entity);

impl EntityMapper for Translate<'_> {
    fn map(&mut self, entity: Entity) -> Entity {
        (self.0)(entity)
    }
}

/// The comparable form of (part of) a world.
#[derive(Debug, PartialEq)]
struct Snapshot {
    entities: BTreeMap<Entity, Vec<Value>>,
    gravity: Option<Gravity>,
    camera: Option<Camera>,
    schemas: Vec<ComponentSchema>,
}

fn all_entities(world: &World) -> Vec<Entity> {
    world
        .archetypes()
        .flat_map(|a| a.entities().iter().copied())
        .collect()
}

/// `entities` of `world` with their components, keyed and with every
/// entity reference translated by `canon`.
fn snapshot(
    world: &World,
    entities: impl IntoIterator<Item = Entity>,
    canon: &dyn Fn(Entity) -> Entity,
) -> Snapshot {
    let mut out = BTreeMap::new();
    for e in entities {
        assert!(world.contains(e), "{e:?} is not alive");
        let mut values = Vec::new();
        macro_rules! plain {
            ($($t:ident),*) => {$(
                if let Ok(v) = world.get::<$t>(e) {
                    values.push(Value::$t(v.clone()));
                }
            )*};
        }
        plain!(Position, Health, Label, Frozen, Mood, Unmapped);
        if let Ok(v) = world.get::<Links>(e) {
            let mut v = v.clone();
            v.map_entities(&mut Translate(canon));
            values.push(Value::Links(v));
        }
        if let Ok(v) = world.get::<Follow>(e) {
            let mut v = v.clone();
            v.map_entities(&mut Translate(canon));
            values.push(Value::Follow(v));
        }
        for schema in world.dynamic_schemas() {
            if let Ok(v) = world.get_dynamic(e, schema.name()) {
                let mut v = v.clone();
                v.map_entities(&mut Translate(canon));
                values.push(Value::Dynamic(v));
            }
        }
        assert!(out.insert(canon(e), values).is_none(), "{e:?} twice");
    }
    let mut schemas: Vec<ComponentSchema> = world.dynamic_schemas().cloned().collect();
    schemas.sort_by(|a, b| a.name().cmp(b.name()));
    Snapshot {
        entities: out,
        gravity: world.get_resource::<Gravity>().cloned(),
        camera: world.get_resource::<Camera>().map(|c| {
            let mut c = c.clone();
            c.map_entities(&mut Translate(canon));
            c
        }),
        schemas,
    }
}

/// The whole world, references as they are.
fn snapshot_all(world: &World) -> Snapshot {
    snapshot(world, all_entities(world), &|e| e)
}

/// The copy's entities, translated back to the originals they were saved
/// from (scene id = original `to_bits`).
fn snapshot_copy(copy: &World, spawned: &SceneSpawn) -> Snapshot {
    let back: HashMap<Entity, Entity> = spawned
        .iter()
        .map(|(id, e)| (e, Entity::from_bits(id).expect("saved ids are entity bits")))
        .collect();
    snapshot(copy, spawned.entities(), &|e| {
        *back
            .get(&e)
            .unwrap_or_else(|| panic!("reference to {e:?}, which the scene did not spawn"))
    })
}

/// `copy` (through `spawned`) equals `original`.
fn assert_equal_world(original: &World, copy: &World, spawned: &SceneSpawn) {
    assert_eq!(spawned.len(), original.len(), "entity count");
    assert!(spawned.entities().all(|e| copy.contains(e)));
    assert_eq!(snapshot_copy(copy, spawned), snapshot_all(original));
}

// ----- formats -----------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    Ron,
    Json,
    Binary,
}

const FORMATS: [Format; 3] = [Format::Ron, Format::Json, Format::Binary];

fn write(scene: &Scene, format: Format) -> Vec<u8> {
    match format {
        Format::Ron => scene.to_ron_string().unwrap().into_bytes(),
        Format::Json => scene.to_json_string().unwrap().into_bytes(),
        Format::Binary => scene.to_binary().unwrap(),
    }
}

fn read(bytes: &[u8], format: Format) -> Result<Scene, SceneError> {
    match format {
        Format::Ron => Scene::from_ron_str(std::str::from_utf8(bytes).unwrap()),
        Format::Json => Scene::from_json_str(std::str::from_utf8(bytes).unwrap()),
        Format::Binary => Scene::from_binary(bytes),
    }
}

/// Saves `world`, writes and reads it back as `format`, loads it into `into`.
fn round_trip(
    world: &World,
    registry: &TypeRegistry,
    format: Format,
    into: &mut World,
) -> SceneSpawn {
    let scene = Scene::from_world(world, registry).unwrap();
    assert!(scene.skipped().is_empty(), "skipped {:?}", scene.skipped());
    assert_eq!(scene.len(), world.len());
    let bytes = write(&scene, format);
    let scene = read(&bytes, format).unwrap_or_else(|e| {
        panic!(
            "{format:?} scene does not read back: {e}\n{}",
            String::from_utf8_lossy(&bytes)
        )
    });
    scene
        .spawn_into(into, registry)
        .unwrap_or_else(|e| panic!("{format:?} scene does not load: {e}"))
}

// ----- a hand-built world ---------------------------------------------------------------

/// A world with every kind of component, entity references of each shape,
/// runtime-defined components, resources, an empty entity, and recycled
/// slots (generations above 1).
fn sample_world() -> World {
    let mut world = World::new();
    let junk: Vec<Entity> = (0..4).map(|i| world.spawn(Health(i))).collect();
    for e in junk {
        world.despawn(e).unwrap();
    }
    world.register_dynamic_component(mana()).unwrap();
    world.register_dynamic_component(owner()).unwrap();
    // Declared, never used: still saved and loaded.
    world
        .register_dynamic_component(ComponentSchema::new("Cursed"))
        .unwrap();
    let root = world.spawn((
        Position { x: 0.0, y: 0.0 },
        Label {
            name: "root".into(),
        },
    ));
    let a = world.spawn((Position { x: 1.5, y: -2.25 }, Health(10), Mood::Angry(3)));
    let b = world.spawn((
        Label {
            name: "b \"quoted\" ünïcödé\n\ttab \\ slash".into(),
        },
        Frozen,
        Mood::Scared {
            level: 2,
            of: "the dark".into(),
        },
    ));
    let c = world.spawn(());
    let d = world.spawn((Health(7), Follow(Some(a)), Mood::Calm));
    world
        .insert(
            a,
            Links {
                target: b,
                parent: Some(root),
                children: vec![b, c, d],
                weight: 0.5,
            },
        )
        .unwrap();
    world
        .insert(
            root,
            (
                Links {
                    target: root,
                    parent: None,
                    children: vec![],
                    weight: 1e-7,
                },
                Follow(None),
            ),
        )
        .unwrap();
    world.insert_dynamic(a, mana_value(5, 12.5)).unwrap();
    world.insert_dynamic(c, mana_value(-3, 0.1)).unwrap();
    world
        .insert_dynamic(d, owner_value(root, "mine, \"all\" mine", true))
        .unwrap();
    world.insert_resource(Gravity(-9.81));
    world.insert_resource(Camera {
        follows: Some(b),
        zoom: 2.0,
    });
    assert!(all_entities(&world).iter().any(|e| e.generation() > 1));
    world
}

#[test]
fn sample_world_round_trips_in_every_format() {
    let registry = registry();
    let world = sample_world();
    for format in FORMATS {
        let mut copy = World::new();
        let spawned = round_trip(&world, &registry, format, &mut copy);
        assert_equal_world(&world, &copy, &spawned);
        assert_eq!(copy.len(), world.len());
        // Runtime-defined components are found by name in the copy.
        let with_mana = copy.query_dynamic(&["Mana"]).unwrap();
        assert_eq!(with_mana.len(), 2, "{format:?}");
        assert!(copy.dynamic_schema("Cursed").is_some());
        // Storage of the loaded components is as declared.
        let label = copy.component_named("Label").unwrap();
        assert_eq!(
            copy.component_info(label).unwrap().storage(),
            StorageType::SparseSet
        );
    }
}

#[test]
fn round_trip_into_a_world_that_already_has_entities() {
    let registry = registry();
    let world = sample_world();
    for format in FORMATS {
        let mut copy = World::new();
        let mine: Vec<Entity> = (0..5)
            .map(|i| copy.spawn((Health(100 + i), Position { x: 9.0, y: 9.0 })))
            .collect();
        copy.register_dynamic_component(mana()).unwrap();
        copy.insert_dynamic(mine[0], mana_value(1, 1.0)).unwrap();
        let spawned = round_trip(&world, &registry, format, &mut copy);
        assert_eq!(copy.len(), world.len() + mine.len());
        assert!(spawned.entities().all(|e| !mine.contains(&e)));
        assert_equal_world(&world, &copy, &spawned);
        for (i, &e) in mine.iter().enumerate() {
            assert_eq!(copy.get::<Health>(e), Ok(&Health(100 + i as u32)));
        }
        assert_eq!(copy.get_dynamic(mine[0], "Mana"), Ok(&mana_value(1, 1.0)));
    }
}

#[test]
fn saving_a_subset_with_from_entities() {
    let registry = registry();
    let mut world = World::new();
    let a = world.spawn((Health(1), Follow(None)));
    let b = world.spawn(Health(2));
    world.spawn(Health(3));
    world.insert_one(a, Follow(Some(b))).unwrap();
    let scene = Scene::from_entities(&world, &registry, [b, a]).unwrap();
    assert_eq!(scene.ids().collect::<Vec<_>>(), [b.to_bits(), a.to_bits()]);
    for format in FORMATS {
        let mut copy = World::new();
        let spawned = read(&write(&scene, format), format)
            .unwrap()
            .spawn_into(&mut copy, &registry)
            .unwrap();
        assert_eq!(copy.len(), 2);
        let (a2, b2) = (spawned[a.to_bits()], spawned[b.to_bits()]);
        assert_eq!(copy.get::<Follow>(a2), Ok(&Follow(Some(b2))));
        assert_eq!(copy.get::<Health>(b2), Ok(&Health(2)));
    }
    // Leaving out an entity that is referred to: the reference dangles.
    let scene = Scene::from_entities(&world, &registry, [a]).unwrap();
    let err = scene.spawn_into(&mut World::new(), &registry).unwrap_err();
    assert!(
        matches!(&err, SceneError::DanglingReference { component, id, .. } if component == "Follow" && *id == b.to_bits()),
        "{err:?}"
    );
}

#[test]
fn unregistered_components_are_skipped_and_counted() {
    #[derive(Component)]
    struct Secret;
    let registry = registry();
    let mut world = World::new();
    world.spawn((Secret, Health(1)));
    world.spawn(Secret);
    let scene = Scene::from_world(&world, &registry).unwrap();
    assert_eq!(scene.skipped().get("Secret"), Some(&2));
    assert_eq!(scene.len(), 2);
    let mut copy = World::new();
    let spawned = scene.spawn_into(&mut copy, &registry).unwrap();
    assert_eq!(copy.len(), 2);
    assert_eq!(
        spawned
            .entities()
            .filter(|&e| copy.get::<Health>(e).is_ok())
            .count(),
        1
    );
}

/// Save, load, save again: the same RON text. The first save of a world
/// with recycled slots names its entities by their handles, so it can differ
/// from the second in the ids only; from the second save on, the text is
/// fixed.
#[test]
fn save_load_save_gives_identical_ron() {
    let registry = registry();

    // A fresh world (handles 0v1, 1v1, ...): identical from the first save.
    let mut world = World::new();
    let a = world.spawn((Health(1), Label { name: "a".into() }));
    let b = world.spawn(Position { x: 1.0, y: 2.0 });
    let c = world.spawn(());
    world.insert_one(b, Follow(Some(a))).unwrap();
    world.insert_one(c, Health(3)).unwrap();
    world.insert_one(a, Follow(Some(c))).unwrap();
    world.register_dynamic_component(mana()).unwrap();
    world.insert_dynamic(b, mana_value(1, 2.0)).unwrap();
    world.insert_resource(Gravity(1.0));
    let first = Scene::from_world(&world, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    let mut copy = World::new();
    Scene::from_ron_str(&first)
        .unwrap()
        .spawn_into(&mut copy, &registry)
        .unwrap();
    let second = Scene::from_world(&copy, &registry)
        .unwrap()
        .to_ron_string()
        .unwrap();
    assert_eq!(first, second);

    // Any world: identical from the second save on.
    let world = sample_world();
    let mut texts = vec![
        Scene::from_world(&world, &registry)
            .unwrap()
            .to_ron_string()
            .unwrap(),
    ];
    for _ in 0..2 {
        let mut copy = World::new();
        Scene::from_ron_str(texts.last().unwrap())
            .unwrap()
            .spawn_into(&mut copy, &registry)
            .unwrap();
        texts.push(
            Scene::from_world(&copy, &registry)
                .unwrap()
                .to_ron_string()
                .unwrap(),
        );
    }
    assert_eq!(texts[1], texts[2]);
}

/// Reading a file and writing it again in the same format changes nothing.
#[test]
fn read_then_write_is_identity_in_each_format() {
    let registry = registry();
    let scene = Scene::from_world(&sample_world(), &registry).unwrap();
    for format in FORMATS {
        let bytes = write(&scene, format);
        let again = write(&read(&bytes, format).unwrap(), format);
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            String::from_utf8_lossy(&again),
            "{format:?}"
        );
    }
}

/// A RON file's `#![enable(...)]` attributes hold for the values in it,
/// and writing the scene back keeps them.
#[test]
fn ron_extension_attributes_apply_to_values() {
    let registry = registry();
    let text = "#![enable(unwrap_newtypes)]\n(\n    prefabs: {\"P\": (components: {\"Health\": 9})},\n    entities: [(id: 1, prefab: \"P\", components: {\"Follow\": Some(1)}), (id: 2, components: {\"Health\": 5})],\n)";
    let scene = Scene::from_ron_str(text).unwrap();
    let check = |scene: &Scene| {
        let mut world = World::new();
        let spawned = scene.spawn_into(&mut world, &registry).unwrap();
        assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(9)));
        assert_eq!(
            world.get::<Follow>(spawned[1]),
            Ok(&Follow(Some(spawned[1])))
        );
        assert_eq!(world.get::<Health>(spawned[2]), Ok(&Health(5)));
    };
    check(&scene);
    let written = scene.to_ron_string().unwrap();
    assert!(
        written.starts_with("#![enable(unwrap_newtypes)]"),
        "{written}"
    );
    check(&Scene::from_ron_str(&written).unwrap());
    // Resolved, it converts to the other formats as usual.
    let mut resolved = scene.clone();
    resolved.resolve(&registry).unwrap();
    for format in FORMATS {
        check(&read(&write(&resolved, format), format).unwrap());
    }
    // A file without attributes is written without them.
    let plain =
        Scene::from_ron_str("(entities: [(id: 1, components: {\"Health\": (5)})])").unwrap();
    assert!(!plain.to_ron_string().unwrap().contains("#!"));
}

/// Text files saved with a byte-order mark (as some Windows editors do)
/// read like any other; locations are those an editor shows.
#[test]
fn text_files_with_a_byte_order_mark() {
    let registry = registry();
    let ron = "\u{feff}(entities: [(id: 1, components: {\"Health\": (5)})])";
    let json = "\u{feff}{\"entities\": [{\"id\": 1, \"components\": {\"Health\": 5}}]}";
    for (text, format) in [(ron, Format::Ron), (json, Format::Json)] {
        let mut world = World::new();
        let spawned = read(text.as_bytes(), format)
            .unwrap_or_else(|e| panic!("{format:?}: {e}"))
            .spawn_into(&mut world, &registry)
            .unwrap();
        assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(5)));
    }
    let err = ron_error("\u{feff}(entities: [(id: 1, components: {\"Health\": (\"x\")})])");
    assert!(
        matches!(&err, SceneError::WrongShape { at: Where::Text(at), .. } if at.line == 1 && at.column == 45),
        "{err:?}"
    );
}

/// A scene read from one format is written in another once resolved.
#[test]
fn resolve_converts_between_formats() {
    let registry = registry();
    let world = sample_world();
    let saved = Scene::from_world(&world, &registry).unwrap();
    for from in FORMATS {
        let mut scene = read(&write(&saved, from), from).unwrap();
        for to in FORMATS {
            if to != from {
                assert!(
                    matches!(
                        scene
                            .to_ron_string()
                            .and(scene.to_json_string())
                            .and(scene.to_binary()),
                        Err(SceneError::Unresolved { .. })
                    ),
                    "{from:?} -> {to:?} without resolve"
                );
            }
        }
        scene.resolve(&registry).unwrap();
        // Under Miri only the next format in FORMATS (137 s of Miri time for
        // all nine pairs): Ron -> Json, Json -> Binary, Binary -> Ron still
        // resolve a scene read from each format and write and read back each
        // format from a resolved scene; the pairs left out put together the
        // same readers and writers (and sample_world_round_trips_in_every_format
        // does each format to itself).
        let next = FORMATS[(FORMATS.iter().position(|&f| f == from).unwrap() + 1) % FORMATS.len()];
        for to in FORMATS {
            if cfg!(miri) && to != next {
                continue;
            }
            let mut copy = World::new();
            let spawned = read(&write(&scene, to), to)
                .unwrap()
                .spawn_into(&mut copy, &registry)
                .unwrap();
            assert_equal_world(&world, &copy, &spawned);
        }
    }
}

/// `resolve` checks names as loading does: the same suggestions, and
/// runtime-defined components are not resources.
#[test]
fn resolve_reports_unknown_names_as_loading_does() {
    let registry = registry();
    let text = r#"(schemas: {"Stamina": {"left": "int"}}, entities: [(id: 1, components: {"Stamnia": {}})])"#;
    let mut scene = Scene::from_ron_str(text).unwrap();
    let loading = scene.spawn_into(&mut World::new(), &registry).unwrap_err();
    let resolving = scene.resolve(&registry).unwrap_err();
    assert_eq!(resolving, loading);
    assert!(
        matches!(&resolving, SceneError::UnknownComponent { suggestion: Some(s), .. } if s == "Stamina"),
        "{resolving:?}"
    );
    let text = r#"(resources: {"Gravty": (1.0)})"#;
    let mut scene = Scene::from_ron_str(text).unwrap();
    assert_eq!(
        scene.resolve(&registry).unwrap_err(),
        scene.spawn_into(&mut World::new(), &registry).unwrap_err()
    );
    let text = r#"(schemas: {"Stamina": {"left": "int"}}, resources: {"Stamina": {"left": 1}})"#;
    let mut scene = Scene::from_ron_str(text).unwrap();
    let loading = scene.spawn_into(&mut World::new(), &registry).unwrap_err();
    assert!(
        matches!(
            &loading,
            SceneError::UnknownComponent {
                kind: "resource",
                ..
            }
        ),
        "{loading:?}"
    );
    assert_eq!(scene.resolve(&registry).unwrap_err(), loading);
}

#[test]
#[cfg_attr(miri, ignore = "touches the filesystem: Miri runs with isolation")]
fn from_path_reads_each_format_by_extension() {
    let registry = registry();
    let world = sample_world();
    let scene = Scene::from_world(&world, &registry).unwrap();
    let dir = std::env::temp_dir().join(format!("mosaic-scene-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (format, name) in [
        (Format::Ron, "w.ron"),
        (Format::Json, "w.json"),
        (Format::Binary, "w.scene"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, write(&scene, format)).unwrap();
        let mut copy = World::new();
        let spawned = Scene::from_path(&path)
            .unwrap()
            .spawn_into(&mut copy, &registry)
            .unwrap();
        assert_equal_world(&world, &copy, &spawned);
    }
    let err = Scene::from_path(dir.join("missing.ron")).unwrap_err();
    assert!(matches!(err, SceneError::Io { .. }), "{err:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every finite float comes back bit for bit, in every format (ryu writes
/// the shortest text that reads back exactly; the reader must read exactly).
#[test]
fn floats_round_trip_exactly_in_every_format() {
    let registry = registry();
    let mut world = World::new();
    world.register_dynamic_component(mana()).unwrap();
    // xorshift: a fixed, spread-out sample of bit patterns.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut entities = Vec::new();
    // 2,000 natively; 20 under Miri, where each value's three round trips
    // through serde cost more than a second of interpretation.
    let count = if cfg!(miri) { 20 } else { 2000 };
    while entities.len() < count {
        let bits = next();
        let (x, max) = (f32::from_bits(bits as u32), f64::from_bits(bits));
        if !x.is_finite() || !max.is_finite() {
            continue;
        }
        let e = world.spawn(Position { x, y: -x });
        world.insert_dynamic(e, mana_value(0, max)).unwrap();
        entities.push((e, x, max));
    }
    for format in FORMATS {
        let mut copy = World::new();
        let spawned = round_trip(&world, &registry, format, &mut copy);
        let mut wrong = Vec::new();
        for &(e, x, max) in &entities {
            let e2 = spawned[e.to_bits()];
            let p = copy.get::<Position>(e2).unwrap();
            let m = copy
                .get_dynamic(e2, "Mana")
                .unwrap()
                .get("max")
                .unwrap()
                .as_float()
                .unwrap();
            if p.x.to_bits() != x.to_bits() || p.y.to_bits() != (-x).to_bits() {
                wrong.push(format!("f32 {x:e} -> {:e}", p.x));
            }
            if m.to_bits() != max.to_bits() {
                wrong.push(format!("f64 {max:e} -> {m:e}"));
            }
        }
        assert!(
            wrong.is_empty(),
            "{format:?}: {} of {} wrong, e.g. {:?}",
            wrong.len(),
            entities.len(),
            &wrong[..wrong.len().min(5)]
        );
    }
}

// ----- runtime-defined components -----------------------------------------------------------

const DYNAMIC_SCENE: &str = r#"(
    schemas: {
        "Mana": { "current": "int", "max": "float" },
        "Owner": { "who": "entity", "note": "string", "loyal": "bool" },
        "Cursed": {},
    },
    entities: [
        (id: 1, components: { "Mana": { "current": 3, "max": 10 }, "Cursed": {} }),
        (id: 2, components: { "Owner": { "who": 1 }, "Health": (4) }),
        (id: 3, components: { "Owner": { "loyal": true, "note": "x", "who": 3 }, "Mana": { "max": 0.5 } }),
    ],
)"#;

#[test]
fn runtime_defined_components_declared_in_the_scene() {
    let registry = registry();
    let mut world = World::new();
    let spawned = Scene::from_ron_str(DYNAMIC_SCENE)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    assert_eq!(world.dynamic_schema("Mana"), Some(&mana()));
    assert_eq!(world.dynamic_schema("Owner"), Some(&owner()));
    assert_eq!(world.dynamic_schemas().count(), 3);
    let (one, two, three) = (spawned[1], spawned[2], spawned[3]);
    // An int is widened for a float field; missing fields take zero.
    assert_eq!(world.get_dynamic(one, "Mana"), Ok(&mana_value(3, 10.0)));
    assert_eq!(world.get_dynamic(three, "Mana"), Ok(&mana_value(0, 0.5)));
    assert_eq!(
        world.get_dynamic(two, "Owner"),
        Ok(&owner_value(one, "", false))
    );
    // Fields given in another order are stored in schema order.
    assert_eq!(
        world.get_dynamic(three, "Owner"),
        Ok(&owner_value(three, "x", true))
    );
    assert!(world.get_dynamic(one, "Cursed").is_ok());
    let mut mana_holders = world.query_dynamic(&["Mana"]).unwrap();
    mana_holders.sort();
    let mut expected = vec![one, three];
    expected.sort();
    assert_eq!(mana_holders, expected);
    assert_eq!(world.query_dynamic(&["Owner", "Health"]).unwrap(), [two]);

    // And the world round-trips, schemas and all.
    for format in FORMATS {
        let mut copy = World::new();
        let again = round_trip(&world, &registry, format, &mut copy);
        assert_equal_world(&world, &copy, &again);
    }
}

#[test]
fn runtime_defined_components_declared_at_run_time() {
    let registry = registry();
    let mut world = World::new();
    world.register_dynamic_component(mana()).unwrap();
    world.register_dynamic_component(owner()).unwrap();
    let a = world.spawn(Health(1));
    let b = world.spawn(());
    world
        .insert_dynamic(a, mana_value(i64::MIN, -1.5e300))
        .unwrap();
    world
        .insert_dynamic(b, mana_value(i64::MAX, 5e-324))
        .unwrap();
    world.insert_dynamic(b, owner_value(a, "", false)).unwrap();
    world
        .get_dynamic_mut(a, "Mana")
        .unwrap()
        .set("max", 7)
        .unwrap();
    for format in FORMATS {
        let mut copy = World::new();
        let spawned = round_trip(&world, &registry, format, &mut copy);
        assert_equal_world(&world, &copy, &spawned);
        assert_eq!(
            copy.get_dynamic(spawned[b.to_bits()], "Owner")
                .unwrap()
                .get("who"),
            Some(&FieldValue::Entity(spawned[a.to_bits()]))
        );
    }
    // A scene that declares the same schema again loads into this world.
    let mut same = World::new();
    same.register_dynamic_component(mana()).unwrap();
    let spawned = Scene::from_ron_str(DYNAMIC_SCENE)
        .unwrap()
        .spawn_into(&mut same, &registry)
        .unwrap();
    assert_eq!(same.dynamic_schemas().count(), 3);
    assert!(same.get_dynamic(spawned[1], "Mana").is_ok());
    // A scene that only uses a schema the world declared need not repeat it.
    let scene =
        Scene::from_ron_str(r#"(entities: [(id: 1, components: {"Mana": {"current": 2}})])"#)
            .unwrap();
    let spawned = scene.spawn_into(&mut same, &registry).unwrap();
    assert_eq!(
        same.get_dynamic(spawned[1], "Mana"),
        Ok(&mana_value(2, 0.0))
    );
}

// ----- prefabs -------------------------------------------------------------------------

const PREFAB_SCENE: &str = r#"(
    schemas: { "Mana": { "current": "int", "max": "float" } },
    resources: {
        "Gravity": (-9.8),
        "Camera": (follows: Some(1), zoom: 1.0),
    },
    prefabs: {
        // Extends a prefab declared further down.
        "Early": (extends: "Tree", components: { "Frozen": () }),
        "Base": (components: { "Position": (x: 0.0, y: 0.0), "Health": (10) }),
        "Tree": (extends: "Base", components: { "Label": (name: "tree"), "Health": (50) }),
        "OldTree": (extends: "Tree", components: {
            "Label": (name: "old tree"),
            "Mana": { "current": 1, "max": 2.0 },
        }),
        "Guard": (components: {
            "Links": (target: 1, parent: None, children: [1, 2], weight: 0.0),
            "Mood": Calm,
        }),
    },
    entities: [
        (id: 1, prefab: "OldTree", components: { "Position": (x: 3.0, y: 4.0) }),
        (id: 2, prefab: "Tree"),
        (id: 3, prefab: "Guard", components: { "Health": (5), "Mood": Angry(9) }),
        (id: 4, components: { "Follow": (Some(3)) }),
        (id: 5, prefab: "Early"),
    ],
)"#;

/// Checks what `PREFAB_SCENE` spawned.
fn check_prefab_world(world: &World, spawned: &SceneSpawn) {
    let (one, two, three, four, five) =
        (spawned[1], spawned[2], spawned[3], spawned[4], spawned[5]);
    assert_eq!(world.len(), 5);
    // 1: OldTree -> Tree -> Base, own Position overrides.
    assert_eq!(world.get::<Position>(one), Ok(&Position { x: 3.0, y: 4.0 }));
    assert_eq!(world.get::<Health>(one), Ok(&Health(50)));
    assert_eq!(
        world.get::<Label>(one),
        Ok(&Label {
            name: "old tree".into()
        })
    );
    assert_eq!(world.get_dynamic(one, "Mana"), Ok(&mana_value(1, 2.0)));
    assert!(!world.has::<Frozen>(one));
    // 2: Tree -> Base.
    assert_eq!(world.get::<Position>(two), Ok(&Position { x: 0.0, y: 0.0 }));
    assert_eq!(world.get::<Health>(two), Ok(&Health(50)));
    assert_eq!(
        world.get::<Label>(two),
        Ok(&Label {
            name: "tree".into()
        })
    );
    assert!(world.get_dynamic(two, "Mana").is_err());
    // 3: Guard's references resolve to the spawned entities.
    assert_eq!(
        world.get::<Links>(three),
        Ok(&Links {
            target: one,
            parent: None,
            children: vec![one, two],
            weight: 0.0
        })
    );
    assert_eq!(world.get::<Health>(three), Ok(&Health(5)));
    assert_eq!(world.get::<Mood>(three), Ok(&Mood::Angry(9)));
    assert!(!world.has::<Position>(three));
    // 4: plain.
    assert_eq!(world.get::<Follow>(four), Ok(&Follow(Some(three))));
    // 5: Early -> Tree -> Base (forward reference).
    assert!(world.has::<Frozen>(five));
    assert_eq!(world.get::<Health>(five), Ok(&Health(50)));
    assert_eq!(
        world.get::<Label>(five),
        Ok(&Label {
            name: "tree".into()
        })
    );
    // Resources, with their references.
    assert_eq!(world.get_resource::<Gravity>(), Some(&Gravity(-9.8)));
    assert_eq!(
        world.get_resource::<Camera>(),
        Some(&Camera {
            follows: Some(one),
            zoom: 1.0
        })
    );
}

#[test]
fn prefabs_with_overrides_and_extends_chains() {
    let registry = registry();
    let scene = Scene::from_ron_str(PREFAB_SCENE).unwrap();
    assert_eq!(
        scene.prefab_names().collect::<Vec<_>>(),
        ["Early", "Base", "Tree", "OldTree", "Guard"]
    );
    assert_eq!(scene.ids().collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    let mut world = World::new();
    let spawned = scene.spawn_into(&mut world, &registry).unwrap();
    check_prefab_world(&world, &spawned);
}

/// Prefabs (with `extends`) survive conversion to every format, and load the
/// same from each.
#[test]
fn prefab_scenes_round_trip_in_every_format() {
    let registry = registry();
    let mut scene = Scene::from_ron_str(PREFAB_SCENE).unwrap();
    scene.resolve(&registry).unwrap();
    for format in FORMATS {
        let bytes = write(&scene, format);
        let again = read(&bytes, format).unwrap();
        assert_eq!(
            again.prefab_names().collect::<Vec<_>>(),
            ["Early", "Base", "Tree", "OldTree", "Guard"]
        );
        // Written again in the same format: the same bytes.
        assert_eq!(write(&again, format), bytes, "{format:?}");
        let mut world = World::new();
        let spawned = again.spawn_into(&mut world, &registry).unwrap();
        check_prefab_world(&world, &spawned);
        // And the prefabs work at run time from every format.
        let tree = world.spawn_prefab("OldTree", ()).unwrap();
        assert_eq!(world.get::<Health>(tree), Ok(&Health(50)));
        assert_eq!(world.get_dynamic(tree, "Mana"), Ok(&mana_value(1, 2.0)));
    }
    // A world built from prefabs saves as plain entities and round-trips.
    let mut world = World::new();
    Scene::from_ron_str(PREFAB_SCENE)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    for format in FORMATS {
        let mut copy = World::new();
        let spawned = round_trip(&world, &registry, format, &mut copy);
        assert_equal_world(&world, &copy, &spawned);
    }
}

#[test]
fn spawn_prefab_at_run_time() {
    let registry = registry();
    let mut world = World::new();
    let spawned = Scene::from_ron_str(PREFAB_SCENE)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();

    // Overrides replace the prefab's components and add others.
    let tree = world
        .spawn_prefab("OldTree", (Position { x: 9.0, y: -1.0 }, Health(1), Frozen))
        .unwrap();
    assert_eq!(
        world.get::<Position>(tree),
        Ok(&Position { x: 9.0, y: -1.0 })
    );
    assert_eq!(world.get::<Health>(tree), Ok(&Health(1)));
    assert!(world.has::<Frozen>(tree));
    assert_eq!(
        world.get::<Label>(tree),
        Ok(&Label {
            name: "old tree".into()
        })
    );
    assert_eq!(world.get_dynamic(tree, "Mana"), Ok(&mana_value(1, 2.0)));

    // A prefab referring to scene entities refers to the spawned ones.
    let guard = world.spawn_prefab("Guard", ()).unwrap();
    assert_eq!(
        world.get::<Links>(guard),
        Ok(&Links {
            target: spawned[1],
            parent: None,
            children: vec![spawned[1], spawned[2]],
            weight: 0.0
        })
    );
    assert_eq!(world.get::<Mood>(guard), Ok(&Mood::Calm));
    assert_eq!(world.len(), 7);

    // Unknown prefab: an error with a suggestion, nothing spawned.
    let before = world.len();
    let archetypes = world.archetype_count();
    let err = world.spawn_prefab("OldTre", Health(3)).unwrap_err();
    assert_eq!(
        err,
        SceneError::UnknownPrefab {
            name: "OldTre".into(),
            in_prefab: None,
            suggestion: Some("OldTree".into()),
            at: Where::Unknown,
        }
    );
    assert_eq!(
        err.to_string(),
        "unknown prefab `OldTre`; did you mean `OldTree`?"
    );
    let err = world.spawn_prefab("Dragon", ()).unwrap_err();
    assert!(
        matches!(
            &err,
            SceneError::UnknownPrefab {
                suggestion: None,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(world.len(), before);
    assert_eq!(world.archetype_count(), archetypes);

    // No scene loaded at all.
    let mut empty = World::new();
    assert!(matches!(
        empty.spawn_prefab("Tree", ()),
        Err(SceneError::UnknownPrefab {
            suggestion: None,
            ..
        })
    ));
    assert!(empty.is_empty());

    // A later scene's prefab of the same name replaces the earlier one;
    // the others stay.
    Scene::from_ron_str(r#"(prefabs: { "Tree": (components: { "Health": (77) }) })"#)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    let tree = world.spawn_prefab("Tree", ()).unwrap();
    assert_eq!(world.get::<Health>(tree), Ok(&Health(77)));
    assert!(!world.has::<Label>(tree));
    let old = world.spawn_prefab("OldTree", ()).unwrap();
    assert_eq!(world.get::<Health>(old), Ok(&Health(50)));
}

/// Hooks and observers run while a scene loads; one that despawns the entity
/// being loaded (or another one of the scene) does not upset the loader.
#[test]
fn hooks_that_despawn_scene_entities_during_load() {
    let registry = registry();
    let mut world = World::new();
    world
        .register_component_hooks::<Frozen>()
        .on_add(|mut w, e| w.commands().despawn(e));
    let text = r#"(
        schemas: { "Mana": { "current": "int", "max": "float" } },
        prefabs: { "Ice": (components: { "Frozen": (), "Health": (1), "Mana": { "current": 1 } }) },
        entities: [
            (id: 1, components: { "Frozen": (), "Health": (2), "Label": (name: "x"), "Mana": { "current": 1 } }),
            (id: 2, components: { "Health": (3), "Follow": (Some(1)) }),
            (id: 3, prefab: "Ice"),
        ],
    )"#;
    let spawned = Scene::from_ron_str(text)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    assert!(!world.contains(spawned[1]));
    assert!(!world.contains(spawned[3]));
    assert_eq!(world.get::<Health>(spawned[2]), Ok(&Health(3)));
    assert_eq!(world.len(), 1);
    let ice = world.spawn_prefab("Ice", Health(5)).unwrap();
    assert!(!world.contains(ice));
    assert_eq!(world.len(), 1);
}

// ----- errors --------------------------------------------------------------------------

/// The parts of a world a failed load must leave alone.
#[derive(Debug, PartialEq)]
struct State {
    len: usize,
    archetypes: usize,
    snapshot: Snapshot,
    schemas_in_order: Vec<ComponentSchema>,
}

fn state(world: &World) -> State {
    State {
        len: world.len(),
        archetypes: world.archetype_count(),
        snapshot: snapshot_all(world),
        schemas_in_order: world.dynamic_schemas().cloned().collect(),
    }
}

/// A world with entities, a resource, a runtime-defined component and a
/// prefab loaded from an earlier scene.
fn populated_world(registry: &TypeRegistry) -> World {
    let mut world = World::new();
    world.register_dynamic_component(mana()).unwrap();
    let e = world.spawn((
        Position { x: 1.0, y: 1.0 },
        Health(3),
        Label {
            name: "keep".into(),
        },
    ));
    world
        .insert_one(
            e,
            Links {
                target: e,
                parent: Some(e),
                children: vec![e],
                weight: 2.0,
            },
        )
        .unwrap();
    world.insert_dynamic(e, mana_value(4, 8.0)).unwrap();
    world.insert_resource(Gravity(1.5));
    Scene::from_ron_str(r#"(prefabs: { "Known": (components: { "Health": (1) }) })"#)
        .unwrap()
        .spawn_into(&mut world, registry)
        .unwrap();
    world
}

/// Loads `bytes` as `format` into a populated world; returns the error and
/// checks that the world did not change.
fn load_error(bytes: &[u8], format: Format) -> SceneError {
    let registry = registry();
    let mut world = populated_world(&registry);
    let before = state(&world);
    let result = read(bytes, format).and_then(|scene| scene.spawn_into(&mut world, &registry));
    let err = match result {
        Ok(spawned) => panic!(
            "{format:?} scene loaded ({} entities) but should not:\n{}",
            spawned.len(),
            String::from_utf8_lossy(bytes)
        ),
        Err(err) => err,
    };
    assert_eq!(state(&world), before, "the world changed after: {err}");
    // The earlier scene's prefab is still there; nothing new is.
    let known = world.spawn_prefab("Known", ()).unwrap();
    assert_eq!(world.get::<Health>(known), Ok(&Health(1)));
    err
}

fn ron_error(text: &str) -> SceneError {
    load_error(text.as_bytes(), Format::Ron)
}

fn json_error(text: &str) -> SceneError {
    load_error(text.as_bytes(), Format::Json)
}

/// The error loading RON `text`, and (when its values are valid, so it can
/// be resolved and converted) the errors loading the same scene as JSON and
/// binary.
fn errors_in_every_format(text: &str) -> Vec<SceneError> {
    let mut errors = vec![ron_error(text)];
    let mut scene = Scene::from_ron_str(text).unwrap();
    scene.resolve(&registry()).unwrap();
    for format in [Format::Json, Format::Binary] {
        errors.push(load_error(&write(&scene, format), format));
    }
    errors
}

fn text_at(line: usize, column: usize) -> Where {
    Where::Text(Location { line, column })
}

/// 1-based line and column of the first `needle` in `text`.
fn find(text: &str, needle: &str) -> Location {
    let offset = text.find(needle).expect("needle");
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    Location {
        line: text[..offset].matches('\n').count() + 1,
        column: text[line_start..offset].chars().count() + 1,
    }
}

#[test]
fn ron_syntax_error() {
    let text = "(\n    entities: [\n        (id: 1, components: {\"Health\": (1)}\n    ],\n)";
    let err = ron_error(text);
    let SceneError::Syntax {
        format: "RON",
        at: Where::Text(at),
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(at.line, 4, "{err}");
    assert!(
        err.to_string().starts_with("RON syntax error at line 4"),
        "{err}"
    );
    // A section the scene format does not have.
    let err = ron_error("(entitys: [])");
    assert!(
        matches!(err, SceneError::Syntax { format: "RON", .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("entitys"), "{err}");
    // An entity without an id.
    let err = ron_error("(entities: [(components: {})])");
    assert!(
        matches!(err, SceneError::Syntax { format: "RON", .. }),
        "{err:?}"
    );
    // An id that is not a number.
    let err = ron_error("(entities: [(id: \"one\")])");
    assert!(
        matches!(&err, SceneError::Syntax { format: "RON", message, .. } if message.contains("entity id")),
        "{err:?}"
    );
}

#[test]
fn json_syntax_error() {
    let text = "{\n  \"entities\": [\n    {\"id\": 1,}\n  ]\n}";
    let err = json_error(text);
    assert!(
        matches!(
            &err,
            SceneError::Syntax { format: "JSON", at: Where::Text(at), .. } if at.line == 3
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("JSON syntax error at line 3, column "),
        "{err}"
    );
    // The message does not repeat serde_json's own position.
    assert_eq!(err.to_string().matches(" line ").count(), 1, "{err}");
    let err = json_error("[1, 2]");
    assert!(
        matches!(err, SceneError::Syntax { format: "JSON", .. }),
        "{err:?}"
    );
}

/// Columns count characters, not bytes, in JSON as in RON: text before
/// the error on its line may be any Unicode.
#[test]
fn json_columns_count_characters() {
    // A value spread over two lines, wrong on the second, after "ünï".
    let text = "{\"entities\": [{\"id\": 1, \"components\": {\"Mood\": {\"Scared\": {\n  \"of\": \"ünï\", \"level\": \"high\"}}}}]}";
    let err = json_error(text);
    let token = find(text, "\"high\"");
    assert!(
        matches!(&err, SceneError::WrongShape { path, at: Where::Text(at), .. }
            if path == "Scared.level" && at.line == 2
                && (token.column..token.column + "\"high\"".len()).contains(&at.column)),
        "{err:?} (token at {token})"
    );
    // A syntax error after "ünï" on its line.
    let text =
        "{\"entities\": [\n  {\"id\": 1, \"components\": {\"Label\": {\"name\": \"ünï\"}} x}\n]}";
    let err = json_error(text);
    assert_eq!(
        err,
        SceneError::Syntax {
            format: "JSON",
            message: "expected `,` or `}`".into(),
            at: Where::Text(find(text, "x}")),
        }
    );
}

#[test]
fn garbage_binary() {
    let registry = registry();
    let good = Scene::from_world(&sample_world(), &registry)
        .unwrap()
        .to_binary()
        .unwrap();
    let err = load_error(b"definitely not a scene", Format::Binary);
    assert_eq!(
        err.to_string(),
        "binary syntax error: not a mosaic binary scene (wrong header)"
    );
    let err = load_error(&good[..good.len() / 2], Format::Binary);
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
    let mut long = good.clone();
    long.extend_from_slice(b"extra");
    let err = load_error(&long, Format::Binary);
    assert_eq!(
        err.to_string(),
        "binary syntax error: 5 bytes left over after the scene"
    );
    let mut wrong = b"mosaic-scene\x01".to_vec();
    wrong.extend_from_slice(&[0xff; 40]);
    let err = load_error(&wrong, Format::Binary);
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
}

#[test]
fn unknown_component_with_suggestion() {
    let text = "(entities: [(id: 1, components: {\"Postion\": (x: 1.0, y: 2.0)})])";
    let err = ron_error(text);
    let at = find(text, "(x:");
    assert_eq!(
        err,
        SceneError::UnknownComponent {
            kind: "component",
            name: "Postion".into(),
            suggestion: Some("Position".into()),
            at: Where::Text(at),
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "unknown component `Postion` at line 1, column {}; did you mean `Position`?",
            at.column
        )
    );
    // Runtime-defined names are suggested too (the world declares Mana).
    let err = ron_error("(entities: [(id: 1, components: {\"Mna\": {}})])");
    assert!(
        matches!(&err, SceneError::UnknownComponent { suggestion: Some(s), .. } if s == "Mana"),
        "{err:?}"
    );
    // Nothing close: no suggestion.
    let err = json_error(r#"{"entities": [{"id": 1, "components": {"Spaceship": null}}]}"#);
    assert!(
        matches!(
            &err,
            SceneError::UnknownComponent {
                suggestion: None,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains("did you mean"), "{err}");
    // In a prefab no entity uses: still checked.
    let err = ron_error("(prefabs: {\"P\": (components: {\"Helth\": (1)})})");
    assert!(
        matches!(&err, SceneError::UnknownComponent { suggestion: Some(s), .. } if s == "Health"),
        "{err:?}"
    );
    // A resource name used as a component, and the other way round.
    let err = ron_error("(entities: [(id: 1, components: {\"Gravity\": (1.0)})])");
    assert!(
        matches!(
            &err,
            SceneError::UnknownComponent {
                kind: "component",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn value_of_the_wrong_shape() {
    // RON: the bad field is on line 4.
    let text = r#"(
    entities: [
        (id: 1, components: {
            "Position": (x: 1.0, y: "high"),
        }),
    ],
)"#;
    let err = ron_error(text);
    let SceneError::WrongShape {
        component,
        path,
        message,
        at: Where::Text(at),
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(component, "Position");
    assert_eq!(path, "y");
    assert_eq!(message, "Expected float");
    // RON points at the value or the blank just before it.
    let field = find(text, "y: \"high\"");
    let token = find(text, "\"high\"");
    assert_eq!(at.line, 4, "{err}");
    assert!(
        (field.column..=token.column + "\"high\"".len()).contains(&at.column),
        "column {} is not at the field (columns {} to {}): {err}",
        at.column,
        field.column,
        token.column
    );
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!(
            "component `Position`, field `y` at line 4, column {}: ",
            at.column
        )),
        "{shown}"
    );

    // JSON: a nested field path, on line 4.
    let text = r#"{
  "entities": [
    {"id": 1, "components": {
      "Links": {"target": 1, "parent": null, "children": [1, "two"], "weight": 0}
    }}
  ]
}"#;
    let err = json_error(text);
    let SceneError::WrongShape {
        component,
        path,
        at: Where::Text(at),
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(component, "Links");
    assert_eq!(path, "children[1]");
    let token = find(text, "\"two\"");
    assert_eq!(at.line, 4, "{err}");
    assert!(
        (token.column..=token.column + "\"two\"".len()).contains(&at.column),
        "column {} is not at the token (column {}): {err}",
        at.column,
        token.column
    );

    // A value spread over several lines in RON.
    let text = "(entities: [(id: 1, components: {\n  \"Links\": (\n    target: 1,\n    parent: None,\n    children: [1, 1],\n    weight: \"heavy\",\n  ),\n})])";
    let err = ron_error(text);
    let token = find(text, "\"heavy\"");
    assert!(
        matches!(
            &err,
            SceneError::WrongShape { path, at: Where::Text(at), .. }
                if path == "weight" && at.line == token.line
        ),
        "{err:?} (token at {token})"
    );

    // A missing field, a whole value of the wrong kind, an unknown variant.
    let err = ron_error("(entities: [(id: 1, components: {\"Position\": (x: 1.0)})])");
    assert!(
        matches!(&err, SceneError::WrongShape { component, message, .. } if component == "Position" && message.contains("y")),
        "{err:?}"
    );
    let err = ron_error("(entities: [(id: 1, components: {\"Health\": \"full\"})])");
    assert!(
        matches!(&err, SceneError::WrongShape { component, .. } if component == "Health"),
        "{err:?}"
    );
    let err = ron_error("(entities: [(id: 1, components: {\"Mood\": Bored})])");
    assert!(
        matches!(&err, SceneError::WrongShape { component, .. } if component == "Mood"),
        "{err:?}"
    );
    // A resource of the wrong shape.
    let err = ron_error("(resources: {\"Gravity\": (x: 1)})");
    assert!(
        matches!(&err, SceneError::WrongShape { component, .. } if component == "Gravity"),
        "{err:?}"
    );
}

/// Issue #18, item 8: a value wrong as a whole has an empty field path, as
/// `SceneError::WrongShape::path` documents (serde_path_to_error writes
/// the root as "."), in every format and for runtime-defined components.
#[test]
fn a_value_wrong_as_a_whole_has_an_empty_path() {
    let ron = ron_error("(entities: [(id: 1, components: {\"Health\": \"full\"})])");
    let json = json_error(r#"{"entities": [{"id": 1, "components": {"Health": "full"}}]}"#);
    let dynamic = ron_error(
        "(schemas: {\"Focus\": {\"current\": \"int\"}}, \
         entities: [(id: 1, components: {\"Focus\": 3})])",
    );
    for (err, component) in [(ron, "Health"), (json, "Health"), (dynamic, "Focus")] {
        let SceneError::WrongShape {
            component: c, path, ..
        } = &err
        else {
            panic!("not a shape error: {err:?}");
        };
        assert_eq!((c.as_str(), path.as_str()), (component, ""), "{err}");
        assert!(!err.to_string().contains("field"), "{err}");
    }
    // A nested field still has its path.
    let err = ron_error("(entities: [(id: 1, components: {\"Position\": (x: 1.0, y: \"up\")})])");
    assert!(
        matches!(&err, SceneError::WrongShape { path, .. } if path == "y"),
        "{err:?}"
    );
}

#[test]
fn duplicate_scene_id() {
    let text =
        "(entities: [\n  (id: 7),\n  (id: 8),\n  (id: 7, components: {\"Health\": (1)}),\n])";
    let errors = errors_in_every_format(text);
    for err in &errors {
        assert!(
            matches!(err, SceneError::DuplicateId { id: 7, .. }),
            "{err:?}"
        );
    }
    assert_eq!(
        errors[0].to_string(),
        "duplicate scene id 7 at line 4, column 8"
    );
    assert_eq!(errors[2].to_string(), "duplicate scene id 7 in entity 7");
}

#[test]
fn dangling_scene_id() {
    let text = "(entities: [\n  (id: 1),\n  (id: 2, components: {\"Follow\": (Some(99))}),\n])";
    let errors = errors_in_every_format(text);
    for err in &errors {
        assert!(
            matches!(err, SceneError::DanglingReference { component, id: 99, .. } if component == "Follow"),
            "{err:?}"
        );
    }
    let at = find(text, "(Some(99))");
    assert_eq!(at.line, 3);
    assert_eq!(
        errors[0].to_string(),
        format!(
            "component `Follow` at line 3, column {} refers to entity 99, which is not in the scene",
            at.column
        )
    );
    // In a Vec field, in a runtime-defined entity field, in a prefab, in a
    // resource.
    let text = "(entities: [(id: 1, components: {\"Links\": (target: 1, parent: None, children: [1, 5], weight: 0.0)})])";
    assert!(matches!(
        ron_error(text),
        SceneError::DanglingReference { id: 5, .. }
    ));
    let text = "(schemas: {\"Owner\": {\"who\": \"entity\"}}, entities: [(id: 1, components: {\"Owner\": {\"who\": 6}})])";
    assert!(matches!(
        ron_error(text),
        SceneError::DanglingReference { id: 6, .. }
    ));
    let text = "(prefabs: {\"P\": (components: {\"Follow\": (Some(3))})}, entities: [(id: 1)])";
    assert!(matches!(
        ron_error(text),
        SceneError::DanglingReference { id: 3, .. }
    ));
    let text = "(resources: {\"Camera\": (follows: Some(4), zoom: 1.0)}, entities: [(id: 1)])";
    assert!(
        matches!(ron_error(text), SceneError::DanglingReference { component, id: 4, .. } if component == "Camera")
    );
}

#[test]
fn unmapped_entity_references() {
    let text = "(entities: [(id: 1), (id: 2, components: {\"Unmapped\": (1)})])";
    let errors = errors_in_every_format(text);
    for err in &errors {
        assert!(
            matches!(err, SceneError::UnmappedEntities { component, .. } if component == "Unmapped"),
            "{err:?}"
        );
    }
    assert_eq!(
        errors[0].to_string(),
        "component `Unmapped` at line 1, column 55 holds entity references, but its registration does not map them (call `.map_entities()` when registering it)"
    );
    // Saving a world that holds one, then loading it, reports the same.
    let registry = registry();
    let mut world = World::new();
    let a = world.spawn(());
    world.spawn(Unmapped(a));
    for format in FORMATS {
        let bytes = write(&Scene::from_world(&world, &registry).unwrap(), format);
        let err = read(&bytes, format)
            .unwrap()
            .spawn_into(&mut World::new(), &registry)
            .unwrap_err();
        assert!(
            matches!(err, SceneError::UnmappedEntities { .. }),
            "{err:?}"
        );
    }
}

#[test]
fn prefab_cycle() {
    let text = r#"(
        prefabs: {
            "A": (extends: "B", components: { "Health": (1) }),
            "B": (extends: "A"),
        },
        entities: [(id: 1)],
    )"#;
    let errors = errors_in_every_format(text);
    for err in &errors {
        assert!(
            matches!(err, SceneError::PrefabCycle { chain, .. } if chain == &["A", "B", "A"]),
            "{err:?}"
        );
    }
    // Where the cycle's first prefab is: its body in a text file, its name
    // in a binary one.
    let at = |err: &SceneError| match err {
        SceneError::PrefabCycle { at, .. } => at.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(at(&errors[0]), Where::Text(find(text, "(extends: \"B\"")));
    assert_eq!(at(&errors[1]).location().map(|l| l.line), Some(3));
    assert_eq!(at(&errors[2]), Where::Binary("prefab `A`".into()));
    assert_eq!(
        errors[0].to_string(),
        "prefab cycle: A -> B -> A at line 3, column 18"
    );
    // A prefab that extends itself; a cycle reached through a chain.
    let err = ron_error(r#"(prefabs: {"S": (extends: "S")})"#);
    assert_eq!(err.to_string(), "prefab cycle: S -> S at line 1, column 17");
    let err =
        ron_error(r#"(prefabs: {"X": (extends: "Y"), "Y": (extends: "Z"), "Z": (extends: "Y")})"#);
    assert_eq!(
        err.to_string(),
        "prefab cycle: Y -> Z -> Y at line 1, column 38"
    );
}

#[test]
fn unknown_prefab() {
    // For an entity.
    let text = "(\n  prefabs: {\"Tree\": ()},\n  entities: [(id: 1), (id: 2, prefab: \"Tre\")],\n)";
    let errors = errors_in_every_format(text);
    for err in &errors {
        assert!(
            matches!(err, SceneError::UnknownPrefab { name, suggestion: Some(s), .. } if name == "Tre" && s == "Tree"),
            "{err:?}"
        );
    }
    // Located at the offending token: the prefab's name.
    let at = find(text, "\"Tre\"");
    assert_eq!(
        errors[0].to_string(),
        format!(
            "unknown prefab `Tre` at line 3, column {}; did you mean `Tree`?",
            at.column
        )
    );
    assert_eq!(
        errors[2].to_string(),
        "unknown prefab `Tre` in entity 2; did you mean `Tree`?"
    );
    // For `extends`.
    let text = r#"(prefabs: {"Base": (), "Tree": (extends: "Bas")})"#;
    let errors = errors_in_every_format(text);
    for err in &errors {
        assert!(
            matches!(err, SceneError::UnknownPrefab { name, suggestion: Some(s), .. } if name == "Bas" && s == "Base"),
            "{err:?}"
        );
    }
    assert_eq!(
        errors[0].to_string(),
        format!(
            "unknown prefab `Bas` (in the `extends` of prefab `Tree`) at line 1, column {}; did you mean `Base`?",
            find(text, "\"Bas\"").column
        )
    );
    assert_eq!(
        errors[2].to_string(),
        "unknown prefab `Bas` in prefab `Tree`; did you mean `Base`?"
    );
    // A prefab another scene loaded earlier is not visible to this one.
    let err = ron_error("(entities: [(id: 1, prefab: \"Known\")])");
    assert!(matches!(err, SceneError::UnknownPrefab { .. }), "{err:?}");
}

#[test]
fn duplicate_names() {
    // A component twice in one entity.
    let text = "(entities: [(id: 1, components: {\n  \"Health\": (1),\n  \"Health\": (2),\n})])";
    let err = ron_error(text);
    assert_eq!(
        err,
        SceneError::Duplicate {
            what: "component",
            name: "Health".into(),
            at: text_at(3, 13),
        }
    );
    assert_eq!(
        err.to_string(),
        "component `Health` is given twice at line 3, column 13"
    );
    let err = json_error(r#"{"entities": [{"id": 1, "components": {"Health": 1, "Health": 2}}]}"#);
    assert!(
        matches!(&err, SceneError::Duplicate { what: "component", name, .. } if name == "Health"),
        "{err:?}"
    );
    // In a prefab.
    let err = ron_error(r#"(prefabs: {"P": (components: {"Frozen": (), "Frozen": ()})})"#);
    assert!(
        matches!(
            &err,
            SceneError::Duplicate {
                what: "component",
                ..
            }
        ),
        "{err:?}"
    );
    // A prefab, a resource, a schema.
    let err = ron_error(r#"(prefabs: {"P": (), "P": ()})"#);
    assert!(
        matches!(&err, SceneError::Duplicate { what: "prefab", .. }),
        "{err:?}"
    );
    let err = ron_error(r#"(resources: {"Gravity": (1.0), "Gravity": (2.0)})"#);
    assert!(
        matches!(
            &err,
            SceneError::Duplicate {
                what: "resource",
                ..
            }
        ),
        "{err:?}"
    );
    let err = ron_error(r#"(schemas: {"Stamina": {}, "Stamina": {}})"#);
    assert!(
        matches!(&err, SceneError::Duplicate { what: "schema", .. }),
        "{err:?}"
    );
    // An override of a prefab's component is not a duplicate.
    let registry = registry();
    let mut world = World::new();
    let spawned = Scene::from_ron_str(
        r#"(prefabs: {"P": (components: {"Health": (1)})}, entities: [(id: 1, prefab: "P", components: {"Health": (2)})])"#,
    )
    .unwrap()
    .spawn_into(&mut world, &registry)
    .unwrap();
    assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(2)));
}

#[test]
fn schema_errors() {
    // The world declares Mana { current: int, max: float }.
    let err = ron_error(r#"(schemas: {"Mana": {"current": "float"}})"#);
    assert_eq!(
        err,
        SceneError::Schema {
            component: "Mana".into(),
            error: SchemaError::Conflict {
                name: "Mana".into()
            },
            at: text_at(1, 20),
        }
    );
    assert_eq!(
        err.to_string(),
        "schema of `Mana` at line 1, column 20: component `Mana` is already declared with a different schema"
    );
    // The same fields in another order are another schema.
    let err = ron_error(r#"(schemas: {"Mana": {"max": "float", "current": "int"}})"#);
    assert!(
        matches!(
            &err,
            SceneError::Schema {
                error: SchemaError::Conflict { .. },
                ..
            }
        ),
        "{err:?}"
    );
    // The name of a Rust component (registered, or in the world).
    let err = ron_error(r#"(schemas: {"Position": {"x": "float"}})"#);
    assert!(
        matches!(
            &err,
            SceneError::Schema {
                error: SchemaError::TakenByRustType { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let err = ron_error(r#"(schemas: {"Frozen": {}})"#);
    assert!(
        matches!(
            &err,
            SceneError::Schema {
                error: SchemaError::TakenByRustType { .. },
                ..
            }
        ),
        "{err:?}"
    );
    // An unknown field type (refused when the file is read).
    let err = ron_error(r#"(schemas: {"Stamina": {"left": "integer"}})"#);
    assert_eq!(
        err.to_string(),
        "schema of `Stamina` at line 1, column 23: unknown field type `integer` (expected bool, int, float, string or entity)"
    );
    let err = json_error(r#"{"schemas": {"Stamina": {"left": "long"}}}"#);
    assert!(
        matches!(
            &err,
            SceneError::Schema {
                error: SchemaError::UnknownFieldType { .. },
                ..
            }
        ),
        "{err:?}"
    );
    // A field twice, an empty name.
    let err = ron_error(r#"(schemas: {"Stamina": {"left": "int", "left": "int"}})"#);
    assert!(
        matches!(
            &err,
            SceneError::Schema {
                error: SchemaError::DuplicateField { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let err = ron_error(r#"(schemas: {" ": {}})"#);
    assert!(
        matches!(
            &err,
            SceneError::Schema {
                error: SchemaError::EmptyName,
                ..
            }
        ),
        "{err:?}"
    );
}

/// Two Rust types with the same short name make the name ambiguous; a
/// scene schema of that name is still refused, not half-loaded.
#[test]
fn schema_named_like_two_rust_types() {
    mod one {
        #[derive(mosaic::Component)]
        pub struct Speed;
    }
    mod two {
        #[derive(mosaic::Component)]
        pub struct Speed;
    }
    let registry = registry();
    let mut world = World::new();
    world.spawn((one::Speed, two::Speed));
    let archetypes = world.archetype_count();
    let text = r#"(schemas: {"Aaa": {}, "Speed": {"v": "int"}}, entities: [(id: 1)])"#;
    let err = Scene::from_ron_str(text)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap_err();
    assert!(
        matches!(
            &err,
            SceneError::Schema {
                error: SchemaError::TakenByRustType { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(world.len(), 1);
    assert_eq!(world.archetype_count(), archetypes);
    assert_eq!(world.dynamic_schemas().count(), 0);
}

#[test]
fn wrong_dynamic_field_type() {
    let text = "(entities: [(id: 1, components: {\n  \"Mana\": { \"current\": \"lots\", \"max\": 1.0 },\n})])";
    let err = ron_error(text);
    let token = find(text, "\"lots\"");
    let SceneError::WrongShape {
        component,
        path,
        at: Where::Text(at),
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!((component.as_str(), path.as_str()), ("Mana", "current"));
    assert_eq!(at.line, token.line, "{err}");
    // JSON and a scene-declared schema.
    let err = json_error(
        r#"{"schemas": {"Owner": {"who": "entity", "loyal": "bool"}},
            "entities": [{"id": 1, "components": {"Owner": {"who": 1, "loyal": "yes"}}}]}"#,
    );
    assert!(
        matches!(&err, SceneError::WrongShape { component, path, at: Where::Text(at), .. }
            if component == "Owner" && path == "loyal" && at.line == 2),
        "{err:?}"
    );
    // An unknown field, a missing entity field, a value that is not a map.
    let err = ron_error("(entities: [(id: 1, components: {\"Mana\": {\"curent\": 1}})])");
    assert!(
        matches!(&err, SceneError::WrongShape { component, message, .. }
            if component == "Mana" && message.contains("unknown field `curent`")),
        "{err:?}"
    );
    let err = ron_error(
        "(schemas: {\"Owner\": {\"who\": \"entity\"}}, entities: [(id: 1, components: {\"Owner\": {}})])",
    );
    assert!(
        matches!(&err, SceneError::WrongShape { component, message, .. }
            if component == "Owner" && message.contains("missing")),
        "{err:?}"
    );
    let err = ron_error("(entities: [(id: 1, components: {\"Mana\": 5})])");
    assert!(
        matches!(&err, SceneError::WrongShape { component, .. } if component == "Mana"),
        "{err:?}"
    );
    // A float where an int is declared is refused (no silent truncation).
    // RON reads the `1` and then trips over `.5`, so the path is the next
    // key's (`?`); JSON names the field.
    let err = ron_error("(entities: [(id: 1, components: {\"Mana\": {\"current\": 1.5}})])");
    assert!(
        matches!(&err, SceneError::WrongShape { component, .. } if component == "Mana"),
        "{err:?}"
    );
    let err = json_error(r#"{"entities": [{"id": 1, "components": {"Mana": {"current": 1.5}}}]}"#);
    assert!(
        matches!(&err, SceneError::WrongShape { component, path, .. } if component == "Mana" && path == "current"),
        "{err:?}"
    );
}

#[test]
fn unknown_resource() {
    let text = "(resources: {\"Gravty\": (9.8)}, entities: [(id: 1)])";
    let err = ron_error(text);
    assert_eq!(
        err,
        SceneError::UnknownComponent {
            kind: "resource",
            name: "Gravty".into(),
            suggestion: Some("Gravity".into()),
            at: Where::Text(find(text, "(9.8)")),
        }
    );
    assert_eq!(
        err.to_string(),
        "unknown resource `Gravty` at line 1, column 24; did you mean `Gravity`?"
    );
    // A component name used as a resource.
    let err = ron_error("(resources: {\"Health\": (1)})");
    assert!(
        matches!(
            &err,
            SceneError::UnknownComponent {
                kind: "resource",
                ..
            }
        ),
        "{err:?}"
    );
    // Runtime-defined components are never resources.
    let err = ron_error("(resources: {\"Mana\": {}})");
    assert!(
        matches!(
            &err,
            SceneError::UnknownComponent {
                kind: "resource",
                ..
            }
        ),
        "{err:?}"
    );
}

/// The last check fails after everything else was checked (a new schema,
/// entities, prefabs, resources before it): still nothing changes.
#[test]
fn an_error_at_the_very_end_changes_nothing() {
    let text = r#"(
        schemas: { "Stamina": { "left": "int" } },
        prefabs: { "Fresh": (components: { "Health": (1) }) },
        entities: [
            (id: 1, prefab: "Fresh", components: { "Stamina": { "left": 3 } }),
            (id: 2, components: { "Follow": (Some(1)), "Mana": { "current": 1 } }),
        ],
        resources: { "Gravity": (2.0), "Camera": (follows: Some(2), zoom: 1.0), "Weather": () },
    )"#;
    let err = ron_error(text);
    assert!(
        matches!(&err, SceneError::UnknownComponent { kind: "resource", name, .. } if name == "Weather"),
        "{err:?}"
    );
    let registry = registry();
    let mut world = populated_world(&registry);
    let _ = Scene::from_ron_str(text)
        .unwrap()
        .spawn_into(&mut world, &registry);
    assert!(world.dynamic_schema("Stamina").is_none());
    assert!(matches!(
        world.spawn_prefab("Fresh", ()),
        Err(SceneError::UnknownPrefab { .. })
    ));
    assert_eq!(world.get_resource::<Gravity>(), Some(&Gravity(1.5)));
    assert!(world.get_resource::<Camera>().is_none());
}

#[test]
#[cfg_attr(miri, ignore = "touches the filesystem: Miri runs with isolation")]
fn unresolved_and_io_errors_read_well() {
    let scene =
        Scene::from_ron_str(r#"(entities: [(id: 1, components: {"Health": (1)})])"#).unwrap();
    let err = scene.to_json_string().unwrap_err();
    assert_eq!(
        err.to_string(),
        "component `Health` was read from RON; call `scene.resolve(&registry)` before writing it as JSON"
    );
    let err = Scene::from_path("/no/such/dir/scene.json").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("could not read scene file `/no/such/dir/scene.json`: "),
        "{err}"
    );
}

// ----- loading never panics -------------------------------------------------------------

/// Reads and loads `bytes` (and writes what it read back out); any result
/// but a panic is fine.
fn load_any(bytes: &[u8], format: Format, registry: &TypeRegistry) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let scene = match format {
            Format::Ron | Format::Json => match std::str::from_utf8(bytes) {
                Ok(_) => read(bytes, format),
                Err(_) => return,
            },
            Format::Binary => read(bytes, format),
        };
        let Ok(mut scene) = scene else { return };
        let mut world = World::new();
        let _ = scene.spawn_into(&mut world, registry);
        let _ = world.spawn_prefab("Tree", ());
        // Again, into a world that now has entities, schemas and prefabs.
        let _ = scene.spawn_into(&mut world, registry);
        if scene.resolve(registry).is_ok() {
            // Writing may fail too (JSON refuses a mutated float that became
            // infinite), but never panic.
            let _ = scene.to_ron_string();
            let _ = scene.to_json_string();
            let _ = scene.to_binary();
        }
    }));
    if outcome.is_err() {
        panic!(
            "loading this {format:?} scene panicked:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

/// A small scene with a bit of everything.
fn small_scene() -> Scene {
    Scene::from_ron_str(
        r#"(
    schemas: { "Mana": { "current": "int", "max": "float" }, "Owner": { "who": "entity" } },
    resources: { "Gravity": (-9.8), "Camera": (follows: Some(1), zoom: 1.0) },
    prefabs: {
        "Base": (components: { "Position": (x: 0.0, y: 0.0) }),
        "Tree": (extends: "Base", components: { "Label": (name: "t") }),
    },
    entities: [
        (id: 1, prefab: "Tree", components: { "Mana": { "current": 1 }, "Mood": Scared(level: 1, of: "x") }),
        (id: 2, components: { "Links": (target: 1, parent: Some(2), children: [1], weight: 1.0), "Owner": { "who": 1 }, "Frozen": () }),
    ],
)"#,
    )
    .unwrap()
}

/// Every prefix of the scene as `format`, every deletion of one character
/// and replacements of one with characters that matter to the syntax
/// (blanks are left alone: changing them changes nothing).
fn mutated_text_never_panics(format: Format) {
    let registry = registry();
    let mut scene = small_scene();
    scene.resolve(&registry).unwrap();
    let text = String::from_utf8(write(&scene, format)).unwrap();
    // The whole scene loads.
    read(text.as_bytes(), format)
        .unwrap()
        .spawn_into(&mut World::new(), &registry)
        .unwrap();
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    // Every boundary natively. Under Miri, where one load of this scene
    // costs several seconds of interpretation, about six cuts and two edit
    // positions spread over the text (CI runs this in a Miri shard).
    let (cut_stride, edit_stride) = if cfg!(miri) {
        (boundaries.len() / 6 + 1, boundaries.len() / 2 + 1)
    } else {
        (1, 1)
    };
    for &end in boundaries.iter().step_by(cut_stride) {
        load_any(&text.as_bytes()[..end], format, &registry);
    }
    for w in boundaries.windows(2).step_by(edit_stride) {
        let (start, end) = (w[0], w[1]);
        if text[start..end].trim().is_empty() {
            continue;
        }
        let mut deleted = text[..start].to_owned();
        deleted.push_str(&text[end..]);
        load_any(deleted.as_bytes(), format, &registry);
        for c in ["\"", ")", "}", "9", "-"] {
            let mut replaced = text[..start].to_owned();
            replaced.push_str(c);
            replaced.push_str(&text[end..]);
            load_any(replaced.as_bytes(), format, &registry);
        }
    }
}

#[test]
fn truncated_and_mutated_ron_scenes_never_panic() {
    mutated_text_never_panics(Format::Ron);
}

#[test]
fn truncated_and_mutated_json_scenes_never_panic() {
    mutated_text_never_panics(Format::Json);
}

#[test]
fn truncated_and_mutated_binary_scenes_never_panic() {
    let registry = registry();
    let mut scene = small_scene();
    scene.resolve(&registry).unwrap();
    let bytes = scene.to_binary().unwrap();
    Scene::from_binary(&bytes)
        .unwrap()
        .spawn_into(&mut World::new(), &registry)
        .unwrap();
    // Every position natively; about ten cuts and four edit positions
    // under Miri (see `mutated_text_never_panics`).
    let (cut_stride, edit_stride) = if cfg!(miri) {
        (bytes.len() / 10 + 1, bytes.len() / 4 + 1)
    } else {
        (1, 1)
    };
    for end in (0..=bytes.len()).step_by(cut_stride) {
        load_any(&bytes[..end], Format::Binary, &registry);
    }
    for i in (0..bytes.len()).step_by(edit_stride) {
        for change in [0x01u8, 0x02, 0x10, 0x80, 0xff] {
            let mut mutated = bytes.clone();
            mutated[i] ^= change;
            load_any(&mutated, Format::Binary, &registry);
        }
        for value in [0x00u8, 0x7f] {
            let mut mutated = bytes.clone();
            mutated[i] = value;
            load_any(&mutated, Format::Binary, &registry);
        }
        let mut deleted = bytes.clone();
        deleted.remove(i);
        load_any(&deleted, Format::Binary, &registry);
    }
}

// ----- random worlds ---------------------------------------------------------------------

#[derive(Clone, Debug)]
enum MoodSpec {
    Calm,
    Angry(u8),
    Scared(u8, String),
}

/// The components of one entity; entity references are indices into the
/// live entities (taken modulo their number).
#[derive(Clone, Debug, Default)]
struct EntitySpec {
    position: Option<(f32, f32)>,
    health: Option<u32>,
    label: Option<String>,
    frozen: bool,
    mood: Option<MoodSpec>,
    links: Option<(usize, Option<usize>, Vec<usize>, f32)>,
    follow: Option<Option<usize>>,
    mana: Option<(i64, f64)>,
    owner: Option<(usize, String, bool)>,
}

#[derive(Clone, Debug)]
struct WorldSpec {
    /// Spawn this many, then despawn the live entities marked `true`.
    churn: Vec<(usize, Vec<bool>)>,
    entities: Vec<EntitySpec>,
    declare_owner: bool,
    gravity: Option<f32>,
    camera: Option<(Option<usize>, f32)>,
}

fn finite_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => -1000.0f32..1000.0,
        1 => prop::num::f32::NORMAL | prop::num::f32::SUBNORMAL | prop::num::f32::ZERO,
    ]
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -1000.0f64..1000.0,
        1 => prop::num::f64::NORMAL | prop::num::f64::SUBNORMAL | prop::num::f64::ZERO,
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,8}",
        prop::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter),
    ]
}

fn mood() -> impl Strategy<Value = MoodSpec> {
    prop_oneof![
        Just(MoodSpec::Calm),
        any::<u8>().prop_map(MoodSpec::Angry),
        (any::<u8>(), text()).prop_map(|(l, s)| MoodSpec::Scared(l, s)),
    ]
}

fn entity_spec() -> impl Strategy<Value = EntitySpec> {
    let index = || 0usize..64;
    (
        (
            prop::option::of((finite_f32(), finite_f32())),
            prop::option::of(any::<u32>()),
            prop::option::of(text()),
            any::<bool>(),
            prop::option::of(mood()),
        ),
        (
            prop::option::of((
                index(),
                prop::option::of(index()),
                prop::collection::vec(index(), 0..4),
                finite_f32(),
            )),
            prop::option::of(prop::option::of(index())),
            prop::option::of((any::<i64>(), finite_f64())),
            prop::option::of((index(), text(), any::<bool>())),
        ),
    )
        .prop_map(
            |((position, health, label, frozen, mood), (links, follow, mana, owner))| EntitySpec {
                position,
                health,
                label,
                frozen,
                mood,
                links,
                follow,
                mana,
                owner,
            },
        )
}

fn world_spec() -> impl Strategy<Value = WorldSpec> {
    (
        prop::collection::vec(
            (0usize..6, prop::collection::vec(any::<bool>(), 0..8)),
            0..4,
        ),
        prop::collection::vec(entity_spec(), 0..16),
        any::<bool>(),
        prop::option::of(finite_f32()),
        prop::option::of((prop::option::of(0usize..64), finite_f32())),
    )
        .prop_map(
            |(churn, entities, declare_owner, gravity, camera)| WorldSpec {
                churn,
                entities,
                declare_owner,
                gravity,
                camera,
            },
        )
}

fn build_world(spec: &WorldSpec) -> World {
    let mut world = World::new();
    let mut live: Vec<Entity> = Vec::new();
    for (spawn, despawn) in &spec.churn {
        for _ in 0..*spawn {
            live.push(world.spawn(()));
        }
        let mut kept = Vec::new();
        for (i, e) in live.into_iter().enumerate() {
            if despawn.get(i).copied().unwrap_or(false) {
                world.despawn(e).unwrap();
            } else {
                kept.push(e);
            }
        }
        live = kept;
    }
    while live.len() < spec.entities.len() {
        live.push(world.spawn(()));
    }
    world.register_dynamic_component(mana()).unwrap();
    if spec.declare_owner {
        world.register_dynamic_component(owner()).unwrap();
    }
    let pick = |i: usize| live[i % live.len()];
    for (&e, s) in live.iter().zip(&spec.entities) {
        if let Some((x, y)) = s.position {
            world.insert_one(e, Position { x, y }).unwrap();
        }
        if let Some(h) = s.health {
            world.insert_one(e, Health(h)).unwrap();
        }
        if let Some(name) = &s.label {
            world.insert_one(e, Label { name: name.clone() }).unwrap();
        }
        if s.frozen {
            world.insert_one(e, Frozen).unwrap();
        }
        if let Some(m) = &s.mood {
            let m = match m {
                MoodSpec::Calm => Mood::Calm,
                MoodSpec::Angry(a) => Mood::Angry(*a),
                MoodSpec::Scared(level, of) => Mood::Scared {
                    level: *level,
                    of: of.clone(),
                },
            };
            world.insert_one(e, m).unwrap();
        }
        if let Some((target, parent, children, weight)) = &s.links {
            let links = Links {
                target: pick(*target),
                parent: parent.map(pick),
                children: children.iter().map(|&i| pick(i)).collect(),
                weight: *weight,
            };
            world.insert_one(e, links).unwrap();
        }
        if let Some(follow) = s.follow {
            world.insert_one(e, Follow(follow.map(pick))).unwrap();
        }
        if let Some((current, max)) = s.mana {
            world.insert_dynamic(e, mana_value(current, max)).unwrap();
        }
        if let (Some((who, note, loyal)), true) = (&s.owner, spec.declare_owner) {
            world
                .insert_dynamic(e, owner_value(pick(*who), note, *loyal))
                .unwrap();
        }
    }
    if let Some(g) = spec.gravity {
        world.insert_resource(Gravity(g));
    }
    if let Some((follows, zoom)) = spec.camera {
        let follows = follows.filter(|_| !live.is_empty()).map(pick);
        world.insert_resource(Camera { follows, zoom });
    }
    world
}

fn cases() -> u32 {
    if cfg!(miri) {
        // Each case round-trips three formats through serde: slow under Miri.
        return 2;
    }
    std::env::var("MOSAIC_SCENE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        // Miri runs with isolation: no regression files.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_worlds_round_trip(spec in world_spec()) {
        let registry = registry();
        let world = build_world(&spec);
        for format in FORMATS {
            let mut copy = World::new();
            let spawned = round_trip(&world, &registry, format, &mut copy);
            assert_equal_world(&world, &copy, &spawned);
            // Saved again from the copy: the same world once more.
            let mut again = World::new();
            let spawned_again = round_trip(&copy, &registry, format, &mut again);
            assert_equal_world(&copy, &again, &spawned_again);
        }
    }
}

// ----- one name, one component ------------------------------------------------------

/// A Rust component called like the runtime-defined `Hp` below.
#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Hp(u32);

fn hp_schema() -> ComponentSchema {
    ComponentSchema::new("Hp").field("v", FieldType::Int)
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

/// Saves `world` in every format and loads each file into a new world:
/// every file a save writes must load.
fn assert_saves_load(world: &World, registry: &TypeRegistry) {
    for format in FORMATS {
        let mut copy = World::new();
        let spawned = round_trip(world, registry, format, &mut copy);
        assert_equal_world(world, &copy, &spawned);
    }
}

/// A Rust type spawned after a runtime-defined component of its name is
/// refused, naming both, before anything changes; the name still means the
/// runtime-defined one, and the world saves and loads.
#[test]
fn rust_type_after_runtime_component_of_its_name_is_refused() {
    let mut registry = TypeRegistry::new();
    registry.register::<Hp>();
    let mut world = World::new();
    let dynamic = world.register_dynamic_component(hp_schema()).unwrap();
    let e = world.spawn(());
    let value = hp_schema()
        .instantiate([("v", FieldValue::Int(7))])
        .unwrap();
    world.insert_dynamic(e, value).unwrap();
    let (len, archetypes) = (world.len(), world.archetype_count());

    let message = panic_message(catch_unwind(AssertUnwindSafe(|| world.spawn(Hp(1)))).unwrap_err());
    assert!(message.contains(std::any::type_name::<Hp>()), "{message}");
    assert!(
        message.contains("runtime-defined component `Hp`"),
        "{message}"
    );
    let message = panic_message(
        catch_unwind(AssertUnwindSafe(|| world.register_component::<Hp>())).unwrap_err(),
    );
    assert!(message.contains("name `Hp` is taken"), "{message}");
    assert_eq!((world.len(), world.archetype_count()), (len, archetypes));
    assert_eq!(world.component_id::<Hp>(), None);
    assert_eq!(world.component_named("Hp"), Ok(dynamic));
    assert_eq!(
        world.get_dynamic(e, "Hp").unwrap().get("v"),
        Some(&FieldValue::Int(7))
    );
    // The registry names a Rust `Hp` too: saving refuses rather than write
    // two components called `Hp`.
    let err = Scene::from_world(&world, &registry).unwrap_err();
    assert_eq!(
        err,
        SceneError::Schema {
            component: "Hp".into(),
            error: SchemaError::TakenByRustType {
                name: "Hp".into(),
                rust_type: std::any::type_name::<Hp>().into(),
            },
            at: Where::Unknown,
        }
    );
    // Without it the world saves, and the file loads.
    assert_saves_load(&world, &TypeRegistry::new());
}

/// A runtime-defined component named like a Rust type in the world is
/// refused, naming both; the Rust type keeps the name.
#[test]
fn runtime_component_after_rust_type_of_its_name_is_refused() {
    let mut registry = TypeRegistry::new();
    registry.register::<Hp>();
    let mut world = World::new();
    let e = world.spawn(Hp(1));
    let err = world.register_dynamic_component(hp_schema()).unwrap_err();
    assert_eq!(
        err,
        SchemaError::TakenByRustType {
            name: "Hp".into(),
            rust_type: std::any::type_name::<Hp>().into(),
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "component name `Hp` is taken by the Rust component type `{}`",
            std::any::type_name::<Hp>()
        )
    );
    assert_eq!(world.dynamic_schemas().count(), 0);
    assert_eq!(
        world.component_named("Hp"),
        Ok(world.component_id::<Hp>().unwrap())
    );
    assert_eq!(world.get::<Hp>(e), Ok(&Hp(1)));
    assert_saves_load(&world, &registry);
}

/// A registry name (`register_as`) that a runtime-defined component of the
/// world also has: the save is refused, not written unloadable.
#[test]
fn save_refuses_a_registry_name_a_runtime_component_has() {
    let mut registry = TypeRegistry::new();
    registry.register_as::<Health>("Vigor");
    let mut world = World::new();
    world.spawn(Health(3));
    world
        .register_dynamic_component(ComponentSchema::new("Vigor").field("v", FieldType::Int))
        .unwrap();
    let err = Scene::from_world(&world, &registry).unwrap_err();
    assert!(
        matches!(
            &err,
            SceneError::Schema { component, error: SchemaError::TakenByRustType { rust_type, .. }, .. }
                if component == "Vigor" && rust_type == std::any::type_name::<Health>()
        ),
        "{err:?}"
    );
    let e = world.spawn(Health(4));
    let err = Scene::from_entities(&world, &registry, [e]).unwrap_err();
    assert!(matches!(err, SceneError::Schema { .. }), "{err:?}");
}

/// One step of [`names_never_collide_in_saved_files`].
#[derive(Clone, Debug)]
enum NameStep {
    /// Spawn a Rust `Hp`.
    Rust(u32),
    /// Declare the runtime-defined `Hp` and give a new entity one.
    Dynamic(i64),
    /// Spawn a Rust `Position` (a name nothing else takes).
    Other(f32),
    /// Declare the runtime-defined `Mana` and give a new entity one.
    Mana(i64, f64),
}

fn name_step() -> impl Strategy<Value = NameStep> {
    prop_oneof![
        any::<u32>().prop_map(NameStep::Rust),
        any::<i64>().prop_map(NameStep::Dynamic),
        finite_f32().prop_map(NameStep::Other),
        (any::<i64>(), finite_f64()).prop_map(|(c, m)| NameStep::Mana(c, m)),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Worlds mixing Rust and runtime-defined components, built in any
    /// order, with a name both kinds want: whichever comes first keeps it,
    /// the other is refused, and every save either loads back equal in
    /// every format or is refused with a typed error.
    #[test]
    fn names_never_collide_in_saved_files(
        steps in prop::collection::vec(name_step(), 0..12),
        register_hp in any::<bool>(),
    ) {
        let mut world = World::new();
        let mut owner: Option<&str> = None;
        for step in &steps {
            match step {
                NameStep::Rust(v) => {
                    let spawned = catch_unwind(AssertUnwindSafe(|| world.spawn(Hp(*v))));
                    match owner {
                        Some("dynamic") => prop_assert!(spawned.is_err()),
                        _ => {
                            prop_assert!(spawned.is_ok());
                            owner = Some("rust");
                        }
                    }
                }
                NameStep::Dynamic(v) => {
                    let declared = world.register_dynamic_component(hp_schema());
                    match owner {
                        Some("rust") => prop_assert!(
                            matches!(declared, Err(SchemaError::TakenByRustType { .. })),
                            "{:?}", declared
                        ),
                        _ => {
                            prop_assert!(declared.is_ok());
                            owner = Some("dynamic");
                            let e = world.spawn(());
                            let value = hp_schema().instantiate([("v", FieldValue::Int(*v))]).unwrap();
                            world.insert_dynamic(e, value).unwrap();
                        }
                    }
                }
                NameStep::Other(x) => {
                    world.spawn(Position { x: *x, y: 0.0 });
                }
                NameStep::Mana(current, max) => {
                    world.register_dynamic_component(mana()).unwrap();
                    let e = world.spawn(Health(1));
                    world.insert_dynamic(e, mana_value(*current, *max)).unwrap();
                }
            }
            let named = world.component_named("Hp");
            match owner {
                Some("rust") => prop_assert_eq!(named, Ok(world.component_id::<Hp>().unwrap())),
                Some(_) => {
                    prop_assert_eq!(world.component_id::<Hp>(), None);
                    prop_assert!(world.dynamic_schema("Hp").is_some());
                }
                None => prop_assert!(named.is_err()),
            }
        }
        // The registry names the Rust `Hp` when asked to, and whenever the
        // world holds one (so nothing is skipped).
        let mut registry = registry();
        if register_hp || owner == Some("rust") {
            registry.register::<Hp>();
        }
        match Scene::from_world(&world, &registry) {
            Ok(_) => assert_saves_load(&world, &registry),
            Err(err) => {
                // Refused only for the one collision a registry can make.
                prop_assert!(register_hp && owner == Some("dynamic"), "{}", err);
                prop_assert!(
                    matches!(err, SceneError::Schema { error: SchemaError::TakenByRustType { .. }, .. }),
                    "{:?}", err
                );
            }
        }
    }
}

/// A type that maps only some of its entity fields (an `#[entities]`
/// forgotten on one) is refused, not loaded with a meaningless handle.
#[test]
fn partly_mapped_entity_fields_are_refused() {
    #[derive(Component, MapEntities, Serialize, Deserialize)]
    struct Pair {
        #[entities]
        a: Entity,
        b: Entity,
    }
    let mut registry = TypeRegistry::new();
    registry.register::<Pair>().map_entities();
    let scene =
        Scene::from_ron_str("(entities: [(id: 1), (id: 2, components: {\"Pair\": (a: 1, b: 1)})])")
            .unwrap();
    let mut world = World::new();
    let err = scene.spawn_into(&mut world, &registry).unwrap_err();
    assert!(
        matches!(&err, SceneError::UnmappedEntities { component, .. } if component == "Pair"),
        "{err}"
    );
    assert!(world.is_empty());
}

/// The derive binds only the marked fields, under names that cannot clash
/// with the user's (a field called `mapper`), and handles tuple structs,
/// unit structs, enums and empty enums.
#[test]
fn map_entities_derive_shapes() {
    #[derive(MapEntities)]
    struct Named {
        #[entities]
        target: Entity,
        #[allow(dead_code)]
        mapper: u32,
    }
    #[derive(MapEntities)]
    struct Tuple(
        #[allow(dead_code)] u8,
        #[entities] Option<Entity>,
        #[entities] Vec<Entity>,
    );
    #[derive(MapEntities)]
    struct Unit;
    #[derive(MapEntities)]
    enum Order {
        Idle,
        Follow(#[entities] Entity),
        Guard {
            #[entities]
            who: Entity,
            #[allow(dead_code)]
            radius: f32,
        },
    }
    #[derive(MapEntities)]
    #[allow(dead_code)]
    enum Never {}

    struct To(Entity);
    impl EntityMapper for To {
        fn map(&mut self, _: Entity) -> Entity {
            self.0
        }
    }
    let mut world = World::new();
    let (a, b) = (world.spawn(()), world.spawn(()));
    let mut named = Named {
        target: a,
        mapper: 7,
    };
    named.map_entities(&mut To(b));
    assert_eq!((named.target, named.mapper), (b, 7));
    let mut tuple = Tuple(1, Some(a), vec![a, a]);
    tuple.map_entities(&mut To(b));
    assert_eq!((tuple.1, tuple.2), (Some(b), vec![b, b]));
    Unit.map_entities(&mut To(b));
    let mut orders = [
        Order::Idle,
        Order::Follow(a),
        Order::Guard {
            who: a,
            radius: 1.0,
        },
    ];
    for o in &mut orders {
        o.map_entities(&mut To(b));
    }
    assert!(matches!(orders[1], Order::Follow(e) if e == b));
    assert!(matches!(orders[2], Order::Guard { who, .. } if who == b));
}

// ----- values read by the formats' own deserializers ---------------------------------------

/// Reading a RON scene checks the syntax of every value (the values are
/// skipped, not decoded): a value with a syntax error is a syntax error of
/// the file, with the location of the offending token.
#[test]
fn a_malformed_value_is_a_syntax_error_when_reading() {
    let text = "(entities: [\n  (id: 1, components: {\"Position\": (x: 1.0, y: 2.0)}),\n  (id: 2, components: {\"Position\": (x: 1.0 y: 2.0)}),\n])";
    let err = Scene::from_ron_str(text).unwrap_err();
    let SceneError::Syntax {
        format: "RON",
        at: Where::Text(at),
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(*at, find(text, "y: 2.0)}),\n]"), "{err}");
}

/// Values with escapes, comments, hex numbers and explicit `Some` load as
/// plain ones do.
#[test]
fn values_outside_the_plain_subset_load_through_ron() {
    let registry = registry();
    let text = r#"(entities: [
        (id: 1, components: {"Position": (x: 1.0, /* c */ y: 2.0), "Health": (0x10)}),
        (id: 2, components: {"Label": (name: "a\"b"), "Health": (16)}),
    ])"#;
    let mut world = World::new();
    let spawned = Scene::from_ron_str(text)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    assert_eq!(
        world.get::<Position>(spawned[1]),
        Ok(&Position { x: 1.0, y: 2.0 })
    );
    assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(16)));
    assert_eq!(world.get::<Health>(spawned[2]), Ok(&Health(16)));
    assert_eq!(world.get::<Label>(spawned[2]).unwrap().name, "a\"b");
}

/// A binary scene of the first format version is refused by name.
#[test]
fn binary_format_version_one_is_refused_by_name() {
    let mut old = b"mosaic-scene\x01".to_vec();
    old.extend_from_slice(&[0, 0, 0, 0]);
    let err = load_error(&old, Format::Binary);
    assert_eq!(
        err.to_string(),
        "binary syntax error: binary scene format version 1 (this version of mosaic reads version 2)"
    );
}

/// `to_binary` measures the document before writing it, so its bytes are
/// one allocation of exactly their size: a world of a thousand entities
/// (whose ids alone outgrow a guess from the component bytes) and a scene
/// of listed entities read from text alike.
#[test]
fn binary_output_is_allocated_once_at_its_exact_size() {
    let registry = registry();
    let mut world = World::new();
    world.spawn_batch((0..1000u32).map(|i| {
        (
            Position {
                x: i as f32,
                y: 0.5,
            },
            Health(i),
        )
    }));
    let saved = Scene::from_world(&world, &registry).unwrap();
    let bytes = saved.to_binary().unwrap();
    assert_eq!(bytes.capacity(), bytes.len());

    let mut listed = Scene::from_ron_str(
        r#"(entities: [(id: 1, components: {"Health": (3)}), (id: 2, components: {"Label": (name: "x")})])"#,
    )
    .unwrap();
    listed.resolve(&registry).unwrap();
    let bytes = listed.to_binary().unwrap();
    assert_eq!(bytes.capacity(), bytes.len());
    assert_eq!(Scene::from_binary(&bytes).unwrap().len(), 2);
}

/// `from_binary_vec` keeps the bytes it is given instead of copying them:
/// the scene reads, loads, clones and writes back exactly as one from
/// `from_binary`, also after the scene it was cloned from is gone.
#[test]
fn a_scene_read_from_an_owned_vec_loads_like_one_read_from_a_slice() {
    let registry = registry();
    let world = sample_world();
    let bytes = Scene::from_world(&world, &registry)
        .unwrap()
        .to_binary()
        .unwrap();
    let borrowed = Scene::from_binary(&bytes).unwrap();
    let owned = Scene::from_binary_vec(bytes.clone()).unwrap();
    assert_eq!(owned.len(), borrowed.len());
    assert_eq!(owned.to_binary().unwrap(), bytes);

    let clone = owned.clone();
    drop(owned);
    let mut copy = World::new();
    let spawned = clone.spawn_into(&mut copy, &registry).unwrap();
    assert_equal_world(&world, &copy, &spawned);

    let mut garbage = bytes.clone();
    garbage.truncate(bytes.len() / 2);
    assert!(matches!(
        Scene::from_binary_vec(garbage),
        Err(SceneError::Syntax {
            format: "binary",
            ..
        })
    ));
}

/// Issue #18, item 9: a loaded world's queries and `World::iter` visit the
/// entities in the saved world's order (a replay or a late-joining client
/// must not diverge), in every format.
#[test]
fn a_loaded_world_iterates_in_the_saved_order() {
    let world = sample_world();
    let registry = registry();
    let scene = Scene::from_world(&world, &registry).unwrap();
    let original: Vec<u64> = world.iter().map(|e| e.id().scene_id()).collect();
    for format in FORMATS {
        let mut copy = World::new();
        let spawned = read(&write(&scene, format), format)
            .unwrap()
            .spawn_into(&mut copy, &registry)
            .unwrap();
        let ids: HashMap<Entity, u64> = spawned.iter().map(|(id, e)| (e, id)).collect();
        let loaded: Vec<u64> = copy.iter().map(|e| ids[&e.id()]).collect();
        assert_eq!(loaded, original, "{format:?}");
        // Into a world that never had an entity, the saved handles come
        // back exactly (recycled slots, generations above 1, included), so
        // saving the copy writes the same bytes.
        for (id, e) in spawned.iter() {
            assert_eq!(Some(e), Entity::from_bits(id));
        }
        let again = Scene::from_world(&copy, &registry).unwrap();
        assert_eq!(write(&again, format), write(&scene, format), "{format:?}");
    }
}

/// A text scene keeps its file, not its values: written back in its own
/// format before it is resolved, it is the file as it was (comments and
/// all); another format needs `resolve`, which decodes every value with
/// its type in one walk over the file.
#[test]
fn an_unresolved_text_scene_writes_back_as_its_file() {
    let text = "// a village\n(entities: [(id: 1, components: {\"Health\": (3), \"Position\": (x: 1.0, y: 2.0)})])";
    let scene = Scene::from_ron_str(text).unwrap();
    assert_eq!(scene.to_ron_string().unwrap(), text);
    assert!(matches!(
        scene.to_json_string(),
        Err(SceneError::Unresolved {
            from: "RON",
            to: "JSON",
            ..
        })
    ));
    let mut resolved = scene.clone();
    resolved.resolve(&registry()).unwrap();
    let json = resolved.to_json_string().unwrap();
    let mut world = World::new();
    let spawned = Scene::from_json_str(&json)
        .unwrap()
        .spawn_into(&mut world, &registry())
        .unwrap();
    assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(3)));
    assert_eq!(
        world.get::<Position>(spawned[1]),
        Ok(&Position { x: 1.0, y: 2.0 })
    );
    // A value that does not fit its type fails `resolve` with its field
    // and the position of the offending token.
    let bad = "(entities: [(id: 1, components: {\"Position\": (x: 1.0, y: \"up\")})])";
    let err = Scene::from_ron_str(bad)
        .unwrap()
        .resolve(&registry())
        .unwrap_err();
    assert!(
        matches!(&err, SceneError::WrongShape { component, path, at: Where::Text(at), .. }
            if component == "Position" && path == "y" && *at == find(bad, "\"up\"")),
        "{err:?}"
    );
}

// ----- reading with the registry at hand ----------------------------------------------------

/// What loading `text` (RON if `ron`, else JSON) gives when it is read
/// first and loaded after (`from_*_str`), and when it is read with the
/// registry (`from_*_str_with`): the loaded world and the scene written
/// back, or the error's message (which holds its location).
fn both_ways(text: &str, ron: bool) -> [Result<(Snapshot, String), String>; 2] {
    let registry = registry();
    [false, true].map(|with| {
        let scene = match (ron, with) {
            (true, false) => Scene::from_ron_str(text),
            (true, true) => Scene::from_ron_str_with(text, &registry),
            (false, false) => Scene::from_json_str(text),
            (false, true) => Scene::from_json_str_with(text, &registry),
        }
        .map_err(|e| format!("reading: {e}"))?;
        let mut world = World::new();
        scene
            .spawn_into(&mut world, &registry)
            .map_err(|e| format!("loading: {e}"))?;
        let written = if ron {
            scene.to_ron_string()
        } else {
            scene.to_json_string()
        };
        Ok((snapshot_all(&world), written.map_err(|e| e.to_string())?))
    })
}

/// A world of every registered kind of value (references too) and no
/// runtime-defined component: a file of it is read in one pass.
fn typed_world() -> World {
    let mut world = World::new();
    let a = world.spawn((Position { x: 1.5, y: -2.25 }, Health(10), Mood::Angry(3)));
    let b = world.spawn((
        Label {
            name: "b \"quoted\"".into(),
        },
        Frozen,
    ));
    let c = world.spawn(());
    world.spawn((Health(7), Follow(Some(a)), Mood::Calm));
    world
        .insert(
            b,
            Links {
                target: a,
                parent: Some(c),
                children: vec![a, c],
                weight: 0.5,
            },
        )
        .unwrap();
    world.insert_resource(Gravity(-9.81));
    world.insert_resource(Camera {
        follows: Some(b),
        zoom: 2.0,
    });
    world
}

/// Reading with the registry loads the world reading without it loads,
/// and writes back the file it read, in both text formats; a file it
/// cannot read in one pass (runtime-defined components) loads all the
/// same.
#[test]
fn reading_with_the_registry_loads_the_same_world() {
    let registry = registry();
    let prefabs = r#"(
        prefabs: {
            "Base": (components: {"Health": (5), "Position": (x: 1.0, y: 2.0)}),
            "Tree": (extends: "Base", components: {"Follow": (Some(2))}),
        },
        resources: {"Gravity": (1.5)},
        entities: [
            (id: 1, prefab: "Tree", components: {"Health": (9)}),
            (id: 2, prefab: "Base"),
            (id: 3, components: {"Links": (target: 1, parent: None, children: [2, 1], weight: 0.0)}),
        ],
    )"#;
    let typed = Scene::from_world(&typed_world(), &registry).unwrap();
    let sample = Scene::from_world(&sample_world(), &registry).unwrap();
    let mut files = vec![
        (prefabs.to_owned(), true),
        (typed.to_ron_string().unwrap(), true),
        (typed.to_json_string().unwrap(), false),
        (sample.to_ron_string().unwrap(), true),
    ];
    // (Miri: the RON file of the sample world covers the same path.)
    if !cfg!(miri) {
        files.push((sample.to_json_string().unwrap(), false));
    }
    for (text, ron) in &files {
        let [without, with] = both_ways(text, *ron);
        let (world, written) = without.unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(with, Ok((world, written.clone())), "{text}");
        assert_eq!(&written, text);
    }
    // The typed files were read in one pass: their values are decoded
    // already, so the scene writes as binary too (a scene whose values
    // are still in its file must be resolved first).
    let ron = typed.to_ron_string().unwrap();
    assert!(Scene::from_ron_str(&ron).unwrap().to_binary().is_err());
    let bytes = Scene::from_ron_str_with(&ron, &registry)
        .unwrap()
        .to_binary()
        .unwrap();
    let mut world = World::new();
    let spawned = Scene::from_binary(&bytes)
        .unwrap()
        .spawn_into(&mut world, &registry)
        .unwrap();
    assert_equal_world(&typed_world(), &world, &spawned);

    // A resolve that fails part way (a registry without `Mood`) leaves
    // some values resolved: the scene still writes back as its file.
    let mut partial = TypeRegistry::new();
    partial.register::<Position>();
    partial.register::<Health>();
    let mut scene = Scene::from_ron_str_with(&ron, &registry).unwrap();
    assert!(scene.resolve(&partial).is_err());
    assert_eq!(scene.to_ron_string().unwrap(), ron);
}

/// Reading with the registry fails on the files reading without it
/// fails on, with the same error at the same place.
#[test]
fn reading_with_the_registry_fails_as_reading_without_it() {
    let ron = [
        "(entities: [(id: 1,)",
        "(entities: [(id: 1, id: 2)])",
        "(entities: [(components: {})])",
        "(entities: [(id: 1, colour: 3)])",
        "(entities: [], entities: [])",
        "(entities: [(id: 1, components: {}, components: {\"Health\": (1)})])",
        "(entities: [(id: 1, components: {\"Healt\": (3)})])",
        "(entities: [(id: 1, components: {\"Health\": \"x\"})])",
        "(entities: [(id: 1, components: {\"Health\": (1), \"Health\": (2)})])",
        "(entities: [(id: 1), (id: 1)])",
        "(entities: [(id: 1, components: {\"Follow\": (Some(9))})])",
        "(entities: [(id: 1, prefab: \"Nope\")])",
        "(prefabs: {\"A\": (extends: \"B\"), \"B\": (extends: \"A\")}, entities: [(id: 1, prefab: \"A\")])",
        "(prefabs: {\"A\": (), \"A\": ()})",
        "(prefabs: {\"A\": (extends: \"A\", extends: \"A\")})",
        "(resources: {\"Gravity\": \"down\"})",
        "(resources: {\"Gravity\": (1.0)}, resources: {})",
        "(entities: [(id: 18446744073709551615)])",
        "(entities: [(id: -1)])",
        "(schemas: {\"Mana\": {\"current\": \"Nope\"}})",
        // Two mistakes: the first one met is reported, whichever way.
        "(entities: [(id: 1, components: {\"Follow\": (Some(9))}), (id: 2, components: {\"Health\": (1), \"Health\": (2)})])",
        "(prefabs: {\"P\": (components: {\"Follow\": (None)})}, entities: [(id: 1, prefab: \"P\", components: {\"Links\": (target: 8, parent: None, children: [], weight: 0.0), \"Follow\": (Some(9))})])",
    ];
    let json = [
        r#"{"entities": [{"id": 1}"#,
        r#"{"entities": [{"id": 1, "id": 2}]}"#,
        r#"{"entities": [{"components": {}}]}"#,
        r#"{"entities": [{"id": 1, "components": {"Health": "x"}}]}"#,
        r#"{"entities": [{"id": 1, "components": {"Follow": 9}}]}"#,
        r#"{"resources": {"Gravity": []}}"#,
    ];
    let deep = format!("{{\"entities\": {}{}}}", "[".repeat(200), "]".repeat(200));
    let files = ron
        .iter()
        .map(|t| (t.to_string(), true))
        .chain(json.iter().map(|t| (t.to_string(), false)))
        .chain([(deep, false)]);
    for (text, is_ron) in files {
        let [without, with] = both_ways(&text, is_ron);
        assert!(without.is_err(), "{text} loads");
        assert_eq!(with, without, "{text}");
    }
}
