//! A type-erased, growable array of one component type, with change ticks.
//!
//! This is the only module that computes raw layouts and offsets.

use std::alloc::{self, Layout};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use super::DeferredPanic;
use crate::change::{CHECK_INTERVAL, ComponentTicks, Tick};
use crate::component::{ComponentInfo, TypedId};

/// A growable array of values of one (erased) type.
///
/// Invariants:
/// - `data` is aligned to `item.align()`; if `item.size() == 0` or
///   `capacity == 0` it dangles and nothing is allocated, otherwise it points
///   to an allocation of `array_layout(item, capacity)`;
/// - zero-sized items have `capacity == usize::MAX`;
/// - slots `0..len` hold initialised values, slots `len..capacity` do not.
pub(crate) struct BlobVec {
    item: Layout,
    drop: Option<unsafe fn(*mut u8)>,
    data: NonNull<u8>,
    len: usize,
    capacity: usize,
}

// SAFETY: a BlobVec only ever holds component values, and components are
// `Send + Sync` (the `Component` trait requires it; dynamic components are
// plain bytes). The raw pointer is owned, never shared outside `&self` rules.
unsafe impl Send for BlobVec {}
// SAFETY: as above; shared access hands out only raw pointers whose use is
// governed by the query access rules.
unsafe impl Sync for BlobVec {}

fn array_layout(item: Layout, n: usize) -> Option<Layout> {
    let size = item.size().checked_mul(n)?;
    Layout::from_size_align(size, item.align()).ok()
}

fn dangling(align: usize) -> NonNull<u8> {
    // An address equal to the alignment, with no provenance: valid for ZST
    // reads/writes and never dereferenced for sized items.
    NonNull::<u8>::dangling().with_addr(std::num::NonZeroUsize::new(align).expect("align > 0"))
}

/// Copies one item of `size` bytes from `src` to `dst`. Common small sizes
/// get a copy of constant size, which compiles to a few moves; others call
/// `memcpy` (archetype moves copy every value this way, mostly small ones).
///
/// # Safety
/// - as [`std::ptr::copy_nonoverlapping`] for `size` bytes.
#[inline(always)]
unsafe fn copy_item(src: *const u8, dst: *mut u8, size: usize) {
    // SAFETY: forwarded contract; each arm copies exactly `size` bytes.
    unsafe {
        match size {
            4 => std::ptr::copy_nonoverlapping(src, dst, 4),
            8 => std::ptr::copy_nonoverlapping(src, dst, 8),
            12 => std::ptr::copy_nonoverlapping(src, dst, 12),
            16 => std::ptr::copy_nonoverlapping(src, dst, 16),
            _ => std::ptr::copy_nonoverlapping(src, dst, size),
        }
    }
}

impl BlobVec {
    pub fn new(item: Layout, drop: Option<unsafe fn(*mut u8)>) -> Self {
        let capacity = if item.size() == 0 { usize::MAX } else { 0 };
        BlobVec {
            item,
            drop,
            data: dangling(item.align()),
            len: 0,
            capacity,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Makes room for `additional` more values.
    ///
    /// Panics with a clear message if the size overflows or allocation fails.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if self.capacity - self.len < additional {
            self.grow(additional);
        }
    }

    #[cold]
    fn grow(&mut self, additional: usize) {
        let needed = self
            .len
            .checked_add(additional)
            .expect("column capacity overflow");
        // Capacities are powers of two: growth stays geometric whatever the
        // callers reserve, and blocks of recurring sizes let the allocator
        // reuse memory instead of returning it to the OS and faulting it in
        // again (measured: a world spawned and dropped in a loop took ~280
        // page faults per spawn_batch of 10k entities with exact capacities,
        // 2 with powers of two). Untouched tail pages cost address space,
        // not resident memory.
        let new_capacity = needed
            .next_power_of_two()
            .max(self.capacity.saturating_mul(2))
            .max(4);
        let new_layout = array_layout(self.item, new_capacity).unwrap_or_else(|| {
            panic!(
                "column capacity overflow: {new_capacity} values of {} bytes",
                self.item.size()
            )
        });
        let new_data = if self.capacity == 0 {
            // SAFETY: item size is non-zero here (ZSTs never grow) and
            // new_capacity >= 4, so the layout has non-zero size.
            unsafe { alloc::alloc(new_layout) }
        } else {
            let old_layout = array_layout(self.item, self.capacity).expect("old layout was valid");
            // SAFETY: `data` was allocated with `old_layout` (type invariant);
            // the new size is non-zero and fits `isize` (checked by Layout).
            unsafe { alloc::realloc(self.data.as_ptr(), old_layout, new_layout.size()) }
        };
        self.data = NonNull::new(new_data).unwrap_or_else(|| alloc::handle_alloc_error(new_layout));
        self.capacity = new_capacity;
    }

    /// Takes `values`' buffer as this array's: no allocation, no copy.
    ///
    /// # Safety
    /// - `T`'s layout is `item`;
    /// - nothing is allocated (`capacity == 0`, so `T` is not zero-sized),
    ///   and `values` has allocated (`values.capacity() > 0`).
    unsafe fn adopt_vec<T>(&mut self, values: Vec<T>) {
        debug_assert_eq!(Layout::new::<T>(), self.item);
        debug_assert!(self.capacity == 0 && values.capacity() > 0);
        let mut values = std::mem::ManuallyDrop::new(values);
        // This keeps the type invariant: a `Vec<T>` of non-zero capacity owns an
        // allocation of `Layout::array::<T>(capacity)` from the global
        // allocator, which is `array_layout(item, capacity)` since `item`
        // is `T`'s layout (contract): exactly what `grow` and `drop` expect
        // of `data`. Its first `len` slots are initialised. The `Vec` is
        // forgotten, so the buffer has one owner.
        self.data = NonNull::new(values.as_mut_ptr().cast::<u8>()).expect("allocated Vec");
        self.capacity = values.capacity();
        self.len = values.len();
    }

    /// Reorders the values: afterwards slot `i` holds what slot `order[i]`
    /// held. Copies into a fresh buffer of the same capacity, so nothing is
    /// dropped or duplicated.
    ///
    /// # Safety
    /// - `order` is a permutation of `0..len` (each index exactly once).
    pub unsafe fn permute(&mut self, order: &[u32]) {
        debug_assert_eq!(order.len(), self.len);
        let size = self.item.size();
        if size == 0 || self.len < 2 {
            return;
        }
        let mut fresh = BlobVec::new(self.item, self.drop);
        fresh.reserve(self.capacity);
        for (i, &from) in order.iter().enumerate() {
            debug_assert!((from as usize) < self.len);
            // SAFETY: `from < len` (a permutation of `0..len`, contract) and
            // `i < len <= fresh.capacity`; the buffers are distinct
            // allocations. Each source slot is read once, so each value
            // moves to exactly one slot.
            unsafe {
                std::ptr::copy_nonoverlapping(self.ptr_at(from as usize), fresh.ptr_at(i), size);
            }
        }
        fresh.len = self.len;
        // The values now live in `fresh`: the old buffer must not drop them.
        self.len = 0;
        std::mem::swap(self, &mut fresh);
    }

    /// Pointer to slot `row`.
    ///
    /// # Safety
    /// - `row <= capacity` (one past the end is allowed for the base of an
    ///   empty range).
    #[inline]
    pub unsafe fn ptr_at(&self, row: usize) -> *mut u8 {
        // SAFETY: row <= capacity, so the offset stays inside (or one past)
        // the allocation; for ZSTs the offset is zero.
        unsafe { self.data.as_ptr().add(row * self.item.size()) }
    }

    /// Base pointer of the array.
    #[inline]
    pub fn base_ptr(&self) -> NonNull<u8> {
        self.data
    }

    /// Appends one slot and returns a pointer to it; the slot counts as
    /// initialised, so the caller must write it before anything reads it.
    ///
    /// # Safety
    /// - the caller writes a valid value to the returned pointer before any
    ///   read, drop or move of this column.
    #[inline]
    pub unsafe fn push_uninit(&mut self) -> *mut u8 {
        self.reserve(1);
        let row = self.len;
        self.len += 1;
        // SAFETY: row < capacity after reserve.
        unsafe { self.ptr_at(row) }
    }

    /// How many more items fit without growing.
    #[inline]
    pub fn spare(&self) -> usize {
        self.capacity - self.len
    }

    /// Writes `value` to slot `row`, at or past the length, without
    /// counting it: [`BlobVec::set_len`] does that later.
    ///
    /// # Safety
    /// - `T`'s layout is this vector's item layout;
    /// - `len <= row < capacity`, and the slot is not written twice before
    ///   it is counted.
    #[inline(always)]
    pub unsafe fn write_spare<T>(&mut self, row: usize, value: T) {
        debug_assert_eq!(Layout::new::<T>(), self.item);
        debug_assert!(self.len <= row && row < self.capacity);
        // SAFETY: row < capacity (contract); `T`s fill the allocation
        // exactly as items do (same layout), so the slot is in bounds and
        // aligned; for a ZST the offset is zero.
        unsafe { self.data.as_ptr().cast::<T>().add(row).write(value) };
    }

