//! The bulk responder on a stream (TCP connection or QUIC stream), entered from the stream
//! responder when a `Bulk` frame arrives ([`npt_wire::bulk`] has the protocol): `Down` sends
//! fill bytes until the asked duration has passed, `Up` sinks the client's bytes and reports
//! what arrived every [`REPORT_EVERY_NS`].
//!
//! Within limits, as every reply ([`crate::budget`]):
//! - every byte sent (down) or taken in (up) is charged to the source address's reply budget.
//!   Strangers (public, unauthenticated) get the small budget of every other reply, so a bulk
//!   from them runs at most at that rate (the responder waits for the budget; TCP's flow
//!   control passes the wait on to the client), and a bulk and its `Request`s share it.
//!   Streams that completed the `--token` handshake are charged to the open budget; local
//!   sources are exempt as for every reply;
//! - the duration is capped ([`MAX_DURATION_PUBLIC`], [`MAX_DURATION_OPEN`]; `status =
//!   CLAMPED` says so);
//! - a client that stops reading (down) or sending (up) for `io` is dropped by the stream's
//!   stall deadlines, counted as every other stall.
//!
//! An `Up` sink on TCP from this host is woken only once about a millisecond of its rate has
//! arrived ([`npt_netio::lowat`]), so its reports may be that much behind.
//!
//! A `Down` stream whose spec carries a rate (`npt bulk --rate`) is paced: a token bucket of
//! payload bytes ([`npt_wire::bucket`]) sets how much each write may carry and, on TCP, the
//! kernel's pacing cap spreads each write's packets; the accepting reply says so
//! ([`bulk::PACED`]). A rate only ever makes the stream slower than it would be.

use std::time::{Duration, Instant};

use npt_netio::lowat::{wanted, Lowat};
use npt_wire::auth::SessionKey;
use npt_wire::bucket::{kernel_pacing_rate, TokenBucket};
use npt_wire::bulk::{self, BulkReport, BulkSpec, Direction, REPORT_EVERY_NS};
use npt_wire::frame::{status, Header, HEADER_LEN};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};

use crate::budget::ReplyBudget;
use crate::stream::{fill_chunk, seal, within, End, StreamCtx};
use std::sync::atomic::Ordering;

/// The longest bulk a source that proved nothing may ask for.
pub const MAX_DURATION_PUBLIC: Duration = Duration::from_secs(60);
/// The longest bulk an authenticated or local source may ask for.
pub const MAX_DURATION_OPEN: Duration = Duration::from_secs(3600);
/// How long an `Up` bulk may run past its asked duration for the client's last bytes.
const UP_GRACE: Duration = Duration::from_secs(2);
/// How long the responder waits before asking an empty budget again.
const BUDGET_RETRY: Duration = Duration::from_millis(5);
/// Bytes moved per step (and charged to the budget at once).
const CHUNK: usize = 64 * 1024;

/// Who pays for a bulk's bytes: the budget of the source address (None: nobody, local).
struct Payer<'a> {
    budget: Option<&'a ReplyBudget>,
    peer: Option<std::net::IpAddr>,
}

impl Payer<'_> {
    /// Waits until the budget holds `bytes` and takes them. True if it ever had to wait.
    async fn pay(&self, bytes: usize) -> bool {
        let (Some(b), Some(ip)) = (self.budget, self.peer) else {
            return false;
        };
        let mut waited = false;
        while !b.take(ip, bytes as u64) {
            waited = true;
            tokio::time::sleep(BUDGET_RETRY).await;
        }
        waited
    }
}

