//! The table of a scenario file: each scenario run once or several times (`--runs N`), and its
//! rows built from all of its runs.
//!
//! Runs are combined exactly where the results allow it: every result kind carries its latency
//! histogram, and histograms add without loss, so the figures of N runs are those of one
//! histogram holding every sample (`merged = "histograms"`). A result without a usable histogram
//! (an older or foreign document) falls back to the median of the runs' figures
//! (`merged = "median"`). Either way the spread across runs — the lowest and highest per-run p50
//! and avg — shows whether the runs agreed, and the uncertainty of the row's avg is the
//! t-interval over the runs' avgs ([`noise::of_runs`]).

use npt_stats::{Histogram, Summary};

use npt_result::any::AnyBody;

use super::{headline, noise, overheads, target, Hop, Input, Range, Row, Spread, Table};

/// What running one scenario produced, over all of its runs.
#[derive(Default)]
pub struct ScenarioRuns {
    pub name: String,
    /// The target as the scenario file gave it.
    pub target: String,
    pub via: Option<String>,
    /// The workload kind (`probe`, `run`, `http`, `ping`, `bulk`, `trace`).
    pub kind: String,
    /// Given in the file (`theoretical_ms`, `hop_rtts_ms`) or the sum of the pinged hops.
    pub theoretical_ms: Option<f64>,
    pub hops: Vec<Hop>,
    /// The result of each run that produced one, in run order.
    pub results: Vec<Input>,
    /// What went wrong, one entry per failed run ("run 2: timed out after 31 s").
    pub failures: Vec<String>,
}

/// Where a row's theoretical latency came from (`Row::theoretical_source`).
pub mod source {
    /// Given as numbers: `theoretical_ms` / `hop_rtts_ms` in a scenario file, `--theoretical`
    /// / `--hops` for result files.
    pub const TYPED: &str = "typed";
    /// Every hop pinged from the client (`hops = ["tcp://…"]`): the client's RTT to each
    /// relay, which is not the segment between two relays.
    pub const PINGED: &str = "pinged";
    /// Each hop measured from its own upstream end: `{ from, to }` hops by the hop agent
    /// `from`, a URL hop (the chain's first segment) by the client.
    pub const MEASURED: &str = "measured";
}

/// How the hops were measured: [`source::MEASURED`] when a hop agent measured any of them,
/// else [`source::PINGED`].
pub fn source_of_hops(hops: &[Hop]) -> &'static str {
    if hops.iter().any(|h| h.from.is_some()) {
        source::MEASURED
    } else {
        source::PINGED
    }
}

/// The sum of the hops' RTTs, when every hop answered.
pub fn theoretical_from_hops(hops: &[Hop]) -> Option<f64> {
    if hops.is_empty() {
        return None;
    }
    hops.iter().map(|h| h.avg_ms).sum()
}

/// The uncertainty of [`theoretical_from_hops`]: the hops' intervals in quadrature ([`noise`]).
pub fn theoretical_spread_from_hops(hops: &[Hop]) -> Option<f64> {
    theoretical_from_hops(hops)?;
    Some(noise::in_quadrature(
        hops.iter().map(|h| h.spread_ms.unwrap_or(0.0)),
    ))
}

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The user-felt latency of all runs together, and how it was combined.
fn combine(per_run: &[Summary], results: &[Input]) -> (Summary, &'static str) {
    let hists: Vec<Histogram> = results
        .iter()
        .map(|i| i.doc.body.view().headline())
        .collect();
    // A histogram is usable when it holds exactly the samples the run's summary counts.
    let exact = hists
        .iter()
        .zip(per_run)
        .all(|(h, s)| !h.is_empty() && h.count() == s.count);
    if exact {
        let mut all = Histogram::new();
        for h in &hists {
            all += h;
        }
        return (all.summary(), "histograms");
    }
    let m = |f: fn(&Summary) -> f64| median(per_run.iter().map(f).collect());
    let s = Summary {
        count: per_run.iter().map(|s| s.count).sum(),
        min: m(|s| s.min),
        mean: m(|s| s.mean),
        stddev: m(|s| s.stddev),
        p50: m(|s| s.p50),
        p90: m(|s| s.p90),
        p95: m(|s| s.p95),
        p99: m(|s| s.p99),
        p999: m(|s| s.p999),
        p9999: m(|s| s.p9999),
        max: m(|s| s.max),
    };
    (s, "median")
}

