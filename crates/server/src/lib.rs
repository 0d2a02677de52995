//! `npt serve`: the responders every npt test talks to.
//!
//! Each listen address gets TCP and UDP on the **same port number** (forwarders often map one
//! port for both). UDP runs on its own thread ([`udp`]); TCP connections are tokio tasks over
//! the stream responder ([`stream`]), which later transports (QUIC streams) reuse.
//!
//! Nothing a peer does holds resources for free: every stream state has a deadline
//! ([`Timeouts`]), TCP connections are capped (`max_tcp_conns`; `npt serve` derives it from the
//! open-file limit, [`fdlimit`]) and failed accepts are counted and backed off, asked-for reply
//! bytes are charged to the source address ([`budget`]), and each transport counts its own
//! refusals and closes ([`Counters`]), summarized on stderr while they happen.
//!
//! With `--hop-agent` (and `--token`) the server also measures RTTs on request for clients that
//! passed the handshake, to targets within its allow-list ([`hop_agent`]).
#![deny(clippy::indexing_slicing)] // parses peer requests: see `[workspace.lints]`

pub mod budget;
pub mod bulk;
pub mod bulk_udp;
mod counters;
pub mod fdlimit;
pub mod hop_agent;
pub mod http_server;
pub mod idle;
pub mod idle_stream;
pub mod limiter;
pub mod loopguard;
pub mod marking;
pub mod quic;
pub mod reflect;
pub mod stamp;
pub mod stream;
mod udp;

use std::io;
use std::net::{SocketAddr, TcpListener as StdTcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use npt_wire::auth::ServerAuth;
use socket2::{Domain, Protocol, Socket, Type};

pub use budget::{BudgetLimits, ReplyBudget};
pub use counters::{Counters, StreamCounters};
pub use limiter::Limits;
pub use stream::Timeouts;
pub use udp::{MAX_SESSIONS, SESSION_IDLE_NS};

/// How often refusals are summarized on stderr (only when something changed).
pub const LOG_EVERY: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Addresses to serve TCP and UDP on (port 0: one free port, the same for both).
    pub listen: Vec<SocketAddr>,
    /// The shared secret of `--token`: TCP connections, UDP clients and QUIC streams must
    /// complete the keyed handshake ([`npt_wire::auth`]). None = open.
    pub token: Option<String>,
    /// UDP limits for sources that proved nothing ([`Limits::safe`] by default).
    pub limits: Limits,
    /// UDP limits for authenticated sessions and exempt sources ([`Limits::open`]).
    pub session_limits: Limits,
    /// Local sources ([`is_local`]: loopback, private, link-local) get `session_limits`, raw
    /// UDP echo and no reply budget: benchmarks and labs run there, and spoofed local sources
    /// do not cross the internet (BCP 38, `rp_filter`).
    pub exempt_local: bool,
    /// Raw UDP echo for every source (else local ones only): it reflects anything.
    pub raw_echo: bool,
    /// TCP connections served at once; further ones are accepted, closed at once and counted.
    /// `npt serve` derives the default from the open-file limit ([`fdlimit`]).
    pub max_tcp_conns: usize,
    /// Deadlines of TCP connections and QUIC streams (`io` also bounds a QUIC handshake).
    pub timeouts: Timeouts,
    /// Per-address budget for asked-for reply bytes (TCP and QUIC `Response`s, bulk bytes of
    /// streams that proved nothing).
    pub budget: BudgetLimits,
    /// Per-address budget for the bulk bytes of streams that completed the `--token`
    /// handshake ([`BudgetLimits::open`]).
    pub open_budget: BudgetLimits,
    /// How often refusals are summarized on stderr.
    pub log_every: Duration,
    /// `--hop-agent`: measure RTTs on request for authenticated clients (needs `token`).
    pub hop: Option<hop_agent::HopAgentConfig>,
    /// `--stamp`: a STAMP Session-Reflector on its own UDP address ([`stamp`]), under the same
    /// limits as the UDP responder.
    pub stamp: Option<stamp::StampConfig>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: vec![SocketAddr::from(([0, 0, 0, 0], 7777))],
            token: None,
            limits: Limits::safe(),
            session_limits: Limits::open(),
            exempt_local: true,
            raw_echo: false,
            max_tcp_conns: fdlimit::MAX_DEFAULT_CONNS,
            timeouts: Timeouts::default(),
            budget: BudgetLimits::default(),
            open_budget: BudgetLimits::open(),
            log_every: LOG_EVERY,
            hop: None,
            stamp: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("cannot start the runtime: {0}")]
    Runtime(io::Error),
    #[error(
        "--hop-agent needs --token: an agent that sends traffic on request answers only clients \
         that prove the secret"
    )]
    HopWithoutToken,
}

