//! What the tester's kernel saw of a TCP workload's connections (`TCP_INFO`), as the result
//! keeps it ([`TcpKernel`], a probe's `summary.tcp_info`) and as a value that adds
//! ([`TcpKernelStats`]). It exists because TCP hides loss from the application: a TCP probe
//! across a path that drops 2 % has every echo answered ("loss 0.00 %") and pays in
//! retransmissions and in RTT, which only the kernel sees.
//!
//! The kernel's smoothed RTT is sampled (every 100 ms on each connection, and once more when
//! it ends) into the histogram `tcp_rtt`, so its distribution merges exactly; the RTT variance
//! is kept as the mean of the same samples, the lowest RTT as the minimum over connections.

use std::ops::AddAssign;

use npt_stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::WeightedMean;

/// `scope` of a connection that goes to the target (or to a forwarder in front of it).
pub const SCOPE_TARGET: &str = "target";
/// `scope` of a connection through `--via`: it ends at the proxy.
pub const SCOPE_PROXY: &str = "proxy";

/// The kernel's view of a TCP workload's connections (`TCP_INFO` of the tester's sockets).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TcpKernel {
    /// `target`: the tester's connections go to the target (or to a forwarder in front of
    /// it, which is as far as TCP sees); `proxy`: through `--via` the connection ends at the
    /// proxy, so every figure here is of the first hop only (tester → proxy), and loss behind
    /// the proxy is hidden from it.
    #[schemars(extend("enum" = ["target", "proxy"]))]
    pub scope: String,
    /// Connections read (reconnects count).
    pub connections: u64,
    /// Segments the tester's kernel retransmitted (`tcpi_total_retrans`), from each
    /// connection being up to its end (a SYN sent again is in the connect time instead).
    /// Fast retransmits, tail-loss probes and timeouts all count; a segment lost on the way
    /// back (an echo) is the responder's to resend and is not in here.
    pub retransmits: u64,
    /// Data segments the tester's kernel sent over the same span (`tcpi_data_segs_out`,
    /// retransmits included). Absent on kernels before 4.6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_segments_out: Option<u64>,
    /// `retransmits` / `data_segments_out` × 100: the share of data segments sent again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retransmit_pct: Option<f64>,
    /// The kernel's smoothed RTT (`tcpi_rtt`), sampled every 100 ms on each connection and
    /// when it ends; its histogram is `histograms.tcp_rtt`.
    pub rtt_ms: Summary,
    /// The kernel's RTT mean deviation (`tcpi_rttvar`), the mean of the same samples.
    pub rttvar_ms: f64,
    /// The lowest RTT the kernel saw on any connection (`tcpi_min_rtt`; Linux 4.6+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_ms: Option<f64>,
}

/// [`TcpKernel`] as a value that adds; the RTT samples are in the kind's histogram map.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpKernelStats {
    pub scope: String,
    pub connections: u64,
    pub retransmits: u64,
    pub data_segments_out: Option<u64>,
    /// Mean RTT variance (ns), weighted by samples.
    pub rttvar_ns: WeightedMean,
    /// ns, as a float: a saved block holds it in ms.
    pub min_rtt_ns: Option<f64>,
}

impl TcpKernelStats {
    /// A saved block, the weight of its variance being its RTT samples.
    pub fn from_saved(k: &TcpKernel) -> TcpKernelStats {
        TcpKernelStats {
            scope: k.scope.clone(),
            connections: k.connections,
            retransmits: k.retransmits,
            data_segments_out: k.data_segments_out,
            rttvar_ns: WeightedMean::of(k.rttvar_ms * 1e6, k.rtt_ms.count as f64),
            min_rtt_ns: k.min_rtt_ms.map(|m| m * 1e6),
        }
    }

