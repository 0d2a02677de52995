//! The noise rule on whole tables whose answer is worked out by hand: the loopback example
//! that once printed `vs baseline +1209.6%` — a socat row whose avg one stall moved, against a
//! direct path of 0.01 ms — is still "within noise", for the right reason: over three runs
//! because the runs disagree about that avg (the t-interval of their avgs covers the
//! difference), over one run because one stall is what the avg's standard error is made of
//! (a single outlier moves an avg by exactly one standard error). Four stalls are a finding.

use std::collections::BTreeMap;

use npt_stats::t95;

use super::runs::{table_of_runs, ScenarioRuns};
use super::{cells, table, Input};

const US: u64 = 1_000;

/// A probe result of `samples` RTTs (ns).
fn probe(name: &str, samples: impl Iterator<Item = u64>) -> Input {
    let mut d = crate::page::test_probe(samples, &[]);
    let rtt = d.body.view().headline().summary();
    if let npt_result::any::AnyBody::Probe(b) = &mut d.body {
        b.summary.target = name.into();
        b.summary.rtt_ms = rtt;
    }
    Input {
        name: name.into(),
        path: format!("{name}.json"),
        doc: d,
    }
}

/// `n` echoes of 50 µs, then `stalls` of `stall_ns` each.
fn socat(n: usize, stalls: usize, stall_ns: u64) -> impl Iterator<Item = u64> {
    std::iter::repeat_n(50 * US, n).chain(std::iter::repeat_n(stall_ns, stalls))
}

