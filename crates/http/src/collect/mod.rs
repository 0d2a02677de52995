//! The collector: turns per-request events from the workers into histograms, counters, 1-second
//! intervals and finally the `http` result body. Pure code (events carry their own nanosecond
//! offsets), so it is tested by feeding made-up events.
//!
//! Workers do not touch histograms: they push small [`Event`]s into their own buffer and the
//! collector drains every buffer a few times a second ([`Shard`]). One HDR histogram is ~256 KiB,
//! so per-worker, per-host, per-phase histograms would cost hundreds of MiB at `-c 1000`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use npt_result::common::{Directions, ErrorStats};
use npt_result::error::ErrorKind;
use npt_result::http::{hist, ColdStart, HttpBody, HttpSummary};
use npt_result::interval::{Interval, IntervalAcc, Intervals};
use npt_result::stats::http::HostCounts;
use npt_result::stats::{Dist, HistMap, HttpMeta, HttpStats, Stats};
use npt_result::Health;
use npt_stats::{ErrorCounts, Histogram};

use crate::setup::SetupAcc;

/// A send that leaves more than this after its intended time is counted behind schedule.
pub const BEHIND_THRESHOLD_NS: u64 = 2_000_000;

/// How one request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A complete response with this status (any status: non-2xx are not transport errors).
    Response(u16),
    /// No complete response: the error kind (`refused`, `reset`, `timeout` …) and a message.
    Error(ErrorKind, Box<str>),
}

/// One request, as offsets in ns from the start of the measured phase.
#[derive(Clone, Debug)]
pub struct Event {
    pub host: u16,
    pub outcome: Outcome,
    /// Open loop: when the request was due; its latency counts from then (coordinated
    /// omission), the pacer's own lateness (~µs) included.
    pub intended_ns: Option<u64>,
    /// When its first byte was handed to the connection.
    pub sent_ns: u64,
    /// When the response head was parsed (0 when there was none).
    pub head_ns: u64,
    /// When its last response byte was read (or the error seen).
    pub done_ns: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Sent on a connection that had carried a request before (its time to the response
    /// head is a base round trip of the setup block).
    pub reused: bool,
}

/// One connection set up: TCP connect time and, with TLS, the handshake time.
#[derive(Clone, Copy, Debug)]
pub struct ConnEvent {
    pub connect_ns: u64,
    pub tls_ns: Option<u64>,
    /// `--via`: the proxy's own part of the connect (authentication + CONNECT reply).
    pub proxy_ns: Option<u64>,
    /// The TLS version negotiated (`1.2`, `1.3`).
    pub tls_version: Option<&'static str>,
    /// The connection's first request: from its write to its response head, when it got one.
    pub first_byte_ns: Option<u64>,
}

#[derive(Clone, Debug)]
pub enum Record {
    Request(Event),
    /// A connection set up (its `first_byte_ns` not yet known).
    Conn(ConnEvent),
    /// The first answer on a connection pushed before as a [`Record::Conn`]: the same event,
    /// its `first_byte_ns` filled (the setup block's last layer).
    FirstByte(ConnEvent),
}

/// One worker's outbox. The worker locks it briefly per event (uncontended except while the
/// collector swaps it out).
#[derive(Debug, Default)]
pub struct Shard {
    buf: Mutex<Vec<Record>>,
}

impl Shard {
    #[inline]
    pub fn push(&self, r: Record) {
        if let Ok(mut b) = self.buf.lock() {
            b.push(r);
        }
    }

