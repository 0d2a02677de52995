//! The session's half of the per-packet log (`npt probe --packets`): each packet's fate as
//! soon as the session decides it, queued for the driver to take ([`Session::take_packets`])
//! and hand to the runner, which writes it. Only when the flow's config asks
//! ([`SessionConfig::log_packets`](super::SessionConfig)); otherwise none of this runs.
//!
//! A reply's line is decided when it arrives. A missing packet waits until the per-direction
//! bookkeeping places it ([`super::split`]): placements are counts per run of missing packets,
//! in sequence order, so a packet's direction is written only where the whole batch placed at
//! once went one way (an isolated loss, an outage that was all up …) — never guessed. Refusals
//! are per packet where the far end's notice named it; a batch that mixes refusals the far end
//! only counted with path loss writes `refused_or_lost`.
//!
//! Memory is bounded: at most [`MAX_WAITING`] missing packets wait for a placement (a longer
//! outage writes its oldest as `lost`, direction unknown), and the queue is emptied by the
//! driver after every step.

use std::collections::VecDeque;

use npt_result::packets::{Direction, Fate, PacketLine};

use super::split::Placed;

/// Missing packets held for their placement at most.
pub(super) const MAX_WAITING: usize = 1 << 16;

/// A packet whose loss timeout passed, waiting to be placed.
#[derive(Clone, Copy, Debug)]
struct Missing {
    seq: u64,
    sent: u64,
    /// The far end's notice named it refused.
    noticed: bool,
}

#[derive(Debug, Default)]
pub(super) struct Log {
    flow: u32,
    /// Decided lines (`sent_ns` on the session clock), for the driver.
    ready: VecDeque<PacketLine>,
    waiting: VecDeque<Missing>,
    /// Packets at the front of the missing sequence written already (the cap pushed them out):
    /// their placements are skipped.
    written_ahead: u64,
}

impl Log {
    pub(super) fn new(flow: u32) -> Log {
        Log {
            flow,
            ..Log::default()
        }
    }

    fn line(&self, seq: u64, sent: Option<u64>, fate: Fate) -> PacketLine {
        let mut l = PacketLine::new(seq, fate);
        l.flow = Some(self.flow);
        l.sent_ns = sent;
        l
    }

    /// A reply decided packet `seq`'s fate (`received`, `late`, `duplicate`).
    pub(super) fn reply(
        &mut self,
        seq: u64,
        sent: Option<u64>,
        fate: Fate,
        rtt: Option<u64>,
        direction: Option<Direction>,
    ) {
        let mut l = self.line(seq, sent, fate);
        l.rtt_ns = rtt;
        l.direction = direction;
        self.ready.push_back(l);
    }

    /// Packet `seq`, sent at `sent`, is missing; `noticed`: the far end said it refused it.
    pub(super) fn missing(&mut self, seq: u64, sent: u64, noticed: bool) {
        if self.waiting.len() >= MAX_WAITING {
            if let Some(m) = self.waiting.pop_front() {
                let fate = if m.noticed { Fate::Refused } else { Fate::Lost };
                let l = self.line(m.seq, Some(m.sent), fate);
                self.ready.push_back(l);
                self.written_ahead += 1;
            }
        }
        self.waiting.push_back(Missing { seq, sent, noticed });
    }

