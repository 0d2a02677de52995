//! CI's short stand-in for `fuzz/fuzz_targets/ping.rs`: random and mutated UDP echo replies
//! through `net::decode` and into a ping session, on stable Rust with a fixed seed. Nothing
//! may panic; only an echo reply of our flow yields a sequence number; a forged sequence
//! number is ignored or counted late, never turned into a second RTT.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use npt_ping::net::decode;
use npt_ping::session::{Event, Session};
use npt_wire::frame::{Header, Kind};
use npt_wire::raw::RawStamp;
use rand::{rngs::StdRng, Rng, SeedableRng};

const FLOW: u32 = 7;

/// A valid reply of either kind for a small sequence number, then a few bytes changed.
fn datagram(rng: &mut StdRng) -> (Vec<u8>, bool) {
    let raw = rng.gen_range(0..2) == 0;
    let mut b = vec![0u8; 24 + rng.gen_range(0..40)];
    let seq = rng.gen_range(0..8) as u64;
    if raw {
        let s = RawStamp {
            flow: FLOW,
            seq,
            send_ts: 1,
        };
        s.encode(&mut b).unwrap();
    } else {
        b.resize(48 + rng.gen_range(0..16), 0);
        let h = Header {
            kind: Kind::EchoReply,
            flags: 0,
            frame_len: b.len() as u32,
            reply_len: 0,
            flow: FLOW,
            status: 0,
            seq,
            send_ts: 1,
            token: 0,
        };
        h.encode(&mut b).unwrap();
    }
    for _ in 0..rng.gen_range(0..3) {
        let at = rng.gen_range(0..b.len());
        b[at] = rng.gen::<u8>();
    }
    if rng.gen_range(0..8) == 0 {
        b.truncate(rng.gen_range(0..b.len()));
    }
    (b, raw)
}

#[test]
fn forged_replies_never_panic_or_count_twice() {
    let mut rng = StdRng::seed_from_u64(42);
    let mut replies = 0;
    for _ in 0..100 {
        let mut s = Session::new(Some(8), 1_000, 5_000, 0);
        for t in 0..4u64 {
            assert_eq!(s.on_sent(t * 1_000).0, t + 1);
        }
        for _ in 0..3_000 {
            let (b, raw) = datagram(&mut rng);
            let Some(seq) = decode(&b, raw, FLOW) else {
                continue;
            };
            if !raw {
                let h = Header::decode(&b).unwrap();
                assert!(h.kind == Kind::EchoReply && h.flow == FLOW && h.seq == seq);
            }
            match s.on_reply(seq, 4_500) {
                Some(Event::Reply {
                    seq: got, rtt_ns, ..
                }) => {
                    replies += 1;
                    assert!(got == seq && (1..=4).contains(&seq) && rtt_ns <= 4_500);
                }
                Some(Event::Late { seq: got }) => assert!((1..=4).contains(&got)),
                Some(e) => panic!("unexpected {e:?}"),
                None => assert!(!(1..=4).contains(&seq), "seq {seq} ignored"),
            }
            assert!(decode(&b, raw, FLOW + 1).is_none(), "another flow's reply");
        }
        assert!(s.tally.received <= 4 && s.tally.sent == 4);
    }
    assert!(replies > 300, "only {replies} replies matched");
}
