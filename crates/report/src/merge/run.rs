//! Merging `run` parts (simulated users): counters add, every latency summary (per protocol,
//! per activity, per interval, the NPT block) comes from the added histograms, which `run`
//! keys as `proto.<p>.<phase>`, `activity.<a>.<latency|ttfb>` and `health.timer_lateness`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use npt_stats::Histogram;

use npt_result::probe::{Directions, Errors, NptLatency};
use npt_result::run::{ActivityStats, GameStats, ProtocolStats, RunBody, RunHealth};
use npt_result::Document;

use super::{add_hists, envelope, merge_intervals, typed, MergeError, Part};

fn add_dir(a: &mut Directions, b: &Directions) {
    a.up += b.up;
    a.down += b.down;
}

pub(super) fn merge(parts: &[Part]) -> Result<Document<RunBody>, MergeError> {
    let docs: Vec<(PathBuf, Document<RunBody>)> = typed(parts)?;
    let path = &docs[0].0;
    let bodies: Vec<&RunBody> = docs.iter().map(|(_, d)| &d.body).collect();

    // Every histogram, added by key.
    let keys: std::collections::BTreeSet<&String> =
        bodies.iter().flat_map(|b| b.histograms.keys()).collect();
    let mut hists: BTreeMap<String, Histogram> = BTreeMap::new();
    for k in keys {
        let h = add_hists(path, k, bodies.iter().map(|b| b.histograms.get(k)))?;
        hists.insert(k.clone(), h);
    }
    let summary_of = |k: &str| hists.get(k).map(|h| h.summary()).unwrap_or_default();

    let mut s = bodies[0].summary.clone();
    let secs = bodies
        .iter()
        .map(|b| b.summary.duration_s)
        .fold(0.0, f64::max);
    s.users = bodies.iter().map(|b| b.summary.users).sum();
    s.arrival_rate_per_s = bodies
        .iter()
        .map(|b| b.summary.arrival_rate_per_s)
        .sum::<Option<f64>>();
    s.sessions_started = bodies.iter().map(|b| b.summary.sessions_started).sum();
    s.sessions_completed = bodies.iter().map(|b| b.summary.sessions_completed).sum();
    s.requests = bodies.iter().map(|b| b.summary.requests).sum();
    s.requests_per_s = bodies.iter().map(|b| b.summary.requests_per_s).sum();
    s.bytes = Directions::default();
    s.throughput_bps = Directions::default();
    for b in &bodies {
        add_dir(&mut s.bytes, &b.summary.bytes);
        add_dir(&mut s.throughput_bps, &b.summary.throughput_bps);
    }
    // Peaks of parts running side by side add up (an upper bound: they need not coincide).
    s.max_active_users = bodies.iter().map(|b| b.summary.max_active_users).sum();
    s.max_active_connections = bodies
        .iter()
        .map(|b| b.summary.max_active_connections)
        .sum();
    s.arrivals_dropped = bodies.iter().map(|b| b.summary.arrivals_dropped).sum();
    s.in_flight_at_end = bodies.iter().map(|b| b.summary.in_flight_at_end).sum();
    s.oldest_in_flight_ms = bodies
        .iter()
        .map(|b| b.summary.oldest_in_flight_ms)
        .fold(0.0, f64::max);
    s.duration_s = secs;

    let mut protocols = BTreeMap::new();
    let pnames: std::collections::BTreeSet<&String> =
        bodies.iter().flat_map(|b| b.protocols.keys()).collect();
    for p in pnames {
        let all: Vec<&ProtocolStats> = bodies.iter().filter_map(|b| b.protocols.get(p)).collect();
        let mut m = all[0].clone();
        m.requests = all.iter().map(|x| x.requests).sum();
        m.errors = all.iter().map(|x| x.errors).sum();
        m.connections = all.iter().map(|x| x.connections).sum();
        m.bytes = Directions::default();
        m.throughput_bps = Directions::default();
        for x in &all {
            add_dir(&mut m.bytes, &x.bytes);
            add_dir(&mut m.throughput_bps, &x.throughput_bps);
        }
        m.latency_ms = summary_of(&format!("proto.{p}.latency"));
        m.connect_ms = summary_of(&format!("proto.{p}.connect"));
        m.handshake_ms = summary_of(&format!("proto.{p}.handshake"));
        m.first_request_ms = summary_of(&format!("proto.{p}.first_request"));
        m.proxy_ms = hists.get(&format!("proto.{p}.proxy")).map(|h| h.summary());
        protocols.insert(p.clone(), m);
    }

    let mut activities = BTreeMap::new();
    let anames: std::collections::BTreeSet<&String> =
        bodies.iter().flat_map(|b| b.activities.keys()).collect();
    for a in anames {
        let all: Vec<&ActivityStats> = bodies.iter().filter_map(|b| b.activities.get(a)).collect();
        let mut m = all[0].clone();
        m.sessions = all.iter().map(|x| x.sessions).sum();
        m.requests = all.iter().map(|x| x.requests).sum();
        m.errors = all.iter().map(|x| x.errors).sum();
        m.bytes = Directions::default();
        for x in &all {
            add_dir(&mut m.bytes, &x.bytes);
        }
        m.latency_ms = summary_of(&format!("activity.{a}.latency"));
        m.ttfb_ms = hists
            .get(&format!("activity.{a}.ttfb"))
            .map(|h| h.summary());
        // Per-transfer throughput of concurrent parts: the mean, weighted by requests.
        let w: f64 = all.iter().map(|x| x.requests as f64).sum();
        m.transfer_bps = all
            .iter()
            .map(|x| x.transfer_bps.map(|t| t * x.requests as f64))
            .sum::<Option<f64>>()
            .map(|t| if w > 0.0 { t / w } else { 0.0 });
        m.game = merge_game(&all);
        activities.insert(a.clone(), m);
    }

    let mut latency = BTreeMap::new();
    for (p, stats) in &protocols {
        if stats.requests > 0 {
            latency.insert(p.clone(), NptLatency::from(&stats.latency_ms));
        }
    }
    let mut by_kind = npt_stats::ErrorCounts::default();
    for b in &bodies {
        by_kind += &b.errors.by_kind;
    }
    let attempts = bodies
        .iter()
        .map(|b| {
            b.errors
                .attempts_or(b.summary.requests + b.errors.total_errors)
        })
        .sum();
    let errors = Errors::new(by_kind, attempts);

    let health = RunHealth {
        cpu_user_s: bodies.iter().map(|b| b.health.cpu_user_s).sum(),
        cpu_sys_s: bodies.iter().map(|b| b.health.cpu_sys_s).sum(),
        cpu_pct: bodies.iter().map(|b| b.health.cpu_pct).fold(0.0, f64::max),
        max_rss_bytes: bodies
            .iter()
            .map(|b| b.health.max_rss_bytes)
            .max()
            .unwrap_or(0),
        timer_lateness_ms: summary_of("health.timer_lateness"),
        late_wakeups: bodies.iter().map(|b| b.health.late_wakeups).sum(),
        late_threshold_ms: bodies[0].health.late_threshold_ms,
    };

    let intervals = merge_intervals(path, bodies.iter().flat_map(|b| b.intervals.iter()))?;
    let body = RunBody {
        summary: s,
        health,
        latency,
        errors,
        protocols,
        activities,
        histograms: hists
            .iter()
            .map(|(k, h)| (k.clone(), h.to_serialized()))
            .collect(),
        intervals,
    };
    Ok(envelope(&docs, body))
}

fn merge_game(all: &[&ActivityStats]) -> Option<GameStats> {
    let games: Vec<&GameStats> = all.iter().filter_map(|x| x.game.as_ref()).collect();
    let first = games.first()?;
    let mut g = (*first).clone();
    g.sent = games.iter().map(|x| x.sent).sum();
    g.received = games.iter().map(|x| x.received).sum();
    g.lost = games.iter().map(|x| x.lost).sum();
    g.late = games.iter().map(|x| x.late).sum();
    g.duplicated = games.iter().map(|x| x.duplicated).sum();
    g.reordered = games.iter().map(|x| x.reordered).sum();
    g.loss_pct = if g.sent == 0 {
        0.0
    } else {
        g.lost as f64 * 100.0 / g.sent as f64
    };
    // Jitter: the stats crate's sample-weighted merge, exact with `jitter_samples`.
    (g.jitter_ms, g.jitter_samples) = super::probe::merge_jitter(
        games
            .iter()
            .map(|x| (x.jitter_ms, x.jitter_samples, x.received)),
    );
    Some(g)
}
