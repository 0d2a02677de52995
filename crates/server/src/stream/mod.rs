//! The stream responder, for TCP connections (and any other byte stream, e.g. a QUIC stream).
//!
//! The first four bytes decide the mode for the whole stream:
//! - the framed magic: a sequence of frames. `Echo` comes back as `EchoReply` with the same
//!   bytes; `Request` (up `frame_len` bytes) is answered by a `Response` of `reply_len` bytes,
//!   if the source address's reply budget ([`crate::budget`]) holds it — otherwise by a bare
//!   `Response` header with `status = CLAMPED` and `frame_len = 48`, and the stream is closed.
//!   Payloads are streamed through fixed buffers, never held whole, so a 64 MiB frame costs
//!   no more memory than a 64-byte one. `HopRequest` goes to the hop agent
//!   ([`crate::hop_agent`]), which answers with a `HopReply` no longer than the request. A
//!   `Bulk` frame hands the rest of the stream to the bulk responder ([`crate::bulk`]: sink
//!   or source at the path's rate, within the budget). `Idle` holds the connection for an idle
//!   callback ([`crate::idle_stream`], `npt lifetime tcp://`).
//! - anything else: plain byte echo (refused when a token is required).
//!
//! With `--token` ([`Access::Handshake`], TCP connections and QUIC streams alike) the stream
//! must open with the keyed handshake ([`npt_wire::auth`]: Hello, Challenge, Auth, Accept, 96
//! bytes each), and every frame after it must carry a tag under that stream's session key
//! (replies are sealed likewise). A frame captured from one stream fails on any other (each
//! has its own key).
//!
//! Every wait has a deadline ([`Timeouts`]), so no peer holds a slot for longer than it keeps
//! the exchange moving: `idle` for the first byte of the next frame, `io` for the rest of a
//! header, for each 64 KiB of payload, and for each write of a reply (a peer that stops reading
//! stalls our writes). Each kind of close is counted ([`StreamCounters`]).
//!
//! Output is flushed whenever no further request bytes are already buffered, so pipelined
//! frames are answered with one write and a lone frame is answered at once.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use npt_netio::rxtime::wall_ns;
use npt_wire::auth::{self, Dir, ServerAuth, SessionKey};
use npt_wire::frame::{self, status, Header, Kind, HEADER_LEN};
use npt_wire::reflect;
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};

use crate::budget::ReplyBudget;
use crate::hop_agent::{Answer, HopAgent, HopSession};
use crate::StreamCounters;

mod handshake;
mod raw;
mod reflected;

use handshake::handshake;
pub(crate) use handshake::seal;
use raw::raw_echo;
use reflected::{echo_reflected, Head};

/// How long a stream may sit idle between frames before the server closes it (default).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long any read inside a frame, or any write of a reply, may take (default).
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Fill chunk for responses (written past the small write buffer, straight to the socket);
/// also the most payload read per deadline.
const CHUNK: usize = 64 * 1024;
/// Read and write buffers per stream: small, because a server may hold tens of thousands of
/// streams (64 KiB each made 9,000 connections cost 1.7 GB); large frames bypass them.
const STREAM_BUF: usize = 8 * 1024;

/// The stream responder's deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Waiting for the first byte of the next frame (or of more raw-echo data).
    pub idle: Duration,
    /// Every other wait: the rest of a header once its first byte came, each 64 KiB of
    /// payload (so payloads must move at 64 KiB per `io` or faster), each write of a reply.
    pub io: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            idle: IDLE_TIMEOUT,
            io: IO_TIMEOUT,
        }
    }
}

/// Who may use a stream.
pub enum Access<'a> {
    /// Anyone (no `--token`).
    Open,
    /// The keyed handshake first, then sealed frames (`--token`). `epoch` is the clock the
    /// cookies are issued and checked against.
    Handshake {
        auth: &'a ServerAuth,
        peer: SocketAddr,
        epoch: Instant,
    },
}

