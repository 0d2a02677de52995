//! `npt setup` end to end on loopback, where round trips are a fraction of a millisecond and
//! so only the facts are checked, not the multiples (the lab checks those): every scheme sets
//! its layers up against `npt serve`, a TLS 1.2 session resumes, a QUIC request goes in 0-RTT
//! and is accepted by `--quic-0rtt accept`, rejected and flagged by `reject` (exit 1), and not
//! offered by the default; a dead proxy is a classified error.

#![cfg(test)]

use std::time::Duration;

use crate::common::{assert_valid, f, json, run, scratch, serve_setup};

/// `npt setup ARGS -c 3`: its exit code and valid document.
fn setup(args: &[&str], name: &str) -> (i32, serde_json::Value) {
    let file = scratch().join(format!("loop-setup-{name}.json"));
    let mut a = vec!["setup", "-c", "3", "-q", "--json", file.to_str().unwrap()];
    a.extend_from_slice(args);
    let out = run(&a, Duration::from_secs(30));
    let doc = json(&file);
    assert_valid(&doc, "setup");
    (out.status.code().unwrap_or(-1), doc)
}

fn layers(doc: &serde_json::Value) -> Vec<String> {
    doc["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["layer"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_scheme_sets_up_and_zero_rtt_is_told_apart() {
    let (_s, https, quic, udp) = serve_setup("accept");
    // Timing is not checked here: on a busy box a loopback handshake can wait 15 ms for a CPU,
    // which the flag rightly counts (the lab checks the round trips).
    let (_, d) = setup(&[&format!("https://{https}")], "tls13");
    assert_eq!(layers(&d), ["tcp_connect", "tls", "first_byte"]);
    assert_eq!(f(&d, "/summary/completed"), 3.0);
    assert_eq!(d["summary"]["rtt_from"], "warm_request");

    let (_, d) = setup(
        &[&format!("https://{https}"), "--tls", "1.2", "--resume"],
        "tls12r",
    );
    assert_eq!(f(&d, "/summary/resumed"), 3.0);
    assert_eq!(d["layers"][1]["what"], "TLS 1.2 resumed");

    let (_, d) = setup(&[&format!("tcp://{https}")], "tcp");
    assert_eq!(layers(&d), ["tcp_connect"]);
    assert_eq!(d["summary"]["rtt_from"], "tcp_connect");

    let (_, d) = setup(&[&format!("udp://{udp}")], "udp");
    assert_eq!(layers(&d), ["first_byte"]);
    assert_eq!(f(&d, "/summary/completed"), 3.0);

    let (_, d) = setup(&[&format!("quic://{quic}"), "--resume"], "0rtt");
    assert_eq!(
        (
            f(&d, "/summary/zero_rtt_sent"),
            f(&d, "/summary/zero_rtt_accepted")
        ),
        (3.0, 3.0)
    );

    let (_r, _, quic, _) = serve_setup("reject");
    let (code, d) = setup(&[&format!("quic://{quic}"), "--resume"], "0rtt-rejected");
    assert_eq!(
        (
            f(&d, "/summary/zero_rtt_sent"),
            f(&d, "/summary/zero_rtt_accepted")
        ),
        (3.0, 0.0)
    );
    let flag = d["layers"][0]["flag"].as_str().unwrap();
    assert!(
        flag.contains("0-RTT rejected by the server in 3 of 3"),
        "{flag}"
    );
    assert_eq!(code, 1);

    let (_o, _, quic, _) = serve_setup("off");
    let (code, d) = setup(&[&format!("quic://{quic}"), "--resume"], "0rtt-off");
    assert_eq!(f(&d, "/summary/zero_rtt_sent"), 0.0);
    let flag = d["layers"][0]["flag"].as_str().unwrap();
    assert!(flag.contains("0-RTT not offered in 3 of 3"), "{flag}");
    assert_eq!(code, 1);
}

#[test]
fn a_dead_proxy_is_a_classified_error_and_a_bad_target_exits_2() {
    // A port nobody listens on: bind one and let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let via = format!("socks5://127.0.0.1:{port}");
    let (code, d) = setup(&["http://127.0.0.1:9", "--via", &via], "dead-proxy");
    assert_eq!(code, 1);
    assert_eq!(f(&d, "/summary/completed"), 0.0);
    assert_eq!(f(&d, "/errors/by_kind/proxy_refused/count"), 3.0);
    let out = run(&["setup", "sctp://127.0.0.1:9"], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unsupported scheme"));
}
