//! The lab example files, run scaled down in time: the forwarding-scenario topology (direct
//! 299 ms, forwarders in LA, a Seattle → LA chain) must read back near its theoretical latencies,
//! and the tunnel ping-pong at 0/1/2 % loss (quic-tun's latency test) must report first-packet
//! and total latency for every loss case. Both run the files in `examples/lab/` with a shorter
//! workload, so the examples users copy are the ones tested. The forwarding-scenario topology
//! with hop agents must measure its theoretical column from each hop. Root only.

#![cfg(test)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::lab;
use common::{json, repo_root, run};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Copies an example topology into `dir` with `from` replaced by `to` in its text.
fn scaled(dir: &Path, name: &str, edits: &[(&str, &str)]) -> std::path::PathBuf {
    let src = repo_root().join("examples/lab");
    let mut text = std::fs::read_to_string(src.join(name)).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{name} no longer holds {from:?}");
        text = text.replace(from, to);
    }
    for entry in std::fs::read_dir(&src).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "cfg") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    let out = dir.join(name);
    std::fs::write(&out, text).unwrap();
    out
}

/// `npt lab run FILE --json …` to the end; the compare table and the text it printed.
fn lab_run(dir: &Path, file: &Path) -> (serde_json::Value, String) {
    lab::down_stale("forwarding-scenarios");
    lab::down_stale("fwd-measured");
    let json = dir.join("cmp.json");
    let out = run(
        &[
            "lab",
            "run",
            file.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--out-dir",
            dir.join("out").to_str().unwrap(),
        ],
        Duration::from_secs(240),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The run took its lab down whole: the next test (or user) can bring it up again.
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let left: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter(|l| {
            l.starts_with("npt-forwarding-scenarios-") || l.starts_with("npt-fwd-measured-")
        })
        .map(str::to_string)
        .collect();
    assert!(
        left.is_empty(),
        "namespaces left behind: {left:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (table, stdout)
}

fn row<'a>(table: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    table["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn forwarding_scenarios_read_back_their_theoretical_latencies() {
    if lab::skipped("the forwarding-scenario lab") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = scaled(
        dir.path(),
        "forwarding-scenarios.toml",
        &[(
            "\"--users\", \"20\", \"--duration\", \"20s\"",
            "\"--users\", \"10\", \"--duration\", \"6s\"",
        )],
    );
    let (t, stdout) = lab_run(dir.path(), &file);
    let direct = row(&t, "direct")["p50_ms"].as_f64().unwrap();
    assert!(
        (297.0..=305.0).contains(&direct),
        "direct p50 {direct} ms, want ~299\n{stdout}"
    );
    for (name, theoretical) in [("la-socat", 221.0), ("la-haproxy", 221.0), ("chain", 253.0)] {
        let r = row(&t, name);
        assert_eq!(r["theoretical_ms"].as_f64(), Some(theoretical));
        let p50 = r["p50_ms"].as_f64().unwrap();
        // At or just above the sum of the hops: a forwarder costs well under 20 ms here.
        assert!(
            p50 >= theoretical - 1.0 && p50 <= theoretical + 20.0,
            "{name}: p50 {p50} ms against theoretical {theoretical}\n{stdout}"
        );
        assert_eq!(r["errors"].as_u64(), Some(0), "{name}\n{stdout}");
    }
}

/// The same table with its theoretical column measured: each segment from its upstream end
/// (Seattle → LA by Seattle's hop agent, LA → target by LA's), so the sums must equal the
/// configured delays within 1 ms per hop, and the JSON must say `measured`.
#[test]
fn forwarding_scenarios_measure_their_theoretical_latencies_from_the_hops() {
    if lab::skipped("the forwarding-scenario lab") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = scaled(
        dir.path(),
        "forwarding-scenarios-measured.toml",
        &[(
            "\"--users\", \"20\", \"--duration\", \"20s\"",
            "\"--users\", \"10\", \"--duration\", \"6s\"",
        )],
    );
    let (t, stdout) = lab_run(dir.path(), &file);
    eprintln!("{stdout}");
    let direct = row(&t, "direct");
    assert_eq!(direct["theoretical_source"], "pinged", "{direct}");
    for (name, hops) in [
        ("direct", &[299.0][..]),
        ("la-socat", &[152.0, 69.0][..]),
        ("la-haproxy", &[152.0, 69.0][..]),
        ("chain", &[152.0, 32.0, 69.0][..]),
    ] {
        let r = row(&t, name);
        if name != "direct" {
            assert_eq!(r["theoretical_source"], "measured", "{r}");
        }
        let got = r["hops"].as_array().unwrap();
        assert_eq!(got.len(), hops.len(), "{r}");
        let (mut avgs, mut p50s) = (0.0, 0.0);
        for (h, want) in got.iter().zip(hops) {
            let avg = h["avg_ms"]
                .as_f64()
                .unwrap_or_else(|| panic!("{name}: {h}"));
            // The hop's median: its mean moves with one slow sample when the box is busy (one
            // run, beside other builds, read a mean of 169.5 ms for a 152 ms hop).
            let doc = json(Path::new(h["result"].as_str().unwrap()));
            let p50 = doc["latency"][doc["proto"].as_str().unwrap()]["p50_ms"]
                .as_f64()
                .unwrap();
            assert!(
                (p50 - want).abs() <= 1.0,
                "{name}: hop {} from {} reads p50 {p50} ms (avg {avg}), configured {want}",
                h["url"],
                h["from"]
            );
            avgs += avg;
            p50s += p50;
        }
        let sum: f64 = hops.iter().sum();
        assert!(
            (p50s - sum).abs() <= hops.len() as f64,
            "{name}: hops' p50s add to {p50s} ms, configured {sum}"
        );
        // The column is the sum of the hops' means, as for hops pinged from the client.
        let theo = r["theoretical_ms"].as_f64().unwrap();
        assert!((theo - avgs).abs() < 1e-9, "{name}: theoretical {theo}");
        assert_eq!(r["errors"].as_u64(), Some(0), "{name}\n{stdout}");
    }
    // The chain's LA → target hop was measured by LA's agent, not pinged from the client.
    assert_eq!(row(&t, "chain")["hops"][2]["from"], "npt://10.0.2.2:7777");
    assert!(stdout.contains(" measured "), "{stdout}");
}

#[test]
fn tunnel_loss_reports_first_packet_and_total_per_loss_case() {
    if lab::skipped("the tunnel-loss lab") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = scaled(
        dir.path(),
        "quic-tunnel-loss.toml",
        &[("\"--count\", \"1000\"", "\"--count\", \"60\"")],
    );
    let (t, stdout) = lab_run(dir.path(), &file);
    assert!(stdout.contains("first packet"), "{stdout}");
    for loss in ["0%", "1%", "2%"] {
        for path in ["direct", "forwarded"] {
            let r = row(&t, &format!("{path}-{loss}"));
            let first = r["first_packet_ms"].as_f64().unwrap();
            let total = r["total_ms"].as_f64().unwrap();
            // Connect (25 ms RTT) + first echo (25 ms): 50 ms, more only if loss hit them.
            // Through the forwarder the connect is local, but the forwarder connects onward
            // (one RTT) before the first echo can cross: ~50 ms too, as quic-tun's tunnel did.
            let want = 50.0;
            assert!(
                first >= want - 1.0,
                "{path}-{loss}: first packet {first} ms\n{stdout}"
            );
            if loss == "0%" {
                // Two round trips, not three (75 ms): the bound is half an RTT above, since
                // the end hosts' own delays on this shared box reached 8 ms (58.08 ms seen).
                assert!(
                    first < want + 12.5,
                    "{path}-{loss}: first packet {first} ms\n{stdout}"
                );
                // 60 echoes of one RTT each.
                assert!(
                    (60.0 * 25.0..60.0 * 25.0 + 300.0).contains(&total),
                    "{path}: total {total}"
                );
            }
            assert!(total >= 60.0 * 25.0, "{path}-{loss}: total {total} ms");
        }
    }
}
