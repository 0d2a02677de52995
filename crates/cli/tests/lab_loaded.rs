//! `npt probe --under-load` on a path of known capacity (root: network namespaces joined by an
//! emulated link of 10 Mbit/s, 20 ms RTT and a drop-tail queue of 100 or 20 packets). A full
//! queue of 1,500-byte packets drains in 100 × 1500 × 8 / 10 Mbit/s = 120 ms (20 packets:
//! 24 ms); the probe must see the load add delay up to that and no more, the load must move
//! 9–10 Mbit/s, and the recovery phase must return to the idle RTT.
//!
//! The load goes up with CUBIC (`--load-congestion cubic`): what a queue holds under load is
//! set by the sender's congestion control, and only this host's can be chosen (this host's
//! default may be BBR, which keeps queues short on purpose; a download is paced by the
//! server's). Issue 17 expects the loaded p50 itself at base + 120 ms ± 15 %; TCP does not keep
//! a drop-tail queue full (CUBIC's sawtooth after synchronized drops), so that stronger claim
//! is its own test, ignored with the reason, and docs/under-load.md has the measured numbers.
#![cfg(test)] // clippy.toml: test helpers count as tests

mod common;

use std::path::Path;
use std::time::Duration;

use common::{assert_valid, f, json, run};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The lab: 10 Mbit/s, 10 ms each way, `queue` packets, `npt serve` behind it.
fn topology(name: &str, queue: u32) -> String {
    format!(
        r#"name = "{name}"
[[node]]
name = "client"
[[node]]
name = "server"
[[link]]
a = "client"
b = "server"
rate = "10mbit"
delay = "10ms"
queue = {queue}
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.1.2:7777"
"#
    )
}

/// A lab, brought down when dropped.
struct Lab(String);

impl Lab {
    fn up(dir: &Path, name: &str, queue: u32) -> Lab {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, topology(name, queue)).unwrap();
        let out = run(
            &["lab", "up", file.to_str().unwrap()],
            Duration::from_secs(60),
        );
        assert!(
            out.status.success(),
            "lab up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Lab(name.to_string())
    }

    /// A loaded probe on the client node: 2 s idle, 8 s under 4 CUBIC streams up, 3 s
    /// recovery; the document (schema-checked).
    fn loaded_probe(&self, dir: &Path) -> serde_json::Value {
        let j = dir.join(format!("{}.json", self.0));
        let out = run(
            &[
                "lab",
                "exec",
                &self.0,
                "client",
                "--",
                "npt",
                "probe",
                "udp://10.0.1.2:7777",
                "--pps",
                "50",
                "-q",
                "--under-load",
                "tcp://10.0.1.2:7777",
                "--load-streams",
                "4",
                "--load-direction",
                "up",
                "--load-congestion",
                "cubic",
                "--load-idle",
                "2s",
                "--load-duration",
                "8s",
                "--load-recovery",
                "3s",
                "--json",
                j.to_str().unwrap(),
            ],
            Duration::from_secs(120),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = json(&j);
        assert_valid(&doc, "probe");
        doc
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = run(&["lab", "down", &self.0], Duration::from_secs(30));
    }
}

/// (idle p50, loaded p50, loaded p99, recovery p50) in ms.
fn phases(doc: &serde_json::Value) -> (f64, f64, f64, f64) {
    (
        f(doc, "/under_load/phases/0/rtt_ms/p50"),
        f(doc, "/under_load/phases/1/rtt_ms/p50"),
        f(doc, "/under_load/phases/1/rtt_ms/p99"),
        f(doc, "/under_load/phases/2/rtt_ms/p50"),
    )
}

fn skip_unless_root() -> bool {
    if !is_root() {
        eprintln!(
            "SKIPPED: {} needs root (network namespaces, TUN)",
            module_path!()
        );
        return true;
    }
    false
}

#[test]
fn the_load_adds_the_queue_and_the_recovery_returns_to_the_base() {
    if skip_unless_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, queue, drain_ms) in [("tload100", 100, 120.0), ("tload20", 20, 24.0)] {
        let lab = Lab::up(dir.path(), name, queue);
        let doc = lab.loaded_probe(dir.path());
        drop(lab);
        let (base, loaded, loaded_p99, recovery) = phases(&doc);
        // The base is the link's 20 ms RTT.
        assert!((20.0..22.0).contains(&base), "{name}: idle p50 {base}");
        // The queue adds at most its drain time (+15 %), and the load fills it: its busiest
        // moments reach at least half of it.
        let add = loaded - base;
        assert!(
            add > 0.0 && add <= drain_ms * 1.15,
            "{name}: loaded p50 {loaded} = base {base} + {add:.1} ms, queue drains in {drain_ms}"
        );
        assert!(
            loaded_p99 - base >= drain_ms * 0.5,
            "{name}: loaded p99 {loaded_p99}, base {base}"
        );
        assert!(
            (recovery - base).abs() < 2.0,
            "{name}: recovery p50 {recovery} vs base {base}"
        );
        let mbit = f(&doc, "/under_load/goodput_bps/up") / 1e6;
        assert!(
            (9.0..=10.0).contains(&mbit),
            "{name}: load {mbit:.2} Mbit/s"
        );
        assert!(f(&doc, "/under_load/increase_p50_x") > 1.0);
        let rpm = f(&doc, "/under_load/rpm");
        let trimmed = f(&doc, "/under_load/rpm_rtt_ms");
        assert!((rpm - 60_000.0 / trimmed).abs() < 1e-6, "{rpm} {trimmed}");
    }
}

/// Issue 17's stronger claim: the loaded p50 is the base plus the full queue's drain time,
/// within ±15 %. Measured here (docs/under-load.md): +100.8 to +104 ms with a 100-packet queue
/// (at the edge of the band: it passes in some runs) and +18.1 to +18.4 ms with a 20-packet one
/// (23–25 % low; CUBIC, 4 streams up): TCP backs off after each drop and the queue drains
/// below full, so the median sits below the drain time.
#[test]
#[ignore = "TCP does not hold a drop-tail queue full: the loaded p50 is 13-25 % below the drain time, outside ±15 % with 20 packets (docs/under-load.md)"]
fn issue_17_loaded_p50_is_the_base_plus_the_drain_time() {
    if skip_unless_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, queue, drain_ms) in [("tloadx100", 100, 120.0), ("tloadx20", 20, 24.0)] {
        let lab = Lab::up(dir.path(), name, queue);
        let doc = lab.loaded_probe(dir.path());
        drop(lab);
        let (base, loaded, _, _) = phases(&doc);
        let add = loaded - base;
        assert!(
            (add - drain_ms).abs() <= drain_ms * 0.15,
            "{name}: +{add:.1} ms vs {drain_ms} ms"
        );
    }
}