    /// Counts the slots up to `len` as initialised.
    ///
    /// # Safety
    /// - `self.len <= len <= capacity`, and every slot from the old length
    ///   to `len` holds a value written by [`BlobVec::write_spare`].
    #[inline]
    pub unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(self.len <= len && len <= self.capacity);
        self.len = len;
    }

    /// Appends `value`: [`BlobVec::push_uninit`] and a typed write, with
    /// the slot's address computed from `T`'s size (a constant) rather than
    /// the runtime item size.
    ///
    /// # Safety
    /// - `T`'s layout is this vector's item layout.
    #[inline]
    pub unsafe fn push_typed<T>(&mut self, value: T) {
        debug_assert_eq!(Layout::new::<T>(), self.item);
        self.reserve(1);
        let row = self.len;
        self.len += 1;
        // SAFETY: row < capacity after reserve; `T`s fill the allocation
        // exactly as items do (same layout, contract), so slot `row` is in
        // bounds and aligned; for a ZST the offset is zero.
        unsafe { self.data.as_ptr().cast::<T>().add(row).write(value) };
    }

    /// Appends a value copied from `src`, which the caller gives up.
    ///
    /// # Safety
    /// - `src` points to a valid value of this column's type, which the caller
    ///   will not use or drop again.
    #[inline]
    pub unsafe fn push_from(&mut self, src: *const u8) {
        // SAFETY: caller contract; the new slot is written right away.
        unsafe {
            let dst = self.push_uninit();
            copy_item(src, dst, self.item.size());
        }
    }

    /// Removes `row` without dropping it (the caller took the value), moving
    /// the last value into its place.
    ///
    /// # Safety
    /// - `row < len`; the value in `row` has been moved out or dropped.
    #[inline]
    pub unsafe fn swap_remove_forget(&mut self, row: usize) {
        debug_assert!(row < self.len);
        let last = self.len - 1;
        if row != last {
            // SAFETY: row and last are distinct, initialised slots < len.
            unsafe { copy_item(self.ptr_at(last), self.ptr_at(row), self.item.size()) };
        }
        self.len = last;
    }

    /// Moves the value in `row` to the end of `dst` and removes the slot
    /// here, moving the last value into its place: one row of a table's
    /// row move.
    ///
    /// # Safety
    /// - `row < len`; `dst` holds the same type (same layout).
    #[inline(always)]
    pub unsafe fn move_row_to(&mut self, row: usize, dst: &mut BlobVec) {
        debug_assert!(row < self.len);
        debug_assert_eq!(self.item, dst.item);
        dst.reserve(1);
        let size = self.item.size();
        let last = self.len - 1;
        // SAFETY: row < len (contract), and `dst.len < dst.capacity` after
        // the reserve; both arrays are laid out for this type (same layout,
        // contract), so each copy stays in its allocation. The value of
        // `row` is then `dst`'s (counted there); `row` is refilled from
        // `last` (or cut off) before `len` drops, so no value is owned
        // twice.
        unsafe {
            let hole = self.ptr_at(row);
            let to = dst.ptr_at(dst.len);
            let from = self.ptr_at(last);
            let refill = row != last;
            // One dispatch on the size for both copies (as `copy_item`).
            macro_rules! both {
                ($n:expr) => {{
                    std::ptr::copy_nonoverlapping(hole, to, $n);
                    if refill {
                        std::ptr::copy_nonoverlapping(from, hole, $n);
                    }
                }};
            }
            match size {
                4 => both!(4),
                8 => both!(8),
                12 => both!(12),
                16 => both!(16),
                _ => both!(size),
            }
            dst.len += 1;
        }
        self.len = last;
    }

    /// Moves the value in `row` out as a `T` and removes the slot, moving the
    /// last value into its place: [`BlobVec::swap_remove_forget`] with typed
    /// moves (which compile to plain loads and stores, where a copy of
    /// runtime size is a `memcpy` call).
    ///
    /// # Safety
    /// - `row < len`; `T` is this vector's item type.
    #[inline]
    pub unsafe fn swap_remove_take<T>(&mut self, row: usize) -> T {
        debug_assert!(row < self.len);
        debug_assert_eq!(Layout::new::<T>(), self.item);
        let last = self.len - 1;
        let base = self.data.as_ptr().cast::<T>();
        // SAFETY: row and last are initialised slots < len holding `T`s
        // (contract); the value read out of `row` is owned by the caller, and
        // the slot is refilled from `last` (or cut off) before `len` drops,
        // so no value is owned twice.
        unsafe {
            let value = base.add(row).read();
            if row != last {
                std::ptr::copy_nonoverlapping(base.add(last), base.add(row), 1);
            }
            self.len = last;
            value
        }
    }

    /// Drops the value in `row` (catching a panic into `panics`), then
    /// removes the slot as [`BlobVec::swap_remove_forget`] does.
    ///
    /// # Safety
    /// - `row < len`.
    #[inline]
    pub unsafe fn swap_remove_drop(&mut self, row: usize, panics: &mut DeferredPanic) {
        if let Some(drop) = self.drop {
            // SAFETY: row < len holds an initialised value; once dropped it is
            // overwritten or cut off below, so it is never dropped twice, even
            // if `drop` panics.
            let ptr = unsafe { self.ptr_at(row) };
            // SAFETY: as above.
            panics.run(|| unsafe { drop(ptr) });
        }
        // SAFETY: row < len; the value is gone.
        unsafe { self.swap_remove_forget(row) };
    }

    /// Keeps the values whose row `keep` accepts, in order, and drops the
    /// others (catching a panic into `panics`), or forgets them unread if
    /// `drop_rejected` is false (a leak, for values the caller knows own
    /// nothing): one sequential pass, each kept value moved down at most
    /// once. `keep` sees every row once, in increasing order.
    ///
    /// If `keep` itself panics, the values not yet passed are leaked, never
    /// dropped twice.
    pub fn retain(
        &mut self,
        mut keep: impl FnMut(usize) -> bool,
        drop_rejected: bool,
        panics: &mut DeferredPanic,
    ) {
        let drop_fn = if drop_rejected { self.drop } else { None };
        let len = self.len;
        let size = self.item.size();
        // Cut the length first: while the pass runs, rows below `kept` hold
        // the kept values, and rows from `row` on the ones not yet looked
        // at; nothing counts as initialised, so an unwind leaks, never
        // drops twice.
        self.len = 0;
        let mut kept = 0;
        for row in 0..len {
            if keep(row) {
                if row != kept {
                    // SAFETY: `kept < row < len <= capacity`: distinct slots;
                    // `row` holds the value (not yet moved or dropped), and
                    // `kept` none (its value moved down or was dropped
                    // earlier in this pass).
                    unsafe { copy_item(self.ptr_at(row), self.ptr_at(kept), size) };
                }
                kept += 1;
            } else if let Some(drop) = drop_fn {
                // SAFETY: `row < len` holds an initialised value, which this
                // pass neither moves nor drops again (its slot is reused or
                // cut off).
                let ptr = unsafe { self.ptr_at(row) };
                // SAFETY: as above.
                panics.run(|| unsafe { drop(ptr) });
            }
        }
        // Rows `0..kept` hold the kept values, in order.
        self.len = kept;
    }

    /// Drops every value (catching panics) and sets the length to zero.
    pub fn clear(&mut self, panics: &mut DeferredPanic) {
        let len = self.len;
        // Cut the length first: a panicking drop can never cause a second one.
        self.len = 0;
        if let Some(drop) = self.drop {
            for row in 0..len {
                // SAFETY: rows < old len were initialised and are dropped once.
                let ptr = unsafe { self.ptr_at(row) };
                // SAFETY: as above.
                panics.run(|| unsafe { drop(ptr) });
            }
        }
    }
}

impl Drop for BlobVec {
    fn drop(&mut self) {
        let mut panics = DeferredPanic::new();
        self.clear(&mut panics);
        if self.item.size() != 0 && self.capacity != 0 {
            let layout = array_layout(self.item, self.capacity).expect("layout was valid");
            // SAFETY: `data` was allocated with exactly this layout.
            unsafe { alloc::dealloc(self.data.as_ptr(), layout) };
        }
        if !std::thread::panicking() {
            panics.resume();
        }
    }
}

/// One value of a column that storage is moving out (a whole entity's
/// take): [`TakenSlot::take`] reads it as its type, at most once. The
/// storage forgets the slot afterwards either way: a value never read is
/// leaked, never dropped.
pub(crate) struct TakenSlot<'a> {
    column: &'a Column,
    row: usize,
}

impl<'a> TakenSlot<'a> {
    /// # Safety
    /// - `row < column.len()`;
    /// - the caller forgets the value in `row` once the slot is gone (never
    ///   reads nor drops it again), and nothing else reads it meanwhile.
    #[inline]
    pub unsafe fn new(column: &'a Column, row: usize) -> Self {
        TakenSlot { column, row }
    }

    /// Moves the value out, if it is a `T` (else it is left, to be leaked).
    #[inline]
    pub fn take<T: 'static>(self) -> Option<T> {
        if !self.column.holds::<T>() {
            return None;
        }
        // SAFETY: row < len and the column holds `T`s (checked just above);
        // the slot is consumed, and its maker forgets the value afterwards
        // (`TakenSlot::new`'s contract): the value is moved out once.
        Some(unsafe { self.column.ptr_at(self.row).cast::<T>().read() })
    }
}

/// Rows per block of a tracked column's block ticks (a power of two).
pub(crate) const BLOCK_ROWS: usize = 1 << BLOCK_SHIFT;
// `Column::restore_written` keeps a block's written rows as bits of a `u32`.
const _: () = assert!(BLOCK_ROWS < 32);
const BLOCK_SHIFT: u32 = 3;

/// The block of `row`.
#[inline(always)]
pub(crate) const fn block_of(row: usize) -> usize {
    row >> BLOCK_SHIFT
}

/// An upper bound of the changed ticks of one block of [`BLOCK_ROWS`] rows
/// of a tracked column: no row of the block was written later than it.
/// Whoever writes a row's changed tick marks its block, so a rollback
/// restore (and [`Column::written_since`]) skips blocks nobody wrote
/// without reading their rows' ticks.
///
/// A relaxed atomic: query items mark blocks through shared access, and
/// two chunks of one parallel query may share a block (they store the same
/// tick; a plain store would still be a data race). On x86 and ARM a
/// relaxed store is a plain store.
///
/// Bounds are compared with each other by wrapping difference, which is
/// exact while their ages stay under 2³¹: [`Column::clamp_ticks`] brings
/// every bound to an age of at most [`CHECK_INTERVAL`] (moving a bound
/// later keeps it a bound), and ticks advance by at most
/// `2 * CHECK_INTERVAL` between clamps.
#[derive(Debug)]
pub(crate) struct BlockTick(AtomicU32);

impl BlockTick {
    #[inline(always)]
    fn new(tick: Tick) -> Self {
        BlockTick(AtomicU32::new(tick.get()))
    }

    /// Marks the block written at `tick`, the current tick (never older
    /// than the bound it replaces: ticks only advance, and two writers of
    /// one column never run at once).
    #[inline(always)]
    pub fn mark(&self, tick: Tick) {
        self.0.store(tick.get(), Ordering::Relaxed);
    }

    #[inline(always)]
    fn get(&self) -> Tick {
        Tick::new(self.0.load(Ordering::Relaxed))
    }

    /// Raises the bound to `tick` if that is later (see the type's doc for
    /// why the wrapping difference is exact here).
    #[inline]
    fn raise(&mut self, tick: Tick) {
        let now = self.0.get_mut();
        *now = later(Tick::new(*now), tick).get();
    }
}

/// The later of two block bounds (or fresh ticks), both of age < 2³¹.
#[inline]
fn later(a: Tick, b: Tick) -> Tick {
    if (b.get().wrapping_sub(a.get()) as i32) > 0 {
        b
    } else {
        a
    }
}

