//! The `scene_load` fuzz target's harness (fuzz/src/scene_load.rs), run on
//! its committed corpus, on a binary scene written from it, and on
//! deterministic mutations of each: the bounded subset of scene fuzzing that
//! `cargo test` (and CI) runs. No input may panic, and a failed load must
//! leave the world unchanged (the harness checks both).
//!
//! Long runs: `cd fuzz && cargo +nightly fuzz run scene_load`.

#[path = "../fuzz/src/scene_load.rs"]
mod scene_load;

use std::path::PathBuf;

use mosaic::prelude::*;
use mosaic::scene::Scene;

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/scene_load");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fuzz/corpus/scene_load exists")
        .map(|e| e.expect("readable corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the committed scene corpus is empty");
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("readable corpus file"))
        })
        .collect()
}

/// The binary form of a corpus scene, so binary mutations start from a
/// valid file.
fn binary_seed() -> Vec<u8> {
    let registry = scene_load::registry();
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/scene_load/small.ron"),
    )
    .expect("small.ron is in the corpus");
    let mut world = World::new();
    Scene::from_ron_str(&text)
        .and_then(|s| s.spawn_into(&mut world, &registry).map(|_| ()))
        .expect("the seed scene loads");
    Scene::from_world(&world, &registry)
        .and_then(|s| s.to_binary())
        .expect("the seed world saves")
}

#[test]
fn corpus_loads_without_panicking() {
    for (name, data) in corpus() {
        let result = std::panic::catch_unwind(|| scene_load::run_bytes(&data));
        assert!(result.is_ok(), "corpus input {name} panicked");
    }
    scene_load::run_bytes(&binary_seed());
}

/// Deterministic mutations (byte flips, deletions, truncations, splices of
/// syntax characters) of every seed.
#[test]
fn mutated_seeds_never_panic() {
    let mut seeds: Vec<Vec<u8>> = corpus().into_iter().map(|(_, d)| d).collect();
    seeds.push(binary_seed());
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let rounds = if cfg!(miri) { 2 } else { 150 };
    const SYNTAX: &[u8] = b"(){}[],:\"0-1.e";
    for seed in &seeds {
        for _ in 0..rounds {
            let mut data = seed.clone();
            for _ in 0..1 + next() % 4 {
                if data.is_empty() {
                    break;
                }
                let at = (next() % data.len() as u64) as usize;
                match next() % 4 {
                    0 => data[at] ^= 1 << (next() % 8),
                    1 => {
                        data.remove(at);
                    }
                    2 => data.truncate(at),
                    _ => data[at] = SYNTAX[(next() % SYNTAX.len() as u64) as usize],
                }
            }
            let result = std::panic::catch_unwind(|| scene_load::run_bytes(&data));
            assert!(
                result.is_ok(),
                "a mutated seed panicked: {:?}",
                String::from_utf8_lossy(&data)
            );
        }
    }
}

/// Writes `small.bin` (the binary form of `small.ron`) into the corpus, as a
/// seed for the fuzzer: `cargo test --test scene_fuzz_regress -- --ignored`.
#[test]
#[ignore = "writes a corpus file; run by hand after changing the binary format"]
fn write_binary_seed() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/scene_load/small.bin");
    std::fs::write(path, binary_seed()).expect("corpus directory is writable");
}
