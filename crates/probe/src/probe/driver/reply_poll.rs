//! How long the UDP driver polls for a reply before it sleeps: on a short path a sleeping
//! tester's own wake-up is most of what it would add to an RTT (an idle CPU of a VM halts, and
//! waking it took ~50 µs on the development box while the reply itself came back in ~55 µs),
//! so after a send the driver keeps polling its sockets for about two smoothed RTTs, and only
//! on paths whose RTT is at most [`MAX_RTT_NS`]: a longer path is slept on at once, and the
//! polling never takes more than one part in [`SHARE`] of the run's time. The stamps do not
//! move (the RTT still ends when the receive returned); only the wait before that receive
//! does. Plain code over the run's clock, so it is tested without sockets.
//!
//! The share is per run, and one process may run many at once (a monitor runs fifty probe
//! rounds side by side, which polled up to five CPUs' worth between them): a run polls only
//! while it holds the process's [`PollGate`], which lets [`MAX_POLLING_RUNS`] poll at a time;
//! the others sleep on their sockets as a long path's runs do.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Paths whose smoothed RTT is above this are slept on at once: polling for them would spend a
/// CPU on a wait the wake-up is a small part of.
pub const MAX_RTT_NS: u64 = 200_000;
/// The polling may take at most `1 / SHARE` of the time (it earns `elapsed / SHARE`).
pub const SHARE: u64 = 10;
/// Polling time saved up at most (so a long quiet stretch does not buy a long busy one).
pub const BUDGET_CAP_NS: u64 = 2_000_000;
/// Polling starts or goes on only with at least this much budget left: a pass charged after it
/// ran must not keep a budget that earns a little each pass alive forever.
pub const MIN_BUDGET_NS: u64 = 20_000;

/// How many runs of one process may poll for replies at once.
pub const MAX_POLLING_RUNS: usize = 1;

/// The runs polling now, of at most `max`.
#[derive(Debug)]
pub struct PollGate {
    polling: AtomicUsize,
    max: usize,
}

/// The process's gate.
pub static GATE: PollGate = PollGate::new(MAX_POLLING_RUNS);

impl PollGate {
    pub const fn new(max: usize) -> PollGate {
        PollGate {
            polling: AtomicUsize::new(0),
            max,
        }
    }
}

/// A run's turn at a [`PollGate`]: held while it polls, given back when it sleeps or ends.
#[derive(Debug)]
pub struct PollTurn {
    gate: &'static PollGate,
    held: bool,
}

impl PollTurn {
    pub fn new(gate: &'static PollGate) -> PollTurn {
        PollTurn { gate, held: false }
    }

    /// Whether this run may poll now (taking a turn if it has none).
    pub fn take(&mut self) -> bool {
        if !self.held {
            let max = self.gate.max;
            self.held = self
                .gate
                .polling
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok();
        }
        self.held
    }

    pub fn give_back(&mut self) {
        if self.held {
            self.gate.polling.fetch_sub(1, Ordering::AcqRel);
            self.held = false;
        }
    }
}

impl Drop for PollTurn {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[derive(Clone, Debug, Default)]
pub struct ReplyPoll {
    /// Smoothed RTT of on-time replies (ns; 7/8 old + 1/8 new), none before the first.
    rtt: Option<u64>,
    /// Poll until this time (the run's clock); 0 = sleep.
    until: u64,
    /// Polling time left.
    budget: u64,
    /// When the budget was last topped up, and when the last poll pass began (charged at the
    /// next decision).
    refilled_at: u64,
    polling_since: Option<u64>,
}

impl ReplyPoll {
    /// An on-time reply and its RTT.
    pub fn replied(&mut self, rtt: u64) {
        self.rtt = Some(match self.rtt {
            None => rtt,
            Some(s) => s - s / 8 + rtt / 8,
        });
    }

    /// Packets left at `now`: poll for their replies for about two RTTs if the path is short.
    pub fn sent(&mut self, now: u64) {
        if let Some(r) = self.rtt.filter(|r| *r <= MAX_RTT_NS) {
            self.until = self.until.max(now.saturating_add(2 * r));
        }
    }

