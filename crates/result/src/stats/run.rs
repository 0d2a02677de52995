//! A run's measurements (simulated users) as a value that adds ([`RunStats`]) and its body
//! ([`RunStats::summarize`]), for `npt run` at the end and for `npt merge`.
//!
//! Every latency (per protocol, per activity, per interval, the NPT block, the timer
//! lateness) comes from the histograms, named by [`crate::run::hist`]. What a run's document
//! keeps only as a figure of the whole part, and how parts add: rates over its own clock
//! (requests and bits per second add), its length (the longest), peaks of active users and
//! connections (they add: an upper bound, the parts' peaks need not coincide), the oldest
//! request in flight at the end (the oldest), a transfer's throughput (the parts' values
//! weighted by their requests) and the tester's health ([`crate::health`]).

use std::collections::BTreeMap;
use std::ops::AddAssign;

use npt_stats::JitterMean;
use serde::{Deserialize, Serialize};

use super::setup::{SetupMeta, SetupStats};
use super::{add_opt, BodyError, HistMap, Stats, WeightedMean};
use crate::common::{jitter_mean, loss_pct, Directions, ErrorStats, NptLatency};
use crate::health::Health;
use crate::interval::Intervals;
use crate::run::{hist, ActivityStats, GameStats, ProtocolStats, RunBody, RunSummary};
use crate::tcpinfo::TcpKernelStats;

/// What the parts of one run share: its configuration as the summary states it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// `closed` or `open`.
    pub model: String,
    pub targets: Vec<String>,
    pub quic_target: Option<String>,
    pub mix: String,
    pub seed: u64,
    pub ramp_up_s: f64,
    /// Each protocol's setup block's own description (the layers, how the base was measured).
    #[serde(default)]
    pub setup: BTreeMap<String, SetupMeta>,
}

/// A run's measurements.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunStats {
    /// Users of the closed model, or the open model's most active at once.
    pub users: u32,
    pub arrival_rate_per_s: Option<f64>,
    /// The run's length.
    pub duration_s: f64,
    pub sessions_started: u64,
    pub sessions_completed: u64,
    /// Completed requests over every protocol.
    pub requests: u64,
    pub requests_per_s: f64,
    pub bytes: Directions,
    pub throughput_bps: Directions,
    pub max_active_users: u64,
    pub max_active_connections: u64,
    pub arrivals_dropped: u64,
    pub in_flight_at_end: u64,
    pub oldest_in_flight_ms: f64,
    /// Keyed `tcp`, `quic`, `udp`: the protocols a run used.
    pub protocols: BTreeMap<String, ProtocolCounts>,
    /// Keyed by activity: those in the mix.
    pub activities: BTreeMap<String, ActivityCounts>,
    pub histograms: HistMap,
    pub errors: ErrorStats,
    /// CPU, memory and late wakeups; the lateness figures come from the histogram.
    pub health: Health,
    pub intervals: Intervals,
}

/// One protocol's counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProtocolCounts {
    pub requests: u64,
    pub errors: u64,
    pub connections: u64,
    pub bytes: Directions,
    pub throughput_bps: Directions,
    /// TCP: the kernel's view of the connections (RTT samples in `proto.tcp.tcp_rtt`).
    pub tcp_info: Option<TcpKernelStats>,
    /// Each new connection's layers and the base round trips.
    #[serde(default)]
    pub setup: Option<SetupStats>,
}

impl AddAssign<&ProtocolCounts> for ProtocolCounts {
    fn add_assign(&mut self, rhs: &ProtocolCounts) {
        self.requests += rhs.requests;
        self.errors += rhs.errors;
        self.connections += rhs.connections;
        self.bytes += &rhs.bytes;
        self.throughput_bps += &rhs.throughput_bps;
        match (&mut self.tcp_info, &rhs.tcp_info) {
            (Some(a), Some(b)) => *a += b,
            (a @ None, b) => *a = b.clone(),
            (Some(_), None) => {}
        }
        // Parts of one run: their connections add, and they are still one run.
        SetupStats::add_part(&mut self.setup, rhs.setup.as_ref());
    }
}

/// One activity's counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ActivityCounts {
    /// The protocol it runs over.
    pub protocol: String,
    pub sessions: u64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: Directions,
    /// Download/upload: bits per second of the transfers.
    pub transfer_bps: Option<WeightedMean>,
    pub game: Option<GameTotals>,
}

