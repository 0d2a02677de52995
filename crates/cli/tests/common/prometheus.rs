//! A real Prometheus for the tests of `--metrics` and `npt monitor`: found on the PATH, started
//! on a free loopback port with a config that scrapes the given endpoints every second, waited
//! for until ready, queried through its HTTP API (bounded polls, never a fixed sleep).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Guard;

/// The `prometheus` binary, if installed.
pub fn binary() -> Option<String> {
    let found = Command::new("sh")
        .args(["-c", "command -v prometheus"])
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
    (found.status.success() && !path.is_empty()).then_some(path)
}

/// Starts `prometheus` scraping `targets` every second (its data in `dir`); returns it once it
/// is ready, with its address.
pub fn start(prometheus: &str, dir: &Path, targets: &[SocketAddr]) -> (Guard, SocketAddr) {
    let t: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
    start_in(prometheus, dir, &t, None, None)
}

/// The same in the network namespace `netns` (a lab node's), scraping with a bearer `token`.
pub fn start_in(
    prometheus: &str,
    dir: &Path,
    targets: &[String],
    netns: Option<&str>,
    token: Option<&str>,
) -> (Guard, SocketAddr) {
    let config = dir.join("prometheus.yml");
    write_config(&config, targets, token);
    let port = super::monitor::in_netns(netns, || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    });
    let prom: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, prometheus]);
            c
        }
        None => Command::new(prometheus),
    };
    let guard = Guard(
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    let start = Instant::now();
    let ns = netns.map(str::to_string);
    let ready = move || {
        let ns = ns.clone();
        super::monitor::in_netns(ns.as_deref(), move || get(prom, "/-/ready"))
            .is_some_and(|(s, _)| s.contains("200"))
    };
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "prometheus not ready"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (guard, prom)
}

/// A GET over plain HTTP/1.0: (status line, body).
pub fn get(addr: SocketAddr, path: &str) -> Option<(String, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

/// `/api/v1/query?query=EXPR` (any PromQL, percent-encoded here): each series' labels and value.
pub fn query(prom: SocketAddr, name: &str) -> Vec<(serde_json::Value, f64)> {
    query_in(prom, name, None)
}

/// The whole answer of `/api/v1/query` for `expr` (`status`, `error`, `data`).
pub fn answer(prom: SocketAddr, expr: &str, netns: Option<&str>) -> serde_json::Value {
    let enc: String = expr
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let path = format!("/api/v1/query?query={enc}");
    super::monitor::in_netns(netns, move || get(prom, &path))
        .and_then(|(_, body)| serde_json::from_str(&body).ok())
        .unwrap_or_default()
}

/// [`query`] of a Prometheus in the network namespace `netns`.
pub fn query_in(
    prom: SocketAddr,
    name: &str,
    netns: Option<&str>,
) -> Vec<(serde_json::Value, f64)> {
    let v = answer(prom, name, netns);
    if v["status"] != "success" {
        return Vec::new();
    }
    v["data"]["result"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|s| {
                    let value = s["value"][1].as_str()?.parse().ok()?;
                    Some((s["metric"].clone(), value))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Polls until `name`'s series whose labels match `want` has `value`; bounded by `limit`.
pub fn wait_for_value(
    prom: SocketAddr,
    name: &str,
    want: &[(&str, &str)],
    value: f64,
    limit: Duration,
) {
    let start = Instant::now();
    let mut last = Vec::new();
    while start.elapsed() < limit {
        last = query(prom, name);
        let hit = last.iter().any(|(labels, v)| {
            want.iter().all(|(k, w)| labels[*k] == *w) && (*v - value).abs() < 1e-9
        });
        if hit {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("{name}{want:?} never reached {value} in Prometheus; last answer: {last:?}");
}

fn write_config(path: &Path, targets: &[String], token: Option<&str>) {
    let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
    let auth = token.map_or(String::new(), |t| {
        format!("    authorization:\n      credentials: '{t}'\n")
    });
    std::fs::write(
        path,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: npt\n{auth}    static_configs:\n      - targets: [{}]\n",
            list.join(", ")
        ),
    )
    .unwrap();
}
