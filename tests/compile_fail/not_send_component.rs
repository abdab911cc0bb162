// Components cross threads (parallel systems, `par_iter`): a `!Send` type
// must not be a component.
use mosaic::prelude::*;

#[derive(Component)]
struct NotSend(std::rc::Rc<u8>);

fn main() {}
