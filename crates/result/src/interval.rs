//! One interval record for every workload (`intervals[]` of a `probe`, `run`, `http` or `bulk` result,
//! schema `npt.result.v2`; a `ping` and a `trace` have no series), so a reader of the series — the CSV, the HTML charts, `compare`,
//! `merge`, the live lines — is written once instead of once per kind.
//!
//! Every record fills the common fields: `index`, `start_s`, `end_s`, `completed`, `errors`,
//! `rate_per_s`, `latency_ms` and `histogram`. The fields only one kind has are optional and
//! left out of the JSON when absent, under the names they had in v1 (docs/result-json.md).
//!
//! [`IntervalAcc`] is the one accumulator of a record: an engine's open interval (`run` and
//! `http` record into it and close it) and the join of several parts' records of one index
//! (`npt merge`). [`Intervals`] is a run's series as a value that adds: the parts' records by
//! index, joined when the body is built.

use std::collections::BTreeMap;
use std::ops::AddAssign;

use npt_stats::{Histogram, JitterMean, SerializedHistogram, StatsError, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{jitter_mean, loss_pct, Directions};

/// One stage of a run. A probe's loss is attributed to the interval a packet was *sent* in
/// (an interval closes once its last packet's loss timeout has passed); a request of `run` or
/// `http` belongs to the interval in which it completed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Interval {
    pub index: u32,
    /// Seconds since the start of the run.
    pub start_s: f64,
    pub end_s: f64,
    /// Replies received on time (probe) or requests completed (run, http).
    pub completed: u64,
    /// Requests that failed (run, http); 0 for a probe, whose losses are `lost`.
    pub errors: u64,
    /// Packets sent (probe) or requests completed (run, http) per second.
    pub rate_per_s: f64,
    /// Round-trip time (probe) or request latency (run, http) of the interval.
    pub latency_ms: Summary,

    /// Probe: packets sent in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<u64>,
    /// Probe: packets sent in the interval that got no reply in time and that the server did
    /// not refuse (path loss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// Probe: packets sent in the interval that the server refused (`completed + lost +
    /// refused == sent`). Absent when nothing was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<u64>,
    /// Probe: of `lost`, the packets placed on the way up and on the way down (from the
    /// replies around them; the rest of `lost` was not placed when the interval closed).
    /// Absent without a server that reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_up: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_down: Option<u64>,
    /// Probe: late replies that *arrived* in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicated: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reordered: Option<u64>,
    /// Probe: `lost ÷ (sent − refused)`, in %.
    #[schemars(range(min = 0, max = 100))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_pct: Option<f64>,
    /// Probe: RFC 3550 jitter of the RTT, and the samples it is the weighted mean of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_samples: Option<u64>,
    /// Probe: application payload bits/s each way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bps: Option<Directions>,

    /// Run: application payload bytes each way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Directions>,
    /// Run: sampled at the end of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_users: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_connections: Option<u64>,

    /// Http: responses by status code (`"200"` …).
    #[schemars(extend("propertyNames" = {"pattern": "^[1-9][0-9]{2}$"}))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<BTreeMap<String, u64>>,

    /// Bulk: each stream's part of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<Vec<crate::bulk::StreamInterval>>,

    /// The latency samples of `latency_ms` (ns), so intervals merge exactly.
    pub histogram: SerializedHistogram,
}

/// The v1 layouts of `intervals[]`, rewritten in place into this record's names: a probe's
/// `received`, `pps` and `rtt_ms` become `completed`, `rate_per_s` and `latency_ms` (and
/// `errors` is 0); run's and http's `requests` become `completed`, http's `rps` and run's
/// requests per second of the interval become `rate_per_s`.
pub(crate) fn v1_to_v2(kind: &str, intervals: &mut serde_json::Value) {
    let Some(ivs) = intervals.as_array_mut() else {
        return;
    };
    for iv in ivs {
        let Some(o) = iv.as_object_mut() else {
            continue;
        };
        let mut rename = |from: &str, to: &str| {
            if let Some(v) = o.remove(from) {
                o.insert(to.to_string(), v);
            }
        };
        match kind {
            "probe" => {
                rename("received", "completed");
                rename("pps", "rate_per_s");
                rename("rtt_ms", "latency_ms");
                o.insert("errors".into(), 0.into());
            }
            "http" => {
                rename("requests", "completed");
                rename("rps", "rate_per_s");
            }
            "run" => {
                rename("requests", "completed");
                let f = |k: &str| o.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
                let rate = f("completed") / (f("end_s") - f("start_s")).max(1e-9);
                o.insert("rate_per_s".into(), rate.into());
            }
            _ => {}
        }
    }
}

