//! Why this exists: npt times everything with the monotonic clock and uses the wall clock only
//! to label when a run started. A wall-clock step during a run (NTP, a VM resumed, an operator's
//! `date -s`) must not disturb any measurement. Proven under libfaketime (Debian `faketime`):
//! the probe's wall clock starts ten years back and then jumps back another day mid-run, while
//! the monotonic clock is left alone, as a real step leaves it.

#![cfg(test)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{json, npt, serve, u};

const LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

fn year(rfc3339: &serde_json::Value) -> u32 {
    rfc3339.as_str().unwrap()[..4].parse().unwrap()
}

#[test]
fn a_wall_clock_step_mid_run_changes_no_measurement() {
    if !Path::new(LIB).exists() {
        if std::env::var_os("NPT_SKIP_FAKETIME").is_some() {
            eprintln!("SKIPPED: {LIB} missing and NPT_SKIP_FAKETIME is set");
            return;
        }
        panic!("{LIB} is missing (apt-get install faketime; ./test.sh does)");
    }
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let offset = dir.path().join("offset");
    std::fs::write(&offset, "-3650d\n").unwrap();
    let out = dir.path().join("probe.json");
    let mut child = npt()
        .args([
            "probe",
            &format!("udp://{addr}"),
            "-n",
            "300",
            "--pps",
            "100",
        ])
        .arg("--json")
        .arg(&out)
        .env("LD_PRELOAD", LIB)
        .env("FAKETIME_TIMESTAMP_FILE", &offset)
        .env("FAKETIME_NO_CACHE", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // After the first stage line (one second in), step the wall clock back one more day.
    let stdout = child.stdout.take().unwrap();
    let mut stepped = false;
    for line in BufReader::new(stdout).lines().take(40) {
        let Ok(line) = line else { break };
        if !stepped && line.starts_with("[stage   0]") {
            std::fs::write(&offset, "-3651d\n").unwrap();
            stepped = true;
        }
    }
    let end = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.try_wait().unwrap();
    if status.is_none() {
        let _ = child.kill();
    }
    assert!(stepped, "no stage line seen");
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    let d = json(&out);
    // The fake clock was in force (the run is labelled ten years back)...
    let started = year(&d["started_at"]);
    assert!(started < 2020, "started_at {}", d["started_at"]);
    // ...and every measurement ignored the step: all answered, none late, RTTs and the send
    // phase at their real values, three one-second stages in order, the end label = start +
    // the monotonic run time (not a day before the start).
    assert_eq!(u(&d, "/summary/received"), 300);
    assert_eq!(u(&d, "/summary/lost") + u(&d, "/summary/late"), 0);
    let dur = d["summary"]["send_duration_s"].as_f64().unwrap();
    assert!((2.9..3.5).contains(&dur), "send phase {dur} s");
    let rtt_max = d["summary"]["rtt_ms"]["max"].as_f64().unwrap();
    assert!((0.0..1000.0).contains(&rtt_max), "rtt max {rtt_max} ms");
    let iv = d["intervals"].as_array().unwrap();
    assert_eq!(iv.len(), 3);
    for (i, s) in iv.iter().enumerate() {
        let start = s["start_s"].as_f64().unwrap();
        assert!(
            (start - i as f64).abs() < 0.05,
            "stage {i} starts at {start}"
        );
    }
    assert!(d["ended_at"].as_str().unwrap() >= d["started_at"].as_str().unwrap());
    assert_eq!(year(&d["ended_at"]), started);
}
