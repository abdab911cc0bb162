//! The mosaic showcase: the classic ECS scenarios, played headless.
//!
//! A small side-view level (`assets/default.ron`): trees that stand still,
//! particles that glow and fly, monsters and wisps with AI, a player, and a
//! ghost power-up. Each behaviour is one named system in [`systems`]; a
//! [`Schedule`] orders them; a [`Director`] switches input off and on at
//! fixed frames and casts the spell by sending a [`CastSpell`] event, which
//! the `spell` system's run condition (`on_event`) waits for. The
//! simulation steps at a fixed [`FRAME`] with seeded randomness, so a seed
//! replays the same story on either executor.
//!
//! The binary (`cargo run --release`) prints the scene, the story, a timing
//! table and the archetypes, and draws pictures with [`render`]; the tests
//! in `tests/` drive the same [`Sim`] headless.
//!
//! ```
//! use mosaic_demo::{Settings, Sim};
//! let mut sim = Sim::new(&Settings { particles: 50, ..Settings::default() }).unwrap();
//! sim.run(60);
//! assert_eq!(sim.frame(), 60);
//! assert!(sim.story().lines.iter().any(|l| l.text.contains("ghost power-up")));
//! ```

#![warn(missing_docs)]

pub mod components;
pub mod grid;
pub mod render;
pub mod resources;
pub mod scene;
pub mod systems;

use std::time::Duration;

use mosaic::SystemTimings;
use mosaic::prelude::*;

pub use components::*;
pub use resources::*;
pub use scene::{
    DEFAULT_SCENE, inspector_registry, load_scene_text, scene_registry, spawn_default_scene,
    spawn_particles,
};
pub use systems::{CastSpell, Phase};

/// The fixed time step: 50 frames a second.
pub const FRAME: Duration = Duration::from_millis(20);

/// Frames in a second, at [`FRAME`].
pub const FPS: u64 = 50;

/// How a run is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Seeds every random choice.
    pub seed: u64,
    /// Particles added on top of the scene.
    pub particles: usize,
    /// Parallel executor and `par_iter` (`--parallel`); the default is the
    /// single-threaded executor.
    pub parallel: bool,
    /// Scene text (RON) to play; `None` for the built-in scene.
    pub scene: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            seed: 7,
            particles: 500,
            parallel: false,
            scene: None,
        }
    }
}

/// Something the [`Director`] does at a given frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Switch the `input` system off.
    InputOff,
    /// Switch the `input` system back on.
    InputOn,
    /// Send a [`CastSpell`] event: the `spell` system runs in this frame
    /// only.
    CastSpell,
}

/// The run's script: which [`Action`] happens at which frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Director {
    /// `(frame, action)`, in any order.
    pub cues: Vec<(u64, Action)>,
}

impl Director {
    /// The showcase's script: input off at 5 s for two seconds, the spell
    /// at 6 s.
    pub fn showcase() -> Director {
        Director {
            cues: vec![
                (5 * FPS, Action::InputOff),
                (6 * FPS, Action::CastSpell),
                (7 * FPS, Action::InputOn),
            ],
        }
    }
}

/// The keys the showcase's player presses: walk right to the power-up and
/// on through the monsters, pause, turn back left; then (while input is
/// off) right and jump, which nobody hears until input is back on.
pub fn showcase_keys() -> KeyScript {
    KeyScript {
        steps: vec![
            (1, Keys::RIGHT),
            (76, Keys::NONE),
            (111, Keys::RIGHT),
            (201, Keys::LEFT),
            (5 * FPS - 10, Keys::NONE),
            (5 * FPS + 20, Keys::RIGHT.and_jump()),
        ],
    }
}

