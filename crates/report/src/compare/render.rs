//! The forwarding-scenario table as text and Markdown: one row of cells per scenario under the
//! same header, and the footer of notes (what the theoretical column is, mixed kinds, rows
//! without a figure), then TCP probes' first packet and total ([`super::pingpong`]) and setups
//! layer by layer ([`super::setup`]) and trace rows segment by segment ([`super::segments`]). The HTML
//! page is [`super::page`]; the table's figures come from [`super::table`] and
//! [`super::runs`].

use std::io::{self, Write};

use super::*;

pub(super) fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.digits$}"))
}

/// One difference as the table shows it: the figure, its uncertainty, the kinds that went into
/// that, whether it is within it, the percentage where the table gives one.
struct Diff<'a> {
    ms: Option<f64>,
    pct: Option<f64>,
    spread: Option<f64>,
    from: Option<&'a str>,
    noise: Option<bool>,
}

/// A difference with its uncertainty and its kind: `within noise (±s kind)` inside it, else
/// `+d ±s kind`, and the percentage where the table gives one ([`super::noise`]).
fn difference(d: Diff) -> String {
    let Some(m) = d.ms else {
        return "-".to_string();
    };
    let kind = d.from.map_or(String::new(), |k| format!(" {k}"));
    let pm = d
        .spread
        .map_or(String::new(), |s| format!(" {}{kind}", plus_minus(s)));
    match (d.noise, d.pct) {
        (Some(true), _) => format!(
            "within noise ({}{kind})",
            plus_minus(d.spread.unwrap_or(0.0))
        ),
        (_, Some(p)) => format!("{m:+.2}{pm} ({p:+.1}%)"),
        (_, None) => format!("{m:+.2}{pm}"),
    }
}

/// A spread as the table prints it: `±0.12`, and `±<0.01` for one that two decimals would
/// show as an exact `±0.00`.
pub(super) fn plus_minus(s: f64) -> String {
    if s > 0.0 && s < 0.005 {
        "±<0.01".to_string()
    } else {
        format!("±{s:.2}")
    }
}

/// The vs-baseline cell: `baseline` on the baseline's own row.
fn vs_baseline(t_baseline: Option<&str>, r: &Row) -> String {
    if t_baseline == Some(r.name.as_str()) && r.vs_baseline_ms.is_some() {
        return "baseline".to_string();
    }
    difference(Diff {
        ms: r.vs_baseline_ms,
        pct: r.vs_baseline_pct,
        spread: r.vs_baseline_spread_ms,
        from: r.vs_baseline_spread_from.as_deref(),
        noise: r.vs_baseline_within_noise,
    })
}

/// Column names of the text, Markdown and HTML tables.
pub const HEADER: [&str; 10] = [
    "scenario",
    "avg",
    "p50",
    "p95",
    "p99",
    "max",
    "theoretical",
    "overhead",
    "vs baseline",
    "errors",
];

/// One row's cells, as the text, Markdown and HTML tables show them; `baseline` names the
/// table's baseline row.
pub fn cells(baseline: Option<&str>, r: &Row) -> Vec<String> {
    let mut errors = r.errors.to_string();
    if let Some(l) = r.loss_pct {
        errors += &format!(", loss {l:.2}%");
    }
    if let Some(p) = r.refused_pct {
        errors += &format!(", refused by the server {p:.2}%");
    }
    if let Some(n) = r.retransmits {
        let pct = r
            .retransmit_pct
            .map(|p| format!(" ({p:.2}%)"))
            .unwrap_or_default();
        let hop = if r.retransmits_scope.as_deref() == Some(npt_result::tcpinfo::SCOPE_PROXY) {
            " to the proxy"
        } else {
            ""
        };
        errors += &format!(", retrans {n}{pct}{hop}");
    }
    if r.error.is_some() {
        errors += if r.avg_ms.is_some() {
            ", failed runs"
        } else {
            ", FAILED"
        };
    }
    vec![
        r.name.clone(),
        opt(r.avg_ms, 2),
        opt(r.p50_ms, 2),
        opt(r.p95_ms, 2),
        opt(r.p99_ms, 2),
        opt(r.max_ms, 2),
        match (r.theoretical_ms, &r.theoretical_source) {
            (Some(t), Some(src)) => format!("{t:.2} {src}"),
            (t, _) => opt(t, 2),
        },
        difference(Diff {
            ms: r.overhead_ms,
            pct: r.overhead_pct,
            spread: r.overhead_spread_ms,
            from: r.overhead_spread_from.as_deref(),
            noise: r.overhead_within_noise,
        }),
        vs_baseline(baseline, r),
        errors,
    ]
}

