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
//! [retention]                      # how long each level is kept (docs/monitor.md: what each costs)
//! rounds = "6h"
//! minute = "1d"
//! hour = "30d"
//! day = "60d"
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

mod limits;
mod target;

pub use crate::alert::AlertFile;
use crate::alert::Rule;
pub use crate::key::{bytes, duration, ConfigError};
use crate::key::{invalid, positive};
pub use crate::notify::NotifyFile;
pub use limits::{Limits, LimitsFile};
pub use target::{missing_budget, TargetFile, TargetPlan};

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

/// How long each level of the store is kept. The defaults keep a 10-second target within
/// ~2 MB (bench/monitor.sh measures each level's bytes per row) and cover the page's ranges:
/// rounds for its 1 h and 6 h charts, minutes for 24 h, hours for 7 and 30 days.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    pub rounds: Duration,
    pub minute: Duration,
    pub hour: Duration,
    pub day: Duration,
    /// Which levels the config set (rounds, minute, hour, day): the others are defaults, and a
    /// store written by an earlier npt keeps that version's defaults for them
    /// ([`Retention::for_store`]).
    pub given: [bool; 4],
}

/// What a store written by an earlier npt was kept with (its defaults): 2 days of rounds, 14
/// of minutes, 400 of hours, 10 years of days.
pub const EARLIER_RETENTION: Retention = Retention {
    rounds: Duration::from_secs(2 * 86_400),
    minute: Duration::from_secs(14 * 86_400),
    hour: Duration::from_secs(400 * 86_400),
    day: Duration::from_secs(3_650 * 86_400),
    given: [false; 4],
};

impl Retention {
    /// The retention of a store: for one that an earlier npt wrote (and this one migrated),
    /// that version's defaults on every level the config leaves unset, so upgrading prunes
    /// nothing the user kept; for any other, as configured.
    pub fn for_store(self, earlier: bool) -> Retention {
        if !earlier {
            return self;
        }
        let pick = |i: usize, mine: Duration, theirs: Duration| {
            if self.given[i] {
                mine
            } else {
                theirs
            }
        };
        let e = EARLIER_RETENTION;
        Retention {
            rounds: pick(0, self.rounds, e.rounds),
            minute: pick(1, self.minute, e.minute),
            hour: pick(2, self.hour, e.hour),
            day: pick(3, self.day, e.day),
            given: self.given,
        }
    }
}

impl Default for Retention {
    fn default() -> Retention {
        const DAY: u64 = 86_400;
        Retention {
            rounds: Duration::from_secs(6 * 3_600),
            minute: Duration::from_secs(DAY),
            hour: Duration::from_secs(30 * DAY),
            day: Duration::from_secs(60 * DAY),
            given: [false; 4],
        }
    }
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
        let tp = target::target(i, t, &defaults)?;
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
        given: [
            r.rounds.is_some(),
            r.minute.is_some(),
            r.hour.is_some(),
            r.day.is_some(),
        ],
    };
    let limits = Limits::check(&f.limits)?;
    let vantage = match f.vantage {
        Some(v) if v.trim().is_empty() => return Err(invalid("vantage", "must not be empty")),
        Some(v) if !label_text(&v) => return Err(invalid("vantage", LABEL_TEXT)),
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

/// What a name that becomes a `/metrics` label value must be: printable, without `"` or `\`
/// (the exposition text writes label values as they are, so either would end the value early
/// and break the whole scrape).
pub(crate) const LABEL_TEXT: &str = "at most 200 printable characters, without \" or \\";

/// Whether `s` may be a label value ([`LABEL_TEXT`]).
pub(crate) fn label_text(s: &str) -> bool {
    s.len() <= 200 && !s.chars().any(|c| c.is_control() || c == '"' || c == '\\')
}

#[cfg(test)]
mod tests;
