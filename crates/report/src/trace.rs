//! A trace result (`kind = "trace"`) rendered: the waterfall as text (what `npt trace`
//! prints), as Markdown, and as an HTML page — one table built once ([`table`]) so that every
//! format shows the same figures: each segment's p50 with its 95 % interval and how wide its
//! RTTs are (p10–p90, the path's shape — never noise), their sum, the chain's own RTT and the
//! relays' cost = chain − sum, a finding or within noise; with `--during`, a round per row
//! beside it (drift against the first round, measured before the command started).

use std::io::{self, Write};

use npt_result::trace::{Estimate, Leg, Round, TraceBody};
use npt_result::StopReason;

use crate::html::{Chart, Page, Series, Table};

/// Width of the text waterfall's bars, in characters.
const BAR: usize = 40;

/// What the `±` column and the p10–p90 column are, under every format's table.
const LEGEND: [&str; 2] = [
    "±: the p50's 95 % interval from its own RTTs (order statistics); of a sum or difference, \
     the legs' in quadrature",
    "p10–p90: how wide the RTTs are — the path's shape, never noise",
];

fn pm(ci: Option<f64>) -> String {
    ci.map_or("-".into(), |c| format!("±{c:.2}"))
}

fn width(l: &Leg) -> String {
    format!("{:.2}–{:.2}", l.p10_ms, l.summary.p90_ms)
}

fn loss(l: &Leg) -> String {
    format!("{}/{}", l.summary.received, l.summary.sent)
}

fn answered(l: &Leg) -> bool {
    l.summary.received > 0
}

/// The waterfall as rows of cells: `[what, from, to, p50 ms, ±95 % ci, p10–p90 ms,
/// answered/sent]`.
pub fn table(b: &TraceBody) -> Vec<[String; 7]> {
    let mut rows = Vec::new();
    let leg_row = |what: String, l: &Leg, p50: String, ci: String| {
        let w = if answered(l) { width(l) } else { "-".into() };
        [what, l.from.clone(), l.to.clone(), p50, ci, w, loss(l)]
    };
    for (i, l) in b.segments.iter().enumerate() {
        let (p50, ci) = if answered(l) {
            (format!("{:.2}", l.summary.p50_ms), pm(l.p50_ci_ms))
        } else {
            ("-".into(), "-".into())
        };
        rows.push(leg_row(format!("segment {}", i + 1), l, p50, ci));
    }
    let s = &b.summary;
    let figure = |e: Option<&Estimate>, signed: bool| match e {
        Some(e) if signed => (format!("{:+.2}", e.p50_ms), pm(e.p50_ci_ms)),
        Some(e) => (format!("{:.2}", e.p50_ms), pm(e.p50_ci_ms)),
        None => ("-".into(), "-".into()),
    };
    let blank = |what: &str, (p50, ci): (String, String)| {
        [
            what.into(),
            String::new(),
            String::new(),
            p50,
            ci,
            String::new(),
            String::new(),
        ]
    };
    rows.push(blank("sum of segments", figure(s.sum.as_ref(), false)));
    if let Some(c) = &b.chain {
        let (p50, ci) = figure(s.chain.as_ref(), false);
        rows.push(leg_row("chain".into(), c, p50, ci));
        rows.push(blank(
            "relays' cost = chain − sum",
            figure(s.relays_cost.as_ref(), true),
        ));
    }
    rows
}

/// Whether the relays' cost is a finding: `relays' cost +3.02 ms ±0.87: a finding (outside
/// the p50s' 95 % intervals)`, or `… within noise`; `None` without a cost (or in a file
/// written before it was judged).
pub fn verdict(b: &TraceBody) -> Option<String> {
    let c = b.summary.relays_cost?;
    let (ci, within) = (c.p50_ci_ms?, c.within_noise?);
    let what = if within {
        "within noise (inside the p50s' 95 % intervals): no finding"
    } else {
        "a finding (outside the p50s' 95 % intervals)"
    };
    Some(format!("relays' cost {:+.2} ms ±{ci:.2}: {what}", c.p50_ms))
}

