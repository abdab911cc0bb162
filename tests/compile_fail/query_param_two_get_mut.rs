// `Query::get_mut` borrows the query mutably: two items alive at once (which
// would alias if both named the same entity) are refused.
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn system(mut q: Query<(Entity, &mut A)>) {
    let entities: Vec<Entity> = Vec::new();
    let (_, a) = q.get_mut(entities[0]).unwrap();
    let (_, b) = q.get_mut(entities[0]).unwrap();
    a.0 += b.0;
}

fn main() {
    let mut world = World::new();
    world.run_system_once(system);
}
