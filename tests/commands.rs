//! Integration tests for deferred commands: a standalone `CommandBuffer`
//! (`spawn` ids valid at once and usable by later commands and inside
//! components, `despawn`, `insert`, `remove`, `insert_resource`,
//! `remove_resource`, `run`, `append`), the order commands apply in, errors
//! for commands whose entity is gone (reported with their positions while
//! the rest still apply), a panicking command (the rest still apply, the
//! panic is re-raised, the buffer is reusable), recording while a query
//! borrows the world, and the world check; then the `Commands` system
//! parameter: spawning (reusing freed indices), despawning, inserting,
//! removing, and when a schedule applies the commands (after each block of
//! non-exclusive systems, before an exclusive system, in run order).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use mosaic::prelude::*;
use mosaic::{CommandError, CommandErrors};

mod common;
use common::panics::panic_text;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct A(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct B(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S(u32);
/// Points at another entity.
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Parent(Entity);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Marker;

/// A log resource, pushed to by `run` closures.
#[derive(Debug, Default, PartialEq)]
struct Log(Vec<u32>);

fn positions(errors: &CommandErrors) -> Vec<usize> {
    errors.iter().map(|(i, _)| *i).collect()
}

// ----- CommandBuffer -------------------------------------------------------------

#[test]
fn new_buffer_is_empty() {
    let world = World::new();
    let mut commands = CommandBuffer::new(&world);
    assert!(commands.is_empty());
    assert_eq!(commands.len(), 0);
    commands.spawn(A(1));
    commands.insert_resource(1u8);
    assert_eq!(commands.len(), 2);
    assert!(!commands.is_empty());
}

#[test]
fn spawn_id_is_valid_at_once_and_live_after_apply() {
    let mut world = World::new();
    let existing = world.spawn(A(0));
    let mut commands = CommandBuffer::new(&world);
    let e = commands.spawn((A(1), S(2)));
    assert_ne!(e, existing);
    assert!(!world.contains(e), "not alive before apply");
    assert!(commands.apply(&mut world).is_ok());
    assert!(world.contains(e));
    assert_eq!(world.get::<A>(e), Ok(&A(1)));
    assert_eq!(world.get::<S>(e), Ok(&S(2)));
    assert_eq!(world.len(), 2);
    assert!(commands.is_empty(), "apply drains the buffer");
    world.check_invariants();
}

#[test]
fn spawned_id_is_usable_by_later_commands_and_in_components() {
    let mut world = World::new();
    let mut commands = CommandBuffer::new(&world);
    let parent = commands.spawn(A(1));
    let child = commands.spawn((A(2), Parent(parent)));
    commands.insert(parent, (B(10), S(11)));
    commands.insert(child, Parent(parent)); // replaces with the same value
    let grandchild = commands.spawn(Parent(child));
    commands.remove::<A>(parent);
    commands.apply(&mut world).unwrap();

    assert!(world.contains(parent) && world.contains(child) && world.contains(grandchild));
    assert!(!world.has::<A>(parent));
    assert_eq!(world.get::<B>(parent), Ok(&B(10)));
    assert_eq!(world.get::<S>(parent), Ok(&S(11)));
    assert_eq!(world.get::<Parent>(child), Ok(&Parent(parent)));
    assert_eq!(world.get::<Parent>(grandchild), Ok(&Parent(child)));
    // The stored ids resolve to the right entities.
    let p = world.get::<Parent>(child).unwrap().0;
    assert_eq!(world.get::<B>(p), Ok(&B(10)));
    world.check_invariants();
}

#[test]
fn spawned_ids_are_distinct() {
    let mut world = World::new();
    world.spawn_batch((0..5).map(A));
    let mut commands = CommandBuffer::new(&world);
    let ids: Vec<Entity> = (0..100).map(|i| commands.spawn(A(100 + i))).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 100);
    commands.apply(&mut world).unwrap();
    assert_eq!(world.len(), 105);
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(world.get::<A>(e), Ok(&A(100 + i as u32)));
    }
}

