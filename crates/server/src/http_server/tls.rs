//! The HTTP responder's TLS config: a PEM cert/key pair, or a fresh rcgen self-signed
//! certificate for `localhost` / `127.0.0.1` / `::1`. ALPN offers `h2` and `http/1.1` (only
//! `http/1.1` with `--http1-only`).

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

use super::Error;

const ALPN_H2: &[u8] = b"h2";
const ALPN_H1: &[u8] = b"http/1.1";

/// The responder's TLS config: from `cert`/`key` PEM files if given, else self-signed.
pub fn server_config(
    cert_key: Option<(&Path, &Path)>,
    h1_only: bool,
) -> Result<Arc<ServerConfig>, Error> {
    let (certs, key) = match cert_key {
        Some((cert, key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| Error::Tls(format!("reading certificate {}: {e}", cert.display())))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| Error::Tls(format!("reading key {}: {e}", key.display())))?;
            (certs, key)
        }
        None => {
            let ck = rcgen::generate_simple_self_signed(vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
                "::1".to_string(),
            ])
            .map_err(|e| Error::Tls(format!("generating a self-signed certificate: {e}")))?;
            let key = PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into());
            (vec![ck.cert.der().clone()], key)
        }
    };
    let mut cfg = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Tls(format!("certificate/key: {e}")))?;
    cfg.alpn_protocols = if h1_only {
        vec![ALPN_H1.to_vec()]
    } else {
        vec![ALPN_H2.to_vec(), ALPN_H1.to_vec()]
    };
    Ok(Arc::new(cfg))
}
