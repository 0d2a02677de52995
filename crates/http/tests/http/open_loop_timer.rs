//! `--rate` on a precise timer: against a quiet loopback responder, latency measured from the
//! intended send time (corrected) and from the actual send (uncorrected) must agree to well
//! under a millisecond — the pacer releases each request on time, so the correction charges
//! only what the server and the network cost. (With tokio's 1 ms timer wheel the two would
//! differ by up to a millisecond on every request.) The stall case, where they must differ, is
//! `faults.rs::stall_shows_in_corrected_p99_only`.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use common::*;

#[test]
fn corrected_and_uncorrected_agree_on_a_quiet_server() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, _server) = responder(false);
    let mut c = config(&format!("http://{addr}/"));
    c.rate = Some(500.0);
    c.connections = 8;
    c.duration = Duration::from_secs(3);
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    assert_eq!(s["errors"], 0);
    let requests = s["requests"].as_u64().unwrap();
    assert!(
        (1400..=1500).contains(&requests),
        "500/s for 3 s: {requests} requests"
    );
    let corrected = s["latency_ms"]["p50"].as_f64().unwrap();
    let uncorrected = s["latency_uncorrected_ms"]["p50"].as_f64().unwrap();
    let timer = &v["health"]["timer_lateness_ms"];
    eprintln!(
        "p50 corrected {corrected} ms, uncorrected {uncorrected} ms; timer lateness p50 {} p99 {} max {} ms",
        timer["p50"], timer["p99"], timer["max"]
    );
    assert!(
        corrected >= uncorrected,
        "the correction never lowers latency"
    );
    assert!(
        corrected - uncorrected < 0.3,
        "p50 corrected {corrected} ms vs uncorrected {uncorrected} ms differ by a timer's worth"
    );
    let timer_p50 = timer["p50"].as_f64().expect("open loop reports its timer");
    assert!(timer_p50 < 0.3, "pacer median lateness {timer_p50} ms");
    assert!(timer["max"].as_f64().unwrap() >= 0.0);
}
