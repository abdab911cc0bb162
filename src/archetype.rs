//! Archetypes: the sets of table components entities have, and the graph of
//! moves between them.
//!
//! Every distinct set of *table* components gets one archetype, which owns
//! the [`Table`] holding those entities. Sparse components do not take part:
//! adding or removing one never changes an entity's archetype.
//!
//! Each archetype caches, per bundle type, where inserting or removing that
//! bundle leads (an *edge*), so after the first time a move is a lookup.
//! Archetypes are never destroyed; ids are handed out in creation order, which
//! makes iteration order a pure function of the operations applied.

use std::fmt;

use rustc_hash::FxHashMap;

use crate::bundle::{BundleId, BundleInfo};
use crate::change::Tick;
use crate::component::{ComponentId, Components, type_slot};
use crate::entity::EntityLocation;
use crate::storage::{Column, ColumnHints, ColumnMap, Table};

/// Identifies an archetype within one world (dense, in creation order).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Component)] struct A;
/// let mut world = World::new();
/// world.spawn(A);
/// // archetype 0 is the empty one; `A` made the second.
/// assert_eq!(world.archetype_count(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArchetypeId(u32);

impl ArchetypeId {
    /// The archetype with no table components.
    pub const EMPTY: ArchetypeId = ArchetypeId(0);
    pub(crate) const INVALID: ArchetypeId = ArchetypeId(u32::MAX);

    /// The id as an index.
    ///
    /// # Example
    /// ```
    /// assert_eq!(mosaic::ArchetypeId::EMPTY.index(), 0);
    /// ```
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where inserting a bundle into an archetype leads, and how each of the
/// bundle's table components lands there.
#[derive(Clone, Debug)]
pub(crate) struct InsertEdge {
    pub target: ArchetypeId,
    /// Per table component of the bundle, in bundle order: its column in the
    /// target table, and whether the source already had it (a replace).
    pub slots: Box<[(u32, bool)]>,
    /// Where the source table's columns are in the target's: the row move.
    pub map: ColumnMap,
}

/// Where removing a bundle from an archetype leads, and how the row moves.
///
/// Invariant: `map` leads from this archetype's table to `target`'s, and
/// `taken` was read off this archetype's table for bundle `bundle`'s table
/// components (storage reads the removed values through it).
#[derive(Clone, Debug)]
pub(crate) struct RemoveEdge {
    pub target: ArchetypeId,
    /// The bundle this edge removes.
    pub bundle: BundleId,
    /// Per table component of the bundle, in bundle order: its column in
    /// this archetype's table; `None` if entities here lack any of them (a
    /// removal of the bundle from here fails).
    pub taken: Option<Box<[u32]>>,
    /// Where the columns kept are in the target's table: the row move.
    pub map: ColumnMap,
}

#[inline(always)]
fn edge_of(edges: &[Option<InsertEdge>], bundle: BundleId) -> &InsertEdge {
    edges[bundle.index()].as_ref().expect("edge just made")
}

#[inline(always)]
fn remove_edge_of(edges: &[Option<RemoveEdge>], bundle: BundleId) -> &RemoveEdge {
    edges[bundle.index()].as_ref().expect("edge just made")
}

/// Everything one insert touches; see [`Archetypes::insert_plan`].
pub(crate) struct InsertPlan<'a> {
    pub edge: &'a InsertEdge,
    pub src: &'a mut Table,
    /// `None` when the insert keeps the entity in its archetype.
    pub dst: Option<&'a mut Table>,
}

/// Where one spawn goes; see [`Archetypes::spawn_plan`].
pub(crate) struct SpawnPlan<'a> {
    /// The insert edge from the empty archetype.
    pub edge: &'a InsertEdge,
    /// The table of `edge.target`, where the new row goes.
    pub table: &'a mut Table,
}

/// Everything one removal touches; see [`Archetypes::remove_plan`].
pub(crate) struct RemovePlan<'a> {
    pub edge: &'a RemoveEdge,
    pub src: &'a mut Table,
    /// `None` when the removal keeps the entity in its archetype.
    pub dst: Option<&'a mut Table>,
}

/// A set of table components and the table of entities that have exactly it.
pub struct Archetype {
    id: ArchetypeId,
    pub(crate) table: Table,
    insert_edges: Vec<Option<InsertEdge>>,
    remove_edges: Vec<Option<RemoveEdge>>,
}

