//! Why this exists: `npt trace` puts a hop agent's measurements, this host's own and an
//! exchange through the chain into one waterfall, so the whole path is tested here on
//! loopback: a target `npt serve`, an agent that may measure it, TCP and UDP segments and the
//! TCP echo through the chain's entry, recorded as a schema-checked `trace` result whose
//! relays' cost is the chain minus the sum, re-rendered by `npt report`; `--during` rounds
//! beside a command; and the clear errors — no `--token` (exit 2), a target outside the
//! agent's allow-list and a dead agent (classified, named, bounded in time, exit 1); and the
//! intended setup, `npt serve --token` everywhere: every leg answered over UDP, TCP and QUIC,
//! and a target with another secret an `auth` error naming it.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;
use crate::serve_util;

use std::net::SocketAddr;
use std::process::Output;
use std::time::{Duration, Instant};

use common::{assert_valid, f, json, run, serve, u, Guard};

const LIMIT: Duration = Duration::from_secs(30);

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A target and an agent allowed to measure it (and nothing else).
fn pair() -> ((Guard, SocketAddr), (Guard, SocketAddr)) {
    let target = serve(&[]);
    let allow = target.1.to_string();
    let agent = serve(&["--token", "S", "--hop-agent", "--hop-allow", &allow]);
    (target, agent)
}

fn trace(args: &[&str]) -> Output {
    let mut a = vec!["trace"];
    a.extend_from_slice(args);
    run(&a, LIMIT)
}

