//! Why this exists: `npt trace --dscp` asks each hop agent to read its next segment's marking
//! and reads the first one itself, so the whole path is tested here on loopback: a target `npt
//! serve --token`, an agent that may echo to it, both segments read each way (loopback keeps a
//! marking: "arrived" each way, every echo read) and recorded as a schema-checked `trace`
//! result, the agent's exit line counting the read's echoes as attempts, and a target outside
//! the agent's allow-list refused, unread (exit 1, the segment's `marking.error` naming the
//! agent's list).
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;
use crate::serve_util;

use std::time::Duration;

use common::{assert_valid, json, run};
use serve_util::{serve, until};

#[test]
fn each_segment_is_read_counted_and_refused_outside_the_list() {
    let target = serve(4096, &["--token", "S"]);
    let allow = target.tcp.to_string();
    let agent = serve(
        4096,
        &["--token", "S", "--hop-agent", "--hop-allow", allow.as_str()],
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.json");
    let hop = format!("npt://{}", agent.tcp);
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
            "--dscp",
            "af41",
            "--ecn",
            "ect1",
            "--json",
            file.to_str().unwrap(),
        ];
        run(&args, Duration::from_secs(60))
    };
    let out = trace(&format!("tcp://{}", target.tcp));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    let doc = json(&file);
    assert_valid(&doc, "trace");
    for (i, to) in [(0, agent.tcp), (1, target.tcp)] {
        let m = &doc["segments"][i]["marking"];
        assert_eq!(m["to"], format!("udp://{to}"), "{m}");
        for dir in ["up", "down"] {
            let w = &m[dir];
            assert_eq!(w["sent"], serde_json::json!({"dscp": 34, "ecn": 1}), "{m}");
            assert_eq!(w["arrived"], w["sent"], "{m}");
            assert_eq!(
                (&w["dscp"], &w["ecn"]),
                (&"arrived".into(), &"arrived".into())
            );
            assert_eq!((&w["packets"], &w["ce"]), (&20.into(), &0.into()), "{m}");
        }
    }
    assert!(text.contains("marking read"), "{text}");

    // Another port of the same host is outside the list: refused before anything is sent.
    let other = format!("tcp://127.0.0.1:{}", target.tcp.port() ^ 1);
    let out = trace(&other);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&file);
    assert_valid(&doc, "trace");
    let m = &doc["segments"][1]["marking"];
    let e = m["error"].as_str().unwrap_or_default();
    assert!(
        e.starts_with("config:") && e.contains("--hop-allow"),
        "{doc}"
    );
    assert!(m["up"].is_null() && m["down"].is_null(), "{m}");

    // Marked echoes larger than an agent sends are a bad flag, before anything is sent.
    let hop_arg = format!("npt://{}", agent.tcp);
    let bad = [
        "trace",
        "tcp://127.0.0.1:9",
        "--hop",
        hop_arg.as_str(),
        "--token",
        "S",
        "--dscp",
        "46",
        "-s",
        "2000",
    ];
    let out = run(&bad, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--dscp") && err.contains("1472"), "{err}");

    // SAFETY: signalling our own child.
    unsafe { libc::kill(agent.pid(), libc::SIGINT) };
    let said = until(Duration::from_secs(10), || {
        agent.stderr().contains("stopping; hop agent:")
    });
    assert!(said.is_some(), "no exit summary: {}", agent.stderr());
    let err = agent.stderr();
    // The RTT request (2 connects) and the read (20 echoes) answered; the refused RTT request
    // and read counted as target refusals.
    assert!(err.contains("hop agent: answered 2 attempts 22 "), "{err}");
    assert!(err.contains(" target 2 "), "{err}");
}
