//! DSCP marking through a lab link (root): `npt probe udp://… --dscp 46` from one namespace to
//! `npt serve` in another, across an emulated link, arrives marked 46 — the server's own
//! count of what it received says so (its periodic marking line, read from the lab's service
//! log) — and the client's result says what it sent and what its replies came back with (the
//! server answers unmarked: DSCP 0).
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{lab, u};

const NAME: &str = "npt-dscp";

fn topology() -> String {
    format!(
        "name = \"{NAME}\"\n[[node]]\nname = \"client\"\n[[node]]\nname = \"server\"\n\
         [[link]]\na = \"client\"\nb = \"server\"\ndelay = \"5ms\"\n\
         [[service]]\nname = \"serve\"\nnode = \"server\"\n\
         cmd = [\"npt\", \"serve\", \"--listen\", \"0.0.0.0:7777\", \"--log-every\", \"200ms\"]\n\
         ready = \"tcp://10.0.1.2:7777\"\n"
    )
}

/// The serve service's log: a lab that is up keeps one file per service in its state
/// directory (`/run/npt-lab/NAME/`).
fn serve_log() -> PathBuf {
    PathBuf::from("/run/npt-lab").join(NAME).join("serve.log")
}

/// The server's last marking line once it counts at least `want` datagrams: `(dscp, count)`
/// pairs. Waits at most 10 s (the line comes every 200 ms while marked traffic arrives).
fn server_counts(want: u64) -> Vec<(u64, u64)> {
    let log = serve_log();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let last = text
            .lines()
            .rev()
            .find_map(|l| l.split_once("udp marking so far: dscp "))
            .map(|(_, rest)| rest.split(';').next().unwrap_or(rest).to_string());
        if let Some(line) = last {
            let counts: Vec<(u64, u64)> = line
                .split(", ")
                .filter_map(|p| p.split_once(": "))
                .map(|(d, n)| (d.trim().parse().unwrap(), n.trim().parse().unwrap()))
                .collect();
            if counts.iter().map(|c| c.1).sum::<u64>() >= want || Instant::now() > until {
                return counts;
            }
        } else if Instant::now() > until {
            panic!("no marking line in {}:\n{text}", log.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn dscp_46_is_seen_by_the_server_across_a_lab_link() {
    if lab::skipped("lab_marking") {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let l = lab::Lab::up(dir.path(), NAME, &topology());
    let before = l.settled_counts(0, "client", "server").0;
    let doc = l.npt_json(
        "client",
        &[
            "probe",
            "udp://10.0.1.2:7777",
            "-n",
            "200",
            "--pps",
            "100",
            "--dscp",
            "46",
            "-q",
        ],
        &dir.path().join("probe.json"),
        "probe",
    );
    let crossed = l.settled_counts(0, "client", "server").0 - before;
    let sent = u(&doc, "/summary/sent");
    let received = u(&doc, "/summary/received");
    let m = &doc["summary"]["marking"];
    eprintln!("client: sent {sent}, received {received}, marking {m}; link carried {crossed}");
    assert_eq!(sent, 200);
    assert_eq!(m["sent"], serde_json::json!({"dscp": 46, "ecn": 0}), "{m}");
    // What came back, as the client's kernel told: every reply (and the flow report) counted,
    // all unmarked (npt serve answers with the default TOS).
    let back = m["received"].as_array().expect("replies counted");
    let back_total: u64 = back.iter().map(|c| u(c, "/packets")).sum();
    assert!(back_total >= received, "{back:?} vs {received} replies");
    assert!(
        back.iter().all(|c| c["dscp"] == 0 && c["ecn"] == 0),
        "{back:?}"
    );
    // The server's own count: every datagram that crossed the link arrived with DSCP 46 and
    // none with another value (the probe's packets and its flow query).
    let counts = server_counts(crossed);
    eprintln!("server: {counts:?}");
    assert_eq!(counts.len(), 1, "one DSCP value only: {counts:?}");
    assert_eq!(counts[0].0, 46, "{counts:?}");
    assert!(
        counts[0].1 >= sent && counts[0].1 <= crossed,
        "the server counted {} at DSCP 46; the probe sent {sent}, the link carried {crossed}",
        counts[0].1
    );
}
