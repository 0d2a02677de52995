//! The body of a `kind = "trace"` result document: a relay chain's segments, each measured
//! from its own upstream hop (`npt trace --hop …`), their sum, the chain's own RTT through its
//! entry (`--through`), and the relays' cost = chain − sum, each p50 with how well it is known;
//! with `--during`, the rounds measured while another workload ran (drift). Here rather than in
//! npt-trace so that every reader reads it as one typed result ([`crate::any::AnyBody::Trace`]).
//!
//! **Uncertainty, not width.** A leg's p50 is known to its 95 % order-statistic interval from
//! the leg's own RTTs ([`npt_stats::Histogram::quantile_ci`]; `p50_ci_ms` is its larger side):
//! it narrows as the samples grow. How wide the RTTs are (`p10_ms` to `summary.p90_ms`) is the
//! path's shape and never noise. A sum or difference of independently measured legs has their
//! intervals in quadrature (`sqrt(Σ ciᵢ²)`), and the relays' cost is `within_noise` only when
//! its size is at most that — the rule `npt compare` follows (docs/compare.md, "Noise").
//!
//! Field names are what users script against (docs/result-json.md, "trace");
//! `schema/trace.schema.json` checks them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Errors, NptLatency};
use crate::mtu::MtuDirection;
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
}

impl crate::body::View for TraceBody {
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

/// The waterfall's totals (module doc: how their intervals are computed).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TraceSummary {
    /// How many segments the path has (hops + 1).
    pub segments: u32,
    /// The segments' p50s added (absent when a segment has no RTT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<Estimate>,
    /// The chain's p50 through its entry, with its own interval (absent without `--through`
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
    /// The 10th percentile of its RTTs (ms): with `summary.p90_ms`, how wide they are (the
    /// path's shape, not how well the p50 is known).
    pub p10_ms: f64,
    /// How well `summary.p50_ms` is known: the larger side of its 95 % order-statistic interval
    /// from this leg's RTTs (ms); absent without an answer, and in files written before it
    /// existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ci_ms: Option<f64>,
    /// Why it has no RTT, or lost some attempts: the first error's example.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `--mtu`, segments only: the path MTU each way, searched from the segment's upstream end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<SegmentMtu>,
    /// `--dscp`/`--tos`/`--ecn`, segments only: the marking each way, read from the segment's
    /// upstream end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marking: Option<SegmentMarking>,
}

/// A segment's DSCP/ECN marking each way (`npt trace --dscp`): marked UDP echoes to the
/// segment's `npt serve` (same host and port), each asking its reply to carry the same
/// marking, sent by this host for the first segment and by the upstream hop's agent for the
/// others. `up` is toward the segment's far end (as it says each echo arrived), `down` back
/// (as the sender's kernel says each reply arrived); the names are `npt probe`'s
/// (`summary.marking.up`/`down`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SegmentMarking {
    /// `udp://HOST:PORT` read.
    #[schemars(regex(pattern = "^udp://"))]
    pub to: String,
    /// Absent when the read failed (`error` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<crate::marking::Way>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<crate::marking::Way>,
    /// Why there is no read: `KIND: message` (a refusal by the agent, a silent far end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A segment's path MTU (`npt trace --mtu`): `npt mtu`'s search of the segment's `npt serve`
