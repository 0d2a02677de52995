//! `npt report FILE`: any saved result rendered again — text (as the command printed it),
//! JSON (in this npt's schema: an older file comes out converted), CSV (a row per interval
//! plus a summary row), Markdown (the compare table's row; a trace's waterfall) or a self-contained HTML page with
//! charts — to stdout or, atomically, to `-o FILE`.

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
    /// A result document (`--json` of probe, run, http, ping, bulk, trace, or of npt merge).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write here (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(a: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(p) = &a.output {
        crate::output::check("--output", p)?;
    }
    let path = a.file.display().to_string();
    // Every kind reads as the one result model; an older schema's file is converted to this one.
    let doc = npt_result::any::read(&a.file).map_err(|e| usage!("{e}"))?;
    let mut out: Vec<u8> = Vec::new();
    match a.format {
        Format::Json => out = doc.to_json_pretty(),
        Format::Csv => npt_report::page::write_csv(&mut out, &doc)?,
        Format::Html if matches!(doc.body, npt_result::any::Workload::Trace(_)) => {
            if let npt_result::any::Workload::Trace(b) = &doc.body {
                let page = npt_report::trace::html_page(
                    b,
                    format!("npt trace: {path}"),
                    format!("{} → {}", doc.started_at, doc.ended_at),
                );
                npt_report::html::render(&page, &mut out)?;
            }
        }
        Format::Html => {
            let page = npt_report::page::html_page(&doc, &path);
            npt_report::html::render(&page, &mut out)?;
        }
        Format::Md if matches!(doc.body, npt_result::any::Workload::Trace(_)) => {
            if let npt_result::any::Workload::Trace(b) = &doc.body {
                npt_report::trace::write_markdown(&mut out, b)?;
            }
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
        Format::Text => npt_report::text::write_text(&mut out, &doc)?,
    }
    match &a.output {
        Some(p) if !crate::output::save("report", p, &out, false) => return Ok(ExitCode::from(1)),
        Some(_) => {}
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(&out)?;
            o.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
