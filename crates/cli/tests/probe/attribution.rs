//! Why this exists: `npt probe` must say where things happened — a packet the server's budget
//! refused is not a packet the path lost, and what the server saw of each packet splits loss
//! and delay per direction — and say when it cannot (`--raw`). Against a real `npt serve` on
//! loopback (the path loses nothing): the refusals read exactly what the server counted, with
//! exit 3 for every subcommand that meets them; through a socat UDP relay the split still holds.
//! The lab's paths of known loss and delay per direction are in `lab_directions.rs`.

#![cfg(test)]

use crate::common;
use crate::serve_util;

use std::process::Stdio;
use std::time::Duration;

use common::{assert_valid, f, json, run, u, Guard};
use serve_util::{exit_summary, logged, serve};

const LIMIT: Duration = Duration::from_secs(60);

/// `npt ARGS --json FILE`: exit code, stdout, and the document (schema-checked as `kind`).
fn npt_json(args: &[&str], kind: &str) -> (Option<i32>, String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    let mut all = args.to_vec();
    all.extend(["--json", file.to_str().unwrap()]);
    let o = run(&all, LIMIT);
    let doc = json(&file);
    assert_valid(&doc, kind);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        doc,
    )
}

/// The issue's own example: `npt probe udp://… --pps 1000 -n 2000` against `npt serve
/// --limit-local` (200 packets a second per source) used to print 70 % loss. Now: path loss 0,
/// refused exactly what the server counted, one line with the fix, and exit 3.
#[test]
fn a_probe_over_the_servers_budget_reads_refused_not_lost() {
    let s = serve(1024, &["--limit-local"]);
    let target = format!("udp://{}", s.tcp);
    let (code, text, d) = npt_json(
        &["probe", &target, "--pps", "1000", "-n", "2000", "-q"],
        "probe",
    );
    let refused = u(&d, "/summary/refused_by_server");
    assert_eq!(code, Some(3), "{text}");
    assert_eq!(
        (u(&d, "/summary/lost"), f(&d, "/summary/loss_pct")),
        (0, 0.0)
    );
    assert_eq!(u(&d, "/summary/received") + refused, 2000);
    assert!(refused > 1000, "most were over the budget: {refused}");
    assert!(u(&d, "/summary/refusal_notices/budget") > 0);
    let dirs = &d["summary"]["directions"];
    assert_eq!(dirs["exact"], true, "{dirs}");
    assert_eq!(
        (dirs["up"]["lost"].as_u64(), dirs["down"]["lost"].as_u64()),
        (Some(0), Some(0))
    );
    // Every interval resolves, refusals apart.
    for iv in d["intervals"].as_array().unwrap() {
        let n = |k: &str| iv[k].as_u64().unwrap_or(0);
        assert_eq!(n("completed") + n("lost") + n("refused"), n("sent"), "{iv}");
    }
    let line = text
        .lines()
        .find(|l| l.starts_with("refused "))
        .unwrap_or_default();
    assert!(
        line.contains(&format!("refused    {refused} by the server"))
            && line.contains("--token")
            && line.contains("--limit-local"),
        "{text}"
    );
    assert_eq!(
        logged(&exit_summary(&s), "udp refused:", "rate"),
        refused,
        "the server's own count"
    );
}

/// Bulk and ping meet the same budget: they count it apart from loss too, and exit 3.
#[test]
fn bulk_and_ping_exit_3_when_the_server_refused_part_of_the_test() {
    let s = serve(1024, &["--limit-local"]);
    let target = format!("udp://{}", s.tcp);
    let (code, _, d) = npt_json(&["bulk", &target, "--rate", "20mbit", "-t", "1s"], "bulk");
    assert!(u(&d, "/summary/udp/refused_by_server") > 0);
    assert_eq!(code, Some(3));
    let s = serve(1024, &["--token", "s3cret"]);
    let target = format!("udp://{}", s.tcp);
    let (code, _, d) = npt_json(&["ping", &target, "-c", "3", "-i", "50ms", "-q"], "ping");
    assert_eq!(u(&d, "/summary/refused_by_server"), 3);
    assert_eq!(code, Some(3), "refused, not merely unanswered");
}

/// Under `--token` every frame is sealed, the flow query too (with a sequence number of its
/// own: the server's replay window refuses a reused one), and the split is exact.
#[test]
fn under_token_the_split_is_exact_too() {
    let s = serve(1024, &["--token", "s3cret"]);
    let target = format!("udp://{}", s.tcp);
    let (code, _, d) = npt_json(
        &[
            "probe", &target, "--token", "s3cret", "--pps", "500", "-n", "500", "-q",
        ],
        "probe",
    );
    assert_eq!(code, Some(0));
    let dirs = &d["summary"]["directions"];
    assert_eq!(dirs["exact"], true, "{dirs}");
    assert_eq!(dirs["stamped"], 500);
}

