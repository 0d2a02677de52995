//! Runs a scenario set: measures the hops of scenarios that list them (pinged from the client,
//! or from a hop agent for a `{ from, to }` hop: `npt ping TO --from FROM`), then runs every scenario's
//! workload as a child `npt` process writing `--json` into the output directory — the whole set
//! `runs` times, interleaved (A B C A B C …) so a drift over time hits every scenario alike —
//! and builds the table from the result files.
//!
//! Children, not threads: each run is exactly what a user would get from the same command line
//! (its own runtime, sockets and signal handling), every row keeps its result file, and a
//! [`Launcher`] can wrap the command — `npt lab` runs it as `ip netns exec NS npt …` in the
//! scenario's `node`. Every child is bounded by a timeout derived from its workload, runs in its
//! own process group (a terminal's Ctrl-C reaches only us) and dies with us (`PDEATHSIG`); on
//! Ctrl-C the running child is killed and the table of what was measured is still returned.

use npt_result::any::{AnyBody, AnyResult};
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_report::compare::runs::{table_of_runs, theoretical_from_hops, ScenarioRuns};
use npt_report::compare::{CompareError, Hop, Input, Table};

use super::scenarios::{HopSpec, ScenarioError, ScenarioSet, DEFAULT_HOP_PINGS};
use super::workload::{plan, Planned};

/// Makes the command that starts `npt` for a scenario's client.
pub trait Launcher {
    /// `npt` ready for its arguments; `node` is the scenario's `node` (lab only).
    fn npt(&self, node: Option<&str>) -> Command;

    /// Called right before each scenario run starts.
    fn before_run(&self) {}

    /// Called right after each scenario run, whose files in `out_dir` are named `stem.*`:
    /// a note for its progress line (the lab says when its links were late during the run).
    fn after_run(&self, _out_dir: &Path, _stem: &str) -> Option<String> {
        None
    }
}

/// The default launcher: this very binary, on this host.
pub struct SelfLauncher {
    exe: PathBuf,
}

impl SelfLauncher {
    pub fn new() -> io::Result<SelfLauncher> {
        Ok(SelfLauncher {
            exe: std::env::current_exe()?,
        })
    }
}

impl Launcher for SelfLauncher {
    fn npt(&self, _node: Option<&str>) -> Command {
        Command::new(&self.exe)
    }
}

pub struct RunOpts {
    /// How many times the whole set runs, interleaved (at least 1).
    pub runs: u32,
    /// Where result files and child logs go (created if missing).
    pub out_dir: PathBuf,
    /// Set (by a signal handler) to stop: the running child is killed, nothing else starts.
    pub cancel: Arc<AtomicBool>,
    /// A line on stderr per child.
    pub progress: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{0}: {1}")]
    Io(PathBuf, io::Error),
    #[error(transparent)]
    Table(#[from] CompareError),
}

/// How a child ended.
enum Ended {
    Exited(ExitStatus),
    TimedOut,
    Interrupted,
}

/// Runs `cmd` with its output into `log`, killing it after `limit` or when `cancel` is set.
fn run_child(
    mut cmd: Command,
    log: &Path,
    limit: Duration,
    cancel: &AtomicBool,
) -> io::Result<Ended> {
    let out = File::create(log)?;
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe and touches no memory of ours; it makes the kernel kill
    // the child if we die without a chance to (SIGKILL), so no run outlives `npt compare`.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        let stop = if cancel.load(Ordering::SeqCst) {
            Some(Ended::Interrupted)
        } else if start.elapsed() > limit {
            Some(Ended::TimedOut)
        } else {
            None
        };
        if let Some(why) = stop {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(why);
        }
        // Polling bounds the wait by `limit` without a thread per child; 20 ms is invisible
        // next to runs of seconds.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last non-empty line a child printed (its error message, usually).
fn last_line(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    line.trim().chars().take(300).collect()
}

/// The result a run wrote, as the one result model (this npt wrote it: the current schema).
fn read_result(path: &Path) -> Result<AnyResult, String> {
    let text = std::fs::read_to_string(path).map_err(|_| "no result written".to_string())?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("result is not JSON: {e}"))?;
    if doc["schema"] != npt_result::SCHEMA {
        return Err(format!("result has schema {}", doc["schema"]));
    }
    npt_result::any::from_value(&path.display().to_string(), doc).map_err(|e| e.to_string())
}