/// A world with the resources and observers the systems need, and no
/// entities yet.
pub fn build_world(seed: u64, parallel: bool, arena: Arena) -> World {
    let mut world = World::new();
    world.insert_resource(arena);
    world.insert_resource(SimRng::new(seed));
    world.insert_resource(Threading { parallel });
    world.insert_resource(Input::default());
    world.insert_resource(showcase_keys());
    world.insert_resource(Story::default());
    world.insert_resource(Stats::default());
    world.insert_resource(Flares::default());
    world.insert_resource(Time::default());
    world.add_event::<Collision>();
    world.add_event::<CastSpell>();
    world.init_state::<Phase>();
    world.insert_resource(FixedTime::new(FRAME));
    world.insert_resource(CarryOrder::default());
    add_physics(&mut world, parallel);
    world.add_systems(OnEnter(Phase::Playing), systems::begin_level);
    world.add_systems(OnEnter(Phase::GameOver), systems::announce_game_over);
    // No one presses start in a headless run: leave the title at once (the
    // change applies at the start of the first frame).
    world.resource_mut::<NextState<Phase>>().set(Phase::Playing);
    // The ghost removes itself (`ghost_timer`); this observer tells the
    // story, whoever removes it.
    world.observe(|_: Trigger<OnRemove<Ghost>>, mut w: DeferredWorld| {
        let frame = w.resource::<Time>().frame();
        w.resource_mut::<Story>()
            .tell(frame, "the ghost wears off: monsters are solid again");
    });
    world
}

/// The physics, `movement` then `collision`, in the world's fixed-step
/// schedule ([`FixedUpdate`]): they step by [`FixedTime`] (one [`FRAME`]),
/// so the bodies move the same whatever the frame rate, and they run at
/// the start of each frame, before the frame's own systems
/// ([`build_schedule`]) react to their [`Collision`] events. Only in
/// [`Phase::Playing`], as the rest of the gameplay.
pub fn add_physics(world: &mut World, parallel: bool) {
    use systems::*;
    let physics = world.schedule_mut(FixedUpdate);
    physics.set_executor(executor(parallel));
    physics
        .configure_set("physics")
        .run_if(in_state(Phase::Playing));
    physics.add_system("movement", movement).in_set("physics");
    physics
        .add_system("collision", collision)
        .in_set("physics")
        .after("movement");
    physics
        .add_system("carry", carry)
        .in_set("physics")
        .after("movement");
}

/// Hands out the hierarchy: every monster carries a lamp above its head
/// and the player a lantern, each a child entity (`ChildOf`) with a
/// [`Light`] and a [`Carried`] offset, which the `carry` system keeps in
/// place.
pub fn equip(world: &mut World) {
    let carriers: Vec<(Entity, f32, bool)> = world
        .query_filtered::<(Entity, &Sprite, Has<Player>), Or<(With<Player>, (With<Health>, With<AI>))>>()
        .iter(world)
        .map(|(e, sprite, player)| (e, sprite.size, player))
        .collect();
    for (carrier, size, player) in carriers {
        let (light, offset) = if player {
            let lantern = Light {
                color: [255, 220, 120],
                radius: 5.0,
                flare: 0.0,
            };
            (
                lantern,
                Carried {
                    dx: size * 0.5 + 1.0,
                    dy: 1.0,
                },
            )
        } else {
            let lamp = Light {
                color: [255, 150, 50],
                radius: 6.0,
                flare: 0.0,
            };
            (
                lamp,
                Carried {
                    dx: 0.0,
                    dy: size * 0.5 + 6.0,
                },
            )
        };
        let pos = world.get::<Position>(carrier).copied().unwrap_or_default();
        let at = Position {
            x: pos.x + offset.dx,
            y: pos.y + offset.dy,
        };
        world
            .spawn_child(carrier, (at, light, offset))
            .expect("the carrier was just found alive");
    }
}

fn executor(parallel: bool) -> ExecutorKind {
    if parallel {
        ExecutorKind::Parallel
    } else {
        ExecutorKind::SingleThreaded
    }
}