/// One component type's values plus, if the type is tracked, their change
/// ticks.
///
/// Ticks cost memory and a write per structural change, so a column records
/// them only once some `Added<T>`/`Changed<T>` filter exists for its type
/// ([`Column::track_ticks`]).
///
/// Invariant: if `tracked`, `data.len() == ticks.len()`, else `ticks` is
/// empty — except inside a structural change that restores it before
/// returning (see [`Column::push_value`]). If `tracked`, `blocks` has at
/// least one [`BlockTick`] per [`BLOCK_ROWS`] rows (`block_of(len - 1) <
/// blocks.len()`), each bounding the changed ticks of its rows (those
/// past the length are stale bounds, raised when rows come back); else
/// it is empty.
///
/// Aligned to a cache line, which makes it 128 bytes (120 of fields): a
/// table's column array is then indexed with a shift, not a multiply, on
/// every path that picks a column by position (a spawn's per-row writes
/// among them: simple_insert cost one instruction more an entity at 120),
/// and a column's header never straddles more lines than it fills.
#[repr(align(64))]
pub(crate) struct Column {
    type_id: std::any::TypeId,
    data: BlobVec,
    ticks: Vec<UnsafeCell<ComponentTicks>>,
    blocks: Vec<BlockTick>,
    tracked: bool,
    /// The index of the archetype whose table holds this column, or
    /// [`Column::NO_ARCHETYPE`] (a sparse set's column, a table's before
    /// its archetype numbers it): what a column hint's holder compares with
    /// an entity's archetype (see `storage::column_hints`).
    archetype: u32,
}

// SAFETY: ticks are plain integers; concurrent access to them follows the same
// access rules as the values (a writer of T has exclusive access to T's ticks).
unsafe impl Sync for Column {}

impl Column {
    /// No archetype's index (`u32::MAX` is `ArchetypeId::INVALID`'s).
    pub const NO_ARCHETYPE: u32 = u32::MAX;

    pub fn new(info: &ComponentInfo) -> Self {
        Column {
            type_id: info.value_type(),
            data: BlobVec::new(info.layout(), info.drop_fn()),
            ticks: Vec::new(),
            blocks: Vec::new(),
            tracked: info.tracks_changes(),
            archetype: Self::NO_ARCHETYPE,
        }
    }

    /// A column of no component type (its `TypeId` is `Vacant`'s, a type
    /// no lookup asks for) in no archetype, and empty: what a column hint
    /// names before it names a real column (see `storage::column_hints`).
    pub fn vacant() -> Self {
        /// The type whose `TypeId` a vacant column holds.
        struct Vacant;
        Column {
            type_id: std::any::TypeId::of::<Vacant>(),
            data: BlobVec {
                item: Layout::new::<()>(),
                drop: None,
                data: NonNull::dangling(),
                len: 0,
                capacity: usize::MAX,
            },
            ticks: Vec::new(),
            blocks: Vec::new(),
            tracked: false,
            archetype: Self::NO_ARCHETYPE,
        }
    }

    /// The index of the archetype whose table holds this column (see the
    /// field's doc).
    #[inline(always)]
    pub fn archetype(&self) -> u32 {
        self.archetype
    }

    /// Numbers this column as archetype `archetype`'s (its table's, once
    /// the archetype has an index).
    pub fn set_archetype(&mut self, archetype: u32) {
        self.archetype = archetype;
    }

    /// Reorders the values and their ticks: afterwards row `i` holds what
    /// row `order[i]` held. Tracked ticks are rebuilt with room for the
    /// rows there are only ([`Table::reorder`](super::Table::reorder)
    /// learns its room again).
    ///
    /// # Safety
    /// - `order` is a permutation of `0..len` (each index exactly once).
    pub(super) unsafe fn permute(&mut self, order: &[u32]) {
        // SAFETY: forwarded contract.
        unsafe { self.data.permute(order) };
        if self.tracked {
            let old: Vec<ComponentTicks> = std::mem::take(&mut self.ticks)
                .into_iter()
                .map(UnsafeCell::into_inner)
                .collect();
            self.ticks = order
                .iter()
                .map(|&from| UnsafeCell::new(old[from as usize]))
                .collect();
            // Each new block is bounded by the bounds of the blocks its
            // rows came from.
            let old: Vec<Tick> = self.blocks.iter().map(BlockTick::get).collect();
            for (i, &from) in order.iter().enumerate() {
                let bound = old[block_of(from as usize)];
                let block = &mut self.blocks[block_of(i)];
                if i % BLOCK_ROWS == 0 {
                    *block = BlockTick::new(bound);
                } else {
                    block.raise(bound);
                }
            }
        }
    }

    /// True if this column records change ticks.
    #[inline]
    pub fn is_tracked(&self) -> bool {
        self.tracked
    }

    /// Starts recording ticks: every value present gets both ticks at `now`.
    /// The ticks have room for the values there are only: a table's column
    /// starts through [`Table::track_ticks`](super::Table::track_ticks),
    /// which learns its room again.
    pub(super) fn track_ticks(&mut self, now: Tick) {
        if !self.tracked {
            self.ticks = (0..self.len())
                .map(|_| UnsafeCell::new(ComponentTicks::new(now)))
                .collect();
            self.blocks = (0..self.len().div_ceil(BLOCK_ROWS))
                .map(|_| BlockTick::new(now))
                .collect();
            self.tracked = true;
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn reserve(&mut self, additional: usize) {
        self.data.reserve(additional);
        if self.tracked {
            self.ticks.reserve(additional);
        }
    }

    /// Pointer to the value in `row`.
    ///
    /// # Safety
    /// - `row <= len`.
    #[inline]
    pub unsafe fn ptr_at(&self, row: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.data.ptr_at(row) }
    }

    /// Base pointer of the values (never null: dangling, and aligned, when
    /// nothing is allocated).
    #[inline]
    pub fn base_ptr(&self) -> NonNull<u8> {
        self.data.base_ptr()
    }

    /// Base pointer of the ticks, one [`ComponentTicks`] per value if the
    /// column [is tracked](Column::is_tracked) (else the array is empty).
    /// Writing through it is allowed (the ticks sit in `UnsafeCell`s) to a
    /// holder of exclusive access to this component.
    #[inline]
    pub fn ticks_ptr(&self) -> *mut ComponentTicks {
        UnsafeCell::raw_get(self.ticks.as_ptr())
    }

    /// Base pointer of the block ticks (see [`BlockTick`]): whoever writes
    /// the changed tick of `row` through [`Column::ticks_ptr`] marks
    /// `*blocks_ptr().add(block_of(row))` too. Empty if untracked.
    #[inline]
    pub fn blocks_ptr(&self) -> *const BlockTick {
        self.blocks.as_ptr()
    }

    /// Marks the block of `row` written at `tick` (the current tick), for a
    /// writer of that row's changed tick through [`Column::ticks_ptr`]. A
    /// no-op if untracked.
    #[inline]
    pub fn mark_block(&self, row: usize, tick: Tick) {
        if let Some(b) = self.blocks.get(block_of(row)) {
            b.mark(tick);
        }
    }

    /// Raises the bound of the block of `row` (the next row of a growing
    /// column, or one inside it) to `bound`, adding blocks as needed.
    #[inline]
    fn raise_block(&mut self, row: usize, bound: Tick) {
        let b = block_of(row);
        match self.blocks.get_mut(b) {
            Some(block) => block.raise(bound),
            None => self.add_blocks(b, bound),
        }
    }

    #[cold]
    fn add_blocks(&mut self, b: usize, bound: Tick) {
        while self.blocks.len() <= b {
            self.blocks.push(BlockTick::new(bound));
        }
    }

    /// Appends `value` with both ticks set to `tick`.
    ///
    /// The column then holds one value more than its table has rows until
    /// the caller pushes the row's entity; a caller writing a whole row pushes
    /// every column of it before anything reads the table.
    ///
    /// # Safety
    /// - `T` is this column's component type.
    #[inline]
    pub unsafe fn push_value<T: 'static>(&mut self, value: T, tick: Tick) {
        debug_assert_eq!(
            self.type_id,
            std::any::TypeId::of::<T>(),
            "column type mismatch"
        );
        self.push_ticks(ComponentTicks::new(tick), tick);
        // SAFETY: the new slot is written right away, with a `T`, this
        // column's type (contract), so its layout matches. A typed write (not
        // a byte copy of runtime size) lets the compiler inline the store.
        unsafe { self.data.push_typed(value) };
    }

    /// Bytes this column holds on the heap: its values' allocation and
    /// its change ticks'.
    pub fn heap_bytes(&self) -> usize {
        self.data.capacity * self.data.item.size()
            + self.ticks.capacity() * std::mem::size_of::<ComponentTicks>()
            + self.blocks.capacity() * std::mem::size_of::<BlockTick>()
    }

    /// How many more values (and, if tracked, ticks) fit without growing.
    #[inline]
    pub fn spare(&self) -> usize {
        let data = self.data.spare();
        if self.tracked {
            data.min(self.ticks.capacity() - self.ticks.len())
        } else {
            data
        }
    }

    /// Appends the value at `src` (added and changed at `tick`), copied
    /// bytewise: a value whose type is known only at run time.
    ///
    /// # Safety
    /// - `src` points to a valid value of this column's type, which the
    ///   caller gives up (never uses or drops it again).
    #[inline]
    pub unsafe fn push_bytes(&mut self, src: *const u8, tick: Tick) {
        self.push_ticks(ComponentTicks::new(tick), tick);
        // SAFETY: forwarded contract; `push_from` writes the new slot right
        // away.
        unsafe { self.data.push_from(src) };
    }

