//! One document of each kind as npt writes it, for the schema tests to validate and break: the
//! v1 fixtures of `npt-report` read back for probe, run and http, the others built from their
//! types with figures a real run gives.

use std::path::Path;
use std::time::{Duration, SystemTime};

use npt_result::any;
use npt_result::bulk::{BulkBody, BulkSummary, StreamInterval, StreamTotal};
use npt_result::common::{Directions, Errors, NptLatency};
use npt_result::interval::Interval;
use npt_result::ping::{PingBody, PingSummary};
use npt_result::stats::trace::{round, LegStats, TraceMeta, TraceStats};
use npt_result::stats::PingStats;
use npt_result::{Document, ErrorCounts, Health, StopReason};
use npt_stats::Histogram;
use serde_json::{json, Value};

/// One document of each kind, as npt writes it: the v1 fixtures of `npt-report` read (and so
/// converted to v2) for probe, run and http, and a ping and a bulk built from their types.
pub fn documents() -> Vec<(&'static str, Value)> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/v1");
    let mut docs: Vec<(&str, Value)> = ["probe", "run", "http"]
        .into_iter()
        .map(|kind| {
            let doc = any::read(&fixtures.join(format!("{kind}-0.json"))).unwrap();
            (kind, serde_json::to_value(&doc).unwrap())
        })
        .collect();
    let mut rtt = Histogram::new();
    for ns in [180_000, 210_000, 250_000] {
        rtt.record(ns);
    }
    let s = rtt.summary();
    let mut errors = ErrorCounts::default();
    errors.record("timeout", || "no answer in 1s".into());
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let ping = Document::new(
        "ping",
        start,
        start + Duration::from_secs(4),
        StopReason::Count,
        json!({"count": 4}),
        PingBody {
            target: "udp://127.0.0.1:9".into(),
            proto: "udp".into(),
            addresses: vec!["127.0.0.1:9".into()],
            summary: PingSummary {
                sent: 4,
                received: 3,
                lost: 1,
                loss_pct: 25.0,
                late: 0,
                refused_by_server: 0,
                min_ms: s.min,
                avg_ms: s.mean,
                p50_ms: s.p50,
                p90_ms: s.p90,
                p95_ms: s.p95,
                p99_ms: s.p99,
                max_ms: s.max,
                stddev_ms: s.stddev,
                far_end: Some("npt-serve".into()),
            },
            latency: [("udp".to_string(), NptLatency::from(&s))].into(),
            errors: Errors::new(errors, 4),
            histogram: rtt.to_serialized(),
            measured_from: None,
            // As `npt ping tcp:// --echo` writes it: connect and echo apart.
            answered_by: Some(npt_result::ping::answered_by::ECHO.into()),
            note: None,
            phases: Some(npt_result::ping::EchoPhases {
                connect_ms: NptLatency::from(&s),
                echo_ms: NptLatency::from(&s),
                histograms: [
                    ("connect".to_string(), rtt.to_serialized()),
                    ("echo".to_string(), rtt.to_serialized()),
                ]
                .into(),
            }),
            // The block `--setup` adds: the setup document's body, checked by the same schema.
            setup: Some(setup(start, &rtt).body),
        },
    );
    docs.push(("ping", serde_json::to_value(&ping).unwrap()));
    docs.push(("bulk", serde_json::to_value(bulk(start, &rtt)).unwrap()));
    docs.push(("trace", serde_json::to_value(trace(start)).unwrap()));
    docs.push((
        "lifetime",
        serde_json::to_value(lifetime(start, &rtt)).unwrap(),
    ));
    docs.push(("mtu", serde_json::to_value(mtu(start, &rtt)).unwrap()));
    docs.push(("setup", serde_json::to_value(setup(start, &rtt)).unwrap()));
    docs
}

/// A path MTU of 1400 in the middle: PMTUD works up, a black hole down.
fn mtu(start: SystemTime, rtt: &Histogram) -> Document<npt_result::mtu::MtuBody> {
    use npt_result::mtu::{MtuBody, MtuDirection, MtuSummary};
    let up = MtuDirection {
        verdict: "icmp".into(),
        largest_datagram: Some(1372),
        largest_packet: Some(1400),
        smallest_lost: Some(1373),
        settled: true,
        icmp_mtu: Some(1400),
        icmp_from: Some("10.0.2.1".into()),
        sent: 9,
        answered: 6,
        ..MtuDirection::default()
    };
    let down = MtuDirection {
        verdict: "black_hole".into(),
        icmp_mtu: None,
        icmp_from: None,
        largest_fragment: Some(1400),
        lost_sizes: 3,
        sent: 19,
        answered: 10,
        ..up.clone()
    };
    let body = MtuBody {
        target: "udp://10.0.3.2:7777".into(),
        address: "10.0.3.2:7777".into(),
        summary: MtuSummary {
            headers: 28,
            max: 1472,
            far_end: "npt-serve".into(),
            timed_out: false,
            via: None,
            via_header: 0,
            up,
            down,
            rounds: None,
        },
        latency: [("udp".to_string(), NptLatency::from(&rtt.summary()))].into(),
        errors: Errors::new(ErrorCounts::default(), 28),
        rtt_histogram: rtt.to_serialized(),
    };
    let end = start + Duration::from_secs(3);
    Document::new("mtu", start, end, StopReason::Count, json!({}), body)
}

