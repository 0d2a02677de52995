//! One command path for every workload: what `npt probe`, `run`, `http`, `ping` and `bulk` do
//! around a run, written once. A subcommand parses its flags into a validated config (a
//! [`Workload`]), says how it is shown ([`RunCommand`]) and where its output goes
//! ([`Options`]); [`execute`] does the rest, in this order:
//!
//! output paths checked → segment (hash the config, split the load) → start-at → notices →
//! signals → metrics → banner → live view → per-packet log → run (each interval to the metrics
//! and the live view or the progress lines, each packet to the log) → result document →
//! atomic write (kept in a temporary file if that fails) → text or JSON on stdout → exit
//! code → linger.
//!
//! Exit code 1 when [`RunCommand::failed`] says the run measured nothing; errors of the
//! workload are exit 1 too, except those [`RunCommand::is_usage`] names (exit 2); exit
//! [`EXIT_REFUSED`] when [`RunCommand::refused`] says the server refused part of the test.

pub mod live;
mod packets;
pub mod signals;

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use npt_result::workload::{Finished, Progress, Stop, Workload};
use npt_result::Document;

use crate::execute::packets::PacketLog;
use crate::flags::metrics::MetricsArgs;
use crate::flags::output::OutputArgs;
use crate::flags::output::Sink;
use crate::flags::segment::{Segment, SegmentArgs, SegmentInfo};
use crate::usage;
use live::{Live, Sample};

/// Exit code: the server refused part (or all) of the test — its per-source budget or its
/// `--token` — so the figures are not the path's alone (`refused_by_server` in the result).
pub const EXIT_REFUSED: u8 = 3;

/// The exit codes of every measuring subcommand, for `--help`.
pub const EXIT_CODES: &str = "Exit codes: 0 the run completed and something answered; 1 nothing \
answered (the report is still written) or the run could not be carried out; 2 bad flags or \
config (the message names the flag); 3 the server refused part of the test (its per-source \
budget or its --token: the report's `refused` line says which and the fix).";

/// How a workload is shown on the command line: the only per-kind code [`execute`] calls.
pub trait RunCommand: Workload + Sized {
    /// How its progress is shown when there is no live view.
    const LINES: Lines = Lines::None;

    /// `--segment I/N`: this part's share of the load (counts and rates split so the parts
    /// add up to the whole). A workload without the flag is never asked.
    fn split(&mut self, seg: &Segment) -> anyhow::Result<()> {
        let _ = seg;
        Err(usage!("--segment: npt {} cannot be split", Self::KIND))
    }

    /// The line on stderr before the run (not with `--quiet`).
    fn banner(&self) -> Option<String> {
        None
    }

    /// The live view of the run, if it has one (shown on a terminal, without `--quiet`).
    fn live(&self) -> Option<live::Spec> {
        None
    }

    /// What the live view shows of one interval (its rate in [`live::Spec::rate_unit`]).
    fn sample(p: &Progress<'_>) -> Sample {
        Sample::of(p)
    }

    /// The progress line of one interval ([`RunCommand::LINES`] says where it goes).
    fn line(p: &Progress<'_>) -> String {
        let _ = p;
        String::new()
    }

    /// Where its own lines besides the intervals' go (probe: the wait for the last replies):
    /// `say` shows a line where the progress lines go. Called before the run only when they
    /// are shown (not with `--quiet` or a live view).
    fn say_to(&mut self, say: Say) {
        let _ = say;
    }

    /// The text report of a finished run.
    fn render(out: &mut dyn Write, doc: &Document<Self::Body>) -> io::Result<()>;

    /// `Some(why)` when the run failed (exit 1): nothing answered, nothing completed. `why` is
    /// printed as `npt KIND: why` unless empty (the report says it already).
    fn failed(body: &Self::Body) -> Option<&'static str>;

    /// Packets or datagrams the server refused (its budget, its `--token`): exit
    /// [`EXIT_REFUSED`] when any.
    fn refused(body: &Self::Body) -> u64 {
        let _ = body;
        0
    }

    /// Whether an error of the workload is the user's (a bad URL …: exit 2).
    fn is_usage(e: &Self::Error) -> bool {
        let _ = e;
        false
    }
}

/// Shows one line where the progress lines go ([`RunCommand::say_to`]).
pub type Say = Arc<dyn Fn(&str) + Send + Sync>;

/// How a workload's progress is shown without a live view (never with `--quiet`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    None,
    /// A line per interval, part of the report (probe's `[stage …]`): on stdout, or on stderr
    /// when stdout carries the JSON document.
    Report,
    /// A status line on stderr, redrawn in place on a terminal. `off_tty`: elsewhere each one
    /// is printed on a line of its own (else not at all). `wipe`: at the end the line is wiped
    /// instead of kept.
    Status {
        off_tty: bool,
        wipe: bool,
    },
}

