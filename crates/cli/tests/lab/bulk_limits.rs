//! UDP up at twice a 10 Mbit/s lab link's rate reads the link's capacity for its datagrams
//! (about 9.77 Mbit/s of 1,200-byte payloads, computed per run from the link's own byte and
//! packet counts) within 1 %, or the run says who limited it: the tester
//! (`summary.udp.tester_limited`, from its own stalls) or the lab (the link's own delay error
//! in that run, read as the difference of two `npt lab status` readings). Each flag is checked
//! against the counters it is made from, never against a wall-clock window:
//! - ten runs in a row on a box with one core kept busy by this test (issue 23's 9.5 instead
//!   of 9.77 Mbit/s);
//! - a run whose sender is stopped for 300 ms (SIGSTOP): a stall longer than the queue's 98 ms,
//!   so the link idles and the rate reads low, and `tester_limited` must say so;
//! - a run whose lab process is stopped for 200 ms: the link releases late, the rate reads
//!   low, and the lab's per-run figures must say so (`late`, its delay error).

#![cfg(test)]
#![allow(clippy::cast_possible_wrap)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::lab::{self, Lab};
use common::{f, json, npt, run, u};

/// The link: 10 Mbit/s, 10 ms each way, 100 packets of queue (98 ms of 1,228-byte packets).
const LINK: &str = "rate = \"10mbit\"\ndelay = \"10ms\"\nqueue = 100";

/// The link's rate.
const RATE_MBIT: f64 = 10.0;
/// IPv4 and UDP headers: what a datagram adds on the link to its payload.
const HEADERS: f64 = 28.0;
/// 1,200-byte datagrams are 1,228 bytes on the link: 10 Mbit/s carries 9.772 of them.
const NOMINAL_MBIT: f64 = RATE_MBIT * 1200.0 / (1200.0 + HEADERS);
const RUN_S: f64 = 3.0;
/// The packets the client → server direction has carried (all runs so far).
const UP_PACKETS: &str = "/links/0/directions/0/applied/packets_in";

/// What stopped during a run, and for how long.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    Nothing,
    Sender(Duration),
    Lab(Duration),
}

/// One run: the bulk result and the lab's figures of that run alone (client → server).
struct Outcome {
    delivered_mbit: f64,
    tester_limited: bool,
    stalled_ms: f64,
    lost: u64,
    lab_late: u64,
    lab_error_max_ms: f64,
    /// What the link carried of this run (client → server): packets and their bytes.
    lab_packets_out: u64,
    lab_bytes_out: u64,
    lab_text: String,
}

impl Outcome {
    /// The payload rate the link can carry for what crossed it: its rate less the headers'
    /// share of the bytes it carried (the data's 28 bytes, and the few report requests'),
    /// from the link's own counts of the run.
    fn capacity_mbit(&self) -> f64 {
        let headers = HEADERS * self.lab_packets_out as f64;
        RATE_MBIT * (1.0 - headers / self.lab_bytes_out.max(1) as f64)
    }
}

