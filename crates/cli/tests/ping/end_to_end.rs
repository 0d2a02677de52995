//! `npt ping` end to end against real sockets on loopback: TCP connect, framed UDP echo and QUIC
//! handshake against `npt serve`, raw UDP against a plain echo, a refused port, a silent UDP
//! peer, a name with several addresses, Ctrl-C, and bad flags. Result documents are checked
//! against `schema/ping.schema.json`.

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Output, Stdio};
use std::time::Duration;

use common::{assert_valid, json, npt, run, u, Guard};

const LIMIT: Duration = Duration::from_secs(30);

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Pings `target` 3 times 10 ms apart (timeout 1 s unless `extra` says), writing the result to a file; returns output and doc.
fn ping(target: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ping.json");
    let p = path.to_str().unwrap();
    let mut args = vec!["ping", target, "-c", "3", "-i", "10ms", "--json", p];
    args.extend_from_slice(extra);
    let out = run(&args, LIMIT);
    assert!(path.exists(), "no result written: {}", text(&out));
    let doc = json(&path);
    assert_valid(&doc, "ping");
    (out, doc)
}

fn assert_all_answered(out: &Output, doc: &serde_json::Value, proto: &str) {
    let t = text(out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    for seq in 1..=3 {
        assert!(t.contains(&format!("seq={seq} from ")), "{t}");
    }
    assert!(t.contains("3 sent, 3 received, 0.0% loss"), "{t}");
    assert!(t.contains("rtt min/avg/p50/p90/max/stddev = "), "{t}");
    assert_eq!(u(doc, "/summary/received"), 3);
    assert_eq!(doc["proto"], proto);
    let lat = &doc["latency"][proto];
    let (min, p50, max) = (
        lat["min_ms"].as_f64().unwrap(),
        lat["p50_ms"].as_f64().unwrap(),
        lat["max_ms"].as_f64().unwrap(),
    );
    assert!(
        min > 0.0 && min <= p50 && p50 <= max && max < 500.0,
        "{lat}"
    );
    assert_eq!(u(doc, "/errors/total_errors"), 0);
    assert_eq!(doc["stopped_by"], "count");
}

/// `npt serve` with QUIC: (guard, tcp+udp address, quic address, certificate file).
fn serve_quic(dir: &std::path::Path) -> (Guard, SocketAddr, SocketAddr, String) {
    let cert = dir.join("cert.pem").to_str().unwrap().to_string();
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0", "--quic", "127.0.0.1:0"])
        .args(["--quic-cert-out", &cert])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("npt serve starts");
    let stdout = child.stdout.take().unwrap();
    let guard = Guard(child);
    let (mut plain, mut quic) = (None, None);
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("ready lines");
        let addr: SocketAddr = line.rsplit(' ').next().unwrap().parse().unwrap();
        if line.contains("quic") {
            quic = Some(addr);
            break;
        }
        plain = Some(addr);
    }
    (
        guard,
        plain.unwrap(),
        quic.expect("a quic ready line"),
        cert,
    )
}

