//! Relations between entities: typed edges `source --R--> target`, with
//! optional data per edge, and the hierarchy built on them ([`ChildOf`] and
//! [`Children`]).
//!
//! # Storage
//!
//! A relation type `R` (any type implementing [`Relationship`], usually with
//! `#[derive(Relation)]`) keeps its edges in two sparse components, outside
//! the archetype tables, so relating never moves an entity between
//! archetypes and never creates one:
//!
//! - [`Relation<R>`] on the source: its targets, in a list, with the edge
//!   data beside them;
//! - [`Sources<R>`] on the target: the entities relating to it, in a list
//!   ([`Children`] is `Sources<ChildOf>`).
//!
//! Each edge's position in both lists is known in O(1): a target records
//! its position in each source's list (a back index); a `one` relation's
//! source records its position in its target's list; a many-target
//! relation's source finds it in the target's list, which is short (at
//! most 32, scanned) or indexed (a hash table of positions). So removing an
//! edge is a swap-remove on both lists plus one fix-up for the edge each
//! swap moved: O(1), whatever the number of children or targets.
//! Being components, both work with everything queries
//! have: `&Children`, [`Relation<R>`] as query data, `With<Relation<R>>`,
//! `Without`, `Or`, `Option`, `Added` and `Changed` (a change to an
//! entity's edges marks its component changed), and the scheduler sees their
//! reads as reads of those components.
//!
//! The world keeps both sides in step: [`World::relate`] and
//! [`World::unrelate`] edit both; [`World::despawn`] removes every edge of
//! the entity first, applying to the sources of a despawned target the
//! relation's [`OnTargetDespawn`] policy. No edge ever names a dead entity.
//! The two components are managed by the world: they change only through
//! these methods. They have no public constructor, removing one by hand
//! (`World::remove`) panics, and they are immutable
//! ([`Component::MUTABLE`]): `&mut` access to them does not build.
//!
//! To react to edges, observe [`OnRelate`] and [`OnUnrelate`]: they run
//! when both ends agree. The lifecycle of the two components (their hooks,
//! and `OnAdd`/`OnInsert`/`OnRemove` observers: a parent's first child adds
//! its [`Children`]) is announced in the middle of an edit, one end at a
//! time, so those observers may find the other end not yet, or no longer,
//! edited.
//!
//! ```compile_fail
//! use mosaic::prelude::*;
//! #[derive(Relation)] struct Likes;
//! let mut world = World::new();
//! let (a, b) = (world.spawn(()), world.spawn(()));
//! world.relate(a, b, Likes).unwrap();
//! let edges = world.get_mut::<Relation<Likes>>(a).unwrap(); // immutable
//! ```
//! ```compile_fail
//! use mosaic::prelude::*;
//! let mut world = World::new();
//! let _q = world.query::<&mut Children>(); // immutable
//! ```
//!
//! # Example
//! ```
//! use mosaic::prelude::*;
//! #[derive(Relation)]
//! struct Likes;
//! #[derive(Relation, Debug, PartialEq)]
//! struct Damage { amount: u32 }
//!
//! let mut world = World::new();
//! let (a, b, c) = (world.spawn(()), world.spawn(()), world.spawn(()));
//! world.relate(a, b, Likes).unwrap();
//! world.relate(a, c, Likes).unwrap();
//! world.relate(c, b, Damage { amount: 3 }).unwrap();
//! assert_eq!(world.targets::<Likes>(a), [b, c]);
//! assert_eq!(world.sources::<Likes>(b), [a]);
//! assert_eq!(world.relation::<Damage>(c, b), Some(&Damage { amount: 3 }));
//! world.despawn(b).unwrap();
//! assert_eq!(world.targets::<Likes>(a), [c]); // the edge went with b
//! ```

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use hashbrown::HashTable;
use rustc_hash::FxHashMap;
use thiserror::Error;

use crate::component::{CloneBehavior, Component, ComponentId, StorageType, short_type_name};
use crate::entity::Entity;
use crate::storage::DeferredPanic;
use crate::world::{EntityWorldMut, World, WorldId};

mod hierarchy;
pub(crate) use hierarchy::OnRefused;
pub use hierarchy::{ChildOf, ChildSpawner, Children, ParentFirst};

/// A type whose values label edges between entities: `Likes`, `ChildOf`,
/// `Damage { amount }`.
///
/// Edges live in two sparse components the world manages, outside the
/// archetype tables (relating never moves an entity between archetypes):
/// [`Relation<R>`] on the source (its targets and each edge's data) and
/// [`Sources<R>`] on the target. Each edge's position in both lists is
/// known or found in O(1) (a back index, or a target's list that is short
/// or indexed), so finding and removing one is a swap-remove on each side
/// plus one back-index fix-up: O(1) however many children or targets. A despawn removes every
/// edge of the entity, applying [`Relationship::ON_TARGET_DESPAWN`] to the
/// sources of a despawned target, so no edge ever names a dead entity.
/// Insert and remove the two components only through the world's relation
/// methods (they have no public constructor, removing one by hand with
/// `World::remove` panics, and they are immutable: `&mut` access does not
/// build).
/// Derive it with `#[derive(Relation)]`, which takes
/// `#[relation(one)]` (each source has at most one target, as a child has
/// one parent), `#[relation(acyclic)]` (edges never close a cycle, see
/// [`Relationship::ACYCLIC`]) and `#[relation(on_target_despawn =
/// "unrelate" | "despawn" | "refuse")]`; or implement it by hand, which is
/// the registration.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::{OnTargetDespawn, Relationship};
/// #[derive(Relation)]
/// #[relation(one, on_target_despawn = "despawn")]
/// struct MountedOn;
/// // The same, by hand:
/// struct Riding;
/// impl Relationship for Riding {
///     const ONE: bool = true;
///     const ON_TARGET_DESPAWN: OnTargetDespawn = OnTargetDespawn::Despawn;
/// }
/// let mut world = World::new();
/// let (tank, turret) = (world.spawn(()), world.spawn(()));
/// world.relate(turret, tank, MountedOn).unwrap();
/// world.despawn(tank).unwrap();
/// assert!(!world.contains(turret));
/// ```
pub trait Relationship: Send + Sync + Sized + 'static {
    /// True if a source has at most one target of this relation: relating
    /// it to another target replaces the edge (as reparenting does).
    const ONE: bool = false;
    /// What happens to the sources of a target that is despawned.
    const ON_TARGET_DESPAWN: OnTargetDespawn = OnTargetDespawn::Unrelate;
    /// True if the relation's edges may never form a cycle (as
    /// [`ChildOf`]: no entity is its own ancestor): [`World::relate`]
    /// refuses an edge `source --R--> target` when `source` can already be
    /// reached from `target` (or is `target`) with
    /// [`RelationError::Cycle`], changing nothing. For a `one` relation
    /// the check walks up from `target` and down from `source` in turn,
    /// stopping when either walk ends: about the smaller of `target`'s
    /// depth and `source`'s subtree, so O(1) when a tree is built top down,
    /// bottom up, or a scene's chains load in any order; a search of the
    /// edges reachable from `target` otherwise. Off by default (a `one` relation
    /// such as "aims at" may well be mutual); `#[relation(acyclic)]`.
    const ACYCLIC: bool = false;

    /// How [`World::clone_entity`] copies an edge of which the cloned
    /// entity is the source: [`CloneBehavior::Clone`] gives the copy an
    /// edge to the same target with cloned data, [`CloneBehavior::Default`]
    /// one with fresh data, [`CloneBehavior::Skip`] (the default of a hand
    /// implementation) none. The derive picks `Clone` for a type that
    /// implements `Clone` (and is not generic), else `Skip`. Edges of which
    /// the cloned entity is the target are never copied.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation, Clone)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// let copy = world.clone_entity(a).unwrap();
    /// assert_eq!(world.targets::<Likes>(copy), [b]);
    /// ```
    fn clone_behavior() -> CloneBehavior<Self> {
        CloneBehavior::Skip
    }

    /// Called with the target each time an edge's data is stored by
    /// [`World::relate`] (new edge or replaced data), for a value that
    /// names its own target, as [`ChildOf`]`(parent)` does: it keeps the two
    /// in step. Does nothing by default.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let (a, b, child) = (world.spawn(()), world.spawn(()), world.spawn(()));
    /// world.relate(child, a, ChildOf(b)).unwrap(); // the target wins
    /// assert_eq!(world.relation::<ChildOf>(child, a), Some(&ChildOf(a)));
    /// ```
    #[inline]
    fn set_target(&mut self, target: Entity) {
        let _ = target;
    }

    /// True if [`Relationship::set_target`] makes the data name its
    /// target, so changing the data in place would make it disagree with
    /// the edge: then [`World::relation_mut`] of the relation does not
    /// build (relate again instead). [`ChildOf`] sets it.
    #[doc(hidden)]
    const NAMES_TARGET: bool = false;
}

/// What despawning a target does to the entities relating to it (the
/// relation's cleanup policy, [`Relationship::ON_TARGET_DESPAWN`]).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Relation)]
/// #[relation(on_target_despawn = "refuse")]
/// struct DependsOn;
/// let mut world = World::new();
/// let (lib, app) = (world.spawn(()), world.spawn(()));
/// world.relate(app, lib, DependsOn).unwrap();
/// assert!(world.despawn(lib).is_err()); // refused, nothing changed
/// world.despawn(app).unwrap();
/// world.despawn(lib).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnTargetDespawn {
    /// Delete the edge; the source stays (the default).
    Unrelate,
    /// Despawn the source too (and, in turn, its own sources under their
    /// policies): ownership. Runs iteratively, whatever the depth, after
    /// the target is gone, as one sweep: the whole doomed set is decided
    /// on the graph first, so the outcome does not depend on the order the
    /// edges were made in. A doomed source that is kept alive by a
    /// `Refuse` relation from an entity outside the doomed set stays (its
    /// edge to the despawned target removed), and so does what only it
    /// would doom; a refusing source that is doomed too keeps nothing.
    Despawn,
    /// Refuse to despawn the target while a source that would survive the
    /// despawn relates to it: [`World::despawn`] fails with
    /// [`EntityError::DespawnRefused`](crate::EntityError::DespawnRefused)
    /// and changes nothing. One rule for every despawn (plain, recursive,
    /// state scoping, cascades): the doomed set is the entities named and
    /// those the `Despawn` policies doom with them, and a source inside
    /// it (the target itself, one it owns, one of the same subtree) keeps
    /// nothing.
    Refuse,
}

