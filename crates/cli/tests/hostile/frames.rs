//! Why this exists: `npt serve` is meant for internet-facing relays, so it is attacked here on
//! loopback the way a hostile peer would: truncated, oversized and garbage frames on TCP and
//! UDP, slowloris on TCP and HTTP (one byte every 300 ms, against deadlines shortened to a
//! second so the test runs in seconds), thousands of idle connections, clients that never read,
//! HTTP header floods and request-smuggling shapes. Throughout, a well-behaved client keeps
//! probing TCP, UDP and HTTP and must keep getting answers, the server's descriptors and RSS
//! (from /proc) must stay bounded and come back down, and each refusal must show in the log.
//!
//! Then latency: five quiet windows alternate with five attack windows of a paced mix of the
//! same attacks (plus RST storms), and the median of the attack windows' TCP round-trip p99s
//! must stay within twice the median of the quiet windows' p99s (see [`P99_FLOOR_US`]). RST
//! storms, vanished clients and QUIC have their own files (`hostile_rst.rs`, `hostile_quic.rs`).

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use crate::common;
use crate::serve_util;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use npt_wire::frame::{Header, Kind, HEADER_LEN, MAGIC, MAX_FRAME_LEN};
use serve_util::{hold, http_ok, logged, open_fds, rss_kib, rst_close, serve, until, Served};

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
    /// TCP echo round trips (µs), each with the window it was measured in.
    rtt_us: Vec<(usize, u64)>,
    max_fds: usize,
    max_rss_kib: u64,
}

impl Probe {
    /// The `q`th percentile of the round trips of window `w`, and how many there were.
    fn pct(&self, w: usize, q: usize) -> (u64, usize) {
        let mut v: Vec<u64> = self
            .rtt_us
            .iter()
            .filter(|r| r.0 == w)
            .map(|r| r.1)
            .collect();
        v.sort_unstable();
        (v.get(v.len() * q / 100).copied().unwrap_or(0), v.len())
    }
}

/// Window 0: quiet before the first attacks; 1: the first attacks; from [`FIRST_WINDOW`] on,
/// even windows are quiet and odd ones under the paced attack mix.
const FIRST_WINDOW: usize = 2;
const WINDOWS: usize = 10;
const WINDOW: Duration = Duration::from_secs(2);
/// The quiet reference for the p99 bound is at least this much: on a 2-core VM shared with
/// other builds, a quiet loopback p99 of 200–500 µs is often scheduler noise, and twice that is
/// well inside what a stalled prober thread alone costs. The bound still catches what matters:
/// a server that stops answering promptly while attacked (tens of ms, or seconds).
const P99_FLOOR_US: u64 = 1_000;

