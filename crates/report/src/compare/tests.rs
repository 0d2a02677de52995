//! The comparison table on hand-made probe results: a row without samples, overheads against
//! the theoretical figure and the baseline, a difference within the rows' noise, bad names and
//! mixed kinds, and the table as text and Markdown.

use super::*;

fn probe(name: &str, samples: &[u64], loss: f64) -> Input {
    let mut d = crate::page::test_probe(samples.iter().copied(), &[]);
    let rtt = d.body.view().headline().summary();
    d.config = serde_json::json!({"pacing": "rate", "target": name});
    if let AnyBody::Probe(b) = &mut d.body {
        b.summary.target = name.into();
        (b.summary.rtt_ms, b.summary.loss_pct, b.summary.jitter_ms) = (rtt, loss, 0.5);
        b.errors.total_errors = 2;
    }
    Input {
        name: name.into(),
        path: format!("{name}.json"),
        doc: d,
    }
}

const MS: u64 = 1_000_000;

#[test]
fn a_row_without_samples_has_no_figures_and_no_overhead() {
    let inputs = [
        probe("direct", &[10 * MS; 10], 0.0),
        probe("none", &[], 100.0),
    ];
    let theo = BTreeMap::from([("none".to_string(), 5.0)]);
    let t = table(&inputs, Some("direct"), &theo).unwrap();
    let r = &t.scenarios[1];
    assert_eq!((r.avg_ms, r.p50_ms, r.max_ms), (None, None, None), "{r:?}");
    assert_eq!((r.overhead_ms, r.vs_baseline_ms), (None, None), "{r:?}");
    assert_eq!(r.avg_spread_ms, None, "{r:?}");
}

#[test]
fn overheads_against_theoretical_and_baseline() {
    let inputs = [
        probe("direct", &[299 * MS; 10], 0.0),
        probe("chain", &[285 * MS; 10], 1.5),
    ];
    let theo = BTreeMap::from([("chain".to_string(), 152.0 + 32.0 + 69.0)]);
    let t = table(&inputs, Some("direct"), &theo).unwrap();
    let chain = &t.scenarios[1];
    assert_eq!(chain.theoretical_ms, Some(253.0));
    // 285 ms against 253 ms in theory: +32 ms, +12.6 %; 14 ms under the direct path.
    let oh = chain.overhead_ms.unwrap();
    assert!((oh - 32.0).abs() < 0.5, "{oh}");
    assert!((chain.overhead_pct.unwrap() - 12.6).abs() < 0.3);
    assert!((chain.vs_baseline_ms.unwrap() + 14.0).abs() < 0.5);
    assert_eq!(t.scenarios[0].vs_baseline_ms, Some(0.0));
    assert_eq!(
        t.scenarios[0].overhead_ms, None,
        "no theoretical: no overhead"
    );
    assert_eq!(chain.loss_pct, Some(1.5));
    assert!(t.notes.is_empty(), "{:?}", t.notes);
}

/// Two rows of ten samples whose avgs differ by less than their uncertainty: "within
/// noise", no percentage, in the cell and in the JSON; a typed theoretical latency far below
/// them is a finding, with its percentage. Each ± says its kind (`ci`: one run's own).
#[test]
fn a_difference_within_the_rows_uncertainty_is_noise() {
    // 1..=10 ms and 2..=11 ms: stddev √8.25 = 2.872 ms each (of the population), so each
    // avg is known to t(9) · 2.872 / √10 = 2.262 · 0.9083 = ±2.05 ms; +1 ms against ±2.91.
    let a: Vec<u64> = (1..=10).map(|m| m * MS).collect();
    let b: Vec<u64> = (2..=11).map(|m| m * MS).collect();
    let inputs = [probe("direct", &a, 0.0), probe("relay", &b, 0.0)];
    let theo = BTreeMap::from([("relay".to_string(), 1.0)]);
    let t = table(&inputs, Some("direct"), &theo).unwrap();
    let r = &t.scenarios[1];
    let own = 2.262 * 8.25f64.sqrt() / 10f64.sqrt();
    assert!((r.avg_spread_ms.unwrap() - own).abs() < 0.005, "{r:?}");
    assert_eq!(r.avg_spread_from.as_deref(), Some("ci"));
    assert_eq!(r.vs_baseline_within_noise, Some(true));
    assert_eq!(r.vs_baseline_pct, None);
    assert_eq!(r.vs_baseline_spread_from.as_deref(), Some("ci"));
    assert!((r.vs_baseline_spread_ms.unwrap() - own * 2f64.sqrt()).abs() < 0.01);
    // 6.5 ± 2.05 against a typed 1 ms: +5.5, outside ±2.05, and 1 ms is known exactly.
    assert_eq!(r.overhead_within_noise, Some(false));
    assert_eq!(r.overhead_spread_from.as_deref(), Some("ci"));
    assert!((r.overhead_pct.unwrap() - 550.0).abs() < 1.0, "{r:?}");
    let c = cells(t.baseline.as_deref(), r);
    assert_eq!(c[8], "within noise (±2.91 ci)");
    assert!(c[7].starts_with("+5.50 ±2.05 ci (+5"), "{c:?}");
    assert_eq!(cells(t.baseline.as_deref(), &t.scenarios[0])[8], "baseline");
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["scenarios"][1]["vs_baseline_within_noise"], true);
    assert_eq!(json["scenarios"][1]["vs_baseline_spread_from"], "ci");
    assert!(json["scenarios"][1]["vs_baseline_pct"].is_null());
    assert_eq!(json["scenarios"][1]["overhead_within_noise"], false);
    let mut text = Vec::new();
    write_text(&mut text, &t).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("±: ci = one run's 95 % confidence interval of its avg"),
        "{text}"
    );
}

#[test]
fn bad_names_and_mixed_kinds() {
    let inputs = [probe("a", &[MS], 0.0)];
    assert!(table(&inputs, Some("nope"), &BTreeMap::new()).is_err());
    let theo = BTreeMap::from([("x".to_string(), 1.0)]);
    assert!(table(&inputs, None, &theo).is_err());
    let mut other = probe("b", &[MS], 0.0);
    other.doc.config["pacing"] = "relay".into();
    let t = table(&[probe("a", &[MS], 0.0), other], None, &BTreeMap::new()).unwrap();
    assert!(
        t.notes[0].contains("different workload settings"),
        "{:?}",
        t.notes
    );
}

#[test]
fn renders_text_and_markdown() {
    let inputs = [
        probe("direct", &[2 * MS], 0.0),
        probe("via|proxy", &[3 * MS], 0.0),
    ];
    let t = table(&inputs, Some("direct"), &BTreeMap::new()).unwrap();
    let mut text = Vec::new();
    write_text(&mut text, &t).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.lines().next().unwrap().starts_with("scenario"),
        "{text}"
    );
    // 2 and 3 ms read back within HDR's 0.1 %: +1.00 ms, about +50 %; one sample each,
    // so no spread to go by: only the histogram's rounding (0.5 and 1 µs).
    assert!(
        text.contains("+1.00 ±<0.01 ci (+49.9%)") || text.contains("+1.00 ±<0.01 ci (+50.0%)"),
        "{text}"
    );
    assert!(text.contains(" baseline "), "{text}");
    let mut md = Vec::new();
    write_markdown(&mut md, &t).unwrap();
    let md = String::from_utf8(md).unwrap();
    assert!(md.contains("| via\\|proxy | 3.00 |"), "{md}");
}