#[test]
fn tcp_udp_and_quic_get_replies_from_npt_serve() {
    let dir = tempfile::tempdir().unwrap();
    let (_srv, addr, quic, cert) = serve_quic(dir.path());

    let (out, doc) = ping(&format!("tcp://{addr}"), &[]);
    assert_all_answered(&out, &doc, "tcp");
    assert!(
        doc["summary"]["far_end"].is_null(),
        "a connect has no far end"
    );

    let (out, doc) = ping(&format!("udp://{addr}"), &[]);
    assert_all_answered(&out, &doc, "udp");
    assert_eq!(doc["summary"]["far_end"], "npt-serve");
    assert!(
        text(&out).contains("far end: npt serve\n"),
        "{}",
        text(&out)
    );

    let (out, doc) = ping(&format!("quic://{quic}"), &["--ca", &cert]);
    assert_all_answered(&out, &doc, "quic");
    assert_eq!(doc["addresses"][0], quic.to_string());

    // Without trusting its certificate the handshake is a classified `tls` failure.
    let wrong = dir.path().join("other.pem");
    std::fs::write(&wrong, rcgen_free_cert()).unwrap();
    let out = run(
        &[
            "ping",
            &format!("quic://{quic}"),
            "-c",
            "1",
            "--ca",
            wrong.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert!(text(&out).contains(" tls ("), "{}", text(&out));
    assert_eq!(out.status.code(), Some(1));
}

/// A certificate that did not sign the server's: the one `npt serve` writes for another run.
fn rcgen_free_cert() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let (_srv, _, _, cert) = serve_quic(dir.path());
    std::fs::read(cert).unwrap()
}

#[test]
fn raw_udp_against_a_plain_echo() {
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = echo.local_addr().unwrap();
    echo.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let t = std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        while !s.load(std::sync::atomic::Ordering::SeqCst) {
            if let Ok((n, from)) = echo.recv_from(&mut b) {
                let _ = echo.send_to(&b[..n], from);
            }
        }
    });
    let (out, doc) = ping(&format!("udp://{addr}"), &["--raw", "-s", "100"]);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    t.join().unwrap();
    assert_all_answered(&out, &doc, "udp");
    assert_eq!(doc["config"]["raw"], true);
}

/// A plain echo (socat) answers `npt ping udp://` and `--echo` by returning each request
/// unchanged: the result and the text say so (`summary.far_end` = `echo`), as `npt probe`'s do.
#[test]
fn a_plain_echo_is_named_as_the_far_end() {
    for (proto, extra) in [("udp", &[][..]), ("tcp", &["--echo"][..])] {
        let Some((_echo, port)) = common::socat_echo(proto) else {
            return;
        };
        let (out, doc) = ping(&format!("{proto}://127.0.0.1:{port}"), extra);
        assert_all_answered(&out, &doc, proto);
        assert_eq!(doc["summary"]["far_end"], "echo", "{proto}");
        assert_eq!(doc["answered_by"], "echo", "{proto}");
        let t = text(&out);
        assert!(
            t.contains("far end: plain echo (returns bytes unchanged"),
            "{proto}: {t}"
        );
        // `--token` there: the echo returns the handshake itself, and the error says so at
        // once (before: a 3 s wait for "no answer" over UDP, "out of turn" over TCP). A UDP
        // socat serves its first peer only: a fresh one.
        let (_echo, port) = common::socat_echo(proto).unwrap();
        let mut args = vec!["ping", "-c", "1", "--token", "S"];
        let target = format!("{proto}://127.0.0.1:{port}");
        args.push(&target);
        args.extend_from_slice(extra);
        let out = run(&args, LIMIT);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{proto}: {t}");
        assert!(
            t.contains(
                "the far end returned the --token handshake unchanged: a plain echo, which \
                 cannot check a token (drop --token)"
            ),
            "{proto}: {t}"
        );
    }
}

/// `npt serve --token`: every ping that carries frames does the keyed handshake and is
/// answered — a UDP echo, a TCP connect with one echo (`--echo`, and its second echo with
/// `--setup`) — and a wrong secret is a refusal (exit 3), never a timeout.
#[test]
fn a_server_with_a_token_answers_every_framed_ping() {
    let (_srv, addr) = common::serve(&["--token", "S"]);
    let (out, doc) = ping(&format!("udp://{addr}"), &["--token", "S"]);
    assert_all_answered(&out, &doc, "udp");
    let (out, doc) = ping(&format!("tcp://{addr}"), &["--echo", "--token", "S"]);
    assert_all_answered(&out, &doc, "tcp");
    let (out, doc) = ping(
        &format!("tcp://{addr}"),
        &["--echo", "--setup", "--token", "S"],
    );
    assert_all_answered(&out, &doc, "tcp");
    assert!(doc["setup"].is_object(), "{doc}");
    for proto in ["udp", "tcp"] {
        let mut args = vec!["ping", "-c", "1", "--token", "wrong"];
        let target = format!("{proto}://{addr}");
        args.push(&target);
        if proto == "tcp" {
            args.push("--echo");
        }
        let out = run(&args, LIMIT);
        let t = text(&out);
        assert_ne!(out.status.code(), Some(0), "{proto}: {t}");
        assert!(!t.contains("seq=1 from "), "{proto}: {t}");
    }
}

