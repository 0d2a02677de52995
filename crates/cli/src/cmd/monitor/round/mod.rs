//! One target's round: its command line as the config file gives it, parsed by the very clap
//! definitions of `npt ping|probe|trace|http|bulk|lifetime|mtu|setup`, the monitor's defaults
//! put on what the parse says the target left out (a round of `length`, a ping every 200 ms, an
//! http round of one connection at 10 requests/s, a setup round of 5 connections of up to 1 s),
//! checked by the subcommand's own validation into the engine's config — whose length
//! ([`Workload::length`]) is the round's — and the runner that runs it in process.

use std::sync::Arc;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use npt_monitor::config::{missing_budget, ConfigError, TargetPlan};
use npt_monitor::{RunError, Runner, Target};
use npt_result::any::{AnyBody as Any, AnyResult};
use npt_result::workload::{Length, Stop, Workload};

use crate::cmd::compare::workload::Check;
use crate::usage;

/// A round's time bound beyond the longest its engine says it takes: start-up, resolving, the
/// document.
const GRACE: Duration = Duration::from_secs(5);

/// A setup round's connections and each one's bound unless its args give them: 6 s at most
/// (the priming connection of `--resume` included), inside the default `every` of 10 s.
const SETUP_COUNT: &str = "5";
const SETUP_TIMEOUT: &str = "1s";

/// A ping's or trace's interval unless its args give one.
const INTERVAL: Duration = Duration::from_millis(200);

/// A round's length unless the target (or the file) gives one: bulk's 5 s, 1 s for the rest.
fn default_length(check: &Check) -> Duration {
    match check {
        Check::Bulk(_) => Duration::from_secs(5),
        _ => Duration::from_secs(1),
    }
}

/// `1.5s` → `1500ms`: how the round's flags are written (every subcommand reads ms).
fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// `argv` parsed as `npt KIND …` parses it: the workload's flags, and which of them were given
/// (a flag is given however it is written: `-i500ms`, `-i 500ms`, `--interval=500ms`).
fn parse(key: &str, argv: &[String]) -> anyhow::Result<(Check, ArgMatches)> {
    let clap_err = |e: clap::Error| {
        let first = e.to_string();
        let first = first
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string();
        usage!("{key}.args: {first}")
    };
    // The command is built once and reused: building it (every subcommand's flags) costs
    // milliseconds, and a config of ten thousand targets parses twenty thousand lines.
    static COMMAND: std::sync::Mutex<Option<clap::Command>> = std::sync::Mutex::new(None);
    let m = {
        let mut c = COMMAND.lock().unwrap_or_else(|e| e.into_inner());
        c.get_or_insert_with(Check::command)
            .try_get_matches_from_mut(argv)
            .map_err(clap_err)?
    };
    let check = Check::from_arg_matches(&m).map_err(clap_err)?;
    let sub = m.subcommand().map(|(_, s)| s.clone()).unwrap_or_default();
    Ok((check, sub))
}

/// The flags the monitor adds to a target's round where its args leave them out: the
/// round's length as its kind measures it (a ping's and a trace's attempts, `--duration`
/// for the rest), and http's light defaults. `given` says which of the workload's flags (by
/// their clap id) the args give. Errors are the file's: a length given twice, a loaded probe
/// without a budget.
fn defaults(
    t: &TargetPlan,
    check: &Check,
    given: &dyn Fn(&str) -> bool,
) -> anyhow::Result<Result<Vec<String>, ConfigError>> {
    let at = |k: &str| format!("target[{}].{k}", t.index);
    let invalid = |k: &str, msg: &str| ConfigError::Invalid {
        key: at(k),
        msg: msg.to_string(),
    };
    let length = t.length.unwrap_or(default_length(check));
    let duration = || vec!["--duration".to_string(), ms(length)];
    let mut add = Vec::new();
    match check {
        Check::Ping(_) | Check::Trace(_) => {
            let interval = match check {
                Check::Ping(a) if given("interval") => Some(&a.timing.interval),
                Check::Trace(a) if given("interval") => Some(&a.timing.interval),
                _ => None,
            };
            let interval = match interval {
                Some(s) => crate::flags::timing::positive("--interval", s)
                    .map_err(|e| usage!("{}.args: {e}", t.key))?,
                None => {
                    add.extend(["-i".to_string(), ms(INTERVAL)]);
                    INTERVAL
                }
            };
            if !given("count") {
                let n = (length.as_nanos() / interval.as_nanos().max(1)).max(1);
                add.extend(["-c".to_string(), n.to_string()]);
            } else if t.own_length {
                return Ok(Err(invalid(
                    "length",
                    "give either length or -c in args (a round is its attempts)",
                )));
            }
        }
        // A loaded probe's round is its phases (--load-idle + --load-duration + --load-recovery).
        Check::Probe(a) if a.load.under_load.is_some() => {
            if t.budget.is_none() {
                return Ok(Err(missing_budget(t.index)));
            }
            if t.own_length {
                return Ok(Err(invalid(
                    "length",
                    "an --under-load round is its phases: give --load-idle, --load-duration \
                     and --load-recovery in args",
                )));
            }
        }
        Check::Probe(_) => {
            if !given("duration") && !given("count") {
                add.extend(duration());
            }
        }
        Check::Http(_) => {
            if !given("duration") {
                add.extend(duration());
            }
            for (id, flag, value) in [
                ("connections", "-c", "1"),
                ("rate", "--rate", "10"),
                ("timeout", "--timeout", "5s"),
            ] {
                if !given(id) {
                    add.extend([flag.to_string(), value.to_string()]);
                }
            }
        }
        Check::Bulk(_) => {
            if !given("duration") {
                add.extend(duration());
            }
        }
        // A lifetime round is its search, up to its --max (120 s unless its args say).
        Check::Lifetime(_) if t.own_length => {
            return Ok(Err(invalid(
                "length",
                "a lifetime round is its search: give --max in args",
            )));
        }
        // An mtu round is its search, up to its --timeout (60 s unless its args say).
        Check::Mtu(_) if t.own_length => {
            return Ok(Err(invalid(
                "length",
                "an mtu round is its search: give --timeout in args",
            )));
        }
        // A setup round is its fresh connections, each up to its --timeout: a few light ones
        // unless its args say, so that a round fits a short `every`.
        Check::Setup(_) if t.own_length => {
            return Ok(Err(invalid(
                "length",
                "a setup round is its connections: give -c and --timeout in args",
            )));
        }
        Check::Setup(_) => {
            for (id, flag, value) in [
                ("count", "-c", SETUP_COUNT),
                ("timeout", "--timeout", SETUP_TIMEOUT),
            ] {
                if !given(id) {
                    add.extend([flag.to_string(), value.to_string()]);
                }
            }
        }
        Check::Lifetime(_) | Check::Mtu(_) | Check::Run(_) => {}
    }
    Ok(Ok(add))
}

