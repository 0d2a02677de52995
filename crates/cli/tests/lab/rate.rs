//! TCP at a rate and with a chosen congestion control, on paths of known capacity (root:
//! network namespaces joined by an emulated link), checked against what the link itself
//! counted (`npt lab status --json`):
//!
//! - on 10 Mbit/s, 20 ms RTT and a 100-packet queue, `npt bulk --rate 5mbit` reads 5 ± 0.25
//!   Mbit/s up (paced here) and down (paced by npt serve), the link carried that many bytes
//!   (payload plus headers) and its queue never built (no drops, waits of a packet or two);
//! - a loaded probe whose TCP load is one CUBIC stream paced at 5 Mbit/s adds far less than the
//!   queue's 120 ms drain time to the probe's RTT, where the same stream unpaced adds most of
//!   it; the load's retransmits follow the packets the link's queue dropped;
//! - on 25 ms RTT with 1 % loss each way, `--congestion cubic` and `--congestion bbr` are what
//!   the kernel ran (read back from the socket), and they move what those algorithms move
//!   there: CUBIC a few Mbit/s (loss-bound), BBR several times more.
#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::path::Path;

use common::lab::{self, Lab};
use common::{f, u};

/// 10 Mbit/s, 10 ms each way, a 100-packet drop-tail queue, `npt serve` behind it.
const BOTTLENECK: &str = "rate = \"10mbit\"\ndelay = \"10ms\"\nqueue = 100";

/// A full 100-packet queue of 1,500-byte packets at 10 Mbit/s drains in 120 ms.
const DRAIN_MS: f64 = 120.0;

/// The bottleneck queue's waiting times (ns) and the packets it dropped, in one direction so far.
fn queue(d: &serde_json::Value) -> (npt_stats::Histogram, u64) {
    let h: npt_stats::SerializedHistogram =
        serde_json::from_value(d["queue_wait"].clone()).unwrap();
    (
        npt_stats::Histogram::from_serialized(&h).unwrap(),
        u(d, "/applied/dropped_queue"),
    )
}

#[test]
fn a_paced_tcp_bulk_reads_its_rate_and_leaves_the_queue_empty() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path(), "trate", &lab::pair("trate", BOTTLENECK));
    for (way, from, to) in [("up", "client", "server"), ("down", "server", "client")] {
        let before = lab.settled(0, from, to);
        let doc = lab.npt_json(
            "client",
            &[
                "bulk",
                "tcp://10.0.1.2:7777",
                "--rate",
                "5mbit",
                "--direction",
                way,
                "--duration",
                "5s",
            ],
            &dir.path().join("bulk.json"),
            "bulk",
        );
        let after = lab.settled(0, from, to);
        let mbit = f(&doc, &format!("/summary/goodput_bps/{way}")) / 1e6;
        let bytes = f(&doc, &format!("/summary/bytes/{way}"));
        let secs = f(&doc, "/summary/duration_s");
        let carried = u(&after, "/applied/bytes_out") - u(&before, "/applied/bytes_out");
        let (wait0, drops0) = queue(&before);
        let (wait1, drops1) = queue(&after);
        let wait = wait1.since(&wait0).unwrap();
        eprintln!(
            "{way}: {mbit:.3} Mbit/s, {bytes} B of payload; the link carried {carried} B \
             ({:.3} Mbit/s over the run), queue wait p50 {:.2} p99 {:.2} ms, {} dropped",
            carried as f64 * 8.0 / secs / 1e6,
            wait.quantile_ns(0.5) as f64 / 1e6,
            wait.quantile_ns(0.99) as f64 / 1e6,
            drops1 - drops0
        );
        assert!(
            (4.75..=5.25).contains(&mbit),
            "{way}: {mbit:.3} Mbit/s at --rate 5mbit through 10mbit"
        );
        assert_eq!(f(&doc, "/summary/rate_bps"), 5e6);
        let pct = f(&doc, "/summary/rate_achieved_pct");
        assert!((95.0..=105.0).contains(&pct), "{way}: {pct} %");
        // The link carried at least what npt counted as arrived, and at the pace: its own
        // byte count over the run, IP and TCP headers included (4 % of a paced write's
        // segment), is within the kernel's pacing cap of 10 % over the rate. (Not equal to
        // npt's bytes: an upload counts what the responder had reported, up to 100 ms before
        // the end, and a stream's last bytes in flight are not goodput.)
        let link_mbit = carried as f64 * 8.0 / secs / 1e6;
        assert!(
            carried as f64 >= bytes && (4.75..=5.5).contains(&link_mbit),
            "{way}: the link carried {carried} B ({link_mbit:.3} Mbit/s) for {bytes} B of payload"
        );
        // Half the link's rate never builds its queue: nothing dropped, and a packet waits at
        // most for a few ahead of it (1.2 ms each) — not the 120 ms of a full queue.
        assert_eq!(drops1 - drops0, 0, "{way}: the queue dropped packets");
        let p99 = wait.quantile_ns(0.99) as f64 / 1e6;
        assert!(p99 <= DRAIN_MS / 10.0, "{way}: queue wait p99 {p99:.2} ms");
        // The sending side's congestion control is reported for an upload only (a download's
        // is the server's).
        assert_eq!(doc["summary"]["congestion"].is_string(), way == "up");
    }
}

