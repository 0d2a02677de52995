//! The body of a `kind = "ping"` result document: a `summary` users script against, the NPT
//! `latency.<proto>` and `errors` blocks every npt result carries, and the RTT histogram so
//! results merge exactly; and its text summary, so that `npt report` prints what `npt ping`
//! printed. Here rather than in npt-ping so that every reader reads it as one typed result
//! ([`crate::any::Workload::Ping`]).
//!
//! Field names are what users script against (docs/result-json.md, "ping"); `schema/ping.schema.json`
//! checks them.

use std::collections::BTreeMap;

use npt_stats::SerializedHistogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Errors, NptLatency};

/// The body of a `ping` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PingBody {
    /// `PROTO://HOST:PORT` as given.
    #[schemars(regex(pattern = "^(tcp|udp|quic)://"))]
    pub target: String,
    #[schemars(extend("enum" = ["tcp", "udp", "quic"]))]
    pub proto: String,
    /// Addresses the target resolved to, in the order they were tried.
    #[schemars(length(min = 1))]
    pub addresses: Vec<String>,
    pub summary: PingSummary,
    /// `latency.<tcp|udp|quic>`: the NPT latency block.
    #[schemars(extend(
        "propertyNames" = {"enum": ["tcp", "udp", "quic"]},
        "minProperties" = 1,
        "maxProperties" = 1,
    ))]
    pub latency: BTreeMap<String, NptLatency>,
    /// `error_rate` = total_errors ÷ sent (`attempts` is not written).
    pub errors: Errors,
    /// The RTT histogram (ns).
    pub histogram: SerializedHistogram,
    /// `npt ping --from`: the hop agent (`npt://HOST:PORT`) the RTTs were measured from; absent
    /// when measured from this host (and in files written before it existed).
    #[schemars(regex(pattern = "^npt://"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_from: Option<String>,
}

/// Counts and RTT statistics in milliseconds (zeros when nothing answered).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PingSummary {
    pub sent: u64,
    pub received: u64,
    /// Attempts without an answer that the server did not refuse: `sent − received −
    /// refused_by_server`.
    pub lost: u64,
    /// `lost ÷ (sent − refused_by_server)`, in %.
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: f64,
    /// Answers that came after their attempt had timed out, or twice.
    pub late: u64,
    /// UDP against `npt serve`: attempts the server refused (its per-source budget, or a
    /// `--token` it wants), from its refusal notices and counts — never counted as loss.
    #[serde(default)]
    pub refused_by_server: u64,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub stddev_ms: f64,
}

/// The name a ping's one histogram goes by among every result's histograms
/// ([`crate::any::Workload::histograms`]); the document keeps it as `histogram`.
pub mod hist {
    /// Round-trip time of answered attempts.
    pub const RTT: &str = "rtt";
}