    /// Moves everything pushed so far into `into` (which is cleared first).
    pub fn drain_into(&self, into: &mut Vec<Record>) {
        into.clear();
        if let Ok(mut b) = self.buf.lock() {
            std::mem::swap(&mut *b, into);
        }
    }
}

#[derive(Default)]
pub(crate) struct StatusCounts(pub(crate) BTreeMap<u16, u64>);

impl StatusCounts {
    fn add(&mut self, code: u16) {
        *self.0.entry(code).or_default() += 1;
    }
    fn to_map(&self) -> BTreeMap<String, u64> {
        self.0.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }
}

#[derive(Default)]
pub(crate) struct HostAcc {
    pub(crate) requests: u64,
    pub(crate) ok: u64,
    pub(crate) errors: u64,
    pub(crate) bytes_in: u64,
    pub(crate) status: StatusCounts,
    pub(crate) latency: Histogram,
    pub(crate) uncorrected: Histogram,
    pub(crate) ttfb: Histogram,
    /// `--host NAME=N` / `NAME=R/s`: the host's own connections and, in open loop, rate.
    pub(crate) connections: Option<u32>,
    pub(crate) rate: Option<f64>,
}

/// Accumulates events into the result.
pub struct Collector {
    pub(crate) hosts: Vec<(String, HostAcc)>,
    pub(crate) open_loop: bool,
    interval_ns: u64,
    pub(crate) latency: Histogram,
    pub(crate) uncorrected: Histogram,
    pub(crate) ttfb: Histogram,
    pub(crate) connect: Histogram,
    pub(crate) tls: Histogram,
    pub(crate) proxy: Histogram,
    pub(crate) conns: u64,
    pub(crate) status: StatusCounts,
    pub(crate) requests: u64,
    pub(crate) ok: u64,
    pub(crate) bytes_out: u64,
    pub(crate) bytes_in: u64,
    pub(crate) errors: ErrorCounts,
    pub(crate) lateness: Histogram,
    pub(crate) behind: u64,
    open: BTreeMap<u32, IntervalAcc>,
    /// Bounded memory for long runs: older records wait in a temporary file.
    closed: npt_result::series::Series<Interval>,
    /// The setup block's connections ([`Collector::measure_setup`]).
    setup: Option<SetupAcc>,
}

impl Collector {
    pub fn new(hosts: &[String], open_loop: bool, interval_ns: u64) -> Collector {
        Collector {
            hosts: hosts
                .iter()
                .map(|h| (h.clone(), HostAcc::default()))
                .collect(),
            open_loop,
            interval_ns: interval_ns.max(1),
            latency: Histogram::new(),
            uncorrected: Histogram::new(),
            ttfb: Histogram::new(),
            connect: Histogram::new(),
            tls: Histogram::new(),
            proxy: Histogram::new(),
            conns: 0,
            status: StatusCounts::default(),
            requests: 0,
            ok: 0,
            bytes_out: 0,
            bytes_in: 0,
            errors: ErrorCounts::default(),
            lateness: Histogram::new(),
            behind: 0,
            open: BTreeMap::new(),
            closed: npt_result::series::Series::default(),
            setup: None,
        }
    }

    /// Adds the setup block: every connection's layers and the base round trips
    /// ([`crate::setup`]).
    pub fn measure_setup(&mut self) {
        self.setup = Some(SetupAcc::new());
    }

    /// Per-host loads (`--host NAME=N`, `NAME=R/s`, in the order of the hosts; empty when the
    /// hosts share the connections): each host's result states its own load. A host with a
    /// rate runs on `connections` of its own.
    pub fn set_loads(&mut self, loads: &[crate::client::HostLoad], connections: u32) {
        use crate::client::HostLoad;
        for ((_, h), l) in self.hosts.iter_mut().zip(loads) {
            (h.connections, h.rate) = match *l {
                HostLoad::Connections(c) => (Some(c), None),
                HostLoad::Rate(r) => (Some(connections), Some(r)),
            };
        }
    }

    pub fn add(&mut self, r: &Record) {
        match r {
            Record::Conn(c) => {
                if let Some(s) = &mut self.setup {
                    s.conn(c);
                }
                self.conns += 1;
                self.connect.record(c.connect_ns);
                if let Some(t) = c.tls_ns {
                    self.tls.record(t);
                }
                if let Some(p) = c.proxy_ns {
                    self.proxy.record(p);
                }
            }
            Record::FirstByte(c) => {
                if let Some(s) = &mut self.setup {
                    s.first_byte(c);
                }
            }
            Record::Request(e) => {
                if let Some(s) = &mut self.setup {
                    s.request(e);
                }
                self.add_request(e);
            }
        }
    }

