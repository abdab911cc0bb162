//! Integration tests for events: every `EventReader` sees every event exactly
//! once and in send order across frame boundaries, whether it runs before or
//! after the writer (both executors, many frames, a varying number of events
//! per frame, events sent from outside the schedule in between); several
//! writers and readers of one type (writers send in the order they were
//! added); the two-run lifetime (events dropped after two schedule runs, a
//! reader disabled for two runs misses them, `EventCursor::missed` counts
//! them); `world.send_event` / `event_cursor` / `read_events` / `events`
//! outside systems; `EventReader::is_empty`; and the semantics of
//! `Events::update` itself.

use mosaic::prelude::*;
use mosaic::{EventCursor, Events};

/// The event every test sends: who sent it, in which frame, and its number
/// within that writer's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Msg {
    writer: u8,
    frame: u32,
    seq: u32,
}

/// The frame number the test is about to run (set from outside).
#[derive(Debug, Default)]
struct Frame(u32);

/// Every event sent, in send order (writers push here as they send).
#[derive(Debug, Default)]
struct Sent(Vec<Msg>);

/// What reader `N` has seen, in the order it saw it.
#[derive(Debug, Default)]
struct Seen<const N: usize>(Vec<Msg>);

/// Writer id used for events sent with `world.send_event` between runs.
const OUTSIDE: u8 = 99;

/// How many events writer `writer` sends in frame `frame`: 0 to 6, with
/// runs of empty frames.
fn events_in(writer: u8, frame: u32) -> u32 {
    let x = frame
        .wrapping_mul(2_654_435_761)
        .wrapping_add(u32::from(writer) * 97)
        >> 7;
    match x % 9 {
        0..=1 => 0,
        n => n - 2,
    }
}

fn writer<const W: u8>(frame: Res<Frame>, mut events: EventWriter<Msg>, mut sent: ResMut<Sent>) {
    for seq in 0..events_in(W, frame.0) {
        let msg = Msg {
            writer: W,
            frame: frame.0,
            seq,
        };
        events.send(msg);
        sent.0.push(msg);
    }
}

fn reader<const N: usize>(mut events: EventReader<Msg>, mut seen: ResMut<Seen<N>>) {
    seen.0.extend(events.read().copied());
}

fn world_with_readers() -> World {
    let mut world = World::new();
    world.insert_resource(Frame::default());
    world.insert_resource(Sent::default());
    world.insert_resource(Seen::<0>::default());
    world.insert_resource(Seen::<1>::default());
    world.insert_resource(Seen::<2>::default());
    world.insert_resource(Seen::<3>::default());
    world
}

fn seen<const N: usize>(world: &World) -> &[Msg] {
    &world.resource::<Seen<N>>().0
}

fn sent(world: &World) -> &[Msg] {
    &world.resource::<Sent>().0
}

const EXECUTORS: [ExecutorKind; 2] = [ExecutorKind::SingleThreaded, ExecutorKind::Parallel];

