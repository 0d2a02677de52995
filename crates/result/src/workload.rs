//! The contract every workload (`probe`, `run`, `http`, `ping`, `bulk`, `trace`) keeps with the command
//! line, so that the sequence around a run — segment, start-at, signals, metrics, live view,
//! result file, rendering, exit code — is written once (`npt`'s `execute`) instead of once per
//! subcommand. It sits here, below the engines, because the engines implement it and the cli
//! calls it; it names only result types.
//!
//! A workload is its validated config. [`Workload::run`] runs it until its plan is done or the
//! [`Stop`] says so, hands each interval to a callback as it closes ([`Progress`]: the one
//! [`Interval`] record plus the cumulative figures a progress line and `--metrics` need), and
//! returns the body of its result with its times and [`StopReason`] ([`Finished`]).
//!
//! A workload without a series (`ping`: one RTT per attempt, no rate, no interval in its
//! result) never calls the callback; its per-attempt lines are its own text output, written by
//! a sink it is given with its config.
//!
//! # Adding a workload (e.g. `npt bulk`)
//! 1. `crates/result/src/<kind>.rs`: its body type (`Serialize + Deserialize + JsonSchema`),
//!    its `impl` [`crate::body::Body`] (its name, written once) and its `impl`
//!    [`crate::body::View`] (`latency`, `errors`, the headline histograms, `target`; health
//!    and intervals where it has them: ~35 lines).
//! 2. One line in the registry, [`crate::kinds!`] (`Bulk(BulkBody) merge BulkStats;`, the
//!    `merge` part when `--segment` parts of it are added by a [`crate::stats::Stats`]
//!    value). From it come [`crate::any::AnyBody`], [`crate::Kind`], [`crate::any::KINDS`],
//!    its schema `schema/<kind>.schema.json`, `npt merge` and `npt report`'s dispatch, and
//!    `npt compare` reads its results. Its report: an `impl npt_report::render::Render` in
//!    `crates/report/src/kinds.rs`, empty for every default (text, Markdown, CSV, HTML).
//! 3. The engine crate, `src/workload.rs` (~50 lines, see npt-http's): `impl Workload for
//!    <Config>` — `config()`, the effective config as the result records it (also what
//!    `--segment` hashes), `length()`, the longest a run of it takes (what `npt compare` and
//!    `npt monitor` bound a run by: a `pub fn length` of the figures it rests on, which
//!    compare calls with its flags'), and `run()`, which checks `stop`, calls `on_interval`
//!    with each closed [`Interval`] and the totals its `--metrics` series show (a
//!    [`npt_stats::Snapshot`]), and returns [`Finished`].
//! 4. Its cli flags: `crates/cli/src/cmd/<kind>/`, the clap flags (flatten `SegmentArgs`,
//!    `MetricsArgs` to have them) and their validation into that config, then `impl
//!    RunCommand` — `split` for `--segment`, `banner`, `live`, `line` and `LINES` for
//!    progress, `render` for the text, `failed` for exit 1 — and one call of
//!    `execute::execute` with its `Options` (~65 lines); its module in `cmd/mod.rs`, and in
//!    `main.rs` a variant of `Command` and its dispatch arm; for `npt compare` to run it, a
//!    variant of its `Check` and its arm of `expected` (`cmd/compare/workload.rs`, ~5 lines);
//!    for `npt monitor`, step 5 of docs/development.md's "Adding a kind of result".

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use npt_stats::Snapshot;

use crate::body::Body;
use crate::interval::Interval;
use crate::packets::PacketLine;
use crate::StopReason;

/// What runs a workload: its validated config, run once.
pub trait Workload {
    /// The workload's part of the result document, a kind of the registry ([`crate::kinds!`]).
    type Body: Body;
    /// `kind` of its result document: its body's name ([`Body::KIND`]), not written again.
    const KIND: &'static str = <Self::Body as Body>::KIND;
    /// Why it could not run at all (a socket it could not open, a certificate refused …);
    /// what it measured going wrong is counted in the body instead.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The effective configuration, as the result's `config` records it. `--segment` hashes
    /// it before the load is split, so agents given the same flags agree on the run's id.
    fn config(&self) -> serde_json::Value;

    /// Runs to the end of the plan or until `stop` says so (an `Arc`: sender threads keep
    /// it). `on_interval` sees the intervals that close while the run goes on, in order, each
    /// once (the last, partial ones may be in the body only); it runs on the workload's
    /// collecting thread, never on a sender's.
    fn run(
        &mut self,
        stop: &Arc<Stop>,
        on_interval: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<Self::Body>, Self::Error>;

    /// How long a run of this config takes at most ([`Length`]): what `npt compare` bounds a
    /// child by and `npt monitor` a round. `None`: it runs until stopped (no count, no
    /// duration, a `--during` command).
    fn length(&self) -> Option<Length>;

    /// Whether it tells each packet's fate ([`Workload::run_logged`]): `--packets`.
    const PACKETS: bool = false;

    /// [`Workload::run`], also handing each packet's fate to `on_packet` as soon as it is
    /// known (`--packets`), on the collecting thread. A workload without per-packet fates
    /// ([`Workload::PACKETS`] false) runs as `run` and never calls it.
    fn run_logged(
        &mut self,
        stop: &Arc<Stop>,
        on_interval: &mut dyn FnMut(&Progress<'_>),
        on_packet: &mut dyn FnMut(&PacketLine),
    ) -> Result<Finished<Self::Body>, Self::Error> {
        let _ = on_packet;
        self.run(stop, on_interval)
    }
}

/// How long a run takes at most, as its engine runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Length {
    /// What its config plans: the send phase and the wait for the last answer (a probe's loss
    /// timeout, a ping's timeout, http's request timeout). A monitor refuses a round planned
    /// longer than its interval: its rounds would always overlap.
    pub planned: Duration,
    /// What the engine may add beyond the plan when a peer hangs: a trace's connect to a hop
    /// agent and the agent's reply slack.
    pub slack: Duration,
}

impl Length {
    /// A plan the engine adds nothing to.
    pub fn planned(planned: Duration) -> Length {
        Length {
            planned,
            slack: Duration::ZERO,
        }
    }

