//! Integration tests for the `World` façade: spawning and despawning,
//! inserting and removing components and bundles, reading them back, the
//! errors each operation reports, exactly-once dropping of component values
//! (table and sparse storage), zero-sized and over-aligned components,
//! `spawn_batch` with dishonest size hints, archetype-graph edge reuse,
//! deterministic iteration order, and the public view of where entities
//! and values are (`location`, `get_archetype`, `Archetype::column`,
//! `contains_id`, `component_infos`).

use std::collections::HashMap;
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mosaic::SparseMutError;
use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct A(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct B(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct C(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Plain(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Marker;

mod inner {
    use mosaic::prelude::*;

    #[derive(Component, Debug, PartialEq)]
    pub struct Deep;

    #[derive(Component, Debug, PartialEq)]
    pub struct Wrapper<T: Send + Sync + 'static>(pub T);
}

// ----- basics -------------------------------------------------------------------

#[test]
fn spawn_len_is_empty_contains_clear() {
    let mut world = World::new();
    assert!(world.is_empty());
    assert_eq!(world.len(), 0);

    let a = world.spawn(A(1));
    let b = world.spawn((A(2), B(3)));
    let c = world.spawn(());
    let d = world.spawn(S(4));
    assert_eq!(world.len(), 4);
    assert!(!world.is_empty());
    for e in [a, b, c, d] {
        assert!(world.contains(e));
    }
    assert_eq!(*world.get::<A>(a).unwrap(), A(1));
    assert_eq!(*world.get::<B>(b).unwrap(), B(3));
    assert_eq!(*world.get::<S>(d).unwrap(), S(4));

    world.despawn(b).unwrap();
    assert_eq!(world.len(), 3);
    assert!(!world.contains(b));

    world.clear();
    assert!(world.is_empty());
    assert_eq!(world.len(), 0);
    for e in [a, b, c, d] {
        assert!(!world.contains(e));
    }
    let mut q = world.query::<Entity>();
    assert_eq!(q.iter(&world).count(), 0);
    let mut qs = world.query::<&S>();
    assert_eq!(qs.iter(&world).count(), 0);

    // The world is fully usable after clear.
    let e = world.spawn((A(5), S(6)));
    assert_eq!(world.len(), 1);
    assert_eq!(*world.get::<A>(e).unwrap(), A(5));
    assert_eq!(*world.get::<S>(e).unwrap(), S(6));
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [e]);
    world.check_invariants();
}

#[test]
fn insert_adds_and_replaces() {
    let mut world = World::new();
    let e = world.spawn(A(1));
    let other = world.spawn((A(10), B(10)));

    world.insert(e, (B(2), S(3))).unwrap();
    assert_eq!(*world.get::<A>(e).unwrap(), A(1));
    assert_eq!(*world.get::<B>(e).unwrap(), B(2));
    assert_eq!(*world.get::<S>(e).unwrap(), S(3));

    // Replace existing (table and sparse) and add a new one in one go.
    world.insert(e, (A(4), S(5), C(6))).unwrap();
    assert_eq!(*world.get::<A>(e).unwrap(), A(4));
    assert_eq!(*world.get::<B>(e).unwrap(), B(2));
    assert_eq!(*world.get::<C>(e).unwrap(), C(6));
    assert_eq!(*world.get::<S>(e).unwrap(), S(5));

    // Pure replace: no archetype change.
    let archetypes = world.archetype_count();
    world.insert(e, (B(7), A(8))).unwrap();
    assert_eq!(world.archetype_count(), archetypes);
    assert_eq!(*world.get::<A>(e).unwrap(), A(8));
    assert_eq!(*world.get::<B>(e).unwrap(), B(7));

    // The other entity was never touched.
    assert_eq!(*world.get::<A>(other).unwrap(), A(10));
    assert_eq!(*world.get::<B>(other).unwrap(), B(10));
    assert!(!world.has::<C>(other));
    assert!(!world.has::<S>(other));
    world.check_invariants();
}

#[test]
fn insert_one_adds_and_replaces() {
    let mut world = World::new();
    let e = world.spawn(());
    world.insert_one(e, A(1)).unwrap();
    world.insert_one(e, S(2)).unwrap();
    world.insert_one(e, Marker).unwrap();
    assert_eq!(*world.get::<A>(e).unwrap(), A(1));
    assert_eq!(*world.get::<S>(e).unwrap(), S(2));
    assert!(world.has::<Marker>(e));
    world.insert_one(e, A(3)).unwrap();
    world.insert_one(e, S(4)).unwrap();
    assert_eq!(*world.get::<A>(e).unwrap(), A(3));
    assert_eq!(*world.get::<S>(e).unwrap(), S(4));
    world.check_invariants();
}

#[test]
fn remove_returns_values() {
    let mut world = World::new();
    let e = world.spawn((A(1), B(2), C(3), S(4)));
    let neighbour = world.spawn((A(11), B(12), C(13), S(14)));
    assert_eq!(world.remove::<(A, S)>(e), Ok((A(1), S(4))));
    assert!(!world.has::<A>(e));
    assert!(!world.has::<S>(e));
    assert_eq!(*world.get::<B>(e).unwrap(), B(2));
    assert_eq!(*world.get::<C>(e).unwrap(), C(3));
    assert_eq!(world.remove::<(C, B)>(e), Ok((C(3), B(2))));
    assert!(
        world.contains(e),
        "removing every component keeps the entity"
    );
    assert_eq!(*world.get::<A>(neighbour).unwrap(), A(11));
    assert_eq!(*world.get::<S>(neighbour).unwrap(), S(14));
    world.check_invariants();
}

#[test]
fn remove_one_returns_value() {
    let mut world = World::new();
    let e = world.spawn((A(1), S(2)));
    assert_eq!(world.remove_one::<A>(e), Ok(A(1)));
    assert_eq!(world.remove_one::<S>(e), Ok(S(2)));
    assert_eq!(
        world.remove_one::<A>(e),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "A".to_owned()
        })
    );
    assert_eq!(
        world.remove_one::<S>(e),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "S".to_owned()
        })
    );
    assert!(world.contains(e));
}

#[test]
fn remove_with_missing_component_names_it_and_changes_nothing() {
    let mut world = World::new();
    let e = world.spawn((A(1), S(2)));
    let archetypes = world.archetype_count();

    let err = world.remove::<(A, B)>(e).unwrap_err();
    assert_eq!(
        err,
        ComponentError::MissingComponent {
            entity: e,
            component: "B".to_owned()
        }
    );
    let text = err.to_string();
    assert!(text.contains("`B`"), "message was: {text}");
    assert!(text.contains(&format!("{e:?}")), "message was: {text}");
    assert_eq!(*world.get::<A>(e).unwrap(), A(1));
    assert_eq!(*world.get::<S>(e).unwrap(), S(2));

    // The first missing one in bundle order is named.
    let err = world.remove::<(A, C, S, B)>(e).unwrap_err();
    assert_eq!(
        err,
        ComponentError::MissingComponent {
            entity: e,
            component: "C".to_owned()
        }
    );
    assert!(err.to_string().contains("`C`"));

    // A missing sparse component.
    world.remove_one::<S>(e).unwrap();
    let err = world.remove::<(A, S)>(e).unwrap_err();
    assert_eq!(
        err,
        ComponentError::MissingComponent {
            entity: e,
            component: "S".to_owned()
        }
    );
    assert_eq!(*world.get::<A>(e).unwrap(), A(1));
    world.insert_one(e, S(2)).unwrap();

    // Never-registered type.
    let err = world.remove::<(S, inner::Deep)>(e).unwrap_err();
    assert!(err.to_string().contains("`Deep`"), "{err}");
    assert!(!err.to_string().contains("inner::"), "{err}");

    assert_eq!(*world.get::<A>(e).unwrap(), A(1));
    assert_eq!(*world.get::<S>(e).unwrap(), S(2));
    assert_eq!(world.len(), 1);
    assert_eq!(
        world.archetype_count(),
        archetypes,
        "failed removes create no archetype"
    );
    world.check_invariants();
}

