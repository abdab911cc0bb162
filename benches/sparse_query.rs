//! A query for a rare sparse component: 100,000 entities with `Position`,
//! 16 of them `Stunned`; each run nudges the stunned ones. mosaic keeps
//! `Stunned` in a sparse set and walks that set (16 entities); with table
//! storage it is one more archetype (as in hecs, which has only
//! archetypes). Before sets were walked, the sparse query swept all
//! 100,000 rows and looked each up in the set.
//!
//! ```text
//! cargo bench --bench sparse_query
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use mosaic::prelude::*;

const ENTITIES: usize = 100_000;
const STUNNED: usize = 16;

#[derive(Component, Clone, Copy)]
struct Position(f32);
#[derive(Component, Clone, Copy)]
#[component(storage = "sparse")]
struct Stunned;
#[derive(Component, Clone, Copy)]
struct StunnedTable;

/// Every `ENTITIES / STUNNED`-th entity: spread over the whole table.
fn stunned_rows() -> impl Iterator<Item = usize> {
    (0..STUNNED).map(|k| k * (ENTITIES / STUNNED))
}

/// Marks the stunned entities with `marker` and times the marked query.
fn bench_mosaic<M: Component + Copy>(b: &mut criterion::Bencher<'_>, marker: M) {
    let mut world = World::new();
    let all = world.spawn_batch((0..ENTITIES).map(|i| Position(i as f32)));
    for i in stunned_rows() {
        world.insert_one(all[i], marker).unwrap();
    }
    let mut query = world.query_filtered::<&mut Position, With<M>>();
    b.iter(|| query.iter_mut(&mut world).for_each(|p| p.0 += 1.0));
    assert_eq!(query.iter_mut(&mut world).count(), STUNNED);
}

fn rare_sparse(c: &mut Criterion) {
    let mut group = c.benchmark_group("rare_marker_query");
    group.bench_function("mosaic_sparse", |b| bench_mosaic(b, Stunned));
    group.bench_function("mosaic_table", |b| bench_mosaic(b, StunnedTable));
    group.bench_function("hecs", |b| {
        let mut world = hecs::World::new();
        let all: Vec<hecs::Entity> = world
            .spawn_batch((0..ENTITIES).map(|i| (Position(i as f32),)))
            .collect();
        for i in stunned_rows() {
            world.insert_one(all[i], StunnedTable).unwrap();
        }
        let mut query = hecs::PreparedQuery::<hecs::With<&mut Position, &StunnedTable>>::new();
        b.iter(|| {
            for p in query.query_mut(&mut world) {
                p.0 += 1.0;
            }
        });
        black_box(&world);
    });
    group.finish();
}

/// The criterion group runner, kept in a private module so the `pub fn` that
/// `criterion_group!` generates needs no doc comment of its own.
mod runner {
    use super::*;

    criterion_group! {
        name = benches;
        config = Criterion::default()
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        targets = rare_sparse
    }
}

criterion_main!(runner::benches);
