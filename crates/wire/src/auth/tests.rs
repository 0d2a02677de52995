//! The handshake and frame tags on a virtual clock: golden bytes, the whole exchange, and
//! every way it must fail (wrong secret, another address, expired cookie, replays, truncated
//! and garbage input).

use std::net::SocketAddr;

use super::*;
use crate::frame::{Header, Kind};

const SECRET: &[u8] = b"s3cret";
const COOKIE_KEY: [u8; 32] = [7; 32];
const NONCE: [u8; 16] = [0xA5; 16];
const MS: u64 = 1_000_000;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 1], port))
}

/// Runs the handshake from `peer` at `now` against `s`; the client's key, or the error.
fn handshake(
    s: &mut Sessions,
    c: &mut ClientHandshake,
    peer: SocketAddr,
    now: u64,
) -> Result<SessionKey, AuthError> {
    let mut m = [0u8; HS_LEN];
    let mut r = [0u8; HS_LEN];
    for _ in 0..4 {
        let n = c.poll_transmit(now, &mut m).expect("a message is due");
        assert_eq!(n, HS_LEN);
        s.handshake(now, peer, &m, &mut r)?;
        if let Some(k) = c.handle(now, &r)? {
            return Ok(k);
        }
    }
    panic!("handshake did not finish in two round trips");
}

fn frame(seq: u64) -> [u8; 64] {
    let mut b = [0u8; 64];
    Header {
        kind: Kind::Echo,
        flags: 0,
        frame_len: 64,
        reply_len: 0,
        flow: 3,
        status: 0,
        seq,
        send_ts: 42,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    b
}

fn sessions() -> Sessions {
    Sessions::new(ServerAuth::new(SECRET, COOKIE_KEY), 4, 60_000 * MS)
}

#[test]
fn hello_golden_bytes() {
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 1000 * MS);
    let mut m = [0xFFu8; HS_LEN];
    c.poll_transmit(0, &mut m).unwrap();
    let mut want = [0u8; HS_LEN];
    want[..8].copy_from_slice(&[0x1E, b'N', b'P', b'H', 1, 1, 0, 0]);
    want[8..24].copy_from_slice(&NONCE);
    assert_eq!(m, want);
    assert_eq!(Msg::decode(&m).unwrap().typ, MsgType::Hello);
}

#[test]
fn challenge_golden_bytes() {
    let a = ServerAuth::new(SECRET, COOKIE_KEY);
    let mut hello = [0u8; HS_LEN];
    ClientHandshake::new(SECRET, NONCE, 0, 1000 * MS).poll_transmit(0, &mut hello);
    let mut r = [0u8; HS_LEN];
    a.handle(0x0102_0304_0506_0708, addr(5000), &hello, &mut r)
        .unwrap();
    assert_eq!(r[..8], [0x1E, b'N', b'P', b'H', 1, 2, 0, 0]);
    assert_eq!(r[8..24], NONCE);
    assert_eq!(r[24..32], [1, 2, 3, 4, 5, 6, 7, 8], "issue time");
    assert_ne!(r[32..48], [0; 16], "cookie tag");
    assert_eq!(r[48..], [0; 48], "no proof, zero padding");
}

#[test]
fn tagged_frame_golden_layout() {
    let k = SessionKey::from_bytes(&[1; 32]);
    let mut f = frame(9);
    let before = f;
    k.seal(Dir::ToServer, &mut f).unwrap();
    assert_eq!(f[6..8], [0x80, 0x00], "AUTH_FLAG in flags");
    assert_eq!(f[..6], before[..6]);
    assert_eq!(f[8..40], before[8..40], "header fields untouched");
    assert_eq!(f[48..], before[48..], "payload untouched");
    // The tag is HMAC-SHA256(key, 'C' | bytes 0..40)[..8] (computed apart with Python's hmac).
    assert_eq!(f[40..48], [231, 49, 7, 46, 60, 31, 217, 245]);
    let mut again = before;
    k.seal(Dir::ToServer, &mut again).unwrap();
    assert_eq!(f, again);
    k.open(Dir::ToServer, &f).unwrap();
    assert_eq!(
        k.open(Dir::ToClient, &f),
        Err(AuthError::BadMac),
        "directions differ"
    );
}

