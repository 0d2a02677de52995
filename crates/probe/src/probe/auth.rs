//! `--token` for the probe's UDP flows: each flow's socket does the keyed handshake
//! ([`npt_client::auth::udp`]) before the schedule starts, so a failed handshake fails the probe
//! before anything is measured. TCP flows do theirs as they connect (`driver::tcp`).

use std::io;
use std::net::UdpSocket;

use npt_client::auth::{udp, HANDSHAKE_TIMEOUT};
use npt_wire::auth::SessionKey;

/// `--token` over UDP, direct (through `--via` the runner does each flow's handshake once its
/// relay is open, [`npt_client::auth::udp_relayed`]): every flow's socket and handshake, before the
/// schedule starts, indexed by client (a failed handshake fails the probe: nothing could be
/// measured through it). Empty without a token.
pub fn udp_flows(
    cfg: &super::runner::ProbeConfig,
) -> io::Result<Vec<Option<(UdpSocket, SessionKey)>>> {
    let mut out = Vec::new();
    if let (super::runner::Proto::Udp, Some(secret), None) = (cfg.proto, &cfg.token, &cfg.via) {
        for _ in 0..cfg.clients {
            let sock = super::driver::udp_socket(cfg.addr)?;
            let key = udp(&sock, secret, HANDSHAKE_TIMEOUT)?;
            out.push(Some((sock, key)));
        }
    }
    Ok(out)
}
