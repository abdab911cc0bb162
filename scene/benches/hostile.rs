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

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Health>();
    registry
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
}

criterion_group!(benches, hostile);
criterion_main!(benches);
