//! `#[derive(Bundle)]` on generic structs: the derive adds the
//! `Field: Bundle` bounds itself (as hecs's does), so generic bundles need
//! no hand-written bounds; spawning, inserting and removing them behaves as
//! for any other bundle.

use std::marker::PhantomData;

use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Position(f32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Velocity(f32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct Tag;

#[derive(Bundle, Debug, PartialEq)]
struct Foo<T> {
    foo: T,
}

#[derive(Bundle, Debug, PartialEq)]
struct Pair<A, B>(A, B);

/// A generic field type, a concrete field, and a user's own where clause.
#[derive(Bundle, Debug, PartialEq)]
struct Body<T, U = Velocity>
where
    T: Copy,
{
    at: Foo<T>,
    moving: U,
    tag: Tag,
}

/// A bundle over a tuple type built from the parameter.
#[derive(Bundle, Debug, PartialEq)]
struct Tupled<T> {
    both: (T, Velocity),
}

/// A component generic over a marker type: the bound lands on `Kind<K>`.
#[derive(Component, Debug, PartialEq)]
struct Kind<K: Send + Sync + 'static>(PhantomData<fn() -> K>);

#[derive(Bundle, Debug, PartialEq)]
struct Kinded<K: Send + Sync + 'static> {
    kind: Kind<K>,
    pos: Position,
}

#[test]
fn generic_struct_with_one_field() {
    let mut world = World::new();
    let e = world.spawn(Foo { foo: Position(1.0) });
    assert_eq!(world.get::<Position>(e), Ok(&Position(1.0)));
    assert_eq!(
        world.remove::<Foo<Position>>(e),
        Ok(Foo { foo: Position(1.0) })
    );
    assert!(!world.has::<Position>(e));
}

#[test]
fn generic_struct_of_bundles_nests() {
    let mut world = World::new();
    let e = world.spawn(Pair(Position(1.0), Pair(Velocity(2.0), Tag)));
    assert!(world.has::<Position>(e) && world.has::<Velocity>(e) && world.has::<Tag>(e));
    let taken: Pair<Position, Pair<Velocity, Tag>> = world.remove(e).unwrap();
    assert_eq!(taken, Pair(Position(1.0), Pair(Velocity(2.0), Tag)));
}

#[test]
fn generic_struct_keeps_user_bounds_and_defaults() {
    let mut world = World::new();
    let e = world.spawn(());
    let body: Body<Position> = Body {
        at: Foo { foo: Position(3.0) },
        moving: Velocity(4.0),
        tag: Tag,
    };
    world.insert(e, body).unwrap();
    assert_eq!(world.get::<Velocity>(e), Ok(&Velocity(4.0)));
    let back = world.remove::<Body<Position>>(e).unwrap();
    assert_eq!(back.at.foo, Position(3.0));
    assert_eq!(back.tag, Tag);
    let t = world.spawn(Tupled {
        both: (Position(5.0), Velocity(6.0)),
    });
    assert_eq!(world.get::<Position>(t), Ok(&Position(5.0)));
}

#[test]
fn component_generic_over_a_marker_bundles() {
    struct Enemy;
    let mut world = World::new();
    let e = world.spawn(Kinded::<Enemy> {
        kind: Kind(PhantomData),
        pos: Position(0.0),
    });
    assert!(world.has::<Kind<Enemy>>(e));
    assert!(!world.has::<Kind<u8>>(e));
}
