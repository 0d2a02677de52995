//! The flags every test takes, end to end on loopback: `--bind ADDR` is the source address the
//! far end sees (UDP and TCP), a bad `--dscp`/`--tos`/`--bind`/`-4`/`-6` is exit 2 naming the
//! flag in every subcommand before anything is sent, an engine that cannot honour one says so
//! (exit 2) instead of ignoring it, and `--format json` / `--json -` put the document on
//! stdout in every subcommand alike.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::run;

const LIMIT: Duration = Duration::from_secs(30);

fn source_ip() -> IpAddr {
    "127.0.0.2".parse().unwrap()
}

/// A raw UDP echo that records every datagram's source address; it ends with the test.
fn udp_echo() -> (SocketAddr, Arc<Mutex<Vec<SocketAddr>>>) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let addr = s.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        // Bounded: at most 30 s of 200 ms waits, or until the test's process ends.
        for _ in 0..150 {
            if let Ok((n, from)) = s.recv_from(&mut buf) {
                log.lock().unwrap().push(from);
                let _ = s.send_to(&buf[..n], from);
            }
        }
    });
    (addr, seen)
}

#[test]
fn bind_is_the_source_the_far_end_sees_over_udp_and_tcp() {
    let (addr, seen) = udp_echo();
    let target = format!("udp://{addr}");
    let out = run(
        &[
            "probe",
            &target,
            "--raw",
            "-n",
            "5",
            "--pps",
            "50",
            "--bind",
            "127.0.0.2",
            "--dscp",
            "46",
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["received"], 5, "{doc}");
    assert_eq!(doc["summary"]["marking"]["sent"]["dscp"], 46, "{doc}");
    assert_eq!(doc["config"]["source"]["bind"], "127.0.0.2");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 5, "{seen:?}");
    assert!(seen.iter().all(|a| a.ip() == source_ip()), "{seen:?}");

    // TCP: ping's connects, and the probe's connection.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let peers = std::thread::spawn(move || {
        let mut peers = Vec::new();
        for _ in 0..2 {
            let (_s, from) = l.accept().unwrap();
            peers.push(from);
        }
        peers
    });
    let target = format!("tcp://127.0.0.1:{port}");
    let out = run(
        &[
            "ping",
            &target,
            "-c",
            "2",
            "-i",
            "50ms",
            "--bind",
            "127.0.0.2",
            "-q",
        ],
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let peers = peers.join().unwrap();
    assert!(peers.iter().all(|a| a.ip() == source_ip()), "{peers:?}");
}

#[test]
fn a_tcp_probe_connects_from_its_bind_address() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        let (mut s, from) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 4096];
        // A plain echo (the probe runs --raw) until the probe closes.
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 || s.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        from
    });
    let target = format!("tcp://{addr}");
    let out = run(
        &[
            "probe",
            &target,
            "--raw",
            "-n",
            "3",
            "--pps",
            "50",
            "--bind",
            "127.0.0.2",
            "-q",
        ],
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(peer.join().unwrap().ip(), source_ip());
}

/// (args, what stderr must contain): every one exit 2 before any traffic.
#[test]
fn bad_source_flags_exit_2_naming_the_flag_in_every_subcommand() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["probe", "udp://127.0.0.1:9", "--dscp", "64"],
            "--dscp 64: must be 0 to 63",
        ),
        (&["probe", "udp://127.0.0.1:9", "--tos", "300"], "--tos 300"),
        (
            &["probe", "udp://127.0.0.1:9", "--bind", "192.0.2.1"],
            "--bind 192.0.2.1: not an address of this host",
        ),
        (
            &["probe", "udp://[::1]:9", "-4"],
            "-4: ::1 is an IPv6 address",
        ),
        (
            &["probe", "udp://127.0.0.1:9", "-6"],
            "-6: 127.0.0.1 is an IPv4 address",
        ),
        (
            &["probe", "udp://127.0.0.1:9", "-4", "--bind", "::1"],
            "--bind ::1: an IPv6 address, but -4",
        ),
        (&["ping", "udp://127.0.0.1:9", "--dscp", "64"], "--dscp 64"),
        (&["ping", "tcp://[::1]:9", "-4"], "-4: ::1"),
        (
            &["bulk", "tcp://127.0.0.1:9", "--dscp", "AF44"],
            "--dscp AF44",
        ),
        (
            &[
                "bulk",
                "udp://127.0.0.1:9",
                "--rate",
                "1mbit",
                "--bind",
                "192.0.2.1",
            ],
            "--bind 192.0.2.1",
        ),
        (
            &[
                "trace",
                "tcp://127.0.0.1:9",
                "--hop",
                "npt://127.0.0.1:1",
                "--token",
                "s",
                "--dscp",
                "64",
            ],
            "--dscp 64",
        ),
        (
            &["run", "tcp://127.0.0.1:9", "--bind", "192.0.2.1"],
            "--bind 192.0.2.1",
        ),
        (
            &["http", "http://127.0.0.1:9/", "--dscp", "99"],
            "--dscp 99",
        ),
        (&["http", "http://[::1]:9/", "-4"], "-4: ::1"),
        // What an engine cannot honour is refused by name, not ignored.
        (
            &["ping", "quic://127.0.0.1:9", "--insecure", "--dscp", "46"],
            "--dscp: npt ping with QUIC cannot honour it",
        ),
        (
            &[
                "bulk",
                "quic://127.0.0.1:9",
                "--insecure",
                "--bind",
                "127.0.0.1",
            ],
            "--bind: npt bulk with QUIC cannot honour it",
        ),
        (
            &[
                "probe",
                "udp://127.0.0.1:9",
                "--via",
                "socks5://127.0.0.1:1",
                "--dscp",
                "46",
            ],
            "--dscp: npt probe --via cannot honour it",
        ),
        (
            &[
                "ping",
                "udp://127.0.0.1:9",
                "--from",
                "npt://127.0.0.1:1",
                "--token",
                "s",
                "-4",
            ],
            "-4: npt ping --from cannot honour it",
        ),
    ];
    for (args, want) in cases {
        let out = run(args, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
    }
    // -4 and -6 together: clap's conflict, exit 2 naming both.
    let out = run(&["ping", "tcp://127.0.0.1:9", "-4", "-6"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ipv6"));
}

/// One output group: `--format json` and `--json -` put the document on stdout in ping (whose
/// `--json` took `-` before) as in http (whose did not), and a bad `--json` path is exit 2.
#[test]
fn the_output_group_means_the_same_everywhere() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().take(4) {
            drop(s);
        }
    });
    let target = format!("tcp://127.0.0.1:{port}");
    for flags in [["--format", "json"], ["--json", "-"]] {
        let mut args = vec!["ping", &target, "-c", "1"];
        args.extend(flags);
        let out = run(&args, LIMIT);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{flags:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(doc["kind"], "ping");
    }
    for sub in [
        vec!["http", "http://127.0.0.1:9/", "-d", "1s"],
        vec!["ping", "tcp://127.0.0.1:9"],
        vec![
            "trace",
            "tcp://127.0.0.1:9",
            "--hop",
            "npt://127.0.0.1:1",
            "--token",
            "s",
        ],
    ] {
        let mut args = sub.clone();
        args.extend(["--json", "/nonexistent/x.json"]);
        let out = run(&args, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sub:?}: {err}");
        assert!(err.contains("--json /nonexistent/x.json"), "{sub:?}: {err}");
    }
}
