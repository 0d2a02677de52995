//! `--metrics ADDR` (and `--metrics-linger`) for `probe`, `run` and `http`: starts the
//! OpenMetrics endpoint of `npt-metrics` next to a run, hands the run a [`Published`] snapshot
//! to refresh, and after the run keeps the endpoint up for `--metrics-linger` so a scraper
//! (Prometheus every 1–15 s) sees the final values too. Also what `npt serve --metrics` uses
//! to start its endpoint ([`start_source`]).

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
pub fn parse_addr(s: &str) -> anyhow::Result<SocketAddr> {
    s.parse()
        .map_err(|_| usage!("--metrics {s:?}: expected ADDR:PORT, e.g. 0.0.0.0:9464"))
}

/// Starts an endpoint showing `source`; prints where to stderr.
pub fn start_source(cmd: &str, addr: &str, source: Source) -> anyhow::Result<Exporter> {
    let e = Exporter::start(parse_addr(addr)?, source)?;
    eprintln!("npt {cmd}: metrics on http://{}/metrics", e.local_addr());
    Ok(e)
}

/// A run's endpoint and the snapshot its collector refreshes.
pub struct RunMetrics {
    pub published: Published,
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
    pub fn start(&self, cmd: &str, labels: &[(&str, &str)]) -> anyhow::Result<Option<RunMetrics>> {
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
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }))
    }
}

impl RunMetrics {
    /// The run's own labels followed by `extra`, for [`Snapshot`] calls.
    pub fn labels<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut v: Vec<(&str, &str)> = self
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        v.extend_from_slice(extra);
        v
    }

    pub fn publish(&self, s: Snapshot) {
        self.published.publish(s);
    }

    /// What an engine's config takes: the snapshot to refresh and the labels of every series.
    pub fn for_engine(&self) -> (Published, Vec<(String, String)>) {
        (self.published.clone(), self.labels.clone())
    }

    /// [`RunMetrics::linger`] that a new SIGINT/SIGTERM ends (the first one may have ended
    /// the run already).
    pub fn linger_until_signal(self) -> anyhow::Result<()> {
        let again = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, again.clone())?;
        }
        self.linger(|| again.load(std::sync::atomic::Ordering::Relaxed));
        Ok(())
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

/// `npt probe`: the stages so far, added up, as the endpoint shows them while the run goes
/// on; at the end the report's own totals replace them ([`ProbeLive::finish`]).
#[derive(Default)]
pub struct ProbeLive {
    sent: u64,
    received: u64,
    lost: u64,
    late: u64,
    duplicated: u64,
    reordered: u64,
    rtt: npt_stats::Histogram,
}

impl ProbeLive {
    /// Adds one final stage (called once per stage, never per packet).
    pub fn stage(&mut self, m: &RunMetrics, r: &npt_result::interval::Interval) {
        let n = |x: Option<u64>| x.unwrap_or(0);
        self.sent += n(r.sent);
        self.received += r.completed;
        self.lost += n(r.lost);
        self.late += n(r.late);
        self.duplicated += n(r.duplicated);
        self.reordered += n(r.reordered);
        if let Ok(h) = npt_stats::Histogram::from_serialized(&r.histogram) {
            self.rtt += &h;
        }
        m.publish(self.snapshot(m, None));
    }

    /// The report's totals, exactly as the result document has them.
    pub fn finish(&mut self, m: &RunMetrics, body: &npt_result::probe::ProbeBody) {
        let s = &body.summary;
        (self.sent, self.received, self.lost) = (s.sent, s.received, s.lost);
        (self.late, self.duplicated, self.reordered) = (s.late, s.duplicated, s.reordered);
        let rtt = body.histograms.get(npt_result::probe::hist::RTT);
        if let Some(Ok(h)) = rtt.map(npt_stats::Histogram::from_serialized) {
            self.rtt = h;
        }
        m.publish(self.snapshot(m, Some(&body.errors.by_kind)));
    }

    fn snapshot(&self, m: &RunMetrics, errors: Option<&npt_stats::ErrorCounts>) -> Snapshot {
        let mut s = Snapshot::new();
        let l = m.labels(&[]);
        for (name, help, v) in [
            ("npt_packets_sent_total", "Probe packets sent.", self.sent),
            (
                "npt_packets_received_total",
                "Probe replies received within the loss timeout.",
                self.received,
            ),
            (
                "npt_packets_lost_total",
                "Probe packets without a reply within the loss timeout (counted in the stage they were sent in).",
                self.lost,
            ),
            (
                "npt_packets_late_total",
                "Replies that came after the loss timeout (already lost).",
                self.late,
            ),
            ("npt_packets_duplicated_total", "Duplicate replies.", self.duplicated),
            ("npt_packets_reordered_total", "Replies out of order.", self.reordered),
        ] {
            s.counter(name, help, &l, v);
        }
        s.histogram(
            "npt_packet_rtt_seconds",
            "Round-trip time of on-time replies, from the actual send.",
            &l,
            &self.rtt,
        );
        if let Some(errors) = errors {
            for (kind, k) in errors.iter() {
                s.counter(
                    "npt_errors_total",
                    "Errors by kind.",
                    &m.labels(&[("kind", kind)]),
                    k.count,
                );
            }
        }
        s
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
