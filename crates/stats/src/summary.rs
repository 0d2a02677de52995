//! The one summary of a latency histogram — count, min, mean, deviation and six percentiles in
//! milliseconds — that every engine writes into its result and `merge` writes again after
//! adding histograms, so a merged figure is computed exactly as a measured one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Histogram;

/// A latency distribution summarized in milliseconds (all zeros when `count` is 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Summary {
    /// Samples recorded.
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    pub max: f64,
}

impl Histogram {
    /// min, mean, stddev and percentiles in milliseconds.
    ///
    /// The same figures as hdrhistogram's `mean`, `stdev` and `value_at_quantile` (the same
    /// sums in the same order, so the same bits), from two walks over the buckets instead of
    /// nine: one collecting the recorded values (a round's histogram has ten thousand buckets
    /// and a handful of values), one for the six percentiles. A monitor summarises a thousand
    /// rounds a second, where the nine walks were a tenth of its CPU.
    pub fn summary(&self) -> Summary {
        let h = self.get();
        if h.is_empty() {
            return Summary::default();
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        let recorded: Vec<(f64, f64)> = h
            .iter_recorded()
            .map(|v| {
                (
                    h.median_equivalent(v.value_iterated_to()) as f64,
                    v.count_at_value() as f64,
                )
            })
            .collect();
        let total = h.len() as f64;
        let mean = recorded
            .iter()
            .fold(0.0_f64, |t, &(v, c)| t + v * c / total);
        let dev = recorded.iter().fold(0.0_f64, |g, &(v, c)| {
            let d = v - mean;
            g + (d * d) * c
        });
        let mut q = [0u64; 6];
        for (slot, v) in q
            .iter_mut()
            .zip(h.value_at_quantiles([0.50, 0.90, 0.95, 0.99, 0.999, 0.9999]))
        {
            *slot = v;
        }
        Summary {
            count: h.len(),
            min: ms(h.min()),
            mean: mean / 1e6,
            stddev: (dev / total).sqrt() / 1e6,
            p50: ms(q[0]),
            p90: ms(q[1]),
            p95: ms(q[2]),
            p99: ms(q[3]),
            p999: ms(q[4]),
            p9999: ms(q[5]),
            max: ms(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut h = Histogram::new();
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert!((s.min - 0.001).abs() < 1e-6);
        assert!((s.p50 - 0.5).abs() < 0.001, "{}", s.p50);
        assert!((s.p99 - 0.99).abs() < 0.001, "{}", s.p99);
        assert!((s.max - 1.0).abs() < 0.001, "{}", s.max);
        assert!((s.mean - 0.5005).abs() < 0.001, "{}", s.mean);
    }

    /// The two-walk summary gives hdrhistogram's own figures bit for bit, on histograms of a
    /// few values (a round) and of many spread over six decades.
    #[test]
    fn summary_is_hdrhistograms_own_figures_to_the_bit() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in [1u64, 2, 5, 100, 20_000] {
            let mut h = Histogram::new();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                h.record(1 + x % 10u64.pow(1 + u32::try_from(x % 6).unwrap_or(0)) * 1_000);
            }
            let (s, r) = (h.summary(), h.get());
            let ms = |ns: u64| ns as f64 / 1e6;
            assert_eq!(s.mean.to_bits(), (r.mean() / 1e6).to_bits(), "{n}");
            assert_eq!(s.stddev.to_bits(), (r.stdev() / 1e6).to_bits(), "{n}");
            let qs = [s.p50, s.p90, s.p95, s.p99, s.p999, s.p9999];
            for (got, q) in qs.into_iter().zip([0.5, 0.9, 0.95, 0.99, 0.999, 0.9999]) {
                assert_eq!(
                    got.to_bits(),
                    ms(r.value_at_quantile(q)).to_bits(),
                    "{n} {q}"
                );
            }
        }
    }
}
