//! `npt trace --mtu` against a chain of known MTU (root): client — r1 — r2 — server, a hop agent
//! on r1 and r2, and the r1–r2 link's MTU 1400 (1500 elsewhere). The trace reads each segment's
//! path MTU from its own upstream end: 1472-byte datagrams each way on client → r1 (searched by
//! the client itself) and on r2 → server (by r2's agent), and 1372 (1400 − 28) each way on
//! r1 → r2 (by r1's agent) — `local` there, as r1 and r2 sit on the 1400 link themselves (an
//! ICMP needs a router between them: `tests/lab/mtu.rs`). Then an agent asked to search a
//! target outside its `--hop-allow` refuses, and the segment says so. With two routers m1 — m2
//! inside the r1 → r2 segment and the 1400 link between them, r1's agent reads 1372 each way
//! with PMTUD working (up, m1's ICMP; down, r2's kernel taught by m2's), then with the routers'
//! ICMP dropped a black hole each way, bracketed 1372/1373. No turn: sizes are counted, not
//! timed.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::lab::{self, Lab};
use common::{run, scratch};

/// Client — r1 — r2 — server, the r1–r2 link 1400 bytes (also a monitor's, `trace_monitor.rs`).
pub(crate) const TOPOLOGY: &str = r#"name = "tmtu"
[[node]]
name = "client"
[[node]]
name = "r1"
[[node]]
name = "r2"
[[node]]
name = "server"
[[link]]
a = "client"
b = "r1"
[[link]]
a = "r1"
b = "r2"
mtu = 1400
[[link]]
a = "r2"
b = "server"
[[service]]
name = "agent-r1"
node = "r1"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tm", "--hop-agent", "--hop-allow", "10.0.2.2:7777"]
ready = "tcp://10.0.1.2:7777"
[[service]]
name = "agent-r2"
node = "r2"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tm", "--hop-agent", "--hop-allow", "10.0.3.2:7777"]
ready = "tcp://10.0.2.2:7777"
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tm"]
ready = "tcp://10.0.3.2:7777"
"#;

/// Client — r1 — m1 — m2 — r2 — server, the m1–m2 link 1400 bytes: r2 is 10.0.4.2 to r1 and
/// the client, the server 10.0.5.2.
const ROUTED: &str = r#"name = "tmtu6"
[[node]]
name = "client"
[[node]]
name = "r1"
[[node]]
name = "m1"
[[node]]
name = "m2"
[[node]]
name = "r2"
[[node]]
name = "server"
[[link]]
a = "client"
b = "r1"
[[link]]
a = "r1"
b = "m1"
[[link]]
a = "m1"
b = "m2"
mtu = 1400
[[link]]
a = "m2"
b = "r2"
[[link]]
a = "r2"
b = "server"
[[service]]
name = "agent-r1"
node = "r1"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tm", "--hop-agent", "--hop-allow", "10.0.4.2:7777"]
ready = "tcp://10.0.1.2:7777"
[[service]]
name = "agent-r2"
node = "r2"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tm", "--hop-agent", "--hop-allow", "10.0.5.2:7777"]
ready = "tcp://10.0.4.2:7777"
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tm"]
ready = "tcp://10.0.5.2:7777"
"#;

/// A router that sends no "fragmentation needed".
const NO_ICMP: &str = r#"table ip npt_mtu {
	chain out {
		type filter hook output priority filter; policy accept;
		icmp type destination-unreachable icmp code frag-needed drop
	}
}
"#;

/// The trace's flags, to `target` over the hop agents at `r1` and `r2`.
fn args(target: &str) -> Vec<&str> {
    via(target, "npt://10.0.1.2:7777", "npt://10.0.2.2:7777")
}

fn via<'a>(target: &'a str, r1: &'a str, r2: &'a str) -> Vec<&'a str> {
    vec![
        "trace", target, "--hop", r1, "--hop", r2, "--token", "tm", "-c", "2", "-i", "100ms",
        "--mtu",
    ]
}

fn way(seg: &serde_json::Value, dir: &str, largest: u64, verdict: &str) {
    let d = &seg["mtu"][dir];
    assert_eq!(d["largest_datagram"], largest, "{dir}: {seg}");
    assert_eq!(d["largest_packet"], largest + 28, "{dir}: {seg}");
    assert_eq!(d["verdict"], verdict, "{dir}: {seg}");
    assert_eq!(d["settled"], true, "{dir}: {seg}");
}

