//! Any saved result (probe, run, http, ping, bulk, trace) as the pieces `npt report` renders,
//! read from the one result model ([`AnyResult`]): a CSV of its interval series and headline
//! latency, and an HTML page with charts (latency over time, rate over time, errors and loss
//! over time, the percentile spectrum, the CDF) built on [`crate::html`]. What a kind adds to
//! them (columns, rows, charts, what its rate counts) its `Render` says
//! ([`crate::render::of`]); nothing here names a kind.

use std::io::{self, Write};

use crate::html::{Chart, Page, Series, Table};
use npt_result::any::AnyResult;
use npt_result::interval::Interval;

/// A column a kind adds to the CSV: its name, each interval's cell, the summary row's cell
/// (empty where `None`).
pub struct Column {
    pub name: &'static str,
    pub cell: fn(&Interval) -> Option<String>,
    pub total: Option<String>,
}

/// One row per interval, then a summary row; column names are stable (docs/report-merge.md).
/// A kind may add columns after the common ones ([`crate::render::Render::csv_columns`]: a
/// probe whose server said what it saw gets `refused,lost_up,lost_down`, a bulk its goodput
/// each way).
pub fn write_csv(w: &mut impl Write, doc: &AnyResult) -> io::Result<()> {
    let columns = crate::render::of(&doc.body).csv_columns();
    let b = doc.body.view();
    let names: String = columns.iter().map(|c| format!(",{}", c.name)).collect();
    writeln!(
        w,
        "row,index,start_s,end_s,rate_per_s,p50_ms,p99_ms,errors,loss_pct{names}"
    )?;
    for iv in b.intervals() {
        let cells: String = columns
            .iter()
            .map(|c| format!(",{}", (c.cell)(iv).unwrap_or_default()))
            .collect();
        writeln!(
            w,
            "interval,{},{:.3},{:.3},{:.3},{:.6},{:.6},{},{}{cells}",
            iv.index,
            iv.start_s,
            iv.end_s,
            iv.rate_per_s,
            iv.latency_ms.p50,
            iv.latency_ms.p99,
            iv.errors,
            iv.loss_pct.map_or(String::new(), |l| format!("{l:.4}")),
        )?;
    }
    let s = b.headline().summary();
    let totals: String = columns
        .iter()
        .map(|c| format!(",{}", c.total.as_deref().unwrap_or_default()))
        .collect();
    writeln!(
        w,
        "summary,,,{:.3},,{:.6},{:.6},{},{totals}",
        doc.duration_s,
        s.p50,
        s.p99,
        b.errors().total_errors,
    )
}

/// Percentiles shown in the spectrum (to 99.99, those docs/measurement.md lists).
pub(crate) const SPECTRUM: [f64; 14] = [
    0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 98.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0,
];

/// The intervals a time chart draws, and how it draws a series of them.
///
/// Zero-length intervals (a run's last instant) are not drawn; a rate over a short last
/// interval (under half the usual length) is not either: a count over a fraction of an
/// interval draws a step the path never took (50 pps read 51 over the last 0.98 s).
pub struct Timeline<'a> {
    points: Vec<&'a Interval>,
    usual: f64,
}

impl<'a> Timeline<'a> {
    fn of(all: &'a [Interval]) -> Timeline<'a> {
        let points: Vec<&Interval> = all.iter().filter(|p| p.end_s > p.start_s).collect();
        let mut lens: Vec<f64> = points.iter().map(|p| p.end_s - p.start_s).collect();
        lens.sort_by(f64::total_cmp);
        let usual = lens.get(lens.len() / 2).copied().unwrap_or(0.0);
        Timeline { points, usual }
    }

    /// The x axis: each drawn interval's end (s).
    pub fn x(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.end_s).collect()
    }

    /// Whether `p` is long enough for a rate over it to be drawn.
    pub fn whole(&self, p: &Interval) -> bool {
        p.end_s - p.start_s >= self.usual / 2.0
    }

    /// A series of `v` of each drawn interval.
    pub fn series(&self, label: &str, v: &dyn Fn(&Interval) -> Option<f64>) -> Series {
        Series {
            label: label.into(),
            values: self.points.iter().map(|p| v(p)).collect(),
        }
    }
}

