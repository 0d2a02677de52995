//! Any saved result of a workload (`probe`, `run`, `http`) as one type: the shared envelope of
//! [`Document`] with a typed workload part, [`Workload`]. Readers (`npt report`, `npt merge`,
//! the CSV and HTML pages, `compare`'s charts) read this instead of each picking its kind's
//! fields out of the JSON, and it answers the questions they share in one vocabulary: the NPT
//! `latency` and `errors` blocks, the tester's health, the interval series as one record type
//! ([`Interval`]), the histograms under one dotted-name layout, the headline latency, the text.
//!
//! The JSON is unchanged: each workload part serializes to the names it always had (README,
//! "JSON names"); this type only reads and writes them. Reading checks the schema version
//! against the versions this npt can read ([`READABLE`]) and names what is wrong.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use npt_stats::{Histogram, SerializedHistogram};
use serde::Serialize;

use crate::http::HttpBody;
use crate::probe::{Errors, NptLatency, ProbeBody};
use crate::run::RunBody;
use crate::Document;

/// Schema versions this npt reads. Writing always uses [`crate::SCHEMA`].
pub const READABLE: &[&str] = &[crate::SCHEMA];

/// The kinds [`Workload`] holds.
pub const KINDS: &[&str] = &["probe", "run", "http"];

/// The one vocabulary of error kinds every workload counts under (`errors.by_kind`), with what
/// each means. Besides these: `stalled` (a probe's relay pacing with nothing left to send),
/// `internal`, `config`, and the proxy's own `proxy_*` kinds.
pub const ERROR_KINDS: &[(&str, &str)] = &[
    ("refused", "the connection was refused"),
    (
        "reset",
        "the connection was reset or aborted, or the pipe broke",
    ),
    ("closed", "the peer closed before the answer was complete"),
    ("timeout", "no answer, or no progress, within the timeout"),
    ("unreachable", "host or network unreachable"),
    (
        "local",
        "the tester's own limits: no local address or port, out of file descriptors",
    ),
    ("tls", "the TLS handshake or the certificate failed"),
    ("protocol", "an answer that is not what the protocol says"),
    ("io", "any other socket error"),
];

/// A kind in the one vocabulary ([`ERROR_KINDS`]): the names the workloads used before it are
/// mapped (`aborted`, from a probe, is `reset`; `connect`, http's other connect failures, is
/// `io`), every other name is kept. Collectors record through this, and reading maps old files.
pub fn error_kind(kind: &str) -> &str {
    match kind {
        "aborted" => "reset",
        "connect" => "io",
        k => k,
    }
}

/// A result document of any workload.
pub type AnyResult = Document<Workload>;

/// The typed part of a result that differs by workload. Serializes flat, as each body always
/// did (the envelope's `kind` says which it is).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
// One value per result read, never a collection of them: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Workload {
    Probe(ProbeBody),
    Run(RunBody),
    Http(HttpBody),
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}: cannot read: {1}")]
    Io(String, io::Error),
    #[error("{0}: not a result document: {1}")]
    NotJson(String, serde_json::Error),
    #[error("{0}: schema {1:?} is not one this npt reads ({READABLE:?}; written by another npt version?)")]
    Schema(String, String),
    #[error("{0}: kind {1:?} is not a workload result (probe, run, http)")]
    Kind(String, String),
    #[error("{0}: a {1} document with an unexpected layout: {2}")]
    Layout(String, String, serde_json::Error),
}

/// Checks the schema version of a result read as JSON; `name` names it in the error.
pub fn check_schema(name: &str, json: &serde_json::Value) -> Result<(), ReadError> {
    let schema = json["schema"].as_str().unwrap_or("");
    if READABLE.contains(&schema) {
        Ok(())
    } else {
        Err(ReadError::Schema(name.to_string(), schema.to_string()))
    }
}

