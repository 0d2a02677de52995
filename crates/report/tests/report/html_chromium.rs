//! End to end check of the HTML report: render a page with several charts (linear, log-log with
//! gaps, many series), open it in headless Chromium, and read back from the dumped DOM that every
//! chart drew a non-empty canvas with exactly the points we gave it. A file that merely exists, or
//! a script error that leaves the charts blank, fails here.
//!
//! The second test does the same for a compare page: three scenarios' results (histograms and
//! intervals) through the compare table and its page builder, side by side in every chart.
//!
//! Needs Debian's `chromium` (CI installs it); set `NPT_SKIP_CHROMIUM=1` to skip explicitly.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use std::time::Duration;

use npt_report::compare::page::html_page;
use npt_report::compare::runs::{table_of_runs, ScenarioRuns};
use npt_report::compare::Input;
use npt_report::html::{render, render_to_vec, Chart, Page, Series, Table};
use npt_result::any::{AnyBody, AnyResult};
use npt_result::interval::Interval;
use npt_result::probe::{hist, ProbeBody, ProbeSummary};
use npt_result::Document;
use npt_stats::Histogram;
use npt_testkit::chromium::{self, attr, dump_dom, opening_tag};

fn sample_page() -> Page {
    let secs: Vec<f64> = (1..=60).map(f64::from).collect();
    let wave = |k: f64| -> Vec<Option<f64>> {
        secs.iter()
            .map(|s| {
                // a gap every 13th interval, as a lost interval would leave
                if (*s as u32).is_multiple_of(13) {
                    None
                } else {
                    Some(k + (s / 7.0).sin().abs() * k)
                }
            })
            .collect()
    };
    let pct: Vec<f64> = vec![50.0, 90.0, 99.0, 99.9, 99.99];
    let spectrum_x: Vec<f64> = pct.iter().map(|p| 100.0 / (100.0 - p)).collect();
    let cdf_x: Vec<f64> = (1..=200).map(|i| f64::from(i) * 0.05).collect();
    Page {
        title: "npt compare: direct vs realm </script>".into(),
        subtitle: "3 scenarios, probe 20 pps".into(),
        tables: vec![Table {
            caption: "summary".into(),
            header: vec!["scenario".into(), "p50 ms".into(), "p99 ms".into()],
            rows: vec![
                vec!["direct".into(), "0.20".into(), "0.51".into()],
                vec!["realm <chain>".into(), "0.41".into(), "1.20".into()],
            ],
        }],
        charts: vec![
            Chart {
                id: "latency".into(),
                title: "latency over time".into(),
                x_label: "elapsed s".into(),
                y_label: "ms".into(),
                x: secs.clone(),
                series: vec![
                    Series {
                        label: "p50".into(),
                        values: wave(1.0),
                    },
                    Series {
                        label: "p99".into(),
                        values: wave(3.0),
                    },
                ],
                ..Chart::default()
            },
            Chart {
                id: "spectrum".into(),
                title: "percentile spectrum".into(),
                x_label: "1/(1-p)".into(),
                y_label: "ms".into(),
                x_log: true,
                y_log: true,
                x: spectrum_x,
                series: vec![
                    Series {
                        label: "direct".into(),
                        values: vec![Some(0.2), Some(0.3), Some(0.5), Some(0.9), Some(2.0)],
                    },
                    Series {
                        label: "realm".into(),
                        values: vec![Some(0.4), Some(0.6), None, Some(1.5), Some(3.0)],
                    },
                ],
                ..Chart::default()
            },
            Chart {
                id: "cdf".into(),
                title: "CDF".into(),
                x_label: "ms".into(),
                y_label: "fraction".into(),
                x: cdf_x.clone(),
                series: vec![Series {
                    label: "direct".into(),
                    values: cdf_x.iter().map(|x| Some(1.0 - (-x).exp())).collect(),
                }],
                ..Chart::default()
            },
        ],
    }
}

#[test]
fn every_chart_draws_in_headless_chromium() {
    let _turn = npt_testkit::turn::turn(module_path!());
    if !chromium::wanted() {
        return;
    }
    let page = sample_page();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    let mut bytes = Vec::new();
    render(&page, &mut bytes).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    eprintln!("rendered {} bytes", bytes.len());
    if let Some(keep) = std::env::var_os("NPT_HTML_KEEP") {
        std::fs::write(keep, &bytes).unwrap();
    }
    let profile = dir.path().join("profile");

    let dom = dump_dom(&file, &profile, Duration::from_secs(60));

    let body = opening_tag(&dom, "npt-data");
    assert!(body.contains("application/json"), "{body}");
    assert!(
        dom.contains(&format!("data-charts-drawn=\"{}\"", page.charts.len())),
        "the page script did not run to the end"
    );
    for (i, chart) in page.charts.iter().enumerate() {
        let tag = opening_tag(&dom, &format!("npt-chart-{i}"));
        let expected = chart.drawable_points();
        eprintln!("{tag}");
        assert!(expected > 0);
        assert_eq!(
            attr(tag, "data-drawn-points"),
            Some(expected.to_string().as_str()),
            "chart {} did not draw all its points: {tag}",
            chart.id
        );
        let canvas = attr(tag, "data-canvas").unwrap_or_else(|| panic!("no canvas: {tag}"));
        let (w, h) = canvas.split_once('x').unwrap();
        let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w > 100 && h > 100, "chart {} canvas is {w}x{h}", chart.id);
    }
    assert_eq!(dom.matches("<canvas").count(), page.charts.len());
    assert!(dom.contains("u-legend"), "legends drawn");
    assert!(dom.contains("realm &lt;chain&gt;"), "table text escaped");
}

