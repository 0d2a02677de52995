//! Setup rows layer by layer: a `setup` row's latency columns are its whole setups; this block
//! under the table gives each layer its own row — its median cost and its multiple of the
//! row's base round trip beside what its protocol needs, and its flag — so a relay's SOCKS5
//! CONNECT or a tunnel's refused 0-RTT stands out against the direct path's layers. A row of
//! several runs (`--runs N`, or a monitor's range written by `npt report --from`) adds its
//! runs' per-layer histograms and is judged by `npt setup`'s own rule
//! ([`npt_result::stats::setup`]): the median of every connection, not a median of medians.
//! Text, Markdown and the HTML page ([`super::page`]) show it under the main table.

use std::io::{self, Write};

use npt_result::any::{AnyBody, AnyResult};
use npt_result::stats::{SetupStats, Stats};
use serde::Serialize;

use super::render::opt;
use super::{Row, Table};

/// The block's title line in text and Markdown.
pub const TITLE: &str =
    "Setup layer by layer (median ms, and in round trips of the row's base RTT)";

/// What the columns are, under the block.
pub const LEGEND: &str = "(RTTs = the layer's median over the base round trip; needs = the \
     round trips its protocol needs; ! = flagged: more than half a round trip over what it \
     needs, or a rejected 0-RTT or refused resumption; several runs add their connections)";

/// Column names.
pub const HEADER: [&str; 6] = [
    "scenario / layer",
    "p50 (ms)",
    "95% ci (ms)",
    "RTTs",
    "needs",
    "flag",
];

/// A setup row's layers, with the base round trip they are counted in.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Layers {
    /// The base round trip (the smallest measured), ms; 0 when none was.
    pub rtt_ms: f64,
    /// The connections added, and those that set every layer up.
    pub attempts: u64,
    pub completed: u64,
    pub layers: Vec<Layer>,
}

/// One layer's cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Layer {
    /// `tcp_connect`, `tls` … and what it was (`TLS 1.3 resumed`).
    pub layer: String,
    pub what: String,
    pub samples: u64,
    pub p50_ms: f64,
    pub p50_lo_ms: f64,
    pub p50_hi_ms: f64,
    pub rtts: f64,
    pub expected_rtts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

/// Fills the row's layers from its runs that are `setup` results (or `http`, `ping` and `run`
/// results with a setup block), added; a row without any
/// (or whose documents do not read back) has none.
pub fn fill<'a>(row: &mut Row, docs: impl Iterator<Item = &'a AnyResult>) {
    let mut sum: Option<(SetupStats, npt_result::stats::SetupMeta)> = None;
    for d in docs {
        // An http, ping or run result's setup block is judged as a setup run's.
        let b = match &d.body {
            AnyBody::Setup(b) => b,
            AnyBody::Http(h) => match &h.setup {
                Some(b) => b,
                None => continue,
            },
            AnyBody::Ping(p) => match &p.setup {
                Some(b) => b,
                None => continue,
            },
            // A run's TCP connections' block, or its QUIC ones' when it has no TCP block.
            AnyBody::Run(r) => match ["tcp", "quic"]
                .iter()
                .find_map(|k| r.protocols.get(*k).and_then(|p| p.setup.as_ref()))
            {
                Some(b) => b,
                None => continue,
            },
            _ => continue,
        };
        let Ok((s, m)) = SetupStats::from_body(b) else {
            return;
        };
        match &mut sum {
            Some((total, _)) => total.then(&s),
            None => sum = Some((s, m)),
        }
    }
    let Some((s, m)) = sum else {
        return;
    };
    let b = s.summarize(&m);
    row.setup = Some(Layers {
        rtt_ms: b.summary.rtt_ms,
        attempts: b.summary.attempts,
        completed: b.summary.completed,
        layers: b
            .layers
            .iter()
            .map(|l| Layer {
                layer: l.layer.clone(),
                what: l.what.clone(),
                samples: l.samples,
                p50_ms: l.p50_ms,
                p50_lo_ms: l.p50_lo_ms,
                p50_hi_ms: l.p50_hi_ms,
                rtts: l.rtts,
                expected_rtts: l.expected_rtts,
                flag: l.flag.clone(),
            })
            .collect(),
    });
}

/// Whether the table has setup rows.
pub fn shown(t: &Table) -> bool {
    t.scenarios.iter().any(|r| r.setup.is_some())
}

