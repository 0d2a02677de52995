//! Why this exists: `npt probe` and `npt serve` end to end, as a user runs them — real binary,
//! real loopback sockets on port 0, result documents validated against the checked-in schema,
//! and the faults the issue names (dead target, Ctrl-C, wrong token, bad input, a misbehaving
//! echo server with exact expected counts).

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

mod common;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// A UDP echo server that misbehaves by sequence number (framed packets): drops seq%10==3,
/// duplicates seq%10==5, swaps seq%10==8 with the packet after it, and answers seq 7 and 17
/// only after `late_by`.
fn misbehaving_udp(
    late_by: Duration,
    stop: Arc<AtomicBool>,
) -> (std::thread::JoinHandle<()>, std::net::SocketAddr) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    let h = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut held: Option<(Vec<u8>, std::net::SocketAddr)> = None;
        let mut delayed: BinaryHeap<Reverse<(Instant, Vec<u8>, std::net::SocketAddr)>> =
            BinaryHeap::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            while matches!(delayed.peek(), Some(Reverse((t, _, _))) if *t <= Instant::now()) {
                let Reverse((_, b, to)) = delayed.pop().unwrap();
                sock.send_to(&b, to).unwrap();
            }
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            let mut pkt = buf[..n].to_vec();
            pkt[5] = 2; // EchoReply
            let seq = u64::from_be_bytes(pkt[24..32].try_into().unwrap());
            if seq == 7 || seq == 17 {
                delayed.push(Reverse((Instant::now() + late_by, pkt, from)));
                continue;
            }
            match seq % 10 {
                3 => continue,
                5 => {
                    sock.send_to(&pkt, from).unwrap();
                    sock.send_to(&pkt, from).unwrap();
                }
                8 => held = Some((pkt, from)),
                _ => {
                    sock.send_to(&pkt, from).unwrap();
                    if let Some((h, to)) = held.take() {
                        sock.send_to(&h, to).unwrap();
                    }
                }
            }
        }
    });
    (h, addr)
}

#[test]
fn misbehaving_echo_exact_counts() {
    let stop = Arc::new(AtomicBool::new(false));
    let (h, addr) = misbehaving_udp(Duration::from_millis(400), stop.clone());
    let target = format!("udp://{addr}");
    let o = run(
        &[
            "probe",
            &target,
            "--mode",
            "interval",
            "--interval",
            "2ms",
            "-n",
            "300",
            "--loss-timeout",
            "200ms",
            "--format",
            "json",
            "-q",
        ],
        LIMIT,
    );
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    let s = &d["summary"];
    let got = |k: &str| s[k].as_u64().unwrap();
    assert_eq!(got("sent"), 300);
    // 30 dropped (seq%10==3) + 2 answered after the loss timeout (7, 17).
    assert_eq!(got("lost"), 32, "{s}");
    assert_eq!(got("received"), 268);
    assert_eq!(got("late"), 2, "{s}");
    assert_eq!(got("duplicated"), 30, "{s}");
    // 30 swapped pairs + the two late ones, which arrive after higher sequence numbers.
    assert_eq!(got("reordered"), 32, "{s}");
    assert!((f(&d, "/summary/loss_pct") - 32.0 / 3.0).abs() < 1e-9);
    for iv in d["intervals"].as_array().unwrap() {
        assert!(
            iv["lost"].as_u64().unwrap() <= iv["sent"].as_u64().unwrap(),
            "stage loss never negative or over 100%"
        );
    }
}

#[test]
fn raw_mode_against_a_plain_echo_server() {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let h = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let deadline = Instant::now() + Duration::from_secs(60);
        while !st.load(Ordering::Relaxed) && Instant::now() < deadline {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                sock.send_to(&buf[..n], from).unwrap();
            }
        }
    });
    let target = format!("udp://{addr}");
    let o = run(
        &[
            "probe", &target, "--raw", "--size", "32", "--pps", "500", "-n", "200", "--verify",
            "--format", "json", "-q",
        ],
        LIMIT,
    );
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert!(o.status.success());
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    assert_eq!(d["summary"]["framing"], "raw");
    assert_eq!(u(&d, "/summary/received"), 200);
    assert_eq!(u(&d, "/summary/corrupt"), 0);
}

