// A derived query yields the struct itself, so each field must be its own
// query item at the struct's lifetime: `&'static T` is not what `&T`
// yields for a world borrow `'w`, and a `Has<T>` inside a tuple yields a
// bare `bool` (only a top-level `Has<T>` field wraps it back).
use mosaic::prelude::*;

#[derive(Component)]
struct Position(f32);
#[derive(Component)]
struct Frozen;

#[derive(QueryData)]
struct Static<'w> {
    pos: &'static Position,
    frozen: Has<Frozen>,
    entity: Entity,
    other: &'w Frozen,
}

#[derive(QueryData)]
struct HasInTuple<'w> {
    pair: (&'w Position, Has<Frozen>),
}

fn main() {}
