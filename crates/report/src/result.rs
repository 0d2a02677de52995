//! Any saved result (`probe`, `run`, `http`, `ping`) as one type: the shared envelope of
//! [`Document`] with a typed workload part, [`Workload`]. Readers (`npt report`, `npt merge`,
//! the CSV and HTML pages, `compare`'s charts) read this instead of each picking its kind's
//! fields out of the JSON, and it answers the questions they share in one vocabulary: the NPT
//! `latency` and `errors` blocks, the tester's health, the interval series (one record type,
//! [`Interval`]), the histograms (one flat map of dotted names), the headline latency, the text.
//!
//! Reading checks the schema version against the versions this npt can read ([`READABLE`]) and
//! names what is wrong. A v1 file (`npt.result.v1`) is converted to the v2 layout as it is read
//! ([`from_value`]), so every reader sees one shape: v1 had an interval record per kind, http's
//! per-host histograms nested under `histograms.hosts`, and older error kind names.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use npt_stats::{Histogram, SerializedHistogram};
use serde::Serialize;

pub use crate::interval::Interval;

use crate::http::HttpBody;
use crate::ping::PingBody;
use crate::probe::{Errors, NptLatency, ProbeBody};
use crate::run::RunBody;
use crate::Document;

/// Schema versions this npt reads. Writing always uses [`crate::SCHEMA`].
pub const READABLE: &[&str] = &[crate::SCHEMA, crate::SCHEMA_V1];

/// The kinds [`Workload`] holds.
pub const KINDS: &[&str] = &["probe", "run", "http", "ping"];

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

/// Error kinds outside [`ERROR_KINDS`] that a result may still count: a probe's relay pacing
/// with nothing left to send, a panicked thread, a bad configuration found at run time, and
/// the proxy's own kinds (`proxy_refused`, `proxy_auth` …, any name with this prefix).
pub const EXTRA_ERROR_KINDS: &[&str] = &["stalled", "internal", "config"];

/// The prefix of the proxy's own error kinds.
pub const PROXY_ERROR_PREFIX: &str = "proxy_";

/// True for a name in [`ERROR_KINDS`], [`EXTRA_ERROR_KINDS`] or with [`PROXY_ERROR_PREFIX`].
pub fn is_error_kind(kind: &str) -> bool {
    ERROR_KINDS.iter().any(|(k, _)| *k == kind)
        || EXTRA_ERROR_KINDS.contains(&kind)
        || kind.starts_with(PROXY_ERROR_PREFIX)
}

/// The kind in [`ERROR_KINDS`] of a socket error, for every classifier that meets one (probe,
/// users, http, ping): refused; reset, aborted or a broken pipe; closed (EOF, not connected);
/// timeout (a timed-out or would-block blocking call); unreachable (host or network); local (no
/// local address or port, out of file descriptors); protocol (invalid data); else io.
pub fn io_error_kind(e: &io::Error) -> &'static str {
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => "refused",
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => "reset",
        K::UnexpectedEof | K::NotConnected => "closed",
        K::TimedOut | K::WouldBlock => "timeout",
        K::HostUnreachable | K::NetworkUnreachable => "unreachable",
        K::AddrInUse | K::AddrNotAvailable => "local",
        K::InvalidData => "protocol",
        _ => match e.raw_os_error() {
            Some(libc::EHOSTUNREACH | libc::ENETUNREACH) => "unreachable",
            Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL) => "local",
            _ => "io",
        },
    }
}

/// A kind of a file written before the one vocabulary ([`ERROR_KINDS`]), in it: `aborted`
/// (a probe's) is `reset`, `connect` (http's other connect failures) is `io`, every other name
/// is kept. For reading old files: the classifiers emit the vocabulary's names themselves (the
/// probe session still passes the kinds it records through this, a no-op for them now).
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
/// did (the envelope's `kind` says which it is). A ping is not a workload (no intervals, no
/// tester health) but is read as one so that `report` and `compare` read every result alike.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
// One value per result read, never a collection of them: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Workload {
    Probe(ProbeBody),
    Run(RunBody),
    Http(HttpBody),
    Ping(PingBody),
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}: cannot read: {1}")]
    Io(String, io::Error),
    #[error("{0}: not a result document: {1}")]
    NotJson(String, serde_json::Error),
    #[error("{0}: schema {1:?} is not one this npt reads ({READABLE:?}; written by another npt version?)")]
    Schema(String, String),
    #[error("{0}: kind {1:?} is not a result this npt reads (probe, run, http, ping)")]
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

