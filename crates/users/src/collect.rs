//! Where every user's measurements go: one set of HDR histograms and counters per protocol
//! and per activity, shared by all users behind a mutex (held for a few hundred ns per
//! record), plus gauges of active users and connections and the 1 s interval series.
//!
//! Memory is flat: a fixed number of histograms whatever the number of users or requests
//! (a histogram per user would cost ~256 KiB × users); only the interval series grows, by
//! one small record per interval.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use npt_netio::tcpinfo::TcpInfo;
use npt_result::common::{Directions, ErrorStats};
use npt_result::error::ErrorKind;
use npt_result::interval::{Interval, IntervalAcc, Intervals};
use npt_result::run::hist;
use npt_result::stats::run::{ActivityCounts, GameTotals, ProtocolCounts};
use npt_result::stats::setup::{Attempt, Plan};
use npt_result::stats::{HistMap, RunStats, SetupStats, WeightedMean};
use npt_result::tcpinfo::TcpKernelStats;
use npt_result::Health;
use npt_stats::{ErrorCounts, Histogram, JitterMean};

use crate::config::{Activity, Proto};

#[derive(Default)]
pub(crate) struct ProtoAcc {
    pub(crate) requests: u64,
    pub(crate) errors: u64,
    pub(crate) connections: u64,
    up: u64,
    down: u64,
    latency: Histogram,
    connect: Histogram,
    handshake: Histogram,
    first: Histogram,
    /// `--via`: the proxy's own part of each connect (authentication + CONNECT reply).
    proxy: Histogram,
    /// TCP: the kernel's view of the connections, and its smoothed RTT at each one's end.
    kernel: Option<TcpKernelStats>,
    kernel_rtt: Histogram,
    /// New connections set up to their first response byte, and the base round trips
    /// ([`crate::setup`]).
    setup: SetupStats,
}

/// Game session counters, added up over sessions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GameCounts {
    /// Sent, received, lost, late, duplicated, reordered.
    pub packets: npt_stats::PacketCounts,
    /// Refused by the server's budget (never path loss).
    pub refused: u64,
    /// RFC 3550 jitter of the sessions, sample-weighted (merges exactly).
    pub jitter: JitterMean,
}

#[derive(Default)]
pub(crate) struct ActAcc {
    pub(crate) sessions: u64,
    completed: u64,
    pub(crate) requests: u64,
    pub(crate) errors: u64,
    up: u64,
    down: u64,
    pub(crate) latency: Histogram,
    ttfb: Option<Histogram>,
    transfer_bytes: u64,
    transfer_ns: u64,
    pub(crate) game: GameCounts,
}

pub(crate) struct Totals {
    pub(crate) proto: [ProtoAcc; 3],
    pub(crate) act: [ActAcc; 5],
    pub(crate) errors: ErrorCounts,
    interval: IntervalAcc,
    /// Bounded memory for long runs: older records wait in a temporary file.
    intervals: npt_result::series::Series<Interval>,
    lateness: Histogram,
    late_wakeups: u64,
}

impl Default for Totals {
    fn default() -> Totals {
        Totals {
            proto: Default::default(),
            act: Default::default(),
            errors: ErrorCounts::default(),
            // A run's interval records count payload bytes each way.
            interval: IntervalAcc::with_bytes(),
            intervals: Default::default(),
            lateness: Histogram::new(),
            late_wakeups: 0,
        }
    }
}

/// Timer wakeups later than this count as late in `health.late_wakeups`.
pub const LATE_THRESHOLD_NS: u64 = 10_000_000;

/// Shared by every user task of a run.
#[derive(Default)]
pub struct Collector {
    totals: Mutex<Totals>,
    pub active_users: AtomicU64,
    pub active_conns: AtomicU64,
    pub max_users: AtomicU64,
    pub max_conns: AtomicU64,
    pub arrivals_dropped: AtomicU64,
    requests_total: AtomicU64,
    errors_total: AtomicU64,
}

