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
}

impl crate::body::View for BulkBody {
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
    /// `--rate` on tcp:// and quic://: the pace asked of each stream, payload bits/s (IP, TCP
    /// and QUIC headers excluded; a UDP flow's rate is `udp.rate_bps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    /// With `rate_bps`: what the paced streams achieved, their goodput ÷ (`rate_bps` × their
    /// number), %. Below 100 when the path (or the responder) is slower than the pace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_achieved_pct: Option<f64>,
    /// TCP: the congestion control the tester's kernel ran on the streams it sent (up),
    /// read back from each socket (`TCP_CONGESTION`): `--congestion`, or the system's
    /// default. Names that differ are joined by commas. Absent on a download, which the
    /// responder's congestion control governs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
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
    /// How long the path may have gone without the tester's load, ms: its stalls (each run of
    /// sends over 1 ms late, as long as its largest lateness; UDP down: of the pulls) beyond
    /// the queueing delay the path showed (the flow's round trips, median less minimum),
    /// which a bottleneck's queue covers.
    #[serde(default)]
    pub stalled_ms: f64,
    /// `stalled_ms` is more than [`LIMIT_FRACTION`] of the run and the flow lost datagrams:
    /// the delivered rate may read low by as much, because of the tester, not the path. (A flow
    /// that lost nothing delivered all it was sent, caught up or not: its stalls set nothing.)
    #[serde(default)]
    pub tester_limited: bool,
}

/// The share of a run a UDP sender's stalls may add up to before the run is flagged
/// `tester_limited`: a delivered rate read to within 1 % needs the path offered its load 99 %
/// of the time.
pub const LIMIT_FRACTION: f64 = 0.01;

/// True when a sender's stalls of `stalled_ms` in all can have moved a rate measured over
/// `duration_s` by more than [`LIMIT_FRACTION`]: only a path that dropped some of the load
/// (`lost` datagrams) was at its capacity, which an idle moment then lowers.
pub fn tester_limited(stalled_ms: f64, duration_s: f64, lost: u64) -> bool {
    lost > 0 && stalled_ms / 1e3 > LIMIT_FRACTION * duration_s
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
    /// `--rate`: the pace asked of this stream, payload bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    /// TCP, a stream this host sent (up): the congestion control its kernel ran on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// The error kind that ended it early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The summary's pace of paced streams: the rate asked of each (the highest, should parts
/// differ) and what they achieved together, % (`BulkSummary::rate_bps`,
/// `rate_achieved_pct`).
pub fn pace_of(streams: &[StreamTotal]) -> (Option<f64>, Option<f64>) {
    let paced = || {
        streams
            .iter()
            .filter_map(|s| Some((s.rate_bps?, s.goodput_bps)))
    };
    let asked = paced().map(|(r, _)| r).reduce(f64::max);
    let (want, got) = paced().fold((0.0, 0.0), |(w, g), (r, b)| (w + r, g + b));
    (asked, (want > 0.0).then(|| got * 100.0 / want))
}

/// The summary's congestion control: the names the streams ran, sorted, once each, joined by
/// commas (`BulkSummary::congestion`).
pub fn congestion_of(streams: &[StreamTotal]) -> Option<String> {
    let names: std::collections::BTreeSet<&str> = streams
        .iter()
        .filter_map(|s| s.congestion.as_deref())
        .collect();
    (!names.is_empty()).then(|| names.into_iter().collect::<Vec<_>>().join(","))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_tester_limited_past_one_percent_of_stalls() {
        assert!(!tester_limited(50.0, 5.0, 1));
        assert!(tester_limited(50.1, 5.0, 1));
        assert!(
            !tester_limited(50.1, 5.0, 0),
            "nothing lost: all the load arrived"
        );
        assert!(!tester_limited(0.0, 0.0, 1));
        // Files from before the flag read as not flagged.
        let u: UdpBulk = serde_json::from_value(serde_json::json!({"rate_bps": 1.0, "size": 1200,
            "sent": 1, "received": 1, "lost": 0, "loss_pct": 0.0, "delivered_bps": 1.0,
            "jitter_ms": 0.0, "sends_behind_schedule": 0}))
        .unwrap();
        assert_eq!((u.stalled_ms, u.tester_limited), (0.0, false));
    }

    #[test]
    fn the_pace_and_congestion_come_from_the_streams() {
        let st = |rate: Option<f64>, bps: f64, cc: Option<&str>| StreamTotal {
            rate_bps: rate,
            goodput_bps: bps,
            congestion: cc.map(String::from),
            ..StreamTotal::default()
        };
        assert_eq!(pace_of(&[st(None, 9e6, None)]), (None, None));
        assert_eq!(congestion_of(&[st(None, 9e6, None)]), None);
        let s = [
            st(Some(5e6), 5e6, Some("cubic")),
            st(Some(5e6), 4e6, Some("cubic")),
            st(None, 1e6, Some("bbr")),
        ];
        assert_eq!(
            pace_of(&s),
            (Some(5e6), Some(90.0)),
            "9 of the 10 Mbit/s asked"
        );
        assert_eq!(congestion_of(&s).as_deref(), Some("bbr,cubic"));
    }
}
