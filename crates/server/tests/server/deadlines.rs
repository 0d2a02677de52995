//! Why this exists: a TCP peer that stopped inside a header or a payload, or never read its
//! replies, used to hold its slot forever (only the first four bytes had a timeout). Each
//! state now has a deadline and each kind of close its counter; these tests stall in each state
//! on loopback with deadlines of a fraction of a second. Also: the per-address reply budget.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use npt_server::{BudgetLimits, Counters, ServeConfig, Server, Timeouts};
use npt_wire::frame::{status, Header, Kind, HEADER_LEN, MAGIC};

const IDLE: Duration = Duration::from_millis(800);
const IO: Duration = Duration::from_millis(300);

fn start(budget: BudgetLimits) -> (Server, SocketAddr) {
    let s = Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        timeouts: Timeouts { idle: IDLE, io: IO },
        budget,
        ..ServeConfig::default()
    })
    .expect("server starts");
    let a = s.local_addrs()[0];
    (s, a)
}

fn header(kind: Kind, len: u32, reply_len: u32, seq: u64) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    Header {
        kind,
        flags: 0,
        frame_len: len,
        reply_len,
        flow: 1,
        status: 0,
        seq,
        send_ts: 1,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    b
}

/// Waits (bounded) until `c` reaches `want`; returns how long that took.
fn wait_for(c: &AtomicU64, want: u64, limit: Duration) -> Duration {
    let t = Instant::now();
    while Counters::get(c) < want {
        assert!(
            t.elapsed() < limit,
            "counter stuck at {} (want {want})",
            Counters::get(c)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    t.elapsed()
}

/// Reads until EOF (bounded): the server closed the connection.
fn closed_by_server(c: &mut TcpStream, limit: Duration) -> Duration {
    let t = Instant::now();
    c.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return t.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return t.elapsed(),
            Err(e) => panic!("not closed within {limit:?}: {e}"),
        }
        assert!(t.elapsed() < limit, "not closed within {limit:?}");
    }
}

#[test]
fn a_peer_stopping_inside_a_header_is_closed_and_counted() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(BudgetLimits::default());
    let mut c = TcpStream::connect(addr).unwrap();
    let h = header(Kind::Echo, 64, 0, 1);
    c.write_all(&h[..10]).unwrap(); // the magic and 6 more bytes, then nothing
    let took = closed_by_server(&mut c, Duration::from_secs(5));
    assert!(
        took >= IO / 2,
        "closed after the io deadline, took {took:?}"
    );
    assert!(
        took < IDLE * 3,
        "long before any idle timeout, took {took:?}"
    );
    wait_for(&s.counters().tcp.stalled_read, 1, Duration::from_secs(2));
}

#[test]
fn a_peer_stopping_inside_a_payload_is_closed_and_counted() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(BudgetLimits::default());
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(&header(Kind::Echo, 100_000, 0, 1)).unwrap();
    c.write_all(&[7u8; 1000]).unwrap(); // 1,000 of 99,952 payload bytes
    closed_by_server(&mut c, Duration::from_secs(5));
    wait_for(&s.counters().tcp.stalled_read, 1, Duration::from_secs(2));
    assert_eq!(Counters::get(&s.counters().tcp.closed_idle), 0);
}

#[test]
fn an_idle_peer_is_closed_after_the_idle_deadline() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(BudgetLimits::default());
    let mut c = TcpStream::connect(addr).unwrap();
    let took = closed_by_server(&mut c, Duration::from_secs(5));
    assert!(took >= IDLE / 2, "took {took:?}");
    wait_for(&s.counters().tcp.closed_idle, 1, Duration::from_secs(2));
    // Between frames too: one good echo, then silence.
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(&header(Kind::Echo, 48, 0, 1)).unwrap();
    let mut back = [0u8; HEADER_LEN];
    c.read_exact(&mut back).unwrap();
    closed_by_server(&mut c, Duration::from_secs(5));
    wait_for(&s.counters().tcp.closed_idle, 2, Duration::from_secs(2));
}

