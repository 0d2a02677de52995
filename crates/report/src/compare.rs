//! The forwarding-scenario table: several results side by side — avg / p50 / p95 / p99 / max latency
//! beside a *theoretical* latency (the sum of the hops' RTTs), the overhead over it and over a
//! baseline (ms and %), errors, and loss and jitter for probes — and for TCP probes the
//! segments the tester's kernel retransmitted, since their echo loss is 0 on a lossy path.
//!
//! Pure code over result documents (JSON values): each kind's headline latency is the
//! request latency the user feels — probe: RTT; run: every protocol's request latency, its
//! histograms added exactly; http: request latency (corrected in open loop); ping: the hop RTT;
//! bulk: the RTT under its own load; trace: the RTT through the chain.
//! Rows of different kinds or different workload settings are allowed but noted: a p50 of a
//! ping-pong probe and of a 300-user run are not the same figure.
//!
//! Every difference carries the uncertainty of the figures it compares — one run's confidence
//! interval from its own samples, or the spread of several runs' figures — says which, and one
//! inside it is "within noise", with no percentage ([`noise`]). A distribution's width is the
//! path's, never noise. HTTP and run rows also show their requests per second ([`rate`]).
//!
//! [`runs`] builds the same table from scenarios run several times (`npt compare
//! scenarios.toml --runs N`), and [`page`] draws it as an HTML page.

pub mod directions;
pub mod goodput;
pub mod lifetime;
pub mod loaded;
pub mod marking;
pub mod mtu;
pub mod noise;
#[cfg(test)]
mod noise_cases;
pub mod page;
pub mod pingpong;
pub mod rate;
mod render;
pub mod runs;
pub mod segments;
pub mod setup;

pub use render::{cells, write_markdown, write_text, HEADER};

use std::collections::BTreeMap;

use npt_stats::{Histogram, Summary};

use npt_result::any::{AnyBody, AnyResult};
use npt_result::tcpinfo::TcpKernel;
use serde::Serialize;

use runs::median;

/// One result to compare: its name in the table, where it came from, and the document.
pub struct Input {
    pub name: String,
    pub path: String,
    pub doc: AnyResult,
}

