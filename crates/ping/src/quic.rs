//! `npt ping quic://`'s attempts, driven by [`crate::net`]: one QUIC handshake each, on a
//! client endpoint per address family that every attempt reuses, done when the client has the
//! server's handshake; the endpoints are closed at the end with a bounded wait for their
//! CONNECTION_CLOSE frames. Apart from `net` so that file keeps to the TCP and UDP loops.

use std::net::SocketAddr;
use std::time::Duration;

use npt_result::error::ErrorKind;

use crate::{Config, PingError};

/// QUIC handshakes on one endpoint per address family.
pub(crate) struct Quic {
    rt: tokio::runtime::Runtime,
    trust: npt_client::QuicTrust,
    name: String,
    timeout: Duration,
    endpoints: Vec<(bool, quinn::Endpoint)>,
}

impl Quic {
    pub(crate) fn new(cfg: &Config) -> Result<Quic, PingError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(PingError::Socket)?;
        Ok(Quic {
            rt,
            trust: cfg.trust.clone(),
            name: cfg.target.host.clone(),
            timeout: cfg.timeout,
            endpoints: Vec::new(),
        })
    }

    fn endpoint(&mut self, to: SocketAddr) -> Result<quinn::Endpoint, (ErrorKind, String)> {
        if let Some((_, ep)) = self.endpoints.iter().find(|(v4, _)| *v4 == to.is_ipv4()) {
            return Ok(ep.clone());
        }
        let _guard = self.rt.enter();
        let ep = npt_client::quic::client_endpoint(to, &self.trust, self.timeout)
            .map_err(|e| (ErrorKind::Local, e))?;
        self.endpoints.push((to.is_ipv4(), ep.clone()));
        Ok(ep)
    }

    /// One handshake to `to`: done when the client has the server's handshake (1 RTT, or 2
    /// if the server asks for address validation with a Retry).
    pub(crate) fn attempt(
        &mut self,
        to: SocketAddr,
        left: Duration,
    ) -> Result<(), (ErrorKind, String)> {
        let ep = self.endpoint(to)?;
        let name = self.name.clone();
        self.rt.block_on(async move {
            let connecting = ep
                .connect(to, &name)
                .map_err(|e| (ErrorKind::Local, format!("{to}: {e}")))?;
            match tokio::time::timeout(left, connecting).await {
                Ok(Ok(conn)) => {
                    conn.close(0u32.into(), b"ping");
                    Ok(())
                }
                Ok(Err(e)) => Err((
                    npt_client::quic::classify_connection(&e),
                    format!("{to}: {e}"),
                )),
                Err(_) => Err((
                    ErrorKind::Timeout,
                    format!("{to}: no handshake within {left:?}"),
                )),
            }
        })
    }

    /// Lets the endpoints send their CONNECTION_CLOSE frames (bounded).
    pub(crate) fn close(&mut self) {
        let _guard = self.rt.enter();
        for (_, ep) in self.endpoints.drain(..) {
            ep.close(0u32.into(), b"done");
            let _ = self.rt.block_on(tokio::time::timeout(
                Duration::from_millis(500),
                ep.wait_idle(),
            ));
        }
    }
}
