//! Tests of the one result type: every workload's document reads into it and writes back
//! byte-for-byte the same JSON names, and its shared views (intervals, histograms, headline,
//! health, text) agree with the kind-specific fields they come from.

use std::collections::BTreeMap;
use std::time::SystemTime;

use npt_stats::{ErrorCounts, Histogram};

use super::*;
use crate::common::{Errors, NptLatency};
use crate::error::{error_kind, io_error_kind, is_error_kind, unanswered_close, ErrorKind};
use crate::http::HttpBody;
use crate::http::HttpSummary;
use crate::probe::ProbeBody;
use crate::probe::ProbeSummary;
use crate::run::RunBody;
use crate::run::RunSummary;
use serde::Serialize;

fn hist(values: &[u64]) -> Histogram {
    let mut h = Histogram::new();
    for &v in values {
        h.record(v);
    }
    h
}

fn errors() -> Errors {
    let mut k = ErrorCounts::default();
    k.record("refused", || "connection refused".into());
    Errors::new(k, 10)
}

fn doc<B: Serialize>(kind: &str, body: B) -> serde_json::Value {
    let now = SystemTime::now();
    let d = Document::new(
        kind,
        now,
        now,
        crate::StopReason::Duration,
        serde_json::json!({"x": 1}),
        body,
    );
    serde_json::to_value(d).unwrap()
}

fn probe() -> serde_json::Value {
    let h = hist(&[1_000_000, 2_000_000, 3_000_000]);
    let mut body = ProbeBody {
        summary: ProbeSummary {
            protocol: "udp".into(),
            packets: npt_stats::PacketCounts {
                sent: 4,
                received: 3,
                lost: 1,
                ..Default::default()
            },
            rtt_ms: h.summary(),
            ..ProbeSummary::default()
        },
        health: crate::probe::Health {
            cpu_pct: 12.5,
            ..Default::default()
        },
        latency: BTreeMap::new(),
        errors: errors(),
        histograms: [
            ("rtt".to_string(), h.to_serialized()),
            ("ipdv".to_string(), Histogram::new().to_serialized()),
        ]
        .into(),
        intervals: vec![Interval {
            index: 0,
            end_s: 1.0,
            sent: Some(4),
            completed: 3,
            lost: Some(1),
            loss_pct: Some(25.0),
            rate_per_s: 4.0,
            latency_ms: h.summary(),
            histogram: h.to_serialized(),
            ..Interval::default()
        }],
        under_load: None,
    };
    body.latency
        .insert("udp".into(), NptLatency::from(&body.summary.rtt_ms));
    doc("probe", body)
}

fn run() -> serde_json::Value {
    let (tcp, quic) = (hist(&[5_000_000, 6_000_000]), hist(&[50_000_000]));
    let mut histograms = BTreeMap::new();
    histograms.insert("proto.tcp.latency".to_string(), tcp.to_serialized());
    histograms.insert("proto.quic.latency".to_string(), quic.to_serialized());
    histograms.insert(
        "health.timer_lateness".to_string(),
        hist(&[1]).to_serialized(),
    );
    let body = RunBody {
        summary: RunSummary {
            requests: 3,
            ..RunSummary::default()
        },
        health: crate::health::Health {
            cpu_pct: 40.0,
            max_rss_bytes: 7,
            ..Default::default()
        },
        latency: BTreeMap::new(),
        errors: errors(),
        protocols: BTreeMap::new(),
        activities: BTreeMap::new(),
        histograms,
        intervals: vec![Interval {
            index: 2,
            start_s: 2.0,
            end_s: 2.5,
            completed: 3,
            errors: 1,
            rate_per_s: 6.0,
            latency_ms: tcp.summary(),
            active_users: Some(2),
            histogram: tcp.to_serialized(),
            ..Interval::default()
        }],
    };
    doc("run", body)
}

fn http() -> serde_json::Value {
    let h = hist(&[200_000; 4]);
    let body = HttpBody {
        summary: HttpSummary {
            url: "http://127.0.0.1:1/".into(),
            method: "GET".into(),
            protocol: "http/1.1".into(),
            connections: 1,
            streams: 1,
            requests: 4,
            latency_ms: h.summary(),
            ..HttpSummary::default()
        },
        hosts: BTreeMap::new(),
        cold_start: None,
        health: Default::default(),
        latency: BTreeMap::new(),
        errors: errors(),
        histograms: [
            ("latency", h.to_serialized()),
            ("ttfb", h.to_serialized()),
            ("connect", Histogram::new().to_serialized()),
            ("hosts.a.test", h.to_serialized()),
        ]
        .into_iter()
        .map(|(k, h)| (k.to_string(), h))
        .collect(),
        intervals: vec![Interval {
            index: 0,
            end_s: 1.0,
            completed: 4,
            rate_per_s: 4.0,
            latency_ms: h.summary(),
            status: Some([("200".to_string(), 4)].into()),
            histogram: h.to_serialized(),
            ..Interval::default()
        }],
        setup: None,
    };
    doc("http", body)
}

