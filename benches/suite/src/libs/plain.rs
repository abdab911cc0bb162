//! Hand-written baselines: the same data in plain `Vec`s, no ECS.
//!
//! The floor an ECS can approach on the layout-bound workloads:
//! simple_insert (four column `Vec`s, capacity reserved up front, as an
//! archetype table with a known batch size), simple_iter (two columns
//! zipped) and fragmented_iter (26 separate 20-element columns, one per
//! archetype, so the per-chunk loop overhead is included), join_filter (the
//! 5k unfrozen rows' three columns, as an archetype table holds them,
//! walked by the faster on this machine of a scalar and a vectorised loop
//! of the same body: LLVM vectorises it, and the scalar form is faster on
//! the CPUs measured, so a vectorised-only floor was beaten by bevy) and
//! random_get (two columns indexed in the shuffled order); for
//! serialize_text and serialize_binary, the four columns written and read
//! back typed, with no entities (what the format crate alone costs).

use std::hint::black_box;

use cgmath::{Matrix4, Vector3};

use crate::data::*;

/// Spawn 10k four-component rows into fresh column `Vec`s.
pub struct SimpleInsert(usize);

impl SimpleInsert {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    /// Spawn `n` entities per run instead of 10k (the report's RSS table).
    pub fn with_entities(n: usize) -> Self {
        Self(n)
    }

    pub fn run(&mut self) {
        let n = self.0;
        let mut transforms: Vec<Matrix4<f32>> = Vec::with_capacity(n);
        let mut positions: Vec<Vector3<f32>> = Vec::with_capacity(n);
        let mut rotations: Vec<Vector3<f32>> = Vec::with_capacity(n);
        let mut velocities: Vec<Vector3<f32>> = Vec::with_capacity(n);
        for _ in 0..n {
            transforms.push(transform());
            positions.push(unit());
            rotations.push(unit());
            velocities.push(unit());
        }
        black_box((&transforms, &positions, &rotations, &velocities));
    }
}

/// position += velocity over two 10k-element `Vec`s.
pub struct SimpleIter {
    positions: Vec<Vector3<f32>>,
    velocities: Vec<Vector3<f32>>,
}

impl SimpleIter {
    pub fn new() -> Self {
        Self::with_entities(SIMPLE_ENTITIES)
    }

    pub fn with_entities(n: usize) -> Self {
        Self {
            positions: vec![unit(); n],
            velocities: vec![unit(); n],
        }
    }

    pub fn run(&mut self) {
        black_box(&mut self.positions)
            .iter_mut()
            .zip(black_box(&self.velocities))
            .for_each(|(position, velocity)| integrate(position, velocity));
    }
}

/// Double `Data` across 26 separate `Vec`s of 20 elements.
pub struct FragIter(Vec<Vec<f32>>);

impl FragIter {
    pub fn new() -> Self {
        Self(vec![vec![1.0; FRAG_ENTITIES_PER_TYPE]; 26])
    }

    pub fn run(&mut self) {
        for column in black_box(&mut self.0).iter_mut() {
            column.iter_mut().for_each(double);
        }
    }
}

/// position += velocity × mass over three 5k-element `Vec`s (only the rows
/// without `Frozen`, as the matching archetype holds them).
pub struct JoinFilter {
    positions: Vec<Vector3<f32>>,
    velocities: Vec<Vector3<f32>>,
    masses: Vec<f32>,
    /// Which of the two loops below is this machine's faster, chosen once
    /// in `new` (the floor is the better of them).
    scalar: bool,
}

impl JoinFilter {
    pub fn new() -> Self {
        let n = (0..JOIN_ENTITIES).filter(|&i| !frozen(i)).count();
        let mut row = Self {
            positions: vec![unit(); n],
            velocities: vec![unit(); n],
            masses: vec![mass(); n],
            scalar: false,
        };
        row.scalar = row.scalar_wins();
        row
    }

    /// Times both loops in alternating rounds and says whether the scalar
    /// one's best round beat the vectorised one's. Which wins depends on
    /// the processor (see `run_scalar`), so the floor measures both.
    fn scalar_wins(&mut self) -> bool {
        let mut best = [std::time::Duration::MAX; 2];
        for _ in 0..15 {
            for (form, best) in best.iter_mut().enumerate() {
                let start = std::time::Instant::now();
                for _ in 0..50 {
                    if form == 0 {
                        self.run_scalar();
                    } else {
                        self.run_vectorised();
                    }
                }
                *best = (*best).min(start.elapsed());
            }
        }
        best[0] < best[1]
    }

