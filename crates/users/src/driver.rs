//! The tokio driver: one task per user, asking the [`model`](crate::model) what to do and
//! carrying it out on real sockets (TCP, one shared QUIC client endpoint, UDP), reporting
//! every measurement to the [`Collector`].
//!
//! Timing points (DESIGN.md rule 2): a request's latency runs from just before its first byte
//! is handed to the socket to just after its last response byte is read. Connect and
//! handshake are timed apart; "first request" runs from the connect start to the end of the
//! first request of that connection. Requests still in flight when the run stops are
//! abandoned: neither counted nor errors.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use npt_report::run::RunBody;
use npt_wire::auth::{Dir, SessionKey};
use npt_wire::frame::{Header, Kind, HEADER_LEN, MAX_FRAME_LEN};
use npt_wire::{Outcome, Window};
use std::pin::Pin;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::watch;

use crate::auth;
use crate::collect::{Collector, GameCounts};
use crate::config::{Activity, Load, Proto, Shape, Targets};
use crate::model::{self, Chooser, PagePlan, Step, User};
use crate::quic::{self, QuicTrust};

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub targets: Targets,
    pub load: Load,
    pub duration: Duration,
    pub shape: Shape,
    pub seed: u64,
    /// Access token put in every QUIC frame (0 = none; inside TLS).
    pub token: u64,
    /// `--token`'s secret: the keyed handshake on every TCP connection and game socket, whose
    /// key then seals every frame ([`crate::auth`]).
    pub secret: Option<String>,
    /// Connect, handshake and per-read/write idle timeout.
    pub timeout: Duration,
    /// Length of one interval of the series (and of the progress line).
    pub interval: Duration,
    pub quic_trust: QuicTrust,
    /// Tokio worker threads (0 = one per core).
    pub workers: usize,
}