#[test]
fn tcp_server_that_hangs_up_is_a_classified_error_and_the_probe_reconnects() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        // First connection: echo 10 frames, then hang up mid-run.
        // Second connection: echo until the client closes.
        for limit in [10usize, usize::MAX] {
            let (mut c, _) = l.accept().unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut buf = [0u8; 64];
            let mut n = 0;
            while n < limit && c.read_exact(&mut buf).is_ok() {
                buf[5] = 2;
                if c.write_all(&buf).is_err() {
                    break;
                }
                n += 1;
            }
        }
    });
    let target = format!("tcp://{addr}");
    let t0 = Instant::now();
    let o = run(
        &[
            "probe",
            &target,
            "--pps",
            "200",
            "-d",
            "3s",
            "--loss-timeout",
            "300ms",
            "--format",
            "json",
            "-q",
        ],
        LIMIT,
    );
    h.join().unwrap();
    assert!(
        t0.elapsed() >= Duration::from_secs(3),
        "finishes on time, not early"
    );
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    assert_eq!(d["stopped_by"], "duration");
    let (sent, recv, lost) = (
        u(&d, "/summary/sent"),
        u(&d, "/summary/received"),
        u(&d, "/summary/lost"),
    );
    assert_eq!(sent, recv + lost);
    assert!(recv > 100, "reconnected and kept measuring: {recv}");
    assert!(lost >= 1, "what was in flight on the broken stream is lost");
    let kinds = d["errors"]["by_kind"].as_object().unwrap();
    assert!(
        kinds.contains_key("closed") || kinds.contains_key("reset"),
        "{kinds:?}"
    );
}

#[test]
fn dead_target_finishes_on_time_with_a_report() {
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dead.json");
    let target = format!("udp://127.0.0.1:{port}");
    let t0 = Instant::now();
    let o = run(
        &[
            "probe",
            &target,
            "--pps",
            "100",
            "-d",
            "1s",
            "--loss-timeout",
            "300ms",
            "-q",
            "--json",
            out.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(1), "nothing answered is a failed run");
    let d = json(&out);
    assert_valid(&d, "probe");
    assert_eq!(u(&d, "/summary/received"), 0);
    assert_eq!(u(&d, "/summary/lost"), u(&d, "/summary/sent"));
    assert!(u(&d, "/summary/sent") >= 90);
    assert!(u(&d, "/errors/by_kind/refused/count") >= 1);

    // TCP: connection refused, retried until the time limit, classified, report written.
    let target = format!("tcp://127.0.0.1:{port}");
    let o = run(
        &["probe", &target, "-d", "1500ms", "--format", "json", "-q"],
        LIMIT,
    );
    assert_eq!(o.status.code(), Some(1));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    assert!(
        u(&d, "/errors/by_kind/refused/count") >= 2,
        "retried: {}",
        d["errors"]
    );
}

#[test]
fn ctrl_c_still_writes_the_full_report() {
    let (_srv, addr) = serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("int.json");
    let mut child = npt()
        .args([
            "probe",
            &format!("udp://{addr}"),
            "--pps",
            "1000",
            "--report-every",
            "100ms",
            "--json",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead;
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("[stage"), "{line}");
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "probe did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{rest}");
    let d = json(&out);
    assert_valid(&d, "probe");
    assert_eq!(d["stopped_by"], "signal");
    assert!(u(&d, "/summary/sent") > 0);
    assert_eq!(
        u(&d, "/summary/sent"),
        u(&d, "/summary/received") + u(&d, "/summary/lost")
    );
    assert!(rest.contains("stopped by signal"), "{rest}");
}

#[test]
fn token_gate_end_to_end() {
    let (_srv, addr) = serve(&["--token", "s3cret"]);
    let target = format!("udp://{addr}");
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
        ],
        LIMIT,
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "without the token nothing is answered"
    );
    let o = run(
        &[
            "probe", &target, "-n", "20", "--pps", "200", "--token", "s3cret", "-q",
        ],
        LIMIT,
    );
    assert!(o.status.success());
}

#[test]
fn seed_xml_config_runs() {
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