#[test]
fn get_and_get_mut_errors() {
    let mut world = World::new();
    let e = world.spawn((A(1), S(2)));
    let dead = world.spawn(A(3));
    world.despawn(dead).unwrap();

    assert_eq!(
        world.get::<B>(e),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "B".to_owned()
        })
    );
    assert_eq!(
        world.get::<A>(dead),
        Err(ComponentError::NoSuchEntity(dead))
    );
    assert_eq!(
        world.get_mut::<B>(e).map(|b| *b),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "B".to_owned()
        })
    );
    assert_eq!(
        world.get_mut::<A>(dead).map(|a| *a),
        Err(ComponentError::NoSuchEntity(dead))
    );

    // Registered but sparse and absent on this entity.
    let other = world.spawn(A(4));
    assert!(matches!(
        world.get::<S>(other),
        Err(ComponentError::MissingComponent { entity, ref component }) if entity == other && component == "S"
    ));

    // Never-registered type: a short name, generic arguments shortened too.
    let err = world.get::<inner::Wrapper<inner::Deep>>(e).unwrap_err();
    assert_eq!(
        err,
        ComponentError::MissingComponent {
            entity: e,
            component: "Wrapper<Deep>".to_owned()
        }
    );
    assert_eq!(
        err.to_string(),
        format!("entity {e:?} has no component `Wrapper<Deep>`")
    );
    assert_eq!(
        world.get::<A>(dead).unwrap_err().to_string(),
        format!("entity {dead:?} does not exist (despawned, or never spawned in this world)")
    );

    world.get_mut::<A>(e).unwrap().0 = 42;
    world.get_mut::<S>(e).unwrap().0 = 43;
    assert_eq!(*world.get::<A>(e).unwrap(), A(42));
    assert_eq!(*world.get::<S>(e).unwrap(), S(43));
    assert!(world.has::<A>(e) && world.has::<S>(e) && !world.has::<B>(e));
}

#[test]
fn error_types_implement_std_error() {
    fn as_error(err: &dyn Error) -> String {
        err.to_string()
    }
    let mut world = World::new();
    let e = world.spawn(A(1));
    world.despawn(e).unwrap();
    let entity_err = world.despawn(e).unwrap_err();
    let component_err = world.get::<A>(e).unwrap_err();
    let live = world.spawn(());
    let missing_err = world.get::<A>(live).unwrap_err();
    let mut q = world.query::<&A>();
    let query_err = q.get(&world, live).unwrap_err();
    let stale_query_err = q.get(&world, e).unwrap_err();

    assert!(as_error(&entity_err).contains("does not exist"));
    assert!(as_error(&component_err).contains("does not exist"));
    assert!(as_error(&missing_err).contains("`A`"));
    assert!(as_error(&query_err).contains("does not match query"));
    assert!(as_error(&stale_query_err).contains("does not exist"));
    let boxed: Box<dyn Error + Send + Sync> = Box::new(missing_err.clone());
    assert_eq!(boxed.to_string(), missing_err.to_string());
    let converted: ComponentError = entity_err.into();
    assert_eq!(converted, ComponentError::NoSuchEntity(e));
}

// ----- drop counting ----------------------------------------------------------------

/// A component that counts its drops in a counter private to one test.
trait Tracked: Component + Sized {
    fn new(value: u32, drops: &Arc<AtomicUsize>) -> Self;
    fn value(&self) -> u32;
}

#[derive(Component)]
struct TableTracked {
    value: u32,
    drops: Arc<AtomicUsize>,
}

#[derive(Component)]
#[component(storage = "sparse")]
struct SparseTracked {
    value: u32,
    drops: Arc<AtomicUsize>,
}

macro_rules! impl_tracked {
    ($t:ident) => {
        impl Tracked for $t {
            fn new(value: u32, drops: &Arc<AtomicUsize>) -> Self {
                $t {
                    value,
                    drops: Arc::clone(drops),
                }
            }
            fn value(&self) -> u32 {
                self.value
            }
        }
        impl Drop for $t {
            fn drop(&mut self) {
                self.drops.fetch_add(1, Ordering::SeqCst);
            }
        }
    };
}
impl_tracked!(TableTracked);
impl_tracked!(SparseTracked);

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn count(c: &Arc<AtomicUsize>) -> usize {
    c.load(Ordering::SeqCst)
}

fn drops_spawn<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let mut es = Vec::new();
    for i in 0..10 {
        es.push(world.spawn(T::new(i, &drops)));
        es.push(world.spawn((Plain(i), T::new(100 + i, &drops))));
        es.push(world.spawn((T::new(200 + i, &drops), S(i), Marker)));
    }
    assert_eq!(count(&drops), 0, "spawning drops nothing");
    for (k, e) in es.iter().enumerate() {
        let i = (k / 3) as u32;
        assert_eq!(
            world.get::<T>(*e).unwrap().value(),
            [i, 100 + i, 200 + i][k % 3]
        );
    }
    world.check_invariants();
    drop(world);
    assert_eq!(count(&drops), 30);
}

fn drops_spawn_batch<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let a = world.spawn_batch((0..100).map(|i| T::new(i, &drops)));
    let b = world.spawn_batch((0..100).map(|i| (Plain(i), T::new(1000 + i, &drops))));
    assert_eq!(count(&drops), 0);
    for (i, e) in a.iter().enumerate() {
        assert_eq!(world.get::<T>(*e).unwrap().value(), i as u32);
    }
    for (i, e) in b.iter().enumerate() {
        assert_eq!(world.get::<T>(*e).unwrap().value(), 1000 + i as u32);
    }
    world.check_invariants();
    drop(world);
    assert_eq!(count(&drops), 200);
}

fn drops_insert_replace<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let e = world.spawn((T::new(1, &drops), Plain(0)));
    let other = world.spawn((T::new(99, &drops), Plain(1)));
    world.insert_one(e, T::new(2, &drops)).unwrap();
    assert_eq!(count(&drops), 1, "the old value is dropped once");
    assert_eq!(world.get::<T>(e).unwrap().value(), 2);
    // Replace while the entity moves to another archetype.
    world.insert(e, (T::new(3, &drops), Marker)).unwrap();
    assert_eq!(count(&drops), 2);
    assert_eq!(world.get::<T>(e).unwrap().value(), 3);
    // Replace inside a bigger bundle, with the replaced value not first.
    world
        .insert(e, (Plain(5), S(1), T::new(4, &drops)))
        .unwrap();
    assert_eq!(count(&drops), 3);
    assert_eq!(world.get::<T>(e).unwrap().value(), 4);
    assert_eq!(world.get::<T>(other).unwrap().value(), 99);
    world.check_invariants();
    drop(world);
    assert_eq!(count(&drops), 5);
}

fn drops_remove<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let es: Vec<Entity> = (0..5)
        .map(|i| world.spawn((T::new(i, &drops), Plain(i))))
        .collect();
    let (t, p) = world.remove::<(T, Plain)>(es[1]).unwrap();
    assert_eq!((t.value(), p), (1, Plain(1)));
    assert_eq!(count(&drops), 0, "a removed value belongs to the caller");
    drop(t);
    assert_eq!(count(&drops), 1);
    let t = world.remove::<T>(es[3]).unwrap();
    assert_eq!(t.value(), 3);
    assert_eq!(count(&drops), 1);
    drop(t);
    assert_eq!(count(&drops), 2);
    for (i, e) in es.iter().enumerate() {
        if i == 1 || i == 3 {
            assert!(!world.has::<T>(*e));
        } else {
            assert_eq!(world.get::<T>(*e).unwrap().value(), i as u32);
        }
    }
    world.check_invariants();
    drop(world);
    assert_eq!(count(&drops), 5);
}

fn drops_remove_one<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let es: Vec<Entity> = (0..5)
        .map(|i| world.spawn((T::new(i, &drops), Marker)))
        .collect();
    let t = world.remove_one::<T>(es[0]).unwrap();
    assert_eq!(t.value(), 0);
    assert_eq!(count(&drops), 0);
    drop(t);
    assert_eq!(count(&drops), 1);
    assert!(world.remove_one::<T>(es[0]).is_err());
    assert_eq!(count(&drops), 1);
    for (i, e) in es.iter().enumerate().skip(1) {
        assert_eq!(world.get::<T>(*e).unwrap().value(), i as u32);
    }
    drop(world);
    assert_eq!(count(&drops), 5);
}

fn drops_despawn<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let es: Vec<Entity> = (0..10)
        .map(|i| world.spawn((T::new(i, &drops), Plain(i))))
        .collect();
    for e in es.iter().step_by(2) {
        world.despawn(*e).unwrap();
    }
    assert_eq!(count(&drops), 5);
    for (i, e) in es.iter().enumerate() {
        if i % 2 == 1 {
            assert_eq!(world.get::<T>(*e).unwrap().value(), i as u32);
        }
    }
    assert!(world.despawn(es[0]).is_err());
    assert_eq!(count(&drops), 5);
    for e in es.iter().skip(1).step_by(2) {
        world.despawn(*e).unwrap();
    }
    assert_eq!(count(&drops), 10);
    world.check_invariants();
    drop(world);
    assert_eq!(count(&drops), 10);
}

fn drops_clear<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    for i in 0..5 {
        world.spawn(T::new(i, &drops));
        world.spawn((T::new(i, &drops), Plain(i), S(i)));
    }
    world.clear();
    assert_eq!(count(&drops), 10);
    assert!(world.is_empty());
    let e = world.spawn(T::new(7, &drops));
    assert_eq!(world.get::<T>(e).unwrap().value(), 7);
    world.clear();
    assert_eq!(count(&drops), 11);
    world.spawn(T::new(8, &drops));
    drop(world);
    assert_eq!(count(&drops), 12);
}

