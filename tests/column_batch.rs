//! Integration tests for columnar spawning: `ColumnBatch`, `BatchColumn`,
//! `World::spawn_column_batch` and `World::spawn_column_batches`. A batch
//! refuses a column of the wrong length or a component given twice and
//! stays as it was; a set of batches whose positions do not cover the spawn
//! exactly once is refused and leaves the world as it was; every value is
//! dropped exactly once, on success, refusal or panic.

use std::any::TypeId;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;
use mosaic::{BatchColumn, ColumnBatch, ColumnBatchError};

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Position(f32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Velocity(f32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Marked(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Unit;
#[derive(Component, Debug, PartialEq, Clone, Copy, Default)]
struct Mass(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[require(Mass)]
struct Body(u32);

/// A component that counts its drops in the counter it names (each test
/// has its own).
#[derive(Component)]
struct Counted(&'static AtomicUsize);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counted(n: usize, drops: &'static AtomicUsize) -> Vec<Counted> {
    (0..n).map(|_| Counted(drops)).collect()
}

fn positions(n: usize) -> Vec<Position> {
    (0..n).map(|i| Position(i as f32)).collect()
}

/// What a world holds, to compare before and after a refused spawn.
fn snapshot(world: &mut World) -> (usize, Vec<(Entity, Position)>, usize) {
    let mut q = world.query::<(Entity, &Position)>();
    let mut rows: Vec<(Entity, Position)> = q.iter(world).map(|(e, p)| (e, *p)).collect();
    rows.sort_by_key(|(e, _)| e.to_bits());
    (world.len(), rows, world.archetype_count())
}

#[test]
fn a_batch_spawns_its_columns_in_order() {
    let mut world = World::new();
    let mut batch = ColumnBatch::new(100);
    batch
        .push(positions(100))
        .unwrap()
        .push(vec![Velocity(2.0); 100])
        .unwrap()
        .push((0..100).map(Marked).collect())
        .unwrap();
    assert_eq!((batch.len(), batch.column_count()), (100, 3));
    let entities = world.spawn_column_batch(batch);
    assert_eq!(entities.len(), 100);
    for (i, &e) in entities.iter().enumerate() {
        assert_eq!(world.get::<Position>(e), Ok(&Position(i as f32)));
        assert_eq!(world.get::<Velocity>(e), Ok(&Velocity(2.0)));
        assert_eq!(world.get::<Marked>(e), Ok(&Marked(i as u32)));
    }
    // The query visits them in the batch's order.
    let mut q = world.query::<(Entity, &Position)>();
    let seen: Vec<Entity> = q.iter(&world).map(|(e, _)| e).collect();
    assert_eq!(seen, entities);
    world.check_invariants();
}

#[test]
fn a_batch_appends_to_a_table_that_has_rows() {
    let mut world = World::new();
    let first = world.spawn((Position(-1.0), Velocity(0.0)));
    let mut batch = ColumnBatch::new(3);
    batch
        .push(vec![Velocity(1.0); 3])
        .unwrap()
        .push(positions(3))
        .unwrap();
    let entities = world.spawn_column_batch(batch);
    assert_eq!(world.get::<Position>(first), Ok(&Position(-1.0)));
    assert_eq!(world.get::<Position>(entities[2]), Ok(&Position(2.0)));
    assert_eq!(world.archetype_count(), 2, "the empty archetype and one");
    world.despawn(first).unwrap();
    assert_eq!(world.get::<Position>(entities[0]), Ok(&Position(0.0)));
    world.check_invariants();
}

#[test]
fn zero_sized_components_and_empty_batches() {
    let mut world = World::new();
    let mut batch = ColumnBatch::new(5);
    batch.push(vec![Unit; 5]).unwrap();
    let units = world.spawn_column_batch(batch);
    assert!(units.iter().all(|&e| world.has::<Unit>(e)));
    let none = world.spawn_column_batch(ColumnBatch::new(0));
    assert!(none.is_empty());
    let bare = world.spawn_column_batch(ColumnBatch::new(2));
    assert!(bare.iter().all(|&e| world.contains(e)));
    assert_eq!(world.len(), 7);
    world.check_invariants();
}

/// Columns picked by name at run time: a registry of typed constructors
/// hands back type-erased columns.
#[test]
fn type_erased_columns_built_at_run_time() {
    type Make = fn(usize) -> BatchColumn;
    let mut makers: HashMap<&str, Make> = HashMap::new();
    makers.insert("Position", |n| positions(n).into());
    makers.insert("Marked", |n| {
        BatchColumn::new((0..n as u32).map(Marked).collect())
    });
    let mut batch = ColumnBatch::new(4);
    for name in ["Marked", "Position"] {
        let column = makers[name](4);
        assert_eq!(column.component_name(), name);
        batch.push_column(column).unwrap();
    }
    let mut world = World::new();
    let entities = world.spawn_column_batch(batch);
    assert_eq!(world.get::<Marked>(entities[3]), Ok(&Marked(3)));
    assert_eq!(world.get::<Position>(entities[1]), Ok(&Position(1.0)));
    let column = BatchColumn::new(vec![Velocity(0.0)]);
    assert_eq!(column.type_id(), TypeId::of::<Velocity>());
    assert_eq!(
        format!("{column:?}"),
        "BatchColumn { component: \"Velocity\", len: 1 }"
    );
}

#[test]
fn a_column_of_the_wrong_length_is_refused_and_dropped_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let mut batch = ColumnBatch::new(3);
    batch.push(positions(3)).unwrap();
    for wrong in [0, 2, 4] {
        let before = DROPS.load(Ordering::SeqCst);
        let error = batch.push(counted(wrong, &DROPS)).unwrap_err();
        assert_eq!(
            error,
            ColumnBatchError::WrongLength {
                component: "Counted".into(),
                expected: 3,
                found: wrong,
            }
        );
        assert_eq!(DROPS.load(Ordering::SeqCst), before + wrong);
        assert_eq!(batch.column_count(), 1, "the batch is as it was");
    }
    // The batch still spawns as it was.
    let mut world = World::new();
    let entities = world.spawn_column_batch(batch);
    assert_eq!(entities.len(), 3);
    assert_eq!(world.component_id::<Counted>(), None);
    let error = ColumnBatch::new(1).push(positions(2)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "column `Position` has 2 values for 1 entities"
    );
}

#[test]
fn a_component_given_twice_is_refused_and_dropped_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let mut batch = ColumnBatch::new(2);
    batch.push(counted(2, &DROPS)).unwrap();
    let error = batch
        .push_column(BatchColumn::new(counted(2, &DROPS)))
        .unwrap_err();
    assert_eq!(
        error,
        ColumnBatchError::DuplicateColumn {
            component: "Counted".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "component `Counted` is in the batch twice"
    );
    assert_eq!(DROPS.load(Ordering::SeqCst), 2, "the refused column only");
    assert_eq!(batch.column_count(), 1);
    let mut world = World::new();
    let entities = world.spawn_column_batch(batch);
    assert_eq!(DROPS.load(Ordering::SeqCst), 2, "values moved, not dropped");
    world.despawn(entities[0]).unwrap();
    assert_eq!(DROPS.load(Ordering::SeqCst), 3);
    drop(world);
    assert_eq!(DROPS.load(Ordering::SeqCst), 4);
}

#[test]
fn every_value_spawned_is_dropped_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let mut world = World::new();
    let mut batch = ColumnBatch::new(50);
    batch.push(counted(50, &DROPS)).unwrap();
    batch.push(positions(50)).unwrap();
    world.spawn_column_batch(batch);
    // A second batch into the same (now allocated) table.
    let mut batch = ColumnBatch::new(30);
    batch.push(positions(30)).unwrap();
    batch.push(counted(30, &DROPS)).unwrap();
    world.spawn_column_batch(batch);
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);
    world.check_invariants();
    drop(world);
    assert_eq!(DROPS.load(Ordering::SeqCst), 80);
}

/// Spawns `batches` (made by `make`, given the handles) into a world that
/// already holds something, and checks that the refusal changed nothing.
fn refused(
    count: usize,
    make: impl FnOnce(&[Entity]) -> Vec<(Vec<usize>, ColumnBatch)>,
) -> ColumnBatchError {
    let mut world = World::new();
    world.spawn((Position(7.0), Velocity(1.0)));
    world.spawn(Position(8.0));
    let before = snapshot(&mut world);
    let mut handles = Vec::new();
    let error = world
        .spawn_column_batches(count, |entities| {
            handles = entities.to_vec();
            make(entities)
        })
        .unwrap_err();
    assert_eq!(snapshot(&mut world), before, "{error}");
    assert!(handles.iter().all(|&e| !world.contains(e)));
    assert_eq!(world.component_id::<Counted>(), None, "nothing registered");
    world.check_invariants();
    // The world works on as before.
    let e = world.spawn(Position(9.0));
    assert_eq!(world.get::<Position>(e), Ok(&Position(9.0)));
    assert_eq!(world.len(), 3);
    error
}

fn batch_of_counted(n: usize, drops: &'static AtomicUsize) -> ColumnBatch {
    let mut batch = ColumnBatch::new(n);
    batch.push(counted(n, drops)).unwrap();
    batch
}

#[test]
fn batches_with_wrong_positions_are_refused_and_change_nothing() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let error = refused(3, |_| vec![(vec![0, 1], batch_of_counted(3, &DROPS))]);
    assert_eq!(
        error,
        ColumnBatchError::WrongPositions {
            len: 3,
            positions: 2
        }
    );
    assert_eq!(DROPS.load(Ordering::SeqCst), 3);

    let error = refused(2, |_| {
        vec![
            (vec![0], batch_of_counted(1, &DROPS)),
            (vec![2], batch_of_counted(1, &DROPS)),
        ]
    });
    assert_eq!(
        error,
        ColumnBatchError::PositionOutOfRange {
            position: 2,
            count: 2
        }
    );
    assert_eq!(DROPS.load(Ordering::SeqCst), 5);

    let error = refused(3, |_| {
        vec![
            (vec![0, 1], batch_of_counted(2, &DROPS)),
            (vec![1, 2], batch_of_counted(2, &DROPS)),
        ]
    });
    assert_eq!(error, ColumnBatchError::DuplicatePosition { position: 1 });
    assert_eq!(error.to_string(), "position 1 is in two batches");
    assert_eq!(DROPS.load(Ordering::SeqCst), 9);

    let error = refused(4, |_| {
        vec![
            (vec![0, 3], batch_of_counted(2, &DROPS)),
            (vec![1], batch_of_counted(1, &DROPS)),
        ]
    });
    assert_eq!(error, ColumnBatchError::MissingPosition { position: 2 });
    assert_eq!(DROPS.load(Ordering::SeqCst), 12);
}