/// The typed result of a document read as JSON (any kind in [`KINDS`]).
pub fn from_value(name: &str, json: serde_json::Value) -> Result<AnyResult, ReadError> {
    check_schema(name, &json)?;
    let kind = json["kind"].as_str().unwrap_or("").to_string();
    let layout = |e| ReadError::Layout(name.to_string(), kind.clone(), e);
    fn typed<B: serde::de::DeserializeOwned>(
        json: serde_json::Value,
        wrap: fn(B) -> Workload,
    ) -> Result<AnyResult, serde_json::Error> {
        let d: Document<B> = serde_json::from_value(json)?;
        Ok(Document {
            schema: d.schema,
            kind: d.kind,
            tool: d.tool,
            host: d.host,
            started_at: d.started_at,
            ended_at: d.ended_at,
            duration_s: d.duration_s,
            stopped_by: d.stopped_by,
            config: d.config,
            body: wrap(d.body),
        })
    }
    let mut r = match kind.as_str() {
        "probe" => typed(json, Workload::Probe).map_err(layout),
        "run" => typed(json, Workload::Run).map_err(layout),
        "http" => typed(json, Workload::Http).map_err(layout),
        _ => Err(ReadError::Kind(name.to_string(), kind)),
    }?;
    // Files written before the one vocabulary of error kinds read in it.
    let errors = match &mut r.body {
        Workload::Probe(b) => &mut b.errors,
        Workload::Run(b) => &mut b.errors,
        Workload::Http(b) => &mut b.errors,
    };
    errors.by_kind = errors.by_kind.renamed(error_kind);
    Ok(r)
}

/// Reads and types a result file; errors name the file.
pub fn read(path: &Path) -> Result<AnyResult, ReadError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::Io(name.clone(), e))?;
    let json = serde_json::from_str(&text).map_err(|e| ReadError::NotJson(name.clone(), e))?;
    from_value(&name, json)
}

/// One interval of any workload, in common units.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interval {
    pub index: u64,
    pub start_s: f64,
    pub end_s: f64,
    /// Packets sent (probe) or requests completed (run, http) per second.
    pub rate: f64,
    /// Replies (probe) or completed requests (run, http).
    pub completed: u64,
    /// Failed requests (run, http); a probe's intervals count loss instead.
    pub errors: u64,
    /// Probe only: packets sent in the interval that were lost, in %.
    pub loss_pct: Option<f64>,
    /// Round-trip time (probe) or request latency (run, http) of the interval.
    pub latency_ms: npt_stats::Summary,
}

/// The tester's own health, as every workload reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TesterHealth {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub cpu_pct: f64,
    pub max_rss_bytes: u64,
}

