//! A trace's measurements and the one function that makes its body: each leg (segment or
//! chain) is a ping's stats value ([`PingStats`]), summarized by the ping's own summarize, and
//! the figures across legs — the sum of the segments, the relays' cost, their spreads — are
//! made here and nowhere else ([`crate::trace`] says how a spread is computed). A trace is not
//! merged (`npt merge` takes segmented load runs), so this is no [`super::Stats`] value.

use std::collections::BTreeMap;

use crate::common::{Errors, NptLatency};
use crate::stats::{PingMeta, PingStats, Stats};
use crate::trace::{hist, During, Estimate, Leg, Round, RoundLeg, TraceBody, TraceSummary};
use crate::Histograms;

/// One leg as measured: who measured it, what, and its ping's stats value.
#[derive(Clone, Debug, Default)]
pub struct LegStats {
    /// `here` or the agent's `npt://HOST:PORT`.
    pub from: String,
    /// `PROTO://HOST:PORT`.
    pub to: String,
    pub addresses: Vec<String>,
    pub stats: PingStats,
}

/// A whole trace as measured.
#[derive(Clone, Debug, Default)]
pub struct TraceStats {
    pub segments: Vec<LegStats>,
    pub chain: Option<LegStats>,
    pub rounds: Vec<Round>,
    pub during: Option<During>,
}

/// What the trace was of.
#[derive(Clone, Debug)]
pub struct TraceMeta {
    pub target: String,
    pub proto: String,
}

/// A leg's p50 and spread (half its p10–p90 range), in ms; `None` without an answer.
pub fn p50_spread(s: &PingStats) -> Option<(f64, f64)> {
    if s.rtt.is_empty() {
        return None;
    }
    let q = |x: f64| s.rtt.quantile_ns(x) as f64 / 1e6;
    Some((s.rtt.summary().p50, (q(0.9) - q(0.1)) / 2.0))
}

/// The segments' sum and the relays' cost of legs measured together (`None` where a leg that
/// goes into them has no answer).
pub fn figures(
    segments: &[&PingStats],
    chain: Option<&PingStats>,
) -> (Option<Estimate>, Option<Estimate>) {
    let parts: Option<Vec<(f64, f64)>> = segments.iter().map(|s| p50_spread(s)).collect();
    let sum = parts.filter(|p| !p.is_empty()).map(Estimate::sum);
    let cost = match (chain.and_then(p50_spread), &sum) {
        (Some(c), Some(s)) => Some(Estimate::difference(c, s)),
        _ => None,
    };
    (sum, cost)
}

/// One round's figures.
pub fn round(
    index: u32,
    phase: &str,
    (start_s, end_s): (f64, f64),
    segments: &[&PingStats],
    chain: Option<&PingStats>,
) -> Round {
    let (sum, cost) = figures(segments, chain);
    Round {
        index,
        phase: phase.to_string(),
        start_s,
        end_s,
        segments: segments
            .iter()
            .map(|s| RoundLeg::p50(p50_spread(s).map(|p| p.0)))
            .collect(),
        sum_p50_ms: sum.map(|s| s.p50_ms),
        chain_p50_ms: chain.and_then(p50_spread).map(|p| p.0),
        relays_cost_ms: cost.map(|c| c.p50_ms),
    }
}

fn leg(l: &LegStats, proto: &str) -> Leg {
    let ping = l.stats.summarize(&PingMeta {
        target: l.to.clone(),
        proto: proto.to_string(),
        addresses: l.addresses.clone(),
        measured_from: None,
        answered_by: None,
    });
    let (p10_ms, spread_ms) = match p50_spread(&l.stats) {
        Some((_, spread)) => (l.stats.rtt.quantile_ns(0.1) as f64 / 1e6, spread),
        None => (0.0, 0.0),
    };
    let error = l
        .stats
        .errors
        .iter()
        .next()
        .map(|(kind, k)| match k.examples.first() {
            Some(e) => format!("{kind}: {e}"),
            None => kind.to_string(),
        });
    Leg {
        from: l.from.clone(),
        to: l.to.clone(),
        addresses: l.addresses.clone(),
        summary: ping.summary,
        p10_ms,
        spread_ms,
        error,
    }
}