fn drops_drop_world<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let mut created = 0;
    for i in 0..20u32 {
        let e = world.spawn((T::new(i, &drops), Plain(i)));
        created += 1;
        if i % 3 == 0 {
            world.insert_one(e, Marker).unwrap();
        }
        if i % 4 == 0 {
            world.remove_one::<Plain>(e).unwrap();
        }
        if i % 5 == 0 {
            world.insert_one(e, T::new(1000 + i, &drops)).unwrap();
            created += 1;
        }
        if i % 7 == 0 {
            world.despawn(e).unwrap();
        }
    }
    let before = count(&drops);
    let live = world.len();
    drop(world);
    assert_eq!(count(&drops), created);
    assert_eq!(count(&drops) - before, live);
}

fn drops_nothing_when_moving<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let es: Vec<Entity> = (0..20).map(|i| world.spawn(T::new(i, &drops))).collect();
    for (i, &e) in es.iter().enumerate() {
        world.insert_one(e, Plain(i as u32)).unwrap();
        world.insert(e, (Marker, S(1))).unwrap();
        world.remove_one::<Plain>(e).unwrap();
        if i % 2 == 0 {
            world.remove::<(Marker, S)>(e).unwrap();
        }
    }
    assert_eq!(count(&drops), 0, "moving between archetypes drops nothing");
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(world.get::<T>(e).unwrap().value(), i as u32);
    }
    world.check_invariants();
    drop(world);
    assert_eq!(count(&drops), 20);
}

fn drops_rejected_insert_bundle<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let e = world.spawn(Plain(0));
    world.despawn(e).unwrap();
    assert_eq!(
        world.insert(e, (T::new(1, &drops), Plain(1))),
        Err(EntityError::NoSuchEntity(e))
    );
    assert_eq!(count(&drops), 1, "the refused bundle is dropped once");
    assert_eq!(
        world.insert_one(e, T::new(2, &drops)),
        Err(EntityError::NoSuchEntity(e))
    );
    assert_eq!(count(&drops), 2);
    drop(world);
    assert_eq!(count(&drops), 2);
}

fn drops_nothing_on_failed_remove<T: Tracked>() {
    let drops = counter();
    let mut world = World::new();
    let e = world.spawn((T::new(1, &drops), Plain(1)));
    assert!(world.remove::<(T, Marker)>(e).is_err());
    assert!(world.remove::<(Plain, T, B)>(e).is_err());
    assert_eq!(count(&drops), 0);
    assert_eq!(world.get::<T>(e).unwrap().value(), 1);
    assert_eq!(*world.get::<Plain>(e).unwrap(), Plain(1));
    drop(world);
    assert_eq!(count(&drops), 1);
}

macro_rules! drop_tests {
    ($module:ident, $t:ty) => {
        mod $module {
            use super::*;

            #[test]
            fn spawn() {
                drops_spawn::<$t>();
            }
            #[test]
            fn spawn_batch() {
                drops_spawn_batch::<$t>();
            }
            #[test]
            fn insert_replace() {
                drops_insert_replace::<$t>();
            }
            #[test]
            fn remove() {
                drops_remove::<$t>();
            }
            #[test]
            fn remove_one() {
                drops_remove_one::<$t>();
            }
            #[test]
            fn despawn() {
                drops_despawn::<$t>();
            }
            #[test]
            fn clear() {
                drops_clear::<$t>();
            }
            #[test]
            fn drop_world() {
                drops_drop_world::<$t>();
            }
            #[test]
            fn move_between_archetypes() {
                drops_nothing_when_moving::<$t>();
            }
            #[test]
            fn rejected_insert_drops_bundle() {
                drops_rejected_insert_bundle::<$t>();
            }
            #[test]
            fn failed_remove() {
                drops_nothing_on_failed_remove::<$t>();
            }
        }
    };
}

drop_tests!(drop_table, TableTracked);
drop_tests!(drop_sparse, SparseTracked);

// ----- zero-sized and over-aligned components ----------------------------------------

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Zst;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct SparseZst;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[repr(align(64))]
struct Align64(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[repr(align(128))]
struct Align128(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
#[repr(align(64))]
struct SparseAlign64(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
#[repr(align(128))]
struct SparseAlign128(u32);

/// A zero-sized aligned type: size 0, align 64.
#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[repr(align(64))]
struct AlignedZst;

fn addr<T>(r: &T) -> usize {
    r as *const T as usize
}

#[test]
fn zero_sized_components_table_and_sparse() {
    let mut world = World::new();
    // Fewer under Miri; `half + 1` and `half + 2` stay 2 and 0 modulo 3.
    let n = if cfg!(miri) { 122 } else { 500 };
    let half = n as usize / 2;
    let es: Vec<Entity> = (0..n)
        .map(|i| match i % 3 {
            0 => world.spawn((Zst, Plain(i))),
            1 => world.spawn((SparseZst, Plain(i))),
            _ => world.spawn((Zst, SparseZst, AlignedZst, Plain(i))),
        })
        .collect();
    // Move them around: add/remove other components.
    for (i, &e) in es.iter().enumerate() {
        if i % 2 == 0 {
            world.insert_one(e, Marker).unwrap();
        }
        if i % 5 == 0 {
            world.remove_one::<Plain>(e).unwrap();
        }
        if i % 7 == 0 {
            world.insert(e, (Zst, SparseZst)).unwrap();
        }
    }
    let mut expect_zst = 0;
    let mut expect_sparse = 0;
    for (i, &e) in es.iter().enumerate() {
        let has_zst = i % 3 != 1 || i % 7 == 0;
        let has_sparse = i % 3 != 0 || i % 7 == 0;
        expect_zst += has_zst as usize;
        expect_sparse += has_sparse as usize;
        assert_eq!(
            world.get::<Zst>(e).ok(),
            has_zst.then_some(&Zst),
            "entity {i}"
        );
        assert_eq!(
            world.get::<SparseZst>(e).ok(),
            has_sparse.then_some(&SparseZst)
        );
        if i % 3 == 2 {
            let z = world.get::<AlignedZst>(e).unwrap();
            assert_eq!(addr(z) % 64, 0);
        }
        if i % 5 != 0 {
            assert_eq!(*world.get::<Plain>(e).unwrap(), Plain(i as u32));
        }
        assert_eq!(world.has::<Marker>(e), i % 2 == 0);
    }
    let mut q = world.query::<&Zst>();
    assert_eq!(q.iter(&world).count(), expect_zst);
    let mut qs = world.query::<(Entity, &SparseZst)>();
    assert_eq!(qs.iter(&world).count(), expect_sparse);
    let mut qa = world.query::<&AlignedZst>();
    let mut n = 0;
    for z in qa.iter(&world) {
        assert_eq!(addr(z) % 64, 0);
        n += 1;
    }
    assert_eq!(n, es.len() / 3);

    for &e in &es[..half] {
        world.despawn(e).unwrap();
    }
    assert_eq!(world.remove_one::<Zst>(es[half + 2]), Ok(Zst));
    assert_eq!(world.remove_one::<SparseZst>(es[half + 1]), Ok(SparseZst));
    world.check_invariants();
}

static ZST_DROPS: AtomicUsize = AtomicUsize::new(0);
static SPARSE_ZST_DROPS: AtomicUsize = AtomicUsize::new(0);

/// Zero-sized, with a drop counter only `zero_sized_values_are_dropped_once`
/// uses.
#[derive(Component)]
struct DropZst;
impl Drop for DropZst {
    fn drop(&mut self) {
        ZST_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Component)]
#[component(storage = "sparse")]
struct SparseDropZst;
impl Drop for SparseDropZst {
    fn drop(&mut self) {
        SPARSE_ZST_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn zero_sized_values_are_dropped_once() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..50)
        .map(|i| world.spawn((DropZst, SparseDropZst, Plain(i))))
        .collect();
    let batch = world.spawn_batch((0..50).map(|_| (DropZst, SparseDropZst)));
    assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 0);
    assert_eq!(SPARSE_ZST_DROPS.load(Ordering::SeqCst), 0);
    assert!(batch.iter().all(|&e| world.has::<DropZst>(e)));
    // Remove: the caller drops.
    let (z, s) = world.remove::<(DropZst, SparseDropZst)>(es[0]).unwrap();
    assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 0);
    drop((z, s));
    assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 1);
    assert_eq!(SPARSE_ZST_DROPS.load(Ordering::SeqCst), 1);
    // Replace.
    world.insert(es[1], (DropZst, SparseDropZst)).unwrap();
    assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 2);
    assert_eq!(SPARSE_ZST_DROPS.load(Ordering::SeqCst), 2);
    // Move without drop.
    world.insert_one(es[2], Marker).unwrap();
    assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 2);
    // Despawn.
    world.despawn(es[3]).unwrap();
    assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 3);
    assert_eq!(SPARSE_ZST_DROPS.load(Ordering::SeqCst), 3);
    // Clear: 101 values of each were made (100 spawned, 1 replacement) and 3
    // dropped so far, so 98 were still alive.
    world.clear();
    assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 3 + 98);
    assert_eq!(SPARSE_ZST_DROPS.load(Ordering::SeqCst), 3 + 98);
    // Dropping the world.
    world.spawn_batch((0..10).map(|_| (DropZst, SparseDropZst)));
    drop(world);
    assert_eq!(ZST_DROPS.load(Ordering::SeqCst), 111);
    assert_eq!(SPARSE_ZST_DROPS.load(Ordering::SeqCst), 111);
    assert_eq!(batch.len(), 50);
}

