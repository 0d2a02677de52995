//! Why this exists: `--token` must be useless to an observer. Over real loopback sockets: the
//! keyed handshake opens UDP and TCP, replies are sealed, and a captured packet replayed from
//! another socket (or twice) is refused and counted; a wrong secret gets nothing; UDP replies
//! are never larger than what caused them; sources that proved nothing get the safe limits.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use crate::util;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use npt_server::{Counters, Limits};
use npt_wire::auth::{ClientHandshake, Dir, SessionKey, HS_LEN};
use npt_wire::frame::{status, Header, Kind, HEADER_LEN};
use util::{settle, start, udp_client, udp_handshake};

const SECRET: &str = "correct horse battery staple";

fn frame(kind: Kind, len: usize, reply_len: u32, seq: u64, key: Option<&SessionKey>) -> Vec<u8> {
    let mut b = vec![0xAB; len];
    Header {
        kind,
        flags: 0,
        frame_len: len as u32,
        reply_len,
        flow: 1,
        status: 0,
        seq,
        send_ts: 42,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    if let Some(k) = key {
        k.seal(Dir::ToServer, &mut b).unwrap();
    }
    b
}

#[test]
fn udp_session_answers_sealed_frames_and_refuses_replays() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(Some(SECRET), |_| {});
    let c = udp_client(addr);
    let key = udp_handshake(&c, SECRET, 1).expect("handshake completes");
    let captured = frame(Kind::Echo, 100, 0, 7, Some(&key));
    c.send(&captured).unwrap();
    let mut buf = [0u8; 2048];
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(n, 100);
    let h = Header::decode(&buf[..n]).unwrap();
    assert_eq!((h.kind, h.seq, h.send_ts), (Kind::EchoReply, 7, 42));
    key.open(Dir::ToClient, &buf[..n])
        .expect("the reply is sealed");

    // The captured datagram from another socket: no session there.
    let thief = udp_client(addr);
    thief.send(&captured).unwrap();
    assert!(
        thief.recv(&mut buf).is_err(),
        "replay from another socket answered"
    );
    // Sent again from the right socket: a replay.
    c.send(&captured).unwrap();
    assert!(c.recv(&mut buf).is_err(), "replay answered");
    // Forged: right session, wrong key; unsealed; the payload may change, the header not.
    let other = SessionKey::from_bytes(&[9; 32]);
    c.send(&frame(Kind::Echo, 100, 0, 8, Some(&other))).unwrap();
    c.send(&frame(Kind::Echo, 100, 0, 9, None)).unwrap();
    let mut edited = frame(Kind::Echo, 100, 0, 10, Some(&key));
    edited[99] ^= 0xFF;
    c.send(&edited).unwrap();
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(Header::decode(&buf[..n]).unwrap().seq, 10);
    assert!(c.recv(&mut buf).is_err(), "nothing else answered");

    let k = s.counters();
    assert_eq!(settle(&k.udp_auth_session, 1), 1, "unknown session");
    assert_eq!(settle(&k.udp_auth_replay, 1), 1, "replay");
    assert_eq!(settle(&k.udp_auth_mac, 1), 1, "bad mac");
    assert_eq!(settle(&k.udp_refused_token, 1), 1, "unsealed");
    assert_eq!(Counters::get(&k.udp_sessions), 1);
    let line = k.refusals_line();
    assert!(
        line.contains("unknown-session 1 bad-mac 1 replay 1"),
        "{line}"
    );
}

#[test]
fn udp_wrong_secret_gets_no_session() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(Some(SECRET), |_| {});
    let c = udp_client(addr);
    assert!(udp_handshake(&c, "guess", 2).is_none());
    assert!(settle(&s.counters().udp_auth_handshake, 1) >= 1);
    assert_eq!(Counters::get(&s.counters().udp_sessions), 0);
    // A client with a secret talking to a server without one gets no echo of its Hello.
    let (s2, open) = start(None, |_| {});
    let c = udp_client(open);
    assert!(udp_handshake(&c, SECRET, 3).is_none());
    assert!(settle(&s2.counters().udp_refused_token, 1) >= 1);
}