#[test]
fn full_handshake_then_frames_both_ways() {
    let mut s = sessions();
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 1000 * MS);
    let k = handshake(&mut s, &mut c, addr(5000), 10 * MS).unwrap();
    assert!(c.is_done() && c.poll_timeout().is_none());
    let mut f = frame(0);
    k.seal(Dir::ToServer, &mut f).unwrap();
    let sk = s.open(11 * MS, addr(5000), &f).unwrap().clone();
    // The server answers in place and re-seals; the client verifies.
    crate::frame::set_kind_status(&mut f, Kind::EchoReply, 0);
    sk.seal(Dir::ToClient, &mut f).unwrap();
    k.open(Dir::ToClient, &f).unwrap();
    assert_eq!(s.len(), 1);
}

#[test]
fn wrong_secret_gets_no_session_and_no_reply() {
    let mut s = sessions();
    let mut c = ClientHandshake::new(b"guess", NONCE, 0, 1000 * MS);
    let mut out = [0xEEu8; HS_LEN];
    let mut m = [0u8; HS_LEN];
    c.poll_transmit(0, &mut m).unwrap();
    s.handshake(0, addr(1), &m, &mut out).unwrap();
    c.handle(0, &out).unwrap();
    c.poll_transmit(0, &mut m).unwrap();
    let mut silent = [0xEEu8; HS_LEN];
    assert_eq!(
        s.handshake(0, addr(1), &m, &mut silent),
        Err(AuthError::BadProof)
    );
    assert_eq!(silent, [0xEE; HS_LEN], "nothing written");
    assert!(s.is_empty());
}

#[test]
fn a_server_with_another_secret_is_not_believed() {
    let mut s = Sessions::new(ServerAuth::new(b"other", COOKIE_KEY), 4, 1);
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 1000 * MS);
    assert_eq!(
        handshake(&mut s, &mut c, addr(1), 0).err(),
        Some(AuthError::BadProof),
        "the server refuses our proof"
    );
}

#[test]
fn auth_from_another_address_fails_the_cookie() {
    let mut s = sessions();
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 1000 * MS);
    let (mut m, mut r) = ([0u8; HS_LEN], [0u8; HS_LEN]);
    c.poll_transmit(0, &mut m).unwrap();
    s.handshake(0, addr(1), &m, &mut r).unwrap();
    c.handle(0, &r).unwrap();
    c.poll_transmit(0, &mut m).unwrap();
    assert_eq!(
        s.handshake(0, addr(2), &m, &mut r),
        Err(AuthError::BadCookie)
    );
    let mut v6 = addr(1);
    v6.set_ip("::ffff:192.0.2.2".parse().unwrap());
    assert_eq!(s.handshake(0, v6, &m, &mut r), Err(AuthError::BadCookie));
    assert!(s.is_empty());
}

#[test]
fn expired_cookie() {
    let mut s = sessions();
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 100_000 * MS);
    let (mut m, mut r) = ([0u8; HS_LEN], [0u8; HS_LEN]);
    c.poll_transmit(0, &mut m).unwrap();
    s.handshake(0, addr(1), &m, &mut r).unwrap();
    c.handle(0, &r).unwrap();
    c.poll_transmit(0, &mut m).unwrap();
    let late = COOKIE_TTL_NS + 1;
    assert_eq!(
        s.handshake(late, addr(1), &m, &mut r),
        Err(AuthError::Expired)
    );
    // Within its lifetime it is accepted; before its issue time it cannot have been ours.
    assert_eq!(s.handshake(COOKIE_TTL_NS, addr(1), &m, &mut r), Ok(()));
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 100_000 * MS);
    c.poll_transmit(0, &mut m).unwrap();
    s.handshake(50 * MS, addr(1), &m, &mut r).unwrap();
    c.handle(0, &r).unwrap();
    c.poll_transmit(0, &mut m).unwrap();
    assert_eq!(
        s.handshake(49 * MS, addr(1), &m, &mut r),
        Err(AuthError::BadCookie)
    );
}

