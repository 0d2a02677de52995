//! Shared helpers for the binary's integration tests: start `npt serve` on port 0 and wait for
//! its ready line, run `npt` with a time bound, validate result documents against the schema.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn npt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_npt"))
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A child process killed when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `npt serve` on 127.0.0.1:0 and returns it with the bound address.
pub fn serve(extra: &[&str]) -> (Guard, SocketAddr) {
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("npt serve starts");
    let stdout = child.stdout.take().expect("piped");
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .next()
        .expect("a ready line")
        .expect("readable ready line");
    let addr = line
        .rsplit(' ')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"));
    (Guard(child), addr)
}

/// `npt serve --http 127.0.0.1:0`; returns the server and the HTTP address it printed.
pub fn serve_http() -> (Guard, String) {
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("npt serve starts");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    // Bounded: the server prints a handful of ready lines, then nothing until it stops.
    for line in BufReader::new(stdout).lines().take(8) {
        let Ok(line) = line else { break };
        if line.contains("listening on http") {
            let addr = line.rsplit(' ').next().unwrap_or_default().to_string();
            return (guard, addr);
        }
    }
    panic!("npt serve --http did not report its address");
}

/// Runs `npt` with `args`, killing it after `limit`.
pub fn run(args: &[&str], limit: Duration) -> Output {
    let mut child = npt()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("npt starts");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "npt {args:?} did not finish within {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("result written");
    serde_json::from_str(&text).expect("result is JSON")
}

/// Validates a result document against `schema/<kind>.schema.json`.
pub fn assert_valid(doc: &serde_json::Value, kind: &str) {
    let path = repo_root().join(format!("schema/{kind}.schema.json"));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("schema exists"))
            .expect("schema is JSON");
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match {}: {errors:#?}",
        path.display()
    );
}

pub fn u(doc: &serde_json::Value, ptr: &str) -> u64 {
    doc.pointer(ptr)
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| panic!("{ptr} missing in result"))
}

pub fn f(doc: &serde_json::Value, ptr: &str) -> f64 {
    doc.pointer(ptr)
        .and_then(|v| v.as_f64())
        .unwrap_or_else(|| panic!("{ptr} missing in result"))
}
