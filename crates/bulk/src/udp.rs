//! UDP at a rate: one flow of `BulkData` datagrams of `--size` bytes, paced at `--rate` by the
//! open-loop schedule of [`npt_wire::pacing`] (a late sender catches up, so the rate is what
//! was asked, and sends that left over [`BEHIND_NS`] late are counted). Every
//! [`REPORT_EVERY`] a `Bulk` frame in the same sequence asks the responder what arrived; its
//! answer carries the counts, the one-way jitter and, by its round trip, the loaded path's RTT.
//! After the stop the flow asks again until a report covers everything it sent (bounded), so
//! datagrams in flight at the stop are not called lost. The requests are long enough
//! ([`bulk::REPLY_LEN_REFUSED`]) for the report to carry the datagrams the responder's budget
//! refused, which are then never called lost either. With `--via socks5://` the flow goes
//! through the proxy's UDP relay ([`crate::udp_sock`]).

use npt_result::error::ErrorKind;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use npt_proxy::udp_flow::SocksUdp;
use npt_wire::auth::{Dir, SessionKey};
use npt_wire::bulk::{self, BulkReport, BulkSpec, Direction};
use npt_wire::frame::{Header, Kind, HEADER_LEN};
use npt_wire::{Pacer, Pacing};

use crate::lateness::Lateness;
use crate::udp_sock::FlowSocket;
use crate::{Config, Reading, StreamState, UdpCounts, UdpRate};

pub use crate::lateness::BEHIND_NS;
/// How often the flow asks for a report. More often than the collector samples: a report
/// shares the bottleneck's queue with the data, and into a full tail-drop queue a small
/// datagram at a random moment gets in about a quarter of the time (the first arrival after a
/// departure does), so asking five times a tick leaves a tick without news one time in four,
/// and an interval practically never.
pub const REPORT_EVERY: Duration = Duration::from_millis(20);
/// The shortest sleep between sends: at a high rate the datagrams due within it leave in one
/// go (far below [`BEHIND_NS`], so none is counted late for it).
pub const QUANTUM_NS: u64 = 250_000;
/// How long the flow waits for a final report, and how often it asks again.
const FINAL_WAIT: Duration = Duration::from_secs(2);
const FINAL_RETRY: Duration = Duration::from_millis(200);

/// The flow's sender: frames, sequence numbers, the session key.
struct Flow<'a> {
    sock: FlowSocket,
    key: Option<SessionKey>,
    flow: u32,
    seq: u64,
    t0: Instant,
    st: &'a StreamState,
    buf: Vec<u8>,
    spec: BulkSpec,
    /// The target's host said nothing listens there (ICMP port unreachable on the connected
    /// socket): a refusal, as probe and ping call it, not a timeout.
    port_refused: bool,
}

impl Flow<'_> {
    fn now(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Sends one frame of `kind` and `len` bytes; the sequence number it used.
    fn send(&mut self, kind: Kind, len: usize) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        let h = Header {
            kind,
            flags: 0,
            frame_len: u32::try_from(len).unwrap_or(u32::MAX),
            reply_len: 0,
            flow: self.flow,
            status: 0,
            seq,
            send_ts: self.now(),
            token: 0,
        };
        let Some(frame) = self.buf.get_mut(..len) else {
            return seq;
        };
        let _ = h.encode(frame);
        if kind == Kind::Bulk {
            let _ = self
                .spec
                .encode(frame.get_mut(HEADER_LEN..).unwrap_or_default());
        }
        if let Some(k) = &self.key {
            let _ = k.seal(Dir::ToServer, frame);
        }
        // A full socket buffer (ENOBUFS, EAGAIN) drops it here: it counts as sent and lost,
        // as it would on a NIC queue.
        let _ = self.sock.send(frame);
        seq
    }

    /// Reads every report waiting; the last one's sequence number, if any came.
    fn receive(&mut self, sent: u64, late: &mut Lateness) -> Option<u64> {
        let mut inb = [0u8; 2048];
        let mut last = None;
        loop {
            let (r, stamp) = match self.sock.recv(&mut inb) {
                Ok(r) => r,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    self.port_refused = true;
                    continue;
                }
                Err(_) => break,
            };
            // The reply's arrival by the kernel's stamp: a tester that reads late (a loaded
            // box) does not add its own delay to the round trip, which estimates the path's
            // queue (see `lateness`).
            let arrived = npt_netio::rxtime::arrival_on(|| self.now(), stamp);
            let Some(b) = inb.get(r) else { continue };
            let Ok(h) = Header::decode(b) else { continue };
            if h.kind != Kind::BulkReply || h.flow != self.flow || b.len() < bulk::REPLY_LEN {
                continue;
            }
            if let Some(k) = &self.key {
                if k.open(Dir::ToClient, b).is_err() {
                    continue;
                }
            }
            let Ok(r) = BulkReport::decode(b.get(HEADER_LEN..).unwrap_or_default()) else {
                continue;
            };
            let refused = bulk::read_refused(&h, b);
            let rtt = arrived.saturating_sub(h.send_ts);
            late.on_rtt(rtt);
            self.publish(&r, refused, sent, late, rtt);
            last = Some(h.seq);
        }
        last
    }

    fn publish(
        &self,
        r: &BulkReport,
        refused: Option<u64>,
        sent: u64,
        late: &Lateness,
        rtt_ns: u64,
    ) {
        let st = self.st;
        st.bytes.store(r.bytes, Ordering::Relaxed);
        st.reported_ns.store(r.elapsed_ns, Ordering::Relaxed);
        *st.udp.lock().unwrap_or_else(|p| p.into_inner()) = UdpCounts {
            sent,
            received: r.datagrams,
            expected: r.expected,
            refused,
            jitter_ns: r.jitter_ns,
            behind_schedule: late.behind,
            stalled_ns: late.uncovered_ns(),
        };
        st.set_reading(Reading {
            rtt_ns: Some(rtt_ns),
            ..Reading::default()
        });
    }
}

