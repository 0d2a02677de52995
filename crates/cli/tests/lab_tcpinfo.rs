//! A TCP probe must say what TCP hid (root: network namespaces joined by an emulated link):
//! across a link that drops 2 % of packets each way its echo loss is 0, and the kernel's
//! retransmits (`summary.tcp_info.retransmits`) are above 0 and within a factor of 2 of the
//! packets the link dropped in the tester's sending direction, as `npt lab status --json`
//! counts them. (They differ because a dropped pure ACK costs no retransmit, and a tail-loss
//! probe or a timeout can resend a segment that was not lost: docs/probe.md.)
#![cfg(test)] // clippy.toml: test helpers count as tests

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{assert_valid, f, json, run, u};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

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

/// The lab, brought down when dropped.
struct Lab;

impl Lab {
    fn up(dir: &Path) -> Lab {
        let file = dir.join("ttcpi.toml");
        std::fs::write(&file, TOPOLOGY).unwrap();
        let out = run(
            &["lab", "up", file.to_str().unwrap()],
            Duration::from_secs(60),
        );
        assert!(
            out.status.success(),
            "lab up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Lab
    }

    /// The link's counters in the direction `from` → `to`: (packets in, dropped by loss).
    fn direction(&self, from: &str, to: &str) -> (u64, u64) {
        let out = run(
            &["lab", "status", "ttcpi", "--json"],
            Duration::from_secs(10),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let d = s["links"][0]["directions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["from"] == from && d["to"] == to)
            .unwrap_or_else(|| panic!("no direction {from} > {to} in {s}"))
            .clone();
        (u(&d, "/applied/packets_in"), u(&d, "/applied/dropped_loss"))
    }

    /// The counters once they stop moving (the status is republished every few 100 ms),
    /// waiting at most 5 s.
    fn settled(&self, from: &str, to: &str) -> (u64, u64) {
        let until = Instant::now() + Duration::from_secs(5);
        let mut last = self.direction(from, to);
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = self.direction(from, to);
            if now == last || Instant::now() > until {
                return now;
            }
            last = now;
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = run(&["lab", "down", "ttcpi"], Duration::from_secs(30));
    }
}

#[test]
fn retransmits_follow_the_links_drops_where_the_echo_shows_no_loss() {
    if !is_root() {
        eprintln!(
            "SKIPPED: {} needs root (network namespaces, TUN)",
            module_path!()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path());
    let (in0, drop0) = lab.settled("client", "server");
    let j = dir.path().join("probe.json");
    let out = run(
        &[
            "lab",
            "exec",
            "ttcpi",
            "client",
            "--",
            "npt",
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
            "--json",
            j.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "probe: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&j);
    assert_valid(&doc, "probe");
    let (in1, drop1) = lab.settled("client", "server");
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