/// (UDP, same host and port), from this host for the first segment and by the upstream hop's
/// agent for the others. `up` is toward the segment's far end, `down` back.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SegmentMtu {
    /// `udp://HOST:PORT` searched.
    #[schemars(regex(pattern = "^udp://"))]
    pub to: String,
    /// IP + UDP header bytes under a datagram (28 IPv4, 48 IPv6).
    pub headers: u32,
    /// Absent when the search failed (`error` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<MtuDirection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<MtuDirection>,
    /// Why there is no search: `KIND: message` (a refusal by the agent, a silent far end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SegmentMtu {
    /// One way in words: `1372 B (ICMP: MTU 1400 from 10.0.1.2)`, `1372 B, black hole
    /// (1373 lost, no ICMP)`, `-` when the search failed.
    pub fn way_text(d: Option<&MtuDirection>) -> String {
        let Some(d) = d else { return "-".into() };
        let crossed = d
            .largest_datagram
            .map_or("nothing crossed".to_string(), |b| format!("{b} B"));
        let lost = d
            .smallest_lost
            .map(|l| format!("{l} lost"))
            .unwrap_or_default();
        let why = match d.verdict.as_str() {
            "max_crossed" => "the largest tried".to_string(),
            "icmp" => {
                let mut w = "ICMP".to_string();
                if let Some(m) = d.icmp_mtu {
                    w += &format!(": MTU {m}");
                }
                if let Some(f) = &d.icmp_from {
                    w += &format!(" from {f}");
                }
                w
            }
            "black_hole" => format!("black hole: {lost}, no ICMP"),
            "local" => format!("local interface MTU {}", d.local_mtu.unwrap_or(0)),
            "nothing_crossed" => return "nothing crossed".into(),
            other => return other.to_string(),
        };
        let frag = d
            .largest_fragment
            .map(|f| format!(", fragments of {f}"))
            .unwrap_or_default();
        format!("{crossed} ({why}{frag})")
    }
}

/// A figure computed from one or several legs, with how well it is known (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Estimate {
    pub p50_ms: f64,
    /// The 95 % half-width of `p50_ms`: the legs' p50 intervals in quadrature (ms); absent in
    /// files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ci_ms: Option<f64>,
    /// `relays_cost` only: `true` when its size is at most `p50_ci_ms` — no finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_noise: Option<bool>,
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
    /// One leg's `(p50, ci)`.
    pub fn of(p50_ci: (f64, f64)) -> Estimate {
        Estimate {
            p50_ms: p50_ci.0,
            p50_ci_ms: Some(p50_ci.1),
            within_noise: None,
        }
    }

    /// The sum of independently measured figures `(p50, ci)`: their intervals in quadrature.
    pub fn sum(parts: impl IntoIterator<Item = (f64, f64)>) -> Estimate {
        let (mut p50, mut sq) = (0.0, 0.0);
        for (v, ci) in parts {
            p50 += v;
            sq += ci * ci;
        }
        Estimate::of((p50, f64::sqrt(sq)))
    }

    /// `a − b`, of independently measured `a` (p50, ci) and `b`: within noise when its size
    /// is at most the two intervals in quadrature.
    pub fn difference(a: (f64, f64), b: &Estimate) -> Estimate {
        let ms = a.0 - b.p50_ms;
        let b_ci = b.p50_ci_ms.unwrap_or(0.0);
        let ci = (a.1 * a.1 + b_ci * b_ci).sqrt();
        Estimate {
            p50_ms: ms,
            p50_ci_ms: Some(ci),
            within_noise: Some(ms.abs() <= ci),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_of_sums_and_differences_add_in_quadrature() {
        let s = Estimate::sum([(152.0, 3.0), (32.0, 4.0), (69.0, 0.0)]);
        assert_eq!(
            (s.p50_ms, s.p50_ci_ms, s.within_noise),
            (253.0, Some(5.0), None)
        );
        // +2 ms inside ±13: no finding; +14 ms outside it: one.
        let c = Estimate::difference((255.0, 12.0), &s);
        assert_eq!(
            (c.p50_ms, c.p50_ci_ms, c.within_noise),
            (2.0, Some(13.0), Some(true))
        );
        let c = Estimate::difference((267.0, 12.0), &s);
        assert_eq!(c.within_noise, Some(false));
        // Exactly at the interval is still noise.
        assert_eq!(
            Estimate::difference((266.0, 12.0), &s).within_noise,
            Some(true)
        );
        assert_eq!(Estimate::sum([]).p50_ci_ms, Some(0.0));
    }
}
