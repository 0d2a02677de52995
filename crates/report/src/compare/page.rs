//! The compare table as one self-contained HTML page: the table with theoretical latency, a
//! detail table (targets, proxies, runs, spread, result files), and the scenarios side by side in
//! three charts — p50/p99 per interval, the percentile spectrum, and the CDF, one line per
//! scenario — drawn by [`crate::html`].

use npt_stats::Histogram;

use super::loaded::{header, row_cells};
use super::Table;
use crate::html::{Chart, Page, Series, Table as HtmlTable};
use crate::page::SPECTRUM;
use npt_result::any::AnyResult;
use npt_result::interval::Interval;

/// Quantiles sampled for the CDF; every scenario is read at the union of their latencies.
const CDF_STEPS: usize = 200;

/// The page for `table`; `docs[i]` holds the result documents of `table.scenarios[i]`, one per
/// run (empty for a failed scenario). Over time, each scenario shows its first run; the spectrum
/// and CDF use every run's histogram added together.
pub fn html_page(table: &Table, docs: &[Vec<AnyResult>], title: &str) -> Page {
    let mut rows = Vec::new();
    let mut detail = Vec::new();
    for r in &table.scenarios {
        rows.push(row_cells(table, r));
        let spread = r
            .spread
            .filter(|_| r.runs > 1)
            .map_or("-".to_string(), |s| {
                format!(
                    "p50 {:.2}..{:.2}, avg {:.2}..{:.2}",
                    s.p50_ms.min, s.p50_ms.max, s.avg_ms.min, s.avg_ms.max
                )
            });
        detail.push(vec![
            r.name.clone(),
            r.target.clone(),
            r.via.clone().unwrap_or_else(|| "-".into()),
            r.runs.to_string(),
            spread,
            r.error.clone().unwrap_or_default(),
            r.results.join(" "),
        ]);
    }
    let mut tables = vec![
        HtmlTable {
            caption:
                "Latency (ms): overhead = avg − theoretical, vs baseline = avg − the baseline's avg; \
                 ± the 95 % uncertainty of the avgs compared (see the notes)"
                    .into(),
            header: header(table),
            rows,
        },
        HtmlTable {
            caption: "Scenarios".into(),
            header: [
                "scenario",
                "target",
                "via",
                "runs",
                "spread (ms)",
                "error",
                "results",
            ]
            .iter()
            .map(|h| h.to_string())
            .collect(),
            rows: detail,
        },
    ];
    // What the ± are (one run's interval or the runs' spread), then the notes.
    let notes: Vec<Vec<String>> = super::render::spread_line(table)
        .into_iter()
        .chain(table.notes.iter().cloned())
        .map(|n| vec![n])
        .collect();
    if super::pingpong::shown(table) {
        tables.push(HtmlTable {
            caption: format!("{}. {}", super::pingpong::TITLE, super::pingpong::LEGEND),
            header: super::pingpong::HEADER
                .iter()
                .map(|h| h.to_string())
                .collect(),
            rows: super::pingpong::table_rows(table),
        });
    }
    if super::setup::shown(table) {
        tables.push(HtmlTable {
            caption: format!("{}. {}", super::setup::TITLE, super::setup::LEGEND),
            header: super::setup::HEADER.iter().map(|h| h.to_string()).collect(),
            rows: super::setup::table_rows(table),
        });
    }
    if super::segments::shown(table) {
        tables.push(HtmlTable {
            caption: format!("{}. {}", super::segments::TITLE, super::segments::LEGEND),
            header: super::segments::HEADER
                .iter()
                .map(|h| h.to_string())
                .collect(),
            rows: super::segments::table_rows(table),
        });
    }
    if !notes.is_empty() {
        tables.push(HtmlTable {
            caption: "Notes".into(),
            header: Vec::new(),
            rows: notes,
        });
    }
    let names: Vec<&str> = table.scenarios.iter().map(|r| r.name.as_str()).collect();
    let empty = Vec::new();
    let doc_sets: Vec<&Vec<AnyResult>> = (0..names.len())
        .map(|i| docs.get(i).unwrap_or(&empty))
        .collect();
    let latency: [(&str, Get); 2] = [
        ("p50", |p| Some(p.latency_ms.p50)),
        ("p99", |p| Some(p.latency_ms.p99)),
    ];
    let rate: [(&str, Get); 1] = [("", |p| Some(p.rate_per_s))];
    let errors: [(&str, Get); 2] = [
        ("errors", |p| Some(p.errors as f64)),
        ("loss %", |p| p.loss_pct),
    ];
    let mut charts: Vec<Chart> = [
        (
            "latency",
            "Latency per interval (first run of each scenario)",
            "ms",
            &latency[..],
        ),
        (
            "rate",
            "Rate per interval: packets or requests per second (first run)",
            "per s",
            &rate[..],
        ),
        (
            "errors",
            "Errors and loss per interval (first run)",
            "count / %",
            &errors[..],
        ),
    ]
    .into_iter()
    .filter_map(|(id, title, unit, lines)| over_time(&names, &doc_sets, id, title, unit, lines))
    .collect();
    let hists: Vec<(&str, Histogram)> = names
        .iter()
        .zip(&doc_sets)
        .filter_map(|(n, ds)| {
            let mut h = Histogram::new();
            for d in ds.iter() {
                h += &d.body.view().headline();
            }
            (!h.is_empty()).then_some((*n, h))
        })
        .collect();
    if !hists.is_empty() {
        charts.push(spectrum(&hists));
        charts.push(cdf(&hists));
    }
    Page {
        title: format!("npt compare: {title}"),
        subtitle: format!(
            "{} scenarios{}",
            table.scenarios.len(),
            table
                .baseline
                .as_ref()
                .map_or(String::new(), |b| format!(", baseline {b}"))
        ),
        tables,
        charts,
    }
}