/// A relation edit failed; the world is unchanged.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::RelationError;
/// #[derive(Relation, Debug, PartialEq)] struct Likes;
/// let mut world = World::new();
/// let a = world.spawn(());
/// let b = world.spawn(());
/// world.despawn(b).unwrap();
/// assert_eq!(world.relate(a, b, Likes), Err(RelationError::NoSuchEntity(b)));
/// assert_eq!(world.unrelate::<Likes>(a, a), Err(RelationError::NotRelated {
///     entity: a, target: a, relation: "Likes",
/// }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RelationError {
    /// The source or the target is not alive.
    #[error("entity {0:?} does not exist (despawned, or never spawned in this world)")]
    NoSuchEntity(Entity),
    /// There is no such edge.
    #[error("entity {entity:?} has no `{relation}` edge to {target:?}")]
    NotRelated {
        /// The source asked about.
        entity: Entity,
        /// The target asked about.
        target: Entity,
        /// The relation's short type name.
        relation: &'static str,
    },
    /// The source has no edge of this (`one`) relation.
    #[error("entity {entity:?} has no `{relation}` edge")]
    NoTarget {
        /// The source asked about.
        entity: Entity,
        /// The relation's short type name.
        relation: &'static str,
    },
    /// The edge would close a cycle of an [acyclic](Relationship::ACYCLIC)
    /// relation (as [`ChildOf`]): the source `entity` is `target` or can be
    /// reached from it (for the hierarchy: the new parent is the child itself or
    /// one of its descendants). Nothing was changed.
    #[error(
        "a `{relation}` edge from {entity:?} to {target:?} would close a cycle ({target:?} is {entity:?} or reaches it)"
    )]
    Cycle {
        /// The source asked about (named `entity` as in the other variants).
        entity: Entity,
        /// The target asked about.
        target: Entity,
        /// The relation's short type name.
        relation: &'static str,
    },
}

/// The outgoing edges of one source for relation `R`: its targets and the
/// data of each edge. A sparse component the world manages (see the
/// [`Relationship`] docs); as query data, `Relation<R>` yields
/// `&Relation<R>` for each entity with at least one `R` target.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Relation)] struct Likes;
/// #[derive(Component)] struct Name(&'static str);
/// let mut world = World::new();
/// let bob = world.spawn(Name("bob"));
/// let ann = world.spawn(Name("ann"));
/// world.relate(ann, bob, Likes).unwrap();
/// let mut q = world.query::<(&Name, Relation<Likes>)>();
/// for (name, likes) in q.iter(&world) {
///     assert_eq!((name.0, likes.targets()), ("ann", &[bob][..]));
/// }
/// let mut lonely = world.query_filtered::<&Name, Without<Relation<Likes>>>();
/// assert_eq!(lonely.iter(&world).map(|n| n.0).collect::<Vec<_>>(), ["bob"]);
/// ```
pub struct Relation<R: Relationship> {
    edges: Edges<R>,
}

/// A source's edges: inline for a `one` relation (no allocation at all),
/// boxed lists otherwise (one pointer in the sparse set).
enum Edges<R> {
    /// Target, this source's position in the target's [`Sources`], data.
    One(Entity, u32, R),
    Many(Box<ManyEdges<R>>),
}

/// The lists of a source of a many-target relation, parallel. No back
/// indices on this side: this source's position in a target's
/// [`Sources`] is found there (one entry, a scan of at most
/// [`INDEX_AT`], or the list's index), which saves 4 bytes an edge.
struct ManyEdges<R> {
    targets: Vec<Entity>,
    data: Vec<R>,
}

impl<R: Relationship> Component for Relation<R> {
    const STORAGE: StorageType = StorageType::SparseSet;
    /// Edges change only through the world's relation methods, which keep
    /// both ends in step.
    const MUTABLE: bool = false;
}

impl<R: Relationship> fmt::Debug for Relation<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Relation<{}>", short_type_name::<R>())?;
        f.debug_list().entries(self.targets()).finish()
    }
}

impl<R: Relationship> Relation<R> {
    /// A first edge; `back` (this source's position in the target's
    /// [`Sources`]) is kept for a `one` relation only.
    fn single(target: Entity, back: u32, data: R) -> Self {
        let edges = if R::ONE {
            Edges::One(target, back, data)
        } else {
            Edges::Many(Box::new(ManyEdges {
                targets: vec![target],
                data: vec![data],
            }))
        };
        Relation { edges }
    }

    /// A `one` relation's source: its position in its target's [`Sources`].
    fn one_back_mut(&mut self) -> &mut u32 {
        match &mut self.edges {
            Edges::One(_, b, _) => b,
            Edges::Many(_) => unreachable!("only a `one` relation keeps a back index"),
        }
    }

    fn data_mut(&mut self) -> &mut [R] {
        match &mut self.edges {
            Edges::One(_, _, d) => std::slice::from_mut(d),
            Edges::Many(m) => &mut m.data,
        }
    }

    /// The lists of a many-target relation's source.
    fn many(&mut self) -> &mut ManyEdges<R> {
        match &mut self.edges {
            Edges::Many(m) => m,
            Edges::One(..) => unreachable!("a `one` relation has no edge lists"),
        }
    }

    /// The targets, in edge order (which a removal may change: the last
    /// edge takes the removed one's place).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// assert_eq!(world.get::<Relation<Likes>>(a).unwrap().targets(), [b]);
    /// ```
    #[inline]
    pub fn targets(&self) -> &[Entity] {
        match &self.edges {
            Edges::One(t, _, _) => std::slice::from_ref(t),
            Edges::Many(m) => &m.targets,
        }
    }

    /// The first target: for a `one` relation (as [`ChildOf`]), *the*
    /// target. A `Relation<R>` component always has at least one.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// let child = world.spawn(());
    /// world.add_child(parent, child).unwrap();
    /// let mut q = world.query::<Relation<ChildOf>>();
    /// assert_eq!(q.get(&world, child).unwrap().target(), parent);
    /// ```
    #[inline]
    pub fn target(&self) -> Entity {
        self.targets()[0]
    }

    /// The edge data, parallel to [`targets`](Self::targets).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation, Debug, PartialEq)] struct Owes(u32);
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Owes(5)).unwrap();
    /// assert_eq!(world.get::<Relation<Owes>>(a).unwrap().data(), [Owes(5)]);
    /// ```
    #[inline]
    pub fn data(&self) -> &[R] {
        match &self.edges {
            Edges::One(_, _, d) => std::slice::from_ref(d),
            Edges::Many(m) => &m.data,
        }
    }

    /// Each target with its edge's data.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Owes(u32);
    /// let mut world = World::new();
    /// let (a, b, c) = (world.spawn(()), world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Owes(5)).unwrap();
    /// world.relate(a, c, Owes(2)).unwrap();
    /// let total: u32 = world.get::<Relation<Owes>>(a).unwrap().iter().map(|(_, o)| o.0).sum();
    /// assert_eq!(total, 7);
    /// ```
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (Entity, &R)> + '_ {
        self.targets().iter().copied().zip(self.data().iter())
    }

    /// The data of the edge to `target`, if there is one (a scan of this
    /// source's targets).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation, Debug, PartialEq)] struct Owes(u32);
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Owes(5)).unwrap();
    /// assert_eq!(world.get::<Relation<Owes>>(a).unwrap().get(b), Some(&Owes(5)));
    /// ```
    pub fn get(&self, target: Entity) -> Option<&R> {
        let i = self.targets().iter().position(|&t| t == target)?;
        Some(&self.data()[i])
    }

    /// True if this source has an edge to `target`.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// assert!(world.get::<Relation<Likes>>(a).unwrap().contains(b));
    /// ```
    pub fn contains(&self, target: Entity) -> bool {
        self.targets().contains(&target)
    }

    /// The number of targets (at least one).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// assert_eq!(world.get::<Relation<Likes>>(a).unwrap().len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.targets().len()
    }

    /// Always false for a component in a world (an entity whose last edge
    /// goes loses the component); here for symmetry with [`len`](Self::len).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// assert!(!world.get::<Relation<Likes>>(a).unwrap().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.targets().is_empty()
    }
}

/// The incoming edges of one target for relation `R`: the entities relating
/// to it, readable as a slice (`Deref<Target = [Entity]>`). A sparse
/// component the world manages (see the [`Relationship`] docs); the
/// hierarchy's [`Children`] is `Sources<ChildOf>`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Relation)] struct Likes;
/// let mut world = World::new();
/// let (a, b, c) = (world.spawn(()), world.spawn(()), world.spawn(()));
/// world.relate(a, c, Likes).unwrap();
/// world.relate(b, c, Likes).unwrap();
/// let fans = world.get::<Sources<Likes>>(c).unwrap();
/// assert_eq!(fans.len(), 2);
/// assert!(fans.contains(&a) && fans.contains(&b));
/// ```
pub struct Sources<R: Relationship> {
    list: SourceList,
    relation: PhantomData<fn() -> R>,
}

