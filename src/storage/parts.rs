//! A run-time bundle's values, type-erased, in one buffer: the storage of
//! an [`EntityBuilder`](crate::EntityBuilder), a
//! [`TakenEntity`](crate::TakenEntity) and a clone.
//!
//! [`Parts`] keeps each value in place in a byte buffer (inline up to
//! [`INLINE_WORDS`] words, on the heap past that) with, per value, its
//! [`TypeId`] and the [`PartOps`] of its type: how to drop it, look at it,
//! and move it into a column or a sparse set. A builder that adds three
//! components and is spawned costs no allocation; a value per box (as
//! before) cost one allocation and one free per component.
//!
//! The type ids are kept in one slice, in the order the values were added,
//! so that a world can find the bundle it registered for that list of
//! types with one hash lookup ([`Parts::types`]).
//!
//! Invariants: every live entry `i` has a value of the entry's stored type
//! (the `P` its [`PartOps`] was made for, or `Box<P>` for a `P` aligned
//! more than a [`Word`]) initialised at byte `offset[i]` of the buffer,
//! aligned for it; the buffer owns those values (dropped with it) until an
//! entry is removed or a [`PartsDrain`] takes it.

use std::any::{Any, TypeId};
use std::mem::{MaybeUninit, align_of, size_of};

use super::{Column, DeferredPanic, SparseSet, SparseSets, Table};
use crate::change::Tick;
use crate::component::{Component, ComponentId, Components, StorageType, short_type_name};
use crate::dynamic::{ComponentSchema, DynamicComponent};
use crate::entity::Entity;

/// The unit of the buffer; its alignment is the buffer's.
type Word = MaybeUninit<u128>;

/// Words kept inline (128 bytes on x86_64) before the buffer moves to the
/// heap.
const INLINE_WORDS: usize = 8;

/// Entries kept inline before the entry lists move to the heap.
const INLINE_ENTRIES: usize = 4;

/// Where one value of a run-time bundle goes in a new row: a column of
/// the target table (by position) or a sparse set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PartSlot {
    /// The column at this position of the table.
    Column(u32),
    /// The set of this sparse component.
    Sparse(ComponentId),
}

/// A runtime-defined component's value, with its schema so that a world
/// that has not seen it can register it.
pub(crate) struct DynamicPart {
    pub schema: ComponentSchema,
    pub value: DynamicComponent,
}

/// A value a [`Parts`] can hold: a Rust component, or a runtime-defined
/// one ([`DynamicPart`]).
pub(crate) trait PartValue: Send + Sync + Sized + 'static {
    /// What lands in the world's storage.
    type Value: Send + Sync + 'static;
    /// The type a reader asks for ([`Parts::get`]): `Value`'s.
    fn value_type() -> TypeId {
        TypeId::of::<Self::Value>()
    }
    /// Where the value is stored (a runtime-defined one: sparse).
    const STORAGE: StorageType;
    /// True if `Self` is `Value` (so the stored bytes are the value).
    const PLAIN: bool;
    /// Registers a Rust component type (`None` for a runtime-defined one,
    /// which the world registers from its schema).
    const REGISTER: Option<fn(&mut Components) -> ComponentId>;
    fn name(&self) -> String;
    fn value_ref(&self) -> &Self::Value;
    fn value_mut(&mut self) -> &mut Self::Value;
    fn into_value(self) -> Self::Value;
}

impl<C: Component> PartValue for C {
    type Value = C;
    const STORAGE: StorageType = C::STORAGE;
    const PLAIN: bool = true;
    const REGISTER: Option<fn(&mut Components) -> ComponentId> = Some(Components::register::<C>);

    fn name(&self) -> String {
        short_type_name::<C>()
    }

    #[inline]
    fn value_ref(&self) -> &C {
        self
    }

    #[inline]
    fn value_mut(&mut self) -> &mut C {
        self
    }

    #[inline]
    fn into_value(self) -> C {
        self
    }
}

impl PartValue for DynamicPart {
    type Value = DynamicComponent;
    const STORAGE: StorageType = StorageType::SparseSet;
    const PLAIN: bool = false;
    const REGISTER: Option<fn(&mut Components) -> ComponentId> = None;

    fn name(&self) -> String {
        self.value.name().to_owned()
    }

    fn value_ref(&self) -> &DynamicComponent {
        &self.value
    }

    fn value_mut(&mut self) -> &mut DynamicComponent {
        &mut self.value
    }

    fn into_value(self) -> DynamicComponent {
        self.value
    }
}

