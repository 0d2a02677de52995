//! Why this exists: the bulk responder must source and sink at the path's rate for the clients
//! it trusts and stay within the small reply budget for the ones it does not, drop a client that
//! stops reading, and never answer a UDP bulk with more bytes than it was sent. These tests speak
//! the wire protocol directly over loopback (the engine's own tests go through `npt bulk`).
#![cfg(test)] // clippy.toml: test helpers count as tests
#![allow(clippy::cast_possible_truncation)] // small test values

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use npt_server::{BudgetLimits, Counters, ServeConfig, Server, Timeouts};
use npt_wire::bulk::{self, BulkReport, BulkSpec, Direction};
use npt_wire::frame::{status, Header, Kind, HEADER_LEN};

fn start(cfg: ServeConfig) -> (Server, SocketAddr) {
    let s = Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..cfg
    })
    .expect("server starts");
    let a = s.local_addrs()[0];
    (s, a)
}

fn spec(direction: Direction, duration: Duration) -> BulkSpec {
    BulkSpec {
        direction,
        size: 0,
        rate_bps: 0,
        duration_ns: duration.as_nanos() as u64,
    }
}

/// Opens a bulk stream; the accepting reply's status.
fn open(addr: SocketAddr, s: BulkSpec) -> (TcpStream, u32) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = [0u8; bulk::REQUEST_LEN];
    bulk::encode_request(&mut req, 1, 0, 7, &s).unwrap();
    c.write_all(&req).unwrap();
    let (h, _) = read_reply(&mut c);
    (c, h.status)
}

fn read_reply(c: &mut TcpStream) -> (Header, BulkReport) {
    let mut b = [0u8; bulk::REPLY_LEN];
    c.read_exact(&mut b).unwrap();
    let h = Header::decode(&b).unwrap();
    assert_eq!(h.kind, Kind::BulkReply);
    (h, BulkReport::decode(&b[HEADER_LEN..]).unwrap())
}

/// Reads until the server closes; the bytes.
fn drain(c: &mut TcpStream) -> u64 {
    let mut buf = vec![0u8; 256 * 1024];
    let mut n = 0u64;
    loop {
        match c.read(&mut buf) {
            Ok(0) => return n,
            Ok(k) => n += k as u64,
            Err(e) => panic!("after {n} bytes: {e}"),
        }
    }
}

#[test]
fn down_sources_for_the_duration_then_closes() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(ServeConfig::default());
    let t = Instant::now();
    let (mut c, st) = open(addr, spec(Direction::Down, Duration::from_millis(500)));
    assert_eq!(st, status::OK);
    let n = drain(&mut c);
    let took = t.elapsed();
    assert!(
        n > 10 << 20,
        "loopback moves far more than 10 MiB in 0.5 s: {n}"
    );
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(3),
        "{took:?}"
    );
    let k = s.counters();
    assert_eq!(Counters::get(&k.tcp.bulk), 1);
    assert!(Counters::get(&k.tcp.tx_bytes) >= n);
}

/// A download at a rate (`npt bulk --rate`): the reply says the responder paces it, and it
/// sends that rate of payload over the asked duration, never more (the bucket holds at most
/// 20 ms of it; the first write goes at once). An unpaced download and an upload carry no flag.
#[test]
fn a_download_at_a_rate_is_paced_and_says_so() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (_s, addr) = start(ServeConfig::default());
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let paced = BulkSpec {
        rate_bps: 8_000_000,
        ..spec(Direction::Down, Duration::from_secs(1))
    };
    let mut req = [0u8; bulk::REQUEST_LEN];
    bulk::encode_request(&mut req, 1, 0, 7, &paced).unwrap();
    c.write_all(&req).unwrap();
    let (h, _) = read_reply(&mut c);
    assert_eq!((h.status, h.flags & bulk::PACED), (status::OK, bulk::PACED));
    // 8 Mbit/s for 1 s on the server's clock: 1,000,000 bytes, plus its first write (2,000).
    let n = drain(&mut c);
    assert!(
        (900_000..=1_002_000).contains(&n),
        "{n} bytes in the responder's 1 s at 1 MB/s"
    );
    for d in [Direction::Down, Direction::Up] {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let s = BulkSpec {
            rate_bps: if d == Direction::Up { 8_000_000 } else { 0 },
            ..spec(d, Duration::from_millis(10))
        };
        bulk::encode_request(&mut req, 1, 0, 7, &s).unwrap();
        c.write_all(&req).unwrap();
        assert_eq!(read_reply(&mut c).0.flags & bulk::PACED, 0, "{d:?}");
    }
}