/// Serves a bulk whose `Bulk` frame header is `h` and spec payload `spec` (already read).
/// `key` is the stream's session key under `--token`.
pub(crate) async fn serve<R, W>(
    r: &mut BufReader<R>,
    w: &mut BufWriter<W>,
    h: &Header,
    spec: &[u8],
    key: &Option<SessionKey>,
    cx: &StreamCtx<'_>,
) -> Result<(), End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let c = cx.counters;
    let io_t = cx.timeouts.io;
    let Ok(spec) = BulkSpec::decode(spec) else {
        c.malformed.fetch_add(1, Ordering::Relaxed);
        reply(w, h, status::REFUSED, 0, &BulkReport::default(), key, cx).await?;
        return Err(End::Closed);
    };
    c.bulk.fetch_add(1, Ordering::Relaxed);
    let trusted = key.is_some() || cx.peer.is_some_and(crate::is_local);
    let (duration, st) = granted(Duration::from_nanos(spec.duration_ns), trusted);
    let payer = Payer {
        budget: if key.is_some() {
            cx.open_budget
        } else {
            cx.budget
        },
        peer: cx.peer,
    };
    let paced = spec.direction == Direction::Down && spec.rate_bps > 0;
    if paced {
        if let Some(fd) = cx.tcp_fd {
            // The bucket sets the rate whatever this does; it only spreads the packets.
            let rate = kernel_pacing_rate(spec.rate_bps as f64);
            let _ = npt_netio::tcpinfo::set_max_pacing_rate(fd, rate);
        }
    }
    let flags = if paced { bulk::PACED } else { 0 };
    reply(w, h, st, flags, &BulkReport::default(), key, cx).await?;
    within(io_t, w.flush(), &c.stalled_write).await?;
    let start = Instant::now();
    let mut throttled = false;
    let result = match spec.direction {
        Direction::Down => {
            let fill = fill_chunk();
            let mut bucket = paced.then(|| TokenBucket::new(spec.rate_bps as f64, 0));
            let mut sent = 0u64;
            let r = loop {
                if start.elapsed() >= duration {
                    break within(io_t, w.flush(), &c.stalled_write).await;
                }
                let n = match bucket.as_mut() {
                    Some(b) => paced_grant(b, start, fill.len()).await,
                    None => fill.len(),
                };
                // A paced stream may have waited past its end.
                if bucket.is_some() && start.elapsed() >= duration {
                    continue;
                }
                let chunk = fill.get(..n).unwrap_or(fill);
                throttled |= payer.pay(chunk.len()).await;
                if let Err(e) = within(io_t, w.write_all(chunk), &c.stalled_write).await {
                    break Err(e);
                }
                if let Some(b) = bucket.as_mut() {
                    b.spend(chunk.len() as u64);
                    // Paced bytes leave now, not when the buffer fills.
                    if let Err(e) = within(io_t, w.flush(), &c.stalled_write).await {
                        break Err(e);
                    }
                }
                sent += chunk.len() as u64;
            };
            c.tx_bytes.fetch_add(sent, Ordering::Relaxed);
            r
        }
        Direction::Up => {
            sink(
                r,
                w,
                h,
                duration + UP_GRACE,
                &payer,
                &mut throttled,
                key,
                cx,
            )
            .await
        }
    };
    if throttled {
        c.refused_budget.fetch_add(1, Ordering::Relaxed);
    }
    match result {
        // The client closing its end is how a bulk it stopped early ends: not a reset.
        Err(End::Io(e)) if peer_gone(&e) => Ok(()),
        r => r.map(|_| ()),
    }
}

/// Waits until `bucket` (on a clock that started at `start`) grants bytes; at most `max`.
async fn paced_grant(bucket: &mut TokenBucket, start: Instant, max: usize) -> usize {
    let ns = || u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    loop {
        match bucket.grant(ns(), max as u64) {
            0 => {
                let at = start + Duration::from_nanos(bucket.next_at());
                tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
            }
            n => return usize::try_from(n).unwrap_or(max),
        }
    }
}

/// The duration a bulk gets, and the status saying whether it was shortened.
fn granted(asked: Duration, trusted: bool) -> (Duration, u32) {
    let cap = if trusted {
        MAX_DURATION_OPEN
    } else {
        MAX_DURATION_PUBLIC
    };
    if asked > cap {
        (cap, status::CLAMPED)
    } else {
        (asked, status::OK)
    }
}

