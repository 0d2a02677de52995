//! TLS setup for both sides: the responder's config (a PEM cert/key pair, or a fresh rcgen
//! self-signed certificate for `localhost`/`127.0.0.1`) and the client's (the bundled Mozilla
//! roots, or `--insecure` which accepts any certificate). ALPN offers `h2` and `http/1.1`.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, ServerConfig};

use crate::Error;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// ALPN protocol ids.
pub const ALPN_H2: &[u8] = b"h2";
pub const ALPN_H1: &[u8] = b"http/1.1";

/// The responder's TLS config: from `cert`/`key` PEM files if given, else self-signed.
pub fn server_config(cert_key: Option<(&Path, &Path)>) -> Result<Arc<ServerConfig>, Error> {
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
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Tls(format!("certificate/key: {e}")))?;
    cfg.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_H1.to_vec()];
    Ok(Arc::new(cfg))
}

/// The client's TLS config. `h2` selects the ALPN offer (`h2` only, or `http/1.1` only).
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
    cfg.alpn_protocols = vec![if h2 { ALPN_H2 } else { ALPN_H1 }.to_vec()];
    // Every `--new-conn` request must pay for a full handshake, as a fresh client would.
    cfg.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(cfg))
}
