//! Why this exists: `npt lifetime` can only see a path forget an idle UDP flow if the
//! responder sends first after the gap. Over real loopback sockets: an `Idle` request is
//! acked at once with the source address seen, the callback follows after the gap (no sooner)
//! with the time held, to the asking socket only and no longer than the request; a gap of 0
//! cancels it; gaps over the longest and short requests are refused and counted; under
//! `--token` an unsealed request gets no callback and a sealed one a sealed callback; on a TCP
//! connection the same, on the connection.

#![cfg(test)]

use crate::util;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use npt_server::idle::MAX_GAP_MS;
use npt_server::Counters;
use npt_wire::auth::Dir;
use npt_wire::frame::{status, Kind};
use npt_wire::idle::{self, IDLE_LEN};
use util::{settle, start, udp_client, udp_handshake};

fn recv(c: &UdpSocket) -> Option<Vec<u8>> {
    let mut buf = [0u8; 2048];
    c.recv(&mut buf).ok().map(|n| buf[..n].to_vec())
}

#[test]
fn acks_at_once_and_calls_back_after_the_gap() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(None, |_| {});
    let c = udp_client(addr);
    let t0 = Instant::now();
    c.send(&idle::request(7, 0, 1, 400)).unwrap();
    let ack = recv(&c).expect("an ack");
    let (h, body) = idle::read(&ack).unwrap();
    assert_eq!((h.kind, h.flow, h.status), (Kind::IdleAck, 7, status::OK));
    assert_eq!(body.seen, Some(c.local_addr().unwrap()));
    assert_eq!(body.max_gap_ms, MAX_GAP_MS);
    assert!(
        recv(&c).is_none(),
        "nothing before the gap (300 ms read timeout)"
    );
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let cb = recv(&c).expect("the callback");
    let waited = t0.elapsed();
    assert_eq!(cb.len(), IDLE_LEN);
    let (h, body) = idle::read(&cb).unwrap();
    assert_eq!((h.kind, h.flow, body.gap_ms), (Kind::IdleCallback, 7, 400));
    assert!(
        (400_000..450_000).contains(&body.held_us),
        "{}",
        body.held_us
    );
    assert!(waited >= Duration::from_millis(400) && waited < Duration::from_millis(600));
    assert_eq!(settle(&s.counters().udp_idle_callbacks, 1), 1);
}

#[test]
fn a_gap_of_zero_cancels_and_the_bounds_refuse() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(None, |_| {});
    let c = udp_client(addr);
    c.send(&idle::request(1, 0, 1, 300)).unwrap();
    recv(&c).expect("an ack");
    c.send(&idle::request(1, 1, 1, 0)).unwrap();
    let (h, _) = idle::read(&recv(&c).expect("an ack")).unwrap();
    assert_eq!(h.status, status::OK);
    c.set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    assert!(recv(&c).is_none(), "cancelled: no callback");
    c.send(&idle::request(2, 0, 1, MAX_GAP_MS + 1)).unwrap();
    let (h, _) = idle::read(&recv(&c).expect("an ack")).unwrap();
    assert_eq!(h.status, status::IDLE_GAP);
    // Shorter than its two answers: the ack alone.
    let mut half = idle::request(6, 0, 1, 100)[..IDLE_LEN].to_vec();
    half[8..12].copy_from_slice(&u32::try_from(IDLE_LEN).unwrap().to_be_bytes());
    c.send(&half).unwrap();
    let (h, _) = idle::read(&recv(&c).expect("an ack")).unwrap();
    assert_eq!(h.status, status::IDLE_SHORT);
    // Shorter than an ack: no answer, malformed.
    let short = idle::request(3, 0, 1, 100);
    let mut cut = short[..IDLE_LEN - 4].to_vec();
    cut[8..12].copy_from_slice(&u32::try_from(IDLE_LEN - 4).unwrap().to_be_bytes());
    c.send(&cut).unwrap();
    assert!(recv(&c).is_none());
    assert_eq!(settle(&s.counters().udp_idle_refused, 2), 2);
    assert!(Counters::get(&s.counters().udp_malformed) >= 1);
    assert_eq!(Counters::get(&s.counters().udp_idle_callbacks), 0);
}

#[test]
fn under_token_only_sealed_requests_are_called_back_sealed() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (_s, addr) = start(Some("idle secret"), |_| {});
    let c = udp_client(addr);
    c.send(&idle::request(4, 0, 1, 200)).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(600)))
        .unwrap();
    let mut got = Vec::new();
    while let Some(b) = recv(&c) {
        got.push(b);
    }
    assert!(
        got.iter().all(|b| idle::read(b).is_none()),
        "an unsealed request is neither acked nor called back"
    );
    let key = udp_handshake(&c, "idle secret", 3).expect("handshake");
    let mut req = idle::request(5, 0, 1, 200);
    key.seal(Dir::ToServer, &mut req).unwrap();
    c.send(&req).unwrap();
    let ack = recv(&c).expect("an ack");
    key.open(Dir::ToClient, &ack).expect("a sealed ack");
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let cb = recv(&c).expect("the callback");
    key.open(Dir::ToClient, &cb).expect("a sealed callback");
    assert_eq!(idle::read(&cb).unwrap().0.kind, Kind::IdleCallback);
}

/// The same on a TCP connection (`npt lifetime tcp://`): the ack at once, the callback on the
/// connection after the gap; a request in the meantime (a gap-0 cancel) ends the hold, and
/// the connection goes on.
#[test]
fn a_tcp_connection_is_held_and_called_back() {
    let _turn = npt_testkit::turn::turn(module_path!());
    use std::io::{Read, Write};
    let (s, addr) = start(None, |_| {});
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut frame = [0u8; IDLE_LEN];
    let t0 = Instant::now();
    c.write_all(&idle::request(3, 0, 1, 300)).unwrap();
    c.read_exact(&mut frame).unwrap();
    let (h, body) = idle::read(&frame).unwrap();
    assert_eq!((h.kind, h.flow, h.status), (Kind::IdleAck, 3, status::OK));
    assert_eq!(body.seen, Some(c.local_addr().unwrap()));
    c.read_exact(&mut frame).unwrap();
    let waited = t0.elapsed();
    let (h, body) = idle::read(&frame).unwrap();
    assert_eq!((h.kind, h.flow), (Kind::IdleCallback, 3));
    assert!(
        (300_000..350_000).contains(&body.held_us),
        "{}",
        body.held_us
    );
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_millis(500));
    assert_eq!(settle(&s.counters().tcp.idle_callbacks, 1), 1);

    // A cancel while held: its own ack, and no callback.
    c.write_all(&idle::request(4, 0, 1, 300)).unwrap();
    c.read_exact(&mut frame).unwrap();
    c.write_all(&idle::request(4, 1, 1, 0)).unwrap();
    c.read_exact(&mut frame).unwrap();
    let (h, _) = idle::read(&frame).unwrap();
    assert_eq!((h.kind, h.seq), (Kind::IdleAck, 1));
    c.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    assert!(
        c.read_exact(&mut frame).is_err(),
        "no callback after a cancel"
    );
    // Over the longest gap: acked with why, counted.
    c.write_all(&idle::request(5, 0, 1, MAX_GAP_MS + 1))
        .unwrap();
    c.read_exact(&mut frame).unwrap();
    assert_eq!(idle::read(&frame).unwrap().0.status, status::IDLE_GAP);
    assert_eq!(settle(&s.counters().tcp.refused_callbacks, 1), 1);
    assert_eq!(Counters::get(&s.counters().tcp.idle_callbacks), 1);
}