impl TraceStats {
    /// The body of these measurements.
    pub fn summarize(&self, m: &TraceMeta) -> TraceBody {
        let seg: Vec<&PingStats> = self.segments.iter().map(|l| &l.stats).collect();
        let chain = self.chain.as_ref().map(|c| &c.stats);
        let (sum, relays_cost) = figures(&seg, chain);
        let mut histograms = Histograms::new();
        let mut errors = crate::ErrorCounts::default();
        let mut attempts = 0;
        for (i, l) in self.segments.iter().enumerate() {
            histograms.insert(hist::segment(i), l.stats.rtt.to_serialized());
            errors += &l.stats.errors;
            attempts += l.stats.sent;
        }
        let mut latency = BTreeMap::new();
        if let Some(c) = chain {
            histograms.insert(hist::CHAIN.to_string(), c.rtt.to_serialized());
            errors += &c.errors;
            attempts += c.sent;
            if !c.rtt.is_empty() {
                latency.insert(m.proto.clone(), NptLatency::from(&c.rtt.summary()));
            }
        }
        TraceBody {
            target: m.target.clone(),
            proto: m.proto.clone(),
            summary: TraceSummary {
                segments: u32::try_from(self.segments.len()).unwrap_or(u32::MAX),
                sum,
                chain: chain.and_then(p50_spread).map(|(p50_ms, s)| Estimate {
                    p50_ms,
                    spread_ms: s,
                    spread_worst_ms: s,
                }),
                relays_cost,
            },
            segments: self.segments.iter().map(|l| leg(l, &m.proto)).collect(),
            chain: self.chain.as_ref().map(|l| leg(l, &m.proto)),
            rounds: self.rounds.clone(),
            during: self.during.clone(),
            latency,
            errors: Errors::new(errors, attempts),
            histograms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ms: &[u64], failed: u64) -> PingStats {
        let mut s = PingStats::default();
        for v in ms {
            s.sent += 1;
            s.received += 1;
            s.rtt.record(v * 1_000_000);
        }
        for _ in 0..failed {
            s.sent += 1;
            s.errors.record("timeout", || "no answer in 1s".into());
        }
        s
    }

    fn legs(segments: Vec<PingStats>, chain: PingStats) -> TraceStats {
        let leg = |i: usize, stats| LegStats {
            from: if i == 0 {
                "here".into()
            } else {
                format!("npt://h{i}:7777")
            },
            to: format!("tcp://h{}:7777", i + 1),
            addresses: vec![],
            stats,
        };
        TraceStats {
            segments: segments
                .into_iter()
                .enumerate()
                .map(|(i, s)| leg(i, s))
                .collect(),
            chain: Some(LegStats {
                from: "here".into(),
                to: "tcp://h1:9003".into(),
                addresses: vec![],
                stats: chain,
            }),
            ..TraceStats::default()
        }
    }

    fn meta() -> TraceMeta {
        TraceMeta {
            target: "tcp://t:7777".into(),
            proto: "tcp".into(),
        }
    }

    #[test]
    fn the_waterfall_adds_the_segments_and_subtracts_them_from_the_chain() {
        let t = legs(
            vec![
                stats(&[150, 151, 152, 153, 154], 0),
                stats(&[32; 5], 0),
                stats(&[69; 5], 1),
            ],
            stats(&[255, 256, 256, 256, 258], 0),
        );
        let b = t.summarize(&meta());
        // HDR keeps 3 significant digits: a value reads back within 0.1 % (0.2 ms at 253 ms).
        let p = |x: f64| x.round();
        assert_eq!(b.segments.len(), 3);
        assert_eq!(p(b.segments[0].summary.p50_ms), 152.0);
        let sum = b.summary.sum.unwrap();
        assert_eq!(p(sum.p50_ms), 253.0);
        let cost = b.summary.relays_cost.unwrap();
        assert!(
            (cost.p50_ms - (b.chain.as_ref().unwrap().summary.p50_ms - sum.p50_ms)).abs() < 1e-9
        );
        assert_eq!(p(cost.p50_ms), 3.0);
        // Segment 0's p10..p90 is 150..154 (HDR precision): a spread of about 2 ms.
        assert!(
            (b.segments[0].spread_ms - 2.0).abs() < 0.1,
            "{}",
            b.segments[0].spread_ms
        );
        assert!(
            cost.spread_ms >= b.segments[0].spread_ms && cost.spread_worst_ms >= cost.spread_ms
        );
        assert_eq!(b.errors.total_errors, 1);
        assert_eq!(b.errors.attempts, Some(21));
        assert!(b.segments[2]
            .error
            .as_deref()
            .unwrap()
            .starts_with("timeout"));
        assert_eq!(
            b.histograms.keys().collect::<Vec<_>>(),
            ["chain", "segment.0", "segment.1", "segment.2"]
        );
        assert_eq!(b.latency.keys().collect::<Vec<_>>(), ["tcp"]);
    }

    #[test]
    fn a_silent_segment_leaves_no_sum_and_no_cost() {
        let t = legs(vec![stats(&[10], 0), stats(&[], 3)], stats(&[20], 0));
        let b = t.summarize(&meta());
        assert!(b.summary.sum.is_none() && b.summary.relays_cost.is_none());
        assert_eq!(b.segments[1].summary.received, 0);
        let r = round(
            0,
            "before",
            (0.0, 1.0),
            &[&t.segments[0].stats, &t.segments[1].stats],
            None,
        );
        assert_eq!(r.segments[1].p50_ms, None);
        assert_eq!(
            (r.sum_p50_ms, r.chain_p50_ms, r.relays_cost_ms),
            (None, None, None)
        );
    }
}
