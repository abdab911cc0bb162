//! Integration tests for observers, lifecycle events and component hooks.
//!
//! User events: `observe` + `trigger` (registration order, event data,
//! per-observer state), `trigger_for` + `observe_entity` targeting,
//! `remove_observer`. Lifecycle events with the right entity, data and
//! order for `spawn`, `spawn_batch`, `insert` (OnAdd only when new, OnInsert
//! always), `remove` (OnRemove while the value is still there, before it is
//! dropped), `despawn` (one OnRemove per component, sparse ones included,
//! then OnDespawn), `clear`, and for commands (`CommandBuffer::apply` and
//! the `Commands` system parameter). The readable `LifecycleEvent` through
//! `world.event_cursor` and `EventReader` in a system. Observers that spawn
//! and despawn through `DeferredWorld::commands` (applied right after the
//! triggering operation; cascades breadth-first, in rounds); a cascade that
//! never ends panics with the `MAX_OBSERVER_ROUNDS` message. Hooks declared
//! with the derive attribute and with `register_component_hooks`, and their
//! order against observers (hooks first). Panicking hooks and observers
//! leave the world consistent (`check_invariants`), the entity fully there
//! or fully gone, and every value dropped exactly once.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::prelude::*;
use mosaic::{LifecycleEvent, LifecycleKind, MAX_OBSERVER_ROUNDS};

mod common;
use common::panics::panic_text;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct A(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct B(u32);
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S(u32);

/// Counts how many values sharing the counter were dropped.
#[derive(Debug, Clone, Default)]
struct Drops(Arc<AtomicUsize>);

impl Drops {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
    fn counted(&self, value: u32) -> Counted {
        Counted(self.clone(), value)
    }
}

/// A value that bumps its `Drops` when dropped.
#[derive(Debug)]
struct Counted(Drops, u32);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A table component that counts its drops.
#[derive(Component, Debug)]
struct T1(Counted);
/// A sparse component that counts its drops.
#[derive(Component, Debug)]
#[component(storage = "sparse")]
struct S1(Counted);

/// What observers and hooks saw, in order.
#[derive(Debug, Default)]
struct Log(Vec<(String, Entity)>);

fn log_world() -> World {
    let mut world = World::new();
    world.insert_resource(Log::default());
    world
}

fn push(w: &mut DeferredWorld, what: impl Into<String>, e: Entity) {
    w.resource_mut::<Log>().0.push((what.into(), e));
}

fn log(world: &World) -> Vec<(String, Entity)> {
    world.resource::<Log>().0.clone()
}

fn take_log(world: &mut World) -> Vec<(String, Entity)> {
    std::mem::take(&mut world.resource_mut::<Log>().0)
}

fn entries(list: &[(&str, Entity)]) -> Vec<(String, Entity)> {
    list.iter().map(|&(s, e)| (s.to_owned(), e)).collect()
}

/// Logs `add NAME`, `insert NAME` and `remove NAME` for component `C`.
fn log_component<C: Component>(world: &mut World, name: &'static str) {
    world.observe(move |t: Trigger<OnAdd<C>>, mut w: DeferredWorld| {
        push(&mut w, format!("add {name}"), t.entity().unwrap())
    });
    world.observe(move |t: Trigger<OnInsert<C>>, mut w: DeferredWorld| {
        push(&mut w, format!("insert {name}"), t.entity().unwrap())
    });
    world.observe(move |t: Trigger<OnRemove<C>>, mut w: DeferredWorld| {
        push(&mut w, format!("remove {name}"), t.entity().unwrap())
    });
}

/// Logs `spawn` and `despawn`.
fn log_entities(world: &mut World) {
    world.observe(|t: Trigger<OnSpawn>, mut w: DeferredWorld| {
        push(&mut w, "spawn", t.entity().unwrap())
    });
    world.observe(|t: Trigger<OnDespawn>, mut w: DeferredWorld| {
        push(&mut w, "despawn", t.entity().unwrap())
    });
}

/// A world logging the lifecycle of A, B, S and of entities.
fn lifecycle_world() -> World {
    let mut world = log_world();
    log_entities(&mut world);
    log_component::<A>(&mut world, "A");
    log_component::<B>(&mut world, "B");
    log_component::<S>(&mut world, "S");
    world
}

/// An entity id no test spawns, for log entries without an entity.
fn nobody() -> Entity {
    Entity::from_bits((1 << 32) | 0x00FF_FFFF).unwrap()
}

// ----- user events ------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
struct Ping(u32);

#[test]
fn trigger_runs_every_observer_in_registration_order_with_the_event() {
    let mut world = log_world();
    let nobody = nobody();
    for i in 0..3 {
        world.observe(move |t: Trigger<Ping>, mut w: DeferredWorld| {
            assert_eq!(t.entity(), None);
            push(&mut w, format!("obs{i} got {}", t.event().0), nobody);
        });
    }
    // Another event type is not disturbed.
    world.observe(move |_: Trigger<u64>, mut w: DeferredWorld| push(&mut w, "u64", nobody));
    world.trigger(Ping(7));
    world.trigger(Ping(8));
    let got: Vec<String> = log(&world).into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        got,
        [
            "obs0 got 7",
            "obs1 got 7",
            "obs2 got 7",
            "obs0 got 8",
            "obs1 got 8",
            "obs2 got 8"
        ]
    );
    // Triggering an event nobody observes does nothing.
    world.trigger(9u16);
}

#[test]
fn observers_keep_their_own_state() {
    let mut world = World::new();
    world.insert_resource(Vec::<u32>::new());
    let mut calls = 0;
    world.observe(move |t: Trigger<Ping>, mut w: DeferredWorld| {
        calls += 1;
        let v = calls * 100 + t.event().0;
        w.resource_mut::<Vec<u32>>().push(v);
    });
    world.trigger(Ping(1));
    world.trigger(Ping(2));
    assert_eq!(*world.resource::<Vec<u32>>(), [101, 202]);
}

#[test]
fn trigger_for_reaches_global_and_entity_observers() {
    let mut world = log_world();
    let e = world.spawn(());
    let f = world.spawn(());
    world.observe(|t: Trigger<Ping>, mut w: DeferredWorld| {
        let what = format!("global {}", t.event().0);
        let target = t.entity().unwrap_or(nobody());
        push(&mut w, what, target)
    });
    world.observe_entity(e, |t: Trigger<Ping>, mut w: DeferredWorld| {
        assert!(t.entity().is_some());
        push(&mut w, format!("on e {}", t.event().0), t.entity().unwrap())
    });
    world.observe_entity(f, |t: Trigger<Ping>, mut w: DeferredWorld| {
        push(&mut w, format!("on f {}", t.event().0), t.entity().unwrap())
    });
    world.trigger_for(e, Ping(1));
    assert_eq!(log(&world), entries(&[("global 1", e), ("on e 1", e)]));
    take_log(&mut world);
    world.trigger_for(f, Ping(2));
    assert_eq!(log(&world), entries(&[("global 2", f), ("on f 2", f)]));
    take_log(&mut world);
    // Untargeted: entity observers do not run.
    world.trigger(Ping(3));
    assert_eq!(log(&world), entries(&[("global 3", nobody())]));
}

