//! An http run's measurements (the gateway benchmark) as a value that adds ([`HttpStats`]) and
//! its body ([`HttpStats::summarize`]), for `npt http` at the end and for `npt merge`.
//!
//! Latency (corrected and uncorrected), the phases and each host's latency come from the
//! histograms ([`crate::http::hist`]). What the document keeps only as a figure of the whole
//! part, and how parts add: rates over its own clock (requests and bits per second add), its
//! length (the longest), the oldest request in flight at the end (the oldest), each host's
//! time to first byte and uncorrected latency (no histogram is saved for them: the first
//! part's stand, [`Dist`]), the cold start (the first part's) and the tester's health.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use npt_stats::Histogram;
use serde::{Deserialize, Serialize};

use super::setup::{SetupMeta, SetupStats};
use super::{add_codes, add_opt, max_opt, BodyError, Dist, HistMap, Stats};
use crate::common::{Directions, ErrorStats, NptLatency};
use crate::health::Health;
use crate::http::{hist, ColdStart, HostResult, HttpBody, HttpSummary, Phases};
use crate::interval::Intervals;

/// What the parts of one http run share: its configuration as the summary states it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpMeta {
    pub url: String,
    pub target: String,
    pub method: String,
    /// `http/1.1` or `h2`.
    pub protocol: String,
    /// `--http2-fallback`: why the run used HTTP/1.1.
    pub downgrade: Option<String>,
    pub tls: bool,
    /// `closed` or `open`.
    pub mode: String,
    /// `--rate`: latency is measured from the intended send time, and from the actual one.
    pub open_loop: bool,
    pub streams: u32,
    pub new_conn: bool,
    /// The setup block's own: the layers the connections set up, how the base round trip
    /// was measured.
    pub setup: Option<SetupMeta>,
}

impl HttpMeta {
    /// The configuration fields of a summary.
    pub fn of(s: &HttpSummary) -> HttpMeta {
        HttpMeta {
            url: s.url.clone(),
            target: s.target.clone(),
            method: s.method.clone(),
            protocol: s.protocol.clone(),
            downgrade: s.downgrade.clone(),
            tls: s.tls,
            mode: s.mode.clone(),
            open_loop: s.open_loop,
            streams: s.streams,
            new_conn: s.new_conn,
            setup: None,
        }
    }
}

/// An http run's measurements.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HttpStats {
    /// Concurrent connections (`-c`).
    pub connections: u32,
    /// `--rate`, requests per second.
    pub rate: Option<f64>,
    /// Responses received completely, and those with a 2xx status.
    pub requests: u64,
    pub ok: u64,
    pub in_flight_at_end: u64,
    pub oldest_in_flight_ms: f64,
    pub rps: f64,
    /// The measured phase's length.
    pub duration_s: f64,
    pub connections_opened: u64,
    pub status: BTreeMap<String, u64>,
    pub bytes: Directions,
    pub throughput_bps: Directions,
    /// Per virtual host.
    pub hosts: BTreeMap<String, HostCounts>,
    pub histograms: HistMap,
    pub errors: ErrorStats,
    pub cold_start: Option<ColdStart>,
    pub health: Health,
    pub intervals: Intervals,
    /// Each new connection's layers and the base round trips (absent through `--via`).
    pub setup: Option<SetupStats>,
}

/// One virtual host's counters; its latency histogram is `hosts.<host>` in the map.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HostCounts {
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub rps: f64,
    pub status: BTreeMap<String, u64>,
    pub bytes_received: u64,
    /// Open loop: latency from the actual send.
    pub latency_uncorrected: Dist,
    pub ttfb: Dist,
    /// Per-host load (`--host NAME=N`, `NAME=R/s`): the host's own connections and rate.
    pub connections: Option<u32>,
    pub rate: Option<f64>,
}

impl AddAssign<&HostCounts> for HostCounts {
    fn add_assign(&mut self, rhs: &HostCounts) {
        self.requests += rhs.requests;
        self.ok += rhs.ok;
        self.errors += rhs.errors;
        self.rps += rhs.rps;
        add_codes(&mut self.status, &rhs.status);
        self.bytes_received += rhs.bytes_received;
        self.latency_uncorrected += &rhs.latency_uncorrected;
        self.ttfb += &rhs.ttfb;
        self.connections = match (self.connections, rhs.connections) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.rate = add_opt(self.rate, rhs.rate);
    }
}

