//! Why this exists: `npt trace` must read a relay chain's segments as they are, each from its
//! own upstream relay. In the forwarding-scenario lab (`examples/lab/forwarding-scenarios.toml`,
//! root: network namespaces and emulated links) — client → Seattle 152 ms, Seattle → LA 32 ms,
//! LA → target 69 ms RTT, hop agents on Seattle and LA, a socat chain Seattle → LA → target —
//! the trace reads each segment within ±1 ms of its link as the lab delivered it (configured
//! delay plus the lab's own lateness, `npt lab status --json`), and the relays' cost is the chain's
//! p50 minus the segments' sum; over UDP too, where each relay's `npt serve --token` answers
//! only an agent that keys its echo with the chain's secret. Few attempts, all legs at once: a
//! few seconds. Without root
//! the test says it skipped, as `lab.rs` does.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::time::Duration;

use common::lab::{self, Lab, SchedWait, WAKEUPS_PER_ECHO};
use common::{assert_valid, f, json, repo_root};

const LAB: &str = "ttrace";

#[test]
fn the_forwarding_chain_reads_its_segments_from_each_relay() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
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
    // The hop agents and responders measuring the segments are the lab's services: what the
    // kernel says they waited for a CPU during each trace is how late their echoes may read.
    let pids = lab.service_pids();
    // The client's npt trace probes the first segment: its own waits count too.
    let waited = |w0: &SchedWait, client: &SchedWait| Lab::echo_wait_ms(&pids, w0, client);
    let w0 = SchedWait::read(&pids);
    let j = dir.path().join("trace.json");
    let (out, client) = lab.npt_waited(
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
    let late = waited(&w0, &client);
    let doc = json(&j);
    assert_valid(&doc, "trace");
    // Each segment's own link, as the lab delivered it (152, 32 and 69 ms configured):
    // client — Seattle is link 4, Seattle — LA link 3, LA — target link 2.
    let segments = [
        lab.rtt_ms(4, "client", "sea"),
        lab.rtt_ms(3, "sea", "la"),
        lab.rtt_ms(2, "la", "target"),
    ];
    for (i, (from, want)) in ["here", "npt://10.0.5.2:7777", "npt://10.0.2.2:7777"]
        .into_iter()
        .zip(segments)
        .enumerate()
    {
        assert_eq!(doc["segments"][i]["from"], from, "{shown}");
        let p50 = f(&doc, &format!("/segments/{i}/summary/p50_ms"));
        lab::assert_path_late(
            &format!("segment {} from {from}\n{shown}", i + 1),
            p50,
            want,
            late,
        );
    }
    let chain = f(&doc, "/chain/summary/p50_ms");
    let sum = f(&doc, "/summary/sum/p50_ms");
    let cost = f(&doc, "/summary/relays_cost/p50_ms");
    assert!(
        (cost - (chain - sum)).abs() <= 1.0,
        "relays' cost {cost} vs chain {chain} − sum {sum}\n{shown}"
    );
    // The chain crosses the same links (253 ms configured): its RTT is the lab's sum of them
    // plus what two socat relays add — at most 5 ms of their own work, and their wakeups'
    // waits for a CPU: an echo through the chain wakes npt trace twice, each socat twice and
    // the responder once (7 wakeups, where a segment's echo has 3), each late by what the
    // kernel counted per run of the processes measured above. (The relays' forked children
    // are gone when the trace ends, so their own waits are read off the others'.)
    let links: f64 = segments.iter().sum();
    let relays = 5.0 + late * 7.0 / WAKEUPS_PER_ECHO;
    assert!(
        chain >= links - 1.0 && chain <= links + relays,
        "chain p50 {chain} ms; its links {links:.3} ms by the lab's own figures, + {relays:.3} \
         ms for the relays\n{shown}"
    );
    // Over UDP: each relay's `npt serve --token` answers only keyed echoes, so the Seattle
    // agent keys its echo into LA's serve with its own secret; the target's serve has no
    // --token, and LA's agent, finding no answer to its Hello, echoes it plain.
    let w0 = SchedWait::read(&pids);
    let j = dir.path().join("trace-udp.json");
    let (out, client) = lab.npt_waited(
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
    let late = waited(&w0, &client);
    let doc = json(&j);
    assert_valid(&doc, "trace");
    let segments = [
        lab.rtt_ms(4, "client", "sea"),
        lab.rtt_ms(3, "sea", "la"),
        lab.rtt_ms(2, "la", "target"),
    ];
    for (i, want) in segments.into_iter().enumerate() {
        assert_eq!(
            doc["segments"][i]["summary"]["received"],
            5,
            "segment {}\n{shown}",
            i + 1
        );
        let p50 = f(&doc, &format!("/segments/{i}/summary/p50_ms"));
        lab::assert_path_late(&format!("UDP segment {}\n{shown}", i + 1), p50, want, late);
    }
}
