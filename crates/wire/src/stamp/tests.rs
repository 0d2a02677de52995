//! Golden bytes built by hand from RFC 8762's layouts (the module doc), NTP and PTP
//! conversions, the Error Estimate, the HMAC (its tags computed with an independent HMAC-SHA-256,
//! Python's `hmac`), and the decoder's property on random bytes.
#![allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)

use super::time::*;
use super::*;

/// 2026-11-27T01:50:37Z: Unix 1795744237 s, NTP 0xEEB3606D s.
const UNIX_S: u64 = 1_795_744_237;
const NTP_S: u64 = 0xEEB3_606D;
const S: u64 = 1_000_000_000;

/// 1 µs, synchronized: S=1, Z=0, scale 5, multiplier 135 (135 * 2^5 * 2^-32 s = 1.0058 µs).
const ONE_US_SYNCED: [u8; 2] = [0x85, 0x87];

fn sender() -> TestPacket {
    TestPacket {
        seq: 7,
        timestamp: (NTP_S << 32) | 0x8000_0000, // .5 s
        error: ErrorEstimate::from_u16(u16::from_be_bytes(ONE_US_SYNCED)),
        ssid: 0x0102,
    }
}

fn reflected() -> ReflectedPacket {
    ReflectedPacket {
        seq: 3,
        timestamp: (NTP_S << 32) | 0xC000_0000, // .75 s
        error: ErrorEstimate::from_u16(0x0001), // unsynced, NTP, 2^-32 s
        ssid: 0x0102,
        receive_timestamp: (NTP_S << 32) | 0xA000_0000, // .625 s
        sender_seq: 7,
        sender_timestamp: (NTP_S << 32) | 0x8000_0000,
        sender_error: ErrorEstimate::from_u16(u16::from_be_bytes(ONE_US_SYNCED)),
        sender_ttl: 64,
    }
}