#[test]
fn entity_observers_interleave_with_global_ones_in_registration_order() {
    let mut world = log_world();
    let e = world.spawn(());
    world.observe(|t: Trigger<Ping>, mut w: DeferredWorld| push(&mut w, "g1", t.entity().unwrap()));
    world.observe_entity(e, |t: Trigger<Ping>, mut w: DeferredWorld| {
        push(&mut w, "e1", t.entity().unwrap())
    });
    world.observe(|t: Trigger<Ping>, mut w: DeferredWorld| push(&mut w, "g2", t.entity().unwrap()));
    world.trigger_for(e, Ping(0));
    assert_eq!(log(&world), entries(&[("g1", e), ("e1", e), ("g2", e)]));
}

#[test]
fn remove_observer_stops_only_that_observer() {
    let mut world = log_world();
    let nobody = nobody();
    let ids: Vec<_> = (0..3)
        .map(|i| {
            world.observe(move |_: Trigger<Ping>, mut w: DeferredWorld| {
                push(&mut w, format!("obs{i}"), nobody)
            })
        })
        .collect();
    let other =
        world.observe(move |_: Trigger<u64>, mut w: DeferredWorld| push(&mut w, "u64", nobody));
    assert!(world.remove_observer(ids[1]));
    assert!(!world.remove_observer(ids[1]), "already gone");
    world.trigger(Ping(0));
    world.trigger(5u64);
    let got: Vec<String> = log(&world).into_iter().map(|(s, _)| s).collect();
    assert_eq!(got, ["obs0", "obs2", "u64"]);
    assert!(world.remove_observer(other));
    assert!(world.remove_observer(ids[0]));
    assert!(world.remove_observer(ids[2]));
    take_log(&mut world);
    world.trigger(Ping(0));
    world.trigger(5u64);
    assert!(log(&world).is_empty());
    // Lifecycle observers can be removed too.
    let id = world.observe(|t: Trigger<OnAdd<A>>, mut w: DeferredWorld| {
        push(&mut w, "add A", t.entity().unwrap())
    });
    let e = world.spawn(A(1));
    assert_eq!(log(&world), entries(&[("add A", e)]));
    assert!(world.remove_observer(id));
    world.spawn(A(2));
    assert_eq!(log(&world).len(), 1);
}

#[test]
fn commands_issued_by_a_triggered_observer_apply_before_trigger_returns() {
    let mut world = World::new();
    world.observe(|t: Trigger<Ping>, mut w: DeferredWorld| {
        for i in 0..t.event().0 {
            w.commands().spawn(A(i));
        }
    });
    world.trigger(Ping(3));
    assert_eq!(world.len(), 3);
    let mut q = world.query::<&A>();
    let mut values: Vec<u32> = q.iter(&world).map(|a| a.0).collect();
    values.sort();
    assert_eq!(values, [0, 1, 2]);
    world.check_invariants();
}

// ----- lifecycle events -------------------------------------------------------

#[test]
fn spawn_announces_spawn_then_adds_then_inserts() {
    let mut world = lifecycle_world();
    // Observers see the entity complete, with the values just written.
    world.observe(|t: Trigger<OnAdd<A>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let a = w.get::<A>(e).unwrap().0;
        let b = w.get::<B>(e).unwrap().0;
        let s = w.get::<S>(e).unwrap().0;
        push(&mut w, format!("values {a} {b} {s}"), e);
    });
    let e = world.spawn((A(1), B(2), S(3)));
    assert_eq!(
        log(&world),
        entries(&[
            ("spawn", e),
            ("add A", e),
            ("values 1 2 3", e),
            ("add B", e),
            ("add S", e),
            ("insert A", e),
            ("insert B", e),
            ("insert S", e),
        ])
    );
    // The bundle's order decides the order of the announcements.
    take_log(&mut world);
    let f = world.spawn((S(0), B(0)));
    assert_eq!(
        log(&world),
        entries(&[
            ("spawn", f),
            ("add S", f),
            ("add B", f),
            ("insert S", f),
            ("insert B", f)
        ])
    );
    // An empty spawn announces the spawn only.
    take_log(&mut world);
    let g = world.spawn(());
    assert_eq!(log(&world), entries(&[("spawn", g)]));
}

#[test]
fn spawn_batch_announces_each_entity_in_order() {
    let mut world = lifecycle_world();
    let es = world.spawn_batch((0..4).map(|i| (A(i), S(i))));
    let mut expected = Vec::new();
    for &e in &es {
        expected.extend(entries(&[
            ("spawn", e),
            ("add A", e),
            ("add S", e),
            ("insert A", e),
            ("insert S", e),
        ]));
    }
    assert_eq!(log(&world), expected);
    world.check_invariants();
}

/// `World::extend` runs the same lifecycle as `spawn_batch`, in the same
/// order, for entities appended after rows the table already had.
#[test]
fn extend_announces_each_entity_like_spawn_batch() {
    let mut batch_world = lifecycle_world();
    let mut extend_world = lifecycle_world();
    for world in [&mut batch_world, &mut extend_world] {
        world.spawn((A(100), S(100)));
        take_log(world);
    }
    let es = batch_world.spawn_batch((0..4).map(|i| (A(i), S(i))));
    extend_world.extend((0..4).map(|i| (A(i), S(i))));
    assert_eq!(es.len(), 4);
    assert_eq!(log(&extend_world), log(&batch_world));
    assert_eq!(log(&extend_world).len(), 4 * 5);
    for &e in &es {
        assert_eq!(
            extend_world.get::<S>(e).unwrap().0,
            batch_world.get::<S>(e).unwrap().0
        );
    }
    extend_world.check_invariants();
}

#[test]
fn insert_announces_add_only_for_new_components_and_insert_for_all() {
    let mut world = lifecycle_world();
    // OnInsert observers see the new value.
    world.observe(|t: Trigger<OnInsert<A>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let a = w.get::<A>(e).unwrap().0;
        push(&mut w, format!("A is {a}"), e);
    });
    let e = world.spawn(A(1));
    take_log(&mut world);
    world.insert(e, (A(2), B(3), S(4))).unwrap();
    assert_eq!(
        log(&world),
        entries(&[
            ("add B", e),
            ("add S", e),
            ("insert A", e),
            ("A is 2", e),
            ("insert B", e),
            ("insert S", e),
        ])
    );
    // A pure replace: OnInsert only.
    take_log(&mut world);
    world.insert_one(e, S(5)).unwrap();
    world.insert_one(e, A(6)).unwrap();
    assert_eq!(
        log(&world),
        entries(&[("insert S", e), ("insert A", e), ("A is 6", e)])
    );
    // Inserting into a stale entity announces nothing.
    take_log(&mut world);
    world.despawn(e).unwrap();
    take_log(&mut world);
    assert!(world.insert_one(e, A(0)).is_err());
    assert!(log(&world).is_empty());
}