/// A probe result as `npt probe --json` writes the parts the compare page reads: its RTT
/// histogram, summary and intervals (`base_ms` plus a slow tail).
fn probe_doc(base_ms: f64, secs: usize) -> AnyResult {
    let mut h = Histogram::new();
    let mut intervals = Vec::new();
    for s in 0..secs {
        let mut iv = Histogram::new();
        for i in 0..200u64 {
            let ns = ((base_ms + (i % 50) as f64 * 0.01) * 1e6) as u64
                + if i == 199 { 4_000_000 } else { 0 };
            h.record(ns);
            iv.record(ns);
        }
        intervals.push(Interval {
            index: s as u32,
            start_s: s as f64,
            end_s: s as f64 + 1.0 + base_ms / 1000.0,
            rate_per_s: 200.0,
            loss_pct: Some(0.0),
            latency_ms: iv.summary(),
            histogram: iv.to_serialized(),
            ..Interval::default()
        });
    }
    let body = ProbeBody {
        summary: ProbeSummary {
            target: "udp://127.0.0.1:7777".into(),
            rtt_ms: h.summary(),
            packets: npt_stats::PacketCounts {
                sent: h.count(),
                ..Default::default()
            },
            jitter_ms: 0.1,
            ..ProbeSummary::default()
        },
        health: Default::default(),
        latency: Default::default(),
        errors: Default::default(),
        histograms: [(hist::RTT.to_string(), h.to_serialized())].into(),
        intervals,
        under_load: None,
    };
    let t0 = std::time::SystemTime::UNIX_EPOCH;
    let t1 = t0 + Duration::from_secs(secs as u64);
    Document::new(
        "probe",
        t0,
        t1,
        npt_result::StopReason::Duration,
        serde_json::Value::Null,
        AnyBody::Probe(body),
    )
}

#[test]
fn a_compare_page_draws_every_scenario_in_headless_chromium() {
    let _turn = npt_testkit::turn::turn(module_path!());
    if !chromium::wanted() {
        return;
    }
    let scenarios = [("direct", 0.2), ("realm", 0.4), ("chain <3 hops>", 10.5)];
    let docs: Vec<Vec<AnyResult>> = scenarios
        .iter()
        .map(|(_, ms)| vec![probe_doc(*ms, 10), probe_doc(*ms, 10)])
        .collect();
    let runs: Vec<ScenarioRuns> = scenarios
        .iter()
        .zip(&docs)
        .map(|((name, _), d)| ScenarioRuns {
            name: name.to_string(),
            kind: "probe".into(),
            theoretical_ms: (*name != "direct").then_some(0.2),
            results: d
                .iter()
                .enumerate()
                .map(|(i, doc)| Input {
                    name: name.to_string(),
                    path: format!("r{i}-{name}.json"),
                    doc: doc.clone(),
                })
                .collect(),
            ..ScenarioRuns::default()
        })
        .collect();
    let table = table_of_runs(&runs, Some("direct"), false).unwrap();
    let page = html_page(&table, &docs, "scenarios.toml");
    assert_eq!(page.charts.len(), 5);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("compare.html");
    std::fs::write(&file, render_to_vec(&page)).unwrap();
    let dom = chromium::assert_every_chart_drew(&file, page.charts.len());
    // Every scenario is a line (legend entry) in each chart: p50 and p99 over time, its rate,
    // its errors, one line in the spectrum and in the CDF.
    for (name, _) in &scenarios {
        let esc = name.replace('<', "&lt;").replace('>', "&gt;");
        assert_eq!(
            dom.matches(&format!(">{esc} p50<")).count(),
            1,
            "{name} p50 over time"
        );
        assert_eq!(
            dom.matches(&format!(">{esc} errors<")).count(),
            1,
            "{name} errors over time"
        );
        let n = dom.matches(&format!(">{esc}<")).count();
        assert!(
            n >= 5,
            "{name}: 2 tables + 3 legends (rate, spectrum, CDF), found {n}"
        );
    }
    assert!(dom.contains("chain &lt;3 hops&gt;"), "table text escaped");
}
