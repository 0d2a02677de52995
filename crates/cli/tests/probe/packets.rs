//! `--packets FILE|-`, the per-packet log of `npt probe` and `npt ping`: one JSON line per
//! packet that agrees with the result document (counts, send times on the run's clock and the
//! wall clock of `started_at`, RTTs within the histogram's precision), stdout when asked; and
//! on a lab link of known loss each way (root), every loss the link dropped has its line, the
//! direction written only where it is known and then never wrong.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{json, lab, run, serve, u};

const LIMIT: Duration = Duration::from_secs(60);

/// The log's lines as JSON values; the first of each fate checked against
/// `schema/packet.schema.json`.
fn lines(text: &str) -> Vec<serde_json::Value> {
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for l in &lines {
        if seen.insert(l["fate"].to_string()) {
            common::assert_valid(l, "packet");
        }
    }
    lines
}

fn count(lines: &[serde_json::Value], fate: &str) -> u64 {
    lines.iter().filter(|l| l["fate"] == fate).count() as u64
}

/// ns since the Unix epoch of the document's `started_at`.
fn started_unix_ns(doc: &serde_json::Value) -> u64 {
    let t: SystemTime = humantime::parse_rfc3339(doc["started_at"].as_str().unwrap()).unwrap();
    u64::try_from(t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos()).unwrap()
}

/// Every line's wall clock is `started_at` (ms precision) plus its run time, and its smallest
/// and largest RTT are the document's (`min`, `max` at these JSON pointers; an HDR histogram
/// keeps 3 significant digits).
fn agree(lines: &[serde_json::Value], doc: &serde_json::Value, min_max: [&str; 2]) {
    let start = started_unix_ns(doc);
    for l in lines {
        let (Some(sent), Some(wall)) = (l["sent_ns"].as_u64(), l["sent_unix_ns"].as_u64()) else {
            continue;
        };
        let base = wall - sent;
        assert!(base.abs_diff(start) < 1_000_000, "{l}: start {start}");
    }
    let rtts: Vec<f64> = lines
        .iter()
        .filter(|l| l["fate"] == "received")
        .map(|l| l["rtt_ns"].as_u64().unwrap() as f64 / 1e6)
        .collect();
    let min = rtts.iter().copied().fold(f64::MAX, f64::min);
    let max = rtts.iter().copied().fold(0.0, f64::max);
    let (dmin, dmax) = (common::f(doc, min_max[0]), common::f(doc, min_max[1]));
    assert!(
        (min - dmin).abs() <= dmin * 2e-3 + 1e-3,
        "min {min} vs {dmin}"
    );
    assert!(
        (max - dmax).abs() <= dmax * 2e-3 + 1e-3,
        "max {max} vs {dmax}"
    );
}

