//! How long the hostile shapes of issue #18 take to load (item 4: each
//! under 100 ms, near-linear in the file's size):
//!
//! - `prefab_chain/N`: a chain of N prefabs each extending the last, and one
//!   entity of the last, read from RON and loaded (N = 1,000 and 2,000: the
//!   ratio shows the growth; the quadratic and cubic versions took seconds).
//! - `wide_entity/unknown/N`: one entity with N components of unknown names,
//!   read and refused (`UnknownComponent`), N = 25,000 and 50,000.
//! - `wide_entity/duplicate/N`: one entity naming the same component N
//!   times, read and refused (`Duplicate`).
//! - `distinct_chain/N`: a chain of N prefabs each adding a runtime-defined
//!   component of its own (the last has N), one entity of the last, loaded
//!   (N = 1,000 and 2,000; copying each prefab's list down the chain was
//!   quadratic).
//! - `wide_schema/N`: a runtime schema of N fields and one value of it,
//!   loaded (N = 10,000 and 20,000; a field lookup by scan was quadratic).
//! - `long_name/N`: an unknown component name of N bytes, refused
//!   (`UnknownComponent`; N = 500,000 and 1,000,000: the "did you mean"
//!   search once compared it with every registered name in full).
//!
//! - `deep_chain/{one,alternating}_{ron,binary}/N`: a `ChildOf` chain N
//!   deep (N = 100,000), saved from a world and loaded, its links all in
//!   one archetype or alternating between two (issue #39 item 14: every
//!   relate of the alternating load walked the new parent's whole ancestor
//!   chain, 29 s at 100,000; now the cycle check walks up and down in
//!   turn, and the alternating load is within 2x of the one-archetype one).
//!
//! The tests in `tests/hostile.rs` check the results; speed is proved here.
//! `HOSTILE_ONE_PASS=chain` loads the 2,000-deep chain 10 times and exits,
//! for callgrind's instruction counts.
//!
//! ```text
//! cargo bench -p mosaic-scene --bench hostile
//! ```

// `criterion_group!` makes an undocumented public function.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mosaic::prelude::*;
use mosaic_scene::{Scene, SceneError, TypeRegistry};
use serde::{Deserialize, Serialize};
use std::hint::black_box;

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Health(u32);

#[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Armor(u32);

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Health>();
    registry.register::<Armor>();
    registry.register_relation::<ChildOf>();
    registry
}

/// A `ChildOf` chain `n` deep, saved as RON and as binary: every link a
/// `Health`, and every other one an `Armor` too when `alternating` (the
/// loader then relates one archetype's rows, then the other's).
fn deep_chain(n: usize, alternating: bool, registry: &TypeRegistry) -> (String, Vec<u8>) {
    let mut world = World::new();
    let mut last = world.spawn(Health(0));
    for i in 1..n {
        last = match alternating && i % 2 == 1 {
            true => world.spawn_child(last, (Health(i as u32), Armor(i as u32))),
            false => world.spawn_child(last, Health(i as u32)),
        }
        .unwrap();
    }
    let scene = Scene::from_world(&world, registry).unwrap();
    (scene.to_ron_string().unwrap(), scene.to_binary().unwrap())
}