impl AddAssign<&ActivityCounts> for ActivityCounts {
    fn add_assign(&mut self, rhs: &ActivityCounts) {
        if self.protocol.is_empty() {
            self.protocol = rhs.protocol.clone();
        }
        self.sessions += rhs.sessions;
        self.requests += rhs.requests;
        self.errors += rhs.errors;
        self.bytes += &rhs.bytes;
        match (&mut self.transfer_bps, rhs.transfer_bps) {
            (Some(a), Some(b)) => *a += &b,
            (a @ None, b) => *a = b,
            (Some(_), None) => {}
        }
        match (&mut self.game, &rhs.game) {
            (Some(a), Some(b)) => *a += b,
            (a @ None, b) => *a = b.clone(),
            (Some(_), None) => {}
        }
    }
}

/// Game sessions' packet counters and jitter.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GameTotals {
    /// Sent, received, lost, late, duplicated, reordered.
    #[serde(flatten)]
    pub packets: npt_stats::PacketCounts,
    /// Refused by the server (never path loss).
    #[serde(default)]
    pub refused: u64,
    pub jitter: JitterMean,
    /// A part written before `jitter_samples` is in.
    pub jitter_inexact: bool,
    /// The configured loss timeout (the first part's).
    pub loss_timeout_ms: f64,
}

impl AddAssign<&GameTotals> for GameTotals {
    fn add_assign(&mut self, rhs: &GameTotals) {
        self.packets += &rhs.packets;
        self.refused += rhs.refused;
        self.jitter += &rhs.jitter;
        self.jitter_inexact |= rhs.jitter_inexact;
    }
}

impl GameTotals {
    fn from_saved(g: &GameStats) -> GameTotals {
        GameTotals {
            packets: g.packets,
            refused: g.refused_by_server,
            jitter: jitter_mean(g.jitter_ms, g.jitter_samples, g.packets.received),
            jitter_inexact: g.jitter_samples.is_none(),
            loss_timeout_ms: g.loss_timeout_ms,
        }
    }

    fn stats(&self) -> GameStats {
        GameStats {
            packets: self.packets,
            refused_by_server: self.refused,
            loss_pct: loss_pct(
                self.packets.lost,
                self.packets.sent.saturating_sub(self.refused),
            ),
            jitter_ms: self.jitter.value_ns() / 1e6,
            jitter_samples: (!self.jitter_inexact).then(|| self.jitter.samples()),
            loss_timeout_ms: self.loss_timeout_ms,
        }
    }
}

impl AddAssign<&RunStats> for RunStats {
    fn add_assign(&mut self, rhs: &RunStats) {
        self.users += rhs.users;
        self.arrival_rate_per_s = add_opt(self.arrival_rate_per_s, rhs.arrival_rate_per_s);
        self.duration_s = self.duration_s.max(rhs.duration_s);
        self.sessions_started += rhs.sessions_started;
        self.sessions_completed += rhs.sessions_completed;
        self.requests += rhs.requests;
        self.requests_per_s += rhs.requests_per_s;
        self.bytes += &rhs.bytes;
        self.throughput_bps += &rhs.throughput_bps;
        self.max_active_users += rhs.max_active_users;
        self.max_active_connections += rhs.max_active_connections;
        self.arrivals_dropped += rhs.arrivals_dropped;
        self.in_flight_at_end += rhs.in_flight_at_end;
        self.oldest_in_flight_ms = self.oldest_in_flight_ms.max(rhs.oldest_in_flight_ms);
        for (k, p) in &rhs.protocols {
            *self.protocols.entry(k.clone()).or_default() += p;
        }
        for (k, a) in &rhs.activities {
            *self.activities.entry(k.clone()).or_default() += a;
        }
        self.histograms += &rhs.histograms;
        self.errors += &rhs.errors;
        self.health += &rhs.health;
        self.intervals += &rhs.intervals;
    }
}

impl Stats for RunStats {
    type Body = RunBody;
    type Meta = RunMeta;