#[test]
fn despawn_insert_remove() {
    let mut world = World::new();
    let a = world.spawn((A(1), B(1)));
    let b = world.spawn((A(2), S(2)));
    let c = world.spawn(A(3));
    let mut commands = CommandBuffer::new(&world);
    commands.despawn(a);
    commands.insert(b, B(20));
    commands.remove::<S>(b);
    commands.remove::<(A,)>(c);
    commands.insert(c, S(30));
    assert!(world.contains(a), "nothing applies before apply");
    commands.apply(&mut world).unwrap();
    assert!(!world.contains(a));
    assert_eq!(world.get::<B>(b), Ok(&B(20)));
    assert!(!world.has::<S>(b));
    assert_eq!(world.get::<A>(b), Ok(&A(2)));
    assert!(!world.has::<A>(c));
    assert_eq!(world.get::<S>(c), Ok(&S(30)));
    assert_eq!(world.len(), 2);
    world.check_invariants();
}

#[test]
fn resources_and_run() {
    let mut world = World::new();
    world.insert_resource(7u64);
    let mut commands = CommandBuffer::new(&world);
    commands.insert_resource(Log::default());
    commands.remove_resource::<u64>();
    commands.run(|w| w.resource_mut::<Log>().0.push(1));
    commands.run(|w| {
        let e = w.spawn(A(5));
        w.resource_mut::<Log>().0.push(e.index() + 100);
    });
    assert!(world.contains_resource::<u64>());
    assert!(!world.contains_resource::<Log>());
    commands.apply(&mut world).unwrap();
    assert!(!world.contains_resource::<u64>());
    let log = &world.resource::<Log>().0;
    assert_eq!(log.len(), 2);
    assert_eq!(log[0], 1);
    assert_eq!(world.len(), 1);
}

#[test]
fn commands_apply_in_the_order_issued() {
    let mut world = World::new();
    world.insert_resource(Log(vec![99]));
    let e = world.spawn(A(0));
    let mut commands = CommandBuffer::new(&world);
    // A push before the resource is replaced is lost; after, it is kept.
    commands.run(|w| w.resource_mut::<Log>().0.push(0));
    commands.insert_resource(Log::default());
    for i in 1..=5 {
        commands.run(move |w| w.resource_mut::<Log>().0.push(i));
    }
    // insert, remove, insert again: only the last one is visible.
    commands.insert(e, B(1));
    commands.remove::<B>(e);
    commands.insert(e, B(2));
    // remove, insert: present; insert, remove: absent.
    commands.remove::<A>(e);
    commands.insert(e, A(3));
    commands.insert(e, S(4));
    commands.remove::<S>(e);
    // Each run sees the state the earlier commands left.
    commands.run(move |w| {
        let b = w.get::<B>(e).unwrap().0;
        w.resource_mut::<Log>().0.push(10 + b);
    });
    commands.apply(&mut world).unwrap();
    assert_eq!(world.resource::<Log>().0, [1, 2, 3, 4, 5, 12]);
    assert_eq!(world.get::<B>(e), Ok(&B(2)));
    assert_eq!(world.get::<A>(e), Ok(&A(3)));
    assert!(!world.has::<S>(e));
}

#[test]
fn despawn_then_insert_of_spawned_entity_fails_in_order() {
    let mut world = World::new();
    let mut commands = CommandBuffer::new(&world);
    let e = commands.spawn(A(1));
    commands.despawn(e);
    commands.insert(e, B(2)); // gone by then
    let errors = commands.apply(&mut world).unwrap_err();
    assert_eq!(positions(&errors), [2]);
    assert!(!world.contains(e));
    assert!(world.is_empty());
}