/// One row of the table. Latency figures are `None` (JSON `null`) when the scenario produced no
/// result at all; `error` then says why.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Row {
    pub name: String,
    pub kind: String,
    pub target: String,
    /// The proxy the scenario went through (`--via`), if any.
    pub via: Option<String>,
    pub avg_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub theoretical_ms: Option<f64>,
    /// Where `theoretical_ms` came from: `typed` (numbers given), `pinged` (every hop pinged
    /// from the client) or `measured` (each hop measured from its upstream end, by a hop
    /// agent or, for the first, the client: [`runs::source`]); `None` without a theoretical
    /// latency.
    pub theoretical_source: Option<String>,
    /// The uncertainty of `avg_ms`: a 95 % half-width in ms, of the kind `avg_spread_from`
    /// names ([`noise`]).
    pub avg_spread_ms: Option<f64>,
    /// `ci` (one run: the avg's confidence interval from its own samples, or several runs
    /// whose samples' interval is the wider) or `runs` (the t-interval over the runs' avgs).
    pub avg_spread_from: Option<String>,
    /// The uncertainty of `theoretical_ms`: the hops' (or a trace's segments') intervals in
    /// quadrature; 0 when typed.
    pub theoretical_spread_ms: Option<f64>,
    /// avg − theoretical.
    pub overhead_ms: Option<f64>,
    /// `overhead_ms` as a percentage of the theoretical latency; `null` when within noise, or
    /// when the theoretical latency is not at least 10 × its spread ([`noise`]).
    pub overhead_pct: Option<f64>,
    /// The uncertainty of `overhead_ms`: the row's and the theoretical latency's in quadrature.
    pub overhead_spread_ms: Option<f64>,
    /// The kinds that went into `overhead_spread_ms`: `ci`, `runs` or `ci+runs` ([`noise::kinds`]).
    pub overhead_spread_from: Option<String>,
    /// `|overhead_ms| <= overhead_spread_ms`: no finding.
    pub overhead_within_noise: Option<bool>,
    /// avg − the baseline's avg.
    pub vs_baseline_ms: Option<f64>,
    /// `vs_baseline_ms` as a percentage of the baseline's avg; `null` within noise, when the
    /// baseline's avg is not at least 10 × its spread, and on the baseline's own row.
    pub vs_baseline_pct: Option<f64>,
    /// The uncertainty of `vs_baseline_ms`: the row's and the baseline's in quadrature (`null`
    /// on the baseline's own row).
    pub vs_baseline_spread_ms: Option<f64>,
    /// The kinds that went into `vs_baseline_spread_ms`: `ci`, `runs` or `ci+runs`.
    pub vs_baseline_spread_from: Option<String>,
    /// `|vs_baseline_ms| <= vs_baseline_spread_ms`: no finding (`null` on the baseline's own
    /// row).
    pub vs_baseline_within_noise: Option<bool>,
    pub errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// TCP probes: segments the tester's kernel retransmitted (`summary.tcp_info`), summed
    /// over runs — what TCP hid from `loss_pct`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// `retransmits` per data segment sent, %.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmit_pct: Option<f64>,
    /// `target`, or `proxy` when the probe went through `--via`: the retransmits are then of
    /// the tester → proxy hop only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits_scope: Option<String>,
    /// TCP probes: connect + first echo (npt's first packet), median of runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_packet_ms: Option<f64>,
    /// TCP probes: first connect to last reply (npt's total), median of runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<f64>,
    /// TCP probes: the connect, median of runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<f64>,
    /// TCP probes: the first echo alone, after the connect (quic-tun's latency test's "first
    /// packet latency"), median of runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_echo_ms: Option<f64>,
    /// TCP probes: from the connection up to the last reply (quic-tun's latency test's "total
    /// latency"), median of runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_after_connect_ms: Option<f64>,
    /// `--under-load` probes: the loaded phase's p50 and p99 RTT and the responsiveness (RPM),
    /// medians of runs ([`loaded`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_p50_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// Probes: packets the server refused (its budget, its `--token`), % of sent over runs:
    /// not path loss ([`directions`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_pct: Option<f64>,
    /// Probes whose server says what it saw: loss up (of the packets sent) and down (of the
    /// replies it sent), over runs, %.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_up_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_down_pct: Option<f64>,
    /// Probes with a clock assumption: one-way delay p50 up and down, median of runs, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owd_up_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owd_down_ms: Option<f64>,
    /// Marked UDP probes: each direction's marking, over runs ([`marking`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marking: Option<marking::Cells>,
    /// Bulk results: goodput (application payload) up and down, median of the runs that moved
    /// bytes that way, bit/s ([`goodput`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_up_bps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_down_bps: Option<f64>,
    /// HTTP and run results: completed requests per second (`summary.rps`,
    /// `summary.requests_per_s`), the median over runs ([`rate`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_s: Option<f64>,
    /// Lifetime results: the idle lifetime and its bracket ([`lifetime`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<lifetime::Lifetime>,
    /// Mtu results: the largest datagram each way and its verdict ([`mtu`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<mtu::Mtu>,
    /// Setup results: each layer's median cost and round trips, the runs' connections added
    /// ([`setup`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup: Option<setup::Layers>,
    /// Trace results with `--mtu` or `--dscp`: each segment's path MTU and marking each way,
    /// over runs ([`segments`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<segments::Segment>,
    /// Runs that produced a result (1 for a compared file).
    pub runs: u32,
    /// How the figures of several runs were combined: `histograms` (merged exactly) or
    /// `median` (the median of the runs' figures); `None` for a single run.
    pub merged: Option<String>,
    /// Spread across runs: min and max of the per-run p50 and avg.
    pub spread: Option<Spread>,
    /// Hops pinged for the theoretical latency (`hops = [...]` in a scenario file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hops: Vec<Hop>,
    /// Why the scenario (or some of its runs) failed.
    pub error: Option<String>,
    /// The first result file the row was read from ("" when there is none).
    pub result: String,
    /// Every result file the row was read from, one per run.
    pub results: Vec<String>,
}

/// The lowest and highest of a figure over the runs of one scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub p50_ms: Range,
    pub avg_ms: Range,
}

/// One hop of a scenario's path, pinged by npt: its average RTT adds to the theoretical latency.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Hop {
    pub url: String,
    /// The hop agent that measured it (`npt://HOST:PORT`); absent when pinged from the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Average RTT; `None` when the hop did not answer.
    pub avg_ms: Option<f64>,
    /// The uncertainty of its avg: the 95 % confidence interval from its own pings
    /// ([`noise::of_one_run`]).
    pub spread_ms: Option<f64>,
    /// The `npt ping` result file.
    pub result: String,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Table {
    pub baseline: Option<String>,
    pub scenarios: Vec<Row>,
    pub notes: Vec<String>,
    /// True when Ctrl-C stopped the scenarios early: the table holds what was measured.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{0}: {1}")]
    Doc(String, String),
    #[error("--baseline {0:?} names no compared result")]
    Baseline(String),
    #[error("--theoretical {0:?} names no compared result")]
    Theoretical(String),
}

