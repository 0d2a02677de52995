//! Fuzz target: the `--token` handshake decoder and both state machines, and the frame-tag
//! check with its replay window, fed whatever the bytes say. Nothing from the network may panic,
//! and garbage never creates a session.
//! Run: `cargo +nightly fuzz run auth` from the repository root (needs cargo-fuzz).
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use npt_wire::auth::{ClientHandshake, Msg, ReplayWindow, ServerAuth, Sessions, HS_LEN};

fuzz_target!(|data: &[u8]| {
    let peer: SocketAddr = "192.0.2.1:4000".parse().unwrap();
    if let Ok(m) = Msg::decode(data) {
        let mut buf = [0u8; HS_LEN];
        m.encode(&mut buf).unwrap();
        assert_eq!(Msg::decode(&buf).unwrap(), m);
    }
    let mut s = Sessions::new(ServerAuth::new(b"secret", [3; 32]), 4, 1_000);
    let mut out = [0u8; HS_LEN];
    let now = data.first().map_or(0, |b| u64::from(*b) << 24);
    let _ = s.handshake(now, peer, data, &mut out);
    assert!(s.is_empty(), "garbage made a session");
    assert!(s.open(now, peer, data).is_err());
    let mut c = ClientHandshake::new(b"secret", [1; 16], 0, 1_000_000);
    c.poll_transmit(0, &mut out);
    let _ = c.handle(0, data);
    let mut w = ReplayWindow::default();
    for ch in data.chunks(8) {
        let mut b = [0u8; 8];
        b[..ch.len()].copy_from_slice(ch);
        let _ = w.accept(u64::from_be_bytes(b));
    }
});
