//! `npt compare`: the forwarding-scenario table — avg / p50 / p95 / p99 / max, theoretical latency (the sum of
//! hop RTTs), overhead over it and over a baseline — either by running a scenario file
//! (`npt compare scenarios.toml`, see [`scenarios`] and [`runner`]) or from result files
//! already measured ([`files`]). Text on stdout; `--json`, `--markdown`, `--html` written
//! atomically.

mod files;
pub mod runner;
pub mod scenarios;
pub mod workload;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Args;
use npt_report::compare::{self, Table};
use npt_result::any::AnyResult;

use crate::usage;
use runner::{run_scenarios, RunError, RunOpts, SelfLauncher};
use scenarios::{parse_scenarios, validate, Purpose};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// A scenario file (`*.toml`) to run, or result files (`--json` of probe, run, http or
    /// ping), a row each, named after the file unless NAME=FILE.
    #[arg(required = true, value_name = "SCENARIOS.toml | [NAME=]FILE")]
    pub inputs: Vec<String>,
    /// The row the others are compared with (a name or a file given above); overrides the
    /// scenario file's `baseline`.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Result files: theoretical latency of a row, in ms: NAME=253.
    #[arg(long, value_name = "NAME=MS")]
    pub theoretical: Vec<String>,
    /// Result files: theoretical latency as the sum of the hops' RTTs, in ms: NAME=152+32+69.
    #[arg(long, value_name = "NAME=MS+MS…")]
    pub hops: Vec<String>,
    #[command(flatten)]
    pub out: Outputs,
}

fn is_scenario_file(a: &CompareArgs) -> bool {
    a.inputs.len() == 1 && a.inputs[0].to_ascii_lowercase().ends_with(".toml")
}