/// How the values of one [`PartValue`] type `P` are handled in a buffer.
/// The functions taking a pointer need it to point to a live stored `P`
/// (see [`Parts`]'s invariants); those that move it out leave it dead.
pub(crate) struct PartOps {
    pub storage: StorageType,
    pub register: Option<fn(&mut Components) -> ComponentId>,
    /// True if the buffer holds the value itself, in place: a table
    /// column of its type takes a bytewise copy of it.
    plain: bool,
    /// The stored value's size in the buffer and its alignment.
    size: usize,
    align: usize,
    name: unsafe fn(*const u8) -> String,
    as_any: unsafe fn(*const u8) -> *const dyn Any,
    as_any_mut: unsafe fn(*mut u8) -> *mut dyn Any,
    into_any: unsafe fn(*mut u8) -> Box<dyn Any>,
    as_dynamic: unsafe fn(*const u8) -> Option<*const DynamicPart>,
    drop: unsafe fn(*mut u8),
    push_to: unsafe fn(*mut u8, &mut Column, Tick),
    replace_in: unsafe fn(*mut u8, &mut Column, usize, Tick, &mut DeferredPanic),
    insert_into_set: unsafe fn(*mut u8, &mut SparseSet, Entity, Tick, &mut DeferredPanic),
}

/// True if a `P` is kept boxed: aligned more than the buffer's words.
const fn boxed<P>() -> bool {
    align_of::<P>() > align_of::<Word>()
}

/// The value at `ptr`, as a reference.
///
/// # Safety
/// `ptr` points to a live stored `P` (a `P`, or a `Box<P>` if
/// [`boxed::<P>`]), valid for `'a`.
#[inline]
unsafe fn stored_ref<'a, P>(ptr: *const u8) -> &'a P {
    if boxed::<P>() {
        // SAFETY: a live `Box<P>` is there (contract).
        unsafe { &*ptr.cast::<Box<P>>() }
    } else {
        // SAFETY: a live, aligned `P` is there (contract).
        unsafe { &*ptr.cast::<P>() }
    }
}

/// [`stored_ref`], mutably.
///
/// # Safety
/// As [`stored_ref`], and no other reference to the value exists for `'a`.
#[inline]
unsafe fn stored_mut<'a, P>(ptr: *mut u8) -> &'a mut P {
    if boxed::<P>() {
        // SAFETY: a live `Box<P>` is there, not otherwise borrowed
        // (contract).
        unsafe { &mut *ptr.cast::<Box<P>>() }
    } else {
        // SAFETY: a live, aligned `P` is there, not otherwise borrowed
        // (contract).
        unsafe { &mut *ptr.cast::<P>() }
    }
}

/// Moves the value at `ptr` out; it is dead in the buffer afterwards.
///
/// # Safety
/// `ptr` points to a live stored `P`, which the caller owns and will not
/// read again.
#[inline]
unsafe fn read_stored<P>(ptr: *mut u8) -> P {
    if boxed::<P>() {
        // SAFETY: a live `Box<P>` is there, owned by the caller (contract).
        *unsafe { ptr.cast::<Box<P>>().read() }
    } else {
        // SAFETY: a live, aligned `P` is there, owned by the caller
        // (contract).
        unsafe { ptr.cast::<P>().read() }
    }
}

/// The [`PartOps`] of `P`, as a constant (promoted to a `'static`).
struct OpsOf<P>(std::marker::PhantomData<P>);

impl<P: PartValue> OpsOf<P> {
    const OPS: PartOps = PartOps {
        storage: P::STORAGE,
        register: P::REGISTER,
        plain: P::PLAIN && !boxed::<P>(),
        size: if boxed::<P>() {
            size_of::<Box<P>>()
        } else {
            size_of::<P>()
        },
        align: if boxed::<P>() {
            align_of::<Box<P>>()
        } else {
            align_of::<P>()
        },
        name: name_of::<P>,
        as_any: as_any::<P>,
        as_any_mut: as_any_mut::<P>,
        into_any: into_any::<P>,
        as_dynamic: as_dynamic::<P>,
        drop: drop_stored::<P>,
        push_to: push_to::<P>,
        replace_in: replace_in::<P>,
        insert_into_set: insert_into_set::<P>,
    };
}

// The functions of `OpsOf<P>`. Each has [`PartOps`]' contract: `ptr`
// points to a live stored `P`; those that move it out leave it dead, and
// the caller never reads it again.

/// # Safety
/// See above.
unsafe fn name_of<P: PartValue>(ptr: *const u8) -> String {
    // SAFETY: a live stored `P` (contract).
    unsafe { stored_ref::<P>(ptr) }.name()
}