#[test]
fn over_aligned_components_stay_aligned_through_moves() {
    let mut world = World::new();
    // Under Miri, fewer (every branch below is still taken; columns still
    // grow several times).
    let (n, batched) = if cfg!(miri) {
        (60u32, 20)
    } else {
        (300u32, 100)
    };
    let es: Vec<Entity> = (0..n)
        .map(|i| match i % 4 {
            0 => world.spawn(Align64(i)),
            1 => world.spawn((Plain(i), Align128(i), Align64(i))),
            2 => world.spawn((SparseAlign64(i), Align64(i), SparseAlign128(i))),
            _ => world.spawn((Align128(i), Align64(i), SparseAlign128(i), Zst)),
        })
        .collect();
    let batch = world.spawn_batch((n..n + batched).map(|i| (Align64(i), Align128(i), Marker)));

    // Shuffle entities through archetypes.
    for (i, &e) in es.iter().enumerate() {
        let i = i as u32;
        if i % 3 == 0 {
            world.insert_one(e, Plain(i)).unwrap();
        }
        if i % 5 == 0 {
            world.insert(e, (Align128(i), SparseAlign64(i))).unwrap();
        }
        if i % 7 == 0 && world.has::<Align128>(e) {
            assert_eq!(world.remove_one::<Align128>(e), Ok(Align128(i)));
        }
        if i % 11 == 0 {
            world.insert_one(e, Marker).unwrap();
            world.remove_one::<Marker>(e).unwrap();
        }
    }
    for &e in es.iter().step_by(13) {
        world.despawn(e).unwrap();
    }

    let mut expect: HashMap<Entity, u32> = HashMap::new();
    for (i, &e) in es.iter().enumerate() {
        if i % 13 != 0 {
            expect.insert(e, i as u32);
        }
    }
    for (k, &e) in batch.iter().enumerate() {
        expect.insert(e, n + k as u32);
    }

    for (&e, &i) in &expect {
        let a = world.get::<Align64>(e).unwrap();
        assert_eq!(*a, Align64(i));
        assert_eq!(addr(a) % 64, 0, "Align64 of {e:?} misaligned");
        if let Ok(b) = world.get::<Align128>(e) {
            assert_eq!(*b, Align128(i));
            assert_eq!(addr(b) % 128, 0);
        }
        if let Ok(s) = world.get::<SparseAlign64>(e) {
            assert_eq!(*s, SparseAlign64(i));
            assert_eq!(addr(s) % 64, 0);
        }
        if let Ok(s) = world.get::<SparseAlign128>(e) {
            assert_eq!(*s, SparseAlign128(i));
            assert_eq!(addr(s) % 128, 0);
        }
        let m = world.get_mut::<Align64>(e).unwrap();
        assert_eq!(addr(&*m) % 64, 0);
    }

    let mut q = world.query::<(
        Entity,
        &Align64,
        Option<&Align128>,
        Option<&SparseAlign64>,
        Option<&SparseAlign128>,
    )>();
    let mut seen = 0;
    for (e, a, b, s, t) in q.iter(&world) {
        let i = expect[&e];
        assert_eq!(*a, Align64(i));
        assert_eq!(addr(a) % 64, 0);
        if let Some(b) = b {
            assert_eq!(*b, Align128(i));
            assert_eq!(addr(b) % 128, 0);
        }
        if let Some(s) = s {
            assert_eq!(*s, SparseAlign64(i));
            assert_eq!(addr(s) % 64, 0);
        }
        if let Some(t) = t {
            assert_eq!(*t, SparseAlign128(i));
            assert_eq!(addr(t) % 128, 0);
        }
        seen += 1;
    }
    assert_eq!(seen, expect.len());

    let mut qm = world.query::<(&mut Align64, &mut Align128)>();
    let mut seen_mut = 0;
    qm.iter_mut(&mut world).for_each(|(a, b)| {
        assert_eq!(addr(&*a) % 64, 0);
        assert_eq!(addr(&*b) % 128, 0);
        a.0 += 1;
        seen_mut += 1;
    });
    assert!(seen_mut > 0);
    world.check_invariants();
}

// ----- spawn_batch with dishonest size hints -------------------------------------------

/// Yields `0..len` wrapped in `A`, reporting whatever size hint it is told to.
struct Liar {
    next: u32,
    len: u32,
    hint: (usize, Option<usize>),
}

impl Iterator for Liar {
    type Item = A;
    fn next(&mut self) -> Option<A> {
        (self.next < self.len).then(|| {
            self.next += 1;
            A(self.next - 1)
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.hint
    }
}

fn batch_with_hint(len: u32, hint: (usize, Option<usize>)) {
    let mut world = World::new();
    let before = world.spawn(A(u32::MAX));
    let es = world.spawn_batch(Liar { next: 0, len, hint });
    assert_eq!(es.len(), len as usize);
    assert_eq!(world.len(), len as usize + 1);
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(*world.get::<A>(e).unwrap(), A(i as u32));
    }
    let mut q = world.query::<&A>();
    assert_eq!(q.iter(&world).count(), len as usize + 1);
    assert_eq!(*world.get::<A>(before).unwrap(), A(u32::MAX));
    let after = world.spawn(A(7));
    assert_eq!(*world.get::<A>(after).unwrap(), A(7));
    world.check_invariants();

    // `extend` writes the same rows, in the same order.
    let mut extended = World::new();
    extended.spawn(A(u32::MAX));
    extended.extend(Liar { next: 0, len, hint });
    let mut q = extended.query::<&A>();
    let values: Vec<u32> = q.iter(&extended).map(|a| a.0).collect();
    let expected: Vec<u32> = std::iter::once(u32::MAX).chain(0..len).collect();
    assert_eq!(values, expected);
    extended.check_invariants();
}

#[test]
fn spawn_batch_size_hint_too_low() {
    let len = if cfg!(miri) { 100 } else { 1000 };
    batch_with_hint(len, (0, None));
    batch_with_hint(len, (0, Some(0)));
    batch_with_hint(len, (10, Some(10)));
}

#[test]
fn spawn_batch_size_hint_too_high() {
    batch_with_hint(10, (usize::MAX, None));
    batch_with_hint(10, (usize::MAX, Some(usize::MAX)));
    batch_with_hint(0, (usize::MAX, None));
    batch_with_hint(3, (1 << 40, Some(1 << 41)));
}

#[test]
fn spawn_batch_of_sparse_and_mixed_bundles() {
    let mut world = World::new();
    let es = world.spawn_batch((0..100).map(|i| (A(i), S(i * 2))));
    let empty = world.spawn_batch(std::iter::empty::<(A, S)>());
    assert!(empty.is_empty());
    assert_eq!(world.len(), 100);
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(*world.get::<A>(e).unwrap(), A(i as u32));
        assert_eq!(*world.get::<S>(e).unwrap(), S(i as u32 * 2));
    }
    world.check_invariants();
}

// ----- archetype graph ---------------------------------------------------------------

#[test]
fn archetype_edges_are_reused() {
    let mut world = World::new();
    assert_eq!(world.archetype_count(), 1, "just the empty archetype");
    let e1 = world.spawn(A(1));
    let e2 = world.spawn(A(2));
    let e3 = world.spawn(A(3));
    let base = world.archetype_count();
    assert_eq!(base, 2);

    world.insert_one(e1, B(1)).unwrap(); // {A} -> {A,B}: new archetype
    assert_eq!(world.archetype_count(), base + 1);
    world.insert_one(e2, B(2)).unwrap(); // same move: no new archetype
    assert_eq!(world.archetype_count(), base + 1);
    world.insert(e3, (B(3),)).unwrap(); // another bundle type, same target
    assert_eq!(world.archetype_count(), base + 1);
    world.remove_one::<B>(e1).unwrap(); // back to {A}
    assert_eq!(world.archetype_count(), base + 1);
    world.insert_one(e1, B(4)).unwrap();
    assert_eq!(world.archetype_count(), base + 1);
    // Sparse components never create archetypes.
    world.insert_one(e1, S(1)).unwrap();
    world.insert_one(e2, S(2)).unwrap();
    assert_eq!(world.archetype_count(), base + 1);
    // Spawning straight into {A,B}, in either order, reuses it too.
    world.spawn((B(5), A(5)));
    world.spawn((A(6), B(6), S(6)));
    assert_eq!(world.archetype_count(), base + 1);

    assert_eq!(*world.get::<B>(e1).unwrap(), B(4));
    assert_eq!(*world.get::<B>(e2).unwrap(), B(2));
    assert_eq!(*world.get::<B>(e3).unwrap(), B(3));
    let sizes: Vec<usize> = world.archetypes().map(|a| a.len()).collect();
    assert_eq!(sizes, [0, 0, 5]);
    world.check_invariants();
}

