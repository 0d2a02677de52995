//! From a scenario to the command line of its child: the workload's flags, the scenario's own,
//! its target and proxy — checked by parsing them with the very clap definitions of `npt probe`,
//! `run`, `http`, `ping`, `bulk`, `trace`, `lifetime`, `mtu` and `setup`, so a bad flag is refused before anything runs,
//! naming the scenario.
//! The same parse gives the run's expected length — the engine's, of the figures the flags give
//! — from which each child's time bound is derived. `npt monitor` parses its targets' rounds
//! with the same [`Check`] (and bounds them by the engine's config itself).
#![deny(clippy::indexing_slicing)] // parses a user-written scenario file: see `[workspace.lints]`

use std::time::Duration;

use clap::Parser;
use npt_result::workload::Length;

use super::scenarios::{Scenario, ScenarioError, ScenarioSet};
use crate::cmd::bulk::BulkArgs;
use crate::cmd::http::HttpArgs;
use crate::cmd::lifetime::LifetimeArgs;
use crate::cmd::mtu::MtuArgs;
use crate::cmd::ping::PingArgs;
use crate::cmd::probe::ProbeArgs;
use crate::cmd::run::RunArgs;
use crate::cmd::setup::SetupArgs;
use crate::cmd::trace::TraceArgs;
use crate::usage::parse_duration;

/// One scenario's child command line (without `--json`, added per run) and its time bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub argv: Vec<String>,
    pub timeout: Duration,
}

/// The workloads, parsed exactly as `npt KIND …` parses them.
// Parsed once per scenario: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Parser, Debug)]
#[command(name = "npt", no_binary_name = true)]
pub enum Check {
    Probe(ProbeArgs),
    Run(RunArgs),
    Http(HttpArgs),
    Ping(PingArgs),
    Bulk(BulkArgs),
    Trace(TraceArgs),
    Lifetime(LifetimeArgs),
    Mtu(MtuArgs),
    Setup(SetupArgs),
}

/// Added to every bound: process start-up, connecting, writing the result.
const GRACE: Duration = Duration::from_secs(15);

fn err(field: &str, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid {
        field: field.to_string(),
        msg: msg.into(),
    }
}

/// How long a run of these flags takes at most, before the grace: what its engine says of
/// the figures its flags give ([`Workload::length`]'s arithmetic, `npt_probe`'s, `npt_ping`'s
/// …), read here without resolving the target (a child may run where only it can).
///
/// [`Workload::length`]: npt_result::workload::Workload::length
pub fn expected(check: &Check) -> Result<Length, String> {
    let text = |e: anyhow::Error| e.to_string();
    Ok(match check {
        Check::Probe(a) => {
            let pacing = crate::cmd::probe::pacing(a, None).map_err(text)?;
            let phases = match &a.load.under_load {
                Some(_) => {
                    let p = crate::cmd::probe::phases(&a.load).map_err(text)?;
                    Some(p.iter().fold(Duration::ZERO, |t, d| t.saturating_add(*d)))
                }
                None => None,
            };
            let duration = a.duration.duration.or(phases);
            npt_probe::length(a.count, duration, &pacing, a.loss_timeout)
                .ok_or("probe needs --count or --duration: a scenario must end by itself")?
        }
        Check::Run(a) => npt_users::workload::length(a.ramp_up, a.duration.get(), a.timeout),
        Check::Http(a) => {
            let ready = a.cold_start.as_ref().map(|_| a.ready_timeout);
            npt_http::workload::length(ready, a.duration.get(), a.timeout)
        }
        Check::Ping(a) => {
            if a.count == 0 {
                return Err("ping needs a --count above 0: a scenario must end by itself".into());
            }
            let (i, t) = a.timing.durations().map_err(text)?;
            npt_ping::workload::length(Some(a.count), i, t).ok_or("ping needs a --count above 0")?
        }
        Check::Bulk(a) => {
            let d = a.duration.get();
            let t = parse_duration(&a.timeout).map_err(|e| format!("--timeout: {e}"))?;
            npt_bulk::workload::length(d, t)
        }
        // Every leg is measured at once, each `count` attempts `interval` apart.
        Check::Trace(a) => {
            if a.count == 0 {
                return Err("trace needs a --count above 0".into());
            }
            if a.during.is_some() {
                return Err("--during runs until its command ends".into());
            }
            let (i, t) = a.timing.durations().map_err(text)?;
            let mut l = npt_trace::workload::length(a.count, i, t);
            // After the first round: each segment's MTU search, its marking read.
            if a.mtu {
                let search = crate::flags::timing::positive("--mtu-timeout", &a.mtu_timeout);
                l.planned = l.planned.saturating_add(search.map_err(text)?);
            }
            if a.source.marking.tos().map_err(text)?.is_some() {
                l.planned = l.planned.saturating_add(npt_trace::marks::read_time(t));
            }
            l
        }
        Check::Lifetime(a) => npt_lifetime::workload::length(a.max),
        Check::Mtu(a) => npt_mtu::workload::length(a.timeout, a.auth.token.is_some()),
        Check::Setup(a) => npt_setup::workload::length(a.count, a.timeout),
    })
}