#[test]
fn every_kind_reads_into_one_type_and_writes_back_the_same_json() {
    for (kind, json) in [("probe", probe()), ("run", run()), ("http", http())] {
        let r = from_value("f.json", json.clone()).unwrap();
        assert_eq!(r.body.kind().name(), kind);
        assert_eq!(r.kind, kind);
        assert_eq!(serde_json::to_value(&r).unwrap(), json, "{kind}");
        assert_eq!(r.body.view().errors().total_errors, 1, "{kind}");
        assert_eq!(r.body.view().errors().attempts, Some(10), "{kind}");
    }
}

#[test]
fn the_shared_views_come_from_each_kinds_own_fields() {
    let p = from_value("p", probe()).unwrap().body;
    let iv = &p.view().intervals()[0];
    assert_eq!(
        (iv.rate_per_s, iv.completed, iv.loss_pct),
        (4.0, 3, Some(25.0))
    );
    assert_eq!(p.view().latency()["udp"].max_ms, iv.latency_ms.max);
    assert_eq!(p.view().health().cpu_pct, 12.5);
    assert_eq!(
        p.view().histograms().into_keys().collect::<Vec<_>>(),
        vec!["ipdv", "rtt"]
    );
    assert_eq!(p.view().headline().count(), 3);

    let r = from_value("r", run()).unwrap().body;
    let iv = &r.view().intervals()[0];
    assert_eq!(
        (iv.index, iv.rate_per_s, iv.errors, iv.loss_pct),
        (2, 6.0, 1, None)
    );
    assert_eq!(
        (r.view().health().cpu_pct, r.view().health().max_rss_bytes),
        (40.0, 7)
    );
    // Run's headline is every protocol's request latency added exactly, no timer lateness.
    let all = hist(&[5_000_000, 6_000_000, 50_000_000]);
    assert_eq!(r.view().headline().summary(), all.summary());
    assert!(r.view().histograms().contains_key("proto.quic.latency"));

    let h = from_value("h", http()).unwrap().body;
    assert_eq!(h.view().intervals()[0].rate_per_s, 4.0);
    assert!(h.view().histograms().contains_key("hosts.a.test"));
    assert_eq!(h.view().headline().count(), 4);
}

