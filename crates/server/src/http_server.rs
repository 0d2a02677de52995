//! The HTTP responder behind `npt serve --http`: a fast, boring backend so that a gateway under
//! test is never measured against a slow one (the gateway benchmark's complaint about its Node backend).
//!
//! Routes: `GET /` → `200 ok`; `/bytes/N` → N bytes of incompressible data; `/delay/MS` → `200`
//! after MS milliseconds; `/status/CODE` → that status; `POST`/`PUT` anything → the request body
//! echoed back. One port speaks HTTP/1.1 (keep-alive) and h2c with prior knowledge (hyper-util's
//! `auto` builder detects the h2 preface); with TLS, ALPN offers `h2` and `http/1.1`.
//!
//! The response body is an enum rather than a boxed trait object so `/` allocates nothing beyond
//! what hyper itself needs.
//!
//! Hardened for public addresses: connections are capped (`max_conns`, refused ones counted);
//! every state a peer can stall in has a deadline ([`conn`]: request head, idle keep-alive,
//! stalled body or response); with a token, only `GET /` is served to requests without it
//! (401 otherwise: header `x-npt-token: SECRET` or query parameter `?token=SECRET`); `/bytes/N`
//! is charged to the source address's reply budget (429 when it does not hold N). Failed
//! accepts (out of descriptors) are counted, logged at most every 5 s, and backed off.

mod conn;
mod gate;
mod tls;

pub use conn::HttpCounters;

/// Why the HTTP responder could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("{0}")]
    Protocol(String),
}

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use conn::{ConnState, Deadlines, Watched};

/// Largest `/bytes/N` and `/delay/MS` honoured; larger values are clamped.
pub const MAX_BYTES: u64 = 1 << 34;
pub const MAX_DELAY_MS: u64 = 600_000;
const CHUNK: usize = 64 * 1024;
/// The request header that carries the token (or the query parameter [`TOKEN_QUERY`]).
pub const TOKEN_HEADER: &str = "x-npt-token";
pub const TOKEN_QUERY: &str = "token";
/// How long the accept loop sleeps after a failed accept (EMFILE would fail again at once).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(20);

/// Decides whether an address may be sent a reply of so many bytes (true = send it, and the
/// bytes are charged). `npt serve` plugs in the server's per-address reply budget.
#[derive(Clone)]
pub struct ReplyBudgetHook(pub Arc<dyn Fn(IpAddr, u64) -> bool + Send + Sync>);

impl std::fmt::Debug for ReplyBudgetHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplyBudgetHook")
    }
}

/// How to run the responder.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    pub addr: SocketAddr,
    /// Serve HTTPS (h2 and http/1.1 by ALPN) instead of cleartext HTTP/1.1 + h2c.
    pub tls: bool,
    /// PEM certificate chain and private key; without them a self-signed certificate is made.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Runtime worker threads; `None` = one per CPU.
    pub threads: Option<usize>,
    /// Connections served at once; further ones are accepted, closed and counted.
    pub max_conns: usize,
    /// A request head (or TLS handshake) must be complete this long after its first byte.
    pub header_timeout: Duration,
    /// A connection with no traffic and no request in progress is closed after this long.
    pub idle_timeout: Duration,
    /// An open response (or echoed request body) that moves no byte for this long is closed.
    pub io_timeout: Duration,
    /// With a secret, requests without it get 401 for anything but `GET /`.
    pub token: Option<String>,
    /// Charged for `/bytes/N` replies; None = unlimited.
    pub reply_budget: Option<ReplyBudgetHook>,
    /// How often refusals are summarized on stderr (only when something changed).
    pub log_every: Duration,
    /// `--http-delay HOST=DUR`: every request whose `Host` (or `:authority`), port aside,
    /// is HOST waits DUR before it is answered — backends of known, different latency behind
    /// one port, for per-host load tests. At most [`MAX_HOST_DELAYS`], each at most
    /// [`MAX_DELAY_MS`].
    pub host_delays: Vec<(String, Duration)>,
    /// `--http1-only`: no h2 — ALPN offers `http/1.1` alone and an h2c preface is answered
    /// as HTTP/1.1 would answer it — a backend that cannot do HTTP/2, for clients' fallback.
    pub h1_only: bool,
}

