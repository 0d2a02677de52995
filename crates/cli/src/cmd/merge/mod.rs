//! `npt merge`: joins the result documents of the parts of a segmented run (`--segment i/n`)
//! into one, exactly (see `npt_report::merge`), writes it atomically and prints its summary.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use npt_report::merge::{self, Part};

use crate::usage;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    #[default]
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The parts' result files (`--json` of each agent).
    #[arg(required = true, value_name = "FILE")]
    pub parts: Vec<PathBuf>,
    /// Write the merged document here (atomically).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// What goes to stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(a: MergeArgs) -> anyhow::Result<ExitCode> {
    if let Some(p) = &a.json {
        crate::flags::output::check("--json", p)?;
    }
    let parts: Vec<Part> = a
        .parts
        .iter()
        .map(|p| Part::read(p))
        .collect::<Result<_, _>>()
        .map_err(|e| usage!("{e}"))?;
    let (doc, coverage) = merge::merge(&parts).map_err(|e| match e {
        merge::MergeError::Histogram(..) => anyhow::Error::new(e),
        e => usage!("{e}"),
    })?;
    if !coverage.missing.is_empty() {
        eprintln!(
            "npt merge: run {} has {} segments; missing {:?} (merged {:?})",
            coverage.run_id, coverage.count, coverage.missing, coverage.merged
        );
    }
    let mut bytes = serde_json::to_vec_pretty(&doc)?;
    bytes.push(b'\n');
    let saved = match &a.json {
        Some(path) => crate::flags::output::save("merge", path, &bytes, a.format != Format::Json),
        None => true,
    };
    let mut out = std::io::stdout().lock();
    match (a.format, doc["kind"].as_str()) {
        (Format::Json, _) => out.write_all(&bytes)?,
        (Format::Text, _) => {
            let d = npt_result::any::from_value("the merge", doc)?;
            npt_report::text::write_text(&mut out, &d)?;
        }
    }
    out.flush()?;
    writeln!(
        std::io::stderr(),
        "npt merge: {} parts of run {} ({} of {} segments)",
        parts.len(),
        coverage.run_id,
        coverage.merged.len(),
        coverage.count
    )?;
    Ok(if saved {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
