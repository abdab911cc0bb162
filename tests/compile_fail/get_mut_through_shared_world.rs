// `World::get_mut` needs `&mut World`: a shared reference cannot write.
use mosaic::prelude::*;

#[derive(Component)]
struct A(u32);

fn bump(world: &World, e: Entity) {
    world.get_mut::<A>(e).unwrap().0 += 1;
}

fn main() {
    let mut world = World::new();
    let e = world.spawn(A(1));
    bump(&world, e);
}
