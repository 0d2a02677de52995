//! `npt compare FILE...`: results already measured, side by side in seed 000's table — avg /
//! p50 / p95 / p99 / max, theoretical latency (the sum of hop RTTs, given with
//! `--theoretical NAME=MS` or `--hops NAME=152+32+69`), overhead over it and over a baseline.
//! Running scenario files (`compare scenarios.toml`) is not here yet.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use npt_report::compare::{self, Input};

use crate::usage;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Result files (`--json` of probe, run, http or ping); a row each, named after the file
    /// unless NAME=FILE.
    #[arg(required = true, value_name = "[NAME=]FILE")]
    pub results: Vec<String>,
    /// The row the others are compared with (a name or a file given above).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Theoretical latency of a row, in ms: NAME=253.
    #[arg(long, value_name = "NAME=MS")]
    pub theoretical: Vec<String>,
    /// Theoretical latency as the sum of the hops' RTTs, in ms: NAME=152+32+69.
    #[arg(long, value_name = "NAME=MS+MS…")]
    pub hops: Vec<String>,
    /// Also write the table as JSON here (atomically).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the table as Markdown here (atomically).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

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

pub fn run(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let mut inputs = Vec::new();
    for r in &a.results {
        let (name, path) = match r.split_once('=') {
            Some((n, p)) if !n.is_empty() => (n.to_string(), p.to_string()),
            _ => (name_of(r), r.clone()),
        };
        let text =
            std::fs::read_to_string(&path).map_err(|e| usage!("{path}: cannot read: {e}"))?;
        let doc: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| usage!("{path}: not a result document: {e}"))?;
        let schema = doc["schema"].as_str().unwrap_or("");
        if schema != npt_report::SCHEMA {
            return Err(usage!(
                "{path}: schema {schema:?} is not {:?} (written by another npt version?)",
                npt_report::SCHEMA
            ));
        }
        inputs.push(Input { name, path, doc });
    }
    let mut theoretical = BTreeMap::new();
    for t in &a.theoretical {
        let (n, v) = ms_list("--theoretical", t, '\u{0}')?;
        theoretical.insert(n, v);
    }
    for h in &a.hops {
        let (n, v) = ms_list("--hops", h, '+')?;
        theoretical.insert(n, v);
    }
    // A baseline may be named by its file too.
    let baseline = a.baseline.as_ref().map(|b| {
        inputs
            .iter()
            .find(|i| i.path == *b)
            .map_or(b.clone(), |i| i.name.clone())
    });
    let table =
        compare::table(&inputs, baseline.as_deref(), &theoretical).map_err(|e| usage!("{e}"))?;
    if let Some(p) = &a.json {
        let mut bytes = serde_json::to_vec_pretty(&table)?;
        bytes.push(b'\n');
        npt_report::write_atomic(p, &bytes)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    if let Some(p) = &a.markdown {
        let mut md = Vec::new();
        compare::write_markdown(&mut md, &table)?;
        npt_report::write_atomic(p, &md)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    let mut out = std::io::stdout().lock();
    compare::write_text(&mut out, &table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
