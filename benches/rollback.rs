//! What rollback costs (#38): `World::snapshot`, `World::restore` and
//! `World::checksum` of 10,000 entities with 4 `Copy` components (100 bytes
//! an entity, 1 MB in all), side by side with `copy_from_slice` of the same
//! bytes in the same run.
//!
//! The issue's bars: snapshot + restore ≤ 2× copying the bytes; a restore
//! after a frame that wrote 1% of the rows ≤ 10% of a full restore (one
//! after a frame that wrote every row).
//!
//! - `copy_bytes`: four `copy_from_slice` of preallocated arrays, 1 MB;
//! - `snapshot`: a full snapshot into new memory (every column copied, plus
//!   the entity list);
//! - `snapshot_then_restore`: `World::snapshot` and at once
//!   `World::restore` of it, nothing written in between (the shortest
//!   form a user writes to try the two);
//! - `snapshot_into`: the same into the previous snapshot's buffers
//!   (`World::snapshot_into`), after a frame that wrote every row;
//! - `snapshot_shared`: `snapshot_after` the previous frame's snapshot when
//!   1% of the rows were written (what a `SnapshotRing` pays each frame);
//! - `restore_full`: restore after every row of every component was written;
//! - `restore_1pct`: restore after 1% of the rows (every 100th entity, all
//!   four components) were written;
//! - `snapshot_and_restore_full`: the two together, the way a game does
//!   it: `SnapshotRing::save` of a frame that wrote every row (into the
//!   buffers of the frame the full ring of 8 drops), then
//!   `SnapshotRing::rollback_to` that frame after the next frame wrote
//!   every row again;
//! - `snapshot_fresh_and_restore_full`: the same with `World::snapshot`
//!   (new memory each time) and `World::restore`;
//! - `checksum`: the portable hash of the whole registered state;
//! - `ring8_copy_bytes` (a reference, not the bar): what a hand-written
//!   rollback of the same four arrays pays for the work of
//!   `snapshot_and_restore_full`, in the same run: `copy_from_slice` into
//!   the next of 8 saved copies (a ring, as `SnapshotRing::new(8)` keeps),
//!   every element written (not timed), then `copy_from_slice` back.
//!   `copy_bytes` copies one megabyte between the same two arrays every
//!   time; a ring cycles through 8 saved megabytes and the live one, more
//!   than an L2 cache holds (1 MB a core on the machine these benchmarks
//!   were last run on). (mosaic's restore also marks the change ticks of
//!   the rows it puts back, which a hand-written copy has none of.) The
//!   bar is judged against `copy_bytes`.
//!
//! The writes before each restore are not timed (`iter_custom`).
//!
//! ```text
//! cargo bench --bench rollback
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use mosaic::SnapshotRing;
use mosaic::prelude::*;

const N: usize = 10_000;

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
    world.spawn_batch((0..N as u32).map(|i| (A([i; 6]), B([i; 6]), C([i; 6]), D([i; 7]))));
    world
}

/// Writes every `step`th entity's four components (through `get_mut`, so
/// only those rows are marked written: a `&mut` query item is marked when
/// handed out).
fn write_rows(world: &mut World, step: usize, salt: u32) {
    let entities: Vec<Entity> = {
        let mut q = world.query::<Entity>();
        q.iter(world).step_by(step).collect()
    };
    for e in entities {
        world.get_mut::<A>(e).unwrap().0[0] ^= salt;
        world.get_mut::<B>(e).unwrap().0[0] ^= salt;
        world.get_mut::<C>(e).unwrap().0[0] ^= salt;
        world.get_mut::<D>(e).unwrap().0[0] ^= salt;
    }
}

fn restore_after(c: &mut Criterion, name: &str, step: usize) {
    let mut w = world();
    let saved = w.snapshot();
    let mut salt = 0;
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                salt += 1;
                write_rows(&mut w, step, salt);
                let start = Instant::now();
                black_box(w.restore(&saved).unwrap());
                total += start.elapsed();
            }
            total
        })
    });
}