// ----- determinism --------------------------------------------------------------------

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
}

/// Runs `ops` pseudo-random operations from `seed`, checking against a simple
/// model as it goes, and returns the query order `(bits, value)`.
fn run_ops(seed: u64, ops: usize) -> Vec<(u64, u32)> {
    let mut rng = Lcg(seed);
    let mut world = World::new();
    let mut live: Vec<Entity> = Vec::new();
    let mut model: HashMap<Entity, Option<u32>> = HashMap::new();
    for step in 0..ops {
        let r = rng.next();
        let pick = |r: u32, live: &Vec<Entity>| live[(r as usize >> 4) % live.len()];
        match r % 8 {
            0 | 1 => {
                let e = world.spawn(A(step as u32));
                live.push(e);
                model.insert(e, Some(step as u32));
            }
            2 => {
                let e = world.spawn((A(step as u32), B(step as u32), S(0)));
                live.push(e);
                model.insert(e, Some(step as u32));
            }
            3 if !live.is_empty() => {
                let e = pick(r, &live);
                world.insert(e, (B(step as u32), C(1))).unwrap();
            }
            4 if !live.is_empty() => {
                let e = pick(r, &live);
                let had = world.has::<B>(e);
                assert_eq!(world.remove_one::<B>(e).is_ok(), had);
            }
            5 if !live.is_empty() => {
                let e = pick(r, &live);
                world.despawn(e).unwrap();
                live.retain(|&x| x != e);
                model.remove(&e);
            }
            6 if !live.is_empty() => {
                let e = pick(r, &live);
                world.insert_one(e, A(step as u32 + 10_000)).unwrap();
                model.insert(e, Some(step as u32 + 10_000));
            }
            7 if !live.is_empty() => {
                let e = pick(r, &live);
                let expected = model[&e].map(A);
                assert_eq!(world.remove_one::<A>(e).ok(), expected);
                model.insert(e, None);
            }
            _ => {
                let e = world.spawn(());
                live.push(e);
                model.insert(e, None);
            }
        }
    }
    world.check_invariants();
    assert_eq!(world.len(), live.len());

    let mut q = world.query::<(Entity, &A)>();
    let order: Vec<(u64, u32)> = q.iter(&world).map(|(e, a)| (e.to_bits(), a.0)).collect();

    let mut from_query: Vec<(u64, u32)> = order.clone();
    from_query.sort_unstable();
    let mut from_model: Vec<(u64, u32)> = model
        .iter()
        .filter_map(|(e, v)| v.map(|v| (e.to_bits(), v)))
        .collect();
    from_model.sort_unstable();
    assert_eq!(from_query, from_model, "query disagrees with the model");
    order
}

#[test]
fn same_operations_give_same_iteration_order() {
    // Scaled under Miri, where the natively instant 2,000 steps took minutes.
    let (short, long) = if cfg!(miri) { (100, 400) } else { (200, 2000) };
    for seed in [1, 42, 0xDEAD_BEEF] {
        let first = run_ops(seed, short);
        let second = run_ops(seed, short);
        assert!(!first.is_empty());
        assert_eq!(first, second, "seed {seed}");
    }
    let long_a = run_ops(7, long);
    let long_b = run_ops(7, long);
    assert_eq!(long_a, long_b);
}

// ----- single sparse components (insert_one / remove_one) ------------------------

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct S2(u32);

#[test]
fn sparse_one_stale_and_reserved_entities() {
    let mut world = World::new();
    let e = world.spawn(A(1));
    world.insert_one(e, S(1)).unwrap();
    world.despawn(e).unwrap();
    // The type's set is remembered from the insert: a stale handle is still
    // refused, and changes nothing.
    assert_eq!(world.insert_one(e, S(2)), Err(EntityError::NoSuchEntity(e)));
    assert_eq!(
        world.remove_one::<S>(e),
        Err(ComponentError::NoSuchEntity(e))
    );
    let reused = world.spawn(A(2));
    assert_eq!(reused.index(), e.index());
    assert!(
        !world.has::<S>(reused),
        "the old value went with the old entity"
    );
    assert_eq!(world.insert_one(e, S(3)), Err(EntityError::NoSuchEntity(e)));
    assert!(!world.has::<S>(reused));
    // A reserved id becomes live at the insert (or remove), as with `insert`.
    let r = world.reserve_entity();
    world.insert_one(r, S(4)).unwrap();
    assert_eq!(*world.get::<S>(r).unwrap(), S(4));
    let r2 = world.reserve_entity();
    assert!(world.remove_one::<S>(r2).is_err());
    assert!(world.contains(r2));
    world.check_invariants();
}

#[test]
fn sparse_one_alternating_types_and_first_remove() {
    let mut world = World::new();
    let e = world.spawn(());
    let f = world.spawn(());
    // Removing a type no entity ever had: missing, and no set is made.
    assert_eq!(
        world.remove_one::<S2>(e),
        Err(ComponentError::MissingComponent {
            entity: e,
            component: "S2".to_owned()
        })
    );
    for i in 0..4 {
        world.insert_one(e, S(i)).unwrap();
        world.insert_one(f, S2(i + 10)).unwrap();
        world.insert_one(f, S(i + 20)).unwrap();
    }
    assert_eq!(*world.get::<S>(e).unwrap(), S(3));
    assert_eq!(*world.get::<S>(f).unwrap(), S(23));
    assert_eq!(*world.get::<S2>(f).unwrap(), S2(13));
    assert_eq!(world.remove_one::<S2>(f), Ok(S2(13)));
    assert_eq!(world.remove_one::<S>(e), Ok(S(3)));
    assert!(world.remove_one::<S2>(e).is_err());
    assert_eq!(world.remove_one::<S>(f), Ok(S(23)));
    // Sets were made in insert order (S, then S2; the failed remove made
    // none): despawn announces sparse components in that order.
    world.insert_one(e, S2(1)).unwrap();
    world.insert_one(e, S(1)).unwrap();
    world.check_invariants();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = order.clone();
    world.observe(move |_: Trigger<OnRemove<S>>, _: DeferredWorld| {
        log.lock().unwrap().push("S");
    });
    let log = order.clone();
    world.observe(move |_: Trigger<OnRemove<S2>>, _: DeferredWorld| {
        log.lock().unwrap().push("S2");
    });
    world.despawn(e).unwrap();
    assert_eq!(*order.lock().unwrap(), ["S", "S2"]);
}

#[test]
fn sparse_one_hooks_and_observers_registered_later_still_run() {
    static ADDS: AtomicUsize = AtomicUsize::new(0);
    static REMOVES: AtomicUsize = AtomicUsize::new(0);
    let mut world = World::new();
    let e = world.spawn(());
    // Warm the fast path for S before any lifecycle exists.
    world.insert_one(e, S(1)).unwrap();
    world.remove_one::<S>(e).unwrap();
    world
        .register_component_hooks::<S>()
        .on_add(|_, _| {
            ADDS.fetch_add(1, Ordering::SeqCst);
        })
        .on_remove(|_, _| {
            REMOVES.fetch_add(1, Ordering::SeqCst);
        });
    world.insert_one(e, S(2)).unwrap();
    world.insert_one(e, S(3)).unwrap(); // a replace: not an add
    assert_eq!(ADDS.load(Ordering::SeqCst), 1);
    assert_eq!(world.remove_one::<S>(e), Ok(S(3)));
    assert_eq!(REMOVES.load(Ordering::SeqCst), 1);

    let seen = Arc::new(AtomicUsize::new(0));
    let f = world.spawn(());
    world.insert_one(f, S2(1)).unwrap();
    let counter = seen.clone();
    world.observe(move |_: Trigger<OnInsert<S2>>, _: DeferredWorld| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    world.insert_one(f, S2(2)).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[test]
fn sparse_one_change_ticks() {
    let mut world = World::new();
    let e = world.spawn(A(0));
    let mut added = world.query_filtered::<Entity, Added<S>>();
    let mut changed = world.query_filtered::<Entity, Changed<S>>();
    assert_eq!(added.iter(&world).count(), 0);
    assert_eq!(changed.iter(&world).count(), 0);
    world.insert_one(e, S(1)).unwrap();
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), [e]);
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [e]);
    world.insert_one(e, S(2)).unwrap();
    assert_eq!(added.iter(&world).count(), 0, "a replace is no add");
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [e]);
    assert_eq!(changed.iter(&world).count(), 0);
    world.remove_one::<S>(e).unwrap();
    world.insert_one(e, S(3)).unwrap();
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), [e]);
}

