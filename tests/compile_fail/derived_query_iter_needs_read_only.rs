// A `#[derive(QueryData)]` struct with a `&mut` field writes, so it is not
// `ReadOnlyQueryData`: `iter(&world)` refuses it (use `iter_mut`).
use mosaic::prelude::*;

#[derive(Component)]
struct Position(f32);
#[derive(Component)]
struct Velocity(f32);

#[derive(QueryData)]
struct Mover<'w> {
    pos: &'w mut Position,
    vel: &'w Velocity,
}

fn main() {
    let mut world = World::new();
    world.spawn((Position(0.0), Velocity(1.0)));
    let mut q = world.query::<Mover>();
    for m in q.iter(&world) {
        m.pos.0 += m.vel.0;
    }
}