/// A setup through SOCKS5 with TLS 1.3, the CONNECT flagged, as `npt setup` writes it.
fn setup(start: SystemTime, rtt: &Histogram) -> Document<npt_result::setup::SetupBody> {
    use npt_result::setup::{LayerRecord, SetupBody, SetupSummary};
    let layer = |layer: &str, what: &str, ms: f64, expected: f64, flag: Option<&str>| LayerRecord {
        layer: layer.into(),
        what: what.into(),
        samples: 10,
        p50_ms: ms,
        p50_lo_ms: ms - 0.1,
        p50_hi_ms: ms + 0.2,
        min_ms: ms - 0.2,
        max_ms: ms + 3.0,
        rtts: ms / 50.0,
        rtts_lo: (ms - 0.1) / 50.0,
        rtts_hi: (ms + 0.2) / 50.0,
        expected_rtts: expected,
        flag: flag.map(Into::into),
    };
    let body = SetupBody {
        target: "https://10.0.1.2:8443".into(),
        address: "10.0.1.2:1080 (proxy)".into(),
        via: Some("socks5://10.0.1.2:1080".into()),
        summary: SetupSummary {
            attempts: 10,
            completed: 10,
            rtt_ms: 50.0,
            rtt_p50_ms: 50.1,
            rtt_samples: 10,
            rtt_from: "warm_request".into(),
            setup_p50_ms: 301.0,
            setup_rtts: 6.02,
            expected_rtts: 5.0,
            flagged: 1,
            runs: None,
            flagged_runs: None,
            tls_version: Some("1.3".into()),
            resumed: None,
            resumption_refused: None,
            zero_rtt_sent: None,
            zero_rtt_accepted: None,
        },
        layers: vec![
            layer(
                "tcp_connect",
                "TCP connect to the proxy 10.0.1.2:1080",
                50.1,
                1.0,
                None,
            ),
            layer("socks5_greeting", "SOCKS5 greeting", 50.1, 1.0, None),
            layer(
                "socks5_connect",
                "SOCKS5 CONNECT",
                100.3,
                1.0,
                Some("2.01 round trips where SOCKS5 CONNECT needs 1"),
            ),
            layer("tls", "TLS 1.3", 50.5, 1.0, None),
            layer("first_byte", "the first response byte", 50.2, 1.0, None),
        ],
        latency: [("setup".to_string(), NptLatency::from(&rtt.summary()))].into(),
        errors: Errors::new(ErrorCounts::default(), 10),
        histograms: [
            ("setup".to_string(), rtt.to_serialized()),
            ("rtt".to_string(), rtt.to_serialized()),
        ]
        .into(),
    };
    let end = start + Duration::from_secs(4);
    Document::new("setup", start, end, StopReason::Count, json!({}), body)
}

/// A lifetime through a NAT of 30 s that rebinds, as `npt lifetime` writes it.
fn lifetime(start: SystemTime, rtt: &Histogram) -> Document<npt_result::lifetime::LifetimeBody> {
    use npt_result::lifetime::{FlowRecord, LifetimeBody, LifetimeSummary};
    let flow = |gap_s: f64, fate: &str, held_s: Option<f64>, after: Option<&str>| FlowRecord {
        round: 1,
        gap_s,
        fate: fate.into(),
        held_s,
        seen: Some("10.0.1.1:40001".into()),
        seen_after: after.map(Into::into),
        closed_by: None,
        closed_after_s: None,
    };
    let body = LifetimeBody {
        target: "udp://10.0.2.2:7777".into(),
        address: "10.0.2.2:7777".into(),
        summary: LifetimeSummary {
            lifetime_s: Some(30.2),
            alive_after_s: Some(29.8),
            gone_after_s: Some(30.6),
            longer_than_max: false,
            max_s: 40.0,
            resolution_s: 1.0,
            rounds: 2,
            rebound: Some(true),
            rebound_checked: 1,
            rebound_flows: 1,
            inconsistent: 0,
            refused: 0,
            cut_off: None,
        },
        flows: vec![
            flow(29.8, "alive", Some(29.8), None),
            flow(30.6, "gone", None, None),
            flow(31.6, "rebind", None, Some("10.0.1.1:51234")),
            flow(35.0, "cancelled", None, None),
        ],
        latency: [("udp".to_string(), NptLatency::from(&rtt.summary()))].into(),
        errors: Errors::new(ErrorCounts::default(), 3),
        ack_histogram: rtt.to_serialized(),
    };
    let end = start + Duration::from_secs(62);
    Document::new("lifetime", start, end, StopReason::Count, json!({}), body)
}