impl RunConfig {
    /// The effective configuration, for the result document's `config`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let r = |x: crate::config::Range| json!([x.lo, x.hi]);
        let ms = |x: crate::config::Range| json!([x.lo as f64 / 1e6, x.hi as f64 / 1e6]);
        let s = &self.shape;
        let (model, load) = match self.load {
            Load::Users { users, ramp_up } => (
                "closed",
                json!({"users": users, "ramp_up_s": ramp_up.as_secs_f64()}),
            ),
            Load::Arrivals {
                per_sec,
                max_active,
            } => (
                "open",
                json!({"arrival_rate_per_s": per_sec, "max_active": max_active}),
            ),
        };
        json!({
            "targets": self.targets.stream.iter().map(|a| format!("tcp://{a}")).collect::<Vec<_>>(),
            "quic": self.targets.quic.map(|a| a.to_string()),
            "quic_server_name": self.targets.quic_server_name,
            "via": self.targets.via.as_ref().map(|v| v.to_string()),
            "quic_trust": match &self.quic_trust {
                QuicTrust::Insecure => "insecure",
                QuicTrust::Roots(_) => "ca",
            },
            "model": model,
            "load": load,
            "duration_s": self.duration.as_secs_f64(),
            "mix": s.mix.to_string_compact(),
            "think_ms": ms(s.think),
            "seed": self.seed,
            "token": self.token != 0,
            "timeout_s": self.timeout.as_secs_f64(),
            "interval_s": self.interval.as_secs_f64(),
            "web": {
                "pages": r(s.web.pages), "rounds": r(s.web.rounds),
                "handshake_up": r(s.web.handshake_up), "handshake_down": r(s.web.handshake_down),
                "request_up": r(s.web.request_up), "request_down": r(s.web.request_down),
                "pause_ms": ms(s.web.pause),
            },
            "quic_visit": {
                "resources": r(s.quic.resources), "doc_up": r(s.quic.doc_up),
                "doc_down": r(s.quic.doc_down), "resource_up": r(s.quic.resource_up),
                "resource_down": r(s.quic.resource_down),
            },
            "transfer": {
                "download": r(s.transfer.download), "upload": r(s.transfer.upload),
                "chunk": s.transfer.chunk,
            },
            "game": {
                "session_ms": ms(s.game.session), "tick_hz": r(s.game.tick_hz),
                "size": r(s.game.size), "loss_timeout_ms": s.game.loss_timeout.as_secs_f64() * 1e3,
            },
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start the runtime: {0}")]
    Runtime(io::Error),
    #[error("QUIC: {0}")]
    Quic(String),
    #[error("no target for activity {0} (give a tcp://HOST:PORT target)")]
    NoTarget(&'static str),
    #[error("activity quic needs --quic HOST:PORT")]
    NoQuicTarget,
}

/// A snapshot for the progress line, once per interval.
#[derive(Clone, Debug)]
pub struct Progress {
    pub elapsed: Duration,
    pub active_users: u64,
    pub active_connections: u64,
    pub requests: u64,
    pub errors: u64,
    pub interval_requests: u64,
    pub interval_p50_ms: f64,
    pub interval_p99_ms: f64,
}

/// What a finished run hands back to be wrapped in a result document.
pub struct RunOutput {
    pub body: RunBody,
    pub started: SystemTime,
    pub ended: SystemTime,
    /// `duration` or `signal`.
    pub stopped_by: &'static str,
}

/// An error of one request, connection or session, classified.
#[derive(Debug)]
struct Fail {
    kind: &'static str,
    msg: String,
}

impl Fail {
    fn new(kind: &'static str, msg: impl Into<String>) -> Fail {
        Fail {
            kind,
            msg: msg.into(),
        }
    }

    fn io(what: &str, e: &io::Error) -> Fail {
        Fail::new(classify_io(e), format!("{what}: {e}"))
    }

    fn timeout(what: &str) -> Fail {
        Fail::new("timeout", format!("{what}: no progress within the timeout"))
    }
}

/// `refused`, `reset`, `closed`, `timeout`, `local`, `tls`, `protocol` or `io`.
pub fn classify_io(e: &io::Error) -> &'static str {
    if let Some(inner) = e.get_ref() {
        if let Some(quinn::ReadError::ConnectionLost(c)) = inner.downcast_ref::<quinn::ReadError>()
        {
            return quic::classify_connection(c);
        }
        if let Some(quinn::WriteError::ConnectionLost(c)) =
            inner.downcast_ref::<quinn::WriteError>()
        {
            return quic::classify_connection(c);
        }
    }
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => "refused",
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => "reset",
        K::UnexpectedEof | K::NotConnected => "closed",
        K::TimedOut => "timeout",
        K::AddrInUse | K::AddrNotAvailable => "local",
        K::InvalidData => "protocol",
        _ => match e.raw_os_error() {
            Some(libc_code) if libc_code == 113 || libc_code == 101 => "unreachable",
            Some(24) | Some(23) => "local",
            _ => "io",
        },
    }
}

/// 64 KiB of incompressible bytes every request payload is cut from (no per-request fill).
fn fill() -> &'static [u8] {
    static FILL: OnceLock<Vec<u8>> = OnceLock::new();
    FILL.get_or_init(|| {
        let mut v = vec![0u8; 64 * 1024];
        npt_wire::fill::fill(npt_wire::Fill::Random, 0x7573_6572, 0, &mut v);
        v
    })
}

struct Ctx {
    cfg: RunConfig,
    col: Collector,
    inflight: crate::inflight::InFlight,
    t0: Instant,
    quic: Option<quinn::Endpoint>,
    alive: AtomicU64,
}

impl Ctx {
    fn now_ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// Sleeps until `at` and records how late the wakeup was.
    async fn sleep_until(&self, at: Instant) {
        tokio::time::sleep_until(at.into()).await;
        let late = Instant::now().saturating_duration_since(at);
        self.col.lateness(late.as_nanos() as u64);
    }

    async fn io<T>(
        &self,
        what: &str,
        f: impl std::future::Future<Output = io::Result<T>>,
    ) -> Result<T, Fail> {
        match tokio::time::timeout(self.cfg.timeout, f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Fail::io(what, &e)),
            Err(_) => Err(Fail::timeout(what)),
        }
    }
}

/// Runs the users until the duration is over or `stop` is set; calls `progress` once per
/// interval. Builds its own tokio runtime.
pub fn run(
    cfg: RunConfig,
    stop: Arc<AtomicBool>,
    progress: impl FnMut(&Progress),
) -> Result<RunOutput, RunError> {
    for a in Activity::ALL {
        if cfg.shape.mix.weight(a) == 0 {
            continue;
        }
        if a == Activity::Quic {
            if cfg.targets.quic.is_none() {
                return Err(RunError::NoQuicTarget);
            }
        } else if cfg.targets.stream.is_empty() {
            return Err(RunError::NoTarget(a.name()));
        }
    }
    npt_netio::raise_nofile_limit();
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if cfg.workers > 0 {
        b.worker_threads(cfg.workers);
    }
    let rt = b
        .thread_name("npt-run")
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    let out = rt.block_on(run_async(cfg, stop, progress));
    rt.shutdown_timeout(Duration::from_secs(1));
    out
}

