//! A probe's measurements as a value that adds ([`ProbeStats`]) and its body
//! ([`ProbeStats::summarize`]), for the probe's runner at the end of a run and for `npt merge`.
//!
//! What a probe's document keeps only as a figure of the whole part, and how parts add: the
//! send phase's rates (packets and bits per second of parts that ran side by side add, the
//! longest send phase stands), `total_ms` and `total_after_connect_ms` (the longest), the proxy handshakes' means (weighted
//! by handshakes) and the tester's health ([`crate::health`]). Parts written before the TCP
//! phase histograms existed carry only mean connect and first-packet times: a merge with one of
//! them reports the means weighted by clients and no distribution, as merges always did. Those
//! figures are values of their own (`figures.rs`), and so is the load of `--under-load`
//! (`load.rs`).

use std::collections::BTreeMap;
use std::ops::AddAssign;

use npt_stats::{Histogram, JitterMean};
use serde::{Deserialize, Serialize};

use super::directions::DirStats;
use super::{max_opt, BodyError, HistMap, Stats, WeightedMean};
use crate::common::{jitter_mean, loss_pct, Directions, ErrorStats, NptLatency};
use crate::health::Health;
use crate::interval::Intervals;
use crate::probe::{hist, ProbeBody, ProbePhases, ProbeSummary};
use crate::tcpinfo::TcpKernelStats;

mod figures;
mod load;

pub use figures::{LegacyPhases, ProxyStats, SendRates};
pub use load::LoadStats;

/// What the parts of one probe share: its configuration as the summary states it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeMeta {
    /// `udp` or `tcp`.
    pub protocol: String,
    pub target: String,
    /// `interval`, `rate` or `relay`.
    pub mode: String,
    /// `rate` mode: the corrected RTT is measured too.
    pub open_loop: bool,
    /// `framed` or `raw`.
    pub framing: String,
    pub size: u32,
    pub loss_timeout_ms: f64,
}

/// A probe's measurements. Counters, histograms ([`hist`]), jitter and errors add exactly.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ProbeStats {
    /// Client flows.
    pub clients: u32,
    /// Sent, received, lost, late, duplicated, reordered.
    #[serde(flatten)]
    pub packets: npt_stats::PacketCounts,
    /// Refused by the server.
    pub refused: u64,
    /// The server's refusal notices by reason.
    pub refusal_notices: BTreeMap<String, u64>,
    pub corrupt: u64,
    pub foreign: u64,
    pub stale: u64,
    /// Application payload bytes each way.
    pub bytes: Directions,
    pub rates: SendRates,
    /// Per direction, when the server told what it saw (histograms in `histograms`).
    pub directions: Option<DirStats>,
    /// Why there is no per-direction figure (`raw`, `server`), when there is none.
    pub round_trip_only: Option<String>,
    /// Which far end answered ([`crate::far_end`]); None in parts written before it was.
    pub far_end: Option<String>,
    /// What the first foreign reply looked like.
    pub foreign_example: Option<String>,
    /// `rtt`, `rtt_corrected` (open loop), `ipdv`, and for TCP `connect`, `first_packet`,
    /// `first_echo`.
    pub histograms: HistMap,
    /// RFC 3550 jitter of the flows, sample-weighted.
    pub jitter: JitterMean,
    /// A part written before `jitter_samples` is in: the jitter is weighted by its replies.
    pub jitter_inexact: bool,
    pub errors: ErrorStats,
    /// TCP: from the first connect until the last reply.
    pub total_ms: Option<f64>,
    /// TCP: from the first connection up until the last reply (quic-tun's total).
    #[serde(default)]
    pub total_after_connect_ms: Option<f64>,
    /// A part with TCP phase histograms but none of the first echo alone is in (written
    /// before it was recorded): the first echo is then not stated.
    #[serde(default)]
    pub first_echo_inexact: bool,
    /// Mean connect and first-packet times of saved parts, for merges with parts older than
    /// the phase histograms.
    pub legacy_phases: LegacyPhases,
    /// A part whose connect time has no histogram is in.
    pub phases_inexact: bool,
    /// `--via`: the proxy handshakes.
    pub proxy: Option<ProxyStats>,
    /// TCP: the kernel's view of the connections (its RTT samples are `histograms.tcp_rtt`).
    pub tcp_info: Option<TcpKernelStats>,
    /// DSCP/ECN sent and replies by the marking they came back with.
    pub marking: crate::marking::Marking,
    pub health: Health,
    pub intervals: Intervals,
    /// `--under-load`: what the phases and the load were (their RTTs are in `histograms`).
    pub under_load: Option<LoadStats>,
}

