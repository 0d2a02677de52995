//! `npt mtu` against a path of known MTU (root): client — r1 — r2 — npt serve, with the r1–r2
//! link's MTU 1400 (1500 elsewhere, so neither end knows it from its own interface). Reads
//! 1372-byte datagrams (1400 − 28) each way with PMTUD working — the up ICMP from r1, and down
//! the responder's kernel taught by r2's; then with the routers' "fragmentation needed"
//! dropped by nftables: a black hole each way, bracketed 1372/1373; through danted's UDP relay
//! on r1 (`--via`): 1462 bytes up (the relay's header takes 10 of the client's 1500), arriving
//! fragmented (largest fragment 1396: the relay re-sends without DF), 1372 down; then with r1 dropping
//! packets over 1200 bytes toward the server only (no ICMP): 1172 up, 1372 down — and without
//! `--token` 1172 down too, flagged `capped_by_up` (each down request is as long as its size);
//! last, the client's own interface set to 1100 and the server's to 1300: `local` each way,
//! 1072 up and 1272 down, refused at once by the sending host.
//! No turn: the lab has no delay, and sizes are counted, not timed.
//!
//! A second lab of the same path runs `npt monitor` on the client: every round stores 1372
//! bytes each way, an alert on `mtu_up_bytes` below 1400 fires, and `npt report --from` reads
//! the rounds back as one document of that bracket with every round's verdict counted.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::lab::{self, Lab};
use common::monitor::{rounds, Monitor};
use common::{run, scratch};

/// The lab: the path, `npt serve` on `server`, and danted on r1 (SOCKS5, UDP ASSOCIATE) with
/// its config at `conf`.
fn topology(conf: &std::path::Path) -> String {
    std::fs::write(
        conf,
        "logoutput: stderr\ninternal: 10.0.1.2 port = 1080\nexternal: 10.0.2.1\n\
         clientmethod: none\nsocksmethod: none\nuser.privileged: root\n\
         user.unprivileged: nobody\nclient pass { from: 10.0.1.0/24 to: 0.0.0.0/0 }\n\
         socks pass { from: 10.0.1.0/24 to: 0.0.0.0/0 command: udpassociate }\n\
         socks pass { from: 0.0.0.0/0 to: 10.0.1.0/24 command: udpreply }\n",
    )
    .unwrap();
    format!(
        "{TOPOLOGY}[[service]]\nname = \"danted\"\nnode = \"r1\"\n\
         cmd = [\"/usr/sbin/danted\", \"-f\", \"{}\"]\nready = \"tcp://10.0.1.2:1080\"\n",
        conf.display()
    )
}

const TOPOLOGY: &str = r#"name = "mtu"
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
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "mtu-lab"]
ready = "tcp://10.0.3.2:7777"
[[service]]
name = "serve-open"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7778"]
ready = "tcp://10.0.3.2:7778"
"#;

/// The target and flags: `npt serve --token` (down probes as large as asked).
const WITH_TOKEN: &[&str] = &["udp://10.0.3.2:7777", "--token", "mtu-lab"];

/// `nft -f` of `rules` on `node`, which must succeed.
fn nft(lab: &Lab, node: &str, name: &str, rules: &str) {
    let file = scratch().join(format!("lab-mtu-{name}.nft"));
    std::fs::write(&file, rules).unwrap();
    lab.exec_ok(node, &["nft", "-f", file.to_str().unwrap()]);
}

/// A router that sends no "fragmentation needed".
const NO_ICMP: &str = r#"table ip npt_mtu {
	chain out {
		type filter hook output priority filter; policy accept;
		icmp type destination-unreachable icmp code frag-needed drop
	}
}
"#;

/// `npt mtu` on the client: its document, after the text is shown.
fn mtu(lab: &Lab, name: &str, extra: &[&str]) -> serde_json::Value {
    let file = scratch().join(format!("lab-mtu-{name}.json"));
    let mut a = vec!["mtu"];
    a.extend_from_slice(if extra.first().is_some_and(|t| t.starts_with("udp://")) {
        extra
    } else {
        WITH_TOKEN
    });
    if !extra.first().is_some_and(|t| t.starts_with("udp://")) {
        a.extend_from_slice(extra);
    }
    let doc = lab.npt_json("client", &a, &file, "mtu");
    let text = run(&["report", file.to_str().unwrap()], Duration::from_secs(10));
    eprintln!("{name}:\n{}", String::from_utf8_lossy(&text.stdout));
    doc
}