    /// Writes `value` (added and changed at `tick`) to slot `row`, past the
    /// length, without counting it: [`Column::set_len`] does that later.
    /// Batch writers use this to keep lengths out of their loop.
    ///
    /// # Safety
    /// - `T` is this column's component type;
    /// - `len() <= row < len() + spare()`, and the slot is not written
    ///   twice before it is counted.
    #[inline(always)]
    pub unsafe fn write_spare<T: 'static>(&mut self, row: usize, value: T, tick: Tick) {
        debug_assert_eq!(
            self.type_id,
            std::any::TypeId::of::<T>(),
            "column type mismatch"
        );
        if self.tracked {
            debug_assert!(self.ticks.len() <= row && row < self.ticks.capacity());
            // SAFETY: row < the ticks' capacity (contract: `spare` counts
            // them when tracked); the slot is past their length.
            unsafe {
                self.ticks
                    .as_mut_ptr()
                    .add(row)
                    .write(UnsafeCell::new(ComponentTicks::new(tick)))
            };
            self.raise_block(row, tick);
        }
        // SAFETY: forwarded contract (same type, so same layout).
        unsafe { self.data.write_spare(row, value) };
    }

    /// Counts the values written by [`Column::write_spare`] up to `len`.
    ///
    /// # Safety
    /// - every slot from `len()` to `len` was written by `write_spare`.
    #[inline]
    pub unsafe fn set_len(&mut self, len: usize) {
        if self.tracked {
            // SAFETY: the ticks of those slots were written with them.
            unsafe { self.ticks.set_len(len) };
        }
        // SAFETY: forwarded contract.
        unsafe { self.data.set_len(len) };
    }

    /// Moves the value and ticks of `row` to the end of `dst` and removes
    /// the row here, moving the last row into its place: one column of a
    /// table's row move ([`BlobVec::move_row_to`]).
    ///
    /// # Safety
    /// - `row < len`; `dst` holds the same component type.
    #[inline(always)]
    pub unsafe fn move_row_to(&mut self, row: usize, dst: &mut Column) {
        debug_assert_eq!(self.type_id, dst.type_id, "column type mismatch");
        if self.tracked {
            let bound = self.blocks[block_of(row)].get();
            dst.push_ticks(*self.ticks[row].get_shared(), bound);
            self.swap_remove_tracked(row);
        }
        // SAFETY: forwarded contract.
        unsafe { self.data.move_row_to(row, &mut dst.data) };
    }

    /// See [`BlobVec::swap_remove_forget`].
    ///
    /// # Safety
    /// - as [`BlobVec::swap_remove_forget`].
    #[inline]
    pub unsafe fn swap_remove_forget(&mut self, row: usize) {
        self.swap_remove_ticks(row);
        // SAFETY: forwarded contract.
        unsafe { self.data.swap_remove_forget(row) };
    }

    /// Moves the value in `row` out as a `T` and removes the row; see
    /// [`BlobVec::swap_remove_take`].
    ///
    /// # Safety
    /// - `row < len`; `T` is this column's component type.
    #[inline]
    pub unsafe fn swap_remove_take<T: 'static>(&mut self, row: usize) -> T {
        debug_assert_eq!(
            self.type_id,
            std::any::TypeId::of::<T>(),
            "column type mismatch"
        );
        self.swap_remove_ticks(row);
        // SAFETY: forwarded contract.
        unsafe { self.data.swap_remove_take::<T>(row) }
    }

    /// Puts `value` in `row` and returns the value it replaces, marking the
    /// slot changed at `tick`.
    ///
    /// # Safety
    /// - `row < len`, and the column holds `T`s.
    #[inline]
    pub unsafe fn replace_take<T: 'static>(&mut self, row: usize, value: T, tick: Tick) -> T {
        debug_assert_eq!(
            self.type_id,
            std::any::TypeId::of::<T>(),
            "column type mismatch"
        );
        debug_assert!(row < self.len());
        self.set_changed(row, tick);
        // SAFETY: row < len holds an initialised `T` (contract); the old
        // value goes to the caller, who owns it from here.
        unsafe { self.ptr_at(row).cast::<T>().replace(value) }
    }

    /// See [`BlobVec::swap_remove_drop`].
    ///
    /// # Safety
    /// - `row < len`.
    #[inline]
    pub unsafe fn swap_remove_drop(&mut self, row: usize, panics: &mut DeferredPanic) {
        self.swap_remove_ticks(row);
        // SAFETY: forwarded contract.
        unsafe { self.data.swap_remove_drop(row, panics) };
    }

    /// Keeps the values (and their ticks) whose row `keep` accepts; see
    /// [`BlobVec::retain`].
    #[inline]
    pub fn retain(
        &mut self,
        mut keep: impl FnMut(usize) -> bool,
        drop_rejected: bool,
        panics: &mut DeferredPanic,
    ) {
        if !self.tracked {
            self.data.retain(keep, drop_rejected, panics);
            return;
        }
        // The ticks follow the values' verdicts, recorded as they are made
        // (a `Vec::retain` on the ticks alone could not ask `keep` again).
        let ticks = &mut self.ticks;
        let mut kept = 0;
        self.data.retain(
            #[inline(always)]
            |row| {
                let k = keep(row);
                if k {
                    ticks.swap(kept, row);
                    kept += 1;
                }
                k
            },
            drop_rejected,
            panics,
        );
        self.ticks.truncate(kept);
        // Kept rows moved down within the column: every block is bounded
        // by the latest bound (rare: a coarse bound costs a restore only a
        // scan of the rows' ticks).
        let bound = self.blocks.iter().map(BlockTick::get).reduce(later);
        if let Some(bound) = bound {
            for b in &mut self.blocks {
                *b = BlockTick::new(bound);
            }
        }
    }

    /// True if this column holds values of type `T`.
    #[inline]
    pub fn holds<T: 'static>(&self) -> bool {
        self.type_id == std::any::TypeId::of::<T>()
    }

    /// True if this column holds values of type `ty`.
    #[inline]
    pub fn holds_type(&self, ty: std::any::TypeId) -> bool {
        self.type_id == ty
    }

    /// The value in `row` as a `T`, if this column holds `T`s and `row` is in
    /// bounds.
    #[inline(always)]
    pub fn get<T: 'static>(&self, row: usize) -> Option<&T> {
        if self.type_id != std::any::TypeId::of::<T>() || row >= self.len() {
            return None;
        }
        // SAFETY: the column holds initialised `T`s in rows < len (checked).
        // `T`'s own size strides the array (it is the layout's, the type
        // being the column's), so the offset needs no load of the layout.
        Some(unsafe { &*self.data.base_ptr().as_ptr().cast::<T>().add(row) })
    }

    /// The value in `row` as a `&mut T`, marked changed at `tick`.
    #[inline(always)]
    pub fn get_mut<T: 'static>(&mut self, row: usize, tick: Tick) -> Option<&mut T> {
        if self.type_id != std::any::TypeId::of::<T>() || row >= self.len() {
            return None;
        }
        self.set_changed(row, tick);
        // SAFETY: the column holds initialised `T`s in rows < len (checked);
        // `&mut self` makes the borrow unique. Strided by `T` as in `get`.
        Some(unsafe { &mut *self.data.base_ptr().as_ptr().cast::<T>().add(row) })
    }

    /// [`Column::get_mut`] through a shared borrow of the column, for a
    /// caller that holds exclusive access to every column this one may be
    /// (the tables' owner borrowed mutably): the value as a `&mut T` and
    /// its changed tick set, if this column holds `T`s and `row` is in
    /// bounds.
    ///
    /// # Safety
    /// For `'a`, nothing else reads or writes this column's values or
    /// ticks, and the column itself is neither moved nor dropped.
    #[inline(always)]
    pub unsafe fn get_mut_exclusive<'a, T: 'static>(
        &self,
        row: usize,
        tick: Tick,
    ) -> Option<&'a mut T> {
        if self.type_id != std::any::TypeId::of::<T>() || row >= self.len() {
            return None;
        }
        if self.tracked {
            // SAFETY: a tracked column has a tick per row (the type's
            // invariant), so `row < len` is in bounds; the ticks sit in
            // `UnsafeCell`s, and the caller's exclusive access covers them.
            unsafe { (*self.ticks_ptr().add(row)).changed = tick };
            self.mark_block(row, tick);
        }
        // SAFETY: the column holds initialised `T`s in rows < len (checked),
        // strided by `T` as in `get`; the data pointer is the buffer's own
        // (not derived from this `&self`), and the caller's exclusive access
        // for `'a` makes the `&mut` unique.
        Some(unsafe { &mut *self.data.base_ptr().as_ptr().cast::<T>().add(row) })
    }

    /// The value in `row` as a `T`, if `row` is in bounds, without comparing
    /// `TypeId`s as [`Column::get`] does on every call: `id` proves the
    /// type (see [`TypedId`]).
    #[inline(always)]
    pub fn get_typed<T: 'static>(&self, id: TypedId<T>, row: usize) -> Option<&T> {
        let _ = id;
        debug_assert!(self.holds::<T>(), "column type mismatch");
        if row >= self.len() {
            return None;
        }
        // SAFETY: the column holds initialised `T`s in rows < len (checked):
        // `id` was issued for `T` by the registry this column's world built
        // it from (`Column::new(info)` of that id, whose value type is `T`;
        // a world's storage never meets another world's ids). `T`'s own
        // size strides the array, so the offset needs no load of the
        // layout.
        Some(unsafe { &*self.data.base_ptr().as_ptr().cast::<T>().add(row) })
    }

    /// [`Column::get_mut`] without the `TypeId` compare (see
    /// [`Column::get_typed`]): the value in `row`, marked changed at `tick`.
    #[inline(always)]
    pub fn get_typed_mut<T: 'static>(
        &mut self,
        id: TypedId<T>,
        row: usize,
        tick: Tick,
    ) -> Option<&mut T> {
        let _ = id;
        debug_assert!(self.holds::<T>(), "column type mismatch");
        if row >= self.len() {
            return None;
        }
        self.set_changed(row, tick);
        // SAFETY: as in `get_typed` (the column holds `T`s in rows < len);
        // `&mut self` makes the borrow unique.
        Some(unsafe { &mut *self.data.base_ptr().as_ptr().cast::<T>().add(row) })
    }

    /// The value in `row` as a `&mut T`, *not* marked changed: for the
    /// world's own bookkeeping inside a value (a relation's back indices),
    /// which no user can see change.
    #[inline]
    pub fn get_mut_unmarked<T: 'static>(&mut self, row: usize) -> Option<&mut T> {
        if self.type_id != std::any::TypeId::of::<T>() || row >= self.len() {
            return None;
        }
        // SAFETY: the column holds initialised `T`s in rows < len (checked);
        // `&mut self` makes the borrow unique.
        Some(unsafe { &mut *self.ptr_at(row).cast::<T>() })
    }

    /// The changed tick of `row`, if the column is tracked and `row` is in
    /// bounds.
    #[inline]
    pub fn changed_tick(&self, row: usize) -> Option<Tick> {
        self.ticks.get(row).map(|t| t.get_shared().changed)
    }

    /// True if some row was written (its changed tick is newer than
    /// `since`, seen from `now`). An untracked column cannot tell: true.
    /// Reads the block bounds only, and the rows' ticks of blocks whose
    /// bound is newer.
    pub fn written_since(&self, since: Tick, now: Tick) -> bool {
        if !self.tracked {
            return true;
        }
        let window = now.get().wrapping_sub(since.get());
        let newer = |t: Tick| now.get().wrapping_sub(t.get()) < window;
        let ticks = &self.ticks;
        self.blocks[..ticks.len().div_ceil(BLOCK_ROWS)]
            .iter()
            .enumerate()
            .filter(|(_, bound)| newer(bound.get()))
            .any(|(b, _)| {
                let rows = b * BLOCK_ROWS..ticks.len().min((b + 1) * BLOCK_ROWS);
                ticks[rows].iter().any(|t| newer(t.get_shared().changed))
            })
    }

    /// Checks the block ticks' invariant (see [`BlockTick`]): enough of
    /// them, and none older than a changed tick of its rows, seen from
    /// `now`. Panics with a message on violation.
    pub fn check_block_bounds(&self, now: Tick) {
        if !self.tracked {
            assert!(self.blocks.is_empty(), "untracked column with block ticks");
            return;
        }
        assert!(
            self.blocks.len() >= self.ticks.len().div_ceil(BLOCK_ROWS),
            "{} block ticks for {} rows",
            self.blocks.len(),
            self.ticks.len()
        );
        let age = |t: Tick| now.get().wrapping_sub(t.get());
        for (row, t) in self.ticks.iter().enumerate() {
            let (changed, bound) = (t.get_shared().changed, self.blocks[block_of(row)].get());
            assert!(
                age(bound) <= age(changed),
                "row {row} changed at {changed:?}, after its block's bound {bound:?} (now {now:?})"
            );
        }
    }

    /// Rollback: puts `saved[row]` back in every row written since `since`
    /// (changed tick newer than `since`, seen from `now`) and marks those
    /// rows changed at `now`; rows not written keep their values and
    /// ticks. An untracked column cannot tell which rows were written, so
    /// all are put back (and none marked). Returns how many rows were
    /// written.
    ///
    /// Its cost follows the blocks written, not the rows: a block whose
    /// bound is not newer than `since` is skipped without reading its rows.
    /// Where at least half the blocks of a group of 64 were written, and
    /// `T` has no drop glue, the group's written span is put back whole
    /// (one copy) and its ticks marked in one pass: the unwritten rows in
    /// it get their saved values again, which they hold already (their
    /// ticks say nobody wrote them; a value changed without a write, through
    /// interior mutability, is put back too).
    ///
    /// Panics, changing nothing, if the column does not hold `T`s or if
    /// `saved` does not have a value per row.
    pub fn restore_written<T: Clone + 'static>(
        &mut self,
        saved: &[T],
        since: Tick,
        now: Tick,
    ) -> usize {
        assert!(
            self.holds::<T>() && saved.len() == self.len(),
            "rollback: a saved column must hold one value of the column's type per row"
        );
        // SAFETY: the column holds `len` initialised `T`s (checked just
        // above), contiguous and aligned from the base pointer; `&mut self`
        // makes the borrow unique, and the ticks are a separate allocation.
        let values = unsafe {
            std::slice::from_raw_parts_mut(self.base_ptr().as_ptr().cast::<T>(), self.len())
        };
        if !self.tracked {
            values.clone_from_slice(saved);
            return values.len();
        }
        let window = now.get().wrapping_sub(since.get());
        let newer = |t: Tick| now.get().wrapping_sub(t.get()) < window;
        let Some(test) = Newer::new(now, window) else {
            // `since == now`: nothing was written since.
            return 0;
        };
        // Block by block (`BLOCK_ROWS` rows). A block whose bound is not
        // newer than `since` is skipped, its rows' ticks unread: after a
        // frame that wrote a few rows, most blocks (found through a mask of
        // 64 bounds at a time). A block written whole joins a run copied as
        // one slice (a `memcpy` for `Copy`); in a block written in part, the
        // written rows are put back one by one. A group of 64 blocks mostly
        // written joins the run whole (see below): after a frame that wrote
        // everything, one copy per column and one pass over its ticks.
        let mut written = 0;
        let len = self.ticks.len();
        let (blocks, all_ticks) = (
            &mut self.blocks[..len.div_ceil(BLOCK_ROWS)],
            &mut self.ticks,
        );
        // The first row of the run of wholly written blocks not copied yet,
        // and the block after the run's last one (a block written in part
        // is put back on the spot, outside the run).
        let mut next = 0;
        let mut run: Option<usize> = None;
        // 64 blocks at a time: a mask of those whose bound is newer (one
        // branch-free pass over the bounds, sixteen at a time), then only
        // those.
        for (g, group) in blocks.chunks_mut(64).enumerate() {
            let dirty = newer_bounds(group, test);
            // A group where at least half the blocks were written (after a
            // frame that wrote most rows): put back the whole span from
            // its first written block to its last with one copy, and mark
            // the written rows in one branch-free pass over the span's
            // ticks (`mark_written`, whole vectors), rather than block by
            // block. A row not written since the snapshot holds its saved
            // value (its tick says so), so copying it back changes
            // nothing; for a type with drop glue (a `String`) that copy
            // would clone each unwritten row's heap data, so those keep
            // the sparse path.
            if dirty != 0
                && !std::mem::needs_drop::<T>()
                && 2 * dirty.count_ones() as usize >= group.len()
            {
                let (first, last) = (
                    dirty.trailing_zeros() as usize,
                    63 - dirty.leading_zeros() as usize,
                );
                let b = g * 64 + first;
                if b != next {
                    // A clean block in between ends the run.
                    if let Some(start) = run.take() {
                        let end = next * BLOCK_ROWS;
                        values[start..end].clone_from_slice(&saved[start..end]);
                    }
                }
                // The span joins the run (copied when it ends).
                run.get_or_insert(b * BLOCK_ROWS);
                next = g * 64 + last + 1;
                let rows = b * BLOCK_ROWS..len.min(next * BLOCK_ROWS);
                written += mark_written(&mut all_ticks[rows], now, window);
                // The written blocks' bounds become `now` (a later bound
                // is still a bound, for a block whose bound was newer but
                // none of whose rows is). After a frame that wrote every
                // row, every block of the span: one fill.
                let span = &mut group[first..=last];
                if dirty >> first == u64::MAX >> (64 - span.len()) {
                    span.iter_mut()
                        .for_each(|bound| *bound.0.get_mut() = now.get());
                } else {
                    for bound in span {
                        let t = bound.0.get_mut();
                        *t = if newer(Tick::new(*t)) { now.get() } else { *t };
                    }
                }
                continue;
            }
            if dirty != 0 {
                written += restore_blocks(
                    values,
                    saved,
                    all_ticks,
                    group,
                    g * 64,
                    dirty,
                    (test, now),
                    (&mut run, &mut next),
                );
            }
        }
        if let Some(start) = run {
            let end = len.min(next * BLOCK_ROWS);
            values[start..end].clone_from_slice(&saved[start..end]);
        }
        written
    }

    /// Marks `row` changed (if the column is tracked).
    #[inline]
    pub fn set_changed(&mut self, row: usize, tick: Tick) {
        if self.tracked {
            self.ticks[row].get_mut().changed = tick;
            self.blocks[block_of(row)].mark(tick);
        }
    }

    /// Rollback: the added tick of every row, in order, into `out`
    /// (replacing what it held; nothing for an untracked column).
    pub fn added_ticks_into(&self, out: &mut Vec<Tick>) {
        out.clear();
        out.extend(self.ticks.iter().map(|t| t.get_shared().added));
    }

    /// Rollback: puts `saved[row]` back as the added tick of every row
    /// added since `since` and before `now` (added tick newer than `since`
    /// and not `now`, the tick of the restore's own inserts, which stay
    /// added). Reads only the rows of blocks whose bound is newer than
    /// `since` (a row's added tick is never newer than its changed tick).
    /// Returns how many rows it changed. Does nothing to an untracked
    /// column, or if `saved` does not have a tick per row. (Out of line:
    /// a restore after a frame that moved no entity never calls it.)
    #[inline(never)]
    pub fn restore_added(&mut self, saved: &[Tick], since: Tick, now: Tick) -> usize {
        let len = self.ticks.len();
        if !self.tracked || saved.len() != len {
            return 0;
        }
        let window = now.get().wrapping_sub(since.get());
        let newer = |t: Tick| now.get().wrapping_sub(t.get()) < window;
        let mut put_back = 0;
        let (blocks, ticks) = (&self.blocks[..len.div_ceil(BLOCK_ROWS)], &mut self.ticks);
        for (b, bound) in blocks.iter().enumerate() {
            if !newer(bound.get()) {
                continue;
            }
            let rows = b * BLOCK_ROWS..len.min((b + 1) * BLOCK_ROWS);
            for (t, &old) in ticks[rows.clone()].iter_mut().zip(&saved[rows]) {
                let t = t.get_mut();
                if t.added != now && newer(t.added) {
                    t.added = old;
                    t.added.clamp_age(now);
                    put_back += 1;
                }
            }
        }
        put_back
    }

    /// [`Column::restore_added`] of one row (`saved` its saved added tick).
    pub fn restore_added_row(&mut self, row: usize, saved: Tick, since: Tick, now: Tick) -> bool {
        let Some(t) = self.ticks.get_mut(row).map(UnsafeCell::get_mut) else {
            return false;
        };
        let window = now.get().wrapping_sub(since.get());
        if t.added == now || now.get().wrapping_sub(t.added.get()) >= window {
            return false;
        }
        t.added = saved;
        t.added.clamp_age(now);
        true
    }

    /// Makes room to [`Column::append_vec`] `additional` values, except
    /// that a column with nothing allocated stays so: its batch's buffer
    /// will become its own. After this, `append_vec` of that many values
    /// cannot fail.
    pub fn reserve_for_append(&mut self, additional: usize) {
        if self.data.capacity > 0 {
            self.data.reserve(additional);
        }
        if self.tracked {
            self.ticks.reserve(additional);
        }
    }

    /// Appends every value of `values`, in order, with both ticks set to
    /// `tick`: one copy of the whole run, or none when the column has no
    /// allocation yet (a table that a columnar spawn just created): then the
    /// `Vec`'s buffer becomes the column's.
    ///
    /// # Safety
    /// - `T` is this column's component type.
    pub unsafe fn append_vec<T: 'static>(&mut self, mut values: Vec<T>, tick: Tick) {
        debug_assert_eq!(
            self.type_id,
            std::any::TypeId::of::<T>(),
            "column type mismatch"
        );
        let n = values.len();
        if self.tracked {
            let start = self.ticks.len();
            self.ticks
                .extend((0..n).map(|_| UnsafeCell::new(ComponentTicks::new(tick))));
            for row in (start..start + n).step_by(BLOCK_ROWS) {
                self.raise_block(row, tick);
            }
            if n > 0 {
                self.raise_block(start + n - 1, tick);
            }
        }
        if self.data.capacity == 0 && values.capacity() > 0 {
            // SAFETY: `T` is this column's type (contract).
            unsafe { self.data.adopt_vec(values) };
            return;
        }
        self.data.reserve(n);
        // SAFETY: `T` is this column's type (contract), so the slots have
        // `T`'s layout and an array of `n` of them is laid out as the Vec's;
        // there is room for `n` more (reserved just above), and the source
        // and the fresh slots cannot overlap. The values move: `values`
        // forgets them before anything else runs, so each is dropped once,
        // by the column.
        unsafe {
            let dst = self.data.ptr_at(self.data.len);
            std::ptr::copy_nonoverlapping(
                values.as_ptr().cast::<u8>(),
                dst,
                n * std::mem::size_of::<T>(),
            );
            values.set_len(0);
        }
        self.data.len += n;
    }

    /// Appends a row's ticks; `bound` bounds its changed tick (its
    /// block's bound in the column it comes from, or the tick itself).
    /// (Untracked columns, the common case on structural paths, pay one
    /// test: the tracked work is out of line.)
    #[inline(always)]
    fn push_ticks(&mut self, ticks: ComponentTicks, bound: Tick) {
        if self.tracked {
            self.push_tracked(ticks, bound);
        }
    }

    #[inline(never)]
    fn push_tracked(&mut self, ticks: ComponentTicks, bound: Tick) {
        let row = self.ticks.len();
        self.ticks.push(UnsafeCell::new(ticks));
        self.raise_block(row, bound);
    }

    /// Removes the ticks of `row`, the last row's taking its place (its
    /// block's bound joins the bound of `row`'s block).
    #[inline(always)]
    fn swap_remove_ticks(&mut self, row: usize) {
        if self.tracked {
            self.swap_remove_tracked(row);
        }
    }

    #[inline(never)]
    fn swap_remove_tracked(&mut self, row: usize) {
        let last = self.ticks.len() - 1;
        if block_of(row) != block_of(last) {
            let bound = self.blocks[block_of(last)].get();
            self.blocks[block_of(row)].raise(bound);
        }
        self.ticks.swap_remove(row);
    }

    pub fn clear(&mut self, panics: &mut DeferredPanic) {
        self.ticks.clear();
        self.blocks.clear();
        self.data.clear(panics);
    }

    pub fn clamp_ticks(&mut self, now: Tick) {
        for t in self.ticks.iter_mut() {
            let t = t.get_mut();
            t.added.clamp_age(now);
            t.changed.clamp_age(now);
        }
        // Later bounds are still bounds (see `BlockTick`).
        let oldest = Tick::new(now.get().wrapping_sub(CHECK_INTERVAL));
        for b in &mut self.blocks {
            if now.get().wrapping_sub(b.get().get()) > CHECK_INTERVAL {
                *b = BlockTick::new(oldest);
            }
        }
    }
}

