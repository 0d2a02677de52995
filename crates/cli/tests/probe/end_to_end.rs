//! Why this exists: `npt probe` and `npt serve` end to end, as a user runs them — real binary,
//! real loopback sockets on port 0, result documents validated against the checked-in schema,
//! a wrong token and bad input. Peers that fail are in `faults.rs`.

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

use crate::common;

use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn udp_rate_probe_against_serve() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let target = format!("udp://{addr}");
    let o = run(
        &[
            "probe",
            &target,
            "--mode",
            "rate",
            "--pps",
            "2000",
            "-n",
            "1000",
            "--verify",
            "--report-every",
            "200ms",
            "--json",
            out.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = json(&out);
    assert_valid(&d, "probe");
    assert_eq!(u(&d, "/summary/sent"), 1000);
    assert_eq!(u(&d, "/summary/received") + u(&d, "/summary/lost"), 1000);
    assert_eq!(u(&d, "/summary/corrupt"), 0);
    assert_eq!(d["kind"], "probe");
    assert_eq!(d["stopped_by"], "count");
    assert!(f(&d, "/summary/rtt_ms/p50") > 0.0);
    assert!(
        d["summary"]["rtt_corrected_ms"].is_object(),
        "rate mode reports corrected latency"
    );
    assert!(f(&d, "/latency/udp/p99_ms") >= f(&d, "/latency/udp/p50_ms"));
    let stages = d["intervals"].as_array().unwrap();
    assert!(stages.len() >= 2, "200 ms stages over ~0.5 s");
    let sent: u64 = stages.iter().map(|s| s["sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, 1000, "stage lines add up to the total");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("[stage   0]"), "{text}");
    assert!(text.contains("packets    sent 1000"), "{text}");
}

#[test]
fn tcp_probe_reports_first_packet_and_total() {
    let (_srv, addr) = serve(&[]);
    let target = format!("tcp://{addr}");
    let o = run(
        &[
            "probe",
            &target,
            "--mode",
            "interval",
            "--interval",
            "1ms",
            "-n",
            "200",
            "--size",
            "1000",
            "--format",
            "json",
            "-q",
        ],
        LIMIT,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    assert_eq!(u(&d, "/summary/received"), 200);
    let first = f(&d, "/summary/first_packet_ms");
    let connect = f(&d, "/summary/connect_ms");
    let total = f(&d, "/summary/total_ms");
    assert!(
        first >= connect && total >= first,
        "{connect} <= {first} <= {total}"
    );
    assert!(d["latency"]["tcp"].is_object());
    // The means scripts read sit beside the full distributions they come from.
    assert_eq!(u(&d, "/summary/phases_ms/connect/count"), 1);
    assert_eq!(f(&d, "/summary/phases_ms/connect/mean"), connect);
    assert_eq!(f(&d, "/summary/phases_ms/first_packet/mean"), first);
    assert!(d["histograms"]["first_packet"]["data"].is_string());
    // quic-tun's figures, timed from after the connect: the first echo alone and the total
    // after connect. One flow: npt's are these plus its connect (the first packet through
    // histograms of 3 significant digits; the totals exactly, less the connect's rounding).
    let echo = f(&d, "/summary/first_echo_ms");
    let after = f(&d, "/summary/total_after_connect_ms");
    assert_eq!(f(&d, "/summary/phases_ms/first_echo/mean"), echo);
    assert!(d["histograms"]["first_echo"]["data"].is_string());
    assert!(
        (first - (connect + echo)).abs() <= 0.002 * first,
        "first packet {first} = connect {connect} + first echo {echo}"
    );
    assert!(
        (total - after - connect).abs() <= 0.002 * connect + 1e-6,
        "total {total} = connect {connect} + after connect {after}"
    );
}

/// The tester's CPU share is of the run only: a one-packet run on loopback lasts a few
/// milliseconds, and counting the process's start-up over that read more than every core busy
/// (200.3 % on 2 cores). CPU time within the run cannot exceed its wall time on every core.
#[test]
fn cpu_share_of_a_short_run_is_at_most_every_core_busy() {
    let (_srv, addr) = serve(&[]);
    let target = format!("udp://{addr}");
    let o = run(
        &["probe", &target, "-n", "1", "--format", "json", "-q"],
        LIMIT,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(u(&d, "/summary/received"), 1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let pct = f(&d, "/health/cpu_pct");
    assert!(
        (0.0..=cores * 100.0 + 1.0).contains(&pct),
        "cpu_pct {pct} on {cores} cores"
    );
}

#[test]
fn relay_mode_keeps_a_window_with_zero_loss() {
    let (_srv, addr) = serve(&[]);
    let target = format!("udp://{addr}");
    let o = run(
        &[
            "probe",
            &target,
            "--mode",
            "relay",
            "--warmup",
            "16",
            "--warmup-interval",
            "1ms",
            "-d",
            "1s",
            "--format",
            "json",
            "-q",
        ],
        LIMIT,
    );
    assert!(o.status.success());
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    assert_eq!(d["stopped_by"], "duration");
    assert_eq!(d["summary"]["open_loop"], false);
    assert!(
        d["summary"].get("rtt_corrected_ms").is_none(),
        "closed loop: no corrected latency"
    );
    assert!(u(&d, "/summary/sent") > 1000);
}

#[test]
fn token_gate_end_to_end() {
    let (_srv, addr) = serve(&["--token", "s3cret"]);
    let target = format!("udp://{addr}");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("refused.json");
    let o = run(
        &[
            "probe",
            &target,
            "-n",
            "20",
            "--pps",
            "200",
            "--loss-timeout",
            "200ms",
            "-q",
            "--json",
            f.to_str().unwrap(),
        ],
        LIMIT,
    );
    // Without the token nothing is answered: the server refused it all (its notices say why),
    // which is not path loss and has its own exit code.
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let d = json(&f);
    assert_eq!((u(&d, "/summary/received"), u(&d, "/summary/lost")), (0, 0));
    assert_eq!(u(&d, "/summary/refused_by_server"), 20);
    assert!(u(&d, "/summary/refusal_notices/token_required") > 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("pass --token"), "{text}");
    let o = run(
        &[
            "probe", &target, "-n", "20", "--pps", "200", "--token", "s3cret", "-q",
        ],
        LIMIT,
    );
    assert!(o.status.success());
}

#[test]
fn line_tester_xml_config_runs() {
    let (_srv, addr) = serve(&[]);
    let template =
        std::fs::read_to_string(repo_root().join("examples/ConfigTemplate.xml")).unwrap();
    let x = template
        .replace(r#"port="7777""#, &format!(r#"port="{}""#, addr.port()))
        .replace(r#"param="1000000""#, r#"param="2000""#)
        .replace(r#"warmupcount="50000""#, r#"warmupcount="64""#)
        .replace(r#"warmupinterval="10""#, r#"warmupinterval="1""#)
        .replace(
            r#"<log mode="count" param="100000" />"#,
            r#"<log mode="count" param="500" />"#,
        );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.xml");
    std::fs::write(&p, x).unwrap();
    let o = run(
        &["probe", "--config", p.to_str().unwrap(), "--format", "json"],
        LIMIT,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    assert_eq!(u(&d, "/summary/sent"), 2000);
    assert_eq!(d["summary"]["mode"], "relay");
    assert_eq!(d["summary"]["framing"], "raw");
    assert_eq!(
        d["intervals"].as_array().unwrap().len(),
        4,
        "a stage every 500 packets"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("threadsperclient=8"),
        "ignored settings are reported: {err}"
    );
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let cases: &[(&[&str], &str)] = &[
        (&["probe", "udp://127.0.0.1:7", "--size", "10"], "--size 10"),
        (&["probe", "udp://127.0.0.1:7", "--mode", "bogus"], "bogus"),
        (
            &["probe", "udp://127.0.0.1:7", "--no-such-flag"],
            "--no-such-flag",
        ),
        (
            &["probe", "udp://no-such-host.invalid:7"],
            "cannot resolve host",
        ),
        (&["probe", "quic://127.0.0.1:7"], "unsupported scheme"),
        (
            &["probe", "udp://127.0.0.1:7", "--duration", "soon"],
            "soon",
        ),
        (
            &["probe", "udp://127.0.0.1:7", "--interval", "5ms"],
            "--interval applies only to --mode interval",
        ),
        (&["probe"], "a target is required"),
        // The line tester's config given where the target goes: the flag it needs.
        (
            &["probe", "ConfigTemplate.xml"],
            "use npt probe --config ConfigTemplate.xml",
        ),
        (&["serve", "--listen", "nowhere"], "--listen"),
    ];
    for (args, needle) in cases {
        let o = run(args, LIMIT);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: {err:?} should mention {needle:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.xml");
    std::fs::write(
        &p,
        "<settings><general protocol=\"udp\" clientcount=\"1\"/></settings>",
    )
    .unwrap();
    let o = run(&["probe", "--config", p.to_str().unwrap()], LIMIT);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing element <target>"));
}

#[test]
fn demo_runs_with_no_arguments() {
    let o = run(&["demo", "--duration", "1s"], LIMIT);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("npt probe udp://"), "{text}");
    assert!(text.contains("first packet"), "{text}");
}

#[test]
fn several_clients_on_threads_split_the_load_and_merge_exactly() {
    let (srv, addr) = serve(&[]);
    let target = format!("udp://{addr}");
    let o = run(
        &[
            "probe",
            &target,
            "--clients",
            "5",
            "--threads",
            "2",
            "--pps",
            "2500",
            "-n",
            "2001",
            "--report-every-packets",
            "500",
            "--format",
            "json",
            "-q",
        ],
        LIMIT,
    );
    drop(srv);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    assert_eq!(
        u(&d, "/summary/sent"),
        2001,
        "the remainder goes to the first client"
    );
    assert_eq!(u(&d, "/summary/clients"), 5);
    assert_eq!(u(&d, "/summary/received") + u(&d, "/summary/lost"), 2001);
    let stages = d["intervals"].as_array().unwrap();
    let sent: u64 = stages.iter().map(|s| s["sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, 2001);
    // Each client closes a stage every 500/5 = 100 of its ~400 packets: 4 or 5 merged stages.
    assert!((4..=5).contains(&stages.len()), "{}", stages.len());
    // The merged RTT histogram holds every on-time reply of every client.
    let h = npt_stats::SerializedHistogram {
        encoding: d["histograms"]["rtt"]["encoding"].as_str().unwrap().into(),
        unit: "ns".into(),
        clamped: 0,
        data: d["histograms"]["rtt"]["data"].as_str().unwrap().into(),
    };
    let hist = npt_stats::Histogram::from_serialized(&h).unwrap();
    assert_eq!(hist.count(), u(&d, "/summary/received"));
}

/// Against a plain echo, with no flag, every echo is a reply: nothing lost, nothing foreign
/// (before: `lost 100 %`, `foreign` = sent), and the report names the far end.
#[test]
fn a_plain_udp_and_tcp_echo_are_measured_and_named() {
    for (proto, n) in [("udp", 500u64), ("tcp", 50)] {
        let Some((_echo, port)) = socat_echo(proto) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let target = format!("{proto}://127.0.0.1:{port}");
        let count = n.to_string();
        let o = run(
            &[
                "probe",
                &target,
                "--pps",
                "1000",
                "-n",
                &count,
                "--verify",
                "--json",
                out.to_str().unwrap(),
            ],
            LIMIT,
        );
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{proto}: {text}");
        let d = json(&out);
        assert_valid(&d, "probe");
        let s = &d["summary"];
        assert_eq!(
            (
                u(&d, "/summary/sent"),
                u(&d, "/summary/received"),
                u(&d, "/summary/lost"),
                u(&d, "/summary/foreign"),
                u(&d, "/summary/corrupt"),
            ),
            (n, n, 0, 0, 0),
            "{proto}: {text}"
        );
        assert_eq!(s["far_end"], "echo", "{proto}");
        assert_eq!(s["round_trip_only"], "echo", "{proto}");
        assert!(s["directions"].is_null(), "{proto}");
        assert_eq!(u(&d, "/errors/total_errors"), 0, "{proto}: {text}");
        assert!(
            text.contains(
                "far end    plain echo (returns bytes unchanged): round trips only, no \
                 per-direction figures"
            ),
            "{proto}: {text}"
        );
        assert!(!text.contains("older npt serve"), "{proto}: {text}");
    }
}