/// The most `--http-delay` entries a responder takes.
pub const MAX_HOST_DELAYS: usize = 64;

impl ServerOptions {
    pub fn new(addr: SocketAddr) -> ServerOptions {
        ServerOptions {
            addr,
            tls: false,
            cert: None,
            key: None,
            threads: None,
            max_conns: 65_536,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            io_timeout: Duration::from_secs(10),
            token: None,
            reply_budget: None,
            log_every: Duration::from_secs(5),
            host_delays: Vec::new(),
            h1_only: false,
        }
    }

    fn deadlines(&self) -> Deadlines {
        Deadlines {
            header: self.header_timeout,
            idle: self.idle_timeout,
            io: self.io_timeout,
        }
    }
}

/// A responder running on its own runtime threads. Dropping it (or [`ServerHandle::shutdown`])
/// stops it.
pub struct ServerHandle {
    addr: SocketAddr,
    counters: Arc<HttpCounters>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the responder has done (connections, refusals, forced closes).
    pub fn counters(&self) -> Arc<HttpCounters> {
        self.counters.clone()
    }

    /// Stops accepting, drops every connection and joins the runtime thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    /// Blocks until the server stops (it only stops through `shutdown` or drop from another
    /// owner, so this is for `npt serve`, which then waits for a signal instead).
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn stop_now(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Binds `opts.addr` and serves on a dedicated multi-threaded tokio runtime. Returns once the
/// socket is listening, with the bound address (useful with port 0).
pub fn spawn_http_server(opts: &ServerOptions) -> Result<(SocketAddr, ServerHandle), Error> {
    let tls = if opts.tls {
        let ck = match (&opts.cert, &opts.key) {
            (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
            (None, None) => None,
            _ => {
                return Err(Error::Tls(
                    "--cert and --key must be given together".to_string(),
                ))
            }
        };
        Some(tls::server_config(ck, opts.h1_only)?)
    } else {
        None
    };
    let threads = opts
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("npt-http-serve")
        .enable_all()
        .build()
        .map_err(|e| Error::Io("starting the server runtime".into(), e))?;
    let std_listener = std::net::TcpListener::bind(opts.addr)
        .map_err(|e| Error::Io(format!("binding {}", opts.addr), e))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| Error::Io("listener".into(), e))?;
    // std listens with a backlog of 128: a burst of connections beyond it waits for SYN
    // retransmits (1 s, 3 s …) before the accept loop even sees them (1,100 connections took
    // 5 s). Listening again only raises the backlog (the kernel caps it at somaxconn).
    {
        use std::os::fd::AsRawFd as _;
        // SAFETY: listen on a valid, bound, listening socket.
        let _ = unsafe { libc::listen(std_listener.as_raw_fd(), 4096) };
    }
    let addr = std_listener
        .local_addr()
        .map_err(|e| Error::Io("listener".into(), e))?;
    let counters = Arc::new(HttpCounters::default());
    let policy = Arc::new(Policy {
        opts: opts.clone(),
        counters: counters.clone(),
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), Error>>();
    let thread = std::thread::Builder::new()
        .name("npt-http-accept".into())
        .spawn(move || {
            rt.block_on(async move {
                let listener = match TcpListener::from_std(std_listener) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready_tx.send(Err(Error::Io("listener".into(), e)));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                serve(listener, tls, policy, async {
                    let _ = stop_rx.await;
                })
                .await;
            });
            rt.shutdown_background();
        })
        .map_err(|e| Error::Io("spawning the server thread".into(), e))?;
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(Error::Protocol("server thread ended early".into())),
    }
    Ok((
        addr,
        ServerHandle {
            addr,
            counters,
            stop: Some(stop_tx),
            thread: Some(thread),
        },
    ))
}

/// Everything a connection is served with.
pub struct Policy {
    pub opts: ServerOptions,
    pub counters: Arc<HttpCounters>,
}

/// Decrements the open-connection count when a connection task ends, however it ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves connections from `listener` until `shutdown` completes. Must run inside a tokio
/// runtime (one connection = one task).
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    policy: Arc<Policy>,
    shutdown: impl Future<Output = ()>,
) {
    let acceptor = tls.map(TlsAcceptor::from);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if policy.opts.h1_only {
        builder = builder.http1_only();
    }
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(policy.opts.idle_timeout);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let log = tokio::spawn(log_refusals(policy.clone()));
    let active = Arc::new(AtomicUsize::new(0));
    let mut last_log: Option<std::time::Instant> = None;
    let mut since_log = 0u64;
    let c = policy.counters.clone();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: report (at most every 5 s), back off instead of
                // spinning, and keep serving the connections already open.
                c.accept_errors.fetch_add(1, Ordering::Relaxed);
                since_log += 1;
                let due = match last_log {
                    None => true,
                    Some(t) => t.elapsed() >= Duration::from_secs(5),
                };
                if due {
                    last_log = Some(std::time::Instant::now());
                    let hint = if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
                        " (out of file descriptors: raise `ulimit -n` or lower --max-conns)"
                    } else {
                        ""
                    };
                    eprintln!(
                        "npt serve: http accept failed {since_log} time(s): {e}{hint}; backing off and serving on"
                    );
                    since_log = 0;
                }
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        if active.load(Ordering::Relaxed) >= policy.opts.max_conns {
            c.refused_conns.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        }
        c.accepted.fetch_add(1, Ordering::Relaxed);
        active.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(active.clone());
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        let acceptor = acceptor.clone();
        let policy = policy.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let state = ConnState::new();
            let io = Watched::new(stream, state.clone());
            let work = async {
                match acceptor {
                    None => serve_conn(&builder, io, &policy, peer.ip(), &state).await,
                    Some(a) => {
                        if let Ok(s) = a.accept(io).await {
                            serve_conn(&builder, s, &policy, peer.ip(), &state).await;
                        }
                    }
                }
            };
            let d = policy.opts.deadlines();
            let _ = conn::watch(&state, d, &policy.counters, work).await;
        });
    }
    log.abort();
}

