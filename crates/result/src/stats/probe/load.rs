//! A loaded probe's figures besides its phase histograms (`--under-load`), as a value that adds:
//! parts that ran side by side each ran their own load (goodput, bytes and errors add, the plan
//! is the first part's), runs one after another add their load times. Apart from the probe's
//! stats because the load block has its own rules of addition and its own saved form.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use super::super::{max_opt, min_opt, HistMap};
use crate::common::{Directions, ErrorStats};
use crate::under_load::{self, LoadSpec, Phase, UdpLoad, UnderLoad};

/// A loaded probe's figures besides its phase histograms. Parts that ran side by side each
/// ran their own load: goodput and bytes add, errors add, the plan is the first part's.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LoadStats {
    pub load: LoadSpec,
    /// Each phase's name and planned bounds (s).
    pub phases: Vec<(String, f64, f64)>,
    pub load_started_s: Option<f64>,
    pub load_ended_s: Option<f64>,
    pub goodput_bps: Directions,
    pub bytes: Directions,
    pub load_rtt_ms: Option<npt_stats::Summary>,
    pub errors: ErrorStats,
    /// A UDP load's counts.
    #[serde(default)]
    pub udp: Option<UdpLoad>,
    /// How long the load ran in all, over runs added one after another
    /// ([`crate::stats::Stats::then`]); 0 for one run (its `load_ended_s - load_started_s` is its
    /// time).
    #[serde(default)]
    pub load_time_s: f64,
    /// The load's retransmits (TCP, up) or lost packets (QUIC), as `npt bulk` counts them.
    #[serde(default)]
    pub retransmits: Option<u64>,
    /// TCP: the congestion control the kernel ran on the load's sending streams.
    #[serde(default)]
    pub congestion: Option<String>,
}

impl AddAssign<&LoadStats> for LoadStats {
    fn add_assign(&mut self, rhs: &LoadStats) {
        if self.phases.is_empty() {
            self.load = rhs.load.clone();
            self.phases = rhs.phases.clone();
        }
        self.load_started_s = min_opt(self.load_started_s, rhs.load_started_s);
        self.load_ended_s = max_opt(self.load_ended_s, rhs.load_ended_s);
        self.goodput_bps += &rhs.goodput_bps;
        self.bytes += &rhs.bytes;
        self.load_rtt_ms = self.load_rtt_ms.or(rhs.load_rtt_ms);
        self.errors += &rhs.errors;
        self.retransmits = match (self.retransmits, rhs.retransmits) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.congestion = match (self.congestion.take(), &rhs.congestion) {
            (Some(a), Some(b)) if a != *b => Some(join_names(&a, b)),
            (a, b) => a.or(b.clone()),
        };
        match (&mut self.udp, rhs.udp) {
            (Some(a), Some(b)) => a.add(&b),
            (a @ None, b) => *a = b,
            (Some(_), None) => {}
        }
    }
}

/// Two comma-joined name lists as one: sorted, each name once.
fn join_names(a: &str, b: &str) -> String {
    let names: std::collections::BTreeSet<&str> = a.split(',').chain(b.split(',')).collect();
    names.into_iter().collect::<Vec<_>>().join(",")
}

impl LoadStats {
    /// How long the load ran (s): summed over runs one after another, else this run's span.
    pub(super) fn time_s(&self) -> f64 {
        if self.load_time_s > 0.0 {
            return self.load_time_s;
        }
        match (self.load_started_s, self.load_ended_s) {
            (Some(a), Some(b)) if b > a => b - a,
            _ => 0.0,
        }
    }

    /// A later run's load after this one: bytes and errors add, the goodput is over the
    /// summed time, the plan and phase bounds stay this one's.
    pub(super) fn then(&mut self, later: &LoadStats) {
        let (a, b) = (self.time_s(), later.time_s());
        let goodput =
            super::super::directions_over_time(&self.goodput_bps, a, &later.goodput_bps, b);
        let (started, ended) = (self.load_started_s, self.load_ended_s);
        *self += later;
        if self.phases.len() == later.phases.len() && started.is_some() {
            (self.load_started_s, self.load_ended_s) = (started, ended);
        }
        self.goodput_bps = goodput;
        self.load_time_s = a + b;
    }

    pub(super) fn from_saved(u: &UnderLoad) -> LoadStats {
        LoadStats {
            load: u.load.clone(),
            phases: u
                .phases
                .iter()
                .map(|p| (p.name.clone(), p.start_s, p.end_s))
                .collect(),
            load_started_s: u.load_started_s,
            load_ended_s: u.load_ended_s,
            goodput_bps: u.goodput_bps,
            bytes: u.bytes,
            load_rtt_ms: u.load_rtt_ms,
            errors: ErrorStats::from_block(&u.load_errors, u.load.streams.into()),
            udp: u.udp,
            load_time_s: 0.0,
            retransmits: u.retransmits,
            congestion: u.congestion.clone(),
        }
    }

    /// The block, its phase RTTs from `h`: per-phase summaries, the increase from idle to
    /// loaded, and the responsiveness from the loaded phase's trimmed mean.
    pub(super) fn block(&self, h: &HistMap) -> UnderLoad {
        let phases: Vec<Phase> = self
            .phases
            .iter()
            .map(|(name, start_s, end_s)| Phase {
                name: name.clone(),
                start_s: *start_s,
                end_s: *end_s,
                rtt_ms: h.summary(&under_load::hist_name(name)),
            })
            .collect();
        let get = |name: &str| phases.iter().find(|p| p.name == name).map(|p| p.rtt_ms);
        let (idle, loaded) = (get("idle"), get("loaded"));
        let both = match (idle, loaded) {
            (Some(i), Some(l)) if i.count > 0 && l.count > 0 => Some((i, l)),
            _ => None,
        };
        let trimmed = |name: &str| {
            h.get(&under_load::hist_name(name))
                .filter(|x| !x.is_empty())
                .map(|x| x.trimmed_mean_ns(under_load::RPM_TRIM) / 1e6)
        };
        let rpm_rtt_ms = trimmed("loaded");
        UnderLoad {
            load: self.load.clone(),
            phases,
            load_started_s: self.load_started_s,
            load_ended_s: self.load_ended_s,
            increase_p50_ms: both.map(|(i, l)| l.p50 - i.p50),
            increase_p50_x: both.and_then(|(i, l)| (i.p50 > 0.0).then(|| l.p50 / i.p50)),
            increase_p99_ms: both.map(|(i, l)| l.p99 - i.p99),
            rpm: rpm_rtt_ms.and_then(under_load::rpm),
            rpm_rtt_ms,
            idle_rpm: trimmed("idle").and_then(under_load::rpm),
            goodput_bps: self.goodput_bps,
            bytes: self.bytes,
            load_rtt_ms: self.load_rtt_ms,
            load_errors: self.errors.block(),
            udp: self.udp,
            retransmits: self.retransmits,
            congestion: self.congestion.clone(),
        }
    }
}
