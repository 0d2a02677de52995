//! The framed request/response exchange over any byte stream: request headers, payload cut
//! from one shared fill, vectored writes, responses read and dropped into a per-thread scratch,
//! with progress required within the timeout for every piece.

use super::*;

/// 64 KiB of incompressible bytes every request payload is cut from (no per-request fill).
pub(super) fn fill() -> &'static [u8] {
    static FILL: OnceLock<Vec<u8>> = OnceLock::new();
    FILL.get_or_init(|| {
        let mut v = vec![0u8; 64 * 1024];
        npt_wire::fill::fill(npt_wire::Fill::Random, 0x7573_6572, 0, &mut v);
        v
    })
}

pub(super) fn frame_len(n: u64) -> u32 {
    u32::try_from(n.clamp(HEADER_LEN as u64, u64::from(MAX_FRAME_LEN))).unwrap_or(MAX_FRAME_LEN)
}

pub(super) fn request_header(
    ctx: &Ctx,
    key: Option<&SessionKey>,
    id: u64,
    seq: u64,
    up: u32,
    down: u32,
) -> [u8; HEADER_LEN] {
    let mut hdr = [0u8; HEADER_LEN];
    // NO-PANIC: deliberate: the flow id is the user id's low 32 bits.
    #[allow(clippy::cast_possible_truncation)]
    let flow = id as u32;
    let h = Header {
        kind: Kind::Request,
        flags: 0,
        frame_len: up,
        reply_len: down,
        flow,
        status: 0,
        seq,
        send_ts: ctx.now_ns(),
        token: ctx.cfg.token,
    };
    // Cannot fail: the buffer is exactly one header long.
    let _ = h.encode(&mut hdr);
    if let Some(k) = key {
        let _ = k.seal(Dir::ToServer, &mut hdr);
    }
    hdr
}

/// When the response's first bytes and last byte arrived.
pub(super) struct Exchange {
    pub(super) ttfb: Duration,
    pub(super) total: Duration,
}

/// Progress needed within one `--timeout`: a transfer may take longer than the timeout as
/// long as every piece of this size moves within it.
pub(super) const PIECE: usize = 1 << 20;

thread_local! {
    /// Where response payloads are read and dropped: one buffer per worker thread instead of
    /// one per connection (10,000 users × 16 KiB would be 160 MB for nothing).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 64 * 1024]);
}

