//! The body of a `probe` result: summary, tester health, the NPT-compatible `latency` and
//! `errors` blocks, serialized histograms and the per-interval series.
//!
//! Field names here are what users script against (docs/result-json.md, "probe"); keep them stable.

use std::collections::BTreeMap;

use npt_stats::{ErrorCounts, JitterMean, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::interval::Interval;
use crate::Histograms;

/// The body of a `probe` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProbeBody {
    pub summary: ProbeSummary,
    pub health: Health,
    /// NPT's block, keyed by protocol (`udp` or `tcp`).
    #[schemars(extend("propertyNames" = {"enum": ["udp", "tcp"]}, "minProperties" = 1))]
    pub latency: BTreeMap<String, NptLatency>,
    pub errors: Errors,
    /// Serialized HDR histograms (ns) by name: [`hist`].
    #[schemars(
        description = "Serialized HDR histograms (ns) by name: `rtt`, `ipdv`, and `rtt_corrected` (rate mode), `connect` and `first_packet` (TCP)."
    )]
    #[schemars(extend("propertyNames" = {"enum": hist::ALL}, "required" = [hist::RTT, hist::IPDV]))]
    pub histograms: Histograms,
    /// The probe fills `sent`, `lost`, `late`, `duplicated`, `reordered`, `loss_pct`,
    /// `jitter_ms` and `bandwidth_bps` besides the common fields.
    #[schemars(extend("allOf" = [{"items": {"required": [
        "sent", "lost", "late", "duplicated", "reordered", "loss_pct", "jitter_ms", "bandwidth_bps",
    ]}}]))]
    pub intervals: Vec<Interval>,
}

/// What the probe did and what it measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProbeSummary {
    #[schemars(extend("enum" = ["udp", "tcp"]))]
    pub protocol: String,
    pub target: String,
    /// `interval`, `rate` or `relay`.
    #[schemars(extend("enum" = ["interval", "rate", "relay"]))]
    pub mode: String,
    /// True for `rate` (open loop, latency also from the intended send time).
    pub open_loop: bool,
    /// `framed` (npt serve) or `raw` (any echo server).
    #[schemars(extend("enum" = ["framed", "raw"]))]
    pub framing: String,
    #[schemars(range(min = 1))]
    pub clients: u32,
    #[schemars(range(min = 1))]
    pub size: u32,
    pub sent: u64,
    /// First replies within the loss timeout. `received + lost == sent`.
    pub received: u64,
    pub lost: u64,
    /// Replies after the loss timeout (already counted in `lost`).
    pub late: u64,
    pub duplicated: u64,
    pub reordered: u64,
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: f64,
    /// Packets sent per second over the send phase.
    pub pps: f64,
    /// Replies received per second over the send phase.
    pub pps_received: f64,
    pub send_duration_s: f64,
    pub loss_timeout_ms: f64,
    /// Round-trip time of on-time replies, from the actual send.
    pub rtt_ms: Summary,
    /// `rate` mode only: round-trip time measured from the intended send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_corrected_ms: Option<Summary>,
    /// RFC 3550 interarrival jitter of the round-trip time (sample-weighted over clients).
    pub jitter_ms: f64,
    /// The samples `jitter_ms` is the weighted mean of, so that results merge exactly
    /// ([`npt_stats::JitterMean`]). Absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_samples: Option<u64>,
    /// |RTT(i) - RTT(i-1)| between consecutive replies (IPDV).
    pub ipdv_ms: Summary,
    /// Application payload bits/s each way (IP/UDP/TCP headers excluded).
    pub bandwidth_bps: Directions,
    /// Application payload bytes each way.
    pub bytes: Directions,
    /// TCP: connect + the first echo on that connection and nothing else, mean over flows
    /// (quic-tun's latency test's "first packet latency"); the distribution is `phases_ms.first_packet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_packet_ms: Option<f64>,
    /// TCP: connect time, mean over connections; the distribution is `phases_ms.connect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<f64>,
    /// TCP: the distributions of connect and first packet over flows, from the histograms
    /// `histograms.{connect,first_packet}` (as `run`'s `protocols.tcp.connect_ms`). Absent in
    /// files written before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_ms: Option<ProbePhases>,
    /// TCP: from the first connect until the last reply (quic-tun's latency test's "total latency").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<f64>,
    /// `--via`: the proxy and the phases of its handshakes (means over connections or UDP
    /// associations). `connect_ms` / `first_packet_ms` then include the whole handshake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyPhases>,
    /// Replies whose payload differed from what was sent (`--verify`).
    pub corrupt: u64,
    /// Datagrams that were not a reply of this run (foreign, truncated, other flow).
    pub foreign: u64,
    /// Replies too old to classify as late or duplicate.
    pub stale: u64,
}

/// TCP phases of a probe's flows, in ms.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProbePhases {
    /// TCP connect (with `--via`: until the tunnel is open), one per flow.
    pub connect: Summary,
    /// Connect + the first echo on that connection, one per flow that got one.
    pub first_packet: Summary,
}

/// A proxy handshake, phase by phase (ms, means over `handshakes`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProxyPhases {
    /// The proxy URL, password left out.
    pub via: String,
    /// Handshakes that succeeded (TCP connections or UDP associations).
    pub handshakes: u64,
    /// TCP connect to the proxy.
    pub proxy_connect_ms: f64,
    /// SOCKS5 method choice and user/password exchange (0 for HTTP CONNECT).
    pub auth_ms: f64,
    /// CONNECT / UDP ASSOCIATE sent → the proxy's success reply.
    pub reply_ms: f64,
    /// All three.
    pub handshake_ms: f64,
}

