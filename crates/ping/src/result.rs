//! The body of a `kind = "ping"` result document from a session's tally: the tally is the
//! ping's stats value ([`npt_result::stats::PingStats`]) and its one summarize builds the body
//! every reader of results reads ([`npt_result::ping`]).

use std::net::SocketAddr;

pub use npt_result::ping::{PingBody, PingSummary};
use npt_result::stats::{PingMeta, SetupMeta, Stats};

use crate::session::Tally;
use crate::Proto;

/// The result body of a ping of `target` over `proto` that tried `addrs`.
/// `answered_by`: what answered each attempt ([`crate::Config::answered_by`]); `setup`: the
/// `--setup` block's description, when the tally holds one.
pub fn body(
    target: &str,
    proto: Proto,
    addrs: &[SocketAddr],
    answered_by: &str,
    t: &Tally,
    setup: Option<SetupMeta>,
) -> PingBody {
    let meta = PingMeta {
        target: target.to_string(),
        proto: proto.name().to_string(),
        addresses: addrs.iter().map(|a| a.to_string()).collect(),
        measured_from: None,
        answered_by: Some(answered_by.to_string()),
        setup,
    };
    t.summarize(&meta)
}
