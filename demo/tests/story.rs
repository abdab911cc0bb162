//! The showcase's story, checked headless: the demo's own systems and
//! schedule, run frame by frame.

use mosaic::prelude::*;
use mosaic_demo::systems::{FRICTION, WALK_SPEED};
use mosaic_demo::*;

/// A default showcase with few particles (quick in debug builds).
fn showcase(seed: u64, parallel: bool) -> Sim {
    Sim::new(&Settings {
        seed,
        particles: 120,
        parallel,
        scene: None,
    })
    .expect("the built-in scene loads")
}

/// The frame of the first story line containing `text`.
fn frame_of(sim: &Sim, text: &str) -> Option<u64> {
    sim.story()
        .lines
        .iter()
        .find(|line| line.text.contains(text))
        .map(|line| line.frame)
}

fn player(sim: &mut Sim) -> Entity {
    let mut players = sim.world.query_filtered::<Entity, With<Player>>();
    let found: Vec<Entity> = players.iter(&sim.world).collect();
    assert_eq!(found.len(), 1, "one player");
    found[0]
}

/// Every entity, in iteration order.
fn entities(world: &mut World) -> Vec<Entity> {
    world.query::<Entity>().iter(world).collect()
}

/// Every position, as bits (exact comparison).
fn positions(world: &mut World) -> Vec<(u64, u32, u32)> {
    world
        .query::<(Entity, &Position)>()
        .iter(world)
        .map(|(e, p)| (e.to_bits(), p.x.to_bits(), p.y.to_bits()))
        .collect()
}

#[test]
fn ghost_power_up_expires_on_time() {
    let mut sim = showcase(7, false);
    let me = player(&mut sim);
    while frame_of(&sim, "picks up the ghost").is_none() {
        assert!(sim.frame() < 200, "the player reaches the power-up");
        sim.step();
    }
    let picked = sim.frame();
    // Commands apply at the end of the frame: the ghost is there now...
    assert!(sim.world.has::<Ghost>(me));
    assert_eq!(sim.world.query::<&PowerUp>().iter(&sim.world).count(), 0);
    // ...for exactly three seconds' worth of frames.
    let lasts = 3 * FPS;
    while sim.frame() < picked + lasts - 1 {
        sim.step();
        assert!(
            sim.world.has::<Ghost>(me),
            "still a ghost at {}",
            sim.frame()
        );
    }
    sim.step();
    assert_eq!(sim.frame(), picked + lasts);
    assert!(!sim.world.has::<Ghost>(me), "the ghost removed itself");
    assert_eq!(frame_of(&sim, "ghost wears off"), Some(picked + lasts));
    // While it lasted, monsters were passed through, never hit.
    let hits_before_end = sim
        .story()
        .lines
        .iter()
        .filter(|l| l.text.contains("hits the player") && l.frame < picked + lasts)
        .count();
    assert_eq!(hits_before_end, 0);
    assert!(frame_of(&sim, "passes through monster").is_some());
}

