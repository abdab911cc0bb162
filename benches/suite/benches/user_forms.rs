//! The suite's workloads written the *other* natural ways: the calls a Bevy
//! or hecs user types first from mosaic's README and guide, each beside the
//! suite's own mosaic form and every peer's suite row, in one run.
//!
//! ```text
//! cd benches/suite
//! cargo bench --bench user_forms                  # everything (about 5 minutes)
//! cargo bench --bench user_forms -- add_remove    # one group
//! ```
//!
//! What it shows: whether a form a user may write instead of the suite's is
//! slower than the suite's form of the same work (issue #40 is judged by a
//! harness written "the way a user writes"; the last one found add_remove
//! through a call the suite did not use). Each group holds the registry's
//! rows of the workload (`suite/mosaic` is the suite's form, `suite/<peer>`
//! each peer's) and the variants (`form/...`; a peer's own variant is
//! `peer/<library>/...`). Compare a `form/` row with `suite/mosaic` (same
//! work, other call) and with the fastest `suite/` peer.
//!
//! Groups: `forms_add_remove_sparse` / `forms_add_remove_table` (add `B`
//! to 10k entities holding `A`, then remove it: `insert_one`/`remove_one`,
//! `insert`/`remove` of `B` and of `(B,)`, through `entity_mut`, and
//! through commands), `forms_spawn` (10k entities of simple_insert's four
//! components: `spawn_batch`, a `spawn` loop, `spawn_empty` plus inserts,
//! commands), `forms_spawn_one` (10k one-component entities),
//! `forms_join_filter` (the query built every frame, `for_each`, a system
//! in a `Schedule`), `forms_random_get` (`entity(e).get`,
//! `entity_mut(e).get_mut`, `QueryState::get`), `forms_despawn`
//! (`entity_mut(e).despawn()`, commands, `clear`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use cgmath::{Matrix4, Vector3};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use mosaic::prelude::*;
use mosaic_bench_suite::data::*;
use mosaic_bench_suite::registry::rows;

#[derive(Component, Clone, Copy)]
struct Transform(#[allow(dead_code)] Matrix4<f32>);
#[derive(Component, Clone, Copy)]
struct Position(Vector3<f32>);
#[derive(Component, Clone, Copy)]
struct Rotation(#[allow(dead_code)] Vector3<f32>);
#[derive(Component, Clone, Copy)]
struct Velocity(Vector3<f32>);
#[derive(Component, Clone, Copy)]
struct Mass(f32);
#[derive(Component)]
struct Frozen;
#[derive(Component)]
struct A(#[allow(dead_code)] f32);
#[derive(Component)]
struct TableB(#[allow(dead_code)] f32);
#[derive(Component)]
#[component(storage = "sparse")]
struct SparseB(#[allow(dead_code)] f32);

fn simple_bundle() -> (Transform, Position, Rotation, Velocity) {
    (
        Transform(transform()),
        Position(unit()),
        Rotation(unit()),
        Velocity(unit()),
    )
}

/// Adds the registry's rows of `workload` (mosaic's suite form and every
/// peer's) to `group`, named `suite/<library>`.
fn suite_rows(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, workload: &str) {
    for row in rows().into_iter().filter(|row| row.workload == workload) {
        let mut batch = None;
        group.bench_function(format!("suite/{}", row.library), |b| {
            let batch = batch.get_or_insert_with(row.setup);
            b.iter_custom(batch);
        });
    }
}

/// Times `run` over a state built once by `setup`.
fn form<S>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    setup: impl FnOnce() -> S,
    mut run: impl FnMut(&mut S),
) {
    let mut state = setup();
    group.bench_function(name, |b| b.iter(|| run(&mut state)));
}

/// Times `run` only; `prepare` (untimed) runs before each.
fn form_prepared<S>(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    setup: impl FnOnce() -> S,
    mut prepare: impl FnMut(&mut S),
    mut run: impl FnMut(&mut S),
) {
    let mut state = setup();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                prepare(&mut state);
                let start = Instant::now();
                run(&mut state);
                timed += start.elapsed();
            }
            timed
        })
    });
}

