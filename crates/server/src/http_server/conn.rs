//! What keeps one HTTP connection of the responder from holding its slot forever, and the
//! responder's counters. hyper has no deadline for most states a peer can stall in, so each
//! connection's socket is wrapped in [`Watched`], which notes when bytes last moved and
//! whether a write is waiting for the peer, and [`watch`] races the connection against a
//! watchdog with these rules (first match wins):
//!
//! 1. a handler is running (`/delay/MS`): wait, the server is the slow one;
//! 2. a response is open (being sent, or a request body echoed) and no byte moved for `io`:
//!    stalled (writing if a write is pending — a peer that does not read —, else reading);
//! 3. the first bytes of a request head (or of a TLS handshake) came more than `header` ago
//!    and the head is still incomplete: slowloris, closed;
//! 4. nothing moved for `idle`: closed (HTTP/2 or HTTP/1.1 keep-alive alike).
//!
//! hyper's own HTTP/1.1 header-read timeout (which needs a timer: `TokioTimer`) is set to
//! `idle` as a second line: a kept-alive connection must complete its next head within it.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What the HTTP responder has done; every refusal and forced close has its own counter.
#[derive(Debug, Default)]
pub struct HttpCounters {
    pub accepted: AtomicU64,
    pub requests: AtomicU64,
    /// Requests held back by `--http-delay` before their answer.
    pub delayed: AtomicU64,
    /// Connections closed at once because `max_conns` were open.
    pub refused_conns: AtomicU64,
    /// Failed accepts (EMFILE/ENFILE: out of descriptors), each followed by a short back-off.
    pub accept_errors: AtomicU64,
    /// Requests answered 401 because the token was missing or wrong.
    pub refused_token: AtomicU64,
    /// `/bytes/N` answered 429 because the source address's reply budget did not hold N.
    pub refused_budget: AtomicU64,
    /// Connections ended by a request hyper could not parse (answered 400 or 431: bad or
    /// conflicting framing headers, header floods).
    pub malformed: AtomicU64,
    /// Closed because a request head (or TLS handshake) was not complete within `header`.
    pub closed_header: AtomicU64,
    /// Closed after `idle` without traffic (or without the next request, for HTTP/1.1).
    pub closed_idle: AtomicU64,
    /// Closed because a request body stopped arriving for `io`.
    pub stalled_read: AtomicU64,
    /// Closed because the peer did not read its response for `io`.
    pub stalled_write: AtomicU64,
}

impl HttpCounters {
    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// The exit summary: traffic, then refusals and closes, naming only the counters that
    /// are not zero (in the periodic line's order and words).
    pub fn line(&self) -> String {
        let g = HttpCounters::get;
        crate::counters::summary([
            crate::counters::group(
                "http",
                &[
                    ("conns", g(&self.accepted)),
                    ("requests", g(&self.requests)),
                    ("delayed", g(&self.delayed)),
                ],
                &[],
            ),
            self.refusals_group(),
        ])
    }

    /// Every refusal and forced close (the periodic log line), naming only those that are
    /// not zero.
    pub fn refusals_line(&self) -> String {
        self.refusals_group()
            .unwrap_or_else(|| "nothing refused".to_string())
    }

    /// The refusals and forced closes that are not zero, in the words of both lines.
    fn refusals_group(&self) -> Option<String> {
        let g = HttpCounters::get;
        crate::counters::group(
            "http refused:",
            &[
                ("conns", g(&self.refused_conns)),
                ("accept-errors", g(&self.accept_errors)),
                ("token", g(&self.refused_token)),
                ("budget", g(&self.refused_budget)),
                ("malformed", g(&self.malformed)),
            ],
            &[
                ("header", g(&self.closed_header)),
                ("idle", g(&self.closed_idle)),
                ("stalled-read", g(&self.stalled_read)),
                ("stalled-write", g(&self.stalled_write)),
            ],
        )
    }

