//! The body of a `kind = "trace"` result document: a relay chain's segments, each measured
//! from its own upstream hop (`npt trace --hop …`), their sum, the chain's own RTT through its
//! entry (`--through`), and the relays' cost = chain − sum, each with a spread; with
//! `--during`, the rounds measured while another workload ran (drift). Here rather than in
//! npt-trace so that every reader reads it as one typed result ([`crate::any::Workload::Trace`]).
//!
//! **Spread.** A leg's spread is half its p10–p90 range (the middle 80 % of its RTTs). The
//! spread of a sum or difference of independently measured legs adds in quadrature
//! (`sqrt(Σ spread²)`, as independent errors do); `spread_worst_ms` is the plain sum of the
//! spreads, the bound when every leg is off the same way at once.
//!
//! Field names are what users script against (docs/result-json.md, "trace");
//! `schema/trace.schema.json` checks them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Errors, NptLatency};
use crate::ping::PingSummary;
use crate::Histograms;

/// The body of a `trace` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TraceBody {
    /// `PROTO://HOST:PORT`: the chain's far end, as given.
    #[schemars(regex(pattern = "^(tcp|udp|quic)://"))]
    pub target: String,
    /// The protocol of every segment and of the chain.
    #[schemars(extend("enum" = ["tcp", "udp", "quic"]))]
    pub proto: String,
    /// The waterfall's totals.
    pub summary: TraceSummary,
    /// The segments in path order: this host → first hop, hop → next hop, last hop → target.
    #[schemars(length(min = 1))]
    pub segments: Vec<Leg>,
    /// The RTT through the chain's entry (`--through`), measured from this host; absent
    /// without `--through`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Leg>,
    /// `--during`: every round, the first measured before the command started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Round>,
    /// `--during`: the command the rounds were measured alongside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<During>,
    /// `latency.<tcp|udp|quic>`: the NPT latency block, of the chain's RTT (empty without
    /// `--through`).
    #[schemars(extend(
        "propertyNames" = {"enum": ["tcp", "udp", "quic"]},
        "maxProperties" = 1,
    ))]
    pub latency: BTreeMap<String, NptLatency>,
    /// `error_rate` = total_errors ÷ attempts of every leg.
    pub errors: Errors,
    /// RTT histograms (ns) by name: `segment.<i>` per segment, `chain`.
    #[schemars(extend("propertyNames" = {"pattern": "^(segment\\.[0-9]+|chain)$"}))]
    pub histograms: Histograms,
}

impl crate::body::Body for TraceBody {
    const KIND: &'static str = "trace";
    crate::body::blocks!(histograms);

    /// The RTT through the chain (none without `--through`).
    fn headline_parts(&self) -> Vec<(&str, &npt_stats::SerializedHistogram)> {
        crate::body::part(&self.histograms, hist::CHAIN)
    }
    fn headline_summary(&self) -> Result<npt_stats::Summary, String> {
        Ok(self
            .chain
            .as_ref()
            .map(|c| c.summary.as_summary())
            .unwrap_or_default())
    }
    fn target(&self) -> String {
        self.target.clone()
    }
}

/// The waterfall's totals (module doc: how spreads are computed).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TraceSummary {
    /// How many segments the path has (hops + 1).
    pub segments: u32,
    /// The segments' p50s added (absent when a segment has no RTT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<Estimate>,
    /// The chain's p50 through its entry, with its own spread (absent without `--through`
    /// or without an answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Estimate>,
    /// What the relays add: the chain's p50 minus the segments' sum (absent without both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relays_cost: Option<Estimate>,
}

/// One measured leg: a segment, or the chain through its entry.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Leg {
    /// Who measured: `here` (this host) or the hop agent's `npt://HOST:PORT`.
    pub from: String,
    /// `PROTO://HOST:PORT` measured.
    #[schemars(regex(pattern = "^(tcp|udp|quic)://"))]
    pub to: String,
    /// Addresses it resolved to, as the measuring side reported them.
    pub addresses: Vec<String>,
    /// Counts and RTT statistics, as `npt ping` reports them.
    pub summary: PingSummary,
    /// The 10th percentile of its RTTs (ms).
    pub p10_ms: f64,
    /// Half the p10–p90 range (ms).
    pub spread_ms: f64,
    /// Why it has no RTT, or lost some attempts: the first error's example.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A figure computed from several legs, with its spread (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Estimate {
    pub p50_ms: f64,
    /// The legs' spreads added in quadrature.
    pub spread_ms: f64,
    /// The legs' spreads added plainly: the worst case.
    pub spread_worst_ms: f64,
}

/// One round of a `--during` trace: each leg's p50 in it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Round {
    pub index: u32,
    /// `before` (the command had not started) or `during`.
    #[schemars(extend("enum" = ["before", "during"]))]
    pub phase: String,
    /// Seconds since the trace started.
    pub start_s: f64,
    pub end_s: f64,
    /// Each segment in this round, in path order.
    pub segments: Vec<RoundLeg>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relays_cost_ms: Option<f64>,
}

/// One segment in one round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RoundLeg {
    /// Its p50 in the round; absent when it did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
}

impl RoundLeg {
    pub fn p50(v: Option<f64>) -> RoundLeg {
        RoundLeg { p50_ms: v }
    }
}

/// The command a `--during` trace measured alongside.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct During {
    /// As given to `--during` (run by `sh -c`).
    pub command: String,
    /// Its exit status; absent when it did not exit by itself (stopped with the trace) or
    /// could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why it could not start or was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The names of a trace's histograms in `histograms`.
pub mod hist {
    /// The RTT through the chain's entry.
    pub const CHAIN: &str = "chain";

    /// Segment `i`'s RTT.
    pub fn segment(i: usize) -> String {
        format!("segment.{i}")
    }
}

impl Estimate {
    /// The sum of figures with spreads `(value, spread)`.
    pub fn sum(parts: impl IntoIterator<Item = (f64, f64)>) -> Estimate {
        let mut e = Estimate::default();
        let mut sq = 0.0;
        for (v, s) in parts {
            e.p50_ms += v;
            sq += s * s;
            e.spread_worst_ms += s;
        }
        e.spread_ms = sq.sqrt();
        e
    }

    /// `a − b`, of independently measured `a` (value, spread) and `b`.
    pub fn difference(a: (f64, f64), b: &Estimate) -> Estimate {
        Estimate {
            p50_ms: a.0 - b.p50_ms,
            spread_ms: (a.1 * a.1 + b.spread_ms * b.spread_ms).sqrt(),
            spread_worst_ms: a.1 + b.spread_worst_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_of_sums_and_differences_add_in_quadrature_and_plainly() {
        let s = Estimate::sum([(152.0, 3.0), (32.0, 4.0), (69.0, 0.0)]);
        assert_eq!(
            (s.p50_ms, s.spread_ms, s.spread_worst_ms),
            (253.0, 5.0, 7.0)
        );
        let c = Estimate::difference((255.0, 12.0), &s);
        assert_eq!(
            (c.p50_ms, c.spread_ms, c.spread_worst_ms),
            (2.0, 13.0, 19.0)
        );
        assert_eq!(Estimate::sum([]), Estimate::default());
    }
}
