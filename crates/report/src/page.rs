//! Any saved result (probe, run, http, ping) as the pieces `npt report` renders: one series of
//! intervals in common units, the headline latency histogram, a CSV, and an HTML page with
//! charts (latency over time, rate over time, errors and loss over time, the percentile
//! spectrum, the CDF) built on [`crate::html`].

use std::io::{self, Write};

use npt_stats::{Histogram, SerializedHistogram};

use crate::html::{Chart, Page, Series, Table};

/// One interval in common units.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Point {
    pub index: u64,
    pub start_s: f64,
    pub end_s: f64,
    /// Packets (probe) or requests (run, http) per second.
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
    pub loss_pct: Option<f64>,
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// The intervals of any result kind (ping has none).
pub fn points(doc: &serde_json::Value) -> Vec<Point> {
    let kind = doc["kind"].as_str().unwrap_or("");
    let Some(ivs) = doc["intervals"].as_array() else {
        return Vec::new();
    };
    ivs.iter()
        .map(|iv| {
            let (start, end) = (f(&iv["start_s"]), f(&iv["end_s"]));
            let lat = if kind == "probe" {
                &iv["rtt_ms"]
            } else {
                &iv["latency_ms"]
            };
            let rate = match kind {
                "probe" => f(&iv["pps"]),
                "http" => f(&iv["rps"]),
                _ => f(&iv["requests"]) / (end - start).max(1e-9),
            };
            Point {
                index: iv["index"].as_u64().unwrap_or(0),
                start_s: start,
                end_s: end,
                rate,
                p50_ms: f(&lat["p50"]),
                p99_ms: f(&lat["p99"]),
                errors: iv["errors"].as_u64().unwrap_or(0),
                loss_pct: (kind == "probe").then(|| f(&iv["loss_pct"])),
            }
        })
        .collect()
}

/// The latency the user feels, as one histogram (run: every protocol's, added exactly).
pub fn headline(doc: &serde_json::Value) -> Histogram {
    let one = |v: &serde_json::Value| {
        serde_json::from_value::<SerializedHistogram>(v.clone())
            .ok()
            .and_then(|s| Histogram::from_serialized(&s).ok())
    };
    let mut h = Histogram::new();
    match doc["kind"].as_str().unwrap_or("") {
        "probe" => h = one(&doc["histograms"]["rtt"]).unwrap_or_default(),
        "http" => h = one(&doc["histograms"]["latency"]).unwrap_or_default(),
        "ping" => h = one(&doc["histogram"]).unwrap_or_default(),
        _ => {
            if let Some(m) = doc["histograms"].as_object() {
                for (k, v) in m {
                    if k.starts_with("proto.") && k.ends_with(".latency") {
                        if let Some(x) = one(v) {
                            h += &x;
                        }
                    }
                }
            }
        }
    }
    h
}

/// One row per interval, then a summary row; column names are stable (README).
pub fn write_csv(w: &mut impl Write, doc: &serde_json::Value) -> io::Result<()> {
    writeln!(
        w,
        "row,index,start_s,end_s,rate_per_s,p50_ms,p99_ms,errors,loss_pct"
    )?;
    for p in points(doc) {
        writeln!(
            w,
            "interval,{},{:.3},{:.3},{:.3},{:.6},{:.6},{},{}",
            p.index,
            p.start_s,
            p.end_s,
            p.rate,
            p.p50_ms,
            p.p99_ms,
            p.errors,
            p.loss_pct.map_or(String::new(), |l| format!("{l:.4}"))
        )?;
    }
    let s = headline(doc).summary();
    writeln!(
        w,
        "summary,,,{:.3},,{:.6},{:.6},{},",
        f(&doc["duration_s"]),
        s.p50,
        s.p99,
        doc["errors"]["total_errors"].as_u64().unwrap_or(0)
    )
}

/// Percentiles shown in the spectrum (to 99.99, as DESIGN asks).
pub(crate) const SPECTRUM: [f64; 14] = [
    0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 98.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0,
];

/// The HTML page of one result: a summary table and its charts.
pub fn html_page(doc: &serde_json::Value, source: &str) -> Page {
    let kind = doc["kind"].as_str().unwrap_or("?");
    let h = headline(doc);
    let s = h.summary();
    let rows = vec![
        vec!["kind".into(), kind.to_string()],
        vec![
            "stopped by".into(),
            doc["stopped_by"].as_str().unwrap_or("").into(),
        ],
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
        vec![
            "errors".into(),
            doc["errors"]["total_errors"]
                .as_u64()
                .unwrap_or(0)
                .to_string(),
        ],
    ];
    let pts = points(doc);
    let t: Vec<f64> = pts.iter().map(|p| p.end_s).collect();
    let series = |label: &str, v: &dyn Fn(&Point) -> Option<f64>| Series {
        label: label.into(),
        values: pts.iter().map(v).collect(),
    };
    let mut charts = Vec::new();
    if !pts.is_empty() {
        charts.push(Chart {
            id: "latency".into(),
            title: "Latency per interval".into(),
            x_label: "time (s)".into(),
            y_label: "ms".into(),
            x: t.clone(),
            series: vec![
                series("p50", &|p| Some(p.p50_ms)),
                series("p99", &|p| Some(p.p99_ms)),
            ],
            ..Chart::default()
        });
        let unit = if kind == "probe" {
            "packets/s"
        } else {
            "requests/s"
        };
        charts.push(Chart {
            id: "rate".into(),
            title: format!("Rate ({unit})"),
            x_label: "time (s)".into(),
            y_label: unit.into(),
            x: t.clone(),
            series: vec![series("rate", &|p| Some(p.rate))],
            ..Chart::default()
        });
        let mut err = vec![series("errors", &|p| Some(p.errors as f64))];
        if kind == "probe" {
            err.push(series("loss %", &|p| p.loss_pct));
        }
        charts.push(Chart {
            id: "errors".into(),
            title: "Errors and loss per interval".into(),
            x_label: "time (s)".into(),
            y_label: "count / %".into(),
            x: t,
            series: err,
            ..Chart::default()
        });
    }
    if !h.is_empty() {
        charts.push(Chart {
            id: "spectrum".into(),
            title: "Percentile spectrum".into(),
            x_label: "percentile".into(),
            y_label: "ms (log)".into(),
            y_log: true,
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
        subtitle: format!(
            "{} → {}",
            doc["started_at"].as_str().unwrap_or(""),
            doc["ended_at"].as_str().unwrap_or("")
        ),
        tables: vec![Table {
            caption: "Summary".into(),
            header: vec!["".into(), "".into()],
            rows,
        }],
        charts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> serde_json::Value {
        let mut h = Histogram::new();
        for i in 1..=1000u64 {
            h.record(i * 1000);
        }
        serde_json::json!({
            "kind": "probe", "stopped_by": "count", "duration_s": 2.0,
            "errors": {"total_errors": 1},
            "histograms": {"rtt": h.to_serialized()},
            "intervals": [
                {"index": 0, "start_s": 0.0, "end_s": 1.0, "pps": 100.0, "loss_pct": 0.0,
                 "rtt_ms": {"p50": 0.5, "p99": 0.99}},
                {"index": 1, "start_s": 1.0, "end_s": 2.0, "pps": 90.0, "loss_pct": 1.0,
                 "rtt_ms": {"p50": 0.6, "p99": 1.2}}
            ]
        })
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