/// # Safety
/// See above.
unsafe fn as_any<P: PartValue>(ptr: *const u8) -> *const dyn Any {
    // SAFETY: a live stored `P` (contract).
    let value: &dyn Any = unsafe { stored_ref::<P>(ptr) }.value_ref();
    value
}

/// # Safety
/// See above.
unsafe fn as_any_mut<P: PartValue>(ptr: *mut u8) -> *mut dyn Any {
    // SAFETY: a live stored `P`, not otherwise borrowed (contract).
    let value: &mut dyn Any = unsafe { stored_mut::<P>(ptr) }.value_mut();
    value
}

/// # Safety
/// See above; moves the value out.
unsafe fn into_any<P: PartValue>(ptr: *mut u8) -> Box<dyn Any> {
    // SAFETY: a live stored `P`, moved out once (contract).
    Box::new(unsafe { read_stored::<P>(ptr) }.into_value())
}

/// # Safety
/// See above.
unsafe fn as_dynamic<P: PartValue>(ptr: *const u8) -> Option<*const DynamicPart> {
    // SAFETY: a live stored `P` (contract).
    let value: &dyn Any = unsafe { stored_ref::<P>(ptr) };
    value
        .downcast_ref::<DynamicPart>()
        .map(|d| d as *const DynamicPart)
}

/// # Safety
/// See above; drops the value.
unsafe fn drop_stored<P: PartValue>(ptr: *mut u8) {
    // SAFETY: a live stored `P`, moved out once (contract).
    drop(unsafe { read_stored::<P>(ptr) });
}

/// # Safety
/// See above; moves the value out.
unsafe fn push_to<P: PartValue>(ptr: *mut u8, column: &mut Column, tick: Tick) {
    // SAFETY: a live stored `P`, moved out once (contract).
    let value = unsafe { read_stored::<P>(ptr) }.into_value();
    super::batch::push_erased(value, column, tick);
}

/// # Safety
/// See above; moves the value out.
unsafe fn replace_in<P: PartValue>(
    ptr: *mut u8,
    column: &mut Column,
    row: usize,
    tick: Tick,
    panics: &mut DeferredPanic,
) {
    // SAFETY: a live stored `P`, moved out once (contract).
    let value = unsafe { read_stored::<P>(ptr) }.into_value();
    super::batch::replace_erased(value, column, row, tick, panics);
}

/// # Safety
/// See above; moves the value out.
unsafe fn insert_into_set<P: PartValue>(
    ptr: *mut u8,
    set: &mut SparseSet,
    entity: Entity,
    tick: Tick,
    panics: &mut DeferredPanic,
) {
    // SAFETY: a live stored `P`, moved out once (contract).
    let value = unsafe { read_stored::<P>(ptr) }.into_value();
    set.insert_checked(entity, value, tick, panics);
}

/// Where an entry's value is, and how to handle it.
#[derive(Clone, Copy)]
struct Slot {
    offset: usize,
    ops: &'static PartOps,
}

/// Bytes kept inline.
const INLINE_BYTES: usize = INLINE_WORDS * size_of::<Word>();

/// What outgrew a [`Parts`]' inline room, in one allocation made the
/// first time something does.
#[derive(Default)]
struct Spill {
    /// Every entry's type and slot, once there are more than
    /// [`INLINE_ENTRIES`] (unused before).
    types: Vec<TypeId>,
    slots: Vec<Slot>,
    /// The buffer once it outgrew `inline` (empty before).
    words: Vec<Word>,
}

/// Values of run-time chosen types in one buffer, in the order they were
/// added; see the module doc and its invariants. Dropping it drops each
/// value once.
///
/// Kept small (a builder's `build` moves it): the entries and the buffer
/// live inline up to [`INLINE_ENTRIES`] values and [`INLINE_BYTES`], and
/// whatever outgrows that in one [`Spill`].
pub(crate) struct Parts {
    /// Number of entries.
    len: usize,
    /// Bytes in use (live or dead values) from the buffer's start.
    used: usize,
    /// The buffer's size in bytes: [`INLINE_BYTES`] while it is `inline`,
    /// more once it is the spill's `words`.
    capacity: usize,
    /// The type each value is read as ([`PartValue::value_type`]), for the
    /// first `len` entries while they fit.
    types: [TypeId; INLINE_ENTRIES],
    slots: [Slot; INLINE_ENTRIES],
    inline: [Word; INLINE_WORDS],
    spill: Option<Box<Spill>>,
}

impl Default for Parts {
    fn default() -> Self {
        Parts::new()
    }
}

