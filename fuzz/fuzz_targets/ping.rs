//! Fuzz target: what comes back to `npt ping` over UDP — the framed and raw echo reply
//! decoders — and the session bookkeeping fed whatever sequence numbers those replies claim.
//! A stray or forged datagram is ignored or counted late, never a panic or a false RTT.
//! Run: `cargo fuzz run ping` from fuzz/ (needs cargo-fuzz; see bench/fuzz.sh).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npt_ping::net::decode;
use npt_ping::session::{Event, Session};
use npt_wire::frame::{Header, Kind};
use npt_wire::raw::RawStamp;

fuzz_target!(|data: &[u8]| {
    // The flows the decoded datagram could belong to: its own claim, and another.
    let claimed = [
        Header::decode(data).map(|h| h.flow).unwrap_or(0),
        RawStamp::decode(data).map(|s| s.flow).unwrap_or(0),
        7,
    ];
    let mut s = Session::new(Some(8), 1_000, 5_000, 0);
    for t in 0..4u64 {
        let (seq, _) = s.on_sent(t * 1_000);
        assert_eq!(seq, t + 1);
    }
    for flow in claimed {
        for raw in [false, true] {
            let Some(seq) = decode(data, raw, flow) else {
                continue;
            };
            if !raw {
                let h = Header::decode(data).unwrap();
                assert!(h.kind == Kind::EchoReply && h.flow == flow && h.seq == seq);
            }
            match s.on_reply(seq, 4_500) {
                Some(Event::Reply { seq: got, rtt_ns }) => {
                    assert!((1..=4).contains(&got) && got == seq);
                    assert!(rtt_ns <= 4_500);
                }
                Some(Event::Late { seq: got }) => assert!((1..=4).contains(&got)),
                Some(e) => panic!("unexpected {e:?}"),
                None => assert!(!(1..=4).contains(&seq)),
            }
        }
    }
    let t = &s.tally;
    assert!(t.received + t.late <= 6 && t.received <= 4);
    let _ = s.expire(u64::MAX / 2);
    assert!(s.oldest_pending().is_none());
});
