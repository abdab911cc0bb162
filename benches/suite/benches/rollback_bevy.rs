//! "Roll back 8 frames and re-simulate" (#38): mosaic's `restore` and
//! `snapshot_after` against the same done the way bevy_ggrs does it on
//! bevy_ecs, in one criterion run.
//!
//! Both worlds hold 10,000 entities with 4 `Copy` components (100 bytes an
//! entity, the `rollback` bench's world). One iteration is what a rollback
//! session does when a late input arrives 8 frames back: put back the
//! state saved 8 frames ago, then simulate 8 frames again, saving the
//! state after each one (the session needs it for the next rollback). A
//! frame writes every entity's `A` from its `B` (one column of four
//! written, the other three read or untouched).
//!
//! - `resim8/mosaic`: `World::restore`, then per frame a `&mut A` query
//!   and `World::snapshot_after` the previous frame's snapshot (what a
//!   `SnapshotRing` does).
//! - `resim8/bevy_reinsert`: the issue's baseline, bevy_ggrs's scheme.
//!   Saving clones every registered component into a per-type
//!   `Vec<(Entity, T)>`; restoring removes each registered component from
//!   every entity that has it and inserts the saved values again, mapping
//!   the saved entities through an entity map (bevy_ggrs keeps one because
//!   a despawned entity comes back with a new id; here it is the identity,
//!   but it is built and read as the plugin does).
//! - `resim8/bevy_overwrite`: a kinder bevy baseline, for scale: the same
//!   save, but the restore writes the saved values over the live ones in
//!   place (`&mut T` per entity through the map), with no archetype moves.
//!
//! ```text
//! cd benches/suite && cargo bench --bench rollback_bevy
//! ```

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

const N: u32 = 10_000;
const FRAMES: usize = 8;

mod m {
    use mosaic::prelude::*;

    #[derive(Component, Clone, Copy, Hash)]
    pub struct A(pub [u32; 6]);
    #[derive(Component, Clone, Copy, Hash)]
    pub struct B(pub [u32; 6]);
    #[derive(Component, Clone, Copy, Hash)]
    pub struct C(pub [u32; 6]);
    #[derive(Component, Clone, Copy, Hash)]
    pub struct D(pub [u32; 7]);

    pub fn world() -> World {
        let mut world = World::new();
        world.register_rollback::<A>();
        world.register_rollback::<B>();
        world.register_rollback::<C>();
        world.register_rollback::<D>();
        world.spawn_batch((0..super::N).map(|i| (A([i; 6]), B([i; 6]), C([i; 6]), D([i; 7]))));
        world
    }

    pub fn step(world: &mut World) {
        let mut q = world.query::<(&mut A, &B)>();
        for (a, b) in q.iter_mut(world) {
            a.0[0] = a.0[0].wrapping_add(b.0[0] | 1);
        }
    }

    pub fn sum(world: &mut World) -> u64 {
        let mut q = world.query::<(&A, &C, &D)>();
        q.iter(world)
            .map(|(a, c, d)| u64::from(a.0[0]) + u64::from(c.0[1]) + u64::from(d.0[6]))
            .sum()
    }
}

mod b {
    use super::HashMap;
    use bevy_ecs::component::Component;
    use bevy_ecs::entity::Entity;
    use bevy_ecs::world::World;

    #[derive(Component, Clone, Copy)]
    pub struct A(pub [u32; 6]);
    #[derive(Component, Clone, Copy)]
    pub struct B(pub [u32; 6]);
    #[derive(Component, Clone, Copy)]
    pub struct C(pub [u32; 6]);
    #[derive(Component, Clone, Copy)]
    pub struct D(pub [u32; 7]);

    pub fn world() -> World {
        let mut world = World::new();
        world
            .spawn_batch((0..super::N).map(|i| (A([i; 6]), B([i; 6]), C([i; 6]), D([i; 7]))))
            .for_each(drop);
        world
    }

    pub fn step(world: &mut World) {
        let mut q = world.query::<(&mut A, &B)>();
        for (mut a, b) in q.iter_mut(world) {
            a.0[0] = a.0[0].wrapping_add(b.0[0] | 1);
        }
    }

    pub fn sum(world: &mut World) -> u64 {
        let mut q = world.query::<(&A, &C, &D)>();
        q.iter(world)
            .map(|(a, c, d)| u64::from(a.0[0]) + u64::from(c.0[1]) + u64::from(d.0[6]))
            .sum()
    }