#[rustfmt::skip]
const SENDER_OPEN: [u8; 44] = [
    0, 0, 0, 7,                                     // sequence number
    0xEE, 0xB3, 0x60, 0x6D, 0x80, 0, 0, 0,          // timestamp
    0x85, 0x87, 0x01, 0x02,                         // error estimate, SSID
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,       // MBZ (28)
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

#[rustfmt::skip]
const REFLECTED_OPEN: [u8; 44] = [
    0, 0, 0, 3,                                     // sequence number
    0xEE, 0xB3, 0x60, 0x6D, 0xC0, 0, 0, 0,          // timestamp (T3)
    0x00, 0x01, 0x01, 0x02,                         // error estimate, SSID
    0xEE, 0xB3, 0x60, 0x6D, 0xA0, 0, 0, 0,          // receive timestamp (T2)
    0, 0, 0, 7,                                     // session-sender sequence number
    0xEE, 0xB3, 0x60, 0x6D, 0x80, 0, 0, 0,          // session-sender timestamp (T1)
    0x85, 0x87, 0, 0,                               // session-sender error estimate, MBZ
    64, 0, 0, 0,                                    // session-sender TTL, MBZ
];

fn sender_auth_bytes() -> [u8; 112] {
    let mut b = [0u8; 112];
    b[0..4].copy_from_slice(&[0, 0, 0, 7]);
    b[16..24].copy_from_slice(&[0xEE, 0xB3, 0x60, 0x6D, 0x80, 0, 0, 0]);
    b[24..28].copy_from_slice(&[0x85, 0x87, 0x01, 0x02]);
    b[96..112].copy_from_slice(&[
        0x63, 0x74, 0xa0, 0x5b, 0x65, 0x07, 0xc1, 0xbd, 0x1c, 0xd7, 0x13, 0x86, 0x11, 0x12, 0xbd,
        0xee,
    ]);
    b
}

fn reflected_auth_bytes() -> [u8; 112] {
    let mut b = [0u8; 112];
    b[0..4].copy_from_slice(&[0, 0, 0, 3]);
    b[16..24].copy_from_slice(&[0xEE, 0xB3, 0x60, 0x6D, 0xC0, 0, 0, 0]);
    b[24..28].copy_from_slice(&[0x00, 0x01, 0x01, 0x02]);
    b[32..40].copy_from_slice(&[0xEE, 0xB3, 0x60, 0x6D, 0xA0, 0, 0, 0]);
    b[48..52].copy_from_slice(&[0, 0, 0, 7]);
    b[64..72].copy_from_slice(&[0xEE, 0xB3, 0x60, 0x6D, 0x80, 0, 0, 0]);
    b[72..74].copy_from_slice(&ONE_US_SYNCED);
    b[80] = 64;
    b[96..112].copy_from_slice(&[
        0x15, 0x2a, 0x2d, 0x05, 0x2d, 0x28, 0xac, 0x4a, 0x7e, 0x3e, 0xe6, 0x67, 0x2e, 0xdf, 0x88,
        0xb9,
    ]);
    b
}

fn key() -> StampKey {
    StampKey::from_hex("000102030405060708090a0b0c0d0e0f").unwrap()
}

#[test]
fn sender_packet_golden_bytes_open() {
    let mut b = [0xFFu8; 44];
    sender().encode(Mode::Open, &mut b).unwrap();
    assert_eq!(b, SENDER_OPEN);
    assert_eq!(
        TestPacket::decode(Mode::Open, &SENDER_OPEN).unwrap(),
        sender()
    );
}

#[test]
fn reflector_packet_golden_bytes_open() {
    let mut b = [0xFFu8; 44];
    reflected().encode(Mode::Open, &mut b).unwrap();
    assert_eq!(b, REFLECTED_OPEN);
    assert_eq!(
        ReflectedPacket::decode(Mode::Open, &REFLECTED_OPEN).unwrap(),
        reflected()
    );
}

#[test]
fn sender_packet_golden_bytes_authenticated() {
    let mut b = [0xFFu8; 112];
    sender().encode(Mode::Authenticated, &mut b).unwrap();
    key().seal(&mut b).unwrap();
    assert_eq!(b, sender_auth_bytes());
    assert!(key().verify(&b));
    assert_eq!(
        TestPacket::decode(Mode::Authenticated, &b).unwrap(),
        sender()
    );
}

#[test]
fn reflector_packet_golden_bytes_authenticated() {
    let mut b = [0xFFu8; 112];
    reflected().encode(Mode::Authenticated, &mut b).unwrap();
    key().seal(&mut b).unwrap();
    assert_eq!(b, reflected_auth_bytes());
    assert_eq!(
        ReflectedPacket::decode(Mode::Authenticated, &b).unwrap(),
        reflected()
    );
}

#[test]
fn hmac_covers_every_byte_before_it_and_nothing_after() {
    let good = sender_auth_bytes();
    for i in 0..112 {
        let mut b = good;
        b[i] ^= 0x01;
        assert!(
            !key().verify(&b),
            "byte {i} changed and the HMAC still verified"
        );
    }
    let mut long = good.to_vec();
    long.extend_from_slice(&[9; 20]);
    assert!(key().verify(&long), "TLVs after the base are not covered");
    let other = StampKey::from_hex("0f0e0d0c0b0a09080706050403020100").unwrap();
    assert!(!other.verify(&good));
    assert!(!key().verify(&good[..111]));
}

#[test]
fn keys_are_hex_and_long_enough() {
    assert!(StampKey::from_hex(" 000102030405060708090a0b0c0d0e0f\n").is_ok());
    assert_eq!(
        StampKey::from_hex("0001020304050607").unwrap_err(),
        auth::KeyError::TooShort(8)
    );
    assert_eq!(
        StampKey::from_hex("zz0102030405060708090a0b0c0d0e0f").unwrap_err(),
        auth::KeyError::NotHex
    );
    assert_eq!(
        StampKey::from_hex("abc").unwrap_err(),
        auth::KeyError::NotHex
    );
    assert_eq!(format!("{:?}", key()), "StampKey(<redacted>)");
}

#[test]
fn truncation_is_one_error_in_both_modes() {
    for mode in [Mode::Open, Mode::Authenticated] {
        let b = [0u8; 112];
        for n in 0..mode.base_len() {
            let want = WireError::Truncated {
                need: mode.base_len(),
                have: n,
            };
            assert_eq!(TestPacket::decode(mode, &b[..n]), Err(want.clone()));
            assert_eq!(ReflectedPacket::decode(mode, &b[..n]), Err(want));
            let mut w = vec![0u8; n];
            assert!(sender().encode(mode, &mut w).is_err());
            assert!(reflected().encode(mode, &mut w).is_err());
        }
    }
}

#[test]
fn bytes_after_the_base_are_left_alone() {
    let mut b = [0xAAu8; 60];
    sender().encode(Mode::Open, &mut b).unwrap();
    assert_eq!(&b[..44], &SENDER_OPEN);
    assert!(b[44..].iter().all(|&x| x == 0xAA));
    assert_eq!(TestPacket::decode(Mode::Open, &b).unwrap(), sender());
}

#[test]
fn send_time_is_stamped_last_and_found_again() {
    let mut b = REFLECTED_OPEN;
    let t3 = (NTP_S << 32) | 0xE000_0000;
    ReflectedPacket::set_send_time(Mode::Open, &mut b, t3, ErrorEstimate::from_u16(0x8587))
        .unwrap();
    let r = ReflectedPacket::decode(Mode::Open, &b).unwrap();
    assert_eq!((r.timestamp, r.error.to_u16()), (t3, 0x8587));
    assert_eq!(
        ReflectedPacket::timestamps(Mode::Open, &b),
        Some((t3, r.sender_timestamp))
    );
    assert_eq!(ReflectedPacket::timestamps(Mode::Open, &b[..43]), None);
}

#[test]
fn padding_tlv_header() {
    let mut b = [0xAAu8; 20];
    write_padding_header(&mut b).unwrap();
    assert_eq!(&b[..4], &[0, TLV_EXTRA_PADDING, 0, 16]);
    assert!(
        b[4..].iter().all(|&x| x == 0xAA),
        "the value is the caller's"
    );
    write_padding_header(&mut []).unwrap();
    assert!(write_padding_header(&mut [0; 3]).is_err());
    assert!(valid_size(Mode::Open, 44) && valid_size(Mode::Open, 48));
    assert!(!valid_size(Mode::Open, 43) && !valid_size(Mode::Open, 47));
    assert!(valid_size(Mode::Authenticated, 112) && !valid_size(Mode::Authenticated, 113));
}

#[test]
fn ntp_timestamps() {
    assert_eq!(unix_ns_to_ntp(0), 0x83AA_7E80_0000_0000);
    assert_eq!(
        unix_ns_to_ntp(UNIX_S * S + S / 2),
        (NTP_S << 32) | 0x8000_0000
    );
    assert_eq!(
        ntp_to_unix_ns((NTP_S << 32) | 0xA000_0000),
        UNIX_S * S + 625_000_000
    );
    // Era 1: NTP seconds wrap to 0 at 2036-02-07T06:28:16Z (Unix 2085978496).
    assert_eq!(unix_ns_to_ntp(2_085_978_496 * S), 0);
    assert_eq!(ntp_to_unix_ns(0), 2_085_978_496 * S);
    // Before 1970 (era 0, top bit set) reads as 0.
    assert_eq!(ntp_to_unix_ns(0x8000_0000_0000_0000), 0);
    // ns -> NTP -> ns is exact (2^-32 s is finer than 1 ns), including the carry edge.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ns = UNIX_S * S + x % (200 * 365 * 86_400 * S / 10);
        assert_eq!(ntp_to_unix_ns(unix_ns_to_ntp(ns)), ns, "{ns}");
    }
    for ns in [UNIX_S * S + S - 1, UNIX_S * S, 1, S - 1] {
        assert_eq!(ntp_to_unix_ns(unix_ns_to_ntp(ns)), ns, "{ns}");
    }
}

