//! `npt run` as a user calls it: bad flags exit 2 naming the flag; a run against an
//! in-process `npt serve` (TCP, UDP and QUIC with a pinned certificate via `--ca`) writes a
//! schema-valid JSON document; Ctrl-C ends the run early and the report is still written.

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npt_server::quic::{start_quic, QuicTls};
use npt_server::{ServeConfig, Server};
use npt_testkit::schema::assert_valid;

fn npt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_npt"))
}

fn server() -> Server {
    Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..ServeConfig::default()
    })
    .unwrap()
}

fn tmp(name: &str) -> std::path::PathBuf {
    // Cargo's scratch folder for integration tests, not the box's /tmp.
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("npt-run-{}-{name}", std::process::id()))
}

fn validate(doc: &serde_json::Value) {
    assert_valid(doc, "run");
}

#[test]
fn bad_flags_exit_2_and_name_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["tcp://127.0.0.1:9", "--users", "0"], "--users"),
        (&["tcp://127.0.0.1:9", "--mix", ""], "--mix"),
        (&["tcp://127.0.0.1:9", "--mix", "web=1,chat=1"], "chat"),
        (&["tcp://127.0.0.1:9", "--think", "5s..1s"], "--think"),
        (&["tcp://127.0.0.1:9", "--mix", "quic=1"], "--quic"),
        (&["tcp://127.0.0.1:9", "--duration", "soon"], "--duration"),
    ];
    for (args, needle) in cases {
        let out = npt().arg("run").args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_run_with_every_activity_writes_a_valid_document() {
    let s = server();
    let q = start_quic(
        &s.runtime(),
        "127.0.0.1:0".parse().unwrap(),
        QuicTls::SelfSigned,
        None,
        s.counters(),
    )
    .unwrap();
    let ca = tmp("ca.pem");
    std::fs::write(&ca, q.cert_pem()).unwrap();
    let json = tmp("all.json");
    let out = npt()
        .arg("run")
        .arg(format!("tcp://{}", s.local_addrs()[0]))
        .args(["--quic", &q.local_addr().to_string(), "--ca"])
        .arg(&ca)
        .args(["--users", "10", "--duration", "3s", "--ramp-up", "200ms"])
        .args([
            "--mix",
            "web=2,quic=2,download=1,upload=1,game=1",
            "--think",
            "10ms..50ms",
        ])
        .args([
            "--request-down",
            "1KB..16KB",
            "--download",
            "256KB..1MB",
            "--upload",
            "256KB",
        ])
        .args([
            "--game-length",
            "300ms..600ms",
            "--tick",
            "50..100",
            "--seed",
            "5",
            "-q",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("request latency (ms)"), "{text}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    validate(&doc);
    assert_eq!(doc["kind"], "run");
    assert_eq!(doc["errors"]["total_errors"], 0, "{:#}", doc["errors"]);
    for a in ["web", "quic", "download", "upload", "game"] {
        assert!(
            doc["activities"][a]["requests"].as_u64().unwrap() > 0,
            "{a}"
        );
    }
    for p in ["tcp", "quic", "udp"] {
        assert!(doc["latency"][p]["p50_ms"].as_f64().unwrap() > 0.0, "{p}");
    }
    let _ = std::fs::remove_file(ca);
    let _ = std::fs::remove_file(json);
}

#[test]
fn ctrl_c_ends_the_run_and_the_report_is_written() {
    let s = server();
    let json = tmp("sigint.json");
    let mut child = npt()
        .arg("run")
        .arg(format!("tcp://{}", s.local_addrs()[0]))
        .args([
            "--users",
            "5",
            "--duration",
            "60s",
            "--think",
            "10ms..50ms",
            "--request-down",
            "1KB..8KB",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the run is under way: the first progress line on stderr.
    let mut err = child.stderr.take().unwrap();
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 512];
    while started.elapsed() < Duration::from_secs(20) {
        use std::io::Read;
        let n = err.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&seen).contains("requests") {
            break;
        }
    }
    assert!(
        String::from_utf8_lossy(&seen).contains("requests"),
        "no progress line"
    );
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "run did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["stopped_by"], "signal");
    assert!(doc["duration_s"].as_f64().unwrap() < 30.0);
    assert!(doc["summary"]["requests"].as_u64().unwrap() > 0);
    validate(&doc);
    let _ = std::fs::remove_file(json);
}

/// A server that accepts and then never answers (nor closes), for a bounded time.
fn silent_server() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming().take(64) {
            match c {
                Ok(c) => held.push(c),
                Err(_) => return,
            }
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    a
}

#[test]
fn requests_cut_off_by_the_end_are_reported_not_hidden() {
    let addr = silent_server();
    let out = tmp("cut.json");
    // The run (1 s) is shorter than the timeout (10 s): nothing completes, nothing fails.
    let o = npt()
        .args([
            "run",
            &format!("tcp://{addr}"),
            "--users",
            "3",
            "-d",
            "1s",
            "--mix",
            "web=100",
            "--timeout",
            "10s",
            "-q",
            "--json",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    validate(&d);
    assert_eq!(d["summary"]["in_flight_at_end"], 3, "{}", d["summary"]);
    assert!(d["summary"]["oldest_in_flight_ms"].as_f64().unwrap() > 500.0);
    // Requests started count as attempts, answered or not.
    assert_eq!(d["errors"]["attempts"], 3, "{}", d["errors"]);
    assert_eq!(d["errors"]["error_rate"], 0.0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("in flight at the end: 3 requests"), "{text}");
}
