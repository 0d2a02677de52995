//! The body of a `run` result (simulated users): NPT's `latency.<tcp|quic|udp>` and `errors`
//! blocks with correct per-request values, then per protocol and per activity summaries,
//! the tester's health, serialized histograms (exact merge later) and the 1 s series.
//!
//! Field names here are what users script against (docs/result-json.md, "run"); keep them
//! stable. `schema/run.schema.json` describes this layout and a test enforces it.

use std::collections::BTreeMap;

use npt_stats::Summary;
use serde::{Deserialize, Serialize};

use crate::interval::Interval;
use crate::probe::{Directions, Errors, NptLatency};
use crate::Histograms;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunBody {
    pub summary: RunSummary,
    pub health: RunHealth,
    /// NPT's block: `latency.<tcp|quic|udp>.{avg,p50,p95,p99,max,min}_ms`, request latency
    /// (first byte handed to the socket → last response byte read). Protocols with no
    /// completed request are left out.
    pub latency: BTreeMap<String, NptLatency>,
    /// NPT's block; `error_rate` = errors ÷ requests started (see [`Errors`]).
    pub errors: Errors,
    /// Keyed `tcp`, `quic`, `udp`.
    pub protocols: BTreeMap<String, ProtocolStats>,
    /// Keyed `web`, `quic`, `download`, `upload`, `game` (activities in the mix only).
    pub activities: BTreeMap<String, ActivityStats>,
    /// Serialized HDR histograms (ns): `proto.<tcp|quic|udp>.<latency|connect|handshake|
    /// first_request>`, `activity.<name>.<latency|ttfb>`, `health.timer_lateness`.
    pub histograms: Histograms,
    /// One per interval (1 s by default); `bytes`, `active_users` and `active_connections`
    /// filled besides the common fields.
    pub intervals: Vec<Interval>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunSummary {
    /// `closed` (fixed users with think time) or `open` (sessions arriving at a rate).
    pub model: String,
    pub targets: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_target: Option<String>,
    pub users: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_rate_per_s: Option<f64>,
    pub mix: String,
    pub seed: u64,
    pub duration_s: f64,
    pub ramp_up_s: f64,
    /// Sessions (visits, transfers, game sessions) started and finished without error.
    pub sessions_started: u64,
    pub sessions_completed: u64,
    /// Completed requests over every protocol.
    pub requests: u64,
    pub requests_per_s: f64,
    /// Application payload bytes each way (headers of IP/TCP/UDP/QUIC excluded; npt's own
    /// 48-byte frame header included).
    pub bytes: Directions,
    pub throughput_bps: Directions,
    pub max_active_users: u64,
    pub max_active_connections: u64,
    /// Open model: arrivals not started because `max_active` users were already active.
    pub arrivals_dropped: u64,
    /// Requests still in flight when the run ended (neither completed nor failed; those older
    /// than the timeout are also counted as `timeout` errors), and the age of the oldest.
    #[serde(default)]
    pub in_flight_at_end: u64,
    #[serde(default)]
    pub oldest_in_flight_ms: f64,
}

/// The tester's own health: was the client the bottleneck?
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunHealth {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// CPU time / wall time × 100 (200 = both cores of a 2-core machine busy).
    pub cpu_pct: f64,
    pub max_rss_bytes: u64,
    /// How late think-time and pause wakeups fired after they were due.
    pub timer_lateness_ms: Summary,
    /// Wakeups more than `late_threshold_ms` late.
    pub late_wakeups: u64,
    pub late_threshold_ms: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ProtocolStats {
    pub requests: u64,
    pub errors: u64,
    pub connections: u64,
    pub bytes: Directions,
    /// Mean application throughput over the run, bits/s each way.
    pub throughput_bps: Directions,
    /// Request latency: first byte handed to the socket → last response byte read.
    pub latency_ms: Summary,
    /// TCP connect (SYN → established). For QUIC the same as the handshake.
    pub connect_ms: Summary,
    /// TCP: the handshake-sized exchange of a web page; QUIC: the QUIC/TLS handshake.
    pub handshake_ms: Summary,
    /// Connect start → last byte of the first request's response (quic-tun's latency test's "first packet").
    pub first_request_ms: Summary,
    /// `--via`: the proxy's own part of each connect (authentication + CONNECT reply);
    /// `connect_ms` then runs until the tunnel is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_ms: Option<Summary>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ActivityStats {
    pub protocol: String,
    pub sessions: u64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: Directions,
    pub latency_ms: Summary,
    /// Download/upload: request sent → first response byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb_ms: Option<Summary>,
    /// Download/upload: bytes moved / time taken, over all transfers, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_bps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game: Option<GameStats>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GameStats {
    pub sent: u64,
    /// First replies within the loss timeout. `received + lost == sent`.
    pub received: u64,
    pub lost: u64,
    pub late: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub loss_pct: f64,
    /// RFC 3550 interarrival jitter of the RTT, sample-weighted over sessions.
    pub jitter_ms: f64,
    /// The samples `jitter_ms` is the weighted mean of (exact merges); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_samples: Option<u64>,
    pub loss_timeout_ms: f64,
}

/// The text summary printed at the end of `npt run`.
pub fn write_text(
    w: &mut impl std::io::Write,
    doc: &crate::Document<RunBody>,
) -> std::io::Result<()> {
    let b = &doc.body;
    let s = &b.summary;
    let load = match s.arrival_rate_per_s {
        Some(r) => format!("{r} sessions/s (open model, at most {} active)", s.users),
        None => format!("{} users (closed loop, think time)", s.users),
    };
    writeln!(
        w,
        "npt run: {load}, mix {}, {:.1} s, seed {}, stopped by {}",
        s.mix, s.duration_s, s.seed, doc.stopped_by
    )?;
    writeln!(
        w,
        "  sessions {} started, {} completed; {} requests ({:.1}/s); max active users {}, connections {}",
        s.sessions_started,
        s.sessions_completed,
        s.requests,
        s.requests_per_s,
        s.max_active_users,
        s.max_active_connections
    )?;
    writeln!(
        w,
        "  payload {:.1} MB up, {:.1} MB down ({:.2} / {:.2} Mbit/s)",
        s.bytes.up / 1e6,
        s.bytes.down / 1e6,
        s.throughput_bps.up / 1e6,
        s.throughput_bps.down / 1e6
    )?;
    if s.in_flight_at_end > 0 {
        writeln!(
            w,
            "  in flight at the end: {} requests, the oldest {:.1} ms (not in the latencies)",
            s.in_flight_at_end, s.oldest_in_flight_ms
        )?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "  request latency (ms)  {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "requests", "errors", "avg", "min", "p50", "p95", "p99", "max"
    )?;
    let row = |w: &mut dyn std::io::Write, name: &str, n: u64, e: u64, l: &Summary| {
        writeln!(
            w,
            "  {name:<20} {n:>9} {e:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            l.mean, l.min, l.p50, l.p95, l.p99, l.max
        )
    };
    for (p, x) in &b.protocols {
        row(w, p, x.requests, x.errors, &x.latency_ms)?;
    }
    for (a, x) in &b.activities {
        row(w, &format!("  {a}"), x.requests, x.errors, &x.latency_ms)?;
    }
    writeln!(w)?;
    for (p, x) in &b.protocols {
        let m = |s: &Summary| {
            if s.count == 0 {
                "-".to_string()
            } else {
                format!("p50 {:.2} p99 {:.2}", s.p50, s.p99)
            }
        };
        writeln!(
            w,
            "  {p:<5} connections {:>7}  connect {}  handshake {}  first request {}",
            x.connections,
            m(&x.connect_ms),
            m(&x.handshake_ms),
            m(&x.first_request_ms)
        )?;
    }
    for (a, x) in &b.activities {
        if let (Some(t), Some(bps)) = (&x.ttfb_ms, x.transfer_bps) {
            writeln!(
                w,
                "  {a:<8} ttfb p50 {:.2} ms p99 {:.2} ms, throughput {:.1} Mbit/s per transfer",
                t.p50,
                t.p99,
                bps / 1e6
            )?;
        }
        if let Some(g) = &x.game {
            writeln!(
                w,
                "  {a:<8} sent {} received {} lost {} ({:.2}%) late {} dup {} reordered {}, jitter {:.3} ms",
                g.sent, g.received, g.lost, g.loss_pct, g.late, g.duplicated, g.reordered, g.jitter_ms
            )?;
        }
    }
    write!(
        w,
        "  errors {} (rate {:.4})",
        b.errors.total_errors, b.errors.error_rate
    )?;
    for (k, e) in b.errors.by_kind.iter() {
        write!(w, "  {k} {}", e.count)?;
    }
    writeln!(w)?;
    for (k, e) in b.errors.by_kind.iter() {
        if let Some(ex) = e.examples.first() {
            writeln!(w, "    {k}: {ex}")?;
        }
    }
    let h = &b.health;
    writeln!(
        w,
        "  tester: cpu {:.1}% ({:.1} s user, {:.1} s sys), timer lateness p50 {:.2} ms p99 {:.2} ms max {:.2} ms, {} wakeups > {} ms late, max rss {:.1} MB",
        h.cpu_pct,
        h.cpu_user_s,
        h.cpu_sys_s,
        h.timer_lateness_ms.p50,
        h.timer_lateness_ms.p99,
        h.timer_lateness_ms.max,
        h.late_wakeups,
        h.late_threshold_ms,
        h.max_rss_bytes as f64 / 1e6
    )?;
    Ok(())
}
