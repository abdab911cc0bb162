//! Fuzz target: random sequences of world operations, checked against a
//! plain model after every step (see `src/world_ops.rs`).
//!
//! ```text
//! cargo install cargo-fuzz
//! cd fuzz && cargo +nightly fuzz run world_ops
//! ```

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../src/world_ops.rs"]
mod world_ops;

fuzz_target!(|data: &[u8]| {
    world_ops::run_bytes(data);
});
