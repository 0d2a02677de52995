//! The load driver of `npt http`: opens connections (TCP, TLS; HTTP/1.1 through [`crate::h1`],
//! h2 through the `h2` crate directly — hyper's h2 client spawns a task per request — so npt
//! controls every socket), sends requests on the schedule of
//! [`crate::schedule`], and pushes one [`Event`] per request to its [`Shard`]. The calling thread
//! drains the shards into the [`Collector`] every 100 ms, prints progress and stops the run on
//! time or on the stop flag (Ctrl-C). Nothing here computes a statistic.
//!
//! Timing: a request's latency runs from just before it is written to the connection until its
//! last body byte has been read; with `--new-conn` it starts
//! before the TCP connect, so it contains the handshakes, as a fresh client sees them. In open
//! loop every request is also measured from its intended time: the [`crate::pacer`] thread
//! releases it then (to ~1 µs, not tokio's 1 ms timer), and a slot busy with a slow answer
//! makes it leave late (coordinated-omission correction, as wrk2).

use std::future::Future;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Uri};
use npt_report::http::{ColdStart, HttpBody, HttpSummary};
use npt_report::probe::Health;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::coldstart::ProcessGroup;
use crate::collect::{Collector, ConnEvent, Event, Outcome, Record, Shard};
use crate::h1;
use crate::pacer::{Due, Pacer};
use crate::schedule::{host_for, OpenLoop, Tickets};
use crate::threads::{choose_threads, is_local, ThreadChoice};
use crate::Error;

/// Pause after a failed connection attempt before the slot tries again.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(10);
/// How often the calling thread drains events and checks the clock and the stop flag.
const TICK: Duration = Duration::from_millis(100);
const INTERVAL_NS: u64 = 1_000_000_000;

/// A parsed `http://` or `https://` URL.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: String,
    pub https: bool,
    /// Host as written in the URL (no brackets around IPv6).
    pub host: String,
    pub port: u16,
    /// `host[:port]` as written.
    pub authority: String,
    pub path_and_query: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, Error> {
        let bad = |why: &str| Error::Url(url.to_string(), why.to_string());
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            Some(other) => {
                return Err(bad(&format!(
                    "unsupported scheme {other:?}: use http:// or https://"
                )))
            }
            None => return Err(bad("no scheme: use http://HOST[:PORT]/PATH")),
        };
        let auth = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = auth.host().trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        if auth.as_str().contains('@') {
            return Err(bad("user info in URLs is not supported"));
        }
        let port = auth.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path_and_query = uri
            .path_and_query()
            .map_or("/".to_string(), |p| p.as_str().to_string());
        let path_and_query = if path_and_query.is_empty() {
            "/".to_string()
        } else {
            path_and_query
        };
        Ok(Target {
            url: url.to_string(),
            https,
            host: host.to_string(),
            port,
            authority: auth.as_str().to_string(),
            path_and_query,
        })
    }
}

/// `--cold-start CMD --ready-timeout D`.
#[derive(Clone, Debug)]
pub struct ColdStartConfig {
    pub command: String,
    pub ready_timeout: Duration,
}

/// Everything a run needs, already validated by the CLI (see [`Config::validate`]).
#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    /// Virtual hosts sent as `Host` / `:authority`, round-robin; empty = the URL's authority.
    pub hosts: Vec<String>,
    pub method: Method,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// `-c`: connections (each with `streams` concurrent requests).
    pub connections: u32,
    pub streams: u32,
    pub http2: bool,
    pub new_conn: bool,
    /// `--rate`: open loop, requests per second.
    pub rate: Option<f64>,
    pub duration: Duration,
    /// Per request (connect + TLS + response); a slower one counts as a `timeout` error.
    pub timeout: Duration,
    pub insecure: bool,
    pub cold_start: Option<ColdStartConfig>,
    /// Print a progress line to stderr once a second.
    pub progress: bool,
    /// Runtime worker threads; `None` = [`crate::threads::choose_threads`] decides.
    pub threads: Option<usize>,
    /// `--via`: SOCKS5 or HTTP CONNECT tunnel per connection; through an HTTP proxy a plain
    /// `http://` HTTP/1.1 target is requested in absolute form instead (as browsers do).
    pub via: Option<npt_proxy::Via>,
    /// `--metrics`: the snapshot to refresh after each drain, and the labels of every series.
    pub metrics: Option<(npt_metrics::Published, Vec<(String, String)>)>,
}

impl Config {
    pub fn new(target: Target) -> Config {
        Config {
            target,
            hosts: Vec::new(),
            method: Method::GET,
            headers: Vec::new(),
            body: Bytes::new(),
            connections: 50,
            streams: 1,
            http2: false,
            new_conn: false,
            rate: None,
            duration: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            insecure: false,
            cold_start: None,
            progress: false,
            threads: None,
            via: None,
            metrics: None,
        }
    }

