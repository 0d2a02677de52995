//! A target's history over a time range as one ordinary result document of its kind
//! (`npt report --from monitor.db --target NAME --since 24h`, the dashboard's report links):
//! the rounds and rollups that cover the range ([`crate::rollup::cover`]) added one after
//! another into one stats value and summarized by the kind's own `summarize`, so the document
//! is what one run of the whole range would have written — its percentiles those of every
//! sample in it. Its interval series (probe, http, bulk) or rounds (trace) are the rows read,
//! one record per round or rollup bucket, so the HTML report charts the history.
//!
//! Where a finer level has been pruned, the range starts at the first whole bucket that is
//! still kept, and `config.monitor.from` says where it really starts.

use npt_result::any::{AnyBody, AnyResult};
use npt_result::interval::Interval;
use npt_result::{Document, StopReason};
use npt_stats::Histogram;

use std::collections::BTreeMap;

use crate::kinds::{KindMeta, KindStats};
use crate::rollup::{cover, Span};
use crate::store::{self, Level, Store, StoreError};

pub mod fleet;

#[derive(Debug, thiserror::Error)]
pub enum RangeError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("no target {0:?} in the store (its targets: {1})")]
    NoTarget(String, String),
    #[error("{0:?} has no round that measured between {1} and {2}")]
    Empty(String, String, String),
    #[error("{0}")]
    Other(String),
}

fn rfc3339(ms: i64) -> String {
    crate::round::rfc3339(ms)
}

/// One row read for the range: its span, what it holds, its stats.
struct Part {
    from: i64,
    to: i64,
    rounds: u64,
    stats: Option<KindStats>,
}

/// What one store holds of a target's range: the rows read, the levels they came from, and
/// the description of the rounds that ran (their stats' meta and config).
struct Read {
    kind: crate::kinds::Kind,
    /// Where the range really starts (the first whole bucket still kept).
    start: i64,
    spans: Vec<Span>,
    parts: Vec<Part>,
    by_status: BTreeMap<&'static str, u64>,
    meta: KindMeta,
    round_config: serde_json::Value,
    vantage: Option<String>,
}

/// `target`'s history in `[from, to)` (wall ms) as a result document.
pub fn report(st: &dyn Store, target: &str, from: i64, to: i64) -> Result<AnyResult, RangeError> {
    let read = read(st, target, from, to)?;
    let total = total(&read.parts, |e| RangeError::Other(e.to_string()))?
        .ok_or_else(|| empty(target, read.start, to))?;
    let levels: Vec<serde_json::Value> = read
        .spans
        .iter()
        .map(|s| {
            serde_json::json!({
                "level": s.level.name(), "from": rfc3339(s.from), "to": rfc3339(s.to)
            })
        })
        .collect();
    let mut monitor = span(target, read.kind, from, read.start, to, &read.parts);
    monitor.insert("vantage".into(), serde_json::json!(read.vantage));
    monitor.insert("by_status".into(), serde_json::json!(read.by_status));
    monitor.insert("levels".into(), serde_json::json!(levels));
    let monitor = serde_json::Value::Object(monitor);
    document(&read, &read.parts, &total, monitor, to)
}

/// What `config.monitor` says of any range read: the target and its kind, the start asked for
/// and the one read from (`from`, where the kept rows begin), the end, and the rows and the
/// rounds in them.
fn span(
    target: &str,
    kind: crate::kinds::Kind,
    asked_from: i64,
    from: i64,
    to: i64,
    parts: &[Part],
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: serde_json::Value| m.insert(k.into(), v);
    put("target", target.into());
    put("kind", kind.name().into());
    put("asked_from", rfc3339(asked_from).into());
    put("from", rfc3339(from).into());
    put("to", rfc3339(to).into());
    put("rows", parts.len().into());
    put("rounds", parts.iter().map(|p| p.rounds).sum::<u64>().into());
    m
}

fn empty(target: &str, from: i64, to: i64) -> RangeError {
    RangeError::Empty(target.to_string(), rfc3339(from), rfc3339(to))
}

/// The stats values of `parts` added one after another (in their order).
fn total(
    parts: &[Part],
    err: impl Fn(crate::kinds::KindError) -> RangeError,
) -> Result<Option<KindStats>, RangeError> {
    let mut total: Option<KindStats> = None;
    for p in parts {
        if let Some(s) = &p.stats {
            match &mut total {
                Some(t) => t.then(s).map_err(&err)?,
                None => total = Some(s.clone()),
            }
        }
    }
    Ok(total)
}

