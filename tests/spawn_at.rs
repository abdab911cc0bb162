//! `spawn_at` and the allocator snapshot: a rebuilt world hands out the
//! same ids as the original.

use mosaic::prelude::*;
use mosaic::{EntitiesSnapshot, RestoreEntitiesError};

#[derive(Component, Clone, Debug, PartialEq)]
struct Hp(u32);

/// A deterministic mess of spawns and despawns.
fn history(world: &mut World) -> Vec<Entity> {
    let mut live = Vec::new();
    for i in 0..40u32 {
        live.push(world.spawn(Hp(i)));
        if i % 3 == 0 {
            let gone = live.remove((i as usize * 7) % live.len());
            world.despawn(gone).unwrap();
        }
        if i % 11 == 0 {
            // A slot reused several times: high generations.
            let e = world.spawn(Hp(1000 + i));
            world.despawn(e).unwrap();
        }
    }
    live
}

#[test]
fn restoring_the_free_list_replays_the_same_ids() {
    let mut original = World::new();
    let live = history(&mut original);
    let saved = original.entities_snapshot();
    let values: Vec<Hp> = live
        .iter()
        .map(|&e| original.get::<Hp>(e).unwrap().clone())
        .collect();
    // What the original does next.
    let mut next = Vec::new();
    for i in 0..30 {
        next.push(original.spawn(Hp(i)));
        if i % 4 == 0 {
            original.despawn(next[i as usize / 2]).unwrap();
        }
    }

    // Rebuild: live entities at their ids (in any order), then the
    // allocator state.
    let mut copy = World::new();
    for (&e, v) in live.iter().zip(&values).rev() {
        copy.spawn_at(e, v.clone());
    }
    copy.restore_entities(&saved).unwrap();
    copy.check_invariants();
    assert_eq!(copy.entities_snapshot(), saved);
    for (&e, v) in live.iter().zip(&values) {
        assert_eq!(copy.get::<Hp>(e), Ok(v));
    }
    let mut replayed = Vec::new();
    for i in 0..30 {
        replayed.push(copy.spawn(Hp(i)));
        if i % 4 == 0 {
            copy.despawn(replayed[i as usize / 2]).unwrap();
        }
    }
    assert_eq!(replayed, next);
    copy.check_invariants();
}

#[test]
fn snapshot_parts_round_trip() {
    let mut world = World::new();
    history(&mut world);
    let saved = world.entities_snapshot();
    let parts = EntitiesSnapshot::from_parts(saved.slots().to_vec(), saved.free_list().to_vec());
    assert_eq!(parts, saved);
}

#[test]
fn spawn_at_replaces_an_occupant_and_frees_skipped_slots() {
    let mut a = World::new();
    for _ in 0..9 {
        a.spawn(());
    }
    let far = a.spawn(Hp(1));
    assert_eq!(far.index(), 9);

    let mut world = World::new();
    world.spawn_at(far, Hp(1));
    world.check_invariants();
    assert_eq!(world.len(), 1);
    // Indices 0..9 were skipped: free, and handed out next.
    let mut got: Vec<u32> = (0..9).map(|_| world.spawn(()).index()).collect();
    got.sort();
    assert_eq!(got, (0..9).collect::<Vec<_>>());
    assert_eq!(world.spawn(()).index(), 10);

    // Same index, another generation: the occupant goes.
    let first = world.spawn(Hp(5));
    world.despawn(first).unwrap();
    let reborn = world.spawn(Hp(6));
    assert_eq!(reborn.index(), first.index());
    world.spawn_at(first, Hp(7));
    assert!(!world.contains(reborn));
    assert_eq!(world.get::<Hp>(first), Ok(&Hp(7)));
    world.check_invariants();
}

#[test]
fn a_mismatched_or_malformed_snapshot_changes_nothing() {
    let mut original = World::new();
    let live = history(&mut original);
    let saved = original.entities_snapshot();

    // Live entities missing.
    let mut empty = World::new();
    assert!(matches!(
        empty.restore_entities(&saved),
        Err(RestoreEntitiesError::LiveMismatch { .. })
    ));
    // A world that used more slots.
    let mut big = World::new();
    for _ in 0..saved.slots().len() + 5 {
        big.spawn(());
    }
    assert!(matches!(
        big.restore_entities(&saved),
        Err(RestoreEntitiesError::TooManySlots { .. })
    ));
    // Malformed free lists.
    let mut copy = World::new();
    for &e in &live {
        copy.spawn_at(e, Hp(0));
    }
    let before = copy.entities_snapshot();
    let live_index = live[0].index();
    for free in [vec![u32::MAX], vec![live_index]] {
        let bad = EntitiesSnapshot::from_parts(saved.slots().to_vec(), free);
        assert!(matches!(
            copy.restore_entities(&bad),
            Err(RestoreEntitiesError::Malformed(_))
        ));
    }
    if let Some(&twice) = saved.free_list().first() {
        let bad = EntitiesSnapshot::from_parts(saved.slots().to_vec(), vec![twice, twice]);
        assert!(copy.restore_entities(&bad).is_err());
    }
    assert_eq!(copy.entities_snapshot(), before, "nothing changed");
    copy.restore_entities(&saved).unwrap();
    copy.check_invariants();
}

