//! Fuzz target: what comes back to `npt ping` over UDP — the framed and raw echo reply
//! decoders — and the session bookkeeping fed whatever sequence numbers those replies claim.
//! A stray or forged datagram is ignored or counted late, never a panic or a false RTT.
//! Run: `cargo fuzz run ping` from fuzz/ (needs cargo-fuzz; see bench/fuzz.sh).
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use npt_ping::net::decode;
use npt_ping::session::{Event, Session};
use npt_wire::frame::{Header, Kind};
use npt_wire::raw::RawStamp;

thread_local! {
    /// One session for the whole run, with its clock: building one allocates a ~264 KiB
    /// histogram, which would cost more than everything else here per input.
    static SESSION: RefCell<(Session, u64)> = RefCell::new((Session::new(None, 1_000, 5_000, 0), 0));
}

fuzz_target!(|data: &[u8]| {
    // The flows the decoded datagram could belong to: its own claim, and another.
    let claimed = [
        Header::decode(data).map(|h| h.flow).unwrap_or(0),
        RawStamp::decode(data).map(|s| s.flow).unwrap_or(0),
        7,
    ];
    let mut decoded = Vec::new();
    for flow in claimed {
        for raw in [false, true] {
            let Some(seq) = decode(data, raw, flow) else {
                continue;
            };
            if !raw {
                let h = Header::decode(data).unwrap();
                assert!(h.kind == Kind::EchoReply && h.flow == flow && h.seq == seq);
            } else {
                assert_eq!(RawStamp::decode(data).unwrap().flow, flow);
            }
            decoded.push(seq);
        }
    }
    if decoded.is_empty() {
        return;
    }
    SESSION.with(|cell| {
        let (s, clock) = &mut *cell.borrow_mut();
        let start = *clock;
        let first = s.on_sent(start).0;
        for t in 1..4 {
            assert_eq!(s.on_sent(start + t * 1_000).0, first + t);
        }
        let now = start + 4_500;
        let before = (s.tally.received, s.tally.late);
        // Each sequence as claimed, and folded into the window just sent (and one before it).
        for seq in decoded
            .iter()
            .flat_map(|&q| [q, (first - 1).wrapping_add(q % 6)])
        {
            match s.on_reply(seq, now) {
                Some(Event::Reply {
                    seq: got, rtt_ns, ..
                }) => {
                    assert!(got == seq && (first..first + 4).contains(&got));
                    assert!(rtt_ns <= 4_500);
                }
                Some(Event::Late { seq: got }) => assert!(got >= 1 && got < first + 4),
                Some(e) => panic!("unexpected {e:?}"),
                None => assert!(!(1..first + 4).contains(&seq), "seq {seq} ignored"),
            }
        }
        assert!(
            s.tally.received - before.0 <= 4,
            "one RTT per attempt at most"
        );
        assert!(s.tally.late - before.1 <= 2 * decoded.len() as u64);
        let _ = s.expire(now + 5_000);
        assert!(s.oldest_pending().is_none());
        *clock = now + 5_000;
    });
});
