//! Why this exists: the UDP probe's receive path — the receive stamp (the read time by default,
//! the kernel's with `--rx-stamp kernel`), batches that leave in one GSO send, the busy-wait
//! option (`--spin`) — must not change what a figure means: every packet still counted, the
//! default RTT still ending when the tester read the reply. Real binary, real loopback sockets
//! on port 0.

#![cfg(test)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

const LIMIT: Duration = Duration::from_secs(60);

/// Runs a relay probe, stops the whole process (SIGSTOP) for `STALL` once it has printed a
/// stage line, lets it go on (three times), and returns its result. Each stall holds a window
/// in flight: the server (`server`, its pid) is stopped first for `HOLD`, so the probe's 64
/// relay packets wait unanswered; then the probe is stopped and the server let go, and the
/// window's replies arrive while the tester is stopped and wait in its socket. (Stopping the
/// probe alone at a random moment often found nothing in flight: it had read a window's replies
/// and not yet sent the next — three times in a row once, in a debug build beside other
/// tests.) A stage line is final
/// (printed) one loss timeout after its end, so the first one shows up after about 3 s; the
/// loss timeout outlasts the stall, so nothing in flight is declared lost. `stamp`: the
/// `--rx-stamp` value, or `None` for the default.
fn stalled_probe(
    addr: std::net::SocketAddr,
    server: u32,
    stamp: Option<&str>,
) -> serde_json::Value {
    const STALL: Duration = Duration::from_millis(1000);
    const HOLD: Duration = Duration::from_millis(100);
    const STALLS: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let target = format!("udp://{addr}");
    let stamp_args = match stamp {
        Some(s) => vec!["--rx-stamp", s],
        None => vec![],
    };
    let child = npt()
        .args([
            "probe",
            &target,
            "--mode",
            "relay",
            "--warmup",
            "64",
            "--warmup-interval",
            "1ms",
            "-d",
            "10s",
            "--loss-timeout",
            "3s",
            "--report-every",
            "200ms",
            "--json",
            out.to_str().unwrap(),
        ])
        .args(&stamp_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut guard = Guard(child);
    let stdout = guard.0.stdout.take().unwrap();
    // Bounded: a stage line every 200 ms; the first one means packets are in flight.
    let mut lines = BufReader::new(stdout).lines();
    let mut next_stage = || {
        lines
            .by_ref()
            .take(50)
            .map_while(Result::ok)
            .any(|l| l.contains("[stage"))
    };
    assert!(next_stage(), "the probe never printed a stage line");
    let (pid, server) = (guard.0.id().to_string(), server.to_string());
    let signal = |s: &str, pid: &str| {
        let ok = std::process::Command::new("kill")
            .args([s, pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {s} {pid}");
    };
    // Three stalls, a stage line apart.
    for _ in 0..STALLS {
        signal("-STOP", &server);
        std::thread::sleep(HOLD);
        signal("-STOP", &pid);
        signal("-CONT", &server);
        std::thread::sleep(STALL);
        signal("-CONT", &pid);
        assert!(
            next_stage(),
            "the probe printed no stage line after a stall"
        );
    }
    // Drain stdout so the probe never blocks on a full pipe, then wait (bounded).
    std::thread::spawn(move || lines.for_each(drop));
    let start = Instant::now();
    while guard.0.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < LIMIT, "the probe did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let d = json(&out);
    assert_valid(&d, "probe");
    assert_eq!(d["config"]["rx_stamp"], stamp.unwrap_or("user"));
    assert_eq!(
        u(&d, "/summary/lost"),
        0,
        "a 3 s loss timeout outlasts the stall"
    );
    d
}

/// By default a reply's RTT ends when the tester read it (the RTT at the application): a
/// tester that was not running (stopped here, descheduled on a busy machine) reports its own
/// wait. With `--rx-stamp kernel` the kernel stamps a reply when it arrives, and the same
/// stall stays out of the RTT.
#[test]
fn the_default_stamp_is_the_read_and_kernel_stamps_keep_a_stall_out() {
    let (srv, addr) = serve(&[]);
    let kernel = stalled_probe(addr, srv.0.id(), Some("kernel"));
    let user = stalled_probe(addr, srv.0.id(), None);
    let umax = f(&user, "/summary/rtt_ms/max");
    assert!(
        umax >= 900.0,
        "replies read after a 1 s stall, stamped after the read (the default): {umax} ms"
    );
    // Kernel stamps keep the replies that waited in the socket out of the stall; the server's
    // HOLD stays in theirs (at most one window, 64, per stall: 192 of over 64,000 packets read
    // about 100 ms). What they cannot keep out: packets the tester stamped just before it was
    // stopped and sent after (far under 0.1 %), so the kernel-stamped p99.9 is the figure held,
    // not its maximum.
    let (kmax, kp999) = (
        f(&kernel, "/summary/rtt_ms/max"),
        f(&kernel, "/summary/rtt_ms/p999"),
    );
    let ksent = u(&kernel, "/summary/sent");
    assert!(
        ksent >= 64_000,
        "enough packets for a p99.9 past one window: {ksent}"
    );
    assert!(
        kp999 < 500.0,
        "the same replies stamped by the kernel on arrival: p99.9 {kp999} ms, max {kmax} ms \
         (user stamps: max {umax} ms)"
    );
}

/// Runs `npt probe udp://addr FLAGS -q --json …` to success and returns its result.
fn probe_ok(addr: std::net::SocketAddr, flags: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let target = format!("udp://{addr}");
    let tail = ["-q", "--json", out.to_str().unwrap()];
    let o = run(
        &[&["probe", target.as_str()][..], flags, &tail].concat(),
        LIMIT,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    json(&out)
}

/// A relay probe at full speed sends its batches as GSO sends: every packet still leaves with
/// its own sequence number and stamp, and every echo comes back intact.
#[test]
fn a_full_speed_relay_in_gso_batches_loses_and_corrupts_nothing() {
    let (_srv, addr) = serve(&[]);
    let flags = [
        "--mode",
        "relay",
        "--warmup",
        "256",
        "-n",
        "100000",
        "--verify",
        "--loss-timeout",
        "5s",
    ];
    let d = probe_ok(addr, &flags);
    assert_eq!(u(&d, "/summary/sent"), 100_000);
    assert_eq!(u(&d, "/summary/received"), 100_000);
    assert_eq!(u(&d, "/summary/corrupt"), 0);
    assert_eq!(u(&d, "/summary/duplicated"), 0);
}

/// `--spin` waits without sleeping and still keeps the schedule's count and every reply; a TCP
/// probe refuses it and the kernel stamp (exit 2, naming the flag).
#[test]
fn spin_runs_a_udp_probe_and_tcp_refuses_the_udp_only_flags() {
    let (_srv, addr) = serve(&[]);
    let d = probe_ok(addr, &["--pps", "2000", "-n", "1000", "--spin"]);
    assert_eq!(d["config"]["spin"], true);
    assert_eq!(
        d["config"]["rx_stamp"], "user",
        "the read time is the default"
    );
    assert_eq!(u(&d, "/summary/sent"), 1000);
    assert_eq!(u(&d, "/summary/received") + u(&d, "/summary/lost"), 1000);
    let tcp = format!("tcp://{addr}");
    for flag in [&["--spin"][..], &["--rx-stamp", "kernel"][..]] {
        let o = run(
            &[&["probe", tcp.as_str(), "-n", "1"][..], flag].concat(),
            LIMIT,
        );
        assert_eq!(o.status.code(), Some(2), "{flag:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag[0]), "{flag:?}: {err}");
    }
}
