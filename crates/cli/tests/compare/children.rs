//! Why this exists: `npt compare` runs a scenario file as child `npt` processes, and a child
//! must never outlive it: Ctrl-C kills the running child and still writes the table so far,
//! and a child past its time bound is killed and becomes a row with its error.

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)] // process ids for kill(2)

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use npt_testkit::proxies::running_with_arg;

#[test]
fn ctrl_c_kills_the_child_and_keeps_the_table_so_far() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(
        dir.path(),
        "long.toml",
        &format!(
            r#"
[workload]
kind = "probe"
args = ["--pps", "100"]
[[scenario]]
name = "short"
target = "udp://{addr}"
args = ["-n", "20"]
[[scenario]]
name = "long"
target = "udp://{addr}"
args = ["--duration", "5m"]
[[scenario]]
name = "never"
target = "udp://{addr}"
args = ["-n", "20"]
"#
        ),
    );
    let out_dir = dir.path().join("out");
    let json_path = dir.path().join("t.json");
    let mut child = npt()
        .args(["compare", &file, "--out-dir"])
        .arg(&out_dir)
        .arg("--json")
        .arg(&json_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let guard_pid = child.id();
    let stderr = child.stderr.take().unwrap();
    // Wait (bounded by the lines npt prints) until the short scenario is done; keep reading
    // stderr after that so npt never writes into a closed pipe.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().take(100) {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|l: &String| l.contains("[1/3] short run 1/1: ok"))
    {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(l) => seen.push(l),
            Err(_) => panic!("the short scenario did not finish: {seen:?}"),
        }
    }
    let long_json = out_dir.join("run1-02-long.json");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !running_with_arg(&long_json) {
        assert!(Instant::now() < deadline, "the long child never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on the npt compare child we spawned.
    assert_eq!(unsafe { libc::kill(guard_pid as i32, libc::SIGINT) }, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "npt compare did not stop on Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1));
    assert!(
        !running_with_arg(&long_json),
        "the long child was left running"
    );
    let t = json(&json_path);
    assert_eq!(t["interrupted"], true);
    let rows = t["scenarios"].as_array().unwrap();
    assert!(rows[0]["p50_ms"].as_f64().unwrap() > 0.0, "{}", rows[0]);
    assert_eq!(rows[1]["error"], "run 1: interrupted");
    assert_eq!(rows[2]["runs"], 0);
    assert!(
        !out_dir.join("run1-03-never.log").exists(),
        "nothing starts after Ctrl-C"
    );
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(stdout.contains("interrupted (Ctrl-C)"), "{stdout}");
}

#[test]
fn a_run_past_its_time_bound_is_killed_and_a_row_with_its_error() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    // 1000 packets at 100 pps would take 10 s; the file bounds each run at 1 s.
    let text = format!(
        "[workload]\nkind = \"probe\"\nargs = [\"-n\", \"1000\"]\ntimeout = \"1s\"\n\
         [[scenario]]\nname = \"slow\"\ntarget = \"udp://{addr}\"\n"
    );
    let file = write_file(dir.path(), "slow.toml", &text);
    let (out_dir, json_path) = (dir.path().join("out"), dir.path().join("t.json"));
    let started = Instant::now();
    let (o, j) = (out_dir.to_str().unwrap(), json_path.to_str().unwrap());
    let args = ["compare", &file, "--out-dir", o, "--json", j];
    let out = run(&args, Duration::from_secs(30));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(1));
    let t = json(&json_path);
    assert_eq!(t["scenarios"][0]["error"], "run 1: timed out after 1 s");
    assert!(!running_with_arg(&out_dir.join("run1-01-slow.json")));
}