/// The child command line of scenario `i` and its bound.
pub fn plan(set: &ScenarioSet, i: usize) -> Result<Planned, ScenarioError> {
    let s: &Scenario = set
        .scenario
        .get(i)
        .ok_or_else(|| err(&format!("scenario[{i}]"), "no such scenario"))?;
    let field = format!("scenario[{i}] ({})", s.name);
    let kind = set.workload.kind;
    let mut argv = vec![kind.name().to_string(), s.target.clone()];
    argv.extend(set.workload.args.iter().cloned());
    argv.extend(s.args.iter().cloned());
    if let Some(v) = &s.via {
        // A probe's or bulk's UDP targets: udp:// and STAMP's framing of it, stamp://.
        let target = s.target.to_ascii_lowercase();
        let udp = matches!(kind.name(), "probe" | "bulk")
            && (target.starts_with("udp:") || target.starts_with("stamp:"));
        crate::flags::via::ViaArgs {
            via: Some(v.clone()),
            via_user: None,
        }
        .resolve(udp)
        .map_err(|e| err(&format!("scenario[{i}].via"), e.to_string()))?;
        argv.extend(["--via".to_string(), v.clone()]);
    }
    argv.push("-q".into());
    let check = Check::try_parse_from(&argv).map_err(|e| {
        // clap's first line, and its "did you mean" tip when it has one (as on the command line).
        let text = e.to_string();
        let mut lines = text.lines();
        let first = lines.next().unwrap_or("").trim_start_matches("error: ");
        let tip = lines
            .map(str::trim)
            .find_map(|l| l.strip_prefix("tip: "))
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        err(&field, format!("workload.args + args: {first}{tip}"))
    })?;
    let timeout = match &set.workload.timeout {
        Some(t) => parse_duration(t).map_err(|e| err("workload.timeout", e))?,
        None => {
            let e = expected(&check)
                .map_err(|m| err("workload.args", m))?
                .longest();
            e.saturating_add(e / 2).saturating_add(GRACE)
        }
    };
    Ok(Planned { argv, timeout })
}

#[cfg(test)]
mod tests {
    use super::super::scenarios::parse_scenarios;
    use super::*;

    fn set(kind: &str, args: &str, extra: &str) -> ScenarioSet {
        parse_scenarios(&format!(
            "[workload]\nkind = \"{kind}\"\nargs = [{args}]\n[[scenario]]\nname = \"a\"\n\
             target = \"udp://127.0.0.1:9\"\n{extra}"
        ))
        .unwrap()
    }

    fn secs(kind: &str, args: &str) -> f64 {
        plan(&set(kind, args, ""), 0).unwrap().timeout.as_secs_f64()
    }