/// The test of [`Column::restore_written`], "changed tick newer than
/// `since`, seen from `now`" (`now - t < window`, `window = now - since`,
/// unsigned), in the form vector code takes in two instructions a lane
/// group: `now - t < window` is `t - (since + 1) < window`, an unsigned
/// compare is a signed one of both sides with their sign bits flipped, and
/// flipping the sign bit of a difference flips it in the subtrahend
/// (`x ^ 2³¹ = x + 2³¹` modulo 2³²). So: `(t - bias) as i32 <= floor`,
/// with `floor = (window ^ 2³¹) as i32 - 1` (the vector code computes its
/// negation, `>`, which keeps the compared value in place).
#[derive(Clone, Copy, Debug)]
struct Newer {
    bias: u32,
    floor: i32,
}

impl Newer {
    const SIGN: u32 = 1 << 31;

    /// The test, unless `window` is 0 (`since == now`: no tick passes,
    /// and `floor` would wrap).
    #[inline(always)]
    fn new(now: Tick, window: u32) -> Option<Self> {
        let after_since = now.get().wrapping_sub(window).wrapping_add(1);
        (window != 0).then(|| Newer {
            bias: after_since ^ Self::SIGN,
            floor: (window ^ Self::SIGN) as i32 - 1,
        })
    }