    fn from_body(b: &RunBody) -> Result<(RunStats, RunMeta), BodyError> {
        let s = &b.summary;
        let intervals = Intervals::of(b.intervals.clone());
        intervals
            .check()
            .map_err(|(name, source)| BodyError { name, source })?;
        let mut protocols = BTreeMap::new();
        let mut setup = BTreeMap::new();
        for (k, p) in &b.protocols {
            let block = p.setup.as_ref().map(SetupStats::from_body).transpose()?;
            let c = ProtocolCounts {
                requests: p.requests,
                errors: p.errors,
                connections: p.connections,
                bytes: p.bytes,
                throughput_bps: p.throughput_bps,
                tcp_info: p.tcp_info.as_ref().map(TcpKernelStats::from_saved),
                setup: block.as_ref().map(|(s, _)| s.clone()),
            };
            if let Some((_, m)) = block {
                setup.insert(k.clone(), m);
            }
            protocols.insert(k.clone(), c);
        }
        let activities = b
            .activities
            .iter()
            .map(|(k, a)| {
                let c = ActivityCounts {
                    protocol: a.protocol.clone(),
                    sessions: a.sessions,
                    requests: a.requests,
                    errors: a.errors,
                    bytes: a.bytes,
                    transfer_bps: a
                        .transfer_bps
                        .map(|t| WeightedMean::of(t, a.requests as f64)),
                    game: a.game.as_ref().map(GameTotals::from_saved),
                };
                (k.clone(), c)
            })
            .collect();
        let stats = RunStats {
            users: s.users,
            arrival_rate_per_s: s.arrival_rate_per_s,
            duration_s: s.duration_s,
            sessions_started: s.sessions_started,
            sessions_completed: s.sessions_completed,
            requests: s.requests,
            requests_per_s: s.requests_per_s,
            bytes: s.bytes,
            throughput_bps: s.throughput_bps,
            max_active_users: s.max_active_users,
            max_active_connections: s.max_active_connections,
            arrivals_dropped: s.arrivals_dropped,
            in_flight_at_end: s.in_flight_at_end,
            oldest_in_flight_ms: s.oldest_in_flight_ms,
            protocols,
            activities,
            histograms: HistMap::from_saved(&b.histograms)?,
            errors: ErrorStats::from_block(&b.errors, s.requests + b.errors.total_errors),
            health: b.health,
            intervals,
        };
        let meta = RunMeta {
            model: s.model.clone(),
            targets: s.targets.clone(),
            quic_target: s.quic_target.clone(),
            mix: s.mix.clone(),
            seed: s.seed,
            ramp_up_s: s.ramp_up_s,
            setup,
        };
        Ok((stats, meta))
    }

    fn summarize(&self, m: &RunMeta) -> RunBody {
        let h = &self.histograms;
        let protocols: BTreeMap<String, ProtocolStats> = self
            .protocols
            .iter()
            .map(|(p, c)| {
                let stats = ProtocolStats {
                    requests: c.requests,
                    errors: c.errors,
                    connections: c.connections,
                    bytes: c.bytes,
                    throughput_bps: c.throughput_bps,
                    latency_ms: h.summary(&hist::proto(p, hist::LATENCY)),
                    connect_ms: h.summary(&hist::proto(p, hist::CONNECT)),
                    handshake_ms: h.summary(&hist::proto(p, hist::HANDSHAKE)),
                    first_request_ms: h.summary(&hist::proto(p, hist::FIRST_REQUEST)),
                    proxy_ms: h.summary_opt(&hist::proto(p, hist::PROXY)),
                    tcp_info: c
                        .tcp_info
                        .as_ref()
                        .map(|k| k.block(h.summary(&hist::proto(p, hist::TCP_RTT)))),
                    setup: match (&c.setup, m.setup.get(p)) {
                        (Some(s), Some(meta)) => Some(s.summarize(meta)),
                        _ => None,
                    },
                };
                (p.clone(), stats)
            })
            .collect();
        let activities = self
            .activities
            .iter()
            .map(|(a, c)| {
                let stats = ActivityStats {
                    protocol: c.protocol.clone(),
                    sessions: c.sessions,
                    requests: c.requests,
                    errors: c.errors,
                    bytes: c.bytes,
                    latency_ms: h.summary(&hist::activity(a, hist::LATENCY)),
                    ttfb_ms: h.summary_opt(&hist::activity(a, hist::TTFB)),
                    transfer_bps: c.transfer_bps.map(|t| t.value()),
                    game: c.game.as_ref().map(GameTotals::stats),
                };
                (a.clone(), stats)
            })
            .collect();
        let latency = protocols
            .iter()
            .filter(|(_, s)| s.requests > 0)
            .map(|(p, s)| (p.clone(), NptLatency::from(&s.latency_ms)))
            .collect();
        let summary = RunSummary {
            model: m.model.clone(),
            targets: m.targets.clone(),
            quic_target: m.quic_target.clone(),
            users: self.users,
            arrival_rate_per_s: self.arrival_rate_per_s,
            mix: m.mix.clone(),
            seed: m.seed,
            duration_s: self.duration_s,
            ramp_up_s: m.ramp_up_s,
            sessions_started: self.sessions_started,
            sessions_completed: self.sessions_completed,
            requests: self.requests,
            requests_per_s: self.requests_per_s,
            bytes: self.bytes,
            throughput_bps: self.throughput_bps,
            max_active_users: self.max_active_users,
            max_active_connections: self.max_active_connections,
            arrivals_dropped: self.arrivals_dropped,
            in_flight_at_end: self.in_flight_at_end,
            oldest_in_flight_ms: self.oldest_in_flight_ms,
        };
        RunBody {
            summary,
            health: Health {
                timer_lateness_ms: Some(h.summary(hist::TIMER_LATENESS)),
                ..self.health
            },
            latency,
            errors: self.errors.block(),
            protocols,
            activities,
            histograms: h.saved_all(),
            intervals: self.intervals.joined(),
        }
    }
}
