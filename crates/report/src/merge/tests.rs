//! Merge tests on documents built in memory: a recorded set of samples split over parts must
//! merge into exactly the distribution of one result that held them all, and parts that do
//! not belong together are refused.

use std::time::SystemTime;

use npt_stats::Histogram;

use super::*;
use npt_result::interval::Interval;
use npt_result::probe::{hist, ProbeBody, ProbeSummary};

fn probe_doc(samples: &[u64], index: u32, count: u32, run_id: &str) -> serde_json::Value {
    let mut h = Histogram::new();
    for &s in samples {
        h.record(s);
    }
    let summary = ProbeSummary {
        protocol: "udp".into(),
        clients: 1,
        packets: npt_stats::PacketCounts {
            sent: samples.len() as u64 + 1,
            received: samples.len() as u64,
            lost: 1,
            ..Default::default()
        },
        pps: 100.0,
        rtt_ms: h.summary(),
        ..ProbeSummary::default()
    };
    let iv = Interval {
        index: 0,
        sent: Some(summary.packets.sent),
        completed: summary.packets.received,
        lost: Some(1),
        latency_ms: h.summary(),
        histogram: h.to_serialized(),
        ..Interval::default()
    };
    let body = ProbeBody {
        summary,
        health: Default::default(),
        latency: Default::default(),
        errors: Default::default(),
        histograms: [
            (hist::RTT.to_string(), h.to_serialized()),
            (hist::IPDV.to_string(), Histogram::new().to_serialized()),
        ]
        .into(),
        intervals: vec![iv],
        under_load: None,
    };
    let config = serde_json::json!({"segment": {
        "index": index, "count": count, "run_id": run_id, "config_hash": "h1"}});
    let now = SystemTime::now();
    serde_json::to_value(Document::new(
        "probe",
        now,
        now,
        npt_result::StopReason::Count,
        config,
        body,
    ))
    .unwrap()
}

fn part(json: serde_json::Value, name: &str) -> Part {
    let dir = std::env::temp_dir().join(format!("npt-merge-{}-{name}", std::process::id()));
    std::fs::write(&dir, json.to_string()).unwrap();
    let p = Part::read(&dir).unwrap();
    let _ = std::fs::remove_file(&dir);
    p
}

/// 20,000 samples from 10 µs to ~60 ms with a long tail, deterministic.
fn samples() -> Vec<u64> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..20_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            10_000 + (x % 1000) * (x % 1000) * 60
        })
        .collect()
}

#[test]
fn a_merge_of_split_samples_has_the_percentiles_of_all_of_them() {
    let all = samples();
    let parts: Vec<Part> = (0..4u32)
        .map(|k| {
            let mine: Vec<u64> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| *i as u32 % 4 == k)
                .map(|(_, s)| *s)
                .collect();
            part(probe_doc(&mine, k, 4, "r1"), &format!("p{k}"))
        })
        .collect();
    let (merged, cov) = merge(&parts).unwrap();
    assert_eq!(cov.missing, Vec::<u32>::new());
    let whole = probe_doc(&all, 0, 1, "whole");
    for key in [
        "min", "mean", "p50", "p90", "p99", "p999", "p9999", "max", "count",
    ] {
        let (m, w) = (
            &merged["summary"]["rtt_ms"][key],
            &whole["summary"]["rtt_ms"][key],
        );
        let (m, w) = (m.as_f64().unwrap(), w.as_f64().unwrap());
        assert!(
            (m - w).abs() <= w.abs() * 1e-12,
            "{key}: merged {m} vs whole {w}"
        );
    }
    assert_eq!(merged["summary"]["sent"], 20_004);
    assert_eq!(merged["summary"]["lost"], 4);
    assert_eq!(merged["summary"]["pps"], 400.0);
    assert_eq!(
        merged["latency"]["udp"]["p99_ms"],
        whole["summary"]["rtt_ms"]["p99"]
    );
    assert_eq!(
        merged["intervals"][0]["latency_ms"]["p99"],
        whole["summary"]["rtt_ms"]["p99"]
    );
    assert_eq!(
        merged["config"]["segment"]["merged"],
        serde_json::json!([0, 1, 2, 3])
    );
}

#[test]
fn parts_that_do_not_belong_together_are_refused_and_gaps_reported() {
    let s = [1_000_000u64, 2_000_000];
    let other_run = vec![
        part(probe_doc(&s, 0, 2, "r1"), "a"),
        part(probe_doc(&s, 1, 2, "r2"), "b"),
    ];
    let e = merge(&other_run).err().unwrap().to_string();
    assert!(e.contains("different runs (run id: r1 vs r2)"), "{e}");
    let twice = vec![
        part(probe_doc(&s, 1, 2, "r1"), "c"),
        part(probe_doc(&s, 1, 2, "r1"), "d"),
    ];
    assert!(merge(&twice)
        .err()
        .unwrap()
        .to_string()
        .contains("both segment 1"));
    let gap = vec![part(probe_doc(&s, 2, 4, "r1"), "e")];
    let (m, cov) = merge(&gap).unwrap();
    assert_eq!(cov.missing, vec![0, 1, 3]);
    assert_eq!(
        m["config"]["segment"]["missing"],
        serde_json::json!([0, 1, 3])
    );
}

