// `#[derive(Resource)]` is a marker in mosaic (any `Send + Sync + 'static`
// type is a resource): it refuses, where the type is declared, a type a
// world could not hold.
use mosaic::prelude::*;
use std::rc::Rc;

#[derive(Resource)]
struct Shared(Rc<u32>);

fn main() {
    let _ = Shared(Rc::new(1)).0;
}
