//! Which components a query reads and writes, and the aliasing check.

use fixedbitset::FixedBitSet;

use crate::component::ComponentId;

/// The components a query reads and writes.
///
/// Building one records the first aliasing conflict (a component both
/// written and read, or written twice) so the query can refuse itself with a
/// message that names the component.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct A;
/// let mut world = World::new();
/// let q = world.query::<&mut A>();
/// let id = world.component_id::<A>().unwrap();
/// assert!(q.access().writes(id));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Access {
    reads: FixedBitSet,
    writes: FixedBitSet,
    filter_reads: FixedBitSet,
    /// Components every matched entity has (`&T`, `&mut T`, `With<T>`).
    required: FixedBitSet,
    /// Components no matched entity has (`Without<T>`).
    excluded: FixedBitSet,
    /// Every component the query names, in any role (data, filter,
    /// `Has<T>`, `Option<..>`): a query that names
    /// [`Disabled`](crate::Disabled) sees disabled entities.
    mentioned: FixedBitSet,
    conflict: Option<ComponentId>,
}

impl Access {
    /// Records a shared read of `id` by the query's data.
    pub(crate) fn add_read(&mut self, id: ComponentId) {
        if self.writes.contains(id.index()) {
            self.conflict.get_or_insert(id);
        }
        grow_insert(&mut self.reads, id);
        grow_insert(&mut self.mentioned, id);
    }

    /// Records exclusive access to `id` by the query's data.
    pub(crate) fn add_write(&mut self, id: ComponentId) {
        if self.writes.contains(id.index()) || self.reads.contains(id.index()) {
            self.conflict.get_or_insert(id);
        }
        grow_insert(&mut self.writes, id);
        grow_insert(&mut self.mentioned, id);
    }

    /// Records a read by a filter (`Added`, `Changed`): it looks at ticks
    /// only, row by row before the item is fetched, so it never aliases the
    /// query's own items.
    pub(crate) fn add_filter_read(&mut self, id: ComponentId) {
        grow_insert(&mut self.filter_reads, id);
        grow_insert(&mut self.mentioned, id);
    }

    /// Records that every matched entity has `id`.
    pub(crate) fn add_required(&mut self, id: ComponentId) {
        grow_insert(&mut self.required, id);
        grow_insert(&mut self.mentioned, id);
    }

    /// Records that the query names `id` without reading it (`Has<T>`).
    pub(crate) fn add_mentioned(&mut self, id: ComponentId) {
        grow_insert(&mut self.mentioned, id);
    }

    /// True if the query names `id` anywhere: in its data (`&T`,
    /// `&mut T`, `Option`, `Has<T>`, `Ref<T>`) or its filter (`With`,
    /// `Without`, `Added`, `Changed`, `Or`).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// #[derive(Component)] struct B;
    /// let mut world = World::new();
    /// let q = world.query_filtered::<Has<A>, Without<B>>();
    /// assert!(q.access().mentions(world.component_id::<A>().unwrap()));
    /// assert!(q.access().mentions(world.component_id::<B>().unwrap()));
    /// ```
    pub fn mentions(&self, id: ComponentId) -> bool {
        self.mentioned.contains(id.index())
    }

    /// Records that no matched entity has `id`.
    pub(crate) fn add_excluded(&mut self, id: ComponentId) {
        grow_insert(&mut self.excluded, id);
        grow_insert(&mut self.mentioned, id);
    }

    /// Adds the data access of `other` (an optional part of this query, as
    /// in `Option<Q>`): its reads and writes count, its requirements do not.
    pub(crate) fn add_optional(&mut self, other: &Access) {
        for id in other.reads.ones() {
            self.add_read(ComponentId::new(id));
        }
        for id in other.writes.ones() {
            self.add_write(ComponentId::new(id));
        }
        for id in other.filter_reads.ones() {
            self.add_filter_read(ComponentId::new(id));
        }
        if let Some(id) = other.conflict {
            self.conflict.get_or_insert(id);
        }
        self.mentioned.union_with(&other.mentioned);
    }

    /// A component this query and `other` could both touch with at least
    /// one of them writing it, if any. Queries that can never match the same
    /// entity (one requires what the other excludes) never conflict.
    pub(crate) fn conflicts_with(&self, other: &Access) -> Option<ComponentId> {
        if !self.required.is_disjoint(&other.excluded)
            || !other.required.is_disjoint(&self.excluded)
        {
            return None;
        }
        let touches = |access: &Access, id: usize| {
            access.reads.contains(id)
                || access.writes.contains(id)
                || access.filter_reads.contains(id)
        };
        self.writes
            .ones()
            .find(|&id| touches(other, id))
            .or_else(|| other.writes.ones().find(|&id| touches(self, id)))
            .map(ComponentId::new)
    }

    /// The components every matched entity has.
    pub(crate) fn required(&self) -> impl Iterator<Item = ComponentId> + '_ {
        self.required.ones().map(ComponentId::new)
    }

    /// The first component the query aliases, if any.
    pub(crate) fn conflict(&self) -> Option<ComponentId> {
        self.conflict
    }

    /// True if the query reads `id` (through its data or its filter).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let q = world.query::<&A>();
    /// assert!(q.access().reads(world.component_id::<A>().unwrap()));
    /// ```
    pub fn reads(&self, id: ComponentId) -> bool {
        self.reads.contains(id.index()) || self.filter_reads.contains(id.index())
    }

    /// True if the query writes `id`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let q = world.query::<&A>();
    /// assert!(!q.access().writes(world.component_id::<A>().unwrap()));
    /// ```
    pub fn writes(&self, id: ComponentId) -> bool {
        self.writes.contains(id.index())
    }

    /// True if no component is written.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// assert!(world.query::<&A>().access().is_read_only());
    /// ```
    pub fn is_read_only(&self) -> bool {
        self.writes.is_clear()
    }
}

fn grow_insert(set: &mut FixedBitSet, id: ComponentId) {
    set.grow(id.index() + 1);
    set.insert(id.index());
}