    /// Checks combinations the flags cannot express; the message names the flag.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if self.connections == 0 {
            return bad("-c/--connections must be at least 1");
        }
        if self.streams == 0 {
            return bad("--streams must be at least 1");
        }
        if self.streams > 1 && !self.http2 {
            return bad(
                "--streams needs --http2 (HTTP/1.1 has one request in flight per connection)",
            );
        }
        if self.streams > 1 && self.new_conn {
            return bad(
                "--streams cannot be combined with --new-conn (one request per connection)",
            );
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return bad("--rate must be a positive number of requests per second");
            }
        }
        if self.duration.is_zero() {
            return bad("-d/--duration must be positive");
        }
        if self.timeout.is_zero() {
            return bad("--timeout must be positive");
        }
        for h in &self.hosts {
            if HeaderValue::from_str(h).is_err() || h.is_empty() {
                return bad(&format!("--host {h:?} is not a valid Host header value"));
            }
        }
        if let Some(cs) = &self.cold_start {
            if cs.command.trim().is_empty() {
                return bad("--cold-start needs a command");
            }
            if cs.ready_timeout.is_zero() {
                return bad("--ready-timeout must be positive");
            }
        }
        Ok(())
    }

    fn host_names(&self) -> Vec<String> {
        if self.hosts.is_empty() {
            vec![self.target.authority.clone()]
        } else {
            self.hosts.clone()
        }
    }
}

/// What [`run`] returns: the body and the envelope's times.
#[derive(Debug)]
pub struct RunResult {
    pub started: SystemTime,
    pub ended: SystemTime,
    /// `duration` or `signal`.
    pub stopped_by: &'static str,
    pub body: HttpBody,
    /// Client threads used, and why.
    pub threads: ThreadChoice,
}