/// The HTML page of one result: a summary table and its charts.
pub fn html_page(doc: &AnyResult, source: &str) -> Page {
    let kind = doc.body.kind();
    let own = crate::render::of(&doc.body);
    let b = doc.body.view();
    let h = b.headline();
    let s = h.summary();
    let mut rows = vec![
        vec!["kind".into(), kind.to_string()],
        vec!["stopped by".into(), doc.stopped_by.to_string()],
        vec!["samples".into(), s.count.to_string()],
        vec![
            "min / mean / max (ms)".into(),
            format!("{:.3} / {:.3} / {:.3}", s.min, s.mean, s.max),
        ],
        vec![
            "p50 / p90 / p99 / p99.9 / p99.99 (ms)".into(),
            format!(
                "{:.3} / {:.3} / {:.3} / {:.3} / {:.3}",
                s.p50, s.p90, s.p99, s.p999, s.p9999
            ),
        ],
        vec!["errors".into(), b.errors().total_errors.to_string()],
    ];
    rows.extend(own.summary_rows());
    let tl = Timeline::of(b.intervals());
    let mut charts = Vec::new();
    let bands = own.bands();
    if !tl.points.is_empty() {
        charts.push(Chart {
            id: "latency".into(),
            title: "Latency per interval".into(),
            x_label: "time (s)".into(),
            y_label: "ms".into(),
            x: tl.x(),
            series: vec![
                tl.series("p50", &|p| Some(p.latency_ms.p50)),
                tl.series("p99", &|p| Some(p.latency_ms.p99)),
            ],
            bands: bands.clone(),
            ..Chart::default()
        });
        charts.extend(own.series_charts(&tl, &bands));
        if let Some(unit) = own.rate_unit() {
            charts.push(Chart {
                id: "rate".into(),
                title: format!("Rate ({unit})"),
                x_label: "time (s)".into(),
                y_label: unit.into(),
                x: tl.x(),
                series: vec![tl.series("rate", &|p| tl.whole(p).then_some(p.rate_per_s))],
                bands: bands.clone(),
                ..Chart::default()
            });
        }
        let mut err = vec![tl.series("errors", &|p| Some(p.errors as f64))];
        if own.draws_loss() {
            err.push(tl.series("loss %", &|p| p.loss_pct));
        }
        charts.push(Chart {
            id: "errors".into(),
            title: "Errors and loss per interval".into(),
            x_label: "time (s)".into(),
            y_label: "count / %".into(),
            x: tl.x(),
            series: err,
            bands: bands.clone(),
            ..Chart::default()
        });
    }
    charts.extend(own.charts(&bands));
    if !h.is_empty() {
        charts.push(Chart {
            id: "spectrum".into(),
            title: "Percentile spectrum".into(),
            x_label: "percentile".into(),
            y_label: "ms (log)".into(),
            y_log: true,
            x_percentile: true,
            x: SPECTRUM.to_vec(),
            series: vec![Series {
                label: "latency".into(),
                values: SPECTRUM
                    .iter()
                    .map(|q| Some(h.quantile_ns(q / 100.0) as f64 / 1e6))
                    .collect(),
            }],
            ..Chart::default()
        });
        // CDF: latency (ascending, log axis) → share of samples at or below it.
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..=200 {
            let q = i as f64 / 200.0;
            let ms = (h.quantile_ns(q) as f64 / 1e6).max(1e-6);
            if x.last().is_some_and(|&l| ms <= l) {
                if let Some(last) = y.last_mut() {
                    *last = Some(q);
                }
                continue;
            }
            x.push(ms);
            y.push(Some(q));
        }
        charts.push(Chart {
            id: "cdf".into(),
            title: "CDF".into(),
            x_label: "ms (log)".into(),
            y_label: "share of samples".into(),
            x_log: true,
            x,
            series: vec![Series {
                label: "latency".into(),
                values: y,
            }],
            ..Chart::default()
        });
    }
    Page {
        title: format!("npt {kind}: {source}"),
        subtitle: format!("{} → {}", doc.started_at, doc.ended_at),
        tables: vec![Table {
            caption: "Summary".into(),
            header: vec!["".into(), "".into()],
            rows,
        }],
        charts,
    }
}