/// One writer, a reader ordered before it and one ordered after it, plus
/// events sent from outside between runs: both readers see everything exactly
/// once, in send order; the one before the writer one frame late.
#[test]
fn readers_before_and_after_the_writer_see_every_event_once() {
    for kind in EXECUTORS {
        let mut world = world_with_readers();
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("write", writer::<0>);
        schedule
            .add_system("read_before", reader::<0>)
            .before("write");
        schedule
            .add_system("read_after", reader::<1>)
            .after("write");
        let frames = 200;
        let mut total = 0;
        for frame in 1..=frames {
            world.resource_mut::<Frame>().0 = frame;
            // Now and then an event from outside the schedule.
            if frame % 7 == 3 {
                let msg = Msg {
                    writer: OUTSIDE,
                    frame,
                    seq: 0,
                };
                world.send_event(msg);
                world.resource_mut::<Sent>().0.push(msg);
            }
            let sent_before_run = sent(&world).len();
            schedule.run(&mut world);
            let all = sent(&world);
            // The reader after the writer is fully caught up...
            assert_eq!(
                seen::<1>(&world),
                all,
                "{kind:?}, frame {frame}: reader after the writer"
            );
            // ...the one before it saw everything sent before this run.
            assert_eq!(
                seen::<0>(&world),
                &all[..sent_before_run],
                "{kind:?}, frame {frame}: reader before the writer"
            );
            total = all.len();
        }
        assert!(
            total > 300,
            "the workload should send plenty of events, sent {total}"
        );
        // A quiet frame lets the early reader catch up.
        let quiet = (1_000..).find(|&f| events_in(0, f) == 0).unwrap();
        world.resource_mut::<Frame>().0 = quiet;
        schedule.run(&mut world);
        assert_eq!(seen::<0>(&world), sent(&world), "{kind:?}");
        assert_eq!(seen::<1>(&world), sent(&world), "{kind:?}");
        // Nothing new: nothing more is read.
        schedule.run(&mut world);
        assert_eq!(seen::<0>(&world).len(), total);
        assert_eq!(seen::<1>(&world).len(), total);
    }
}

/// The frame numbers sent per frame really vary (including empty frames),
/// so the test above crosses boundaries with 0, 1 and many events.
#[test]
fn the_workload_varies_the_number_of_events_per_frame() {
    let counts: Vec<u32> = (1..=200).map(|f| events_in(0, f)).collect();
    assert!(counts.contains(&0));
    assert!(counts.contains(&1));
    assert!(counts.iter().any(|&n| n >= 5));
    assert!(
        counts.windows(2).any(|w| w[0] == 0 && w[1] == 0),
        "two empty frames in a row"
    );
}

/// Two writers and four readers of one type, in every position relative to
/// the writers: each reader sees the one global send order exactly once;
/// writers send in the order they were added.
#[test]
fn several_writers_and_readers_of_one_type() {
    for kind in EXECUTORS {
        let mut world = world_with_readers();
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_system("r_first", reader::<0>).before("w1");
        schedule.add_system("w1", writer::<1>);
        schedule
            .add_system("r_mid", reader::<1>)
            .after("w1")
            .before("w2");
        schedule.add_system("w2", writer::<2>);
        schedule.add_system("r_last", reader::<2>).after("w2");
        // No ordering: it still conflicts with the writers, so it never runs
        // during one of them.
        schedule.add_system("r_free", reader::<3>);
        // Under Miri 30 frames, not 120 (77 s of Miri time: the checks below
        // walk every event sent so far, each frame): frames 1 to 30 still
        // hold frames where both writers send (up to 6 each), where only
        // w1 or only w2 is silent (2, 3) and where both are (7, 12, 14, 19).
        let frames = if cfg!(miri) { 30 } else { 120 };
        for frame in 1..=frames {
            world.resource_mut::<Frame>().0 = frame;
            schedule.run(&mut world);
            let all = sent(&world);
            // Writers send in the order they were added: within a frame,
            // every event of w1 precedes every event of w2.
            let this_frame: Vec<u8> = all
                .iter()
                .filter(|m| m.frame == frame)
                .map(|m| m.writer)
                .collect();
            assert!(
                this_frame.windows(2).all(|w| w[0] <= w[1]),
                "{kind:?}, frame {frame}: {this_frame:?}"
            );
            assert_eq!(seen::<2>(&world), all, "{kind:?}, frame {frame}: r_last");
            for (name, got) in [
                ("r_first", seen::<0>(&world)),
                ("r_mid", seen::<1>(&world)),
                ("r_free", seen::<3>(&world)),
            ] {
                assert_eq!(
                    got,
                    &all[..got.len()],
                    "{kind:?}, frame {frame}: {name} must see a prefix, in order"
                );
            }
            // r_mid saw w1's events of this frame but not w2's.
            let w1_now = all
                .iter()
                .filter(|m| m.frame == frame && m.writer == 1)
                .count();
            let w2_now = all
                .iter()
                .filter(|m| m.frame == frame && m.writer == 2)
                .count();
            assert_eq!(
                seen::<1>(&world).len(),
                all.len() - w2_now,
                "{kind:?}, frame {frame}: r_mid"
            );
            assert_eq!(
                seen::<0>(&world).len(),
                all.len() - w1_now - w2_now,
                "{kind:?}, frame {frame}: r_first"
            );
        }
        // Two quiet frames (frame numbers whose plan sends nothing).
        let quiet = (1_000..)
            .find(|&f| events_in(1, f) == 0 && events_in(2, f) == 0)
            .unwrap();
        world.resource_mut::<Frame>().0 = quiet;
        schedule.run(&mut world);
        for got in [
            seen::<0>(&world),
            seen::<1>(&world),
            seen::<2>(&world),
            seen::<3>(&world),
        ] {
            assert_eq!(got, sent(&world), "{kind:?}");
        }
        let writers: Vec<u8> = sent(&world).iter().map(|m| m.writer).collect();
        assert!(writers.contains(&1) && writers.contains(&2));
    }
}