#[test]
fn closed_tcp_port_is_refused_and_exits_1() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (out, doc) = ping(&format!("tcp://127.0.0.1:{port}"), &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("seq=1 refused ("), "{t}");
    assert!(t.contains("3 sent, 0 received, 100.0% loss"), "{t}");
    assert_eq!(u(&doc, "/errors/by_kind/refused/count"), 3);
    assert_eq!(doc["errors"]["error_rate"], 1.0);
}

#[test]
fn silent_udp_peer_times_out() {
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let (out, doc) = ping(&format!("udp://{addr}"), &["-W", "100ms"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("seq=1 timeout ("), "{t}");
    assert_eq!(u(&doc, "/errors/by_kind/timeout/count"), 3);
    assert_eq!(u(&doc, "/summary/received"), 0);
    drop(silent);
}

#[test]
fn a_name_with_several_addresses_tries_each() {
    // npt serve listens on 127.0.0.1 only; localhost may resolve to ::1 first.
    let (_srv, addr) = common::serve(&[]);
    let (out, doc) = ping(&format!("tcp://localhost:{}", addr.port()), &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(u(&doc, "/summary/received"), 3, "{t}");
    assert!(t.contains(&format!("from {addr} ")), "{t}");
}

#[test]
fn ctrl_c_stops_with_the_summary() {
    let (_srv, addr) = common::serve(&[]);
    let mut child = npt()
        .args(["ping", &format!("udp://{addr}"), "-c", "0", "-i", "20ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Wait for the first reply line, so the signal handler is installed and pings flow.
    for l in lines.by_ref() {
        if l.unwrap().starts_with("seq=1 ") {
            break;
        }
    }
    // SAFETY: kill with a valid pid of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let guard = Guard(child);
    let mut child = guard;
    let status = child.0.wait().unwrap();
    let rest = rest.join("\n");
    assert_eq!(status.code(), Some(0), "{rest}");
    assert!(rest.contains("stopped by signal"), "{rest}");
    assert!(rest.contains("rtt min/avg/p50/p90/max/stddev"), "{rest}");
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    for (args, flag) in [
        (
            &["ping", "tcp://127.0.0.1:9", "--interval", "0"][..],
            "--interval",
        ),
        (
            &["ping", "tcp://127.0.0.1:9", "--interval", "-1"][..],
            "--interval",
        ),
        (
            &["ping", "tcp://127.0.0.1:9", "--timeout", "0s"][..],
            "--timeout",
        ),
        (
            &["ping", "tcp://127.0.0.1:9", "--count", "x"][..],
            "--count",
        ),
        (&["ping", "quic://127.0.0.1:9"][..], "--ca"),
        (&["ping", "127.0.0.1:9"][..], "tcp://"),
        (&["ping", "udp://127.0.0.1:9", "--echo"][..], "--echo"),
        (
            &["ping", "tcp://127.0.0.1:9", "--echo", "--size", "10"][..],
            "--size",
        ),
        (
            &["ping", "tcp://127.0.0.1:9", "--token", "s"][..],
            "--token",
        ),
        (
            &[
                "ping",
                "tcp://127.0.0.1:9",
                "--echo",
                "--from",
                "npt://127.0.0.1:9",
                "--token",
                "s",
            ][..],
            "--echo",
        ),
    ] {
        let out = run(args, LIMIT);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(flag), "{args:?}: {t}");
    }
}

#[test]
fn json_to_stdout_keeps_text_on_stderr() {
    let (_srv, addr) = common::serve(&[]);
    let out = run(
        &[
            "ping",
            &format!("tcp://{addr}"),
            "-c",
            "2",
            "-i",
            "10ms",
            "-q",
            "--json",
            "-",
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_valid(&doc, "ping");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("seq="), "-q: summary only: {err}");
    assert!(err.contains("2 sent, 2 received"), "{err}");
}

/// Which ICMP socket `npt ping icmp://` opens here: a datagram one when this process's group
/// is in `net.ipv4.ping_group_range`, else (root) a raw one; `None` when neither may open.
fn icmp_socket_here() -> Option<&'static str> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range").ok()?;
    let mut it = range.split_whitespace().map(|x| x.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    // SAFETY: getgid and geteuid have no preconditions.
    let (gid, root) = unsafe { (u64::from(libc::getgid()), libc::geteuid() == 0) };
    if (lo..=hi).contains(&gid) {
        Some("datagram")
    } else if root {
        Some("raw")
    } else {
        None
    }
}

fn assert_icmp(out: &Output, doc: &serde_json::Value, socket: &str) {
    assert_all_answered(out, doc, "icmp");
    assert_eq!(doc["config"]["socket"], socket, "{doc}");
    assert_eq!(doc["answered_by"], "host");
    let note = doc["note"].as_str().unwrap_or_default();
    let said = if socket == "raw" {
        "a raw ICMP socket"
    } else {
        "ICMP datagram socket"
    };
    assert!(note.contains(said), "{note}");
    assert!(
        text(out).contains(said),
        "the summary says it too: {}",
        text(out)
    );
}

#[test]
fn icmp_echo_on_loopback_over_either_socket() {
    let Some(socket) = icmp_socket_here() else {
        eprintln!("SKIPPED icmp_echo_on_loopback_over_either_socket: no ICMP socket (not root, group not in ping_group_range)");
        return;
    };
    for target in ["icmp://127.0.0.1", "icmp://[::1]"] {
        let (out, doc) = ping(target, &[]);
        assert_icmp(&out, &doc, socket);
        assert_eq!(doc["target"], target);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    // As root, in a network namespace of its own whose ping_group_range takes every group,
    // the unprivileged datagram socket (the kernel's identifier, not ours, comes back on it);
    // a route into nowhere times every attempt out.
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("v4.json"),
        dir.path().join("v6.json"),
        dir.path().join("lost.json"),
    );
    let npt = env!("CARGO_BIN_EXE_npt");
    let script = format!(
        "ip link set lo up && sysctl -qw net.ipv4.ping_group_range='0 2147483647' && \
         ip route add 10.9.9.0/24 dev lo && \
         {npt} ping icmp://127.0.0.1 -c 3 -i 10ms --json {a} && \
         {npt} ping icmp://[::1] -c 3 -i 10ms --json {b}; \
         {npt} ping icmp://10.9.9.2 -c 2 -i 10ms -W 200ms --json {c}; echo exit=$?",
        a = a.display(),
        b = b.display(),
        c = c.display()
    );
    let out = std::process::Command::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .output()
        .expect("unshare runs");
    let t = text(&out);
    for p in [&a, &b] {
        let doc = json(p);
        assert_valid(&doc, "ping");
        assert_eq!(doc["config"]["socket"], "datagram", "{t}");
        assert_eq!(u(&doc, "/summary/received"), 3, "{t}");
        assert_eq!(u(&doc, "/errors/total_errors"), 0, "{t}");
    }
    let lost = json(&c);
    assert_valid(&lost, "ping");
    assert_eq!(u(&lost, "/summary/sent"), 2);
    assert_eq!(u(&lost, "/summary/lost"), 2);
    assert_eq!(lost["summary"]["loss_pct"], 100.0);
    assert_eq!(u(&lost, "/errors/by_kind/timeout/count"), 2, "{lost}");
    assert!(t.contains("exit=1"), "nothing answered: exit 1: {t}");
}

#[test]
fn icmp_flags_that_do_not_apply_exit_2() {
    for (args, flag) in [
        (&["ping", "icmp://127.0.0.1:7"][..], "icmp://HOST"),
        (&["ping", "icmp://127.0.0.1", "--raw"], "--raw"),
        (&["ping", "icmp://127.0.0.1", "-s", "20"], "--size"),
    ] {
        let out = run(args, LIMIT);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(flag), "{args:?}: {t}");
    }
}
