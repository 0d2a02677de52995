//! The setup blocks of `npt ping --echo --setup` and `npt run` on a path of known round trip
//! (root): client — middle — server, links of 5 ms and 20 ms each way (50 ms end to end). On
//! the server: `npt serve` (TCP, and QUIC on 7778), microsocks (SOCKS5) and tinyproxy (HTTP
//! CONNECT), each reaching the server on its own node; on the middle node a socat TCP
//! forwarder to the server.
//!
//! Ping: every layer of a direct connection costs one round trip of the 50 ms path within 5 %
//! (the TCP connect, the first echo), as do a SOCKS5 greeting and CONNECT and an HTTP CONNECT
//! on the proxies' node, the base round trip being the second echo on each connection; the
//! ping's own RTT is still the connect and the first echo. Through socat the connect is
//! socat's own accept (a fifth of the path) and the first echo carries socat's connect onward
//! (0.8 round trips more): flagged.
//!
//! Run: four users browsing over TCP and QUIC; the base round trip, from requests on
//! connections in use, reads the path's 50 ms, the TCP connect and the QUIC handshake one
//! round trip within 5 %, the first response byte one round trip and not flagged.

#![cfg(test)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::lab::{self, Lab};
use common::{assert_valid, f, json, scratch};

/// tinyproxy logs at `Critical` only, as in the setup module (at `Info` each CONNECT waits
/// for its own log lines).
fn topology(dir: &Path) -> String {
    let tiny = dir.join("ping-setup-tinyproxy.conf");
    std::fs::write(
        &tiny,
        "User nobody\nGroup nogroup\nPort 8888\nListen 10.0.2.2\nTimeout 30\n\
         Allow 10.0.1.0/24\nMaxClients 50\nLogLevel Critical\n",
    )
    .unwrap();
    format!(
        r#"name = "tpsetup"
[[node]]
name = "client"
[[node]]
name = "middle"
[[node]]
name = "server"
[[link]]
a = "client"
b = "middle"
delay = "5ms"
[[link]]
a = "middle"
b = "server"
delay = "20ms"
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--quic", "10.0.2.2:7778"]
ready = "tcp://10.0.2.2:7777"
[[service]]
name = "socks"
node = "server"
cmd = ["/usr/bin/microsocks", "-i", "10.0.2.2", "-p", "1080"]
ready = "tcp://10.0.2.2:1080"
[[service]]
name = "connect"
node = "server"
cmd = ["/usr/bin/tinyproxy", "-d", "-c", "{}"]
ready = "tcp://10.0.2.2:8888"
[[service]]
name = "forwarder"
node = "middle"
cmd = ["socat", "TCP-LISTEN:9000,fork,reuseaddr", "TCP:10.0.2.2:7777"]
ready = "tcp://10.0.1.2:9000"
"#,
        tiny.display()
    )
}

