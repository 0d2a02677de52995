//! Pacing schedules: when the next packet is due. A schedule never sleeps and never reads a
//! clock; the driver asks [`Pacer::next_due`], waits however it likes, sends, and reports back
//! with [`Pacer::on_sent`]. That is what lets tests drive it with a virtual clock.
//!
//! - `Interval`: send, then wait `every` after the packet *actually* left (closed loop, like
//!   `ping`; the line tester's manual warns that `interval n ms` is not `1000/n` pps — this is that mode).
//! - `Rate`: open loop at a fixed packet rate. Packet *k* is due at `start + k / pps` whatever
//!   happened before, so a stalled sender makes up the backlog and latency is also measured
//!   from the due time (coordinated-omission correction, as wrk2 does).
//! - `Relay`: the line tester's `onrecv`. A warm-up of `warmup` packets spaced `every` apart; after
//!   that, each reply releases one new packet, so about `warmup` packets stay in flight and the
//!   rate settles at what the path sustains. A lost packet releases nothing (as in the line tester):
//!   under heavy loss the rate decays towards zero, which is itself the finding.
//! - `Tick`: a game's fixed tick. Packet *k* is due `every` after packet *k − 1* was due (no
//!   drift from late wake-ups, unlike `Interval`), but a sender that fell more than a tick
//!   behind skips the missed ticks and restarts the schedule from the late send instead of
//!   bursting the backlog (unlike `Rate`): a game client does not replay missed frames.

/// A schedule's parameters. Times in ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    Interval { every: u64 },
    Rate { pps: f64 },
    Relay { warmup: u64, every: u64 },
    Tick { every: u64 },
}