fn add_remove_world() -> (World, Vec<Entity>) {
    let mut world = World::new();
    let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (A(0.0),)));
    (world, entities)
}

/// One add_remove group: `B` is `TableB` or `SparseB`.
macro_rules! add_remove_forms {
    ($c:expr, $group:literal, $suite_row:literal, $b:ident) => {{
        let mut group = $c.benchmark_group($group);
        suite_rows(&mut group, "add_remove");
        let _ = $suite_row;
        form(
            &mut group,
            "form/insert_one+remove_one",
            add_remove_world,
            |(w, es)| {
                for &e in es.iter() {
                    w.insert_one(e, $b(0.0)).unwrap();
                }
                for &e in es.iter() {
                    black_box(w.remove_one::<$b>(e).unwrap());
                }
            },
        );
        form(
            &mut group,
            "form/insert(B)+remove::<B>",
            add_remove_world,
            |(w, es)| {
                for &e in es.iter() {
                    w.insert(e, $b(0.0)).unwrap();
                }
                for &e in es.iter() {
                    black_box(w.remove::<$b>(e).unwrap());
                }
            },
        );
        form(
            &mut group,
            "form/insert((B,))+remove::<(B,)>",
            add_remove_world,
            |(w, es)| {
                for &e in es.iter() {
                    w.insert(e, ($b(0.0),)).unwrap();
                }
                for &e in es.iter() {
                    black_box(w.remove::<($b,)>(e).unwrap());
                }
            },
        );
        form(
            &mut group,
            "form/entity_mut.insert+remove",
            add_remove_world,
            |(w, es)| {
                for &e in es.iter() {
                    w.entity_mut(e).unwrap().insert($b(0.0)).unwrap();
                }
                for &e in es.iter() {
                    black_box(w.entity_mut(e).unwrap().remove::<$b>().unwrap());
                }
            },
        );
        form(
            &mut group,
            "form/command_buffer",
            add_remove_world,
            |(w, es)| {
                let mut commands = CommandBuffer::new(w);
                for &e in es.iter() {
                    commands.insert(e, $b(0.0));
                }
                commands.apply(w).unwrap();
                let mut commands = CommandBuffer::new(w);
                for &e in es.iter() {
                    commands.remove::<$b>(e);
                }
                commands.apply(w).unwrap();
            },
        );
        form(
            &mut group,
            "form/systems_with_commands",
            || {
                fn add(mut commands: Commands, q: Query<Entity, With<A>>) {
                    for e in &q {
                        commands.entity(e).insert($b(0.0));
                    }
                }
                fn remove(mut commands: Commands, q: Query<Entity, With<A>>) {
                    for e in &q {
                        commands.entity(e).remove::<$b>();
                    }
                }
                let (world, _) = add_remove_world();
                let mut schedule = Schedule::new();
                schedule.add_systems((add, remove).chain());
                (world, schedule)
            },
            |(w, s)| s.run(w),
        );
        group.finish();
    }};
}

fn add_remove(c: &mut Criterion) {
    add_remove_forms!(c, "forms_add_remove_sparse", "mosaic_sparse", SparseB);
    add_remove_forms!(c, "forms_add_remove_table", "mosaic", TableB);
    // The peers' command forms: bevy's `Commands` outside a system.
    let mut group = c.benchmark_group("forms_add_remove_table");
    form(
        &mut group,
        "peer/bevy/commands",
        peers::bevy_add_remove_world,
        |(w, es)| peers::bevy_add_remove_commands(w, es),
    );
    group.finish();
}