/// A request that got no complete response: kind (see [`classify`]) and message.
#[derive(Debug)]
pub struct Failure(pub &'static str, pub String);

impl Failure {
    fn from_err(e: &(dyn std::error::Error + 'static)) -> Failure {
        Failure(classify(e), chain(e))
    }
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// Error kinds: `refused`, `reset`, `timeout`, `closed` (the peer closed before the response
/// was complete), `tls`, `protocol` (unparsable response, h2 stream or connection errors),
/// `connect` (other connect failures).
pub fn classify(err: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut fallback: Option<&'static str> = None;
    while let Some(e) = cur {
        if let Some(ioe) = e.downcast_ref::<io::Error>() {
            match ioe.kind() {
                io::ErrorKind::ConnectionRefused => return "refused",
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe => return "reset",
                io::ErrorKind::TimedOut => return "timeout",
                io::ErrorKind::UnexpectedEof => fallback = fallback.or(Some("closed")),
                _ => {}
            }
            if let Some(inner) = ioe.get_ref() {
                if inner.downcast_ref::<rustls::Error>().is_some() {
                    return "tls";
                }
            }
        }
        if e.downcast_ref::<rustls::Error>().is_some() {
            return "tls";
        }
        if let Some(h) = e.downcast_ref::<h2::Error>() {
            if let Some(ioe) = h.get_io() {
                return classify(ioe);
            }
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_timeout() {
                return "timeout";
            }
            if h.is_incomplete_message() || h.is_canceled() || h.is_closed() {
                fallback = fallback.or(Some("closed"));
            }
        }
        cur = e.source();
    }
    fallback.unwrap_or("protocol")
}

/// Plain TCP or TLS, so one code path drives both.
enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Per host, for h2: the request target (its authority becomes `:authority`).
struct HostReq {
    uri: Uri,
}

/// One request number handed to a slot.
#[derive(Clone, Copy)]
struct Ticket {
    host: usize,
    /// Open loop: when the pacer released it (its due time, give or take ~1 µs).
    intended: Option<Instant>,
}

/// Shared by every slot of a run.
struct Ctx {
    addr: SocketAddr,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    h2: bool,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
    hosts: Vec<HostReq>,
    /// Open loop: requests released by the pacer thread at their intended times.
    open: Option<async_channel::Receiver<Due>>,
    tickets: Tickets,
    t0: Instant,
    end: Instant,
    timeout: Duration,
    /// HTTP/1.1: the request for each host, encoded once.
    h1_reqs: Vec<Vec<u8>>,
    /// HEAD responses have no body whatever their headers say.
    is_head: bool,
    insecure: bool,
    /// `--new-conn` HTTP/1.1 with every request shorter than one TCP segment.
    one_segment: bool,
    /// `--via`, and whether requests go to the proxy in absolute form (no tunnel).
    via: Option<npt_proxy::Via>,
    absolute_form: bool,
    /// The URL's host and port (what a tunnel is opened to).
    target_host: String,
    target_port: u16,
    /// Requests running now, for what the end of the run cuts off.
    inflight: crate::inflight::InFlight,
}

impl Ctx {
    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.t0).as_nanos() as u64
    }

    /// The next request for this slot; in open loop, waits until the pacer releases it.
    /// `None`: the schedule is over.
    async fn ticket(&self) -> Option<Ticket> {
        match &self.open {
            None => {
                let k = self.tickets.take();
                (Instant::now() < self.end).then_some(Ticket {
                    host: host_for(k, self.hosts.len()),
                    intended: None,
                })
            }
            Some(rx) => {
                let d = rx.recv().await.ok()?;
                Some(Ticket {
                    host: host_for(d.k, self.hosts.len()),
                    intended: Some(d.intended),
                })
            }
        }
    }

    /// The h2 request head for `host` (the body, if any, follows as one DATA frame).
    fn build_h2(&self, host: usize) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.hosts[host].uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// One request on an h2 connection: `(status, head time, body bytes)`.
    async fn h2_request(&self, tx: &mut H2Tx, host: usize) -> Result<(u16, Instant, u64), Failure> {
        let eos = self.body.is_empty();
        let (resp, mut send) = tx
            .send_request(self.build_h2(host), eos)
            .map_err(|e| Failure::from_err(&e))?;
        if !eos {
            send.send_data(self.body.clone(), true)
                .map_err(|e| Failure::from_err(&e))?;
        }
        let resp = resp.await.map_err(|e| Failure::from_err(&e))?;
        let head = Instant::now();
        let status = resp.status().as_u16();
        let mut body = resp.into_body();
        let mut n = 0u64;
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| Failure::from_err(&e))?;
            n += chunk.len() as u64;
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        Ok((status, head, n))
    }

    /// h2: one request within the timeout kept by the stream's watchdog.
    async fn h2_exchange(
        &self,
        tx: &mut H2Tx,
        host: usize,
        sent: Instant,
        wd: &mut Watchdog,
    ) -> Result<(u16, Instant, u64), Failure> {
        wd.guard(sent + self.timeout, self.h2_request(tx, host))
            .await
            .unwrap_or_else(|| {
                Err(Failure(
                    "timeout",
                    format!("no complete response within {:?}", self.timeout),
                ))
            })
    }

    /// TCP connect and, for https, the TLS handshake (checking ALPN for h2), within the
    /// request timeout.
    async fn connect(&self) -> Result<(Io, ConnEvent), Failure> {
        match tokio::time::timeout(self.timeout, self.connect_untimed()).await {
            Ok(r) => r,
            Err(_) => Err(Failure(
                "timeout",
                format!("connect/TLS handshake not done within {:?}", self.timeout),
            )),
        }
    }

    /// [`Ctx::connect`] without its own timer: the caller bounds it.
    async fn connect_untimed(&self) -> Result<(Io, ConnEvent), Failure> {
        let t = Instant::now();
        let (tcp, proxy_ns) = match &self.via {
            Some(via) if !self.absolute_form => {
                let tunnel =
                    npt_proxy::connect_async::tcp_connect(via, &self.target_host, self.target_port);
                match tunnel.await {
                    Ok((s, p)) => (s, Some(p.auth_ns + p.reply_ns)),
                    Err(e) => return Err(Failure(e.kind(), format!("via {via}: {e}"))),
                }
            }
            _ => match TcpStream::connect(self.addr).await {
                Err(e) => {
                    let f = Failure::from_err(&e);
                    let kind = if f.0 == "protocol" { "connect" } else { f.0 };
                    return Err(Failure(kind, format!("connect: {}", f.1)));
                }
                Ok(s) => (s, None),
            },
        };
        let connect_ns = t.elapsed().as_nanos() as u64;
        let Some((connector, name)) = &self.tls else {
            // A one-segment request on a fresh connection is one write that Nagle cannot
            // delay; skip the syscall. Keep-alive connections (a small write may still be
            // unacknowledged), h2 and bigger requests need TCP_NODELAY.
            if !self.one_segment {
                let _ = tcp.set_nodelay(true);
            }
            return Ok((
                Io::Plain(tcp),
                ConnEvent {
                    connect_ns,
                    tls_ns: None,
                    proxy_ns,
                },
            ));
        };
        // TLS: the Finished message and the request are separate writes.
        let _ = tcp.set_nodelay(true);
        let t = Instant::now();
        let tls = match connector.connect(name.clone(), tcp).await {
            Err(e) => {
                let f = Failure::from_err(&e);
                let kind = if matches!(f.0, "reset" | "refused") {
                    f.0
                } else {
                    "tls"
                };
                let hint = if f.1.contains("certificate") && !self.insecure {
                    " (--insecure accepts self-signed certificates)"
                } else {
                    ""
                };
                return Err(Failure(kind, format!("TLS handshake: {}{hint}", f.1)));
            }
            Ok(s) => s,
        };
        let tls_ns = t.elapsed().as_nanos() as u64;
        if self.h2 && tls.get_ref().1.alpn_protocol() != Some(crate::tls::ALPN_H2) {
            return Err(Failure(
                "protocol",
                "server did not negotiate h2 by ALPN".into(),
            ));
        }
        Ok((
            Io::Tls(Box::new(tls)),
            ConnEvent {
                connect_ns,
                tls_ns: Some(tls_ns),
                proxy_ns,
            },
        ))
    }

    fn push(
        &self,
        shard: &Shard,
        tk: Ticket,
        sent: Instant,
        result: Result<(u16, Instant, u64), Failure>,
    ) {
        let done = Instant::now();
        // Body bytes count for completed exchanges only: a failed one may not have sent any.
        let (outcome, head_ns, bytes_in, bytes_out) = match result {
            Ok((status, head, n)) => (
                Outcome::Response(status),
                self.ns(head),
                n,
                self.body.len() as u64,
            ),
            Err(Failure(kind, msg)) => (Outcome::Error(kind, msg.into()), 0, 0, 0),
        };
        shard.push(Record::Request(Event {
            host: tk.host as u16,
            outcome,
            intended_ns: tk.intended.map(|t| self.ns(t)),
            sent_ns: self.ns(sent),
            head_ns,
            done_ns: self.ns(done),
            bytes_out,
            bytes_in,
        }));
    }

    /// HTTP/1.1: one request on `conn`, within the request timeout kept by the slot's
    /// watchdog; also returns whether the connection can carry another request.
    async fn h1_exchange(
        &self,
        conn: &mut h1::Conn<Io>,
        host: usize,
        sent: Instant,
        wd: &mut Watchdog,
    ) -> (Result<(u16, Instant, u64), Failure>, bool) {
        let work = async {
            let r = conn
                .request(&self.h1_reqs[host], self.is_head)
                .await
                .map_err(|e| Failure(e.kind(), e.to_string()))?;
            Ok((r.status, r.head, r.body, r.keep_alive))
        };
        match wd.guard(sent + self.timeout, work).await {
            Some(Ok((status, head, body, keep))) => (Ok((status, head, body)), keep),
            Some(Err(f)) => (Err(f), false),
            None => (
                Err(Failure(
                    "timeout",
                    format!("no complete response within {:?}", self.timeout),
                )),
                false,
            ),
        }
    }

    /// One request on a connection of its own (`--new-conn`, cold start): connect, TLS,
    /// request, close — all within one request timeout kept by `wd`. Returns the status, head
    /// time and body bytes. `buf` is the HTTP/1.1 read buffer, handed from connection to
    /// connection.
    async fn fresh_request(
        &self,
        host: usize,
        shard: Option<&Shard>,
        buf: &mut Vec<u8>,
        wd: &mut Watchdog,
    ) -> Result<(u16, Instant, u64), Failure> {
        let sent = Instant::now();
        let work = async {
            let (io, ce) = self.connect_untimed().await?;
            if let Some(s) = shard {
                s.push(Record::Conn(ce));
            }
            if self.h2 {
                let (mut tx, conn) = h2_handshake(io).await?;
                let r = async {
                    std::future::poll_fn(|cx| tx.poll_ready(cx))
                        .await
                        .map_err(|e| Failure::from_err(&e))?;
                    self.h2_request(&mut tx, host).await
                }
                .await;
                conn.abort();
                r
            } else {
                let mut conn = h1::Conn::with_buffer(io, std::mem::take(buf));
                let r = conn
                    .request(&self.h1_reqs[host], self.is_head)
                    .await
                    .map(|r| (r.status, r.head, r.body))
                    .map_err(|e| Failure(e.kind(), e.to_string()));
                *buf = conn.into_buffer();
                r
            }
        };
        wd.guard(sent + self.timeout, work)
            .await
            .unwrap_or_else(|| {
                Err(Failure(
                    "timeout",
                    format!("no complete response within {:?}", self.timeout),
                ))
            })
    }
}

