//! Echoes that asked for [`reflect`]: the reply's front (its header, sealed, and the stamps
//! over the first payload bytes, the dwell taken as it is built) and the echo that reads a frame
//! whole before answering, so its receive time is its last byte's. Apart from the stream loop
//! because the stamping is its own concern, shared by the `Echo` and `Request` answers.

use npt_netio::rxtime::wall_ns;
use npt_wire::auth::SessionKey;
use npt_wire::frame::{Header, HEADER_LEN};
use npt_wire::reflect::{self, Stamps, STAMP_LEN};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};

use super::{seal, within, End, StreamCtx};

/// The front of a reflected reply: its header (sealed) and, when the frame has room, the
/// stamps over the first [`STAMP_LEN`] payload bytes, the dwell taken as it is built.
pub(super) struct Head {
    buf: [u8; HEADER_LEN + STAMP_LEN],
    /// Payload bytes in `buf` (0..=STAMP_LEN).
    pub(super) payload: usize,
}

impl Head {
    /// `out`: the reply's header (its `frame_len` says whether stamps fit); `first`: the
    /// payload's first bytes as they would go out unstamped; `rx_wall`: when the frame was
    /// received; `received`: the stream's receive count, this frame included.
    pub(super) fn new(
        out: &Header,
        first: &[u8],
        rx_wall: u64,
        received: u64,
        key: &Option<SessionKey>,
    ) -> Head {
        let mut buf = [0u8; HEADER_LEN + STAMP_LEN];
        let payload = (out.frame_len as usize)
            .saturating_sub(HEADER_LEN)
            .min(STAMP_LEN)
            .min(first.len());
        let dst = buf.get_mut(HEADER_LEN..HEADER_LEN + payload);
        if let (Some(dst), Some(src)) = (dst, first.get(..payload)) {
            dst.copy_from_slice(src);
        }
        let frame = buf.get_mut(..HEADER_LEN + payload).unwrap_or_default();
        let stamps = Stamps {
            rx_wall_ns: rx_wall,
            dwell_ns: 0,
            refused: 0,
        };
        let rx = crate::reflect::wire32(received);
        if reflect::write_reply(frame, out, rx, &stamps) == Ok(true) {
            let dwell = wall_ns().saturating_sub(rx_wall);
            reflect::write_dwell(frame, u32::try_from(dwell).unwrap_or(u32::MAX));
        }
        if let Some(h) = buf.first_chunk_mut::<HEADER_LEN>() {
            seal(key, h);
        }
        Head { buf, payload }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        self.buf
            .get(..HEADER_LEN + self.payload)
            .unwrap_or_default()
    }
}

/// An `Echo` that asked for [`reflect`]: a frame that fits one chunk (64 KiB) is read whole
/// before its reply is written, so its receive time is its last byte's and the dwell is the
/// responder's alone; a longer one is streamed through, its receive time when its first 64
/// bytes were read.
#[allow(clippy::too_many_arguments)]
pub(super) async fn echo_reflected<R, W>(
    r: &mut BufReader<R>,
    w: &mut BufWriter<W>,
    out: &Header,
    rest: usize,
    buf: &mut [u8],
    received: u64,
    key: &Option<SessionKey>,
    cx: &StreamCtx<'_>,
) -> Result<(), End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let c = cx.counters;
    let io_t = cx.timeouts.io;
    let whole = rest <= buf.len();
    let first = if whole { rest } else { rest.min(STAMP_LEN) };
    let Some(front) = buf.get_mut(..first) else {
        return Err(End::Closed);
    };
    within(io_t, r.read_exact(front), &c.stalled_read).await?;
    let head = Head::new(out, front, wall_ns(), received, key);
    within(io_t, w.write_all(head.bytes()), &c.stalled_write).await?;
    let sent = head.payload;
    if let Some(tail) = front.get(sent..) {
        within(io_t, w.write_all(tail), &c.stalled_write).await?;
    }
    let mut left = rest - first;
    while left > 0 {
        let n = left.min(buf.len());
        let Some(chunk) = buf.get_mut(..n) else {
            return Err(End::Closed);
        };
        within(io_t, r.read_exact(chunk), &c.stalled_read).await?;
        within(io_t, w.write_all(chunk), &c.stalled_write).await?;
        left -= n;
    }
    Ok(())
}
