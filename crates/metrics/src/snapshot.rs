//! What one scrape shows: metric families (counters, gauges, latency histograms with explicit
//! buckets) and their labelled series, built from values npt already keeps — a run's collector
//! fills one a few times a second from its cumulative histograms and counters, `npt serve`
//! fills one on each scrape from its atomics — so the hot path records nothing extra.
//!
//! Names are written as users see them (Prometheus conventions): counters end in `_total`,
//! durations in `_seconds`; [`crate::encode`] hands them to `prometheus-client` for the text.

use std::collections::BTreeMap;

use npt_stats::Histogram;

/// Upper bounds (seconds) of every `*_duration_seconds` histogram: 100 µs to 10 s, roughly
/// 1–2.5–5 per decade, covering loopback to intercontinental paths and stalls.
pub const DURATION_BUCKETS_S: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// `(name, value)` pairs, sorted by the family's insertion order of calls.
pub type Labels = Vec<(String, String)>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One series' value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Counter(u64),
    Gauge(f64),
    /// Per-bucket counts for [`DURATION_BUCKETS_S`] plus one above the last bound (+Inf),
    /// the sum of the observations in seconds, and their count.
    Histogram {
        buckets: Vec<u64>,
        sum: f64,
        count: u64,
    },
}

/// A metric family: help text, kind and series by label set.
#[derive(Clone, Debug)]
pub struct Family {
    pub help: String,
    pub kind: Kind,
    pub series: BTreeMap<Labels, Value>,
}

/// Everything one scrape exposes.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    families: BTreeMap<String, Family>,
}

fn labels(l: &[(&str, &str)]) -> Labels {
    l.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Snapshot {
    pub fn new() -> Snapshot {
        Snapshot::default()
    }

    fn family(&mut self, name: &str, help: &str, kind: Kind) -> &mut Family {
        let f = self
            .families
            .entry(name.to_string())
            .or_insert_with(|| Family {
                help: help.to_string(),
                kind,
                series: BTreeMap::new(),
            });
        debug_assert_eq!(f.kind, kind, "{name} used as two kinds");
        f
    }

    /// A counter; `name` ends in `_total`. Adds to a series already there.
    pub fn counter(&mut self, name: &str, help: &str, l: &[(&str, &str)], v: u64) {
        debug_assert!(name.ends_with("_total"), "{name}");
        let s = self.family(name, help, Kind::Counter);
        match s.series.entry(labels(l)).or_insert(Value::Counter(0)) {
            Value::Counter(c) => *c += v,
            _ => unreachable!("a counter family holds counters"),
        }
    }

    /// A gauge (replaces a series already there).
    pub fn gauge(&mut self, name: &str, help: &str, l: &[(&str, &str)], v: f64) {
        self.family(name, help, Kind::Gauge)
            .series
            .insert(labels(l), Value::Gauge(v));
    }

    /// A duration histogram from an HDR histogram in ns; `name` ends in `_seconds`. Adds to a
    /// series already there.
    pub fn histogram(&mut self, name: &str, help: &str, l: &[(&str, &str)], h: &Histogram) {
        debug_assert!(name.ends_with("_seconds"), "{name}");
        // NO-PANIC: the buckets are positive constants of at most 10 s, so their ns fit a
        // u64 (and a float-to-int `as` saturates in any case).
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let bounds: Vec<u64> = DURATION_BUCKETS_S
            .iter()
            .map(|s| (s * 1e9).round() as u64)
            .collect();
        let add = h.bucket_counts(&bounds);
        let count = h.count();
        let sum = if count == 0 {
            0.0
        } else {
            h.mean_ns() * count as f64 / 1e9
        };
        let f = self.family(name, help, Kind::Histogram);
        let v = f.series.entry(labels(l)).or_insert(Value::Histogram {
            buckets: vec![0; DURATION_BUCKETS_S.len() + 1],
            sum: 0.0,
            count: 0,
        });
        if let Value::Histogram {
            buckets,
            sum: s,
            count: c,
        } = v
        {
            for (b, a) in buckets.iter_mut().zip(add) {
                *b += a;
            }
            *s += sum;
            *c += count;
        }
    }

    /// Adds every series of `other` (counters and histograms add; gauges are replaced).
    pub fn merge(&mut self, other: &Snapshot) {
        for (name, f) in &other.families {
            let mine = self.family(name, &f.help, f.kind);
            for (l, v) in &f.series {
                match (mine.series.get_mut(l), v) {
                    (Some(Value::Counter(a)), Value::Counter(b)) => *a += b,
                    (
                        Some(Value::Histogram {
                            buckets,
                            sum,
                            count,
                        }),
                        Value::Histogram {
                            buckets: b2,
                            sum: s2,
                            count: c2,
                        },
                    ) => {
                        for (x, y) in buckets.iter_mut().zip(b2) {
                            *x += y;
                        }
                        *sum += s2;
                        *count += c2;
                    }
                    _ => {
                        mine.series.insert(l.clone(), v.clone());
                    }
                }
            }
        }
    }

    pub fn families(&self) -> impl Iterator<Item = (&str, &Family)> {
        self.families.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// One series' value, for tests and for checks against a run's own report.
    pub fn get(&self, name: &str, l: &[(&str, &str)]) -> Option<&Value> {
        self.families.get(name)?.series.get(&labels(l))
    }

    pub fn is_empty(&self) -> bool {
        self.families.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_histograms_add_gauges_replace() {
        let mut h = Histogram::new();
        h.record(50_000); // 50 µs: first bucket
        h.record(3_000_000); // 3 ms: le 0.005
        let mut a = Snapshot::new();
        a.counter("npt_requests_total", "r", &[("protocol", "tcp")], 2);
        a.histogram("npt_request_duration_seconds", "d", &[], &h);
        a.gauge("npt_open_connections", "g", &[], 3.0);
        let mut b = a.clone();
        b.gauge("npt_open_connections", "g", &[], 5.0);
        a.merge(&b);
        assert_eq!(
            a.get("npt_requests_total", &[("protocol", "tcp")]),
            Some(&Value::Counter(4))
        );
        assert_eq!(a.get("npt_open_connections", &[]), Some(&Value::Gauge(5.0)));
        let Some(Value::Histogram {
            buckets,
            sum,
            count,
        }) = a.get("npt_request_duration_seconds", &[])
        else {
            panic!("histogram missing");
        };
        assert_eq!(*count, 4);
        assert_eq!(buckets[0], 2);
        assert_eq!(buckets[5], 2, "3 ms falls under le=0.005");
        assert_eq!(buckets.iter().sum::<u64>(), 4);
        assert!((sum - 2.0 * 0.00305).abs() < 1e-5, "{sum}");
    }
}
