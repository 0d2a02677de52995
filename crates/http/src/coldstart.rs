//! `--cold-start CMD`: runs the command under test (`sh -c CMD`) in its own process group and
//! guarantees the whole group is gone when the run ends — normal end, error, Ctrl-C (the run
//! stops and returns) or a panic (the guard's `Drop`). Its output goes to /dev/null so it does
//! not interleave with the progress line.

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Error;

/// A spawned command and its process group; dropping it kills the group.
pub struct ProcessGroup {
    child: Child,
    pgid: i32,
    command: String,
}

impl ProcessGroup {
    pub fn spawn(command: &str) -> Result<ProcessGroup, Error> {
        let child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::ColdStart(format!("spawning `sh -c {command}`: {e}")))?;
        // NO-PANIC: Linux pids are below `pid_max` (at most 2^22), so they fit an i32.
        #[allow(clippy::cast_possible_wrap)]
        let pgid = child.id() as i32;
        Ok(ProcessGroup {
            child,
            pgid,
            command: command.to_string(),
        })
    }

    /// The process group id (= the pid of `sh`).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// `Some(description)` once the command has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(st)) => Some(format!("`{}` exited ({st})", self.command)),
            _ => None,
        }
    }

    /// SIGTERM to the group, up to `grace` for it to go, then SIGKILL; reaps `sh`.
    pub fn kill(&mut self, grace: Duration) {
        if self.pgid <= 0 {
            return;
        }
        // SAFETY: killpg only sends a signal; pgid is the group we created (> 0).
        unsafe { libc::killpg(self.pgid, libc::SIGTERM) };
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && group_alive(self.pgid) {
            let _ = self.child.try_wait();
            std::thread::sleep(Duration::from_millis(10));
        }
        if group_alive(self.pgid) {
            // SAFETY: as above.
            unsafe { libc::killpg(self.pgid, libc::SIGKILL) };
        }
        let _ = self.child.wait();
        self.pgid = 0;
    }
}

/// True while any live (non-zombie) process belongs to the group. Zombies are skipped: an
/// orphaned grandchild is reaped by PID 1, which in some containers never happens.
pub fn group_alive(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        // No procfs: fall back to signal 0, which also counts zombies.
        // SAFETY: signal 0 performs only the existence and permission check.
        return unsafe { libc::killpg(pgid, 0) == 0 };
    };
    dir.flatten().any(|e| {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // "pid (comm) state ppid pgrp ..."; comm may contain spaces, so split after ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return false;
        };
        let mut f = rest.split_whitespace();
        let state = f.next();
        let pgrp = f.nth(1).and_then(|p| p.parse::<i32>().ok());
        pgrp == Some(pgid) && state != Some("Z") && state != Some("X")
    })
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill(Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kills_the_whole_group() {
        // sh starts a grandchild that would outlive sh if only sh were killed.
        let mut g = ProcessGroup::spawn("sleep 30 & sleep 30; wait").unwrap();
        let pgid = g.pgid();
        let t = Instant::now();
        while !group_alive(pgid) && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(g.exited().is_none());
        drop(g);
        assert!(!group_alive(pgid), "no process of the group survives");
    }

    #[test]
    fn reports_exit() {
        let mut g = ProcessGroup::spawn("exit 3").unwrap();
        let t = Instant::now();
        let mut msg = None;
        while msg.is_none() && t.elapsed() < Duration::from_secs(5) {
            msg = g.exited();
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(msg.expect("sh exits").contains('3'));
    }
}
