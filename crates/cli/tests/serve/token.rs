//! Why this exists: `--token` used to protect only the echo — the HTTP responder served
//! `/bytes/N` to anyone — and QUIC streams carried a 64-bit value of the secret instead of the
//! keyed handshake. With `--token` now gating HTTP too and QUIC streams opening with the
//! handshake, npt's own clients must keep working when they send the secret
//! (`npt http -H 'x-npt-token: …'`, `npt run --token` over TCP and QUIC), and get nothing but
//! refusals when they do not or send a wrong one; the server counts each refusal.

#![cfg(test)]

use crate::common;
use crate::serve_util;

use std::time::Duration;

use common::{json, run};
use serve_util::{logged, serve, until};

#[test]
fn npt_http_and_npt_run_over_tcp_and_quic_work_with_the_token_and_are_refused_without() {
    let s = serve(
        20_000,
        &[
            "--http",
            "127.0.0.1:0",
            "--quic",
            "127.0.0.1:0",
            "--token",
            "s3cret",
        ],
    );
    let (tcp, http, quic) = (s.tcp, s.http.expect("http"), s.quic.expect("quic"));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{http}/bytes/1000");
    let http_run = |extra: &[&str], name: &str| {
        let out = dir.path().join(name);
        let mut args = vec!["http", url.as_str(), "-d", "1s", "-c", "2", "-q", "--json"];
        let path = out.to_str().unwrap().to_string();
        args.push(&path);
        args.extend_from_slice(extra);
        run(&args, Duration::from_secs(30));
        let summary = json(&out)["summary"].clone();
        let in_flight = summary["in_flight_at_end"].as_u64().unwrap_or(0);
        (summary["status"].clone(), in_flight)
    };
    let (ok, _) = http_run(&["-H", "x-npt-token: s3cret"], "ok.json");
    let (denied, in_flight) = http_run(&[], "denied.json");
    let ok_n = ok["200"].as_u64().unwrap_or(0);
    let denied_n = denied["401"].as_u64().unwrap_or(0);
    assert!(ok_n > 0 && ok.as_object().unwrap().len() == 1, "{ok}");
    assert!(
        denied_n > 0 && denied.as_object().unwrap().len() == 1,
        "{denied}"
    );

    let target = format!("tcp://{tcp}");
    let r = dir.path().join("run.json");
    let rp = r.to_str().unwrap();
    let run_args = [
        "run",
        &target,
        "-u",
        "4",
        "-d",
        "2s",
        "--mix",
        "web=1,download=1",
        "--json",
        rp,
    ];
    run(
        &[&run_args[..], &["--token", "s3cret"]].concat(),
        Duration::from_secs(60),
    );
    let doc = json(&r);
    assert_eq!(doc["errors"]["total_errors"], 0, "{}", doc["errors"]);
    run(&run_args, Duration::from_secs(60));
    let doc = json(&r);
    assert!(
        doc["errors"]["total_errors"].as_u64().unwrap_or(0) > 0,
        "without the token nothing is served: {}",
        doc["errors"]
    );

    // QUIC: every stream opens with the keyed handshake; TLS alone opens nothing.
    let quic = quic.to_string();
    let quic_args = [
        "run",
        &target,
        "--quic",
        &quic,
        "--insecure",
        "-u",
        "3",
        "-d",
        "2s",
        "--mix",
        "quic=1",
        "--think",
        "10ms..50ms",
        "--json",
        rp,
    ];
    let quic_run = |extra: &[&str]| {
        run(&[&quic_args[..], extra].concat(), Duration::from_secs(60));
        let doc = json(&r);
        let n = |p: &str| doc.pointer(p).and_then(|v| v.as_u64()).unwrap_or(0);
        (
            n("/summary/requests"),
            n("/errors/total_errors"),
            doc["errors"].clone(),
        )
    };
    let (requests, errors, e) = quic_run(&["--token", "s3cret"]);
    assert!(requests > 0 && errors == 0, "{requests} requests: {e}");
    for extra in [&["--token", "wrong"][..], &[]] {
        let (requests, errors, e) = quic_run(extra);
        assert!(requests == 0 && errors > 0, "{extra:?}: {requests}: {e}");
    }

    let counted = until(Duration::from_secs(5), || {
        let e = s.stderr();
        // The last request on each of the 2 connections may have been answered after the
        // client stopped counting (seen: server 13,913 vs client 13,911 with 0 in flight).
        let refused = logged(&e, "http refused:", "token");
        (denied_n..=denied_n + in_flight + 2).contains(&refused)
            && logged(&e, "tcp refused:", "token") > 0
            && logged(&e, "quic streams refused:", "handshake") > 0
            && logged(&e, "quic streams refused:", "token") > 0
    });
    let e = s.stderr();
    assert!(
        counted.is_some(),
        "client saw {denied_n} 401s (+{in_flight} in flight); server: {} / tcp {}; {}",
        logged(&e, "http refused:", "token"),
        logged(&e, "tcp refused:", "token"),
        e.lines().last().unwrap_or("")
    );
}

/// The secret may come from `NPT_TOKEN` (out of `ps`' sight); a `--token` flag wins over it.
#[test]
fn the_secret_may_come_from_npt_token_and_the_flag_wins() {
    let s = serve(20_000, &["--token", "s3cret"]);
    let target = format!("udp://{}", s.tcp);
    let probe = |env: &str, flag: Option<&str>| {
        let mut cmd = common::npt();
        cmd.args([
            "probe", &target, "-n", "20", "--pps", "200", "-q", "--format", "json",
        ])
        .env("NPT_TOKEN", env);
        if let Some(f) = flag {
            cmd.args(["--token", f]);
        }
        let o = cmd.output().expect("npt probe runs");
        let received = serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .ok()
            .and_then(|d| d["summary"]["received"].as_u64());
        (o.status.code(), received)
    };
    assert_eq!(probe("s3cret", None), (Some(0), Some(20)), "from NPT_TOKEN");
    let (code, received) = probe("s3cret", Some("wrong"));
    assert_ne!(code, Some(0), "--token wrong must win over NPT_TOKEN");
    assert_ne!(received, Some(20));
    assert_eq!(probe("wrong", Some("s3cret")), (Some(0), Some(20)));
}
