//! Idle callbacks on a TCP connection (`npt lifetime tcp://`): a middlebox forgets an idle
//! TCP connection too (a NAT's conntrack entry, a relay's inactivity timeout), and as for UDP
//! only the far end sending first after the gap shows it ([`npt_wire::idle`]). The frames are
//! UDP's: an `Idle` request is acked at once on the connection, then the connection is held
//! for the gap and one `IdleCallback` is written on it. A relay that timed out has closed the
//! connection by then (the client saw FIN or RST); a NAT that forgot it drops the callback,
//! and the client hears nothing.
//!
//! Bounded like the UDP callbacks ([`crate::idle`]): gaps up to [`MAX_GAP_MS`], at most
//! [`MAX_PER_IP`] connections held per source address and [`MAX_TOTAL`] in all ([`Holds`]);
//! a request over them is acked with the status saying why, and counted. Under `--token` the
//! stream is a keyed session, so the request and both answers are sealed. The request must be
//! [`IDLE_REQUEST_LEN`] bytes like UDP's (a shorter one gets the ack alone, `IDLE_SHORT`). A
//! hold ends early when the client sends anything (a gap-0 request cancels it; the loop reads
//! it as the next frame) or closes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use npt_wire::auth::SessionKey;
use npt_wire::frame::{status, Header, Kind, HEADER_LEN};
use npt_wire::idle::{self, Idle, IDLE_LEN, IDLE_PAYLOAD_LEN, IDLE_REQUEST_LEN};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::io::{BufReader, BufWriter};

use crate::idle::{MAX_GAP_MS, MAX_PER_IP, MAX_TOTAL};
use crate::stream::{within, End, StreamCtx};

/// The connections held for a callback, per source address and in all.
pub struct Holds {
    held: Mutex<(HashMap<IpAddr, usize>, usize)>,
    max_per_ip: usize,
    max_total: usize,
}

impl Default for Holds {
    fn default() -> Self {
        Holds::new(MAX_PER_IP, MAX_TOTAL)
    }
}

/// One connection's place in [`Holds`], given back when dropped.
pub struct Hold<'a> {
    holds: &'a Holds,
    ip: IpAddr,
}

impl Holds {
    pub fn new(max_per_ip: usize, max_total: usize) -> Holds {
        Holds {
            held: Mutex::new((HashMap::new(), 0)),
            max_per_ip,
            max_total,
        }
    }

    /// A place for a connection from `ip`, or None when its address or the server holds as
    /// many as they may.
    pub fn take(&self, ip: IpAddr) -> Option<Hold<'_>> {
        let mut g = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let (per_ip, total) = &mut *g;
        let n = per_ip.entry(ip).or_insert(0);
        if *n >= self.max_per_ip || *total >= self.max_total {
            if *n == 0 {
                per_ip.remove(&ip);
            }
            return None;
        }
        *n += 1;
        *total += 1;
        Some(Hold { holds: self, ip })
    }

    /// Connections held now.
    pub fn len(&self) -> usize {
        self.held.lock().map_or(0, |g| g.1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        let mut g = self.holds.held.lock().unwrap_or_else(|e| e.into_inner());
        let (per_ip, total) = &mut *g;
        *total = total.saturating_sub(1);
        if let Some(n) = per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                per_ip.remove(&self.ip);
            }
        }
    }
}

/// An `Idle` frame on a stream (its header `h` read, `rest` payload bytes to come): the ack
/// at once, then — when a callback was granted — the hold and the callback. `Ok` to go on
/// reading frames (the client may send the next one, or close).
pub(crate) async fn serve<R, W>(
    r: &mut BufReader<R>,
    w: &mut BufWriter<W>,
    h: &Header,
    rest: usize,
    key: &Option<SessionKey>,
    cx: &StreamCtx<'_>,
) -> Result<(), End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let c = cx.counters;
    let io_t = cx.timeouts.io;
    let Some((holds, peer)) = cx.idle else {
        // QUIC streams: a stream of a connection has no path state of its own to lose.
        c.malformed.fetch_add(1, Ordering::Relaxed);
        return Err(End::Closed);
    };
    if !(IDLE_PAYLOAD_LEN..=IDLE_REQUEST_LEN - HEADER_LEN).contains(&rest) {
        c.malformed.fetch_add(1, Ordering::Relaxed);
        return Err(End::Closed);
    }
    let mut payload = [0u8; IDLE_REQUEST_LEN - HEADER_LEN];
    let payload = payload.get_mut(..rest).unwrap_or_default();
    within(io_t, r.read_exact(payload), &c.stalled_read).await?;
    let Ok(ask) = Idle::decode(payload) else {
        c.malformed.fetch_add(1, Ordering::Relaxed);
        return Err(End::Closed);
    };
    let (st, hold) = grant(&ask, rest + HEADER_LEN, holds, peer.ip());
    if ask.gap_ms != 0 && st != status::OK {
        c.refused_callbacks.fetch_add(1, Ordering::Relaxed);
    }
    let body = Idle {
        gap_ms: ask.gap_ms,
        seen: Some(peer),
        max_gap_ms: MAX_GAP_MS,
        held_us: 0,
    };
    write(w, idle::answer(h, Kind::IdleAck, st, &body), key, cx).await?;
    let Some(_hold) = hold else {
        return Ok(());
    };
    let acked = Instant::now();
    let gap = Duration::from_millis(u64::from(ask.gap_ms));
    tokio::select! {
        () = tokio::time::sleep(gap) => {}
        // The client spoke (a cancel, the next frame) or closed: the hold is over, and the
        // frame loop reads what came.
        got = r.fill_buf() => {
            got?;
            return Ok(());
        }
    }
    let held_us = u32::try_from(acked.elapsed().as_micros()).unwrap_or(u32::MAX);
    let body = Idle { held_us, ..body };
    write(
        w,
        idle::answer(h, Kind::IdleCallback, status::OK, &body),
        key,
        cx,
    )
    .await?;
    c.idle_callbacks.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// The ack's status for `ask` (a request of `len` bytes from `ip`), and the hold when a
