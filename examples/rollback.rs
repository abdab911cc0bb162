//! Rollback netcode between two simulated peers, in one process.
//!
//! Each peer runs the same little game (two ships that steer, shoot and
//! score; bullets are entities related to their shooter with `ChildOf`) in
//! its own `World`. Every frame each peer knows its own input at once and
//! receives the other's after a random delay of 0 to 8 frames. Until it
//! arrives the peer predicts it (the last input received) and goes on;
//! when a late input differs from the prediction, the peer restores the
//! snapshot of that frame from its `SnapshotRing`, and simulates the frames
//! since again with the real input. Both peers record `World::checksum`
//! after each frame; once a frame's inputs are final on both, the two
//! checksums must agree.
//!
//! Prints the rollbacks, the frames simulated again and the desyncs (0; a
//! desync ends the run with an error status). Deterministic: the inputs
//! and delays come from a fixed-seed generator.
//!
//! ```text
//! cargo run --release --example rollback -- 10000
//! ```

use std::collections::{BTreeMap, VecDeque};

use mosaic::SnapshotRing;
use mosaic::prelude::*;

/// How far back a late input may reach.
const MAX_DELAY: u64 = 8;
const ARENA: i32 = 1000;

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Pos {
    x: i32,
    y: i32,
}

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Vel {
    x: i32,
    y: i32,
}

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Ship {
    player: u8,
    cooldown: u8,
}

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Bullet {
    ttl: u16,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Scores([u32; 2]);

/// This frame's inputs, one byte per player: bits 0-3 steer, bit 4 fires.
#[derive(Clone, Copy, Debug, Default)]
struct Inputs([u8; 2]);

fn steer(inputs: Res<Inputs>, mut ships: Query<(&mut Vel, &mut Ship)>) {
    for (vel, ship) in ships.iter_mut() {
        let input = inputs.0[ship.player as usize];
        if input & 1 != 0 {
            vel.x -= 1;
        }
        if input & 2 != 0 {
            vel.x += 1;
        }
        if input & 4 != 0 {
            vel.y -= 1;
        }
        if input & 8 != 0 {
            vel.y += 1;
        }
        vel.x = vel.x.clamp(-8, 8);
        vel.y = vel.y.clamp(-8, 8);
        ship.cooldown = ship.cooldown.saturating_sub(1);
    }
}

fn shoot(
    inputs: Res<Inputs>,
    mut ships: Query<(Entity, &Pos, &Vel, &mut Ship)>,
    mut commands: Commands,
) {
    for (e, pos, vel, ship) in ships.iter_mut() {
        if inputs.0[ship.player as usize] & 16 != 0 && ship.cooldown == 0 {
            ship.cooldown = 4;
            let bullet = commands
                .spawn((
                    *pos,
                    Vel {
                        x: vel.x * 3 + 1,
                        y: vel.y * 3,
                    },
                    Bullet { ttl: 60 },
                ))
                .id();
            commands.relate(bullet, e, ChildOf(e));
        }
    }
}

fn movement(mut q: Query<(&mut Pos, &Vel)>) {
    for (pos, vel) in q.iter_mut() {
        pos.x = (pos.x + vel.x).rem_euclid(ARENA);
        pos.y = (pos.y + vel.y).rem_euclid(ARENA);
    }
}

fn bullets(
    mut q: Query<(Entity, &Pos, &mut Bullet, Relation<ChildOf>)>,
    ships: Query<(Entity, &Pos, &Ship)>,
    mut scores: ResMut<Scores>,
    mut commands: Commands,
) {
    for (e, pos, bullet, shooter) in q.iter_mut() {
        bullet.ttl -= 1;
        // A bullet never hits its own shooter.
        let hit = ships.iter().find(|(ship, p, _)| {
            *ship != shooter.target() && (p.x - pos.x).abs() < 12 && (p.y - pos.y).abs() < 12
        });
        if let Some((_, _, ship)) = hit {
            scores.0[1 - ship.player as usize] += 1;
            commands.entity(e).despawn();
        } else if bullet.ttl == 0 {
            commands.entity(e).despawn();
        }
    }
}

/// A fixed-seed generator (xorshift64*): the same run every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

struct Peer {
    me: usize,
    world: World,
    schedule: Schedule,
    ring: SnapshotRing,
    /// Inputs known for certain, per player and frame.
    known: [BTreeMap<u64, u8>; 2],
    /// The other player's input each simulated frame used.
    used: BTreeMap<u64, u8>,
    /// The next frame to simulate.
    frame: u64,
    /// The earliest frame simulated with a wrong prediction.
    rollback_from: Option<u64>,
    /// The checksum after each frame (the latest simulation of it).
    checksums: BTreeMap<u64, u64>,
    rollbacks: u64,
    resimulated: u64,
    deepest: u64,
}

impl Peer {
    fn new(me: usize) -> Peer {
        let mut world = World::new();
        world.register_rollback::<Pos>();
        world.register_rollback::<Vel>();
        world.register_rollback::<Ship>();
        world.register_rollback::<Bullet>();
        world.register_rollback_resource::<Scores>();
        world.register_rollback_relation::<ChildOf>();
        world.insert_resource(Scores::default());
        world.insert_resource(Inputs::default());
        for player in 0..2u8 {
            world.spawn((
                Pos {
                    x: 250 + 500 * i32::from(player),
                    y: 500,
                },
                Vel { x: 0, y: 0 },
                Ship {
                    player,
                    cooldown: 0,
                },
            ));
        }
        let mut schedule = Schedule::new();
        schedule.add_systems((steer, shoot, movement, bullets).chain());
        Peer {
            me,
            world,
            schedule,
            ring: SnapshotRing::new(MAX_DELAY as usize + 2),
            known: [BTreeMap::new(), BTreeMap::new()],
            used: BTreeMap::new(),
            frame: 0,
            rollback_from: None,
            checksums: BTreeMap::new(),
            rollbacks: 0,
            resimulated: 0,
            deepest: 0,
        }
    }

    /// The other player's input for `frame`: known, or predicted (the
    /// last one known before it).
    fn other_input(&self, frame: u64) -> u8 {
        let other = &self.known[1 - self.me];
        other
            .get(&frame)
            .or_else(|| other.range(..frame).next_back().map(|(_, i)| i))
            .copied()
            .unwrap_or(0)
    }

    fn receive(&mut self, player: usize, frame: u64, input: u8) {
        self.known[player].insert(frame, input);
        if frame < self.frame && self.used.get(&frame) != Some(&input) {
            self.rollback_from = Some(self.rollback_from.map_or(frame, |f| f.min(frame)));
        }
    }

    fn simulate(&mut self, frame: u64) {
        self.ring.save(frame, &self.world);
        let other = self.other_input(frame);
        let mine = self.known[self.me][&frame];
        let mut inputs = [0; 2];
        inputs[self.me] = mine;
        inputs[1 - self.me] = other;
        *self.world.resource_mut::<Inputs>() = Inputs(inputs);
        self.used.insert(frame, other);
        self.schedule.run(&mut self.world);
        self.checksums.insert(frame, self.world.checksum());
    }

    /// Rolls back if a late input proved a prediction wrong, then
    /// simulates up to (not including) frame `until`.
    fn advance(&mut self, until: u64) {
        if let Some(from) = self.rollback_from.take() {
            self.ring
                .rollback_to(from, &mut self.world)
                .expect("the ring holds the last frames")
                .expect("a snapshot of this world");
            self.rollbacks += 1;
            self.deepest = self.deepest.max(self.frame - from);
            for f in from..self.frame {
                self.simulate(f);
                self.resimulated += 1;
            }
        }
        while self.frame < until {
            self.simulate(self.frame);
            self.frame += 1;
        }
        // Forget what no rollback can reach any more.
        let keep = self.frame.saturating_sub(4 * MAX_DELAY);
        self.used = self.used.split_off(&keep);
        for known in &mut self.known {
            *known = known.split_off(&keep.saturating_sub(1));
        }
    }
}

fn main() {
    let frames: u64 = match std::env::args().nth(1) {
        None => 1000,
        Some(arg) => match arg.parse() {
            Ok(n) => n,
            Err(_) => {
                eprintln!("usage: rollback [FRAMES]  (FRAMES: a whole number, default 1000)");
                std::process::exit(2);
            }
        },
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut peers = [Peer::new(0), Peer::new(1)];
    // In flight: (arrival frame, recipient, player, frame, input).
    let mut network: VecDeque<(u64, usize, usize, u64, u8)> = VecDeque::new();
    let mut desyncs = 0u64;
    let mut compared = 0u64;
    let mut held = [0u8; 2];
    let compare = |peers: &[Peer; 2], f: u64, desyncs: &mut u64, compared: &mut u64| {
        let (a, b) = (peers[0].checksums.get(&f), peers[1].checksums.get(&f));
        if a.is_some() && a != b {
            *desyncs += 1;
            eprintln!("desync at frame {f}: {a:x?} vs {b:x?}");
        }
        *compared += 1;
    };
    for t in 0..frames + MAX_DELAY + 1 {
        if t < frames {
            for p in 0..2 {
                // Inputs change now and then, as a player's hands do.
                if rng.next() % 4 == 0 {
                    held[p] = (rng.next() % 32) as u8;
                }
                peers[p].known[p].insert(t, held[p]);
                let delay = rng.next() % (MAX_DELAY + 1);
                network.push_back((t + delay, 1 - p, p, t, held[p]));
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = network.drain(..).partition(|m| m.0 <= t);
        network.extend(later);
        for (_, to, player, frame, input) in due {
            peers[to].receive(player, frame, input);
        }
        for peer in &mut peers {
            peer.advance((t + 1).min(frames));
        }
        // Frame t - MAX_DELAY has its inputs on both peers by now.
        if let Some(f) = t.checked_sub(MAX_DELAY) {
            if f < frames {
                compare(&peers, f, &mut desyncs, &mut compared);
                for peer in &mut peers {
                    peer.checksums.remove(&f);
                }
            }
        }
    }
    let scores = peers[0].world.resource::<Scores>().0;
    println!("frames: {frames} on each of 2 peers, input delays 0-{MAX_DELAY} frames");
    for p in &peers {
        println!(
            "peer {}: {} rollbacks, {} frames re-simulated (deepest {}), {} entities",
            p.me,
            p.rollbacks,
            p.resimulated,
            p.deepest,
            p.world.len()
        );
    }
    println!("scores: {scores:?}");
    println!("checksums compared: {compared}, desyncs: {desyncs}");
    if desyncs > 0 {
        std::process::exit(1);
    }
}