/// One figure each way: `up` (client to server) and `down`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Directions {
    pub up: f64,
    pub down: f64,
}

/// The tester's own health: was the client the bottleneck?
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Health {
    /// Sends that left more than `behind_threshold_ms` after they were due.
    pub sends_behind_schedule: u64,
    pub behind_threshold_ms: f64,
    /// How late sends left compared with their due time.
    pub send_lateness_ms: Summary,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// CPU time / wall time × 100 (200 = both cores of a 2-core machine busy).
    pub cpu_pct: f64,
    pub max_rss_bytes: u64,
    /// Open-loop pacer: how late its timer released each send after its due time (before
    /// any wait for a free slot); `None` where no such timer runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_lateness_ms: Option<Summary>,
}

/// NPT's latency block: `latency.<proto>.{avg,p50,p95,p99,max,min}_ms`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NptLatency {
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub min_ms: f64,
}

impl From<&Summary> for NptLatency {
    fn from(s: &Summary) -> Self {
        NptLatency {
            avg_ms: s.mean,
            p50_ms: s.p50,
            p95_ms: s.p95,
            p99_ms: s.p99,
            max_ms: s.max,
            min_ms: s.min,
        }
    }
}

/// NPT's errors block, plus the kinds. The same for every kind of result:
/// `error_rate = total_errors ÷ attempts`, where an attempt is a packet sent (`probe`) or a
/// request started (`run`, `http`: completed, failed or still in flight at the end). An error
/// that kept anything from being sent at all (a flow that could not connect) counts as its own
/// attempt, so the rate is never above 1.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Errors {
    pub total_errors: u64,
    /// `total_errors ÷ attempts`, 0..=1.
    #[schemars(range(min = 0, max = 1))]
    pub error_rate: f64,
    /// What `error_rate` divides by. Absent in files written before it was recorded; read
    /// those with [`Errors::attempts_or`].
    #[schemars(
        description = "What `error_rate` divides by. Absent in files written before it was recorded."
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u64>,
    /// Counts and examples by kind, in the one vocabulary of error kinds
    /// ([`crate::error::ErrorKind`], docs/result-json.md).
    #[schemars(extend("propertyNames" = {"enum": crate::error::ErrorKind::names()}))]
    pub by_kind: ErrorCounts,
}

impl Errors {
    /// The block for `by_kind` errors over `attempts` attempts.
    pub fn new(by_kind: ErrorCounts, attempts: u64) -> Errors {
        let total_errors = by_kind.total();
        Errors {
            total_errors,
            error_rate: error_rate(total_errors, attempts),
            attempts: Some(attempts),
            by_kind,
        }
    }

    /// The attempts recorded, or for an older file what its `error_rate` divided by then
    /// (`legacy`: packets sent for a probe, completed requests + errors for run and http).
    pub fn attempts_or(&self, legacy: u64) -> u64 {
        self.attempts.unwrap_or(legacy)
    }
}

/// A saved jitter as the stats crate's mergeable value. Files written before
/// `jitter_samples` existed are weighted by `legacy_weight` (their replies), as merges of them
/// always were.
pub fn jitter_mean(jitter_ms: f64, samples: Option<u64>, legacy_weight: u64) -> JitterMean {
    JitterMean::from_value(jitter_ms * 1e6, samples.unwrap_or(legacy_weight))
}

/// `errors ÷ attempts`, the one definition of `error_rate`; an attempt count below the errors
/// (errors that kept anything from being sent) is raised to them, so the rate stays in 0..=1.
pub fn error_rate(errors: u64, attempts: u64) -> f64 {
    let attempts = attempts.max(errors);
    if attempts == 0 {
        0.0
    } else {
        errors as f64 / attempts as f64
    }
}

/// The names in a probe's `histograms` map (serialized HDR histograms, ns).
pub mod hist {
    /// Round-trip time of on-time replies, from the actual send.
    pub const RTT: &str = "rtt";
    /// `rate` mode only: round-trip time from the intended send time.
    pub const RTT_CORRECTED: &str = "rtt_corrected";
    /// |RTT(i) - RTT(i-1)| between consecutive replies.
    pub const IPDV: &str = "ipdv";
    /// TCP only: connect and connect + first echo, one value per flow.
    pub const CONNECT: &str = "connect";
    pub const FIRST_PACKET: &str = "first_packet";
    /// Every name above.
    pub const ALL: [&str; 5] = [RTT, RTT_CORRECTED, IPDV, CONNECT, FIRST_PACKET];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_rate_is_errors_over_attempts_and_never_above_one() {
        assert_eq!(error_rate(0, 0), 0.0);
        assert_eq!(error_rate(1, 4), 0.25);
        // A flow that could not connect sent nothing: its error is its own attempt.
        assert_eq!(error_rate(2, 0), 1.0);
        assert_eq!(error_rate(3, 2), 1.0);
        let mut kinds = ErrorCounts::default();
        kinds.record("timeout", || "t".into());
        kinds.record("refused", || "r".into());
        let e = Errors::new(kinds, 8);
        assert_eq!(
            (e.total_errors, e.attempts, e.error_rate),
            (2, Some(8), 0.25)
        );
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["attempts"], 8);
        // A file written before `attempts` existed still reads, with the old denominator.
        let old: Errors = serde_json::from_value(serde_json::json!({
            "total_errors": 1, "error_rate": 0.5, "by_kind": {}}))
        .unwrap();
        assert_eq!(old.attempts_or(2), 2);
    }
}
