// `ParamSet::p0`/`p1` borrow the set mutably, and what they return lives
// no longer than that borrow (a `Res` included, though a direct `Res` lives
// for the whole run): two members alive at once, here a reader and a
// writer of the same resource, are refused.
use mosaic::prelude::*;

fn system(mut set: ParamSet<(Res<u32>, ResMut<u32>)>) {
    let read = set.p0();
    let mut write = set.p1();
    *write += *read;
}

fn main() {
    let mut world = World::new();
    world.insert_resource(1u32);
    world.run_system_once(system);
}