    /// The longest the run can take: its plan and the engine's slack.
    pub fn longest(&self) -> Duration {
        self.planned.saturating_add(self.slack)
    }
}

/// `d × n`, saturating: counts come from the user and may be anything up to `u64::MAX` (a
/// `Duration` multiplies only by a `u32`, and panics on overflow).
pub fn times(d: Duration, n: u64) -> Duration {
    let ns = d.as_nanos().saturating_mul(u128::from(n));
    u64::try_from(ns).map_or(Duration::MAX, Duration::from_nanos)
}

/// The one stop control: how many stop requests (Ctrl-C, SIGTERM, `q` in the live view) have
/// arrived. The first asks the run to start nothing new and let what is in flight finish; a
/// second abandons what is in flight. Shared by reference (`Arc<Stop>`) with signal handlers:
/// [`Stop::signal`] is a single atomic add, safe in one.
#[derive(Debug, Default)]
pub struct Stop {
    signals: AtomicUsize,
}

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    /// One more stop request.
    pub fn signal(&self) {
        self.signals.fetch_add(1, Ordering::SeqCst);
    }

    /// Requests so far: 0 run on, 1 start nothing new, 2 or more abandon what is in flight.
    pub fn level(&self) -> usize {
        self.signals.load(Ordering::Relaxed)
    }

    /// Whether any stop was requested.
    pub fn stopping(&self) -> bool {
        self.level() > 0
    }

    /// The reason a run stopped by these requests reports: `signal` after one, `abort` after
    /// two or more, `None` before any.
    pub fn reason(&self) -> Option<StopReason> {
        match self.level() {
            0 => None,
            1 => Some(StopReason::Signal),
            _ => Some(StopReason::Abort),
        }
    }
}

/// One closed interval of a running workload, with what has been counted since the start.
pub struct Progress<'a> {
    /// The interval that just closed.
    pub interval: &'a Interval,
    /// Time since the start of the run when it was handed over.
    pub elapsed: Duration,
    /// Replies (probe) or requests (run, http) completed since the start.
    pub completed: u64,
    /// Failed requests since the start (a probe counts losses in the interval instead: 0).
    pub errors: u64,
    /// Writes the run's totals so far as metric series (what `--metrics` shows); called only
    /// when someone exports them.
    pub totals: &'a dyn Fn(&mut Snapshot),
}

impl Progress<'_> {
    /// The totals so far, as [`Progress::totals`] writes them.
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::new();
        (self.totals)(&mut s);
        s
    }
}

/// What a finished run hands back to be wrapped in a result document.
#[derive(Debug)]
pub struct Finished<B> {
    pub body: B,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub stopped_by: StopReason,
    /// The final totals as metric series, equal to what the body says.
    pub totals: Snapshot,
    /// Settings the run decided for itself (http: `threads`, `threads_why`), recorded in the
    /// result's `config` beside the ones it was given.
    pub decided: serde_json::Map<String, serde_json::Value>,
}

impl<B> Finished<B> {
    /// A run that decided nothing for itself.
    pub fn new(
        body: B,
        started: SystemTime,
        ended: SystemTime,
        stopped_by: StopReason,
        totals: Snapshot,
    ) -> Finished<B> {
        Finished {
            body,
            started,
            ended,
            stopped_by,
            totals,
            decided: serde_json::Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stop_then_abort() {
        let s = Stop::new();
        assert_eq!((s.level(), s.stopping(), s.reason()), (0, false, None));
        s.signal();
        assert_eq!(s.reason(), Some(StopReason::Signal));
        assert!(s.stopping());
        s.signal();
        s.signal();
        assert_eq!((s.level(), s.reason()), (3, Some(StopReason::Abort)));
    }

    #[test]
    fn progress_writes_its_totals_on_demand() {
        let iv = Interval::default();
        let p = Progress {
            interval: &iv,
            elapsed: Duration::from_secs(1),
            completed: 3,
            errors: 1,
            totals: &|s: &mut Snapshot| s.counter("npt_requests_total", "r", &[], 3),
        };
        let s = p.snapshot();
        assert_eq!(
            s.get("npt_requests_total", &[]),
            Some(&npt_stats::snapshot::Value::Counter(3))
        );
    }
}