#[test]
fn tcp_handshake_then_sealed_frames_and_a_replayed_connection_fails() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(Some(SECRET), |_| {});
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut wire = Vec::new(); // everything the client sent, as an observer records it
    let mut hs = ClientHandshake::new(SECRET.as_bytes(), [4; 16], 0, u64::MAX);
    let mut m = [0u8; HS_LEN];
    let key = loop {
        let n = hs.poll_transmit(0, &mut m).expect("a message is due");
        c.write_all(&m[..n]).unwrap();
        wire.extend_from_slice(&m[..n]);
        c.read_exact(&mut m).unwrap();
        if let Some(k) = hs.handle(0, &m).unwrap() {
            break k;
        }
    };
    let mut out = frame(Kind::Echo, 200, 0, 1, Some(&key));
    out.extend(frame(Kind::Request, 48, 100_000, 2, Some(&key)));
    c.write_all(&out).unwrap();
    wire.extend_from_slice(&out);
    let mut hdr = [0u8; HEADER_LEN];
    let mut body = vec![0u8; 100_000];
    for (kind, len) in [(Kind::EchoReply, 200), (Kind::Response, 100_000)] {
        c.read_exact(&mut hdr).unwrap();
        let h = Header::decode(&hdr).unwrap();
        assert_eq!((h.kind, h.frame_len, h.status), (kind, len, status::OK));
        key.open(Dir::ToClient, &hdr).expect("sealed reply");
        c.read_exact(&mut body[..len as usize - HEADER_LEN])
            .unwrap();
    }
    // The recorded client bytes, replayed on a new connection: the Hello gets a fresh
    // challenge, the recorded Auth fails it, and nothing else is answered.
    let mut r = TcpStream::connect(addr).unwrap();
    r.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    r.write_all(&wire).unwrap();
    let mut got = Vec::new();
    let _ = r.read_to_end(&mut got);
    assert_eq!(got.len(), HS_LEN, "only the Challenge comes back");
    assert!(settle(&s.counters().tcp.refused_handshake, 1) >= 1);
    // A frame sealed with another key on a good connection is refused and counted.
    c.write_all(&frame(
        Kind::Echo,
        64,
        0,
        3,
        Some(&SessionKey::from_bytes(&[1; 32])),
    ))
    .unwrap();
    assert_eq!(c.read(&mut hdr).unwrap_or(0), 0, "closed");
    assert_eq!(settle(&s.counters().tcp.refused_mac, 1), 1);
    // The old clear token and raw bytes are refused.
    let mut old = TcpStream::connect(addr).unwrap();
    old.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    old.write_all(&frame(Kind::Echo, 64, 0, 1, None)).unwrap();
    assert_eq!(old.read(&mut hdr).unwrap_or(0), 0);
    assert_eq!(settle(&s.counters().tcp.refused_token, 1), 1);
}

/// Many small datagrams asking for large replies: every reply is at most its request, bytes
/// counted each way at the client and at the server (open server, and a session under --token).
#[test]
fn udp_replies_are_never_larger_than_requests() {
    let _turn = npt_testkit::turn::turn(module_path!());
    for token in [None, Some(SECRET)] {
        let (s, addr) = start(token, |_| {});
        let c = udp_client(addr);
        let key = token.map(|t| udp_handshake(&c, t, 5).expect("handshake"));
        let (mut up, mut down, mut answers) = (0u64, 0u64, 0u64);
        let mut buf = [0u8; 65_536];
        for seq in 0..500u64 {
            let f = frame(Kind::Request, 64, 60_000, seq, key.as_ref());
            c.send(&f).unwrap();
            up += f.len() as u64;
            if let Ok(n) = c.recv(&mut buf) {
                let h = Header::decode(&buf[..n]).unwrap();
                assert_eq!((n, h.status), (64, status::CLAMPED));
                down += n as u64;
                answers += 1;
            }
        }
        assert_eq!(answers, 500, "{token:?}");
        assert!(down <= up, "{down} > {up}");
        let k = s.counters();
        settle(&k.udp_clamped, 500);
        assert!(Counters::get(&k.udp_tx_bytes) <= Counters::get(&k.udp_rx_bytes));
        assert_eq!(Counters::get(&k.udp_clamped), 500);
    }
}

/// With loopback not exempt, the defaults are what a public address gets: no raw echo, and a
/// burst from one socket is cut at the safe per-source budget; an authenticated session is not.
#[test]
fn sources_that_proved_nothing_get_the_safe_limits() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(Some(SECRET), |c| c.exempt_local = false);
    let c = udp_client(addr);
    let key = udp_handshake(&c, SECRET, 6).expect("handshake");
    c.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let mut answered = 0;
    for seq in 0..1000u64 {
        c.send(&frame(Kind::Echo, 64, 0, seq, Some(&key))).unwrap();
        if c.recv(&mut buf).is_ok() {
            answered += 1;
        }
    }
    assert_eq!(answered, 1000, "a session has the open limits");
    // Unauthenticated server: raw echo refused, framed echo capped per source.
    let (s2, addr) = start(None, |c| c.exempt_local = false);
    let c = udp_client(addr);
    c.send(b"raw").unwrap();
    assert!(c.recv(&mut buf).is_err(), "raw echo answered");
    assert_eq!(settle(&s2.counters().udp_refused_raw, 1), 1);
    let burst = 1000u64;
    for seq in 0..burst {
        c.send(&frame(Kind::Echo, 64, 0, seq, None)).unwrap();
    }
    // Echoes come back at their 64 bytes; a refused frame may get a 48-byte refusal notice
    // (at most 5 a second per source), which is not an answer.
    let (mut got, mut notices) = (0u64, 0u64);
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    while let Ok(n) = c.recv(&mut buf) {
        if n == 64 {
            got += 1;
        } else {
            notices += 1;
        }
        if got + notices > 2 * burst {
            break;
        }
    }
    assert!(notices <= 10, "{notices} notices");
    let safe = Limits::safe().pps as u64;
    assert!(got <= safe + 5 && got >= safe / 2, "{got} answered");
    assert!(settle(&s2.counters().udp_refused_rate, burst - got) >= burst - got - 5);
    drop(s);
}
