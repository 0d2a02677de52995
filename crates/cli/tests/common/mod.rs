//! Helpers for the binary's integration tests: start `npt serve` on port 0 and wait for its
//! ready line, run `npt` with a time bound; with what every crate's tests share (npt-testkit:
//! the kill-on-drop `Guard`, validation of result documents against the schema).
//!
//! Every test binary (`tests/AREA/main.rs`) includes this folder once, as `pub mod common`:
//! each binary uses a part of it, and `pub` tells the dead-code lint that the rest is there
//! for the other binaries rather than silencing it file-wide.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `npt` with its temporary files (a lab's service logs, a compare's result folder without
/// --out-dir, a result kept when its path failed) in [`scratch`] rather than the box's /tmp,
/// where a test run would otherwise leave them behind.
pub fn npt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_npt"));
    c.env("TMPDIR", scratch());
    c
}

/// Cargo's scratch folder for integration tests (`target/tmp`, kept with the build, cleaned by
/// `cargo clean`), one subfolder for what `npt` children write.
pub fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("npt-children");
    std::fs::create_dir_all(&d).expect("target/tmp is writable");
    d
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub mod lab;
pub mod monitor;
pub mod prometheus;
pub use npt_testkit::turn;

pub use turn::{turn, turn_alone, Turn};

pub use npt_testkit::{process::Guard, schema::assert_valid};

/// Starts `npt serve` on 127.0.0.1:0 and returns it with the bound address.
pub fn serve(extra: &[&str]) -> (Guard, SocketAddr) {
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("npt serve starts");
    let stdout = child.stdout.take().expect("piped");
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .next()
        .expect("a ready line")
        .expect("readable ready line");
    let addr = line
        .rsplit(' ')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"));
    (Guard(child), addr)
}

/// `npt serve --http 127.0.0.1:0`; returns the server and the HTTP address it printed.
pub fn serve_http() -> (Guard, String) {
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("npt serve starts");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    // Bounded: the server prints a handful of ready lines, then nothing until it stops.
    for line in BufReader::new(stdout).lines().take(8) {
        let Ok(line) = line else { break };
        if line.contains("listening on http") {
            let addr = line.rsplit(' ').next().unwrap_or_default().to_string();
            return (guard, addr);
        }
    }
    panic!("npt serve --http did not report its address");
}

/// `npt serve` with HTTPS and a QUIC port whose 0-RTT is `mode` (`accept`, `reject`, `off`),
/// for the setup tests: the server, its https and quic addresses, and its TCP+UDP one.
pub fn serve_setup(mode: &str) -> (Guard, String, String, String) {
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .args(["--tls", "--quic", "127.0.0.1:0", "--quic-0rtt", mode])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("npt serve starts");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    let (mut https, mut quic, mut tcp) = (None, None, None);
    // Bounded: the server prints a handful of ready lines, then nothing until it stops.
    for line in BufReader::new(stdout).lines().take(8) {
        let Ok(line) = line else { break };
        let addr = line.rsplit(' ').next().unwrap_or_default().to_string();
        if line.contains("listening on https") {
            https = Some(addr);
        } else if line.contains("listening on quic") {
            quic = Some(addr);
        } else if line.contains("listening on tcp+udp") {
            tcp = Some(addr);
        }
        if https.is_some() && quic.is_some() && tcp.is_some() {
            break;
        }
    }
    (
        guard,
        https.expect("https address"),
        quic.expect("quic address"),
        tcp.expect("tcp+udp address"),
    )
}

/// Runs `npt` with `args`, killing it after `limit`. Its output is read while it runs (a
/// child writing more than a pipe holds, 64 KiB, would otherwise wait for us forever).
pub fn run(args: &[&str], limit: Duration) -> Output {
    let mut child = npt()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("npt starts");
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!(
                "npt {args:?} did not finish within {limit:?}; stderr: {}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Writes `text` to `dir/name`; its path as a string, for a command line.
pub fn write_file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("result written");
    serde_json::from_str(&text).expect("result is JSON")
}

pub fn u(doc: &serde_json::Value, ptr: &str) -> u64 {
    doc.pointer(ptr)
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| panic!("{ptr} missing in result"))
}

pub fn f(doc: &serde_json::Value, ptr: &str) -> f64 {
    doc.pointer(ptr)
        .and_then(|v| v.as_f64())
        .unwrap_or_else(|| panic!("{ptr} missing in result"))
}

/// Starts `npt <args> --segment k/n --json <dir>/part<k>.json` for every k, all at once.
pub fn agents(args: &[String], n: u32, dir: &std::path::Path) -> Vec<serde_json::Value> {
    let children: Vec<(Guard, std::path::PathBuf)> = (0..n)
        .map(|k| {
            let out = dir.join(format!("part{k}.json"));
            let child: std::process::Child = npt()
                .args(args)
                .args(["--segment", &format!("{k}/{n}"), "-q", "--json"])
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (Guard(child), out)
        })
        .collect();
    children
        .into_iter()
        .map(|(mut g, out)| {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while g.0.try_wait().unwrap().is_none() {
                assert!(std::time::Instant::now() < deadline, "agent did not finish");
                std::thread::sleep(Duration::from_millis(20));
            }
            json(&out)
        })
        .collect()
}

/// stamp-suite (an independent STAMP implementation `./test.sh` installs with `cargo
/// install`) on PATH or in cargo's bin directory. Missing: as root (CI) the test fails — the
/// interoperability it checks must never pass unseen; otherwise it says SKIPPED and gets None.
pub fn stamp_suite(test: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(h) = std::env::var_os("CARGO_HOME") {
        dirs.push(Path::new(&h).join("bin"));
    }
    if let Some(h) = std::env::var_os("HOME") {
        dirs.push(Path::new(&h).join(".cargo/bin"));
    }
    let found = dirs
        .into_iter()
        .map(|d| d.join("stamp-suite"))
        .find(|p| p.is_file());
    if found.is_none() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            panic!("{test}: stamp-suite is not installed (`cargo install --locked stamp-suite --version 1.0.0`; ./test.sh installs it)");
        }
        eprintln!("SKIPPED: {test} needs stamp-suite (cargo install --locked stamp-suite)");
    }
    found
}

/// A plain echo on loopback (socat returning each datagram or each byte unchanged), as users
/// start one: `socat UDP-LISTEN:P,reuseaddr PIPE` (no `fork`: it serves the first peer, our
/// one flow) and `socat TCP-LISTEN:P,fork,reuseaddr PIPE`. Killed when dropped.
pub fn socat_echo(proto: &str) -> Option<(Guard, u16)> {
    if !npt_testkit::proxies::have("/usr/bin/socat") {
        return None;
    }
    let port = npt_testkit::process::free_port();
    let listen = match proto {
        "udp" => format!("UDP-LISTEN:{port},bind=127.0.0.1,reuseaddr"),
        _ => format!("TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr"),
    };
    let child = std::process::Command::new("/usr/bin/socat")
        .args([listen.as_str(), "PIPE"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut g = Guard(child);
    if proto == "udp" {
        // socat binds as it starts: wait until its port is taken.
        let bound = npt_testkit::process::until(Duration::from_secs(5), || {
            std::net::UdpSocket::bind(("127.0.0.1", port)).is_err()
        });
        assert!(bound.is_some(), "socat did not bind udp {port}");
    } else {
        npt_testkit::process::wait_listening(&mut g.0, port, Duration::from_secs(5));
    }
    Some((g, port))
}