async fn run_async(
    cfg: RunConfig,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(&Progress),
) -> Result<RunOutput, RunError> {
    let quic_ep = if cfg.shape.mix.weight(Activity::Quic) > 0 {
        let target = cfg.targets.quic.ok_or(RunError::NoQuicTarget)?;
        let ep =
            quic::client_endpoint(target, &cfg.quic_trust, cfg.timeout).map_err(RunError::Quic)?;
        // One connection before the run: a certificate we do not trust is a clear error
        // now, not thousands of classified errors later.
        quic::preflight(&ep, target, &cfg.targets.quic_server_name, cfg.timeout)
            .await
            .map_err(RunError::Quic)?;
        Some(ep)
    } else {
        None
    };
    let started = SystemTime::now();
    let started_mono = Instant::now();
    let cpu0 = npt_report::cpu_seconds();
    let ctx = Arc::new(Ctx {
        cfg: cfg.clone(),
        col: Collector::new(),
        inflight: Default::default(),
        t0: Instant::now(),
        quic: quic_ep,
        alive: AtomicU64::new(0),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let end = cfg.duration;
    match cfg.load {
        Load::Users { users, ramp_up } => {
            for i in 0..users {
                let user = User::new(
                    cfg.seed,
                    i as u64,
                    model::ramp_start(i, users, ramp_up),
                    end,
                );
                spawn_user(&ctx, user, i as u64, stop_rx.clone());
            }
        }
        Load::Arrivals {
            per_sec,
            max_active,
        } => {
            let ctx2 = ctx.clone();
            let rx = stop_rx.clone();
            tokio::spawn(async move {
                let mut stop = rx.clone();
                let spawner = async {
                    for k in 0u64.. {
                        let at = model::arrival_at(k, per_sec);
                        if at >= end {
                            break;
                        }
                        ctx2.sleep_until(ctx2.t0 + at).await;
                        if ctx2.alive.load(Ordering::Relaxed) >= max_active as u64 {
                            ctx2.col.arrivals_dropped.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        spawn_user(
                            &ctx2,
                            User::visitor(ctx2.cfg.seed, k, at, end),
                            k,
                            rx.clone(),
                        );
                    }
                };
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => {}
                    _ = spawner => {}
                }
            });
        }
    }

    // The clock of the run: intervals, progress, the end, signals.
    let mut stopped_by = "duration";
    let mut next_interval = cfg.interval;
    let mut last_cut = Duration::ZERO;
    loop {
        let now = ctx.t0.elapsed();
        if stop.load(Ordering::Relaxed) {
            stopped_by = "signal";
            break;
        }
        if now >= end {
            break;
        }
        if now >= next_interval {
            let rec = ctx
                .col
                .close_interval(last_cut.as_secs_f64(), now.as_secs_f64());
            last_cut = now;
            next_interval += cfg.interval;
            progress(&Progress {
                elapsed: now,
                active_users: ctx.col.active_users.load(Ordering::Relaxed),
                active_connections: ctx.col.active_conns.load(Ordering::Relaxed),
                requests: ctx.col.requests_total(),
                errors: ctx.col.errors_total(),
                interval_requests: rec.requests,
                interval_p50_ms: rec.latency_ms.p50,
                interval_p99_ms: rec.latency_ms.p99,
            });
        }
        let wake =
            (ctx.t0 + next_interval.min(end)).min(Instant::now() + Duration::from_millis(50));
        tokio::time::sleep_until(wake.into()).await;
    }
    let ran = ctx.t0.elapsed();
    // What the end cuts off, read before the users' futures (and their guards) are dropped.
    let cut = ctx
        .inflight
        .cut(ctx.now_ns(), ctx.cfg.timeout.as_nanos() as u64);
    for a in &cut.timed_out {
        ctx.col.error(*a, "timeout", || {
            format!(
                "no answer within {:?}, still waiting when the run ended",
                ctx.cfg.timeout
            )
        });
    }
    let _ = stop_tx.send(true);
    // Users leave at once (their futures are dropped at the next poll); wait a bounded time.
    let give_up = Instant::now() + Duration::from_secs(3);
    while ctx.alive.load(Ordering::Relaxed) > 0 && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if ran > last_cut + Duration::from_millis(1) {
        ctx.col
            .close_interval(last_cut.as_secs_f64(), ran.as_secs_f64());
    }
    if let Some(ep) = &ctx.quic {
        ep.close(0u32.into(), b"run over");
    }
    // Start label plus monotonic time: a wall-clock step cannot distort the run's length.
    let ended = started + started_mono.elapsed();
    let cpu1 = npt_report::cpu_seconds();
    let secs = ran.as_secs_f64();
    let m = ctx
        .col
        .finish(secs, cfg.shape.game.loss_timeout.as_secs_f64() * 1e3);
    let mut summary = m.summary;
    let (model_name, users, rate, ramp) = match cfg.load {
        Load::Users { users, ramp_up } => ("closed", users, None, ramp_up.as_secs_f64()),
        Load::Arrivals {
            per_sec,
            max_active,
        } => ("open", max_active, Some(per_sec), 0.0),
    };
    summary.model = model_name.to_string();
    summary.targets = cfg
        .targets
        .stream
        .iter()
        .map(|a| format!("tcp://{a}"))
        .collect();
    summary.quic_target = cfg.targets.quic.map(|a| a.to_string());
    summary.users = users;
    summary.arrival_rate_per_s = rate;
    summary.mix = cfg.shape.mix.to_string_compact();
    summary.seed = cfg.seed;
    summary.duration_s = secs;
    summary.ramp_up_s = ramp;
    summary.in_flight_at_end = cut.count;
    summary.oldest_in_flight_ms = cut.oldest_ns as f64 / 1e6;
    let mut health = m.health;
    health.cpu_user_s = cpu1.0 - cpu0.0;
    health.cpu_sys_s = cpu1.1 - cpu0.1;
    health.cpu_pct = (health.cpu_user_s + health.cpu_sys_s) * 100.0 / secs.max(1e-9);
    health.max_rss_bytes = npt_report::max_rss_bytes();
    Ok(RunOutput {
        body: RunBody {
            summary,
            health,
            latency: m.latency,
            errors: m.errors,
            protocols: m.protocols,
            activities: m.activities,
            histograms: m.histograms,
            intervals: m.intervals,
        },
        started,
        ended,
        stopped_by,
    })
}

struct Alive<'a>(&'a AtomicU64);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn spawn_user(ctx: &Arc<Ctx>, user: User, id: u64, mut stop: watch::Receiver<bool>) {
    let ctx = ctx.clone();
    ctx.alive.fetch_add(1, Ordering::Relaxed);
    tokio::spawn(async move {
        let _alive = Alive(&ctx.alive);
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {}
            _ = user_life(&ctx, user, id) => {}
        }
    });
}

