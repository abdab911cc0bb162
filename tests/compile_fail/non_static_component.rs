// The world outlives any borrow: a component type must be `'static`.
use mosaic::prelude::*;

#[derive(Component)]
struct Borrowed<'a>(&'a u8);

fn main() {}
