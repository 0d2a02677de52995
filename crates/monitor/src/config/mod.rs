//! The monitor's config file (TOML) and its quick form (`--target URL --every 10s`), parsed
//! and checked into a [`Plan`]. Every error names its key (`target[2].every: …`), as `npt
//! compare` and `npt lab` name theirs; unknown keys are refused (a typo must not silently drop
//! a setting). A target's workload flags are checked by the cli, which parses the round's
//! command line ([`TargetPlan::argv`]) with the very clap definitions of `npt ping|probe|…`.
//!
//! ```toml
//! vantage = "hk-1"                 # this monitor's name [default: the host name]
//! store = "monitor.db"             # SQLite file, relative to this file [default: npt-monitor.db]
//! listen = "127.0.0.1:9600"        # dashboard and /metrics [default: none]
//! token = "…"                      # required unless listen is a loopback address
//! every = "10s"                    # defaults for the targets below
//! [retention]                      # how long each level is kept
//! rounds = "2d"
//! minute = "14d"
//! hour = "400d"
//! day = "10y"
//! [limits]                         # rounds of a kind running at once
//! ping = 256
//! [[target]]
//! name = "relay-udp"
//! kind = "probe"                   # ping | probe | trace | http | bulk [default: ping; http for http(s)://]
//! target = "udp://relay:7777"
//! every = "10s"                    # one round every …
//! length = "1s"                    # … lasting this long (the workload's own duration or count)
//! jitter = "1s"                    # a random delay of the start, up to this
//! timeout = "20s"                  # hard bound of a round [default: from the workload's flags]
//! via = "socks5://127.0.0.1:1080"
//! token = "S"
//! args = ["--pps", "200"]          # any other flag of `npt probe`
//! group = "line-a"                 # overlaid on one chart with the rest of its group
//! budget = "2GB"                   # bytes per day (bulk and --under-load targets need one)
//! [[alert]]                        # see crate::alert
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use crate::alert::AlertFile;
use crate::alert::Rule;
pub use crate::key::{bytes, duration, ConfigError};
use crate::key::{invalid, positive};
use crate::kinds::Kind;
pub use crate::notify::NotifyFile;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub vantage: Option<String>,
    pub store: Option<String>,
    pub listen: Option<String>,
    pub token: Option<String>,
    pub every: Option<String>,
    pub length: Option<String>,
    pub jitter: Option<String>,
    #[serde(default)]
    pub retention: RetentionFile,
    #[serde(default)]
    pub limits: LimitsFile,
    #[serde(default)]
    pub target: Vec<TargetFile>,
    #[serde(default)]
    pub alert: Vec<AlertFile>,
    #[serde(default)]
    pub notify: NotifyFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionFile {
    pub rounds: Option<String>,
    pub minute: Option<String>,
    pub hour: Option<String>,
    pub day: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    pub ping: Option<u32>,
    pub probe: Option<u32>,
    pub trace: Option<u32>,
    pub http: Option<u32>,
    pub bulk: Option<u32>,
    /// Rounds kept in memory while the store cannot be written.
    pub backlog: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    pub name: String,
    pub kind: Option<Kind>,
    pub target: String,
    pub every: Option<String>,
    pub length: Option<String>,
    pub jitter: Option<String>,
    pub timeout: Option<String>,
    pub via: Option<String>,
    pub token: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    pub group: Option<String>,
    pub budget: Option<String>,
    /// trace: the relays' hop agents, in order (`--hop`).
    #[serde(default)]
    pub hops: Vec<String>,
    /// trace: the chain's entry (`--through`).
    pub through: Option<String>,
}

/// How long each level of the store is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    pub rounds: Duration,
    pub minute: Duration,
    pub hour: Duration,
    pub day: Duration,
}

impl Default for Retention {
    fn default() -> Retention {
        const DAY: u64 = 86_400;
        Retention {
            rounds: Duration::from_secs(2 * DAY),
            minute: Duration::from_secs(14 * DAY),
            hour: Duration::from_secs(400 * DAY),
            day: Duration::from_secs(10 * 365 * DAY),
        }
    }
}

