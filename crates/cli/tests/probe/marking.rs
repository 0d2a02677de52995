//! Markings each way on loopback: against `npt serve` the probe learns what its requests
//! arrived with and gets its replies marked as it asked (`--reply-dscp`, `--reply-ecn`);
//! against a plain echo (socat) the far end's view is reported unknown, not invented; a sender
//! never asks for CE, and a reply marking nobody can carry is exit 2 naming the flag.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::time::Duration;

use common::{assert_valid, json, run, serve, socat_echo, u};

const LIMIT: Duration = Duration::from_secs(30);

/// `npt probe TARGET ARGS --json FILE`: its document and its text.
fn probe(target: &str, args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut a = vec!["probe", target, "-n", "100", "--pps", "1000"];
    a.extend_from_slice(args);
    a.extend(["--json", out.to_str().unwrap()]);
    let o = run(&a, LIMIT);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let d = json(&out);
    assert_valid(&d, "probe");
    (d, text)
}

#[test]
fn npt_serve_says_what_arrived_and_marks_its_replies_as_asked() {
    let (_s, addr) = serve(&[]);
    let target = format!("udp://{addr}");
    let (d, text) = probe(
        &target,
        &[
            "--dscp",
            "af41",
            "--ecn",
            "ect0",
            "--reply-dscp",
            "cs1",
            "--reply-ecn",
            "not-ect",
        ],
    );
    let m = &d["summary"]["marking"];
    assert_eq!(m["sent"], serde_json::json!({"dscp": 34, "ecn": 2}), "{m}");
    assert_eq!(m["asked"], serde_json::json!({"dscp": 8, "ecn": 0}), "{m}");
    assert_eq!(
        m["up"]["arrived"],
        serde_json::json!({"dscp": 34, "ecn": 2}),
        "{m}"
    );
    assert_eq!(
        m["down"]["sent"],
        serde_json::json!({"dscp": 8, "ecn": 0}),
        "{m}"
    );
    assert_eq!(
        m["down"]["arrived"],
        serde_json::json!({"dscp": 8, "ecn": 0}),
        "{m}"
    );
    for way in ["up", "down"] {
        assert_eq!(
            (&m[way]["dscp"], &m[way]["ecn"]),
            (&"arrived".into(), &"arrived".into())
        );
        assert_eq!(u(m, &format!("/{way}/packets")), 100);
        assert_eq!(u(m, &format!("/{way}/ce")), 0);
    }
    assert!(
        text.contains(
            "DSCP 34 (AF41) arrived up, DSCP 8 (CS1) arrived down; ECN ECT(0) arrived up"
        ),
        "{text}"
    );
}

#[test]
fn a_plain_echo_leaves_the_far_ends_view_unknown() {
    let Some((_echo, port)) = socat_echo("udp") else {
        return;
    };
    let (d, text) = probe(
        &format!("udp://127.0.0.1:{port}"),
        &["--dscp", "46", "--ecn", "ect1"],
    );
    let s = &d["summary"];
    assert_eq!(s["far_end"], "echo");
    let m = &s["marking"];
    assert_eq!(u(m, "/far_silent"), 100, "{m}");
    assert!(
        m["far_received"].is_null() && m["far_sent"].is_null(),
        "{m}"
    );
    assert_eq!(
        (&m["up"]["dscp"], &m["up"]["ecn"]),
        (&"unknown".into(), &"unknown".into())
    );
    assert!(m["up"]["arrived"].is_null(), "nothing invented: {m}");
    // Down: what arrived here is known, what the echo sent with is not.
    assert!(m["down"]["sent"].is_null(), "{m}");
    assert_eq!(m["down"]["dscp"], "unknown");
    assert_eq!(u(m, "/down/packets"), 100);
    assert!(
        text.contains("up unknown: the far end did not say"),
        "{text}"
    );
}

#[test]
fn ce_and_reply_markings_nobody_can_carry_are_refused_by_name() {
    for (args, want) in [
        (
            &["udp://127.0.0.1:9", "--dscp", "46", "--ecn", "ce"][..],
            "--ecn ce: CE is what",
        ),
        (
            &["tcp://127.0.0.1:9", "--reply-dscp", "46"][..],
            "--reply-dscp: only npt serve's UDP",
        ),
        (
            &["udp://127.0.0.1:9", "--raw", "--reply-ecn", "ect0"][..],
            "--reply-ecn: only",
        ),
        (
            &["udp://127.0.0.1:9", "--reply-ecn", "ce"][..],
            "--reply-ecn ce: CE is what",
        ),
        (
            &["udp://127.0.0.1:9", "--ecn", "ect0", "--tos", "1"][..],
            "--ecn",
        ),
    ] {
        let mut a = vec!["probe"];
        a.extend_from_slice(args);
        let o = run(&a, LIMIT);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
