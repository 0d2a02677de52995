//! Why this exists: `npt probe` against peers that fail — a UDP echo that drops, duplicates,
//! reorders and delays by sequence number (exact expected counts), a plain echo without npt's
//! framing, a TCP server that hangs up, a dead target, and Ctrl-C — each a classified result
//! and a full report, never a panic or a lost document.

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

use crate::common;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

const LIMIT: Duration = Duration::from_secs(60);

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

    // TCP: connection refused ends the probe at the first refusal (nothing listens there),
    // not at the time limit; classified, report written.
    let target = format!("tcp://127.0.0.1:{port}");
    let o = run(
        &["probe", &target, "-d", "1500ms", "--format", "json", "-q"],
        LIMIT,
    );
    assert_eq!(o.status.code(), Some(1));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&d, "probe");
    assert_eq!(
        u(&d, "/errors/by_kind/refused/count"),
        1,
        "not retried: {}",
        d["errors"]
    );
    assert_eq!(d["stopped_by"], "error");
    assert!(
        d["duration_s"].as_f64().unwrap() < 1.0,
        "{}",
        d["duration_s"]
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