fn range(v: impl Iterator<Item = f64>) -> Range {
    v.fold(
        Range {
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        },
        |r, x| Range {
            min: r.min.min(x),
            max: r.max.max(x),
        },
    )
}

fn row(s: &ScenarioRuns) -> Result<Row, super::CompareError> {
    let mut row = Row {
        name: s.name.clone(),
        kind: s.kind.clone(),
        target: s.target.clone(),
        via: s.via.clone(),
        theoretical_ms: s.theoretical_ms,
        hops: s.hops.clone(),
        theoretical_source: if s.hops.is_empty() {
            s.theoretical_ms.map(|_| source::TYPED.to_string())
        } else {
            Some(source_of_hops(&s.hops).to_string())
        },
        theoretical_spread_ms: if s.hops.is_empty() {
            s.theoretical_ms.map(|_| 0.0)
        } else {
            s.theoretical_ms.and(theoretical_spread_from_hops(&s.hops))
        },
        runs: u32::try_from(s.results.len()).unwrap_or(u32::MAX),
        results: s.results.iter().map(|i| i.path.clone()).collect(),
        result: s
            .results
            .first()
            .map(|i| i.path.clone())
            .unwrap_or_default(),
        error: (!s.failures.is_empty()).then(|| s.failures.join("; ")),
        ..Row::default()
    };
    if s.results.is_empty() {
        return Ok(row);
    }
    let per_run: Vec<Summary> = s.results.iter().map(headline).collect::<Result<_, _>>()?;
    let (all, how) = combine(&per_run, &s.results);
    row = row.with_figures(&all);
    row.merged = (s.results.len() > 1).then(|| how.to_string());
    let spread = Spread {
        p50_ms: range(per_run.iter().map(|s| s.p50)),
        avg_ms: range(per_run.iter().map(|s| s.mean)),
    };
    row.spread = Some(spread);
    // The merged samples' own interval (of the median's figures without histograms), then
    // the runs' t-interval where there are several and it is wider.
    let h: Histogram = s.results.iter().map(|i| i.doc.body.view().headline()).fold(
        Histogram::new(),
        |mut all, h| {
            all += &h;
            all
        },
    );
    let (own, _) = noise::of_one_run(&h, &all);
    let avgs: Vec<f64> = per_run.iter().map(|s| s.mean).collect();
    let (avg_spread, from) = noise::of_runs(&avgs, own);
    row.avg_spread_ms = Some(avg_spread);
    row.avg_spread_from = Some(from.to_string());
    if let Some(first) = s.results.first() {
        if row.target.is_empty() {
            row.target = target(&first.doc);
        }
    }
    row.errors = s
        .results
        .iter()
        .map(|i| i.doc.body.view().errors().total_errors)
        .sum();
    let probes: Vec<&npt_result::probe::ProbeSummary> = s
        .results
        .iter()
        .filter_map(|i| match &i.doc.body {
            AnyBody::Probe(b) => Some(&b.summary),
            _ => None,
        })
        .collect();
    if s.kind == "probe" {
        // Loss over all packets carried in every run; jitter as the median of the runs'.
        // Path loss: of the packets the server did not refuse.
        let sent: u64 = probes
            .iter()
            .map(|p| p.packets.sent - p.refused_by_server.min(p.packets.sent))
            .sum();
        let lost: u64 = probes.iter().map(|p| p.packets.lost).sum();
        row.loss_pct = Some(npt_result::loss_pct(lost, sent));
        row.jitter_ms = Some(median(probes.iter().map(|p| p.jitter_ms).collect()));
        super::pingpong::fill(&mut row, &probes);
        super::directions::fill(&mut row, probes.iter().copied());
        super::marking::fill(&mut row, probes.iter().copied());
        super::loaded::fill(
            &mut row,
            s.results.iter().filter_map(|i| match &i.doc.body {
                AnyBody::Probe(b) => b.under_load.as_ref(),
                _ => None,
            }),
        );
    }
    row = row.with_retransmits(s.results.iter().map(|i| &i.doc));
    super::goodput::fill(&mut row, s.results.iter().map(|i| &i.doc));
    super::rate::fill(&mut row, s.results.iter().map(|i| &i.doc));
    super::lifetime::fill(&mut row, s.results.iter().map(|i| &i.doc));
    super::mtu::fill(&mut row, s.results.iter().map(|i| &i.doc));
    super::setup::fill(&mut row, s.results.iter().map(|i| &i.doc));
    super::segments::fill(&mut row, s.results.iter().map(|i| &i.doc));
    Ok(row)
}

