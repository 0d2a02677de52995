//! A run's validated configuration and what a run returns.

use super::*;

/// `--cold-start CMD --ready-timeout D`.
#[derive(Clone, Debug)]
pub struct ColdStartConfig {
    pub command: String,
    pub ready_timeout: Duration,
    /// `--cold-start-port [HOST:]PORT`: the command's own port when the URL goes through a
    /// gateway in front of it (HOST defaults to the URL's).
    pub service: Option<(String, u16)>,
}

/// `--host NAME=N` or `--host NAME=R/s`: the load one virtual host gets on connections of its
/// own, as a separate client of that host would give it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HostLoad {
    /// Closed loop on this many connections of its own.
    Connections(u32),
    /// Open loop at this many requests per second, on `-c` connections of its own.
    Rate(f64),
}

/// One set of connections and the hosts they rotate over: every host together (plain
/// `--host`), or one host each (`--host NAME=N`, `--host NAME=R/s`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct GroupPlan {
    pub(super) hosts: Vec<usize>,
    pub(super) connections: u32,
    pub(super) rate: Option<f64>,
}

/// Everything a run needs, already validated by the CLI (see [`Config::validate`]).
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    /// Virtual hosts sent as `Host` / `:authority`, round-robin; empty = the URL's authority.
    pub hosts: Vec<String>,
    /// Empty: every host shares the `-c` connections (round-robin). Else one load per host,
    /// in the order of `hosts`: each host gets its own connections (and pacer).
    pub host_loads: Vec<HostLoad>,
    pub method: Method,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// `-c`: connections (each with `streams` concurrent requests).
    pub connections: u32,
    pub streams: u32,
    pub http2: bool,
    /// `--http2-fallback`: HTTP/2 if the server speaks it, else HTTP/1.1 (the result says
    /// why); plain `--http2` fails once instead.
    pub http2_fallback: bool,
    pub new_conn: bool,
    /// `--rate`: open loop, requests per second.
    pub rate: Option<f64>,
    pub duration: Duration,
    /// Per request (connect + TLS + response); a slower one counts as a `timeout` error.
    pub timeout: Duration,
    pub insecure: bool,
    pub cold_start: Option<ColdStartConfig>,
    /// Runtime worker threads; `None` = [`crate::threads::choose_threads`] decides.
    pub threads: Option<usize>,
    /// `--via`: SOCKS5 or HTTP CONNECT tunnel per connection; through an HTTP proxy a plain
    /// `http://` HTTP/1.1 target is requested in absolute form instead (as browsers do).
    pub via: Option<npt_proxy::Via>,
    /// The `-H` lines as given (a `Host:` one included), as the result's config records them.
    pub header_lines: Vec<String>,
    /// `-4`/`-6`, `--bind`, `--dscp`: every connection to the target (not `--via`'s proxy
    /// connection: the command line refuses that).
    pub source: npt_client::source::Source,
}

impl Config {
    pub fn new(target: Target) -> Config {
        Config {
            target,
            hosts: Vec::new(),
            host_loads: Vec::new(),
            method: Method::GET,
            headers: Vec::new(),
            body: Bytes::new(),
            connections: 50,
            streams: 1,
            http2: false,
            http2_fallback: false,
            new_conn: false,
            rate: None,
            duration: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            insecure: false,
            cold_start: None,
            threads: None,
            source: Default::default(),
            via: None,
            header_lines: Vec::new(),
        }
    }

    /// The same run over HTTP/1.1: what `--http2-fallback` runs against a server without h2.
    pub(super) fn as_http1(&self) -> Config {
        Config {
            http2: false,
            http2_fallback: false,
            streams: 1,
            ..self.clone()
        }
    }