/// One figure of an interval, if its kind has it.
type Get = fn(&Interval) -> Option<f64>;

/// One figure per interval as lines per scenario (and per `lines` entry), on the union of
/// their interval ends; a line a scenario's kind does not have (a probe's loss in an http run)
/// is left out.
fn over_time(
    names: &[&str],
    docs: &[&Vec<AnyResult>],
    id: &str,
    title: &str,
    unit: &str,
    lines: &[(&str, Get)],
) -> Option<Chart> {
    let per: Vec<(&str, &[Interval])> = names
        .iter()
        .zip(docs)
        .filter_map(|(n, ds)| ds.first().map(|d| (*n, d.body.view().intervals())))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if per.is_empty() {
        return None;
    }
    let mut x: Vec<f64> = per
        .iter()
        .flat_map(|(_, ps)| ps.iter().map(|p| p.end_s))
        .collect();
    x.sort_by(f64::total_cmp);
    x.dedup();
    let mut series = Vec::new();
    for (name, ps) in &per {
        for (label, get) in lines {
            if !ps.iter().any(|p| get(p).is_some()) {
                continue;
            }
            let values = x
                .iter()
                .map(|t| ps.iter().find(|p| p.end_s == *t).and_then(get))
                .collect();
            series.push(Series {
                label: format!("{name} {label}").trim_end().to_string(),
                values,
            });
        }
    }
    // A loaded probe's phases, shaded (those of the first scenario that has them).
    let bands = docs
        .iter()
        .filter_map(|ds| ds.first())
        .map(|d| crate::render::of(&d.body).bands())
        .find(|b| !b.is_empty())
        .unwrap_or_default();
    Some(Chart {
        id: id.into(),
        title: title.into(),
        x_label: "time (s)".into(),
        y_label: unit.into(),
        span_gaps: true,
        x,
        series,
        bands,
        ..Chart::default()
    })
}

fn spectrum(hists: &[(&str, Histogram)]) -> Chart {
    Chart {
        id: "spectrum".into(),
        title: "Percentile spectrum".into(),
        x_label: "percentile".into(),
        y_label: "ms (log)".into(),
        y_log: true,
        x_percentile: true,
        x: SPECTRUM.to_vec(),
        series: hists
            .iter()
            .map(|(n, h)| Series {
                label: n.to_string(),
                values: SPECTRUM
                    .iter()
                    .map(|q| Some(h.quantile_ns(q / 100.0) as f64 / 1e6))
                    .collect(),
            })
            .collect(),
        ..Chart::default()
    }
}

