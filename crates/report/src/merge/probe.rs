//! Merging `probe` parts: counters add, rates of concurrent parts add, RTT / corrected RTT /
//! IPDV, TCP connect and first packet, and each stage's RTT come from the added histograms;
//! stages are joined by index (the parts started together with `--start-at`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use npt_result::probe::{hist, Directions, Errors, Health, NptLatency, ProbeBody};
use npt_result::Document;

use super::{add_hists, envelope, merge_intervals, typed, MergeError, Part};

fn add_dir(a: &mut Directions, b: &Directions) {
    a.up += b.up;
    a.down += b.down;
}

/// Mean of `v` weighted by `w` (0 when there is no weight).
fn weighted(pairs: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (mut sum, mut weight) = (0.0, 0.0);
    for (v, w) in pairs {
        sum += v * w;
        weight += w;
    }
    if weight > 0.0 {
        sum / weight
    } else {
        0.0
    }
}

/// Jitter of the parts `(jitter_ms, jitter_samples, replies)` merged with
/// [`npt_stats::JitterMean`]. Parts written before `jitter_samples` existed are weighted by
/// their replies, and the merge then has no sample count either (it is not exact).
pub(super) fn merge_jitter(
    parts: impl Iterator<Item = (f64, Option<u64>, u64)>,
) -> (f64, Option<u64>) {
    let mut m = npt_stats::JitterMean::default();
    let mut exact = true;
    for (ms, samples, replies) in parts {
        exact &= samples.is_some();
        m += &npt_result::probe::jitter_mean(ms, samples, replies);
    }
    (m.value_ns() / 1e6, exact.then(|| m.samples()))
}

