//! The monitor's listener (`listen = ADDR`): the dashboard, its data, range reports and the
//! OpenMetrics scrape, on one HTTP/1.1 port served by hyper.
//!
//! None of it runs where rounds are started: the listener has a thread and a runtime of its
//! own (`npt-monitor-http`), and everything an answer renders — a scrape of ten thousand
//! targets, the page's data, a range report — runs on that runtime's blocking pool of at most
//! [`RENDERERS`] threads (more requests wait their turn), never on the workers that start
//! rounds. A scrape of `/metrics` copies the text each target's last round left
//! ([`crate::metrics`]: milliseconds at ten thousand targets, where rendering it all took a
//! second of one core) and runs on a thread of its own, one at a time, at nice
//! [`SCRAPE_NICE`]: on a box whose cores the rounds need, it yields to them (a first version
//! without that started the rounds due during a scrape p99 468 ms late against 56 ms for the
//! rest). The page keeps its priority (at nice 10 it took 1.5 s instead of 23 ms on a loaded
//! box). What an answer reads of the running monitor it
//! copies under a lock held for a fraction of a millisecond ([`crate::live`]). Queries of the
//! store go through a connection of their own ([`Open`]: SQLite in WAL mode lets them read
//! while the writer writes).
//!
//! On a loopback address it answers anyone on the host; on any other address the config must
//! give a token, and every request must carry it (`Authorization: Bearer TOKEN`, or
//! `?token=TOKEN` for a browser). Answers are never larger than the history asked for, requests
//! are GETs of a few fixed paths, and a slow client is dropped after 30 s.
//!
//! | path | answer |
//! |---|---|
//! | `/` | the dashboard (`?range=1h|6h|24h|7d|30d`, and the page's `page`, `per`, `q`, `group`, `sort`: [`crate::dashboard::view`]) |
//! | `/api/data` | the dashboard's data as JSON (same parameters) |
//! | `/report` | a target's range as a result document: `?target=NAME&range=24h&format=html|json|text` |
//! | `/metrics` | OpenMetrics text |

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::live::Live;
use crate::store::{Store, StoreError};

/// Opens the store for reading, once per query.
pub trait Open: Send + Sync {
    fn open(&self) -> Result<Box<dyn Store>, StoreError>;
}

/// The SQLite file, read through connections of its own.
pub struct SqliteFile(pub std::path::PathBuf);

impl Open for SqliteFile {
    fn open(&self) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(crate::store::sqlite::Sqlite::open_read(&self.0)?))
    }
}

impl<S: Store + 'static> Open for crate::store::Shared<S> {
    fn open(&self) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(self.clone()))
    }
}

/// A running listener; dropping it stops accepting.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

struct Ctx {
    token: Option<String>,
    /// One scrape renders at a time; the next waits.
    scrapes: tokio::sync::Semaphore,
    live: Arc<Live>,
    reader: Arc<dyn Open>,
}

/// Threads that render answers (a scrape, the page's data, a report) at once; more requests
/// wait for one.
pub const RENDERERS: usize = 2;

/// The scrape thread's nice value: a scrape of ten thousand targets copies 26 MB, and the
/// rounds due meanwhile come first.
pub const SCRAPE_NICE: i32 = 10;

/// Lowers the calling thread's CPU priority to [`SCRAPE_NICE`] (Linux: nice is per thread).
/// A failure leaves it as it was: the scrape still comes, only without yielding.
fn lower_priority() {
    // SAFETY: gettid and setpriority have no preconditions; they act on this thread only.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid);
        if let Ok(tid) = libc::id_t::try_from(tid) {
            libc::setpriority(libc::PRIO_PROCESS, tid, SCRAPE_NICE);
        }
    }
}

/// Binds `addr` and serves, on a thread and runtime of its own, until the returned
/// [`Server`] is dropped.
pub fn start(
    addr: SocketAddr,
    token: Option<String>,
    live: Arc<Live>,
    reader: Arc<dyn Open>,
) -> anyhow::Result<Server> {
    let std_listener =
        std::net::TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("listen {addr}: {e}"))?;
    std_listener.set_nonblocking(true)?;
    let bound = std_listener.local_addr()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(RENDERERS)
        .thread_name("npt-monitor-http")
        .enable_all()
        .build()?;
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let ctx = Arc::new(Ctx {
        token,
        scrapes: tokio::sync::Semaphore::new(1),
        live,
        reader,
    });
    std::thread::Builder::new()
        .name("npt-monitor-http".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else {
                    return;
                };
                loop {
                    let sock = tokio::select! {
                        _ = &mut rx => return,
                        r = listener.accept() => match r {
                            Ok((s, _)) => s,
                            Err(_) => {
                                tokio::time::sleep(Duration::from_millis(10)).await;
                                continue;
                            }
                        },
                    };
                    let ctx = ctx.clone();
                    tokio::spawn(async move {
                        let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                            let ctx = ctx.clone();
                            async move { Ok::<_, Infallible>(answer(&ctx, req).await) }
                        });
                        let conn = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(Duration::from_secs(10))
                            .serve_connection(TokioIo::new(sock), svc);
                        let _ = tokio::time::timeout(Duration::from_secs(30), conn).await;
                    });
                }
            });
            // Renders still running finish on their own; nothing waits for them.
            rt.shutdown_background();
        })?;
    Ok(Server {
        addr: bound,
        stop: Some(tx),
    })
}

