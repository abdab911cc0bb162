// hecs writes `world.get::<&T>(e)`; mosaic's `get` takes the component
// type itself. The error must say so, not only "trait not satisfied".
use mosaic::prelude::*;

#[derive(Component)]
struct Pos(f32);

fn main() {
    let mut world = World::new();
    let e = world.spawn(Pos(0.0));
    let _ = world.get::<&Pos>(e);
}
