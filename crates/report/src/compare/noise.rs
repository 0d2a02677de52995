//! Noise is not a finding — and width is not noise. Every difference the table shows —
//! overhead = avg − theoretical, vs baseline = avg − the baseline's avg — carries the
//! *uncertainty of the figures it compares*, and one that lies inside it is "within noise", with
//! no percentage. How wide a path's latencies are (its p10–p90) is a property of the path and
//! never noise: a bimodal path 190 × slower than the direct one is a finding, however wide. The
//! rule (docs/compare.md, "Noise"):
//!
//! * **A row's uncertainty** is a 95 % half-width, in ms, of the avg the columns compare, of
//!   one of two kinds ([`from`]):
//!   - `ci`, one run: the avg's confidence interval from the run's own samples, `t · stddev /
//!     √count` (t at 95 % for count − 1 degrees of freedom: 1.96 for thousands of samples),
//!     never narrower than what the histogram's rounding can move the avg by
//!     ([`npt_stats::Histogram::mean_ci95`]);
//!   - `runs`, several runs (`--runs N`): the 95 % t-interval of the avg over the runs' own
//!     avgs, `t(N − 1) · s / √N` — how far repeated runs of the same path landed, scaled to
//!     what N of them pin down — or the merged samples' `ci` where that is wider (runs that
//!     agree by chance do not make a figure surer than its samples).
//! * **A theoretical latency**: a pinged or measured hop's avg has its `ci`, a sum of hops their
//!   intervals in quadrature, a trace's sum of segment p50s the order-statistic intervals of
//!   those p50s in quadrature; a typed figure has none.
//! * **A difference** of two independently measured figures has their uncertainties in
//!   quadrature (`sqrt(a² + b²)`); it is within noise when its size is at most that. It says
//!   which kinds went into it (`ci`, `runs` or `ci+runs`).
//! * **A percentage** is given only for a difference outside the noise, of a base (the
//!   theoretical latency, the baseline's avg) at least [`PCT_BASE_OVER_SPREAD`] times its own
//!   uncertainty: the base is then known to 10 % or better, and so is the percentage.
//!
//! Pure functions of numbers and histograms, tested with fixed ones.

use npt_stats::{t95, Histogram, Summary, Z95};

/// A percentage of a base is shown only when the base is at least this many times its spread.
pub const PCT_BASE_OVER_SPREAD: f64 = 10.0;

/// Which kind of uncertainty a `±` is (`avg_spread_from`, `overhead_spread_from`,
/// `vs_baseline_spread_from`).
pub mod from {
    /// One run: the avg's 95 % confidence interval from its own samples.
    pub const CI: &str = "ci";
    /// Several runs: the 95 % t-interval of the avg over the runs' avgs.
    pub const RUNS: &str = "runs";
}

/// A difference `value − base` as the table shows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Difference {
    pub ms: f64,
    /// The two figures' uncertainties in quadrature.
    pub spread_ms: f64,
    /// `|ms| <= spread_ms`: no finding.
    pub within_noise: bool,
    /// `ms` as a percentage of the base; `None` within noise, or when the base is not at
    /// least [`PCT_BASE_OVER_SPREAD`] times its uncertainty.
    pub pct: Option<f64>,
}

/// `value − base`, each given as (figure, uncertainty) in ms.
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

/// The kinds of uncertainty that went into a difference: `ci`, `runs`, or `ci+runs`; `None`
/// when neither side has one (typed figures).
pub fn kinds<'a>(sides: impl IntoIterator<Item = Option<&'a str>>) -> Option<String> {
    let set: std::collections::BTreeSet<&str> = sides.into_iter().flatten().collect();
    (!set.is_empty()).then(|| set.into_iter().collect::<Vec<_>>().join("+"))
}

/// The uncertainty of a sum (or difference) of independently measured figures.
pub fn in_quadrature(spreads: impl IntoIterator<Item = f64>) -> f64 {
    spreads.into_iter().map(|s| s * s).sum::<f64>().sqrt()
}