impl Parts {
    pub fn new() -> Self {
        Parts {
            len: 0,
            used: 0,
            capacity: INLINE_BYTES,
            types: [TypeId::of::<()>(); INLINE_ENTRIES],
            slots: [Slot {
                offset: 0,
                ops: &OpsOf::<DynamicPart>::OPS,
            }; INLINE_ENTRIES],
            inline: [MaybeUninit::uninit(); INLINE_WORDS],
            spill: None,
        }
    }

    /// True if the entries are in the spill.
    #[inline]
    fn entries_spilled(&self) -> bool {
        self.len > INLINE_ENTRIES
    }

    /// The entries' slots, in order.
    #[inline]
    fn slots(&self) -> &[Slot] {
        if self.entries_spilled() {
            &self.spill().slots
        } else {
            &self.slots[..self.len]
        }
    }

    /// The spill, which there is once entries or bytes outgrew the inline
    /// room.
    #[inline]
    fn spill(&self) -> &Spill {
        self.spill.as_deref().expect("spilled parts have a spill")
    }

    /// [`Parts::spill`], mutably.
    #[inline]
    fn spill_mut(&mut self) -> &mut Spill {
        self.spill
            .as_deref_mut()
            .expect("spilled parts have a spill")
    }

    /// Appends an entry (its value is written) to the `len` there are.
    #[inline(always)]
    fn push_entry(&mut self, len: usize, ty: TypeId, slot: Slot) {
        debug_assert_eq!(len, self.len);
        if len < INLINE_ENTRIES {
            self.types[len] = ty;
            self.slots[len] = slot;
        } else {
            self.push_spilled_entry(ty, slot);
        }
        self.len = len + 1;
    }

    /// [`Parts::push_entry`] past the inline entries.
    #[cold]
    fn push_spilled_entry(&mut self, ty: TypeId, slot: Slot) {
        let spill = self.spill.get_or_insert_default();
        if self.len == INLINE_ENTRIES {
            spill.types.clear();
            spill.types.extend_from_slice(&self.types);
            spill.slots.clear();
            spill.slots.extend_from_slice(&self.slots);
        }
        spill.types.push(ty);
        spill.slots.push(slot);
    }

    /// Removes entry `i` (the rest keep their order); returns its slot.
    fn remove_entry(&mut self, i: usize) -> Slot {
        let spilled = self.entries_spilled();
        let slot = match &mut self.spill {
            Some(spill) if spilled => {
                spill.types.remove(i);
                let slot = spill.slots.remove(i);
                if self.len - 1 == INLINE_ENTRIES {
                    self.types.copy_from_slice(&spill.types);
                    self.slots.copy_from_slice(&spill.slots);
                }
                slot
            }
            _ => {
                let slot = self.slots[..self.len][i];
                self.types.copy_within(i + 1..self.len, i);
                self.slots.copy_within(i + 1..self.len, i);
                slot
            }
        };
        self.len -= 1;
        slot
    }

    /// Forgets every entry (their values are moved out or dropped) and
    /// every byte in use.
    #[inline]
    fn forget_all(&mut self) {
        self.len = 0;
        self.used = 0;
    }

    /// Number of values.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if there is no value.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The types of the values, in order: a key for the bundle they form.
    #[inline]
    pub fn types(&self) -> &[TypeId] {
        if self.entries_spilled() {
            &self.spill().types
        } else {
            &self.types[..self.len]
        }
    }

