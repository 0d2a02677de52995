//! Why this exists: `npt serve` is meant for internet-facing relays, so it is attacked here on
//! loopback the way a hostile peer would: truncated, oversized and garbage frames on TCP and
//! UDP, slowloris on TCP and HTTP (one byte every 300 ms, against deadlines shortened to a
//! second so the test runs in seconds), thousands of idle connections, clients that never read,
//! HTTP header floods and request-smuggling shapes. Throughout, a well-behaved client keeps
//! probing TCP, UDP and HTTP and must keep getting answers, the server's descriptors and RSS
//! (from /proc) must stay bounded and come back down, and each refusal must show in the log.

mod common;
mod serve_util;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use npt_wire::frame::{Header, Kind, HEADER_LEN, MAGIC, MAX_FRAME_LEN};
use serve_util::{hold, http_ok, logged, open_fds, rss_kib, serve, until, Served};

fn frame(kind: Kind, len: u32, reply_len: u32, seq: u64) -> Vec<u8> {
    let mut b = vec![0x5A; (len as usize).clamp(HEADER_LEN, 1 << 16)];
    Header {
        kind,
        flags: 0,
        frame_len: len,
        reply_len,
        flow: 7,
        status: 0,
        seq,
        send_ts: 1,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    b
}

/// Deterministic garbage (xorshift64*), so a failure can be replayed.
fn garbage(seed: &mut u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *seed ^= *seed >> 12;
            *seed ^= *seed << 25;
            *seed ^= *seed >> 27;
            (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// `n` headers that start with the magic but do not decode.
fn bad_headers(n: usize) -> Vec<Vec<u8>> {
    let mut seed = 0x6e70_7421;
    let mut out = Vec::new();
    while out.len() < n {
        let mut h = MAGIC.to_vec();
        h.extend(garbage(&mut seed, HEADER_LEN - 4));
        if Header::decode(&h).is_err() {
            out.push(h);
        }
    }
    out
}

/// What the well-behaved client saw.
#[derive(Default, Debug)]
struct Probe {
    tcp: (u32, u32),
    udp: (u32, u32),
    http: (u32, u32),
    /// TCP echo round trips before the attacks started, and during them.
    quiet_rtt_us: Vec<u64>,
    tcp_rtt_us: Vec<u64>,
    max_fds: usize,
    max_rss_kib: u64,
}

/// Probes TCP (one kept connection), UDP and HTTP every 20 ms until `stop`; bounded to 120 s.
/// Round trips are kept apart before and after `attacking` is set.
fn prober(s: &Served, attacking: Arc<AtomicBool>, stop: Arc<AtomicBool>) -> JoinHandle<Probe> {
    let (tcp, http, pid) = (s.tcp, s.http.expect("http"), s.pid());
    std::thread::spawn(move || {
        let mut p = Probe::default();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.connect(tcp).unwrap();
        udp.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut conn: Option<TcpStream> = None;
        let t0 = Instant::now();
        let mut seq = 0u64;
        while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
            seq += 1;
            // TCP, on a kept connection (reopened if it broke: that counts as a miss).
            let c = conn.get_or_insert_with(|| {
                let c = TcpStream::connect(tcp).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
                c
            });
            let f = frame(Kind::Echo, 64, 0, seq);
            let mut back = [0u8; 64];
            let t = Instant::now();
            let ok = c.write_all(&f).is_ok()
                && c.read_exact(&mut back).is_ok()
                && Header::decode(&back).is_ok_and(|h| h.seq == seq);
            p.tcp.0 += 1;
            if ok {
                p.tcp.1 += 1;
                let rtt = t.elapsed().as_micros() as u64;
                if attacking.load(Ordering::Relaxed) {
                    p.tcp_rtt_us.push(rtt);
                } else {
                    p.quiet_rtt_us.push(rtt);
                }
            } else {
                conn = None;
            }
            // UDP framed echo.
            let f = frame(Kind::Echo, 64, 0, seq);
            p.udp.0 += 1;
            if udp.send(&f).is_ok() {
                let mut b = [0u8; 128];
                while let Ok(n) = udp.recv(&mut b) {
                    if Header::decode(&b[..n]).is_ok_and(|h| h.seq == seq) {
                        p.udp.1 += 1;
                        break;
                    }
                }
            }
            // HTTP, a fresh connection every 5th round.
            if seq.is_multiple_of(5) {
                p.http.0 += 1;
                p.http.1 += u32::from(http_ok(http));
            }
            p.max_fds = p.max_fds.max(open_fds(pid));
            p.max_rss_kib = p.max_rss_kib.max(rss_kib(pid));
            std::thread::sleep(Duration::from_millis(20));
        }
        p
    })
}

/// Sends each message on its own TCP connection, then half-closes and drains (bounded).
fn one_shot_tcp(addr: SocketAddr, msgs: &[Vec<u8>]) {
    for m in msgs {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let _ = c.write_all(m);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let mut sink = [0u8; 4096];
        while matches!(c.read(&mut sink), Ok(n) if n > 0) {}
    }
}

/// Writes one byte per 300 ms to every connection until all were closed by the server (or
/// 10 s passed); how many were closed.
fn slowloris(addr: SocketAddr, n: usize, start: &[u8], drip: &[u8]) -> usize {
    let mut conns: Vec<Option<TcpStream>> = (0..n)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(start).unwrap();
            Some(c)
        })
        .collect();
    let t = Instant::now();
    let mut i = 0;
    while conns.iter().any(Option::is_some) && t.elapsed() < Duration::from_secs(10) {
        for slot in conns.iter_mut() {
            if let Some(c) = slot {
                if c.write_all(&drip[i % drip.len()..][..1]).is_err() {
                    *slot = None;
                }
            }
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(300));
    }
    conns.iter().filter(|c| c.is_none()).count()
}

