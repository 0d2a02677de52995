//! How far a paced UDP sender (the data of an upload, the pulls of a download) fell behind its
//! schedule, and whether that can have moved the rate it measured. Pure: fed each send's
//! lateness (actual − due, ns).
//!
//! An open-loop sender that is late catches up at once, so a stall of the tester's process
//! (a loaded box keeping it off the CPU) is a run of late sends: a *stall*, whose length is its
//! largest lateness. During a stall the path is offered nothing; a bottleneck's queue covers
//! what it holds, and for the rest the bottleneck idles, so a delivered rate can read low by
//! at most the stalls' total over the run. The result flags a run where that bound passes 1 %
//! (`summary.udp.tester_limited`, [`npt_result::bulk::tester_limited`]): the tester, not the
//! path, may have set the figure.

use npt_stats::Histogram;

/// A send later than this is behind schedule (the tester's threshold everywhere).
pub const BEHIND_NS: u64 = 1_000_000;
/// A sender's lateness so far.
#[derive(Clone, Debug, Default)]
pub struct Lateness {
    /// Every send's lateness, ns.
    pub hist: Histogram,
    /// Sends later than [`BEHIND_NS`].
    pub behind: u64,
    /// The closed stalls' lengths, added.
    stalled_ns: u64,
    /// The open stall's length so far (0: on time).
    open_ns: u64,
}

impl Lateness {
    /// One send that left `late_ns` after it was due.
    pub fn on_send(&mut self, late_ns: u64) {
        self.hist.record(late_ns);
        if late_ns > BEHIND_NS {
            self.behind += 1;
            self.open_ns = self.open_ns.max(late_ns);
        } else {
            self.stalled_ns = self.stalled_ns.saturating_add(self.open_ns);
            self.open_ns = 0;
        }
    }

    /// The stalls' total length, the open one included, ns.
    pub fn stalled_ns(&self) -> u64 {
        self.stalled_ns.saturating_add(self.open_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_stall_counts_once_at_its_largest_lateness() {
        let mut l = Lateness::default();
        // On time, then a 30 ms stall caught up in a burst (each send 0.5 ms less late).
        l.on_send(100_000);
        for k in 0..60 {
            l.on_send(30 * MS - k * MS / 2);
        }
        l.on_send(200_000);
        assert_eq!(l.stalled_ns(), 30 * MS);
        assert_eq!(l.behind, 58, "sends over 1 ms late");
        // A second, open stall counts too.
        l.on_send(12 * MS);
        assert_eq!(l.stalled_ns(), 42 * MS);
        assert_eq!(l.hist.count(), 63);
        assert!((l.hist.max_ns() as f64 - 30e6).abs() < 30e3);
    }
}