    /// How value `i` is stored and registered.
    #[inline]
    pub fn ops(&self, i: usize) -> &'static PartOps {
        self.slots()[i].ops
    }

    /// The index of the value read as `ty`.
    #[inline]
    pub fn position(&self, ty: TypeId) -> Option<usize> {
        self.types().iter().position(|&t| t == ty)
    }

    /// True if the buffer is the spill's `words`.
    #[inline]
    fn bytes_spilled(&self) -> bool {
        self.capacity > INLINE_BYTES
    }

    #[inline]
    fn base(&self) -> *const u8 {
        if self.bytes_spilled() {
            self.spill().words.as_ptr().cast()
        } else {
            self.inline.as_ptr().cast()
        }
    }

    #[inline]
    fn base_mut(&mut self) -> *mut u8 {
        if self.bytes_spilled() {
            self.spill_mut().words.as_mut_ptr().cast()
        } else {
            self.inline.as_mut_ptr().cast()
        }
    }

    /// Makes room for `size` bytes aligned to `align` (at most a word's
    /// alignment) past the bytes in use; returns their offset.
    #[inline(always)]
    fn allocate(&mut self, size: usize, align: usize) -> usize {
        debug_assert!(align <= align_of::<Word>() && align.is_power_of_two());
        // A mask, not `next_multiple_of` (a division, where `align` is not
        // known at compile time): alignments are powers of two.
        let offset = (self.used + align - 1) & !(align - 1);
        let end = offset + size;
        if end > self.capacity {
            self.grow(end);
        }
        self.used = end;
        offset
    }

    /// Moves the buffer to (a bigger) heap allocation of at least `bytes`.
    #[cold]
    fn grow(&mut self, bytes: usize) {
        let words = bytes
            .div_ceil(size_of::<Word>())
            .max(2 * INLINE_WORDS)
            .next_power_of_two();
        if self.bytes_spilled() {
            self.spill_mut().words.resize(words, MaybeUninit::uninit());
        } else {
            let inline = self.inline;
            let heap = &mut self.spill.get_or_insert_default().words;
            heap.clear();
            heap.extend_from_slice(&inline);
            heap.resize(words, MaybeUninit::uninit());
        }
        self.capacity = words * size_of::<Word>();
    }

    /// Appends `value` (its type must not be there yet).
    #[inline(always)]
    pub fn push<P: PartValue>(&mut self, value: P) {
        debug_assert!(self.position(P::value_type()).is_none());
        let ops: &'static PartOps = &OpsOf::<P>::OPS;
        // Read before the value is written through a raw pointer (which
        // the compiler cannot tell from `len`).
        let len = self.len;
        let offset = self.allocate(ops.size, ops.align);
        // SAFETY: `allocate` made room for the stored `P` at `offset`,
        // aligned (the buffer's start is word-aligned and `ops.align` is at
        // most a word's), within the buffer; the bytes are unused.
        unsafe {
            let ptr = self.base_mut().add(offset);
            if boxed::<P>() {
                ptr.cast::<Box<P>>().write(Box::new(value));
            } else {
                ptr.cast::<P>().write(value);
            }
        }
        // The entry goes live only once the value is written.
        self.push_entry(len, P::value_type(), Slot { offset, ops });
    }

    /// Puts `value` in place of the value of its type (dropped; a panic
    /// in its drop goes on, the new value in place), or appends it.
    #[inline(always)]
    pub fn set<P: PartValue>(&mut self, value: P) {
        match self.position(P::value_type()) {
            None => self.push(value),
            Some(i) => self.replace_at(i, value),
        }
    }

    /// [`Parts::set`] of a type that is there already, at entry `i`.
    #[inline(never)]
    fn replace_at<P: PartValue>(&mut self, i: usize, value: P) {
        let slot = self.slots()[i];
        if std::ptr::eq(slot.ops, &OpsOf::<P>::OPS) {
            // SAFETY: entry `i` holds a live stored `P` (same ops, so the
            // same type) at its offset: it is read out, and the new value
            // written in its place (same size and alignment).
            let old = unsafe {
                let ptr = self.base_mut().add(slot.offset);
                let old = read_stored::<P>(ptr);
                if boxed::<P>() {
                    ptr.cast::<Box<P>>().write(Box::new(value));
                } else {
                    ptr.cast::<P>().write(value);
                }
                old
            };
            drop(old);
        } else {
            // Another value type read as the same one (a runtime-defined
            // component and its value): the old one goes, the new one is
            // appended.
            self.remove_at(i);
            self.push(value);
        }
    }

    /// Drops value `i` and its entry (the rest keep their order).
    pub fn remove_at(&mut self, i: usize) {
        let slot = self.remove_entry(i);
        // SAFETY: the entry was live, so its stored value is at its offset;
        // it is no entry's any more, so nothing reads it again.
        unsafe { (slot.ops.drop)(self.base_mut().add(slot.offset)) }
    }

    /// Value `i`, read as its value type.
    pub fn any_at(&self, i: usize) -> &dyn Any {
        let slot = self.slots()[i];
        // SAFETY: entry `i` is live (its value is at its offset) and the
        // reference borrows `self`.
        unsafe { &*(slot.ops.as_any)(self.base().add(slot.offset)) }
    }

    /// Value `i`, mutably.
    pub fn any_at_mut(&mut self, i: usize) -> &mut dyn Any {
        let slot = self.slots()[i];
        // SAFETY: entry `i` is live and the reference borrows `self`
        // mutably.
        unsafe { &mut *(slot.ops.as_any_mut)(self.base_mut().add(slot.offset)) }
    }

    /// Value `i` if it is a runtime-defined one.
    pub fn dynamic_at(&self, i: usize) -> Option<&DynamicPart> {
        let slot = self.slots()[i];
        // SAFETY: entry `i` is live and the reference borrows `self`.
        unsafe { (slot.ops.as_dynamic)(self.base().add(slot.offset)).map(|p| &*p) }
    }

    /// Takes value `i` out, as its value type, removing its entry.
    pub fn take_at(&mut self, i: usize) -> Box<dyn Any> {
        let slot = self.remove_entry(i);
        // SAFETY: the entry was live; it is gone, so the value is moved
        // out once.
        unsafe { (slot.ops.into_any)(self.base_mut().add(slot.offset)) }
    }

    /// The name of value `i`.
    pub fn name_at(&self, i: usize) -> String {
        let slot = self.slots()[i];
        // SAFETY: entry `i` is live.
        unsafe { (slot.ops.name)(self.base().add(slot.offset)) }
    }

    /// The value read as `T`, if there is one.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        let i = self.position(TypeId::of::<T>())?;
        self.any_at(i).downcast_ref()
    }

    /// The value read as `T`, mutably.
    pub fn get_mut<T: 'static>(&mut self) -> Option<&mut T> {
        let i = self.position(TypeId::of::<T>())?;
        self.any_at_mut(i).downcast_mut()
    }

    /// Takes the value read as `T` out (the rest stay, in order).
    pub fn remove<T: 'static>(&mut self) -> Option<T> {
        let i = self.position(TypeId::of::<T>())?;
        self.take_at(i).downcast().ok().map(|b| *b)
    }

    /// The values' names, in order.
    pub fn names(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.name_at(i)).collect()
    }

    /// Moves every value out into the returned `Parts`, leaving this one
    /// empty: `std::mem::take` without building a fresh buffer first (a
    /// builder's `build` in a spawn loop).
    #[inline]
    pub fn take(&mut self) -> Parts {
        // SAFETY: a bitwise copy, written straight where the caller wants
        // it (a field-by-field build copied it twice). The values (at the
        // slots' offsets) and the spill belong to the copy from here: this
        // one forgets its entries, so it never drops nor reads those values,
        // and its spill is overwritten without being dropped.
        let out = unsafe { std::ptr::read(self) };
        self.forget_all();
        self.capacity = INLINE_BYTES;
        // SAFETY: the spill is the copy's now (see above): overwritten, not
        // dropped.
        unsafe { std::ptr::write(&mut self.spill, None) };
        out
    }

    /// Drops every value.
    pub fn clear(&mut self) {
        *self = Parts::new();
    }

    /// Moves the values out in order, through [`PartsDrain`]; `self` is
    /// empty once it is dropped.
    #[inline]
    pub fn drain(&mut self) -> PartsDrain<'_> {
        PartsDrain {
            parts: self,
            next: 0,
        }
    }
}

