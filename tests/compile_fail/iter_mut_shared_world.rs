// `QueryState::iter_mut` needs `&mut World`: a shared reference cannot write.
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn bump_all(world: &World, state: &mut QueryState<&'static mut A>) {
    for a in state.iter_mut(world) {
        a.0 += 1;
    }
}

fn main() {
    let mut world = World::new();
    world.spawn(A(1));
    let mut state = world.query::<&mut A>();
    bump_all(&world, &mut state);
}