/// A target's sources: inline while there is one, boxed lists beyond.
enum SourceList {
    /// The source, and this target's position in its [`Relation`].
    Single(Entity, u32),
    Many(Box<ManySources>),
}

/// A list of sources longer than this gets an index (see
/// [`ManySources::index`]); shorter ones are scanned.
const INDEX_AT: usize = 32;

/// The sources of a target with more than one.
struct ManySources {
    sources: Vec<Entity>,
    /// `back[j]`: this target's position in `sources[j]`'s [`Relation`]
    /// (empty for a `one` relation, where it is always 0).
    back: Vec<u32>,
    /// For a many-target relation whose list grew past [`INDEX_AT`]: the
    /// positions `0..sources.len()`, each hashed by the source stored
    /// there, so finding a source's position is O(1) expected (4 bytes and
    /// a control byte per entry, no copy of the entities). Kept until the
    /// list is back to one source.
    index: Option<HashTable<u32>>,
}

/// The hash a [`ManySources::index`] files an entity under.
#[inline]
fn hash_entity(e: Entity) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    e.hash(&mut h);
    h.finish()
}

impl ManySources {
    /// Indexes every position (the list just grew past [`INDEX_AT`]).
    fn build_index(&mut self) {
        let mut index = HashTable::with_capacity(self.sources.len() * 2);
        let sources = &self.sources;
        for (j, &s) in sources.iter().enumerate() {
            index.insert_unique(hash_entity(s), j as u32, |&p| {
                hash_entity(sources[p as usize])
            });
        }
        self.index = Some(index);
    }

    /// The position of `source`, if listed: O(1) expected with an index,
    /// a scan of at most [`INDEX_AT`] entries without.
    fn position(&self, source: Entity) -> Option<usize> {
        match &self.index {
            Some(index) => index
                .find(hash_entity(source), |&p| self.sources[p as usize] == source)
                .map(|&p| p as usize),
            None => self.sources.iter().position(|&s| s == source),
        }
    }

    fn push(&mut self, source: Entity) {
        let j = self.sources.len() as u32;
        self.sources.push(source);
        let sources = &self.sources;
        match &mut self.index {
            Some(index) => {
                index.insert_unique(hash_entity(source), j, |&p| {
                    hash_entity(sources[p as usize])
                });
            }
            None if sources.len() > INDEX_AT => self.build_index(),
            None => {}
        }
    }

    /// Swap-removes position `j` of the sources (the caller does `back`),
    /// keeping the index in step: `j`'s entry goes, and the last entry's
    /// position becomes `j`.
    fn swap_remove(&mut self, j: usize) {
        let last = self.sources.len() - 1;
        if let Some(index) = &mut self.index {
            let gone = self.sources[j];
            match index.find_entry(hash_entity(gone), |&p| p as usize == j) {
                Ok(entry) => {
                    entry.remove();
                }
                Err(_) => unreachable!("relation index: every position is indexed"),
            }
            if j != last {
                let moved = self.sources[last];
                let slot = index
                    .find_mut(hash_entity(moved), |&p| p as usize == last)
                    .expect("relation index: every position is indexed");
                *slot = j as u32;
            }
        }
        self.sources.swap_remove(j);
    }
}

impl<R: Relationship> Component for Sources<R> {
    const STORAGE: StorageType = StorageType::SparseSet;
    /// Edges change only through the world's relation methods, which keep
    /// both ends in step.
    const MUTABLE: bool = false;
}

impl<R: Relationship> fmt::Debug for Sources<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sources<{}>", short_type_name::<R>())?;
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<R: Relationship> std::ops::Deref for Sources<R> {
    type Target = [Entity];
    #[inline]
    fn deref(&self) -> &[Entity] {
        self.as_slice()
    }
}

impl<R: Relationship> Sources<R> {
    fn single(source: Entity, back: u32) -> Self {
        Sources {
            list: SourceList::Single(source, back),
            relation: PhantomData,
        }
    }

    /// Source `j`'s position of this target in its [`Relation`].
    fn back_of(&self, j: usize) -> u32 {
        match &self.list {
            SourceList::Single(_, b) => *b,
            SourceList::Many(_) if R::ONE => 0,
            SourceList::Many(m) => m.back[j],
        }
    }

    /// Records `back` as this target's position in `source`'s
    /// [`Relation`] (a many-target relation: found through
    /// [`position`](Self::position)).
    fn set_back_of(&mut self, source: Entity, back: u32) {
        debug_assert!(!R::ONE, "a `one` relation's position is always 0");
        let j = self
            .position(source)
            .expect("relation invariant: a target lists each of its sources");
        match &mut self.list {
            SourceList::Single(_, b) => *b = back,
            SourceList::Many(m) => m.back[j] = back,
        }
    }

    /// True if the list has an index (see [`ManySources::index`]).
    fn indexed(&self) -> bool {
        matches!(&self.list, SourceList::Many(m) if m.index.is_some())
    }

    /// The position of `source` in this list, if it is there: O(1)
    /// expected for an indexed list, else a scan.
    fn position(&self, source: Entity) -> Option<usize> {
        match &self.list {
            SourceList::Single(s, _) => (*s == source).then_some(0),
            SourceList::Many(m) => m.position(source),
        }
    }

    /// Appends a source; returns its position.
    fn push(&mut self, source: Entity, back: u32) -> u32 {
        match &mut self.list {
            SourceList::Single(s0, b0) => {
                let backs = if R::ONE { Vec::new() } else { vec![*b0, back] };
                self.list = SourceList::Many(Box::new(ManySources {
                    sources: vec![*s0, source],
                    back: backs,
                    index: None,
                }));
                1
            }
            SourceList::Many(m) => {
                if R::ONE {
                    // Never searched (a `one` edge is found from its
                    // source), so never indexed.
                    m.sources.push(source);
                } else {
                    m.push(source);
                    m.back.push(back);
                }
                (m.sources.len() - 1) as u32
            }
        }
    }

    /// Swap-removes source `j`; returns false if none is left (the caller
    /// then removes the component).
    fn swap_remove(&mut self, j: usize) -> bool {
        match &mut self.list {
            SourceList::Single(..) => false,
            SourceList::Many(m) => {
                if R::ONE {
                    // Never indexed (see `push`): a plain swap-remove.
                    m.sources.swap_remove(j);
                } else {
                    m.swap_remove(j);
                    m.back.swap_remove(j);
                }
                if m.sources.len() == 1 {
                    let back = if R::ONE { 0 } else { m.back[0] };
                    self.list = SourceList::Single(m.sources[0], back);
                }
                true
            }
        }
    }

    /// Takes the sources out, with each one's position of this target in
    /// its [`Relation`], leaving an empty list (for a despawn).
    fn take(&mut self) -> (Vec<Entity>, Vec<u32>) {
        let taken = std::mem::replace(
            &mut self.list,
            SourceList::Many(Box::new(ManySources {
                sources: Vec::new(),
                back: Vec::new(),
                index: None,
            })),
        );
        match taken {
            SourceList::Single(s, b) => (vec![s], vec![b]),
            SourceList::Many(m) => {
                let ManySources {
                    sources, mut back, ..
                } = *m;
                if R::ONE {
                    back = vec![0; sources.len()];
                }
                (sources, back)
            }
        }
    }

    /// The sources, as a slice (in edge order, which a removal may change).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// let parent = world.spawn(());
    /// let child = world.spawn(());
    /// world.add_child(parent, child).unwrap();
    /// assert_eq!(world.get::<Children>(parent).unwrap().as_slice(), [child]);
    /// ```
    #[inline]
    pub fn as_slice(&self) -> &[Entity] {
        match &self.list {
            SourceList::Single(s, _) => std::slice::from_ref(s),
            SourceList::Many(m) => &m.sources,
        }
    }

    /// Puts the sources in the order `perm` gives (`perm[j]`: the old
    /// position of the source that goes to position `j`), with their back
    /// indices, and rebuilds the index if there is one.
    fn permute(&mut self, perm: &[usize]) {
        let SourceList::Many(m) = &mut self.list else {
            return;
        };
        m.sources = perm.iter().map(|&j| m.sources[j]).collect();
        if !R::ONE {
            m.back = perm.iter().map(|&j| m.back[j]).collect();
        }
        if m.index.is_some() {
            m.build_index();
        }
    }

    /// True if this value owns heap memory (a list of more than one
    /// source), so dropping it does something; false if dropping it is a
    /// no-op and it may be forgotten instead.
    #[inline]
    pub(crate) fn owns_heap(&self) -> bool {
        matches!(self.list, SourceList::Many(_))
    }
}

// ----- the world's registry --------------------------------------------------------------

/// Which of a relation type's two components a component is, as
/// [`World::relation_side`] tells it.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::RelationSide;
/// #[derive(Relation)] struct Likes;
/// let mut world = World::new();
/// world.register_relation::<Likes>();
/// let id = world.component_id::<Sources<Likes>>().unwrap();
/// assert_eq!(world.relation_side(id), Some(("Likes", RelationSide::Sources)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RelationSide {
    /// [`Relation<R>`]: on a source, its edges (targets and data).
    Edges,
    /// [`Sources<R>`]: on a target, the sources whose edges reach it.
    Sources,
}

/// A relation type's cleanup of a dying entity's edges (see [`detach`]).
pub(crate) type Detach = fn(&mut World, Entity, &mut Vec<Entity>, &mut DeferredPanic);

