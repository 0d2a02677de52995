//! The stream responder, for TCP connections (and any other byte stream, e.g. a QUIC stream).
//!
//! The first four bytes decide the mode for the whole stream:
//! - the framed magic: a sequence of frames. `Echo` comes back as `EchoReply` with the same
//!   bytes; `Request` (up `frame_len` bytes) is answered by a `Response` of `reply_len` bytes.
//!   Payloads are streamed through fixed buffers, never held whole, so a 64 MiB frame costs
//!   no more memory than a 64-byte one.
//! - anything else: plain byte echo (refused when a token is required).
//!
//! Output is flushed whenever no further request bytes are already buffered, so pipelined
//! frames are answered with one write and a lone frame is answered at once.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use npt_wire::frame::{self, status, Header, Kind, HEADER_LEN};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};

use crate::Counters;

/// How long a stream may sit idle between frames before the server closes it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Fill chunk for responses (written past the small write buffer, straight to the socket).
const CHUNK: usize = 64 * 1024;
/// Read and write buffers per stream: small, because a server may hold tens of thousands of
/// streams (64 KiB each made 9,000 connections cost 1.7 GB); large frames bypass them.
const STREAM_BUF: usize = 8 * 1024;

/// Bytes used to fill `Response` payloads (incompressible).
fn fill_chunk() -> &'static [u8] {
    static FILL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    FILL.get_or_init(|| {
        let mut v = vec![0u8; CHUNK];
        npt_wire::fill::fill(npt_wire::Fill::Random, 0x6e70_7473, 0, &mut v);
        v
    })
}

/// Serves one stream until the peer closes it, misbehaves, or idles out.
pub async fn serve_stream<S>(stream: S, token: Option<u64>, counters: &Counters) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (r, w) = tokio::io::split(stream);
    let mut r = BufReader::with_capacity(STREAM_BUF, r);
    let mut w = BufWriter::with_capacity(STREAM_BUF, w);
    let mut hdr = [0u8; HEADER_LEN];
    match tokio::time::timeout(IDLE_TIMEOUT, r.read_exact(&mut hdr[..4])).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
        Ok(Err(e)) => return Err(e),
        Err(_) => return Ok(()),
    }
    if hdr[..4] != frame::MAGIC {
        if token.is_some() {
            counters.refused_token.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        return raw_echo(&hdr[..4], r, w, counters).await;
    }
    let mut first = true;
    // Payload bytes pass through here; grown only as far as a frame needs (at most CHUNK).
    let mut buf: Vec<u8> = Vec::new();
    loop {
        if !first {
            match tokio::time::timeout(IDLE_TIMEOUT, r.read_exact(&mut hdr[..4])).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                Ok(Err(e)) => return Err(e),
                Err(_) => break,
            }
        }
        first = false;
        r.read_exact(&mut hdr[4..]).await?;
        let h = match Header::decode(&hdr) {
            Ok(h) => h,
            Err(_) => {
                counters.malformed.fetch_add(1, Ordering::Relaxed);
                break;
            }
        };
        if let Some(tok) = token {
            if h.token != tok {
                counters.refused_token.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
        let mut rest = h.frame_len as usize - HEADER_LEN;
        if buf.len() < rest.min(CHUNK) {
            buf.resize(rest.min(CHUNK), 0);
        }
        counters
            .tcp_rx_bytes
            .fetch_add(h.frame_len as u64, Ordering::Relaxed);
        match h.kind {
            Kind::Echo => {
                frame::set_kind_status(&mut hdr, Kind::EchoReply, status::OK);
                w.write_all(&hdr).await?;
                while rest > 0 {
                    let n = rest.min(buf.len());
                    r.read_exact(&mut buf[..n]).await?;
                    w.write_all(&buf[..n]).await?;
                    rest -= n;
                }
                counters
                    .tcp_tx_bytes
                    .fetch_add(h.frame_len as u64, Ordering::Relaxed);
            }
            Kind::Request => {
                while rest > 0 {
                    let n = rest.min(buf.len());
                    r.read_exact(&mut buf[..n]).await?;
                    rest -= n;
                }
                let want = if h.reply_len == 0 {
                    h.frame_len
                } else {
                    h.reply_len
                };
                let reply = want.clamp(HEADER_LEN as u32, frame::MAX_FRAME_LEN);
                let out = Header {
                    kind: Kind::Response,
                    frame_len: reply,
                    status: status::OK,
                    ..h
                };
                let _ = out.encode(&mut hdr);
                w.write_all(&hdr).await?;
                let mut left = reply as usize - HEADER_LEN;
                let fill = fill_chunk();
                while left > 0 {
                    let n = left.min(fill.len());
                    w.write_all(&fill[..n]).await?;
                    left -= n;
                }
                counters
                    .tcp_tx_bytes
                    .fetch_add(reply as u64, Ordering::Relaxed);
            }
            Kind::EchoReply | Kind::Response => {
                counters.malformed.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
        if r.buffer().is_empty() {
            w.flush().await?;
        }
    }
    w.flush().await?;
    Ok(())
}

async fn raw_echo<R, W>(
    prefix: &[u8],
    mut r: BufReader<R>,
    mut w: BufWriter<W>,
    counters: &Counters,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    w.write_all(prefix).await?;
    w.flush().await?;
    let mut total = prefix.len() as u64;
    loop {
        let n = {
            let got = match tokio::time::timeout(IDLE_TIMEOUT, r.fill_buf()).await {
                Ok(res) => res?,
                Err(_) => break,
            };
            if got.is_empty() {
                break;
            }
            w.write_all(got).await?;
            got.len()
        };
        r.consume(n);
        total += n as u64;
        if r.buffer().is_empty() {
            w.flush().await?;
        }
    }
    w.flush().await?;
    counters.tcp_rx_bytes.fetch_add(total, Ordering::Relaxed);
    counters.tcp_tx_bytes.fetch_add(total, Ordering::Relaxed);
    Ok(())
}
