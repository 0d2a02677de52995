//! The scenario file of `npt compare scenarios.toml`: a baseline, one shared workload and the
//! scenarios it runs against. These serde types are public because `npt lab` topology files
//! embed the same `baseline` / `workload` / `[[scenario]]` keys (plus `node`, the network
//! namespace a scenario's client runs in), so both commands parse and validate them here.
//!
//! ```toml
//! baseline = "direct"
//! hop_pings = 10                 # optional: pings per hop for `hops = [...]`
//! hop_token = "S"                # the hop agents' secret, for hops measured `from` an agent
//! [workload]
//! kind = "probe"                 # probe | run | http | ping | bulk | trace | lifetime | mtu | setup
//! args = ["--count", "500", "--interval", "2ms"]
//! timeout = "2m"                 # optional: overrides the bound derived from args
//! [[scenario]]
//! name = "chain"
//! target = "udp://127.0.0.1:7777"
//! hop_rtts_ms = [152, 32, 69]    # or theoretical_ms = 253, or hops = ["tcp://a:1", …]
//! # hops = ["tcp://sea:7777", { from = "npt://sea:7777", to = "tcp://la:7777" }, "icmp://la"]
//! #   a URL is pinged from the client; a from/to hop is measured by the hop agent `from`
//! #   (`npt serve --token S --hop-agent`), as `npt ping TO --from FROM --token S`
//! via = "socks5://127.0.0.1:1080"
//! args = ["--size", "200"]       # appended to the workload's
//! ```
//! Unknown keys are refused (`deny_unknown_fields`): a typo must not silently drop a setting.
#![deny(clippy::indexing_slicing)] // parses a user-written scenario file: see `[workspace.lints]`

use serde::{Deserialize, Serialize};

/// Pings per hop when a scenario lists `hops` and the file sets no `hop_pings`.
pub const DEFAULT_HOP_PINGS: u64 = 10;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSet {
    /// The scenario the others are compared with.
    #[serde(default)]
    pub baseline: Option<String>,
    /// Pings per hop for scenarios with `hops` [default: 10].
    #[serde(default)]
    pub hop_pings: Option<u64>,
    /// The secret of the hop agents (`npt serve --token S --hop-agent`) that measure the
    /// scenarios' `{ from, to }` hops; required when there is one.
    #[serde(default)]
    pub hop_token: Option<String>,
    pub workload: Workload,
    #[serde(default)]
    pub scenario: Vec<Scenario>,
}

/// The one workload every scenario runs, with the flags of its command line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Any kind of result npt writes (the registry's [`npt_result::Kind`]), which is also its
    /// subcommand.
    pub kind: npt_result::Kind,
    #[serde(default)]
    pub args: Vec<String>,
    /// Bound on each run (e.g. "90s"); by default derived from the workload's own stop flags.
    #[serde(default)]
    pub timeout: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub target: String,
    /// Proxy URL, as `--via` (socks5://, socks5h://, http://).
    #[serde(default)]
    pub via: Option<String>,
    /// Theoretical latency as the sum of these hop RTTs.
    #[serde(default)]
    pub hop_rtts_ms: Option<Vec<f64>>,
    /// Theoretical latency, given.
    #[serde(default)]
    pub theoretical_ms: Option<f64>,
    /// Hops npt measures before the runs; the theoretical latency is the sum of their average
    /// RTTs.
    #[serde(default)]
    pub hops: Option<Vec<HopSpec>>,
    /// Flags appended to the workload's for this scenario only.
    #[serde(default)]
    pub args: Vec<String>,
    /// `npt lab` only: the network namespace the client runs in.
    #[serde(default)]
    pub node: Option<String>,
}

/// One hop of a scenario's path: a URL pinged from the client (`npt ping URL`), or a segment
/// measured by the hop agent at its upstream end (`npt ping TO --from FROM --token …`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HopSpec {
    Url(String),
    FromTo(FromTo),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FromTo {
    /// The hop agent: npt://HOST:PORT.
    pub from: String,
    /// What it measures: tcp|udp|quic://HOST:PORT.
    pub to: String,
}

impl HopSpec {
    /// The URL measured (a from/to hop's `to`).
    pub fn url(&self) -> &str {
        match self {
            HopSpec::Url(u) => u,
            HopSpec::FromTo(f) => &f.to,
        }
    }