#[test]
fn unreadable_documents_are_errors_that_name_the_file() {
    let mut old = probe();
    old["schema"] = "npt.result.v0".into();
    let e = from_value("old.json", old).unwrap_err().to_string();
    assert!(e.contains("old.json") && e.contains("npt.result.v0"), "{e}");
    let mut other = probe();
    // (`trace` was this example until npt wrote trace results.)
    other["kind"] = "iperf".into();
    let e = from_value("iperf.json", other).unwrap_err();
    assert!(matches!(e, ReadError::Kind(..)), "{e}");
    let mut broken = run();
    broken["intervals"] = "no".into();
    let e = from_value("b.json", broken).unwrap_err().to_string();
    assert!(e.starts_with("b.json: a run document"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &http().to_string()[..100]).unwrap();
    let e = read(&cut).unwrap_err().to_string();
    assert!(e.contains("cut.json: not a result document"), "{e}");
}

#[test]
fn old_error_kind_names_read_in_the_one_vocabulary() {
    let mut json = http();
    json["errors"]["by_kind"] = serde_json::json!({
        "connect": {"count": 2, "examples": ["connect: no route"]},
        "io": {"count": 1, "examples": ["x"]},
        "aborted": {"count": 3, "examples": ["a"]}});
    let r = from_value("old.json", json).unwrap();
    let k = &r.body.view().errors().by_kind;
    assert_eq!((k.get("io"), k.get("reset"), k.get("connect")), (3, 3, 0));
    for kind in ErrorKind::SOCKET.map(ErrorKind::name) {
        assert_eq!(error_kind(kind), kind, "the vocabulary maps to itself");
    }
}

/// A v1 document of each kind (the layouts before the one interval record and the flat
/// histogram map) reads as the v2 document with the same figures.
#[test]
fn v1_documents_read_in_the_v2_layout() {
    let to_v1 = |mut v2: serde_json::Value| {
        v2["schema"] = crate::SCHEMA_V1.into();
        let kind = v2["kind"].as_str().unwrap().to_string();
        let iv = &mut v2["intervals"][0];
        let o = iv.as_object_mut().unwrap();
        let mv = |o: &mut serde_json::Map<String, serde_json::Value>, from: &str, to: &str| {
            let v = o.remove(from).unwrap();
            o.insert(to.to_string(), v);
        };
        match kind.as_str() {
            "probe" => {
                mv(o, "completed", "received");
                mv(o, "rate_per_s", "pps");
                mv(o, "latency_ms", "rtt_ms");
                o.remove("errors");
            }
            "run" => {
                mv(o, "completed", "requests");
                o.remove("rate_per_s");
            }
            _ => {
                mv(o, "completed", "requests");
                mv(o, "rate_per_s", "rps");
                let h = v2["histograms"].as_object_mut().unwrap();
                let host = h.remove("hosts.a.test").unwrap();
                h.insert("hosts".into(), serde_json::json!({ "a.test": host }));
            }
        }
        v2
    };
    for v2 in [probe(), run(), http()] {
        let v1 = to_v1(v2.clone());
        assert_ne!(v1, v2);
        let r = from_value("old.json", v1).unwrap();
        assert_eq!(r.schema, crate::SCHEMA);
        assert_eq!(serde_json::to_value(&r).unwrap(), v2, "{}", v2["kind"]);
    }
}

#[test]
fn a_ping_reads_as_one_result_too() {
    let h = hist(&[1_000_000, 3_000_000]);
    let body = crate::ping::PingBody {
        target: "tcp://127.0.0.1:1".into(),
        proto: "tcp".into(),
        addresses: vec!["127.0.0.1:1".into()],
        summary: crate::ping::PingSummary {
            sent: 3,
            received: 2,
            lost: 1,
            ..Default::default()
        },
        latency: BTreeMap::new(),
        errors: Errors::default(),
        histogram: h.to_serialized(),
        measured_from: None,
        answered_by: None,
        note: None,
        phases: None,
        setup: None,
    };
    let json = doc("ping", body);
    let r = from_value("p.json", json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap(), json);
    assert_eq!(r.body.kind(), crate::Kind::Ping);
    assert!(r.body.view().intervals().is_empty());
    assert_eq!(r.body.view().headline().count(), 2);
    // Its text, as `npt ping` printed it: npt-report's text::ping tests.
}

#[test]
fn every_socket_error_has_a_kind_of_the_vocabulary() {
    use std::io::ErrorKind as K;
    let kinds = [
        K::NotFound,
        K::PermissionDenied,
        K::ConnectionRefused,
        K::ConnectionReset,
        K::HostUnreachable,
        K::NetworkUnreachable,
        K::ConnectionAborted,
        K::NotConnected,
        K::AddrInUse,
        K::AddrNotAvailable,
        K::NetworkDown,
        K::BrokenPipe,
        K::AlreadyExists,
        K::WouldBlock,
        K::InvalidInput,
        K::InvalidData,
        K::TimedOut,
        K::WriteZero,
        K::Interrupted,
        K::Unsupported,
        K::UnexpectedEof,
        K::OutOfMemory,
        K::Other,
    ];
    let mut seen = std::collections::BTreeSet::new();
    for k in kinds {
        seen.insert(io_error_kind(&io::Error::from(k)));
    }
    for errno in 1..200 {
        seen.insert(io_error_kind(&io::Error::from_raw_os_error(errno)));
    }
    for k in &seen {
        assert!(ErrorKind::SOCKET.contains(k), "{k}");
    }
    // Every kind of the vocabulary but tls (TLS errors are not socket errors) and
    // closed_unanswered (it needs the connection's history: `unanswered_close`) is reachable.
    assert_eq!(seen.len(), ErrorKind::SOCKET.len() - 2, "{seen:?}");
    let eof = io::Error::from(K::UnexpectedEof);
    let rst = io::Error::from(K::ConnectionReset);
    assert_eq!(unanswered_close(&eof, false), ErrorKind::ClosedUnanswered);
    assert_eq!(unanswered_close(&rst, false), ErrorKind::ClosedUnanswered);
    assert_eq!(unanswered_close(&eof, true), ErrorKind::Closed);
    assert_eq!(unanswered_close(&rst, true), ErrorKind::Reset);
    let timeout = io::Error::from(K::TimedOut);
    assert_eq!(unanswered_close(&timeout, false), ErrorKind::Timeout);
    assert_eq!(
        io_error_kind(&io::Error::from_raw_os_error(libc::EMFILE)),
        ErrorKind::Local
    );
    assert_eq!(
        io_error_kind(&io::Error::from_raw_os_error(libc::ECONNABORTED)),
        ErrorKind::Reset
    );
    assert!(
        is_error_kind("proxy_refused") && is_error_kind("stalled") && !is_error_kind("aborted")
    );
}
