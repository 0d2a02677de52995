//! Why this exists: UDP down (`npt bulk udp://… --direction down`) is the one answer of
//! `npt serve` larger than the datagram that asked for it, so it must never reach a stranger: a
//! forged source would turn the server into an amplifier. Here the server treats this host as
//! a stranger (`--limit-local`), and a hostile client floods it with pulls asking for the
//! largest bursts: it gets back no data, fewer bytes than it sent, and every pull is counted
//! as a refusal; `npt bulk` as that stranger fails with a classified error naming `--token`;
//! with `--token` the same host gets the rate it asked for.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation)] // small test values

use crate::common;
use crate::serve_util;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use common::{f, json, run};
use npt_wire::bulk::{self, BulkSpec, Direction};
use npt_wire::frame::{Header, Kind};
use serve_util::{logged, serve, until};

/// A pull for `k` datagrams of `size` bytes, sequence number `seq`.
fn pull(seq: u64, k: u32, size: u32) -> Vec<u8> {
    let mut b = vec![0u8; bulk::REQUEST_LEN];
    let spec = BulkSpec {
        direction: Direction::Down,
        size,
        rate_bps: 10_000_000_000,
        duration_ns: 3_600_000_000_000,
    };
    bulk::encode_request(&mut b, 9, 0, 1, &spec).unwrap();
    let mut h = Header::decode(&b).unwrap();
    h.seq = seq;
    h.reply_len = k * size;
    h.encode(&mut b).unwrap();
    b
}

#[test]
fn a_stranger_cannot_amplify_with_udp_down_and_a_token_holder_can_use_it() {
    let _turn = common::turn(module_path!());
    let s = serve(1024, &["--limit-local", "--token", "k3y"]);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(s.tcp).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    // Pulls without a session (the server has --token): refused as unauthenticated.
    // Then a server without --token that treats this host as a stranger.
    let open = serve(1024, &["--limit-local"]);
    let sock2 = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock2.connect(open.tcp).unwrap();
    sock2
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let (mut sent, mut got, mut data) = (0usize, 0usize, 0usize);
    let mut buf = [0u8; 65_536];
    let pulls = 2_000u64;
    for seq in 0..pulls {
        for (sk, k) in [(&sock, 64), (&sock2, 64)] {
            let p = pull(seq, k, 60_000);
            sent += sk.send(&p).unwrap_or(0);
        }
        // Drain whatever came back (bounded by the read timeout only when idle).
        for sk in [&sock, &sock2] {
            sk.set_nonblocking(true).unwrap();
            while let Ok(n) = sk.recv(&mut buf) {
                got += n;
                if Header::decode(&buf[..n]).is_ok_and(|h| h.kind == Kind::BulkData) {
                    data += 1;
                }
            }
            sk.set_nonblocking(false).unwrap();
        }
    }
    let end = Instant::now() + Duration::from_millis(500);
    while Instant::now() < end {
        for sk in [&sock, &sock2] {
            if let Ok(n) = sk.recv(&mut buf) {
                got += n;
                if Header::decode(&buf[..n]).is_ok_and(|h| h.kind == Kind::BulkData) {
                    data += 1;
                }
            }
        }
    }
    assert_eq!(data, 0, "no UDP down datagram reached a stranger");
    assert!(
        got <= sent / 2,
        "answers ({got} B) no larger than the pulls ({sent} B)"
    );
    // Every pull of the open server's stranger is counted: refused as bulk, or by its limits.
    assert!(
        until(Duration::from_secs(5), || {
            let e = open.stderr();
            logged(&e, "udp refused:", "bulk") + logged(&e, "udp refused:", "rate") >= pulls
        })
        .is_some(),
        "{}",
        open.stderr()
    );
    // The token server refused the unsealed pulls as carrying no proof (or, past a stranger's
    // limits, before looking).
    assert!(
        until(Duration::from_secs(5), || {
            let e = s.stderr();
            logged(&e, "udp refused:", "token") + logged(&e, "udp refused:", "rate") >= pulls
        })
        .is_some(),
        "{}",
        s.stderr()
    );

    // npt bulk as the stranger: a classified error that says what to do.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let target = format!("udp://{}", open.tcp);
    let o = run(
        &[
            "bulk",
            &target,
            "--direction",
            "down",
            "--rate",
            "10mbit",
            "-t",
            "1s",
            "--json",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(
        doc["errors"]["by_kind"]["refused"]["count"], 1,
        "{}",
        doc["errors"]
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("--token"), "{text}");

    // With the token the same host gets UDP down at the rate it asked for.
    let out = dir.path().join("t.json");
    let target = format!("udp://{}", s.tcp);
    let o = run(
        &[
            "bulk",
            &target,
            "--direction",
            "down",
            "--rate",
            "20mbit",
            "-t",
            "2s",
            "--token",
            "k3y",
            "--json",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = json(&out);
    common::assert_valid(&doc, "bulk");
    let delivered = f(&doc, "/summary/udp/delivered_bps");
    assert!((19e6..21e6).contains(&delivered), "{delivered}");
    assert_eq!(doc["summary"]["direction"], "down");
}
