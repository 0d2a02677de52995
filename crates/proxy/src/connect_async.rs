//! The proxy handshake over tokio (feature `tokio`), for `npt run` and `npt http`: the same
//! [`Handshake`] state machine as the blocking driver, timed phase by phase. The caller bounds
//! it with its own timeout (these workloads already time every connect).

use std::net::ToSocketAddrs;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::handshake::{Handshake, Step};
use crate::{Phases, ProxyError, Via};

fn ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A TCP connection to `host:port` through `via`, ready to carry the application's bytes.
pub async fn tcp_connect(
    via: &Via,
    host: &str,
    port: u16,
) -> Result<(TcpStream, Phases), ProxyError> {
    let mut h = Handshake::connect(via, host, port)?;
    let authority = via.authority();
    let err = |source| ProxyError::Connect {
        addr: authority.clone(),
        source,
    };
    let addrs: Vec<_> = authority.to_socket_addrs().map_err(err)?.collect();
    let mut phases = Phases::default();
    let mut t = Instant::now();
    let mut last = None;
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect(a).await {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut s = stream.ok_or_else(|| {
        err(last.unwrap_or_else(|| std::io::Error::other("the proxy name has no address")))
    })?;
    let _ = s.set_nodelay(true);
    phases.proxy_connect_ns = ns(t);
    t = Instant::now();
    let mut chunk = [0u8; 1024];
    // Bounded: each pass reads at least one byte or fails; the caller's timeout bounds time.
    for _ in 0..64 * 1024 {
        if !h.output().is_empty() {
            s.write_all(h.output()).await?;
            h.written();
        }
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(ProxyError::Protocol(format!(
                "the proxy closed the connection during {}",
                h.phase()
            )));
        }
        // NO-PANIC: `read` returns at most the buffer's length.
        #[allow(clippy::indexing_slicing)]
        let got = &chunk[..n];
        match h.on_read(got)? {
            Step::NeedMore => {}
            Step::Authenticated => {
                phases.auth_ns = ns(t);
                t = Instant::now();
            }
            Step::Done { .. } => {
                phases.reply_ns = ns(t);
                return Ok((s, phases));
            }
        }
    }
    Err(ProxyError::Protocol(format!(
        "endless answer during {}",
        h.phase()
    )))
}
