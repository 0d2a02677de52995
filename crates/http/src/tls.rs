//! TLS setup of the client: the bundled Mozilla roots, or `--insecure` which accepts any
//! certificate. ALPN offers `h2` and `http/1.1` for HTTP/2 runs (the server's choice says
//! which it speaks: [`crate::client::negotiate`]), `http/1.1` alone for HTTP/1.1 runs. (The
//! responder's side is in npt-server.)

use std::sync::Arc;

use rustls::ClientConfig;

use crate::Error;

/// ALPN protocol ids.
pub const ALPN_H2: &[u8] = b"h2";
pub const ALPN_H1: &[u8] = b"http/1.1";

/// The client's TLS config ([`npt_tls::client_config`]). `h2` selects the ALPN offer (`h2`
/// then `http/1.1`, or `http/1.1` only).
pub fn client_config(insecure: bool, h2: bool) -> Result<Arc<ClientConfig>, Error> {
    let alpn: &[&[u8]] = if h2 { &[ALPN_H2, ALPN_H1] } else { &[ALPN_H1] };
    let mut cfg = npt_tls::client_config(insecure, alpn).map_err(|e| Error::Tls(e.to_string()))?;
    // Every `--new-conn` request must pay for a full handshake, as a fresh client would.
    cfg.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(cfg))
}
