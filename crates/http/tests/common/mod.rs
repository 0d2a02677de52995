//! Shared helpers for the integration tests: the in-process responder on 127.0.0.1:0, a short
//! default config, the result document and its validation against schema/http.schema.json.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use npt_http::{Config, Target};
use npt_result::http::HttpBody;
use npt_result::workload::{Finished, Stop};
use npt_result::Document;
use npt_server::http_server::{ServerHandle, ServerOptions};

pub fn responder(tls: bool) -> (SocketAddr, ServerHandle) {
    let mut o = ServerOptions::new("127.0.0.1:0".parse().unwrap());
    o.tls = tls;
    o.threads = Some(1);
    npt_server::http_server::spawn_http_server(&o).expect("responder starts")
}

/// A short closed-loop run: 4 connections, 1 s, one client thread.
pub fn config(url: &str) -> Config {
    let mut c = Config::new(Target::parse(url).unwrap());
    c.connections = 4;
    c.duration = Duration::from_secs(1);
    c.timeout = Duration::from_secs(5);
    c.threads = Some(1);
    c
}

pub fn run(c: &Config) -> Finished<HttpBody> {
    npt_http::run(c, &Arc::new(Stop::new()), &mut |_| {}).expect("run completes")
}

pub fn document(r: Finished<HttpBody>) -> serde_json::Value {
    let doc = Document::new(
        "http",
        r.started,
        r.ended,
        r.stopped_by,
        serde_json::json!({}),
        r.body,
    );
    serde_json::from_slice(&doc.to_json_pretty()).unwrap()
}

/// Panics with every violation if `v` does not match schema/http.schema.json.
pub fn assert_valid(v: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../schema/http.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}

/// A free loopback port (bound to 0 and released; for commands that need a port number).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