/// The uncertainty of one run's avg, ms ([`from::CI`]): the mean's 95 % interval from `h` when
/// it holds the run's samples (`summary.count` of them); else from the summary's count and
/// stddev, floored at avg / 2,048 (the most three significant digits can round a mean by).
pub fn of_one_run(h: &Histogram, summary: &Summary) -> (f64, &'static str) {
    if !h.is_empty() && h.count() == summary.count {
        return (h.mean_ci95().half_width_ns() / 1e6, from::CI);
    }
    let sampling = if summary.count >= 2 {
        t95(summary.count - 1) * standard_error(summary)
    } else {
        0.0
    };
    (sampling.max(summary.mean / 2048.0), from::CI)
}

/// The standard error of a summary's mean: stddev / √count (0 for fewer than two samples).
pub fn standard_error(s: &Summary) -> f64 {
    if s.count < 2 {
        return 0.0;
    }
    s.stddev / (s.count as f64).sqrt()
}

/// The uncertainty of the avg of several runs, ms: the 95 % t-interval over the runs' avgs,
/// `t(N − 1) · s / √N` ([`from::RUNS`]), or `own` — the merged samples' [`of_one_run`] — where
/// that is wider ([`from::CI`]). One run has no runs' spread: `own`.
pub fn of_runs(avgs: &[f64], own: f64) -> (f64, &'static str) {
    let n = avgs.len();
    if n < 2 {
        return (own, from::CI);
    }
    let nf = n as f64;
    let mean = avgs.iter().sum::<f64>() / nf;
    let s = (avgs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (nf - 1.0)).sqrt();
    let runs = t95(n as u64 - 1) * s / nf.sqrt();
    if own > runs {
        (own, from::CI)
    } else {
        (runs, from::RUNS)
    }
}

