//! The systems: one scenario each, plain functions whose parameters say
//! what they touch. [`crate::build_schedule`] names and orders them.

use std::time::Duration;

use mosaic::prelude::*;
use rand::RngExt;

use crate::components::*;
use crate::grid::SpatialGrid;
use crate::resources::*;

/// Downward pull, in units per second squared.
pub const GRAVITY: f32 = 420.0;
/// The player's walking speed.
pub const WALK_SPEED: f32 = 70.0;
/// The player's take-off speed.
pub const JUMP_SPEED: f32 = 170.0;
/// How fast standing walkers slow down (fraction of speed per second).
pub const FRICTION: f32 = 6.0;
/// How far a monster sees the player.
pub const SIGHT: f32 = 110.0;
/// A monster's speed when chasing.
pub const CHASE_SPEED: f32 = 32.0;
/// A monster's speed when wandering.
pub const WANDER_SPEED: f32 = 18.0;
/// A wisp's top speed.
pub const WISP_SPEED: f32 = 28.0;
/// Damage of one monster hit.
pub const HIT_DAMAGE: i32 = 10;
/// After a hit the player cannot be hit again for this long.
pub const INVULNERABLE: Duration = Duration::from_secs(1);
/// Colliders per chunk when the grid is built in parallel.
pub const GRID_CHUNK: usize = 16 * 1024;
/// How much of a flare is left after one second.
pub const FLARE_KEEP_PER_SECOND: f32 = 0.002;

/// How often [`tidy`] sorts the stored positions, in frames.
pub const TIDY_EVERY: u64 = 250;

/// **Keeping memory in order.** Every [`TIDY_EVERY`] frames (five seconds),
/// sorts the stored positions by collision-grid cell with
/// `World::sort_by_key`: rows are reordered inside their tables, handles
/// and components stay. Particles drift away from the order they were
/// spawned in, and the grid's passes then read and write memory at random;
/// after a sort they go through it in order again. Runs last in the frame,
/// as an exclusive system (`&mut World`): it moves rows, so nothing else
/// may run beside it.
pub fn tidy(world: &mut World) {
    if world.resource::<Time>().frame() % TIDY_EVERY == 0 {
        world.sort_by_key::<Position, _>(|p| crate::grid::cell_key(p.x, p.y));
    }
}

/// **The hierarchy: carried things follow their carrier.** Every entity
/// with [`Carried`] is put at its parent's position plus its offset,
/// walking the `ChildOf` hierarchy parent first (the cached order in
/// [`CarryOrder`]), so a lamp on something carried would follow too. Runs
/// in the fixed step after `movement`; exclusive, as it reads and writes
/// positions of any entity.
pub fn carry(world: &mut World) {
    // Taken out of its resource for the walk (an empty `ParentFirst`
    // allocates nothing), so the walk can lend the world.
    let mut order = std::mem::take(&mut world.resource_mut::<CarryOrder>().0);
    order.visit(world, |world, e| {
        let (Ok(&offset), Some(parent)) = (world.get::<Carried>(e), world.parent(e)) else {
            return;
        };
        let Ok(&base) = world.get::<Position>(parent) else {
            return;
        };
        if let Ok(pos) = world.get_mut::<Position>(e) {
            pos.x = base.x + offset.dx;
            pos.y = base.y + offset.dy;
        }
    });
    world.resource_mut::<CarryOrder>().0 = order;
}

/// **Input, part one: the keyboard.** Copies this frame's keys from the
/// [`KeyScript`] (the headless stand-in for a person) into [`Input`]. It
/// always runs, like real hardware; it is the [`input`] system that gets
/// switched off.
pub fn keyboard(time: Res<Time>, script: Res<KeyScript>, mut input: ResMut<Input>) {
    input.keys = script.keys_at(time.frame());
}

/// **Input, part two: control.** Steers the player from the keys: left or
/// right sets the walking speed, jump takes off when standing. The director
/// switches this system off for two seconds with `Schedule::set_enabled`:
/// the keys keep coming but nothing listens, so the player coasts to a
/// halt.
pub fn input(
    input: Res<Input>,
    mut player: Query<(&Position, &mut Velocity, Option<&Collider>), With<Player>>,
) {
    let keys = input.keys;
    for (pos, vel, collider) in player.iter_mut() {
        match (keys.left, keys.right) {
            (true, false) => vel.x = -WALK_SPEED,
            (false, true) => vel.x = WALK_SPEED,
            _ => {}
        }
        if keys.jump && standing(pos, collider) {
            vel.y = JUMP_SPEED;
        }
    }
}