impl AddAssign<&ProbeStats> for ProbeStats {
    fn add_assign(&mut self, rhs: &ProbeStats) {
        self.clients += rhs.clients;
        self.packets += &rhs.packets;
        self.refused += rhs.refused;
        for (k, n) in &rhs.refusal_notices {
            *self.refusal_notices.entry(k.clone()).or_default() += n;
        }
        self.corrupt += rhs.corrupt;
        self.foreign += rhs.foreign;
        self.stale += rhs.stale;
        self.bytes += &rhs.bytes;
        self.rates += &rhs.rates;
        match (&mut self.directions, &rhs.directions) {
            (Some(a), Some(b)) => *a += b,
            (a @ None, b) => *a = b.clone(),
            (Some(_), None) => {}
        }
        if self.round_trip_only.is_none() {
            self.round_trip_only = rhs.round_trip_only.clone();
        }
        self.far_end = crate::far_end::merge(self.far_end.as_deref(), rhs.far_end.as_deref());
        if self.foreign_example.is_none() {
            self.foreign_example = rhs.foreign_example.clone();
        }
        self.histograms += &rhs.histograms;
        self.jitter += &rhs.jitter;
        self.jitter_inexact |= rhs.jitter_inexact;
        self.errors += &rhs.errors;
        self.total_after_connect_ms = after_connect(self, rhs, max_opt);
        self.total_ms = max_opt(self.total_ms, rhs.total_ms);
        self.first_echo_inexact |= rhs.first_echo_inexact;
        self.legacy_phases += &rhs.legacy_phases;
        self.phases_inexact |= rhs.phases_inexact;
        match (&mut self.proxy, &rhs.proxy) {
            (Some(a), Some(b)) => *a += b,
            (a @ None, b) => *a = b.clone(),
            (Some(_), None) => {}
        }
        match (&mut self.tcp_info, &rhs.tcp_info) {
            (Some(a), Some(b)) => *a += b,
            (a @ None, b) => *a = b.clone(),
            (Some(_), None) => {}
        }
        self.marking += &rhs.marking;
        self.health += &rhs.health;
        self.intervals += &rhs.intervals;
        match (&mut self.under_load, &rhs.under_load) {
            (Some(a), Some(b)) => *a += b,
            (a @ None, b) => *a = b.clone(),
            (Some(_), None) => {}
        }
    }
}

/// `total_after_connect_ms` of two parts added by `f`: none when either part has a total but
/// not this one (written before it was recorded), so a merge never states a part's figure as
/// the whole's.
fn after_connect(
    a: &ProbeStats,
    b: &ProbeStats,
    f: fn(Option<f64>, Option<f64>) -> Option<f64>,
) -> Option<f64> {
    let missing = |s: &ProbeStats| s.total_ms.is_some() && s.total_after_connect_ms.is_none();
    if missing(a) || missing(b) {
        return None;
    }
    f(a.total_after_connect_ms, b.total_after_connect_ms)
}

/// The TCP phases as the summary states them.
struct Phases {
    /// The distributions (exact histograms only).
    exact: Option<ProbePhases>,
    connect_ms: Option<f64>,
    first_packet_ms: Option<f64>,
    first_echo_ms: Option<f64>,
}

