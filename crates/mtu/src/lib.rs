//! `npt mtu udp://HOST:PORT`: the largest datagram that crosses the path each way, whether a
//! too-big datagram is answered by an ICMP "fragmentation needed" / "packet too big" (PMTUD
//! works) or vanishes (a black hole, bracketed), and whether the far end received fragments.
//!
//! DF-set probes of searched sizes: up, the client's own padded `Mtu` frames, which `npt
//! serve` answers with what arrived; down, datagrams the responder sends of the sizes asked
//! ([`npt_wire::mtu`]). Through `--via socks5://` the probes cross the proxy's UDP relay
//! (each datagram behind its SOCKS5 header on the client's leg). The search is a sans-IO state machine ([`search`]) driven by [`net`];
//! [`workload`] makes it a result.

pub mod agent;
pub mod net;
pub mod search;
pub mod workload;

use std::time::Duration;

use npt_client::target::Target;

/// IPv4 + UDP headers under a datagram.
pub const IPV4_HEADERS: usize = 28;
/// IPv6 + UDP headers under a datagram.
pub const IPV6_HEADERS: usize = 48;
/// The largest IP packet tried by default: an Ethernet path's. Not the path MTU this host's
/// kernel holds toward the target — that may be one it learned from an ICMP (a search would
/// then never try above it); a smaller interface of this host refuses larger probes at once.
pub const DEFAULT_MAX_PACKET: usize = 1500;
/// The longest a search may take (`--timeout`'s default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A validated `npt mtu` run.
#[derive(Clone, Debug)]
pub struct Config {
    /// `udp://HOST:PORT`.
    pub target: Target,
    /// The largest datagram tried (None: [`DEFAULT_MAX_PACKET`] less the headers).
    pub max: Option<usize>,
    /// `--token`: the socket does the keyed handshake first; down probes may then be larger
    /// than their requests.
    pub token: Option<String>,
    /// The longest the search may take.
    pub timeout: Duration,
    /// `--via socks5://`: the probes go through the proxy's UDP relay (UDP ASSOCIATE).
    pub via: Option<npt_proxy::Via>,
}

/// Why the search could not run or measure.
#[derive(Debug, thiserror::Error)]
pub enum MtuError {
    #[error(transparent)]
    Resolve(#[from] npt_client::target::ResolveError),
    #[error("cannot open a UDP socket: {0}")]
    Socket(std::io::Error),
    #[error("no answer from {0}, not even to the smallest probe: mtu needs `npt serve` (--token if it has one) or an echo on the far end")]
    Silent(String),
    #[error("{0}")]
    Token(std::io::Error),
    #[error("--via: {0}")]
    Proxy(#[from] npt_proxy::ProxyError),
}
