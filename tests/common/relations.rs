//! Relation fixtures of the relation tests: the despawn policies' types, a
//! row of empty entities, and a seeded generator for random edits.

use mosaic::prelude::*;

/// A `one` relation that despawns its source with its target (ownership).
/// Not `Clone`: `clone_entity` leaves its edges out.
#[derive(Relation, Debug, PartialEq)]
#[relation(one, on_target_despawn = "despawn")]
pub struct OwnedBy;

/// A relation whose target refuses to be despawned while it has sources.
/// Not `Clone`.
#[derive(Relation, Debug, PartialEq)]
#[relation(on_target_despawn = "refuse")]
pub struct DependsOn;

/// `n` entities with no components.
pub fn spawn_n(world: &mut World, n: usize) -> Vec<Entity> {
    (0..n).map(|_| world.spawn(())).collect()
}

/// A tiny deterministic generator (no extra dev-dependency for a test).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number, below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}