    /// One connection's account: its retransmits and data segments between its first and
    /// last reading (None if the kernel does not count segments), the mean RTT variance of its
    /// `samples` RTT samples (ns), and its lowest RTT (ns). Every engine that reads
    /// `TCP_INFO` adds its connections with this.
    pub fn add_connection(
        &mut self,
        retransmits: u64,
        data_segments_out: Option<u64>,
        rttvar_mean_ns: f64,
        samples: u64,
        min_rtt_ns: Option<f64>,
    ) {
        self.data_segments_out = match (self.connections, self.data_segments_out, data_segments_out)
        {
            (0, _, n) => n,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.connections += 1;
        self.retransmits += retransmits;
        if samples > 0 {
            self.rttvar_ns += &WeightedMean::of(rttvar_mean_ns, samples as f64);
        }
        if let Some(m) = min_rtt_ns {
            self.min_rtt_ns = Some(self.min_rtt_ns.map_or(m, |x| x.min(m)));
        }
    }

    /// The block, with `rtt` the summary of the RTT samples' histogram.
    pub fn block(&self, rtt: Summary) -> TcpKernel {
        let retransmit_pct = self
            .data_segments_out
            .filter(|n| *n > 0)
            .map(|n| self.retransmits as f64 * 100.0 / n as f64);
        TcpKernel {
            scope: self.scope.clone(),
            connections: self.connections,
            retransmits: self.retransmits,
            data_segments_out: self.data_segments_out,
            retransmit_pct,
            rtt_ms: rtt,
            rttvar_ms: self.rttvar_ns.value() / 1e6,
            min_rtt_ms: self.min_rtt_ns.map(|n| n / 1e6),
        }
    }
}

impl AddAssign<&TcpKernelStats> for TcpKernelStats {
    fn add_assign(&mut self, rhs: &TcpKernelStats) {
        if self.scope.is_empty() {
            self.scope = rhs.scope.clone();
        }
        self.data_segments_out = match (self.data_segments_out, rhs.data_segments_out) {
            (Some(a), Some(b)) => Some(a + b),
            // An empty start takes the part's; a part that could not count them leaves the
            // sum (and so the share) out.
            (None, b) if self.connections == 0 => b,
            (a, None) if rhs.connections == 0 => a,
            _ => None,
        };
        self.connections += rhs.connections;
        self.retransmits += rhs.retransmits;
        self.rttvar_ns += &rhs.rttvar_ns;
        self.min_rtt_ns = match (self.min_rtt_ns, rhs.min_rtt_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(conns: u64, retrans: u64, segs: Option<u64>, var_ms: f64, n: u64) -> TcpKernelStats {
        let rtt = Summary {
            count: n,
            ..Summary::default()
        };
        TcpKernelStats::from_saved(&TcpKernel {
            scope: SCOPE_TARGET.into(),
            connections: conns,
            retransmits: retrans,
            data_segments_out: segs,
            retransmit_pct: None,
            rtt_ms: rtt,
            rttvar_ms: var_ms,
            min_rtt_ms: Some(20.0 + var_ms),
        })
    }

    #[test]
    fn parts_add_and_the_share_is_of_the_sum() {
        let mut a = part(1, 3, Some(100), 2.0, 10);
        a += &part(2, 5, Some(300), 4.0, 30);
        let k = a.block(Summary::default());
        assert_eq!((k.connections, k.retransmits), (3, 8));
        assert_eq!(k.data_segments_out, Some(400));
        assert_eq!(k.retransmit_pct, Some(2.0));
        // 10 samples at 2 ms, 30 at 4 ms.
        assert!((k.rttvar_ms - 3.5).abs() < 1e-9, "{}", k.rttvar_ms);
        assert_eq!(k.min_rtt_ms, Some(22.0));
    }

    #[test]
    fn a_part_without_segment_counts_leaves_the_share_out() {
        let mut a = part(1, 3, Some(100), 2.0, 10);
        a += &part(1, 5, None, 4.0, 30);
        assert_eq!(a.block(Summary::default()).retransmit_pct, None);
        let mut b = TcpKernelStats::default();
        b += &part(1, 3, Some(100), 2.0, 10);
        assert_eq!(
            b.data_segments_out,
            Some(100),
            "an empty start takes the part's"
        );
    }
}
