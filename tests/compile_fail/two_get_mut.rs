// Two `&mut` components from the world at once would alias if both named
// the same entity: the second `get_mut` must be refused while the first lives.
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn main() {
    let mut world = World::new();
    let e1 = world.spawn(A(1));
    let e2 = world.spawn(A(2));
    let a = world.get_mut::<A>(e1).unwrap();
    let b = world.get_mut::<A>(e2).unwrap();
    a.0 += b.0;
}