/// Runs the flow until `stop`, then collects the final report.
pub(crate) fn run(
    cfg: &Config,
    addrs: &[SocketAddr],
    st: &StreamState,
    stop: &AtomicBool,
    t0: Instant,
) {
    if let Err((kind, detail)) = flow(cfg, addrs, st, stop, t0) {
        st.fail(kind, detail);
    }
    st.finish();
}

/// The UDP flow's socket, both ways: connected to the first address (through `--via`: to the
/// SOCKS5 relay of an association for it), its buffers raised to `buffers` bytes, keyed by the
/// `--token` handshake when there is one (through the relay too), then non-blocking; with the
/// flow's rate and size.
pub(crate) fn open(
    cfg: &Config,
    addrs: &[SocketAddr],
    buffers: usize,
) -> Result<(FlowSocket, Option<SessionKey>, UdpRate), (ErrorKind, String)> {
    let io = |what: &str, e: std::io::Error| {
        (npt_result::error::io_error_kind(&e), format!("{what}: {e}"))
    };
    let Some(rate) = cfg.udp else {
        return Err((ErrorKind::Config, "UDP bulk without a rate".into()));
    };
    let resolved = *addrs
        .first()
        .ok_or((ErrorKind::Config, "no address".to_string()))?;
    let socks = match &cfg.via {
        Some(via) => Some(
            SocksUdp::open(
                via,
                &cfg.target.host,
                cfg.target.port,
                resolved,
                cfg.timeout,
            )
            .map_err(|e| (e.kind(), e.to_string()))?,
        ),
        None => None,
    };
    let target = socks.as_ref().map_or(resolved, SocksUdp::relay);
    // From `--bind`'s address, marked (`--dscp`): the relay's socket too, with `--via`.
    let sock = cfg
        .source
        .udp_connected(target)
        .map_err(|e| io("connect", e))?;
    npt_netio::set_buffers(&socket2::SockRef::from(&sock), buffers);
    let refused = |e: std::io::Error| {
        (
            npt_client::auth::error_kind(&e),
            format!("--token handshake: {e}"),
        )
    };
    let key = match (&cfg.token, &socks) {
        (Some(secret), Some(relay)) => Some(
            npt_client::auth::udp_relayed(&sock, relay, secret, cfg.timeout).map_err(refused)?,
        ),
        (Some(secret), None) => {
            Some(npt_client::auth::udp(&sock, secret, cfg.timeout).map_err(refused)?)
        }
        (None, _) => None,
    };
    sock.set_nonblocking(true).map_err(|e| io("socket", e))?;
    // Arrivals are timed by the kernel's receive stamps where it gives them.
    let _ = npt_netio::rxtime::enable(sock.as_raw_fd());
    let sock = match socks {
        Some(s) => FlowSocket::relayed(sock, s),
        None => FlowSocket::direct(sock),
    };
    Ok((sock, key, rate))
}