#[test]
fn a_command_on_a_gone_entity_is_reported_and_the_rest_apply() {
    let mut world = World::new();
    let gone = world.spawn(A(0));
    let kept = world.spawn(A(1));
    world.despawn(gone).unwrap();
    let doomed = world.spawn(A(2));
    world.insert_resource(Log::default());

    let mut commands = CommandBuffer::new(&world);
    commands.insert(gone, B(0)); // 0: fails
    commands.insert(kept, B(1)); // 1
    commands.despawn(doomed); // 2
    commands.remove::<A>(doomed); // 3: fails (gone by then)
    let fresh = commands.spawn(A(9)); // 4
    commands.despawn(gone); // 5: fails
    commands.remove::<B>(fresh); // 6: fails (no B)
    commands.run(|w| w.resource_mut::<Log>().0.push(7)); // 7
    commands.insert_resource(5u8); // 8

    let errors = commands.apply(&mut world).unwrap_err();
    assert_eq!(errors.len(), 4);
    assert_eq!(positions(&errors), [0, 3, 5, 6]);
    let errs: Vec<&CommandError> = errors.iter().map(|(_, e)| e).collect();
    assert_eq!(
        errs[0],
        &CommandError::Entity(EntityError::NoSuchEntity(gone))
    );
    assert_eq!(
        errs[1],
        &CommandError::Component(ComponentError::NoSuchEntity(doomed))
    );
    assert_eq!(
        errs[2],
        &CommandError::Entity(EntityError::NoSuchEntity(gone))
    );
    assert!(matches!(
        errs[3],
        CommandError::Component(ComponentError::MissingComponent { entity, component })
            if *entity == fresh && component == "B"
    ));
    let text = errors.to_string();
    assert!(text.starts_with("4 command(s) could not apply:"), "{text}");
    assert!(
        text.contains("[command 0]") && text.contains("[command 6]"),
        "{text}"
    );

    // The others applied.
    assert_eq!(world.get::<B>(kept), Ok(&B(1)));
    assert!(!world.contains(doomed));
    assert_eq!(world.get::<A>(fresh), Ok(&A(9)));
    assert_eq!(world.resource::<Log>().0, [7]);
    assert_eq!(*world.resource::<u8>(), 5);
    world.check_invariants();
}

#[test]
fn a_panicking_command_does_not_lose_the_rest() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let e = world.spawn(A(1));
    let mut commands = CommandBuffer::new(&world);
    commands.run(|w| w.resource_mut::<Log>().0.push(1));
    commands.run(|_| panic!("boom in a command"));
    commands.run(|w| w.resource_mut::<Log>().0.push(3));
    commands.insert(e, B(3));
    let spawned = commands.spawn(A(4));
    commands.run(|_| panic!("second boom"));
    commands.insert_resource(6u16);

    let result = catch_unwind(AssertUnwindSafe(|| commands.apply(&mut world)));
    let payload = result.expect_err("the panic is re-raised");
    assert!(
        panic_text(&*payload).contains("boom in a command"),
        "the first panic is re-raised: {}",
        panic_text(&*payload)
    );
    assert_eq!(world.resource::<Log>().0, [1, 3]);
    assert_eq!(world.get::<B>(e), Ok(&B(3)));
    assert_eq!(world.get::<A>(spawned), Ok(&A(4)));
    assert_eq!(*world.resource::<u16>(), 6);
    world.check_invariants();

    // The buffer is empty and reusable.
    assert!(commands.is_empty());
    commands.run(|w| w.resource_mut::<Log>().0.push(9));
    let again = commands.spawn(B(9));
    assert!(commands.apply(&mut world).is_ok());
    assert_eq!(world.resource::<Log>().0, [1, 3, 9]);
    assert_eq!(world.get::<B>(again), Ok(&B(9)));
}

#[test]
fn buffer_is_reusable_after_errors() {
    let mut world = World::new();
    let e = world.spawn(());
    let mut commands = CommandBuffer::new(&world);
    commands.despawn(e);
    commands.despawn(e);
    assert_eq!(positions(&commands.apply(&mut world).unwrap_err()), [1]);
    assert!(commands.is_empty());
    let f = commands.spawn(A(1));
    assert!(commands.apply(&mut world).is_ok());
    assert!(world.has::<A>(f));
    // Applying an empty buffer is fine.
    assert!(commands.apply(&mut world).is_ok());
}

