//! What the inspector costs: a frame with an idle inspector (no client),
//! and one page of entities from a 100,000-entity world, answered in
//! process and over HTTP.

#![allow(missing_docs)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
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

fn small_game() -> (World, Schedule) {
    let mut world = World::new();
    world.spawn_batch((0..100).map(|i| {
        (
            Position {
                x: i as f32,
                y: 0.0,
            },
            Velocity { x: 1.0, y: 0.5 },
        )
    }));
    let mut schedule = Schedule::new();
    schedule.set_executor(ExecutorKind::SingleThreaded);
    schedule.add_system("movement", |mut q: Query<(&mut Position, &Velocity)>| {
        for (p, v) in q.iter_mut() {
            p.x += v.x;
            p.y += v.y;
        }
    });
    schedule.add_system("idle", || {});
    schedule.build(&mut world).unwrap();
    (world, schedule)
}

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Velocity>();
    registry
}

fn frame_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    let (mut world, mut schedule) = small_game();
    group.bench_function("without_inspector", |b| b.iter(|| schedule.run(&mut world)));
    let (mut world, mut schedule) = small_game();
    let mut inspector = Inspector::builder()
        .registry(registry())
        .serve("127.0.0.1:0")
        .unwrap();
    group.bench_function("with_idle_inspector", |b| {
        b.iter(|| {
            schedule.run(&mut world);
            inspector.update(&mut world, &mut schedule);
        })
    });
    group.bench_function("idle_update_alone", |b| {
        b.iter(|| inspector.update(black_box(&mut world), &mut schedule))
    });
    group.finish();
}

const PAGE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"world.query","params":{"data":{"components":["Position","Velocity"]},"offset":50000,"limit":50}}"#;

fn big_world() -> World {
    let mut world = World::new();
    world.spawn_batch((0..100_000).map(|i| {
        (
            Position {
                x: i as f32,
                y: 0.0,
            },
            Velocity { x: 1.0, y: 0.5 },
        )
    }));
    world
}

fn post(addr: SocketAddr, body: &str) -> usize {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    answer.len()
}

fn page_of_entities(c: &mut Criterion) {
    let mut group = c.benchmark_group("query_page_100k");
    let mut world = big_world();
    let mut inspector = Inspector::builder()
        .registry(registry())
        .serve("127.0.0.1:0")
        .unwrap();
    let answer = inspector.answer_json(&mut world, None, PAGE);
    assert!(answer.contains(r#""x":50000.0"#), "{answer}");
    group.bench_function("in_process", |b| {
        b.iter(|| inspector.answer_json(&mut world, None, black_box(PAGE)))
    });
    drop(inspector);

    // Over HTTP, with the game thread answering between 1 ms frames.
    let addr_inspector = Inspector::builder()
        .registry(registry())
        .serve("127.0.0.1:0")
        .unwrap();
    let addr = addr_inspector.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let game = std::thread::spawn(move || {
        let mut inspector = addr_inspector;
        let mut world = big_world();
        while !stop2.load(Ordering::Relaxed) {
            inspector.update_world(&mut world);
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    group.bench_function("over_http", |b| b.iter(|| post(addr, PAGE)));
    stop.store(true, Ordering::Relaxed);
    game.join().unwrap();
    group.finish();
}

criterion_group!(benches, frame_cost, page_of_entities);
criterion_main!(benches);
