//! Workload constants and the per-entity kernels every library shares, so each
//! implementation does the same arithmetic and only the ECS plumbing differs.
//!
//! Sizes follow rust-gamedev/ecs_bench_suite.

use cgmath::{Matrix4, Rad, SquareMatrix, Transform as _, Vector3};
use serde::{Deserialize, Serialize};

/// simple_insert / simple_iter: entities with (Transform, Position, Rotation, Velocity).
pub const SIMPLE_ENTITIES: usize = 10_000;
/// fragmented_iter: entities per archetype (26 archetypes, A..Z each paired with Data).
pub const FRAG_ENTITIES_PER_TYPE: usize = 20;
/// heavy_compute: entities whose matrix gets inverted.
pub const HEAVY_ENTITIES: usize = 1_000;
/// heavy_compute: matrix inversions per entity per run.
pub const HEAVY_INVERSIONS: usize = 100;
/// schedule: entities in each of the four archetypes (A,B) (A,B,C) (A,B,C,D) (A,B,C,E).
pub const SCHEDULE_ENTITIES: usize = 10_000;
/// add_remove: entities that get B added and then removed.
pub const ADD_REMOVE_ENTITIES: usize = 10_000;
/// serialize_text / serialize_binary: entities round-tripped through serde.
pub const SERIALIZE_ENTITIES: usize = 1_000;
/// join_filter: entities with (Position, Velocity, Mass); every other one
/// (odd spawn index) also has the `Frozen` marker, which the query excludes.
pub const JOIN_ENTITIES: usize = 10_000;
/// random_get: entities with (Position, Velocity), visited in [`shuffle`] order.
pub const RANDOM_GET_ENTITIES: usize = 10_000;
/// despawn: entities with (Position, Velocity) despawned per run.
pub const DESPAWN_ENTITIES: usize = 10_000;

/// Initial Transform for simple_insert / simple_iter.
#[inline]
pub fn transform() -> Matrix4<f32> {
    Matrix4::from_scale(1.0)
}

/// Initial Position / Rotation / Velocity.
#[inline]
pub fn unit() -> Vector3<f32> {
    Vector3::unit_x()
}

/// Initial matrix for heavy_compute (invertible, so the kernel never fails).
#[inline]
pub fn heavy_matrix() -> Matrix4<f32> {
    Matrix4::from_angle_x(Rad(1.2))
}

/// simple_iter's per-entity work.
#[inline(always)]
pub fn integrate(position: &mut Vector3<f32>, velocity: &Vector3<f32>) {
    *position += *velocity;
}

/// heavy_compute's per-entity work: invert the matrix 100 times, then move the position.
#[inline]
pub fn heavy_kernel(matrix: &mut Matrix4<f32>, position: &mut Vector3<f32>) {
    for _ in 0..HEAVY_INVERSIONS {
        *matrix = matrix.invert().expect("heavy_compute matrix is invertible");
    }
    *position = matrix.transform_vector(*position);
}

/// join_filter's per-entity work: position += velocity × mass.
#[inline(always)]
pub fn integrate_mass(position: &mut Vector3<f32>, velocity: &Vector3<f32>, mass: f32) {
    *position += *velocity * mass;
}

/// join_filter's `Mass`.
#[inline]
pub fn mass() -> f32 {
    1.5
}

/// Whether join_filter's `i`-th spawned entity gets the `Frozen` marker.
#[inline]
pub fn frozen(i: usize) -> bool {
    i % 2 == 1
}

/// Shuffles `items` in place with a fixed-seed xorshift64* Fisher-Yates, so
/// every library visits its handles in the same (spawn-index) order for a
/// given length, with no RNG dependency.
pub fn shuffle<T>(items: &mut [T]) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// fragmented_iter's per-entity work.
#[inline(always)]
pub fn double(value: &mut f32) {
    *value *= 2.0;
}

/// The four serialized components of serialize_text / serialize_binary, as plain
/// serde structs (the suite uses the same shapes). Libraries that take any
/// `'static + Send + Sync` type as a component (hecs, legion) use these directly.
pub mod ser {
    use super::*;

    /// A 4x4 matrix as 16 floats.
    #[derive(Default, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Transform(pub [f32; 16]);

    /// A 3-vector.
    #[derive(Default, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Position {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    /// A 3-vector.
    #[derive(Default, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Rotation {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    /// A 3-vector.
    #[derive(Default, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Velocity {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    /// The bincode configuration used by every serialize_binary implementation.
    pub fn bincode_options() -> impl bincode::Options + Copy {
        bincode::options()
    }
}
