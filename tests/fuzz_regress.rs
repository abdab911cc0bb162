//! The bounded subset of the `world_ops` fuzz target that `cargo test` runs.
//!
//! The interpreter (operations decoded from bytes with `arbitrary`, run on a
//! world and on a plain model, compared after every step, drops counted) is
//! the fuzz target's own file, `fuzz/src/world_ops.rs`, included here (with
//! the model it runs on, `fuzz/src/world_model.rs`, which `tests/model.rs`
//! shares). This
//! test replays every input committed in `fuzz/corpus/world_ops/` (seeds and
//! any crash once minimised: a regression stays a test), then a fixed number
//! of pseudo-random inputs from a fixed-seed generator, so every run is the
//! same. The fuzzer itself (`cd fuzz && cargo +nightly fuzz run world_ops`)
//! explores far more; this keeps what it found.

#[path = "../fuzz/src/world_ops.rs"]
mod world_ops;

use std::path::PathBuf;

/// Pseudo-random inputs replayed after the corpus (fewer under Miri).
const RANDOM_INPUTS: usize = if cfg!(miri) { 4 } else { 300 };

/// xorshift64*: a fixed, dependency-free byte source.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| (self.next() >> 56) as u8).collect()
    }
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/world_ops")
}

/// Runs one input; on a disagreement, names the input and returns false
/// (the panic message has already been printed).
fn replay(name: &str, data: &[u8]) -> bool {
    let ok = std::panic::catch_unwind(|| world_ops::run_bytes(data)).is_ok();
    if !ok {
        eprintln!("fuzz input {name} ({} bytes) failed", data.len());
    }
    ok
}

#[test]
#[cfg_attr(miri, ignore)] // reads files: Miri runs with isolation
fn corpus_replays_cleanly() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("fuzz/corpus/world_ops exists")
        .map(|entry| entry.expect("readable corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the committed corpus is empty");
    let failed: Vec<String> = files
        .iter()
        .filter(|path| {
            let data = std::fs::read(path).expect("readable corpus file");
            !replay(&path.display().to_string(), &data)
        })
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} corpus inputs failed: {failed:?}",
        failed.len(),
        files.len()
    );
}

#[test]
fn random_inputs_replay_cleanly() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for i in 0..RANDOM_INPUTS {
        // Mostly short inputs, some long enough to reach `MAX_OPS` steps.
        let len = match i % 4 {
            0..=2 => 16 + (rng.next() % 512) as usize,
            _ => 512 + (rng.next() % 2048) as usize,
        };
        let data = rng.bytes(len);
        assert!(replay(&format!("random #{i}"), &data), "random input #{i}");
    }
}