fn spawn(c: &mut Criterion) {
    let mut group = c.benchmark_group("forms_spawn");
    suite_rows(&mut group, "simple_insert");
    let n = SIMPLE_ENTITIES;
    form(
        &mut group,
        "form/spawn_loop",
        || (),
        |_| {
            let mut world = World::new();
            for _ in 0..n {
                black_box(world.spawn(simple_bundle()));
            }
            black_box(world);
        },
    );
    form(
        &mut group,
        "form/spawn_empty+insert_each",
        || (),
        |_| {
            let mut world = World::new();
            for _ in 0..n {
                let (t, p, r, v) = simple_bundle();
                let mut e = world.spawn_empty();
                e.insert(t)
                    .unwrap()
                    .insert(p)
                    .unwrap()
                    .insert(r)
                    .unwrap()
                    .insert(v)
                    .unwrap();
                black_box(e.id());
            }
            black_box(world);
        },
    );
    form(
        &mut group,
        "form/command_buffer",
        || (),
        |_| {
            let mut world = World::new();
            let mut commands = CommandBuffer::new(&world);
            for _ in 0..n {
                black_box(commands.spawn(simple_bundle()));
            }
            commands.apply(&mut world).unwrap();
            black_box(world);
        },
    );
    form(
        &mut group,
        "peer/hecs/spawn_loop",
        || (),
        |_| peers::hecs_spawn_loop(n),
    );
    form(
        &mut group,
        "peer/bevy/spawn_loop",
        || (),
        |_| peers::bevy_spawn_loop(n),
    );
    group.finish();

    let mut group = c.benchmark_group("forms_spawn_one");
    form(
        &mut group,
        "form/spawn_batch(P)",
        || (),
        |_| {
            let mut world = World::new();
            black_box(world.spawn_batch((0..n).map(|_| Position(unit()))));
        },
    );
    form(
        &mut group,
        "form/spawn_loop(P)",
        || (),
        |_| {
            let mut world = World::new();
            for _ in 0..n {
                black_box(world.spawn(Position(unit())));
            }
            black_box(world);
        },
    );
    form(
        &mut group,
        "form/spawn_loop((P,))",
        || (),
        |_| {
            let mut world = World::new();
            for _ in 0..n {
                black_box(world.spawn((Position(unit()),)));
            }
            black_box(world);
        },
    );
    form(
        &mut group,
        "peer/hecs/spawn_loop((P,))",
        || (),
        |_| peers::hecs_spawn_one(n),
    );
    form(
        &mut group,
        "peer/bevy/spawn_loop(P)",
        || (),
        |_| peers::bevy_spawn_one(n),
    );
    group.finish();
}

fn join_world() -> World {
    let mut world = World::new();
    let entities = world.spawn_batch(
        (0..JOIN_ENTITIES).map(|_| (Position(unit()), Velocity(unit()), Mass(mass()))),
    );
    for (i, &e) in entities.iter().enumerate() {
        if frozen(i) {
            world.insert_one(e, Frozen).unwrap();
        }
    }
    world
}

fn join_system(mut q: Query<(&mut Position, &Velocity, &Mass), Without<Frozen>>) {
    for (p, v, m) in &mut q {
        integrate_mass(&mut p.0, &v.0, m.0);
    }
}

fn join_filter(c: &mut Criterion) {
    let mut group = c.benchmark_group("forms_join_filter");
    suite_rows(&mut group, "join_filter");
    form(
        &mut group,
        "form/query_filtered_every_frame",
        join_world,
        |w| {
            let mut q = w.query_filtered::<(&mut Position, &Velocity, &Mass), Without<Frozen>>();
            for (p, v, m) in q.iter_mut(w) {
                integrate_mass(&mut p.0, &v.0, m.0);
            }
        },
    );
    form(
        &mut group,
        "form/query_with_option_filter_every_frame",
        join_world,
        |w| {
            // A hecs user's first try: query everything, skip the frozen.
            let mut q = w.query::<(&mut Position, &Velocity, &Mass, Option<&Frozen>)>();
            for (p, v, m, frozen) in q.iter_mut(w) {
                if frozen.is_none() {
                    integrate_mass(&mut p.0, &v.0, m.0);
                }
            }
        },
    );
    form(
        &mut group,
        "form/system_in_schedule",
        || {
            let mut schedule = Schedule::new();
            schedule.add_systems(join_system);
            (join_world(), schedule)
        },
        |(w, s)| s.run(w),
    );
    form(&mut group, "form/run_system_once", join_world, |w| {
        w.run_system_once(join_system)
    });
    group.finish();
}