/// Events live for two schedule runs: still there after one, gone after two.
#[test]
fn events_are_dropped_after_two_schedule_runs() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("noop", || {});
    world.send_event(1u32);
    world.send_event(2u32);
    assert_eq!(world.events::<u32>().unwrap().len(), 2);
    schedule.run(&mut world);
    assert_eq!(
        world.events::<u32>().unwrap().len(),
        2,
        "kept through one run"
    );
    world.send_event(3u32);
    schedule.run(&mut world);
    assert_eq!(
        world.events::<u32>().unwrap().len(),
        1,
        "1 and 2 dropped after the second run"
    );
    let mut cursor = world.event_cursor::<u32>();
    assert_eq!(
        world.read_events(&mut cursor).copied().collect::<Vec<_>>(),
        [3]
    );
    schedule.run(&mut world);
    assert!(world.events::<u32>().unwrap().is_empty());
}

/// A reader disabled for one run still catches up; one disabled for two
/// runs misses what was sent before the first of them.
#[test]
fn a_reader_disabled_for_two_runs_misses_the_dropped_events() {
    for kind in EXECUTORS {
        for disabled_runs in [1u32, 2, 3] {
            let mut world = world_with_readers();
            let mut schedule = Schedule::new();
            schedule.set_executor(kind);
            schedule.add_system("write", writer::<0>);
            schedule.add_system("steady", reader::<0>).after("write");
            schedule.add_system("late", reader::<1>).after("write");
            // Frames that each send at least one event.
            let busy: Vec<u32> = (1..).filter(|&f| events_in(0, f) > 0).take(6).collect();
            schedule.set_enabled("late", false).unwrap();
            let mut per_frame = Vec::new();
            for (i, &frame) in busy.iter().enumerate() {
                if i as u32 == disabled_runs {
                    schedule.set_enabled("late", true).unwrap();
                }
                world.resource_mut::<Frame>().0 = frame;
                let before = sent(&world).len();
                schedule.run(&mut world);
                per_frame.push(before..sent(&world).len());
            }
            let all = sent(&world).to_vec();
            assert_eq!(
                seen::<0>(&world),
                all,
                "{kind:?}: the steady reader misses nothing"
            );
            // When re-enabled, the late reader still finds the events of the
            // previous run (if it was not dropped) and everything after.
            let first_kept = if disabled_runs >= 2 {
                per_frame[disabled_runs as usize - 1].start
            } else {
                0
            };
            assert_eq!(
                seen::<1>(&world),
                &all[first_kept..],
                "{kind:?}, disabled for {disabled_runs} runs"
            );
        }
    }
}

