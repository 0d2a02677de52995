//! Helpers for the tests that start `npt serve` under attack or limits: spawn it (optionally
//! under a low open-file limit) with its stderr captured, well-behaved TCP and HTTP clients,
//! the periodic log line's counters, and the server's descriptors and memory from /proc.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{npt, Guard};
use npt_wire::frame::{Header, Kind, HEADER_LEN};

/// A running `npt serve` with its addresses and everything it wrote to stderr so far.
pub struct Served {
    pub guard: Guard,
    pub tcp: SocketAddr,
    pub http: Option<SocketAddr>,
    pub quic: Option<SocketAddr>,
    pub stderr: Arc<Mutex<String>>,
}

impl Served {
    #[allow(clippy::cast_possible_wrap)] // pids are below 2^22
    pub fn pid(&self) -> i32 {
        self.guard.0.id() as i32
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

pub fn set_nofile(cmd: &mut std::process::Command, n: u64) {
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: n as libc::rlim_t,
                rlim_max: n as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Starts `npt serve --listen 127.0.0.1:0 ARGS` with at most `nofile` open files.
pub fn serve(nofile: u64, args: &[&str]) -> Served {
    let mut cmd = npt();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--log-every", "300ms"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    set_nofile(&mut cmd, nofile);
    let mut child: Child = cmd.spawn().expect("npt serve starts");
    let stdout = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let stderr = Arc::new(Mutex::new(String::new()));
    {
        let stderr = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = stderr.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
    }
    let (want_http, want_quic) = (args.contains(&"--http"), args.contains(&"--quic"));
    let (mut tcp, mut http, mut quic) = (None, None, None);
    // Bounded: a handful of ready lines.
    for line in BufReader::new(stdout).lines().take(8) {
        let line = line.expect("ready line");
        let addr: Option<SocketAddr> = line.rsplit(' ').next().and_then(|a| a.parse().ok());
        if line.contains("tcp+udp") {
            tcp = addr;
        } else if line.contains("listening on http") {
            http = addr;
        } else if line.contains("listening on quic") {
            quic = addr;
        }
        if tcp.is_some() && (http.is_some() || !want_http) && (quic.is_some() || !want_quic) {
            break;
        }
    }
    Served {
        guard: Guard(child),
        tcp: tcp.expect("tcp address printed"),
        http,
        quic,
        stderr,
    }
}

/// One framed echo on a fresh connection, everything within a second.
pub fn tcp_echo_ok(addr: SocketAddr) -> bool {
    let Ok(mut c) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = c.set_read_timeout(Some(Duration::from_secs(1)));
    let mut f = [0u8; 64];
    Header {
        kind: Kind::Echo,
        flags: 0,
        frame_len: 64,
        reply_len: 0,
        flow: 1,
        status: 0,
        seq: 9,
        send_ts: 1,
        token: 0,
    }
    .encode(&mut f)
    .unwrap();
    let mut back = [0u8; 64];
    c.write_all(&f).is_ok()
        && c.read_exact(&mut back).is_ok()
        && Header::decode(&back[..HEADER_LEN])
            .is_ok_and(|h| h.kind == Kind::EchoReply && h.seq == 9)
}

/// `GET /` on a fresh connection answered 200 within two seconds.
pub fn http_ok(addr: SocketAddr) -> bool {
    let Ok(mut c) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
    let req = "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let mut resp = String::new();
    c.write_all(req.as_bytes()).is_ok()
        && c.read_to_string(&mut resp).is_ok()
        && resp.starts_with("HTTP/1.1 200")
}

pub use npt_testkit::process::until;

/// Stops the server with SIGINT and returns its first exit summary line (`npt serve:
/// stopping; …`), waiting for it (bounded).
pub fn exit_summary(s: &Served) -> String {
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(s.pid(), libc::SIGINT) };
    let line = |e: &str| {
        e.lines()
            .find(|l| l.contains("stopping;"))
            .map(str::to_string)
    };
    assert!(until(Duration::from_secs(10), || line(&s.stderr()).is_some()).is_some());
    line(&s.stderr()).unwrap_or_default()
}

/// The value after `name` in the last periodic line's `section` (e.g. "tcp refused:").
pub fn logged(stderr: &str, section: &str, name: &str) -> u64 {
    let Some(line) = stderr.lines().rev().find(|l| l.contains(section)) else {
        return 0;
    };
    let rest = &line[line.find(section).unwrap_or(0) + section.len()..];
    let mut words = rest.split_whitespace();
    let mut prev = ";";
    while let Some(w) = words.next() {
        // The next section's label (`tcp refused:`, `hop agent:`; a word ending in `:` after a
        // word, not after a `;` as the hop agent's own `…; refused: target 1` is): the name is
        // not in this section (zero, so not named).
        if w.ends_with(':') && !prev.ends_with(';') {
            return 0;
        }
        prev = w;
        if w == name {
            return words
                .next()
                .and_then(|v| v.trim_end_matches(';').parse().ok())
                .unwrap_or(0);
        }
    }
    0
}

pub fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Opens up to `n` connections to `addr` and keeps them open without sending anything.
pub fn hold(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(3)).ok())
        .collect()
}

/// Closes with a RST instead of a FIN (SO_LINGER 0).
pub fn rst_close(c: TcpStream) {
    let _ = socket2::SockRef::from(&c).set_linger(Some(Duration::ZERO));
    drop(c);
}

/// The server's resident memory in KiB (VmRSS).
pub fn rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
