//! The body of a `kind = "bulk"` result (`npt bulk`, capacity): a summary users script
//! against — goodput each way, the retransmits and the RTT the kernel saw (TCP), delivered rate,
//! loss and jitter (UDP) — a total per stream, the tester's health, the NPT `latency` and
//! `errors` blocks, the histograms and the interval series, whose records carry each stream's
//! interval ([`StreamInterval`]) besides the common fields.
//!
//! Field names here are what users script against (docs, `npt bulk`); `schema/bulk.schema.json`
//! checks them.

use std::collections::BTreeMap;

use npt_stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::interval::Interval;
use crate::probe::{Directions, Errors, Health, NptLatency};
use crate::Histograms;

/// The body of a `bulk` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct BulkBody {
    pub summary: BulkSummary,
    /// One per stream (TCP connection, QUIC stream; one for a UDP flow), in stream order.
    pub streams: Vec<StreamTotal>,
    /// CPU, memory, and the sends behind schedule (UDP at a rate).
    #[schemars(extend("required" = ["sends_behind_schedule", "behind_threshold_ms"]))]
    pub health: Health,
    /// NPT's block, keyed by protocol: the path's RTT while loaded ([`hist::RTT`]).
    #[schemars(extend("propertyNames" = {"enum": ["tcp", "udp", "quic"]}))]
    pub latency: BTreeMap<String, NptLatency>,
    /// `error_rate` = total_errors ÷ streams.
    pub errors: Errors,
    /// Serialized HDR histograms (ns) by name: [`hist`].
    #[schemars(
        description = "Serialized HDR histograms (ns) by name: `rtt`, the path's RTT while loaded."
    )]
    #[schemars(extend("propertyNames" = {"enum": [hist::RTT]}))]
    pub histograms: Histograms,
    /// One per interval: `bandwidth_bps` and `bytes` each way, the RTT samples as
    /// `latency_ms`, and `streams` with each stream's part.
    #[schemars(extend("allOf" = [{"items": {"required": ["bandwidth_bps", "bytes", "streams"]}}]))]
    pub intervals: Vec<Interval>,
}

impl crate::body::Body for BulkBody {
    const KIND: &'static str = "bulk";
    crate::body::blocks!(health, intervals, histograms);

    /// The path's RTT under the bulk's own load.
    fn headline_parts(&self) -> Vec<(&str, &npt_stats::SerializedHistogram)> {
        crate::body::part(&self.histograms, hist::RTT)
    }
    /// The RTT under load (empty: nothing was sampled).
    fn headline_summary(&self) -> Result<Summary, String> {
        Ok(self.summary.rtt_ms.unwrap_or_default())
    }
    fn target(&self) -> String {
        self.summary.target.clone()
    }
}

/// What was moved, each way, and what the path did under the load.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct BulkSummary {
    pub target: String,
    /// `tcp`, `quic` or `udp`.
    #[schemars(extend("enum" = ["tcp", "quic", "udp"]))]
    pub protocol: String,
    /// `up` (the tester sends), `down` (the responder sends) or `both`.
    #[schemars(extend("enum" = ["up", "down", "both"]))]
    pub direction: String,
    /// Streams each way that was asked for (a UDP flow is one).
    #[schemars(range(min = 1))]
    pub streams: u32,
    /// The measured phase, s.
    pub duration_s: f64,
    /// Application payload bytes that arrived, each way (up: what the responder reported it
    /// received, not what the tester's socket took; down: what the tester read).
    pub bytes: Directions,
    /// `bytes` × 8 ÷ `duration_s`, each way (IP/TCP/UDP/QUIC headers excluded).
    pub goodput_bps: Directions,
    /// Both ways together, Mbit/s.
    pub goodput_mbps: f64,
    /// TCP: segments the tester's kernel retransmitted (`TCP_INFO`), over every stream that
    /// sends (up; on a download the retransmits are the responder's and are not seen here).
    /// QUIC: packets the tester's QUIC stack declared lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP: the kernel's smoothed RTT, sampled every 100 ms on every stream; QUIC: the
    /// connection's RTT estimate; UDP: the round trip of the report requests through the
    /// loaded path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<Summary>,
    /// UDP at a rate: what was sent and what arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpBulk>,
    /// Streams that ended with an error (counted by kind in `errors`).
    pub failed_streams: u32,
}

/// UDP at a rate (`--rate`, `--size`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UdpBulk {
    /// The asked rate, bits/s of datagrams (their payload: the npt header included, IP/UDP not).
    pub rate_bps: f64,
    /// Datagram size, bytes.
    pub size: u32,
    /// Datagrams sent and arrived (as the responder reported).
    pub sent: u64,
    pub received: u64,
    /// Datagrams the path lost: `sent − received − refused_by_server`.
    pub lost: u64,
    /// `lost ÷ (sent − refused_by_server)`, in %: the path's loss.
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: f64,
    /// Datagrams the server's per-source budget refused (never path loss); absent when the
    /// server does not say (an older `npt serve`: refusals then read as `lost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_by_server: Option<u64>,
    /// What arrived, bits/s.
    pub delivered_bps: f64,
    /// RFC 3550 jitter of the one-way transit time, as the responder measured it.
    pub jitter_ms: f64,
    /// Sends that left more than 1 ms after they were due (the tester could not keep the rate).
    pub sends_behind_schedule: u64,
}

/// One stream's totals.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StreamTotal {
    pub index: u32,
    /// `up` or `down`.
    #[schemars(extend("enum" = ["up", "down"]))]
    pub direction: String,
    pub bytes: u64,
    pub goodput_bps: f64,
    /// TCP (up) and QUIC: as `summary.retransmits`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// The mean of the RTT samples of this stream, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// The error kind that ended it early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One stream's part of an interval (`intervals[].streams[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StreamInterval {
    pub index: u32,
    /// Bytes that arrived in the interval, and as bits/s.
    pub bytes: u64,
    pub bps: f64,
    /// TCP: segments retransmitted in the interval (sending streams); QUIC: packets lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// The last RTT and RTT variance read in the interval, ms (TCP: the kernel's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar_ms: Option<f64>,
    /// TCP, QUIC: the congestion window at the end of the interval (TCP: segments; QUIC:
    /// bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd: Option<u64>,
    /// TCP: the kernel's delivery-rate estimate at the end of the interval, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<f64>,
}

/// The names in a bulk's `histograms` map (serialized HDR histograms, ns).
pub mod hist {
    /// The path's RTT while loaded: see `BulkSummary::rtt_ms`.
    pub const RTT: &str = "rtt";
}
