//! Fuzz target: arbitrary bytes through every scene loader (RON, JSON,
//! binary), then load, prefab spawn, save and reload (see
//! `src/scene_load.rs`).
//!
//! ```text
//! cd fuzz && cargo +nightly fuzz run scene_load
//! ```

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../src/scene_load.rs"]
mod scene_load;

fuzz_target!(|data: &[u8]| {
    scene_load::run_bytes(data);
});