/// `--new-conn`: every request on its own connection.
async fn new_conn_slot(ctx: Arc<Ctx>, shard: Arc<Shard>) {
    let mut buf = Vec::new();
    let mut wd = Watchdog::new(ctx.timeout);
    while let Some(tk) = ctx.ticket().await {
        let sent = Instant::now();
        let _in_flight = ctx.inflight.enter(ctx.ns(sent));
        let r = ctx
            .fresh_request(tk.host, Some(&shard), &mut buf, &mut wd)
            .await;
        ctx.push(&shard, tk, sent, r);
    }
}

/// Connects a slot. A failed connection costs the request that would have used it (counted
/// as that request's error), then the slot backs off and tries again; `None` once no request
/// is due any more.
async fn connect_slot(ctx: &Ctx, shard: &Shard) -> Option<Io> {
    loop {
        match ctx.connect().await {
            Ok((io, ce)) => {
                shard.push(Record::Conn(ce));
                return Some(io);
            }
            Err(f) => {
                let tk = ctx.ticket().await?;
                ctx.push(shard, tk, Instant::now(), Err(f));
                tokio::time::sleep(RECONNECT_BACKOFF).await;
            }
        }
    }
}

/// HTTP/1.1 keep-alive: one connection, one request at a time, reconnecting when it breaks.
async fn h1_slot(ctx: Arc<Ctx>, shard: Arc<Shard>) {
    let mut wd = Watchdog::new(ctx.timeout);
    loop {
        let Some(io) = connect_slot(&ctx, &shard).await else {
            return;
        };
        let mut conn = h1::Conn::new(io);
        loop {
            let Some(tk) = ctx.ticket().await else { return };
            let sent = Instant::now();
            let in_flight = ctx.inflight.enter(ctx.ns(sent));
            let (r, keep_alive) = ctx.h1_exchange(&mut conn, tk.host, sent, &mut wd).await;
            drop(in_flight);
            let failed = r.is_err();
            ctx.push(&shard, tk, sent, r);
            if failed || !keep_alive {
                break; // reconnect
            }
        }
    }
}

