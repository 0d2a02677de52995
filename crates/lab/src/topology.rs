//! The lab topology file: nodes (network namespaces), links between two nodes with impairments
//! per direction, services started on nodes, and the `npt compare` scenario keys
//! (`baseline`, `workload`, `[[scenario]]`), which are handed to compare's own parser.
//!
//! ```toml
//! name = "forwarding-scenarios"       # optional: the file name without .toml
//! [[node]]
//! name = "client"
//! [[node]]
//! name = "la"
//! [[link]]
//! a = "client"
//! b = "la"
//! delay = "76ms"                      # both directions …
//! loss = "1%"
//! subnet = "10.0.1.0/24"              # optional: link i gets 10.0.(i+1).0/24; a = .1, b = .2
//! mtu = 1500                          # optional
//! [link.b_to_a]                       # … and per-direction overrides of any impairment
//! delay = "80ms"
//! [[service]]
//! node = "la"
//! cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]   # "npt" is this npt binary
//! ready = "tcp://10.0.1.2:7777"       # optional: wait until it accepts (or udp://…: bound)
//! ```
//! Parsing checks everything a user can get wrong before anything is created, and every error
//! names the key (`link[2].a_to_b.loss`), so `npt lab` exits 2 with it.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use npt_link::{Impairments, IMPAIRMENT_KEYS};

/// What is wrong with a topology file; the message names the key.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {msg}")]
pub struct TopologyError {
    pub key: String,
    pub msg: String,
}

fn err(key: impl Into<String>, msg: impl Into<String>) -> TopologyError {
    TopologyError {
        key: key.into(),
        msg: msg.into(),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub name: String,
    pub nodes: Vec<String>,
    pub links: Vec<LinkSpec>,
    pub services: Vec<Service>,
    /// `baseline`, `workload` and `scenario`, untouched, for compare's parser.
    pub scenarios: toml::Table,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    /// Network address and prefix length.
    pub subnet: Option<(Ipv4Addr, u8)>,
    pub mtu: u32,
    pub a_to_b: Impairments,
    pub b_to_a: Impairments,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Service {
    pub name: String,
    pub node: String,
    pub cmd: Vec<String>,
    pub ready: Option<Ready>,
}

/// How to know a service is up, checked from inside its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ready {
    /// It accepts a TCP connection at this address.
    Tcp(std::net::SocketAddrV4),
    /// Some UDP socket of the node is bound to this port.
    Udp(u16),
}

const TOP_KEYS: &[&str] = &[
    "name",
    "node",
    "link",
    "service",
    "baseline",
    "hop_pings",
    "hop_token",
    "workload",
    "scenario",
];
const LINK_KEYS: &[&str] = &["a", "b", "subnet", "mtu", "a_to_b", "b_to_a"];

/// The default MTU of lab links: an Ethernet path's, so TCP segments are real-sized.
pub const DEFAULT_MTU: u32 = 1500;

/// A name usable in a namespace or interface name.
fn check_name(key: &str, s: &str) -> Result<(), TopologyError> {
    if s.is_empty() || s.len() > 24 {
        return Err(err(key, format!("{s:?} must be 1 to 24 characters")));
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(err(
            key,
            format!("{s:?} may hold only letters, digits, '-' and '_'"),
        ));
    }
    Ok(())
}

fn string(t: &toml::Table, key: &str, at: &str) -> Result<Option<String>, TopologyError> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(err(
            format!("{at}.{key}"),
            format!("expected a string, found {}", v.type_str()),
        )),
    }
}

fn array_of_tables<'a>(
    top: &'a toml::Table,
    key: &str,
) -> Result<Vec<&'a toml::Table>, TopologyError> {
    match top.get(key) {
        None => Ok(Vec::new()),
        Some(toml::Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_table().ok_or_else(|| {
                    err(
                        format!("{key}[{i}]"),
                        format!("expected a table ([[{key}]])"),
                    )
                })
            })
            .collect(),
        Some(v) => Err(err(
            key,
            format!("expected [[{key}]] tables, found {}", v.type_str()),
        )),
    }
}

