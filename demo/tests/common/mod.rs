//! Helpers of the showcase's browser tests: the WebDriver client
//! (`webdriver.rs`, shared with `web/tests/page_browser.rs`) and the live
//! showcase with its inspector.

#![allow(dead_code)]

pub mod webdriver;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use webdriver::{Killed, http};

/// The showcase, live, with the inspector on a free loopback port: the
/// process (killed when dropped), the page's URL and the server's address.
pub fn showcase() -> (Killed, String, SocketAddr) {
    let mut demo = Command::new(env!("CARGO_BIN_EXE_mosaic-demo"))
        .args(["--inspect", "127.0.0.1:0", "--no-render"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the showcase");
    let stdout = demo.stdout.take().expect("piped stdout");
    let demo = Killed(demo);
    let url = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.split_once("Inspector: open ")
                .map(|(_, rest)| rest.split(' ').next().unwrap().to_owned())
        })
        .expect("the showcase prints the inspector's URL");
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("a loopback address");
    assert!(addr.ip().is_loopback());
    (demo, url, addr)
}

/// A JSON-RPC call to the showcase's inspector, with the same-origin
/// proof; its result (panics on an error answer).
pub fn rpc(addr: SocketAddr, method: &str, params: Value) -> Value {
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let (_, body) = http(addr, "POST", "/", Some(&call));
    let answer: Value = serde_json::from_slice(&body).expect("JSON");
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}