/// The document of `parts` (sorted by start) whose stats add up to `total`, described by
/// `read`'s rounds, with `monitor` as its `config.monitor`.
fn document(
    read: &Read,
    parts: &[Part],
    total: &KindStats,
    monitor: serde_json::Value,
    to: i64,
) -> Result<AnyResult, RangeError> {
    let mut body = total
        .body(&read.meta)
        .map_err(|e| RangeError::Other(e.to_string()))?;
    let first = parts.first().map_or(read.start, |p| p.from);
    let last = parts.last().map_or(to, |p| p.to);
    series(&mut body, parts, first);
    let config = serde_json::json!({ "monitor": monitor, "round": read.round_config });
    let at = |ms: i64| {
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    };
    Ok(Document::new(
        read.kind.name(),
        at(first),
        at(last),
        StopReason::Duration,
        config,
        body,
    ))
}

/// The rows of `target`'s history in `[from, to)` that one store keeps, sorted by start.
fn read(st: &dyn Store, target: &str, from: i64, to: i64) -> Result<Read, RangeError> {
    let targets = st.targets()?;
    let Some(t) = targets
        .iter()
        .filter(|t| t.name == target)
        .max_by_key(|t| t.id)
    else {
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        return Err(RangeError::NoTarget(target.to_string(), names.join(", ")));
    };
    // Start where the data is still kept at some level.
    let mut start = from;
    for level in Level::ALL {
        match st.mark(&store::pruned(level))? {
            Some(p) if p > start => continue,
            _ => {
                start = level.floor(start);
                break;
            }
        }
    }
    let marks: Vec<(Level, Option<i64>)> = Level::ROLLUPS
        .iter()
        .map(|l| Ok((*l, st.mark(&store::rolled(*l))?)))
        .collect::<Result<_, StoreError>>()?;
    let rolled = |l: Level| marks.iter().find(|(x, _)| *x == l).and_then(|(_, m)| *m);
    let spans = cover(start, to, &rolled);
    let mut parts = Vec::new();
    let mut by_status = BTreeMap::<&'static str, u64>::new();
    let mut last_config = None;
    for Span { level, from, to } in &spans {
        match level {
            Level::Round => {
                for r in st.rounds(t.id, *from, *to, true)? {
                    *by_status.entry(r.status.name()).or_default() += 1;
                    if r.config.is_some() {
                        last_config = r.config;
                    }
                    parts.push(Part {
                        from: r.start_ms,
                        to: r.end_ms.max(r.start_ms),
                        rounds: 1,
                        stats: decode(r.stats.as_deref())?,
                    });
                }
            }
            l => {
                for r in st.rollups(t.id, *l, *from, *to, true)? {
                    *by_status.entry("in_rollups").or_default() += r.rounds;
                    *by_status.entry("in_rollups_unreachable").or_default() += r.unreachable;
                    parts.push(Part {
                        from: r.first_ms,
                        to: r.last_ms.max(r.first_ms),
                        rounds: r.rounds,
                        stats: decode(r.stats.as_deref())?,
                    });
                }
            }
        }
    }
    parts.sort_by_key(|p| p.from);
    if parts.iter().all(|p| p.stats.is_none()) {
        return Err(empty(target, start, to));
    }
    let config_id = match last_config {
        Some(c) => Some(c),
        None => st.latest_config(t.id)?,
    };
    let (meta, round_config) = match config_id.map(|c| st.config(c)).transpose()?.flatten() {
        Some((m, c)) => (
            serde_json::from_str::<KindMeta>(&m)
                .map_err(|e| RangeError::Other(format!("stored description: {e}")))?,
            serde_json::from_str::<serde_json::Value>(&c).unwrap_or_default(),
        ),
        None => {
            return Err(RangeError::Other(
                "no stored description of its rounds".into(),
            ))
        }
    };
    Ok(Read {
        kind: t.kind,
        start,
        spans,
        parts,
        by_status,
        meta,
        round_config,
        vantage: st.meta("vantage")?,
    })
}

fn decode(b: Option<&[u8]>) -> Result<Option<KindStats>, RangeError> {
    b.map(KindStats::decode)
        .transpose()
        .map_err(|e| RangeError::Store(StoreError::Corrupt(e.to_string())))
}