    #[inline(always)]
    fn test(self, t: u32) -> bool {
        (t.wrapping_sub(self.bias) as i32) <= self.floor
    }

    /// Which of sixteen ticks pass: bit `i` for `ticks[i]`.
    #[inline(always)]
    fn mask16(self, ticks: [u32; 16]) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU
            // has it (and the compiler assumes it).
            unsafe { newer_mask16_sse2(ticks, self) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            (0..16).fold(0, |m, i| m | u32::from(self.test(ticks[i])) << i)
        }
    }

    /// Which rows of a whole block pass, from the block's ticks as
    /// `[added, changed]` pairs: bit `r` for row `r`'s changed tick.
    #[inline(always)]
    fn mask_rows(self, ticks: [[u32; 2]; BLOCK_ROWS]) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU
            // has it (and the compiler assumes it).
            unsafe { newer_rows8_sse2(ticks, self) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            (0..BLOCK_ROWS).fold(0, |m, r| m | u32::from(self.test(ticks[r][1])) << r)
        }
    }
}

// The vector forms below take a block of eight rows.
const _: () = assert!(BLOCK_ROWS == 8);

/// [`Newer::test`] of four lanes, negated: all ones where it fails.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse2")]
fn older4_sse2(ticks: std::arch::x86_64::__m128i, test: Newer) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::{_mm_cmpgt_epi32, _mm_set1_epi32, _mm_sub_epi32};
    _mm_cmpgt_epi32(
        _mm_sub_epi32(ticks, _mm_set1_epi32(test.bias as i32)),
        _mm_set1_epi32(test.floor),
    )
}

/// [`Newer::mask16`]: four lanes of the negated test at a time, narrowed
/// to bytes (saturating packs keep all ones and zeros), gathered in one
/// `movemask` and negated back. Compilers do not find this form on their
/// own from a scalar loop (they gather the lanes' bits one by one).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse2")]
fn newer_mask16_sse2(ticks: [u32; 16], test: Newer) -> u32 {
    use std::arch::x86_64::{_mm_movemask_epi8, _mm_packs_epi16, _mm_packs_epi32, _mm_setr_epi32};
    let t = ticks.map(|t| t as i32);
    let a = older4_sse2(_mm_setr_epi32(t[0], t[1], t[2], t[3]), test);
    let b = older4_sse2(_mm_setr_epi32(t[4], t[5], t[6], t[7]), test);
    let c = older4_sse2(_mm_setr_epi32(t[8], t[9], t[10], t[11]), test);
    let d = older4_sse2(_mm_setr_epi32(t[12], t[13], t[14], t[15]), test);
    let bytes = _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
    !_mm_movemask_epi8(bytes) as u32 & 0xffff
}

/// [`Newer::mask_rows`]: the block's ticks read as four vectors of two
/// rows (`added`, `changed`, `added`, `changed`: one load each when that
/// is their layout in memory), the `changed` lanes picked out in two
/// shuffles, then [`newer_mask16_sse2`]'s packing.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse2")]
fn newer_rows8_sse2(ticks: [[u32; 2]; BLOCK_ROWS], test: Newer) -> u32 {
    use std::arch::x86_64::{
        _mm_castps_si128, _mm_castsi128_ps, _mm_movemask_epi8, _mm_packs_epi16, _mm_packs_epi32,
        _mm_setr_epi32, _mm_shuffle_ps,
    };
    let t = ticks.map(|[a, c]| [a as i32, c as i32]);
    let pair =
        |k: usize| _mm_castsi128_ps(_mm_setr_epi32(t[k][0], t[k][1], t[k + 1][0], t[k + 1][1]));
    // Lanes 1 and 3 of each: rows 0..4, then rows 4..8.
    const CHANGED: i32 = 0b11_01_11_01;
    let low = _mm_castps_si128(_mm_shuffle_ps::<CHANGED>(pair(0), pair(2)));
    let high = _mm_castps_si128(_mm_shuffle_ps::<CHANGED>(pair(4), pair(6)));
    let words = _mm_packs_epi32(older4_sse2(low, test), older4_sse2(high, test));
    !_mm_movemask_epi8(_mm_packs_epi16(words, words)) as u32 & 0xff
}

/// Which block bounds of a group (at most 64 blocks) are newer: bit `i`
/// for `bounds[i]`.
#[inline(always)]
fn newer_bounds(bounds: &mut [BlockTick], test: Newer) -> u64 {
    let sixteen = |ticks: &mut [BlockTick]| {
        let ticks: &mut [BlockTick; 16] = ticks.try_into().expect("sixteen bounds");
        u64::from(test.mask16(ticks.each_mut().map(|t| *t.0.get_mut())))
    };
    if let Ok(group) = <&mut [BlockTick; 64]>::try_from(&mut *bounds) {
        // A whole group (all but the column's last): constant shifts.
        let (a, rest) = group.split_at_mut(16);
        let (b, rest) = rest.split_at_mut(16);
        let (c, d) = rest.split_at_mut(16);
        return sixteen(a) | sixteen(b) << 16 | sixteen(c) << 32 | sixteen(d) << 48;
    }
    let done = bounds.len() / 16 * 16;
    let mut sixteens = bounds.chunks_exact_mut(16);
    let mut mask = 0;
    for (k, sixteen) in (&mut sixteens).enumerate() {
        let sixteen: &mut [BlockTick; 16] = sixteen.try_into().expect("chunks of 16");
        let ticks = sixteen.each_mut().map(|t| *t.0.get_mut());
        mask |= u64::from(test.mask16(ticks)) << (16 * k);
    }
    for (i, t) in sixteens.into_remainder().iter_mut().enumerate() {
        mask |= u64::from(test.test(*t.0.get_mut())) << (done + i);
    }
    mask
}