/// The user-felt latency of a result, as its kind states it (`View::headline_summary`).
fn headline(input: &Input) -> Result<Summary, CompareError> {
    input
        .doc
        .body
        .view()
        .headline_summary()
        .map_err(|m| CompareError::Doc(input.path.clone(), m))
}

/// The uncertainty of a pinged or measured hop's avg RTT ([`noise::of_one_run`]: its 95 %
/// confidence interval from its own pings).
pub fn hop_spread(b: &npt_result::ping::PingBody) -> f64 {
    let h = Histogram::from_serialized(&b.histogram).unwrap_or_default();
    noise::of_one_run(&h, &b.summary.as_summary()).0
}

/// What a result measured (`View::target`).
fn target(d: &AnyResult) -> String {
    d.body.view().target()
}

/// The workload settings that make two results comparable (the target left out).
fn workload(d: &AnyResult) -> serde_json::Value {
    let mut c = d.config.clone();
    if let Some(o) = c.as_object_mut() {
        for k in ["target", "targets", "url", "addr", "segment", "seed", "via"] {
            o.remove(k);
        }
    }
    c
}

impl Row {
    /// The latency columns from one summary; none from a summary of no samples (a trace
    /// without `--through` measured only its segments, a run that got no answer): a 0.00
    /// there would read as a latency, and an overhead of −theoretical.
    pub fn with_figures(mut self, s: &Summary) -> Row {
        if s.count == 0 {
            return self;
        }
        self.avg_ms = Some(s.mean);
        self.p50_ms = Some(s.p50);
        self.p95_ms = Some(s.p95);
        self.p99_ms = Some(s.p99);
        self.max_ms = Some(s.max);
        self
    }

    /// The retransmit columns from the kernel's view of TCP (of every run that has one: a
    /// TCP probe's, a run's TCP connections'): retransmits summed, their share of the data
    /// segments sent over all of those runs.
    pub fn with_retransmits<'a>(mut self, docs: impl Iterator<Item = &'a AnyResult>) -> Row {
        let k: Vec<&TcpKernel> = docs.filter_map(tcp_kernel).collect();
        if k.is_empty() {
            return self;
        }
        let n: u64 = k.iter().map(|k| k.retransmits).sum();
        let segs: Option<u64> = k.iter().map(|k| k.data_segments_out).sum();
        self.retransmits = Some(n);
        self.retransmit_pct = segs.filter(|s| *s > 0).map(|s| n as f64 * 100.0 / s as f64);
        self.retransmits_scope = Some(k[0].scope.clone());
        self
    }
}

/// The kernel's view of a result's TCP connections: a TCP probe's, or a run's TCP protocol's.
fn tcp_kernel(doc: &AnyResult) -> Option<&TcpKernel> {
    match &doc.body {
        AnyBody::Probe(b) => b.summary.tcp_info.as_ref(),
        AnyBody::Run(b) => b.protocols.get("tcp").and_then(|p| p.tcp_info.as_ref()),
        _ => None,
    }
}

/// Fills the overhead columns: avg − theoretical, and avg − the baseline's avg, each with its
/// uncertainty, its kinds and whether it is within noise ([`noise`]); a row without figures,
/// or a baseline without them, gets none.
pub fn overheads(rows: &mut [Row], baseline: Option<&str>) {
    let base = baseline.and_then(|b| {
        rows.iter().find(|r| r.name == b).and_then(|r| {
            Some((
                (r.avg_ms?, r.avg_spread_ms.unwrap_or(0.0)),
                r.avg_spread_from.clone(),
            ))
        })
    });
    for r in rows {
        let Some(avg) = r.avg_ms else { continue };
        let own = (avg, r.avg_spread_ms.unwrap_or(0.0));
        if let Some(t) = r.theoretical_ms {
            let d = noise::difference(own, (t, r.theoretical_spread_ms.unwrap_or(0.0)));
            r.overhead_ms = Some(d.ms);
            r.overhead_pct = d.pct;
            r.overhead_spread_ms = Some(d.spread_ms);
            r.overhead_within_noise = Some(d.within_noise);
            // Pinged and measured hops, a trace's segments: each a one-run interval.
            let theo = (r.theoretical_source.as_deref() != Some(runs::source::TYPED))
                .then_some(noise::from::CI);
            r.overhead_spread_from = noise::kinds([r.avg_spread_from.as_deref(), theo]);
        }
        if let Some((b, b_from)) = &base {
            if Some(r.name.as_str()) == baseline {
                r.vs_baseline_ms = Some(0.0);
                continue;
            }
            let d = noise::difference(own, *b);
            r.vs_baseline_ms = Some(d.ms);
            r.vs_baseline_pct = d.pct;
            r.vs_baseline_spread_ms = Some(d.spread_ms);
            r.vs_baseline_within_noise = Some(d.within_noise);
            r.vs_baseline_spread_from =
                noise::kinds([r.avg_spread_from.as_deref(), b_from.as_deref()]);
        }
    }
}

