//! A fake link for session tests: each packet's fate by its sequence number (dropped,
//! duplicated, delayed, corrupted), a far end that answers as `npt serve` or as a plain echo,
//! a driver on a virtual clock ([`run`]) and the invariants every run must keep
//! ([`check_invariants`]). No sockets, no sleeping. Shared by every `session_*_tests` module.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use npt_wire::frame::{self, Kind};
use npt_wire::{Fill, Pacing};

use super::session::*;

pub(super) const MS: u64 = 1_000_000;

/// What the fake link does to the packet with a given sequence number.
#[derive(Clone, Copy, Default)]
pub(super) struct Fate {
    pub(super) drop: bool,
    pub(super) copies: u32,
    pub(super) extra_delay: u64,
    pub(super) corrupt: bool,
}

pub(super) struct FakeLink {
    delay: u64,
    fate: Box<dyn Fn(u64) -> Fate>,
    pub(super) queue: BinaryHeap<Reverse<(u64, u64, Vec<u8>)>>,
    n: u64,
    /// A plain echo at the far end: the request comes back unchanged.
    pub(super) plain: bool,
}

impl FakeLink {
    pub(super) fn new(delay: u64, fate: impl Fn(u64) -> Fate + 'static) -> FakeLink {
        FakeLink {
            delay,
            fate: Box::new(fate),
            queue: BinaryHeap::new(),
            n: 0,
            plain: false,
        }
    }

    /// The echo server at the far end flips the kind, as `npt serve` does (unless `plain`).
    pub(super) fn send(&mut self, now: u64, bytes: &[u8], seq: u64) {
        let f = (self.fate)(seq);
        if f.drop {
            return;
        }
        let mut reply = bytes.to_vec();
        if frame::is_framed(&reply) && !self.plain {
            frame::set_kind_status(&mut reply, Kind::EchoReply, 0);
        }
        if f.corrupt {
            let last = reply.len() - 1;
            reply[last] ^= 0xFF;
        }
        for _ in 0..f.copies.max(1) {
            self.n += 1;
            self.queue.push(Reverse((
                now + self.delay + f.extra_delay,
                self.n,
                reply.clone(),
            )));
        }
    }

    pub(super) fn next_time(&self) -> Option<u64> {
        self.queue.peek().map(|Reverse((t, _, _))| *t)
    }
}

pub(super) fn cfg(pacing: Pacing) -> SessionConfig {
    SessionConfig {
        flow: 1,
        framing: Framing::Framed { token: 0 },
        size: 64,
        fill: Fill::Random,
        fill_seed: 99,
        verify: true,
        pacing,
        loss_timeout: 1000 * MS,
        count: Some(1000),
        send_until: None,
        start: 0,
        stage: Stage::Time(100 * MS),
        behind_threshold: MS,
        history: 1 << 16,
        auth: None,
        stamp_key: None,
        phases: None,
        reflect: Reflect::Off,
        clock: ClockSync::None,
        log_packets: false,
        mark: None,
    }
}

/// Drives a session against a link on a virtual clock. `stall` is a window of time during
/// which the sender does not get to send (a frozen client).
pub(super) fn run(
    s: &mut Session,
    link: &mut FakeLink,
    stall: Option<(u64, u64)>,
) -> Vec<Interval> {
    let mut now = 0u64;
    let mut buf = vec![0u8; 2048];
    let mut intervals = Vec::new();
    for _ in 0..10_000_000 {
        let stalled = matches!(stall, Some((a, b)) if now >= a && now < b);
        if !stalled {
            while let Some(n) = s.poll_transmit(now, &mut buf) {
                let seq = frame::Header::decode(&buf[..n]).unwrap().seq;
                link.send(now, &buf[..n], seq);
            }
        }
        while matches!(link.next_time(), Some(t) if t <= now) {
            let Reverse((_, _, bytes)) = link.queue.pop().unwrap();
            s.handle_reply(now, &bytes);
        }
        s.handle_timeout(now);
        while let Some(iv) = s.poll_interval() {
            intervals.push(iv);
        }
        if s.is_done() {
            return intervals;
        }
        let mut next = s.poll_timeout().unwrap_or(u64::MAX);
        if let Some(t) = link.next_time() {
            next = next.min(t);
        }
        if let Some((a, b)) = stall {
            if now < b && next >= a && now < a {
                next = next.min(a);
            }
            if stalled {
                next = next
                    .max(b)
                    .min(link.next_time().unwrap_or(u64::MAX))
                    .max(now + 1);
                if next > b {
                    next = b;
                }
            }
        }
        assert!(next != u64::MAX, "session neither done nor waiting");
        now = next.max(now);
    }
    panic!("virtual run did not finish");
}

pub(super) fn check_invariants(t: &Totals, intervals: &[Interval]) {
    assert_eq!(
        t.packets.received + t.packets.lost,
        t.packets.sent,
        "received + lost == sent"
    );
    assert!(t.packets.late <= t.packets.lost);
    let sent: u64 = intervals.iter().map(|i| i.packets.sent).sum();
    let lost: u64 = intervals.iter().map(|i| i.packets.lost).sum();
    let recv: u64 = intervals.iter().map(|i| i.packets.received).sum();
    assert_eq!(
        (sent, lost, recv),
        (t.packets.sent, t.packets.lost, t.packets.received),
        "intervals add up"
    );
    for iv in intervals {
        assert!(
            iv.packets.received + iv.packets.lost == iv.packets.sent,
            "interval {} resolved",
            iv.index
        );
    }
}
