//! A lifetime result's HTML page: the verdict with its bracket (the text's lines), the search's
//! figures, a chart of which idle gaps the path kept (1) and which it did not (0) — the step is
//! the lifetime — and every flow. The page's defaults (latency over time, its spectrum) would
//! draw only the flows' request → ack round trips, which is not what a lifetime result says.

use npt_result::lifetime::{FlowRecord, LifetimeBody};

use crate::html::{Chart, Page, Series, Table};

fn s3(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.3}"))
}

/// What the path did with a flow, for the chart: kept (1), not kept (0), or nothing to say
/// (cancelled, unanswered, a rebind flow). A closed flow is placed at its close time.
fn point(f: &FlowRecord) -> Option<(f64, f64)> {
    match f.fate.as_str() {
        "alive" => Some((f.held_s.unwrap_or(f.gap_s), 1.0)),
        "gone" => Some((f.gap_s, 0.0)),
        "closed" => Some((f.closed_after_s.unwrap_or(f.gap_s), 0.0)),
        _ => None,
    }
}

/// The page of `b`.
pub fn html_page(b: &LifetimeBody, title: String, subtitle: String) -> Page {
    let lines = crate::text::lifetime_lines(b);
    let s = &b.summary;
    let yes_no = |v: bool| if v { "yes" } else { "no" }.to_string();
    let mut rows = vec![
        vec!["lifetime (s)".to_string(), s3(s.lifetime_s)],
        vec!["alive after (s)".to_string(), s3(s.alive_after_s)],
        vec!["gone after (s)".to_string(), s3(s.gone_after_s)],
        vec!["longer than --max".to_string(), yes_no(s.longer_than_max)],
        vec!["--max (s)".to_string(), format!("{}", s.max_s)],
        vec!["resolution (s)".to_string(), format!("{}", s.resolution_s)],
        vec![
            "rounds, flows".to_string(),
            format!("{}, {}", s.rounds, b.flows.len()),
        ],
    ];
    if let Some(r) = s.rebound {
        rows.push(vec![
            "rebound".to_string(),
            format!(
                "{} ({} of {})",
                yes_no(r),
                s.rebound_flows,
                s.rebound_checked
            ),
        ]);
    }
    if let Some(c) = &s.cut_off {
        rows.push(vec![
            "cut off".to_string(),
            format!(
                "{} (FIN {}, RST {}, dropped {}; first close after {} s)",
                c.how.as_deref().unwrap_or("-"),
                c.fin,
                c.rst,
                c.dropped,
                s3(c.closed_after_s)
            ),
        ]);
    }
    rows.push(vec![
        "inconsistent, refused, unanswered".to_string(),
        format!(
            "{}, {}, {}",
            s.inconsistent, s.refused, b.errors.total_errors
        ),
    ]);
    let mut tables = vec![Table {
        caption: format!("Lifetime of {}: {}", b.target, lines.join("; ")),
        header: vec!["".into(), "".into()],
        rows,
    }];
    let mut points: Vec<(f64, f64)> = b.flows.iter().filter_map(point).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut charts = Vec::new();
    if !points.is_empty() {
        charts.push(Chart {
            id: "kept".into(),
            title: "Idle flows the path kept (1) and lost (0), by idle time".into(),
            x_label: "idle (s)".into(),
            y_label: "kept".into(),
            span_gaps: true,
            x: points.iter().map(|p| p.0).collect(),
            series: vec![Series {
                label: "kept".into(),
                values: points.iter().map(|p| Some(p.1)).collect(),
            }],
            ..Chart::default()
        });
    }
    if !b.flows.is_empty() {
        tables.push(Table {
            caption: "Every flow of the search, in the order opened".into(),
            header: [
                "round",
                "gap (s)",
                "fate",
                "held (s)",
                "closed",
                "seen",
                "seen after",
            ]
            .map(String::from)
            .to_vec(),
            rows: b
                .flows
                .iter()
                .map(|f| {
                    vec![
                        f.round.to_string(),
                        format!("{:.3}", f.gap_s),
                        f.fate.clone(),
                        s3(f.held_s),
                        match (&f.closed_by, f.closed_after_s) {
                            (Some(by), Some(a)) => format!("{by} after {a:.3} s"),
                            _ => String::new(),
                        },
                        f.seen.clone().unwrap_or_default(),
                        f.seen_after.clone().unwrap_or_default(),
                    ]
                })
                .collect(),
        });
    }
    Page {
        title,
        subtitle,
        tables,
        charts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::lifetime::{CutOff, LifetimeSummary};

    fn flow(gap_s: f64, fate: &str, held: Option<f64>, closed: Option<f64>) -> FlowRecord {
        FlowRecord {
            round: 0,
            gap_s,
            fate: fate.into(),
            held_s: held,
            seen: Some("192.0.2.9:40000".into()),
            seen_after: None,
            closed_by: closed.map(|_| "fin".to_string()),
            closed_after_s: closed,
        }
    }

    #[test]
    fn the_page_has_the_verdict_the_step_and_every_flow() {
        let b = LifetimeBody {
            target: "tcp://192.0.2.1:9000".into(),
            address: "192.0.2.1:9000".into(),
            summary: LifetimeSummary {
                lifetime_s: Some(4.83),
                alive_after_s: Some(4.65),
                gone_after_s: Some(5.0),
                max_s: 8.0,
                resolution_s: 0.5,
                rounds: 1,
                cut_off: Some(CutOff {
                    how: Some("closed".into()),
                    fin: 1,
                    closed_after_s: Some(5.0),
                    ..CutOff::default()
                }),
                ..LifetimeSummary::default()
            },
            flows: vec![
                flow(4.65, "alive", Some(4.65), None),
                flow(6.0, "closed", None, Some(5.0)),
                flow(7.0, "cancelled", None, None),
            ],
            latency: Default::default(),
            errors: npt_result::common::Errors::new(Default::default(), 3),
            ack_histogram: npt_stats::Histogram::new().to_serialized(),
        };
        let page = html_page(&b, "t".into(), "s".into());
        assert!(page.tables[0].caption.contains("idle TCP lifetime 4.83 s"));
        assert!(page.tables[0].caption.contains("closed by the path (FIN)"));
        let c = &page.charts[0];
        assert_eq!(
            c.x,
            [4.65, 5.0],
            "the closed flow at its close, the cancelled one left out"
        );
        assert_eq!(c.series[0].values, [Some(1.0), Some(0.0)]);
        assert_eq!(page.tables[1].rows.len(), 3);
        assert_eq!(page.tables[1].rows[1][4], "fin after 5.000 s");
        let html = String::from_utf8(crate::html::render_to_vec(&page)).unwrap();
        assert!(html.contains("Idle flows the path kept"));
    }
}
