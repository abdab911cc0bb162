// Bevy's `Query<&mut T>` yields `Mut<T>`, with `set_if_neq`; mosaic's yields
// `&mut T`, marked changed as it is fetched. The error says to query
// `Mut<T>` instead.
use mosaic::prelude::*;

#[derive(Component, PartialEq)]
struct Health(u32);

fn clamp(mut q: Query<&mut Health>) {
    for mut health in &mut q {
        health.set_if_neq(Health(3));
    }
}

fn main() {
    let mut world = World::new();
    world.run_system_once(clamp);
}