/// A trace of a two-relay chain with a `--during` command, as `npt trace` writes it.
fn trace(start: SystemTime) -> Document<npt_result::trace::TraceBody> {
    let leg = |from: &str, to: &str, ms: &[u64]| {
        let mut stats = PingStats::default();
        for v in ms {
            stats.sent += 1;
            stats.received += 1;
            stats.rtt.record(v * 1_000_000);
        }
        LegStats {
            from: from.into(),
            to: to.into(),
            addresses: vec![to.rsplit('/').next().unwrap().into()],
            stats,
        }
    };
    let mut t = TraceStats {
        segments: vec![
            leg("here", "tcp://10.0.5.2:7777", &[152, 153]),
            leg("npt://10.0.5.2:7777", "tcp://10.0.4.2:7777", &[32, 32]),
            leg("npt://10.0.2.2:7777", "tcp://10.0.3.2:7777", &[69, 70]),
        ],
        chain: Some(leg("here", "tcp://10.0.5.2:9003", &[254, 255])),
        ..TraceStats::default()
    };
    let seg: Vec<&PingStats> = t.segments.iter().map(|l| &l.stats).collect();
    let chain = t.chain.as_ref().map(|c| &c.stats);
    let silent = PingStats {
        sent: 2,
        ..PingStats::default()
    };
    let mut later = seg.clone();
    later[1] = &silent;
    // A round in which a segment did not answer: its p50 is left out, never null.
    t.rounds = vec![
        round(0, "before", (0.0, 1.0), &seg, chain),
        round(1, "during", (1.0, 2.0), &later, chain),
    ];
    t.during = Some(npt_result::trace::During {
        command: "npt compare s.toml".into(),
        exit_code: Some(0),
        note: None,
    });
    let body = t.summarize(&TraceMeta {
        target: "tcp://10.0.3.2:7777".into(),
        proto: "tcp".into(),
    });
    let end = start + Duration::from_secs(2);
    Document::new("trace", start, end, StopReason::Count, json!({}), body)
}

/// A one-second upload over one TCP stream, as `npt bulk` writes it.
fn bulk(start: SystemTime, rtt: &Histogram) -> Document<BulkBody> {
    let bytes = Directions::bytes(1_250_000, 0);
    let goodput = Directions::bits_per_s(1_250_000, 0, 1.0);
    let interval = Interval {
        index: 0,
        start_s: 0.0,
        end_s: 1.0,
        latency_ms: rtt.summary(),
        bandwidth_bps: Some(goodput),
        bytes: Some(bytes),
        streams: Some(vec![StreamInterval {
            index: 0,
            bytes: 1_250_000,
            bps: goodput.up,
            retransmits: Some(2),
            rtt_ms: Some(0.2),
            rttvar_ms: Some(0.05),
            cwnd: Some(10),
            delivery_rate_bps: Some(9.8e6),
        }]),
        histogram: rtt.to_serialized(),
        ..Interval::default()
    };
    let body = BulkBody {
        summary: BulkSummary {
            target: "tcp://127.0.0.1:9".into(),
            protocol: "tcp".into(),
            direction: "up".into(),
            streams: 1,
            duration_s: 1.0,
            bytes,
            goodput_bps: goodput,
            goodput_mbps: goodput.up / 1e6,
            retransmits: Some(2),
            rtt_ms: Some(rtt.summary()),
            rate_bps: Some(10e6),
            rate_achieved_pct: Some(100.0),
            congestion: Some("cubic".into()),
            udp: None,
            failed_streams: 0,
        },
        streams: vec![StreamTotal {
            index: 0,
            direction: "up".into(),
            bytes: 1_250_000,
            goodput_bps: goodput.up,
            retransmits: Some(2),
            rtt_ms: Some(0.2),
            rate_bps: Some(10e6),
            congestion: Some("cubic".into()),
            error: None,
        }],
        health: Health {
            sends_behind_schedule: Some(0),
            behind_threshold_ms: Some(1.0),
            cpu_user_s: 0.1,
            cpu_pct: 10.0,
            max_rss_bytes: 8 << 20,
            ..Health::default()
        },
        latency: [("tcp".to_string(), NptLatency::from(&rtt.summary()))].into(),
        errors: Errors::new(ErrorCounts::default(), 1),
        histograms: [("rtt".to_string(), rtt.to_serialized())].into(),
        intervals: vec![interval],
    };
    let end = start + Duration::from_secs(1);
    Document::new("bulk", start, end, StopReason::Duration, json!({}), body)
}
