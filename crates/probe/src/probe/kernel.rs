//! A TCP probe flow's readings of its connections' `TCP_INFO`, added up: the retransmits and
//! data segments of each connection from the first reading after it came up to the last one
//! before it ended, and the kernel's smoothed RTT sampled every [`SAMPLE_EVERY_NS`] into an
//! HDR histogram. Sans-IO: the driver reads the socket and hands over the reading with `now`;
//! this decides when a reading is due and what it adds, so it is tested on a virtual clock.

use npt_netio::tcpinfo::TcpInfo;
use npt_result::tcpinfo::TcpKernelStats;
use npt_stats::Histogram;

/// How often a connected flow reads its `TCP_INFO` (as `npt bulk` does).
pub const SAMPLE_EVERY_NS: u64 = 100_000_000;

/// The connection being read: its first reading (the baseline) and its latest.
#[derive(Clone, Copy, Debug)]
struct Conn {
    first: TcpInfo,
    last: TcpInfo,
    next_at: u64,
    rttvar_sum_ns: f64,
    samples: u64,
}

/// One flow's kernel view over all its connections.
#[derive(Clone, Debug, Default)]
pub struct KernelView {
    conn: Option<Conn>,
    stats: TcpKernelStats,
    rtt: Histogram,
}

impl KernelView {
    /// `scope`: [`npt_result::tcpinfo::SCOPE_TARGET`] or `SCOPE_PROXY`.
    pub fn new(scope: &str) -> KernelView {
        KernelView {
            stats: TcpKernelStats {
                scope: scope.to_string(),
                ..TcpKernelStats::default()
            },
            ..KernelView::default()
        }
    }

    /// Whether a reading is due at `now` (always for a connection not read yet).
    pub fn due(&self, now: u64) -> bool {
        self.conn.is_none_or(|c| now >= c.next_at)
    }

    /// When the next reading is due (None before the first).
    pub fn next_at(&self) -> Option<u64> {
        self.conn.map(|c| c.next_at)
    }

    /// A reading of the current connection at `now`; the first of a connection is its
    /// baseline. Every reading with an RTT is one sample.
    pub fn record(&mut self, now: u64, i: TcpInfo) {
        let c = self.conn.get_or_insert(Conn {
            first: i,
            last: i,
            next_at: now,
            rttvar_sum_ns: 0.0,
            samples: 0,
        });
        c.last = i;
        c.next_at = now.saturating_add(SAMPLE_EVERY_NS);
        if i.rtt_us > 0 {
            self.rtt.record(u64::from(i.rtt_us) * 1000);
            c.rttvar_sum_ns += f64::from(i.rttvar_us) * 1000.0;
            c.samples += 1;
        }
    }

    /// The current connection ended (after its last reading): its deltas are added.
    pub fn end_connection(&mut self) {
        let Some(c) = self.conn.take() else {
            return;
        };
        let segs = match (c.first.data_segs_out, c.last.data_segs_out) {
            (Some(a), Some(b)) => Some(u64::from(b.wrapping_sub(a))),
            _ => None,
        };
        let rttvar = if c.samples > 0 {
            c.rttvar_sum_ns / c.samples as f64
        } else {
            0.0
        };
        let min_rtt = c
            .last
            .min_rtt_us
            .filter(|m| *m > 0 && *m != u32::MAX)
            .map(|m| f64::from(m) * 1e3);
        self.stats.add_connection(
            u64::from(c.last.total_retrans.saturating_sub(c.first.total_retrans)),
            segs,
            rttvar,
            c.samples,
            min_rtt,
        );
    }

    /// The totals (a connection still open is ended first) and the RTT samples; None when
    /// no connection was ever read.
    pub fn finish(mut self) -> Option<(TcpKernelStats, Histogram)> {
        self.end_connection();
        (self.stats.connections > 0).then_some((self.stats, self.rtt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(retrans: u32, segs: u32, rtt_ms: u32) -> TcpInfo {
        TcpInfo {
            total_retrans: retrans,
            data_segs_out: Some(segs),
            rtt_us: rtt_ms * 1000,
            rttvar_us: 500,
            min_rtt_us: Some(rtt_ms * 1000),
            ..TcpInfo::default()
        }
    }

    #[test]
    fn readings_fall_due_every_100_ms() {
        let mut k = KernelView::new("target");
        assert!(k.due(0), "a new connection is read at once");
        k.record(5, info(0, 1, 20));
        assert!(!k.due(5 + SAMPLE_EVERY_NS - 1));
        assert!(k.due(5 + SAMPLE_EVERY_NS));
        assert_eq!(k.next_at(), Some(5 + SAMPLE_EVERY_NS));
    }

    /// Two connections (a reconnect): each counts from its own baseline, so what a first
    /// connection did before the run (its handshake) or a second one's counters starting
    /// at 0 again do not leak into the sum.
    #[test]
    fn connections_add_from_their_own_baselines() {
        let mut k = KernelView::new("target");
        k.record(0, info(1, 3, 20));
        k.record(SAMPLE_EVERY_NS, info(4, 103, 24));
        k.end_connection();
        k.record(2 * SAMPLE_EVERY_NS, info(0, 1, 30));
        k.record(3 * SAMPLE_EVERY_NS, info(2, 51, 18));
        let (s, rtt) = k.finish().unwrap();
        assert_eq!((s.connections, s.retransmits), (2, 5));
        assert_eq!(s.data_segments_out, Some(150));
        assert_eq!(rtt.count(), 4);
        assert_eq!((rtt.min_ns() as f64 / 1e6).round(), 18.0);
        assert_eq!(s.min_rtt_ns, Some(18e6));
        assert!((s.rttvar_ns.value() - 500_000.0).abs() < 1e-6);
        assert_eq!(s.scope, "target");
    }

    #[test]
    fn nothing_read_is_nothing_reported() {
        assert!(KernelView::new("proxy").finish().is_none());
        let mut k = KernelView::new("proxy");
        k.end_connection();
        assert!(k.finish().is_none(), "ending no connection adds none");
    }

    #[test]
    fn an_old_kernel_without_segment_counts_has_no_share() {
        let mut k = KernelView::new("target");
        let mut old = info(0, 0, 20);
        old.data_segs_out = None;
        old.min_rtt_us = None;
        k.record(0, old);
        let (s, _) = k.finish().unwrap();
        assert_eq!((s.data_segments_out, s.min_rtt_ns), (None, None));
    }
}