    #[test]
    fn bounds_follow_the_workload() {
        // 500 packets at 100 pps: 5 s, + 1 s loss timeout = 6 s; × 1.5 + 15 s grace.
        assert_eq!(secs("probe", r#""-n", "500""#), 6.0 * 1.5 + 15.0);
        // interval mode: 100 × 20 ms = 2 s + 1 s.
        assert_eq!(
            secs(
                "probe",
                r#""-n", "100", "--mode", "interval", "--interval", "20ms""#
            ),
            3.0 * 1.5 + 15.0
        );
        // ping-pong: every packet may wait its loss timeout.
        assert_eq!(
            secs(
                "probe",
                r#""-n", "10", "--ping-pong", "--loss-timeout", "200ms""#
            ),
            2.2 * 1.5 + 15.0
        );
        // run: ramp-up + duration + request timeout.
        assert_eq!(
            secs("run", r#""-d", "10s", "--ramp-up", "2s""#),
            22.0 * 1.5 + 15.0
        );
        assert_eq!(
            secs("http", r#""-d", "4s", "--timeout", "2s""#),
            6.0 * 1.5 + 15.0
        );
        assert_eq!(
            secs("ping", r#""-c", "4", "-i", "500ms""#),
            3.0 * 1.5 + 15.0
        );
        // trace: 5 attempts 200 ms apart + 1 s timeout, and the hop agent's 8 s of connect
        // and reply slack the engine may add (left out before: 2 s, not 10 s).
        assert_eq!(
            secs(
                "trace",
                r#""-c", "5", "-i", "200ms", "--hop", "npt://127.0.0.1:8""#
            ),
            10.0 * 1.5 + 15.0
        );
        // … and each segment's MTU search (2 s) and marking read (3 s handshake + 20 echoes
        // 10 ms apart + 1 s timeout) after the first round.
        assert_eq!(
            secs(
                "trace",
                r#""-c", "5", "-i", "200ms", "--hop", "npt://127.0.0.1:8", "--mtu",
                   "--mtu-timeout", "2s", "--dscp", "46""#
            ),
            16.2 * 1.5 + 15.0
        );
        // setup: every attempt and the ticket's to its timeout.
        assert_eq!(
            secs("setup", r#""-c", "4", "--timeout", "2s""#),
            10.0 * 1.5 + 15.0
        );
        // mtu: its search's bound, and with --token a handshake's.
        assert_eq!(secs("mtu", r#""--timeout", "5s""#), 5.0 * 1.5 + 15.0);
        assert_eq!(
            secs("mtu", r#""--timeout", "5s", "--token", "t""#),
            8.0 * 1.5 + 15.0
        );
        // under load: 5 s idle + 10 s loaded + 5 s recovery + 1 s loss timeout.
        assert_eq!(
            secs("probe", r#""--under-load", "tcp://127.0.0.1:9""#),
            21.0 * 1.5 + 15.0
        );
        let p = plan(&set("ping", r#""-c", "4""#, ""), 0).unwrap();
        assert_eq!(p.argv, ["ping", "udp://127.0.0.1:9", "-c", "4", "-q"]);
        let mut s = set("probe", "", "");
        s.workload.timeout = Some("90s".into());
        assert_eq!(plan(&s, 0).unwrap().timeout, Duration::from_secs(90));
    }

    #[test]
    fn the_example_scenario_files_are_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/compare");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let set = parse_scenarios(&std::fs::read_to_string(&p).unwrap())
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                super::super::scenarios::validate(&set, super::super::scenarios::Purpose::Compare)
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                for i in 0..set.scenario.len() {
                    plan(&set, i).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                }
                n += 1;
            }
        }
        assert!(n >= 2, "examples found: {n}");
    }

    #[test]
    fn a_flag_given_twice_is_refused_before_running() {
        let e = plan(&set("probe", r#""-n", "5""#, "args = [\"-n\", \"6\"]"), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be used multiple times"), "{e}");
    }

    #[test]
    fn bad_flags_and_endless_workloads_are_refused_naming_the_scenario() {
        let e = plan(&set("probe", r#""--cuont", "5""#, ""), 0)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("scenario[0] (a): workload.args + args:"),
            "{e}"
        );
        assert!(e.contains("--cuont"), "{e}");
        let e = plan(&set("probe", r#""--duraton", "5s""#, ""), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a similar argument exists: '--duration'"), "{e}");
        let e = plan(&set("probe", "", ""), 0).unwrap_err().to_string();
        assert!(e.contains("needs --count or --duration"), "{e}");
        let e = plan(&set("ping", r#""-c", "0""#, ""), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--count above 0"), "{e}");
        let e = plan(&set("probe", r#""-n", "5""#, "via = \"http://p:3128\""), 0)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("scenario[0].via:"), "{e}");
        assert!(e.contains("cannot carry UDP"), "{e}");
        let p = plan(
            &set("probe", r#""-n", "5""#, "via = \"socks5://p:1080\""),
            0,
        )
        .unwrap();
        assert_eq!(&p.argv[3..], ["5", "--via", "socks5://p:1080", "-q"]);
    }

    /// A STAMP probe is UDP: an HTTP proxy cannot carry it, as for udp://.
    #[test]
    fn a_stamp_target_through_an_http_proxy_is_refused() {
        let mut s = set("probe", r#""-n", "5""#, "via = \"http://p:3128\"");
        s.scenario[0].target = "stamp://127.0.0.1:862".into();
        let e = plan(&s, 0).unwrap_err().to_string();
        assert!(
            e.starts_with("scenario[0].via:") && e.contains("cannot carry UDP"),
            "{e}"
        );
    }

    /// Crafted scenario files that once panicked or gave a wrong bound: a packet count whose
    /// length at a tiny rate overflows a `Duration`, and counts past `u32::MAX` (cut to their
    /// low 32 bits, so the child was killed long before its end).
    #[test]
    fn huge_counts_give_a_long_bound_not_a_panic() {
        let endless = secs("probe", r#""-n", "18446744073709551615", "--pps", "0.001""#);
        assert!(endless > 1e18, "{endless}");
        // 2^32 + 1 packets 1 ms apart: ~50 days, not 1 ms.
        let long = secs(
            "probe",
            r#""-n", "4294967297", "--mode", "interval", "--interval", "1ms""#,
        );
        assert!(long > 4_294_967.0, "{long}");
        let long = secs("ping", r#""-c", "4294967297", "-i", "1ms""#);
        assert!(long > 4_294_967.0, "{long}");
        let long = secs(
            "probe",
            r#""-n", "4294967297", "--ping-pong", "--loss-timeout", "1000000000s""#,
        );
        assert!(long > 4e18, "{long}");
    }
}