/// Loading a deep chain, one archetype or two alternating (item 14).
fn deep_chains(c: &mut Criterion, registry: &TypeRegistry) {
    let mut group = c.benchmark_group("deep_chain");
    group.sample_size(10);
    let n = 100_000;
    for (name, alternating) in [("one", false), ("alternating", true)] {
        let (ron, binary) = deep_chain(n, alternating, registry);
        let check = |world: &World| assert_eq!(world.len(), n);
        group.bench_with_input(
            BenchmarkId::new(format!("{name}_ron"), n),
            &ron,
            |b, ron| {
                b.iter(|| {
                    let mut world = World::new();
                    Scene::from_ron_str(ron)
                        .and_then(|s| s.spawn_into(&mut world, registry))
                        .unwrap();
                    check(&world);
                    black_box(world)
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new(format!("{name}_binary"), n),
            &binary,
            |b, binary| {
                b.iter(|| {
                    let mut world = World::new();
                    Scene::from_binary(binary)
                        .and_then(|s| s.spawn_into(&mut world, registry))
                        .unwrap();
                    check(&world);
                    black_box(world)
                })
            },
        );
    }
    group.finish();
}

/// A RON scene: `n` prefabs, each extending the one before, and one entity
/// of the last.
fn prefab_chain(n: usize) -> String {
    let mut text = String::from("(prefabs: {\"P0\": (components: {\"Health\": (0)}),\n");
    for i in 1..n {
        text += &format!(
            "\"P{i}\": (extends: \"P{}\", components: {{\"Health\": ({i})}}),\n",
            i - 1
        );
    }
    text += &format!("}}, entities: [(id: 1, prefab: \"P{}\")])", n - 1);
    text
}

/// A RON scene of one entity whose components are `component(i)` for
/// `i < n`.
fn wide_entity(n: usize, component: impl Fn(usize) -> String) -> String {
    let mut text = String::from("(entities: [(id: 1, components: {\n");
    for i in 0..n {
        text += &component(i);
    }
    text += "})])";
    text
}

/// A RON scene: `n` runtime-defined components `C{i}`, a chain of `n`
/// prefabs where prefab `i` extends `i - 1` and adds `C{i}`, and one entity
/// of the last.
fn distinct_chain(n: usize) -> String {
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
    text
}

/// A RON scene: a runtime schema `Wide` of `n` int fields, and one entity
/// with a value of it.
fn wide_schema(n: usize) -> String {
    let mut text = String::from("(schemas: {\"Wide\": {");
    for i in 0..n {
        text += &format!("\"f{i}\": \"int\",");
    }
    text += "}}, entities: [(id: 1, components: {\"Wide\": {";
    for i in 0..n {
        text += &format!("\"f{i}\": {i},");
    }
    text += "}})])";
    text
}

/// Loads `text` into a new world: the spawned map, or the error.
fn load(text: &str, registry: &TypeRegistry) -> Result<mosaic_scene::SceneSpawn, SceneError> {
    let mut world = World::new();
    Scene::from_ron_str(text).and_then(|s| s.spawn_into(&mut world, registry))
}

/// The shapes found by the adversarial tests (`tests/adversarial.rs`).
fn found_later(c: &mut Criterion, registry: &TypeRegistry) {
    let mut group = c.benchmark_group("distinct_chain");
    group.sample_size(10);
    for n in [1_000, 2_000] {
        let text = distinct_chain(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter(|| black_box(load(text, registry).unwrap()))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("wide_schema");
    group.sample_size(10);
    for n in [10_000, 20_000] {
        let text = wide_schema(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter(|| black_box(load(text, registry).unwrap()))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("long_name");
    group.sample_size(10);
    for n in [500_000, 1_000_000] {
        let text = wide_entity(1, |_| format!("\"{}\": (),\n", "x".repeat(n)));
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter(|| {
                let err = load(text, registry).unwrap_err();
                assert!(matches!(err, SceneError::UnknownComponent { .. }));
                black_box(err)
            })
        });
    }
    group.finish();
}

fn hostile(c: &mut Criterion) {
    let registry = registry();
    if std::env::var("HOSTILE_ONE_PASS").is_ok_and(|v| v == "chain") {
        let text = prefab_chain(2_000);
        for _ in 0..10 {
            let mut world = World::new();
            let scene = Scene::from_ron_str(&text).unwrap();
            black_box(scene.spawn_into(&mut world, &registry).unwrap());
        }
        std::process::exit(0);
    }
    let mut group = c.benchmark_group("prefab_chain");
    group.sample_size(20);
    for n in [1_000, 2_000] {
        let text = prefab_chain(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
            b.iter(|| {
                let mut world = World::new();
                let spawned = Scene::from_ron_str(text)
                    .and_then(|s| s.spawn_into(&mut world, &registry))
                    .unwrap();
                assert_eq!(world.get::<Health>(spawned[1]), Ok(&Health(n as u32 - 1)));
                black_box(world)
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("wide_entity");
    group.sample_size(20);
    for n in [25_000, 50_000] {
        let unknown = wide_entity(n, |i| format!("\"Unknown{i}\": (),\n"));
        group.bench_with_input(BenchmarkId::new("unknown", n), &unknown, |b, text| {
            b.iter(|| {
                let mut world = World::new();
                let err = Scene::from_ron_str(text)
                    .and_then(|s| s.spawn_into(&mut world, &registry))
                    .unwrap_err();
                assert!(matches!(err, SceneError::UnknownComponent { .. }));
                black_box(err)
            })
        });
        let duplicate = wide_entity(n, |_| "\"Health\": (1),\n".to_owned());
        group.bench_with_input(BenchmarkId::new("duplicate", n), &duplicate, |b, text| {
            b.iter(|| {
                let mut world = World::new();
                let err = Scene::from_ron_str(text)
                    .and_then(|s| s.spawn_into(&mut world, &registry))
                    .unwrap_err();
                assert!(matches!(err, SceneError::Duplicate { .. }));
                black_box(err)
            })
        });
    }
    group.finish();
    found_later(c, &registry);
    deep_chains(c, &registry);
}

criterion_group!(benches, hostile);
criterion_main!(benches);
