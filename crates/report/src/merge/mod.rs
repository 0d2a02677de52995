//! `npt merge`: the result documents of the parts of one segmented run (`--segment i/n`) joined
//! into the document one agent doing the whole load would have written.
//!
//! A merge computes nothing of its own: each part's measurements are read back from its
//! document as the workload's stats value (`npt_result::stats`), the values are added, and the
//! body is built by the same `summarize` the engine called at the end of each part. So
//! counters add, histograms add exactly (a percentile of the merge is the percentile of all
//! samples), rates of parts that ran side by side add up, RFC 3550 jitter merges as the stats
//! crate's `JitterMean`, and what a document keeps too little of to merge exactly (the
//! tester's health, per machine) is said where its stats value adds it.
//!
//! Before joining, the parts are checked: one kind, one run id and one config hash (else the
//! parts belong to different runs and are refused, naming the files), no index twice, and
//! missing indexes reported in `config.segment.missing`.

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use npt_result::kinds::{Registered, StatsVisitor};
use npt_result::stats::Stats;
use npt_result::Document;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{0}: {1}")]
    Read(PathBuf, String),
    #[error("{0}: not a part of a segmented run (no config.segment; run it with --segment I/N)")]
    NotAPart(PathBuf),
    #[error("{a} and {b} are parts of different runs ({what}: {va} vs {vb})")]
    Mismatch {
        a: PathBuf,
        b: PathBuf,
        what: &'static str,
        va: String,
        vb: String,
    },
    #[error("{a} and {b} are both segment {index}")]
    Duplicate { a: PathBuf, b: PathBuf, index: u32 },
    #[error("{0}: kind {1:?} cannot be merged ({kinds} can)", kinds = mergeable())]
    Kind(PathBuf, String),
    #[error("nothing to merge")]
    Empty,
    /// A message that already names the file.
    #[error("{0}")]
    Checked(String),
    #[error("{0}: histogram {1}: {2}")]
    Histogram(PathBuf, String, String),
}

/// The kinds that merge, as a sentence: "probe, run, http and bulk".
fn mergeable() -> String {
    match npt_result::kinds::MERGEABLE.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "none".to_string(),
    }
}

/// `config.segment` of a part, as `--segment` wrote it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SegmentLabel {
    pub index: u32,
    pub count: u32,
    pub run_id: String,
    pub config_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
}

/// One part, read and checked.
pub struct Part {
    pub path: PathBuf,
    pub kind: String,
    pub segment: SegmentLabel,
    pub json: serde_json::Value,
}

impl Part {
    pub fn read(path: &Path) -> Result<Part, MergeError> {
        let err = |m: String| MergeError::Read(path.to_path_buf(), m);
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| err(format!("not a result document: {e}")))?;
        npt_result::any::check_schema(&path.display().to_string(), &json)
            .map_err(|e| MergeError::Checked(e.to_string()))?;
        let kind = json["kind"].as_str().unwrap_or("").to_string();
        let segment: SegmentLabel = serde_json::from_value(json["config"]["segment"].clone())
            .map_err(|_| MergeError::NotAPart(path.to_path_buf()))?;
        Ok(Part {
            path: path.to_path_buf(),
            kind,
            segment,
            json,
        })
    }
}

/// What the merge found about the set of parts.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Coverage {
    pub count: u32,
    pub run_id: String,
    pub config_hash: String,
    pub merged: Vec<u32>,
    pub missing: Vec<u32>,
}

/// Checks that the parts belong together; returns what they cover.
pub fn check(parts: &[Part]) -> Result<Coverage, MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    let mut seen: Vec<Option<&Path>> = vec![None; first.segment.count as usize];
    for p in parts {
        let mismatch = |what, va: &str, vb: &str| MergeError::Mismatch {
            a: first.path.clone(),
            b: p.path.clone(),
            what,
            va: va.to_string(),
            vb: vb.to_string(),
        };
        if p.kind != first.kind {
            return Err(mismatch("kind", &first.kind, &p.kind));
        }
        if p.segment.run_id != first.segment.run_id {
            return Err(mismatch("run id", &first.segment.run_id, &p.segment.run_id));
        }
        if p.segment.config_hash != first.segment.config_hash {
            return Err(mismatch(
                "config hash",
                &first.segment.config_hash,
                &p.segment.config_hash,
            ));
        }
        if p.segment.count != first.segment.count {
            return Err(mismatch(
                "segment count",
                &first.segment.count.to_string(),
                &p.segment.count.to_string(),
            ));
        }
        let Some(slot) = seen.get_mut(p.segment.index as usize) else {
            return Err(mismatch(
                "segment index",
                &first.segment.count.to_string(),
                &p.segment.index.to_string(),
            ));
        };
        if let Some(prev) = slot {
            return Err(MergeError::Duplicate {
                a: prev.to_path_buf(),
                b: p.path.clone(),
                index: p.segment.index,
            });
        }
        *slot = Some(&p.path);
    }
    let merged: BTreeSet<u32> = parts.iter().map(|p| p.segment.index).collect();
    Ok(Coverage {
        count: first.segment.count,
        run_id: first.segment.run_id.clone(),
        config_hash: first.segment.config_hash.clone(),
        merged: merged.iter().copied().collect(),
        missing: (0..first.segment.count)
            .filter(|i| !merged.contains(i))
            .collect(),
    })
}

