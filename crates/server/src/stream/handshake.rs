//! `--token` on a stream: the server side of the keyed handshake (Hello, Challenge, Auth,
//! Accept) that gives the stream its session key, and the seal every reply header then carries.
//! Apart from the stream loop so that the authentication reads in one place.

use std::net::SocketAddr;
use std::time::Instant;

use npt_wire::auth::{self, Dir, ServerAuth, SessionKey, HS_LEN};
use npt_wire::frame::HEADER_LEN;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};

use super::{within, End, StreamCtx};

/// Seals a reply header with the stream's session key, if it has one.
pub(crate) fn seal(key: &Option<SessionKey>, hdr: &mut [u8; HEADER_LEN]) {
    if let Some(k) = key {
        // Cannot fail: the header is HEADER_LEN bytes.
        let _ = k.seal(Dir::ToClient, hdr);
    }
}

/// The server side of the handshake on a stream: Hello (its first four bytes already read)
/// → Challenge, Auth → Accept. `None` when a message does not verify (nothing more is sent).
pub(super) async fn handshake<R, W>(
    prefix: &[u8],
    r: &mut BufReader<R>,
    w: &mut BufWriter<W>,
    auth: &ServerAuth,
    peer: SocketAddr,
    epoch: Instant,
    cx: &StreamCtx<'_>,
) -> Result<Option<SessionKey>, End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let c = cx.counters;
    let io_t = cx.timeouts.io;
    let mut msg = [0u8; HS_LEN];
    let mut out = [0u8; HS_LEN];
    msg[..4].copy_from_slice(prefix);
    within(io_t, r.read_exact(&mut msg[4..]), &c.stalled_read).await?;
    let now = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    if !matches!(
        auth.handle(now(), peer, &msg, &mut out),
        Ok(auth::handshake::ServerStep::Challenge)
    ) {
        return Ok(None);
    }
    within(io_t, w.write_all(&out), &c.stalled_write).await?;
    within(io_t, w.flush(), &c.stalled_write).await?;
    // The client answers the Challenge at once: one round trip within `io`.
    within(io_t, r.read_exact(&mut msg), &c.stalled_read).await?;
    match auth.handle(now(), peer, &msg, &mut out) {
        Ok(auth::handshake::ServerStep::Accepted { key, .. }) => {
            within(io_t, w.write_all(&out), &c.stalled_write).await?;
            within(io_t, w.flush(), &c.stalled_write).await?;
            Ok(Some(key))
        }
        _ => Ok(None),
    }
}
