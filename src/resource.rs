//! Resources: typed singletons that belong to the world rather than to an
//! entity (the frame's [`Time`](crate::Time), a score, a random generator).
//!
//! Any `Send + Sync + 'static` type is a resource; no derive is needed.
//! Systems borrow them with [`Res`] and [`ResMut`]; the scheduler lets many
//! readers or one writer of a resource run at once.

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::component::short_type_name;
use crate::query::TickRange;
use crate::storage::ResourceTicks;
use crate::world::World;

/// What a resource is: any `Send + Sync + 'static` type (implemented for
/// all of them). `#[derive(Resource)]`, Bevy's habit, compiles and only
/// checks that bound; a generic function over resources may say
/// `R: Resource`.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Resource, Default)]
/// struct Score(u32);
/// fn reset<R: Resource + Default>(world: &mut World) {
///     world.insert_resource(R::default());
/// }
/// let mut world = World::new();
/// world.insert_resource(Score(9));
/// reset::<Score>(&mut world);
/// assert_eq!(world.resource::<Score>().0, 0);
/// ```
pub trait Resource: Send + Sync + 'static {}

impl<T: Send + Sync + 'static> Resource for T {}

impl World {
    /// Stores `value` as the world's `R`, replacing (and dropping) any `R`
    /// it had.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(42u32);
    /// assert_eq!(*world.resource::<u32>(), 42);
    /// ```
    pub fn insert_resource<R: Send + Sync + 'static>(&mut self, value: R) {
        let tick = self.change_tick();
        self.resources_mut().insert(value, tick);
    }

    /// The world's `R`.
    ///
    /// Panics, naming `R`, if there is none: use [`World::get_resource`]
    /// when it may be missing.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(String::from("level 1"));
    /// assert_eq!(world.resource::<String>(), "level 1");
    /// ```
    pub fn resource<R: Send + Sync + 'static>(&self) -> &R {
        self.get_resource::<R>()
            .unwrap_or_else(|| missing_resource::<R>())
    }

    /// The world's `R`, mutably. Counts as a change of `R` (for
    /// [`Res::is_changed`] and [`resource_changed`](crate::resource_changed)),
    /// as do [`World::get_resource_mut`] and `resource_or_default`.
    ///
    /// Panics, naming `R`, if there is none: use
    /// [`World::get_resource_mut`] when it may be missing.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(1u32);
    /// *world.resource_mut::<u32>() += 1;
    /// assert_eq!(*world.resource::<u32>(), 2);
    /// ```
    pub fn resource_mut<R: Send + Sync + 'static>(&mut self) -> &mut R {
        self.get_resource_mut::<R>()
            .unwrap_or_else(|| missing_resource::<R>())
    }

    /// The world's `R`, if it has one.
    ///
    /// # Example
    /// ```
    /// let world = mosaic::World::new();
    /// assert!(world.get_resource::<u32>().is_none());
    /// ```
    pub fn get_resource<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.resources().get::<R>()
    }

    /// The world's `R`, mutably, if it has one.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(1u32);
    /// if let Some(n) = world.get_resource_mut::<u32>() {
    ///     *n = 5;
    /// }
    /// assert_eq!(*world.resource::<u32>(), 5);
    /// ```
    pub fn get_resource_mut<R: Send + Sync + 'static>(&mut self) -> Option<&mut R> {
        let tick = self.change_tick();
        self.resources_mut().get_mut::<R>(tick)
    }

    /// Takes the world's `R` out, if it has one.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(7u8);
    /// assert_eq!(world.remove_resource::<u8>(), Some(7));
    /// assert!(!world.contains_resource::<u8>());
    /// ```
    pub fn remove_resource<R: Send + Sync + 'static>(&mut self) -> Option<R> {
        self.resources_mut().remove::<R>()
    }

    /// True if the world has an `R`.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(7u8);
    /// assert!(world.contains_resource::<u8>());
    /// ```
    pub fn contains_resource<R: Send + Sync + 'static>(&self) -> bool {
        self.resources().contains::<R>()
    }

    /// `R`'s id in this world, if the world has seen `R` (inserted, or named
    /// by a system).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// assert!(world.resource_id::<u8>().is_none());
    /// world.insert_resource(1u8);
    /// assert!(world.resource_id::<u8>().is_some());
    /// ```
    pub fn resource_id<R: Send + Sync + 'static>(&self) -> Option<crate::ResourceId> {
        self.resources().id_of::<R>()
    }

    /// The resources the world holds now: each one's id and short type
    /// name, in id order (for inspectors and debugging).
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(1u8);
    /// world.insert_resource(2u16);
    /// world.remove_resource::<u8>();
    /// let names: Vec<&str> = world.resource_names().map(|(_, name)| name).collect();
    /// assert_eq!(names, ["u16"]);
    /// ```
    pub fn resource_names(&self) -> impl Iterator<Item = (crate::ResourceId, &str)> + '_ {
        self.resources().present()
    }

    /// The short type name of resource `id` (whether or not the world
    /// holds it now), or `None` for an id this world never gave.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// world.insert_resource(7u32);
    /// let id = world.resource_id::<u32>().unwrap();
    /// assert_eq!(world.resource_name(id), Some("u32"));
    /// ```
    pub fn resource_name(&self, id: crate::ResourceId) -> Option<&str> {
        self.resources().get_name(id)
    }

    /// The world's `R`, inserting `R::default()` first if it has none.
    ///
    /// # Example
    /// ```
    /// let mut world = mosaic::World::new();
    /// *world.resource_or_default::<u32>() += 3;
    /// assert_eq!(*world.resource::<u32>(), 3);
    /// ```
    pub fn resource_or_default<R: Default + Send + Sync + 'static>(&mut self) -> &mut R {
        if !self.contains_resource::<R>() {
            self.insert_resource(R::default());
        }
        self.resource_mut::<R>()
    }
}