#[test]
fn ptp_timestamps() {
    let ns = UNIX_S * S + 123_456_789;
    let p = unix_ns_to_ptp(ns);
    assert_eq!(p, (UNIX_S << 32) | 123_456_789);
    assert_eq!(ptp_to_unix_ns(p), Some(ns));
    assert_eq!(ptp_to_unix_ns((UNIX_S << 32) | 1_000_000_000), None);
    let z = ErrorEstimate {
        ptp: true,
        ..ErrorEstimate::from_ns(1000, false)
    };
    assert_eq!(z.to_u16() & 0x4000, 0x4000);
    assert_eq!(z.to_unix_ns(p), Some(ns));
    assert_eq!(
        ErrorEstimate::from_ns(1000, false).to_unix_ns(unix_ns_to_ntp(ns)),
        Some(ns)
    );
}

#[test]
fn error_estimate() {
    let e = ErrorEstimate::from_ns(1_000, true);
    assert_eq!(e.to_u16().to_be_bytes(), ONE_US_SYNCED);
    assert!((e.ns().unwrap() - 1005.828).abs() < 0.01, "{:?}", e.ns());
    assert_eq!(ErrorEstimate::from_u16(0x8587), e);
    // Never below what was asked, never a zero multiplier, within 1/128 above (8 bits).
    for ns in [
        0u64,
        1,
        2,
        999,
        1_000,
        65_536,
        1_000_000,
        16_000_000_000,
        u64::MAX / 2,
    ] {
        let e = ErrorEstimate::from_ns(ns, false);
        let got = e.ns().unwrap();
        assert!(e.multiplier >= 1);
        assert!(got >= ns as f64 * (1.0 - 1e-12), "{ns}: {got}");
        if ns >= 1_000 {
            assert!(got <= ns as f64 * (1.0 + 1.0 / 127.0), "{ns}: {got}");
        }
    }
    assert_eq!(
        ErrorEstimate::from_u16(0x8500).ns(),
        None,
        "multiplier 0 is invalid"
    );
    for v in [0u16, 0xFFFF, 0x4000, 0x8587, 0x3F01] {
        assert_eq!(ErrorEstimate::from_u16(v).to_u16(), v);
    }
}