#[test]
fn a_panicking_fill_changes_nothing() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let mut world = World::new();
    world.spawn(Position(1.0));
    let before = snapshot(&mut world);
    let result = catch_unwind(AssertUnwindSafe(|| {
        world.spawn_column_batches(2, |_| {
            let _made = batch_of_counted(2, &DROPS);
            panic!("fill failed");
        })
    }));
    assert!(result.is_err());
    assert_eq!(DROPS.load(Ordering::SeqCst), 2);
    assert_eq!(snapshot(&mut world), before);
    world.check_invariants();
}

#[test]
fn values_can_refer_to_the_entities_being_spawned() {
    #[derive(Component, Debug, PartialEq, Clone, Copy)]
    struct Next(Entity);
    let mut world = World::new();
    let entities = world
        .spawn_column_batches(3, |entities| {
            let mut batch = ColumnBatch::new(3);
            batch
                .push((0..3).map(|i| Next(entities[(i + 1) % 3])).collect())
                .unwrap();
            vec![(vec![2, 0, 1], batch)]
        })
        .unwrap();
    // Position 2 got the first value, which points at position 1.
    assert_eq!(world.get::<Next>(entities[2]), Ok(&Next(entities[1])));
    assert_eq!(world.get::<Next>(entities[0]), Ok(&Next(entities[2])));
    assert_eq!(world.get::<Next>(entities[1]), Ok(&Next(entities[0])));
}