/// The error kinds of a result, with one example each: " (refused 10: e.g. connect: …)".
fn first_errors(by_kind: &npt_stats::ErrorCounts) -> String {
    let parts: Vec<String> = by_kind
        .iter()
        .take(3)
        .map(|(k, v)| {
            let n = v.count;
            match v.examples.first() {
                Some(e) => format!("{k} {n}: e.g. {e}"),
                None => format!("{k} {n}"),
            }
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// File names keep the scenario's number and a safe form of its name.
fn file_stem(i: usize, name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{:02}-{safe}", i + 1)
}

/// Why a child produced no usable outcome, in words for the table.
fn describe(ended: &Ended, limit: Duration, log: &Path) -> String {
    match ended {
        Ended::TimedOut => format!("timed out after {:.0} s", limit.as_secs_f64()),
        Ended::Interrupted => "interrupted".to_string(),
        Ended::Exited(s) => {
            let how = match s.code() {
                Some(c) => format!("exit status {c}"),
                None => format!("killed ({s})"),
            };
            let last = last_line(log);
            if last.is_empty() {
                how
            } else {
                format!("{how}: {last}")
            }
        }
    }
}

/// A progress line on stderr; a closed stderr must not stop the runs (eprintln would panic).
fn progress(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(io::stderr(), "{line}");
}

/// Measures one hop: its average RTT, or why there is none. A `{ from, to }` hop is measured
/// by the agent `from` (`npt ping TO --from FROM`, the file's `hop_token` in `NPT_TOKEN`).
fn ping_hop(
    set: &ScenarioSet,
    opts: &RunOpts,
    launcher: &dyn Launcher,
    node: Option<&str>,
    spec: &HopSpec,
    stem: &str,
) -> Hop {
    let url = spec.url();
    let count = set.hop_pings.unwrap_or(DEFAULT_HOP_PINGS);
    let result = opts.out_dir.join(format!("{stem}.json"));
    let log = opts.out_dir.join(format!("{stem}.log"));
    let _ = std::fs::remove_file(&result);
    let mut cmd = launcher.npt(node);
    cmd.args([
        "ping",
        url,
        "-c",
        &count.to_string(),
        "-i",
        "100ms",
        "-q",
        "--json",
    ])
    .arg(&result);
    if let Some(from) = spec.from() {
        // validate() made sure the token is there.
        // In the environment, not on the command line, where `ps` would show it.
        let token = set.hop_token.as_deref().unwrap_or_default();
        cmd.args(["--from", from]).env("NPT_TOKEN", token);
    }
    // count × (100 ms interval + 1 s per-attempt timeout), the worst case, plus start-up
    // (an agent measures with the same interval and timeout).
    let count32 = u32::try_from(count).unwrap_or(u32::MAX);
    let limit = Duration::from_millis(1100) * count32 + Duration::from_secs(10);
    let mut hop = Hop {
        url: url.to_string(),
        from: spec.from().map(str::to_string),
        result: result.display().to_string(),
        ..Hop::default()
    };
    match run_child(cmd, &log, limit, &opts.cancel) {
        Err(e) => hop.error = Some(format!("cannot start npt ping: {e}")),
        Ok(ended) => match read_result(&result) {
            Ok(AnyResult {
                body: AnyBody::Ping(b),
                ..
            }) if b.summary.received > 0 => {
                hop.avg_ms = Some(b.summary.avg_ms);
                hop.spread_ms = Some(npt_report::compare::hop_spread(&b));
            }
            // What the ping (or the agent) said went wrong, by kind with an example: a
            // refused agent, a target outside its allow-list …
            Ok(doc) => match first_errors(&doc.body.view().errors().by_kind) {
                e if e.is_empty() => hop.error = Some(format!("no answer: {}", last_line(&log))),
                e => hop.error = Some(format!("no answer{e}")),
            },
            Err(_) => hop.error = Some(describe(&ended, limit, &log)),
        },
    }
    hop
}

/// Runs every scenario of `set` `opts.runs` times, interleaved, and returns the table. A
/// scenario that fails is a row with its error; Ctrl-C (`opts.cancel`) returns the table so far
/// with `interrupted` set. `set` must have passed [`super::scenarios::validate`].
pub fn run_scenarios(
    set: &ScenarioSet,
    opts: &RunOpts,
    launcher: &dyn Launcher,
) -> Result<Table, RunError> {
    let plans: Vec<Planned> = (0..set.scenario.len())
        .map(|i| plan(set, i))
        .collect::<Result<_, _>>()?;
    std::fs::create_dir_all(&opts.out_dir).map_err(|e| RunError::Io(opts.out_dir.clone(), e))?;
    let mut acc: Vec<ScenarioRuns> =
        set.scenario
            .iter()
            .map(|s| ScenarioRuns {
                name: s.name.clone(),
                target: s.target.clone(),
                // Shown without the password (Via's Display leaves it out).
                via: s.via.as_ref().map(|v| {
                    npt_proxy::Via::parse(v).map_or_else(|_| v.clone(), |p| p.to_string())
                }),
                kind: set.workload.kind.name().to_string(),
                theoretical_ms: s.given_theoretical_ms(),
                ..ScenarioRuns::default()
            })
            .collect();
    let cancelled = || opts.cancel.load(Ordering::SeqCst);
    'hops: for (i, s) in set.scenario.iter().enumerate() {
        for (j, spec) in s.hops.iter().flatten().enumerate() {
            if cancelled() {
                break 'hops;
            }
            let stem = format!("hop-{}-{}", file_stem(i, &s.name), j + 1);
            let hop = ping_hop(set, opts, launcher, s.node.as_deref(), spec, &stem);
            if opts.progress {
                let what = match spec.from() {
                    Some(from) => format!("{from} → {}", spec.url()),
                    None => spec.url().to_string(),
                };
                progress(format_args!(
                    "npt compare: hop {} of {}: {}",
                    what,
                    s.name,
                    hop.avg_ms.map_or_else(
                        || format!("FAILED ({})", hop.error.as_deref().unwrap_or("")),
                        |a| format!("avg {a:.3} ms")
                    )
                ));
            }
            acc[i].hops.push(hop);
        }
        if !acc[i].hops.is_empty() {
            acc[i].theoretical_ms = theoretical_from_hops(&acc[i].hops);
        }
    }
    let runs = opts.runs.max(1);
    let total = runs as usize * set.scenario.len();
    let mut done = 0;
    'runs: for r in 1..=runs {
        for (i, s) in set.scenario.iter().enumerate() {
            if cancelled() {
                break 'runs;
            }
            done += 1;
            let stem = format!("run{r}-{}", file_stem(i, &s.name));
            let result = opts.out_dir.join(format!("{stem}.json"));
            let log = opts.out_dir.join(format!("{stem}.log"));
            let _ = std::fs::remove_file(&result);
            let mut cmd = launcher.npt(s.node.as_deref());
            cmd.args(&plans[i].argv).arg("--json").arg(&result);
            launcher.before_run();
            let started = Instant::now();
            let ended = run_child(cmd, &log, plans[i].timeout, &opts.cancel);
            let took = started.elapsed().as_secs_f64();
            let note = launcher
                .after_run(&opts.out_dir, &stem)
                .map_or(String::new(), |n| format!("; {n}"));
            let status = match ended {
                Err(e) => {
                    let m = format!("cannot start npt: {e}");
                    acc[i].failures.push(format!("run {r}: {m}"));
                    m
                }
                Ok(ended) => {
                    let finished = matches!(ended, Ended::Exited(_));
                    match read_result(&result) {
                        // A result without a single latency sample (nothing answered) has
                        // no figures to show: the run failed.
                        Ok(doc) if finished && doc.body.view().headline().count() > 0 => {
                            acc[i].results.push(Input {
                                name: s.name.clone(),
                                path: result.display().to_string(),
                                doc,
                            });
                            match ended {
                                Ended::Exited(st) if !st.success() => {
                                    // A result that says the run failed (nothing answered):
                                    // its figures stand, and so does the failure.
                                    let m = describe(&ended, plans[i].timeout, &log);
                                    acc[i].failures.push(format!("run {r}: {m}"));
                                    m
                                }
                                _ => "ok".to_string(),
                            }
                        }
                        res => {
                            let mut m = describe(&ended, plans[i].timeout, &log);
                            if let Ok(typed) = res {
                                m += &first_errors(&typed.body.view().errors().by_kind);
                            }
                            acc[i].failures.push(format!("run {r}: {m}"));
                            m
                        }
                    }
                }
            };
            if opts.progress {
                progress(format_args!(
                    "npt compare: [{done}/{total}] {} run {r}/{runs}: {status} ({took:.1} s){note}",
                    s.name
                ));
            }
        }
    }
    Ok(table_of_runs(&acc, set.baseline.as_deref(), cancelled())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_explain_a_run_without_samples() {
        let mut kinds = npt_stats::ErrorCounts::default();
        for _ in 0..10 {
            kinds.record("proxy_refused", || "via socks5://p:1: refused".into());
        }
        assert_eq!(
            first_errors(&kinds),
            " (proxy_refused 10: e.g. via socks5://p:1: refused)"
        );
        assert_eq!(first_errors(&Default::default()), "");
    }

    #[test]
    fn file_names_are_safe_and_distinct() {
        assert_eq!(file_stem(0, "via socks/5"), "01-via_socks_5");
        assert_ne!(file_stem(1, "a b"), file_stem(2, "a_b"));
    }

    #[test]
    fn a_child_is_bounded_and_cancellable() {
        let dir = std::env::temp_dir().join(format!("npt-runner-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("x.log");
        let never = AtomicBool::new(false);
        let mut sleep = Command::new("sleep");
        sleep.arg("30");
        let t = Instant::now();
        let ended = run_child(sleep, &log, Duration::from_millis(200), &never).unwrap();
        assert!(matches!(ended, Ended::TimedOut));
        assert!(t.elapsed() < Duration::from_secs(5));
        let mut sleep = Command::new("sleep");
        sleep.arg("30");
        let ended = run_child(sleep, &log, Duration::from_secs(60), &AtomicBool::new(true));
        assert!(matches!(ended.unwrap(), Ended::Interrupted));
        let mut sh = Command::new("sh");
        sh.args(["-c", "echo first; echo 'npt: it broke' >&2; exit 3"]);
        let ended = run_child(sh, &log, Duration::from_secs(30), &never).unwrap();
        let d = describe(&ended, Duration::ZERO, &log);
        assert_eq!(d, "exit status 3: npt: it broke");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