#[test]
fn sparse_one_replace_drops_old_value_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    #[derive(Component)]
    #[component(storage = "sparse")]
    struct Counted(#[allow(dead_code)] u32);
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }
    let mut world = World::new();
    let e = world.spawn(());
    world.insert_one(e, Counted(1)).unwrap();
    world.insert_one(e, Counted(2)).unwrap();
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    let taken = world.remove_one::<Counted>(e).unwrap();
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    drop(taken);
    assert_eq!(DROPS.load(Ordering::SeqCst), 2);
    world.insert_one(e, Counted(3)).unwrap();
    drop(world);
    assert_eq!(DROPS.load(Ordering::SeqCst), 3);
}

// ----- spawn_batch's fresh ids taken in one step ---------------------------------

/// An iterator with a made-up size hint.
struct Hinted<I>(I, (usize, Option<usize>));

impl<I: Iterator> Iterator for Hinted<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        self.0.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.1
    }
}

#[test]
fn spawn_batch_gives_back_unused_ids() {
    // A hint of 1000 for 10 entities: the next spawn still gets the next
    // index, not one past the hinted count.
    let mut world = World::new();
    let es = world.spawn_batch(Liar {
        next: 0,
        len: 10,
        hint: (1000, Some(1000)),
    });
    let indices: Vec<u32> = es.iter().map(|e| e.index()).collect();
    assert_eq!(indices, (0..10).collect::<Vec<_>>());
    assert_eq!(world.spawn(A(0)).index(), 10);
    assert_eq!(world.len(), 11);
    world.check_invariants();
}

#[test]
fn spawn_batch_with_command_buffer_reserving_meanwhile() {
    let mut world = World::new();
    let mut commands = CommandBuffer::new(&world);
    let mut reserved = Vec::new();
    // The hint claims 150: the batch takes ids 0..150 at once, the buffer
    // takes ids past them, and the 50 unused ones cannot go back to the
    // shared counter: they become free slots.
    let es = world.spawn_batch(Hinted(
        (0..100u32).map(|i| {
            if i % 40 == 0 {
                // A fresh id taken mid-batch, from the same shared counter.
                reserved.push(commands.spawn(B(i)));
            }
            A(i)
        }),
        (150, Some(150)),
    ));
    assert!(reserved.iter().all(|r| r.index() >= 150));
    assert_eq!(es.len(), 100);
    assert_eq!(reserved.len(), 3);
    world.check_invariants();
    commands.apply(&mut world).unwrap();
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(*world.get::<A>(e).unwrap(), A(i as u32));
    }
    for (&r, i) in reserved.iter().zip([0, 40, 80]) {
        assert_eq!(*world.get::<B>(r).unwrap(), B(i));
    }
    let mut all: Vec<Entity> = es.iter().chain(&reserved).copied().collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 103, "no id handed out twice");
    assert_eq!(world.len(), 103);
    // Later spawns reuse nothing live and keep the world consistent.
    let more = world.spawn_batch((0..50u32).map(B));
    for &e in &more {
        assert!(!all.contains(&e));
    }
    assert_eq!(world.len(), 153);
    world.check_invariants();
}

#[test]
fn spawn_batch_iterator_panic_keeps_ids_consistent() {
    let mut world = World::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn_batch((0..100u32).map(|i| {
            assert!(i < 30, "iterator fails");
            A(i)
        }))
    }));
    assert!(result.is_err());
    assert_eq!(world.len(), 30);
    assert_eq!(world.spawn(A(0)).index(), 30);
    world.check_invariants();
}

// ----- sort_by_key -------------------------------------------------------------

#[test]
fn sort_by_key_reorders_each_table_and_keeps_every_handle() {
    let mut world = World::new();
    // Two tables holding A, one with a droppable and a zero-sized column.
    let keys = [5u32, 3, 9, 3, 0, 7, 1];
    let plain: Vec<Entity> = keys
        .iter()
        .map(|&k| world.spawn((A(k), B(k * 10))))
        .collect();
    let named: Vec<Entity> = keys
        .iter()
        .map(|&k| world.spawn((A(100 - k), Marker, Plain(k), C(k))))
        .collect();
    world.insert_one(named[2], S(42)).unwrap();
    world.sort_by_key::<A, _>(|a| a.0);
    world.check_invariants();
    let order = world.run_system_once(|q: Query<(Entity, &A)>| {
        q.iter().map(|(e, a)| (e, a.0)).collect::<Vec<_>>()
    });
    let (first, second) = order.split_at(keys.len());
    assert_eq!(
        first.iter().map(|x| x.1).collect::<Vec<_>>(),
        [0, 1, 3, 3, 5, 7, 9]
    );
    assert_eq!(
        second.iter().map(|x| x.1).collect::<Vec<_>>(),
        [91, 93, 95, 97, 97, 99, 100]
    );
    // Stable: the two 3s keep their spawn order.
    assert_eq!((first[2].0, first[3].0), (plain[1], plain[3]));
    // Every handle still finds its own components, and structural changes
    // after the sort work.
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(world.get::<A>(plain[i]), Ok(&A(k)));
        assert_eq!(world.get::<B>(plain[i]), Ok(&B(k * 10)));
        assert_eq!(world.get::<Plain>(named[i]), Ok(&Plain(k)));
        assert_eq!(world.get::<C>(named[i]), Ok(&C(k)));
    }
    assert_eq!(world.get::<S>(named[2]), Ok(&S(42)));
    world.despawn(plain[4]).unwrap();
    world.remove_one::<B>(plain[0]).unwrap();
    world.insert_one(named[0], B(1)).unwrap();
    world.check_invariants();
    assert_eq!(world.get::<A>(plain[0]), Ok(&A(5)));
    // Already sorted: nothing moves.
    world.sort_by_key::<A, _>(|a| a.0);
    world.sort_by_key::<Plain, _>(|p| std::cmp::Reverse(p.0));
    world.check_invariants();
    // Each table on its own: named[0] (Plain 5) moved to a table of its own
    // when it got a B.
    let plains =
        world.run_system_once(|q: Query<&Plain>| q.iter().map(|p| p.0).collect::<Vec<_>>());
    assert_eq!(plains, [9, 7, 3, 3, 1, 0, 5]);
}

#[test]
fn sort_by_key_moves_ticks_with_values_and_is_not_a_change() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..6).map(|i| world.spawn(A(10 - i))).collect();
    let mut changed = world.query_filtered::<Entity, Changed<A>>();
    assert_eq!(changed.iter(&world).count(), 6);
    world.get_mut::<A>(es[1]).unwrap().0 = 50;
    world.sort_by_key::<A, _>(|a| a.0);
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [es[1]]);
    assert_eq!(changed.iter(&world).count(), 0);
}

#[test]
fn sort_by_key_orders_a_sparse_set() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..5).map(|i| world.spawn(A(i))).collect();
    for (&e, k) in es.iter().zip([4, 2, 8, 6, 0]) {
        world.insert_one(e, S(k)).unwrap();
    }
    world.remove_one::<S>(es[4]).unwrap();
    world.sort_by_key::<S, _>(|s| s.0);
    world.check_invariants();
    let order = world
        .run_system_once(|q: Query<(Entity, &S)>| q.iter().map(|(e, _)| e).collect::<Vec<_>>());
    assert_eq!(order, [es[1], es[0], es[3], es[2]]);
    assert_eq!(world.get::<S>(es[2]), Ok(&S(8)));
    assert!(world.get::<S>(es[4]).is_err());
    world.insert_one(es[4], S(1)).unwrap();
    assert_eq!(world.remove_one::<S>(es[1]), Ok(S(2)));
    world.check_invariants();
}

#[test]
fn sort_by_key_with_a_panicking_key_changes_nothing() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..5).map(|i| world.spawn((A(5 - i), B(i)))).collect();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.sort_by_key::<A, _>(|a| {
            assert!(a.0 != 2, "no twos");
            a.0
        })
    }));
    assert!(result.is_err());
    world.check_invariants();
    let order = world.run_system_once(|q: Query<Entity>| q.iter().collect::<Vec<_>>());
    assert_eq!(order, es);
    // A component nobody registered: nothing to sort.
    world.sort_by_key::<Plain, _>(|p| p.0);
}

// ----- sparse_mut ----------------------------------------------------------------

#[derive(Component, Debug)]
#[component(storage = "sparse")]
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Component, Debug, PartialEq)]
#[component(storage = "sparse")]
struct Hooked(u32);

