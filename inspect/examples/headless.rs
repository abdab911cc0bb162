//! The inspector without a browser: a game serves its world, a client asks
//! over HTTP, and the same calls are answered in process.
//!
//! Shows: `Inspector::builder().registry(..).serve(..)` on a free loopback
//! port, `run_frame` (the schedule plus the inspector's requests between
//! frames), a JSON-RPC request over a plain `TcpStream` from another
//! thread (what the web page and BRP clients send), and `answer_json` for
//! editing a component and switching a system off in process.
//!
//! ```text
//! cargo run -p mosaic-inspect --example headless [FRAMES]    # default 5
//! cargo run --release -- --inspect    # the showcase with the web page, until stopped
//! ```

use mosaic::prelude::*;
use mosaic::scene::TypeRegistry;
use mosaic_inspect::Inspector;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[derive(Component, serde::Serialize, serde::Deserialize, Debug)]
struct Position {
    x: f32,
}

fn drift(mut q: Query<&mut Position>) {
    for p in &mut q {
        p.x += 1.0;
    }
}

/// One JSON-RPC call over HTTP, as any client would make it.
fn post(addr: String, body: &'static str) -> String {
    let mut stream = TcpStream::connect(&addr).expect("connect");
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read");
    reply
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

fn main() {
    let frames: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    let mut world = World::new();
    let e = world.spawn((Position { x: 0.0 }, Name::new("probe")));
    let mut schedule = Schedule::new();
    schedule.add_system("drift", drift);

    let mut inspector = Inspector::builder()
        .registry(registry)
        .serve("127.0.0.1:0")
        .expect("serve");
    println!("serving at {}", inspector.url());
    for _ in 0..frames {
        inspector.run_frame(&mut world, &mut schedule, Duration::from_millis(16));
    }

    // A client on another thread; the game answers between its frames.
    let addr = inspector
        .url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let client = std::thread::spawn(move || {
        post(
            addr,
            r#"{"jsonrpc":"2.0","id":1,"method":"world.overview"}"#,
        )
    });
    while !client.is_finished() {
        inspector.run_frame(&mut world, &mut schedule, Duration::from_millis(16));
    }
    let overview = client.join().expect("client thread");
    println!(
        "over HTTP, world.overview: {}",
        &overview[..overview.len().min(120)]
    );
    assert!(overview.contains(r#""entities":1"#), "{overview}");

    // The same protocol in process: edit a value, switch a system off.
    let set = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"world.mutate_components","params":{{"entity":{},"component":"Position","path":".x","value":-100.0}}}}"#,
        e.to_bits()
    );
    println!(
        "mutate: {}",
        inspector.answer_json(&mut world, Some(&mut schedule), &set)
    );
    let off = r#"{"jsonrpc":"2.0","id":3,"method":"schedule.set_enabled","params":{"system":"drift","enabled":false}}"#;
    println!(
        "disable: {}",
        inspector.answer_json(&mut world, Some(&mut schedule), off)
    );
    for _ in 0..frames {
        inspector.run_frame(&mut world, &mut schedule, Duration::from_millis(16));
    }
    println!(
        "the probe stays where the request put it: {:?}",
        world.get::<Position>(e).unwrap()
    );
    assert_eq!(world.get::<Position>(e).unwrap().x, -100.0);
}
