//! `npt http` and `npt serve --http` as a user calls them: bad URLs and conflicting flags exit 2
//! naming the flag; `--cold-start` runs `npt serve --http` itself, reports its ready time, then
//! the warm run, and writes a schema-valid document; Ctrl-C still writes the report; each
//! `--host NAME=N` is loaded on connections of its own, so its rate answers to its own backend.

#![cfg(test)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npt_testkit::process::free_port;
use npt_testkit::schema::assert_valid;

fn npt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_npt"))
}

fn validate(doc: &serde_json::Value) {
    assert_valid(doc, "http");
}

#[test]
fn bad_input_exits_2_and_names_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["ftp://127.0.0.1/"], "scheme"),
        (&["127.0.0.1:80"], "URL"),
        (&["http://127.0.0.1:9/", "--streams", "4"], "--http2"),
        (
            &[
                "http://127.0.0.1:9/",
                "--http2",
                "--new-conn",
                "--streams",
                "2",
            ],
            "--new-conn",
        ),
        (&["http://127.0.0.1:9/", "--rate", "0"], "--rate"),
        (&["http://127.0.0.1:9/", "-H", "no colon"], "-H"),
        (&["http://127.0.0.1:9/", "--host", "a=0"], "--host"),
        (
            &["http://127.0.0.1:9/", "--host", "a=5", "--host", "b"],
            "--host",
        ),
        (
            &["http://127.0.0.1:9/", "--ready-timeout", "1s"],
            "--cold-start",
        ),
        (
            &[
                "http://127.0.0.1:9/",
                "--body",
                "a",
                "--body-file",
                "/etc/hostname",
            ],
            "--body",
        ),
    ];
    for (args, needle) in cases {
        let out = npt().arg("http").args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    for bad in ["slow.test", "slow.test=fast", "=5ms", "slow.test=601s"] {
        let out = npt()
            .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
            .args(["--http-delay", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("--http-delay"), "{bad}: {err}");
    }
}

#[test]
fn cold_start_of_npt_serve_then_warm_run() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cmd = format!(
        "exec {} serve --listen 127.0.0.1:0 --http 127.0.0.1:{port}",
        env!("CARGO_BIN_EXE_npt")
    );
    let out = npt()
        .args([
            "http",
            &format!("http://127.0.0.1:{port}/"),
            "-c",
            "2",
            "-d",
            "1s",
        ])
        .args(["--cold-start", &cmd, "--ready-timeout", "20s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("cold start  ready after"), "{text}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    validate(&doc);
    assert!(doc["cold_start"]["ready_ms"].as_f64().unwrap() > 0.0);
    assert!(doc["summary"]["requests"].as_u64().unwrap() > 0);
    // The spawned server is gone: its port refuses.
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "cold-started server still answers"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_still_writes_the_report() {
    let (srv, addr) = common::serve_http();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = npt()
        .args([
            "http",
            &format!("http://{addr}/"),
            "-c",
            "2",
            "-d",
            "60s",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The handler is installed right after flag parsing; give the run a moment to start.
    std::thread::sleep(Duration::from_millis(700));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "npt http did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(srv);
    assert_eq!(status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    validate(&doc);
    assert_eq!(doc["stopped_by"], "signal");
    assert!(doc["summary"]["requests"].as_u64().unwrap() > 0);
}

#[test]
fn requests_cut_off_by_the_end_are_reported_not_hidden() {
    // Accepts and never answers (nor closes), for a bounded time.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let held: Vec<_> = l.incoming().take(8).filter_map(Result::ok).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(held);
    });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cut.json");
    let out = npt()
        .args([
            "http",
            &format!("http://{addr}/"),
            "-c",
            "3",
            "-d",
            "1s",
            "--timeout",
            "10s",
        ])
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    validate(&doc);
    assert_eq!(doc["summary"]["in_flight_at_end"], 3, "{}", doc["summary"]);
    assert!(doc["summary"]["oldest_in_flight_ms"].as_f64().unwrap() > 500.0);
    // Requests started count as attempts, answered or not.
    assert_eq!(doc["errors"]["attempts"], 3, "{}", doc["errors"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("in flight   3 at the end"), "{text}");
    assert_eq!(out.status.code(), Some(1), "nothing completed");
}

/// `npt serve --http 127.0.0.1:0` with `extra` flags; the server and its HTTP address.
pub(crate) fn serve_http_with(extra: &[&str]) -> (common::Guard, String) {
    let mut child = npt()
        .args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let guard = common::Guard(child);
    for line in BufReader::new(stdout).lines().take(8) {
        let Ok(line) = line else { break };
        if line.contains("listening on http") {
            return (guard, line.rsplit(' ').next().unwrap().to_string());
        }
    }
    panic!("npt serve --http did not report its address");
}

/// The gateway benchmark gave each service 50 clients of its own and read each one's QPS.
/// Two backends of known delay behind one port (`--http-delay`), each host on connections of
/// its own: each host's rate is its own connections over its own mean latency (Little's law),
/// so the slow one reads a lower rate — where round-robin over shared connections gave both
/// the same rate.
#[test]
fn per_host_connections_give_each_host_its_own_rate() {
    let (srv, addr) = serve_http_with(&[
        "--http-delay",
        "fast.test=5ms",
        "--http-delay",
        "slow.test=20ms",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hosts.json");
    let out = npt()
        .args(["http", &format!("http://{addr}/"), "-d", "2s"])
        .args(["--host", "fast.test=4", "--host", "slow.test=6", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    drop(srv);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("each on connections of its own"), "{text}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    validate(&doc);
    assert_eq!(doc["summary"]["connections"], 10);
    let mut rps = Vec::new();
    for (host, conns, delay_ms) in [("fast.test", 4.0, 5.0), ("slow.test", 6.0, 20.0)] {
        let h = &doc["hosts"][host];
        assert_eq!(h["connections"].as_f64(), Some(conns), "{h}");
        let mean_s = h["latency_ms"]["mean"].as_f64().unwrap() / 1e3;
        assert!(
            mean_s * 1e3 >= delay_ms,
            "{host}: the backend's delay is in the latency: {h}"
        );
        let little = conns / mean_s;
        let got = h["rps"].as_f64().unwrap();
        assert!(
            (got - little).abs() <= 0.05 * little,
            "{host}: {got:.1} req/s, Little's law says {little:.1} ({conns} conns / {mean_s} s)"
        );
        rps.push(got);
    }
    assert!(rps[0] > rps[1], "the faster backend serves more: {rps:?}");
}

/// A tiny HTTP/1.1-only server, as nginx without `http2 on` answers: `200 ok` with keep-alive
/// to requests, `400 Bad Request` and close to the h2c preface (`PRI * HTTP/2.0`). Serves
/// `conns` connections, then stops.
fn h1_only_server(conns: usize) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().take(conns) {
            let Ok(mut s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = s.read(&mut chunk) {
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        if buf.starts_with(b"PRI ") {
                            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                            return;
                        }
                        buf.drain(..end + 4);
                        if s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nok\n")
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// `--http2` against servers without HTTP/2 — the cleartext h2c preface answered by an
/// HTTP/1.1 400 or closed, TLS where ALPN chose http/1.1 — fails once, in one line, exit 1
/// (it made thousands of connections, each an error); `--http2-fallback` runs HTTP/1.1 and the
/// result says so and why; against a server with h2 it runs h2.
#[test]
fn http2_is_negotiated_and_falls_back_only_when_asked() {
    let (h1, h1_addr) = serve_http_with(&["--http1-only"]);
    let (h1_tls, h1_tls_addr) = serve_http_with(&["--http1-only", "--tls"]);
    let (h2, h2_addr) = serve_http_with(&[]);
    let (h2_tls, h2_tls_addr) = serve_http_with(&["--tls"]);
    let tiny = h1_only_server(8);
    let dir = tempfile::tempdir().unwrap();
    let run = |url: &str, mode: &str| {
        let json = dir.path().join("r.json");
        let _ = std::fs::remove_file(&json);
        let t = Instant::now();
        let out = npt()
            .args(["http", url, "-k", mode, "-c", "2", "-d", "500ms", "--json"])
            .arg(&json)
            .output()
            .unwrap();
        let doc = std::fs::read(&json)
            .ok()
            .map(|b| serde_json::from_slice::<serde_json::Value>(&b).unwrap());
        (out, doc, t.elapsed())
    };
    let refusing = [
        (
            format!("http://{h1_addr}/"),
            "closed the connection on the h2c preface",
        ),
        (format!("https://{h1_tls_addr}/"), "TLS ALPN chose http/1.1"),
        (
            format!("http://{tiny}/"),
            "answered by HTTP/1.x (\"HTTP/1.1 400 Bad Request\")",
        ),
    ];
    for (url, why) in &refusing {
        let (out, _, took) = run(url, "--http2");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{url}: {err}");
        assert!(
            err.contains("does not speak HTTP/2") && err.contains(why),
            "{url}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{url}: one line: {err}");
        assert!(
            took < Duration::from_secs(5),
            "{url}: failed at once, not after the run"
        );
        let (out, doc, _) = run(url, "--http2-fallback");
        let doc = doc.unwrap_or_else(|| panic!("{url}: {}", String::from_utf8_lossy(&out.stderr)));
        validate(&doc);
        let s = &doc["summary"];
        assert_eq!(out.status.code(), Some(0), "{url}: {s}");
        assert_eq!(s["protocol"], "http/1.1", "{url}: {s}");
        assert!(s["downgrade"].as_str().unwrap().contains(why), "{url}: {s}");
        assert!(
            s["requests"].as_u64().unwrap() > 0 && s["errors"] == 0,
            "{url}: {s}"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("protocol    http/1.1 (fell back from h2: "),
            "{text}"
        );
    }
    for url in [
        format!("http://{h2_addr}/"),
        format!("https://{h2_tls_addr}/"),
    ] {
        let (out, doc, _) = run(&url, "--http2-fallback");
        let s = &doc.unwrap()["summary"];
        assert_eq!(out.status.code(), Some(0), "{url}: {s}");
        assert_eq!(s["protocol"], "h2", "{url}: {s}");
        assert!(s.get("downgrade").is_none(), "{url}: {s}");
        assert_eq!(s["errors"], 0, "{url}: {s}");
    }
    drop((h1, h1_tls, h2, h2_tls));
}

/// A service that starts listening `LISTEN` s after it starts and answers 200 (503 before)
/// `READY` s after that; with a gateway port, also a stand-in gateway, listening at once, that
/// answers 502 until the service has answered 200 for `GATEWAY` s (as a gateway that checks
/// its backend's health would). Writes what it did, on its own clocks, to OUT: when it
/// listened counted from its own exec (`/proc/self/stat` start time, 10 ms ticks), its first
/// 200 and the gateway's first 200 (monotonic).
const COLD_SERVICE: &str = r#"
import json, os, socket, sys, threading, time
port, listen_s, ready_s, out = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
gw_port, gw_s = (int(sys.argv[5]), float(sys.argv[6])) if len(sys.argv) > 6 else (None, 0.0)
seen = {}
lock = threading.Lock()
def note(k, v):
    with lock:
        if k not in seen:
            seen[k] = v
            with open(out + ".tmp", "w") as f:
                json.dump(seen, f)
            os.replace(out + ".tmp", out)
def since_exec():
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start / os.sysconf("SC_CLK_TCK")
def serve(sock, answer):
    def one(c):
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(4096)
            if not d:
                return c.close()
            buf += d
        code = answer(time.monotonic())
        c.sendall(b"HTTP/1.1 %d X\r\ncontent-length: 3\r\nconnection: close\r\n\r\nok\n" % code)
        c.close()
    while True:
        c, _ = sock.accept()
        threading.Thread(target=one, args=(c,), daemon=True).start()
def listen(p):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", p))
    s.listen(128)
    return s
def gateway(now):
    ok = seen.get("first_ok")
    if ok is None or now < ok + gw_s:
        return 502
    note("gateway_first_ok", now)
    return 200
if gw_port:
    threading.Thread(target=serve, args=(listen(gw_port), gateway), daemon=True).start()
time.sleep(listen_s)
s = listen(port)
t_listen = time.monotonic()
note("listen_since_exec", since_exec())
note("listen", t_listen)
def service(now):
    if now < t_listen + ready_s:
        return 503
    note("first_ok", now)
    return 200
serve(s, service)
"#;

/// The gateway benchmark split its cold start (201 ms = 25 gateway + 176 service). A service
/// of known delays (listening 300 ms after its start, answering 200 ms after that) is read
/// back as start → listening and listening → first good response, each held to what the
/// service itself recorded; behind a stand-in gateway that answers 150 ms after the service
/// does, `--cold-start-port` adds the service's own ready time and the gateway's part.
#[test]
fn cold_start_is_split_at_listening_and_at_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("svc.py");
    std::fs::write(&script, COLD_SERVICE).unwrap();
    let run = |gateway: bool| {
        let (port, gw) = (free_port(), free_port());
        let out = dir.path().join(format!("seen-{gateway}.json"));
        let json = dir.path().join(format!("r-{gateway}.json"));
        let mut cmd = format!(
            "exec python3 {} {port} 0.3 0.2 {}",
            script.display(),
            out.display()
        );
        let url_port = if gateway {
            cmd += &format!(" {gw} 0.15");
            gw
        } else {
            port
        };
        let mut args = vec![
            "http".to_string(),
            format!("http://127.0.0.1:{url_port}/"),
            "-c".into(),
            "1".into(),
            "-d".into(),
            "300ms".into(),
            "--cold-start".into(),
            cmd,
            "--ready-timeout".into(),
            "10s".into(),
        ];
        if gateway {
            args.extend(["--cold-start-port".into(), port.to_string()]);
        }
        let o = npt().args(&args).arg("--json").arg(&json).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        validate(&doc);
        let seen: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        (doc["cold_start"].clone(), seen, text)
    };
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"));

    let (cs, seen, text) = run(false);
    assert!(text.contains("start → listening"), "{text}");
    // The service's own clock says when it listened, from its exec (10 ms ticks, rounded
    // down, so that figure is up to 10 ms high); npt saw the port closed `within` before it
    // saw it listening (a try every 2 ms, and a late wake-up on a busy machine).
    let listening = f(&cs, "listening_ms");
    let own = f(&seen, "listen_since_exec") * 1e3;
    assert!(listening >= 300.0, "{cs}");
    let within = f(&cs, "listening_within_ms");
    assert!(
        listening >= own - 11.0 && listening <= own + within + 2.0,
        "npt {listening} ms (within {within}), the service {own} ms"
    );
    let answering = f(&cs, "listening_to_ready_ms");
    let own = (f(&seen, "first_ok") - f(&seen, "listen")) * 1e3;
    assert!(own >= 200.0, "{seen}");
    // npt's figure ends with the response read, the service's when it chose 200: the first
    // good request's own time bounds the difference above; below, npt saw the listening up to
    // `within` after it happened.
    let first = f(&cs, "first_request_ms");
    assert!(
        answering >= own - within - 1.0 && answering <= own + first + 1.0,
        "npt {answering} ms, the service {own} ms (+ first request {first} ms)"
    );
    assert!(
        (f(&cs, "ready_ms") - listening - answering).abs() < 1e-6,
        "{cs}"
    );
    assert!(cs.get("gateway_ms").is_none(), "no gateway named: {cs}");

    let (cs, seen, text) = run(true);
    assert!(text.contains("the gateway's own part"), "{text}");
    let gateway = f(&cs, "gateway_ms");
    let own = (f(&seen, "gateway_first_ok") - f(&seen, "first_ok")) * 1e3;
    assert!(own >= 150.0, "{seen}");
    // Each end is a response read: through the gateway (bounded by the first request's own
    // time) and from the service directly (by its own, `service_first_request_ms`).
    let first = f(&cs, "first_request_ms");
    let direct = f(&cs, "service_first_request_ms");
    assert!(
        gateway >= own - direct - 1.0 && gateway <= own + first + 1.0,
        "npt {gateway} ms, the gateway {own} ms (+ first request {first} ms, - direct {direct} ms)"
    );
    assert!(
        (f(&cs, "ready_ms") - f(&cs, "service_ready_ms") - gateway).abs() < 1e-6,
        "{cs}"
    );
    let listening = f(&cs, "listening_ms");
    let own = f(&seen, "listen_since_exec") * 1e3;
    let within = f(&cs, "listening_within_ms");
    assert!(
        listening >= own - 11.0 && listening <= own + within + 2.0,
        "npt {listening} ms (within {within}), the service {own} ms"
    );
}