/// A bar of `len` ms starting `at` ms, on a scale where `full` ms is [`BAR`] characters.
fn bar(at: f64, len: f64, full: f64) -> String {
    // NO-PANIC: the value is clamped to 0..=BAR before the cast (NaN casts to 0).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let col = |ms: f64| (ms / full * BAR as f64).round().clamp(0.0, BAR as f64) as usize;
    let (a, b) = (col(at), col(at + len).max(col(at) + 1).min(BAR));
    let mut s = " ".repeat(a);
    s.push_str(&"█".repeat(b.saturating_sub(a)));
    s.push_str(&" ".repeat(BAR.saturating_sub(b)));
    s
}

fn cell_widths(rows: &[[String; 7]]) -> [usize; 7] {
    let mut w = [0; 7];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    w
}

/// What `npt trace` prints at the end, and `npt report` prints again.
pub fn write_text(
    out: &mut dyn Write,
    b: &TraceBody,
    stopped_by: StopReason,
    took_s: f64,
) -> io::Result<()> {
    let stopped = match stopped_by {
        StopReason::Count => String::new(),
        why => format!(", stopped by {why}"),
    };
    writeln!(
        out,
        "--- {} trace, {} segments over {}, time {took_s:.2} s{stopped} ---",
        b.target,
        b.segments.len(),
        b.proto
    )?;
    let rows = table(b);
    let w = cell_widths(&rows);
    let head = [
        "",
        "from",
        "to",
        "p50 ms",
        "±95% ci",
        "p10–p90 ms",
        "answered",
    ];
    let row = |r: [&str; 7]| {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:>8}  {:<w4$}  {:<w5$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w4 = w[4].max(head[4].chars().count()),
            w5 = w[5].max(head[5].chars().count()),
        );
        line.trim_end().to_string()
    };
    writeln!(out, "{}", row(head))?;
    for r in &rows {
        writeln!(out, "{}", row(r.each_ref().map(String::as_str)))?;
    }
    if let Some(v) = verdict(b) {
        writeln!(out, "{v}")?;
    }
    waterfall(out, b)?;
    crate::trace_mtu::write_text(out, b)?;
    crate::trace_marking::write_text(out, b)?;
    if !b.rounds.is_empty() {
        writeln!(out)?;
        write_rounds(out, b)?;
    }
    for l in b.segments.iter().chain(&b.chain) {
        if let Some(e) = &l.error {
            writeln!(out, "{} → {}: {e}", l.from, l.to)?;
        }
    }
    for l in LEGEND {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

/// The bars: each segment starts where the one before it ended; the chain spans from 0.
fn waterfall(out: &mut dyn Write, b: &TraceBody) -> io::Result<()> {
    let sum: f64 = b
        .segments
        .iter()
        .filter(|l| answered(l))
        .map(|l| l.summary.p50_ms)
        .sum();
    let chain = b.summary.chain.map(|c| c.p50_ms);
    let full = chain.unwrap_or(0.0).max(sum);
    if full <= 0.0 {
        return Ok(());
    }
    writeln!(out)?;
    let mut at = 0.0;
    for (i, l) in b.segments.iter().enumerate() {
        if !answered(l) {
            writeln!(out, "  segment {:<2} |{:BAR$}|      -", i + 1, "")?;
            continue;
        }
        let ms = l.summary.p50_ms;
        writeln!(
            out,
            "  segment {:<2} |{}| {ms:>8.2}",
            i + 1,
            bar(at, ms, full)
        )?;
        at += ms;
    }
    if let Some(c) = chain {
        writeln!(out, "  chain      |{}| {c:>8.2}", bar(0.0, c, full))?;
    }
    Ok(())
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

fn delta(v: Option<f64>, base: Option<f64>) -> String {
    match (v, base) {
        (Some(v), Some(b)) => format!("{v:.2} ({:+.2})", v - b),
        (v, _) => opt(v),
    }
}

/// [`delta`] of a figure that may be negative (the relays' cost), signed as the waterfall
/// shows it.
fn signed_delta(v: Option<f64>, base: Option<f64>) -> String {
    match (v, base) {
        (Some(v), Some(b)) => format!("{v:+.2} ({:+.2})", v - b),
        (Some(v), None) => format!("{v:+.2}"),
        (None, _) => "-".into(),
    }
}

/// The rounds' header and cells: p50 per segment, sum, chain, cost, each with its change
/// since the first round.
fn round_rows(b: &TraceBody) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head = vec!["round".to_string(), "phase".into(), "time s".into()];
    head.extend((1..=b.segments.len()).map(|i| format!("segment {i}")));
    head.extend(["sum".into(), "chain".into(), "relays' cost".into()]);
    let first: Option<&Round> = b.rounds.first();
    let rows = b
        .rounds
        .iter()
        .map(|r| {
            let mut c = vec![
                r.index.to_string(),
                r.phase.clone(),
                format!("{:.1}–{:.1}", r.start_s, r.end_s),
            ];
            for (i, v) in r.segments.iter().enumerate() {
                let base = first.and_then(|f| f.segments.get(i).and_then(|l| l.p50_ms));
                c.push(delta(v.p50_ms, base));
            }
            c.push(delta(r.sum_p50_ms, first.and_then(|f| f.sum_p50_ms)));
            c.push(delta(r.chain_p50_ms, first.and_then(|f| f.chain_p50_ms)));
            c.push(signed_delta(
                r.relays_cost_ms,
                first.and_then(|f| f.relays_cost_ms),
            ));
            c
        })
        .collect();
    (head, rows)
}

fn during_line(b: &TraceBody) -> String {
    let mut s = String::from("p50 ms per round (change since round 0, before the command)");
    if let Some(d) = &b.during {
        s += &format!(", during `{}`", d.command);
        match (d.exit_code, &d.note) {
            (Some(c), _) => s += &format!(", which exited with {c}"),
            (None, Some(n)) => s += &format!(": {n}"),
            (None, None) => {}
        }
    }
    s
}

fn write_rounds(out: &mut dyn Write, b: &TraceBody) -> io::Result<()> {
    writeln!(out, "{}", during_line(b))?;
    let (head, rows) = round_rows(b);
    let mut w = vec![0; head.len()];
    for r in std::iter::once(&head).chain(&rows) {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    for r in std::iter::once(&head).chain(&rows) {
        let cells: Vec<String> = r.iter().zip(&w).map(|(c, w)| format!("{c:<w$}")).collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The waterfall (and the rounds) as Markdown tables.
pub fn write_markdown(out: &mut dyn Write, b: &TraceBody) -> io::Result<()> {
    writeln!(
        out,
        "| | from | to | p50 (ms) | ±95% ci (ms) | p10–p90 (ms) | answered |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    for r in table(b) {
        let c: Vec<String> = r.iter().map(|c| md(c)).collect();
        writeln!(out, "| {} |", c.join(" | "))?;
    }
    if !b.rounds.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", md(&during_line(b)))?;
        writeln!(out)?;
        let (head, rows) = round_rows(b);
        writeln!(out, "| {} |", head.join(" | "))?;
        writeln!(out, "|{}", "---|".repeat(head.len()))?;
        for r in rows {
            let c: Vec<String> = r.iter().map(|c| md(c)).collect();
            writeln!(out, "| {} |", c.join(" | "))?;
        }
    }
    writeln!(out)?;
    if let Some(v) = verdict(b) {
        writeln!(out, "{}", md(&v))?;
        writeln!(out)?;
    }
    crate::trace_mtu::write_markdown(out, b)?;
    crate::trace_marking::write_markdown(out, b)?;
    writeln!(out, "> {}  \n> {}", LEGEND[0], LEGEND[1])
}

/// The HTML page of a trace: the waterfall table, the rounds with a chart of each leg's p50
/// over time when there are several.
pub fn html_page(b: &TraceBody, title: String, subtitle: String) -> Page {
    let mut tables = vec![Table {
        caption: match verdict(b) {
            Some(v) => format!("Waterfall of {} over {}: {v}", b.target, b.proto),
            None => format!("Waterfall of {} over {}", b.target, b.proto),
        },
        header: [
            "",
            "from",
            "to",
            "p50 (ms)",
            "±95% ci (ms)",
            "p10–p90 (ms)",
            "answered",
        ]
        .map(String::from)
        .to_vec(),
        rows: table(b).into_iter().map(|r| r.to_vec()).collect(),
    }];
    tables.extend(crate::trace_mtu::html_table(b));
    tables.extend(crate::trace_marking::html_table(b));
    let mut charts = Vec::new();
    if !b.rounds.is_empty() {
        let (header, rows) = round_rows(b);
        tables.push(Table {
            caption: during_line(b),
            header,
            rows,
        });
    }
    if b.rounds.len() > 1 {
        let mut series: Vec<Series> = (0..b.segments.len())
            .map(|i| Series {
                label: format!("segment {}", i + 1),
                values: b
                    .rounds
                    .iter()
                    .map(|r| r.segments.get(i).and_then(|l| l.p50_ms))
                    .collect(),
            })
            .collect();
        series.push(Series {
            label: "sum".into(),
            values: b.rounds.iter().map(|r| r.sum_p50_ms).collect(),
        });
        series.push(Series {
            label: "chain".into(),
            values: b.rounds.iter().map(|r| r.chain_p50_ms).collect(),
        });
        charts.push(Chart {
            id: "rounds".into(),
            title: "p50 per round (drift)".into(),
            x_label: "time (s)".into(),
            y_label: "ms".into(),
            x: b.rounds.iter().map(|r| r.end_s).collect(),
            series,
            ..Chart::default()
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
    use npt_result::stats::trace::{round, LegStats, TraceMeta, TraceStats};
    use npt_result::stats::PingStats;

    fn leg(from: &str, to: &str, ms: &[u64]) -> LegStats {
        let mut stats = PingStats::default();
        for v in ms {
            stats.sent += 1;
            stats.received += 1;
            stats.rtt.record(v * 1_000_000);
        }
        LegStats {
            from: from.into(),
            to: to.into(),
            addresses: vec![],
            stats,
        }
    }

    fn body(rounds: bool) -> TraceBody {
        let mut t = TraceStats {
            segments: vec![
                leg("here", "tcp://sea:7777", &[152, 152]),
                leg("npt://sea:7777", "tcp://la:7777", &[32, 32]),
                leg("npt://la:7777", "tcp://t:7777", &[]),
            ],
            chain: Some(leg("here", "tcp://sea:9003", &[256, 256])),
            ..TraceStats::default()
        };
        if rounds {
            let seg: Vec<&PingStats> = t.segments.iter().map(|l| &l.stats).collect();
            let later = leg("here", "tcp://sea:7777", &[160]);
            let mut moved = seg.clone();
            moved[0] = &later.stats;
            t.rounds = vec![
                round(0, "before", (0.0, 1.0), &seg, None),
                round(1, "during", (1.0, 2.0), &moved, None),
            ];
        }
        t.summarize(&TraceMeta {
            target: "tcp://t:7777".into(),
            proto: "tcp".into(),
        })
    }

    #[test]
    fn the_text_shows_each_segment_the_sum_the_chain_and_who_did_not_answer() {
        let mut out = Vec::new();
        write_text(&mut out, &body(false), StopReason::Count, 1.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("--- tcp://t:7777 trace, 3 segments over tcp"),
            "{text}"
        );
        let line = |what: &str| {
            text.lines()
                .find(|l| l.starts_with(what))
                .unwrap()
                .to_string()
        };
        assert!(line("segment 1").contains("152.") && line("segment 1").contains("2/2"));
        assert!(line("segment 3").contains(" - ") && line("segment 3").ends_with("0/0"));
        assert!(
            line("sum of segments").contains(" - "),
            "no sum with a silent segment"
        );
        assert!(line("chain ").contains("256."), "{text}");
        assert!(
            text.contains("  chain      |"),
            "the waterfall's chain bar: {text}"
        );
        assert!(text.contains("±: the p50's 95 % interval"), "{text}");
        assert!(!text.contains("spread"), "{text}");
        assert!(
            !text.contains("relays' cost +"),
            "no verdict without a sum: {text}"
        );
    }

    /// The relays' cost is judged against the p50s' intervals, in every format: 100 RTTs of
    /// 1..=100 ms per segment know each p50 to ±10.03 ms, so a chain about 5 ms over the sum
    /// is within noise (about ±17.4 for three legs) and one 40 ms over it is a finding; the
    /// p10–p90 column shows how wide each leg is (10.00–90.05: ±40 ms of width) beside it.
    #[test]
    fn the_relays_cost_is_a_finding_only_outside_the_p50s_intervals() {
        let spread = |to: &str, from_ms: u64| {
            let mut l = leg("here", to, &[]);
            for v in 0..100 {
                l.stats.sent += 1;
                l.stats.received += 1;
                l.stats.rtt.record((from_ms + v) * 1_000_000);
            }
            l
        };
        let of = |chain_from: u64| {
            TraceStats {
                segments: vec![spread("tcp://a:1", 1), spread("tcp://t:1", 1)],
                chain: Some(spread("tcp://a:2", chain_from)),
                ..TraceStats::default()
            }
            .summarize(&TraceMeta {
                target: "tcp://t:1".into(),
                proto: "tcp".into(),
            })
        };
        let text = |b: &TraceBody| {
            let mut out = Vec::new();
            write_text(&mut out, b, StopReason::Count, 1.0).unwrap();
            String::from_utf8(out).unwrap()
        };
        let said = |b: &TraceBody| {
            let c = b.summary.relays_cost.unwrap();
            format!(
                "relays' cost {:+.2} ms ±{:.2}: ",
                c.p50_ms,
                c.p50_ci_ms.unwrap()
            )
        };
        // Chain 56..=155 ms: p50 ≈ 105 against a sum of ≈ 100.
        let near = of(56);
        let t = text(&near);
        assert!(t.contains(&(said(&near) + "within noise")), "{t}");
        let c = near.summary.relays_cost.unwrap();
        assert!((4.0..6.0).contains(&c.p50_ms) && (17.0..18.0).contains(&c.p50_ci_ms.unwrap()));
        let seg1 = t.lines().find(|l| l.starts_with("segment 1")).unwrap();
        assert!(
            seg1.contains("±10.03") && seg1.contains("10.00–90.05"),
            "{seg1}"
        );
        // Chain 91..=190 ms: about +40, a finding.
        let far = of(91);
        let t = text(&far);
        assert!(t.contains(&(said(&far) + "a finding")), "{t}");
        let mut md = Vec::new();
        write_markdown(&mut md, &far).unwrap();
        assert!(String::from_utf8(md).unwrap().contains("a finding"));
        let page = html_page(&far, "t".into(), String::new());
        assert!(
            page.tables[0].caption.contains("a finding"),
            "{:?}",
            page.tables[0].caption
        );
    }

    #[test]
    fn rounds_show_their_drift_in_every_format() {
        let b = body(true);
        let mut out = Vec::new();
        write_text(&mut out, &b, StopReason::Count, 2.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        let r1 = text.lines().find(|l| l.starts_with("1  ")).unwrap();
        assert!(r1.contains("during") && r1.contains("(+8."), "{text}");
        let mut md = Vec::new();
        write_markdown(&mut md, &b).unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(md.starts_with("| | from | to | p50 (ms) |"), "{md}");
        assert!(
            md.contains("| round | phase | time s | segment 1 |"),
            "{md}"
        );
        let page = html_page(&b, "t".into(), String::new());
        assert_eq!(page.tables.len(), 2);
        assert_eq!(page.charts[0].x, [1.0, 2.0]);
        assert_eq!(page.charts[0].series.len(), 5, "3 segments, sum, chain");
    }
}
