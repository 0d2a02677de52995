//! What a relay does to npt's figures, with real processes on loopback: a `socat` forwarder
//! whose backend is down accepts every connection by itself and closes it without a byte, so
//! probe and run must name that (`closed_unanswered`), plain `npt ping tcp://` must say its
//! connect time is the relay's own, and `npt ping --echo` (connect + one echo per attempt)
//! must read 100 % loss. Through a live relay, and through a SOCKS5 proxy, `--echo` answers
//! end to end with connect and echo apart. A probe of a closed port fails at the first
//! refusal, by its own reported elapsed time.

#![cfg(test)]

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::{assert_valid, json, run, u};
use npt_testkit::process::free_port;
use npt_testkit::proxies;

const LIMIT: Duration = Duration::from_secs(60);

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A port nothing listens on (bound and released).
fn dead_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], free_port()))
}

/// `npt ARGS --json DIR/NAME.json`: the output and the schema-checked document.
fn with_json(dir: &Path, name: &str, kind: &str, args: &[&str]) -> (Output, serde_json::Value) {
    let path = dir.join(format!("{name}.json"));
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", path.to_str().unwrap()]);
    let out = run(&all, LIMIT);
    assert!(path.exists(), "no result: {}", text(&out));
    let doc = json(&path);
    assert_valid(&doc, kind);
    (out, doc)
}

