//! `--cold-start`: a real command (python3's http.server, started after a delay) is polled
//! until its first 2xx; ready time and first-request latency are reported, the warm run
//! follows, and the command's whole process group is gone afterwards — also when the command
//! dies early, never becomes ready, or the run is stopped (Ctrl-C).

#![cfg(test)]

use crate::common;

use npt_result::workload::Stop;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use npt_http::client::ColdStartConfig;
use npt_http::coldstart::group_alive;

/// `sh` writes its pid (= the process group id) to `pidfile`, waits, then runs the server.
fn server_command(pidfile: &std::path::Path, port: u16, delay: &str) -> String {
    format!(
        "echo $$ > {}; sleep {delay}; exec python3 -m http.server {port} --bind 127.0.0.1",
        pidfile.display()
    )
}

fn pgid(pidfile: &std::path::Path) -> i32 {
    std::fs::read_to_string(pidfile)
        .expect("the command wrote its pid")
        .trim()
        .parse()
        .unwrap()
}

fn cold_config(port: u16, command: String, ready: Duration) -> npt_http::Config {
    let mut c = config(&format!("http://127.0.0.1:{port}/"));
    c.connections = 2;
    c.cold_start = Some(ColdStartConfig {
        command,
        ready_timeout: ready,
        service: None,
    });
    c
}

#[test]
fn ready_time_then_warm_run_then_group_killed() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let port = free_port();
    let c = cold_config(
        port,
        server_command(&pidfile, port, "0.3"),
        Duration::from_secs(20),
    );
    let v = document(run(&c));
    assert_valid(&v);
    let cs = &v["cold_start"];
    let ready = cs["ready_ms"].as_f64().unwrap();
    assert!(
        ready >= 300.0,
        "not ready before the command's own sleep: {ready}"
    );
    let first = cs["first_request_ms"].as_f64().unwrap();
    assert!(first > 0.0 && first <= ready);
    assert!(
        cs["attempts"].as_u64().unwrap() >= 2,
        "refused while sleeping"
    );
    assert_eq!(cs["first_status"], 200);
    assert!(
        v["summary"]["requests"].as_u64().unwrap() > 0,
        "warm run follows"
    );
    assert!(
        !group_alive(pgid(&pidfile)),
        "process group killed at the end"
    );
}

#[test]
fn command_that_exits_fails_fast() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let port = free_port();
    let c = cold_config(port, "exit 3".into(), Duration::from_secs(20));
    let t = Instant::now();
    let e = npt_http::run(&c, &Arc::new(Stop::new()), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("exited"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn never_ready_times_out_and_kills_the_group() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let port = free_port();
    let cmd = format!("echo $$ > {}; sleep 60 & sleep 60", pidfile.display());
    let c = cold_config(port, cmd, Duration::from_millis(500));
    let t = Instant::now();
    let e = npt_http::run(&c, &Arc::new(Stop::new()), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("--ready-timeout"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(!group_alive(pgid(&pidfile)));
}

#[test]
fn stop_during_warm_run_kills_the_group() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let port = free_port();
    let mut c = cold_config(
        port,
        server_command(&pidfile, port, "0"),
        Duration::from_secs(20),
    );
    c.duration = Duration::from_secs(60);
    let stop = Arc::new(Stop::new());
    let s2 = stop.clone();
    let pf = pidfile.clone();
    std::thread::spawn(move || {
        // Stop once the warm phase is under way: the pid file exists and the port answers.
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if pf.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(500));
        s2.signal();
    });
    let r = npt_http::run(&c, &stop, &mut |_| {}).unwrap();
    assert_eq!(r.stopped_by.name(), "signal");
    assert!(r.body.cold_start.is_some());
    assert!(!group_alive(pgid(&pidfile)));
}

#[test]
fn stop_during_cold_start_kills_the_group() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let port = free_port();
    let cmd = format!("echo $$ > {}; sleep 60", pidfile.display());
    let c = cold_config(port, cmd, Duration::from_secs(30));
    let stop = Arc::new(Stop::new());
    let (s2, pf) = (stop.clone(), pidfile.clone());
    std::thread::spawn(move || {
        let t = Instant::now();
        while !pf.exists() && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
        s2.signal();
    });
    let t = Instant::now();
    let e = npt_http::run(&c, &stop, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("interrupted"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(!group_alive(pgid(&pidfile)));
}
