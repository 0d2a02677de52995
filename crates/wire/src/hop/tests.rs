//! The hop codec against fixed bytes (the layouts in `hop.rs`), its seals, its size rule and
//! random input.

use super::*;
use crate::auth::{Dir, SessionKey};
use crate::frame::{Header, Kind};

fn request() -> HopRequest {
    HopRequest {
        proto: HopProto::Tcp,
        host: "10.0.3.2".into(),
        port: 7777,
        attempts: 3,
        interval_us: 200_000,
        timeout_us: 1_000_000,
        size: 0,
        tos: 0,
    }
}

fn reply() -> HopReply {
    HopReply {
        proto: HopProto::Tcp,
        addr: Some("10.0.3.2:7777".parse().unwrap()),
        samples: vec![
            Sample::Rtt(69_000_000),
            Sample::Failed("timeout"),
            Sample::Rtt(69_500_000),
        ],
        mtu: None,
        mark: None,
    }
}

/// The request message of [`request`]: 20 fixed bytes and the host.
const REQUEST_MSG: [u8; 28] = [
    1, 1, 0, 3, // version, proto = tcp, attempts = 3
    0, 0x03, 0x0D, 0x40, // interval 200,000 µs
    0, 0x0F, 0x42, 0x40, // timeout 1,000,000 µs
    0x1E, 0x61, 0, 0, // port 7777, size 0 (= 64)
    8, 0, 0, 0, // host length, reserved
    b'1', b'0', b'.', b'0', b'.', b'3', b'.', b'2',
];

/// The reply message of [`reply`]: 24 fixed bytes and three samples.
const REPLY_MSG: [u8; 60] = [
    1, 1, 0, 3, // version, proto = tcp, 3 samples
    4, 0, 0x1E, 0x61, // IPv4, reserved, port 7777
    10, 0, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 10.0.3.2
    0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x1C, 0xDB, 0x40, // answered, 69 ms
    4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // timeout (code 4)
    0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x24, 0x7C, 0x60, // answered, 69.5 ms
];

#[test]
fn request_frame_is_header_message_padding_tag() {
    let f = request_frame(&request(), 7, 1, 0, None).unwrap();
    // 48 + 28 bytes of message would be 92 with the tag; the reply of 3 samples is 124.
    assert_eq!(f.len(), 124);
    assert_eq!(f.len(), reply_frame_len(3));
    let h = Header::decode(&f).unwrap();
    assert_eq!(
        (h.kind, h.frame_len, h.reply_len, h.flow, h.seq),
        (Kind::HopRequest, 124, 124, 7, 1)
    );
    assert_eq!(&f[..6], &[0x1E, b'N', b'P', b'T', 1, 5], "kind 5");
    assert_eq!(&f[48..76], &REQUEST_MSG);
    assert!(f[76..].iter().all(|b| *b == 0), "padding, unsealed tag");
    assert_eq!(open_request(&f[..48], &f[48..], None).unwrap(), request());
    assert_eq!(HopRequest::decode(&REQUEST_MSG).unwrap(), request());
}

#[test]
fn reply_frame_golden_bytes() {
    let req = request_frame(&request(), 7, 1, 99, None).unwrap();
    let rh = Header::decode(&req).unwrap();
    let f = reply_frame(&rh, Ok(&reply()), None).unwrap();
    assert_eq!(f.len(), 48 + 60 + 16);
    assert!(f.len() <= req.len(), "never larger than the request");
    let h = Header::decode(&f).unwrap();
    assert_eq!(
        (h.kind, h.frame_len, h.status, h.seq, h.flow, h.send_ts),
        (Kind::HopReply, 124, status::OK, 1, 7, 99)
    );
    assert_eq!(&f[48..108], &REPLY_MSG);
    assert_eq!(HopReply::decode(&REPLY_MSG).unwrap(), reply());
    let (_, got) = open_reply(&f, 1, None).unwrap();
    assert_eq!(got, Ok(reply()));
    assert_eq!(open_reply(&f, 2, None).unwrap_err(), HopError::NotOurs);
}

