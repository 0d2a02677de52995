//! The probe's UDP flows that need work before the schedule starts: `--token`'s keyed handshake
//! on each flow's socket ([`npt_client::auth::udp`]), and through `--via` each flow's SOCKS5 UDP
//! association (and its handshake behind the relay's header,
//! [`npt_client::auth::udp_relayed`]) — so a failed handshake fails the probe before anything
//! is measured, and nothing has started that would have to be stopped. TCP flows do theirs as
//! they connect (`driver::tcp`).

use std::io;
use std::net::UdpSocket;
use std::time::Duration;

use npt_client::auth::{udp, udp_relayed, HANDSHAKE_TIMEOUT};
use npt_proxy::udp_flow::SocksUdp;
use npt_proxy::{Phases, ProxyError};
use npt_wire::auth::SessionKey;

/// How long a flow's SOCKS5 association may take.
const ASSOCIATE_TIMEOUT: Duration = Duration::from_secs(5);

/// A flow through `--via`: its socket (connected to the relay), the association, how long the
/// proxy took, and the session key with `--token`; or why the proxy refused it (that flow only
/// reports the error, the others run).
pub type Relayed = Result<(UdpSocket, SocksUdp, Phases, Option<SessionKey>), ProxyError>;

/// UDP through `--via`: every flow's association and (with `--token`) handshake, before the
/// schedule starts, indexed by client. Empty without `--via` or over TCP.
pub fn relayed_flows(cfg: &super::runner::ProbeConfig) -> io::Result<Vec<Option<Relayed>>> {
    let mut out = Vec::new();
    let Some(via) = &cfg.via else {
        return Ok(out);
    };
    if !cfg.proto.is_udp() {
        return Ok(out);
    }
    for _ in 0..cfg.clients {
        let flow = match super::driver::socks_udp(via, &cfg.target, cfg.addr, ASSOCIATE_TIMEOUT) {
            Ok((sock, relay, phases)) => {
                let key = match &cfg.token {
                    Some(secret) => Some(udp_relayed(&sock, &relay, secret, HANDSHAKE_TIMEOUT)?),
                    None => None,
                };
                Ok((sock, relay, phases, key))
            }
            Err(e) => Err(e),
        };
        out.push(Some(flow));
    }
    Ok(out)
}

/// `--token` over UDP, direct (no `--via`): every flow's socket and handshake, before the
/// schedule starts, indexed by client (a failed handshake fails the probe: nothing could be
/// measured through it). Empty without a token.
pub fn udp_flows(
    cfg: &super::runner::ProbeConfig,
) -> io::Result<Vec<Option<(UdpSocket, SessionKey)>>> {
    let mut out = Vec::new();
    if let (super::runner::Proto::Udp, Some(secret), None) = (cfg.proto, &cfg.token, &cfg.via) {
        for _ in 0..cfg.clients {
            let sock = super::driver::udp_socket(cfg.addr, &cfg.source)?;
            let key = udp(&sock, secret, HANDSHAKE_TIMEOUT)?;
            out.push(Some((sock, key)));
        }
    }
    Ok(out)
}
