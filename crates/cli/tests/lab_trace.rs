//! Why this exists: `npt trace` must read a relay chain's segments as they are, each from its
//! own upstream relay. In the forwarding-scenario lab (`examples/lab/forwarding-scenarios.toml`,
//! root: network namespaces and emulated links) — client → Seattle 152 ms, Seattle → LA 32 ms,
//! LA → target 69 ms RTT, hop agents on Seattle and LA, a socat chain Seattle → LA → target —
//! the trace reads each segment within ±1 ms of its link, and the relays' cost is the chain's
//! p50 minus the segments' sum; over UDP too, where each relay's `npt serve --token` answers
//! only an agent that keys its echo with the chain's secret. Few attempts, all legs at once: a
//! few seconds. Without root
//! the test says it skipped, as `lab.rs` does.
#![cfg(test)] // clippy.toml: test helpers count as tests

mod common;

use std::time::Duration;

use common::lab::{self, Lab};
use common::{assert_valid, f, json, repo_root};

const LAB: &str = "ttrace";

#[test]
fn the_forwarding_chain_reads_its_segments_from_each_relay() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = repo_root().join("examples/lab");
    // The example as users run it, under a name of its own (and its haproxy config beside it).
    let text = std::fs::read_to_string(src.join("forwarding-scenarios.toml")).unwrap();
    let file = dir.path().join("ttrace.toml");
    std::fs::write(&file, format!("name = \"{LAB}\"\n{text}")).unwrap();
    std::fs::copy(
        src.join("haproxy-la.cfg"),
        dir.path().join("haproxy-la.cfg"),
    )
    .unwrap();
    let lab = Lab::up_file(&file, LAB);
    let j = dir.path().join("trace.json");
    let out = lab.npt(
        "client",
        &[
            "trace",
            "tcp://10.0.3.2:7777",
            "--hop",
            "npt://10.0.5.2:7777",
            "--hop",
            "npt://10.0.2.2:7777=10.0.4.2:7777",
            "--through",
            "tcp://10.0.5.2:9003",
            "--token",
            "lab-secret",
            "--count",
            "5",
            "--interval",
            "100ms",
            "--json",
            j.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{shown}");
    let doc = json(&j);
    assert_valid(&doc, "trace");
    for (i, (from, want)) in [
        ("here", 152.0),
        ("npt://10.0.5.2:7777", 32.0),
        ("npt://10.0.2.2:7777", 69.0),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(doc["segments"][i]["from"], from, "{shown}");
        let p50 = f(&doc, &format!("/segments/{i}/summary/p50_ms"));
        assert!(
            (p50 - want).abs() <= 1.0,
            "segment {} from {from}: p50 {p50} ms, want {want} ± 1\n{shown}",
            i + 1
        );
    }
    let chain = f(&doc, "/chain/summary/p50_ms");
    let sum = f(&doc, "/summary/sum/p50_ms");
    let cost = f(&doc, "/summary/relays_cost/p50_ms");
    assert!(
        (cost - (chain - sum)).abs() <= 1.0,
        "relays' cost {cost} vs chain {chain} − sum {sum}\n{shown}"
    );
    // The chain crosses the same links: its RTT is the sum plus what two socat relays add.
    assert!(
        (chain - 253.0).abs() <= 5.0,
        "chain p50 {chain} ms\n{shown}"
    );
    // Over UDP: each relay's `npt serve --token` answers only keyed echoes, so the Seattle
    // agent keys its echo into LA's serve with its own secret; the target's serve has no
    // --token, and LA's agent, finding no answer to its Hello, echoes it plain.
    let j = dir.path().join("trace-udp.json");
    let out = lab.npt(
        "client",
        &[
            "trace",
            "udp://10.0.3.2:7777",
            "--hop",
            "npt://10.0.5.2:7777",
            "--hop",
            "npt://10.0.2.2:7777=10.0.4.2:7777",
            "--token",
            "lab-secret",
            "--count",
            "5",
            "--interval",
            "100ms",
            "--json",
            j.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{shown}");
    let doc = json(&j);
    assert_valid(&doc, "trace");
    for (i, want) in [152.0, 32.0, 69.0].into_iter().enumerate() {
        assert_eq!(
            doc["segments"][i]["summary"]["received"],
            5,
            "segment {}\n{shown}",
            i + 1
        );
        let p50 = f(&doc, &format!("/segments/{i}/summary/p50_ms"));
        assert!(
            (p50 - want).abs() <= 1.0,
            "UDP segment {}: p50 {p50} ms, want {want} ± 1\n{shown}",
            i + 1
        );
    }
}