#[derive(Default)]
struct Log(Vec<(String, Entity)>);

#[test]
fn requirements_then_observers_in_position_order() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    world.observe(|t: Trigger<OnAdd<Body>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        // Every entity has its requirement before any observer runs.
        let complete = w.get::<Mass>(e).is_ok();
        w.resource_mut::<Log>()
            .0
            .push((format!("body {complete}"), e));
    });
    world.observe(|t: Trigger<OnAdd<Position>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        w.resource_mut::<Log>().0.push(("position".into(), e));
    });
    let entities = world
        .spawn_column_batches(3, |_| {
            let mut bodies = ColumnBatch::new(2);
            bodies.push(vec![Body(1), Body(2)]).unwrap();
            let mut points = ColumnBatch::new(1);
            points.push(vec![Position(0.0)]).unwrap();
            vec![(vec![0, 2], bodies), (vec![1], points)]
        })
        .unwrap();
    assert_eq!(world.get::<Mass>(entities[2]), Ok(&Mass(0)));
    let log = std::mem::take(&mut world.resource_mut::<Log>().0);
    assert_eq!(
        log,
        vec![
            ("body true".to_owned(), entities[0]),
            ("position".to_owned(), entities[1]),
            ("body true".to_owned(), entities[2]),
        ]
    );
    world.check_invariants();
}

