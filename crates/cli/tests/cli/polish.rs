//! What a new user meets first: messages for bad flags and busy ports, completions, refusals
//! named as refusals, and files left behind. Each test here failed before its fix (the list of
//! small things found by trying npt as a new user would).

#![cfg(test)] // clippy.toml: test helpers count as tests

use crate::common;

use std::net::UdpSocket;
use std::time::Duration;

use common::{npt, run, serve, write_file};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn pps_out_of_range_says_what_is_allowed() {
    let out = run(
        &["probe", "udp://127.0.0.1:9", "--pps", "0"],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--pps 0: must be more than 0 and at most 10,000,000"),
        "{}",
        stderr(&out)
    );
    // A negative number is a value to judge, not an unknown flag.
    let out = run(
        &["probe", "udp://127.0.0.1:9", "--pps", "-5"],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--pps -5: must be more than 0"),
        "{}",
        stderr(&out)
    );
    let out = run(&["demo", "--pps", "-1"], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--pps -1: must be more than 0 and at most 1,000,000"));
}

/// The line tester printed that it had stopped sending and was waiting for replies; npt's
/// stage lines lag by up to the loss timeout and said nothing of it. A far end that never
/// answers keeps every packet in flight: the wait is said, how long and for how many, where
/// the stage lines go, before the report; and the stage line gives the mean delay (the line
/// tester's 延迟) beside p50 and p99.
#[test]
fn the_wait_for_the_last_replies_is_said() {
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = format!("udp://{}", silent.local_addr().unwrap());
    let args = [
        "probe",
        &target,
        "--pps",
        "100",
        "-n",
        "3",
        "--raw",
        "--loss-timeout",
        "1s",
    ];
    let out = run(&args, Duration::from_secs(30));
    assert_eq!(
        out.status.code(),
        Some(1),
        "nothing answered: {}",
        stderr(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let waiting: Vec<&str> = text.lines().filter(|l| l.starts_with("[waiting")).collect();
    assert_eq!(waiting.len(), 1, "said once: {text}");
    let w = waiting[0];
    assert!(
        w.contains("sending stopped (count): waiting up to 1000.0 ms (the loss timeout) for "),
        "{w}"
    );
    // What was in flight when sending stopped: every packet not yet past its loss timeout.
    let n: u64 = w
        .split(" for ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count in {w}"));
    assert!((1..=3).contains(&n), "{w}");
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {text}"))
    };
    assert!(at("[waiting") < at("packets    sent 3"), "{text}");
    assert!(text.contains("rtt mean "), "the stage line's mean: {text}");
    // Not with --quiet.
    let mut quiet = args.to_vec();
    quiet.push("-q");
    let out = run(&quiet, Duration::from_secs(30));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("[waiting"));
}

#[test]
fn a_busy_port_is_said_once() {
    let (_srv, addr) = serve(&[]);
    let out = run(
        &["serve", "--listen", &addr.to_string()],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(
        err.matches("Address already in use").count(),
        1,
        "the cause once: {err}"
    );
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
}

#[test]
fn a_rate_without_a_unit_is_refused() {
    let out = run(
        &["bulk", "udp://127.0.0.1:9", "--rate", "100", "-t", "1s"],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--rate 100: give a unit, e.g. 100mbit"),
        "{}",
        stderr(&out)
    );
    let out = run(
        &[
            "probe",
            "udp://127.0.0.1:9",
            "--under-load",
            "udp://127.0.0.1:9",
            "--load-rate",
            "20",
        ],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--load-rate 20: give a unit"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn completion_after_direction_offers_the_directions() {
    let out = npt().args(["completions", "bash"]).output().unwrap();
    let script = String::from_utf8(out.stdout).unwrap();
    for flag in ["--direction)", "--load-direction)"] {
        let at = script
            .find(flag)
            .unwrap_or_else(|| panic!("{flag} in the script"));
        let arm = &script[at..at + 120];
        assert!(arm.contains("compgen -W \"up down both\""), "{flag}: {arm}");
    }
}

#[test]
fn bulk_udp_to_a_closed_port_is_refused_at_once() {
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("b.json");
    let out = run(
        &[
            "bulk",
            &format!("udp://127.0.0.1:{port}"),
            "--rate",
            "1mbit",
            "-t",
            "5s",
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc = common::json(&json);
    let errors = doc.pointer("/errors/by_kind").unwrap().to_string();
    assert!(errors.contains("refused"), "{errors}");
    assert!(!errors.contains("timeout"), "{errors}");
    // Told by the first datagram's ICMP answer, not after --timeout (3 s) or the run (5 s).
    let elapsed = common::f(&doc, "/duration_s");
    assert!(elapsed < 1.0, "ran {elapsed} s");
}

#[test]
fn a_refused_scenario_file_leaves_no_directory_and_suggests_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_file(
        tmp.path(),
        "typo.toml",
        "[workload]\nkind = \"probe\"\nargs = [\"--duraton\", \"1s\"]\n\
         [[scenario]]\nname = \"a\"\ntarget = \"udp://127.0.0.1:9\"\n",
    );
    let out = npt()
        .args(["compare", &file])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a similar argument exists: '--duration'"),
        "{}",
        stderr(&out)
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "typo.toml")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
