//! `npt lab run` reads its links around every scenario run (root): each run's own link figures
//! land in `STEM.lab.json` beside its result, and a run during which a link released packets
//! over 1 ms late says so on its progress line and after the table — checked by stopping the
//! lab process (its wire thread with it) for 150 ms during the first of two runs.

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::lab;
use common::npt;

/// A probe of 300 packets at 100 a second across a 50 ms link (so about five are always in
/// each direction's delay line, due while the lab process is stopped), as a scenario.
const SCENARIO: &str = r#"[workload]
kind = "probe"
args = ["--count", "300", "--mode", "rate", "--pps", "100"]
[[scenario]]
name = "direct"
node = "client"
target = "udp://10.0.1.2:7777"
hop_rtts_ms = [100]
"#;

/// Processes in the client's namespace (the scenario's probe, while it runs).
fn client_pids() -> usize {
    let out = Command::new("ip")
        .args(["netns", "pids", "npt-trunfig-client"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

fn late_of(doc: &serde_json::Value) -> (u64, f64) {
    doc["links"][0]["directions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["applied"]["released_late"].as_u64().unwrap(),
                d["applied"]["delay_error_max_us"].as_f64().unwrap(),
            )
        })
        .fold((0, 0.0), |(n, m), (a, b)| (n + a, m.max(b)))
}

#[test]
fn each_run_gets_its_link_figures_and_a_late_link_is_named() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trunfig.toml");
    let topology = format!("{}{SCENARIO}", lab::pair("trunfig", "delay = \"50ms\""));
    std::fs::write(&file, topology).unwrap();
    let out_dir = dir.path().join("out");
    let mut child = npt()
        .args([
            "lab",
            "run",
            file.to_str().unwrap(),
            "--runs",
            "2",
            "--out-dir",
        ])
        .arg(&out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first run's probe is up (a process in the client's namespace): stop the lab process
    // (its wire thread with it) for 150 ms.
    let deadline = Instant::now() + Duration::from_secs(60);
    while client_pids() == 0 {
        assert!(Instant::now() < deadline, "the scenario never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500)); // into the run, not at its first packet
    let pid = child.id() as i32;
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    std::thread::sleep(Duration::from_millis(150)); // the stall under test
                                                    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{stdout}\n{stderr}");

    let run1 = common::json(&out_dir.join("run1-01-direct.lab.json"));
    let run2 = common::json(&out_dir.join("run2-01-direct.lab.json"));
    // Each holds that run alone: 300 probe packets up and the probe's final flow query (one,
    // or up to 5 tries when an answer is late), not the two runs' 600 and more.
    for r in [&run1, &run2] {
        let up = &r["links"][0]["directions"][0];
        let n = up["applied"]["packets_in"].as_u64().unwrap();
        assert!((301..=305).contains(&n), "{up}");
        assert!(r["since"].is_string());
    }
    let (late1, max1) = late_of(&run1);
    assert!(
        late1 > 0 && max1 >= 100_000.0,
        "run 1: {late1} late, max {max1} µs"
    );
    let line = |r: u32| {
        stderr
            .lines()
            .find(|l| l.contains(&format!("direct run {r}/2")))
            .unwrap_or_else(|| panic!("no progress line for run {r}: {stderr}"))
            .to_string()
    };
    assert!(line(1).contains("LAB LATE"), "{}", line(1));
    // The list after the table (every run is also named in the drops above it).
    let late_runs: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("runs through a late link"))
        .collect();
    let listed = |run: &str| late_runs.iter().any(|l| l.contains(run));
    assert!(listed("run1-01-direct"), "{stdout}");
    // Run 2 is flagged exactly when its own figures say a packet left over 1 ms late.
    let (late2, _) = late_of(&run2);
    assert_eq!(line(2).contains("LAB LATE"), late2 > 0, "{}", line(2));
    assert_eq!(listed("run2-01-direct"), late2 > 0, "{stdout}");
}

/// A TCP run's retransmits are read beside the drops that caused them: `npt lab run` says,
/// under its table, what each link direction lost and queue-dropped during each run, and the
/// figures are the lab's own counts of that run (its `STEM.lab.json`, the `npt lab status`
/// difference around the run). A 1 Mbit/s link with a 4-packet queue, offered 3.2 Mbit/s,
/// drops from its queue; 2 % loss besides.
#[test]
fn each_runs_link_drops_are_said_under_the_table() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tdrops.toml");
    let scenario = r#"[workload]
kind = "probe"
args = ["--count", "400", "--mode", "rate", "--pps", "400", "--size", "1000", "--loss-timeout", "300ms"]
[[scenario]]
name = "direct"
node = "client"
target = "udp://10.0.1.2:7777"
"#;
    let link = "delay = \"1ms\"\nrate = \"1mbit\"\nqueue = 4\nloss = \"2%\"";
    std::fs::write(&file, format!("{}{scenario}", lab::pair("tdrops", link))).unwrap();
    let out_dir = dir.path().join("out");
    let out = npt()
        .args(["lab", "run", file.to_str().unwrap(), "--out-dir"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = common::json(&out_dir.join("run1-01-direct.lab.json"));
    let mut want = Vec::new();
    let mut queue_drops = 0;
    for d in run["links"][0]["directions"].as_array().unwrap() {
        let a = &d["applied"];
        let n = |k: &str| a[k].as_u64().unwrap();
        if n("packets_in") == 0 {
            continue;
        }
        queue_drops += n("dropped_queue");
        want.push(format!(
            "{} > {} lost {} q-drop {} of {}",
            d["from"].as_str().unwrap(),
            d["to"].as_str().unwrap(),
            n("dropped_loss"),
            n("dropped_queue"),
            n("packets_in")
        ));
    }
    assert!(queue_drops > 0, "the small queue overflowed: {run}");
    let block: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("link drops during each run"))
        .collect();
    assert_eq!(
        block.get(1).copied(),
        Some(format!("  run1-01-direct: {}", want.join(", ")).as_str()),
        "{stdout}"
    );
}