/// [`Column::restore_written`] block by block, for the written blocks of
/// one group of 64: bit `i` of `dirty` for block `first + i`, whose bound
/// is `bounds[i]` (`values`, `saved` and `ticks` are the column's). A
/// block written whole joins the pending run (`run`: its first row, and
/// the block after its last); in a block written in part (after a small
/// frame, most often one row), the written rows are put back one by one.
/// The blocks written get the bound `now`. Returns how many rows were
/// written.
///
/// Out of line, the loop keeps its state in registers (inlined in the
/// caller, it spills); it runs once a group that has written blocks.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn restore_blocks<T: Clone>(
    values: &mut [T],
    saved: &[T],
    ticks: &mut [UnsafeCell<ComponentTicks>],
    bounds: &mut [BlockTick],
    first: usize,
    mut dirty: u64,
    (test, now): (Newer, Tick),
    (run, next): (&mut Option<usize>, &mut usize),
) -> usize {
    let len = ticks.len();
    assert!(values.len() == len && saved.len() == len);
    let whole = len / BLOCK_ROWS;
    let mut written = 0;
    // Whole blocks as arrays (one bounds check a block, rows without),
    // until the column's last block if it is short (its bit is the last).
    let short = {
        let (values, saved, ticks) = (
            whole_blocks_mut(values),
            whole_blocks(saved),
            whole_blocks_mut(ticks),
        );
        loop {
            if dirty == 0 {
                break None;
            }
            let i = dirty.trailing_zeros() as usize;
            dirty &= dirty - 1;
            let b = first + i;
            if b >= whole {
                break Some(i);
            }
            let block = &mut ticks[b];
            let mask = test.mask_rows(block.each_mut().map(|t| {
                let t = t.get_mut();
                [t.added.get(), t.changed.get()]
            }));
            if mask == 0 {
                // A bound later than its rows' ticks (raised by a row that
                // moved in and out): nothing to put back.
                continue;
            }
            *bounds[i].0.get_mut() = now.get();
            if mask == (1 << BLOCK_ROWS) - 1 {
                for t in block.iter_mut() {
                    t.get_mut().changed = now;
                }
                join_run(
                    values.as_flattened_mut(),
                    saved.as_flattened(),
                    b,
                    (run, next),
                );
                written += BLOCK_ROWS;
                continue;
            }
            written += put_back_rows(&mut values[b], &saved[b], block, mask, now);
        }
    };
    if let Some(i) = short {
        let base = whole * BLOCK_ROWS;
        let block = &mut ticks[base..];
        let mask = block.iter_mut().enumerate().fold(0, |m, (r, t)| {
            m | u32::from(test.test(t.get_mut().changed.get())) << r
        });
        if mask != 0 {
            *bounds[i].0.get_mut() = now.get();
        }
        if mask == (1 << block.len()) - 1 {
            for t in block.iter_mut() {
                t.get_mut().changed = now;
            }
            join_run(values, saved, whole, (run, next));
            written += block.len();
        } else {
            written += put_back_rows(&mut values[base..], &saved[base..], block, mask, now);
        }
    }
    written
}

/// Block `b`, written whole, joins the pending run of such blocks
/// (`run`: its first row; `next`: the block after its last), after
/// copying that run if it does not end right before `b`.
#[inline(always)]
fn join_run<T: Clone>(
    values: &mut [T],
    saved: &[T],
    b: usize,
    (run, next): (&mut Option<usize>, &mut usize),
) {
    if b != *next {
        if let Some(start) = run.take() {
            let end = *next * BLOCK_ROWS;
            values[start..end].clone_from_slice(&saved[start..end]);
        }
    }
    run.get_or_insert(b * BLOCK_ROWS);
    *next = b + 1;
}

/// The whole blocks of `rows` (a short last block left out), as arrays.
#[inline(always)]
fn whole_blocks_mut<T>(rows: &mut [T]) -> &mut [[T; BLOCK_ROWS]] {
    let n = rows.len() / BLOCK_ROWS;
    // SAFETY: an array is laid out as its elements one after the other,
    // without padding, so the first `n * BLOCK_ROWS` rows (in bounds) are
    // `n` arrays of `BLOCK_ROWS` with the rows' alignment; the result
    // reborrows `rows` uniquely for its lifetime.
    unsafe { std::slice::from_raw_parts_mut(rows.as_mut_ptr().cast(), n) }
}

/// [`whole_blocks_mut`] of shared rows.
#[inline(always)]
fn whole_blocks<T>(rows: &[T]) -> &[[T; BLOCK_ROWS]] {
    let n = rows.len() / BLOCK_ROWS;
    // SAFETY: as in `whole_blocks_mut`, shared.
    unsafe { std::slice::from_raw_parts(rows.as_ptr().cast(), n) }
}

/// Puts back the rows of a block written in part (bit `r` of `mask` for
/// row `r` of `values`, `saved` and `ticks`, at most [`BLOCK_ROWS`]) and
/// marks them changed at `now`; returns how many.
#[inline(always)]
fn put_back_rows<T: Clone>(
    values: &mut [T],
    saved: &[T],
    ticks: &mut [UnsafeCell<ComponentTicks>],
    mask: u32,
    now: Tick,
) -> usize {
    let (mut rest, mut n) = (mask, 0);
    while rest != 0 {
        // Masked to a row of a block: no bounds check in a whole block.
        let r = rest.trailing_zeros() as usize & (BLOCK_ROWS - 1);
        rest &= rest - 1;
        values[r].clone_from(&saved[r]);
        ticks[r].get_mut().changed = now;
        n += 1;
    }
    n
}

/// Marks changed at `now` every row of `ticks` whose changed tick is
/// newer than `now - window` (written since the snapshot a restore puts
/// back) and returns how many: one branch-free pass.
///
/// After a frame that wrote every row, this pass and the copy of the
/// values are the whole restore, and what bounds the pass is its
/// instructions per row. The compiler's own vectorisation of the scalar
/// loop gathers the `changed` ticks out of the interleaved pairs and
/// stores them back one by one (about 5.5 instructions a row; the pass
/// was then near half of a full restore), so on x86-64 it works on whole
/// vectors of ticks instead: AVX2 where the CPU has it (four rows a
/// vector, about 2 instructions a row), else SSE2 (two rows a vector).
#[inline]
fn mark_written(ticks: &mut [UnsafeCell<ComponentTicks>], now: Tick, window: u32) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (just checked).
            unsafe { mark_written_avx2(ticks, now.get(), window) }
        } else {
            // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU
            // has it (and the compiler assumes it).
            unsafe { mark_written_sse2(ticks, now.get(), window) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        mark_written_scalar(ticks, now, window)
    }
}

/// [`mark_written`] one row at a time: the portable form, and what the
/// vector forms are tested against.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn mark_written_scalar(ticks: &mut [UnsafeCell<ComponentTicks>], now: Tick, window: u32) -> usize {
    ticks.iter_mut().fold(0, |n, t| {
        let t = t.get_mut();
        let written = now.get().wrapping_sub(t.changed.get()) < window;
        t.changed = if written { now } else { t.changed };
        n + usize::from(written)
    })
}

// The vector passes read a row's ticks as two `u32` lanes, `added` then
// `changed` (`ComponentTicks` is `repr(C)` of two `repr(transparent)`
// `u32`s; `UnsafeCell` has its content's layout).
const _: () = assert!(
    std::mem::size_of::<UnsafeCell<ComponentTicks>>() == 8
        && std::mem::align_of::<UnsafeCell<ComponentTicks>>() == 4
        && std::mem::offset_of!(ComponentTicks, added) == 0
        && std::mem::offset_of!(ComponentTicks, changed) == 4
);

/// How many rows the vector passes handle between two sums of their
/// per-lane counts: a lane counts at most one row per vector, so it
/// cannot overflow.
#[cfg(target_arch = "x86_64")]
const COUNT_ROWS: usize = 1 << 21;

/// [`mark_written`] two rows per vector of four `u32` lanes (`added`,
/// `changed`, `added`, `changed`). The test is the scalar one, `now - t <
/// window` unsigned, as a signed compare of both sides with their sign
/// bits flipped: `(now ^ MIN) - t` is `now - t` flipped. The window of an
/// `added` lane is `i32::MIN`, which nothing is below, so only `changed`
/// lanes pass; `now` is blended in where they do, and the whole vector is
/// stored back (16 bytes, two rows, a store). Written rows are counted by
/// subtracting the compare's all-ones lanes.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse2")]
fn mark_written_sse2(ticks: &mut [UnsafeCell<ComponentTicks>], now: u32, window: u32) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_and_si128, _mm_andnot_si128, _mm_cmpgt_epi32,
        _mm_cvtsi128_si32, _mm_loadu_si128, _mm_or_si128, _mm_set1_epi32, _mm_setr_epi32,
        _mm_setzero_si128, _mm_srli_si128, _mm_storeu_si128, _mm_sub_epi32,
    };
    let now_v = _mm_set1_epi32(now as i32);
    let now_flipped = _mm_set1_epi32((now ^ (1 << 31)) as i32);
    let w = (window ^ (1 << 31)) as i32;
    let window_v = _mm_setr_epi32(i32::MIN, w, i32::MIN, w);
    let mut total = 0;
    for chunk in ticks.chunks_mut(COUNT_ROWS) {
        let pairs = chunk.len() / 2;
        let base = chunk.as_mut_ptr().cast::<__m128i>();
        let mut count = _mm_setzero_si128();
        for i in 0..pairs {
            // SAFETY: `chunk` holds `2 * pairs` or more rows of 8 bytes
            // (the layout asserted above), so the 16 bytes at `16 * i` lie
            // in it; unaligned loads and stores need no alignment. `&mut`
            // makes the access unique, and every bit pattern is a valid pair
            // of ticks.
            unsafe {
                let p = base.add(i);
                let v = _mm_loadu_si128(p);
                let written = _mm_cmpgt_epi32(window_v, _mm_sub_epi32(now_flipped, v));
                count = _mm_sub_epi32(count, written);
                let v = _mm_or_si128(_mm_and_si128(written, now_v), _mm_andnot_si128(written, v));
                _mm_storeu_si128(p, v);
            }
        }
        // Lanes 1 and 3 hold the counts (0 and 2 stay zero).
        let count = _mm_add_epi32(count, _mm_srli_si128::<8>(count));
        total += _mm_cvtsi128_si32(_mm_srli_si128::<4>(count)) as u32 as usize;
        if chunk.len() % 2 == 1 {
            let t = chunk[chunk.len() - 1].get_mut();
            let written = now.wrapping_sub(t.changed.get()) < window;
            t.changed = if written { Tick::new(now) } else { t.changed };
            total += usize::from(written);
        }
    }
    total
}