fn reply(status: StatusCode, ctype: &'static str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(ctype),
    );
    r.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    r
}

/// The query's `key`, percent-decoded.
pub fn query(q: &str, key: &str) -> Option<String> {
    q.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then(|| decode(v))
    })
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = b
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(c),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Constant-time comparison of the token (its length may leak, not its bytes).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |x, (p, q)| x | (p ^ q)) == 0
}

fn authorized<B>(ctx: &Ctx, req: &Request<B>) -> bool {
    let Some(t) = &ctx.token else {
        return true;
    };
    let bearer = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let in_query = req.uri().query().and_then(|q| query(q, "token"));
    bearer.is_some_and(|b| same(b, t)) || in_query.is_some_and(|q| same(&q, t))
}

async fn answer<B>(ctx: &Arc<Ctx>, req: Request<B>) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    if req.method() != hyper::Method::GET {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "npt monitor: GET only\n",
        );
    }
    if !authorized(ctx, &req) {
        let mut r = reply(
            StatusCode::UNAUTHORIZED,
            TEXT,
            "npt monitor: a token is needed (Authorization: Bearer TOKEN, or ?token=TOKEN)\n",
        );
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    let path = req.uri().path().to_string();
    let q = req.uri().query().unwrap_or("").to_string();
    match path.as_str() {
        "/metrics" => {
            // One scrape at a time, on a thread of its own at a lower CPU priority.
            let _one = ctx.scrapes.acquire().await;
            let live = ctx.live.clone();
            let (tx, rx) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new()
                .name("npt-monitor-scrape".into())
                .spawn(move || {
                    lower_priority();
                    let _ = tx.send(crate::metrics::scrape(&live));
                });
            match (spawned, rx.await) {
                (Ok(_), Ok(text)) => reply(StatusCode::OK, npt_metrics::CONTENT_TYPE, text),
                (Err(e), _) => reply(StatusCode::SERVICE_UNAVAILABLE, TEXT, format!("{e}\n")),
                (_, Err(e)) => reply(StatusCode::INTERNAL_SERVER_ERROR, TEXT, format!("{e}\n")),
            }
        }
        "/" | "/index.html" | "/api/data" | "/report" => {
            let c = ctx.clone();
            let r = tokio::task::spawn_blocking(move || query_store(&c, &path, &q)).await;
            match r {
                Ok(Ok((ctype, body))) => reply(StatusCode::OK, ctype, body),
                Ok(Err((status, msg))) => reply(status, TEXT, format!("npt monitor: {msg}\n")),
                Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, TEXT, format!("{e}\n")),
            }
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            TEXT,
            "npt monitor: GET / (dashboard), /api/data, /report, /metrics\n",
        ),
    }
}

type Answer = Result<(&'static str, Vec<u8>), (StatusCode, String)>;

fn query_store(ctx: &Ctx, path: &str, q: &str) -> Answer {
    let bad = |m: String| (StatusCode::BAD_REQUEST, m);
    let range = match query(q, "range") {
        Some(r) => crate::dashboard::Range::parse(&r)
            .ok_or_else(|| bad(format!("range {r:?}: one of 1h, 6h, 24h, 7d, 30d")))?,
        None => crate::dashboard::Range::default(),
    };
    let view = crate::dashboard::View::parse(|k| query(q, k)).map_err(bad)?;
    let mut st = ctx
        .reader
        .open()
        .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    let now = crate::round::wall_ms(std::time::SystemTime::now());
    let fail = |e: StoreError| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    match path {
        "/api/data" => {
            let d = crate::dashboard::data(&mut *st, &ctx.live, range, &view, now).map_err(fail)?;
            Ok((
                "application/json",
                serde_json::to_vec(&d).unwrap_or_default(),
            ))
        }
        "/report" => {
            let name = query(q, "target").ok_or_else(|| bad("report needs ?target=NAME".into()))?;
            let format = query(q, "format").unwrap_or_else(|| "html".into());
            let doc = crate::range::report(&*st, &name, now - range.span_ms(), now)
                .map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))?;
            crate::range::render(&doc, &format, &name).map_err(|e| bad(e.to_string()))
        }
        _ => {
            let d = crate::dashboard::data(&mut *st, &ctx.live, range, &view, now).map_err(fail)?;
            Ok(("text/html; charset=utf-8", crate::dashboard::page(&d)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode() {
        assert_eq!(
            query("a=1&target=relay%20udp&x", "target").as_deref(),
            Some("relay udp")
        );
        assert_eq!(query("target=a+b", "target").as_deref(), Some("a b"));
        assert_eq!(query("x", "x").as_deref(), Some(""));
        assert_eq!(query("t=%zz%4", "t").as_deref(), Some("%zz%4"));
        assert_eq!(query("", "t"), None);
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
