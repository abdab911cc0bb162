//! Multithreaded paths, small enough for Miri: parallel query iteration
//! (`par_iter`, `par_chunks`),
//! the parallel executor, and entity reservation from several threads.
//!
//! CI runs this file under Miri with Tree Borrows and permissive
//! provenance: rayon's crossbeam-epoch stores tagged pointers (which strict
//! provenance rejects) and is known not to satisfy Stacked Borrows, while it
//! does satisfy Tree Borrows (crossbeam-rs/crossbeam#545, #996). It also
//! passes `-Zmiri-tree-borrows-no-precise-interior-mut`: rayon-core's scope
//! frees its `Scope` while a job that just finished still holds a protected
//! `&Scope` (rayon-rs/rayon#1008, #952), which precise Tree Borrows reports
//! on some interleavings (see `.ci/run`). The limits are those dependencies',
//! not mosaic's code.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;

#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Pos(u64);
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Vel(u64);
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Heat(u64);
#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[component(storage = "sparse")]
struct Marked;

const N: u64 = if cfg!(miri) { 150 } else { 5_000 };

fn world() -> World {
    let mut world = World::new();
    world.spawn_batch((0..N).map(|i| (Pos(i), Vel(1), Heat(i))));
    world
}

#[test]
fn par_iter_mut_visits_every_item_once() {
    let mut world = world();
    world.run_system_once(|mut q: Query<(&mut Pos, &Vel)>| {
        q.par_iter_mut().for_each(|(p, v)| p.0 += v.0);
    });
    let sum: u64 = world.run_system_once(|q: Query<&Pos>| q.iter().map(|p| p.0).sum());
    assert_eq!(sum, (0..N).map(|i| i + 1).sum::<u64>());
}

#[test]
fn par_chunks_mut_writes_each_chunk_once_and_map_keeps_chunk_order() {
    let mut world = world();
    // Two tables, so a chunk spans a table boundary.
    world.spawn_batch((N..N + 40).map(|i| (Pos(i), Vel(2))));
    world.run_system_once(|mut q: Query<(&mut Pos, &Vel)>| {
        q.par_chunks_mut(32).for_each(|chunk| {
            let k = chunk.index() as u64;
            chunk.for_each(|(p, v)| p.0 = k * 1_000_000 + p.0 * v.0);
        });
    });
    let firsts =
        world.run_system_once(|q: Query<&Pos>| q.par_chunks(32).map(|mut c| c.next().map(|p| p.0)));
    let total = N as usize + 40;
    assert_eq!(firsts.len(), total.div_ceil(32));
    for (k, first) in firsts.into_iter().enumerate() {
        let row = (k * 32) as u64;
        let value = if row < N { row } else { 2 * row };
        assert_eq!(first, Some(k as u64 * 1_000_000 + value), "chunk {k}");
    }
}

#[test]
fn par_iter_and_par_chunks_over_a_walked_sparse_set() {
    let mut world = world();
    // Two of every three entities marked: fewer than the rows, so runs
    // walk `Marked`'s set, split over threads.
    let marked: Vec<Entity> = world.run_system_once(|q: Query<Entity>| q.iter().collect());
    let marked: Vec<Entity> = marked.into_iter().filter(|e| e.index() % 3 != 0).collect();
    for &e in &marked {
        world.insert_one(e, Marked).unwrap();
    }
    world.run_system_once(|mut q: Query<&mut Heat, With<Marked>>| {
        q.par_iter_mut().for_each(|h| h.0 += 1_000);
    });
    world.run_system_once(|mut q: Query<(&mut Pos, &Marked)>| {
        q.par_chunks_mut(16)
            .for_each(|chunk| chunk.for_each(|(p, _)| p.0 += 7));
    });
    for (i, e) in world
        .run_system_once(|q: Query<Entity>| q.iter().collect::<Vec<_>>())
        .into_iter()
        .enumerate()
    {
        let hit = marked.contains(&e);
        assert_eq!(
            world.get::<Heat>(e).unwrap().0,
            i as u64 + if hit { 1_000 } else { 0 }
        );
        assert_eq!(
            world.get::<Pos>(e).unwrap().0,
            i as u64 + if hit { 7 } else { 0 }
        );
    }
}

#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[component(storage = "sparse")]
struct Charge(u64);

#[test]
fn par_iter_and_par_chunks_over_a_dense_sparse_walk() {
    // A query of sparse components alone reads its set by position; split
    // runs start mid-set and must read and write their own positions.
    let mut world = world();
    let all: Vec<Entity> = world.run_system_once(|q: Query<Entity>| q.iter().collect());
    for (i, &e) in all.iter().enumerate() {
        world.insert_one(e, Charge(i as u64)).unwrap();
    }
    // Change ticks on, so the dense writes stamp them too.
    let mut changed = world.query_filtered::<Entity, Changed<Charge>>();
    assert_eq!(changed.iter(&world).count(), all.len());
    world.run_system_once(|mut q: Query<&mut Charge>| {
        q.par_iter_mut().for_each(|c| c.0 *= 3);
    });
    world.run_system_once(|mut q: Query<(Entity, &mut Charge)>| {
        q.par_chunks_mut(16).for_each(|chunk| {
            let k = chunk.index() as u64;
            chunk.for_each(|(_, c)| c.0 += k * 1_000_000);
        });
    });
    for (i, &e) in all.iter().enumerate() {
        let k = (i / 16) as u64;
        assert_eq!(
            world.get::<Charge>(e).unwrap().0,
            3 * i as u64 + k * 1_000_000
        );
    }
    assert_eq!(changed.iter(&world).count(), all.len());
}

