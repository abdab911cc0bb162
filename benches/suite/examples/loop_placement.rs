//! How join_filter's row loop runs depending on where it sits in memory
//! (x86-64 only).
//!
//! ```text
//! cd benches/suite
//! cargo run --release --example loop_placement
//! ```
//!
//! Why it exists: the loop that mosaic's `for` loop over join_filter
//! compiles to has exactly the instructions of the `for_each` loop, yet ran
//! 1.4× slower in some builds and not in others. The two differed only in
//! where the linker put them: the slow copy started on a 64-byte boundary.
//! This binary runs the same instructions at every 2-byte offset from a
//! 64-byte boundary, so the effect can be seen apart from any ECS:
//!
//! - `mosaic`: the row loop of mosaic's `JoinFilter::run` (the `for` loop's
//!   one-run copy) and of `JoinFilterForEach::run`, as compiled (the same
//!   15 instructions in both; registers renamed);
//! - `bevy`: bevy's `JoinFilter::run` loop as compiled (a row index, two
//!   `lea`s for the 12-byte stride, the change-tick store, the same math);
//! - `ops K`: `K` independent `add`s and a fused `dec`/`jne`, all in one
//!   64-byte window, to find how many ops a window can hold before the
//!   loop slows.
//!
//! On the AMD EPYC (Zen 5) VM both join loops run at about 2.1 cycles a row
//! wherever each 64-byte window of the loop holds at most 12 ops (a `cmp`
//! and its branch count as one), and at about 3.1 cycles a row where one
//! window holds 13 or more: mosaic's loop when it starts 0 to 4 bytes
//! past a boundary, bevy's 0 to 6. The `ops` probe steps from about 2.5 to
//! 3.25 cycles an iteration between 12 and 13 ops, which looks like the
//! window no longer being served from the op cache but by the 4-wide
//! decoder. LLVM aligns loop headers to 16 bytes, so a loop of this size
//! starts on a 64-byte boundary in about one build in four, for mosaic and
//! bevy alike. This join body needs at least 13 ops a row on x86-64's
//! baseline (11 for the math and its loads and stores, two for the 12- and
//! 4-byte strides and the test), so no shape of the iterator keeps every
//! window at 12. `scripts/op_windows.py` lists the ops per window of a
//! built binary's loops, to see where a given build put them.

#[cfg(target_arch = "x86_64")]
mod sweep {
    use std::arch::naked_asm;
    use std::time::Instant;

    /// Rows per call: join_filter's 5,000 unfrozen rows.
    const ROWS: usize = 5_000;

    type JoinFn = unsafe extern "C" fn(*mut f32, *const f32, *const f32, usize, *mut u32);
    type OpsFn = unsafe extern "C" fn(usize);

    /// mosaic's join row loop, started `$pad` bytes past a 64-byte boundary.
    /// Arguments: positions, velocities, masses, rows (the tick array is
    /// unused).
    macro_rules! mosaic_loop {
        ($name:ident, $pad:literal) => {
            #[unsafe(naked)]
            unsafe extern "C" fn $name(
                _p: *mut f32,
                _v: *const f32,
                _m: *const f32,
                _n: usize,
                _t: *mut u32,
            ) {
                naked_asm!(
                    "xor eax, eax",
                    "mov r8d, 8",
                    "test rcx, rcx",
                    "jz 3f",
                    "jmp 2f",
                    ".p2align 6",
                    ".skip {pad}, 0x90",
                    "2:",
                    "movss xmm0, dword ptr [rdx + rax*4]",
                    "inc rax",
                    "movss xmm1, dword ptr [rsi + r8]",
                    "mulss xmm1, xmm0",
                    "movsd xmm2, qword ptr [rsi + r8 - 8]",
                    "unpcklps xmm0, xmm0",
                    "mulps xmm0, xmm2",
                    "movsd xmm2, qword ptr [rdi + r8 - 8]",
                    "addps xmm2, xmm0",
                    "movlps qword ptr [rdi + r8 - 8], xmm2",
                    "addss xmm1, dword ptr [rdi + r8]",
                    "movss dword ptr [rdi + r8], xmm1",
                    "add r8, 12",
                    "cmp rcx, rax",
                    "jne 2b",
                    "3:",
                    "ret",
                    pad = const $pad,
                )
            }
        };
    }

    /// bevy's join row loop, started `$pad` bytes past a 64-byte boundary.
    /// Arguments: positions, velocities, masses, rows, change ticks.
    macro_rules! bevy_loop {
        ($name:ident, $pad:literal) => {
            #[unsafe(naked)]
            unsafe extern "C" fn $name(
                _p: *mut f32,
                _v: *const f32,
                _m: *const f32,
                _n: usize,
                _t: *mut u32,
            ) {
                naked_asm!(
                    "push r14",
                    "push rbp",
                    "xor r10d, r10d",
                    "mov r9, rdi",
                    "mov rdi, rdx",
                    "mov edx, ecx",
                    "mov ebp, 7",
                    "test edx, edx",
                    "jz 3f",
                    "jmp 2f",
                    ".p2align 6",
                    ".skip {pad}, 0x90",
                    "2:",
                    "mov r11d, r10d",
                    "inc r10d",
                    "lea r14, [r11*4]",
                    "lea r14, [r14 + r14*2]",
                    "mov dword ptr [r8 + r11*4], ebp",
                    "movss xmm0, dword ptr [rdi + r11*4]",
                    "movss xmm1, dword ptr [rsi + r14 + 8]",
                    "mulss xmm1, xmm0",
                    "movsd xmm2, qword ptr [rsi + r14]",
                    "unpcklps xmm0, xmm0",
                    "mulps xmm0, xmm2",
                    "movsd xmm2, qword ptr [r9 + r14]",
                    "addps xmm2, xmm0",
                    "movlps qword ptr [r9 + r14], xmm2",
                    "addss xmm1, dword ptr [r9 + r14 + 8]",
                    "movss dword ptr [r9 + r14 + 8], xmm1",
                    "cmp r10d, edx",
                    "jne 2b",
                    "3:",
                    "pop rbp",
                    "pop r14",
                    "ret",
                    pad = const $pad,
                )
            }
        };
    }