#[test]
fn remove_announces_before_the_value_is_dropped() {
    let mut world = log_world();
    let drops = Drops::default();
    let seen = drops.clone();
    world.observe(move |t: Trigger<OnRemove<T1>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let value = w.get::<T1>(e).expect("the value is still there").0.1;
        let dropped = seen.get();
        push(&mut w, format!("remove T1 {value}, drops {dropped}"), e);
    });
    let seen = drops.clone();
    world.observe(move |t: Trigger<OnRemove<S1>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let value = w.get::<S1>(e).expect("the sparse value is still there").0.1;
        let dropped = seen.get();
        push(&mut w, format!("remove S1 {value}, drops {dropped}"), e);
    });
    let e = world.spawn((T1(drops.counted(7)), S1(drops.counted(8)), A(0)));
    let t1 = world.remove_one::<T1>(e).unwrap();
    assert_eq!(t1.0.1, 7);
    assert_eq!(drops.get(), 0, "the removed value is returned, not dropped");
    drop(t1);
    assert_eq!(drops.get(), 1);
    // Through a command the value is dropped, after the observer ran.
    let mut commands = CommandBuffer::new(&world);
    commands.remove::<S1>(e);
    commands.apply(&mut world).unwrap();
    assert_eq!(drops.get(), 2);
    assert_eq!(
        log(&world),
        entries(&[("remove T1 7, drops 0", e), ("remove S1 8, drops 1", e)])
    );
    // Removing what is missing announces nothing.
    take_log(&mut world);
    assert!(world.remove_one::<T1>(e).is_err());
    assert!(world.remove::<(A, S1)>(e).is_err());
    assert!(log(&world).is_empty());
    assert!(world.has::<A>(e));
    world.check_invariants();
}

#[test]
fn remove_of_a_bundle_announces_each_component_in_bundle_order() {
    let mut world = lifecycle_world();
    let e = world.spawn((A(1), B(2), S(3)));
    take_log(&mut world);
    let (s, a) = world.remove::<(S, A)>(e).unwrap();
    assert_eq!((s, a), (S(3), A(1)));
    assert_eq!(log(&world), entries(&[("remove S", e), ("remove A", e)]));
}

#[test]
fn despawn_announces_every_component_then_the_despawn_while_intact() {
    let mut world = lifecycle_world();
    let drops = Drops::default();
    // Each observer checks the entity is complete.
    fn intact(w: &DeferredWorld, e: Entity) -> bool {
        w.get::<A>(e).is_ok()
            && w.get::<B>(e).is_ok()
            && w.get::<S>(e).is_ok()
            && w.get::<S1>(e).is_ok()
    }
    world.observe(|t: Trigger<OnRemove<S>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let ok = intact(&w, e);
        push(&mut w, format!("S: intact {ok}"), e);
    });
    let seen = drops.clone();
    world.observe(move |t: Trigger<OnDespawn>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let ok = intact(&w, e) && w.world().contains(e);
        let dropped = seen.get();
        push(&mut w, format!("despawn: intact {ok}, drops {dropped}"), e);
    });
    log_component::<S1>(&mut world, "S1");
    // Ids in the order A, B, S, S1 (the bundle order below differs).
    world.register_component::<A>();
    world.register_component::<B>();
    world.register_component::<S>();
    world.register_component::<S1>();
    // `other` makes S's sparse set before S1's.
    let other = world.spawn((A(9), S(9)));
    let e = world.spawn((S1(drops.counted(1)), B(2), A(1), S(3)));
    take_log(&mut world);
    world.despawn(e).unwrap();
    // Table components in id order, then the sparse ones in set-creation
    // order; each exactly once; then the despawn.
    assert_eq!(
        log(&world),
        entries(&[
            ("remove A", e),
            ("remove B", e),
            ("remove S", e),
            ("S: intact true", e),
            ("remove S1", e),
            ("despawn", e),
            ("despawn: intact true, drops 0", e),
        ])
    );
    assert_eq!(drops.get(), 1);
    assert!(!world.contains(e));
    assert_eq!(
        world.get::<S>(other),
        Ok(&S(9)),
        "the other entity is untouched"
    );
    // A stale handle announces nothing.
    take_log(&mut world);
    assert!(world.despawn(e).is_err());
    assert!(log(&world).is_empty());
    world.check_invariants();
}

#[test]
fn clear_announces_every_entity() {
    let mut world = lifecycle_world();
    let drops = Drops::default();
    let es = [
        world.spawn((A(1), S(1))),
        world.spawn(B(2)),
        world.spawn(()),
        world.spawn((A(3), B(3), S1(drops.counted(3)))),
    ];
    take_log(&mut world);
    world.clear();
    assert!(world.is_empty());
    assert_eq!(drops.get(), 1);
    let got = log(&world);
    let per_entity = |e: Entity| -> Vec<String> {
        got.iter()
            .filter(|(_, x)| *x == e)
            .map(|(s, _)| s.clone())
            .collect()
    };
    assert_eq!(per_entity(es[0]), ["remove A", "remove S", "despawn"]);
    assert_eq!(per_entity(es[1]), ["remove B", "despawn"]);
    assert_eq!(per_entity(es[2]), ["despawn"]);
    assert_eq!(per_entity(es[3]), ["remove A", "remove B", "despawn"]);
    assert_eq!(got.len(), 3 + 2 + 1 + 3);
    world.check_invariants();
}

#[test]
fn command_buffer_apply_triggers_lifecycle_events() {
    let mut world = lifecycle_world();
    let existing = world.spawn(A(0));
    take_log(&mut world);
    let mut commands = CommandBuffer::new(&world);
    let e = commands.spawn((A(1), S(1)));
    commands.insert(e, B(2));
    commands.insert(existing, A(5));
    commands.remove::<A>(e);
    commands.despawn(existing);
    commands.apply(&mut world).unwrap();
    assert_eq!(
        log(&world),
        entries(&[
            // `spawn` makes the reserved entity live (empty), then inserts
            // the bundle.
            ("spawn", e),
            ("add A", e),
            ("add S", e),
            ("insert A", e),
            ("insert S", e),
            ("add B", e),
            ("insert B", e),
            ("insert A", existing),
            ("remove A", e),
            ("remove A", existing),
            ("despawn", existing),
        ])
    );
    world.check_invariants();
}

#[test]
fn system_commands_trigger_lifecycle_events() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = lifecycle_world();
        let victim = world.spawn((A(0), B(0)));
        take_log(&mut world);
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system(
            "cmds",
            move |mut commands: Commands, mut ran: Local<bool>| {
                if !*ran {
                    *ran = true;
                    commands.spawn(S(1));
                    commands.despawn(victim);
                }
            },
        );
        schedule.run(&mut world);
        let got = log(&world);
        let names: Vec<&str> = got.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            names,
            [
                "spawn", "add S", "insert S", "remove A", "remove B", "despawn"
            ],
            "{kind:?}"
        );
        assert_eq!(got[5].1, victim);
        assert!(world.has::<S>(got[0].1));
    }
}