#[test]
fn up_sinks_and_reports_exactly_what_arrived() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(ServeConfig::default());
    let (mut c, st) = open(addr, spec(Direction::Up, Duration::from_secs(5)));
    assert_eq!(st, status::OK);
    let chunk = vec![0x5au8; 64 * 1024];
    let mut sent = 0u64;
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(400) {
        c.write_all(&chunk).unwrap();
        sent += chunk.len() as u64;
    }
    c.shutdown(Shutdown::Write).unwrap();
    // Progress reports every 100 ms, then the last one with every byte.
    let mut reports = Vec::new();
    loop {
        let (h, r) = read_reply(&mut c);
        assert_eq!(h.status, status::OK);
        reports.push(r);
        if r.bytes == sent {
            break;
        }
        assert!(r.bytes < sent, "{r:?} > {sent}");
    }
    assert!(reports.len() >= 3, "{reports:?}");
    assert!(reports.windows(2).all(|w| w[0].bytes <= w[1].bytes));
    assert_eq!(drain(&mut c), 0, "closed after the last report");
    assert_eq!(
        Counters::get(&s.counters().tcp.rx_bytes),
        sent + bulk::REQUEST_LEN as u64
    );
}

/// A stranger (no local exemption, no token) gets the reply budget's rate, not the path's.
#[test]
fn a_stranger_is_held_to_the_reply_budget() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(ServeConfig {
        exempt_local: false,
        budget: BudgetLimits {
            bytes_per_s: 1e6,
            exempt_local: false,
            ..BudgetLimits::safe()
        },
        ..ServeConfig::default()
    });
    let t = Instant::now();
    let (mut c, _) = open(addr, spec(Direction::Down, Duration::from_secs(1)));
    let n = drain(&mut c);
    let secs = t.elapsed().as_secs_f64();
    // One second's bucket plus one second of refill, at most.
    assert!(n <= 2_100_000, "{n} bytes in {secs:.2} s");
    assert!(n >= 1_000_000, "{n} bytes in {secs:.2} s");
    assert_eq!(Counters::get(&s.counters().tcp.refused_budget), 1);
}

/// A client that stops reading is dropped by the write deadline, as any stalled reader.
#[test]
fn a_client_that_stops_reading_is_dropped() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(ServeConfig {
        timeouts: Timeouts {
            idle: Duration::from_secs(5),
            io: Duration::from_millis(300),
        },
        ..ServeConfig::default()
    });
    let (_c, _) = open(addr, spec(Direction::Down, Duration::from_secs(60)));
    let k = s.counters();
    let t = Instant::now();
    while Counters::get(&k.tcp.stalled_write) == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "never dropped");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn udp_frame(kind: Kind, seq: u64, len: usize, s: Option<BulkSpec>) -> Vec<u8> {
    let mut b = vec![0u8; len];
    Header {
        kind,
        flags: 0,
        frame_len: len as u32,
        reply_len: 0,
        flow: 3,
        status: 0,
        seq,
        send_ts: seq * 1000,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    if let Some(s) = s {
        s.encode(&mut b[HEADER_LEN..]).unwrap();
    }
    b
}

/// UDP up: data is counted and never answered; a report answers a padded `Bulk` frame with
/// the same length; a `Down` bulk of a stranger (here: loopback not exempt, no `--token`) is
/// refused with a bare header (no amplification).
#[test]
fn udp_reports_what_arrived_and_never_amplifies() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(ServeConfig {
        exempt_local: false,
        ..ServeConfig::default()
    });
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    for seq in [0u64, 1, 2, 4] {
        c.send(&udp_frame(Kind::BulkData, seq, 1200, None)).unwrap();
    }
    let up = spec(Direction::Up, Duration::from_secs(1));
    let mut buf = [0u8; 2048];
    // Reports come back with every datagram sent before them counted (loopback keeps order).
    c.send(&udp_frame(Kind::Bulk, 5, bulk::REPLY_LEN + 12, Some(up)))
        .unwrap();
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(n, bulk::REPLY_LEN + 12, "the answer is the request's size");
    let h = Header::decode(&buf).unwrap();
    assert_eq!((h.kind, h.status, h.seq), (Kind::BulkReply, status::OK, 5));
    let r = BulkReport::decode(&buf[HEADER_LEN..]).unwrap();
    assert_eq!((r.datagrams, r.expected, r.lost()), (5, 6, 1), "{r:?}");
    assert_eq!(r.bytes, 4 * 1200 + (bulk::REPLY_LEN + 12) as u64);
    let down = spec(Direction::Down, Duration::from_secs(1));
    c.send(&udp_frame(Kind::Bulk, 6, bulk::REPLY_LEN, Some(down)))
        .unwrap();
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(n, HEADER_LEN);
    assert_eq!(Header::decode(&buf).unwrap().status, status::REFUSED);
    // The counters are added after a batch's answers left: wait (bounded) for them.
    let k = s.counters();
    let t = Instant::now();
    while Counters::get(&k.udp_bulk_refused) == 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(Counters::get(&k.udp_bulk_flows), 1);
    assert_eq!(Counters::get(&k.udp_bulk_refused), 1);
    assert_eq!(Counters::get(&k.udp_tx), 2, "two answers, no data answered");
}

