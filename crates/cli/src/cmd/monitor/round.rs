//! One target's round: its command line as the config file gives it, parsed by the very clap
//! definitions of `npt ping|probe|trace|http|bulk|lifetime|setup`, the monitor's defaults put on what the
//! parse says the target left out (a round of `length`, a ping every 200 ms, an http round of
//! one connection at 10 requests/s), checked by the subcommand's own validation into the
//! engine's config — whose length ([`Workload::length`]) is the round's — and the runner that
//! runs it in process.

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
        Check::Lifetime(_) | Check::Run(_) => {}
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
mod tests {
    use super::*;

    /// Each target of `file`: its round's command line and bound, or the error's text.
    fn rounds(file: &str) -> Result<Vec<(Vec<String>, Duration)>, String> {
        let plan = npt_monitor::config::parse(file, std::path::Path::new("."))
            .map_err(|e| e.to_string())?;
        plan.targets
            .iter()
            .map(|t| {
                target(t, &|e| usage!("{e}"))
                    .map(|(t, _)| (t.plan.argv, t.timeout))
                    .map_err(|e| e.to_string())
            })
            .collect()
    }

    fn argv(file: &str) -> Vec<Vec<String>> {
        rounds(file).unwrap().into_iter().map(|r| r.0).collect()
    }

    #[test]
    fn every_kind_gets_its_defaults_where_its_args_leave_them_out() {
        let a = argv(
            r#"
[[target]]
name = "direct"
target = "tcp://127.0.0.1:7777"
[[target]]
name = "relay-udp"
kind = "probe"
target = "udp://127.0.0.1:7777"
via = "socks5://127.0.0.1:1080"
every = "1s"
length = "500ms"
args = ["--pps", "200", "--loss-timeout", "300ms"]
[[target]]
name = "gw"
target = "https://gw.example/health"
[[target]]
name = "chain"
kind = "trace"
target = "tcp://127.0.0.1:7777"
hops = ["npt://127.0.0.1:7778"]
token = "S"
[[target]]
name = "capacity"
kind = "bulk"
target = "tcp://127.0.0.1:7777"
every = "1h"
budget = "2GB"
"#,
        );
        assert_eq!(
            a[0],
            ["ping", "tcp://127.0.0.1:7777", "-i", "200ms", "-c", "5"]
        );
        assert_eq!(
            a[1],
            [
                "probe",
                "udp://127.0.0.1:7777",
                "--duration",
                "500ms",
                "--via",
                "socks5://127.0.0.1:1080",
                "--pps",
                "200",
                "--loss-timeout",
                "300ms"
            ]
        );
        assert_eq!(
            a[2],
            [
                "http",
                "https://gw.example/health",
                "--duration",
                "1000ms",
                "-c",
                "1",
                "--rate",
                "10",
                "--timeout",
                "5s"
            ]
        );
        assert_eq!(
            a[3],
            [
                "trace",
                "tcp://127.0.0.1:7777",
                "-i",
                "200ms",
                "-c",
                "5",
                "--token",
                "S",
                "--hop",
                "npt://127.0.0.1:7778"
            ]
        );
        assert_eq!(
            a[4],
            ["bulk", "tcp://127.0.0.1:7777", "--duration", "5000ms"]
        );
    }

    fn ping(extra: &str) -> Result<Vec<String>, String> {
        rounds(&format!(
            "[[target]]\nname = \"a\"\ntarget = \"udp://127.0.0.1:7\"\n{extra}"
        ))
        .map(|r| r[0].0[2..].to_vec())
    }

    #[test]
    fn a_ping_round_is_its_length_in_attempts_unless_args_say() {
        assert_eq!(
            ping("length = \"2s\"").unwrap(),
            ["-i", "200ms", "-c", "10"]
        );
        assert_eq!(
            ping("length = \"2s\"\nargs = [\"-i\", \"500ms\"]").unwrap(),
            ["-c", "4", "-i", "500ms"]
        );
        assert_eq!(
            ping("args = [\"-c\", \"3\"]").unwrap(),
            ["-i", "200ms", "-c", "3"]
        );
        let e = ping("length = \"2s\"\nargs = [\"-c3\"]").unwrap_err();
        assert!(e.starts_with("target[0].length: give either"), "{e}");
    }

    /// The interval is read by clap, in every form it takes: the round is sized for it (a
    /// flag once seen as given by its text, `-i500ms`, had its value left unread: the round
    /// was sized for 200 ms, 10 attempts of 500 ms, 5 s, not 2 s).
    #[test]
    fn an_interval_in_any_form_sets_the_round_s_attempts() {
        for form in [
            r#""-i500ms""#,
            r#""-i", "500ms""#,
            r#""-i=500ms""#,
            r#""--interval=500ms""#,
            r#""--interval", "500ms""#,
        ] {
            let a = ping(&format!("length = \"2s\"\nargs = [{form}]")).unwrap();
            assert_eq!(a[..2], ["-c", "4"], "{form}");
        }
        // Given twice, it is refused as `npt ping` refuses it.
        let e = ping("args = [\"-i1s\", \"-i\", \"500ms\"]").unwrap_err();
        assert!(e.contains("cannot be used multiple times"), "{e}");
        let e = ping("length = \"2s\"\nargs = [\"-ifast\"]").unwrap_err();
        assert!(e.starts_with("target[0] (a).args: --interval"), "{e}");
    }

