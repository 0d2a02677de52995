//! The QUIC responder: every bidirectional stream of every connection is served by the same
//! stream responder as TCP ([`crate::stream::serve_stream`]), so a QUIC "request" is exactly a
//! TCP one carried on a stream (framed `Request` → `Response` of `reply_len` bytes, `Echo`).
//!
//! QUIC needs TLS 1.3: the server uses a self-signed certificate made at start (names
//! `localhost`, `127.0.0.1`, `::1`) unless PEM files are given. Clients must either trust that
//! certificate (it is available as PEM from [`QuicServer::cert_pem`]) or skip verification on
//! purpose (`npt run --insecure`). The ALPN protocol is [`ALPN`].
//!
//! 0-RTT ([`ZeroRtt`], `npt serve --quic-0rtt`) is off unless asked: its tickets allow no
//! early data. `accept` answers a resumed client's 0-RTT request at once (0.5-RTT, before the
//! client's Finished: a request an on-path attacker replays is answered again, which an echo
//! bounded by the request's own size and the reply budget allows); `reject` issues tickets that
//! promise early data and then forgets them, as a restarted server or another replica behind a
//! load balancer does — every 0-RTT attempt is rejected and falls back to a full handshake, the
//! server `npt setup` flags.
//!
//! With `--token` every stream opens with the same keyed handshake as a TCP connection
//! ([`crate::stream::Access::Handshake`], keyed to the connection's current address) and its
//! frames carry that stream's session tag; TLS alone proves nothing about the client.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use npt_wire::auth::ServerAuth;

use crate::budget::ReplyBudget;
use crate::hop_agent::HopAgent;
use crate::stream::{StreamCtx, Timeouts};
use crate::Counters;

/// The ALPN protocol id npt speaks over QUIC.
pub const ALPN: &[u8] = b"npt";

/// Where the server's certificate comes from.
#[derive(Clone, Debug, Default)]
pub enum QuicTls {
    /// A fresh self-signed certificate for `localhost`, `127.0.0.1` and `::1`.
    #[default]
    SelfSigned,
    /// PEM files: a certificate chain and its private key.
    Pem { cert: PathBuf, key: PathBuf },
}

#[derive(Debug, thiserror::Error)]
pub enum QuicError {
    #[error("cannot make a self-signed certificate: {0}")]
    Generate(String),
    #[error("cannot read {path}: {msg}")]
    Pem { path: PathBuf, msg: String },
    #[error("bad TLS configuration: {0}")]
    Tls(String),
    #[error("cannot listen on {addr} (UDP, QUIC): {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A running QUIC responder. Dropping it closes the endpoint.
pub struct QuicServer {
    endpoint: quinn::Endpoint,
    cert_der: Vec<u8>,
    cert_pem: String,
}

impl QuicServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.endpoint
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// The leaf certificate, DER (clients may pin it).
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// The leaf certificate as PEM (what `npt run --ca FILE` reads).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }
}

impl Drop for QuicServer {
    fn drop(&mut self) {
        self.endpoint.close(0u32.into(), b"server stopping");
    }
}

/// What the server does with 0-RTT (`npt serve --quic-0rtt`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZeroRtt {
    /// Tickets allow no early data: a resumed client does a 1-RTT handshake.
    #[default]
    Off,
    /// Early data accepted and answered before the handshake completes.
    Accept,
    /// Tickets promise early data, but every session is forgotten: each 0-RTT attempt is
    /// rejected and the client falls back to a full handshake.
    Reject,
}

/// A session store that keeps nothing: tickets are issued (`put` says stored) and never found.
#[derive(Debug)]
struct Forgetful;

impl rustls::server::StoresServerSessions for Forgetful {
    fn put(&self, _key: Vec<u8>, _value: Vec<u8>) -> bool {
        true
    }
    fn get(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn take(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn can_cache(&self) -> bool {
        true
    }
}

/// How each QUIC stream is served (see [`crate::stream::StreamCtx`]), and the connection's
/// 0-RTT.
#[derive(Clone)]
pub struct StreamOptions {
    /// `--token`: the keyed handshake's server side (None = open).
    pub auth: Option<Arc<ServerAuth>>,
    /// The clock the handshake's cookies are issued and checked against.
    pub epoch: Instant,
    pub timeouts: Timeouts,
    /// Per-address reply budget; None = unlimited.
    pub budget: Option<Arc<ReplyBudget>>,
    /// The hop agent hop requests on a stream go to (one that refuses them by default).
    pub hop: Arc<HopAgent>,
    /// Per-address budget of authenticated streams' bulk bytes; None = unlimited.
    pub open_budget: Option<Arc<ReplyBudget>>,
    pub zero_rtt: ZeroRtt,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            auth: None,
            epoch: Instant::now(),
            timeouts: Timeouts::default(),
            budget: None,
            hop: Arc::new(HopAgent::new(None, Arc::new(Counters::default()))),
            open_budget: None,
            zero_rtt: ZeroRtt::Off,
        }
    }
}

