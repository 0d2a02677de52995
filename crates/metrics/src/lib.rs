//! Live metrics for `npt serve --metrics ADDR` and `npt run|http|probe … --metrics ADDR`:
//! counters and latency histograms in OpenMetrics text, for Prometheus to scrape.
//!
//! Nothing here sits on a hot path. A scrape calls a [`Source`], which fills a [`Snapshot`]
//! from values npt keeps anyway: `npt serve` reads its atomic counters; a run reads the
//! [`Published`] snapshot the cli refreshes with the totals its workload hands over once per
//! interval (from the cumulative histograms it already builds) and at the end. The [`Snapshot`]
//! type itself is npt-stats', so that engines fill it without depending on this crate. The
//! exposition format is `prometheus-client`'s
//! (a [`prometheus_client::collector::Collector`] turns the snapshot into families); the
//! listener is a small hyper server on a thread of its own ([`listener`]).

pub mod listener;
pub mod text;

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

pub use listener::Exporter;
// The values a scrape shows are npt-stats' (engines fill them without depending on this crate).
pub use npt_stats::snapshot::{self, Kind, Snapshot, Value, DURATION_BUCKETS_S};

/// The media type of the OpenMetrics text exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("--metrics {0}: {1}")]
    Bind(std::net::SocketAddr, #[source] std::io::Error),
    #[error("metrics listener: {0}")]
    Io(#[source] std::io::Error),
}

/// Fills a snapshot on each scrape.
pub type Source = Arc<dyn Fn(&mut Snapshot) + Send + Sync>;

/// The latest snapshot a run's collector published; cheap to clone and share with the
/// listener.
#[derive(Clone, Debug, Default)]
pub struct Published(Arc<Mutex<Snapshot>>);

impl Published {
    pub fn new() -> Published {
        Published::default()
    }

    /// Replaces what the next scrape shows.
    pub fn publish(&self, s: Snapshot) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }

    /// Adds the latest snapshot into `out`.
    pub fn read_into(&self, out: &mut Snapshot) {
        out.merge(&self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// A [`Source`] showing this snapshot.
    pub fn source(&self) -> Source {
        let p = self.clone();
        Arc::new(move |s: &mut Snapshot| p.read_into(s))
    }
}

/// The registry's collector: asks the source for a fresh snapshot on every scrape.
struct Scrape(Source);

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scrape")
    }
}

impl prometheus_client::collector::Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut snap = Snapshot::new();
        (self.0)(&mut snap);
        for (name, family) in snap.families() {
            // prometheus-client appends `_total` to counters and the unit to the name itself.
            let (base, unit, ty) = match family.kind {
                Kind::Counter => (
                    name.strip_suffix("_total").unwrap_or(name),
                    None,
                    MetricType::Counter,
                ),
                Kind::Gauge => (name, None, MetricType::Gauge),
                Kind::Histogram => match name.strip_suffix("_seconds") {
                    Some(b) => (b, Some(&Unit::Seconds), MetricType::Histogram),
                    None => (name, None, MetricType::Histogram),
                },
            };
            let mut m = encoder.encode_descriptor(base, &family.help, unit, ty)?;
            for (labels, value) in &family.series {
                // No label set at all rather than `{}` for unlabelled series.
                if labels.is_empty() {
                    encode_value(&mut m, value)?;
                } else {
                    encode_value(&mut m.encode_family(labels)?, value)?;
                }
            }
        }
        Ok(())
    }
}

fn encode_value(e: &mut MetricEncoder, value: &Value) -> Result<(), std::fmt::Error> {
    match value {
        Value::Counter(c) => e.encode_counter::<NoLabelSet, _, u64>(c, None),
        Value::Gauge(g) => e.encode_gauge(g),
        Value::Histogram {
            buckets,
            sum,
            count,
        } => {
            let mut b: Vec<(f64, u64)> = DURATION_BUCKETS_S
                .iter()
                .copied()
                .zip(buckets.iter().copied())
                .collect();
            b.push((f64::MAX, buckets.last().copied().unwrap_or(0)));
            e.encode_histogram::<NoLabelSet>(*sum, *count, &b, None)
        }
    }
}

/// The OpenMetrics text of one scrape of `source` (ends with `# EOF`).
// NO-PANIC: the encoder fails only on a failed write, and a `String` write does not fail.
#[allow(clippy::expect_used)]
pub fn encode(source: &Source) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape(source.clone())));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)
        .expect("writing into a String cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_stats::Histogram;

    #[test]
    fn text_follows_prometheus_conventions() {
        let source: Source = Arc::new(|s: &mut Snapshot| {
            let mut h = Histogram::new();
            h.record(2_000_000);
            s.counter(
                "npt_requests_total",
                "Requests answered.",
                &[("protocol", "http"), ("host", "a.test")],
                7,
            );
            s.gauge("npt_open_connections", "Open connections.", &[], 2.0);
            s.histogram(
                "npt_request_duration_seconds",
                "Request latency.",
                &[("protocol", "http")],
                &h,
            );
        });
        let text = encode(&source);
        assert!(
            text.contains("# TYPE npt_requests counter"),
            "counter family named without _total: {text}"
        );
        assert!(
            text.contains("npt_requests_total{protocol=\"http\",host=\"a.test\"} 7"),
            "{text}"
        );
        assert!(text.contains("\nnpt_open_connections 2.0\n"), "{text}");
        assert!(
            text.contains("# TYPE npt_request_duration_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains("npt_request_duration_seconds_bucket{le=\"0.001\",protocol=\"http\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("npt_request_duration_seconds_bucket{le=\"0.0025\",protocol=\"http\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("npt_request_duration_seconds_bucket{le=\"+Inf\",protocol=\"http\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("npt_request_duration_seconds_count{protocol=\"http\"} 1"),
            "{text}"
        );
        assert!(text.trim_end().ends_with("# EOF"), "{text}");
    }
}
