//! Noise is not a finding. Every difference the table shows — overhead = avg − theoretical,
//! vs baseline = avg − the baseline's avg — carries its spread, and one that lies inside the
//! spread is "within noise", with no percentage. The rule (docs/compare.md, "Noise"):
//!
//! * **A row's spread** is a half-width, in ms, of the avg the columns compare:
//!   - over several runs (`--runs N`): half the range of its runs' p50s or of its runs' avgs,
//!     whichever is wider — how far apart repeated runs of the same path landed;
//!   - over one run: half the p10–p90 range of its latencies (the middle 80 %, as `npt
//!     trace`'s spread) — the path's own variation from one request to the next — or twice the
//!     avg's standard error (2 · stddev / √count, the avg's ~95 % interval) where that is
//!     larger: an avg of ten pings that one stall moved by 2 ms is no surer than that, while
//!     the avg of thousands of echoes on a lossy link, raised by its retransmission tail, is
//!     known well (the tail is the finding, not noise). A result without a usable histogram gives half its min–p90 range instead of
//!     the p10–p90 one (wider, so it never turns noise into a finding).
//! * **A theoretical latency**'s spread: a pinged or measured hop has the one-run spread of its
//!   RTTs, a sum of hops their spreads in quadrature, a typed figure none.
//! * **A difference** of two independently measured figures has their spreads in quadrature
//!   (`sqrt(a² + b²)`, as `npt trace` adds its legs); it is within noise when its size is at
//!   most that spread.
//! * **A percentage** is given only for a difference outside the noise, of a base (the
//!   theoretical latency, the baseline's avg) at least [`PCT_BASE_OVER_SPREAD`] times its own
//!   spread: the base is then known to 10 % or better, and so is the percentage. A percentage
//!   of a base that is mostly noise (0.02 ± 0.01 ms on loopback) says nothing.
//!
//! Pure functions of numbers, tested with fixed ones.

use npt_stats::{Histogram, Summary};

use super::Range;

/// A percentage of a base is shown only when the base is at least this many times its spread.
pub const PCT_BASE_OVER_SPREAD: f64 = 10.0;

/// Where a row's spread came from (`avg_spread_from`).
pub mod from {
    /// Several runs: the wider of half the runs' p50 range and half their avg range.
    pub const RUNS: &str = "runs";
    /// One run: half the p10–p90 range of its latencies.
    pub const P10_P90: &str = "p10-p90";
    /// One run whose avg's ~95 % interval, twice its standard error (2 · stddev / √count), is
    /// wider than half its p10–p90 (or min–p90) range: that interval.
    pub const SEM2: &str = "2sem";
    /// One run without a usable histogram: half the min–p90 range.
    pub const MIN_P90: &str = "min-p90";
}

/// A difference `value − base` as the table shows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Difference {
    pub ms: f64,
    /// The two figures' spreads in quadrature.
    pub spread_ms: f64,
    /// `|ms| <= spread_ms`: no finding.
    pub within_noise: bool,
    /// `ms` as a percentage of the base; `None` within noise, or when the base is not at
    /// least [`PCT_BASE_OVER_SPREAD`] times its spread.
    pub pct: Option<f64>,
}

/// `value − base`, each given as (figure, spread) in ms.
pub fn difference(value: (f64, f64), base: (f64, f64)) -> Difference {
    let ms = value.0 - base.0;
    let spread_ms = in_quadrature([value.1, base.1]);
    let within_noise = ms.abs() <= spread_ms;
    let pct = (!within_noise && base.0 > 0.0 && base.0 >= PCT_BASE_OVER_SPREAD * base.1)
        .then(|| ms * 100.0 / base.0);
    Difference {
        ms,
        spread_ms,
        within_noise,
        pct,
    }
}

/// The spread of a sum (or difference) of independently measured figures.
pub fn in_quadrature(spreads: impl IntoIterator<Item = f64>) -> f64 {
    spreads.into_iter().map(|s| s * s).sum::<f64>().sqrt()
}

/// The spread of one run: half the p10–p90 range of `h` when it holds the run's samples
/// (`summary.count` of them), else half the min–p90 range of `summary`; or twice the avg's
/// standard error when that is larger. With where it came from ([`from`]).
pub fn of_one_run(h: &Histogram, summary: &Summary) -> (f64, &'static str) {
    let (middle, from) = if !h.is_empty() && h.count() == summary.count {
        let q = |x: f64| h.quantile_ns(x) as f64 / 1e6;
        ((q(0.9) - q(0.1)) / 2.0, from::P10_P90)
    } else {
        ((summary.p90 - summary.min).max(0.0) / 2.0, from::MIN_P90)
    };
    let sem2 = 2.0 * standard_error(summary);
    if sem2 > middle {
        (sem2, from::SEM2)
    } else {
        (middle, from)
    }
}

/// The standard error of a summary's mean: stddev / √count (0 for fewer than two samples).
pub fn standard_error(s: &Summary) -> f64 {
    if s.count < 2 {
        return 0.0;
    }
    s.stddev / (s.count as f64).sqrt()
}

