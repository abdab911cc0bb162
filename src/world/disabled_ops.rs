//! Disabling: the [`Disabled`] marker, which queries skip unless they name
//! it, and the world's side of its per-table mirror.
//!
//! The marker is a sparse component, so adding or removing it moves no
//! data: the entity keeps its archetype and its row. Each table mirrors
//! which of its rows hold a disabled entity (a bit per row and a count, see
//! `DisabledRows`), which is what queries read; the world updates the
//! mirror after every operation that can add or remove the marker.
//!
//! # Which APIs see a disabled entity
//!
//! One rule, which every API follows:
//!
//! - **Queries skip it** unless they name the marker: every
//!   [`QueryState`](crate::QueryState) form and the system parameters built
//!   on queries (`Query`, `Single`, `Populated`, their `Option`s).
//! - **Direct access by id sees it**: [`World::get`], [`World::get_mut`],
//!   [`World::get_many_mut`], [`World::entity`], [`World::entity_mut`],
//!   `DeferredWorld::get`/`get_mut`, commands and relation calls naming its
//!   id, [`World::take`], [`World::clone_entity`] (the marker is copied, so
//!   the copy is disabled too). The caller named the entity; hiding it
//!   would turn a pause into "no such component".
//! - **Structural sweeps take it along**: recursive despawn,
//!   `despawn_descendants`, relation cascades, state-scoped despawn and
//!   [`World::clear`]. Disabling pauses an entity; it never lets one
//!   outlive what owns it.

use crate::Component;
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::world::World;

/// A marker that hides an entity from every query that does not name it:
/// the classic "pause this enemy". As Bevy's `Disabled` (a default query
/// filter): `Query<&Position>` skips a disabled entity in every form
/// (`iter`, `iter_mut`, `for_each`, `get`, `get_mut`, `par_iter`, walks of
/// sparse sets, `Added`/`Changed`), while a query that names `Disabled`
/// (`With<Disabled>`, `Has<Disabled>`, `&Disabled`, `Option<&Disabled>`,
/// `Without<Disabled>`) sees it and can tell.
///
/// Disabling moves no data: `Disabled` is stored in a sparse set, so the
/// entity keeps its table and row, and enabling it again is as cheap.
/// Direct access ([`World::get`], [`World::entity`]) still sees a disabled
/// entity's components. hecs has no such marker; flecs spells it
/// `EcsDisabled`.
///
/// Skipping costs nothing while no entity is disabled: a query checks one
/// count per table, and only a table holding disabled rows walks its rows
/// in runs between them.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::Disabled;
/// #[derive(Component)] struct Enemy(u32);
/// let mut world = World::new();
/// let a = world.spawn(Enemy(1));
/// let b = world.spawn(Enemy(2));
/// world.insert_one(b, Disabled).unwrap();
///
/// let mut enemies = world.query::<&Enemy>();
/// assert_eq!(enemies.iter(&world).map(|e| e.0).collect::<Vec<_>>(), [1]);
/// assert!(enemies.get(&world, b).is_err());
///
/// // Naming the marker sees every entity.
/// let mut all = world.query::<(&Enemy, Has<Disabled>)>();
/// assert_eq!(all.iter(&world).filter(|(_, off)| *off).count(), 1);
///
/// world.remove_one::<Disabled>(b).unwrap();
/// assert_eq!(enemies.iter(&world).count(), 2);
/// # let _ = a;
/// ```
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[component(storage = "sparse")]
pub struct Disabled;

/// True if `C` is the [`Disabled`] marker: of one sparse component's insert
/// or removal, only the marker's changes the disabled mirror, and this
/// test folds to a constant, so every other type's pays nothing for
/// disabling (not even [`World::sync_disabled`]'s compare).
#[inline(always)]
pub(crate) fn is_disabled_marker<C: 'static>() -> bool {
    std::any::TypeId::of::<C>() == std::any::TypeId::of::<Disabled>()
}

