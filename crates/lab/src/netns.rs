//! Network namespaces and their configuration, through iproute2's `ip` (and `ip -batch`).
//!
//! Why `ip` and not a netlink crate: a named namespace is more than a netlink object (`ip
//! netns add` bind-mounts it under /run/netns so other processes — `npt lab exec`, services,
//! `ip netns pids` — find it by name), iproute2 is the reference every reader of a lab log can
//! replay by hand, and one `ip -n NS -batch` per node keeps setup to a few process starts.
//! `rtnetlink` would need its own tokio runtime and the same bind-mount dance. What must happen
//! inside a namespace (opening a TUN device, sysctls, readiness checks) runs on a thread that
//! entered it with `setns` ([`in_netns`]), which changes only that thread.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

/// Why a namespace step failed: the command and what it printed.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error("`{cmd}` failed: {msg}")]
    Command { cmd: String, msg: String },
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> NetnsError {
    let what = what.into();
    move |source| NetnsError::Io { what, source }
}

/// Runs `ip ARGS…`, returning its stdout.
pub fn ip(args: &[&str]) -> Result<String, NetnsError> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(io_err("cannot run `ip` (is iproute2 installed?)"))?;
    if !out.status.success() {
        return Err(NetnsError::Command {
            cmd: format!("ip {}", args.join(" ")),
            msg: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs several `ip` commands inside `netns` in one process (`ip -n NS -batch -`).
pub fn ip_batch(netns: &str, lines: &[String]) -> Result<(), NetnsError> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut child = Command::new("ip")
        .args(["-n", netns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io_err("cannot run `ip` (is iproute2 installed?)"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let text = lines.join("\n") + "\n";
        stdin
            .write_all(text.as_bytes())
            .map_err(io_err("writing to `ip -batch`"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(io_err("waiting for `ip -batch`"))?;
    if !out.status.success() {
        return Err(NetnsError::Command {
            cmd: format!("ip -n {netns} -batch: {}", lines.join("; ")),
            msg: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// Named namespaces that exist now.
pub fn list() -> Result<Vec<String>, NetnsError> {
    let out = ip(&["netns", "list"])?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

pub fn add(name: &str) -> Result<(), NetnsError> {
    ip(&["netns", "add", name]).map(|_| ())
}

/// Processes living in `name` (for cleanup: services and anything `lab exec` left behind).
pub fn pids(name: &str) -> Vec<i32> {
    ip(&["netns", "pids", name])
        .map(|o| o.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kills every process in each of `names` first, then deletes them all. The order matters: a
/// process still alive in one namespace (anything started by `ip netns exec`, which gives it a
/// mount namespace of its own) holds copies of the other namespaces' mount points, and their
/// deletion fails with "Device or resource busy" — a lab left half up. A deletion that fails
/// anyway is tried again for up to a second. The errors that remain are returned.
pub fn delete_all(names: &[String]) -> Vec<NetnsError> {
    for _ in 0..50 {
        let pids: Vec<i32> = names.iter().flat_map(|n| pids(n)).collect();
        if pids.is_empty() {
            break;
        }
        for p in pids {
            // SAFETY: kill with a pid from `ip netns pids`; at worst it is already gone.
            unsafe {
                libc::kill(p, libc::SIGKILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut errors = Vec::new();
    for name in names {
        let mut last = None;
        for _ in 0..20 {
            match ip(&["netns", "del", name]) {
                Ok(_) => {
                    last = None;
                    break;
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        errors.extend(last);
    }
    errors
}

/// Runs `f` on a new thread that has entered namespace `name`; the calling thread's namespace
/// is untouched. Descriptors `f` opens (sockets, TUN devices) stay in that namespace.
pub fn in_netns<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, NetnsError> {
    let path = format!("/run/netns/{name}");
    let file = File::open(&path).map_err(io_err(format!("cannot open {path}")))?;
    let what = format!("in namespace {name}");
    std::thread::spawn(move || -> io::Result<T> {
        // SAFETY: setns on a namespace file we hold open; affects only this thread.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        f()
    })
    .join()
    .map_err(|_| NetnsError::Io {
        what: what.clone(),
        source: io::Error::other("thread panicked"),
    })?
    .map_err(io_err(what))
}

/// Writes a sysctl of the current thread's namespace (call inside [`in_netns`]).
pub fn sysctl(key: &str, value: &str) -> io::Result<()> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&path, value).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
}
