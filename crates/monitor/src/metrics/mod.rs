//! The monitor's OpenMetrics scrape (`GET /metrics` on its listener), in the conventions of
//! `--metrics` (docs/metrics.md): counters end in `_total`, durations are `_seconds`
//! histograms with the same buckets, written by `npt-metrics`. Every target series carries
//! `vantage`, `target` and `kind`, so Prometheus collecting several monitors tells the paths
//! and the places they were measured from apart (`instance` says which process).
//!
//! Per target: rounds by status, the headline latency of every round as a histogram (what
//! `histogram_quantile` reads), packets or requests sent and lost, errors, and the last round's
//! own figures as gauges (its exact percentiles, loss, RPM, goodput, an mtu round's sizes and a
//! marked probe round's marking each way; what a dashboard shows as "now"). For the monitor: its rounds' start lateness, the store's writes, errors and
//! backlog, alert states and notifications.
//!
//! Each target's series are rendered when its round ends and kept beside it
//! ([`fragment`]); a scrape writes the few monitor-wide families fresh and copies the targets'
//! kept text family by family, in the bytes and order the registry writes
//! ([`npt_metrics::text`]).

mod fragment;
#[cfg(test)]
mod tests;

use npt_metrics::text;
use npt_stats::Snapshot;

use crate::live::Live;

pub(crate) use fragment::render;
pub use fragment::Fragment;

/// Every family a scrape may show (those of a kind only where a target of it runs, alerts only
/// where rules are): what dashboards and PromQL may name. `_bucket`, `_sum`, `_count` are
/// added to histograms and `_total` is part of the counters' names.
pub const NAMES: &[&str] = &[
    "npt_monitor_rounds_total",
    "npt_monitor_latency_seconds",
    "npt_monitor_sent_total",
    "npt_monitor_lost_total",
    "npt_monitor_refused_total",
    "npt_monitor_errors_total",
    "npt_monitor_up",
    "npt_monitor_last_round_timestamp_seconds",
    "npt_monitor_last_p50_seconds",
    "npt_monitor_last_p90_seconds",
    "npt_monitor_last_p99_seconds",
    "npt_monitor_last_loss_ratio",
    "npt_monitor_last_rpm",
    "npt_monitor_last_goodput_bps",
    "npt_monitor_last_mtu_bytes",
    "npt_monitor_last_marking_arrived",
    "npt_monitor_last_ce_ratio",
    "npt_monitor_alert_firing",
    "npt_monitor_round_lateness_seconds",
    "npt_monitor_rounds_stored_total",
    "npt_monitor_store_errors_total",
    "npt_monitor_rounds_dropped_total",
    "npt_monitor_store_backlog",
    "npt_monitor_notifications_total",
];

/// The monitor-wide families (alerts, lateness, the store, notifications) as they are now.
pub fn globals(live: &Live) -> Snapshot {
    let mut s = Snapshot::new();
    let v = live.vantage.as_str();
    for a in live.alerts() {
        s.gauge(
            "npt_monitor_alert_firing",
            "1 while the alert rule fires for the target.",
            &[("vantage", v), ("target", &a.target), ("alert", &a.rule)],
            if a.firing { 1.0 } else { 0.0 },
        );
    }
    let vl = [("vantage", v)];
    s.histogram(
        "npt_monitor_round_lateness_seconds",
        "How late rounds started after they were due (the monitor's own health).",
        &vl,
        &live.lateness(),
    );
    let w = &live.writer;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    s.counter(
        "npt_monitor_rounds_stored_total",
        "Rounds committed to the store.",
        &vl,
        get(&w.stored),
    );
    s.counter(
        "npt_monitor_store_errors_total",
        "Failed writes to the store (each retry counts).",
        &vl,
        get(&w.errors),
    );
    s.counter(
        "npt_monitor_rounds_dropped_total",
        "Rounds dropped because the store could not be written and the backlog was full.",
        &vl,
        get(&w.dropped),
    );
    s.gauge(
        "npt_monitor_store_backlog",
        "Rounds, events and alert states waiting in memory for the store.",
        &vl,
        get(&w.backlog) as f64,
    );
    for (result, n) in [
        ("sent", get(&live.notify.sent)),
        ("failed", get(&live.notify.failed)),
    ] {
        s.counter(
            "npt_monitor_notifications_total",
            "Alert notifications (webhook, command) delivered or given up on.",
            &[("vantage", v), ("result", result)],
            n,
        );
    }
    s
}

/// The OpenMetrics text of one scrape: the families in name order, each target's part of a
/// per-target family copied from what its last round left ([`Fragment`]).
pub fn scrape(live: &Live) -> String {
    let parts = live.fragments();
    let globals = globals(live);
    let kept: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = String::with_capacity(kept + 64 * 1024);
    let mut rest = globals.families().peekable();
    for (i, fam) in fragment::FAMILIES.iter().enumerate() {
        while let Some((name, f)) = rest.next_if(|(name, _)| *name < fam.name) {
            text::family(&mut out, name, f);
        }
        if parts.iter().any(|p| !p.part(i).is_empty()) {
            text::header(&mut out, fam.name, fam.kind, fam.help);
            for p in &parts {
                out.push_str(p.part(i));
            }
        }
    }
    for (name, f) in rest {
        text::family(&mut out, name, f);
    }
    out.push_str(text::EOF);
    out
}