impl World {
    /// Makes the disabled mirror of `entity`'s row agree with whether it
    /// has [`Disabled`]. Every operation that can add or remove the marker
    /// calls this for the entities it touched; while `Disabled` is not
    /// registered it is one compare.
    #[inline]
    pub(crate) fn sync_disabled(&mut self, entity: Entity) {
        if let Some(id) = self.components.disabled_id() {
            self.sync_disabled_slow(id, entity);
        }
    }

    /// [`sync_disabled`](Self::sync_disabled) after writing or removing a
    /// bundle, whose info says whether it `disables` (holds the marker):
    /// one branch for every other bundle, as a row move carries the
    /// entity's bit to its new table.
    #[inline(always)]
    pub(crate) fn sync_disabled_if(&mut self, disables: bool, entity: Entity) {
        if disables {
            self.sync_disabled(entity);
        }
    }

    #[inline(never)]
    fn sync_disabled_slow(&mut self, id: ComponentId, entity: Entity) {
        let Some(loc) = self.entities.get(entity) else {
            return;
        };
        let on = self.sparse.get(id).is_some_and(|s| s.contains(entity));
        self.archetypes
            .table_mut(loc.archetype)
            .set_disabled(loc.row as usize, on);
    }

    /// [`sync_disabled`](Self::sync_disabled) for many entities.
    pub(crate) fn sync_disabled_all(&mut self, entities: &[Entity]) {
        if let Some(id) = self.components.disabled_id() {
            for &entity in entities {
                self.sync_disabled_slow(id, entity);
            }
        }
    }

    /// How many entities are [`Disabled`] (hidden from queries that do not
    /// name the marker).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::Disabled;
    /// let mut world = World::new();
    /// let e = world.spawn(());
    /// assert_eq!(world.disabled_count(), 0);
    /// world.insert_one(e, Disabled).unwrap();
    /// assert_eq!(world.disabled_count(), 1);
    /// ```
    #[inline]
    pub fn disabled_count(&self) -> usize {
        match self.components.disabled_id() {
            Some(id) => self.sparse.get(id).map_or(0, |s| s.entities().len()),
            None => 0,
        }
    }

    /// True if some entity is [`Disabled`]: queries that do not name the
    /// marker then check each table's disabled rows.
    #[inline(always)]
    pub(crate) fn any_disabled(&self) -> bool {
        match self.components.disabled_id() {
            Some(id) => self
                .sparse
                .get(id)
                .is_some_and(|s| !s.entities().is_empty()),
            None => false,
        }
    }

    /// True if `entity` is alive and [`Disabled`].
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::Disabled;
    /// let mut world = World::new();
    /// let e = world.spawn(Disabled);
    /// assert!(world.is_disabled(e));
    /// ```
    pub fn is_disabled(&self, entity: Entity) -> bool {
        self.components
            .disabled_id()
            .and_then(|id| self.sparse.get(id))
            .is_some_and(|s| s.contains(entity))
    }

    /// Checks that every table's mirror of disabled rows agrees with the
    /// [`Disabled`] set. Part of [`World::check_invariants`].
    pub(crate) fn check_disabled_mirror(&self) {
        let set = self
            .components
            .disabled_id()
            .and_then(|id| self.sparse.get(id));
        let mut mirrored = 0usize;
        for archetype in self.archetypes.iter() {
            let rows = archetype.table.disabled();
            mirrored += rows.count() as usize;
            for (row, &entity) in archetype.entities().iter().enumerate() {
                let has = set.is_some_and(|s| s.contains(entity));
                assert_eq!(
                    rows.contains(row),
                    has,
                    "disabled mirror disagrees for entity {entity:?}"
                );
            }
        }
        assert_eq!(
            mirrored,
            set.map_or(0, |s| s.entities().len()),
            "disabled count mismatch"
        );
    }
}
