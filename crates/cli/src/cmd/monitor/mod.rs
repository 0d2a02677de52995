//! `npt monitor [CONFIG.toml]` (or `--target URL … --every 10s`): every target watched on its
//! schedule, until stopped. The monitor itself is `npt-monitor`; here each target's round is
//! made out of its flags — parsed by the very clap definitions of `npt ping|probe|trace|http|
//! bulk` and checked by their own validation (as `npt compare` checks its scenarios), so a bad
//! flag is exit 2 naming the target's key before anything runs — and run in process as that
//! workload runs from its own subcommand ([`crate::execute::document`] makes the document).
//!
//! SIGHUP reads the file again: a config with an error is refused (the message names the key)
//! and the running one stays. Ctrl-C or SIGTERM lets the rounds in flight end and be stored;
//! a second one abandons them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Args;
use npt_monitor::config::{self, ConfigError, Plan};
use npt_monitor::Setup;
use npt_result::workload::Stop;

use crate::usage;

mod round;

#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// The monitor's config file (TOML: targets, alerts, store, listener; see docs/monitor.md).
    #[arg(value_name = "CONFIG")]
    pub config: Option<PathBuf>,
    /// A target to watch, without a config file: tcp:// or udp:// (ping), quic:// or
    /// http(s):// URL (repeat for several).
    #[arg(long = "target", value_name = "URL", conflicts_with = "config")]
    pub targets: Vec<String>,
    /// Without a config file: one round of each target every DUR [default: 10s].
    #[arg(long, value_name = "DUR", conflicts_with = "config")]
    pub every: Option<String>,
    /// The SQLite store [default: the config's `store`, or npt-monitor.db].
    #[arg(long, value_name = "FILE")]
    pub store: Option<PathBuf>,
    /// Serve the dashboard and /metrics on ADDR (e.g. 127.0.0.1:9600).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// The token clients of a non-loopback --listen must send.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "NPT_MONITOR_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// This monitor's name in the store, the page and every metric [default: the host name].
    #[arg(long, value_name = "NAME")]
    pub vantage: Option<String>,
    /// Check the config and print each target's round, then exit.
    #[arg(long)]
    pub check: bool,
}

fn key_err(e: ConfigError) -> anyhow::Error {
    usage!("{e}")
}

/// The file (or the quick form) with the command line's settings over it, checked.
fn plan(a: &MonitorArgs) -> anyhow::Result<Plan> {
    let mut file = match &a.config {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| usage!("{}: {e}", p.display()))?;
            toml::from_str::<config::File>(&text).map_err(|e| usage!("{}: {e}", p.display()))?
        }
        None => config::quick(&a.targets, a.every.as_deref()).map_err(key_err)?,
    };
    if let Some(s) = &a.store {
        file.store = Some(s.display().to_string());
    }
    if let Some(l) = &a.listen {
        file.listen = Some(l.clone());
    }
    if let Some(t) = &a.token {
        file.token = Some(t.clone());
    }
    if let Some(v) = &a.vantage {
        file.vantage = Some(v.clone());
    }
    let dir = match &a.config {
        Some(p) => p.parent().map(PathBuf::from).unwrap_or_default(),
        None => PathBuf::from("."),
    };
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    };
    config::check(file, &dir).map_err(|e| file_err(a, e))
}

/// An error of the file (or the quick form), as the user reads it: the file's name first.
fn file_err(a: &MonitorArgs, e: ConfigError) -> anyhow::Error {
    match &a.config {
        Some(p) => usage!("{}: {e}", p.display()),
        None => key_err(e),
    }
}

/// Every target's round, built from its flags.
fn build(a: &MonitorArgs) -> anyhow::Result<(Setup, Vec<String>)> {
    let plan = plan(a)?;
    let mut notices = Vec::new();
    let mut targets = Vec::with_capacity(plan.targets.len());
    for t in &plan.targets {
        let (target, n) = round::target(t, &|e| file_err(a, e))?;
        notices.extend(n.into_iter().map(|m| format!("{}: {m}", t.key)));
        targets.push(target);
    }
    Ok((Setup { plan, targets }, notices))
}