/// **NPCs and monsters: AI.** Everything with [`AI`] decides where to go.
/// Walkers (with [`Gravity`]) chase a player they can see, and wander
/// otherwise; a ghost is invisible to them. Fliers (the wisps) drift at
/// random. Randomness comes from the seeded [`SimRng`], drawn in query
/// order, so a seed replays the same moves.
pub fn ai(
    mut rng: ResMut<SimRng>,
    player: Query<(&Position, Has<Ghost>), With<Player>>,
    mut npcs: Query<(&Position, &mut Velocity, Has<Gravity>), With<AI>>,
) {
    let target = player
        .get_single()
        .ok()
        .filter(|(_, ghost)| !ghost)
        .map(|(pos, _)| *pos);
    let rng = &mut rng.0;
    for (pos, vel, walks) in npcs.iter_mut() {
        if walks {
            match target {
                Some(t) if (t.x - pos.x).abs() < SIGHT => {
                    vel.x = (t.x - pos.x).signum() * CHASE_SPEED;
                }
                _ => {
                    if rng.random_bool(1.0 / 40.0) {
                        vel.x = [-WANDER_SPEED, 0.0, WANDER_SPEED][rng.random_range(0..3)];
                    }
                }
            }
        } else {
            vel.x += rng.random_range(-4.0..4.0);
            vel.y += rng.random_range(-4.0..4.0);
            let speed = (vel.x * vel.x + vel.y * vel.y).sqrt();
            if speed > WISP_SPEED {
                vel.x *= WISP_SPEED / speed;
                vel.y *= WISP_SPEED / speed;
            }
        }
    }
}

/// **Movement with gravity.** Everything with a [`Velocity`] moves; what has
/// [`Gravity`] falls, stands on the ground and slows down there (friction);
/// everything else bounces off the ground. All bounce off the arena's
/// walls. It runs in the fixed-step schedule and steps by
/// [`FixedTime`], not by the frame's [`Time`]. With `--parallel` the work is
/// split over threads with `par_iter_mut` (each entity is independent, so
/// the result is the same).
pub fn movement(
    time: Res<FixedTime>,
    arena: Res<Arena>,
    threading: Res<Threading>,
    mut movers: Query<(
        &mut Position,
        &mut Velocity,
        Option<&Gravity>,
        Option<&Collider>,
    )>,
) {
    let (dt, arena) = (time.delta_seconds(), *arena);
    if threading.parallel {
        movers
            .par_iter_mut()
            .for_each(|(p, v, g, c)| move_one(p, v, g, c, dt, &arena));
    } else {
        for (p, v, g, c) in movers.iter_mut() {
            move_one(p, v, g, c, dt, &arena);
        }
    }
}

/// One entity's step of [`movement`].
#[inline]
fn move_one(
    p: &mut Position,
    v: &mut Velocity,
    gravity: Option<&Gravity>,
    collider: Option<&Collider>,
    dt: f32,
    arena: &Arena,
) {
    if let Some(g) = gravity {
        v.y -= GRAVITY * g.scale * dt;
    }
    p.x += v.x * dt;
    p.y += v.y * dt;
    let r = collider.map_or(0.0, |c| c.radius);
    if p.x < r {
        p.x = r;
        v.x = v.x.abs();
    } else if p.x > arena.width - r {
        p.x = arena.width - r;
        v.x = -v.x.abs();
    }
    if p.y > arena.height - r {
        p.y = arena.height - r;
        v.y = -v.y.abs();
    }
    let floor = GROUND + r;
    if p.y <= floor {
        p.y = floor;
        if gravity.is_some() {
            v.y = v.y.max(0.0);
            v.x -= v.x * (FRICTION * dt).min(1.0);
        } else {
            v.y = v.y.abs();
        }
    }
}

/// True if an entity stands on the ground.
fn standing(pos: &Position, collider: Option<&Collider>) -> bool {
    pos.y <= GROUND + collider.map_or(0.0, |c| c.radius) + 0.01
}