pub fn run(a: CompareArgs) -> anyhow::Result<ExitCode> {
    if is_scenario_file(&a) {
        return run_file(a);
    }
    for (flag, given) in [
        ("--runs", a.out.runs.is_some()),
        ("--out-dir", a.out.out_dir.is_some()),
    ] {
        if given {
            return Err(usage!(
                "{flag} is for a scenario file (npt compare scenarios.toml), not result files"
            ));
        }
    }
    a.out.check_files()?;
    let (table, docs) = files::table(files::Files {
        inputs: &a.inputs,
        baseline: a.baseline.as_ref(),
        theoretical: &a.theoretical,
        hops: &a.hops,
    })?;
    let title = a.inputs.join(" ");
    Ok(if write_outputs(&a.out, &table, &docs, &title, None)? {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A new directory for the results when no --out-dir is given; kept, since every row points
/// into it.
fn temp_out_dir() -> anyhow::Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let dir = std::env::temp_dir().join(format!("npt-compare-{stamp}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

fn run_file(a: CompareArgs) -> anyhow::Result<ExitCode> {
    for (flag, given) in [
        ("--theoretical", !a.theoretical.is_empty()),
        ("--hops", !a.hops.is_empty()),
    ] {
        if given {
            return Err(usage!(
                "{flag} is for result files; in a scenario file use theoretical_ms, \
                 hop_rtts_ms or hops"
            ));
        }
    }
    let path = &a.inputs[0];
    let text = std::fs::read_to_string(path).map_err(|e| usage!("{path}: cannot read: {e}"))?;
    let mut set = parse_scenarios(&text).map_err(|e| usage!("{path}: {e}"))?;
    if let Some(b) = &a.baseline {
        set.baseline = Some(b.clone());
    }
    validate(&set, Purpose::Compare).map_err(|e| usage!("{path}: {e}"))?;
    run_set(&set, path, &a.out, &SelfLauncher::new()?)
}

/// Where a scenario run's table goes (`npt compare` and `npt lab run` share these flags).
#[derive(Args, Debug, Clone, Default)]
pub struct Outputs {
    /// Scenario file: run the whole set this many times, interleaved (A B C A B C …).
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,
    /// Scenario file: where the result files and logs go [default: a new temporary directory,
    /// kept and printed].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Also write the table as JSON here (atomically).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the table as Markdown here (atomically).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write a self-contained HTML page with the table and charts here (atomically).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl Outputs {
    /// `--json`, `--markdown` and `--html` can be written (exit 2 naming the flag).
    fn check_files(&self) -> anyhow::Result<()> {
        for (flag, path) in [
            ("--json", &self.json),
            ("--markdown", &self.markdown),
            ("--html", &self.html),
        ] {
            if let Some(p) = path {
                crate::flags::output::check(flag, p)?;
            }
        }
        Ok(())
    }
}

/// Runs a validated scenario set through `launcher`, writes the outputs asked for and the
/// text table; exit 1 when a scenario failed or the run was interrupted. Ctrl-C / SIGTERM
/// stop it with the table so far written.
pub fn run_set(
    set: &scenarios::ScenarioSet,
    title: &str,
    outs: &Outputs,
    launcher: &dyn runner::Launcher,
) -> anyhow::Result<ExitCode> {
    if outs.runs == Some(0) {
        return Err(usage!("--runs must be at least 1"));
    }
    // Every scenario's command line is checked before anything is created: a refused file
    // leaves no empty results directory behind.
    for i in 0..set.scenario.len() {
        workload::plan(set, i).map_err(|e| usage!("{title}: {e}"))?;
    }
    // Then the outputs, before any scenario runs: a bad path is exit 2, nothing sent.
    outs.check_files()?;
    let out_dir = match &outs.out_dir {
        Some(d) => {
            crate::flags::output::check_dir("--out-dir", d)?;
            d.clone()
        }
        None => temp_out_dir()?,
    };
    // Ctrl-C is caught before the line that says the run is under way: one that comes right
    // after it must stop the run, not be swallowed by a handler that sets nothing (`npt lab
    // run` has its own, which only counts).
    let cancel = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, cancel.clone())?;
    }
    eprintln!("npt compare: results and logs in {}", out_dir.display());
    let opts = RunOpts {
        runs: outs.runs.unwrap_or(1),
        out_dir: out_dir.clone(),
        cancel,
        progress: true,
    };
    let table = match run_scenarios(set, &opts, launcher) {
        Ok(t) => t,
        Err(RunError::Scenario(e)) => return Err(usage!("{title}: {e}")),
        Err(e) => return Err(e.into()),
    };
    let docs: Vec<Vec<AnyResult>> = table
        .scenarios
        .iter()
        .map(|r| {
            r.results
                .iter()
                .filter_map(|p| npt_result::any::read(Path::new(p)).ok())
                .collect()
        })
        .collect();
    let saved = write_outputs(outs, &table, &docs, title, Some((&out_dir, opts.runs)))?;
    let failed = !saved || table.interrupted || table.scenarios.iter().any(|r| r.error.is_some());
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes `bytes` to `path`, or keeps them in a temporary file and says where.
fn write(path: &Path, bytes: &[u8]) -> bool {
    crate::flags::output::save("compare", path, bytes, false)
}

/// Writes the files asked for, then the text table to stdout. False when a file could not be
/// written where asked (it is kept in a temporary file; stderr says where).
fn write_outputs(
    a: &Outputs,
    table: &Table,
    docs: &[Vec<AnyResult>],
    title: &str,
    scenario_run: Option<(&Path, u32)>,
) -> anyhow::Result<bool> {
    let mut saved = true;
    if let Some(p) = &a.json {
        let mut v = serde_json::to_value(table)?;
        if let (Some((dir, runs)), Some(o)) = (scenario_run, v.as_object_mut()) {
            o.insert("source".into(), title.into());
            o.insert("runs".into(), runs.into());
            o.insert("out_dir".into(), dir.display().to_string().into());
        }
        let mut bytes = serde_json::to_vec_pretty(&v)?;
        bytes.push(b'\n');
        saved &= write(p, &bytes);
    }
    if let Some(p) = &a.markdown {
        let mut md = Vec::new();
        compare::write_markdown(&mut md, table)?;
        saved &= write(p, &md);
    }
    if let Some(p) = &a.html {
        let page = compare::page::html_page(table, docs, title);
        saved &= write(p, &npt_report::html::render_to_vec(&page));
    }
    let mut out = std::io::stdout().lock();
    compare::write_text(&mut out, table)?;
    out.flush()?;
    Ok(saved)
}