/// `npt ping TARGET --echo --setup -c 10 ARGS` on the client: its document, every attempt
/// answered and set up, the base round trip the path's 50 ms.
fn ping(lab: &Lab, target: &str, args: &[&str], name: &str) -> serde_json::Value {
    let file = scratch().join(format!("lab-ping-setup-{name}.json"));
    let mut a = vec![
        "ping", target, "--echo", "--setup", "-c", "10", "-i", "300ms",
    ];
    a.extend_from_slice(args);
    a.extend(["--json", file.to_str().unwrap()]);
    let out = lab.npt("client", &a, Duration::from_secs(30));
    eprintln!("{name}:\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(out.status.success(), "{name}: {out:?}");
    let doc = json(&file);
    assert_valid(&doc, "ping");
    assert_eq!(f(&doc, "/summary/received"), 10.0, "{name}");
    let s = &doc["setup"];
    assert_eq!(f(s, "/summary/completed"), 10.0, "{name}: {}", s["errors"]);
    assert_eq!(s["summary"]["rtt_from"], "warm_request", "{name}");
    let rtt = f(s, "/summary/rtt_ms");
    assert!((rtt - 50.0).abs() < 2.0, "{name}: base RTT {rtt} ms");
    doc
}

/// `npt run` on the client, four users browsing over TCP and QUIC with small pages (the
/// figures are the setups', not the transfers'): its document.
fn run(lab: &Lab) -> serde_json::Value {
    let file = scratch().join("lab-run-setup.json");
    let args = [
        "run",
        "tcp://10.0.2.2:7777",
        "--quic",
        "10.0.2.2:7778",
        "--insecure",
        "-u",
        "4",
        "-d",
        "5s",
        "--mix",
        "web=3,quic=1",
        "--think",
        "100ms..200ms",
        "--pages",
        "1..2",
        "--rounds",
        "2..4",
        "--request-up",
        "1KB..4KB",
        "--request-down",
        "4KB..16KB",
        "--pause",
        "10ms..50ms",
        "--resources",
        "2..4",
        "--doc-down",
        "8KB..16KB",
        "--resource-down",
        "1KB..8KB",
        "--seed",
        "7",
        "--json",
        file.to_str().unwrap(),
    ];
    let out = lab.npt("client", &args, Duration::from_secs(30));
    eprintln!("run:\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(out.status.success(), "run: {out:?}");
    let doc = json(&file);
    assert_valid(&doc, "run");
    doc
}

/// A run's block for `proto`: the base round trip the path's, every connection set up, the
/// connect or handshake one round trip within 5 % and the first byte one, not flagged (as
/// `npt http`'s lab test holds it: connections set up at once wait for the server's CPU).
fn run_block(doc: &serde_json::Value, proto: &str, first: &str) {
    let s = &doc["protocols"][proto]["setup"];
    assert_eq!(s["summary"]["rtt_from"], "warm_request", "{proto}: {s}");
    let rtt = f(s, "/summary/rtt_ms");
    assert!((rtt - 50.0).abs() < 2.0, "{proto}: base RTT {rtt} ms");
    assert!(f(s, "/summary/attempts") >= 2.0, "{proto}");
    assert_eq!(
        f(s, "/summary/attempts"),
        f(s, "/summary/completed"),
        "{proto}"
    );
    crate::setup::reads(s, &[(first, 1.0), ("first_byte", f64::NAN)], proto);
    let fb = &s["layers"][1];
    let (lo, r) = (f(fb, "/rtts_lo"), f(fb, "/rtts"));
    assert!(
        lo <= 1.5 && r >= 0.95,
        "{proto}: the first byte {r} round trips"
    );
    assert_eq!(f(s, "/summary/flagged"), 0.0, "{proto}: {}", s["layers"]);
}

#[test]
fn each_layer_of_a_ping_and_a_run_costs_its_round_trips() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = scratch();
    let lab = Lab::up(&dir, "tpsetup", &topology(&dir));
    let server = "tcp://10.0.2.2:7777";

    let d = ping(&lab, server, &[], "direct");
    crate::setup::reads(
        &d["setup"],
        &[("tcp_connect", 1.0), ("first_byte", 1.0)],
        "direct",
    );
    assert_eq!(f(&d, "/setup/summary/flagged"), 0.0);
    // The ping's own figure is still the connect and the first echo: two round trips.
    let p50 = f(&d, "/summary/p50_ms");
    assert!((p50 - 100.0).abs() <= 5.0, "direct: ping p50 {p50} ms");

    let d = ping(&lab, server, &["--via", "socks5://10.0.2.2:1080"], "socks5");
    crate::setup::reads(
        &d["setup"],
        &[
            ("tcp_connect", 1.0),
            ("socks5_greeting", 1.0),
            ("socks5_connect", 1.0),
            ("first_byte", 1.0),
        ],
        "socks5",
    );

    let d = ping(&lab, server, &["--via", "http://10.0.2.2:8888"], "connect");
    crate::setup::reads(
        &d["setup"],
        &[
            ("tcp_connect", 1.0),
            ("http_connect", 1.0),
            ("first_byte", 1.0),
        ],
        "connect",
    );

    // socat accepts by itself 10 ms away and connects onward only then: the first echo pays
    // that 40 ms connect before its own 50 ms round trip (1.8), and socat's fork of a process
    // per connection on top, which on a loaded box read up to 2.12.
    let d = ping(&lab, "tcp://10.0.1.2:9000", &[], "forwarder");
    crate::setup::reads(
        &d["setup"],
        &[("tcp_connect", 0.2), ("first_byte", f64::NAN)],
        "forwarder",
    );
    let first = &d["setup"]["layers"][1];
    let rtts = first["rtts"].as_f64().unwrap();
    assert!(
        (1.7..3.0).contains(&rtts),
        "forwarder: the first echo {rtts} round trips, want 1.8 and socat's fork"
    );
    assert!(first["flag"].is_string(), "forwarder: {first}");
    assert_eq!(f(&d, "/setup/summary/flagged"), 1.0);

    let d = run(&lab);
    run_block(&d, "tcp", "tcp_connect");
    run_block(&d, "quic", "quic");
}
