//! The sans-IO half of `npt ping`: when the next attempt is due, which attempts are still
//! waiting for an answer, when each times out, and what every answer means (a reply, a late or
//! repeated one, a classified error). It takes `now` in nanoseconds and never touches a socket,
//! so its rules are tested on a virtual clock. RTTs go into an HDR histogram.

use std::collections::VecDeque;

use npt_result::error::ErrorKind;

/// Pending attempts kept at most; more would mean `timeout / interval` is absurdly large, and
/// the oldest is then given up as a timeout early rather than growing without bound.
pub const MAX_PENDING: usize = 4096;

/// What happened to one attempt (or to a reply that matched none).
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Answered: `sent` is when the attempt started (the session's clock), `rtt_ns` how long
    /// its answer took.
    Reply { seq: u64, sent: u64, rtt_ns: u64 },
    /// A classified failure: `timeout`, `refused`, `unreachable`, `tls`, `reset`, ...
    Error {
        seq: u64,
        sent: u64,
        kind: ErrorKind,
        detail: String,
    },
    /// An answer for an attempt already timed out or answered (not counted as received).
    Late { seq: u64 },
    /// The server refused the attempt (its budget, or a token it wants): neither received nor
    /// lost. `why` is the notice's status ([`npt_wire::frame::status`]); an attempt settled by
    /// the server's refused count, without a notice of its own, takes the last notice's.
    Refused { seq: u64, sent: u64, why: u32 },
}

/// Counters and the RTT histogram of a ping session: the ping's stats value, which
/// [`npt_result::stats::Stats::summarize`] turns into the result body.
pub use npt_result::stats::PingStats as Tally;

/// Sequence and timeout bookkeeping for one target.
#[derive(Debug)]
pub struct Session {
    count: Option<u64>,
    interval: u64,
    timeout: u64,
    next_seq: u64,
    next_due: u64,
    stopping: bool,
    /// (seq, sent at) in send order, so the front times out first.
    pending: VecDeque<(u64, u64)>,
    /// The last refusal's reason (a notice's status).
    refused_why: u32,
    pub tally: Tally,
}

impl Session {
    /// `count` attempts (`None`: until stopped), one every `interval_ns`, each given
    /// `timeout_ns` to answer; the first is due at `start`.
    pub fn new(count: Option<u64>, interval_ns: u64, timeout_ns: u64, start: u64) -> Session {
        Session {
            count,
            interval: interval_ns.max(1),
            timeout: timeout_ns.max(1),
            next_seq: 1,
            next_due: start,
            stopping: false,
            pending: VecDeque::new(),
            refused_why: npt_wire::frame::status::BUDGET,
            tally: Tally::default(),
        }
    }

    /// When the next attempt is due; `None` once the count is reached or the run stops.
    pub fn due(&self) -> Option<u64> {
        if self.stopping || self.count.is_some_and(|c| self.next_seq > c) {
            None
        } else {
            Some(self.next_due)
        }
    }