/// `EventCursor::missed` counts the events that were dropped before the
/// cursor read them, and only those.
#[test]
fn event_cursor_counts_missed_events() {
    let mut world = World::new();
    let mut fast = world.event_cursor::<Msg>();
    let mut slow = world.event_cursor::<Msg>();
    let mut one_behind = world.event_cursor::<Msg>();
    let msg = |frame, seq| Msg {
        writer: OUTSIDE,
        frame,
        seq,
    };
    for seq in 0..3 {
        world.send_event(msg(1, seq));
    }
    assert_eq!(world.read_events(&mut fast).count(), 3);
    world.update_events();
    world.send_event(msg(2, 0));
    world.send_event(msg(2, 1));
    assert_eq!(world.read_events(&mut fast).count(), 2);
    // one_behind reads after one update: nothing missed.
    assert_eq!(world.read_events(&mut one_behind).count(), 5);
    assert_eq!(one_behind.missed(), 0);
    world.update_events(); // frame 1's events are gone
    world.send_event(msg(3, 0));
    let got: Vec<Msg> = world.read_events(&mut slow).copied().collect();
    assert_eq!(got, [msg(2, 0), msg(2, 1), msg(3, 0)]);
    assert_eq!(slow.missed(), 3);
    assert_eq!(
        world.read_events(&mut fast).copied().collect::<Vec<_>>(),
        [msg(3, 0)]
    );
    assert_eq!(fast.missed(), 0);
    // Falling further behind adds to the count.
    world.update_events();
    world.update_events();
    world.send_event(msg(4, 0));
    assert_eq!(
        world.read_events(&mut slow).copied().collect::<Vec<_>>(),
        [msg(4, 0)]
    );
    assert_eq!(
        slow.missed(),
        3,
        "slow had read everything before these updates"
    );
    assert_eq!(world.read_events(&mut one_behind).count(), 1);
    assert_eq!(one_behind.missed(), 1);
}

/// A cursor made with `world.event_cursor` reads "every event sent from now
/// on (and those still held)": events dropped before it existed were never
/// its to read, so it has missed nothing.
#[test]
fn a_new_world_cursor_has_missed_nothing() {
    let mut world = World::new();
    world.send_event(1u32);
    world.send_event(2u32);
    world.update_events();
    world.update_events();
    world.send_event(3u32);
    let mut cursor = world.event_cursor::<u32>();
    assert_eq!(
        world.read_events(&mut cursor).copied().collect::<Vec<_>>(),
        [3]
    );
    assert_eq!(
        cursor.missed(),
        0,
        "events dropped before the cursor was made count as missed"
    );
}

/// `send_event`, `event_cursor`, `read_events` and `events` outside systems.
#[test]
fn world_event_api_outside_systems() {
    let mut world = World::new();
    assert!(world.events::<Msg>().is_none());
    // Reading a type never used yields nothing and registers nothing.
    let mut unused = EventCursor::<Msg>::default();
    assert_eq!(world.read_events(&mut unused).count(), 0);
    assert!(world.events::<Msg>().is_none());

    let msg = |seq| Msg {
        writer: OUTSIDE,
        frame: 0,
        seq,
    };
    world.send_event(msg(0));
    world.send_event(msg(1));
    // A cursor made after the sends still reads what is held.
    let mut a = world.event_cursor::<Msg>();
    assert_eq!(
        world.read_events(&mut a).copied().collect::<Vec<_>>(),
        [msg(0), msg(1)]
    );
    assert_eq!(world.read_events(&mut a).count(), 0, "each event once");
    world.send_event(msg(2));
    let mut b = world.event_cursor::<Msg>();
    assert_eq!(
        world.read_events(&mut a).copied().collect::<Vec<_>>(),
        [msg(2)]
    );
    assert_eq!(
        world.read_events(&mut b).copied().collect::<Vec<_>>(),
        [msg(0), msg(1), msg(2)]
    );
    // event_cursor on a fresh type registers it.
    let _c = world.event_cursor::<u64>();
    assert!(world.events::<u64>().unwrap().is_empty());
    // add_event keeps existing events.
    world.add_event::<Msg>();
    assert_eq!(world.events::<Msg>().unwrap().len(), 3);
    // update_events moves every registered type on.
    world.send_event(7u64);
    world.update_events();
    world.update_events();
    assert!(world.events::<Msg>().unwrap().is_empty());
    assert!(world.events::<u64>().unwrap().is_empty());
}

