//! A [`CommandBuffer`](crate::CommandBuffer)'s commands, packed in one
//! byte buffer: each entry is the closure's run-or-drop function followed
//! by the closure's bytes. Recording a command is a copy into the buffer,
//! not an allocation (a `Box` per command was over half of a recorded
//! insert's cost, #40); applying reads each closure back out.

use std::marker::PhantomData;
use std::mem::{MaybeUninit, size_of};

use crate::commands::CommandError;
use crate::world::World;

/// What a command returns.
type Output = Result<(), CommandError>;

/// Runs (with a world) or drops (without) the closure whose bytes start at
/// the pointer.
type RunOrDrop = unsafe fn(*mut MaybeUninit<u8>, Option<&mut World>) -> Option<Output>;

/// An entry's header, written unaligned before the closure's bytes.
#[derive(Clone, Copy)]
struct Header {
    run_or_drop: RunOrDrop,
    size: usize,
}

/// # Safety
/// - `bytes` points at a valid `F`, written by [`CommandQueue::push`] and
///   not read out since; this call moves it out.
unsafe fn run_or_drop<F>(bytes: *mut MaybeUninit<u8>, world: Option<&mut World>) -> Option<Output>
where
    F: FnOnce(&mut World) -> Output,
{
    // SAFETY: a valid `F` is there (contract), possibly unaligned; it is
    // moved out here, once.
    let command = unsafe { bytes.cast::<F>().read_unaligned() };
    match world {
        Some(world) => Some(command(world)),
        None => {
            drop(command);
            None
        }
    }
}

/// The packed commands.
///
/// Invariant: `bytes` is a sequence of `len` entries, each a [`Header`]
/// then `header.size` bytes holding a valid closure of the type
/// `header.run_or_drop` was instantiated for, none read out yet.
#[derive(Default)]
pub(crate) struct CommandQueue {
    bytes: Vec<MaybeUninit<u8>>,
    len: usize,
    /// `Send` but not `Sync`, as a `Vec<Box<dyn FnOnce() + Send>>` was.
    _closures: PhantomData<Box<dyn FnOnce() + Send>>,
}

impl CommandQueue {
    /// Number of commands.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `command`.
    #[inline]
    pub fn push<F>(&mut self, command: F)
    where
        F: FnOnce(&mut World) -> Output + Send + 'static,
    {
        let header = Header {
            run_or_drop: run_or_drop::<F>,
            size: size_of::<F>(),
        };
        let start = self.bytes.len();
        let entry = size_of::<Header>() + size_of::<F>();
        self.bytes.reserve(entry);
        // SAFETY: `entry` bytes past `start` are reserved just above; both
        // values are written unaligned into them, then counted, keeping the
        // invariant (a header, then its closure).
        unsafe {
            let at = self.bytes.as_mut_ptr().add(start);
            at.cast::<Header>().write_unaligned(header);
            at.add(size_of::<Header>())
                .cast::<F>()
                .write_unaligned(command);
            self.bytes.set_len(start + entry);
        }
        self.len += 1;
    }

    /// Moves every command of `other` to the end of `self`, in order.
    pub fn append(&mut self, other: &mut CommandQueue) {
        self.bytes.extend_from_slice(&other.bytes);
        self.len += other.len;
        // The closures are `self`'s now: forgotten by `other`, not dropped
        // (its bytes need no drop).
        other.bytes.clear();
        other.len = 0;
    }

    /// Hands each command, in order, to `each`, which runs it or drops it
    /// (a [`Pending`] dropped unrun drops its closure). The queue is empty
    /// after, and keeps its allocation. If `each` panics, the commands not
    /// yet handed out are dropped.
    pub fn drain_with(&mut self, mut each: impl FnMut(Pending<'_>)) {
        let mut drain = Drain {
            bytes: std::mem::take(&mut self.bytes),
            offset: 0,
        };
        self.len = 0;
        while let Some(pending) = drain.next() {
            each(pending);
        }
        // Every closure was handed out: the bytes need no drop.
        let mut bytes = std::mem::take(&mut drain.bytes);
        drain.offset = 0;
        bytes.clear();
        self.bytes = bytes;
    }
}

impl Drop for CommandQueue {
    fn drop(&mut self) {
        if self.len > 0 {
            self.drain_with(|pending| drop(pending));
        }
    }
}

/// The entries of a queue being drained, from `offset` on.
struct Drain {
    bytes: Vec<MaybeUninit<u8>>,
    offset: usize,
}

impl Drain {
    /// The next command, if any. The entry is counted as taken before it
    /// is handed out, so a panic while it runs or drops never reaches it
    /// again.
    fn next(&mut self) -> Option<Pending<'_>> {
        if self.offset == self.bytes.len() {
            return None;
        }
        // SAFETY: `offset` is the start of an entry not taken yet (the
        // queue's invariant, kept by advancing a whole entry at a time):
        // a header, then its closure's bytes.
        unsafe {
            let at = self.bytes.as_mut_ptr().add(self.offset);
            let header = at.cast::<Header>().read_unaligned();
            self.offset += size_of::<Header>() + header.size;
            Some(Pending {
                run_or_drop: header.run_or_drop,
                closure: at.add(size_of::<Header>()),
                _drain: PhantomData,
            })
        }
    }
}