/// The showcase's frame schedule: every system by name, in order. The
/// gameplay systems form the set `gameplay`, which runs only in
/// [`Phase::Playing`] (`run_if(in_state(..))`); `spell` runs only in a frame
/// that received a [`CastSpell`] event. The physics is not here: it is the
/// fixed-step schedule of [`add_physics`], which runs before these each
/// frame. `parallel` picks the executor.
pub fn build_schedule(parallel: bool) -> Schedule {
    use systems::*;
    let mut schedule = Schedule::new();
    schedule.set_executor(executor(parallel));
    schedule
        .configure_set("gameplay")
        .run_if(in_state(Phase::Playing));
    schedule.add_system("keyboard", keyboard).in_set("gameplay");
    schedule
        .add_system("input", input)
        .in_set("gameplay")
        .after("keyboard");
    schedule
        .add_system("ai", ai)
        .in_set("gameplay")
        .after("input");
    schedule
        .add_system("pickup", pickup)
        .in_set("gameplay")
        .after("ai");
    schedule
        .add_system("contact", contact)
        .in_set("gameplay")
        .after("ai");
    schedule
        .add_system("game_over", game_over)
        .in_set("gameplay")
        .after("contact");
    schedule
        .add_system("sparks", sparks)
        .in_set("gameplay")
        .after("ai");
    schedule
        .add_system("glow", glow)
        .in_set("gameplay")
        .after("sparks");
    // Without a sync point: the ghost picked up this frame starts
    // counting down next frame, so it lasts its full time.
    schedule
        .add_system("ghost_timer", ghost_timer)
        .in_set("gameplay")
        .after_ignore_deferred("pickup");
    schedule
        .add_system("spell", spell)
        .in_set("gameplay")
        .after("contact")
        .run_if(on_event::<CastSpell>);
    schedule
        .add_system("tidy", tidy)
        .after("ghost_timer")
        .after("glow")
        .after("spell");
    schedule
}

/// A running showcase: the world, its schedule and the director's script.
pub struct Sim {
    /// The world.
    pub world: World,
    /// The systems.
    pub schedule: Schedule,
    /// What happens when.
    pub director: Director,
}

impl Sim {
    /// Builds the world (scene plus particles) and the schedule. Fails with
    /// a message if the scene text cannot be loaded.
    pub fn new(settings: &Settings) -> Result<Sim, String> {
        let arena = Arena::for_particles(settings.particles);
        let mut world = build_world(settings.seed, settings.parallel, arena);
        load_scene_text(
            &mut world,
            settings.scene.as_deref().unwrap_or(DEFAULT_SCENE),
        )?;
        // A stream of its own, so the particle count does not change the
        // AI's random choices.
        spawn_particles(
            &mut world,
            settings.particles,
            settings.seed ^ 0x9E37_79B9_7F4A_7C15,
            arena,
        );
        equip(&mut world);
        let mut schedule = build_schedule(settings.parallel);
        schedule
            .build(&mut world)
            .map_err(|e| format!("the showcase's schedule is invalid: {e}"))?;
        world
            .schedule_scope(FixedUpdate, |world, physics| physics.build(world))
            .map_err(|e| format!("the showcase's physics schedule is invalid: {e}"))?;
        Ok(Sim {
            world,
            schedule,
            director: Director::showcase(),
        })
    }

    /// Frames run so far.
    pub fn frame(&self) -> u64 {
        self.world.resource::<Time>().frame()
    }

    /// The story so far.
    pub fn story(&self) -> &Story {
        self.world.resource::<Story>()
    }

    /// Switches per-system timing on or off, in both the frame schedule
    /// and the fixed-step physics.
    pub fn set_timing(&mut self, on: bool) {
        self.schedule.set_timing(on);
        self.world.schedule_mut(FixedUpdate).set_timing(on);
    }