pub fn run(a: MonitorArgs) -> anyhow::Result<ExitCode> {
    let (setup, notices) = build(&a)?;
    for n in &notices {
        eprintln!("npt monitor: {n}");
    }
    let p = &setup.plan;
    if a.check {
        println!(
            "npt monitor {}: {} targets, {} alert rules, store {}{}",
            p.vantage,
            setup.targets.len(),
            p.alerts.len(),
            p.store.display(),
            p.listen.map_or(String::new(), |l| format!(", listen {l}"))
        );
        for t in &setup.targets {
            println!(
                "  {:<20} every {:?}, bound {:?}: npt {}",
                t.plan.name,
                t.plan.every,
                t.timeout,
                t.plan
                    .argv
                    .iter()
                    .map(|a| if a.contains(' ') {
                        format!("{a:?}")
                    } else {
                        a.clone()
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let path = p.store.clone();
    let mut store = npt_monitor::store::sqlite::Sqlite::open(&path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if let Some(m) = store.migrated() {
        eprintln!("npt monitor: store {}: {m}", path.display());
    }
    npt_monitor::store::Store::set_meta(&mut store, "vantage", &p.vantage)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let stop = Arc::new(Stop::new());
    crate::execute::signals::install(&stop)?;
    let hup = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, hup.clone())?;
    eprintln!(
        "npt monitor {}: {} targets, store {}",
        p.vantage,
        setup.targets.len(),
        path.display()
    );
    let reload: Option<npt_monitor::Reload> = a.config.as_ref().map(|_| {
        let args = MonitorArgs {
            config: a.config.clone(),
            targets: Vec::new(),
            every: None,
            store: a.store.clone(),
            listen: a.listen.clone(),
            token: a.token.clone(),
            vantage: a.vantage.clone(),
            check: false,
        };
        Box::new(move || {
            let (s, notices) = build(&args).map_err(|e| e.to_string())?;
            for n in notices {
                eprintln!("npt monitor: {n}");
            }
            Ok(s)
        }) as npt_monitor::Reload
    });
    let reader = Arc::new(npt_monitor::server::SqliteFile(path));
    npt_monitor::run(
        setup,
        Box::new(store),
        reader,
        npt_monitor::Control {
            stop,
            hup,
            reload,
            log: Arc::new(|m: &str| eprintln!("{m}")),
        },
    )?;
    eprintln!("npt monitor: stopped");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use npt_result::any::AnyBody as Any;

    use super::*;

    fn args(config: &str) -> (tempfile::TempDir, MonitorArgs) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.toml");
        std::fs::write(&p, config).unwrap();
        let a = MonitorArgs {
            config: Some(p),
            targets: vec![],
            every: None,
            store: None,
            listen: None,
            token: None,
            vantage: None,
            check: false,
        };
        (dir, a)
    }

    fn err(config: &str) -> String {
        let (_d, a) = args(config);
        crate::usage::testing::usage_msg(build(&a).map(|_| ()))
    }

    #[test]
    fn every_kind_of_target_builds_its_round() {
        let (_d, a) = args(
            r#"
[[target]]
name = "p"
target = "udp://127.0.0.1:9"
[[target]]
name = "u"
kind = "probe"
target = "udp://127.0.0.1:9"
args = ["--pps", "50", "--loss-timeout", "200ms"]
every = "2s"
[[target]]
name = "h"
target = "http://127.0.0.1:9/"
[[target]]
name = "b"
kind = "bulk"
target = "tcp://127.0.0.1:9"
length = "2s"
every = "1h"
budget = "1GB"
[[target]]
name = "t"
kind = "trace"
target = "tcp://127.0.0.1:9"
hops = ["npt://127.0.0.1:8"]
token = "S"
"#,
        );
        let (s, _) = build(&a).unwrap();
        assert_eq!(s.targets.len(), 5);
        // ping: 5 attempts 200 ms apart + 1 s timeout = 2 s; × 1.5 + 5 s.
        assert_eq!(s.targets[0].timeout, Duration::from_secs(8));
        // probe: 1 s + 200 ms loss timeout.
        assert_eq!(s.targets[1].timeout, Duration::from_millis(1800 + 5000));
        assert_eq!(
            s.plan.store,
            a.config.unwrap().parent().unwrap().join("npt-monitor.db")
        );
    }

    #[test]
    fn an_icmp_ping_target_runs_the_host_s_echo() {
        let (_d, a) = args(
            "[[target]]\nname = \"i\"\ntarget = \"icmp://127.0.0.1\"\nargs = [\"-c\", \"2\", \"-i\", \"20ms\"]\n",
        );
        let (s, _) = build(&a).unwrap();
        assert_eq!(s.targets[0].plan.kind, npt_monitor::kinds::Kind::Ping);
        assert!(err("[[target]]\nname = \"i\"\ntarget = \"icmp://h:7\"\n").contains("icmp://HOST"));
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return; // a raw socket needs root, a datagram one the group in ping_group_range
        }
        let r = s.targets[0].runner.run(&Arc::new(Stop::new())).unwrap();
        let Any::Ping(b) = &r.body else {
            panic!("a ping round")
        };
        assert_eq!((b.proto.as_str(), b.summary.received), ("icmp", 2));
    }

    #[test]
    fn the_example_configs_are_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monitor");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let a = MonitorArgs {
                    config: Some(p.clone()),
                    targets: vec![],
                    every: None,
                    store: None,
                    listen: None,
                    token: None,
                    vantage: None,
                    check: true,
                };
                let (s, _) = build(&a).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                assert!(!s.targets.is_empty());
                n += 1;
            }
        }
        assert!(n >= 2, "examples found: {n}");
    }

    #[test]
    fn bad_flags_name_the_target() {
        let e =
            err("[[target]]\nname = \"a\"\ntarget = \"udp://h:1\"\nargs = [\"--cuont\", \"3\"]");
        assert!(
            e.contains("target[0] (a).args:") && e.contains("--cuont"),
            "{e}"
        );
        let e = err("[[target]]\nname = \"a\"\ntarget = \"udp://h:1\"\nargs = [\"--size\", \"3\"]");
        assert!(e.contains("target[0] (a).args: --size"), "{e}");
        let e = err("[[target]]\nname = \"a\"\nkind = \"probe\"\ntarget = \"udp://127.0.0.1:1\"\nevery = \"1s\"");
        assert!(
            e.contains("target[0] (a).every: a round takes up to"),
            "{e}"
        );
        let e = err("[[target]]\nname = \"a\"\ntarget = \"udp://h:1\"\nevery = \"5 parsecs\"");
        assert!(e.contains("target[0].every"), "{e}");
    }
}
