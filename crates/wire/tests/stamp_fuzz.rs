//! CI's short stand-in for `fuzz/fuzz_targets/stamp.rs`: random and mutated STAMP packets of
//! both modes through the decoders and a reflector's in-place answer, on stable Rust with a
//! fixed seed. Nothing may panic; a packet decodes exactly when it holds its mode's base; the
//! answer keeps the request's length and every byte after the base; garbage never verifies
//! under a key, and a sealed answer always does.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation)]

use npt_wire::stamp::{ErrorEstimate, Mode, ReflectedPacket, StampKey, TestPacket};

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// A well-formed packet of `mode` (sender or reflector layout), then cut or changed a little.
fn datagram(x: &mut u64, mode: Mode) -> Vec<u8> {
    let extra = (xorshift(x) % 24) as usize;
    let mut b = vec![0u8; mode.base_len() + extra];
    if xorshift(x) & 1 == 0 {
        TestPacket {
            seq: xorshift(x) as u32,
            timestamp: xorshift(x),
            error: ErrorEstimate::from_u16(xorshift(x) as u16),
            ssid: xorshift(x) as u16,
        }
        .encode(mode, &mut b)
        .unwrap();
    } else {
        ReflectedPacket {
            seq: xorshift(x) as u32,
            timestamp: xorshift(x),
            error: ErrorEstimate::from_u16(xorshift(x) as u16),
            receive_timestamp: xorshift(x),
            sender_timestamp: xorshift(x),
            sender_ttl: xorshift(x) as u8,
            ..ReflectedPacket::default()
        }
        .encode(mode, &mut b)
        .unwrap();
    }
    for _ in 0..xorshift(x) % 4 {
        let at = (xorshift(x) as usize) % b.len();
        b[at] = xorshift(x) as u8;
    }
    if xorshift(x) % 6 < 1 {
        b.truncate((xorshift(x) as usize) % b.len());
    }
    b
}

#[test]
fn mutated_packets_decode_or_fail_and_answers_keep_their_length() {
    let key = StampKey::from_bytes(&[7; 32]).unwrap();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let (mut answered, mut refused) = (0, 0);
    for i in 0..50_000 {
        let mode = if i % 2 == 0 {
            Mode::Open
        } else {
            Mode::Authenticated
        };
        let data = datagram(&mut x, mode);
        assert!(!key.verify(&data), "garbage verified under a key");
        let long_enough = data.len() >= mode.base_len();
        assert_eq!(
            ReflectedPacket::timestamps(mode, &data).is_some(),
            long_enough
        );
        if let Ok(r) = ReflectedPacket::decode(mode, &data) {
            let mut again = data.clone();
            r.encode(mode, &mut again).unwrap();
            assert_eq!(ReflectedPacket::decode(mode, &again).unwrap(), r);
            let _ = r.error.to_unix_ns(r.timestamp);
            let _ = r.error.ns();
        }
        let Ok(t) = TestPacket::decode(mode, &data) else {
            assert!(!long_enough);
            refused += 1;
            continue;
        };
        assert!(long_enough);
        let mut buf = data.clone();
        let answer = ReflectedPacket {
            seq: t.seq.wrapping_add(1),
            timestamp: 0,
            error: ErrorEstimate::from_ns(1_000, false),
            ssid: t.ssid,
            receive_timestamp: 1,
            sender_seq: t.seq,
            sender_timestamp: t.timestamp,
            sender_error: t.error,
            sender_ttl: 64,
        };
        answer.encode(mode, &mut buf).unwrap();
        ReflectedPacket::set_send_time(mode, &mut buf, 2, answer.error).unwrap();
        assert_eq!(buf.len(), data.len());
        assert_eq!(buf[mode.base_len()..], data[mode.base_len()..]);
        assert_eq!(
            ReflectedPacket::decode(mode, &buf).unwrap(),
            ReflectedPacket {
                timestamp: 2,
                ..answer
            }
        );
        if mode == Mode::Authenticated {
            key.seal(&mut buf).unwrap();
            assert!(key.verify(&buf));
        }
        answered += 1;
    }
    // Both paths were exercised, not just one.
    assert!(answered > 30_000 && refused > 3_000, "{answered} {refused}");
}