/// Merges the parts into one document (JSON), after [`check`].
pub fn merge(parts: &[Part]) -> Result<(serde_json::Value, Coverage), MergeError> {
    let coverage = check(parts)?;
    let first = &parts[0];
    let ser = |r: Result<serde_json::Value, serde_json::Error>| {
        r.map_err(|e| {
            MergeError::Read(
                first.path.clone(),
                format!("cannot serialize the merge: {e}"),
            )
        })
    };
    /// Merges the parts with the stats value the registry names for their kind.
    struct Merge<'a>(&'a [Part]);
    impl StatsVisitor for Merge<'_> {
        type Out = Result<Result<serde_json::Value, serde_json::Error>, MergeError>;
        fn visit<S>(self) -> Self::Out
        where
            S: Stats,
            S::Body: Registered,
        {
            Ok(serde_json::to_value(merge_kind::<S>(self.0)?))
        }
    }
    let merged = npt_result::kinds::with_stats(&first.kind, Merge(parts))
        .ok_or_else(|| MergeError::Kind(first.path.clone(), first.kind.clone()))?;
    let mut v = ser(merged?)?;
    v["config"]["segment"] = serde_json::json!({
        "count": coverage.count,
        "run_id": coverage.run_id,
        "config_hash": coverage.config_hash,
        "merged": coverage.merged,
        "missing": coverage.missing,
    });
    Ok((v, coverage))
}

/// The envelope of the merged document: earliest start, latest end, the most telling stop.
fn envelope<B>(parts: &[(PathBuf, Document<B>)], body: B) -> Document<B> {
    let (_, first) = &parts[0];
    let started_at = parts.iter().map(|(_, d)| d.started_at.clone()).min();
    let ended_at = parts.iter().map(|(_, d)| d.ended_at.clone()).max();
    let duration_s = parts.iter().map(|(_, d)| d.duration_s).fold(0.0, f64::max);
    let stopped_by = npt_result::StopReason::most_telling(parts.iter().map(|(_, d)| d.stopped_by));
    Document {
        schema: first.schema.clone(),
        kind: first.kind.clone(),
        tool: first.tool.clone(),
        host: first.host.clone(),
        started_at: started_at.unwrap_or_default(),
        ended_at: ended_at.unwrap_or_default(),
        duration_s,
        stopped_by,
        config: first.config.clone(),
        body,
    }
}

/// The parts of one kind read back as stats values, added, and summarized as the engine
/// summarizes a run; the envelope joins the parts' times and stop reasons.
fn merge_kind<S>(parts: &[Part]) -> Result<Document<S::Body>, MergeError>
where
    S: Stats,
    S::Body: Registered,
{
    let docs: Vec<(PathBuf, Document<S::Body>)> = typed(parts)?;
    let mut total = S::default();
    let mut meta = None;
    for (path, d) in &docs {
        let (stats, m) = S::from_body(&d.body).map_err(|e| {
            MergeError::Histogram(path.clone(), e.name.clone(), e.source.to_string())
        })?;
        total += &stats;
        meta.get_or_insert(m);
    }
    let meta = meta.ok_or(MergeError::Empty)?;
    let body = total.summarize(&meta);
    Ok(envelope(&docs, body))
}

/// Reads the parts as the one result type (older error kind names mapped) with body `B`.
fn typed<B: Registered>(parts: &[Part]) -> Result<Vec<(PathBuf, Document<B>)>, MergeError> {
    parts
        .iter()
        .map(|p| {
            let r = npt_result::any::from_value(&p.path.display().to_string(), p.json.clone())
                .map_err(|e| MergeError::Checked(e.to_string()))?;
            let mut body = None;
            let d = r.map_body(|w| body = B::pick(w));
            let body = body.ok_or_else(|| MergeError::Kind(p.path.clone(), d.kind.clone()))?;
            Ok((p.path.clone(), d.map_body(|()| body)))
        })
        .collect()
}
