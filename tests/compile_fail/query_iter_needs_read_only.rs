// `Query::iter` takes `&self`, so it is for read-only queries only: on a
// `Query<&mut A>` it would let two iterators hand out aliasing `&mut A`s.
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn system(q: Query<&mut A>) {
    for a in q.iter() {
        a.0 += 1;
    }
}

fn main() {
    let mut world = World::new();
    world.run_system_once(system);
}
