//! Why this exists: `npt trace --mtu` asks each hop agent for a path-MTU search of its next
//! segment and searches the first one itself, so the whole path is tested here on loopback: a
//! target `npt serve --token`, an agent that may search it, both segments read each way and
//! recorded as a schema-checked `trace` result, the agent's exit line counting the search and
//! the datagrams it sent, and a target outside the agent's allow-list refused, unsearched
//! (exit 1, the segment's `mtu.error` naming the agent's list).
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;
use crate::serve_util;

use std::time::Duration;

use common::{assert_valid, json, run};
use serve_util::{serve, until};

#[test]
fn each_segment_is_searched_counted_and_refused_outside_the_list() {
    let target = serve(4096, &["--token", "S"]);
    let allow = target.tcp.to_string();
    let agent = serve(
        4096,
        &["--token", "S", "--hop-agent", "--hop-allow", allow.as_str()],
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.json");
    let (tgt, hop) = (
        format!("tcp://{}", target.tcp),
        format!("npt://{}", agent.tcp),
    );
    let trace = |tgt: &str| {
        let args = [
            "trace",
            tgt,
            "--hop",
            &hop,
            "--token",
            "S",
            "-c",
            "2",
            "-i",
            "20ms",
            "--mtu",
            "--json",
            file.to_str().unwrap(),
        ];
        run(&args, Duration::from_secs(60))
    };
    let out = trace(&tgt);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    let doc = json(&file);
    assert_valid(&doc, "trace");
    for (i, to) in [(0, agent.tcp), (1, target.tcp)] {
        let m = &doc["segments"][i]["mtu"];
        assert_eq!(m["to"], format!("udp://{to}"), "{m}");
        assert_eq!(m["headers"], 28);
        for dir in ["up", "down"] {
            // Loopback carries the largest datagram tried.
            assert_eq!(m[dir]["verdict"], "max_crossed", "{m}");
            assert_eq!(m[dir]["largest_datagram"], 1472, "{m}");
        }
    }
    assert!(text.contains("mtu searched"), "{text}");

    // Another port of the same host is outside the list: refused before anything is sent.
    let other = format!("tcp://127.0.0.1:{}", target.tcp.port() ^ 1);
    let out = trace(&other);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&file);
    assert_valid(&doc, "trace");
    let e = doc["segments"][1]["mtu"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(
        e.starts_with("config:") && e.contains("--hop-allow"),
        "{doc}"
    );

    // SAFETY: signalling our own child.
    unsafe { libc::kill(agent.pid(), libc::SIGINT) };
    let said = until(Duration::from_secs(10), || {
        agent.stderr().contains("stopping; hop agent:")
    });
    assert!(said.is_some(), "no exit summary: {}", agent.stderr());
    let err = agent.stderr();
    // The RTT request and the search answered (the refused ones are counted as target
    // refusals), and the datagrams the search sent: at least one each way.
    assert!(
        err.contains("hop agent: answered 2 attempts 2 mtu-searches 1 mtu-probes "),
        "{err}"
    );
    assert!(err.contains(" target 2 "), "{err}");
    let probes: u64 = err
        .split("mtu-probes ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(probes >= 2, "{err}");
}
