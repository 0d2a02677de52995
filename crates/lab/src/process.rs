//! The processes a lab runs on its nodes: commands in a node's namespace with the lab named in
//! their environment (`lab exec`, services, scenarios), whether a service is ready (its TCP port
//! answers, its UDP port is bound), and stopping them (a service's process group, or a pid from
//! the lab's own pid file). Apart from [`crate::runtime`], which decides when each runs.

use std::fs::File;
use std::io::Read;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::netns;
use crate::topology::Ready;

/// Set to the lab's name in the environment of every command `npt lab` runs on a node
/// (`lab exec`, services, scenarios): the nodes are namespaces of one machine and read one
/// clock, so an npt probe in a lab reports one-way delay (docs/measurement.md).
pub const LAB_ENV: &str = "NPT_LAB";

/// `argv` in namespace `netns` of lab `lab`, with a leading `npt` replaced by `npt_exe`.
pub fn exec_command(lab: &str, netns: &str, argv: &[String], npt_exe: &Path) -> Command {
    let mut cmd = Command::new("ip");
    cmd.env(LAB_ENV, lab);
    cmd.args(["netns", "exec", netns]);
    match argv.split_first() {
        Some((first, rest)) if first == "npt" => {
            cmd.arg(npt_exe).args(rest);
        }
        _ => {
            cmd.args(argv);
        }
    }
    cmd
}

/// SIGTERM to the service's process group, then SIGKILL after 2 s.
pub(crate) fn stop_group(child: &mut Child) {
    // NO-PANIC: Linux pids are below `pid_max` (at most 2^22), so they fit an i32.
    #[allow(clippy::cast_possible_wrap)]
    let pgid = child.id() as i32;
    // SAFETY: signalling a process group we created (process_group(0) at spawn).
    unsafe {
        libc::kill(-pgid, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: as above; the group may already be gone.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
}

pub(crate) fn is_ready(netns: &str, ready: &Ready) -> bool {
    match *ready {
        Ready::Tcp(addr) => netns::in_netns(netns, move || {
            TcpStream::connect_timeout(&std::net::SocketAddr::V4(addr), Duration::from_millis(200))
                .map(|_| ())
        })
        .is_ok(),
        Ready::Udp(port) => netns::in_netns(netns, move || {
            let mut text = String::new();
            File::open("/proc/thread-self/net/udp")?.read_to_string(&mut text)?;
            Ok(udp_bound(&text, port))
        })
        .unwrap_or(false),
    }
}

/// Whether /proc/net/udp lists a socket bound to `port` (its local_address column, hex).
fn udp_bound(table: &str, port: u16) -> bool {
    let want = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .any(|local| local.ends_with(&want))
}

pub(crate) fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let last = lines
        .get(lines.len().saturating_sub(10)..)
        .unwrap_or_default();
    last.join("\n")
}

/// Sends SIGTERM to `pid` and waits (up to `within`) until it is gone. True if it was alive.
pub fn terminate(pid: i32, within: Duration) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    // SAFETY: signalling a pid the caller read from the lab's own pid file.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + within;
    // SAFETY: as above.
    while Instant::now() < deadline && unsafe { libc::kill(pid, 0) } == 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_table_port_match() {
        let t = "  sl  local_address rem_address   st\n   0: 00000000:1E61 00000000:0000 07\n";
        assert!(udp_bound(t, 7777));
        assert!(!udp_bound(t, 7778));
    }

    #[test]
    fn npt_is_replaced_by_the_binary() {
        let c = exec_command(
            "l",
            "ns1",
            &["npt".into(), "serve".into()],
            Path::new("/x/npt"),
        );
        let args: Vec<_> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args, ["netns", "exec", "ns1", "/x/npt", "serve"]);
        let lab = c
            .get_envs()
            .find(|(k, _)| *k == LAB_ENV)
            .and_then(|(_, v)| v);
        assert_eq!(lab, Some(std::ffi::OsStr::new("l")), "the lab says so");
        let c = exec_command("l", "ns1", &["socat".into()], Path::new("/x/npt"));
        assert_eq!(c.get_args().last().unwrap(), "socat");
    }
}
