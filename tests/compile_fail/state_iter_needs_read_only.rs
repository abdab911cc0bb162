// `QueryState::iter` takes `&World`, so it is for read-only queries only.
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn main() {
    let mut world = World::new();
    world.spawn(A(1));
    let mut state = world.query::<&mut A>();
    for a in state.iter(&world) {
        a.0 += 1;
    }
}
