//! The marking request and reply against fixed bytes (the layout in `mod.rs`), the size rule,
//! every truncation, and random input.

use super::super::*;
use super::*;
use crate::frame::Header;

fn request() -> HopRequest {
    HopRequest {
        proto: HopProto::Mark,
        host: "10.0.2.2".into(),
        port: 7777,
        attempts: 20,
        interval_us: 10_000,
        timeout_us: 1_000_000,
        size: 0,
        tos: 46 << 2,
    }
}

fn reply() -> HopReply {
    HopReply {
        proto: HopProto::Mark,
        addr: Some("10.0.2.2:7777".parse().unwrap()),
        samples: Vec::new(),
        mtu: None,
        mark: Some(MarkReply {
            up: MarkWay {
                read: Ok(()),
                sent: Some(0xb8),
                arrived: Some(0),
                dscp: "bleached",
                ecn: "arrived",
                packets: 20,
                ce: 3,
            },
            down: MarkWay::failed("timeout"),
        }),
    }
}

/// The request message of [`request`]: as every hop request's, proto 5 and the TOS byte.
const REQUEST_MSG: [u8; 28] = [
    1, 5, 0, 20, // version, proto = mark, 20 echoes
    0, 0, 0x27, 0x10, // 10,000 µs apart
    0, 0x0F, 0x42, 0x40, // each given 1,000,000 µs
    0x1E, 0x61, 0, 0, // port 7777, size 0 (64)
    8, 0xB8, 0, 0, // host length, TOS: DSCP 46, Not-ECT; reserved
    b'1', b'0', b'.', b'0', b'.', b'2', b'.', b'2',
];

/// The reply message of [`reply`]: 24 fixed bytes and two way records.
const REPLY_MSG: [u8; 48] = [
    1, 5, 0, 2, // version, proto = mark, 2 ways
    4, 0, 0x1E, 0x61, // IPv4, reserved, port 7777
    10, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 10.0.2.2
    // up: read, sent and arrived known; sent 0xB8, arrived 0
    1, 3, 0xB8, 0, //
    3, 1, 0, 0, // DSCP bleached (3), ECN arrived (1), reserved
    0, 20, 0, 3, // 20 packets, 3 CE
    // down: failed (0) under timeout (code 4); nothing else
    0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

#[test]
fn golden_bytes_and_a_reply_no_larger_than_its_request() {
    let f = request_frame(&request(), 7, 1, 0, None).unwrap();
    // 48 + 28 + 16 = 92 bytes of message; padded to the reply's 112.
    assert_eq!(MARK_REPLY_FRAME_LEN, 112);
    assert_eq!(f.len(), MARK_REPLY_FRAME_LEN);
    let h = Header::decode(&f).unwrap();
    assert_eq!((h.frame_len, h.reply_len), (112, 112));
    assert_eq!(&f[48..76], &REQUEST_MSG);
    assert!(f[76..].iter().all(|b| *b == 0));
    assert_eq!(open_request(&f[..48], &f[48..], None).unwrap(), request());

    let r = reply_frame(&h, Ok(&reply()), None).unwrap();
    assert_eq!(r.len(), 112);
    assert_eq!(&r[48..96], &REPLY_MSG);
    assert_eq!(HopReply::decode(&REPLY_MSG).unwrap(), reply());
    assert_eq!(open_reply(&r, 1, None).unwrap().1, Ok(reply()));

    // A request cut to its own message (not padded to the reply) gets no reply.
    let mut short = h;
    short.frame_len = 92;
    assert_eq!(
        reply_frame(&short, Ok(&reply()), None),
        Err(HopError::TooLarge {
            reply: 112,
            request: 92
        })
    );
}

#[test]
fn only_a_marking_read_carries_a_tos_and_its_reply_has_both_ways() {
    // Another proto with a TOS byte is malformed, both ways of the codec.
    let udp = HopRequest {
        proto: HopProto::Udp,
        ..request()
    };
    assert_eq!(
        request_frame(&udp, 1, 1, 0, None),
        Err(HopError::BadPadding)
    );
    let mut b = REQUEST_MSG;
    b[1] = 2;
    assert_eq!(HopRequest::decode(&b), Err(HopError::BadPadding));
    b[17] = 0;
    assert!(HopRequest::decode(&b).is_ok(), "a UDP echo without one");
    // A marking reply carries ways, not samples or MTU ways; a sample reply no marking ways.
    let mut v = Vec::new();
    let mixed = HopReply {
        samples: vec![Sample::Rtt(1)],
        ..reply()
    };
    assert!(mixed.encode(&mut v).is_err());
    let no_ways = HopReply {
        mark: None,
        ..reply()
    };
    assert!(no_ways.encode(&mut v).is_err());
    let sample_with_ways = HopReply {
        proto: HopProto::Udp,
        ..reply()
    };
    assert!(sample_with_ways.encode(&mut v).is_err());
    let mut b = REPLY_MSG;
    b[3] = 3;
    assert!(matches!(
        HopReply::decode(&b),
        Err(HopError::BadCount { count: 3, .. })
    ));
    // Unknown read codes, flags, fates, non-zero reserved or unknown-but-set bytes are refused.
    for (at, v) in [
        (24, 2),
        (25, 4),
        (28, 6),
        (29, 0),
        (30, 1),
        (37, 11),
        (38, 1),
        (44, 1),
    ] {
        let mut b = REPLY_MSG;
        b[at] = v;
        assert!(HopReply::decode(&b).is_err(), "byte {at} = {v}");
    }
    let mut b = REPLY_MSG;
    b[25] = 1; // arrived not known, yet its byte is 0: fine
    let r = HopReply::decode(&b).unwrap();
    assert_eq!(r.mark.unwrap().up.arrived, None);
    b[27] = 4; // ... but not a non-zero one
    assert!(HopReply::decode(&b).is_err());
}

#[test]
fn every_fate_and_error_kind_travels() {
    for f in FATES {
        for k in ERROR_KINDS {
            let mut r = reply();
            let m = r.mark.as_mut().unwrap();
            m.up.dscp = f;
            m.up.ecn = f;
            m.up.sent = None;
            m.up.ce = u16::MAX;
            m.down = MarkWay::failed(k);
            let mut b = Vec::new();
            r.encode(&mut b).unwrap();
            assert_eq!(HopReply::decode(&b).unwrap(), r);
        }
    }
    assert_eq!(MarkWay::failed("proxy_auth").read, Err("io"));
}

#[test]
fn every_truncation_is_one_error() {
    super::super::tests::every_cut_is_an_error(&REQUEST_MSG, &REPLY_MSG);
}

/// Random and mangled bytes never panic, and what decodes re-encodes to the same reply.
#[test]
fn random_bytes_never_panic() {
    super::super::tests::mangled_copies_round_trip(&REQUEST_MSG, &REPLY_MSG);
}