    /// Records an attempt started at `now` and returns its sequence number. Attempts that
    /// start late (a blocking connect ran past the due time) do not bunch up afterwards.
    pub fn on_sent(&mut self, now: u64) -> (u64, Vec<Event>) {
        let mut out = Vec::new();
        if self.pending.len() >= MAX_PENDING {
            if let Some((seq, sent)) = self.pending.pop_front() {
                out.push(self.fail(
                    seq,
                    sent,
                    ErrorKind::Timeout,
                    "given up: too many in flight".into(),
                ));
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.tally.sent += 1;
        self.pending.push_back((seq, now));
        self.next_due = (self.next_due + self.interval).max(now);
        (seq, out)
    }

    /// Attempt `seq` moved on to the host's next address at `now` (the previous one refused):
    /// its RTT counts from here, so it measures the address that answered.
    pub fn restart(&mut self, seq: u64, now: u64) {
        if let Some(p) = self.pending.iter_mut().find(|(s, _)| *s == seq) {
            p.1 = now;
        }
    }

    /// An answer for `seq` arrived at `now`.
    pub fn on_reply(&mut self, seq: u64, now: u64) -> Option<Event> {
        match self.pending.iter().position(|(s, _)| *s == seq) {
            Some(i) => {
                // `position` just found `i`, so `remove` returns the entry.
                let (_, sent) = self.pending.remove(i)?;
                let rtt_ns = now.saturating_sub(sent);
                self.tally.received += 1;
                self.tally.rtt.record(rtt_ns);
                Some(Event::Reply { seq, sent, rtt_ns })
            }
            None if seq >= 1 && seq < self.next_seq => {
                self.tally.late += 1;
                Some(Event::Late { seq })
            }
            // Not a sequence number we sent: someone else's packet, ignored.
            None => None,
        }
    }

    /// A refusal notice for `seq` arrived (status `why`), saying the server has refused
    /// `count` attempts of this flow so far, when it says. The attempt is settled as refused;
    /// so are the attempts the server refused without a notice (notices are rate-limited):
    /// the oldest still waiting that were sent before it, up to the count.
    pub fn on_notice(&mut self, seq: u64, why: u32, count: Option<u32>) -> Vec<Event> {
        self.refused_why = why;
        let mut out = Vec::new();
        if let Some(i) = self.pending.iter().position(|(s, _)| *s == seq) {
            if let Some((_, sent)) = self.pending.remove(i) {
                self.tally.refused += 1;
                out.push(Event::Refused { seq, sent, why });
            }
        }
        if let Some(c) = count {
            out.extend(self.settle_refused(seq, c));
        }
        out
    }

    /// The server's count of this flow's refused attempts, `count` (mod 2³²), as a reply to
    /// `seq` carried it: the attempts it refused without a notice that are still waiting —
    /// the oldest, sent before `seq` — are settled as refused.
    pub fn settle_refused(&mut self, seq: u64, count: u32) -> Vec<Event> {
        let total = npt_wire::reflect::unwrap_count(self.tally.refused, count);
        self.settle_refused_total(seq, total)
    }

    /// As [`Session::settle_refused`] with the whole count (a flow report's).
    pub fn settle_refused_total(&mut self, seq: u64, total: u64) -> Vec<Event> {
        let mut out = Vec::new();
        while self.tally.refused < total {
            let Some(i) = self.pending.iter().position(|(s, _)| *s < seq) else {
                break;
            };
            let Some((s, sent)) = self.pending.remove(i) else {
                break;
            };
            self.tally.refused += 1;
            out.push(Event::Refused {
                seq: s,
                sent,
                why: self.refused_why,
            });
        }
        out
    }

    /// Attempt `seq` failed with a classified error (refused, unreachable, a TLS failure...).
    pub fn on_error(&mut self, seq: u64, kind: ErrorKind, detail: String) -> Option<Event> {
        let i = self.pending.iter().position(|(s, _)| *s == seq)?;
        let (_, sent) = self.pending.remove(i)?;
        Some(self.fail(seq, sent, kind, detail))
    }

    /// Whether attempts are still waiting for an answer.
    pub fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The oldest attempt still waiting (an ICMP error on a connected UDP socket names none).
    pub fn oldest_pending(&self) -> Option<u64> {
        self.pending.front().map(|(s, _)| *s)
    }

    /// Times out every attempt that has waited `timeout` by `now`.
    pub fn expire(&mut self, now: u64) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(&(seq, sent)) = self.pending.front() {
            if now < sent + self.timeout {
                break;
            }
            self.pending.pop_front();
            out.push(self.fail(seq, sent, ErrorKind::Timeout, "no answer".into()));
        }
        out
    }

    /// The next instant something happens: an attempt is due or one times out.
    pub fn next_wake(&self) -> Option<u64> {
        let deadline = self.pending.front().map(|(_, sent)| sent + self.timeout);
        match (self.due(), deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Stop starting attempts; those in flight may still answer or time out.
    pub fn stop(&mut self) {
        self.stopping = true;
    }

    /// Gives up every attempt still waiting (a second Ctrl-C): they count as lost, not errors.
    pub fn abandon(&mut self) {
        self.stopping = true;
        self.pending.clear();
    }

    pub fn finished(&self) -> bool {
        self.due().is_none() && self.pending.is_empty()
    }

    fn fail(&mut self, seq: u64, sent: u64, kind: ErrorKind, detail: String) -> Event {
        let d = detail.clone();
        self.tally.errors.record(kind.name(), move || d);
        Event::Error {
            seq,
            sent,
            kind,
            detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn schedules_count_attempts_one_interval_apart() {
        let mut s = Session::new(Some(3), 10 * MS, 100 * MS, 0);
        assert_eq!(s.due(), Some(0));
        let (a, _) = s.on_sent(0);
        assert_eq!(s.due(), Some(10 * MS));
        let (b, _) = s.on_sent(10 * MS);
        let (c, _) = s.on_sent(20 * MS);
        assert_eq!((a, b, c), (1, 2, 3));
        assert_eq!(s.due(), None, "count reached");
        assert!(!s.finished(), "three still in flight");
        assert_eq!(s.next_wake(), Some(100 * MS), "first deadline");
    }

    #[test]
    fn replies_record_rtt_and_late_ones_do_not_count() {
        let mut s = Session::new(Some(2), 10 * MS, 50 * MS, 0);
        let (a, _) = s.on_sent(0);
        assert_eq!(
            s.on_reply(a, 3 * MS),
            Some(Event::Reply {
                seq: 1,
                sent: 0,
                rtt_ns: 3 * MS
            })
        );
        assert_eq!(
            s.on_reply(a, 4 * MS),
            Some(Event::Late { seq: 1 }),
            "duplicate"
        );
        assert_eq!(s.on_reply(99, 4 * MS), None, "never sent: ignored");
        let (b, _) = s.on_sent(10 * MS);
        let ev = s.expire(59 * MS);
        assert!(ev.is_empty());
        let ev = s.expire(60 * MS);
        assert!(
            matches!(&ev[..], [Event::Error { seq, kind, .. }] if *seq == b && kind.name() == "timeout")
        );
        assert_eq!(s.on_reply(b, 70 * MS), Some(Event::Late { seq: 2 }));
        assert!(s.finished());
        let t = &s.tally;
        assert_eq!((t.sent, t.received, t.late), (2, 1, 2));
        assert_eq!(t.errors.get("timeout"), 1);
        assert_eq!(t.loss_pct(), 50.0);
        assert_eq!(t.rtt.count(), 1);
        assert!((t.rtt.summary().p50 - 3.0).abs() < 0.01);
    }

    #[test]
    fn late_start_does_not_bunch_attempts() {
        let mut s = Session::new(None, 10 * MS, 1000 * MS, 0);
        s.on_sent(0);
        // a blocking connect took 500 ms: the next attempt is due now, not 49 times in a row
        let (seq, _) = s.on_sent(500 * MS);
        s.on_error(seq, ErrorKind::Refused, "x".into());
        assert_eq!(s.due(), Some(500 * MS));
        s.on_sent(500 * MS);
        assert_eq!(s.due(), Some(510 * MS));
    }

    #[test]
    fn errors_are_classified_and_stop_lets_in_flight_finish() {
        let mut s = Session::new(None, 10 * MS, 50 * MS, 0);
        let (a, _) = s.on_sent(0);
        assert_eq!(s.oldest_pending(), Some(a));
        assert!(matches!(
            s.on_error(a, ErrorKind::Refused, "port closed".into()),
            Some(Event::Error { .. })
        ));
        assert_eq!(
            s.on_error(a, ErrorKind::Refused, "again".into()),
            None,
            "already settled"
        );
        let (b, _) = s.on_sent(10 * MS);
        s.stop();
        assert_eq!(s.due(), None);
        assert_eq!(s.next_wake(), Some(60 * MS));
        s.on_reply(b, 12 * MS);
        assert!(s.finished());
        assert_eq!(s.tally.errors.get("refused"), 1);
        assert_eq!(s.tally.errors.total(), 1);
    }

    /// Every other attempt refused; only some refusals noticed (the server rate-limits them):
    /// the counts the notices and replies carry settle the rest, so nothing refused is lost.
    #[test]
    fn refusals_are_settled_by_notices_and_by_the_servers_count() {
        use npt_wire::frame::status;
        let mut s = Session::new(Some(8), MS, 100 * MS, 0);
        for t in 0..8 {
            s.on_sent(t * MS);
        }
        // 1 answered, 2 refused (noticed), 3 answered, 4 refused (no notice), 5 answered,
        // 6 refused (noticed: the server's third), 7 refused (no notice), 8 answered (the
        // server's count then: 4).
        s.on_reply(1, 10 * MS);
        let ev = s.on_notice(2, status::BUDGET, Some(1));
        assert_eq!(
            ev,
            vec![Event::Refused {
                seq: 2,
                sent: MS,
                why: status::BUDGET
            }]
        );
        s.on_reply(3, 12 * MS);
        s.on_reply(5, 14 * MS);
        let ev = s.on_notice(6, status::BUDGET, Some(3));
        assert_eq!(
            ev,
            vec![
                Event::Refused {
                    seq: 6,
                    sent: 5 * MS,
                    why: status::BUDGET
                },
                Event::Refused {
                    seq: 4,
                    sent: 3 * MS,
                    why: status::BUDGET
                }
            ]
        );
        s.on_reply(8, 17 * MS);
        assert_eq!(
            s.settle_refused(8, 4),
            vec![Event::Refused {
                seq: 7,
                sent: 6 * MS,
                why: status::BUDGET
            }]
        );
        assert!(s.finished());
        assert_eq!(s.settle_refused(8, 4), vec![], "settled once");
        let t = &s.tally;
        assert_eq!((t.sent, t.received, t.refused), (8, 4, 4));
        assert_eq!(t.errors.total(), 0, "a refusal is not an error");
        assert_eq!(t.loss_pct(), 0.0, "nor path loss");
    }

    #[test]
    fn pending_is_bounded() {
        let mut s = Session::new(None, 1, u64::MAX / 4, 0);
        let mut gave_up = 0;
        for t in 0..(MAX_PENDING as u64 + 10) {
            gave_up += s.on_sent(t).1.len();
        }
        assert_eq!(gave_up, 10);
        assert_eq!(s.pending.len(), MAX_PENDING);
        s.abandon();
        assert!(s.finished());
        assert_eq!(s.tally.sent, MAX_PENDING as u64 + 10);
    }
}
