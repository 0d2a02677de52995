//! `npt lifetime` against middleboxes of known idle timeouts (root): a client, a middle node
//! and `npt serve`, in one lab. On the middle node, in turn: a socat UDP relay with `-T 5`
//! reads 5 ± 0.5 s, and the relay's new session comes from a new port (rebound); an nftables
//! NAT whose `ct timeout` gives UDP 5 s and masquerades `fully-random` reads 5 ± 0.5 s and
//! rebound; the same NAT with 30 s and a plain `masquerade` (which keeps the port) reads
//! 30 ± 1 s, not rebound. `--max` just above each answer keeps the test near 100 s.
//! TCP, in a lab of its own (run beside it): a socat TCP relay with `-T 5` reads 5 s and
//! "closed by the path" (its FIN); an nftables NAT whose `ct timeout` gives established TCP
//! 10 s reads 10 s and "silently dropped".

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::lab::{self, Lab};
use common::{f, run, scratch};

const TOPOLOGY: &str = r#"name = "lifetime"
[[node]]
name = "client"
[[node]]
name = "middle"
[[node]]
name = "server"
[[link]]
a = "client"
b = "middle"
[[link]]
a = "middle"
b = "server"
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.2.2:7777"
[[service]]
name = "relay"
node = "middle"
cmd = ["socat", "-T", "5", "UDP-LISTEN:9000,fork,reuseaddr", "UDP:10.0.2.2:7777"]
ready = "udp://10.0.1.2:9000"
"#;

/// The UDP topology with a socat TCP relay on the middle node instead of the UDP one.
fn tcp_topology() -> String {
    TOPOLOGY
        .replace("name = \"lifetime\"", "name = \"lifetcp\"")
        .replace(
            r#"cmd = ["socat", "-T", "5", "UDP-LISTEN:9000,fork,reuseaddr", "UDP:10.0.2.2:7777"]
ready = "udp://10.0.1.2:9000""#,
            r#"cmd = ["socat", "-T", "5", "TCP-LISTEN:9000,fork,reuseaddr", "TCP:10.0.2.2:7777"]
ready = "tcp://10.0.1.2:9000""#,
        )
}

/// An nftables NAT on the middle node toward the server whose `ct timeout` gives established
/// TCP connections `secs` idle, counting what comes back from the server for a connection
/// conntrack no longer knows (a `new` entry: picked up mid-stream) and the RSTs the middle
/// node sends the server.
fn tcp_nat(secs: u32) -> String {
    format!(
        r#"table ip npt_lifetime {{
	ct timeout tcp_idle {{
		protocol tcp
		l3proto ip
		policy = {{ established : {secs} }}
	}}
	chain pre {{
		type filter hook prerouting priority filter; policy accept;
		ip protocol tcp ct timeout set "tcp_idle"
		iifname "server" tcp flags & (syn | ack) == ack ct state new counter
	}}
	chain out {{
		type filter hook output priority filter; policy accept;
		oifname "server" tcp flags & rst == rst counter
	}}
	chain post {{
		type nat hook postrouting priority srcnat; policy accept;
		oifname "server" masquerade
	}}
}}
"#
    )
}

/// An nftables NAT on the middle node toward the server: UDP conntrack entries live `secs`
/// idle (a `ct timeout` object), and `masquerade` takes `flags` (`fully-random` or none).
fn nat(secs: u32, flags: &str) -> String {
    format!(
        r#"table ip npt_lifetime {{
	ct timeout udp_idle {{
		protocol udp
		l3proto ip
		policy = {{ unreplied : {secs}, replied : {secs} }}
	}}
	chain pre {{
		type filter hook prerouting priority filter; policy accept;
		ip protocol udp ct timeout set "udp_idle"
	}}
	chain post {{
		type nat hook postrouting priority srcnat; policy accept;
		oifname "server" masquerade {flags}
	}}
}}
"#
    )
}

/// `nft ARGS` on the middle node, which must succeed.
fn nft(lab: &Lab, args: &[&str]) {
    lab.exec_ok("middle", &[&["nft"], args].concat());
}

/// `npt lifetime TARGET ARGS` on the client: its document, after the text is shown.
fn lifetime(lab: &Lab, target: &str, args: &[&str], name: &str) -> serde_json::Value {
    let file = scratch().join(format!("lab-lifetime-{name}.json"));
    let mut a = vec!["lifetime", target, "-q"];
    a.extend_from_slice(args);
    let doc = lab.npt_json("client", &a, &file, "lifetime");
    eprintln!("{name}: {}", doc["summary"]);
    doc
}

