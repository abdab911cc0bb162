//! Integration tests for entity handles: the `Entity` value type (index +
//! generation, bit packing, formatting), the allocator's free list and
//! generation bumping, stale-handle rejection by every API, generation
//! exhaustion (retired slots), id reservation through `&World`, and the
//! independence of worlds (ids, `Send + Sync`, query states tied to their
//! world).

use std::collections::{BTreeSet, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::num::NonZeroU32;

use mosaic::prelude::*;

#[derive(Component, Debug, PartialEq, Clone, Copy)]
struct Val(u32);

#[derive(Component, Debug, PartialEq, Clone, Copy)]
#[component(storage = "sparse")]
struct SparseVal(u32);

#[derive(Component, Debug, PartialEq)]
struct Other;

fn entity(index: u32, generation: u32) -> Entity {
    Entity::from_bits(((generation as u64) << 32) | index as u64).expect("nonzero generation")
}

// ----- the Entity value type ------------------------------------------------

#[test]
fn entity_is_copy_eq_ord_hash_debug() {
    fn assert_traits<T: Copy + Eq + Ord + Hash + Debug>() {}
    assert_traits::<Entity>();

    let mut world = World::new();
    let a = world.spawn(());
    let b = a; // Copy: `a` stays usable
    assert_eq!(a, b);
    let c = world.spawn(());
    assert_ne!(a, c);

    let set: HashSet<Entity> = [a, b, c].into_iter().collect();
    assert_eq!(set.len(), 2);

    let sorted: BTreeSet<Entity> = [entity(2, 1), entity(1, 1), entity(3, 1)].into();
    let indices: Vec<u32> = sorted.iter().map(|e| e.index()).collect();
    assert_eq!(indices, [1, 2, 3]);
    assert!(
        entity(5, 1) < entity(5, 2),
        "same index orders by generation"
    );
}

#[test]
fn debug_and_display_print_index_v_generation() {
    let e = entity(12, 3);
    assert_eq!(format!("{e:?}"), "12v3");
    assert_eq!(format!("{e}"), "12v3");

    let mut world = World::new();
    let first = world.spawn(());
    assert_eq!(format!("{first:?}"), "0v1");
    world.despawn(first).unwrap();
    let again = world.spawn(());
    assert_eq!(format!("{again:?}"), "0v2");
}

#[test]
fn index_generation_and_bits_round_trip() {
    let e = entity(7, 3);
    assert_eq!(e.index(), 7);
    assert_eq!(e.generation(), 3);
    assert_eq!(e.to_bits(), (3u64 << 32) | 7);
    assert_eq!(Entity::from_bits(e.to_bits()), Some(e));

    let extreme = entity(u32::MAX, u32::MAX);
    assert_eq!(extreme.index(), u32::MAX);
    assert_eq!(extreme.generation(), u32::MAX);
    assert_eq!(extreme.to_bits(), u64::MAX);
    assert_eq!(Entity::from_bits(u64::MAX), Some(extreme));

    let mut world = World::new();
    let spawned: Vec<Entity> = (0..50).map(|_| world.spawn(())).collect();
    for e in spawned {
        let back = Entity::from_bits(e.to_bits()).unwrap();
        assert_eq!(back, e);
        assert!(
            world.contains(back),
            "a rebuilt handle refers to the same entity"
        );
    }
}

#[test]
fn from_bits_with_generation_zero_is_none() {
    assert_eq!(Entity::from_bits(0), None);
    assert_eq!(Entity::from_bits(7), None);
    assert_eq!(Entity::from_bits(u32::MAX as u64), None);
    assert!(Entity::from_bits(1 << 32).is_some());
}

#[test]
fn first_spawns_get_sequential_indices_and_generation_one() {
    let mut world = World::new();
    for i in 0..10u32 {
        let e = world.spawn(Val(i));
        assert_eq!((e.index(), e.generation()), (i, 1));
    }
}

// ----- free list ---------------------------------------------------------------

#[test]
fn next_spawn_reuses_freed_index_with_bumped_generation() {
    let mut world = World::new();
    let a = world.spawn(Val(1));
    let _b = world.spawn(Val(2));
    world.despawn(a).unwrap();
    let c = world.spawn(Val(3));
    assert_eq!(c.index(), a.index());
    assert_eq!(c.generation(), a.generation() + 1);
    assert_ne!(c, a);
    assert_eq!(*world.get::<Val>(c).unwrap(), Val(3));
}

#[test]
fn free_list_is_lifo() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..5).map(|i| world.spawn(Val(i))).collect();
    // Free 1, then 3, then 0: reuse order must be 0, 3, 1, then a fresh index.
    world.despawn(es[1]).unwrap();
    world.despawn(es[3]).unwrap();
    world.despawn(es[0]).unwrap();
    let n1 = world.spawn(());
    let n2 = world.spawn(());
    let n3 = world.spawn(());
    let n4 = world.spawn(());
    assert_eq!(
        [n1, n2, n3, n4].map(|e| (e.index(), e.generation())),
        [(0, 2), (3, 2), (1, 2), (5, 1)]
    );
    world.check_invariants();
}