#[test]
fn error_rate_of_a_merge_is_errors_over_all_attempts_old_files_included() {
    let s = [1_000_000u64, 2_000_000];
    let mut refused = npt_stats::ErrorCounts::default();
    refused.record("refused", || "connection refused".into());
    let mut a = probe_doc(&s, 0, 2, "r1");
    a["errors"] = serde_json::to_value(npt_result::probe::Errors::new(refused.clone(), 3)).unwrap();
    // Written before `errors.attempts` existed: a probe's rate divided by packets sent (3).
    let mut b = probe_doc(&s, 1, 2, "r1");
    b["errors"] = serde_json::json!({
        "total_errors": 1, "error_rate": 1.0 / 3.0, "by_kind": refused});
    let (m, _) = merge(&[part(a, "ea"), part(b, "eb")]).unwrap();
    assert_eq!(m["errors"]["total_errors"], 2);
    assert_eq!(m["errors"]["attempts"], 6);
    assert_eq!(m["errors"]["error_rate"], 2.0 / 6.0);
}

#[test]
fn jitter_of_a_merge_of_parts_is_the_jitter_of_one_result() {
    // Six flows with different jitter and sample counts: one result held them all, or three
    // parts two each. Written out and read back, the parts merge to the one result's value.
    let flows: Vec<npt_stats::Jitter> = (0..6u64)
        .map(|f| {
            let mut j = npt_stats::Jitter::default();
            for i in 0..(20 + f * 13) {
                j.record(50_000 + (i * 7919 * (f + 3)) % (40_000 * (f + 1)));
            }
            j
        })
        .collect();
    let with_jitter = |fs: &[npt_stats::Jitter], index: u32, count: u32, run: &str| {
        let mut m = npt_stats::JitterMean::default();
        for f in fs {
            m += f;
        }
        let mut d = probe_doc(&[1_000_000], index, count, run);
        d["summary"]["jitter_ms"] = (m.value_ns() / 1e6).into();
        d["summary"]["jitter_samples"] = m.samples().into();
        d["intervals"][0]["jitter_ms"] = (m.value_ns() / 1e6).into();
        d["intervals"][0]["jitter_samples"] = m.samples().into();
        d
    };
    let whole = with_jitter(&flows, 0, 1, "whole");
    let parts: Vec<Part> = (0..3u32)
        .map(|k| {
            let d = with_jitter(&flows[2 * k as usize..2 * k as usize + 2], k, 3, "r1");
            part(d, &format!("j{k}"))
        })
        .collect();
    let (m, _) = merge(&parts).unwrap();
    for at in ["/summary", "/intervals/0"] {
        let (got, want) = (&m.pointer(at).unwrap(), &whole.pointer(at).unwrap());
        assert_eq!(got["jitter_samples"], want["jitter_samples"], "{at}");
        let (g, w) = (
            got["jitter_ms"].as_f64().unwrap(),
            want["jitter_ms"].as_f64().unwrap(),
        );
        assert!(
            w > 0.0 && (g - w).abs() <= w * 1e-12,
            "{at}: merged {g} vs one {w}"
        );
    }
    // A part written before `jitter_samples` existed still merges (weighted by replies), and
    // the merge then claims no sample count.
    let mut old = with_jitter(&flows[..2], 0, 2, "r2");
    old["summary"]
        .as_object_mut()
        .unwrap()
        .remove("jitter_samples");
    let new = with_jitter(&flows[2..4], 1, 2, "r2");
    let (m, _) = merge(&[part(old, "jo"), part(new, "jn")]).unwrap();
    assert!(m["summary"]["jitter_ms"].as_f64().unwrap() > 0.0);
    assert!(m["summary"].get("jitter_samples").is_none());
}

