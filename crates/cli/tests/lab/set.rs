//! `npt lab set` on a running lab (root): a probe running across a delay step sees its RTT
//! move to the new value within one interval of the instant the lab reports; loss set from 0
//! to 5 % one way shows in that direction's own drop counts (read as the difference of two
//! `status` readings) and equals what the probe lost; bad settings and a lab that is not up
//! exit 2 and change nothing; nothing is left after `down`.

#![cfg(test)]

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::lab::{self, pair, Lab};
use common::{json, npt, run, u};

/// Labs measure time: one at a time in this file.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

macro_rules! require_root {
    () => {
        if lab::skipped(module_path!()) {
            return;
        }
        let _turn = common::turn(module_path!());
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    };
}

/// A child process killed (and reaped) when dropped, so a failed assertion leaves nothing.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `npt lab set ARGS --json`, which must succeed: the changes it reports.
fn set(lab: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let mut a = vec!["lab", "set", lab];
    a.extend_from_slice(args);
    a.push("--json");
    let out = run(&a, Duration::from_secs(20));
    assert!(
        out.status.success(),
        "lab set {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The direction `from` → `to` of a status document.
fn direction<'a>(status: &'a serde_json::Value, from: &str) -> &'a serde_json::Value {
    status["links"][0]["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["from"] == from)
        .unwrap()
}

fn wall(text: &str) -> SystemTime {
    humantime::parse_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Waits (bounded) until `from`'s direction has carried `packets` packets.
fn wait_for_packets(lab: &Lab, from: &str, packets: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while u(direction(&lab.status(), from), "/applied/packets_in") < packets {
        assert!(Instant::now() < deadline, "no traffic through the link");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_probe_across_a_delay_step_reads_the_new_rtt_within_one_interval() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let up = Lab::up(dir.path(), "tsetd", &pair("tsetd", "delay = \"10ms\""));
    let result = dir.path().join("probe.json");
    let probe = Kid(npt()
        .args(["lab", "exec", "tsetd", "client", "--", "npt", "probe"])
        .args(["udp://10.0.1.2:7777", "--count", "800", "--mode", "rate"])
        .args(["--pps", "100", "-q", "--json"])
        .arg(&result)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    // Two seconds into the probe (by the link's own count), the delay goes to 40 ms each way.
    wait_for_packets(&up, "client", 200);
    let changes = set("tsetd", &["client-server", "delay=40ms"]);
    assert_eq!(changes.len(), 2, "{changes:?}");
    let at = wall(changes[0]["at"].as_str().unwrap());
    assert_eq!(
        changes[0]["at"], changes[1]["at"],
        "one instant for both ways"
    );
    for c in &changes {
        assert_eq!(
            (c["before"]["delay"].as_str(), c["after"]["delay"].as_str()),
            (Some("10ms"), Some("40ms"))
        );
    }
    let mut probe = probe;
    let deadline = Instant::now() + Duration::from_secs(60);
    while probe.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "probe did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    let doc = json(&result);
    let started = wall(doc["started_at"].as_str().unwrap());
    let step_s = at.duration_since(started).unwrap().as_secs_f64();
    let intervals = doc["intervals"].as_array().unwrap();
    // Each side of the step: the packets sent wholly before it and wholly after it. The
    // link's delay is a floor (20 ms before, 80 after); what the box adds on top (the probe,
    // the server, the wire thread) is the same on both sides, so the step is the lab's 60 ms.
    let p50 = |iv: &serde_json::Value| iv["latency_ms"]["p50"].as_f64().unwrap();
    let span = |iv: &serde_json::Value| {
        (
            iv["start_s"].as_f64().unwrap(),
            iv["end_s"].as_f64().unwrap(),
        )
    };
    let before: Vec<f64> = intervals
        .iter()
        .filter(|iv| span(iv).1 <= step_s)
        .map(p50)
        .collect();
    let after: Vec<(f64, f64)> = intervals
        .iter()
        .filter(|iv| span(iv).0 >= step_s)
        .map(|iv| (span(iv).0, p50(iv)))
        .collect();
    assert!(
        before.len() >= 2 && after.len() >= 2,
        "{before:?} {after:?} around {step_s} s"
    );
    let base = before.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        (20.0..=25.0).contains(&base),
        "before the step: p50 {before:?} ms"
    );
    for p in &before {
        assert!(
            (p - base).abs() <= 1.0,
            "before the step: p50 {before:?} ms"
        );
    }
    for (start, p) in &after {
        assert!(
            (p - base - 60.0).abs() <= 1.0,
            "after the step, from {start} s: p50 {p} ms, {base} before (+60 ms set)"
        );
    }
    // Within one interval of the step: the first interval that starts after it reads it.
    assert!(
        after[0].0 - step_s <= 1.0 + 1e-6,
        "step at {step_s:.3} s, first after {after:?}"
    );
    // The status shows the link as it is now and the change, with its times.
    let s = up.status();
    assert_eq!(direction(&s, "client")["config"]["delay"], "40ms");
    let history = s["changes"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0]["at"], changes[0]["at"]);
    assert!(history[0]["at_monotonic_s"].as_f64().unwrap() > 0.0);
    assert!(history[0]["at_lab_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn loss_set_to_five_percent_shows_in_the_links_own_drops() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let up = Lab::up(dir.path(), "tsetl", &pair("tsetl", "delay = \"5ms\""));
    let probe = |n: &str| {
        up.npt_json(
            "client",
            &[
                "probe",
                "udp://10.0.1.2:7777",
                "--count",
                n,
                "--mode",
                "rate",
                "--pps",
                "1000",
            ],
            &dir.path().join("probe.json"),
            "probe",
        )
    };
    let clean = probe("1000");
    assert_eq!(u(&clean, "/summary/lost"), 0);
    let before = dir.path().join("before.json");
    std::fs::write(&before, serde_json::to_vec(&up.status()).unwrap()).unwrap();
    let changes = set("tsetl", &["0", "a_to_b.loss=5%"]);
    assert_eq!(changes.len(), 1, "one direction: {changes:?}");
    assert_eq!(
        (
            changes[0]["from"].as_str(),
            changes[0]["after"]["loss"].as_str()
        ),
        (Some("client"), Some("5%"))
    );
    let lossy = probe("6000");
    let out = run(
        &[
            "lab",
            "status",
            "tsetl",
            "--json",
            "--since",
            before.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_only: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let up_dir = direction(&run_only, "client");
    let (sent, dropped) = (
        u(up_dir, "/applied/packets_in"),
        u(up_dir, "/applied/dropped_loss"),
    );
    // This run's packets only: the probe's 6,000 and its final flow query, tried again (up to
    // 5 times) when the link drops it — the one answered is the last.
    assert_eq!(u(&lossy, "/summary/sent"), 6000);
    let queries = sent - 6000;
    assert!((1..=5).contains(&queries), "{sent} packets up");
    let pct = dropped as f64 * 100.0 / sent as f64;
    // 5 % of 6,000 is 300 (binomial sd 17).
    assert!(
        (4.0..=6.0).contains(&pct),
        "up dropped {dropped} of {sent} ({pct:.2} %)"
    );
    assert_eq!(
        u(direction(&run_only, "server"), "/applied/dropped_loss"),
        0
    );
    assert_eq!(
        u(&lossy, "/summary/lost"),
        dropped - (queries - 1),
        "the probe lost what the link dropped of its packets"
    );
    assert_eq!(run_only["changes"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_settings_and_a_lab_that_is_not_up_exit_2_and_change_nothing() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let up = Lab::up(
        dir.path(),
        "tsetb",
        &pair("tsetb", "delay = \"10ms\"\nrate = \"10mbit\""),
    );
    let before = up.status();
    for (args, names) in [
        (&["client-server", "delay=-5ms"][..], "a_to_b.delay"),
        (&["client-server", "b_to_a.loss=101%"], "b_to_a.loss"),
        (&["client-server", "jitter=20ms"], "jitter"),
        (&["client-server", "rate=fast"], "rate"),
        (&["client-server", "queue=0"], "queue"),
        (&["client-server", "colour=red"], "colour"),
        (&["client-server", "delay"], "KEY=VALUE"),
        // One good setting beside a bad one: nothing is applied.
        (&["client-server", "delay=50ms", "loss=200%"], "loss"),
        (&["client-mars", "delay=5ms"], "client-mars"),
        (&["7", "delay=5ms"], "link 7"),
    ] {
        let mut a = vec!["lab", "set", "tsetb"];
        a.extend_from_slice(args);
        let out = run(&a, Duration::from_secs(20));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(names),
            "{args:?}: {err:?} does not name {names}"
        );
    }
    let after = up.status();
    for from in ["client", "server"] {
        assert_eq!(
            direction(&after, from)["config"],
            direction(&before, from)["config"]
        );
    }
    assert!(after["changes"].as_array().unwrap().is_empty());
    // Settings it already has change nothing, and say so.
    let out = run(
        &["lab", "set", "tsetb", "server-client", "delay=10ms"],
        Duration::from_secs(20),
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing changed"));

    // A lab that is not up.
    let out = run(
        &["lab", "set", "tsetnone", "a-b", "delay=5ms"],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lab tsetnone is not up"));

    // Nothing is left after down: no namespace, no state directory with its socket.
    drop(up);
    let ns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&ns.stdout).contains("npt-tsetb-"));
    assert!(!Path::new("/run/npt-lab/tsetb").exists());
    let out = run(
        &["lab", "set", "tsetb", "client-server", "delay=5ms"],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2), "set after down");
}
