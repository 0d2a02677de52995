//! `npt lifetime udp://HOST:PORT`: how long the path keeps an idle UDP flow alive, and whether
//! a flow that expired comes back from a new source port (a rebound mapping); `tcp://` the
//! same for idle TCP connections, and whether the path closed them (FIN, RST) or dropped them
//! silently ([`tcp`]).
//!
//! A client sending after an idle gap learns nothing — a NAT or a relay makes a new mapping
//! and the answer comes back — so the far end sends first: `npt serve` calls each flow back
//! after its gap ([`npt_wire::idle`]), and a flow whose callback never arrives was forgotten
//! by the path. Flows idle for growing gaps run in parallel, each on a fresh socket: a ladder
//! up to `--max`, then bisection inside the bracket ([`plan`]); the search is a sans-IO state
//! machine ([`search`]) driven by [`net`]; [`workload`] makes it a result.

pub mod net;
pub mod plan;
pub mod search;
pub mod tcp;
pub mod workload;

use std::time::Duration;

use npt_client::target::Target;

/// The longest `--max`: the responder's longest gap (`npt serve` calls back after at most
/// ten minutes).
pub const MAX_MAX: Duration = Duration::from_secs(600);

/// A validated `npt lifetime` run.
#[derive(Clone, Debug)]
pub struct Config {
    /// `udp://HOST:PORT` or `tcp://HOST:PORT`.
    pub target: Target,
    /// The longest idle gap tried.
    pub max: Duration,
    /// How narrow the bracket must get (None: 1 s, or 2 % of the lifetime when more).
    pub resolution: Option<Duration>,
    /// `--token`: each flow's socket does the keyed handshake first, and its requests and
    /// answers are sealed.
    pub token: Option<String>,
    /// `--via`: each flow through the proxy — a UDP flow its own SOCKS5 UDP ASSOCIATE, a
    /// connection its own CONNECT — so what is measured is the proxy's idle timeout and the
    /// path's behind it.
    pub via: Option<npt_proxy::Via>,
}

/// Where each flow goes: the target's address, and the proxy and target name with `--via`.
#[derive(Clone, Copy)]
pub struct Route<'a> {
    pub to: std::net::SocketAddr,
    pub host: &'a str,
    pub via: Option<&'a npt_proxy::Via>,
}

/// Why the search could not run or measure.
#[derive(Debug, thiserror::Error)]
pub enum LifetimeError {
    #[error(transparent)]
    Resolve(#[from] npt_client::target::ResolveError),
    #[error("cannot open a UDP socket: {0}")]
    Socket(std::io::Error),
    #[error(
        "{0} echoed the request unchanged: a plain echo; lifetime needs `npt serve` on the far end"
    )]
    PlainEcho(String),
    #[error(
        "no answer from {0}: lifetime needs `npt serve` (with idle callbacks; --token if it has \
         one) on the far end"
    )]
    Silent(String),
    #[error("{0}")]
    Token(std::io::Error),
    #[error("cannot connect to {0}: {1}")]
    Connect(String, std::io::Error),
    #[error("--via {0}: {1}")]
    Via(String, npt_proxy::ProxyError),
}