pub(crate) struct Shared {
    pub cfg: ServeConfig,
    pub counters: Arc<Counters>,
    pub budget: Arc<ReplyBudget>,
    pub open_budget: Arc<ReplyBudget>,
    pub stop: AtomicBool,
    /// The handshake's server side (with `--token`; TCP, UDP, QUIC), and the clock it reads.
    pub auth: Option<Arc<ServerAuth>>,
    pub epoch: Instant,
    /// The hop agent (refusing every request without `--hop-agent`).
    pub hop: Arc<hop_agent::HopAgent>,
    /// TCP connections held for idle callbacks (`npt lifetime tcp://`).
    pub holds: idle_stream::Holds,
}

/// Addresses that are not on the public internet: loopback, IPv4 private (RFC 1918) and
/// link-local, IPv6 unique-local and link-local, and IPv4-mapped forms of those. A server on a
/// public address treats everyone else as a stranger (the safe limits).
pub fn is_local(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_local(IpAddr::V4(v4));
            }
            let s0 = v6.segments()[0];
            v6.is_loopback() || (s0 & 0xfe00) == 0xfc00 || (s0 & 0xffc0) == 0xfe80
        }
    }
}

/// 32 bytes from the OS RNG (cookie keys: never sent, new every start).
pub(crate) fn random_key() -> [u8; 32] {
    use rand::RngCore;
    let mut k = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut k);
    k
}