/// [`mark_written_sse2`] four rows per vector of eight lanes; the last
/// one to three rows go to it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn mark_written_avx2(ticks: &mut [UnsafeCell<ComponentTicks>], now: u32, window: u32) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_srli_si128, _mm256_blendv_epi8,
        _mm256_castsi256_si128, _mm256_cmpgt_epi32, _mm256_extracti128_si256, _mm256_loadu_si256,
        _mm256_set1_epi32, _mm256_setr_epi32, _mm256_setzero_si256, _mm256_storeu_si256,
        _mm256_sub_epi32,
    };
    let now_v = _mm256_set1_epi32(now as i32);
    let now_flipped = _mm256_set1_epi32((now ^ (1 << 31)) as i32);
    let (w, m) = ((window ^ (1 << 31)) as i32, i32::MIN);
    let window_v = _mm256_setr_epi32(m, w, m, w, m, w, m, w);
    let mut total = 0;
    for chunk in ticks.chunks_mut(COUNT_ROWS) {
        let fours = chunk.len() / 4;
        let base = chunk.as_mut_ptr().cast::<__m256i>();
        let mut count = _mm256_setzero_si256();
        for i in 0..fours {
            // SAFETY: as in `mark_written_sse2`, with 32 bytes (four rows)
            // at `32 * i`, in the chunk's `4 * fours` or more rows.
            unsafe {
                let p = base.add(i);
                let v = _mm256_loadu_si256(p);
                let written = _mm256_cmpgt_epi32(window_v, _mm256_sub_epi32(now_flipped, v));
                count = _mm256_sub_epi32(count, written);
                _mm256_storeu_si256(p, _mm256_blendv_epi8(v, now_v, written));
            }
        }
        let count = _mm_add_epi32(
            _mm256_castsi256_si128(count),
            _mm256_extracti128_si256::<1>(count),
        );
        let count = _mm_add_epi32(count, _mm_srli_si128::<8>(count));
        total += _mm_cvtsi128_si32(_mm_srli_si128::<4>(count)) as u32 as usize;
        total += mark_written_sse2(&mut chunk[4 * fours..], now, window);
    }
    total
}

/// Reading ticks through `&self`: ticks are only written by a holder of
/// exclusive access to the component (query access rules), so a shared read
/// here never races.
trait SharedTicks {
    fn get_shared(&self) -> &ComponentTicks;
}

impl SharedTicks for UnsafeCell<ComponentTicks> {
    #[inline]
    fn get_shared(&self) -> &ComponentTicks {
        // SAFETY: see the trait doc: no writer exists while `&Column` is used
        // outside a query that holds write access to this component.
        unsafe { &*self.get() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A value that counts its drops in the counter it names (each test
    /// has its own), over-aligned so tests check alignment too.
    #[repr(align(32))]
    struct D(u64, &'static AtomicUsize);

    impl Drop for D {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    unsafe fn drop_d(p: *mut u8) {
        // SAFETY: test-only: p is a valid D.
        unsafe { p.cast::<D>().drop_in_place() }
    }

    /// Pushes a `D` by moving it into `v`.
    fn push_d(v: &mut BlobVec, d: D) {
        let d = std::mem::ManuallyDrop::new(d);
        // SAFETY: `v` holds `D`s; `d` is a valid D we give up.
        unsafe { v.push_from((&*d as *const D).cast()) };
    }

    /// The vector pass of a rollback restore marks and counts the same rows
    /// as the row-at-a-time one, leaves `added` alone, and handles an odd
    /// row at the end, ages around the window's edge and ticks that wrapped
    /// past zero.
    #[test]
    fn mark_written_matches_the_scalar_pass() {
        let mut seed = 0x9e37_79b9_u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for now in [100u32, 3, u32::MAX - 2] {
            for window in [0u32, 1, 10, 50, (1 << 31) + 7, u32::MAX] {
                for len in [0usize, 1, 2, 3, 7, 8, 9, 64, 67] {
                    let ticks: Vec<ComponentTicks> = (0..len)
                        .map(|_| ComponentTicks {
                            added: Tick::new(next()),
                            // Ages from 0 to 2 windows, and a few far off.
                            changed: Tick::new(now.wrapping_sub(match next() % 8 {
                                0 => next(),
                                _ => next() % window.saturating_mul(2).saturating_add(1),
                            })),
                        })
                        .collect();
                    let cells = |t: &[ComponentTicks]| -> Vec<UnsafeCell<ComponentTicks>> {
                        t.iter().map(|&t| UnsafeCell::new(t)).collect()
                    };
                    let plain = |v: Vec<UnsafeCell<ComponentTicks>>| -> Vec<ComponentTicks> {
                        v.into_iter().map(UnsafeCell::into_inner).collect()
                    };
                    let mut slow = cells(&ticks);
                    let expected = mark_written_scalar(&mut slow, Tick::new(now), window);
                    let slow = plain(slow);
                    type Pass = fn(&mut [UnsafeCell<ComponentTicks>], Tick, u32) -> usize;
                    let mut passes: Vec<(&str, Pass)> = vec![("dispatch", mark_written)];
                    #[cfg(target_arch = "x86_64")]
                    {
                        passes.push(("sse2", |t, now, w| {
                            // SAFETY: SSE2 is x86-64 baseline.
                            unsafe { mark_written_sse2(t, now.get(), w) }
                        }));
                        if std::arch::is_x86_feature_detected!("avx2") {
                            passes.push(("avx2", |t, now, w| {
                                // SAFETY: the CPU has AVX2 (checked just above).
                                unsafe { mark_written_avx2(t, now.get(), w) }
                            }));
                        }
                    }
                    for (name, pass) in passes {
                        let mut fast = cells(&ticks);
                        let n = pass(&mut fast, Tick::new(now), window);
                        let fast = plain(fast);
                        assert_eq!(
                            (n, &fast),
                            (expected, &slow),
                            "{name}: now {now} window {window}"
                        );
                        assert!(fast.iter().zip(&ticks).all(|(a, b)| a.added == b.added));
                    }
                    // And the reference itself: exactly the rows younger
                    // than the window are marked.
                    let young = |t: &ComponentTicks| now.wrapping_sub(t.changed.get()) < window;
                    assert_eq!(expected, ticks.iter().filter(|t| young(t)).count());
                    for (after, before) in slow.iter().zip(&ticks) {
                        let want = if young(before) {
                            Tick::new(now)
                        } else {
                            before.changed
                        };
                        assert_eq!(after.changed, want);
                    }
                }
            }
        }
    }

    #[test]
    fn push_swap_remove_and_drop_counts() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        let mut v = BlobVec::new(Layout::new::<D>(), Some(drop_d));
        for i in 0..10 {
            push_d(&mut v, D(i, &DROPS));
        }
        let mut p = DeferredPanic::new();
        // SAFETY: 3 < len.
        unsafe { v.swap_remove_drop(3, &mut p) };
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        // SAFETY: slot 3 now holds the former last value.
        assert_eq!(unsafe { (*v.ptr_at(3).cast::<D>()).0 }, 9);
        drop(v);
        assert_eq!(DROPS.load(Ordering::SeqCst), 10);
        p.resume();
    }

    /// A `Vec`'s buffer taken whole (`adopt_vec`, a columnar spawn into a new
    /// table) is the array's: it grows from the `Vec`'s capacity, which
    /// need not be a power of two, and every value is dropped once.
    #[test]
    fn adopted_vec_grows_and_drops_once() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        let mut v = BlobVec::new(Layout::new::<D>(), Some(drop_d));
        let mut values = Vec::with_capacity(5);
        values.extend((0..3).map(|i| D(i, &DROPS)));
        // SAFETY: `D`'s layout is the array's; nothing allocated yet.
        unsafe { v.adopt_vec(values) };
        assert_eq!((v.len(), v.capacity), (3, 5));
        for i in 3..9 {
            push_d(&mut v, D(i, &DROPS));
        }
        for i in 0..9 {
            // SAFETY: i < len; slot i holds a D.
            let d = unsafe { &*v.ptr_at(i).cast::<D>() };
            assert_eq!(d.0, i as u64);
            assert_eq!(d as *const D as usize % 32, 0);
        }
        assert_eq!(DROPS.load(Ordering::SeqCst), 0);
        drop(v);
        assert_eq!(DROPS.load(Ordering::SeqCst), 9);
    }

    #[test]
    fn zero_sized_and_overaligned() {
        let mut z = BlobVec::new(Layout::new::<()>(), None);
        for _ in 0..1000 {
            // SAFETY: a ZST needs no bytes.
            unsafe { z.push_from(std::ptr::NonNull::<()>::dangling().as_ptr().cast()) };
        }
        assert_eq!(z.len(), 1000);
        #[repr(align(128))]
        struct Big(#[allow(dead_code)] u8);
        let mut b = BlobVec::new(Layout::new::<Big>(), None);
        for i in 0..5 {
            let v = Big(i);
            // SAFETY: `v` is a valid Big (Copy-like, no drop).
            unsafe { b.push_from((&v as *const Big).cast()) };
            // SAFETY: i < len.
            assert_eq!(unsafe { b.ptr_at(i as usize) } as usize % 128, 0);
        }
    }

    /// The restore's vector tests of ticks (sixteen block bounds; the
    /// eight rows of a block, from their `[added, changed]` pairs) agree
    /// with the plain one, `now - t < window` unsigned, for ticks and
    /// windows around every wrap: zero, one, 2³¹, `u32::MAX`.
    #[test]
    fn newer_masks_agree_with_the_plain_test() {
        let edges = [
            0,
            1,
            2,
            7,
            1 << 31,
            (1 << 31) - 1,
            (1 << 31) + 1,
            u32::MAX - 1,
            u32::MAX,
        ];
        let mut seed = 0x9e37_79b9_u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for &now in &edges {
            for &window in &edges {
                let plain = |t: u32| now.wrapping_sub(t) < window;
                let Some(test) = Newer::new(Tick::new(now), window) else {
                    assert_eq!(window, 0, "a test for every window but 0");
                    continue;
                };
                // Ticks at and around both ends of the window.
                let mut ticks: Vec<u32> = [
                    0,
                    1,
                    2,
                    window.wrapping_sub(1),
                    window,
                    window.wrapping_add(1),
                ]
                .iter()
                .flat_map(|&age| [now.wrapping_sub(age), now.wrapping_add(age)])
                .chain(edges)
                .collect();
                ticks.extend((0..64).map(|_| next()));
                for &t in &ticks {
                    assert_eq!(test.test(t), plain(t), "now {now} window {window} t {t}");
                }
                for chunk in ticks.chunks(16).filter(|c| c.len() == 16) {
                    let sixteen: [u32; 16] = chunk.try_into().unwrap();
                    let want = (0..16).fold(0, |m, i| m | u32::from(plain(sixteen[i])) << i);
                    assert_eq!(test.mask16(sixteen), want, "now {now} window {window}");
                    // As a block's rows: the changed ticks are the odd
                    // ones, the added ticks (even) must not count.
                    let rows: [[u32; 2]; BLOCK_ROWS] =
                        std::array::from_fn(|r| [sixteen[2 * r], sixteen[2 * r + 1]]);
                    let want =
                        (0..BLOCK_ROWS).fold(0, |m, r| m | u32::from(plain(rows[r][1])) << r);
                    assert_eq!(test.mask_rows(rows), want, "now {now} window {window}");
                }
            }
        }
    }
}
