//! Why this exists: `npt ping --from` is for the segment the client cannot see — between two
//! relays. In a lab (root: network namespaces and emulated links) of client → mid → target
//! with different link delays, a hop agent on the middle node must read the mid → target
//! segment's RTT within ±1 ms of the lab's own figure for it (configured delay plus how late
//! the lab itself delivered, from `npt lab status --json`), over TCP and UDP, and not the
//! client's path to it.
//! Without root the test says it skipped, as `lab.rs` does.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::path::Path;

use common::f;
use common::lab::{self, Lab, SchedWait};

/// client —(10.0.1.0/24, 5 ms each way)— mid —(10.0.2.0/24, 15 ms each way)— target; the
/// agent on mid may measure the target's port only.
const TOPOLOGY: &str = r#"name = "thop"
[[node]]
name = "client"
[[node]]
name = "mid"
[[node]]
name = "target"
[[link]]
a = "client"
b = "mid"
delay = "5ms"
[[link]]
a = "mid"
b = "target"
delay = "15ms"
[[service]]
name = "serve"
node = "target"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.2.2:7777"
[[service]]
name = "agent"
node = "mid"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--token", "S", "--hop-agent",
       "--hop-allow", "10.0.2.2:7777"]
ready = "tcp://10.0.1.2:7777"
"#;

/// `npt ARGS --json FILE` on the client node; must succeed. The document, and how late its
/// echoes may read by what the kernel counted of the client's and the services' waits for a
/// CPU meanwhile ([`Lab::echo_wait_ms`]).
fn on_client(lab: &Lab, dir: &Path, args: &[&str]) -> (serde_json::Value, f64) {
    let pids = lab.service_pids();
    let w0 = SchedWait::read(&pids);
    let (doc, client) = lab.npt_json_waited("client", args, &dir.join("measured.json"), "ping");
    (doc, Lab::echo_wait_ms(&pids, &w0, &client))
}

#[test]
fn an_agent_on_the_middle_node_reads_its_downstream_segment() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path(), "thop", TOPOLOGY);
    for target in ["tcp://10.0.2.2:7777", "udp://10.0.2.2:7777"] {
        let (doc, late) = on_client(
            &lab,
            dir.path(),
            &[
                "ping",
                target,
                "--from",
                "npt://10.0.1.2:7777",
                "--token",
                "S",
                "--count",
                "10",
                "--interval",
                "50ms",
                "-q",
            ],
        );
        assert_eq!(doc["measured_from"], "npt://10.0.1.2:7777");
        let proto = doc["proto"].as_str().unwrap().to_string();
        let p50 = f(&doc, &format!("/latency/{proto}/p50_ms"));
        // The mid → target segment (30 ms configured) as the lab delivered it.
        lab::assert_path_late(
            &format!("{target} from mid"),
            p50,
            lab.rtt_ms(1, "mid", "target"),
            late,
        );
    }
    // From the client itself, the agent is one 10 ms segment away: the 30 ms above are not
    // the client's path.
    let (doc, late) = on_client(
        &lab,
        dir.path(),
        &[
            "ping",
            "tcp://10.0.1.2:7777",
            "--count",
            "5",
            "--interval",
            "50ms",
            "-q",
        ],
    );
    let p50 = f(&doc, "/latency/tcp/p50_ms");
    lab::assert_path_late("client → mid", p50, lab.rtt_ms(0, "client", "mid"), late);
}