#[test]
fn refusals_are_bare_headers_with_the_reason() {
    let req = request_frame(&request(), 7, 5, 0, None).unwrap();
    let rh = Header::decode(&req).unwrap();
    let f = reply_frame(&rh, Err(status::NOT_ALLOWED), None).unwrap();
    assert_eq!(f.len(), HEADER_LEN);
    let (h, got) = open_reply(&f, 5, None).unwrap();
    assert_eq!((h.frame_len, got), (48, Err(status::NOT_ALLOWED)));
    assert!(status::text(status::NOT_ALLOWED).contains("--hop-allow"));
}

#[test]
fn sealed_frames_open_only_under_their_key_and_direction() {
    let k = SessionKey::from_bytes(&[9; 32]);
    let other = SessionKey::from_bytes(&[8; 32]);
    let f = request_frame(&request(), 7, 1, 0, Some(&k)).unwrap();
    assert!(crate::auth::is_sealed(&f));
    k.open(Dir::ToServer, &f).unwrap();
    assert_eq!(
        open_request(&f[..48], &f[48..], Some(&k)).unwrap(),
        request()
    );
    assert!(matches!(
        open_request(&f[..48], &f[48..], Some(&other)),
        Err(HopError::Auth(AuthError::BadMac))
    ));
    // The target is covered: change one byte of the host and the body tag fails.
    let mut bad = f.clone();
    bad[48 + 20] = b'9';
    assert!(matches!(
        open_request(&bad[..48], &bad[48..], Some(&k)),
        Err(HopError::Auth(AuthError::BadMac))
    ));
    let rh = Header::decode(&f).unwrap();
    let r = reply_frame(&rh, Ok(&reply()), Some(&k)).unwrap();
    assert_eq!(open_reply(&r, 1, Some(&k)).unwrap().1, Ok(reply()));
    assert!(matches!(
        open_reply(&r, 1, Some(&other)),
        Err(HopError::Auth(_))
    ));
    // A sample's RTT changed on the way: refused, not believed.
    let mut bad = r.clone();
    bad[48 + 24 + 11] ^= 1;
    assert!(matches!(
        open_reply(&bad, 1, Some(&k)),
        Err(HopError::Auth(AuthError::BadMac))
    ));
    // A request reflected back at the client is not a reply.
    assert!(open_reply(&f, 1, Some(&k)).is_err());
    let refusal = reply_frame(&rh, Err(status::BUSY), Some(&k)).unwrap();
    assert_eq!(
        open_reply(&refusal, 1, Some(&k)).unwrap().1,
        Err(status::BUSY)
    );
    let mut forged = refusal.clone();
    forged[23] = status::OK as u8;
    assert!(
        open_reply(&forged, 1, Some(&k)).is_err(),
        "status is sealed"
    );
}

#[test]
fn a_reply_is_never_larger_than_its_request() {
    for attempts in 1..=MAX_ATTEMPTS {
        for host in ["a", "10.0.0.1", &"h".repeat(MAX_HOST_LEN)] {
            let req = HopRequest {
                attempts,
                host: host.to_string(),
                ..request()
            };
            let f = request_frame(&req, 1, 1, 0, None).unwrap();
            assert!(f.len() <= MAX_REQUEST_LEN);
            let rep = HopReply {
                samples: vec![Sample::Rtt(1); usize::from(attempts)],
                ..reply()
            };
            let h = Header::decode(&f).unwrap();
            assert!(reply_frame(&h, Ok(&rep), None).unwrap().len() <= f.len());
        }
    }
    // A request not padded to its reply's length gets no reply that long.
    let f = request_frame(&request(), 1, 1, 0, None).unwrap();
    let mut h = Header::decode(&f).unwrap();
    h.frame_len = 100;
    assert_eq!(
        reply_frame(&h, Ok(&reply()), None),
        Err(HopError::TooLarge {
            reply: 124,
            request: 100
        })
    );
}

