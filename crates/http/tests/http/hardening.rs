//! Why this exists: the HTTP responder behind `npt serve --http` had no timeout in any state
//! and no connection cap, and served `/bytes/N` (up to 16 GiB) to anyone. These tests stall it
//! in each state on loopback (deadlines of a fraction of a second), fill its cap, and check the
//! token gate and the reply budget hook — each refusal and close with its own counter.

#![cfg(test)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_server::http_server::{HttpCounters, ReplyBudgetHook};
use npt_server::http_server::{ServerHandle, ServerOptions};

const HEADER: Duration = Duration::from_millis(400);
const IDLE: Duration = Duration::from_millis(800);
const IO: Duration = Duration::from_millis(400);

fn start(tweak: impl FnOnce(&mut ServerOptions)) -> (SocketAddr, ServerHandle) {
    let mut o = ServerOptions::new("127.0.0.1:0".parse().unwrap());
    o.threads = Some(1);
    o.header_timeout = HEADER;
    o.idle_timeout = IDLE;
    o.io_timeout = IO;
    tweak(&mut o);
    npt_server::http_server::spawn_http_server(&o).expect("responder starts")
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// Waits (bounded) until `f(counters)` reaches `want`.
fn wait_for(h: &ServerHandle, f: impl Fn(&HttpCounters) -> &AtomicU64, want: u64) {
    let c = h.counters();
    let t = Instant::now();
    while get(f(&c)) < want {
        assert!(t.elapsed() < Duration::from_secs(5), "{}", c.line());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads until EOF or reset (bounded): the server closed the connection. How long it took.
fn closed_by_server(c: &mut TcpStream) -> Duration {
    let t = Instant::now();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return t.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return t.elapsed(),
            Err(e) => panic!("not closed: {e}"),
        }
        assert!(t.elapsed() < Duration::from_secs(5), "not closed");
    }
}

/// One request on a fresh connection; the status code.
fn status(addr: SocketAddr, req: &str) -> u16 {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(req.as_bytes()).unwrap();
    let mut resp = Vec::new();
    let _ = c.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp[..resp.len().min(64)]).to_string();
    text.get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"))
}

fn req(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{extra}\r\n")
}

#[test]
fn slowloris_headers_are_closed_after_the_header_deadline() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, h) = start(|_| {});
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n").unwrap();
    // One byte every 100 ms: it keeps moving, but the head never completes in time.
    let t = Instant::now();
    for b in b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".iter() {
        if c.write_all(&[*b]).is_err() || t.elapsed() > Duration::from_secs(3) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for(&h, |c| &c.closed_header, 1);
    let took = t.elapsed();
    assert!(took < HEADER * 4, "closed after {took:?}");
    assert_eq!(get(&h.counters().closed_idle), 0);
}

#[test]
fn idle_connections_are_closed_before_and_between_requests() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, h) = start(|_| {});
    let mut quiet = TcpStream::connect(addr).unwrap();
    let took = closed_by_server(&mut quiet);
    assert!(took >= IDLE / 2, "took {took:?}");
    // Keep-alive: one request answered, then silence.
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut buf = [0u8; 256];
    let n = c.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    closed_by_server(&mut c);
    wait_for(&h, |c| &c.closed_idle, 2);
    assert_eq!(get(&h.counters().closed_header), 0);
}

#[test]
fn a_client_that_never_reads_is_closed() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, h) = start(|_| {});
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(req("/bytes/1000000000", "").as_bytes())
        .unwrap();
    wait_for(&h, |c| &c.stalled_write, 1);
    // A stalled request body is closed too.
    let mut c2 = TcpStream::connect(addr).unwrap();
    c2.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    c2.write_all(&[b'x'; 1000]).unwrap();
    let mut buf = [0u8; 256];
    let _ = c2.set_read_timeout(Some(Duration::from_secs(5)));
    while let Ok(n) = c2.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
    let c = h.counters();
    assert_eq!(
        (get(&c.stalled_write), get(&c.stalled_read)),
        (1, 1),
        "{}",
        c.line()
    );
}

