//! A `[[target]]` of the config file: its keys checked, and the round's command line as the
//! file gives it (`npt KIND URL`, the target's `via`, `token`, `hops`, `through`, then its
//! `args`). What the round's flags mean — their defaults (a round of `length`, a ping's
//! interval, an http round's rate), its length, a loaded probe's budget — is the cli's: it
//! parses that command line with the subcommand's own clap definitions.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::Defaults;
use crate::key::{bytes, duration, invalid, positive, ConfigError};
use crate::kinds::{Kind, MONITORED};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    pub name: String,
    #[serde(default, deserialize_with = "monitored")]
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

/// A target's `kind`: one of the kinds a monitor runs, by its name.
fn monitored<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Kind>, D::Error> {
    let name = String::deserialize(d)?;
    MONITORED
        .iter()
        .copied()
        .find(|k| k.name() == name)
        .map(Some)
        .ok_or_else(|| serde::de::Error::unknown_variant(&name, &MONITORED_NAMES))
}

/// The names of [`MONITORED`], as an unknown `kind`'s error lists them.
const MONITORED_NAMES: [&str; MONITORED.len()] = {
    let mut names = [""; MONITORED.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = MONITORED[i].name();
        i += 1;
    }
    names
};

/// One target, checked: what a round runs and when.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetPlan {
    pub name: String,
    pub kind: Kind,
    /// The URL as written.
    pub url: String,
    pub every: Duration,
    pub jitter: Duration,
    /// Given in the file; else the cli derives it from the workload's length.
    pub timeout: Option<Duration>,
    pub group: Option<String>,
    /// Bytes per day a heavy target may move.
    pub budget: Option<u64>,
    /// The round's command line as `npt KIND …` takes it (without `npt`): the file's, before
    /// the cli adds the flags its defaults stand for.
    pub argv: Vec<String>,
    /// How long a round lasts (the target's `length`, else the file's); `None`: the kind's
    /// default.
    pub length: Option<Duration>,
    /// Whether the target itself gives a `length` (a round's flags may not say it twice).
    pub own_length: bool,
    /// Its place in the file: `target[index]`.
    pub index: usize,
    /// Where in the file it is, for messages: `target[2] (relay-udp)`.
    pub key: String,
}

/// `target[i].budget: missing`: a target that moves bytes every round without a budget.
pub fn missing_budget(i: usize) -> ConfigError {
    invalid(
        format!("target[{i}].budget"),
        "missing: a bulk or --under-load target moves bytes every round; give the bytes it \
         may move per day (e.g. \"2GB\")",
    )
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

pub(super) fn target(i: usize, t: &TargetFile, d: &Defaults) -> Result<TargetPlan, ConfigError> {
    let at = |k: &str| format!("target[{i}].{k}");
    if t.name.trim().is_empty() {
        return Err(invalid(at("name"), "must not be empty"));
    }
    if !super::label_text(&t.name) {
        return Err(invalid(at("name"), super::LABEL_TEXT));
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
    let budget = t
        .budget
        .as_deref()
        .map(|s| bytes(&at("budget"), s))
        .transpose()?;
    if kind == Kind::Bulk && budget.is_none() {
        return Err(missing_budget(i));
    }
    let mut argv = vec![kind.name().to_string(), url.to_string()];
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
    argv.extend(t.args.iter().cloned());
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
        length,
        own_length: t.length.is_some(),
        index: i,
        key: format!("target[{i}] ({})", t.name),
    })
}
