//! One interval record for every workload (`intervals[]` of a `probe`, `run` or `http` result,
//! schema `npt.result.v2`), so a reader of the series — the CSV, the HTML charts, `compare`,
//! `merge`, the live lines — is written once instead of once per kind.
//!
//! Every record fills the common fields: `index`, `start_s`, `end_s`, `completed`, `errors`,
//! `rate_per_s`, `latency_ms` and `histogram`. The fields only one kind has are optional and
//! left out of the JSON when absent, under the names they had in v1 (docs/result-json.md).

use std::collections::BTreeMap;

use npt_stats::{SerializedHistogram, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::probe::Directions;

/// One stage of a run. A probe's loss is attributed to the interval a packet was *sent* in
/// (an interval closes once its last packet's loss timeout has passed); a request of `run` or
/// `http` belongs to the interval in which it completed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Interval {
    pub index: u32,
    /// Seconds since the start of the run.
    pub start_s: f64,
    pub end_s: f64,
    /// Replies received on time (probe) or requests completed (run, http).
    pub completed: u64,
    /// Requests that failed (run, http); 0 for a probe, whose losses are `lost`.
    pub errors: u64,
    /// Packets sent (probe) or requests completed (run, http) per second.
    pub rate_per_s: f64,
    /// Round-trip time (probe) or request latency (run, http) of the interval.
    pub latency_ms: Summary,

    /// Probe: packets sent in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<u64>,
    /// Probe: packets sent in the interval that got no reply in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// Probe: late replies that *arrived* in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicated: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reordered: Option<u64>,
    /// Probe: `lost ÷ sent`, in %.
    #[schemars(range(min = 0, max = 100))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_pct: Option<f64>,
    /// Probe: RFC 3550 jitter of the RTT, and the samples it is the weighted mean of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_samples: Option<u64>,
    /// Probe: application payload bits/s each way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bps: Option<Directions>,

    /// Run: application payload bytes each way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Directions>,
    /// Run: sampled at the end of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_users: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_connections: Option<u64>,

    /// Http: responses by status code (`"200"` …).
    #[schemars(extend("propertyNames" = {"pattern": "^[1-9][0-9]{2}$"}))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<BTreeMap<String, u64>>,

    /// The latency samples of `latency_ms` (ns), so intervals merge exactly.
    pub histogram: SerializedHistogram,
}

/// The v1 layouts of `intervals[]`, rewritten in place into this record's names: a probe's
/// `received`, `pps` and `rtt_ms` become `completed`, `rate_per_s` and `latency_ms` (and
/// `errors` is 0); run's and http's `requests` become `completed`, http's `rps` and run's
/// requests per second of the interval become `rate_per_s`.
pub(crate) fn v1_to_v2(kind: &str, intervals: &mut serde_json::Value) {
    let Some(ivs) = intervals.as_array_mut() else {
        return;
    };
    for iv in ivs {
        let Some(o) = iv.as_object_mut() else {
            continue;
        };
        let mut rename = |from: &str, to: &str| {
            if let Some(v) = o.remove(from) {
                o.insert(to.to_string(), v);
            }
        };
        match kind {
            "probe" => {
                rename("received", "completed");
                rename("pps", "rate_per_s");
                rename("rtt_ms", "latency_ms");
                o.insert("errors".into(), 0.into());
            }
            "http" => {
                rename("requests", "completed");
                rename("rps", "rate_per_s");
            }
            "run" => {
                rename("requests", "completed");
                let f = |k: &str| o.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
                let rate = f("completed") / (f("end_s") - f("start_s")).max(1e-9);
                o.insert("rate_per_s".into(), rate.into());
            }
            _ => {}
        }
    }
}
