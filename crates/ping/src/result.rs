//! The body of a `kind = "ping"` result document (npt.result.v1): a `summary` users script
//! against, the NPT `latency.<proto>` and `errors` blocks every npt result carries, and the
//! RTT histogram so results merge exactly.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use npt_stats::{ErrorCounts, SerializedHistogram};
use serde::{Deserialize, Serialize};

use crate::session::Tally;
use crate::Proto;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PingBody {
    pub target: String,
    pub proto: String,
    /// Addresses the target resolved to, in the order they were tried.
    pub addresses: Vec<String>,
    pub summary: PingSummary,
    /// `latency.<tcp|udp|quic>`: the NPT latency block.
    pub latency: BTreeMap<String, LatencyBlock>,
    pub errors: ErrorsBlock,
    /// The RTT histogram (ns).
    pub histogram: SerializedHistogram,
}

/// Counts and RTT statistics in milliseconds (zeros when nothing answered).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PingSummary {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_pct: f64,
    /// Answers that came after their attempt had timed out, or twice.
    pub late: u64,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub stddev_ms: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LatencyBlock {
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub min_ms: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ErrorsBlock {
    pub total_errors: u64,
    /// total_errors / sent.
    pub error_rate: f64,
    pub by_kind: ErrorCounts,
}

impl PingSummary {
    pub fn from_tally(t: &Tally) -> PingSummary {
        let s = t.rtt.summary();
        PingSummary {
            sent: t.sent,
            received: t.received,
            lost: t.sent - t.received,
            loss_pct: t.loss_pct(),
            late: t.late,
            min_ms: s.min,
            avg_ms: s.mean,
            p50_ms: s.p50,
            p90_ms: s.p90,
            p95_ms: s.p95,
            p99_ms: s.p99,
            max_ms: s.max,
            stddev_ms: s.stddev,
        }
    }
}

impl PingBody {
    pub fn new(target: &str, proto: Proto, addrs: &[SocketAddr], t: &Tally) -> PingBody {
        let summary = PingSummary::from_tally(t);
        let block = LatencyBlock {
            avg_ms: summary.avg_ms,
            p50_ms: summary.p50_ms,
            p95_ms: summary.p95_ms,
            p99_ms: summary.p99_ms,
            max_ms: summary.max_ms,
            min_ms: summary.min_ms,
        };
        let total = t.errors.total();
        PingBody {
            target: target.to_string(),
            proto: proto.name().to_string(),
            addresses: addrs.iter().map(|a| a.to_string()).collect(),
            summary,
            latency: BTreeMap::from([(proto.name().to_string(), block)]),
            errors: ErrorsBlock {
                total_errors: total,
                error_rate: if t.sent == 0 {
                    0.0
                } else {
                    total as f64 / t.sent as f64
                },
                by_kind: t.errors.clone(),
            },
            histogram: t.rtt.to_serialized(),
        }
    }
}