/// UDP up past the per-source budget (loopback limited to 100 packets a second): the report
/// carries how many of the flow's datagrams the budget refused, apart from what arrived, and
/// the two add up to what was sent; a client that asks with a short request (an older one)
/// gets the report as before, without the count.
#[test]
fn udp_reports_the_datagrams_the_budget_refused() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(ServeConfig {
        exempt_local: false,
        limits: npt_server::Limits {
            pps: 100.0,
            ..npt_server::Limits::safe()
        },
        ..ServeConfig::default()
    });
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    for seq in 0..500u64 {
        c.send(&udp_frame(Kind::BulkData, seq, 200, None)).unwrap();
    }
    let up = spec(Direction::Up, Duration::from_secs(1));
    let mut buf = [0u8; 2048];
    let k = s.counters();
    // Asked again, each time with the next sequence number as a client does, until the budget
    // lets a request through (it refills 100 a second).
    let mut seq = 500;
    let mut ask = |len: usize, buf: &mut [u8]| {
        for _ in 0..50 {
            c.send(&udp_frame(Kind::Bulk, seq, len, Some(up))).unwrap();
            seq += 1;
            if let Ok(n) = c.recv(buf) {
                return n;
            }
        }
        panic!("no report");
    };
    let n = ask(bulk::REPLY_LEN_REFUSED, &mut buf);
    assert_eq!(n, bulk::REPLY_LEN_REFUSED);
    let h = Header::decode(&buf[..n]).unwrap();
    let r = BulkReport::decode(&buf[HEADER_LEN..n]).unwrap();
    let refused = bulk::read_refused(&h, &buf[..n]).expect("the count");
    assert_eq!(
        r.datagrams + refused,
        r.expected,
        "{r:?} refused {refused}: nothing lost"
    );
    assert!(
        (100..=110).contains(&r.datagrams),
        "{r:?}: one second's burst"
    );
    // The server counted the same refusals (and the refused report requests, if any, in both).
    assert_eq!(Counters::get(&k.udp_refused_rate), refused);
    // An older client's request: the report, no flag, nothing past it touched.
    let n = ask(bulk::REPLY_LEN, &mut buf);
    let h = Header::decode(&buf[..n]).unwrap();
    assert_eq!(
        (n, bulk::read_refused(&h, &buf[..n])),
        (bulk::REPLY_LEN, None)
    );
}

/// UDP down for a loopback source the server exempts: a pull asking for 5 datagrams of 1200
/// bytes gets exactly those, numbered pull × 5 + j; a pull asking for more than a burst gets
/// a burst; a pull with a datagram size below a header gets nothing.
#[test]
fn udp_down_answers_a_trusted_pull_with_its_burst() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(ServeConfig::default());
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let pull = |seq: u64, size: u32, reply_len: u32| {
        let spec = BulkSpec {
            direction: Direction::Down,
            size,
            rate_bps: 1_000_000,
            duration_ns: 1_000_000_000,
        };
        let mut b = udp_frame(Kind::Bulk, seq, bulk::REQUEST_LEN, Some(spec));
        let mut h = Header::decode(&b).unwrap();
        h.reply_len = reply_len;
        h.encode(&mut b).unwrap();
        b
    };
    let mut buf = [0u8; 2048];
    c.send(&pull(3, 1200, 5 * 1200)).unwrap();
    let mut seqs = Vec::new();
    for _ in 0..5 {
        let n = c.recv(&mut buf).unwrap();
        assert_eq!(n, 1200);
        let h = Header::decode(&buf).unwrap();
        assert_eq!((h.kind, h.flow), (Kind::BulkData, 3));
        seqs.push(h.seq);
    }
    assert_eq!(seqs, (15..20).collect::<Vec<u64>>());
    c.send(&pull(0, 100, u32::MAX)).unwrap();
    let mut n = 0;
    while c.recv(&mut buf).is_ok() {
        n += 1;
    }
    assert_eq!(n, 64, "at most a burst");
    c.send(&pull(1, 10, 1000)).unwrap();
    assert!(c.recv(&mut buf).is_err(), "a size below a header: nothing");
    assert!(Counters::get(&s.counters().udp_bulk_down) >= 69);
}