/// Probes TCP (one kept connection) and UDP every 5 ms and HTTP every 100 ms until `stop`;
/// bounded to 180 s. Each TCP round trip is kept with the current `window`.
fn prober(s: &Served, window: Arc<AtomicUsize>, stop: Arc<AtomicBool>) -> JoinHandle<Probe> {
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
        while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(180) {
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
                p.rtt_us.push((window.load(Ordering::Relaxed), rtt));
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
            // HTTP, a fresh connection every 20th round.
            if seq.is_multiple_of(20) {
                p.http.0 += 1;
                p.http.1 += u32::from(http_ok(http));
                p.max_fds = p.max_fds.max(open_fds(pid));
                p.max_rss_kib = p.max_rss_kib.max(rss_kib(pid));
            }
            std::thread::sleep(Duration::from_millis(5));
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

/// HTTP header floods and request-smuggling shapes, each with the answer it must get; the
/// 2 MB header is the second.
fn http_shapes() -> Vec<(Vec<u8>, &'static str)> {
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
    vec![
        (flood, "HTTP/1.1 431"),
        (big, "HTTP/1.1 431"),
        (format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcd{smuggled}").into_bytes(), "HTTP/1.1 400"),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n".to_vec(), "HTTP/1.1 400"),
        // Both framings: chunked wins and the connection closes; what follows is never a request.
        (format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}").into_bytes(), "HTTP/1.1 200"),
        (format!("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n{smuggled}").into_bytes(), "HTTP/1.1 200"),
    ]
}

/// One attack window: a paced mix of the attacks above (and RST storms) until `end`, on its own
/// thread at nice 19, sleeping 10 ms after each step (under 100 steps a second): the attacker
/// must not starve the prober of CPU by design — what is measured is how the server copes.
/// Connections it holds (idle, slow, never reading) are dropped at the end of the window.
/// Returns the UDP garbage sent.
fn attack_window(tcp: SocketAddr, http: SocketAddr, end: Instant) -> u64 {
    let attacker = std::thread::spawn(move || {
        // SAFETY: plain syscalls on this thread's own id.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
        attack_mix(tcp, http, end)
    });
    attacker.join().unwrap()
}

fn attack_mix(tcp: SocketAddr, http: SocketAddr, end: Instant) -> u64 {
    let (bad, shapes) = (bad_headers(16), http_shapes());
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (mut held, mut udp_sent) = (Vec::new(), 0);
    let mut i = 0usize;
    while Instant::now() < end {
        match i % 5 {
            0 => one_shot_tcp(tcp, &bad[i % 16..][..1]),
            1 => {
                for h in &bad[..4] {
                    udp_sent += u64::from(udp.send_to(h, tcp).is_ok());
                }
            }
            2 => {
                if let Ok(c) = TcpStream::connect(tcp) {
                    rst_close(c);
                }
            }
            3 => {
                held.extend(hold(tcp, 1));
                held.extend(hold(http, 1));
                if let Ok(mut c) = TcpStream::connect(tcp) {
                    let _ = c.write_all(&MAGIC);
                    held.push(c);
                }
            }
            _ => {
                // Every shape but the 2 MB header; a few never-reading clients per window.
                let (req, _) = &shapes[[0, 2, 3, 4, 5, 6][i / 5 % 6]];
                let _ = http_raw(http, req);
                if i % 100 == 4 {
                    if let Ok(mut c) = TcpStream::connect(tcp) {
                        let _ = c.write_all(&frame(Kind::Request, 48, 64 << 20, 1));
                        held.push(c);
                    }
                }
            }
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    udp_sent
}

#[test]
fn npt_serve_survives_hostile_peers_and_counts_every_refusal() {
    let _turn = common::turn(module_path!());
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
    let window = Arc::new(AtomicUsize::new(0));
    let probe = prober(&s, window.clone(), stop.clone());
    // One quiet second first, for the probe's quiet round trips.
    std::thread::sleep(Duration::from_secs(1));
    window.store(1, Ordering::Relaxed);

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
    let shapes = http_shapes();
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
    assert!(
        settled.is_some(),
        "descriptors back to {fds0} + 16: {fds_end}"
    );

    // Latency: quiet and attack windows alternate; 300 ms after each attack window (the
    // server closing what it held) are not measured.
    let mut udp_garbage = 0;
    for w in FIRST_WINDOW..FIRST_WINDOW + WINDOWS {
        window.store(w, Ordering::Relaxed);
        if w % 2 == 1 {
            udp_garbage += attack_window(tcp, http, Instant::now() + WINDOW);
            window.store(usize::MAX, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(300));
        } else {
            std::thread::sleep(WINDOW);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let p = probe.join().unwrap();
    let windows: Vec<(usize, u64, u64, usize)> = (0..FIRST_WINDOW + WINDOWS)
        .map(|w| (w, p.pct(w, 50).0, p.pct(w, 99).0, p.pct(w, 99).1))
        .collect();
    let median = |odd: usize| {
        let mut v: Vec<u64> = windows[FIRST_WINDOW..]
            .iter()
            .filter(|w| w.0 % 2 == odd)
            .map(|w| w.2)
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (quiet99, attack99) = (median(0), median(1));
    eprintln!(
        "probe answered tcp {}/{} udp {}/{} http {}/{}; fds {} -> peak {} -> {}; rss {} -> peak {} KiB",
        p.tcp.1, p.tcp.0, p.udp.1, p.udp.0, p.http.1, p.http.0,
        fds0, p.max_fds, fds_end, rss0, p.max_rss_kib
    );
    for (w, p50, p99, n) in &windows {
        let what = if w % 2 == 0 { "quiet" } else { "attack" };
        eprintln!("window {w} {what}: {n} tcp round trips, p50 {p50} p99 {p99} us");
    }
    eprintln!("median p99: quiet {quiet99} us, under attack {attack99} us");
    let e = s.stderr();
    // The log after the attack windows too (their malformed frames, resets, closes).
    let mut tail: Vec<&str> = e.lines().rev().take(3).collect();
    tail.reverse();
    eprintln!("{}", tail.join("\n"));
    assert!(
        windows.iter().all(|w| w.3 >= 50),
        "too few round trips for a p99: {windows:?}"
    );
    // See P99_FLOOR_US for why the quiet reference has a floor.
    assert!(
        attack99 <= 2 * quiet99.max(P99_FLOOR_US),
        "median p99 under attack {attack99} us > 2 x max(quiet {quiet99} us, {P99_FLOOR_US} us)"
    );
    let udp_all = until(Duration::from_secs(5), || {
        logged(&s.stderr(), "udp refused:", "malformed") >= 600 + udp_garbage
    });
    assert!(udp_all.is_some(), "{}", e.lines().last().unwrap_or(""));
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
