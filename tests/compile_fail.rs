//! Misuses of the safe API that must not compile (trybuild).
//!
//! Each file in `tests/compile_fail/` states the rule it checks; its
//! `.stderr` holds the expected compiler error. To regenerate after a
//! deliberate change (then review each diff: the error must still be the
//! intended one, not an unrelated typo):
//!
//! ```text
//! TRYBUILD=overwrite cargo test --test compile_fail
//! ```

#[test]
#[cfg_attr(miri, ignore)] // runs rustc; nothing for Miri to check
fn misuse_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