/// A probe result with `intervals` `(end_s, rate, loss %, p50 ms, p99 ms)` and an RTT histogram
/// of `rtt_ns`, for tests of the readers.
#[cfg(test)]
pub(crate) fn test_probe(
    rtt_ns: impl Iterator<Item = u64>,
    intervals: &[(f64, f64, f64, f64, f64)],
) -> AnyResult {
    use npt_result::probe::{hist, Errors, ProbeBody};
    let mut h = npt_stats::Histogram::new();
    for v in rtt_ns {
        h.record(v);
    }
    let intervals = intervals
        .iter()
        .enumerate()
        .map(|(i, &(end_s, rate, loss, p50, p99))| Interval {
            index: u32::try_from(i).unwrap_or(u32::MAX),
            start_s: end_s - 1.0,
            end_s,
            rate_per_s: rate,
            loss_pct: Some(loss),
            latency_ms: npt_stats::Summary {
                p50,
                p99,
                ..Default::default()
            },
            ..Interval::default()
        })
        .collect();
    let body = ProbeBody {
        summary: Default::default(),
        health: Default::default(),
        latency: Default::default(),
        errors: Errors {
            total_errors: 1,
            ..Errors::default()
        },
        histograms: [(hist::RTT.to_string(), h.to_serialized())].into(),
        intervals,
        under_load: None,
    };
    let t0 = std::time::SystemTime::UNIX_EPOCH;
    let t1 = t0 + std::time::Duration::from_secs(2);
    npt_result::Document::new(
        "probe",
        t0,
        t1,
        npt_result::StopReason::Count,
        serde_json::Value::Null,
        npt_result::any::AnyBody::Probe(body),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> AnyResult {
        test_probe(
            (1..=1000u64).map(|i| i * 1000),
            &[(1.0, 100.0, 0.0, 0.5, 0.99), (2.0, 90.0, 1.0, 0.6, 1.2)],
        )
    }

    #[test]
    fn csv_has_a_row_per_interval_and_a_summary() {
        let mut out = Vec::new();
        write_csv(&mut out, &doc()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "row,index,start_s,end_s,rate_per_s,p50_ms,p99_ms,errors,loss_pct"
        );
        assert!(lines[2].starts_with("interval,1,1.000,2.000,90.000,0.600000,1.200000,0,1.0000"));
        assert!(lines[3].starts_with("summary,,,2.000,"), "{}", lines[3]);
        assert!(lines[3].ends_with(",1,"), "total errors: {}", lines[3]);
    }

    /// A zero-length interval is not drawn, and a rate over a short last interval is a gap,
    /// not a step; the spectrum is drawn on a percentile (1/(1 − p)) axis without p100.
    #[test]
    fn short_intervals_are_no_steps_and_the_spectrum_axis_is_percentiles() {
        let mut d = doc();
        let npt_result::any::AnyBody::Probe(b) = &mut d.body else {
            unreachable!()
        };
        let mut short = b.intervals[1].clone();
        (short.index, short.start_s, short.end_s, short.rate_per_s) = (2, 2.0, 2.1, 51.0);
        let mut zero = short.clone();
        (zero.index, zero.start_s, zero.end_s) = (3, 2.1, 2.1);
        b.intervals.extend([short, zero]);
        let page = html_page(&d, "x.json");
        let chart = |id: &str| page.charts.iter().find(|c| c.id == id).unwrap();
        let rate = chart("rate");
        assert_eq!(
            rate.x,
            [1.0, 2.0, 2.1],
            "the zero-length interval is left out"
        );
        assert_eq!(rate.series[0].values, [Some(100.0), Some(90.0), None]);
        assert_eq!(chart("latency").x.len(), 3);
        let spectrum = chart("spectrum");
        assert!(spectrum.x_percentile);
        assert_eq!(
            spectrum.drawable_points(),
            SPECTRUM.len() - 1,
            "every percentile but p100"
        );
    }

    /// A probe whose server said what it saw: the CSV has each interval's split, the page a
    /// chart of loss up and down and one of one-way delay up against down.
    #[test]
    fn directions_in_the_csv_and_on_the_page() {
        use npt_result::directions::{hist as dh, OneWay, PathDirections};
        let mut d = doc();
        let npt_result::any::AnyBody::Probe(b) = &mut d.body else {
            unreachable!()
        };
        for (i, iv) in b.intervals.iter_mut().enumerate() {
            iv.lost_up = Some(i as u64 * 3);
            iv.lost_down = Some(1);
            iv.refused = Some(7);
        }
        let mut owd = npt_stats::Histogram::new();
        owd.record(30_000_000);
        for name in [dh::OWD_UP, dh::OWD_DOWN] {
            b.histograms.insert(name.into(), owd.to_serialized());
        }
        b.summary.refused_by_server = 14;
        b.summary.directions = Some(PathDirections {
            clock: "same-host".into(),
            up: OneWay {
                lost: Some(3),
                loss_pct: Some(1.0),
                owd_ms: Some(owd.summary()),
                ..OneWay::default()
            },
            down: OneWay {
                lost: Some(2),
                loss_pct: Some(0.5),
                owd_ms: Some(owd.summary()),
                ..OneWay::default()
            },
            ..PathDirections::default()
        });
        let mut out = Vec::new();
        write_csv(&mut out, &d).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with(",loss_pct,refused,lost_up,lost_down"));
        assert!(lines[2].ends_with(",7,3,1"), "{}", lines[2]);
        assert!(lines[3].ends_with(",14,3,2"), "{}", lines[3]);
        let page = html_page(&d, "x.json");
        let ids: Vec<&str> = page.charts.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "latency",
                "rate",
                "errors",
                "directions",
                "one-way",
                "spectrum",
                "cdf"
            ]
        );
        let one_way = &page.charts[4];
        assert_eq!(one_way.series.len(), 2, "up and down");
        let rows = &page.tables[0].rows;
        assert!(rows
            .iter()
            .any(|r| r[0].starts_with("refused by the server")));
        let owd = rows
            .iter()
            .find(|r| r[0].starts_with("one-way delay"))
            .unwrap();
        assert!(
            owd[1].starts_with("30.0") && owd[1].contains(" / 30.0"),
            "{owd:?}"
        );
    }

    /// A probe that asked its far end for a marking: the summary table says each way what
    /// became of it, in the words of a trace's marking table; a plain probe's says nothing.
    #[test]
    fn a_marked_probe_says_each_way_on_the_page() {
        use npt_result::marking::{Marking, Tos};
        let rows = |d: &AnyResult| html_page(d, "x.json").tables[0].rows.clone();
        let mut d = doc();
        assert!(!rows(&d).iter().any(|r| r[0].starts_with("marking")));
        let npt_result::any::AnyBody::Probe(b) = &mut d.body else {
            unreachable!()
        };
        let ef = Some(Tos { dscp: 46, ecn: 0 });
        let mut m = Marking {
            sent: ef,
            asked: ef,
            ..Marking::default()
        };
        // Bleached up (the far end saw DSCP 0), arrived down.
        for _ in 0..3 {
            m.count_reply(Some(0xb8), Some((0x00, 0xb8)));
        }
        b.summary.marking = m.block();
        let rows = rows(&d);
        let way = |name: &str| rows.iter().find(|r| r[0] == name).unwrap()[1].clone();
        assert_eq!(
            way("marking up"),
            "DSCP 46 (EF) bleached to 0, ECN Not-ECT arrived (CE 0 of 3)"
        );
        assert_eq!(
            way("marking down"),
            "DSCP 46 (EF) arrived, ECN Not-ECT arrived (CE 0 of 3)"
        );
    }

    #[test]
    fn the_page_has_every_chart_with_ascending_x() {
        let page = html_page(&doc(), "x.json");
        let ids: Vec<&str> = page.charts.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["latency", "rate", "errors", "spectrum", "cdf"]);
        for c in &page.charts {
            assert!(
                c.x.windows(2).all(|w| w[0] < w[1]),
                "{} x not ascending",
                c.id
            );
            assert!(
                c.series.iter().all(|s| s.values.len() == c.x.len()),
                "{}",
                c.id
            );
        }
    }
}
