//! Why this exists: a refusal notice is the one answer `npt serve` sends for a datagram it
//! *refused*, so it must not turn the server into a reflector. Here a server that treats
//! loopback as a stranger (`--limit-local`) is flooded with frames asking for `REFLECT` from a
//! forged victim, from a thousand forged sources and from a real socket, while a raw socket taps
//! every datagram the server sends (a GSO run split at each frame's length): per source, bytes
//! out never exceed bytes in, notices stay within their per-source and total rates, and the
//! server's own count matches the tap's. Then a flood of new flow ids: the flow table stops at
//! its bound (replies without counts beyond it), memory stops growing, and the exit summary
//! says so.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // bounds from elapsed seconds

use crate::common;
use crate::serve_util;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use npt_testkit::raw::{is_root, Forger, UdpTap};
use npt_wire::frame::{Header, Kind, HEADER_LEN};
use npt_wire::reflect::{self, REFLECT, REFLECTED};
use serve_util::{exit_summary, logged, rss_kib, serve, until};

/// A `REFLECT` echo of `len` bytes.
fn echo(len: usize, flow: u32, seq: u64) -> Vec<u8> {
    let mut b = vec![0x33; len];
    Header {
        kind: Kind::Echo,
        flags: REFLECT,
        frame_len: u32::try_from(len).unwrap(),
        reply_len: 0,
        flow,
        status: 0,
        seq,
        send_ts: 1,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    b
}

/// What the tap saw the server send to one destination.
#[derive(Default, Debug, Clone, Copy)]
struct Out {
    bytes: u64,
    notices: u64,
}

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => panic!("bound to 127.0.0.1"),
    }
}

/// Taps everything `server` sends, per destination, until `stop`.
fn tap(
    server: SocketAddrV4,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<HashMap<SocketAddrV4, Out>> {
    let tap = UdpTap::new();
    std::thread::spawn(move || {
        let mut out: HashMap<SocketAddrV4, Out> = HashMap::new();
        let t0 = Instant::now();
        while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
            let Some(p) = tap.next(Duration::from_millis(50)) else {
                continue;
            };
            if p.src != server {
                continue;
            }
            let o = out.entry(p.dst).or_default();
            o.bytes += p.payload.len() as u64;
            // A run of equal-size answers to one destination leaves as one GSO message, and
            // on loopback the tap sees it unsegmented: count every frame in it, each at its
            // own length (the receiving socket gets them as separate datagrams).
            let mut rest = &p.payload[..];
            while let Ok(h) = Header::decode(rest) {
                if reflect::read_notice(&h).is_some() {
                    o.notices += 1;
                }
                let n = h.frame_len as usize;
                if n == 0 || n >= rest.len() {
                    break;
                }
                rest = &rest[n..];
            }
        }
        out
    })
}