#[test]
fn record_while_a_query_borrows_the_world() {
    let mut world = World::new();
    let es = world.spawn_batch((0..10).map(A));
    let mut commands = CommandBuffer::new(&world);
    let mut q = world.query::<(Entity, &mut A)>();
    let mut spawned = Vec::new();
    for (e, a) in q.iter_mut(&mut world) {
        a.0 += 100;
        if a.0 % 2 == 0 {
            spawned.push((commands.spawn((B(a.0), Parent(e))), e));
            commands.insert(e, Marker);
        } else {
            commands.despawn(e);
        }
    }
    assert_eq!(world.len(), 10, "nothing applied during the loop");
    commands.apply(&mut world).unwrap();
    assert_eq!(world.len(), 10); // 5 despawned, 5 spawned
    for &(child, parent) in &spawned {
        assert_eq!(world.get::<Parent>(child), Ok(&Parent(parent)));
        let pa = world.get::<A>(parent).unwrap().0;
        assert_eq!(world.get::<B>(child), Ok(&B(pa)));
        assert!(world.has::<Marker>(parent));
    }
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(world.contains(e), i % 2 == 0);
    }
    world.check_invariants();
}

#[test]
fn standalone_buffer_takes_never_used_indices() {
    let mut world = World::new();
    let e = world.spawn(());
    world.despawn(e).unwrap();
    let mut commands = CommandBuffer::new(&world);
    let fresh = commands.spawn(A(1));
    assert_ne!(fresh.index(), e.index());
    commands.apply(&mut world).unwrap();
    assert!(world.has::<A>(fresh));
}

#[test]
fn spawning_with_world_changes_in_between() {
    // The world spawns and despawns between recording and applying; the
    // buffer's ids stay unique and valid.
    let mut world = World::new();
    let mut commands = CommandBuffer::new(&world);
    let c1 = commands.spawn(A(1));
    let w1 = world.spawn(A(100));
    let c2 = commands.spawn(A(2));
    world.despawn(w1).unwrap();
    let w2 = world.spawn(A(200));
    commands.apply(&mut world).unwrap();
    let all = [c1, c2, w2];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_eq!(world.get::<A>(c1), Ok(&A(1)));
    assert_eq!(world.get::<A>(c2), Ok(&A(2)));
    assert_eq!(world.get::<A>(w2), Ok(&A(200)));
    assert_eq!(world.len(), 3);
    world.check_invariants();
}

#[test]
fn append_moves_commands_in_order() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut first = CommandBuffer::new(&world);
    let mut second = CommandBuffer::new(&world);
    first.run(|w| w.resource_mut::<Log>().0.push(1));
    second.run(|w| w.resource_mut::<Log>().0.push(2));
    let e = second.spawn(A(2));
    first.append(&mut second);
    assert_eq!((first.len(), second.len()), (3, 0));
    first.apply(&mut world).unwrap();
    assert_eq!(world.resource::<Log>().0, [1, 2]);
    assert!(world.has::<A>(e));
}

#[test]
#[should_panic(expected = "command buffers belong to different worlds")]
fn append_across_worlds_panics() {
    let w1 = World::new();
    let w2 = World::new();
    let mut a = CommandBuffer::new(&w1);
    let mut b = CommandBuffer::new(&w2);
    a.append(&mut b);
}

#[test]
#[should_panic(expected = "command buffer made for world")]
fn applying_to_another_world_panics() {
    let world = World::new();
    let mut other = World::new();
    let mut commands = CommandBuffer::new(&world);
    commands.spawn(A(1));
    let _ = commands.apply(&mut other);
}

#[test]
fn applying_to_another_world_changes_nothing() {
    let world = World::new();
    let mut other = World::new();
    other.insert_resource(Log::default());
    let mut commands = CommandBuffer::new(&world);
    commands.run(|w| w.resource_mut::<Log>().0.push(1));
    commands.spawn(A(1));
    let result = catch_unwind(AssertUnwindSafe(|| commands.apply(&mut other)));
    assert!(result.is_err());
    assert!(other.resource::<Log>().0.is_empty());
    assert!(other.is_empty());
}