#[test]
fn lifecycle_observers_can_target_one_entity() {
    let mut world = log_world();
    let e = world.spawn(A(1));
    let f = world.spawn(A(2));
    world.observe_entity(e, |t: Trigger<OnRemove<A>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let v = w.get::<A>(e).unwrap().0;
        push(&mut w, format!("remove A {v}"), e)
    });
    world.observe_entity(f, |t: Trigger<OnInsert<B>>, mut w: DeferredWorld| {
        push(&mut w, "insert B", t.entity().unwrap())
    });
    world.observe_entity(f, |t: Trigger<OnDespawn>, mut w: DeferredWorld| {
        push(&mut w, "despawn", t.entity().unwrap())
    });
    world.remove_one::<A>(f).unwrap();
    world.insert_one(e, B(0)).unwrap();
    world.remove_one::<A>(e).unwrap();
    world.insert_one(f, B(0)).unwrap();
    world.despawn(e).unwrap();
    world.despawn(f).unwrap();
    assert_eq!(
        log(&world),
        entries(&[("remove A 1", e), ("insert B", f), ("despawn", f)])
    );
}

#[test]
fn observers_see_types_registered_before_and_after_them() {
    #[derive(Component)]
    struct Early;
    #[derive(Component)]
    struct Late;
    let mut world = log_world();
    world.spawn(Early); // registers Early before any observer
    world.observe(|t: Trigger<OnAdd<Early>>, mut w: DeferredWorld| {
        push(&mut w, "early", t.entity().unwrap())
    });
    world.observe(|t: Trigger<OnAdd<Late>>, mut w: DeferredWorld| {
        push(&mut w, "late", t.entity().unwrap())
    });
    let e = world.spawn(Early);
    let l = world.spawn(Late); // first registration of Late
    assert_eq!(log(&world), entries(&[("early", e), ("late", l)]));
}

#[test]
fn several_observers_of_one_lifecycle_event_run_in_registration_order() {
    let mut world = log_world();
    for i in 0..4 {
        world.observe(move |t: Trigger<OnInsert<A>>, mut w: DeferredWorld| {
            push(&mut w, format!("o{i}"), t.entity().unwrap())
        });
    }
    let e = world.spawn(A(0));
    let names: Vec<String> = log(&world).into_iter().map(|(s, _)| s).collect();
    assert_eq!(names, ["o0", "o1", "o2", "o3"]);
    assert!(log(&world).iter().all(|(_, x)| *x == e));
}

// ----- LifecycleEvent ---------------------------------------------------------

#[test]
fn lifecycle_events_are_readable_with_a_cursor_in_order() {
    let mut world = World::new();
    let a = world.register_component::<A>();
    let b = world.register_component::<B>();
    let s = world.register_component::<S>();
    // Nothing is recorded before somebody reads them.
    let _before = world.spawn(A(0));
    assert!(world.events::<LifecycleEvent>().is_none());
    let mut cursor = world.event_cursor::<LifecycleEvent>();
    let e = world.spawn((A(1), S(1)));
    world.insert(e, (B(2), A(2))).unwrap();
    world.remove_one::<B>(e).unwrap();
    world.despawn(e).unwrap();
    use LifecycleKind::*;
    let ev = |kind, component| LifecycleEvent {
        kind,
        entity: e,
        component,
    };
    let got: Vec<LifecycleEvent> = world.read_events(&mut cursor).copied().collect();
    assert_eq!(
        got,
        [
            ev(Spawn, None),
            ev(Add, Some(a)),
            ev(Add, Some(s)),
            ev(Insert, Some(a)),
            ev(Insert, Some(s)),
            ev(Add, Some(b)),
            ev(Insert, Some(b)),
            ev(Insert, Some(a)),
            ev(Remove, Some(b)),
            ev(Remove, Some(a)),
            ev(Remove, Some(s)),
            ev(Despawn, None),
        ]
    );
}

#[test]
fn lifecycle_events_match_the_order_observers_see() {
    let mut world = lifecycle_world();
    let mut cursor = world.event_cursor::<LifecycleEvent>();
    let e = world.spawn((B(1), A(1)));
    let f = world.spawn(S(0));
    world.insert(f, (A(1), S(2))).unwrap();
    world.remove::<(B,)>(e).unwrap();
    world.clear();
    let a = world.component_id::<A>().unwrap();
    let b = world.component_id::<B>().unwrap();
    let s = world.component_id::<S>().unwrap();
    let name = |id: Option<mosaic::ComponentId>| match id {
        Some(id) if id == a => "A",
        Some(id) if id == b => "B",
        Some(id) if id == s => "S",
        _ => "?",
    };
    let from_events: Vec<(String, Entity)> = world
        .read_events(&mut cursor)
        .map(|ev| {
            let text = match ev.kind {
                LifecycleKind::Spawn => "spawn".to_owned(),
                LifecycleKind::Despawn => "despawn".to_owned(),
                LifecycleKind::Add => format!("add {}", name(ev.component)),
                LifecycleKind::Insert => format!("insert {}", name(ev.component)),
                LifecycleKind::Remove => format!("remove {}", name(ev.component)),
            };
            (text, ev.entity)
        })
        .collect();
    assert_eq!(from_events, log(&world));
}

#[test]
fn lifecycle_events_reach_an_event_reader_in_a_system() {
    #[derive(Default)]
    struct Seen(Vec<(LifecycleKind, Entity)>);
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = World::new();
        world.insert_resource(Seen::default());
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system(
            "watch",
            |mut events: EventReader<LifecycleEvent>, mut seen: ResMut<Seen>| {
                seen.0.extend(events.read().map(|ev| (ev.kind, ev.entity)));
            },
        );
        schedule.add_system("spawner", |mut commands: Commands, mut n: Local<u32>| {
            *n += 1;
            if *n == 2 {
                commands.spawn(B(0));
            }
        });
        // Building the schedule makes the reader, which turns the events on.
        schedule.build(&mut world).unwrap();
        let e = world.spawn(A(1));
        world.despawn(e).unwrap();
        schedule.run(&mut world);
        use LifecycleKind::*;
        assert_eq!(
            world.resource::<Seen>().0,
            [(Spawn, e), (Add, e), (Insert, e), (Remove, e), (Despawn, e)]
        );
        world.resource_mut::<Seen>().0.clear();
        // The spawn by command happens in run 2 after the reader ran (both
        // write nothing in common, so they are unordered; either way it is
        // read exactly once by the end of run 3).
        schedule.run(&mut world);
        schedule.run(&mut world);
        let seen = &world.resource::<Seen>().0;
        assert_eq!(
            seen.iter().map(|s| s.0).collect::<Vec<_>>(),
            [Spawn, Add, Insert],
            "{kind:?}"
        );
        assert!(world.has::<B>(seen[0].1));
    }
}

// ----- observers issuing commands ---------------------------------------------

/// Points at the entity it belongs to.
#[derive(Component, Debug, PartialEq)]
struct HealthBar(Entity);
#[derive(Component)]
struct Enemy;
#[derive(Component)]
struct Dead;
#[derive(Component, Debug, PartialEq)]
struct Corpse(Entity);