/// **Collision: a spatial hash grid, not all pairs.** Buckets every
/// [`Collider`] into a flat grid by counting sort (the buffers live in a
/// `Local`, so no frame after the first allocates them again; with
/// `--parallel` the colliders are read in fixed-size chunks with
/// `par_chunks`, so the grid does not depend on the thread count), then compares
/// each body only with its neighbours' cells, and sends one [`Collision`]
/// event per overlapping pair. The readers ([`pickup`], [`contact`], [`sparks`]) each
/// see every event once.
pub fn collision(
    arena: Res<Arena>,
    threading: Res<Threading>,
    colliders: Query<(Entity, &Position, &Collider)>,
    mut grid: Local<SpatialGrid>,
    mut hits: EventWriter<Collision>,
    mut stats: ResMut<Stats>,
) {
    let body = |(e, p, c): (Entity, &Position, &Collider)| (e, p.x, p.y, c.radius);
    if threading.parallel {
        // Fixed-size chunks, binned on the thread pool; the grid comes out
        // the same as from one sequential pass.
        let chunks = colliders.par_chunks(GRID_CHUNK);
        grid.begin(arena.width, arena.height, chunks.len());
        let grid = &*grid;
        chunks.for_each(|chunk| grid.add_chunk(chunk.index(), chunk.map(body)));
    } else {
        // The same chunks, one after another.
        let chunks = colliders.par_chunks(GRID_CHUNK).len();
        grid.begin(arena.width, arena.height, chunks);
        grid.add_chunks(GRID_CHUNK, colliders.iter().map(body));
    }
    grid.finish(threading.parallel);
    let mut sent = 0;
    grid.for_each_pair(threading.parallel, |a, b| {
        hits.send(Collision { a, b });
        sent += 1;
    });
    stats.collisions += sent;
}

/// **The ghost power-up, part one: pick it up.** A player touching a
/// [`PowerUp`] gets a [`Ghost`] component for the power-up's time, and the
/// power-up is gone. Both are structural changes, so they go through
/// `Commands` and apply at the end of the frame.
pub fn pickup(
    time: Res<Time>,
    mut hits: EventReader<Collision>,
    player: Query<Entity, With<Player>>,
    powerups: Query<&PowerUp>,
    mut commands: Commands,
    mut story: ResMut<Story>,
    mut taken: Local<Vec<Entity>>,
) {
    taken.clear();
    let Ok(player) = player.get_single() else {
        return;
    };
    for hit in hits.read() {
        let Some(other) = hit.other(player) else {
            continue;
        };
        let Ok(powerup) = powerups.get(other) else {
            continue;
        };
        if taken.contains(&other) {
            continue;
        }
        taken.push(other);
        let remaining = Duration::from_secs_f32(powerup.ghost_seconds);
        commands.insert(player, Ghost { remaining });
        commands.despawn(other);
        story.tell(
            time.frame(),
            format!(
                "the player picks up the ghost power-up: passes through monsters for {:.1} s",
                powerup.ghost_seconds
            ),
        );
    }
}

/// What [`contact`] remembers between frames (a `Local`).
#[derive(Debug, Default)]
pub struct ContactMemory {
    /// When the player was last hit.
    last_hit: Option<Duration>,
    /// Monsters the current ghost has passed through already.
    passed: Vec<Entity>,
}

/// **Monsters hurt, ghosts pass through.** A monster (an entity with
/// [`Health`] and [`AI`]) touching the player takes [`HIT_DAMAGE`] and
/// knocks them back, at most once per [`INVULNERABLE`]. A ghost takes
/// nothing and walks on through; the story says so once per monster and
/// ghost. What it must remember between frames lives in a `Local`.
#[allow(clippy::type_complexity)] // a system's parameters are its documentation
pub fn contact(
    time: Res<Time>,
    mut hits: EventReader<Collision>,
    mut player: Query<(Entity, &Position, &mut Velocity, &mut Health, Has<Ghost>), With<Player>>,
    monsters: Query<&Position, (With<Health>, With<AI>, Without<Player>)>,
    mut story: ResMut<Story>,
    mut stats: ResMut<Stats>,
    mut memory: Local<ContactMemory>,
) {
    let Ok((me, pos, vel, health, ghost)) = player.get_single_mut() else {
        return;
    };
    if !ghost {
        memory.passed.clear();
    }
    let now = time.elapsed();
    for hit in hits.read() {
        let Some(other) = hit.other(me) else {
            continue;
        };
        let Ok(monster) = monsters.get(other) else {
            continue;
        };
        if ghost {
            if !memory.passed.contains(&other) {
                memory.passed.push(other);
                story.tell(
                    time.frame(),
                    format!("the ghost passes through monster {other}"),
                );
            }
            continue;
        }
        if memory.last_hit.is_some_and(|t| now < t + INVULNERABLE) {
            continue;
        }
        memory.last_hit = Some(now);
        let before = health.hp;
        health.hp -= HIT_DAMAGE;
        stats.hits += 1;
        let away = if pos.x < monster.x { -1.0 } else { 1.0 };
        vel.x = away * 1.6 * WALK_SPEED;
        vel.y = 0.7 * JUMP_SPEED;
        story.tell(
            time.frame(),
            format!(
                "monster {other} hits the player: hp {before} -> {}",
                health.hp
            ),
        );
    }
}

