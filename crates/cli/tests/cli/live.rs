//! Why this exists: the live view is only seen on a real terminal. These tests run `npt probe`
//! (and run, http, bulk) inside tmux (`./test.sh` installs it), read the screen with `capture-pane`, press `q` with
//! `send-keys`, and check the run stopped and still wrote its full report — and that without a
//! terminal the plain stage lines are printed instead.

#![cfg(test)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// A tmux session killed when dropped.
struct Tmux(String);

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

fn have_tmux() -> bool {
    if Command::new("tmux").arg("-V").output().is_ok() {
        return true;
    }
    if std::env::var_os("NPT_SKIP_TMUX").is_some() {
        eprintln!("SKIPPED: tmux not installed and NPT_SKIP_TMUX is set");
        return false;
    }
    panic!("tmux is not installed (apt-get install tmux; ./test.sh does)");
}

fn screen(s: &Tmux) -> String {
    let out = Command::new("tmux")
        .args(["capture-pane", "-p", "-t", &s.0])
        .output()
        .expect("capture-pane");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Polls the screen (bounded) until it contains `what`.
fn wait_screen(s: &Tmux, what: &str, limit: Duration) -> String {
    let end = Instant::now() + limit;
    loop {
        let text = screen(s);
        if text.contains(what) {
            return text;
        }
        assert!(
            Instant::now() < end,
            "screen never showed {what:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `npt <args> --json FILE` in tmux, waits for the live view to show a rate, presses `q`,
/// and returns the result document and the screen after exit.
fn live_then_q(args: &str, rate: &str) -> (serde_json::Value, String) {
    live_then_q_exit(args, rate, 0)
}

/// [`live_then_q`], expecting exit code `code`.
fn live_then_q_exit(args: &str, rate: &str, code: u8) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("live.json");
    let name = format!("npt-live-{}-{}", std::process::id(), rate.len());
    let cmd = format!(
        "{} {args} --json {}; echo EXIT=$?; sleep 30",
        env!("CARGO_BIN_EXE_npt"),
        out.display()
    );
    let ok = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "100",
            "-y",
            "24",
            &cmd,
        ])
        .status()
        .expect("tmux starts");
    assert!(ok.success());
    let session = Tmux(name);
    let view = wait_screen(
        &session,
        "p50 latency per interval",
        Duration::from_secs(10),
    );
    assert!(view.contains("remaining"), "{view}");
    wait_screen(&session, rate, Duration::from_secs(10));
    let t = Instant::now();
    let ok = Command::new("tmux")
        .args(["send-keys", "-t", &session.0, "q"])
        .status()
        .unwrap();
    assert!(ok.success());
    let after = wait_screen(&session, &format!("EXIT={code}"), Duration::from_secs(10));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "q did not stop it promptly"
    );
    // The view is gone and the text report is on the normal screen.
    assert!(!after.contains("p50 latency per interval"), "{after}");
    (json(&out), after)
}

#[test]
fn q_stops_a_live_probe_and_the_report_is_still_written() {
    if !have_tmux() {
        return;
    }
    let (_srv, addr) = serve(&[]);
    let args =
        format!("probe udp://{addr} --pps 1000 -d 60s --report-every 200ms --loss-timeout 200ms");
    let (d, screen) = live_then_q(&args, "rate 1000 pps");
    assert!(screen.contains("stopped by signal"), "{screen}");
    assert_valid(&d, "probe");
    assert_eq!(d["stopped_by"], "signal");
}

/// A server whose budget refuses most packets: the view says so beside the loss (which is
/// the path's, none here), and the run ends with exit 3.
#[test]
fn the_live_probe_shows_what_the_server_refused() {
    if !have_tmux() {
        return;
    }
    let (_srv, addr) = serve(&["--limit-local"]);
    let args =
        format!("probe udp://{addr} --pps 1000 -d 60s --report-every 200ms --loss-timeout 200ms");
    let (d, _) = live_then_q_exit(&args, "refused by the server", 3);
    assert_valid(&d, "probe");
    assert!(d["summary"]["refused_by_server"].as_u64().unwrap() > 0);
    assert_eq!(d["summary"]["lost"], 0);
}

#[test]
fn q_stops_live_run_and_http_views_too() {
    if !have_tmux() {
        return;
    }
    let (_srv, addr) = serve(&[]);
    let (d, _) = live_then_q(
        &format!("run tcp://{addr} --users 5 -d 60s --mix web=100"),
        "req/s",
    );
    assert_valid(&d, "run");
    assert!(d["summary"]["requests"].as_u64().unwrap() > 0);
    assert!(d["duration_s"].as_f64().unwrap() < 30.0, "stopped early");
    let (_h, http) = serve_http();
    let (d, _) = live_then_q(&format!("http http://{http}/ -c 2 -d 60s"), "req/s");
    assert_valid(&d, "http");
    assert_eq!(d["stopped_by"], "signal");
}

#[test]
fn q_stops_a_live_bulk_and_its_view_shows_goodput() {
    if !have_tmux() {
        return;
    }
    let (_srv, addr) = serve(&[]);
    let (d, screen) = live_then_q(&format!("bulk tcp://{addr} -t 60s -i 200ms"), "Mbit/s");
    assert!(screen.contains("stopped by signal"), "{screen}");
    assert_valid(&d, "bulk");
    assert_eq!(d["stopped_by"], "signal");
    assert!(d["summary"]["goodput_mbps"].as_f64().unwrap() > 0.0);
}

#[test]
fn without_a_terminal_the_stage_lines_are_printed() {
    let (_srv, addr) = serve(&[]);
    let out = run(
        &[
            "probe",
            &format!("udp://{addr}"),
            "--pps",
            "200",
            "-d",
            "1s",
            "--report-every",
            "500ms",
        ],
        Duration::from_secs(20),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.starts_with("[stage")), "{text}");
    assert!(
        !text.contains("\u{1b}[?1049h"),
        "no alternate screen in a pipe"
    );
}