fn reads(doc: &serde_json::Value, dir: &str, largest: u64, verdict: &str) {
    let d = &doc["summary"][dir];
    assert_eq!(d["largest_datagram"], largest, "{dir}: {d}");
    assert_eq!(d["largest_packet"], largest + 28, "{dir}: {d}");
    assert_eq!(d["smallest_lost"], largest + 1, "{dir}: {d}");
    assert_eq!(d["verdict"], verdict, "{dir}: {d}");
    assert_eq!(d["settled"], true, "{dir}: {d}");
}

#[test]
fn a_1400_byte_link_reads_each_way_with_and_without_icmp() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = scratch();
    let lab = Lab::up(&dir, "mtu", &topology(&dir.join("mtu-danted.conf")));

    let doc = mtu(&lab, "pmtud", &[]);
    reads(&doc, "up", 1372, "icmp");
    reads(&doc, "down", 1372, "icmp");
    let up = &doc["summary"]["up"];
    assert_eq!(up["icmp_mtu"], 1400);
    assert_eq!(
        up["icmp_from"], "10.0.1.2",
        "r1's address toward the client"
    );
    assert_eq!(
        doc["summary"]["down"]["icmp_mtu"], 1400,
        "the responder learned it"
    );

    // Through danted's UDP relay on r1: the relay re-sends each datagram itself, without DF,
    // over the 1400-byte link, so up arrives fragmented; down the responder's DF datagrams
    // meet r2's ICMP, as direct.
    let doc = mtu(&lab, "danted", &["--via", "socks5://10.0.1.2:1080"]);
    let (up, down) = (&doc["summary"]["up"], &doc["summary"]["down"]);
    // 1500 − 28 − the relay's 10-byte header on the client's leg: the largest tried.
    assert_eq!(doc["summary"]["via_header"], 10);
    assert_eq!(
        (&up["verdict"], &up["largest_datagram"]),
        (&"max_crossed".into(), &1462.into())
    );
    // A 1400-byte link's fragments: 1376 bytes of data (a multiple of 8) + 20 of header.
    assert_eq!(up["largest_fragment"], 1396, "{up}");
    reads(&doc, "down", 1372, "icmp");
    assert!(down["largest_fragment"].is_null(), "{down}");

    // The routers' ICMP dropped: nothing says why larger datagrams vanish.
    nft(&lab, "r1", "r1-noicmp", NO_ICMP);
    nft(&lab, "r2", "r2-noicmp", NO_ICMP);
    // The responder's kernel still holds what r2 taught it: flush it.
    let out = run(
        &[
            "lab",
            "exec",
            lab.name(),
            "server",
            "--",
            "ip",
            "route",
            "flush",
            "cache",
        ],
        Duration::from_secs(10),
    );
    assert!(out.status.success());
    let doc = mtu(&lab, "black-hole", &[]);
    reads(&doc, "up", 1372, "black_hole");
    reads(&doc, "down", 1372, "black_hole");
    assert!(doc["summary"]["up"]["icmp_mtu"].is_null());
    assert!(doc["summary"]["up"]["lost_sizes"].as_u64().unwrap() >= 1);

    // One way only: r1 drops packets longer than 1200 bytes toward the server.
    nft(
        &lab,
        "r1",
        "r1-oneway",
        r#"table ip npt_mtu_oneway {
	chain from_client {
		type filter hook forward priority filter; policy accept;
		iifname "client" ip length > 1200 drop
	}
}
"#,
    );
    let doc = mtu(&lab, "one-way", &[]);
    reads(&doc, "up", 1172, "black_hole");
    reads(&doc, "down", 1372, "black_hole");
    assert!(doc["summary"]["down"]["capped_by_up"].is_null());
    // Without --token each down request is as long as the size it asks for, so r1's filter
    // drops the requests above 1200 bytes: down cannot be read past up, and says so.
    let doc = mtu(&lab, "one-way-no-token", &["udp://10.0.3.2:7778"]);
    reads(&doc, "up", 1172, "black_hole");
    reads(&doc, "down", 1172, "black_hole");
    assert_eq!(doc["summary"]["down"]["capped_by_up"], true);

    // Each end's own interface smaller than the path (a tunnel's, say): the client's refuses
    // larger up probes, the responder's larger down ones — each at once, no loss involved.
    for (node, dev, mtu) in [("client", "r1", "1100"), ("server", "r2", "1300")] {
        let a = [
            "lab",
            "exec",
            lab.name(),
            node,
            "--",
            "ip",
            "link",
            "set",
            "dev",
            dev,
            "mtu",
            mtu,
        ];
        let out = run(&a, Duration::from_secs(10));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let doc = mtu(&lab, "local", &[]);
    reads(&doc, "up", 1072, "local");
    reads(&doc, "down", 1272, "local");
    let (up, down) = (&doc["summary"]["up"], &doc["summary"]["down"]);
    assert_eq!(
        (&up["local_mtu"], &up["lost_sizes"]),
        (&1100.into(), &0.into()),
        "{up}"
    );
    assert_eq!(
        (&down["local_mtu"], &down["lost_sizes"]),
        (&1300.into(), &0.into()),
        "{down}"
    );
}