/// One target: its flags parsed, the monitor's defaults put on what they leave out, checked,
/// its bound, its runner. `file` words an error of the file (a key of the target's) as the
/// file's other errors are worded.
pub fn target(
    t: &TargetPlan,
    file: &dyn Fn(ConfigError) -> anyhow::Error,
) -> anyhow::Result<(Target, Vec<String>)> {
    let key = &t.key;
    let (check, given) = parse(key, &t.argv)?;
    let given = |id: &str| given.value_source(id) == Some(ValueSource::CommandLine);
    let add = defaults(t, &check, &given)?.map_err(file)?;
    let mut argv = t.argv.clone();
    argv.splice(2..2, add);
    let (check, _) = parse(key, &argv)?;
    let in_key = |e: anyhow::Error| usage!("{key}.args: {e}");
    let mut notices = Vec::new();
    let shorter = match check {
        Check::Mtu(_) => "a shorter --timeout in args",
        Check::Setup(_) => "fewer connections (-c) or a shorter --timeout in args",
        _ => "a shorter length",
    };
    let (length, runner) = match check {
        Check::Ping(a) if npt_ping::icmp::is_icmp(&a.target) => round(IcmpRound(
            crate::cmd::ping::icmp_config(&a).map_err(in_key)?,
        )),
        Check::Ping(a) => round(PingRound(crate::cmd::ping::config(&a).map_err(in_key)?)),
        Check::Probe(a) => {
            let (cfg, n) = crate::cmd::probe::config(&a).map_err(in_key)?;
            notices = n;
            round(Whole(cfg, Any::Probe))
        }
        Check::Http(a) => round(Whole(
            crate::cmd::http::config(&a).map_err(in_key)?,
            Any::Http,
        )),
        Check::Bulk(a) => round(Whole(
            crate::cmd::bulk::config(&a).map_err(in_key)?,
            Any::Bulk,
        )),
        Check::Trace(a) => round(TraceRound(crate::cmd::trace::config(&a).map_err(in_key)?)),
        Check::Lifetime(a) => round(Whole(
            crate::cmd::lifetime::config(&a).map_err(in_key)?,
            Any::Lifetime,
        )),
        Check::Mtu(a) => round(MtuRound(crate::cmd::mtu::config(&a).map_err(in_key)?)),
        Check::Setup(a) => round(SetupRound(crate::cmd::setup::config(&a).map_err(in_key)?)),
        Check::Run(_) => return Err(usage!("{key}.kind: npt monitor does not run `npt run`")),
    };
    let length = length.ok_or_else(|| {
        usage!("{key}.args: a round must end by itself (give a count or a duration)")
    })?;
    if length.planned > t.every {
        return Err(usage!(
            "{key}.every: a round takes up to {:?} (from its flags), longer than every {:?}: \
             give a longer every, or {shorter}",
            length.planned,
            t.every
        ));
    }
    let long = length.longest();
    let timeout = t
        .timeout
        .unwrap_or_else(|| long.saturating_add(long / 2).saturating_add(GRACE));
    Ok((
        Target {
            plan: TargetPlan { argv, ..t.clone() },
            runner,
            timeout,
        },
        notices,
    ))
}

/// A round as the monitor runs it, and how long its engine says it takes.
trait Round: Runner {
    fn length(&self) -> Option<Length>;
}