/// What the world knows about one relation type.
struct Kind {
    name: &'static str,
    relation: ComponentId,
    sources: ComponentId,
    policy: OnTargetDespawn,
    /// Bumped by every edit of this relation's edges.
    version: u64,
    /// Removes every edge of a dying entity (see [`detach`]).
    detach: Detach,
    /// Panics if this relation's two sides disagree (see [`check`]).
    check: fn(&World),
    /// Copies an entity's outgoing edges to its clone (see [`clone_edges`]).
    clone_edges: fn(&World, Entity) -> Option<EdgeCopies>,
    /// Announces every edge of a world about to be cleared (see
    /// [`announce_cleared`]).
    announce_cleared: fn(&mut World) -> bool,
    /// An entity's sources of this relation (see [`World::sources`]).
    sources_of: for<'w> fn(&'w World, Entity) -> &'w [Entity],
}

/// What [`World::decide_sweep`] decided.
#[derive(Debug)]
pub(crate) struct Sweep {
    /// The entities cascades doom besides the named ones, in the order
    /// to despawn them (breadth first).
    pub cascade: Vec<Entity>,
    /// The named entities a survivor keeps alive, in the order named, each
    /// with the first relation that keeps it: the despawn is refused.
    pub refused: Vec<(Entity, &'static str)>,
}

/// The relation types a world has seen, and the cleanup work of despawns.
pub(crate) struct Relations {
    kinds: Vec<Kind>,
    by_type: FxHashMap<TypeId, usize>,
    /// Sources to despawn under an [`OnTargetDespawn::Despawn`] policy, in
    /// the order found; drained by the outermost despawn, iteratively.
    pending: Vec<Entity>,
    draining: bool,
    /// A relation whose cleanup despawns skip (see `skip_during`).
    skip: Option<usize>,
    /// The relation `index_of` found last (a private type's id until then).
    last: (TypeId, usize),
    /// True if some relation's policy is [`OnTargetDespawn::Refuse`].
    any_refuse: bool,
    /// Entities no [`OnTargetDespawn::Despawn`] policy dooms while a
    /// restore despawns what was spawned since its snapshot: the
    /// snapshot's entities among their sources (see
    /// [`World::spare_sources_of`]). Empty otherwise.
    spared: Vec<Entity>,
}

/// The type [`Relations::last`] names while it remembers nothing: private,
/// so no relation is it.
struct NoRelation;

impl Default for Relations {
    fn default() -> Self {
        Relations {
            kinds: Vec::new(),
            by_type: FxHashMap::default(),
            pending: Vec::new(),
            draining: false,
            skip: None,
            last: (TypeId::of::<NoRelation>(), 0),
            any_refuse: false,
            spared: Vec::new(),
        }
    }
}

impl fmt::Debug for Relations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.kinds.iter().map(|k| k.name))
            .finish()
    }
}

impl Relations {
    /// True once any relation type is registered: until then despawns skip
    /// all relation work at the cost of this check.
    #[inline(always)]
    pub(crate) fn active(&self) -> bool {
        !self.kinds.is_empty()
    }

    #[inline]
    fn index_of<R: Relationship>(&self) -> Option<usize> {
        // Loops over one relation (the common case) skip the hash.
        let (t, k) = self.last;
        if t == TypeId::of::<R>() {
            return Some(k);
        }
        self.by_type.get(&TypeId::of::<R>()).copied()
    }

    /// [`Relations::index_of`], remembering the answer for the next calls.
    fn remember<R: Relationship>(&mut self) -> Option<usize> {
        let k = self.index_of::<R>()?;
        self.last = (TypeId::of::<R>(), k);
        Some(k)
    }

    fn bump<R: Relationship>(&mut self) {
        if let Some(i) = self.index_of::<R>() {
            self.kinds[i].version += 1;
        }
    }

    pub(crate) fn version<R: Relationship>(&self) -> u64 {
        self.index_of::<R>().map_or(0, |i| self.kinds[i].version)
    }

    /// True if some relation's policy is [`OnTargetDespawn::Refuse`]: only
    /// then can [`Relations::refusing`] answer `Some`.
    #[inline]
    pub(crate) fn any_refuse(&self) -> bool {
        self.any_refuse
    }

    /// The first relation under which `entity` (despawned) may be kept
    /// alive: it has sources of a [`OnTargetDespawn::Refuse`] relation
    /// (which keep it unless they go too: [`World::decide_sweep`]).
    pub(crate) fn refusing(&self, world: &World, entity: Entity) -> Option<&'static str> {
        if !self.any_refuse {
            return None;
        }
        self.kinds
            .iter()
            .filter(|k| k.policy == OnTargetDespawn::Refuse)
            .find(|k| world.contains_id(entity, k.sources))
            .map(|k| k.name)
    }

    /// Makes despawns skip `R`'s cleanup until [`Relations::end_skip`]
    /// (for a recursive despawn, whose `R` edges all die together); returns
    /// the previous setting, to restore.
    pub(crate) fn skip_during<R: Relationship>(&mut self) -> Option<usize> {
        let k = self.index_of::<R>();
        std::mem::replace(&mut self.skip, k)
    }

    pub(crate) fn end_skip(&mut self, previous: Option<usize>) {
        self.skip = previous;
    }

    /// True if `id` is one side of a relation (`Relation<R>` or
    /// `Sources<R>`): edges, which only relate/unrelate and despawn may
    /// change, never a value to move out on its own.
    pub(crate) fn is_edge_component(&self, id: ComponentId) -> bool {
        self.kinds
            .iter()
            .any(|k| k.relation == id || k.sources == id)
    }

    /// The relation `id` is a side of, by name, and which side.
    fn side_of(&self, id: ComponentId) -> Option<(&'static str, RelationSide)> {
        self.kinds.iter().find_map(|k| {
            if k.relation == id {
                Some((k.name, RelationSide::Edges))
            } else if k.sources == id {
                Some((k.name, RelationSide::Sources))
            } else {
                None
            }
        })
    }

    /// How many relation types are registered.
    pub(crate) fn len(&self) -> usize {
        self.kinds.len()
    }

    /// True if a despawn has edges to clean up: some relation is
    /// registered and not skipped (see [`Relations::skip_during`]).
    #[inline]
    pub(crate) fn detaches_any(&self) -> bool {
        self.kinds.len() > usize::from(self.skip.is_some())
    }

    /// Relation type `k`'s cleanup, unless skipped, with its components.
    pub(crate) fn detacher(&self, k: usize) -> Option<(Detach, ComponentId, ComponentId)> {
        if self.skip == Some(k) {
            return None;
        }
        let kind = &self.kinds[k];
        Some((kind.detach, kind.relation, kind.sources))
    }

    /// Takes the sources queued for despawning, if no outer despawn drains
    /// them already; the caller despawns them and then calls
    /// [`Relations::end_drain`].
    pub(crate) fn start_drain(&mut self) -> bool {
        if self.draining || self.pending.is_empty() {
            return false;
        }
        self.draining = true;
        true
    }

    pub(crate) fn end_drain(&mut self) {
        self.draining = false;
    }

    pub(crate) fn take_pending(&mut self) -> Vec<Entity> {
        std::mem::take(&mut self.pending)
    }

    /// Gives back what [`Relations::take_pending`] took, plus what was
    /// queued meanwhile.
    pub(crate) fn restore_pending(&mut self, mut pending: Vec<Entity>) {
        if self.pending.is_empty() {
            self.pending = pending;
        } else {
            self.pending.append(&mut pending);
        }
    }

    /// The relation kinds' [`announce_cleared`] functions, to call (with
    /// the world) before a clear.
    pub(crate) fn clear_announcers(&self) -> Vec<fn(&mut World) -> bool> {
        self.kinds.iter().map(|k| k.announce_cleared).collect()
    }

    /// A world was cleared: every edge went with it.
    pub(crate) fn cleared(&mut self) {
        for k in &mut self.kinds {
            k.version += 1;
        }
        self.pending.clear();
    }

    /// Checks every relation's invariants (for `World::check_invariants`).
    pub(crate) fn check_all(&self, world: &World) {
        for kind in &self.kinds {
            (kind.check)(world);
        }
        assert!(
            self.pending.is_empty() || self.draining,
            "relation despawns left queued"
        );
    }

    /// The component ids of `R`'s two sides.
    pub(crate) fn ids<R: Relationship>(&self) -> Option<(ComponentId, ComponentId)> {
        self.index_of::<R>()
            .map(|i| (self.kinds[i].relation, self.kinds[i].sources))
    }
}

impl World {
    /// Registers relation type `R` (if new): its two components and its
    /// cleanup on despawn. Every relation method does this on first use.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// world.register_relation::<Likes>();
    /// assert!(world.component_id::<Relation<Likes>>().is_some());
    /// ```
    pub fn register_relation<R: Relationship>(&mut self) {
        if self.relations_mut().remember::<R>().is_some() {
            return;
        }
        let relation = self.register_component::<Relation<R>>();
        let sources = self.register_component::<Sources<R>>();
        if TypeId::of::<R>() == TypeId::of::<ChildOf>() {
            // The hierarchy is part of every rollback state, registered
            // for rollback or not yet (a snapshot takes `&World`): its
            // edge data keeps change ticks from the start, so a restore
            // tells whether it was written since a snapshot.
            self.track_ticks(relation);
        }
        let relations = self.relations_mut();
        relations.any_refuse |= R::ON_TARGET_DESPAWN == OnTargetDespawn::Refuse;
        relations
            .by_type
            .insert(TypeId::of::<R>(), relations.kinds.len());
        relations.kinds.push(Kind {
            name: name_of::<R>(),
            relation,
            sources,
            policy: R::ON_TARGET_DESPAWN,
            version: 0,
            detach: detach::<R>,
            check: check::<R>,
            clone_edges: clone_edges::<R>,
            announce_cleared: announce_cleared::<R>,
            sources_of: |world, entity| world.sources::<R>(entity),
        });
    }