    pub fn run(&mut self) {
        if self.scalar {
            self.run_scalar();
        } else {
            self.run_vectorised();
        }
    }

    /// The zipped loop as written: LLVM vectorises it, reading each
    /// 12-byte `Vector3` column as an interleaved group (one scalar load
    /// and a shuffle per float with x86-64's baseline SSE2).
    #[inline(never)]
    fn run_vectorised(&mut self) {
        let velocities = black_box(&self.velocities);
        let masses = black_box(&self.masses);
        for ((position, velocity), &mass) in black_box(&mut self.positions)
            .iter_mut()
            .zip(velocities)
            .zip(masses)
        {
            integrate_mass(position, velocity, mass);
        }
    }

    /// The same loop kept scalar, a row at a time with x and y paired in
    /// one 8-byte load (bevy's loop has this shape): faster than the
    /// vectorised one on the CPUs measured (1.2x on an AMD EPYC, 1.6x on an
    /// Intel Xeon), which is why bevy beat the old vectorised-only floor.
    #[inline(never)]
    fn run_scalar(&mut self) {
        let velocities = black_box(&self.velocities);
        let masses = black_box(&self.masses);
        for ((position, velocity), &mass) in black_box(&mut self.positions)
            .iter_mut()
            .zip(velocities)
            .zip(masses)
        {
            integrate_mass(position, velocity, mass);
            no_vectorise();
        }
    }
}

/// An instruction LLVM's loop vectoriser cannot widen, so a loop holding it
/// stays scalar; it emits nothing and touches no memory, stack or flags.
#[inline(always)]
fn no_vectorise() {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    // SAFETY: an empty template with no operands emits no instruction.
    unsafe {
        std::arch::asm!("", options(nomem, nostack, preserves_flags))
    };
}

/// position[i] += velocity[i] over two 10k-element `Vec`s, `i` in the
/// shuffled order.
pub struct RandomGet {
    positions: Vec<Vector3<f32>>,
    velocities: Vec<Vector3<f32>>,
    order: Vec<usize>,
}

impl RandomGet {
    pub fn new() -> Self {
        let mut order: Vec<usize> = (0..RANDOM_GET_ENTITIES).collect();
        shuffle(&mut order);
        Self {
            positions: vec![unit(); RANDOM_GET_ENTITIES],
            velocities: vec![unit(); RANDOM_GET_ENTITIES],
            order,
        }
    }

    pub fn run(&mut self) {
        let positions = black_box(&mut self.positions);
        let velocities = black_box(&self.velocities);
        for &i in black_box(&self.order) {
            positions[i] += velocities[i];
        }
    }
}

/// serialize_text's and serialize_binary's data with no ECS: the four
/// components' columns, 1,000 values each.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Columns {
    transforms: Vec<ser::Transform>,
    positions: Vec<ser::Position>,
    rotations: Vec<ser::Rotation>,
    velocities: Vec<ser::Velocity>,
}

impl Columns {
    fn new() -> Self {
        Self {
            transforms: vec![ser::Transform::default(); SERIALIZE_ENTITIES],
            positions: vec![ser::Position::default(); SERIALIZE_ENTITIES],
            rotations: vec![ser::Rotation::default(); SERIALIZE_ENTITIES],
            velocities: vec![ser::Velocity::default(); SERIALIZE_ENTITIES],
        }
    }
}

/// serialize_text's floor: the four columns as one RON document, every
/// type known at compile time, no entity ids and no component names (the
/// least RON text that holds the values). What the `ron` crate itself
/// costs to write and read these 25,000 floats and 9,000 field names.
pub struct SerializeText(Columns);

impl SerializeText {
    pub fn new() -> Self {
        Self(Columns::new())
    }

    pub fn run(&mut self) {
        let text = ron::to_string(&self.0).unwrap();
        let back: Columns = ron::from_str(&text).unwrap();
        assert_eq!(back.positions.len(), SERIALIZE_ENTITIES);
        black_box(back);
    }
}

/// serialize_binary's floor: the four columns in bincode, with the options
/// every serialize_binary row uses.
pub struct SerializeBinary(Columns);

impl SerializeBinary {
    pub fn new() -> Self {
        Self(Columns::new())
    }

    pub fn run(&mut self) {
        use bincode::Options;
        let options = ser::bincode_options();
        let bytes = options.serialize(&self.0).unwrap();
        let back: Columns = options.deserialize(&bytes).unwrap();
        assert_eq!(back.positions.len(), SERIALIZE_ENTITIES);
        black_box(back);
    }
}