pub(super) fn merge(parts: &[Part]) -> Result<Document<ProbeBody>, MergeError> {
    let docs: Vec<(PathBuf, Document<ProbeBody>)> = typed(parts)?;
    let path = &docs[0].0;
    let bodies: Vec<&ProbeBody> = docs.iter().map(|(_, d)| &d.body).collect();

    let added = |name: &str| add_hists(path, name, bodies.iter().map(|b| b.histograms.get(name)));
    let rtt = added(hist::RTT)?;
    let corrected = added(hist::RTT_CORRECTED)?;
    let ipdv = added(hist::IPDV)?;

    let mut s = bodies[0].summary.clone();
    let sum = |f: fn(&ProbeBody) -> u64| bodies.iter().map(|b| f(b)).sum::<u64>();
    s.clients = bodies.iter().map(|b| b.summary.clients).sum();
    s.sent = sum(|b| b.summary.sent);
    s.received = sum(|b| b.summary.received);
    s.lost = sum(|b| b.summary.lost);
    s.late = sum(|b| b.summary.late);
    s.duplicated = sum(|b| b.summary.duplicated);
    s.reordered = sum(|b| b.summary.reordered);
    s.corrupt = sum(|b| b.summary.corrupt);
    s.foreign = sum(|b| b.summary.foreign);
    s.stale = sum(|b| b.summary.stale);
    s.loss_pct = if s.sent == 0 {
        0.0
    } else {
        s.lost as f64 * 100.0 / s.sent as f64
    };
    s.pps = bodies.iter().map(|b| b.summary.pps).sum();
    s.pps_received = bodies.iter().map(|b| b.summary.pps_received).sum();
    s.send_duration_s = bodies
        .iter()
        .map(|b| b.summary.send_duration_s)
        .fold(0.0, f64::max);
    s.rtt_ms = rtt.summary();
    s.rtt_corrected_ms = (!corrected.is_empty()).then(|| corrected.summary());
    s.ipdv_ms = ipdv.summary();
    // Jitter: the stats crate's sample-weighted merge, exact with `jitter_samples`.
    let jitter = merge_jitter(bodies.iter().map(|b| {
        (
            b.summary.jitter_ms,
            b.summary.jitter_samples,
            b.summary.received,
        )
    }));
    (s.jitter_ms, s.jitter_samples) = jitter;
    s.bandwidth_bps = Directions::default();
    s.bytes = Directions::default();
    for b in &bodies {
        add_dir(&mut s.bandwidth_bps, &b.summary.bandwidth_bps);
        add_dir(&mut s.bytes, &b.summary.bytes);
    }
    let per_client = |f: fn(&ProbeBody) -> Option<f64>| {
        let v: Vec<(f64, f64)> = bodies
            .iter()
            .filter_map(|b| f(b).map(|x| (x, f64::from(b.summary.clients))))
            .collect();
        (!v.is_empty()).then(|| weighted(v.into_iter()))
    };
    // TCP connect and first packet: from the added histograms when every part has them (exact),
    // else (parts older than those histograms) the means weighted by clients.
    let tcp_parts = bodies.iter().filter(|b| b.summary.connect_ms.is_some());
    let exact = tcp_parts.clone().count() > 0
        && tcp_parts
            .clone()
            .all(|b| b.histograms.contains_key(hist::CONNECT));
    let (connect, first_packet) = (added(hist::CONNECT)?, added(hist::FIRST_PACKET)?);
    if exact {
        let phases = npt_result::probe::ProbePhases {
            connect: connect.summary(),
            first_packet: first_packet.summary(),
        };
        s.connect_ms = Some(phases.connect.mean);
        s.first_packet_ms = (phases.first_packet.count > 0).then_some(phases.first_packet.mean);
        s.phases_ms = Some(phases);
    } else {
        s.first_packet_ms = per_client(|b| b.summary.first_packet_ms);
        s.connect_ms = per_client(|b| b.summary.connect_ms);
        s.phases_ms = None;
    }
    s.total_ms = bodies
        .iter()
        .filter_map(|b| b.summary.total_ms)
        .reduce(f64::max);

    let mut by_kind = npt_stats::ErrorCounts::default();
    for b in &bodies {
        by_kind += &b.errors.by_kind;
    }
    let attempts = bodies
        .iter()
        .map(|b| b.errors.attempts_or(b.summary.sent))
        .sum();
    let errors = Errors::new(by_kind, attempts);

    // Health is per machine: CPU seconds and late sends add; the worst part's figures stay.
    let worst = bodies
        .iter()
        .max_by(|a, b| {
            a.health
                .send_lateness_ms
                .p99
                .total_cmp(&b.health.send_lateness_ms.p99)
        })
        .map(|b| b.health.clone())
        .unwrap_or_default();
    let health = Health {
        sends_behind_schedule: bodies.iter().map(|b| b.health.sends_behind_schedule).sum(),
        cpu_user_s: bodies.iter().map(|b| b.health.cpu_user_s).sum(),
        cpu_sys_s: bodies.iter().map(|b| b.health.cpu_sys_s).sum(),
        cpu_pct: bodies.iter().map(|b| b.health.cpu_pct).fold(0.0, f64::max),
        max_rss_bytes: bodies
            .iter()
            .map(|b| b.health.max_rss_bytes)
            .max()
            .unwrap_or(0),
        ..worst
    };

    let intervals = merge_intervals(path, bodies.iter().flat_map(|b| b.intervals.iter()))?;
    let mut latency = BTreeMap::new();
    if !rtt.is_empty() {
        latency.insert(s.protocol.clone(), NptLatency::from(&s.rtt_ms));
    }
    let histograms = [
        (hist::RTT, Some(&rtt)),
        (
            hist::RTT_CORRECTED,
            (!corrected.is_empty()).then_some(&corrected),
        ),
        (hist::IPDV, Some(&ipdv)),
        (hist::CONNECT, exact.then_some(&connect)),
        (hist::FIRST_PACKET, exact.then_some(&first_packet)),
    ]
    .into_iter()
    .filter_map(|(k, h)| Some((k.to_string(), h?.to_serialized())))
    .collect();
    let body = ProbeBody {
        summary: s,
        health,
        latency,
        errors,
        histograms,
        intervals,
    };
    Ok(envelope(&docs, body))
}