/// Sends a raw HTTP request and returns everything until the server closes (bounded).
fn http_raw(addr: SocketAddr, req: &[u8]) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = c.write_all(req);
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).to_string()
}

#[test]
fn npt_serve_survives_hostile_peers_and_counts_every_refusal() {
    let s = serve(
        20_000,
        &[
            "--http",
            "127.0.0.1:0",
            "--idle-timeout",
            "2s",
            "--io-timeout",
            "1s",
            "--http-header-timeout",
            "1s",
            "--http-idle-timeout",
            "2s",
        ],
    );
    let (tcp, http) = (s.tcp, s.http.expect("http"));
    let (fds0, rss0) = (open_fds(s.pid()), rss_kib(s.pid()));
    let stop = Arc::new(AtomicBool::new(false));
    let attacking = Arc::new(AtomicBool::new(false));
    let probe = prober(&s, attacking.clone(), stop.clone());
    // One quiet second first, for the probe's quiet round trips.
    std::thread::sleep(Duration::from_secs(1));
    attacking.store(true, Ordering::Relaxed);

    // Truncated, oversized and garbage frames on TCP: 150 malformed.
    let truncated: Vec<Vec<u8>> = (0..50)
        .map(|i| frame(Kind::Echo, 1000, 0, i)[..100].to_vec())
        .collect();
    let mut oversized = frame(Kind::Echo, 48, 0, 1);
    oversized[8..12].copy_from_slice(&(MAX_FRAME_LEN + 1).to_be_bytes());
    assert!(
        Header::decode(&oversized).is_err(),
        "frame_len field at 8..12"
    );
    one_shot_tcp(tcp, &truncated);
    one_shot_tcp(tcp, &vec![oversized.clone(); 50]);
    one_shot_tcp(tcp, &bad_headers(50));

    // The same on UDP from one socket: 600 malformed, none answered.
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.connect(tcp).unwrap();
    for i in 0..200 {
        let _ = u.send(&frame(Kind::Echo, 64, 0, i)[..50]);
        let mut claim = frame(Kind::Echo, 100, 0, i);
        claim[8..12].copy_from_slice(&2000u32.to_be_bytes());
        let _ = u.send(&claim);
    }
    for h in bad_headers(200) {
        let _ = u.send(&h);
    }
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(u.recv(&mut [0u8; 64]).is_err(), "garbage is never answered");

    // HTTP: header floods and smuggling shapes.
    let flood = {
        let mut r = b"GET / HTTP/1.1\r\nHost: t\r\n".to_vec();
        for i in 0..10_000 {
            r.extend(format!("X-H{i}: v\r\n").as_bytes());
        }
        r.extend(b"\r\n");
        r
    };
    let big = [
        b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: ".to_vec(),
        vec![b'a'; 2_000_000],
        b"\r\n\r\n".to_vec(),
    ]
    .concat();
    let smuggled = "GET /bytes/999 HTTP/1.1\r\nHost: t\r\n\r\n";
    let shapes: Vec<(Vec<u8>, &str)> = vec![
        (flood, "HTTP/1.1 431"),
        (big, "HTTP/1.1 431"),
        (format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcd{smuggled}").into_bytes(), "HTTP/1.1 400"),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        // Both framings: chunked wins and the connection closes; what follows is never a request.
        (format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}").into_bytes(), "HTTP/1.1 200"),
        (format!("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n{smuggled}").into_bytes(), "HTTP/1.1 200"),
    ];
    for (req, want) in &shapes {
        let resp = http_raw(http, req);
        assert!(
            resp.starts_with(want),
            "want {want}, got {:?}",
            &resp[..resp.len().min(80)]
        );
        assert_eq!(
            resp.matches("HTTP/1.1 ").count(),
            1,
            "one answer only: {resp:?}"
        );
        assert!(
            !resp.contains("content-length: 999"),
            "smuggled request answered"
        );
    }

    // Slowloris on TCP and HTTP, and clients that never read, at the same time.
    let tcp_slow = std::thread::spawn(move || slowloris(tcp, 30, &MAGIC, &[0x01]));
    let http_slow = std::thread::spawn(move || {
        slowloris(
            http,
            30,
            b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ",
            b"abcdefgh",
        )
    });
    let mut never_read = Vec::new();
    for i in 0..5 {
        let mut c = TcpStream::connect(tcp).unwrap();
        c.write_all(&frame(Kind::Request, 48, 64 << 20, i)).unwrap();
        never_read.push(c);
        let mut c = TcpStream::connect(http).unwrap();
        c.write_all(b"GET /bytes/100000000 HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        never_read.push(c);
    }
    // Many idle connections.
    let idle_tcp = hold(tcp, 2000);
    let idle_http = hold(http, 1000);
    assert_eq!((idle_tcp.len(), idle_http.len()), (2000, 1000));
    assert_eq!(tcp_slow.join().unwrap(), 30, "every TCP slowloris closed");
    assert_eq!(http_slow.join().unwrap(), 30, "every HTTP slowloris closed");

    // Every refusal and forced close shows in the periodic lines.
    let want: [(&str, &str, u64); 10] = [
        ("tcp refused:", "malformed", 150),
        ("tcp refused:", "stalled-read", 30),
        ("tcp refused:", "stalled-write", 5),
        ("tcp refused:", "idle", 2000),
        ("udp refused:", "malformed", 600),
        ("http refused:", "malformed", 5),
        ("http refused:", "header", 30),
        ("http refused:", "stalled-write", 5),
        ("http refused:", "idle", 1000),
        ("tcp refused:", "conns", 0),
    ];
    let all = until(Duration::from_secs(15), || {
        let e = s.stderr();
        want.iter().all(|(sec, k, n)| logged(&e, sec, k) >= *n)
    });
    let e = s.stderr();
    let last: Vec<&str> = e.lines().rev().take(2).collect();
    assert!(all.is_some(), "missing counts; last lines: {last:#?}");
    assert_eq!(logged(&e, "udp refused:", "malformed"), 600, "{last:#?}");
    assert_eq!(logged(&e, "tcp refused:", "malformed"), 150, "{last:#?}");

    // Descriptors come back down once the idle ones are gone.
    drop(never_read);
    drop(idle_tcp);
    drop(idle_http);
    let settled = until(Duration::from_secs(10), || open_fds(s.pid()) <= fds0 + 16);
    let fds_end = open_fds(s.pid());
    stop.store(true, Ordering::Relaxed);
    let mut p = probe.join().unwrap();
    let pct = |v: &mut Vec<u64>, q: usize| {
        v.sort_unstable();
        v.get(v.len() * q / 100).copied().unwrap_or(0)
    };
    let (q50, q99) = (pct(&mut p.quiet_rtt_us, 50), pct(&mut p.quiet_rtt_us, 99));
    let (a50, a99) = (pct(&mut p.tcp_rtt_us, 50), pct(&mut p.tcp_rtt_us, 99));
    eprintln!(
        "probe answered tcp {}/{} udp {}/{} http {}/{}; tcp rtt quiet p50 {q50} p99 {q99} us, under attack p50 {a50} p99 {a99} us; fds {} -> peak {} -> {}; rss {} -> peak {} KiB",
        p.tcp.1, p.tcp.0, p.udp.1, p.udp.0, p.http.1, p.http.0,
        fds0, p.max_fds, fds_end, rss0, p.max_rss_kib
    );
    for l in last {
        eprintln!("{l}");
    }
    assert!(
        settled.is_some(),
        "descriptors back to {fds0} + 16: {fds_end}"
    );
    // 3,000 idle + 60 slowloris + 10 never-reading connections are held at the peak.
    assert!(
        p.max_fds <= fds0 + 3200,
        "at most the held connections: {}",
        p.max_fds
    );
    assert!(
        p.max_rss_kib < 256 * 1024,
        "rss bounded: {} KiB",
        p.max_rss_kib
    );
    let ratio = |(n, ok): (u32, u32)| f64::from(ok) / f64::from(n.max(1));
    assert!(ratio(p.tcp) >= 0.95, "tcp {:?}", p.tcp);
    assert!(ratio(p.udp) >= 0.95, "udp {:?}", p.udp);
    assert!(ratio(p.http) >= 0.95, "http {:?}", p.http);
}
