//! Model-based property test of the world.
//!
//! Proptest generates random sequences of operations (spawn, spawn_batch and
//! `World::extend`, despawn, insert (`insert_one` for a single component on
//! odd values), remove (`remove_one` for a single component of an odd
//! entity index), get_mut, `QueryState::get`, cached queries with every
//! filter kind, clear, `reserve_entity`, a `CommandBuffer` whose commands
//! are applied later, and relations: `relate`/`unrelate` of a many-to-many
//! relation, `add_child`, `despawn_recursive` and `despawn_descendants`,
//! and ownership (`Ow`, despawn policy) and pins (`Pn`, refuse policy)
//! whose cascades every despawn runs) and runs each one both on
//! a [`World`] and on a plain model: one optional value per component type
//! relation, `add_child` and `despawn_recursive`) and runs each one both on
//! a [`World`] and on a plain model (and, for issue #39, `EntityBuilder`
//! spawns and inserts, `clone_entity`, `spawn_at` and disabling): one optional value per component type
//! and entity, plus the ids reserved but not yet flushed, the commands not
//! yet applied, a log of add/change events for `Added`/`Changed` filters,
//! and the relation edges made (an edge with a dead end counts as gone:
//! every despawn must remove it, which `targets`/`parent` of every handle
//! then check).
//!
//! The model, its components, queries, operations and checks are
//! `fuzz/src/world_model.rs`, shared with the `world_ops` fuzz target
//! (`fuzz/src/world_ops.rs`, replayed by `tests/fuzz_regress.rs`); this file
//! holds what is its own: the operations as proptest generates and shrinks
//! them, and the check after *every* operation (the fuzz target, for speed,
//! checks what each step touched and samples the rest; under Miri this
//! file checks after every 4th step and the last, see [`run`]).
//!
//! After every operation the world must agree with the model: `len`,
//! `is_empty`, `contains`, and `get`/`has` of every component of every
//! handle ever seen (stale ones included, plus one that never existed), the
//! error variants, the alignment of every reference, `check_invariants()`,
//! `targets`/`parent`, and the number of live values per counted type
//! (constructions minus drops; none dropped more often than made). At the
//! end the world is dropped and, per type, drops must equal constructions.
//!
//! Components: `Tab` and `Spa` (table and sparse, heap payload), `ZTab` and
//! `ZSpa` (zero-sized, table and sparse), `Big` (`#[repr(align(64))]`, table,
//! heap payload with a check word), `BigSpa` (`align(64)`, sparse), and two
//! table types without drop glue: `Pod` (`align(64)`) and `ZPod`
//! (zero-sized).
//!
//! Case count: `MOSAIC_MODEL_CASES` (default 256; 4 under Miri); sequence
//! length: up to `MOSAIC_MODEL_OPS` operations (default 64; 12 under Miri).
//! The default run takes about a second in debug. Long mode:
//!
//! ```text
//! MOSAIC_MODEL_CASES=100000 cargo test --release --test model
//! MOSAIC_MODEL_CASES=20000 MOSAIC_MODEL_OPS=500 cargo test --release --test model
//! ```
//!
//! A failing case is shrunk and saved by proptest in
//! `tests/model.proptest-regressions` (replayed first on later runs; commit
//! it to keep the regression).

#[path = "../fuzz/src/world_model.rs"]
mod world_model;

use std::sync::Arc;

use mosaic::DeferredWorld;
use mosaic::prelude::*;
use proptest::prelude::*;
use world_model::*;

