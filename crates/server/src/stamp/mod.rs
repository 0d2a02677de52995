//! `npt serve --stamp ADDR`: a STAMP Session-Reflector (RFC 8762), so a STAMP Session-Sender —
//! a router's, a test set's, `npt probe stamp://` — measures the path to this host.
//!
//! One thread per socket, like the UDP responder ([`crate::udp`]): `recvmmsg` in (with each
//! datagram's TTL and kernel receive time), the answers written over the requests
//! ([`reflect`]), one read of the wall clock for their send time, `sendmmsg` out. Timestamps
//! are the wall clock (`CLOCK_REALTIME`, NTP format): the receive time is the kernel's
//! (`SO_TIMESTAMPNS`) where it gives one, the send time is read just before the batch leaves.
//! The Error Estimate says what the kernel says of the clock (`adjtimex`, re-read every
//! second): synchronized with its estimated error, or not synchronized with its maximum error.
//!
//! Safe on a public address, as the UDP responder: an answer is exactly as long as its request;
//! every source is charged to the per-source and total budgets of `npt serve` ([`Limiter`]:
//! the safe limits for strangers, the open ones for local sources and for packets that proved
//! the key in authenticated mode); loops with echo services and other reflectors are refused
//! ([`reflect`]); every refusal is counted ([`StampCounters`]).

pub mod reflect;

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_netio::{rxtime, MsgBatch};
use npt_wire::stamp::time::unix_ns_to_ntp;
use npt_wire::stamp::ErrorEstimate;

use crate::counters::{group, Named};
use crate::limiter::{Limiter, Verdict};
use crate::Shared;
use reflect::{Proof, Reflector, ReflectorConfig, Refusal};

pub use reflect::{MAX_SESSIONS, SESSION_IDLE_NS};

const BATCH: usize = 32;
const MAX_DATAGRAM: usize = 65_536;
/// How often the clock's synchronization state is read again.
const CLOCK_EVERY: Duration = Duration::from_secs(1);

/// `--stamp`: where, and how, the reflector answers.
#[derive(Clone, Debug)]
pub struct StampConfig {
    pub addr: SocketAddr,
    pub reflector: ReflectorConfig,
}

/// What the reflector counts.
#[derive(Debug, Default)]
pub struct StampCounters {
    pub rx: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub tx: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub errors: AtomicU64,
    /// Stateful sessions created (not a refusal).
    pub sessions: AtomicU64,
    /// Over the per-source or total packet or byte budget.
    pub refused_rate: AtomicU64,
    /// Shorter than a reflector packet of the mode.
    pub refused_short: AtomicU64,
    /// From a service port (below 1024, other than 862 and 863).
    pub refused_port: AtomicU64,
    /// Authenticated mode: the HMAC did not verify.
    pub refused_mac: AtomicU64,
    /// One of the reflector's own answers, come back (a loop).
    pub refused_loop: AtomicU64,
    /// A new stateful session found the table full.
    pub refused_sessions: AtomicU64,
}

impl StampCounters {
    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// The refusals by the names of the log lines and metrics.
    pub fn refusals(&self) -> [Named; 6] {
        let g = StampCounters::get;
        [
            ("rate", g(&self.refused_rate)),
            ("short", g(&self.refused_short)),
            ("port", g(&self.refused_port)),
            ("bad-mac", g(&self.refused_mac)),
            ("loop", g(&self.refused_loop)),
            ("sessions-full", g(&self.refused_sessions)),
        ]
    }

    pub fn refusals_total(&self) -> u64 {
        self.refusals().iter().map(|(_, v)| v).sum()
    }

    /// The traffic, then the refusals, naming only what is not zero (the exit summary).
    pub(crate) fn groups(&self) -> [Option<String>; 2] {
        let g = StampCounters::get;
        [
            group(
                "stamp",
                &[
                    ("rx-pkts", g(&self.rx)),
                    ("tx-pkts", g(&self.tx)),
                    ("sessions", g(&self.sessions)),
                ],
                &[],
            ),
            group("stamp refused:", &self.refusals(), &[]),
        ]
    }
}

#[derive(Default)]
struct Tally {
    rx: u64,
    rx_bytes: u64,
    tx: u64,
    tx_bytes: u64,
    sessions: u64,
    /// By [`Refusal`], in its order.
    refused: [u64; 6],
}

impl Tally {
    fn refuse(&mut self, why: Refusal) {
        if let Some(c) = self.refused.get_mut(why as usize) {
            *c += 1;
        }
    }