/// A value made from the world: what [`World::init_resource`] makes when
/// the world has none. Every `Default` type is one (made with
/// `Default::default()`); implement it for a resource whose first value
/// depends on the world (another resource, the entities).
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// use mosaic::FromWorld;
/// struct Difficulty(u32);
/// struct Spawner { per_wave: u32 }
/// impl FromWorld for Spawner {
///     fn from_world(world: &mut World) -> Self {
///         Spawner { per_wave: 5 * world.resource::<Difficulty>().0 }
///     }
/// }
/// let mut world = World::new();
/// world.insert_resource(Difficulty(2));
/// world.init_resource::<Spawner>();
/// assert_eq!(world.resource::<Spawner>().per_wave, 10);
/// ```
pub trait FromWorld {
    /// Makes the value, reading (or changing) `world`.
    fn from_world(world: &mut World) -> Self;
}

impl<T: Default> FromWorld for T {
    fn from_world(_world: &mut World) -> Self {
        T::default()
    }
}

impl World {
    /// Inserts `R` made by [`FromWorld`] (`R::default()` for a `Default`
    /// type) unless the world already has one, which is kept. Returns
    /// `R`'s id. (Bevy's name; [`World::resource_or_default`] also hands
    /// the value back.)
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Default)] struct Score(u32);
    /// let mut world = World::new();
    /// world.init_resource::<Score>();
    /// world.resource_mut::<Score>().0 = 7;
    /// world.init_resource::<Score>(); // already there: kept
    /// assert_eq!(world.resource::<Score>().0, 7);
    /// ```
    pub fn init_resource<R: FromWorld + Send + Sync + 'static>(&mut self) -> crate::ResourceId {
        if !self.contains_resource::<R>() {
            let value = R::from_world(self);
            // `from_world` may have inserted an `R` itself: the one made
            // here wins, as an `insert_resource` after it would.
            self.insert_resource(value);
        }
        self.resources_mut().register::<R>()
    }

    /// Runs `f` with the world and its `R` taken out of it, so `f` may use
    /// both at once (a resource holding the world's map, say), then puts
    /// `R` back, counted as changed. Returns what `f` returns.
    ///
    /// Panics, naming `R`, if there is none. While `f` runs the world has
    /// no `R`; one that `f` inserts is dropped when the scope's value goes
    /// back. If `f` panics, `R` goes back before the panic goes on.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// #[derive(Component)] struct Gold(u32);
    /// struct Bank(u32);
    /// let mut world = World::new();
    /// world.insert_resource(Bank(0));
    /// world.spawn_batch([Gold(3), Gold(4)]);
    /// world.resource_scope(|world, bank: &mut Bank| {
    ///     let mut q = world.query::<&Gold>();
    ///     bank.0 = q.iter(world).map(|g| g.0).sum();
    /// });
    /// assert_eq!(world.resource::<Bank>().0, 7);
    /// ```
    #[track_caller]
    pub fn resource_scope<R: Send + Sync + 'static, U>(
        &mut self,
        f: impl FnOnce(&mut World, &mut R) -> U,
    ) -> U {
        let mut value = self
            .resources_mut()
            .remove::<R>()
            .unwrap_or_else(|| missing_resource::<R>());
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self, &mut value)));
        let tick = self.change_tick();
        let inserted_meanwhile = self.resources_mut().restore(value, tick);
        drop(inserted_meanwhile);
        match result {
            Ok(out) => out,
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }
}