// ----- operations ----------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Spawn {
        kind: u8,
        v: u32,
    },
    SpawnBatch {
        kind: u8,
        v: u32,
        n: usize,
        /// `spawn_batch` (true) or `World::extend` (false).
        collect: bool,
    },
    Despawn(Who),
    Insert {
        who: Who,
        kind: u8,
        v: u32,
    },
    Remove {
        who: Who,
        kind: u8,
    },
    GetMut {
        who: Who,
        comp: u8,
    },
    QueryGet(Who),
    Query(usize),
    /// Runs every tick-filtered query.
    QueryTicks,
    Clear,
    Reserve,
    /// Records a command (spawn, insert, remove, despawn) into the
    /// long-lived `CommandBuffer`.
    Cmd(CmdOp),
    CmdApply,
    /// `World::relate` with the many-to-many relation `Lk`.
    Relate {
        src: Who,
        dst: Who,
    },
    /// `World::unrelate` of an `Lk` edge.
    Unrelate {
        src: Who,
        dst: Who,
    },
    /// `World::add_child`.
    Parent {
        child: Who,
        parent: Who,
    },
    /// `World::despawn_recursive`.
    DespawnRecursive(Who),
    /// `World::despawn_descendants`: one sweep of the children.
    DespawnDescendants(Who),
    /// `World::relate` with `Ow` (`one`, the source despawned with its
    /// target).
    Own {
        src: Who,
        dst: Who,
    },
    /// `World::relate` with `Pn` (the target refuses to be despawned).
    Pin {
        src: Who,
        dst: Who,
    },
    /// `World::unrelate` of a `Pn` edge.
    Unpin {
        src: Who,
        dst: Who,
    },
    /// `World::spawn` of an `EntityBuilder`'s build.
    SpawnBuilt {
        kind: u8,
        v: u32,
    },
    /// `World::insert` of an `EntityBuilder`'s build.
    InsertBuilt {
        who: Who,
        kind: u8,
        v: u32,
    },
    /// `World::clone_entity`.
    Clone(Who),
    /// `World::spawn_at` (a live handle, or a new index for odd `fresh`).
    SpawnAt {
        who: Who,
        fresh: u8,
        kind: u8,
        v: u32,
        parts: bool,
    },
    /// Disables an entity, checks direct access and a query, enables it.
    DisableRoundTrip(Who),
}

