//! `npt http`'s setup block on loopback against `npt serve --http --tls`: one attempt per
//! connection the run opened, each layer's median the phase's median (the same samples,
//! judged by `npt setup`'s rule), the base round trip from the requests on connections already
//! in use — or, with `--new-conn`, where none is, from the TCP connects — in the text, and as
//! layer rows in `npt compare`.

#![cfg(test)]

use std::process::Command;

use serde_json::Value;

use super::http::serve_http_with;
use npt_testkit::schema::assert_valid;

/// A 1-second run: its document and its text.
fn run(url: &str, extra: &[&str]) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("http.json");
    let out = Command::new(env!("CARGO_BIN_EXE_npt"))
        .args(["http", url, "-k", "-d", "1s", "--json"])
        .arg(&json)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_valid(&doc, "http");
    (doc, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn layer<'a>(setup: &'a Value, name: &str) -> &'a Value {
    setup["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == name)
        .unwrap_or_else(|| panic!("no layer {name} in {setup}"))
}

/// The block's counts are the connections the run made and its medians are the phases'.
fn check(doc: &Value) -> &Value {
    let (s, setup) = (&doc["summary"], &doc["setup"]);
    let opened = s["connections_opened"].as_u64().unwrap();
    assert!(opened > 0, "{s}");
    assert_eq!(setup["summary"]["attempts"].as_u64(), Some(opened));
    assert_eq!(s["errors"].as_u64(), Some(0), "{s}");
    // A connection whose first request was still out at the end is an attempt, not completed.
    let completed = setup["summary"]["completed"].as_u64().unwrap();
    let requests = s["requests"].as_u64().unwrap();
    assert!(completed <= opened, "{setup}");
    assert_eq!(setup["summary"]["tls_version"], "1.3");
    for (name, phase) in [("tcp_connect", "connect"), ("tls", "tls")] {
        let l = layer(setup, name);
        assert_eq!(l["samples"].as_u64(), Some(opened), "{l}");
        let (a, b) = (f(&l["p50_ms"]), f(&s["phases_ms"][phase]["p50"]));
        assert!(
            (a - b).abs() < 1e-9,
            "{name} p50 {a} ms, phase {phase} p50 {b} ms"
        );
        assert!(f(&l["rtts"]) > 0.0, "{l}");
    }
    assert_eq!(
        layer(setup, "first_byte")["samples"].as_u64(),
        Some(completed)
    );
    if s["new_conn"] == true {
        // Every answered request was a connection's first.
        assert!(completed >= requests, "{completed} of {requests}");
    } else {
        assert_eq!(completed, opened, "{setup}");
    }
    setup
}

#[test]
fn keep_alive_connections_are_the_attempts_and_later_requests_the_base_rtt() {
    let (_serve, addr) = serve_http_with(&["--tls"]);
    let url = format!("https://{addr}/");
    let (doc, text) = run(&url, &["-c", "3"]);
    let setup = check(&doc);
    assert_eq!(doc["summary"]["connections_opened"].as_u64(), Some(3));
    assert_eq!(setup["summary"]["rtt_from"], "warm_request");
    // Every request but each connection's first is a base round trip.
    let requests = doc["summary"]["requests"].as_u64().unwrap();
    assert_eq!(setup["summary"]["rtt_samples"].as_u64(), Some(requests - 3));
    assert!(text.contains("setup       3 new connections"), "{text}");
    assert!(text.contains("TLS 1.3"), "{text}");

    // compare gives the run's layers rows of their own, as a setup result's.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h1.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_npt"))
        .arg("compare")
        .arg(format!("h1={}", file.display()))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    assert!(table.contains("Setup layer by layer"), "{table}");
    assert!(table.contains("h1: base RTT"), "{table}");
    assert!(table.contains("  TLS 1.3 "), "{table}");

    let (h2, _) = run(&url, &["--http2", "-c", "2", "--streams", "4"]);
    check(&h2);
    assert_eq!(h2["summary"]["connections_opened"].as_u64(), Some(2));
}

#[test]
fn new_connections_take_their_base_rtt_from_the_tcp_connects() {
    let (_serve, addr) = serve_http_with(&["--tls"]);
    let (doc, _) = run(&format!("https://{addr}/"), &["-c", "2", "--new-conn"]);
    let setup = check(&doc);
    assert_eq!(setup["summary"]["rtt_from"], "tcp_connect");
    assert_eq!(
        setup["summary"]["rtt_samples"],
        setup["summary"]["attempts"]
    );
}