/// Writes `hdr[*hdr_off..]` and then `body` payload bytes cut from the fill, at most `chunk`
/// payload bytes per write call; header and first payload bytes go in one vectored write.
// NO-PANIC: `*hdr_off <= HEADER_LEN` (it grows by at most `HEADER_LEN - *hdr_off`) and
// `n <= fill.len()`.
#[allow(clippy::indexing_slicing)]
pub(super) async fn write_frame<W: AsyncWrite + Unpin>(
    w: &mut W,
    hdr: &[u8; HEADER_LEN],
    hdr_off: &mut usize,
    mut body: usize,
    chunk: usize,
) -> io::Result<()> {
    let fill = fill();
    std::future::poll_fn(|cx| loop {
        if *hdr_off == HEADER_LEN && body == 0 {
            return Poll::Ready(Ok(()));
        }
        let n = body.min(chunk).min(fill.len());
        let bufs = [
            io::IoSlice::new(&hdr[*hdr_off..]),
            io::IoSlice::new(&fill[..n]),
        ];
        match Pin::new(&mut *w).poll_write_vectored(cx, &bufs) {
            Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
            Poll::Ready(Ok(k)) => {
                let h = k.min(HEADER_LEN - *hdr_off);
                *hdr_off += h;
                body -= k - h;
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
    })
    .await
}

/// Reads the response (`total` bytes, `*got` read so far) into the per-thread scratch until at
/// least `until` bytes are in, dropping them but the first [`HEADER_LEN`], kept in `head`.
/// Every read offers room for the rest of the response and one byte more: a response that has
/// arrived whole is one read, and that read comes back short, which tells tokio the socket is
/// drained (the next request's first read then waits for data instead of failing with
/// `EAGAIN`); a server that sends more than its frame shows as `*got > total`.
// NO-PANIC: `want <= s.len()`; `*got < HEADER_LEN` and `k <= HEADER_LEN - *got` keep the `head`
// range inside its array, and `k <= filled.len()`.
#[allow(clippy::indexing_slicing)]
pub(super) async fn read_discard<R: AsyncRead + Unpin>(
    r: &mut R,
    head: &mut [u8; HEADER_LEN],
    got: &mut usize,
    until: usize,
    total: usize,
    first: &mut Option<Instant>,
) -> io::Result<()> {
    std::future::poll_fn(|cx| {
        while *got < until {
            let step = SCRATCH.with(|s| {
                let mut s = s.borrow_mut();
                let want = (total + 1).saturating_sub(*got).clamp(1, s.len());
                let mut rb = ReadBuf::new(&mut s[..want]);
                match Pin::new(&mut *r).poll_read(cx, &mut rb) {
                    Poll::Ready(Ok(())) => {
                        let filled = rb.filled();
                        if filled.is_empty() {
                            let when = if *got == 0 {
                                "before the response"
                            } else {
                                "mid-response"
                            };
                            return Poll::Ready(Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                format!("connection closed {when}"),
                            )));
                        }
                        if first.is_none() {
                            *first = Some(Instant::now());
                        }
                        if *got < HEADER_LEN {
                            let k = (HEADER_LEN - *got).min(filled.len());
                            head[*got..*got + k].copy_from_slice(&filled[..k]);
                        }
                        Poll::Ready(Ok(filled.len()))
                    }
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            });
            match step {
                Poll::Ready(Ok(k)) => *got += k,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    })
    .await
}

pub(super) fn check_response(
    head: &[u8; HEADER_LEN],
    key: Option<&SessionKey>,
    seq: u64,
    down: u32,
) -> Result<(), Fail> {
    let h = Header::decode(head)
        .map_err(|e| Fail::new(ErrorKind::Protocol, format!("response: {e}")))?;
    if let Some(k) = key {
        k.open(Dir::ToClient, head)
            .map_err(|e| Fail::new(ErrorKind::Protocol, format!("response: {e}")))?;
    }
    if h.kind != Kind::Response || h.seq != seq {
        return Err(Fail::new(
            ErrorKind::Protocol,
            format!("expected response {seq}, got {:?} {}", h.kind, h.seq),
        ));
    }
    if h.frame_len != down {
        return Err(Fail::new(
            ErrorKind::Protocol,
            format!(
                "asked for {down} bytes, server answers {} (server limits?)",
                h.frame_len
            ),
        ));
    }
    Ok(())
}

/// One framed request of `up` bytes answered by `down` bytes, over any byte stream, without
/// a buffer of its own. Each [`PIECE`] must move within the timeout. `fresh`: the first
/// exchange on a new TCP connection, whose end before any response byte is
/// `closed_unanswered` ([`Fail::unanswered`]).
#[allow(clippy::too_many_arguments)]
pub(super) async fn exchange<R, W>(
    ctx: &Ctx,
    act: Activity,
    r: &mut R,
    w: &mut W,
    id: u64,
    seq: u64,
    up: u64,
    down: u64,
    chunk: usize,
    key: Option<&SessionKey>,
    fresh: bool,
) -> Result<Exchange, Fail>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (up, down) = (frame_len(up), frame_len(down));
    let chunk = chunk.clamp(1, 64 * 1024);
    let _in_flight = ctx.inflight.enter(ctx.now_ns(), act);
    let t = Instant::now();
    let hdr = request_header(ctx, key, id, seq, up, down);
    let mut hdr_off = 0;
    let mut body = up as usize - HEADER_LEN;
    // Until a response byte arrives, a connection that ends was never answered.
    let unanswered = |f: Fail| if fresh { f.unanswered() } else { f };
    loop {
        let piece = body.min(PIECE);
        ctx.io("send", write_frame(w, &hdr, &mut hdr_off, piece, chunk))
            .await
            .map_err(unanswered)?;
        body -= piece;
        if body == 0 {
            break;
        }
    }
    ctx.io("send", w.flush()).await.map_err(unanswered)?;
    let mut head = [0u8; HEADER_LEN];
    let mut got = 0usize;
    let mut first = None;
    let total = down as usize;
    // The header (and whatever follows it in the same read), checked before the rest.
    let head_read = ctx
        .io(
            "receive",
            read_discard(r, &mut head, &mut got, HEADER_LEN, total, &mut first),
        )
        .await;
    if let Err(f) = head_read {
        return Err(if got == 0 { unanswered(f) } else { f });
    }
    check_response(&head, key, seq, down)?;
    while got < total {
        let until = total.min(got + PIECE);
        ctx.io(
            "receive",
            read_discard(r, &mut head, &mut got, until, total, &mut first),
        )
        .await?;
    }
    if got > total {
        return Err(Fail::new(
            ErrorKind::Protocol,
            format!(
                "response {seq}: {} bytes more than its {total}-byte frame",
                got - total
            ),
        ));
    }
    Ok(Exchange {
        ttfb: first.map_or(Duration::ZERO, |f| f.saturating_duration_since(t)),
        total: t.elapsed(),
    })
}
