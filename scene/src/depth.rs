//! A stack budget for binary (postcard) decoding.
//!
//! RON and JSON readers refuse nesting past a fixed depth, but postcard has
//! no limit, and a recursive component type (`struct Chain(Option<Box<Chain>>)`)
//! nests one level per byte or two: a 100 KB binary scene would recurse
//! 50,000 levels deep and overflow the stack. [`Guarded`] is postcard's
//! slice flavor plus a check, on every single byte read (tags, lengths,
//! varints), of how much stack the decoding has used since it began; past
//! [`STACK_BUDGET`] it refuses, and the error says why. Every unbounded
//! recursion reads at least one such byte per level (the tag or length of
//! the `Option`, enum or sequence that ends it), so the check always comes
//! in time; fixed-size reads (numbers) are not checked.

use std::cell::Cell;

use postcard::de_flavors::{Flavor, Slice};

/// Stack one binary decode may use. Generous for any real nesting (a few
/// hundred levels even in a debug build), and small enough that saving and
/// dropping what was loaded stay well inside a 2 MiB thread stack.
const STACK_BUDGET: usize = 128 * 1024;

thread_local! {
    /// Set when a [`Guarded`] refused; read (and cleared) by [`message`].
    static TOO_DEEP: Cell<bool> = const { Cell::new(false) };
}

/// An address on the current stack frame.
#[inline(always)]
fn stack_address() -> usize {
    let probe = 0u8;
    std::hint::black_box(std::ptr::addr_of!(probe)).addr()
}

/// Postcard's slice flavor with a stack budget.
pub(crate) struct Guarded<'de> {
    inner: Slice<'de>,
    /// Where decoding began.
    base: usize,
}

impl<'de> Guarded<'de> {
    /// Reads `bytes`, counting stack from here.
    #[inline(always)]
    pub fn new(bytes: &'de [u8]) -> Self {
        TOO_DEEP.with(|t| t.set(false));
        Guarded {
            inner: Slice::new(bytes),
            base: stack_address(),
        }
    }

    #[inline(always)]
    fn check(&self) -> postcard::Result<()> {
        // Miri gives locals addresses with no stack order (and has no native
        // stack to overflow): nothing to measure there.
        if cfg!(miri) {
            return Ok(());
        }
        if stack_address().abs_diff(self.base) > STACK_BUDGET {
            TOO_DEEP.with(|t| t.set(true));
            return Err(postcard::Error::DeserializeBadEncoding);
        }
        Ok(())
    }
}

impl<'de> Flavor<'de> for Guarded<'de> {
    type Remainder = &'de [u8];
    type Source = &'de [u8];

    #[inline]
    fn pop(&mut self) -> postcard::Result<u8> {
        self.check()?;
        self.inner.pop()
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }

    /// Not checked: fixed-size reads (numbers) do not nest, and every
    /// level of a recursion reads a tag or length through [`Flavor::pop`]
    /// (a varint), which is. (Checking here too cost a tenth of a binary
    /// load of float-heavy components.)
    #[inline]
    fn try_take_n(&mut self, ct: usize) -> postcard::Result<&'de [u8]> {
        self.inner.try_take_n(ct)
    }

    fn finalize(self) -> postcard::Result<&'de [u8]> {
        self.inner.finalize()
    }
}

/// A postcard deserializer over `bytes` with the stack budget.
#[inline(always)]
pub(crate) fn deserializer(bytes: &[u8]) -> postcard::Deserializer<'_, Guarded<'_>> {
    postcard::Deserializer::from_flavor(Guarded::new(bytes))
}

/// The message for a failed binary decode: the budget's if it refused
/// (clearing the mark), else `error`'s own.
pub(crate) fn message(error: &dyn std::fmt::Display) -> String {
    if TOO_DEEP.with(|t| t.replace(false)) {
        format!(
            "value nested too deep to decode (more than {} KiB of stack)",
            STACK_BUDGET / 1024
        )
    } else {
        error.to_string()
    }
}