/// The count of `kind` in a document's errors (0 when absent).
fn kind_count(doc: &serde_json::Value, kind: &str) -> u64 {
    doc.pointer(&format!("/errors/by_kind/{kind}/count"))
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

fn first_example(doc: &serde_json::Value, kind: &str) -> String {
    doc.pointer(&format!("/errors/by_kind/{kind}/examples/0"))
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_relay_whose_backend_is_down_is_named() {
    if !proxies::have("/usr/bin/socat") {
        return;
    }
    let port = free_port();
    let _relay = proxies::socat(port, dead_port());
    let target = format!("tcp://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();

    // probe: the relay accepted and closed before any echo; not "closed", and said in words.
    let (out, doc) = with_json(
        dir.path(),
        "probe",
        "probe",
        &["probe", &target, "-n", "20", "-q"],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert_eq!(u(&doc, "/summary/received"), 0, "{t}");
    assert!(kind_count(&doc, "closed_unanswered") >= 1, "{t}");
    assert_eq!(kind_count(&doc, "closed"), 0, "{t}");
    let ex = first_example(&doc, "closed_unanswered");
    assert!(
        ex.contains(&format!(
            "127.0.0.1:{port} accepted the connection and closed it without answering"
        )),
        "{ex}"
    );
    assert!(t.contains("closed_unanswered"), "{t}");
    assert!(
        t.contains("a relay or forwarder whose backend is down?"),
        "{t}"
    );

    // ping --echo: every attempt unanswered, exit 1, the kind named in the text and JSON.
    let (out, doc) = with_json(
        dir.path(),
        "echo",
        "ping",
        &["ping", &target, "--echo", "-c", "3", "-i", "20ms"],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert_eq!(u(&doc, "/summary/sent"), 3, "{t}");
    assert_eq!(u(&doc, "/summary/received"), 0, "{t}");
    assert_eq!(doc["summary"]["loss_pct"], 100.0, "{t}");
    assert_eq!(kind_count(&doc, "closed_unanswered"), 3, "{t}");
    assert!(t.contains("3 sent, 0 received, 100.0% loss"), "{t}");
    assert!(t.contains("errors: closed_unanswered 3"), "{t}");
    assert_eq!(doc["answered_by"], "echo");
    assert!(doc.get("phases").is_none(), "nothing answered: no phases");

    // Plain ping: the relay answers every connect itself (0 % loss) and the output says
    // whose time that is, in the text and the JSON.
    let (out, doc) = with_json(
        dir.path(),
        "connect",
        "ping",
        &["ping", &target, "-c", "2", "-i", "20ms"],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(u(&doc, "/summary/received"), 2, "{t}");
    assert!(
        t.contains("note: a TCP connect is answered by whatever listens at the address: through a relay or forwarder"),
        "{t}"
    );
    assert_eq!(doc["answered_by"], "first_listener");
    assert!(
        doc["note"]
            .as_str()
            .unwrap()
            .contains("the first relay's time"),
        "{doc}"
    );

    // npt run's web users meet the same relay: the same kind.
    let (out, doc) = with_json(
        dir.path(),
        "run",
        "run",
        &[
            "run",
            &target,
            "--users",
            "2",
            "--duration",
            "1s",
            "--mix",
            "web=1",
            "-q",
        ],
    );
    let t = text(&out);
    assert!(kind_count(&doc, "closed_unanswered") >= 1, "{t}");
    assert_eq!(kind_count(&doc, "closed"), 0, "{t}");
}

/// Through a live relay and through a SOCKS5 proxy, `--echo` is answered by `npt serve`:
/// every attempt received, with its connect and echo parts.
#[test]
fn ping_echo_answers_end_to_end_through_a_relay_and_a_proxy() {
    if !proxies::have("/usr/bin/socat") || !proxies::have("/usr/bin/microsocks") {
        return;
    }
    let (_srv, addr) = common::serve(&[]);
    let port = free_port();
    let _relay = proxies::socat(port, addr);
    let socks = free_port();
    let _proxy = proxies::microsocks(socks, None);
    let dir = tempfile::tempdir().unwrap();
    let via = format!("socks5://127.0.0.1:{socks}");
    let relayed = format!("tcp://127.0.0.1:{port}");
    let direct = format!("tcp://{addr}");
    for (name, args) in [
        ("relay", vec!["ping", &relayed, "--echo"]),
        ("via", vec!["ping", &direct, "--echo", "--via", &via]),
    ] {
        let mut args = args;
        args.extend(["-c", "3", "-i", "20ms", "-s", "100"]);
        let (out, doc) = with_json(dir.path(), name, "ping", &args);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(0), "{name}: {t}");
        assert_eq!(u(&doc, "/summary/received"), 3, "{name}: {t}");
        assert_eq!(doc["answered_by"], "echo", "{name}");
        assert!(t.contains("one 100 B echo, end to end"), "{name}: {t}");
        assert!(t.contains("connect min/avg/p50/p95/max = "), "{name}: {t}");
        assert!(t.contains("echo    min/avg/p50/p95/max = "), "{name}: {t}");
        // The parts add up to the whole: connect + echo = each attempt's time.
        let p = &doc["phases"];
        let (c, e, all) = (
            p["connect_ms"]["avg_ms"].as_f64().unwrap(),
            p["echo_ms"]["avg_ms"].as_f64().unwrap(),
            doc["summary"]["avg_ms"].as_f64().unwrap(),
        );
        assert!(c > 0.0 && e > 0.0, "{name}: {p}");
        assert!(
            (c + e - all).abs() <= 0.01 * all + 0.01,
            "{name}: {c} + {e} vs {all}"
        );
    }
}

/// A closed port: the probe fails at the first refusal, well under a second by its own
/// reported elapsed time (not the 9 s of ten 1 s retries), with a message that says so —
/// also with a time limit and several clients.
#[test]
fn a_refused_probe_fails_at_the_first_refusal() {
    let target = format!("tcp://{}", dead_port());
    let dir = tempfile::tempdir().unwrap();
    for (name, extra) in [
        ("count", vec!["-n", "10"]),
        ("duration", vec!["-d", "10s", "--clients", "3"]),
    ] {
        let mut args = vec!["probe", target.as_str(), "-q"];
        args.extend(extra);
        let (out, doc) = with_json(dir.path(), name, "probe", &args);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {t}");
        assert_eq!(doc["stopped_by"], "error", "{name}: {t}");
        let took = doc["duration_s"].as_f64().unwrap();
        assert!(took < 1.0, "{name}: took {took} s: {t}");
        assert!(kind_count(&doc, "refused") >= 1, "{name}: {t}");
        let ex = first_example(&doc, "refused");
        assert!(ex.contains("nothing listens at 127.0.0.1:"), "{name}: {ex}");
        assert!(
            t.contains("the connection was refused (nothing listens there)"),
            "{name}: {t}"
        );
    }
}