#[test]
fn ping_logs_every_attempt() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (log, doc) = (dir.path().join("p.ndjson"), dir.path().join("p.json"));
    let target = format!("udp://{addr}");
    let out = run(
        &[
            "ping",
            &target,
            "-c",
            "20",
            "-i",
            "20ms",
            "-q",
            "--packets",
            log.to_str().unwrap(),
            "--json",
            doc.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = lines(&std::fs::read_to_string(&log).unwrap());
    let d = json(&doc);
    let seqs: Vec<u64> = l.iter().map(|x| x["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
    assert_eq!(count(&l, "received"), u(&d, "/summary/received"));
    // On the run's clock: attempt k is due k × 20 ms after the start, never sent before.
    for (k, x) in l.iter().enumerate() {
        let sent = x["sent_ns"].as_u64().unwrap();
        assert!(sent >= k as u64 * 20_000_000, "{x}");
    }
    agree(&l, &d, ["/summary/min_ms", "/summary/max_ms"]);
    // Nothing answers on a closed TCP port: each attempt an error line with its kind.
    let out = run(
        &[
            "ping",
            "tcp://127.0.0.1:1",
            "-c",
            "2",
            "-i",
            "20ms",
            "--packets",
            "-",
        ],
        LIMIT,
    );
    let l = lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(l.len(), 2, "stdout is the log alone");
    assert!(l
        .iter()
        .all(|x| x["fate"] == "error" && x["reason"] == "refused"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 sent, 0 received"));
}

#[test]
fn probe_logs_every_packet_of_every_flow() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (log, doc) = (dir.path().join("p.ndjson"), dir.path().join("p.json"));
    let target = format!("udp://{addr}");
    let out = run(
        &[
            "probe",
            &target,
            "-n",
            "1000",
            "--pps",
            "1000",
            "--clients",
            "2",
            "-q",
            "--packets",
            log.to_str().unwrap(),
            "--json",
            doc.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = lines(&std::fs::read_to_string(&log).unwrap());
    let d = json(&doc);
    let first: Vec<&serde_json::Value> = l
        .iter()
        .filter(|x| !matches!(x["fate"].as_str(), Some("late" | "duplicate")))
        .collect();
    assert_eq!(
        first.len() as u64,
        u(&d, "/summary/sent"),
        "one line a packet"
    );
    assert_eq!(count(&l, "received"), u(&d, "/summary/received"));
    assert_eq!(count(&l, "lost"), u(&d, "/summary/lost"));
    // Each flow's sequence numbers once each, 0 up.
    let mut per_flow: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for x in &first {
        per_flow
            .entry(x["flow"].as_u64().unwrap())
            .or_default()
            .push(x["seq"].as_u64().unwrap());
    }
    assert_eq!(per_flow.len(), 2);
    for seqs in per_flow.values_mut() {
        seqs.sort_unstable();
        assert_eq!(*seqs, (0..500).collect::<Vec<_>>());
    }
    agree(&l, &d, ["/summary/rtt_ms/min", "/summary/rtt_ms/max"]);
}

#[test]
fn probe_packets_on_stdout_leave_the_report_to_stderr() {
    let (_srv, addr) = serve(&[]);
    let target = format!("udp://{addr}");
    let out = run(
        &[
            "probe",
            &target,
            "-n",
            "50",
            "--pps",
            "500",
            "--packets",
            "-",
        ],
        LIMIT,
    );
    assert!(out.status.success());
    let l = lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(l.len(), 50);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("packets    sent 50"), "{err}");
    assert!(err.contains("[stage"), "stage lines on stderr too: {err}");
}

/// 3 % loss up, 2 % down, 5 ms each way.
const LOSSY: &str = r#"delay = "5ms"
[link.a_to_b]
loss = "3%"
[link.b_to_a]
loss = "2%"
"#;

/// A link direction's drops (`npt lab status --json`), once they stop moving.
fn dropped(l: &lab::Lab, from: &str) -> u64 {
    let read = || {
        let s = l.status();
        let dirs = s["links"][0]["directions"].as_array().unwrap().clone();
        let d = dirs.iter().find(|d| d["from"] == from).unwrap().clone();
        u(&d, "/applied/dropped_loss")
    };
    let mut last = read();
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(500));
        let now = read();
        if now == last {
            break;
        }
        last = now;
    }
    last
}

#[test]
fn on_a_lab_link_every_drop_has_its_line_and_no_direction_is_wrong() {
    let name = "tpktlog";
    if lab::skipped(name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let topo = format!(
        "name = \"{name}\"\n[[node]]\nname = \"client\"\n[[node]]\nname = \"server\"\n\
         [[link]]\na = \"client\"\nb = \"server\"\n{LOSSY}[[service]]\nname = \"serve\"\n\
         node = \"server\"\ncmd = [\"npt\", \"serve\", \"--listen\", \"0.0.0.0:7777\"]\n\
         ready = \"tcp://10.0.1.2:7777\"\n"
    );
    let l = lab::Lab::up(dir.path(), name, &topo);
    let (up0, down0) = (dropped(&l, "client"), dropped(&l, "server"));
    let log = dir.path().join("p.ndjson");
    let args = [
        "probe",
        "udp://10.0.1.2:7777",
        "-n",
        "5000",
        "--pps",
        "1000",
        "-q",
        "--packets",
        log.to_str().unwrap(),
    ];
    let d = l.npt_json("client", &args, &dir.path().join("p.json"), "probe");
    let (up, down) = (dropped(&l, "client") - up0, dropped(&l, "server") - down0);
    let lines = lines(&std::fs::read_to_string(&log).unwrap());
    let lost = |dir: Option<&str>| {
        lines
            .iter()
            .filter(|x| x["fate"] == "lost" && x["direction"].as_str() == dir)
            .count() as u64
    };
    let (l_up, l_down, l_unknown) = (lost(Some("up")), lost(Some("down")), lost(None));
    eprintln!(
        "link dropped up {up} down {down}; log lost up {l_up} down {l_down} unknown \
         {l_unknown}; summary up {} down {}",
        u(&d, "/summary/directions/up/lost"),
        u(&d, "/summary/directions/down/lost")
    );
    assert_eq!(l_up + l_down + l_unknown, u(&d, "/summary/lost"));
    // The link also carried the flow query up (and its retries if one was dropped).
    assert!((l_up + l_down + l_unknown..=l_up + l_down + l_unknown + 5).contains(&(up + down)));
    assert!(
        l_up <= up && l_down <= down,
        "a direction written is never wrong"
    );
    // Where a loss up and a loss down are neighbours the log does not guess; at 3 % and 2 %
    // that is a few percent of the losses, not more.
    assert!(
        l_unknown * 10 <= up + down,
        "{l_unknown} of {} unknown",
        up + down
    );
    assert!(Path::new(&log).exists());
}