    /// The sum of every refusal and forced close: the periodic line is printed when it moves.
    pub fn refusals_total(&self) -> u64 {
        let g = HttpCounters::get;
        [
            &self.refused_conns,
            &self.accept_errors,
            &self.refused_token,
            &self.refused_budget,
            &self.malformed,
            &self.closed_header,
            &self.closed_idle,
            &self.stalled_read,
            &self.stalled_write,
        ]
        .iter()
        .map(|c| g(c))
        .sum()
    }
}

/// The deadlines of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    pub header: Duration,
    pub idle: Duration,
    pub io: Duration,
}

/// Shared between the socket wrapper, the service and the watchdog of one connection.
/// Times are milliseconds since `start`; `head_since` is 0 when no head is in progress.
#[derive(Debug)]
pub struct ConnState {
    start: Instant,
    last_io: AtomicU64,
    head_since: AtomicU64,
    write_pending: AtomicBool,
    busy: AtomicUsize,
    open: AtomicUsize,
}

impl ConnState {
    pub fn new() -> Arc<ConnState> {
        Arc::new(ConnState {
            start: Instant::now(),
            last_io: AtomicU64::new(0),
            head_since: AtomicU64::new(0),
            write_pending: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn moved(&self) {
        self.last_io.store(self.now_ms(), Ordering::Relaxed);
    }

    fn read_some(&self) {
        self.read_at(self.now_ms());
    }

    fn read_at(&self, now: u64) {
        self.last_io.store(now, Ordering::Relaxed);
        if self.open.load(Ordering::Relaxed) == 0 && self.busy.load(Ordering::Relaxed) == 0 {
            // The first bytes of a new request head: its deadline starts (+1: 0 means none).
            let _ =
                self.head_since
                    .compare_exchange(0, now + 1, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// A request head was complete and its handler starts: until the guard drops, the server
    /// is the one working.
    pub fn handler(self: &Arc<Self>) -> Busy {
        self.head_since.store(0, Ordering::Relaxed);
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy(self.clone())
    }

    /// A response is open until the guard (kept in the body) drops.
    pub fn response(self: &Arc<Self>) -> Open {
        self.open.fetch_add(1, Ordering::Relaxed);
        Open(self.clone())
    }

    /// The watchdog's verdict now: None = let it run.
    fn verdict(&self, d: &Deadlines) -> Option<Close> {
        self.verdict_at(self.now_ms(), d)
    }

    /// The verdict at `now` (milliseconds since the connection started): pure, so the rules
    /// are tested on a virtual clock.
    fn verdict_at(&self, now: u64, d: &Deadlines) -> Option<Close> {
        let quiet = Duration::from_millis(now.saturating_sub(self.last_io.load(Ordering::Relaxed)));
        if self.busy.load(Ordering::Relaxed) > 0 {
            return None;
        }
        if self.open.load(Ordering::Relaxed) > 0 {
            if quiet < d.io {
                return None;
            }
            return Some(if self.write_pending.load(Ordering::Relaxed) {
                Close::StalledWrite
            } else {
                Close::StalledRead
            });
        }
        let head = self.head_since.load(Ordering::Relaxed);
        if head > 0 && Duration::from_millis(now.saturating_sub(head - 1)) >= d.header {
            return Some(Close::Header);
        }
        if quiet >= d.idle {
            return Some(Close::Idle);
        }
        None
    }
}

/// Held while a handler runs.
pub struct Busy(Arc<ConnState>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
        self.0.moved();
    }
}

/// Held by a response body until hyper is done with it.
pub struct Open(Arc<ConnState>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
        self.0.moved();
    }
}

/// Why the watchdog closed a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    Header,
    Idle,
    StalledRead,
    StalledWrite,
}

impl Close {
    fn count(self, c: &HttpCounters) {
        let k = match self {
            Close::Header => &c.closed_header,
            Close::Idle => &c.closed_idle,
            Close::StalledRead => &c.stalled_read,
            Close::StalledWrite => &c.stalled_write,
        };
        k.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `conn` until it ends or the watchdog closes it (dropping it closes the socket); the
/// close is counted first, so whoever sees the connection end also sees the count.
pub async fn watch<F: std::future::Future>(
    state: &ConnState,
    d: Deadlines,
    counters: &HttpCounters,
    conn: F,
) -> Result<F::Output, Close> {
    let every = d.header.min(d.idle).min(d.io) / 4;
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(conn);
    loop {
        tokio::select! {
            out = &mut conn => return Ok(out),
            _ = tick.tick() => {
                if let Some(v) = state.verdict(&d) {
                    v.count(counters);
                    return Err(v);
                }
            }
        }
    }
}

/// A socket that reports its progress to a [`ConnState`].
pub struct Watched<S> {
    inner: S,
    state: Arc<ConnState>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, state: Arc<ConnState>) -> Watched<S> {
        Watched { inner, state }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.state.read_some();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> Watched<S> {
    fn note(&self, r: &Poll<io::Result<usize>>) {
        match r {
            Poll::Ready(Ok(n)) if *n > 0 => {
                self.state.write_pending.store(false, Ordering::Relaxed);
                self.state.moved();
            }
            Poll::Pending => self.state.write_pending.store(true, Ordering::Relaxed),
            _ => {}
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Compares a presented token with the secret in time independent of where they differ
/// (hand-written: eight lines do not justify a dependency; lengths are not secret).
pub fn token_matches(presented: &[u8], secret: &[u8]) -> bool {
    if presented.len() != secret.len() {
        return false;
    }
    presented
        .iter()
        .zip(secret)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d() -> Deadlines {
        Deadlines {
            header: Duration::from_millis(100),
            idle: Duration::from_millis(300),
            io: Duration::from_millis(200),
        }
    }

    #[test]
    fn deadlines_by_state() {
        let s = ConnState::new();
        assert_eq!(s.verdict_at(299, &d()), None);
        assert_eq!(
            s.verdict_at(300, &d()),
            Some(Close::Idle),
            "nothing ever moved"
        );

        let s = ConnState::new();
        s.read_at(1000);
        assert_eq!(s.verdict_at(1050, &d()), None);
        s.read_at(1090); // more bytes of the same head do not restart its deadline
        assert_eq!(s.verdict_at(1100, &d()), Some(Close::Header), "slowloris");

        let s = ConnState::new();
        s.read_at(1000);
        let busy = s.handler();
        let open = s.response();
        s.last_io.store(1000, Ordering::Relaxed);
        assert_eq!(s.verdict_at(60_000, &d()), None, "a handler is running");
        drop(busy);
        s.last_io.store(1000, Ordering::Relaxed);
        assert_eq!(s.verdict_at(1199, &d()), None);
        assert_eq!(s.verdict_at(1200, &d()), Some(Close::StalledRead));
        s.write_pending.store(true, Ordering::Relaxed);
        assert_eq!(s.verdict_at(1200, &d()), Some(Close::StalledWrite));
        drop(open);
        s.last_io.store(1200, Ordering::Relaxed);
        assert_eq!(s.verdict_at(1499, &d()), None, "response done: idle starts");
        assert_eq!(s.verdict_at(1500, &d()), Some(Close::Idle));
    }

    #[test]
    fn the_exit_summary_names_only_what_is_not_zero() {
        let c = HttpCounters::default();
        assert_eq!(c.line(), "nothing served or refused");
        c.accepted.fetch_add(3, Ordering::Relaxed);
        c.requests.fetch_add(7, Ordering::Relaxed);
        c.refused_token.fetch_add(2, Ordering::Relaxed);
        c.stalled_write.fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            c.line(),
            "http conns 3 requests 7; http refused: token 2; closed stalled-write 1"
        );
        assert_eq!(
            c.refusals_line(),
            "http refused: token 2; closed stalled-write 1",
            "the periodic line names only what is not zero too"
        );
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(token_matches(b"s3cret", b"s3cret"));
        assert!(!token_matches(b"s3cres", b"s3cret"));
        assert!(!token_matches(b"s3cre", b"s3cret"));
    }
}
