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
    npt_testkit::schema::assert_valid(v, "http");
}

#[allow(unused_imports)] // each test file uses a part of this module
pub use npt_testkit::process::free_port;