impl ProbeStats {
    /// The TCP phases: exact from the histograms, or the saved means when a part older than
    /// them is in (no distribution then, and no first echo alone), or none (UDP, or no
    /// connection made).
    fn phases(&self) -> Phases {
        if self.phases_inexact {
            let mean = |m: Option<WeightedMean>| m.map(|m| m.value());
            let l = &self.legacy_phases;
            return Phases {
                exact: None,
                connect_ms: mean(l.connect),
                first_packet_ms: mean(l.first_packet),
                first_echo_ms: None,
            };
        }
        match self.histograms.get(hist::CONNECT) {
            Some(c) if !c.is_empty() => {
                let echo = match self.histograms.get(hist::FIRST_ECHO) {
                    Some(e) if !self.first_echo_inexact => Some(e.summary()),
                    _ => None,
                };
                let p = ProbePhases {
                    connect: c.summary(),
                    first_packet: self.histograms.summary(hist::FIRST_PACKET),
                    first_echo: echo,
                };
                let connect = Some(p.connect.mean);
                let first = (p.first_packet.count > 0).then_some(p.first_packet.mean);
                let echo = echo.filter(|e| e.count > 0).map(|e| e.mean);
                Phases {
                    exact: Some(p),
                    connect_ms: connect,
                    first_packet_ms: first,
                    first_echo_ms: echo,
                }
            }
            _ => Phases {
                exact: None,
                connect_ms: None,
                first_packet_ms: None,
                first_echo_ms: None,
            },
        }
    }

    fn saved(&self, name: &str) -> npt_stats::SerializedHistogram {
        match self.histograms.get(name) {
            Some(h) => h.to_serialized(),
            None => Histogram::new().to_serialized(),
        }
    }
}

impl Stats for ProbeStats {
    type Body = ProbeBody;
    type Meta = ProbeMeta;

    /// Rounds of one probe: the flows are the same ones again (`clients` stays), the send
    /// phases and TCP's total time add, rates are over the summed send time, the load's
    /// goodput over its summed time.
    fn then(&mut self, later: &ProbeStats) {
        let clients = self.clients.max(later.clients);
        let rates = self.rates.then(&later.rates);
        let total_ms = super::add_opt(self.total_ms, later.total_ms);
        let after = after_connect(self, later, super::add_opt);
        let mut load = self.under_load.take();
        match (&mut load, &later.under_load) {
            (Some(a), Some(b)) => a.then(b),
            (a @ None, b) => a.clone_from(b),
            (Some(_), None) => {}
        }
        *self += later;
        self.clients = clients;
        self.rates = rates;
        self.total_ms = total_ms;
        self.total_after_connect_ms = after;
        self.under_load = load;
    }

    fn from_body(b: &ProbeBody) -> Result<(ProbeStats, ProbeMeta), BodyError> {
        let s = &b.summary;
        let intervals = Intervals::of(b.intervals.clone());
        intervals
            .check()
            .map_err(|(name, source)| BodyError { name, source })?;
        let weight = f64::from(s.clients);
        let stats = ProbeStats {
            clients: s.clients,
            packets: s.packets,
            refused: s.refused_by_server,
            refusal_notices: s.refusal_notices.clone(),
            corrupt: s.corrupt,
            foreign: s.foreign,
            stale: s.stale,
            bytes: s.bytes,
            directions: s.directions.as_ref().map(DirStats::from_block),
            round_trip_only: s.round_trip_only.clone(),
            far_end: s.far_end.clone(),
            foreign_example: s.foreign_example.clone(),
            rates: SendRates {
                pps: s.pps,
                pps_received: s.pps_received,
                send_duration_s: s.send_duration_s,
                bandwidth_bps: s.bandwidth_bps,
            },
            histograms: HistMap::from_saved(&b.histograms)?,
            jitter: jitter_mean(s.jitter_ms, s.jitter_samples, s.packets.received),
            jitter_inexact: s.jitter_samples.is_none(),
            errors: ErrorStats::from_block(&b.errors, s.packets.sent),
            total_ms: s.total_ms,
            total_after_connect_ms: s.total_after_connect_ms,
            first_echo_inexact: b.histograms.contains_key(hist::CONNECT)
                && !b.histograms.contains_key(hist::FIRST_ECHO),
            legacy_phases: LegacyPhases {
                connect: s.connect_ms.map(|v| WeightedMean::of(v, weight)),
                first_packet: s.first_packet_ms.map(|v| WeightedMean::of(v, weight)),
            },
            phases_inexact: s.connect_ms.is_some() && !b.histograms.contains_key(hist::CONNECT),
            proxy: s.proxy.as_ref().map(ProxyStats::from_saved),
            tcp_info: s.tcp_info.as_ref().map(TcpKernelStats::from_saved),
            marking: s.marking.clone().unwrap_or_default(),
            health: b.health,
            intervals,
            under_load: b.under_load.as_ref().map(LoadStats::from_saved),
        };
        let meta = ProbeMeta {
            protocol: s.protocol.clone(),
            target: s.target.clone(),
            mode: s.mode.clone(),
            open_loop: s.open_loop,
            framing: s.framing.clone(),
            size: s.size,
            loss_timeout_ms: s.loss_timeout_ms,
        };
        Ok((stats, meta))
    }