/// Rounds of each kind that may run at once, and the in-memory backlog's bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub ping: u32,
    pub probe: u32,
    pub trace: u32,
    pub http: u32,
    pub bulk: u32,
    pub backlog: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            ping: 256,
            probe: 32,
            trace: 32,
            http: 16,
            bulk: 1,
            backlog: 100_000,
        }
    }
}

impl Limits {
    pub fn of(&self, k: Kind) -> u32 {
        match k {
            Kind::Ping => self.ping,
            Kind::Probe => self.probe,
            Kind::Trace => self.trace,
            Kind::Http => self.http,
            Kind::Bulk => self.bulk,
        }
    }
}

/// One target, checked: what a round runs and when.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetPlan {
    pub name: String,
    pub kind: Kind,
    /// The URL as written.
    pub url: String,
    pub every: Duration,
    pub jitter: Duration,
    /// Given in the file; else the cli derives it from the workload's flags.
    pub timeout: Option<Duration>,
    pub group: Option<String>,
    /// Bytes per day a heavy target may move.
    pub budget: Option<u64>,
    /// The round's command line as `npt KIND …` takes it (without `npt`).
    pub argv: Vec<String>,
    /// Where in the file it is, for messages: `target[2] (relay-udp)`.
    pub key: String,
}

/// The whole config, checked.
#[derive(Clone, Debug)]
pub struct Plan {
    pub vantage: String,
    pub store: PathBuf,
    pub listen: Option<SocketAddr>,
    pub token: Option<String>,
    pub retention: Retention,
    pub limits: Limits,
    pub targets: Vec<TargetPlan>,
    pub alerts: Vec<Rule>,
    pub notify: NotifyFile,
}

/// The defaults a quick form or a file gives every target.
#[derive(Clone, Debug)]
struct Defaults {
    every: Duration,
    length: Option<Duration>,
    jitter: Duration,
}

/// Reads and checks a config file; relative paths in it are taken from its directory.
pub fn load(path: &Path) -> Result<Plan, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid(path.display().to_string(), e.to_string()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse(&text, dir)
}

/// Parses and checks config text; `dir` is where relative paths start.
pub fn parse(text: &str, dir: &Path) -> Result<Plan, ConfigError> {
    let f: File = toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
    check(f, dir)
}

/// The quick form: `--target URL` (repeatable) with `--every`, the store and listener given.
pub fn quick(urls: &[String], every: Option<&str>) -> Result<File, ConfigError> {
    if urls.is_empty() {
        return Err(invalid(
            "--target",
            "give a config file or at least one --target URL",
        ));
    }
    Ok(File {
        every: every.map(str::to_string),
        target: urls
            .iter()
            .map(|u| TargetFile {
                name: u.clone(),
                target: u.clone(),
                ..TargetFile::default()
            })
            .collect(),
        ..File::default()
    })
}

