//! The `scene_load` fuzz target's harness (fuzz/src/scene_load.rs), run on
//! its committed corpus, on a binary scene written from it, and on
//! deterministic mutations of each: the bounded subset of scene fuzzing that
//! `cargo test` (and CI) runs. No input may panic, and a failed load must
//! leave the world unchanged (the harness checks both).
//!
//! Long runs: `cd fuzz && cargo +nightly fuzz run scene_load`.

#[path = "../../fuzz/src/scene_load.rs"]
mod scene_load;

use std::path::PathBuf;

use mosaic::prelude::*;
use mosaic_scene::Scene;

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/scene_load");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fuzz/corpus/scene_load exists")
        .map(|e| e.expect("readable corpus entry").path())
        .filter(|p| p.is_file())
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
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/scene_load/small.ron"),
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
#[cfg_attr(miri, ignore = "reads the corpus: Miri runs with isolation")]
fn corpus_loads_without_panicking() {
    // Every file is tried and every failure named (.ci/fuzz looks for the
    // name of a crash input it has just added).
    let inputs = corpus();
    let failed: Vec<&str> = inputs
        .iter()
        .filter(|(_, data)| std::panic::catch_unwind(|| scene_load::run_bytes(data)).is_err())
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} corpus inputs panicked: {failed:?}",
        failed.len(),
        inputs.len()
    );
    scene_load::run_bytes(&binary_seed());
}

/// Deterministic mutations (byte flips, deletions, truncations, splices of
/// syntax characters) of every seed.
#[test]
#[cfg_attr(miri, ignore = "reads the corpus: Miri runs with isolation")]
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
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/scene_load/small.bin");
    std::fs::write(path, binary_seed()).expect("corpus directory is writable");
}

/// A binary scene holding one `Chain` nested `depth` levels deep (built and
/// saved on a thread with a large stack, since saving recurses too).
fn deep_chain_scene(depth: usize) -> Vec<u8> {
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            let mut chain = scene_load::Chain { v: 0, next: None };
            for v in 1..depth {
                chain = scene_load::Chain {
                    v: v as u8,
                    next: Some(Box::new(chain)),
                };
            }
            let mut world = World::new();
            world.spawn(chain);
            Scene::from_world(&world, &scene_load::registry())
                .and_then(|s| s.to_binary())
                .expect("a deep chain saves on a large stack")
        })
        .expect("thread spawns")
        .join()
        .expect("saving a deep chain")
}

/// A 100 KB binary scene nesting a recursive component 50,000 levels deep
/// overflowed the stack (postcard has no depth limit); now it is refused
/// with an error on an ordinary stack, and ordinary nesting still loads.
#[test]
#[cfg_attr(miri, ignore)] // 50,000 levels of serde recursion: far too slow
fn deep_binary_scene_does_not_overflow_the_stack() {
    let data = deep_chain_scene(50_000);
    assert!(data.len() > 100_000, "{} bytes", data.len());
    // On the test thread's stack (2 MiB by default): refused with a reason.
    let err = Scene::from_binary(&data)
        .and_then(|scene| scene.spawn_into(&mut World::new(), &scene_load::registry()))
        .expect_err("50,000 levels are refused");
    assert!(err.to_string().contains("nested too deep"), "{err}");
    // Everything the fuzz harness does with it, too.
    scene_load::run_bytes(&data);
    // Real nesting still loads and saves back.
    let data = deep_chain_scene(60);
    let mut world = World::new();
    let spawned = Scene::from_binary(&data)
        .and_then(|scene| scene.spawn_into(&mut world, &scene_load::registry()))
        .expect("60 levels load");
    let e = spawned.entities().next().unwrap();
    let mut depth = 0;
    let mut link = Some(world.get::<scene_load::Chain>(e).unwrap());
    while let Some(chain) = link {
        depth += 1;
        link = chain.next.as_deref();
    }
    assert_eq!(depth, 60);
    scene_load::run_bytes(&data);
}

/// The recursive and nested seed loads (so the fuzzer starts from values
/// that reach those decoders), and its binary form round-trips.
#[test]
#[cfg_attr(miri, ignore)] // reads files: Miri runs with isolation
fn recursive_seed_loads() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/scene_load/recursive.ron");
    let text = std::fs::read_to_string(path).expect("recursive.ron is in the corpus");
    let registry = scene_load::registry();
    let mut world = World::new();
    let spawned = Scene::from_ron_str(&text)
        .and_then(|s| s.spawn_into(&mut world, &registry))
        .expect("the recursive seed loads");
    assert_eq!(spawned.len(), 2);
    let tree = world.query::<&scene_load::Tree>().iter(&world).count();
    assert_eq!(tree, 1);
    let bytes = Scene::from_world(&world, &registry)
        .and_then(|s| s.to_binary())
        .expect("saves");
    let mut copy = World::new();
    Scene::from_binary(&bytes)
        .and_then(|s| s.spawn_into(&mut copy, &registry))
        .expect("the binary form loads");
    assert_eq!(copy.len(), 2);
    scene_load::run_bytes(&bytes);
}