impl Workload {
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Probe(_) => "probe",
            Workload::Run(_) => "run",
            Workload::Http(_) => "http",
        }
    }

    /// NPT's `latency` block.
    pub fn latency(&self) -> &BTreeMap<String, NptLatency> {
        match self {
            Workload::Probe(b) => &b.latency,
            Workload::Run(b) => &b.latency,
            Workload::Http(b) => &b.latency,
        }
    }

    /// NPT's `errors` block.
    pub fn errors(&self) -> &Errors {
        match self {
            Workload::Probe(b) => &b.errors,
            Workload::Run(b) => &b.errors,
            Workload::Http(b) => &b.errors,
        }
    }

    pub fn health(&self) -> TesterHealth {
        let (u, s, pct, rss) = match self {
            Workload::Probe(b) => (
                b.health.cpu_user_s,
                b.health.cpu_sys_s,
                b.health.cpu_pct,
                b.health.max_rss_bytes,
            ),
            Workload::Http(b) => (
                b.health.cpu_user_s,
                b.health.cpu_sys_s,
                b.health.cpu_pct,
                b.health.max_rss_bytes,
            ),
            Workload::Run(b) => (
                b.health.cpu_user_s,
                b.health.cpu_sys_s,
                b.health.cpu_pct,
                b.health.max_rss_bytes,
            ),
        };
        TesterHealth {
            cpu_user_s: u,
            cpu_sys_s: s,
            cpu_pct: pct,
            max_rss_bytes: rss,
        }
    }

    /// The interval series as one record type.
    pub fn intervals(&self) -> Vec<Interval> {
        match self {
            Workload::Probe(b) => b
                .intervals
                .iter()
                .map(|iv| Interval {
                    index: iv.index.into(),
                    start_s: iv.start_s,
                    end_s: iv.end_s,
                    rate: iv.pps,
                    completed: iv.received,
                    errors: 0,
                    loss_pct: Some(iv.loss_pct),
                    latency_ms: iv.rtt_ms,
                })
                .collect(),
            Workload::Run(b) => b
                .intervals
                .iter()
                .map(|iv| Interval {
                    index: iv.index.into(),
                    start_s: iv.start_s,
                    end_s: iv.end_s,
                    rate: iv.requests as f64 / (iv.end_s - iv.start_s).max(1e-9),
                    completed: iv.requests,
                    errors: iv.errors,
                    loss_pct: None,
                    latency_ms: iv.latency_ms,
                })
                .collect(),
            Workload::Http(b) => b
                .intervals
                .iter()
                .map(|iv| Interval {
                    index: iv.index.into(),
                    start_s: iv.start_s,
                    end_s: iv.end_s,
                    rate: iv.rps,
                    completed: iv.requests,
                    errors: iv.errors,
                    loss_pct: None,
                    latency_ms: iv.latency_ms,
                })
                .collect(),
        }
    }

    /// Every serialized histogram under one layout of dotted names: a probe's `rtt`,
    /// `rtt_corrected`, `ipdv`, `connect`, `first_packet`; run's names as they are
    /// (`proto.tcp.latency` …); http's `latency`, `latency_uncorrected`, `ttfb`, `connect`,
    /// `tls`, `proxy` and `hosts.<host>`.
    pub fn histograms(&self) -> BTreeMap<String, &SerializedHistogram> {
        let mut m: BTreeMap<String, &SerializedHistogram> = BTreeMap::new();
        fn insert<'a>(
            m: &mut BTreeMap<String, &'a SerializedHistogram>,
            k: &str,
            h: Option<&'a SerializedHistogram>,
        ) {
            if let Some(h) = h {
                m.insert(k.to_string(), h);
            }
        }
        let into = &mut m;
        let mut put = |k: &str, h| insert(into, k, h);
        match self {
            Workload::Probe(b) => {
                let h = &b.histograms;
                put("rtt", Some(&h.rtt));
                put("rtt_corrected", h.rtt_corrected.as_ref());
                put("ipdv", Some(&h.ipdv));
                put("connect", h.connect.as_ref());
                put("first_packet", h.first_packet.as_ref());
            }
            Workload::Run(b) => {
                for (k, h) in &b.histograms {
                    put(k, Some(h));
                }
            }
            Workload::Http(b) => {
                let h = &b.histograms;
                put("latency", Some(&h.latency));
                put("latency_uncorrected", h.latency_uncorrected.as_ref());
                put("ttfb", Some(&h.ttfb));
                put("connect", Some(&h.connect));
                put("tls", h.tls.as_ref());
                put("proxy", h.proxy.as_ref());
                for (host, x) in &h.hosts {
                    put(&format!("hosts.{host}"), Some(x));
                }
            }
        }
        m
    }

    /// The latency the user feels as one histogram: a probe's RTT, http's request latency,
    /// run's request latency of every protocol added exactly. Undecodable data counts as empty.
    pub fn headline(&self) -> Histogram {
        let decode = |h: &SerializedHistogram| Histogram::from_serialized(h).unwrap_or_default();
        match self {
            Workload::Probe(b) => decode(&b.histograms.rtt),
            Workload::Http(b) => decode(&b.histograms.latency),
            Workload::Run(b) => {
                let mut h = Histogram::new();
                for (k, x) in &b.histograms {
                    if k.starts_with("proto.") && k.ends_with(".latency") {
                        h += &decode(x);
                    }
                }
                h
            }
        }
    }
}

/// The text summary of any workload's result, as the command that made it printed it.
pub fn write_text(w: &mut dyn io::Write, doc: &AnyResult) -> io::Result<()> {
    // The renderers take their kind's document; lend them the envelope with the body.
    fn with<B: Clone>(doc: &AnyResult, body: &B) -> Document<B> {
        Document {
            schema: doc.schema.clone(),
            kind: doc.kind.clone(),
            tool: doc.tool.clone(),
            host: doc.host.clone(),
            started_at: doc.started_at.clone(),
            ended_at: doc.ended_at.clone(),
            duration_s: doc.duration_s,
            stopped_by: doc.stopped_by.clone(),
            config: doc.config.clone(),
            body: body.clone(),
        }
    }
    match &doc.body {
        Workload::Probe(b) => crate::text::write_probe(w, &with(doc, b)),
        Workload::Run(b) => crate::run::write_text(&mut &mut *w, &with(doc, b)),
        Workload::Http(b) => crate::http::write_text(w, &with(doc, b)),
    }
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