/// Decrements a gauge when dropped (also when the task is cancelled mid-request).
pub struct Gauge<'a> {
    g: &'a AtomicU64,
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.g.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Collector {
    pub fn new() -> Collector {
        Collector::default()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Totals> {
        // A panic while holding the lock cannot leave the counters inconsistent enough to
        // matter; keep measuring.
        self.totals.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn user_active(&self) -> Gauge<'_> {
        let n = self.active_users.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_users.fetch_max(n, Ordering::Relaxed);
        Gauge {
            g: &self.active_users,
        }
    }

    pub fn conn_open(&self, p: Proto) -> Gauge<'_> {
        let n = self.active_conns.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_conns.fetch_max(n, Ordering::Relaxed);
        self.lock().proto[p.index()].connections += 1;
        Gauge {
            g: &self.active_conns,
        }
    }

    pub fn session(&self, a: Activity) {
        self.lock().act[a.index()].sessions += 1;
    }

    pub fn session_completed(&self, a: Activity) {
        self.lock().act[a.index()].completed += 1;
    }

    /// One completed request: `ns` from its first byte sent to its last response byte.
    pub fn request(&self, a: Activity, up: u64, down: u64, ns: u64) {
        let mut t = self.lock();
        let p = &mut t.proto[a.protocol().index()];
        p.requests += 1;
        p.up += up;
        p.down += down;
        p.latency.record(ns);
        let x = &mut t.act[a.index()];
        x.requests += 1;
        x.up += up;
        x.down += down;
        x.latency.record(ns);
        t.interval.record_completed(ns);
        t.interval.record_bytes(up, down);
        drop(t);
        self.requests_total.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes that moved without completing a request (a game packet's way up, say).
    pub fn bytes(&self, a: Activity, up: u64, down: u64) {
        let mut t = self.lock();
        let p = &mut t.proto[a.protocol().index()];
        p.up += up;
        p.down += down;
        let x = &mut t.act[a.index()];
        x.up += up;
        x.down += down;
        t.interval.record_bytes(up, down);
    }

    pub fn connect(&self, p: Proto, ns: u64) {
        self.lock().proto[p.index()].connect.record(ns);
    }

    pub fn proxy(&self, p: Proto, ns: u64) {
        self.lock().proto[p.index()].proxy.record(ns);
    }

    pub fn handshake(&self, p: Proto, ns: u64) {
        self.lock().proto[p.index()].handshake.record(ns);
    }

    /// A TCP connection's `TCP_INFO` when it was up (`first`) and when it ended (`last`):
    /// its retransmits and data segments in between, its RTT at the end. `scope`:
    /// `npt_result::tcpinfo::SCOPE_TARGET` or `SCOPE_PROXY` (`--via`).
    pub fn tcp_kernel(&self, first: &TcpInfo, last: &TcpInfo, scope: &str) {
        let segs = match (first.data_segs_out, last.data_segs_out) {
            (Some(a), Some(b)) => Some(u64::from(b.wrapping_sub(a))),
            _ => None,
        };
        let samples = u64::from(last.rtt_us > 0);
        let min_rtt = last
            .min_rtt_us
            .filter(|m| *m > 0 && *m != u32::MAX)
            .map(|m| f64::from(m) * 1e3);
        let mut t = self.lock();
        let a = &mut t.proto[Proto::Tcp.index()];
        if samples > 0 {
            a.kernel_rtt.record(u64::from(last.rtt_us) * 1000);
        }
        a.kernel
            .get_or_insert_with(|| TcpKernelStats {
                scope: scope.to_string(),
                ..TcpKernelStats::default()
            })
            .add_connection(
                u64::from(last.total_retrans.saturating_sub(first.total_retrans)),
                segs,
                f64::from(last.rttvar_us) * 1e3,
                samples,
                min_rtt,
            );
    }

    /// A new connection of `p` that got its first response byte: its layers, in `plan`'s
    /// order ([`crate::setup`]).
    pub fn set_up(&self, p: Proto, plan: &[Plan], a: &Attempt) {
        self.lock().proto[p.index()].setup.record(plan, a);
    }

    /// A request on a connection of `p` already in use: `ns` to its first response byte, a
    /// base round trip of the setup block.
    pub fn warm(&self, p: Proto, ns: u64) {
        self.lock().proto[p.index()].setup.rtt.record(ns);
    }

    pub fn first_request(&self, p: Proto, ns: u64) {
        self.lock().proto[p.index()].first.record(ns);
    }

    pub fn ttfb(&self, a: Activity, ns: u64) {
        self.lock().act[a.index()]
            .ttfb
            .get_or_insert_with(Histogram::new)
            .record(ns);
    }

    pub fn transfer(&self, a: Activity, bytes: u64, ns: u64) {
        let mut t = self.lock();
        let x = &mut t.act[a.index()];
        x.transfer_bytes += bytes;
        x.transfer_ns += ns;
    }

    /// A game session's progress: RTTs of on-time replies, the counts decided since the last
    /// flush and the bytes moved, in one lock (a session flushes every 64 replies).
    pub fn game_flush(&self, rtts: &[u64], g: &GameCounts, up: u64, down: u64) {
        let n = rtts.len() as u64;
        let mut t = self.lock();
        for &ns in rtts {
            t.proto[Proto::Udp.index()].latency.record(ns);
            t.act[Activity::Game.index()].latency.record(ns);
            t.interval.record_completed(ns);
        }
        let p = &mut t.proto[Proto::Udp.index()];
        p.requests += n;
        p.up += up;
        p.down += down;
        let x = &mut t.act[Activity::Game.index()];
        x.requests += n;
        x.up += up;
        x.down += down;
        let a = &mut x.game;
        a.packets += &g.packets;
        a.refused += g.refused;
        a.jitter += &g.jitter;
        t.interval.record_bytes(up, down);
        drop(t);
        self.requests_total.fetch_add(n, Ordering::Relaxed);
    }

    /// One failed request, connection or session, by kind (`refused`, `reset`, `timeout`, …).
    pub fn error(&self, a: Activity, kind: ErrorKind, example: impl FnOnce() -> String) {
        let mut t = self.lock();
        t.proto[a.protocol().index()].errors += 1;
        t.act[a.index()].errors += 1;
        t.interval.errors += 1;
        let proto = a.protocol().name();
        let act = a.name();
        t.errors
            .record(kind.name(), || format!("{act} ({proto}): {}", example()));
        drop(t);
        self.errors_total.fetch_add(1, Ordering::Relaxed);
    }

    /// How late a timer fired after its due time.
    pub fn lateness(&self, ns: u64) {
        let mut t = self.lock();
        t.lateness.record(ns.max(1));
        if ns > LATE_THRESHOLD_NS {
            t.late_wakeups += 1;
        }
    }

    pub fn requests_total(&self) -> u64 {
        self.requests_total.load(Ordering::Relaxed)
    }

    pub fn errors_total(&self) -> u64 {
        self.errors_total.load(Ordering::Relaxed)
    }

    /// Closes the current interval `[start_s, end_s)` and returns a copy of it.
    pub fn close_interval(&self, start_s: f64, end_s: f64) -> Interval {
        let users = self.active_users.load(Ordering::Relaxed);
        let conns = self.active_conns.load(Ordering::Relaxed);
        let mut t = self.lock();
        let index = u32::try_from(t.intervals.len()).unwrap_or(u32::MAX);
        let secs = (end_s - start_s).max(1e-9);
        let rec = Interval {
            active_users: Some(users),
            active_connections: Some(conns),
            ..t.interval.close(index, start_s, end_s, secs)
        };
        t.intervals.push(rec.clone());
        rec
    }

    /// The run's stats value as measured here (`secs`: the run's length); the driver adds
    /// what it knows (users, the run's length, requests cut off, attempts, CPU and memory).
    pub fn finish(&self, secs: f64, game_loss_timeout_ms: f64) -> RunStats {
        let mut t = self.lock();
        let secs = secs.max(1e-9);
        let mut st = RunStats::default();
        let mut histograms = HistMap::default();
        let (mut up, mut down) = (0u64, 0u64);
        for p in Proto::ALL {
            let a = &t.proto[p.index()];
            st.requests += a.requests;
            up += a.up;
            down += a.down;
            if a.requests == 0 && a.errors == 0 && a.connections == 0 {
                continue;
            }
            let counts = ProtocolCounts {
                requests: a.requests,
                errors: a.errors,
                connections: a.connections,
                bytes: Directions::bytes(a.up, a.down),
                throughput_bps: Directions::bits_per_s(a.up, a.down, secs),
                tcp_info: a.kernel.clone(),
                setup: (a.setup.attempts > 0).then(|| SetupStats {
                    runs: 1,
                    ..a.setup.clone()
                }),
            };
            st.protocols.insert(p.name().to_string(), counts);
            for (phase, h) in [
                (hist::LATENCY, &a.latency),
                (hist::CONNECT, &a.connect),
                (hist::HANDSHAKE, &a.handshake),
                (hist::FIRST_REQUEST, &a.first),
                (hist::PROXY, &a.proxy),
                (hist::TCP_RTT, &a.kernel_rtt),
            ] {
                if !h.is_empty() {
                    histograms.add(&hist::proto(p.name(), phase), h);
                }
            }
        }
        for a in Activity::ALL {
            let x = &t.act[a.index()];
            st.sessions_started += x.sessions;
            st.sessions_completed += x.completed;
            if x.sessions == 0 && x.errors == 0 {
                continue;
            }
            let g = &x.game;
            let counts = ActivityCounts {
                protocol: a.protocol().name().to_string(),
                sessions: x.sessions,
                requests: x.requests,
                errors: x.errors,
                bytes: Directions::bytes(x.up, x.down),
                transfer_bps: (x.transfer_ns > 0).then(|| {
                    let bps = x.transfer_bytes as f64 * 8.0 / (x.transfer_ns as f64 / 1e9);
                    WeightedMean::of(bps, x.requests as f64)
                }),
                game: (a == Activity::Game).then_some(GameTotals {
                    packets: g.packets,
                    refused: g.refused,
                    jitter: g.jitter,
                    jitter_inexact: false,
                    loss_timeout_ms: game_loss_timeout_ms,
                }),
            };
            st.activities.insert(a.name().to_string(), counts);
            if !x.latency.is_empty() {
                histograms.add(&hist::activity(a.name(), hist::LATENCY), &x.latency);
            }
            if let Some(h) = &x.ttfb {
                histograms.add(&hist::activity(a.name(), hist::TTFB), h);
            }
        }
        if !t.lateness.is_empty() {
            histograms.add(hist::TIMER_LATENESS, &t.lateness);
        }
        st.requests_per_s = st.requests as f64 / secs;
        st.bytes = Directions::bytes(up, down);
        st.throughput_bps = Directions::bits_per_s(up, down, secs);
        st.max_active_users = self.max_users.load(Ordering::Relaxed);
        st.max_active_connections = self.max_conns.load(Ordering::Relaxed);
        st.arrivals_dropped = self.arrivals_dropped.load(Ordering::Relaxed);
        st.histograms = histograms;
        // Requests started that neither completed nor failed (in flight at the end) are added
        // by the driver, which knows them.
        st.errors = ErrorStats {
            by_kind: t.errors.clone(),
            attempts: st.requests + t.errors.total(),
        };
        st.health = Health {
            late_wakeups: Some(t.late_wakeups),
            late_threshold_ms: Some(LATE_THRESHOLD_NS as f64 / 1e6),
            ..Health::default()
        };
        st.intervals = Intervals::of(std::mem::take(&mut t.intervals).into_vec_logged());
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::stats::{RunMeta, Stats};

    #[test]
    fn npt_block_comes_from_per_request_histograms() {
        let c = Collector::new();
        c.session(Activity::Web);
        // 99 fast requests and one slow one: a per-second average would hide the slow one.
        for _ in 0..99 {
            c.request(Activity::Web, 100, 1000, 10_000_000);
        }
        c.request(Activity::Web, 100, 1000, 300_000_000);
        c.error(Activity::Web, ErrorKind::Refused, || {
            "connection refused".into()
        });
        let m = c.finish(10.0, 1000.0).summarize(&RunMeta::default());
        let tcp = m.latency["tcp"];
        assert!((tcp.p50_ms - 10.0).abs() < 0.02, "{}", tcp.p50_ms);
        assert!((tcp.max_ms - 300.0).abs() < 0.5);
        assert!((tcp.min_ms - 10.0).abs() < 0.02);
        assert!((tcp.avg_ms - 12.9).abs() < 0.05, "{}", tcp.avg_ms);
        assert_eq!(m.errors.total_errors, 1);
        assert!((m.errors.error_rate - 1.0 / 101.0).abs() < 1e-12);
        assert_eq!(m.activities["web"].requests, 100);
        assert_eq!(m.summary.bytes.up, 10_000.0);
        assert!(!m.latency.contains_key("quic"));
    }

    #[test]
    fn intervals_reset_and_gauges_track() {
        let c = Collector::new();
        {
            let _u = c.user_active();
            let _k = c.conn_open(Proto::Tcp);
            c.request(Activity::Web, 1, 2, 1_000);
            let i = c.close_interval(0.0, 1.0);
            assert_eq!(
                (i.completed, i.active_users, i.active_connections),
                (1, Some(1), Some(1))
            );
            assert_eq!(i.rate_per_s, 1.0);
        }
        let i = c.close_interval(1.0, 2.0);
        assert_eq!(
            (i.completed, i.active_users, i.active_connections),
            (0, Some(0), Some(0))
        );
        assert_eq!(c.max_users.load(Ordering::Relaxed), 1);
        let m = c.finish(2.0, 1000.0).summarize(&RunMeta::default());
        assert_eq!(m.intervals.len(), 2);
        assert_eq!(m.protocols["tcp"].connections, 1);
    }
    /// Each connection's account is its last reading minus its first; the body has the
    /// sum, the share and the RTT at each connection's end, and reads back as it was.
    #[test]
    fn tcp_connections_add_their_kernel_view() {
        let c = Collector::new();
        c.session(Activity::Web);
        c.request(Activity::Web, 100, 1000, 10_000_000);
        let info = |retrans, segs, rtt_us| TcpInfo {
            total_retrans: retrans,
            data_segs_out: Some(segs),
            rtt_us,
            rttvar_us: 1000,
            min_rtt_us: Some(rtt_us),
            ..TcpInfo::default()
        };
        c.tcp_kernel(&info(0, 2, 20_000), &info(3, 102, 25_000), "target");
        c.tcp_kernel(&info(1, 1, 20_000), &info(2, 101, 21_000), "target");
        let body = c.finish(10.0, 1000.0).summarize(&RunMeta::default());
        let k = body.protocols["tcp"].tcp_info.clone().unwrap();
        assert_eq!((k.connections, k.retransmits), (2, 4));
        assert_eq!(
            (k.data_segments_out, k.retransmit_pct),
            (Some(200), Some(2.0))
        );
        assert_eq!(k.rtt_ms.count, 2);
        assert_eq!(k.min_rtt_ms, Some(21.0));
        assert!((k.rttvar_ms - 1.0).abs() < 1e-9);
        assert!(body.histograms.contains_key("proto.tcp.tcp_rtt"));
        let (back, _) = npt_result::stats::RunStats::from_body(&body).unwrap();
        let again = back.summarize(&RunMeta::default());
        assert_eq!(again.protocols["tcp"].tcp_info, Some(k));
    }
}