#[test]
fn refusal_notices_cannot_amplify_and_are_rate_limited() {
    let _turn = common::turn(module_path!());
    if !is_root() {
        eprintln!("SKIPPED: forging sources and tapping replies needs raw sockets (root)");
        return;
    }
    // The safe limits, and a total of 2,000 packets a second so the forged sources hit it.
    let s = serve(4096, &["--limit-local", "--total-pps", "2000"]);
    let server = v4(s.tcp);
    let stop = Arc::new(AtomicBool::new(false));
    let tapped = tap(server, stop.clone());
    let sent_in: Arc<Mutex<HashMap<SocketAddrV4, u64>>> = Arc::default();
    let t0 = Instant::now();

    // A real client: 2,000 frames at 1,000 a second (five times its budget), reading answers.
    let real = UdpSocket::bind("127.0.0.1:0").unwrap();
    real.connect(s.tcp).unwrap();
    real.set_nonblocking(true).unwrap();
    let real_addr = v4(real.local_addr().unwrap());
    let client = {
        let sent_in = sent_in.clone();
        std::thread::spawn(move || {
            let (mut got, mut notices) = (0u64, 0u64);
            let mut buf = [0u8; 2048];
            let start = Instant::now();
            for seq in 0..2000u64 {
                let due = start + Duration::from_millis(seq);
                while Instant::now() < due {
                    std::thread::sleep(Duration::from_micros(200));
                }
                let f = echo(64, 1, seq);
                real.send(&f).unwrap();
                *sent_in.lock().unwrap().entry(real_addr).or_default() += 64;
                while let Ok(n) = real.recv(&mut buf) {
                    got += n as u64;
                    notices += u64::from(n == HEADER_LEN);
                }
            }
            real.set_nonblocking(false).unwrap();
            real.set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            while let Ok(n) = real.recv(&mut buf) {
                got += n as u64;
                notices += u64::from(n == HEADER_LEN);
            }
            (got, notices)
        })
    };

    // A forged victim: 5,000 frames of 48 bytes (the smallest a notice answers) in a second.
    let forger = Forger::new();
    let victim = SocketAddrV4::new(Ipv4Addr::new(127, 0, 3, 1), 4000);
    for seq in 0..5000u64 {
        forger.send(victim, server, &echo(48, 2, seq));
        if seq % 5 == 4 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    sent_in.lock().unwrap().insert(victim, 5000 * 48);
    // A thousand forged sources, 20 frames each, 20,000 in about a second: ten times the total,
    // and notices wanted by many more sources than the total lets through.
    let mut many = Vec::new();
    for a in 1..=250u8 {
        for port in 5000..5004u16 {
            many.push(SocketAddrV4::new(Ipv4Addr::new(127, 0, 9, a), port));
        }
    }
    for round in 0..20u64 {
        for (i, src) in many.iter().enumerate() {
            forger.send(*src, server, &echo(60, 3, round));
            if i % 20 == 19 {
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    }
    {
        let mut m = sent_in.lock().unwrap();
        for src in &many {
            m.insert(*src, 20 * 60);
        }
    }
    let (real_got, real_notices) = client.join().unwrap();
    // Wait for the server to have counted every datagram, then for its log line.
    let total_sent = 2000 + 5000 + 20_000;
    assert!(
        until(Duration::from_secs(10), || {
            let e = s.stderr();
            logged(&e, "udp refused:", "rate") > 0 && logged(&e, "udp refused:", "notices") > 0
        })
        .is_some(),
        "{}",
        s.stderr()
    );
    std::thread::sleep(Duration::from_millis(700));
    let elapsed = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let out = tapped.join().unwrap();
    let sent_in = sent_in.lock().unwrap();

    // Per source: bytes out never above bytes in; notices within the per-source rate.
    let per_source_max = (5.0 + 5.0 * elapsed).ceil() as u64;
    let mut notices_seen = 0;
    for (dst, o) in &out {
        let inb = sent_in.get(dst).copied().unwrap_or(0);
        assert!(o.bytes <= inb, "{dst}: {} bytes out for {inb} in", o.bytes);
        assert!(
            o.notices <= per_source_max,
            "{dst}: {} notices in {elapsed:.1} s",
            o.notices
        );
        notices_seen += o.notices;
    }
    let v = out.get(&victim).copied().unwrap_or_default();
    assert!(v.notices >= 1, "the flooded victim got notices: {v:?}");
    // Echoes within its budget (200 a second, burst 200) and the notices, nothing more.
    let budget = (200.0 + 200.0 * elapsed) as u64;
    assert!(
        v.bytes <= (budget + v.notices) * 48,
        "{v:?} in {elapsed:.1} s"
    );
    assert!(real_got <= 2000 * 64 && real_notices <= per_source_max);
    // In total, within the socket's notice rate (burst 1,000, then 1,000 a second).
    assert!(
        notices_seen as f64 <= 1000.0 + 1000.0 * elapsed,
        "{notices_seen}"
    );
    // The server counted every refusal, and every notice the tap saw.
    let e = s.stderr();
    let refused = logged(&e, "udp refused:", "rate");
    let sent = logged(&e, "udp refused:", "notices");
    let suppressed = logged(&e, "udp refused:", "notices-suppressed");
    assert_eq!(sent, notices_seen, "{e}");
    assert!(
        suppressed > 0 && sent + suppressed <= refused,
        "{sent} + {suppressed} vs {refused}"
    );
    let answered_max = (2000.0 + 2000.0 * elapsed) as u64;
    assert!(
        refused + answered_max >= total_sent,
        "{refused} of {total_sent} refused"
    );
}

/// One real socket sends 2 × 40,000 frames, each with a new flow id: the first 16,384 flows are
/// counted, every later one is answered without counts, the table — and the server's memory —
/// stop growing, and the exit summary names the pressure.
#[test]
fn a_flood_of_new_flow_ids_stops_at_the_table_bound() {
    let _turn = common::turn(module_path!());
    const BOUND: u64 = 16_384;
    let s = serve(4096, &[]);
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(s.tcp).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut buf = [0u8; 256];
    let mut flood = |from: u32, n: u32| {
        let (mut reflected, mut plain) = (0u64, 0u64);
        for chunk in (from..from + n).collect::<Vec<_>>().chunks(64) {
            for &flow in chunk {
                c.send(&echo(64, flow, 0)).unwrap();
            }
            for _ in chunk {
                let Ok(k) = c.recv(&mut buf) else { break };
                let h = Header::decode(&buf[..k]).unwrap();
                if h.flags & REFLECTED != 0 {
                    reflected += 1;
                } else {
                    plain += 1;
                }
            }
        }
        (reflected, plain)
    };
    let (r1, p1) = flood(0, 40_000);
    let rss1 = rss_kib(s.pid());
    let (r2, p2) = flood(40_000, 40_000);
    let rss2 = rss_kib(s.pid());
    assert_eq!(r1, BOUND, "the first {BOUND} flows counted");
    assert_eq!(r2, 0, "none after the table is full");
    assert!(
        p1 + p2 >= 80_000 - BOUND - 100,
        "the rest answered plainly: {p1} + {p2}"
    );
    assert!(
        rss2 <= rss1 + 1024,
        "memory stopped growing: {rss1} KiB, then {rss2} KiB"
    );
    let summary = exit_summary(&s);
    assert!(
        summary.contains(&format!(" flows {BOUND};"))
            || summary.contains(&format!(" flows {BOUND} ")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("flows-untracked {}", p1 + p2)),
        "{summary}"
    );
}
