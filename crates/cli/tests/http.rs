//! `npt http` and `npt serve --http` as a user calls them: bad URLs and conflicting flags exit 2
//! naming the flag; `--cold-start` runs `npt serve --http` itself, reports its ready time, then
//! the warm run, and writes a schema-valid document; Ctrl-C still writes the report.

#![cfg(test)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npt_testkit::process::free_port;
use npt_testkit::schema::assert_valid;

fn npt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_npt"))
}

fn validate(doc: &serde_json::Value) {
    assert_valid(doc, "http");
}

#[test]
fn bad_input_exits_2_and_names_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["ftp://127.0.0.1/"], "scheme"),
        (&["127.0.0.1:80"], "URL"),
        (&["http://127.0.0.1:9/", "--streams", "4"], "--http2"),
        (
            &[
                "http://127.0.0.1:9/",
                "--http2",
                "--new-conn",
                "--streams",
                "2",
            ],
            "--new-conn",
        ),
        (&["http://127.0.0.1:9/", "--rate", "0"], "--rate"),
        (&["http://127.0.0.1:9/", "-H", "no colon"], "-H"),
        (
            &["http://127.0.0.1:9/", "--ready-timeout", "1s"],
            "--cold-start",
        ),
        (
            &[
                "http://127.0.0.1:9/",
                "--body",
                "a",
                "--body-file",
                "/etc/hostname",
            ],
            "--body",
        ),
    ];
    for (args, needle) in cases {
        let out = npt().arg("http").args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn cold_start_of_npt_serve_then_warm_run() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cmd = format!(
        "exec {} serve --listen 127.0.0.1:0 --http 127.0.0.1:{port}",
        env!("CARGO_BIN_EXE_npt")
    );
    let out = npt()
        .args([
            "http",
            &format!("http://127.0.0.1:{port}/"),
            "-c",
            "2",
            "-d",
            "1s",
        ])
        .args(["--cold-start", &cmd, "--ready-timeout", "20s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("cold start  ready after"), "{text}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    validate(&doc);
    assert!(doc["cold_start"]["ready_ms"].as_f64().unwrap() > 0.0);
    assert!(doc["summary"]["requests"].as_u64().unwrap() > 0);
    // The spawned server is gone: its port refuses.
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "cold-started server still answers"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_still_writes_the_report() {
    let (srv, addr) = common::serve_http();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = npt()
        .args([
            "http",
            &format!("http://{addr}/"),
            "-c",
            "2",
            "-d",
            "60s",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The handler is installed right after flag parsing; give the run a moment to start.
    std::thread::sleep(Duration::from_millis(700));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "npt http did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(srv);
    assert_eq!(status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    validate(&doc);
    assert_eq!(doc["stopped_by"], "signal");
    assert!(doc["summary"]["requests"].as_u64().unwrap() > 0);
}

#[test]
fn requests_cut_off_by_the_end_are_reported_not_hidden() {
    // Accepts and never answers (nor closes), for a bounded time.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let held: Vec<_> = l.incoming().take(8).filter_map(Result::ok).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(held);
    });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cut.json");
    let out = npt()
        .args([
            "http",
            &format!("http://{addr}/"),
            "-c",
            "3",
            "-d",
            "1s",
            "--timeout",
            "10s",
        ])
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    validate(&doc);
    assert_eq!(doc["summary"]["in_flight_at_end"], 3, "{}", doc["summary"]);
    assert!(doc["summary"]["oldest_in_flight_ms"].as_f64().unwrap() > 500.0);
    // Requests started count as attempts, answered or not.
    assert_eq!(doc["errors"]["attempts"], 3, "{}", doc["errors"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("in flight   3 at the end"), "{text}");
    assert_eq!(out.status.code(), Some(1), "nothing completed");
}
