//! What a system reads and writes, and when two systems may run at once.

use fixedbitset::FixedBitSet;

use crate::query::Access;
use crate::storage::ResourceId;
use crate::world::World;

/// Everything a system's parameters borrow: per query, its component access;
/// per resource, read or write; and whether it reads the whole world or is
/// exclusive (`&mut World`).
///
/// Two systems conflict, and never run at the same time, if one writes what
/// the other reads or writes, or if both have `Commands` (their `spawn`s
/// reserve entity ids: one system after the other, the ids are the same on
/// every executor). Queries whose filters make them disjoint (one
/// `With<Player>`, the other `Without<Player>`) never conflict.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{IntoSystem, System};
/// #[derive(Component)] struct Position(f32);
/// fn reader(_q: Query<&Position>) {}
/// fn writer(_q: Query<&mut Position>) {}
/// let mut world = World::new();
/// let (mut a, mut b) = (reader.into_system(), writer.into_system());
/// a.initialize(&mut world).unwrap();
/// b.initialize(&mut world).unwrap();
/// assert!(a.access().conflicts_with(b.access()));
/// ```
#[derive(Clone, Debug, Default)]
pub struct SystemAccess {
    queries: Vec<(String, Access)>,
    resource_reads: FixedBitSet,
    resource_writes: FixedBitSet,
    reads_world: bool,
    exclusive: bool,
    /// Has `Commands`: defers structural changes, and reserves entity ids.
    deferred: bool,
    conflict: Option<String>,
}

impl SystemAccess {
    /// Adds a query parameter, recording a conflict with the system's other
    /// parameters (named for the error message).
    pub(crate) fn add_query(&mut self, name: String, access: Access, world: &World) {
        let clash = self.queries.iter().find_map(|(other_name, other)| {
            let id = access.conflicts_with(other)?;
            Some(format!(
                "`{name}` and `{other_name}` both access component `{}`, at least one mutably; \
                 make them disjoint with `With`/`Without` filters or merge them into one query",
                world.components().name(id)
            ))
        });
        if let Some(message) = clash {
            self.record_conflict(message);
        }
        if self.reads_world && !access.is_read_only() {
            self.record_conflict(format!(
                "`&World` reads every component, but `{name}` writes one"
            ));
        }
        self.queries.push((name, access));
    }

    /// Adds a shared borrow of resource `id`.
    pub(crate) fn add_resource_read(&mut self, id: ResourceId, world: &World) {
        if self.resource_writes.contains(id.index()) {
            self.record_conflict(format!(
                "resource `{}` is borrowed both mutably and immutably",
                world.resources().name(id)
            ));
        }
        grow_insert(&mut self.resource_reads, id.index());
    }

    /// Adds an exclusive borrow of resource `id`.
    pub(crate) fn add_resource_write(&mut self, id: ResourceId, world: &World) {
        let name = world.resources().name(id);
        if self.resource_writes.contains(id.index()) {
            self.record_conflict(format!(
                "resource `{name}` is borrowed mutably twice (`ResMut<{name}>` twice)"
            ));
        } else if self.resource_reads.contains(id.index()) {
            self.record_conflict(format!(
                "resource `{name}` is borrowed both mutably and immutably"
            ));
        }
        if self.reads_world {
            self.record_conflict(format!(
                "`&World` reads every resource, but `ResMut<{name}>` writes one"
            ));
        }
        grow_insert(&mut self.resource_writes, id.index());
    }

    /// Adds a `&World` parameter: a read of everything.
    pub(crate) fn add_world_read(&mut self) {
        if self.writes_anything() {
            self.record_conflict(
                "`&World` reads everything, but another parameter writes".to_owned(),
            );
        }
        self.reads_world = true;
    }

    /// Marks the system as deferring commands (a `Commands` parameter).
    pub(crate) fn add_deferred(&mut self) {
        self.deferred = true;
    }

    /// True if the system has `Commands`: its structural changes wait for
    /// a sync point, and a system ordered after it gets one (see
    /// [`Schedule`](crate::Schedule)). Two such systems never overlap, so
    /// the entity ids their `spawn`s reserve come in system order, the
    /// same on every executor.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{IntoSystem, System};
    /// let mut world = World::new();
    /// let mut s = (|mut c: Commands| { c.spawn(()); }).into_system();
    /// s.initialize(&mut world).unwrap();
    /// assert!(s.access().has_deferred());
    /// ```
    pub fn has_deferred(&self) -> bool {
        self.deferred
    }

    /// Marks the system exclusive (`&mut World`).
    pub(crate) fn set_exclusive(&mut self) {
        self.exclusive = true;
    }

    pub(crate) fn record_conflict(&mut self, message: String) {
        self.conflict.get_or_insert(message);
    }

    /// The first conflict between the system's own parameters, described.
    pub(crate) fn conflict(&self) -> Option<&str> {
        self.conflict.as_deref()
    }

    /// Adds what one member of a [`ParamSet`](crate::ParamSet) recorded:
    /// `member` started as a copy of `base` (this access before the set),
    /// so its conflicts with the system's other parameters are already
    /// recorded in it; its own additions join this access unchecked
    /// against the set's other members, which are used one at a time.
    pub(crate) fn add_set_member(&mut self, base: &SystemAccess, member: &SystemAccess) {
        self.queries
            .extend(member.queries[base.queries.len()..].iter().cloned());
        self.resource_reads.union_with(&member.resource_reads);
        self.resource_writes.union_with(&member.resource_writes);
        self.reads_world |= member.reads_world;
        self.exclusive |= member.exclusive;
        self.deferred |= member.deferred;
        if let Some(conflict) = &member.conflict {
            self.record_conflict(conflict.clone());
        }
    }

