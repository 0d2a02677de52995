//! Fuzz target: STAMP test packets (RFC 8762) in both modes, as a reflector reads a Session-Sender's
//! packet and a sender reads a reflector's answer. Nothing from the network may panic; what
//! decodes re-encodes to the same fields; a reflector's in-place answer keeps the request's
//! length and every byte after the base; garbage never verifies under a key.
//! Run: `cargo +nightly fuzz run stamp` from the repository root (needs cargo-fuzz).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npt_wire::stamp::{ErrorEstimate, Mode, ReflectedPacket, StampKey, TestPacket};

fuzz_target!(|data: &[u8]| {
    let key = StampKey::from_bytes(&[7; 32]).unwrap();
    assert!(!key.verify(data), "garbage verified under a key");
    for mode in [Mode::Open, Mode::Authenticated] {
        let long_enough = data.len() >= mode.base_len();
        if let Ok(r) = ReflectedPacket::decode(mode, data) {
            let mut again = data.to_vec();
            r.encode(mode, &mut again).unwrap();
            assert_eq!(ReflectedPacket::decode(mode, &again).unwrap(), r);
            let _ = r.error.to_unix_ns(r.timestamp);
            let _ = r.sender_error.to_unix_ns(r.sender_timestamp);
            let _ = r.error.ns();
        }
        assert_eq!(ReflectedPacket::timestamps(mode, data).is_some(), long_enough);
        match TestPacket::decode(mode, data) {
            Ok(t) => {
                assert!(long_enough);
                // What a reflector does: answer in place, all of it but the send time.
                let mut buf = data.to_vec();
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
                let back = ReflectedPacket::decode(mode, &buf).unwrap();
                assert_eq!(back, ReflectedPacket { timestamp: 2, ..answer });
                if mode == Mode::Authenticated {
                    key.seal(&mut buf).unwrap();
                    assert!(key.verify(&buf));
                }
            }
            Err(_) => assert!(!long_enough),
        }
    }
});
