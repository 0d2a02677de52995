//! A running `npt monitor` for the tests: started on a config file, its stderr collected (so a
//! test waits for a line instead of sleeping), its listener's address read from its first
//! lines, its metrics scraped, its store read back through `npt-monitor` itself; signals sent
//! by pid; killed when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use npt_monitor::store::sqlite::Sqlite;
use npt_monitor::store::{RoundRow, Store};

pub struct Monitor {
    child: Option<Child>,
    lines: Arc<Mutex<Vec<String>>>,
    pub addr: Option<SocketAddr>,
    pub store: PathBuf,
    /// The network namespace it runs in (a lab node's), where its listener is reached.
    pub netns: Option<String>,
}

impl Monitor {
    /// `npt monitor CONFIG` (its `store` must be `store`); waits for its listener when the
    /// config has one.
    pub fn start(config: &Path, store: &Path, listens: bool) -> Monitor {
        Monitor::start_in(None, config, store, listens)
    }

    /// The same in the network namespace `netns` (`ip netns exec`, which becomes the monitor:
    /// signals reach it by this pid).
    pub fn start_in(netns: Option<&str>, config: &Path, store: &Path, listens: bool) -> Monitor {
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = std::process::Command::new("ip");
                c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_npt")]);
                c
            }
            None => super::npt(),
        };
        let mut child = cmd
            .arg("monitor")
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("npt monitor starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        let stderr = child.stderr.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                l.lock().unwrap().push(line);
            }
        });
        let mut m = Monitor {
            child: Some(child),
            lines,
            addr: None,
            store: store.to_path_buf(),
            netns: netns.map(str::to_string),
        };
        if listens {
            let line = m.wait_line("dashboard on http://", Duration::from_secs(30));
            let addr = line
                .split("dashboard on http://")
                .nth(1)
                .and_then(|r| r.split('/').next())
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("no address in {line:?}"));
            m.addr = Some(addr);
        } else {
            m.wait_line("targets, store", Duration::from_secs(30));
        }
        m
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.as_ref().expect("running").id()).unwrap()
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (bounded) for a stderr line containing `needle`; panics with what it said.
    pub fn wait_line(&mut self, needle: &str, limit: Duration) -> String {
        let start = Instant::now();
        loop {
            if let Some(l) = self.lines().into_iter().find(|l| l.contains(needle)) {
                return l;
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(s)) = c.try_wait() {
                    std::thread::sleep(Duration::from_millis(100));
                    panic!(
                        "npt monitor exited ({s}) before {needle:?}: {:#?}",
                        self.lines()
                    );
                }
            }
            assert!(
                start.elapsed() < limit,
                "no line with {needle:?} within {limit:?}: {:#?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// Ctrl-C, then waits for the exit; its status must be success.
    pub fn stop(&mut self) {
        self.signal(libc::SIGINT);
        let mut c = self.child.take().expect("running");
        let start = Instant::now();
        loop {
            if let Some(s) = c.try_wait().unwrap() {
                assert!(
                    s.success(),
                    "npt monitor exited with {s}: {:#?}",
                    self.lines()
                );
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "npt monitor did not stop: {:#?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL: no chance to write anything more.
    pub fn kill9(&mut self) {
        let mut c = self.child.take().expect("running");
        let _ = c.kill();
        let _ = c.wait();
    }

    /// GET `path` on the listener: (status code, body).
    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let addr = self.addr.expect("a listener");
        let path = path.to_string();
        in_netns(self.netns.as_deref(), move || get(addr, &path))
    }

    /// One series of the scrape (labels given as `k="v"` parts, all of which must be there).
    pub fn metric(&self, name: &str, labels: &[&str]) -> Option<f64> {
        let (status, body) = self.get("/metrics");
        assert_eq!(status, 200);
        let text = String::from_utf8(body).unwrap();
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
            .find(|l| labels.iter().all(|x| l.contains(x)))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    }

    /// `npt_monitor_rounds_total` of `target` by `status` (0 before the first).
    pub fn rounds_total(&self, target: &str, status: &str) -> f64 {
        self.metric(
            "npt_monitor_rounds_total",
            &[
                &format!("target=\"{target}\""),
                &format!("status=\"{status}\""),
            ],
        )
        .unwrap_or(0.0)
    }

    /// Waits (bounded) until `f` holds.
    pub fn until(&self, what: &str, limit: Duration, mut f: impl FnMut(&Monitor) -> bool) {
        let start = Instant::now();
        while !f(self) {
            assert!(
                start.elapsed() < limit,
                "{what}: not within {limit:?}; the monitor said {:#?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs `f` on a thread that has entered the network namespace `netns` (root only; a thread's
/// namespace is its own), or here without one. Sockets it opens stay in that namespace.
pub fn in_netns<T: Send + 'static>(
    netns: Option<&str>,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let Some(ns) = netns else {
        return f();
    };
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on this thread with a namespace file we hold open.
        let rc = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .expect("the thread in the namespace")
}

/// A webhook receiver (on loopback, in `netns` if given): each POST's head and its JSON body,
/// answered 200; it stops after 10 minutes or when the receiver is dropped.
pub fn webhook(
    netns: Option<&str>,
) -> (
    SocketAddr,
    std::sync::mpsc::Receiver<(String, serde_json::Value)>,
) {
    let (tx, rx) = std::sync::mpsc::channel();
    let (atx, arx) = std::sync::mpsc::channel();
    let ns = netns.map(str::to_string);
    std::thread::spawn(move || {
        in_netns(ns.as_deref(), move || {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            atx.send(l.local_addr().unwrap()).unwrap();
            l.set_nonblocking(true).unwrap();
            let end = Instant::now() + Duration::from_secs(600);
            while Instant::now() < end {
                let Ok((s, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut r = BufReader::new(s);
                let mut head = String::new();
                let mut len = 0;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; len];
                if r.read_exact(&mut body).is_err() {
                    continue;
                }
                let mut s = r.into_inner();
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
                let v = serde_json::from_slice(&body).unwrap_or_default();
                if tx.send((head, v)).is_err() {
                    return;
                }
            }
        })
    });
    let addr = arx
        .recv_timeout(Duration::from_secs(10))
        .expect("the receiver listens");
    (addr, rx)
}

/// A GET over HTTP/1.0: (status code, body).
pub fn get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let at = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&out[..at]).to_string();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, out[at + 4..].to_vec())
}

/// Every round of `target` in the store (read through a connection of its own).
pub fn rounds(store: &Path, target: &str) -> Vec<RoundRow> {
    let st = Sqlite::open_read(store).expect("the store opens");
    st.targets()
        .unwrap()
        .iter()
        .filter(|t| t.name == target)
        .flat_map(|t| st.rounds(t.id, i64::MIN, i64::MAX, true).unwrap())
        .collect()
}