// ----- Commands in systems -------------------------------------------------------

#[test]
fn commands_param_spawn_despawn_insert_remove() {
    let mut world = World::new();
    let victim = world.spawn(A(1));
    let target = world.spawn((A(2), B(2)));
    let spawned = world.run_system_once(move |mut commands: Commands| {
        commands.despawn(victim);
        commands.insert(target, S(3));
        commands.remove::<B>(target);
        let e = commands.spawn((A(4), Marker));
        commands.insert(e, Parent(target));
        commands.insert_resource(Log(vec![1]));
        commands.run(move |w| {
            let n = w.len() as u32;
            w.resource_mut::<Log>().0.push(n);
        });
        e
    });
    assert!(!world.contains(victim));
    assert_eq!(world.get::<S>(target), Ok(&S(3)));
    assert!(!world.has::<B>(target));
    assert_eq!(world.get::<A>(spawned), Ok(&A(4)));
    assert_eq!(world.get::<Parent>(spawned), Ok(&Parent(target)));
    assert!(world.has::<Marker>(spawned));
    assert_eq!(world.resource::<Log>().0, [1, 2]);
    world.check_invariants();
}

#[test]
fn commands_param_remove_resource() {
    let mut world = World::new();
    world.insert_resource(5u8);
    world.run_system_once(|mut commands: Commands| commands.remove_resource::<u8>());
    assert!(!world.contains_resource::<u8>());
}

#[test]
fn commands_spawn_reuses_freed_indices() {
    let mut world = World::new();
    let a = world.spawn(A(1));
    let b = world.spawn(A(2));
    world.despawn(a).unwrap();
    let e = world.run_system_once(|mut commands: Commands| commands.spawn(B(1)));
    assert_eq!(e.index(), a.index(), "a freed index is reused");
    assert_ne!(e, a, "with a new generation");
    assert!(!world.contains(a));
    assert!(world.contains(b));
    assert_eq!(world.get::<B>(e), Ok(&B(1)));
    // With no freed index left, a new one.
    let f = world.run_system_once(|mut commands: Commands| commands.spawn(B(2)));
    assert!(f.index() != a.index() && f.index() != b.index());
    world.check_invariants();
}

#[test]
fn commands_spawn_many_reuses_each_freed_index_once() {
    let mut world = World::new();
    let es = world.spawn_batch((0..10).map(A));
    for &e in &es[..5] {
        world.despawn(e).unwrap();
    }
    let spawned = world.run_system_once(|mut commands: Commands| {
        (0..8).map(|i| commands.spawn(B(i))).collect::<Vec<_>>()
    });
    let mut indices: Vec<u32> = spawned.iter().map(|e| e.index()).collect();
    indices.sort();
    indices.dedup();
    assert_eq!(indices.len(), 8, "unique ids");
    let reused = spawned
        .iter()
        .filter(|e| es[..5].iter().any(|d| d.index() == e.index()))
        .count();
    assert_eq!(reused, 5);
    for (i, &e) in spawned.iter().enumerate() {
        assert_eq!(world.get::<B>(e), Ok(&B(i as u32)));
    }
    assert_eq!(world.len(), 13);
    world.check_invariants();
}

/// Records how many `Marker` entities a system saw, per run.
type Seen = Arc<Mutex<Vec<(&'static str, usize)>>>;

fn observer(
    name: &'static str,
    seen: &Seen,
) -> impl FnMut(Query<&Marker>) + Send + 'static + use<> {
    let seen = seen.clone();
    move |q: Query<&Marker>| seen.lock().unwrap().push((name, q.iter().count()))
}

fn spawn_once(mut commands: Commands, mut done: Local<bool>) {
    if !*done {
        *done = true;
        commands.spawn((Marker, A(1)));
    }
}