/// Checks a parsed file.
pub fn check(f: File, dir: &Path) -> Result<Plan, ConfigError> {
    let defaults = Defaults {
        every: match &f.every {
            Some(s) => positive("every", s)?,
            None => Duration::from_secs(10),
        },
        length: f
            .length
            .as_deref()
            .map(|s| positive("length", s))
            .transpose()?,
        jitter: match &f.jitter {
            Some(s) => duration("jitter", s)?,
            None => Duration::ZERO,
        },
    };
    let listen = f
        .listen
        .as_deref()
        .map(|s| {
            s.parse::<SocketAddr>()
                .map_err(|e| invalid("listen", format!("{s:?}: {e} (e.g. 127.0.0.1:9600)")))
        })
        .transpose()?;
    if matches!(&f.token, Some(t) if t.trim().is_empty()) {
        return Err(invalid("token", "must not be empty"));
    }
    if let Some(a) = listen {
        if !a.ip().is_loopback() && f.token.is_none() {
            return Err(invalid(
                "token",
                format!(
                    "missing: the dashboard on {a} is reachable from other hosts; give a token \
                     (clients send `Authorization: Bearer TOKEN` or ?token=TOKEN)"
                ),
            ));
        }
    }
    if f.target.is_empty() {
        return Err(invalid("target", "no [[target]] in the file"));
    }
    let mut names = std::collections::BTreeSet::new();
    let mut targets = Vec::with_capacity(f.target.len());
    for (i, t) in f.target.iter().enumerate() {
        let tp = target(i, t, &defaults)?;
        if !names.insert(tp.name.clone()) {
            return Err(invalid(
                format!("target[{i}].name"),
                format!("{:?} is used twice", tp.name),
            ));
        }
        targets.push(tp);
    }
    let mut alerts = Vec::with_capacity(f.alert.len());
    let mut rule_names = std::collections::BTreeSet::new();
    for (i, a) in f.alert.iter().enumerate() {
        let r = crate::alert::rule(i, a)?;
        if !rule_names.insert(r.name.clone()) {
            return Err(invalid(
                format!("alert[{i}].name"),
                format!("{:?} is used twice", r.name),
            ));
        }
        for (j, pat) in a.targets.iter().enumerate() {
            if !targets.iter().any(|t| crate::alert::glob(pat, &t.name)) {
                return Err(invalid(
                    format!("alert[{i}].targets[{j}]"),
                    format!("{pat:?} matches no target"),
                ));
            }
        }
        alerts.push(r);
    }
    if let Some(w) = &f.notify.webhook {
        crate::notify::Webhook::parse(w).map_err(|e| invalid("notify.webhook", e))?;
    }
    if matches!(f.notify.command.first(), Some(c) if c.trim().is_empty()) {
        return Err(invalid("notify.command", "the program name is empty"));
    }
    for k in f.notify.headers.keys() {
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(invalid(format!("notify.headers.{k}"), "not a header name"));
        }
    }
    let r = &f.retention;
    let base = Retention::default();
    let keep = |k: &str, v: &Option<String>, d: Duration| -> Result<Duration, ConfigError> {
        v.as_deref()
            .map(|s| positive(&format!("retention.{k}"), s))
            .transpose()
            .map(|x| x.unwrap_or(d))
    };
    let retention = Retention {
        rounds: keep("rounds", &r.rounds, base.rounds)?,
        minute: keep("minute", &r.minute, base.minute)?,
        hour: keep("hour", &r.hour, base.hour)?,
        day: keep("day", &r.day, base.day)?,
    };
    let l = &f.limits;
    let lim = Limits::default();
    let one = |k: &str, v: Option<u32>, d: u32| -> Result<u32, ConfigError> {
        match v {
            Some(0) => Err(invalid(format!("limits.{k}"), "must be at least 1")),
            Some(n) => Ok(n),
            None => Ok(d),
        }
    };
    let limits = Limits {
        ping: one("ping", l.ping, lim.ping)?,
        probe: one("probe", l.probe, lim.probe)?,
        trace: one("trace", l.trace, lim.trace)?,
        http: one("http", l.http, lim.http)?,
        bulk: one("bulk", l.bulk, lim.bulk)?,
        backlog: one("backlog", l.backlog, lim.backlog)?,
    };
    let vantage = match f.vantage {
        Some(v) if v.trim().is_empty() => return Err(invalid("vantage", "must not be empty")),
        Some(v) => v,
        None => npt_result::Host::this().hostname,
    };
    let store = dir.join(f.store.as_deref().unwrap_or("npt-monitor.db"));
    Ok(Plan {
        vantage,
        store,
        listen,
        token: f.token,
        retention,
        limits,
        targets,
        alerts,
        notify: f.notify,
    })
}

