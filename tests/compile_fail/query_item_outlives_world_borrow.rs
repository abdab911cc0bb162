// A query item borrows the world: it cannot be kept across a structural
// change (`spawn` may move or reallocate the column it points into).
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn main() {
    let mut world = World::new();
    world.spawn(A(1));
    let mut state = world.query::<&A>();
    let first: &A = state.iter(&world).next().unwrap();
    world.spawn(A(2));
    println!("{}", first.0);
}