/// Binds `addr` (UDP) and serves QUIC on the given runtime until the returned value is dropped,
/// with default deadlines and no reply budget (`Server::start_quic` shares the server's).
/// `secret`: `--token` (None = open).
pub fn start_quic(
    handle: &tokio::runtime::Handle,
    addr: SocketAddr,
    tls: QuicTls,
    secret: Option<&str>,
    counters: Arc<Counters>,
) -> Result<QuicServer, QuicError> {
    let opts = StreamOptions {
        auth: secret.map(|s| Arc::new(ServerAuth::new(s.as_bytes(), crate::random_key()))),
        hop: Arc::new(HopAgent::new(None, counters.clone())),
        ..StreamOptions::default()
    };
    start_quic_with(handle, addr, tls, opts, counters)
}

/// [`start_quic`] with every stream option.
pub fn start_quic_with(
    handle: &tokio::runtime::Handle,
    addr: SocketAddr,
    tls: QuicTls,
    opts: StreamOptions,
    counters: Arc<Counters>,
) -> Result<QuicServer, QuicError> {
    let (chain, key) = load_tls(&tls)?;
    let Some(leaf) = chain.first() else {
        return Err(QuicError::Tls("no certificate".into()));
    };
    let cert_der = leaf.as_ref().to_vec();
    let cert_pem = pem_encode("CERTIFICATE", &cert_der);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut rustls_cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| QuicError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| QuicError::Tls(e.to_string()))?;
    rustls_cfg.alpn_protocols = vec![ALPN.to_vec()];
    rustls_cfg.max_early_data_size = match opts.zero_rtt {
        ZeroRtt::Off => 0,
        // quinn takes no other size: early data is bounded by the transport's flow control.
        ZeroRtt::Accept | ZeroRtt::Reject => u32::MAX,
    };
    if opts.zero_rtt == ZeroRtt::Reject {
        rustls_cfg.session_storage = Arc::new(Forgetful);
    }
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(rustls_cfg)
        .map_err(|e| QuicError::Tls(e.to_string()))?;
    let mut server_cfg = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(256u32.into())
        .max_concurrent_uni_streams(0u32.into())
        .max_idle_timeout(Some(
            Duration::from_secs(60)
                .try_into()
                .map_err(|_| QuicError::Tls("idle timeout".into()))?,
        ));
    server_cfg.transport_config(Arc::new(transport));
    let _guard = handle.enter();
    // Large buffers: a burst of Initials (1,200+ bytes each) must not overflow the default
    // ~200 KiB and be dropped by the kernel before the server can count or answer them.
    let sock = crate::udp_socket(addr).map_err(|source| QuicError::Bind { addr, source })?;
    let endpoint = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(server_cfg),
        sock,
        Arc::new(quinn::TokioRuntime),
    )
    .map_err(|source| QuicError::Bind { addr, source })?;
    let ep = endpoint.clone();
    handle.spawn(async move {
        while let Some(incoming) = ep.accept().await {
            let counters = counters.clone();
            let opts = opts.clone();
            tokio::spawn(async move {
                if opts.zero_rtt == ZeroRtt::Accept {
                    if let Some(conn) = early(incoming, &counters) {
                        serve_connection(conn, opts, counters).await;
                    }
                    return;
                }
                // The handshake gets the `io` deadline: an Initial and then silence must not
                // hold state for the whole idle timeout (dropping it closes the connection).
                let conn = match tokio::time::timeout(opts.timeouts.io, incoming).await {
                    Ok(Ok(conn)) => conn,
                    Ok(Err(quinn::ConnectionError::TimedOut)) | Err(_) => {
                        counters
                            .quic_handshake_timeout
                            .fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Ok(Err(_)) => {
                        counters
                            .quic_handshake_failed
                            .fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                };
                serve_connection(conn, opts, counters).await;
            });
        }
    });
    Ok(QuicServer {
        endpoint,
        cert_der,
        cert_pem,
    })
}

/// `--quic-0rtt accept`: the connection before its handshake completes, so its 0-RTT
/// streams are answered at once (0.5-RTT). A handshake that then fails or stalls ends the
/// connection, counted as aborted or lost by [`serve_connection`] (the idle timeout bounds
/// it).
fn early(incoming: quinn::Incoming, counters: &Counters) -> Option<quinn::Connection> {
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(_) => {
            counters
                .quic_handshake_failed
                .fetch_add(1, Ordering::Relaxed);
            return None;
        }
    };
    match connecting.into_0rtt() {
        Ok((conn, _accepted)) => Some(conn),
        // Never on a server (it may always send 0.5-RTT data); counted if it ever is.
        Err(_) => {
            counters
                .quic_handshake_failed
                .fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

async fn serve_connection(conn: quinn::Connection, opts: StreamOptions, counters: Arc<Counters>) {
    counters.quic_conns.fetch_add(1, Ordering::Relaxed);
    // Ends when the peer closes the connection or it idles out; how it ended is counted.
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(e) => {
                if let Some(c) = connection_end(&counters, &e) {
                    c.fetch_add(1, Ordering::Relaxed);
                }
                break;
            }
        };
        counters.quic_streams.fetch_add(1, Ordering::Relaxed);
        let counters = counters.clone();
        let opts = opts.clone();
        // Read per stream: QUIC connections may migrate, and the cookie binds the address.
        let addr = conn.remote_address();
        let peer = addr.ip();
        tokio::spawn(async move {
            let mut joined = tokio::io::join(recv, send);
            let cx = StreamCtx {
                access: match &opts.auth {
                    Some(auth) => crate::stream::Access::Handshake {
                        auth,
                        peer: addr,
                        epoch: opts.epoch,
                    },
                    None => crate::stream::Access::Open,
                },
                counters: &counters.quic,
                timeouts: opts.timeouts,
                budget: opts.budget.as_deref(),
                open_budget: opts.open_budget.as_deref(),
                peer: Some(peer),
                hop: &opts.hop,
                tcp_fd: None,
                idle: None,
            };
            let ok = crate::stream::serve_stream(&mut joined, &cx).await.is_ok();
            let (mut recv, mut send) = joined.into_inner();
            if ok {
                let _ = send.finish();
            } else {
                let _ = send.reset(1u32.into());
                let _ = recv.stop(1u32.into());
            }
        });
    }
}

/// The counter for how a connection ended, if that was not a clean close.
fn connection_end<'a>(c: &'a Counters, e: &quinn::ConnectionError) -> Option<&'a AtomicU64> {
    use quinn::ConnectionError as E;
    match e {
        E::ApplicationClosed(a) if a.error_code == 0u32.into() => None,
        E::ConnectionClosed(t) if t.error_code == quinn::TransportErrorCode::NO_ERROR => None,
        // The server is stopping.
        E::LocallyClosed => None,
        E::TimedOut => Some(&c.quic_lost),
        _ => Some(&c.quic_aborted),
    }
}