fn random_world() -> (World, Vec<Entity>) {
    let mut world = World::new();
    let mut order =
        world.spawn_batch((0..RANDOM_GET_ENTITIES).map(|_| (Position(unit()), Velocity(unit()))));
    shuffle(&mut order);
    (world, order)
}

fn random_get(c: &mut Criterion) {
    let mut group = c.benchmark_group("forms_random_get");
    suite_rows(&mut group, "random_get");
    form(
        &mut group,
        "form/entity.get+entity_mut.get_mut",
        random_world,
        |(w, es)| {
            for &e in es.iter() {
                let v = w.entity(e).unwrap().get::<Velocity>().unwrap().0;
                w.entity_mut(e).unwrap().get_mut::<Position>().unwrap().0 += v;
            }
        },
    );
    form(
        &mut group,
        "form/two_querystates.get+get_mut",
        || {
            let (mut w, es) = random_world();
            let qv = w.query::<&Velocity>();
            let qp = w.query::<&mut Position>();
            (w, es, qv, qp)
        },
        |(w, es, qv, qp)| {
            for &e in es.iter() {
                let v = qv.get(w, e).unwrap().0;
                qp.get_mut(w, e).unwrap().0 += v;
            }
        },
    );
    form(
        &mut group,
        "form/system_query.get_mut",
        || {
            let (w, es) = random_world();
            #[derive(Resource)]
            struct Order(Vec<Entity>);
            fn system(order: Res<Order>, mut q: Query<(&Velocity, &mut Position)>) {
                for &e in &order.0 {
                    let (v, p) = q.get_mut(e).unwrap();
                    p.0 += v.0;
                }
            }
            let mut w = w;
            w.insert_resource(Order(es));
            let mut schedule = Schedule::new();
            schedule.add_systems(system);
            (w, schedule)
        },
        |(w, s)| s.run(w),
    );
    group.finish();
}

fn despawn_world() -> (World, Vec<Entity>) {
    (World::new(), Vec::new())
}

fn despawn_prepare((w, es): &mut (World, Vec<Entity>)) {
    *es = w.spawn_batch((0..DESPAWN_ENTITIES).map(|_| (Position(unit()), Velocity(unit()))));
}

fn despawn(c: &mut Criterion) {
    let mut group = c.benchmark_group("forms_despawn");
    suite_rows(&mut group, "despawn");
    form_prepared(
        &mut group,
        "form/entity_mut.despawn",
        despawn_world,
        despawn_prepare,
        |(w, es)| {
            for &e in es.iter() {
                w.entity_mut(e).unwrap().despawn().unwrap();
            }
        },
    );
    form_prepared(
        &mut group,
        "form/command_buffer",
        despawn_world,
        despawn_prepare,
        |(w, es)| {
            let mut commands = CommandBuffer::new(w);
            for &e in es.iter() {
                commands.despawn(e);
            }
            commands.apply(w).unwrap();
        },
    );
    form_prepared(
        &mut group,
        "form/clear",
        despawn_world,
        despawn_prepare,
        |(w, _)| {
            w.clear();
        },
    );
    form_prepared(
        &mut group,
        "peer/bevy/commands",
        peers::bevy_despawn_world,
        peers::bevy_despawn_prepare,
        peers::bevy_despawn_commands,
    );
    group.finish();
}