async fn user_life(ctx: &Arc<Ctx>, mut user: User, id: u64) {
    let mut active = None;
    let targets = &ctx.cfg.targets.stream;
    let target = (!targets.is_empty()).then(|| targets[id as usize % targets.len()]);
    loop {
        match user.next(ctx.t0.elapsed(), &ctx.cfg.shape) {
            Step::WaitUntil(t) => ctx.sleep_until(ctx.t0 + t).await,
            Step::Act(a) => {
                if active.is_none() {
                    active = Some(ctx.col.user_active());
                }
                ctx.col.session(a);
                let r = match (a, target) {
                    (Activity::Quic, _) => quic_visit(ctx, &mut user.chooser, id).await,
                    (_, None) => Err(Fail::new("config", "no target")),
                    (Activity::Web, Some(t)) => web_visit(ctx, &mut user.chooser, id, t).await,
                    (Activity::Download, Some(t)) => {
                        let n = user.chooser.download(&ctx.cfg.shape);
                        transfer(ctx, Activity::Download, id, t, n).await
                    }
                    (Activity::Upload, Some(t)) => {
                        let n = user.chooser.upload(&ctx.cfg.shape);
                        transfer(ctx, Activity::Upload, id, t, n).await
                    }
                    (Activity::Game, Some(t)) => game(ctx, &mut user.chooser, id, t).await,
                };
                match r {
                    Ok(()) => ctx.col.session_completed(a),
                    Err(f) => ctx.col.error(a, f.kind, || f.msg),
                }
            }
            Step::Done => break,
        }
    }
}

fn frame_len(n: u64) -> u32 {
    n.clamp(HEADER_LEN as u64, MAX_FRAME_LEN as u64) as u32
}