impl AddAssign<&HttpStats> for HttpStats {
    fn add_assign(&mut self, rhs: &HttpStats) {
        self.connections += rhs.connections;
        self.rate = add_opt(self.rate, rhs.rate);
        self.requests += rhs.requests;
        self.ok += rhs.ok;
        self.in_flight_at_end += rhs.in_flight_at_end;
        self.oldest_in_flight_ms = self.oldest_in_flight_ms.max(rhs.oldest_in_flight_ms);
        self.rps += rhs.rps;
        self.duration_s = self.duration_s.max(rhs.duration_s);
        self.connections_opened += rhs.connections_opened;
        add_codes(&mut self.status, &rhs.status);
        self.bytes += &rhs.bytes;
        self.throughput_bps += &rhs.throughput_bps;
        for (k, h) in &rhs.hosts {
            *self.hosts.entry(k.clone()).or_default() += h;
        }
        self.histograms += &rhs.histograms;
        self.errors += &rhs.errors;
        if self.cold_start.is_none() {
            self.cold_start = rhs.cold_start.clone();
        }
        self.health += &rhs.health;
        self.intervals += &rhs.intervals;
        // Parts of one run (`npt merge`): their connections add, and they are still one run.
        SetupStats::add_part(&mut self.setup, rhs.setup.as_ref());
    }
}

impl HttpStats {
    fn non_empty(&self, name: &str) -> Option<&Histogram> {
        self.histograms.get(name).filter(|h| !h.is_empty())
    }
}

impl Stats for HttpStats {
    type Body = HttpBody;
    type Meta = HttpMeta;

    /// Rounds of one HTTP test: the same connections and asked rate again (the larger
    /// stands), the measured times add, request rates and throughput (each host's too) are
    /// over the summed time.
    fn then(&mut self, later: &HttpStats) {
        let (a, b) = (self.duration_s, later.duration_s);
        let connections = self.connections.max(later.connections);
        // Rounds: each its own run of the setup block's (a monitor's range counts them).
        let mut setup = self.setup.take();
        SetupStats::add_later(&mut setup, later.setup.as_ref());
        let rate = max_opt(self.rate, later.rate);
        let rps = super::over_time(self.rps, a, later.rps, b);
        let throughput =
            super::directions_over_time(&self.throughput_bps, a, &later.throughput_bps, b);
        let host_rps: BTreeMap<String, f64> = later
            .hosts
            .iter()
            .map(|(k, h)| {
                let mine = self.hosts.get(k).map_or(0.0, |m| m.rps);
                (k.clone(), super::over_time(mine, a, h.rps, b))
            })
            .collect();
        // A host's own load is the same in every round (the larger stands), as `-c`.
        let host_loads: BTreeMap<String, (Option<u32>, Option<f64>)> = later
            .hosts
            .iter()
            .map(|(k, h)| {
                let mine = self.hosts.get(k);
                let c = mine.and_then(|m| m.connections).max(h.connections);
                let r = max_opt(mine.and_then(|m| m.rate), h.rate);
                (k.clone(), (c, r))
            })
            .collect();
        *self += later;
        self.connections = connections;
        self.rate = rate;
        self.rps = rps;
        self.duration_s = a + b;
        self.throughput_bps = throughput;
        self.setup = setup;
        for (k, h) in self.hosts.iter_mut() {
            if let Some(&(c, r)) = host_loads.get(k) {
                (h.connections, h.rate) = (c, r);
            }
            h.rps = match host_rps.get(k) {
                Some(r) => *r,
                // A host only the earlier runs had: its rate over the summed time.
                None => super::over_time(h.rps, a, 0.0, b),
            };
        }
    }

    fn from_body(b: &HttpBody) -> Result<(HttpStats, HttpMeta), BodyError> {
        let s = &b.summary;
        let intervals = Intervals::of(b.intervals.clone());
        intervals
            .check()
            .map_err(|(name, source)| BodyError { name, source })?;
        let hosts = b
            .hosts
            .iter()
            .map(|(k, h)| {
                let c = HostCounts {
                    requests: h.requests,
                    ok: h.ok,
                    errors: h.errors,
                    rps: h.rps,
                    status: h.status.clone(),
                    bytes_received: h.bytes_received,
                    latency_uncorrected: h.latency_uncorrected_ms.map_or(Dist::Empty, Dist::Saved),
                    ttfb: Dist::Saved(h.ttfb_ms),
                    connections: h.connections,
                    rate: h.rate,
                };
                (k.clone(), c)
            })
            .collect();
        let stats = HttpStats {
            connections: s.connections,
            rate: s.rate,
            requests: s.requests,
            ok: s.ok,
            in_flight_at_end: s.in_flight_at_end,
            oldest_in_flight_ms: s.oldest_in_flight_ms,
            rps: s.rps,
            duration_s: s.duration_s,
            connections_opened: s.connections_opened,
            status: s.status.clone(),
            bytes: s.bytes,
            throughput_bps: s.throughput_bps,
            hosts,
            histograms: HistMap::from_saved(&b.histograms)?,
            errors: ErrorStats::from_block(&b.errors, s.requests + b.errors.total_errors),
            cold_start: b.cold_start.clone(),
            health: b.health,
            intervals,
            setup: None,
        };
        let setup = b.setup.as_ref().map(SetupStats::from_body).transpose()?;
        let (setup, setup_meta) = setup.map_or((None, None), |(s, m)| (Some(s), Some(m)));
        let stats = HttpStats { setup, ..stats };
        let meta = HttpMeta {
            setup: setup_meta,
            ..HttpMeta::of(s)
        };
        Ok((stats, meta))
    }

