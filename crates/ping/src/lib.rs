//! `npt ping`: the round-trip time of one hop, measured the way a forwarder chain pays it —
//! a TCP connect (SYN to SYN-ACK), a UDP echo (framed against `npt serve`, or raw against any
//! echo), or a QUIC handshake. `compare` uses these RTTs as the "theoretical" latency of a
//! chain, `lab` uses them to check emulated link delays.
//!
//! [`session`] holds the sans-IO sequence/timeout bookkeeping; [`net`] drives it with sockets;
//! [`result`] is the JSON body of a `kind = "ping"` result document. [`agent`] measures a hop
//! agent's requests (`npt serve --hop-agent`) with the same engine, and [`remote`] asks an
//! agent to (`npt ping --from`).
#![deny(clippy::indexing_slicing)] // parses echo and TCP replies from the network

pub mod agent;
pub mod net;
pub mod remote;
pub mod result;
pub mod session;

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

pub use npt_client::QuicTrust;

/// What a ping attempt measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
    Quic,
}

impl Proto {
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Quic => "quic",
        }
    }
}

/// A parsed `tcp://HOST:PORT`, `udp://…` or `quic://…` target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub proto: Proto,
    /// The host as written, without IPv6 brackets (the QUIC server name).
    pub host: String,
    pub port: u16,
}

#[derive(Debug, thiserror::Error)]
pub enum PingError {
    #[error("target {0:?}: expected tcp://HOST:PORT, udp://HOST:PORT or quic://HOST:PORT")]
    BadTarget(String),
    #[error("cannot resolve {0}: {1}")]
    Resolve(String, std::io::Error),
    #[error("{0}: resolves to no address")]
    NoAddress(String),
    #[error("cannot open a socket: {0}")]
    Socket(std::io::Error),
    #[error("QUIC client: {0}")]
    Quic(String),
    #[error("{0}: {1}")]
    Auth(SocketAddr, std::io::Error),
}

impl Target {
    pub fn parse(s: &str) -> Result<Target, PingError> {
        let bad = || PingError::BadTarget(s.to_string());
        let (scheme, rest) = s.split_once("://").ok_or_else(bad)?;
        let proto = match scheme {
            "tcp" => Proto::Tcp,
            "udp" => Proto::Udp,
            "quic" => Proto::Quic,
            _ => return Err(bad()),
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            let (h, p) = r.split_once("]:").ok_or_else(bad)?;
            (h, p)
        } else {
            rest.rsplit_once(':').ok_or_else(bad)?
        };
        if host.is_empty() || host.contains(['/', '?', '#']) {
            return Err(bad());
        }
        let port: u16 = port.parse().map_err(|_| bad())?;
        if port == 0 {
            return Err(bad());
        }
        Ok(Target {
            proto,
            host: host.to_string(),
            port,
        })
    }

    /// Every address the host resolves to, in resolver order, duplicates removed.
    pub fn resolve(&self) -> Result<Vec<SocketAddr>, PingError> {
        let what = format!("{}:{}", self.host, self.port);
        let mut out: Vec<SocketAddr> = Vec::new();
        for a in (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| PingError::Resolve(what.clone(), e))?
        {
            if !out.contains(&a) {
                out.push(a);
            }
        }
        if out.is_empty() {
            return Err(PingError::NoAddress(what));
        }
        Ok(out)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.proto.name(), self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.proto.name(), self.host, self.port)
        }
    }
}

/// Everything one `npt ping` run needs.
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    /// Attempts to make; `None`: until stopped.
    pub count: Option<u64>,
    pub interval: Duration,
    /// How long one attempt may wait for its answer.
    pub timeout: Duration,
    /// UDP datagram size in bytes (header included).
    pub size: usize,
    /// UDP: any echo server (stamp inside the payload) instead of npt's framed echo.
    pub raw: bool,
    /// UDP framed: the secret of `npt serve --token` (the keyed handshake on each socket,
    /// then every packet sealed).
    pub token: Option<String>,
    pub trust: QuicTrust,
    /// `--via` (tcp:// only): each attempt is a connect through the proxy, measured until its
    /// CONNECT reply (the tunnel is open).
    pub via: Option<npt_proxy::Via>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        let t = Target::parse("tcp://127.0.0.1:7777").unwrap();
        assert_eq!(
            (t.proto, t.host.as_str(), t.port),
            (Proto::Tcp, "127.0.0.1", 7777)
        );
        let t = Target::parse("quic://[::1]:7778").unwrap();
        assert_eq!(
            (t.proto, t.host.as_str(), t.port),
            (Proto::Quic, "::1", 7778)
        );
        assert_eq!(t.to_string(), "quic://[::1]:7778");
        assert_eq!(
            Target::parse("udp://localhost:9/").unwrap().host,
            "localhost"
        );
        for bad in [
            "127.0.0.1:1",
            "http://a:1",
            "tcp://a",
            "tcp://:1",
            "tcp://a:0",
            "tcp://a:x",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn localhost_resolves() {
        let t = Target::parse("tcp://localhost:7").unwrap();
        let addrs = t.resolve().unwrap();
        assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 7));
    }
}