    /// One registered type's saved values, bevy_ggrs style.
    pub fn save_one<T: Component + Clone>(world: &mut World) -> Vec<(Entity, T)> {
        let mut q = world.query::<(Entity, &T)>();
        q.iter(world).map(|(e, t)| (e, t.clone())).collect()
    }

    #[derive(Clone)]
    pub struct Saved {
        a: Vec<(Entity, A)>,
        b: Vec<(Entity, B)>,
        c: Vec<(Entity, C)>,
        d: Vec<(Entity, D)>,
    }

    pub fn save(world: &mut World) -> Saved {
        Saved {
            a: save_one(world),
            b: save_one(world),
            c: save_one(world),
            d: save_one(world),
        }
    }

    /// The entity map: saved id -> live id.
    pub fn entity_map(world: &mut World) -> HashMap<Entity, Entity> {
        let mut q = world.query::<Entity>();
        q.iter(world).map(|e| (e, e)).collect()
    }

    fn reinsert_one<T: Component + Clone>(
        world: &mut World,
        saved: &[(Entity, T)],
        map: &HashMap<Entity, Entity>,
    ) {
        let have: Vec<Entity> = {
            let mut q = world.query_filtered::<Entity, bevy_ecs::query::With<T>>();
            q.iter(world).collect()
        };
        for e in have {
            world.entity_mut(e).remove::<T>();
        }
        for (e, t) in saved {
            world.entity_mut(map[e]).insert(t.clone());
        }
    }

    pub fn restore_reinsert(world: &mut World, saved: &Saved) {
        let map = entity_map(world);
        reinsert_one(world, &saved.a, &map);
        reinsert_one(world, &saved.b, &map);
        reinsert_one(world, &saved.c, &map);
        reinsert_one(world, &saved.d, &map);
    }

    fn overwrite_one<T: Component<Mutability = bevy_ecs::component::Mutable> + Clone>(
        world: &mut World,
        saved: &[(Entity, T)],
        map: &HashMap<Entity, Entity>,
    ) {
        for (e, t) in saved {
            *world.get_mut::<T>(map[e]).unwrap() = t.clone();
        }
    }

    pub fn restore_overwrite(world: &mut World, saved: &Saved) {
        let map = entity_map(world);
        overwrite_one(world, &saved.a, &map);
        overwrite_one(world, &saved.b, &map);
        overwrite_one(world, &saved.c, &map);
        overwrite_one(world, &saved.d, &map);
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("resim8");

    // Each variant: the state 8 frames back is saved once; every iteration
    // goes back to it and simulates the 8 frames again, saving each.
    let mut w = m::world();
    let saved = w.snapshot();
    g.bench_function("mosaic", |bch| {
        bch.iter(|| {
            w.restore(&saved).unwrap();
            let mut prev = saved.clone();
            for _ in 0..FRAMES {
                m::step(&mut w);
                prev = w.snapshot_after(&prev);
            }
            black_box(&prev);
        })
    });
    let mosaic_sum = m::sum(&mut w);

    let mut w = b::world();
    let saved = b::save(&mut w);
    g.bench_function("bevy_reinsert", |bch| {
        bch.iter(|| {
            b::restore_reinsert(&mut w, &saved);
            let mut last = None;
            for _ in 0..FRAMES {
                b::step(&mut w);
                last = Some(b::save(&mut w));
            }
            black_box(last);
        })
    });
    assert_eq!(
        b::sum(&mut w),
        mosaic_sum,
        "both re-simulated the same frames"
    );

    let mut w = b::world();
    let saved = b::save(&mut w);
    g.bench_function("bevy_overwrite", |bch| {
        bch.iter(|| {
            b::restore_overwrite(&mut w, &saved);
            let mut last = None;
            for _ in 0..FRAMES {
                b::step(&mut w);
                last = Some(b::save(&mut w));
            }
            black_box(last);
        })
    });
    assert_eq!(
        b::sum(&mut w),
        mosaic_sum,
        "both re-simulated the same frames"
    );
    g.finish();
}

/// The criterion group runner, kept in a private module so the `pub fn` that
/// `criterion_group!` generates needs no doc comment of its own.
mod runner {
    use super::*;

    criterion_group!(benches, bench);
}

criterion_main!(runner::benches);