impl Drop for Drain {
    /// Drops the closures not handed out (after a panic in `each`).
    fn drop(&mut self) {
        while let Some(pending) = self.next() {
            drop(pending);
        }
    }
}

/// One command handed out of a draining queue: [`Pending::run`] runs it;
/// dropped unrun, it drops the closure.
pub(crate) struct Pending<'a> {
    run_or_drop: RunOrDrop,
    /// The closure's bytes, in the drain's buffer (borrowed for `'a`).
    closure: *mut MaybeUninit<u8>,
    _drain: PhantomData<&'a mut Drain>,
}

impl Pending<'_> {
    /// Runs the command on `world`.
    #[inline]
    pub fn run(self, world: &mut World) -> Output {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the closure is valid and unread (handed out once by
        // `Drain::next`, and `this` is not dropped, so it is not read
        // again); it is moved out here.
        let output = unsafe { (this.run_or_drop)(this.closure, Some(world)) };
        output.expect("a command given a world returns its output")
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        // SAFETY: the closure is valid and unread (handed out once by
        // `Drain::next`; `run` moves it out only after wrapping `self` in
        // `ManuallyDrop`, so this drop never follows a run); it is dropped
        // here, once.
        unsafe { (self.run_or_drop)(self.closure, None) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops.
    struct Token(Arc<AtomicUsize>);
    impl Drop for Token {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn runs_in_order_drops_once_and_keeps_the_allocation() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut queue = CommandQueue::default();
        for i in 0..5u64 {
            let token = Token(Arc::clone(&drops));
            // Closures of different sizes and alignments, packed together.
            let wide = [i as u8; 3];
            queue.push(move |world: &mut World| {
                let _token = &token;
                world.spawn(());
                assert_eq!(wide, [i as u8; 3]);
                Ok(())
            });
            queue.push(|_: &mut World| Ok(()));
        }
        assert_eq!(queue.len(), 10);
        let mut world = World::new();
        let mut ran = 0;
        queue.drain_with(|pending| {
            pending.run(&mut world).unwrap();
            ran += 1;
        });
        assert_eq!((ran, world.len()), (10, 5));
        assert_eq!(drops.load(Ordering::SeqCst), 5);
        assert!(queue.is_empty());
        assert!(queue.bytes.capacity() > 0, "the allocation is kept");
    }

    #[test]
    fn unrun_commands_are_dropped_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let token = |drops: &Arc<AtomicUsize>| Token(Arc::clone(drops));
        {
            let mut queue = CommandQueue::default();
            let (a, b) = (token(&drops), token(&drops));
            queue.push(move |_: &mut World| {
                drop(a);
                Ok(())
            });
            queue.push(move |_: &mut World| {
                drop(b);
                Ok(())
            });
            // Dropped whole, unrun.
        }
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        // Appended: moved, not copied (each dropped once).
        let mut first = CommandQueue::default();
        let mut second = CommandQueue::default();
        let (c, d) = (token(&drops), token(&drops));
        first.push(move |_: &mut World| {
            drop(c);
            Ok(())
        });
        second.push(move |_: &mut World| {
            drop(d);
            Ok(())
        });
        first.append(&mut second);
        assert_eq!((first.len(), second.len()), (2, 0));
        drop(second);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        // Half run, half handed out and dropped.
        let mut world = World::new();
        let mut n = 0;
        first.drain_with(|pending| {
            if n == 0 {
                pending.run(&mut world).unwrap();
            }
            n += 1;
        });
        assert_eq!(drops.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn a_panic_while_draining_drops_the_rest_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut queue = CommandQueue::default();
        for _ in 0..3 {
            let token = Token(Arc::clone(&drops));
            queue.push(move |_: &mut World| {
                let _token = token;
                panic!("command panics")
            });
        }
        let mut world = World::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            queue.drain_with(|pending| {
                let _ = pending.run(&mut world);
            })
        }));
        assert!(result.is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        assert!(queue.is_empty());
    }
}
