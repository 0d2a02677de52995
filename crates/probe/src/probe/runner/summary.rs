//! What a finished probe's totals become in the result: each merged interval as a record, and
//! the flows' totals as the probe's stats value (TCP phases and totals, directions, the proxy
//! handshakes, the tester's health) with the meta its summary states. Apart from the runner,
//! which only gathers what the flows report; the unit tests build bodies through these.

use npt_result::interval::{Interval as Record, Intervals};
use npt_result::probe::{hist, Directions};
use npt_result::stats::directions::DirStats;
use npt_result::stats::probe::{ProxyStats, SendRates};
use npt_result::stats::{ProbeMeta, ProbeStats};
use npt_result::{loss_pct, Health};
use npt_stats::Histogram;

use super::super::driver::TcpTimes;
use super::super::session::{DirTotals, Interval, Totals};
use super::{PacingSpec, ProbeConfig, Proto};

pub(super) fn interval_record(iv: &Interval, run_start: u64) -> Record {
    // Per direction once a flow's server told what it saw (an older server's record stays as
    // it was).
    let reflected = iv.reflected > 0;
    let dur = (iv.end.saturating_sub(iv.start)) as f64 / 1e9;
    let per_s = |x: f64| if dur > 0.0 { x / dur } else { 0.0 };
    Record {
        index: iv.index,
        start_s: iv.start.saturating_sub(run_start) as f64 / 1e9,
        end_s: iv.end.saturating_sub(run_start) as f64 / 1e9,
        completed: iv.packets.received,
        // Per-interval errors are not counted: a probe's failures are losses (`lost`).
        errors: 0,
        rate_per_s: per_s(iv.packets.sent as f64),
        latency_ms: iv.rtt.summary(),
        sent: Some(iv.packets.sent),
        lost: Some(iv.packets.lost),
        refused: (iv.refused > 0).then_some(iv.refused),
        lost_up: reflected.then_some(iv.lost_up),
        lost_down: reflected.then_some(iv.lost_down),
        late: Some(iv.packets.late),
        duplicated: Some(iv.packets.duplicated),
        reordered: Some(iv.packets.reordered),
        loss_pct: Some(loss_pct(
            iv.packets.lost,
            iv.packets.sent.saturating_sub(iv.refused),
        )),
        jitter_ms: Some(iv.jitter.value_ns() / 1e6),
        jitter_samples: Some(iv.jitter.samples()),
        bandwidth_bps: Some(Directions {
            up: per_s(iv.bytes_up as f64 * 8.0),
            down: per_s(iv.bytes_down as f64 * 8.0),
        }),
        histogram: iv.rtt.to_serialized(),
        ..Record::default()
    }
}

/// The proxy handshakes, when the run went through a proxy.
pub(super) fn proxy_stats(cfg: &ProbeConfig, phases: &[npt_proxy::Phases]) -> Option<ProxyStats> {
    let via = cfg.via.as_ref()?;
    let sum = |f: fn(&npt_proxy::Phases) -> u64| phases.iter().map(f).sum::<u64>() as f64;
    Some(ProxyStats {
        via: via.to_string(),
        handshakes: phases.len() as u64,
        proxy_connect_ns: sum(|p| p.proxy_connect_ns),
        auth_ns: sum(|p| p.auth_ns),
        reply_ns: sum(|p| p.reply_ns),
        handshake_ns: sum(|p| p.total_ns()),
    })
}

/// What the summary says about the configuration.
pub(super) fn probe_meta(cfg: &ProbeConfig) -> ProbeMeta {
    ProbeMeta {
        // A STAMP probe is a UDP probe with STAMP's framing: the same summary, the NPT block
        // under `udp`.
        protocol: if cfg.proto.is_udp() { "udp" } else { "tcp" }.to_string(),
        target: cfg.target.clone(),
        mode: match cfg.pacing {
            PacingSpec::Interval { .. } => "interval",
            PacingSpec::Rate { .. } => "rate",
            PacingSpec::Relay { .. } => "relay",
        }
        .to_string(),
        open_loop: matches!(cfg.pacing, PacingSpec::Rate { .. }),
        framing: match (cfg.proto, cfg.raw) {
            (Proto::Stamp, _) => "stamp",
            (_, true) => "raw",
            _ => "framed",
        }
        .to_string(),
        size: u32::try_from(cfg.size).unwrap_or(u32::MAX),
        loss_timeout_ms: cfg.loss_timeout.as_secs_f64() * 1e3,
    }
}

