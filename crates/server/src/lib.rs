//! `npt serve`: the responders every npt test talks to.
//!
//! Each listen address gets TCP and UDP on the **same port number** (forwarders often map one
//! port for both). UDP runs on its own thread ([`udp`]); TCP connections are tokio tasks over
//! the stream responder ([`stream`]), which later transports (QUIC streams) reuse.

pub mod limiter;
pub mod loopguard;
pub mod quic;
pub mod stream;
mod udp;

use std::io;
use std::net::{SocketAddr, TcpListener as StdTcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use socket2::{Domain, Protocol, Socket, Type};

pub use limiter::Limits;

#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Addresses to serve TCP and UDP on (port 0: one free port, the same for both).
    pub listen: Vec<SocketAddr>,
    /// Required access token (see `npt_wire::frame::token_from_secret`); None = open.
    pub token: Option<u64>,
    pub limits: Limits,
    /// TCP connections served at once; further ones are accepted and closed at once.
    pub max_tcp_conns: usize,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: vec![SocketAddr::from(([0, 0, 0, 0], 7777))],
            token: None,
            limits: Limits::default(),
            max_tcp_conns: 65_536,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("cannot start the runtime: {0}")]
    Runtime(io::Error),
}

/// What the server has done, for its log and for tests.
#[derive(Debug, Default)]
pub struct Counters {
    pub udp_rx: AtomicU64,
    pub udp_rx_bytes: AtomicU64,
    pub udp_tx: AtomicU64,
    pub udp_tx_bytes: AtomicU64,
    pub udp_errors: AtomicU64,
    pub refused_token: AtomicU64,
    pub refused_rate: AtomicU64,
    /// Raw UDP datagrams not echoed because they could start or feed an echo loop
    /// (see [`loopguard`]).
    pub refused_loop: AtomicU64,
    pub refused_conns: AtomicU64,
    pub malformed: AtomicU64,
    pub clamped: AtomicU64,
    pub tcp_accepted: AtomicU64,
    pub tcp_rx_bytes: AtomicU64,
    pub tcp_tx_bytes: AtomicU64,
}

impl Counters {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// One line for the log.
    pub fn line(&self) -> String {
        let g = Counters::get;
        format!(
            "udp rx {} tx {} pkts; tcp conns {} rx {} tx {} bytes; refused: token {} rate {} loop {} conns {}; malformed {}; clamped {}",
            g(&self.udp_rx),
            g(&self.udp_tx),
            g(&self.tcp_accepted),
            g(&self.tcp_rx_bytes),
            g(&self.tcp_tx_bytes),
            g(&self.refused_token),
            g(&self.refused_rate),
            g(&self.refused_loop),
            g(&self.refused_conns),
            g(&self.malformed),
            g(&self.clamped)
        )
    }
}

pub(crate) struct Shared {
    pub cfg: ServeConfig,
    pub counters: Arc<Counters>,
    pub stop: AtomicBool,
}

/// A running server. Dropping it stops every responder and joins its threads.
pub struct Server {
    addrs: Vec<SocketAddr>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    rt: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// Binds every address (TCP and UDP on one port number each) and starts serving.
    pub fn start(cfg: ServeConfig) -> Result<Server, ServeError> {
        npt_netio::raise_nofile_limit();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("npt-serve")
            .enable_all()
            .build()
            .map_err(ServeError::Runtime)?;
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            counters: Arc::new(Counters::default()),
            stop: AtomicBool::new(false),
        });
        let mut addrs = Vec::new();
        let mut threads = Vec::new();
        for want in &cfg.listen {
            let (tcp, udp) = bind_pair(*want)?;
            let bound = tcp.local_addr().map_err(|e| ServeError::Bind {
                addr: *want,
                source: e,
            })?;
            addrs.push(bound);
            let sh = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("npt-udp-{}", bound.port()))
                    .spawn(move || udp::run(udp, sh))
                    .map_err(ServeError::Runtime)?,
            );
            let sh = shared.clone();
            let _guard = rt.enter();
            let listener =
                tokio::net::TcpListener::from_std(tcp).map_err(|e| ServeError::Bind {
                    addr: bound,
                    source: e,
                })?;
            rt.spawn(accept_loop(listener, sh));
        }
        Ok(Server {
            addrs,
            shared,
            threads,
            rt: Some(rt),
        })
    }

    /// The bound addresses, in the order given (each serves TCP and UDP).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    pub fn counters(&self) -> Arc<Counters> {
        self.shared.counters.clone()
    }

    /// A handle to the runtime, for responders added by other crates (HTTP, QUIC).
    pub fn runtime(&self) -> tokio::runtime::Handle {
        self.rt
            .as_ref()
            .expect("runtime lives until drop")
            .handle()
            .clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let active = Arc::new(AtomicU64::new(0));
    loop {
        let (sock, _peer) = match listener.accept().await {
            Ok(x) => x,
            Err(_) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        if active.load(Ordering::Relaxed) as usize >= shared.cfg.max_tcp_conns {
            shared
                .counters
                .refused_conns
                .fetch_add(1, Ordering::Relaxed);
            drop(sock);
            continue;
        }
        let _ = sock.set_nodelay(true);
        shared.counters.tcp_accepted.fetch_add(1, Ordering::Relaxed);
        active.fetch_add(1, Ordering::Relaxed);
        let sh = shared.clone();
        let act = active.clone();
        tokio::spawn(async move {
            let _ = stream::serve_stream(sock, sh.cfg.token, &sh.counters).await;
            act.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Binds TCP and UDP on the same port; with port 0, finds a port free for both.
fn bind_pair(addr: SocketAddr) -> Result<(StdTcpListener, UdpSocket), ServeError> {
    let err = |source| ServeError::Bind { addr, source };
    let tries = if addr.port() == 0 { 32 } else { 1 };
    let mut last = None;
    for _ in 0..tries {
        let tcp = tcp_listener(addr).map_err(err)?;
        let port = tcp.local_addr().map_err(err)?.port();
        let mut uaddr = addr;
        uaddr.set_port(port);
        match udp_socket(uaddr) {
            Ok(u) => return Ok((tcp, u)),
            Err(e) => last = Some(e),
        }
    }
    Err(err(last.unwrap_or_else(|| {
        io::Error::other("no port free for TCP and UDP")
    })))
}

fn tcp_listener(addr: SocketAddr) -> io::Result<StdTcpListener> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&addr.into())?;
    s.listen(4096)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

fn udp_socket(addr: SocketAddr) -> io::Result<UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    npt_netio::set_buffers(&s, 4 << 20);
    s.bind(&addr.into())?;
    Ok(s.into())
}