/// A live handle (if any; 4 in 5), or any handle ever seen.
fn who() -> impl Strategy<Value = Who> {
    prop_oneof![
        4 => any::<u16>().prop_map(Who::Live),
        1 => any::<u16>().prop_map(Who::Any),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let kind = 0..KINDS as u8;
    let v = any::<u32>();
    prop_oneof![
        6 => (kind.clone(), v).prop_map(|(kind, v)| Op::Spawn { kind, v }),
        2 => (kind.clone(), v, 0..6usize, any::<bool>())
            .prop_map(|(kind, v, n, collect)| Op::SpawnBatch { kind, v, n, collect }),
        3 => who().prop_map(Op::Despawn),
        5 => (who(), kind.clone(), v).prop_map(|(who, kind, v)| Op::Insert { who, kind, v }),
        4 => (who(), kind.clone()).prop_map(|(who, kind)| Op::Remove { who, kind }),
        3 => (who(), 0..N as u8).prop_map(|(who, comp)| Op::GetMut { who, comp }),
        1 => who().prop_map(Op::QueryGet),
        8 => (0..QUERIES).prop_map(Op::Query),
        3 => Just(Op::QueryTicks),
        1 => Just(Op::Clear),
        1 => Just(Op::Reserve),
        2 => (kind.clone(), v).prop_map(|(kind, v)| Op::Cmd(CmdOp::Spawn { kind, v })),
        2 => (who(), kind.clone(), v)
            .prop_map(|(who, kind, v)| Op::Cmd(CmdOp::Insert { who, kind, v })),
        2 => (who(), kind.clone()).prop_map(|(who, kind)| Op::Cmd(CmdOp::Remove { who, kind })),
        1 => who().prop_map(|who| Op::Cmd(CmdOp::Despawn(who))),
        2 => Just(Op::CmdApply),
        3 => (who(), who()).prop_map(|(src, dst)| Op::Relate { src, dst }),
        1 => (who(), who()).prop_map(|(src, dst)| Op::Unrelate { src, dst }),
        3 => (who(), who()).prop_map(|(child, parent)| Op::Parent { child, parent }),
        1 => who().prop_map(Op::DespawnRecursive),
        1 => who().prop_map(Op::DespawnDescendants),
        2 => (who(), who()).prop_map(|(src, dst)| Op::Own { src, dst }),
        1 => (who(), who()).prop_map(|(src, dst)| Op::Pin { src, dst }),
        1 => (who(), who()).prop_map(|(src, dst)| Op::Unpin { src, dst }),
        3 => (kind.clone(), v).prop_map(|(kind, v)| Op::SpawnBuilt { kind, v }),
        2 => (who(), kind.clone(), v).prop_map(|(who, kind, v)| Op::InsertBuilt { who, kind, v }),
        2 => who().prop_map(Op::Clone),
        2 => (who(), any::<u8>(), kind, v, any::<bool>())
            .prop_map(|(who, fresh, kind, v, parts)| Op::SpawnAt { who, fresh, kind, v, parts }),
        1 => who().prop_map(Op::DisableRoundTrip),
    ]
}

// ----- running ---------------------------------------------------------------------------

fn step(c: &mut Case, op: &Op) {
    match *op {
        Op::Spawn { kind, v } => do_spawn(c, kind, v),
        Op::SpawnBatch {
            kind,
            v,
            n,
            collect,
        } => do_spawn_batch(c, kind, v, n, !collect),
        Op::Despawn(who) => {
            let e = c.model.pick(who);
            do_despawn(c, e);
        }
        Op::Insert { who, kind, v } => {
            let e = c.model.pick(who);
            do_insert(c, e, kind, v, v % 2 == 1);
        }
        Op::Remove { who, kind } => {
            let e = c.model.pick(who);
            do_remove(c, e, kind, e.index() % 2 == 1);
        }
        Op::GetMut { who, comp } => {
            let e = c.model.pick(who);
            do_get_mut(c, e, comp);
        }
        Op::QueryGet(who) => {
            let e = c.model.pick(who);
            do_query_get(c, e);
        }
        Op::Query(q) => do_query(c, q),
        Op::QueryTicks => do_query_ticks(c),
        Op::Clear => do_clear(c),
        Op::Reserve => do_reserve(c),
        Op::Cmd(op) => do_buffer_record(c, op),
        Op::CmdApply => do_buffer_apply(c),
        Op::Relate { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_relate(c, s, t);
        }
        Op::Unrelate { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_unrelate(c, s, t);
        }
        Op::Parent { child, parent } => {
            let (ch, p) = (c.model.pick(child), c.model.pick(parent));
            do_parent(c, ch, p);
        }
        Op::DespawnRecursive(who) => {
            let e = c.model.pick(who);
            do_despawn_recursive(c, e);
        }
        Op::DespawnDescendants(who) => {
            let e = c.model.pick(who);
            do_despawn_descendants(c, e);
        }
        Op::Own { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_own(c, s, t);
        }
        Op::Pin { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_pin(c, s, t);
        }
        Op::Unpin { src, dst } => {
            let (s, t) = (c.model.pick(src), c.model.pick(dst));
            do_unpin(c, s, t);
        }
        Op::SpawnBuilt { kind, v } => do_spawn_built(c, kind, v),
        Op::InsertBuilt { who, kind, v } => {
            let e = c.model.pick(who);
            do_insert_built(c, e, kind, v);
        }
        Op::Clone(who) => {
            let e = c.model.pick(who);
            do_clone(c, e);
        }
        Op::SpawnAt {
            who,
            fresh,
            kind,
            v,
            parts,
        } => {
            if let Some(e) = spawn_at_target(&c.model, who, fresh) {
                do_spawn_at(c, e, kind, v, parts);
            }
        }
        Op::DisableRoundTrip(who) => {
            let e = c.model.pick(who);
            do_disable_round_trip(c, e);
        }
    }
}

/// Runs `ops` on a new world and on the model, checking the whole world
/// against the model after every step; then (if `apply_at_end`) applies the
/// pending commands, and drops everything, checking every counted value was
/// dropped exactly once.
///
/// Under Miri the whole-world check runs after every [`MIRI_CHECK_EVERY`]th
/// step and after the last (every operation still runs, which is what Miri
/// is there for): reading every component of every handle after each step
/// was most of this file's Miri time, and safe code.
fn run(ops: &[Op], apply_at_end: bool) {
    let mut case = Case::new(World::new(), |_| ());
    check_world(&case.world, &case.model);
    for (i, op) in ops.iter().enumerate() {
        step(&mut case, op);
        // Every handle is checked below, the picked ones with them.
        case.model.picked.borrow_mut().clear();
        if cfg!(miri) && (i + 1) % MIRI_CHECK_EVERY != 0 && i + 1 != ops.len() {
            continue;
        }
        let c = &case;
        let check = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_world(&c.world, &c.model)
        }));
        if let Err(payload) = check {
            eprintln!("world and model disagree after op #{i}: {op:?}");
            std::panic::resume_unwind(payload);
        }
    }
    if apply_at_end {
        do_buffer_apply(&mut case);
        check_world(&case.world, &case.model);
    }
    finish(case);
}