/// callback is granted.
fn grant<'a>(ask: &Idle, len: usize, holds: &'a Holds, ip: IpAddr) -> (u32, Option<Hold<'a>>) {
    if ask.gap_ms == 0 {
        return (status::OK, None);
    }
    if len < IDLE_REQUEST_LEN {
        return (status::IDLE_SHORT, None);
    }
    if ask.gap_ms > MAX_GAP_MS {
        return (status::IDLE_GAP, None);
    }
    match holds.take(ip) {
        Some(h) => (status::OK, Some(h)),
        None => (status::IDLE_FULL, None),
    }
}

/// Writes an answer (its header sealed under `--token`) and flushes it: it must leave now.
async fn write<W: AsyncWrite + Unpin>(
    w: &mut BufWriter<W>,
    mut frame: [u8; IDLE_LEN],
    key: &Option<SessionKey>,
    cx: &StreamCtx<'_>,
) -> Result<(), End> {
    if let Some(hdr) = frame.first_chunk_mut::<HEADER_LEN>() {
        crate::stream::seal(key, hdr);
    }
    let c = cx.counters;
    within(cx.timeouts.io, w.write_all(&frame), &c.stalled_write).await?;
    within(cx.timeouts.io, w.flush(), &c.stalled_write).await?;
    c.tx_bytes.fetch_add(IDLE_LEN as u64, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(gap_ms: u32) -> Idle {
        Idle {
            gap_ms,
            ..Idle::default()
        }
    }

    #[test]
    fn holds_are_bounded_per_address_and_in_all_and_given_back() {
        let holds = Holds::new(2, 3);
        let a: IpAddr = [198, 51, 100, 1].into();
        let b: IpAddr = [203, 0, 113, 9].into();
        let h1 = grant(&ask(1_000), IDLE_REQUEST_LEN, &holds, a);
        let h2 = grant(&ask(1_000), IDLE_REQUEST_LEN, &holds, a);
        assert_eq!((h1.0, h2.0), (status::OK, status::OK));
        assert_eq!(
            grant(&ask(1_000), IDLE_REQUEST_LEN, &holds, a).0,
            status::IDLE_FULL
        );
        let h3 = grant(&ask(1_000), IDLE_REQUEST_LEN, &holds, b);
        assert_eq!(h3.0, status::OK);
        assert_eq!(
            grant(&ask(1_000), IDLE_REQUEST_LEN, &holds, b).0,
            status::IDLE_FULL,
            "the server's total"
        );
        drop(h1);
        assert_eq!(holds.len(), 2);
        assert_eq!(
            grant(&ask(1_000), IDLE_REQUEST_LEN, &holds, a).0,
            status::OK
        );
        drop((h2, h3));
        assert!(holds.is_empty());
    }

    #[test]
    fn short_long_and_cancel_requests() {
        let holds = Holds::default();
        let ip: IpAddr = [198, 51, 100, 1].into();
        let short = grant(&ask(1_000), IDLE_REQUEST_LEN - 1, &holds, ip);
        assert_eq!((short.0, short.1.is_none()), (status::IDLE_SHORT, true));
        let long = grant(&ask(MAX_GAP_MS + 1), IDLE_REQUEST_LEN, &holds, ip);
        assert_eq!((long.0, long.1.is_none()), (status::IDLE_GAP, true));
        let cancel = grant(&ask(0), IDLE_LEN, &holds, ip);
        assert_eq!((cancel.0, cancel.1.is_none()), (status::OK, true));
        assert!(holds.is_empty());
    }
}
