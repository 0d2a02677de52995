//! CI's short stand-in for `fuzz/fuzz_targets/icmp.rs`: ICMP and ICMPv6 echo replies and
//! errors, valid then mutated, truncated, or behind a raw socket's IPv4 header, through the
//! echo decoder on stable Rust with a fixed seed. Nothing may panic; an IPv4 message decodes
//! only with a good checksum; whatever decodes as ours re-encodes to the same stamp.

#![cfg(test)]

use npt_ping::icmp::codec::{self, checksum, decode, Echo, Family, Received};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// A reply (or an unreachable quoting a request) of `family`, valid.
fn message(rng: &mut StdRng, family: Family) -> Vec<u8> {
    let echo = Echo {
        ident: rng.gen(),
        token: rng.gen(),
        seq: rng.gen_range(0..1 << 20),
        send_ts: rng.gen(),
    };
    let mut req = vec![0u8; codec::MIN_LEN + rng.gen_range(0..40)];
    codec::encode_request(&mut req, family, &echo).unwrap();
    let mut m = if rng.gen_range(0..4) == 0 {
        // An error quoting the request behind the request's IP header.
        let (ty, ip) = match family {
            Family::V4 => (3u8, {
                let mut h = vec![0u8; 20];
                h[0] = 0x45;
                h
            }),
            Family::V6 => (1u8, {
                let mut h = vec![0u8; 40];
                h[0] = 0x60;
                h[6] = 58;
                h
            }),
        };
        let mut m = vec![ty, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&ip);
        m.extend_from_slice(&req);
        m
    } else {
        req[0] = if family == Family::V4 { 0 } else { 129 };
        req
    };
    m[2..4].copy_from_slice(&[0, 0]);
    if family == Family::V4 {
        let c = checksum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
    }
    m
}

fn check(msg: &[u8], family: Family) -> bool {
    let echo = match decode(msg, family) {
        Received::Reply { ident, echo } => {
            assert_eq!(ident, echo.ident);
            echo
        }
        Received::Error { echo, .. } => echo,
        Received::Other => return false,
    };
    if family == Family::V4 {
        assert_eq!(checksum(msg), 0, "decoded without its checksum: {msg:?}");
    }
    let mut again = vec![0u8; codec::MIN_LEN];
    codec::encode_request(&mut again, family, &echo).unwrap();
    again[0] = if family == Family::V4 { 0 } else { 129 };
    again[2..4].copy_from_slice(&[0, 0]);
    if family == Family::V4 {
        let c = checksum(&again);
        again[2..4].copy_from_slice(&c.to_be_bytes());
    }
    assert_eq!(
        decode(&again, family),
        Received::Reply {
            ident: echo.ident,
            echo
        }
    );
    true
}

#[test]
fn mutated_icmp_messages_never_panic_and_decode_only_as_they_say() {
    let mut rng = StdRng::seed_from_u64(0x1c3b);
    let (mut valid, mut decoded) = (0, 0);
    for i in 0..60_000 {
        let family = if i % 2 == 0 { Family::V4 } else { Family::V6 };
        let mut m = message(&mut rng, family);
        if family == Family::V4 && rng.gen_range(0..4) == 0 {
            // What a raw IPv4 socket hands over: the header first.
            let mut ip = vec![
                0x45u8, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
            ];
            ip.extend_from_slice(&m);
            m = codec::strip_ipv4(&ip).unwrap().to_vec();
        }
        if check(&m, family) {
            valid += 1;
        }
        match rng.gen_range(0..3) {
            0 => m.truncate(rng.gen_range(0..m.len())),
            _ => {
                for _ in 0..rng.gen_range(1..4) {
                    let at = rng.gen_range(0..m.len());
                    m[at] = rng.gen();
                }
            }
        }
        if check(&m, family) {
            decoded += 1;
        }
        let _ = codec::strip_ipv4(&m);
    }
    assert_eq!(valid, 60_000, "every valid message decodes");
    assert!(
        decoded < 60_000,
        "mutations are not all accepted: {decoded}"
    );
}
