//! A stream that did not open with the framed magic: plain byte echo, everything that arrives
//! written back as it is, until the peer closes or idles out (refused when a token is required).
//! Apart from the framed loop because it shares nothing with it but the deadlines.

use std::sync::atomic::Ordering;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};

use super::{within, End, StreamCtx};

/// Echoes `prefix` (the stream's first bytes, already read) and then every byte that follows.
pub(super) async fn raw_echo<R, W>(
    prefix: &[u8],
    mut r: BufReader<R>,
    mut w: BufWriter<W>,
    cx: &StreamCtx<'_>,
) -> Result<(), End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let c = cx.counters;
    let io_t = cx.timeouts.io;
    within(io_t, w.write_all(prefix), &c.stalled_write).await?;
    within(io_t, w.flush(), &c.stalled_write).await?;
    let mut total = prefix.len() as u64;
    let result = loop {
        let n = {
            let got = match tokio::time::timeout(cx.timeouts.idle, r.fill_buf()).await {
                Ok(Ok(got)) => got,
                Ok(Err(e)) => break Err(End::Io(e)),
                Err(_) => {
                    c.closed_idle.fetch_add(1, Ordering::Relaxed);
                    break Ok(());
                }
            };
            if got.is_empty() {
                break Ok(());
            }
            if let Err(e) = within(io_t, w.write_all(got), &c.stalled_write).await {
                break Err(e);
            }
            got.len()
        };
        r.consume(n);
        total += n as u64;
        if r.buffer().is_empty() {
            if let Err(e) = within(io_t, w.flush(), &c.stalled_write).await {
                break Err(e);
            }
        }
    };
    c.rx_bytes.fetch_add(total, Ordering::Relaxed);
    c.tx_bytes.fetch_add(total, Ordering::Relaxed);
    result?;
    within(io_t, w.flush(), &c.stalled_write).await
}