fn take(seen: &Seen) -> Vec<(&'static str, usize)> {
    std::mem::take(&mut *seen.lock().unwrap())
}

#[test]
fn commands_apply_at_the_sync_point_not_during_the_block() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let seen: Seen = Arc::default();
        let mut world = World::new();
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("spawn", spawn_once);
        // Without the sync point `after` would bring (issue #39, item 16).
        schedule
            .add_system("after_spawn", observer("after", &seen))
            .after_ignore_deferred("spawn");
        schedule.run(&mut world);
        assert_eq!(
            take(&seen),
            [("after", 0)],
            "{kind:?}: same run, not applied yet"
        );
        assert_eq!(
            world.run_system_once(|q: Query<&Marker>| q.iter().count()),
            1,
            "{kind:?}: applied at the end of the run"
        );
        schedule.run(&mut world);
        assert_eq!(take(&seen), [("after", 1)], "{kind:?}: next run sees it");
    }
}

#[test]
fn exclusive_system_after_commands_sees_them_applied() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let seen: Seen = Arc::default();
        let mut world = World::new();
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("spawn", spawn_once);
        schedule
            .add_system("in_block", observer("in_block", &seen))
            .after_ignore_deferred("spawn");
        let seen_ex = seen.clone();
        schedule
            .add_system("exclusive", move |world: &mut World| {
                let mut q = world.query::<&Marker>();
                let n = q.iter(world).count();
                seen_ex.lock().unwrap().push(("exclusive", n));
            })
            .after("in_block");
        schedule
            .add_system("after_exclusive", observer("after_exclusive", &seen))
            .after("exclusive");
        schedule.run(&mut world);
        assert_eq!(
            take(&seen),
            [("in_block", 0), ("exclusive", 1), ("after_exclusive", 1)],
            "{kind:?}"
        );
    }
}

#[test]
fn exclusive_system_commands_issued_by_the_system_before_it() {
    // The exclusive system can read components inserted by commands of the
    // block before it.
    let mut world = World::new();
    let e = world.spawn(A(1));
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_system("tag", move |mut commands: Commands| {
        commands.insert(e, B(7));
        commands.despawn(e);
        commands.spawn(B(8));
    });
    schedule
        .add_system("read", move |world: &mut World| {
            let alive = world.contains(e) as u32;
            let mut q = world.query::<&B>();
            let bs: u32 = q.iter(world).map(|b| b.0).sum();
            world.resource_mut::<Log>().0.extend([alive, bs]);
        })
        .after("tag");
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, [0, 8]);
}

#[test]
fn commands_of_a_block_apply_in_run_order() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = World::new();
        world.insert_resource(Log::default());
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        // No access conflict: under the parallel executor they may overlap;
        // their commands still apply in run order (b, c, a: the lowest
        // insertion index first whenever the orderings leave a choice).
        schedule
            .add_system("a", |mut commands: Commands| {
                commands.run(|w| w.resource_mut::<Log>().0.push(1));
            })
            .after("c");
        schedule.add_system("b", |mut commands: Commands| {
            commands.run(|w| w.resource_mut::<Log>().0.push(2));
            commands.run(|w| w.resource_mut::<Log>().0.push(3));
        });
        schedule.add_system("c", |mut commands: Commands| {
            commands.run(|w| w.resource_mut::<Log>().0.push(0));
        });
        assert_eq!(schedule.system_names(), ["b", "c", "a"]);
        for _ in 0..20 {
            schedule.run(&mut world);
        }
        let log = &world.resource::<Log>().0;
        assert_eq!(log.len(), 80);
        for chunk in log.chunks(4) {
            assert_eq!(chunk, [2, 3, 0, 1], "{kind:?}");
        }
    }
}