/// The share of samples at or below each latency, every scenario read at every scenario's
/// sampled latencies (so the lines share one x axis without gaps).
fn cdf(hists: &[(&str, Histogram)]) -> Chart {
    let grid: Vec<(&str, Vec<(f64, f64)>)> = hists
        .iter()
        .map(|(n, h)| {
            let pts = (0..=CDF_STEPS)
                .map(|i| {
                    let q = i as f64 / CDF_STEPS as f64;
                    ((h.quantile_ns(q) as f64 / 1e6).max(1e-6), q)
                })
                .collect();
            (*n, pts)
        })
        .collect();
    let mut x: Vec<f64> = grid
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(ms, _)| *ms))
        .collect();
    x.sort_by(f64::total_cmp);
    x.dedup();
    let series = grid
        .iter()
        .map(|(n, pts)| Series {
            label: n.to_string(),
            values: x
                .iter()
                .map(|ms| {
                    // The highest sampled quantile whose latency is at or below ms.
                    Some(
                        pts.iter()
                            .take_while(|(v, _)| v <= ms)
                            .last()
                            .map_or(0.0, |(_, q)| *q),
                    )
                })
                .collect(),
        })
        .collect();
    Chart {
        id: "cdf".into(),
        title: "CDF".into(),
        x_label: "ms (log)".into(),
        y_label: "share of samples".into(),
        x_log: true,
        x,
        series,
        ..Chart::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::runs::{table_of_runs, ScenarioRuns};
    use super::super::Input;
    use super::*;

    fn doc(ms: u64, intervals: &[(f64, f64)]) -> AnyResult {
        let ivs: Vec<_> = intervals
            .iter()
            .map(|&(end, p50)| (end, 10.0, 0.0, p50, p50 + 1.0))
            .collect();
        let mut d = crate::page::test_probe((0..100).map(|i| ms * 1_000_000 + i * 10_000), &ivs);
        let rtt = d.body.view().headline().summary();
        if let npt_result::any::AnyBody::Probe(b) = &mut d.body {
            b.summary.rtt_ms = rtt;
            (b.summary.packets.sent, b.summary.packets.lost) = (100, 0);
        }
        d
    }

    #[test]
    fn scenarios_side_by_side_in_every_chart() {
        let a = vec![doc(1, &[(1.0, 1.0), (2.0, 1.1)])];
        let b = vec![doc(11, &[(1.01, 11.0), (2.01, 11.2)])];
        let runs = |name: &str, d: &Vec<AnyResult>| ScenarioRuns {
            name: name.into(),
            kind: "probe".into(),
            results: d
                .iter()
                .map(|d| Input {
                    name: name.into(),
                    path: format!("{name}.json"),
                    doc: d.clone(),
                })
                .collect(),
            ..ScenarioRuns::default()
        };
        let failed = ScenarioRuns {
            name: "dead".into(),
            failures: vec!["run 1: exit status 1".into()],
            ..ScenarioRuns::default()
        };
        let t = table_of_runs(&[runs("a", &a), runs("b", &b), failed], Some("a"), false).unwrap();
        let page = html_page(&t, &[a, b, Vec::new()], "x.toml");
        let ids: Vec<&str> = page.charts.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["latency", "rate", "errors", "spectrum", "cdf"]);
        let lat = &page.charts[0];
        assert_eq!(lat.x, [1.0, 1.01, 2.0, 2.01]);
        assert_eq!(lat.series.len(), 4, "p50 and p99 of a and b");
        assert_eq!(lat.drawable_points(), 8);
        let rate = &page.charts[1];
        assert_eq!(rate.series.len(), 2, "one rate line per scenario");
        assert_eq!(rate.series[0].label, "a");
        let errors = &page.charts[2];
        let labels: Vec<&str> = errors.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["a errors", "a loss %", "b errors", "b loss %"]);
        for c in &page.charts {
            assert!(c.x.windows(2).all(|w| w[0] < w[1]), "{}", c.id);
            assert!(c.series.iter().all(|s| s.values.len() == c.x.len()));
        }
        assert_eq!(
            page.charts[3].series.len(),
            2,
            "the failed scenario has no line"
        );
        // b's CDF is 0 until a's latencies are all behind, and reaches 1.
        let cdf = &page.charts[4];
        let b_line = &cdf.series[1].values;
        assert_eq!(b_line[0], Some(0.0));
        assert_eq!(*b_line.last().unwrap(), Some(1.0));
        assert_eq!(page.tables[0].rows.len(), 3);
        assert_eq!(page.tables[0].rows[2][1], "-");
        assert!(page.tables[1].rows[2][5].contains("exit status 1"));
        // b's difference says its kind in its cell, and the notes say what the kinds are.
        assert!(
            page.tables[0].rows[1][8].contains(" ci"),
            "{:?}",
            page.tables[0].rows[1]
        );
        let notes = page.tables.iter().find(|t| t.caption == "Notes").unwrap();
        assert!(
            notes.rows[0][0].starts_with("±: ci = one run's 95 %"),
            "{:?}",
            notes.rows
        );
    }
}