#[test]
fn par_iter_reads_from_many_threads() {
    let mut world = world();
    let visited = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&visited);
    world.run_system_once(move |q: Query<&Heat>| {
        q.par_iter().for_each(|_| {
            seen.fetch_add(1, Ordering::Relaxed);
        });
    });
    assert_eq!(visited.load(Ordering::Relaxed), N as usize);
}

fn push(mut q: Query<(&mut Pos, &Vel)>) {
    q.iter_mut().for_each(|(p, v)| p.0 += v.0);
}

fn cool(mut q: Query<&mut Heat>) {
    q.iter_mut().for_each(|h| h.0 /= 2);
}

fn count(q: Query<&Vel>, mut seen: ResMut<Seen>) {
    seen.0 += q.iter().count() as u64;
}

#[derive(Default)]
struct Seen(u64);

/// The parallel executor gives the same world as the single-threaded one.
#[test]
fn parallel_executor_matches_single_threaded() {
    let run = |kind: ExecutorKind| {
        let mut world = world();
        world.insert_resource(Seen::default());
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("push", push);
        schedule.add_system("cool", cool);
        schedule.add_system("count", count);
        for _ in 0..4 {
            schedule.run(&mut world);
        }
        let pos: Vec<u64> = world.run_system_once(|q: Query<&Pos>| q.iter().map(|p| p.0).collect());
        let heat: Vec<u64> =
            world.run_system_once(|q: Query<&Heat>| q.iter().map(|h| h.0).collect());
        (pos, heat, world.resource::<Seen>().0)
    };
    assert_eq!(
        run(ExecutorKind::Parallel),
        run(ExecutorKind::SingleThreaded)
    );
}

/// Commands reserve entity ids from several systems at once; every id is
/// distinct and becomes a live entity.
#[test]
fn commands_from_parallel_systems_get_distinct_ids() {
    let mut world = World::new();
    world.spawn_batch((0..N).map(Heat));
    let mut schedule = Schedule::new();
    for name in ["a", "b", "c"] {
        schedule.add_system(name, |mut commands: Commands, q: Query<&Heat>| {
            for _ in q.iter().take(10) {
                commands.spawn(Vel(7));
            }
        });
    }
    schedule.run(&mut world);
    let ids: Vec<Entity> = world.run_system_once(|q: Query<Entity, With<Vel>>| q.iter().collect());
    assert_eq!(ids.len(), 30);
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 30);
    world.check_invariants();
}

/// Issue #39, item 17: the ids `Commands::spawn` hands out do not depend on
/// the executor or on thread timing: the same systems on the same world
/// give the same ids, frame after frame, serially and in parallel (with
/// despawns in between, so freed slots are reused too).
#[test]
fn command_spawn_ids_are_the_same_on_both_executors() {
    #[derive(Component)]
    struct Spark(u32);
    let (frames, work) = if cfg!(miri) { (3, 50) } else { (60, 20_000) };
    let run = |kind: ExecutorKind| {
        let mut world = World::new();
        world.spawn_batch((0..N).map(Heat));
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        for s in 0..4u32 {
            schedule.add_system(
                format!("spawner{s}"),
                move |mut commands: Commands, q: Query<&Heat>, mut runs: Local<u32>| {
                    // Enough work that the parallel executor overlaps them.
                    let mut acc = 0u64;
                    for i in 0..work {
                        acc = acc.wrapping_mul(31).wrapping_add(i);
                    }
                    std::hint::black_box(acc);
                    *runs += 1;
                    for _ in q.iter().take(1 + ((*runs + s) % 3) as usize) {
                        commands.spawn(Spark(s));
                    }
                },
            );
        }
        schedule.add_system(
            "reaper",
            |mut commands: Commands, q: Query<(Entity, &Spark)>| {
                for (e, spark) in q.iter() {
                    if (e.index() + spark.0) % 3 == 0 {
                        commands.despawn(e);
                    }
                }
            },
        );
        let mut ids = Vec::new();
        for _ in 0..frames {
            schedule.run(&mut world);
            ids.push(world.run_system_once(|q: Query<(Entity, &Spark)>| {
                let mut v: Vec<(Entity, u32)> = q.iter().map(|(e, s)| (e, s.0)).collect();
                v.sort();
                v
            }));
        }
        world.check_invariants();
        ids
    };
    let serial = run(ExecutorKind::SingleThreaded);
    for _ in 0..3 {
        let parallel = run(ExecutorKind::Parallel);
        let first_difference = (0..frames).find(|&f| parallel[f] != serial[f]);
        assert_eq!(first_difference, None, "the frame whose ids differ");
    }
}