/// What the user asked for around the run.
pub struct Options<'a> {
    /// Said before the start, as `npt KIND: …` on stderr (config notes, address fallbacks).
    pub notices: Vec<String>,
    /// `--segment`, `--start-at`, `--run-id` (defaults: none).
    pub segment: &'a SegmentArgs,
    /// `--metrics`, `--metrics-linger` (defaults: none).
    pub metrics: &'a MetricsArgs,
    /// What every `--metrics` series of the run is labelled with (`protocol`, `target`).
    pub labels: Vec<(&'static str, String)>,
    /// `--json FILE`: the result document, written atomically.
    pub json_file: Option<&'a Path>,
    /// `--packets FILE|-`: the per-packet log (see [`Options::packets_to`]).
    pub packets: Option<&'a Path>,
    /// The result document on stdout (`--format json`, `--json -`).
    pub json_stdout: bool,
    /// Where the text report goes.
    pub text: Sink,
    /// `--quiet`: no banner, no live view, no progress lines.
    pub quiet: bool,
}

/// No `--segment` (ping).
static NO_SEGMENT: SegmentArgs = SegmentArgs {
    segment: None,
    start_at: None,
    run_id: None,
};

/// No `--metrics` (ping).
static NO_METRICS: MetricsArgs = MetricsArgs {
    metrics: None,
    metrics_linger: None,
};

impl<'a> Options<'a> {
    /// The run's options as far as `out` goes (no segment, no metrics: a caller that has them
    /// sets them after). [`Options::check`] is the output group's one validation: the result
    /// file can be written (exit 2 naming `--json`, before any traffic).
    pub fn new(out: &'a OutputArgs) -> Options<'a> {
        Options {
            notices: Vec::new(),
            segment: &NO_SEGMENT,
            metrics: &NO_METRICS,
            labels: Vec::new(),
            json_file: out.json_file(),
            packets: None,
            json_stdout: out.json_stdout(),
            text: out.text(),
            quiet: out.quiet,
        }
    }
}

impl Options<'_> {
    /// Every output path is usable (exit 2 naming the flag, before anything is sent). Called
    /// by [`execute`] first; a subcommand that reaches the network before it (a banner that
    /// resolves the name, a reachability check) calls it earlier too.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(p) = self.json_file {
            crate::flags::output::check("--json", p)?;
        }
        if let Some(p) = self.packets {
            if p == Path::new("-") && self.json_stdout {
                return Err(usage!(
                    "--packets -: stdout already carries the JSON result document; give \
                     --packets a file"
                ));
            }
            crate::flags::output::check_or_dash("--packets", p)?;
        }
        Ok(())
    }

    /// Stdout carries data (the JSON document or the per-packet log), not text.
    fn stdout_taken(&self) -> bool {
        self.json_stdout || self.packets == Some(Path::new("-"))
    }
}

impl<'a> Options<'a> {
    /// `--packets FILE|-`: with `-` the log takes stdout and the text report goes to stderr.
    pub fn packets_to(&mut self, path: Option<&'a Path>) {
        self.packets = path;
        if path == Some(Path::new("-")) && self.text == Sink::Stdout {
            self.text = Sink::Stderr;
        }
    }
}

