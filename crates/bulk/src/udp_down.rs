//! UDP down at a rate: the responder sends `BulkData` datagrams of `--size` bytes at `--rate`.
//! It never sources a flow on its own (a UDP source address can be forged, and a server that
//! sent a flow on request would be an amplifier): the tester paces small `Bulk` frames
//! ("pulls", the open-loop schedule of [`npt_wire::pacing`]), each asking for `k` datagrams,
//! and the responder answers each pull with its `k` datagrams at once — only to a `--token`
//! session or a loopback source (`npt_server::bulk_udp`); anyone else's pull is refused.
//!
//! `k` is what the rate sends in [`PULL_EVERY`] (at most [`MAX_BURST`]), so the datagrams
//! leave in bursts of about a millisecond. Datagram `j` of pull `p` is numbered `p × k + j`:
//! what arrived is counted here ([`OneWay`]: datagrams, bytes, the highest number, jitter of
//! the transit time), the loss of an interval is the numbers missing below the highest one,
//! and the total loss is what was asked for against what arrived (a lost pull counts as `k`
//! datagrams lost down: the two cannot be told apart here). The first datagram of a pull gives
//! the loaded path's RTT. After the stop the flow listens until the path is quiet (bounded),
//! so datagrams in flight at the stop are not called lost.

use npt_result::error::ErrorKind;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use npt_wire::auth::{Dir, SessionKey};
use npt_wire::bulk::{self, BulkSpec, Direction, OneWay};
use npt_wire::frame::{status, Header, Kind, HEADER_LEN};
use npt_wire::{Pacer, Pacing};

use crate::lateness::Lateness;
use crate::udp_sock::FlowSocket;
use crate::{Config, Reading, StreamState, UdpCounts};

/// About how much time one pull's datagrams are worth.
pub const PULL_EVERY: Duration = Duration::from_millis(1);
/// The most datagrams one pull asks for (the responder grants no more).
pub const MAX_BURST: u64 = 64;
/// After the stop: the flow ends once nothing arrived for this long, or at [`FINAL_WAIT`].
const QUIET: Duration = Duration::from_millis(200);
const FINAL_WAIT: Duration = Duration::from_secs(2);
/// How many pulls' send times are kept for the RTT of their first datagram.
const RTT_SLOTS: usize = 4096;

type Fail = (ErrorKind, String);

/// How many datagrams each pull asks for, and how many pulls a second, for `rate_bps` in
/// datagrams of `size` bytes.
pub fn plan(rate_bps: f64, size: usize) -> (u64, f64) {
    let per_s = rate_bps / (size as f64 * 8.0);
    // SAFE: a float-to-int `as` saturates; clamped to 1..=MAX_BURST.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let k = ((per_s * PULL_EVERY.as_secs_f64()).ceil() as u64).clamp(1, MAX_BURST);
    (k, (per_s / k as f64).max(1e-3))
}

/// The receiving side: what arrived, and the pulls' send times.
struct Down<'a> {
    sock: FlowSocket,
    key: Option<SessionKey>,
    flow: u32,
    k: u64,
    t0: Instant,
    counts: OneWay,
    sent_at: Vec<u64>,
    st: &'a StreamState,
    buf: Vec<u8>,
    first_arrival: Option<Instant>,
    last_arrival: Option<Instant>,
    /// The pulls' lateness, and the pulls' round trips (the path's queue).
    late: Lateness,
}

impl Down<'_> {
    fn now(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Sends pull `p`.
    fn pull(&mut self, p: u64, spec: &BulkSpec) {
        let now = self.now();
        let mut req = [0u8; bulk::REQUEST_LEN];
        let size = u64::from(spec.size);
        if bulk::encode_request(&mut req, self.flow, 0, now, spec).is_err() {
            return;
        }
        // Pull `p` asks for k datagrams of `size` bytes (the header's reply length).
        if let Ok(mut h) = Header::decode(&req) {
            h.seq = p;
            h.reply_len = u32::try_from(self.k * size).unwrap_or(u32::MAX);
            let _ = h.encode(&mut req);
        }
        if let Some(k) = &self.key {
            let _ = k.seal(Dir::ToServer, &mut req);
        }
        if let Some(slot) = self.sent_at.get_mut(slot(p)) {
            *slot = now;
        }
        let _ = self.sock.send(&req);
    }

    /// Reads every datagram waiting. Err when the responder refused the pulls.
    fn receive(&mut self) -> Result<(), Fail> {
        loop {
            let (r, stamp) = match self.sock.recv(&mut self.buf) {
                Ok(r) => r,
                Err(_) => return Ok(()),
            };
            // When it reached this host (the kernel's stamp), not when this loop read it: a
            // tester that reads late on a loaded box would shift its arrival window and add
            // its own delay to the jitter.
            let now = npt_netio::rxtime::arrival_on(|| self.now(), stamp);
            let Some(b) = self.buf.get(r) else { continue };
            let n = b.len();
            let Ok(h) = Header::decode(b) else { continue };
            if h.flow != self.flow {
                continue;
            }
            if let Some(k) = &self.key {
                if k.open(Dir::ToClient, b).is_err() {
                    continue;
                }
            }
            match h.kind {
                Kind::BulkData => {
                    self.counts.on_datagram(h.seq, h.send_ts, now, n as u64);
                    let at = self.t0 + Duration::from_nanos(now);
                    self.first_arrival.get_or_insert(at);
                    self.last_arrival = Some(at);
                    if h.seq % self.k == 0 {
                        let sent = self.sent_at.get(slot(h.seq / self.k)).copied();
                        if let Some(rtt) = sent.map(|s| now.saturating_sub(s)).filter(|&r| r > 0) {
                            self.late.on_rtt(rtt);
                            self.st.set_reading(Reading {
                                rtt_ns: Some(rtt),
                                ..Reading::default()
                            });
                        }
                    }
                }
                Kind::BulkReply if h.status == status::REFUSED => {
                    return Err((
                        ErrorKind::Refused,
                        "the responder refused UDP down: npt serve sends it only to --token \
                         clients and loopback sources (it would be an amplifier otherwise)"
                            .into(),
                    ))
                }
                _ => {}
            }
        }
    }

    fn publish(&self, asked: u64) {
        let late = &self.late;
        let r = self.counts.report(0);
        self.st.bytes.store(r.bytes, Ordering::Relaxed);
        // The delivered rate's time: from the first datagram's arrival to the last's. The
        // run's own length would leave out the tail that arrives after the stop (a full queue
        // drains for its whole depth), and read more than the link can carry.
        if let (Some(first), Some(last)) = (self.first_arrival, self.last_arrival) {
            let window = u64::try_from(last.duration_since(first).as_nanos()).unwrap_or(u64::MAX);
            self.st.reported_ns.store(window, Ordering::Relaxed);
        }
        *self.st.udp.lock().unwrap_or_else(|p| p.into_inner()) = UdpCounts {
            sent: asked,
            received: r.datagrams,
            expected: r.expected,
            refused: None,
            jitter_ns: r.jitter_ns,
            behind_schedule: late.behind,
            stalled_ns: late.uncovered_ns(),
        };
    }
}