    /// Adds everything `other` borrows (a run condition's access joining
    /// its system's, for planning). Conflicts between the two are not
    /// recorded: they never run at the same time.
    pub(crate) fn extend(&mut self, other: &SystemAccess) {
        self.queries.extend(other.queries.iter().cloned());
        self.resource_reads.union_with(&other.resource_reads);
        self.resource_writes.union_with(&other.resource_writes);
        self.reads_world |= other.reads_world;
        self.exclusive |= other.exclusive;
        self.deferred |= other.deferred;
    }

    /// The system's queries: each parameter's name and its component
    /// access (for inspectors and schedule graphs).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{IntoSystem, System};
    /// #[derive(Component)] struct Speed(f32);
    /// let mut world = World::new();
    /// let mut s = (|_q: Query<&mut Speed>| {}).into_system();
    /// s.initialize(&mut world).unwrap();
    /// let id = world.component_id::<Speed>().unwrap();
    /// assert!(s.access().queries().any(|(_, access)| access.writes(id)));
    /// ```
    pub fn queries(&self) -> impl ExactSizeIterator<Item = (&str, &Access)> + '_ {
        self.queries
            .iter()
            .map(|(name, access)| (name.as_str(), access))
    }

    /// True if the system reads resource `id` (`Res`, or `&World`).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{IntoSystem, System};
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let mut s = (|_n: Res<u32>| {}).into_system();
    /// s.initialize(&mut world).unwrap();
    /// assert!(s.access().reads_resource(world.resource_id::<u32>().unwrap()));
    /// ```
    pub fn reads_resource(&self, id: ResourceId) -> bool {
        self.reads_world || self.exclusive || self.resource_reads.contains(id.index())
    }

    /// True if the system writes resource `id` (`ResMut`, or `&mut World`).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{IntoSystem, System};
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// let mut s = (|mut n: ResMut<u32>| *n += 1).into_system();
    /// s.initialize(&mut world).unwrap();
    /// assert!(s.access().writes_resource(world.resource_id::<u32>().unwrap()));
    /// ```
    pub fn writes_resource(&self, id: ResourceId) -> bool {
        self.exclusive || self.resource_writes.contains(id.index())
    }

    /// True if the system reads the whole world (a `&World` parameter).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{IntoSystem, System};
    /// let mut world = World::new();
    /// let mut s = (|_w: &World| {}).into_system();
    /// s.initialize(&mut world).unwrap();
    /// assert!(s.access().reads_world());
    /// ```
    pub fn reads_world(&self) -> bool {
        self.reads_world
    }

    /// True if the system writes nothing (and is not exclusive): what a run
    /// condition must be.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{IntoSystem, System};
    /// let mut world = World::new();
    /// let mut s = (|_n: Res<u32>| true).into_system();
    /// s.initialize(&mut world).unwrap();
    /// assert!(s.access().is_read_only());
    /// ```
    pub fn is_read_only(&self) -> bool {
        !self.exclusive && !self.writes_anything()
    }

    fn writes_anything(&self) -> bool {
        !self.resource_writes.is_clear() || self.queries.iter().any(|(_, a)| !a.is_read_only())
    }

    /// True if the system needs the whole world to itself.
    ///
    /// # Example
    /// ```
    /// use mosaic::{IntoSystem, System, World};
    /// let mut world = World::new();
    /// let mut s = (|_w: &mut World| {}).into_system();
    /// s.initialize(&mut world).unwrap();
    /// assert!(s.access().is_exclusive());
    /// ```
    pub fn is_exclusive(&self) -> bool {
        self.exclusive
    }

    /// True if this borrows nothing at all (no query, resource or world,
    /// not exclusive): it conflicts with no other access.
    pub(crate) fn touches_nothing(&self) -> bool {
        !self.exclusive
            && !self.reads_world
            && !self.deferred
            && self.queries.is_empty()
            && self.resource_reads.is_clear()
            && self.resource_writes.is_clear()
    }

    /// True if a system with this access and one with `other` may not run at
    /// the same time.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::{IntoSystem, System};
    /// #[derive(Component)] struct A;
    /// #[derive(Component)] struct B;
    /// let mut world = World::new();
    /// let mut a = (|_q: Query<&mut A>| {}).into_system();
    /// let mut b = (|_q: Query<&mut B>| {}).into_system();
    /// a.initialize(&mut world).unwrap();
    /// b.initialize(&mut world).unwrap();
    /// assert!(!a.access().conflicts_with(b.access()));
    /// ```
    pub fn conflicts_with(&self, other: &SystemAccess) -> bool {
        if self.exclusive || other.exclusive {
            return true;
        }
        // Both reserve entity ids: one after the other, so that the ids
        // do not depend on thread timing.
        if self.deferred && other.deferred {
            return true;
        }
        if (self.reads_world && other.writes_anything())
            || (other.reads_world && self.writes_anything())
        {
            return true;
        }
        if !self.resource_writes.is_disjoint(&other.resource_writes)
            || !self.resource_writes.is_disjoint(&other.resource_reads)
            || !other.resource_writes.is_disjoint(&self.resource_reads)
        {
            return true;
        }
        self.queries.iter().any(|(_, a)| {
            other
                .queries
                .iter()
                .any(|(_, b)| a.conflicts_with(b).is_some())
        })
    }
}

fn grow_insert(set: &mut FixedBitSet, index: usize) {
    set.grow(index + 1);
    set.insert(index);
}