fn bench(c: &mut Criterion) {
    let src: (Vec<A>, Vec<B>, Vec<C>, Vec<D>) = (
        (0..N as u32).map(|i| A([i; 6])).collect(),
        (0..N as u32).map(|i| B([i; 6])).collect(),
        (0..N as u32).map(|i| C([i; 6])).collect(),
        (0..N as u32).map(|i| D([i; 7])).collect(),
    );
    let mut dst = src.clone();
    assert_eq!(
        std::mem::size_of::<A>()
            + std::mem::size_of::<B>()
            + std::mem::size_of::<C>()
            + std::mem::size_of::<D>(),
        100
    );
    c.bench_function("copy_bytes", |b| {
        b.iter(|| {
            dst.0.copy_from_slice(black_box(&src.0));
            dst.1.copy_from_slice(black_box(&src.1));
            dst.2.copy_from_slice(black_box(&src.2));
            dst.3.copy_from_slice(black_box(&src.3));
            black_box(&mut dst);
        })
    });

    let mut w = world();
    c.bench_function("snapshot", |b| b.iter(|| black_box(w.snapshot())));
    c.bench_function("snapshot_then_restore", |b| {
        b.iter(|| {
            let saved = w.snapshot();
            black_box(w.restore(&saved).unwrap());
        })
    });

    let mut saved = w.snapshot();
    let mut salt = 0;
    c.bench_function("snapshot_into", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                salt += 1;
                write_rows(&mut w, 1, salt);
                let start = Instant::now();
                w.snapshot_into(&mut saved);
                total += start.elapsed();
            }
            total
        })
    });
    drop(saved);

    let mut prev = w.snapshot();
    c.bench_function("snapshot_shared", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                salt += 1;
                write_rows(&mut w, 100, salt);
                let start = Instant::now();
                let next = w.snapshot_after(&prev);
                total += start.elapsed();
                prev = next;
            }
            total
        })
    });

    restore_after(c, "restore_full", 1);
    restore_after(c, "restore_1pct", 100);

    let mut w = world();
    let mut ring = SnapshotRing::new(8);
    let mut frame = 0;
    c.bench_function("snapshot_and_restore_full", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                frame += 1;
                write_rows(&mut w, 1, frame as u32);
                let start = Instant::now();
                ring.save(frame, &w);
                total += start.elapsed();
                write_rows(&mut w, 1, frame as u32);
                let start = Instant::now();
                black_box(ring.rollback_to(frame, &mut w).unwrap().unwrap());
                total += start.elapsed();
            }
            total
        })
    });
    drop(ring);

    let mut w = world();
    let mut salt = 0;
    c.bench_function("snapshot_fresh_and_restore_full", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let saved = w.snapshot();
                total += start.elapsed();
                salt += 1;
                write_rows(&mut w, 1, salt);
                let start = Instant::now();
                black_box(w.restore(&saved).unwrap());
                total += start.elapsed();
            }
            total
        })
    });

    let w = world();
    c.bench_function("checksum", |b| b.iter(|| black_box(w.checksum())));

    // The reference: a ring of 8 copies of the four arrays, by hand.
    let mut live = src.clone();
    let mut ring: Vec<_> = (0..8).map(|_| src.clone()).collect();
    let mut frame = 0;
    c.bench_function("ring8_copy_bytes", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                frame += 1;
                let slot = &mut ring[frame % 8];
                let start = Instant::now();
                slot.0.copy_from_slice(&live.0);
                slot.1.copy_from_slice(&live.1);
                slot.2.copy_from_slice(&live.2);
                slot.3.copy_from_slice(&live.3);
                black_box(&mut *slot);
                total += start.elapsed();
                write_arrays(&mut live, frame as u32);
                let start = Instant::now();
                live.0.copy_from_slice(&slot.0);
                live.1.copy_from_slice(&slot.1);
                live.2.copy_from_slice(&slot.2);
                live.3.copy_from_slice(&slot.3);
                black_box(&mut live);
                total += start.elapsed();
            }
            total
        })
    });
}

/// The hand-written counterpart of `write_rows(world, 1, salt)`.
fn write_arrays(arrays: &mut (Vec<A>, Vec<B>, Vec<C>, Vec<D>), salt: u32) {
    for a in &mut arrays.0 {
        a.0[0] ^= salt;
    }
    for b in &mut arrays.1 {
        b.0[0] ^= salt;
    }
    for c in &mut arrays.2 {
        c.0[0] ^= salt;
    }
    for d in &mut arrays.3 {
        d.0[0] ^= salt;
    }
}

/// The criterion group runner, kept in a private module so the `pub fn` that
/// `criterion_group!` generates needs no doc comment of its own.
mod runner {
    use super::*;

    criterion_group!(benches, bench);
}

criterion_main!(runner::benches);