    /// Adds the edge `source --R--> target` with `data`. If the edge exists
    /// its data is replaced; for a `one` relation ([`Relationship::ONE`]),
    /// an edge from `source` to another target is removed first (so this
    /// reparents). Never moves an entity between archetypes; O(1) for a
    /// `one` relation, else a scan of the shorter of the two lists for an
    /// existing edge.
    ///
    /// Fails, changing nothing, if either entity is not alive.
    ///
    /// An end's first edge inserts its component ([`Relation<R>`] on the
    /// source, [`Sources<R>`] on the target), with the components it
    /// requires ([`World::register_required`]); if a constructor of those
    /// panics, the edge is not made (a `one` relation's old edge is gone
    /// all the same) and the panic goes on.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// let archetypes = world.archetype_count();
    /// world.relate(a, b, Likes).unwrap();
    /// assert!(world.has_relation::<Likes>(a, b));
    /// assert_eq!(world.archetype_count(), archetypes);
    /// ```
    pub fn relate<R: Relationship>(
        &mut self,
        source: Entity,
        target: Entity,
        mut data: R,
    ) -> Result<(), RelationError> {
        data.set_target(target);
        self.flush();
        for e in [source, target] {
            if !self.contains(e) {
                return Err(RelationError::NoSuchEntity(e));
            }
        }
        self.register_relation::<R>();
        if R::ACYCLIC && self.reaches::<R>(target, source) {
            return Err(RelationError::Cycle {
                entity: source,
                target,
                relation: name_of::<R>(),
            });
        }
        if let Some(i) = self.edge_index::<R>(source, target) {
            let old = std::mem::replace(&mut self.relation_mut_of::<R>(source).data_mut()[i], data);
            self.relations_mut().bump::<R>();
            // Dropped once the new data is in (its drop may panic).
            drop(old);
            return Ok(());
        }
        self.edge_change(|world, panics| world.add_edge::<R>(source, target, data, panics));
        Ok(())
    }

    /// The new edge of [`World::relate`] (checked: both ends alive, no edge
    /// yet, no cycle), made whole whatever user code panics on the way (see
    /// [`World::edge_change`]). A `one` relation's old edge goes first; its
    /// data is dropped once the new edge is in.
    ///
    /// Either end's first edge inserts a component, which may bring
    /// components it requires (`World::register_required`): a panicking
    /// constructor of one stops that insert before anything changes. Then
    /// the new edge is not made at all (the end already done is undone):
    /// half an edge would name an entity that does not name it back.
    fn add_edge<R: Relationship>(
        &mut self,
        source: Entity,
        target: Entity,
        data: R,
        panics: &mut DeferredPanic,
    ) {
        let source_len = self.get_opt::<Relation<R>>(source).map_or(0, Relation::len);
        let replaced = if R::ONE && source_len > 0 {
            Some(self.remove_edge::<R>(source, 0, panics))
        } else {
            None
        };
        let pos_in_source = if R::ONE { 0 } else { source_len as u32 };
        let pos_in_target = match self.get_mut_opt::<Sources<R>>(target) {
            Some(s) => s.push(source, pos_in_source),
            None => {
                let fresh = Sources::<R>::single(source, pos_in_source);
                // The insert is whole before its announcements run, so one
                // that panics leaves a consistent list to build on.
                let done = panics.completes(|| {
                    self.insert_one(target, fresh)
                        .expect("target checked alive");
                });
                if !done && self.get_opt::<Sources<R>>(target).is_none() {
                    // A required component's constructor panicked: no
                    // edge. (No hook or observer ran, the insert having
                    // changed nothing.)
                    panics.run(move || drop((data, replaced)));
                    return;
                }
                0
            }
        };
        match self.get_mut_opt::<Relation<R>>(source) {
            Some(r) => {
                let m = r.many();
                m.targets.push(target);
                m.data.push(data);
            }
            None => {
                let fresh = Relation::single(target, pos_in_target, data);
                let done = panics.completes(|| {
                    self.insert_one(source, fresh)
                        .expect("source checked alive");
                });
                if !done && self.get_opt::<Relation<R>>(source).is_none() {
                    // As above (the insert dropped the data): the target's
                    // entry goes again.
                    self.remove_source_entry::<R>(target, pos_in_target as usize, panics);
                    panics.run(move || drop(replaced));
                    return;
                }
            }
        }
        self.relations_mut().bump::<R>();
        panics.run(|| self.announce_relation::<R>(source, target, true));
        panics.run(move || drop(replaced));
    }

    /// Runs `change`, an edge change of several steps (both ends of each
    /// edge, their components' lifecycle, `OnRelate`/`OnUnrelate`), to the
    /// end: `change` keeps the panics of user code (a drop, a hook, an
    /// observer) in its [`DeferredPanic`] and goes on, and no observer's
    /// command runs until the change is whole. Then the commands apply and
    /// the first panic goes on (dropping `change`'s result first, so a
    /// panicking drop of it is not a second panic).
    pub(crate) fn edge_change<T>(
        &mut self,
        change: impl FnOnce(&mut World, &mut DeferredPanic) -> T,
    ) -> T {
        let held = self.hold_observer_commands();
        let mut panics = DeferredPanic::new();
        let done = catch_unwind(AssertUnwindSafe(|| change(self, &mut panics)));
        self.release_observer_commands(held);
        let value = match done {
            Ok(value) => value,
            Err(payload) => resume_unwind(payload),
        };
        if panics.is_set() {
            panics.run(move || drop(value));
            panics.resume();
            unreachable!("a panic was kept");
        }
        self.flush_observer_commands();
        value
    }

