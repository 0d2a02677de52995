//! Any saved result (`probe`, `run`, `http`, `ping`, `bulk`, `trace`) as one type: the shared envelope of
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

use crate::bulk::BulkBody;
use crate::error::error_kind;
use crate::health::Health;
use crate::http::HttpBody;
use crate::ping::PingBody;
use crate::probe::{Errors, NptLatency, ProbeBody};
use crate::run::RunBody;
use crate::trace::TraceBody;
use crate::Document;

/// Schema versions this npt reads. Writing always uses [`crate::SCHEMA`].
pub const READABLE: &[&str] = &[crate::SCHEMA, crate::SCHEMA_V1];

/// The kinds [`Workload`] holds.
pub const KINDS: &[&str] = &["probe", "run", "http", "ping", "bulk", "trace"];

/// A result document of any workload.
pub type AnyResult = Document<Workload>;

/// The typed part of a result that differs by workload. Serializes flat, as each body always
/// did (the envelope's `kind` says which it is). A ping is not a workload (no intervals, no
/// tester health) but is read as one so that `report` and `compare` read every result alike.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
// One value per result read, never a collection of them: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Workload {
    Probe(ProbeBody),
    Run(RunBody),
    Http(HttpBody),
    Ping(PingBody),
    Bulk(BulkBody),
    Trace(TraceBody),
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}: cannot read: {1}")]
    Io(String, io::Error),
    #[error("{0}: not a result document: {1}")]
    NotJson(String, serde_json::Error),
    #[error("{0}: schema {1:?} is not one this npt reads ({READABLE:?}; written by another npt version?)")]
    Schema(String, String),
    #[error(
        "{0}: kind {1:?} is not a result this npt reads (probe, run, http, ping, bulk, trace)"
    )]
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
        Ok(d.map_body(wrap))
    }
    let mut r = match kind.as_str() {
        "probe" => typed(json, Workload::Probe).map_err(layout),
        "run" => typed(json, Workload::Run).map_err(layout),
        "http" => typed(json, Workload::Http).map_err(layout),
        "ping" => typed(json, Workload::Ping).map_err(layout),
        "bulk" => typed(json, Workload::Bulk).map_err(layout),
        "trace" => typed(json, Workload::Trace).map_err(layout),
        _ => Err(ReadError::Kind(name.to_string(), kind)),
    }?;
    // Files written before the one vocabulary of error kinds read in it.
    let errors = match &mut r.body {
        Workload::Probe(b) => &mut b.errors,
        Workload::Run(b) => &mut b.errors,
        Workload::Http(b) => &mut b.errors,
        Workload::Ping(b) => &mut b.errors,
        Workload::Bulk(b) => &mut b.errors,
        Workload::Trace(b) => &mut b.errors,
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

impl Workload {
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Probe(_) => "probe",
            Workload::Run(_) => "run",
            Workload::Http(_) => "http",
            Workload::Ping(_) => "ping",
            Workload::Bulk(_) => "bulk",
            Workload::Trace(_) => "trace",
        }
    }

    /// NPT's `latency` block.
    pub fn latency(&self) -> &BTreeMap<String, NptLatency> {
        match self {
            Workload::Probe(b) => &b.latency,
            Workload::Run(b) => &b.latency,
            Workload::Http(b) => &b.latency,
            Workload::Ping(b) => &b.latency,
            Workload::Bulk(b) => &b.latency,
            Workload::Trace(b) => &b.latency,
        }
    }

    /// NPT's `errors` block.
    pub fn errors(&self) -> &Errors {
        match self {
            Workload::Probe(b) => &b.errors,
            Workload::Run(b) => &b.errors,
            Workload::Http(b) => &b.errors,
            Workload::Ping(b) => &b.errors,
            Workload::Bulk(b) => &b.errors,
            Workload::Trace(b) => &b.errors,
        }
    }

    /// The tester's health (a ping records none: zeros).
    pub fn health(&self) -> Health {
        match self {
            Workload::Probe(b) => b.health,
            Workload::Http(b) => b.health,
            Workload::Run(b) => b.health,
            Workload::Bulk(b) => b.health,
            Workload::Ping(_) | Workload::Trace(_) => Health::default(),
        }
    }

    /// The interval series (a ping has none).
    pub fn intervals(&self) -> &[Interval] {
        match self {
            Workload::Probe(b) => &b.intervals,
            Workload::Run(b) => &b.intervals,
            Workload::Http(b) => &b.intervals,
            Workload::Bulk(b) => &b.intervals,
            Workload::Ping(_) | Workload::Trace(_) => &[],
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
            Workload::Bulk(b) => &b.histograms,
            Workload::Trace(b) => &b.histograms,
            Workload::Ping(b) => return BTreeMap::from([(crate::ping::hist::RTT, &b.histogram)]),
        };
        map.iter().map(|(k, h)| (k.as_str(), h)).collect()
    }

    /// The histograms that make up [`Workload::headline`], by name: a probe's RTT, http's
    /// request latency, run's request latency of every protocol, a ping's RTT, a bulk's RTT
    /// under its load, a trace's RTT through the chain.
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
            Workload::Ping(b) => vec![(crate::ping::hist::RTT, &b.histogram)],
            Workload::Bulk(b) => one(&b.histograms, crate::bulk::hist::RTT)
                .into_iter()
                .collect(),
            Workload::Trace(b) => one(&b.histograms, crate::trace::hist::CHAIN)
                .into_iter()
                .collect(),
            Workload::Run(b) => b
                .histograms
                .iter()
                .filter(|(k, _)| crate::run::hist::is_proto_latency(k))
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

#[cfg(test)]
#[path = "any_tests.rs"]
mod tests;