/// One interval's figures as values that add: an engine's open interval, or the records of one
/// index from parts that ran side by side (counters and rates add, the latency histograms add,
/// loss is computed again from the added counts, jitter merges as [`JitterMean`]). A field
/// only some kinds have is in the result when a part had it.
#[derive(Clone, Debug, Default)]
pub struct IntervalAcc {
    pub index: u32,
    pub start_s: f64,
    pub end_s: f64,
    pub completed: u64,
    pub errors: u64,
    /// Joined records: the sum of their rates (an open interval's rate is made at [`close`]).
    ///
    /// [`close`]: IntervalAcc::close
    pub rate_per_s: f64,
    pub latency: Histogram,
    pub sent: Option<u64>,
    pub lost: Option<u64>,
    pub refused: Option<u64>,
    pub lost_up: Option<u64>,
    pub lost_down: Option<u64>,
    pub late: Option<u64>,
    pub duplicated: Option<u64>,
    pub reordered: Option<u64>,
    pub jitter: Option<JitterMean>,
    /// True once a record without `jitter_samples` (an older file) is in the jitter.
    pub jitter_inexact: bool,
    pub bandwidth_bps: Option<Directions>,
    pub bytes: Option<Directions>,
    pub active_users: Option<u64>,
    pub active_connections: Option<u64>,
    pub status: Option<BTreeMap<String, u64>>,
}

fn add_opt<T: std::ops::Add<Output = T> + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

fn add_dirs(a: Option<Directions>, b: Option<Directions>) -> Option<Directions> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            a += &b;
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

impl IntervalAcc {
    /// An open interval that counts payload bytes each way (`run`).
    pub fn with_bytes() -> IntervalAcc {
        IntervalAcc {
            bytes: Some(Directions::default()),
            ..IntervalAcc::default()
        }
    }

    /// An open interval that counts responses by status code (`http`).
    pub fn with_status() -> IntervalAcc {
        IntervalAcc {
            status: Some(BTreeMap::new()),
            ..IntervalAcc::default()
        }
    }

    /// One completed request (or on-time reply) of `ns` latency.
    #[inline]
    pub fn record_completed(&mut self, ns: u64) {
        self.completed += 1;
        self.latency.record(ns);
    }

    /// Payload bytes moved, where the interval counts them.
    #[inline]
    pub fn record_bytes(&mut self, up: u64, down: u64) {
        if let Some(b) = &mut self.bytes {
            b.up += up as f64;
            b.down += down as f64;
        }
    }

    /// A response with status `code`, where the interval counts them. No allocation once
    /// the code has been seen.
    #[inline]
    pub fn record_status(&mut self, code: u16) {
        if let Some(m) = &mut self.status {
            let mut buf = [0u8; 5];
            let key = status_key(code, &mut buf);
            match m.get_mut(key) {
                Some(n) => *n += 1,
                None => {
                    m.insert(key.to_string(), 1);
                }
            }
        }
    }

    /// Closes an open interval `[start_s, end_s)` of `secs` seconds as record `index`, and
    /// empties it for the next one (the fields it counts stay counted).
    pub fn close(&mut self, index: u32, start_s: f64, end_s: f64, secs: f64) -> Interval {
        let rec = Interval {
            index,
            start_s,
            end_s,
            completed: self.completed,
            errors: self.errors,
            rate_per_s: self.completed as f64 / secs,
            latency_ms: self.latency.summary(),
            bytes: self.bytes,
            status: self.status.clone(),
            histogram: self.latency.to_serialized(),
            ..Interval::default()
        };
        self.completed = 0;
        self.errors = 0;
        self.latency.reset();
        self.bytes = self.bytes.map(|_| Directions::default());
        if let Some(m) = &mut self.status {
            m.clear();
        }
        rec
    }

    fn with_latency(r: &Interval, latency: Histogram) -> IntervalAcc {
        IntervalAcc {
            index: r.index,
            start_s: r.start_s,
            end_s: r.end_s,
            completed: r.completed,
            errors: r.errors,
            rate_per_s: r.rate_per_s,
            latency,
            sent: r.sent,
            lost: r.lost,
            refused: r.refused,
            lost_up: r.lost_up,
            lost_down: r.lost_down,
            late: r.late,
            duplicated: r.duplicated,
            reordered: r.reordered,
            jitter: r
                .jitter_ms
                .map(|ms| jitter_mean(ms, r.jitter_samples, r.completed)),
            jitter_inexact: r.jitter_ms.is_some() && r.jitter_samples.is_none(),
            bandwidth_bps: r.bandwidth_bps,
            bytes: r.bytes,
            active_users: r.active_users,
            active_connections: r.active_connections,
            status: r.status.clone(),
        }
    }