    /// Removes the edge `source --R--> target` and returns its data: a
    /// swap-remove on both lists, O(1) once the edge is found (a scan of the
    /// shorter list; O(1) for a `one` relation). The entities keep their
    /// archetypes.
    ///
    /// Fails, changing nothing, if there is no such edge.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation, Debug, PartialEq)] struct Owes(u32);
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Owes(4)).unwrap();
    /// assert_eq!(world.unrelate::<Owes>(a, b), Ok(Owes(4)));
    /// assert!(!world.has_relation::<Owes>(a, b));
    /// assert!(!world.has::<Relation<Owes>>(a));
    /// ```
    pub fn unrelate<R: Relationship>(
        &mut self,
        source: Entity,
        target: Entity,
    ) -> Result<R, RelationError> {
        self.flush();
        let Some(i) = self.edge_index::<R>(source, target) else {
            return Err(RelationError::NotRelated {
                entity: source,
                target,
                relation: name_of::<R>(),
            });
        };
        Ok(self.edge_change(|world, panics| world.remove_edge::<R>(source, i, panics)))
    }

    /// Sorts `target`'s sources of relation `R` (its [`Sources<R>`]) by
    /// `key`, stably: the order [`World::sources`] and `&Sources<R>` give
    /// from now on, until an edit of the list (a removal swaps the last
    /// source into the gap). Nothing else changes: no edge is made or
    /// removed, no observer runs; the list counts as changed (`Changed`).
    /// [`World::sort_children_by_key`] is the hierarchy's form.
    ///
    /// Fails, changing nothing, if `target` is not alive.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// #[derive(Component)] struct Rank(u32);
    /// let mut world = World::new();
    /// let star = world.spawn(());
    /// let fans: Vec<Entity> = [3, 1, 2].map(|r| world.spawn(Rank(r))).into();
    /// for &f in &fans {
    ///     world.relate(f, star, Likes).unwrap();
    /// }
    /// let ranks: Vec<u32> = fans.iter().map(|&f| world.get::<Rank>(f).unwrap().0).collect();
    /// world.sort_sources_by_key::<Likes, _>(star, |f| ranks[fans.iter().position(|&x| x == f).unwrap()]).unwrap();
    /// assert_eq!(world.sources::<Likes>(star), [fans[1], fans[2], fans[0]]);
    /// ```
    pub fn sort_sources_by_key<R: Relationship, K: Ord>(
        &mut self,
        target: Entity,
        mut key: impl FnMut(Entity) -> K,
    ) -> Result<(), RelationError> {
        self.flush();
        if !self.contains(target) {
            return Err(RelationError::NoSuchEntity(target));
        }
        let sources = self.sources::<R>(target);
        if sources.len() < 2 {
            return Ok(());
        }
        let keys: Vec<K> = sources.iter().map(|&s| key(s)).collect();
        let mut perm: Vec<usize> = (0..keys.len()).collect();
        perm.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        if perm.iter().enumerate().all(|(j, &p)| j == p) {
            return Ok(());
        }
        let list = self
            .get_mut_opt::<Sources<R>>(target)
            .expect("it has two sources");
        list.permute(&perm);
        if R::ONE {
            // A `one` relation's source records its position in the list.
            let moved: Vec<Entity> = list.as_slice().to_vec();
            for (j, s) in moved.into_iter().enumerate() {
                *self
                    .edge_part_mut_unmarked::<Relation<R>>(s)
                    .expect("relation invariant: a source has its Relation")
                    .one_back_mut() = j as u32;
            }
        }
        self.relations_mut().bump::<R>();
        Ok(())
    }

    /// Removes every `R` edge from `source`; returns how many there were.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b, c) = (world.spawn(()), world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// world.relate(a, c, Likes).unwrap();
    /// assert_eq!(world.unrelate_all::<Likes>(a), 2);
    /// assert!(world.targets::<Likes>(a).is_empty());
    /// ```
    pub fn unrelate_all<R: Relationship>(&mut self, source: Entity) -> usize {
        self.flush();
        self.edge_change(|world, panics| {
            let mut n = 0;
            while let Some(r) = world.get_opt::<Relation<R>>(source) {
                let last = r.len() - 1;
                let data = world.remove_edge::<R>(source, last, panics);
                panics.run(move || drop(data));
                n += 1;
            }
            n
        })
    }

    /// The targets of `source` under `R` (empty if none, or if `source` is
    /// not alive).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// assert_eq!(world.targets::<Likes>(a), [b]);
    /// assert!(world.targets::<Likes>(b).is_empty());
    /// ```
    pub fn targets<R: Relationship>(&self, source: Entity) -> &[Entity] {
        self.get_opt::<Relation<R>>(source)
            .map_or(&[], Relation::targets)
    }

    /// The sources relating to `target` under `R` (empty if none, or if
    /// `target` is not alive).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// assert_eq!(world.sources::<Likes>(b), [a]);
    /// ```
    pub fn sources<R: Relationship>(&self, target: Entity) -> &[Entity] {
        self.get_opt::<Sources<R>>(target)
            .map_or(&[], Sources::as_slice)
    }

    /// True if the edge `source --R--> target` exists.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Likes).unwrap();
    /// assert!(world.has_relation::<Likes>(a, b));
    /// assert!(!world.has_relation::<Likes>(b, a));
    /// ```
    pub fn has_relation<R: Relationship>(&self, source: Entity, target: Entity) -> bool {
        self.edge_index::<R>(source, target).is_some()
    }

    /// The data of the edge `source --R--> target`, if it exists.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation, Debug, PartialEq)] struct Owes(u32);
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Owes(1)).unwrap();
    /// assert_eq!(world.relation::<Owes>(a, b), Some(&Owes(1)));
    /// ```
    pub fn relation<R: Relationship>(&self, source: Entity, target: Entity) -> Option<&R> {
        let i = self.edge_index::<R>(source, target)?;
        Some(&self.get_opt::<Relation<R>>(source)?.data()[i])
    }

    /// The data of the edge `source --R--> target`, mutably (marking the
    /// source's `Relation<R>` changed), if it exists.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation, Debug, PartialEq)] struct Owes(u32);
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// world.relate(a, b, Owes(1)).unwrap();
    /// world.relation_mut::<Owes>(a, b).unwrap().0 += 1;
    /// assert_eq!(world.relation::<Owes>(a, b), Some(&Owes(2)));
    /// ```
    pub fn relation_mut<R: Relationship>(
        &mut self,
        source: Entity,
        target: Entity,
    ) -> Option<&mut R> {
        const {
            assert!(
                !R::NAMES_TARGET,
                "this relation's edge data names its target (as `ChildOf(parent)` does): relate again to change it"
            )
        };
        let i = self.edge_index::<R>(source, target)?;
        Some(&mut self.get_mut_opt::<Relation<R>>(source)?.data_mut()[i])
    }

    /// Copies `original`'s outgoing edges for a copy of it (made by
    /// [`World::clone_entity`]), relation by relation, as each relation's
    /// [`Relationship::clone_behavior`] says. This copies the edges' data
    /// (user code that may panic) before the copy is spawned, so a panic
    /// there leaves no half-copied entity; [`World::relate_copies`] then
    /// gives them to the copy.
    pub(crate) fn copy_relations(&self, original: Entity) -> Vec<EdgeCopies> {
        self.relations()
            .kinds
            .iter()
            .filter_map(|kind| (kind.clone_edges)(self, original))
            .collect()
    }

    /// The second step of [`World::copy_relations`]: relates `copy` (just
    /// spawned) to each target with the copied data.
    pub(crate) fn relate_copies(&mut self, copies: Vec<EdgeCopies>, copy: Entity) {
        for relate in copies {
            relate(self, copy);
        }
    }

    /// A number that changes whenever an `R` edge is added, removed or has
    /// its data replaced through the world (for caches such as
    /// [`ParentFirst`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn(()), world.spawn(()));
    /// let before = world.relation_version::<Likes>();
    /// world.relate(a, b, Likes).unwrap();
    /// assert_ne!(world.relation_version::<Likes>(), before);
    /// ```
    pub fn relation_version<R: Relationship>(&self) -> u64 {
        self.relations().version::<R>()
    }

    /// If component `id` is one side of a relation type (its
    /// [`Relation<R>`] or its [`Sources<R>`]): the relation's short type
    /// name (`"ChildOf"`) and which side. For code that walks components by
    /// id without knowing `R`, such as a report of what a save left out,
    /// to name the relation once rather than as two components.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// use mosaic::RelationSide;
    /// #[derive(Component)] struct Name(&'static str);
    /// let mut world = World::new();
    /// let root = world.spawn(Name("root"));
    /// world.spawn_child(root, Name("leaf")).unwrap();
    /// let side = |id| world.relation_side(id);
    /// let edges = world.component_id::<Relation<ChildOf>>().unwrap();
    /// assert_eq!(side(edges), Some(("ChildOf", RelationSide::Edges)));
    /// assert_eq!(side(world.component_id::<Name>().unwrap()), None);
    /// ```
    pub fn relation_side(&self, id: ComponentId) -> Option<(&'static str, RelationSide)> {
        self.relations().side_of(id)
    }

    // ----- internals -----------------------------------------------------------------

    /// The entities a cascade despawns, decided on the graph alone, before
    /// any goes: `seeds` (sources whose target was despawned under an
    /// [`OnTargetDespawn::Despawn`] policy) and, in turn, the sources such
    /// a policy dooms with each of them; but not an entity that a source
    /// outside that set keeps alive ([`OnTargetDespawn::Refuse`]), nor
    /// what only such a survivor would doom. A refusing source that is
    /// doomed itself keeps nothing. Breadth first from the seeds (dead
    /// ones skipped), the order the caller despawns in. See
    /// [`World::decide_sweep`], the rule itself.
    pub(crate) fn decide_doomed(&self, seeds: Vec<Entity>) -> Vec<Entity> {
        self.decide_sweep(&[], seeds).cascade
    }

    /// Spares from every [`OnTargetDespawn::Despawn`] cascade, until
    /// [`World::end_spare`], the sources of `doomed`'s entities for which
    /// `keep` is true: a restore despawning the entities spawned since its
    /// snapshot takes none of the snapshot's with them (their edges to
    /// those entities go, as under `Unrelate`). Nothing is spared, and
    /// nothing allocated, without such an edge.
    pub(crate) fn spare_sources_of(&mut self, doomed: &[Entity], keep: impl Fn(Entity) -> bool) {
        let mut spared = Vec::new();
        for kind in &self.relations().kinds {
            if kind.policy == OnTargetDespawn::Despawn {
                for &e in doomed {
                    spared.extend((kind.sources_of)(self, e).iter().filter(|&&s| keep(s)));
                }
            }
        }
        self.relations_mut().spared = spared;
    }

    /// Ends [`World::spare_sources_of`].
    pub(crate) fn end_spare(&mut self) {
        self.relations_mut().spared = Vec::new();
    }

    /// The one refuse rule of every despawn (plain, recursive, of a
    /// state's scope, a cascade), decided on the graph alone, before any
    /// entity goes. `named` are the entities the operation names (a
    /// despawned entity, the subtrees of a recursive despawn: alive,
    /// distinct), which go whole or not at all; `seeds` are sources a
    /// cascade dooms. The doomed set is `named`, `seeds`, and in turn the
    /// sources that [`OnTargetDespawn::Despawn`] policies doom with any of
    /// them; a cascaded entity that a source outside the doomed set keeps
    /// alive ([`OnTargetDespawn::Refuse`]) stays, with what only it would
    /// doom. The answer is the largest such set, found by leaving
    /// survivors out until none is left to find, so it does not depend on
    /// the order the edges were made in. Then each named entity that a
    /// source outside the final set keeps alive is refused: a refusing
    /// source that goes too keeps nothing.
    pub(crate) fn decide_sweep(&self, named: &[Entity], seeds: Vec<Entity>) -> Sweep {
        let kinds = &self.relations().kinds;
        let pins = |doomed: &rustc_hash::FxHashSet<Entity>, e: Entity| {
            kinds
                .iter()
                .filter(|k| k.policy == OnTargetDespawn::Refuse)
                .find(|k| (k.sources_of)(self, e).iter().any(|s| !doomed.contains(s)))
                .map(|k| k.name)
        };
        // Spared entities are kept as if pinned: never doomed, and what
        // only they would doom stays too.
        let mut kept: rustc_hash::FxHashSet<Entity> =
            self.relations().spared.iter().copied().collect();
        loop {
            let mut doomed: rustc_hash::FxHashSet<Entity> = named.iter().copied().collect();
            // The named entities first (their own cascades), then the
            // seeds and what each dooms, breadth first.
            let mut order: Vec<Entity> = named.to_vec();
            for &s in &seeds {
                if self.contains(s) && !kept.contains(&s) && doomed.insert(s) {
                    order.push(s);
                }
            }
            let mut i = 0;
            while i < order.len() {
                let e = order[i];
                i += 1;
                for kind in kinds
                    .iter()
                    .filter(|k| k.policy == OnTargetDespawn::Despawn)
                {
                    for &s in (kind.sources_of)(self, e) {
                        if !kept.contains(&s) && doomed.insert(s) {
                            order.push(s);
                        }
                    }
                }
            }
            let before = kept.len();
            for &e in &order[named.len()..] {
                if pins(&doomed, e).is_some() {
                    kept.insert(e);
                }
            }
            if kept.len() == before {
                let refused = named
                    .iter()
                    .filter_map(|&e| pins(&doomed, e).map(|r| (e, r)))
                    .collect();
                order.drain(..named.len());
                return Sweep {
                    cascade: order,
                    refused,
                };
            }
        }
    }

    /// True if `to` is `from` or can be reached from it by following `R`
    /// edges from source to target (for [`Relationship::ACYCLIC`]).
    fn reaches<R: Relationship>(&self, from: Entity, to: Entity) -> bool {
        if from == to {
            return true;
        }
        // Only an entity with incoming edges can be reached: building a
        // tree downwards (a fresh child under anything) costs no walk.
        if self.get_opt::<Sources<R>>(to).is_none() {
            return false;
        }
        if R::ONE {
            return self.reaches_one::<R>(from, to);
        }
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack = vec![from];
        seen.insert(from);
        while let Some(e) = stack.pop() {
            for &t in self.targets::<R>(e) {
                if t == to {
                    return true;
                }
                if seen.insert(t) {
                    stack.push(t);
                }
            }
        }
        false
    }

    /// [`World::reaches`] for a `one` relation (a forest): is `to` an
    /// ancestor of `from`? Two walks in lockstep, one step each in turn:
    /// up from `from` through its targets, and down from `to` through its
    /// sources (breadth first, one entity a step), until one finds the
    /// other end or runs out. So the cost is about twice the smaller of
    /// `from`'s depth and `to`'s subtree: O(1) when a tree is built in any
    /// order of whole chains (top down, `to` has no sources; bottom up,
    /// `from` has no target; a loader alternating between the two, both
    /// small), where walking up alone costs the depth on every edge.
    fn reaches_one<R: Relationship>(&self, from: Entity, to: Entity) -> bool {
        // Up: acyclic (every edge was checked), but bounded by the entity
        // count all the same.
        let mut up = Some(from);
        let mut up_steps = 0usize;
        // Down: the node whose sources are being listed, and the next one;
        // then the nodes met with sources of their own (allocated only
        // once the subtree is two levels deep: leaves are not queued).
        let mut current = Some((to, 0usize));
        let mut later = std::collections::VecDeque::new();
        loop {
            match up {
                Some(e) => match self.get_opt::<Relation<R>>(e) {
                    Some(rel) if rel.target() == to => return true,
                    Some(rel) if up_steps <= self.len() => {
                        up_steps += 1;
                        up = Some(rel.target());
                    }
                    _ => return false,
                },
                None => return false,
            }
            // One entity of `to`'s subtree.
            let Some((node, next)) = &mut current else {
                return false;
            };
            match self.sources::<R>(*node).get(*next) {
                Some(&s) => {
                    *next += 1;
                    if s == from {
                        return true;
                    }
                    if self.get_opt::<Sources<R>>(s).is_some() {
                        later.push_back(s);
                    }
                }
                None => current = later.pop_front().map(|e| (e, 0)),
            }
        }
    }

    /// The position of `target` in `source`'s targets: O(1) expected. A
    /// `one` relation's source has one target. Otherwise the target's list
    /// of sources is indexed once it is longer than [`INDEX_AT`], so either
    /// that index answers, or one of the two lists is short and scanned
    /// (the shorter one, at most [`INDEX_AT`] entries).
    fn edge_index<R: Relationship>(&self, source: Entity, target: Entity) -> Option<usize> {
        let rel = self.get_opt::<Relation<R>>(source)?;
        if R::ONE {
            return (rel.target() == target).then_some(0);
        }
        let src = self.get_opt::<Sources<R>>(target)?;
        let scan_targets = if src.indexed() {
            // A few targets compare faster than one hash lookup.
            rel.len() <= 8
        } else {
            rel.len() <= src.len()
        };
        if scan_targets {
            rel.targets().iter().position(|&t| t == target)
        } else {
            let j = src.position(source)?;
            Some(src.back_of(j) as usize)
        }
    }

    fn relation_mut_of<R: Relationship>(&mut self, source: Entity) -> &mut Relation<R> {
        self.get_mut_opt::<Relation<R>>(source)
            .expect("relation invariant: the source of an edge has its Relation")
    }

    /// Removes edge `i` of `source`'s `R` list from both sides; drops the
    /// components that become empty. Returns the edge data. Panics of user
    /// code go to `panics` (see [`World::edge_change`]).
    fn remove_edge<R: Relationship>(
        &mut self,
        source: Entity,
        i: usize,
        panics: &mut DeferredPanic,
    ) -> R {
        let (target, j, data) = if R::ONE {
            let rel = self
                .remove_edge_part::<Relation<R>>(source, panics)
                .expect("relation invariant: the source of an edge has its Relation");
            match rel.edges {
                Edges::One(t, j, d) => (t, j, d),
                Edges::Many(_) => unreachable!("a `one` relation keeps its edge inline"),
            }
        } else {
            let m = self.relation_mut_of::<R>(source).many();
            let target = m.targets.swap_remove(i);
            let data = m.data.swap_remove(i);
            let moved = m.targets.get(i).copied();
            let empty = m.targets.is_empty();
            if let Some(moved_target) = moved {
                // The source's last edge took slot `i`: its target's record
                // of it must say so.
                self.fix_back_of::<R>(moved_target, source, i as u32);
            }
            if empty {
                self.remove_edge_part::<Relation<R>>(source, panics)
                    .expect("present just above");
            }
            let j = self.source_position::<R>(target, source);
            (target, j as u32, data)
        };
        self.remove_source_entry::<R>(target, j as usize, panics);
        self.relations_mut().bump::<R>();
        panics.run(|| self.announce_relation::<R>(source, target, false));
        data
    }

    fn sources_mut_of<R: Relationship>(&mut self, target: Entity) -> &mut Sources<R> {
        self.get_mut_opt::<Sources<R>>(target)
            .expect("relation invariant: the target of an edge has its Sources")
    }

    /// Records `back` as `target`'s position in `source`'s [`Relation`]
    /// (the last target took a removed one's place there). The target's
    /// sources are the same: not marked changed.
    fn fix_back_of<R: Relationship>(&mut self, target: Entity, source: Entity, back: u32) {
        self.edge_part_mut_unmarked::<Sources<R>>(target)
            .expect("relation invariant: the target of an edge has its Sources")
            .set_back_of(source, back);
    }

    /// `source`'s position in `target`'s `R` sources (an edge joins them).
    fn source_position<R: Relationship>(&self, target: Entity, source: Entity) -> usize {
        self.get_opt::<Sources<R>>(target)
            .and_then(|src| src.position(source))
            .expect("relation invariant: a target lists each of its sources")
    }

    /// Removes entry `j` of `target`'s `R` sources, fixing the back index
    /// of the entry the swap moved (a `one` relation's source keeps one);
    /// drops the component if it empties.
    fn remove_source_entry<R: Relationship>(
        &mut self,
        target: Entity,
        j: usize,
        panics: &mut DeferredPanic,
    ) {
        let src = self.sources_mut_of::<R>(target);
        if !src.swap_remove(j) {
            self.remove_edge_part::<Sources<R>>(target, panics)
                .expect("present just above");
            return;
        }
        if R::ONE {
            if let Some(&moved_source) = src.as_slice().get(j) {
                // Where its edge sits in the list, not the edge: not a
                // change of the moved source's `Relation`.
                *self
                    .edge_part_mut_unmarked::<Relation<R>>(moved_source)
                    .expect("relation invariant: a source has its Relation")
                    .one_back_mut() = j as u32;
            }
        }
    }

    /// Triggers [`OnRelate`] or [`OnUnrelate`] for `source`, if anything
    /// observes it.
    fn announce_relation<R: Relationship>(&mut self, source: Entity, target: Entity, added: bool) {
        if added {
            if self.has_observers::<OnRelate<R>>() {
                self.trigger_for(source, OnRelate::<R>::new(source, target));
            }
        } else if self.has_observers::<OnUnrelate<R>>() {
            self.trigger_for(source, OnUnrelate::<R>::new(source, target));
        }
    }
}