fn unknown_keys(t: &toml::Table, allowed: &[&str], at: &str) -> Result<(), TopologyError> {
    for k in t.keys() {
        if !allowed.contains(&k.as_str()) {
            // TOML allows `"" = 1`; an empty key must still show (found by fuzz/topology).
            let k = if k.is_empty() { "\"\"" } else { k.as_str() };
            let key = if at.is_empty() {
                k.to_string()
            } else {
                format!("{at}.{k}")
            };
            return Err(err(
                key,
                format!("unknown key (expected one of: {})", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

/// Parses `10.0.3.0/24`.
pub fn parse_subnet(s: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, p) = s.split_once('/')?;
    let addr: Ipv4Addr = a.parse().ok()?;
    let prefix: u8 = p.parse().ok()?;
    if !(8..=30).contains(&prefix) {
        return None;
    }
    let mask = u32::MAX << (32 - prefix);
    Some((Ipv4Addr::from(u32::from(addr) & mask), prefix))
}

fn impairments(
    shared: &toml::Table,
    dir: Option<&toml::Value>,
    at: &str,
    dir_key: &str,
) -> Result<Impairments, TopologyError> {
    let mut t = shared.clone();
    if let Some(v) = dir {
        let d = v.as_table().ok_or_else(|| {
            err(
                format!("{at}.{dir_key}"),
                "expected a table of impairments".to_string(),
            )
        })?;
        unknown_keys(d, IMPAIRMENT_KEYS, &format!("{at}.{dir_key}"))?;
        for (k, v) in d {
            t.insert(k.clone(), v.clone());
        }
    }
    let imp: Impairments = toml::Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| {
            err(format!("{at}.{dir_key}"), e.message().trim().to_string())
        })?;
    imp.validate()
        .map_err(|e| err(format!("{at}.{dir_key}"), e.to_string()))?;
    Ok(imp)
}

fn parse_ready(s: &str, at: &str) -> Result<Ready, TopologyError> {
    let bad = || {
        err(
            format!("{at}.ready"),
            format!("{s:?}: expected tcp://IPV4:PORT or udp://IPV4:PORT"),
        )
    };
    if let Some(rest) = s.strip_prefix("tcp://") {
        return rest.parse().map(Ready::Tcp).map_err(|_| bad());
    }
    if let Some(rest) = s.strip_prefix("udp://") {
        let a: std::net::SocketAddrV4 = rest.parse().map_err(|_| bad())?;
        return Ok(Ready::Udp(a.port()));
    }
    Err(bad())
}

impl Topology {
    /// Parses and checks a topology file. `default_name` (the file stem) names the lab when
    /// the file does not.
    pub fn parse(text: &str, default_name: &str) -> Result<Topology, TopologyError> {
        let top: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| err("file", e.to_string().trim().to_string()))?;
        unknown_keys(&top, TOP_KEYS, "")?;
        let name = string(&top, "name", "file")?.unwrap_or_else(|| default_name.to_string());
        check_name("name", &name)?;

        let mut nodes = Vec::new();
        for (i, t) in array_of_tables(&top, "node")?.into_iter().enumerate() {
            let at = format!("node[{i}]");
            unknown_keys(t, &["name"], &at)?;
            let n = string(t, "name", &at)?.ok_or_else(|| err(format!("{at}.name"), "missing"))?;
            check_name(&format!("{at}.name"), &n)?;
            if nodes.contains(&n) {
                return Err(err(
                    format!("{at}.name"),
                    format!("duplicate node name {n:?}"),
                ));
            }
            nodes.push(n);
        }
        if nodes.is_empty() {
            return Err(err("node", "a lab needs at least one [[node]]"));
        }
        let node_ref = |key: String, n: Option<String>| -> Result<String, TopologyError> {
            let n = n.ok_or_else(|| err(key.clone(), "missing"))?;
            if !nodes.contains(&n) {
                return Err(err(key, format!("unknown node {n:?}")));
            }
            Ok(n)
        };

        let mut links = Vec::new();
        for (i, t) in array_of_tables(&top, "link")?.into_iter().enumerate() {
            let at = format!("link[{i}]");
            let mut allowed = LINK_KEYS.to_vec();
            allowed.extend_from_slice(IMPAIRMENT_KEYS);
            unknown_keys(t, &allowed, &at)?;
            let a = node_ref(format!("{at}.a"), string(t, "a", &at)?)?;
            let b = node_ref(format!("{at}.b"), string(t, "b", &at)?)?;
            if a == b {
                return Err(err(format!("{at}.b"), "a link joins two different nodes"));
            }
            let subnet = match string(t, "subnet", &at)? {
                None => None,
                Some(s) => Some(parse_subnet(&s).ok_or_else(|| {
                    err(
                        format!("{at}.subnet"),
                        format!("{s:?}: expected IPV4/PREFIX with a prefix of 8 to 30"),
                    )
                })?),
            };
            let mtu = match t.get("mtu") {
                None => DEFAULT_MTU,
                // In range, so the conversion cannot fail.
                Some(toml::Value::Integer(m)) if (576..=65_535).contains(m) => {
                    u32::try_from(*m).unwrap_or(DEFAULT_MTU)
                }
                Some(v) => {
                    return Err(err(
                        format!("{at}.mtu"),
                        format!("{v}: expected an integer from 576 to 65535"),
                    ))
                }
            };
            let shared: toml::Table = t
                .iter()
                .filter(|(k, _)| IMPAIRMENT_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let a_to_b = impairments(&shared, t.get("a_to_b"), &at, "a_to_b")?;
            let b_to_a = impairments(&shared, t.get("b_to_a"), &at, "b_to_a")?;
            links.push(LinkSpec {
                a,
                b,
                subnet,
                mtu,
                a_to_b,
                b_to_a,
            });
        }

        let mut services = Vec::new();
        let mut names = BTreeSet::new();
        for (i, t) in array_of_tables(&top, "service")?.into_iter().enumerate() {
            let at = format!("service[{i}]");
            unknown_keys(t, &["name", "node", "cmd", "ready"], &at)?;
            let node = node_ref(format!("{at}.node"), string(t, "node", &at)?)?;
            let cmd: Vec<String> = match t.get("cmd") {
                Some(toml::Value::Array(a)) if !a.is_empty() => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(|| err(format!("{at}.cmd"), "expected an array of strings"))?,
                Some(_) => {
                    return Err(err(
                        format!("{at}.cmd"),
                        "expected a non-empty array of strings",
                    ))
                }
                None => return Err(err(format!("{at}.cmd"), "missing")),
            };
            let name = string(t, "name", &at)?.unwrap_or_else(|| format!("{node}-{i}"));
            check_name(&format!("{at}.name"), &name)?;
            if !names.insert(name.clone()) {
                return Err(err(
                    format!("{at}.name"),
                    format!("duplicate service name {name:?}"),
                ));
            }
            let ready = string(t, "ready", &at)?
                .map(|s| parse_ready(&s, &at))
                .transpose()?;
            services.push(Service {
                name,
                node,
                cmd,
                ready,
            });
        }

        let scenarios: toml::Table = top
            .iter()
            .filter(|(k, _)| {
                matches!(
                    k.as_str(),
                    "baseline" | "hop_pings" | "hop_token" | "workload" | "scenario"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Topology {
            name,
            nodes,
            links,
            services,
            scenarios,
        })
    }
}