    /// The record of joined records.
    pub fn to_record(&self) -> Interval {
        Interval {
            index: self.index,
            start_s: self.start_s,
            end_s: self.end_s,
            completed: self.completed,
            errors: self.errors,
            rate_per_s: self.rate_per_s,
            latency_ms: self.latency.summary(),
            sent: self.sent,
            lost: self.lost,
            refused: self.refused,
            lost_up: self.lost_up,
            lost_down: self.lost_down,
            late: self.late,
            duplicated: self.duplicated,
            reordered: self.reordered,
            loss_pct: self.sent.map(|sent| {
                loss_pct(
                    self.lost.unwrap_or(0),
                    sent.saturating_sub(self.refused.unwrap_or(0)),
                )
            }),
            jitter_ms: self.jitter.map(|j| j.value_ns() / 1e6),
            jitter_samples: self
                .jitter
                .filter(|_| !self.jitter_inexact)
                .map(|j| j.samples()),
            bandwidth_bps: self.bandwidth_bps,
            bytes: self.bytes,
            active_users: self.active_users,
            active_connections: self.active_connections,
            status: self.status.clone(),
            histogram: self.latency.to_serialized(),
            // A bulk's per-stream parts belong to one run's streams: joined records of
            // several runs have none.
            streams: None,
        }
    }
}

/// The decimal digits of a status code, without allocating.
fn status_key(code: u16, buf: &mut [u8; 5]) -> &str {
    let mut n = code;
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("0")
}

impl AddAssign<&IntervalAcc> for IntervalAcc {
    fn add_assign(&mut self, rhs: &IntervalAcc) {
        self.start_s = self.start_s.min(rhs.start_s);
        self.end_s = self.end_s.max(rhs.end_s);
        self.completed += rhs.completed;
        self.errors += rhs.errors;
        self.rate_per_s += rhs.rate_per_s;
        self.latency += &rhs.latency;
        self.sent = add_opt(self.sent, rhs.sent);
        self.lost = add_opt(self.lost, rhs.lost);
        self.refused = add_opt(self.refused, rhs.refused);
        self.lost_up = add_opt(self.lost_up, rhs.lost_up);
        self.lost_down = add_opt(self.lost_down, rhs.lost_down);
        self.late = add_opt(self.late, rhs.late);
        self.duplicated = add_opt(self.duplicated, rhs.duplicated);
        self.reordered = add_opt(self.reordered, rhs.reordered);
        self.jitter = match (self.jitter, rhs.jitter) {
            (Some(mut a), Some(b)) => {
                a += &b;
                Some(a)
            }
            (a, b) => a.or(b),
        };
        self.jitter_inexact |= rhs.jitter_inexact;
        self.bandwidth_bps = add_dirs(self.bandwidth_bps, rhs.bandwidth_bps);
        self.bytes = add_dirs(self.bytes, rhs.bytes);
        self.active_users = add_opt(self.active_users, rhs.active_users);
        self.active_connections = add_opt(self.active_connections, rhs.active_connections);
        if let Some(codes) = &rhs.status {
            let into = self.status.get_or_insert_with(BTreeMap::new);
            for (c, n) in codes {
                *into.entry(c.clone()).or_default() += n;
            }
        }
    }
}

/// A run's interval series as a value that adds: each part's records by index (parts started
/// together, so index k is the same stretch of time in each). Adding keeps the records; they
/// are joined once, when the body is built ([`Intervals::joined`]), so an index only one part
/// has is written exactly as that part wrote it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Intervals(BTreeMap<u32, Vec<Interval>>);

impl Intervals {
    /// A series of one part (an engine's own records, oldest first).
    pub fn of(records: Vec<Interval>) -> Intervals {
        let mut s = Intervals::default();
        for r in records {
            s.0.entry(r.index).or_default().push(r);
        }
        s
    }

    /// Checks that every record's histogram decodes (so that [`joined`] loses nothing);
    /// the error names the record.
    ///
    /// [`joined`]: Intervals::joined
    pub fn check(&self) -> Result<(), (String, StatsError)> {
        for r in self.0.values().flatten() {
            Histogram::from_serialized(&r.histogram)
                .map_err(|e| (format!("intervals[{}].histogram", r.index), e))?;
        }
        Ok(())
    }

    /// The series: one record per index, the parts' records of an index joined
    /// ([`IntervalAcc`]). A histogram that does not decode counts as empty ([`check`] says so
    /// first).
    ///
    /// [`check`]: Intervals::check
    pub fn joined(&self) -> Vec<Interval> {
        self.0
            .values()
            .filter_map(|recs| match recs.as_slice() {
                [] => None,
                [one] => Some(one.clone()),
                [first, rest @ ..] => {
                    let acc = |r: &Interval| {
                        let h = Histogram::from_serialized(&r.histogram).unwrap_or_default();
                        IntervalAcc::with_latency(r, h)
                    };
                    let mut m = acc(first);
                    for r in rest {
                        m += &acc(r);
                    }
                    Some(m.to_record())
                }
            })
            .collect()
    }
}

impl AddAssign<&Intervals> for Intervals {
    fn add_assign(&mut self, rhs: &Intervals) {
        for (k, recs) in &rhs.0 {
            self.0.entry(*k).or_default().extend(recs.iter().cloned());
        }
    }
}
