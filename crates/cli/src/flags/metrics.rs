//! `--metrics ADDR` (and `--metrics-linger`) for every workload: starts the OpenMetrics
//! endpoint of `npt-metrics` next to a run and publishes the totals the workload hands over
//! with each interval and at the end (one exporter: the workloads only fill a [`Snapshot`]),
//! with the run's own labels put first; after the run keeps the endpoint up for
//! `--metrics-linger` so a scraper (Prometheus every 1–15 s) sees the final values too. Also
//! what `npt serve --metrics` uses to start its endpoint ([`start_source`]).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use clap::Args;
use npt_metrics::{Exporter, Published, Snapshot, Source};

use crate::usage;
use crate::usage::parse_duration;

#[derive(Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve live counters and latency histograms in OpenMetrics text at http://ADDR/metrics
    /// (for Prometheus), e.g. 0.0.0.0:9464.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Keep --metrics up this long after the run (a second Ctrl-C ends it), so a scraper
    /// collects the final values.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "metrics")]
    pub metrics_linger: Option<Duration>,
}

/// `--metrics ADDR` parsed; the message names the flag.
fn parse_addr(s: &str) -> anyhow::Result<SocketAddr> {
    s.parse()
        .map_err(|_| usage!("--metrics {s:?}: expected ADDR:PORT, e.g. 0.0.0.0:9464"))
}

/// Starts an endpoint showing `source`; prints where to stderr.
pub fn start_source(cmd: &str, addr: &str, source: Source) -> anyhow::Result<Exporter> {
    let e = Exporter::start(parse_addr(addr)?, source)?;
    eprintln!("npt {cmd}: metrics on http://{}/metrics", e.local_addr());
    Ok(e)
}

/// A run's endpoint and the snapshot it shows.
pub struct RunMetrics {
    published: Published,
    _exporter: Exporter,
    linger: Duration,
    /// Labels every series of this run carries (e.g. `target`).
    labels: Vec<(String, String)>,
}

impl MetricsArgs {
    /// Validates the flags before the run starts (bad address: usage error).
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(a) = &self.metrics {
            parse_addr(a)?;
        }
        Ok(())
    }

    /// Starts the endpoint when `--metrics` was given.
    pub fn start(
        &self,
        cmd: &str,
        labels: &[(&'static str, String)],
    ) -> anyhow::Result<Option<RunMetrics>> {
        let Some(addr) = &self.metrics else {
            return Ok(None);
        };
        let published = Published::new();
        let exporter = start_source(cmd, addr, published.source())?;
        Ok(Some(RunMetrics {
            published,
            _exporter: exporter,
            linger: self.metrics_linger.unwrap_or(Duration::ZERO),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }))
    }
}

impl RunMetrics {
    /// Shows `totals` from now on, every series with the run's labels first.
    pub fn publish(&self, totals: &Snapshot) {
        let labels: Vec<(&str, &str)> = self
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.published.publish(totals.labelled(&labels));
    }

    /// After the run: keeps the endpoint up for `--metrics-linger`, or until `stopped()`.
    pub fn linger(self, stopped: impl Fn() -> bool) {
        if self.linger.is_zero() {
            return;
        }
        let end = Instant::now() + self.linger;
        while Instant::now() < end && !stopped() {
            std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_address_names_the_flag() {
        let a = MetricsArgs {
            metrics: Some("nonsense".into()),
            metrics_linger: None,
        };
        let e = a.check().unwrap_err();
        assert!(e.downcast_ref::<crate::UsageError>().is_some());
        assert!(e.to_string().contains("--metrics"), "{e}");
    }
}