/// **Particles glow, part one: sparks.** Marks everything that collided
/// this frame in [`Flares`]; [`glow`] lights up the marked lights.
pub fn sparks(mut hits: EventReader<Collision>, mut flares: ResMut<Flares>) {
    flares.clear();
    for hit in hits.read() {
        flares.mark(hit.a);
        flares.mark(hit.b);
    }
}

/// **Particles glow, part two: flare and fade.** A light (particle, wisp,
/// power-up) that collided this frame flares up; others fade
/// (exponentially, the same at any frame rate). One pass over every light,
/// in parallel with `--parallel`.
pub fn glow(
    time: Res<Time>,
    threading: Res<Threading>,
    flares: Res<Flares>,
    mut lights: Query<(Entity, &mut Light)>,
) {
    let keep = FLARE_KEEP_PER_SECOND.powf(time.delta_seconds());
    let update = |(e, light): (Entity, &mut Light)| {
        if flares.contains(e) {
            light.flare = 1.0;
        } else if light.flare > 0.0 {
            light.flare = if light.flare > 0.01 {
                light.flare * keep
            } else {
                0.0
            };
        }
    };
    if threading.parallel {
        lights.par_iter_mut().for_each(update);
    } else {
        lights.iter_mut().for_each(update);
    }
}

/// **The ghost power-up, part two: it wears off by itself.** Counts every
/// [`Ghost`] down and removes the component when the time is up (through
/// `Commands`). The story line comes from an observer of
/// `OnRemove<Ghost>`, registered in [`crate::build_world`].
pub fn ghost_timer(
    time: Res<Time>,
    mut ghosts: Query<(Entity, &mut Ghost)>,
    mut commands: Commands,
) {
    for (e, ghost) in ghosts.iter_mut() {
        ghost.remaining = ghost.remaining.saturating_sub(time.delta());
        if ghost.remaining.is_zero() {
            commands.remove::<Ghost>(e);
        }
    }
}

/// Where the game is: the title screen, the level, or game over (a
/// state machine; see [`crate::build_world`] and [`crate::build_schedule`]).
#[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Phase {
    /// Before the level (the headless showcase leaves it at once).
    #[default]
    Title,
    /// The level runs: every gameplay system is on.
    Playing,
    /// The player has no hp left: the gameplay systems stop.
    GameOver,
}

/// Entering [`Phase::Playing`] (an `OnEnter` system): tells the story.
pub fn begin_level(time: Res<Time>, mut story: ResMut<Story>) {
    story.tell(time.frame(), "the level begins");
}

/// Entering [`Phase::GameOver`] (an `OnEnter` system): tells the story.
pub fn announce_game_over(time: Res<Time>, mut story: ResMut<Story>) {
    story.tell(time.frame(), "game over: the player has no hp left");
}

/// **Game over when the player's hp runs out.** Takes the one player with
/// `Single` (skipped if there is none) and asks for [`Phase::GameOver`];
/// the change happens at the start of the next frame.
pub fn game_over(player: Single<&Health, With<Player>>, mut next: ResMut<NextState<Phase>>) {
    if player.hp <= 0 {
        next.set(Phase::GameOver);
    }
}

/// The director's order to cast the spell (an event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CastSpell;

/// **The spell: destroy every entity that has Health and AI.** Guarded by
/// the run condition `on_event::<CastSpell>`, it runs only in the frame the
/// director sends [`CastSpell`]. Everything else (the player, who has Health
/// but no AI; the wisps, which have AI but no Health) is left alone.
pub fn spell(
    time: Res<Time>,
    doomed: Query<Entity, (With<Health>, With<AI>)>,
    mut commands: Commands,
    mut story: ResMut<Story>,
) {
    let mut count = 0;
    for e in doomed.iter() {
        // Its lamp (a child) goes with it.
        commands.despawn_recursive(e);
        count += 1;
    }
    story.tell(
        time.frame(),
        format!("the spell is cast: {count} monsters destroyed"),
    );
}