    /// The hop agent that measures it, if not the client.
    pub fn from(&self) -> Option<&str> {
        match self {
            HopSpec::Url(_) => None,
            HopSpec::FromTo(f) => Some(&f.from),
        }
    }
}

impl Scenario {
    /// The theoretical latency given in the file (not the pinged `hops`).
    pub fn given_theoretical_ms(&self) -> Option<f64> {
        self.theoretical_ms
            .or_else(|| self.hop_rtts_ms.as_ref().map(|h| h.iter().sum()))
    }
}

/// What is wrong with a scenario file; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    #[error("{field}: {msg}")]
    Invalid { field: String, msg: String },
}

fn invalid(field: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid {
        field: field.into(),
        msg: msg.into(),
    }
}

/// Which command reads the file: `node` belongs to lab topologies only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Compare,
    /// `npt lab`, which validates its embedded scenarios with nodes allowed.
    Lab,
}

/// Parses a scenario file (TOML); unknown keys, missing fields and unknown kinds are errors
/// that name the key. Call [`validate`] next.
pub fn parse_scenarios(text: &str) -> Result<ScenarioSet, ScenarioError> {
    Ok(toml::from_str(text)?)
}

fn ms_ok(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("{v} must be a non-negative number of ms"),
        ))
    }
}

/// Checks what serde cannot: names, the baseline, one theoretical source per scenario, numbers,
/// flags npt compare sets itself, and `node` (lab only). The workload's flags are checked
/// against the real command line by [`super::workload::plan`].
pub fn validate(set: &ScenarioSet, purpose: Purpose) -> Result<(), ScenarioError> {
    if set.scenario.is_empty() {
        return Err(invalid("scenario", "no [[scenario]] in the file"));
    }
    if set.hop_pings == Some(0) {
        return Err(invalid("hop_pings", "must be at least 1"));
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, s) in set.scenario.iter().enumerate() {
        let at = |k: &str| format!("scenario[{i}].{k}");
        if s.name.trim().is_empty() {
            return Err(invalid(at("name"), "must not be empty"));
        }
        if !names.insert(s.name.as_str()) {
            return Err(invalid(at("name"), format!("{:?} is used twice", s.name)));
        }
        if s.target.trim().is_empty() {
            return Err(invalid(at("target"), "must not be empty"));
        }
        let sources = [
            s.hop_rtts_ms.is_some(),
            s.theoretical_ms.is_some(),
            s.hops.is_some(),
        ];
        if sources.iter().filter(|x| **x).count() > 1 {
            return Err(invalid(
                format!("scenario[{i}]"),
                "give one of hop_rtts_ms, theoretical_ms and hops",
            ));
        }
        if let Some(t) = s.theoretical_ms {
            ms_ok(&at("theoretical_ms"), t)?;
        }
        for v in s.hop_rtts_ms.iter().flatten() {
            ms_ok(&at("hop_rtts_ms"), *v)?;
        }
        if s.hops.as_ref().is_some_and(|h| h.is_empty()) {
            return Err(invalid(at("hops"), "lists no hop"));
        }
        for (j, h) in s.hops.iter().flatten().enumerate() {
            check_hop(set, &at(&format!("hops[{j}]")), h)?;
        }
        if s.node.is_some() && purpose == Purpose::Compare {
            return Err(invalid(
                at("node"),
                "node is for `npt lab` topology files; `npt compare` runs every scenario here",
            ));
        }
        if s.node.is_none() && purpose == Purpose::Lab {
            return Err(invalid(
                at("node"),
                "missing: the lab node the client runs on",
            ));
        }
        for (k, args) in [("args", &s.args), ("workload.args", &set.workload.args)] {
            let field = if k == "args" { at(k) } else { k.to_string() };
            check_reserved(&field, args)?;
        }
    }
    if let Some(b) = &set.baseline {
        if !names.contains(b.as_str()) {
            return Err(invalid("baseline", format!("{b:?} names no scenario")));
        }
    }
    if let Some(t) = &set.workload.timeout {
        crate::usage::parse_duration(t).map_err(|e| invalid("workload.timeout", e))?;
    }
    Ok(())
}