/// The table for a terminal: aligned columns, latencies in ms.
pub fn write_text(w: &mut impl Write, t: &Table) -> io::Result<()> {
    let rows: Vec<Vec<String>> = t
        .scenarios
        .iter()
        .map(|r| loaded::row_cells(t, r))
        .collect();
    aligned(w, &loaded::header(t), &rows)?;
    writeln!(w, "{LEGEND}")?;
    for l in footer(t) {
        writeln!(w, "{l}")?;
    }
    super::pingpong::write_text(w, t)?;
    super::setup::write_text(w, t)?;
    super::segments::write_text(w, t)
}

/// A block under the main table for a terminal (the setup layers, the trace segments, the
/// ping-pong figures): its title, its header and rows as aligned columns, its legend.
pub fn block_text(
    w: &mut dyn Write,
    title: &str,
    header: &[&str],
    rows: &[Vec<String>],
    legend: &str,
) -> io::Result<()> {
    writeln!(w, "{title}:")?;
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    aligned(w, &header, rows)?;
    writeln!(w, "{legend}")
}

/// The same block in Markdown: a table of its own under the main one (a `|` in a cell
/// escaped).
pub fn block_markdown(
    w: &mut dyn Write,
    title: &str,
    header: &[&str],
    rows: &[Vec<String>],
    legend: &str,
) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "{title}:")?;
    writeln!(w)?;
    writeln!(w, "| {} |", header.join(" | "))?;
    writeln!(w, "|{}", "---|".repeat(header.len()))?;
    for c in rows {
        let c: Vec<String> = c.iter().map(|x| x.replace('|', "\\|")).collect();
        writeln!(w, "| {} |", c.join(" | "))?;
    }
    writeln!(w)?;
    writeln!(w, "{legend}")
}

/// A header and its rows as aligned columns for a terminal: the first column left-aligned,
/// the others right-aligned, two spaces apart (every text table of compare).
pub fn aligned(w: &mut dyn Write, header: &[String], rows: &[Vec<String>]) -> io::Result<()> {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let parts: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &n))| {
                if i == 0 {
                    format!("{c:<n$}")
                } else {
                    format!("{c:>n$}")
                }
            })
            .collect();
        writeln!(w, "{}", parts.join("  ").trim_end())?;
    }
    Ok(())
}

/// The line under the text table (the Markdown and HTML footers carry it too).
pub const LEGEND: &str = "(latency in ms; overhead = avg − theoretical; vs baseline = avg − the \
     baseline's avg; ± the 95 % uncertainty of the avgs compared, combined, within noise inside \
     it)";

/// What the `±` are, as one line: the kinds the table's differences use ([`super::noise`]).
pub(super) fn spread_line(t: &Table) -> Option<String> {
    // Only where a difference is shown: a table without a baseline or theoretical latency
    // compares nothing.
    let kinds: std::collections::BTreeSet<&str> = t
        .scenarios
        .iter()
        .flat_map(|r| [&r.overhead_spread_from, &r.vs_baseline_spread_from])
        .filter_map(|k| k.as_deref())
        .flat_map(|k| k.split('+'))
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let says: Vec<&str> = kinds
        .iter()
        .map(|k| match *k {
            noise::from::RUNS => "runs = the 95 % t-interval of the avg over the runs' avgs",
            _ => {
                "ci = one run's 95 % confidence interval of its avg from its own samples \
                 (t · stddev / √n, at least the histogram's rounding)"
            }
        })
        .collect();
    let mut line = format!(
        "±: {}; hops and sums in quadrature; a distribution's width (p10–p90) is the path's, \
         not noise; % only of a base ≥ {}× its ±",
        says.join("; "),
        noise::PCT_BASE_OVER_SPREAD
    );
    if !kinds.contains(noise::from::RUNS) {
        line += "; --runs N measures the runs' own spread";
    }
    Some(line)
}

