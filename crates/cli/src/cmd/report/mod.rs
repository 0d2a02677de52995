//! `npt report FILE`: any saved result rendered again — text (as the command printed it),
//! JSON (in this npt's schema: an older file comes out converted), CSV (a row per interval
//! plus a summary row), Markdown (the compare table's row; a trace's waterfall) or a self-contained HTML page with
//! charts — to stdout or, atomically, to `-o FILE`.
//!
//! `npt report --from monitor.db --target NAME --since 24h`: a range of a monitor's history,
//! read as one result document of the target's kind (`npt_monitor::range`), then rendered the
//! same way. `--from` again (`--from hk.db --from fra.db`): the target's rows of every store
//! added into one document, each store's own figures beside (`npt_monitor::range::fleet`).

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
    #[arg(value_name = "FILE", required_unless_present = "from")]
    pub file: Option<PathBuf>,
    /// A monitor's store (`npt monitor`'s SQLite file): report a range of one target's history.
    /// Again for more stores (other vantages, older files): their rounds of the target merged
    /// exactly into one result, each store's own figures beside it.
    #[arg(
        long,
        value_name = "STORE",
        conflicts_with = "file",
        requires = "target"
    )]
    pub from: Vec<PathBuf>,
    /// With --from: the target's name.
    #[arg(long, value_name = "NAME", requires = "from")]
    pub target: Option<String>,
    /// With --from: the range's start, as a time before its end (24h, 90m, 7d) or an RFC 3339
    /// time [default: 24h].
    #[arg(long, value_name = "AGO|TIME", requires = "from")]
    pub since: Option<String>,
    /// With --from: the range's end, as a time before now or an RFC 3339 time [default: now].
    #[arg(long, value_name = "AGO|TIME", requires = "from")]
    pub until: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write here (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `24h` (before `base`, ms) or an RFC 3339 time, as wall ms.
fn when(flag: &str, s: &str, base: i64) -> anyhow::Result<i64> {
    if let Ok(t) = humantime::parse_rfc3339_weak(s) {
        return Ok(npt_monitor::round::wall_ms(t));
    }
    let d = humantime::parse_duration(s).map_err(|e| {
        usage!("{flag} {s:?}: {e} (a time before, such as 24h, or an RFC 3339 time)")
    })?;
    Ok(base.saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)))
}

/// The range asked for, read from the stores as one document.
fn from_stores(a: &ReportArgs, stores: &[PathBuf]) -> anyhow::Result<npt_result::any::AnyResult> {
    let target = a.target.as_deref().unwrap_or_default();
    let now = npt_monitor::round::wall_ms(std::time::SystemTime::now());
    let to = match &a.until {
        Some(u) => when("--until", u, now)?,
        None => now,
    };
    let from = when("--since", a.since.as_deref().unwrap_or("24h"), to)?;
    if from >= to {
        return Err(usage!("--since: the range starts after it ends"));
    }
    let mut open = Vec::new();
    for store in stores {
        open.push(
            npt_monitor::store::sqlite::Sqlite::open_read(store)
                .map_err(|e| usage!("--from {}: {e}", store.display()))?,
        );
    }
    if let [(st, store)] = &open.iter().zip(stores).collect::<Vec<_>>()[..] {
        return npt_monitor::range::report(*st, target, from, to)
            .map_err(|e| usage!("--from {}: {e}", store.display()));
    }
    let sources: Vec<npt_monitor::range::fleet::Source<'_>> = open
        .iter()
        .zip(stores)
        .map(|(st, p)| npt_monitor::range::fleet::Source {
            label: p.display().to_string(),
            store: st,
        })
        .collect();
    npt_monitor::range::fleet::report_many(&sources, target, from, to)
        .map_err(|e| usage!("--from: {e}"))
}

pub fn run(a: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(p) = &a.output {
        crate::flags::output::check("--output", p)?;
    }
    let (doc, path) = match (a.from.as_slice(), &a.file) {
        (stores @ [_, ..], _) => (
            from_stores(&a, stores)?,
            format!(
                "{} ({})",
                a.target.as_deref().unwrap_or_default(),
                stores
                    .iter()
                    .map(|s| s.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        // Every kind reads as the one result model; an older schema's file is converted.
        ([], Some(f)) => (
            npt_result::any::read(f).map_err(|e| usage!("{e}"))?,
            f.display().to_string(),
        ),
        ([], None) => return Err(usage!("give a result FILE, or --from STORE --target NAME")),
    };
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
        Some(p) if !crate::flags::output::save("report", p, &out, false) => {
            return Ok(ExitCode::from(1))
        }
        Some(_) => {}
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(&out)?;
            o.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