fn slot(p: u64) -> usize {
    usize::try_from(p).unwrap_or(0) % RTT_SLOTS
}

/// Runs the flow until `stop`, then listens until the path is quiet.
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

fn flow(
    cfg: &Config,
    addrs: &[SocketAddr],
    st: &StreamState,
    stop: &AtomicBool,
    t0: Instant,
) -> Result<(), Fail> {
    let (sock, key, rate) = crate::udp::open(cfg, addrs, 8 << 20)?;
    let size = rate.size.max(HEADER_LEN);
    let (k, pps) = plan(rate.rate_bps, size);
    // SAFE: a float-to-int `as` saturates; the rate is a positive number of bits/s.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let spec = BulkSpec {
        direction: Direction::Down,
        size: u32::try_from(size).unwrap_or(u32::MAX),
        rate_bps: rate.rate_bps as u64,
        duration_ns: u64::try_from(cfg.duration.as_nanos()).unwrap_or(u64::MAX),
    };
    let fd = sock.as_raw_fd();
    let mut d = Down {
        sock,
        key,
        flow: rand::random(),
        k,
        t0,
        counts: OneWay::default(),
        sent_at: vec![0; RTT_SLOTS],
        st,
        buf: vec![0u8; 65_536],
        first_arrival: None,
        last_arrival: None,
        late: Lateness::default(),
    };
    npt_netio::tighten_timer_slack();
    let mut pacer = Pacer::new(Pacing::Rate { pps }, d.now());
    let mut pulls = 0u64;
    let timeout = u64::try_from(cfg.timeout.as_nanos()).unwrap_or(u64::MAX);
    let mut ready = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        d.receive()?;
        let now = d.now();
        while let Some(due) = pacer.next_due().filter(|&t| t <= now) {
            d.pull(pulls, &spec);
            pulls += 1;
            let actual = d.now();
            d.late.on_send(actual.saturating_sub(due));
            pacer.on_sent(due, actual);
        }
        d.publish(pulls * k);
        if d.last_arrival.is_none() && now > timeout {
            return Err((
                ErrorKind::Timeout,
                format!(
                    "no UDP down datagram within {:?} (not npt serve, or the path drops everything?)",
                    cfg.timeout
                ),
            ));
        }
        let wake = pacer.next_due().unwrap_or(now + 1_000_000);
        let wait = Duration::from_nanos(wake.saturating_sub(d.now()));
        let _ = npt_netio::wait(&[fd], &[false], Some(wait), &mut ready);
    }
    // What is in flight at the stop still arrives: listen until the path is quiet.
    let t = Instant::now();
    let mut quiet_since = Instant::now();
    while t.elapsed() < FINAL_WAIT && quiet_since.elapsed() < QUIET {
        let before = d.counts.report(0).datagrams;
        d.receive()?;
        if d.counts.report(0).datagrams > before {
            quiet_since = Instant::now();
        }
        let _ = npt_netio::wait(&[fd], &[false], Some(QUIET / 4), &mut ready);
    }
    d.publish(pulls * k);
    *st.lateness.lock().unwrap_or_else(|p| p.into_inner()) = d.late.hist.clone();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_asks_for_a_millisecond_of_datagrams() {
        // 100 Mbit/s of 1250-byte datagrams: 10,000/s, 10 a millisecond, 1,000 pulls/s.
        let (k, pps) = plan(100e6, 1250);
        assert_eq!(k, 10);
        assert!((pps - 1000.0).abs() < 1e-9);
        // Slow: one datagram a pull. Fast: at most MAX_BURST a pull, the pulls more often.
        assert_eq!(plan(1e6, 1250).0, 1);
        let (k, pps) = plan(10e9, 1250);
        assert_eq!(k, MAX_BURST);
        assert!((pps * k as f64 - 1e6).abs() < 1e-3);
    }
}