/// HTTP/2: one connection carrying `streams` concurrent request loops.
async fn h2_slot(ctx: Arc<Ctx>, shard: Arc<Shard>, streams: u32) {
    loop {
        let Some(io) = connect_slot(&ctx, &shard).await else {
            return;
        };
        let (tx, conn) = match h2_handshake(io).await {
            Ok(x) => x,
            Err(f) => {
                let Some(tk) = ctx.ticket().await else { return };
                ctx.push(&shard, tk, Instant::now(), Err(f));
                tokio::time::sleep(RECONNECT_BACKOFF).await;
                continue;
            }
        };
        let mut set = JoinSet::new();
        for _ in 0..streams {
            let (ctx, shard, mut tx) = (ctx.clone(), shard.clone(), tx.clone());
            set.spawn(async move {
                let mut wd = Watchdog::new(ctx.timeout);
                loop {
                    // Err: the connection is gone; the slot reconnects.
                    if std::future::poll_fn(|cx| tx.poll_ready(cx)).await.is_err() {
                        return false;
                    }
                    let Some(tk) = ctx.ticket().await else {
                        return true;
                    };
                    let sent = Instant::now();
                    let in_flight = ctx.inflight.enter(ctx.ns(sent));
                    let r = ctx.h2_exchange(&mut tx, tk.host, sent, &mut wd).await;
                    drop(in_flight);
                    ctx.push(&shard, tk, sent, r);
                }
            });
        }
        drop(tx);
        let mut done = false;
        while let Some(r) = set.join_next().await {
            done |= r.unwrap_or(false);
        }
        conn.abort();
        if done {
            return;
        }
    }
}

type H2Tx = h2::client::SendRequest<Bytes>;

/// h2 handshake (prior knowledge, or after ALPN `h2`); the connection runs as its own task.
async fn h2_handshake(io: Io) -> Result<(H2Tx, tokio::task::JoinHandle<()>), Failure> {
    let (tx, conn) = h2::client::Builder::new()
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 24)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| Failure::from_err(&e))?;
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok((tx, task))
}

fn build_ctx(
    cfg: &Config,
    addr: SocketAddr,
    t0: Instant,
    open: Option<async_channel::Receiver<Due>>,
) -> Result<Ctx, Error> {
    let tls = if cfg.target.https {
        let connector = TlsConnector::from(crate::tls::client_config(cfg.insecure, cfg.http2)?);
        let name = ServerName::try_from(cfg.target.host.clone())
            .map_err(|e| Error::Url(cfg.target.url.clone(), format!("TLS server name: {e}")))?;
        Some((connector, name))
    } else {
        None
    };
    let scheme = if cfg.target.https { "https" } else { "http" };
    let mut hosts = Vec::new();
    for h in cfg.host_names() {
        let uri: Uri = if cfg.http2 {
            format!("{scheme}://{h}{}", cfg.target.path_and_query)
                .parse()
                .map_err(|e| Error::Config(format!("--host {h:?}: {e}")))?
        } else {
            cfg.target
                .path_and_query
                .parse()
                .map_err(|e| Error::Url(cfg.target.url.clone(), format!("{e}")))?
        };
        HeaderValue::from_str(&h)
            .map_err(|_| Error::Config(format!("--host {h:?} is not a valid header value")))?;
        hosts.push(HostReq { uri });
    }
    let mut headers = HeaderMap::new();
    for (k, v) in &cfg.headers {
        headers.append(k.clone(), v.clone());
    }
    let raw_headers: Vec<(String, Vec<u8>)> = cfg
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.as_bytes().to_vec()))
        .collect();
    // Through an HTTP proxy without a tunnel, the request line names the whole URL.
    let absolute_form = matches!(&cfg.via, Some(v) if v.kind == npt_proxy::ViaKind::Http)
        && !cfg.target.https
        && !cfg.http2;
    let request_target = if absolute_form {
        format!(
            "http://{}{}",
            cfg.target.authority, cfg.target.path_and_query
        )
    } else {
        cfg.target.path_and_query.clone()
    };
    let h1_reqs: Vec<Vec<u8>> = cfg
        .host_names()
        .iter()
        .map(|h| {
            h1::encode_request(
                cfg.method.as_str(),
                &request_target,
                h,
                &raw_headers,
                &cfg.body,
                cfg.new_conn,
            )
        })
        .collect();
    let one_segment = cfg.new_conn && !cfg.http2 && h1_reqs.iter().all(|r| r.len() <= 1200);
    Ok(Ctx {
        addr,
        tls,
        h2: cfg.http2,
        method: cfg.method.clone(),
        headers,
        body: cfg.body.clone(),
        hosts,
        open,
        tickets: Tickets::new(),
        t0,
        end: t0 + cfg.duration,
        timeout: cfg.timeout,
        h1_reqs,
        is_head: cfg.method == Method::HEAD,
        insecure: cfg.insecure,
        one_segment,
        via: cfg.via.clone(),
        absolute_form,
        target_host: cfg.target.host.clone(),
        target_port: cfg.target.port,
        inflight: Default::default(),
    })
}

