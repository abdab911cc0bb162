//! `Name` with lookup by name, and the world's memory report.

use mosaic::prelude::*;

#[derive(Component)]
struct Position(#[allow(dead_code)] [f32; 3]);

#[derive(Component)]
#[component(storage = "sparse")]
struct Mark(#[allow(dead_code)] u64);

#[test]
fn find_by_name_sees_every_named_entity() {
    let mut world = World::new();
    let a = world.spawn(Name::new("a"));
    let b1 = world.spawn((Name::new("b"), Position([0.0; 3])));
    let b2 = world.spawn(Name::from(String::from("b")));
    world.spawn(Position([1.0; 3]));
    assert_eq!(world.find_by_name("a"), Some(a));
    assert_eq!(world.entities_named("b").collect::<Vec<_>>().len(), 2);
    assert!(world.entities_named("b").all(|e| e == b1 || e == b2));
    assert_eq!(world.find_by_name("nobody"), None);
    // Disabled entities are still found (a debugging aid).
    world.insert_one(a, Disabled).unwrap();
    assert_eq!(world.find_by_name("a"), Some(a));
    // Renaming.
    world.get_mut::<Name>(a).unwrap().set("z");
    assert_eq!(world.find_by_name("a"), None);
    assert_eq!(world.find_by_name("z"), Some(a));
}

#[test]
fn the_memory_report_counts_tables_columns_and_sparse_sets() {
    let mut world = World::new();
    assert_eq!(world.memory_report().total_bytes(), 0);
    world.spawn_batch((0..1000).map(|_| Position([0.0; 3])));
    let es = world.spawn_batch((0..10).map(|i| (Position([0.0; 3]), Mark(i))));
    let report = world.memory_report();
    // The sparse `Mark` keeps its entities in the `Position` table.
    let big = report.tables().iter().find(|t| t.rows == 1010).unwrap();
    assert_eq!(big.columns.len(), 1);
    assert_eq!(big.columns[0].0, "Position");
    assert!(big.columns[0].1 >= 1010 * 12, "{report:?}");
    assert!(big.entity_bytes >= 1000 * 8);
    let marks = &report.sparse_sets()[0];
    assert_eq!((marks.component.as_str(), marks.len), ("Mark", 10));
    assert!(marks.bytes >= 10 * 8);
    // The parts add up: values, the dense entity list, the sparse index.
    assert_eq!(
        marks.bytes,
        marks.value_bytes + marks.entity_bytes + marks.index_bytes
    );
    assert!(marks.entity_bytes >= 10 * 8, "{marks:?}");
    assert!(marks.index_bytes >= 10 * 4, "{marks:?}");
    let sum: usize = report.tables().iter().map(|t| t.bytes()).sum::<usize>()
        + report.sparse_sets().iter().map(|s| s.bytes).sum::<usize>();
    assert_eq!(report.total_bytes(), sum);
    let text = report.to_string();
    assert!(text.contains("Position") && text.contains("Mark"), "{text}");
    // Growth shows.
    world.spawn_batch((0..5000).map(|_| Position([0.0; 3])));
    assert!(world.memory_report().total_bytes() > report.total_bytes());
    let _ = es;
}