fn flow(
    cfg: &Config,
    addrs: &[SocketAddr],
    st: &StreamState,
    stop: &AtomicBool,
    t0: Instant,
) -> Result<(), (ErrorKind, String)> {
    let (sock, key, rate) = open(cfg, addrs, 4 << 20)?;
    let size = rate.size.max(bulk::REPLY_LEN);
    // SAFE: a float-to-int `as` saturates; the rate is a positive number of bits/s.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rate_bps = rate.rate_bps as u64;
    let mut f = Flow {
        sock,
        key,
        flow: rand::random(),
        seq: 0,
        t0,
        st,
        // Data datagrams of `size`, report requests of REPLY_LEN_REFUSED.
        buf: vec![0u8; size.max(bulk::REPLY_LEN_REFUSED)],
        port_refused: false,
        spec: BulkSpec {
            direction: Direction::Up,
            size: u32::try_from(size).unwrap_or(u32::MAX),
            rate_bps,
            duration_ns: u64::try_from(cfg.duration.as_nanos()).unwrap_or(u64::MAX),
        },
    };
    npt_wire::fill::fill(npt_wire::Fill::Random, 1, 0, &mut f.buf);
    npt_netio::tighten_timer_slack();
    let pps = (rate.rate_bps / (size as f64 * 8.0)).max(1e-3);
    let every = u64::try_from(REPORT_EVERY.as_nanos()).unwrap_or(u64::MAX);
    // The first report request leaves before the data: its round trip crosses the path
    // still empty, the smallest the flow will see, against which later ones read the queue
    // that covers the sender's stalls (see `lateness`).
    f.send(Kind::Bulk, bulk::REPLY_LEN);
    let mut pacer = Pacer::new(Pacing::Rate { pps }, f.now());
    let mut next_report = f.now() + every;
    // SAFE: a float-to-int `as` saturates; the gap between sends, at least 1 ns.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let gap = ((1e9 / pps) as u64).clamp(1, every / 2);
    let mut late = Lateness::default();
    let mut first_answer = None;
    let fd = f.sock.as_raw_fd();
    let mut ready = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let now = f.now();
        if f.receive(f.seq, &mut late).is_some() {
            first_answer.get_or_insert(now);
        }
        if f.port_refused && first_answer.is_none() {
            return Err(port_refused(cfg));
        }
        // Everything due by now leaves now (open loop: a late sender catches up).
        while let Some(due) = pacer.next_due().filter(|&d| d <= now) {
            f.send(Kind::BulkData, size);
            let actual = f.now();
            late.on_send(actual.saturating_sub(due));
            pacer.on_sent(due, actual);
        }
        if now >= next_report {
            // At a random point between two data sends: a report sent right behind a data
            // datagram would meet a full bottleneck queue exactly when that datagram took the
            // slot that just freed, every time (a phase lock).
            next_report += every + rand::random::<u64>() % gap;
            f.send(Kind::Bulk, bulk::REPLY_LEN_REFUSED);
            if first_answer.is_none()
                && now > u64::try_from(cfg.timeout.as_nanos()).unwrap_or(u64::MAX)
            {
                return Err(no_report(cfg.timeout));
            }
        }
        // Not sooner than a quantum from now: what falls due meanwhile leaves together (one
        // wakeup per datagram costs more CPU than the sends at tens of thousands a second).
        let wake = pacer.next_due().unwrap_or(next_report).min(next_report);
        let wait = Duration::from_nanos(wake.saturating_sub(f.now()).max(QUANTUM_NS));
        let _ = npt_netio::wait(&[fd], &[false], Some(wait), &mut ready);
    }
    *st.lateness.lock().unwrap_or_else(|p| p.into_inner()) = late.hist.clone();
    // The final report: asked again until one answers a request sent after the last datagram
    // (the report then covers every datagram that will ever arrive, as the path keeps order).
    let last_data = f.seq;
    let t = Instant::now();
    while t.elapsed() < FINAL_WAIT {
        f.send(Kind::Bulk, bulk::REPLY_LEN_REFUSED);
        let until = Instant::now() + FINAL_RETRY;
        while Instant::now() < until {
            if let Some(seq) = f.receive(f.seq, &mut late) {
                first_answer.get_or_insert(f.now());
                if seq >= last_data {
                    return Ok(());
                }
            }
            let _ = npt_netio::wait(&[fd], &[false], Some(FINAL_RETRY / 4), &mut ready);
        }
    }
    // A run shorter than --timeout that never heard a report fails as a longer one would.
    match first_answer {
        Some(_) => Ok(()),
        None if f.port_refused => Err(port_refused(cfg)),
        None => Err(no_report(t0.elapsed())),
    }
}

/// The flow's error when the target's host refused the port (nothing listens on it).
fn port_refused(cfg: &Config) -> (ErrorKind, String) {
    let via = if cfg.via.is_some() {
        " (as the SOCKS5 relay's host told it)"
    } else {
        ""
    };
    (
        ErrorKind::Refused,
        format!(
            "nothing listens on {}{via}: the host answered port unreachable",
            cfg.target
        ),
    )
}

/// The flow's error when no report ever came within `waited`.
fn no_report(waited: Duration) -> (ErrorKind, String) {
    (
        ErrorKind::Timeout,
        format!("no bulk report in {waited:.1?} (not npt serve, or the path drops everything?)"),
    )
}