#[test]
fn a_failing_command_in_a_system_does_not_stop_the_others() {
    let mut world = World::new();
    let e = world.spawn(A(1));
    world.despawn(e).unwrap();
    let mut schedule = Schedule::new();
    schedule.add_system("bad", move |mut commands: Commands| {
        commands.insert(e, B(1)); // entity gone: reported, skipped
        commands.insert_resource(1u32);
    });
    schedule.add_system("good", |mut commands: Commands| {
        commands.spawn(B(2));
    });
    schedule.run(&mut world);
    assert_eq!(*world.resource::<u32>(), 1);
    assert_eq!(
        world.run_system_once(|q: Query<&B>| q.iter().map(|b| b.0).collect::<Vec<_>>()),
        [2]
    );
}

#[test]
fn systems_spawning_every_run_accumulate() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let seen: Seen = Arc::default();
        let mut world = World::new();
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("spawn", |mut commands: Commands| {
            commands.spawn(Marker);
        });
        schedule
            .add_system("count", observer("count", &seen))
            .before("spawn");
        for _ in 0..5 {
            schedule.run(&mut world);
        }
        let counts: Vec<usize> = take(&seen).into_iter().map(|(_, n)| n).collect();
        assert_eq!(counts, [0, 1, 2, 3, 4], "{kind:?}");
        assert_eq!(world.len(), 5);
    }
}

#[test]
fn despawn_through_commands_in_a_loop_over_the_query() {
    let mut world = World::new();
    world.spawn_batch((0..100).map(A));
    world.run_system_once(|mut commands: Commands, q: Query<(Entity, &A)>| {
        for (e, a) in q.iter() {
            if a.0 % 3 == 0 {
                commands.despawn(e);
            } else {
                commands.insert(e, B(a.0 * 2));
            }
        }
    });
    assert_eq!(world.len(), 66);
    let ok = world.run_system_once(|q: Query<(&A, &B)>| q.iter().all(|(a, b)| b.0 == a.0 * 2));
    assert!(ok);
    assert_eq!(
        world.run_system_once(|q: Query<&A, Without<B>>| q.iter().count()),
        0
    );
    world.check_invariants();
}

#[test]
fn a_panicking_command_in_a_schedule_names_the_system() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.set_executor(ExecutorKind::SingleThreaded);
    schedule.add_system("faulty", |mut commands: Commands, mut runs: Local<u32>| {
        *runs += 1;
        commands.run(|w| w.resource_mut::<Log>().0.push(1));
        if *runs == 1 {
            commands.run(|_| panic!("bad command"));
        }
        commands.run(|w| w.resource_mut::<Log>().0.push(2));
    });
    schedule.add_system("steady", |mut commands: Commands| {
        commands.spawn(Marker);
    });
    let payload = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    let msg = panic_text(&*payload);
    assert!(
        msg.contains("faulty") && msg.contains("bad command"),
        "{msg}"
    );
    // The rest of the panicking buffer applied.
    assert_eq!(world.resource::<Log>().0, [1, 2]);
    // The schedule keeps working, and no command is lost: by the end of the
    // next run every spawn recorded so far has applied.
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().0, [1, 2, 1, 2]);
    assert_eq!(
        world.run_system_once(|q: Query<&Marker>| q.iter().count()),
        2
    );
}

#[test]
fn a_panicking_command_in_run_system_once_names_the_system() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    fn faulty_once(mut commands: Commands) {
        commands.run(|_| panic!("bad command"));
        commands.run(|w| w.resource_mut::<Log>().0.push(5));
    }
    let payload =
        catch_unwind(AssertUnwindSafe(|| world.run_system_once(faulty_once))).unwrap_err();
    let msg = panic_text(&*payload);
    assert!(
        msg.contains("faulty_once") && msg.contains("bad command"),
        "{msg}"
    );
    assert_eq!(world.resource::<Log>().0, [5]);
}

// ----- spawn commands dropped unapplied -----------------------------------------------