#[test]
fn spell_destroys_exactly_health_and_ai() {
    let mut sim = showcase(7, false);
    let cast_at = Director::showcase()
        .cues
        .iter()
        .find(|(_, action)| *action == Action::CastSpell)
        .map(|&(frame, _)| frame)
        .expect("the showcase casts the spell");
    sim.run(cast_at - 1);
    let before = entities(&mut sim.world);
    let monsters: Vec<Entity> = sim
        .world
        .query_filtered::<Entity, (With<Health>, With<AI>)>()
        .iter(&sim.world)
        .collect();
    assert_eq!(monsters.len(), 7);
    // Things the spell must spare: Health without AI, AI without Health.
    let spared = sim
        .world
        .query_filtered::<(), Or<(With<Health>, With<AI>)>>()
        .iter(&sim.world)
        .count()
        - monsters.len();
    assert_eq!(spared, 1 + 3, "the player and the wisps");

    let lamps: Vec<Entity> = monsters
        .iter()
        .flat_map(|&m| sim.world.children(m).to_vec())
        .collect();
    assert_eq!(lamps.len(), 7, "each monster carries a lamp");

    sim.step();
    let after = entities(&mut sim.world);
    let mut expected: Vec<Entity> = before
        .iter()
        .copied()
        .filter(|e| !monsters.contains(e) && !lamps.contains(e))
        .collect();
    expected.sort();
    let mut got = after.clone();
    got.sort();
    assert_eq!(
        got, expected,
        "exactly the monsters (and their lamps) are gone"
    );
    assert!(monsters.iter().all(|&m| !sim.world.contains(m)));
    assert_eq!(
        frame_of(&sim, "the spell is cast"),
        Some(cast_at),
        "story: {:?}",
        sim.story().lines
    );
    assert!(
        sim.story()
            .lines
            .iter()
            .any(|l| l.text == "the spell is cast: 7 monsters destroyed")
    );
    // The spell ran once: the next frame has no CastSpell event.
    sim.step();
    assert_eq!(
        sim.story()
            .lines
            .iter()
            .filter(|l| l.text.contains("spell is cast"))
            .count(),
        1
    );
}

#[test]
fn input_is_ignored_while_off() {
    // A world of one player: right until frame 20, then left; input off
    // from frame 10 to 39.
    let mut world = build_world(1, false, Arena::default());
    world.insert_resource(KeyScript {
        steps: vec![(1, Keys::RIGHT), (20, Keys::LEFT)],
    });
    let me = world.spawn((
        Position { x: 100.0, y: 22.0 },
        Velocity::default(),
        Health { hp: 100 },
        Player,
        Collider { radius: 6.0 },
        Gravity { scale: 1.0 },
    ));
    let mut sim = Sim {
        world,
        schedule: build_schedule(false),
        director: Director {
            cues: vec![(10, Action::InputOff), (40, Action::InputOn)],
        },
    };
    let vx = |sim: &Sim| sim.world.get::<Velocity>(me).expect("player").x;
    // The fixed-step physics runs first in a frame, then `input`: at the
    // end of a frame the velocity is the one input just set; friction
    // takes its share in the next frame's physics.
    let walking = WALK_SPEED;

    sim.run(9);
    assert!((vx(&sim) - walking).abs() < 1e-3, "walking right");
    let mut last = vx(&sim);
    for frame in 10..40 {
        sim.step();
        assert_eq!(sim.frame(), frame);
        assert!(!sim.input_enabled());
        let keys = sim.world.resource::<Input>().keys;
        assert_eq!(keys, if frame < 20 { Keys::RIGHT } else { Keys::LEFT });
        let now = vx(&sim);
        assert!(now >= 0.0 && now < last, "coasting at frame {frame}: {now}");
        if frame == 10 {
            // One fixed step of friction on the ground.
            let once = WALK_SPEED * (1.0 - FRICTION * FRAME.as_secs_f32());
            assert!(
                (now - once).abs() < 1e-3,
                "{now} after one step, not {once}"
            );
        }
        last = now;
    }
    sim.step();
    assert!(sim.input_enabled());
    assert!(
        (vx(&sim) + walking).abs() < 1e-3,
        "listening again: walks left"
    );
    let story: Vec<(u64, &str)> = sim
        .story()
        .lines
        .iter()
        .map(|l| (l.frame, l.text.as_str()))
        .collect();
    assert_eq!(story[0], (1, "the level begins"), "OnEnter(Playing)");
    assert!(story[1].0 == 10 && story[1].1.starts_with("input switched off"));
    assert_eq!(story[2], (40, "input switched back on"));
}