#[test]
fn captured_frame_replayed_from_another_socket_or_twice() {
    let mut s = sessions();
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 1000 * MS);
    let k = handshake(&mut s, &mut c, addr(1), 0).unwrap();
    let mut f = frame(5);
    k.seal(Dir::ToServer, &mut f).unwrap();
    assert!(s.open(1, addr(1), &f).is_ok());
    assert_eq!(
        s.open(2, addr(2), &f).err(),
        Some(AuthError::UnknownSession)
    );
    assert_eq!(s.open(3, addr(1), &f).err(), Some(AuthError::Replay));
    // Another client's session: its key does not open our frames.
    let mut c2 = ClientHandshake::new(SECRET, [1; 16], 0, 1000 * MS);
    handshake(&mut s, &mut c2, addr(2), 0).unwrap();
    let mut g = frame(6);
    k.seal(Dir::ToServer, &mut g).unwrap();
    assert_eq!(s.open(4, addr(2), &g).err(), Some(AuthError::BadMac));
    // Any change to a covered header byte breaks the tag; an unsealed frame is refused.
    let mut h = frame(7);
    k.seal(Dir::ToServer, &mut h).unwrap();
    h[13] ^= 1; // reply_len
    assert_eq!(s.open(5, addr(1), &h).err(), Some(AuthError::BadMac));
    assert_eq!(
        s.open(5, addr(1), &frame(8)).err(),
        Some(AuthError::NotAuthenticated)
    );
}

#[test]
fn repeated_auth_keeps_the_session_an_older_one_cannot_reset_it() {
    let mut s = sessions();
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 100_000 * MS);
    let (mut m, mut r) = ([0u8; HS_LEN], [0u8; HS_LEN]);
    c.poll_transmit(0, &mut m).unwrap();
    s.handshake(0, addr(1), &m, &mut r).unwrap();
    c.handle(0, &r).unwrap();
    let mut old_auth = [0u8; HS_LEN];
    c.poll_transmit(0, &mut old_auth).unwrap();
    // A second handshake from the same address, later.
    let mut c2 = ClientHandshake::new(SECRET, [2; 16], 0, 100_000 * MS);
    let k2 = handshake(&mut s, &mut c2, addr(1), 5 * MS).unwrap();
    let mut f = frame(1);
    k2.seal(Dir::ToServer, &mut f).unwrap();
    s.open(6 * MS, addr(1), &f).unwrap();
    // The captured first Auth, replayed from the same address: refused, session kept.
    assert_eq!(
        s.handshake(7 * MS, addr(1), &old_auth, &mut r),
        Err(AuthError::Replay)
    );
    assert_eq!(s.open(8 * MS, addr(1), &f).err(), Some(AuthError::Replay));
    let mut g = frame(2);
    k2.seal(Dir::ToServer, &mut g).unwrap();
    assert!(
        s.open(8 * MS, addr(1), &g).is_ok(),
        "the newer session still works"
    );
}

#[test]
fn client_repeats_until_its_deadline() {
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 1000 * MS);
    let mut m = [0u8; HS_LEN];
    assert!(c.poll_transmit(0, &mut m).is_some());
    assert!(c.poll_transmit(1, &mut m).is_none(), "not yet");
    assert_eq!(c.poll_timeout(), Some(HS_RETRY_NS));
    assert!(
        c.poll_transmit(HS_RETRY_NS, &mut m).is_some(),
        "lost Hello repeated"
    );
    assert_eq!(c.check(999 * MS), Ok(()));
    assert_eq!(c.check(1000 * MS), Err(AuthError::TimedOut));
    assert!(c.poll_transmit(1000 * MS, &mut m).is_none());
}

