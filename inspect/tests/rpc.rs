//! The JSON-RPC interface over real HTTP: every method, and bad requests
//! answered with errors that change nothing.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{call, drive, err, http, ok, post_raw};
use mosaic::prelude::*;
use mosaic::scene::TypeRegistry;
use mosaic_inspect::{InspectError, Inspector, codes};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
#[component(storage = "sparse")]
struct Burning {
    heat: u32,
}

/// Not registered: shown by name, storage and size only.
#[derive(Component, Debug)]
struct Secret(#[allow(dead_code)] [u8; 24]);

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Score(u64);

#[derive(Default)]
struct Ticks(u64);

struct Ping;

fn registry() -> TypeRegistry {
    let mut registry = TypeRegistry::new();
    registry.register::<Position>();
    registry.register::<Burning>();
    registry.register_resource::<Score>();
    registry
}

struct Game {
    world: World,
    schedule: Schedule,
    inspector: Inspector,
    first: Entity,
}

fn game() -> Game {
    let mut world = World::new();
    let first = world.spawn((Position { x: 1.0, y: 2.0 }, Secret([0; 24])));
    for i in 0..9 {
        world.spawn(Position {
            x: i as f32,
            y: 0.0,
        });
    }
    world.spawn((Position { x: 50.0, y: 0.0 }, Burning { heat: 7 }));
    world.insert_resource(Score(3));
    world.insert_resource(Ticks::default());
    world.send_event(Ping);
    world.send_event(Ping);
    let mut schedule = Schedule::new();
    schedule.add_system("tick", |mut t: ResMut<Ticks>| t.0 += 1);
    schedule.add_system("drift", |mut q: Query<&mut Position, Without<Secret>>| {
        for p in q.iter_mut() {
            p.y += 1.0;
        }
    });
    let inspector = Inspector::builder()
        .registry(registry())
        .serve("127.0.0.1:0")
        .unwrap();
    Game {
        world,
        schedule,
        inspector,
        first,
    }
}

impl Game {
    fn drive<T: Send + 'static>(
        &mut self,
        client: impl FnOnce(std::net::SocketAddr) -> T + Send + 'static,
    ) -> T {
        drive(
            &mut self.inspector,
            &mut self.world,
            &mut self.schedule,
            client,
        )
    }
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn overview_query_and_paging() {
    let mut g = game();
    // Before any frame: the two events sent are held.
    let answer = g.inspector.answer_json(
        &mut g.world,
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"world.overview"}"#,
    );
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        answer["result"]["events"],
        json!([{ "name": "Ping", "count": 2 }])
    );
    let first = g.first.to_bits();
    let (overview, page1, page2, sparse, listed, has) = g.drive(move |addr| {
        (
            ok(addr, "world.overview", json!({})),
            ok(addr, "world.query", json!({ "data": { "components": ["Position"] }, "limit": 4 })),
            ok(addr, "world.query", json!({ "data": { "components": ["Position"] }, "offset": 8, "limit": 4 })),
            ok(addr, "world.query", json!({ "data": { "components": ["Burning"] }, "filter": { "with": ["Position"] } })),
            ok(addr, "world.list_components", json!({})),
            ok(addr, "world.query", json!({ "data": { "has": ["Secret"] }, "filter": { "without": ["Burning"] }, "limit": 1 })),
        )
    });
    assert_eq!(overview["entities"], 11);
    assert_eq!(overview["events"][0]["name"], "Ping");
    let sparse_sets = overview["sparse_sets"].as_array().unwrap();
    assert_eq!(sparse_sets[0]["component"], "Burning");
    assert_eq!(sparse_sets[0]["len"], 1);
    let rows: usize = overview["archetypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["rows"].as_u64().unwrap() as usize)
        .sum();
    assert_eq!(rows, 11);
    assert_eq!(page1.as_array().unwrap().len(), 4);
    assert_eq!(page2.as_array().unwrap().len(), 3, "11 entities: 8..11");
    assert_eq!(page1[0]["entity"], first);
    assert_eq!(
        page1[0]["components"]["Position"],
        json!({ "x": 1.0, "y": 2.0 })
    );
    assert_eq!(sparse.as_array().unwrap().len(), 1);
    assert_eq!(sparse[0]["components"]["Burning"]["heat"], 7);
    let listed: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        listed.contains(&"Position") && listed.contains(&"Secret") && listed.contains(&"Burning")
    );
    assert_eq!(has[0]["has"]["Secret"], true);
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn entity_values_are_read_and_edited_through_the_registry() {
    let mut g = game();
    let e = g.first.to_bits();
    let (info, got) = g.drive(move |addr| {
        let info = ok(addr, "world.entity_info", json!({ "entity": e }));
        let got = ok(
            addr,
            "world.get_components",
            json!({ "entity": e, "components": ["Position", "Secret"] }),
        );
        ok(
            addr,
            "world.insert_components",
            json!({ "entity": e, "components": { "Burning": { "heat": 99 } } }),
        );
        ok(
            addr,
            "world.mutate_components",
            json!({ "entity": e, "component": "Position", "path": ".x", "value": 42.5 }),
        );
        (info, got)
    });
    let secret = info["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Secret")
        .unwrap();
    assert_eq!(secret["registered"], false);
    assert_eq!(secret["storage"], "table");
    assert_eq!(secret["size"], 24);
    assert_eq!(got["components"]["Position"]["y"], 2.0);
    assert_eq!(got["errors"]["Secret"]["code"], codes::COMPONENT_ERROR);
    assert_eq!(
        g.world.get::<Burning>(g.first).unwrap(),
        &Burning { heat: 99 }
    );
    assert_eq!(
        g.world.get::<Position>(g.first).unwrap(),
        &Position { x: 42.5, y: 2.0 }
    );

    g.drive(move |addr| {
        ok(
            addr,
            "world.remove_components",
            json!({ "entity": e, "components": ["Burning"] }),
        )
    });
    assert!(!g.world.has::<Burning>(g.first));

    let spawned = g.drive(|addr| {
        let r = ok(
            addr,
            "world.spawn_entity",
            json!({ "components": { "Position": { "x": 5.0, "y": 6.0 } } }),
        );
        r["entity"].as_u64().unwrap()
    });
    let spawned = Entity::from_bits(spawned).unwrap();
    // The game keeps running frames until the client returns, and "drift"
    // moves every entity without `Secret` one unit a frame: on a loaded
    // machine some frames fall between the spawn and the reply.
    let at = *g.world.get::<Position>(spawned).unwrap();
    assert_eq!(at.x, 5.0);
    let drifted = at.y - 6.0;
    assert!(
        drifted >= 0.0 && drifted.fract() == 0.0,
        "spawned at y = 6 and only drifted whole frames since, got {at:?}"
    );
    g.drive(move |addr| {
        ok(
            addr,
            "world.despawn_entity",
            json!({ "entity": spawned.to_bits() }),
        )
    });
    assert!(!g.world.contains(spawned));
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn bad_requests_get_errors_and_change_nothing() {
    let mut g = game();
    let e = g.first.to_bits();
    let stale = {
        let gone = g.world.spawn(Position { x: 0.0, y: 0.0 });
        g.world.despawn(gone).unwrap();
        gone.to_bits()
    };
    let before_pos = *g.world.get::<Position>(g.first).unwrap();
    let entities = g.world.len();
    // Pause, so no system moves anything while the bad requests land.
    g.inspector.set_paused(true);
    let codes_seen = g.drive(move |addr| {
        vec![
            post_raw(addr, b"{\"jsonrpc\": \"2.0\", \"method\": ")["error"]["code"]
                .as_i64()
                .unwrap(),
            post_raw(addr, b"[]")["error"]["code"].as_i64().unwrap(),
            err(addr, "world.teleport", json!({})),
            err(
                addr,
                "world.get_components",
                json!({ "entity": stale, "components": ["Position"] }),
            ),
            err(
                addr,
                "world.insert_components",
                json!({ "entity": stale, "components": { "Position": { "x": 1.0, "y": 1.0 } } }),
            ),
            // Wrong shape: a string for a float; and a half-good insert.
            err(
                addr,
                "world.insert_components",
                json!({ "entity": e, "components": { "Position": { "x": "far", "y": 1.0 } } }),
            ),
            err(
                addr,
                "world.insert_components",
                json!({ "entity": e, "components": { "Burning": { "heat": 1 }, "Position": [1] } }),
            ),
            err(
                addr,
                "world.mutate_components",
                json!({ "entity": e, "component": "Position", "path": ".z", "value": 1.0 }),
            ),
            err(
                addr,
                "world.mutate_components",
                json!({ "entity": e, "component": "Position", "path": ".x", "value": [] }),
            ),
            err(
                addr,
                "world.remove_components",
                json!({ "entity": e, "components": ["Position", "Burning"] }),
            ),
            err(
                addr,
                "world.spawn_entity",
                json!({ "components": { "Position": 3 } }),
            ),
            err(
                addr,
                "world.get_components",
                json!({ "entity": "first", "components": ["Position"] }),
            ),
            err(
                addr,
                "world.insert_resources",
                json!({ "resource": "Score", "value": "many" }),
            ),
            err(addr, "world.get_resources", json!({ "resource": "Nope" })),
            err(
                addr,
                "schedule.set_enabled",
                json!({ "system": "nope", "enabled": false }),
            ),
        ]
    });
    assert_eq!(
        codes_seen,
        [
            codes::PARSE_ERROR,
            codes::INVALID_REQUEST,
            codes::METHOD_NOT_FOUND,
            codes::ENTITY_NOT_FOUND,
            codes::ENTITY_NOT_FOUND,
            codes::COMPONENT_ERROR,
            codes::COMPONENT_ERROR,
            codes::COMPONENT_ERROR,
            codes::COMPONENT_ERROR,
            codes::COMPONENT_NOT_PRESENT,
            codes::COMPONENT_ERROR,
            codes::INVALID_PARAMS,
            codes::RESOURCE_ERROR,
            codes::RESOURCE_ERROR,
            codes::SCHEDULE_ERROR,
        ]
    );
    assert_eq!(g.world.get::<Position>(g.first).unwrap(), &before_pos);
    assert!(
        !g.world.has::<Burning>(g.first),
        "the half-good insert was undone"
    );
    assert_eq!(g.world.len(), entities, "the failed spawn left nothing");
    assert_eq!(g.world.resource::<Score>(), &Score(3));
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn oversized_bodies_are_refused_unread() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    let mut inspector = Inspector::builder()
        .max_body(256)
        .serve("127.0.0.1:0")
        .unwrap();
    let (status, body) = drive(&mut inspector, &mut world, &mut schedule, |addr| {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.spawn_entity\",\"params\":{{\"pad\":\"{}\"}}}}",
            "x".repeat(1000)
        );
        let (status, _, body) = http(addr, "POST", "/", &[], big.as_bytes());
        (status, body)
    });
    assert_eq!(status, 413);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["error"]["code"], codes::INVALID_REQUEST);
    assert_eq!(world.len(), 0);
}

