//! A run's validated configuration and what a run returns.

use super::*;

/// `--cold-start CMD --ready-timeout D`.
#[derive(Clone, Debug)]
pub struct ColdStartConfig {
    pub command: String,
    pub ready_timeout: Duration,
}

/// Everything a run needs, already validated by the CLI (see [`Config::validate`]).
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    /// Virtual hosts sent as `Host` / `:authority`, round-robin; empty = the URL's authority.
    pub hosts: Vec<String>,
    pub method: Method,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// `-c`: connections (each with `streams` concurrent requests).
    pub connections: u32,
    pub streams: u32,
    pub http2: bool,
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
            method: Method::GET,
            headers: Vec::new(),
            body: Bytes::new(),
            connections: 50,
            streams: 1,
            http2: false,
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

    /// Checks combinations the flags cannot express; the message names the flag.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if self.connections == 0 {
            return bad("-c/--connections must be at least 1");
        }
        if self.streams == 0 {
            return bad("--streams must be at least 1");
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

    pub(super) fn host_names(&self) -> Vec<String> {
        if self.hosts.is_empty() {
            vec![self.target.authority.clone()]
        } else {
            self.hosts.clone()
        }
    }
}
