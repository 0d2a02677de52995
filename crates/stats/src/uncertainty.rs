//! How well a histogram's figures are *known*: the confidence interval of its mean and of a
//! percentile, from its own samples. This is the uncertainty of a statistic, not the width of
//! the distribution — a bimodal path whose p10–p90 spans 40 ms has, over thousands of samples,
//! a mean known to a fraction of a millisecond. `npt compare` calls a difference "within noise"
//! only inside these intervals (docs/compare.md, "Noise").
//!
//! * **The mean**: `t · stddev / √count` — Student's t at 95 % for `count − 1` degrees of
//!   freedom ([`t95`]: 1.96 for thousands of samples, 2.26 for ten) — and never less than
//!   [`Histogram::mean_resolution_ns`], how far the histogram's own rounding can move the
//!   mean (each value is kept as its bucket's middle). The floor is taken as a maximum, not
//!   added: the rounding is bounded, not random.
//! * **A percentile**: the order-statistic (binomial) interval, which assumes nothing about the
//!   distribution: the ranks `n·q ∓ z·√(n·q·(1−q))` (rounded outwards, kept within 1..n), and
//!   the values at those ranks, the lower one at its bucket's lowest value and the upper one at
//!   its bucket's highest — so the interval is never narrower than the histogram's resolution.
//!
//! Pure functions of the recorded values, tested with histograms whose answer is worked out by
//! hand.

use super::Histogram;

/// The two-sided 95 % normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Student's t at two-sided 95 % for `df` degrees of freedom (1..=30 from the table, beyond
/// that the Cornish–Fisher expansion, within 0.001 of the exact value); `df` 0 is
/// undefined and gives infinity.
pub fn t95(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df == 0 {
        return f64::INFINITY;
    }
    if let Some(t) = usize::try_from(df - 1).ok().and_then(|i| TABLE.get(i)) {
        return *t;
    }
    let (z, v) = (Z95, df as f64);
    z + (z.powi(3) + z) / (4.0 * v)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
}

/// An interval around a statistic, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interval {
    /// The statistic itself.
    pub value_ns: f64,
    pub lo_ns: f64,
    pub hi_ns: f64,
}

impl Interval {
    /// The larger distance from the statistic to either end: the `±` of the interval.
    pub fn half_width_ns(&self) -> f64 {
        (self.value_ns - self.lo_ns)
            .max(self.hi_ns - self.value_ns)
            .max(0.0)
    }
}

impl Histogram {
    /// How far [`Histogram::mean_ns`] can be from the mean of the values recorded, at most, in
    /// ns: every value is kept as its bucket's middle, so the mean is off by at most the
    /// average of the buckets' half-widths (0 where every bucket holds one value, below 2,048
    /// ns; about mean / 2,048 above).
    pub fn mean_resolution_ns(&self) -> f64 {
        let h = self.get();
        if h.is_empty() {
            return 0.0;
        }
        let sum: f64 = h
            .iter_recorded()
            .map(|v| {
                let half = h.equivalent_range(v.value_iterated_to()) / 2;
                half as f64 * v.count_at_value() as f64
            })
            .sum();
        sum / h.len() as f64
    }

    /// The 95 % confidence interval of the mean ([module doc](self)): `t95(count − 1) ·
    /// stddev / √count`, at least [`Histogram::mean_resolution_ns`]. One value has no spread
    /// to go by: its interval is the resolution alone.
    pub fn mean_ci95(&self) -> Interval {
        let h = self.get();
        let mean = h.mean();
        let n = h.len();
        let sampling = if n >= 2 {
            t95(n - 1) * h.stdev() / (n as f64).sqrt()
        } else {
            0.0
        };
        let half = sampling.max(self.mean_resolution_ns());
        Interval {
            value_ns: mean,
            lo_ns: mean - half,
            hi_ns: mean + half,
        }
    }

    /// The order-statistic interval of quantile `q` (0..=1) at normal quantile `z` ([module
    /// doc](self)); [`Z95`] gives the 95 % interval. All zeros when the histogram is empty.
    pub fn quantile_ci(&self, q: f64, z: f64) -> Interval {
        let h = self.get();
        let n = h.len();
        if n == 0 {
            return Interval::default();
        }
        let q = q.clamp(0.0, 1.0);
        let nf = n as f64;
        let d = z * (nf * q * (1.0 - q)).sqrt();
        // NO-PANIC: float-to-int `as` saturates; both ranks are kept within 1..=n.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let rank = |x: f64| (x.max(1.0) as u64).clamp(1, n);
        let lo = self.value_at_rank(rank((nf * q - d).floor()));
        let hi = self.value_at_rank(rank((nf * q + d).ceil()));
        Interval {
            value_ns: h.value_at_quantile(q) as f64,
            lo_ns: h.lowest_equivalent(lo) as f64,
            hi_ns: h.highest_equivalent(hi) as f64,
        }
    }