#[test]
fn counts_add_up() {
    let mut sim = showcase(7, false);
    let start = Census::of(&mut sim.world);
    assert_eq!(
        start.scenery,
        [("rock".to_owned(), 2), ("tree".to_owned(), 6)]
    );
    assert_eq!(
        (
            start.particles,
            start.monsters,
            start.wisps,
            start.players,
            start.powerups
        ),
        (120, 7, 3, 1, 1)
    );
    assert_eq!(
        start.carried,
        7 + 1,
        "a lamp per monster, the player's lantern"
    );
    assert_eq!(start.total, 8 + 120 + 7 + 3 + 1 + 1 + 8);
    let table: usize = archetype_table(&sim.world).iter().map(|r| r.entities).sum();
    assert_eq!(table, start.total);

    sim.run(8 * FPS);
    let end = Census::of(&mut sim.world);
    // The power-up was picked up and the spell took the monsters.
    assert_eq!((end.monsters, end.powerups), (0, 0));
    assert_eq!(
        end.total,
        start.total - 7 - 7 - 1,
        "the lamps went with their monsters"
    );
    assert_eq!(end.carried, 1, "the player's lantern");
    assert_eq!(
        (end.particles, end.wisps, end.players, end.scenery),
        (
            start.particles,
            start.wisps,
            start.players,
            start.scenery.clone()
        )
    );
    let rows = archetype_table(&sim.world);
    assert_eq!(rows.iter().map(|r| r.entities).sum::<usize>(), end.total);
    let particles = rows
        .iter()
        .find(|r| r.entities == 120)
        .expect("the particles' archetype");
    let mut names = particles.components.clone();
    names.sort();
    assert_eq!(names, ["Collider", "Light", "Position", "Velocity"]);
    let stats = *sim.world.resource::<Stats>();
    assert!(stats.collisions > 0);
    let hits = sim
        .story()
        .lines
        .iter()
        .filter(|l| l.text.contains("hits the player"))
        .count() as u64;
    assert_eq!(hits, stats.hits);
    let me = player(&mut sim);
    assert_eq!(
        sim.world.get::<Health>(me).expect("player").hp,
        100 - 10 * hits as i32
    );
}

#[test]
fn same_seed_same_story_on_either_executor() {
    let run = |seed: u64, parallel: bool| {
        let mut sim = showcase(seed, parallel);
        sim.run(8 * FPS);
        (sim.story().clone(), positions(&mut sim.world))
    };
    let (story, end) = run(7, false);
    assert!(story.lines.len() >= 6, "{story:?}");
    assert_eq!(run(7, false), (story.clone(), end.clone()));
    assert_eq!(run(7, true), (story, end.clone()), "parallel");
    assert_ne!(run(8, false).1, end, "another seed, another run");
}

#[test]
fn colliding_lights_flare_then_fade() {
    let mut world = build_world(1, false, Arena::default());
    let light = Light {
        color: [255, 200, 80],
        radius: 2.0,
        flare: 0.0,
    };
    let particle = |x: f32| {
        (
            Position { x, y: 100.0 },
            Velocity::default(),
            light,
            Collider { radius: 0.5 },
        )
    };
    let (a, b, c) = (
        world.spawn(particle(50.0)),
        world.spawn(particle(50.6)),
        world.spawn(particle(80.0)),
    );
    let mut sim = Sim {
        world,
        schedule: build_schedule(false),
        director: Director::default(),
    };
    let flare = |sim: &Sim, e| sim.world.get::<Light>(e).expect("light").flare;
    sim.step();
    assert_eq!(
        (flare(&sim, a), flare(&sim, b), flare(&sim, c)),
        (1.0, 1.0, 0.0)
    );
    assert_eq!(sim.world.resource::<Stats>().collisions, 1);
    // Pull them apart: the flare fades.
    sim.world.get_mut::<Position>(b).expect("b").x = 60.0;
    sim.step();
    assert!(flare(&sim, a) < 1.0 && flare(&sim, a) > 0.0);
    sim.run(FPS);
    assert_eq!(flare(&sim, a), 0.0, "gone within a second");
}