/// A hop's URLs parse; a hop measured from an agent has the agents' secret.
fn check_hop(set: &ScenarioSet, field: &str, h: &HopSpec) -> Result<(), ScenarioError> {
    let target = |key: String, url: &str| {
        npt_ping::Target::parse(url)
            .map(|_| ())
            .map_err(|e| invalid(key, e.to_string()))
    };
    match h {
        // The host's ICMP echo, from here (a hop agent pings tcp/udp/quic only).
        HopSpec::Url(u) if npt_ping::icmp::is_icmp(u) => npt_ping::icmp::parse_host(u)
            .map(|_| ())
            .map_err(|e| invalid(field.to_string(), e.to_string())),
        HopSpec::Url(u) => target(field.to_string(), u),
        HopSpec::FromTo(f) => {
            if npt_ping::remote::Agent::parse(&f.from).is_none() {
                return Err(invalid(
                    format!("{field}.from"),
                    format!(
                        "{:?}: expected npt://HOST:PORT (an `npt serve --hop-agent`)",
                        f.from
                    ),
                ));
            }
            target(format!("{field}.to"), &f.to)?;
            match set.hop_token.as_deref() {
                None => Err(invalid(
                    "hop_token",
                    format!(
                        "missing: {field} is measured from the hop agent {}, which answers \
                         only clients that prove its secret (`npt serve --token`)",
                        f.from
                    ),
                )),
                Some("") => Err(invalid("hop_token", "must not be empty")),
                Some(_) => Ok(()),
            }
        }
    }
}

