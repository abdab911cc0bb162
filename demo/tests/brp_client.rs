//! A Bevy Remote Protocol client written from Bevy's BRP documentation,
//! run against the showcase (`--inspect`): JSON-RPC bodies as the docs
//! show them, components named by full type path; only the port differs
//! from Bevy's. It spawns, mutates, queries, reparents and despawns.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

mod common;

const POSITION: &str = "mosaic_demo::components::Position";
const CARRIED: &str = "mosaic_demo::components::Carried";

/// One JSON-RPC call over HTTP (`Connection: close`); the whole response.
fn brp(addr: SocketAddr, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 0, "method": method, "params": params }).to_string();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        addr.port(),
        body.len()
    )
    .unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    serde_json::from_slice(&response[split + 4..]).expect("a JSON answer")
}

fn ok(addr: SocketAddr, method: &str, params: Value) -> Value {
    let answer = brp(addr, method, params);
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

#[cfg_attr(miri, ignore = "starts a process")]
#[test]
fn a_client_from_bevys_docs_drives_the_showcase() {
    // Started as the browser tests start it (the client itself is below).
    let (_demo, _url, addr) = common::showcase();

    // Spawn a carrier and a lamp, by full type path.
    let spawn = |x: f64| {
        ok(
            addr,
            "world.spawn_entity",
            json!({ "components": { POSITION: { "x": x, "y": 100.0 } } }),
        )["entity"]
            .as_u64()
            .unwrap()
    };
    let (carrier, lamp) = (spawn(40.0), spawn(41.0));
    ok(
        addr,
        "world.insert_components",
        json!({ "entity": lamp, "components": { CARRIED: { "dx": 1.0, "dy": 2.0 } } }),
    );
    // Reparent the lamp under the carrier.
    ok(
        addr,
        "world.reparent_entities",
        json!({ "entities": [lamp], "parent": carrier }),
    );
    let info = ok(addr, "world.entity_info", json!({ "entity": lamp }));
    assert_eq!(info["parent"]["entity"], carrier, "{info}");

    // Mutate a field by path, then read it back.
    ok(
        addr,
        "world.mutate_components",
        json!({ "entity": carrier, "component": POSITION, "path": ".x", "value": 9.0 }),
    );
    let got = ok(
        addr,
        "world.get_components",
        json!({ "entity": carrier, "components": [POSITION], "strict": false }),
    );
    assert_eq!(got["components"][POSITION]["x"], 9.0, "{got}");

    // Query as Bevy's example client does: every component of the rows.
    let rows = ok(
        addr,
        "world.query",
        json!({ "data": { "components": [], "option": "all", "has": [] },
                "filter": { "with": [CARRIED], "without": [] }, "strict": false }),
    );
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["entity"] == lamp)
        .unwrap_or_else(|| panic!("the lamp in {rows}"));
    assert_eq!(row["components"][CARRIED], json!({ "dx": 1.0, "dy": 2.0 }));
    assert!(row["components"][POSITION].is_object(), "{row}");

    // Despawn the carrier: the lamp goes with it.
    ok(addr, "world.despawn_entity", json!({ "entity": carrier }));
    for entity in [carrier, lamp] {
        let answer = brp(
            addr,
            "world.get_components",
            json!({ "entity": entity, "components": [POSITION], "strict": true }),
        );
        assert_eq!(answer["error"]["code"], -23401, "{entity} gone: {answer}");
    }
}