/// The peers' own forms of the same variants (their suite rows are the
/// `suite/<peer>` rows).
mod peers {
    use super::*;
    use bevy_ecs::world::{CommandQueue, World as BevyWorld};

    #[derive(bevy_ecs::component::Component)]
    struct BPosition(#[allow(dead_code)] Vector3<f32>);
    #[derive(bevy_ecs::component::Component)]
    struct BVelocity(#[allow(dead_code)] Vector3<f32>);
    #[derive(bevy_ecs::component::Component)]
    struct BTransform(#[allow(dead_code)] Matrix4<f32>);
    #[derive(bevy_ecs::component::Component)]
    struct BRotation(#[allow(dead_code)] Vector3<f32>);
    #[derive(bevy_ecs::component::Component)]
    struct BA(#[allow(dead_code)] f32);
    #[derive(bevy_ecs::component::Component)]
    struct BB(#[allow(dead_code)] f32);

    pub fn hecs_spawn_loop(n: usize) {
        let mut world = hecs::World::new();
        for _ in 0..n {
            // hecs takes any `'static` type: the same structs as mosaic's rows.
            black_box(world.spawn(simple_bundle()));
        }
        black_box(world);
    }

    pub fn hecs_spawn_one(n: usize) {
        let mut world = hecs::World::new();
        for _ in 0..n {
            black_box(world.spawn((Position(unit()),)));
        }
        black_box(world);
    }

    pub fn bevy_spawn_loop(n: usize) {
        let mut world = BevyWorld::new();
        for _ in 0..n {
            black_box(
                world
                    .spawn((
                        BTransform(transform()),
                        BPosition(unit()),
                        BRotation(unit()),
                        BVelocity(unit()),
                    ))
                    .id(),
            );
        }
        black_box(world);
    }

    pub fn bevy_spawn_one(n: usize) {
        let mut world = BevyWorld::new();
        for _ in 0..n {
            black_box(world.spawn(BPosition(unit())).id());
        }
        black_box(world);
    }

    pub fn bevy_add_remove_world() -> (BevyWorld, Vec<bevy_ecs::entity::Entity>) {
        let mut world = BevyWorld::new();
        let entities = world
            .spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| BA(0.0)))
            .collect();
        (world, entities)
    }

    pub fn bevy_add_remove_commands(world: &mut BevyWorld, entities: &[bevy_ecs::entity::Entity]) {
        let mut queue = CommandQueue::default();
        let mut commands = bevy_ecs::system::Commands::new(&mut queue, world);
        for &e in entities {
            commands.entity(e).insert(BB(0.0));
        }
        queue.apply(world);
        let mut queue = CommandQueue::default();
        let mut commands = bevy_ecs::system::Commands::new(&mut queue, world);
        for &e in entities {
            commands.entity(e).remove::<BB>();
        }
        queue.apply(world);
    }

    pub fn bevy_despawn_world() -> (BevyWorld, Vec<bevy_ecs::entity::Entity>) {
        (BevyWorld::new(), Vec::new())
    }

    pub fn bevy_despawn_prepare(
        (world, entities): &mut (BevyWorld, Vec<bevy_ecs::entity::Entity>),
    ) {
        *entities = world
            .spawn_batch((0..DESPAWN_ENTITIES).map(|_| (BPosition(unit()), BVelocity(unit()))))
            .collect();
    }

    pub fn bevy_despawn_commands(
        (world, entities): &mut (BevyWorld, Vec<bevy_ecs::entity::Entity>),
    ) {
        let mut queue = CommandQueue::default();
        let mut commands = bevy_ecs::system::Commands::new(&mut queue, world);
        for &e in entities.iter() {
            commands.entity(e).despawn();
        }
        queue.apply(world);
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args()
}

criterion_group! {
    name = benches;
    config = config();
    targets = add_remove, spawn, join_filter, random_get, despawn
}
criterion_main!(benches);
