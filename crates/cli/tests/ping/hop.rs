//! Why this exists: `npt ping --from` asks a hop agent (`npt serve --token S --hop-agent`) to
//! measure for it, so the whole path is tested here on loopback: an agent and a second `npt
//! serve` as its target, TCP connect, UDP echo and QUIC handshake measured by the agent and
//! recorded as a `ping` result that says where it was measured from (schema-checked); and the
//! clear errors: `--from` or `--hop-agent` without `--token` (exit 2, naming the flag), a
//! target outside the allow-list, a dead agent and a silent one (classified, bounded in time).
//! The agent's exit summary names what it answered and refused.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;
use crate::serve_util;

use std::net::TcpListener;
use std::process::Output;
use std::time::{Duration, Instant};

use common::{assert_valid, json, run, u};
use serve_util::{serve, until, Served};

const LIMIT: Duration = Duration::from_secs(30);

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A target (`npt serve` with QUIC) and an agent that may measure it (and nothing else).
fn pair() -> (Served, Served) {
    let target = serve(4096, &["--quic", "127.0.0.1:0"]);
    let quic = target.quic.expect("quic address");
    let allow = format!("{},{quic}", target.tcp);
    let agent = serve(
        4096,
        &["--token", "S", "--hop-agent", "--hop-allow", allow.as_str()],
    );
    (target, agent)
}

/// `npt ping TARGET --from AGENT --token S -c 3 -i 10ms --json FILE EXTRA`: output and doc.
fn ping_from(target: &str, agent: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ping.json");
    let p = path.to_str().unwrap();
    let from = format!("npt://{agent}");
    let mut args = vec![
        "ping", target, "--from", &from, "--token", "S", "-c", "3", "-i", "10ms", "--json", p,
    ];
    args.extend_from_slice(extra);
    let out = run(&args, LIMIT);
    assert!(path.exists(), "no result written: {}", text(&out));
    let doc = json(&path);
    assert_valid(&doc, "ping");
    (out, doc)
}

#[test]
fn the_agent_measures_tcp_udp_and_quic_and_the_result_says_from_where() {
    let (target, agent) = pair();
    let quic = target.quic.unwrap();
    let from = format!("npt://{}", agent.tcp);
    for (url, proto, extra) in [
        (format!("tcp://{}", target.tcp), "tcp", &[][..]),
        (
            format!("udp://{}", target.tcp),
            "udp",
            &["--size", "100"][..],
        ),
        (format!("quic://{quic}"), "quic", &["--insecure"][..]),
    ] {
        let (out, doc) = ping_from(&url, &agent.tcp.to_string(), extra);
        let t = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{url}: {t}\nagent: {}",
            agent.stderr()
        );
        assert!(
            t.starts_with(&format!("PING {url} measured from {from}: ")),
            "{t}"
        );
        for seq in 1..=3 {
            assert!(t.contains(&format!("seq={seq} from ")), "{t}");
        }
        assert!(
            t.contains(&format!(
                "--- {url} ping statistics, measured from {from} ---"
            )),
            "{t}"
        );
        assert_eq!(doc["measured_from"], from.as_str());
        assert_eq!(doc["config"]["from"], from.as_str());
        assert_eq!(doc["proto"], proto);
        assert_eq!(u(&doc, "/summary/received"), 3, "{url}");
        assert_eq!(u(&doc, "/errors/total_errors"), 0);
        let want = if proto == "quic" {
            quic.to_string()
        } else {
            target.tcp.to_string()
        };
        assert_eq!(doc["addresses"], serde_json::json!([want]));
        let p50 = doc["latency"][proto]["p50_ms"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 < 500.0, "{url}: p50 {p50}");
    }
    // Target and agent counted what happened: the agent answered three requests of three.
    let pid = agent.pid();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let said = until(Duration::from_secs(10), || {
        agent.stderr().contains("stopping; hop agent:")
    });
    assert!(said.is_some(), "no exit summary: {}", agent.stderr());
    let err = agent.stderr();
    assert!(
        err.contains("hop agent: answered 3 attempts 9 mtu-searches 0 mtu-probes 0; refused: disabled 0 bad-mac 0"),
        "{err}"
    );
}

#[test]
fn a_target_outside_the_allow_list_is_a_classified_error_naming_it() {
    let (target, agent) = pair();
    // The agent may measure the target's TCP port only; its port + 1 is not on the list.
    let outside = format!("tcp://127.0.0.1:{}", target.tcp.port() + 1);
    let (out, doc) = ping_from(&outside, &agent.tcp.to_string(), &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains(&format!(
            "refused {outside}: the target is not within the agent's --hop-allow"
        )),
        "{t}"
    );
    assert_eq!(u(&doc, "/errors/by_kind/config/count"), 3);
    assert_eq!(u(&doc, "/summary/received"), 0);
    let counted = until(Duration::from_secs(5), || {
        serve_util::logged(&agent.stderr(), "hop agent:", "target") == 1
    });
    assert!(counted.is_some(), "{}", agent.stderr());
}

#[test]
fn a_dead_or_silent_agent_is_a_classified_error_and_nothing_hangs() {
    let target = serve(4096, &[]);
    let url = format!("tcp://{}", target.tcp);
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let t0 = Instant::now();
    let (out, doc) = ping_from(&url, &dead.to_string(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&format!("cannot reach the agent npt://{dead}")));
    assert_eq!(u(&doc, "/errors/by_kind/refused/count"), 3);
    assert!(t0.elapsed() < Duration::from_secs(5));

    // Accepts and never says a word: the handshake's deadline ends it.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let t0 = Instant::now();
    let (out, doc) = ping_from(&url, &addr.to_string(), &["-q"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("--token handshake"), "{}", text(&out));
    assert_eq!(u(&doc, "/errors/by_kind/timeout/count"), 3);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    drop(silent);

    // An npt serve that is not an agent (and has no --token): the handshake is refused.
    let (out, doc) = ping_from(&url, &target.tcp.to_string(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(u(&doc, "/errors/by_kind/refused/count"), 3);
}

#[test]
fn the_token_is_required_on_both_sides() {
    let out = run(&["serve", "--listen", "127.0.0.1:0", "--hop-agent"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--hop-agent needs --token"),
        "{}",
        text(&out)
    );
    let out = run(
        &["ping", "tcp://127.0.0.1:7", "--from", "npt://127.0.0.1:7"],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--from needs --token"),
        "{}",
        text(&out)
    );
    let out = run(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token",
            "S",
            "--hop-agent",
            "--hop-allow",
            "10.0.0.0/33",
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--hop-allow \"10.0.0.0/33\""),
        "{}",
        text(&out)
    );
}