#[test]
fn a_monitor_at_the_1400_byte_link_stores_1372_each_way() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _lab = Lab::up(
        dir.path(),
        "mtumon",
        &TOPOLOGY.replace("name = \"mtu\"", "name = \"mtumon\""),
    );
    let ns = npt_lab::plan::netns_name("mtumon", "client");
    let store = dir.path().join("m.db");
    let cfg = dir.path().join("m.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"vantage = "client"
store = "{}"
listen = "127.0.0.1:0"
every = "8s"
[[target]]
name = "tunnel"
kind = "mtu"
target = "udp://10.0.3.2:7777"
token = "mtu-lab"
args = ["--timeout", "5s"]
[[alert]]
name = "mtu-drop"
metric = "mtu_up_bytes"
below = 1400
rounds = 2
"#,
            store.display()
        ),
    )
    .unwrap();
    let mut m = Monitor::start_in(Some(&ns), &cfg, &store, true);
    m.until("2 mtu rounds", Duration::from_secs(30), |m| {
        m.rounds_total("tunnel", "ok") >= 2.0
    });
    let firing = m.metric(
        "npt_monitor_alert_firing",
        &["target=\"tunnel\"", "alert=\"mtu-drop\""],
    );
    m.stop();
    assert_eq!(firing, Some(1.0), "{:#?}", m.lines());
    let stored = rounds(&store, "tunnel");
    for r in &stored {
        assert_eq!(
            (r.figures.mtu_up_bytes, r.figures.mtu_down_bytes),
            (Some(1372.0), Some(1372.0)),
            "{r:?}"
        );
    }
    let n = stored.len();
    assert!(n >= 2, "{n}");
    let file = dir.path().join("range.json");
    let out = run(
        &[
            "report",
            "--from",
            store.to_str().unwrap(),
            "--target",
            "tunnel",
            "--since",
            "1h",
            "--format",
            "json",
            "-o",
            file.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::json(&file);
    npt_testkit::schema::assert_valid(&doc, "mtu");
    let text = run(&["report", file.to_str().unwrap()], Duration::from_secs(10));
    eprintln!("{}", String::from_utf8_lossy(&text.stdout));
    reads(&doc, "up", 1372, "icmp");
    reads(&doc, "down", 1372, "icmp");
    let r = &doc["summary"]["rounds"];
    assert_eq!((&r["rounds"], &r["changed"]), (&n.into(), &0.into()), "{r}");
    for way in ["up", "down"] {
        assert_eq!(r[way]["verdicts"], serde_json::json!({"icmp": n}), "{r}");
    }
}
