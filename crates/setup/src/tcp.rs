//! One attempt over TCP: a fresh connection (to the target, or to the `--via` proxy and through
//! its greeting and CONNECT), TLS when the target is `https://`, then `GET /` — each step
//! timed on its own — and a second `GET /` on the same connection, whose first byte is one
//! round trip through every layer with no setup in it: the base round trip.
//!
//! The TLS client's version and resumption are the run's: a fresh session (resumption off),
//! or with `--resume` the session store the previous connection left its ticket in (the
//! caller primes it with one connection). Whether the server resumed is read from rustls'
//! handshake kind.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use npt_result::error::{io_error_kind, ErrorKind};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::classify::{Attempt, Layer};
use crate::{ns, Config, Scheme, TlsVersion};

/// Why an attempt stopped: its kind and what happened.
pub type Failure = (ErrorKind, String);

/// The TLS client of a run: `--tls` pins the version; resumption is on only with `--resume`.
pub fn tls_client(cfg: &Config) -> Result<tokio_rustls::TlsConnector, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let version: &'static rustls::SupportedProtocolVersion = match cfg.tls {
        TlsVersion::V12 => &rustls::version::TLS12,
        TlsVersion::V13 => &rustls::version::TLS13,
    };
    let mut c = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[version])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(npt_tls::AcceptAny(provider)))
        .with_no_client_auth();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    if !cfg.resume {
        c.resumption = rustls::client::Resumption::disabled();
    }
    Ok(tokio_rustls::TlsConnector::from(Arc::new(c)))
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// One fresh connection to `addr` (the target; unused through `--via`), its layers recorded
/// in `a` as they complete. Bounded by the caller's timeout.
pub async fn attempt(
    cfg: &Config,
    addr: SocketAddr,
    tls: Option<&tokio_rustls::TlsConnector>,
    a: &mut Attempt,
) -> Result<(), Failure> {
    let t = Instant::now();
    let tcp = match &cfg.via {
        None => {
            let s = TcpStream::connect(addr)
                .await
                .map_err(|e| (io_error_kind(&e), format!("{addr}: {e}")))?;
            a.layers.push((Layer::TcpConnect, ns(t.elapsed())));
            s
        }
        Some(via) => {
            let (s, ph) = npt_proxy::connect_async::tcp_connect(via, &cfg.host, cfg.port)
                .await
                .map_err(|e| (e.kind(), format!("via {via}: {e}")))?;
            a.layers.extend(ph.layers(via, false));
            s
        }
    };
    let _ = tcp.set_nodelay(true);
    if cfg.scheme == Scheme::Tcp {
        a.rtt_ns = a.layers.first().map(|(_, n)| *n);
        return Ok(());
    }
    let mut s: Box<dyn Stream> = match (cfg.scheme, tls) {
        (Scheme::Https, Some(tls)) => {
            let name = ServerName::try_from(cfg.server_name.clone())
                .map_err(|e| (ErrorKind::Config, format!("server name: {e}")))?;
            let t = Instant::now();
            let s = tls
                .connect(name, tcp)
                .await
                .map_err(|e| (ErrorKind::Tls, format!("TLS handshake: {e}")))?;
            a.layers.push((Layer::Tls, ns(t.elapsed())));
            if cfg.resume {
                a.resumed =
                    Some(s.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed));
            }
            Box::new(s)
        }
        _ => Box::new(tcp),
    };
    let first = get(&mut s, &cfg.server_name).await?;
    a.layers.push((Layer::FirstByte, first));
    a.rtt_ns = Some(get(&mut s, &cfg.server_name).await?);
    Ok(())
}

/// `GET /` on `s`: ns from the request's write to its answer's first byte; the whole answer
/// is read (to its Content-Length) so the connection can carry the next.
async fn get(s: &mut Box<dyn Stream>, host: &str) -> Result<u64, Failure> {
    let req = format!("GET / HTTP/1.1\r\nHost: {host}\r\nUser-Agent: npt-setup\r\n\r\n");
    let io = |what: &str, e: std::io::Error| (io_error_kind(&e), format!("{what}: {e}"));
    let t = Instant::now();
    s.write_all(req.as_bytes())
        .await
        .map_err(|e| io("request", e))?;
    s.flush().await.map_err(|e| io("request", e))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let mut first = None;
    // Bounded: every pass reads at least one byte; the answer is at most 64 KiB.
    while buf.len() < 64 * 1024 {
        let n = s.read(&mut chunk).await.map_err(|e| io("answer", e))?;
        if n == 0 {
            return Err((
                ErrorKind::Closed,
                "the server closed before its answer".into(),
            ));
        }
        first.get_or_insert_with(|| ns(t.elapsed()));
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if let Some(end) = answer_len(&buf)? {
            if buf.len() >= end {
                return Ok(first.unwrap_or(0));
            }
        }
    }
    Err((ErrorKind::Protocol, "an answer over 64 KiB".into()))
}

/// The whole answer's length once its head is in `buf`: head + Content-Length.
fn answer_len(buf: &[u8]) -> Result<Option<usize>, Failure> {
    let Some(head) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(buf.get(..head).unwrap_or_default()).to_ascii_lowercase();
    if !text.starts_with("http/1.") {
        return Err((ErrorKind::Protocol, "not an HTTP/1.1 answer".into()));
    }
    let len = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .ok_or((
            ErrorKind::Protocol,
            "an answer without Content-Length".into(),
        ))?;
    Ok(Some(head + 4 + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_its_head_and_content_length() {
        assert_eq!(answer_len(b"HTTP/1.1 200 OK\r\ncontent-le").unwrap(), None);
        let a = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(answer_len(a).unwrap(), Some(a.len()));
        assert!(answer_len(b"SSH-2.0\r\n\r\n").is_err());
        assert!(answer_len(b"HTTP/1.1 200 OK\r\n\r\n").is_err());
    }
}