/// The uncertainty of a trace's sum of segment p50s: each segment's p50 order-statistic
/// interval from its histogram, in quadrature ([`noise::of_percentile`]); 0 for a segment
/// whose histogram is missing.
fn trace_sum_spread(b: &npt_result::trace::TraceBody) -> f64 {
    noise::in_quadrature((0..b.segments.len()).map(|i| {
        b.histograms
            .get(&npt_result::trace::hist::segment(i))
            .and_then(|s| Histogram::from_serialized(s).ok())
            .map_or(0.0, |h| noise::of_percentile(&h, 0.5))
    }))
}

/// Builds the table. `baseline` and the keys of `theoretical` name rows.
pub fn table(
    inputs: &[Input],
    baseline: Option<&str>,
    theoretical: &BTreeMap<String, f64>,
) -> Result<Table, CompareError> {
    let mut rows = Vec::new();
    for i in inputs {
        let s = headline(i)?;
        let d = &i.doc;
        let probe = match &d.body {
            AnyBody::Probe(b) => Some(&b.summary),
            _ => None,
        };
        let under_load = match &d.body {
            AnyBody::Probe(b) => b.under_load.as_ref(),
            _ => None,
        };
        let mut row = Row {
            name: i.name.clone(),
            kind: d.body.kind().to_string(),
            target: target(d),
            via: d.config["via"].as_str().map(str::to_string),
            // A trace measured its own: the sum of its segments, each from its upstream hop.
            theoretical_ms: theoretical.get(&i.name).copied().or(match &d.body {
                AnyBody::Trace(b) => b.summary.sum.map(|s| s.p50_ms),
                _ => None,
            }),
            theoretical_source: match (&d.body, theoretical.get(&i.name)) {
                (_, Some(_)) => Some(runs::source::TYPED.to_string()),
                (AnyBody::Trace(b), None) => {
                    b.summary.sum.map(|_| runs::source::MEASURED.to_string())
                }
                _ => None,
            },
            theoretical_spread_ms: match (&d.body, theoretical.get(&i.name)) {
                (_, Some(_)) => Some(0.0),
                (AnyBody::Trace(b), None) => b.summary.sum.map(|_| trace_sum_spread(b)),
                _ => None,
            },
            errors: d.body.view().errors().total_errors,
            loss_pct: probe.map(|p| p.loss_pct),
            jitter_ms: probe.map(|p| p.jitter_ms),
            runs: 1,
            result: i.path.clone(),
            results: vec![i.path.clone()],
            ..Row::default()
        }
        .with_figures(&s)
        .with_retransmits(std::iter::once(d));
        goodput::fill(&mut row, std::iter::once(d));
        rate::fill(&mut row, std::iter::once(d));
        lifetime::fill(&mut row, std::iter::once(d));
        mtu::fill(&mut row, std::iter::once(d));
        setup::fill(&mut row, std::iter::once(d));
        segments::fill(&mut row, std::iter::once(d));
        if s.count > 0 {
            let (spread, from) = noise::of_one_run(&d.body.view().headline(), &s);
            row.avg_spread_ms = Some(spread);
            row.avg_spread_from = Some(from.to_string());
        }
        loaded::fill(&mut row, under_load.into_iter());
        directions::fill(&mut row, probe.into_iter());
        marking::fill(&mut row, probe.into_iter());
        pingpong::fill(&mut row, &Vec::from_iter(probe));
        rows.push(row);
    }
    for k in theoretical.keys() {
        if !rows.iter().any(|r| &r.name == k) {
            return Err(CompareError::Theoretical(k.clone()));
        }
    }
    if let Some(b) = baseline {
        if !rows.iter().any(|r| r.name == b) {
            return Err(CompareError::Baseline(b.to_string()));
        }
    }
    overheads(&mut rows, baseline);
    let mut notes = Vec::new();
    let kinds: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    if kinds.len() > 1 {
        notes.push(format!(
            "results of different kinds ({}): their latencies measure different things",
            kinds.into_iter().collect::<Vec<_>>().join(", ")
        ));
    } else if let Some(first) = inputs.first() {
        let w = workload(&first.doc);
        for i in &inputs[1..] {
            if workload(&i.doc) != w {
                notes.push(format!(
                    "{} ran different workload settings from {}",
                    i.name, first.name
                ));
            }
        }
    }
    Ok(Table {
        baseline: baseline.map(str::to_string),
        scenarios: rows,
        notes,
        interrupted: false,
    })
}

#[cfg(test)]
mod tests;
