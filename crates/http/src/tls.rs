//! TLS setup of the client: the bundled Mozilla roots, or `--insecure` which accepts any
//! certificate. ALPN offers `h2` and `http/1.1` for HTTP/2 runs (the server's choice says
//! which it speaks: [`crate::client::negotiate`]), `http/1.1` alone for HTTP/1.1 runs. (The
//! responder's side is in npt-server.)

use std::sync::Arc;

use rustls::crypto::{ring, CryptoProvider};
use rustls::ClientConfig;

use crate::Error;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// ALPN protocol ids.
pub const ALPN_H2: &[u8] = b"h2";
pub const ALPN_H1: &[u8] = b"http/1.1";

/// The client's TLS config. `h2` selects the ALPN offer (`h2` then `http/1.1`, or `http/1.1`
/// only).
pub fn client_config(insecure: bool, h2: bool) -> Result<Arc<ClientConfig>, Error> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?;
    let mut cfg = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(npt_tls::AcceptAny(provider())))
            .with_no_client_auth()
    } else {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    cfg.alpn_protocols = if h2 {
        vec![ALPN_H2.to_vec(), ALPN_H1.to_vec()]
    } else {
        vec![ALPN_H1.to_vec()]
    };
    // Every `--new-conn` request must pay for a full handshake, as a fresh client would.
    cfg.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(cfg))
}
