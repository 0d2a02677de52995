//! `npt trace --dscp 46 --ecn ect0` along a chain where one segment bleaches DSCP one way
//! (root): client — r1 — r2 — server, a hop agent on r1 and r2, and an nftables rule on r1
//! that sets DSCP 0 on every packet it sends toward r2 (`postrouting`, `oifname "r2"`): the
//! r1 → r2 segment's up direction. The trace reads each segment's marking from its own
//! upstream end — the first by the client itself, the r1 → r2 one by r1's agent, the r2 →
//! server one by r2's agent — and says "bleached" there and "arrived" everywhere else (DSCP
//! and ECN). Then the rule moves to r2 toward r1: the same segment's down direction. The
//! r2 → server direction marks ECN past 20 ms of queue at 32 kbit/s, which 20 echoes of 92
//! IP bytes 10 ms apart overrun (23 ms a packet): the CE count r2's agent reads up on the last
//! segment is the lab's own count of its marks there, and every other direction reads none.
//! No turn: markings are read from packets, and the marks are compared with the lab's count,
//! not with a time.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::lab::{self, Lab};
use common::{run, scratch, u};

/// Client — r1 — r2 — server.
const TOPOLOGY: &str = r#"name = "tmark"
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
[[link]]
a = "r2"
b = "server"
[link.a_to_b]
rate = "32kbit"
ecn = "20ms"
[[service]]
name = "agent-r1"
node = "r1"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tk", "--hop-agent", "--hop-allow", "10.0.2.2:7777"]
ready = "tcp://10.0.1.2:7777"
[[service]]
name = "agent-r2"
node = "r2"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tk", "--hop-agent", "--hop-allow", "10.0.3.2:7777"]
ready = "tcp://10.0.2.2:7777"
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "tk"]
ready = "tcp://10.0.3.2:7777"
"#;

/// Sets DSCP 0 on what the node sends out of its interface toward `to` (named after it).
pub(crate) fn bleach_toward(to: &str) -> String {
    format!(
        "table inet npt_tmark {{\n\tchain bleach {{\n\t\ttype filter hook postrouting priority \
         filter; policy accept;\n\t\toifname \"{to}\" ip dscp set cs0\n\t}}\n}}\n"
    )
}

/// `nft ARGS` on `node`, which must succeed.
fn nft(l: &Lab, node: &str, args: &[&str]) {
    l.exec_ok(node, &[&["nft"], args].concat());
}

/// The trace's document and its text (`npt report`).
fn trace(l: &Lab, name: &str) -> (serde_json::Value, String) {
    let file = scratch().join(format!("lab-trace-marking-{name}.json"));
    let args = [
        "trace",
        "tcp://10.0.3.2:7777",
        "--hop",
        "npt://10.0.1.2:7777",
        "--hop",
        "npt://10.0.2.2:7777",
        "--token",
        "tk",
        "-c",
        "2",
        "-i",
        "100ms",
        "--dscp",
        "46",
        "--ecn",
        "ect0",
    ];
    let doc = l.npt_json("client", &args, &file, "trace");
    let out = run(&["report", file.to_str().unwrap()], Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{name}:\n{text}");
    (doc, text)
}

/// Segment `i`'s direction `dir`: its DSCP fate, the DSCP it arrived with; ECN arrived as
/// ECT(0) (CE is a mark, not a rewrite), every echo read.
fn way(doc: &serde_json::Value, i: usize, dir: &str, dscp: &str, arrived: u64) {
    let seg = &doc["segments"][i];
    let w = &seg["marking"][dir];
    assert_eq!(w["dscp"], dscp, "segment {} {dir}: {seg}", i + 1);
    assert_eq!(u(w, "/arrived/dscp"), arrived, "segment {} {dir}", i + 1);
    assert_eq!(w["sent"], serde_json::json!({"dscp": 46, "ecn": 2}), "{w}");
    assert_eq!(
        (&w["ecn"], u(w, "/arrived/ecn")),
        (&"arrived".into(), 2),
        "{w}"
    );
    assert_eq!(u(w, "/packets"), 20, "{w}");
}

/// The lab's CE marks on the r2 → server direction so far, settled.
fn lab_ce(l: &Lab) -> u64 {
    u(&l.settled(2, "r2", "server"), "/applied/ce_marked")
}

/// Only the last segment's up direction has CE marks, and as many as the lab made there
/// (`lab`) less the marked packets that are not echoes: the read's keyed handshake (2) and its
/// closing flow queries (at most 5) travel with the marking too, and the lab counts every
/// packet it marks.
fn ce(doc: &serde_json::Value, lab: u64) {
    for i in 0..3 {
        for dir in ["up", "down"] {
            let got = u(&doc["segments"][i]["marking"][dir], "/ce");
            if (i, dir) == (2, "up") {
                assert!(
                    got > 0 && got <= lab && lab <= got + 7,
                    "segment 3 up: CE {got}, the lab marked {lab}"
                );
            } else {
                assert_eq!(got, 0, "segment {} {dir}: CE", i + 1);
            }
        }
    }
}

#[test]
fn the_segment_and_the_direction_that_bleached_dscp_are_named() {
    if lab::skipped(module_path!()) {
        return;
    }
    let dir = scratch();
    let l = Lab::up(&dir, "tmark", TOPOLOGY);

    let rule = dir.join("tmark-up.nft");
    std::fs::write(&rule, bleach_toward("r2")).unwrap();
    nft(&l, "r1", &["-f", rule.to_str().unwrap()]);
    let ce0 = lab_ce(&l);
    let (doc, text) = trace(&l, "up");
    let ce1 = lab_ce(&l);
    eprintln!("lab: CE marked r2 -> server {}", ce1 - ce0);
    assert!(ce1 > ce0, "the queue passed 20 ms");
    ce(&doc, ce1 - ce0);
    assert_eq!(doc["segments"][0]["marking"]["to"], "udp://10.0.1.2:7777");
    assert_eq!(doc["segments"][1]["from"], "npt://10.0.1.2:7777");
    for (i, up, down) in [
        (0, "arrived", "arrived"),
        (1, "bleached", "arrived"),
        (2, "arrived", "arrived"),
    ] {
        way(&doc, i, "up", up, if up == "bleached" { 0 } else { 46 });
        way(&doc, i, "down", down, 46);
    }
    let row = text
        .lines()
        .find(|l| l.starts_with("segment 2  udp://10.0.2.2:7777"))
        .unwrap_or_default();
    assert!(
        row.contains(
            "DSCP 46 (EF) bleached to 0, ECN ECT(0) arrived (CE 0 of 20)  DSCP 46 (EF) arrived"
        ),
        "{text}"
    );
    nft(&l, "r1", &["delete", "table", "inet", "npt_tmark"]);

    let rule = dir.join("tmark-down.nft");
    std::fs::write(&rule, bleach_toward("r1")).unwrap();
    nft(&l, "r2", &["-f", rule.to_str().unwrap()]);
    let (doc, _) = trace(&l, "down");
    let ce2 = lab_ce(&l);
    ce(&doc, ce2 - ce1);
    for (i, up, down) in [
        (0, "arrived", "arrived"),
        (1, "arrived", "bleached"),
        (2, "arrived", "arrived"),
    ] {
        way(&doc, i, "up", up, 46);
        way(
            &doc,
            i,
            "down",
            down,
            if down == "bleached" { 0 } else { 46 },
        );
    }
}
