//! How far a paced UDP sender (the data of an upload, the pulls of a download) fell behind its
//! schedule, and how much of that the path can have felt. Pure: fed each send's lateness
//! (actual − due, ns) and the flow's round trips.
//!
//! An open-loop sender that is late catches up at once, so a stall of the tester's process
//! (a loaded box keeping it off the CPU) is a run of late sends: a *stall*, whose length is its
//! largest lateness. During a stall the path is offered nothing. A bottleneck's queue holds
//! work for as long as its queueing delay, which the flow's own round trips show: the median
//! of the last [`RECENT`] before the stall began, less the smallest of all. Each is timed by
//! the kernel's receive stamp, so the tester's lateness in reading a reply is not in it; a
//! stall that fell between stamping a request and sending it is (that round trip reads long),
//! which is why one round trip alone is not trusted, and why the estimate is the one from the
//! last send on time, before any reply the stall delayed. (While the queue fills at the start
//! the median lags it by a round trip, and before the first reply nothing covers a stall:
//! both only count more.) A stall shorter than the queue leaves the
//! bottleneck busy; of a longer one only the rest can idle it. So the delivered rate can read low by at most the stalls'
//! *uncovered* time ([`Lateness::uncovered_ns`]) over the run, and the result flags a run where
//! that passes 1 % (`summary.udp.tester_limited`, [`npt_result::bulk::tester_limited`]): the
//! tester, not the path, may have set the figure.

use npt_stats::Histogram;

/// A send later than this is behind schedule (the tester's threshold everywhere).
pub const BEHIND_NS: u64 = 1_000_000;
/// Round trips the queue estimate takes the median of (a UDP upload asks for a report every
/// 20 ms: the last 60 ms).
pub const RECENT: usize = 3;

/// A sender's lateness so far.
#[derive(Clone, Debug, Default)]
pub struct Lateness {
    /// Every send's lateness, ns.
    pub hist: Histogram,
    /// Sends later than [`BEHIND_NS`].
    pub behind: u64,
    /// Stalls so far, the open one included.
    pub stalls: u64,
    /// The closed stalls' time beyond the queue that covered each, ns.
    uncovered_ns: u64,
    /// The open stall's length so far (0: on time), and the queue when it began.
    open_ns: u64,
    open_queue_ns: u64,
    /// The queue as of the last send on time.
    on_time_queue_ns: u64,
    /// The last [`RECENT`] round trips (a ring) and the smallest of all, ns.
    recent: [u64; RECENT],
    seen: usize,
    min_rtt: Option<u64>,
}

impl Lateness {
    /// One send that left `late_ns` after it was due.
    pub fn on_send(&mut self, late_ns: u64) {
        self.hist.record(late_ns);
        if late_ns > BEHIND_NS {
            self.behind += 1;
            if self.open_ns == 0 {
                self.stalls += 1;
                self.open_queue_ns = self.on_time_queue_ns;
            }
            self.open_ns = self.open_ns.max(late_ns);
        } else {
            if self.open_ns > 0 {
                self.uncovered_ns = self.uncovered_ns.saturating_add(self.open_uncovered());
                self.open_ns = 0;
            }
            self.on_time_queue_ns = self.queue_ns();
        }
    }

    /// One round trip of the flow (a report's, a pull's).
    pub fn on_rtt(&mut self, rtt_ns: u64) {
        if let Some(slot) = self.recent.get_mut(self.seen % RECENT) {
            *slot = rtt_ns;
        }
        self.seen += 1;
        self.min_rtt = Some(self.min_rtt.map_or(rtt_ns, |m| m.min(rtt_ns)));
    }

    /// The queueing delay the path shows now: the median of the recent round trips (the
    /// later of two, while the queue is still filling at the start) less the smallest of all.
    pub fn queue_ns(&self) -> u64 {
        let n = self.seen.min(RECENT);
        let mut recent = self.recent;
        let Some(recent) = recent.get_mut(..n) else {
            return 0;
        };
        recent.sort_unstable();
        let mid = recent.get(n / 2);
        match (mid, self.min_rtt) {
            (Some(&r), Some(min)) => r.saturating_sub(min),
            _ => 0,
        }
    }

    fn open_uncovered(&self) -> u64 {
        self.open_ns.saturating_sub(self.open_queue_ns)
    }

    /// The stalls' time beyond what the path's queue covered, the open stall included: how
    /// long the path may have gone without the sender's load, ns.
    pub fn uncovered_ns(&self) -> u64 {
        self.uncovered_ns.saturating_add(self.open_uncovered())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Within the histograms' 3 significant digits.
    fn near(a: u64, b: u64) -> bool {
        (a as f64 - b as f64).abs() <= b as f64 * 1e-3
    }

    /// A 30 ms stall caught up in a burst (each send 0.5 ms less late than the one before).
    fn stall(l: &mut Lateness, ms: u64) {
        for k in 0..2 * ms {
            l.on_send(ms * MS - k * MS / 2);
        }
        l.on_send(200_000);
    }

    #[test]
    fn without_a_queue_every_stall_counts_once_at_its_largest_lateness() {
        let mut l = Lateness::default();
        l.on_send(100_000);
        stall(&mut l, 30);
        assert!(near(l.uncovered_ns(), 30 * MS), "{}", l.uncovered_ns());
        assert_eq!(l.behind, 58, "sends over 1 ms late");
        assert_eq!(l.stalls, 1);
        // A second, open stall counts too.
        l.on_send(12 * MS);
        assert!(near(l.uncovered_ns(), 42 * MS), "{}", l.uncovered_ns());
        assert_eq!(l.stalls, 2);
        assert!((l.hist.max_ns() as f64 - 30e6).abs() < 30e3);
    }

    #[test]
    fn a_queue_covers_stalls_shorter_than_its_delay_at_their_start() {
        let mut l = Lateness::default();
        // Round trips of 20 ms on the empty path: a stall then is not covered.
        l.on_rtt(20 * MS);
        stall(&mut l, 30);
        assert!(near(l.uncovered_ns(), 30 * MS), "{}", l.uncovered_ns());
        // Then 118 ms behind a full queue: 98 ms of it covers the next stalls.
        for _ in 0..RECENT {
            l.on_rtt(118 * MS);
        }
        assert_eq!(l.queue_ns(), 98 * MS);
        // One long round trip (a stall between stamping a request and sending it) does not
        // count as queue.
        l.on_rtt(400 * MS);
        assert_eq!(l.queue_ns(), 98 * MS);
        l.on_send(0);
        stall(&mut l, 40);
        stall(&mut l, 60);
        assert!(
            near(l.uncovered_ns(), 30 * MS),
            "both covered: {}",
            l.uncovered_ns()
        );
        stall(&mut l, 150);
        let u = l.uncovered_ns();
        assert!(near(u, 82 * MS), "30 + (150 − 98) ms uncovered: {u}");
        assert_eq!(l.stalls, 4);
        // A reply the stall delayed, read during it, does not cover the stall it is read in.
        let mut l = Lateness::default();
        l.on_rtt(20 * MS);
        l.on_send(0);
        l.on_send(300 * MS);
        l.on_rtt(378 * MS);
        l.on_send(0);
        assert!(near(l.uncovered_ns(), 300 * MS), "{}", l.uncovered_ns());
    }
}