/// Flags npt compare sets on each child itself.
fn check_reserved(field: &str, args: &[String]) -> Result<(), ScenarioError> {
    for a in args {
        let flag = a.split('=').next().unwrap_or("");
        let why = match flag {
            "--json" => "npt compare writes each result itself",
            "--format" => "npt compare reads the JSON result",
            "--via" | "--via-user" => "use the scenario's `via` key",
            "--segment" | "--start-at" => "a compare runs whole workloads",
            "--config" => "give the flags in args",
            _ => continue,
        };
        return Err(invalid(field, format!("{flag} is not allowed here: {why}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
baseline = "direct"
[workload]
kind = "probe"
args = ["--count", "500", "--interval", "2ms"]
[[scenario]]
name = "direct"
target = "udp://127.0.0.1:7777"
hop_rtts_ms = [152, 32, 69]
[[scenario]]
name = "via-socks"
target = "tcp://127.0.0.1:7777"
via = "socks5://127.0.0.1:1080"
theoretical_ms = 253.5
[[scenario]]
name = "pinged"
target = "tcp://127.0.0.1:7777"
hops = ["tcp://a:1", "tcp://b:2"]
args = ["--size", "200"]
"#;

    const MEASURED: &str = r#"
hop_token = "S"
[workload]
kind = "probe"
[[scenario]]
name = "chain"
target = "tcp://127.0.0.1:9003"
hops = ["tcp://sea:7777", { from = "npt://sea:7777", to = "tcp://la:7777" }]
"#;

    fn err(text: &str) -> String {
        match parse_scenarios(text) {
            Ok(set) => validate(&set, Purpose::Compare).unwrap_err().to_string(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_good_file_parses_into_the_public_types() {
        let set = parse_scenarios(GOOD).unwrap();
        validate(&set, Purpose::Compare).unwrap();
        assert_eq!(set.baseline.as_deref(), Some("direct"));
        assert_eq!(set.workload.kind.name(), "probe");
        assert_eq!(set.scenario.len(), 3);
        assert_eq!(set.scenario[0].given_theoretical_ms(), Some(253.0));
        assert_eq!(set.scenario[1].given_theoretical_ms(), Some(253.5));
        assert_eq!(
            set.scenario[1].via.as_deref(),
            Some("socks5://127.0.0.1:1080")
        );
        assert_eq!(set.scenario[2].hops.as_ref().unwrap().len(), 2);
        assert_eq!(set.scenario[2].args, ["--size", "200"]);
        // The lab needs a node on every scenario.
        let e = validate(&set, Purpose::Lab).unwrap_err().to_string();
        assert!(e.starts_with("scenario[0].node: missing"), "{e}");
    }

    #[test]
    fn hops_are_urls_or_measured_from_an_agent_with_the_token() {
        let set = parse_scenarios(MEASURED).unwrap();
        validate(&set, Purpose::Compare).unwrap();
        let hops = set.scenario[0].hops.as_ref().unwrap();
        assert_eq!((hops[0].url(), hops[0].from()), ("tcp://sea:7777", None));
        assert_eq!(
            (hops[1].url(), hops[1].from()),
            ("tcp://la:7777", Some("npt://sea:7777"))
        );
        let e = err(&MEASURED.replace("hop_token = \"S\"\n", ""));
        assert!(
            e.starts_with("hop_token: missing: scenario[0].hops[1] is measured from the hop agent npt://sea:7777"),
            "{e}"
        );
        let e = err(&MEASURED.replace("hop_token = \"S\"", "hop_token = \"\""));
        assert!(e.starts_with("hop_token: must not be empty"), "{e}");
        let e = err(&MEASURED.replace("npt://sea:7777\"", "tcp://sea:7777\""));
        assert!(
            e.starts_with("scenario[0].hops[1].from: \"tcp://sea:7777\""),
            "{e}"
        );
        let e = err(&MEASURED.replace("to = \"tcp://la:7777\"", "to = \"la:7777\""));
        assert!(e.starts_with("scenario[0].hops[1].to"), "{e}");
        let e = err(&MEASURED.replace("\"tcp://sea:7777\", {", "\"sea\", {"));
        assert!(e.starts_with("scenario[0].hops[0]"), "{e}");
        // The host's ICMP echo is a hop too (pinged from here); with a port it is not.
        let icmp = MEASURED.replace("\"tcp://sea:7777\", {", "\"icmp://sea\", {");
        validate(&parse_scenarios(&icmp).unwrap(), Purpose::Compare).unwrap();
        let e = err(&MEASURED.replace("\"tcp://sea:7777\", {", "\"icmp://sea:7\", {"));
        assert!(
            e.starts_with("scenario[0].hops[0]") && e.contains("icmp://HOST"),
            "{e}"
        );
        // A typo in a from/to hop is no URL either: the hop matches neither form.
        let e = err(&MEASURED.replace("to = ", "too = "));
        assert!(e.contains("did not match any variant"), "{e}");
    }

    #[test]
    fn bad_files_name_the_key() {
        let e = err(&GOOD.replace("hop_rtts_ms", "hop_rtt_ms"));
        assert!(e.contains("unknown field `hop_rtt_ms`"), "{e}");
        let e = err(&GOOD.replace("target = \"udp://127.0.0.1:7777\"\n", ""));
        assert!(e.contains("missing field `target`"), "{e}");
        let e = err(&GOOD.replace("kind = \"probe\"", "kind = \"iperf\""));
        assert!(e.contains("unknown variant `iperf`"), "{e}");
        let e = err(&GOOD.replace("baseline = \"direct\"", "baseline = \"nope\""));
        assert!(e.starts_with("baseline: \"nope\" names no scenario"), "{e}");
        let e = err(&GOOD.replace("name = \"via-socks\"", "name = \"direct\""));
        assert!(e.starts_with("scenario[1].name"), "{e}");
        let e = err(&GOOD.replace(
            "theoretical_ms = 253.5",
            "theoretical_ms = 1\nhops = [\"x\"]",
        ));
        assert!(e.contains("give one of"), "{e}");
        let e = err(&GOOD.replace("theoretical_ms = 253.5", "theoretical_ms = -1"));
        assert!(e.starts_with("scenario[1].theoretical_ms"), "{e}");
        let e = err(&GOOD.replace("\"--size\", \"200\"", "\"--json\", \"x.json\""));
        assert!(
            e.starts_with("scenario[2].args: --json is not allowed"),
            "{e}"
        );
        let e = err(&GOOD.replace("\"2ms\"]", "\"2ms\", \"--via=socks5://p:1\"]"));
        assert!(e.starts_with("workload.args: --via"), "{e}");
        let e = err(&GOOD.replace("name = \"pinged\"", "name = \"pinged\"\nnode = \"client\""));
        assert!(
            e.starts_with("scenario[2].node: node is for `npt lab` topology files"),
            "{e}"
        );
        let e = err(&GOOD.replace(
            "args = [\"--count\"",
            "timeout = \"soon\"\nargs = [\"--count\"",
        ));
        assert!(e.starts_with("workload.timeout"), "{e}");
        let e = err("[workload]\nkind = \"ping\"\n");
        assert!(e.starts_with("scenario: no [[scenario]]"), "{e}");
    }
}
