//! Parallelism and determinism: the parallel executor and parallel queries
//! give the single-threaded result, bit for bit.
//!
//! Shows: systems with disjoint access run at once (`ExecutorKind::Parallel`,
//! the default), `par_iter_mut`, `par_chunks` with per-chunk results in
//! chunk order, and a comparison with `ExecutorKind::SingleThreaded`.
//!
//! ```text
//! cargo run --example parallel [ENTITIES]    # default 20000
//! ```

use mosaic::prelude::*;

#[derive(Component)]
struct Position(f32);
#[derive(Component)]
struct Velocity(f32);
#[derive(Component)]
struct Mass(f64);
#[derive(Resource, Default)]
struct TotalMass(f64);

fn movement(mut q: Query<(&mut Position, &Velocity)>) {
    q.par_iter_mut().for_each(|(p, v)| p.0 += v.0);
}

fn heat(mut q: Query<&mut Mass>) {
    q.par_iter_mut().for_each(|m| m.0 *= 1.000_1);
}

// Chunks of fixed size, summed in chunk order: the same bits on any thread count.
fn weigh(q: Query<&Mass>, mut total: ResMut<TotalMass>) {
    let sums = q
        .par_chunks(1024)
        .map(|chunk| chunk.map(|m| m.0).sum::<f64>());
    total.0 = sums.iter().sum();
}

fn run(executor: ExecutorKind, n: usize) -> (f64, f32) {
    let mut world = World::new();
    world.init_resource::<TotalMass>();
    world.spawn_batch((0..n).map(|i| {
        (
            Position(0.0),
            Velocity(i as f32 * 0.5),
            Mass(1.0 + i as f64 * 0.001),
        )
    }));
    let mut schedule = Schedule::new();
    schedule.set_executor(executor);
    // `movement` and `heat` touch different components: they may overlap.
    schedule.add_systems((movement, heat));
    schedule.add_systems(weigh.after(heat));
    for _ in 0..5 {
        schedule.run(&mut world);
    }
    let far = world
        .query::<&Position>()
        .iter(&world)
        .map(|p| p.0)
        .fold(0.0, f32::max);
    (world.resource::<TotalMass>().0, far)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    println!("{} worker threads", rayon::current_num_threads());
    let parallel = run(ExecutorKind::Parallel, n);
    let single = run(ExecutorKind::SingleThreaded, n);
    println!(
        "parallel:        total mass {:.6}, furthest {}",
        parallel.0, parallel.1
    );
    println!(
        "single-threaded: total mass {:.6}, furthest {}",
        single.0, single.1
    );
    assert_eq!(parallel.0.to_bits(), single.0.to_bits());
    assert_eq!(parallel.1.to_bits(), single.1.to_bits());
    println!("identical, bit for bit");
}