/// Whether `args` holds one of `flags` (as `-c 5`, `-c5`, `--count 5` or `--count=5`).
fn has_flag(args: &[String], flags: &[&str]) -> bool {
    args.iter().any(|a| {
        flags.iter().any(|f| {
            a == f
                || a.strip_prefix(f).is_some_and(|rest| {
                    rest.starts_with('=') || (!f.starts_with("--") && !rest.is_empty())
                })
        })
    })
}

/// The value given to one of `flags`, if any, in every form [`has_flag`] accepts: `-i 500ms`,
/// `-i500ms`, `-i=500ms`, `--interval 500ms`, `--interval=500ms` (the last one given wins, as
/// the subcommand's own parser reads it).
fn flag_value<'a>(args: &'a [String], flags: &[&str]) -> Option<&'a str> {
    let mut found = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        for f in flags {
            if a == f {
                found = it.next().map(String::as_str);
                break;
            }
            let Some(rest) = a.strip_prefix(f) else {
                continue;
            };
            if let Some(v) = rest.strip_prefix('=') {
                found = Some(v);
                break;
            }
            if !f.starts_with("--") && !rest.is_empty() {
                found = Some(rest);
                break;
            }
        }
    }
    found
}

/// `1.5s` → `1500ms`: how the round's flags are written (every subcommand reads ms).
fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// Flags the monitor sets itself: a round's output goes to the store.
fn reserved(key: &str, args: &[String]) -> Result<(), ConfigError> {
    for a in args {
        let flag = a.split('=').next().unwrap_or("");
        let why = match flag {
            "--json" | "--format" | "-q" | "--quiet" => "the monitor stores each round itself",
            "--metrics" | "--metrics-linger" => {
                "the monitor's listener serves every target's metrics"
            }
            "--segment" | "--start-at" | "--run-id" => "a monitor runs whole workloads",
            "--via" | "--via-user" => "use the target's `via` key",
            "--token" => "use the target's `token` key",
            "--hop" | "--through" => "use the target's `hops` and `through` keys",
            "--during" => "a monitor's round ends by itself",
            "--config" => "give the flags in args",
            _ => continue,
        };
        return Err(invalid(key, format!("{flag} is not allowed here: {why}")));
    }
    Ok(())
}