#[cold]
#[track_caller]
pub(crate) fn missing_resource<R>() -> ! {
    panic!(
        "resource `{}` does not exist in this world; insert it with `World::insert_resource` \
         (or read it with `get_resource` / `Option<Res<_>>` where it may be missing)",
        short_type_name::<R>()
    )
}

/// Shared access to resource `R` in a system.
///
/// A system with a `Res<R>` parameter panics (naming `R` and the system) if
/// the world has no `R` when it runs; use `Option<Res<R>>` where it may be
/// missing.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// struct Gravity(f32);
/// let mut world = World::new();
/// world.insert_resource(Gravity(9.8));
/// let g = world.run_system_once(|g: Res<Gravity>| g.0);
/// assert_eq!(g, 9.8);
/// ```
pub struct Res<'w, R> {
    pub(crate) value: &'w R,
    pub(crate) ticks: &'w ResourceTicks,
    pub(crate) run: TickRange,
}

impl<R> Res<'_, R> {
    /// True if `R` was inserted or changed (through a `ResMut`, or
    /// `World::resource_mut`) since this system's previous run; always true
    /// on its first run.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(1u32);
    /// let mut schedule = Schedule::new();
    /// schedule.add_system("watch", |n: Res<u32>, mut seen: ResMut<Vec<bool>>| seen.push(n.is_changed()));
    /// world.insert_resource(Vec::<bool>::new());
    /// schedule.run(&mut world);
    /// schedule.run(&mut world);
    /// *world.resource_mut::<u32>() += 1;
    /// schedule.run(&mut world);
    /// assert_eq!(*world.resource::<Vec<bool>>(), [true, false, true]);
    /// ```
    pub fn is_changed(&self) -> bool {
        self.ticks
            .changed()
            .is_newer_than(self.run.last_run, self.run.this_run)
    }

    /// True if `R` was inserted since this system's previous run.
    ///
    /// # Example
    /// ```
    /// use mosaic::prelude::*;
    /// let mut world = World::new();
    /// world.insert_resource(1u32);
    /// assert!(world.run_system_once(|n: Res<u32>| n.is_added()));
    /// ```
    pub fn is_added(&self) -> bool {
        self.ticks
            .added()
            .is_newer_than(self.run.last_run, self.run.this_run)
    }
}

impl<R> Deref for Res<'_, R> {
    type Target = R;
    #[inline]
    fn deref(&self) -> &R {
        self.value
    }
}

impl<R: fmt::Debug> fmt::Debug for Res<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Res").field(self.value).finish()
    }
}

/// Exclusive access to resource `R` in a system.
///
/// # Example
/// ```
/// use mosaic::prelude::*;
/// #[derive(Default)]
/// struct Score(u32);
/// let mut world = World::new();
/// world.insert_resource(Score(0));
/// world.run_system_once(|mut s: ResMut<Score>| s.0 += 10);
/// assert_eq!(world.resource::<Score>().0, 10);
/// ```
///
/// Writing through it (`DerefMut`) marks `R` changed, for
/// [`Res::is_changed`] and the [`resource_changed`](crate::resource_changed)
/// run condition.
pub struct ResMut<'w, R> {
    pub(crate) value: &'w mut R,
    pub(crate) ticks: &'w ResourceTicks,
    pub(crate) run: TickRange,
}

impl<R> Deref for ResMut<'_, R> {
    type Target = R;
    #[inline]
    fn deref(&self) -> &R {
        self.value
    }
}

impl<R> DerefMut for ResMut<'_, R> {
    #[inline]
    fn deref_mut(&mut self) -> &mut R {
        self.ticks.set_changed(self.run.this_run);
        self.value
    }
}

impl<R: fmt::Debug> fmt::Debug for ResMut<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ResMut").field(&*self.value).finish()
    }
}

impl<R> crate::DetectChanges for Res<'_, R> {
    fn is_added(&self) -> bool {
        Res::is_added(self)
    }

    fn is_changed(&self) -> bool {
        Res::is_changed(self)
    }
}

impl<R> crate::DetectChanges for ResMut<'_, R> {
    fn is_added(&self) -> bool {
        self.ticks
            .added()
            .is_newer_than(self.run.last_run, self.run.this_run)
    }

    fn is_changed(&self) -> bool {
        self.ticks
            .changed()
            .is_newer_than(self.run.last_run, self.run.this_run)
    }
}

impl<R> crate::DetectChangesMut for ResMut<'_, R> {
    type Inner = R;

    fn set_changed(&mut self) {
        self.ticks.set_changed(self.run.this_run);
    }

    fn bypass_change_detection(&mut self) -> &mut R {
        self.value
    }
}
