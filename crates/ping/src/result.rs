//! The body of a `kind = "ping"` result document from a session's tally. The types are
//! npt-report's ([`npt_result::ping`]), which every reader of results reads as one model.

use std::collections::BTreeMap;
use std::net::SocketAddr;

pub use npt_result::ping::{PingBody, PingSummary};
use npt_result::probe::{Errors, NptLatency};

use crate::session::Tally;
use crate::Proto;

/// The summary of a tally: counts and RTT statistics in milliseconds.
pub fn summary(t: &Tally) -> PingSummary {
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

/// The result body of a ping of `target` over `proto` that tried `addrs`.
pub fn body(target: &str, proto: Proto, addrs: &[SocketAddr], t: &Tally) -> PingBody {
    let summary = summary(t);
    let block = NptLatency {
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
        errors: Errors {
            total_errors: total,
            error_rate: if t.sent == 0 {
                0.0
            } else {
                total as f64 / t.sent as f64
            },
            attempts: None,
            by_kind: t.errors.clone(),
        },
        histogram: t.rtt.to_serialized(),
        measured_from: None,
    }
}
