// Two mutable query iterators over one world at once would hand out aliasing
// `&mut A`s: the second `iter_mut` must be refused while the first lives.
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn main() {
    let mut world = World::new();
    world.spawn(A(1));
    let mut first = world.query::<&mut A>();
    let mut second = world.query::<&mut A>();
    let mut it1 = first.iter_mut(&mut world);
    let mut it2 = second.iter_mut(&mut world);
    let a = it1.next().unwrap();
    let b = it2.next().unwrap();
    a.0 += b.0;
}