#[test]
fn sparse_mut_inserts_and_removes_like_insert_one_and_remove_one() {
    let mut world = World::new();
    let es = world.spawn_batch((0..6).map(A));
    let gone = world.spawn(A(99));
    world.despawn(gone).unwrap();
    let mut added = world.query_filtered::<Entity, Added<S>>();
    added.iter(&world).count();
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let mut s = world.sparse_mut::<S>().unwrap();
        assert!(s.is_empty());
        for (i, &e) in es.iter().enumerate() {
            assert_eq!(s.insert(e, S(i as u32)), Ok(None));
        }
        assert_eq!(s.insert(es[0], S(50)), Ok(Some(S(0))));
        assert_eq!(s.insert(gone, S(1)), Err(EntityError::NoSuchEntity(gone)));
        assert_eq!(s.remove(es[1]), Ok(S(1)));
        assert!(matches!(
            s.remove(es[1]),
            Err(ComponentError::MissingComponent { entity, .. }) if entity == es[1]
        ));
        assert_eq!(s.remove(gone), Err(ComponentError::NoSuchEntity(gone)));
        assert_eq!(s.len(), 5);
    }
    world.check_invariants();
    assert_eq!(world.get::<S>(es[0]), Ok(&S(50)));
    assert!(world.get::<S>(es[1]).is_err());
    assert_eq!(
        world.get::<A>(es[1]),
        Ok(&A(1)),
        "the entity itself is untouched"
    );
    let mut seen: Vec<Entity> = added.iter(&world).collect();
    seen.sort();
    let mut want: Vec<Entity> = es.iter().copied().filter(|&e| e != es[1]).collect();
    want.sort();
    assert_eq!(seen, want, "inserts are stamped as added");
    // Values are dropped exactly once: replaced, removed, or with the world.
    {
        let mut c = world.sparse_mut::<Counted>().unwrap();
        c.insert(es[2], Counted(drops.clone())).unwrap();
        drop(c.insert(es[2], Counted(drops.clone())).unwrap());
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        drop(c.remove(es[2]).unwrap());
        c.insert(es[3], Counted(drops.clone())).unwrap();
    }
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    world.despawn(es[3]).unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), 3);
    world.check_invariants();
}

#[test]
fn sparse_mut_refuses_table_components_and_announced_ones() {
    let mut world = World::new();
    let e = world.spawn(A(1));
    assert_eq!(
        world.sparse_mut::<A>().unwrap_err(),
        SparseMutError::NotSparse("A".into())
    );
    world.register_component_hooks::<Hooked>().on_add(|_, _| {});
    let err = world.sparse_mut::<Hooked>().unwrap_err();
    assert_eq!(err, SparseMutError::Announced("Hooked".into()));
    assert!(err.to_string().contains("insert_one"));
    world.insert_one(e, Hooked(2)).unwrap();
    assert_eq!(world.get::<Hooked>(e), Ok(&Hooked(2)));
}

/// The public view of where entities are, for layers above the core (a
/// scene saver reads whole columns through it): a location and the
/// archetype's column agree after every kind of move.
#[test]
fn location_and_archetype_columns_follow_every_move() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..6).map(|i| world.spawn((A(i), B(i)))).collect();
    world.insert_one(es[1], C(1)).unwrap();
    world.remove_one::<B>(es[2]).unwrap();
    world.despawn(es[0]).unwrap();
    world.insert_one(es[4], S(4)).unwrap();
    for (i, &e) in es.iter().enumerate().skip(1) {
        let location = world.location(e).unwrap();
        let archetype = world.get_archetype(location.archetype).unwrap();
        let row = location.row as usize;
        assert_eq!(archetype.entities()[row], e);
        assert_eq!(archetype.column::<A>().unwrap()[row], A(i as u32));
        assert_eq!(
            archetype.column::<B>().map(|b| b[row]),
            world.get::<B>(e).ok().copied()
        );
        assert!(
            archetype.column::<S>().is_none(),
            "sparse values live elsewhere"
        );
    }
    assert_eq!(world.location(es[0]), None);
    for archetype in world.archetypes() {
        let found = world.get_archetype(archetype.id()).unwrap();
        assert_eq!(found.entities(), archetype.entities());
    }
    // An id from a bigger world is not one of this world's archetypes.
    let mut other = World::new();
    other.spawn((A(0), B(0), C(0), S(0)));
    other.spawn(Plain(0));
    let last = other.archetypes().last().unwrap().id();
    assert!(World::new().get_archetype(last).is_none());
}

#[test]
fn contains_id_sees_table_sparse_and_runtime_defined_components() {
    use mosaic::{ComponentSchema, FieldType, FieldValue};
    let mut world = World::new();
    let mana = ComponentSchema::new("Mana").field("max", FieldType::Int);
    let mana_id = world.register_dynamic_component(mana.clone()).unwrap();
    let e = world.spawn((A(1), S(2)));
    let bare = world.spawn(());
    world
        .insert_dynamic(e, mana.instantiate([("max", FieldValue::Int(5))]).unwrap())
        .unwrap();
    let a = world.component_id::<A>().unwrap();
    let s = world.component_id::<S>().unwrap();
    for id in [a, s, mana_id] {
        assert!(world.contains_id(e, id));
        assert!(!world.contains_id(bare, id));
    }
    let unregistered = world.register_component::<B>();
    assert!(!world.contains_id(e, unregistered));
    world.despawn(e).unwrap();
    assert!(!world.contains_id(e, a), "a stale handle has nothing");
    let names: Vec<&str> = world.component_infos().map(|i| i.name()).collect();
    assert_eq!(names.len(), world.component_infos().len());
    assert!(["A", "S", "Mana", "B"].iter().all(|n| names.contains(n)));
    let mana_info = world
        .component_infos()
        .find(|i| i.name() == "Mana")
        .unwrap();
    assert_eq!((mana_info.id(), mana_info.type_name()), (mana_id, None));
}

/// One of 400 component types (`Many<P, Q>` for P, Q in 0..20): more types
/// than the world's cache of type lookups has slots, so some must share a
/// slot and be found through the map behind it.
#[derive(Debug, PartialEq)]
struct Many<const P: usize, const Q: usize>(usize);

impl<const P: usize, const Q: usize> Component for Many<P, Q> {}

macro_rules! each_b {
    ($f:ident, $a:literal; $($b:literal)*) => { $( $f!($a, $b); )* };
}
macro_rules! each_ab {
    ($f:ident; $($a:literal)*) => {
        $( each_b!($f, $a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19); )*
    };
}

/// Spawns the `P * 20 + Q`th entity, holding the one `Many<P, Q>`.
///
/// The per-type steps are functions, not macro bodies inside the test: as
/// 400 copies in one function body (which LLVM cannot spread over codegen
/// units) they made this file take 72 s to compile, against 46 s as 400
/// small functions (`cargo test --test world --no-run`, non-incremental,
/// 2 cores) — time on the critical path of CI's test step.
fn spawn_many<const P: usize, const Q: usize>(world: &mut World, spawned: &mut Vec<Entity>) {
    spawned.push(world.spawn(Many::<P, Q>(P * 20 + Q)));
}

/// `Many<P, Q>` answers for its own entity (spawned `P * 20 + Q`th), and
/// only there; then it is written through `get_mut`.
fn check_many<const P: usize, const Q: usize>(world: &mut World, spawned: &[Entity]) {
    let i = P * 20 + Q;
    let e = spawned[i];
    assert_eq!(world.get::<Many<P, Q>>(e).unwrap(), &Many(i));
    world.get_mut::<Many<P, Q>>(e).unwrap().0 += 1000;
    let other = spawned[(i + 1) % spawned.len()];
    assert!(matches!(
        world.get::<Many<P, Q>>(other),
        Err(ComponentError::MissingComponent { .. })
    ));
}

/// The write of [`check_many`] landed in `Many<P, Q>`'s own entity.
fn check_written_many<const P: usize, const Q: usize>(world: &World, spawned: &[Entity]) {
    let i = P * 20 + Q;
    assert_eq!(world.get::<Many<P, Q>>(spawned[i]).unwrap().0, i + 1000);
}