    /// The fixed-step physics' timings, then the frame schedule's.
    pub fn timings(&mut self) -> (SystemTimings, SystemTimings) {
        let physics = self.world.schedule_mut(FixedUpdate).timings();
        (physics, self.schedule.timings())
    }

    /// Whether the `input` system is on.
    pub fn input_enabled(&self) -> bool {
        self.schedule.is_enabled("input")
    }

    /// Runs one frame: the director's cues for it, then the schedule.
    pub fn step(&mut self) {
        let frame = self.frame() + 1;
        let cues: Vec<Action> = self
            .director
            .cues
            .iter()
            .filter(|(at, _)| *at == frame)
            .map(|&(_, action)| action)
            .collect();
        for action in cues {
            let (on, text) = match action {
                Action::InputOff => (
                    false,
                    "input switched off: the keyboard keeps sending, nobody listens",
                ),
                Action::InputOn => (true, "input switched back on"),
                Action::CastSpell => {
                    self.world.send_event(CastSpell);
                    continue;
                }
            };
            self.schedule
                .set_enabled("input", on)
                .expect("the showcase's systems are in its schedule");
            self.world.resource_mut::<Story>().tell(frame, text);
        }
        self.schedule.run_frame(&mut self.world, FRAME);
    }

    /// Runs `frames` frames.
    pub fn run(&mut self, frames: u64) {
        for _ in 0..frames {
            self.step();
        }
    }
}

/// How many entities play each role: the scene at a glance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// `Position + Appearance`, by appearance name (sorted).
    pub scenery: Vec<(String, usize)>,
    /// `Position + Velocity + Light`, no `Sprite`.
    pub particles: usize,
    /// `Health + AI`: what the spell destroys.
    pub monsters: usize,
    /// `AI` without `Health`.
    pub wisps: usize,
    /// `Player`.
    pub players: usize,
    /// `PowerUp`.
    pub powerups: usize,
    /// `Carried`: lamps and lanterns, children of their carriers.
    pub carried: usize,
    /// Every entity.
    pub total: usize,
}

impl Census {
    /// Counts `world`'s entities by role.
    pub fn of(world: &mut World) -> Census {
        let mut scenery: Vec<(String, usize)> = Vec::new();
        let mut looks = world.query::<&Appearance>();
        for look in looks.iter(world) {
            match scenery.iter_mut().find(|(name, _)| *name == look.name) {
                Some((_, n)) => *n += 1,
                None => scenery.push((look.name.clone(), 1)),
            }
        }
        scenery.sort();
        Census {
            scenery,
            particles: count::<(With<Light>, With<Velocity>, Without<Sprite>)>(world),
            monsters: count::<(With<Health>, With<AI>)>(world),
            wisps: count::<(With<AI>, Without<Health>)>(world),
            players: count::<With<Player>>(world),
            powerups: count::<With<PowerUp>>(world),
            carried: count::<With<Carried>>(world),
            total: world.len(),
        }
    }
}

fn count<F: mosaic::QueryFilter>(world: &mut World) -> usize {
    world.query_filtered::<(), F>().iter(world).count()
}

/// One line of the archetype table: how many entities have exactly these
/// components.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchetypeRow {
    /// Component names, in the archetype's order.
    pub components: Vec<String>,
    /// Entities in it.
    pub entities: usize,
}

/// The world's non-empty archetypes, in creation order.
pub fn archetype_table(world: &World) -> Vec<ArchetypeRow> {
    world
        .archetypes()
        .filter(|a| !a.is_empty())
        .map(|a| ArchetypeRow {
            components: a
                .components()
                .iter()
                .map(|&id| {
                    world
                        .component_info(id)
                        .map_or_else(|| format!("{id:?}"), |info| short(info.name()))
                })
                .collect(),
            entities: a.len(),
        })
        .collect()
}

/// The last path segment of a type name.
fn short(name: &str) -> String {
    name.rsplit("::").next().unwrap_or(name).to_owned()
}
