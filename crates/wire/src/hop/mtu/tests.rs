//! The MTU request and reply against fixed bytes (the layout in `mod.rs`), the size rule, every
//! truncation, and random input.

use super::super::*;
use super::*;
use crate::frame::Header;

fn request() -> HopRequest {
    HopRequest {
        proto: HopProto::Mtu,
        host: "10.0.2.2".into(),
        port: 7777,
        attempts: 1,
        interval_us: 0,
        timeout_us: 20_000_000,
        size: 0,
        tos: 0,
    }
}

fn reply() -> HopReply {
    HopReply {
        proto: HopProto::Mtu,
        addr: Some("10.0.2.2:7777".parse().unwrap()),
        samples: Vec::new(),
        mark: None,
        mtu: Some(MtuReply {
            up: MtuWay {
                verdict: Ok("icmp"),
                flags: SETTLED,
                limit_mtu: Some(1400),
                largest_datagram: Some(1372),
                smallest_lost: Some(1373),
                largest_fragment: None,
                sent: 14,
                answered: 11,
                lost_sizes: 2,
                router: Some("10.0.1.2".parse().unwrap()),
            },
            down: MtuWay::failed("timeout"),
        }),
    }
}

/// The request message of [`request`]: as every hop request's, proto 4.
const REQUEST_MSG: [u8; 28] = [
    1, 4, 0, 1, // version, proto = mtu, one search
    0, 0, 0, 0, // interval: unused (0)
    0x01, 0x31, 0x2D, 0x00, // the search's bound, 20,000,000 µs
    0x1E, 0x61, 0, 0, // port 7777, size 0 (the agent's default)
    8, 0, 0, 0, // host length, reserved
    b'1', b'0', b'.', b'0', b'.', b'2', b'.', b'2',
];

/// The reply message of [`reply`]: 24 fixed bytes and two way records.
const REPLY_MSG: [u8; 88] = [
    1, 4, 0, 2, // version, proto = mtu, 2 ways
    4, 0, 0x1E, 0x61, // IPv4, reserved, port 7777
    10, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 10.0.2.2
    // up: icmp (code 2), settled, MTU 1400; 1372 crossed, 1373 lost
    2, 1, 0x05, 0x78, 0x05, 0x5C, 0x05, 0x5D, //
    0, 0, 4, 2, 0, 14, 0, 11, // no fragment, router IPv4, 2 sizes lost; 14 sent, 11 answered
    10, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // router 10.0.1.2
    // down: failed (0) under timeout (code 4); nothing else
    0, 4, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

#[test]
fn golden_bytes_and_a_reply_no_larger_than_its_request() {
    let f = request_frame(&request(), 7, 1, 0, None).unwrap();
    // 48 + 28 + 16 = 92 bytes of message; padded to the reply's 152.
    assert_eq!(f.len(), MTU_REPLY_FRAME_LEN);
    assert_eq!(MTU_REPLY_FRAME_LEN, 152);
    let h = Header::decode(&f).unwrap();
    assert_eq!((h.frame_len, h.reply_len), (152, 152));
    assert_eq!(&f[48..76], &REQUEST_MSG);
    assert!(f[76..].iter().all(|b| *b == 0));
    assert_eq!(open_request(&f[..48], &f[48..], None).unwrap(), request());

    let r = reply_frame(&h, Ok(&reply()), None).unwrap();
    assert_eq!(r.len(), 152);
    assert_eq!(&r[48..136], &REPLY_MSG);
    assert_eq!(HopReply::decode(&REPLY_MSG).unwrap(), reply());
    assert_eq!(open_reply(&r, 1, None).unwrap().1, Ok(reply()));

    // A request cut to its own message (not padded to the reply) gets no reply.
    let mut short = h;
    short.frame_len = 92;
    assert_eq!(
        reply_frame(&short, Ok(&reply()), None),
        Err(HopError::TooLarge {
            reply: 152,
            request: 92
        })
    );
}

#[test]
fn an_mtu_request_is_one_search_and_its_reply_has_both_ways() {
    let two = HopRequest {
        attempts: 2,
        ..request()
    };
    assert_eq!(
        request_frame(&two, 1, 1, 0, None),
        Err(HopError::BadAttempts(2))
    );
    let mut b = REQUEST_MSG;
    b[3] = 3;
    assert_eq!(HopRequest::decode(&b), Err(HopError::BadAttempts(3)));
    // An MTU reply carries ways, not samples; a sample reply no ways.
    let mut v = Vec::new();
    let mixed = HopReply {
        samples: vec![Sample::Rtt(1)],
        ..reply()
    };
    assert!(mixed.encode(&mut v).is_err());
    let no_ways = HopReply {
        mtu: None,
        ..reply()
    };
    assert!(no_ways.encode(&mut v).is_err());
    let mut b = REPLY_MSG;
    b[3] = 3;
    assert!(matches!(
        HopReply::decode(&b),
        Err(HopError::BadCount { count: 3, .. })
    ));
    // Unknown verdicts, flags and families are refused.
    for (at, v) in [(24, 7), (25, 4), (24 + 10, 5), (56, 9)] {
        let mut b = REPLY_MSG;
        b[at] = v;
        assert!(HopReply::decode(&b).is_err(), "byte {at} = {v}");
    }
}

#[test]
fn every_verdict_and_error_kind_travels() {
    for v in VERDICTS {
        for k in ERROR_KINDS {
            let mut r = reply();
            let m = r.mtu.as_mut().unwrap();
            m.up.verdict = Ok(v);
            m.up.flags = SETTLED | CAPPED_BY_UP;
            m.up.router = Some("2001:db8::1".parse().unwrap());
            m.down = MtuWay::failed(k);
            let mut b = Vec::new();
            r.encode(&mut b).unwrap();
            assert_eq!(HopReply::decode(&b).unwrap(), r);
        }
    }
    assert_eq!(MtuWay::failed("proxy_auth").verdict, Err("io"));
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