#[test]
fn tcp_connect_and_first_packet_merge_from_histograms_old_parts_by_mean() {
    let ms = 1_000_000u64;
    let tcp_part = |connects: &[u64], index: u32, run: &str| {
        let (mut c, mut f) = (Histogram::new(), Histogram::new());
        for &x in connects {
            c.record(x * ms);
            f.record((x + 1) * ms);
        }
        let mut d = probe_doc(&[ms], index, 2, run);
        d["summary"]["connect_ms"] = c.summary().mean.into();
        d["summary"]["first_packet_ms"] = f.summary().mean.into();
        d["summary"]["clients"] = connects.len().into();
        d["summary"]["phases_ms"] = serde_json::json!({
            "connect": c.summary(), "first_packet": f.summary()});
        d["histograms"]["connect"] = serde_json::to_value(c.to_serialized()).unwrap();
        d["histograms"]["first_packet"] = serde_json::to_value(f.to_serialized()).unwrap();
        d
    };
    let (m, _) = merge(&[
        part(tcp_part(&[1, 2, 3], 0, "t1"), "ta"),
        part(tcp_part(&[10], 1, "t1"), "tb"),
    ])
    .unwrap();
    let mut all = Histogram::new();
    for x in [1u64, 2, 3, 10] {
        all.record(x * ms);
    }
    assert_eq!(m["summary"]["phases_ms"]["connect"]["count"], 4);
    assert_eq!(
        m["summary"]["phases_ms"]["connect"]["p99"],
        all.summary().p99
    );
    assert_eq!(m["summary"]["connect_ms"], all.summary().mean);
    assert!(m["histograms"]["first_packet"]["data"].is_string());
    // Parts from before the histograms: the means weighted by clients, and no distribution.
    let old = |connects: &[u64], index: u32| {
        let mut d = tcp_part(connects, index, "t2");
        d["summary"].as_object_mut().unwrap().remove("phases_ms");
        d["histograms"].as_object_mut().unwrap().remove("connect");
        d["histograms"]
            .as_object_mut()
            .unwrap()
            .remove("first_packet");
        d
    };
    let (m, _) = merge(&[part(old(&[1, 2, 3], 0), "to"), part(old(&[10], 1), "tp")]).unwrap();
    assert!((m["summary"]["connect_ms"].as_f64().unwrap() - 4.0).abs() < 0.01);
    assert!(m["summary"].get("phases_ms").is_none());
}

/// quic-tun's figures merge as npt's do: the first echo alone exactly from its histograms, the
/// total after connect as the longest part's; a part written before they were recorded leaves
/// them out rather than stating one part's figure as the whole's.
#[test]
fn tcp_first_echo_and_total_after_connect_merge() {
    let ms = 1_000_000u64;
    let tcp_part = |echoes: &[u64], after: Option<f64>, index: u32| {
        let (mut c, mut f, mut e) = (Histogram::new(), Histogram::new(), Histogram::new());
        for &x in echoes {
            c.record(ms);
            f.record((x + 1) * ms);
            e.record(x * ms);
        }
        let mut d = probe_doc(&[ms], index, 2, "fe");
        d["summary"]["clients"] = echoes.len().into();
        d["summary"]["connect_ms"] = c.summary().mean.into();
        d["summary"]["first_packet_ms"] = f.summary().mean.into();
        d["summary"]["total_ms"] = 1000.0.into();
        d["summary"]["phases_ms"] = serde_json::json!({
            "connect": c.summary(), "first_packet": f.summary()});
        for (name, h) in [("connect", &c), ("first_packet", &f)] {
            d["histograms"][name] = serde_json::to_value(h.to_serialized()).unwrap();
        }
        if let Some(a) = after {
            d["summary"]["first_echo_ms"] = e.summary().mean.into();
            d["summary"]["phases_ms"]["first_echo"] = serde_json::to_value(e.summary()).unwrap();
            d["summary"]["total_after_connect_ms"] = a.into();
            d["histograms"]["first_echo"] = serde_json::to_value(e.to_serialized()).unwrap();
        }
        d
    };
    let (m, _) = merge(&[
        part(tcp_part(&[2, 4], Some(990.0), 0), "fa"),
        part(tcp_part(&[12], Some(998.0), 1), "fb"),
    ])
    .unwrap();
    let s = &m["summary"];
    assert_eq!(s["phases_ms"]["first_echo"]["count"], 3);
    assert!(
        (s["first_echo_ms"].as_f64().unwrap() - 6.0).abs() < 0.01,
        "{s}"
    );
    assert_eq!(s["total_after_connect_ms"], 998.0);
    assert!(m["histograms"]["first_echo"]["data"].is_string());
    // With a part from before: npt's figures merge, quic-tun's are not stated.
    let (m, _) = merge(&[
        part(tcp_part(&[2, 4], Some(990.0), 0), "fc"),
        part(tcp_part(&[12], None, 1), "fd"),
    ])
    .unwrap();
    let s = &m["summary"];
    assert_eq!(s["phases_ms"]["connect"]["count"], 3);
    assert!(s.get("first_echo_ms").is_none() && s.get("total_after_connect_ms").is_none());
    assert!(s["phases_ms"].get("first_echo").is_none());
}