fn needs(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The block's rows: each setup row's name and base round trip, then one row per layer.
pub fn table_rows(t: &Table) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for r in &t.scenarios {
        let Some(s) = &r.setup else { continue };
        let mut head = vec![String::new(); HEADER.len()];
        head[0] = format!(
            "{}: base RTT {:.2} ms, {} of {} set up",
            r.name, s.rtt_ms, s.completed, s.attempts
        );
        out.push(head);
        for l in &s.layers {
            let some = l.samples > 0;
            out.push(vec![
                format!("  {}", l.what),
                opt(some.then_some(l.p50_ms), 2),
                if some {
                    format!("{:.2}-{:.2}", l.p50_lo_ms, l.p50_hi_ms)
                } else {
                    "-".into()
                },
                opt((some && s.rtt_ms > 0.0).then_some(l.rtts), 2),
                needs(l.expected_rtts),
                l.flag.as_ref().map_or(String::new(), |f| format!("! {f}")),
            ]);
        }
    }
    out
}

/// The block for a terminal: title, aligned columns, legend (nothing without setup rows).
pub fn write_text(w: &mut impl Write, t: &Table) -> io::Result<()> {
    if !shown(t) {
        return Ok(());
    }
    super::render::block_text(w, TITLE, &HEADER, &table_rows(t), LEGEND)
}

/// The block in Markdown: a table of its own under the main one.
pub fn write_markdown(w: &mut impl Write, t: &Table) -> io::Result<()> {
    if !shown(t) {
        return Ok(());
    }
    super::render::block_markdown(w, TITLE, &HEADER, &table_rows(t), LEGEND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::setup::Layer as L;
    use npt_result::stats::setup::Plan;
    use npt_result::stats::SetupMeta;

    const RTT: u64 = 50_000_000;

    /// A setup document of `n` connections over a 50 ms path whose CONNECT took `connect`
    /// round trips.
    fn doc(n: u64, connect: f64) -> AnyResult {
        let plan: Vec<Plan> = [(L::TcpConnect, 1.0), (L::HttpConnect, 1.0)]
            .into_iter()
            .map(|(layer, expected_rtts)| Plan {
                layer,
                what: layer.name().to_string(),
                expected_rtts,
            })
            .collect();
        let mut s = SetupStats {
            runs: 1,
            ..SetupStats::default()
        };
        // NO-PANIC: test figures.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let c = (connect * RTT as f64) as u64;
        for _ in 0..n {
            s.rtt.record(RTT);
            s.layers.entry(L::TcpConnect).or_default().record(RTT);
            s.layers.entry(L::HttpConnect).or_default().record(c);
            s.setup.record(RTT + c);
            s.attempts += 1;
            s.completed += 1;
        }
        let meta = SetupMeta {
            target: "http://h:1".into(),
            plan,
            rtt_from: "warm_request".into(),
            ..SetupMeta::default()
        };
        let now = std::time::SystemTime::now();
        let doc = npt_result::Document::new(
            "setup",
            now,
            now,
            npt_result::StopReason::Count,
            serde_json::json!({}),
            s.summarize(&meta),
        );
        npt_result::any::from_value("setup", serde_json::to_value(&doc).unwrap()).unwrap()
    }

    /// Two runs of one row add their connections: 2 at 1 RTT and 12 at 2 read 2.00 RTTs,
    /// flagged; a row of other kinds has no layers.
    #[test]
    fn a_rows_runs_add_into_one_verdict_per_layer() {
        let docs = [doc(2, 1.0), doc(12, 2.0)];
        let mut row = Row {
            name: "via proxy".into(),
            ..Row::default()
        };
        fill(&mut row, docs.iter());
        let s = row.setup.clone().unwrap();
        let rtt = s.rtt_ms;
        assert_eq!((s.attempts, s.completed), (14, 14));
        assert_eq!(s.layers[1].samples, 14);
        assert!((s.layers[1].rtts - 2.0).abs() < 0.01, "{:?}", s.layers[1]);
        assert!(s.layers[1].flag.is_some());
        let t = Table {
            scenarios: vec![row, Row::default()],
            ..Table::default()
        };
        let rows = table_rows(&t);
        assert_eq!(rows.len(), 3);
        // The base round trip is the histogram's smallest (3 significant digits).
        assert_eq!(
            rows[0][0],
            format!("via proxy: base RTT {rtt:.2} ms, 14 of 14 set up")
        );
        assert!((s.rtt_ms - 50.0).abs() < 0.05, "{}", s.rtt_ms);
        assert_eq!(rows[2][0], "  http_connect");
        assert_eq!((rows[2][3].as_str(), rows[2][4].as_str()), ("2.00", "1"));
        assert!(
            rows[2][5].starts_with("! 2.00 round trips"),
            "{:?}",
            rows[2]
        );
        let mut text = Vec::new();
        write_text(&mut text, &t).unwrap();
        assert!(String::from_utf8(text).unwrap().starts_with(TITLE));
    }
}
