//! A fixed-work driver for callgrind instruction counts of rollback (#38):
//! `World::snapshot`, `World::snapshot_into` and `World::restore` of the
//! benchmark's world (10,000 entities × 4 `Copy` components, 100 bytes an
//! entity), each after a frame that wrote every row (the writes are outside
//! the counted functions).
//!
//! ```text
//! cargo build --release --example rollback_profile
//! valgrind --tool=callgrind --toggle-collect='rollback_profile::measured_*' \
//!     target/release/examples/rollback_profile snapshot 20
//! ```
//!
//! Instructions per call = total collected / N. Workloads: `snapshot` (a
//! fresh snapshot each time), `snapshot-into` (into the same snapshot each
//! time, reusing its buffers), `restore` (restore of one snapshot) and
//! `restore-1pct` (the same after a frame that wrote every 100th entity's
//! four components through `get_mut`, as the bench's `restore_1pct`) and
//! `restore-clean` (restore right after the snapshot, nothing written: the
//! fixed cost of a restore, outside the rows it puts back). It also
//! prints the mean wall time of a counted call and the fastest one (noisy;
//! for a quick look: on a busy machine the fastest is the steadier).

use std::hint::black_box;
use std::time::{Duration, Instant};

use mosaic::Snapshot;
use mosaic::prelude::*;

const ENTITIES: u32 = 10_000;

#[derive(Component, Clone, Copy, Hash)]
struct A([u32; 6]);
#[derive(Component, Clone, Copy, Hash)]
struct B([u32; 6]);
#[derive(Component, Clone, Copy, Hash)]
struct C([u32; 6]);
#[derive(Component, Clone, Copy, Hash)]
struct D([u32; 7]);

fn world() -> World {
    let mut world = World::new();
    world.register_rollback::<A>();
    world.register_rollback::<B>();
    world.register_rollback::<C>();
    world.register_rollback::<D>();
    world.spawn_batch((0..ENTITIES).map(|i| (A([i; 6]), B([i; 6]), C([i; 6]), D([i; 7]))));
    world
}

/// Writes every row of the four components (marking them changed).
fn write_all(world: &mut World, salt: u32) {
    let mut q = world.query::<(&mut A, &mut B, &mut C, &mut D)>();
    for (a, b, c, d) in q.iter_mut(world) {
        a.0[0] ^= salt;
        b.0[0] ^= salt;
        c.0[0] ^= salt;
        d.0[0] ^= salt;
    }
}

#[inline(never)]
fn measured_snapshot(world: &mut World) -> Snapshot {
    world.snapshot()
}

#[inline(never)]
fn measured_snapshot_into(world: &mut World, into: &mut Snapshot) {
    world.snapshot_into(into);
}

#[inline(never)]
fn measured_restore(world: &mut World, saved: &Snapshot) {
    black_box(world.restore(saved).unwrap());
}

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args
        .next()
        .expect("a workload: snapshot, snapshot-into, restore, restore-1pct, restore-clean");
    let n: u32 = args.next().map_or(10, |s| s.parse().expect("N: a count"));
    let mut world = world();
    let (mut spent, mut fastest) = (Duration::ZERO, Duration::MAX);
    let mut timed = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        let took = start.elapsed();
        spent += took;
        fastest = fastest.min(took);
    };
    match workload.as_str() {
        "snapshot" => {
            for salt in 0..n {
                write_all(&mut world, salt);
                timed(&mut || drop(black_box(measured_snapshot(&mut world))));
            }
        }
        "snapshot-into" => {
            let mut saved = world.snapshot();
            for salt in 0..n {
                write_all(&mut world, salt);
                timed(&mut || measured_snapshot_into(&mut world, &mut saved));
            }
        }
        "restore" => {
            let saved = world.snapshot();
            for salt in 0..n {
                write_all(&mut world, salt + 1);
                timed(&mut || measured_restore(&mut world, &saved));
            }
        }
        "restore-1pct" => {
            let saved = world.snapshot();
            let every_100th: Vec<Entity> = {
                let mut q = world.query::<Entity>();
                q.iter(&world).step_by(100).collect()
            };
            for salt in 0..n {
                for &e in &every_100th {
                    world.get_mut::<A>(e).unwrap().0[0] ^= salt + 1;
                    world.get_mut::<B>(e).unwrap().0[0] ^= salt + 1;
                    world.get_mut::<C>(e).unwrap().0[0] ^= salt + 1;
                    world.get_mut::<D>(e).unwrap().0[0] ^= salt + 1;
                }
                timed(&mut || measured_restore(&mut world, &saved));
            }
        }
        "restore-clean" => {
            let saved = world.snapshot();
            for _ in 0..n {
                timed(&mut || measured_restore(&mut world, &saved));
            }
        }
        other => panic!("unknown workload {other}"),
    }
    println!(
        "{workload}: {:.1} µs a call, the fastest {:.2} µs",
        spent.as_secs_f64() * 1e6 / f64::from(n.max(1)),
        fastest.as_secs_f64() * 1e6
    );
}