#[test]
fn a_slow_handler_is_not_a_stalled_client() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, h) = start(|_| {});
    let t = Instant::now();
    assert_eq!(status(addr, &req("/delay/1500", "")), 200);
    assert!(t.elapsed() >= Duration::from_millis(1500));
    let c = h.counters();
    assert_eq!(
        get(&c.closed_idle) + get(&c.stalled_read) + get(&c.stalled_write),
        0,
        "{}",
        c.line()
    );
}

#[test]
fn connections_beyond_the_cap_are_refused_and_counted() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, h) = start(|o| {
        o.max_conns = 2;
        o.idle_timeout = Duration::from_secs(30);
    });
    let _a = TcpStream::connect(addr).unwrap();
    let _b = TcpStream::connect(addr).unwrap();
    wait_for(&h, |c| &c.accepted, 2);
    let mut third = TcpStream::connect(addr).unwrap();
    let took = closed_by_server(&mut third);
    assert!(took < Duration::from_secs(1));
    assert_eq!(get(&h.counters().refused_conns), 1);
    drop(_a);
    // A slot frees when a connection ends.
    let ok = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let _ = c.write_all(req("/", "").as_bytes());
        let mut r = String::new();
        let _ = c.read_to_string(&mut r);
        r.starts_with("HTTP/1.1 200")
    });
    assert!(ok, "{}", h.counters().line());
}

#[test]
fn with_a_token_only_the_tiny_root_is_served_without_it() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, h) = start(|o| o.token = Some("s3cret".into()));
    assert_eq!(status(addr, &req("/", "")), 200, "health check stays open");
    assert_eq!(status(addr, &req("/bytes/1000", "")), 401);
    assert_eq!(
        status(addr, &req("/bytes/1000", "x-npt-token: wrong\r\n")),
        401
    );
    assert_eq!(status(addr, &req("/status/204", "")), 401);
    let post = "POST / HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc";
    assert_eq!(status(addr, post), 401);
    assert_eq!(get(&h.counters().refused_token), 4);
    assert_eq!(
        status(addr, &req("/bytes/1000", "x-npt-token: s3cret\r\n")),
        200
    );
    assert_eq!(status(addr, &req("/bytes/1000?token=s3cret", "")), 200);
    assert_eq!(status(addr, &req("/bytes/1000?a=1&token=s3cret", "")), 200);
    assert_eq!(get(&h.counters().refused_token), 4);
}

#[test]
fn bytes_beyond_the_reply_budget_get_429() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let used = Arc::new(AtomicU64::new(0));
    let hook = {
        let used = used.clone();
        ReplyBudgetHook(Arc::new(move |_ip, n| {
            // A budget of 10,000 bytes in all (the real one is per address and refills).
            used.fetch_add(n, Ordering::Relaxed) + n <= 10_000
        }))
    };
    let (addr, h) = start(|o| o.reply_budget = Some(hook));
    assert_eq!(status(addr, &req("/bytes/6000", "")), 200);
    assert_eq!(status(addr, &req("/bytes/6000", "")), 429);
    assert_eq!(status(addr, &req("/bytes/17179869184", "")), 429);
    assert_eq!(
        status(addr, &req("/", "")),
        200,
        "small fixed replies are free"
    );
    assert_eq!(get(&h.counters().refused_budget), 2);
}

#[test]
fn a_stalled_tls_handshake_is_closed_after_the_header_deadline() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, h) = start(|o| o.tls = true);
    let mut c = TcpStream::connect(addr).unwrap();
    // A TLS record header announcing a 512-byte handshake message, and 3 bytes of it.
    c.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01])
        .unwrap();
    let took = closed_by_server(&mut c);
    assert!(
        took >= HEADER / 2 && took < HEADER * 4,
        "closed after {took:?}"
    );
    wait_for(&h, |c| &c.closed_header, 1);
}
