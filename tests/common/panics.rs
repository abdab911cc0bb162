//! Reading the message of a panic a test provokes.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The message of a panic payload: the `String` or `&str` that `panic!`
/// carries, or a placeholder for any other payload.
pub fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else {
        "(non-string payload)".to_owned()
    }
}

/// Runs `f`, expecting a panic; returns its message. Fails the test if `f`
/// returns.
#[track_caller]
pub fn expect_panic<R>(f: impl FnOnce() -> R) -> String {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic"),
        Err(payload) => panic_text(&*payload),
    }
}