    fn summarize(&self, m: &HttpMeta) -> HttpBody {
        let h = &self.histograms;
        let latency_ms = h.summary(hist::LATENCY);
        let complete = self
            .histograms
            .get(hist::LATENCY_UNCORRECTED)
            .or(h.get(hist::LATENCY))
            .map(|x| x.summary())
            .unwrap_or_default();
        let summary = HttpSummary {
            url: m.url.clone(),
            target: m.target.clone(),
            method: m.method.clone(),
            protocol: m.protocol.clone(),
            downgrade: m.downgrade.clone(),
            tls: m.tls,
            mode: m.mode.clone(),
            open_loop: m.open_loop,
            rate: self.rate,
            connections: self.connections,
            streams: m.streams,
            new_conn: m.new_conn,
            requests: self.requests,
            ok: self.ok,
            errors: self.errors.total(),
            in_flight_at_end: self.in_flight_at_end,
            oldest_in_flight_ms: self.oldest_in_flight_ms,
            rps: self.rps,
            duration_s: self.duration_s,
            connections_opened: self.connections_opened,
            status: self.status.clone(),
            bytes: self.bytes,
            throughput_bps: self.throughput_bps,
            latency_ms,
            latency_uncorrected_ms: m.open_loop.then(|| h.summary(hist::LATENCY_UNCORRECTED)),
            phases_ms: Phases {
                connect: h.summary(hist::CONNECT),
                tls: self.non_empty(hist::TLS).map(|x| x.summary()),
                proxy: self.non_empty(hist::PROXY).map(|x| x.summary()),
                ttfb: h.summary(hist::TTFB),
                complete,
            },
        };
        let mut histograms = BTreeMap::new();
        let mut put = |name: String, x: Option<&Histogram>| {
            let x = x.map_or_else(|| Histogram::new().to_serialized(), |x| x.to_serialized());
            histograms.insert(name, x);
        };
        put(hist::LATENCY.into(), h.get(hist::LATENCY));
        if m.open_loop {
            put(
                hist::LATENCY_UNCORRECTED.into(),
                h.get(hist::LATENCY_UNCORRECTED),
            );
        }
        put(hist::TTFB.into(), h.get(hist::TTFB));
        put(hist::CONNECT.into(), h.get(hist::CONNECT));
        for name in [hist::TLS, hist::PROXY] {
            if let Some(x) = self.non_empty(name) {
                put(name.into(), Some(x));
            }
        }
        let hosts = self
            .hosts
            .iter()
            .map(|(name, c)| {
                let key = hist::host(name);
                let r = HostResult {
                    requests: c.requests,
                    ok: c.ok,
                    errors: c.errors,
                    rps: c.rps,
                    status: c.status.clone(),
                    bytes_received: c.bytes_received,
                    latency_ms: h.summary(&key),
                    latency_uncorrected_ms: m.open_loop.then(|| c.latency_uncorrected.summary()),
                    ttfb_ms: c.ttfb.summary(),
                    connections: c.connections,
                    rate: c.rate,
                };
                put(key.clone(), h.get(&key));
                (name.clone(), r)
            })
            .collect();
        HttpBody {
            summary,
            hosts,
            cold_start: self.cold_start.clone(),
            health: self.health,
            latency: BTreeMap::from([("tcp".to_string(), NptLatency::from(&latency_ms))]),
            errors: self.errors.block(),
            histograms,
            intervals: self.intervals.joined(),
            setup: match (&self.setup, &m.setup) {
                (Some(s), Some(meta)) => Some(s.summarize(meta)),
                _ => None,
            },
        }
    }
}