/// What one stream is served with.
pub struct StreamCtx<'a> {
    pub access: Access<'a>,
    pub counters: &'a StreamCounters,
    pub timeouts: Timeouts,
    /// Charged for `Response` bytes when both it and the peer's address are known, and for
    /// the bytes of a bulk from a stream that proved nothing ([`crate::bulk`]).
    pub budget: Option<&'a ReplyBudget>,
    /// Charged for the bytes of a bulk on a stream that completed the `--token` handshake.
    pub open_budget: Option<&'a ReplyBudget>,
    pub peer: Option<IpAddr>,
    /// Answers `HopRequest` frames ([`crate::hop_agent`]; refuses them without `--hop-agent`).
    pub hop: &'a HopAgent,
    /// The TCP connection's socket, for the options a workload sets on it (the bulk sink's
    /// wake-up mark, [`npt_netio::lowat`]); None on a QUIC stream. Open while the stream is served.
    pub tcp_fd: Option<std::os::fd::RawFd>,
    /// Holds TCP connections for idle callbacks ([`crate::idle_stream`]), and the peer's
    /// address they report; None on a QUIC stream (its `Idle` frames are malformed).
    pub idle: Option<(&'a crate::idle_stream::Holds, SocketAddr)>,
}

/// Bytes used to fill `Response` payloads (incompressible).
pub(crate) fn fill_chunk() -> &'static [u8] {
    static FILL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    FILL.get_or_init(|| {
        let mut v = vec![0u8; CHUNK];
        npt_wire::fill::fill(npt_wire::Fill::Random, 0x6e70_7473, 0, &mut v);
        v
    })
}

/// Why serving stopped early: a counted close (deadline, refusal) or an I/O error.
pub(crate) enum End {
    Closed,
    Io(io::Error),
}

impl From<io::Error> for End {
    fn from(e: io::Error) -> End {
        End::Io(e)
    }
}

/// Runs `f` under deadline `d`; on expiry counts one `on_timeout` and ends the stream.
pub(crate) async fn within<T>(
    d: Duration,
    f: impl Future<Output = io::Result<T>>,
    on_timeout: &AtomicU64,
) -> Result<T, End> {
    match tokio::time::timeout(d, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(End::Io(e)),
        Err(_) => {
            on_timeout.fetch_add(1, Ordering::Relaxed);
            Err(End::Closed)
        }
    }
}

/// Serves one stream until the peer closes it, misbehaves, stalls or idles out. Deadlines and
/// refusals end it with `Ok`; I/O errors are returned. Every way it ends early is counted.
pub async fn serve_stream<S>(stream: S, cx: &StreamCtx<'_>) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match serve(stream, cx).await {
        Ok(()) | Err(End::Closed) => Ok(()),
        Err(End::Io(e)) => {
            match e.kind() {
                // The peer closed inside a frame: a truncated frame.
                io::ErrorKind::UnexpectedEof => &cx.counters.malformed,
                // QUIC: the whole connection ended; counted once per connection.
                io::ErrorKind::NotConnected => return Err(e),
                // A TCP RST (ECONNRESET, EPIPE), a QUIC stream reset, another I/O error.
                _ => &cx.counters.reset,
            }
            .fetch_add(1, Ordering::Relaxed);
            Err(e)
        }
    }
}

/// Waits (up to `idle`) for the next frame to start, then (up to `io`) for its first
/// `prefix.len()` bytes. False on a clean end: EOF before any byte, or the idle timeout.
async fn next_frame<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    prefix: &mut [u8],
    cx: &StreamCtx<'_>,
) -> Result<bool, End> {
    let eof = match tokio::time::timeout(cx.timeouts.idle, r.fill_buf()).await {
        Err(_) => {
            cx.counters.closed_idle.fetch_add(1, Ordering::Relaxed);
            return Ok(false);
        }
        Ok(res) => res?.is_empty(),
    };
    if eof {
        return Ok(false);
    }
    within(
        cx.timeouts.io,
        r.read_exact(prefix),
        &cx.counters.stalled_read,
    )
    .await?;
    Ok(true)
}