impl Pacing {
    /// Open-loop schedules have due times independent of replies (latency is corrected).
    pub fn is_open_loop(&self) -> bool {
        matches!(self, Pacing::Rate { .. })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Pacing::Interval { .. } => "interval",
            Pacing::Rate { .. } => "rate",
            Pacing::Relay { .. } => "relay",
            Pacing::Tick { .. } => "tick",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Pacer {
    pacing: Pacing,
    start: u64,
    sent: u64,
    last_actual: Option<u64>,
    warm_sent: u64,
    credits: u64,
    credit_since: u64,
    /// `Tick`: when the next tick is due.
    tick_due: u64,
}

impl Pacer {
    pub fn new(pacing: Pacing, start: u64) -> Pacer {
        Pacer {
            pacing,
            start,
            sent: 0,
            last_actual: None,
            warm_sent: 0,
            credits: 0,
            credit_since: 0,
            tick_due: start,
        }
    }

    pub fn pacing(&self) -> Pacing {
        self.pacing
    }

    /// When the next packet is due; `None` while a relay schedule waits for a reply.
    pub fn next_due(&self) -> Option<u64> {
        match self.pacing {
            Pacing::Interval { every } => Some(
                self.last_actual
                    .map_or(self.start, |t| t.saturating_add(every)),
            ),
            // NO-PANIC: a float-to-int `as` saturates (NaN gives 0), and the sum saturates too.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Pacing::Rate { pps } => Some(
                self.start
                    .saturating_add((self.sent as f64 * 1e9 / pps) as u64),
            ),
            Pacing::Tick { .. } => Some(self.tick_due),
            Pacing::Relay { .. } => {
                let warm = self.warm_due();
                let credit = (self.credits > 0).then_some(self.credit_since);
                match (warm, credit) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
        }
    }

    fn warm_due(&self) -> Option<u64> {
        match self.pacing {
            Pacing::Relay { warmup, every } if self.warm_sent < warmup => {
                Some(self.start + self.warm_sent * every)
            }
            _ => None,
        }
    }

    /// The packet due at `due` left at `actual`.
    pub fn on_sent(&mut self, due: u64, actual: u64) {
        self.sent += 1;
        self.last_actual = Some(actual);
        if let Pacing::Tick { every } = self.pacing {
            let next = due.saturating_add(every);
            // More than a tick behind: skip the missed ticks rather than burst them.
            self.tick_due = if next.saturating_add(every) < actual {
                actual
            } else {
                next
            };
        }
        if let Pacing::Relay { .. } = self.pacing {
            let use_credit = self.credits > 0
                && match self.warm_due() {
                    Some(w) => self.credit_since <= w && due == self.credit_since,
                    None => true,
                };
            if use_credit {
                self.credits -= 1;
            } else {
                self.warm_sent += 1;
            }
        }
    }

    /// A reply arrived at `now` (relay: releases one packet).
    pub fn on_reply(&mut self, now: u64) {
        if let Pacing::Relay { .. } = self.pacing {
            if self.credits == 0 {
                self.credit_since = now;
            }
            self.credits += 1;
        }
    }

    pub fn sent(&self) -> u64 {
        self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn rate_is_open_loop_and_does_not_drift() {
        let mut p = Pacer::new(Pacing::Rate { pps: 3.0 }, 1000);
        let mut dues = Vec::new();
        for _ in 0..4 {
            let d = p.next_due().unwrap();
            dues.push(d);
            // The sender is 1 s late for every packet: the schedule does not move.
            p.on_sent(d, d + 1000 * MS);
        }
        assert_eq!(
            dues,
            vec![
                1000,
                1000 + 333_333_333,
                1000 + 666_666_666,
                1000 + 1_000_000_000
            ]
        );
    }

    #[test]
    fn interval_waits_after_the_actual_send() {
        let mut p = Pacer::new(Pacing::Interval { every: 10 * MS }, 0);
        assert_eq!(p.next_due(), Some(0));
        p.on_sent(0, 3 * MS);
        assert_eq!(p.next_due(), Some(13 * MS));
    }

    #[test]
    fn relay_warms_up_then_sends_on_reply() {
        let mut p = Pacer::new(
            Pacing::Relay {
                warmup: 2,
                every: MS,
            },
            0,
        );
        assert_eq!(p.next_due(), Some(0));
        p.on_sent(0, 0);
        assert_eq!(p.next_due(), Some(MS));
        p.on_sent(MS, MS);
        assert_eq!(p.next_due(), None, "warm-up done, no reply yet");
        p.on_reply(5 * MS);
        p.on_reply(6 * MS);
        assert_eq!(p.next_due(), Some(5 * MS));
        p.on_sent(5 * MS, 6 * MS);
        assert_eq!(
            p.next_due(),
            Some(5 * MS),
            "second credit still outstanding"
        );
        p.on_sent(5 * MS, 6 * MS);
        assert_eq!(p.next_due(), None);
        assert_eq!(p.sent(), 4);
    }

    #[test]
    fn relay_reply_during_warmup_adds_to_the_window() {
        let mut p = Pacer::new(
            Pacing::Relay {
                warmup: 3,
                every: 10 * MS,
            },
            0,
        );
        p.on_sent(0, 0);
        p.on_reply(MS); // reply to the first packet before the second warm-up packet is due
        assert_eq!(p.next_due(), Some(MS));
        p.on_sent(MS, MS);
        assert_eq!(
            p.next_due(),
            Some(10 * MS),
            "warm-up continues on its own schedule"
        );
    }

    #[test]
    fn tick_keeps_its_schedule_and_skips_rather_than_bursts() {
        let mut p = Pacer::new(Pacing::Tick { every: 10 * MS }, 0);
        assert!(!Pacing::Tick { every: 1 }.is_open_loop());
        assert_eq!(p.next_due(), Some(0));
        // Woken 3 ms late: the next tick is still on the grid (not 13 ms as `Interval`).
        p.on_sent(0, 3 * MS);
        assert_eq!(p.next_due(), Some(10 * MS));
        // Up to one tick behind, the schedule catches up by one tick.
        p.on_sent(10 * MS, 29 * MS);
        assert_eq!(p.next_due(), Some(20 * MS));
        p.on_sent(20 * MS, 29 * MS);
        assert_eq!(p.next_due(), Some(30 * MS));
        // A 55 ms stall: ticks 40 and 50 are skipped, the schedule restarts at the late send.
        p.on_sent(30 * MS, 85 * MS);
        assert_eq!(p.next_due(), Some(85 * MS));
        p.on_sent(85 * MS, 85 * MS);
        assert_eq!(p.next_due(), Some(95 * MS));
        assert_eq!(p.sent(), 5);
    }
}