#[test]
fn the_game_is_over_when_the_player_has_no_hp_left() {
    let mut sim = showcase(7, false);
    sim.run(2);
    assert_eq!(*sim.world.resource::<State<Phase>>().get(), Phase::Playing);
    let me = player(&mut sim);
    sim.world.get_mut::<Health>(me).expect("player").hp = 0;
    sim.step(); // game_over asks for the change...
    assert_eq!(*sim.world.resource::<State<Phase>>().get(), Phase::Playing);
    sim.step(); // ...which happens at the start of the next frame
    assert_eq!(*sim.world.resource::<State<Phase>>().get(), Phase::GameOver);
    assert_eq!(frame_of(&sim, "game over"), Some(4));
    // The gameplay set is off: the player no longer moves.
    let at = *sim.world.get::<Position>(me).expect("player");
    sim.run(10);
    assert_eq!(*sim.world.get::<Position>(me).expect("player"), at);
}

#[test]
fn timing_table_names_every_system() {
    let mut sim = showcase(1, false);
    sim.set_timing(true);
    sim.run(3);
    let (physics, frame) = sim.timings();
    let names: Vec<&str> = physics
        .rows()
        .iter()
        .chain(frame.rows())
        .map(|r| r.name.as_str())
        .collect();
    for system in [
        "keyboard",
        "input",
        "ai",
        "movement",
        "collision",
        "pickup",
        "contact",
        "sparks",
        "glow",
        "ghost_timer",
        "spell",
    ] {
        assert!(names.contains(&system), "{system} in {names:?}");
    }
    let spell = frame.rows().iter().find(|r| r.name == "spell").unwrap();
    let movement = physics
        .rows()
        .iter()
        .find(|r| r.name == "movement")
        .unwrap();
    assert_eq!(movement.runs, 3, "one fixed step per frame");
    assert_eq!(spell.runs, 0, "the spell waits for its frame");
}

/// Particles: lights that are neither sprites nor carried.
type FreeParticles = (With<Light>, Without<Sprite>, Without<Carried>);

#[test]
fn tidy_sorts_the_particles_by_grid_cell_every_few_seconds() {
    use mosaic_demo::grid::cell_key;
    use mosaic_demo::systems::TIDY_EVERY;
    let mut sim = Sim::new(&Settings {
        particles: 3_000,
        ..Settings::default()
    })
    .unwrap();
    let particle_keys = |world: &mut World| {
        world.run_system_once(|q: Query<&Position, FreeParticles>| {
            q.iter().map(|p| cell_key(p.x, p.y)).collect::<Vec<_>>()
        })
    };
    let sorted = |keys: &[(u32, u32)]| keys.windows(2).all(|w| w[0] <= w[1]);
    // Spawned in cell order; drifted out of it a while later.
    sim.run(TIDY_EVERY - 1);
    let drifted = particle_keys(&mut sim.world);
    assert_eq!(drifted.len(), 3_000);
    assert!(
        !sorted(&drifted),
        "particles have drifted out of cell order"
    );
    // The tidy frame puts them back in order, without losing any.
    sim.run(1);
    let tidied = particle_keys(&mut sim.world);
    assert_eq!(tidied.len(), 3_000);
    assert!(sorted(&tidied));
}

#[test]
fn carried_lights_follow_their_carriers_parent_first() {
    let mut sim = showcase(7, false);
    sim.run(60);
    let carried: Vec<(Entity, Carried)> = sim
        .world
        .query::<(Entity, &Carried)>()
        .iter(&sim.world)
        .map(|(e, c)| (e, *c))
        .collect();
    assert_eq!(carried.len(), 8);
    let mut moved = 0;
    for (lamp, offset) in carried {
        let carrier = sim
            .world
            .parent(lamp)
            .expect("a carried light has a carrier");
        let base = *sim.world.get::<Position>(carrier).unwrap();
        let at = *sim.world.get::<Position>(lamp).unwrap();
        assert_eq!((at.x, at.y), (base.x + offset.dx, base.y + offset.dy));
        moved += usize::from(sim.world.get::<Velocity>(carrier).unwrap().x != 0.0);
    }
    assert!(moved > 0, "some carriers walk, and their lights with them");
    // Nothing changed the hierarchy after the first frame: built once.
    assert_eq!(sim.world.resource::<CarryOrder>().0.rebuilds(), 1);
}
