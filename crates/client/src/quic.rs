//! The QUIC client side: one shared quinn endpoint (one UDP socket) for every user, the TLS
//! trust decision (`--ca` PEM or `--insecure`), the pre-flight connection that turns an
//! untrusted certificate into one clear error, and the classification of quinn's errors.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use npt_result::error::ErrorKind;
use rustls::pki_types::CertificateDer;

/// The ALPN protocol id (the same as `npt_server::quic::ALPN`).
pub const ALPN: &[u8] = b"npt";

/// How the client decides to trust the QUIC server's certificate.
#[derive(Clone, Debug, Default)]
pub enum QuicTrust {
    /// Only these certificates (DER) as roots: the server's own self-signed certificate,
    /// or the CA that issued it. Empty: nothing is trusted (every handshake fails).
    Roots(Vec<Vec<u8>>),
    /// Accept any certificate (`--insecure`): for tests against self-signed servers.
    #[default]
    Insecure,
}

impl QuicTrust {
    /// Reads the certificates of a PEM file (`--ca FILE`).
    pub fn from_pem_file(path: &std::path::Path) -> Result<QuicTrust, String> {
        use rustls::pki_types::pem::PemObject;
        let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .collect();
        let certs = certs.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if certs.is_empty() {
            return Err(format!("{}: no CERTIFICATE in the file", path.display()));
        }
        Ok(QuicTrust::Roots(
            certs.into_iter().map(|c| c.as_ref().to_vec()).collect(),
        ))
    }
}

/// `tls` for certificate and handshake failures, else `timeout`, `reset`, `closed`,
/// `protocol` or `local`.
pub fn classify_connection(e: &quinn::ConnectionError) -> ErrorKind {
    use quinn::ConnectionError as E;
    match e {
        E::TimedOut => ErrorKind::Timeout,
        E::ConnectionClosed(_) | E::ApplicationClosed(_) | E::Reset => ErrorKind::Reset,
        E::TransportError(t) => {
            let code = u64::from(t.code);
            if (0x100..0x200).contains(&code) {
                ErrorKind::Tls
            } else {
                ErrorKind::Protocol
            }
        }
        E::LocallyClosed => ErrorKind::Closed,
        E::VersionMismatch => ErrorKind::Protocol,
        E::CidsExhausted => ErrorKind::Local,
    }
}

/// A client endpoint for `target`'s address family with the chosen trust.
pub fn client_endpoint(
    target: SocketAddr,
    trust: &QuicTrust,
    timeout: Duration,
) -> Result<quinn::Endpoint, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?;
    let mut tls = match trust {
        QuicTrust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(npt_tls::AcceptAny(provider)))
            .with_no_client_auth(),
        QuicTrust::Roots(ders) => {
            let mut roots = rustls::RootCertStore::empty();
            for d in ders {
                roots
                    .add(CertificateDer::from(d.clone()))
                    .map_err(|e| format!("bad --ca certificate: {e}"))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    let idle = timeout.max(Duration::from_secs(1));
    transport.max_idle_timeout(idle.try_into().ok());
    cfg.transport_config(Arc::new(transport));
    let bind: SocketAddr = if target.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let mut ep = quinn::Endpoint::client(bind).map_err(|e| format!("cannot bind UDP: {e}"))?;
    ep.set_default_client_config(cfg);
    Ok(ep)
}

/// Connects once: an untrusted certificate or a silent server is reported before the run.
pub async fn preflight(
    ep: &quinn::Endpoint,
    target: SocketAddr,
    name: &str,
    timeout: Duration,
) -> Result<(), String> {
    let connecting = ep
        .connect(target, name)
        .map_err(|e| format!("cannot connect to {target}: {e}"))?;
    match tokio::time::timeout(timeout, connecting).await {
        Ok(Ok(c)) => {
            c.close(0u32.into(), b"preflight");
            Ok(())
        }
        Ok(Err(e)) if classify_connection(&e) == ErrorKind::Tls => Err(format!(
            "{target}: the server's certificate is not trusted ({e}); give its certificate \
             with --ca FILE, or skip verification with --insecure"
        )),
        Ok(Err(e)) => Err(format!("{target}: handshake failed: {e}")),
        Err(_) => Err(format!(
            "{target}: no QUIC answer within {timeout:?} (is `npt serve --quic` running?)"
        )),
    }
}