/// Three interleaved runs: direct 300 × 10 µs each time; socat 300 × 50 µs twice, and once
/// 299 × 50 µs and one 72 ms stall (that run's avg 0.2898 ms). Merged, socat reads 0.1299 ms
/// against 0.01: +1199 %, the shape of the old `+1209.6%`. The runs' avgs 0.05, 0.05, 0.2898
/// have s = 0.1384 ms, and the t-interval t(2) · s / √3 = 4.303 · 0.0799 = ±0.344 covers the
/// +0.12: within noise, of kind `runs` (direct's own interval, a few ns, joins in quadrature).
#[test]
fn a_stalled_run_among_three_is_within_the_runs_spread() {
    let runs = |name: &str, samples: &[Vec<u64>]| ScenarioRuns {
        name: name.into(),
        kind: "probe".into(),
        results: samples
            .iter()
            .map(|s| probe(name, s.iter().copied()))
            .collect(),
        ..ScenarioRuns::default()
    };
    let direct = runs("direct", &vec![vec![10 * US; 300]; 3]);
    let stalled: Vec<u64> = socat(299, 1, 72_000 * US).collect();
    let relay = runs("socat", &[vec![50 * US; 300], stalled, vec![50 * US; 300]]);
    let t = table_of_runs(&[direct, relay], Some("direct"), false).unwrap();
    let r = &t.scenarios[1];
    let avgs = [0.05, (299.0 * 0.05 + 72.0) / 300.0, 0.05];
    let mean = avgs.iter().sum::<f64>() / 3.0;
    let s = (avgs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let want = t95(2) * s / 3f64.sqrt();
    assert!((0.343..0.345).contains(&want), "{want}");
    assert_eq!(r.avg_spread_from.as_deref(), Some("runs"));
    assert!((r.avg_spread_ms.unwrap() - want).abs() < 0.001, "{r:?}");
    let d = r.vs_baseline_ms.unwrap();
    assert!((d - (mean - 0.01)).abs() < 0.001, "{d}");
    assert_eq!(r.vs_baseline_within_noise, Some(true));
    assert_eq!(r.vs_baseline_pct, None);
    // Direct's runs agree exactly: its own interval, the histogram's rounding (4 ns).
    assert_eq!(t.scenarios[0].avg_spread_from.as_deref(), Some("ci"));
    assert_eq!(r.vs_baseline_spread_from.as_deref(), Some("ci+runs"));
    assert_eq!(cells(Some("direct"), r)[8], "within noise (±0.34 ci+runs)");
}

/// One run each: socat 299 × 50 µs and one 36 ms stall (avg 0.1698 ms, +1598 % over direct's
/// 0.01). Its stddev is 2.0721 ms, so its avg is known to t(299) · 2.0721 / √300 = ±0.235 ms:
/// the +0.16 is within noise. Four stalls of 9 ms move the avg as far (0.1693 ms), but the
/// avg is then known to ±0.117 ms (stddev 1.0265): a finding.
#[test]
fn one_stall_is_within_the_avgs_own_interval_and_four_are_not() {
    let direct = probe("direct", std::iter::repeat_n(10 * US, 300));
    let one = probe("one", socat(299, 1, 36_000 * US));
    let four = probe("four", socat(296, 4, 9_000 * US));
    let t = table(&[direct, one, four], Some("direct"), &BTreeMap::new()).unwrap();
    let (one, four) = (&t.scenarios[1], &t.scenarios[2]);
    let by_hand = |x: &[(f64, f64)]| {
        let n: f64 = x.iter().map(|p| p.1).sum();
        let mean = x.iter().map(|p| p.0 * p.1).sum::<f64>() / n;
        let var = x.iter().map(|p| p.1 * (p.0 - mean).powi(2)).sum::<f64>() / n;
        (mean, t95(299) * var.sqrt() / n.sqrt())
    };
    // The histogram keeps 36 ms and 9 ms to within a bucket (0.1 %): so the comparison.
    let (m1, u1) = by_hand(&[(0.05, 299.0), (36.0, 1.0)]);
    assert!((0.2354..0.2355).contains(&u1), "{u1}");
    assert!((one.avg_ms.unwrap() - m1).abs() < m1 * 1e-3, "{one:?}");
    assert!(
        (one.avg_spread_ms.unwrap() - u1).abs() < u1 * 1e-3,
        "{one:?}"
    );
    assert_eq!(one.vs_baseline_within_noise, Some(true));
    assert_eq!(cells(Some("direct"), one)[8], "within noise (±0.24 ci)");
    let (m4, u4) = by_hand(&[(0.05, 296.0), (9.0, 4.0)]);
    assert!((0.1166..0.1167).contains(&u4), "{u4}");
    assert!((four.avg_ms.unwrap() - m4).abs() < m4 * 1e-3, "{four:?}");
    assert!(
        (four.avg_spread_ms.unwrap() - u4).abs() < u4 * 1e-3,
        "{four:?}"
    );
    assert_eq!(four.vs_baseline_within_noise, Some(false));
    // A finding, and direct's 0.01 ms is known to a few ns: a percentage of it is given.
    assert!(four.vs_baseline_pct.is_some(), "{four:?}");
    assert!(
        cells(Some("direct"), four)[8].starts_with("+0.16 ±0.12 ci (+"),
        "{:?}",
        cells(Some("direct"), four)
    );
}

/// A trace's row: its theoretical latency is the sum of its segments' p50s, and its
/// uncertainty their order-statistic intervals in quadrature — not half their p10–p90 ranges
/// (±56.6 here), and the same as the trace's own `summary.sum.p50_ci_ms`. Each segment has 100 RTTs of 1..=100 ms: the
/// p50's ranks 50 ∓ 1.96 · 5 are 40 and 60, the interval from 40 ms's bucket's lowest value
/// (39,976,960 ns) to 60 ms's highest (60,030,975), around the p50 read as 50,003,967: ±10.027008
/// ms each, ±14.1804 for the two.
#[test]
fn a_traces_theoretical_has_its_p50s_intervals() {
    use npt_result::stats::trace::{LegStats, TraceMeta, TraceStats};
    use npt_result::stats::PingStats;
    let leg = |to: &str| {
        let mut stats = PingStats::default();
        for ms in 1..=100u64 {
            stats.sent += 1;
            stats.received += 1;
            stats.rtt.record(ms * 1_000_000);
        }
        LegStats {
            from: "here".into(),
            to: to.into(),
            addresses: vec![],
            stats,
        }
    };
    let body = TraceStats {
        segments: vec![leg("tcp://a:1"), leg("tcp://b:1")],
        chain: Some(leg("tcp://a:2")),
        ..TraceStats::default()
    }
    .summarize(&TraceMeta {
        target: "tcp://b:1".into(),
        proto: "tcp".into(),
    });
    let own = body.summary.sum.unwrap().p50_ci_ms.unwrap();
    let now = std::time::SystemTime::now();
    let doc = npt_result::Document::new(
        "trace",
        now,
        now,
        npt_result::StopReason::Count,
        serde_json::json!({}),
        body,
    );
    let doc = npt_result::any::from_value("trace", serde_json::to_value(&doc).unwrap()).unwrap();
    let input = Input {
        name: "chain".into(),
        path: "t.json".into(),
        doc,
    };
    let t = table(&[input], None, &BTreeMap::new()).unwrap();
    let r = &t.scenarios[0];
    assert_eq!(r.theoretical_source.as_deref(), Some("measured"));
    let each = 10.027_008;
    assert!(
        (r.theoretical_spread_ms.unwrap() - each * 2f64.sqrt()).abs() < 1e-9,
        "{r:?}"
    );
    assert!(
        (r.theoretical_spread_ms.unwrap() - own).abs() < 1e-9,
        "{own}"
    );
    assert_eq!(r.overhead_spread_from.as_deref(), Some("ci"));
}