// ----- configuration -------------------------------------------------------------------

/// Under Miri, [`run`] checks the whole world after every this-many steps.
const MIRI_CHECK_EVERY: usize = 4;

fn config() -> ProptestConfig {
    let cases = if cfg!(miri) {
        4
    } else {
        std::env::var("MOSAIC_MODEL_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(256)
    };
    ProptestConfig {
        cases,
        // Miri runs with isolation: no regression files.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    }
}

/// Longest operation sequence: `MOSAIC_MODEL_OPS` (default 64; 12 under
/// Miri).
fn max_ops() -> usize {
    if cfg!(miri) {
        12
    } else {
        std::env::var("MOSAIC_MODEL_OPS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(64)
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn world_matches_model(
        ops in prop::collection::vec(op(), 0..max_ops()),
        apply_at_end in any::<bool>(),
    ) {
        run(&ops, apply_at_end);
    }
}

/// A fixed sequence touching every operation, so a plain `cargo test` run
/// covers them all even if the random cases happen not to.
#[test]
fn every_operation_once() {
    let live = Who::Live;
    let any = Who::Any;
    let mut ops = Vec::new();
    // The bundle shapes this test spawned before it shared the fuzz
    // target's model (`Pod`, `ZPod` are its no-drop `Big`, `ZTab`): a spawn
    // of each. The others (BigSpa's, and `Big`/`ZTab` with drop glue) are
    // what `tests/fuzz_regress.rs`'s own `every_operation_once` spawns, and
    // the random cases here draw every kind; each spawn here is checked
    // after every later step, which is most of this test's Miri time.
    for kind in [0, 1, 2, 4, 7, 14, 15, 16, 17, 18, 19, 20, 21] {
        ops.push(Op::Spawn {
            kind,
            v: u32::from(kind),
        });
    }
    // Kind 11: the six with drop glue or sparse; 20: (Tab, Spa, ZPod, ZSpa,
    // Pod); 7: (Tab, Spa); 19: (Pod, ZSpa, Tab); 21: (ZPod, (Spa, Pod)).
    ops.push(Op::SpawnBatch {
        kind: 11,
        v: 100,
        n: 5,
        collect: true,
    });
    ops.push(Op::SpawnBatch {
        kind: 20,
        v: 200,
        n: 4,
        collect: false,
    });
    for q in 0..QUERIES {
        ops.push(Op::Query(q));
    }
    ops.extend([
        Op::Insert {
            who: live(1),
            kind: 11,
            v: 7,
        },
        Op::Remove {
            who: live(2),
            kind: 7,
        },
        Op::Remove {
            who: live(3),
            kind: 20,
        },
        Op::GetMut {
            who: live(4),
            comp: 0,
        },
        Op::GetMut {
            who: live(4),
            comp: 1,
        },
        Op::GetMut {
            who: live(4),
            comp: 4,
        },
        Op::GetMut {
            who: live(4),
            comp: 6,
        },
        Op::QueryGet(live(5)),
        Op::QueryGet(any(0)),
        Op::Despawn(live(0)),
        Op::Despawn(any(0)),
        Op::Reserve,
        Op::Cmd(CmdOp::Spawn { kind: 19, v: 9 }),
        Op::Cmd(CmdOp::Insert {
            who: live(6),
            kind: 21,
            v: 11,
        }),
        Op::Cmd(CmdOp::Remove {
            who: live(7),
            kind: 2,
        }),
        Op::Cmd(CmdOp::Despawn(any(3))),
        Op::Spawn { kind: 1, v: 1 },
        Op::Relate {
            src: live(1),
            dst: live(2),
        },
        Op::Relate {
            src: live(3),
            dst: live(2),
        },
        Op::Relate {
            src: live(1),
            dst: any(0),
        },
        Op::Unrelate {
            src: live(3),
            dst: live(2),
        },
        Op::Parent {
            child: live(4),
            parent: live(5),
        },
        Op::Parent {
            child: live(6),
            parent: live(4),
        },
        Op::Despawn(live(2)),
        Op::DespawnRecursive(live(5)),
        Op::DespawnRecursive(any(0)),
    ]);
    for q in 0..QUERIES {
        ops.push(Op::Query(q));
    }
    ops.extend([
        Op::CmdApply,
        Op::Clear,
        Op::Cmd(CmdOp::Spawn { kind: 1, v: 3 }),
        Op::CmdApply,
    ]);
    for q in 0..QUERIES {
        ops.push(Op::Query(q));
    }
    run(&ops, true);
}

/// The case proptest saved in `tests/model.proptest-regressions` (commit
/// 66251d9: a query stamped a change tick on an entity it skipped), written
/// out in today's operations, since its seed now draws other ones: `(Tab,
/// Spa)` and `ZSpa` entities, then the `(&mut Spa, &ZSpa)` walk of query 9,
/// which must not mark the `Spa` it skips as changed.
#[test]
// Not under Miri, where the saved seed never ran either (no regression file
// under isolation): its ten steps cost Miri about 14 s, for a walk
// `every_operation_once` also takes there.
#[cfg_attr(miri, ignore)]
fn saved_case_a_skipped_entity_is_not_marked_changed() {
    let ops = [
        Op::Spawn { kind: 0, v: 0 },
        Op::Spawn { kind: 7, v: 0 },
        Op::SpawnBatch {
            kind: 4,
            v: 0,
            n: 1,
            collect: true,
        },
        Op::QueryTicks,
        Op::Reserve,
        Op::Reserve,
        Op::Reserve,
        Op::Spawn { kind: 0, v: 0 },
        Op::Query(9),
        Op::QueryTicks,
    ];
    run(&ops, false);
}

/// An id reserved through `&World` while a despawn (or clear) is under way —
/// here from an observer, via `DeferredWorld::world().reserve_entity()` — must
/// never be handed out again by a later spawn.
#[test]
fn id_reserved_inside_a_despawn_observer_is_not_handed_out_twice() {
    use std::sync::Mutex;
    let mut world = World::new();
    let x = world.spawn(());
    let c = world.spawn(());
    world.despawn(x).unwrap(); // x's index is on the free list
    let reserved = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reserved);
    world.observe(move |_: Trigger<OnDespawn>, w: DeferredWorld| {
        sink.lock().unwrap().push(w.world().reserve_entity());
    });
    world.despawn(c).unwrap();
    let r = reserved.lock().unwrap()[0];
    let d1 = world.spawn(ZTab);
    let d2 = world.spawn(ZTab);
    world.check_invariants();
    assert!(
        r != d1 && r != d2,
        "reserved id {r:?} handed out again by spawn ({d1:?}, {d2:?})"
    );
}

/// The same through `World::clear`.
#[test]
fn id_reserved_inside_a_clear_observer_is_not_handed_out_twice() {
    use std::sync::Mutex;
    let mut world = World::new();
    let x = world.spawn(());
    world.spawn(());
    world.despawn(x).unwrap();
    let reserved = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reserved);
    world.observe(move |_: Trigger<OnDespawn>, w: DeferredWorld| {
        sink.lock().unwrap().push(w.world().reserve_entity());
    });
    world.clear();
    let r = reserved.lock().unwrap()[0];
    let spawned: Vec<Entity> = (0..3).map(|_| world.spawn(ZTab)).collect();
    world.check_invariants();
    assert!(
        !spawned.contains(&r),
        "reserved id {r:?} handed out again by spawn ({spawned:?})"
    );
}