fn lab_pid() -> i32 {
    std::fs::read_to_string("/run/npt-lab/tblim/pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: signalling a process this test started (or its lab's daemon).
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

fn one_run(lab: &Lab, dir: &Path, stop: Stop) -> Outcome {
    let before = dir.join("before.json");
    let reading = lab.status();
    let up_before = u(&reading, UP_PACKETS);
    std::fs::write(&before, serde_json::to_vec(&reading).unwrap()).unwrap();
    let result = dir.join("bulk.json");
    // `ip netns exec` becomes npt itself, so the child's pid is the sender's.
    let mut bulk = Command::new("ip")
        .args(["netns", "exec", "npt-tblim-client"])
        .arg(npt().get_program())
        .args([
            "bulk",
            "udp://10.0.1.2:7777",
            "--rate",
            "20mbit",
            "--size",
            "1200",
        ])
        .args(["-t", &format!("{RUN_S}s"), "-q", "--json"])
        .arg(&result)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    if stop != Stop::Nothing {
        // A second into the run, by the link's own count (2,083 datagrams a second), so the
        // stop ends well before the run does.
        let deadline = Instant::now() + Duration::from_secs(30);
        while u(&lab.status(), UP_PACKETS) < up_before + 2_000 {
            assert!(Instant::now() < deadline, "the flow did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let (pid, pause) = match stop {
            Stop::Sender(d) => (bulk.id() as i32, d),
            Stop::Lab(d) => (lab_pid(), d),
            Stop::Nothing => unreachable!(),
        };
        signal(pid, libc::SIGSTOP);
        std::thread::sleep(pause); // the stall this run is about
        signal(pid, libc::SIGCONT);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while bulk.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = bulk.kill();
            panic!("bulk did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let doc = json(&result);
    let since = |json: bool| {
        let mut a = vec![
            "lab",
            "status",
            "tblim",
            "--since",
            before.to_str().unwrap(),
        ];
        if json {
            a.push("--json");
        }
        let out = run(&a, Duration::from_secs(10));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let lab_run: serde_json::Value = serde_json::from_slice(&since(true)).unwrap();
    let up = &lab_run["links"][0]["directions"][0];
    assert_eq!(up["from"], "client");
    Outcome {
        delivered_mbit: f(&doc, "/summary/udp/delivered_bps") / 1e6,
        tester_limited: doc["summary"]["udp"]["tester_limited"].as_bool().unwrap(),
        stalled_ms: f(&doc, "/summary/udp/stalled_ms"),
        lost: u(&doc, "/summary/udp/lost"),
        lab_late: u(up, "/applied/released_late"),
        lab_error_max_ms: f(up, "/applied/delay_error_max_us") / 1e3,
        lab_packets_out: u(up, "/applied/packets_out"),
        lab_bytes_out: u(up, "/applied/bytes_out"),
        lab_text: String::from_utf8_lossy(&since(false)).into_owned(),
    }
}

/// The flags are what their counters say, and a reading off by more than 1 % carries one.
fn check(o: &Outcome, what: &str) {
    let capacity = o.capacity_mbit();
    // The link's own count of what it carried: at most its rate, and about the nominal
    // capacity (the report requests are a fraction of a per cent of the bytes).
    assert!(
        (capacity / NOMINAL_MBIT - 1.0).abs() <= 0.005,
        "{what}: {capacity:.3} Mbit/s"
    );
    let off = (o.delivered_mbit / capacity - 1.0).abs();
    eprintln!(
        "{what}: {:.3} Mbit/s ({:+.2} % of the link's {capacity:.3}), tester stalls {:.1} ms \
         (limited {}), lab late {} max {:.2} ms",
        o.delivered_mbit,
        (o.delivered_mbit / capacity - 1.0) * 100.0,
        o.stalled_ms,
        o.tester_limited,
        o.lab_late,
        o.lab_error_max_ms
    );
    // The result's flag is its own stalls past 1 % of the run, on a path that dropped some.
    assert_eq!(
        o.tester_limited,
        o.lost > 0 && o.stalled_ms > 0.01 * RUN_S * 1e3,
        "{what}: tester_limited vs stalled_ms {}",
        o.stalled_ms
    );
    // The lab says a direction was late (a `late:` line under its row) exactly when it
    // released a packet over 1 ms late.
    let lines: Vec<&str> = o.lab_text.lines().collect();
    let row = lines
        .iter()
        .position(|l| l.trim_start().starts_with("client > server"))
        .expect("the direction's row");
    let says_late = lines
        .get(row + 1)
        .is_some_and(|l| l.trim_start().starts_with("late: "));
    assert_eq!(says_late, o.lab_late > 0, "{what}: {}", o.lab_text);
    // A late release moves a rate over the run by at most its delay error.
    let lab_limited = o.lab_error_max_ms > 0.01 * RUN_S * 1e3;
    assert!(
        off <= 0.01 || o.tester_limited || lab_limited,
        "{what}: {:.3} Mbit/s, {:.2} % off the link's {capacity:.3}, and neither the \
         tester (stalls {:.1} ms) nor the lab (delay error max {:.2} ms) says why",
        o.delivered_mbit,
        off * 100.0,
        o.stalled_ms,
        o.lab_error_max_ms
    );
}

#[test]
fn udp_up_reads_capacity_or_says_who_limited_it() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path(), "tblim", &lab::pair("tblim", LINK));

    // One core kept busy meanwhile (bounded by the flag and a deadline).
    let busy = Arc::new(AtomicBool::new(true));
    let b = busy.clone();
    let spinner = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(120);
        while b.load(Ordering::Relaxed) && Instant::now() < end {
            std::hint::spin_loop();
        }
    });
    // Ten runs in a row: each reads the link's capacity within 1 % or is flagged.
    for i in 1..=10 {
        let o = one_run(&lab, dir.path(), Stop::Nothing);
        check(&o, &format!("busy core, run {i}"));
    }
    busy.store(false, Ordering::Relaxed);
    spinner.join().unwrap();

    // The sender stopped for 300 ms: the queue covers 98 ms of it, the link idles for the
    // rest (~200 ms of 3 s: 7 % low), and the tester must say so.
    let o = one_run(&lab, dir.path(), Stop::Sender(Duration::from_millis(300)));
    check(&o, "sender stopped");
    assert!(
        o.tester_limited,
        "a 300 ms stall: stalls {} ms",
        o.stalled_ms
    );
    assert!(o.stalled_ms >= 150.0, "{}", o.stalled_ms);
    assert!(
        o.delivered_mbit < o.capacity_mbit() * 0.99,
        "{}",
        o.delivered_mbit
    );

    // The lab stopped for 200 ms: its packets leave up to 200 ms late and it must say so.
    let o = one_run(&lab, dir.path(), Stop::Lab(Duration::from_millis(200)));
    check(&o, "lab stopped");
    assert!(
        o.lab_late > 0 && o.lab_error_max_ms >= 150.0,
        "{}",
        o.lab_text
    );
}
