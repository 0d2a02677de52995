//! Why this exists: `npt compare` must put a forwarded path beside the direct one with the
//! delay the forwarder really adds, against the theoretical latency given, and refuse bad input
//! naming it — from result files, and by running a scenario file itself (child `npt`
//! processes, hops pinged, `--runs` interleaved, failing scenarios as rows), with its HTML page
//! drawn in headless Chromium; the children's lifetimes are tested in `compare_children.rs`.
//! The forwarder is written here: it holds each chunk 5 ms in each direction.

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use npt_testkit::chromium;

const DELAY: Duration = Duration::from_millis(5);

/// Copies `from` → `to`, holding each chunk `DELAY` (bounded by the 30 s life of the test).
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let end = Instant::now() + Duration::from_secs(30);
    let _ = from.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 16 * 1024];
    while Instant::now() < end {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        std::thread::sleep(DELAY);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// A TCP forwarder to `upstream` that adds `DELAY` each way.
fn delaying_forwarder(upstream: SocketAddr) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().take(8) {
            let Ok(c) = c else { return };
            let Ok(u) = TcpStream::connect(upstream) else {
                return;
            };
            let _ = (c.set_nodelay(true), u.set_nodelay(true));
            let (c2, u2) = (c.try_clone().unwrap(), u.try_clone().unwrap());
            std::thread::spawn(move || pump(c, u));
            std::thread::spawn(move || pump(u2, c2));
        }
    });
    addr
}