    fn add_to(&self, c: &StampCounters) {
        let add = |a: &AtomicU64, v: u64| {
            if v > 0 {
                a.fetch_add(v, Ordering::Relaxed);
            }
        };
        add(&c.rx, self.rx);
        add(&c.rx_bytes, self.rx_bytes);
        add(&c.tx, self.tx);
        add(&c.tx_bytes, self.tx_bytes);
        add(&c.sessions, self.sessions);
        let [rate, short, port, mac, looped, full] = self.refused;
        add(&c.refused_rate, rate);
        add(&c.refused_short, short);
        add(&c.refused_port, port);
        add(&c.refused_mac, mac);
        add(&c.refused_loop, looped);
        add(&c.refused_sessions, full);
    }
}

/// The Error Estimate this host's clock deserves now ([`ErrorEstimate::of_clock`]).
fn clock_estimate() -> ErrorEstimate {
    match rxtime::wall_clock_status() {
        Some(c) => ErrorEstimate::of_clock(c.synced, c.est_error_ns, c.max_error_ns),
        None => ErrorEstimate::of_clock(false, 0, 0),
    }
}

/// Binds the reflector's socket (its receive TTL and timestamps asked for).
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let sock = crate::udp_socket(addr)?;
    // Without the kernel's receive time, the time the batch was read stands in (coarser,
    // still right).
    let _ = rxtime::enable(sock.as_raw_fd());
    rxtime::enable_ttl(sock.as_raw_fd(), addr.is_ipv6())?;
    Ok(sock)
}

pub(crate) fn run(sock: UdpSocket, cfg: ReflectorConfig, shared: Arc<Shared>) {
    let fd = sock.as_raw_fd();
    let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
    let mut batch = MsgBatch::new(BATCH, MAX_DATAGRAM).with_rx_times();
    let serve = &shared.cfg;
    let mut limiter = Limiter::new(serve.limits);
    let mut open_limiter = Limiter::new(serve.session_limits);
    let mut reflector = Reflector::new(cfg);
    let counters = &shared.counters.stamp;
    let epoch = Instant::now();
    let mut error = clock_estimate();
    let mut clock_read = Instant::now();
    let mut answered: Vec<usize> = Vec::with_capacity(BATCH);
    while !shared.stop.load(Ordering::Relaxed) {
        let n = match batch.recv(fd, BATCH, libc::MSG_WAITFORONE) {
            Ok(n) => n,
            Err(e) => {
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) {
                    counters.errors.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            }
        };
        let now = u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let wall = rxtime::wall_ns();
        if clock_read.elapsed() >= CLOCK_EVERY {
            error = clock_estimate();
            clock_read = Instant::now();
        }
        let mut t = Tally::default();
        answered.clear();
        for i in 0..n {
            let len = batch.len(i);
            t.rx += 1;
            t.rx_bytes += len as u64;
            let Some(peer) = batch.addr(i) else {
                t.refuse(Refusal::Short);
                continue;
            };
            let proof = match reflector.check(peer, batch.data(i), wall) {
                Ok(p) => p,
                Err(why) => {
                    t.refuse(why);
                    continue;
                }
            };
            let exempt = serve.exempt_local && crate::is_local(peer.ip());
            let l = if exempt || proof == Proof::Keyed {
                &mut open_limiter
            } else {
                &mut limiter
            };
            if l.check(now, peer, len) != Verdict::Allow {
                t.refuse(Refusal::Rate);
                continue;
            }
            let t2 = unix_ns_to_ntp(batch.rx_time_ns(i).unwrap_or(wall));
            // No TTL from the kernel: 0, a value no packet that arrived can have.
            let ttl = batch.rx_ttl(i).unwrap_or(0);
            match reflector.answer(now, peer, t2, ttl, error, batch.data_mut(i)) {
                Ok(created) => {
                    t.sessions += u64::from(created);
                    answered.push(i);
                }
                Err(why) => t.refuse(why),
            }
        }
        if !answered.is_empty() {
            let t3 = unix_ns_to_ntp(rxtime::wall_ns());
            for &i in &answered {
                reflector.stamp(batch.data_mut(i), t3, error);
            }
            match batch.send(fd, &answered, true, 0) {
                Ok(sent) => {
                    t.tx += sent as u64;
                    t.tx_bytes += answered
                        .iter()
                        .take(sent)
                        .map(|&i| batch.len(i) as u64)
                        .sum::<u64>();
                }
                Err(_) => {
                    counters.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        t.add_to(counters);
    }
}
