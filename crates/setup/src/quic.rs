//! One attempt over QUIC: a fresh connection's handshake, one framed echo on a stream (the
//! first response byte), and a second echo on a new stream (the base round trip: one round
//! trip through the connection, no setup in it), against `npt serve --quic`.
//!
//! With `--resume` the client offers early data and the connection goes 0-RTT when its
//! ticket allows: the QUIC layer then ends as soon as the request can be sent (it costs no
//! round trip), and the echo is sent in 0-RTT. When the server rejects the early data quinn
//! drops the stream; the client then waits for the handshake and sends again, as a real
//! client must — the first byte comes a round trip later, which is what a broken 0-RTT costs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use npt_result::error::ErrorKind;
use npt_wire::frame::{Header, Kind, HEADER_LEN};

use crate::classify::{Attempt, Layer};
use crate::tcp::Failure;
use crate::{ns, Config};

/// The ALPN `npt serve --quic` speaks.
const ALPN: &[u8] = b"npt";

/// A client endpoint for the run: TLS 1.3, any certificate (the handshake is the same), early
/// data and resumption only with `--resume`.
pub fn endpoint(cfg: &Config, to: SocketAddr) -> Result<quinn::Endpoint, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(npt_tls::AcceptAny(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    if cfg.resume {
        tls.enable_early_data = true;
    } else {
        tls.resumption = rustls::client::Resumption::disabled();
    }
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut qc = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(cfg.timeout.try_into().ok());
    qc.transport_config(Arc::new(transport));
    let bind: SocketAddr = if to.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let mut ep = quinn::Endpoint::client(bind).map_err(|e| format!("cannot bind UDP: {e}"))?;
    ep.set_default_client_config(qc);
    Ok(ep)
}

fn lost(e: &quinn::ConnectionError) -> Failure {
    (
        npt_client::quic::classify_connection(e),
        format!("QUIC: {e}"),
    )
}

/// One fresh connection to `to`, its layers recorded in `a` as they complete.
pub async fn attempt(
    cfg: &Config,
    ep: &quinn::Endpoint,
    to: SocketAddr,
    a: &mut Attempt,
) -> Result<(), Failure> {
    let t = Instant::now();
    let connecting = ep
        .connect(to, &cfg.server_name)
        .map_err(|e| (ErrorKind::Local, format!("cannot connect to {to}: {e}")))?;
    let conn = match connecting.into_0rtt() {
        Ok((conn, accepted)) => {
            a.layers.push((Layer::Quic, ns(t.elapsed())));
            let t = Instant::now();
            let first = match echo(&conn).await {
                Ok(first) => {
                    a.zero_rtt = Some(accepted.await);
                    first
                }
                Err(Echo::Rejected) => {
                    a.zero_rtt = Some(false);
                    accepted.await;
                    echo(&conn).await.map_err(Echo::failure)?;
                    ns(t.elapsed())
                }
                Err(e) => return Err(e.failure()),
            };
            // The first byte counts from when the request could first be sent.
            a.layers.push((Layer::FirstByte, first));
            conn
        }
        Err(connecting) => {
            let conn = connecting.await.map_err(|e| lost(&e))?;
            a.layers.push((Layer::Quic, ns(t.elapsed())));
            let first = echo(&conn).await.map_err(Echo::failure)?;
            a.layers.push((Layer::FirstByte, first));
            conn
        }
    };
    a.rtt_ns = Some(echo(&conn).await.map_err(Echo::failure)?);
    conn.close(0u32.into(), b"done");
    Ok(())
}

/// How an echo failed.
enum Echo {
    /// The server rejected the 0-RTT data the stream was sent in.
    Rejected,
    Failed(Failure),
}

impl Echo {
    fn failure(self) -> Failure {
        match self {
            Echo::Rejected => (
                ErrorKind::Protocol,
                "0-RTT rejected after the handshake".into(),
            ),
            Echo::Failed(f) => f,
        }
    }
}

/// One framed echo on a new stream: ns from the stream's opening to the reply's first byte;
/// the reply is read whole.
async fn echo(conn: &quinn::Connection) -> Result<u64, Echo> {
    let t = Instant::now();
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| Echo::Failed(lost(&e)))?;
    let mut req = [0u8; HEADER_LEN];
    Header {
        kind: Kind::Echo,
        flags: 0,
        frame_len: u32::try_from(HEADER_LEN).unwrap_or(u32::MAX),
        reply_len: 0,
        flow: 1,
        status: 0,
        seq: 1,
        send_ts: 0,
        token: 0,
    }
    .encode(&mut req)
    .map_err(|e| Echo::Failed((ErrorKind::Internal, e.to_string())))?;
    match send.write_all(&req).await {
        Ok(()) => {}
        Err(quinn::WriteError::ZeroRttRejected) => return Err(Echo::Rejected),
        Err(e) => return Err(Echo::Failed((ErrorKind::Reset, format!("QUIC send: {e}")))),
    }
    let mut got = [0u8; HEADER_LEN];
    let mut n = 0;
    let mut first = None;
    // Bounded: every pass reads at least one byte of the 48 or ends.
    while n < HEADER_LEN {
        let rest = got.get_mut(n..).unwrap_or_default();
        match recv.read(rest).await {
            Ok(Some(k)) => {
                first.get_or_insert_with(|| ns(t.elapsed()));
                n += k;
            }
            Ok(None) => {
                return Err(Echo::Failed((
                    ErrorKind::Closed,
                    "the stream ended before the echo".into(),
                )))
            }
            Err(quinn::ReadError::ZeroRttRejected) => return Err(Echo::Rejected),
            Err(e) => return Err(Echo::Failed((ErrorKind::Reset, format!("QUIC read: {e}")))),
        }
    }
    match Header::decode(&got) {
        Ok(h) if h.kind == Kind::EchoReply => Ok(first.unwrap_or(0)),
        _ => Err(Echo::Failed((
            ErrorKind::Protocol,
            "not an npt serve echo (is it `npt serve --quic`?)".into(),
        ))),
    }
}
