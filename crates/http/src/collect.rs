//! The collector: turns per-request events from the workers into histograms, counters, 1-second
//! intervals and finally the `http` result body. Pure code (events carry their own nanosecond
//! offsets), so it is tested by feeding made-up events.
//!
//! Workers do not touch histograms: they push small [`Event`]s into their own buffer and the
//! collector drains every buffer a few times a second ([`Shard`]). One HDR histogram is ~256 KiB,
//! so per-worker, per-host, per-phase histograms would cost hundreds of MiB at `-c 1000`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use npt_result::error::ErrorKind;
use npt_result::http::{hist, HostResult, HttpBody, HttpSummary, Phases};
use npt_result::interval::Interval;
use npt_result::probe::{Directions, Errors, Health, NptLatency};
use npt_stats::{ErrorCounts, Histogram};

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
}

/// One connection set up: TCP connect time and, with TLS, the handshake time.
#[derive(Clone, Copy, Debug)]
pub struct ConnEvent {
    pub connect_ns: u64,
    pub tls_ns: Option<u64>,
    /// `--via`: the proxy's own part of the connect (authentication + CONNECT reply).
    pub proxy_ns: Option<u64>,
}

#[derive(Clone, Debug)]
pub enum Record {
    Request(Event),
    Conn(ConnEvent),
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
}

#[derive(Default)]
struct IntervalAcc {
    requests: u64,
    errors: u64,
    status: StatusCounts,
    latency: Histogram,
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
}