// NO-PANIC: each `buf[..n]` / `fill[..n]` has `n = rest.min(buf.len())` (or `fill.len()`);
// `HEADER_LEN` (48) fits a `u32`, and `reply >= HEADER_LEN` after its clamp.
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
async fn serve<S>(stream: S, cx: &StreamCtx<'_>) -> Result<(), End>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let c = cx.counters;
    let io_t = cx.timeouts.io;
    let (r, w) = tokio::io::split(stream);
    let mut r = BufReader::with_capacity(STREAM_BUF, r);
    let mut w = BufWriter::with_capacity(STREAM_BUF, w);
    let mut hdr = [0u8; HEADER_LEN];
    if !next_frame(&mut r, &mut hdr[..4], cx).await? {
        return Ok(());
    }
    let mut key: Option<SessionKey> = None;
    match &cx.access {
        Access::Handshake { auth, peer, epoch } => {
            if hdr[..4] != auth::HS_MAGIC {
                c.refused_token.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            let Some(k) = handshake(&hdr[..4], &mut r, &mut w, auth, *peer, *epoch, cx).await?
            else {
                c.refused_handshake.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            };
            key = Some(k);
            if !next_frame(&mut r, &mut hdr[..4], cx).await? {
                return Ok(());
            }
            if hdr[..4] != frame::MAGIC {
                c.malformed.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
        _ if hdr[..4] == auth::HS_MAGIC => {
            // A client with --token, and this server has none.
            c.refused_token.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        _ if hdr[..4] != frame::MAGIC => return raw_echo(&hdr[..4], r, w, cx).await,
        _ => {}
    }
    // Payload bytes pass through here; grown only as far as a frame needs (at most CHUNK).
    let mut buf: Vec<u8> = Vec::new();
    let mut hop: Option<HopSession> = None;
    // `REFLECT` frames received on this stream (its receive count, [`reflect`]).
    let mut received = 0u64;
    loop {
        within(io_t, r.read_exact(&mut hdr[4..]), &c.stalled_read).await?;
        let h = match Header::decode(&hdr) {
            Ok(h) => h,
            Err(_) => {
                c.malformed.fetch_add(1, Ordering::Relaxed);
                break;
            }
        };
        if let Some(k) = &key {
            if k.open(Dir::ToServer, &hdr).is_err() {
                c.refused_mac.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
        let mut rest = h.frame_len as usize - HEADER_LEN;
        if buf.len() < rest.min(CHUNK) {
            buf.resize(rest.min(CHUNK), 0);
        }
        c.rx_bytes.fetch_add(h.frame_len as u64, Ordering::Relaxed);
        match h.kind {
            Kind::Echo if reflect::wants_reflect(&h) => {
                received += 1;
                let out = Header {
                    kind: Kind::EchoReply,
                    status: status::OK,
                    ..h
                };
                echo_reflected(&mut r, &mut w, &out, rest, &mut buf, received, &key, cx).await?;
                c.tx_bytes.fetch_add(h.frame_len as u64, Ordering::Relaxed);
            }
            Kind::Echo => {
                frame::set_kind_status(&mut hdr, Kind::EchoReply, status::OK);
                seal(&key, &mut hdr);
                within(io_t, w.write_all(&hdr), &c.stalled_write).await?;
                while rest > 0 {
                    let n = rest.min(buf.len());
                    within(io_t, r.read_exact(&mut buf[..n]), &c.stalled_read).await?;
                    within(io_t, w.write_all(&buf[..n]), &c.stalled_write).await?;
                    rest -= n;
                }
                c.tx_bytes.fetch_add(h.frame_len as u64, Ordering::Relaxed);
            }
            Kind::Request => {
                while rest > 0 {
                    let n = rest.min(buf.len());
                    within(io_t, r.read_exact(&mut buf[..n]), &c.stalled_read).await?;
                    rest -= n;
                }
                let want = if h.reply_len == 0 {
                    h.frame_len
                } else {
                    h.reply_len
                };
                let reply = want.clamp(HEADER_LEN as u32, frame::MAX_FRAME_LEN);
                let allowed = match (cx.budget, cx.peer) {
                    (Some(b), Some(ip)) => b.take(ip, reply as u64),
                    _ => true,
                };
                if !allowed {
                    // Over budget: a bare header saying the reply was cut, then close (a
                    // client waiting for the full size would otherwise wait for its timeout).
                    c.refused_budget.fetch_add(1, Ordering::Relaxed);
                    let out = Header {
                        kind: Kind::Response,
                        frame_len: HEADER_LEN as u32,
                        status: status::CLAMPED,
                        ..h
                    };
                    let _ = out.encode(&mut hdr);
                    seal(&key, &mut hdr);
                    within(io_t, w.write_all(&hdr), &c.stalled_write).await?;
                    break;
                }
                let out = Header {
                    kind: Kind::Response,
                    frame_len: reply,
                    status: status::OK,
                    ..h
                };
                let mut left = reply as usize - HEADER_LEN;
                if reflect::wants_reflect(&h) {
                    // The request was read whole: its receive time is now.
                    received += 1;
                    let head = Head::new(&out, fill_chunk(), wall_ns(), received, &key);
                    within(io_t, w.write_all(head.bytes()), &c.stalled_write).await?;
                    left -= head.payload;
                } else {
                    let _ = out.encode(&mut hdr);
                    seal(&key, &mut hdr);
                    within(io_t, w.write_all(&hdr), &c.stalled_write).await?;
                }
                let fill = fill_chunk();
                while left > 0 {
                    let n = left.min(fill.len());
                    within(io_t, w.write_all(&fill[..n]), &c.stalled_write).await?;
                    left -= n;
                }
                c.tx_bytes.fetch_add(reply as u64, Ordering::Relaxed);
            }
            Kind::HopRequest => {
                // A hop request is a few hundred bytes; a longer frame is not one.
                if rest > npt_wire::hop::MAX_REQUEST_LEN - HEADER_LEN {
                    c.malformed.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                let mut payload = vec![0u8; rest];
                within(io_t, r.read_exact(&mut payload), &c.stalled_read).await?;
                let s = hop.get_or_insert_with(|| cx.hop.session());
                match cx.hop.answer(s, &hdr, &payload, key.as_ref()).await {
                    Answer::Reply(out) => {
                        within(io_t, w.write_all(&out), &c.stalled_write).await?;
                        c.tx_bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
                    }
                    Answer::Close => break,
                }
            }
            Kind::Bulk => {
                // The spec is small; anything longer is not a bulk request.
                if rest > buf.len().min(npt_wire::bulk::SPEC_LEN * 4) {
                    c.malformed.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                within(io_t, r.read_exact(&mut buf[..rest]), &c.stalled_read).await?;
                // The bulk takes the rest of the stream.
                return crate::bulk::serve(&mut r, &mut w, &h, &buf[..rest], &key, cx).await;
            }
            Kind::Idle => crate::idle_stream::serve(&mut r, &mut w, &h, rest, &key, cx).await?,
            Kind::EchoReply
            | Kind::Response
            | Kind::HopReply
            | Kind::BulkReply
            | Kind::BulkData
            | Kind::FlowQuery
            | Kind::FlowReport
            | Kind::IdleAck
            | Kind::IdleCallback
            // MTU probes are a datagram's question: a stream has no datagram size.
            | Kind::Mtu
            | Kind::MtuReply => {
                c.malformed.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
        if r.buffer().is_empty() {
            within(io_t, w.flush(), &c.stalled_write).await?;
        }
        if !next_frame(&mut r, &mut hdr[..4], cx).await? {
            break;
        }
        if hdr[..4] != frame::MAGIC {
            c.malformed.fetch_add(1, Ordering::Relaxed);
            break;
        }
    }
    within(io_t, w.flush(), &c.stalled_write).await?;
    Ok(())
}