fn target(i: usize, t: &TargetFile, d: &Defaults) -> Result<TargetPlan, ConfigError> {
    let at = |k: &str| format!("target[{i}].{k}");
    if t.name.trim().is_empty() {
        return Err(invalid(at("name"), "must not be empty"));
    }
    if t.name.len() > 200 || t.name.chars().any(char::is_control) {
        return Err(invalid(at("name"), "at most 200 printable characters"));
    }
    let url = t.target.trim();
    if url.is_empty() {
        return Err(invalid(at("target"), "must not be empty"));
    }
    let lower = url.to_ascii_lowercase();
    let kind = t.kind.unwrap_or(if lower.starts_with("http") {
        Kind::Http
    } else {
        Kind::Ping
    });
    let every = match &t.every {
        Some(s) => positive(&at("every"), s)?,
        None => d.every,
    };
    let length = match &t.length {
        Some(s) => Some(positive(&at("length"), s)?),
        None => d.length,
    };
    let jitter = match &t.jitter {
        Some(s) => duration(&at("jitter"), s)?,
        None => d.jitter,
    };
    if jitter >= every {
        return Err(invalid(
            at("jitter"),
            format!("{jitter:?} must be shorter than every ({every:?})"),
        ));
    }
    let timeout = t
        .timeout
        .as_deref()
        .map(|s| positive(&at("timeout"), s))
        .transpose()?;
    reserved(&at("args"), &t.args)?;
    if matches!(&t.token, Some(x) if x.is_empty()) {
        return Err(invalid(at("token"), "must not be empty"));
    }
    if kind != Kind::Trace && (!t.hops.is_empty() || t.through.is_some()) {
        return Err(invalid(
            at(if t.hops.is_empty() { "through" } else { "hops" }),
            "only a trace target has hops",
        ));
    }
    if kind == Kind::Trace && t.hops.is_empty() {
        return Err(invalid(
            at("hops"),
            "missing: a trace target lists its relays' hop agents (npt://HOST:PORT)",
        ));
    }
    let heavy = kind == Kind::Bulk || has_flag(&t.args, &["--under-load"]);
    let budget = t
        .budget
        .as_deref()
        .map(|s| bytes(&at("budget"), s))
        .transpose()?;
    if heavy && budget.is_none() {
        return Err(invalid(
            at("budget"),
            "missing: a bulk or --under-load target moves bytes every round; give the bytes it \
             may move per day (e.g. \"2GB\")",
        ));
    }
    let mut argv = vec![kind.command().to_string(), url.to_string()];
    let a = &t.args;
    let length_flag = |flag: &str, default: Duration| -> Vec<String> {
        vec![flag.to_string(), ms(length.unwrap_or(default))]
    };
    match kind {
        Kind::Ping | Kind::Trace => {
            let interval = match flag_value(a, &["-i", "--interval"]) {
                Some(v) => duration(&at("args"), v)?,
                None => {
                    argv.extend(["-i".to_string(), "200ms".to_string()]);
                    Duration::from_millis(200)
                }
            };
            if !has_flag(a, &["-c", "--count"]) {
                let len = length.unwrap_or(Duration::from_secs(1));
                let n = (len.as_nanos() / interval.as_nanos().max(1)).max(1);
                argv.extend(["-c".to_string(), n.to_string()]);
            } else if t.length.is_some() {
                return Err(invalid(
                    at("length"),
                    "give either length or -c in args (a round is its attempts)",
                ));
            }
        }
        // A loaded probe's round is its phases (--load-idle + --load-duration + --load-recovery).
        Kind::Probe if has_flag(a, &["--under-load"]) => {
            if t.length.is_some() {
                return Err(invalid(
                    at("length"),
                    "an --under-load round is its phases: give --load-idle, --load-duration \
                     and --load-recovery in args",
                ));
            }
        }
        Kind::Probe => {
            if !has_flag(a, &["-d", "--duration", "-n", "--count"]) {
                argv.extend(length_flag("--duration", Duration::from_secs(1)));
            }
        }
        Kind::Http => {
            if !has_flag(a, &["-d", "--duration"]) {
                argv.extend(length_flag("--duration", Duration::from_secs(1)));
            }
            if !has_flag(a, &["-c", "--connections"]) {
                argv.extend(["-c".to_string(), "1".to_string()]);
            }
            if !has_flag(a, &["--rate"]) {
                argv.extend(["--rate".to_string(), "10".to_string()]);
            }
            if !has_flag(a, &["--timeout"]) {
                argv.extend(["--timeout".to_string(), "5s".to_string()]);
            }
        }
        Kind::Bulk => {
            if !has_flag(a, &["-t", "--duration"]) {
                argv.extend(length_flag("--duration", Duration::from_secs(5)));
            }
        }
    }
    if let Some(v) = &t.via {
        argv.extend(["--via".to_string(), v.clone()]);
    }
    if let Some(tok) = &t.token {
        argv.extend(["--token".to_string(), tok.clone()]);
    }
    for h in &t.hops {
        argv.extend(["--hop".to_string(), h.clone()]);
    }
    if let Some(th) = &t.through {
        argv.extend(["--through".to_string(), th.clone()]);
    }
    argv.extend(a.iter().cloned());
    let group = match &t.group {
        Some(g) if g.trim().is_empty() => return Err(invalid(at("group"), "must not be empty")),
        g => g.clone(),
    };
    Ok(TargetPlan {
        name: t.name.clone(),
        kind,
        url: url.to_string(),
        every,
        jitter,
        timeout,
        group,
        budget,
        argv,
        key: format!("target[{i}] ({})", t.name),
    })
}

#[cfg(test)]
mod tests;