#[test]
fn a_chain_traced_over_loopback_adds_up() {
    let ((_t, target), (_a, agent)) = pair();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.json");
    let (tgt, hop) = (format!("tcp://{target}"), format!("npt://{agent}"));
    let out = trace(&[
        &tgt,
        "--hop",
        &hop,
        "--through",
        &tgt,
        "--token",
        "S",
        "-c",
        "4",
        "-i",
        "20ms",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let doc = json(&file);
    assert_valid(&doc, "trace");
    assert_eq!(doc["segments"][0]["from"], "here");
    assert_eq!(doc["segments"][1]["from"], hop.as_str());
    assert_eq!(doc["segments"][1]["to"], tgt.as_str());
    for i in 0..2 {
        assert_eq!(u(&doc, &format!("/segments/{i}/summary/received")), 4);
    }
    assert_eq!(u(&doc, "/chain/summary/received"), 4);
    let sum = f(&doc, "/segments/0/summary/p50_ms") + f(&doc, "/segments/1/summary/p50_ms");
    assert!((f(&doc, "/summary/sum/p50_ms") - sum).abs() < 1e-9);
    let cost = f(&doc, "/summary/chain/p50_ms") - f(&doc, "/summary/sum/p50_ms");
    assert!((f(&doc, "/summary/relays_cost/p50_ms") - cost).abs() < 1e-9);
    // The cost's interval is the three p50s' in quadrature, and it is a finding only outside.
    let ci = |p: &str| f(&doc, &format!("{p}/p50_ci_ms"));
    let legs = ["/segments/0", "/segments/1", "/chain"].map(|p| ci(p).powi(2));
    let cost_ci = ci("/summary/relays_cost");
    assert!(
        (cost_ci - legs.iter().sum::<f64>().sqrt()).abs() < 1e-9,
        "{doc}"
    );
    assert_eq!(
        doc["summary"]["relays_cost"]["within_noise"],
        f(&doc, "/summary/relays_cost/p50_ms").abs() <= cost_ci
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("relays' cost = chain − sum"), "{shown}");
    // `npt report` prints the same waterfall again, and its Markdown and HTML.
    let again = run(&["report", file.to_str().unwrap()], LIMIT);
    let again = String::from_utf8_lossy(&again.stdout).to_string();
    assert!(shown.contains(&again), "{again}\nnot in\n{shown}");
    let md = run(&["report", file.to_str().unwrap(), "--format", "md"], LIMIT);
    assert!(String::from_utf8_lossy(&md.stdout).starts_with("| | from | to | p50 (ms) |"));
    let html = run(
        &["report", file.to_str().unwrap(), "--format", "html"],
        LIMIT,
    );
    assert!(String::from_utf8_lossy(&html.stdout).contains("Waterfall of"));
}

#[test]
fn udp_segments_and_during_rounds() {
    let ((_t, target), (_a, agent)) = pair();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.json");
    let (tgt, hop) = (format!("udp://{target}"), format!("npt://{agent}"));
    let out = trace(&[
        &tgt,
        "--hop",
        &hop,
        "--through",
        &tgt,
        "--token",
        "S",
        "-c",
        "2",
        "-i",
        "20ms",
        "--during",
        "sleep 0.3; exit 3",
        "-q",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let doc = json(&file);
    assert_valid(&doc, "trace");
    assert_eq!(
        u(&doc, "/segments/0/summary/received"),
        2,
        "the agent's serve opens its UDP echo to the token"
    );
    assert_eq!(u(&doc, "/chain/summary/received"), 2);
    let rounds = doc["rounds"].as_array().unwrap();
    assert!(
        rounds.len() >= 2,
        "a round before and at least one during: {rounds:?}"
    );
    assert_eq!(rounds[0]["phase"], "before");
    assert!(rounds[1..].iter().all(|r| r["phase"] == "during"));
    assert_eq!(doc["during"]["command"], "sleep 0.3; exit 3");
    assert_eq!(doc["during"]["exit_code"], 3);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("p50 ms per round"), "{shown}");
}

#[test]
fn bad_input_is_named_and_nothing_hangs() {
    let ((_t, target), (_a, agent)) = pair();
    let tgt = format!("tcp://{target}");
    let hop = format!("npt://{agent}");
    // No --token: exit 2 naming it, before anything is sent.
    let out = trace(&[&tgt, "--hop", &hop]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--token"), "{}", text(&out));
    // A target outside the agent's --hop-allow: the segment's attempts fail as `config`, named.
    let elsewhere = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("refused.json");
    let out = trace(&[
        &format!("tcp://{elsewhere}"),
        "--hop",
        &hop,
        "--token",
        "S",
        "-c",
        "2",
        "-i",
        "10ms",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("--hop-allow"), "{}", text(&out));
    let doc = json(&file);
    assert_valid(&doc, "trace");
    assert_eq!(u(&doc, "/errors/by_kind/config/count"), 2);
    assert!(
        doc["summary"].get("sum").is_none(),
        "no sum without every segment"
    );
    // A dead agent: refused at once, naming it.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let t = Instant::now();
    let out = trace(&[
        &tgt,
        "--hop",
        &format!("npt://{dead}"),
        "--token",
        "S",
        "-c",
        "2",
        "-i",
        "10ms",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("cannot reach the agent npt://{dead}")),
        "{}",
        text(&out)
    );
    assert!(t.elapsed() < Duration::from_secs(10));
}

/// The processes whose command line is `argv` (NUL-separated in /proc).
fn running(argv: &[&str]) -> usize {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| *c == want)
        .count()
}

#[test]
fn ctrl_c_writes_the_report_and_ends_the_during_command_with_its_children() {
    let ((_t, target), (_a, agent)) = pair();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.json");
    // `; true` keeps the shell from exec'ing sleep: the sleep is the shell's child.
    let child = common::npt()
        .args([
            "trace",
            &format!("tcp://{target}"),
            "--hop",
            &format!("npt://{agent}"),
            "--token",
            "S",
            "-c",
            "1",
            "-i",
            "10ms",
            "-q",
            "--during",
            "sleep 31.25; true",
            "--json",
            file.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Guard(child);
    let t = Instant::now();
    while running(&["sleep", "31.25"]) == 0 {
        assert!(t.elapsed() < LIMIT, "the --during command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = i32::try_from(child.0.id()).unwrap();
    // SAFETY: kill(2) on the child we started.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < LIMIT, "npt trace did not end on Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let doc = json(&file);
    assert_valid(&doc, "trace");
    assert_eq!(doc["stopped_by"], "signal");
    assert_eq!(doc["rounds"][0]["phase"], "before");
    assert!(doc["during"]["note"].as_str().unwrap().contains("stopped"));
    assert_eq!(
        running(&["sleep", "31.25"]),
        0,
        "the command's child outlived the trace"
    );
}

/// The intended setup: every relay and the target run `npt serve --token S`. The agent keys its
/// UDP echo with its own secret, this host keys the chain's UDP echo and its TCP echo through
/// `--through`: every leg answered, over UDP and TCP.
#[test]
fn token_serves_everywhere_answer_every_leg() {
    let (_t, target) = serve(&["--token", "S"]);
    let allow = target.to_string();
    let (_a, agent) = serve(&["--token", "S", "--hop-agent", "--hop-allow", &allow]);
    let hop = format!("npt://{agent}");
    for proto in ["udp", "tcp"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("trace.json");
        let tgt = format!("{proto}://{target}");
        let t = Instant::now();
        let out = trace(&[
            &tgt,
            "--hop",
            &hop,
            "--through",
            &tgt,
            "--token",
            "S",
            "-c",
            "3",
            "-i",
            "20ms",
            "-q",
            "--json",
            file.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{proto}: {}", text(&out));
        let doc = json(&file);
        assert_valid(&doc, "trace");
        for leg in ["/segments/0", "/segments/1", "/chain"] {
            assert_eq!(
                u(&doc, &format!("{leg}/summary/received")),
                3,
                "{proto} {leg}: {}",
                text(&out)
            );
        }
        // No handshake waited out its timeout (1 s): every target answered it.
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{proto}: {:?}",
            t.elapsed()
        );
    }
}

/// A target whose `npt serve --token` has another secret than the chain's: the agent's UDP
/// segment and the TCP echo through the chain fail under `auth`, saying the secret is another,
/// within a bounded time — not a silent timeout.
#[test]
fn a_target_with_another_secret_is_an_auth_error_naming_it() {
    let (_t, target) = serve(&["--token", "OTHER"]);
    let allow = target.to_string();
    let (_a, agent) = serve(&["--token", "S", "--hop-agent", "--hop-allow", &allow]);
    let hop = format!("npt://{agent}");
    for proto in ["udp", "tcp"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("trace.json");
        let tgt = format!("{proto}://{target}");
        let t = Instant::now();
        let mut args = vec![tgt.as_str(), "--hop", &hop];
        if proto == "tcp" {
            // A TCP segment is a connect: no secret in it. The chain's echo carries one.
            args.extend(["--through", &tgt]);
        }
        args.extend([
            "--token",
            "S",
            "-c",
            "2",
            "-i",
            "10ms",
            "--json",
            file.to_str().unwrap(),
        ]);
        let out = trace(&args);
        assert_eq!(out.status.code(), Some(1), "{proto}: {}", text(&out));
        let doc = json(&file);
        assert_valid(&doc, "trace");
        assert_eq!(
            u(&doc, "/errors/by_kind/auth/count"),
            2,
            "{proto}: {}",
            text(&out)
        );
        let leg = if proto == "udp" {
            &doc["segments"][1]
        } else {
            &doc["chain"]
        };
        assert_eq!(leg["summary"]["received"], 0, "{proto}: {leg}");
        assert!(
            text(&out).contains("--token is another"),
            "{proto}: {}",
            text(&out)
        );
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{proto}: {:?}",
            t.elapsed()
        );
    }
}

/// Each QUIC segment reaches its hop on the hop's QUIC port (`npt://TCP=QUIC`), with a target
/// without `--token` and with one: QUIC needs nothing of the token, since a token serve
/// completes a QUIC handshake with anyone (its `--token` handshake comes later, on each stream).
#[test]
fn quic_segments_reach_each_hop_on_its_quic_port_with_and_without_a_token_target() {
    for target_args in [
        &["--quic", "127.0.0.1:0"][..],
        &["--quic", "127.0.0.1:0", "--token", "S"],
    ] {
        let target = serve_util::serve(4096, target_args);
        let tq = target.quic.expect("quic address");
        let allow = tq.to_string();
        let agent = serve_util::serve(
            4096,
            &[
                "--quic",
                "127.0.0.1:0",
                "--token",
                "S",
                "--hop-agent",
                "--hop-allow",
                &allow,
            ],
        );
        let aq = agent.quic.expect("quic address");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("trace.json");
        let tgt = format!("quic://{tq}");
        let hop = format!("npt://{}={aq}", agent.tcp);
        let out = trace(&[
            &tgt,
            "--hop",
            &hop,
            "--through",
            &tgt,
            "--token",
            "S",
            "-c",
            "2",
            "-i",
            "20ms",
            "--insecure",
            "-q",
            "--json",
            file.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{target_args:?}: {}", text(&out));
        let doc = json(&file);
        assert_valid(&doc, "trace");
        assert_eq!(doc["segments"][0]["to"], format!("quic://{aq}"));
        for leg in ["/segments/0", "/segments/1", "/chain"] {
            assert_eq!(
                u(&doc, &format!("{leg}/summary/received")),
                2,
                "{target_args:?} {leg}"
            );
        }
    }
}
