//! What relations cost (issue #19, "Done when"):
//!
//! - `despawn_one_child/N`: despawning one child of a parent with N
//!   children, N = 1e3 .. 1e6. Timed in batches of despawns (the children
//!   are put back, untimed, between batches, so N stays within one batch of
//!   its nominal value). Should be ≤ 1 µs and flat in N: a child's position
//!   in `Children` is known, so its removal is a swap-remove.
//! - `despawn_one_plain/N`: the same despawns of entities without
//!   relations, in a world of N + 1 entities, for comparison.
//! - `targets_20k/build`: one entity given 20,000 targets of one relation
//!   (≤ 2 ms).
//! - `unrelate_both_long/N`: `unrelate(hub, sink)` then `relate(hub, sink)`
//!   of a many-target relation where `hub` has N targets and `sink` N
//!   sources, N = 1e3 .. 1e5: finding the edge must not scan either list
//!   (the sink's long list of sources is indexed), so flat in N.
//! - `chain_1m/despawn_recursive` vs `chain_1m/despawn_plain`: a chain of
//!   1,000,000 `ChildOf` edges despawned from its root, against despawning
//!   1,000,000 unrelated entities one by one (≤ 2×).
//! - Memory, printed once before the groups (a counting global allocator):
//!   bytes per edge for 100,000 children of 100,000 distinct parents, for
//!   one parent with 1,000,000 children, and the whole cost of 20,000
//!   targets on one entity; and the archetype count before and after.
//!
//! `RELATIONS_ONE_PASS=despawn_child|despawn_plain` runs one pass of
//! 100,000 despawns (of children of one parent, or of plain entities), and
//! `RELATIONS_ONE_PASS=targets_20k` one build of 20,000 targets
//! (`*relate_pass*`), `RELATIONS_ONE_PASS=unrelate_1k|unrelate_100k`
//! 10,000 unrelate+relate pairs of `unrelate_both_long` (`*unrelate_pass*`), `RELATIONS_ONE_PASS=chain_recursive` one recursive
//! despawn of a 100,000-node chain (`*recursive_pass*`), and exits, for
//! callgrind:
//!
//! ```text
//! RELATIONS_ONE_PASS=despawn_child valgrind --tool=callgrind \
//!     --toggle-collect='*despawn_pass*' target/release/deps/relations-<hash>
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group};
use mosaic::prelude::*;

/// Counts the bytes currently allocated.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

