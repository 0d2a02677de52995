//! The HTTP responder behind `npt serve --http`: a fast, boring backend so that a gateway under
//! test is never measured against a slow one (seed 003's complaint about its Node backend).
//!
//! Routes: `GET /` → `200 ok`; `/bytes/N` → N bytes of incompressible data; `/delay/MS` → `200`
//! after MS milliseconds; `/status/CODE` → that status; `POST`/`PUT` anything → the request body
//! echoed back. One port speaks HTTP/1.1 (keep-alive) and h2c with prior knowledge (hyper-util's
//! `auto` builder detects the h2 preface); with TLS, ALPN offers `h2` and `http/1.1`.
//!
//! The response body is an enum rather than a boxed trait object so `/` allocates nothing beyond
//! what hyper itself needs.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::Error;

/// Largest `/bytes/N` and `/delay/MS` honoured; larger values are clamped.
pub const MAX_BYTES: u64 = 1 << 34;
pub const MAX_DELAY_MS: u64 = 600_000;
const CHUNK: usize = 64 * 1024;

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
}

impl ServerOptions {
    pub fn new(addr: SocketAddr) -> ServerOptions {
        ServerOptions {
            addr,
            tls: false,
            cert: None,
            key: None,
            threads: None,
        }
    }
}

/// A responder running on its own runtime threads. Dropping it (or [`ServerHandle::shutdown`])
/// stops it.
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
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
        Some(crate::tls::server_config(ck)?)
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
    let addr = std_listener
        .local_addr()
        .map_err(|e| Error::Io("listener".into(), e))?;
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
                serve(listener, tls, async {
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
            stop: Some(stop_tx),
            thread: Some(thread),
        },
    ))
}

/// Serves connections from `listener` until `shutdown` completes. Must run inside a tokio
/// runtime (one connection = one task).
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()>,
) {
    let acceptor = tls.map(TlsAcceptor::from);
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => return,
            a = listener.accept() => a,
        };
        let (stream, _) = match accepted {
            Ok(a) => a,
            Err(_) => {
                // EMFILE and friends: back off a little instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                None => serve_conn(&builder, stream).await,
                Some(a) => {
                    if let Ok(s) = a.accept(stream).await {
                        let _ = builder
                            .serve_connection(TokioIo::new(s), service_fn(respond))
                            .await;
                    }
                }
            }
        });
    }
}

async fn serve_conn(builder: &auto::Builder<TokioExecutor>, stream: TcpStream) {
    let _ = builder
        .serve_connection(TokioIo::new(stream), service_fn(respond))
        .await;
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
/// DESIGN.md rule 7, and no per-request allocation).
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