/// Every operation at least once, decoded from hand-built ops (so a plain
/// `cargo test` covers all of them whatever the corpus holds).
#[test]
fn every_operation_once() {
    use world_ops::{CmdOp, Op, Who};
    let live = Who::Live;
    let any = Who::Any;
    let forged = |index, generation| Who::Forged { index, generation };
    let mut ops = Vec::new();
    for kind in 0..15u8 {
        ops.push(Op::Spawn {
            kind,
            v: u32::from(kind),
        });
    }
    ops.push(Op::SpawnBatch {
        kind: 11,
        v: 100,
        n: 5,
    });
    for q in 0..14 {
        ops.push(Op::Query(q));
    }
    ops.extend([
        Op::LateTrack(0),
        Op::LateTrack(1),
        Op::Insert {
            who: live(1),
            kind: 11,
            v: 7,
        },
        Op::InsertOne {
            who: live(2),
            comp: 5,
            v: 8,
        },
        Op::Remove {
            who: live(2),
            kind: 7,
        },
        Op::RemoveOne {
            who: live(3),
            comp: 4,
        },
        Op::Get {
            who: forged(3, 0),
            comp: 0,
        },
        Op::GetMut {
            who: live(4),
            comp: 0,
        },
        Op::GetMut {
            who: live(4),
            comp: 5,
        },
        Op::Has {
            who: any(1),
            comp: 2,
        },
        Op::Contains(forged(30, 1)),
        Op::QueryGet(live(5)),
        Op::QueryGet(any(0)),
        Op::QueryGetMut(live(6)),
        Op::Despawn(live(0)),
        Op::Despawn(any(0)),
        Op::Reserve,
        Op::Buf(CmdOp::Spawn { kind: 9, v: 9 }),
        Op::Buf(CmdOp::InsertSpawned {
            back: 0,
            kind: 5,
            v: 1,
        }),
        Op::Buf(CmdOp::Insert {
            who: live(6),
            kind: 12,
            v: 11,
        }),
        Op::Buf(CmdOp::Remove {
            who: live(7),
            kind: 2,
        }),
        Op::Buf(CmdOp::Despawn(any(3))),
        // Across the u32 wrap of the change tick (9 x 2^29 ticks in all).
        Op::AdvanceTicks(3 << 29),
        Op::QueryTicks,
        Op::AdvanceTicks(3 << 29),
        Op::AdvanceTicks(3 << 29),
        Op::QueryTicks,
        Op::BufApply,
        Op::Sys(vec![
            CmdOp::Spawn { kind: 8, v: 3 },
            CmdOp::Spawn { kind: 0, v: 0 },
            CmdOp::InsertSpawned {
                back: 1,
                kind: 9,
                v: 4,
            },
            CmdOp::Despawn(live(2)),
            CmdOp::Remove {
                who: live(1),
                kind: 3,
            },
        ]),
        Op::FreshQuery(4),
        Op::FreshQuery(9),
        Op::QueryTicks,
        // Relations: edges both ways, a stale end, reparenting, a despawn
        // of a related entity, a recursive despawn.
        Op::Relate {
            src: live(0),
            dst: live(1),
        },
        Op::Relate {
            src: live(2),
            dst: live(1),
        },
        Op::Relate {
            src: live(0),
            dst: forged(23, 2),
        },
        Op::Unrelate {
            src: live(2),
            dst: live(1),
        },
        Op::Unrelate {
            src: live(2),
            dst: live(1),
        },
        Op::Parent {
            child: live(3),
            parent: live(4),
        },
        Op::Parent {
            child: live(5),
            parent: live(3),
        },
        Op::Parent {
            child: live(3),
            parent: live(0),
        },
        Op::Despawn(live(1)),
        Op::DespawnRecursive(live(0)),
        Op::DespawnRecursive(any(0)),
        Op::Clear,
        Op::Buf(CmdOp::Spawn { kind: 1, v: 3 }),
        Op::BufApply,
        // Issue #39: builders, clones, spawn_at, disabling.
        Op::SpawnBuilt { kind: 11, v: 21 },
        Op::SpawnBuilt { kind: 0, v: 22 },
        Op::InsertBuilt {
            who: live(0),
            kind: 8,
            v: 23,
        },
        Op::InsertBuilt {
            who: forged(40, 2),
            kind: 2,
            v: 24,
        },
        Op::Parent {
            child: live(1),
            parent: live(0),
        },
        Op::Clone(live(1)),
        Op::Clone(any(0)),
        Op::SpawnAt {
            who: live(0),
            fresh: 0,
            kind: 7,
            v: 25,
            parts: true,
        },
        Op::SpawnAt {
            who: live(0),
            fresh: 3,
            kind: 9,
            v: 26,
            parts: false,
        },
        Op::SpawnBuiltHooked {
            v: 27,
            boom: true,
            at: None,
        },
        Op::SpawnBuiltHooked {
            v: 28,
            boom: false,
            at: Some(5),
        },
        Op::DisableRoundTrip(live(2)),
        Op::DisableRoundTrip(any(0)),
        Op::Buf(CmdOp::Spawn { kind: 11, v: 5 }),
    ]);
    for q in 0..14 {
        ops.push(Op::Query(q));
    }
    // Ends with a spawn left in the buffer: dropping it unapplied must drop
    // its values.
    world_ops::run(&ops);
}

/// Every panic site struck once, in the middle of ordinary operations: the
/// harness checks (invariants, no leak, no double drop, model resynced)
/// pass after each, and each site really fired.
#[test]
fn every_injected_panic_site_once() {
    use world_ops::{Op, Site, Who};
    let live = Who::Live;
    let sites = [
        Site::OnAdd,
        Site::OnInsert,
        Site::OnRemove,
        Site::Observer,
        Site::Default,
        Site::Drop,
        Site::Clone,
    ];
    let mut ops = vec![Op::Spawn { kind: 11, v: 1 }];
    for (i, &site) in sites.iter().enumerate() {
        let v = i as u32;
        if site == Site::Clone {
            // One entity, with `Hk`, to copy.
            ops.push(Op::Clear);
            ops.push(Op::SpawnHooked { v, boom: false });
        }
        ops.push(Op::Arm { site, countdown: 0 });
        ops.push(match site {
            Site::OnRemove => Op::RemoveHooked(live(1)),
            Site::Drop => Op::Despawn(live(0)),
            Site::Clone => Op::Clone(live(0)),
            // Odd steps through the builder (one change, as the static
            // spawn): hooks and observers see every part.
            _ if i % 2 == 1 => Op::SpawnBuiltHooked {
                v,
                boom: true,
                at: None,
            },
            _ => Op::SpawnHooked { v, boom: true },
        });
        // Ordinary operations afterwards, checked against the model again.
        ops.push(Op::SpawnHooked { v, boom: true });
        ops.push(Op::InsertHooked { who: live(1), v });
        ops.push(Op::InsertBoom(live(2)));
        ops.push(Op::Spawn { kind: 7, v });
        ops.push(Op::Query(4));
        ops.push(Op::RemoveBoom(live(0)));
    }
    world_ops::run(&ops);
    assert_eq!(
        world_ops::sites_fired(),
        sites,
        "every armed site struck once"
    );
}