/// The lifetime is `want` ± `tol` s, bracketed within the resolution. At most one expiry
/// contradicted by a longer survivor: a callback lost on a busy box must not move the answer
/// (the search checks every upper end with a second expiry), and more than one would say the
/// path's timeout is not what the lab set. On failure: each flow's fate and the lab links'
/// counters, which say whether the lab dropped anything.
fn reads(lab: &Lab, doc: &serde_json::Value, want: f64, tol: f64) {
    let (l, lo, hi) = (
        f(doc, "/summary/lifetime_s"),
        f(doc, "/summary/alive_after_s"),
        f(doc, "/summary/gone_after_s"),
    );
    let inconsistent = doc["summary"]["inconsistent"].as_u64().unwrap_or(u64::MAX);
    let good = (l - want).abs() <= tol
        && lo < hi
        && hi - lo <= f(doc, "/summary/resolution_s") + 1e-9
        && inconsistent <= 1;
    if !good {
        for flow in doc["flows"].as_array().into_iter().flatten() {
            eprintln!("{flow}");
        }
        eprintln!("lab links: {}", lab.status()["links"]);
    }
    assert!(
        good,
        "lifetime {l} s (alive {lo}, gone {hi}), want {want} ± {tol}; {inconsistent} inconsistent"
    );
}

#[test]
fn known_idle_timeouts_read_back() {
    if lab::skipped(module_path!()) {
        return;
    }
    // No turn: this lab has no delay or rate, so its wire thread sleeps until a packet comes
    // (it never spins), and a lifetime is read to 0.5 s — another module's load cannot move
    // it, and its few datagrams move no other module's figure. Its ~100 s of idle gaps then
    // overlap the rest of the lab tests instead of adding to them.
    let dir = scratch();
    let lab = Lab::up(&dir, "lifetime", TOPOLOGY);

    let relay = lifetime(
        &lab,
        "udp://10.0.1.2:9000",
        &["--max", "8s", "--resolution", "0.5s"],
        "socat",
    );
    reads(&lab, &relay, 5.0, 0.5);
    assert_eq!(
        relay["summary"]["rebound"], true,
        "socat's new session: a new port"
    );

    let random = dir.join("lifetime-random.nft");
    std::fs::write(&random, nat(5, "fully-random")).unwrap();
    nft(&lab, &["-f", random.to_str().unwrap()]);
    let doc = lifetime(
        &lab,
        "udp://10.0.2.2:7777",
        &["--max", "8s", "--resolution", "0.5s"],
        "nat-random",
    );
    reads(&lab, &doc, 5.0, 0.5);
    assert_eq!(doc["summary"]["rebound"], true, "fully-random: a new port");

    nft(&lab, &["delete", "table", "ip", "npt_lifetime"]);
    let keep = dir.join("lifetime-30.nft");
    std::fs::write(&keep, nat(30, "")).unwrap();
    nft(&lab, &["-f", keep.to_str().unwrap()]);
    let doc = lifetime(&lab, "udp://10.0.2.2:7777", &["--max", "40s"], "nat-30");
    reads(&lab, &doc, 30.0, 1.0);
    assert_eq!(
        doc["summary"]["rebound"], false,
        "masquerade keeps a free port"
    );
}

#[test]
fn tcp_idle_cut_offs_read_back() {
    if lab::skipped(module_path!()) {
        return;
    }
    // No turn, as the UDP test (its own lab, run beside it).
    let dir = scratch();
    let lab = Lab::up(&dir, "lifetcp", &tcp_topology());

    let relay = lifetime(
        &lab,
        "tcp://10.0.1.2:9000",
        &["--max", "8s", "--resolution", "0.5s"],
        "tcp-socat",
    );
    reads(&lab, &relay, 5.0, 0.5);
    let cut = &relay["summary"]["cut_off"];
    assert_eq!(cut["how"], "closed", "socat -T 5 closes both sides: {cut}");
    assert!((f(&relay, "/summary/cut_off/closed_after_s") - 5.0).abs() < 0.5);

    let file = dir.join("lifetime-tcp.nft");
    std::fs::write(&file, tcp_nat(10)).unwrap();
    nft(&lab, &["-f", file.to_str().unwrap()]);
    let doc = lifetime(&lab, "tcp://10.0.2.2:7777", &["--max", "14s"], "tcp-nat");
    reads(&lab, &doc, 10.0, 1.0);
    let cut = &doc["summary"]["cut_off"];
    assert_eq!(
        cut["how"], "dropped",
        "a forgotten entry closes nothing: {cut}"
    );
    // Why no callback came back: conntrack's loose pickup took each late one as a new
    // connection (no NAT mapping left to send it on) to the middle node itself, which answered
    // the server with a RST — nothing reached the client, and nothing revived the entry.
    let out = run(
        &[
            "lab",
            "exec",
            lab.name(),
            "middle",
            "--",
            "nft",
            "list",
            "table",
            "ip",
            "npt_lifetime",
        ],
        Duration::from_secs(10),
    );
    let rules = String::from_utf8_lossy(&out.stdout);
    eprintln!("{rules}");
    let packets = |rule: &str| -> u64 {
        let line = rules.lines().find(|l| l.contains(rule)).unwrap();
        let n = line.split("packets ").nth(1).unwrap();
        n.split(' ').next().unwrap().parse().unwrap()
    };
    assert!(
        packets("ct state new") > 0 && packets("rst == rst") > 0,
        "{rules}"
    );
}