impl Drop for Parts {
    #[inline]
    fn drop(&mut self) {
        // Spawned parts are empty: the common drop is this compare.
        if self.len != 0 {
            self.drop_values();
        }
    }
}

impl Parts {
    #[cold]
    fn drop_values(&mut self) {
        let base = self.base_mut();
        for slot in self.slots() {
            // SAFETY: each entry is live; the buffer goes, so each value is
            // dropped once. (A panicking drop leaks the values after it.)
            unsafe { (slot.ops.drop)(base.add(slot.offset)) }
        }
    }
}

/// The values of a [`Parts`] being moved out in order: each one exactly
/// once through [`PartsDrain::push_next`] or a sibling; the ones left when
/// it is dropped are dropped.
pub(crate) struct PartsDrain<'a> {
    /// Entries `next..` are still owned here; `..next` were moved out.
    parts: &'a mut Parts,
    next: usize,
}

impl PartsDrain<'_> {
    /// The index of the next value, if any is left.
    #[inline]
    pub fn next_index(&self) -> Option<usize> {
        (self.next < self.parts.len()).then_some(self.next)
    }

    /// The type of value `i` (moved out or not).
    #[inline]
    pub fn type_at(&self, i: usize) -> TypeId {
        self.parts.types()[i]
    }

    /// How many values in all.
    #[inline]
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Takes the next value's pointer and ops; it counts as moved out.
    #[inline(always)]
    fn take_next(&mut self) -> (*mut u8, &'static PartOps) {
        let slot = self.parts.slots()[self.next];
        self.next += 1;
        // SAFETY: `offset` is within the buffer (module invariant).
        (unsafe { self.parts.base_mut().add(slot.offset) }, slot.ops)
    }

    /// The types of every value, in order (moved out or not).
    #[inline]
    pub fn types(&self) -> &[TypeId] {
        self.parts.types()
    }

    /// Appends the next value to `column`, whose type the caller checked:
    /// [`PartsDrain::push_next`] without the second look at the type.
    ///
    /// # Safety
    /// A value is left, and `column` holds the type of the next one
    /// (`types()[i]` for the index [`PartsDrain::next_index`] gives).
    #[inline(always)]
    pub unsafe fn push_next_unchecked(&mut self, column: &mut Column, tick: Tick) {
        debug_assert!(column.holds_type(self.parts.types()[self.next]));
        let (ptr, ops) = self.take_next();
        if ops.plain {
            // SAFETY: the buffer holds the value itself (`plain`), live and
            // owned here, of the column's type (contract); it is given up
            // (`take_next` counted it as moved out).
            unsafe { column.push_bytes(ptr, tick) }
        } else {
            // SAFETY: the value was live and owned here; it is moved out
            // once (`take_next` counted it); `push_to` checks the type.
            unsafe { (ops.push_to)(ptr, column, tick) }
        }
    }

    /// Appends the next value to `column`, which must hold its type
    /// (asserted: panics, the value dropped, otherwise).
    #[inline(always)]
    pub fn push_next(&mut self, column: &mut Column, tick: Tick) {
        let ty = self.parts.types()[self.next];
        let (ptr, ops) = self.take_next();
        if ops.plain && column.holds_type(ty) {
            // SAFETY: the buffer holds the value itself (`plain`), live and
            // owned here, of the column's type (checked); it is given up
            // (`take_next` counted it as moved out).
            unsafe { column.push_bytes(ptr, tick) }
        } else {
            // SAFETY: the value was live and owned here; it is moved out
            // once (`take_next` counted it); `push_to` checks the type.
            unsafe { (ops.push_to)(ptr, column, tick) }
        }
    }

    /// Moves every value out, value `i` to where `slots[i]` says: pushed
    /// onto a column of `table` or stored for `entity` in a sparse set.
    /// The row is not completed ([`Table::push_entity`] is the caller's).
    ///
    /// # Safety
    /// No value was moved out yet; `slots` has one entry per value; each
    /// [`PartSlot::Column`] names a column of `table` holding the type of
    /// its value (`types()[i]`), and each [`PartSlot::Sparse`] a component
    /// whose set holds it.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn write_row(
        &mut self,
        slots: &[PartSlot],
        table: &mut Table,
        entity: Entity,
        sparse: &mut SparseSets,
        components: &Components,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        debug_assert!(self.next == 0 && slots.len() == self.parts.len());
        // Read once: the writes below go through raw pointers, which the
        // compiler cannot tell from the buffer.
        let base = self.parts.base_mut();
        let entries: &[Slot] = self.parts.slots();
        let entries = entries.as_ptr();
        for (i, &slot) in slots.iter().enumerate() {
            // SAFETY: `i` is below the number of values (contract), and
            // each entry is live with its value at its offset (module
            // invariant).
            let (ptr, ops) = unsafe {
                let entry = *entries.add(i);
                (base.add(entry.offset), entry.ops)
            };
            // Counted as moved out before it is: a panic past here leaks
            // it, never drops it twice.
            self.next = i + 1;
            match slot {
                PartSlot::Column(col) => {
                    let column = table.column_at_mut(col as usize);
                    if ops.plain {
                        // SAFETY: the buffer holds the value itself
                        // (`plain`), live and owned here, of the column's
                        // type (contract); it is given up (counted above).
                        unsafe { column.push_bytes(ptr, tick) }
                    } else {
                        // SAFETY: the value was live and owned here; it is
                        // moved out once (counted above).
                        unsafe { (ops.push_to)(ptr, column, tick) }
                    }
                }
                PartSlot::Sparse(id) => {
                    let set = sparse.get_or_create(id, components);
                    // SAFETY: as above.
                    unsafe { (ops.insert_into_set)(ptr, set, entity, tick, panics) }
                }
            }
        }
    }

    /// [`PartsDrain::write_row`] of values that all go to columns: value
    /// `i` is pushed onto the column at position `columns[i]` of `table`.
    ///
    /// # Safety
    /// No value was moved out yet; `columns` has one entry per value, each
    /// below `table`'s number of columns, naming a column that holds the
    /// type of its value (`types()[i]`).
    #[inline]
    pub unsafe fn write_columns(&mut self, columns: &[u32], table: &mut Table, tick: Tick) {
        debug_assert!(self.next == 0 && columns.len() == self.parts.len());
        // Read once, as in `write_row`.
        let base = self.parts.base_mut();
        let entries: &[Slot] = self.parts.slots();
        let entries = entries.as_ptr();
        for (i, &col) in columns.iter().enumerate() {
            // SAFETY: `i` is below the number of values (contract), and
            // each entry is live with its value at its offset (module
            // invariant).
            let (ptr, ops) = unsafe {
                let entry = *entries.add(i);
                (base.add(entry.offset), entry.ops)
            };
            // Counted as moved out before it is: a panic past here leaks
            // it, never drops it twice.
            self.next = i + 1;
            // SAFETY: `col` is in bounds (contract).
            let column = unsafe { table.column_at_unchecked_mut(col as usize) };
            if ops.plain {
                // SAFETY: the buffer holds the value itself (`plain`), live
                // and owned here, of the column's type (contract); it is
                // given up (counted above).
                unsafe { column.push_bytes(ptr, tick) }
            } else {
                // SAFETY: the value was live and owned here; it is moved out
                // once (counted above).
                unsafe { (ops.push_to)(ptr, column, tick) }
            }
        }
    }

    /// Puts the next value in `row` of `column`, dropping the value it
    /// replaces (a panicking drop kept in `panics`).
    #[inline]
    pub fn replace_next(
        &mut self,
        column: &mut Column,
        row: usize,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        let (ptr, ops) = self.take_next();
        // SAFETY: as in `push_next`.
        unsafe { (ops.replace_in)(ptr, column, row, tick, panics) }
    }

    /// Stores the next value for `entity` in `set`.
    #[inline]
    pub fn insert_next(
        &mut self,
        set: &mut SparseSet,
        entity: Entity,
        tick: Tick,
        panics: &mut DeferredPanic,
    ) {
        let (ptr, ops) = self.take_next();
        // SAFETY: as in `push_next`.
        unsafe { (ops.insert_into_set)(ptr, set, entity, tick, panics) }
    }
}

