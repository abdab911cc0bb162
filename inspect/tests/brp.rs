//! A Bevy Remote Protocol client written from Bevy's BRP documentation:
//! request bodies as the docs show them, components and resources named by
//! full type path. Only the port differs from Bevy's 15702.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::{call, drive, ok};
use mosaic::prelude::*;
use mosaic::scene::TypeRegistry;
use mosaic_inspect::{Inspector, codes};
use serde_json::{Value, json};

/// Types in a module of their own, so their paths are `brp::game::…`.
mod game {
    use mosaic::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Component, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
    pub struct Transform {
        pub x: f32,
        pub y: f32,
    }

    #[derive(Component, Serialize, Deserialize, Debug, Clone, PartialEq)]
    pub struct Health(pub u32);

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    pub struct Score(pub u64);
}
use game::{Health, Score, Transform};

const TRANSFORM: &str = "brp::game::Transform";
const HEALTH: &str = "brp::game::Health";
const SCORE: &str = "brp::game::Score";

struct Game {
    world: World,
    schedule: Schedule,
    inspector: Inspector,
}

fn game() -> Game {
    assert_eq!(std::any::type_name::<Transform>(), TRANSFORM);
    let mut registry = TypeRegistry::new();
    registry.register::<Transform>();
    registry.register::<Health>();
    registry.register_resource::<Score>();
    let mut world = World::new();
    world.spawn((Transform { x: 1.0, y: 2.0 }, Health(5)));
    world.insert_resource(Score(3));
    let mut schedule = Schedule::new();
    schedule.add_system("noop", |_: Query<&Health>| {});
    let inspector = Inspector::builder()
        .registry(registry)
        .serve("127.0.0.1:0")
        .unwrap();
    Game {
        world,
        schedule,
        inspector,
    }
}

impl Game {
    fn drive<T: Send + 'static>(
        &mut self,
        client: impl FnOnce(SocketAddr) -> T + Send + 'static,
    ) -> T {
        drive(
            &mut self.inspector,
            &mut self.world,
            &mut self.schedule,
            client,
        )
    }
}