/// A slot's request timeout without a timer per request: one `Sleep` per slot, re-armed only
/// when it fires (at most once per timeout period) — inserting and removing a timer-wheel
/// entry for every request was a visible share of the client's CPU at 50k requests/s.
struct Watchdog {
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Watchdog {
    fn new(timeout: Duration) -> Watchdog {
        Watchdog {
            sleep: Box::pin(tokio::time::sleep(timeout)),
        }
    }

    /// Runs `work` until it completes (`Some`) or `deadline` passes (`None`).
    async fn guard<F: Future>(&mut self, deadline: Instant, work: F) -> Option<F::Output> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                r = &mut work => return Some(r),
                _ = self.sleep.as_mut() => {
                    // Armed for an earlier request's deadline, or this one's.
                    if Instant::now() >= deadline {
                        return None;
                    }
                    self.sleep.as_mut().reset(deadline.into());
                }
            }
        }
    }
}

/// `n` threads, each running a single-threaded tokio runtime until [`Workers::stop`].
struct Workers {
    handles: Vec<tokio::runtime::Handle>,
    stops: Vec<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    fn start(n: usize) -> Result<Workers, Error> {
        let mut w = Workers {
            handles: Vec::new(),
            stops: Vec::new(),
            threads: Vec::new(),
        };
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::Io("starting a worker runtime".into(), e))?;
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            w.handles.push(rt.handle().clone());
            w.stops.push(tx);
            let t = std::thread::Builder::new()
                .name(format!("npt-http-{i}"))
                .spawn(move || {
                    let _ = rt.block_on(rx);
                    // Dropping `rt` here cancels its tasks on their own thread.
                })
                .map_err(|e| Error::Io("spawning a worker thread".into(), e))?;
            w.threads.push(t);
        }
        Ok(w)
    }

    fn handle(&self, i: usize) -> &tokio::runtime::Handle {
        &self.handles[i % self.handles.len()]
    }

    fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        for s in self.stops.drain(..) {
            let _ = s.send(());
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// Resolves the URL's host. With several addresses (`localhost` → `::1` and `127.0.0.1`) the
/// first that accepts a TCP connection within 1 s wins, as a browser's fallback would find it;
/// when none does (a cold start has not begun yet) the first address is used.
pub fn resolve(t: &Target) -> Result<SocketAddr, Error> {
    let addrs: Vec<SocketAddr> = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| Error::Io(format!("resolving {}", t.host), e))?
        .collect();
    let first = *addrs
        .first()
        .ok_or_else(|| Error::Url(t.url.clone(), "host has no address".into()))?;
    if addrs.len() == 1 {
        return Ok(first);
    }
    Ok(addrs
        .iter()
        .copied()
        .find(|a| std::net::TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
        .unwrap_or(first))
}

/// Polls with fresh connections until the first 2xx, as seed 003's cold start.
async fn cold_start(
    ctx: &Ctx,
    cs: &ColdStartConfig,
    group: &mut ProcessGroup,
    spawned: Instant,
    stop: &AtomicBool,
) -> Result<ColdStart, Error> {
    let deadline = spawned + cs.ready_timeout;
    let mut attempts = 0u64;
    let mut last = String::from("no attempt yet");
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::ColdStart(
                "interrupted before the first answer".into(),
            ));
        }
        if Instant::now() >= deadline {
            return Err(Error::ColdStart(format!(
                "no 2xx answer within --ready-timeout {:?} after {attempts} attempts (last: {last})",
                cs.ready_timeout
            )));
        }
        attempts += 1;
        let sent = Instant::now();
        let r = tokio::time::timeout_at(
            deadline.into(),
            ctx.fresh_request(
                0,
                None,
                &mut Vec::new(),
                &mut Watchdog::new(cs.ready_timeout),
            ),
        )
        .await;
        let done = Instant::now();
        match r {
            Ok(Ok((status, _, _))) if (200..300).contains(&status) => {
                return Ok(ColdStart {
                    command: cs.command.clone(),
                    ready_ms: (done - spawned).as_secs_f64() * 1e3,
                    first_request_ms: (done - sent).as_secs_f64() * 1e3,
                    attempts,
                    first_status: status,
                });
            }
            Ok(Ok((status, _, _))) => last = format!("status {status}"),
            Ok(Err(Failure(kind, msg))) => last = format!("{kind}: {msg}"),
            Err(_) => last = "timeout".into(),
        }
        if let Some(exit) = group.exited() {
            return Err(Error::ColdStart(format!(
                "{exit} before answering (last: {last})"
            )));
        }
        tokio::time::sleep(RECONNECT_BACKOFF).await;
    }
}