/// What the progress line shows.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub requests: u64,
    pub errors: u64,
    /// Of the last closed interval.
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl Progress {
    /// The one-line progress `npt http` prints on a terminal without the live view.
    pub fn line(&self, elapsed: std::time::Duration) -> String {
        format!(
            "{:>4.0}s  {} requests  {:.0} req/s  p99 {:.2} ms  {} errors   ",
            elapsed.as_secs_f64(),
            self.requests,
            self.rps,
            self.p99_ms,
            self.errors
        )
    }
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
        }
    }

    pub fn add(&mut self, r: &Record) {
        match r {
            Record::Conn(c) => {
                self.conns += 1;
                self.connect.record(c.connect_ns);
                if let Some(t) = c.tls_ns {
                    self.tls.record(t);
                }
                if let Some(p) = c.proxy_ns {
                    self.proxy.record(p);
                }
            }
            Record::Request(e) => self.add_request(e),
        }
    }

    fn add_request(&mut self, e: &Event) {
        let idx = (e.done_ns / self.interval_ns).min(u32::MAX as u64) as u32;
        let hi = (e.host as usize).min(self.hosts.len().saturating_sub(1));
        let Some((_, host)) = self.hosts.get_mut(hi) else {
            return;
        };
        let iv = self.open.entry(idx).or_default();
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
                iv.requests += 1;
                self.bytes_in += e.bytes_in;
                host.bytes_in += e.bytes_in;
                if (200..300).contains(code) {
                    self.ok += 1;
                    host.ok += 1;
                }
                self.status.add(*code);
                host.status.add(*code);
                iv.status.add(*code);
                self.latency.record(lat);
                host.latency.record(lat);
                iv.latency.record(lat);
                self.uncorrected.record(actual);
                host.uncorrected.record(actual);
                self.ttfb.record(ttfb);
                host.ttfb.record(ttfb);
            }
        }
    }

    /// Closes every interval that ends at or before `upto_ns` (events arrive up to a drain
    /// period late, so the caller passes `now - a margin`).
    pub fn close_until(&mut self, upto_ns: u64) {
        while let Some((&idx, _)) = self.open.first_key_value() {
            let end = (idx as u64 + 1) * self.interval_ns;
            if end > upto_ns {
                break;
            }
            self.close_one(idx, end);
        }
    }

    fn close_one(&mut self, idx: u32, end_ns: u64) {
        // Fill gaps (a whole second without a completed request is a data point too).
        let next = self.closed.last().map_or(0, |r| r.index + 1);
        for gap in next..idx {
            self.closed
                .push(self.interval_record(gap, IntervalAcc::default(), None));
        }
        if let Some(acc) = self.open.remove(&idx) {
            let rec = self.interval_record(idx, acc, Some(end_ns));
            self.closed.push(rec);
        }
    }

    fn interval_record(&self, idx: u32, acc: IntervalAcc, end_ns: Option<u64>) -> Interval {
        let start = idx as u64 * self.interval_ns;
        let end = end_ns.unwrap_or(start + self.interval_ns).max(start + 1);
        let secs = (end - start) as f64 / 1e9;
        Interval {
            index: idx,
            start_s: start as f64 / 1e9,
            end_s: end as f64 / 1e9,
            completed: acc.requests,
            errors: acc.errors,
            rate_per_s: acc.requests as f64 / secs,
            latency_ms: acc.latency.summary(),
            status: Some(acc.status.to_map()),
            histogram: acc.latency.to_serialized(),
            ..Interval::default()
        }
    }

    pub fn progress(&self) -> Progress {
        let last = self.closed.last();
        Progress {
            requests: self.requests,
            errors: self.errors.total(),
            rps: last.map_or(0.0, |r| r.rate_per_s),
            p50_ms: last.map_or(0.0, |r| r.latency_ms.p50),
            p99_ms: last.map_or(0.0, |r| r.latency_ms.p99),
        }
    }

    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// The result body. `summary` carries the configuration fields (url, mode …); the counts,
    /// rates and latencies are filled in here. `duration_ns` is the measured phase's length.
    pub fn finish(
        mut self,
        mut summary: HttpSummary,
        duration_ns: u64,
        health: Health,
    ) -> HttpBody {
        // The last, partial interval ends with the run.
        let open: Vec<u32> = self.open.keys().copied().collect();
        for idx in open {
            let full_end = (idx as u64 + 1) * self.interval_ns;
            let end = if duration_ns > idx as u64 * self.interval_ns {
                full_end.min(duration_ns)
            } else {
                full_end
            };
            self.close_one(idx, end);
        }
        let secs = (duration_ns as f64 / 1e9).max(1e-9);
        let total_errors = self.errors.total();
        let open_loop = self.open_loop;
        summary.open_loop = open_loop;
        summary.requests = self.requests;
        summary.ok = self.ok;
        summary.errors = total_errors;
        summary.rps = self.requests as f64 / secs;
        summary.duration_s = duration_ns as f64 / 1e9;
        summary.connections_opened = self.conns;
        summary.status = self.status.to_map();
        summary.bytes = Directions {
            up: self.bytes_out as f64,
            down: self.bytes_in as f64,
        };
        summary.throughput_bps = Directions {
            up: self.bytes_out as f64 * 8.0 / secs,
            down: self.bytes_in as f64 * 8.0 / secs,
        };
        summary.latency_ms = self.latency.summary();
        summary.latency_uncorrected_ms = open_loop.then(|| self.uncorrected.summary());
        let has_tls = !self.tls.is_empty();
        summary.phases_ms = Phases {
            connect: self.connect.summary(),
            tls: has_tls.then(|| self.tls.summary()),
            proxy: (!self.proxy.is_empty()).then(|| self.proxy.summary()),
            ttfb: self.ttfb.summary(),
            complete: self.uncorrected.summary(),
        };
        let mut health = health;
        health.sends_behind_schedule = self.behind;
        health.behind_threshold_ms = BEHIND_THRESHOLD_NS as f64 / 1e6;
        health.send_lateness_ms = self.lateness.summary();

        let mut hosts = BTreeMap::new();
        let mut histograms = BTreeMap::new();
        let mut put = |k: String, h: Option<&Histogram>| {
            if let Some(h) = h {
                histograms.insert(k, h.to_serialized());
            }
        };
        put(hist::LATENCY.into(), Some(&self.latency));
        put(
            hist::LATENCY_UNCORRECTED.into(),
            open_loop.then_some(&self.uncorrected),
        );
        put(hist::TTFB.into(), Some(&self.ttfb));
        put(hist::CONNECT.into(), Some(&self.connect));
        put(hist::TLS.into(), has_tls.then_some(&self.tls));
        put(
            hist::PROXY.into(),
            (!self.proxy.is_empty()).then_some(&self.proxy),
        );
        for (name, h) in &self.hosts {
            put(hist::host(name), Some(&h.latency));
            hosts.insert(
                name.clone(),
                HostResult {
                    requests: h.requests,
                    ok: h.ok,
                    errors: h.errors,
                    rps: h.requests as f64 / secs,
                    status: h.status.to_map(),
                    bytes_received: h.bytes_in,
                    latency_ms: h.latency.summary(),
                    latency_uncorrected_ms: open_loop.then(|| h.uncorrected.summary()),
                    ttfb_ms: h.ttfb.summary(),
                },
            );
        }
        // Requests started: completed, failed, or still waiting for their answer at the end.
        let attempts = self.requests + total_errors + summary.in_flight_at_end;
        let mut latency = BTreeMap::new();
        latency.insert("tcp".to_string(), NptLatency::from(&summary.latency_ms));
        HttpBody {
            hosts,
            cold_start: None,
            health,
            latency,
            errors: Errors::new(self.errors.clone(), attempts),
            histograms,
            intervals: std::mem::take(&mut self.closed).into_vec_logged(),
            summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ok(host: u16, code: u16, sent: u64, done: u64) -> Record {
        Record::Request(Event {
            host,
            outcome: Outcome::Response(code),
            intended_ns: None,
            sent_ns: sent,
            head_ns: sent + (done - sent) / 2,
            done_ns: done,
            bytes_out: 0,
            bytes_in: 10,
        })
    }

    fn err(host: u16, kind: ErrorKind, at: u64) -> Record {
        Record::Request(Event {
            host,
            outcome: Outcome::Error(kind, "boom".into()),
            intended_ns: None,
            sent_ns: at,
            head_ns: 0,
            done_ns: at,
            bytes_out: 0,
            bytes_in: 0,
        })
    }

    #[test]
    fn counts_status_hosts_and_errors() {
        let hosts = vec!["a".to_string(), "b".to_string()];
        let mut c = Collector::new(&hosts, false, 1000 * MS);
        c.add(&ok(0, 200, 0, 2 * MS));
        c.add(&ok(1, 404, 10 * MS, 11 * MS));
        c.add(&ok(1, 200, 1100 * MS, 1101 * MS));
        c.add(&err(0, ErrorKind::Refused, 1200 * MS));
        c.add(&Record::Conn(ConnEvent {
            connect_ns: MS,
            tls_ns: None,
            proxy_ns: None,
        }));
        let body = c.finish(HttpSummary::default(), 2000 * MS, Health::default());
        let s = &body.summary;
        assert_eq!((s.requests, s.ok, s.errors), (3, 2, 1));
        assert_eq!(s.status.get("200"), Some(&2));
        assert_eq!(
            s.status.get("404"),
            Some(&1),
            "non-2xx are counted, not errors"
        );
        assert_eq!(s.rps, 1.5);
        assert_eq!(s.connections_opened, 1);
        assert!(s.phases_ms.tls.is_none());
        assert!(
            s.latency_uncorrected_ms.is_none(),
            "closed loop has one latency"
        );
        assert_eq!(body.hosts["a"].requests, 1);
        assert_eq!(body.hosts["a"].errors, 1);
        assert_eq!(body.hosts["b"].requests, 2);
        assert_eq!(body.errors.by_kind.get("refused"), 1);
        assert_eq!(body.errors.error_rate, 0.25);
        assert_eq!(body.intervals.len(), 2);
        assert_eq!(body.intervals[0].completed, 2);
        assert_eq!(body.intervals[1].completed, 1);
        assert_eq!(body.intervals[1].errors, 1);
        assert_eq!(body.latency["tcp"].max_ms, s.latency_ms.max);
    }

    #[test]
    fn error_rate_counts_requests_still_in_flight() {
        let hosts = vec!["a".to_string()];
        let mut c = Collector::new(&hosts, false, 1000 * MS);
        c.add(&ok(0, 200, 0, 2 * MS));
        c.add(&err(0, ErrorKind::Reset, 3 * MS));
        c.add(&err(0, ErrorKind::Io, 4 * MS));
        let summary = HttpSummary {
            in_flight_at_end: 2,
            ..HttpSummary::default()
        };
        let body = c.finish(summary, 1000 * MS, Health::default());
        // Started: 1 completed + 2 failed + 2 still waiting at the end.
        assert_eq!(body.errors.attempts, Some(5));
        assert_eq!(body.errors.error_rate, 0.4);
        assert_eq!(body.errors.by_kind.get("io"), 1);
    }

    #[test]
    fn open_loop_measures_from_intended_time() {
        let mut c = Collector::new(&["h".to_string()], true, 1000 * MS);
        // Due at 0, left at 500 ms because every slot was busy, answered 1 ms later.
        c.add(&Record::Request(Event {
            host: 0,
            outcome: Outcome::Response(200),
            intended_ns: Some(0),
            sent_ns: 500 * MS,
            head_ns: 500 * MS,
            done_ns: 501 * MS,
            bytes_out: 0,
            bytes_in: 0,
        }));
        let body = c.finish(HttpSummary::default(), 1000 * MS, Health::default());
        let s = &body.summary;
        assert!(
            (s.latency_ms.max - 501.0).abs() < 1.0,
            "{}",
            s.latency_ms.max
        );
        let u = s.latency_uncorrected_ms.expect("open loop reports both");
        assert!((u.max - 1.0).abs() < 0.01, "{}", u.max);
        assert_eq!(body.health.sends_behind_schedule, 1);
        assert!(body.histograms.contains_key(hist::LATENCY_UNCORRECTED));
    }

    #[test]
    fn open_loop_latency_always_counts_from_the_intended_time() {
        let mut c = Collector::new(&["h".to_string()], true, 1000 * MS);
        // Due at 10 ms, left 1 ms late (a busy slot or a late wake-up): charged either way.
        c.add(&Record::Request(Event {
            host: 0,
            outcome: Outcome::Response(200),
            intended_ns: Some(10 * MS),
            sent_ns: 11 * MS,
            head_ns: 11 * MS,
            done_ns: 11 * MS + 100_000,
            bytes_out: 0,
            bytes_in: 0,
        }));
        let body = c.finish(HttpSummary::default(), 1000 * MS, Health::default());
        assert!((body.summary.latency_ms.max - 1.1).abs() < 0.01);
        let uncorrected = body.summary.latency_uncorrected_ms.unwrap();
        assert!((uncorrected.max - 0.1).abs() < 0.01);
        assert!((body.health.send_lateness_ms.max - 1.0).abs() < 0.01);
        assert_eq!(body.health.sends_behind_schedule, 0);
    }

    #[test]
    fn intervals_close_in_order_and_fill_gaps() {
        let mut c = Collector::new(&["h".to_string()], false, 1000 * MS);
        c.add(&ok(0, 200, 0, MS));
        c.add(&ok(0, 200, 2500 * MS, 2501 * MS));
        c.close_until(1500 * MS);
        assert_eq!(c.progress().rps, 1.0);
        c.close_until(3000 * MS);
        let body = c.finish(HttpSummary::default(), 3200 * MS, Health::default());
        let idx: Vec<u32> = body.intervals.iter().map(|r| r.index).collect();
        assert_eq!(idx, vec![0, 1, 2]);
        assert_eq!(body.intervals[1].completed, 0);
    }

    #[test]
    fn last_partial_interval_ends_with_the_run() {
        let mut c = Collector::new(&["h".to_string()], false, 1000 * MS);
        c.add(&ok(0, 200, 1200 * MS, 1201 * MS));
        let body = c.finish(HttpSummary::default(), 1500 * MS, Health::default());
        let last = body.intervals.last().unwrap();
        assert_eq!(last.end_s, 1.5);
        assert_eq!(last.rate_per_s, 2.0);
    }

    #[test]
    fn shard_drains_everything() {
        let s = Shard::default();
        s.push(ok(0, 200, 0, 1));
        s.push(ok(0, 200, 0, 1));
        let mut v = Vec::new();
        s.drain_into(&mut v);
        assert_eq!(v.len(), 2);
        s.drain_into(&mut v);
        assert!(v.is_empty());
    }
}
