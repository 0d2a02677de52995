//! `npt bulk` on a path of known capacity (root: network namespaces joined by an emulated
//! link): 10 Mbit/s, 20 ms RTT and a 100-packet queue must read as 9–10 Mbit/s of TCP goodput
//! each way with the kernel's RTT above the base (the queue fills), and UDP sent at 20 Mbit/s
//! into it (up, and down with `--token`) as about half lost and 10 Mbit/s delivered — the
//! numbers the link is set to, read through npt serve's bulk responder on its one port.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::lab::{self, Lab};
use common::{f, u};

/// The lab's link: 10 Mbit/s, 10 ms each way, 100 packets of queue, `npt serve` behind it
/// on 7777 and, keyed, on 7778.
fn topology() -> String {
    let mut t = lab::pair("tbulk", "rate = \"10mbit\"\ndelay = \"10ms\"\nqueue = 100");
    t.push_str(
        r#"[[service]]
name = "serve-token"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7778", "--token", "lab"]
ready = "tcp://10.0.1.2:7778"
"#,
    );
    t
}

/// The link's rate in payload: 1,200-byte datagrams are 1,228 bytes on the link (IP and UDP
/// headers), so 10 Mbit/s carries 9.772 Mbit/s of them.
const CAPACITY_MBIT: f64 = 10.0 * 1200.0 / 1228.0;

/// `npt bulk ARGS` on the client node; the document (schema-checked).
fn bulk(lab: &Lab, dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["bulk"];
    a.extend_from_slice(args);
    lab.npt_json("client", &a, &dir.join("bulk.json"), "bulk")
}

#[test]
fn capacity_and_udp_loss_read_back_on_a_10mbit_link() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path(), "tbulk", &topology());
    for (way, ptr) in [
        ("down", "/summary/goodput_bps/down"),
        ("up", "/summary/goodput_bps/up"),
    ] {
        let doc = bulk(
            &lab,
            dir.path(),
            &[
                "tcp://10.0.1.2:7777",
                "--direction",
                way,
                "--duration",
                "5s",
            ],
        );
        // Over the whole run, slow start included: on a 20 ms path TCP reaches the link's
        // rate within ~0.2 s, 4 % of 5 s, and the headers take 3.5 % of the link: 9.3 or more.
        let mbit = f(&doc, ptr) / 1e6;
        assert!(
            (9.0..=10.0).contains(&mbit),
            "TCP {way}: {mbit:.2} Mbit/s through 10mbit"
        );
        // The kernel saw the queue: RTT over the 20 ms base (a full 100-packet queue adds up
        // to 120 ms).
        let p50 = f(&doc, "/summary/rtt_ms/p50");
        assert!(
            (20.0..=160.0).contains(&p50),
            "TCP {way}: kernel RTT p50 {p50} ms"
        );
    }
    let doc = bulk(
        &lab,
        dir.path(),
        &[
            "udp://10.0.1.2:7777",
            "--rate",
            "20mbit",
            "--size",
            "1200",
            "--duration",
            "5s",
        ],
    );
    let loss = f(&doc, "/summary/udp/loss_pct");
    let delivered = f(&doc, "/summary/udp/delivered_bps") / 1e6;
    // 1,228 bytes a datagram on the link (IP and UDP headers count there, not in `delivered`):
    // 1,018 of the 2,083 sent each second pass, 9.8 Mbit/s of payload, 51 % lost.
    assert!((45.0..=56.0).contains(&loss), "UDP loss {loss:.1} %");
    // Within 2 %: the rate is over the data's arrival window. It read 9.43–9.53 when the
    // server's report span ended at a report request retried 200 ms after the data.
    assert!(
        (CAPACITY_MBIT * 0.98..=CAPACITY_MBIT * 1.01).contains(&delivered),
        "UDP delivered {delivered:.2} Mbit/s, the link carries {CAPACITY_MBIT:.3}"
    );
    // The link adds no jitter and a full drop-tail queue drains at a constant rate; that
    // retried request, crossing the emptied queue, read as 6 ms of jitter.
    let jitter = f(&doc, "/summary/udp/jitter_ms");
    assert!(jitter < 2.0, "UDP jitter {jitter:.2} ms");
    assert!(u(&doc, "/summary/udp/sent") > 10_000);

    // UDP down at twice the link's rate reads the same, with --token (the client's address is
    // private, not loopback: without a token the server refuses UDP down, a classified error).
    let doc = bulk(
        &lab,
        dir.path(),
        &[
            "udp://10.0.1.2:7778",
            "--direction",
            "down",
            "--token",
            "lab",
            "--rate",
            "20mbit",
            "--duration",
            "5s",
        ],
    );
    let loss = f(&doc, "/summary/udp/loss_pct");
    let delivered = f(&doc, "/summary/udp/delivered_bps") / 1e6;
    assert!((45.0..=56.0).contains(&loss), "UDP down loss {loss:.1} %");
    // Over the arrival window, which runs past the stop while the full queue drains: over the
    // run's 5 s it read 9.88, more than the link carries.
    assert!(
        (9.0..=CAPACITY_MBIT * 1.01).contains(&delivered),
        "UDP down delivered {delivered:.2} Mbit/s, the link carries {CAPACITY_MBIT:.3}"
    );
    let out = lab.npt(
        "client",
        &[
            "bulk",
            "udp://10.0.1.2:7777",
            "--direction",
            "down",
            "--rate",
            "1mbit",
            "--duration",
            "1s",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--token"));
}