    /// Checks combinations the flags cannot express; the message names the flag.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if self.connections == 0 {
            return bad("-c/--connections must be at least 1");
        }
        if self.streams == 0 {
            return bad("--streams must be at least 1");
        }
        if self.http2_fallback && !self.http2 {
            return bad("--http2-fallback is an HTTP/2 run (it sets --http2)");
        }
        if self.streams > 1 && !self.http2 {
            return bad(
                "--streams needs --http2 (HTTP/1.1 has one request in flight per connection)",
            );
        }
        if self.streams > 1 && self.new_conn {
            return bad(
                "--streams cannot be combined with --new-conn (one request per connection)",
            );
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return bad("--rate must be a positive number of requests per second");
            }
        }
        if self.duration.is_zero() {
            return bad("-d/--duration must be positive");
        }
        if self.timeout.is_zero() {
            return bad("--timeout must be positive");
        }
        if self.hosts.len() > usize::from(u16::MAX) {
            return bad("--host: at most 65535 virtual hosts");
        }
        for h in &self.hosts {
            if HeaderValue::from_str(h).is_err() || h.is_empty() {
                return bad(&format!("--host {h:?} is not a valid Host header value"));
            }
        }
        self.validate_host_loads()?;
        if let Some(cs) = &self.cold_start {
            if cs.command.trim().is_empty() {
                return bad("--cold-start needs a command");
            }
            if cs.ready_timeout.is_zero() {
                return bad("--ready-timeout must be positive");
            }
        }
        Ok(())
    }

    fn validate_host_loads(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if self.host_loads.is_empty() {
            return Ok(());
        }
        if self.host_loads.len() != self.hosts.len() {
            return bad("--host: give every host its own load (NAME=N or NAME=R/s) or none");
        }
        let rates = self
            .host_loads
            .iter()
            .filter(|l| matches!(l, HostLoad::Rate(_)))
            .count();
        if rates != 0 && rates != self.host_loads.len() {
            return bad("--host: every host a connection count (NAME=N) or every host a rate (NAME=R/s), not both");
        }
        if rates != 0 && self.rate.is_some() {
            return bad("--rate cannot be combined with per-host rates (--host NAME=R/s)");
        }
        if rates == 0 && self.rate.is_some() {
            return bad("--rate cannot be combined with per-host connections (--host NAME=N): use --host NAME=R/s");
        }
        for (h, l) in self.hosts.iter().zip(&self.host_loads) {
            match *l {
                HostLoad::Connections(0) => {
                    return bad(&format!("--host {h}=0: at least 1 connection"))
                }
                HostLoad::Rate(r) if !(r.is_finite() && r > 0.0) => {
                    return bad(&format!("--host {h}: the rate must be positive"))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The sets of connections a run opens ([`GroupPlan`]).
    pub(super) fn groups(&self) -> Vec<GroupPlan> {
        if self.host_loads.is_empty() {
            let n = self.hosts.len().max(1);
            return vec![GroupPlan {
                hosts: (0..n).collect(),
                connections: self.connections,
                rate: self.rate,
            }];
        }
        self.host_loads
            .iter()
            .enumerate()
            .map(|(i, l)| match *l {
                HostLoad::Connections(c) => GroupPlan {
                    hosts: vec![i],
                    connections: c,
                    rate: None,
                },
                HostLoad::Rate(r) => GroupPlan {
                    hosts: vec![i],
                    connections: self.connections,
                    rate: Some(r),
                },
            })
            .collect()
    }

    /// Connections over every group; the total rate when open loop.
    pub(super) fn totals(&self) -> (u32, Option<f64>) {
        let g = self.groups();
        let conns = g
            .iter()
            .map(|g| g.connections)
            .fold(0u32, u32::saturating_add);
        let rates: Vec<f64> = g.iter().filter_map(|g| g.rate).collect();
        (conns, (!rates.is_empty()).then(|| rates.iter().sum()))
    }

    pub(super) fn host_names(&self) -> Vec<String> {
        if self.hosts.is_empty() {
            vec![self.target.authority.clone()]
        } else {
            self.hosts.clone()
        }
    }
}
