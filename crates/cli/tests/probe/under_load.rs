//! `npt probe --under-load` end to end over loopback against `npt serve`: the document has the
//! three phases and the load's goodput and the schema accepts it; the load's connections exist
//! only in the loaded phase (none left in the recovery phase while the probe still runs), and
//! Ctrl-C stops load and probe together and still writes the report; bad load flags and a
//! refusing load target exit 2 naming `--under-load`. (The numbers on a known path are checked
//! in the lab, with root: the lab binary's `loaded.rs`.)
#![cfg(test)] // clippy.toml: test helpers count as tests
#![allow(clippy::cast_possible_wrap)] // small test values

use crate::common;
use crate::serve_util;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{assert_valid, f, json, npt, run, serve, u, Guard};

const LIMIT: Duration = Duration::from_secs(60);

/// Established TCP connections from this host to `port` (the client ends, from
/// /proc/net/tcp): the load's streams, as the probe's own packets are UDP.
fn connections_to(port: u16) -> usize {
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let rem_port = cols
                .get(2)
                .and_then(|r| r.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            rem_port == Some(port) && cols.get(3) == Some(&"01")
        })
        .count()
}

/// Polls `cond` every 20 ms until it holds or `limit` passes; whether it held.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

fn spawn_probe(target: &str, phases: [&str; 3], out: &std::path::Path) -> Guard {
    let child = npt()
        .args(["probe", &format!("udp://{target}"), "--pps", "200", "-q"])
        .args(["--under-load", &format!("tcp://{target}")])
        .args(["--load-streams", "3", "--load-direction", "both"])
        .args(["--load-idle", phases[0], "--load-duration", phases[1]])
        .args([
            "--load-recovery",
            phases[2],
            "--json",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Guard(child)
}

#[test]
fn three_phases_and_the_load_is_gone_before_the_probe_ends() {
    let (_s, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("u.json");
    let mut g = spawn_probe(&addr.to_string(), ["1s", "2s", "3s"], &out);
    // The load's 6 connections (3 each way) appear in the loaded phase …
    assert!(
        wait_for(Duration::from_secs(10), || connections_to(addr.port()) >= 6),
        "the load never connected"
    );
    // … and are all gone in the recovery phase, while the probe still runs.
    assert!(
        wait_for(Duration::from_secs(8), || connections_to(addr.port()) == 0),
        "the load outlived its phase"
    );
    assert!(
        g.0.try_wait().unwrap().is_none(),
        "the probe should still be in its recovery phase"
    );
    let status = g.0.wait().unwrap();
    assert!(status.success());
    let doc = json(&out);
    assert_valid(&doc, "probe");
    assert_eq!(doc["stopped_by"], "duration");
    let ul = &doc["under_load"];
    let names: Vec<&str> = ul["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["idle", "loaded", "recovery"]);
    assert_eq!(f(&doc, "/under_load/phases/1/start_s"), 1.0);
    assert_eq!(f(&doc, "/under_load/phases/2/end_s"), 6.0);
    // 200 pps: about 200, 400 and 600 replies in the phases (loopback loses none).
    for (i, n) in [(0, 200.0), (1, 400.0), (2, 600.0)] {
        let c = f(&doc, &format!("/under_load/phases/{i}/rtt_ms/count"));
        assert!((c - n).abs() <= 5.0, "phase {i}: {c} replies");
    }
    let started = f(&doc, "/under_load/load_started_s");
    assert!((1.0..1.2).contains(&started), "{started}");
    assert!(f(&doc, "/under_load/load_ended_s") < 6.0);
    assert!(f(&doc, "/under_load/goodput_bps/down") > 1e7);
    assert!(f(&doc, "/under_load/goodput_bps/up") > 1e7);
    assert!(f(&doc, "/under_load/rpm") > 0.0);
    assert_eq!(u(&doc, "/under_load/load_errors/total_errors"), 0);
    for h in ["rtt_idle", "rtt_loaded", "rtt_recovery"] {
        assert!(doc["histograms"][h].is_object(), "{h}");
    }
    // `npt report` shows the phases again from the file.
    let o = run(&["report", out.to_str().unwrap()], LIMIT);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("  loaded ") && text.contains("rpm "),
        "{text}"
    );
}

#[test]
fn ctrl_c_stops_load_and_probe_together_and_writes_the_report() {
    let (_s, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.json");
    let mut g = spawn_probe(&addr.to_string(), ["500ms", "60s", "5s"], &out);
    let pid = g.0.id() as i32;
    assert!(
        wait_for(Duration::from_secs(10), || connections_to(addr.port()) >= 6),
        "the load never connected"
    );
    let t = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = g.0.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(status.success());
    assert!(
        wait_for(Duration::from_secs(5), || connections_to(addr.port()) == 0),
        "load connections left"
    );
    let doc = json(&out);
    assert_valid(&doc, "probe");
    assert_eq!(doc["stopped_by"], "signal");
    assert!(f(&doc, "/under_load/load_ended_s") < 20.0);
    assert!(f(&doc, "/under_load/goodput_bps/down") > 0.0);
    assert!(f(&doc, "/under_load/phases/1/rtt_ms/count") > 0.0);
}

#[test]
fn bad_load_input_exits_2_naming_the_flag() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = format!("tcp://127.0.0.1:{port}");
    let (_s, addr) = serve(&[]);
    let good = format!("tcp://{addr}");
    let probe = format!("udp://{addr}");
    for (extra, flag) in [
        (vec!["--under-load", "tcp//nowhere"], "--under-load"),
        (vec!["--under-load", &refused], "--under-load"),
        (
            vec!["--under-load", &good, "--load-streams", "0"],
            "--load-streams",
        ),
        (
            vec!["--under-load", &good, "--load-streams", "1025"],
            "--load-streams",
        ),
        (
            vec!["--under-load", &good, "--duration", "5s"],
            "--duration",
        ),
        (vec!["--load-streams", "2"], "--under-load"),
        (vec!["--under-load", &probe], "--load-rate"),
        (
            vec!["--under-load", &probe, "--load-rate", "fast"],
            "--load-rate",
        ),
        (
            vec![
                "--under-load",
                &probe,
                "--load-rate",
                "1mbit",
                "--load-direction",
                "both",
            ],
            "--load-direction",
        ),
        (
            vec![
                "--under-load",
                &probe,
                "--load-rate",
                "1mbit",
                "--load-size",
                "5",
            ],
            "--load-size",
        ),
        // A stream load may be paced, but with a unit and above 0; it takes no datagram size.
        (
            vec!["--under-load", &good, "--load-rate", "5"],
            "--load-rate",
        ),
        (
            vec!["--under-load", &good, "--load-rate", "0mbit"],
            "--load-rate",
        ),
        (
            vec!["--under-load", &good, "--load-size", "1200"],
            "--load-size",
        ),
    ] {
        let mut a = vec!["probe", probe.as_str()];
        a.extend(extra.iter().copied());
        let o = run(&a, LIMIT);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(flag), "{extra:?}: {err}");
    }
}

/// A UDP load at a rate (`udp://`, `--load-rate`) beside a UDP probe of the same port, up and
/// down (loopback is trusted for UDP down without a token): loopback takes 20 Mbit/s whole, so
/// what arrives is the rate, and the document carries the load's counts.
/// `npt probe ARGS` with phases of 500 ms idle, `loaded` under load and 500 ms recovery, as
/// JSON: it must exit 0, and its document (checked against the schema) is returned.
fn loaded_probe(args: &[&str], loaded: &str) -> serde_json::Value {
    let mut a = vec!["probe"];
    a.extend_from_slice(args);
    a.extend([
        "--load-idle",
        "500ms",
        "--load-duration",
        loaded,
        "--load-recovery",
        "500ms",
        "-q",
        "--format",
        "json",
    ]);
    let o = run(&a, LIMIT);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&doc, "probe");
    doc
}

#[test]
fn a_udp_load_at_a_rate_beside_a_udp_probe() {
    let (_s, addr) = serve(&[]);
    let target = format!("udp://{addr}");
    for dir in ["up", "down"] {
        let doc = loaded_probe(
            &[
                &target,
                "--pps",
                "100",
                "--under-load",
                &target,
                "--load-direction",
                dir,
                "--load-rate",
                "20mbit",
                "--load-size",
                "1000",
            ],
            "2s",
        );
        let ul = &doc["under_load"];
        assert_eq!(ul["load"]["direction"], dir);
        assert_eq!(ul["load"]["streams"], 1);
        assert_eq!(f(&doc, "/under_load/load/rate_bps"), 20e6);
        assert_eq!(u(&doc, "/under_load/load/size"), 1000);
        // 2 s at 20 Mbit/s of 1000 B datagrams: 5000 sent.
        let sent = u(&doc, "/under_load/udp/sent");
        assert!((4800..=5200).contains(&sent), "{dir}: sent {sent}");
        let received = u(&doc, "/under_load/udp/received");
        assert_eq!(u(&doc, "/under_load/udp/lost"), sent - received);
        let delivered = f(&doc, "/under_load/udp/delivered_bps");
        assert!(
            delivered > 18e6 && delivered <= 20.5e6,
            "{dir}: {delivered}"
        );
        assert!(f(&doc, &format!("/under_load/goodput_bps/{dir}")) > 18e6);
        assert_eq!(u(&doc, "/under_load/load_errors/total_errors"), 0);
        assert!(f(&doc, "/under_load/phases/1/rtt_ms/count") > 150.0);
    }
}

/// The load goes the probe's way: through `--via` (microsocks, SOCKS5 CONNECT), when installed.
#[test]
fn the_load_goes_through_the_probes_proxy() {
    use npt_testkit::process::free_port;
    use npt_testkit::proxies::{have, microsocks};
    if !have("/usr/bin/microsocks") {
        eprintln!("SKIPPED: microsocks is not installed");
        return;
    }
    let (_s, addr) = serve(&[]);
    let port = free_port();
    let _m = microsocks(port, None);
    let via = format!("socks5://127.0.0.1:{port}");
    let target = format!("tcp://{addr}");
    let doc = loaded_probe(
        &[
            &target,
            "--pps",
            "100",
            "--via",
            &via,
            "--under-load",
            &target,
            "--load-streams",
            "2",
        ],
        "1500ms",
    );
    assert_eq!(doc["under_load"]["load"]["via"], via.as_str());
    assert!(f(&doc, "/under_load/goodput_bps/down") > 0.0);
    assert_eq!(u(&doc, "/under_load/load_errors/total_errors"), 0);
    assert!(f(&doc, "/under_load/phases/1/rtt_ms/count") > 0.0);
}

/// A UDP load through a SOCKS5 UDP relay (danted) beside a UDP probe through the same relay,
/// both keyed by `--token`: the handshakes and the load's datagrams go behind the relay's
/// header, and the load still delivers its rate.
#[test]
fn a_udp_load_with_a_token_goes_through_the_probes_socks5_relay() {
    use npt_testkit::process::free_port;
    use npt_testkit::proxies::{danted, have};
    if !have("/usr/sbin/danted") {
        return;
    }
    let (_s, addr) = serve(&["--token", "s3cret"]);
    let port = free_port();
    let _d = danted(port);
    let via = format!("socks5://127.0.0.1:{port}");
    let target = format!("udp://{addr}");
    let doc = loaded_probe(
        &[
            &target,
            "--pps",
            "100",
            "--via",
            &via,
            "--token",
            "s3cret",
            "--under-load",
            &target,
            "--load-rate",
            "5mbit",
        ],
        "2s",
    );
    assert_eq!(doc["under_load"]["load"]["via"], via.as_str());
    assert_eq!(u(&doc, "/under_load/load_errors/total_errors"), 0);
    // 5 Mbit/s through a relay on loopback: all of it, give or take the last report period.
    let delivered = f(&doc, "/under_load/udp/delivered_bps");
    assert!((4.5e6..=5.2e6).contains(&delivered), "{delivered}");
    assert!(f(&doc, "/under_load/phases/1/rtt_ms/count") > 150.0);
    // The probe's keyed frames came back through the relay beside the load (a datagram the
    // busy relay dropped on a shared 2-core box may be missing, not more).
    let (sent, lost) = (u(&doc, "/summary/sent"), u(&doc, "/summary/lost"));
    assert!(sent >= 250 && lost * 100 <= sent, "lost {lost} of {sent}");
}

/// A QUIC load (`quic://`, `--load-insecure`) beside a UDP probe of the same server.
#[test]
fn a_quic_load_beside_a_udp_probe() {
    let s = serve_util::serve(4096, &["--quic", "127.0.0.1:0"]);
    let quic = s.quic.expect("quic address");
    let (udp, quic) = (format!("udp://{}", s.tcp), format!("quic://{quic}"));
    let doc = loaded_probe(
        &[
            &udp,
            "--under-load",
            &quic,
            "--load-insecure",
            "--load-streams",
            "2",
        ],
        "1500ms",
    );
    assert!(doc["under_load"]["load"]["target"]
        .as_str()
        .unwrap()
        .starts_with("quic://"));
    assert!(f(&doc, "/under_load/goodput_bps/down") > 0.0);
    assert_eq!(u(&doc, "/under_load/load_errors/total_errors"), 0);
}
