//! Hand-written baselines: the same data in plain `Vec`s, no ECS.
//!
//! The floor an ECS can approach on the layout-bound workloads:
//! simple_insert (four column `Vec`s, capacity reserved up front, as an
//! archetype table with a known batch size), simple_iter (two columns
//! zipped) and fragmented_iter (26 separate 20-element columns, one per
//! archetype, so the per-chunk loop overhead is included), join_filter (the
//! 5k unfrozen rows' three columns, as an archetype table holds them,
//! walked by the fastest on this machine of a vectorised loop and a scalar
//! loop of the same body at four code placements: LLVM vectorises it, and
//! the scalar form is faster on the CPUs measured, so a vectorised-only
//! floor was beaten by bevy; and the scalar loop's speed on Zen 5 depends
//! on where its code starts) and
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
    /// Which of the loops below is this machine's fastest, chosen once in
    /// `new` (the floor is the best of them).
    form: JoinForm,
}

/// The loops [`JoinFilter`] chooses from: the vectorised one, and the
/// scalar one at four placements of its code (see `run_scalar_at`).
#[derive(Clone, Copy, Debug)]
enum JoinForm {
    Vectorised,
    Scalar0,
    Scalar16,
    Scalar32,
    Scalar48,
}

impl JoinForm {
    const ALL: [JoinForm; 5] = [
        JoinForm::Vectorised,
        JoinForm::Scalar0,
        JoinForm::Scalar16,
        JoinForm::Scalar32,
        JoinForm::Scalar48,
    ];
}

impl JoinFilter {
    pub fn new() -> Self {
        let n = (0..JOIN_ENTITIES).filter(|&i| !frozen(i)).count();
        let mut row = Self {
            positions: vec![unit(); n],
            velocities: vec![unit(); n],
            masses: vec![mass(); n],
            form: JoinForm::Vectorised,
        };
        row.form = row.fastest();
        row
    }

    /// Times every form in alternating rounds and returns the one whose
    /// best round was fastest. Whether the scalar loop beats the vectorised
    /// one depends on the processor (see `run_scalar_at`), and how fast
    /// either runs can depend on where its code sits (see
    /// `run_scalar_at`), so the floor measures them all.
    fn fastest(&mut self) -> JoinForm {
        let mut best = [std::time::Duration::MAX; JoinForm::ALL.len()];
        for _ in 0..15 {
            for (form, best) in JoinForm::ALL.into_iter().zip(&mut best) {
                self.form = form;
                let start = std::time::Instant::now();
                for _ in 0..50 {
                    self.run();
                }
                *best = (*best).min(start.elapsed());
            }
        }
        let fastest = (0..best.len()).min_by_key(|&i| best[i]).unwrap_or(0);
        JoinForm::ALL[fastest]
    }

    pub fn run(&mut self) {
        match self.form {
            JoinForm::Vectorised => self.run_vectorised(),
            JoinForm::Scalar0 => self.run_scalar_at::<0>(),
            JoinForm::Scalar16 => self.run_scalar_at::<16>(),
            JoinForm::Scalar32 => self.run_scalar_at::<32>(),
            JoinForm::Scalar48 => self.run_scalar_at::<48>(),
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
    ///
    /// Its code starts `PAD` bytes (plus a fixed preamble) past a 64-byte
    /// boundary, so the four copies put the loop at four different
    /// 16-byte offsets from one. The loop is 15 instructions, 14 ops, in
    /// about 70 bytes; on the AMD EPYC (Zen 5) it runs 1.5x slower when it
    /// starts on a boundary, where its first 64-byte window holds 13 ops
    /// (see `examples/loop_placement.rs`). LLVM aligns a loop to 16 bytes,
    /// so any one build's copy of it, in any library, lands there about one
    /// time in four; of four copies at different offsets, at least three
    /// do not. The alignment no-ops run once per call.
    #[inline(never)]
    fn run_scalar_at<const PAD: usize>(&mut self) {
        place_code::<PAD>();
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

/// Moves the code after it to `PAD` bytes past the next 64-byte boundary:
/// no-ops up to the boundary, then `PAD` bytes of them (run once, where it
/// stands).
#[inline(always)]
fn place_code<const PAD: usize>() {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    // SAFETY: the template emits only no-op instructions (alignment padding
    // in a code section is filled with them, and 0x90 is `nop`), which
    // touch no memory, stack or flags.
    unsafe {
        std::arch::asm!(
            ".p2align 6",
            ".skip {pad}, 0x90",
            pad = const PAD,
            options(nomem, nostack, preserves_flags)
        )
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