#[test]
fn generation_increases_every_reuse() {
    let mut world = World::new();
    let mut e = world.spawn(());
    for expected in 2..=100u32 {
        world.despawn(e).unwrap();
        let next = world.spawn(());
        assert_eq!(next.index(), e.index());
        assert_eq!(next.generation(), expected);
        assert!(!world.contains(e));
        e = next;
    }
    assert_eq!(world.len(), 1);
}

// ----- stale handles --------------------------------------------------------------

#[test]
fn stale_handle_is_rejected_by_every_api_and_never_reaches_new_occupant() {
    let mut world = World::new();
    let old = world.spawn((Val(1), SparseVal(10)));
    world.despawn(old).unwrap();
    let new = world.spawn((Val(2), SparseVal(20)));
    assert_eq!(new.index(), old.index(), "the new entity reuses the slot");
    assert_ne!(new.generation(), old.generation());

    let stale = old;
    assert_eq!(world.despawn(stale), Err(EntityError::NoSuchEntity(stale)));
    assert_eq!(
        world.insert(stale, (Val(99), SparseVal(99), Other)),
        Err(EntityError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.insert_one(stale, Val(98)),
        Err(EntityError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.insert_one(stale, SparseVal(98)),
        Err(EntityError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.insert_one(stale, Other),
        Err(EntityError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.remove::<(Val, SparseVal)>(stale),
        Err(ComponentError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.remove_one::<Val>(stale),
        Err(ComponentError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.remove_one::<SparseVal>(stale),
        Err(ComponentError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.get::<Val>(stale),
        Err(ComponentError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.get::<SparseVal>(stale),
        Err(ComponentError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.get_mut::<Val>(stale).copied(),
        Err(ComponentError::NoSuchEntity(stale))
    );
    assert_eq!(
        world.get_mut::<SparseVal>(stale).copied(),
        Err(ComponentError::NoSuchEntity(stale))
    );
    assert!(!world.has::<Val>(stale));
    assert!(!world.has::<SparseVal>(stale));
    assert!(!world.contains(stale));

    let mut q = world.query::<&Val>();
    assert_eq!(
        q.get(&world, stale).copied(),
        Err(QueryEntityError::NoSuchEntity(stale))
    );
    let mut qs = world.query::<(&Val, &SparseVal)>();
    assert_eq!(
        qs.get(&world, stale).map(|(a, b)| (*a, *b)),
        Err(QueryEntityError::NoSuchEntity(stale))
    );
    let mut qm = world.query::<(&mut Val, &mut SparseVal)>();
    assert_eq!(
        qm.get_mut(&mut world, stale).map(|(a, b)| (*a, *b)),
        Err(QueryEntityError::NoSuchEntity(stale))
    );
    let mut qe = world.query::<Entity>();
    assert_eq!(
        qe.get(&world, stale),
        Err(QueryEntityError::NoSuchEntity(stale))
    );

    // The new occupant of the slot is untouched by all of the above.
    assert!(world.contains(new));
    assert_eq!(world.len(), 1);
    assert_eq!(*world.get::<Val>(new).unwrap(), Val(2));
    assert_eq!(*world.get::<SparseVal>(new).unwrap(), SparseVal(20));
    assert!(!world.has::<Other>(new));
    assert_eq!(q.get(&world, new).copied(), Ok(Val(2)));
    assert_eq!(qe.get(&world, new), Ok(new));
    world.check_invariants();
}

/// `remove_one` of a sparse component does not look the entity up when
/// the set holds its value (a set holds live entities' values only): a
/// stale handle whose slot a live entity took, with the set already the
/// remembered one, still gets `NoSuchEntity` and takes nothing from the
/// new occupant; a live entity without the value gets `MissingComponent`.
#[test]
fn sparse_remove_one_tells_stale_from_missing_on_the_fast_path() {
    let mut world = World::new();
    let old = world.spawn(SparseVal(1));
    let bare = world.spawn(Val(0));
    // Warm the remembered set through the fast path.
    world.insert_one(bare, SparseVal(5)).unwrap();
    assert_eq!(world.remove_one::<SparseVal>(bare), Ok(SparseVal(5)));
    world.despawn(old).unwrap();
    let new = world.spawn(SparseVal(2));
    assert_eq!(new.index(), old.index());
    assert_eq!(
        world.remove_one::<SparseVal>(old),
        Err(ComponentError::NoSuchEntity(old))
    );
    assert_eq!(world.get::<SparseVal>(new), Ok(&SparseVal(2)));
    assert!(matches!(
        world.remove_one::<SparseVal>(bare),
        Err(ComponentError::MissingComponent { entity, .. }) if entity == bare
    ));
    assert_eq!(world.remove_one::<SparseVal>(new), Ok(SparseVal(2)));
}

#[test]
fn stale_handle_after_clear_is_rejected() {
    let mut world = World::new();
    let old = world.spawn(Val(1));
    world.clear();
    let new = world.spawn(Val(2));
    assert_eq!(new.index(), old.index());
    assert_eq!(
        world.get::<Val>(old),
        Err(ComponentError::NoSuchEntity(old))
    );
    assert_eq!(world.despawn(old), Err(EntityError::NoSuchEntity(old)));
    assert_eq!(*world.get::<Val>(new).unwrap(), Val(2));
}

#[test]
fn never_spawned_handles_are_rejected() {
    let mut world = World::new();
    let live = world.spawn(Val(1));
    let beyond = entity(1000, 1);
    let future_generation = entity(live.index(), live.generation() + 1);
    for e in [beyond, future_generation] {
        assert!(!world.contains(e));
        assert_eq!(world.despawn(e), Err(EntityError::NoSuchEntity(e)));
        assert_eq!(world.get::<Val>(e), Err(ComponentError::NoSuchEntity(e)));
        assert_eq!(
            world.insert_one(e, Val(5)),
            Err(EntityError::NoSuchEntity(e))
        );
        assert_eq!(
            world.remove_one::<Val>(e),
            Err(ComponentError::NoSuchEntity(e))
        );
        let mut q = world.query::<&Val>();
        assert_eq!(
            q.get(&world, e).copied(),
            Err(QueryEntityError::NoSuchEntity(e))
        );
    }
    assert_eq!(*world.get::<Val>(live).unwrap(), Val(1));
    assert_eq!(world.len(), 1);
}

#[test]
fn double_despawn_fails_and_changes_nothing() {
    let mut world = World::new();
    let a = world.spawn(Val(1));
    let b = world.spawn(Val(2));
    world.despawn(a).unwrap();
    assert_eq!(world.despawn(a), Err(EntityError::NoSuchEntity(a)));
    assert_eq!(world.len(), 1);
    // The slot went on the free list exactly once: two spawns give the freed
    // slot, then a fresh one.
    let c = world.spawn(());
    let d = world.spawn(());
    assert_eq!(c.index(), a.index());
    assert_ne!(d.index(), a.index());
    assert_eq!(*world.get::<Val>(b).unwrap(), Val(2));
    world.check_invariants();
}

// ----- generation exhaustion --------------------------------------------------------

#[test]
fn exhausted_generation_retires_the_slot() {
    let mut world = World::new();
    world.debug_set_next_generation(0, NonZeroU32::new(u32::MAX).unwrap());
    let last = world.spawn(Val(1));
    assert_eq!((last.index(), last.generation()), (0, u32::MAX));
    assert_eq!(*world.get::<Val>(last).unwrap(), Val(1));
    world.despawn(last).unwrap();
    assert!(!world.contains(last));

    // Under Miri a tenth of each count (27 s of Miri time in .ci/run's
    // every-run step before): the free list still holds every slot the
    // spawns below could take, and the last loop still outgrows it, so
    // index 0 is refused both when a freed slot is reused and when a fresh
    // one is made.
    let (spawned, batched, respawned) = if cfg!(miri) {
        (100, 10, 200)
    } else {
        (1000, 100, 2000)
    };
    let more: Vec<Entity> = (0..spawned).map(|i| world.spawn(Val(i))).collect();
    assert!(
        more.iter().all(|e| e.index() != 0),
        "retired index 0 was handed out again"
    );
    let batch = world.spawn_batch((0..batched).map(Val));
    assert!(batch.iter().all(|e| e.index() != 0));
    let reserved = world.reserve_entity();
    assert_ne!(reserved.index(), 0);

    assert_eq!(world.despawn(last), Err(EntityError::NoSuchEntity(last)));
    assert_eq!(
        world.get::<Val>(last),
        Err(ComponentError::NoSuchEntity(last))
    );
    // Despawn and respawn everything: still never index 0.
    for e in more.iter().chain(&batch) {
        world.despawn(*e).unwrap();
    }
    let again: Vec<Entity> = (0..respawned).map(|_| world.spawn(())).collect();
    assert!(again.iter().all(|e| e.index() != 0));
    world.check_invariants();
}

#[test]
fn exhausted_generation_on_a_later_slot_keeps_other_slots_usable() {
    let mut world = World::new();
    let a = world.spawn(Val(0));
    let b = world.spawn(Val(1));
    world.debug_set_next_generation(5, NonZeroU32::new(u32::MAX).unwrap());
    let last = world.spawn(Val(5));
    assert_eq!((last.index(), last.generation()), (5, u32::MAX));
    world.despawn(last).unwrap();

    let more: Vec<Entity> = (0..200).map(|i| world.spawn(Val(i))).collect();
    assert!(more.iter().all(|e| e.index() != 5));
    let indices: HashSet<u32> = more.iter().map(|e| e.index()).collect();
    for skipped in [2, 3, 4] {
        assert!(
            indices.contains(&skipped),
            "slot {skipped} should be usable"
        );
    }
    assert_eq!(indices.len(), more.len(), "indices are unique");
    assert_eq!(*world.get::<Val>(a).unwrap(), Val(0));
    assert_eq!(*world.get::<Val>(b).unwrap(), Val(1));
    world.check_invariants();
}

#[test]
fn generation_just_below_the_limit_is_still_reused_once() {
    let mut world = World::new();
    world.debug_set_next_generation(0, NonZeroU32::new(u32::MAX - 1).unwrap());
    let e1 = world.spawn(());
    assert_eq!(e1.generation(), u32::MAX - 1);
    world.despawn(e1).unwrap();
    let e2 = world.spawn(());
    assert_eq!((e2.index(), e2.generation()), (0, u32::MAX));
    world.despawn(e2).unwrap();
    let e3 = world.spawn(());
    assert_ne!(e3.index(), 0);
}

// ----- reservation ----------------------------------------------------------------

#[test]
fn reserved_entity_becomes_live_on_next_structural_change() {
    let mut world = World::new();
    let spawned = world.spawn(Val(1));
    let shared: &World = &world;
    let r1 = shared.reserve_entity();
    let r2 = shared.reserve_entity();
    assert_ne!(r1, r2);
    assert_ne!(r1, spawned);
    assert_ne!(r2, spawned);
    assert!(!world.contains(r1));
    assert!(!world.contains(r2));
    assert_eq!(world.len(), 1);

    let s2 = world.spawn(Val(2)); // structural change: flushes
    assert!(world.contains(r1));
    assert!(world.contains(r2));
    assert_ne!(s2, r1);
    assert_ne!(s2, r2);
    assert_eq!(world.len(), 4);
    assert!(matches!(
        world.get::<Val>(r1),
        Err(ComponentError::MissingComponent { .. })
    ));
    world.insert_one(r1, Val(7)).unwrap();
    assert_eq!(*world.get::<Val>(r1).unwrap(), Val(7));
    world.despawn(r2).unwrap();
    assert!(!world.contains(r2));
    world.check_invariants();
}

#[test]
fn reserve_reuses_freed_index_and_flushes_on_insert_or_despawn() {
    let mut world = World::new();
    let a = world.spawn(Val(1));
    let b = world.spawn(Val(2));
    world.despawn(a).unwrap();
    let r = world.reserve_entity();
    assert_eq!((r.index(), r.generation()), (a.index(), a.generation() + 1));
    assert!(!world.contains(r));
    world.insert_one(b, Other).unwrap();
    assert!(world.contains(r));
    assert!(!world.contains(a));

    let r2 = world.reserve_entity();
    assert!(!world.contains(r2));
    world.despawn(b).unwrap();
    assert!(world.contains(r2));
    assert_eq!(world.len(), 2);
    world.check_invariants();
}

#[test]
fn reserve_from_many_threads_gives_unique_ids() {
    let mut world = World::new();
    let freed: Vec<Entity> = (0..50).map(|_| world.spawn(())).collect();
    for e in &freed {
        world.despawn(*e).unwrap();
    }
    let shared = &world;
    let reserved: Vec<Entity> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..100)
                        .map(|_| shared.reserve_entity())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let unique: HashSet<Entity> = reserved.iter().copied().collect();
    assert_eq!(unique.len(), 400);
    let unique_indices: HashSet<u32> = reserved.iter().map(|e| e.index()).collect();
    assert_eq!(unique_indices.len(), 400);
    world.spawn(());
    assert_eq!(world.len(), 401);
    assert!(reserved.iter().all(|&e| world.contains(e)));
    world.check_invariants();
}

// ----- worlds ---------------------------------------------------------------------

#[test]
fn world_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<World>();
    assert_send_sync::<Entity>();

    let mut world = World::new();
    let e = world.spawn(Val(3));
    let world = std::thread::spawn(move || {
        world.insert_one(e, SparseVal(4)).unwrap();
        world
    })
    .join()
    .unwrap();
    assert_eq!(*world.get::<SparseVal>(e).unwrap(), SparseVal(4));
}

#[test]
fn world_ids_differ() {
    let ids: HashSet<_> = (0..100).map(|_| World::new().id()).collect();
    assert_eq!(ids.len(), 100);
    let w = World::new();
    assert_eq!(w.id(), w.id());
}

#[test]
fn many_independent_worlds() {
    let mut worlds: Vec<World> = (0..20).map(|_| World::new()).collect();
    let mut handles = Vec::new();
    for (i, world) in worlds.iter_mut().enumerate() {
        let es: Vec<Entity> = (0..=i as u32)
            .map(|j| world.spawn(Val(j * 100 + i as u32)))
            .collect();
        handles.push(es);
    }
    // Despawning in one world affects no other.
    let first = handles[5][0];
    worlds[5].despawn(first).unwrap();
    for (i, world) in worlds.iter().enumerate() {
        let expected_len = if i == 5 { i } else { i + 1 };
        assert_eq!(world.len(), expected_len);
        for (j, &e) in handles[i].iter().enumerate() {
            if i == 5 && j == 0 {
                assert!(!world.contains(e));
                continue;
            }
            assert_eq!(
                *world.get::<Val>(e).unwrap(),
                Val(j as u32 * 100 + i as u32)
            );
        }
        world.check_invariants();
    }
    // The same handle bits exist in every world, each with its own value.
    assert!(worlds[3].contains(first) && worlds[7].contains(first));
    assert_ne!(
        worlds[3].get::<Val>(first).unwrap(),
        worlds[7].get::<Val>(first).unwrap()
    );
}

#[test]
fn worlds_in_parallel_threads() {
    // Entities per world. Under Miri 100, not 1,000: the eight threads still
    // build, despawn in and query their worlds at the same time (what the
    // data race detector is here for), a batch of 100 fills a table and
    // leaves every other row free just as 1,000 do, and the test cost 34 s
    // of Miri time in .ci/run's every-run step.
    let n: u32 = if cfg!(miri) { 100 } else { 1000 };
    let results: Vec<(usize, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8u32)
            .map(|t| {
                s.spawn(move || {
                    let mut world = World::new();
                    let es = world.spawn_batch((0..n).map(|i| Val(i + t)));
                    for e in es.iter().step_by(2) {
                        world.despawn(*e).unwrap();
                    }
                    let mut q = world.query::<&Val>();
                    let sum: u64 = q.iter(&world).map(|v| v.0 as u64).sum();
                    world.check_invariants();
                    (world.len(), sum)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, (len, sum)) in results.into_iter().enumerate() {
        assert_eq!(len, n as usize / 2);
        let expected: u64 = (0..u64::from(n))
            .skip(1)
            .step_by(2)
            .map(|i| i + t as u64)
            .sum();
        assert_eq!(sum, expected);
    }
}

#[test]
#[should_panic(expected = "was built for world")]
fn query_state_from_another_world_panics_on_iter() {
    let mut a = World::new();
    let mut b = World::new();
    a.spawn(Val(1));
    b.spawn(Val(2));
    let mut q = a.query::<&Val>();
    let _ = q.iter(&b).count();
}

#[test]
#[should_panic(expected = "cannot be used with world")]
fn query_state_from_another_world_panics_on_get() {
    let mut a = World::new();
    let mut b = World::new();
    let e = a.spawn(Val(1));
    b.spawn(Val(2));
    let mut q = a.query::<&Val>();
    let _ = q.get(&b, e);
}

#[test]
#[should_panic(expected = "was built for world")]
fn query_state_from_another_world_panics_on_iter_mut() {
    let mut a = World::new();
    let mut b = World::new();
    a.spawn(Val(1));
    b.spawn(Val(2));
    let mut q = a.query::<&mut Val>();
    q.iter_mut(&mut b).for_each(|v| v.0 += 1);
}

#[test]
#[should_panic(expected = "was built for world")]
fn query_state_from_another_world_panics_on_get_mut() {
    let mut a = World::new();
    let mut b = World::new();
    let e = a.spawn(Val(1));
    b.spawn(Val(2));
    let mut q = a.query::<&mut Val>();
    let _ = q.get_mut(&mut b, e);
}
