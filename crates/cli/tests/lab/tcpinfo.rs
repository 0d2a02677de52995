//! A TCP probe must say what TCP hid (root: network namespaces joined by an emulated link):
//! across a link that drops 2 % of packets each way its echo loss is 0, and the kernel's
//! retransmits (`summary.tcp_info.retransmits`) are above 0 and within a factor of 2 of the
//! packets the link dropped in the tester's sending direction, as `npt lab status --json`
//! counts them. (They differ because a dropped pure ACK costs no retransmit, and a tail-loss
//! probe or a timeout can resend a segment that was not lost: docs/probe.md.)
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use common::lab::{self, Lab};
use common::{f, u};

/// 2 % loss each way, 10 ms each way, `npt serve` behind it.
const TOPOLOGY: &str = r#"name = "ttcpi"
[[node]]
name = "client"
[[node]]
name = "server"
[[link]]
a = "client"
b = "server"
delay = "10ms"
loss = "2%"
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.1.2:7777"
"#;

/// Link 0's counters `from` → `to` once they stop moving: (packets in, dropped by loss).
fn settled(lab: &Lab, from: &str, to: &str) -> (u64, u64) {
    lab.settled_counts(0, from, to)
}

#[test]
fn retransmits_follow_the_links_drops_where_the_echo_shows_no_loss() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path(), "ttcpi", TOPOLOGY);
    let (in0, drop0) = settled(&lab, "client", "server");
    let doc = lab.npt_json(
        "client",
        &[
            "probe",
            "tcp://10.0.1.2:7777",
            "--pps",
            "200",
            "-n",
            "2000",
            "--size",
            "200",
            "--loss-timeout",
            "3s",
        ],
        &dir.path().join("probe.json"),
        "probe",
    );
    let (in1, drop1) = settled(&lab, "client", "server");
    let (sent_pkts, dropped) = (in1 - in0, drop1 - drop0);
    let retrans = u(&doc, "/summary/tcp_info/retransmits");
    let segs = u(&doc, "/summary/tcp_info/data_segments_out");
    eprintln!(
        "link client > server: {sent_pkts} packets in, {dropped} dropped; tester's kernel: \
         {retrans} retransmits of {segs} data segments; echo loss {} %",
        f(&doc, "/summary/loss_pct")
    );
    // TCP hid the loss: every echo came back (within the 3 s loss timeout).
    assert_eq!(u(&doc, "/summary/lost"), 0, "{}", doc["summary"]);
    // 2 % of about 2,000 segments: some 40 drops.
    assert!(
        dropped >= 10,
        "the link dropped only {dropped} of {sent_pkts}"
    );
    assert!(retrans > 0, "no retransmits across a lossy link");
    assert!(
        retrans * 2 >= dropped && retrans <= dropped * 2,
        "retransmits {retrans} vs {dropped} dropped client > server"
    );
    assert_eq!(doc["summary"]["tcp_info"]["scope"], "target");
    // The kernel's RTT is the link's 20 ms plus what the stacks add.
    let p50 = f(&doc, "/summary/tcp_info/rtt_ms/p50");
    assert!((19.0..=40.0).contains(&p50), "kernel RTT p50 {p50} ms");
}