/// Issue 39: a batch whose components require others lands in its final
/// archetype in one move, requirements included: the spawn creates only
/// the archetype a static spawn of the same components creates (it used
/// to write the batch's archetype first, then move each entity again).
#[test]
fn requirements_are_written_in_the_same_move() {
    let mut reference = World::new();
    let before = reference.archetype_count();
    reference.spawn(Body(0));
    let static_made = reference.archetype_count() - before;

    let mut world = World::new();
    let before = world.archetype_count();
    let mut batch = ColumnBatch::new(3);
    batch.push(vec![Body(1), Body(2), Body(3)]).unwrap();
    let entities = world.spawn_column_batch(batch);
    assert_eq!(
        world.archetype_count() - before,
        static_made,
        "only the (Body, Mass) archetype, as World::spawn makes"
    );
    for (i, &e) in entities.iter().enumerate() {
        assert_eq!(world.get::<Body>(e), Ok(&Body(i as u32 + 1)));
        assert_eq!(world.get::<Mass>(e), Ok(&Mass(0)));
    }
    world.check_invariants();
}

/// A requirement whose constructor panics fails a column spawn before
/// anything is written: no entity, no archetype, each value dropped once.
#[test]
fn a_panicking_requirement_spawns_nothing() {
    #[derive(Component)]
    struct Fragile;
    impl Default for Fragile {
        fn default() -> Self {
            panic!("no Fragile")
        }
    }
    #[derive(Component)]
    #[require(Fragile)]
    struct NeedsFragile(#[allow(dead_code, reason = "counts its drop")] Counted);
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let mut world = World::new();
    let kept = world.spawn(Position(1.0));
    let mut batch = ColumnBatch::new(3);
    batch
        .push(
            counted(3, &DROPS)
                .into_iter()
                .map(NeedsFragile)
                .collect::<Vec<_>>(),
        )
        .unwrap();
    let result = catch_unwind(AssertUnwindSafe(|| world.spawn_column_batch(batch)));
    assert!(result.is_err(), "the constructor's panic goes on");
    assert_eq!(DROPS.load(Ordering::SeqCst), 3, "each value dropped once");
    assert_eq!(world.len(), 1);
    assert!(world.contains(kept));
    world.check_invariants();
    // The world still spawns.
    let e = world.spawn(Body(4));
    assert_eq!(world.get::<Mass>(e), Ok(&Mass(0)));
}

#[test]
fn spawned_columns_count_as_added() {
    let mut world = World::new();
    let mut added = world.query_filtered::<&Position, Added<Position>>();
    assert_eq!(added.iter(&world).count(), 0);
    let mut batch = ColumnBatch::new(4);
    batch.push(positions(4)).unwrap();
    world.spawn_column_batch(batch);
    assert_eq!(added.iter(&world).count(), 4);
}

/// `prepare_spawn_ids`: the next spawns get exactly the ids given, the
/// slots left out stay usable, and a world that ever had an entity (or ids
/// that repeat an index or lie far apart) is refused unchanged.
#[test]
fn prepared_ids_are_spawned_exactly() {
    let id = |generation: u64, index: u64| Entity::from_bits((generation << 32) | index).unwrap();
    let ids = [id(3, 4), id(1, 0), id(7, 2)];
    let mut world = World::new();
    assert!(world.prepare_spawn_ids(&ids));
    let spawned = world
        .spawn_column_batches(3, |_| {
            let mut batch = ColumnBatch::new(3);
            batch
                .push(vec![Position(0.0), Position(1.0), Position(2.0)])
                .unwrap();
            vec![(vec![0, 1, 2], batch)]
        })
        .unwrap();
    assert_eq!(spawned, ids);
    assert_eq!(world.get::<Position>(id(7, 2)), Ok(&Position(2.0)));
    world.check_invariants();
    // The slots left out (1 and 3), then fresh ones.
    let more: Vec<Entity> = (0..3).map(|_| world.spawn(())).collect();
    let mut indices: Vec<u32> = more.iter().map(|e| e.index()).collect();
    indices.sort_unstable();
    assert_eq!(indices, [1, 3, 5]);
    world.despawn(id(3, 4)).unwrap();
    assert!(!world.contains(id(3, 4)));
    world.check_invariants();
    // Refused: a world that had entities; repeats; ids far apart.
    assert!(!world.prepare_spawn_ids(&[id(1, 9)]));
    assert!(!World::new().prepare_spawn_ids(&[id(1, 0), id(2, 0)]));
    assert!(!World::new().prepare_spawn_ids(&[id(1, 1_000_000)]));
    let mut reserved = World::new();
    let _ = reserved.reserve_entity();
    assert!(!reserved.prepare_spawn_ids(&[id(1, 0)]));
}
