//! Any saved result (every kind of the registry, [`crate::kinds`]) as one type: the shared
//! envelope of [`Document`] with a typed body, [`AnyBody`]. Readers (`npt report`, `npt merge`,
//! the CSV and HTML pages, `compare`'s charts) read this instead of each picking its kind's
//! fields out of the JSON. [`AnyBody::view`] lends the body as what every kind answers, in one
//! vocabulary ([`crate::body::View`]): the NPT `latency` and `errors` blocks, the tester's
//! health, the interval series (one record type, [`Interval`]), the histograms (one flat map of
//! dotted names), the headline latency, the target. [`AnyBody::kind`] says which kind it is.
//!
//! Reading checks the schema version against the versions this npt can read ([`READABLE`]) and
//! names what is wrong. A v1 file (`npt.result.v1`) is converted to the v2 layout as it is read
//! ([`from_value`]), so every reader sees one shape: v1 had an interval record per kind, http's
//! per-host histograms nested under `histograms.hosts`, and older error kind names.

use std::io;
use std::path::Path;

pub use crate::interval::Interval;

use crate::error::error_kind;
use crate::Document;

/// Schema versions this npt reads. Writing always uses [`crate::SCHEMA`].
pub const READABLE: &[&str] = &[crate::SCHEMA, crate::SCHEMA_V1];

/// A result document of any kind.
pub type AnyResult = Document<AnyBody>;

// `AnyBody`, `KINDS`, `MERGEABLE`, the typed reader and `with_stats`, one arm per kind.
crate::kinds!(registry);
use crate::kinds::registry;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}: cannot read: {1}")]
    Io(String, io::Error),
    #[error("{0}: not a result document: {1}")]
    NotJson(String, serde_json::Error),
    #[error("{0}: schema {1:?} is not one this npt reads ({READABLE:?}; written by another npt version?)")]
    Schema(String, String),
    #[error("{0}: kind {1:?} is not a result this npt reads ({kinds})", kinds = KINDS.join(", "))]
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
    let mut r = match typed(&kind, json) {
        Some(r) => r.map_err(|e| ReadError::Layout(name.to_string(), kind.clone(), e))?,
        None => return Err(ReadError::Kind(name.to_string(), kind)),
    };
    // Files written before the one vocabulary of error kinds read in it.
    let errors = r.body.view_mut().errors_mut();
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

#[cfg(test)]
mod tests;
