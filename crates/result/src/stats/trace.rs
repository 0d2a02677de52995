//! A trace's measurements and the one function that makes its body: each leg (segment or
//! chain) is a ping's stats value ([`PingStats`]), summarized by the ping's own summarize, and
//! the figures across legs — the sum of the segments, the relays' cost, their p50s' intervals —
//! are made here and nowhere else ([`crate::trace`] says how an interval is computed). A trace is not
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

/// A leg's p50 and how well it is known — the larger side of its 95 % order-statistic
/// interval ([`npt_stats::Histogram::quantile_ci`]) — in ms; `None` without an answer.
pub fn p50_ci(s: &PingStats) -> Option<(f64, f64)> {
    if s.rtt.is_empty() {
        return None;
    }
    let ci = s.rtt.quantile_ci(0.5, npt_stats::Z95);
    Some((s.rtt.summary().p50, ci.half_width_ns() / 1e6))
}

/// The segments' sum and the relays' cost of legs measured together (`None` where a leg that
/// goes into them has no answer).
pub fn figures(
    segments: &[&PingStats],
    chain: Option<&PingStats>,
) -> (Option<Estimate>, Option<Estimate>) {
    let parts: Option<Vec<(f64, f64)>> = segments.iter().map(|s| p50_ci(s)).collect();
    let sum = parts.filter(|p| !p.is_empty()).map(Estimate::sum);
    let cost = match (chain.and_then(p50_ci), &sum) {
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
            .map(|s| RoundLeg::p50(p50_ci(s).map(|p| p.0)))
            .collect(),
        sum_p50_ms: sum.map(|s| s.p50_ms),
        chain_p50_ms: chain.and_then(p50_ci).map(|p| p.0),
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
        setup: None,
    });
    let p50_ci_ms = p50_ci(&l.stats).map(|(_, ci)| ci);
    let p10_ms = match p50_ci_ms {
        Some(_) => l.stats.rtt.quantile_ns(0.1) as f64 / 1e6,
        None => 0.0,
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
        p50_ci_ms,
        error,
        mtu: None,
        marking: None,
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
                chain: chain.and_then(p50_ci).map(Estimate::of),
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
        // Every leg's p50 with its interval; the sum's and the cost's are theirs in quadrature.
        let ci = |l: &Leg| l.p50_ci_ms.unwrap();
        let sq: f64 = b.segments.iter().map(|l| ci(l).powi(2)).sum();
        assert!((sum.p50_ci_ms.unwrap() - sq.sqrt()).abs() < 1e-9, "{sum:?}");
        let chain_ci = ci(b.chain.as_ref().unwrap());
        assert!((cost.p50_ci_ms.unwrap() - (sq + chain_ci.powi(2)).sqrt()).abs() < 1e-9);
        assert_eq!(b.summary.chain.unwrap().p50_ci_ms, Some(chain_ci));
        assert_eq!(
            cost.within_noise,
            Some(cost.p50_ms.abs() <= cost.p50_ci_ms.unwrap())
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

    fn ns(values: impl IntoIterator<Item = u64>) -> PingStats {
        let mut s = PingStats::default();
        for v in values {
            s.sent += 1;
            s.received += 1;
            s.rtt.record(v);
        }
        s
    }

    /// 100 RTTs of 1..=100 ms: the p50's ranks are 50 ∓ 1.96 · √(100 · 0.25) = 50 ∓ 9.8 →
    /// 40 and 60. Between 2²⁵ and 2²⁶ ns HDR's buckets are 32,768 ns wide: the p50 reads as
    /// 50 ms's bucket's highest value, 1,525 · 32,768 + 32,767 = 50,003,967 ns; the interval
    /// runs from 40 ms's bucket's lowest, 1,220 · 32,768 = 39,976,960, to 60 ms's highest,
    /// 1,831 · 32,768 + 32,767 = 60,030,975: ±10.027008 ms (the larger side). Two such
    /// segments sum to ±10.027008 · √2; half their p10–p90 ranges (±40 ms each) are how wide
    /// they are, not how well their p50s are known.
    #[test]
    fn a_legs_p50_is_known_to_its_order_statistic_interval() {
        let leg = || ns((1..=100).map(|ms| ms * 1_000_000));
        let b = legs(vec![leg(), leg()], leg()).summarize(&meta());
        let each = 10.027_008;
        for l in b.segments.iter().chain(&b.chain) {
            assert_eq!(l.summary.p50_ms, 50.003_967);
            assert!((l.p50_ci_ms.unwrap() - each).abs() < 1e-9, "{l:?}");
        }
        let sum = b.summary.sum.unwrap();
        assert!((sum.p50_ms - 100.007_934).abs() < 1e-9);
        assert!((sum.p50_ci_ms.unwrap() - each * 2f64.sqrt()).abs() < 1e-9);
        let cost = b.summary.relays_cost.unwrap();
        assert!((cost.p50_ci_ms.unwrap() - each * 3f64.sqrt()).abs() < 1e-9);
        // The chain (50 ms) is 50 ms less than the sum (100 ms): a finding, ±17.4.
        assert_eq!(cost.within_noise, Some(false));
        // p10 is 10 ms's bucket (2²³..2²⁴ ns: 8,192 ns wide), read as its highest value.
        assert_eq!(b.segments[0].p10_ms, 10.002_431);
    }

    /// A wide path, well sampled: segment 1's 4,000 RTTs spread evenly over 10–50 ms (p10–p90
    /// 14–46 ms: ±16 ms of width), segment 2 a steady 20 ms, and the chain 3 ms more than the
    /// two (33–73 ms). The old rule — half the p10–p90 range as the noise — called the
    /// relays' +3 ms "within noise" (±22.6); each p50 is known to about ±0.6 ms (ranks 2,000 ∓
    /// 1.96 · √1,000 = ∓62 of 4,000 values 0.01 ms apart), so the +3 ms is a finding.
    #[test]
    fn a_wide_but_well_sampled_leg_leaves_the_relays_cost_a_finding() {
        let even = |from_ms: u64| ns((0..4_000).map(move |i| from_ms * 1_000_000 + i * 10_000));
        let steady = ns(std::iter::repeat_n(20_000_000, 4_000));
        let b = legs(vec![even(10), steady], even(33)).summarize(&meta());
        let cost = b.summary.relays_cost.unwrap();
        assert!((cost.p50_ms - 3.0).abs() < 0.1, "{cost:?}");
        let ci = cost.p50_ci_ms.unwrap();
        assert!(
            ci < 1.5,
            "two intervals of about ±0.62 and one of a bucket: {cost:?}"
        );
        assert_eq!(cost.within_noise, Some(false));
        // Half the p10–p90 ranges in quadrature, the old rule's noise: the cost was inside it.
        let half_width = |l: &Leg| (l.summary.p90_ms - l.p10_ms) / 2.0;
        let old: f64 = b
            .segments
            .iter()
            .chain(&b.chain)
            .map(|l| half_width(l).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!((old - 22.6).abs() < 0.2, "{old}");
        assert!(cost.p50_ms <= old);
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