/// The uncertainty of a percentile `q` of `h`, ms: the larger side of its 95 % order-statistic
/// interval ([`npt_stats::Histogram::quantile_ci`]).
pub fn of_percentile(h: &Histogram, q: f64) -> f64 {
    h.quantile_ci(q, Z95).half_width_ns() / 1e6
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

    /// The forwarder without TCP_NODELAY, 3,000 echoes: 40.9 % answered at once (0.2
    /// ms), 47.1 % held one delayed ACK by Nagle (41.4 ms), 12 % two (85 ms) — avg 29.79, p50
    /// 41.4 — against a direct path at 0.16 ms. Half its p10–p90 range is ±42.4 ms, the
    /// path's shape, and the old rule called the +29.6 ms "within noise"; its avg is known to
    /// ±1.00 ms (stddev 28.07 ms over √3000, × 1.96), so the 186 × is a finding.
    #[test]
    fn a_wide_distributions_avg_is_known_well() {
        // Values at their HDR buckets' middles, so nothing is rounded: 200,000 ns (a bucket
        // of 128 ns from 199,936), 41,402,368 (32,768 ns from 41,385,984), 85,032,960 (65,536
        // ns from 85,000,192); direct 149,952 and 170,048 (128 ns).
        let modes = [
            (200_000u64, 1_227u64),
            (41_402_368, 1_413),
            (85_032_960, 360),
        ];
        let mut socat = Histogram::new();
        for (v, n) in modes {
            socat.record_n(v, n);
        }
        let mut direct = Histogram::new();
        direct.record_n(149_952, 1_500);
        direct.record_n(170_048, 1_500);
        let (ss, sd) = (socat.summary(), direct.summary());
        // By hand: mean Σ nᵢ·xᵢ / 3000 = 89,358.812 / 3000 = 29.786271 ms; stddev (of the
        // population) √(Σ nᵢ·(xᵢ − mean)² / 3000); ± t(2999) · stddev / √3000.
        let ms = |v: u64| v as f64 / 1e6;
        let mean = modes.iter().map(|&(v, n)| ms(v) * n as f64).sum::<f64>() / 3000.0;
        assert!((mean - 29.786_271).abs() < 1e-6, "{mean}");
        assert!((ss.mean - mean).abs() < 1e-9, "{ss:?}");
        let var = modes
            .iter()
            .map(|&(v, n)| n as f64 * (ms(v) - mean).powi(2))
            .sum::<f64>()
            / 3000.0;
        let want = t95(2999) * var.sqrt() / 3000f64.sqrt();
        let (s, kind) = of_one_run(&socat, &ss);
        assert_eq!(kind, from::CI);
        assert!((s - want).abs() < 1e-9, "{s} vs {want}");
        assert!((1.0..1.01).contains(&s), "{s}");
        // Direct: mean 0.16 ms, stddev 0.010048 ms: ± t(2999) · 0.010048 / √3000 = 0.00036.
        let (d, _) = of_one_run(&direct, &sd);
        let want_d = t95(2999) * 0.010_048 / 3000f64.sqrt();
        assert!((d - want_d).abs() < 1e-9, "{d} vs {want_d}");
        let diff = difference((ss.mean, s), (sd.mean, d));
        assert!(!diff.within_noise, "{diff:?}");
        assert!((diff.ms - (mean - 0.16)).abs() < 1e-9);
        assert!((diff.spread_ms - in_quadrature([want, want_d])).abs() < 1e-9);
        // The base is known to far better than 10 %: a percentage, +18,516 %.
        assert!((diff.pct.unwrap() - (mean - 0.16) / 0.16 * 100.0).abs() < 1e-6);
        // Half the p10–p90 range — the old rule — would have called it noise.
        let half_width = (ss.p90 - ms(socat.quantile_ns(0.1))) / 2.0;
        assert!((half_width - 42.433).abs() < 0.01, "{half_width}");
        assert!(diff.ms <= in_quadrature([half_width, d]));
    }

    /// Without a usable histogram (a foreign result): from the summary, t · stddev / √count,
    /// floored at avg / 2,048.
    #[test]
    fn one_run_from_its_summary() {
        let s = Summary {
            count: 100,
            mean: 10.0,
            stddev: 5.0,
            ..Summary::default()
        };
        let (u, kind) = of_one_run(&Histogram::new(), &s);
        assert_eq!(kind, from::CI);
        assert!((u - t95(99) * 0.5).abs() < 1e-12);
        let flat = Summary { stddev: 0.0, ..s };
        assert_eq!(of_one_run(&Histogram::new(), &flat).0, 10.0 / 2048.0);
        assert_eq!(standard_error(&Summary { count: 1, ..s }), 0.0);
    }

    /// Several runs: the t-interval over their avgs, or the samples' own interval where wider.
    #[test]
    fn runs_uncertainty_is_the_t_interval_of_their_avgs() {
        // Avgs 0.05, 0.05, 0.29 (one run stalled): mean 0.13, s = 0.138564, t(2) = 4.303:
        // ±4.303 · 0.138564 / √3 = ±0.34424.
        let (u, kind) = of_runs(&[0.05, 0.05, 0.29], 0.001);
        assert_eq!(kind, from::RUNS);
        assert!(
            (u - 4.303 * 0.24 / 3f64.sqrt() / 3f64.sqrt()).abs() < 1e-9,
            "{u}"
        );
        assert!((u - 0.344_24).abs() < 1e-5, "{u}");
        // Runs that agree exactly say nothing finer than their samples.
        assert_eq!(of_runs(&[1.0, 1.0, 1.0], 0.02), (0.02, from::CI));
        // Two runs 1 ms apart: t(1) = 12.706, s = 1 / √2, s / √2 = 0.5: ±6.353 — two runs
        // pin down little.
        let (u, _) = of_runs(&[1.0, 2.0], 0.0);
        assert!((u - 6.353).abs() < 1e-9, "{u}");
        assert_eq!(of_runs(&[3.0], 0.5), (0.5, from::CI));
    }

    #[test]
    fn kinds_of_a_difference_and_the_printed_plus_minus() {
        assert_eq!(kinds([Some("ci"), Some("ci")]).as_deref(), Some("ci"));
        assert_eq!(
            kinds([Some("runs"), Some("ci")]).as_deref(),
            Some("ci+runs")
        );
        assert_eq!(kinds([Some("runs"), None]).as_deref(), Some("runs"));
        assert_eq!(kinds([None, None]), None);
        assert!(close(in_quadrature([3.0, 4.0]), 5.0));
        assert_eq!(in_quadrature([]), 0.0);
        assert_eq!(super::super::render::plus_minus(0.004), "±<0.01");
        assert_eq!(super::super::render::plus_minus(0.0), "±0.00");
        assert_eq!(super::super::render::plus_minus(0.126), "±0.13");
        // A percentile's uncertainty: 1..=100 ns, the median's ranks 40 and 60: ±10 ns.
        let mut h = Histogram::new();
        for v in 1..=100u64 {
            h.record(v);
        }
        assert!(close(of_percentile(&h, 0.5), 10.0 / 1e6));
    }
}