#[test]
fn each_segment_reads_its_own_path_mtu_and_an_agent_refuses_outside_its_list() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = scratch();
    let lab = Lab::up(&dir, "tmtu", TOPOLOGY);

    let file = scratch().join("lab-trace-mtu.json");
    let doc = lab.npt_json("client", &args("tcp://10.0.3.2:7777"), &file, "trace");
    let text = run(&["report", file.to_str().unwrap()], Duration::from_secs(10));
    eprintln!("{}", String::from_utf8_lossy(&text.stdout));
    let seg = doc["segments"].as_array().unwrap();
    assert_eq!(seg.len(), 3);
    assert_eq!(seg[0]["mtu"]["to"], "udp://10.0.1.2:7777");
    for dir in ["up", "down"] {
        way(&seg[0], dir, 1472, "max_crossed");
        way(&seg[1], dir, 1372, "local");
        way(&seg[2], dir, 1472, "max_crossed");
        assert_eq!(seg[1]["mtu"][dir]["local_mtu"], 1400, "{}", seg[1]);
        assert_eq!(seg[1]["mtu"][dir]["smallest_lost"], 1373, "{}", seg[1]);
    }
    assert_eq!(seg[1]["from"], "npt://10.0.1.2:7777");

    // r2's agent may search 10.0.3.2:7777 only: port 7778 is refused, unsearched.
    let file = scratch().join("lab-trace-mtu-refused.json");
    let out = lab.npt(
        "client",
        &[
            args("tcp://10.0.3.2:7778"),
            vec!["--json", file.to_str().unwrap()],
        ]
        .concat(),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1), "a leg answered nothing");
    let doc = common::json(&file);
    let last = &doc["segments"][2]["mtu"];
    let e = last["error"].as_str().unwrap_or_default();
    assert!(
        e.starts_with("config:") && e.contains("--hop-allow"),
        "{last}"
    );
    assert!(last["up"].is_null() && last["down"].is_null(), "{last}");
    // The segments its agents may search still read.
    way(&doc["segments"][1], "up", 1372, "local");
}

#[test]
fn routers_inside_a_segment_answer_with_icmp_or_make_a_black_hole() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = scratch();
    let lab = Lab::up(&dir, "tmtu6", ROUTED);
    let trace = |name: &str| {
        let file = scratch().join(format!("lab-trace-mtu-{name}.json"));
        let a = via(
            "tcp://10.0.5.2:7777",
            "npt://10.0.1.2:7777",
            "npt://10.0.4.2:7777",
        );
        let doc = lab.npt_json("client", &a, &file, "trace");
        let text = run(&["report", file.to_str().unwrap()], Duration::from_secs(10));
        eprintln!("{name}:\n{}", String::from_utf8_lossy(&text.stdout));
        doc
    };

    let doc = trace("pmtud");
    let seg = &doc["segments"];
    for dir in ["up", "down"] {
        way(&seg[0], dir, 1472, "max_crossed");
        way(&seg[1], dir, 1372, "icmp");
        way(&seg[2], dir, 1472, "max_crossed");
        assert_eq!(seg[1]["mtu"][dir]["icmp_mtu"], 1400, "{}", seg[1]);
    }
    assert_eq!(
        seg[1]["mtu"]["up"]["icmp_from"], "10.0.2.2",
        "m1's address toward r1"
    );

    let rules = dir.join("tmtu-noicmp.nft");
    std::fs::write(&rules, NO_ICMP).unwrap();
    for m in ["m1", "m2"] {
        lab.exec_ok(m, &["nft", "-f", rules.to_str().unwrap()]);
    }
    // What m1 and m2 taught r1's and r2's kernels is forgotten.
    for r in ["r1", "r2"] {
        lab.exec_ok(r, &["ip", "route", "flush", "cache"]);
    }
    let doc = trace("black-hole");
    let seg = &doc["segments"];
    for dir in ["up", "down"] {
        way(&seg[1], dir, 1372, "black_hole");
        assert_eq!(seg[1]["mtu"][dir]["smallest_lost"], 1373, "{}", seg[1]);
        assert!(seg[1]["mtu"][dir]["icmp_mtu"].is_null(), "{}", seg[1]);
        way(&seg[2], dir, 1472, "max_crossed");
    }
}