/// Lets a few frames run with timing on, reads `schedule.graph`, then
/// disables `system` over the wire; returns the graph read before.
fn graph_then_disable(g: &mut Game, system: &str) -> serde_json::Value {
    let system = system.to_owned();
    g.drive(move |addr| {
        ok(addr, "world.overview", json!({}));
        std::thread::sleep(Duration::from_millis(30));
        let graph = ok(addr, "schedule.graph", json!({}));
        ok(
            addr,
            "schedule.set_enabled",
            json!({ "system": system, "enabled": false }),
        );
        graph
    })
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn schedule_graph_toggles_pause_and_step() {
    let mut g = game();
    let graph = graph_then_disable(&mut g, "tick");
    let systems = graph["systems"].as_array().unwrap();
    let tick = systems.iter().find(|s| s["name"] == "tick").unwrap();
    assert_eq!(tick["enabled"], true);
    assert_eq!(tick["access"]["resources_write"], json!(["Ticks"]));
    assert!(tick["timing"]["runs"].as_u64().unwrap() > 0, "{tick}");
    let drift = systems.iter().find(|s| s["name"] == "drift").unwrap();
    assert_eq!(drift["access"]["writes"], json!(["Position"]));
    assert!(!g.schedule.is_enabled("tick"));
    let ticks = g.world.resource::<Ticks>().0;
    for _ in 0..3 {
        g.inspector
            .run_frame(&mut g.world, &mut g.schedule, Duration::from_millis(1));
    }
    assert_eq!(
        g.world.resource::<Ticks>().0,
        ticks,
        "a disabled system does not run"
    );

    // Pause: frames stop; step: exactly the frames asked for.
    g.schedule.set_enabled("tick", true).unwrap();
    g.drive(|addr| ok(addr, "schedule.pause", json!({ "paused": true })));
    let frame = g.world.resource::<Time>().frame();
    for _ in 0..5 {
        g.inspector
            .run_frame(&mut g.world, &mut g.schedule, Duration::from_millis(1));
    }
    assert_eq!(g.world.resource::<Time>().frame(), frame);
    g.drive(|addr| ok(addr, "schedule.step", json!({ "frames": 2 })));
    for _ in 0..5 {
        g.inspector
            .run_frame(&mut g.world, &mut g.schedule, Duration::from_millis(1));
    }
    assert_eq!(g.world.resource::<Time>().frame(), frame + 2);
    assert!(g.inspector.is_paused());
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn the_fixed_step_schedule_is_listed_and_toggled_too() {
    let mut g = game();
    g.world
        .insert_resource(FixedTime::new(Duration::from_millis(1)));
    g.world
        .schedule_mut(FixedUpdate)
        .add_system("fall", |mut q: Query<&mut Position>| {
            for p in q.iter_mut() {
                p.y -= 1.0;
            }
        });
    let graph = graph_then_disable(&mut g, "fall");
    let systems = graph["systems"].as_array().unwrap();
    assert_eq!(systems[0]["name"], "fall", "the fixed step runs first");
    assert_eq!(systems[0]["schedule"], "FixedUpdate");
    assert!(
        systems[0]["timing"]["runs"].as_u64().unwrap() > 0,
        "{graph}"
    );
    assert!(
        systems
            .iter()
            .any(|s| s["name"] == "tick" && s["schedule"] == "frame")
    );
    let fixed = g.world.get_schedule(FixedUpdate).unwrap();
    assert!(!fixed.is_enabled("fall"));
    assert!(g.schedule.is_enabled("tick"));
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn resources_discover_and_batches() {
    let mut g = game();
    let (listed, score, discover, batch) = g.drive(|addr| {
        let listed = ok(addr, "world.list_resources", json!({}));
        ok(
            addr,
            "world.mutate_resources",
            json!({ "resource": "Score", "path": "", "value": 8 }),
        );
        let score = ok(addr, "world.get_resources", json!({ "resource": "Score" }));
        let discover = ok(addr, "rpc.discover", json!({}));
        let batch = post_raw(
            addr,
            br#"[{"jsonrpc":"2.0","id":1,"method":"world.list_resources"},
                {"jsonrpc":"2.0","method":"world.overview"},
                {"jsonrpc":"2.0","id":3,"method":"nope"}, 7]"#,
        );
        (listed, score, discover, batch)
    });
    let listed: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(listed.contains(&"Score") && listed.contains(&"Ticks"));
    assert_eq!(score["value"], 8);
    assert_eq!(g.world.resource::<Score>(), &Score(8));
    let names: Vec<&str> = discover["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for method in [
        "world.query",
        "world.get_components",
        "world.mutate_components",
        "schedule.graph",
        "rpc.discover",
    ] {
        assert!(names.contains(&method), "{method}");
    }
    // The notification gets no answer; the rest answer in order.
    let batch = batch.as_array().unwrap();
    assert_eq!(batch.len(), 3);
    assert_eq!(batch[0]["id"], 1);
    assert_eq!(batch[1]["error"]["code"], codes::METHOD_NOT_FOUND);
    assert_eq!(batch[2]["error"]["code"], codes::INVALID_REQUEST);
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn watch_streams_changed_values_as_server_sent_events() {
    let mut g = game();
    let e = g.first.to_bits();
    // The tracked entity is not moved by `drift` (it has a Secret), so
    // the stream changes only when the test edits it.
    let events = g.drive(move |addr| {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let body = json!({ "jsonrpc": "2.0", "id": 9, "method": "world.get_components+watch",
                           "params": { "entity": e, "components": ["Position"] } })
        .to_string();
        write!(
            stream,
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut events = Vec::new();
        let mut line = String::new();
        while events.len() < 2 {
            line.clear();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            if let Some(data) = line.strip_prefix("data: ") {
                events.push(serde_json::from_str::<serde_json::Value>(data).unwrap());
                if events.len() == 1 {
                    ok(addr, "world.mutate_components", json!({ "entity": e, "component": "Position", "path": "y", "value": -1.0 }));
                }
            }
        }
        events
    });
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["result"]["components"]["Position"]["y"], 2.0);
    assert_eq!(events[1]["result"]["components"]["Position"]["y"], -1.0);
    assert_eq!(events[1]["id"], 9);
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn page_is_served_and_foreign_requests_are_refused() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    let mut inspector = Inspector::builder()
        .token("letmein")
        .serve("127.0.0.1:0")
        .unwrap();
    assert!(inspector.url().ends_with("?token=letmein"));
    let statuses = drive(&mut inspector, &mut world, &mut schedule, |addr| {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"world.overview"}"#;
        let (page, _, html) = http(addr, "GET", "/", &[], b"");
        assert!(String::from_utf8_lossy(&html).contains("<html"));
        vec![
            page,
            http(addr, "POST", "/", &[], body).0,
            http(
                addr,
                "POST",
                "/",
                &[("Authorization", "Bearer wrong")],
                body,
            )
            .0,
            http(
                addr,
                "POST",
                "/",
                &[("Authorization", "Bearer letmein")],
                body,
            )
            .0,
            http(addr, "POST", "/?token=letmein", &[], body).0,
            http(
                addr,
                "POST",
                "/?token=letmein",
                &[("Origin", "http://evil.example")],
                body,
            )
            .0,
            http(addr, "GET", "/nothing?token=letmein", &[], b"").0,
        ]
    });
    assert_eq!(statuses, [200, 401, 401, 200, 200, 403, 404]);
    // Not loopback without a token; with one, allowed.
    assert!(matches!(
        Inspector::serve("0.0.0.0:0"),
        Err(InspectError::RemoteNotAllowed(_))
    ));
    assert!(matches!(
        Inspector::builder().allow_remote("").serve("0.0.0.0:0"),
        Err(InspectError::EmptyToken)
    ));
    let _ = call;
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn watch_over_get_for_event_source() {
    let mut g = game();
    let event = g.drive(|addr| {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // {"jsonrpc":"2.0","id":"w","method":"world.overview"}, percent-encoded.
        let request = "%7B%22jsonrpc%22%3A%222.0%22%2C%22id%22%3A%22w%22%2C%22method%22%3A%22world.overview%22%7D";
        write!(stream, "GET /watch?request={request} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        let mut head = String::new();
        loop {
            line.clear();
            assert!(reader.read_line(&mut line).unwrap() > 0, "stream ended");
            if let Some(data) = line.strip_prefix("data: ") {
                return (head, serde_json::from_str::<serde_json::Value>(data).unwrap());
            }
            head.push_str(&line);
        }
    });
    assert!(event.0.contains("text/event-stream"), "{}", event.0);
    assert_eq!(event.1["id"], "w");
    assert_eq!(event.1["result"]["entities"], 11);
}

/// `world.query`'s rows are written as JSON text on the game thread and
/// spliced into the response: the text is valid JSON, a name asked twice
/// is one key, `option: "all"` adds the other registered components by
/// type path, `has` says what is present, a strict failure is an error
/// and nothing else, and a batch with a query is one valid array.
#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn query_rows_written_as_text_are_valid_json() {
    let mut g = game();
    let ask = |g: &mut Game, body: serde_json::Value| -> serde_json::Value {
        let text = g
            .inspector
            .answer_json(&mut g.world, None, &body.to_string());
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    let answer = ask(
        &mut g,
        json!({ "jsonrpc": "2.0", "id": "q", "method": "world.query", "params": {
            "data": { "components": ["Position", "Position"], "option": "all", "has": ["Secret", "Burning", "Nope"] },
            "filter": { "with": ["Burning"] },
        }}),
    );
    assert_eq!(answer["id"], "q");
    let rows = answer["result"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let components = rows[0]["components"].as_object().unwrap();
    let burning_path = std::any::type_name::<Burning>();
    assert_eq!(components.len(), 2, "{components:?}");
    assert_eq!(components["Position"], json!({ "x": 50.0, "y": 0.0 }));
    assert_eq!(components[burning_path], json!({ "heat": 7 }));
    assert_eq!(
        rows[0]["has"],
        json!({ "Secret": false, "Burning": true, "Nope": false })
    );

    // Unregistered without `strict`: its name, storage and size.
    let answer = ask(
        &mut g,
        json!({ "jsonrpc": "2.0", "id": 2, "method": "world.query", "params": {
            "data": { "components": ["Secret"] } }}),
    );
    assert_eq!(
        answer["result"][0]["components"]["Secret"]["unregistered"]["size"],
        24
    );
    // With `strict`: an error, no rows.
    let answer = ask(
        &mut g,
        json!({ "jsonrpc": "2.0", "id": 3, "method": "world.query", "params": {
            "data": { "components": ["Secret"] }, "strict": true }}),
    );
    assert_eq!(answer["error"]["code"], codes::COMPONENT_ERROR);
    assert!(answer.get("result").is_none());

    // Cut by the limit: `truncated` and `next` beside the spliced rows.
    let answer = ask(
        &mut g,
        json!([
            { "jsonrpc": "2.0", "id": 4, "method": "world.query", "params": {
                "data": { "components": ["Position"] }, "limit": 2 }},
            { "jsonrpc": "2.0", "id": 5, "method": "world.overview" },
        ]),
    );
    assert_eq!(answer[0]["result"].as_array().unwrap().len(), 2);
    assert_eq!(answer[0]["truncated"], true);
    assert_eq!(answer[0]["next"], json!({ "offset": 2 }));
    assert_eq!(answer[1]["result"]["entities"], 11);
}

/// `world.hierarchy` and `world.find` in a world of 100,000 entities, a
/// few of them in a tree or named: the answers name exactly those (they
/// visit the `ChildOf` edges and the named entities, not the world).
#[cfg_attr(miri, ignore = "a large world")]
#[test]
fn hierarchy_and_find_in_a_large_world() {
    let mut world = World::new();
    world.spawn_batch((0..100_000).map(|i| Position {
        x: i as f32,
        y: 0.0,
    }));
    let root = world.spawn(Name::new("Castle"));
    let hall = world.spawn_child(root, Name::new("Great hall")).unwrap();
    let lamp = world
        .spawn_child(hall, Position { x: 0.0, y: 0.0 })
        .unwrap();
    let lone = world.spawn(Name::new("castle gate"));
    let mut inspector = Inspector::serve("127.0.0.1:0").unwrap();
    let mut ask = |world: &mut World, method: &str, params: serde_json::Value| {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let text = inspector.answer_json(world, None, &body.to_string());
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
        answer["result"].clone()
    };
    let tree = ask(&mut world, "world.hierarchy", json!({}));
    let mut nodes: Vec<(u64, Option<u64>)> = tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["entity"].as_u64().unwrap(), n["parent"].as_u64()))
        .collect();
    assert_eq!(nodes[0], (root.to_bits(), None), "the root first");
    nodes.sort_unstable();
    let mut want = vec![
        (root.to_bits(), None),
        (hall.to_bits(), Some(root.to_bits())),
        (lamp.to_bits(), Some(hall.to_bits())),
    ];
    want.sort_unstable();
    assert_eq!(nodes, want);
    assert_eq!(tree["truncated"], false);
    assert_eq!(tree["nodes"][0]["name"], "Castle");
    let cut = ask(&mut world, "world.hierarchy", json!({ "limit": 2 }));
    assert_eq!(cut["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(cut["truncated"], true);

    let found = ask(&mut world, "world.find", json!({ "text": "CASTLE" }));
    let mut ids: Vec<u64> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["entity"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    let mut want = vec![root.to_bits(), lone.to_bits()];
    want.sort_unstable();
    assert_eq!(ids, want);
    let by_id = ask(
        &mut world,
        "world.find",
        json!({ "text": lamp.to_bits().to_string() }),
    );
    assert_eq!(
        by_id,
        json!([{ "entity": lamp.to_bits(), "label": format!("{lamp:?}"), "name": null }])
    );
    let one = ask(
        &mut world,
        "world.find",
        json!({ "text": "castle", "limit": 1 }),
    );
    assert_eq!(one.as_array().unwrap().len(), 1);
}