    fn add_request(&mut self, e: &Event) {
        let idx = u32::try_from(e.done_ns / self.interval_ns).unwrap_or(u32::MAX);
        let hi = (e.host as usize).min(self.hosts.len().saturating_sub(1));
        let Some((_, host)) = self.hosts.get_mut(hi) else {
            return;
        };
        let iv = self
            .open
            .entry(idx)
            .or_insert_with(IntervalAcc::with_status);
        self.bytes_out += e.bytes_out;
        if let Some(intended) = e.intended_ns {
            let late = e.sent_ns.saturating_sub(intended);
            self.lateness.record(late);
            if late > BEHIND_THRESHOLD_NS {
                self.behind += 1;
            }
        }
        match &e.outcome {
            Outcome::Error(kind, msg) => {
                host.errors += 1;
                iv.errors += 1;
                self.errors.record(kind.name(), || msg.to_string());
            }
            Outcome::Response(code) => {
                let actual = e.done_ns.saturating_sub(e.sent_ns);
                let lat = match e.intended_ns {
                    Some(i) if self.open_loop => e.done_ns.saturating_sub(i.min(e.sent_ns)),
                    _ => actual,
                };
                let ttfb = e.head_ns.saturating_sub(e.sent_ns);
                self.requests += 1;
                host.requests += 1;
                self.bytes_in += e.bytes_in;
                host.bytes_in += e.bytes_in;
                if (200..300).contains(code) {
                    self.ok += 1;
                    host.ok += 1;
                }
                self.status.add(*code);
                host.status.add(*code);
                iv.record_status(*code);
                self.latency.record(lat);
                host.latency.record(lat);
                iv.record_completed(lat);
                self.uncorrected.record(actual);
                host.uncorrected.record(actual);
                self.ttfb.record(ttfb);
                host.ttfb.record(ttfb);
            }
        }
    }

    /// Closes every interval that ends at or before `upto_ns` (events arrive up to a drain
    /// period late, so the caller passes `now - a margin`).
    /// Closes the intervals that end by `upto_ns` and returns them, in order (the empty
    /// seconds between them included), for the run's progress.
    pub fn close_until(&mut self, upto_ns: u64) -> Vec<Interval> {
        let mut closed = Vec::new();
        while let Some((&idx, _)) = self.open.first_key_value() {
            let end = (idx as u64 + 1) * self.interval_ns;
            if end > upto_ns {
                break;
            }
            self.close_one(idx, end, &mut closed);
        }
        closed
    }

    fn close_one(&mut self, idx: u32, end_ns: u64, closed: &mut Vec<Interval>) {
        // Fill gaps (a whole second without a completed request is a data point too).
        let next = self.closed.last().map_or(0, |r| r.index + 1);
        for gap in next..idx {
            let rec = self.interval_record(gap, IntervalAcc::with_status(), None);
            closed.push(rec.clone());
            self.closed.push(rec);
        }
        if let Some(acc) = self.open.remove(&idx) {
            let rec = self.interval_record(idx, acc, Some(end_ns));
            closed.push(rec.clone());
            self.closed.push(rec);
        }
    }