    #[test]
    fn a_loaded_probe_needs_a_budget_and_is_its_phases() {
        let under = "[[target]]\nname = \"u\"\nkind = \"probe\"\ntarget = \"udp://127.0.0.1:7\"\nevery = \"1m\"\nargs = [\"--under-load\", \"tcp://127.0.0.1:7\"]";
        let e = rounds(under).unwrap_err();
        assert!(e.starts_with("target[0].budget: missing"), "{e}");
        let r = rounds(&format!("{under}\nbudget = \"500MB\"")).unwrap();
        assert_eq!(
            r[0].0,
            [
                "probe",
                "udp://127.0.0.1:7",
                "--under-load",
                "tcp://127.0.0.1:7"
            ]
        );
        let e = rounds(&format!("{under}\nbudget = \"500MB\"\nlength = \"5s\"")).unwrap_err();
        assert!(
            e.starts_with("target[0].length: an --under-load round"),
            "{e}"
        );
    }

    /// A trace round's bound is its engine's: the attempts, and a hop agent's 8 s of connect and
    /// reply slack (left out before: a default round was bound at 8 s, and a hung agent's
    /// round timed out while the engine still waited for it).
    #[test]
    fn a_trace_round_is_bound_by_what_its_engine_may_take() {
        let r = rounds(
            "[[target]]\nname = \"t\"\nkind = \"trace\"\ntarget = \"tcp://127.0.0.1:7\"\nhops = [\"npt://127.0.0.1:8\"]\ntoken = \"S\"",
        )
        .unwrap();
        // 5 attempts 200 ms apart + 1 s timeout = 2 s, + 8 s slack = 10 s; × 1.5 + 5 s.
        assert_eq!(r[0].1, Duration::from_secs(20));
        // `every` is checked against the plan (2 s), not the slack: a 5 s schedule still fits.
        let r = rounds(
            "every = \"5s\"\n[[target]]\nname = \"t\"\nkind = \"trace\"\ntarget = \"tcp://127.0.0.1:7\"\nhops = [\"npt://127.0.0.1:8\"]\ntoken = \"S\"",
        );
        assert!(r.is_ok(), "{r:?}");
    }

    /// A lifetime round is its search: `--max` in its args (120 s unless given), bounded by
    /// the search's length; its `every` must leave room for the ladder and one round inside
    /// the bracket, and `length` is refused.
    #[test]
    fn a_lifetime_round_is_its_search() {
        let r = rounds(
            r#"
[[target]]
name = "nat"
kind = "lifetime"
target = "udp://127.0.0.1:7777"
every = "1h"
via = "socks5://127.0.0.1:1080"
args = ["--max", "40s"]
"#,
        )
        .unwrap();
        assert_eq!(
            r[0].0,
            [
                "lifetime",
                "udp://127.0.0.1:7777",
                "--via",
                "socks5://127.0.0.1:1080",
                "--max",
                "40s"
            ]
        );
        let longest = npt_lifetime::workload::length(Duration::from_secs(40)).longest();
        assert_eq!(r[0].1, longest + longest / 2 + GRACE);
        let short = rounds(
            "[[target]]\nname = \"nat\"\nkind = \"lifetime\"\ntarget = \"udp://h:1\"\nevery = \"1m\"\n",
        )
        .unwrap_err();
        assert!(short.contains("every"), "{short}");
        let length = rounds(
            "[[target]]\nname = \"nat\"\nkind = \"lifetime\"\ntarget = \"udp://h:1\"\nevery = \"1h\"\nlength = \"5s\"\n",
        )
        .unwrap_err();
        assert!(length.contains("--max"), "{length}");
    }

    /// A setup round is its connections: 5 of up to 1 s unless its args say (6 s, inside the
    /// default every of 10 s), bounded by its engine's length; `length` is refused.
    #[test]
    fn a_setup_round_is_its_connections() {
        let t = "[[target]]\nname = \"s\"\nkind = \"setup\"\ntarget = \"https://h:1\"\n";
        let r = rounds(t).unwrap();
        assert_eq!(
            r[0].0,
            ["setup", "https://h:1", "-c", "5", "--timeout", "1s"]
        );
        let longest = npt_setup::workload::length(5, Duration::from_secs(1)).longest();
        assert_eq!(r[0].1, longest + longest / 2 + GRACE);
        let own = rounds(&format!("{t}args = [\"-c\", \"20\"]")).unwrap_err();
        assert!(
            own.contains("fewer connections (-c)"),
            "21 s of plan in 10 s: {own}"
        );
        let length = rounds(&format!("{t}length = \"5s\"")).unwrap_err();
        assert!(length.contains("-c and --timeout"), "{length}");
    }
}
