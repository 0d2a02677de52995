//! Merging `http` parts (the gateway benchmark): counters and status codes add, rates of
//! concurrent parts add, latency (corrected and uncorrected), phases and per-host latency come
//! from the added histograms; intervals are joined by index.

use std::collections::BTreeMap;
use std::path::PathBuf;

use npt_stats::Histogram;

use npt_result::http::{hist, HostResult, HttpBody};
use npt_result::probe::{Directions, Errors, Health, NptLatency};
use npt_result::Document;

use super::{add_hists, envelope, merge_intervals, typed, MergeError, Part};

fn add_codes(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

fn opt(h: Histogram) -> Option<Histogram> {
    (!h.is_empty()).then_some(h)
}

pub(super) fn merge(parts: &[Part]) -> Result<Document<HttpBody>, MergeError> {
    let docs: Vec<(PathBuf, Document<HttpBody>)> = typed(parts)?;
    let path = &docs[0].0;
    let bodies: Vec<&HttpBody> = docs.iter().map(|(_, d)| &d.body).collect();
    let hs = |name: &str| add_hists(path, name, bodies.iter().map(|b| b.histograms.get(name)));
    let latency = hs(hist::LATENCY)?;
    let uncorrected = opt(hs(hist::LATENCY_UNCORRECTED)?);
    let ttfb = hs(hist::TTFB)?;
    let connect = hs(hist::CONNECT)?;
    let tls = opt(hs(hist::TLS)?);
    let proxy = opt(hs(hist::PROXY)?);

    let mut s = bodies[0].summary.clone();
    s.requests = bodies.iter().map(|b| b.summary.requests).sum();
    s.ok = bodies.iter().map(|b| b.summary.ok).sum();
    s.errors = bodies.iter().map(|b| b.summary.errors).sum();
    s.in_flight_at_end = bodies.iter().map(|b| b.summary.in_flight_at_end).sum();
    s.oldest_in_flight_ms = bodies
        .iter()
        .map(|b| b.summary.oldest_in_flight_ms)
        .fold(0.0, f64::max);
    s.rps = bodies.iter().map(|b| b.summary.rps).sum();
    s.rate = bodies.iter().map(|b| b.summary.rate).sum::<Option<f64>>();
    s.connections = bodies.iter().map(|b| b.summary.connections).sum();
    s.duration_s = bodies
        .iter()
        .map(|b| b.summary.duration_s)
        .fold(0.0, f64::max);
    s.connections_opened = bodies.iter().map(|b| b.summary.connections_opened).sum();
    s.status = BTreeMap::new();
    s.bytes = Directions::default();
    s.throughput_bps = Directions::default();
    for b in &bodies {
        add_codes(&mut s.status, &b.summary.status);
        s.bytes.up += b.summary.bytes.up;
        s.bytes.down += b.summary.bytes.down;
        s.throughput_bps.up += b.summary.throughput_bps.up;
        s.throughput_bps.down += b.summary.throughput_bps.down;
    }
    s.latency_ms = latency.summary();
    s.latency_uncorrected_ms = uncorrected.as_ref().map(|h| h.summary());
    s.phases_ms.connect = connect.summary();
    s.phases_ms.tls = tls.as_ref().map(|h| h.summary());
    s.phases_ms.proxy = proxy.as_ref().map(|h| h.summary());
    s.phases_ms.ttfb = ttfb.summary();
    s.phases_ms.complete = uncorrected.as_ref().unwrap_or(&latency).summary();

    let mut hosts = BTreeMap::new();
    let mut host_hists = BTreeMap::new();
    let names: std::collections::BTreeSet<&String> =
        bodies.iter().flat_map(|b| b.hosts.keys()).collect();
    for h in names {
        let all: Vec<&HostResult> = bodies.iter().filter_map(|b| b.hosts.get(h)).collect();
        let name = hist::host(h);
        let hist = hs(&name)?;
        let mut m = all[0].clone();
        m.requests = all.iter().map(|x| x.requests).sum();
        m.ok = all.iter().map(|x| x.ok).sum();
        m.errors = all.iter().map(|x| x.errors).sum();
        m.rps = all.iter().map(|x| x.rps).sum();
        m.bytes_received = all.iter().map(|x| x.bytes_received).sum();
        m.status = BTreeMap::new();
        for x in &all {
            add_codes(&mut m.status, &x.status);
        }
        m.latency_ms = hist.summary();
        host_hists.insert(name, hist.to_serialized());
        hosts.insert(h.clone(), m);
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
        ..bodies[0].health.clone()
    };
    let mut latency_block = BTreeMap::new();
    if !latency.is_empty() {
        latency_block.insert("tcp".to_string(), NptLatency::from(&s.latency_ms));
    }
    let mut histograms = host_hists;
    for (k, h) in [
        (hist::LATENCY, Some(&latency)),
        (hist::LATENCY_UNCORRECTED, uncorrected.as_ref()),
        (hist::TTFB, Some(&ttfb)),
        (hist::CONNECT, Some(&connect)),
        (hist::TLS, tls.as_ref()),
        (hist::PROXY, proxy.as_ref()),
    ] {
        if let Some(h) = h {
            histograms.insert(k.to_string(), h.to_serialized());
        }
    }
    let body = HttpBody {
        summary: s,
        hosts,
        cold_start: bodies[0].cold_start.clone(),
        health,
        latency: latency_block,
        errors,
        histograms,
        intervals: merge_intervals(path, bodies.iter().flat_map(|b| b.intervals.iter()))?,
    };
    Ok(envelope(&docs, body))
}
