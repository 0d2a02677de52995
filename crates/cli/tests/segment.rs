//! Why this exists: several agents each running `--segment k/n` of one load must add up to
//! exactly the load one agent would run, begin together (`--start-at`), and carry the same run
//! id and config hash so their results can be merged — and refused when they do not match.

mod common;

use std::process::{Child, Stdio};
use std::time::{Duration, SystemTime};

use common::*;

fn u(d: &serde_json::Value, p: &str) -> u64 {
    d.pointer(p)
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| panic!("{p} missing in {}", d["config"]))
}

/// Starts `npt <args> --segment k/n --json <dir>/part<k>.json` for every k, all at once.
fn agents(args: &[String], n: u32, dir: &std::path::Path) -> Vec<serde_json::Value> {
    let children: Vec<(Guard, std::path::PathBuf)> = (0..n)
        .map(|k| {
            let out = dir.join(format!("part{k}.json"));
            let child: Child = npt()
                .args(args)
                .args(["--segment", &format!("{k}/{n}"), "-q", "--json"])
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (Guard(child), out)
        })
        .collect();
    children
        .into_iter()
        .map(|(mut g, out)| {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while g.0.try_wait().unwrap().is_none() {
                assert!(std::time::Instant::now() < deadline, "agent did not finish");
                std::thread::sleep(Duration::from_millis(20));
            }
            json(&out)
        })
        .collect()
}

fn start_in(secs: u64) -> String {
    humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(secs)).to_string()
}

#[test]
fn probe_parts_add_up_to_the_whole_and_start_together() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let start = start_in(2);
    let args: Vec<String> = [
        "probe",
        &format!("udp://{addr}"),
        "--pps",
        "2000",
        "--count",
        "1001",
        "--start-at",
        &start,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let parts = agents(&args, 4, dir.path());
    parts.iter().for_each(|d| assert_valid(d, "probe"));
    let sent: Vec<u64> = parts.iter().map(|d| u(d, "/summary/sent")).collect();
    assert_eq!(sent, vec![251, 250, 250, 250]);
    let ids: Vec<&serde_json::Value> = parts.iter().map(|d| &d["config"]["segment"]).collect();
    for (k, s) in ids.iter().enumerate() {
        assert_eq!(s["index"], k as u64);
        assert_eq!(s["count"], 4);
        assert_eq!(s["run_id"], ids[0]["run_id"]);
        assert_eq!(s["config_hash"], ids[0]["config_hash"]);
    }
    // Each part ran at a quarter of the rate, and all began at --start-at.
    for d in &parts {
        let pps = d["summary"]["pps"].as_f64().unwrap();
        assert!((400.0..600.0).contains(&pps), "pps {pps}");
        let began = humantime::parse_rfc3339_weak(d["started_at"].as_str().unwrap()).unwrap();
        let want = humantime::parse_rfc3339_weak(&start).unwrap();
        let off = began
            .duration_since(want)
            .unwrap_or_else(|e| e.duration())
            .as_secs_f64();
        assert!(off < 0.5, "part started {off} s away from --start-at");
    }
}

#[test]
fn run_splits_users_and_bad_splits_are_refused() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "run",
        &format!("tcp://{addr}"),
        "--users",
        "10",
        "--duration",
        "1s",
        "--mix",
        "web=100",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let parts = agents(&args, 4, dir.path());
    parts.iter().for_each(|d| assert_valid(d, "run"));
    let users: Vec<u64> = parts.iter().map(|d| u(d, "/summary/users")).collect();
    assert_eq!(users, vec![3, 3, 2, 2]);
    let hashes: Vec<&serde_json::Value> = parts
        .iter()
        .map(|d| &d["config"]["segment"]["config_hash"])
        .collect();
    assert!(hashes.iter().all(|h| *h == hashes[0]));
    // Fewer users than parts, an index out of range: exit 2 naming the flag.
    for (bad, why) in [
        (
            vec!["--users", "3", "--segment", "0/4"],
            "--users 3 cannot be split into 4",
        ),
        (vec!["--users", "8", "--segment", "4/4"], "--segment"),
    ] {
        let mut a = vec!["run", "tcp://127.0.0.1:9", "--mix", "web=100", "-d", "1s"];
        a.extend(bad);
        let out = run(&a, Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(why));
    }
}