impl fmt::Debug for Archetype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Archetype")
            .field("id", &self.id)
            .field("components", &self.table.component_ids())
            .field("len", &self.table.len())
            .finish()
    }
}

impl Archetype {
    /// This archetype's id.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert_eq!(world.archetypes().next().unwrap().id(), mosaic::ArchetypeId::EMPTY);
    /// ```
    #[inline]
    pub fn id(&self) -> ArchetypeId {
        self.id
    }

    /// Number of entities in this archetype.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.spawn(());
    /// assert_eq!(world.archetypes().next().unwrap().len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True if no entity is in this archetype.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert!(world.archetypes().next().unwrap().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    /// The table components every entity here has, sorted by id.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert!(world.archetypes().next().unwrap().components().is_empty());
    /// ```
    #[inline]
    pub fn components(&self) -> &[crate::ComponentId] {
        self.table.component_ids()
    }

    /// True if entities here have table component `id`.
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// # #[derive(Component)] struct A;
    /// let mut world = World::new();
    /// let e = world.spawn(A);
    /// let id = world.component_id::<A>().unwrap();
    /// assert!(world.archetypes().any(|a| a.contains(id)));
    /// ```
    #[inline]
    pub fn contains(&self, id: ComponentId) -> bool {
        self.table.column_index(id).is_some()
    }

    /// The values of table component `T` here, by row (the row of
    /// [`Archetype::entities`]), or `None` if entities here have no `T`
    /// in their table (a sparse component, or one they lack).
    ///
    /// # Example
    /// ```
    /// # use mosaic::prelude::*;
    /// #[derive(Component, Debug, PartialEq)] struct Level(u8);
    /// let mut world = World::new();
    /// let e = world.spawn(Level(3));
    /// let location = world.location(e).unwrap();
    /// let archetype = world.get_archetype(location.archetype).unwrap();
    /// assert_eq!(archetype.column::<Level>().unwrap()[location.row as usize], Level(3));
    /// assert!(archetype.column::<String>().is_none());
    /// ```
    pub fn column<T: 'static>(&self) -> Option<&[T]> {
        (0..self.table.component_ids().len())
            .map(|i| self.table.column_at(i))
            .find_map(|c| c.as_slice::<T>())
    }

    /// Index of table component `id`'s column in this archetype's table.
    #[inline]
    pub(crate) fn column_index(&self, id: ComponentId) -> Option<usize> {
        self.table.column_index(id)
    }

    /// The entities here, in row order.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// let e = world.spawn(());
    /// assert_eq!(world.archetypes().next().unwrap().entities(), &[e]);
    /// ```
    #[inline]
    pub fn entities(&self) -> &[crate::Entity] {
        self.table.entities()
    }

    #[inline]
    pub(crate) fn insert_edge(&self, bundle: BundleId) -> Option<&InsertEdge> {
        self.insert_edges.get(bundle.index())?.as_ref()
    }

    #[inline]
    pub(crate) fn remove_edge(&self, bundle: BundleId) -> Option<&RemoveEdge> {
        self.remove_edges.get(bundle.index())?.as_ref()
    }

    fn set_insert_edge(&mut self, bundle: BundleId, edge: InsertEdge) {
        if self.insert_edges.len() <= bundle.index() {
            self.insert_edges.resize(bundle.index() + 1, None);
        }
        self.insert_edges[bundle.index()] = Some(edge);
    }

    fn set_remove_edge(&mut self, bundle: BundleId, edge: RemoveEdge) {
        if self.remove_edges.len() <= bundle.index() {
            self.remove_edges.resize(bundle.index() + 1, None);
        }
        self.remove_edges[bundle.index()] = Some(edge);
    }
}

/// Every archetype of a world.
///
/// Invariant: an archetype, once made, is never dropped, replaced or
/// given another table while this lives (its table's columns may be
/// pointed to by `hints`; see [`ColumnHints`]).
pub(crate) struct Archetypes {
    archetypes: Vec<Archetype>,
    by_components: FxHashMap<Box<[ComponentId]>, ArchetypeId>,
    /// Per component type (its type-cache slot), the column of these
    /// tables that a lookup by entity of that type last found: random
    /// access by id in two dependent loads, the entity's location and then
    /// the column (issue #40). Only [`Archetypes::remember_column`] writes
    /// them, with columns of these tables.
    hints: ColumnHints,
}