impl Drop for PartsDrain<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.next == self.parts.len() {
            // Every value was moved out: the buffer is free again.
            self.parts.forget_all();
            return;
        }
        self.drop_rest();
    }
}

impl PartsDrain<'_> {
    #[cold]
    fn drop_rest(&mut self) {
        // The values not moved out (only after a panic, or when a caller
        // stops early) are dropped; the entries go first, so that a
        // panicking drop leaks the values after it rather than leaving
        // them to be dropped twice.
        let rest: Vec<Slot> = match self.parts.slots().get(self.next..) {
            Some(rest) if !rest.is_empty() => rest.to_vec(),
            _ => Vec::new(),
        };
        self.parts.forget_all();
        let base = self.parts.base_mut();
        for slot in rest {
            // SAFETY: the entry was live and not moved out (at or past
            // `next`); it is no entry's any more, so it is dropped once.
            unsafe { (slot.ops.drop)(base.add(slot.offset)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Small(u8);
    impl Component for Small {}

    #[derive(Debug, PartialEq)]
    #[repr(align(64))]
    struct Aligned(u64);
    impl Component for Aligned {}

    #[derive(Debug, PartialEq)]
    struct Big([u64; 40]);
    impl Component for Big {}

    struct Zst;
    impl Component for Zst {}

    #[test]
    fn values_survive_spill_and_come_out_once() {
        let mut parts = Parts::new();
        parts.push(Small(1));
        parts.push(Aligned(2));
        parts.push(Zst);
        parts.push(String::from("text"));
        parts.push(Big([3; 40]));
        parts.push(vec![1u32, 2, 3]);
        assert_eq!(parts.len(), 6);
        assert_eq!(parts.any_at(0).downcast_ref(), Some(&Small(1)));
        assert_eq!(parts.any_at(1).downcast_ref(), Some(&Aligned(2)));
        assert_eq!(
            parts.any_at(3).downcast_ref::<String>().map(|s| s.as_str()),
            Some("text")
        );
        parts.set(String::from("other"));
        assert_eq!(parts.len(), 6);
        let i = parts.position(TypeId::of::<String>()).unwrap();
        let s = parts.take_at(i).downcast::<String>().unwrap();
        assert_eq!(*s, "other");
        assert_eq!(parts.any_at(3).downcast_ref(), Some(&Big([3; 40])));
        parts.remove_at(0);
        assert_eq!(parts.any_at(0).downcast_ref(), Some(&Aligned(2)));
        // The rest (a Vec among them) are dropped with the parts.
    }

    impl Component for String {}
    impl Component for Vec<u32> {}
}
