//! Integration tests for the fixed timestep: the same simulation, bit for
//! bit, after one second of game time in frames of 1 ms, 16 ms and 100 ms;
//! the cap on steps per frame (and the dropped time it reports); the
//! overstep fraction; fixed steps running before the frame's own systems
//! and after state transitions; a frame system on `Time` still working
//! beside them.

use std::time::Duration;

use mosaic::prelude::*;

#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Body {
    pos: [f32; 2],
    vel: [f32; 2],
}

/// Gravity, drag and a bounce: enough float work that any difference in
/// the steps taken shows in the low bits.
fn physics(time: Res<FixedTime>, mut q: Query<&mut Body>) {
    let dt = time.delta_seconds();
    for b in q.iter_mut() {
        b.vel[1] -= 9.81 * dt;
        b.vel[0] *= 1.0 - 0.1 * dt;
        b.pos[0] += b.vel[0] * dt;
        b.pos[1] += b.vel[1] * dt;
        if b.pos[1] < 0.0 {
            b.pos[1] = -b.pos[1];
            b.vel[1] *= -0.8;
        }
    }
}

/// Positions (as bits) after at least one second of frames of `frame`.
fn simulate(frame: Duration) -> Vec<[u32; 2]> {
    let mut world = World::new();
    world.insert_resource(FixedTime::default()); // 64 Hz: 15.625 ms
    world.add_systems(FixedUpdate, physics);
    for i in 0..20 {
        world.spawn(Body {
            pos: [i as f32 * 0.37, 1.0 + i as f32 * 0.11],
            vel: [3.0 - i as f32 * 0.29, 0.5 * i as f32],
        });
    }
    let mut schedule = Schedule::new();
    while world
        .get_resource::<Time>()
        .is_none_or(|t| t.elapsed() < Duration::from_secs(1))
    {
        schedule.run_frame(&mut world, frame);
    }
    assert_eq!(world.resource::<FixedTime>().steps(), 64, "{frame:?}");
    world.run_system_once(|q: Query<&Body>| {
        q.iter()
            .map(|b| [b.pos[0].to_bits(), b.pos[1].to_bits()])
            .collect()
    })
}

#[test]
fn fixed_step_gives_the_same_simulation_for_any_frame_time() {
    let reference = simulate(Duration::from_millis(1));
    assert!(reference.iter().any(|p| p[0] != 0 && p[1] != 0));
    assert_eq!(
        simulate(Duration::from_millis(16)),
        reference,
        "16 ms frames"
    );
    assert_eq!(
        simulate(Duration::from_millis(100)),
        reference,
        "100 ms frames"
    );
}

#[test]
fn a_slow_frame_runs_at_most_the_cap_and_drops_the_rest() {
    let mut world = World::new();
    world.insert_resource(0u32);
    let mut fixed = FixedTime::new(Duration::from_millis(20));
    fixed.set_max_steps_per_frame(5);
    world.insert_resource(fixed);
    world.add_systems(FixedUpdate, |mut n: ResMut<u32>| *n += 1);
    let mut schedule = Schedule::new();
    schedule.run_frame(&mut world, Duration::from_millis(1010));
    assert_eq!(*world.resource::<u32>(), 5);
    let fixed = world.resource::<FixedTime>();
    assert_eq!(fixed.dropped(), Duration::from_millis(900));
    assert_eq!(fixed.overstep(), Duration::from_millis(10));
    assert_eq!(fixed.overstep_fraction(), 0.5);
    // The next, normal frame is not burdened by the lost second.
    schedule.run_frame(&mut world, Duration::from_millis(30));
    assert_eq!(*world.resource::<u32>(), 7);
}

#[test]
fn fixed_steps_run_after_transitions_and_before_the_frame_systems() {
    #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    enum Phase {
        #[default]
        Setup,
        Run,
    }
    #[derive(Default)]
    struct Log(Vec<String>);
    let mut world = World::new();
    world.insert_resource(Log::default());
    world.insert_resource(FixedTime::new(Duration::from_millis(10)));
    world.init_state::<Phase>();
    world.add_systems(OnEnter(Phase::Run), |mut l: ResMut<Log>| {
        l.0.push("enter run".into())
    });
    world.add_systems(FixedUpdate, |mut l: ResMut<Log>, s: Res<State<Phase>>| {
        l.0.push(format!("fixed {:?}", s.get()))
    });
    let mut schedule = Schedule::new();
    schedule.add_system("frame", |mut l: ResMut<Log>, t: Res<Time>| {
        l.0.push(format!("frame {:?}", t.delta()))
    });
    world.resource_mut::<NextState<Phase>>().set(Phase::Run);
    schedule.run_frame(&mut world, Duration::from_millis(25));
    assert_eq!(
        world.resource::<Log>().0,
        ["enter run", "fixed Run", "fixed Run", "frame 25ms"]
    );
}

/// Issue #39, item 6: the fixed clock's elapsed time adds up the steps as
/// they were, so changing the step does not rewrite the past.
#[test]
fn elapsed_fixed_time_keeps_the_steps_taken_before_a_new_timestep() {
    let mut fixed = FixedTime::new(Duration::from_millis(20));
    fixed.set_max_steps_per_frame(1000);
    assert_eq!(fixed.accumulate(Duration::from_secs(1)), 50);
    assert_eq!(fixed.elapsed(), Duration::from_secs(1));
    fixed.set_timestep(Duration::from_millis(40));
    assert_eq!(fixed.accumulate(Duration::from_secs(1)), 25);
    assert_eq!(fixed.steps(), 75);
    assert_eq!(fixed.elapsed(), Duration::from_secs(2));
}

