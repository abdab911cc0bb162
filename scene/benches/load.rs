//! How long loading a scene takes, per format: `load/{ron,json,binary}`
//! reads a saved scene of 1,000 entities (the peer suite's
//! `serialize_*` world: a 16-float transform and three 3-float vectors
//! each) and spawns it into a new world. Saving is left out: this is the
//! loader's cost alone. `load/ron_prefab` reads a RON scene of 1,000
//! entities of one prefab (its transform and position) with a velocity of
//! their own.
//!
//! The `_with` variants read the file with the registry at hand
//! (`Scene::from_ron_str_with`, `from_json_str_with`): one parse, the
//! values decoded as the file is read.
//!
//! `LOAD_ONE_PASS=ron|ron_with|json|json_with|binary|ron_prefab|ron_prefab_with`
//! runs 100 loads of that format and exits,
//! for callgrind's instruction counts:
//!
//! ```text
//! cargo bench -p mosaic-scene --bench load --no-run
//! LOAD_ONE_PASS=ron valgrind --tool=callgrind target/release/deps/load-<hash>
//! ```

// `criterion_group!` makes an undocumented public function.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use mosaic::prelude::*;
use mosaic_scene::{Scene, TypeRegistry};
use serde::{Deserialize, Serialize};
use std::hint::black_box;

#[derive(Component, Default, Clone, Copy, Serialize, Deserialize)]
struct Transform([f32; 16]);

#[derive(Component, Default, Clone, Copy, Serialize, Deserialize)]
struct Position {
    x: f32,
    y: f32,
    z: f32,
}

#[derive(Component, Default, Clone, Copy, Serialize, Deserialize)]
struct Rotation {
    x: f32,
    y: f32,
    z: f32,
}

#[derive(Component, Default, Clone, Copy, Serialize, Deserialize)]
struct Velocity {
    x: f32,
    y: f32,
    z: f32,
}

const ENTITIES: usize = 1_000;

/// The saved world's files, and the registry to load them with.
struct Files {
    registry: TypeRegistry,
    ron: String,
    json: String,
    binary: Vec<u8>,
    ron_prefab: String,
}

fn files() -> Files {
    let mut registry = TypeRegistry::new();
    registry.register::<Transform>();
    registry.register::<Position>();
    registry.register::<Rotation>();
    registry.register::<Velocity>();
    let mut world = World::new();
    world.spawn_batch((0..ENTITIES).map(|i| {
        let f = i as f32 * 0.37;
        (
            Transform(std::array::from_fn(|k| f + k as f32)),
            Position {
                x: f,
                y: -f,
                z: 1.5,
            },
            Rotation {
                x: 0.0,
                y: f * 2.0,
                z: 0.25,
            },
            Velocity {
                x: 1.0,
                y: f,
                z: -3.75,
            },
        )
    }));
    let scene = Scene::from_world(&world, &registry).unwrap();
    let mut ron_prefab = String::from(
        "(prefabs: {\"Thing\": (components: {\"Transform\": ((1.0, 2.0, 3.0, 4.0, 5.0, \
         6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0)), \
         \"Position\": (x: 1.5, y: -2.5, z: 0.25)})},\nentities: [\n",
    );
    for i in 0..ENTITIES {
        ron_prefab += &format!(
            "(id: {}, prefab: \"Thing\", components: {{\"Velocity\": (x: {i}.5, y: 1.0, z: -3.75)}}),\n",
            i + 1
        );
    }
    ron_prefab += "])";
    Files {
        ron_prefab,
        ron: scene.to_ron_string().unwrap(),
        json: scene.to_json_string().unwrap(),
        binary: scene.to_binary().unwrap(),
        registry,
    }
}

fn load(files: &Files, format: &str) -> World {
    let registry = &files.registry;
    let scene = match format {
        "ron" => Scene::from_ron_str(&files.ron),
        "ron_with" => Scene::from_ron_str_with(&files.ron, registry),
        "json" => Scene::from_json_str(&files.json),
        "json_with" => Scene::from_json_str_with(&files.json, registry),
        "ron_prefab" => Scene::from_ron_str(&files.ron_prefab),
        "ron_prefab_with" => Scene::from_ron_str_with(&files.ron_prefab, registry),
        _ => Scene::from_binary(&files.binary),
    }
    .unwrap();
    let mut world = World::new();
    scene.spawn_into(&mut world, &files.registry).unwrap();
    assert_eq!(world.len(), ENTITIES);
    world
}

fn loading(c: &mut Criterion) {
    let files = files();
    if let Ok(format) = std::env::var("LOAD_ONE_PASS") {
        for _ in 0..100 {
            black_box(load(&files, &format));
        }
        std::process::exit(0);
    }
    let mut group = c.benchmark_group("load");
    let formats = [
        "ron",
        "ron_with",
        "json",
        "json_with",
        "binary",
        "ron_prefab",
        "ron_prefab_with",
    ];
    for format in formats {
        group.bench_function(format, |b| b.iter(|| black_box(load(&files, format))));
    }
    group.finish();
}

criterion_group!(benches, loading);
criterion_main!(benches);
