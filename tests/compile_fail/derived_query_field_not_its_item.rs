// A derived query yields the struct itself, so each field must be its own
// query item at the struct's lifetime: `&'static T` is not what `&T`
// yields for a world borrow `'w`, and a field of a generic query type `Q`
// would have to hold `Q::Item<'w>`, which is not `Q`.
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
struct AnyQuery<'w, Q: QueryData> {
    pos: &'w Position,
    inner: Q,
}

fn main() {}