    /// Nothing is in flight any more: no reply to poll for.
    pub fn settled(&mut self) {
        self.until = 0;
    }

    /// [`ReplyPoll::poll_now`] said poll but the run may not (another run holds the gate):
    /// it sleeps, and the sleep is not charged as polling.
    pub fn declined(&mut self) {
        self.polling_since = None;
    }

    /// At `now`, with the next due time `deadline`: poll again (true) or sleep (false).
    pub fn poll_now(&mut self, now: u64) -> bool {
        if let Some(since) = self.polling_since.take() {
            self.budget = self.budget.saturating_sub(now.saturating_sub(since));
        }
        let earned = now.saturating_sub(self.refilled_at) / SHARE;
        if earned > 0 {
            self.budget = (self.budget + earned).min(BUDGET_CAP_NS);
            self.refilled_at = now;
        }
        if now >= self.until || self.budget < MIN_BUDGET_NS {
            self.until = 0;
            return false;
        }
        self.polling_since = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    /// Drives 1,000 pps on a path of `rtt`: a send every ms, the reply `rtt` later, a poll
    /// pass every µs while the driver polls. Returns (replies seen while polling, ns polled).
    fn run(rtt: u64, packets: u64) -> (u64, u64) {
        let mut p = ReplyPoll::default();
        let (mut caught, mut polled) = (0, 0);
        for k in 0..packets {
            let sent = 10 * MS + k * MS;
            p.sent(sent);
            let mut t = sent;
            let arrival = sent + rtt;
            let mut was_polling = false;
            while p.poll_now(t) {
                was_polling = true;
                if t >= arrival {
                    break;
                }
                t += US;
                polled += US;
            }
            if was_polling && t >= arrival {
                caught += 1;
            }
            p.replied(rtt);
            p.settled();
        }
        (caught, polled)
    }

    #[test]
    fn a_short_path_is_polled_until_each_reply() {
        let (caught, polled) = run(50 * US, 1000);
        // The first packet has no RTT yet; every later reply was polled for.
        assert_eq!(caught, 999);
        // About the RTT per packet: 5 % of the time at 1,000 pps.
        assert!(polled <= 1000 * 51 * US, "{polled}");
    }

    #[test]
    fn the_gate_lets_its_number_of_runs_poll_at_once() {
        static TWO: PollGate = PollGate::new(2);
        let (mut a, mut b, mut c) = (
            PollTurn::new(&TWO),
            PollTurn::new(&TWO),
            PollTurn::new(&TWO),
        );
        assert!(a.take() && a.take() && b.take());
        assert!(!c.take(), "a third run polls while two do");
        b.give_back();
        assert!(c.take());
        drop(a);
        assert!(b.take(), "a run that ended keeps its turn");
        assert!(!PollTurn::new(&TWO).take());
    }

    #[test]
    fn a_declined_poll_is_not_charged() {
        let mut p = ReplyPoll::default();
        p.replied(50 * US);
        p.sent(20 * MS);
        let budget = |p: &ReplyPoll| p.budget;
        assert!(p.poll_now(20 * MS));
        p.declined();
        let before = budget(&p);
        // Slept 10 µs instead (the gate said no): the budget only earns.
        p.poll_now(20 * MS + 10 * US);
        assert!(budget(&p) >= before, "{} < {before}", budget(&p));
    }

    #[test]
    fn a_long_path_is_slept_on() {
        assert_eq!(run(5 * MS, 100), (0, 0));
        assert_eq!(run(MAX_RTT_NS + 1, 100), (0, 0));
    }

    #[test]
    fn polling_takes_at_most_its_share() {
        // A reply that never comes (lost every time) on a path that was short: each poll
        // runs to its end, and the budget bounds the total.
        let mut p = ReplyPoll::default();
        p.replied(150 * US);
        let mut polled = 0;
        let end = 1000 * MS;
        let mut t = 0;
        while t < end {
            p.sent(t);
            let next = t + 200 * US;
            while t < next && p.poll_now(t) {
                t += US;
                polled += US;
            }
            t = next;
        }
        assert!(polled <= end / SHARE + BUDGET_CAP_NS, "{polled}");
        assert!(polled >= end / SHARE / 2, "{polled}");
    }
}