/// Removes every `R` edge of `entity` (about to be despawned). Each edge
/// is announced first ([`OnUnrelate`]), while the world is whole, as
/// [`World::clear`] does: observers read both ends and all their edges
/// (a child's observer finds its dying parent's own parent, to move up
/// to). Then the entity's own lists are taken out (quietly: its despawn
/// announced the removal of all its components), the other side of each
/// edge is fixed, and the sources of `entity` as a target are handled by
/// `R`'s policy (those to despawn go into `pending`). Panics of user code
/// (edge data's drop, hooks, observers) go to `panics`: every edge goes
/// all the same.
fn detach<R: Relationship>(
    world: &mut World,
    entity: Entity,
    pending: &mut Vec<Entity>,
    panics: &mut DeferredPanic,
) {
    if world.has_observers::<OnUnrelate<R>>() {
        // Observers cannot edit edges (their commands wait, and the edge
        // components are immutable): the lists stay as read here.
        let outgoing = world.targets::<R>(entity).to_vec();
        let incoming = world.sources::<R>(entity).to_vec();
        for t in outgoing {
            panics.run(|| world.announce_relation::<R>(entity, t, false));
        }
        // A self edge was announced as outgoing.
        for s in incoming.into_iter().filter(|&s| s != entity) {
            panics.run(|| world.announce_relation::<R>(s, entity, false));
        }
    }
    let mut touched = false;
    // A self edge leaves this entity's sources list with the rest of it,
    // below: it is not fixed up for it here.
    if let Some(rel) = world.take_edge_part_quietly::<Relation<R>>(entity) {
        for &t in rel.targets() {
            if t != entity {
                let j = match &rel.edges {
                    Edges::One(_, j, _) => *j as usize,
                    Edges::Many(_) => world.source_position::<R>(t, entity),
                };
                world.remove_source_entry::<R>(t, j, panics);
            }
        }
        panics.run(move || drop(rel));
        touched = true;
    }
    if let Some(mut src) = world.take_edge_part_quietly::<Sources<R>>(entity) {
        let (sources, back) = src.take();
        for (&s, &i) in sources.iter().zip(&back) {
            if s == entity {
                continue;
            }
            if R::ONE {
                let rel = world
                    .remove_edge_part::<Relation<R>>(s, panics)
                    .expect("relation invariant: a source has its Relation");
                panics.run(move || drop(rel));
            } else {
                let i = i as usize;
                let m = world.relation_mut_of::<R>(s).many();
                m.targets.swap_remove(i);
                let data = m.data.swap_remove(i);
                let moved = m.targets.get(i).copied();
                let empty = m.targets.is_empty();
                if let Some(moved_target) = moved {
                    world.fix_back_of::<R>(moved_target, s, i as u32);
                }
                if empty {
                    world
                        .remove_edge_part::<Relation<R>>(s, panics)
                        .expect("present just above");
                }
                panics.run(move || drop(data));
            }
            if R::ON_TARGET_DESPAWN == OnTargetDespawn::Despawn {
                pending.push(s);
            }
        }
        touched = true;
    }
    if touched {
        world.relations_mut().bump::<R>();
    }
}

