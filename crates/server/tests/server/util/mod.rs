//! Helpers shared by the responder tests: a server on 127.0.0.1:0, a connected UDP client, the
//! client side of the `--token` handshake over UDP, and a bounded wait for a counter.
#![allow(dead_code)]

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use npt_server::{Counters, ServeConfig, Server};
use npt_wire::auth::{ClientHandshake, SessionKey, HS_LEN};

/// A server on 127.0.0.1:0 with `token`, its config adjusted by `f`; and its address.
pub fn start(token: Option<&str>, f: impl FnOnce(&mut ServeConfig)) -> (Server, SocketAddr) {
    let mut cfg = ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        token: token.map(str::to_string),
        ..ServeConfig::default()
    };
    f(&mut cfg);
    let s = Server::start(cfg).expect("server starts");
    let a = s.local_addrs()[0];
    (s, a)
}

pub fn udp_client(addr: SocketAddr) -> UdpSocket {
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    c
}

/// The client side over a UDP socket, bounded by the handshake's own 2 s deadline.
#[allow(clippy::cast_possible_truncation)] // a test's elapsed ns
pub fn udp_handshake(c: &UdpSocket, secret: &str, nonce: u8) -> Option<SessionKey> {
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    let mut hs = ClientHandshake::new(secret.as_bytes(), [nonce; 16], now(), 2_000_000_000);
    let (mut out, mut inb) = ([0u8; HS_LEN], [0u8; 2048]);
    while hs.check(now()).is_ok() {
        if let Some(n) = hs.poll_transmit(now(), &mut out) {
            assert_eq!(n, HS_LEN);
            c.send(&out[..n]).unwrap();
        }
        let wait = hs.poll_timeout()?.saturating_sub(now()).max(1_000_000);
        c.set_read_timeout(Some(Duration::from_nanos(wait)))
            .unwrap();
        if let Ok(n) = c.recv(&mut inb) {
            assert_eq!(n, HS_LEN, "handshake replies are as long as the message");
            if let Ok(Some(k)) = hs.handle(now(), &inb[..n]) {
                c.set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                return Some(k);
            }
        }
    }
    None
}

/// Waits (bounded) until a counter reaches `n`, then returns it.
pub fn settle(c: &AtomicU64, n: u64) -> u64 {
    let end = Instant::now() + Duration::from_secs(3);
    while Counters::get(c) < n && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    Counters::get(c)
}