/// The round's length, and the round as the monitor is handed it.
fn round<R: Round + 'static>(r: R) -> (Option<Length>, Arc<dyn Runner>) {
    (r.length(), Arc::new(r))
}

/// Runs a workload once, as its subcommand would without any output; `kind` names the kind of
/// an error that kept it from running at all.
fn once<W: Workload>(
    mut w: W,
    stop: &Arc<Stop>,
    wrap: fn(W::Body) -> Any,
    kind: fn(&W::Error) -> &'static str,
) -> Result<AnyResult, RunError> {
    let done = w.run(stop, &mut |_| {}).map_err(|e| RunError {
        kind: kind(&e).into(),
        detail: e.to_string(),
    })?;
    let d = crate::execute::document(&w, done, None).map_err(|e| RunError {
        kind: "config".into(),
        detail: e.to_string(),
    })?;
    Ok(d.map_body(wrap))
}

/// The kind of an error that kept a workload without its own classification from running.
fn could_not_run<E>(_: &E) -> &'static str {
    "run"
}

/// A round of a workload whose config is the workload.
struct Whole<C>(C, fn(<C as Workload>::Body) -> Any)
where
    C: Workload;

impl<C> Runner for Whole<C>
where
    C: Workload + Clone + Send + Sync,
{
    fn run(&self, stop: &Arc<Stop>) -> Result<AnyResult, RunError> {
        once(self.0.clone(), stop, self.1, could_not_run)
    }
}

/// A setup target's round: its connections, an unresolvable target said as such.
struct SetupRound(npt_setup::Config);

impl Runner for SetupRound {
    fn run(&self, stop: &Arc<Stop>) -> Result<AnyResult, RunError> {
        use npt_setup::SetupError as E;
        once(self.0.clone(), stop, Any::Setup, |e| match e {
            E::Resolve(..) | E::NoAddress(_) => "resolve",
            E::Client(_) | E::Runtime(_) => "local",
        })
    }
}

impl Round for SetupRound {
    fn length(&self) -> Option<Length> {
        self.0.length()
    }
}

struct PingRound(npt_ping::Config);

impl Runner for PingRound {
    fn run(&self, stop: &Arc<Stop>) -> Result<AnyResult, RunError> {
        use npt_ping::PingError as E;
        let w = npt_ping::workload::Ping::new(self.0.clone(), |_, _| {});
        once(w, stop, Any::Ping, |e| match e {
            E::Resolve(..) | E::NoAddress(_) | E::Family(_) => "resolve",
            E::Auth(..) => "auth",
            E::Quic(_) => "tls",
            E::BadTarget(_) | E::BadIcmpTarget(_) => "config",
            E::Socket(_) | E::IcmpSocket(_) => "local",
        })
    }
}

/// An `icmp://HOST` ping target's round: the host's ICMP echo.
struct IcmpRound(npt_ping::icmp::IcmpConfig);

impl Runner for IcmpRound {
    fn run(&self, stop: &Arc<Stop>) -> Result<AnyResult, RunError> {
        use npt_ping::PingError as E;
        let w = npt_ping::icmp::IcmpPing::new(self.0.clone(), |_, _| {});
        once(w, stop, Any::Ping, |e| match e {
            E::Resolve(..) | E::NoAddress(_) | E::Family(_) => "resolve",
            E::BadIcmpTarget(_) => "config",
            _ => "local",
        })
    }
}

struct TraceRound(npt_trace::Config);

impl Runner for TraceRound {
    fn run(&self, stop: &Arc<Stop>) -> Result<AnyResult, RunError> {
        let w = npt_trace::workload::Trace::new(self.0.clone(), None, |_| {});
        once(w, stop, Any::Trace, could_not_run)
    }
}

/// An mtu round: the search, its errors classified.
struct MtuRound(npt_mtu::Config);

impl Runner for MtuRound {
    fn run(&self, stop: &Arc<Stop>) -> Result<AnyResult, RunError> {
        use npt_mtu::MtuError as E;
        once(self.0.clone(), stop, Any::Mtu, |e| match e {
            E::Resolve(_) => "resolve",
            E::Socket(_) => "local",
            E::Silent(_) => "timeout",
            E::Token(_) => "auth",
            E::Proxy(_) => "proxy",
        })
    }
}

impl Round for MtuRound {
    fn length(&self) -> Option<Length> {
        self.0.length()
    }
}

impl<C> Round for Whole<C>
where
    C: Workload + Clone + Send + Sync,
{
    fn length(&self) -> Option<Length> {
        self.0.length()
    }
}

impl Round for PingRound {
    fn length(&self) -> Option<Length> {
        npt_ping::workload::Ping::new(self.0.clone(), |_, _| {}).length()
    }
}

impl Round for IcmpRound {
    fn length(&self) -> Option<Length> {
        npt_ping::icmp::IcmpPing::new(self.0.clone(), |_, _| {}).length()
    }
}

impl Round for TraceRound {
    fn length(&self) -> Option<Length> {
        npt_trace::workload::Trace::new(self.0.clone(), None, |_| {}).length()
    }
}

#[cfg(test)]
mod tests;
