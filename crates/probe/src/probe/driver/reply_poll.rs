//! How long the UDP driver polls for a reply before it sleeps: on a short path a sleeping
//! tester's own wake-up is most of what it would add to an RTT (an idle CPU of a VM halts, and
//! waking it took ~50 µs on the development box while the reply itself came back in ~55 µs),
//! so after a send the driver keeps polling its sockets for about two smoothed RTTs, and only
//! on paths whose RTT is at most [`MAX_RTT_NS`]: a longer path is slept on at once, and the
//! polling never takes more than one part in [`SHARE`] of the run's time. The stamps do not
//! move (the RTT still ends when the receive returned); only the wait before that receive
//! does. Plain code over the run's clock, so it is tested without sockets.

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