fn message(answer: &Value) -> String {
    answer["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn a_brp_client_spawns_mutates_queries_and_removes_by_type_path() {
    let mut g = game();
    let (spawned, got, rows, all, after_remove) = g.drive(|addr| {
        let spawned = ok(
            addr,
            "world.spawn_entity",
            json!({ "components": { TRANSFORM: { "x": 10.0, "y": 20.0 } } }),
        )["entity"]
            .as_u64()
            .unwrap();
        ok(
            addr,
            "world.insert_components",
            json!({ "entity": spawned, "components": { HEALTH: 9 } }),
        );
        ok(
            addr,
            "world.mutate_components",
            json!({ "entity": spawned, "component": TRANSFORM, "path": ".y", "value": 25.0 }),
        );
        let got = ok(
            addr,
            "world.get_components",
            json!({ "entity": spawned, "components": [TRANSFORM, HEALTH] }),
        );
        let rows = ok(
            addr,
            "world.query",
            json!({ "data": { "components": [TRANSFORM], "option": [], "has": [] },
                    "filter": { "with": [HEALTH], "without": [] }, "strict": false }),
        );
        let all = ok(
            addr,
            "world.query",
            json!({ "data": { "option": "all" }, "filter": { "with": [TRANSFORM] } }),
        );
        ok(
            addr,
            "world.remove_components",
            json!({ "entity": spawned, "components": [HEALTH] }),
        );
        let after_remove = ok(addr, "world.list_components", json!({ "entity": spawned }));
        (spawned, got, rows, all, after_remove)
    });
    let e = Entity::from_bits(spawned).unwrap();
    assert_eq!(
        g.world.get::<Transform>(e).unwrap(),
        &Transform { x: 10.0, y: 25.0 }
    );
    assert!(!g.world.has::<Health>(e));
    assert_eq!(
        got["components"][TRANSFORM],
        json!({ "x": 10.0, "y": 25.0 })
    );
    assert_eq!(got["components"][HEALTH], json!(9));
    assert_eq!(rows.as_array().unwrap().len(), 2, "{rows}");
    assert_eq!(rows[1]["components"][TRANSFORM]["y"], 25.0);
    // `"option": "all"`: every registered component, by type path.
    assert_eq!(all[0]["components"][HEALTH], json!(5), "{all}");
    assert_eq!(all[0]["components"][TRANSFORM]["x"], 1.0);
    assert_eq!(after_remove, json!(["Transform"]));
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn reparent_and_recursive_despawn() {
    let mut g = game();
    let (root, a, b) = g.drive(|addr| {
        let spawn = |addr| {
            ok(addr, "world.spawn_entity", json!({ "components": {} }))["entity"]
                .as_u64()
                .unwrap()
        };
        let (root, a, b) = (spawn(addr), spawn(addr), spawn(addr));
        ok(
            addr,
            "world.reparent_entities",
            json!({ "entities": [a], "parent": root }),
        );
        ok(
            addr,
            "world.reparent_entities",
            json!({ "entities": [b], "parent": a }),
        );
        (root, a, b)
    });
    let e = |bits| Entity::from_bits(bits).unwrap();
    assert_eq!(g.world.parent(e(a)), Some(e(root)));
    assert_eq!(g.world.parent(e(b)), Some(e(a)));
    let (cycle, info, found) = g.drive(move |addr| {
        // The root under its grandchild would close a cycle: refused.
        let cycle = call(
            addr,
            "world.reparent_entities",
            json!({ "entities": [root], "parent": b }),
        );
        let info = ok(addr, "world.entity_info", json!({ "entity": b }));
        let found = ok(addr, "world.find", json!({ "text": info["label"] }));
        (cycle, info, found)
    });
    assert_eq!(cycle["error"]["code"], codes::INVALID_PARAMS, "{cycle}");
    assert_eq!(g.world.parent(e(root)), None);
    assert_eq!(
        info["parent"]["entity"], a,
        "a child names its parent: {info}"
    );
    assert_eq!(found[0]["entity"], b);
    // No parent: back to a root.
    g.drive(move |addr| ok(addr, "world.reparent_entities", json!({ "entities": [b] })));
    assert_eq!(g.world.parent(e(b)), None);
    g.drive(move |addr| {
        ok(
            addr,
            "world.reparent_entities",
            json!({ "entities": [b], "parent": a }),
        )
    });
    // Despawning the root takes its descendants with it, as in Bevy.
    g.drive(move |addr| ok(addr, "world.despawn_entity", json!({ "entity": root })));
    for bits in [root, a, b] {
        assert!(!g.world.contains(e(bits)), "{bits} despawned");
    }
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn resources_schemas_schedules_and_unsupported_methods() {
    let mut g = game();
    let (got, schema, discover, schedules, trigger, unknown) = g.drive(|addr| {
        let got = ok(addr, "world.get_resources", json!({ "resource": SCORE }));
        ok(
            addr,
            "world.mutate_resources",
            json!({ "resource": SCORE, "path": "", "value": 8 }),
        );
        let schema = ok(addr, "registry.schema", json!({}));
        let discover = ok(addr, "rpc.discover", json!({}));
        let schedules = ok(addr, "schedule.list", json!({}));
        let trigger = call(
            addr,
            "world.trigger_event",
            json!({ "event": "brp::game::Boom" }),
        );
        let unknown = call(addr, "world.teleport", json!({}));
        (got, schema, discover, schedules, trigger, unknown)
    });
    assert_eq!(got["value"], 3);
    assert_eq!(g.world.resource::<Score>(), &Score(8));
    g.drive(|addr| ok(addr, "world.remove_resources", json!({ "resource": SCORE })));
    assert!(!g.world.contains_resource::<Score>());
    let again = g.drive(|addr| call(addr, "world.remove_resources", json!({ "resource": SCORE })));
    assert_eq!(
        again["error"]["code"],
        codes::RESOURCE_NOT_PRESENT,
        "{again}"
    );

    let transform = &schema[TRANSFORM];
    assert_eq!(transform["shortPath"], "Transform");
    assert_eq!(transform["reflectTypes"][0], "Component");
    assert_eq!(transform["properties"]["x"]["type"], "number", "{schema}");
    assert_eq!(schema[SCORE]["reflectTypes"][0], "Resource");

    let methods = discover["methods"].as_array().unwrap();
    let insert = methods
        .iter()
        .find(|m| m["name"] == "world.insert_components")
        .unwrap();
    assert_eq!(insert["params"][0]["schema"]["type"], "integer");
    let names = &insert["params"][1]["schema"]["propertyNames"]["enum"];
    assert!(
        names.as_array().unwrap().contains(&json!(TRANSFORM)),
        "{insert}"
    );
    assert!(
        methods
            .iter()
            .any(|m| m["name"] == "world.reparent_entities")
    );

    assert_eq!(schedules[0]["systems"], json!(["noop"]));
    assert_eq!(trigger["error"]["code"], codes::METHOD_NOT_FOUND);
    assert!(message(&trigger).starts_with("method not supported: world.trigger_event"));
    assert_eq!(message(&unknown), "method not supported: world.teleport");
}

/// Reads `count` server-sent events of a `+watch` call, running `between`
/// after the first.
fn watch_events(
    addr: SocketAddr,
    body: Value,
    count: usize,
    between: impl Fn(SocketAddr, usize),
) -> Vec<Value> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Mosaic-Inspector: 1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut events = Vec::new();
    let mut line = String::new();
    while events.len() < count {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(data) = line.strip_prefix("data: ") {
            events.push(serde_json::from_str::<Value>(data).unwrap());
            between(addr, events.len());
        }
    }
    events
}

#[cfg_attr(miri, ignore = "opens sockets")]
#[test]
fn watches_send_what_was_added_and_removed() {
    let mut g = game();
    let first = g
        .world
        .spawn((Transform { x: 0.0, y: 0.0 }, Health(1)))
        .to_bits();
    let events = g.drive(move |addr| {
        watch_events(
            addr,
            json!({ "jsonrpc": "2.0", "id": 1, "method": "world.get_components+watch",
                    "params": { "entity": first, "components": [TRANSFORM, HEALTH] } }),
            3,
            |addr, n| match n {
                1 => {
                    ok(addr, "world.mutate_components",
                        json!({ "entity": first, "component": TRANSFORM, "path": "x", "value": 4.0 }));
                }
                2 => {
                    ok(addr, "world.remove_components",
                        json!({ "entity": first, "components": [HEALTH] }));
                }
                _ => {}
            },
        )
    });
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["result"]["components"][HEALTH], 1);
    // Only what changed: the new Transform, not the unchanged Health.
    assert_eq!(
        events[1]["result"]["components"],
        json!({ TRANSFORM: { "x": 4.0, "y": 0.0 } })
    );
    assert_eq!(events[1]["result"]["removed"], json!([]));
    assert_eq!(events[2]["result"]["components"], json!({}));
    assert_eq!(events[2]["result"]["removed"], json!([HEALTH]));

    let events = g.drive(move |addr| {
        watch_events(
            addr,
            json!({ "jsonrpc": "2.0", "id": 2, "method": "world.list_components+watch",
                    "params": { "entity": first } }),
            2,
            |addr, n| {
                if n == 1 {
                    ok(
                        addr,
                        "world.insert_components",
                        json!({ "entity": first, "components": { HEALTH: 2 } }),
                    );
                }
            },
        )
    });
    assert_eq!(events[0]["result"]["added"], json!(["Transform"]));
    assert_eq!(
        events[1]["result"],
        json!({ "added": ["Health"], "removed": [] })
    );
}
