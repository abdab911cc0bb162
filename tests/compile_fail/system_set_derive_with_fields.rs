// A set is a label: `#[derive(SystemSet)]` takes a unit struct or an enum
// of unit variants, whose name is the set's.
use mosaic::prelude::*;

#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
struct Layer(u32);

fn main() {}