/// Events sent between runs with `world.send_event` reach a system's
/// reader once, and `is_empty` does not move the cursor.
#[test]
fn event_reader_in_a_system_reads_outside_events_once() {
    #[derive(Default, Debug)]
    struct Log(Vec<(bool, Vec<u32>)>);
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_system("read", |mut r: EventReader<u32>, mut log: ResMut<Log>| {
        let empty = r.is_empty();
        let again = r.is_empty();
        assert_eq!(empty, again);
        let got: Vec<u32> = r.read().copied().collect();
        assert!(r.is_empty());
        log.0.push((empty, got));
    });
    schedule.run(&mut world);
    world.send_event(1u32);
    world.send_event(2u32);
    schedule.run(&mut world);
    schedule.run(&mut world);
    world.send_event(3u32);
    schedule.run(&mut world);
    assert_eq!(
        world.resource::<Log>().0,
        [
            (true, vec![]),
            (false, vec![1, 2]),
            (true, vec![]),
            (false, vec![3])
        ]
    );
}

/// `Events::update`: two buffers; events survive exactly one update; ids
/// keep counting, so cursors stay right across updates.
#[test]
fn events_update_semantics() {
    let mut events = Events::default();
    let mut early = EventCursor::default();
    let mut late = EventCursor::default();
    assert!(events.is_empty());
    events.send(1);
    events.send(2);
    assert_eq!(early.read(&events).copied().collect::<Vec<i32>>(), [1, 2]);
    events.update();
    assert_eq!(events.len(), 2, "one update keeps them");
    events.send(3);
    assert_eq!(events.len(), 3);
    assert_eq!(early.read(&events).copied().collect::<Vec<_>>(), [3]);
    events.update();
    assert_eq!(events.len(), 1, "the second update drops 1 and 2");
    assert_eq!(late.read(&events).copied().collect::<Vec<_>>(), [3]);
    assert_eq!(late.missed(), 2);
    assert_eq!(early.read(&events).count(), 0);
    assert_eq!(early.missed(), 0);
    // Updates with nothing sent drop what is left.
    events.update();
    assert_eq!(events.len(), 0);
    assert!(events.is_empty());
    events.update();
    events.send(4);
    assert_eq!(early.read(&events).copied().collect::<Vec<_>>(), [4]);
    assert_eq!(late.read(&events).copied().collect::<Vec<_>>(), [4]);
    assert_eq!((early.missed(), late.missed()), (0, 2));
    // A brand-new cursor reads whatever is still held.
    let mut fresh = EventCursor::default();
    assert_eq!(fresh.read(&events).copied().collect::<Vec<_>>(), [4]);
    let debug = format!("{events:?}");
    assert!(debug.contains("Events"), "{debug}");
}

/// Issue #17, item 8: removing `Events<E>` and inserting it again keeps
/// one buffer swap per run, so events still live two runs.
#[test]
fn a_recreated_events_resource_is_swapped_once_per_run() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_system("noop", || {});
    world.add_event::<u32>();
    assert!(world.remove_resource::<Events<u32>>().is_some());
    world.add_event::<u32>();
    world.send_event(1u32);
    schedule.run(&mut world);
    assert_eq!(
        world.events::<u32>().unwrap().len(),
        1,
        "kept through one run after the resource was made again"
    );
    schedule.run(&mut world);
    assert!(world.events::<u32>().unwrap().is_empty());
}