/// A v1 document rewritten in the v2 layout: the interval records of each kind become the one
/// record ([`crate::interval`]), http's `histograms.hosts.<h>` become `histograms["hosts.<h>"]`.
/// (Probe's and run's `histograms` were already maps of these names; ping did not change.)
fn v1_to_v2(json: &mut serde_json::Value) {
    let kind = json["kind"].as_str().unwrap_or("").to_string();
    crate::interval::v1_to_v2(&kind, &mut json["intervals"]);
    if kind == "http" {
        if let Some(h) = json["histograms"].as_object_mut() {
            if let Some(serde_json::Value::Object(hosts)) = h.remove("hosts") {
                for (host, x) in hosts {
                    h.insert(crate::http::hist::host(&host), x);
                }
            }
        }
    }
    json["schema"] = crate::SCHEMA.into();
}

/// The typed result of a document read as JSON (any kind in [`KINDS`], any schema in
/// [`READABLE`]; a v1 document is converted, and reads as v2).
pub fn from_value(name: &str, mut json: serde_json::Value) -> Result<AnyResult, ReadError> {
    check_schema(name, &json)?;
    if json["schema"] == crate::SCHEMA_V1 {
        v1_to_v2(&mut json);
    }
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
        "ping" => typed(json, Workload::Ping).map_err(layout),
        _ => Err(ReadError::Kind(name.to_string(), kind)),
    }?;
    // Files written before the one vocabulary of error kinds read in it.
    let errors = match &mut r.body {
        Workload::Probe(b) => &mut b.errors,
        Workload::Run(b) => &mut b.errors,
        Workload::Http(b) => &mut b.errors,
        Workload::Ping(b) => &mut b.errors,
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
            Workload::Ping(_) => "ping",
        }
    }

    /// NPT's `latency` block.
    pub fn latency(&self) -> &BTreeMap<String, NptLatency> {
        match self {
            Workload::Probe(b) => &b.latency,
            Workload::Run(b) => &b.latency,
            Workload::Http(b) => &b.latency,
            Workload::Ping(b) => &b.latency,
        }
    }

    /// NPT's `errors` block.
    pub fn errors(&self) -> &Errors {
        match self {
            Workload::Probe(b) => &b.errors,
            Workload::Run(b) => &b.errors,
            Workload::Http(b) => &b.errors,
            Workload::Ping(b) => &b.errors,
        }
    }

    /// The tester's health (a ping records none: zeros).
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
            Workload::Ping(_) => return TesterHealth::default(),
        };
        TesterHealth {
            cpu_user_s: u,
            cpu_sys_s: s,
            cpu_pct: pct,
            max_rss_bytes: rss,
        }
    }

    /// The interval series (a ping has none).
    pub fn intervals(&self) -> &[Interval] {
        match self {
            Workload::Probe(b) => &b.intervals,
            Workload::Run(b) => &b.intervals,
            Workload::Http(b) => &b.intervals,
            Workload::Ping(_) => &[],
        }
    }

    /// Every serialized histogram by its dotted name: a probe's `rtt`, `rtt_corrected`, `ipdv`,
    /// `connect`, `first_packet`; run's `proto.tcp.latency` …; http's `latency`,
    /// `latency_uncorrected`, `ttfb`, `connect`, `tls`, `proxy` and `hosts.<host>`; a ping's
    /// one histogram as `rtt`.
    pub fn histograms(&self) -> BTreeMap<&str, &SerializedHistogram> {
        let map = match self {
            Workload::Probe(b) => &b.histograms,
            Workload::Run(b) => &b.histograms,
            Workload::Http(b) => &b.histograms,
            Workload::Ping(b) => return BTreeMap::from([("rtt", &b.histogram)]),
        };
        map.iter().map(|(k, h)| (k.as_str(), h)).collect()
    }

    /// The histograms that make up [`Workload::headline`], by name: a probe's RTT, http's
    /// request latency, run's request latency of every protocol, a ping's RTT.
    pub fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)> {
        fn one<'a>(
            m: &'a BTreeMap<String, SerializedHistogram>,
            k: &str,
        ) -> Option<(&'a str, &'a SerializedHistogram)> {
            m.get_key_value(k).map(|(k, h)| (k.as_str(), h))
        }
        match self {
            Workload::Probe(b) => one(&b.histograms, crate::probe::hist::RTT)
                .into_iter()
                .collect(),
            Workload::Http(b) => one(&b.histograms, crate::http::hist::LATENCY)
                .into_iter()
                .collect(),
            Workload::Ping(b) => vec![("rtt", &b.histogram)],
            Workload::Run(b) => b
                .histograms
                .iter()
                .filter(|(k, _)| k.starts_with("proto.") && k.ends_with(".latency"))
                .map(|(k, h)| (k.as_str(), h))
                .collect(),
        }
    }

    /// The latency the user feels as one histogram: its [`headline_parts`](Self::headline_parts)
    /// added exactly. Undecodable data counts as empty.
    pub fn headline(&self) -> Histogram {
        let mut h = Histogram::new();
        for (_, x) in self.headline_parts() {
            if let Ok(d) = Histogram::from_serialized(x) {
                h += &d;
            }
        }
        h
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
        Workload::Ping(b) => crate::ping::write_text(w, b, &doc.stopped_by, doc.duration_s),
    }
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