    /// Both join loops at each listed offset, as a table of
    /// `(offset, mosaic, bevy)`.
    macro_rules! offsets {
        ($($m:ident, $b:ident = $pad:literal;)*) => {
            $(mosaic_loop!($m, $pad); bevy_loop!($b, $pad);)*
            const JOIN: &[(usize, JoinFn, JoinFn)] = &[$(($pad, $m, $b)),*];
        };
    }

    offsets! {
        m0, b0 = 0; m2, b2 = 2; m4, b4 = 4; m6, b6 = 6; m8, b8 = 8;
        m10, b10 = 10; m12, b12 = 12; m14, b14 = 14; m16, b16 = 16;
        m20, b20 = 20; m24, b24 = 24; m28, b28 = 28; m32, b32 = 32;
        m40, b40 = 40; m48, b48 = 48; m56, b56 = 56; m60, b60 = 60;
    }

    /// `K` independent `add`s and a fused `dec`/`jne`, the whole loop in
    /// one 64-byte window; the argument is the iteration count.
    macro_rules! ops_loop {
        ($name:ident, $($reg:literal)*) => {
            #[unsafe(naked)]
            unsafe extern "C" fn $name(_n: usize) {
                naked_asm!(
                    "push rbx", "push rbp", "push r12", "push r13", "push r14", "push r15",
                    "jmp 2f",
                    ".p2align 6",
                    "2:",
                    $(concat!("add ", $reg, ", 1"),)*
                    "dec rdi",
                    "jne 2b",
                    "pop r15", "pop r14", "pop r13", "pop r12", "pop rbp", "pop rbx",
                    "ret",
                )
            }
        };
    }

    ops_loop!(ops10, "rax" "rcx" "rdx" "rsi" "r8" "r9" "r10" "r11" "rbx" "rbp");
    ops_loop!(ops11, "rax" "rcx" "rdx" "rsi" "r8" "r9" "r10" "r11" "rbx" "rbp" "r12");
    ops_loop!(ops12, "rax" "rcx" "rdx" "rsi" "r8" "r9" "r10" "r11" "rbx" "rbp" "r12" "r13");
    ops_loop!(ops13, "rax" "rcx" "rdx" "rsi" "r8" "r9" "r10" "r11" "rbx" "rbp" "r12" "r13" "r14");

    /// The best of `rounds` timings of `calls` calls of `f`, per call, in ns.
    fn best(rounds: usize, calls: usize, mut f: impl FnMut()) -> f64 {
        (0..rounds)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..calls {
                    f();
                }
                start.elapsed().as_secs_f64() * 1e9 / calls as f64
            })
            .fold(f64::MAX, f64::min)
    }

    pub fn run() {
        let mut positions = vec![1.0f32; ROWS * 3];
        let velocities = vec![0.5f32; ROWS * 3];
        let masses = vec![1.5f32; ROWS];
        let mut ticks = vec![0u32; ROWS];
        let mut join = |f: JoinFn| {
            best(60, 100, || {
                // SAFETY: three floats a row in `positions` and
                // `velocities`, one in `masses` and `ticks`, `ROWS` rows.
                unsafe {
                    f(
                        positions.as_mut_ptr(),
                        velocities.as_ptr(),
                        masses.as_ptr(),
                        ROWS,
                        ticks.as_mut_ptr(),
                    )
                }
            }) / 1e3
        };
        println!("join row loop, {ROWS} rows, best of 60 × 100 calls (µs a call)");
        println!(
            "{:>28} {:>8} {:>8}",
            "offset from 64-byte boundary", "mosaic", "bevy"
        );
        for &(pad, mosaic, bevy) in JOIN {
            let (m, b) = (join(mosaic), join(bevy));
            println!("{pad:>28} {m:>8.3} {b:>8.3}");
        }
        println!();
        println!("K independent adds + dec/jne in one 64-byte window (ns an iteration)");
        let probes: [(usize, OpsFn); 4] = [(10, ops10), (11, ops11), (12, ops12), (13, ops13)];
        for (k, f) in probes {
            // SAFETY: the loop only adds to registers it saves first.
            let ns = best(20, 1, || unsafe { f(1_000_000) }) / 1e6;
            println!("K = {k:>2} ({:>2} ops): {ns:.3}", k + 1);
        }
        std::hint::black_box((&positions, &ticks));
    }
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    sweep::run();
    #[cfg(not(target_arch = "x86_64"))]
    eprintln!("loop_placement: x86-64 only");
}