/// The flows' totals as the probe's stats value: the send phase's rates on this run's clock,
/// TCP phases one value per flow into histograms ([`tcp_phases`]), the TCP totals
/// ([`tcp_totals`]), and the tester's health (the process's CPU time since `cpu0`, the run's
/// start, over `wall_s`).
pub(super) fn probe_stats(
    cfg: &ProbeConfig,
    t: &Totals,
    tcp: &[TcpTimes],
    intervals: Vec<Record>,
    cpu0: (f64, f64),
    wall_s: f64,
) -> ProbeStats {
    let open_loop = matches!(cfg.pacing, PacingSpec::Rate { .. });
    let mut histograms = npt_result::stats::HistMap::default();
    histograms.add(hist::RTT, &t.rtt);
    if open_loop {
        histograms.add(hist::RTT_CORRECTED, &t.rtt_corrected);
    }
    histograms.add(hist::IPDV, &t.ipdv);
    if cfg.proto == Proto::Tcp {
        tcp_phases(tcp, &mut histograms);
    }
    let (total_ms, total_after_connect_ms) = if cfg.proto == Proto::Tcp {
        tcp_totals(tcp, t.last_reply)
    } else {
        (None, None)
    };
    let health = Health::measured(cpu0, wall_s).with_sends(
        t.behind_schedule,
        cfg.behind_threshold.as_secs_f64() * 1e3,
        t.send_lateness.summary(),
    );
    let d = &t.dir;
    // A stateless STAMP reflector tells no counts but stamps every answer: its delays per
    // direction still make a block (with every loss unplaced).
    let directions = (d.flows.reflected > 0 || d.stamped > 0).then(|| {
        for (name, h) in [
            (hist::DWELL, &d.dwell),
            (hist::IPDV_UP, &d.ipdv_up),
            (hist::IPDV_DOWN, &d.ipdv_down),
            (hist::OWD_UP, &d.owd_up),
            (hist::OWD_DOWN, &d.owd_down),
        ] {
            histograms.add(name, h);
        }
        dir_stats(cfg, d)
    });
    ProbeStats {
        clients: cfg.clients,
        packets: t.packets,
        refused: t.refused,
        refusal_notices: d
            .notices
            .by_reason()
            .map(|(k, n)| (k.to_string(), n))
            .collect(),
        round_trip_only: directions.is_none().then(|| {
            if cfg.raw {
                "raw"
            } else if t.answered.name() == npt_result::far_end::ECHO {
                "echo"
            } else {
                "server"
            }
            .to_string()
        }),
        directions,
        far_end: Some(t.answered.name().to_string()),
        foreign_example: t.foreign_example.clone(),
        corrupt: t.corrupt,
        foreign: t.foreign,
        stale: t.stale,
        bytes: Directions::bytes(t.bytes_up, t.bytes_down),
        rates: SendRates::measured(
            t.packets.sent,
            t.packets.received,
            t.bytes_up,
            t.bytes_down,
            t.first_send,
            t.last_send,
        ),
        histograms,
        jitter: t.jitter,
        errors: npt_result::common::ErrorStats {
            by_kind: t.errors.clone(),
            attempts: t.packets.sent,
        },
        total_ms,
        total_after_connect_ms,
        health,
        intervals: Intervals::of(intervals),
        marking: npt_result::marking::Marking {
            sent: cfg.source.tos.map(npt_result::marking::Tos::of),
            asked: match (cfg.raw, cfg.proto) {
                (false, Proto::Udp) => cfg.mark.map(npt_result::marking::Tos::of),
                _ => None,
            },
            ..t.marking.clone()
        },
        ..ProbeStats::default()
    }
}

/// The TCP phases of each flow's first connection, one value per flow: `connect` (its start to
/// the clock read that saw it up), `first_echo` (the first reply's RTT: from the clock read
/// before its send, after the connection was up, to the one after its reply was read —
/// quic-tun's "first packet latency", whose clock starts after `connect` returned) and
/// `first_packet` (the two added: npt's, what a user waits for a first answer). Nothing when
/// no flow connected.
fn tcp_phases(tcp: &[TcpTimes], histograms: &mut npt_result::stats::HistMap) {
    let (mut connect, mut first_packet, mut first_echo) =
        (Histogram::new(), Histogram::new(), Histogram::new());
    for x in tcp {
        if let Some(c) = x.connect_ns {
            connect.record(c);
            if let Some(e) = x.first_echo_ns {
                first_packet.record(c + e);
                first_echo.record(e);
            }
        }
    }
    if !connect.is_empty() {
        histograms.add(hist::CONNECT, &connect);
        histograms.add(hist::FIRST_PACKET, &first_packet);
        histograms.add(hist::FIRST_ECHO, &first_echo);
    }
}

/// TCP's totals, ms, to `last_reply` (the last reply of any flow): from the start of the first
/// connect of any flow (npt's `total`), and from the first moment a flow's connection was up
/// (quic-tun's "total latency", whose clock starts after `connect` returned). With one client
/// the two differ by exactly its connect time.
fn tcp_totals(tcp: &[TcpTimes], last_reply: Option<u64>) -> (Option<f64>, Option<f64>) {
    let Some(r) = last_reply else {
        return (None, None);
    };
    let since = |s: u64| r.saturating_sub(s) as f64 / 1e6;
    let first_start = tcp.iter().map(|x| x.connect_start).min();
    let first_up = tcp
        .iter()
        .filter_map(|x| x.connect_ns.map(|c| x.connect_start + c))
        .min();
    (first_start.map(since), first_up.map(since))
}

/// The flows' per-direction counts as the result's value (its histograms go in the map).
fn dir_stats(cfg: &ProbeConfig, d: &DirTotals) -> DirStats {
    let ms = |ns: i64| ns as f64 / 1e6;
    DirStats {
        flows: d.flows,
        clock: cfg.clock.name().to_string(),
        counts: cfg.proto.is_udp(),
        lost_up: d.lost_up,
        lost_down: d.lost_down,
        unplaced: d.unplaced,
        dup_up: d.dup_up,
        dup_down: d.dup_down,
        reorder_up: d.reorder_up,
        reorder_down: d.reorder_down,
        stamped: d.stamped,
        owd_negative: d.owd_negative,
        owd_min_ms: d.owd_min_ns.map(ms),
        far_error_ms: d.far_error_ns.map(|e| e as f64 / 1e6),
    }
}
