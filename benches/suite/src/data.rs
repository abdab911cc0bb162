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