fn load_tls(
    tls: &QuicTls,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), QuicError> {
    match tls {
        QuicTls::SelfSigned => {
            let names = vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
                "::1".to_string(),
            ];
            let ck = rcgen::generate_simple_self_signed(names)
                .map_err(|e| QuicError::Generate(e.to_string()))?;
            let cert = CertificateDer::from(ck.cert.der().to_vec());
            let key = PrivateKeyDer::try_from(ck.key_pair.serialize_der())
                .map_err(|e| QuicError::Generate(e.to_string()))?;
            Ok((vec![cert], key))
        }
        QuicTls::Pem { cert, key } => {
            let pem_err = |path: &PathBuf, msg: String| QuicError::Pem {
                path: path.clone(),
                msg,
            };
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
                .map_err(|e| pem_err(cert, e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| pem_err(cert, e.to_string()))?;
            if chain.is_empty() {
                return Err(pem_err(cert, "no CERTIFICATE block".into()));
            }
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| pem_err(key, e.to_string()))?;
            Ok((chain, key))
        }
    }
}

/// PEM-encodes one DER block (RFC 7468: base64 in 64-column lines).
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    // Base64 is ASCII, so every 64-byte chunk is whole characters.
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or(""));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_roundtrip() {
        let der: Vec<u8> = (0..=255u8).collect();
        let pem = pem_encode("CERTIFICATE", &der);
        let back = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        assert_eq!(back.as_ref(), &der[..]);
    }
}