/// The table of a scenario file's runs, in scenario order. `baseline` names a scenario.
pub fn table_of_runs(
    scenarios: &[ScenarioRuns],
    baseline: Option<&str>,
    interrupted: bool,
) -> Result<Table, super::CompareError> {
    let mut rows: Vec<Row> = scenarios.iter().map(row).collect::<Result<_, _>>()?;
    overheads(&mut rows, baseline);
    let mut notes = Vec::new();
    if let Some(b) = baseline {
        if rows.iter().any(|r| r.name == b && r.avg_ms.is_none()) {
            notes.push(format!(
                "the baseline {b} has no result: no vs-baseline figures"
            ));
        }
    }
    for r in &rows {
        if r.hops.iter().any(|h| h.avg_ms.is_none()) {
            notes.push(format!(
                "{}: a hop did not answer, so there is no theoretical latency",
                r.name
            ));
        }
    }
    let most = rows.iter().map(|r| r.runs).max().unwrap_or(0);
    if most > 1 {
        let how = if rows.iter().any(|r| r.merged.as_deref() == Some("median")) {
            "histograms merged exactly where every run had one, else the median of the runs (see `merged`)"
        } else {
            "every run's histogram merged exactly"
        };
        notes.push(format!(
            "figures over up to {most} interleaved runs per scenario: {how}"
        ));
    }
    if most == 2 {
        notes.push(
            "two runs: the t-interval of their avgs is 12.7 × their standard error; 3 or more \
             runs pin an avg down"
                .to_string(),
        );
    }
    Ok(Table {
        baseline: baseline.map(str::to_string),
        scenarios: rows,
        notes,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn probe_run(path: &str, samples: &[u64], sent: u64, lost: u64) -> Input {
        let mut d = crate::page::test_probe(samples.iter().copied(), &[]);
        let rtt = d.body.view().headline().summary();
        if let npt_result::any::AnyBody::Probe(b) = &mut d.body {
            b.summary.target = "udp://x:1".into();
            (
                b.summary.rtt_ms,
                b.summary.packets.sent,
                b.summary.packets.lost,
            ) = (rtt, sent, lost);
            b.summary.jitter_ms = 0.25;
        }
        Input {
            name: String::new(),
            path: path.into(),
            doc: d,
        }
    }

    fn hop(avg: Option<f64>) -> Hop {
        Hop {
            url: "tcp://h:1".into(),
            avg_ms: avg,
            ..Hop::default()
        }
    }

    #[test]
    fn the_theoretical_column_says_where_it_came_from() {
        let agent = |avg| Hop {
            from: Some("npt://sea:7777".into()),
            ..hop(avg)
        };
        let measured = [agent(Some(32.0)), agent(Some(69.0))];
        assert_eq!(source_of_hops(&measured), "measured");
        assert_eq!(source_of_hops(&[hop(Some(1.0))]), "pinged");
        // The client measures the first segment itself.
        let chain = [hop(Some(1.0)), agent(Some(1.0))];
        assert_eq!(source_of_hops(&chain), "measured");
        let rows = [
            ScenarioRuns {
                name: "chain".into(),
                kind: "probe".into(),
                theoretical_ms: theoretical_from_hops(&measured),
                hops: measured.to_vec(),
                results: vec![probe_run("c.json", &[110 * MS; 5], 5, 0)],
                ..ScenarioRuns::default()
            },
            ScenarioRuns {
                name: "typed".into(),
                kind: "probe".into(),
                theoretical_ms: Some(253.0),
                results: vec![probe_run("t.json", &[260 * MS; 5], 5, 0)],
                ..ScenarioRuns::default()
            },
            ScenarioRuns {
                name: "none".into(),
                kind: "probe".into(),
                results: vec![probe_run("n.json", &[260 * MS; 5], 5, 0)],
                ..ScenarioRuns::default()
            },
        ];
        let t = table_of_runs(&rows, None, false).unwrap();
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["scenarios"][0]["theoretical_source"], "measured");
        assert_eq!(json["scenarios"][0]["hops"][0]["from"], "npt://sea:7777");
        assert_eq!(json["scenarios"][1]["theoretical_source"], "typed");
        assert!(json["scenarios"][2]["theoretical_source"].is_null());
        let cell = |i: usize| super::super::cells(None, &t.scenarios[i])[6].clone();
        assert_eq!(cell(0), "101.00 measured");
        assert_eq!(cell(1), "253.00 typed");
        assert_eq!(cell(2), "-");
        let mut text = Vec::new();
        super::super::write_text(&mut text, &t).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(
                "hops: chain: npt://sea:7777 → tcp://h:1 32.00 + npt://sea:7777 → tcp://h:1 69.00"
            ),
            "{text}"
        );
    }

    #[test]
    fn theoretical_is_the_sum_of_the_hops_or_nothing() {
        let hops = [hop(Some(152.0)), hop(Some(32.0)), hop(Some(69.0))];
        assert_eq!(theoretical_from_hops(&hops), Some(253.0));
        assert_eq!(theoretical_from_hops(&[hop(Some(1.0)), hop(None)]), None);
        assert_eq!(theoretical_from_hops(&[]), None);
    }

    #[test]
    fn runs_merge_exactly_and_report_their_spread() {
        // Run 1: 10 × 10 ms; run 2: 30 × 20 ms. Merged: p50 is 20 ms (30 of 40 samples), the
        // mean (10·10 + 30·20) / 40 = 17.5 ms; the runs' own p50s are 10 and 20.
        let s = ScenarioRuns {
            name: "direct".into(),
            kind: "probe".into(),
            target: "udp://x:1".into(),
            results: vec![
                probe_run("r1.json", &[10 * MS; 10], 10, 0),
                probe_run("r2.json", &[20 * MS; 30], 40, 10),
            ],
            ..ScenarioRuns::default()
        };
        let t = table_of_runs(&[s], Some("direct"), false).unwrap();
        let r = &t.scenarios[0];
        assert_eq!(r.runs, 2);
        assert_eq!(r.merged.as_deref(), Some("histograms"));
        assert!((r.p50_ms.unwrap() - 20.0).abs() < 0.05, "{r:?}");
        assert!((r.avg_ms.unwrap() - 17.5).abs() < 0.05, "{r:?}");
        let sp = r.spread.unwrap();
        assert!((sp.p50_ms.min - 10.0).abs() < 0.05 && (sp.p50_ms.max - 20.0).abs() < 0.05);
        assert!((sp.avg_ms.min - 10.0).abs() < 0.05 && (sp.avg_ms.max - 20.0).abs() < 0.05);
        // Loss over every packet sent: 10 of 50.
        assert_eq!(r.loss_pct, Some(20.0));
        assert_eq!(r.errors, 2);
        assert_eq!(r.results, ["r1.json", "r2.json"]);
        assert_eq!(r.vs_baseline_ms, Some(0.0));
        assert!(t.notes[0].contains("merged exactly"), "{:?}", t.notes);
        assert!(t.notes[1].starts_with("two runs: "), "{:?}", t.notes);
        // Two runs' avgs 10 and 20 ms: ±t(1) · 7.07 / √2 = ±63.5 ms, of kind `runs`.
        assert_eq!(r.avg_spread_from.as_deref(), Some("runs"));
        assert!(
            (r.avg_spread_ms.unwrap() - 12.706 * 5.0).abs() < 0.1,
            "{r:?}"
        );
    }

    #[test]
    fn without_histograms_the_median_of_runs() {
        let mut runs = vec![
            probe_run("a", &[10 * MS], 1, 0),
            probe_run("b", &[30 * MS], 1, 0),
            probe_run("c", &[20 * MS], 1, 0),
        ];
        for r in &mut runs {
            if let AnyBody::Probe(b) = &mut r.doc.body {
                b.histograms.clear();
            }
        }
        let s = ScenarioRuns {
            name: "x".into(),
            kind: "probe".into(),
            results: runs,
            ..ScenarioRuns::default()
        };
        let t = table_of_runs(&[s], None, false).unwrap();
        let r = &t.scenarios[0];
        assert_eq!(r.merged.as_deref(), Some("median"));
        assert!((r.avg_ms.unwrap() - 20.0).abs() < 0.05, "{r:?}");
        assert!((r.spread.unwrap().avg_ms.max - 30.0).abs() < 0.05);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn a_failed_scenario_is_a_row_with_its_error_and_overheads_use_hops() {
        let ok = ScenarioRuns {
            name: "chain".into(),
            kind: "probe".into(),
            hops: vec![hop(Some(5.0)), hop(Some(5.0))],
            theoretical_ms: theoretical_from_hops(&[hop(Some(5.0)), hop(Some(5.0))]),
            results: vec![probe_run("c.json", &[12 * MS; 5], 5, 0)],
            ..ScenarioRuns::default()
        };
        let bad = ScenarioRuns {
            name: "direct".into(),
            kind: "probe".into(),
            failures: vec!["run 1: timed out after 12 s".into()],
            ..ScenarioRuns::default()
        };
        let t = table_of_runs(&[bad, ok], Some("direct"), true).unwrap();
        let (bad, ok) = (&t.scenarios[0], &t.scenarios[1]);
        assert_eq!(bad.avg_ms, None);
        assert_eq!(bad.runs, 0);
        assert_eq!(bad.error.as_deref(), Some("run 1: timed out after 12 s"));
        assert_eq!(ok.theoretical_ms, Some(10.0));
        assert!((ok.overhead_ms.unwrap() - 2.0).abs() < 0.02);
        assert!((ok.overhead_pct.unwrap() - 20.0).abs() < 0.2);
        assert_eq!(ok.vs_baseline_ms, None, "the baseline failed");
        assert!(t.notes[0].contains("baseline direct has no result"));
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["interrupted"], true);
        assert!(json["scenarios"][0]["avg_ms"].is_null());
        let mut text = Vec::new();
        super::super::write_text(&mut text, &t).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("error: direct: run 1: timed out"), "{text}");
        assert!(text.contains("FAILED"), "{text}");
    }
    /// A TCP probe's row says what TCP hid: its echo loss is 0 while the kernel resent 2 %
    /// of its segments; over two runs the retransmits add and the share is of all segments.
    #[test]
    fn tcp_rows_show_the_kernels_retransmits_beside_the_loss() {
        let mut runs = vec![
            probe_run("a", &[20 * MS; 5], 5, 0),
            probe_run("b", &[20 * MS; 5], 5, 0),
        ];
        for (r, (n, segs)) in runs.iter_mut().zip([(6, 300), (2, 100)]) {
            if let AnyBody::Probe(b) = &mut r.doc.body {
                b.summary.tcp_info = Some(npt_result::tcpinfo::TcpKernel {
                    scope: "target".into(),
                    connections: 1,
                    retransmits: n,
                    data_segments_out: Some(segs),
                    ..Default::default()
                });
            }
        }
        let s = ScenarioRuns {
            name: "tcp".into(),
            kind: "probe".into(),
            results: runs,
            ..ScenarioRuns::default()
        };
        let udp = ScenarioRuns {
            name: "udp".into(),
            kind: "probe".into(),
            results: vec![probe_run("u", &[20 * MS; 5], 100, 2)],
            ..ScenarioRuns::default()
        };
        let mut t = table_of_runs(&[s, udp], None, false).unwrap();
        let r = &t.scenarios[0];
        assert_eq!((r.retransmits, r.retransmit_pct), (Some(8), Some(2.0)));
        assert_eq!(r.loss_pct, Some(0.0));
        assert_eq!(t.scenarios[1].retransmits, None, "UDP shows its loss only");
        let cells = super::super::cells(None, r);
        assert!(
            cells[9].ends_with(", loss 0.00%, retrans 8 (2.00%)"),
            "{cells:?}"
        );
        let udp = super::super::cells(None, &t.scenarios[1]);
        assert!(udp[9].ends_with(", loss 2.00%"), "{udp:?}");
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["scenarios"][0]["retransmits"], 8);
        assert_eq!(json["scenarios"][0]["retransmits_scope"], "target");
        assert!(json["scenarios"][1].get("retransmits").is_none());
        t.scenarios[0].retransmits_scope = Some("proxy".into());
        let cells = super::super::cells(None, &t.scenarios[0]);
        assert!(
            cells[9].ends_with("retrans 8 (2.00%) to the proxy"),
            "{cells:?}"
        );
        let mut md = Vec::new();
        super::super::write_markdown(&mut md, &t).unwrap();
        assert!(String::from_utf8(md).unwrap().contains("retrans 8 (2.00%)"));
    }
}
