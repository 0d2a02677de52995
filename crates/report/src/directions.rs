//! `npt report`'s pieces of a probe's per-direction figures: rows for the HTML summary table
//! (what the server refused, loss, one-way delay and delay variation up and down, its dwell,
//! the clock assumption), and two charts with both directions — loss per interval up and down
//! (with the server's refusals), and the percentile spectrum of one-way delay (or, without a
//! clock assumption, delay variation) up against down.

use npt_result::directions::{refusal_fix, PathDirections};
use npt_result::probe::{hist, ProbeBody};
use npt_stats::Histogram;

use crate::html::{Band, Chart, Series};
use crate::page::SPECTRUM;
use crate::text::ms;

/// The summary table's rows for a probe's refusals and directions.
pub fn summary_rows(b: &ProbeBody) -> Vec<Vec<String>> {
    let s = &b.summary;
    let mut rows = Vec::new();
    if s.refused_by_server > 0 {
        rows.push(vec![
            "refused by the server (not path loss)".into(),
            format!(
                "{} ({:.3}% of sent): {}",
                s.refused_by_server,
                npt_result::loss_pct(s.refused_by_server, s.packets.sent),
                refusal_fix(&s.refusal_notices)
            ),
        ]);
    }
    let Some(d) = &s.directions else {
        if let Some(why) = &s.round_trip_only {
            rows.push(vec![
                "per direction".into(),
                match why.as_str() {
                    "raw" => "none: --raw is round trips only".into(),
                    "echo" => {
                        "none: a plain echo (returns bytes unchanged) is round trips only".into()
                    }
                    _ => "none: the server did not say what it saw".into(),
                },
            ]);
        }
        return rows;
    };
    let pair = |up: Option<String>, down: Option<String>| {
        format!(
            "{} / {}",
            up.unwrap_or_else(|| "-".into()),
            down.unwrap_or_else(|| "-".into())
        )
    };
    if d.up.lost.is_some() {
        let lost = |w: &npt_result::directions::OneWay| {
            w.lost
                .zip(w.loss_pct)
                .map(|(n, p)| format!("{n} ({p:.3}%)"))
        };
        rows.push(vec![
            format!("lost up / down ({})", exactness(d)),
            pair(lost(&d.up), lost(&d.down)),
        ]);
    }
    let p50 = |o: Option<npt_stats::Summary>| o.map(|s| ms(s.p50));
    rows.push(vec![
        format!("one-way delay p50 up / down (ms; clock {})", d.clock),
        pair(p50(d.up.owd_ms), p50(d.down.owd_ms)),
    ]);
    rows.push(vec![
        "delay variation (IPDV) p50 / p99 up, down (ms)".into(),
        format!(
            "{} / {}, {} / {}",
            ms(d.up.ipdv_ms.p50),
            ms(d.up.ipdv_ms.p99),
            ms(d.down.ipdv_ms.p50),
            ms(d.down.ipdv_ms.p99)
        ),
    ]);
    rows.push(vec![
        "server dwell p50 / p99 (ms)".into(),
        format!("{} / {}", ms(d.dwell_ms.p50), ms(d.dwell_ms.p99)),
    ]);
    rows
}

fn exactness(d: &PathDirections) -> String {
    match d.flows.why_inexact() {
        None => "exact".into(),
        Some(why) => format!("estimate: {why}"),
    }
}

/// The charts with both directions, for a probe that has them.
pub fn charts(b: &ProbeBody, bands: &[Band]) -> Vec<Chart> {
    let mut out = Vec::new();
    let ivs = &b.intervals;
    let placed = ivs
        .iter()
        .any(|i| i.lost_up.is_some() || i.refused.is_some());
    if placed && !ivs.is_empty() {
        let series = |label: &str, f: fn(&npt_result::interval::Interval) -> Option<u64>| Series {
            label: label.into(),
            values: ivs.iter().map(|i| Some(f(i).unwrap_or(0) as f64)).collect(),
        };
        out.push(Chart {
            id: "directions".into(),
            title: "Loss per interval, up and down, and the server's refusals".into(),
            x_label: "time (s)".into(),
            y_label: "packets".into(),
            x: ivs.iter().map(|i| i.end_s).collect(),
            series: vec![
                series("lost up", |i| i.lost_up),
                series("lost down", |i| i.lost_down),
                series("refused by the server", |i| i.refused),
            ],
            bands: bands.to_vec(),
            ..Chart::default()
        });
    }
    let Some(d) = &b.summary.directions else {
        return out;
    };
    let h = |name: &str| {
        b.histograms
            .get(name)
            .and_then(|s| Histogram::from_serialized(s).ok())
            .filter(|h| !h.is_empty())
    };
    let (names, what) = if d.up.owd_ms.is_some() {
        ([hist::OWD_UP, hist::OWD_DOWN], "One-way delay")
    } else {
        ([hist::IPDV_UP, hist::IPDV_DOWN], "Delay variation (IPDV)")
    };
    let series: Vec<Series> = names
        .iter()
        .zip(["up", "down"])
        .filter_map(|(name, label)| {
            let h = h(name)?;
            Some(Series {
                label: label.into(),
                values: SPECTRUM
                    .iter()
                    .map(|q| Some(h.quantile_ns(q / 100.0) as f64 / 1e6))
                    .collect(),
            })
        })
        .collect();
    if !series.is_empty() {
        out.push(Chart {
            id: "one-way".into(),
            title: format!("{what} up and down: percentile spectrum"),
            x_label: "percentile".into(),
            y_label: "ms (log)".into(),
            y_log: true,
            x_percentile: true,
            x: SPECTRUM.to_vec(),
            series,
            ..Chart::default()
        });
    }
    out
}
