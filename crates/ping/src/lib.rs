//! `npt ping`: the round-trip time of one hop, measured the way a forwarder chain pays it —
//! a TCP connect (SYN to SYN-ACK), a UDP echo (framed against `npt serve`, or raw against any
//! echo), or a QUIC handshake; and the host's own ICMP echo beside them ([`icmp`]). `compare`
//! uses these RTTs as the "theoretical" latency of a chain, `lab` uses them to check emulated
//! link delays.
//!
//! [`session`] holds the sans-IO sequence/timeout bookkeeping; [`net`] drives it with sockets
//! ([`echo`]: `--echo`'s connect + one framed echo per attempt; [`setup`]: `--setup`'s block
//! of each attempt's layers);
//! [`result`] is the JSON body of a `kind = "ping"` result document; [`workload`] is the
//! contract with the cli ([`workload::Ping`]). [`agent`] measures a hop agent's requests
//! (`npt serve --hop-agent`) with the same engine, and [`remote`] asks an agent to
//! (`npt ping --from`); [`from`] is the loop of requests that measures a whole ping that way
//! (`npt ping --from`, and `npt trace`'s segments between relays).
#![deny(clippy::indexing_slicing)] // parses echo and TCP replies from the network

pub mod agent;
pub mod echo;
mod frames;
pub mod from;
pub mod icmp;
pub mod net;
mod quic;
pub mod remote;
pub mod result;
pub mod session;
pub mod setup;
pub mod workload;

use std::net::SocketAddr;
use std::time::Duration;

pub use npt_client::QuicTrust;

pub use npt_client::target::{Proto, Target};

#[derive(Debug, thiserror::Error)]
pub enum PingError {
    #[error("target {0:?}: expected tcp://HOST:PORT, udp://HOST:PORT or quic://HOST:PORT")]
    BadTarget(String),
    #[error("target {0:?}: expected icmp://HOST (ICMP has no port)")]
    BadIcmpTarget(String),
    /// Neither ICMP socket could be opened.
    #[error("{0}")]
    IcmpSocket(String),
    #[error("cannot resolve {0}: {1}")]
    Resolve(String, std::io::Error),
    #[error("{0}: resolves to no address")]
    NoAddress(String),
    /// `-4`/`-6` left no address.
    #[error("{0}")]
    Family(String),
    #[error("cannot open a socket: {0}")]
    Socket(std::io::Error),
    #[error("QUIC client: {0}")]
    Quic(String),
    #[error("{0}: {1}")]
    Auth(SocketAddr, std::io::Error),
}

impl From<npt_client::target::BadTarget> for PingError {
    fn from(e: npt_client::target::BadTarget) -> PingError {
        PingError::BadTarget(e.0)
    }
}

impl From<npt_client::target::ResolveError> for PingError {
    fn from(e: npt_client::target::ResolveError) -> PingError {
        use npt_client::target::ResolveError as R;
        match e {
            R::Lookup { target, source } => {
                PingError::Resolve(format!("{}:{}", target.host, target.port), source)
            }
            R::NoAddress(t) => PingError::NoAddress(format!("{}:{}", t.host, t.port)),
            R::Family(f) => PingError::Family(f.to_string()),
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
    /// UDP `--token`: how each socket's handshake is bounded, and what a silent target means.
    pub handshake: Handshake,
    pub trust: QuicTrust,
    /// `--via` (tcp:// only): each attempt is a connect through the proxy, measured until its
    /// CONNECT reply (the tunnel is open).
    pub via: Option<npt_proxy::Via>,
    /// `--echo` (tcp:// only): each attempt is a new connection and one framed echo on it
    /// against `npt serve`, end to end ([`echo`]); without it a TCP attempt is a connect.
    pub echo: bool,
    /// `--setup` (with `--echo`): a second echo on each connection after the one the ping
    /// times, as the base round trip of the result's setup block ([`setup`]).
    pub setup: bool,
    /// `-4`/`-6`, `--bind`, `--dscp`: the sockets of TCP and UDP attempts (not QUIC's
    /// endpoint, nor `--via`'s proxy connection: the command line refuses those).
    pub source: npt_client::source::Source,
}

impl Config {
    /// What answers each attempt ([`npt_result::ping::answered_by`]).
    pub fn answered_by(&self) -> &'static str {
        answered_by(self.target.proto, self.via.is_some(), self.echo)
    }
}

#[cfg(test)]
impl Config {
    /// A config for tests: `target`, one attempt every 10 ms, each given 1 s, 64 bytes, framed,
    /// no token, proxy or `--echo`.
    pub(crate) fn for_test(target: &str) -> Config {
        Config {
            target: Target::parse(target).unwrap(),
            count: Some(1),
            interval: Duration::from_millis(10),
            timeout: Duration::from_secs(1),
            size: 64,
            raw: false,
            token: None,
            handshake: Default::default(),
            trust: Default::default(),
            via: None,
            echo: false,
            setup: false,
            source: Default::default(),
        }
    }
}

/// What answers an attempt over `proto`, through a proxy (`via`) or not, with `--echo` or not
/// ([`npt_result::ping::answered_by`]).
pub fn answered_by(proto: Proto, via: bool, echo: bool) -> &'static str {
    use npt_result::ping::answered_by as by;
    match proto {
        Proto::Tcp if echo => by::ECHO,
        Proto::Tcp if via => by::PROXY,
        Proto::Tcp => by::FIRST_LISTENER,
        Proto::Udp => by::ECHO,
        Proto::Quic => by::QUIC_SERVER,
    }
}

/// How a UDP ping with a token does the keyed handshake on each socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handshake {
    /// Its time and the messages each step may send ([`npt_client::auth::UdpBound`]).
    pub bound: npt_client::auth::UdpBound,
    /// A target that answers no Hello at all is echoed without the handshake: it may be an
    /// `npt serve` without `--token`, which ignores handshakes (a hop agent measuring the
    /// segment into a target, `npt trace`'s chain) — or a plain echo that returned the Hello,
    /// which goes on at once. A target that answers the Hello but not
    /// the secret still fails, under `auth`.
    pub plain_if_silent: bool,
}