#[test]
fn client_ignores_foreign_answers() {
    let mut c = ClientHandshake::new(SECRET, NONCE, 0, 1000 * MS);
    let mut m = [0u8; HS_LEN];
    c.poll_transmit(0, &mut m).unwrap();
    // Another handshake's Challenge (other nonce), an Accept out of turn, garbage.
    let a = ServerAuth::new(SECRET, COOKIE_KEY);
    let mut other = [0u8; HS_LEN];
    ClientHandshake::new(SECRET, [9; 16], 0, 1).poll_transmit(0, &mut other);
    let mut r = [0u8; HS_LEN];
    a.handle(0, addr(1), &other, &mut r).unwrap();
    assert_eq!(c.handle(0, &r).err(), Some(AuthError::OutOfTurn));
    assert_eq!(
        c.handle(0, &[0u8; 10]).err(),
        Some(AuthError::Truncated {
            need: HS_LEN,
            have: 10
        })
    );
    assert_eq!(c.handle(0, &[0u8; HS_LEN]).err(), Some(AuthError::BadMagic));
    assert!(!c.is_done());
}

#[test]
fn truncated_and_garbage_messages() {
    let a = ServerAuth::new(SECRET, COOKIE_KEY);
    let mut hello = [0u8; HS_LEN];
    ClientHandshake::new(SECRET, NONCE, 0, 1).poll_transmit(0, &mut hello);
    let mut r = [0u8; HS_LEN];
    for n in 0..HS_LEN {
        assert_eq!(
            a.handle(0, addr(1), &hello[..n], &mut r).err(),
            Some(AuthError::Truncated {
                need: HS_LEN,
                have: n
            })
        );
    }
    let mut b = hello;
    b[4] = 2;
    assert_eq!(
        a.handle(0, addr(1), &b, &mut r).err(),
        Some(AuthError::BadVersion(2))
    );
    b = hello;
    b[5] = 9;
    assert_eq!(
        a.handle(0, addr(1), &b, &mut r).err(),
        Some(AuthError::BadType(9))
    );
    b[5] = MsgType::Accept as u8;
    assert_eq!(
        a.handle(0, addr(1), &b, &mut r).err(),
        Some(AuthError::OutOfTurn)
    );
    b[5] = MsgType::Auth as u8; // an Auth with a zero cookie
    assert_eq!(
        a.handle(0, addr(1), &b, &mut r).err(),
        Some(AuthError::BadCookie)
    );
    // Random bytes never panic and never create a session.
    let mut s = sessions();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..20_000u32 {
        let mut g = hello.to_vec();
        g.truncate(HS_LEN - (i as usize % 3));
        for _ in 0..(i % 7) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x as usize) % g.len();
            g[k] = (x >> 32) as u8;
        }
        let _ = s.handshake(0, addr(1), &g, &mut r);
        let _ = s.open(0, addr(1), &g);
    }
    assert!(s.is_empty());
}

#[test]
fn session_table_is_bounded_and_never_evicts_live_sessions() {
    let mut s = Sessions::new(ServerAuth::new(SECRET, COOKIE_KEY), 2, 1000 * MS);
    for p in 0..2 {
        let mut c = ClientHandshake::new(SECRET, [p as u8; 16], 0, 1000 * MS);
        handshake(&mut s, &mut c, addr(p), 0).unwrap();
    }
    let mut c = ClientHandshake::new(SECRET, [9; 16], 0, 1000 * MS);
    assert_eq!(
        handshake(&mut s, &mut c, addr(9), 10 * MS).err(),
        Some(AuthError::SessionsFull)
    );
    let mut c = ClientHandshake::new(SECRET, [9; 16], 0, 100_000 * MS);
    assert!(
        handshake(&mut s, &mut c, addr(9), 2000 * MS).is_ok(),
        "idle ones swept"
    );
    assert_eq!(s.len(), 1);
}

#[test]
fn replay_window() {
    let mut w = ReplayWindow::default();
    assert!(w.accept(10));
    assert!(!w.accept(10));
    assert!(w.accept(12));
    assert!(w.accept(11), "reordered, not seen");
    assert!(!w.accept(11));
    assert!(w.accept(10 + REPLAY_WINDOW + 5));
    assert!(!w.accept(12), "too old");
    assert!(w.accept(10 + REPLAY_WINDOW + 4));
    assert!(w.accept(u64::MAX));
    assert!(!w.accept(u64::MAX));
}