/// `--raw` works with any echo server and is round trips only: the result and the text say
/// so, and no figure per direction is made up.
#[test]
fn raw_is_round_trips_only_and_says_so() {
    let s = serve(1024, &[]);
    let target = format!("udp://{}", s.tcp);
    let (code, text, d) = npt_json(
        &["probe", &target, "--raw", "--pps", "500", "-n", "200", "-q"],
        "probe",
    );
    assert_eq!(code, Some(0));
    assert_eq!(d["summary"]["round_trip_only"], "raw");
    assert!(d["summary"].get("directions").is_none());
    assert!(
        text.contains("direction  none: --raw is round trips only"),
        "{text}"
    );
    assert!(!d["histograms"].as_object().unwrap().contains_key("owd_up"));
}

/// Over TCP the transport hides loss, so there is no loss per direction, but the server's
/// timestamps still give its dwell, IPDV each way and (loopback: one clock) one-way delay.
#[test]
fn tcp_gets_dwell_ipdv_and_one_way_delay_but_no_loss_split() {
    let s = serve(1024, &[]);
    let target = format!("tcp://{}", s.tcp);
    let (code, _, d) = npt_json(
        &["probe", &target, "-n", "300", "--pps", "500", "-q"],
        "probe",
    );
    assert_eq!(code, Some(0));
    let dirs = &d["summary"]["directions"];
    assert!(dirs["up"].get("lost").is_none(), "{dirs}");
    assert_eq!(dirs["clock"], "same-host");
    assert_eq!(dirs["stamped"], 300);
    let (up, down) = (
        f(&d, "/summary/directions/up/owd_ms/p50"),
        f(&d, "/summary/directions/down/owd_ms/p50"),
    );
    let rtt = f(&d, "/summary/rtt_ms/p50");
    assert!(
        up > 0.0 && down > 0.0 && up + down <= rtt * 1.5 + 0.05,
        "{up} + {down} vs {rtt}"
    );
    assert_eq!(u(&d, "/summary/directions/owd_negative"), 0);
}

/// Through a socat UDP relay (the server sees socat's socket as the flow's source): the far
/// end still reflects, the split is exact, nothing is lost either way on loopback, and one-way
/// delays add up to what the round trip took beside the server's dwell.
#[test]
fn through_a_socat_udp_relay_the_split_holds() {
    if std::process::Command::new("socat")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: socat is not installed");
        return;
    }
    let s = serve(1024, &[]);
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Without `fork`: socat serves the first peer, our probe, alone. With it, a datagram that
    // reaches the parent before its first child has connected forks a second child, and the
    // server sees the flow in two halves from two source ports (the probe then rightly says
    // its split is not exact: `flows.disagree`).
    let _socat = Guard(
        std::process::Command::new("socat")
            .args([
                &format!("UDP-LISTEN:{port},bind=127.0.0.1,reuseaddr"),
                &format!("UDP:{}", s.tcp),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // socat binds as it starts: wait until its port is taken.
    let bound = serve_util::until(Duration::from_secs(5), || {
        std::net::UdpSocket::bind(("127.0.0.1", port)).is_err()
    });
    assert!(bound.is_some(), "socat did not bind");
    let target = format!("udp://127.0.0.1:{port}");
    let (code, _, d) = npt_json(
        &["probe", &target, "--pps", "500", "-n", "1000", "-q"],
        "probe",
    );
    assert_eq!(code, Some(0));
    let dirs = &d["summary"]["directions"];
    assert_eq!(dirs["exact"], true, "{dirs}");
    assert_eq!(
        (u(&d, "/summary/lost"), dirs["up"]["lost"].as_u64()),
        (0, Some(0))
    );
    assert_eq!(dirs["stamped"], 1000);
    let sum = f(&d, "/summary/directions/up/owd_ms/mean")
        + f(&d, "/summary/directions/down/owd_ms/mean")
        + f(&d, "/summary/directions/dwell_ms/mean");
    let rtt = f(&d, "/summary/rtt_ms/mean");
    assert!(
        (sum - rtt).abs() < 0.05 + rtt * 0.05,
        "owd up + down + dwell {sum} vs rtt {rtt}"
    );
}

/// `npt run`'s game drives the probe's session: a server whose per-source budget (10 packets
/// a second, explicit so it applies on loopback) is below the game's tick refuses most of its
/// packets, and the run counts them refused, not lost, with exit 3.
#[test]
fn the_run_game_counts_refusals_apart_from_loss() {
    let s = serve(1024, &["--source-pps", "10"]);
    let target = format!("tcp://{}", s.tcp);
    let (code, text, d) = npt_json(
        &[
            "run",
            &target,
            "--users",
            "2",
            "-d",
            "2s",
            "--mix",
            "game=1",
            "--game-length",
            "1s..1s",
            "--tick",
            "50..50",
            "--seed",
            "1",
            "-q",
        ],
        "run",
    );
    let g = &d["activities"]["game"]["game"];
    let refused = g["refused_by_server"].as_u64().unwrap();
    assert_eq!(code, Some(3), "{text}");
    assert!(refused > 0, "{g}");
    assert_eq!(g["lost"], 0, "{g}");
    assert_eq!(
        g["received"].as_u64().unwrap() + refused,
        g["sent"].as_u64().unwrap(),
        "{g}"
    );
    assert!(
        text.contains("refused") && text.contains("not path loss"),
        "{text}"
    );
}
