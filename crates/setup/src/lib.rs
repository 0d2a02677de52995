//! `npt setup URL`: what each layer of a connection's setup costs, in milliseconds and in round
//! trips of the path — TCP connect, a SOCKS5 proxy's greeting and CONNECT (or UDP ASSOCIATE)
//! or an HTTP proxy's CONNECT (`--via`), TLS 1.2 or 1.3 (fresh or resumed), the QUIC handshake (1-RTT, or 0-RTT
//! when resumed), and the first response byte — each beside the round trips its protocol
//! needs, flagged when it took more (a broken 0-RTT, an extra proxy round trip).
//!
//! Every attempt is a fresh connection, its layers timed one after the other ([`tcp`],
//! [`quic`], [`udp`]); the base round trip is a second request on each set-up connection (one round
//! trip through every layer to the far end and back, none of the setup in it), or for a
//! `tcp://` target the TCP connect to the first hop. [`classify`] turns the recorded timings
//! into the verdict without a socket; [`workload`] makes it a result.

pub mod classify;
pub mod quic;
pub mod tcp;
pub mod udp;
pub mod workload;

use std::time::Duration;

use classify::{Layer, Plan};
use npt_proxy::Via;
use npt_result::stats::setup::{first_echo, first_response_byte, tcp_plan};

/// The protocol stack a target names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// TCP connect (through `--via`) and nothing more.
    Tcp,
    /// TCP, then `GET /` over HTTP/1.1.
    Http,
    /// TCP, TLS, then `GET /`.
    Https,
    /// A QUIC handshake, then one framed echo on a stream (`npt serve --quic`).
    Quic,
    /// Through `--via socks5://`: the UDP ASSOCIATE; then one framed echo (`npt serve`).
    Udp,
}

impl Scheme {
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Tcp => "tcp",
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Quic => "quic",
            Scheme::Udp => "udp",
        }
    }
}

/// The TLS version `--tls` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    V12,
    V13,
}

impl TlsVersion {
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::V12 => "1.2",
            TlsVersion::V13 => "1.3",
        }
    }
}

/// A validated `npt setup` run.
#[derive(Clone, Debug)]
pub struct Config {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    /// The proxy the TCP connections go through.
    pub via: Option<Via>,
    /// For `https://`.
    pub tls: TlsVersion,
    /// Resume the TLS session (QUIC: and send the request in 0-RTT) from a ticket fetched by
    /// one uncounted connection first.
    pub resume: bool,
    /// Fresh connections to measure.
    pub count: u32,
    /// The most one attempt may take.
    pub timeout: Duration,
    /// The name the TLS client sends (SNI); the certificate is not checked (`--insecure` is
    /// the only trust this measurement needs: the handshake is the same).
    pub server_name: String,
}

/// Why the run could not measure.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot resolve {0}: {1}")]
    Resolve(String, std::io::Error),
    #[error("{0}: resolves to no address")]
    NoAddress(String),
    #[error("{0}")]
    Client(String),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

impl Config {
    /// The layers a connection of this run sets up, with the round trips each needs.
    pub fn plan(&self) -> Vec<Plan> {
        let p = Plan::new;
        let mut v = Vec::new();
        if self.scheme == Scheme::Quic {
            v.push(if self.resume {
                p(Layer::Quic, "QUIC 0-RTT", 0.0)
            } else {
                p(Layer::Quic, "QUIC handshake", 1.0)
            });
            v.push(first_response_byte());
            return v;
        }
        let datagrams = self.scheme == Scheme::Udp;
        match &self.via {
            None if datagrams => return vec![first_echo()],
            None => v.extend(tcp_plan(None)),
            Some(via) => v.extend(via.setup_plan(datagrams)),
        }
        if self.scheme == Scheme::Https {
            let (what, n) = match (self.tls, self.resume) {
                (TlsVersion::V13, false) => ("TLS 1.3", 1.0),
                (TlsVersion::V13, true) => ("TLS 1.3 resumed", 1.0),
                (TlsVersion::V12, false) => ("TLS 1.2", 2.0),
                (TlsVersion::V12, true) => ("TLS 1.2 resumed", 1.0),
            };
            v.push(p(Layer::Tls, what, n));
        }
        if datagrams {
            v.push(first_echo());
        } else if self.scheme != Scheme::Tcp {
            v.push(first_response_byte());
        }
        v
    }

    /// `scheme://host:port` as the result names it.
    pub fn target(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{}://{host}:{}", self.scheme.name(), self.port)
    }
}

/// Nanoseconds of a duration, saturated.
pub(crate) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
