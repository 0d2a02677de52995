//! Why this exists: several agents each running `--segment k/n` of one load must add up to
//! exactly the load one agent would run, begin together (`--start-at`), and carry the same run
//! id and config hash so their results can be merged — and refused when they do not match
//! (probe, run, http and bulk).

#![cfg(test)]

use crate::common;

use std::time::{Duration, SystemTime};

use common::*;

fn u(d: &serde_json::Value, p: &str) -> u64 {
    d.pointer(p)
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| panic!("{p} missing in {}", d["config"]))
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

fn merge(files: &[std::path::PathBuf], out: &std::path::Path) -> std::process::Output {
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--json".into(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    run(&args, Duration::from_secs(20))
}

#[test]
fn merged_parts_match_one_agent_doing_the_whole_load() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let target = format!("udp://{addr}");
    let args: Vec<String> = ["probe", &target, "--pps", "2000", "--count", "2001"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let parts = agents(&args, 4, dir.path());
    let files: Vec<_> = (0..4)
        .map(|k| dir.path().join(format!("part{k}.json")))
        .collect();
    let merged_path = dir.path().join("all.json");
    let out = merge(&files, &merged_path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = json(&merged_path);
    assert_valid(&m, "probe");
    assert_eq!(u(&m, "/summary/sent"), 2001);
    let received: u64 = parts.iter().map(|d| u(d, "/summary/received")).sum();
    assert_eq!(u(&m, "/summary/received"), received);
    assert_eq!(
        u(&m, "/summary/rtt_ms/count"),
        received,
        "every sample in the merge"
    );
    assert_eq!(
        m["config"]["segment"]["merged"],
        serde_json::json!([0, 1, 2, 3])
    );
    // One agent doing the whole load: the same count (the latencies are other samples).
    let whole = dir.path().join("whole.json");
    let o = run(
        &[
            &target,
            "--pps",
            "2000",
            "--count",
            "2001",
            "-q",
            "--json",
            whole.to_str().unwrap(),
        ]
        .iter()
        .fold(vec!["probe"], |mut v, a| {
            v.push(a);
            v
        }),
        Duration::from_secs(20),
    );
    assert!(o.status.success());
    assert_eq!(u(&json(&whole), "/summary/sent"), u(&m, "/summary/sent"));

    // A part from another run is refused, naming both files; a missing part is reported.
    let (_srv2, addr2) = serve(&[]);
    let other_dir = tempfile::tempdir().unwrap();
    let other_args: Vec<String> = ["probe", &format!("udp://{addr2}"), "--count", "40"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    agents(&other_args, 2, other_dir.path());
    let mixed = vec![files[0].clone(), other_dir.path().join("part1.json")];
    let out = merge(&mixed, &dir.path().join("x.json"));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("parts of different runs") && err.contains("part1.json"),
        "{err}"
    );
    let out = merge(&files[..3], &dir.path().join("three.json"));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing [3]"));
}

#[test]
fn run_and_http_parts_merge_too() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "run",
        &format!("tcp://{addr}"),
        "--users",
        "6",
        "--duration",
        "1s",
        "--mix",
        "web=100",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let parts = agents(&args, 3, dir.path());
    let files: Vec<_> = (0..3)
        .map(|k| dir.path().join(format!("part{k}.json")))
        .collect();
    let out = dir.path().join("run.json");
    assert!(merge(&files, &out).status.success());
    let m = json(&out);
    assert_valid(&m, "run");
    let requests: u64 = parts.iter().map(|d| u(d, "/summary/requests")).sum();
    assert_eq!(u(&m, "/summary/requests"), requests);
    assert_eq!(u(&m, "/summary/users"), 6);
    assert_eq!(u(&m, "/protocols/tcp/latency_ms/count"), requests);

    let (_h, http) = serve_http();
    let hdir = tempfile::tempdir().unwrap();
    let hargs: Vec<String> = ["http", &format!("http://{http}/"), "-c", "4", "-d", "1s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let hparts = agents(&hargs, 2, hdir.path());
    let hfiles: Vec<_> = (0..2)
        .map(|k| hdir.path().join(format!("part{k}.json")))
        .collect();
    let hout = hdir.path().join("http.json");
    assert!(merge(&hfiles, &hout).status.success());
    let m = json(&hout);
    assert_valid(&m, "http");
    let requests: u64 = hparts.iter().map(|d| u(d, "/summary/requests")).sum();
    assert_eq!(u(&m, "/summary/requests"), requests);
    assert_eq!(u(&m, "/summary/latency_ms/count"), requests);
}

/// Bulk splits its streams (UDP: its rate) over the parts; the parts merge into one bulk
/// document with every stream, every byte and every RTT sample, which `report` and `compare`
/// read like any other.
#[test]
fn bulk_parts_split_streams_and_rate_and_merge() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = ["bulk", &format!("tcp://{addr}"), "-P", "3", "-t", "1s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let parts = agents(&args, 2, dir.path());
    parts.iter().for_each(|d| assert_valid(d, "bulk"));
    let streams: Vec<u64> = parts.iter().map(|d| u(d, "/summary/streams")).collect();
    assert_eq!(streams, vec![2, 1]);
    let files: Vec<_> = (0..2)
        .map(|k| dir.path().join(format!("part{k}.json")))
        .collect();
    let out = dir.path().join("bulk.json");
    let o = merge(&files, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = json(&out);
    assert_valid(&m, "bulk");
    assert_eq!(u(&m, "/summary/streams"), 3);
    let idx: Vec<u64> = m["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["index"].as_u64().unwrap())
        .collect();
    assert_eq!(idx, vec![0, 1, 2]);
    let bytes: f64 = parts
        .iter()
        .map(|d| d["summary"]["bytes"]["down"].as_f64().unwrap())
        .sum();
    assert_eq!(m["summary"]["bytes"]["down"].as_f64().unwrap(), bytes);
    assert!(bytes > 0.0);
    let rtts: u64 = parts.iter().map(|d| u(d, "/summary/rtt_ms/count")).sum();
    assert_eq!(u(&m, "/summary/rtt_ms/count"), rtts);
    for iv in m["intervals"].as_array().unwrap() {
        assert!(iv["streams"].as_array().unwrap().len() <= 3, "{iv}");
    }
    // report and compare read the merged document.
    let o = run(&["report", out.to_str().unwrap()], Duration::from_secs(20));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("goodput"));
    let o = run(
        &["compare", files[0].to_str().unwrap(), out.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // UDP: one flow per part, each at its share of the rate.
    let udir = tempfile::tempdir().unwrap();
    let uargs: Vec<String> = [
        "bulk",
        &format!("udp://{addr}"),
        "--rate",
        "20mbit",
        "-t",
        "1s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let uparts = agents(&uargs, 2, udir.path());
    for d in &uparts {
        assert_eq!(d["summary"]["udp"]["rate_bps"].as_f64().unwrap(), 10e6);
    }
    let ufiles: Vec<_> = (0..2)
        .map(|k| udir.path().join(format!("part{k}.json")))
        .collect();
    let uout = udir.path().join("udp.json");
    assert!(merge(&ufiles, &uout).status.success());
    let m = json(&uout);
    assert_valid(&m, "bulk");
    assert_eq!(m["summary"]["udp"]["rate_bps"].as_f64().unwrap(), 20e6);
    let sent: u64 = uparts.iter().map(|d| u(d, "/summary/udp/sent")).sum();
    assert_eq!(u(&m, "/summary/udp/sent"), sent);

    // More parts than streams: exit 2 naming the flag.
    let o = run(
        &["bulk", "tcp://127.0.0.1:9", "-P", "2", "--segment", "0/3"],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--streams 2 cannot be split"));
}