    /// The placements made in one step, in sequence order: the missing packets they cover,
    /// from the front, get their lines.
    pub(super) fn placed(&mut self, batch: &[Placed]) {
        let (mut refused, mut up, mut down, mut unknown) = (0u64, 0u64, 0u64, 0u64);
        for p in batch {
            refused += p.refused;
            up += p.up;
            down += p.down;
            unknown += p.unknown;
        }
        let mut n = refused + up + down + unknown;
        let skip = n.min(self.written_ahead);
        self.written_ahead -= skip;
        n -= skip;
        let take = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(self.waiting.len());
        let packets: Vec<Missing> = self.waiting.drain(..take).collect();
        let noticed = packets.iter().filter(|m| m.noticed).count() as u64;
        let lost = up + down + unknown;
        let direction = match (up, down) {
            (u, 0) if u == lost && u > 0 => Some(Direction::Up),
            (0, d) if d == lost && d > 0 => Some(Direction::Down),
            _ => None,
        };
        // The packets the far end did not name: refused by its count only, or lost.
        let unnamed = packets.len() as u64 - noticed;
        let refused_unnamed = refused.saturating_sub(noticed);
        for m in packets {
            let fate = if m.noticed {
                Fate::Refused
            } else if refused_unnamed == 0 {
                Fate::Lost
            } else if refused_unnamed >= unnamed {
                Fate::Refused
            } else {
                Fate::RefusedOrLost
            };
            let mut l = self.line(m.seq, Some(m.sent), fate);
            if fate == Fate::Lost {
                l.direction = direction;
            }
            self.ready.push_back(l);
        }
    }

    /// The flow is over: what still waits was never placed (lost, direction unknown).
    pub(super) fn close(&mut self) {
        while let Some(m) = self.waiting.pop_front() {
            let fate = if m.noticed { Fate::Refused } else { Fate::Lost };
            let l = self.line(m.seq, Some(m.sent), fate);
            self.ready.push_back(l);
        }
    }

    /// The lines decided since the last call.
    pub(super) fn take(&mut self) -> Vec<PacketLine> {
        self.ready.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(refused: u64, up: u64, down: u64, unknown: u64) -> Placed {
        Placed {
            tag: 0,
            refused,
            up,
            down,
            unknown,
        }
    }

    fn fates(log: &mut Log) -> Vec<(u64, Fate, Option<Direction>)> {
        log.take()
            .into_iter()
            .map(|l| (l.seq, l.fate, l.direction))
            .collect()
    }

    #[test]
    fn a_batch_that_went_one_way_says_so_and_a_mixed_one_does_not() {
        let mut log = Log::new(1);
        log.missing(3, 30, false);
        log.placed(&[placed(0, 0, 1, 0)]);
        assert_eq!(fates(&mut log), [(3, Fate::Lost, Some(Direction::Down))]);
        log.missing(5, 50, false);
        log.missing(6, 60, false);
        log.placed(&[placed(0, 1, 0, 0), placed(0, 0, 1, 0)]);
        assert_eq!(
            fates(&mut log),
            [(5, Fate::Lost, None), (6, Fate::Lost, None)],
            "one up and one down: which was which is not known"
        );
    }

    #[test]
    fn refusals_are_per_packet_only_where_a_notice_named_them() {
        let mut log = Log::new(1);
        log.missing(1, 10, true);
        log.missing(2, 20, false);
        log.placed(&[placed(1, 1, 0, 0)]);
        assert_eq!(
            fates(&mut log),
            [
                (1, Fate::Refused, None),
                (2, Fate::Lost, Some(Direction::Up))
            ]
        );
        log.missing(3, 30, false);
        log.missing(4, 40, false);
        log.placed(&[placed(1, 1, 0, 0)]);
        assert_eq!(
            fates(&mut log),
            [
                (3, Fate::RefusedOrLost, None),
                (4, Fate::RefusedOrLost, None)
            ]
        );
    }

    #[test]
    fn waiting_is_bounded_and_the_rest_is_written_at_the_end() {
        let mut log = Log::new(2);
        for seq in 0..(MAX_WAITING as u64 + 2) {
            log.missing(seq, seq, false);
        }
        let early = log.take();
        assert_eq!(early.len(), 2, "the two oldest written without waiting");
        assert_eq!(early[0].flow, Some(2));
        // A placement of the first three: two were written already, the third is placed now.
        log.placed(&[placed(0, 3, 0, 0)]);
        assert_eq!(fates(&mut log), [(2, Fate::Lost, Some(Direction::Up))]);
        log.close();
        assert_eq!(log.take().len(), MAX_WAITING - 1);
    }
}