impl Archetypes {
    pub fn new(components: &Components) -> Self {
        let mut a = Archetypes {
            archetypes: Vec::new(),
            by_components: FxHashMap::default(),
            hints: ColumnHints::new(),
        };
        a.get_or_create(&[], components);
        a
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.archetypes.len()
    }

    #[inline]
    pub fn get(&self, id: ArchetypeId) -> &Archetype {
        &self.archetypes[id.index()]
    }

    #[inline]
    pub fn get_mut(&mut self, id: ArchetypeId) -> &mut Archetype {
        &mut self.archetypes[id.index()]
    }

    /// The column `T`'s hint names (that of `T`'s type-cache slot, which
    /// another type may share; an empty column of no type and no archetype
    /// before any lookup). The caller compares its archetype
    /// (`Column::archetype`) with the entity's, and `Column::get` checks
    /// that it holds `T`s and the row: a hint of another type or another
    /// archetype is a miss, never a wrong read.
    ///
    /// The hint is loaded before `loc` is used: callers load it before the
    /// entity's slot, as it is an atomic load, which the compiler does not
    /// merge with others, so the entity's loads after it can still be
    /// shared with a lookup that follows.
    #[inline(always)]
    pub fn hinted_column<T: 'static>(&self) -> &Column {
        // SAFETY: `hints` holds only `NO_COLUMN` and columns of these
        // tables (`remember_column` is its one writer), which live and stay
        // in place as long as `self` (the type's invariant; a table's column
        // array never moves); `&self` rules out a `&mut` to any of them for
        // the result's lifetime.
        unsafe { self.hints.column(type_slot::<T>()) }
    }

    /// True if [`Archetypes::hinted_mut`] finds `loc`'s `T`: a check that
    /// borrows nothing past the call, so that a caller can return
    /// `hinted_mut`'s borrow on a hit and search on a miss (the compiler
    /// shares the two calls' loads and drops the second's checks).
    #[inline(always)]
    pub fn hint_hits<T: 'static>(&mut self, loc: EntityLocation) -> bool {
        // SAFETY: `hints` holds only `NO_COLUMN` and columns of these
        // tables, which live and stay in place as long as `self` (the
        // type's invariant); the column is read only within this call,
        // under `&mut self`, so no other borrow of it is live.
        let column = unsafe { self.hints.column_exclusive(type_slot::<T>()) };
        column.archetype() == loc.archetype.0
            && column.holds::<T>()
            && (loc.row as usize) < column.len()
    }

    /// `loc`'s `T` through `T`'s column hint, mutably and marked changed at
    /// `tick`, or `None` on a miss (see [`Archetypes::hinted_column`]).
    #[inline(always)]
    pub fn hinted_mut<T: 'static>(&mut self, loc: EntityLocation, tick: Tick) -> Option<&mut T> {
        // SAFETY: `hints` holds only `NO_COLUMN` and columns of these
        // tables, which live and stay in place as long as `self` (the
        // type's invariant); the column is used only within the result's
        // lifetime, that of `&mut self`, which no other borrow shares.
        let column: &Column = unsafe { self.hints.column_exclusive(type_slot::<T>()) };
        if column.archetype() != loc.archetype.0 {
            return None;
        }
        // SAFETY: `&mut self` borrows every table of this world exclusively
        // for the result's lifetime, the column among them (the hints name
        // only these tables' columns, or `NO_COLUMN`, which has no rows).
        unsafe { column.get_mut_exclusive::<T>(loc.row as usize, tick) }
    }

    /// Makes the column at `index` of `archetype`'s table the hint of
    /// type-cache slot `slot` (a no-op past the table's columns).
    #[inline]
    pub fn remember_column(&self, slot: usize, archetype: ArchetypeId, index: usize) {
        if let Some(column) = self.archetypes[archetype.index()].table.column_ptr(index) {
            // SAFETY: a column of one of these tables, which live and stay
            // in place as long as the hints (the type's invariant).
            unsafe { self.hints.remember(slot, column) };
        }
    }

    /// Test hook: forgets every column hint.
    #[cfg(test)]
    pub fn forget_hints(&mut self) {
        self.hints.forget();
    }

    /// The table of archetype `id`, mutably.
    #[inline]
    pub fn table_mut(&mut self, id: ArchetypeId) -> &mut Table {
        &mut self.archetypes[id.index()].table
    }

    /// Two distinct archetypes, mutably. Always inlined: every move between
    /// archetypes takes this (out of line, its call cost a fifth of a
    /// table insert's instructions).
    #[inline(always)]
    pub fn pair_mut(&mut self, a: ArchetypeId, b: ArchetypeId) -> (&mut Archetype, &mut Archetype) {
        assert_ne!(a, b);
        if a < b {
            let (lo, hi) = self.archetypes.split_at_mut(b.index());
            (&mut lo[a.index()], &mut hi[0])
        } else {
            let (lo, hi) = self.archetypes.split_at_mut(a.index());
            (&mut hi[0], &mut lo[b.index()])
        }
    }

    /// Every archetype, indexed by id.
    #[inline]
    pub fn as_slice(&self) -> &[Archetype] {
        &self.archetypes
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Archetype> {
        self.archetypes.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Archetype> {
        self.archetypes.iter_mut()
    }

    /// The archetype of exactly these (sorted, unique) table components.
    pub fn get_or_create(&mut self, ids: &[ComponentId], components: &Components) -> ArchetypeId {
        if let Some(&id) = self.by_components.get(ids) {
            return id;
        }
        // `u32::MAX` is `ArchetypeId::INVALID` (an unflushed entity's
        // archetype), never a real one's: lookups by entity rest on no
        // archetype having that index.
        let id = ArchetypeId(
            u32::try_from(self.archetypes.len())
                .ok()
                .filter(|&i| i != ArchetypeId::INVALID.0)
                .expect("too many archetypes"),
        );
        let mut table = Table::new(ids, components);
        table.set_archetype(id.0);
        self.archetypes.push(Archetype {
            id,
            table,
            insert_edges: Vec::new(),
            remove_edges: Vec::new(),
        });
        self.by_components.insert(ids.into(), id);
        id
    }

    /// The edge for inserting a bundle whose table components are
    /// `bundle_table_ids` (bundle order) into `source`; computed once.
    pub fn insert_edge(
        &mut self,
        source: ArchetypeId,
        bundle: BundleId,
        bundle_table_ids: &[ComponentId],
        components: &Components,
    ) -> &InsertEdge {
        if self.get(source).insert_edge(bundle).is_none() {
            let src = self.get(source);
            let mut ids: Vec<ComponentId> = src.components().to_vec();
            ids.extend_from_slice(bundle_table_ids);
            ids.sort_unstable();
            ids.dedup();
            let replaced: Vec<bool> = bundle_table_ids.iter().map(|&c| src.contains(c)).collect();
            let target = self.get_or_create(&ids, components);
            let tgt = self.get(target);
            let slots = bundle_table_ids
                .iter()
                .zip(replaced)
                .map(|(&c, r)| (tgt.table.column_index(c).expect("target has it") as u32, r))
                .collect();
            let map = self.get(source).table.column_map(&tgt.table);
            self.get_mut(source)
                .set_insert_edge(bundle, InsertEdge { target, slots, map });
        }
        self.get(source).insert_edge(bundle).expect("just set")
    }

    /// [`Archetypes::insert_edge`] on the first insert of `bundle` into
    /// `source`: builds the edge and returns its target.
    #[cold]
    #[inline(never)]
    fn build_insert_edge(
        &mut self,
        source: ArchetypeId,
        bundle: &BundleInfo,
        components: &Components,
    ) -> ArchetypeId {
        self.insert_edge(source, bundle.id, &bundle.table_ids, components)
            .target
    }

    /// The tables an insert of `bundle` into `source` touches: the edge (made
    /// on first use), the source table and, if the archetype changes, the
    /// target table. Always inlined, as [`Archetypes::pair_mut`].
    #[inline(always)]
    pub fn insert_plan(
        &mut self,
        source: ArchetypeId,
        bundle: &BundleInfo,
        components: &Components,
    ) -> InsertPlan<'_> {
        // One lookup on the path every insert takes; the first use of the
        // edge builds it out of line.
        let target = match self.get(source).insert_edge(bundle.id) {
            Some(edge) => edge.target,
            None => self.build_insert_edge(source, bundle, components),
        };
        if target == source {
            let archetype = self.get_mut(source);
            let edge = edge_of(&archetype.insert_edges, bundle.id);
            InsertPlan {
                edge,
                src: &mut archetype.table,
                dst: None,
            }
        } else {
            let (src, dst) = self.pair_mut(source, target);
            let edge = edge_of(&src.insert_edges, bundle.id);
            InsertPlan {
                edge,
                src: &mut src.table,
                dst: Some(&mut dst.table),
            }
        }
    }

    /// Where a spawn of `bundle` goes: the edge from the empty archetype
    /// (made on first use) and its target's table. [`Archetypes::insert_plan`]
    /// from [`ArchetypeId::EMPTY`], less what a spawn does not need (the
    /// empty table, the pair of distinct archetypes): one edge lookup on
    /// the path every spawn takes.
    #[inline(always)]
    pub fn spawn_plan(&mut self, bundle: &BundleInfo, components: &Components) -> SpawnPlan<'_> {
        let known = matches!(
            self.archetypes[0].insert_edges.get(bundle.id.index()),
            Some(Some(_))
        );
        if !known {
            return self.spawn_plan_first(bundle, components);
        }
        self.spawn_plan_known(bundle)
    }

    /// [`Archetypes::spawn_plan`] on the first spawn of `bundle`: builds
    /// the edge.
    #[cold]
    #[inline(never)]
    fn spawn_plan_first(&mut self, bundle: &BundleInfo, components: &Components) -> SpawnPlan<'_> {
        self.build_insert_edge(ArchetypeId::EMPTY, bundle, components);
        self.spawn_plan_known(bundle)
    }

    /// [`Archetypes::spawn_plan`] once the edge exists.
    #[inline(always)]
    fn spawn_plan_known(&mut self, bundle: &BundleInfo) -> SpawnPlan<'_> {
        let (empty, rest) = self
            .archetypes
            .split_first_mut()
            .expect("the empty archetype is always there");
        let edge = edge_of(&empty.insert_edges, bundle.id);
        // The empty archetype is the first: a bundle with no table
        // component stays there.
        let table = match edge.target.index().checked_sub(1) {
            Some(i) => &mut rest[i].table,
            None => &mut empty.table,
        };
        SpawnPlan { edge, table }
    }

    /// Everything a removal of `bundle` from `source` touches: the edge
    /// (made on first use), the source table and, if the archetype
    /// changes, the target one. Always inlined, as
    /// [`Archetypes::pair_mut`].
    #[inline(always)]
    pub fn remove_plan(
        &mut self,
        source: ArchetypeId,
        bundle: &BundleInfo,
        components: &Components,
    ) -> RemovePlan<'_> {
        let target = match self.get(source).remove_edge(bundle.id) {
            Some(edge) => edge.target,
            None => self.build_remove_edge(source, bundle, components),
        };
        if target == source {
            let archetype = self.get_mut(source);
            let edge = remove_edge_of(&archetype.remove_edges, bundle.id);
            RemovePlan {
                edge,
                src: &mut archetype.table,
                dst: None,
            }
        } else {
            let (src, dst) = self.pair_mut(source, target);
            let edge = remove_edge_of(&src.remove_edges, bundle.id);
            RemovePlan {
                edge,
                src: &mut src.table,
                dst: Some(&mut dst.table),
            }
        }
    }

    /// Makes the edge for removing `bundle` from `source`; returns its
    /// target. Out of line: the first removal of `bundle` from `source`.
    #[cold]
    #[inline(never)]
    fn build_remove_edge(
        &mut self,
        source: ArchetypeId,
        bundle: &BundleInfo,
        components: &Components,
    ) -> ArchetypeId {
        let ids: Vec<ComponentId> = self
            .get(source)
            .components()
            .iter()
            .copied()
            .filter(|c| !bundle.table_ids.contains(c))
            .collect();
        let target = self.get_or_create(&ids, components);
        let src = &self.get(source).table;
        let edge = RemoveEdge {
            target,
            bundle: bundle.id,
            taken: src.column_positions(&bundle.table_ids),
            map: src.column_map(&self.get(target).table),
        };
        self.get_mut(source).set_remove_edge(bundle.id, edge);
        target
    }
}