#[test]
fn observers_spawn_through_commands_right_after_the_operation() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnAdd<Enemy>>, mut w: DeferredWorld| {
        let owner = t.entity().unwrap();
        w.commands().spawn(HealthBar(owner));
        // The structural change is not applied yet.
        assert_eq!(w.world().len(), 1);
    });
    let e = world.spawn(Enemy);
    assert_eq!(world.len(), 2);
    let mut q = world.query::<&HealthBar>();
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [&HealthBar(e)]);
    world.check_invariants();
}

#[test]
fn observers_despawn_through_commands() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnInsert<Dead>>, mut w: DeferredWorld| {
        w.commands().despawn(t.entity().unwrap());
    });
    let e = world.spawn(A(1));
    let f = world.spawn(A(2));
    world.insert_one(e, Dead).unwrap();
    assert!(!world.contains(e));
    assert!(world.contains(f));
    // Spawning with the marker despawns at once, too.
    let g = world.spawn((A(3), Dead));
    assert!(!world.contains(g));
    assert_eq!(world.len(), 1);
    world.check_invariants();
}

#[test]
fn observers_move_components_through_commands_on_remove() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnRemove<A>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let v = w.get::<A>(e).unwrap().0;
        w.commands().insert(e, B(v * 10));
    });
    let e = world.spawn(A(4));
    world.remove_one::<A>(e).unwrap();
    assert_eq!(world.get::<B>(e), Ok(&B(40)));
    assert!(!world.has::<A>(e));
    world.check_invariants();
}

/// An `OnDespawn` observer that leaves a corpse behind: the spawn command
/// is issued in the middle of a despawn.
#[test]
fn observers_spawn_through_commands_during_despawn() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnDespawn>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        if w.get::<Enemy>(e).is_ok() {
            w.commands().spawn(Corpse(e));
        }
    });
    let e = world.spawn((Enemy, A(1)));
    world.despawn(e).unwrap();
    assert!(!world.contains(e));
    let mut q = world.query::<&Corpse>();
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [&Corpse(e)]);
    world.check_invariants();
}

/// The same through `OnRemove` during `clear`.
#[test]
fn observers_spawn_through_commands_during_clear() {
    let mut world = World::new();
    world.observe(|t: Trigger<OnRemove<Enemy>>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        w.commands().spawn(Corpse(e));
    });
    let e = world.spawn(Enemy);
    world.spawn(A(0));
    world.clear();
    let mut q = world.query::<&Corpse>();
    assert_eq!(
        q.iter(&world).collect::<Vec<_>>(),
        [&Corpse(e)],
        "the corpse is spawned after the clear"
    );
    assert_eq!(world.len(), 1);
    world.check_invariants();
}

/// Spawns two children per generation until generation 3.
#[derive(Component, Debug, Clone, Copy)]
struct Gen(u32);

#[test]
fn cascades_apply_in_rounds_breadth_first() {
    let mut world = World::new();
    world.insert_resource(Vec::<u32>::new());
    world.observe(|t: Trigger<OnAdd<Gen>>, mut w: DeferredWorld| {
        let g = w.get::<Gen>(t.entity().unwrap()).unwrap().0;
        w.resource_mut::<Vec<u32>>().push(g);
        if g < 3 {
            w.commands().spawn(Gen(g + 1));
            w.commands().spawn(Gen(g + 1));
        }
    });
    world.spawn(Gen(0));
    // Round by round: every generation is complete before the next starts.
    assert_eq!(
        *world.resource::<Vec<u32>>(),
        [0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3]
    );
    assert_eq!(world.len(), 15);
    world.check_invariants();
}

#[test]
fn a_long_but_finite_cascade_is_fine() {
    let mut world = World::new();
    let depth = (MAX_OBSERVER_ROUNDS - 1) as u32;
    world.observe(move |t: Trigger<OnAdd<Gen>>, mut w: DeferredWorld| {
        let g = w.get::<Gen>(t.entity().unwrap()).unwrap().0;
        if g < depth {
            w.commands().spawn(Gen(g + 1));
        }
    });
    world.spawn(Gen(0));
    assert_eq!(world.len(), depth as usize + 1);
}

/// Issue #17, item 6: a cascade of exactly `MAX_OBSERVER_ROUNDS` rounds
/// runs to its end (the docs allow it).
#[test]
fn a_cascade_of_exactly_the_round_limit_is_fine() {
    let mut world = World::new();
    let rounds = MAX_OBSERVER_ROUNDS as u32;
    world.observe(move |t: Trigger<OnAdd<Gen>>, mut w: DeferredWorld| {
        let g = w.get::<Gen>(t.entity().unwrap()).unwrap().0;
        if g < rounds {
            w.commands().spawn(Gen(g + 1));
        }
    });
    // The trigger runs outside any round; each `Gen(1..=rounds)` is
    // spawned by one round.
    world.spawn(Gen(0));
    assert_eq!(world.len(), MAX_OBSERVER_ROUNDS + 1);
    world.check_invariants();
}

/// Issue #17, item 6: after the round-limit panic the queue is empty, so
/// the next unrelated trigger runs clean (no leftover cascade).
#[test]
fn after_the_round_limit_panic_the_next_trigger_starts_clean() {
    let mut world = World::new();
    endless(&mut world);
    let err = catch_unwind(AssertUnwindSafe(|| world.spawn(Echo))).unwrap_err();
    assert!(panic_text(&*err).contains("rounds in a row"));
    let len = world.len();
    // The endless observer is still there: a leftover command would
    // restart the cascade and panic again.
    world.trigger(Ping(1));
    assert_eq!(
        world.len(),
        len,
        "no queued command of the failed spawn ran"
    );
    world.check_invariants();
}

#[derive(Component, Debug)]
#[component(on_add = panicking_add)]
struct Explodes;

fn panicking_add(_: DeferredWorld, _: Entity) {
    panic!("hook failed");
}

#[derive(Component, Debug)]
struct Leftover;

/// Issue #17, item 7: commands observers queued for a spawn whose hook
/// panicked are dropped with it, never applied by a later operation.
#[test]
fn commands_of_a_failed_spawn_are_dropped() {
    let mut world = World::new();
    world.observe(|_: Trigger<OnAdd<A>>, mut w: DeferredWorld| {
        w.commands().spawn(Leftover);
    });
    // `OnAdd<A>` runs (queueing a spawn), then `Explodes`'s hook panics.
    let err = catch_unwind(AssertUnwindSafe(|| world.spawn((A(9), Explodes)))).unwrap_err();
    assert_eq!(panic_text(&*err), "hook failed");
    world.trigger(Ping(2));
    world.spawn(A(0));
    let mut q = world.query::<&Leftover>();
    // Only the two successful spawns' own observers queued a `Leftover`.
    assert_eq!(q.iter(&world).count(), 1);
    world.check_invariants();
}

#[derive(Component)]
struct Echo;

fn endless(world: &mut World) {
    world.observe(|_: Trigger<OnAdd<Echo>>, mut w: DeferredWorld| {
        w.commands().spawn(Echo);
    });
}

#[test]
#[should_panic(expected = "kept issuing commands for 1024 rounds in a row")]
fn a_cascade_that_never_ends_panics() {
    assert_eq!(MAX_OBSERVER_ROUNDS, 1024);
    let mut world = World::new();
    endless(&mut world);
    world.spawn(Echo);
}

