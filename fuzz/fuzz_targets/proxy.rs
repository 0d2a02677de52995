//! Fuzz target: what a proxy sends back — SOCKS5 method choice, auth reply, request reply and
//! relayed UDP datagrams, HTTP CONNECT responses — through the parsers and the whole handshake
//! state machine, fed in arbitrary pieces. A hostile proxy may make npt fail, never panic.
//! Run: `cargo +nightly fuzz run proxy` from fuzz/ (needs cargo-fuzz).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npt_proxy::handshake::Handshake;
use npt_proxy::{http_connect, socks5, Via};

fuzz_target!(|data: &[u8]| {
    let _ = socks5::parse_method(data);
    let _ = socks5::parse_auth_reply(data);
    let _ = socks5::parse_reply(data);
    let _ = http_connect::parse_response(data);
    if let Ok(off) = socks5::udp_payload_offset(data) {
        assert!(off <= data.len());
    }
    // The first byte picks the proxy and how the rest is cut into reads.
    let (&sel, rest) = match data.split_first() {
        Some(x) => x,
        None => return,
    };
    let via = match sel % 3 {
        0 => Via::parse("socks5://u:p@127.0.0.1:1080").unwrap(),
        1 => Via::parse("socks5h://127.0.0.1:1080").unwrap(),
        _ => Via::parse("http://127.0.0.1:3128").unwrap(),
    };
    // Built directly, never through a name lookup: the fuzzer must not touch the network.
    let target = socks5::Target::Name("example.org".into(), 443);
    let mut h = match sel % 3 {
        2 => Handshake::http(&via, "example.org:443"),
        _ => Handshake::socks(&via, socks5::CMD_CONNECT, target),
    };
    let piece = usize::from(sel >> 2).max(1);
    for chunk in rest.chunks(piece) {
        h.written();
        if h.on_read(chunk).is_err() {
            break;
        }
    }
});