    fn interval_record(&self, idx: u32, mut acc: IntervalAcc, end_ns: Option<u64>) -> Interval {
        let start = idx as u64 * self.interval_ns;
        let end = end_ns.unwrap_or(start + self.interval_ns).max(start + 1);
        let secs = (end - start) as f64 / 1e9;
        acc.close(idx, start as f64 / 1e9, end as f64 / 1e9, secs)
    }

    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// The run's stats value as measured here: the measured phase of `duration_ns` (the last,
    /// partial interval ends with it), and the sends behind schedule in the health.
    pub fn stats(mut self, duration_ns: u64) -> HttpStats {
        let open: Vec<u32> = self.open.keys().copied().collect();
        for idx in open {
            let full_end = (idx as u64 + 1) * self.interval_ns;
            let end = if duration_ns > idx as u64 * self.interval_ns {
                full_end.min(duration_ns)
            } else {
                full_end
            };
            self.close_one(idx, end, &mut Vec::new());
        }
        let secs = (duration_ns as f64 / 1e9).max(1e-9);
        let mut histograms = HistMap::default();
        histograms.add(hist::LATENCY, &self.latency);
        if self.open_loop {
            // In closed loop it holds what `latency` holds.
            histograms.add(hist::LATENCY_UNCORRECTED, &self.uncorrected);
        }
        histograms.add(hist::TTFB, &self.ttfb);
        histograms.add(hist::CONNECT, &self.connect);
        for (name, h) in [(hist::TLS, &self.tls), (hist::PROXY, &self.proxy)] {
            if !h.is_empty() {
                histograms.add(name, h);
            }
        }
        let mut hosts = BTreeMap::new();
        for (name, h) in &mut self.hosts {
            histograms.add(&hist::host(name), &h.latency);
            let counts = HostCounts {
                requests: h.requests,
                ok: h.ok,
                errors: h.errors,
                rps: h.requests as f64 / secs,
                status: h.status.to_map(),
                bytes_received: h.bytes_in,
                latency_uncorrected: Dist::Recorded(std::mem::take(&mut h.uncorrected)),
                ttfb: Dist::Recorded(std::mem::take(&mut h.ttfb)),
                connections: h.connections,
                rate: h.rate,
            };
            hosts.insert(name.clone(), counts);
        }
        HttpStats {
            requests: self.requests,
            ok: self.ok,
            rps: self.requests as f64 / secs,
            duration_s: duration_ns as f64 / 1e9,
            connections_opened: self.conns,
            status: self.status.to_map(),
            bytes: Directions::bytes(self.bytes_out, self.bytes_in),
            throughput_bps: Directions::bits_per_s(self.bytes_out, self.bytes_in, secs),
            hosts,
            histograms,
            // Requests started: completed and failed here; the caller adds those still
            // waiting for their answer at the end.
            errors: ErrorStats {
                by_kind: self.errors.clone(),
                attempts: self.requests + self.errors.total(),
            },
            health: Health::default().with_sends(
                self.behind,
                BEHIND_THRESHOLD_NS as f64 / 1e6,
                self.lateness.summary(),
            ),
            intervals: Intervals::of(std::mem::take(&mut self.closed).into_vec_logged()),
            ..HttpStats::default()
        }
    }

    /// The result body. `summary` carries the configuration fields (url, mode …) and the
    /// requests still in flight at the end; `health` the process's CPU and memory (and the
    /// pacer's timer lateness); `duration_ns` is the measured phase's length.
    pub fn finish(
        mut self,
        summary: HttpSummary,
        duration_ns: u64,
        health: Health,
        cold_start: Option<ColdStart>,
    ) -> HttpBody {
        let (setup, setup_meta) = match self.setup.take() {
            Some(s) => {
                let (s, m) = s.finish(&summary.url, &summary.target);
                (Some(s), Some(m))
            }
            None => (None, None),
        };
        let meta = HttpMeta {
            open_loop: self.open_loop,
            setup: setup_meta,
            ..HttpMeta::of(&summary)
        };
        let mut st = self.stats(duration_ns);
        st.setup = setup;
        st.connections = summary.connections;
        st.rate = summary.rate;
        st.in_flight_at_end = summary.in_flight_at_end;
        st.oldest_in_flight_ms = summary.oldest_in_flight_ms;
        st.errors.attempts += summary.in_flight_at_end;
        st.cold_start = cold_start;
        st.health = Health {
            sends_behind_schedule: st.health.sends_behind_schedule,
            behind_threshold_ms: st.health.behind_threshold_ms,
            send_lateness_ms: st.health.send_lateness_ms,
            ..health
        };
        st.summarize(&meta)
    }
}

#[cfg(test)]
mod tests;