#[derive(Component)]
struct Pos(#[allow(dead_code)] f32);

#[derive(Relation)]
struct Likes;

/// A parent with `n` children, and the children.
fn family(n: usize) -> (World, Entity, Vec<Entity>) {
    let mut world = World::new();
    let parent = world.spawn(Pos(0.0));
    let kids: Vec<Entity> = (0..n).map(|_| world.spawn(Pos(1.0))).collect();
    for &k in &kids {
        world.add_child(parent, k).unwrap();
    }
    (world, parent, kids)
}

/// Times `iters` despawns of children (or plain entities), in batches,
/// refilling between batches untimed.
fn timed_despawns(
    world: &mut World,
    parent: Option<Entity>,
    pool: &mut Vec<Entity>,
    iters: u64,
) -> Duration {
    let batch = (pool.len() / 10).clamp(1, 1000);
    let mut left = iters;
    let mut total = Duration::ZERO;
    while left > 0 {
        let n = (left as usize).min(batch);
        let victims: Vec<Entity> = pool.drain(pool.len() - n..).collect();
        let start = Instant::now();
        for &v in &victims {
            world.despawn(black_box(v)).unwrap();
        }
        total += start.elapsed();
        for _ in 0..n {
            let e = world.spawn(Pos(1.0));
            if let Some(p) = parent {
                world.add_child(p, e).unwrap();
            }
            pool.push(e);
        }
        left -= n as u64;
    }
    total
}

fn despawn_one_child(c: &mut Criterion) {
    let mut group = c.benchmark_group("despawn_one_child");
    group.sample_size(20);
    for n in [1_000usize, 10_000, 100_000, 1_000_000] {
        let (mut world, parent, mut kids) = family(n);
        // Shuffle-free but not in insertion order: take from the end of a
        // list whose order is the spawn order, so each despawned child sits
        // anywhere in `Children` after the swaps of earlier batches.
        group.bench_function(n.to_string(), |b| {
            b.iter_custom(|iters| timed_despawns(&mut world, Some(parent), &mut kids, iters))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("despawn_one_plain");
    group.sample_size(20);
    for n in [1_000usize, 1_000_000] {
        let mut world = World::new();
        let mut pool: Vec<Entity> = (0..=n).map(|_| world.spawn(Pos(1.0))).collect();
        group.bench_function(n.to_string(), |b| {
            b.iter_custom(|iters| timed_despawns(&mut world, None, &mut pool, iters))
        });
    }
    group.finish();
}

fn targets_20k(c: &mut Criterion) {
    let mut group = c.benchmark_group("targets_20k");
    group.sample_size(20);
    group.bench_function("build", |b| {
        b.iter_batched(
            || {
                let mut world = World::new();
                let source = world.spawn(());
                let targets: Vec<Entity> = (0..20_000).map(|_| world.spawn(())).collect();
                world.register_relation::<Likes>();
                (world, source, targets)
            },
            |(mut world, source, targets)| {
                for &t in &targets {
                    world.relate(source, t, Likes).unwrap();
                }
                world
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// A `hub` with `n` targets and a `sink` with `n` sources, the edge
/// `hub -> sink` among them, halfway down both lists.
fn both_long(n: usize) -> (World, Entity, Entity) {
    let mut world = World::new();
    let hub = world.spawn(());
    let sink = world.spawn(());
    for i in 1..n {
        if i == n / 2 {
            world.relate(hub, sink, Likes).unwrap();
        }
        let t = world.spawn(());
        world.relate(hub, t, Likes).unwrap();
        let s = world.spawn(());
        world.relate(s, sink, Likes).unwrap();
    }
    (world, hub, sink)
}

fn unrelate_both_long(c: &mut Criterion) {
    let mut group = c.benchmark_group("unrelate_both_long");
    group.sample_size(20);
    for n in [1_000usize, 10_000, 100_000] {
        let (mut world, hub, sink) = both_long(n);
        assert_eq!(world.targets::<Likes>(hub).len(), n);
        assert_eq!(world.sources::<Likes>(sink).len(), n);
        group.bench_function(n.to_string(), |b| {
            b.iter(|| {
                world
                    .unrelate::<Likes>(black_box(hub), black_box(sink))
                    .unwrap();
                world
                    .relate(black_box(hub), black_box(sink), Likes)
                    .unwrap();
            })
        });
    }
    group.finish();
}

fn chain(n: usize) -> (World, Entity) {
    let mut world = World::new();
    let root = world.spawn(Pos(0.0));
    let mut last = root;
    for _ in 1..n {
        let e = world.spawn(Pos(0.0));
        world.add_child(last, e).unwrap();
        last = e;
    }
    (world, root)
}

fn chain_1m(c: &mut Criterion) {
    const N: usize = 1_000_000;
    let mut group = c.benchmark_group("chain_1m");
    group.sample_size(10);
    group.bench_function("despawn_recursive", |b| {
        b.iter_batched(
            || chain(N),
            |(mut world, root)| {
                world.despawn_recursive(root).unwrap();
                world
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("despawn_plain", |b| {
        b.iter_batched(
            || {
                let mut world = World::new();
                let es: Vec<Entity> = (0..N).map(|_| world.spawn(Pos(0.0))).collect();
                (world, es)
            },
            |(mut world, es)| {
                // The same order as the recursive despawn: last first.
                for &e in es.iter().rev() {
                    world.despawn(e).unwrap();
                }
                world
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// Bytes per edge and archetype counts, printed once.
fn report_memory() {
    // 100,000 children of 100,000 distinct parents (spawned first, so the
    // bytes counted are the relations' alone).
    let mut world = World::new();
    let parents: Vec<Entity> = (0..100_000).map(|_| world.spawn(Pos(0.0))).collect();
    let kids: Vec<Entity> = (0..100_000).map(|_| world.spawn(Pos(0.0))).collect();
    world.register_relation::<ChildOf>();
    let archetypes = world.archetype_count();
    let before = live_bytes();
    for (&p, &k) in parents.iter().zip(&kids) {
        world.add_child(p, k).unwrap();
    }
    let bytes = live_bytes() - before;
    println!(
        "memory: 100,000 children of 100,000 parents: {bytes} bytes, {:.1} bytes/edge; \
         archetypes {archetypes} -> {}",
        bytes as f64 / 1e5,
        world.archetype_count()
    );
    println!(
        "    value sizes: Relation<ChildOf> {} bytes, Children {} bytes, \
         Relation<Likes> {} bytes, Sources<Likes> {} bytes",
        std::mem::size_of::<Relation<ChildOf>>(),
        std::mem::size_of::<Children>(),
        std::mem::size_of::<Relation<Likes>>(),
        std::mem::size_of::<Sources<Likes>>()
    );
    print_sparse_sets(&world, 1e5, bytes);
    drop(world);

    let (world, _, _) = {
        let mut world = World::new();
        let parent = world.spawn(Pos(0.0));
        let kids: Vec<Entity> = (0..1_000_000).map(|_| world.spawn(Pos(1.0))).collect();
        world.register_relation::<ChildOf>();
        let before = live_bytes();
        for &k in &kids {
            world.add_child(parent, k).unwrap();
        }
        let bytes = live_bytes() - before;
        println!(
            "memory: 1 parent with 1,000,000 children: {bytes} bytes, {:.1} bytes/edge",
            bytes as f64 / 1e6
        );
        print_sparse_sets(&world, 1e6, bytes);
        (world, parent, kids)
    };
    drop(world);

    let mut world = World::new();
    let source = world.spawn(());
    let targets: Vec<Entity> = (0..20_000).map(|_| world.spawn(())).collect();
    world.register_relation::<Likes>();
    let before = live_bytes();
    let start = Instant::now();
    for &t in &targets {
        world.relate(source, t, Likes).unwrap();
    }
    let took = start.elapsed();
    let bytes = live_bytes() - before;
    println!(
        "memory: 1 entity with 20,000 targets: {bytes} bytes ({:.1} bytes/edge), built in {took:?}",
        bytes as f64 / 2e4
    );
    print_sparse_sets(&world, 2e4, bytes);
}

/// Where the bytes counted above go: per relation sparse set, its values
/// (inline in the set), dense entity list and sparse index, from
/// `World::memory_report`; the rest of the counted bytes is the heap the
/// values own (the boxed edge lists of a source with several targets or a
/// target with several sources).
fn print_sparse_sets(world: &World, edges: f64, counted: isize) {
    let mut in_sets = 0;
    for set in world.memory_report().sparse_sets() {
        let per = |b: usize| b as f64 / edges;
        println!(
            "    sparse set {:<18} {:>7} entries {:>8} bytes = values {:>7} ({:.1}/edge) \
             + entities {:>7} ({:.1}/edge) + index {:>7} ({:.1}/edge)",
            set.component,
            set.len,
            set.bytes,
            set.value_bytes,
            per(set.value_bytes),
            set.entity_bytes,
            per(set.entity_bytes),
            set.index_bytes,
            per(set.index_bytes),
        );
        in_sets += set.bytes;
    }
    let lists = counted - in_sets as isize;
    println!(
        "    edge lists on the heap {lists:>8} bytes ({:.1}/edge)",
        lists as f64 / edges
    );
}

#[inline(never)]
fn despawn_pass(world: &mut World, victims: &[Entity]) {
    for &v in victims {
        world.despawn(v).unwrap();
    }
}

#[inline(never)]
fn recursive_pass(world: &mut World, root: Entity) {
    world.despawn_recursive(root).unwrap();
}

#[inline(never)]
fn unrelate_pass(world: &mut World, hub: Entity, sink: Entity) {
    for _ in 0..10_000 {
        world.unrelate::<Likes>(hub, sink).unwrap();
        world.relate(hub, sink, Likes).unwrap();
    }
}

#[inline(never)]
fn relate_pass(world: &mut World, source: Entity, targets: &[Entity]) {
    for &t in targets {
        world.relate(source, t, Likes).unwrap();
    }
}

fn one_pass(which: &str) {
    let (mut world, victims) = match which {
        "despawn_child" => {
            let (world, _, kids) = family(100_000);
            (world, kids)
        }
        "despawn_plain" => {
            let mut world = World::new();
            let es: Vec<Entity> = (0..100_000).map(|_| world.spawn(Pos(1.0))).collect();
            (world, es)
        }
        "chain_recursive" => {
            let (mut world, root) = chain(100_000);
            recursive_pass(&mut world, root);
            return;
        }
        "targets_20k" => {
            let mut world = World::new();
            let source = world.spawn(());
            let targets: Vec<Entity> = (0..20_000).map(|_| world.spawn(())).collect();
            relate_pass(&mut world, source, &targets);
            return;
        }
        "unrelate_1k" | "unrelate_100k" => {
            let n = if which == "unrelate_1k" {
                1_000
            } else {
                100_000
            };
            let (mut world, hub, sink) = both_long(n);
            unrelate_pass(&mut world, hub, sink);
            return;
        }
        other => panic!("RELATIONS_ONE_PASS: unknown pass `{other}`"),
    };
    despawn_pass(&mut world, &victims);
}

/// The criterion group runner, kept in a private module so the `pub fn` that
/// `criterion_group!` generates needs no doc comment of its own.
mod runner {
    use super::*;

    criterion_group!(
        benches,
        despawn_one_child,
        targets_20k,
        unrelate_both_long,
        chain_1m
    );
}

fn main() {
    if let Ok(which) = std::env::var("RELATIONS_ONE_PASS") {
        one_pass(&which);
        return;
    }
    // Only under `cargo bench` (not when `cargo test` runs benches once).
    if std::env::args().any(|a| a == "--bench") {
        report_memory();
    }
    runner::benches();
    Criterion::default().configure_from_args().final_summary();
}