/// Prints the refusals line every `log_every` when a refusal or forced close happened since.
async fn log_refusals(policy: Arc<Policy>) {
    let mut logged = 0u64;
    let mut tick = tokio::time::interval(policy.opts.log_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let total = policy.counters.refusals_total();
        if total != logged {
            logged = total;
            eprintln!("npt serve: so far {}", policy.counters.refusals_line());
        }
    }
}

async fn serve_conn<S>(
    builder: &auto::Builder<TokioExecutor>,
    io: S,
    policy: &Arc<Policy>,
    peer: IpAddr,
    state: &Arc<ConnState>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = {
        let policy = policy.clone();
        let state = state.clone();
        service_fn(move |req| {
            let policy = policy.clone();
            let state = state.clone();
            async move {
                let _busy = state.handler();
                policy.counters.requests.fetch_add(1, Ordering::Relaxed);
                let resp = gate::route(req, &policy, Some(peer)).await;
                let open = state.response();
                Ok::<_, Infallible>(resp.map(|body| Tracked { body, _open: open }))
            }
        })
    };
    if let Err(e) = builder.serve_connection(TokioIo::new(io), svc).await {
        match e.downcast_ref::<hyper::Error>() {
            // hyper's own header-read timeout: the next request of a kept-alive HTTP/1.1
            // connection did not come within the idle timeout.
            Some(h) if h.is_timeout() => {
                policy.counters.closed_idle.fetch_add(1, Ordering::Relaxed);
            }
            // A request hyper could not parse: answered 400/431, connection closed.
            Some(h) if h.is_parse() => {
                policy.counters.malformed.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// A response body that marks its connection's response open until hyper drops it.
pub struct Tracked {
    body: RespBody,
    _open: conn::Open,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The responder's routing. Never fails: bad input gets a 4xx.
pub async fn respond(req: Request<Incoming>) -> Result<Response<RespBody>, Infallible> {
    if req.method() == Method::POST || req.method() == Method::PUT {
        return Ok(Response::new(RespBody::Echo(req.into_body())));
    }
    let path = req.uri().path();
    let resp = if path == "/" {
        Response::new(RespBody::Full(Some(Bytes::from_static(b"ok\n"))))
    } else if let Some(n) = path.strip_prefix("/bytes/") {
        match n.parse::<u64>() {
            Ok(n) => Response::new(RespBody::Repeat {
                remaining: n.min(MAX_BYTES),
            }),
            Err(_) => plain(StatusCode::BAD_REQUEST, "bad byte count\n"),
        }
    } else if let Some(ms) = path.strip_prefix("/delay/") {
        match ms.parse::<u64>() {
            Ok(ms) => {
                tokio::time::sleep(Duration::from_millis(ms.min(MAX_DELAY_MS))).await;
                Response::new(RespBody::Full(Some(Bytes::from_static(b"ok\n"))))
            }
            Err(_) => plain(StatusCode::BAD_REQUEST, "bad delay\n"),
        }
    } else if let Some(code) = path.strip_prefix("/status/") {
        match code
            .parse::<u16>()
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
        {
            Some(s) => plain(s, "status\n"),
            None => plain(StatusCode::BAD_REQUEST, "bad status\n"),
        }
    } else {
        plain(StatusCode::NOT_FOUND, "not found\n")
    };
    Ok(resp)
}

fn plain(status: StatusCode, msg: &'static str) -> Response<RespBody> {
    let mut r = Response::new(RespBody::Full(Some(Bytes::from_static(msg.as_bytes()))));
    *r.status_mut() = status;
    r
}

/// 64 KiB of random bytes made once; `/bytes/N` is served from slices of it (incompressible,
/// docs/measurement.md "Bandwidth and payload", and no per-request allocation).
fn payload() -> &'static Bytes {
    static P: OnceLock<Bytes> = OnceLock::new();
    P.get_or_init(|| {
        use rand::RngCore as _;
        let mut v = vec![0u8; CHUNK];
        rand::thread_rng().fill_bytes(&mut v);
        Bytes::from(v)
    })
}

/// Response bodies of the responder.
pub enum RespBody {
    Full(Option<Bytes>),
    Repeat { remaining: u64 },
    Echo(Incoming),
}

impl Body for RespBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            RespBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            RespBody::Repeat { remaining } => {
                if *remaining == 0 {
                    return Poll::Ready(None);
                }
                // NO-PANIC: `n <= CHUNK`, a `usize`, so the cast back is lossless.
                #[allow(clippy::cast_possible_truncation)]
                let n = (*remaining).min(CHUNK as u64) as usize;
                *remaining -= n as u64;
                Poll::Ready(Some(Ok(Frame::data(payload().slice(..n)))))
            }
            RespBody::Echo(inc) => Pin::new(inc).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RespBody::Full(b) => b.is_none(),
            RespBody::Repeat { remaining } => *remaining == 0,
            RespBody::Echo(inc) => inc.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RespBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            RespBody::Repeat { remaining } => SizeHint::with_exact(*remaining),
            RespBody::Echo(inc) => inc.size_hint(),
        }
    }
}

/// Reads and discards a body, returning its length (used by tests and the cold-start probe).
pub async fn drain<B>(body: B) -> Result<u64, B::Error>
where
    B: Body + Unpin,
{
    let mut body = body;
    let mut n = 0u64;
    while let Some(f) = body.frame().await {
        if let Some(d) = f?.data_ref() {
            n += bytes::Buf::remaining(d) as u64;
        }
    }
    Ok(n)
}