fn request_header(
    ctx: &Ctx,
    key: Option<&SessionKey>,
    id: u64,
    seq: u64,
    up: u32,
    down: u32,
) -> [u8; HEADER_LEN] {
    let mut hdr = [0u8; HEADER_LEN];
    let h = Header {
        kind: Kind::Request,
        flags: 0,
        frame_len: up,
        reply_len: down,
        flow: id as u32,
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
struct Exchange {
    ttfb: Duration,
    total: Duration,
}

/// Progress needed within one `--timeout`: a transfer may take longer than the timeout as
/// long as every piece of this size moves within it.
const PIECE: usize = 1 << 20;

thread_local! {
    /// Where response payloads are read and dropped: one buffer per worker thread instead of
    /// one per connection (10,000 users × 16 KiB would be 160 MB for nothing).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 64 * 1024]);
}

/// Writes `hdr[*hdr_off..]` and then `body` payload bytes cut from the fill, at most `chunk`
/// payload bytes per write call; header and first payload bytes go in one vectored write.
async fn write_frame<W: AsyncWrite + Unpin>(
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

/// Reads `n` bytes of the response (of `total`, `*got` read so far) into the per-thread
/// scratch and drops them, keeping the first [`HEADER_LEN`] bytes in `head`.
async fn read_discard<R: AsyncRead + Unpin>(
    r: &mut R,
    head: &mut [u8; HEADER_LEN],
    got: &mut usize,
    n: usize,
    first: &mut Option<Instant>,
) -> io::Result<()> {
    let end = *got + n;
    std::future::poll_fn(|cx| {
        while *got < end {
            let step = SCRATCH.with(|s| {
                let mut s = s.borrow_mut();
                let want = (end - *got).min(s.len());
                let mut rb = ReadBuf::new(&mut s[..want]);
                match Pin::new(&mut *r).poll_read(cx, &mut rb) {
                    Poll::Ready(Ok(())) => {
                        let filled = rb.filled();
                        if filled.is_empty() {
                            return Poll::Ready(Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "connection closed mid-response",
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

fn check_response(
    head: &[u8; HEADER_LEN],
    key: Option<&SessionKey>,
    seq: u64,
    down: u32,
) -> Result<(), Fail> {
    let h = Header::decode(head).map_err(|e| Fail::new("protocol", format!("response: {e}")))?;
    if let Some(k) = key {
        k.open(Dir::ToClient, head)
            .map_err(|e| Fail::new("protocol", format!("response: {e}")))?;
    }
    if h.kind != Kind::Response || h.seq != seq {
        return Err(Fail::new(
            "protocol",
            format!("expected response {seq}, got {:?} {}", h.kind, h.seq),
        ));
    }
    if h.frame_len != down {
        return Err(Fail::new(
            "protocol",
            format!(
                "asked for {down} bytes, server answers {} (server limits?)",
                h.frame_len
            ),
        ));
    }
    Ok(())
}

/// One framed request of `up` bytes answered by `down` bytes, over any byte stream, without
/// a buffer of its own. Each [`PIECE`] must move within the timeout.
#[allow(clippy::too_many_arguments)]
async fn exchange<R, W>(
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
    loop {
        let piece = body.min(PIECE);
        ctx.io("send", write_frame(w, &hdr, &mut hdr_off, piece, chunk))
            .await?;
        body -= piece;
        if body == 0 {
            break;
        }
    }
    ctx.io("send", w.flush()).await?;
    let mut head = [0u8; HEADER_LEN];
    let mut got = 0usize;
    let mut first = None;
    // The header (and whatever follows it in the same read), checked before the rest.
    ctx.io(
        "receive",
        read_discard(r, &mut head, &mut got, HEADER_LEN, &mut first),
    )
    .await?;
    check_response(&head, key, seq, down)?;
    let total = down as usize;
    while got < total {
        let piece = (total - got).min(PIECE);
        ctx.io(
            "receive",
            read_discard(r, &mut head, &mut got, piece, &mut first),
        )
        .await?;
    }
    Ok(Exchange {
        ttfb: first.map_or(Duration::ZERO, |f| f.saturating_duration_since(t)),
        total: t.elapsed(),
    })
}

/// A TCP connection to `target` (through `--via` if set), with its `--token` session key.
async fn tcp_connect(
    ctx: &Ctx,
    target: SocketAddr,
) -> Result<(TcpStream, Instant, Option<SessionKey>), Fail> {
    let t = Instant::now();
    let s = match &ctx.cfg.targets.via {
        None => ctx.io("connect", TcpStream::connect(target)).await?,
        Some(via) => {
            let host = target.ip().to_string();
            let tunnel = npt_proxy::connect_async::tcp_connect(via, &host, target.port());
            let (s, phases) = match tokio::time::timeout(ctx.cfg.timeout, tunnel).await {
                Ok(Ok(x)) => x,
                Ok(Err(e)) => return Err(Fail::new(e.kind(), format!("via {via}: {e}"))),
                Err(_) => return Err(Fail::timeout("proxy handshake")),
            };
            ctx.col.proxy(Proto::Tcp, phases.auth_ns + phases.reply_ns);
            s
        }
    };
    ctx.col.connect(Proto::Tcp, t.elapsed().as_nanos() as u64);
    let _ = s.set_nodelay(true);
    let mut s = s;
    let key = match &ctx.cfg.secret {
        Some(secret) => Some(
            ctx.io("token handshake", auth::stream(&mut s, secret))
                .await?,
        ),
        None => None,
    };
    Ok((s, t, key))
}

async fn web_visit(ctx: &Ctx, ch: &mut Chooser, id: u64, target: SocketAddr) -> Result<(), Fail> {
    let shape: &Shape = &ctx.cfg.shape;
    let pages = ch.pages(shape);
    for p in 0..pages {
        let plan = ch.page(shape);
        web_page(ctx, ch, id, target, plan).await?;
        if p + 1 < pages {
            let d = ch.pause(shape);
            ctx.sleep_until(Instant::now() + d).await;
        }
    }
    Ok(())
}

/// One page: its own connection, the handshake-sized exchange, then the request rounds.
async fn web_page(
    ctx: &Ctx,
    ch: &mut Chooser,
    id: u64,
    target: SocketAddr,
    plan: PagePlan,
) -> Result<(), Fail> {
    let shape = &ctx.cfg.shape;
    let (mut s, t_connect, key) = tcp_connect(ctx, target).await?;
    let _conn = ctx.col.conn_open(Proto::Tcp);
    let (mut r, mut w) = s.split();
    let hs = exchange(
        ctx,
        Activity::Web,
        &mut r,
        &mut w,
        id,
        0,
        plan.handshake_up,
        plan.handshake_down,
        usize::MAX,
        key.as_ref(),
    )
    .await?;
    ctx.col.handshake(Proto::Tcp, hs.total.as_nanos() as u64);
    ctx.col.bytes(
        Activity::Web,
        frame_len(plan.handshake_up) as u64,
        frame_len(plan.handshake_down) as u64,
    );
    for round in 0..plan.rounds {
        let (up, down) = ch.web_round(shape);
        let x = exchange(
            ctx,
            Activity::Web,
            &mut r,
            &mut w,
            id,
            1 + round as u64,
            up,
            down,
            usize::MAX,
            key.as_ref(),
        )
        .await?;
        ctx.col.request(
            Activity::Web,
            frame_len(up) as u64,
            frame_len(down) as u64,
            x.total.as_nanos() as u64,
        );
        if round == 0 {
            ctx.col
                .first_request(Proto::Tcp, t_connect.elapsed().as_nanos() as u64);
        }
        if round + 1 < plan.rounds {
            let d = ch.pause(shape);
            ctx.sleep_until(Instant::now() + d).await;
        }
    }
    Ok(())
}

/// One large download (a small request, `n` bytes back) or upload (`n` bytes up, a header
/// back), moved in chunks of `--chunk` bytes.
async fn transfer(ctx: &Ctx, a: Activity, id: u64, target: SocketAddr, n: u64) -> Result<(), Fail> {
    let (mut s, t_connect, key) = tcp_connect(ctx, target).await?;
    let _conn = ctx.col.conn_open(Proto::Tcp);
    let (mut r, mut w) = s.split();
    let chunk = ctx.cfg.shape.transfer.chunk.clamp(1, 1 << 20) as usize;
    let (up, down) = if a == Activity::Download {
        (256, n)
    } else {
        (n, HEADER_LEN as u64)
    };
    let x = exchange(ctx, a, &mut r, &mut w, id, 0, up, down, chunk, key.as_ref()).await?;
    let (up, down) = (frame_len(up) as u64, frame_len(down) as u64);
    ctx.col.request(a, up, down, x.total.as_nanos() as u64);
    ctx.col
        .first_request(Proto::Tcp, t_connect.elapsed().as_nanos() as u64);
    ctx.col.ttfb(a, x.ttfb.as_nanos() as u64);
    ctx.col.transfer(a, up.max(down), x.total.as_nanos() as u64);
    Ok(())
}

/// One QUIC visit: connect (the handshake), the main document, then the resources on
/// concurrent bidirectional streams of the same connection.
async fn quic_visit(ctx: &Arc<Ctx>, ch: &mut Chooser, id: u64) -> Result<(), Fail> {
    let (Some(ep), Some(target)) = (&ctx.quic, ctx.cfg.targets.quic) else {
        return Err(Fail::new("config", "no QUIC endpoint"));
    };
    let shape = &ctx.cfg.shape;
    let plan = ch.quic_visit(shape);
    let t = Instant::now();
    let connecting = ep
        .connect(target, &ctx.cfg.targets.quic_server_name)
        .map_err(|e| Fail::new("local", format!("connect: {e}")))?;
    let conn = match tokio::time::timeout(ctx.cfg.timeout, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return Err(Fail::new(
                quic::classify_connection(&e),
                format!("handshake: {e}"),
            ))
        }
        Err(_) => return Err(Fail::timeout("handshake")),
    };
    let hs = t.elapsed().as_nanos() as u64;
    ctx.col.connect(Proto::Quic, hs);
    ctx.col.handshake(Proto::Quic, hs);
    let _conn = ctx.col.conn_open(Proto::Quic);
    let result = async {
        let (up, down) = (plan.doc_up, plan.doc_down);
        let x = quic_request(ctx, &conn, id, 0, up, down).await?;
        ctx.col.request(
            Activity::Quic,
            frame_len(up) as u64,
            frame_len(down) as u64,
            x.as_nanos() as u64,
        );
        ctx.col
            .first_request(Proto::Quic, t.elapsed().as_nanos() as u64);
        let mut set = tokio::task::JoinSet::new();
        for i in 0..plan.resources {
            let (up, down) = ch.quic_resource(shape);
            let ctx = ctx.clone();
            let conn = conn.clone();
            set.spawn(async move {
                let r = quic_request(&ctx, &conn, id, 1 + i as u64, up, down).await;
                (r, up, down)
            });
        }
        let mut first_err = None;
        while let Some(j) = set.join_next().await {
            match j {
                Ok((Ok(d), up, down)) => ctx.col.request(
                    Activity::Quic,
                    frame_len(up) as u64,
                    frame_len(down) as u64,
                    d.as_nanos() as u64,
                ),
                Ok((Err(f), _, _)) => {
                    // Every failed stream counts; the visit fails once, with the first.
                    if first_err.is_none() {
                        first_err = Some(f);
                    } else {
                        ctx.col.error(Activity::Quic, f.kind, || f.msg);
                    }
                }
                Err(_) => {}
            }
        }
        match first_err {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }
    .await;
    conn.close(0u32.into(), b"visit over");
    result
}

async fn quic_request(
    ctx: &Ctx,
    conn: &quinn::Connection,
    id: u64,
    seq: u64,
    up: u64,
    down: u64,
) -> Result<Duration, Fail> {
    let (mut send, mut recv) = match tokio::time::timeout(ctx.cfg.timeout, conn.open_bi()).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(Fail::new(
                quic::classify_connection(&e),
                format!("open stream: {e}"),
            ))
        }
        Err(_) => return Err(Fail::timeout("open stream")),
    };
    let x = exchange(
        ctx,
        Activity::Quic,
        &mut recv,
        &mut send,
        id,
        seq,
        up,
        down,
        usize::MAX,
        None, // the token value, inside TLS
    )
    .await?;
    let _ = send.finish();
    Ok(x.total)
}

/// A game session's counts since they were last handed to the collector. A packet is
/// counted as sent only once its fate is known (answered or lost), and counts, RTTs and bytes
/// are handed over together, so `received + lost == sent` and `requests == received` hold in
/// the result even for sessions the end of the run cuts off (their undecided packets are
/// left out, like any request in flight at the end).
struct GameAcc {
    g: GameCounts,
    rtts: [u64; 64],
    nr: usize,
    up: u64,
    down: u64,
    jitter_flushed: u64,
}

impl Default for GameAcc {
    fn default() -> Self {
        GameAcc {
            g: GameCounts::default(),
            rtts: [0; 64],
            nr: 0,
            up: 0,
            down: 0,
            jitter_flushed: 0,
        }
    }
}

impl GameAcc {
    fn lost(&mut self) {
        self.g.sent += 1;
        self.g.lost += 1;
    }

    /// Records an on-time reply; true when the batch is full and should be flushed.
    fn received(&mut self, rtt: u64) -> bool {
        self.g.sent += 1;
        self.g.received += 1;
        self.rtts[self.nr] = rtt;
        self.nr += 1;
        self.nr == self.rtts.len()
    }

    fn flush(&mut self, col: &Collector, jit: &npt_stats::Jitter) {
        let new = jit.samples() - self.jitter_flushed;
        self.jitter_flushed = jit.samples();
        self.g.jitter_weighted_ns = jit.value_ns() * new as f64;
        self.g.jitter_samples = new;
        col.game_flush(&self.rtts[..self.nr], &self.g, self.up, self.down);
        self.g = GameCounts::default();
        self.nr = 0;
        self.up = 0;
        self.down = 0;
    }
}

/// A game session: fixed-size `Echo` datagrams at a fixed tick; RTT from the echoed stamp,
/// loss/late/duplicate/reorder from the sequence window, RFC 3550 jitter of the RTT.
async fn game(ctx: &Ctx, ch: &mut Chooser, id: u64, target: SocketAddr) -> Result<(), Fail> {
    let plan = ch.game(&ctx.cfg.shape);
    let bind: SocketAddr = if target.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(bind)
        .await
        .map_err(|e| Fail::io("bind", &e))?;
    sock.connect(target)
        .await
        .map_err(|e| Fail::io("connect", &e))?;
    let key = match &ctx.cfg.secret {
        Some(secret) => Some(
            auth::udp(&sock, secret, ctx.cfg.timeout)
                .await
                .map_err(|e| Fail::io("token handshake", &e))?,
        ),
        None => None,
    };
    let _conn = ctx.col.conn_open(Proto::Udp);
    let size = frame_len(plan.size).min(64 * 1024) as usize;
    let mut out = fill()[..size].to_vec();
    // Echo replies are as long as the request; anything longer is not ours (truncated).
    let mut inb = vec![0u8; size + 64];
    let timeout_ns = ctx.cfg.shape.game.loss_timeout.as_nanos() as u64;
    let mut win = Window::new(timeout_ns, 4096);
    let mut jit = npt_stats::Jitter::default();
    let mut acc = GameAcc::default();
    let start = Instant::now();
    let end = start + plan.length;
    let mut next = start;
    let mut result = Ok(());
    loop {
        let sending = next < end;
        if !sending && win.in_flight() == 0 {
            break;
        }
        let drain_until = end + ctx.cfg.shape.game.loss_timeout;
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()), if sending => {
                let now_ns = ctx.now_ns();
                win.expire(now_ns, |_, _| acc.lost());
                let seq = win.push(now_ns, now_ns, 0);
                let h = Header {
                    kind: Kind::Echo,
                    flags: 0,
                    frame_len: size as u32,
                    reply_len: 0,
                    flow: id as u32,
                    status: 0,
                    seq,
                    send_ts: now_ns,
                    token: ctx.cfg.token,
                };
                let _ = h.encode(&mut out);
                if let Some(k) = &key {
                    let _ = k.seal(Dir::ToServer, &mut out);
                }
                if let Err(e) = sock.send(&out).await {
                    result = Err(Fail::io("send", &e));
                    break;
                }
                acc.up += size as u64;
                next += plan.tick;
                // Fell behind (a stalled worker): skip ticks rather than burst.
                let now = Instant::now();
                if next + plan.tick < now {
                    next = now;
                }
            }
            r = sock.recv(&mut inb) => {
                let n = match r {
                    Ok(n) => n,
                    Err(e) => {
                        result = Err(Fail::io("receive", &e));
                        break;
                    }
                };
                let Ok(h) = Header::decode(&inb[..n]) else { continue };
                if h.kind != Kind::EchoReply || h.flow != id as u32 {
                    continue;
                }
                if key.as_ref().is_some_and(|k| k.open(Dir::ToClient, &inb[..n]).is_err()) {
                    continue;
                }
                acc.down += n as u64;
                let now_ns = ctx.now_ns();
                win.expire(now_ns, |_, _| acc.lost());
                match win.on_reply(h.seq) {
                    Outcome::OnTime { slot, reordered } => {
                        let rtt = now_ns.saturating_sub(slot.sent);
                        jit.record(rtt);
                        acc.g.reordered += reordered as u64;
                        if acc.received(rtt) {
                            acc.flush(&ctx.col, &jit);
                        }
                    }
                    Outcome::Late { reordered } => {
                        acc.g.late += 1;
                        acc.g.reordered += reordered as u64;
                    }
                    Outcome::Duplicate => acc.g.duplicated += 1,
                    Outcome::Unknown | Outcome::Stale => {}
                }
            }
            _ = tokio::time::sleep_until(drain_until.into()), if !sending => break,
        }
    }
    win.expire_all(|_, _| acc.lost());
    acc.flush(&ctx.col, &jit);
    result
}