/// A loaded probe on the client node: a 50 pps UDP probe across the bottleneck under one CUBIC
/// stream up, paced at `rate` or not; the document.
fn loaded(lab: &Lab, dir: &Path, rate: Option<&str>) -> serde_json::Value {
    let mut args = vec![
        "probe",
        "udp://10.0.1.2:7777",
        "--pps",
        "50",
        "-q",
        "--under-load",
        "tcp://10.0.1.2:7777",
        "--load-streams",
        "1",
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
    ];
    if let Some(r) = rate {
        args.extend(["--load-rate", r]);
    }
    lab.npt_json("client", &args, &dir.join("probe.json"), "probe")
}

#[test]
fn a_paced_tcp_load_adds_far_less_than_the_drain_time() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path(), "trload", &lab::pair("trload", BOTTLENECK));
    let mut added = Vec::new();
    for rate in [Some("5mbit"), None] {
        let before = lab.settled(0, "client", "server");
        let doc = loaded(&lab, dir.path(), rate);
        let after = lab.settled(0, "client", "server");
        let (wait0, drops0) = queue(&before);
        let (wait1, drops1) = queue(&after);
        let (wait, drops) = (wait1.since(&wait0).unwrap(), drops1 - drops0);
        let ul = &doc["under_load"];
        let add =
            f(&doc, "/under_load/phases/1/rtt_ms/p50") - f(&doc, "/under_load/phases/0/rtt_ms/p50");
        let mbit = f(&doc, "/under_load/goodput_bps/up") / 1e6;
        let retrans = u(&doc, "/under_load/retransmits");
        eprintln!(
            "load {rate:?}: +{add:.2} ms p50, {mbit:.2} Mbit/s, {retrans} retransmits; the \
             up queue dropped {drops}, waits p50 {:.2} p99 {:.2} ms",
            wait.quantile_ns(0.5) as f64 / 1e6,
            wait.quantile_ns(0.99) as f64 / 1e6,
        );
        // The kernel ran what was asked, and it is reported.
        assert_eq!(ul["congestion"], "cubic", "{ul}");
        assert_eq!(ul["load"]["congestion"], "cubic");
        if rate.is_some() {
            assert_eq!(f(&doc, "/under_load/load/rate_bps"), 5e6);
            // Never over the pace. Under it only by what the tester lost while starved of CPU
            // for over the bucket's 20 ms (the probe in the same process was sending up to
            // 165 ms late when a run read 4.71 on a busy box; 4.95 and 4.99 on a quieter one).
            assert!((4.5..=5.25).contains(&mbit), "paced load {mbit:.2} Mbit/s");
            // Far less than the drain time: a tenth of it at most. The link agrees: its queue
            // dropped nothing and held a packet or two at most.
            assert!(add <= DRAIN_MS / 10.0, "a 5 Mbit/s load added {add:.2} ms");
            assert_eq!(drops, 0, "the paced load overflowed the queue");
            let p99 = wait.quantile_ns(0.99) as f64 / 1e6;
            assert!(p99 <= DRAIN_MS / 10.0, "queue wait p99 {p99:.2} ms");
            // No drops, so no loss to repair (a tail-loss probe may still resend a segment).
            assert!(retrans <= 2, "{retrans} retransmits without a drop");
        } else {
            assert!(ul["load"].get("rate_bps").is_none(), "{ul}");
            assert!(
                (9.0..=10.0).contains(&mbit),
                "unpaced load {mbit:.2} Mbit/s"
            );
            // The unpaced stream fills the queue: most of the drain time, and overflows.
            assert!(
                add >= DRAIN_MS / 2.0,
                "an unpaced load added only {add:.2} ms"
            );
            assert!(drops > 0, "CUBIC never overflowed a 100-packet queue");
            // Each segment the queue dropped is resent once, give or take a spurious resend
            // (as lab_tcpinfo.rs: within a factor of 2).
            assert!(
                retrans * 2 >= drops && retrans <= drops * 2 + 2,
                "{retrans} retransmits for {drops} drops"
            );
        }
        added.push(add);
    }
    assert!(
        added[0] * 5.0 < added[1],
        "paced +{:.2} ms vs unpaced +{:.2} ms",
        added[0],
        added[1]
    );
}

