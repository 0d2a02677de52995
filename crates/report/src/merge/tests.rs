//! Merge tests on documents built in memory: a recorded set of samples split over parts must
//! merge into exactly the distribution of one result that held them all, and parts that do
//! not belong together are refused.

use std::time::SystemTime;

use npt_stats::Histogram;

use super::*;
use crate::probe::{IntervalRecord, ProbeBody, ProbeHistograms, ProbeSummary};

fn probe_doc(samples: &[u64], index: u32, count: u32, run_id: &str) -> serde_json::Value {
    let mut h = Histogram::new();
    for &s in samples {
        h.record(s);
    }
    let summary = ProbeSummary {
        protocol: "udp".into(),
        clients: 1,
        sent: samples.len() as u64 + 1,
        received: samples.len() as u64,
        lost: 1,
        pps: 100.0,
        rtt_ms: h.summary(),
        ..ProbeSummary::default()
    };
    let iv = IntervalRecord {
        index: 0,
        sent: summary.sent,
        received: summary.received,
        lost: 1,
        rtt_ms: h.summary(),
        histogram: h.to_serialized(),
        ..IntervalRecord::default()
    };
    let body = ProbeBody {
        summary,
        health: Default::default(),
        latency: Default::default(),
        errors: Default::default(),
        histograms: ProbeHistograms {
            rtt: h.to_serialized(),
            rtt_corrected: None,
            ipdv: Histogram::new().to_serialized(),
        },
        intervals: vec![iv],
    };
    let config = serde_json::json!({"segment": {
        "index": index, "count": count, "run_id": run_id, "config_hash": "h1"}});
    let now = SystemTime::now();
    serde_json::to_value(Document::new("probe", now, now, "count", config, body)).unwrap()
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
        merged["intervals"][0]["rtt_ms"]["p99"],
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
