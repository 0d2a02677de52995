//! STAMP across a lab link of known loss (1 % each way) and delay (5 ms up, 2 ms down), against
//! stamp-suite (an independent implementation): its sender measuring `npt serve --stamp`, and
//! `npt probe stamp://` measuring its stateful reflector and npt's own. The packets each side
//! counts lost are exactly the ones the link's two directions dropped (`npt lab status
//! --json`): nothing lost in the reflector or the sender, nothing counted twice; npt's sender
//! places them up and down as the link dropped them (from the stateful reflector's count), and
//! reads each direction's delay from the four timestamps (lab namespaces share one clock).
//! Root (network namespaces); without stamp-suite the interoperability parts print SKIPPED.

#![cfg(test)]

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::lab::{self, Lab};
use common::{run, u};

/// Labs measure: one at a time within this file (other files use other lab names).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Client and server across one link with 1 % loss each way, 5 ms up and 2 ms down; on the
/// server `npt serve
/// /// --stamp` (stateful) on 862 and, with `suite`, stamp-suite's stateful reflector on 8620.
fn topology(lab: &str, suite: Option<&Path>) -> String {
    let mut t = format!(
        r#"name = "{lab}"
[[node]]
name = "client"
[[node]]
name = "server"
[[link]]
a = "client"
b = "server"
delay = "5ms"
loss = "1%"
[link.b_to_a]
delay = "2ms"
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777", "--stamp", "0.0.0.0:862"]
ready = "udp://10.0.1.2:862"
"#
    );
    if let Some(bin) = suite {
        t.push_str(&format!(
            r#"[[service]]
name = "suite"
node = "server"
cmd = ["{}", "-i", "-S", "10.0.1.2", "-o", "8620", "--stateful-reflector"]
ready = "udp://10.0.1.2:8620"
"#,
            bin.display()
        ));
    }
    t
}

/// The link's drops so far, client→server and server→client, once the lab's published counters
/// (refreshed every 200 ms) reach `want` in total, or after 3 s.
fn drops(lab: &Lab, want: u64) -> (u64, u64) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let s = lab.status();
        let dir = |from: &str| {
            s["links"][0]["directions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["from"] == from)
                .map(|d| d["applied"]["dropped_loss"].as_u64().unwrap())
                .unwrap()
        };
        let (up, down) = (dir("client"), dir("server"));
        if up + down == want || Instant::now() >= deadline {
            return (up, down);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `npt probe stamp://TARGET` on the client, 5,000 packets at 1,000 pps; the result.
fn probe(lab: &Lab, dir: &Path, target: &str) -> serde_json::Value {
    lab.npt_json(
        "client",
        &["probe", target, "-n", "5000", "--pps", "1000", "-q"],
        &dir.join("stamp.json"),
        "probe",
    )
}

#[test]
fn loss_and_delay_through_a_lossy_link_are_the_links_own_per_direction() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let suite = common::stamp_suite(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path(), "tstamp", &topology("tstamp", suite.as_deref()));

    // npt probe stamp:// → npt serve --stamp, then → stamp-suite's stateful reflector.
    let mut targets = vec![("npt → npt", "stamp://10.0.1.2:862")];
    if suite.is_some() {
        targets.push(("npt → stamp-suite", "stamp://10.0.1.2:8620"));
    }
    let (mut up0, mut down0) = drops(&lab, 0);
    for (what, target) in targets {
        let doc = probe(&lab, dir.path(), target);
        let lost = u(&doc, "/summary/lost");
        let (up, down) = drops(&lab, up0 + down0 + lost);
        eprintln!(
            "{what}: lost {lost}; link dropped up {} down {}",
            up - up0,
            down - down0
        );
        assert!(
            lost > 40,
            "1 % each way of 5,000 should lose ~100, lost {lost}"
        );
        assert_eq!(
            lost,
            (up - up0) + (down - down0),
            "{what}: probe lost vs link drops"
        );
        // Placed per direction from the stateful reflector's count: exactly the link's, but
        // for losses after its last answer (unplaced), which may have gone either way.
        let d = &doc["summary"]["directions"];
        let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
        let (lu, ld, un) = (
            n(&d["up"]["lost"]),
            n(&d["down"]["lost"]),
            n(&d["unplaced"]),
        );
        eprintln!("{what}: placed up {lu} down {ld} unplaced {un}");
        assert_eq!(lu + ld + un, lost, "{d}");
        assert!(
            lu <= up - up0 && up - up0 <= lu + un,
            "up {lu}+{un} vs {}",
            up - up0
        );
        assert!(
            ld <= down - down0 && down - down0 <= ld + un,
            "down {ld}+{un} vs {}",
            down - down0
        );
        if un == 0 {
            assert_eq!(
                (lu, ld),
                (up - up0, down - down0),
                "every loss placed: exact"
            );
        }
        // One-way delay from T1..T4 (one clock: the lab's namespaces), the link's 5 and 2 ms.
        assert_eq!(d["clock"], "same-host", "{d}");
        let p50 = |dir: &str| d[dir]["owd_ms"]["p50"].as_f64().unwrap();
        let (owd_up, owd_down) = (p50("up"), p50("down"));
        eprintln!("{what}: one-way delay p50 up {owd_up} ms, down {owd_down} ms");
        assert!((owd_up - 5.0).abs() <= 0.5, "up {owd_up} ms");
        assert!((owd_down - 2.0).abs() <= 0.5, "down {owd_down} ms");
        assert!(
            d["far_error_ms"].as_f64().is_some(),
            "the reflector's Error Estimate"
        );
        (up0, down0) = (up, down);
    }

    let Some(bin) = suite else { return };
    // stamp-suite's sender → npt serve --stamp.
    let out = run(
        &[
            "lab",
            "exec",
            lab.name(),
            "client",
            "--",
            bin.to_str().unwrap(),
            "-r",
            "10.0.1.2",
            "-p",
            "862",
            "-c",
            "5000",
            "-d",
            "1ms",
            "-L",
            "1",
            "--output-format",
            "json",
        ],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("\"summary\""))
        .unwrap();
    let s: serde_json::Value = serde_json::from_str(line).unwrap();
    let lost = s["packets_lost"].as_u64().unwrap();
    let (up, down) = drops(&lab, up0 + down0 + lost);
    eprintln!(
        "stamp-suite → npt: lost {lost}; link dropped up {} down {}",
        up - up0,
        down - down0
    );
    assert_eq!(s["packets_sent"], 5000);
    assert_eq!(
        lost,
        (up - up0) + (down - down0),
        "stamp-suite lost vs link drops"
    );
}
