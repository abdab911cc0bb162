// `for a in &q` is `q.iter()`, so it is for read-only queries only: on a
// `Query<&mut A>` two such loops could hand out aliasing `&mut A`s. A
// writing query is walked with `for a in &mut q`.
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn system(q: Query<&mut A>) {
    for a in &q {
        a.0 += 1;
    }
}

fn main() {
    let mut world = World::new();
    world.run_system_once(system);
}
