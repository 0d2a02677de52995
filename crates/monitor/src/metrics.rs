//! The monitor's OpenMetrics scrape (`GET /metrics` on its listener), in the conventions of
//! `--metrics` (docs/metrics.md): counters end in `_total`, durations are `_seconds`
//! histograms with the same buckets, written by `npt-metrics`. Every target series carries
//! `vantage`, `target` and `kind`, so Prometheus collecting several monitors tells the paths
//! and the places they were measured from apart (`instance` says which process).
//!
//! Per target: rounds by status, the headline latency of every round as a histogram (what
//! `histogram_quantile` reads), packets or requests sent and lost, errors, and the last round's
//! own figures as gauges (its exact percentiles, loss, RPM, goodput and an mtu round's sizes;
//! what a dashboard shows as "now"). For the monitor: its rounds' start lateness, the store's writes, errors and
//! backlog, alert states and notifications.

use npt_stats::Snapshot;

use crate::live::Live;

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
    "npt_monitor_alert_firing",
    "npt_monitor_round_lateness_seconds",
    "npt_monitor_rounds_stored_total",
    "npt_monitor_store_errors_total",
    "npt_monitor_rounds_dropped_total",
    "npt_monitor_store_backlog",
    "npt_monitor_notifications_total",
];

/// What a scrape shows now.
pub fn snapshot(live: &Live) -> Snapshot {
    let mut s = Snapshot::new();
    let v = live.vantage.as_str();
    for t in live.targets() {
        let kind = t.kind.name();
        let l = [("vantage", v), ("target", t.name.as_str()), ("kind", kind)];
        for (status, n) in &t.rounds {
            let mut ls = l.to_vec();
            ls.push(("status", status.name()));
            s.counter(
                "npt_monitor_rounds_total",
                "Rounds of the target, by how they ended (ok, no_answer, refused, error, timeout, skipped, budget).",
                &ls,
                *n,
            );
        }
        s.merge(&t.latency.labelled(&l));
        s.counter(
            "npt_monitor_sent_total",
            "Attempts, packets or requests the target's rounds sent.",
            &l,
            t.sent,
        );
        s.counter(
            "npt_monitor_lost_total",
            "Of those, the ones without a (good) answer that the server did not refuse.",
            &l,
            t.lost,
        );
        s.counter(
            "npt_monitor_refused_total",
            "Of those, the ones the server said it refused (its budget or token): not loss.",
            &l,
            t.refused,
        );
        s.counter(
            "npt_monitor_errors_total",
            "Errors the target's rounds counted (every kind).",
            &l,
            t.errors,
        );
        s.gauge(
            "npt_monitor_up",
            "1 if the target's last round got an answer, 0 if not (no answer, error, timeout).",
            &l,
            match &t.last {
                Some(x) if x.status.measured() && x.figures.count > 0 => 1.0,
                Some(x) if x.figures.goodput_bps.is_some_and(|g| g > 0.0) => 1.0,
                _ => 0.0,
            },
        );
        let Some(last) = t.last.as_ref().filter(|x| x.status.measured()) else {
            continue;
        };
        let f = &last.figures;
        s.gauge(
            "npt_monitor_last_round_timestamp_seconds",
            "When the target's last round that measured started (Unix time).",
            &l,
            last.start_ms as f64 / 1e3,
        );
        if f.count > 0 {
            // A gauge per percentile, not one with a `quantile` label: that label belongs to
            // summaries (promtool refuses it elsewhere), and these are no summary — exact
            // figures of the last round only, with no sum or count over time.
            for (name, help, ms) in [
                (
                    "npt_monitor_last_p50_seconds",
                    "The last round's headline latency, its median (exact, from its histogram).",
                    f.p50_ms,
                ),
                (
                    "npt_monitor_last_p90_seconds",
                    "The last round's headline latency, its 90th percentile (exact).",
                    f.p90_ms,
                ),
                (
                    "npt_monitor_last_p99_seconds",
                    "The last round's headline latency, its 99th percentile (exact).",
                    f.p99_ms,
                ),
            ] {
                s.gauge(name, help, &l, ms / 1e3);
            }
        }
        if let Some(loss) = f.loss_pct() {
            s.gauge(
                "npt_monitor_last_loss_ratio",
                "The last round's loss: lost / (sent - refused).",
                &l,
                loss / 100.0,
            );
        }
        if let Some(rpm) = f.rpm {
            s.gauge(
                "npt_monitor_last_rpm",
                "The last round's responsiveness under load (round trips per minute).",
                &l,
                rpm,
            );
        }
        if let Some(g) = f.goodput_bps {
            s.gauge(
                "npt_monitor_last_goodput_bps",
                "The last round's goodput, both ways (bits/s).",
                &l,
                g,
            );
        }
        for (direction, size) in [("up", f.mtu_up_bytes), ("down", f.mtu_down_bytes)] {
            if let Some(b) = size {
                let mut ls = l.to_vec();
                ls.push(("direction", direction));
                s.gauge(
                    "npt_monitor_last_mtu_bytes",
                    "The last mtu round's largest datagram that crossed, by direction (bytes of UDP payload).",
                    &ls,
                    b,
                );
            }
        }
    }
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

/// The OpenMetrics text of one scrape.
pub fn scrape(live: &Live) -> String {
    let snap = snapshot(live);
    let source: npt_metrics::Source = std::sync::Arc::new(move |s: &mut Snapshot| s.merge(&snap));
    npt_metrics::encode(&source)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::kinds::{Figures, Kind};
    use crate::round::{Round, Status};
    use crate::store::AlertRow;

    #[test]
    fn a_scrape_shows_every_family_it_names_and_no_other() {
        let live = Live::new("v", 0, Arc::default(), Arc::default());
        let plan = |name: &str, kind: Kind| crate::config::TargetPlan {
            name: name.into(),
            kind,
            url: "udp://h:1".into(),
            every: std::time::Duration::from_secs(1),
            jitter: std::time::Duration::ZERO,
            timeout: None,
            group: None,
            budget: None,
            argv: vec![],
            length: None,
            own_length: false,
            index: 0,
            key: String::new(),
        };
        live.set_targets(&[plan("loaded", Kind::Probe), plan("tunnel", Kind::Mtu)]);
        let mut r = Round::empty("loaded", Kind::Probe, 1, Status::Ok, None);
        r.figures = Figures {
            count: 10,
            sent: 10,
            p50_ms: 20.0,
            rpm: Some(600.0),
            goodput_bps: Some(1e7),
            ..Figures::default()
        };
        let mut h = npt_stats::Histogram::new();
        h.record(20_000_000);
        live.on_round(&r, Some(&h));
        let mut r = Round::empty("tunnel", Kind::Mtu, 1, Status::Ok, None);
        r.figures = Figures {
            mtu_up_bytes: Some(1372.0),
            mtu_down_bytes: Some(1472.0),
            ..Figures::default()
        };
        live.on_round(&r, None);
        live.set_alerts(vec![AlertRow {
            target: "loaded".into(),
            rule: "r".into(),
            firing: true,
            since_ms: 0,
            streak: 0,
            value: None,
        }]);
        let s = snapshot(&live);
        let names: Vec<&str> = s.families().map(|(n, _)| n).collect();
        let mut want = NAMES.to_vec();
        want.sort_unstable();
        assert_eq!(names, want);
        let text = scrape(&live);
        assert!(
            text.contains(
                "npt_monitor_last_rpm{vantage=\"v\",target=\"loaded\",kind=\"probe\"} 600.0"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "npt_monitor_last_p50_seconds{vantage=\"v\",target=\"loaded\",kind=\"probe\"} 0.02\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "npt_monitor_last_mtu_bytes{vantage=\"v\",target=\"tunnel\",kind=\"mtu\",direction=\"up\"} 1372.0"
            ),
            "{text}"
        );
        assert!(
            !text.contains("quantile="),
            "only summaries carry it: {text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