#[test]
fn bad_requests_name_what_is_wrong() {
    let enc = |r: &HopRequest| {
        let mut v = Vec::new();
        r.encode(&mut v).map(|()| v)
    };
    for attempts in [0, MAX_ATTEMPTS + 1] {
        let r = HopRequest {
            attempts,
            ..request()
        };
        assert_eq!(enc(&r), Err(HopError::BadAttempts(attempts)));
    }
    for host in ["", "a\nb", &"h".repeat(MAX_HOST_LEN + 1)] {
        let r = HopRequest {
            host: host.into(),
            ..request()
        };
        assert_eq!(enc(&r), Err(HopError::BadHost), "{host:?}");
    }
    let mut b = REQUEST_MSG.to_vec();
    b[0] = 2;
    assert_eq!(HopRequest::decode(&b), Err(HopError::BadVersion(2)));
    let mut b = REQUEST_MSG.to_vec();
    b[1] = 9;
    assert_eq!(HopRequest::decode(&b), Err(HopError::BadProto(9)));
    let mut b = REQUEST_MSG.to_vec();
    b.push(1);
    assert_eq!(HopRequest::decode(&b), Err(HopError::BadPadding));
    let mut b = REQUEST_MSG.to_vec();
    b[17] = 1;
    assert_eq!(HopRequest::decode(&b), Err(HopError::BadPadding));
    let mut b = REPLY_MSG.to_vec();
    // Code 10 is `auth` (the target refused the agent's secret); 11 is past the vocabulary.
    b[24] = 10;
    assert_eq!(
        HopReply::decode(&b).map(|r| r.samples[0]),
        Ok(Sample::Failed("auth"))
    );
    b[24] = 11;
    assert_eq!(HopReply::decode(&b), Err(HopError::BadOutcome(11)));
    let mut b = REPLY_MSG.to_vec();
    b[4] = 5;
    assert_eq!(HopReply::decode(&b), Err(HopError::BadFamily(5)));
    let mut b = REPLY_MSG.to_vec();
    b[3] = 4;
    assert!(matches!(
        HopReply::decode(&b),
        Err(HopError::BadCount { count: 4, .. })
    ));
}

#[test]
fn every_truncation_is_one_error() {
    for n in 0..REQUEST_FIXED + 8 {
        assert!(
            matches!(
                HopRequest::decode(&REQUEST_MSG[..n]),
                Err(HopError::Wire(WireError::Truncated { .. }))
            ),
            "request cut at {n}"
        );
    }
    for n in 0..REPLY_FIXED {
        assert!(
            matches!(
                HopReply::decode(&REPLY_MSG[..n]),
                Err(HopError::Wire(WireError::Truncated { .. }))
            ),
            "reply cut at {n}"
        );
    }
}

#[test]
fn error_kinds_travel_by_name_and_strangers_as_io() {
    for k in ERROR_KINDS {
        assert_eq!(Sample::failed(k), Sample::Failed(k));
        let r = HopReply {
            samples: vec![Sample::failed(k)],
            ..reply()
        };
        let mut v = Vec::new();
        r.encode(&mut v).unwrap();
        assert_eq!(HopReply::decode(&v).unwrap(), r);
    }
    assert_eq!(Sample::failed("proxy_auth"), Sample::Failed("io"));
    let v6 = HopReply {
        addr: Some("[2001:db8::1]:443".parse().unwrap()),
        ..reply()
    };
    let mut v = Vec::new();
    v6.encode(&mut v).unwrap();
    assert_eq!(HopReply::decode(&v).unwrap(), v6);
    let none = HopReply {
        addr: None,
        samples: vec![],
        ..reply()
    };
    let mut v = Vec::new();
    none.encode(&mut v).unwrap();
    assert_eq!(HopReply::decode(&v).unwrap(), none);
}