/// Issue #17, item 9: a reader that stops early leaves the rest unread.
#[test]
fn a_reader_that_stops_early_keeps_the_rest_unread() {
    let mut world = World::new();
    for i in 0..3u32 {
        world.send_event(i);
    }
    let mut cursor = world.event_cursor::<u32>();
    assert_eq!(world.read_events(&mut cursor).next(), Some(&0));
    assert_eq!(
        world.read_events(&mut cursor).copied().collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(world.read_events(&mut cursor).next(), None);

    #[derive(Default)]
    struct Firsts(Vec<u32>);
    let mut schedule = Schedule::new();
    schedule.add_system(
        "first",
        |mut r: EventReader<u32>, mut out: ResMut<Firsts>| {
            if let Some(&e) = r.read().next() {
                out.0.push(e);
            }
        },
    );
    let mut world = World::new();
    world.insert_resource(Firsts::default());
    for i in 10..13u32 {
        world.send_event(i);
    }
    schedule.run(&mut world);
    schedule.run(&mut world);
    // Events live two runs: the third is gone by the third run.
    schedule.run(&mut world);
    assert_eq!(world.resource::<Firsts>().0, [10, 11]);
}

/// Issue #17, item 7: an `Events<E>` resource the user inserted before any
/// `add_event`/`send_event` is still updated, once per run.
#[test]
fn a_user_inserted_events_resource_is_updated_once_per_run() {
    let mut world = World::new();
    world.insert_resource(Events::<u32>::default());
    world.send_event(1u32);
    world.update_events();
    assert_eq!(world.events::<u32>().unwrap().len(), 1, "kept one update");
    world.update_events();
    assert_eq!(world.events::<u32>().unwrap().len(), 0, "gone after two");
    // Replaced by a fresh resource: still one swap per run, not two.
    world.insert_resource(Events::<u32>::default());
    world.send_event(2u32);
    world.add_event::<u32>();
    world.update_events();
    assert_eq!(world.events::<u32>().unwrap().len(), 1);
}

/// Issue #39, item 5: state transitions run schedules of their own, but
/// they belong to the frame: a frame reader ordered before the writer still
/// reads every event once, in the next frame, while every frame changes
/// state (`OnExit`, `OnTransition`, `OnEnter` each run), and events those
/// schedules send reach the frame's reader too.
#[test]
fn state_transition_schedules_do_not_age_the_frame_s_events() {
    #[derive(States, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    enum Light {
        #[default]
        Red,
        Green,
    }
    fn toggle(state: Res<State<Light>>, mut next: ResMut<NextState<Light>>) {
        next.set(match state.get() {
            Light::Red => Light::Green,
            Light::Green => Light::Red,
        });
    }
    let mut world = World::new();
    world.insert_resource(Frame::default());
    world.insert_resource(Seen::<0>::default());
    world.init_state::<Light>();
    for light in [Light::Red, Light::Green] {
        world.add_systems(OnExit(light), || {});
        world.add_systems(OnEnter(light), |mut w: EventWriter<Msg>| {
            w.send(Msg {
                writer: OUTSIDE,
                frame: 0,
                seq: 0,
            })
        });
    }
    let mut schedule = Schedule::new();
    schedule.add_systems(
        (
            |mut r: EventReader<Msg>, mut seen: ResMut<Seen<0>>| seen.0.extend(r.read().copied()),
            |mut w: EventWriter<Msg>, mut f: ResMut<Frame>| {
                w.send(Msg {
                    writer: 0,
                    frame: f.0,
                    seq: 0,
                });
                f.0 += 1;
            },
            toggle,
        )
            .chain(),
    );
    for _ in 0..6 {
        schedule.run_frame(&mut world, std::time::Duration::from_millis(16));
    }
    let seen = &world.resource::<Seen<0>>().0;
    let frames: Vec<u32> = seen
        .iter()
        .filter(|m| m.writer == 0)
        .map(|m| m.frame)
        .collect();
    assert_eq!(frames, [0, 1, 2, 3, 4]);
    // The first frame's OnEnter of the initial state, then one per frame.
    assert_eq!(seen.iter().filter(|m| m.writer == OUTSIDE).count(), 6);
}