/// Reads the client's bytes until it shuts its side (or `limit` passes), reporting what
/// arrived every [`REPORT_EVERY_NS`] and once more at the end.
#[allow(clippy::too_many_arguments)]
async fn sink<R, W>(
    r: &mut BufReader<R>,
    w: &mut BufWriter<W>,
    h: &Header,
    limit: Duration,
    payer: &Payer<'_>,
    throttled: &mut bool,
    key: &Option<SessionKey>,
    cx: &StreamCtx<'_>,
) -> Result<(), End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let c = cx.counters;
    let io_t = cx.timeouts.io;
    let start = Instant::now();
    let every = Duration::from_nanos(REPORT_EVERY_NS);
    let mut next_report = start + every;
    let mut last_byte = start;
    let mut got = 0u64;
    let mut buf = vec![0u8; CHUNK];
    let mut lowat = cx
        .tcp_fd
        .filter(|_| cx.peer.is_some_and(wanted))
        .map(|fd| (fd, Lowat::new(start)));
    let report = |got: u64| BulkReport {
        bytes: got,
        elapsed_ns: u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
        ..BulkReport::default()
    };
    let end = loop {
        if start.elapsed() >= limit {
            break Ok(());
        }
        let deadline = tokio::time::Instant::from_std(next_report.min(start + limit));
        match tokio::time::timeout_at(deadline, r.read(&mut buf)).await {
            Ok(Ok(0)) => break Ok(()),
            Ok(Ok(n)) => {
                got += n as u64;
                last_byte = Instant::now();
                // Paid after the read, for what came: an empty budget stops the reads, and
                // TCP's (QUIC's) flow control then stops the client.
                *throttled |= payer.pay(n).await;
            }
            Ok(Err(e)) => break Err(End::Io(e)),
            Err(_) => {}
        }
        if last_byte.elapsed() >= io_t {
            c.stalled_read.fetch_add(1, Ordering::Relaxed);
            break Err(End::Closed);
        }
        if Instant::now() >= next_report {
            next_report += every;
            reply(w, h, status::OK, 0, &report(got), key, cx).await?;
            if let Some((fd, l)) = lowat.as_mut() {
                l.apply(*fd, got, Instant::now());
            }
            within(io_t, w.flush(), &c.stalled_write).await?;
        }
    };
    c.rx_bytes.fetch_add(got, Ordering::Relaxed);
    end?;
    reply(w, h, status::OK, 0, &report(got), key, cx).await?;
    within(io_t, w.flush(), &c.stalled_write).await
}

/// Writes one `BulkReply` frame with `flags` (sealed under `--token`).
// SAFE: `buf` is `REPLY_LEN` bytes, which is what `encode_reply` writes.
#[allow(clippy::indexing_slicing)]
async fn reply<W: AsyncWrite + Unpin>(
    w: &mut BufWriter<W>,
    h: &Header,
    st: u32,
    flags: u16,
    report: &BulkReport,
    key: &Option<SessionKey>,
    cx: &StreamCtx<'_>,
) -> Result<(), End> {
    let mut buf = [0u8; bulk::REPLY_LEN];
    let _ = bulk::encode_reply(&mut buf, h.flow, st, flags, h.send_ts, report);
    if let Some(hdr) = buf.first_chunk_mut::<HEADER_LEN>() {
        seal(key, hdr);
    }
    within(
        cx.timeouts.io,
        w.write_all(&buf),
        &cx.counters.stalled_write,
    )
    .await?;
    cx.counters
        .tx_bytes
        .fetch_add(bulk::REPLY_LEN as u64, Ordering::Relaxed);
    Ok(())
}

/// The client went away: a TCP RST or broken pipe, a QUIC stream stopped or reset.
fn peer_gone(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted | K::NotConnected
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strangers_get_a_minute_and_the_trusted_an_hour() {
        let h = Duration::from_secs(3600);
        assert_eq!(granted(h, false), (MAX_DURATION_PUBLIC, status::CLAMPED));
        assert_eq!(granted(h, true), (h, status::OK));
        assert_eq!(granted(2 * h, true), (h, status::CLAMPED));
        let s = Duration::from_secs(10);
        assert_eq!(granted(s, false), (s, status::OK));
    }
}