/// Runs a benchmark to the end of `cfg.duration` or until `stop` is set, and returns the
/// result body. Blocks the calling thread, which collects and prints progress.
pub fn run(cfg: &Config, stop: Arc<AtomicBool>) -> Result<RunResult, Error> {
    run_with_progress(cfg, stop, |p, elapsed| {
        if cfg.progress {
            eprint!("\r{}", p.line(elapsed));
        }
    })
}

/// [`run`], handing the progress of each closed second to `progress` (a live view) instead
/// of printing it.
pub fn run_with_progress(
    cfg: &Config,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(&crate::collect::Progress, Duration),
) -> Result<RunResult, Error> {
    cfg.validate()?;
    // Cold start polls from this thread; the load runs on `threads` single-threaded runtimes
    // (one event loop per core, as wrk does: no work-stealing traffic between cores).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Io("starting the runtime".into(), e))?;
    // Through a proxy, connections go to the proxy (a tunnel, or absolute-form requests).
    let addr = match &cfg.via {
        None => resolve(&cfg.target)?,
        Some(via) => {
            let proxy = Target::parse(&format!("http://{}/", via.authority()))?;
            resolve(&proxy)?
        }
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = choose_threads(cfg.threads, cpus, is_local(addr), cfg.new_conn);
    let workers = Workers::start(threads.threads)?;

    // Cold start: the command runs until this function returns, however it returns.
    let mut group = None;
    let mut cold = None;
    if let Some(cs) = &cfg.cold_start {
        let spawned = Instant::now();
        let g = group.insert(ProcessGroup::spawn(&cs.command)?);
        let ctx = build_ctx(cfg, addr, spawned, None)?;
        cold = Some(rt.block_on(cold_start(&ctx, cs, g, spawned, &stop))?);
    }

    let cpu0 = npt_report::cpu_seconds();
    let started = SystemTime::now();
    let t0 = Instant::now();
    // Open loop: the pacer releases request k at t0 + k/rate; at most one request per slot
    // waits in the channel, so a stalled server makes the pacer (and the sends) fall behind
    // instead of piling up an unbounded queue.
    let slots = (cfg.connections as usize).saturating_mul(cfg.streams as usize);
    let pacer = match cfg.rate {
        Some(r) => Some(
            Pacer::start(
                OpenLoop::new(r, Some(cfg.duration.as_nanos() as u64)),
                t0,
                slots,
            )
            .map_err(|e| Error::Io("starting the pacer thread".into(), e))?,
        ),
        None => None,
    };
    let ctx = Arc::new(build_ctx(
        cfg,
        addr,
        t0,
        pacer.as_ref().map(|p| p.rx.clone()),
    )?);
    let hosts = cfg.host_names();
    let mut collector = Collector::new(&hosts, cfg.rate.is_some(), INTERVAL_NS);
    let shards: Vec<Arc<Shard>> = (0..cfg.connections)
        .map(|_| Arc::new(Shard::default()))
        .collect();
    let mut tasks = Vec::with_capacity(shards.len());
    for (i, shard) in shards.iter().enumerate() {
        let (ctx, shard) = (ctx.clone(), shard.clone());
        let rt = workers.handle(i);
        let task = if cfg.new_conn {
            rt.spawn(new_conn_slot(ctx, shard))
        } else if cfg.http2 {
            rt.spawn(h2_slot(ctx, shard, cfg.streams))
        } else {
            rt.spawn(h1_slot(ctx, shard))
        };
        tasks.push(task);
    }

    let end = t0 + cfg.duration;
    let mut buf = Vec::new();
    // Each progress line shows the interval that just closed (closing lags by one tick).
    let mut next_progress = t0 + Duration::from_secs(1) + TICK;
    let drain = |collector: &mut Collector, buf: &mut Vec<Record>, cutoff: u64| {
        for s in &shards {
            s.drain_into(buf);
            for r in buf.iter() {
                match r {
                    Record::Request(e) if e.done_ns > cutoff => {}
                    r => collector.add(r),
                }
            }
        }
    };
    let publish = |collector: &Collector| {
        if let Some((published, labels)) = &cfg.metrics {
            let l: Vec<(&str, &str)> = labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let mut s = npt_metrics::Snapshot::new();
            collector.export(&mut s, &l);
            published.publish(s);
        }
    };
    let stopped_by = loop {
        let now = Instant::now();
        if now >= end {
            break "duration";
        }
        if stop.load(Ordering::Relaxed) {
            break "signal";
        }
        if tasks.iter().all(|t| t.is_finished()) {
            break "duration";
        }
        std::thread::sleep(TICK.min(end - now));
        drain(&mut collector, &mut buf, ctx.ns(end));
        publish(&collector);
        let now = Instant::now();
        collector.close_until(ctx.ns(now).saturating_sub(TICK.as_nanos() as u64));
        if now >= next_progress {
            next_progress += Duration::from_secs(1);
            progress(&collector.progress(), now - t0);
        }
    };
    let stop_at = Instant::now().min(end);
    let ended = SystemTime::now();
    // What the end cuts off, read before the tasks (and their guards) are dropped.
    let (in_flight, oldest_ns) = ctx.inflight.cut(ctx.ns(Instant::now()));
    for t in &tasks {
        t.abort();
    }
    let timer_lateness = pacer.map(Pacer::finish);
    // Dropping the runtimes cancels every request still in flight and closes its socket.
    workers.stop();
    let cutoff = ctx.ns(stop_at);
    drain(&mut collector, &mut buf, cutoff);
    publish(&collector);
    if cfg.progress {
        eprint!("\r{:70}\r", "");
    }
    let (u1, s1) = npt_report::cpu_seconds();
    let wall = stop_at.duration_since(t0).as_secs_f64().max(1e-9);
    let health = Health {
        cpu_user_s: u1 - cpu0.0,
        cpu_sys_s: s1 - cpu0.1,
        cpu_pct: (u1 - cpu0.0 + s1 - cpu0.1) / wall * 100.0,
        max_rss_bytes: npt_report::max_rss_bytes(),
        timer_lateness_ms: timer_lateness.map(|h| h.summary()),
        ..Health::default()
    };
    let summary = HttpSummary {
        url: cfg.target.url.clone(),
        target: addr.to_string(),
        method: cfg.method.to_string(),
        protocol: if cfg.http2 { "h2" } else { "http/1.1" }.to_string(),
        tls: cfg.target.https,
        mode: if cfg.rate.is_some() { "open" } else { "closed" }.to_string(),
        rate: cfg.rate,
        connections: cfg.connections,
        streams: cfg.streams,
        new_conn: cfg.new_conn,
        in_flight_at_end: in_flight,
        oldest_in_flight_ms: oldest_ns as f64 / 1e6,
        ..HttpSummary::default()
    };
    let mut body = collector.finish(summary, cutoff, health);
    body.cold_start = cold;
    drop(rt);
    if let Some(mut g) = group {
        g.kill(Duration::from_millis(500));
    }
    Ok(RunResult {
        started,
        ended,
        stopped_by,
        body,
        threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = Target::parse("http://127.0.0.1:8080/x?y=1").unwrap();
        assert_eq!(
            (t.https, t.port, t.host.as_str()),
            (false, 8080, "127.0.0.1")
        );
        assert_eq!(t.path_and_query, "/x?y=1");
        let t = Target::parse("https://[::1]").unwrap();
        assert_eq!((t.https, t.port, t.host.as_str()), (true, 443, "::1"));
        assert_eq!(t.path_and_query, "/");
        assert!(Target::parse("ftp://x/")
            .unwrap_err()
            .to_string()
            .contains("scheme"));
        assert!(Target::parse("localhost:80").is_err());
        assert!(Target::parse("http://").is_err());
        assert!(Target::parse("not a url").is_err());
    }

    #[test]
    fn conflicting_flags_are_named() {
        let base = Config::new(Target::parse("http://127.0.0.1:1/").unwrap());
        let mut c = base.clone();
        c.streams = 4;
        assert!(c.validate().unwrap_err().to_string().contains("--http2"));
        c.http2 = true;
        c.new_conn = true;
        assert!(c.validate().unwrap_err().to_string().contains("--new-conn"));
        let mut c = base.clone();
        c.rate = Some(0.0);
        assert!(c.validate().unwrap_err().to_string().contains("--rate"));
        let mut c = base.clone();
        c.hosts = vec!["bad\nhost".into()];
        assert!(c.validate().unwrap_err().to_string().contains("--host"));
        assert!(base.validate().is_ok());
    }

    #[test]
    fn errors_are_classified() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(classify(&refused), "refused");
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(classify(&reset), "reset");
        let tls = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert_eq!(classify(&tls), "tls");
        let other = io::Error::other("weird");
        assert_eq!(classify(&other), "protocol");
    }
}