/// Triggers [`OnUnrelate`] for every `R` edge, if anything observes it:
/// the world is about to be cleared, every edge with it (both ends still
/// alive now). Returns true if it announced anything.
fn announce_cleared<R: Relationship>(world: &mut World) -> bool {
    if !world.has_observers::<OnUnrelate<R>>() {
        return false;
    }
    let Some((relation_id, _)) = world.relations().ids::<R>() else {
        return false;
    };
    let sources = world
        .sparse_sets()
        .get(relation_id)
        .map_or_else(Vec::new, |set| set.entities().to_vec());
    let edges: Vec<(Entity, Entity)> = sources
        .iter()
        .flat_map(|&s| world.targets::<R>(s).iter().map(move |&t| (s, t)))
        .collect();
    for &(source, target) in &edges {
        world.announce_relation::<R>(source, target, false);
    }
    !edges.is_empty()
}

/// The `R` edges of one entity's copy, data copied, waiting for the copy
/// to be spawned (see [`World::copy_relations`]).
pub(crate) type EdgeCopies = Box<dyn FnOnce(&mut World, Entity)>;

/// Copies of `original`'s `R` edges (its targets, and the data
/// [`Relationship::clone_behavior`] makes; none if it says `Skip`), to
/// give a copy of `original` once it is spawned.
fn clone_edges<R: Relationship>(world: &World, original: Entity) -> Option<EdgeCopies> {
    let behavior = R::clone_behavior();
    if matches!(behavior, CloneBehavior::Skip) {
        return None;
    }
    let rel = world.get_opt::<Relation<R>>(original)?;
    let edges: Vec<(Entity, R)> = rel
        .iter()
        .map(|(t, d)| {
            let data = match behavior {
                CloneBehavior::Clone(f) => f(d),
                CloneBehavior::Default(f) => f(),
                CloneBehavior::Skip => unreachable!("returned above"),
            };
            (t, data)
        })
        .collect();
    Some(Box::new(move |world: &mut World, copy: Entity| {
        for (t, data) in edges {
            // Every target is alive (no edge names a dead entity) and the
            // copy has no incoming edge, so no cycle; an observer of the
            // spawn or of an earlier edge may have despawned either end:
            // then no edge.
            let _ = world.relate(copy, t, data);
        }
    }))
}

/// Panics unless both sides of every `R` edge agree: each edge of a source
/// names a live target whose sources list has the source at the recorded
/// position (and records the edge's position back), and the other way
/// round; no list is empty; a `one` relation has one target per source.
fn check<R: Relationship>(world: &World) {
    let name = short_type_name::<R>();
    let Some((relation_id, sources_id)) = world.relations().ids::<R>() else {
        return;
    };
    let mut edges = 0usize;
    if let Some(set) = world.sparse_sets().get(relation_id) {
        for &s in set.entities() {
            let rel = world.get_opt::<Relation<R>>(s).expect("in the set");
            assert!(world.contains(s), "{name}: dead source {s:?}");
            assert!(!rel.is_empty(), "{name}: empty Relation on {s:?}");
            assert_eq!(
                R::ONE,
                matches!(rel.edges, Edges::One(..)),
                "{name}: layout"
            );
            assert_eq!(rel.len(), rel.data().len(), "{name}: data list of {s:?}");
            for (i, &t) in rel.targets().iter().enumerate() {
                assert!(world.contains(t), "{name}: edge {s:?} -> dead {t:?}");
                let src = world
                    .get_opt::<Sources<R>>(t)
                    .expect("a target has Sources");
                if let Edges::One(_, j, _) = &rel.edges {
                    let j = *j as usize;
                    assert_eq!(src.get(j), Some(&s), "{name}: back index of {s:?} -> {t:?}");
                } else {
                    let j = src.position(s);
                    assert!(j.is_some(), "{name}: {t:?} does not list its source {s:?}");
                    let j = j.unwrap_or_default();
                    assert_eq!(
                        src.back_of(j) as usize,
                        i,
                        "{name}: back index of {t:?} in {s:?}"
                    );
                }
                edges += 1;
            }
        }
    }
    let mut incoming = 0usize;
    if let Some(set) = world.sparse_sets().get(sources_id) {
        for &t in set.entities() {
            let src = world.get_opt::<Sources<R>>(t).expect("in the set");
            assert!(world.contains(t), "{name}: dead target {t:?}");
            assert!(!src.is_empty(), "{name}: empty Sources on {t:?}");
            if let SourceList::Many(m) = &src.list {
                assert!(m.sources.len() > 1, "{name}: a list of one source on {t:?}");
                assert_eq!(m.back.len(), if R::ONE { 0 } else { m.sources.len() });
                match &m.index {
                    Some(index) => {
                        assert!(!R::ONE, "{name}: an indexed `one` list on {t:?}");
                        assert_eq!(index.len(), m.sources.len(), "{name}: index size");
                        for (j, &s) in m.sources.iter().enumerate() {
                            assert_eq!(m.position(s), Some(j), "{name}: index of {s:?}");
                        }
                    }
                    None => assert!(
                        R::ONE || m.sources.len() <= INDEX_AT,
                        "{name}: a long list without an index on {t:?}"
                    ),
                }
            }
            for &s in src.iter() {
                assert!(world.contains(s), "{name}: {t:?} lists dead source {s:?}");
                incoming += 1;
            }
        }
    }
    assert_eq!(
        edges, incoming,
        "{name}: the two sides count different edges"
    );
}

/// A `'static` short name for `R`, made once per type (for error values).
fn name_of<R: 'static>() -> &'static str {
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<FxHashMap<TypeId, &'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    names
        .entry(TypeId::of::<R>())
        .or_insert_with(|| short_type_name::<R>().leak())
}

/// Event triggered (for the source, see
/// [`World::observe_entity`](crate::World::observe_entity)) when an `R`
/// edge is added.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::OnRelate;
/// #[derive(Relation)] struct Likes;
/// #[derive(Default)] struct Count(u32);
/// let mut world = World::new();
/// world.insert_resource(Count::default());
/// world.observe(|t: Trigger<OnRelate<Likes>>, mut w: DeferredWorld| {
///     assert_ne!(t.event().source, t.event().target);
///     w.resource_mut::<Count>().0 += 1;
/// });
/// let (a, b) = (world.spawn(()), world.spawn(()));
/// world.relate(a, b, Likes).unwrap();
/// assert_eq!(world.resource::<Count>().0, 1);
/// ```
pub struct OnRelate<R> {
    /// The edge's source.
    pub source: Entity,
    /// The edge's target.
    pub target: Entity,
    relation: PhantomData<fn() -> R>,
}

/// Event triggered (for the source) when an `R` edge is removed: by
/// [`World::unrelate`] or a `one` relation's replacement (observers find
/// the edge gone), or because either end was despawned or the world
/// cleared (observers find the dying entity alive with all its `R` edges,
/// this one included, so a child can still find its dying parent's own
/// parent; its edges of other relations may be gone already). Either way
/// both ends agree on every edge they name.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::OnUnrelate;
/// #[derive(Relation)] struct Likes;
/// #[derive(Default)] struct Gone(Vec<Entity>);
/// let mut world = World::new();
/// world.insert_resource(Gone::default());
/// world.observe(|t: Trigger<OnUnrelate<Likes>>, mut w: DeferredWorld| {
///     let target = t.event().target;
///     w.resource_mut::<Gone>().0.push(target);
/// });
/// let (a, b) = (world.spawn(()), world.spawn(()));
/// world.relate(a, b, Likes).unwrap();
/// world.despawn(b).unwrap();
/// assert_eq!(world.resource::<Gone>().0, [b]);
/// ```
pub struct OnUnrelate<R> {
    /// The edge's source.
    pub source: Entity,
    /// The edge's target.
    pub target: Entity,
    relation: PhantomData<fn() -> R>,
}

macro_rules! edge_event {
    ($name:ident) => {
        impl<R> $name<R> {
            fn new(source: Entity, target: Entity) -> Self {
                $name {
                    source,
                    target,
                    relation: PhantomData,
                }
            }
        }

        impl<R> fmt::Debug for $name<R> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(&format!(
                    "{}<{}>",
                    stringify!($name),
                    short_type_name::<R>()
                ))
                .field("source", &self.source)
                .field("target", &self.target)
                .finish()
            }
        }
    };
}
edge_event!(OnRelate);
edge_event!(OnUnrelate);

impl EntityWorldMut<'_> {
    /// Adds the edge `self --R--> target` (see [`World::relate`]).
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Relation)] struct Likes;
    /// let mut world = World::new();
    /// let b = world.spawn(());
    /// let a = world.spawn(());
    /// world.entity_mut(a).unwrap().relate(b, Likes).unwrap();
    /// assert!(world.has_relation::<Likes>(a, b));
    /// ```
    pub fn relate<R: Relationship>(
        &mut self,
        target: Entity,
        data: R,
    ) -> Result<&mut Self, RelationError> {
        let id = self.id();
        self.world_mut_internal().relate(id, target, data)?;
        Ok(self)
    }
}

/// Remembers which world and version a cache was built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    world: WorldId,
    version: u64,
}