/// Runs `w` with everything around it; see the module doc for the order.
pub fn execute<W: RunCommand>(mut w: W, mut o: Options<'_>) -> anyhow::Result<ExitCode> {
    let kind = W::KIND;
    o.check()?;
    if o.packets.is_some() && !W::PACKETS {
        return Err(usage!(
            "--packets: npt {kind} has no per-packet fates to log"
        ));
    }
    let segment = o.segment.resolve(&w.config())?;
    if let Some((seg, _)) = &segment {
        w.split(seg)?;
    }
    let mut notices = std::mem::take(&mut o.notices);
    notices.extend(o.segment.wait_for_start()?);
    for n in &notices {
        eprintln!("npt {kind}: {n}");
    }
    let stop = Arc::new(Stop::new());
    crate::execute::signals::install(&stop)?;
    let metrics = o.metrics.start(kind, &o.labels)?;
    if !o.quiet {
        if let Some(b) = w.banner() {
            eprintln!("{b}");
        }
    }
    let live = match w.live() {
        Some(spec) if live::wanted(o.quiet) && !o.stdout_taken() => {
            let s = stop.clone();
            Some(Live::start(spec, move || s.signal())?)
        }
        _ => None,
    };
    let lines = if o.quiet || live.is_some() {
        Lines::None
    } else {
        W::LINES
    };
    let tty = io::stderr().is_terminal();
    let stdout_taken = o.stdout_taken();
    if lines != Lines::None {
        w.say_to(Arc::new(move |line: &str| {
            show(lines, tty, stdout_taken, line)
        }));
    }
    let mut on_interval = |p: &Progress<'_>| {
        if let Some(m) = &metrics {
            m.publish(&p.snapshot());
        }
        if let Some(l) = &live {
            l.sample(W::sample(p));
        }
        if lines != Lines::None {
            show(lines, tty, stdout_taken, &W::line(p));
        }
    };
    let mut log = o.packets.map(PacketLog::open).transpose()?;
    let done = match &mut log {
        Some(log) => w.run_logged(&stop, &mut on_interval, &mut |l| log.line(l)),
        None => w.run(&stop, &mut on_interval),
    };
    if let Some(l) = live {
        l.finish()?;
    }
    // The log is complete once the run is: flushed before the report, said if it failed.
    let log_failed = match log.map(PacketLog::finish) {
        Some(Err(why)) => {
            eprintln!("npt {kind}: {why}");
            true
        }
        _ => false,
    };
    let done = done.map_err(|e| {
        if W::is_usage(&e) {
            usage!("{e}")
        } else {
            anyhow::Error::new(e)
        }
    })?;
    if let (Lines::Status { wipe, .. }, true) = (lines, tty) {
        if wipe {
            eprint!("\r{:70}\r", "");
        } else {
            eprintln!();
        }
    }
    if let Some(m) = &metrics {
        m.publish(&done.totals);
    }
    let doc = document(&w, done, segment.as_ref().map(|(_, info)| info))?;
    let saved = write::<W>(&doc, &o)?;
    let failed = W::failed(&doc.body);
    if let Some(why) = failed.filter(|why| !why.is_empty()) {
        eprintln!("npt {kind}: {why}");
    }
    if let Some(m) = metrics {
        // A new Ctrl-C ends the linger (the first may have ended the run already).
        let level = stop.level();
        m.linger(|| stop.level() > level);
    }
    let refused = W::refused(&doc.body);
    Ok(if !saved || log_failed {
        // What was asked for is not where it was asked (it is where stderr said).
        ExitCode::from(1)
    } else if refused > 0 {
        // Before "nothing answered": a refusal explains the silence and has a fix.
        eprintln!("npt {kind}: the server refused {refused} (exit {EXIT_REFUSED}; see the report)");
        ExitCode::from(EXIT_REFUSED)
    } else if failed.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The result document of a finished run of `w`: its config as recorded (with the part's
/// identity under `segment`, and what the run decided for itself) around the body.
pub fn document<W: Workload>(
    w: &W,
    done: Finished<W::Body>,
    segment: Option<&SegmentInfo>,
) -> anyhow::Result<Document<W::Body>> {
    let mut config = w.config();
    if let Some(info) = segment {
        crate::flags::segment::label(&mut config, info)?;
    }
    if let Some(obj) = config.as_object_mut() {
        obj.extend(done.decided);
    }
    Ok(Document::new(
        W::KIND,
        done.started,
        done.ended,
        done.stopped_by,
        config,
        done.body,
    ))
}

/// The result file first (a closed stdout must not cost the user their result), then the
/// text report, then the JSON on stdout. A result file that cannot be written is kept in a
/// temporary file (stderr says where) and the report still follows: false then.
fn write<W: RunCommand>(doc: &Document<W::Body>, o: &Options<'_>) -> anyhow::Result<bool> {
    let bytes = doc.to_json_pretty();
    let saved = match o.json_file {
        Some(path) => crate::flags::output::save(W::KIND, path, &bytes, !o.json_stdout),
        None => true,
    };
    match o.text {
        Sink::Stdout => {
            let mut out = io::stdout().lock();
            W::render(&mut out, doc)?;
            out.flush()?;
        }
        Sink::Stderr => {
            let mut out = io::stderr().lock();
            W::render(&mut out, doc)?;
            out.flush()?;
        }
        Sink::Nowhere => {}
    }
    if o.json_stdout {
        let mut out = io::stdout().lock();
        out.write_all(&bytes)?;
        out.flush()?;
    }
    Ok(saved)
}

/// One progress line, where `lines` says (a line that cannot be written is dropped: the
/// run goes on, and the report says what happened).
fn show(lines: Lines, tty: bool, stdout_taken: bool, line: &str) {
    match lines {
        Lines::None => {}
        Lines::Report if stdout_taken => eprintln!("{line}"),
        Lines::Report => {
            let mut out = io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
        Lines::Status { .. } if tty => eprint!("\r{line}"),
        Lines::Status { off_tty: true, .. } => eprintln!("{line}"),
        Lines::Status { off_tty: false, .. } => {}
    }
}
