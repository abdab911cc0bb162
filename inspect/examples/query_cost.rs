//! The game thread's cost of one unbounded `world.query` (every entity,
//! every component), for `valgrind --tool=callgrind`:
//!
//! ```sh
//! cargo build --release -p mosaic-inspect --example query_cost
//! valgrind --tool=callgrind --toggle-collect='*answer_json*' \
//!     target/release/examples/query_cost 20000
//! ```
//!
//! `Inspector::answer_json` runs the whole call on the calling thread
//! (the game thread's slices, then the response text).

use mosaic::prelude::*;
use mosaic::scene::TypeRegistry;
use mosaic_inspect::Inspector;
use serde::{Deserialize, Serialize};

#[derive(Component, Serialize, Deserialize, Clone, Copy)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Serialize, Deserialize, Clone, Copy)]
struct Velocity {
    x: f32,
    y: f32,
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Velocity>();
    let mut world = World::new();
    world.spawn_batch((0..n).map(|i| {
        (
            Position {
                x: i as f32,
                y: 0.5,
            },
            Velocity { x: 1.0, y: -0.25 },
        )
    }));
    let mut inspector = Inspector::builder()
        .registry(registry)
        .serve("127.0.0.1:0")
        .expect("loopback");
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"world.query","params":{"data":{"option":"all"},"limit":1000000000}}"#;
    let answer = inspector.answer_json(&mut world, None, request);
    println!("{} bytes", answer.len());
}