/// 25 ms RTT (12.5 ms each way), 1 % random loss each way, 50 Mbit/s.
const LOSSY: &str = "rate = \"50mbit\"\ndelay = \"12500us\"\nloss = \"1%\"";

#[test]
fn congestion_control_is_the_one_asked_and_behaves_like_it_on_a_lossy_path() {
    if lab::skipped(module_path!()) {
        return;
    }
    let _turn = common::turn(module_path!());
    let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    for cc in ["cubic", "bbr"] {
        if !avail.split_whitespace().any(|n| n == cc) {
            eprintln!(
                "SKIPPED: {} needs {cc} (this kernel offers {avail})",
                module_path!()
            );
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(dir.path(), "trcc", &lab::pair("trcc", LOSSY));
    let mut carried = Vec::new();
    for cc in ["cubic", "bbr"] {
        let before = lab.settled(0, "client", "server");
        let doc = lab.npt_json(
            "client",
            &[
                "bulk",
                "tcp://10.0.1.2:7777",
                "--congestion",
                cc,
                "--direction",
                "up",
                "--duration",
                "8s",
            ],
            &dir.path().join("bulk.json"),
            "bulk",
        );
        let after = lab.settled(0, "client", "server");
        let n =
            |k: &str| u(&after, &format!("/applied/{k}")) - u(&before, &format!("/applied/{k}"));
        let (pkts, lost, bytes) = (n("packets_in"), n("dropped_loss"), n("bytes_out"));
        let mbit = f(&doc, "/summary/goodput_bps/up") / 1e6;
        let retrans = u(&doc, "/summary/retransmits");
        eprintln!(
            "{cc}: {mbit:.2} Mbit/s, {retrans} retransmits; the link took {pkts} packets, \
             lost {lost}, delivered {bytes} B"
        );
        // What the kernel ran, read back from the socket: the one asked for.
        assert_eq!(doc["summary"]["congestion"], cc, "{}", doc["summary"]);
        assert_eq!(doc["streams"][0]["congestion"], cc);
        assert_eq!(doc["config"]["congestion"], cc);
        // The path is the one meant: about 1 % of the packets lost on the way up, and the
        // sender resent about as many.
        assert!(
            lost * 200 >= pkts && lost * 50 <= pkts,
            "{cc}: the link lost {lost} of {pkts}"
        );
        assert!(
            retrans * 2 >= lost && retrans <= lost * 2 + 2,
            "{cc}: {retrans} retransmits for {lost} lost"
        );
        carried.push(bytes);
    }
    // CUBIC backs off at every loss, so 1 % at 25 ms holds it to a few Mbit/s; BBR models the
    // path's rate and does not: it moved several times more, by the link's own count.
    assert!(
        carried[1] >= carried[0] * 3,
        "bbr moved {} B, cubic {} B",
        carried[1],
        carried[0]
    );
}