#[test]
fn a_forwarded_path_shows_the_delay_it_adds() {
    let (_srv, addr) = serve(&[]);
    let fwd = delaying_forwarder(addr);
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, target) in [("direct", addr), ("forwarded", fwd)] {
        let f = dir.path().join(format!("{name}.json"));
        let out = run(
            &[
                "probe",
                &format!("tcp://{target}"),
                "--ping-pong",
                "-n",
                "100",
                "--size",
                "200",
                "-q",
                "--json",
                f.to_str().unwrap(),
            ],
            Duration::from_secs(30),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(f);
    }
    let table = dir.path().join("cmp.json");
    let md = dir.path().join("cmp.md");
    let out = run(
        &[
            "compare",
            files[0].to_str().unwrap(),
            files[1].to_str().unwrap(),
            "--baseline",
            "direct",
            "--hops",
            "forwarded=5+5",
            "--json",
            table.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("scenario"), "{text}");
    let t = json(&table);
    assert_eq!(t["baseline"], "direct");
    let fw = &t["scenarios"][1];
    assert_eq!(fw["name"], "forwarded");
    assert_eq!(fw["theoretical_ms"], 10.0);
    // The forwarder holds each message 5 ms each way: +10 ms over direct, a little more for
    // its own wakeups, never less.
    let extra = fw["vs_baseline_ms"].as_f64().unwrap();
    assert!(
        (9.9..14.0).contains(&extra),
        "forwarded is {extra} ms over direct\n{text}"
    );
    assert!(fw["overhead_ms"].as_f64().unwrap() > -0.5, "{fw}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.starts_with("| scenario | avg (ms)"), "{md}");
}

#[test]
fn bad_input_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{ not json").unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(&old, r#"{"schema": "npt.result.v0", "kind": "probe"}"#).unwrap();
    for (args, want) in [
        (
            vec![junk.to_str().unwrap()],
            "junk.json: not a result document",
        ),
        (vec![old.to_str().unwrap()], "npt.result.v0"),
        (
            vec!["/no/such/file.json"],
            "/no/such/file.json: cannot read",
        ),
    ] {
        let mut a = vec!["compare"];
        a.extend(args);
        let out = run(&a, Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{err}");
    }
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_scenario_file_runs_each_scenario_and_keeps_failures_as_rows() {
    let (_srv, addr) = serve(&[]);
    let fwd = delaying_forwarder(addr);
    let dead = closed_port();
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(
        dir.path(),
        "scenarios.toml",
        &format!(
            r#"
baseline = "direct"
hop_pings = 5
[workload]
kind = "probe"
args = ["--ping-pong", "-n", "100", "--size", "200"]
[[scenario]]
name = "direct"
target = "tcp://{addr}"
hops = ["tcp://{addr}", "tcp://{addr}"]
[[scenario]]
name = "forwarded"
target = "tcp://{fwd}"
hop_rtts_ms = [5, 5]
[[scenario]]
name = "dead"
target = "tcp://127.0.0.1:{dead}"
theoretical_ms = 1
"#
        ),
    );
    let out_dir = dir.path().join("out");
    let (json_path, md, html) = (
        dir.path().join("cmp.json"),
        dir.path().join("cmp.md"),
        dir.path().join("cmp.html"),
    );
    let started = Instant::now();
    let out = run(
        &[
            "compare",
            &file,
            "--out-dir",
            out_dir.to_str().unwrap(),
            "--json",
            json_path.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("npt compare of 3 scenarios took {took:?}\n{text}\n{err}");
    // A failed scenario makes the exit status 1; the table is still complete.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(text.starts_with("scenario"), "{text}");
    let t = json(&json_path);
    assert_eq!(t["baseline"], "direct");
    assert_eq!(t["runs"], 1);
    let rows = t["scenarios"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["direct", "forwarded", "dead"]);
    // Every row that ran points at its own result file, a valid probe document.
    for r in &rows[..2] {
        let p = Path::new(r["result"].as_str().unwrap());
        assert!(p.starts_with(&out_dir), "{p:?}");
        assert_valid(&json(p), "probe");
        assert_eq!(r["runs"], 1);
        assert_eq!(r["error"], serde_json::Value::Null);
        for k in ["avg_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{k} in {r}");
        }
    }
    // direct: the theoretical latency is the sum of the two pinged hops' average RTTs.
    let direct = &rows[0];
    let hops = direct["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 2);
    let sum: f64 = hops
        .iter()
        .map(|h| {
            let doc = json(Path::new(h["result"].as_str().unwrap()));
            assert_eq!(doc["kind"], "ping");
            f(&doc, "/summary/avg_ms")
        })
        .sum();
    assert!(
        (f(direct, "/theoretical_ms") - sum).abs() < 1e-9,
        "{direct}"
    );
    // forwarded: 5 ms each way over direct, and over the 10 ms given as its theory.
    let fw = &rows[1];
    assert_eq!(fw["theoretical_ms"], 10.0);
    let extra = f(fw, "/vs_baseline_ms");
    assert!(
        (9.9..14.0).contains(&extra),
        "forwarded is {extra} ms over direct"
    );
    assert!(f(fw, "/overhead_ms") > -0.5, "{fw}");
    // dead: a row with its error and no figures.
    let d = &rows[2];
    assert!(d["avg_ms"].is_null(), "{d}");
    assert_eq!(d["runs"], 0);
    let e = d["error"].as_str().unwrap();
    assert!(e.starts_with("run 1: exit status 1"), "{e}");
    assert!(text.contains("error: dead: run 1: exit status 1"), "{text}");
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .starts_with("| scenario |"));
    if chromium::wanted() {
        // Latency, rate and errors per interval, the spectrum and the CDF.
        let dom = chromium::assert_every_chart_drew(&html, 5);
        for name in [
            "direct p50",
            "forwarded p50",
            "direct errors",
            "forwarded loss %",
        ] {
            assert!(dom.contains(&format!(">{name}<")), "{name} over time");
        }
        eprintln!(
            "compare HTML: {} KB",
            std::fs::metadata(&html).unwrap().len() / 1024
        );
    }
}

#[test]
fn runs_are_interleaved_and_merged() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(
        dir.path(),
        "two.toml",
        &format!(
            r#"
[workload]
kind = "probe"
args = ["-n", "50", "--pps", "500"]
[[scenario]]
name = "udp"
target = "udp://{addr}"
[[scenario]]
name = "tcp"
target = "tcp://{addr}"
args = ["--size", "100"]
"#
        ),
    );
    let out_dir = dir.path().join("out");
    let json_path = dir.path().join("t.json");
    let out = run(
        &[
            "compare",
            &file,
            "--runs",
            "2",
            "--baseline",
            "udp",
            "--out-dir",
            out_dir.to_str().unwrap(),
            "--json",
            json_path.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // A B A B, by the order the children started (their own start stamps).
    let order: Vec<(String, String)> = ["run1-01-udp", "run1-02-tcp", "run2-01-udp", "run2-02-tcp"]
        .iter()
        .map(|s| {
            let doc = json(&out_dir.join(format!("{s}.json")));
            (
                doc["started_at"].as_str().unwrap().to_string(),
                s.to_string(),
            )
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, order, "children did not run interleaved");
    let t = json(&json_path);
    assert_eq!(t["runs"], 2);
    for (i, r) in t["scenarios"].as_array().unwrap().iter().enumerate() {
        assert_eq!(r["runs"], 2, "{r}");
        assert_eq!(r["merged"], "histograms");
        assert_eq!(r["results"].as_array().unwrap().len(), 2);
        // The merged histogram holds both runs' samples: its p50 lies within the runs' p50s.
        let (lo, hi) = (f(r, "/spread/p50_ms/min"), f(r, "/spread/p50_ms/max"));
        let p50 = f(r, "/p50_ms");
        assert!(lo <= p50 && p50 <= hi, "{r}");
        assert!(f(r, "/spread/avg_ms/min") <= f(r, "/spread/avg_ms/max"));
        let docs: Vec<serde_json::Value> = r["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| json(Path::new(p.as_str().unwrap())))
            .collect();
        let received: f64 = docs.iter().map(|d| f(d, "/summary/received")).sum();
        assert_eq!(received, 100.0, "scenario {i}: 2 runs × 50 packets");
        let target = if i == 0 { "udp" } else { "tcp" };
        assert!(r["target"].as_str().unwrap().starts_with(target));
    }
    assert!(err.contains("[3/4] udp run 2/2: ok"), "{err}");
}

#[test]
fn through_a_socks5_proxy_as_a_scenario_field() {
    if !npt_testkit::proxies::have("/usr/bin/microsocks") {
        return;
    }
    let (_srv, addr) = serve(&[]);
    let port = npt_testkit::process::free_port();
    let _proxy = npt_testkit::proxies::microsocks(port, None);
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(
        dir.path(),
        "via.toml",
        &format!(
            r#"
baseline = "direct"
[workload]
kind = "probe"
args = ["--ping-pong", "-n", "50"]
[[scenario]]
name = "direct"
target = "tcp://{addr}"
[[scenario]]
name = "via-socks"
target = "tcp://{addr}"
via = "socks5://127.0.0.1:{port}"
"#
        ),
    );
    let json_path = dir.path().join("t.json");
    let out = run(
        &["compare", &file, "--json", json_path.to_str().unwrap()],
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let t = json(&json_path);
    let via = &t["scenarios"][1];
    assert_eq!(via["via"], format!("socks5://127.0.0.1:{port}"));
    assert_eq!(t["scenarios"][0]["via"], serde_json::Value::Null);
    let doc = json(Path::new(via["result"].as_str().unwrap()));
    assert!(doc["config"]["via"]
        .as_str()
        .unwrap()
        .contains(&port.to_string()));
    assert!(f(via, "/p50_ms") > 0.0);
    // Without --out-dir the results go to a kept temporary directory, printed.
    let dir_line = err
        .lines()
        .find(|l| l.contains("results and logs in"))
        .unwrap();
    let kept = Path::new(dir_line.rsplit(' ').next().unwrap());
    assert!(kept.join("run1-02-via-socks.json").exists(), "{dir_line}");
    let _ = std::fs::remove_dir_all(kept);
}

#[test]
fn bad_scenario_files_exit_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let good = "[workload]\nkind = \"probe\"\nargs = [\"-n\", \"5\"]\n\
                [[scenario]]\nname = \"a\"\ntarget = \"udp://127.0.0.1:9\"\n";
    for (i, (text, want)) in [
        (good.replace("name = ", "nmae = "), "unknown field `nmae`"),
        (
            good.replace("target = \"udp://127.0.0.1:9\"\n", ""),
            "missing field `target`",
        ),
        (
            good.replace("\"probe\"", "\"iperf\""),
            "unknown variant `iperf`",
        ),
        (
            format!("{good}node = \"client\"\n"),
            "scenario[0].node: node is for `npt lab` topology files",
        ),
        (
            good.replace("\"-n\", \"5\"", "\"--cuont\", \"5\""),
            "scenario[0] (a): workload.args + args:",
        ),
        (
            format!("baseline = \"b\"\n{good}"),
            "baseline: \"b\" names no scenario",
        ),
        ("kind = [".to_string(), "TOML parse error"),
    ]
    .into_iter()
    .enumerate()
    {
        let file = write_file(dir.path(), &format!("bad{i}.toml"), &text);
        let out = run(&["compare", &file], Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}\n{err}");
        assert!(err.contains(want), "want {want:?} in {err}");
        assert!(err.contains(&format!("bad{i}.toml")), "{err}");
    }
    let good_file = write_file(dir.path(), "good.toml", good);
    for (args, want) in [
        (vec!["--hops", "a=1+2"], "--hops is for result files"),
        (vec!["--runs", "0"], "--runs must be at least 1"),
    ] {
        let mut a = vec!["compare", good_file.as_str()];
        a.extend(args);
        let out = run(&a, Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(want));
    }
}

/// A scenario file runs every kind of result: a bulk's row is the RTT under its own load as
/// its result states it, and a trace's the RTT through the chain's entry — here through the
/// forwarder, which holds each echo 5 ms each way, so never under 10 ms.
#[test]
fn bulk_and_trace_scenarios_run_like_any_kind() {
    let (_srv, addr) = serve(&[]);
    let allow = addr.to_string();
    let (_agent, agent) = serve(&["--token", "S", "--hop-agent", "--hop-allow", &allow]);
    let fwd = delaying_forwarder(addr);
    let dir = tempfile::tempdir().unwrap();
    let bulk = write_file(
        dir.path(),
        "bulk.toml",
        &format!(
            r#"
[workload]
kind = "bulk"
args = ["-t", "1s", "-i", "500ms"]
[[scenario]]
name = "one"
target = "tcp://{addr}"
[[scenario]]
name = "two"
target = "tcp://{addr}"
args = ["-P", "2"]
"#
        ),
    );
    let trace = write_file(
        dir.path(),
        "trace.toml",
        &format!(
            r#"
[workload]
kind = "trace"
args = ["--token", "S", "-c", "4", "-i", "20ms", "--hop", "npt://{agent}"]
[[scenario]]
name = "chain"
target = "tcp://{addr}"
args = ["--through", "tcp://{fwd}"]
"#
        ),
    );
    let compare = |file: &str, name: &str| {
        let json_path = dir.path().join(format!("{name}.json"));
        let out_dir = dir.path().join(name);
        let out = run(
            &[
                "compare",
                file,
                "--out-dir",
                out_dir.to_str().unwrap(),
                "--json",
                json_path.to_str().unwrap(),
            ],
            Duration::from_secs(90),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        json(&json_path)["scenarios"].as_array().unwrap().clone()
    };
    let rows = compare(&bulk, "bulk");
    assert_eq!(rows.len(), 2);
    for (r, streams) in rows.iter().zip([1, 2]) {
        assert_eq!(r["kind"], "bulk", "{r}");
        assert_eq!(r["error"], serde_json::Value::Null, "{r}");
        let doc = json(Path::new(r["result"].as_str().unwrap()));
        assert_valid(&doc, "bulk");
        assert_eq!(u(&doc, "/summary/streams"), streams);
        // The row's figures are the document's RTT under load.
        assert!(f(&doc, "/summary/rtt_ms/count") > 0.0, "{doc}");
        assert_eq!(f(r, "/p50_ms"), f(&doc, "/summary/rtt_ms/p50"), "{r}");
        assert_eq!(f(r, "/max_ms"), f(&doc, "/summary/rtt_ms/max"), "{r}");
    }
    let rows = compare(&trace, "trace");
    let r = &rows[0];
    assert_eq!(
        (r["kind"].as_str(), r["errors"].as_u64()),
        (Some("trace"), Some(0))
    );
    let doc = json(Path::new(r["result"].as_str().unwrap()));
    assert_valid(&doc, "trace");
    assert_eq!(u(&doc, "/chain/summary/received"), 4);
    assert_eq!(f(r, "/p50_ms"), f(&doc, "/chain/summary/p50_ms"), "{r}");
    assert!(
        f(r, "/p50_ms") >= 10.0,
        "through a 5 ms-each-way forwarder: {r}"
    );
}