/// A running server. Dropping it stops every responder and joins its threads.
pub struct Server {
    addrs: Vec<SocketAddr>,
    stamp_addr: Option<SocketAddr>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    rt: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// Binds every address (TCP and UDP on one port number each) and starts serving.
    pub fn start(cfg: ServeConfig) -> Result<Server, ServeError> {
        if cfg.hop.is_some() && cfg.token.is_none() {
            return Err(ServeError::HopWithoutToken);
        }
        let _ = fdlimit::raise_nofile();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("npt-serve")
            .enable_all()
            .build()
            .map_err(ServeError::Runtime)?;
        let counters = Arc::new(Counters::default());
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            hop: Arc::new(hop_agent::HopAgent::new(cfg.hop.clone(), counters.clone())),
            counters,
            budget: Arc::new(ReplyBudget::new(cfg.budget)),
            open_budget: Arc::new(ReplyBudget::new(cfg.open_budget)),
            stop: AtomicBool::new(false),
            auth: cfg
                .token
                .as_deref()
                .map(|s| Arc::new(ServerAuth::new(s.as_bytes(), random_key()))),
            epoch: Instant::now(),
            holds: idle_stream::Holds::default(),
        });
        let mut addrs = Vec::new();
        let mut threads = Vec::new();
        let active = Arc::new(AtomicUsize::new(0));
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
            rt.spawn(accept_loop(listener, sh, active.clone()));
        }
        let stamp_addr = match &cfg.stamp {
            Some(st) => {
                let sock = stamp::bind(st.addr).map_err(|e| ServeError::Bind {
                    addr: st.addr,
                    source: e,
                })?;
                let bound = sock.local_addr().map_err(|e| ServeError::Bind {
                    addr: st.addr,
                    source: e,
                })?;
                let (sh, reflector) = (shared.clone(), st.reflector.clone());
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("npt-stamp-{}", bound.port()))
                        .spawn(move || stamp::run(sock, reflector, sh))
                        .map_err(ServeError::Runtime)?,
                );
                Some(bound)
            }
            None => None,
        };
        rt.spawn(log_refusals(shared.clone()));
        Ok(Server {
            addrs,
            stamp_addr,
            shared,
            threads,
            rt: Some(rt),
        })
    }

    /// The bound addresses, in the order given (each serves TCP and UDP).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The STAMP reflector's bound address (`--stamp`).
    pub fn stamp_addr(&self) -> Option<SocketAddr> {
        self.stamp_addr
    }

    pub fn counters(&self) -> Arc<Counters> {
        self.shared.counters.clone()
    }

    /// The per-address reply budget, shared with responders added by other crates (HTTP).
    pub fn reply_budget(&self) -> Arc<ReplyBudget> {
        self.shared.budget.clone()
    }

    /// A handle to the runtime, for responders added by other crates (HTTP, QUIC).
    // NO-PANIC: `rt` is `Some` from `start` until `drop` takes it; no input reaches this.
    #[allow(clippy::expect_used)]
    pub fn runtime(&self) -> tokio::runtime::Handle {
        self.rt
            .as_ref()
            .expect("runtime lives until drop")
            .handle()
            .clone()
    }

    /// Starts the QUIC responder on this server's runtime with its token, deadlines, reply
    /// budget and counters.
    pub fn start_quic(
        &self,
        addr: SocketAddr,
        tls: quic::QuicTls,
    ) -> Result<quic::QuicServer, quic::QuicError> {
        self.start_quic_0rtt(addr, tls, quic::ZeroRtt::Off)
    }

    /// [`Server::start_quic`] with what it does with 0-RTT (`--quic-0rtt`).
    pub fn start_quic_0rtt(
        &self,
        addr: SocketAddr,
        tls: quic::QuicTls,
        zero_rtt: quic::ZeroRtt,
    ) -> Result<quic::QuicServer, quic::QuicError> {
        let cfg = &self.shared.cfg;
        quic::start_quic_with(
            &self.runtime(),
            addr,
            tls,
            quic::StreamOptions {
                auth: self.shared.auth.clone(),
                epoch: self.shared.epoch,
                timeouts: cfg.timeouts,
                budget: Some(self.shared.budget.clone()),
                hop: self.shared.hop.clone(),
                open_budget: Some(self.shared.open_budget.clone()),
                zero_rtt,
            },
            self.counters(),
        )
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

/// Prints [`Counters::refusals_line`] every `log_every` when a refusal or close happened
/// since the last line: refusals show while they happen, not only at exit.
async fn log_refusals(shared: Arc<Shared>) {
    let mut logged = 0u64;
    let mut marked_logged = 0u64;
    let mut tick = tokio::time::interval(shared.cfg.log_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let c = &shared.counters;
        let total = c.refusals_total();
        if total != logged {
            logged = total;
            let hop = if shared.hop.is_enabled() {
                format!("; {}", c.hop.line())
            } else {
                String::new()
            };
            eprintln!("npt serve: so far {}{hop}", c.refusals_line());
        }
        // Marked datagrams (a DSCP or ECN codepoint) as they arrive; unmarked traffic says
        // nothing here (the exit summary counts it).
        let marked = c.udp_marking.marked();
        if marked != marked_logged {
            marked_logged = marked;
            if let Some(t) = c.udp_marking.text() {
                eprintln!("npt serve: udp marking so far: {t}");
            }
        }
    }
}

/// Decrements the open-connection count when a connection task ends, however it ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    active: Arc<AtomicUsize>,
) {
    let mut errors = fdlimit::AcceptErrors::default();
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: report, back off briefly instead of spinning, go on.
                shared
                    .counters
                    .tcp_accept_errors
                    .fetch_add(1, Ordering::Relaxed);
                if let Some(n) = errors.record(Instant::now()) {
                    eprintln!("{}", fdlimit::accept_error_line("tcp", n, &e));
                }
                tokio::time::sleep(fdlimit::ACCEPT_BACKOFF).await;
                continue;
            }
        };
        if active.load(Ordering::Relaxed) >= shared.cfg.max_tcp_conns {
            shared
                .counters
                .tcp_refused_conns
                .fetch_add(1, Ordering::Relaxed);
            drop(sock);
            continue;
        }
        let _ = sock.set_nodelay(true);
        shared.counters.tcp_accepted.fetch_add(1, Ordering::Relaxed);
        active.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(active.clone());
        let sh = shared.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let access = match &sh.auth {
                Some(a) => stream::Access::Handshake {
                    auth: a,
                    peer,
                    epoch: sh.epoch,
                },
                None => stream::Access::Open,
            };
            let cx = stream::StreamCtx {
                access,
                counters: &sh.counters.tcp,
                timeouts: sh.cfg.timeouts,
                budget: Some(&sh.budget),
                open_budget: Some(&sh.open_budget),
                peer: Some(peer.ip()),
                hop: &sh.hop,
                tcp_fd: Some(std::os::fd::AsRawFd::as_raw_fd(&sock)),
                idle: Some((&sh.holds, peer)),
            };
            let _ = stream::serve_stream(sock, &cx).await;
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

/// A UDP socket with 4 MiB buffers (where the system allows): bursts wait, not drop.
pub(crate) fn udp_socket(addr: SocketAddr) -> io::Result<UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    npt_netio::set_buffers(&s, 4 << 20);
    s.bind(&addr.into())?;
    Ok(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_addresses() {
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.1.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_local(a.parse().unwrap()), "{a}");
        }
        for a in [
            "8.8.8.8",
            "172.32.0.1",
            "2001:db8::1",
            "::ffff:1.1.1.1",
            "100.64.0.1",
        ] {
            assert!(!is_local(a.parse().unwrap()), "{a}");
        }
    }
}