/// What a system saw of `Time`: (delta, elapsed) per run.
#[derive(Default)]
struct Seen(Vec<(Duration, Duration)>);

/// Issue #39, item 15: inside the fixed step `Res<Time>` is the fixed
/// clock (its delta is the step, its elapsed the fixed time so far), and
/// the frame's systems see the frame clock again afterwards.
#[test]
fn time_inside_the_fixed_step_is_the_fixed_clock() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    world.insert_resource(0u32);
    world.insert_resource(FixedTime::new(Duration::from_millis(20)));
    world.add_systems(FixedUpdate, |t: Res<Time>, mut seen: ResMut<Seen>| {
        seen.0.push((t.delta(), t.elapsed()))
    });
    let mut schedule = Schedule::new();
    schedule.add_system("frame", |t: Res<Time>, mut n: ResMut<u32>| {
        assert_eq!(t.delta(), Duration::from_millis(40));
        *n += 1;
    });
    schedule.run_frames(&mut world, 2, Duration::from_millis(40));
    let ms = Duration::from_millis;
    assert_eq!(
        world.resource::<Seen>().0,
        [
            (ms(20), ms(20)),
            (ms(20), ms(40)),
            (ms(20), ms(60)),
            (ms(20), ms(80))
        ]
    );
    assert_eq!(*world.resource::<u32>(), 2, "the frame system ran");
    assert_eq!(world.resource::<Time>().delta(), ms(40));
    assert_eq!(world.resource::<Time>().elapsed(), ms(80));
}

/// Events sent and read, for the tests of issue #39, item 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key(u32);
#[derive(Default)]
struct Sent(u32);
#[derive(Default)]
struct Read(Vec<u32>);

fn send_key(mut keys: EventWriter<Key>, mut sent: ResMut<Sent>) {
    keys.send(Key(sent.0));
    sent.0 += 1;
}

fn read_keys(mut keys: EventReader<Key>, mut read: ResMut<Read>) {
    read.0.extend(keys.read().map(|k| k.0));
}

/// Issue #39, item 5: at 120 frames a second and a 50 Hz step, a fixed
/// system reads every event the frame systems sent, once each and in
/// order, though most frames run no fixed step at all.
#[test]
fn a_fixed_step_reader_sees_every_event_of_faster_frames() {
    let mut world = World::new();
    world.insert_resource(Sent::default());
    world.insert_resource(Read::default());
    world.insert_resource(FixedTime::from_hz(50.0));
    world.add_systems(FixedUpdate, read_keys);
    let mut frame = Schedule::new();
    frame.add_systems(send_key.run_if(|s: Res<Sent>| s.0 < 121));
    let dt = Duration::from_nanos(8_333_333);
    frame.run_frames(&mut world, 121, dt);
    assert_eq!(world.resource::<Sent>().0, 121);
    // A few more frames with nothing sent: the last events reach the
    // next fixed step.
    frame.run_frames(&mut world, 4, dt);
    assert!(world.resource::<FixedTime>().steps() >= 51);
    let read = &world.resource::<Read>().0;
    assert_eq!(*read, (0..121).collect::<Vec<_>>());
}

/// Issue #39, item 5: three fixed steps a frame do not age the events; a
/// frame system ordered before the writer reads each event in the next
/// frame, once.
#[test]
fn fixed_steps_do_not_drop_events_a_frame_reader_has_not_read() {
    let mut world = World::new();
    world.insert_resource(Sent::default());
    world.insert_resource(Read::default());
    world.insert_resource(0u32);
    world.insert_resource(FixedTime::new(Duration::from_millis(20)));
    world.add_systems(FixedUpdate, |mut n: ResMut<u32>| *n += 1);
    let mut frame = Schedule::new();
    frame.add_systems((read_keys, send_key).chain());
    frame.run_frames(&mut world, 10, Duration::from_millis(60));
    assert_eq!(*world.resource::<u32>(), 30, "three fixed steps a frame");
    assert_eq!(world.resource::<Read>().0, (0..9).collect::<Vec<_>>());
}

/// A panic in a fixed step leaves the frame's clock in `Time` and the
/// world out of the frame: later runs advance the events as before.
#[test]
fn a_panicking_fixed_step_puts_the_frame_clock_back() {
    struct Armed(bool);
    let mut world = World::new();
    world.insert_resource(Armed(true));
    world.insert_resource(FixedTime::new(Duration::from_millis(20)));
    world.add_systems(FixedUpdate, |mut armed: ResMut<Armed>| {
        if std::mem::replace(&mut armed.0, false) {
            panic!("step failed");
        }
    });
    let mut frame = Schedule::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        frame.run_frame(&mut world, Duration::from_millis(40))
    }));
    assert!(outcome.is_err());
    assert_eq!(world.resource::<Time>().delta(), Duration::from_millis(40));
    // Not stuck inside a frame: an outermost run still ages the events.
    world.send_event(Key(1));
    let mut plain = Schedule::new();
    plain.run(&mut world);
    plain.run(&mut world);
    assert!(world.events::<Key>().unwrap().is_empty());
}
