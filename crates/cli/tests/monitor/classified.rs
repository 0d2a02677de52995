//! `npt monitor` against far ends that misbehave: a UDP echo answering garbage, a relay that
//! accepts and never answers, a bulk target past its byte budget — each round is stored with
//! its own status and reason, and a healthy target beside them keeps its schedule.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::monitor::{rounds, Monitor};
use common::*;

use super::end_to_end::config;

/// A UDP "echo" that answers every datagram with garbage of another size.
fn garbage_echo() -> std::net::SocketAddr {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = s.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut x: u32 = 0x9E37_79B9;
        let end = std::time::Instant::now() + Duration::from_secs(300);
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        while std::time::Instant::now() < end {
            let Ok((n, from)) = s.recv_from(&mut buf) else {
                continue;
            };
            for b in buf.iter_mut().take(n + 7) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x.to_le_bytes()[0];
            }
            let _ = s.send_to(&buf[..n + 7], from);
        }
    });
    addr
}

/// A TCP listener that accepts and never answers (a stalled relay).
fn stall() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let h = held.clone();
    std::thread::spawn(move || {
        for s in l.incoming().take(10_000).flatten() {
            h.lock().unwrap().push(s);
        }
    });
    (addr, held)
}

#[test]
fn garbage_stalls_and_a_spent_budget_are_classified_per_round_and_others_stay_on_time() {
    let (_serve, addr) = serve(&[]);
    let garbage = garbage_echo();
    let (stalled, _held) = stall();
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        r#"
[[target]]
name = "garbage"
target = "udp://{garbage}"
args = ["-c", "3", "-i", "50ms", "-W", "200ms"]
[[target]]
name = "stalled"
target = "http://{stalled}/"
length = "300ms"
args = ["--timeout", "200ms"]
[[target]]
name = "capacity"
kind = "bulk"
target = "tcp://{addr}"
length = "300ms"
args = ["--timeout", "1s"]
budget = "1MB"
"#
    );
    let cfg = write_file(
        dir.path(),
        "m.toml",
        &config(dir.path(), addr, "2s", &extra),
    );
    let store = dir.path().join("m.db");
    let mut m = Monitor::start(cfg.as_ref(), &store, true);
    let n = |m: &Monitor, t: &str, s: &str| m.rounds_total(t, s);
    m.until(
        "every target's rounds classified",
        Duration::from_secs(90),
        |m| {
            n(m, "garbage", "no_answer") >= 2.0
                && n(m, "stalled", "no_answer") >= 2.0
                && n(m, "capacity", "ok") >= 1.0
                && n(m, "capacity", "budget") >= 2.0
                && n(m, "udp", "ok") >= 4.0
        },
    );
    m.stop();
    // Each is a record with its reason, and the good paths kept their schedule.
    let g = rounds(&store, "garbage");
    assert!(
        g.iter().all(|r| r.figures.count == 0 && r.figures.sent > 0),
        "{g:?}"
    );
    let s = rounds(&store, "stalled");
    assert!(
        s.iter()
            .all(|r| r.detail.as_deref().is_some_and(|d| d.contains("timeout"))),
        "{s:?}"
    );
    let b = rounds(&store, "capacity");
    let spent: u64 = b.iter().map(|r| r.figures.bytes).sum();
    assert!(spent >= 1_000_000, "the first round moved {spent} B");
    assert!(
        b.iter()
            .skip(1)
            .all(|r| r.status == npt_monitor::round::Status::Budget),
        "{b:?}"
    );
    let udp = rounds(&store, "udp");
    // Every round of the healthy path is kept as measured: none, handed over just before the
    // stop, is stored as an empty one.
    assert!(
        udp.iter()
            .all(|r| r.status == npt_monitor::round::Status::Ok && r.figures.sent > 0),
        "{udp:?}"
    );
    let late: Vec<u64> = udp.iter().map(|r| r.lateness_ns / 1_000_000).collect();
    assert!(
        late.iter().all(|ms| *ms < 500),
        "udp rounds started late (ms): {late:?}"
    );
    // Handed to their threads ahead of time, none began before it was due (2 ms for the two
    // wall-clock readings the labels come from).
    let early: Vec<i64> = udp.iter().map(|r| r.due_ms - r.start_ms).collect();
    assert!(
        early.iter().all(|ms| *ms <= 2),
        "udp rounds began before their due time (ms early): {early:?}"
    );
}
