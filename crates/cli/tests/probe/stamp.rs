//! STAMP (RFC 8762) against an implementation not written here: stamp-suite (crates.io,
//! installed by test.sh) as the Session-Sender measuring `npt serve --stamp`, and as the
//! Session-Reflector `npt probe stamp://` measures — unauthenticated and authenticated, stateful
//! and stateless — with every packet answered and RTTs that agree with `npt probe udp://` on
//! loopback. Also, over real sockets: the reflector answers exactly as many bytes as it got, is
//! held to serve's per-source budget, and ends loops with another reflector or an echo.
//! Without stamp-suite they fail as root (CI; ./test.sh installs it) and print SKIPPED otherwise.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_valid, f, json, run, u, Guard};
use npt_wire::stamp::time::unix_ns_to_ntp;
use npt_wire::stamp::{ErrorEstimate, Mode, ReflectedPacket, TestPacket};

const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// Tests that time RTTs run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `npt serve --stamp 127.0.0.1:0 EXTRA`: the server and its reflector's address.
fn serve_stamp(extra: &[&str]) -> (Guard, SocketAddr, SocketAddr) {
    let mut child = common::npt()
        .args(["serve", "--listen", "127.0.0.1:0", "--stamp", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("npt serve starts");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    let (mut udp, mut stamp) = (None, None);
    for line in BufReader::new(stdout).lines().take(8) {
        let line = line.expect("readable");
        let addr = |l: &str| l.split(" ").nth(5).and_then(|a| a.parse().ok());
        if line.contains("listening on tcp+udp") {
            udp = addr(&line);
        }
        if line.contains("listening on stamp") {
            stamp = addr(&line);
            break;
        }
    }
    (
        guard,
        udp.expect("udp address"),
        stamp.expect("stamp address"),
    )
}

/// A STAMP test packet of `mode` (unsealed), sequence `seq`.
fn test_packet(mode: Mode, seq: u32, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    TestPacket {
        seq,
        timestamp: unix_ns_to_ntp(now),
        error: ErrorEstimate::from_ns(1_000, false),
        ssid: 0,
    }
    .encode(mode, &mut b)
    .unwrap();
    b
}

/// Starts stamp-suite's reflector on a free loopback port and waits until it answers.
fn suite_reflector(bin: &Path, extra: &[&str]) -> (Guard, SocketAddr) {
    let port = npt_testkit::process::free_port();
    let child = Command::new(bin)
        .args(["-i", "-S", "127.0.0.1", "-o", &port.to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("stamp-suite starts");
    let guard = Guard(child);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    probe
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let authenticated = extra.contains(&"A");
    let mut pkt = test_packet(
        if authenticated {
            Mode::Authenticated
        } else {
            Mode::Open
        },
        0,
        if authenticated { 112 } else { 44 },
    );
    if authenticated {
        npt_wire::stamp::StampKey::from_hex(KEY)
            .unwrap()
            .seal(&mut pkt)
            .unwrap();
    }
    let start = Instant::now();
    let mut buf = [0u8; 256];
    while start.elapsed() < Duration::from_secs(20) {
        let _ = probe.send_to(&pkt, addr);
        if probe.recv(&mut buf).is_ok() {
            return (guard, addr);
        }
    }
    panic!("stamp-suite's reflector did not answer on {addr} within 20 s");
}

/// stamp-suite as the sender: `count` packets every `interval` to `to`; its JSON summary.
fn suite_sender(bin: &Path, to: SocketAddr, count: u32, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(bin)
        .args(["-r", &to.ip().to_string(), "-p", &to.port().to_string()])
        .args(["-c", &count.to_string(), "-d", "1ms", "-L", "1"])
        .args(["--output-format", "json"])
        .args(extra)
        .stderr(Stdio::null())
        .output()
        .expect("stamp-suite runs");
    assert!(out.status.success(), "stamp-suite sender failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text
        .lines()
        .rev()
        .find(|l| l.contains("\"summary\""))
        .unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `npt probe TARGET -n COUNT --pps 1000 EXTRA --json`: the result document, checked.
fn probe(dir: &Path, target: &str, count: u32, extra: &[&str]) -> serde_json::Value {
    let file = dir.join("probe.json");
    let n = count.to_string();
    let mut args = vec!["probe", target, "-n", &n, "--pps", "1000", "-q"];
    args.extend_from_slice(extra);
    args.extend(["--json", file.to_str().unwrap()]);
    let out = run(&args, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&file);
    assert_valid(&doc, "probe");
    doc
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn npt_probe_measures_stamp_suites_reflector_like_npt_serve() {
    let Some(bin) = common::stamp_suite(module_path!()) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (_refl, refl) = suite_reflector(&bin, &["--stateful-reflector"]);
    let (_serve, udp, _) = serve_stamp(&[]);
    let target = format!("stamp://{refl}");
    let udp_target = format!("udp://{udp}");
    let (mut stamp_p50, mut udp_p50) = (Vec::new(), Vec::new());
    // Alternated, seven times each: this box's load moves both alike.
    for _ in 0..7 {
        let d = probe(dir.path(), &target, 500, &[]);
        assert_eq!(d["summary"]["framing"], "stamp");
        assert_eq!(d["summary"]["protocol"], "udp");
        assert_eq!(
            u(&d, "/summary/received"),
            500,
            "every test packet answered"
        );
        assert_eq!(u(&d, "/summary/corrupt") + u(&d, "/summary/foreign"), 0);
        stamp_p50.push(f(&d, "/summary/rtt_ms/p50"));
        let d = probe(dir.path(), &udp_target, 500, &[]);
        assert_eq!(u(&d, "/summary/received"), 500);
        udp_p50.push(f(&d, "/summary/rtt_ms/p50"));
    }
    let (s, u_) = (median(stamp_p50.clone()), median(udp_p50.clone()));
    eprintln!("rtt p50 ms: stamp:// to stamp-suite {stamp_p50:?} (median {s}), udp:// to npt serve {udp_p50:?} (median {u_})");
    assert!((s - u_).abs() <= 0.1, "stamp {s} ms vs udp {u_} ms");
}

#[test]
fn stamp_suites_sender_measures_npt_serve_like_npt_probe_udp() {
    let Some(bin) = common::stamp_suite(module_path!()) else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (_serve, udp, stamp) = serve_stamp(&[]);
    let udp_target = format!("udp://{udp}");
    let (mut suite_p50, mut udp_p50) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let s = suite_sender(&bin, stamp, 500, &[]);
        assert_eq!(s["packets_sent"], 500);
        assert_eq!(s["packets_received"], 500, "{s}");
        // Our reflector is stateful: its own count followed every packet.
        assert_eq!(
            s["measurements"]["last_reflector_sequence"], 499,
            "{}",
            s["measurements"]
        );
        suite_p50.push(s["median_rtt_ms"].as_f64().unwrap());
        let d = probe(dir.path(), &udp_target, 500, &[]);
        udp_p50.push(f(&d, "/summary/rtt_ms/p50"));
    }
    let (s, u_) = (median(suite_p50.clone()), median(udp_p50.clone()));
    eprintln!("rtt p50 ms: stamp-suite to npt serve --stamp {suite_p50:?} (median {s}), udp:// to npt serve {udp_p50:?} (median {u_})");
    assert!((s - u_).abs() <= 0.1, "stamp-suite {s} ms vs udp {u_} ms");
}

#[test]
fn authenticated_mode_both_ways_and_a_wrong_key_gets_nothing() {
    let Some(bin) = common::stamp_suite(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // npt as the sender.
    let (_refl, refl) = suite_reflector(&bin, &["-A", "A", "--hmac-key", KEY]);
    let target = format!("stamp://{refl}");
    let d = probe(dir.path(), &target, 200, &["--stamp-key", KEY]);
    assert_eq!(u(&d, "/summary/received"), 200);
    assert_eq!(u(&d, "/summary/size"), 112);
    let wrong = KEY.replace("00", "ff");
    let out = run(
        &[
            "probe",
            &target,
            "-n",
            "5",
            "-q",
            "--loss-timeout",
            "200ms",
            "--stamp-key",
            &wrong,
        ],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(1), "no answer to a wrong key");
    // npt as the reflector.
    let (serve, _, stamp) = serve_stamp(&["--stamp-key", KEY]);
    let s = suite_sender(&bin, stamp, 200, &["-A", "A", "--hmac-key", KEY]);
    assert_eq!(s["packets_received"], 200, "{s}");
    let s = suite_sender(&bin, stamp, 20, &[]);
    assert_eq!(
        s["packets_received"], 0,
        "unauthenticated packets are refused"
    );
    drop(serve);
}

#[test]
fn a_stateless_reflector_is_measured_too() {
    let Some(bin) = common::stamp_suite(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_refl, refl) = suite_reflector(&bin, &[]);
    let d = probe(
        dir.path(),
        &format!("stamp://{refl}"),
        300,
        &["--size", "200"],
    );
    assert_eq!(u(&d, "/summary/received"), 300);
    let (_serve, _, stamp) = serve_stamp(&["--stamp-stateless"]);
    let s = suite_sender(&bin, stamp, 100, &[]);
    assert_eq!(s["packets_received"], 100, "{s}");
}

/// Sends `n` test packets of `len` bytes from `sock` to `to` as fast as it can; then collects
/// the answers for a moment: (answers, bytes answered).
fn burst(sock: &UdpSocket, to: SocketAddr, n: u32, len: usize) -> (u64, u64) {
    for i in 0..n {
        let _ = sock.send_to(&test_packet(Mode::Open, i, len), to);
    }
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let (mut got, mut bytes) = (0, 0);
    let mut buf = [0u8; 2048];
    while let Ok(k) = sock.recv(&mut buf) {
        assert_eq!(k, len, "an answer is exactly as long as its request");
        got += 1;
        bytes += k as u64;
    }
    (got, bytes)
}

#[test]
fn the_reflector_is_held_to_serves_budget_and_never_answers_more_than_it_got() {
    let (mut serve, _, stamp) = serve_stamp(&["--limit-local"]);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    // 1,000 packets at once from one source: the safe budget holds 200 a second.
    let (got, bytes) = burst(&sock, stamp, 1000, 60);
    assert!((150..=260).contains(&got), "answered {got} of 1000");
    assert!(bytes <= 1000 * 60);
    // Short packets are refused outright (an answer could not hold the reflector's fields).
    let _ = sock.send_to(&[0u8; 43], stamp);
    let mut stderr = serve.0.stderr.take().unwrap();
    // SAFETY: SIGINT to our own child: it stops and prints its summary.
    unsafe {
        libc::kill(serve.0.id() as i32, libc::SIGINT);
    }
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    let summary = err.lines().last().unwrap_or_default();
    assert!(
        summary.contains(&format!("stamp rx-pkts 1001 tx-pkts {got}")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("stamp refused: rate {} short 1", 1000 - got)),
        "{summary}"
    );
}

#[test]
fn loops_with_another_reflector_or_an_echo_end_at_once() {
    let (_serve, _, stamp) = serve_stamp(&[]);
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 256];
    // The peer plays a reflector with no loop check: a forged test packet "from" it starts it.
    peer.send_to(&test_packet(Mode::Open, 1, 44), stamp)
        .unwrap();
    let mut answers = 0;
    while let Ok(n) = peer.recv(&mut buf) {
        answers += 1;
        assert!(answers < 10, "the loop goes on");
        let req = TestPacket::decode(Mode::Open, &buf[..n]).unwrap();
        let mut reply = buf[..n].to_vec();
        ReflectedPacket {
            seq: req.seq,
            timestamp: req.timestamp,
            sender_seq: req.seq,
            sender_timestamp: req.timestamp,
            ..ReflectedPacket::default()
        }
        .encode(Mode::Open, &mut reply)
        .unwrap();
        peer.send_to(&reply, stamp).unwrap();
    }
    assert_eq!(answers, 1, "one answer, then the loop is seen");
    // An echo service: it returns whatever it gets.
    let mut first = test_packet(Mode::Open, 2, 44);
    first[4..12].copy_from_slice(&0x0123_4567_89AB_CDEFu64.to_be_bytes());
    peer.send_to(&first, stamp).unwrap();
    let mut answers = 0;
    while let Ok(n) = peer.recv(&mut buf) {
        answers += 1;
        assert!(answers < 10, "the loop goes on");
        peer.send_to(&buf[..n], stamp).unwrap();
    }
    assert_eq!(answers, 2, "two answers, then the loop is seen");
}

/// `npt ARGS`, which must succeed; its stdout.
fn ok(args: &[&str]) -> String {
    let out = run(args, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn stamp_results_render_compare_and_merge_as_udp_ones_do() {
    let (_serve, udp, stamp) = serve_stamp(&[]);
    let dir = tempfile::tempdir().unwrap();
    let target = format!("stamp://{stamp}");
    // Two agents, each half of one run, at once; merged exactly.
    let args: Vec<String> = ["probe", &target, "-n", "400", "--pps", "1000"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    common::agents(&args, 2, dir.path());
    let files: Vec<String> = (0..2)
        .map(|k| {
            dir.path()
                .join(format!("part{k}.json"))
                .display()
                .to_string()
        })
        .collect();
    let all = dir.path().join("all.json");
    ok(&[
        "merge",
        &files[0],
        &files[1],
        "--json",
        all.to_str().unwrap(),
    ]);
    let m = json(&all);
    assert_valid(&m, "probe");
    assert_eq!(u(&m, "/summary/sent"), 400);
    assert_eq!(u(&m, "/summary/received"), 400);
    assert_eq!(m["summary"]["framing"], "stamp");
    assert_eq!(
        u(&m, "/summary/rtt_ms/count"),
        400,
        "every sample in the merge"
    );
    // Rendered again, in every format.
    let text = ok(&["report", all.to_str().unwrap()]);
    assert!(
        text.starts_with(&format!("npt probe stamp://{stamp}")),
        "{text}"
    );
    for format in ["json", "csv", "md", "html"] {
        ok(&["report", all.to_str().unwrap(), "--format", format]);
    }
    // Beside a UDP probe of the same server.
    let d = probe(dir.path(), &format!("udp://{udp}"), 200, &[]);
    let udp_file = dir.path().join("udp.json");
    std::fs::write(&udp_file, serde_json::to_string(&d).unwrap()).unwrap();
    let table = ok(&["compare", all.to_str().unwrap(), udp_file.to_str().unwrap()]);
    assert!(table.lines().count() >= 3, "{table}");
}

#[test]
fn bad_stamp_flags_exit_2_naming_the_flag() {
    for (args, want) in [
        (vec!["serve", "--stamp", "nowhere"], "--stamp \"nowhere\""),
        (vec!["serve", "--stamp-stateless"], "--stamp"),
        (
            vec!["serve", "--stamp", "127.0.0.1:0", "--stamp-key", "abc"],
            "--stamp-key: not hexadecimal",
        ),
        (
            vec!["probe", "stamp://127.0.0.1:862", "--size", "47"],
            "--size 47",
        ),
        (vec!["probe", "ftp://127.0.0.1:862"], "stamp://"),
    ] {
        let out = run(&args, Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
