//! `npt report FILE`: any saved result rendered again — text (as the command printed it),
//! JSON (in this npt's schema: an older file comes out converted), CSV (a row per interval
//! plus a summary row), Markdown (the compare table's row; a trace's waterfall) or a self-contained HTML page with
//! charts — to stdout or, atomically, to `-o FILE`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

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
        // Each kind's own layout where it has one (a trace's waterfall), else the defaults.
        Format::Html => npt_report::html::render(&npt_report::render::html(&doc, &path), &mut out)?,
        Format::Md => npt_report::render::markdown(&mut out, &doc, &path).map_err(|e| match e {
            npt_report::render::RenderError::Doc(e) => usage!("{e}"),
            npt_report::render::RenderError::Io(e) => e.into(),
        })?,
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
