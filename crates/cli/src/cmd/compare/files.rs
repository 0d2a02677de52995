//! `npt compare FILE...`: results already measured, side by side — theoretical latency given
//! with `--theoretical NAME=MS` or `--hops NAME=152+32+69`.

use std::collections::BTreeMap;

use npt_report::compare::{self, Input, Table};
use npt_result::any::AnyResult;

use crate::usage;

fn name_of(path: &str) -> String {
    std::path::Path::new(path)
        .file_stem()
        .map_or(path.to_string(), |s| s.to_string_lossy().into_owned())
}

fn ms_list(flag: &str, spec: &str, sep: char) -> anyhow::Result<(String, f64)> {
    let (name, v) = spec
        .split_once('=')
        .ok_or_else(|| usage!("{flag} {spec:?}: expected NAME=MS"))?;
    let mut total = 0.0;
    for part in v.split(sep) {
        let x: f64 = part
            .trim()
            .parse()
            .map_err(|_| usage!("{flag} {spec:?}: {part:?} is not a number of ms"))?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(usage!(
                "{flag} {spec:?}: {part:?} must be a non-negative number"
            ));
        }
        total += x;
    }
    Ok((name.to_string(), total))
}

/// The flags `npt compare` reads result files with.
pub struct Files<'a> {
    /// `[NAME=]FILE`, a row each.
    pub inputs: &'a [String],
    /// `--baseline NAME`: a row's name or its file.
    pub baseline: Option<&'a String>,
    /// `--theoretical NAME=MS`.
    pub theoretical: &'a [String],
    /// `--hops NAME=MS+MS…`.
    pub hops: &'a [String],
}

/// The table of the result files named in `a`, and each row's document (for the HTML page).
pub fn table(a: Files<'_>) -> anyhow::Result<(Table, Vec<Vec<AnyResult>>)> {
    let mut inputs = Vec::new();
    let mut docs = Vec::new();
    for r in a.inputs {
        let (name, path) = match r.split_once('=') {
            Some((n, p)) if !n.is_empty() => (n.to_string(), p.to_string()),
            _ => (name_of(r), r.clone()),
        };
        let text =
            std::fs::read_to_string(&path).map_err(|e| usage!("{path}: cannot read: {e}"))?;
        let doc: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| usage!("{path}: not a result document: {e}"))?;
        // Read as the one result model: an older schema's file is converted to this one.
        let doc = npt_result::any::from_value(&path, doc).map_err(|e| usage!("{e}"))?;
        docs.push(vec![doc.clone()]);
        inputs.push(Input { name, path, doc });
    }
    let mut theoretical = BTreeMap::new();
    for t in a.theoretical {
        let (n, v) = ms_list("--theoretical", t, '\u{0}')?;
        theoretical.insert(n, v);
    }
    for h in a.hops {
        let (n, v) = ms_list("--hops", h, '+')?;
        theoretical.insert(n, v);
    }
    // A baseline may be named by its file too.
    let baseline = a.baseline.map(|b| {
        inputs
            .iter()
            .find(|i| i.path == *b)
            .map_or(b.clone(), |i| i.name.clone())
    });
    let table =
        compare::table(&inputs, baseline.as_deref(), &theoretical).map_err(|e| usage!("{e}"))?;
    Ok((table, docs))
}