/// `Entity::PLACEHOLDER` names no entity: every lookup reports it stale, and
/// `spawn_at` refuses it with a message, before changing anything (without
/// the check the allocator would try to grow to 2^32 slots and abort).
#[test]
fn the_placeholder_is_never_an_entity() {
    #[derive(Component)]
    struct Hp(u32);
    let mut world = World::new();
    let e = world.spawn(Hp(1));
    let p = Entity::PLACEHOLDER;
    assert!(!world.contains(p));
    assert!(world.get::<Hp>(p).is_err());
    assert!(world.insert_one(p, Hp(2)).is_err());
    assert!(world.despawn(p).is_err());
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn_at(p, Hp(3));
    }))
    .unwrap_err();
    let text = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("PLACEHOLDER"), "{text}");
    assert_eq!(world.len(), 1);
    assert_eq!(world.get::<Hp>(e).unwrap().0, 1);
    world.check_invariants();
}

/// An id whose index lies far past every slot the world has used (a
/// corrupt save, a hostile peer: `Entity::from_bits` of any number) is
/// refused with a message before anything changes; growing the allocator
/// to it would cost 16 bytes a slot, gigabytes for an index of 3·10⁹, and
/// the process aborted out of memory. An index up to the documented limit
/// past the used slots still works, and so does the next limit's worth
/// from there (ascending ids rebuild a world of any size).
#[test]
fn an_index_far_past_the_used_slots_is_refused_not_an_abort() {
    let mut world = World::new();
    let e = world.spawn(Hp(1));
    let slots = world.entities_snapshot().slots().len();
    for index in [3_000_000_000u32, u32::MAX - 1] {
        let far = Entity::from_bits((1 << 32) | u64::from(index)).unwrap();
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            world.spawn_at(far, Hp(3));
        }))
        .unwrap_err();
        let text = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            text.contains("past the") && text.contains("spawn_at"),
            "{text}"
        );
        assert!(!world.contains(far));
        assert_eq!(world.len(), 1);
        assert_eq!(world.entities_snapshot().slots().len(), slots);
        assert_eq!(world.get::<Hp>(e), Ok(&Hp(1)));
        world.check_invariants();
    }
}

/// The limit's edge: `SPAWN_AT_MAX_GROWTH` new slots are fine, one more is
/// refused. (Natively only: it makes 2^24 slots, too many for Miri.)
#[test]
#[cfg_attr(miri, ignore)]
fn spawn_at_grows_the_allocator_up_to_the_limit() {
    let mut world = World::new();
    world.spawn(Hp(1));
    let limit = World::SPAWN_AT_MAX_GROWTH as u64;
    let at = |index: u64| Entity::from_bits((1 << 32) | index).unwrap();
    // One slot used: indices up to `1 + limit - 1` make at most `limit` new ones.
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn_at(at(1 + limit), Hp(4));
    }));
    assert!(refused.is_err());
    assert_eq!(world.len(), 1);
    world.spawn_at(at(limit), Hp(4));
    assert_eq!(world.get::<Hp>(at(limit)), Ok(&Hp(4)));
    // The skipped slots are free: the next spawn takes one of them.
    assert!(world.spawn(Hp(5)).index() < limit as u32);
    assert_eq!(world.len(), 3);
}

#[test]
fn claiming_a_free_slot_keeps_the_order_of_the_others() {
    // Which ids later spawns get is part of the state (rollback and saves
    // replay it), so taking one slot out of the free list must not reorder
    // the rest.
    let far = Entity::from_bits((1 << 32) | 20).unwrap();
    let mut plain = World::new();
    plain.spawn_at(far, Hp(1));
    let order: Vec<u32> = (0..20).map(|_| plain.spawn(()).index()).collect();

    for taken in [0u32, 5, 19] {
        let mut world = World::new();
        world.spawn_at(far, Hp(1));
        world.spawn_at(
            Entity::from_bits((1 << 32) | u64::from(taken)).unwrap(),
            Hp(2),
        );
        world.check_invariants();
        let got: Vec<u32> = (0..19).map(|_| world.spawn(()).index()).collect();
        let want: Vec<u32> = order.iter().copied().filter(|&i| i != taken).collect();
        assert_eq!(got, want, "after claiming slot {taken}");
    }
}