/// A buffer dropped unapplied gives its spawn ids up: they never come to
/// life, their handles stay stale, and their slots come back under newer
/// generations (never as the old handles). Other commands' entities and
/// `World::reserve_entity` ids are unaffected.
#[test]
fn a_dropped_buffer_spawns_nothing() {
    let mut world = World::new();
    let reserved = world.reserve_entity();
    let mut commands = CommandBuffer::new(&world);
    let a = commands.spawn(A(1));
    let b = commands.spawn(());
    let mut other = CommandBuffer::new(&world);
    let kept = other.spawn(A(2));
    drop(commands);
    let probe = world.spawn(B(0));
    assert!(
        world.contains(reserved),
        "a plain reservation comes to life"
    );
    assert!(!world.contains(a) && !world.contains(b));
    assert!(
        !world.contains(kept),
        "held, not alive (not even empty), until its buffer applies"
    );
    other.apply(&mut world).unwrap();
    assert_eq!(world.get::<A>(kept), Ok(&A(2)));
    assert_eq!(world.len(), 3, "reserved, probe, kept");
    let fresh: Vec<Entity> = (0..2).map(|_| world.spawn(())).collect();
    for e in [a, b] {
        assert!(!fresh.contains(&e) && probe != e && !world.contains(e));
        let reused = fresh.iter().chain([&probe]);
        let reused = reused
            .filter(|f| f.index() == e.index())
            .collect::<Vec<_>>();
        assert_eq!(reused.len(), 1, "{e:?}'s slot is reused once");
        assert_eq!(reused[0].generation(), e.generation() + 1);
    }
    world.check_invariants();
}

/// An appended buffer's spawn ids go with its commands: given up if the
/// buffer they moved to is dropped, kept if it is applied.
#[test]
fn appended_spawns_follow_their_commands() {
    let mut world = World::new();
    let mut a = CommandBuffer::new(&world);
    let mut b = CommandBuffer::new(&world);
    let e = b.spawn(A(1));
    a.append(&mut b);
    drop(b); // empty now: gives nothing up
    a.apply(&mut world).unwrap();
    assert_eq!(world.get::<A>(e), Ok(&A(1)));
    let mut c = CommandBuffer::new(&world);
    let mut d = CommandBuffer::new(&world);
    let f = d.spawn(A(2));
    c.append(&mut d);
    drop(c);
    d.apply(&mut world).unwrap();
    world.spawn(());
    assert!(!world.contains(f));
    assert_eq!(world.len(), 2);
    world.check_invariants();
}

/// A spawn command's id does not come to life at a structural change in
/// between (issue 39: it is held, reserved but not live, until the
/// command places the entity whole); dropped then, it leaves nothing, and
/// its slot comes back under a newer generation.
#[test]
fn a_spawn_dropped_after_a_structural_change_leaves_nothing() {
    let mut world = World::new();
    let mut commands = CommandBuffer::new(&world);
    let e = commands.spawn(A(1));
    world.spawn(());
    assert!(!world.contains(e), "held, not alive and empty");
    world.check_invariants();
    drop(commands);
    let reused = world.spawn(());
    assert!(!world.contains(e));
    assert_eq!(world.len(), 2);
    assert_eq!(reused.index(), e.index());
    assert_eq!(reused.generation(), e.generation() + 1);
    world.check_invariants();
}

/// A system that panics after spawning through `Commands`: its commands
/// are dropped with it, and the id it reserved (a freed index reused) never
/// comes to life.
#[test]
fn a_panicking_system_spawns_nothing() {
    let mut world = World::new();
    let gone = world.spawn(());
    world.despawn(gone).unwrap();
    let spawned = Arc::new(Mutex::new(None));
    let sink = Arc::clone(&spawned);
    let result = catch_unwind(AssertUnwindSafe(|| {
        world.run_system_once(move |mut commands: Commands| {
            *sink.lock().unwrap() = Some(commands.spawn(A(1)));
            panic!("system failed");
        })
    }));
    assert!(result.is_err());
    let e = spawned.lock().unwrap().unwrap();
    assert_eq!(e.index(), gone.index());
    let probe = world.spawn(());
    assert!(!world.contains(e));
    assert_eq!(world.len(), 1);
    assert_eq!(probe.index(), e.index(), "the slot is free again");
    assert!(probe.generation() > e.generation());
    world.check_invariants();
}