#[test]
// The cache it checks is safe code, and `get` itself is covered under Miri
// by the rest of this file; 400 types take 47 s there.
#[cfg_attr(miri, ignore = "47 s under Miri; the type cache has no unsafe code")]
fn get_finds_each_of_hundreds_of_component_types() {
    let mut world = World::new();
    let mut spawned = Vec::new();
    macro_rules! spawn {
        ($a:literal, $b:literal) => {
            spawn_many::<$a, $b>(&mut world, &mut spawned);
        };
    }
    each_ab!(spawn; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    macro_rules! check {
        ($a:literal, $b:literal) => {
            check_many::<$a, $b>(&mut world, &spawned);
        };
    }
    each_ab!(check; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    macro_rules! check_written {
        ($a:literal, $b:literal) => {
            check_written_many::<$a, $b>(&world, &spawned);
        };
    }
    each_ab!(check_written; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    // A second world that knows only the last type: its cache and map are
    // its own (`Many<0, 0>` is not registered there at all).
    let mut other = World::new();
    let e = other.spawn(Many::<19, 19>(7));
    assert_eq!(other.get::<Many<19, 19>>(e).unwrap().0, 7);
    assert!(other.get::<Many<0, 0>>(e).is_err());
    assert_eq!(world.get::<Many<19, 19>>(spawned[399]).unwrap().0, 1399);
}

/// `get` / `get_mut` remember where a type's column was in the last table
/// they met (issue #40): lookups that hop between tables where the column
/// sits at different positions, into a table without it, and back, each
/// still answer with the entity's own value.
#[test]
fn get_hops_between_tables_with_the_column_in_different_places() {
    let mut world = World::new();
    // `C` first in one table, after `A` and `B` in another, alone in a
    // third; `b_only` has no `C` at all.
    let c_only = world.spawn(C(1));
    let abc = world.spawn((A(10), B(20), C(2)));
    let bc = world.spawn((B(30), C(3)));
    let b_only = world.spawn(B(40));
    for round in 0..3u32 {
        for (entity, want) in [(c_only, 1), (abc, 2), (bc, 3), (abc, 2), (c_only, 1)] {
            assert_eq!(world.get::<C>(entity).unwrap().0, want + round * 100);
        }
        assert!(matches!(
            world.get::<C>(b_only),
            Err(ComponentError::MissingComponent { .. })
        ));
        assert!(world.get_mut::<C>(b_only).is_err());
        assert_eq!(world.get::<B>(b_only).unwrap().0, 40);
        for entity in [bc, c_only, abc] {
            world.get_mut::<C>(entity).unwrap().0 += 100;
        }
        // A read of another type in between leaves `C`'s hint alone.
        assert_eq!(world.get::<A>(abc).unwrap().0, 10);
    }
    // A new table made after the hints were set.
    let ac = world.spawn((A(50), C(5)));
    assert_eq!(world.get::<C>(ac).unwrap().0, 5);
    assert_eq!(world.get::<C>(abc).unwrap().0, 302);
    world.despawn(abc).unwrap();
    assert!(world.get::<C>(abc).is_err());
    assert_eq!(world.get_mut::<C>(bc).unwrap().0, 303);
}

// ----- get / get_mut by entity: the column hint's fast path ----------------------------

/// Every live entity's `A` (and `B`, `S` where it has them) read back by
/// `get`, `get_mut`, `has` and `entity(..).get`, and each of `dead` refused
/// as no such entity.
fn check_lookups(world: &mut World, live: &HashMap<Entity, (u32, bool, bool)>, dead: &[Entity]) {
    // A miss's error (with its type name) is checked once a call: building
    // it for every entity would only make the test slow under Miri.
    let mut missed = false;
    for (&e, &(a, has_b, has_s)) in live {
        assert_eq!(world.get::<A>(e), Ok(&A(a)));
        assert_eq!(world.entity(e).unwrap().get::<A>(), Ok(&A(a)));
        assert_eq!(world.get_mut::<A>(e).map(|v| *v), Ok(A(a)));
        assert_eq!(world.has::<B>(e), has_b);
        if has_b {
            assert_eq!(world.get::<B>(e), Ok(&B(a + 1)));
            assert_eq!(world.get_mut::<B>(e).map(|v| v.0), Ok(a + 1));
        } else if !missed {
            missed = true;
            assert!(matches!(
                world.get_mut::<B>(e),
                Err(ComponentError::MissingComponent { .. })
            ));
            assert!(matches!(
                world.get::<B>(e),
                Err(ComponentError::MissingComponent { .. })
            ));
        }
        assert_eq!(world.has::<S>(e), has_s);
        if has_s {
            assert_eq!(world.get::<S>(e), Ok(&S(a)));
            assert_eq!(world.get_mut::<S>(e).map(|v| v.0), Ok(a));
        }
    }
    for &e in dead {
        assert_eq!(world.get::<A>(e), Err(ComponentError::NoSuchEntity(e)));
        assert_eq!(
            world.get_mut::<A>(e).map(|v| *v),
            Err(ComponentError::NoSuchEntity(e))
        );
        assert!(!world.has::<A>(e));
    }
}

/// `get` and `get_mut` find each entity's value while its rows and
/// archetypes change under lookups that alternate between archetypes (so
/// the per-type column hint keeps being replaced): swap-removes by despawn,
/// moves by insert and remove, sparse components beside the table ones.
#[test]
fn get_follows_entities_through_moves_and_despawns() {
    let mut world = World::new();
    let mut live = HashMap::new();
    let mut dead = Vec::new();
    let mut order = Vec::new();
    for i in 0..60u32 {
        let e = match i % 3 {
            0 => world.spawn((A(i), B(i + 1))),
            1 => world.spawn((A(i), C(i))),
            _ => world.spawn((C(i), A(i), B(i + 1), S(i))),
        };
        live.insert(e, (i, i % 3 != 1, i % 3 == 2));
        order.push(e);
    }
    check_lookups(&mut world, &live, &dead);
    for (k, &e) in order.iter().enumerate() {
        let (a, has_b, has_s) = live[&e];
        match k % 5 {
            // A swap-remove: the table's last entity takes this row.
            0 => {
                world.despawn(e).unwrap();
                live.remove(&e);
                dead.push(e);
            }
            1 if has_b => {
                world.remove_one::<B>(e).unwrap();
                live.insert(e, (a, false, has_s));
            }
            2 if !has_b => {
                world.insert_one(e, B(a + 1)).unwrap();
                live.insert(e, (a, true, has_s));
            }
            3 if !has_s => {
                world.insert_one(e, S(a)).unwrap();
                live.insert(e, (a, has_b, true));
            }
            _ => {
                world.insert_one(e, Marker).unwrap();
            }
        }
        if k % 20 == 0 {
            check_lookups(&mut world, &live, &dead);
        }
    }
    check_lookups(&mut world, &live, &dead);
    // A write through `get_mut` lands in the entity's own row.
    for (&e, &(a, _, _)) in &live {
        world.get_mut::<A>(e).unwrap().0 = a * 10;
    }
    for (&e, &(a, _, _)) in &live {
        assert_eq!(world.get::<A>(e), Ok(&A(a * 10)));
    }
}

/// An id whose slot holds no entity yet (reserved, not flushed) or any more
/// (retired at the last generation) is no such entity to `get` and
/// `get_mut`, whether or not the type's hint has been set.
#[test]
fn get_refuses_reserved_and_retired_ids() {
    for warm in [false, true] {
        let mut world = World::new();
        world.register_component::<A>();
        let keep = world.spawn(A(1));
        let gone = world.spawn(A(2));
        world.despawn(gone).unwrap();
        if warm {
            assert_eq!(world.get::<A>(keep), Ok(&A(1)));
            assert_eq!(world.get_mut::<A>(keep).map(|v| v.0), Ok(1));
        }
        // The despawned slot's index again, with its next generation.
        let reserved = world.reserve_entity();
        assert_eq!(reserved.index(), gone.index());
        assert_eq!(
            world.get::<A>(reserved),
            Err(ComponentError::NoSuchEntity(reserved))
        );
        assert_eq!(
            world.get::<S>(reserved),
            Err(ComponentError::NoSuchEntity(reserved))
        );
        assert!(!world.has::<A>(reserved));
        assert_eq!(
            world.get_mut::<A>(reserved).map(|v| v.0),
            Err(ComponentError::NoSuchEntity(reserved))
        );
        assert_eq!(
            world.get::<A>(gone),
            Err(ComponentError::NoSuchEntity(gone))
        );
    }
    // A slot retired at the last generation keeps that generation.
    let mut world = World::new();
    let last = std::num::NonZeroU32::new(u32::MAX).unwrap();
    world.debug_set_next_generation(0, last);
    let e = world.spawn(A(5));
    assert_eq!(e.generation(), u32::MAX);
    assert_eq!(world.get::<A>(e), Ok(&A(5)));
    world.despawn(e).unwrap();
    assert_eq!(world.get::<A>(e), Err(ComponentError::NoSuchEntity(e)));
    assert_eq!(
        world.get_mut::<A>(e).map(|v| v.0),
        Err(ComponentError::NoSuchEntity(e))
    );
}

/// A disabled entity's components are still there to `get` and `get_mut`
/// by id (only queries skip it).
#[test]
fn get_reads_disabled_entities() {
    let mut world = World::new();
    let a = world.spawn((A(1), B(2)));
    let b = world.spawn((A(3), B(4)));
    assert_eq!(world.get::<A>(a), Ok(&A(1)));
    world.insert_one(b, mosaic::Disabled).unwrap();
    assert_eq!(world.get::<A>(b), Ok(&A(3)));
    world.get_mut::<B>(b).unwrap().0 = 40;
    assert_eq!(world.get::<B>(b), Ok(&B(40)));
    assert_eq!(world.get::<A>(a), Ok(&A(1)));
}