/// The fuzz target's property on stable (`fuzz/fuzz_targets/hop.rs`): random and mutated
/// bytes never panic, and what decodes re-encodes to the same message.
#[test]
fn random_bytes_never_panic() {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let k = SessionKey::from_bytes(&[1; 32]);
    let req = request_frame(&request(), 1, 1, 0, Some(&k)).unwrap();
    let rep = reply_frame(&Header::decode(&req).unwrap(), Ok(&reply()), Some(&k)).unwrap();
    for i in 0..100_000 {
        for (seed, is_req) in [(&REQUEST_MSG[..], true), (&REPLY_MSG[..], false)] {
            let mut b = seed.to_vec();
            b.truncate((next() % (seed.len() as u64 + 8)) as usize);
            for _ in 0..(i % 4) {
                if !b.is_empty() {
                    let at = (next() as usize) % b.len();
                    b[at] = next() as u8;
                }
            }
            if is_req {
                if let Ok(r) = HopRequest::decode(&b) {
                    let mut v = Vec::new();
                    r.encode(&mut v).unwrap();
                    assert_eq!(HopRequest::decode(&v).unwrap(), r);
                }
            } else if let Ok(r) = HopReply::decode(&b) {
                let mut v = Vec::new();
                r.encode(&mut v).unwrap();
                assert_eq!(HopReply::decode(&v).unwrap(), r);
            }
        }
        // Whole sealed frames with a byte changed: never accepted, never a panic.
        for f in [&req, &rep] {
            let mut b = f.clone();
            let at = (next() as usize) % b.len();
            let was = b[at];
            b[at] = next() as u8;
            let changed = b[at] != was;
            let _ = open_reply(&b, 1, Some(&k));
            if b.len() >= HEADER_LEN {
                let got = open_request(&b[..HEADER_LEN], &b[HEADER_LEN..], Some(&k));
                if changed && at < HEADER_LEN - crate::auth::TAG_LEN {
                    // the header bytes are bound by the body tag
                    assert!(got.is_err() || f == &rep, "byte {at}");
                }
            }
        }
    }
}

/// A hop message's fixed bytes cut at every length: each cut is one error, never a panic or
/// a message (the reply's count may be what no longer fits). Shared by the protos' own tests.
pub(super) fn every_cut_is_an_error(request: &[u8], reply: &[u8]) {
    for n in 0..reply.len() {
        let got = HopReply::decode(&reply[..n]);
        assert!(
            matches!(
                got,
                Err(HopError::Wire(WireError::Truncated { .. })) | Err(HopError::BadCount { .. })
            ),
            "reply cut at {n}: {got:?}"
        );
    }
    for n in 0..request.len() {
        assert!(HopRequest::decode(&request[..n]).is_err(), "cut at {n}");
    }
}

/// Random and mangled copies of a hop message's fixed bytes never panic, and what decodes
/// re-encodes to the same message. Shared by the protos' own tests.
pub(super) fn mangled_copies_round_trip(request: &[u8], reply: &[u8]) {
    let mut m = crate::mangle::Mangler::new(0x9E37_79B9_7F4A_7C15);
    for i in 0..100_000u64 {
        let b = m.mangle(reply, reply.len() as u64 + 8, i % 5);
        if let Ok(r) = HopReply::decode(&b) {
            let mut v = Vec::new();
            r.encode(&mut v).unwrap();
            assert_eq!(HopReply::decode(&v).unwrap(), r);
        }
        let b = m.mangle(request, request.len() as u64 + 8, i % 4);
        if let Ok(r) = HopRequest::decode(&b) {
            let mut v = Vec::new();
            r.encode(&mut v).unwrap();
            assert_eq!(HopRequest::decode(&v).unwrap(), r);
        }
    }
}