/// One interval record (probe, http, bulk) or trace round per row read, on the range's clock.
fn series(body: &mut AnyBody, parts: &[Part], t0: i64) {
    let secs = |ms: i64| (ms - t0) as f64 / 1e3;
    let intervals = || -> Vec<Interval> {
        parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let f = p.stats.as_ref().map(KindStats::figures).unwrap_or_default();
                let h = p
                    .stats
                    .as_ref()
                    .and_then(KindStats::headline)
                    .cloned()
                    .unwrap_or_else(Histogram::new);
                let dur = ((p.to - p.from) as f64 / 1e3).max(1e-3);
                let mut iv = Interval {
                    index: u32::try_from(i).unwrap_or(u32::MAX),
                    start_s: secs(p.from),
                    end_s: secs(p.to),
                    completed: f.count,
                    errors: f.errors,
                    rate_per_s: f.sent as f64 / dur,
                    latency_ms: h.summary(),
                    histogram: h.to_serialized(),
                    ..Interval::default()
                };
                // What each kind's records carry besides (the schemas require them).
                match &p.stats {
                    Some(KindStats::Probe(s)) => {
                        iv.sent = Some(s.packets.sent);
                        iv.lost = Some(s.packets.lost);
                        iv.late = Some(s.packets.late);
                        iv.duplicated = Some(s.packets.duplicated);
                        iv.reordered = Some(s.packets.reordered);
                        iv.loss_pct = Some(npt_result::loss_pct(s.packets.lost, s.packets.sent));
                        iv.jitter_ms = Some(s.jitter.value_ns() / 1e6);
                        iv.jitter_samples = Some(s.jitter.samples());
                        iv.bandwidth_bps = Some(s.rates.bandwidth_bps);
                    }
                    Some(KindStats::Http(s)) => iv.status = Some(s.status.clone()),
                    Some(KindStats::Bulk(s)) => {
                        iv.bandwidth_bps = Some(s.goodput_bps);
                        iv.bytes = Some(s.bytes);
                        iv.streams = Some(Vec::new());
                    }
                    _ => {}
                }
                iv
            })
            .collect()
    };
    match body {
        AnyBody::Probe(b) => b.intervals = intervals(),
        AnyBody::Http(b) => b.intervals = intervals(),
        AnyBody::Bulk(b) => b.intervals = intervals(),
        AnyBody::Trace(b) => {
            b.rounds = parts
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let Some(KindStats::Trace(t)) = &p.stats else {
                        return None;
                    };
                    let segs: Vec<&npt_result::stats::PingStats> =
                        t.segments.iter().map(|l| &l.stats).collect();
                    Some(npt_result::stats::trace::round(
                        u32::try_from(i).unwrap_or(u32::MAX),
                        "before",
                        (secs(p.from), secs(p.to)),
                        &segs,
                        t.chain.as_ref().map(|c| &c.stats),
                    ))
                })
                .collect();
        }
        // No series: a ping's range is its totals, a run is not monitored, a lifetime's and an
        // mtu's rounds are the range's body (its bracket, its rounds counted) and a setup's its
        // connections.
        AnyBody::Ping(_)
        | AnyBody::Run(_)
        | AnyBody::Lifetime(_)
        | AnyBody::Mtu(_)
        | AnyBody::Setup(_) => {}
    }
}

/// A range document in `format` (`html`, `json`, `text`): for the listener's `/report`.
pub fn render(
    doc: &AnyResult,
    format: &str,
    title: &str,
) -> Result<(&'static str, Vec<u8>), RangeError> {
    let mut out = Vec::new();
    let io = |e: std::io::Error| RangeError::Other(e.to_string());
    match format {
        "json" => Ok(("application/json", doc.to_json_pretty())),
        "text" => {
            npt_report::text::write_text(&mut out, doc).map_err(io)?;
            Ok(("text/plain; charset=utf-8", out))
        }
        "html" => {
            match &doc.body {
                AnyBody::Trace(b) => {
                    let page = npt_report::trace::html_page(
                        b,
                        format!("npt monitor: {title}"),
                        format!("{} → {}", doc.started_at, doc.ended_at),
                    );
                    npt_report::html::render(&page, &mut out).map_err(io)?;
                }
                _ => {
                    let page = npt_report::page::html_page(doc, &format!("npt monitor: {title}"));
                    npt_report::html::render(&page, &mut out).map_err(io)?;
                }
            }
            Ok(("text/html; charset=utf-8", out))
        }
        f => Err(RangeError::Other(format!(
            "format {f:?}: one of html, json, text"
        ))),
    }
}

#[cfg(test)]
mod tests;
