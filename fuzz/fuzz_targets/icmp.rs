//! Fuzz target: what an ICMP socket hands `npt ping icmp://` — any message, with or without the
//! IPv4 header a raw socket puts before it — through the ICMP and ICMPv6 decoders. A stray,
//! truncated or forged message is `Other` or a reply/error whose stamp is what its bytes say,
//! never a panic; a request encoded from that stamp decodes back to it once answered.
//! Run: `cargo fuzz run icmp` from fuzz/ (needs cargo-fuzz; see bench/fuzz.sh).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npt_ping::icmp::codec::{self, checksum, decode, Family, Received};

fuzz_target!(|data: &[u8]| {
    for msg in [Some(data), codec::strip_ipv4(data)].into_iter().flatten() {
        for family in [Family::V4, Family::V6] {
            let echo = match decode(msg, family) {
                Received::Reply { ident, echo } => {
                    assert_eq!(ident, echo.ident);
                    echo
                }
                Received::Error { echo, .. } => echo,
                Received::Other => continue,
            };
            if family == Family::V4 {
                assert_eq!(
                    checksum(msg),
                    0,
                    "a v4 message decoded only with its checksum"
                );
            }
            // Encoded again and answered (type 0 / 129, checksum redone), it reads back.
            let mut req = vec![0u8; codec::MIN_LEN + msg.len() % 64];
            codec::encode_request(&mut req, family, &echo).unwrap();
            req[0] = if family == Family::V4 { 0 } else { 129 };
            req[2..4].copy_from_slice(&[0, 0]);
            if family == Family::V4 {
                let c = checksum(&req);
                req[2..4].copy_from_slice(&c.to_be_bytes());
            }
            assert_eq!(
                decode(&req, family),
                Received::Reply {
                    ident: echo.ident,
                    echo
                }
            );
        }
    }
});