/// Lines under the table: the spread over runs, errors, hops, notes.
fn footer(t: &Table) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(spread_line(t));
    if super::goodput::shown(t) {
        out.push(
            "goodput: application payload in Mbit/s each way, the median over runs; a bulk \
             row's latency is its RTT under its own load"
                .into(),
        );
    }
    for r in &t.scenarios {
        if let (Some(s), Some(how)) = (&r.spread, &r.merged) {
            if r.runs > 1 {
                out.push(format!(
                    "runs: {} over {} runs ({how}): p50 {:.2}..{:.2}, avg {:.2}..{:.2} ms",
                    r.name, r.runs, s.p50_ms.min, s.p50_ms.max, s.avg_ms.min, s.avg_ms.max
                ));
            }
        }
    }
    for r in &t.scenarios {
        if !r.hops.is_empty() {
            let hops: Vec<String> = r
                .hops
                .iter()
                .map(|h| {
                    let pm = h
                        .spread_ms
                        .map_or(String::new(), |s| format!(" {}", plus_minus(s)));
                    match &h.from {
                        Some(from) => format!("{from} → {} {}{pm}", h.url, opt(h.avg_ms, 2)),
                        None => format!("{} {}{pm}", h.url, opt(h.avg_ms, 2)),
                    }
                })
                .collect();
            out.push(format!("hops: {}: {}", r.name, hops.join(" + ")));
        }
    }
    if super::lifetime::shown(t) {
        out.push(
            "lifetime: how long the path kept an idle flow, the median over runs (the bracket \
             all runs agree on); a lifetime row's latency is its flows' request → ack round trip"
                .into(),
        );
    }
    if super::mtu::shown(t) {
        out.push(
            "mtu up/down: the largest datagram (UDP payload, bytes) any run carried each way and \
             the latest run's verdict; an mtu row's latency is its probes' round trip"
                .into(),
        );
    }
    for r in &t.scenarios {
        if let Some(e) = &r.error {
            out.push(format!("error: {}: {e}", r.name));
        }
    }
    for n in &t.notes {
        out.push(format!("note: {n}"));
    }
    if t.interrupted {
        out.push("note: interrupted (Ctrl-C): the table holds what was measured so far".into());
    }
    out
}

/// The table in Markdown, ready to paste into an issue or a post like the forwarding-scenario write-up.
pub fn write_markdown(w: &mut impl Write, t: &Table) -> io::Result<()> {
    let mut extra = String::new();
    let mut n = 0;
    if loaded::shown(t) {
        extra += " loaded p50 (ms) | loaded p99 (ms) | rpm |";
        n += 3;
    }
    if super::directions::shown(t) {
        extra += " loss up | loss down | owd up (ms) | owd down (ms) |";
        n += 4;
    }
    if super::goodput::shown(t) {
        extra += " goodput up (Mbit/s) | goodput down (Mbit/s) |";
        n += 2;
    }
    if super::rate::shown(t) {
        extra += " req/s |";
        n += 1;
    }
    if super::lifetime::shown(t) {
        extra += " lifetime |";
        n += 1;
    }
    if super::mtu::shown(t) {
        extra += " mtu up/down |";
        n += 1;
    }
    writeln!(
        w,
        "| scenario | avg (ms) | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) | theoretical (ms) | overhead | vs baseline | errors |{extra}"
    )?;
    writeln!(
        w,
        "|---|---|---|---|---|---|---|---|---|---|{}",
        "---|".repeat(n)
    )?;
    for r in &t.scenarios {
        let c = loaded::row_cells(t, r);
        let name = c[0].replace('|', "\\|");
        writeln!(w, "| {name} | {} |", c[1..].join(" | "))?;
    }
    let foot = footer(t);
    if !foot.is_empty() {
        writeln!(w)?;
    }
    for l in foot {
        writeln!(w, "> {}  ", l.replace('|', "\\|"))?;
    }
    super::pingpong::write_markdown(w, t)?;
    super::setup::write_markdown(w, t)?;
    super::segments::write_markdown(w, t)
}
