//! `npt report FILE`: any saved result rendered again — text (as the command printed it),
//! JSON, CSV (a row per interval plus a summary row), Markdown (the compare table's row) or a
//! self-contained HTML page with charts — to stdout or, atomically, to `-o FILE`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use npt_report::compare::{self, Input};

use crate::usage;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Csv,
    Md,
    Html,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A result document (`--json` of probe, run, http, ping, or of npt merge).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write here (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let path = a.file.display().to_string();
    let text = std::fs::read_to_string(&a.file).map_err(|e| usage!("{path}: cannot read: {e}"))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| usage!("{path}: not a result document: {e}"))?;
    npt_report::result::check_schema(&path, &doc).map_err(|e| usage!("{e}"))?;
    let kind = doc["kind"].as_str().unwrap_or("").to_string();
    let mut out: Vec<u8> = Vec::new();
    match a.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &doc)?;
            out.push(b'\n');
        }
        Format::Csv => npt_report::page::write_csv(&mut out, &doc)?,
        Format::Html => {
            let page = npt_report::page::html_page(&doc, &path);
            npt_report::html::render(&page, &mut out)?;
        }
        Format::Md => {
            let input = Input {
                name: path.clone(),
                path: path.clone(),
                doc: doc.clone(),
            };
            let t = compare::table(&[input], None, &BTreeMap::new()).map_err(|e| usage!("{e}"))?;
            compare::write_markdown(&mut out, &t)?;
        }
        Format::Text => match kind.as_str() {
            k if npt_report::result::KINDS.contains(&k) => {
                let d = npt_report::result::from_value(&path, doc).map_err(|e| usage!("{e}"))?;
                npt_report::result::write_text(&mut out, &d)?;
            }
            _ => {
                // Kinds without a text renderer of their own: the compare row.
                let input = Input {
                    name: path.clone(),
                    path: path.clone(),
                    doc,
                };
                let t =
                    compare::table(&[input], None, &BTreeMap::new()).map_err(|e| usage!("{e}"))?;
                compare::write_text(&mut out, &t)?;
            }
        },
    }
    match &a.output {
        Some(p) => npt_report::write_atomic(p, &out)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(&out)?;
            o.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
