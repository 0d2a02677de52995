//! Why this exists: with 1,100 idle connections under a 1,024-file limit, `npt serve` used to
//! stop answering TCP and HTTP without a word (`--max-conns` defaulted to 65,536, accept's
//! EMFILE was retried silently, nothing ever timed out). These tests run the real binary under
//! a low `RLIMIT_NOFILE` (set in the child before exec) and check that excess connections are
//! refused and counted, idle ones time out, failed accepts are reported without spinning, a
//! `--max-conns` the limit cannot hold is refused, and a well-behaved client keeps getting
//! answers throughout.

#![cfg(test)]

use crate::common;
use crate::serve_util;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{npt, Guard};
use serve_util::{hold, http_ok, logged, open_fds, serve, set_nofile, tcp_echo_ok, until};

fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which ends with ')'): utime is the 12th, stime the 13th.
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let p = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    p(11) + p(12)
}

#[test]
fn idle_connections_beyond_the_file_limit_are_refused_or_timed_out_and_good_clients_answered() {
    let s = serve(
        1024,
        &[
            "--http",
            "127.0.0.1:0",
            "--idle-timeout",
            "3s",
            "--http-idle-timeout",
            "3s",
        ],
    );
    let http = s.http.expect("http address");
    assert!(tcp_echo_ok(s.tcp) && http_ok(http), "answers when quiet");
    let t0 = Instant::now();
    let idle_tcp = hold(s.tcp, 1100);
    let t1 = t0.elapsed();
    let idle_http = hold(http, 1100);
    eprintln!("held tcp in {t1:?}, http in {:?}", t0.elapsed() - t1);
    assert!(idle_tcp.len() + idle_http.len() >= 2100, "connections held");
    let fds = open_fds(s.pid());
    assert!(fds <= 1024, "within the limit: {fds}");
    // With the caps full, a good client is refused until idle ones time out: bounded wait.
    let t_tcp = until(Duration::from_secs(20), || tcp_echo_ok(s.tcp));
    let t_http = until(Duration::from_secs(20), || http_ok(http));
    assert!(t_tcp.is_some(), "tcp answered; stderr: {}", s.stderr());
    assert!(t_http.is_some(), "http answered; stderr: {}", s.stderr());
    eprintln!("answered again after tcp {t_tcp:?}, http {t_http:?}; fds at peak {fds}");
    // Every refusal and timeout is counted, and shows in the periodic line.
    let counted = until(Duration::from_secs(5), || {
        let e = s.stderr();
        logged(&e, "tcp refused:", "conns") >= 600
            && logged(&e, "http refused:", "conns") >= 600
            && logged(&e, "tcp refused:", "idle") >= 400
            && logged(&e, "http refused:", "idle") >= 400
    });
    let e = s.stderr();
    assert!(counted.is_some(), "refusals logged: {e}");
    assert_eq!(logged(&e, "tcp refused:", "accept-errors"), 0, "{e}");
    assert!(
        !e.contains("accept failed"),
        "caps kept accept from failing: {e}"
    );
    drop(idle_tcp);
    drop(idle_http);
}

#[test]
fn a_max_conns_the_file_limit_cannot_hold_is_a_usage_error() {
    let mut cmd = npt();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--max-conns", "5000"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    set_nofile(&mut cmd, 1024);
    let child = cmd.spawn().expect("npt starts");
    let mut g = Guard(child);
    let status = until(Duration::from_secs(10), || {
        g.0.try_wait().ok().flatten().is_some()
    });
    assert!(status.is_some(), "exits at once");
    let code = g.0.wait().unwrap().code();
    let mut err = String::new();
    g.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--max-conns") && err.contains("960"), "{err}");
}

#[test]
fn running_out_of_descriptors_on_accept_is_reported_and_does_not_spin() {
    let s = serve(1024, &["--http", "127.0.0.1:0", "--idle-timeout", "60s"]);
    let http = s.http.expect("http address");
    assert!(tcp_echo_ok(s.tcp) && http_ok(http));
    // Someone lowers the limit under the running server (or other files use it up): the
    // caps derived at start no longer protect accept.
    let low = libc::rlimit {
        rlim_cur: 128,
        rlim_max: 128,
    };
    // SAFETY: prlimit on our own child with a valid struct.
    let rc = unsafe { libc::prlimit(s.pid(), libc::RLIMIT_NOFILE, &low, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
    let mut held = hold(s.tcp, 300);
    held.extend(hold(http, 100));
    let reported = until(Duration::from_secs(10), || {
        let e = s.stderr();
        e.contains("tcp accept failed") && e.contains("http accept failed")
    });
    assert!(reported.is_some(), "EMFILE reported: {}", s.stderr());
    assert!(s.stderr().contains("out of file descriptors"));
    // Backing off, not spinning: under 30% of one core over two seconds.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let (t0, c0) = (Instant::now(), cpu_ticks(s.pid()));
    std::thread::sleep(Duration::from_secs(2));
    let cpu = (cpu_ticks(s.pid()) - c0) as f64 / hz / t0.elapsed().as_secs_f64();
    assert!(cpu < 0.3, "accept loops spin: {:.0}% cpu", cpu * 100.0);
    let lines = s.stderr().matches("accept failed").count();
    assert!(
        lines <= 4,
        "logged once per interval per listener, not per failure: {lines} lines"
    );
    // The held connections go away, descriptors come back, good clients are answered again.
    drop(held);
    let back = until(Duration::from_secs(10), || {
        tcp_echo_ok(s.tcp) && http_ok(http)
    });
    assert!(back.is_some(), "serving again; stderr: {}", s.stderr());
    let e = s.stderr();
    assert!(logged(&e, "tcp refused:", "accept-errors") > 0, "{e}");
    assert!(logged(&e, "http refused:", "accept-errors") > 0, "{e}");
    eprintln!("cpu while out of descriptors {:.1}%", cpu * 100.0);
    for l in e.lines().filter(|l| l.contains("accept failed")) {
        eprintln!("{l}");
    }
}