    fn summarize(&self, m: &ProbeMeta) -> ProbeBody {
        let h = &self.histograms;
        let rtt = h.summary(hist::RTT);
        let Phases {
            exact: phases,
            connect_ms,
            first_packet_ms,
            first_echo_ms,
        } = self.phases();
        let exact_phases = phases.is_some();
        let exact_echo = phases.as_ref().is_some_and(|p| p.first_echo.is_some());
        let summary = ProbeSummary {
            protocol: m.protocol.clone(),
            target: m.target.clone(),
            mode: m.mode.clone(),
            open_loop: m.open_loop,
            framing: m.framing.clone(),
            clients: self.clients,
            size: m.size,
            packets: self.packets,
            refused_by_server: self.refused,
            refusal_notices: self.refusal_notices.clone(),
            loss_pct: loss_pct(
                self.packets.lost,
                self.packets.sent.saturating_sub(self.refused),
            ),
            directions: self
                .directions
                .as_ref()
                .map(|d| d.block(self.packets.sent, self.refused, h)),
            round_trip_only: self
                .round_trip_only
                .clone()
                .filter(|_| self.directions.is_none()),
            pps: self.rates.pps,
            pps_received: self.rates.pps_received,
            send_duration_s: self.rates.send_duration_s,
            loss_timeout_ms: m.loss_timeout_ms,
            rtt_ms: rtt,
            rtt_corrected_ms: m.open_loop.then(|| h.summary(hist::RTT_CORRECTED)),
            jitter_ms: self.jitter.value_ns() / 1e6,
            jitter_samples: (!self.jitter_inexact).then(|| self.jitter.samples()),
            ipdv_ms: h.summary(hist::IPDV),
            bandwidth_bps: self.rates.bandwidth_bps,
            bytes: self.bytes,
            first_packet_ms,
            connect_ms,
            first_echo_ms,
            phases_ms: phases,
            total_ms: self.total_ms,
            total_after_connect_ms: self.total_after_connect_ms,
            proxy: self.proxy.as_ref().map(ProxyStats::phases),
            tcp_info: self
                .tcp_info
                .as_ref()
                .map(|k| k.block(h.summary(hist::TCP_RTT))),
            marking: self.marking.block(),
            corrupt: self.corrupt,
            foreign: self.foreign,
            foreign_example: self.foreign_example.clone(),
            far_end: self.far_end.clone(),
            stale: self.stale,
        };
        let mut histograms = BTreeMap::new();
        histograms.insert(hist::RTT.to_string(), self.saved(hist::RTT));
        if m.open_loop {
            let c = self.saved(hist::RTT_CORRECTED);
            histograms.insert(hist::RTT_CORRECTED.to_string(), c);
        }
        histograms.insert(hist::IPDV.to_string(), self.saved(hist::IPDV));
        if exact_phases {
            for name in [hist::CONNECT, hist::FIRST_PACKET] {
                histograms.insert(name.to_string(), self.saved(name));
            }
        }
        if exact_echo {
            let e = self.saved(hist::FIRST_ECHO);
            histograms.insert(hist::FIRST_ECHO.to_string(), e);
        }
        if self.tcp_info.is_some() {
            histograms.insert(hist::TCP_RTT.to_string(), self.saved(hist::TCP_RTT));
        }
        if self.under_load.is_some() {
            for name in hist::PHASES {
                histograms.insert(name.to_string(), self.saved(name));
            }
        }
        if self.directions.is_some() {
            for name in crate::directions::hist::ALL {
                if self.histograms.contains(name) {
                    histograms.insert(name.to_string(), self.saved(name));
                }
            }
        }
        ProbeBody {
            summary,
            health: self.health,
            latency: BTreeMap::from([(m.protocol.clone(), NptLatency::from(&rtt))]),
            errors: self.errors.block(),
            histograms,
            intervals: self.intervals.joined(),
            under_load: self.under_load.as_ref().map(|u| u.block(h)),
        }
    }
}