#[test]
fn after_an_endless_cascade_the_world_is_consistent_and_usable() {
    let mut world = World::new();
    let echo = world.observe(|_: Trigger<OnAdd<Echo>>, mut w: DeferredWorld| {
        w.commands().spawn(Echo);
    });
    let err = catch_unwind(AssertUnwindSafe(|| world.spawn(Echo))).unwrap_err();
    let text = panic_text(&*err);
    assert!(text.contains(&MAX_OBSERVER_ROUNDS.to_string()), "{text}");
    world.check_invariants();
    assert!(world.len() > MAX_OBSERVER_ROUNDS);
    // With the culprit gone, the world works again.
    assert!(world.remove_observer(echo));
    // Observers still run and their commands still apply afterwards (the
    // flush is not stuck).
    world.observe(|_: Trigger<Ping>, mut w: DeferredWorld| {
        w.commands().spawn(A(1));
    });
    world.trigger(Ping(0));
    let mut q = world.query::<&A>();
    assert_eq!(q.iter(&world).count(), 1);
    let len = world.len();
    world.spawn(Echo);
    assert_eq!(world.len(), len + 1, "no cascade any more");
    world.check_invariants();
}

// ----- hooks ------------------------------------------------------------------

#[derive(Component, Debug)]
#[component(on_add = hooked_add, on_insert = hooked_insert, on_remove = hooked_remove)]
struct Hooked(u32);

fn hooked_add(mut w: DeferredWorld, e: Entity) {
    let v = w.get::<Hooked>(e).unwrap().0;
    push(&mut w, format!("hook add {v}"), e);
}
fn hooked_insert(mut w: DeferredWorld, e: Entity) {
    let v = w.get::<Hooked>(e).unwrap().0;
    push(&mut w, format!("hook insert {v}"), e);
}
fn hooked_remove(mut w: DeferredWorld, e: Entity) {
    let v = w.get::<Hooked>(e).unwrap().0;
    push(&mut w, format!("hook remove {v}"), e);
}

#[test]
fn derive_hooks_run_on_add_insert_and_remove() {
    let mut world = log_world();
    let e = world.spawn(Hooked(1));
    world.insert_one(e, Hooked(2)).unwrap();
    let h = world.remove_one::<Hooked>(e).unwrap();
    assert_eq!(h.0, 2);
    world.insert_one(e, Hooked(3)).unwrap();
    world.despawn(e).unwrap();
    let f = world.spawn((A(0), Hooked(4)));
    world.clear();
    assert_eq!(
        log(&world),
        entries(&[
            ("hook add 1", e),
            ("hook insert 1", e),
            ("hook insert 2", e),
            ("hook remove 2", e),
            ("hook add 3", e),
            ("hook insert 3", e),
            ("hook remove 3", e),
            ("hook add 4", f),
            ("hook insert 4", f),
            ("hook remove 4", f),
        ])
    );
}

/// The first time a hooked type is used is an `insert` into an existing
/// entity, in a world with no other hooks or observers.
#[test]
fn hooks_run_on_the_first_insert_of_their_type() {
    let mut world = log_world();
    let e = world.spawn(A(0));
    world.insert_one(e, Hooked(1)).unwrap();
    assert_eq!(
        log(&world),
        entries(&[("hook add 1", e), ("hook insert 1", e)])
    );
    // And through commands.
    let mut world = log_world();
    let mut commands = CommandBuffer::new(&world);
    let f = commands.spawn(Hooked(2));
    commands.apply(&mut world).unwrap();
    assert_eq!(
        log(&world),
        entries(&[("hook add 2", f), ("hook insert 2", f)])
    );
}

#[test]
fn hooks_run_before_observers_of_the_same_event() {
    let mut world = log_world();
    // Observers registered before the type is first used, hooks come with it.
    world.observe(|t: Trigger<OnAdd<Hooked>>, mut w: DeferredWorld| {
        push(&mut w, "obs add", t.entity().unwrap())
    });
    world.observe(|t: Trigger<OnInsert<Hooked>>, mut w: DeferredWorld| {
        push(&mut w, "obs insert", t.entity().unwrap())
    });
    world.observe(|t: Trigger<OnRemove<Hooked>>, mut w: DeferredWorld| {
        push(&mut w, "obs remove", t.entity().unwrap())
    });
    world.observe(|t: Trigger<OnDespawn>, mut w: DeferredWorld| {
        push(&mut w, "obs despawn", t.entity().unwrap())
    });
    let e = world.spawn(Hooked(1));
    world.despawn(e).unwrap();
    let names: Vec<String> = log(&world).into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        names,
        [
            "hook add 1",
            "obs add",
            "hook insert 1",
            "obs insert",
            "hook remove 1",
            "obs remove",
            "obs despawn"
        ]
    );
    // Same with hooks registered at run time after the observers.
    take_log(&mut world);
    world.observe(|t: Trigger<OnAdd<B>>, mut w: DeferredWorld| {
        push(&mut w, "obs add B", t.entity().unwrap())
    });
    world
        .register_component_hooks::<B>()
        .on_add(|mut w, e| push(&mut w, "hook add B", e));
    world.spawn(B(0));
    let names: Vec<String> = log(&world).into_iter().map(|(s, _)| s).collect();
    assert_eq!(names, ["hook add B", "obs add B"]);
}

#[test]
fn runtime_hooks_with_register_component_hooks() {
    let mut world = log_world();
    world
        .register_component_hooks::<A>()
        .on_add(|mut w, e| {
            let v = w.get::<A>(e).unwrap().0;
            push(&mut w, format!("add {v}"), e)
        })
        .on_insert(|mut w, e| {
            let v = w.get::<A>(e).unwrap().0;
            push(&mut w, format!("insert {v}"), e)
        })
        .on_remove(|mut w, e| {
            let v = w.get::<A>(e).unwrap().0;
            push(&mut w, format!("remove {v}"), e)
        });
    let e = world.spawn(A(1));
    world.insert_one(e, A(2)).unwrap();
    let mut commands = CommandBuffer::new(&world);
    commands.remove::<A>(e);
    commands.apply(&mut world).unwrap();
    assert_eq!(
        log(&world),
        entries(&[
            ("add 1", e),
            ("insert 1", e),
            ("insert 2", e),
            ("remove 2", e)
        ])
    );
    // Setting a hook again replaces it.
    world
        .register_component_hooks::<A>()
        .on_add(|mut w, e| push(&mut w, "new add", e));
    take_log(&mut world);
    world.insert_one(e, A(3)).unwrap();
    assert_eq!(log(&world), entries(&[("new add", e), ("insert 3", e)]));
}

#[test]
fn hooks_can_issue_commands() {
    let mut world = World::new();
    world
        .register_component_hooks::<Dead>()
        .on_add(|mut w, e| w.commands().despawn(e));
    world
        .register_component_hooks::<Enemy>()
        .on_add(|mut w, e| {
            w.commands().spawn(HealthBar(e));
        });
    let e = world.spawn(Enemy);
    let mut q = world.query::<&HealthBar>();
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [&HealthBar(e)]);
    world.insert_one(e, Dead).unwrap();
    assert!(!world.contains(e));
    world.check_invariants();
}