/// The spread of several runs: the wider of half the range of their p50s and of their avgs.
pub fn of_runs(p50: Range, avg: Range) -> f64 {
    let half = |r: Range| (r.max - r.min).max(0.0) / 2.0;
    half(p50).max(half(avg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// The loopback example's figures (direct 0.01 ms, a pinged TCP connect of 0.13 ms): a
    /// difference inside the combined spread is noise, with no percentage.
    #[test]
    fn a_difference_inside_the_spreads_is_noise() {
        let d = difference((0.01, 0.005), (0.13, 0.20));
        assert!(close(d.ms, -0.12));
        assert!(close(d.spread_ms, (0.005f64.powi(2) + 0.04).sqrt()));
        assert!(d.within_noise);
        assert_eq!(d.pct, None);
        // Exactly at the spread is still noise; just outside it is not.
        assert!(difference((1.3, 0.3), (1.0, 0.4)).within_noise);
        assert!(!difference((1.51, 0.3), (1.0, 0.4)).within_noise);
    }

    /// Outside the noise: a percentage only when the base is at least 10 × its spread.
    #[test]
    fn a_percentage_only_of_a_base_large_against_its_spread() {
        // 285 ± 2 ms against a typed 253 ms: +32 ms, +12.6 %.
        let d = difference((285.0, 2.0), (253.0, 0.0));
        assert!(!d.within_noise);
        assert!(close(d.pct.unwrap(), 32.0 * 100.0 / 253.0));
        // 0.16 ± 0.01 against a baseline of 0.02 ± 0.005: a finding (+0.14 ms), but the base
        // is 4 × its spread: no percentage.
        let d = difference((0.16, 0.01), (0.02, 0.005));
        assert!(!d.within_noise && close(d.ms, 0.14));
        assert_eq!(d.pct, None);
        // A base exactly 10 × its spread gets one.
        let d = difference((2.0, 0.1), (1.0, 0.1));
        assert!(close(d.pct.unwrap(), 100.0));
        // No percentage of nothing.
        assert_eq!(difference((1.0, 0.0), (0.0, 0.0)).pct, None);
        // Both spreads zero (constant samples): any difference is a finding, none is noise.
        assert!(!difference((3.0, 0.0), (2.0, 0.0)).within_noise);
        assert!(difference((2.0, 0.0), (2.0, 0.0)).within_noise);
    }

    #[test]
    fn spreads_of_one_run_and_of_runs() {
        // 10 samples 1..=10 ms: p10 1 ms, p90 9 ms → ±4 ms.
        let mut h = Histogram::new();
        for ms in 1..=10u64 {
            h.record(ms * 1_000_000);
        }
        let s = h.summary();
        let (spread, src) = of_one_run(&h, &s);
        assert_eq!(src, from::P10_P90);
        assert!((spread - 4.0).abs() < 0.01, "{spread}");
        // Without the samples (a foreign result): half min..p90.
        let (spread, src) = of_one_run(&Histogram::new(), &s);
        assert_eq!(src, from::MIN_P90);
        assert!((spread - (s.p90 - s.min) / 2.0).abs() < 1e-9);
        // Ten pings of 0.15 ms and one of 20 ms: the middle is tight (±0.00), but one stall
        // moved the avg by 1.8 ms and its standard error is 1.8 ms (stddev 6 ms over √11):
        // the spread is twice that.
        let mut h = Histogram::new();
        for _ in 0..10 {
            h.record(150_000);
        }
        h.record(20_000_000);
        let s = h.summary();
        let (spread, src) = of_one_run(&h, &s);
        assert_eq!(src, from::SEM2);
        assert!((spread - 2.0 * s.stddev / 11f64.sqrt()).abs() < 1e-9);
        assert!((3.4..3.8).contains(&spread), "{spread}");
        // A lossy link's echoes: 1,000 at 25 ms ± 1 and 1 % of them 230 ms later (a
        // retransmission). The tail raises the avg by ~2.3 ms; over 1,000 samples that avg is
        // known to ±1.45 ms (twice its standard error), so against the same path without loss
        // (±1 ms) the tail is a finding, not noise.
        let mut lossy = Histogram::new();
        let mut clean = Histogram::new();
        for i in 0..990u64 {
            lossy.record(24_000_000 + (i % 3) * 1_000_000);
        }
        for _ in 0..10 {
            lossy.record(255_000_000);
        }
        for i in 0..1000u64 {
            clean.record(24_000_000 + (i % 3) * 1_000_000);
        }
        let (sl, sc) = (lossy.summary(), clean.summary());
        let (spread, src) = of_one_run(&lossy, &sl);
        assert_eq!(src, from::SEM2);
        assert!((1.4..1.5).contains(&spread), "{spread}");
        let (clean_spread, src) = of_one_run(&clean, &sc);
        assert_eq!(src, from::P10_P90);
        assert!((clean_spread - 1.0).abs() < 0.05, "{clean_spread}");
        let d = difference((sl.mean, spread), (sc.mean, clean_spread));
        assert!(!d.within_noise && d.ms > 2.2, "{d:?}");
        assert!(close(d.pct.unwrap(), d.ms * 100.0 / sc.mean));
        assert_eq!(
            standard_error(&Summary {
                count: 1,
                stddev: 5.0,
                ..sl
            }),
            0.0
        );
        // Runs: p50 0.04..0.06 and avg 0.17..0.27 → the wider, ±0.05.
        let r = |min, max| Range { min, max };
        assert!(close(of_runs(r(0.04, 0.06), r(0.17, 0.27)), 0.05));
        assert!(close(of_runs(r(1.0, 3.0), r(1.0, 1.5)), 1.0));
        assert!(close(in_quadrature([3.0, 4.0]), 5.0));
        assert_eq!(super::super::render::plus_minus(0.004), "±<0.01");
        assert_eq!(super::super::render::plus_minus(0.0), "±0.00");
        assert_eq!(super::super::render::plus_minus(0.126), "±0.13");
        assert_eq!(in_quadrature([]), 0.0);
    }
}