#[test]
fn a_peer_that_never_reads_is_closed_and_counted() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(BudgetLimits::default());
    let mut c = TcpStream::connect(addr).unwrap();
    // Ask for 4 x 64 MiB and never read: the socket buffers fill, the server's write stalls.
    for seq in 0..4 {
        c.write_all(&header(Kind::Request, 48, 64 << 20, seq))
            .unwrap();
    }
    let took = wait_for(&s.counters().tcp.stalled_write, 1, Duration::from_secs(10));
    assert!(took >= IO / 2, "took {took:?}");
    let sent = Counters::get(&s.counters().tcp.tx_bytes);
    assert!(
        sent < 64 << 20,
        "no reply was counted as sent in full: {sent}"
    );
}

#[test]
fn a_well_behaved_peer_is_not_cut_by_the_deadlines() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(BudgetLimits::default());
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Slower than nothing but well within each deadline: pauses of IO/3 between pieces.
    let mut body = vec![0u8; 2 << 20];
    for seq in 0..3 {
        let h = header(Kind::Request, 1000, 1 << 20, seq);
        c.write_all(&h[..20]).unwrap();
        std::thread::sleep(IO / 3);
        c.write_all(&h[20..]).unwrap();
        c.write_all(&[1u8; 1000 - HEADER_LEN]).unwrap();
        let mut rh = [0u8; HEADER_LEN];
        c.read_exact(&mut rh).unwrap();
        let r = Header::decode(&rh).unwrap();
        assert_eq!((r.kind, r.seq, r.frame_len), (Kind::Response, seq, 1 << 20));
        c.read_exact(&mut body[..(1 << 20) - HEADER_LEN]).unwrap();
        std::thread::sleep(IDLE / 3);
    }
    let t = &s.counters().tcp;
    assert_eq!(
        Counters::get(&t.stalled_read) + Counters::get(&t.stalled_write),
        0
    );
}

#[test]
fn replies_beyond_the_address_budget_are_refused_and_counted() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (s, addr) = start(BudgetLimits {
        bytes_per_s: 1e6,
        max_sources: 16,
        exempt_local: false,
    });
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&header(Kind::Request, 48, 600_000, 1)).unwrap();
    let mut rh = [0u8; HEADER_LEN];
    c.read_exact(&mut rh).unwrap();
    let r = Header::decode(&rh).unwrap();
    assert_eq!((r.status, r.frame_len), (status::OK, 600_000));
    let mut body = vec![0u8; 600_000 - HEADER_LEN];
    c.read_exact(&mut body).unwrap();
    // 400 kB left in this second: 600 kB more is refused, on any connection from 127.0.0.1.
    let mut c2 = TcpStream::connect(addr).unwrap();
    c2.write_all(&header(Kind::Request, 48, 600_000, 2))
        .unwrap();
    let mut rh = [0u8; HEADER_LEN];
    c2.read_exact(&mut rh).unwrap();
    let r = Header::decode(&rh).unwrap();
    assert_eq!(
        (r.kind, r.status, r.frame_len),
        (Kind::Response, status::CLAMPED, HEADER_LEN as u32)
    );
    closed_by_server(&mut c2, Duration::from_secs(2));
    assert_eq!(Counters::get(&s.counters().tcp.refused_budget), 1);
    // The whole 64 MiB a Request may ask for is more than one second of budget: never sent.
    let mut c3 = TcpStream::connect(addr).unwrap();
    c3.write_all(&header(Kind::Request, 48, 64 << 20, 3))
        .unwrap();
    c3.read_exact(&mut rh).unwrap();
    assert_eq!(Header::decode(&rh).unwrap().status, status::CLAMPED);
    assert_eq!(Counters::get(&s.counters().tcp.refused_budget), 2);
    // Echo is never charged: it costs the peer the same bytes.
    let mut c4 = TcpStream::connect(addr).unwrap();
    c4.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut f = header(Kind::Echo, 200_000, 0, 4).to_vec();
    f.resize(200_000, 9);
    c4.write_all(&f).unwrap();
    let mut back = vec![0u8; 200_000];
    c4.read_exact(&mut back).unwrap();
    assert_eq!(&back[..4], &MAGIC);
}