// ----- panics in hooks and observers ------------------------------------------

/// Which hook of `Fragile` should panic.
#[derive(Debug, Default)]
struct PanicIn(Option<&'static str>);

/// A component whose hooks panic on demand; counts its drops.
#[derive(Component, Debug)]
#[component(on_add = fragile_add, on_insert = fragile_insert, on_remove = fragile_remove)]
struct Fragile(Counted);

fn maybe_panic(w: &DeferredWorld, which: &str) {
    if w.get_resource::<PanicIn>().and_then(|p| p.0) == Some(which) {
        panic!("Fragile's {which} hook failed");
    }
}
fn fragile_add(w: DeferredWorld, _: Entity) {
    maybe_panic(&w, "add");
}
fn fragile_insert(w: DeferredWorld, _: Entity) {
    maybe_panic(&w, "insert");
}
fn fragile_remove(w: DeferredWorld, _: Entity) {
    maybe_panic(&w, "remove");
}

fn fragile_world(panic_in: &'static str) -> World {
    let mut world = World::new();
    world.insert_resource(PanicIn(Some(panic_in)));
    world
}

fn calm(world: &mut World) {
    world.resource_mut::<PanicIn>().0 = None;
}

fn expect_panic(world: &mut World, op: impl FnOnce(&mut World)) {
    let err = catch_unwind(AssertUnwindSafe(|| op(world))).expect_err("the hook should panic");
    assert!(
        panic_text(&*err).contains("hook failed"),
        "{}",
        panic_text(&*err)
    );
    world.check_invariants();
}

/// Every entity with a `Fragile` has its `S1` and `A` too: the spawn is
/// whole (or the entity is gone entirely).
fn assert_whole(world: &mut World) -> Vec<Entity> {
    let mut q = world.query::<(Entity, &Fragile, Option<&S1>, Option<&A>)>();
    let found: Vec<(Entity, bool, bool)> = q
        .iter(world)
        .map(|(e, _, s, a)| (e, s.is_some(), a.is_some()))
        .collect();
    for &(e, s, a) in &found {
        assert!(s && a, "entity {e:?} is half-spawned: S1 {s}, A {a}");
    }
    found.into_iter().map(|f| f.0).collect()
}

#[test]
fn a_panicking_on_add_hook_in_spawn_leaves_the_entity_whole() {
    let drops = Drops::default();
    let mut world = fragile_world("add");
    expect_panic(&mut world, |w| {
        w.spawn((Fragile(drops.counted(1)), S1(drops.counted(2)), A(3)));
    });
    let found = assert_whole(&mut world);
    assert_eq!(
        found.len(),
        1,
        "spawn had finished writing when the hook ran"
    );
    assert_eq!(drops.get(), 0);
    calm(&mut world);
    world.despawn(found[0]).unwrap();
    assert_eq!(drops.get(), 2);
    drop(world);
    assert_eq!(drops.get(), 2, "nothing dropped twice");
}

#[test]
fn a_panicking_on_add_hook_in_spawn_batch_leaves_every_entity_whole() {
    let drops = Drops::default();
    let mut world = fragile_world("add");
    expect_panic(&mut world, |w| {
        w.spawn_batch((0..5).map(|i| (Fragile(drops.counted(i)), S1(drops.counted(i)), A(i))));
    });
    let found = assert_whole(&mut world);
    assert_eq!(found.len(), 5);
    assert_eq!(drops.get(), 0);
    calm(&mut world);
    world.clear();
    assert_eq!(drops.get(), 10);
    drop(world);
    assert_eq!(drops.get(), 10);
}

#[test]
fn a_panicking_on_insert_hook_leaves_the_new_value_in_place() {
    let drops = Drops::default();
    let mut world = fragile_world("none");
    let e = world.spawn((Fragile(drops.counted(1)), S1(drops.counted(2)), A(3)));
    world.resource_mut::<PanicIn>().0 = Some("insert");
    // A replace: the old value is dropped once, the new one is in place.
    expect_panic(&mut world, |w| {
        w.insert_one(e, Fragile(drops.counted(10))).unwrap()
    });
    assert_eq!(drops.get(), 1);
    assert_eq!(world.get::<Fragile>(e).unwrap().0.1, 10);
    // An add (on_add is calm, on_insert panics): the entity has it.
    let f = world.spawn((S1(drops.counted(4)), A(5)));
    expect_panic(&mut world, |w| {
        w.insert_one(f, Fragile(drops.counted(11))).unwrap()
    });
    assert_eq!(world.get::<Fragile>(f).unwrap().0.1, 11);
    assert_eq!(assert_whole(&mut world).len(), 2);
    assert_eq!(drops.get(), 1);
    calm(&mut world);
    drop(world);
    assert_eq!(drops.get(), 5, "every value dropped exactly once");
}

#[test]
fn a_panicking_on_remove_hook_leaves_the_component_in_place() {
    let drops = Drops::default();
    let mut world = fragile_world("remove");
    let e = world.spawn((Fragile(drops.counted(1)), S1(drops.counted(2)), A(3)));
    expect_panic(&mut world, |w| drop(w.remove_one::<Fragile>(e)));
    assert!(world.has::<Fragile>(e), "remove did not happen");
    expect_panic(&mut world, |w| drop(w.remove::<(A, Fragile)>(e)));
    assert!(
        world.has::<A>(e) && world.has::<Fragile>(e),
        "nothing of the bundle was removed"
    );
    expect_panic(&mut world, |w| w.despawn(e).unwrap());
    assert!(world.contains(e), "despawn did not happen");
    assert_eq!(assert_whole(&mut world), [e]);
    expect_panic(&mut world, |w| w.clear());
    assert_eq!(world.len(), 1, "clear did not happen");
    assert_eq!(drops.get(), 0);
    calm(&mut world);
    world.despawn(e).unwrap();
    assert_eq!(drops.get(), 2);
    drop(world);
    assert_eq!(drops.get(), 2);
}

#[test]
fn a_panicking_hook_inside_command_apply_does_not_stop_the_other_commands() {
    let drops = Drops::default();
    let mut world = fragile_world("add");
    // (Registered up front: see `hooks_run_on_the_first_insert_of_their_type`.)
    world.register_component::<Fragile>();
    let mut commands = CommandBuffer::new(&world);
    let e = commands.spawn((Fragile(drops.counted(1)), S1(drops.counted(2)), A(3)));
    let f = commands.spawn(A(4));
    expect_panic(&mut world, |w| drop(commands.apply(w)));
    assert!(world.contains(e) && world.contains(f));
    assert_eq!(assert_whole(&mut world), [e]);
    assert_eq!(drops.get(), 0);
    calm(&mut world);
    drop(world);
    assert_eq!(drops.get(), 2);
}

#[test]
fn a_panicking_observer_leaves_the_world_consistent_and_stays_registered() {
    let drops = Drops::default();
    let mut world = World::new();
    world.insert_resource(PanicIn(Some("observer")));
    world.insert_resource(0u32);
    world.observe(|_: Trigger<OnRemove<S1>>, mut w: DeferredWorld| {
        *w.resource_mut::<u32>() += 1;
        if w.get_resource::<PanicIn>().unwrap().0 == Some("observer") {
            panic!("observer hook failed");
        }
    });
    let e = world.spawn((S1(drops.counted(1)), A(0)));
    expect_panic(&mut world, |w| w.despawn(e).unwrap());
    assert!(world.contains(e) && world.has::<S1>(e));
    assert_eq!(drops.get(), 0);
    calm(&mut world);
    world.despawn(e).unwrap();
    assert_eq!(*world.resource::<u32>(), 2, "the observer ran again");
    assert_eq!(drops.get(), 1);
    world.check_invariants();
}

#[test]
fn a_panicking_observer_command_does_not_wedge_later_flushes() {
    let mut world = World::new();
    world.insert_resource(true);
    world.observe(|_: Trigger<Ping>, mut w: DeferredWorld| {
        let fail = *w.resource::<bool>();
        w.commands().run(move |_| {
            if fail {
                panic!("command from an observer failed");
            }
        });
        w.commands().spawn(A(0));
    });
    let err = catch_unwind(AssertUnwindSafe(|| world.trigger(Ping(0)))).unwrap_err();
    assert!(panic_text(&*err).contains("command from an observer failed"));
    assert_eq!(world.len(), 1, "the other command still applied");
    *world.resource_mut::<bool>() = false;
    world.trigger(Ping(0));
    assert_eq!(world.len(), 2);
    world.check_invariants();
}

// ----- typed removal reading ----------------------------------------------------

/// Issue #17: a system asks "which entities lost an `A` since my last run"
/// with `RemovedComponents<A>`; removals of other types are not listed.
#[test]
fn removed_components_lists_the_entities_that_lost_a_type_since_the_last_run() {
    use mosaic::RemovedComponents;
    #[derive(Default)]
    struct Lost(Vec<Vec<Entity>>);
    let mut world = World::new();
    world.insert_resource(Lost::default());
    let mut schedule = Schedule::new();
    schedule.add_system(
        "lost",
        |mut r: RemovedComponents<A>, mut lost: ResMut<Lost>| {
            lost.0.push(r.read().collect());
        },
    );
    schedule.run(&mut world);
    let a = world.spawn((A(1), B(1)));
    let b = world.spawn(A(2));
    let c = world.spawn(B(3));
    world.remove_one::<A>(a).unwrap();
    world.remove_one::<B>(c).unwrap(); // not an `A`
    world.despawn(b).unwrap();
    schedule.run(&mut world);
    let d = world.spawn(A(4));
    world.clear();
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(
        world.resource::<Lost>().0,
        [vec![], vec![a, b], vec![d], vec![]]
    );
}

/// Issue #17, item 7 (policy): commands queued by the observers of a
/// `trigger` whose later observer panicked are dropped too.
#[test]
fn commands_of_a_failed_trigger_are_dropped() {
    let mut world = World::new();
    world.observe(|_: Trigger<Ping>, mut w: DeferredWorld| {
        w.commands().spawn(Leftover);
    });
    world.observe(|t: Trigger<Ping>, _: DeferredWorld| {
        assert!(t.event().0 != 13, "unlucky ping");
    });
    let err = catch_unwind(AssertUnwindSafe(|| world.trigger(Ping(13)))).unwrap_err();
    assert_eq!(panic_text(&*err), "unlucky ping");
    world.trigger(Ping(1));
    let mut q = world.query::<&Leftover>();
    assert_eq!(
        q.iter(&world).count(),
        1,
        "only the successful trigger's spawn"
    );
    world.check_invariants();
}

/// Bevy 0.16 spells a lifecycle trigger `Trigger<OnAdd, T>`: the same
/// observers as mosaic's `Trigger<OnAdd<T>>`, for `OnAdd`, `OnInsert` and
/// `OnRemove`, through `observe` and `add_observer` alike.
#[test]
fn bevy_two_parameter_lifecycle_triggers() {
    #[derive(Component)]
    struct Hp(u32);
    #[derive(Resource, Default)]
    struct Log(Vec<(&'static str, Entity, u32)>);
    let mut world = World::new();
    world.init_resource::<Log>();
    world.observe(|t: Trigger<OnAdd, Hp>, mut w: DeferredWorld| {
        let e = t.target();
        let hp = w.get::<Hp>(e).unwrap().0;
        w.resource_mut::<Log>().0.push(("add", e, hp));
    });
    world.add_observer(
        |t: Trigger<OnInsert, Hp>, q: Query<&Hp>, mut log: ResMut<Log>| {
            let e = t.target();
            log.0.push(("insert", e, q.get(e).unwrap().0));
        },
    );
    world.observe(|t: Trigger<OnRemove, Hp>, mut w: DeferredWorld| {
        let e = t.entity().unwrap();
        let hp = w.get::<Hp>(e).unwrap().0;
        w.resource_mut::<Log>().0.push(("remove", e, hp));
    });
    let e = world.spawn(Hp(3));
    world.insert_one(e, Hp(4)).unwrap();
    world.despawn(e).unwrap();
    assert_eq!(
        world.resource::<Log>().0,
        [
            ("add", e, 3),
            ("insert", e, 3),
            ("insert", e, 4),
            ("remove", e, 4)
        ]
    );
}

/// Bevy's `Trigger<OnDespawn, T>` runs only for entities that have a `T`
/// when they go; mosaic's own `Trigger<OnDespawn>` runs for every despawn.
#[test]
fn despawn_trigger_with_a_component_runs_for_that_component_only() {
    #[derive(Component)]
    struct Boss;
    #[derive(Resource, Default)]
    struct Gone {
        bosses: Vec<Entity>,
        all: u32,
    }
    let mut world = World::new();
    world.init_resource::<Gone>();
    world.observe(|t: Trigger<OnDespawn, Boss>, mut w: DeferredWorld| {
        w.resource_mut::<Gone>().bosses.push(t.target());
    });
    world.observe(|_: Trigger<OnDespawn>, mut w: DeferredWorld| {
        w.resource_mut::<Gone>().all += 1;
    });
    let minion = world.spawn(());
    let boss = world.spawn(Boss);
    world.despawn(minion).unwrap();
    world.despawn(boss).unwrap();
    assert_eq!(world.resource::<Gone>().bosses, [boss]);
    assert_eq!(world.resource::<Gone>().all, 2);
}

/// `Trigger<OnAdd>` without a component could never run: registering it is
/// refused at once, with a message that says what to write.
#[test]
fn lifecycle_trigger_without_a_component_is_refused() {
    let mut world = World::new();
    let err = catch_unwind(AssertUnwindSafe(|| {
        world.observe(|_: Trigger<OnAdd>, _: DeferredWorld| {});
    }))
    .unwrap_err();
    assert!(
        panic_text(&*err).contains("`Trigger<OnAdd, Health>`"),
        "{}",
        panic_text(&*err)
    );
    world.check_invariants();
}