    /// The recorded value of rank `r` (1 = the smallest), as its bucket's highest value.
    fn value_at_rank(&self, r: u64) -> u64 {
        let h = self.get();
        let mut seen = 0;
        for v in h.iter_recorded() {
            seen += v.count_at_value();
            if seen >= r {
                return v.value_iterated_to();
            }
        }
        h.max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// 50 values of 1,000 ns and 50 of 2,000 ns (below 2,048 every ns is its own bucket, so
    /// nothing is rounded): mean 1,500, stddev 500 (of the population, as HDR computes it),
    /// n = 100: the mean's 95 % interval is t(99) · 500 / 10 = 1.984 · 50 = ±99.2 ns.
    #[test]
    fn the_means_interval_is_t_times_its_standard_error() {
        let mut h = Histogram::new();
        h.record_n(1_000, 50);
        h.record_n(2_000, 50);
        assert_eq!(h.mean_resolution_ns(), 0.0);
        let ci = h.mean_ci95();
        assert_eq!(ci.value_ns, 1_500.0);
        let t99 = t95(99);
        assert!(close(t99, 1.984, 0.001), "{t99}");
        assert!(close(ci.half_width_ns(), t99 * 50.0, 1e-9), "{ci:?}");
        assert!(close(ci.lo_ns, 1_500.0 - t99 * 50.0, 1e-9));
        // Ten thousand of each: 500 / 141.42 · 1.960 = ±6.93 ns.
        let mut big = Histogram::new();
        big.record_n(1_000, 10_000);
        big.record_n(2_000, 10_000);
        assert!(close(big.mean_ci95().half_width_ns(), 6.93, 0.01));
    }

    /// 1,000 values all of 40 ms: no spread, but 40,000,000 ns lies in a bucket 32,768 ns wide
    /// (2²⁵ ≤ v < 2²⁶: 2¹⁵ ns), kept as its middle: the mean is known to ±16,384 ns, no better.
    #[test]
    fn the_means_interval_is_never_narrower_than_the_histograms_rounding() {
        let mut h = Histogram::new();
        h.record_n(40_000_000, 1_000);
        assert_eq!(h.mean_resolution_ns(), 16_384.0);
        assert_eq!(h.mean_ci95().half_width_ns(), 16_384.0);
        // Half at 1 ms (buckets of 512 ns), half at 40 ms: the average half-width.
        let mut mixed = Histogram::new();
        mixed.record_n(1_000_000, 10);
        mixed.record_n(40_000_000, 10);
        assert_eq!(mixed.mean_resolution_ns(), (256.0 + 16_384.0) / 2.0);
        // One value: the resolution alone; none: nothing.
        let mut one = Histogram::new();
        one.record(1_500);
        assert_eq!(one.mean_ci95().half_width_ns(), 0.0);
        assert_eq!(Histogram::new().mean_ci95(), Interval::default());
    }

    /// 100 values, 1..=100 ns (below 2,048 ns each is its own bucket, so nothing is rounded):
    /// the median's ranks are 50 ∓ 1.96 · √(100 · 0.25) = 50 ∓ 9.8 → ranks 40 and 60 → 40
    /// and 60 ns.
    #[test]
    fn a_percentiles_interval_is_the_values_at_the_binomial_ranks() {
        let mut h = Histogram::new();
        for v in 1..=100u64 {
            h.record(v);
        }
        let ci = h.quantile_ci(0.5, Z95);
        assert_eq!((ci.value_ns, ci.lo_ns, ci.hi_ns), (50.0, 40.0, 60.0));
        assert_eq!(ci.half_width_ns(), 10.0);
        // p90: 90 ∓ 1.96 · 3 = 84.12 .. 95.88 → ranks 84 and 96.
        let ci = h.quantile_ci(0.9, Z95);
        assert_eq!((ci.value_ns, ci.lo_ns, ci.hi_ns), (90.0, 84.0, 96.0));
        // p99 of 100: 99 ∓ 1.95 → ranks 97 and 101, kept at 100.
        let ci = h.quantile_ci(0.99, Z95);
        assert_eq!((ci.lo_ns, ci.hi_ns), (97.0, 100.0));
        assert_eq!(Histogram::new().quantile_ci(0.5, Z95), Interval::default());
    }

    /// The same ranks over 40 ms values: 1,000 values, 500 at 40 ms and 500 at 60 ms. The
    /// median's ranks 500 ∓ 31 (469 and 531) fall one in each mode: the interval spans both,
    /// from 40 ms's bucket's lowest value (40,000,000 rounded down to 32,768 ns: 39,976,960)
    /// to 60 ms's bucket's highest (59,998,208 + 32,767 = 60,030,975).
    #[test]
    fn a_percentiles_interval_includes_its_buckets() {
        let mut h = Histogram::new();
        h.record_n(40_000_000, 500);
        h.record_n(60_000_000, 500);
        let ci = h.quantile_ci(0.5, Z95);
        assert_eq!((ci.lo_ns, ci.hi_ns), (39_976_960.0, 60_030_975.0));
        // All at 40 ms: one bucket, and the interval is that bucket.
        let mut one = Histogram::new();
        one.record_n(40_000_000, 1_000);
        let ci = one.quantile_ci(0.5, Z95);
        assert_eq!((ci.lo_ns, ci.hi_ns), (39_976_960.0, 40_009_727.0));
    }

    #[test]
    fn t_table_and_its_tail() {
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(9), 2.262);
        assert_eq!(t95(30), 2.042);
        // Exact values: t(40) 2.0211, t(120) 1.9799, t(1000) 1.9623.
        assert!(close(t95(40), 2.0211, 0.001), "{}", t95(40));
        assert!(close(t95(120), 1.9799, 0.001));
        assert!(close(t95(1000), 1.9623, 0.001));
        assert!(t95(0).is_infinite());
    }
}
